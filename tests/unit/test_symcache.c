/*
 * The persistent symbol cache (round trips, identity, damage, where it
 * lives) and how binary paths are mapped to the host (--alternative-dirs,
 * --symfs).
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "helpers.h"
#include "symbol.h"
#include "symcache.h"
#include "text.h"
#include "util.h"

static struct arena arena;
static struct strtab strings;

static void setup(void)
{
	struct strbuf sb = STRBUF_INIT;

	sb_addf(&sb, "%s/cache", tmpdir());
	setenv("XDG_CACHE_HOME", sb.buf, 1);
	sb_release(&sb);
	strtab_init(&strings, &arena);
}

static void teardown(void)
{
	strtab_free(&strings);
	arena_free(&arena);
}

TestSuite(symcache, .init = setup, .fini = teardown);
TestSuite(hostpath);

#define ID "build-id:00112233445566778899aabbccddeeff00112233 debug=none"

static const char *S(const char *s)
{
	return s ? strtab_intern_str(&strings, s) : NULL;
}

static struct symcache_entry entry(uint64_t addr, const char *func,
				   const char *file, uint32_t line)
{
	struct symcache_entry e;

	memset(&e, 0, sizeof(e));
	e.addr = addr;
	e.flags = SC_DWARF;
	e.func = S(func);
	e.file = S(file);
	e.line = line;
	return e;
}

/* Fresh strings, as a later run would have: nothing shared by pointer. */
static void new_run(void)
{
	strtab_free(&strings);
	arena_free(&arena);
	memset(&arena, 0, sizeof(arena));
	strtab_init(&strings, &arena);
}

static void eq_str(const char *got, const char *want)
{
	if (!want)
		cr_assert_null(got, "got '%s', want NULL", got);
	else
		cr_assert(got && !strcmp(got, want), "got '%s', want '%s'",
			  got ? got : "(null)", want);
}

/* The cache file of an identity: the only .txt file in the directory. */
static char *cache_file(void)
{
	const char *d = symcache_dir();
	struct dirent *de;
	char *found = NULL;
	DIR *dir;

	cr_assert_not_null(d);
	dir = opendir(d);
	cr_assert_not_null(dir, "no cache directory %s", d);
	while ((de = readdir(dir)) != NULL) {
		size_t n = strlen(de->d_name);

		if (n > 4 && !strcmp(de->d_name + n - 4, ".txt")) {
			cr_assert_null(found, "two cache files");
			found = xmalloc(strlen(d) + n + 2);
			sprintf(found, "%s/%s", d, de->d_name);
		}
	}
	closedir(dir);
	cr_assert_not_null(found, "no cache file in %s", d);
	return found;
}

static char *read_text(const char *path)
{
	struct filebuf fb;
	char *s;

	cr_assert_eq(file_load(&fb, path), 0);
	s = xstrdup(fb.data);
	file_release(&fb);
	return s;
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
}

/* Replace the first FROM in the file with TO. */
static void edit(const char *path, const char *from, const char *to)
{
	char *s = read_text(path), *at = strstr(s, from);
	struct strbuf sb = STRBUF_INIT;

	cr_assert_not_null(at, "'%s' not in:\n%s", from, s);
	sb_add(&sb, s, (size_t)(at - s));
	sb_addstr(&sb, to);
	sb_addstr(&sb, at + strlen(from));
	write_text(path, sb.buf);
	sb_release(&sb);
	free(s);
}

static int count(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

/* Three entries 0x100, 0x200, 0x300 in the cache of ID. */
static void fill_three(void)
{
	struct symcache *c = symcache_open(ID, &strings);
	struct symcache_entry e;

	cr_assert_not_null(c);
	e = entry(0x100, "first()", "a.c", 1);
	symcache_put(c, &e);
	e = entry(0x200, "second()", "b.c", 2);
	symcache_put(c, &e);
	e = entry(0x300, "third()", "c.c", 3);
	symcache_put(c, &e);
	symcache_close(c);
}

Test(symcache, round_trip)
{
	struct inline_frame inl[2] = {
		{ NULL, NULL, 0, 0 },
		{ NULL, NULL, 0, 0 },
	};
	struct symcache *c = symcache_open(ID, &strings);
	const struct symcache_entry *g;
	struct symcache_entry e;

	cr_assert_not_null(c);
	cr_assert_null(symcache_get(c, 0x1000));
	e = entry(0x1000, "ns::Widget::make(int)", "/src/widget.cc", 42);
	symcache_put(c, &e);
	/* Unresolved: no function, no file. */
	e = entry(0x2000, NULL, NULL, 0);
	e.flags = 0;
	symcache_put(c, &e);
	/* A function without source information. */
	e = entry(0x3000, "malloc", NULL, 0);
	symcache_put(c, &e);
	/* Two functions inlined at the address, innermost first. */
	inl[0].func = S("std::vector<int>::push_back(int const&)");
	inl[0].file = S("/usr/include/c++/12/bits/stl_vector.h");
	inl[0].line = 1287;
	inl[1].func = S("helper()");
	inl[1].file = NULL;
	inl[1].line = 7;
	e = entry(0x4000, "ns::Widget::make(int)", "/src/widget.cc", 50);
	e.ninline = 2;
	e.inl = inl;
	symcache_put(c, &e);
	/* The edges of the address space and an empty name. */
	e = entry(0, "", "", 0);
	symcache_put(c, &e);
	e = entry(UINT64_MAX, "last", "z.c", UINT32_MAX);
	symcache_put(c, &e);
	/* Visible before it is written. */
	cr_assert_not_null(symcache_get(c, 0x4000));
	symcache_close(c);

	new_run();
	c = symcache_open(ID, &strings);
	cr_assert_not_null(c);
	g = symcache_get(c, 0x1000);
	cr_assert_not_null(g);
	cr_assert_eq(g->addr, 0x1000);
	cr_assert_eq(g->flags, SC_DWARF);
	eq_str(g->func, "ns::Widget::make(int)");
	eq_str(g->file, "/src/widget.cc");
	cr_assert_eq(g->line, 42);
	cr_assert_eq(g->ninline, 0);
	/* Strings come back interned in the new run's table. */
	cr_assert_eq(g->func, S("ns::Widget::make(int)"));

	g = symcache_get(c, 0x2000);
	cr_assert_not_null(g);
	cr_assert_eq(g->flags, 0);
	eq_str(g->func, NULL);
	eq_str(g->file, NULL);

	g = symcache_get(c, 0x3000);
	eq_str(g->func, "malloc");
	eq_str(g->file, NULL);

	g = symcache_get(c, 0x4000);
	cr_assert_not_null(g);
	cr_assert_eq(g->line, 50);
	cr_assert_eq(g->ninline, 2);
	eq_str(g->inl[0].func, "std::vector<int>::push_back(int const&)");
	eq_str(g->inl[0].file, "/usr/include/c++/12/bits/stl_vector.h");
	cr_assert_eq(g->inl[0].line, 1287);
	eq_str(g->inl[1].func, "helper()");
	eq_str(g->inl[1].file, NULL);
	cr_assert_eq(g->inl[1].line, 7);

	g = symcache_get(c, 0);
	cr_assert_not_null(g);
	eq_str(g->func, "");
	eq_str(g->file, "");
	g = symcache_get(c, UINT64_MAX);
	cr_assert_not_null(g);
	eq_str(g->func, "last");
	cr_assert_eq(g->line, UINT32_MAX);

	cr_assert_null(symcache_get(c, 0x1001));
	symcache_close(c);
}

Test(symcache, file_format_and_strings_once)
{
	struct symcache *c = symcache_open(ID, &strings);
	struct symcache_entry e;
	char *path, *text;

	for (int i = 0; i < 3; i++) {
		e = entry(0x10 + (uint64_t)i, "a::very_long_name(int)", "x.cc",
			  (uint32_t)i + 1);
		symcache_put(c, &e);
	}
	symcache_close(c);
	path = cache_file();
	text = read_text(path);
	/* One file per identity, named by a 64-bit hash. */
	cr_assert_eq(strlen(strrchr(path, '/') + 1), 16 + 4, "%s", path);
	cr_assert(!strncmp(text, "dmprof-symbol-cache 2\nidentity " ID "\n",
			   strlen("dmprof-symbol-cache 2\nidentity " ID "\n")),
		  "%s", text);
	cr_assert_eq(count(text, "a::very_long_name(int)"), 1, "%s", text);
	cr_assert_eq(count(text, "\ns\t"), 2, "%s", text);
	cr_assert_eq(count(text, "\na\t"), 3, "%s", text);
	cr_assert(strstr(text, "a\t12\t1\t0\t1\t3\n"), "%s", text);
	free(text);
	free(path);
}

Test(symcache, separators_in_names_are_blanked)
{
	struct symcache *c = symcache_open(ID, &strings);
	const struct symcache_entry *g;
	struct symcache_entry e;

	e = entry(0x10, "f\tg\nh\ri", "dir\twith tab", 1);
	symcache_put(c, &e);
	e = entry(0x20, "next", "n.c", 2);
	symcache_put(c, &e);
	symcache_close(c);
	new_run();
	c = symcache_open(ID, &strings);
	g = symcache_get(c, 0x10);
	cr_assert_not_null(g);
	eq_str(g->func, "f g h i");
	eq_str(g->file, "dir with tab");
	/* And the entry after it is not lost. */
	g = symcache_get(c, 0x20);
	cr_assert_not_null(g);
	eq_str(g->func, "next");
	symcache_close(c);
}

Test(symcache, later_put_replaces)
{
	struct symcache *c = symcache_open(ID, &strings);
	const struct symcache_entry *g;
	struct symcache_entry e;
	char *path, *text;

	e = entry(0x10, "old", "o.c", 1);
	symcache_put(c, &e);
	e = entry(0x10, "new", "n.c", 2);
	symcache_put(c, &e);
	eq_str(symcache_get(c, 0x10)->func, "new");
	symcache_close(c);
	path = cache_file();
	text = read_text(path);
	cr_assert_eq(count(text, "\na\t"), 1, "%s", text);
	new_run();
	c = symcache_open(ID, &strings);
	g = symcache_get(c, 0x10);
	eq_str(g->func, "new");
	cr_assert_eq(g->line, 2);
	symcache_close(c);
	free(text);
	free(path);
}

Test(symcache, reopen_adds_and_keeps)
{
	struct symcache *c;
	struct symcache_entry e;

	fill_three();
	new_run();
	c = symcache_open(ID, &strings);
	e = entry(0x400, "fourth()", "d.c", 4);
	symcache_put(c, &e);
	symcache_close(c);
	new_run();
	c = symcache_open(ID, &strings);
	eq_str(symcache_get(c, 0x100)->func, "first()");
	eq_str(symcache_get(c, 0x300)->func, "third()");
	eq_str(symcache_get(c, 0x400)->func, "fourth()");
	symcache_close(c);
}

Test(symcache, unchanged_cache_is_not_rewritten)
{
	struct symcache *c;
	char *path;
	struct stat before, after;

	fill_three();
	path = cache_file();
	/* A rewrite would rename a new file over it: a new inode. */
	cr_assert_eq(stat(path, &before), 0);
	new_run();
	c = symcache_open(ID, &strings);
	cr_assert_not_null(symcache_get(c, 0x200));
	symcache_close(c);
	cr_assert_eq(stat(path, &after), 0);
	cr_assert_eq(before.st_ino, after.st_ino);
	cr_assert_eq(before.st_mtim.tv_nsec, after.st_mtim.tv_nsec);
	free(path);
}

Test(symcache, other_identity_in_the_file_is_not_used)
{
	struct symcache *c;
	struct symcache_entry e;
	char *path, *text;

	fill_three();
	path = cache_file();
	/* Another binary whose identity hashed to the same file name. */
	edit(path, "identity " ID "\n",
	     "identity build-id:ffffffffffffffffffffffffffffffffffffffff "
	     "debug=none\n");
	new_run();
	c = symcache_open(ID, &strings);
	cr_assert_not_null(c);
	cr_assert_null(symcache_get(c, 0x100));
	cr_assert_null(symcache_get(c, 0x300));
	/* Results of this binary then replace the other's. */
	e = entry(0x500, "mine()", "m.c", 5);
	symcache_put(c, &e);
	symcache_close(c);
	text = read_text(path);
	cr_assert(strstr(text, "identity " ID "\n"), "%s", text);
	cr_assert_null(strstr(text, "first()"), "%s", text);
	new_run();
	c = symcache_open(ID, &strings);
	eq_str(symcache_get(c, 0x500)->func, "mine()");
	symcache_close(c);
	free(text);
	free(path);
}

Test(symcache, identity_prefix_is_not_a_match)
{
	struct symcache *c;
	char *path;

	fill_three();
	path = cache_file();
	edit(path, "identity " ID "\n", "identity " ID "x\n");
	new_run();
	c = symcache_open(ID, &strings);
	cr_assert_null(symcache_get(c, 0x100));
	symcache_close(c);
	edit(path, "identity " ID "x\n", "identity build-id:0011\n");
	new_run();
	c = symcache_open(ID, &strings);
	cr_assert_null(symcache_get(c, 0x100));
	symcache_close(c);
	free(path);
}

Test(symcache, other_format_version_is_ignored)
{
	struct symcache *c;
	char *path;

	fill_three();
	path = cache_file();
	edit(path, "dmprof-symbol-cache 2\n", "dmprof-symbol-cache 1\n");
	new_run();
	c = symcache_open(ID, &strings);
	cr_assert_null(symcache_get(c, 0x100));
	symcache_close(c);
	free(path);
}

/* Damage the line of 0x200 with EDIT_FROM -> EDIT_TO; 0x100 survives. */
static void damaged(const char *from, const char *to)
{
	struct symcache *c;
	char *path;

	fill_three();
	path = cache_file();
	edit(path, from, to);
	new_run();
	c = symcache_open(ID, &strings);
	cr_assert_not_null(c);
	cr_assert_not_null(symcache_get(c, 0x100), "lost the entry before "
						   "'%s'", to);
	eq_str(symcache_get(c, 0x100)->func, "first()");
	cr_assert_null(symcache_get(c, 0x200), "used the damaged '%s'", to);
	cr_assert_null(symcache_get(c, 0x300), "read past the damage '%s'",
		       to);
	symcache_close(c);
	free(path);
}

Test(symcache, damage_cuts_the_file)
{
	damaged("a\t200\t", "a\tzz0\t");
	damaged("a\t200\t1\t2\t3\t2", "a\t200\t1\t2\t3\tx");
	damaged("a\t200\t1\t2\t3\t2", "a\t200\t1\t2\t3\t99999999999");
	/* A string number that no "s" line has given. */
	damaged("a\t200\t1\t2\t3\t2", "a\t200\t1\t77\t3\t2");
	damaged("a\t200\t1\t2\t3\t2", "a\t200\t1\t2\t3");
	damaged("a\t200\t1\t2\t3\t2", "a\t200\t1\t2\t3\t2\t4");
	damaged("a\t200\t", "b\t200\t");
	damaged("a\t200\t", "\t200\t");
	damaged("s\tsecond()\n", "s\n");
}

Test(symcache, damaged_cache_is_rewritten_clean)
{
	struct symcache *c;
	struct symcache_entry e;
	char *path, *text;

	fill_three();
	path = cache_file();
	edit(path, "a\t200\t", "a\tzz0\t");
	new_run();
	c = symcache_open(ID, &strings);
	e = entry(0x600, "sixth()", "f.c", 6);
	symcache_put(c, &e);
	symcache_close(c);
	text = read_text(path);
	cr_assert_null(strstr(text, "zz0"), "%s", text);
	cr_assert_null(strstr(text, "third()"), "%s", text);
	cr_assert(strstr(text, "first()"), "%s", text);
	cr_assert(strstr(text, "sixth()"), "%s", text);
	free(text);
	free(path);
}

Test(symcache, last_line_without_newline_is_dropped)
{
	struct symcache *c;
	char *path, *text;

	fill_three();
	path = cache_file();
	text = read_text(path);
	/* Cut inside the last line: a writer that died (or a full disk). */
	text[strlen(text) - 3] = '\0';
	write_text(path, text);
	new_run();
	c = symcache_open(ID, &strings);
	cr_assert_not_null(symcache_get(c, 0x200));
	cr_assert_null(symcache_get(c, 0x300));
	symcache_close(c);
	free(text);
	free(path);
}

Test(symcache, empty_and_garbage_files)
{
	struct symcache *c;
	char *path;

	fill_three();
	path = cache_file();
	write_text(path, "");
	new_run();
	c = symcache_open(ID, &strings);
	cr_assert_null(symcache_get(c, 0x100));
	symcache_close(c);
	write_text(path, "\x7f" "ELF garbage\n\n\n");
	c = symcache_open(ID, &strings);
	cr_assert_null(symcache_get(c, 0x100));
	symcache_close(c);
	free(path);
}

/*
 * A broken cache file is cut where it breaks, inlined frames included:
 * an entry with a damaged inlined frame is not used with frames missing
 * (nor marked as fully looked up), and reading stops there.
 */
Test(symcache, damaged_inline_frame_cuts_the_file)
{
	struct symcache *c;
	struct symcache_entry e;
	struct inline_frame inl[2] = {
		{ NULL, NULL, 11, 0 },
		{ NULL, NULL, 12, 0 },
	};
	const struct symcache_entry *g;
	bool before, after;
	int ninline;
	char *path;

	c = symcache_open(ID, &strings);
	e = entry(0x100, "first()", "a.c", 1);
	symcache_put(c, &e);
	inl[0].func = S("inner()");
	inl[1].func = S("middle()");
	e = entry(0x200, "second()", "b.c", 2);
	e.ninline = 2;
	e.inl = inl;
	symcache_put(c, &e);
	e = entry(0x300, "third()", "c.c", 3);
	symcache_put(c, &e);
	symcache_close(c);
	path = cache_file();
	/* The second inlined frame's line number is damaged. */
	edit(path, "\t12\n", "\tX2\n");
	free(path);
	new_run();
	c = symcache_open(ID, &strings);
	before = symcache_get(c, 0x100) != NULL;
	g = symcache_get(c, 0x200);
	ninline = g ? g->ninline : 0;
	after = symcache_get(c, 0x300) != NULL;
	symcache_close(c);
	cr_assert(before);
	cr_assert_null(g, "the damaged entry was used with %d of its 2 "
			  "inlined frames",
		       ninline);
	cr_assert_not(after, "read on past the damage");
}

Test(symcache, where_it_lives)
{
	char want[600];

	snprintf(want, sizeof(want), "%s/cache/dmprof/symbols", tmpdir());
	cr_assert_str_eq(symcache_dir(), want);
	setenv("XDG_CACHE_HOME", "", 1);
	setenv("HOME", "/home/someone", 1);
	cr_assert_str_eq(symcache_dir(), "/home/someone/.cache/dmprof/symbols");
	unsetenv("XDG_CACHE_HOME");
	cr_assert_str_eq(symcache_dir(), "/home/someone/.cache/dmprof/symbols");
}

Test(symcache, no_cache_dir_means_no_cache)
{
	struct symcache *c;
	struct symcache_entry e = entry(0x10, "f", "f.c", 1);

	unsetenv("XDG_CACHE_HOME");
	unsetenv("HOME");
	cr_assert_null(symcache_dir());
	c = symcache_open(ID, &strings);
	cr_assert_null(c);
	/* Every call takes the NULL cache. */
	cr_assert_null(symcache_get(c, 0x10));
	symcache_put(c, &e);
	symcache_close(c);
	setenv("HOME", "", 1);
	setenv("XDG_CACHE_HOME", "", 1);
	cr_assert_null(symcache_dir());
	cr_assert_null(symcache_open(ID, &strings));
}

Test(symcache, directory_made_private)
{
	struct stat st;

	fill_three();
	cr_assert_eq(stat(symcache_dir(), &st), 0);
	cr_assert(S_ISDIR(st.st_mode));
	cr_assert_eq(st.st_mode & 0777, 0700);
}

Test(symcache, no_temporary_files_left)
{
	DIR *d;
	struct dirent *de;
	int files = 0;

	fill_three();
	d = opendir(symcache_dir());
	cr_assert_not_null(d);
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		cr_assert_null(strstr(de->d_name, ".tmp"), "%s", de->d_name);
		files++;
	}
	closedir(d);
	cr_assert_eq(files, 1);
}

Test(symcache, unwritable_cache_dir_is_no_fuss)
{
	struct strbuf sb = STRBUF_INIT;
	struct symcache *c;
	struct symcache_entry e = entry(0x10, "f", "f.c", 1);

	/* XDG_CACHE_HOME names a file: no directory can be made there. */
	sb_addf(&sb, "%s", write_file("not-a-dir", "x", -1));
	setenv("XDG_CACHE_HOME", sb.buf, 1);
	capture_stderr();
	c = symcache_open(ID, &strings);
	cr_assert_not_null(c);
	symcache_put(c, &e);
	symcache_close(c);
	cr_assert_str_eq(stderr_text(), "");
	sb_release(&sb);
}

Test(symcache, identities_have_their_own_files)
{
	struct symcache *c;
	struct symcache_entry e;

	fill_three();
	new_run();
	c = symcache_open("file:/usr/bin/x:10:1.000000000:7 debug=none",
			  &strings);
	cr_assert_null(symcache_get(c, 0x100));
	e = entry(0x100, "other()", "o.c", 9);
	symcache_put(c, &e);
	symcache_close(c);
	new_run();
	c = symcache_open(ID, &strings);
	eq_str(symcache_get(c, 0x100)->func, "first()");
	symcache_close(c);
}

/* ---- host paths ---- */

/* The options under test (each test runs in a process of its own). */
static struct sym_options o;

static void host_is(const char *path, const char *want)
{
	char got[1024], *p = sym_host_path(&o, path);

	snprintf(got, sizeof(got), "%s", p);
	free(p);
	cr_assert_str_eq(got, want, "%s -> %s, want %s", path, got, want);
}

Test(hostpath, no_options_is_the_path)
{
	host_is("/usr/lib/libc.so.6", "/usr/lib/libc.so.6");
	host_is("relative/x", "relative/x");
}

Test(hostpath, longest_target_wins)
{
	cr_assert_eq(sym_options_alternative_dirs(&o, 
			     "/usr@/host/usr:/usr/lib@/host/lib"), 0);
	host_is("/usr/lib/libc.so.6", "/host/lib/libc.so.6");
	host_is("/usr/bin/prog", "/host/usr/bin/prog");
	host_is("/usr/lib", "/host/lib");
	host_is("/usr", "/host/usr");
	/* Whole components only. */
	host_is("/usrx/y", "/usrx/y");
	host_is("/usr/library/z", "/host/usr/library/z");
	host_is("/opt/z", "/opt/z");
}

Test(hostpath, longest_target_wins_in_any_order)
{
	cr_assert_eq(sym_options_alternative_dirs(&o, "/usr/lib@/host/lib"), 0);
	cr_assert_eq(sym_options_alternative_dirs(&o, "/usr@/host/usr"), 0);
	host_is("/usr/lib/libc.so.6", "/host/lib/libc.so.6");
	host_is("/usr/share/x", "/host/usr/share/x");
}

Test(hostpath, trailing_slashes)
{
	cr_assert_eq(sym_options_alternative_dirs(&o, 
			     "/system/lib/@/tmp/dev/lib//:/vendor//@/v"), 0);
	host_is("/system/lib/libfoo.so", "/tmp/dev/lib/libfoo.so");
	host_is("/system/lib", "/tmp/dev/lib");
	host_is("/vendor/lib/x.so", "/v/lib/x.so");
	host_is("/system/libx.so", "/system/libx.so");
}

Test(hostpath, symfs_root)
{
	o.symfs = "/sysroot";
	host_is("/usr/lib/libc.so.6", "/sysroot/usr/lib/libc.so.6");
	/* Applied after --alternative-dirs. */
	cr_assert_eq(sym_options_alternative_dirs(&o, "/usr/lib@/mirror/lib"), 0);
	host_is("/usr/lib/libc.so.6", "/sysroot/mirror/lib/libc.so.6");
	host_is("/bin/sh", "/sysroot/bin/sh");
}

Test(hostpath, malformed_specs)
{
	const char *bad[] = { "nope", "@/host", "/target@", "/a@/b:junk" };

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		capture_stderr();
		cr_assert_eq(sym_options_alternative_dirs(&o, bad[i]), -1, "%s",
			     bad[i]);
		cr_assert(strstr(stderr_text(), "--alternative-dirs: expected "
						"TARGET@HOST, not '"),
			  "%s", stderr_text());
	}
	capture_stderr();
	sym_options_alternative_dirs(&o, "/a@/b:junk");
	cr_assert(strstr(stderr_text(), "not 'junk'"), "%s", stderr_text());
}

Test(hostpath, host_of_root)
{
	char *got;

	cr_assert_eq(sym_options_alternative_dirs(&o, "/opt@/"), 0);
	/* "//app/bin" names the same file; either form is right. */
	got = sym_host_path(&o, "/opt/app/bin");
	cr_assert(!strcmp(got, "/app/bin") || !strcmp(got, "//app/bin"),
		  "%s", got);
	free(got);
}

/*
 * A TARGET of "/" (the profiled machine's whole root, copied to HOST)
 * matches every path and keeps the separator: "/@/mnt/root/" maps
 * "/usr/lib/x.so" to "/mnt/root/usr/lib/x.so".
 */
Test(hostpath, target_root_keeps_the_separator)
{
	cr_assert_eq(sym_options_alternative_dirs(&o, "/@/mnt/root/"), 0);
	host_is("/usr/lib/x.so", "/mnt/root/usr/lib/x.so");
}
