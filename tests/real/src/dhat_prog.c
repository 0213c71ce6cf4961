/*
 * A program for Valgrind's DHAT: a peak of 64 KiB of short-lived blocks
 * (freed before the end), 10 blocks of 1000 bytes kept to the end (a
 * leak), and a buffer grown with realloc, inlined helpers included.
 */
#include <stdlib.h>
#include <string.h>

void *keep[16]; /* (global: the compiler keeps the leak) */

static inline void *inlined_alloc(size_t n)
{
	return malloc(n);
}

__attribute__((noinline)) static void leak_some(void)
{
	for (int i = 0; i < 10; i++)
		keep[i] = inlined_alloc(1000);
}

__attribute__((noinline)) static void peak(void)
{
	void *v[16];

	for (int i = 0; i < 16; i++)
		v[i] = memset(malloc(4096), 1, 4096);
	for (int i = 0; i < 16; i++)
		free(v[i]);
}

__attribute__((noinline)) static char *grow(void)
{
	char *p = NULL;

	for (size_t n = 64; n <= 8192; n *= 2)
		p = realloc(p, n);
	return p;
}

int main(void)
{
	char *g;

	peak();
	leak_some();
	g = grow();
	g[0] = 1;
	keep[10] = g;
	return 0;
}
