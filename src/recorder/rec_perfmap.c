/*
 * A JIT's perf map: /tmp/perf-PID.map, the "START SIZE NAME" lines V8
 * (node --perf-basic-prof), the JVM, .NET and CPython 3.12+ append as
 * they compile, for profilers to name the code they made.  At each dump
 * the recorder reads what the map gained since the last one, and
 *
 *  - appends it to PREFIX.PID.perf.map beside the dumps, so that the run
 *    keeps the map after the process, and the file in /tmp, are gone (or
 *    another process of the same PID has written it again);
 *  - names the frames of the new buckets that are in code of no object
 *    (a JIT's, which the unwinder walked along its frame pointers) as the
 *    map named them when the bucket was made: each (address, name) gets
 *    an address of its own above user space, named by a "frame" line of
 *    the .buckets file, as Python's frames are (rec_pyframes.c).
 *
 * A JIT frees code and makes other code at the same address, whose later
 * line in the map names the old code's frames too: node's optimized
 * fillBuffers, gone once it returned, is named formatWithOptions by the
 * end of a run, and by the next dump too where dumps are few.  So a
 * bucket with a JIT's frames notes how long the map was when it was
 * made (rec_perfmap_now, from the hook that makes it: the line of code
 * that runs is in the map before it runs), and its frames are named by
 * the map's lines up to there, the latest that covers each.  Frames the
 * map does not name (a JVM that writes its map at exit) keep their
 * addresses, for the analyzer to name from the copy.
 *
 * A map rewritten (another file, or shorter than what was read, or whose
 * bytes before that point are not those read) is read again from its
 * start.  A map older than this process image is an earlier process's of
 * the same PID, and is left alone.  Only this process's own map: a child
 * of fork() reads its own, and copies it to files of its own PID.
 *
 * All of it runs in the thread that dumps, under the dump lock; nothing
 * here goes through the program's allocator.
 */
#include "rec.h"
#include "perfmap_name.h"
#include "search.h"

#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* ---- the map's names, as read so far ---- */

/* A name: function and file in NAMES_TEXT, the line. */
struct jname {
	uint32_t func_off, func_len, file_off, file_len, line;
};

/* A line of the map: its range, where it ends in the map, its name (an
 * index into NAMES). */
struct jline {
	uint64_t start, end, at;
	uint32_t name;
};

static struct rec_buf names_text, names; /* struct jname */
static struct rec_buf lines;             /* struct jline, in order */
/* The lines by start, and the greatest end of those up to each. */
static struct rec_buf by_start, by_start_next, max_end, fresh_ids;
static struct rec_buf carry; /* a line not whole yet */

#define LINE(i) (((const struct jline *)lines.p)[i])

/* ---- reading the map ---- */

static uint64_t copied; /* bytes of the map read (and copied) */
static uint64_t copy_len; /* the copy's bytes */
static uint64_t map_dev, map_ino;
#define TAIL 64
static char tail[TAIL]; /* the last bytes read, to see a map rewritten */
static unsigned tail_len;
static struct timespec started; /* this process image's start */
static char map_path[64];       /* /tmp/perf-PID.map, PID this process's */

static void make_path(void)
{
	char num[16];
	pid_t pid = getpid();
	size_t n = 10, w = sizeof(num);

	memcpy(map_path, "/tmp/perf-", n);
	do
		num[--w] = (char)('0' + pid % 10);
	while ((pid /= 10) && w);
	memcpy(map_path + n, num + w, sizeof(num) - w);
	n += sizeof(num) - w;
	memcpy(map_path + n, ".map", 5);
}

void rec_perfmap_init(void)
{
	clock_gettime(CLOCK_REALTIME, &started);
	make_path();
}

/*
 * (A JIT that writes no map, node without --perf-basic-prof: the stat(2)
 * that finds none is not made again for 10 ms.  A map that comes meanwhile
 * names those buckets as at the dump, as ever without a length.)
 */
static _Atomic int64_t no_map_until; /* CLOCK_MONOTONIC_COARSE, in ns */

uint64_t rec_perfmap_now(void)
{
	struct stat st;
	struct timespec ts;
	int64_t now;
	int saved;
	long rc;

	if (!atomic_load_explicit(&rec_unwind_jit, memory_order_relaxed))
		return UINT64_MAX;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	if (now < atomic_load_explicit(&no_map_until, memory_order_relaxed))
		return UINT64_MAX;
	saved = errno;
	rc = syscall(SYS_stat, map_path, &st);
	errno = saved;
	if (rc != 0) {
		atomic_store_explicit(&no_map_until, now + 10000000,
				      memory_order_relaxed);
		return UINT64_MAX;
	}
	return (uint64_t)st.st_size;
}

/* A hex number of the map's, "0x" or not. */
static uint64_t hex(const char **pp, const char *end, bool *ok)
{
	unsigned n;
	uint64_t v;

	if (end - *pp > 2 && (*pp)[0] == '0' && ((*pp)[1] | 0x20) == 'x')
		*pp += 2;
	v = rec_hex(pp, end, &n);
	*ok = n && n <= 16;
	return v;
}

/* One line, "START SIZE NAME", ending at AT in the map, into LINES (a
 * line that is not one: nothing; the analyzer says so when it reads the
 * copy). */
static void add_line(const char *p, const char *end, uint64_t at)
{
	struct perfmap_name pn;
	struct jname jn;
	struct jline l;
	uint64_t size;
	uint32_t id = (uint32_t)(lines.len / sizeof(l));
	bool ok;

	l.name = (uint32_t)(names.len / sizeof(jn));

	l.start = hex(&p, end, &ok);
	if (!ok || p >= end || *p++ != ' ')
		return;
	size = hex(&p, end, &ok);
	if (!ok || p >= end || *p++ != ' ' || p == end || !size ||
	    size > UINT64_MAX - l.start)
		return;
	l.end = l.start + size;
	l.at = at;
	if (id == UINT32_MAX || l.name == UINT32_MAX ||
	    names_text.len + (size_t)(end - p) >= UINT32_MAX)
		return;
	perfmap_split_name(p, (size_t)(end - p), &pn);
	jn.func_off = (uint32_t)names_text.len;
	jn.func_len = (uint32_t)pn.func_len;
	rec_buf_add(&names_text, pn.func, pn.func_len);
	jn.file_off = (uint32_t)names_text.len;
	jn.file_len = (uint32_t)pn.file_len;
	rec_buf_add(&names_text, pn.file, pn.file_len);
	jn.line = pn.line;
	if (names_text.len != jn.file_off + jn.file_len ||
	    !rec_buf_reserve(&names, sizeof(jn)) ||
	    !rec_buf_reserve(&lines, sizeof(l)) ||
	    !rec_buf_reserve(&fresh_ids, sizeof(id)))
		return; /* (out of memory) */
	rec_buf_add(&names, &jn, sizeof(jn));
	rec_buf_add(&lines, &l, sizeof(l));
	rec_buf_add(&fresh_ids, &id, sizeof(id));
}

/* Bytes read from the map, up to AT in it: its whole lines to LINES,
 * the rest carried. */
static void add_bytes(const char *p, size_t n, uint64_t at)
{
	const char *q, *end;

	rec_buf_add(&carry, p, n);
	p = carry.p;
	end = carry.p + carry.len;
	while ((q = memchr(p, '\n', (size_t)(end - p))) != NULL) {
		add_line(p, q, at - (uint64_t)(end - q - 1));
		p = q + 1;
	}
	n = (size_t)(end - p);
	/* (No line is that long: not a map.) */
	if (n > 65536)
		n = 0;
	memmove(carry.p, end - n, n);
	carry.len = n;
}

/* Keep the last bytes read (P, N: the latest). */
static void keep_tail(const char *p, size_t n)
{
	if (n >= TAIL) {
		memcpy(tail, p + n - TAIL, TAIL);
		tail_len = TAIL;
		return;
	}
	if (tail_len + n > TAIL) {
		memmove(tail, tail + (tail_len + n - TAIL), TAIL - n);
		tail_len = (unsigned)(TAIL - n);
	}
	memcpy(tail + tail_len, p, n);
	tail_len += (unsigned)n;
}

/*
 * Is the map at FD, of ST, what was read so far, and more?  (A map
 * rewritten from its start, by a new process of the same PID or a
 * runtime started again, is not.)
 */
static bool continues(int fd, const struct stat *st)
{
	char now[TAIL];

	if (!copied)
		return true;
	if ((uint64_t)st->st_dev != map_dev || (uint64_t)st->st_ino != map_ino ||
	    (uint64_t)st->st_size < copied)
		return false;
	return rec_raw_pread(fd, now, tail_len, (long)(copied - tail_len)) ==
		       (long)tail_len &&
	       !memcmp(now, tail, tail_len);
}

static char buf[65536]; /* (dumps are one at a time) */

/*
 * The copy TO, opened onto OUT, holding what was read of the map at FD:
 * a copy that is not what was written (removed, say) is made again.
 */
static bool open_copy(int fd, const char *to, int *out)
{
	struct stat cst;

	*out = open(to, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (*out < 0)
		return false;
	if (fstat(*out, &cst) == 0 && (uint64_t)cst.st_size == copy_len)
		return true;
	if (ftruncate(*out, 0) != 0)
		return false;
	for (copy_len = 0; copy_len < copied;) {
		uint64_t want = copied - copy_len;
		long got = rec_raw_pread(fd, buf,
					 want < sizeof(buf) ? want : sizeof(buf),
					 (long)copy_len);

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0 ||
		    !rec_write_all(*out, buf, (size_t)got, (long)copy_len))
			return false;
		copy_len += (uint64_t)got;
	}
	return true;
}

/* What the map at FD gained, into LINES and onto the copy TO (opened
 * onto OUT).  False on a write error. */
static bool read_new(int fd, const char *to, int *out)
{
	if (!open_copy(fd, to, out))
		return false;
	for (;;) {
		long got = rec_raw_pread(fd, buf, sizeof(buf), (long)copied);

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return true;
		if (!rec_write_all(*out, buf, (size_t)got, (long)copy_len))
			return false;
		copy_len += (uint64_t)got;
		copied += (uint64_t)got;
		add_bytes(buf, (size_t)got, copied);
		keep_tail(buf, (size_t)got);
	}
}

/* ---- the lines by start ---- */

static bool before(uint32_t x, uint32_t y)
{
	return LINE(x).start < LINE(y).start ||
	       (LINE(x).start == LINE(y).start && x < y);
}

/* Heapsort V[0..N) of line ids by start: no allocation. */
static void sift(uint32_t *v, size_t i, size_t n)
{
	for (;;) {
		size_t c = 2 * i + 1;
		uint32_t t;

		if (c >= n)
			return;
		if (c + 1 < n && before(v[c], v[c + 1]))
			c++;
		if (!before(v[i], v[c]))
			return;
		t = v[i];
		v[i] = v[c];
		v[c] = t;
		i = c;
	}
}

static void sort_ids(uint32_t *v, size_t n)
{
	for (size_t i = n / 2; i-- > 0;)
		sift(v, i, n);
	for (size_t k = n; k > 1; k--) {
		uint32_t t = v[0];

		v[0] = v[k - 1];
		v[k - 1] = t;
		sift(v, 0, k - 1);
	}
}

/* The lines of this dump (FRESH_IDS) into BY_START, and MAX_END again. */
static void index_fresh(void)
{
	uint32_t *f = (uint32_t *)fresh_ids.p, *a = (uint32_t *)by_start.p;
	size_t nf = fresh_ids.len / sizeof(*f), na = by_start.len / sizeof(*a);
	size_t i = 0, j = 0;
	uint64_t top = 0;
	struct rec_buf t;

	sort_ids(f, nf);
	rec_buf_free(&by_start_next);
	if (!rec_buf_reserve(&by_start_next, (na + nf) * sizeof(*a)) ||
	    !rec_buf_room(&max_end, 0))
		return; /* (out of memory: this dump's lines are not named) */
	while (i < na || j < nf) {
		uint32_t id = j == nf || (i < na && before(a[i], f[j])) ? a[i++]
								      : f[j++];

		rec_buf_add(&by_start_next, &id, sizeof(id));
	}
	t = by_start;
	by_start = by_start_next;
	by_start_next = t;
	rec_buf_free(&max_end);
	a = (uint32_t *)by_start.p;
	for (size_t k = 0; k < na + nf; k++) {
		if (LINE(a[k]).end > top)
			top = LINE(a[k]).end;
		rec_buf_add(&max_end, &top, sizeof(top));
	}
	if (max_end.len != (na + nf) * sizeof(top))
		rec_buf_free(&by_start); /* (out of memory) */
}

/*
 * The name the map gave ADDR in its lines up to AS_OF: the latest of
 * those that cover it (a line before it that covers it too is code since
 * freed there).  The lines that start at or before ADDR, from the last
 * back while one of them may still end past it.
 */
static bool name_of(uint64_t addr, uint64_t as_of, uint32_t *name)
{
	const uint32_t *a = (const uint32_t *)by_start.p;
	const uint64_t *top = (const uint64_t *)max_end.p;
	size_t n = by_start.len / sizeof(*a), k;
	uint32_t latest = 0;
	bool found = false;

	k = PARTITION_POINT(n, i, LINE(a[i]).start <= addr);
	while (k-- > 0 && top[k] > addr) {
		const struct jline *l = &LINE(a[k]);

		if (l->end > addr && l->at <= as_of &&
		    (!found || a[k] > latest)) {
			latest = a[k];
			found = true;
		}
	}
	if (found)
		*name = LINE(latest).name;
	return found;
}

bool rec_perfmap_update(const char *to)
{
	struct stat st;
	int fd, out = -1;
	bool ok;

	fd = rec_raw_open(map_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true; /* none (or gone: the copy stays as it is) */
	if (syscall(SYS_fstat, fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    st.st_mtim.tv_sec < started.tv_sec - 1) {
		rec_raw_close(fd);
		return true;
	}
	/* Rewritten: the copy and the names start again (those of the
	 * buckets written are in their .buckets files). */
	if (!continues(fd, &st)) {
		copied = copy_len = 0;
		tail_len = 0;
		rec_buf_free(&carry);
		rec_buf_free(&lines);
		rec_buf_free(&by_start);
		rec_buf_free(&max_end);
	}
	map_dev = (uint64_t)st.st_dev;
	map_ino = (uint64_t)st.st_ino;
	rec_buf_free(&fresh_ids);
	ok = (uint64_t)st.st_size <= copied || read_new(fd, to, &out);
	if (out >= 0 && close(out) != 0)
		ok = false;
	rec_raw_close(fd);
	if (fresh_ids.len)
		index_fresh();
	return ok;
}

/* ---- the frames named ---- */

/* A frame of a JIT's code with the name the map gave it: its address
 * above user space is its index's. */
struct jframe {
	uint64_t addr;
	uint32_t name;
};

static struct rec_buf jframes;  /* struct jframe, by index */
static unsigned jframes_written; /* by this process's .buckets files */
static uint32_t *sites;         /* (address, name) -> index + 1 */
static size_t sites_mask;

static size_t site_slot(uint64_t addr, uint32_t name)
{
	uint64_t h = (addr ^ (uint64_t)name << 40) * 0x9e3779b97f4a7c15ULL;

	return (size_t)(h >> 20) & sites_mask;
}

/* The index of the frame of ADDR named NAME, new if need be; UINT32_MAX
 * without memory. */
static uint32_t site(uint64_t addr, uint32_t name)
{
	size_t n = jframes.len / sizeof(struct jframe), i;
	const struct jframe *f = (const struct jframe *)jframes.p;
	struct jframe nf = { addr, name };

	for (i = site_slot(addr, name); sites && sites[i];
	     i = (i + 1) & sites_mask)
		if (f[sites[i] - 1].addr == addr && f[sites[i] - 1].name == name)
			return sites[i] - 1;
	if (n >= UINT32_MAX - 1)
		return UINT32_MAX;
	if (!sites || (n + 1) * 2 > sites_mask + 1) {
		size_t cap = sites ? (sites_mask + 1) * 2 : 4096;
		uint32_t *t = rec_map_alloc(cap * sizeof(*t)), *old = sites;
		size_t old_cap = sites ? sites_mask + 1 : 0;

		if (!t)
			return UINT32_MAX;
		sites = t;
		sites_mask = cap - 1;
		for (size_t k = 0; k < old_cap; k++) {
			if (!old[k])
				continue;
			for (i = site_slot(f[old[k] - 1].addr,
					   f[old[k] - 1].name);
			     sites[i]; i = (i + 1) & sites_mask)
				;
			sites[i] = old[k];
		}
		rec_map_free(old, old_cap * sizeof(*old));
		for (i = site_slot(addr, name); sites[i];
		     i = (i + 1) & sites_mask)
			;
	}
	rec_buf_add(&jframes, &nf, sizeof(nf));
	if (jframes.len != (n + 1) * sizeof(nf))
		return UINT32_MAX;
	sites[i] = (uint32_t)n + 1;
	return (uint32_t)n;
}

uintptr_t rec_perfmap_frame(uintptr_t addr, uint64_t as_of)
{
	struct dl_find_object fo;
	uint32_t name = 0, id;

	/* (A return address: the call is the byte before.) */
	if (!by_start.len || addr - 1 >= ((uintptr_t)1 << 47) ||
	    _dl_find_object((void *)(addr - 1), &fo) == 0 ||
	    !name_of(addr - 1, as_of, &name))
		return addr;
	id = site(addr, name);
	return id == UINT32_MAX ? addr : REC_JIT_BASE + (uintptr_t)id * 16 + 8;
}

unsigned rec_perfmap_names(struct rec_buf *b)
{
	unsigned n = (unsigned)(jframes.len / sizeof(struct jframe));
	const struct jframe *f = (const struct jframe *)jframes.p;

	for (unsigned i = jframes_written; i < n; i++) {
		const struct jname *jn = &((const struct jname *)names.p)[f[i].name];

		rec_buf_frame(b, REC_JIT_BASE + (uint64_t)i * 16 + 8,
			      names_text.p + jn->func_off, jn->func_len,
			      names_text.p + jn->file_off, jn->file_len,
			      jn->line);
	}
	return n;
}

void rec_perfmap_names_written(unsigned n)
{
	jframes_written = n;
}

void rec_perfmap_after_fork(void)
{
	/*
	 * The child's map is another (its PID's), its copy too; the names
	 * of the parent's code stay for the stacks it inherited, which its
	 * first .buckets file writes again, names first.
	 */
	copied = copy_len = 0;
	tail_len = 0;
	carry.len = 0;
	map_dev = map_ino = 0;
	jframes_written = 0;
	make_path();
}
