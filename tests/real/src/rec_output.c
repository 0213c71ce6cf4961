/*
 * Writes to its stdout and its stderr, interleaved, the same whatever the
 * time, while it allocates ROUNDS (argv[1]) times 256 blocks, and runs on
 * at least SECONDS (argv[2]) once its blocks are made: long enough, under
 * dmprof record -i 0.001,
 * for the recorder to say that a dump takes more than a tenth of the
 * interval.  With "reuse" (argv[3]), it first closes every descriptor but
 * 0, 1 and 2, as a daemon would, and opens a file of its own (argv[4])
 * at each number up to 127, where a notice must not land.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define HOLD 500000
#define VMAS 1000

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	unsigned long rounds = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000;
	double seconds = argc > 2 ? atof(argv[2]) : 0, start;
	void *keep[256] = { 0 }, **hold;
	unsigned long i = 0;

	if (argc > 4 && !strcmp(argv[3], "reuse")) {
		for (int fd = 3; fd < 1024; fd++)
			close(fd);
		for (int fd = 3; fd < 128; fd++)
			if (open(argv[4], O_WRONLY | O_CREAT | O_APPEND, 0644) < 0)
				return 1;
	}
	/* Half a million blocks held, and a thousand mappings the dump reads
	 * one by one (pages written, every other one read-only, so that the
	 * kernel cannot merge them): a dump takes over 10 ms, more than a
	 * tenth of -i 0.001 and of the dump thread's 20 ms naps, on a fast
	 * machine too (the blocks alone made it 2 ms: at the edge). */
	char *pages = mmap(NULL, 2 * VMAS * 4096UL, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (pages == MAP_FAILED)
		return 1;
	memset(pages, 1, 2 * VMAS * 4096UL);
	for (int k = 0; k < VMAS; k++)
		mprotect(pages + 2 * k * 4096UL, 4096, PROT_READ);
	hold = malloc(HOLD * sizeof(*hold));
	for (int k = 0; hold && k < HOLD; k++)
		hold[k] = malloc(24);
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* (SECONDS of churn from here: on a busy machine the blocks held may
	 * take longer than that to make, and no dump would come in time.) */
	start = now();
	while (i < rounds || now() - start < seconds) {
		for (int k = 0; k < 256; k++) {
			free(keep[k]);
			keep[k] = malloc(64 + (i * 37 + k) % 4096);
		}
		if (i % 64 == 0 && i < rounds) {
			printf("out %lu\n", i / 64);
			fprintf(stderr, "err %lu\n", i / 64);
		}
		i++;
	}
	for (int k = 0; k < 256; k++)
		free(keep[k]);
	for (int k = 0; hold && k < HOLD; k++)
		free(hold[k]);
	free(hold);
	munmap(pages, 2 * VMAS * 4096UL);
	puts("out end");
	fputs("err end\n", stderr);
	return 0;
}
