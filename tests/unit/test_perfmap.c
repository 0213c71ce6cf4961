/*
 * Perf maps, the names a JIT gives its code: read by the recorder at
 * each dump (src/recorder/rec_perfmap.c: its own map only, not one older
 * than it; a map that grows, rewritten, cut in the middle of a line; each
 * bucket's frames named by the lines written when it was made, the
 * latest where ranges are reused; the copy beside the dumps), and by the
 * analyzer from that copy (src/read/perfmap.c: the later line wins, a
 * line cut short left out, bad lines left out, said with FILE:LINE, the
 * frames a run's dumps left unnamed named, and without a map said once).
 * V8's names are split into function, file and line alike by both.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../../src/recorder/rec.h"
#include "helpers.h"
#include "perfmap.h"
#include "perfmap_name.h"
#include "util.h"

/* ---- names ---- */

static void split(const char *name, const char *func, const char *file,
		  uint32_t line)
{
	struct perfmap_name pn;

	perfmap_split_name(name, strlen(name), &pn);
	cr_assert_eq(pn.func_len, strlen(func), "%s: function '%.*s'", name,
		     (int)pn.func_len, pn.func);
	cr_assert(!memcmp(pn.func, func, pn.func_len), "%s: function '%.*s'",
		  name, (int)pn.func_len, pn.func);
	if (!file) {
		cr_assert_null(pn.file, "%s: a file", name);
	} else {
		cr_assert_eq(pn.file_len, strlen(file), "%s: file '%.*s'", name,
			     (int)pn.file_len, pn.file ? pn.file : "");
		cr_assert(!memcmp(pn.file, file, pn.file_len), "%s: file '%.*s'",
			  name, (int)pn.file_len, pn.file);
	}
	cr_assert_eq(pn.line, line, "%s: line %u", name, pn.line);
}

Test(perfmap, names)
{
	split("JS:~fillBuffers /home/u/prog.js:2:21", "fillBuffers",
	      "/home/u/prog.js", 2);
	split("JS:*fillBuffers /home/u/prog.js:2:21", "fillBuffers",
	      "/home/u/prog.js", 2);
	split("JS:^alloc node:buffer:391:30", "alloc", "node:buffer", 391);
	split("LazyCompile:*fillBuffers /path/prog.js:2:21", "fillBuffers",
	      "/path/prog.js", 2);
	split("Function:~square /a b/prog.js:16:16", "square", "/a b/prog.js",
	      16);
	split("JS:~ /tmp/prog.js:1:1", "(anonymous)", "/tmp/prog.js", 1);
	split("JS:~get size /app/m.js:7:3", "get size", "/app/m.js", 7);
	split("JS:*main file:///app/m.mjs:3:10", "main", "/app/m.mjs", 3);
	split("JS:~ evalmachine.<anonymous>:1:1", "(anonymous)",
	      "evalmachine.<anonymous>", 1);
	split("JS:~noLocation", "noLocation", NULL, 0);
	split("Builtin:ArrayMap", "Builtin:ArrayMap", NULL, 0);
	split("java.lang.String::hashCode", "java.lang.String::hashCode", NULL,
	      0);
	cr_assert(perfmap_runtime_frame("alloc", "node:buffer"));
	cr_assert(perfmap_runtime_frame("x", "/app/node_modules/lib/x.js"));
	cr_assert(perfmap_runtime_frame("Builtin:ArrayMap", NULL));
	cr_assert(perfmap_runtime_frame("JIT code 0x7f00", NULL));
	cr_assert_not(perfmap_runtime_frame("fillBuffers", "/app/prog.js"));
	cr_assert_not(perfmap_runtime_frame("java.util.HashMap::resize", NULL));
}

/* ---- the analyzer's reader ---- */

Test(perfmap, later_line_wins)
{
	static const char text[] =
		"1000 100 JS:*old /a.js:1:1\n"
		"2000 100 JS:*other /a.js:9:1\n"
		"0x1080 0x100 JS:*new /a.js:5:1\n"   /* reuses old's end */
		"1020 20 JS:~inner /a.js:7:1\n"      /* inside both */
		"3000 0 JS:~empty /a.js:8:1\n";      /* no range */
	struct perfmap pm;
	const struct perfmap_range *r;

	memset(&pm, 0, sizeof(pm));
	cr_assert_eq(perfmap_parse(&pm, text, sizeof(text) - 1, "m"), 0);
	cr_assert_eq(pm.lines, 4);
	r = perfmap_find(&pm, 0x1010);
	cr_assert(r && !strncmp(r->name, "JS:*old", 7));
	r = perfmap_find(&pm, 0x1030);
	cr_assert(r && !strncmp(r->name, "JS:~inner", 9));
	r = perfmap_find(&pm, 0x1040);
	cr_assert(r && !strncmp(r->name, "JS:*old", 7), "old after inner");
	r = perfmap_find(&pm, 0x1080);
	cr_assert(r && !strncmp(r->name, "JS:*new", 7));
	r = perfmap_find(&pm, 0x117f);
	cr_assert(r && !strncmp(r->name, "JS:*new", 7));
	cr_assert_null(perfmap_find(&pm, 0x1180));
	cr_assert_null(perfmap_find(&pm, 0xfff));
	r = perfmap_find(&pm, 0x20ff);
	cr_assert(r && !strncmp(r->name, "JS:*other", 9));
	cr_assert_null(perfmap_find(&pm, 0x3000));
	perfmap_release(&pm);
}

Test(perfmap, cut_and_bad_lines)
{
	static const char cut[] = "1000 100 JS:*f /a.js:1:1\n"
				  "2000 100 JS:*g /a.j";
	static const char bad[] = "1000 100 JS:*f /a.js:1:1\n"
				  "\n"
				  "zz 100 what\n"
				  "2000 100 JS:*a\n"  /* a name with a newline */
				  "b /a.js:3:1\n"
				  "3000 100 JS:*g /a.js:5:1\n";
	struct perfmap pm;

	memset(&pm, 0, sizeof(pm));
	cr_assert_eq(perfmap_parse(&pm, cut, sizeof(cut) - 1, "m"), 0);
	cr_assert_eq(pm.lines, 1, "a line cut short counted");
	cr_assert_null(perfmap_find(&pm, 0x2000));
	perfmap_release(&pm);
	capture_stderr();
	cr_assert_eq(perfmap_parse(&pm, bad, sizeof(bad) - 1, "x.perf.map"), 0);
	cr_assert(strstr(stderr_text(), "x.perf.map:3: expected 'START SIZE "
					"NAME' (hex numbers and a name), not "
					"'zz 100 what'; 2 such lines left out"),
		  "%s", stderr_text());
	cr_assert_eq(pm.lines, 3);
	cr_assert_not_null(perfmap_find(&pm, 0x3000), "the lines after");
	perfmap_release(&pm);
}

/* A run's frames: what the map names, and the rest. */
static struct model m;
static struct maps maps;
static char *prefix;

static void run_free(void)
{
	model_free(&m);
	maps_free(&maps);
	free(prefix);
}

TestSuite(perfrun, .fini = run_free);

static const char *frame_func(uint64_t addr)
{
	for (size_t i = 0; i < m.frames.n; i++)
		if (m.frames.v[i]->addr == addr)
			return m.frames.v[i]->func;
	return NULL;
}

/* A run NAME (its prefix in PREFIX) with frames in a binary and in
 * anonymous memory (JIT code), whose first dump says it runs on node;
 * its first dump. */
static const char *run_of(const char *name)
{
	static const uint64_t frames[] = { 0x400123, 0x7f0000001011,
					   0x7f0000002011, 0x7f0000009011 };
	struct vma v = { 0 };
	char *dump = xasprintf("%s.0001.heap", name);
	const char *path;

	model_init(&m);
	maps_init(&maps);
	v.start = 0x400000;
	v.end = 0x500000;
	strcpy(v.perms, "r-xp");
	v.name = "/usr/bin/node";
	maps_add(&maps, &v);
	v.start = 0x7f0000000000;
	v.end = 0x7f0000010000;
	strcpy(v.perms, "rwxp");
	v.name = "";
	maps_add(&maps, &v);
	maps_sort(&maps, "test");
	cr_assert_not_null(model_intern_stack(&m, frames, 4));
	path = write_file(dump, "heap profile: DUMP_DEEP_6\nMETA:\n"
				"Runtime: node v20.20.2 /usr/bin/node\n", -1);
	free(dump);
	prefix = xstrndup(path, strlen(path) - strlen(".0001.heap"));
	return path;
}

Test(perfrun, names_a_run)
{
	const char *dump = run_of("app.01234");

	write_file("app.01234.perf.map",
		   "7f0000001000 100 JS:*remember /app/prog.js:13:18\n"
		   "7f0000002000 100 JS:~alloc node:buffer:391:30\n"
		   "400000 1000 Builtin:Nothing\n", -1);
	capture_stderr();
	cr_assert_eq(perfmap_name_run(&m, prefix, dump, &maps), 0);
	cr_assert_str_eq(frame_func(0x7f0000001011), "remember");
	cr_assert_str_eq(frame_func(0x7f0000002011), "alloc");
	cr_assert_str_eq(frame_func(0x7f0000009011),
			 "JIT code 0x7f0000009011");
	cr_assert_null(frame_func(0x400123), "a binary's frame named");
	cr_assert(strstr(stderr_text(), "1 frame in JIT code in no range"),
		  "%s", stderr_text());
}

/* Another process's map beside the run is not the run's; without one
 * of its own, the JIT's frames stay unnamed, said once. */
Test(perfrun, another_pid_and_none)
{
	const char *dump = run_of("app.01234");

	write_file("app.05678.perf.map",
		   "7f0000001000 100 JS:*remember /app/prog.js:13:18\n", -1);
	capture_stderr();
	cr_assert_eq(perfmap_name_run(&m, prefix, dump, &maps), 0);
	cr_assert_str_eq(frame_func(0x7f0000001011),
			 "JIT code 0x7f0000001011");
	cr_assert_str_eq(frame_func(0x7f0000002011),
			 "JIT code 0x7f0000002011");
	cr_assert(strstr(stderr_text(), "3 frames in JIT code stay 'JIT code "
					"0x...': no perf map"),
		  "%s", stderr_text());
	cr_assert_null(strstr(strstr(stderr_text(), "no perf map") + 1,
			      "no perf map"),
		       "said more than once: %s", stderr_text());
}

/* ---- the recorder's reader ---- */

static char map_path[64], copy_path[256];

static void map_write(const char *text, const char *mode)
{
	FILE *f = fopen(map_path, mode);

	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
}

static void recorder_setup(void)
{
	snprintf(map_path, sizeof(map_path), "/tmp/perf-%d.map", (int)getpid());
	snprintf(copy_path, sizeof(copy_path), "%s/run.perf.map", tmpdir());
	unlink(map_path);
	rec_perfmap_init();
	rec_unwind_jit = true;
}

static void recorder_teardown(void)
{
	unlink(map_path);
}

/* The frame the recorder writes for ADDR of a bucket made when the map
 * was AS_OF long, and the name it gives it ("" if none). */
static uintptr_t named(uintptr_t addr, uint64_t as_of, char *name, size_t n)
{
	static struct rec_buf b;
	uintptr_t v = rec_perfmap_frame(addr, as_of);
	unsigned written;
	char want[64];
	const char *p;

	name[0] = 0;
	if (v == addr)
		return v;
	rec_buf_free(&b);
	written = rec_perfmap_names(&b);
	rec_perfmap_names_written(written);
	rec_buf_add(&b, "", 1);
	snprintf(want, sizeof(want), "frame 0x%016lx\t", (unsigned long)v);
	p = b.p ? strstr(b.p, want) : NULL;
	if (!p) {
		/* (Named by an earlier call: asked again below.) */
		snprintf(name, n, "(earlier)");
		return v;
	}
	p += strlen(want);
	snprintf(name, n, "%.*s", (int)strcspn(p, "\n"), p);
	return v;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	static char buf[8192];
	size_t n;

	if (!f)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	return buf;
}

static uint64_t size_of(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

TestSuite(recmap, .init = recorder_setup, .fini = recorder_teardown);

/* A map that grows during the run, its ranges reused: each bucket's
 * frames by the lines there when it was made, the latest of those. */
Test(recmap, grows_and_reuses)
{
	char name[128];
	uint64_t first;

	map_write("10000000 100 JS:*fillBuffers /app/prog.js:3:21\n"
		  "10001000 100 JS:~square /app/prog.js:16:16\n", "w");
	first = size_of(map_path);
	cr_assert(rec_perfmap_update(copy_path));
	cr_assert_str_eq(slurp(copy_path), slurp(map_path));
	/* fillBuffers returned; its code's memory is another's now. */
	map_write("10000000 80 JS:*formatWithOptions "
		  "node:internal/util/inspect:2237:27\n",
		  "a");
	cr_assert(rec_perfmap_update(copy_path));
	cr_assert_str_eq(slurp(copy_path), slurp(map_path), "the copy");
	named(0x10000011, first, name, sizeof(name));
	cr_assert_str_eq(name, "fillBuffers\t/app/prog.js\t3");
	named(0x10000011, size_of(map_path), name, sizeof(name));
	cr_assert_str_eq(name, "formatWithOptions\tnode:internal/util/inspect\t2237");
	/* Past the new code's end: the old code's still. */
	named(0x10000091, size_of(map_path), name, sizeof(name));
	cr_assert_str_eq(name, "fillBuffers\t/app/prog.js\t3");
	named(0x10001011, UINT64_MAX, name, sizeof(name));
	cr_assert_str_eq(name, "square\t/app/prog.js\t16");
	/* The same frame again: the same address, no second name. */
	cr_assert_eq(rec_perfmap_frame(0x10001011, UINT64_MAX),
		     named(0x10001011, UINT64_MAX, name, sizeof(name)));
	cr_assert_str_eq(name, "(earlier)");
	/* Not in the map, or in a binary: as they are. */
	cr_assert_eq(rec_perfmap_frame(0x10005011, UINT64_MAX), 0x10005011);
	cr_assert_eq(rec_perfmap_frame((uintptr_t)&recorder_setup + 1,
				       UINT64_MAX),
		     (uintptr_t)&recorder_setup + 1);
}

/* A last line cut short waits for its end; a map rewritten shorter is
 * read again, the copy with it; the copy stays when the map is gone. */
Test(recmap, cut_rewritten_gone)
{
	char name[128];

	map_write("20000000 100 JS:*f /app/a.js:1:1\n20001000 40 JS:~h /app/a.j",
		  "w");
	cr_assert(rec_perfmap_update(copy_path));
	named(0x20001011, UINT64_MAX, name, sizeof(name));
	cr_assert_str_eq(name, "", "a line cut short named");
	map_write("s:9:3\n", "a");
	cr_assert(rec_perfmap_update(copy_path));
	named(0x20001011, UINT64_MAX, name, sizeof(name));
	cr_assert_str_eq(name, "h\t/app/a.js\t9");
	map_write("20002000 10 JS:~k /app/b.js:2:1\n", "w");
	cr_assert(rec_perfmap_update(copy_path));
	cr_assert_str_eq(slurp(copy_path), slurp(map_path), "not copied again");
	named(0x20002001, UINT64_MAX, name, sizeof(name));
	cr_assert_str_eq(name, "k\t/app/b.js\t2");
	unlink(map_path);
	cr_assert(rec_perfmap_update(copy_path));
	cr_assert_str_eq(slurp(copy_path), "20002000 10 JS:~k /app/b.js:2:1\n");
}

/* Another process's map is not this one's; a map older than this
 * process is an earlier process's of the same PID; none: nothing named,
 * no copy. */
Test(recmap, other_old_none)
{
	char other[64], name[128];
	struct timespec old[2] = { { 1000000000, 0 }, { 1000000000, 0 } };
	FILE *f;

	/* (Another process id whose map no run left in /tmp.) */
	for (int k = 1;; k++) {
		snprintf(other, sizeof(other), "/tmp/perf-%d.map",
			 (int)getpid() + k);
		if (access(other, F_OK) != 0)
			break;
		cr_assert_lt(k, 100000, "no free process id for a map");
	}
	f = fopen(other, "wx");
	cr_assert_not_null(f);
	fputs("30000000 100 JS:*theirs /x.js:1:1\n", f);
	fclose(f);
	cr_assert(rec_perfmap_update(copy_path));
	unlink(other);
	named(0x30000011, UINT64_MAX, name, sizeof(name));
	cr_assert_str_eq(name, "", "another process's map read");
	map_write("30000000 100 JS:*stale /x.js:1:1\n", "w");
	cr_assert_eq(utimensat(AT_FDCWD, map_path, old, 0), 0);
	cr_assert(rec_perfmap_update(copy_path));
	named(0x30000011, UINT64_MAX, name, sizeof(name));
	cr_assert_str_eq(name, "", "a stale map read");
	unlink(map_path);
	cr_assert(rec_perfmap_update(copy_path));
	cr_assert_eq(access(copy_path, F_OK), -1, "a copy of nothing");
	cr_assert_eq(rec_perfmap_now(), UINT64_MAX);
}
