/*
 * Thread stacks under the recorder: 16 threads that each touch 1 MiB of
 * their stack, alive when the SIGUSR2 dump is taken; beside them threads
 * that end by pthread_exit() and by cancellation, one on a stack the
 * program allocated itself (its memory is malloc's, not a thread stack),
 * and one that calls pthread_getattr_np() first thing, as Rust's std does
 * (which mallocs under the thread's lock).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { N = 16, TOUCH = 1024 * 1024 };

static pthread_barrier_t bar;

static __attribute__((noinline)) void *worker(void *arg)
{
	volatile char buf[TOUCH];

	memset((char *)buf, 1, sizeof(buf));
	pthread_barrier_wait(&bar); /* all touched */
	pthread_barrier_wait(&bar); /* the dump is taken */
	return (void *)(long)buf[(long)arg];
}

static void *exits(void *arg)
{
	pthread_exit(arg);
}

static void *cancelled(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

static void *asks_attr(void *arg)
{
	pthread_attr_t a;
	void *lo;
	size_t size;

	if (pthread_getattr_np(pthread_self(), &a) ||
	    pthread_attr_getstack(&a, &lo, &size))
		abort();
	pthread_attr_destroy(&a);
	return arg;
}

static void start_threads(pthread_t *t)
{
	for (long i = 0; i < N; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)i))
			abort();
}

int main(void)
{
	pthread_t t[N], x;
	pthread_attr_t own;
	size_t own_size = 1 << 20;
	void *own_stack = malloc(own_size);

	pthread_barrier_init(&bar, NULL, N + 1);
	start_threads(t);
	pthread_create(&x, NULL, exits, NULL);
	pthread_join(x, NULL);
	pthread_create(&x, NULL, cancelled, NULL);
	pthread_cancel(x);
	pthread_join(x, NULL);
	pthread_create(&x, NULL, asks_attr, NULL);
	pthread_join(x, NULL);
	pthread_attr_init(&own);
	pthread_attr_setstack(&own, own_stack, own_size);
	pthread_create(&x, &own, asks_attr, NULL);
	pthread_join(x, NULL);
	pthread_attr_destroy(&own);

	pthread_barrier_wait(&bar);
	kill(getpid(), SIGUSR2);
	usleep(300 * 1000);
	pthread_barrier_wait(&bar);
	for (int i = 0; i < N; i++)
		pthread_join(t[i], NULL);
	free(own_stack);
	puts("threads: ok");
	return 0;
}
