/*
 * rec_teardown.cc in C (tests/real/recorder.sh): 128 blocks of 64 KiB
 * made in steps, with a thread still running at the end; an atexit
 * handler frees them.  How it ends is the argument: "return", main
 * returns; "exit", a function calls exit().  Prints "teardown: ok".
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BLOCKS 128
#define BLOCK (64 * 1024)

static char *blocks[BLOCKS];

static void free_blocks(void)
{
	for (int i = 0; i < BLOCKS; i++)
		free(blocks[i]);
}

/* Allocates and frees until the process ends. */
static void *churn(void *arg)
{
	(void)arg;
	for (;;) {
		char *volatile p = malloc(100);

		p[0] = 1;
		free(p);
		usleep(1000);
	}
	return NULL;
}

static void __attribute__((noinline)) grow(int first, int n)
{
	for (int i = first; i < first + n; i++) {
		blocks[i] = malloc(BLOCK);
		memset(blocks[i], i, BLOCK);
	}
}

static void __attribute__((noinline)) leave(void)
{
	fflush(stdout);
	exit(0);
}

int main(int argc, char **argv)
{
	pthread_t t;

	atexit(free_blocks);
	if (pthread_create(&t, NULL, churn, NULL))
		return 1;
	/* 8 MiB in steps of 512 KiB, each held longer than the dump
	 * thread's 20 ms between looks. */
	for (int step = 0; step < BLOCKS / 8; step++) {
		grow(step * 8, 8);
		usleep(60 * 1000);
	}
	printf("teardown: ok\n");
	if (argc > 1 && !strcmp(argv[1], "exit"))
		leave();
	return 0;
}
