/*
 * The recorder's unwinder gives the same stacks as glibc's backtrace():
 * through recursion, libc (qsort's comparator), another thread, a signal
 * handler (its fallback), and a function that realigns its stack; from
 * its own frame, and from a caller's frame as a hook gives it
 * (REC_CALLER()).  Its memo of each thread's last walks gives the stacks
 * a walk without it gives, word for word: when the stack above changes
 * under the same frame, with frame pointers, cut short at a depth, in a
 * signal handler that interrupts it, and after the rules are forgotten.
 * Through code of no object, as a JIT's, along its frame pointers: on to
 * the code that called it, or, where the chain breaks (RBP unaligned, out
 * of the stack, at a return address that is no code), to the JIT's frame
 * and no further, never falling back; the memo the same, where the end of
 * a walk depends on RBP.  In a program without libgcc, the first walk
 * that falls back loads it, once; one in a signal handler does not, and
 * ends at the handler.
 */
#include <criterion/criterion.h>
#include <execinfo.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "../../src/recorder/rec.h"

struct both {
	uintptr_t mine[REC_MAX_DEPTH];
	void *theirs[REC_MAX_DEPTH];
	unsigned n_mine;
	int n_theirs;
};

/* Unwind from the caller's frame, as the hooks do; with notes, as they
 * do too, up to MAX_FROM frames. */
static bool from_caller, noted;
static unsigned max_from = REC_MAX_DEPTH - 1;

/* What a noted walk keeps: its frames, once for each stack (as a hook
 * keeps their bucket). */
struct note {
	uintptr_t frames[REC_MAX_DEPTH];
	unsigned n;
};
static struct note notes[256];
static unsigned nnotes;

static struct note *note_of(const uintptr_t *frames, unsigned n)
{
	unsigned k;

	for (k = 0; k < nnotes; k++)
		if (notes[k].n == n &&
		    !memcmp(notes[k].frames, frames, n * sizeof(frames[0])))
			return &notes[k];
	cr_assert_lt(k, 256, "out of notes");
	memcpy(notes[k].frames, frames, n * sizeof(frames[0]));
	notes[k].n = n;
	nnotes++;
	return &notes[k];
}

/*
 * A walk from AT as the hooks make it, with a note; the frames from the
 * note when it has them.  It must give what a walk without the memo
 * gives, every frame.
 */
static unsigned long noted_first; /* walks that rec_unwind_noted ended */

static unsigned noted_walk(const struct rec_frame *at, uintptr_t *frames)
{
	uintptr_t plain[REC_MAX_DEPTH];
	void **place = NULL;
	/* (The hooks' first look, then the walk if it finds nothing.) */
	struct note *first = rec_unwind_noted(at, max_from, 0, 0);
	unsigned n = 0, k;
	bool was = rec_unwind_no_memo;

	if (!first)
		n = rec_unwind_from(at, frames, max_from, 0, 0, &place);
	else
		noted_first++;
	/* (A note given back: FRAMES are left as they were.) */
	if (!first && place && *place)
		first = *place;
	else if (place)
		*place = note_of(frames, n);
	if (first) {
		memcpy(frames, first->frames, first->n * sizeof(frames[0]));
		n = first->n;
	}
	rec_unwind_no_memo = true;
	k = rec_unwind_from(at, plain, max_from, 0, 0, NULL);
	rec_unwind_no_memo = was;
	cr_assert_eq(n, k, "%u frames, without the memo %u", n, k);
	for (unsigned i = 0; i < n; i++)
		cr_assert_eq(frames[i], plain[i],
			     "frame %u: %#lx, without the memo %#lx", i,
			     (unsigned long)frames[i], (unsigned long)plain[i]);
	return n;
}

/* Both stacks from one function; their first frames are two different
 * call sites in it, the rest must agree. */
static __attribute__((noinline)) void take(struct both *b)
{
	struct rec_frame at = REC_CALLER();

	if (noted) {
		b->mine[0] = 0;
		b->n_mine = 1 + noted_walk(&at, b->mine + 1);
	} else if (from_caller) {
		/* (Frame 0 is this function's, which a hook's caller skips.) */
		b->mine[0] = 0;
		b->n_mine = 1 + rec_unwind_from(&at, b->mine + 1, max_from,
						0, 0, NULL);
	} else {
		b->n_mine = rec_unwind(b->mine, REC_MAX_DEPTH, 0, 0);
	}
	b->n_theirs = backtrace(b->theirs, REC_MAX_DEPTH);
	__asm__ volatile("" ::: "memory");
}

/* Stacks cut short at MAX_FROM frames: no count to compare. */
static bool cut;

static void same(const struct both *b, unsigned want_at_least)
{
	unsigned j = 1, n;

	/*
	 * Frame 1 (the caller of take) on must agree.  backtrace() may have
	 * a frame more in front (ASan's interceptor of it) and one more at
	 * the end (_start's caller, 0).
	 */
	cr_assert_geq(b->n_mine, 2, "%u frames", b->n_mine);
	while (j < 3 && (int)j < b->n_theirs &&
	       (uintptr_t)b->theirs[j] != b->mine[1])
		j++;
	cr_assert((int)j < b->n_theirs &&
			  (uintptr_t)b->theirs[j] == b->mine[1],
		  "frame 1: %#lx, which backtrace does not have",
		  (unsigned long)b->mine[1]);
	n = b->n_theirs - (int)j + 1;
	if (n > b->n_mine)
		n = b->n_mine;
	cr_assert_geq(n, want_at_least, "only %u frames", n);
	cr_assert(cut || (unsigned)b->n_theirs - (j - 1) - b->n_mine + 1 <= 2,
		  "%u frames against backtrace's %d", b->n_mine,
		  b->n_theirs - (int)(j - 1));
	for (unsigned i = 1; i < n; i++)
		cr_assert_eq(b->mine[i], (uintptr_t)b->theirs[i + j - 1],
			     "frame %u: %#lx, backtrace says %p", i,
			     (unsigned long)b->mine[i], b->theirs[i + j - 1]);
}

static __attribute__((noinline)) int recurse(int depth, struct both *b)
{
	int r;

	if (!depth) {
		take(b);
		return 0;
	}
	r = recurse(depth - 1, b);
	__asm__ volatile("" ::: "memory");
	return r + 1;
}

static void init(void)
{
	void *warm[4];

	rec_unwind_init();
	from_caller = noted = cut = false;
	max_from = REC_MAX_DEPTH - 1;
	/* (As for a program with libgcc: backtrace() may be called.) */
	backtrace(warm, 4);
	cr_assert(rec_unwind_ready(NULL), "no libgcc after backtrace()");
}

TestSuite(unwind, .init = init);

Test(unwind, recursion)
{
	static struct both b;
	int depths[] = { 0, 3, 12, 40 };

	for (size_t i = 0; i < sizeof(depths) / sizeof(depths[0]); i++) {
		memset(&b, 0, sizeof(b));
		recurse(depths[i], &b);
		same(&b, depths[i] + 3 > REC_MAX_DEPTH ? REC_MAX_DEPTH
						       : (unsigned)depths[i] + 3);
	}
	/* Again, now from the cache. */
	recurse(12, &b);
	same(&b, 15);
	cr_assert_eq(rec_unwind_fallbacks, 0, "plain frames fell back");
}

/* The table of rules grows from its 4,096 entries when half full (a
 * rule for each of 6,000 addresses in libc's code, each walk ending at
 * a return address of 0), and the walks stay right after. */
Test(unwind, rules_grow)
{
	static struct both b;
	uintptr_t frames[REC_MAX_DEPTH], base = (uintptr_t)&qsort;
	volatile uintptr_t zeros[64] = { 0 };
	size_t before = rec_unwind_cache_size();

	cr_assert_eq(before, 4096);
	for (uintptr_t k = 0; k < 6000; k++) {
		struct rec_frame at = { base + k, (uintptr_t)zeros, 0 };

		rec_unwind_from(&at, frames, 4, 0, 0, NULL);
	}
	cr_assert_gt(rec_unwind_cache_size(), before, "still %zu entries",
		     rec_unwind_cache_size());
	memset(&b, 0, sizeof(b));
	recurse(12, &b);
	same(&b, 15);
}

/* The rules grown into a table four times the size are all kept: the
 * walks that worked them out work none out again. */
Test(unwind, rules_grow_kept)
{
	uintptr_t frames[REC_MAX_DEPTH], base = (uintptr_t)&qsort;
	volatile uintptr_t zeros[64] = { 0 };
	unsigned before;

	for (uintptr_t k = 0; k < 2100; k++) {
		struct rec_frame at = { base + k, (uintptr_t)zeros, 0 };

		rec_unwind_from(&at, frames, 2, 0, 0, NULL);
	}
	cr_assert_gt(rec_unwind_cache_size(), 4096, "it did not grow");
	before = atomic_load(&rec_unwind_computed);
	for (uintptr_t k = 0; k < 2000; k++) {
		struct rec_frame at = { base + k, (uintptr_t)zeros, 0 };

		rec_unwind_from(&at, frames, 2, 0, 0, NULL);
	}
	cr_assert_eq(atomic_load(&rec_unwind_computed), before,
		     "%u rules worked out again",
		     atomic_load(&rec_unwind_computed) - before);
}

/* A file of rules in a directory of its own: its path into PATH. */
static void rules_file(char *path, size_t size)
{
	char dir[] = "/tmp/dmprof-unwind-XXXXXX";

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, size, "%s/rules", dir);
}

static void rules_file_gone(const char *path)
{
	char dir[256];

	unlink(path);
	snprintf(dir, sizeof(dir), "%.*s", (int)(strrchr(path, '/') - path),
		 path);
	rmdir(dir);
}

/*
 * Rules saved, forgotten and loaded (as the next process of the same
 * executable does): the same stacks, with no rule worked out again.
 */
Test(unwind, rules_saved)
{
	static struct both b;
	char path[256];
	unsigned before = 0, loaded;

	rules_file(path, sizeof(path));
	/* (One call site for both walks: the same return addresses.) */
	for (int round = 0; round < 2; round++) {
		if (round) {
			cr_assert(rec_unwind_saved_save_at(path), "not saved");
			rec_unwind_forget();
			loaded = rec_unwind_saved_load_at(path);
			cr_assert_gt(loaded, 5, "%u rules loaded", loaded);
			before = atomic_load(&rec_unwind_computed);
		}
		memset(&b, 0, sizeof(b));
		recurse(12, &b);
		same(&b, 15);
	}
	cr_assert_eq(atomic_load(&rec_unwind_computed), before,
		     "%u rules worked out again",
		     atomic_load(&rec_unwind_computed) - before);
	rules_file_gone(path);
}

/* A file of rules damaged (a byte changed, cut short, of another
 * version, empty) is not used at all; the walks are still right. */
Test(unwind, rules_saved_damaged)
{
	static struct both b;
	char path[256];
	struct stat st;
	int fd;

	rules_file(path, sizeof(path));
	recurse(6, &b);
	cr_assert(rec_unwind_saved_save_at(path), "not saved");
	cr_assert_eq(stat(path, &st), 0);
	for (int how = 0; how < 4; how++) {
		char c;

		cr_assert(rec_unwind_saved_save_at(path), "not saved");
		fd = open(path, O_RDWR);
		cr_assert_geq(fd, 0);
		switch (how) {
		case 0: /* a byte of a rule */
			cr_assert_eq(pread(fd, &c, 1, st.st_size - 3), 1);
			c ^= 4;
			cr_assert_eq(pwrite(fd, &c, 1, st.st_size - 3), 1);
			break;
		case 1:
			cr_assert_eq(ftruncate(fd, st.st_size - 16), 0);
			break;
		case 2: /* another version's magic */
			cr_assert_eq(pwrite(fd, "dmpunw2\n", 8, 0), 8);
			break;
		case 3:
			cr_assert_eq(ftruncate(fd, 0), 0);
			break;
		}
		close(fd);
		rec_unwind_forget();
		cr_assert_eq(rec_unwind_saved_load_at(path), 0,
			     "damage %d: rules loaded", how);
		memset(&b, 0, sizeof(b));
		recurse(6, &b);
		same(&b, 9);
	}
	cr_assert_eq(rec_unwind_saved_load_at("/nonexistent/rules"), 0);
	rules_file_gone(path);
}

static struct both in_qsort;
static int taken;

static int cmp(const void *a, const void *b)
{
	if (!taken++)
		take(&in_qsort);
	return *(const int *)a - *(const int *)b;
}

Test(unwind, through_libc)
{
	int v[64];

	for (int i = 0; i < 64; i++)
		v[i] = (i * 37) % 64;
	qsort(v, 64, sizeof(v[0]), cmp);
	same(&in_qsort, 4);
	cr_assert_eq(rec_unwind_fallbacks, 0, "libc's frames fell back");
}

static void *thread_main(void *arg)
{
	recurse(5, arg);
	return NULL;
}

Test(unwind, another_thread)
{
	static struct both b;
	pthread_t t;

	cr_assert_eq(pthread_create(&t, NULL, thread_main, &b), 0);
	pthread_join(t, NULL);
	same(&b, 7);
}

static struct both in_handler;

static void handler(int sig)
{
	(void)sig;
	take(&in_handler);
}

Test(unwind, signal_handler)
{
	signal(SIGUSR1, handler);
	raise(SIGUSR1);
	same(&in_handler, 4);
	cr_assert_eq(rec_unwind_fallbacks, 1, "a signal frame, yet no fallback");
}

static __attribute__((noinline, force_align_arg_pointer)) void
realigned(struct both *b)
{
	char big[100] __attribute__((aligned(64)));

	memset(big, 1, sizeof(big));
	__asm__ volatile("" : : "r"(big) : "memory");
	recurse(2, b);
	__asm__ volatile("" ::: "memory");
}

Test(unwind, realigned_stack)
{
	static struct both b;

	realigned(&b);
	same(&b, 6);
}

/* The same stacks again, each from the frame of take()'s caller. */
Test(unwind, from_caller)
{
	static struct both b;
	pthread_t t;
	int v[64];

	from_caller = true;
	recurse(0, &b);
	same(&b, 3);
	recurse(40, &b);
	same(&b, 43);
	realigned(&b);
	same(&b, 6);
	cr_assert_eq(pthread_create(&t, NULL, thread_main, &b), 0);
	pthread_join(t, NULL);
	same(&b, 7);
	taken = 0;
	for (int i = 0; i < 64; i++)
		v[i] = (i * 37) % 64;
	qsort(v, 64, sizeof(v[0]), cmp);
	same(&in_qsort, 4);
	cr_assert_eq(rec_unwind_fallbacks, 0, "plain frames fell back");
	signal(SIGUSR1, handler);
	raise(SIGUSR1);
	same(&in_handler, 4);
	cr_assert_eq(rec_unwind_fallbacks, 1, "a signal frame, yet no fallback");
}

/* ---- the memo ---- */

/* The same stack again and again: found in the memo, the same frames. */
Test(unwind, memo_same_stack)
{
	static struct both b;

	noted = true;
	for (int i = 0; i < 10; i++) {
		recurse(7, &b);
		same(&b, 10);
	}
	cr_assert_geq(rec_unwind_same, 9, "%lu walks found the same stack",
		      rec_unwind_same);
	cr_assert_eq(rec_unwind_fallbacks, 0, "plain frames fell back");
}

/*
 * LEAF, called from LEFT or from RIGHT (alike, so at the same depth):
 * the walk from LEAF's frame starts where the last one started, and the
 * stack above it is another.
 */
static __attribute__((noinline)) void leaf(struct both *b)
{
	take(b);
	__asm__ volatile("" ::: "memory");
}

static __attribute__((noinline)) void left(struct both *b)
{
	leaf(b);
	__asm__ volatile("" ::: "memory");
}

static __attribute__((noinline)) void right(struct both *b)
{
	leaf(b);
	__asm__ volatile("" ::: "memory");
}

Test(unwind, memo_other_caller)
{
	static struct both b;
	void (*volatile side[2])(struct both *) = { left, right };
	uintptr_t seen[2] = { 0, 0 };

	noted = true;
	for (int i = 0; i < 12; i++) {
		side[i % 3 == 0](&b);
		same(&b, 4);
		/* (Frame 2: the return address in LEFT or RIGHT.) */
		if (i < 2)
			seen[i % 3 == 0] = b.mine[2];
		cr_assert_eq(b.mine[2], seen[i % 3 == 0], "walk %d: wrong side",
			     i);
	}
	cr_assert_neq(seen[0], seen[1]);
}

/* Frame pointers: every CFA is RBP + 16, so RBP counts everywhere. */
static __attribute__((noinline, optimize("no-omit-frame-pointer"))) int
recurse_fp(int depth, struct both *b)
{
	int r;

	if (!depth) {
		take(b);
		return 0;
	}
	r = recurse_fp(depth - 1, b);
	__asm__ volatile("" ::: "memory");
	return r + 1;
}

Test(unwind, memo_frame_pointers)
{
	static struct both b;

	noted = true;
	for (int i = 0; i < 8; i++) {
		recurse_fp(i % 2 ? 3 : 9, &b);
		same(&b, i % 2 ? 6 : 12);
	}
	cr_assert_geq(rec_unwind_same, 6, "%lu walks found the same stack",
		      rec_unwind_same);
}

/*
 * Frame pointers and alloca: FPA's frames have room made on the stack
 * below them, as much less as they are deeper, so the walk from the last
 * one starts at the same stack pointer for every depth, under a frame
 * pointer that is not the same: the words it reads must be read where
 * RBP says, not where they were the last time (where old ones remain).
 */
static uintptr_t fpa_frame;

static __attribute__((noinline, optimize("no-omit-frame-pointer"))) int
fpa(int depth, size_t pad, struct both *b)
{
	int r;

	if (!depth) {
		volatile char *room = __builtin_alloca(pad);

		room[0] = 0;
		fpa_frame = (uintptr_t)__builtin_frame_address(0);
		if (b)
			take(b);
		__asm__ volatile("" : : "r"(room) : "memory");
		return 0;
	}
	r = fpa(depth - 1, pad, b);
	__asm__ volatile("" ::: "memory");
	return r + 1;
}

Test(unwind, memo_frame_pointers_moved)
{
	static struct both b;
	uintptr_t f0, f1, size;

	fpa(0, 16, NULL);
	f0 = fpa_frame;
	fpa(1, 16, NULL);
	f1 = fpa_frame;
	size = f0 - f1; /* one frame of FPA */
	cr_assert(size > 0 && size % 16 == 0, "a frame of %lu bytes",
		  (unsigned long)size);
	noted = true;
	for (int i = 0; i < 12; i++) {
		int depth = (i * 5) % 4;

		fpa(depth, 16 + (4 - depth) * size, &b);
		same(&b, (unsigned)depth + 3);
	}
}

/*
 * Two callers in turn under the same frames (LEFT and RIGHT of
 * memo_other_caller): once each was walked twice, every walk replays a
 * path kept from the first frame (one of the two last), stepping
 * nowhere.
 */
static unsigned long same_before, paths_before, first_before;

/* Walk I of callers SIDE[0 .. NSIDE) in turn, the frames DEPTH; the
 * counts from the third round on.  (One call site of them, in a function
 * of its own: a loop's body may be copied, its calls then from other
 * return addresses.) */
static __attribute__((noinline)) void in_turn(int i, struct both *b,
					      void (*const *side)(struct both *),
					      int nside, unsigned depth)
{
	if (i == 2 * nside) {
		same_before = rec_unwind_same;
		paths_before = rec_unwind_paths;
		first_before = noted_first;
	}
	side[i % nside](b);
	same(b, depth);
}

/* Ten rounds of the callers SIDE[0 .. NSIDE) in turn: from the third on,
 * every walk replays a path, stepping nowhere. */
static void paths_replayed(void (*const *side)(struct both *), int nside,
			   unsigned depth)
{
	static struct both b;
	unsigned long counted = 8 * (unsigned long)nside;

	noted = true;
	for (int i = 0; i < 10 * nside; i++)
		in_turn(i, &b, side, nside, depth);
	cr_assert_eq(rec_unwind_same - same_before, counted,
		     "%lu of %lu walks stepped",
		     counted - (rec_unwind_same - same_before), counted);
	cr_assert_eq(rec_unwind_paths - paths_before, counted,
		     "%lu of %lu walks replayed no path",
		     counted - (rec_unwind_paths - paths_before), counted);
	/* (Each of them the hooks' first look found, with its note.) */
	cr_assert_eq(noted_first - first_before, counted,
		     "%lu of %lu walks not ended by rec_unwind_noted",
		     counted - (noted_first - first_before), counted);
}

Test(unwind, memo_paths_alternate)
{
	static void (*const side[2])(struct both *) = { left, right };

	paths_replayed(side, 2, 4);
}

/*
 * Four callers in turn of one function (as sqlite3's malloc is called,
 * through one function of its own): the walks from that function's
 * frame go on four ways.  Once each was walked, every walk replays one
 * of the paths kept from there.
 */
static __attribute__((noinline)) void mid(struct both *b)
{
	leaf(b);
	__asm__ volatile("" ::: "memory");
}

#define CALLER(name)                                                         \
	static __attribute__((noinline)) void name(struct both *b)          \
	{                                                                    \
		mid(b);                                                      \
		__asm__ volatile("" ::: "memory");                           \
	}
CALLER(north)
CALLER(south)
CALLER(east)
CALLER(west)

Test(unwind, memo_paths_four_callers)
{
	static void (*const side[4])(struct both *) = { north, south, east,
							 west };

	paths_replayed(side, 4, 5);
}

/*
 * Many stacks, at many depths and from two call sites, over and over:
 * more steps than the memo first keeps (it grows, and paths are written
 * over in their ring), every walk still what a walk without it gives.
 */
static __attribute__((noinline)) int recurse2(int depth, struct both *b)
{
	int r;

	if (!depth) {
		take(b);
		return 0;
	}
	r = depth % 3 ? recurse2(depth - 1, b) : recurse(depth - 1, b);
	__asm__ volatile("" ::: "memory");
	return r + 1;
}

Test(unwind, memo_many_stacks)
{
	static struct both b;

	noted = true;
	for (int i = 0; i < 1500; i++) {
		int depth = (i * 37) % 57;

		if (i % 2)
			recurse2(depth, &b);
		else
			recurse(depth, &b);
		same(&b, (unsigned)depth + 3);
	}
	cr_assert_eq(rec_unwind_fallbacks, 0, "plain frames fell back");
}

/* A thread that walks from ever new frames, long: its memo grows (and
 * walks are still right after). */
Test(unwind, memo_grows)
{
	static struct both b;
	uintptr_t frames[REC_MAX_DEPTH], base = (uintptr_t)&qsort;
	volatile uintptr_t zeros[64] = { 0 };
	size_t before;

	noted = true;
	recurse(3, &b);
	same(&b, 6);
	before = rec_unwind_memo_nodes();
	cr_assert_gt(before, 0);
	for (uintptr_t k = 0; k < 600000; k++) {
		struct rec_frame at = { base + k % 4000, (uintptr_t)zeros, 0 };

		rec_unwind_from(&at, frames, 2, 0, 0, NULL);
	}
	cr_assert_gt(rec_unwind_memo_nodes(), before, "still %zu nodes",
		     rec_unwind_memo_nodes());
	for (int i = 0; i < 40; i++) {
		recurse(i % 20, &b);
		same(&b, (unsigned)(i % 20) + 3);
	}
}

/* Walks cut short at their MAX frames, from depths around it. */
Test(unwind, memo_cut_short)
{
	static struct both b;
	int depths[] = { 20, 20, 3, 20, 25, 14, 6, 25, 40, 12, 12 };

	noted = cut = true;
	max_from = 16;
	for (size_t i = 0; i < sizeof(depths) / sizeof(depths[0]); i++) {
		recurse(depths[i], &b);
		cr_assert_leq(b.n_mine, 17);
		same(&b, b.n_mine);
	}
}

/* SIDE(B) from one call site: the same return address each time. */
static __attribute__((noinline)) void in_turn_cut(void (*side)(struct both *),
						  struct both *b)
{
	side(b);
	__asm__ volatile("" ::: "memory");
}

/*
 * Two callers of the same frames, cut at MAX_FROM right at the caller's
 * frame: the two walks differ in their last word only (the return
 * address into one caller or the other, every frame below at the same
 * place), which a replayed path must check too.
 */
static __attribute__((noinline)) void cut_left(struct both *b)
{
	recurse(5, b);
	__asm__ volatile("" ::: "memory");
}

static __attribute__((noinline)) void cut_right(struct both *b)
{
	recurse(5, b);
	__asm__ volatile("" ::: "memory");
}

Test(unwind, memo_cut_at_the_caller)
{
	static struct both b;
	static void (*const side[2])(struct both *) = { cut_left, cut_right };
	uintptr_t last[2] = { 0, 0 };
	unsigned at = 0;

	/* Where the callers' frame is, from a walk of the whole stack (the
	 * compiler decides how many frames recurse makes). */
	from_caller = true;
	in_turn_cut(cut_left, &b);
	for (unsigned j = 1; j < b.n_mine && !at; j++)
		if (b.mine[j] > (uintptr_t)cut_left &&
		    b.mine[j] - (uintptr_t)cut_left < 32)
			at = j;
	cr_assert(at > 1, "no frame of cut_left in the stack");
	from_caller = false;
	noted = cut = true;
	max_from = at; /* (B->mine[0] is take's own) */
	for (int i = 0; i < 12; i++) {
		in_turn_cut(side[i % 2], &b);
		cr_assert_eq(b.n_mine, at + 1, "%u frames", b.n_mine);
		last[i % 2] = b.mine[at];
		same(&b, b.n_mine);
	}
	cr_assert_neq(last[0], last[1], "the two walks end alike");
}

/* The rules forgotten (a library unloaded): no walk of before is kept. */
static void nothing(void)
{
}

Test(unwind, memo_forgotten)
{
	static struct both b;
	/* (One call site for every walk: the same stack each time.) */
	void (*volatile before[4])(void) = { nothing, nothing,
					     rec_unwind_forget, nothing };
	unsigned long was[4];

	noted = true;
	for (int i = 0; i < 4; i++) {
		before[i]();
		was[i] = rec_unwind_same;
		recurse(5, &b);
		same(&b, 8);
	}
	cr_assert_eq(was[2] - was[1], 1, "the same stack not found");
	cr_assert_eq(was[3], was[2], "a walk of before the rules were "
				     "forgotten was kept");
	cr_assert_eq(rec_unwind_same, was[3] + 1);
}

/*
 * A signal handler that walks (as a hook called from a handler does),
 * now and then in the middle of a walk of the code it interrupts: both
 * get their stacks right.
 */
static struct both in_timer;
static volatile sig_atomic_t ticks;

static void on_timer(int sig)
{
	(void)sig;
	take(&in_timer);
	ticks++;
}

Test(unwind, memo_interrupted)
{
	static struct both b;
	struct sigaction sa;
	struct itimerval it = { { 0, 200 }, { 0, 200 } };
	int seen = 0;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_timer;
	sigaction(SIGALRM, &sa, NULL);
	noted = true;
	/* (A handler cannot make the memo, nor load libgcc for backtrace()
	 * while the code it interrupts does: a hook's thread has both.) */
	recurse(0, &b);
	setitimer(ITIMER_REAL, &it, NULL);
	for (int i = 0; i < 20000 && seen < 20; i++) {
		recurse(i % 7, &b);
		same(&b, (unsigned)(i % 7) + 3);
		if (ticks) {
			same(&in_timer, 3);
			ticks = 0;
			seen++;
		}
	}
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, NULL);
	cr_assert_gt(seen, 0, "no signal came");
}

/* ---- code of no object: a JIT's, along its frame pointers ---- */

/*
 * A function of no object, as a JIT makes one: a frame pointer, then a
 * call of FN(ARG) with RBP set to BP meanwhile (BP 0: left alone), its
 * return address JIT_RA.  (push rbp; mov rbp, rsp; push rbx; sub rsp, 8;
 * mov rbx, rbp; mov rax, rdi; mov rdi, rsi; test rdx, rdx; cmovne rbp,
 * rdx; call rax; mov rbp, rbx; add rsp, 8; pop rbx; pop rbp; ret)
 */
static const unsigned char jit_code[] = {
	0x55, 0x48, 0x89, 0xe5, 0x53, 0x48, 0x83, 0xec, 0x08, 0x48, 0x89,
	0xeb, 0x48, 0x89, 0xf8, 0x48, 0x89, 0xf7, 0x48, 0x85, 0xd2, 0x48,
	0x0f, 0x45, 0xea, 0xff, 0xd0, 0x48, 0x89, 0xdd, 0x48, 0x83, 0xc4,
	0x08, 0x5b, 0x5d, 0xc3,
};
#define JIT_RA 27 /* after the call */

typedef void jit_fn(void (*fn)(void *), void *arg, uintptr_t bp);
static jit_fn *jit;
static uintptr_t data_word; /* not code */

static void jit_make(void)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	cr_assert_neq(p, MAP_FAILED);
	memcpy(p, jit_code, sizeof(jit_code));
	cr_assert_eq(mprotect(p, 4096, PROT_READ | PROT_EXEC), 0);
	jit = (jit_fn *)p;
}

static __attribute__((noinline)) void in_jit(void *arg)
{
	take(arg);
	__asm__ volatile("" ::: "memory");
}

/* The walk's frames past the JIT's: where the code that called it was
 * called from, as backtrace() has them. */
static void *after_jit[REC_MAX_DEPTH];
static int n_after_jit;

/* Call in_jit through the JIT's function, RBP BP in it (0: a frame
 * pointer); a fake frame of FAKE_RA above, for BP to point at. */
static __attribute__((noinline)) void via_jit(struct both *b, int bp_kind,
					      uintptr_t fake_ra)
{
	volatile uintptr_t fake[4] = { 0, fake_ra, 0, 0 };
	uintptr_t bp = bp_kind == 1 ? 8                       /* unaligned */
		       : bp_kind == 2 ? (uintptr_t)&data_word /* no stack */
		       : bp_kind == 3 ? (uintptr_t)&fake[0]   /* a frame */
				      : 0;

	n_after_jit = backtrace(after_jit, REC_MAX_DEPTH);
	jit(in_jit, b, bp);
	__asm__ volatile("" : : "r"(fake) : "memory");
}

/* B's frames: take's caller, the JIT's frame, then (BROKEN) nothing or
 * what led to via_jit. */
static void through_jit(const struct both *b, bool broken)
{
	uintptr_t ra = (uintptr_t)jit + JIT_RA;
	int j;

	cr_assert_geq(b->n_mine, 3, "%u frames", b->n_mine);
	cr_assert_eq(b->mine[2], ra, "frame 2: %#lx, not the JIT's %#lx",
		     (unsigned long)b->mine[2], (unsigned long)ra);
	if (broken) {
		cr_assert_eq(b->n_mine, 3, "%u frames past a broken chain",
			     b->n_mine - 3);
		return;
	}
	/* Frame 3 is in via_jit, then via_jit's callers as backtrace()
	 * saw them from it (after its frame in via_jit, and ASan's
	 * interceptor of it in front of that). */
	cr_assert_geq(b->n_mine, 5, "%u frames", b->n_mine);
	for (j = 1; j < 3 && j < n_after_jit &&
		    (uintptr_t)after_jit[j] != b->mine[4];
	     j++)
		;
	cr_assert(j < n_after_jit && (uintptr_t)after_jit[j] == b->mine[4],
		  "frame 4: %#lx, which backtrace does not have",
		  (unsigned long)b->mine[4]);
	for (unsigned i = 5; i < b->n_mine && (int)i - 4 + j < n_after_jit;
	     i++)
		cr_assert_eq(b->mine[i], (uintptr_t)after_jit[(int)i - 4 + j],
			     "frame %u: %#lx, backtrace says %p", i,
			     (unsigned long)b->mine[i],
			     after_jit[(int)i - 4 + j]);
}

Test(unwind, jit_frames)
{
	static struct both b;

	jit_make();
	from_caller = true;
	for (int i = 0; i < 3; i++) {
		memset(&b, 0, sizeof(b));
		via_jit(&b, 0, 0);
		through_jit(&b, false);
	}
	cr_assert_eq(rec_unwind_fallbacks, 0, "the JIT's frame fell back");
	cr_assert(rec_unwind_jit, "no JIT frame seen");
}

/* A chain broken in the JIT's frame ends the walk there: RBP unaligned,
 * out of the stack, at a frame whose return address is no code (the
 * frame is not one), at one whose is the JIT's code (a frame more, then
 * the end at its RBP 0). */
Test(unwind, jit_broken_chain)
{
	static struct both b;

	jit_make();
	from_caller = true;
	for (int kind = 1; kind <= 3; kind++) {
		memset(&b, 0, sizeof(b));
		via_jit(&b, kind, (uintptr_t)&data_word);
		through_jit(&b, true);
	}
	memset(&b, 0, sizeof(b));
	via_jit(&b, 3, (uintptr_t)jit + 1);
	cr_assert_eq(b.n_mine, 4, "%u frames", b.n_mine);
	cr_assert_eq(b.mine[3], (uintptr_t)jit + 1);
	cr_assert_eq(rec_unwind_fallbacks, 0, "a broken chain fell back");
}

/* The memo through the JIT's frames: the same frames as without it, the
 * chain whole or broken by turns under the same frame (where the walk
 * ended depends on RBP, which the memo must check). */
Test(unwind, memo_jit)
{
	static struct both b;
	/* (A broken chain first: the walks after it must not take its
	 * end for theirs.) */
	static const int kinds[] = { 1, 0, 1, 3, 0, 0, 3, 3, 2, 0, 2, 3 };

	jit_make();
	noted = true;
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		memset(&b, 0, sizeof(b));
		via_jit(&b, kinds[i], (uintptr_t)jit + 1);
		if (kinds[i] == 3)
			cr_assert_eq(b.mine[3], (uintptr_t)jit + 1,
				     "walk %zu: no fake frame", i);
		else
			through_jit(&b, kinds[i] != 0);
	}
	cr_assert_gt(rec_unwind_same, 0, "no walk found the same stack");
}

/* ---- libgcc left unloaded until a walk falls back ---- */

/*
 * test_unwind_expr_frame(FN, ARG) calls FN(ARG) from a frame whose CFA
 * is a DWARF expression (RBP + 16), which the unwinder leaves to
 * backtrace().
 */
void test_unwind_expr_frame(void (*fn)(void *), void *arg);
__asm__(".text\n"
	".globl test_unwind_expr_frame\n"
	".type test_unwind_expr_frame, @function\n"
	"test_unwind_expr_frame:\n"
	".cfi_startproc\n"
	"push %rbp\n"
	".cfi_def_cfa_offset 16\n"
	".cfi_offset %rbp, -16\n"
	"mov %rsp, %rbp\n"
	".cfi_escape 0x0f, 0x02, 0x76, 0x10\n" /* def_cfa_expression breg6 16 */
	"mov %rdi, %rax\n"
	"mov %rsi, %rdi\n"
	"call *%rax\n"
	"pop %rbp\n"
	".cfi_def_cfa %rsp, 8\n"
	"ret\n"
	".cfi_endproc\n"
	".size test_unwind_expr_frame, .-test_unwind_expr_frame\n");

static int links;
static bool gcc_there;

static void count_link(void)
{
	void *warm[4];

	backtrace(warm, 4);
	links++;
}

static void lazy_init(void)
{
	rec_unwind_init();
	from_caller = noted = cut = false;
	max_from = REC_MAX_DEPTH - 1;
	links = 0;
	gcc_there = rec_unwind_ready(count_link);
}

TestSuite(unwind_lazy, .init = lazy_init);

static __attribute__((noinline)) void take_void(void *b)
{
	take(b);
	__asm__ volatile("" ::: "memory");
}

Test(unwind_lazy, linked_by_the_first_fallback)
{
	static struct both b;

	if (gcc_there)
		cr_skip_test("libgcc was loaded before the test began");
	recurse(3, &b);
	same(&b, 6);
	cr_assert_eq(links, 0, "plain frames loaded libgcc");
	for (int i = 0; i < 3; i++) {
		test_unwind_expr_frame(take_void, &b);
		same(&b, 4);
	}
	cr_assert_eq(rec_unwind_fallbacks, 3, "%lu fallbacks",
		     (unsigned long)rec_unwind_fallbacks);
	cr_assert_eq(links, 1, "libgcc loaded %d times", links);
	cr_assert_eq(rec_unwind_cut, 0);
}

static struct both in_lazy_handler;

static void lazy_handler(int sig)
{
	(void)sig;
	take(&in_lazy_handler);
	__asm__ volatile("" ::: "memory"); /* (a frame of its own) */
}

Test(unwind_lazy, cut_in_a_signal_handler)
{
	static struct both b;

	if (gcc_there)
		cr_skip_test("libgcc was loaded before the test began");
	signal(SIGUSR1, lazy_handler);
	raise(SIGUSR1);
	/* take, the handler, the kernel's way back: no further. */
	cut = true;
	same(&in_lazy_handler, 3);
	cr_assert_eq(in_lazy_handler.n_mine, 3, "%u frames",
		     in_lazy_handler.n_mine);
	cr_assert_gt(in_lazy_handler.n_theirs, 5, "backtrace: %d frames",
		     in_lazy_handler.n_theirs);
	cr_assert_eq(links, 0, "libgcc loaded in a signal handler");
	cr_assert_eq(rec_unwind_cut, 1);
	/* Out of the handler, a fallback loads it; then the handler's
	 * walks go through. */
	test_unwind_expr_frame(take_void, &b);
	same(&b, 4);
	cr_assert_eq(links, 1);
	cut = false;
	raise(SIGUSR1);
	same(&in_lazy_handler, 4);
	cr_assert_eq(rec_unwind_cut, 1);
}
