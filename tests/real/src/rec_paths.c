/*
 * Allocations from known call paths, in known numbers, for the recorder's
 * stacks: the unwinder keeps each thread's last walks and reuses what it
 * finds unchanged (rec_unwind.c), and this mixes the paths so that it
 * meets every case it must tell apart.  ALLOC_HERE is called from LEFT
 * and from RIGHT, alike, so its frame is at the same place with another
 * stack above; PATH_FP's functions keep frame pointers; DEEP recurses to
 * depths on both sides of the recorder's 32 frames; a timer's handler
 * allocates on top of whatever it interrupted (but malloc); and two
 * threads do it all at once.  It prints how many allocations each path made, which the
 * recorder's dump at exit must say too.
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#define ROUNDS 400000
#define DEPTHS 48

struct counts {
	long left, right, fp, deep[DEPTHS];
};

/* In malloc or free: the handler must not call them now. */
static __thread volatile sig_atomic_t in_malloc;

static __attribute__((noinline)) void alloc_here(size_t n)
{
	char *p;

	in_malloc = 1;
	p = malloc(n);
	if (!p)
		abort();
	p[0] = 1;
	__asm__ volatile("" : : "r"(p) : "memory");
	free(p);
	in_malloc = 0;
}

static __attribute__((noinline)) void path_left(void)
{
	alloc_here(24);
	__asm__ volatile("" ::: "memory");
}

static __attribute__((noinline)) void path_right(void)
{
	alloc_here(24);
	__asm__ volatile("" ::: "memory");
}

/* Frame pointers: every step of the unwinder reads RBP here. */
static __attribute__((noinline, optimize("no-omit-frame-pointer"))) void
fp_inner(int k)
{
	alloc_here(40 + (size_t)k);
	__asm__ volatile("" ::: "memory");
}

static __attribute__((noinline, optimize("no-omit-frame-pointer"))) void
path_fp(int k)
{
	fp_inner(k);
	__asm__ volatile("" ::: "memory");
}

static __attribute__((noinline)) int path_deep(int d)
{
	int r;

	if (!d) {
		alloc_here(56);
		return 0;
	}
	r = path_deep(d - 1);
	__asm__ volatile("" ::: "memory");
	return r + 1;
}

static volatile sig_atomic_t ticks;

static __attribute__((noinline)) void on_tick(int sig)
{
	(void)sig;
	if (in_malloc)
		return;
	free(malloc(72));
	ticks++;
}

static void *run(void *arg)
{
	struct counts *c = arg;
	uint64_t x = (uintptr_t)arg | 1;

	for (long i = 0; i < ROUNDS; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		switch (x % 5) {
		case 0:
			path_left();
			c->left++;
			break;
		case 1:
			path_right();
			c->right++;
			break;
		case 2:
			path_fp((int)(x >> 8) % 2);
			c->fp++;
			break;
		default:
			/* (Runs of one depth, as loops make.) */
			for (int k = 0, d = (int)((x >> 16) % DEPTHS);
			     k < (int)(x >> 24) % 4 + 1; k++) {
				path_deep(d);
				c->deep[d]++;
			}
			break;
		}
	}
	return NULL;
}

int main(void)
{
	static struct counts c[2];
	struct sigaction sa;
	struct itimerval it = { { 0, 500 }, { 0, 500 } };
	pthread_t t;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_tick;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	if (pthread_create(&t, NULL, run, &c[1]))
		return 1;
	setitimer(ITIMER_REAL, &it, NULL);
	run(&c[0]);
	pthread_join(t, NULL);
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, NULL);
	printf("left %ld\nright %ld\nfp %ld\nticks %d\n", c[0].left + c[1].left,
	       c[0].right + c[1].right, c[0].fp + c[1].fp, (int)ticks);
	for (int d = 0; d < DEPTHS; d++)
		printf("deep %d %ld\n", d, c[0].deep[d] + c[1].deep[d]);
	return 0;
}
