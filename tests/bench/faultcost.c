/*
 * What fresh memory costs on this machine, for make bench: MB megabytes
 * mapped and written once, a byte a page, in 4 KiB pages and then in
 * huge pages (madvised), each its milliseconds.  A run of dmprof on a big
 * profile faults in hundreds of MB where awk faults in two, and on a
 * virtual machine whose balloon hands free memory back to the host a
 * fault can cost ten times more after a pause than after a free (see
 * README, "Speed"): printed beside the bench's rows, it says what kind of
 * phase they were measured in.
 * Usage: faultcost MB
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#define HUGE_PAGE ((size_t)2 << 20)

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Milliseconds to write a byte in each page of LEN fresh bytes (huge
 * pages advised if HUGE); -1 if the memory could not be had. */
static double touch(size_t len, int huge)
{
	char *map = mmap(NULL, len + HUGE_PAGE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *p;
	double t;

	if (map == MAP_FAILED)
		return -1;
	p = (char *)(((uintptr_t)map + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1));
	if (huge)
		madvise(p, len, MADV_HUGEPAGE);
	t = now_ms();
	for (size_t i = 0; i < len; i += 4096)
		((volatile char *)p)[i] = 1;
	t = now_ms() - t;
	munmap(map, len + HUGE_PAGE);
	return t;
}

int main(int argc, char **argv)
{
	long mb = argc > 1 ? atol(argv[1]) : 0;
	size_t len;

	if (mb <= 0 || mb > 65536) {
		fprintf(stderr, "usage: faultcost MB\n");
		return 2;
	}
	len = (size_t)mb << 20;
	printf("%.1f %.1f\n", touch(len, 0), touch(len, 1));
	return 0;
}
