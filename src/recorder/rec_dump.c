/*
 * Writing a dump: PREFIX.PID.NNNN.heap in DUMP_DEEP_6, with the buckets
 * first seen since the last dump in a BUCKETS section and the process's
 * mappings, when they changed, in a MAPS section (the original's layout,
 * DMPROF_SEPARATE_FILES=1: in PREFIX.PID.NNNN.buckets and PREFIX.PID.maps),
 * and a JIT's perf map, if it writes one, in PREFIX.PID.perf.map
 * (rec_perfmap.c).
 *
 * Every VMA of the process's maps is cut into regions: the mappings the hooks
 * saw ("hooked", with the bucket of the call that made them), the
 * recorder's own, glibc's arenas (the brk heap, the heaps of the other
 * arenas and the blocks glibc mapped one by one, which glibc maps without
 * going through the hooks), and the rest ("unhooked").  The regions
 * partition the VMAs, so the committed bytes of the regions add up to the
 * process's total, and that total is what the kernel counts as resident
 * (plus swapped): both come from /proc/self/pagemap.
 *
 * Files appear under their final names only when complete (written
 * unnamed, then linked; or to NAME.tmp, then renamed), and the heap file
 * last.  Nothing here goes
 * through the program's allocator: text is built in rec_buf memory and
 * written with write(2).
 */
#include "rec.h"
#include "search.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h> /* rename */
#include <stdlib.h> /* getenv */
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <time.h>
#include <unistd.h>

#define PAGE_MAX_NAME 4200

static rec_lock dump_lock = REC_LOCK_INIT;
atomic_bool rec_dumping;
static unsigned dump_count;   /* dumps written by this process */
static unsigned no_buckets;   /* .buckets files in a row not written */
static int my_pid;
static long run_start;        /* seconds, at this process's first dump */
static bool said_write_error, said_limit, said_pfn, said_not_stopped;
/* (A double's bits: the dump before teardown is written by a program
 * thread while the dump thread may be reading it.) */
static atomic_uint_fast64_t last_seconds;

static void note_seconds(double s);

/*
 * Where the recorder's notices go: never to the program's own stderr (its
 * output must be what it would be unrecorded; it may have closed fd 2 or
 * reused it).  dmprof record passes its own stderr down as a descriptor
 * of its own, named with what it is in DMPROF_RECORDER_NOTICES
 * ("FD:DEV:INO"), which the program's children inherit; a notice goes
 * there while that descriptor is still that file.  Otherwise (the
 * recorder preloaded alone, or a program that closed or reused the
 * descriptor) it goes to the run's log, HEAPPROFILE.log, beside the
 * dumps.
 */
static int notice_fd = -1;
static uint64_t notice_dev, notice_ino;

static const char *parse_u64(const char *s, uint64_t *v)
{
	const char *start = s;

	*v = 0;
	for (; *s >= '0' && *s <= '9'; s++)
		*v = *v * 10 + (uint64_t)(*s - '0');
	return s == start ? NULL : s;
}

void rec_say_init(void)
{
	const char *s = getenv("DMPROF_RECORDER_NOTICES");
	uint64_t fd;

	if (!s || !(s = parse_u64(s, &fd)) || *s++ != ':' ||
	    !(s = parse_u64(s, &notice_dev)) || *s++ != ':' ||
	    !(s = parse_u64(s, &notice_ino)) || *s || fd > INT32_MAX)
		return;
	notice_fd = (int)fd;
}

/* Is the descriptor record passed down still its stderr?  (Raw calls:
 * the tracer says things too.) */
static bool notice_fd_ok(void)
{
	struct stat st;
	long fl;

	if (notice_fd < 0 || syscall(SYS_fstat, notice_fd, &st) != 0 ||
	    (uint64_t)st.st_dev != notice_dev ||
	    (uint64_t)st.st_ino != notice_ino)
		return false;
	fl = syscall(SYS_fcntl, notice_fd, F_GETFL);
	return fl >= 0 && (fl & O_ACCMODE) != O_RDONLY;
}

static void say_part(char *line, size_t cap, size_t *n, const char *s)
{
	size_t len = strlen(s);

	if (len > cap - *n)
		len = cap - *n;
	memcpy(line + *n, s, len);
	*n += len;
}

/* "dmprof-recorder[PID]: " and the strings up to a NULL, on one line. */
void rec_say(const char *first, ...)
{
	char line[1024], num[24], path[sizeof(rec_cfg.prefix) + 8];
	size_t n = 0, w = sizeof(num);
	long pid = syscall(SYS_getpid);
	va_list ap;
	int fd;

	num[--w] = 0;
	do
		num[--w] = (char)('0' + pid % 10);
	while ((pid /= 10) && w);
	say_part(line, sizeof(line) - 1, &n, "dmprof-recorder[");
	say_part(line, sizeof(line) - 1, &n, num + w);
	say_part(line, sizeof(line) - 1, &n, "]: ");
	va_start(ap, first);
	for (const char *s = first; s; s = va_arg(ap, const char *))
		say_part(line, sizeof(line) - 1, &n, s);
	va_end(ap);
	line[n++] = '\n';
	if (notice_fd_ok()) {
		rec_write_all(notice_fd, line, n, -1);
		return;
	}
	if (!rec_cfg.prefix[0])
		return; /* (not recording: nowhere to say it) */
	memcpy(path, rec_cfg.prefix, strlen(rec_cfg.prefix));
	memcpy(path + strlen(rec_cfg.prefix), ".log", 5);
	fd = (int)syscall(SYS_openat, AT_FDCWD, path,
			  O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	rec_write_all(fd, line, n, -1);
	rec_raw_close(fd);
}

/* ---- small helpers ---- */

/* strerror() without the locale's locks (a hook may hold them). */
static const char *why(int err)
{
	const char *s = err ? strerrordesc_np(err) : NULL;

	return s ? s : "error";
}

/* Read all of a /proc file into B (emptied first); false on failure. */
static bool read_all(const char *path, struct rec_buf *b)
{
	int fd = rec_raw_open(path, O_RDONLY | O_CLOEXEC);
	bool ok = fd >= 0;

	rec_buf_free(b);
	while (ok) {
		ssize_t n;

		if (!rec_buf_reserve(b, 16384)) {
			ok = false; /* out of memory: not all of it */
			break;
		}
		n = rec_raw_read(fd, b->p + b->len, b->cap - b->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			ok = false;
		if (n <= 0)
			break;
		b->len += (size_t)n;
	}
	if (fd >= 0)
		rec_raw_close(fd);
	return ok;
}

/*
 * Open a file for PATH that has no name yet (O_TMPFILE in PATH's
 * directory): if the process ends while it is written (an _exit() in
 * another thread), nothing is left behind.  -1 where the file system
 * cannot.
 */
static int open_unnamed(const char *path)
{
	char dir[PAGE_MAX_NAME];
	const char *slash = strrchr(path, '/');
	size_t len = slash ? (size_t)(slash - path) : 0;

	if (!slash)
		return open(".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
	if (!len)
		return open("/", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
	if (len >= sizeof(dir))
		return -1;
	memcpy(dir, path, len);
	dir[len] = 0;
	return open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
}

/* Give the unnamed file FD the name PATH (replacing a file of that
 * name: through TMP, renamed). */
static bool name_unnamed(int fd, const char *path, const char *tmp)
{
	char proc[64] = "/proc/thread-self/fd/";

	*rec_put_dec(proc + strlen(proc), fd, 0) = '\0';
	if (linkat(AT_FDCWD, proc, AT_FDCWD, path, AT_SYMLINK_FOLLOW) == 0)
		return true;
	if (errno != EEXIST)
		return false;
	unlink(tmp);
	if (linkat(AT_FDCWD, proc, AT_FDCWD, tmp, AT_SYMLINK_FOLLOW) < 0)
		return false;
	if (rename(tmp, path) < 0) {
		unlink(tmp);
		return false;
	}
	return true;
}

/*
 * Write PARTS to a file that appears as PATH only when complete: an
 * unnamed file linked to PATH, or, where the file system has no unnamed
 * files, PATH.tmp renamed to PATH.
 */
static bool write_file(const char *path, struct rec_buf **parts, int n)
{
	char tmp[PAGE_MAX_NAME + 8];
	size_t len = strlen(path);
	bool ok = true, unnamed;
	int fd, err = 0;

	memcpy(tmp, path, len);
	memcpy(tmp + len, ".tmp", 5);
	fd = open_unnamed(path);
	unnamed = fd >= 0;
again:
	if (!unnamed)
		fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		err = errno;
		goto fail;
	}
	for (int i = 0; i < n && ok; i++)
		ok = rec_write_all(fd, parts[i]->p ? parts[i]->p : "",
				   parts[i]->len, -1);
	if (!ok)
		err = errno;
	if (ok && unnamed && !name_unnamed(fd, path, tmp)) {
		/* (No /proc here, say: the named way, then.) */
		close(fd);
		unnamed = false;
		goto again;
	}
	if (close(fd) < 0 && ok) {
		err = errno;
		ok = false;
	}
	if (ok && !unnamed && rename(tmp, path) < 0) {
		err = errno;
		ok = false;
	}
	if (ok)
		return true;
	if (!unnamed)
		unlink(tmp);
fail:
	if (!said_write_error) {
		said_write_error = true;
		rec_say("cannot write ", path, ": ", why(err), NULL);
	}
	return false;
}

/*
 * The prefix of this process image's files: HEAPPROFILE, unless files of
 * an earlier image of the same pid (a program that exec()ed another) are
 * there: then HEAPPROFILE.execN, so that neither overwrites the other.
 */
static char prefix[PAGE_MAX_NAME - 64];

static void file_name(char *out, unsigned count, const char *suffix);

/*
 * Files a process of the run left half-written (it ended in the instant
 * between writing the .maps file and renaming it): PREFIX.PID.*.tmp of
 * a PID that is gone, removed at this process's first dump.
 */
static void remove_leftovers(void)
{
	const char *slash = strrchr(rec_cfg.prefix, '/');
	const char *base = slash ? slash + 1 : rec_cfg.prefix;
	size_t blen = strlen(base), dlen = slash ? (size_t)(slash - rec_cfg.prefix)
						 : 0;
	char dir[PAGE_MAX_NAME], path[PAGE_MAX_NAME], buf[4096];
	int fd;
	long n;

	if (dlen + 1 >= sizeof(dir))
		return;
	memcpy(dir, slash ? rec_cfg.prefix : ".", slash ? (dlen ? dlen : 1) : 1);
	dir[slash ? (dlen ? dlen : 1) : 1] = 0;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	while ((n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0)
		for (long off = 0; off < n;) {
			unsigned short reclen;
			const char *name = buf + off + 19, *p;
			size_t len = strlen(name);
			long pid = 0;

			memcpy(&reclen, buf + off + 16, sizeof(reclen));
			off += reclen;
			if (len < blen + 6 || memcmp(name, base, blen) ||
			    name[blen] != '.' || strcmp(name + len - 4, ".tmp"))
				continue;
			for (p = name + blen + 1; *p >= '0' && *p <= '9'; p++)
				pid = pid * 10 + (*p - '0');
			if (*p != '.' || p == name + blen + 1 ||
			    (kill((pid_t)pid, 0) == 0 || errno != ESRCH) ||
			    strlen(dir) + len + 2 > sizeof(path))
				continue;
			memcpy(path, dir, strlen(dir));
			path[strlen(dir)] = '/';
			memcpy(path + strlen(dir) + 1, name, len + 1);
			unlink(path);
		}
	close(fd);
}

static void choose_prefix(void)
{
	char name[PAGE_MAX_NAME];
	size_t len = strlen(rec_cfg.prefix);
	const char *by_record = getenv("DMPROF_LEFTOVERS_BY_RECORD");

	/* (Under dmprof record, which does it before and after the run: a
	 * listing of the directory in each process of a make is quadratic.) */
	if (!by_record || strcmp(by_record, "1"))
		remove_leftovers();
	if (len >= sizeof(prefix) - 16)
		len = sizeof(prefix) - 16;
	memcpy(prefix, rec_cfg.prefix, len);
	prefix[len] = 0;
	for (int k = 2; k < 1000; k++) {
		/* (An image's first dump, or in the original's layout its
		 * maps, which come before it.) */
		file_name(name, 1, ".heap");
		if (access(name, F_OK) != 0) {
			file_name(name, 0, ".maps");
			if (access(name, F_OK) != 0)
				return;
		}
		memcpy(prefix + len, ".exec", 5);
		{
			char d[4] = { (char)('0' + k / 100), (char)('0' + k / 10 % 10),
				      (char)('0' + k % 10), 0 };
			const char *s = d;

			while (*s == '0')
				s++;
			strcpy(prefix + len + 5, s);
		}
	}
}

/* PREFIX.PPPPP[.NNNN]SUFFIX into OUT (PAGE_MAX_NAME bytes). */
static void file_name(char *out, unsigned count, const char *suffix)
{
	char num[16];
	size_t n = 0, len = strlen(prefix);
	int pid = my_pid, w = 0;

	memcpy(out, prefix, len);
	n = len;
	out[n++] = '.';
	do {
		num[w++] = (char)('0' + pid % 10);
		pid /= 10;
	} while (pid);
	while (w < 5)
		num[w++] = '0';
	while (w)
		out[n++] = num[--w];
	if (count) {
		out[n++] = '.';
		for (int d = 1000; d; d /= 10)
			out[n++] = (char)('0' + count / (unsigned)d % 10);
	}
	len = strlen(suffix);
	memcpy(out + n, suffix, len + 1);
}

/* ---- the process's mappings ---- */

enum cls { C_EXEC, C_NONEXEC, C_ANON, C_STACK, C_OTHER, C_SKIP, NCLS };

struct vma {
	uintptr_t start, end;
	uint64_t inode;
	const char *line; /* in the maps text */
	size_t linelen;
	const char *name;
	size_t namelen;
	char perms[4];
	enum cls cls;
	bool resident;    /* smaps says some of it is in memory or swap */
};

static const char *skip_field(const char *p, const char *end)
{
	while (p < end && *p != ' ')
		p++;
	while (p < end && *p == ' ')
		p++;
	return p;
}

/* A "Rss:" or "Swap:" line of smaps with a size other than 0. */
static bool resident_line(const char *p, const char *eol)
{
	size_t n = !memcmp(p, "Rss:", 4) ? 4 : !memcmp(p, "Swap:", 5) ? 5 : 0;

	if (!n || eol - p < (ptrdiff_t)n)
		return false;
	for (p += n; p < eol; p++)
		if (*p >= '1' && *p <= '9')
			return true;
	return false;
}

/*
 * Parse /proc/self/smaps (or maps) text into VMAS; returns how many.
 * Besides the VMA lines smaps has a line per field of each, of which Rss
 * and Swap say whether the pagemap walk need look at the VMA at all (a
 * reservation of a terabyte is a lot of pagemap to read for nothing);
 * from maps, every VMA is to be looked at (RESIDENT).
 */
static size_t parse_maps(const struct rec_buf *text, struct rec_buf *vmas,
			 bool resident)
{
	const char *p = text->p, *end = text->p + text->len;
	uintptr_t last = 0;
	bool dropped = false; /* the last VMA read (its fields follow) */

	rec_buf_free(vmas);
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *q = p;
		struct vma v;

		if (!eol)
			eol = end;
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'))) {
			/* A field of the last VMA. */
			if (vmas->len && !dropped && eol - p > 5 &&
			    resident_line(p, eol))
				((struct vma *)(vmas->p + vmas->len) - 1)
					->resident = true;
			p = eol + 1;
			continue;
		}
		memset(&v, 0, sizeof(v));
		v.resident = resident;
		v.line = p;
		v.linelen = (size_t)(eol - p);
		v.start = rec_hex(&q, eol, NULL);
		if (q < eol && *q == '-')
			q++;
		v.end = rec_hex(&q, eol, NULL);
		q = skip_field(q, eol);
		if (eol - q >= 4)
			memcpy(v.perms, q, 4);
		q = skip_field(q, eol); /* perms */
		q = skip_field(q, eol); /* offset */
		q = skip_field(q, eol); /* device */
		for (; q < eol && *q >= '0' && *q <= '9'; q++)
			v.inode = v.inode * 10 + (uint64_t)(*q - '0');
		while (q < eol && *q == ' ')
			q++;
		v.name = q;
		v.namelen = (size_t)(eol - q);
		if (v.namelen && v.name[0] == '/')
			v.cls = v.perms[2] == 'x' ? C_EXEC : C_NONEXEC;
		else if (!v.namelen)
			v.cls = C_ANON;
		else if (v.namelen == 7 && !memcmp(v.name, "[stack]", 7))
			v.cls = C_STACK;
		else
			v.cls = C_OTHER;
		if (v.namelen == 10 && !memcmp(v.name, "[vsyscall]", 10))
			v.cls = C_SKIP; /* no pagemap, no regions */
		/*
		 * (A mapping that starts before the last one ends: the maps
		 * were read while the program changed them, as without a
		 * stop, in more than one read.  Kept, it would cut the same
		 * bytes twice; the first one read stands.)
		 */
		dropped = !(v.end > v.start && v.start >= last);
		if (!dropped) {
			rec_buf_add(vmas, &v, sizeof(v));
			last = v.end;
		}
		p = eol + 1;
	}
	return vmas->len / sizeof(struct vma);
}

/* ---- regions: the records that cut VMAs ---- */

static void sort_maps(struct rec_map *a, size_t n)
{
	/* Shell sort by start: no allocation, few records. */
	static const size_t gaps[] = { 701, 301, 132, 57, 23, 10, 4, 1 };

	for (size_t g = 0; g < sizeof(gaps) / sizeof(gaps[0]); g++) {
		size_t gap = gaps[g];

		for (size_t i = gap; i < n; i++) {
			struct rec_map t = a[i];
			size_t j = i;

			for (; j >= gap && a[j - gap].start > t.start; j -= gap)
				a[j] = a[j - gap];
			a[j] = t;
		}
	}
}

/* Sort and drop overlaps (an earlier start keeps the bytes). */
static size_t tidy_maps(struct rec_map *a, size_t n)
{
	size_t out = 0;
	uintptr_t last = 0;

	sort_maps(a, n);
	for (size_t i = 0; i < n; i++) {
		struct rec_map m = a[i];

		if (m.start < last)
			m.start = last;
		if (m.start >= m.end)
			continue;
		a[out++] = m;
		last = m.end;
	}
	return out;
}

/*
 * Is there still a heap of glibc's at BASE: in an anonymous mapping, not
 * always at its start (the kernel merges a heap's first part with an
 * anonymous mapping of the same rights just below it: a JIT's), its
 * heap_info's size a number of 4 KiB pages no more than a heap holds.
 */
/* The mapping holding ADDR, or NULL. */
static const struct vma *vma_of(const struct vma *v, size_t n, uintptr_t addr)
{
	size_t k = PARTITION_POINT(n, i, v[i].end <= addr);

	return k < n && v[k].start <= addr ? &v[k] : NULL;
}

static bool heap_at(const struct vma *vmas, size_t n, uintptr_t base)
{
	const struct vma *v = vma_of(vmas, n, base);
	size_t size;

	if (!v || v->cls != C_ANON || v->perms[0] != 'r' || v->perms[1] != 'w')
		return false;
	if (v->start == base)
		return true;
	/* (heap_info: ar_ptr, prev, size, ...) */
	memcpy(&size, (const char *)base + 2 * sizeof(void *), sizeof(size));
	return size && size <= REC_HEAP_MAX && !(size & 4095);
}

/*
 * The regions of this dump into OUT, sorted and disjoint: the hooked
 * mappings and the recorder's own first, then glibc's arenas where no
 * such mapping is.
 */
static size_t build_regions(const struct vma *vmas, size_t nv,
			    const struct rec_large *large, size_t nlarge,
			    struct rec_buf *out, struct rec_buf *tmp)
{
	struct rec_map *hooked, *mine, *arena;
	size_t nh, nmine, na = 0, nout = 0, j = 0;
	uintptr_t *bases;
	size_t nbases;
	uint32_t ab = rec_arena_bucket ? rec_arena_bucket->id : 0;

	/* The first group: hooked mappings and the recorder's. */
	nh = rec_map_snapshot(&hooked);
	rec_buf_free(out);
	rec_buf_add(out, hooked, nh * sizeof(*hooked));
	nmine = rec_self_count() + 64;
	if (!rec_buf_zero(out, nmine * sizeof(struct rec_map))) {
		nmine = 0;
	} else {
		mine = (struct rec_map *)out->p + nh;
		nmine = rec_self_snapshot(mine, nmine,
					  rec_self_bucket ? rec_self_bucket->id
							  : 0);
	}
	nh = tidy_maps((struct rec_map *)out->p, nh + nmine);
	out->len = nh * sizeof(struct rec_map);

	/* The second group: glibc's arenas. */
	rec_buf_free(tmp);
	for (size_t i = 0; i < nv; i++) {
		if (vmas[i].namelen == 6 && !memcmp(vmas[i].name, "[heap]", 6)) {
			struct rec_map m = { vmas[i].start, vmas[i].end, ab };

			rec_buf_add(tmp, &m, sizeof(m));
		}
	}
	nbases = rec_arena_snapshot(&bases);
	for (size_t i = 0; i < nbases; i++) {
		/* (A heap that is gone is in no mapping, or in another.) */
		if (heap_at(vmas, nv, bases[i])) {
			struct rec_map m = { bases[i], bases[i] + REC_HEAP_MAX,
					     ab };

			rec_buf_add(tmp, &m, sizeof(m));
		}
	}
	/* The mappings the main arena went on in past its brk heap. */
	nbases = rec_main_ext_snapshot(&bases);
	for (size_t i = 0; i < nbases; i++) {
		const struct vma *v = vma_of(vmas, nv, bases[i]);

		if (v && v->cls == C_ANON) {
			struct rec_map m = { v->start, v->end, ab };

			rec_buf_add(tmp, &m, sizeof(m));
		}
	}
	for (size_t i = 0; i < nlarge; i++) {
		if (large[i].mend > large[i].mstart) {
			struct rec_map m = { large[i].mstart, large[i].mend,
					     ab };

			rec_buf_add(tmp, &m, sizeof(m));
		}
	}
	arena = (struct rec_map *)tmp->p;
	na = tidy_maps(arena, tmp->len / sizeof(struct rec_map));

	/* Arena parts that no record of the first group covers. */
	hooked = (struct rec_map *)out->p;
	nout = nh;
	for (size_t i = 0; i < na; i++) {
		uintptr_t lo = arena[i].start;

		while (j < nh && hooked[j].end <= lo)
			j++;
		for (size_t k = j; k < nh && lo < arena[i].end; k++) {
			if (hooked[k].start >= arena[i].end)
				break;
			if (hooked[k].start > lo) {
				struct rec_map m = { lo, hooked[k].start, ab };

				rec_buf_add(out, &m, sizeof(m));
				hooked = (struct rec_map *)out->p;
				nout++;
			}
			if (hooked[k].end > lo)
				lo = hooked[k].end;
		}
		if (lo < arena[i].end) {
			struct rec_map m = { lo, arena[i].end, ab };

			rec_buf_add(out, &m, sizeof(m));
			hooked = (struct rec_map *)out->p;
			nout++;
		}
	}
	nout = out->len / sizeof(struct rec_map);
	sort_maps((struct rec_map *)out->p, nout);
	return nout;
}

/* ---- committed bytes: /proc/self/pagemap ---- */

#define PM_PRESENT (1ULL << 63)
#define PM_SWAPPED (1ULL << 62)
#define PM_FILE (1ULL << 61)      /* file page or shared anonymous */
#define PM_EXCLUSIVE (1ULL << 56) /* mapped once */
#define PM_PFN ((1ULL << 55) - 1)
#define PM_CHUNK 4096

static int pm_fd = -1, kpc_fd = -1;
static bool have_pagecount; /* this dump's page frames have counts */
static size_t page;
static uint64_t *pm_buf;

struct pf_line {
	struct rec_buf *b;   /* where PF lines go; NULL: none */
	size_t line_start;
};

static void pf_token(struct pf_line *pf, uint64_t pfn, bool first_partial,
		     bool last_partial)
{
	static const char b64[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char tok[8];
	size_t n = 0;

	if (pf->b->len - pf->line_start > 94 || pf->line_start == (size_t)-1) {
		if (pf->line_start != (size_t)-1)
			rec_buf_add(pf->b, "\n", 1);
		pf->line_start = pf->b->len;
		rec_buf_str(pf->b, "  PF:");
	}
	tok[n++] = ' ';
	if (first_partial)
		tok[n++] = '<';
	for (int shift = 18; shift >= 0; shift -= 6)
		tok[n++] = b64[(pfn >> shift) & 63];
	rec_buf_add(pf->b, tok, n);
	if (kpc_fd >= 0) {
		uint64_t count = 0;

		if (rec_raw_pread(kpc_fd, &count, 8, (long)(pfn * 8)) != 8)
			count = 0;
		tok[0] = '#';
		tok[1] = b64[count > 63 ? 63 : count];
		rec_buf_add(pf->b, tok, 2);
	}
	if (last_partial)
		rec_buf_add(pf->b, ">", 1);
}

/*
 * The shared zero page: memory read but never written shows as present,
 * but it is no one's memory, and the kernel leaves it out of Rss.  With
 * page frame numbers visible (root) it is known by its number, learned
 * here; without them, by being neither a file page nor mapped once, which
 * a page shared with a parent or child after fork() also is: so then only
 * in a process that has not forked.
 */
static uint64_t zero_pfn;

static void learn_zero_pfn(void)
{
	volatile char *p = rec_raw_mmap(NULL, page, PROT_READ,
					MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t e = 0;

	if ((void *)p == MAP_FAILED)
		return;
	(void)p[0]; /* a read fault maps the zero page */
	/* (Not where it mapped a page of its own, as this VM's kernel,
	 * 6.18, does: that frame is freed below and used again.) */
	if (rec_raw_pread(pm_fd, &e, 8, (long)((uintptr_t)p / page * 8)) == 8 &&
	    (e & PM_PRESENT) && (e & PM_PFN) && !(e & PM_EXCLUSIVE))
		zero_pfn = e & PM_PFN;
	rec_raw_munmap((void *)p, page);
}

static bool zero_page(uint64_t e)
{
	if (!(e & PM_PRESENT) || (e & (PM_FILE | PM_EXCLUSIVE)))
		return false;
	if (zero_pfn)
		return (e & PM_PFN) == zero_pfn;
	return !atomic_load(&rec_forked);
}

/*
 * The entries in PM_BUF: of pages [WIN_LO, WIN_LO + WIN_N), read in this
 * walk (the threads stand still).  A VMA cut into many regions (a
 * runtime's heap of small mappings, Ruby's: thousands) is read once, not
 * a read per region; WIN_END (a page number) is how far a read may go,
 * the end of the VMA at hand, 0 for no further than asked.
 */
static uintptr_t win_lo, win_end;
static size_t win_n;

/* Committed bytes of [LO, HI) as pagemap says them, entry by entry. */
static uint64_t read_committed(uintptr_t lo, uintptr_t hi,
			       struct pf_line *pf)
{
	uint64_t total = 0;
	uintptr_t first = lo / page, last = (hi - 1) / page;

	if (pm_fd < 0 || hi <= lo)
		return 0;
	for (uintptr_t pg = first; pg <= last;) {
		size_t want = last - pg + 1, k, n;

		if (pg < win_lo || pg >= win_lo + win_n) {
			if (win_end > pg && win_end - pg > want)
				want = win_end - pg;
			if (want > PM_CHUNK)
				want = PM_CHUNK;
			win_n = 0;
			if (rec_raw_pread(pm_fd, pm_buf, want * 8,
					  (long)(pg * 8)) != (long)(want * 8))
				return 0;
			win_lo = pg;
			win_n = want;
		}
		k = pg - win_lo;
		n = win_n - k < last - pg + 1 ? win_n - k : last - pg + 1;
		for (size_t end = k + n; k < end; k++, pg++) {
			uint64_t e = pm_buf[k];
			uintptr_t a = pg * page, b = a + page;

			if (!(e & (PM_PRESENT | PM_SWAPPED)) || zero_page(e))
				continue;
			if (a < lo)
				a = lo;
			if (b > hi)
				b = hi;
			total += b - a;
			if (pf && pf->b && (e & PM_PRESENT) &&
			    !(e & PM_SWAPPED))
				pf_token(pf, e & PM_PFN,
					 pg == first && lo % page,
					 pg == last && hi % page);
		}
	}
	return total;
}

/*
 * PAGEMAP_SCAN (Linux 6.7), which these headers may not know: the parts
 * of a range that have pages present or swapped, found by the kernel's
 * page-table walk, which skips what was never touched a table at a time.
 * Reading pagemap entry by entry costs 8 bytes a page whatever is there:
 * a gigabyte for a terabyte reserved (a sanitizer's shadow, a runtime's
 * heap reservation, V8's cage) with a few pages in it.  (More than 512
 * regions a call, and the kernel's WALK_END came back short of what it
 * had returned: reference/consistent-snapshot.md.)
 */
struct pm_region {
	uint64_t start, end, categories;
};
struct pm_scan {
	uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages;
	uint64_t category_inverted, category_mask, category_anyof_mask;
	uint64_t return_mask;
};
#define PM_SCAN _IOWR('f', 16, struct pm_scan)
#define PM_IS_PRESENT (1u << 3)
#define PM_IS_SWAPPED (1u << 4)
#define PM_IS_PFNZERO (1u << 5)
#define PM_SCAN_REGIONS 512
/* Ranges of fewer pages are read entry by entry at once. */
#define PM_SCAN_PAGES 512

static bool no_scan; /* the kernel has no PAGEMAP_SCAN */

/*
 * Committed bytes of [LO, HI): the bytes of every present or swapped page
 * that lie in the range, but the zero page; 0 when pagemap cannot be read
 * (as the original).  With PF, resident pages are listed as page-frame
 * tokens.  Pagemap is read where the kernel says pages are.
 */
static struct pm_region reg[PM_SCAN_REGIONS];

/* Ask FD's kernel where the present or swapped pages of [AT, END) are
 * (with NO_ZERO, but the zero page), up to N runs into VEC (never more
 * than 512 a call: past that the kernel's WALK_END came back short of
 * what it returned); the count, or -1 (errno set).  *A says where it
 * stopped. */
static long pm_scan_into(int fd, uintptr_t at, uintptr_t end,
			 struct pm_region *vec, size_t n, bool no_zero,
			 struct pm_scan *a)
{
	uint64_t zero = no_zero ? PM_IS_PFNZERO : 0;

	*a = (struct pm_scan){ sizeof(*a), 0, at, end, 0, (uintptr_t)vec,
			       n < PM_SCAN_REGIONS ? n : PM_SCAN_REGIONS, 0,
			       zero, zero, PM_IS_PRESENT | PM_IS_SWAPPED,
			       PM_IS_PRESENT | PM_IS_SWAPPED };
	return rec_raw_ioctl(fd, PM_SCAN, a);
}

/* The same into REG, zero page and all. */
static long pm_scan(int fd, uintptr_t at, uintptr_t end, struct pm_scan *a)
{
	return pm_scan_into(fd, at, end, reg, PM_SCAN_REGIONS, false, a);
}

/*
 * The present or swapped pages but the zero page, as the kernel found
 * them in one walk (PAGEMAP_SCAN, filtered by its categories): a
 * region's committed bytes are those of the pages listed, with no read of
 * pagemap at all.  Regions come in order, and one scan reaches as far
 * ahead as SCAN_MAX runs of pages go, up to SCAN_TO when the caller walks
 * the whole process (MMAP_LIST): a call a VMA was a hundred calls a dump
 * of cc1, each with a buffer the kernel allocated and freed (a third of
 * the calls' time).  (A VMA of more than SCAN_MAX runs of pages is read
 * as below.)  What pagemap costs a short process was most of its dumps'
 * reading (gcc's cc1: 5% of its run under record).  Not where page
 * frames are listed (they come from pagemap), nor where the kernel
 * cannot filter (then as below).
 */
#define SCAN_MAX 1024
static struct pm_region scan_reg[SCAN_MAX];
static struct {
	uintptr_t lo, hi; /* what was scanned (hi 0: nothing) */
	size_t n, at;     /* regions, and the first one not below LO */
} vma_scan;
static bool no_filter; /* the kernel's scan has no PFNZERO category */
static uintptr_t scan_to; /* how far ahead a scan may go; 0: no further
			     than asked */

static void scan_forget(void)
{
	vma_scan.hi = 0;
}

/* [LO, NEED) and what follows it up to HI, as far as SCAN_MAX regions
 * go, scanned into VMA_SCAN: false when [LO, NEED) cannot be (too many
 * regions, or no such scan). */
static bool scan_range(uintptr_t lo, uintptr_t need, uintptr_t hi)
{
	uintptr_t at = lo;

	vma_scan.hi = 0;
	vma_scan.n = vma_scan.at = 0;
	while (at < hi && vma_scan.n < SCAN_MAX) {
		struct pm_scan a;
		long n = pm_scan_into(pm_fd, at, hi, scan_reg + vma_scan.n,
				      SCAN_MAX - vma_scan.n, true, &a);

		if (n < 0 || a.walk_end <= at) {
			if (n < 0 && (errno == ENOTTY || errno == EINVAL))
				no_filter = true;
			return false;
		}
		vma_scan.n += (size_t)n;
		/* (Full, it stops where the next run would have begun: the
		 * runs listed are whole up to there.) */
		at = a.walk_end;
	}
	if (at < need)
		return false;
	vma_scan.lo = lo;
	vma_scan.hi = at;
	return true;
}

/* The bytes of [LO, HI) in VMA_SCAN's regions (LO at or past the last
 * call's, within the VMA scanned; else from its first region). */
static uint64_t scanned(uintptr_t lo, uintptr_t hi)
{
	uint64_t total = 0;
	size_t i;

	if (vma_scan.at && scan_reg[vma_scan.at - 1].end > lo)
		vma_scan.at = 0;
	while (vma_scan.at < vma_scan.n && scan_reg[vma_scan.at].end <= lo)
		vma_scan.at++;
	for (i = vma_scan.at; i < vma_scan.n && scan_reg[i].start < hi; i++) {
		uintptr_t s = scan_reg[i].start > lo ? scan_reg[i].start : lo;
		uintptr_t e = scan_reg[i].end < hi ? scan_reg[i].end : hi;

		if (s < e)
			total += e - s;
	}
	return total;
}

static uint64_t committed(uintptr_t lo, uintptr_t hi, struct pf_line *pf)
{
	uintptr_t at = lo & ~(uintptr_t)(page - 1), done = lo;
	uintptr_t end = (hi + page - 1) & ~(uintptr_t)(page - 1), limit;
	uint64_t total = 0;

	if (pm_fd < 0 || hi <= lo)
		return 0;
	if (!no_scan && !no_filter && !(pf && pf->b)) {
		uintptr_t to = win_end && win_end * page > end ? win_end * page
							       : end;
		bool have = vma_scan.hi && at >= vma_scan.lo &&
			    end <= vma_scan.hi;

		if (scan_to > to)
			to = scan_to;
		if (have || scan_range(at, end, to))
			return scanned(lo, hi);
	}
	if (no_scan || (end - at) / page < PM_SCAN_PAGES)
		return read_committed(lo, hi, pf);
	limit = win_end;
	win_end = 0; /* (the kernel says where the pages are) */
	while (at < end) {
		struct pm_scan a;
		long n = pm_scan(pm_fd, at, end, &a);

		if (n < 0 || a.walk_end <= at) {
			no_scan = n < 0 && (errno == ENOTTY || errno == EINVAL);
			win_end = limit;
			return total + read_committed(done, hi, pf);
		}
		for (long i = 0; i < n && i < PM_SCAN_REGIONS; i++) {
			/* (Each page once, in order, whatever comes back.) */
			uintptr_t s = reg[i].start > done ? reg[i].start : done;
			uintptr_t e = reg[i].end < hi ? reg[i].end : hi;

			if (s < e) {
				total += read_committed(s, e, pf);
				done = e;
			}
		}
		at = a.walk_end;
	}
	win_end = limit;
	return total;
}

/*
 * Where a walk reads the mappings from.  smaps costs the kernel a walk
 * of every page table, the most of a short process's dumps (5 ms a dump
 * of a compiler's 60 MB, two dumps a process): its Rss and Swap lines
 * only spare pagemap the VMAs without a page, which PAGEMAP_SCAN skips at
 * no cost.  Where the kernel has it (a probe on a page of ours says),
 * maps is enough; *RESIDENT then.
 */
static const char *maps_source(bool *resident)
{
	static int scan = -1; /* unknown yet */

	if (scan < 0 && rec_cfg.no_scan) {
		scan = 0;
		no_scan = true;
	} else if (scan < 0) {
		size_t pg = page ? page : 4096;
		uintptr_t at = (uintptr_t)&scan & ~(uintptr_t)(pg - 1);
		struct pm_scan a;
		int fd = rec_raw_open("/proc/thread-self/pagemap",
				      O_RDONLY | O_CLOEXEC);

		scan = fd >= 0 && pm_scan(fd, at, at + pg, &a) >= 0;
		if (fd >= 0)
			rec_raw_close(fd);
	}
	*resident = scan && !no_scan;
	return *resident ? "/proc/thread-self/maps" : "/proc/thread-self/smaps";
}

/* ---- the dump ---- */

struct stat_row {
	int64_t virt, comm;
};

enum {
	G_TOTAL, G_ABSENT, G_FILE_EXEC, G_FILE_NONEXEC, G_ANONYMOUS, G_STACK,
	G_OTHER, G_NP_TOTAL, G_NP_ABSENT, G_NP_ANONYMOUS, G_NP_FILE_EXEC,
	G_NP_FILE_NONEXEC, G_NP_STACK, G_NP_OTHER, G_PROFILED_MMAP,
	G_PROFILED_MALLOC, NG
};

static const char *const gnames[NG] = {
	"total", "absent", "file-exec", "file-nonexec", "anonymous", "stack",
	"other", "nonprofiled-total", "nonprofiled-absent",
	"nonprofiled-anonymous", "nonprofiled-file-exec",
	"nonprofiled-file-nonexec", "nonprofiled-stack", "nonprofiled-other",
	"profiled-mmap", "profiled-malloc",
};

/* The GLOBAL_STATS row of a VMA class, and of its nonprofiled part. */
static const int cls_row[NCLS] = { G_FILE_EXEC, G_FILE_NONEXEC, G_ANONYMOUS,
				   G_STACK, G_OTHER, -1 };
static const int cls_np_row[NCLS] = { G_NP_FILE_EXEC, G_NP_FILE_NONEXEC,
				      G_NP_ANONYMOUS, G_NP_STACK, G_NP_OTHER,
				      -1 };

/* Buffers kept from dump to dump (their pages stay the recorder's). */
static struct rec_buf maps_text, vmas_buf, regions_buf, tmp_buf, mmap_list,
	stacks, buckets_text, meta, gstats, head, maps_file, values_buf,
	seen_text, seen_buf, new_ids, names_text,
	maps_written, /* what this process's .maps file holds */
	frames_now, frames_before; /* a bucket line's frames, and the
				      line's before it (bucket_line) */

/* Executable mappings seen at some dump or dlclose(), still named in
 * .maps after they are gone. */
struct seen {
	uintptr_t start, end;
	uint64_t inode;
	size_t off, len; /* the line in seen_text */
};

static void remember(const struct vma *v, size_t nv)
{
	for (size_t i = 0; i < nv; i++) {
		const struct seen *s = (const struct seen *)seen_buf.p;
		size_t ns = seen_buf.len / sizeof(*s), k;
		struct seen e;

		if (v[i].cls != C_EXEC)
			continue;
		for (k = 0; k < ns; k++)
			if (s[k].start == v[i].start && s[k].end == v[i].end &&
			    s[k].inode == v[i].inode)
				break;
		if (k < ns || ns >= 65536)
			continue;
		e.start = v[i].start;
		e.end = v[i].end;
		e.inode = v[i].inode;
		e.off = seen_text.len;
		e.len = v[i].linelen;
		rec_buf_add(&seen_text, v[i].line, v[i].linelen);
		if (seen_text.len == e.off + e.len)
			rec_buf_add(&seen_buf, &e, sizeof(e));
	}
}

void rec_maps_remember(void)
{
	bool resident;

	rec_lock_take(&dump_lock);
	if (read_all(maps_source(&resident), &maps_text))
		remember((const struct vma *)vmas_buf.p,
			 parse_maps(&maps_text, &vmas_buf, resident));
	rec_lock_give(&dump_lock);
}

/*
 * PREFIX.PID.maps: the mappings of now that the analyzer names frames
 * from (files', every one of a binary for its load bias, and executable
 * ones: a JIT's code, the vDSO), and executable ones now gone.  Not the
 * anonymous data (the heap file's MMAP_LIST has every mapping at each
 * dump): that changes at every dump, and the file would be made again
 * each time (under make, a file made is an inode allocated).
 */
static void build_maps_file(const struct vma *v, size_t nv)
{
	const struct seen *s = (const struct seen *)seen_buf.p;
	size_t ns = seen_buf.len / sizeof(*s);

	rec_buf_free(&maps_file);
	for (size_t i = 0; i < nv; i++) {
		if (v[i].perms[2] != 'x' &&
		    !(v[i].namelen && v[i].name[0] == '/'))
			continue;
		rec_buf_add(&maps_file, v[i].line, v[i].linelen);
		rec_buf_add(&maps_file, "\n", 1);
	}
	for (size_t k = 0; k < ns; k++) {
		bool clash = false;

		/* Only where nothing is mapped now (VMAs are sorted). */
		for (size_t i = 0; i < nv && v[i].start < s[k].end; i++)
			if (v[i].end > s[k].start) {
				clash = true;
				break;
			}
		if (clash)
			continue;
		rec_buf_add(&maps_file, seen_text.p + s[k].off, s[k].len);
		rec_buf_add(&maps_file, "\n", 1);
	}
}

static void add_stat(struct stat_row *g, int row, int64_t virt, int64_t comm)
{
	g[row].virt += virt;
	g[row].comm += comm;
}

/* "  " hex " - " hex "  unhooked C / R" (with PF lines before it). */
static void emit_region(struct rec_buf *b, const struct vma *v,
			const struct rec_map *r, uintptr_t lo, uintptr_t hi,
			struct stat_row *g, int64_t *mv, int64_t *mc,
			uint32_t nb)
{
	struct pf_line pf = { rec_cfg.pageframe ? b : NULL, (size_t)-1 };
	uint64_t c;

	win_end = (v->end + page - 1) / page;
	c = v->resident ? committed(lo, hi, &pf) : 0;
	win_end = 0;

	if (pf.line_start != (size_t)-1)
		rec_buf_add(b, "\n", 1);
	if (!r) {
		rec_buf_str(b, "  ");
		rec_buf_hex(b, lo, 0);
		rec_buf_str(b, " - ");
		rec_buf_hex(b, hi, 0);
		rec_buf_str(b, "  unhooked ");
		add_stat(g, cls_np_row[v->cls], (int64_t)(hi - lo),
			 (int64_t)c);
		add_stat(g, G_NP_TOTAL, (int64_t)(hi - lo), (int64_t)c);
	} else {
		/* The whole record, parenthesized where it leaves the VMA. */
		rec_buf_str(b, r->start < v->start ? " (" : "  ");
		rec_buf_hex(b, r->start, 0);
		rec_buf_str(b, r->start < v->start ? ")-" : " -");
		rec_buf_str(b, r->end > v->end ? "(" : " ");
		rec_buf_hex(b, r->end, 0);
		rec_buf_str(b, r->end > v->end ? ") hooked " : "  hooked ");
		add_stat(g, G_PROFILED_MMAP, (int64_t)(hi - lo), (int64_t)c);
		if (r->bucket < nb) {
			mv[r->bucket] += (int64_t)(hi - lo);
			mc[r->bucket] += (int64_t)c;
		}
	}
	rec_buf_u64(b, c);
	rec_buf_str(b, " / ");
	rec_buf_u64(b, hi - lo);
	if (r) {
		rec_buf_str(b, " @ ");
		rec_buf_u64(b, r->bucket);
	}
	rec_buf_add(b, "\n", 1);
	add_stat(g, cls_row[v->cls], (int64_t)(hi - lo), (int64_t)c);
}

/* MMAP_LIST: every VMA and the regions that cut it. */
static void build_mmap_list(const struct vma *vmas, size_t nv,
			    const struct rec_map *regs, size_t nr,
			    struct stat_row *g, int64_t *mv, int64_t *mc,
			    uint32_t nb)
{
	size_t k = 0, need = 64 + (nr + 2 * nv + 1) * 100;

	/*
	 * Room for all of it, touched now: a buffer that moved while the walk
	 * runs would have its pages counted at both places.  (Page-frame
	 * lists may still outgrow it.)
	 */
	for (size_t i = 0; i < nv; i++)
		need += vmas[i].linelen + 1;
	rec_buf_free(&mmap_list);
	if (rec_buf_reserve(&mmap_list, need))
		memset(mmap_list.p, 0, need);
	rec_buf_str(&mmap_list, "MMAP_LIST:\n");
	/* (The VMAs are in order: a scan may read ahead to the last one
	 * pagemap has, [vsyscall] being above the process's space.) */
	scan_to = 0;
	for (size_t i = nv; i-- > 0 && !scan_to;)
		if (vmas[i].cls != C_SKIP)
			scan_to = vmas[i].end;
	for (size_t i = 0; i < nv; i++) {
		const struct vma *v = &vmas[i];
		uintptr_t at = v->start;

		rec_buf_add(&mmap_list, v->line, v->linelen);
		rec_buf_add(&mmap_list, "\n", 1);
		if (v->cls == C_SKIP)
			continue;
		while (k < nr && regs[k].end <= v->start)
			k++;
		for (size_t j = k; j < nr && regs[j].start < v->end; j++) {
			uintptr_t lo = regs[j].start > v->start ? regs[j].start
								: v->start;
			uintptr_t hi = regs[j].end < v->end ? regs[j].end
							    : v->end;

			if (at < lo)
				emit_region(&mmap_list, v, NULL, at, lo, g, mv,
					    mc, nb);
			emit_region(&mmap_list, v, &regs[j], lo, hi, g, mv, mc,
				    nb);
			at = hi;
		}
		if (at < v->end)
			emit_region(&mmap_list, v, NULL, at, v->end, g, mv, mc,
				    nb);
	}
	scan_to = 0;
}

/* "%10lld %10lld %6d %6d @ %d", written in place (a dump writes a line
 * for every bucket, tens of thousands in a Python program's). */
static void stack_line(struct rec_buf *b, int64_t virt, int64_t comm,
		       int64_t allocs, int64_t frees, uint32_t id)
{
	char *p;

	if (!rec_buf_room_as_filled(b, 4 * 21 + 3 + 3 + 11 + 1))
		return;
	p = b->p + b->len;
	p = rec_put_dec(p, virt, 10);
	*p++ = ' ';
	p = rec_put_dec(p, comm, 10);
	*p++ = ' ';
	p = rec_put_dec(p, allocs, 6);
	*p++ = ' ';
	p = rec_put_dec(p, frees, 6);
	memcpy(p, " @ ", 3);
	p = rec_put_dec(p + 3, id, 0);
	*p++ = '\n';
	b->len = (size_t)(p - b->p);
}

/* "%25s %12ld %12ld" */
static void stat_line(struct rec_buf *b, const char *name, int64_t virt,
		      int64_t comm)
{
	rec_buf_pad(b, 25, strlen(name), ' ');
	rec_buf_str(b, name);
	rec_buf_add(b, " ", 1);
	rec_buf_dec(b, virt, 12);
	rec_buf_add(b, " ", 1);
	rec_buf_dec(b, comm, 12);
	rec_buf_add(b, "\n", 1);
}

/* A word in memory order read as a little-endian number (or back). */
static inline uint64_t little_end(uint64_t x)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return x;
#else
	return __builtin_bswap64(x);
#endif
}

/*
 * X's eight hex digits, the most significant first, as the eight bytes
 * of the word returned (in memory order): each nibble spread to a byte
 * of its own, then made a digit, 'a' to 'f' past 9, all at once (a dump
 * of a Python program or of cc1 writes half a million frames).
 */
static inline uint64_t hex8(uint32_t x)
{
	uint64_t v = x, ten;

	v = (v | v << 16) & 0x0000ffff0000ffffULL;
	v = (v | v << 8) & 0x00ff00ff00ff00ffULL;
	v = (v | v << 4) & 0x0f0f0f0f0f0f0f0fULL; /* nibble i in byte i */
	ten = ((v + 0x0606060606060606ULL) >> 4) & 0x0101010101010101ULL;
	v += 0x3030303030303030ULL + ten * ('a' - '0' - 10);
	/* (Byte 7, the most significant digit, first in memory.) */
	return little_end(__builtin_bswap64(v));
}

/*
 * Bucket K's line: "ID mmap|malloc 0xFRAME...", innermost frame first.
 * With SHARE, the frames it ends with in common with the line before
 * (the buckets of one dump, in the order of their ids, often come from
 * one call path) are said as " =N", the last N frames of the line
 * before: a dump of cc1's 5,000 buckets of 18 frames was 650 KB of them,
 * three quarters repeats, and most of what it wrote.  (Not in the
 * original's .buckets files: DMPROF_SEPARATE_FILES.)
 */
static void bucket_line(struct rec_buf *b, const struct rec_bucket *k,
			bool share)
{
	struct rec_buf t;
	uint64_t *now, *before;
	size_t nb = frames_before.len / sizeof(uint64_t), same = 0;
	unsigned own;
	char *p;

	/* Its frames as written (a JIT's code by its name now:
	 * rec_perfmap.c), each once, in order. */
	rec_buf_free(&frames_now);
	if (!rec_buf_reserve(&frames_now, (size_t)k->depth * sizeof(*now)) ||
	    !rec_buf_room_as_filled(b, 27 + (size_t)k->depth * 19 + 24)) {
		frames_before.len = 0; /* (no line the next one could share) */
		return;
	}
	rec_buf_u64(b, k->id);
	rec_buf_str(b, k->kind == REC_MMAP ? " mmap" : " malloc");
	now = (uint64_t *)frames_now.p;
	for (unsigned i = 0; i < k->depth; i++)
		now[i] = rec_perfmap_frame(k->frames[i], k->jit_at);
	frames_now.len = (size_t)k->depth * sizeof(*now);
	before = (uint64_t *)frames_before.p;
	if (share)
		while (same < k->depth && same < nb &&
		       now[k->depth - 1 - same] == before[nb - 1 - same])
			same++;
	own = k->depth - (unsigned)same;
	/* The frames written in place: " 0x" and 8 to 16 digits each (a
	 * dump of a Python program writes tens of thousands of stacks). */
	p = b->p + b->len;
	for (unsigned i = 0; i < own; i++) {
		uint64_t v = now[i];
		unsigned hi = v >> 32 ? (67 - __builtin_clzll(v)) / 4 - 8 : 0;
		uint64_t lo = hex8((uint32_t)v);

		memcpy(p, " 0x", 3);
		/* (Eight bytes each, the high digits' shifted to the first
		 * HI: within the 19 reserved, the rest written over.) */
		if (hi) {
			uint64_t h = hex8((uint32_t)(v >> 32));

			h = little_end(h) >> 8 * (8 - hi);
			h = little_end(h);
			memcpy(p + 3, &h, 8);
		}
		memcpy(p + 3 + hi, &lo, 8);
		p += 3 + hi + 8;
	}
	if (same) {
		memcpy(p, " =", 2);
		p = rec_put_dec(p + 2, (int64_t)same, 0);
	}
	*p++ = '\n';
	b->len = (size_t)(p - b->p);
	/* (This line's frames are the next one's line before.) */
	t = frames_before;
	frames_before = frames_now;
	frames_now = t;
}

/* Resident bytes from /proc/self/statm (exact, as smaps_rollup's Rss); -1:
 * unknown. */
static int64_t statm_rss(void)
{
	char buf[256];
	int fd = rec_raw_open("/proc/thread-self/statm", O_RDONLY | O_CLOEXEC);
	long n = fd >= 0 ? rec_raw_read(fd, buf, sizeof(buf) - 1) : -1;
	int64_t v = 0;
	const char *p;

	if (fd >= 0)
		rec_raw_close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	p = strchr(buf, ' '); /* (size, then resident) */
	if (!p)
		return -1;
	for (p++; *p >= '0' && *p <= '9'; p++)
		v = v * 10 + (*p - '0');
	return v * (int64_t)page;
}

/* Rss, Pss and Swap (bytes) from /proc/self/smaps_rollup; -1: unknown. */
static void rollup(int64_t out[3])
{
	static const char *const keys[3] = { "Rss:", "Pss:", "Swap:" };
	const char *p, *end;

	out[0] = out[1] = out[2] = -1;
	if (!read_all("/proc/thread-self/smaps_rollup", &tmp_buf))
		return;
	p = tmp_buf.p;
	end = p + tmp_buf.len;
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));

		if (!eol)
			eol = end;
		for (int i = 0; i < 3; i++) {
			size_t kl = strlen(keys[i]);
			const char *q = p + kl;
			int64_t v = 0;

			if ((size_t)(eol - p) <= kl || memcmp(p, keys[i], kl))
				continue;
			while (q < eol && *q == ' ')
				q++;
			for (; q < eol && *q >= '0' && *q <= '9'; q++)
				v = v * 10 + (*q - '0');
			out[i] = v * 1024;
		}
		p = eol + 1;
	}
}

/* Is a swap device on?  (Unknown: as if one were.) */
static bool swap_on(void)
{
	struct sysinfo si;

	return sysinfo(&si) != 0 || si.totalswap != 0;
}

/*
 * The kernel's Rss, Pss and Swap (-1: unknown, or not asked for).  Pss
 * is smaps_rollup's walk of every page the process maps, in the kernel,
 * each shared page's share worked out, while the threads stand still:
 * a process of 2 GB resident was held 31 ms a dump with it, 12 without,
 * and a compile under dmprof record took 5% longer (44.2 -> 46.6 ms,
 * medians of 40), for a figure no policy dmprof ships reads; so it is
 * read where asked for (dmprof record --pss).  Rss is then statm's count
 * (the same: see capture), and Swap 0 where no swap device is on; with
 * one, smaps_rollup's, which alone counts shared memory swapped out.
 */
static void kernel_view(int64_t out[3])
{
	if (rec_cfg.pss || swap_on()) {
		rollup(out);
		if (!rec_cfg.pss)
			out[1] = -1;
		return;
	}
	out[0] = statm_rss();
	out[1] = -1;
	out[2] = out[0] >= 0 ? 0 : -1;
}

/* How a dump went: how long, whether the process stood still. */
struct how {
	double seconds, stopped;  /* the dump; the threads standing still */
	unsigned held;            /* how many threads stood still */
	const char *not_stopped;  /* why they were not, or NULL */
	int walks;                /* reads of the process, 1 when all agreed */
	bool stable;              /* Rss the same before, during and after */
};

/* META's "Runtime: LANGUAGE VERSION [PATH]". */
static void runtime_line(const char *language, const char *version,
			 const char *binary)
{
	rec_buf_str(&meta, "Runtime: ");
	rec_buf_str(&meta, language);
	rec_buf_add(&meta, " ", 1);
	rec_buf_str(&meta, version);
	if (binary) {
		rec_buf_add(&meta, " ", 1);
		rec_buf_str(&meta, binary);
	}
	rec_buf_add(&meta, "\n", 1);
}

static void build_meta(const char *reason, const struct timespec *now,
		       const int64_t kernel[3], const struct how *how)
{
	char host[256];
	static const char *const keys[3] = { "Rss: ", "Pss: ", "Swap: " };

	rec_buf_free(&meta);
	rec_buf_str(&meta, "heap profile: DUMP_DEEP_6\nMETA:\nTime: ");
	rec_buf_i64(&meta, now->tv_sec);
	{
		long ms = now->tv_nsec / 1000000;
		char d[4] = { '.', (char)('0' + ms / 100),
			      (char)('0' + ms / 10 % 10), (char)('0' + ms % 10) };

		rec_buf_add(&meta, d, 4);
	}
	rec_buf_str(&meta, "\nReason: ");
	rec_buf_str(&meta, reason);
	rec_buf_str(&meta, "\nCommandLine:");
	if (read_all("/proc/thread-self/cmdline", &tmp_buf)) {
		size_t n = tmp_buf.len;

		while (n && !tmp_buf.p[n - 1])
			n--;
		rec_buf_add(&meta, " ", 1);
		for (size_t i = 0; i < n; i++) {
			/*
			 * One line, and the same bytes back (escape.h, which
			 * the reader unescapes): the NULs between arguments
			 * are spaces; a backslash, control bytes and a space
			 * at either end are escaped.
			 */
			static const char hex[] = "0123456789abcdef";
			unsigned char c = tmp_buf.p[i] ? tmp_buf.p[i] : ' ';
			char e[4] = { '\\', 'x', hex[c >> 4], hex[c & 15] };
			size_t len = 2;

			switch (c) {
			case '\\':
				e[1] = '\\';
				break;
			case '\n':
				e[1] = 'n';
				break;
			case '\t':
				e[1] = 't';
				break;
			case '\r':
				e[1] = 'r';
				break;
			default:
				len = c < ' ' || c == 127 ||
				      (c == ' ' && (!i || i + 1 == n)) ? 4 : 1;
				if (len == 1)
					e[0] = (char)c;
			}
			rec_buf_add(&meta, e, len);
		}
	}
	rec_buf_str(&meta, "\nRunID: ");
	if (gethostname(host, sizeof(host)) < 0)
		strcpy(host, "localhost");
	host[sizeof(host) - 1] = 0;
	host[strcspn(host, ".")] = 0;
	rec_buf_str(&meta, host);
	rec_buf_str(&meta, "-linux-");
	rec_buf_i64(&meta, my_pid);
	rec_buf_add(&meta, "-", 1);
	rec_buf_i64(&meta, run_start);
	rec_buf_str(&meta, "\nPageSize: ");
	rec_buf_u64(&meta, page);
	rec_buf_add(&meta, "\n", 1);
	if (rec_cfg.pageframe) {
		rec_buf_str(&meta, "PageFrame: 24,Base64");
		if (have_pagecount)
			rec_buf_str(&meta, ",PageCount");
		rec_buf_add(&meta, "\n", 1);
	}
	/* The kernel's view, read right after the pagemap walk. */
	for (int i = 0; i < 3; i++) {
		if (kernel[i] < 0)
			continue;
		rec_buf_str(&meta, keys[i]);
		rec_buf_i64(&meta, kernel[i]);
		rec_buf_add(&meta, "\n", 1);
	}
	/* How the instant was taken, and what it cost. */
	rec_buf_str(&meta, "DumpSeconds: ");
	rec_buf_seconds(&meta, how->seconds);
	if (how->not_stopped) {
		rec_buf_str(&meta, "\nStopped: no (");
		rec_buf_str(&meta, how->not_stopped);
		rec_buf_str(&meta, ")");
	} else {
		rec_buf_str(&meta, "\nStopped: yes\nStoppedSeconds: ");
		rec_buf_seconds(&meta, how->stopped);
		rec_buf_str(&meta, "\nStoppedThreads: ");
		rec_buf_i64(&meta, how->held);
	}
	rec_buf_str(&meta, "\nWalks: ");
	rec_buf_i64(&meta, how->walks);
	rec_buf_str(&meta, how->stable ? "\nStable: yes\n" : "\nStable: no\n");
	/* Unwind rules worked out, and those an earlier process of the
	 * same executable left (rec_unwind_saved.c). */
	rec_buf_str(&meta, "UnwindRules: ");
	rec_buf_i64(&meta, atomic_load(&rec_unwind_computed));
	rec_buf_str(&meta, " computed, ");
	rec_buf_i64(&meta, rec_unwind_saved_loaded);
	rec_buf_str(&meta, " loaded\n");
	/* The interpreter (or node) whose frames the stacks hold, and where
	 * its code is (the analyzer takes its native frames for the
	 * runtime's). */
	if (rec_python_version())
		runtime_line("python", rec_python_version(),
			     rec_python_binary());
	else if (rec_node_version())
		runtime_line("node", rec_node_version(), rec_node_binary());
}

/* Can this process read PFNs?  (Unprivileged ones read as 0.) */
static bool pfns_visible(void)
{
	static int known; /* 0: not yet, 1: yes, 2: no */
	uint64_t e = 0;
	volatile char probe = 1;

	if (known)
		return known == 1;
	(void)probe;
	if (pm_fd >= 0 &&
	    rec_raw_pread(pm_fd, &e, 8, (long)((uintptr_t)&probe / page * 8)) ==
		    8 &&
	    (e & PM_PRESENT) && (e & PM_PFN))
		known = 1;
	else
		known = 2;
	return known == 1;
}

/* One dump in the making: what was measured, for the steps after. */
struct dump {
	struct timespec now;
	struct stat_row g[NG];
	struct rec_large *large;
	size_t nlarge;
	const struct vma *vmas;
	size_t nv;
	const struct rec_map *regs;
	size_t nr;
	int64_t kernel[3];      /* Rss, Pss, Swap; -1: unknown */
	uint32_t nb;            /* buckets [0, NB) are counted */
	int64_t *mv, *mc;       /* per mmap bucket: virtual, committed */
	int64_t *adj;           /* per malloc bucket: committed - size */
	struct rec_totals *tot; /* per bucket */
	int64_t headers;        /* bytes of the recorder's block headers */
	int64_t py_objects;     /* bytes of pymalloc's objects, headers too */
};

/* The headers of pymalloc's objects, 16 bytes each (their hooks do not
 * count them, to spare a store), and the objects with them.  (Once the
 * threads go on, of the counts taken while they stood still: a pass
 * over every bucket, 0.3 ms of a stop with 18,000.) */
static void python_objects(struct dump *d)
{
	int64_t headers = 0, live = 0;

	for (uint32_t id = 0; id < d->nb; id++) {
		const struct rec_bucket *k = rec_bucket_by_id(id);

		if (k && k->kind == REC_PYOBJ) {
			headers += 16 * (d->tot[id].allocs - d->tot[id].frees);
			live += d->tot[id].live;
		}
	}
	d->headers += headers;
	d->py_objects = live + headers;
}

/*
 * What there is: mappings, records, large blocks, counts.  False (and
 * said why) when there is nothing to dump.
 */
static bool take_stock(struct dump *d)
{
	bool resident;
	const char *file = maps_source(&resident);

	if (!read_all(file, &maps_text) || !maps_text.len) {
		rec_say("cannot read ", file, "; no dump", NULL);
		return false;
	}
	d->nv = parse_maps(&maps_text, &vmas_buf, resident);
	d->vmas = (const struct vma *)vmas_buf.p;
	remember(d->vmas, d->nv);
	d->nlarge = rec_large_snapshot(&d->large);
	d->nr = build_regions(d->vmas, d->nv, d->large, d->nlarge,
			      &regions_buf, &tmp_buf);
	d->regs = (const struct rec_map *)regions_buf.p;
	/* After the records: every bucket they name is below NB. */
	d->nb = rec_bucket_count();
	rec_buf_free(&values_buf);
	if (!rec_buf_zero(&values_buf,
			  (size_t)d->nb * (3 * sizeof(int64_t) +
					   sizeof(*d->tot)))) {
		rec_say("out of memory; no dump", NULL);
		return false;
	}
	d->mv = (int64_t *)values_buf.p;
	d->mc = d->mv + d->nb;
	d->adj = d->mc + d->nb;
	d->tot = (struct rec_totals *)(d->adj + d->nb);
	d->headers = rec_count_sum(d->nb, d->tot);
	return true;
}

/* The files the walk reads: pagemap, and kpagecount for share counts. */
static void open_page_files(void)
{
	win_n = 0;
	win_end = 0;
	scan_forget();
	pm_fd = rec_raw_open("/proc/thread-self/pagemap", O_RDONLY | O_CLOEXEC);
	if (pm_fd < 0)
		rec_say("cannot read /proc/self/pagemap: ", why(errno),
			"; committed bytes will be 0", NULL);
	if (pm_fd >= 0 && !zero_pfn)
		learn_zero_pfn();
	if (rec_cfg.pageframe && !pfns_visible()) {
		if (!said_pfn)
			rec_say("page frame numbers need CAP_SYS_ADMIN; "
				"dumps will not list page frames", NULL);
		said_pfn = true;
		rec_cfg.pageframe = 0;
	}
	kpc_fd = rec_cfg.pageframe == 2
			 ? rec_raw_open("/proc/kpagecount", O_RDONLY | O_CLOEXEC)
			 : -1;
	have_pagecount = kpc_fd >= 0;
}

static void close_page_files(void)
{
	if (pm_fd >= 0)
		rec_raw_close(pm_fd);
	if (kpc_fd >= 0)
		rec_raw_close(kpc_fd);
	pm_fd = kpc_fd = -1;
}

/*
 * Committed bytes: the walk of every region (MMAP_LIST), the kernel's
 * count at once after it, then the large blocks, whose resident pages
 * make their buckets' committed bytes.
 */
static void measure(struct dump *d)
{
	open_page_files();
	memset(d->g, 0, sizeof(d->g));
	build_mmap_list(d->vmas, d->nv, d->regs, d->nr, d->g, d->mv, d->mc,
			d->nb);
	kernel_view(d->kernel);
	win_n = 0; /* (read again, after the kernel's count, as ever) */
	scan_forget();
	for (size_t i = 0; i < d->nlarge; i++) {
		const struct rec_large *l = &d->large[i];
		uint64_t c = committed(l->p, l->p + l->size, NULL);

		if (l->bucket < d->nb)
			d->adj[l->bucket] += (int64_t)c - (int64_t)l->size;
	}
	close_page_files();
}

/* STACKTRACES, and the buckets this process has not written yet. */
/*
 * What pymalloc's arenas hold beyond the objects it serves (and their
 * headers): the line of dmprof_python_object_free, so that the objects,
 * this and the other arenas' free bytes add up to the arenas.  (Objects
 * made before the recorder wrapped pymalloc are in it too.)
 */
static void python_free(struct dump *d, int64_t *virt, int64_t *comm)
{
	uint32_t a = rec_python_arena_bucket->id;
	int64_t objects = d->py_objects;

	*virt = a < d->nb && d->mv[a] > objects ? d->mv[a] - objects : 0;
	*comm = a < d->nb && d->mc[a] > objects ? d->mc[a] - objects : 0;
}

static void build_stacktraces(struct dump *d)
{
	size_t unwritten = 0;

	rec_buf_free(&stacks);
	rec_buf_free(&buckets_text);
	rec_buf_free(&new_ids);
	rec_buf_free(&frames_before); /* (a section's first line: in full) */
	python_objects(d);
	/* (Room for the lines first, at their longest: their pages are
	 * brought in as they are written, see rec_buf_room_as_filled.) */
	for (uint32_t id = 0; id < d->nb; id++) {
		const struct rec_bucket *k = rec_bucket_by_id(id);

		if (k && !atomic_load_explicit(&k->written,
					       memory_order_relaxed))
			unwritten += 64 + (size_t)k->depth * 19;
	}
	rec_buf_reserve_only(&stacks, (size_t)d->nb * 56);
	rec_buf_reserve_only(&buckets_text, unwritten);
	for (uint32_t id = 0; id < d->nb; id++) {
		struct rec_bucket *k = rec_bucket_by_id(id);
		int64_t virt, comm;

		if (!k)
			continue;
		if (k->kind == REC_MMAP) {
			virt = d->mv[id];
			comm = d->mc[id];
		} else if (k == rec_python_free_bucket) {
			python_free(d, &virt, &comm);
			add_stat(d->g, G_PROFILED_MALLOC, virt, comm);
		} else {
			virt = k == rec_header_bucket ? d->headers
						      : d->tot[id].live;
			comm = virt + d->adj[id];
			if (comm < 0)
				comm = 0;
			if (comm > virt)
				comm = virt;
			add_stat(d->g, G_PROFILED_MALLOC, virt, comm);
		}
		/*
		 * A malloc stack that freed all it allocated stays, with its
		 * counts: what it allocated in between is the churn that
		 * diff shows.
		 */
		if (virt <= 0 && (k->kind == REC_MMAP || !d->tot[id].allocs))
			continue;
		stack_line(&stacks, virt, comm, d->tot[id].allocs,
			   d->tot[id].frees, id);
		if (!atomic_load(&k->written)) {
			bucket_line(&buckets_text, k, !rec_cfg.separate_files);
			rec_buf_add(&new_ids, &id, sizeof(id));
		}
	}
}

/* GLOBAL_STATS: absent is what the regions miss (0 here). */
static void build_global_stats(struct dump *d)
{
	struct stat_row *g = d->g;

	for (int c = 0; c < 2; c++) {
		int64_t sum = 0, *f;

		for (int r = G_FILE_EXEC; r <= G_OTHER; r++)
			sum += c ? g[r].comm : g[r].virt;
		f = c ? &g[G_ABSENT].comm : &g[G_ABSENT].virt;
		*f = (c ? g[G_PROFILED_MMAP].comm + g[G_NP_TOTAL].comm
			: g[G_PROFILED_MMAP].virt + g[G_NP_TOTAL].virt) -
		     sum;
		f = c ? &g[G_TOTAL].comm : &g[G_TOTAL].virt;
		*f = sum + (c ? g[G_ABSENT].comm : g[G_ABSENT].virt);
	}
	rec_buf_free(&gstats);
	rec_buf_str(&gstats, "GLOBAL_STATS:\n# total (");
	rec_buf_i64(&gstats, g[G_TOTAL].comm);
	rec_buf_str(&gstats, g[G_TOTAL].comm == g[G_PROFILED_MMAP].comm +
							 g[G_NP_TOTAL].comm
				     ? ") == profiled-mmap ("
				     : ") != profiled-mmap (");
	rec_buf_i64(&gstats, g[G_PROFILED_MMAP].comm);
	rec_buf_str(&gstats, ") + nonprofiled-* (");
	rec_buf_i64(&gstats, g[G_NP_TOTAL].comm);
	rec_buf_str(&gstats, ")\n");
	rec_buf_pad(&gstats, 26, 0, ' ');
	rec_buf_str(&gstats, "     virtual    committed\n");
	for (int r = 0; r < NG; r++)
		stat_line(&gstats, gnames[r], g[r].virt, g[r].comm);
	rec_buf_free(&head);
	rec_buf_str(&head, "STACKTRACES:\n   virtual  committed\n");
}

/*
 * Written: what the next dumps need not define or write again.  (NAMED
 * and JIT_NAMED: the names rec_python_names and rec_perfmap_names gave.)
 */
static void buckets_written(unsigned named, unsigned jit_named)
{
	rec_python_names_written(named);
	rec_perfmap_names_written(jit_named);
	for (size_t i = 0; i < new_ids.len / sizeof(uint32_t); i++) {
		uint32_t id;

		memcpy(&id, new_ids.p + i * sizeof(id), sizeof(id));
		atomic_store(&rec_bucket_by_id(id)->written, true);
	}
}

/* Do the maps differ from those last written (to FILE, if it is one)? */
static bool maps_changed(const char *file)
{
	return !maps_file.p || maps_file.len != maps_written.len ||
	       memcmp(maps_file.p, maps_written.p, maps_file.len) ||
	       (file && access(file, F_OK) != 0);
}

static void maps_now_written(void)
{
	rec_buf_free(&maps_written);
	rec_buf_add(&maps_written, maps_file.p, maps_file.len);
}

/*
 * The original's layout (DMPROF_SEPARATE_FILES): the new buckets in
 * PREFIX.PID.NNNN.buckets, the maps in PREFIX.PID.maps when they
 * changed, then the dump, last (a dump is complete when it is there).
 */
static void write_separate(unsigned named, unsigned jit_named)
{
	struct rec_buf *heap_parts[5] = { &meta, &mmap_list, &gstats, &head,
					  &stacks };
	struct rec_buf *one[1], *two[2];
	char name[PAGE_MAX_NAME];

	file_name(name, dump_count, ".buckets");
	two[0] = &names_text;
	two[1] = &buckets_text;
	/*
	 * None when there is nothing new to define (half of a short
	 * process's dumps: a file made is an inode allocated), but for one
	 * in ten: the original loads .buckets files until eleven in a row
	 * are missing.
	 */
	if (names_text.len || buckets_text.len || no_buckets == 9) {
		if (!write_file(name, two, 2)) {
			dump_count--; /* (its number is for the next one) */
			return;
		}
		no_buckets = 0;
	} else {
		no_buckets++;
	}
	buckets_written(named, jit_named);
	file_name(name, 0, ".maps");
	one[0] = &maps_file;
	if (maps_changed(name)) {
		if (!write_file(name, one, 1))
			return;
		maps_now_written();
	}
	file_name(name, dump_count, ".heap");
	write_file(name, heap_parts, 5);
}

/*
 * One file a dump: after META, the buckets new since the last dump (a
 * BUCKETS section: the lines a .buckets file would hold), and the maps
 * when they changed since the last dump (MAPS: what PREFIX.PID.maps
 * would hold).  A short process's two dumps are two files, not five: on
 * ext4 without a journal each file made seeks its inode past those
 * deleted in the last minute, the most of a short process's dumps there.
 */
static void write_one_file(unsigned named, unsigned jit_named)
{
	static char bh[] = "BUCKETS:\n", mh[] = "MAPS:\n";
	struct rec_buf buckets_head = { bh, sizeof(bh) - 1, 0 },
		       maps_head = { mh, sizeof(mh) - 1, 0 };
	struct rec_buf *parts[10]; /* (META, 3 + 2 sections' parts, 4) */
	char name[PAGE_MAX_NAME];
	bool new_buckets = names_text.len || buckets_text.len,
	     new_maps = maps_changed(NULL);
	int n = 0;

	parts[n++] = &meta;
	if (new_buckets) {
		parts[n++] = &buckets_head;
		parts[n++] = &names_text;
		parts[n++] = &buckets_text;
	}
	if (new_maps) {
		parts[n++] = &maps_head;
		parts[n++] = &maps_file;
	}
	parts[n++] = &mmap_list;
	parts[n++] = &gstats;
	parts[n++] = &head;
	parts[n++] = &stacks;
	file_name(name, dump_count, ".heap");
	if (!write_file(name, parts, n)) {
		dump_count--;
		return;
	}
	buckets_written(named, jit_named);
	if (new_maps)
		maps_now_written();
}

static void write_files(void)
{
	unsigned named, jit_named;

	dump_count++;
	/* Python's and a JIT's frames' names first: the buckets use them. */
	rec_buf_free(&names_text);
	named = rec_python_names(&names_text);
	jit_named = rec_perfmap_names(&names_text);
	if (rec_cfg.separate_files)
		write_separate(named, jit_named);
	else
		write_one_file(named, jit_named);
}

static double monotonic(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * Reading the process, in the tracer while every other thread stands
 * still (or, where they cannot be stopped, with them running).  The
 * kernel's Rss is read before and after: when the reading itself made
 * pages resident (the recorder's buffers growing, code run for the first
 * time), it is read again, now that they are.
 */
struct capture {
	struct dump *d;
	bool ok, stable;
	int walks;
};

static void capture(void *p)
{
	struct capture *c = p;

	for (c->walks = 1;; c->walks++) {
		int64_t before = statm_rss(), after;

		c->ok = take_stock(c->d);
		if (!c->ok)
			return;
		measure(c->d);
		after = statm_rss();
		c->stable = before >= 0 && before == after &&
			    after == c->d->kernel[0];
		if (c->stable || c->walks == 3)
			return;
	}
}

/*
 * Room for what the walk writes, made before it, its pages in memory: a
 * buffer that grows during the walk maps or faults pages after smaps was
 * read and before Rss is read again, and the walk is done again (twice
 * or three times in most processes' first dump, each a read of smaps,
 * pagemap and smaps_rollup, the cost of a short process's dumps).  The
 * sizes come from the mappings now (/proc/self/maps, which looks at no
 * page) and the tables, with a quarter more.
 */
static void make_room(void)
{
	size_t nv = 0, nrec, nb, maps_len = 0, per_vma = 2048;
	size_t had = vmas_buf.len / sizeof(struct vma);
	uintptr_t *bases;
	bool resident;

	/* (What the walk reads: maps itself, or smaps' 20 lines a VMA.) */
	maps_source(&resident);
	/*
	 * After a dump whose walk read maps: its mappings and their text, as
	 * many as then with the quarter and more to spare (a read of maps
	 * saved, 50-140 us of a short process's dump; more mappings than
	 * that since, and the walk, its room outgrown, is done again).
	 */
	if (resident && had && maps_text.len) {
		nv = had;
		maps_len = maps_text.len;
	} else if (read_all("/proc/thread-self/maps", &tmp_buf)) {
		for (size_t i = 0; i < tmp_buf.len; i++)
			nv += tmp_buf.p[i] == '\n';
		maps_len = tmp_buf.len;
	}
	maps_len += maps_len / 4 + 4096;
	nv += nv / 4 + 16;
	if (resident)
		per_vma = maps_len / nv + 1;
	else if (vmas_buf.len >= sizeof(struct vma) && maps_text.len)
		per_vma = maps_text.len / (vmas_buf.len / sizeof(struct vma)) +
			  256;
	nrec = rec_table_room() + rec_self_count() +
	       rec_arena_snapshot(&bases) + rec_main_ext_snapshot(&bases) + 64;
	nrec += nrec / 4 + nv;
	nb = rec_bucket_count();
	nb += nb / 4 + 1024;
	rec_buf_free(&maps_text);
	rec_buf_room(&maps_text, nv * per_vma + 32768);
	rec_buf_free(&vmas_buf);
	rec_buf_room(&vmas_buf, nv * sizeof(struct vma));
	rec_buf_free(&regions_buf);
	rec_buf_room(&regions_buf, nrec * sizeof(struct rec_map));
	rec_buf_free(&tmp_buf);
	rec_buf_room(&tmp_buf, nrec * sizeof(struct rec_map) + 40000);
	rec_buf_free(&values_buf);
	rec_buf_room(&values_buf,
		     nb * (3 * sizeof(int64_t) + sizeof(struct rec_totals)));
	rec_buf_free(&mmap_list);
	rec_buf_room(&mmap_list, 64 + (nrec + 2 * nv + 1) * 100 + maps_len);
	rec_buf_room(&seen_text, maps_len);
	rec_buf_room(&seen_buf, nv * sizeof(struct seen));
	memset(pm_buf, 0, PM_CHUNK * 8);
	memset(reg, 0, sizeof(reg));
	memset(scan_reg, 0, sizeof(scan_reg));
}

static void do_dump(const char *reason)
{
	struct dump d;
	struct capture c;
	struct how how;
	double t0;

	if (dump_count >= 9999) {
		if (!said_limit) {
			said_limit = true;
			rec_say("9999 dumps written; no more for this process",
				NULL);
		}
		return;
	}
	memset(&d, 0, sizeof(d));
	memset(&c, 0, sizeof(c));
	memset(&how, 0, sizeof(how));
	clock_gettime(CLOCK_REALTIME, &d.now);
	if (!dump_count)
		run_start = d.now.tv_sec;
	page = (size_t)sysconf(_SC_PAGESIZE);
	if (!pm_buf)
		pm_buf = rec_alloc(PM_CHUNK * 8);
	t0 = monotonic();
	/* (While the program runs on: the room takes its measure of tables
	 * that may grow by then, with a quarter to spare.) */
	if (pm_buf)
		make_room();
	/*
	 * The program's allocations wait from here to the end of the walk,
	 * so that the dump is of one moment (the original producer dumped
	 * under its allocator's lock).
	 */
	atomic_store(&rec_dumping, true);
	c.d = &d;
	if (rec_cfg.no_stop) {
		how.not_stopped = "DMPROF_NO_STOP is set";
		capture(&c);
	} else if (!rec_stop_world(capture, &c, &how.not_stopped,
				   &how.stopped, &how.held)) {
		if (!said_not_stopped)
			rec_say("cannot stop the program's threads for a dump: ",
				how.not_stopped,
				"; its dumps are read while they run", NULL);
		said_not_stopped = true;
		capture(&c);
	}
	if (!c.ok)
		return;
	atomic_store(&rec_dumping, false);
	how.walks = c.walks;
	how.stable = c.stable;

	if (!dump_count)
		choose_prefix();
	/* A JIT's names of its code as they are now, for the new buckets,
	 * and its map's copy (rec_perfmap.c). */
	{
		char name[PAGE_MAX_NAME];

		file_name(name, 0, ".perf.map");
		if (!rec_perfmap_update(name) && !said_write_error) {
			said_write_error = true;
			rec_say("cannot write ", name, ": ", why(errno), NULL);
		}
	}
	build_stacktraces(&d);
	build_global_stats(&d);
	how.seconds = monotonic() - t0;
	note_seconds(how.seconds);
	build_meta(reason, &d.now, d.kernel, &how);
	build_maps_file(d.vmas, d.nv);
	/* Out of memory somewhere: a short buffer is no dump. */
	if (!meta.p || !mmap_list.p || !gstats.p || !head.p) {
		rec_say("out of memory; no dump", NULL);
		return;
	}
	write_files();
}

static void dump_locked(const char *reason);

void rec_dump(const char *reason)
{
	rec_lock_take(&dump_lock);
	dump_locked(reason);
}

bool rec_dump_within(const char *reason, unsigned ms)
{
	for (unsigned i = 0; !rec_lock_try(&dump_lock); i++) {
		struct timespec t = { 0, 1000 * 1000 };

		if (i >= ms)
			return false;
		syscall(SYS_nanosleep, &t, NULL);
	}
	dump_locked(reason);
	return true;
}

/* (The dump lock taken: given back.) */
static void dump_locked(const char *reason)
{
	int saved = errno, cancel;

	/*
	 * Not cancelled midway (the tracer shares this thread's state, and
	 * would act on it); /proc/thread-self, not /proc/self, which is
	 * empty once a main thread called pthread_exit.
	 */
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
	rec_busy++;
	if (!my_pid)
		my_pid = getpid();
	do_dump(reason);
	atomic_store(&rec_dumping, false);
	rec_busy--;
	rec_lock_give(&dump_lock);
	pthread_setcancelstate(cancel, NULL);
	errno = saved;
}

static void note_seconds(double s)
{
	uint64_t bits;

	memcpy(&bits, &s, sizeof(bits));
	atomic_store_explicit(&last_seconds, bits, memory_order_relaxed);
}

double rec_last_dump_seconds(void)
{
	uint64_t bits = atomic_load_explicit(&last_seconds,
					     memory_order_relaxed);
	double s;

	memcpy(&s, &bits, sizeof(s));
	return s;
}

void rec_dump_lock(void)
{
	rec_lock_take(&dump_lock);
}

void rec_dump_unlock(void)
{
	rec_lock_give(&dump_lock);
}

void rec_dump_after_fork(void)
{
	/*
	 * A new process: its own pid in file names, dumps from 0001, and
	 * every bucket again in its first .buckets file (it inherited the
	 * parent's live blocks and their buckets).
	 */
	uint32_t nb = rec_bucket_count();

	my_pid = getpid();
	dump_count = 0;
	no_buckets = 0;
	rec_buf_free(&maps_written); /* (its .maps is not written yet) */
	said_write_error = said_limit = false;
	for (uint32_t id = 0; id < nb; id++) {
		struct rec_bucket *k = rec_bucket_by_id(id);

		if (k)
			atomic_store(&k->written, false);
	}
}
