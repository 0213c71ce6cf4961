/*
 * Unwind rules kept across the processes of a run.  A short process
 * works out a few thousand rules (cc1 on a small file: 3,000, for which
 * the CFI of its large functions is run from their start, a third of its
 * unwinding), and under make the next cc1 works out the same ones again.
 * So a process that worked out enough new rules leaves them at exit
 * beside the dumps, in a file named for its executable's build-id, and a
 * process of the same executable starts with them.
 *
 * A rule is kept by object (its build-id, which names its code and CFI
 * exactly) and offset, so that it holds wherever the object is loaded;
 * objects without a build-id are left out.  The file is checked whole
 * (magic, sizes, checksum) or not used, and replaced only by a complete
 * one (renamed over it): processes that end together each write their
 * own, and the last one stays.  A rule gone wrong all the same cannot
 * make a walk read outside the thread's stack (rec_unwind.c); it would
 * cut a stack short.
 *
 *   head:   "dmpunw1\n", u32 objects, u32 rules, u64 checksum (FNV-1a of
 *           the counts and all that follows)
 *   object: u8 id length, 32 bytes of id, 7 of padding
 *   rule:   u64 object << 48 | offset from the object's first page,
 *           u64 the rule as rec_unwind.c packs it
 */
#include "rec.h"
#include "search.h"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h> /* rename */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define OBJECTS_MAX 1024
#define ID_MAX 32
#define RULES_MAX 65536
/* New rules that are worth a file (one made costs an inode). */
#define SAVE_MIN 32

struct object {
	uintptr_t start, end;
	uint8_t idlen, id[ID_MAX];
};

struct file_head {
	char magic[8];
	uint32_t nobjects, nrules;
	uint64_t sum;
};

struct file_object {
	uint8_t idlen, id[ID_MAX], pad[7];
};

struct file_rule {
	uint64_t where, rule;
};

static const char magic[8] = "dmpunw1\n";

/* The objects loaded now, by start (the executable's id kept apart). */
static struct object objects[OBJECTS_MAX];
static unsigned nobjects;
static struct object exe;
static char saved_path[4200];
unsigned rec_unwind_saved_loaded;

/* The GNU build-id note among INFO's notes, into O. */
static void build_id(const struct dl_phdr_info *info, struct object *o)
{
	o->idlen = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const uint8_t *p, *end;

		if (ph->p_type != PT_NOTE)
			continue;
		p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
		end = p + ph->p_memsz;
		while ((size_t)(end - p) >= sizeof(ElfW(Nhdr))) {
			const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
			size_t name = (n->n_namesz + 3) & ~3u,
			       desc = (n->n_descsz + 3) & ~3u;

			p += sizeof(*n);
			if ((size_t)(end - p) < name + desc)
				break;
			if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 &&
			    !memcmp(p, "GNU", 4) && n->n_descsz &&
			    n->n_descsz <= ID_MAX) {
				o->idlen = (uint8_t)n->n_descsz;
				memcpy(o->id, p + name, n->n_descsz);
				return;
			}
			p += name + desc;
		}
	}
}

static int add_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct object o = { UINTPTR_MAX, 0, 0, { 0 } };

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = (info->dlpi_addr + ph->p_vaddr) & ~(uintptr_t)4095;

		if (ph->p_type != PT_LOAD)
			continue;
		if (lo < o.start)
			o.start = lo;
		if (info->dlpi_addr + ph->p_vaddr + ph->p_memsz > o.end)
			o.end = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
	}
	build_id(info, &o);
	/* (The first object is the executable.) */
	if (!*(bool *)arg) {
		*(bool *)arg = true;
		exe = o;
	}
	if (o.idlen && o.start < o.end && nobjects < OBJECTS_MAX)
		objects[nobjects++] = o;
	return 0;
}

/* The objects loaded now, sorted by start. */
static void objects_read(void)
{
	bool first = false;

	nobjects = 0;
	memset(&exe, 0, sizeof(exe));
	dl_iterate_phdr(add_object, &first);
	for (unsigned i = 1; i < nobjects; i++) {
		struct object o = objects[i];
		unsigned k = i;

		for (; k && objects[k - 1].start > o.start; k--)
			objects[k] = objects[k - 1];
		objects[k] = o;
	}
}

/* The object PC is in, or NULL. */
static const struct object *object_at(uintptr_t pc)
{
	size_t k = PARTITION_POINT(nobjects, i, objects[i].start <= pc);

	return k && pc < objects[k - 1].end ? &objects[k - 1] : NULL;
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ULL;
	return h;
}

static uint64_t checksum(const struct file_head *h, const void *rest,
			 size_t n)
{
	uint64_t s = fnv(0xcbf29ce484222325ULL, &h->nobjects,
			 sizeof(h->nobjects));

	s = fnv(s, &h->nrules, sizeof(h->nrules));
	return fnv(s, rest, n);
}

/* The file's place for this process: PREFIX's directory,
 * ".BASE.unwind.ID"; false where it has none. */
static bool name_file(const char *prefix)
{
	const char *slash = strrchr(prefix, '/');
	const char *base = slash ? slash + 1 : prefix;
	size_t dlen = slash ? (size_t)(base - prefix) : 0, blen = strlen(base);
	char *p = saved_path;

	saved_path[0] = 0;
	if (!exe.idlen || !blen ||
	    dlen + blen + 2 * ID_MAX + 16 >= sizeof(saved_path))
		return false;
	memcpy(p, prefix, dlen);
	p += dlen;
	*p++ = '.';
	memcpy(p, base, blen);
	p += blen;
	memcpy(p, ".unwind.", 8);
	p += 8;
	for (unsigned i = 0; i < exe.idlen; i++) {
		*p++ = "0123456789abcdef"[exe.id[i] >> 4];
		*p++ = "0123456789abcdef"[exe.id[i] & 15];
	}
	*p = 0;
	return true;
}

/* FILE (SIZE bytes) whole and sound: its rules, else NULL. */
static const struct file_rule *check(const uint8_t *file, size_t size,
				     const struct file_head **head)
{
	const struct file_head *h = (const void *)file;
	size_t want;

	if (size < sizeof(*h) || memcmp(h->magic, magic, sizeof(magic)) ||
	    h->nobjects > OBJECTS_MAX || h->nrules > RULES_MAX)
		return NULL;
	want = sizeof(*h) + h->nobjects * sizeof(struct file_object) +
	       h->nrules * sizeof(struct file_rule);
	if (size != want ||
	    checksum(h, file + sizeof(*h), size - sizeof(*h)) != h->sum)
		return NULL;
	*head = h;
	return (const void *)(file + sizeof(*h) +
			      h->nobjects * sizeof(struct file_object));
}

/* The rules of the file at PATH into the table, for the objects read
 * (objects_read()): how many. */
static unsigned load_file(const char *path)
{
	const struct file_head *h;
	const struct file_object *fo;
	const struct file_rule *rules;
	uintptr_t start[OBJECTS_MAX], end[OBJECTS_MAX];
	struct stat st;
	uint8_t *file = NULL;
	size_t size = 0;
	unsigned put = 0;
	int fd = rec_raw_open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	if (fstat(fd, &st) == 0 && st.st_size > 0 &&
	    (size_t)st.st_size <= sizeof(*h) +
				      OBJECTS_MAX * sizeof(*fo) +
				      RULES_MAX * sizeof(*rules) &&
	    (file = rec_map_alloc((size_t)st.st_size)) &&
	    rec_raw_pread(fd, file, (size_t)st.st_size, 0) == st.st_size)
		size = (size_t)st.st_size;
	rec_raw_close(fd);
	if (!size || !(rules = check(file, size, &h)))
		goto out;
	/* Where each of the file's objects is loaded now (start 0: not). */
	fo = (const void *)(file + sizeof(*h));
	for (unsigned k = 0; k < h->nobjects; k++) {
		start[k] = end[k] = 0;
		for (unsigned i = 0; i < nobjects; i++)
			if (objects[i].idlen == fo[k].idlen &&
			    !memcmp(objects[i].id, fo[k].id, fo[k].idlen)) {
				start[k] = objects[i].start;
				end[k] = objects[i].end;
				break;
			}
	}
	rec_unwind_reserve(h->nrules + atomic_load(&rec_unwind_computed));
	for (unsigned i = 0; i < h->nrules; i++) {
		unsigned k = (unsigned)(rules[i].where >> 48);
		uintptr_t pc;

		if (k >= h->nobjects || !start[k])
			continue;
		pc = start[k] + (uintptr_t)(rules[i].where & ((1ULL << 48) - 1));
		if (pc < end[k] && rec_unwind_put(pc, rules[i].rule))
			put++;
	}
out:
	if (file)
		rec_map_free(file, (size_t)st.st_size);
	rec_unwind_saved_loaded += put;
	return put;
}

unsigned rec_unwind_saved_load_at(const char *path)
{
	objects_read();
	return load_file(path);
}

/* What the walk of the table gathers into the file. */
struct gather {
	struct file_rule *rules;
	unsigned n, max;
	uint16_t index[OBJECTS_MAX]; /* an object's in the file, plus one */
	unsigned nused;
	uint16_t used[OBJECTS_MAX];  /* which objects, in the file's order */
};

static void gather_rule(uintptr_t pc, uint64_t rule, void *arg)
{
	struct gather *g = arg;
	const struct object *o = object_at(pc);
	unsigned k;

	if (!o || g->n == g->max)
		return;
	k = (unsigned)(o - objects);
	if (!g->index[k]) {
		g->used[g->nused++] = (uint16_t)k;
		g->index[k] = (uint16_t)g->nused;
	}
	g->rules[g->n++] = (struct file_rule){
		(uint64_t)(g->index[k] - 1) << 48 | (uint64_t)(pc - o->start),
		rule };
}

bool rec_unwind_saved_save_at(const char *path)
{
	/* (Not on the stack: exit() may come on a thread's small one.) */
	static struct gather g;
	static struct file_object fo[OBJECTS_MAX];
	struct file_head h;
	char tmp[sizeof(saved_path) + 32];
	size_t max = rec_unwind_cache_size(), len = strlen(path);
	size_t rules_size;
	bool ok;
	int fd;

	objects_read();
	if (max > RULES_MAX)
		max = RULES_MAX;
	rules_size = max * sizeof(*g.rules);
	memset(&g, 0, sizeof(g));
	if (len + 32 > sizeof(tmp) || !(g.rules = rec_map_alloc(rules_size)))
		return false;
	g.max = (unsigned)max;
	rec_unwind_each(gather_rule, &g);
	memset(fo, 0, sizeof(fo));
	for (unsigned k = 0; k < g.nused; k++) {
		fo[k].idlen = objects[g.used[k]].idlen;
		memcpy(fo[k].id, objects[g.used[k]].id, fo[k].idlen);
	}
	memcpy(h.magic, magic, sizeof(magic));
	h.nobjects = g.nused;
	h.nrules = g.n;
	h.sum = fnv(checksum(&h, fo, g.nused * sizeof(fo[0])), g.rules,
		    g.n * sizeof(*g.rules));
	/* PATH.PID.tmp, renamed: whole or not at all. */
	memcpy(tmp, path, len);
	tmp[len] = '.';
	memcpy(rec_put_dec(tmp + len + 1, getpid(), 0), ".tmp", 5);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ok = fd >= 0 && rec_write_all(fd, (const char *)&h, sizeof(h), -1) &&
	     rec_write_all(fd, (const char *)fo, g.nused * sizeof(fo[0]), -1) &&
	     rec_write_all(fd, (const char *)g.rules, g.n * sizeof(*g.rules),
			   -1);
	if (fd >= 0 && close(fd) < 0)
		ok = false;
	if (fd >= 0 && (!ok || rename(tmp, path) < 0)) {
		unlink(tmp);
		ok = false;
	}
	rec_map_free(g.rules, rules_size);
	return ok;
}

/* Not with DMPROF_UNWIND_CACHE=0 (a run that is to work every rule
 * out, to compare). */
static bool wanted(void)
{
	const char *s = getenv("DMPROF_UNWIND_CACHE");

	return !s || strcmp(s, "0") != 0;
}

void rec_unwind_saved_load(const char *prefix)
{
	if (!wanted())
		return;
	objects_read();
	if (name_file(prefix))
		load_file(saved_path);
}

void rec_unwind_saved_save(void)
{
	if (saved_path[0] && atomic_load(&rec_unwind_computed) >= SAVE_MIN)
		rec_unwind_saved_save_at(saved_path);
}
