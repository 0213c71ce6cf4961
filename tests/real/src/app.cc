// A C++ program (PIE) with allocation sites that tests look for by name:
// alloc_in_exe_widgets (typed objects), alloc_in_exe_strings (std::string
// through libstdc++), and plugin_alloc_blocks in a dlopen()ed library.
// With DMPROF_TEST_MAPS=FILE it copies its /proc/self/maps there and
// prints the address of typeid(Widget), for a deep dump made by the test.
#include <dlfcn.h>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <typeinfo>
#include <vector>

struct Widget {
	char pad[200];
	virtual ~Widget() {}
};

static std::vector<Widget *> widgets;
static std::map<int, std::string> names;

__attribute__((noinline)) void alloc_in_exe_widgets(int n)
{
	for (int i = 0; i < n; i++)
		widgets.push_back(new Widget());
}

__attribute__((noinline)) void alloc_in_exe_strings(int n, int round)
{
	for (int i = 0; i < n; i++)
		names[round * n + i] = std::string(100 + i % 50, 'x');
}

int main(int argc, char **argv)
{
	const char *maps = getenv("DMPROF_TEST_MAPS");
	const char *lib = argc > 1 ? argv[1] : "./libplug.so";
	int rounds = argc > 2 ? atoi(argv[2]) : 25;
	void *h = dlopen(lib, RTLD_NOW);
	void *(*plugin)(size_t);
	std::vector<void *> keep;

	if (!h) {
		fprintf(stderr, "%s\n", dlerror());
		return 1;
	}
	plugin = (void *(*)(size_t))dlsym(h, "plugin_alloc_blocks");
	if (maps) {
		std::ifstream in("/proc/self/maps");
		std::ofstream out(maps);

		out << in.rdbuf();
		printf("%p\n", (const void *)&typeid(Widget));
		return 0;
	}
	for (int round = 0; round < rounds; round++) {
		alloc_in_exe_widgets(2000);
		alloc_in_exe_strings(1000, round);
		keep.push_back(plugin(64 * 1024));
	}
	return 0;
}
