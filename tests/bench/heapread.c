/*
 * The floor of a heap walk, for make bench: read every byte of a heap
 * once, 256 KiB a call, as dmprof reads it, and print how many, and the
 * milliseconds it took.  Either process PID's [heap] (with "all": and
 * every anonymous private writable mapping, where glibc's other arenas
 * and the blocks it maps alone are), with process_vm_readv, or what the
 * ELF core CORE holds of the addresses START-END (its PT_LOAD segments
 * there), with pread.
 * Usage: heapread PID [all]
 *        heapread CORE START-END     (hex, as /proc/PID/maps writes them)
 */
#define _GNU_SOURCE
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (256u << 10)

static double ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Is the mapping of maps line LINE one to read (ALL: every anonymous
 * private writable one, else [heap] only)? */
static int wanted(const char *line, int all)
{
	char perms[8] = "", name[4096] = "";

	if (strstr(line, "[heap]"))
		return 1;
	if (!all || sscanf(line, "%*s %7s %*s %*s %*s %4095s", perms, name) < 1)
		return 0;
	return !strcmp(perms, "rw-p") && !name[0];
}

/* The bytes of process PID's [heap] (ALL: and more, as wanted says) into
 * BUF: how many, or -1. */
static long read_process(int pid, int all, char *buf)
{
	char path[64], line[4096];
	unsigned long start, end, total = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	if (!(f = fopen(path, "r"))) {
		perror(path);
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		if (!wanted(line, all) ||
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
	fclose(f);
	return (long)total;
}

/* The bytes core PATH holds of [START, END) into BUF: how many, or -1. */
static long read_core(const char *path, unsigned long start,
		      unsigned long end, char *buf)
{
	unsigned long total = 0;
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || pread(fd, &eh, sizeof(eh), 0) != sizeof(eh)) {
		perror(path);
		return -1;
	}
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		unsigned long lo, hi;

		if (pread(fd, &ph, sizeof(ph), eh.e_phoff + i * sizeof(ph)) !=
		    sizeof(ph)) {
			perror(path);
			close(fd);
			return -1;
		}
		lo = ph.p_vaddr > start ? ph.p_vaddr : start;
		hi = ph.p_vaddr + ph.p_filesz < end ? ph.p_vaddr + ph.p_filesz
						    : end;
		if (ph.p_type != PT_LOAD || lo >= hi)
			continue;
		for (unsigned long a = lo; a < hi; a += CHUNK) {
			size_t n = hi - a < CHUNK ? hi - a : CHUNK;
			ssize_t got = pread(fd, buf, n,
					    (off_t)(ph.p_offset + a - ph.p_vaddr));

			if (got <= 0)
				break;
			total += (unsigned long)got;
		}
	}
	close(fd);
	return (long)total;
}

int main(int argc, char **argv)
{
	char *buf = malloc(CHUNK);
	unsigned long start, end;
	double t0 = ms();
	long total;

	if (!buf)
		return 1;
	if (argc == 2)
		total = read_process(atoi(argv[1]), 0, buf);
	else if (argc == 3 && !strcmp(argv[2], "all"))
		total = read_process(atoi(argv[1]), 1, buf);
	else if (argc == 3 && sscanf(argv[2], "%lx-%lx", &start, &end) == 2)
		total = read_core(argv[1], start, end, buf);
	else {
		fprintf(stderr, "usage: heapread PID [all] | heapread CORE "
				"START-END\n");
		return 2;
	}
	if (total < 0)
		return 1;
	printf("%ld %.3f\n", total, ms() - t0);
	free(buf);
	return 0;
}
