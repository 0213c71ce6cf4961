/*
 * The symbol cache is a binary file per binary identity, mapped read-only
 * and searched in place: a warm run reads only the pages of the addresses
 * it asks for, and builds nothing per entry (a text cache of libc's 82,000
 * addresses took longer to load into a hash table than to symbolize from
 * DWARF at libbfd's pace).
 *
 *   header      magic, byte order, the counts below
 *   identity    the binary's identity, NUL-padded to 8 bytes
 *   entries     {addr, func, file, line, first inline, ninline, flags},
 *               32 bytes each, sorted by address, addresses unique
 *   inlines     {func, file, line}, 12 bytes each: an entry's inlined
 *               functions, innermost first, from its first inline on;
 *               each entry's follow the entry's before
 *   offsets     where string number 1, 2, ... starts in the blob, 8
 *               bytes each
 *   blob        the strings, NUL-terminated, each once
 *
 * String fields hold a string's number, 0 for none.  A file whose
 * identity differs (a hash collision, a different binary) is not used; a
 * damaged one is used up to its first bad entry and rewritten.  Files are
 * replaced atomically, so a concurrent reader never sees half of one.
 * Format 2 was text, in HASH.txt: it is not read, and goes when the new
 * file is written.
 */
#include "symcache.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "search.h"
#include "util.h"

#define MAGIC "dmprof-symbol-cache 3\n"
#define BYTE_ORDER_MARK 0x01020304u

struct disk_header {
	char magic[24];
	uint32_t byte_order;
	uint32_t identity_len;
	uint64_t nentries;
	uint64_t ninlines;
	uint64_t nstrings;
	uint64_t blob_size;
};

struct disk_entry {
	uint64_t addr;
	uint32_t func, file;
	uint32_t line;
	uint32_t inl;      /* first of its inlines */
	uint16_t ninline;
	uint16_t flags;
	uint32_t pad;
};

struct disk_inline {
	uint32_t func, file, line;
};

struct symcache {
	char *path;
	char *identity;
	struct strtab *strings;
	struct arena arena;
	/* The file as it was when opened, its usable entries (a prefix). */
	void *map;
	size_t map_size;
	const struct disk_entry *ents;
	size_t nents;
	const struct disk_inline *inls;
	size_t ninls;
	const uint64_t *offs;
	size_t nstrs;
	const char *blob;
	size_t blob_size;
	/* String number - 1 -> its interned copy, and as shown. */
	struct cached_name {
		const char *interned;
		const char *shown;
	} *names;
	symcache_show_fn *show;
	void *show_ctx;
	/* What this run added: addr -> entry. */
	struct hashmap added;
	struct symcache_entry **v;
	size_t n, alloc;
	/*
	 * The last batch's places (symcache_find_many's WHERE), and how far
	 * symcache_get_at has come in it: its entries are asked for ahead,
	 * as they lie at random in the file.
	 */
	uint32_t *ahead;
	size_t nahead, pos;
	/* The answer of the last symcache_get from the file. */
	struct symcache_entry scratch;
	struct inline_frame *scratch_inl, *scratch_shown;
	size_t scratch_alloc;
	bool dirty;
};

static char dir[4096];

/* The cache's directory, in BUF of SIZE bytes, or NULL. */
static const char *dir_in(char *buf, size_t size)
{
	const char *xdg = getenv("XDG_CACHE_HOME");
	const char *home = getenv("HOME");

	if (xdg && *xdg)
		snprintf(buf, size, "%s/dmprof/symbols", xdg);
	else if (home && *home)
		snprintf(buf, size, "%s/.cache/dmprof/symbols", home);
	else
		return NULL;
	return buf;
}

const char *symcache_dir(void)
{
	return dir_in(dir, sizeof(dir));
}

/* mkdir -p, private to the user. */
static int make_dirs(const char *path)
{
	char *p = xstrdup(path);
	int rc = 0;

	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, 0700) < 0 && errno != EEXIST)
			rc = -1;
		*s = '/';
	}
	if (mkdir(p, 0700) < 0 && errno != EEXIST)
		rc = -1;
	free(p);
	return rc;
}

static size_t pad8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

/* A string field that names a string of the file (or none). */
static bool string_ok(const struct symcache *c, uint32_t id)
{
	return !id || (id <= c->nstrs && c->offs[id - 1] < c->blob_size);
}

/*
 * Entry E, whose inlined frames must start at FIRST: each entry's follow
 * the one's before, as they are written, so that checking them all costs
 * the inlines once (entries sharing 65,535 of them would cost 65,535
 * each).
 */
static bool entry_ok(const struct symcache *c, const struct disk_entry *e,
		     size_t first)
{
	if (!string_ok(c, e->func) || !string_ok(c, e->file) ||
	    e->inl != first || e->ninline > c->ninls - e->inl)
		return false;
	for (size_t k = 0; k < e->ninline; k++) {
		const struct disk_inline *in = &c->inls[e->inl + k];

		if (!string_ok(c, in->func) || !string_ok(c, in->file))
			return false;
	}
	return true;
}

/*
 * Map the file and find its parts.  Every count is checked against the
 * file's size before it is used, every entry before it is trusted: a bad
 * entry (or one out of order) ends what is used, and the file is
 * rewritten at the end of the run.
 *
 * The mapping stays valid when the file is replaced (a rename keeps our
 * inode), which is how dmprof writes it.  Only another program cutting
 * the file in place under a running dmprof could take pages from under
 * it (SIGBUS), as with git's mapped packs: that is not guarded against.
 */
static void load(struct symcache *c)
{
	const struct disk_header *h;
	size_t idlen = strlen(c->identity), off, rest, inl;
	struct stat st;
	int fd;

	fd = open(c->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size < sizeof(*h)) {
		close(fd);
		c->dirty = true;
		return;
	}
	c->map_size = (size_t)st.st_size;
	/* (Populated: every entry is checked below, and a page fault for
	 * each of a cache's 700 pages cost more than mapping them.) */
	c->map = mmap(NULL, c->map_size, PROT_READ, MAP_PRIVATE | MAP_POPULATE,
		      fd, 0);
	close(fd);
	if (c->map == MAP_FAILED) {
		c->map = NULL;
		return;
	}
	h = c->map;
	/* Another binary's (a hash collision): left alone unless we add. */
	if (!memcmp(h->magic, MAGIC, sizeof(MAGIC)) &&
	    h->byte_order == BYTE_ORDER_MARK &&
	    (h->identity_len != idlen || idlen > c->map_size - sizeof(*h) ||
	     memcmp((const char *)h + sizeof(*h), c->identity, idlen)))
		return;
	c->dirty = true; /* until the file proves sound */
	if (memcmp(h->magic, MAGIC, sizeof(MAGIC)) ||
	    h->byte_order != BYTE_ORDER_MARK)
		return;
	/*
	 * Each part within what the file has left after the ones before: a
	 * count is multiplied only once it is known to fit, so no count, of
	 * 2^60 or any other, wraps a size around.
	 */
	off = sizeof(*h) + pad8(idlen);
	if (off > c->map_size)
		return;
	rest = c->map_size - off;
	if (h->nentries > rest / sizeof(struct disk_entry))
		return;
	rest -= h->nentries * sizeof(struct disk_entry);
	if (h->ninlines > rest / sizeof(struct disk_inline))
		return;
	inl = pad8(h->ninlines * sizeof(struct disk_inline));
	if (inl > rest)
		return;
	rest -= inl;
	if (h->nstrings > rest / sizeof(uint64_t))
		return;
	rest -= h->nstrings * sizeof(uint64_t);
	if (h->blob_size != rest ||
	    (rest && ((const char *)c->map)[c->map_size - 1] != '\0'))
		return;
	c->ents = (const void *)((const char *)c->map + off);
	off += h->nentries * sizeof(struct disk_entry);
	c->inls = (const void *)((const char *)c->map + off);
	c->ninls = h->ninlines;
	off += pad8(h->ninlines * sizeof(struct disk_inline));
	c->offs = (const void *)((const char *)c->map + off);
	c->nstrs = h->nstrings;
	off += h->nstrings * sizeof(uint64_t);
	c->blob = (const char *)c->map + off;
	c->blob_size = h->blob_size;
	for (c->nents = 0, inl = 0; c->nents < h->nentries; c->nents++) {
		const struct disk_entry *e = &c->ents[c->nents];

		if ((c->nents && e->addr <= e[-1].addr) || !entry_ok(c, e, inl))
			break;
		inl += e->ninline;
	}
	c->dirty = c->nents < h->nentries;
	c->names = xcalloc(c->nstrs ? c->nstrs : 1, sizeof(*c->names));
}

/* File names must not depend on the per-process hash seed: FNV-1a. */
static uint64_t stable_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h;
}

const char *symcache_path(const struct symcache *c)
{
	return c->path;
}

size_t symcache_count(const struct symcache *c)
{
	size_t n = c->nents;

	/* What this run added, less what replaced an entry of the file. */
	for (size_t i = 0; i < c->n; i++) {
		uint64_t a = c->v[i]->addr;
		size_t k = PARTITION_POINT(c->nents, j, c->ents[j].addr < a);

		if (hashmap_get(&c->added, hash_u64(a), NULL, NULL) == c->v[i] &&
		    (k == c->nents || c->ents[k].addr != a))
			n++;
	}
	return n;
}

bool symcache_exists(const char *identity)
{
	char d[4096], path[4200];
	struct stat st;

	if (!dir_in(d, sizeof(d)))
		return false;
	snprintf(path, sizeof(path), "%s/%016" PRIx64 ".bin", d,
		 stable_hash(identity));
	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0;
}

struct symcache *symcache_open(const char *identity, struct strtab *strings)
{
	struct symcache *c;
	struct strbuf sb = STRBUF_INIT;
	const char *d;

	if (!(d = symcache_dir()))
		return NULL;
	c = xcalloc(1, sizeof(*c));
	sb_addf(&sb, "%s/%016" PRIx64 ".bin", d, stable_hash(identity));
	c->path = sb_detach(&sb);
	c->identity = xstrdup(identity);
	c->strings = strings;
	hashmap_init(&c->added, 64);
	load(c);
	return c;
}

static const char *intern_id(struct symcache *c, uint32_t id)
{
	const char *s;

	if (!id)
		return NULL;
	if (!c->names[id - 1].interned) {
		s = c->blob + c->offs[id - 1];
		c->names[id - 1].interned =
			strtab_intern(c->strings, s, strlen(s));
	}
	return c->names[id - 1].interned;
}

/* String ID as the reader shows it (see symcache_show_with). */
static const char *shown_id(struct symcache *c, uint32_t id)
{
	struct cached_name *n;

	if (!id)
		return NULL;
	n = &c->names[id - 1];
	if (!n->shown)
		n->shown = c->show(c->show_ctx, intern_id(c, id));
	return n->shown;
}

void symcache_show_with(struct symcache *c, symcache_show_fn *show,
			void *ctx)
{
	if (!c)
		return;
	c->show = show;
	c->show_ctx = ctx;
}

/* Entry I of the file, its strings interned, in C's scratch space. */
static const struct symcache_entry *from_file(struct symcache *c, size_t i)
{
	const struct disk_entry *d = &c->ents[i];
	struct symcache_entry *e = &c->scratch;

	e->addr = d->addr;
	e->flags = d->flags;
	e->func = intern_id(c, d->func);
	e->file = intern_id(c, d->file);
	e->line = d->line;
	e->ninline = d->ninline;
	if (d->ninline > c->scratch_alloc) {
		FREE_ALL(c->scratch_inl, c->scratch_shown);
		c->scratch_alloc = d->ninline;
		c->scratch_inl = xcalloc(c->scratch_alloc,
					 sizeof(*c->scratch_inl));
		c->scratch_shown = xcalloc(c->scratch_alloc,
					   sizeof(*c->scratch_shown));
	}
	e->inl = d->ninline ? c->scratch_inl : NULL;
	for (size_t k = 0; k < d->ninline; k++) {
		const struct disk_inline *in = &c->inls[d->inl + k];

		e->inl[k].func = intern_id(c, in->func);
		e->inl[k].file = intern_id(c, in->file);
		e->inl[k].line = in->line;
		e->inl[k].func_len = 0;
	}
	e->shown = c->show != NULL;
	if (!e->shown)
		return e;
	e->shown_func = shown_id(c, d->func);
	e->shown_inl = d->ninline ? c->scratch_shown : NULL;
	for (size_t k = 0; k < d->ninline; k++) {
		e->shown_inl[k] = e->inl[k];
		e->shown_inl[k].func = shown_id(c, c->inls[d->inl + k].func);
	}
	return e;
}

const struct symcache_entry *symcache_get(struct symcache *c, uint64_t addr)
{
	const struct symcache_entry *e;
	size_t i;

	if (!c)
		return NULL;
	if (c->added.count &&
	    (e = hashmap_get(&c->added, hash_u64(addr), NULL, NULL)))
		return e;
	i = PARTITION_POINT(c->nents, k, c->ents[k].addr < addr);
	if (i == c->nents || c->ents[i].addr != addr)
		return NULL;
	return from_file(c, i);
}

/* The first entry at or after I whose address is not below Q. */
static size_t gallop(const struct symcache *c, size_t i, uint64_t q)
{
	size_t step = 1, hi;

	if (i >= c->nents || c->ents[i].addr >= q)
		return i;
	/* Strides that double while they stay below Q: a batch of a few
	 * addresses in a big file still costs a search each. */
	while (i + step < c->nents && c->ents[i + step].addr < q) {
		i += step;
		step *= 2;
	}
	hi = i + step < c->nents ? i + step : c->nents;
	return i + 1 + PARTITION_POINT(hi - i - 1, m, c->ents[i + 1 + m].addr < q);
}

/* WHERE, the N places of a batch, for follow_batch. */
static void keep_batch(struct symcache *c, const uint32_t *where, size_t n)
{
	if (!c)
		return;
	free(c->ahead);
	c->ahead = n ? xmemdup(where, n * sizeof(*where)) : NULL;
	c->nahead = n;
	c->pos = 0;
}

void symcache_find_many(struct symcache *c, const uint64_t *addrs, size_t n,
			uint32_t *where)
{
	uint64_t *sorted = NULL, min;
	size_t j = 0;

	if (c && c->nents < UINT32_MAX)
		sorted = sort_batch(addrs, n, &min);
	if (!sorted) {
		/* (A few, or spread over more than 4 GB: one by one.) */
		for (size_t i = 0; i < n; i++) {
			size_t k = c && c->nents < UINT32_MAX
					   ? gallop(c, 0, addrs[i])
					   : SIZE_MAX;

			where[i] = c && k < c->nents &&
						   c->ents[k].addr == addrs[i]
					   ? (uint32_t)k + 1
					   : 0;
		}
		keep_batch(c, where, n);
		return;
	}
	/* The file walked once beside the sorted batch. */
	for (size_t i = 0; i < n; i++) {
		uint64_t q = (sorted[i] >> 32) + min;

		j = gallop(c, j, q);
		where[(uint32_t)sorted[i]] =
			j < c->nents && c->ents[j].addr == q ? (uint32_t)j + 1
							     : 0;
	}
	free(sorted);
	keep_batch(c, where, n);
}

/*
 * Where symcache_get_at is in the last batch (the batch may be walked
 * more than once: a place that is not the next but the first starts
 * over), and the entries a few places on asked for: the entry 16 on,
 * and the inlined frames and strings of the one 8 on, whose entry was
 * asked for 8 calls ago.
 */
static void follow_batch(struct symcache *c, uint32_t where)
{
	const struct disk_entry *e;
	uint32_t w;

	if (c->pos >= c->nahead || c->ahead[c->pos] != where) {
		if (!c->nahead || c->ahead[0] != where)
			return;
		c->pos = 0;
	}
	c->pos++;
	if (c->pos + 16 < c->nahead && (w = c->ahead[c->pos + 16]))
		prefetch(&c->ents[w - 1]);
	if (c->pos + 8 < c->nahead && (w = c->ahead[c->pos + 8])) {
		e = &c->ents[w - 1];
		if (e->ninline)
			prefetch(&c->inls[e->inl]);
		if (e->func)
			prefetch(&c->names[e->func - 1]);
	}
}

const struct symcache_entry *symcache_get_at(struct symcache *c,
					     uint64_t addr, uint32_t where)
{
	const struct symcache_entry *e;

	if (!c)
		return NULL;
	follow_batch(c, where);
	if (c->added.count &&
	    (e = hashmap_get(&c->added, hash_u64(addr), NULL, NULL)))
		return e;
	if (!where)
		return NULL;
	if (where > c->nents || c->ents[where - 1].addr != addr)
		BUG("symcache_get_at: entry %u is not 0x%" PRIx64, where, addr);
	return from_file(c, where - 1);
}

void symcache_put(struct symcache *c, const struct symcache_entry *e)
{
	struct symcache_entry *copy;

	if (!c)
		return;
	copy = arena_alloc(&c->arena, sizeof(*copy));
	*copy = *e;
	/* (Shown names are the file's entries': the caller's own show.) */
	copy->shown = false;
	copy->shown_func = NULL;
	copy->shown_inl = NULL;
	if (e->ninline) {
		copy->inl = arena_alloc(&c->arena,
					e->ninline * sizeof(*copy->inl));
		memcpy(copy->inl, e->inl, e->ninline * sizeof(*copy->inl));
	}
	GROW(c->v, c->n + 1, c->alloc);
	c->v[c->n++] = copy;
	hashmap_replace(&c->added, hash_u64(e->addr), NULL, NULL, copy);
	c->dirty = true;
}

/* The file being written: its strings, numbered as they first come. */
struct writer {
	struct hashmap ids; /* interned string -> number */
	const char **strs;
	size_t nstrs, alloc;
	struct disk_inline *inls;
	size_t ninls, inls_alloc;
	struct disk_entry *ents;
	size_t nents, ents_alloc;
};

static uint32_t string_number(struct writer *w, const char *s)
{
	uint64_t h = hash_u64((uintptr_t)s);
	void *id;

	if (!s)
		return 0;
	if ((id = hashmap_get(&w->ids, h, NULL, NULL)))
		return (uint32_t)(uintptr_t)id;
	GROW(w->strs, w->nstrs + 1, w->alloc);
	w->strs[w->nstrs++] = s;
	hashmap_put(&w->ids, h, (void *)(uintptr_t)w->nstrs);
	return (uint32_t)w->nstrs;
}

static void add_entry(struct writer *w, const struct symcache_entry *e)
{
	struct disk_entry *d;

	d = PUSH_ZEROED(w->ents, w->nents, w->ents_alloc);
	d->addr = e->addr;
	d->func = string_number(w, e->func);
	d->file = string_number(w, e->file);
	d->line = e->line;
	d->flags = (uint16_t)e->flags;
	d->inl = (uint32_t)w->ninls;
	d->ninline = e->ninline;
	for (size_t k = 0; k < e->ninline; k++) {
		GROW(w->inls, w->ninls + 1, w->inls_alloc);
		w->inls[w->ninls++] = (struct disk_inline){
			string_number(w, e->inl[k].func),
			string_number(w, e->inl[k].file), e->inl[k].line
		};
	}
}

static int cmp_added(const void *a, const void *b)
{
	const struct symcache_entry *x = *(const void *const *)a;
	const struct symcache_entry *y = *(const void *const *)b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The file's entries and this run's, by address; this run's win. */
static void collect(struct symcache *c, struct writer *w)
{
	struct symcache_entry **add = xcalloc(c->n ? c->n : 1, sizeof(*add));
	size_t nadd = 0, i = 0, j = 0;

	/* Replaced entries stay in v; the live one only. */
	for (size_t k = 0; k < c->n; k++)
		if (hashmap_get(&c->added, hash_u64(c->v[k]->addr), NULL,
				NULL) == c->v[k])
			add[nadd++] = c->v[k];
	qsort(add, nadd, sizeof(*add), cmp_added);
	while (i < c->nents || j < nadd) {
		if (j == nadd || (i < c->nents && c->ents[i].addr <
							  add[j]->addr)) {
			add_entry(w, from_file(c, i++));
		} else {
			if (i < c->nents && c->ents[i].addr == add[j]->addr)
				i++;
			add_entry(w, add[j++]);
		}
	}
	free(add);
}

static bool write_all(FILE *f, const void *p, size_t n)
{
	return !n || fwrite(p, 1, n, f) == n;
}

static bool write_file(FILE *f, const struct symcache *c,
		       const struct writer *w)
{
	static const char zeros[8];
	struct disk_header h;
	size_t idlen = strlen(c->identity), at = 0;
	uint64_t *offs = xcalloc(w->nstrs ? w->nstrs : 1, sizeof(*offs));
	bool ok;

	for (size_t i = 0; i < w->nstrs; i++) {
		offs[i] = at;
		at += strlen(w->strs[i]) + 1;
	}
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, MAGIC, sizeof(MAGIC));
	h.byte_order = BYTE_ORDER_MARK;
	h.identity_len = (uint32_t)idlen;
	h.nentries = w->nents;
	h.ninlines = w->ninls;
	h.nstrings = w->nstrs;
	h.blob_size = at;
	ok = write_all(f, &h, sizeof(h)) && write_all(f, c->identity, idlen) &&
	     write_all(f, zeros, pad8(idlen) - idlen) &&
	     write_all(f, w->ents, w->nents * sizeof(*w->ents)) &&
	     write_all(f, w->inls, w->ninls * sizeof(*w->inls)) &&
	     write_all(f, zeros, pad8(w->ninls * sizeof(*w->inls)) -
					 w->ninls * sizeof(*w->inls)) &&
	     write_all(f, offs, w->nstrs * sizeof(*offs));
	for (size_t i = 0; ok && i < w->nstrs; i++)
		ok = write_all(f, w->strs[i], strlen(w->strs[i]) + 1);
	free(offs);
	return ok;
}

static void save(struct symcache *c)
{
	struct strbuf tmp = STRBUF_INIT;
	struct writer w;
	FILE *f;
	bool ok;

	if (make_dirs(symcache_dir()) < 0)
		return; /* a read-only home: no cache, no fuss */
	sb_addf(&tmp, "%s.%ld.tmp", c->path, (long)getpid());
	f = fopen(tmp.buf, "w");
	if (!f) {
		sb_release(&tmp);
		return;
	}
	memset(&w, 0, sizeof(w));
	hashmap_init(&w.ids, 1024);
	collect(c, &w);
	ok = write_file(f, c, &w);
	if (fclose(f) != 0)
		ok = false;
	if (!ok || rename(tmp.buf, c->path) < 0) {
		unlink(tmp.buf);
	} else {
		/* Format 2's text file of the same identity is stale now. */
		sb_reset(&tmp);
		sb_add(&tmp, c->path, strlen(c->path) - 4);
		sb_addstr(&tmp, ".txt");
		unlink(tmp.buf);
	}
	hashmap_free(&w.ids);
	free(w.strs);
	free(w.inls);
	free(w.ents);
	sb_release(&tmp);
}

void symcache_close(struct symcache *c)
{
	if (!c)
		return;
	if (c->dirty)
		save(c);
	if (c->map)
		munmap(c->map, c->map_size);
	hashmap_free(&c->added);
	arena_free(&c->arena);
	FREE_ALL(c->names, c->scratch_inl, c->scratch_shown, c->ahead, c->v,
		 c->path, c->identity, c);
}
