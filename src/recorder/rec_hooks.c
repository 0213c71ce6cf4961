/*
 * The recorder's hooks.  malloc and friends call glibc's own entry points
 * (__libc_malloc, ...), which glibc exports for exactly this, so there is
 * no dlsym() bootstrap to deadlock in.  Each block gets a 16-byte header
 * in front: its size, its bucket and how far the block was moved to align
 * it, and a check word that tells the recorder's blocks from any other,
 * so free() needs no lookup.
 *
 * Stacks come from rec_unwind.c.  Dumps are written by a thread of the
 * recorder, started with the program, when a time interval or a signal
 * asks for them; without either, the process stays single-threaded and
 * the allocation and in-use triggers dump from the allocating thread,
 * after the allocation.
 * A hook leaves errno as it found it (free() must, by POSIX).
 */
#include "rec.h"

#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef REC_TSAN
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);
#define libc_malloc __libc_malloc
#define libc_calloc __libc_calloc
#define libc_realloc __libc_realloc
#define libc_memalign __libc_memalign
#define libc_free __libc_free

/*
 * The word in front of a block glibc handed out at RAW: its chunk's size,
 * and in its low bits IS_MMAPPED (2: mapped on its own) and
 * NON_MAIN_ARENA (4).
 */
static size_t chunk_word(const void *raw)
{
	return ((const size_t *)raw)[-1];
}

/*
 * What glibc's malloc_usable_size says of a block it handed out at RAW:
 * in use, a chunk's payload is its size less its own size word, and a
 * chunk glibc mapped also gives up its prev_size word.  (Read from the
 * chunk header: glibc's function itself may be another allocator's, in a
 * program linked with one.)
 */
static size_t usable_raw(const void *raw)
{
	size_t word = chunk_word(raw), chunk = word & ~(size_t)7;
	size_t hdr = word & 2 ? 16 : 8;

	return chunk > hdr ? chunk - hdr : 0;
}
#else
/*
 * The test build for ThreadSanitizer (make SANITIZE=thread): its runtime
 * in the program claims malloc too, and must see every block (its
 * reports depend on knowing when memory is reused), so the hooks call its
 * allocator's entry points where they would call glibc's.  Its blocks
 * have no glibc chunk in front: none is mapped on its own or in another
 * arena, as far as the recorder can tell (their dumps are not exact,
 * which is not what this build is for).  The program's calls come
 * through rec_tsan.c, which is not instrumented: the hooks here are
 * under names of their own.
 */
#define malloc(...) rec_tsan_malloc(__VA_ARGS__)
#define free(...) rec_tsan_free(__VA_ARGS__)
#define calloc(...) rec_tsan_calloc(__VA_ARGS__)
#define realloc(...) rec_tsan_realloc(__VA_ARGS__)
#define reallocarray(...) rec_tsan_reallocarray(__VA_ARGS__)
#define memalign(...) rec_tsan_memalign(__VA_ARGS__)
#define aligned_alloc(...) rec_tsan_aligned_alloc(__VA_ARGS__)
#define posix_memalign(...) rec_tsan_posix_memalign(__VA_ARGS__)
#define valloc(...) rec_tsan_valloc(__VA_ARGS__)
#define pvalloc(...) rec_tsan_pvalloc(__VA_ARGS__)
#define malloc_usable_size(...) rec_tsan_malloc_usable_size(__VA_ARGS__)
#define mmap(...) rec_tsan_mmap(__VA_ARGS__)
#define munmap(...) rec_tsan_munmap(__VA_ARGS__)
#define mremap(...) rec_tsan_mremap(__VA_ARGS__)
#define pthread_create(...) rec_tsan_pthread_create(__VA_ARGS__)
#define dlclose(...) rec_tsan_dlclose(__VA_ARGS__)
#define libc_malloc __interceptor_malloc
#define libc_calloc __interceptor_calloc
#define libc_realloc __interceptor_realloc
#define libc_memalign __interceptor_memalign
#define libc_free __interceptor_free

static size_t chunk_word(const void *raw)
{
	(void)raw;
	return 0;
}

static size_t usable_raw(const void *raw)
{
	return __interceptor_malloc_usable_size((void *)(uintptr_t)raw);
}
#endif

#define EXPORT __attribute__((visibility("default")))

/* glibc's obsolete entry points, which <malloc.h> would declare. */
void *memalign(size_t align, size_t n);
void *pvalloc(size_t n);
size_t malloc_usable_size(void *p);

struct rec_config rec_cfg;
__thread int rec_busy;
atomic_bool rec_forked;

enum { ST_NEW, ST_INIT, ST_READY, ST_OFF };
static atomic_int state = ST_NEW;
static uintptr_t text_lo, text_hi; /* the recorder's own code */
static size_t page_size = 4096;

/* ---- block headers ---- */

#define UNTRACKED 0x3fffffu /* a block made while the recorder was busy */
#define TAG 0x6d6f7264u

struct hdr {
	uint64_t size;
	uint32_t meta;  /* bucket (22 bits) | log2 of the offset << 22 */
	uint32_t check;
};

static uint32_t check_of(const struct hdr *h)
{
	uint64_t x = h->size ^ ((uint64_t)h->meta << 32) ^ (uintptr_t)h;

	x *= 0x9e3779b97f4a7c15ULL;
	return (uint32_t)(x >> 32) ^ TAG;
}

static struct hdr *hdr_of(void *p)
{
	struct hdr *h = (struct hdr *)p - 1;

#ifdef REC_TSAN
	/* (A block its allocator handed out as it is may start a mapping:
	 * nothing to read in front of it.  Ours start inside its blocks,
	 * which have no size there.) */
	if (__sanitizer_get_allocated_size(p))
		return NULL;
#endif
	return h->check == check_of(h) ? h : NULL;
}

static unsigned log2_of(size_t a)
{
	unsigned n = 0;

	while ((size_t)1 << n < a)
		n++;
	return n;
}

/* ---- stacks ---- */

/*
 * The stack of the call a hook is serving: AT is its caller's frame, as
 * the hook found it (REC_CALLER()), so the recorder's own frames are not
 * stepped through.  (A hook that another hook called starts inside the
 * recorder: those frames are skipped.)  LOOKED: the walk's first look
 * (rec_unwind_noted) was taken already, and found nothing of KIND.
 */
static struct rec_bucket *bucket_at(enum rec_kind kind,
				    const struct rec_frame *at, bool looked)
{
	uintptr_t frames[REC_MAX_DEPTH];
	void **note;
	unsigned n;
	struct rec_bucket *b;

	/*
	 * In a CPython process the same native stack runs many Python
	 * stacks: no note (the last bucket from here), and the eval loop's
	 * frames replaced by the Python frames they run, from a walk that
	 * went on past the depth (each eval frame stands for one or more).
	 */
	if (rec_py.on) {
		n = rec_unwind_from(at, frames, REC_MAX_DEPTH, text_lo, text_hi,
				    NULL);
		n = rec_python_splice(frames, n, rec_cfg.depth);
		return rec_bucket_get(kind, frames, n);
	}
	/* (Most calls: the walk's first look has the note at hand.) */
	b = looked ? NULL : rec_unwind_noted(at, rec_cfg.depth, text_lo,
					     text_hi);
	if (b && b->kind == kind)
		return b;
	n = rec_unwind_from(at, frames, rec_cfg.depth, text_lo, text_hi,
			    &note);

	/* The stack of an earlier call from here, as the walk replayed
	 * it: its bucket is noted (no lookup in the table of every stack). */
	if (note && *note) {
		b = *note;
		if (b->kind == kind)
			return b;
		/* (The same call site, another hook: a function pointer.) */
		n = rec_unwind_from(at, frames, rec_cfg.depth, text_lo,
				    text_hi, NULL);
		return rec_bucket_get(kind, frames, n);
	}
	b = rec_bucket_get(kind, frames, n);
	if (note)
		*note = b;
	return b;
}

/* ---- bookkeeping ---- */

static bool tracking(void)
{
	return atomic_load_explicit(&state, memory_order_acquire) ==
		       ST_READY &&
	       !rec_busy;
}

static void init(void);
static void poll_dumper(size_t size);

/* The heap of the last block of another arena this thread made, and
 * the MiB of its last block of the main arena. */
static __thread uintptr_t last_heap, last_main_mib;

/* Where the program break was when the recorder started: the main
 * arena's brk heap is at or above it (or a little below: what was
 * allocated before, noted for nothing). */
static uintptr_t brk_start;

/* A block of the main arena at RAW outside its brk heap: in a mapping
 * that the arena made when the break could not grow. */
static bool past_brk(uintptr_t raw)
{
	return raw < brk_start || raw >= (uintptr_t)sbrk(0);
}

/* The raw block RAW holds SIZE bytes for the user at RAW + OFF; AT is
 * where the hook was called. */
static void *finish(void *raw, size_t size, size_t off,
		    const struct rec_frame *at)
{
	struct hdr *h;
	struct rec_bucket *b = NULL;
	void *p;

	if (!raw)
		return NULL;
	p = (char *)raw + off;
	h = (struct hdr *)p - 1;
	if (atomic_load_explicit(&state, memory_order_acquire) == ST_NEW)
		init();
	poll_dumper(size);
	if (__builtin_expect(atomic_load_explicit(&rec_python_state,
						  memory_order_relaxed) %
				     REC_PYTHON_DONE,
			     0) &&
	    tracking())
		rec_python_poll();
	if (tracking()) {
		/* (Most calls: the walk's first look has the note at hand,
		 * and allocates nothing: taken here, before the hooks are
		 * set busy for what may.) */
		b = rec_py.on ? NULL
			      : rec_unwind_noted(at, rec_cfg.depth, text_lo,
						 text_hi);
		if (!b || b->kind != REC_MALLOC) {
			rec_busy++;
			b = bucket_at(REC_MALLOC, at, true);
			rec_busy--;
		}
	}
	h->size = size;
	/* (OFF is a power of two.) */
	h->meta = (b ? b->id : UNTRACKED) | (uint32_t)__builtin_ctzl(off) << 22;
	h->check = check_of(h);
	if (!b)
		return p;
	rec_count_alloc(b->id, size, off);
	if (size >= REC_LARGE || (chunk_word(raw) & 2)) {
		struct rec_large l = { (uintptr_t)p, size, 0, 0, b->id };

		if (chunk_word(raw) & 2) {
			/*
			 * glibc mapped this one block: its chunk (16 bytes
			 * before RAW) says how far into the mapping it starts
			 * and how long it is.
			 */
			const size_t *chunk = (const size_t *)raw - 2;

			l.mstart = (uintptr_t)chunk - chunk[0];
			l.mend = (uintptr_t)chunk + (chunk[1] & ~(size_t)7);
		}
		rec_large_add(&l);
	}
	/*
	 * A chunk of another arena than glibc's main one (its size word
	 * says so) is in one of that arena's heaps.  (A thread's blocks
	 * come from one arena, mostly: a heap is noted when it changes.)
	 */
	if ((chunk_word(raw) & 6) == 4 &&
	    ((uintptr_t)raw & ~(REC_HEAP_MAX - 1)) != last_heap) {
		last_heap = (uintptr_t)raw & ~(REC_HEAP_MAX - 1);
		rec_arena_note(last_heap);
	}
	if ((chunk_word(raw) & 6) == 0 &&
	    (uintptr_t)raw >> 20 != last_main_mib) {
		last_main_mib = (uintptr_t)raw >> 20;
		if (past_brk((uintptr_t)raw))
			rec_main_ext_note(last_main_mib << 20);
	}
	return p;
}

/*
 * Forget the block that was at P with header H (a copy: the block may be
 * gone).  MAPPED: glibc had mapped it on its own (so it is in the large
 * table whatever its size).
 */
static inline __attribute__((always_inline)) void
forget(void *p, const struct hdr *h, bool mapped)
{
	uint32_t id = h->meta & 0x3fffff;
	size_t off = (size_t)1 << (h->meta >> 22);

	/* (An id no bucket has yet would be a header not ours.) */
	if (id == UNTRACKED || id >= rec_bucket_count())
		return;
	rec_count_free(id, h->size, off);
	/* (As finish() chose: big, or mapped by glibc on its own.) */
	if (h->size >= REC_LARGE || mapped)
		rec_large_del((uintptr_t)p);
}

/* Forget block P (a recorder block); returns its raw address. */
static void *release(void *p, struct hdr *h)
{
	size_t off = (size_t)1 << (h->meta >> 22);
	const void *raw = (char *)p - off;

	forget(p, h, chunk_word(raw) & 2);
	h->check = 0; /* a second free is glibc's to catch, not ours */
	return (char *)p - off;
}


/*
 * While a dump reads the process, the program's allocations wait (the
 * dump thread's own pass: it is busy).  One load when no dump runs.
 */
static void wait_dump_slow(void);

static inline void wait_dump(void)
{
	if (__builtin_expect(atomic_load_explicit(&rec_dumping,
						  memory_order_relaxed),
			     0) &&
	    !rec_busy)
		wait_dump_slow();
}

/* ---- the malloc family ---- */

/*
 * The thread's errno, which each hook keeps as it found it: its address
 * is the thread's for its life (and the same in a child of fork()), so
 * it is asked for once, not through the PLT in every malloc and free
 * (the allocation bench of make bench: 404.7 -> 394.5 ms, 250 alone).
 */
static __thread int *errno_at;

static inline int *errno_ptr(void)
{
	int *e = errno_at;

	if (__builtin_expect(!e, 0))
		e = errno_at = &errno;
	return e;
}

/* A block from glibc, bookkept, with errno (at EP) as the caller left it
 * (SAVED). */
static void *done(void *raw, size_t size, size_t off, int *ep, int saved,
		  const struct rec_frame *at)
{
	void *p;

	if (!raw)
		return NULL; /* (glibc set errno) */
	p = finish(raw, size, off, at);
	*ep = saved;
	return p;
}

EXPORT void *malloc(size_t n)
{
	struct rec_frame at = REC_CALLER();
	int *ep = errno_ptr(), e = *ep;

	wait_dump();
	if (n > SIZE_MAX - 16) {
		*ep = ENOMEM;
		return NULL;
	}
	return done(libc_malloc(n + 16), n, 16, ep, e, &at);
}

EXPORT void free(void *p)
{
	struct hdr *h;
	int *ep, e;

	if (!p)
		return;
	ep = errno_ptr();
	e = *ep;
	wait_dump();
	h = hdr_of(p);
	libc_free(h ? release(p, h) : p);
	*ep = e;
}

EXPORT void *calloc(size_t n, size_t m)
{
	struct rec_frame at = REC_CALLER();
	size_t total;
	int *ep = errno_ptr(), e = *ep;

	wait_dump();
	if (__builtin_mul_overflow(n, m, &total) || total > SIZE_MAX - 16) {
		*ep = ENOMEM;
		return NULL;
	}
	return done(libc_calloc(1, total + 16), total, 16, ep, e, &at);
}

static void *aligned(size_t align, size_t n, const struct rec_frame *at)
{
	int *ep = errno_ptr(), e = *ep;

	wait_dump();
	if (align < 16)
		align = 16;
	if (align & (align - 1))
		align = (size_t)1 << log2_of(align);
	/* (The header keeps log2 of ALIGN: any power of two fits.) */
	if (align > SIZE_MAX / 2 + 1 || n > SIZE_MAX - align) {
		*ep = ENOMEM;
		return NULL;
	}
	return done(libc_memalign(align, n + align), n, align, ep, e, at);
}

/* The bytes of a recorder block the program may use. */
static size_t usable(void *p, const struct hdr *h)
{
	size_t off = (size_t)1 << (h->meta >> 22);
	size_t payload = usable_raw((char *)p - off);

	return payload > off ? payload - off : 0;
}

EXPORT void *realloc(void *p, size_t n)
{
	struct rec_frame at = REC_CALLER();
	struct hdr *h, saved;
	void *q, *raw;
	bool mapped;
	int *ep = errno_ptr(), e = *ep;

	wait_dump();
	if (!p)
		return malloc(n);
	h = hdr_of(p);
	if (!h)
		return libc_realloc(p, n);
	if (!n) {
		free(p);
		return NULL;
	}
	if ((h->meta >> 22) != 4 || n > SIZE_MAX - 16) {
		/* Aligned blocks move by hand, all their usable bytes. */
		size_t keep = usable(p, h);

		q = malloc(n);
		if (q) {
			memcpy(q, p, keep < n ? keep : n);
			free(p);
			*ep = e;
		}
		return q;
	}
	/* Forget the old block only once glibc has a new one. */
	saved = *h;
	raw = (char *)p - 16;
	mapped = chunk_word(raw) & 2;
	q = libc_realloc(raw, n + 16);
	if (!q)
		return NULL; /* the old block as it was; glibc set errno */
	forget(p, &saved, mapped);
	return done(q, n, 16, ep, e, &at);
}

EXPORT void *reallocarray(void *p, size_t n, size_t m)
{
	size_t total;

	if (__builtin_mul_overflow(n, m, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(p, total);
}

EXPORT void *memalign(size_t align, size_t n)
{
	struct rec_frame at = REC_CALLER();

	return aligned(align, n, &at);
}

EXPORT void *aligned_alloc(size_t align, size_t n)
{
	struct rec_frame at = REC_CALLER();

	return aligned(align, n, &at);
}

EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
	struct rec_frame at = REC_CALLER();
	void *p;

	if (!align || (align & (align - 1)) || align % sizeof(void *))
		return EINVAL;
	p = aligned(align, n, &at);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

EXPORT void *valloc(size_t n)
{
	struct rec_frame at = REC_CALLER();

	return aligned((size_t)sysconf(_SC_PAGESIZE), n, &at);
}

EXPORT void *pvalloc(size_t n)
{
	struct rec_frame at = REC_CALLER();
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	if (n > SIZE_MAX - page) {
		errno = ENOMEM;
		return NULL;
	}
	return aligned(page, (n + page - 1) & ~(page - 1), &at);
}

EXPORT size_t malloc_usable_size(void *p)
{
	struct hdr *h;

	if (!p)
		return 0;
	h = hdr_of(p);
	/* (Not ours: a block glibc made for itself, like strdup's.) */
	return h ? usable(p, h) : usable_raw(p);
}

/* ---- the mmap family ---- */

static uintptr_t page_up(uintptr_t a)
{
	return (a + page_size - 1) & ~(uintptr_t)(page_size - 1);
}

static void note_map(void *r, size_t len, const struct rec_frame *at)
{
	struct rec_bucket *b;

	if (r == MAP_FAILED || !rec_cfg.mmap || !tracking())
		return;
	rec_busy++;
	b = bucket_at(REC_MMAP, at, false);
	if (b) {
		rec_count_alloc(b->id, 0, 0);
		rec_map_add((uintptr_t)r, page_up((uintptr_t)r + len), b->id);
	}
	rec_busy--;
}

EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd,
		  off_t off)
{
	struct rec_frame at = REC_CALLER();
	void *r;
	int e = errno;

	if (rec_from_runtime(at.pc)) /* (not the program's: see above) */
		return rec_raw_mmap(addr, len, prot, flags, fd, off);
	wait_dump();
	r = rec_raw_mmap(addr, len, prot, flags, fd, off); /* sets errno */
	if (r == MAP_FAILED)
		return r;
	if (atomic_load(&state) == ST_NEW)
		init();
	poll_dumper(0);
	/* (pymalloc's arenas are noted as such: rec_python.c.) */
	if (!rec_python_inside)
		note_map(r, len, &at);
	errno = e;
	return r;
}

#ifndef REC_TSAN
EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd,
		    off_t off) __attribute__((alias("mmap")));
#endif

EXPORT int munmap(void *addr, size_t len)
{
	int r, e = errno;

	if (rec_from_runtime((uintptr_t)__builtin_return_address(0)))
		return rec_raw_munmap(addr, len);
	wait_dump();
	r = rec_raw_munmap(addr, len); /* sets errno */
	if (r < 0)
		return -1;
	if (rec_cfg.mmap && !rec_python_inside &&
	    atomic_load(&state) == ST_READY)
		rec_map_del((uintptr_t)addr, page_up((uintptr_t)addr + len));
	errno = e;
	return 0;
}

EXPORT void *mremap(void *old, size_t oldlen, size_t newlen, int flags, ...)
{
	void *naddr = NULL, *r;
	uint32_t bucket;
	int e = errno;

	if (flags & MREMAP_FIXED) {
		va_list ap;

		va_start(ap, flags);
		naddr = va_arg(ap, void *);
		va_end(ap);
	}
	if (rec_from_runtime((uintptr_t)__builtin_return_address(0)))
		return rec_raw_mremap(old, oldlen, newlen, flags, naddr);
	wait_dump();
	r = rec_raw_mremap(old, oldlen, newlen, flags, naddr); /* sets errno */
	if (r == MAP_FAILED || !rec_cfg.mmap ||
	    atomic_load(&state) != ST_READY)
		return r;
	/* The mapping keeps the bucket of the call that made it. */
	rec_busy++;
	if (rec_map_bucket_at((uintptr_t)old, &bucket)) {
		rec_map_del((uintptr_t)old, page_up((uintptr_t)old + oldlen));
		rec_map_add((uintptr_t)r, page_up((uintptr_t)r + newlen),
			    bucket);
	}
	rec_busy--;
	errno = e;
	return r;
}

/* ---- marker functions (their addresses name synthetic buckets) ---- */

#define MARKER(name)                                                         \
	__attribute__((noinline, used)) EXPORT void name(void)              \
	{                                                                    \
		asm volatile("nop; nop; nop; nop");                          \
	}

MARKER(dmprof_recorder_self)
MARKER(dmprof_glibc_malloc_arena)
MARKER(dmprof_recorder_block_headers)
MARKER(dmprof_python_object_arena)
MARKER(dmprof_python_object_free)

/* ---- configuration ---- */

static uint64_t env_u64(const char *name, uint64_t dflt)
{
	const char *s = getenv(name);
	uint64_t v = 0;

	if (!s || !*s)
		return dflt;
	for (; *s >= '0' && *s <= '9'; s++)
		v = v > UINT64_MAX / 10 ? UINT64_MAX : v * 10 + (uint64_t)(*s - '0');
	return v;
}

static double env_seconds(const char *name)
{
	const char *s = getenv(name);
	char *end;
	double v;

	if (!s || !*s)
		return 0;
	v = strtod(s, &end); /* (1e-3 and 1e6 too) */
	return v > 0 && v < 1e12 ? v : 0;
}

static int text_range(struct dl_phdr_info *info, size_t size, void *data)
{
	uintptr_t me = (uintptr_t)data;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && me >= lo &&
		    me < lo + ph->p_memsz) {
			text_lo = lo;
			text_hi = lo + ph->p_memsz;
			return 1;
		}
	}
	return 0;
}

/*
 * A sanitizer's runtime in the program (the test build's ThreadSanitizer;
 * UBSan's or LSan's) maps memory for itself, its report symbolizer
 * (libbacktrace) through mmap() as any caller would: those mappings are
 * the runtime's, not the program's, and must not enter the tables (a
 * report's mapping, recorded, took the tables' locks inside the report
 * and reported again).  Its calls are known by their return address in
 * the runtime's code.  (A runtime linked into the executable, as clang
 * does by default, cannot be told apart this way: its mappings are the
 * program's.)
 */
#define RUNTIMES_MAX 8

static struct {
	uintptr_t lo, hi;
} runtimes[RUNTIMES_MAX];
static atomic_int nruntimes;

static bool runtime_name(const char *path)
{
	static const char *const names[] = { "libtsan.so", "libasan.so",
					     "liblsan.so", "libubsan.so",
					     "libhwasan.so", "libclang_rt." };
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strncmp(base, names[i], strlen(names[i])))
			return true;
	return false;
}

static int runtime_range(struct dl_phdr_info *info, size_t size, void *data)
{
	int n = atomic_load_explicit(&nruntimes, memory_order_relaxed);

	(void)size;
	(void)data;
	if (!info->dlpi_name || !runtime_name(info->dlpi_name))
		return 0;
	for (int i = 0; i < info->dlpi_phnum && n < RUNTIMES_MAX; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		runtimes[n].lo = info->dlpi_addr + ph->p_vaddr;
		runtimes[n].hi = runtimes[n].lo + ph->p_memsz;
		n++;
	}
	atomic_store_explicit(&nruntimes, n, memory_order_release);
	return 0;
}

bool rec_from_runtime(uintptr_t pc)
{
	int n = atomic_load_explicit(&nruntimes, memory_order_acquire);

	for (int i = 0; i < n; i++)
		if (pc >= runtimes[i].lo && pc < runtimes[i].hi)
			return true;
	return false;
}

/*
 * The in-use triggers.  gperftools' default, a dump each time 100 MiB
 * more are in use than at the last dump, leaves a program that never
 * grows that much with one dump, at exit, after its teardown freed what
 * it held.  Unless HEAP_PROFILE_INUSE_INTERVAL is given, dumps come at
 * new highs in use instead (1 MiB, then twice the last one's): a few for
 * any program, however long it runs, and the shape of its growth.
 * DMPROF_PEAK_DUMPS=0 turns them off (and the 100 MiB default back on);
 * =1 keeps them beside a given interval.
 */
static void peaks_or_inuse(void)
{
	const char *given = getenv("HEAP_PROFILE_INUSE_INTERVAL");
	bool interval = given && *given;

	rec_cfg.peaks = env_u64("DMPROF_PEAK_DUMPS", !interval) != 0;
	rec_cfg.inuse_interval = env_u64("HEAP_PROFILE_INUSE_INTERVAL",
					 rec_cfg.peaks ? 0 : 100ULL << 20);
}

static pid_t owner;        /* the process the recorder's state is of */
static bool thread_wanted; /* a time interval or a signal */

/*
 * libgcc loaded for backtrace(), by the first walk that falls back in a
 * program that did not have it (rec_unwind_ready): what the loader
 * allocates is not the program's.  (Two threads at once: glibc loads it
 * once.)
 */
static void link_unwinder(void)
{
	void *warm[4];

	rec_busy++;
	backtrace(warm, 4);
	rec_busy--;
}

static void init(void)
{
	int expect = ST_NEW;
	const char *prefix;

	if (!atomic_compare_exchange_strong(&state, &expect, ST_INIT)) {
		/* Another thread initializes: wait, unless it is us. */
		while (!rec_busy && atomic_load(&state) == ST_INIT)
			rec_relax();
		return;
	}
	rec_busy++;
	prefix = getenv("HEAPPROFILE");
	if (!prefix || !*prefix || strlen(prefix) >= sizeof(rec_cfg.prefix)) {
		atomic_store(&state, ST_OFF);
		rec_busy--;
		return;
	}
	strcpy(rec_cfg.prefix, prefix);
	rec_say_init();
	rec_cfg.mmap = env_u64("HEAP_PROFILE_MMAP", 0) != 0;
	rec_cfg.no_stop = env_u64("DMPROF_NO_STOP", 0) != 0;
	rec_cfg.separate_files = env_u64("DMPROF_SEPARATE_FILES", 0) != 0;
	rec_cfg.no_scan = env_u64("DMPROF_NO_SCAN", 0) != 0;
	rec_cfg.pageframe = (int)env_u64("DEEP_HEAP_PROFILE_PAGEFRAME", 0);
	rec_cfg.pss = env_u64("DMPROF_PSS", 0) != 0;
	rec_cfg.depth = (unsigned)env_u64("DMPROF_STACK_DEPTH", 32);
	if (rec_cfg.depth < 1 || rec_cfg.depth > REC_MAX_DEPTH)
		rec_cfg.depth = 32;
	rec_cfg.time_interval = env_seconds("HEAP_PROFILE_TIME_INTERVAL");
	/* gperftools' default: 1 GiB allocated. */
	rec_cfg.alloc_interval =
		env_u64("HEAP_PROFILE_ALLOCATION_INTERVAL", 1ULL << 30);
	peaks_or_inuse();
	rec_cfg.signal = (int)env_u64("HEAPPROFILESIGNAL", 0);
	if (rec_cfg.signal < 0 || rec_cfg.signal >= NSIG)
		rec_cfg.signal = 0;
	thread_wanted = rec_cfg.time_interval > 0 || rec_cfg.signal > 0;
	page_size = (size_t)sysconf(_SC_PAGESIZE);
	brk_start = (uintptr_t)sbrk(0);
	owner = getpid();
	rec_perfmap_init();
	dl_iterate_phdr(text_range, (void *)(uintptr_t)init);
	dl_iterate_phdr(runtime_range, NULL);
	if (!rec_table_init()) {
		rec_say("cannot map memory for its tables; not recording",
			NULL);
		atomic_store(&state, ST_OFF);
		rec_busy--;
		return;
	}
	rec_unwind_init();
	rec_count_init();
	{
		/* backtrace() (the unwinder's fallback) sets itself up on
		 * first use: now, where the program has libgcc. */
		void *warm[4];

		if (rec_unwind_ready(link_unwinder))
			backtrace(warm, 4);
	}
	rec_unwind_saved_load(rec_cfg.prefix);
	rec_cfg.active = true;
	atomic_store(&state, ST_READY);
	rec_busy--;
}

/* ---- triggers ---- */

static volatile sig_atomic_t signalled;
static uint64_t last_alloc;   /* rec_allocated at the last dump */
static int64_t last_inuse;
static double last_time;
static atomic_bool started;   /* the constructor ran: dumps may start */

static void on_signal(int sig)
{
	(void)sig;
	signalled = 1;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Peaks: the first dump when 1 MiB is in use, the next when twice what
 * the last one had is.  NEXT_PEAK is where the next one is due; whoever
 * takes a peak sets it to TAKEN until its dump is written, so that the
 * hooks polling in several threads at once write it once.
 */
#define PEAK_FIRST ((int64_t)1 << 20)
#define TAKEN INT64_MAX
static const char peak[] = "peak";
static atomic_int_fast64_t next_peak = PEAK_FIRST;
static int64_t peak_taken_at; /* the NEXT_PEAK its taker saw */

static bool take_peak(void)
{
	int_fast64_t at = atomic_load_explicit(&next_peak,
					       memory_order_relaxed);

	if (at == TAKEN ||
	    !atomic_compare_exchange_strong(&next_peak, &at, TAKEN))
		return false;
	peak_taken_at = at;
	return true;
}

/* The peak's dump is written: the next is due at twice its in use. */
static void peak_written(void)
{
	int64_t inuse = atomic_load(&rec_inuse);

	if (inuse < peak_taken_at)
		inuse = peak_taken_at;
	atomic_store(&next_peak, inuse > TAKEN / 2 ? TAKEN - 1 : 2 * inuse);
}

/* Is a dump due, and why? */
static bool said_spaced;

/*
 * The program runs at least nine tenths of the time: after a dump that
 * took T seconds, no interval (nor peak) brings the next one sooner than
 * 10 T after it (a signal still does).  Said once, with what was asked
 * for.
 */
static bool too_soon(const char *trigger, double since)
{
	double gap = rec_last_dump_seconds() * 10;
	static struct rec_buf b;

	if (since >= gap)
		return false;
	/* (Nothing to say of peaks, which no one asked for by a size.) */
	if (said_spaced || trigger == peak)
		return true;
	said_spaced = true;
	rec_busy++;
	rec_buf_str(&b, "a dump takes ");
	rec_buf_seconds(&b, rec_last_dump_seconds());
	rec_buf_str(&b, " s, more than a tenth of the ");
	rec_buf_str(&b, trigger);
	if (!strcmp(trigger, "time interval")) {
		rec_buf_str(&b, " (");
		rec_buf_seconds(&b, rec_cfg.time_interval);
		rec_buf_str(&b, " s)");
	}
	rec_buf_str(&b, ": dumps come at most every ");
	rec_buf_seconds(&b, gap);
	rec_buf_str(&b, " s, so that the program runs nine tenths of the time");
	rec_buf_add(&b, "", 1);
	if (b.p)
		rec_say(b.p, NULL);
	rec_busy--;
	return true;
}

static const char *due(void)
{
	uint64_t alloc = atomic_load(&rec_allocated);
	int64_t inuse = atomic_load(&rec_inuse);
	double since = now() - last_time;
	const char *why = NULL;

	if (signalled) {
		signalled = 0;
		return "signal";
	}
	if (rec_cfg.time_interval > 0 && since >= rec_cfg.time_interval)
		why = "time interval";
	else if (rec_cfg.alloc_interval &&
		 alloc - last_alloc >= rec_cfg.alloc_interval)
		why = "allocation interval";
	else if (rec_cfg.inuse_interval &&
		 inuse - last_inuse >= (int64_t)rec_cfg.inuse_interval)
		why = "in-use interval";
	else if (rec_cfg.peaks &&
		 inuse >= atomic_load_explicit(&next_peak,
					       memory_order_relaxed))
		why = peak;
	if (!why || too_soon(why, since))
		return NULL;
	return why != peak || take_peak() ? why : NULL;
}

static void dump_now(const char *why)
{
	rec_dump(why);
	last_time = now();
	last_alloc = atomic_load(&rec_allocated);
	last_inuse = atomic_load(&rec_inuse);
	if (why == peak)
		peak_written();
}

/* ---- the dump thread ---- */

static atomic_bool stopping;
static atomic_int napping;    /* a futex word: the thread's nap */
static pthread_t dumper;
static bool have_dumper;
static atomic_bool need_dumper;
static rec_lock start_lock = REC_LOCK_INIT;

/* Sleep up to SECONDS, or until rec_stop wakes us. */
static void nap(double seconds)
{
	struct timespec ts = { 0, (long)(seconds * 1e9) };

	syscall(SYS_futex, &napping, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
}

/*
 * Is this thread the last one running in the process?  (Its main thread
 * called pthread_exit, and stays a zombie, and the others ended: without
 * the recorder's thread, the process would have exited.)
 */
static bool last_thread(void)
{
	char buf[4096], path[96], st[512];
	pid_t self = (pid_t)syscall(SYS_gettid);
	int fd = open("/proc/thread-self/..", O_RDONLY | O_DIRECTORY |
						      O_CLOEXEC);
	long n;
	bool alone = fd >= 0;

	while (alone && (n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0)
		for (long off = 0; alone && off < n;) {
			unsigned short reclen;
			const char *name = buf + off + 19, *p;
			pid_t tid = 0;
			int sfd;
			ssize_t k;

			memcpy(&reclen, buf + off + 16, sizeof(reclen));
			off += reclen;
			for (p = name; *p >= '0' && *p <= '9'; p++)
				tid = tid * 10 + (*p - '0');
			if (p == name || *p || tid == self ||
			    strlen(name) > 32)
				continue;
			/* Another thread: running, unless a zombie. */
			memcpy(path, "/proc/thread-self/../", 21);
			memcpy(path + 21, name, strlen(name));
			memcpy(path + 21 + strlen(name), "/stat", 6);
			sfd = open(path, O_RDONLY | O_CLOEXEC);
			k = sfd >= 0 ? read(sfd, st, sizeof(st) - 1) : -1;
			if (sfd >= 0)
				close(sfd);
			if (k <= 0)
				continue; /* (it just ended) */
			st[k] = 0;
			p = strrchr(st, ')');
			alone = p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
		}
	if (fd >= 0)
		close(fd);
	return alone;
}

_Atomic pid_t rec_dump_thread;
static atomic_int dumper_pending; /* started, and its id not yet set */

static void *dump_loop(void *arg)
{
	unsigned naps = 0;

	(void)arg;
	rec_busy = 1; /* nothing this thread allocates is the program's */
	atomic_store(&rec_dump_thread, (pid_t)syscall(SYS_gettid));
	atomic_store(&dumper_pending, 0);
	syscall(SYS_futex, &dumper_pending, FUTEX_WAKE_PRIVATE, INT32_MAX,
		NULL, NULL, 0); /* (see rec_dumper_known) */
	while (!atomic_load(&stopping)) {
		const char *why;

		nap(0.02);
		if (atomic_load(&stopping))
			break;
		why = due();
		if (why)
			dump_now(why);
		/* The program has ended: end as it would have, with exit(0)
		 * (which writes the last dump). */
		if (++naps % 25 == 0 && last_thread())
			exit(0);
	}
	atomic_store(&rec_dump_thread, 0);
	return NULL;
}

/*
 * Wait, if need be, until the dump thread has said its id: until then a
 * dump would take it for one of the program's and stop it with the
 * tracer (rec_stop.c), 1-2 ms, which a short process paid at its first
 * dump whenever the thread had not run yet (both cores busy, in a make).
 * (Waited for here rather than as the thread starts: by a dump it has
 * mostly run already.)
 */
void rec_dumper_known(void)
{
	/* (Bounded: in a child of clone(), say, no thread will say it.) */
	for (int i = 0; i < 20 && atomic_load(&dumper_pending); i++) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };

		syscall(SYS_futex, &dumper_pending, FUTEX_WAIT_PRIVATE, 1, &ts,
			NULL, 0);
	}
}

static void start_dumper(void)
{
	pthread_attr_t attr;
	sigset_t all, old;
#ifndef REC_TSAN
	size_t size = 256 * 1024;
#else
	size_t size = 4 << 20; /* (ThreadSanitizer's TLS is in it too) */
#endif
	void *stack = rec_alloc(size); /* the recorder's memory, as such */

	pthread_attr_init(&attr);
	if (stack)
		pthread_attr_setstack(&attr, stack, size);
	else
		pthread_attr_setstacksize(&attr, size);
	/* The program's signals are not for this thread. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rec_busy++;
	atomic_store(&dumper_pending, 1);
	have_dumper = pthread_create(&dumper, &attr, dump_loop, NULL) == 0;
	if (!have_dumper)
		atomic_store(&dumper_pending, 0);
	rec_busy--;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
}

/* ---- fork ---- */

/*
 * fork(): no lock of the recorder may be held by another thread at the
 * moment of the fork, or the child would wait for it forever.  So the
 * forking thread takes them all (a dump in progress finishes first).
 */
static void locks(bool take)
{
	if (take) {
		rec_dump_lock();
		rec_python_locks(true);
		rec_count_locks(true);
		rec_unwind_locks(true);
		rec_table_locks(true);
		rec_mem_locks(true);
	} else {
		rec_mem_locks(false);
		rec_table_locks(false);
		rec_unwind_locks(false);
		rec_count_locks(false);
		rec_python_locks(false);
		rec_dump_unlock();
	}
}

static void before_fork(void)
{
	rec_busy++;
	locks(true);
}

static void after_fork_parent(void)
{
	atomic_store(&rec_forked, true);
	locks(false);
	rec_busy--;
}

static atomic_bool teardown_dumped; /* the dump before teardown */
static bool forked_child;           /* this process is a child of fork() */
static uint64_t fork_allocated;     /* rec_count_allocated() then */

/*
 * The child keeps recording, into files of its own pid; threads do not
 * survive fork(), so it needs a dump thread of its own, which starts at
 * its next allocation (a child that only exec()s writes nothing).
 */
static void become_child(void)
{
	int_fast64_t taken = TAKEN, inuse;

	atomic_store(&rec_forked, true);
	rec_count_after_fork();
	rec_unwind_after_fork();
	rec_python_after_fork();
	rec_perfmap_after_fork();
	locks(false);
	atomic_store(&rec_dumping, false);
	have_dumper = false;
	atomic_store(&dumper_pending, 0);
	atomic_store(&rec_dump_thread, 0);
	owner = getpid();
	if (rec_cfg.active) {
		rec_dump_after_fork();
		atomic_store(&need_dumper, thread_wanted);
	}
	/* (A peak another thread of the parent had taken, to dump, is the
	 * parent's: the child's next is twice what it has now.) */
	inuse = atomic_load(&rec_inuse);
	atomic_compare_exchange_strong(&next_peak, &taken,
				       inuse > PEAK_FIRST / 2 ? 2 * inuse
							      : PEAK_FIRST);
	atomic_store(&teardown_dumped, false);
	forked_child = true;
	fork_allocated = rec_count_allocated();
}

static void after_fork_child(void)
{
	become_child();
	rec_busy--;
}

/*
 * A child made without the atfork handlers (_Fork(), clone(2)): found
 * out where it matters, by its pid.  Whatever locks it inherited taken
 * are given back (their holders are in the parent).
 */
static bool child_unannounced(void)
{
	if (!owner || getpid() == owner)
		return false;
	become_child();
	return true;
}

static void lock_stuck(void)
{
	child_unannounced();
}

static void wait_dump_slow(void)
{
	int e = errno;
	unsigned n = 0;

	while (atomic_load_explicit(&rec_dumping, memory_order_relaxed)) {
		struct timespec ts = { 0, 50 * 1000 };

		/* (A dump the parent was writing when clone() copied us.) */
		if (++n % 64 == 0 && child_unannounced())
			break;
		nanosleep(&ts, NULL);
	}
	errno = e;
}

/* ---- starting and stopping ---- */

__attribute__((constructor)) static void rec_start(void)
{
#ifdef REC_TSAN
	/* (ThreadSanitizer's runtime has started: the library needs it.) */
	rec_tsan_thread_ready = true;
	atomic_store(&rec_tsan_ready, true);
#endif
	if (atomic_load(&state) == ST_NEW)
		init();
	if (atomic_load(&state) != ST_READY)
		return;
	if (rec_cfg.signal > 0) {
		struct sigaction sa, old;

		/* A handler the program (or a library) has is kept. */
		if (sigaction(rec_cfg.signal, NULL, &old) == 0 &&
		    (old.sa_flags & SA_SIGINFO || (old.sa_handler != SIG_DFL &&
						   old.sa_handler != SIG_IGN))) {
			char num[16];
			int k = sizeof(num) - 1, v = rec_cfg.signal;

			num[k] = 0;
			do
				num[--k] = (char)('0' + v % 10);
			while ((v /= 10) && k);
			rec_say("signal ", num + k, " has a handler already; "
				"no dumps on that signal", NULL);
			rec_cfg.signal = 0;
		} else {
			memset(&sa, 0, sizeof(sa));
			sa.sa_handler = on_signal;
			sa.sa_flags = SA_RESTART;
			sigaction(rec_cfg.signal, &sa, NULL);
		}
	}
	thread_wanted = rec_cfg.time_interval > 0 || rec_cfg.signal > 0;
	rec_python_init();
	rec_crash_init();
	pthread_atfork(before_fork, after_fork_parent, after_fork_child);
	rec_lock_stuck = lock_stuck;
	last_time = now();
	atomic_store(&started, true);
	/*
	 * The thread starts now, not at the program's first allocation: a
	 * program that allocates, then computes or waits for a long time,
	 * gets its dumps all the same.  (A program that must stay single-
	 * threaded is recorded with no time interval and no signal.)
	 */
	if (thread_wanted)
		start_dumper();
}

__attribute__((destructor)) static void rec_stop(void)
{
	if (atomic_load(&state) != ST_READY)
		return;
	child_unannounced();
	atomic_store(&stopping, true);
	if (have_dumper) {
		atomic_store(&napping, 1);
		syscall(SYS_futex, &napping, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
		pthread_join(dumper, NULL);
	}
	rec_busy++;
	rec_dump("Exiting");
	rec_unwind_saved_save();
	rec_busy--;
}

/*
 * (Not from the recorder's own work: its dump thread ends the process
 * with exit(0) when the program has ended otherwise.  A child of _Fork()
 * or clone() is found out here at the latest; it had allocated nothing
 * that the recorder knew of as its own.  main() returning into exit(),
 * or threads calling it together: the first one dumps.)
 */
void rec_dump_before_teardown(const char *reason)
{
	if (atomic_load(&state) != ST_READY || !atomic_load(&started) ||
	    rec_busy)
		return;
	child_unannounced();
	if ((forked_child && rec_count_allocated() == fork_allocated) ||
	    atomic_exchange(&teardown_dumped, true))
		return;
	rec_busy++;
	rec_dump(reason);
	rec_busy--;
}

void rec_dump_crash(const char *signame)
{
	char reason[32] = "crash: ";

	if (atomic_load(&state) != ST_READY || !atomic_load(&started))
		return;
	if (rec_busy) {
		rec_say("a crash (", signame, ") inside the recorder's own "
			"work: no dump of it", NULL);
		return;
	}
	child_unannounced();
	strncat(reason, signame, sizeof(reason) - strlen(reason) - 1);
	rec_busy++;
	if (!rec_dump_within(reason, 200))
		rec_say("a crash (", signame, ") while another dump held on: "
			"no dump of it", NULL);
	rec_busy--;
}

/*
 * From the hooks, outside any lock: start the dump thread when one is
 * wanted; without one, see to the allocation triggers every so often:
 * every 1024 calls, each KiB of a block counting as one more, so that
 * a program of few but big blocks has its peaks seen too.
 */
static __thread size_t polls;

static __attribute__((noinline)) void poll_now(void)
{
	const char *why;

	polls = 0;
	if (atomic_load_explicit(&need_dumper, memory_order_relaxed)) {
		rec_lock_take(&start_lock);
		if (atomic_exchange(&need_dumper, false))
			start_dumper();
		rec_lock_give(&start_lock);
		return;
	}
	why = due();
	if (why && !child_unannounced()) {
		rec_busy++;
		dump_now(why);
		rec_busy--;
	}
}

/* (Inline, as the hooks' path: a few loads, mostly.) */
static inline void poll_dumper(size_t size)
{
	if (!rec_busy && atomic_load_explicit(&started, memory_order_relaxed) &&
	    (atomic_load_explicit(&need_dumper, memory_order_relaxed) ||
	     (!thread_wanted && (polls += 1 + (size >> 10)) >= 1024)))
		poll_now();
}

/* ---- for the other files' hooks ---- */

bool rec_hooks_tracking(void)
{
	return tracking();
}

void rec_hooks_wait_dump_slow(void)
{
	wait_dump_slow();
}

void rec_hooks_poll(size_t size)
{
	poll_dumper(size);
}

void rec_hooks_poll_calls(size_t calls)
{
	if (!rec_busy && atomic_load_explicit(&started, memory_order_relaxed) &&
	    (atomic_load_explicit(&need_dumper, memory_order_relaxed) ||
	     (!thread_wanted && (polls += calls) >= 1024)))
		poll_now();
}

/*
 * Thread stacks: glibc maps them with its internal mmap, which no hook
 * sees, so pthread_create() is hooked instead.  The new thread records
 * its own stack mapping (guard page, stack, its descriptor and TLS above)
 * as a mapping of the pthread_create() call, under HEAP_PROFILE_MMAP like
 * any other, and takes it back when it ends; glibc may keep the mapping
 * for a later thread, and until then it is unhooked memory again.  A stack
 * the program supplied (pthread_attr_setstack) is its own memory, counted
 * where it came from, and is left alone.
 */
struct thread_start {
	void *(*fn)(void *);
	void *arg;
	uint32_t bucket;
	struct thread_start *next;      /* in the free list */
};

static rec_lock starts_lock;
static struct thread_start *starts_free;
static int (*real_pthread_create)(pthread_t *, const pthread_attr_t *,
				  void *(*)(void *), void *);

static struct thread_start *start_get(void)
{
	struct thread_start *t;

	rec_lock_take(&starts_lock);
	t = starts_free;
	if (t)
		starts_free = t->next;
	rec_lock_give(&starts_lock);
	return t ? t : rec_alloc(sizeof(*t));
}

static void start_put(struct thread_start *t)
{
	rec_lock_take(&starts_lock);
	t->next = starts_free;
	starts_free = t;
	rec_lock_give(&starts_lock);
}

static void stack_gone(void *range)
{
	const uintptr_t *r = range;

	if (r[1] > r[0])
		rec_map_del(r[0], r[1]);
}

static void *thread_main(void *p)
{
	struct thread_start *t = p;
	void *(*fn)(void *) = t->fn;
	void *arg = t->arg, *ret;
	uint32_t bucket = t->bucket;
	uintptr_t range[2] = { 0, 0 };
	pthread_attr_t a;

	start_put(t);
	/* (It mallocs: not for the program's counts.) */
	rec_busy++;
	if (pthread_getattr_np(pthread_self(), &a) == 0) {
		void *lo;
		size_t size, guard = 0;

		if (pthread_attr_getstack(&a, &lo, &size) == 0) {
			pthread_attr_getguardsize(&a, &guard);
			range[0] = ((uintptr_t)lo - guard) &
				   ~(uintptr_t)(page_size - 1);
			range[1] = page_up((uintptr_t)lo + size);
		}
		pthread_attr_destroy(&a);
	}
	rec_busy--;
	if (range[1] > range[0] && atomic_load(&state) == ST_READY)
		rec_map_add(range[0], range[1], bucket);
	else
		range[0] = range[1] = 0;
	/* (Run also when the thread is cancelled or calls pthread_exit.) */
	pthread_cleanup_push(stack_gone, range);
	ret = fn(arg);
	pthread_cleanup_pop(1);
	return ret;
}

EXPORT int pthread_create(pthread_t *thread, const pthread_attr_t *attr,
			  void *(*fn)(void *), void *arg)
{
	struct thread_start *t = NULL;
	struct rec_bucket *b;
	uintptr_t frames[REC_MAX_DEPTH];
	unsigned n;
	void *own = NULL;
	size_t size = 0;
	int rc;

	if (!real_pthread_create) {
		rec_busy++;
		real_pthread_create =
			(int (*)(pthread_t *, const pthread_attr_t *,
				 void *(*)(void *), void *))
				dlsym(RTLD_NEXT, "pthread_create");
		rec_busy--;
		if (!real_pthread_create)
			return ENOSYS;
	}
	/* glibc gives the stack's top minus its size: 0 - size (or 0) when
	 * no stack was set, which no real stack's top can be. */
	if (attr && pthread_attr_getstack(attr, &own, &size) == 0 &&
	    (uintptr_t)own + size != 0)
		return real_pthread_create(thread, attr, fn, arg);
	if (!rec_cfg.mmap || !tracking())
		return real_pthread_create(thread, attr, fn, arg);
	/*
	 * The stack of the call, under a frame in glibc's pthread_create
	 * (as a return address: one byte in), as the mapping would have
	 * had if glibc's mmap were hooked.
	 */
	rec_busy++;
	frames[0] = (uintptr_t)real_pthread_create + 1;
	n = rec_unwind(frames + 1, rec_cfg.depth - 1, text_lo, text_hi);
	b = rec_bucket_get(REC_MMAP, frames, n + 1);
	if (b)
		t = start_get();
	if (t) {
		rec_count_alloc(b->id, 0, 0);
		*t = (struct thread_start){ fn, arg, b->id, NULL };
	}
	rec_busy--;
	if (!t)
		return real_pthread_create(thread, attr, fn, arg);
	rc = real_pthread_create(thread, attr, thread_main, t);
	if (rc)
		start_put(t);
	return rc;
}

/* dlclose(): name the library's code in .maps before it goes. */
EXPORT int dlclose(void *handle)
{
	static int (*real)(void *);
	int rc;

	if (!real) {
		rec_busy++;
		real = (int (*)(void *))dlsym(RTLD_NEXT, "dlclose");
		rec_busy--;
	}
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	if (atomic_load(&state) != ST_READY || rec_busy)
		return real(handle);
	rec_busy++;
	rec_maps_remember();
	rec_busy--;
	/* What the unwinder knows of its code goes, before and after. */
	rec_unwind_forget();
	rc = real(handle);
	rec_unwind_forget();
	return rc;
}

bool rec_hooks_locks_free(void)
{
	return rec_lock_free(&start_lock) && rec_lock_free(&starts_lock);
}
