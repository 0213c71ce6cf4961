/*
 * A program that crashes with its last allocations known, for
 * tests/real/recorder.sh: last_work() keeps 123 blocks of 4567 bytes,
 * then the program dies as its argument says.
 *   segv      a write through a null pointer (the kernel's SIGSEGV)
 *   abort     abort()
 *   kill      kill(getpid(), SIGSEGV): the signal sent, not a fault
 *   reraise   its own SIGSEGV handler writes "handled" to stdout, puts
 *             back the action it found and raises the signal again (as
 *             Python's faulthandler does)
 *   exit      its own SIGSEGV handler writes "handled" and _exit(7)s
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void *volatile kept[123];
int *volatile nowhere;
static struct sigaction found;

static __attribute__((noinline)) void last_work(void)
{
	for (int i = 0; i < 123; i++)
		kept[i] = malloc(4567);
}

static void handler(int sig)
{
	(void)write(1, "handled\n", 8);
	sigaction(sig, &found, NULL);
	raise(sig);
}

static void handler_exit(int sig)
{
	(void)sig;
	(void)write(1, "handled\n", 8);
	_exit(7);
}

int main(int argc, char **argv)
{
	const char *how = argc > 1 ? argv[1] : "segv";
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = strcmp(how, "exit") ? handler : handler_exit;
	if (!strcmp(how, "reraise") || !strcmp(how, "exit"))
		sigaction(SIGSEGV, &sa, &found);
	last_work();
	if (!strcmp(how, "abort"))
		abort();
	if (!strcmp(how, "kill"))
		kill(getpid(), SIGSEGV);
	*nowhere = 1;
	return 0;
}
