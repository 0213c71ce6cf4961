// A C++ program for the recorder: containers and strings on the main
// thread and on four more (so glibc makes arenas for them), blocks glibc
// maps one by one, a mapping of its own, and a SIGUSR2 to itself that asks
// for a dump.
#include <sys/mman.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

static std::vector<std::string> strings;
static std::map<int, std::vector<int>> maps;

static void __attribute__((noinline)) grow_strings(int n)
{
	for (int i = 0; i < n; i++)
		strings.push_back(std::string(40 + i % 200, 'a' + i % 26));
}

static void __attribute__((noinline)) grow_map(int n)
{
	for (int i = 0; i < n; i++)
		maps[i].assign(64 + i % 64, i);
}

static std::vector<std::unique_ptr<char[]>> big;

static void __attribute__((noinline)) grow_big(int n)
{
	for (int i = 0; i < n; i++) {
		big.emplace_back(new char[1 << 20]);
		memset(big.back().get(), i, 1 << 19); // half of it touched
	}
}

static void worker(int id, std::vector<std::string> *out)
{
	for (int i = 0; i < 20000; i++)
		out->push_back(std::to_string(id) + ":" + std::string(100, 'w'));
}

int main()
{
	std::vector<std::string> per_thread[4];
	std::vector<std::thread> threads;
	size_t len = 8 << 20;
	char *own;

	for (int round = 0; round < 5; round++) {
		grow_strings(20000);
		grow_map(2000);
		grow_big(4);
		usleep(150 * 1000);
	}
	for (int t = 0; t < 4; t++)
		threads.emplace_back(worker, t, &per_thread[t]);
	for (auto &t : threads)
		t.join();
	own = (char *)mmap(nullptr, len, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (own == MAP_FAILED)
		return 1;
	memset(own, 1, len / 4);
	kill(getpid(), SIGUSR2);
	usleep(300 * 1000);
	printf("%zu %zu\n", strings.size(), per_thread[0].size());
	return 0;
}
