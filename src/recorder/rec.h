/*
 * The recorder: a preload library (libdmprof-recorder.so) that makes any
 * dynamically linked program write deep heap dumps (DUMP_DEEP_6).  This
 * header is private to src/rec_*.c; none of it is linked into dmprof.
 *
 * Rules every recorder file follows: never call the hooked allocator
 * (memory comes from rec_mem, which maps it raw), never use stdio, keep
 * the hooks short, and report nothing but through rec_say (never on the
 * program's stderr).
 */
#ifndef DMPROF_REC_H
#define DMPROF_REC_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define REC_MAX_DEPTH 64
/* Blocks at least this big are tracked one by one (committed bytes);
 * smaller ones count as committed in full. */
#define REC_LARGE (16 * 1024)

enum rec_kind {
	REC_MALLOC = 0,
	REC_MMAP = 1,
	REC_PYOBJ = 2, /* an object pymalloc served (a malloc bucket) */
};

struct rec_bucket {
	uint64_t hash;
	uint32_t id;
	uint16_t depth;
	uint8_t kind;
	atomic_bool written;          /* in this process's .buckets */
	uint64_t jit_at;              /* its JIT frames' names: the map's
					 lines up to there (rec_perfmap.c) */
	uintptr_t frames[];
};

/* A mapping and the bucket of the call that made it. */
struct rec_map {
	uintptr_t start, end;
	uint32_t bucket;
};

/* ---- rec_mem.c: memory of the recorder itself ---- */

/* Raw mmap/munmap/mremap, bypassing the hooks. */
void *rec_raw_mmap(void *addr, size_t len, int prot, int flags, int fd,
		   long off);
int rec_raw_munmap(void *addr, size_t len);
void *rec_raw_mremap(void *old, size_t oldlen, size_t newlen, int flags,
		     void *naddr);
/*
 * Raw system calls, for the tracer (rec_stop.c) and the reading it does:
 * the program's threads stand still wherever they were, maybe inside
 * another library that wraps these functions (a sanitizer's runtime, a
 * tracing library) holding a lock its wrapper would wait for.
 */
int rec_raw_open(const char *path, int flags);
long rec_raw_read(int fd, void *buf, size_t n);
long rec_raw_pread(int fd, void *buf, size_t n, long off);
int rec_raw_close(int fd);
int rec_raw_ioctl(int fd, unsigned long request, void *arg);
/* N bytes from P to FD, at offset AT (-1: where it is), whatever
 * interrupts the writes; false on an error (errno says). */
bool rec_write_all(int fd, const char *p, size_t n, long at);

/* Zeroed memory that lives until exit; recorded as the recorder's own. */
void *rec_alloc(size_t size);
/* The same in cache lines of its own: for what a thread writes. */
void *rec_alloc_line(size_t size);
/* Zeroed memory of a mapping of its own, which rec_map_free gives back. */
void *rec_map_alloc(size_t size);
void rec_map_free(void *p, size_t size);
/* The recorder's mappings as records of BUCKET; at most MAX. */
size_t rec_self_count(void);
size_t rec_self_snapshot(struct rec_map *out, size_t max, uint32_t bucket);

/* A growable byte buffer in raw memory, for building dump files. */
struct rec_buf {
	char *p;
	size_t len, cap;
};
void rec_buf_add(struct rec_buf *b, const void *data, size_t len);
void rec_buf_str(struct rec_buf *b, const char *s);
void rec_buf_u64(struct rec_buf *b, uint64_t v);
void rec_buf_i64(struct rec_buf *b, int64_t v);
/* V in decimal, right-aligned in WIDTH columns at least (two digits a
 * table lookup: a dump writes a line for each of tens of thousands of
 * buckets); rec_put_dec writes it at P, with room for 21 + WIDTH bytes,
 * and returns the end. */
void rec_buf_dec(struct rec_buf *b, int64_t v, size_t width);
char *rec_put_dec(char *p, int64_t v, size_t width);
void rec_buf_hex(struct rec_buf *b, uint64_t v, int width);
void rec_buf_pad(struct rec_buf *b, size_t width, size_t used, char c);
/* Seconds with millisecond decimals ("0.045"). */
void rec_buf_seconds(struct rec_buf *b, double s);
void rec_buf_free(struct rec_buf *b);
/* S (N bytes) with tab, newline and backslash written \\t, \\n and \\\\. */
void rec_buf_escaped(struct rec_buf *b, const char *s, size_t n);
/* A .buckets file's name of the frame at ADDR: "frame 0xADDR<TAB>FUNC
 * <TAB>FILE<TAB>LINE", escaped. */
void rec_buf_frame(struct rec_buf *b, uint64_t addr, const char *func,
		   size_t func_len, const char *file, size_t file_len,
		   uint32_t line);
/* The hex number at *P (up to END, lower or upper case), *P past it;
 * *DIGITS (if not NULL) its digits. */
uint64_t rec_hex(const char **p, const char *end, unsigned *digits);
bool rec_buf_reserve(struct rec_buf *b, size_t n);
/* The same, its pages left to be brought in as they are written. */
bool rec_buf_reserve_only(struct rec_buf *b, size_t n);
bool rec_buf_zero(struct rec_buf *b, size_t n);
bool rec_buf_room(struct rec_buf *b, size_t n);
/* Room for N more bytes, their pages brought in a step at a time as B is
 * filled through here (rec_mem.c). */
bool rec_buf_room_as_filled(struct rec_buf *b, size_t n);

/*
 * Locks: short sections only, never held across a hook's call out.  A
 * waiter spins a little, then sleeps on a futex until the holder wakes
 * it (rec_mem.c): a holder that cannot run (descheduled, stopped, in a
 * sanitizer's report) costs its waiters no CPU.  Zero is free.
 */
typedef atomic_int rec_lock;
#define REC_LOCK_INIT 0
void rec_lock_take(rec_lock *l);
void rec_lock_give(rec_lock *l);
/* Take L if it is free now; false if not. */
bool rec_lock_try(rec_lock *l);
/* Called by a lock long waited for (set by the hooks). */
extern void (*rec_lock_stuck)(void);
/* A pause in a spin loop. */
void rec_relax(void);
/* Take (or give back) every lock of rec_mem.c / rec_table.c, around fork. */
void rec_mem_locks(bool take);
void rec_table_locks(bool take);
/* Is L free?  (Only meaningful while no other thread runs.) */
bool rec_lock_free(rec_lock *l);
/* Every lock of a file is free: the tracer's check (rec_stop.c). */
bool rec_mem_locks_free(void);
bool rec_table_locks_free(void);
bool rec_count_locks_free(void);
bool rec_hooks_locks_free(void);

/*
 * Per-thread state, pooled: items of one size that a thread takes when it
 * first needs one and gives back when it ends (from a thread-specific
 * key's destructor), for the next new thread, so that their number
 * follows the most threads alive at once, not how many ever were.  Every
 * item stays on the list ALL, which only grows at its head (a dump may
 * walk it without the lock, from the head it read).  An item's struct
 * starts with a struct rec_pooled.
 */
struct rec_pooled {
	struct rec_pooled *next; /* all of them */
	struct rec_pooled *next_free;
};
struct rec_pool {
	rec_lock lock;
	struct rec_pooled *all, *free;
};
/* A free item, as its last thread left it, else a new one of SIZE bytes,
 * zeroed, in cache lines of its own; NULL without memory. */
void *rec_pool_get(struct rec_pool *p, size_t size);
void rec_pool_put(struct rec_pool *p, void *item);
/* Around fork(): take (or give back) the pool's lock; in the child, where
 * only this thread lives on, every item but KEEP is free after it. */
void rec_pool_lock(struct rec_pool *p, bool take);
void rec_pool_after_fork(struct rec_pool *p, const void *keep);

/* ---- rec_table.c: buckets, large blocks, mappings ---- */

/* False if there is no memory for them. */
bool rec_table_init(void);
/* The bucket of this stack (interned), or NULL when the table is full. */
struct rec_bucket *rec_bucket_get(enum rec_kind kind, const uintptr_t *frames,
				  unsigned depth);
uint32_t rec_bucket_count(void);
struct rec_bucket *rec_bucket_by_id(uint32_t id);

/*
 * Large blocks: their committed bytes are measured one by one.  A block
 * glibc mmapped on its own also has its mapping [MSTART, MEND), which is
 * the allocator's (0, 0 otherwise).
 */
struct rec_large {
	uintptr_t p;
	uint64_t size;
	uintptr_t mstart, mend;
	uint32_t bucket;
};
void rec_large_add(const struct rec_large *l);
void rec_large_del(uintptr_t p);
/* Copy out the live large blocks (for a dump); returns how many. */
size_t rec_large_snapshot(struct rec_large **out);
/* Room, in memory, for the copies of the next snapshots (of large blocks
 * and mappings, a quarter more than now); returns how many records there
 * are now. */
size_t rec_table_room(void);

/* Mappings made through the hooks (and the recorder's own). */
void rec_map_add(uintptr_t start, uintptr_t end, uint32_t bucket);
void rec_map_del(uintptr_t start, uintptr_t end);
/* Copy out the mappings (for a dump, from one thread only). */
size_t rec_map_snapshot(struct rec_map **out);
/* The bucket of the mapping at ADDR, if there is one. */
bool rec_map_bucket_at(uintptr_t addr, uint32_t *bucket);

/*
 * Heaps of glibc's non-main arenas, found from the blocks they hand out:
 * they are aligned to HEAP_MAX_SIZE (64 MiB on 64-bit), so a block's heap
 * starts at the block's address rounded down to it.
 */
#define REC_HEAP_MAX ((uintptr_t)64 << 20)
void rec_arena_note(uintptr_t heap);
size_t rec_arena_snapshot(uintptr_t **out);
/*
 * Where glibc's main arena went on past its brk heap (the break could not
 * grow: a mapping above it, V8's), in mappings of its own: an address in
 * each, by the MiB; the mapping that holds it is the arena's.
 */
void rec_main_ext_note(uintptr_t addr);
size_t rec_main_ext_snapshot(uintptr_t **out);

/* Stacks of the recorder's synthetic buckets (marker functions). */
extern struct rec_bucket *rec_self_bucket;   /* the recorder's memory */
extern struct rec_bucket *rec_arena_bucket;  /* glibc's arenas */
extern struct rec_bucket *rec_header_bucket; /* the block headers */
extern struct rec_bucket *rec_python_arena_bucket; /* pymalloc's arenas */
extern struct rec_bucket *rec_python_free_bucket;  /* what they hold free */

/* ---- rec_hooks.c ---- */

struct rec_config {
	char prefix[4096];
	bool active;
	bool mmap;              /* HEAP_PROFILE_MMAP */
	bool no_stop;           /* DMPROF_NO_STOP: read the process running */
	bool no_scan;           /* DMPROF_NO_SCAN: no PAGEMAP_SCAN (as before
				 * Linux 6.7: smaps says where pages are) */
	bool separate_files;    /* DMPROF_SEPARATE_FILES: the buckets and the
				 * maps in files of their own, as the
				 * original wrote them */
	int pageframe;          /* DEEP_HEAP_PROFILE_PAGEFRAME: 0, 1, 2 */
	bool pss;               /* DMPROF_PSS: the kernel's Pss in each dump
				 * (its walk of every page, see measure) */
	unsigned depth;
	double time_interval;   /* seconds, 0: none */
	uint64_t alloc_interval;
	uint64_t inuse_interval;
	bool peaks;             /* DMPROF_PEAK_DUMPS: at new highs in use */
	int signal;
};
extern struct rec_config rec_cfg;

/*
 * The dump before teardown, when main() returns or exit() is called:
 * before the atexit handlers and static destructors free what the
 * program held (the at-exit dump, "Exiting", comes after them).  REASON
 * is "main returned" or "exit called", or "python finalizing" for a
 * Python program (rec_python.c: its interpreter frees the program's
 * objects before main() returns), or "node exiting" for node (rec_node.c:
 * its exit event, before it disposes of its isolate).  One per process:
 * none when not recording, from the recorder's own work, a second time,
 * or in a child of fork() that has allocated nothing of its own (its
 * heap is its parent's).
 */
void rec_dump_before_teardown(const char *reason);

/* ---- rec_crash.c: the last dump before a crash ---- */

/* Install the handlers of the fatal signals (from the constructor). */
void rec_crash_init(void);
/*
 * The dump of a crash by signal SIGNAME ("SIGSEGV"), Reason "crash:
 * SIGSEGV", from its handler: skipped (and said) in the recorder's own
 * work, or when another dump does not end in a little while.
 */
void rec_dump_crash(const char *signame);

/* For the other files' hooks (rec_python.c): is this thread's call to
 * be recorded; wait while a dump reads the process; the dump triggers
 * after an allocation of SIZE bytes. */
bool rec_hooks_tracking(void);
void rec_hooks_wait_dump_slow(void);
void rec_hooks_poll(size_t size);
/* The same for CALLS small allocations at once (a hook that polls only
 * every so often). */
void rec_hooks_poll_calls(size_t calls);

/* ---- rec_python.c: CPython's frames and objects ---- */

/* Where the addresses of Python frames start: above user space, below
 * the addresses dmprof gives frames of its own (model.c). */
#define REC_PY_BASE ((uintptr_t)0xfffffd0000000000ULL)

/* ---- rec_pyframes.c: CPython's frames, read from inside ---- */

struct python_offsets;
/* What the walk needs of the interpreter (rec_python.c finds it). */
struct rec_py {
	bool on;                         /* Python frames are recorded */
	const struct python_offsets *off;
	uintptr_t runtime;               /* &_PyRuntime */
	uintptr_t code_type;             /* &PyCode_Type */
	uintptr_t eval_lo, eval_hi;      /* _PyEval_EvalFrameDefault */
	void *(*get_tstate)(void);       /* PyGILState_GetThisThreadState */
	int (*addr2line)(void *code, int addrq); /* PyCode_Addr2Line */
};
extern struct rec_py rec_py;
/* Walk with PY's interpreter from now on; false without memory. */
bool rec_pyframes_init(const struct rec_py *py);
/* The innermost frame of the thread whose PyThreadState is TSTATE, or 0. */
uintptr_t rec_pyframes_first(uintptr_t tstate);
/*
 * Up to MAX addresses of the Python frames from *FRAMEP on into OUT,
 * innermost first: to the end of the chain, or with ENTRY_ONLY to the
 * first entry frame (the last one a native eval-loop call ran).  *FRAMEP
 * is left where the walk ended; *BROKEN set when a frame failed a check
 * (the last address written is then that of <python frames unreadable>).
 */
unsigned rec_pyframes_walk(uintptr_t *framep, uintptr_t *out, unsigned max,
			   bool entry_only, bool *broken);
/*
 * Up to MAX frames of the chain from frame F on, innermost first: their
 * addresses into FRAMES, their instructions into INSTRS, *WHOLE whether
 * the chain ended there.  Their count; more than MAX where a frame fails
 * a check.  (An instruction is in its code object: while
 * rec_pyframes_codes_freed stays the same, the same instructions are the
 * same names.)
 */
unsigned rec_pyframes_list(uintptr_t f, unsigned max, uintptr_t *frames,
			   uintptr_t *instrs, bool *whole);
/* How many code objects were freed (rec_python.c wraps their dealloc to
 * count them). */
extern _Atomic uint64_t rec_pyframes_codes_freed;
/* Code object CODE is being freed (under the GIL): counted, and the
 * names kept of its instructions read again at their next use. */
void rec_pyframes_code_freed(uintptr_t code);
/* Find the interpreter (from the constructor): Python frames on. */
void rec_python_init(void);
/* CPython 3.11.2, or NULL where Python frames are not recorded. */
const char *rec_python_version(void);
/* The path of the binary that holds the interpreter's code, or NULL. */
const char *rec_python_binary(void);
/* 0 where there is no interpreter to watch, 3 once it finalizes; else
 * the hooks call rec_python_poll: it wraps pymalloc once the interpreter
 * runs, and takes the dump before teardown when it starts to finalize. */
extern atomic_int rec_python_state;
#define REC_PYTHON_WAITING 1
#define REC_PYTHON_DONE 3
void rec_python_poll(void);
/* Replace the eval-loop frames of the N native FRAMES by the Python frames
 * they run (at most MAX in all); the new count. */
unsigned rec_python_splice(uintptr_t *frames, unsigned n, unsigned max);
/* This thread is inside pymalloc for the recorder (its mappings then are
 * pymalloc's arenas). */
extern __thread int rec_python_inside;
/* The "frame" lines of the names not yet written into B; returns the
 * count to give rec_python_names_written once they are. */
unsigned rec_python_names(struct rec_buf *b);
void rec_python_names_written(unsigned n);
/* Around fork(): its lock; in the child, after it. */
void rec_python_locks(bool take);
void rec_python_after_fork(void);

/* ---- rec_node.c: node, as dmprof's hook for it tells ---- */

/* node's version ("v20.20.2") once the hook has said it, else NULL. */
const char *rec_node_version(void);
/* The path of the binary that holds node's code, or NULL. */
const char *rec_node_binary(void);

/* ---- rec_perfmap.c: a JIT's perf map, its names and its copy ---- */

/* Where the addresses of a JIT's named frames start: below Python's. */
#define REC_JIT_BASE ((uintptr_t)0xfffffc0000000000ULL)
/* This process image starts: a map older than now is not its own. */
void rec_perfmap_init(void);
/*
 * At a dump, before its buckets are written: what /tmp/perf-PID.map has
 * gained since the last one, read for its names and appended to the copy
 * TO (the whole map again where it was rewritten); false on a write
 * error.
 */
bool rec_perfmap_update(const char *to);
/* How long the map is now (for a bucket made now); UINT64_MAX where no
 * JIT code has been seen, or there is no map: as at the dump. */
uint64_t rec_perfmap_now(void);
/* The address to write for frame ADDR of a bucket made when the map was
 * AS_OF long: ADDR, or, in code of no object that the map named, the
 * address of its name. */
uintptr_t rec_perfmap_frame(uintptr_t addr, uint64_t as_of);
/* The "frame" lines of the names not yet written into B; returns the
 * count to give rec_perfmap_names_written once they are. */
unsigned rec_perfmap_names(struct rec_buf *b);
void rec_perfmap_names_written(unsigned n);
/* In a child of fork(): its map is another. */
void rec_perfmap_after_fork(void);

/* ---- rec_count.c: counts per bucket, kept per thread ---- */

void rec_count_init(void);
/* A block of SIZE bytes (and HEADER bytes of the recorder's in front). */
void rec_count_alloc(uint32_t id, uint64_t size, uint64_t header);
void rec_count_free(uint32_t id, uint64_t size, uint64_t header);
/* This thread's counters of bucket ID (NULL: no memory), for a hook that
 * keeps it (valid as long as the thread's counters, which the next new
 * thread takes over: never freed), and a block counted there. */
struct rec_cell {
	int64_t allocs, frees, live;
};
struct rec_cell *rec_count_cell(uint32_t id);
void rec_count_alloc_cell(struct rec_cell *cell, uint64_t size,
			  uint64_t header);
/*
 * SIZE bytes (zeroed when made, the same SIZE at every call) that go with
 * this thread's counters: when the thread ends, to the next thread that
 * takes the counters over, as they were, so that the cells a hook keeps
 * there stay its own.  NULL without memory.
 */
void *rec_count_scratch(size_t size);
/* A block of SIZE bytes counted in K (the header not counted: the dump
 * knows it), and freed, by hooks that the GIL orders (pymalloc's): K may
 * be another thread's. */
void rec_count_gil_alloc(struct rec_cell *k, uint64_t size);
void rec_count_gil_free(struct rec_cell *k, uint64_t size);
struct rec_totals {
	int64_t allocs, frees, live;
};
/* All threads' counts of buckets [0, NB) into OUT; returns the header
 * bytes live. */
int64_t rec_count_sum(uint32_t nb, struct rec_totals *out);
void rec_count_locks(bool take);
void rec_count_after_fork(void);
/* Totals the dump triggers look at (a little behind: kept in batches). */
extern atomic_uint_fast64_t rec_allocated; /* bytes ever allocated */
extern atomic_int_fast64_t rec_inuse;      /* bytes live */
/* Bytes ever allocated, with what this thread has not yet told. */
uint64_t rec_count_allocated(void);

/* This process has forked, or is a child of fork(): memory may be shared. */
extern atomic_bool rec_forked;

/* Hooks off in this thread (the recorder's own work). */
extern __thread int rec_busy;

/* ---- rec_unwind.c ---- */

/* A frame to unwind from: a return address into it, its stack pointer
 * (the CFA of the function it called) and its RBP. */
struct rec_frame {
	uintptr_t pc, sp, bp;
};

/*
 * The frame of the caller of the function this is used in, as stepping
 * out of that function would find it.  __builtin_frame_address gives the
 * function a frame pointer (push %rbp; mov %rsp, %rbp): the caller's RBP
 * is saved there, the return address above it, and above that is where
 * the caller's stack pointer was before the call.
 */
#if defined(__x86_64__)
#define REC_CALLER()                                                         \
	((struct rec_frame){                                                 \
		(uintptr_t)__builtin_return_address(0),                      \
		(uintptr_t)__builtin_frame_address(0) + 16,                  \
		*(const uintptr_t *)__builtin_frame_address(0) })
#else
#define REC_CALLER() ((struct rec_frame){ 0, 0, 0 })
#endif

void rec_unwind_init(void);
/*
 * What the unwinder needs of libgcc, which glibc's backtrace() runs on,
 * if the program has it loaded: true then.  Else it is left unloaded
 * (loading it costs each process more than its dumps' files: its
 * constructor asks the CPU what it is, trapped on a virtual machine) and
 * LINK, which loads it through backtrace() with the recorder's own
 * allocations aside, is called by the first walk that falls back.
 */
bool rec_unwind_ready(void (*link)(void));
/* Up to MAX return addresses of the caller's stack, innermost first,
 * without those in [SKIP_LO, SKIP_HI) (the recorder's own frames: its
 * hooks, its thread trampoline). */
unsigned rec_unwind(uintptr_t *frames, unsigned max, uintptr_t skip_lo,
		    uintptr_t skip_hi);
/* The entries of the table of unwind rules now (it grows: 4,096 at
 * first, 65,536 at most); the steps this thread's memo keeps. */
size_t rec_unwind_cache_size(void);
size_t rec_unwind_memo_nodes(void);

/*
 * The same from FROM, a frame of the caller's stack (REC_CALLER() of a
 * hook): the frames in between are not stepped through again.  FROM's
 * return address is the first frame.  With NOTE, *NOTE is the place of a
 * note the caller may keep with the stack it gets (NULL where none can
 * be kept): a later walk of the thread from the same frame that finds
 * the same stack gives the place back with the note in it, and then
 * leaves FRAMES unwritten.
 */
unsigned rec_unwind_from(const struct rec_frame *from, uintptr_t *frames,
			 unsigned max, uintptr_t skip_lo, uintptr_t skip_hi,
			 void ***note);
/* The note a walk from FROM would give back now, if the thread's memo
 * has the walk and the note at hand (else NULL: walk). */
void *rec_unwind_noted(const struct rec_frame *from, unsigned max,
		       uintptr_t skip_lo, uintptr_t skip_hi);
/* Code was unloaded: forget what is known of it. */
void rec_unwind_forget(void);
/* Around fork(): the unwinder's lock; in the child, after it. */
void rec_unwind_locks(bool take);
void rec_unwind_after_fork(void);
/*
 * The rules, for keeping them across processes (rec_unwind_saved.c): a
 * table with room for N more; RULE kept for code address PC where a
 * probe finds room (false: not kept); FN called with each rule known.
 */
void rec_unwind_reserve(size_t n);
bool rec_unwind_put(uintptr_t pc, uint64_t rule);
void rec_unwind_each(void (*fn)(uintptr_t pc, uint64_t rule, void *arg),
		     void *arg);
/* Rules this process worked out (not given by rec_unwind_put). */
extern atomic_uint rec_unwind_computed;
/* Captures that needed glibc's backtrace() (signal frames and such),
 * and those of them cut at a signal frame, libgcc not loaded. */
extern atomic_ulong rec_unwind_fallbacks, rec_unwind_cut;
/* A walk has stepped through code of no object (a JIT's). */
extern atomic_bool rec_unwind_jit;
/* This thread's walks that replayed steps kept in the memo, those that
 * replayed every step, stepping nowhere anew, and those that replayed a
 * whole path (for the tests, which can turn the memo off, to compare). */
extern __thread unsigned long rec_unwind_replays, rec_unwind_same,
	rec_unwind_paths;
extern bool rec_unwind_no_memo;

/* ---- rec_unwind_saved.c ---- */

/*
 * At start, the rules an earlier process of the same executable left
 * beside the dumps (PREFIX's directory, ".BASE.unwind.BUILDID" for
 * PREFIX DIR/BASE); at
 * exit, this process's, when it worked out enough new ones.  The _at
 * forms take the file's path (for the tests): how many rules were
 * loaded; whether the file was written.
 */
void rec_unwind_saved_load(const char *prefix);
void rec_unwind_saved_save(void);
unsigned rec_unwind_saved_load_at(const char *path);
bool rec_unwind_saved_save_at(const char *path);
/* Rules the file gave this process. */
extern unsigned rec_unwind_saved_loaded;

/* Is PC in a sanitizer runtime's code (its calls are not the program's)? */
bool rec_from_runtime(uintptr_t pc);

/* ---- rec_tsan.c: the test build for ThreadSanitizer ---- */

#ifdef REC_TSAN
#include <pthread.h>

/*
 * The hooks rec_tsan.c hands on as they are: their return type, name,
 * parameters and arguments.  Each is ThreadSanitizer's, where the hooks
 * hand blocks (__interceptor_NAME), and a hook of rec_hooks.c, under a
 * name of its own (rec_tsan_NAME), which rec_tsan.c's entry points call
 * in a thread the runtime runs once the recorder has started.
 */
#define REC_TSAN_HOOKS(X)                                                    \
	X(void *, malloc, (size_t n), (n))                                   \
	X(void *, calloc, (size_t n, size_t m), (n, m))                      \
	X(void *, realloc, (void *p, size_t n), (p, n))                      \
	X(void *, reallocarray, (void *p, size_t n, size_t m), (p, n, m))    \
	X(void *, memalign, (size_t align, size_t n), (align, n))            \
	X(void *, aligned_alloc, (size_t align, size_t n), (align, n))       \
	X(int, posix_memalign, (void **out, size_t align, size_t n),         \
	  (out, align, n))                                                   \
	X(void *, valloc, (size_t n), (n))                                   \
	X(void *, pvalloc, (size_t n), (n))                                  \
	X(size_t, malloc_usable_size, (void *p), (p))                        \
	X(void *, mmap,                                                      \
	  (void *addr, size_t len, int prot, int flags, int fd, long off),   \
	  (addr, len, prot, flags, fd, off))                                 \
	X(int, munmap, (void *addr, size_t len), (addr, len))                \
	X(int, dlclose, (void *handle), (handle))
#define REC_TSAN_DECLARE(ret, name, params, args)                           \
	ret __interceptor_##name params;                                     \
	ret rec_tsan_##name params;
REC_TSAN_HOOKS(REC_TSAN_DECLARE)
void __interceptor_free(void *p);
void rec_tsan_free(void *p);
void *rec_tsan_mremap(void *old, size_t oldlen, size_t newlen, int flags,
		      ...);
int __interceptor_pthread_create(pthread_t *thread, const pthread_attr_t *attr,
				 void *(*fn)(void *), void *arg);
int rec_tsan_pthread_create(pthread_t *thread, const pthread_attr_t *attr,
			    void *(*fn)(void *), void *arg);
/* The size of the block the runtime's allocator handed out at P (0: none
 * starts there). */
size_t __sanitizer_get_allocated_size(const volatile void *p);
/* What the runtime does not see of this thread, from BEGIN to END. */
void AnnotateIgnoreSyncBegin(const char *file, int line);
void AnnotateIgnoreSyncEnd(const char *file, int line);
void AnnotateIgnoreReadsBegin(const char *file, int line);
void AnnotateIgnoreReadsEnd(const char *file, int line);
void AnnotateIgnoreWritesBegin(const char *file, int line);
void AnnotateIgnoreWritesEnd(const char *file, int line);
/* The recorder has started; this thread is one the runtime runs. */
extern atomic_bool rec_tsan_ready;
extern __thread bool rec_tsan_thread_ready;
#endif

/* The recorder's dump thread (rec_hooks.c), 0 while there is none: it
 * touches nothing of the program's, and need not stand still. */
extern _Atomic pid_t rec_dump_thread;
/* Wait (briefly) until a dump thread just started has set it. */
void rec_dumper_known(void);

/* ---- rec_stop.c ---- */

/*
 * Run FN(ARG) with every other thread of the process stopped (by a
 * ptrace tracer that shares the process's memory), then let them go; FN
 * runs in the tracer, or in this thread where it is the program's only
 * one.  False when they could not be stopped: FN did not run, and *WHY
 * says why.  *STOPPED_FOR: seconds they stood still; *HELD: how many
 * they were (0 where FN ran in this thread, alone).
 */
bool rec_stop_world(void (*fn)(void *), void *arg, const char **why,
		    double *stopped_for, unsigned *held);

/* ---- rec_dump.c ---- */

/* A dump is reading the process: the hooks wait for it. */
extern atomic_bool rec_dumping;

/* (One load when no dump runs.) */
static inline void rec_hooks_wait_dump(void)
{
	if (__builtin_expect(atomic_load_explicit(&rec_dumping,
						  memory_order_relaxed),
			     0) &&
	    !rec_busy)
		rec_hooks_wait_dump_slow();
}

/* How long the last dump took (seconds), for the triggers: written by
 * whichever thread dumped, read by the one that polls them. */
double rec_last_dump_seconds(void);

/* Write one dump; REASON goes in META.  Serialized; safe from any thread
 * that is not inside a hook. */
void rec_dump(const char *reason);
/* The same, unless another dump holds on for more than MS milliseconds:
 * then false, and nothing done. */
bool rec_dump_within(const char *reason, unsigned ms);
/* After fork(), in the child: start its own files. */
void rec_dump_after_fork(void);
/* Around fork(): hold the dump lock so no child inherits it taken. */
void rec_dump_lock(void);
void rec_dump_unlock(void);
/* Keep the executable mappings of now in the .maps files (before a
 * dlclose() unmaps them). */
void rec_maps_remember(void);

/* Say something: "dmprof-recorder[PID]: " and the strings up to a NULL,
 * and a newline, to dmprof record's stderr or the run's log (never the
 * program's stderr: see rec_dump.c). */
void rec_say(const char *first, ...) __attribute__((sentinel));
/* Where to say it, from the environment (once, at start). */
void rec_say_init(void);

/* Marker functions: their addresses name the synthetic buckets. */
void dmprof_recorder_self(void);
void dmprof_glibc_malloc_arena(void);
void dmprof_recorder_block_headers(void);
void dmprof_python_object_arena(void);
void dmprof_python_object_free(void);

#endif
