/*
 * What a program may rely on from its allocator, checked under the
 * recorder: aligned blocks keep all their usable bytes through realloc,
 * any power-of-two alignment works, free() and a successful malloc()
 * leave errno alone, malloc_usable_size covers the request, and children
 * made without fork()'s handlers (_Fork, clone) exit without hanging.
 * Prints what failed and exits 1; exits 0 when all is well.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static int failures;

#define CHECK(cond, ...)                                                      \
	do {                                                                  \
		if (!(cond)) {                                                \
			printf(__VA_ARGS__);                                  \
			putchar('\n');                                        \
			failures++;                                           \
		}                                                             \
	} while (0)

extern pid_t _Fork(void);

static void child_exits(const char *how, pid_t pid)
{
	int status;

	if (pid == 0) {
		void *p = malloc(1000); /* the child allocates, then exits */

		free(p);
		exit(7);
	}
	CHECK(pid > 0, "%s failed", how);
	if (pid > 0) {
		CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
			      WEXITSTATUS(status) == 7,
		      "%s: the child did not exit as it should", how);
	}
}

int main(void)
{
	void *p;
	char *q;
	size_t u;

	/* Aligned blocks: realloc keeps every usable byte. */
	q = memalign(64, 10);
	u = malloc_usable_size(q);
	CHECK(u >= 10, "memalign: usable %zu < 10", u);
	memset(q, 'a', u);
	q = realloc(q, 1000);
	for (size_t i = 0; q && i < u; i++)
		if (q[i] != 'a') {
			CHECK(0, "aligned realloc lost byte %zu of %zu", i, u);
			break;
		}
	free(q);

	/* Alignments past 2 GiB. */
	CHECK(posix_memalign(&p, (size_t)1 << 32, 4096) == 0 &&
		      ((size_t)p & (((size_t)1 << 32) - 1)) == 0,
	      "posix_memalign(4 GiB) failed");
	free(p);

	/* errno across free() and a successful malloc(). */
	errno = 1234;
	p = malloc(100);
	CHECK(errno == 1234, "malloc changed errno to %d", errno);
	free(p);
	CHECK(errno == 1234, "free changed errno to %d", errno);

	/* Usable sizes cover the request. */
	for (size_t n = 1; n < 300000; n = n * 3 + 1) {
		p = malloc(n);
		CHECK(malloc_usable_size(p) >= n, "usable %zu < %zu",
		      malloc_usable_size(p), n);
		free(p);
	}

	/* Children without the atfork handlers. */
	child_exits("_Fork", _Fork());
	child_exits("clone", (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0));
	child_exits("fork", fork());

	if (!failures)
		puts("semantics: ok");
	return failures ? 1 : 0;
}
