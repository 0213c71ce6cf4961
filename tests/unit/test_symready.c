/*
 * Symbolization made ready while a dump is read: the binaries a heap
 * profile maps, found from its end (gperf_binaries), and a symbolizer
 * that opened them ahead answering as one that did not.
 */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gperf.h"
#include "helpers.h"
#include "maps.h"
#include "model.h"
#include "symbfd.h"
#include "symbol.h"
#include "threads.h"
#include "util.h"

static void free_paths(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static const char head[] =
	"heap profile:    1:       16 [     1:       16] @ heapprofile\n"
	"     1:       16 [     1:       16] @ 0x0000000000401234\n";

Test(symready, binaries_from_the_trailer)
{
	static const char trailer[] =
		"\nMAPPED_LIBRARIES:\n"
		"00400000-00401000 r-xp 00000000 08:01 1          /bin/a\n"
		"00401000-00402000 r--p 00001000 08:01 1          /bin/a\n"
		"7f0000000000-7f0000001000 r-xp 00000000 08:01 2  /lib/b.so\n"
		"7f0000001000-7f0000002000 r-xp 00001000 08:01 2  /lib/b.so\n"
		"7f0000002000-7f0000003000 r-xp 00000000 00:00 0  [vdso]\n"
		"7f0000003000-7f0000004000 rw-p 00000000 08:01 3  /lib/c.so\n"
		"not a mapping at all\n"
		"7f0000004000-7f0000005000 r-xp 00000000 08:01 4  /lib/d.so";
	struct strbuf sb = STRBUF_INIT;
	const char *path;
	size_t n;
	char **v;

	sb_addstr(&sb, head);
	sb_addstr(&sb, trailer);
	path = write_file("p.0001.heap", sb.buf, (long)sb.len);
	v = gperf_binaries(path, &n);
	cr_assert_eq(n, 3);
	cr_assert_str_eq(v[0], "/bin/a");
	cr_assert_str_eq(v[1], "/lib/b.so");
	cr_assert_str_eq(v[2], "/lib/d.so"); /* (no newline after it) */
	free_paths(v, n);
	sb_release(&sb);
}

Test(symready, the_last_trailer_and_none, .timeout = 20)
{
	struct strbuf sb = STRBUF_INIT;
	char fifo[4096];
	const char *path;
	size_t n = 7;
	char **v;

	/* No trailer: nothing known early. */
	path = write_file("none.0001.heap", head, -1);
	cr_assert_null(gperf_binaries(path, &n));
	cr_assert_eq(n, 0);
	/* Not a regular file (a FIFO without a writer: not waited for), or
	 * none at all. */
	cr_assert_null(gperf_binaries("/dev/null", &n));
	snprintf(fifo, sizeof(fifo), "%s/fifo.0001.heap", tmpdir());
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	cr_assert_null(gperf_binaries(fifo, &n));
	cr_assert_null(gperf_binaries("/nonexistent/p.heap", &n));
	/* Two: the last is the file's (an earlier one is in a line). */
	sb_addstr(&sb, head);
	sb_addstr(&sb, "\nMAPPED_LIBRARIES:\n"
		       "00400000-00401000 r-xp 00000000 08:01 1 /bin/early\n"
		       "\nMAPPED_LIBRARIES:\n"
		       "00400000-00401000 r-xp 00000000 08:01 1 /bin/late\n");
	path = write_file("two.0001.heap", sb.buf, (long)sb.len);
	v = gperf_binaries(path, &n);
	cr_assert_eq(n, 1);
	cr_assert_str_eq(v[0], "/bin/late");
	free_paths(v, n);
	/* One longer than the first read from the end (64 KiB) is found
	 * in the second. */
	sb_reset(&sb);
	sb_addstr(&sb, head);
	sb_addstr(&sb, "\nMAPPED_LIBRARIES:\n"
		       "00400000-00401000 r-xp 00000000 08:01 1 /bin/long\n");
	for (int i = 0; i < (100 << 10) / 32; i++)
		sb_addstr(&sb, "00400000-00401000 r--p 0 0:0 0 \n");
	path = write_file("long.0001.heap", sb.buf, (long)sb.len);
	v = gperf_binaries(path, &n);
	cr_assert_eq(n, 1);
	cr_assert_str_eq(v[0], "/bin/long");
	free_paths(v, n);
	/* A trailer more than 1 MiB from the end is not looked for. */
	sb_reset(&sb);
	sb_addstr(&sb, head);
	sb_addstr(&sb, "\nMAPPED_LIBRARIES:\n"
		       "00400000-00401000 r-xp 00000000 08:01 1 /bin/far\n");
	for (int i = 0; i < (1 << 20) / 32 + 1; i++)
		sb_addstr(&sb, "00400000-00401000 r--p 0 0:0 0 \n");
	path = write_file("far.0001.heap", sb.buf, (long)sb.len);
	cr_assert_null(gperf_binaries(path, &n));
	sb_release(&sb);
}

/* Functions of this test binary and of libc (whose debug file, of
 * libc6-dbg, make check installs), to be looked up. */
static uint64_t frames[] = {
	0, 0, 0, 0, 0, 0,
	0x7ffffff00010, /* in the missing library below */
};

static void set_frames(void)
{
	/* Return addresses: a few bytes into each function. */
	frames[0] = (uint64_t)(uintptr_t)&gperf_binaries + 9;
	frames[1] = (uint64_t)(uintptr_t)&symbfd_open + 7;
	frames[2] = (uint64_t)(uintptr_t)&maps_parse_line + 21;
	/* (libc's own: the test's &qsort may be its PLT entry.) */
	frames[3] = (uint64_t)(uintptr_t)dlsym(RTLD_DEFAULT, "qsort") + 5;
	frames[4] = (uint64_t)(uintptr_t)dlsym(RTLD_DEFAULT, "strtoull") + 3;
	/* (And a library with no DWARF at all.) */
	frames[5] = (uint64_t)(uintptr_t)dlsym(RTLD_DEFAULT,
					       "criterion_run_all_tests") + 3;
}

struct ready_arg {
	struct symbolizer *s;
	char **paths;
	size_t n;
	_Atomic bool stop;
};

static void ready_main(void *arg)
{
	struct ready_arg *a = arg;

	a->s->ops->ready(a->s, a->paths, a->n, &a->stop);
}

/*
 * Symbolize the frames in a process laid out as this one, plus a library
 * that is not there; READY: the binaries opened ahead on a thread first
 * (2: told to stop before the first, as a dump read before it begins).
 * Returns the frames' text and what was said, in OUT.
 */
static void symbolize(const struct sym_options *opts, int ready,
		      struct strbuf *out)
{
	struct vma missing = { 0x7ffffff00000, 0x7ffffff01000, 0, 7, 0, 0,
			       "r-xp", NULL };
	struct model m;
	struct maps maps;
	struct symbolizer *s;

	model_init(&m);
	maps_init(&maps);
	cr_assert_eq(maps_load(&maps, "/proc/self/maps", &m.strings), 0);
	missing.name = strtab_intern_str(&m.strings, "/nonexistent/libgone.so");
	maps_add(&maps, &missing);
	maps_sort(&maps, "t");
	for (size_t i = 0; i < ARRAY_SIZE(frames); i++)
		cr_assert_not_null(model_intern_bucket(&m, ALLOC_MALLOC,
						       &frames[i], 1, "t", 1));
	s = symbfd_open(&m.strings, opts);
	capture_stderr();
	if (ready) {
		struct ready_arg a = { s, NULL, 0, ready == 2 };
		struct task t = { 0 };

		for (size_t i = 0; i < maps.n; i++) {
			const struct vma *v = &maps.v[i];

			if (!vma_executable(v) || v->name[0] != '/')
				continue;
			a.paths = xreallocarray(a.paths, a.n + 1,
						sizeof(*a.paths));
			a.paths[a.n++] = xstrdup(v->name);
		}
		cr_assert_geq(a.n, 3);
		if (!task_start(&t, ready_main, &a, false))
			ready_main(&a);
		task_release(&t);
		/* Nothing said ahead: the first lookup says it. */
		cr_assert_str_empty(stderr_text());
		free_paths(a.paths, a.n);
	}
	symbolize_model(&m, s, &maps);
	for (size_t i = 0; i < m.frames.n; i++) {
		const struct frame *f = m.frames.v[i];

		sb_addf(out, "%s %s:%u", f->func ? f->func : "??",
			f->file ? f->file : "?", f->line);
		for (uint16_t k = 0; k < f->ninline; k++)
			sb_addf(out, " [%s %s:%u]", f->inl[k].func,
				f->inl[k].file ? f->inl[k].file : "?",
				f->inl[k].line);
		sb_addch(out, '\n');
	}
	sb_addf(out, "said: %s", stderr_text());
	symbolizer_destroy(s);
	maps_free(&maps);
	model_free(&m);
}

Test(symready, opened_ahead_answers_the_same)
{
	struct sym_options with[] = {
		{ .no_cache = true, .want_source = true },
		{ .no_cache = true, .no_inline = true },
	};

	set_frames();
	for (size_t i = 0; i < ARRAY_SIZE(with); i++) {
		struct strbuf plain = STRBUF_INIT, ahead = STRBUF_INIT;
		struct strbuf stopped = STRBUF_INIT;

		symbolize(&with[i], 0, &plain);
		symbolize(&with[i], 1, &ahead);
		symbolize(&with[i], 2, &stopped);
		cr_assert_str_eq(ahead.buf, plain.buf);
		cr_assert_str_eq(stopped.buf, plain.buf);
		/* (This binary's own functions are named, and the missing
		 * library is said once.) */
		cr_assert_not_null(strstr(plain.buf, "gperf_binaries"));
		cr_assert_not_null(strstr(plain.buf, "symbfd_open"));
		cr_assert_not_null(strstr(plain.buf, "qsort"));
		cr_assert_not_null(strstr(plain.buf, "criterion_run_all"));
		cr_assert_not_null(strstr(plain.buf, "cannot read "
						     "'/nonexistent/libgone"));
		cr_assert_null(strstr(strstr(plain.buf, "cannot read") + 1,
				      "cannot read"));
		sb_release(&plain);
		sb_release(&ahead);
		sb_release(&stopped);
	}
}
