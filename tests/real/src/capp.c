/* A C program, built without PIE, that allocates from its own code
 * (alloc_in_c_exe) and from a dlopen()ed library. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *kept[4096];

__attribute__((noinline)) static void *alloc_in_c_exe(size_t n)
{
	void *p = malloc(n);

	if (p)
		memset(p, 2, n);
	return p;
}

int main(int argc, char **argv)
{
	void *h = dlopen(argc > 1 ? argv[1] : "./libplug.so", RTLD_NOW);
	void *(*plugin)(size_t);
	int n = 0;

	if (!h) {
		fprintf(stderr, "%s\n", dlerror());
		return 1;
	}
	plugin = (void *(*)(size_t))dlsym(h, "plugin_alloc_blocks");
	for (int round = 0; round < 24; round++) {
		for (int i = 0; i < 40; i++)
			kept[n++ % 4096] = alloc_in_c_exe(4096);
		kept[n++ % 4096] = plugin(128 * 1024);
	}
	return 0;
}
