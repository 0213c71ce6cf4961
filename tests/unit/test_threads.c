/*
 * Work on other threads (threads.h): a task, started or done here, what
 * it says kept for the caller; a pool's every share done once, on its
 * own thread or here; the hand-off between two threads: blocks in
 * order, a consumer that stops the producer, and what the producer says
 * said in order with the rest, the same on one thread as on two.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "threads.h"
#include "helpers.h"
#include "util.h"

enum { SLOTS = 3 };

struct counting {
	int block[SLOTS];    /* the blocks: a number each */
	int nblocks;         /* the producer puts 0 to nblocks - 1 */
	int stop_at;         /* the consumer stops there (-1: never) */
	int next;            /* the block the consumer wants next */
	int put;             /* blocks the producer put */
	bool chatty;         /* both say what they do */
};

static int produce(struct handoff *h, void *ctx)
{
	struct counting *c = ctx;

	for (int i = 0; i < c->nblocks; i++) {
		size_t slot;

		if (c->chatty)
			warning("filled %d", i);
		if ((slot = handoff_slot(h)) == SIZE_MAX)
			return 0;
		cr_assert_lt(slot, SLOTS);
		c->block[slot] = i;
		c->put++;
		if (!handoff_put(h))
			return 0;
	}
	if (c->chatty)
		warning("the end");
	return 7;
}

static int consume(void *ctx, size_t slot)
{
	struct counting *c = ctx;

	cr_assert_eq(c->block[slot], c->next, "block %d, not %d",
		     c->block[slot], c->next);
	if (c->chatty)
		warning("took %d", c->next);
	if (c->next == c->stop_at)
		return 5;
	c->next++;
	return 0;
}

static void on_threads(const char *n)
{
	setenv("DMPROF_THREADS", n, 1);
}

static void blocks_in_order(const char *threads)
{
	struct counting c = { .nblocks = 1000, .stop_at = -1 };

	on_threads(threads);
	cr_assert_eq(handoff_run(SLOTS, produce, consume, &c), 7);
	cr_assert_eq(c.next, 1000);
}

Test(handoff, blocks_in_order_on_two_threads)
{
	blocks_in_order("2");
}

Test(handoff, blocks_in_order_on_one)
{
	blocks_in_order("1");
}

static void consumer_stops(const char *threads)
{
	struct counting c = { .nblocks = 1000, .stop_at = 10 };

	on_threads(threads);
	cr_assert_eq(handoff_run(SLOTS, produce, consume, &c), 5);
	cr_assert_eq(c.next, 10);
	/* The producer stopped: a ring's worth past it at the most. */
	cr_assert_leq(c.put, 11 + SLOTS);
}

Test(handoff, the_consumer_stops_the_producer)
{
	consumer_stops("2");
}

Test(handoff, the_consumer_stops_the_producer_on_one_thread)
{
	consumer_stops("1");
}

static const char *said(const char *threads, int stop_at)
{
	struct counting c = { .nblocks = 3, .stop_at = stop_at,
			      .chatty = true };

	on_threads(threads);
	capture_stderr();
	handoff_run(SLOTS, produce, consume, &c);
	return stderr_text();
}

Test(handoff, what_the_producer_says_follows_its_block)
{
	static const char all[] = "dmprof: warning: took 0\n"
				  "dmprof: warning: filled 0\n"
				  "dmprof: warning: took 1\n"
				  "dmprof: warning: filled 1\n"
				  "dmprof: warning: took 2\n"
				  "dmprof: warning: filled 2\n"
				  "dmprof: warning: the end\n";
	/* Stopped at 1: not what was said filling it, nor after. */
	static const char stopped[] = "dmprof: warning: took 0\n"
				      "dmprof: warning: filled 0\n"
				      "dmprof: warning: took 1\n";

	cr_assert_str_eq(said("2", -1), all);
	cr_assert_str_eq(said("1", -1), all);
	cr_assert_str_eq(said("2", 1), stopped);
	cr_assert_str_eq(said("1", 1), stopped);
}

static int produce_nothing(struct handoff *h, void *ctx)
{
	(void)h;
	(void)ctx;
	error("cannot read");
	return -1;
}

Test(handoff, a_producer_that_fails_at_once)
{
	struct counting c = { .stop_at = -1 };

	on_threads("2");
	capture_stderr();
	cr_assert_eq(handoff_run(SLOTS, produce_nothing, consume, &c), -1);
	cr_assert_str_eq(stderr_text(), "dmprof: cannot read\n");
	cr_assert_eq(c.next, 0);
}

/* ---- a task ---- */

struct job {
	int in, out;
};

static void square(void *arg)
{
	struct job *j = arg;

	warning("squaring %d", j->in);
	j->out = j->in * j->in;
}

Test(task, runs_on_a_thread_and_keeps_what_it_says)
{
	struct task t = { 0 };
	struct job j = { 7, 0 };

	on_threads("2");
	capture_stderr();
	cr_assert(task_start(&t, square, &j, true));
	task_join(&t);
	cr_assert_eq(j.out, 49);
	/* Kept, not said, until the caller says it. */
	cr_assert_str_eq(stderr_text(), "");
	report_replay(&t.said);
	cr_assert_str_eq(stderr_text(), "dmprof: warning: squaring 7\n");
	/* Started again, what the last one said is gone. */
	j.in = 3;
	cr_assert(task_start(&t, square, &j, true));
	task_release(&t);
	cr_assert_eq(j.out, 9);
}

Test(task, one_thread_wanted_starts_nothing)
{
	struct task t = { 0 };
	struct job j = { 7, 0 };

	on_threads("1");
	cr_assert_not(task_start(&t, square, &j, false));
	cr_assert_not(t.running);
	cr_assert_eq(j.out, 0);
	/* (Joining what was not started is nothing.) */
	task_release(&t);
}

/* ---- a pool ---- */

struct pool_ctx {
	int done[16];
	bool here[16];
};

static void mark(void *ctx, size_t i, bool here)
{
	struct pool_ctx *p = ctx;

	p->done[i]++;
	p->here[i] = here;
}

Test(pool, every_share_once)
{
	struct pool_ctx p;

	memset(&p, 0, sizeof(p));

	pool_run(16, mark, &p);
	for (int i = 0; i < 16; i++)
		cr_assert_eq(p.done[i], 1, "share %d done %d times", i,
			     p.done[i]);
	/* Share 0 is this thread's. */
	cr_assert(p.here[0]);
	pool_run(0, mark, &p);
	pool_run(1, mark, &p);
	cr_assert_eq(p.done[0], 2);
	cr_assert_eq(p.done[1], 1);
}
