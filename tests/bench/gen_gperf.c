/*
 * make bench: a big gperftools heap profile, as Debian's tcmalloc writes
 * it, for the profile benchmarks.
 *
 *   gen_gperf STACKS ADDRS MAPS [wide] >OUT
 *
 * writes a "heapprofile" profile of STACKS distinct stack lines, 8 to 26
 * frames deep, whose frames are return addresses read from the file ADDRS
 * (hex, one per line: call sites inside real ELF files, as the MAPS file
 * maps them), then MAPPED_LIBRARIES: and MAPS.  Stacks are paths down a
 * call tree: the frames near the root are shared by many stacks, those
 * near the allocation site by few, so the distinct frames are a fraction
 * of the frames written, as in a real program; "wide" makes the tree
 * four times as wide at every level (fewer frames shared: the second
 * generator of make bench, with its addresses from more binaries).
 * Deterministic: the same arguments give the same file.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	return x ^ (x >> 33);
}

int main(int argc, char **argv)
{
	uint64_t *addrs = NULL, a, nstacks, objs_all = 0, bytes_all = 0;
	size_t n = 0, cap = 0;
	unsigned wide = 1;
	char line[4096];
	FILE *f;

	if (argc == 5 && !strcmp(argv[4], "wide"))
		wide = 4;
	if ((argc != 4 && wide == 1) ||
	    !(nstacks = strtoull(argv[1], NULL, 10))) {
		fprintf(stderr, "usage: gen_gperf STACKS ADDRS MAPS [wide] >OUT\n");
		return 2;
	}
	if (!(f = fopen(argv[2], "r"))) {
		perror(argv[2]);
		return 1;
	}
	while (fscanf(f, "%" SCNx64, &a) == 1) {
		if (n == cap) {
			cap = cap ? cap * 2 : 4096;
			addrs = realloc(addrs, cap * sizeof(*addrs));
			if (!addrs)
				return 1;
		}
		addrs[n++] = a;
	}
	fclose(f);
	if (n < 1000) {
		fprintf(stderr, "gen_gperf: %s: %zu addresses, want 1000+\n",
			argv[2], n);
		return 1;
	}
	/* The header's totals first: the same stream, twice. */
	for (int pass = 0; pass < 2; pass++) {
		rng = 0x9e3779b97f4a7c15ULL;
		if (pass)
			printf("heap profile: %6" PRIu64 ": %8" PRIu64 " [%6"
			       PRIu64 ": %8" PRIu64 "] @ heapprofile\n",
			       objs_all, bytes_all, objs_all, bytes_all);
		for (uint64_t s = 0; s < nstacks; s++) {
			uint64_t objs = 1 + next() % 40;
			uint64_t bytes = objs * (16 + next() % 4096);
			unsigned depth = 8 + (unsigned)(next() % 19);
			/* The call path: a branch of 64 at each level. */
			uint64_t path = next(), node = 0;
			uint64_t frames[32];
			/* (What was allocated beside what is in use.) */
			uint64_t more_objs = next() % 8, more = next() % 65536;

			for (unsigned lv = 0; lv < depth; lv++) {
				unsigned fan = wide * (lv < 6 ? 4 : lv < 12 ? 16 : 64);

				node = mix(node * 131 + (path % fan) + lv);
				path /= fan;
				if (!path)
					path = next();
				frames[depth - 1 - lv] = addrs[node % n];
			}
			if (!pass) {
				objs_all += objs;
				bytes_all += bytes;
				continue;
			}
			printf("%6" PRIu64 ": %8" PRIu64 " [%6" PRIu64 ": %8"
			       PRIu64 "] @",
			       objs, bytes, objs + more_objs, bytes + more);
			for (unsigned i = 0; i < depth; i++)
				printf(" 0x%" PRIx64, frames[i]);
			putchar('\n');
		}
	}
	printf("\nMAPPED_LIBRARIES:\n");
	if (!(f = fopen(argv[3], "r"))) {
		perror(argv[3]);
		return 1;
	}
	while (fgets(line, sizeof(line), f))
		fputs(line, stdout);
	fclose(f);
	free(addrs);
	return ferror(stdout) || fflush(stdout) ? 1 : 0;
}
