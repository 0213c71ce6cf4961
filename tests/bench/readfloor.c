/*
 * The floor a heap walk is measured against (make bench, case heap):
 * the time to read a process's malloc heap and nothing more, with
 * process_vm_readv in 1 MiB pieces.  The heap is the [heap] mapping and
 * the anonymous read-write mappings that start on a 64 MiB boundary
 * (glibc's thread heaps), as dmprof heap reads them.
 * Usage: readfloor PID; prints "BYTES SECONDS".
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>

#define PIECE (1 << 20)

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	static char buf[PIECE];
	char path[64], line[4096];
	uint64_t total = 0;
	double t0;
	pid_t pid;
	FILE *f;

	if (argc != 2) {
		fprintf(stderr, "usage: readfloor PID\n");
		return 2;
	}
	pid = atoi(argv[1]);
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	if (!(f = fopen(path, "r"))) {
		perror(path);
		return 1;
	}
	t0 = now();
	while (fgets(line, sizeof(line), f)) {
		uint64_t start, end;
		char perm[8], name[4096] = "";

		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %*s %*s %*s %4095s",
			   &start, &end, perm, name) < 3)
			continue;
		if (strcmp(name, "[heap]") &&
		    (name[0] || perm[0] != 'r' || perm[1] != 'w' ||
		     start % (64 << 20)))
			continue;
		for (uint64_t a = start; a < end; a += PIECE) {
			struct iovec local = { buf, PIECE }, remote;
			size_t n = end - a < PIECE ? end - a : PIECE;

			local.iov_len = n;
			remote.iov_base = (void *)(uintptr_t)a;
			remote.iov_len = n;
			if (process_vm_readv(pid, &local, 1, &remote, 1, 0) !=
			    (ssize_t)n) {
				perror("process_vm_readv");
				return 1;
			}
			total += n;
		}
	}
	printf("%" PRIu64 " %.6f\n", total, now() - t0);
	fclose(f);
	return 0;
}
