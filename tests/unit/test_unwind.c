/*
 * The recorder's unwinder gives the same stacks as glibc's backtrace():
 * through recursion, libc (qsort's comparator), another thread, a signal
 * handler (its fallback), and a function that realigns its stack; from
 * its own frame, and from a caller's frame as a hook gives it
 * (REC_CALLER()).
 */
#include <criterion/criterion.h>
#include <execinfo.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/recorder/rec.h"

struct both {
	uintptr_t mine[REC_MAX_DEPTH];
	void *theirs[REC_MAX_DEPTH];
	unsigned n_mine;
	int n_theirs;
};

/* Unwind from the caller's frame, as the hooks do. */
static bool from_caller;

/* Both stacks from one function; their first frames are two different
 * call sites in it, the rest must agree. */
static __attribute__((noinline)) void take(struct both *b)
{
	struct rec_frame at = REC_CALLER();

	if (from_caller) {
		/* (Frame 0 is this function's, which a hook's caller skips.) */
		b->mine[0] = 0;
		b->n_mine = 1 + rec_unwind_from(&at, b->mine + 1,
						REC_MAX_DEPTH - 1, 0, 0);
	} else {
		b->n_mine = rec_unwind(b->mine, REC_MAX_DEPTH, 0, 0);
	}
	b->n_theirs = backtrace(b->theirs, REC_MAX_DEPTH);
	__asm__ volatile("" ::: "memory");
}

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
	cr_assert_leq((unsigned)b->n_theirs - (j - 1) - b->n_mine + 1, 2,
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
	rec_unwind_init();
	from_caller = false;
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
