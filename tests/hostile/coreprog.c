/*
 * A process to take cores of (tests/hostile/run.sh): N linked blocks it
 * keeps, N/3 in a cycle it drops (leaked), a few freed into the tcache,
 * the fastbins and the unsorted bin, one block mapped of its own.  It
 * prints "PID HEAP_BLOCK MMAPPED_BLOCK" and waits; with "crash", it
 * crashes instead, for the kernel to write its core.
 * Usage: coreprog N [crash]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct node {
	struct node *next, *other;
	char name[24];
};

static struct node *keep;
static void *fence;

static struct node *chain(long n, int cycle)
{
	struct node *first = NULL, *prev = NULL;

	for (long i = 0; i < n; i++) {
		struct node *b = malloc(sizeof(*b) + (size_t)(i % 7) * 16);

		b->next = prev;
		b->other = i % 3 ? prev : NULL;
		snprintf(b->name, sizeof(b->name), "node %d", (int)i);
		if (!first)
			first = b;
		prev = b;
	}
	if (cycle && first)
		first->next = prev;
	return prev;
}

/* Stale copies of the dropped chain's pointers off the stack. */
static void scrub(void)
{
	volatile char bytes[8192];

	memset((char *)bytes, 0, sizeof(bytes));
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 300;
	static char out[256];
	void *small[16], *big, *gap;

	/* (stdout's buffer now: a large request later would consolidate
	 * the fastbins.) */
	setvbuf(stdout, out, _IOFBF, sizeof(out));

	keep = chain(n, 0);
	chain(n / 3, 1);
	scrub();
	for (int i = 0; i < 16; i++)
		small[i] = malloc(24);
	gap = malloc(1000);
	fence = malloc(16); /* (so that the 1000 bytes stay off top) */
	/* (Before the frees: a large request consolidates the fastbins.) */
	big = malloc(200000);
	memset(big, 1, 4096);
	for (int i = 0; i < 16; i++)
		free(small[i]);
	free(gap);
	printf("%d 0x%lx 0x%lx\n", (int)getpid(), (unsigned long)keep,
	       (unsigned long)big);
	fflush(stdout);
	if (argc > 2 && !strcmp(argv[2], "crash"))
		*(volatile int *)0 = 1;
	pause();
	return 0;
}
