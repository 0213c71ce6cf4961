/*
 * A thread's malloc arena whose heap the kernel merged with an anonymous
 * mapping just below it (as a JIT's mappings may land): the heap no
 * longer starts a mapping.  Its blocks are counted, and its heap with
 * them (a dump asked for with SIGUSR2).  Prints "merged: yes" when the
 * kernel merged them, "merged: no" when it did not (no room below, or
 * other rights).
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define N 2000
static char *v[N];

static void *work(void *arg)
{
	(void)arg;
	for (int i = 0; i < N; i++) {
		v[i] = malloc(1000);
		memset(v[i], i & 0xff, 1000);
	}
	return NULL;
}

/* Does a line of /proc/self/maps start below ADDR and end past it? */
static int inside(uintptr_t addr)
{
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned long lo, hi;
	char line[512];
	int yes = 0;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && lo < addr &&
		    addr < hi)
			yes = 1;
	if (f)
		fclose(f);
	return yes;
}

int main(void)
{
	pthread_t t;
	uintptr_t base;
	size_t len = 1 << 20;
	char *below;

	pthread_create(&t, NULL, work, NULL);
	pthread_join(t, NULL);
	base = (uintptr_t)v[0] & ~(((uintptr_t)64 << 20) - 1);
	below = mmap((void *)(base - len), len, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE |
			     MAP_FIXED_NOREPLACE,
		     -1, 0);
	if (below != MAP_FAILED)
		memset(below, 1, len);
	raise(SIGUSR2);
	usleep(300 * 1000);
	printf("merged: %s\n", below != MAP_FAILED && inside(base) ? "yes"
								   : "no");
	return 0;
}
