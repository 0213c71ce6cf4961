/*
 * For tests/real/jemalloc.sh: 20,000 blocks of many sizes (every seventh
 * one large, by calloc), a third of them freed, the rest kept to the end.
 */
#include <stdlib.h>
#include <string.h>

static void *keep[20000];

__attribute__((noinline)) static void *small(size_t n)
{
	return malloc(n);
}

__attribute__((noinline)) static void *big(size_t n)
{
	return calloc(1, n);
}

int main(void)
{
	unsigned s = 1;

	for (int i = 0; i < 20000; i++) {
		size_t n;

		s = s * 1103515245 + 12345;
		n = (s >> 8) % (i % 7 ? 2000 : 200000) + 1;
		keep[i] = i % 7 ? small(n) : big(n);
		memset(keep[i], 1, n);
		if (i % 3 == 0) {
			free(keep[i]);
			keep[i] = NULL;
		}
	}
	return 0;
}
