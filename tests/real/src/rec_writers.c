/*
 * Threads that keep writing while dumps are taken: the case where a dump
 * that is not one instant stops adding up.
 *
 *   writers (2)     never allocate after they start: each owns a 24 MiB
 *                   malloc block and a 24 MiB mapping, and every lap
 *                   faults pages in further along both, rewrites the ones
 *                   before, and gives half of the mapping back
 *                   (MADV_DONTNEED), checking what it reads
 *   allocators (2)  malloc, realloc and free blocks of 16 B to 8 MiB
 *                   (past glibc's mmap threshold, in several arenas)
 *
 * Usage: rec_writers SECONDS [_exit]; prints "writers: ok" when every
 * check held.  With _exit, the process ends with _exit(0) while its
 * threads still run (and a dump may be under way).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define REGION (24u << 20)
#define PAGE 4096u

static atomic_bool stop;
static atomic_int bad;

static void *writer(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	unsigned char *block = malloc(REGION);
	unsigned char *map = mmap(NULL, REGION, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	size_t at = 0;
	unsigned lap = 0;

	if (!block || map == MAP_FAILED) {
		atomic_fetch_add(&bad, 1);
		return NULL;
	}
	while (!atomic_load(&stop)) {
		unsigned char v = (unsigned char)(seed + lap);

		/* Fault in the next pages, rewrite the earlier ones. */
		at = (at + 64 * PAGE) % REGION;
		for (size_t i = 0; i < at; i += PAGE) {
			block[i] = v;
			map[i] = v;
		}
		for (size_t i = 0; i < at; i += 16 * PAGE)
			if (block[i] != v || map[i] != v)
				atomic_fetch_add(&bad, 1);
		/* Give back half of the mapping now and then. */
		if (++lap % 8 == 0)
			madvise(map + REGION / 2, REGION / 2, MADV_DONTNEED);
	}
	munmap(map, REGION);
	free(block);
	return NULL;
}

static void *allocator(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	void *keep[64] = { 0 };

	while (!atomic_load(&stop)) {
		unsigned i = rand_r(&seed) % 64;
		size_t size = (size_t)16 << (rand_r(&seed) % 20); /* to 8 MiB */

		if (keep[i] && rand_r(&seed) % 4 == 0) {
			void *p = realloc(keep[i], size);

			if (p) {
				keep[i] = p;
				memset(p, 1, size < 65536 ? size : 65536);
			}
			continue;
		}
		free(keep[i]);
		keep[i] = malloc(size);
		if (keep[i])
			memset(keep[i], 2, size < 65536 ? size : 65536);
	}
	for (unsigned i = 0; i < 64; i++)
		free(keep[i]);
	return NULL;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 2;
	pthread_t t[4];
	struct timespec ts = { (time_t)seconds,
			       (long)((seconds - (time_t)seconds) * 1e9) };

	for (int i = 0; i < 2; i++) {
		pthread_create(&t[i], NULL, writer, (void *)(uintptr_t)(i + 1));
		pthread_create(&t[2 + i], NULL, allocator,
			       (void *)(uintptr_t)(i + 7));
	}
	nanosleep(&ts, NULL);
	if (argc > 2 && !strcmp(argv[2], "_exit")) {
		puts("writers: ok");
		fflush(stdout);
		_exit(0);
	}
	atomic_store(&stop, true);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	if (atomic_load(&bad)) {
		printf("writers: %d checks failed\n", atomic_load(&bad));
		return 1;
	}
	puts("writers: ok");
	return 0;
}
