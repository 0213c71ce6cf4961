/*
 * A small leaking program, the one a newcomer brings: five rounds, a dump
 * after each, and four kinds of memory whose story is known to the byte.
 *
 *   cache_fill   a flat cache, 256 KiB allocated once, never changed
 *   leak_record  a leak: 3000 bytes each call, never freed, reached from
 *                two callers: handle_get (4 a round) and handle_put (2)
 *                -> grows 18000 bytes a round, 24 blocks a round
 *   churn        64 KiB buffers allocated and freed, 16 a round: nothing
 *                retained, 1 MiB allocated a round
 *   pool_init    32 blocks of 8 KiB; pool_trim frees 4 a round
 *                -> shrinks 32768 bytes a round
 *
 * Dumps: under Debian's tcmalloc (HEAPPROFILE=...), HeapProfilerDump is
 * called at the end of each round; under dmprof record, the program sends
 * itself the recorder's signal (HEAPPROFILESIGNAL) and waits for its dump
 * file to appear.  Built with -O0 so no function is inlined and every
 * profiler sees the same frames.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 5
#define LEAK_SIZE 3000
#define POOL_BLOCKS 32
#define POOL_BLOCK 8192
#define POOL_TRIM 4

struct leaked {
	struct leaked *next;
	char data[LEAK_SIZE - sizeof(struct leaked *)];
};

static char *cache;
static struct leaked *leaks;
static char *pool[POOL_BLOCKS];
static int pool_n;

__attribute__((noinline)) void cache_fill(void)
{
	cache = malloc(256 * 1024);
	memset(cache, 1, 256 * 1024);
}

__attribute__((noinline)) void leak_record(int round)
{
	struct leaked *l = malloc(sizeof(*l));

	memset(l->data, round, sizeof(l->data));
	l->next = leaks;
	leaks = l;
}

__attribute__((noinline)) void handle_get(int round)
{
	for (int i = 0; i < 4; i++)
		leak_record(round);
}

__attribute__((noinline)) void handle_put(int round)
{
	for (int i = 0; i < 2; i++)
		leak_record(round);
}

__attribute__((noinline)) void churn(void)
{
	for (int i = 0; i < 16; i++) {
		char *volatile p = malloc(64 * 1024);

		memset(p, i, 64 * 1024);
		free(p);
	}
}

__attribute__((noinline)) void pool_init(void)
{
	for (pool_n = 0; pool_n < POOL_BLOCKS; pool_n++) {
		pool[pool_n] = malloc(POOL_BLOCK);
		memset(pool[pool_n], 2, POOL_BLOCK);
	}
}

__attribute__((noinline)) void pool_trim(void)
{
	for (int i = 0; i < POOL_TRIM && pool_n > 0; i++)
		free(pool[--pool_n]);
}

/* The recorder's dump file number N, for this process. */
static int dump_exists(const char *prefix, int n)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s.%05d.%04d.heap", prefix,
		 (int)getpid(), n);
	return access(path, F_OK) == 0;
}

static void dump(int n)
{
	void (*heap_profiler_dump)(const char *) =
		(void (*)(const char *))dlsym(RTLD_DEFAULT, "HeapProfilerDump");
	const char *sig = getenv("HEAPPROFILESIGNAL");
	const char *prefix = getenv("HEAPPROFILE");

	if (heap_profiler_dump) {
		heap_profiler_dump("end of round");
		return;
	}
	if (!sig || !atoi(sig) || !prefix)
		return;
	raise(atoi(sig));
	/* The recorder's thread writes it; wait (up to 10 s). */
	for (int i = 0; i < 1000 && !dump_exists(prefix, n); i++) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };

		nanosleep(&ts, NULL);
	}
}

int main(void)
{
	cache_fill();
	pool_init();
	for (int round = 1; round <= ROUNDS; round++) {
		handle_get(round);
		handle_put(round);
		churn();
		if (round > 1)
			pool_trim();
		dump(round);
	}
	printf("leaked %d blocks\n", ROUNDS * 6);
	return 0;
}
