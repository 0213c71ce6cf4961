/*
 * What a program may rely on from its allocator, checked under the
 * recorder: aligned blocks keep all their usable bytes through realloc,
 * any power-of-two alignment works, free() and a successful malloc()
 * leave errno alone (in the main thread, another thread and a child of
 * fork(): each its own errno), malloc_usable_size covers the request,
 * and children made without fork()'s handlers (_Fork, clone) exit
 * without hanging.
 * Prints what failed and exits 1; exits 0 when all is well.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
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

/*
 * The allocator, called through pointers the compiler cannot see
 * through: it takes free() for the builtin that leaves all memory but
 * the block alone, errno included, and would check nothing.
 */
static void *(*volatile malloc_p)(size_t) = malloc;
static void *(*volatile calloc_p)(size_t, size_t) = calloc;
static void *(*volatile realloc_p)(void *, size_t) = realloc;
static void (*volatile free_p)(void *) = free;

/* errno across a successful malloc(), calloc(), realloc() and free(),
 * in the calling thread: 0 if it stayed, else what it became. */
static int errno_kept(void)
{
	void *p;

	errno = 1234;
	p = malloc_p(100);
	if (errno != 1234)
		return errno;
	p = realloc_p(p, 5000);
	if (errno != 1234)
		return errno;
	free_p(p);
	if (errno != 1234)
		return errno;
	p = calloc_p(10, 10);
	free_p(p);
	return errno == 1234 ? 0 : errno;
}

static void *errno_thread(void *arg)
{
	int *out = arg;

	*out = errno_kept();
	return NULL;
}

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
	p = malloc_p(100);
	CHECK(errno == 1234, "malloc changed errno to %d", errno);
	free_p(p);
	CHECK(errno == 1234, "free changed errno to %d", errno);
	{
		pthread_t t;
		int in_thread = -1, status;
		pid_t pid;

		CHECK(pthread_create(&t, NULL, errno_thread, &in_thread) == 0 &&
			      pthread_join(t, NULL) == 0 && in_thread == 0,
		      "in another thread, errno became %d", in_thread);
		CHECK(errno_kept() == 0, "errno changed after the thread");
		fflush(stdout); /* (the child's exit writes none of it again) */
		pid = fork();
		if (pid == 0)
			_exit(errno_kept() == 0 ? 0 : 1);
		CHECK(pid > 0 && waitpid(pid, &status, 0) == pid &&
			      WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "in a child of fork(), errno changed");
	}

	/* Usable sizes cover the request. */
	for (size_t n = 1; n < 300000; n = n * 3 + 1) {
		p = malloc(n);
		CHECK(malloc_usable_size(p) >= n, "usable %zu < %zu",
		      malloc_usable_size(p), n);
		free(p);
	}

	/* Children without the atfork handlers. */
	fflush(stdout);
	child_exits("_Fork", _Fork());
	child_exits("clone", (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0));
	child_exits("fork", fork());

	if (!failures)
		puts("semantics: ok");
	return failures ? 1 : 0;
}
