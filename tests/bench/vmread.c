/*
 * The floor of a heap walk, for make bench: read every byte of process
 * PID's [heap] (256 KiB a call, with process_vm_readv, as dmprof reads a
 * live process) and print how many, and the milliseconds it took.
 * Usage: vmread PID
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>

#define CHUNK (256u << 10)

static double ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	char path[64], line[4096], *buf = malloc(CHUNK);
	unsigned long start, end, total = 0;
	int pid = argc > 1 ? atoi(argv[1]) : 0;
	double t0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	if (!buf || !(f = fopen(path, "r"))) {
		perror(path);
		return 1;
	}
	t0 = ms();
	while (fgets(line, sizeof(line), f)) {
		if (!strstr(line, "[heap]") ||
		    sscanf(line, "%lx-%lx", &start, &end) != 2)
			continue;
		for (unsigned long p = start; p < end; p += CHUNK) {
			size_t n = end - p < CHUNK ? end - p : CHUNK;
			struct iovec l = { buf, n }, r = { (void *)p, n };
			ssize_t got = process_vm_readv(pid, &l, 1, &r, 1, 0);

			if (got > 0)
				total += (unsigned long)got;
		}
	}
	printf("%lu %.3f\n", total, ms() - t0);
	fclose(f);
	free(buf);
	return 0;
}
