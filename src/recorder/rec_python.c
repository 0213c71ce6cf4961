/*
 * CPython in the recorded process: finding its interpreter, its Python
 * frames in the stacks (rec_pyframes.c reads them), and the objects its
 * allocator (pymalloc) serves counted one by one.
 *
 * Frames.  A stack the native walk finds has each eval-loop frame
 * (_PyEval_EvalFrameDefault) replaced by the Python frames it was
 * running: a hybrid stack, a C extension called from Python and Python
 * called back from C all in order.
 *
 * Objects.  Requests of 512 bytes or less never reach malloc: pymalloc
 * carves them out of arenas it maps.  The recorder wraps the object and
 * memory domains' allocator (PyMem_SetAllocator, the API tracemalloc
 * uses) once the interpreter runs: a small object gets a 16-byte header
 * of its own in front (its size and the counters of its bucket) and a
 * stack of its Python frames and the C function that asked for it; the
 * native frames between are not walked (the walk through the interpreter
 * costs more than the rest: a pymalloc allocation is a few dozen
 * nanoseconds).  Larger requests go on to malloc, whose hook records them
 * with a hybrid stack.  The arenas pymalloc maps, all of them from the
 * start (its arena allocator is wrapped from the recorder's constructor
 * on), are its arenas (dmprof_python_object_arena), and what they hold
 * beyond the objects is a line of its own (dmprof_python_object_free):
 * every byte adds up.
 *
 * The interpreter's structures are found through symbols the stripped
 * binaries still export (_PyRuntime, _PyEval_EvalFrameDefault, Py_Version,
 * PyCode_Type, PyGILState_GetThisThreadState, PyMem_GetAllocator) and a
 * table of offsets per version (include/python_offsets.h).  A version
 * without a row is said once and gets native frames only.
 */
#include "rec.h"
#include "python_offsets.h"

#include <dlfcn.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* ---- the interpreter ---- */

/* PyMemAllocatorEx and the domains (Include/cpython/pymem.h). */
struct py_allocator {
	void *ctx;
	void *(*malloc)(void *ctx, size_t size);
	void *(*calloc)(void *ctx, size_t nelem, size_t elsize);
	void *(*realloc)(void *ctx, void *ptr, size_t new_size);
	void (*free)(void *ctx, void *ptr);
};
enum { PY_DOMAIN_MEM = 1, PY_DOMAIN_OBJ = 2 };
/* PyObjectArenaAllocator */
struct py_arenas {
	void *ctx;
	void *(*alloc)(void *ctx, size_t size);
	void (*free)(void *ctx, void *ptr, size_t size);
};
#define PY_SMALL 512 /* pymalloc's SMALL_REQUEST_THRESHOLD */

/* Where the interpreter is: not found (or no frames), not yet running
 * (nothing wrapped), running, finalizing (its dump before teardown
 * taken). */
enum { PY_NONE, PY_WAITING = REC_PYTHON_WAITING, PY_ON, PY_DONE };

atomic_int rec_python_state;

static void (*get_allocator)(int domain, struct py_allocator *a);
static void (*set_allocator)(int domain, struct py_allocator *a);
static void (*get_arenas)(struct py_arenas *a);
static void (*set_arenas)(struct py_arenas *a);
static struct py_allocator orig_mem, orig_obj;
static struct py_arenas orig_arenas;
static char version[32];
static char binary[4096]; /* the file the interpreter's code is in */

/*
 * The dump before teardown of a Python program: once Py_FinalizeEx has
 * run the atexit handlers and says the runtime is finalizing, before it
 * clears the modules and frees the program's objects (main() returns
 * after that: too late for the C rule's dump).  Seen at the first call
 * of the allocators after it.
 */
static const _Atomic uintptr_t *finalizing, *tstate_current; /* _PyRuntime's */

static inline void teardown_check(void)
{
	if (__builtin_expect(atomic_load_explicit(finalizing,
						  memory_order_relaxed) != 0,
			     0) &&
	    atomic_exchange(&rec_python_state, PY_DONE) == PY_ON)
		rec_dump_before_teardown("python finalizing");
}

/* ---- pymalloc's objects ---- */

/*
 * A small object's header: its size and the cell it is counted in (its
 * bucket's in the thread that made it), and a check word of another tag
 * than a malloc block's (rec_hooks.c), so that neither takes the other's
 * for its own (a small object pymalloc could not place goes to malloc,
 * whose block has a header there too).
 */
struct py_hdr {
	struct rec_cell *cell; /* NULL: not counted */
	uint32_t size;
	uint32_t check;
};

#define PY_TAG 0x7079686fu

static uint32_t py_check(const struct py_hdr *h)
{
	uint64_t x = (uintptr_t)h->cell ^ ((uint64_t)h->size << 48) ^
		     (uintptr_t)h;

	x *= 0x9e3779b97f4a7c15ULL;
	return (uint32_t)(x >> 32) ^ PY_TAG;
}

static struct py_hdr *py_hdr_of(void *p)
{
	struct py_hdr *h = (struct py_hdr *)p - 1;

	return h->check == py_check(h) ? h : NULL;
}

/* This thread is inside pymalloc for the recorder: the arenas it maps
 * now are its arenas (rec_hooks.c's mmap hook asks). */
__thread int rec_python_inside;

/*
 * Each thread's chains of Python frames lately run, by their innermost
 * frame, and in each the stacks of the objects made under it, by the C
 * function that asked and the instruction the innermost frame ran.
 *
 * A chain is as it was while each frame's previous one and instruction
 * are: the frames' addresses are the chain's own, so that the words to
 * compare are known before any is read, and the processor reads them at
 * once, not one frame after the other as a walk does.  (Each frame is
 * read only once the one inside it says it is its previous: a frame gone,
 * its memory unmapped, is never read.)  While no code object is freed,
 * the same instructions are the same names.  A miss of a chain costs a
 * walk of the frames; of a stack, the walk that names them and a probe of
 * the recorder's table of every stack.  (Kept with the thread's counters,
 * whose cells they hold: rec_count_scratch.)
 */
struct site {
	uintptr_t caller, instr;
	struct rec_bucket *b;
	struct rec_cell *cell; /* b's counters in this thread */
};
#define SITE_BITS 6
#define SITE_MASK ((1u << SITE_BITS) - 1)
#define SITE_WAYS 4 /* the slots a site may take, from its hash's on */
struct chain {
	uintptr_t first; /* its innermost frame */
	uint32_t n;      /* frames (UINT32_MAX: none kept here) */
	uint64_t freed;  /* rec_pyframes_codes_freed when made */
	uint32_t next;   /* the way a miss takes next */
	bool whole;      /* the chain ends at frame N - 1 (not cut) */
	bool named;      /* chain_names holds its frames' names */
	struct site site[1 << SITE_BITS];
	struct {
		uintptr_t at, instr;
	} frame[]; /* N frames: their addresses and instructions; then,
		      rec_cfg.depth of them on, their names (chain_names) */
};
#define SET_BITS 2
#define SETS (1 << SET_BITS)
#define WAYS 4
struct chains {
	struct chain *last;  /* the chain of the thread's last object */
	uint8_t next[SETS];  /* the way a miss takes next */
	/* then the chains, CHAIN_SIZE bytes each */
};
static size_t chain_size, chains_size;
static unsigned off_prev, off_instr; /* the frame's (python_offsets) */
static unsigned off_cframe, off_current; /* a thread state's, a cframe's */
static __thread struct chains *chains;

static inline struct chain *chain_at(struct chains *t, unsigned set,
				     unsigned way)
{
	return (struct chain *)((char *)(t + 1) +
				(set * WAYS + way) * chain_size);
}

static inline uintptr_t frame_word(uintptr_t f, unsigned at)
{
	return *(const uintptr_t *)(f + at);
}

/* The innermost frame of TS, the thread state holding the GIL (0: none;
 * read as rec_pyframes_first does, without its checks: the runtime's
 * current thread state and its cframe are the interpreter's own). */
static inline uintptr_t first_frame(uintptr_t ts)
{
	uintptr_t cf = ts ? frame_word(ts, off_cframe) : 0;

	return cf ? frame_word(cf, off_current) : 0;
}

/*
 * Is C the chain from its first frame on as it was?  Each word is read at
 * an address from the chain's own array, not at the one the word before
 * gave (the same, where the chain is as it was): the loads wait for the
 * branches before them, not for each other's data, and the processor has
 * them in flight together.  (The asm keeps the compiler from taking the
 * address from the word just compared equal to it: a walk again, one
 * load after the other.  With the frames in the cache, as they mostly
 * are, dictstr of make bench took as long either way.)
 */
static inline bool chain_as_was(const struct chain *c)
{
	uintptr_t f = c->frame[0].at;

	for (unsigned i = 1; i < c->n; i++) {
		uintptr_t at = c->frame[i].at;

		if (frame_word(f, off_prev) != at)
			return false;
		__asm__("" : "+r"(at));
		if (frame_word(at, off_instr) != c->frame[i].instr)
			return false;
		f = at;
	}
	return !c->whole || !c->n || !frame_word(f, off_prev);
}

/* The chain from F (made now in a way of SET); NULL where a frame fails
 * a check (such a chain is walked at each object). */
static __attribute__((noinline)) struct chain *
chain_make(struct chains *t, unsigned set, uintptr_t f, uint64_t freed)
{
	unsigned way = t->next[set]++ % WAYS, max = rec_cfg.depth - 1;
	struct chain *c = chain_at(t, set, way);
	uintptr_t frames[REC_MAX_DEPTH], instrs[REC_MAX_DEPTH];
	bool whole;
	unsigned n = rec_pyframes_list(f, max, frames, instrs, &whole);

	if (t->last == c)
		t->last = NULL;
	memset(c, 0, sizeof(*c));
	if (n > max) {
		c->n = UINT32_MAX;
		return NULL;
	}
	c->first = f;
	c->n = n;
	c->freed = freed;
	c->whole = whole;
	for (unsigned i = 0; i < n; i++) {
		c->frame[i].at = frames[i];
		c->frame[i].instr = instrs[i];
	}
	return c;
}

/*
 * The names of C's frames (the addresses a walk gives them), once a
 * stack was made under it: while the chain is as it was, its frames
 * after the first run the same code objects at the same instructions,
 * none freed since, so that a new site under it names its first frame
 * only (a Python program's start makes thousands of stacks, most of
 * them under chains it has: python3 -c pass 7,300).
 */
static inline uintptr_t *chain_names(struct chain *c)
{
	return (uintptr_t *)(c->frame + rec_cfg.depth);
}

static inline unsigned site_set(uintptr_t caller, uintptr_t instr)
{
	return (unsigned)(((caller ^ instr * 31) * 0x9e3779b97f4a7c15ULL) >>
			  (64 - SITE_BITS));
}

/* The stack from F, asked for at CALLER, named: its bucket, its cell in
 * *CELL, kept as a site of C (if any). */
static __attribute__((noinline)) struct rec_bucket *
site_make(struct chain *c, uintptr_t caller, uintptr_t f, uintptr_t instr,
	  struct rec_cell **cell)
{
	uintptr_t frames[REC_MAX_DEPTH], g = f;
	bool broken = false;
	struct rec_bucket *b;
	struct site *s;
	unsigned n;

	frames[0] = caller;
	if (c && c->named && c->n >= 1 &&
	    rec_pyframes_walk(&g, frames + 1, 1, false, &broken) == 1 &&
	    !broken) {
		memcpy(frames + 2, chain_names(c) + 1,
		       (c->n - 1) * sizeof(*frames));
		n = 1 + c->n;
	} else {
		broken = false;
		n = 1 + rec_pyframes_walk(&f, frames + 1, rec_cfg.depth - 1,
					  false, &broken);
		if (c && !broken && n == 1 + c->n) {
			memcpy(chain_names(c), frames + 1,
			       c->n * sizeof(*frames));
			c->named = true;
		}
	}
	rec_busy++;
	b = rec_bucket_get(REC_PYOBJ, frames, n);
	*cell = b ? rec_count_cell(b->id) : NULL;
	rec_busy--;
	if (!b || !*cell)
		return NULL;
	if (c) {
		unsigned at = site_set(caller, instr), i;

		/* (A free slot of its window, else the window's next.) */
		for (i = 0; i < SITE_WAYS && c->site[(at + i) & SITE_MASK].b;
		     i++)
			;
		if (i == SITE_WAYS)
			i = c->next++ % SITE_WAYS;
		s = &c->site[(at + i) & SITE_MASK];
		*s = (struct site){ caller, instr, b, *cell };
	}
	return b;
}

/* The chain from F: the thread's last one, if it is F's as it was (its
 * words are read while F is, from the chain's own first frame: neither
 * waits for the other), else one of F's set. */
static inline struct chain *chain_of(struct chains *t, uintptr_t f,
				     uint64_t freed, uintptr_t *first)
{
	struct chain *c = t->last;
	unsigned set;

	if (__builtin_expect(c != NULL, 1)) {
		uintptr_t g = c->first;

		/* (G, not F: the compiler may not take one for the other.) */
		__asm__("" : "+r"(g));
		if (c->first == f && c->freed == freed && chain_as_was(c)) {
			*first = g;
			return c;
		}
	}
	*first = f;
	set = (unsigned)((f * 0x9e3779b97f4a7c15ULL) >> (64 - SET_BITS));
	for (unsigned way = 0; way < WAYS; way++) {
		c = chain_at(t, set, way);
		if (c->first == f && c->n != UINT32_MAX && c->freed == freed &&
		    chain_as_was(c))
			return t->last = c;
	}
	c = chain_make(t, set, f, freed);
	return c ? (t->last = c) : NULL;
}

/* The bucket of an object allocated now, asked for by code at CALLER, and
 * its counters in *CELL (NULL: none). */
static inline struct rec_bucket *object_bucket(uintptr_t caller,
					       struct rec_cell **cell)
{
	uintptr_t ts = atomic_load_explicit(tstate_current,
					    memory_order_relaxed);
	uint64_t freed = atomic_load_explicit(&rec_pyframes_codes_freed,
					      memory_order_relaxed);
	uintptr_t f = first_frame(ts), instr;
	struct chains *t = chains;
	struct chain *c;

	if (__builtin_expect(!t, 0)) {
		chains = t = rec_count_scratch(chains_size);
		if (!t)
			return NULL;
	}
	c = chain_of(t, f, freed, &f);
	/* (F is read once a walk found it a frame.) */
	instr = c && f ? frame_word(f, off_instr) : 0;
	for (unsigned i = 0, at = site_set(caller, instr); c && i < SITE_WAYS;
	     i++) {
		const struct site *s = &c->site[(at + i) & SITE_MASK];

		if (s->caller == caller && s->instr == instr && s->b) {
			*cell = s->cell;
			return s->b;
		}
	}
	return site_make(c, caller, f, instr, cell);
}

/* Objects since the last poll: every call of the object allocator holds
 * the GIL, so one count serves all threads (no thread-local to reach). */
static unsigned polls;
static void lists_check(void);

static __attribute__((noinline)) void object_poll(void)
{
	polls = 0;
	lists_check();
	rec_hooks_poll_calls(64);
}

/* H, a block of N + 16 bytes, as an object of N bytes counted in CELL
 * (NULL: none). */
static inline void *object_made(struct py_hdr *h, size_t n,
				struct rec_cell *cell)
{
	h->cell = cell;
	h->size = (uint32_t)n;
	h->check = py_check(h);
	if (cell)
		rec_count_gil_alloc(cell, n);
	/* (The dump triggers every 64 objects, as if each one was looked
	 * at: objects are small.) */
	if (__builtin_expect(++polls == 64, 0))
		object_poll();
	return h + 1;
}

/* object() where the thread's last chain or its sites do not answer. */
static __attribute__((noinline)) void *object_named(void *raw, size_t n,
						    uintptr_t caller)
{
	struct rec_cell *cell = NULL;

	if (!object_bucket(caller, &cell))
		cell = NULL;
	return object_made(raw, n, cell);
}

/*
 * RAW, a block of N + 16 bytes the wrapped allocator just made (NULL:
 * none), as an object of N bytes asked for at CALLER.  Most objects are
 * made under the chain of the thread's last one, at a site it has:
 * that path alone is here, with few registers to save; the rest is
 * object_named's.
 */
static inline __attribute__((always_inline)) void *
object_inline(void *raw, size_t n, uintptr_t caller)
{
	const struct chains *t = chains;
	const struct chain *c;
	uintptr_t f, g, instr;
	uint64_t freed;
	unsigned at;

	if (__builtin_expect(!raw, 0))
		return NULL;
	if (__builtin_expect(!t || !(c = t->last), 0))
		return object_named(raw, n, caller);
	f = first_frame(atomic_load_explicit(tstate_current,
					     memory_order_relaxed));
	freed = atomic_load_explicit(&rec_pyframes_codes_freed,
				     memory_order_relaxed);
	g = c->first;
	/* (G, not F: the compiler may not take one for the other.) */
	__asm__("" : "+r"(g));
	if (__builtin_expect(c->first != f || !f || c->freed != freed ||
				     !chain_as_was(c),
			     0))
		return object_named(raw, n, caller);
	instr = frame_word(g, off_instr);
	at = site_set(caller, instr);
	for (unsigned i = 0; i < SITE_WAYS; i++) {
		const struct site *s = &c->site[(at + i) & SITE_MASK];

		if (s->caller == caller && s->instr == instr && s->b)
			return object_made(raw, n, s->cell);
	}
	return object_named(raw, n, caller);
}

/* The same, called (object_inline is py_malloc's, the most called). */
static __attribute__((noinline)) void *object(void *raw, size_t n,
					      uintptr_t caller)
{
	return object_inline(raw, n, caller);
}

static void forget(struct py_hdr *h)
{
	if (h->cell)
		rec_count_gil_free(h->cell, h->size);
	h->check = 0;
}

/* The wrapped call CALL, with the malloc hooks off in this thread (a
 * block pymalloc could not place itself is counted here, not there; the
 * array of arenas pymalloc grows with malloc is its own, not the line's
 * that asked for an object then: tracemalloc does not trace it either). */
#define BUSY(call) BUSY_IF(true, call)
/*
 * The same where COND holds.  pymalloc's free calls malloc's free only
 * for a block it did not place: a free of PLACED bytes or less, header and
 * the debug hooks' 32 bytes (PYTHONMALLOC=debug) included, needs no guard (two
 * writes of a thread-local fewer for most objects; json of make bench
 * -2%).  (An arena it gives back goes through the arena allocator,
 * INSIDE.)
 */
#define PLACED (PY_SMALL - sizeof(struct py_hdr) - 32)
#define BUSY_IF(cond, call)                                                  \
	({                                                                   \
		bool b_ = (cond);                                            \
		if (b_)                                                      \
			rec_busy++;                                          \
		__typeof__(call) r_ = (call);                                \
		if (b_)                                                      \
			rec_busy--;                                          \
		r_;                                                          \
	})
/* The same, in pymalloc's arena allocator: the arena mapped then is
 * noted as one, not as a mapping of the program's. */
#define INSIDE(call)                                                         \
	({                                                                   \
		rec_busy++;                                                  \
		rec_python_inside++;                                         \
		__typeof__(call) r_ = (call);                                \
		rec_python_inside--;                                         \
		rec_busy--;                                                  \
		r_;                                                          \
	})

/* (Wrapped only once the recorder tracks: then only its own work is
 * not tracked.) */
static inline bool wanted(size_t n)
{
	return n <= PY_SMALL && !rec_busy;
}

static void *py_malloc(void *ctx, size_t n)
{
	struct py_allocator *o = ctx;
	uintptr_t caller = (uintptr_t)__builtin_return_address(0);

	rec_hooks_wait_dump();
	if (!wanted(n))
		return o->malloc(o->ctx, n);
	return object_inline(BUSY(o->malloc(o->ctx,
					    n + sizeof(struct py_hdr))),
			     n, caller);
}

static void *py_calloc(void *ctx, size_t k, size_t size)
{
	struct py_allocator *o = ctx;
	uintptr_t caller = (uintptr_t)__builtin_return_address(0);
	size_t n;

	rec_hooks_wait_dump();
	if (__builtin_mul_overflow(k, size, &n) || !wanted(n))
		return o->calloc(o->ctx, k, size);
	return object(BUSY(o->calloc(o->ctx, 1, n + sizeof(struct py_hdr))),
		      n, caller);
}

static void py_free(void *ctx, void *p)
{
	struct py_allocator *o = ctx;
	struct py_hdr *h;

	if (!p)
		return;
	rec_hooks_wait_dump();
	teardown_check();
	h = py_hdr_of(p);
	if (!h) {
		o->free(o->ctx, p); /* not one of ours: as if unwrapped */
		return;
	}
	forget(h);
	BUSY_IF(h->size > PLACED, (o->free(o->ctx, h), 0));
}

static void *py_realloc(void *ctx, void *p, size_t n)
{
	struct py_allocator *o = ctx;
	uintptr_t caller = (uintptr_t)__builtin_return_address(0);
	struct py_hdr *h, saved;
	void *q;

	rec_hooks_wait_dump();
	if (!p)
		return py_malloc(ctx, n);
	h = py_hdr_of(p);
	if (!h)
		return o->realloc(o->ctx, p, n);
	saved = *h;
	if (!wanted(n)) {
		/* Ours no more: a block of the allocator's (or malloc's). */
		q = o->malloc(o->ctx, n ? n : 1);
		if (!q)
			return NULL;
		memcpy(q, p, saved.size < n ? saved.size : n);
		forget(h);
		BUSY_IF(saved.size > PLACED, (o->free(o->ctx, h), 0));
		return q;
	}
	q = BUSY(o->realloc(o->ctx, h, n + sizeof(struct py_hdr)));
	if (!q)
		return NULL; /* the old block as it was */
	forget(&saved);
	return object_inline(q, n, caller);
}

/*
 * Arenas pymalloc gave back, kept for the next it asks for: a program
 * that drops a structure and builds the next one (a round of work) has
 * pymalloc unmap arenas and map them again, each faulted in afresh.  At
 * most KEPT_MAX of them, and no more than a quarter of the arenas in use
 * beyond KEPT_FLOOR, so that what a program gives back mostly goes; they
 * stay pymalloc's mappings, their bytes its free ones (dictstr of make
 * bench, where a round frees what the next one makes: 1.53x -> 1.47x).
 * pymalloc calls these with the GIL held.
 */
#define KEPT_MAX 16
#define KEPT_FLOOR (4u << 20)
static struct {
	void *p;
	size_t size;
} kept[KEPT_MAX];
static unsigned nkept;
static size_t kept_bytes, arena_bytes; /* kept; in pymalloc's hands */

/*
 * pymalloc's arenas, as it maps and unmaps them.  Each is faulted in
 * whole at once (MADV_POPULATE_WRITE, Linux 5.14; older kernels refuse
 * it, and the arena is faulted page by page as before): the headers make
 * every object a size class larger, and as many more page faults, one
 * trap each, cost a program of small objects more than the headers'
 * writes do (dictstr of make bench: 1.61x -> 1.53x).  What that adds to
 * the Rss is the part of the newest arena pymalloc has not carved yet
 * (it maps an arena only when every pool of the others is in use): at
 * most one MiB, counted as pymalloc's free bytes.
 */
static void *arena_alloc(void *ctx, size_t size)
{
	struct py_arenas *o = ctx;
	void *p;

	for (unsigned i = nkept; i-- > 0;)
		if (kept[i].size == size) {
			p = kept[i].p;
			kept[i] = kept[--nkept];
			kept_bytes -= size;
			arena_bytes += size;
			return p;
		}
	p = INSIDE(o->alloc(o->ctx, size));
	if (p)
		arena_bytes += size;
#ifdef MADV_POPULATE_WRITE
	if (p)
		(void)madvise(p, size, MADV_POPULATE_WRITE);
#endif
	if (p && rec_python_arena_bucket)
		rec_map_add((uintptr_t)p, (uintptr_t)p + size,
			    rec_python_arena_bucket->id);
	return p;
}

static void arena_free(void *ctx, void *p, size_t size)
{
	struct py_arenas *o = ctx;

	if (!p)
		return;
	arena_bytes = arena_bytes > size ? arena_bytes - size : 0;
	rec_map_del((uintptr_t)p, (uintptr_t)p + size);
	if (nkept < KEPT_MAX && rec_python_arena_bucket &&
	    kept_bytes + size <= KEPT_FLOOR + arena_bytes / 4) {
		/* (One pymalloc mapped before the recorder wrapped it is
		 * noted as an arena now.) */
		rec_map_add((uintptr_t)p, (uintptr_t)p + size,
			    rec_python_arena_bucket->id);
		kept[nkept].p = p;
		kept[nkept++].size = size;
		kept_bytes += size;
		return;
	}
	INSIDE((o->free(o->ctx, p, size), 0));
}

/* ---- free lists ---- */

/*
 * CPython keeps dicts, lists, tuples and floats it is done with on free
 * lists, and gives them out again without asking its allocator: an
 * object reborn so would keep the stack of its first life (a dict made
 * for a moment on one line, kept by the next one).  tracemalloc gives it
 * its new stack (_Py_NewReference calls it back, a call inside the
 * interpreter no preload library can reach); the recorder lets none of
 * them wait on a free list instead, so that each is allocated afresh,
 * through the hook.  A dict or list its tp_dealloc (wrapped) put on its
 * list is taken back off and freed (an array and its count: were the
 * count kept at its most, the next new one would be taken from it).  The
 * tuples' lists and the floats' (linked lists, taken from while not
 * empty: the eval loop frees floats past their type) are emptied and
 * their counts set to their most, so that none is put on them, with no
 * wrapper; again whenever a full collection has cleared them (CPython
 * clears them all at once: seen within 64 objects).  What stays as
 * CPython keeps it: the dict keys' list (tracemalloc keeps their first
 * stack too), the rarer lists (async generators', contexts').
 */
typedef void (*dealloc_fn)(void *op);
static const struct python_offsets *off;
static char *dict_type, *list_type, *tuple_type, *float_type; /* Py*_Type */
static dealloc_fn dict_dealloc, list_dealloc;
static bool lists_off; /* the free lists are kept empty */

/* The interpreter of the thread holding the GIL (the caller). */
static char *interp(void)
{
	uintptr_t ts = atomic_load_explicit(tstate_current,
					    memory_order_relaxed);

	return ts ? *(char **)(ts + off->tstate_interp) : NULL;
}

/* The tp_free of TYPE: read when called, not when wrapped (the recorder
 * wraps before the interpreter readies its types, and a float's is
 * inherited then). */
static dealloc_fn tp_free_of(const char *type)
{
	return *(dealloc_fn const *)(type + off->type_free);
}

/* No object on the linked list at *HEAD (linked through the word at
 * NEXT), of TYPE, and its count *N at MAX: none put on it. */
static void list_off(void **head, unsigned next, int *n, int max,
		     const char *type)
{
	dealloc_fn tp_free = tp_free_of(type);

	if (!tp_free)
		return; /* (none made yet) */
	while (*head) {
		void *op = *head;

		*head = *(void **)((char *)op + next);
		tp_free(op);
	}
	*n = max;
}

/* No float or tuple on a free list in IN, and none to be put there. */
static void linked_lists_off(char *in)
{
	int *floats = (int *)(in + off->floats_nfree);
	int *tuples = (int *)(in + off->tuples_nfree);

	if (__builtin_expect(*floats == off->floats_max &&
				     *tuples == off->tuples_max,
			     1))
		return;
	list_off((void **)(in + off->floats_free), off->ob_type, floats,
		 off->floats_max, float_type);
	for (unsigned i = 0; i < off->tuple_lists; i++)
		list_off((void **)(in + off->tuples_free) + i,
			 off->tuple_items, tuples + i, off->tuples_max,
			 tuple_type);
}

/*
 * A dealloc runs in CPython's trashcan, which defers the objects of a
 * deep chain (a million nested lists) instead of freeing them by as deep
 * a recursion; but only where the type's tp_dealloc is that function
 * itself, no longer true once it is the recorder's.  So the recorder's
 * runs the trashcan in its stead, under the same condition (the type's
 * tp_dealloc is MINE: not for a subclass, whose subtype_dealloc has its
 * own): NULL (no trashcan), DEFERRED (OP deferred: nothing more to do),
 * or the thread state to end it with.
 */
#define DEFERRED ((void *)1)
static void (*gc_untrack)(void *op);
static int (*trash_begin)(void *tstate, void *op);
static void (*trash_end)(void *tstate);

static void *trashcan(void *op, dealloc_fn mine)
{
	char *type = *(char **)((char *)op + off->ob_type);
	void *ts;

	if (*(dealloc_fn *)(type + off->type_dealloc) != mine ||
	    !(ts = (void *)atomic_load_explicit(tstate_current,
						 memory_order_relaxed)))
		return NULL;
	gc_untrack(op); /* (first, as the deallocs do) */
	return trash_begin(ts, op) ? DEFERRED : ts;
}

/* OP, just deallocated, taken back off the array-and-count free list at
 * FREE, NFREE of the interpreter and freed, if it was put there. */
static void unpark(unsigned free, unsigned nfree, void *op, const char *type)
{
	char *in = interp();
	int *n;
	void **list;

	if (!in)
		return;
	n = (int *)(in + nfree);
	list = (void **)(in + free);
	if (*n > 0 && list[*n - 1] == op) {
		--*n;
		tp_free_of(type)(op);
	}
}

/* (Under the GIL: from the object allocator.) */
static void lists_check(void)
{
	char *in = interp();

	if (in && lists_off)
		linked_lists_off(in);
}

/* The dealloc ORIG of OP, wrapped by MINE, of TYPE, whose free list is
 * an array and its count at FREE, NFREE. */
static void array_dealloc(void *op, dealloc_fn mine, dealloc_fn orig,
			  unsigned free, unsigned nfree, const char *type)
{
	void *ts = trashcan(op, mine);

	if (ts == DEFERRED)
		return;
	orig(op);
	unpark(free, nfree, op, type);
	if (ts)
		trash_end(ts);
}

static void dict_dealloc_unparked(void *op)
{
	array_dealloc(op, dict_dealloc_unparked, dict_dealloc,
		      off->dicts_free, off->dicts_nfree, dict_type);
}

static void list_dealloc_unparked(void *op)
{
	array_dealloc(op, list_dealloc_unparked, list_dealloc,
		      off->lists_free, off->lists_nfree, list_type);
}

/* The tp_dealloc of type T replaced by MINE, the old one into *OLD. */
static void swap_dealloc(char *t, dealloc_fn mine, dealloc_fn *old)
{
	*old = *(dealloc_fn *)(t + off->type_dealloc);
	*(dealloc_fn *)(t + off->type_dealloc) = mine;
}

/* (Under the GIL: no other thread deallocates now.) */
static void free_lists_off(void)
{
	char *in = interp();

	if (!in || !gc_untrack || !trash_begin || !trash_end || !float_type ||
	    !tuple_type || !dict_type || !list_type)
		return;
	lists_off = true;
	linked_lists_off(in);
	swap_dealloc(dict_type, dict_dealloc_unparked, &dict_dealloc);
	swap_dealloc(list_type, list_dealloc_unparked, &list_dealloc);
}

/*
 * Wrap the object and memory domains, now that the interpreter has made
 * them what they will stay (its pre-initialization sets them from
 * PYTHONMALLOC) and this thread holds the GIL (no other thread is inside
 * them).  PYTHONMALLOC=malloc (or malloc_debug) sends every object to
 * malloc, whose hook records it: nothing to wrap then.
 */
static void wrap(void)
{
	static struct py_allocator mem, obj;
	const char *env = getenv("PYTHONMALLOC");

	atomic_store(&rec_python_state, PY_ON);
	free_lists_off();
	if (env && !strncmp(env, "malloc", 6))
		return;
	get_allocator(PY_DOMAIN_MEM, &orig_mem);
	get_allocator(PY_DOMAIN_OBJ, &orig_obj);
	mem = (struct py_allocator){ &orig_mem, py_malloc, py_calloc,
				     py_realloc, py_free };
	obj = mem;
	obj.ctx = &orig_obj;
	set_allocator(PY_DOMAIN_MEM, &mem);
	set_allocator(PY_DOMAIN_OBJ, &obj);
}

void rec_python_poll(void)
{
	uintptr_t holder;
	void *me;

	if (rec_busy)
		return;
	if (atomic_load_explicit(&rec_python_state, memory_order_relaxed) ==
	    PY_ON) {
		teardown_check();
		return;
	}
	holder = atomic_load_explicit(tstate_current, memory_order_acquire);
	if (!holder)
		return;
	rec_busy++;
	me = rec_py.get_tstate();
	rec_busy--;
	if ((uintptr_t)me == holder &&
	    atomic_load(&rec_python_state) == PY_WAITING)
		wrap();
}

/*
 * Code objects freed, told as their dealloc starts (before their memory
 * can be another's): the names kept of the instructions in them are not
 * the next code object's there (rec_pyframes_code_freed).  Wrapped from
 * the constructor on (PyCode_Type's dealloc is set statically), so that
 * none is missed; code cannot be subclassed: every code object's
 * dealloc is the type's.
 */
static dealloc_fn code_dealloc;

static void code_dealloc_told(void *op)
{
	rec_pyframes_code_freed((uintptr_t)op);
	code_dealloc(op);
}

/* ---- finding the interpreter ---- */

/*
 * The file that holds the interpreter's code, as the kernel's maps name
 * it (the analyzer tells the interpreter's frames from the program's by
 * it): libpython, or the executable itself (Debian links it in).
 */
static void find_binary(void *eval)
{
	struct link_map *lm = NULL;
	Dl_info info;
	const char *path;

	rec_busy++; /* (realpath may allocate) */
	if (dladdr1(eval, &info, (void **)&lm, RTLD_DL_LINKMAP) && lm &&
	    lm->l_name && lm->l_name[0])
		path = lm->l_name;
	else
		path = "/proc/self/exe";
	if (!realpath(path, binary))
		binary[0] = '\0';
	rec_busy--;
}

const char *rec_python_binary(void)
{
	return rec_py.on && binary[0] ? binary : NULL;
}

static void *sym(const char *name)
{
	return dlsym(RTLD_DEFAULT, name);
}

void rec_python_init(void)
{
	const unsigned long *v = sym("Py_Version");
	void *eval = sym("_PyEval_EvalFrameDefault");
	unsigned major, minor, micro;
	const ElfW(Sym) *es = NULL;
	Dl_info info;
	char *p;
	struct rec_py py = { 0 };

	if (!eval || !v)
		return; /* not CPython (or older than 3.11) */
	major = (unsigned)(*v >> 24 & 0xff);
	minor = (unsigned)(*v >> 16 & 0xff);
	micro = (unsigned)(*v >> 8 & 0xff);
	p = version;
	for (unsigned i = 0, part[3] = { major, minor, micro }; i < 3; i++) {
		char d[12];
		int k = 0;

		do
			d[k++] = (char)('0' + part[i] % 10);
		while ((part[i] /= 10));
		while (k)
			*p++ = d[--k];
		*p++ = i < 2 ? '.' : '\0';
	}
	py.off = python_offsets_for(major, minor);
	py.runtime = (uintptr_t)sym("_PyRuntime");
	py.code_type = (uintptr_t)sym("PyCode_Type");
	py.get_tstate = (void *(*)(void))sym("PyGILState_GetThisThreadState");
	py.addr2line = (int (*)(void *, int))sym("PyCode_Addr2Line");
	get_arenas = (void (*)(struct py_arenas *))sym(
		"PyObject_GetArenaAllocator");
	set_arenas = (void (*)(struct py_arenas *))sym(
		"PyObject_SetArenaAllocator");
	get_allocator = (void (*)(int, struct py_allocator *))sym(
		"PyMem_GetAllocator");
	set_allocator = (void (*)(int, struct py_allocator *))sym(
		"PyMem_SetAllocator");
	if (!py.off) {
		rec_say("python ", version, ": no table of this version's "
			"interpreter structures; its stacks have native frames "
			"only (its Python frames are not named)", NULL);
		return;
	}
	if (!py.runtime || !py.code_type || !py.get_tstate || !py.addr2line ||
	    !get_allocator || !set_allocator || !get_arenas || !set_arenas ||
	    !dladdr1(eval, &info, (void **)&es, RTLD_DL_SYMENT) || !es ||
	    !es->st_size) {
		rec_say("python ", version, ": a symbol of its interpreter is "
			"missing; its stacks have native frames only", NULL);
		return;
	}
	finalizing = (const _Atomic uintptr_t *)(py.runtime +
						 py.off->runtime_finalizing);
	tstate_current = (const _Atomic uintptr_t *)(
		py.runtime + py.off->runtime_tstate_current);
	chain_size = sizeof(struct chain) +
		     rec_cfg.depth * (sizeof(((struct chain *)0)->frame[0]) +
				      sizeof(uintptr_t));
	chains_size = sizeof(struct chains) + SETS * WAYS * chain_size;
	off = py.off;
	dict_type = sym("PyDict_Type");
	list_type = sym("PyList_Type");
	tuple_type = sym("PyTuple_Type");
	float_type = sym("PyFloat_Type");
	gc_untrack = (void (*)(void *))sym("PyObject_GC_UnTrack");
	trash_begin = (int (*)(void *, void *))sym("_PyTrash_begin");
	trash_end = (void (*)(void *))sym("_PyTrash_end");
	off_prev = py.off->frame_previous;
	off_cframe = py.off->tstate_cframe;
	off_current = py.off->cframe_current_frame;
	off_instr = py.off->frame_prev_instr;
	py.eval_lo = (uintptr_t)eval;
	py.eval_hi = py.eval_lo + es->st_size;
	find_binary(eval);
	if (!rec_pyframes_init(&py))
		return; /* (no memory for the names) */
	swap_dealloc((char *)py.code_type, code_dealloc_told, &code_dealloc);
	/* The arenas from the first: the interpreter sets its allocators
	 * up later (PYTHONMALLOC), but not the arenas'. */
	{
		static struct py_arenas mine;

		get_arenas(&orig_arenas);
		mine = (struct py_arenas){ &orig_arenas, arena_alloc,
					   arena_free };
		set_arenas(&mine);
	}
	atomic_store(&rec_python_state, PY_WAITING);
}

const char *rec_python_version(void)
{
	return rec_py.on ? version : NULL;
}

