/*
 * The symbol cache is a text file per binary identity:
 *
 *   dmprof-symbol-cache 2
 *   identity IDENTITY
 *   s<TAB>TEXT                                  string number 0, 1, ...
 *   a<TAB>ADDR<TAB>FLAGS<TAB>FUNC<TAB>FILE<TAB>LINE[<TAB>FUNC<TAB>FILE<TAB>LINE...]
 *
 * one "a" line per address, with string numbers (empty: none), inlined
 * functions after the function itself.  Each string is written once: a
 * C++ name is long, and a function has many addresses.  A file whose
 * identity line differs (a hash collision, a different binary) is
 * ignored; a broken one is cut where it breaks and rewritten.  Files are
 * replaced atomically, so a concurrent reader never sees half of one.
 */
#include "symcache.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "text.h"
#include "util.h"

#define MAGIC "dmprof-symbol-cache 2"

struct symcache {
	char *path;
	char *identity;
	struct strtab *strings;
	struct arena arena;
	struct hashmap map;   /* addr -> entry */
	struct symcache_entry **v;
	size_t n, alloc;
	bool dirty;
};

static char dir[4096];

const char *symcache_dir(void)
{
	const char *xdg = getenv("XDG_CACHE_HOME");
	const char *home = getenv("HOME");

	if (xdg && *xdg)
		snprintf(dir, sizeof(dir), "%s/dmprof/symbols", xdg);
	else if (home && *home)
		snprintf(dir, sizeof(dir), "%s/.cache/dmprof/symbols", home);
	else
		return NULL;
	return dir;
}

/* mkdir -p, private to the user. */
static int make_dirs(const char *path)
{
	char *p = xstrdup(path);
	int rc = 0;

	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, 0700) < 0 && errno != EEXIST)
			rc = -1;
		*s = '/';
	}
	if (mkdir(p, 0700) < 0 && errno != EEXIST)
		rc = -1;
	free(p);
	return rc;
}

/* Split LINE at tabs into at most MAX fields. */
static int fields(const struct line *l, const char **f, size_t *len, int max)
{
	const char *p = l->p, *end = l->p + l->len;
	int n = 0;

	while (n < max) {
		const char *tab = memchr(p, '\t', (size_t)(end - p));

		f[n] = p;
		len[n] = (size_t)((tab ? tab : end) - p);
		n++;
		if (!tab)
			break;
		p = tab + 1;
	}
	return n;
}

static void add(struct symcache *c, struct symcache_entry *e)
{
	GROW(c->v, c->n + 1, c->alloc);
	c->v[c->n++] = e;
	hashmap_replace(&c->map, hash_u64(e->addr), NULL, NULL, e);
}

/* An empty field (no string) or a number below N. */
static bool string_id(const char *f, size_t len, const char **strs, size_t n)
{
	uint64_t id;

	(void)strs;
	return !len || (word_u64(f, len, &id) == NUM_OK && id < n);
}

static const char *lookup_id(const char *f, size_t len, const char **strs)
{
	uint64_t id;

	if (!len || word_u64(f, len, &id) != NUM_OK)
		return NULL;
	return strs[id];
}

/* The inlined frames of an "a" line (fields 6 on) are sound. */
static bool inline_ok(const char **f, const size_t *len, int n,
		      const char **strs, size_t nstrs)
{
	for (int k = 6; k + 2 < n; k += 3) {
		uint64_t il;

		if (!string_id(f[k], len[k], strs, nstrs) ||
		    !string_id(f[k + 1], len[k + 1], strs, nstrs) ||
		    word_u64(f[k + 2], len[k + 2], &il) != NUM_OK ||
		    il > UINT32_MAX)
			return false;
	}
	return true;
}

static void load(struct symcache *c)
{
	struct filebuf fb;
	struct line_reader r;
	struct line l;
	const char **strs = NULL;
	size_t nstrs = 0, strs_alloc = 0;
	bool ok = false;

	if (access(c->path, F_OK) < 0)
		return;
	if (file_load(&fb, c->path) < 0)
		return;
	lines_init(&r, fb.data, fb.size);
	if (lines_next(&r, &l) && l.len == strlen(MAGIC) &&
	    !memcmp(l.p, MAGIC, l.len) &&
	    lines_next(&r, &l) && l.len == 9 + strlen(c->identity) &&
	    !memcmp(l.p, "identity ", 9) &&
	    !memcmp(l.p + 9, c->identity, l.len - 9))
		ok = true;
	while (ok && lines_next(&r, &l)) {
		const char *f[4 + 3 * 64];
		size_t len[4 + 3 * 64];
		struct symcache_entry *e;
		uint64_t addr, flags, line;
		int n;

		if (!l.newline)
			break; /* the rest is damaged: drop it */
		if (l.len >= 2 && l.p[0] == 's' && l.p[1] == '\t') {
			GROW(strs, nstrs + 1, strs_alloc);
			strs[nstrs++] = strtab_intern(c->strings, l.p + 2,
						      l.len - 2);
			continue;
		}
		n = fields(&l, f, len, (int)ARRAY_SIZE(f));
		if (n < 6 || (n - 6) % 3 || len[0] != 1 || f[0][0] != 'a' ||
		    word_hex(f[1], len[1], &addr, false) != NUM_OK ||
		    word_u64(f[2], len[2], &flags) != NUM_OK ||
		    !string_id(f[3], len[3], strs, nstrs) ||
		    !string_id(f[4], len[4], strs, nstrs) ||
		    word_u64(f[5], len[5], &line) != NUM_OK ||
		    line > UINT32_MAX || !inline_ok(f, len, n, strs, nstrs))
			break;
		e = arena_alloc(&c->arena, sizeof(*e));
		e->addr = addr;
		e->flags = (unsigned)flags;
		e->func = lookup_id(f[3], len[3], strs);
		e->file = lookup_id(f[4], len[4], strs);
		e->line = (uint32_t)line;
		e->ninline = (uint16_t)((n - 6) / 3);
		e->inl = e->ninline ? arena_alloc(&c->arena, e->ninline *
							      sizeof(*e->inl))
				    : NULL;
		for (int k = 0; k < e->ninline; k++) {
			const char **g = f + 6 + 3 * k;
			size_t *gl = len + 6 + 3 * k;
			uint64_t il = 0;

			word_u64(g[2], gl[2], &il);
			e->inl[k].func = lookup_id(g[0], gl[0], strs);
			e->inl[k].file = lookup_id(g[1], gl[1], strs);
			e->inl[k].line = (uint32_t)il;
		}
		add(c, e);
	}
	free(strs);
	file_release(&fb);
}

/* File names must not depend on the per-process hash seed: FNV-1a. */
static uint64_t stable_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h;
}

const char *symcache_path(const struct symcache *c)
{
	return c->path;
}

size_t symcache_count(const struct symcache *c)
{
	return c->n;
}

struct symcache *symcache_open(const char *identity, struct strtab *strings)
{
	struct symcache *c;
	struct strbuf sb = STRBUF_INIT;
	const char *d;

	if (!(d = symcache_dir()))
		return NULL;
	c = xcalloc(1, sizeof(*c));
	sb_addf(&sb, "%s/%016" PRIx64 ".txt", d, stable_hash(identity));
	c->path = sb_detach(&sb);
	c->identity = xstrdup(identity);
	c->strings = strings;
	hashmap_init(&c->map, 1024);
	load(c);
	return c;
}

const struct symcache_entry *symcache_get(struct symcache *c, uint64_t addr)
{
	return c ? hashmap_get(&c->map, hash_u64(addr), NULL, NULL) : NULL;
}

void symcache_put(struct symcache *c, const struct symcache_entry *e)
{
	struct symcache_entry *copy;

	if (!c)
		return;
	copy = arena_alloc(&c->arena, sizeof(*copy));
	*copy = *e;
	if (e->ninline) {
		copy->inl = arena_alloc(&c->arena,
					e->ninline * sizeof(*copy->inl));
		memcpy(copy->inl, e->inl, e->ninline * sizeof(*copy->inl));
	}
	add(c, copy);
	c->dirty = true;
}

/* Text fields must not hold the separators. */
static void put_field(FILE *f, const char *s)
{
	for (; s && *s; s++)
		fputc(*s == '\t' || *s == '\n' || *s == '\r' ? ' ' : *s, f);
}

struct string_ids {
	struct hashmap map; /* interned string -> id + 1 */
	size_t n;
};

/* Write S's "s" line the first time it comes, and return its field. */
static void put_string(FILE *f, struct string_ids *ids, const char *s,
		       struct strbuf *field)
{
	uint64_t h = hash_u64((uintptr_t)s);
	void *id;

	sb_reset(field);
	if (!s)
		return;
	id = hashmap_get(&ids->map, h, NULL, NULL);
	if (!id) {
		fputs("s\t", f);
		put_field(f, s);
		fputc('\n', f);
		id = (void *)(uintptr_t)++ids->n;
		hashmap_put(&ids->map, h, id);
	}
	sb_addf(field, "%zu", (size_t)(uintptr_t)id - 1);
}

static void save(struct symcache *c)
{
	struct strbuf tmp = STRBUF_INIT, fn = STRBUF_INIT, fl = STRBUF_INIT;
	struct string_ids ids;
	FILE *f;
	bool ok;

	if (make_dirs(symcache_dir()) < 0)
		return; /* a read-only home: no cache, no fuss */
	sb_addf(&tmp, "%s.%ld.tmp", c->path, (long)getpid());
	f = fopen(tmp.buf, "w");
	if (!f) {
		sb_release(&tmp);
		return;
	}
	hashmap_init(&ids.map, 1024);
	ids.n = 0;
	fprintf(f, "%s\nidentity %s\n", MAGIC, c->identity);
	for (size_t i = 0; i < c->n; i++) {
		const struct symcache_entry *e = c->v[i];

		/* Replaced entries stay in v; write the live one only. */
		if (hashmap_get(&c->map, hash_u64(e->addr), NULL, NULL) != e)
			continue;
		/* Strings first: an "a" line refers only to earlier ones. */
		put_string(f, &ids, e->func, &fn);
		put_string(f, &ids, e->file, &fl);
		for (int k = 0; k < e->ninline; k++) {
			struct strbuf a = STRBUF_INIT;

			put_string(f, &ids, e->inl[k].func, &a);
			put_string(f, &ids, e->inl[k].file, &a);
			sb_release(&a);
		}
		fprintf(f, "a\t%" PRIx64 "\t%u\t%s\t%s\t%" PRIu32, e->addr,
			e->flags, sb_str(&fn), sb_str(&fl), e->line);
		for (int k = 0; k < e->ninline; k++) {
			put_string(f, &ids, e->inl[k].func, &fn);
			put_string(f, &ids, e->inl[k].file, &fl);
			fprintf(f, "\t%s\t%s\t%" PRIu32, sb_str(&fn),
				sb_str(&fl), e->inl[k].line);
		}
		fputc('\n', f);
	}
	hashmap_free(&ids.map);
	ok = !ferror(f);
	if (fclose(f) != 0)
		ok = false;
	if (!ok || rename(tmp.buf, c->path) < 0)
		unlink(tmp.buf);
	sb_release(&tmp);
	sb_release(&fn);
	sb_release(&fl);
}

void symcache_close(struct symcache *c)
{
	if (!c)
		return;
	if (c->dirty)
		save(c);
	hashmap_free(&c->map);
	arena_free(&c->arena);
	free(c->v);
	free(c->path);
	free(c->identity);
	free(c);
}
