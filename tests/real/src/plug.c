/* A library the test programs load with dlopen(). */
#include <stdlib.h>
#include <string.h>

void *plugin_alloc_blocks(size_t n)
{
	void *p = malloc(n);

	if (p)
		memset(p, 1, n);
	return p;
}
