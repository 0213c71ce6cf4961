/*
 * Work on the other cores (see threads.h): a task, a pool, and the
 * hand-off, where one thread produces blocks and another consumes them
 * (the ring's counters under one lock, a condition both sides wait on,
 * and what the producer says kept per slot, so that a run says the same
 * thing in the same order on one core as on two).
 */
#include "threads.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

/* The cores online, asked once: glibc reads a file of /sys each time
 * (five times for each dump a deep run reads). */
static long online(void)
{
	static _Atomic long n;
	long v = atomic_load_explicit(&n, memory_order_relaxed);

	if (!v) {
		v = sysconf(_SC_NPROCESSORS_ONLN);
		atomic_store_explicit(&n, v, memory_order_relaxed);
	}
	return v;
}

size_t threads_wanted(void)
{
	const char *env = getenv("DMPROF_THREADS");
	long n = env ? strtol(env, NULL, 10) : online();

	return n < 1 ? 1 : n > 16 ? 16 : (size_t)n;
}

/* ---- a task ---- */

static void *task_main(void *arg)
{
	struct task *t = arg;

	if (t->capture)
		report_capture(&t->said);
	t->fn(t->arg);
	if (t->capture)
		report_capture(NULL);
	return NULL;
}

bool task_start(struct task *t, void (*fn)(void *arg), void *arg,
		bool capture)
{
	t->running = false;
	t->fn = fn;
	t->arg = arg;
	t->capture = capture;
	sb_reset(&t->said);
	if (threads_wanted() < 2 ||
	    pthread_create(&t->tid, NULL, task_main, t) != 0)
		return false;
	t->running = true;
	return true;
}

void task_join(struct task *t)
{
	if (!t->running)
		return;
	pthread_join(t->tid, NULL);
	t->running = false;
}

void task_release(struct task *t)
{
	task_join(t);
	sb_release(&t->said);
}

/* ---- a count to wait on ---- */

void progress_init(struct progress *p)
{
	atomic_init(&p->done, 0);
	atomic_init(&p->waiting, false);
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
}

void progress_free(struct progress *p)
{
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->cond);
}

/*
 * (Sequentially consistent, both sides: the raiser stores DONE and then
 * reads WAITING, the waiter stores WAITING and then reads DONE, so at
 * least one of them sees the other's store: no wait is missed.)
 */
void progress_set(struct progress *p, size_t done)
{
	atomic_store(&p->done, done);
	if (atomic_load(&p->waiting)) {
		pthread_mutex_lock(&p->lock);
		pthread_cond_broadcast(&p->cond);
		pthread_mutex_unlock(&p->lock);
	}
}

void progress_wait(struct progress *p, size_t n)
{
	if (atomic_load_explicit(&p->done, memory_order_acquire) >= n)
		return;
	pthread_mutex_lock(&p->lock);
	atomic_store(&p->waiting, true);
	while (atomic_load(&p->done) < n)
		pthread_cond_wait(&p->cond, &p->lock);
	atomic_store(&p->waiting, false);
	pthread_mutex_unlock(&p->lock);
}

/* ---- a pool ---- */

struct share {
	void (*fn)(void *ctx, size_t i, bool here);
	void *ctx;
	size_t i;
};

static void *share_main(void *arg)
{
	struct share *s = arg;

	s->fn(s->ctx, s->i, false);
	return NULL;
}

void pool_run(size_t n, void (*fn)(void *ctx, size_t i, bool here),
	      void *ctx)
{
	pthread_t tid[16];
	struct share shares[16];
	size_t started = 0;

	if (n > 16)
		BUG("a pool of %zu threads", n);
	for (size_t i = 1; i < n; i++) {
		shares[i] = (struct share){ fn, ctx, i };
		if (pthread_create(&tid[i], NULL, share_main, &shares[i]))
			break;
		started = i;
	}
	/* This thread takes its share, and those of threads not started. */
	if (n)
		fn(ctx, 0, true);
	for (size_t i = started + 1; i < n; i++)
		fn(ctx, i, true);
	for (size_t i = 1; i <= started; i++)
		pthread_join(tid[i], NULL);
}

/* ---- the hand-off ---- */

struct handoff {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	size_t nslots;
	size_t put, taken;   /* blocks put and consumed so far */
	bool threaded;
	bool done;           /* the producer has returned, */
	int produced;        /* this */
	int stopped;         /* what the consumer stopped with; 0: goes on */
	int (*produce)(struct handoff *h, void *ctx);
	int (*consume)(void *ctx, size_t slot);
	void *ctx;
	struct strbuf said;  /* what the producer said since its last put */
	struct strbuf *slot_said; /* and while it filled each full slot */
};

size_t handoff_slot(struct handoff *h)
{
	size_t slot;

	if (!h->threaded)
		return h->stopped ? SIZE_MAX : 0;
	pthread_mutex_lock(&h->lock);
	while (h->put - h->taken == h->nslots && !h->stopped)
		pthread_cond_wait(&h->cond, &h->lock);
	slot = h->stopped ? SIZE_MAX : h->put % h->nslots;
	pthread_mutex_unlock(&h->lock);
	return slot;
}

bool handoff_put(struct handoff *h)
{
	struct strbuf *s;
	struct strbuf t;
	bool go_on;

	if (!h->threaded) {
		/* (What the consumer says is said now, not kept.) */
		report_capture(NULL);
		h->stopped = h->consume(h->ctx, 0);
		if (!h->stopped)
			report_replay(&h->said);
		sb_reset(&h->said);
		report_capture(&h->said);
		return !h->stopped;
	}
	/* The slot is the producer's until it is put. */
	s = &h->slot_said[h->put % h->nslots];
	t = *s;
	*s = h->said;
	h->said = t;
	sb_reset(&h->said);
	pthread_mutex_lock(&h->lock);
	h->put++;
	go_on = !h->stopped;
	pthread_cond_broadcast(&h->cond);
	pthread_mutex_unlock(&h->lock);
	return go_on;
}

static void *producer_main(void *arg)
{
	struct handoff *h = arg;
	int rc;

	report_capture(&h->said);
	rc = h->produce(h, h->ctx);
	report_capture(NULL);
	pthread_mutex_lock(&h->lock);
	h->produced = rc;
	h->done = true;
	pthread_cond_broadcast(&h->cond);
	pthread_mutex_unlock(&h->lock);
	return NULL;
}

/* Consume what the producer puts until it is done or the consumer
 * stops. */
static void consume_all(struct handoff *h)
{
	for (;;) {
		size_t slot;
		int rc;

		pthread_mutex_lock(&h->lock);
		while (h->taken == h->put && !h->done)
			pthread_cond_wait(&h->cond, &h->lock);
		if (h->taken == h->put) {
			pthread_mutex_unlock(&h->lock);
			return;
		}
		slot = h->taken % h->nslots;
		pthread_mutex_unlock(&h->lock);
		rc = h->consume(h->ctx, slot);
		if (!rc)
			report_replay(&h->slot_said[slot]);
		sb_reset(&h->slot_said[slot]);
		pthread_mutex_lock(&h->lock);
		h->taken++;
		h->stopped = rc;
		pthread_cond_broadcast(&h->cond);
		pthread_mutex_unlock(&h->lock);
		if (rc)
			return;
	}
}

int handoff_run(size_t nslots, int (*produce)(struct handoff *h, void *ctx),
		int (*consume)(void *ctx, size_t slot), void *ctx)
{
	struct handoff h = { .nslots = nslots ? nslots : 1,
			     .produce = produce,
			     .consume = consume,
			     .ctx = ctx };
	pthread_t tid;

	pthread_mutex_init(&h.lock, NULL);
	pthread_cond_init(&h.cond, NULL);
	h.slot_said = xcalloc(h.nslots, sizeof(*h.slot_said));
	/* (Said before the thread starts: it asks.) */
	h.threaded = threads_wanted() > 1;
	if (h.threaded && pthread_create(&tid, NULL, producer_main, &h))
		h.threaded = false;
	if (h.threaded) {
		consume_all(&h);
		pthread_join(tid, NULL);
	} else {
		report_capture(&h.said);
		h.produced = produce(&h, ctx);
		report_capture(NULL);
	}
	/* What it said after its last block. */
	if (!h.stopped)
		report_replay(&h.said);
	sb_release(&h.said);
	for (size_t i = 0; i < h.nslots; i++)
		sb_release(&h.slot_said[i]);
	free(h.slot_said);
	pthread_mutex_destroy(&h.lock);
	pthread_cond_destroy(&h.cond);
	return h.stopped ? h.stopped : h.produced;
}
