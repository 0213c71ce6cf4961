/*
 * A stress test for the recorder: 8 threads make 10 million malloc/free
 * pairs between them (with calloc, realloc, aligned blocks, and big ones
 * glibc maps), while the main thread loads and unloads a library, maps and
 * unmaps memory, and forks children that allocate and exit.  It must end,
 * with the right count, under the recorder.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define THREADS 8
#define PAIRS 10000000L

static const char *plugin;
static volatile int done;

static void *churn(void *arg)
{
	uint64_t x = (uintptr_t)arg * 0x9e3779b97f4a7c15ULL + 1;
	long n = PAIRS / THREADS, sum = 0;
	void *keep[64] = { 0 };

	for (long i = 0; i < n; i++) {
		size_t size;
		void *p;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		size = 1 + x % 256;
		switch (x >> 60) {
		case 0:
			p = calloc(1, size);
			break;
		case 1:
			p = realloc(malloc(size), size * 3);
			break;
		case 2:
			if (posix_memalign(&p, 64, size))
				p = NULL;
			break;
		case 3:
			size = (x >> 40) % 3 ? 70000 : 300000; /* large, mapped */
			p = malloc(size);
			break;
		default:
			p = malloc(size);
			break;
		}
		if (!p)
			abort();
		((char *)p)[0] = (char)i;
		sum += ((char *)p)[0] != 0;
		/* Some live a while, most die at once. */
		if ((x >> 20) % 16 == 0) {
			size_t k = (x >> 30) % 64;

			free(keep[k]);
			keep[k] = p;
		} else {
			free(p);
		}
	}
	for (int k = 0; k < 64; k++)
		free(keep[k]);
	return (void *)sum;
}

static void load_unload(void)
{
	void *h = dlopen(plugin, RTLD_NOW);
	void *(*fn)(size_t);

	if (!h) {
		fprintf(stderr, "stress: %s\n", dlerror());
		exit(1);
	}
	fn = (void *(*)(size_t))dlsym(h, "plugin_alloc_blocks");
	free(fn(1000));
	dlclose(h);
}

int main(int argc, char **argv)
{
	pthread_t t[THREADS];
	int forks = 0, loads = 0;

	plugin = argc > 1 ? argv[1] : "./libplug.so";
	for (int i = 0; i < THREADS; i++)
		if (pthread_create(&t[i], NULL, churn, (void *)(uintptr_t)i))
			return 1;
	for (int round = 0; round < 40; round++) {
		pid_t pid;
		void *m;

		load_unload();
		loads++;
		m = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			return 1;
		memset(m, 1, 4096);
		munmap(m, 1 << 20);
		if (round % 8 == 0) {
			pid = fork();
			if (pid < 0)
				return 1;
			if (!pid) {
				/* The child allocates, loads, and exits. */
				void *p = malloc(100000);

				memset(p, 2, 100000);
				load_unload();
				free(p);
				exit(0);
			}
			if (waitpid(pid, NULL, 0) != pid)
				return 1;
			forks++;
		}
		usleep(10 * 1000);
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	printf("stress: %ld pairs, %d forks, %d dlopen/dlclose\n", PAIRS,
	       forks, loads);
	return 0;
}
