/*
 * dwarfcmp MAPS FRAMES: what dmprof's symbolizer says of each return
 * address of FRAMES (hex, one a line) in a process laid out as MAPS:
 * every logical frame's function, file and line.  Run with and without
 * DMPROF_DWARF=libbfd, the two outputs must be the same (dwarf.sh).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "maps.h"
#include "strtab.h"
#include "symbfd.h"
#include "util.h"

int main(int argc, char **argv)
{
	struct arena arena = { 0 };
	struct strtab strings;
	struct maps maps;
	struct sym_options o = { 0 };
	struct symbolizer *s;
	uint64_t *addrs = NULL;
	size_t n = 0, alloc = 0;
	char line[256];
	FILE *f;

	if (argc != 3)
		die("usage: dwarfcmp MAPS FRAMES");
	o.want_source = true;
	o.no_cache = true;
	o.full_names = true;
	o.verbose = getenv("DWARFCMP_VERBOSE") ? 2 : 0;
	strtab_init(&strings, &arena);
	maps_init(&maps);
	if (maps_load(&maps, argv[1], &strings) < 0)
		return 1;
	if (!(f = fopen(argv[2], "r")))
		die_errno("%s", argv[2]);
	while (fgets(line, sizeof(line), f)) {
		GROW(addrs, n + 1, alloc);
		addrs[n++] = strtoull(line, NULL, 16);
	}
	fclose(f);
	s = symbfd_open(&strings, &o);
	s->ops->prepare(s, &maps, addrs, n);
	for (size_t i = 0; i < n; i++) {
		struct sym_info in = { 0 };

		s->ops->code(s, &maps, addrs[i], &in);
		printf("%" PRIx64, addrs[i]);
		for (int k = 0; k < in.ninline; k++)
			printf(" | %s %s:%u", in.inl[k].func ? in.inl[k].func : "?",
			       in.inl[k].file ? in.inl[k].file : "?",
			       in.inl[k].line);
		printf(" | %s %s:%u\n", in.func ? in.func : "?",
		       in.file ? in.file : "?", in.line);
	}
	s->ops->prepare(s, &maps, NULL, 0);
	symbolizer_destroy(s);
	maps_free(&maps);
	strtab_free(&strings);
	arena_free(&arena);
	free(addrs);
	return 0;
}
