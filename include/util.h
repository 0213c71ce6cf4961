/*
 * Diagnostics, checked allocation and a growable string buffer: the few
 * helpers every other module leans on.
 */
#ifndef DMPROF_UTIL_H
#define DMPROF_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define DMPROF_VERSION "0.1.0"

#define NORETURN __attribute__((noreturn))
#define PRINTF(f, a) __attribute__((format(printf, f, a)))
#define UNUSED __attribute__((unused))
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
/*
 * -1, 0 or 1 as A is below, equal to or above B: what a qsort comparison
 * gives for a numeric key.  Keys chain with GNU C's "?:", the first that
 * differs deciding: return CMP(x->start, y->start) ?: CMP(x->end, y->end).
 */
#define CMP(a, b) (((a) > (b)) - ((a) < (b)))

/*
 * Diagnostics go to stderr as "dmprof: MSG" ("dmprof: warning: MSG").
 * Messages about input start with "FILE:LINE: ".  error() returns -1 so
 * library code can "return error(...)"; only commands end the process.
 */
void die(const char *fmt, ...) PRINTF(1, 2) NORETURN;
int error(const char *fmt, ...) PRINTF(1, 2);
void warning(const char *fmt, ...) PRINTF(1, 2);
/* What -v asked to hear: "dmprof: MSG", not a warning. */
void note(const char *fmt, ...) PRINTF(1, 2);
/* What command CMD did, for the user: "dmprof CMD: MSG". */
void inform(const char *cmd, const char *fmt, ...) PRINTF(2, 3);

/*
 * Where something is wrong: a line of a file (PATH:LINE, and the column
 * where it helps), an address of a process image (NAME: 0xADDR), or a
 * file as a whole (PATH).
 */
struct where {
	const char *path;   /* a file, or an image's name */
	unsigned long line; /* 1-based; 0: none */
	unsigned long col;  /* 0: none */
	bool has_addr;
	uint64_t addr;
};
/*
 * "WHERE: MSG" as an error (returns -1) or a warning: what every reader
 * and walker says, in the one shape (WHERE as struct where says).
 */
int error_at(const struct where *w, const char *fmt, ...) PRINTF(2, 3);
void warning_at(const struct where *w, const char *fmt, ...) PRINTF(2, 3);

/*
 * A failure kept for the caller to say (as an error, or a warning, with
 * what it means to it): where, and what went wrong, in words whole
 * enough to be said as they are.  Library code that may not report (a
 * walker's "nothing to walk", a cut core) hands one back.
 */
struct fault {
	struct where where; /* (its path its own) */
	char *what;         /* NULL: no fault */
};
void fault_set(struct fault *f, const struct where *w, const char *fmt, ...)
	PRINTF(3, 4);
/* Say F's words and then MORE (NULL: nothing) as an error (-1), or a
 * warning. */
int fault_error(const struct fault *f, const char *more);
void fault_warning(const struct fault *f, const char *more);
void fault_release(struct fault *f);
void die_errno(const char *fmt, ...) PRINTF(1, 2) NORETURN;
/* What cannot happen did (git's BUG()): says where, and aborts. */
#define BUG(...) bug_at(__FILE__, __LINE__, __VA_ARGS__)
void bug_at(const char *file, int line, const char *fmt, ...) PRINTF(3, 4)
	NORETURN;
int error_errno(const char *fmt, ...) PRINTF(1, 2);
/*
 * Where diagnostics go: standard error, unless the process routes them
 * elsewhere once, before making any (the unit tests keep them to look
 * at, the fuzzer drops them).  HEAD is "dmprof: ", "dmprof: warning: "
 * or "dmprof CMD: "; MSG has no newline.  NULL restores standard error.
 */
typedef void (*report_fn)(const char *head, const char *msg);
void set_report_routine(report_fn fn);
struct strbuf;
/*
 * Keep what this thread reports in SB instead (NULL: stop), for
 * report_replay to say later, in order with the rest: a thread that
 * reads ahead says its part when its work is taken.  die() still says
 * at once.
 */
void report_capture(struct strbuf *sb);
/* Where this thread's reports are kept (NULL: said at once). */
struct strbuf *report_captured(void);
void report_replay(const struct strbuf *sb);

/*
 * Ask for the cache line at P, to read it soon.  (GCC 12 silently drops
 * __builtin_prefetch when the address comes out of a hash computation;
 * the instruction itself it keeps.)
 */
static inline void prefetch(const void *p)
{
#if defined(__x86_64__) || defined(__i386__)
	__asm__ volatile("prefetcht0 %0" : : "m"(*(const char *)p));
#else
	__builtin_prefetch(p);
#endif
}

/* Allocation that dies on out-of-memory and on size overflow. */
void *xmalloc(size_t size);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t size);
void *xreallocarray(void *p, size_t n, size_t size);
/* P, an array of OLD elements of SIZE, grown to N (>= OLD), the new ones
 * zeroed. */
void *xrecallocarray(void *p, size_t old, size_t n, size_t size);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
void *xmemdup(const void *p, size_t n);
/*
 * Free each pointer of the list (any may be NULL): what a struct's
 * release does with its arrays, in one call rather than a line each.
 * (A macro, to count the list; free_array does the work.)
 */
#define FREE_ALL(...)                                                       \
	free_array((void *[]){ __VA_ARGS__ },                               \
		   sizeof((void *[]){ __VA_ARGS__ }) / sizeof(void *))
void free_array(void *const *v, size_t n);
/* A formatted string in new memory. */
char *xasprintf(const char *fmt, ...) PRINTF(1, 2);
/* The size of a huge page (x86-64's transparent ones). */
#define HUGE_PAGE ((size_t)2 << 20)
/*
 * Zeroed memory for a big array or a table looked up at random: from 1
 * MiB on, in huge pages where the kernel gives them (a fault and a TLB
 * entry for 2 MiB, not 512; its size rounded up to them).  Freed with
 * free().
 */
void *xcalloc_table(size_t n, size_t size);
/* LEN bytes, not zeroed, in huge pages where the kernel gives them (LEN
 * rounded up to them), for memory written before it is read (an
 * arena's blocks).  Freed with free(). */
void *xmalloc_huge(size_t len);
/*
 * P, an array of USED elements of SIZE, moved to room for N (>= USED),
 * in huge pages from 1 MiB on (as xmalloc_huge; the rest not zeroed):
 * for an array made big at once, whose pages are otherwise faulted in
 * 4 KiB at a time.  Freed, and grown, as any other.
 */
void *xreserve_huge(void *p, size_t used, size_t n, size_t size);
/*
 * LEN zeroed bytes mapped on their own, in huge pages where the kernel
 * gives them, or NULL; *MAPPED is what munmap takes back (LEN rounded up
 * to them).
 */
void *huge_map(size_t len, size_t *mapped);
/*
 * malloc's heap grown 64 MiB at a time, the first 64 MiB in huge pages
 * where the kernel gives them: called once, first thing in main.
 * Returns whether some was advised.
 */
bool malloc_setup(void);
size_t st_add(size_t a, size_t b);

/*
 * Sort the N keys V by their bits from FROM up (the bits below are
 * carried along: an index, say), TMP as large: an LSD radix sort, for the
 * addresses of a batch.  Returns V or TMP, whichever holds the result.
 */
uint64_t *radix_sort_u64(uint64_t *v, uint64_t *tmp, size_t n, unsigned from);
/*
 * Addresses in order, each with its place: the N keys V, each an
 * address's offset from the lowest above its place ((addr - min) << 32 |
 * i), sorted by radix_sort_u64.  V is taken: the sorted keys are
 * returned (V or a new array; the caller frees them).
 */
uint64_t *sort_places(uint64_t *v, size_t n);
/*
 * A batch of N addresses ADDRS as those keys (their offsets from *MIN,
 * the lowest, above their places), sorted: the order a batch's searches
 * walk in.  NULL when there are too few to be worth it (under 64), or
 * they spread over more than 4 GB: the caller takes them as they come.
 */
uint64_t *sort_batch(const uint64_t *addrs, size_t n, uint64_t *min);

/*
 * Sort N elements of SIZE bytes at BASE as qsort(3) with CMP would, and
 * stably (as glibc's does, given the memory): by KEY's value first, by
 * a radix sort, then CMP within each run of equal keys.  KEY must agree
 * with CMP: CMP(a, b) < 0 only where KEY(a) <= KEY(b).  For tables of
 * thousands, where qsort's calls to CMP were most of the time, and of a
 * few, where its setup was.
 */
void sort_keyed(void *base, size_t n, size_t size,
		uint64_t (*key)(const void *),
		int (*cmp)(const void *, const void *));

/* Up to LEN bytes at OFF of FD: what pread gives until the end of the
 * file or an error (EINTR retried). */
size_t pread_full(int fd, void *buf, size_t len, uint64_t off);
size_t st_mult(size_t a, size_t b);

/*
 * Grow the array PTR holding NR used elements of ALLOC so that it can hold
 * at least N; amortized doubling.
 */
#define GROW(ptr, n, alloc)                                                 \
	do {                                                                \
		if ((size_t)(n) > (alloc)) {                                \
			size_t grow_new_ = (alloc) < 8 ? 8 : (alloc);       \
			while (grow_new_ < (size_t)(n))                     \
				grow_new_ = st_mult(grow_new_, 2);          \
			(ptr) = xreallocarray((ptr), grow_new_,             \
					      sizeof(*(ptr)));              \
			(alloc) = grow_new_;                                \
		}                                                           \
	} while (0)

/*
 * Append one element to the array PTR of NR used elements of ALLOC (GROW
 * as need be), zeroed and counted in NR: its address.
 */
#define PUSH_ZEROED(ptr, nr, alloc)                                         \
	({                                                                  \
		GROW((ptr), (nr) + 1, (alloc));                             \
		memset(&(ptr)[(nr)], 0, sizeof(*(ptr)));                    \
		&(ptr)[(nr)++];                                             \
	})

/* A growable, always NUL-terminated byte string (git's strbuf idea). */
struct strbuf {
	char *buf;
	size_t len;
	size_t alloc;
};
#define STRBUF_INIT { NULL, 0, 0 }

void sb_grow(struct strbuf *sb, size_t extra);

/* (Inline where there is room: a stack's text is built a name and a
 * blank at a time, hundreds of thousands of them a command.) */
static inline void sb_add(struct strbuf *sb, const void *data, size_t len)
{
	if (sb->alloc - sb->len <= len)
		sb_grow(sb, len);
	if (len) /* (DATA may then be NULL) */
		memcpy(sb->buf + sb->len, data, len);
	sb->len += len;
	sb->buf[sb->len] = '\0';
}

static inline void sb_addch(struct strbuf *sb, int c)
{
	if (sb->alloc - sb->len <= 1)
		sb_grow(sb, 1);
	sb->buf[sb->len++] = (char)c;
	sb->buf[sb->len] = '\0';
}

void sb_addstr(struct strbuf *sb, const char *s);
void sb_addf(struct strbuf *sb, const char *fmt, ...) PRINTF(2, 3);
void sb_vaddf(struct strbuf *sb, const char *fmt, va_list ap);
void sb_reset(struct strbuf *sb);
void sb_release(struct strbuf *sb);
/* The buffer's text; "" for an unused strbuf. */
const char *sb_str(const struct strbuf *sb);
/* Hand the buffer to the caller (who frees it) and reset SB. */
char *sb_detach(struct strbuf *sb);

/* Quote S for a diagnostic: printable ASCII as is, the rest as \xNN. */
const char *quote_for_msg(const char *s, size_t len, struct strbuf *out);

/*
 * Checked 64-bit arithmetic for sizes from input: on overflow the result
 * saturates and *OVERFLOW is set, for the caller to report (hostile or
 * corrupt input must not make undefined behaviour or a wrapped sum).
 */
static inline int64_t add64(int64_t a, int64_t b, bool *overflow)
{
	int64_t r;

	if (__builtin_add_overflow(a, b, &r)) {
		*overflow = true;
		return b > 0 ? INT64_MAX : INT64_MIN;
	}
	return r;
}

static inline int64_t sub64(int64_t a, int64_t b, bool *overflow)
{
	int64_t r;

	if (__builtin_sub_overflow(a, b, &r)) {
		*overflow = true;
		return b < 0 ? INT64_MAX : INT64_MIN;
	}
	return r;
}

bool starts_with(const char *s, const char *prefix);

/* The little-endian word at P, aligned or not (memory read from a
 * process, a core, a file). */
static inline uint32_t load_u32(const void *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline uint64_t load_u64(const void *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}
bool ends_with(const char *s, const char *suffix);

#endif
