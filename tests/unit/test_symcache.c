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
#include <unistd.h>

#include "helpers.h"
#include "symbol.h"
#include "symcache.h"
#include "input.h"
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

/* The cache file of an identity: the only .bin file in the directory. */
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

		if (n > 4 && !strcmp(de->d_name + n - 4, ".bin")) {
			cr_assert_null(found, "two cache files");
			found = xmalloc(strlen(d) + n + 2);
			sprintf(found, "%s/%s", d, de->d_name);
		}
	}
	closedir(dir);
	cr_assert_not_null(found, "no cache file in %s", d);
	return found;
}

/* The file's bytes; *SIZE is set. */
static char *read_bytes(const char *path, size_t *size)
{
	struct filebuf fb;
	char *s;

	cr_assert_eq(file_load(&fb, path), 0);
	s = xmemdup(fb.data, fb.size + 1);
	*size = fb.size;
	file_release(&fb);
	return s;
}

static void write_bytes(const char *path, const void *data, size_t size)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f);
	cr_assert_eq(fwrite(data, 1, size, f), size);
	fclose(f);
}

static void write_text(const char *path, const char *text)
{
	write_bytes(path, text, strlen(text));
}

/* How many times NEEDLE occurs in the SIZE bytes of HAY. */
static int count(const char *hay, size_t size, const char *needle)
{
	size_t n = strlen(needle);
	int k = 0;

	for (const char *p = hay; (p = memmem(p, size - (size_t)(p - hay),
					      needle, n)); p++)
		k++;
	return k;
}

/*
 * The file's layout (symcache.c): a 64-byte header (magic[24], byte
 * order, identity length, then 64-bit counts of entries, inlines,
 * strings and blob bytes), the identity padded to 8, 32-byte entries
 * {addr, func, file, line, inl, ninline:16, flags:16, pad}, 12-byte
 * inlines {func, file, line}, padded to 8, 8-byte string offsets, blob.
 */
struct layout {
	uint64_t nentries, ninlines, nstrings, blob;
	size_t entries, inlines, offsets, strings;
};

static struct layout layout_of(const char *b)
{
	struct layout l;
	uint32_t idlen;

	memcpy(&idlen, b + 28, 4);
	memcpy(&l.nentries, b + 32, 8);
	memcpy(&l.ninlines, b + 40, 8);
	memcpy(&l.nstrings, b + 48, 8);
	memcpy(&l.blob, b + 56, 8);
	l.entries = 64 + ((idlen + 7) & ~7u);
	l.inlines = l.entries + l.nentries * 32;
	l.offsets = l.inlines + ((l.ninlines * 12 + 7) & ~7u);
	l.strings = l.offsets + l.nstrings * 8;
	return l;
}

/* Overwrite the N-byte field (4 or 8) at OFFSET of the file with V. */
static void poke(const char *path, size_t offset, uint64_t v, size_t n)
{
	uint32_t v32 = (uint32_t)v;
	size_t size;
	char *b = read_bytes(path, &size);

	cr_assert(offset + n <= size);
	memcpy(b + offset, n == 4 ? (void *)&v32 : (void *)&v, n);
	write_bytes(path, b, size);
	free(b);
}

static void poke32(const char *path, size_t offset, uint32_t v)
{
	poke(path, offset, v, 4);
}

static void poke64(const char *path, size_t offset, uint64_t v)
{
	poke(path, offset, v, 8);
}

static struct layout file_layout(const char *path)
{
	size_t size;
	char *b = read_bytes(path, &size);
	struct layout l = layout_of(b);

	cr_assert_eq(l.strings + l.blob, size, "the parts make up the file");
	free(b);
	return l;
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

/* A show function that marks what it was given, and counts its calls. */
static int shows;

static const char *show_marked(void *ctx, const char *name)
{
	struct strbuf sb = STRBUF_INIT;
	const char *s;

	cr_assert_eq(ctx, &strings);
	shows++;
	sb_addf(&sb, "<%s>", name);
	s = strtab_intern_str(&strings, sb.buf);
	sb_release(&sb);
	return s;
}

Test(symcache, names_shown_once_each)
{
	struct inline_frame inl[2] = {
		{ NULL, NULL, 0, 0 },
		{ NULL, NULL, 0, 0 },
	};
	struct symcache *c = symcache_open(ID, &strings);
	const struct symcache_entry *g;
	struct symcache_entry e;

	e = entry(0x1000, "f(int)", "/src/a.c", 1);
	symcache_put(c, &e);
	inl[0].func = S("g(long)");
	inl[0].file = S("/src/b.h");
	inl[0].line = 5;
	inl[1].func = S("f(int)");
	inl[1].line = 6;
	e = entry(0x2000, "h()", "/src/a.c", 9);
	e.ninline = 2;
	e.inl = inl;
	symcache_put(c, &e);
	e = entry(0x3000, NULL, NULL, 0);
	symcache_put(c, &e);
	symcache_show_with(c, show_marked, &strings);
	/* What this run put is not the file's: shown by the caller. */
	g = symcache_get(c, 0x1000);
	cr_assert(!g->shown);
	symcache_close(c);

	new_run();
	shows = 0;
	c = symcache_open(ID, &strings);
	/* (Not asked: names in full, nothing shown.) */
	g = symcache_get(c, 0x2000);
	cr_assert(!g->shown);
	eq_str(g->inl[0].func, "g(long)");
	symcache_show_with(c, show_marked, &strings);
	for (int round = 0; round < 2; round++) {
		g = symcache_get(c, 0x2000);
		cr_assert(g->shown);
		eq_str(g->func, "h()");
		eq_str(g->shown_func, "<h()>");
		cr_assert_eq(g->ninline, 2);
		/* The inlined frames in full, and as shown. */
		eq_str(g->inl[0].func, "g(long)");
		eq_str(g->shown_inl[0].func, "<g(long)>");
		eq_str(g->shown_inl[0].file, "/src/b.h");
		cr_assert_eq(g->shown_inl[0].line, 5);
		eq_str(g->shown_inl[1].func, "<f(int)>");
		cr_assert_null(g->shown_inl[1].file);
		cr_assert_eq(g->shown_inl[1].line, 6);
		g = symcache_get(c, 0x1000);
		eq_str(g->shown_func, "<f(int)>");
		cr_assert_null(g->shown_inl);
		g = symcache_get(c, 0x3000);
		cr_assert(g->shown);
		cr_assert_null(g->shown_func);
	}
	/* Each name once: h, g, f (met in an entry and an inlined frame). */
	cr_assert_eq(shows, 3, "%d calls", shows);
	symcache_close(c);
}

Test(symcache, file_format_and_strings_once)
{
	struct symcache *c = symcache_open(ID, &strings);
	struct symcache_entry e;
	struct layout l;
	char *path, *b;
	size_t size;

	for (int i = 0; i < 3; i++) {
		e = entry(0x10 + (uint64_t)i, "a::very_long_name(int)", "x.cc",
			  (uint32_t)i + 1);
		symcache_put(c, &e);
	}
	symcache_close(c);
	path = cache_file();
	b = read_bytes(path, &size);
	/* One file per identity, named by a 64-bit hash. */
	cr_assert_eq(strlen(strrchr(path, '/') + 1), 16 + 4, "%s", path);
	cr_assert(!memcmp(b, "dmprof-symbol-cache 3\n", 22));
	cr_assert_eq(count(b, size, ID), 1);
	cr_assert_eq(count(b, size, "a::very_long_name(int)"), 1);
	l = file_layout(path);
	cr_assert_eq(l.nentries, 3);
	cr_assert_eq(l.ninlines, 0);
	cr_assert_eq(l.nstrings, 2);
	free(b);
	free(path);
}

/* Nothing in a name is special to the file: tabs, newlines, all kept. */
Test(symcache, any_bytes_in_names)
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
	eq_str(g->func, "f\tg\nh\ri");
	eq_str(g->file, "dir\twith tab");
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
	char *path;

	e = entry(0x10, "old", "o.c", 1);
	symcache_put(c, &e);
	e = entry(0x10, "new", "n.c", 2);
	symcache_put(c, &e);
	eq_str(symcache_get(c, 0x10)->func, "new");
	cr_assert_eq(symcache_count(c), 1);
	symcache_close(c);
	path = cache_file();
	cr_assert_eq(file_layout(path).nentries, 1);
	new_run();
	c = symcache_open(ID, &strings);
	g = symcache_get(c, 0x10);
	eq_str(g->func, "new");
	cr_assert_eq(g->line, 2);
	/* A later run's answer replaces the file's too. */
	e = entry(0x10, "newer", "n.c", 3);
	symcache_put(c, &e);
	eq_str(symcache_get(c, 0x10)->func, "newer");
	cr_assert_eq(symcache_count(c), 1);
	symcache_close(c);
	cr_assert_eq(file_layout(path).nentries, 1);
	new_run();
	c = symcache_open(ID, &strings);
	eq_str(symcache_get(c, 0x10)->func, "newer");
	symcache_close(c);
	free(path);
}

Test(symcache, reopen_adds_and_keeps)
{
	struct symcache *c;
	struct symcache_entry e;

	fill_three();
	new_run();
	c = symcache_open(ID, &strings);
	/* Before, between and after the file's entries. */
	e = entry(0x50, "zeroth()", "z.c", 9);
	symcache_put(c, &e);
	e = entry(0x250, "between()", "b.c", 8);
	symcache_put(c, &e);
	e = entry(0x400, "fourth()", "d.c", 4);
	symcache_put(c, &e);
	cr_assert_eq(symcache_count(c), 6);
	symcache_close(c);
	new_run();
	c = symcache_open(ID, &strings);
	eq_str(symcache_get(c, 0x50)->func, "zeroth()");
	eq_str(symcache_get(c, 0x100)->func, "first()");
	eq_str(symcache_get(c, 0x250)->func, "between()");
	eq_str(symcache_get(c, 0x300)->func, "third()");
	eq_str(symcache_get(c, 0x400)->func, "fourth()");
	cr_assert_null(symcache_get(c, 0x401));
	cr_assert_null(symcache_get(c, 0));
	cr_assert_eq(symcache_count(c), 6);
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

/* Replace the first FROM (LEN bytes) in the file with TO. */
static void edit(const char *path, const char *from, const char *to,
		 size_t len)
{
	size_t size;
	char *b = read_bytes(path, &size), *at = memmem(b, size, from, len);

	cr_assert_not_null(at, "'%s' not in the file", from);
	memcpy(at, to, len);
	write_bytes(path, b, size);
	free(b);
}

Test(symcache, other_identity_in_the_file_is_not_used)
{
	const char *other = "build-id:ffffffffffffffffffffffffffffffffffffffff "
			    "debug=none";
	struct symcache *c;
	struct symcache_entry e;
	struct stat before, after;
	char *path, *b;
	size_t size;

	fill_three();
	path = cache_file();
	/* Another binary whose identity hashed to the same file name. */
	edit(path, ID, other, strlen(ID));
	cr_assert_eq(stat(path, &before), 0);
	new_run();
	c = symcache_open(ID, &strings);
	cr_assert_not_null(c);
	cr_assert_null(symcache_get(c, 0x100));
	cr_assert_null(symcache_get(c, 0x300));
	symcache_close(c);
	/* Left alone while nothing is added... */
	cr_assert_eq(stat(path, &after), 0);
	cr_assert_eq(before.st_ino, after.st_ino);
	/* ...then results of this binary replace the other's. */
	new_run();
	c = symcache_open(ID, &strings);
	e = entry(0x500, "mine()", "m.c", 5);
	symcache_put(c, &e);
	symcache_close(c);
	b = read_bytes(path, &size);
	cr_assert_eq(count(b, size, ID), 1);
	cr_assert_eq(count(b, size, "first()"), 0);
	free(b);
	new_run();
	c = symcache_open(ID, &strings);
	eq_str(symcache_get(c, 0x500)->func, "mine()");
	symcache_close(c);
	free(path);
}

Test(symcache, identity_prefix_is_not_a_match)
{
	struct symcache *c;
	char *path;

	fill_three();
	path = cache_file();
	/* The stored identity one byte shorter: a prefix of ours. */
	poke32(path, 28, (uint32_t)strlen(ID) - 1);
	new_run();
	c = symcache_open(ID, &strings);
	cr_assert_null(symcache_get(c, 0x100));
	symcache_close(c);
	/* Longer than the file. */
	poke32(path, 28, 0xffffffff);
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
	edit(path, "dmprof-symbol-cache 3\n", "dmprof-symbol-cache 4\n", 22);
	new_run();
	c = symcache_open(ID, &strings);
	cr_assert_null(symcache_get(c, 0x100));
	symcache_close(c);
	free(path);
}

/* Format 2 (text, HASH.txt) is not read, and goes once HASH.bin is
 * written. */
Test(symcache, old_text_cache_is_replaced)
{
	struct symcache *c;
	struct symcache_entry e;
	struct strbuf txt = STRBUF_INIT;
	char *path;

	fill_three();
	path = cache_file();
	sb_add(&txt, path, strlen(path) - 4);
	sb_addstr(&txt, ".txt");
	write_text(txt.buf, "dmprof-symbol-cache 2\nidentity " ID "\n"
			    "s\tfrom_text()\na\t700\t1\t0\t\t1\n");
	new_run();
	c = symcache_open(ID, &strings);
	cr_assert_null(symcache_get(c, 0x700));
	e = entry(0x800, "eighth()", "e.c", 8);
	symcache_put(c, &e);
	symcache_close(c);
	cr_assert_neq(access(txt.buf, F_OK), 0, "%s is still there", txt.buf);
	sb_release(&txt);
	free(path);
}

/*
 * Damage the entry of 0x200 (the second) with its 4-byte field at
 * OFFSET set to V, or (FIELD64) its address: 0x100 survives, 0x200 and
 * what follows are not used.
 */
static void damaged(size_t offset, uint64_t v, bool field64)
{
	struct symcache *c;
	struct layout l;
	char *path;

	fill_three();
	path = cache_file();
	l = file_layout(path);
	if (field64)
		poke64(path, l.entries + 32 + offset, v);
	else
		poke32(path, l.entries + 32 + offset, (uint32_t)v);
	new_run();
	c = symcache_open(ID, &strings);
	cr_assert_not_null(c);
	cr_assert_not_null(symcache_get(c, 0x100), "lost the entry before "
						   "the damage at %zu", offset);
	eq_str(symcache_get(c, 0x100)->func, "first()");
	cr_assert_null(symcache_get(c, 0x200), "used the damaged entry "
					       "(%zu)", offset);
	cr_assert_null(symcache_get(c, 0x300), "read past the damage (%zu)",
		       offset);
	cr_assert_eq(symcache_count(c), 1);
	symcache_close(c);
	free(path);
}

Test(symcache, damage_cuts_the_file)
{
	/* Out of order, or equal to the one before. */
	damaged(0, 0x50, true);
	damaged(0, 0x100, true);
	/* A string number that names no string (func, file). */
	damaged(8, 77, false);
	damaged(12, 0xffffffff, false);
	/* Inlined frames that are not there. */
	damaged(20, 1, false);
	damaged(24, 1, false);
	damaged(24, 0xffff, false);
}

Test(symcache, damaged_cache_is_rewritten_clean)
{
	struct symcache *c;
	struct layout l;
	char *path, *b;
	size_t size;

	fill_three();
	path = cache_file();
	l = file_layout(path);
	poke32(path, l.entries + 32 + 8, 77);
	new_run();
	/* Nothing added: the file is cut all the same. */
	c = symcache_open(ID, &strings);
	symcache_close(c);
	l = file_layout(path);
	cr_assert_eq(l.nentries, 1);
	b = read_bytes(path, &size);
	cr_assert_eq(count(b, size, "third()"), 0);
	cr_assert_eq(count(b, size, "first()"), 1);
	free(b);
	new_run();
	c = symcache_open(ID, &strings);
	eq_str(symcache_get(c, 0x100)->func, "first()");
	symcache_close(c);
	free(path);
}

/* A string offset past the blob (or a blob not NUL-terminated). */
Test(symcache, damaged_strings)
{
	struct symcache *c;
	struct layout l;
	char *path, *b;
	size_t size;

	fill_three();
	path = cache_file();
	l = file_layout(path);
	/* Strings are numbered as they come: "first()" is the first. */
	poke64(path, l.offsets, l.blob);
	new_run();
	c = symcache_open(ID, &strings);
	cr_assert_null(symcache_get(c, 0x100));
	symcache_close(c);

	fill_three();
	b = read_bytes(path, &size);
	b[size - 1] = 'x';
	write_bytes(path, b, size);
	free(b);
	new_run();
	c = symcache_open(ID, &strings);
	cr_assert_null(symcache_get(c, 0x100));
	cr_assert_null(symcache_get(c, 0x300));
	symcache_close(c);
	free(path);
}

/*
 * Counts whose sizes wrap around: 2^64 / 12 inlines take 2^64 - 4 bytes,
 * 0 once padded to 8 (the file's size then matched, the file was used,
 * and an entry's 65,535 inlines were read from past its end); 2^64 / 32
 * entries, or 2^64 / 8 strings, fit a size_t alone but not with the
 * header added (which ended the run).  The file is not used.
 */
static const struct {
	size_t field, entry_inlines;
	uint64_t v;
} huge_counts[] = {
	{ 32, 0, UINT64_MAX / 16 },
	{ 40, 0, UINT64_MAX / 12 },
	{ 40, 0xffff, UINT64_MAX / 12 },
	{ 40, 0xffff, UINT64_MAX / 12 - 1 },
	{ 32, 0, UINT64_MAX / 32 },
	{ 48, 0, UINT64_MAX / 8 },
	{ 56, 0, UINT64_MAX },
};

/* A file cut short (a writer that died, a full disk), grown, or whose
 * counts are huge. */
Test(symcache, wrong_size_is_not_used)
{
	struct symcache *c;
	char *path, *b;
	size_t size;

	fill_three();
	path = cache_file();
	b = read_bytes(path, &size);
	for (size_t cut = 0; cut < size; cut += 7) {
		write_bytes(path, b, cut);
		new_run();
		c = symcache_open(ID, &strings);
		cr_assert_null(symcache_get(c, 0x100), "cut at %zu", cut);
		symcache_close(c);
	}
	write_bytes(path, b, size);
	{
		char *more = xcalloc(1, size + 8);

		memcpy(more, b, size);
		write_bytes(path, more, size + 8);
		free(more);
	}
	new_run();
	c = symcache_open(ID, &strings);
	cr_assert_null(symcache_get(c, 0x100));
	symcache_close(c);
	for (size_t i = 0; i < ARRAY_SIZE(huge_counts); i++) {
		struct layout l = layout_of(b);

		write_bytes(path, b, size);
		poke64(path, huge_counts[i].field, huge_counts[i].v);
		if (huge_counts[i].entry_inlines)
			poke32(path, l.entries + 24,
			       (uint32_t)huge_counts[i].entry_inlines);
		new_run();
		c = symcache_open(ID, &strings);
		cr_assert_null(symcache_get(c, 0x100), "huge count %zu", i);
		cr_assert_eq(symcache_count(c), 0);
		symcache_close(c);
	}
	free(b);
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
 * Entries 0x100 (with FIRST inlined frames, "inner()"), 0x200 (with two,
 * "inner()" and "middle()") and 0x300; their path.
 */
static char *fill_inlined(uint16_t first)
{
	struct inline_frame inl[2] = {
		{ NULL, NULL, 11, 0 },
		{ NULL, NULL, 12, 0 },
	};
	struct symcache *c = symcache_open(ID, &strings);
	struct symcache_entry e;

	inl[0].func = S("inner()");
	inl[1].func = S("middle()");
	e = entry(0x100, "first()", "a.c", 1);
	e.ninline = first;
	e.inl = inl;
	symcache_put(c, &e);
	e = entry(0x200, "second()", "b.c", 2);
	e.ninline = 2;
	e.inl = inl;
	symcache_put(c, &e);
	e = entry(0x300, "third()", "c.c", 3);
	symcache_put(c, &e);
	symcache_close(c);
	return cache_file();
}

/*
 * A broken cache file is cut where it breaks, inlined frames included:
 * an entry with a damaged inlined frame is not used with frames missing
 * (nor marked as fully looked up), and reading stops there.
 */
Test(symcache, damaged_inline_frame_cuts_the_file)
{
	struct symcache *c;
	const struct symcache_entry *g;
	struct layout l;
	bool before, after;
	int ninline;
	char *path = fill_inlined(0);

	l = file_layout(path);
	cr_assert_eq(l.ninlines, 2);
	/* The second inlined frame's function names no string. */
	poke32(path, l.inlines + 12, 1000);
	new_run();
	c = symcache_open(ID, &strings);
	before = symcache_get(c, 0x100) != NULL;
	g = symcache_get(c, 0x200);
	ninline = g ? g->ninline : 0;
	after = symcache_get(c, 0x300) != NULL;
	symcache_close(c);
	free(path);
	cr_assert(before);
	cr_assert_null(g, "the damaged entry was used with %d of its 2 "
			  "inlined frames",
		       ninline);
	cr_assert_not(after, "read on past the damage");
}

/*
 * Entries whose inlined frames overlap (never written so: each entry's
 * follow the one's before) are damage: a file of entries that all name
 * the same 65,535 frames took 65,535 checks an entry to open.
 */
Test(symcache, shared_inline_frames_cut_the_file)
{
	struct symcache *c;
	char *path = fill_inlined(1);
	struct layout l = file_layout(path);

	cr_assert_eq(l.ninlines, 3);
	/* The second entry's frames start at the first's. */
	poke32(path, l.entries + 32 + 20, 0);
	new_run();
	c = symcache_open(ID, &strings);
	cr_assert_not_null(symcache_get(c, 0x100));
	cr_assert_eq(symcache_get(c, 0x100)->ninline, 1);
	cr_assert_null(symcache_get(c, 0x200));
	cr_assert_null(symcache_get(c, 0x300));
	symcache_close(c);
	free(path);
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

/*
 * A batch's places in the file, found by sorting it and walking the file:
 * the same answers as symcache_get, in any order, with repeats, misses
 * between entries and past both ends, and with entries of this run,
 * which win.
 */
static void find_many_agrees(struct symcache *c, const uint64_t *q, size_t n)
{
	uint32_t *where = xcalloc(n + 1, sizeof(*where));

	symcache_find_many(c, q, n, where);
	for (size_t i = 0; i < n; i++) {
		const struct symcache_entry *a, *b;
		struct symcache_entry copy;

		a = symcache_get(c, q[i]);
		if (a)
			copy = *a;
		b = symcache_get_at(c, q[i], where[i]);
		cr_assert_eq(!a, !b, "0x%llx", (unsigned long long)q[i]);
		if (!a)
			continue;
		cr_assert_eq(b->addr, copy.addr);
		cr_assert_eq(b->func, copy.func);
		cr_assert_eq(b->line, copy.line);
	}
	free(where);
}

Test(symcache, batch_lookups_match_single_ones)
{
	struct symcache *c = symcache_open(ID, &strings);
	struct symcache_entry e;
	uint64_t *q = xcalloc(5000, sizeof(*q));
	size_t n = 0;
	char name[32];

	/* Every third address of 0x10000..0x10000 + 3 * 1000. */
	for (uint64_t a = 0; a < 1000; a++) {
		snprintf(name, sizeof(name), "f%llu", (unsigned long long)a);
		e = entry(0x10000 + 3 * a, name, "x.c", (uint32_t)a + 1);
		symcache_put(c, &e);
	}
	symcache_close(c);

	new_run();
	c = symcache_open(ID, &strings);
	cr_assert_eq(symcache_count(c), 1000);
	/* Hits, misses beside them, both ends, in a scrambled order. */
	for (uint64_t k = 0; k < 3200; k++)
		q[n++] = 0x10000 - 64 + (k * 7919) % 3200;
	q[n++] = 0;
	q[n++] = UINT64_MAX - 5;
	q[n++] = 0x10000;
	q[n++] = 0x10000;
	find_many_agrees(c, q, n);
	/* A few (searched one by one), none, and spread over more than
	 * 4 GB (one by one too). */
	find_many_agrees(c, q, 10);
	find_many_agrees(c, q, 0);
	q[0] = 0x10000 + 3 * 5 + (1ULL << 40);
	find_many_agrees(c, q, n);
	/* A sparse batch in the big file: strides, not a walk. */
	for (size_t i = 0; i < 100; i++)
		q[i] = 0x10000 + 3 * 10 * i;
	find_many_agrees(c, q, 100);
	/* Entries put in this run win over the file's. */
	e = entry(0x10000 + 3 * 7, "replaced", "y.c", 99);
	symcache_put(c, &e);
	for (size_t i = 0; i < 100; i++)
		q[i] = 0x10000 + i;
	find_many_agrees(c, q, 100);
	{
		uint32_t where[100];
		const struct symcache_entry *g;

		symcache_find_many(c, q, 100, where);
		g = symcache_get_at(c, 0x10000 + 21, where[21]);
		eq_str(g->func, "replaced");
	}
	symcache_close(c);
	/* No cache: nothing, anywhere. */
	{
		uint32_t where[100];

		symcache_find_many(NULL, q, 100, where);
		for (size_t i = 0; i < 100; i++) {
			cr_assert_eq(where[i], 0);
			cr_assert_null(symcache_get_at(NULL, q[i], where[i]));
		}
	}
	free(q);
}
