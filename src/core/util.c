/*
 * Diagnostics, checked allocation and strbuf.  Everything here either works
 * or ends the process (out of memory), so callers need no error paths.
 */
#include "util.h"

#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static report_fn report_routine;
static __thread struct strbuf *captured;

void set_report_routine(report_fn fn)
{
	report_routine = fn;
}

void report_capture(struct strbuf *sb)
{
	captured = sb;
}

struct strbuf *report_captured(void)
{
	return captured;
}

/* A finished message (HEAD, then MSG), where messages go. */
static void say(const char *head, const char *msg)
{
	if (report_routine) {
		report_routine(head, msg);
		return;
	}
	fflush(stdout);
	fprintf(stderr, "%s%s\n", head, msg);
}

void report_replay(const struct strbuf *sb)
{
	/* Records of HEAD NUL MSG NUL. */
	for (size_t at = 0; at < sb->len;) {
		const char *head = sb->buf + at;
		const char *msg = head + strlen(head) + 1;

		say(head, msg);
		at = (size_t)(msg - sb->buf) + strlen(msg) + 1;
	}
}

/*
 * Say "LEAD" PREFIX MSG [: SUFFIX], MSG as FMT says: LEAD "dmprof" or
 * "dmprof CMD", PREFIX "" or "warning: ".  The one routine every
 * diagnostic goes through.
 */
static void vreport(const char *lead, const char *prefix, const char *fmt,
		    va_list ap, const char *suffix)
{
	struct strbuf sb = STRBUF_INIT, head = STRBUF_INIT;

	if (!report_routine && !captured) {
		/* (No allocation here: die() reports running out of memory.)
		 * Flush stdout first so the two streams interleave sensibly. */
		fflush(stdout);
		fputs(lead, stderr);
		fputs(": ", stderr);
		fputs(prefix, stderr);
		vfprintf(stderr, fmt, ap);
		if (suffix) {
			fputs(": ", stderr);
			fputs(suffix, stderr);
		}
		fputc('\n', stderr);
		return;
	}
	sb_vaddf(&sb, fmt, ap);
	if (suffix) {
		sb_addstr(&sb, ": ");
		sb_addstr(&sb, suffix);
	}
	sb_addf(&head, "%s: %s", lead, prefix);
	if (captured) {
		/* A record for report_replay: HEAD NUL MSG NUL. */
		sb_add(captured, head.buf, head.len);
		sb_addch(captured, '\0');
		sb_add(captured, sb.buf, sb.len);
		sb_addch(captured, '\0');
	} else {
		say(head.buf, sb.buf);
	}
	sb_release(&sb);
	sb_release(&head);
}

/* Report FMT's message with PREFIX and SUFFIX (see vreport), from a
 * function whose last named argument is FMT. */
#define REPORT(prefix, suffix)                                  \
	do {                                                    \
		va_list ap;                                     \
		va_start(ap, fmt);                              \
		vreport("dmprof", prefix, fmt, ap, suffix);     \
		va_end(ap);                                     \
	} while (0)

void die(const char *fmt, ...)
{
	captured = NULL;
	REPORT("", NULL);
	exit(1);
}

void bug_at(const char *file, int line, const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;

	captured = NULL;
	va_start(ap, fmt);
	sb_vaddf(&sb, fmt, ap);
	va_end(ap);
	fprintf(stderr, "dmprof: BUG: %s:%d: %s\n", file, line, sb.buf);
	abort();
}

void die_errno(const char *fmt, ...)
{
	const char *err = strerror(errno);

	captured = NULL;
	REPORT("", err);
	exit(1);
}

int error(const char *fmt, ...)
{
	REPORT("", NULL);
	return -1;
}

int error_errno(const char *fmt, ...)
{
	const char *err = strerror(errno);

	REPORT("", err);
	return -1;
}

void warning(const char *fmt, ...)
{
	REPORT("warning: ", NULL);
}

void note(const char *fmt, ...)
{
	REPORT("", NULL);
}

void inform(const char *cmd, const char *fmt, ...)
{
	struct strbuf lead = STRBUF_INIT;
	va_list ap;

	sb_addf(&lead, "dmprof %s", cmd);
	va_start(ap, fmt);
	vreport(lead.buf, "", fmt, ap, NULL);
	va_end(ap);
	sb_release(&lead);
}

/* "PATH:LINE[:COL]: ", "NAME: 0xADDR: " or "PATH: ": where W is. */
static void add_where(struct strbuf *sb, const struct where *w)
{
	if (w->line && w->col)
		sb_addf(sb, "%s:%lu:%lu: ", w->path, w->line, w->col);
	else if (w->line)
		sb_addf(sb, "%s:%lu: ", w->path, w->line);
	else if (w->has_addr)
		sb_addf(sb, "%s: 0x%" PRIx64 ": ", w->path, w->addr);
	else
		sb_addf(sb, "%s: ", w->path);
}

/* The text "%s" of FMT's arguments, with PREFIX. */
PRINTF(2, 3) static void report_str(const char *prefix, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport("dmprof", prefix, fmt, ap, NULL);
	va_end(ap);
}

static void vreport_at(const char *prefix, const struct where *w,
		       const char *fmt, va_list ap)
{
	struct strbuf sb = STRBUF_INIT;

	add_where(&sb, w);
	sb_vaddf(&sb, fmt, ap);
	report_str(prefix, "%s", sb.buf);
	sb_release(&sb);
}

int error_at(const struct where *w, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport_at("", w, fmt, ap);
	va_end(ap);
	return -1;
}

void warning_at(const struct where *w, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport_at("warning: ", w, fmt, ap);
	va_end(ap);
}

void fault_set(struct fault *f, const struct where *w, const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;

	fault_release(f);
	f->where = *w;
	f->where.path = w->path ? xstrdup(w->path) : NULL;
	va_start(ap, fmt);
	sb_vaddf(&sb, fmt, ap);
	va_end(ap);
	f->what = sb_detach(&sb);
}

int fault_error(const struct fault *f, const char *more)
{
	return error("%s%s", f->what, more ? more : "");
}

void fault_warning(const struct fault *f, const char *more)
{
	warning("%s%s", f->what, more ? more : "");
}

void fault_release(struct fault *f)
{
	free((char *)f->where.path);
	free(f->what);
	memset(f, 0, sizeof(*f));
}

static NORETURN void oom(size_t size)
{
	die("out of memory (allocating %zu bytes)", size);
}

void *xmalloc(size_t size)
{
	void *p = malloc(size ? size : 1);

	if (!p)
		oom(size);
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p)
		oom(st_mult(n, size));
	return p;
}

void *xrealloc(void *p, size_t size)
{
	void *q = realloc(p, size ? size : 1);

	if (!q)
		oom(size);
	return q;
}

void *xreallocarray(void *p, size_t n, size_t size)
{
	return xrealloc(p, st_mult(n, size));
}

void *xrecallocarray(void *p, size_t old, size_t n, size_t size)
{
	p = xreallocarray(p, n, size);
	memset((char *)p + old * size, 0, (n - old) * size);
	return p;
}

char *xstrdup(const char *s)
{
	return xmemdup(s, strlen(s));
}

char *xstrndup(const char *s, size_t n)
{
	const char *nul = memchr(s, '\0', n);

	return xmemdup(s, nul ? (size_t)(nul - s) : n);
}

/* Copy N bytes and add a terminating NUL. */
void *xmemdup(const void *p, size_t n)
{
	char *q = xmalloc(st_add(n, 1));

	memcpy(q, p, n);
	q[n] = '\0';
	return q;
}

void free_array(void *const *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
}

size_t pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	size_t got = 0;

	while (got < len && off + got >= off && off + got <= INT64_MAX) {
		ssize_t n = pread(fd, (char *)buf + got, len - got,
				  (off_t)(off + got));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	return got;
}

size_t st_add(size_t a, size_t b)
{
	if (a > SIZE_MAX - b)
		die("size overflow: %zu + %zu", a, b);
	return a + b;
}

size_t st_mult(size_t a, size_t b)
{
	if (b && a > SIZE_MAX / b)
		die("size overflow: %zu * %zu", a, b);
	return a * b;
}

void sb_grow(struct strbuf *sb, size_t extra)
{
	size_t need = st_add(st_add(sb->len, extra), 1);

	if (need > sb->alloc) {
		size_t n = sb->alloc < 64 ? 64 : sb->alloc;

		while (n < need)
			n = st_mult(n, 2);
		sb->buf = xrealloc(sb->buf, n);
		sb->alloc = n;
	}
}

void sb_addstr(struct strbuf *sb, const char *s)
{
	sb_add(sb, s, strlen(s));
}

void sb_vaddf(struct strbuf *sb, const char *fmt, va_list ap)
{
	va_list cp;
	int n;

	sb_grow(sb, 64);
	va_copy(cp, ap);
	n = vsnprintf(sb->buf + sb->len, sb->alloc - sb->len, fmt, cp);
	va_end(cp);
	if (n < 0)
		die("vsnprintf failed");
	if ((size_t)n >= sb->alloc - sb->len) {
		sb_grow(sb, (size_t)n);
		n = vsnprintf(sb->buf + sb->len, sb->alloc - sb->len, fmt, ap);
	}
	sb->len += (size_t)n;
}

void sb_addf(struct strbuf *sb, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	sb_vaddf(sb, fmt, ap);
	va_end(ap);
}

void sb_reset(struct strbuf *sb)
{
	sb->len = 0;
	if (sb->buf)
		sb->buf[0] = '\0';
}

void sb_release(struct strbuf *sb)
{
	free(sb->buf);
	sb->buf = NULL;
	sb->len = sb->alloc = 0;
}

const char *sb_str(const struct strbuf *sb)
{
	return sb->buf ? sb->buf : "";
}

static size_t huge_round(size_t len)
{
	if (len > SIZE_MAX - HUGE_PAGE)
		die("out of memory (%zu bytes)", len);
	return (len + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
}

/*
 * (The whole of its last huge page too: a range the advice ends inside
 * is left in small pages.  On a VM a small page's fault costs about a
 * microsecond: a cold symbolization's arrays of 2-4 MB, one per question
 * of its batch, were a thousand faults each, on the main thread.)
 */
void *xcalloc_table(size_t n, size_t size)
{
	size_t len = st_mult(n, size);
	void *p;

	/* (Written now: calloc leaves fresh memory untouched, and a table is
	 * read before it is written, so each page was mapped to the zero
	 * page first, then copied on the write: on a process of two busy
	 * threads, each such copy also interrupts the other core to flush
	 * its TLB.) */
	if (len < ((size_t)1 << 20)) {
		p = xmalloc(len);
		memset(p, 0, len);
		return p;
	}
	p = xmalloc_huge(len);
	memset(p, 0, len);
	return p;
}

void *xmalloc_huge(size_t len)
{
	size_t big = huge_round(len);
	void *p;

	if (posix_memalign(&p, HUGE_PAGE, big))
		die("out of memory (%zu bytes)", len);
	madvise(p, big, MADV_HUGEPAGE);
	return p;
}

void *xreserve_huge(void *p, size_t used, size_t n, size_t size)
{
	size_t len = st_mult(n, size);
	void *q;

	if (len < ((size_t)1 << 20))
		return xreallocarray(p, n, size);
	q = xmalloc_huge(len);
	if (used)
		memcpy(q, p, used * size);
	free(p);
	return q;
}

void *huge_map(size_t len, size_t *mapped)
{
	size_t big = huge_round(len ? len : 1);
	char *p = mmap(NULL, big + HUGE_PAGE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *at;

	if (p == MAP_FAILED)
		return NULL;
	/* The huge pages' alignment kept, the rest given back. */
	at = (char *)(((uintptr_t)p + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
	if (at > p)
		munmap(p, (size_t)(at - p));
	munmap(at + big, HUGE_PAGE - (size_t)(at - p));
	madvise(at, big, MADV_HUGEPAGE);
	*mapped = big;
	return at;
}

/*
 * A run's memory is mostly fresh (tables, arrays and frames made once and
 * kept), and faulting it in 4 KiB at a time was a quarter of a cold
 * symbolization's time and more of a warm one's (symbolize-dwarf: 12,500
 * page faults cold, 4,900 warm; 3,100 and 800 in huge pages).  So the
 * heap is grown by 64 MiB at a time (M_TOP_PAD: only what is touched is
 * resident, and no more is given back below it, until a run gives back
 * what its parse freed: give_back in run.c), and that first stretch
 * is advised huge (Debian's transparent_hugepage is "madvise": nothing is
 * huge unless asked).  What the heap grows by after it, other threads'
 * arenas and blocks malloc maps on their own stay in small pages.  (Not
 * for the recorder: it runs inside other programs.)
 */
bool malloc_setup(void)
{
	const uintptr_t huge = HUGE_PAGE;
	uintptr_t brk0 = (uintptr_t)sbrk(0), lo, hi;
	void *held[4];
	size_t n = 0;
	bool advised = false;

	if (!mallopt(M_TOP_PAD, 64 << 20))
		return false;
	/*
	 * The heap made, or grown, with the pad: a heap made before main has
	 * a top of a few hundred KiB at most, taken in blocks below the size
	 * malloc maps on their own (128 KiB).  (Not when the brk is not
	 * malloc's: an allocator of its own, ASan's, keeps its memory apart.)
	 */
	while (n < ARRAY_SIZE(held) && (uintptr_t)sbrk(0) == brk0)
		held[n++] = malloc(96 << 10);
	lo = (brk0 + huge - 1) & ~(huge - 1);
	hi = (uintptr_t)sbrk(0) & ~(huge - 1);
	if (hi > lo)
		advised = madvise((void *)lo, hi - lo, MADV_HUGEPAGE) == 0;
	while (n)
		free(held[--n]);
	return advised;
}

char *xasprintf(const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	sb_vaddf(&sb, fmt, ap);
	va_end(ap);
	return sb_detach(&sb);
}

char *sb_detach(struct strbuf *sb)
{
	char *s = sb->buf ? sb->buf : xstrdup("");

	sb->buf = NULL;
	sb->len = sb->alloc = 0;
	return s;
}

const char *quote_for_msg(const char *s, size_t len, struct strbuf *out)
{
	static const char hex[] = "0123456789abcdef";
	size_t i, max = len > 60 ? 60 : len;

	sb_reset(out);
	for (i = 0; i < max; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c >= 0x20 && c < 0x7f && c != '\\') {
			sb_addch(out, c);
		} else {
			sb_addstr(out, "\\x");
			sb_addch(out, hex[c >> 4]);
			sb_addch(out, hex[c & 15]);
		}
	}
	if (max < len)
		sb_addstr(out, "...");
	return sb_str(out);
}

bool starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && memcmp(s + n - m, suffix, m) == 0;
}

/*
 * LSD radix sort of V by its bits from FROM up, 11 bits a pass, as far as
 * the largest has bits (TMP as large): the addresses of one binary span a
 * few megabytes, two passes.  Returns V or TMP, whichever holds the
 * result.
 */
uint64_t *radix_sort_u64(uint64_t *v, uint64_t *tmp, size_t n,
			 unsigned from)
{
	uint64_t max = 0;

	for (size_t i = 0; i < n; i++)
		max = v[i] > max ? v[i] : max;
	for (unsigned shift = from; shift < 64 && max >> shift; shift += 11) {
		size_t count[2048] = { 0 }, sum = 0;
		uint64_t *t;

		for (size_t i = 0; i < n; i++)
			count[(v[i] >> shift) & 2047]++;
		for (size_t d = 0; d < 2048; d++) {
			size_t c = count[d];

			count[d] = sum;
			sum += c;
		}
		for (size_t i = 0; i < n; i++)
			tmp[count[(v[i] >> shift) & 2047]++] = v[i];
		t = v;
		v = tmp;
		tmp = t;
	}
	return v;
}

/*
 * Below this many, qsort: a radix sort's passes over 2,048 counts cost
 * more than the comparisons they save.
 */
#define SORT_KEYED_MIN 256

/* Keys K (with their indexes X) sorted by their bits, TK and TX as large:
 * whichever pair holds the result is left in *K and *X. */
static void radix_pairs(uint64_t **k, uint32_t **x, uint64_t *tk,
			uint32_t *tx, size_t n)
{
	uint64_t *v = *k, max = 0;
	uint32_t *ix = *x;

	for (size_t i = 0; i < n; i++)
		max = v[i] > max ? v[i] : max;
	for (unsigned shift = 0; shift < 64 && max >> shift; shift += 11) {
		size_t count[2048] = { 0 }, sum = 0;
		uint64_t *t;
		uint32_t *tix;
		bool one = false;

		for (size_t i = 0; i < n; i++)
			count[(v[i] >> shift) & 2047]++;
		for (size_t d = 0; d < 2048; d++) {
			size_t c = count[d];

			one |= c == n;
			count[d] = sum;
			sum += c;
		}
		if (one) /* (all alike in these bits: already in order) */
			continue;
		for (size_t i = 0; i < n; i++) {
			size_t to = count[(v[i] >> shift) & 2047]++;

			tk[to] = v[i];
			tx[to] = ix[i];
		}
		t = v;
		v = tk;
		tk = t;
		tix = ix;
		ix = tx;
		tx = tix;
	}
	*k = v;
	*x = ix;
}

/*
 * A few elements (SORT_SMALL at most) by insertion, stably, on their
 * keys, CMP asked only between equal keys (TMP: room for one element): a
 * DWARF unit's functions are a dozen, and qsort's setup cost more than
 * their sorting (1,474 units' two sorts: 2.4 ms of a cold
 * symbolization); a run of equal keys is a few aliases.
 */
#define SORT_SMALL 32

static void sort_small(char *b, size_t n, size_t size,
		       uint64_t (*key)(const void *),
		       int (*cmp)(const void *, const void *), char *tmp)
{
	uint64_t k[SORT_SMALL];

	for (size_t i = 0; i < n; i++)
		k[i] = key(b + i * size);
	for (size_t i = 1; i < n; i++) {
		uint64_t ki = k[i];
		size_t j = i;

		while (j > 0 && (k[j - 1] > ki ||
				 (k[j - 1] == ki &&
				  cmp(b + (j - 1) * size, b + i * size) > 0)))
			j--;
		if (j == i)
			continue;
		memcpy(tmp, b + i * size, size);
		memmove(b + (j + 1) * size, b + j * size, (i - j) * size);
		memcpy(b + j * size, tmp, size);
		memmove(k + j + 1, k + j, (i - j) * sizeof(*k));
		k[j] = ki;
	}
}

void sort_keyed(void *base, size_t n, size_t size,
		uint64_t (*key)(const void *),
		int (*cmp)(const void *, const void *))
{
	char *b = base, *out, tmp[64];
	uint64_t *keys, *k, min = UINT64_MAX;
	uint32_t *places, *x;

	if (n <= SORT_SMALL && size <= sizeof(tmp)) {
		sort_small(b, n, size, key, cmp, tmp);
		return;
	}
	if (n < SORT_KEYED_MIN || n > UINT32_MAX) {
		qsort(base, n, size, cmp);
		return;
	}
	keys = xmalloc(st_mult(n, 2 * sizeof(*keys)));
	places = xmalloc(st_mult(n, 2 * sizeof(*places)));
	for (size_t i = 0; i < n; i++) {
		keys[i] = key(b + i * size);
		places[i] = (uint32_t)i;
		min = keys[i] < min ? keys[i] : min;
	}
	for (size_t i = 0; i < n; i++)
		keys[i] -= min;
	k = keys;
	x = places;
	radix_pairs(&k, &x, keys + n, places + n, n);
	/* (One more element's room: sort_small's.) */
	out = xmalloc(st_mult(n + 1, size));
	for (size_t i = 0; i < n; i++)
		memcpy(out + i * size, b + (size_t)x[i] * size, size);
	for (size_t lo = 0, hi; lo < n; lo = hi) {
		for (hi = lo + 1; hi < n && k[hi] == k[lo]; hi++)
			;
		/* (A long run, by qsort: stable itself in glibc, given the
		 * memory.) */
		if (hi - lo > SORT_SMALL)
			qsort(out + lo * size, hi - lo, size, cmp);
		else if (hi - lo > 1)
			sort_small(out + lo * size, hi - lo, size, key, cmp,
				   out + n * size);
	}
	memcpy(b, out, n * size);
	FREE_ALL(out, keys, places);
}

uint64_t *sort_places(uint64_t *v, size_t n)
{
	uint64_t *tmp = xmalloc(st_mult(n ? n : 1, sizeof(*tmp)));
	uint64_t *sorted = radix_sort_u64(v, tmp, n, 32);

	free(sorted == v ? tmp : v);
	return sorted;
}

uint64_t *sort_batch(const uint64_t *addrs, size_t n, uint64_t *min)
{
	uint64_t lo = UINT64_MAX, hi = 0, *v;

	for (size_t i = 0; i < n; i++) {
		lo = addrs[i] < lo ? addrs[i] : lo;
		hi = addrs[i] > hi ? addrs[i] : hi;
	}
	*min = lo;
	if (n < 64 || hi - lo > UINT32_MAX || n > UINT32_MAX)
		return NULL;
	v = xmalloc(st_mult(n, sizeof(*v)));
	for (size_t i = 0; i < n; i++)
		v[i] = (addrs[i] - lo) << 32 | i;
	return sort_places(v, n);
}
