/*
 * ELF core files as process images.  Every read is a pread of the core
 * checked against its size: a hostile or cut core gives fewer bytes,
 * never a read outside the file.  The mappings are rebuilt as /proc/PID/
 * maps would show them, as far as a core says (see build_maps).
 */
#include "coreimage.h"

#include <elf.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elffile.h"
#include "util.h"

/* The x86-64 layouts of the kernel's struct elf_prstatus and
 * elf_prpsinfo (<linux/elfcore.h>), by offset. */
#define PRSTATUS_CURSIG 12
#define PRSTATUS_PID 32
#define PRSTATUS_REGS 112
#define PRPSINFO_PID 24
#define PRPSINFO_FNAME 40
#define PRPSINFO_FNAME_LEN 16
#define PRPSINFO_ARGS 56
#define PRPSINFO_ARGS_LEN 80
/* Where [vsyscall] always is on x86-64. */
#define VSYSCALL_ADDR 0xffffffffff600000ull
/* How far past the .bss x86-64's brk randomisation may start [heap]. */
#define BRK_REACH (1ull << 30)

/* What opening gathers before the mappings are built. */
struct core_open {
	struct coreimage *core;
	size_t files_alloc, threads_alloc;
};

/* Up to LEN bytes at OFF of the core, never past its end: how many. */
static size_t core_pread(const struct coreimage *c, void *buf, size_t len,
			 uint64_t off)
{
	if (off >= c->size)
		return 0;
	if (len > c->size - off)
		len = (size_t)(c->size - off);
	return pread_full(c->fd, buf, len, off);
}

/* --- The ELF header and the program headers ------------------------ */

static const char *type_name(unsigned type)
{
	switch (type) {
	case ET_REL: return ", an object file";
	case ET_EXEC: return ", an executable";
	case ET_DYN: return ", a shared library or a PIE";
	default: return "";
	}
}

/* F, the core mapped: an x86-64 core, or an error saying what it is. */
static int check_header(const struct coreimage *c, const struct elf_file *f)
{
	const struct elf_header *eh = &f->h;
	size_t got = f->size < sizeof(Elf64_Ehdr) ? (size_t)f->size
						  : sizeof(Elf64_Ehdr);

	if (f->ident == ELF_NOT_ELF)
		return error("%s: not an ELF file", c->path);
	if (got > EI_CLASS && eh->class == ELFCLASS32)
		return error("%s: a 32-bit ELF file: only x86-64 cores are "
			     "read", c->path);
	if (got < sizeof(Elf64_Ehdr))
		return error("%s: the ELF header is cut short (%zu of %zu "
			     "bytes)", c->path, got, sizeof(Elf64_Ehdr));
	if (eh->type != ET_CORE)
		return error("%s: not a core file (ELF type %u%s)", c->path,
			     eh->type, type_name(eh->type));
	if (eh->class != ELFCLASS64 || eh->data != ELFDATA2LSB ||
	    eh->machine != EM_X86_64)
		return error("%s: a core of ELF machine %u, not x86-64: not "
			     "read", c->path, eh->machine);
	if (eh->phentsize != sizeof(Elf64_Phdr))
		return error("%s: program headers of %u bytes, not %zu",
			     c->path, eh->phentsize, sizeof(Elf64_Phdr));
	return 0;
}

/* The number of program headers: past 65534, section 0's sh_info. */
static int count_phdrs(const struct coreimage *c, const struct elf_file *f,
		       uint64_t *n)
{
	const uint8_t *p;
	Elf64_Shdr sh;

	*n = f->h.phnum;
	if (f->h.phnum != PN_XNUM)
		return 0;
	if (!(p = elf_at(f, f->h.shoff, sizeof(sh))))
		return error("%s: offset 0x%" PRIx64 ": the section header "
			     "holding the number of segments is past the end "
			     "of the file (%" PRIu64 " bytes)", c->path,
			     f->h.shoff, c->size);
	memcpy(&sh, p, sizeof(sh));
	*n = sh.sh_info;
	return 0;
}

/* The number of program headers into *N, all of them in the file. */
static int check_phdrs(const struct coreimage *c, const struct elf_file *f,
		       size_t *n)
{
	uint64_t count;

	if (count_phdrs(c, f, &count) < 0)
		return -1;
	if (!elf_at(f, f->h.phoff, count * sizeof(Elf64_Phdr)))
		return error("%s: offset 0x%" PRIx64 ": the %" PRIu64
			     " program headers run past the end of the file "
			     "(%" PRIu64 " bytes): the core is cut short",
			     c->path, f->h.phoff, count, c->size);
	*n = (size_t)count;
	return 0;
}

/* --- Notes ---------------------------------------------------------- */

static void note_file(struct core_open *o, const uint8_t *d, size_t len,
		      uint64_t off)
{
	struct coreimage *c = o->core;
	uint64_t count, page;
	size_t names;

	if (len < 16 || (count = load_u64(d)) > (len - 16) / 24) {
		warning("%s: offset 0x%" PRIx64 ": an NT_FILE note of %zu "
			"bytes too short for its entries; ignored", c->path,
			off, len);
		c->bad_notes++;
		return;
	}
	page = load_u64(d + 8);
	names = 16 + (size_t)count * 24;
	for (uint64_t i = 0; i < count; i++) {
		const uint8_t *e = d + 16 + i * 24;
		const char *path = (const char *)d + names;
		const char *nul = memchr(path, 0, len - names);
		struct core_file *f;

		if (!nul) {
			warning("%s: offset 0x%" PRIx64 ": NT_FILE: the path "
				"of entry %" PRIu64 " runs past the note; the "
				"rest ignored", c->path, off + names, i);
			c->bad_notes++;
			return;
		}
		names += (size_t)(nul - path) + 1;
		if (load_u64(e + 8) <= load_u64(e) ||
		    (page && load_u64(e + 16) > UINT64_MAX / page))
			continue;
		GROW(c->files, c->nfiles + 1, o->files_alloc);
		f = &c->files[c->nfiles++];
		f->start = load_u64(e);
		f->end = load_u64(e + 8);
		f->offset = load_u64(e + 16) * page;
		f->path = strtab_intern(&c->img.strings, path,
					(size_t)(nul - path));
		f->file = NULL;
	}
}

static void note_prstatus(struct core_open *o, const uint8_t *d, size_t len,
			  uint64_t off)
{
	struct coreimage *c = o->core;
	struct core_thread *t;
	int16_t sig;

	if (len < PRSTATUS_REGS + sizeof(t->regs)) {
		warning("%s: offset 0x%" PRIx64 ": an NT_PRSTATUS note of "
			"%zu bytes, too short for x86-64's; ignored", c->path,
			off, len);
		c->bad_notes++;
		return;
	}
	GROW(c->threads, c->nthreads + 1, o->threads_alloc);
	t = &c->threads[c->nthreads++];
	memcpy(&sig, d + PRSTATUS_CURSIG, sizeof(sig));
	t->cursig = sig;
	t->pid = (pid_t)load_u32(d + PRSTATUS_PID);
	memcpy(&t->regs, d + PRSTATUS_REGS, sizeof(t->regs));
}

static void note_prpsinfo(struct coreimage *c, const uint8_t *d, size_t len)
{
	if (len < PRPSINFO_FNAME + PRPSINFO_FNAME_LEN)
		return;
	c->pid = (pid_t)load_u32(d + PRPSINFO_PID);
	memcpy(c->command, d + PRPSINFO_FNAME, PRPSINFO_FNAME_LEN);
	c->command[PRPSINFO_FNAME_LEN] = 0;
	if (len < PRPSINFO_ARGS + PRPSINFO_ARGS_LEN)
		return;
	/* (Its NULs between arguments, as /proc/PID/cmdline's: spaces.) */
	for (size_t i = 0; i < PRPSINFO_ARGS_LEN; i++)
		c->args[i] = d[PRPSINFO_ARGS + i] ? (char)d[PRPSINFO_ARGS + i]
						  : ' ';
	c->args[PRPSINFO_ARGS_LEN] = 0;
	for (size_t n = PRPSINFO_ARGS_LEN; n && c->args[n - 1] == ' '; n--)
		c->args[n - 1] = 0;
}

static void note_auxv(struct coreimage *c, const uint8_t *d, size_t len)
{
	for (size_t i = 0; i + 16 <= len; i += 16) {
		if (load_u64(d + i) == AT_ENTRY)
			c->entry = load_u64(d + i + 8);
		else if (load_u64(d + i) == AT_SYSINFO_EHDR)
			c->vdso = load_u64(d + i + 8);
		else if (load_u64(d + i) == AT_EXECFN)
			c->execfn = load_u64(d + i + 8);
	}
	c->auxv_words = 0;
	for (size_t i = 0; i + 8 <= len && c->auxv_words < 16; i += 8)
		c->auxv_head[c->auxv_words++] = load_u64(d + i);
}

static void dispatch_note(struct core_open *o, uint32_t type,
			  const uint8_t *d, size_t len, uint64_t off)
{
	switch (type) {
	case NT_FILE:
		note_file(o, d, len, off);
		break;
	case NT_PRSTATUS:
		note_prstatus(o, d, len, off);
		break;
	case NT_PRPSINFO:
		note_prpsinfo(o->core, d, len);
		break;
	case NT_AUXV:
		note_auxv(o->core, d, len);
		break;
	}
}

/*
 * The notes in P (LEN bytes at OFF of the core; fewer than the segment's
 * when the core is cut short): "CORE" ones are read, others (gdb's,
 * LINUX's register sets) skipped.  One that runs past LEN ends the
 * reading.
 */
static void parse_notes(struct core_open *o, const uint8_t *p, uint64_t len,
			uint64_t off)
{
	struct elf_note n;
	uint64_t at = 0;
	enum elf_note_next next;

	while ((next = elf_note_next(p, len, &at, &n)) == ELF_NOTE)
		if (n.namesz == 5 && !memcmp(n.name, "CORE", 5))
			dispatch_note(o, n.type, n.desc, n.descsz,
				      off + n.desc_at);
	if (next == ELF_NOTE_CUT) {
		warning("%s: offset 0x%" PRIx64 ": a note (type %u, %u bytes) "
			"runs past the notes' end (offset 0x%" PRIx64 "); the "
			"rest skipped", o->core->path, off + n.at, n.type,
			n.descsz, off + len);
		o->core->bad_notes++;
	}
}

static void read_notes(struct core_open *o, const struct elf_file *f,
		       const struct elf_phdr *ph)
{
	struct coreimage *c = o->core;
	uint64_t len;

	if (ph->offset >= c->size)
		len = 0;
	else
		len = ph->filesz < c->size - ph->offset
			      ? ph->filesz
			      : c->size - ph->offset;
	if (len < ph->filesz)
		warning("%s: offset 0x%" PRIx64 ": the notes are cut short "
			"(%" PRIu64 " of %" PRIu64 " bytes in the file)",
			c->path, ph->offset, len, ph->filesz);
	if (len)
		parse_notes(o, elf_at(f, ph->offset, len), len, ph->offset);
}

/* --- Segments ------------------------------------------------------- */

/* PH as a segment, and what of it is absent, if it makes sense. */
static void add_segment(struct core_open *o, const struct elf_phdr *ph,
			size_t *alloc)
{
	struct coreimage *c = o->core;
	struct core_segment *s;
	uint64_t filesz = ph->filesz;

	if (!ph->memsz)
		return;
	if (ph->vaddr + ph->memsz < ph->vaddr) {
		warning("%s: a segment at 0x%" PRIx64 " of %" PRIu64 " bytes "
			"wraps around the address space; ignored", c->path,
			ph->vaddr, ph->memsz);
		return;
	}
	if (filesz > ph->memsz) {
		warning("%s: the segment at 0x%" PRIx64 " says it holds %"
			PRIu64 " bytes of its %" PRIu64 "; the first %" PRIu64
			" read", c->path, ph->vaddr, filesz,
			ph->memsz, ph->memsz);
		filesz = ph->memsz;
	}
	GROW(c->segs, c->nsegs + 1, *alloc);
	s = &c->segs[c->nsegs++];
	s->vaddr = ph->vaddr;
	s->memsz = ph->memsz;
	s->offset = ph->offset;
	s->filesz = filesz;
	s->flags = ph->flags;
	if (s->offset >= c->size)
		s->avail = 0;
	else
		s->avail = filesz < c->size - s->offset ? filesz
							: c->size - s->offset;
}

/* What each segment lacks, by the writer's choice or by a cut. */
static void count_lacks(struct coreimage *c)
{
	for (size_t i = 0; i < c->nsegs; i++) {
		const struct core_segment *s = &c->segs[i];
		struct core_lack *l = s->avail ? &c->cut : &c->absent;

		if (s->filesz < s->memsz) {
			c->not_dumped.count++;
			c->not_dumped.bytes += s->memsz - s->filesz;
		}
		if (s->avail < s->filesz) {
			l->count++;
			l->bytes += s->filesz - s->avail;
		}
	}
}

static int cmp_seg(const void *a, const void *b)
{
	const struct core_segment *x = a, *y = b;

	return x->vaddr < y->vaddr ? -1 : x->vaddr > y->vaddr;
}

/* Sorted by address; of overlapping segments the first is kept. */
static void sort_segments(struct coreimage *c)
{
	size_t out = 0;

	if (c->nsegs)
		qsort(c->segs, c->nsegs, sizeof(*c->segs), cmp_seg);
	for (size_t i = 0; i < c->nsegs; i++) {
		const struct core_segment *s = &c->segs[i], *prev;

		prev = out ? &c->segs[out - 1] : NULL;
		if (prev && s->vaddr < prev->vaddr + prev->memsz) {
			warning("%s: the segment at 0x%" PRIx64 " overlaps the "
				"one at 0x%" PRIx64 "; ignored", c->path,
				s->vaddr, prev->vaddr);
			continue;
		}
		c->segs[out++] = *s;
	}
	c->nsegs = out;
}

/*
 * How many of the N elements (SIZE bytes each) at BASE start at or below
 * ADDR: each starts with its start address, and they are sorted by it.
 */
static size_t count_from(const void *base, size_t n, size_t size,
			 uint64_t addr)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t start;

		memcpy(&start, (const char *)base + mid * size, sizeof(start));
		if (start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The segment holding ADDR, or NULL. */
static const struct core_segment *seg_find(const struct coreimage *c,
					   uint64_t addr)
{
	size_t i = count_from(c->segs, c->nsegs, sizeof(*c->segs), addr);

	if (!i || addr - c->segs[i - 1].vaddr >= c->segs[i - 1].memsz)
		return NULL;
	return &c->segs[i - 1];
}

static int cmp_file(const void *a, const void *b)
{
	const struct core_file *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* The NT_FILE entry holding ADDR, or NULL (FILES sorted by start). */
static const struct core_file *file_find(const struct coreimage *c,
					 uint64_t addr)
{
	size_t i = count_from(c->files, c->nfiles, sizeof(*c->files), addr);

	if (!i || addr >= c->files[i - 1].end)
		return NULL;
	return &c->files[i - 1];
}

static bool same_path(const void *item, const void *key)
{
	return ((const struct core_path *)item)->path == key;
}

/*
 * The files the core names, each once (a hostile core may name one in
 * 100,000 mappings), with its mapping at offset 0: after the mappings
 * are sorted, before anything is read.
 */
static void index_paths(struct coreimage *c)
{
	hashmap_init(&c->paths, c->nfiles);
	for (size_t i = 0; i < c->nfiles; i++) {
		struct core_file *f = &c->files[i];
		uint64_t h = hash_u64((uint64_t)(uintptr_t)f->path);
		struct core_path *p = hashmap_get(&c->paths, h, same_path,
						  f->path);

		if (!p) {
			p = arena_alloc(&c->img.arena, sizeof(*p));
			p->path = f->path;
			p->fd = -2;
			p->head = NULL;
			hashmap_put(&c->paths, h, p);
		}
		if (!f->offset && !p->head)
			p->head = f;
		f->file = p;
	}
}

/*
 * The file of mapping F opened for reading what the core left out, or
 * -1: it cannot be opened, it is not a regular file, or its first page
 * is no longer what the core holds of it (the file changed since: its
 * bytes would be wrong).  The path is the core's to name: it is opened
 * without waiting (a FIFO would wait for a writer) and read only if it
 * is a regular file (a device's reads may do anything).
 */
static int file_fd(struct coreimage *c, struct core_file *f)
{
	uint8_t a[256], b[256];
	struct core_path *p = f->file;
	const struct core_file *head = p ? p->head : NULL;
	const struct core_segment *s;
	struct stat st;
	int fd;

	if (!p)
		return -1;
	if (p->fd != -2)
		return p->fd;
	p->fd = -1;
	{
		char *host = c->host_path ? c->host_path(c->host_ctx, f->path)
					  : NULL;

		/* (Not waiting on a FIFO a hostile core may name.) */
		fd = open(host ? host : f->path,
			  O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
		free(host);
	}
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		warning("%s: %s is not a regular file: what the core left out "
			"of it is not read", c->path, f->path);
		close(fd);
		return -1;
	}
	/* The core holds a file's first page (its ELF header): compare. */
	if (head && (s = seg_find(c, head->start)) &&
	    head->start - s->vaddr + sizeof(a) <= s->avail &&
	    (core_pread(c, a, sizeof(a), s->offset + head->start - s->vaddr) !=
		     sizeof(a) ||
	     pread(fd, b, sizeof(b), 0) != (ssize_t)sizeof(b) ||
	     memcmp(a, b, sizeof(a)))) {
		warning("%s: %s is not the file the core's process mapped (it "
			"changed since?): what the core left out of it is not "
			"read", c->path, f->path);
		close(fd);
		return -1;
	}
	return p->fd = fd;
}

/* Up to LEN bytes at ADDR from the file mapped there: how many. */
static size_t read_file(struct coreimage *c, uint64_t addr, void *buf,
			size_t len)
{
	struct core_file *f = (struct core_file *)file_find(c, addr);
	uint64_t off;
	ssize_t n;
	int fd;

	if (!f || (fd = file_fd(c, f)) < 0)
		return 0;
	off = f->offset + (addr - f->start);
	if (len > f->end - addr)
		len = (size_t)(f->end - addr);
	if (off > INT64_MAX - len)
		return 0;
	n = pread(fd, buf, len, (off_t)off);
	return n > 0 ? (size_t)n : 0;
}

/*
 * From ADDR on, through adjacent segments as a live read goes through
 * adjacent mappings, until a byte the core does not hold.  File-backed
 * bytes a core leaves out (code, by coredump_filter; gcore's read-only
 * mappings) come from the NT_FILE path at its offset, when the file
 * still starts as the core says (file_fd).
 */
static size_t read_core(struct procimage *img, uint64_t addr, void *buf,
			size_t len)
{
	struct coreimage *c = (struct coreimage *)img;
	size_t got = 0;

	while (got < len) {
		uint64_t a = addr + got;
		const struct core_segment *s = seg_find(c, a);
		size_t want = len - got, n;

		if (s && a - s->vaddr < s->avail) {
			uint64_t at = a - s->vaddr;

			if (want > s->avail - at)
				want = (size_t)(s->avail - at);
			n = core_pread(c, (char *)buf + got, want,
				       s->offset + at);
		} else {
			/* Not in the core: to the end of the segment (or
			 * the next one) from the file, if any. */
			if (s && want > s->vaddr + s->memsz - a)
				want = (size_t)(s->vaddr + s->memsz - a);
			n = read_file(c, a, (char *)buf + got, want);
		}
		got += n;
		if (n < want || !n)
			break;
	}
	return got;
}

/* --- Mappings ------------------------------------------------------- */

/*
 * Where the executable's memory ends, its .bss included: the end of its
 * last PT_LOAD, from its ELF headers as the core holds them (the kernel
 * and gcore both dump a file's first page), moved by where its first
 * page (EXE, its mapping at offset 0) is mapped: a PIE's load bias.
 * 0 when they cannot be read.
 */
static uint64_t exe_end(struct coreimage *c, const struct core_file *exe)
{
	uint8_t buf[sizeof(Elf64_Ehdr)];
	struct elf_header eh;
	struct elf_phdr ph;
	uint64_t first = UINT64_MAX, end = 0;
	bool is64;

	if (!procimage_read_all(&c->img, exe->start, buf, sizeof(buf)) ||
	    memcmp(buf, ELFMAG, SELFMAG))
		return 0;
	elf_decode_header(buf, sizeof(buf), &eh, &is64);
	if (!is64 || eh.phentsize != sizeof(Elf64_Phdr) ||
	    eh.phoff > UINT32_MAX)
		return 0;
	for (unsigned i = 0; i < eh.phnum; i++) {
		if (!procimage_read_all(&c->img, exe->start + eh.phoff +
					i * sizeof(Elf64_Phdr), buf,
					sizeof(Elf64_Phdr)))
			return 0;
		elf_decode_phdr(buf, true, &ph);
		if (ph.type != PT_LOAD)
			continue;
		if (ph.vaddr < first)
			first = ph.vaddr & ~(uint64_t)4095;
		if (ph.vaddr + ph.memsz > end)
			end = ph.vaddr + ph.memsz;
	}
	if (first > end)
		return 0;
	return ((end + 4095) & ~(uint64_t)4095) - first + exe->start;
}

/*
 * [heap], the brk area, is not named in a core.  The kernel starts it
 * past the executable's .bss (the executable: the file holding
 * AT_ENTRY), at a random distance under 1 GiB: the first anonymous
 * segment there, below the next file mapping.  A process that never
 * grew its brk has none, and the first mmapped region within that
 * distance would be taken for it: then the walk finds no main arena's
 * top in it and says so.
 */
static uint64_t find_heap(const struct core_open *o)
{
	struct coreimage *c = o->core;
	const struct core_file *exe = file_find(c, c->entry), *head = NULL;
	uint64_t end, limit = UINT64_MAX;

	for (size_t i = 0; exe && i < c->nfiles && !head; i++)
		if (c->files[i].path == exe->path && !c->files[i].offset)
			head = &c->files[i];
	if (!c->entry || !head || !(end = exe_end(c, head)))
		return 0;
	for (size_t i = 0; i < c->nfiles; i++)
		if (c->files[i].start >= end && c->files[i].start < limit)
			limit = c->files[i].start;
	if (end + BRK_REACH > end && end + BRK_REACH < limit)
		limit = end + BRK_REACH;
	for (size_t i = 0; i < c->nsegs; i++) {
		const struct core_segment *s = &c->segs[i];

		if (s->vaddr >= end && s->vaddr < limit &&
		    !file_find(c, s->vaddr))
			return s->vaddr;
	}
	return 0;
}

/* The thread whose pid is the process's (the main one), or the first. */
static const struct core_thread *main_thread(const struct coreimage *c)
{
	for (size_t i = 0; i < c->nthreads; i++)
		if (c->threads[i].pid == c->pid)
			return &c->threads[i];
	return c->nthreads ? &c->threads[0] : NULL;
}

/*
 * The name /proc/PID/maps gives an anonymous segment, where a core lets
 * it be known: [stack] holds the main thread's (T's) rsp, [vdso] is at
 * AT_SYSINFO_EHDR, [vsyscall] at its fixed address, [heap] as
 * find_heap says.  [vvar] and the names of anonymous shared memory
 * (/dev/zero, memfd:...) are not in a core; they stay "".
 */
static const char *anon_name(const struct coreimage *c,
			     const struct core_thread *t, uint64_t start,
			     uint64_t end, uint64_t heap)
{
	if (t && t->regs.rsp >= start && t->regs.rsp < end)
		return "[stack]";
	if (c->vdso && c->vdso == start)
		return "[vdso]";
	if (start == VSYSCALL_ADDR)
		return "[vsyscall]";
	if (heap && heap == start)
		return "[heap]";
	return "";
}

static void add_vma(struct coreimage *c, uint64_t start, uint64_t end,
		    const char *perms, const struct core_file *f,
		    const char *name)
{
	struct vma v = { 0 };

	v.start = start;
	v.end = end;
	memcpy(v.perms, perms, sizeof(v.perms));
	v.offset = f ? f->offset + (start - f->start) : 0;
	v.name = f ? f->path : strtab_intern_str(&c->img.strings, name);
	maps_add(&c->img.maps, &v);
}

/* "rwxp" from a segment's p_flags. */
static void seg_perms(uint32_t flags, char perms[5])
{
	perms[0] = flags & PF_R ? 'r' : '-';
	perms[1] = flags & PF_W ? 'w' : '-';
	perms[2] = flags & PF_X ? 'x' : '-';
	perms[3] = 'p';
	perms[4] = 0;
}

/*
 * The permissions a file mapping at file offset OFF had, from the ELF
 * file's program headers: its PT_LOAD's, read-only where PT_GNU_RELRO
 * made it so after relocation.  "---p" when the file does not say (not
 * an ELF file, not the core's).
 */
static void file_perms(struct coreimage *c, struct core_file *f, uint64_t off,
		       char perms[5])
{
	uint8_t buf[sizeof(Elf64_Ehdr)];
	struct elf_header eh;
	struct elf_phdr ph;
	uint32_t flags = 0;
	bool load = false, relro = false, is64;
	int fd = file_fd(c, f);

	memcpy(perms, "---p", 5);
	if (fd < 0 || pread(fd, buf, sizeof(buf), 0) != (ssize_t)sizeof(buf) ||
	    memcmp(buf, ELFMAG, SELFMAG))
		return;
	elf_decode_header(buf, sizeof(buf), &eh, &is64);
	if (!is64 || eh.phentsize != sizeof(Elf64_Phdr) ||
	    eh.phoff > INT32_MAX)
		return;
	for (unsigned i = 0; i < eh.phnum; i++) {
		uint64_t lo, hi;

		if (pread(fd, buf, sizeof(Elf64_Phdr),
			  (off_t)(eh.phoff + i * sizeof(Elf64_Phdr))) !=
		    (ssize_t)sizeof(Elf64_Phdr))
			return;
		elf_decode_phdr(buf, true, &ph);
		lo = ph.offset & ~(uint64_t)4095;
		hi = ph.offset + ph.filesz;
		if (off < lo || off >= hi)
			continue;
		if (ph.type == PT_LOAD && !load) {
			load = true;
			flags = ph.flags;
		} else if (ph.type == PT_GNU_RELRO) {
			relro = true;
		}
	}
	if (!load)
		return;
	seg_perms(relro ? flags & ~(uint32_t)PF_W : flags, perms);
}

/*
 * The parts of F that no segment covers: gcore leaves out read-only file
 * mappings entirely.  Their permissions are not in the core: the file's
 * program headers say them (file_perms).
 */
static void add_file_gaps(struct coreimage *c, struct core_file *f)
{
	uint64_t pos = f->start;
	size_t i = 0;
	char perms[5];

	/* (By index: a core without segments has c->segs NULL.) */
	while (i < c->nsegs && c->segs[i].vaddr + c->segs[i].memsz <= pos)
		i++;
	while (pos < f->end) {
		const struct core_segment *s = i < c->nsegs ? &c->segs[i] : NULL;
		uint64_t stop = s && s->vaddr < f->end ? s->vaddr : f->end;

		if (stop > pos) {
			file_perms(c, f, f->offset + (pos - f->start), perms);
			add_vma(c, pos, stop, perms, f, NULL);
		}
		if (stop == f->end)
			break;
		pos = s->vaddr + s->memsz;
		i++;
	}
}

/*
 * The mappings: one per segment (the kernel and gcore write one per
 * VMA), named from NT_FILE, with the file offset; the NT_FILE parts no
 * segment covers.  Permissions come from p_flags; private or shared is
 * not in a core, so all read 'p'; so do device and inode numbers (0).
 * gcore writes PROT_NONE guard pages as readable, the kernel as "---".
 */
static void build_maps(struct core_open *o)
{
	struct coreimage *c = o->core;
	const struct core_thread *t = main_thread(c);
	uint64_t heap;

	if (c->nfiles)
		qsort(c->files, c->nfiles, sizeof(*c->files), cmp_file);
	index_paths(c);
	heap = find_heap(o);
	for (size_t i = 0; i < c->nsegs; i++) {
		const struct core_segment *s = &c->segs[i];
		const struct core_file *f = file_find(c, s->vaddr);
		uint64_t end = s->vaddr + s->memsz;
		char perms[5];

		seg_perms(s->flags, perms);
		add_vma(c, s->vaddr, end, perms, f,
			f ? NULL : anon_name(c, t, s->vaddr, end, heap));
	}
	for (size_t i = 0; i < c->nfiles; i++)
		add_file_gaps(c, &c->files[i]);
	maps_sort(&c->img.maps, c->path);
}

/* --- Opening -------------------------------------------------------- */

static void close_core(struct procimage *img)
{
	struct coreimage *c = (struct coreimage *)img;

	if (c->fd >= 0)
		close(c->fd);
	{
		size_t pos = 0;
		void *item;

		while (hashmap_next(&c->paths, &pos, &item))
			if (((struct core_path *)item)->fd >= 0)
				close(((struct core_path *)item)->fd);
		hashmap_free(&c->paths);
	}
	FREE_ALL(c->files, c->segs, c->threads, c->path);
	c->fd = -1;
}

/* Segments and notes from the N program headers of F. */
static void read_segments(struct core_open *o, const struct elf_file *f,
			  size_t n)
{
	struct coreimage *c = o->core;
	struct elf_phdr ph;
	size_t alloc = 0;

	for (size_t i = 0; i < n; i++)
		if (elf_phdr(f, i, &ph) && ph.type == PT_NOTE)
			read_notes(o, f, &ph);
	for (size_t i = 0; i < n; i++)
		if (elf_phdr(f, i, &ph) && ph.type == PT_LOAD)
			add_segment(o, &ph, &alloc);
	if (!c->nsegs)
		warning("%s: no PT_LOAD segment: the core holds no memory",
			c->path);
	if (!c->nfiles)
		warning("%s: no NT_FILE note: its mappings are not named (the "
			"notes cut short, or a kernel before 3.7)", c->path);
}

/*
 * The core opened (kept for reading memory) and mapped into F (for its
 * headers and notes, while it is opened).
 */
static int open_file(struct coreimage *c, struct elf_file *f)
{
	struct stat st;

	c->fd = open(c->path, O_RDONLY | O_CLOEXEC);
	if (c->fd < 0 || fstat(c->fd, &st) < 0)
		return error_errno("%s", c->path);
	if (!S_ISREG(st.st_mode))
		return error("%s: not a regular file", c->path);
	c->size = (uint64_t)st.st_size;
	if (elf_open_fd(f, c->fd, c->size) < 0)
		return error_errno("%s", c->path);
	return 0;
}

int coreimage_open(struct coreimage *core, const char *path)
{
	return coreimage_open_at(core, path, NULL, NULL);
}

int coreimage_open_at(struct coreimage *core, const char *path,
		      char *(*host_path)(const void *ctx, const char *path),
		      const void *ctx)
{
	struct core_open o = { core, 0, 0 };
	struct elf_file f = { 0 };
	size_t nph = 0;

	memset(core, 0, sizeof(*core));
	procimage_init(&core->img, "core", read_core);
	core->img.close = close_core;
	core->path = xstrdup(path);
	core->fd = -1;
	core->host_path = host_path;
	core->host_ctx = ctx;
	if (open_file(core, &f) < 0 || check_header(core, &f) < 0 ||
	    check_phdrs(core, &f, &nph) < 0) {
		elf_close(&f);
		procimage_close(&core->img);
		return -1;
	}
	read_segments(&o, &f, nph);
	/* (The notes are read: what memory holds is read with pread.) */
	elf_close(&f);
	sort_segments(core);
	if (!core->pid && core->nthreads)
		core->pid = core->threads[0].pid;
	count_lacks(core);
	build_maps(&o);
	for (size_t i = 0; i < core->nthreads; i++) {
		const struct core_thread *t = &core->threads[i];

		procimage_add_thread(&core->img, t->pid, t->regs.rsp,
				     (const uint64_t *)&t->regs,
				     sizeof(t->regs) / sizeof(uint64_t));
	}
	free(core->img.name);
	core->img.name = xasprintf("core %s", path);
	return 0;
}

uint64_t coreimage_held(const struct coreimage *core, uint64_t start,
			uint64_t end)
{
	size_t i = count_from(core->segs, core->nsegs, sizeof(*core->segs),
			      start);
	uint64_t sum = 0;

	for (i = i ? i - 1 : 0; i < core->nsegs && core->segs[i].vaddr < end;
	     i++) {
		const struct core_segment *s = &core->segs[i];
		uint64_t a = start > s->vaddr ? start : s->vaddr;
		uint64_t b = s->vaddr + s->avail;

		if (end < b)
			b = end;
		if (b > a)
			sum += b - a;
	}
	return sum;
}

/* How much of the top of the main thread's stack is looked at: its
 * strings (ARG_MAX's share of the stack limit) and the pointers. */
#define ARGS_WINDOW (4u << 20)

/*
 * W's N words, read from LO on: the index of the first word of the
 * auxiliary vector (its first WANT words), looked for from the top; on
 * the stack below it, NULL, the environment's pointers, NULL, argv's
 * pointers (into [LO, END)), argc.  The index of argv[0] into *ARGV and
 * argc into *ARGC; false if they are not all there.
 */
static bool find_argv(const uint64_t *w, size_t n, const uint64_t *want,
		      size_t nwant, uint64_t lo, uint64_t end, size_t *argv,
		      uint64_t *argc)
{
	size_t a = n >= nwant ? n - nwant + 1 : 0, j;
	uint64_t k = 0;

	while (a && memcmp(w + a - 1, want, nwant * 8))
		a--;
	if (a < 3 || w[a - 2])
		return false;
	/* the auxiliary vector; A-2 the environment's NULL.) */
	for (j = a - 2; j && w[j - 1]; j--)
		;
	if (!j)
		return false;
	/* W[J - 1] is argv's NULL: back over argv to argc. */
	for (j--; j && w[j - 1] != k; j--, k++)
		if (w[j - 1] < lo || w[j - 1] >= end)
			return false;
	if (!j || !k)
		return false;
	*argv = j;
	*argc = k;
	return true;
}

char *coreimage_command_line(struct coreimage *core)
{
	const struct vma *v = maps_find(&core->img.maps, core->execfn);
	struct strbuf sb = STRBUF_INIT;
	uint64_t lo, len, got, argc;
	uint64_t *w;
	size_t argv;

	if (!core->execfn || core->auxv_words < 4 || !v)
		return NULL;
	lo = (v->end - v->start > ARGS_WINDOW ? v->end - ARGS_WINDOW
					      : v->start) & ~7ull;
	if (lo < v->start)
		lo += 8;
	len = (v->end - lo) & ~7ull;
	w = xmalloc(len ? len : 8);
	got = procimage_read(&core->img, lo, w, len) & ~7ull;
	if (!find_argv(w, got / 8, core->auxv_head, core->auxv_words, lo,
		       lo + got, &argv, &argc)) {
		free(w);
		return NULL;
	}
	for (uint64_t i = 0; i < argc; i++) {
		uint64_t p = w[argv + i] - lo;
		const char *s = (const char *)w + p;
		const char *nul = memchr(s, '\0', got - p);

		if (!nul)
			break;
		/* (As /proc/PID/cmdline has them: each ended by a NUL.) */
		sb_add(&sb, s, (size_t)(nul - s) + 1);
	}
	free(w);
	while (sb.len && !sb.buf[sb.len - 1])
		sb.len--;
	if (!sb.len) {
		sb_release(&sb);
		return NULL;
	}
	for (size_t i = 0; i < sb.len; i++)
		if (!sb.buf[i])
			sb.buf[i] = ' ';
	sb.buf[sb.len] = '\0';
	return sb_detach(&sb);
}

void coreimage_close(struct coreimage *core)
{
	procimage_close(&core->img);
}

bool coreimage_missing(const struct coreimage *core, struct fault *f)
{
	if (!core->absent.count && !core->cut.count)
		return false;
	fault_set(f, &(struct where){ .path = core->path, .has_addr = true,
				      .addr = core->size },
		  "%s is cut short at %" PRIu64 " bytes: %zu segment%s absent "
		  "and %zu cut, %" PRIu64 " bytes of memory missing",
		  core->path, core->size, core->absent.count,
		  core->absent.count == 1 ? "" : "s", core->cut.count,
		  core->absent.bytes + core->cut.bytes);
	return true;
}
