// The dumps of a program's growth and end (tests/real/recorder.sh): a
// global table grows to 8 MiB in steps, with a thread still running at
// the end, and is never freed before exit, where its static destructor
// frees it.  How it ends is the argument:
//   return  main returns;
//   exit    a function calls exit();
//   _exit   a function calls _exit() (no teardown at all);
//   fork    two children of fork(): one fills a table of its own and
//           calls exit(), the other calls exit() at once; then main
//           returns.
// Prints the pids of the children, one a line, "teardown: ok" last.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <unistd.h>
#include <sys/wait.h>
#include <unordered_map>
#include <vector>

static std::unordered_map<int, std::vector<char>> table;

static void __attribute__((noinline)) grow_table(int first, int n)
{
	for (int i = first; i < first + n; i++) {
		std::vector<char> &v = table[i];

		v.resize(64 * 1024);
		std::memset(v.data(), i, v.size());
	}
}

// A thread that allocates and frees until the process ends.
static void churn()
{
	for (;;) {
		std::vector<int> v(100);

		v[0] = 1;
		usleep(1000);
	}
}

static void __attribute__((noinline)) leave(const char *how)
{
	std::fflush(stdout);
	if (!std::strcmp(how, "exit"))
		std::exit(0);
	_exit(0);
}

// Children of fork(): one with blocks of its own, one without.
static void __attribute__((noinline)) children()
{
	pid_t a = fork(), b;

	if (a == 0) {
		table.clear();
		grow_table(1000, 40);
		std::exit(0);
	}
	b = fork();
	if (b == 0)
		std::exit(0);
	std::printf("%d\n%d\n", (int)a, (int)b);
	waitpid(a, nullptr, 0);
	waitpid(b, nullptr, 0);
}

int main(int argc, char **argv)
{
	const char *how = argc > 1 ? argv[1] : "return";
	std::thread(churn).detach();

	// 8 MiB in steps of 512 KiB, each held a while: the dump thread
	// looks every 20 ms.
	for (int step = 0; step < 16; step++) {
		grow_table(step * 8, 8);
		usleep(60 * 1000);
	}
	if (!std::strcmp(how, "fork"))
		children();
	std::printf("teardown: ok\n");
	if (!std::strcmp(how, "exit") || !std::strcmp(how, "_exit"))
		leave(how);
	return 0;
}
