// make bench: an allocation-heavy C++ workload for the recorder's
// overhead.  Four threads build and tear down maps of strings, vectors
// and hash tables: about 770,000 allocations a round (40 rounds in make
// bench), with stacks of realistic depth (templates inlined into a few
// levels of calls).
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

static unsigned long __attribute__((noinline)) build_map(int n, int seed)
{
	std::map<int, std::string> m;
	unsigned long sum = 0;

	for (int i = 0; i < n; i++)
		m[(i * 7919 + seed) % (n * 2)] =
			std::string(24 + i % 40, 'a' + i % 26);
	for (auto &kv : m)
		sum += kv.second.size();
	return sum;
}

static unsigned long __attribute__((noinline)) build_vectors(int n)
{
	std::vector<std::vector<int>> v;
	unsigned long sum = 0;

	for (int i = 0; i < n; i++) {
		v.emplace_back();
		for (int k = 0; k < i % 50; k++)
			v.back().push_back(k);
	}
	for (auto &x : v)
		sum += x.size();
	return sum;
}

static unsigned long __attribute__((noinline)) build_hash(int n)
{
	std::unordered_map<std::string, int> h;

	for (int i = 0; i < n; i++)
		h[std::to_string(i) + "-key-with-some-length"] = i;
	return h.size();
}

static void work(int id, int rounds, unsigned long *out)
{
	unsigned long sum = 0;

	for (int r = 0; r < rounds; r++) {
		sum += build_map(20000, id + r);
		sum += build_vectors(20000);
		sum += build_hash(20000);
	}
	*out = sum;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 12;
	unsigned long sums[4] = { 0 };
	std::vector<std::thread> t;

	for (int i = 0; i < 4; i++)
		t.emplace_back(work, i, rounds, &sums[i]);
	for (auto &x : t)
		x.join();
	printf("%lu\n", sums[0] + sums[1] + sums[2] + sums[3]);
	return 0;
}
