/*
 * The symbol cache is a text file per binary identity:
 *
 *   dmprof-symbol-cache 1
 *   identity IDENTITY
 *   ADDR<TAB>FLAGS<TAB>FUNC<TAB>FILE<TAB>LINE[<TAB>FUNC<TAB>FILE<TAB>LINE...]
 *
 * one line per address, inlined functions after the function itself.  A
 * file whose identity line differs (a hash collision, a different binary)
 * is ignored; a broken one is ignored and rewritten.  Files are replaced
 * atomically, so a concurrent reader never sees half of one.
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

#define MAGIC "dmprof-symbol-cache 1"

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

static const char *str_or_null(struct symcache *c, const char *s, size_t n)
{
	return n ? strtab_intern(c->strings, s, n) : NULL;
}

static void add(struct symcache *c, struct symcache_entry *e)
{
	GROW(c->v, c->n + 1, c->alloc);
	c->v[c->n++] = e;
	hashmap_replace(&c->map, hash_u64(e->addr), NULL, NULL, e);
}

static void load(struct symcache *c)
{
	struct filebuf fb;
	struct line_reader r;
	struct line l;
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
		const char *f[3 + 3 * 64];
		size_t len[3 + 3 * 64];
		struct symcache_entry *e;
		uint64_t addr, flags, line;
		int n = fields(&l, f, len, (int)ARRAY_SIZE(f));

		if (!l.newline || n < 5 || (n - 5) % 3 ||
		    word_hex(f[0], len[0], &addr, false) != NUM_OK ||
		    word_u64(f[1], len[1], &flags) != NUM_OK ||
		    word_u64(f[4], len[4], &line) != NUM_OK ||
		    line > UINT32_MAX)
			break; /* the rest is damaged: drop it */
		e = arena_alloc(&c->arena, sizeof(*e));
		e->addr = addr;
		e->flags = (unsigned)flags;
		e->func = str_or_null(c, f[2], len[2]);
		e->file = str_or_null(c, f[3], len[3]);
		e->line = (uint32_t)line;
		e->ninline = (uint16_t)((n - 5) / 3);
		e->inl = e->ninline ? arena_alloc(&c->arena, e->ninline *
							      sizeof(*e->inl))
				    : NULL;
		for (int k = 0; k < e->ninline; k++) {
			uint64_t il;

			if (word_u64(f[7 + 3 * k], len[7 + 3 * k], &il) !=
				    NUM_OK ||
			    il > UINT32_MAX)
				il = 0;
			e->inl[k].func = str_or_null(c, f[5 + 3 * k],
						     len[5 + 3 * k]);
			e->inl[k].file = str_or_null(c, f[6 + 3 * k],
						     len[6 + 3 * k]);
			e->inl[k].line = (uint32_t)il;
		}
		add(c, e);
	}
	file_release(&fb);
}

struct symcache *symcache_open(const char *identity, struct strtab *strings)
{
	struct symcache *c;
	struct strbuf sb = STRBUF_INIT;
	const char *d;

	if (!(d = symcache_dir()))
		return NULL;
	c = xcalloc(1, sizeof(*c));
	sb_addf(&sb, "%s/%016" PRIx64 ".txt", d,
		hash_bytes(identity, strlen(identity)));
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

static void save(struct symcache *c)
{
	struct strbuf tmp = STRBUF_INIT;
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
	fprintf(f, "%s\nidentity %s\n", MAGIC, c->identity);
	for (size_t i = 0; i < c->n; i++) {
		const struct symcache_entry *e = c->v[i];

		/* Replaced entries stay in v; write the live one only. */
		if (hashmap_get(&c->map, hash_u64(e->addr), NULL, NULL) != e)
			continue;
		fprintf(f, "%" PRIx64 "\t%u\t", e->addr, e->flags);
		put_field(f, e->func);
		fputc('\t', f);
		put_field(f, e->file);
		fprintf(f, "\t%" PRIu32, e->line);
		for (int k = 0; k < e->ninline; k++) {
			fputc('\t', f);
			put_field(f, e->inl[k].func);
			fputc('\t', f);
			put_field(f, e->inl[k].file);
			fprintf(f, "\t%" PRIu32, e->inl[k].line);
		}
		fputc('\n', f);
	}
	ok = !ferror(f);
	if (fclose(f) != 0)
		ok = false;
	if (!ok || rename(tmp.buf, c->path) < 0)
		unlink(tmp.buf);
	sb_release(&tmp);
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
