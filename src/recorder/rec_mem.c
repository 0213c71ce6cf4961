/*
 * The recorder's own memory.  Everything comes from raw mmap(2) calls that
 * bypass the hooks, and every such mapping is listed here, so that dumps
 * can show the recorder's memory as a component of its own instead of
 * charging it to the program.
 */
#include "rec.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <time.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

void *rec_raw_mmap(void *addr, size_t len, int prot, int flags, int fd,
		   long off)
{
	long r = syscall(SYS_mmap, addr, len, prot, flags, fd, off);

	return r < 0 && r > -4096 ? MAP_FAILED : (void *)r;
}

int rec_raw_munmap(void *addr, size_t len)
{
	return (int)syscall(SYS_munmap, addr, len);
}

void *rec_raw_mremap(void *old, size_t oldlen, size_t newlen, int flags,
		     void *naddr)
{
	long r = syscall(SYS_mremap, old, oldlen, newlen, flags, naddr);

	return r < 0 && r > -4096 ? MAP_FAILED : (void *)r;
}

int rec_raw_open(const char *path, int flags)
{
	return (int)syscall(SYS_openat, AT_FDCWD, path, flags, 0);
}

long rec_raw_read(int fd, void *buf, size_t n)
{
	return syscall(SYS_read, fd, buf, n);
}

long rec_raw_pread(int fd, void *buf, size_t n, long off)
{
	return syscall(SYS_pread64, fd, buf, n, off);
}

int rec_raw_close(int fd)
{
	return (int)syscall(SYS_close, fd);
}

int rec_raw_ioctl(int fd, unsigned long request, void *arg)
{
	return (int)syscall(SYS_ioctl, fd, request, arg);
}

bool rec_write_all(int fd, const char *p, size_t n, long at)
{
	while (n) {
		ssize_t w = at < 0 ? write(fd, p, n) : pwrite(fd, p, n, at);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		p += w;
		n -= (size_t)w;
		if (at >= 0)
			at += (long)w;
	}
	return true;
}

void rec_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

void (*rec_lock_stuck)(void);

/*
 * A lock is a word: 0 free, 1 held, 2 held with a waiter asleep (Drepper,
 * "Futexes Are Tricky", mutex 2).  A waiter spins a bounded number of
 * times (the holder is usually on the other core and about to give it
 * back), then marks the word 2 and sleeps in the kernel until the holder,
 * seeing the 2 as it gives the lock back, wakes one; so a holder that
 * cannot run (descheduled, stopped by SIGSTOP, inside a sanitizer's
 * report) costs its waiters no CPU.  The sleep has a timeout only to ask,
 * now and then, whether this process is a child of clone(2) that
 * inherited the lock taken (rec_lock_stuck).  Private futexes: the word
 * is never shared with another address space (the tracer, rec_stop.c,
 * shares this one, and never waits on a lock).
 */
#define SPINS 128
#define NAP_NS (10 * 1000 * 1000L)
#define NAPS_BEFORE_STUCK 4

static void lock_sleep(rec_lock *l, int val, long ns)
{
	struct timespec t = { 0, ns };

	syscall(SYS_futex, l, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, val, &t, NULL, 0);
}

void rec_lock_take(rec_lock *l)
{
	int c = 0;
	unsigned naps = 0;

	for (unsigned n = 0; n < SPINS; n++) {
		c = 0;
		if (atomic_compare_exchange_weak_explicit(
			    l, &c, 1, memory_order_acquire, memory_order_relaxed))
			return;
		if (c == 2)
			break; /* others sleep already: join them */
		rec_relax();
	}
	/* Taken as 2 from here: the lock cannot tell whether others wait. */
	while (atomic_exchange_explicit(l, 2, memory_order_acquire) != 0) {
		lock_sleep(l, 2, NAP_NS);
		if (++naps % NAPS_BEFORE_STUCK == 0 && rec_lock_stuck)
			rec_lock_stuck();
	}
}

void rec_lock_give(rec_lock *l)
{
	if (atomic_exchange_explicit(l, 0, memory_order_release) == 2)
		syscall(SYS_futex, l, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1, NULL,
			NULL, 0);
}

bool rec_lock_try(rec_lock *l)
{
	int c = 0;

	return atomic_compare_exchange_strong_explicit(
		l, &c, 1, memory_order_acquire, memory_order_relaxed);
}

bool rec_lock_free(rec_lock *l)
{
	return atomic_load_explicit(l, memory_order_acquire) == 0;
}

/* ---- the recorder's mappings ---- */

#define SELF_MAX 4096

static struct {
	uintptr_t start, end;
} self[SELF_MAX];
static size_t nself;
static rec_lock self_lock = REC_LOCK_INIT;

static void self_note(void *p, size_t len, void *old, size_t oldlen)
{
	rec_lock_take(&self_lock);
	if (old) {
		for (size_t i = 0; i < nself; i++) {
			if (self[i].start != (uintptr_t)old ||
			    self[i].end != (uintptr_t)old + oldlen)
				continue;
			self[i] = self[--nself];
			break;
		}
	}
	if (p && nself < SELF_MAX) {
		self[nself].start = (uintptr_t)p;
		self[nself].end = (uintptr_t)p + len;
		nself++;
	}
	rec_lock_give(&self_lock);
}

/* The recorder's mappings, as rec_map records of its own bucket. */
size_t rec_self_snapshot(struct rec_map *out, size_t max, uint32_t bucket)
{
	size_t n = 0;

	rec_lock_take(&self_lock);
	for (size_t i = 0; i < nself && n < max; i++) {
		out[n].start = self[i].start;
		out[n].end = self[i].end;
		out[n].bucket = bucket;
		n++;
	}
	rec_lock_give(&self_lock);
	return n;
}

size_t rec_self_count(void)
{
	size_t n;

	rec_lock_take(&self_lock);
	n = nself;
	rec_lock_give(&self_lock);
	return n;
}

static void *self_map(size_t len)
{
	void *p = rec_raw_mmap(NULL, len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	self_note(p, len, NULL, 0);
	return p;
}

/* Memory that can be given back: a mapping of its own. */
void *rec_map_alloc(size_t size)
{
	return self_map((size + 4095) & ~(size_t)4095);
}

/*
 * In the build for ThreadSanitizer the recorder's memory is never given
 * back.  Its runtime does not see raw mmap(2) and munmap(2): a table
 * freed by one thread and mapped again at the same address for another
 * would keep the old accesses in the runtime's shadow, and the new ones,
 * ordered by the kernel only, would be reported as races.  (The test
 * build keeps what production lets go: a few tables' worth.)
 */
#ifdef REC_TSAN
#define REUSE false
#else
#define REUSE true
#endif

void rec_map_free(void *p, size_t size)
{
	size = (size + 4095) & ~(size_t)4095;
	if (!p || !REUSE)
		return;
	self_note(NULL, 0, p, size);
	rec_raw_munmap(p, size);
}

/* ---- a bump allocator ---- */

#define CHUNK (4u << 20)

static char *cur, *end;
static rec_lock alloc_lock = REC_LOCK_INIT;

/* SIZE bytes at a multiple of ALIGN (a power of two, at most a page). */
static void *bump(size_t size, size_t align)
{
	char *p;

	size = (size + align - 1) & ~(align - 1);
	if (size >= CHUNK / 4)
		return self_map((size + 4095) & ~(size_t)4095);
	rec_lock_take(&alloc_lock);
	p = cur ? (char *)(((uintptr_t)cur + align - 1) & ~(align - 1)) : NULL;
	if (!p || p > end || (size_t)(end - p) < size) {
		p = cur = self_map(CHUNK);
		end = cur ? cur + CHUNK : NULL;
	}
	if (p)
		cur = p + size;
	rec_lock_give(&alloc_lock);
	return p; /* fresh anonymous memory is zero */
}

void *rec_alloc(size_t size)
{
	return bump(size, 16);
}

/* (Two threads' writes to one cache line would take it from each other's
 * core at every write.) */
#define LINE 64

void *rec_alloc_line(size_t size)
{
	return bump(size, LINE);
}

/* ---- pools of per-thread state ---- */

void *rec_pool_get(struct rec_pool *p, size_t size)
{
	struct rec_pooled *it;

	rec_lock_take(&p->lock);
	it = p->free;
	if (it) {
		p->free = it->next_free;
	} else {
		it = rec_alloc_line(size);
		if (it) {
			it->next = p->all;
			p->all = it;
		}
	}
	rec_lock_give(&p->lock);
	return it;
}

void rec_pool_put(struct rec_pool *p, void *item)
{
	struct rec_pooled *it = item;

	rec_lock_take(&p->lock);
	it->next_free = p->free;
	p->free = it;
	rec_lock_give(&p->lock);
}

void rec_pool_lock(struct rec_pool *p, bool take)
{
	if (take)
		rec_lock_take(&p->lock);
	else
		rec_lock_give(&p->lock);
}

void rec_pool_after_fork(struct rec_pool *p, const void *keep)
{
	p->free = NULL;
	for (struct rec_pooled *it = p->all; it; it = it->next) {
		if (it == keep)
			continue;
		it->next_free = p->free;
		p->free = it;
	}
}

/* ---- growable buffers ---- */

/*
 * The pages of [P, P + LEN) in memory, by one call (MADV_POPULATE_WRITE,
 * Linux 5.14): a dump writes megabytes into buffers it has not touched,
 * and a fault a page (a trap each, dearer in a virtual machine) cost a
 * Python program's first dumps more than their writing (2,500 faults in
 * json of make bench).  A few pages are touched one by one (a short
 * process's dumps made 40 calls for a page or two each), as they are
 * where the kernel refuses it.
 */
#define POPULATE_PAGES 8

static void populate(char *p, size_t len)
{
	uintptr_t lo = (uintptr_t)p & ~(uintptr_t)4095;
	uintptr_t hi = ((uintptr_t)p + len + 4095) & ~(uintptr_t)4095;

	if (!len)
		return;
#ifdef MADV_POPULATE_WRITE
	if (hi - lo >= POPULATE_PAGES * 4096 &&
	    !madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE))
		return;
#endif
	for (uintptr_t o = (uintptr_t)p; o < (uintptr_t)p + len;
	     o = (o | 4095) + 1)
		*(volatile char *)o = 0; /* (no one's yet: past a buffer's
					    data, or a fresh mapping) */
}

/* B's room made NEED bytes at least, what is asked for past its data in
 * memory with POPULATE. */
static void buf_grow(struct rec_buf *b, size_t need, bool populate_it)
{
	size_t cap = b->cap ? b->cap : 65536;
	void *p;

	while (cap < need)
		cap *= 2;
	if (cap == b->cap)
		return;
	if (!b->p) {
		p = self_map(cap);
	} else if (!REUSE) {
		p = self_map(cap); /* (the old one stays: see rec_map_free) */
		if (p) {
			populate(p, b->len);
			memcpy(p, b->p, b->len);
		}
	} else {
		p = rec_raw_mremap(b->p, b->cap, cap, MREMAP_MAYMOVE, NULL);
		if (p == MAP_FAILED)
			p = NULL;
		else
			self_note(p, cap, b->p, b->cap);
	}
	if (!p)
		return; /* out of memory: the writer notices the short buffer */
	/* (What is asked for now: the rest is touched as it is used.) */
	if (populate_it)
		populate((char *)p + b->len, need - b->len);
	b->p = p;
	b->cap = cap;
}

void rec_buf_add(struct rec_buf *b, const void *data, size_t len)
{
	if (!len)
		return; /* (DATA may be NULL) */
	if (b->len + len > b->cap)
		buf_grow(b, b->len + len, true);
	if (b->len + len > b->cap)
		return;
	memcpy(b->p + b->len, data, len);
	b->len += len;
}

void rec_buf_str(struct rec_buf *b, const char *s)
{
	rec_buf_add(b, s, strlen(s));
}

void rec_buf_u64(struct rec_buf *b, uint64_t v)
{
	char tmp[24];
	int i = sizeof(tmp);

	do {
		tmp[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	rec_buf_add(b, tmp + i, sizeof(tmp) - (size_t)i);
}

/* Two decimal digits each, 00 to 99. */
static const char digits2[] =
	"00010203040506070809101112131415161718192021222324252627282930313233"
	"34353637383940414243444546474849505152535455565758596061626364656667"
	"6869707172737475767778798081828384858687888990919293949596979899";

char *rec_put_dec(char *p, int64_t v, size_t width)
{
	char tmp[24];
	size_t i = sizeof(tmp), n;
	uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;

	for (; u >= 100; u /= 100) {
		i -= 2;
		memcpy(tmp + i, digits2 + 2 * (u % 100), 2);
	}
	if (u >= 10) {
		i -= 2;
		memcpy(tmp + i, digits2 + 2 * u, 2);
	} else {
		tmp[--i] = (char)('0' + u);
	}
	if (v < 0)
		tmp[--i] = '-';
	n = sizeof(tmp) - i;
	if (n < width) {
		memset(p, ' ', width - n);
		p += width - n;
	}
	memcpy(p, tmp + i, n);
	return p + n;
}

void rec_buf_dec(struct rec_buf *b, int64_t v, size_t width)
{
	if (rec_buf_reserve(b, (width > 21 ? width : 21)))
		b->len = (size_t)(rec_put_dec(b->p + b->len, v, width) - b->p);
}

void rec_buf_i64(struct rec_buf *b, int64_t v)
{
	rec_buf_dec(b, v, 0);
}

void rec_buf_hex(struct rec_buf *b, uint64_t v, int width)
{
	char tmp[24];
	int i = sizeof(tmp);

	do {
		tmp[--i] = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v);
	while ((int)sizeof(tmp) - i < width)
		tmp[--i] = '0';
	rec_buf_add(b, tmp + i, sizeof(tmp) - (size_t)i);
}

/* Room for N more bytes; false when there is no memory for them. */
static bool reserve(struct rec_buf *b, size_t n, bool populate_it)
{
	if (b->cap - b->len < n)
		buf_grow(b, b->len + n, populate_it);
	return b->cap - b->len >= n;
}

bool rec_buf_reserve(struct rec_buf *b, size_t n)
{
	return reserve(b, n, true);
}

bool rec_buf_reserve_only(struct rec_buf *b, size_t n)
{
	return reserve(b, n, false);
}

/*
 * Room for N bytes past what B holds, its pages in memory now (touched
 * past the data): writing them later neither maps nor faults a page.
 */
bool rec_buf_room(struct rec_buf *b, size_t n)
{
	size_t cap = b->cap;

	if (!rec_buf_reserve(b, n))
		return false;
	/* (A buffer that grew for them has them in memory already.) */
	if (b->cap == cap)
		populate(b->p + b->len, n);
	return true;
}

/*
 * Room for N more bytes, as rec_buf_reserve, and their pages in memory,
 * brought in FILL_STEP at a time as B fills: for a buffer filled line by
 * line after the walk, whose size is known only at most.  (The room for
 * a dump's new bucket lines at their longest, populated whole, was most
 * of the cost of writing them: cc1's 640 KB, of which 200 KB are used
 * once frames are shared.)  The steps are in memory from the buffer's
 * start as long as it is filled through here.
 */
#define FILL_STEP (32u << 10)

bool rec_buf_room_as_filled(struct rec_buf *b, size_t n)
{
	size_t at = b->len, ready, want;

	if (!rec_buf_reserve(b, n))
		return false;
	ready = (at + FILL_STEP - 1) / FILL_STEP * FILL_STEP;
	if (at + n > ready) {
		want = (at + n + FILL_STEP - 1) / FILL_STEP * FILL_STEP;
		if (want > b->cap)
			want = b->cap;
		populate(b->p + ready, want - ready);
	}
	return true;
}

/* N more bytes, zeroed; false (and nothing added) without memory. */
bool rec_buf_zero(struct rec_buf *b, size_t n)
{
	if (!n)
		return true;
	if (!rec_buf_reserve(b, n))
		return false;
	memset(b->p + b->len, 0, n);
	b->len += n;
	return true;
}

/* S (N bytes) with tab, newline and backslash written \\t, \\n and \\\\. */
void rec_buf_escaped(struct rec_buf *b, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (c == '\\' || c == '\t' || c == '\n') {
			rec_buf_add(b, "\\", 1);
			c = c == '\t' ? 't' : c == '\n' ? 'n' : '\\';
		}
		rec_buf_add(b, &c, 1);
	}
}

void rec_buf_frame(struct rec_buf *b, uint64_t addr, const char *func,
		   size_t func_len, const char *file, size_t file_len,
		   uint32_t line)
{
	rec_buf_str(b, "frame 0x");
	rec_buf_hex(b, addr, 16);
	rec_buf_add(b, "\t", 1);
	rec_buf_escaped(b, func, func_len);
	rec_buf_add(b, "\t", 1);
	rec_buf_escaped(b, file, file_len);
	rec_buf_add(b, "\t", 1);
	rec_buf_u64(b, line);
	rec_buf_add(b, "\n", 1);
}

uint64_t rec_hex(const char **pp, const char *stop, unsigned *digits)
{
	const char *p = *pp;
	uint64_t v = 0;
	unsigned n = 0;

	for (; p < stop; p++, n++) {
		int d = *p >= '0' && *p <= '9'	 ? *p - '0'
			: *p >= 'a' && *p <= 'f' ? *p - 'a' + 10
			: *p >= 'A' && *p <= 'F' ? *p - 'A' + 10
						 : -1;
		if (d < 0)
			break;
		v = v << 4 | (uint64_t)d;
	}
	*pp = p;
	if (digits)
		*digits = n;
	return v;
}

/* Right-align: pad with C to WIDTH before text of length USED. */
void rec_buf_pad(struct rec_buf *b, size_t width, size_t used, char c)
{
	while (used++ < width)
		rec_buf_add(b, &c, 1);
}

void rec_buf_seconds(struct rec_buf *b, double s)
{
	uint64_t ms = s <= 0 ? 0 : (uint64_t)(s * 1000 + 0.5);
	char frac[4] = { '.', (char)('0' + ms / 100 % 10),
			 (char)('0' + ms / 10 % 10), (char)('0' + ms % 10) };

	rec_buf_u64(b, ms / 1000);
	rec_buf_add(b, frac, 4);
}

void rec_buf_free(struct rec_buf *b)
{
	/* Buffers are kept for the next dump; only emptied. */
	b->len = 0;
}

/* Around fork(): the allocator's locks, taken after the tables'. */
void rec_mem_locks(bool take)
{
	if (take) {
		rec_lock_take(&alloc_lock);
		rec_lock_take(&self_lock);
	} else {
		rec_lock_give(&self_lock);
		rec_lock_give(&alloc_lock);
	}
}

bool rec_mem_locks_free(void)
{
	return rec_lock_free(&alloc_lock) && rec_lock_free(&self_lock);
}
