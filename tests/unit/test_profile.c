/* The readers' table: each row sniffs its own sample and no other's, and
 * says what the run needs to know of its format and its names. */
#include <criterion/criterion.h>
#include <regex.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "helpers.h"
#include "profile.h"
#include "input.h"

static const struct {
	enum dump_format format;
	const char *name, *head;
	long len;
} samples[] = {
	{ FORMAT_DEEP, "d.0001.heap", "heap profile: DUMP_DEEP_6\n", -1 },
	{ FORMAT_GPERFTOOLS, "g.0001.heap",
	  "heap profile:    1:      100 [     1:      100] @ heapprofile\n",
	  -1 },
	{ FORMAT_JEMALLOC, "j.0001.heap", "heap_v2/524288\n", -1 },
	/* sample_type { type: 1 unit: 2 } */
	{ FORMAT_PROTO, "p.pb", "\x0a\x04\x08\x01\x10\x02", 6 },
	{ FORMAT_DHAT, "dhat.out.1", "{\"dhatFileVersion\":2}\n", -1 },
	{ FORMAT_SNAP, "s.00001.0001.snap", "dmprof-snapshot 1\n", -1 },
	{ FORMAT_CORE, "core.1234", "\177ELF\002\001\001", 7 },
};

Test(profile, each_row_sniffs_its_own_sample_only)
{
	const struct profile_traits *t;

	/* (A new row brings a sample here.) */
	for (size_t r = 0; (t = profile_reader(r)); r++) {
		size_t i = 0;

		while (i < sizeof(samples) / sizeof(*samples) &&
		       samples[i].format != t->format)
			i++;
		cr_assert_lt(i, sizeof(samples) / sizeof(*samples),
			     "no sample of reader '%s'", t->name);
	}
	for (size_t i = 0; i < sizeof(samples) / sizeof(*samples); i++) {
		const char *path = write_file(samples[i].name, samples[i].head,
					      samples[i].len);
		enum dump_format f = FORMAT_ANY;

		cr_assert_eq(profile_probe(path, &f), 0, "%s", samples[i].name);
		cr_assert_eq(f, samples[i].format, "%s: %d, not %d",
			     samples[i].name, (int)f, (int)samples[i].format);
	}
}

/* A pipe is read once: its head, read to sniff it, would be gone when
 * the dump is read (or a FIFO with no writer waited on for ever). */
Test(profile, a_pipe_is_refused_not_waited_on)
{
	char path[4096];
	enum dump_format f = FORMAT_ANY;

	snprintf(path, sizeof(path), "%s/pipe.0001.heap", tmpdir());
	cr_assert_eq(mkfifo(path, 0600), 0);
	capture_stderr();
	cr_assert_eq(profile_probe(path, &f), -1);
	cr_assert(strstr(stderr_text(), "pipe.0001.heap: a pipe"), "%s",
		  stderr_text());
	unlink(path);
}

/* Its first line decides, after blank lines and comments that may fill
 * more than the first read; past a MiB of them, it is no profile. */
Test(profile, comments_longer_than_the_first_read_still_sniff)
{
	struct strbuf sb = STRBUF_INIT;
	enum dump_format f = FORMAT_ANY;
	const char *path;

	while (sb.len < (40u << 10))
		sb_addstr(&sb, "# a comment line of the kind pprof writes\n\n");
	sb_addstr(&sb, samples[1].head);
	path = write_file("c.0001.heap", sb.buf, (long)sb.len);
	cr_assert_eq(profile_probe(path, &f), 0);
	cr_assert_eq(f, FORMAT_GPERFTOOLS);
	sb_reset(&sb);
	while (sb.len < (1u << 20) + 100)
		sb_addstr(&sb, "# a comment line of the kind pprof writes\n");
	sb_addstr(&sb, samples[1].head);
	path = write_file("m.0001.heap", sb.buf, (long)sb.len);
	capture_stderr();
	cr_assert_eq(profile_probe(path, &f), -1);
	cr_assert(strstr(stderr_text(), "empty dump"), "%s", stderr_text());
	sb_release(&sb);
}

Test(profile, traits_say_what_a_run_needs)
{
	const struct profile_traits *deep = profile_traits(FORMAT_DEEP);
	const struct profile_traits *gperf = profile_traits(FORMAT_GPERFTOOLS);

	cr_assert_not(deep->self_contained);
	cr_assert(deep->read_ahead);
	cr_assert_not_null(deep->moment);
	cr_assert(gperf->self_contained);
	cr_assert_not_null(gperf->last_at_exit);
	cr_assert_eq(profile_traits(FORMAT_DHAT)->parts, 2);
	cr_assert(profile_traits(FORMAT_SNAP)->self_contained);
	for (int f = FORMAT_DEEP; f <= FORMAT_CORE; f++)
		cr_assert_geq(profile_traits((enum dump_format)f)->parts, 1);
}

Test(profile, rows_are_named_once_and_name_their_dumps)
{
	const struct profile_traits *t, *u;

	for (size_t i = 0; (t = profile_reader(i)); i++) {
		cr_assert_eq(profile_traits(t->format), t);
		/* (A fuzz target's name: see tests/fuzz/fuzz.c.) */
		cr_assert(t->name && t->name[0]);
		cr_assert_eq(strspn(t->name, "abcdefghijklmnopqrstuvwxyz"
					     "0123456789"),
			     strlen(t->name), "%s", t->name);
		for (size_t k = 0; k < i; k++) {
			u = profile_reader(k);
			cr_assert_str_neq(u->name, t->name);
		}
		for (const char *const *s = t->suffixes; s && *s; s++)
			cr_assert((*s)[0] && (*s)[0] != '.', "%s", t->name);
		/* A run in one file has its parts, not a series' names
		 * (but a core: one instant, named as its writer likes). */
		cr_assert(t->suffixes || t->parts > 1 ||
				  t->format == FORMAT_CORE,
			  "%s", t->name);
	}
}

Test(profile, moments_from_the_head_of_a_dump)
{
	const struct profile_traits *deep = profile_traits(FORMAT_DEEP);
	const char *a = write_file("m.0001.heap",
				   "heap profile: DUMP_DEEP_6\nMETA:\n"
				   "Reason: main returned\nMMAP_LIST:\n", -1);
	const char *b = write_file("m.0002.heap",
				   "heap profile: DUMP_DEEP_6\nMETA:\n"
				   "Reason: Exiting\nMMAP_LIST:\n", -1);
	const char *c = write_file("m.0003.heap",
				   "heap profile: DUMP_DEEP_6\nMMAP_LIST:\n"
				   "Reason: main returned\n", -1);
	const char *g = write_file("h.0001.heap",
				   "heap profile:    1:      100 [     1:      "
				   "100] @ heap/1048576\n", -1);

	cr_assert_eq(deep->moment(a), MOMENT_BEFORE_TEARDOWN);
	cr_assert_eq(deep->moment(b), MOMENT_AT_EXIT);
	/* (Not META's: after MMAP_LIST.) */
	cr_assert_eq(deep->moment(c), MOMENT_UNSAID);
	/* Go's heap profiles are not written at exit. */
	cr_assert_not(profile_traits(FORMAT_GPERFTOOLS)->last_at_exit(g));
}

/*
 * make fuzz builds a target per row, by the names the Makefile's
 * FUZZ_READERS finds in src/load/profile.c with this pattern: it must be
 * the Makefile's, and find every row's name, in order, and nothing else.
 */
Test(profile, the_fuzz_build_finds_every_row)
{
	static const char pattern[] =
		"\\.format = FORMAT_[A-Z]*, \\.name = \"\\([a-z0-9]*\\)\"";
	struct filebuf mk;
	regex_t re;
	regmatch_t mt[2];
	char line[512];
	size_t i = 0;
	FILE *f;

	cr_assert_eq(file_load(&mk, "Makefile"), 0);
	cr_assert_not_null(strstr(mk.data, pattern), "not the Makefile's: %s",
			   pattern);
	file_release(&mk);
	cr_assert_eq(regcomp(&re, pattern, 0), 0);
	f = fopen("src/load/profile.c", "r");
	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		const struct profile_traits *t;
		size_t n;

		if (regexec(&re, line, 2, mt, 0))
			continue;
		t = profile_reader(i++);
		n = (size_t)(mt[1].rm_eo - mt[1].rm_so);
		cr_assert_not_null(t, "a name of no row: %s", line);
		cr_assert(n == strlen(t->name) &&
				  !strncmp(line + mt[1].rm_so, t->name, n),
			  "row %zu is '%s', the fuzz build finds: %s", i - 1,
			  t->name, line);
	}
	fclose(f);
	regfree(&re);
	cr_assert_null(profile_reader(i), "make fuzz would not find row %zu",
		       i);
}
