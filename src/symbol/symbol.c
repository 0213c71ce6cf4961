/*
 * The symbolization pass and the pieces shared by backends.  The pass
 * walks the frame table, not the buckets, so an address that appears in a
 * thousand stacks is looked up once.
 */
#include "symbol.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "threads.h"
#include "util.h"

int sym_options_alternative_dirs(struct sym_options *o, const char *spec)
{
	char *copy = xstrdup(spec), *save = NULL, *item;
	int rc = 0;

	for (item = strtok_r(copy, ":", &save); item;
	     item = strtok_r(NULL, ":", &save)) {
		char *at = strchr(item, '@');
		struct alt_dir *a;

		if (!at || at == item || !at[1]) {
			rc = error("--alternative-dirs: expected TARGET@HOST, "
				   "not '%s'", item);
			break;
		}
		o->alts = xreallocarray(o->alts, o->nalts + 1,
					sizeof(*o->alts));
		a = &o->alts[o->nalts++];
		a->target = xstrndup(item, (size_t)(at - item));
		a->host = xstrdup(at + 1);
		/* "/a/" and "/a" name the same directory. */
		while (strlen(a->target) > 1 && ends_with(a->target, "/"))
			a->target[strlen(a->target) - 1] = '\0';
		while (strlen(a->host) > 1 && ends_with(a->host, "/"))
			a->host[strlen(a->host) - 1] = '\0';
	}
	free(copy);
	return rc;
}

void sym_options_release(struct sym_options *o)
{
	for (size_t i = 0; i < o->nalts; i++) {
		free(o->alts[i].target);
		free(o->alts[i].host);
	}
	free(o->alts);
	o->alts = NULL;
	o->nalts = 0;
}

char *sym_host_path(const struct sym_options *o, const char *path)
{
	struct strbuf sb = STRBUF_INIT;
	const struct alt_dir *best = NULL;
	size_t best_len = 0;

	for (size_t i = 0; i < o->nalts; i++) {
		const struct alt_dir *a = &o->alts[i];
		size_t n = strlen(a->target);

		if (n > best_len && !strncmp(path, a->target, n) &&
		    (path[n] == '/' || path[n] == '\0' ||
		     !strcmp(a->target, "/"))) {
			best = a;
			best_len = n;
		}
	}
	if (o->symfs)
		sb_addstr(&sb, o->symfs);
	if (best) {
		sb_addstr(&sb, best->host);
		/* A target of "/" keeps the path's own first slash. */
		sb_addstr(&sb, path + (strcmp(best->target, "/") ? best_len : 0));
	} else {
		sb_addstr(&sb, path);
	}
	return sb_detach(&sb);
}

void symbolizer_destroy(struct symbolizer *s)
{
	if (s)
		s->ops->destroy(s);
}

void symbolizer_trim(struct symbolizer *s)
{
	if (s && s->ops->trim)
		s->ops->trim(s);
}

static const char *type_symbol(struct model *m, struct symbolizer *s,
			       const struct maps *maps, uint64_t addr,
			       struct hashmap *cache)
{
	const char **hit = hashmap_get(cache, hash_u64(addr), NULL, NULL);
	const char *name = NULL, **slot;
	char hex[32];

	if (hit)
		return *hit;
	if (s && s->ops->data)
		name = s->ops->data(s, maps, addr);
	if (name && starts_with(name, "typeinfo for "))
		name = strtab_intern_str(&m->strings, name + 13);
	if (!name) {
		snprintf(hex, sizeof(hex), "0x%016" PRIx64, addr);
		name = strtab_intern_str(&m->strings, hex);
	} else if (!*name) {
		name = strtab_intern_str(&m->strings, "no typeinfo");
	}
	slot = arena_alloc(&m->arena, sizeof(*slot));
	*slot = name;
	hashmap_put(cache, hash_u64(addr), slot);
	return name;
}

/*
 * The executable of a process laid out as MAPS: its first file mapping
 * (the kernel maps the executable below the libraries it loads, PIE or
 * not), or 0.
 */
static uint32_t main_binary(struct model *m, const struct maps *maps)
{
	for (size_t i = 0; i < maps->n; i++)
		if (maps->v[i].name[0] == '/')
			return model_binary(m, maps->v[i].name);
	return 0;
}

/* The binary that the frame at ADDR is in (0: none), with the last VMA
 * found remembered in LAST: frames come in address order, mostly. */
struct last_binary {
	const struct vma *vma;
	uint32_t bin;
};

static uint32_t frame_binary(struct model *m, const struct maps *maps,
			     uint64_t addr, struct last_binary *last)
{
	const struct vma *v = last->vma;

	if (!v || addr < v->start || addr >= v->end) {
		v = maps_find(maps, addr);
		if (!v || !*v->name)
			return 0;
		last->vma = v;
		last->bin = model_binary(m, v->name);
	}
	return last->bin;
}

void symbolize_model(struct model *m, struct symbolizer *s,
		     const struct maps *maps)
{
	symbolize_model_telling(m, s, maps, NULL);
}

/* (Said every this many frames: a store, and a broadcast if waited on.) */
#define TELL_EVERY 512

/* F named INFO by the symbolizer (QUESTION: "?", interned). */
static void frame_named(struct frame *f, struct sym_info info,
			const char *question)
{
	/*
	 * An empty name (a hit on the table's unnamed first range) reads as
	 * "?", as in the original's symbol cache.
	 */
	if (info.func && !*info.func)
		info.func = question;
	f->func = info.func;
	f->file = info.file && *info.file ? info.file : NULL;
	f->line = info.line;
	f->ninline = info.ninline;
	f->inl = info.inl;
	f->func_len = f->func ? (uint32_t)strlen(f->func) : 0;
	for (uint16_t k = 0; k < f->ninline; k++) {
		/* (The chain is the symbolizer's; lengths are ours.) */
		struct inline_frame *in = (struct inline_frame *)&f->inl[k];

		in->func_len = in->func ? (uint32_t)strlen(in->func) : 0;
	}
}

/* The frames of a batch named at once (code_batch): the frame of each
 * address, by its index in the batch. */
struct batch_frames {
	struct frame *const *v;
	const uint32_t *at;
	const char *question;
};

static void take_named(void *arg, size_t i, const struct sym_info *info)
{
	const struct batch_frames *bf = arg;

	frame_named(bf->v[bf->at[i]], *info, bf->question);
}

void symbolize_model_telling(struct model *m, struct symbolizer *s,
			     const struct maps *maps, struct progress *done)
{
	struct hashmap types = HASHMAP_INIT;
	const char *no_type = strtab_intern_str(&m->strings, "no typeinfo");
	const char *question = strtab_intern_str(&m->strings, "?");

	uint64_t *addrs = NULL;
	uint32_t *at = NULL;
	size_t naddrs = 0;
	struct last_binary last = { NULL, 0 };
	bool batched = false;

	/* The backend may batch: it is told what is coming, in order. */
	if (s && s->ops->prepare) {
		addrs = xcalloc(m->frames.n - m->frames_done + 1,
				sizeof(*addrs));
		if (s->ops->code_batch)
			at = xcalloc(m->frames.n - m->frames_done + 1,
				     sizeof(*at));
		for (size_t i = m->frames_done; i < m->frames.n; i++) {
			/* (Each frame a miss, fetched a few ahead.) */
			if (i + 8 < m->frames.n)
				prefetch(m->frames.v[i + 8]);
			if (m->frames.v[i]->symbolized)
				continue;
			if (at)
				at[naddrs] = (uint32_t)i;
			addrs[naddrs++] = m->frames.v[i]->addr;
		}
		s->ops->prepare(s, maps, addrs, naddrs);
		/* (All at once, if the backend can do better so: the frames
		 * named in place, not in a copy of a million answers.) */
		if (at && naddrs) {
			struct batch_frames bf = { m->frames.v, at, question };

			batched = s->ops->code_batch(s, maps, take_named, &bf);
		}
	}
	if (maps && !m->main_bin)
		m->main_bin = main_binary(m, maps);
	if (done)
		progress_set(done, m->frames_done + 1);
	/* (Frames and buckets are only ever added: start where we were.) */
	for (size_t i = m->frames_done; i < m->frames.n; i++) {
		struct frame *f = m->frames.v[i];
		struct sym_info info = { NULL, NULL, 0, 0, NULL };

		if (done && i % TELL_EVERY == 0)
			progress_set(done, i + 1);
		if (maps && !f->bin)
			f->bin = frame_binary(m, maps, f->addr, &last);
		if (f->symbolized) {
			/* (Named by the profile: only --no-inline applies.) */
			if (s && s->opts && s->opts->no_inline)
				f->ninline = 0;
			continue;
		}
		/* (Named already, in place, when batched.) */
		if (!batched) {
			if (s)
				s->ops->code(s, maps, f->addr, &info);
			frame_named(f, info, question);
		}
		f->symbolized = true;
	}
	m->frames_done = m->frames.n;
	if (done)
		progress_set(done, m->frames.n + 1);
	if (s && s->ops->prepare)
		s->ops->prepare(s, maps, NULL, 0);
	FREE_ALL(addrs, at);
	hashmap_init(&types, 64);
	/* (A bucket each, a load each: not where none has a type, as in a
	 * heap profile of a million stacks.) */
	for (size_t i = m->typed ? m->buckets_done : m->buckets.n;
	     i < m->buckets.n; i++) {
		struct bucket *b = m->buckets.v[i];

		/* (None recorded, or done in an earlier pass.) */
		if (!b->type || b->type->sym)
			continue;
		if (!b->type->has_typeinfo || !b->type->typeinfo)
			b->type->sym = no_type;
		else
			b->type->sym = type_symbol(m, s, maps,
						   b->type->typeinfo, &types);
	}
	m->buckets_done = m->buckets.n;
	hashmap_free(&types);
}

/*
 * The original deleted, left to right and repeatedly until nothing
 * changed, every OPEN...CLOSE group holding neither OPEN nor CLOSE (plus,
 * for argument lists, an optional whitespace run and "const" after it).
 * That removes exactly the balanced groups, innermost first; doing it in
 * one pass with a stack of open positions gives the same text in linear
 * time (repeated passes were quadratic on hostile nesting).
 */
static void drop_groups(struct strbuf *sb, char open, char close,
			bool and_const)
{
	size_t *opens = NULL, nopen = 0, alloc = 0;
	size_t r = 0, w = 0, n = sb->len;
	char *s = sb->buf;

	while (r < n) {
		char c = s[r++];

		if (c == open) {
			GROW(opens, nopen + 1, alloc);
			opens[nopen++] = w;
			s[w++] = c;
			continue;
		}
		if (c == close && nopen) {
			w = opens[--nopen];
			if (and_const) {
				size_t k = r;

				while (k < n && (s[k] == ' ' || s[k] == '\t' ||
						 s[k] == '\n' || s[k] == '\r' ||
						 s[k] == '\f' || s[k] == '\v'))
					k++;
				if (n - k >= 5 && !memcmp(s + k, "const", 5))
					r = k + 5;
			}
			continue;
		}
		s[w++] = c;
	}
	sb->len = w;
	s[w] = '\0';
	free(opens);
}

static bool is_word(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_';
}

static bool is_ws(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' ||
	       c == '\v';
}

const char *symbol_short_name(const char *name, size_t len,
			      struct strbuf *out)
{
	size_t i, cut = 0;
	bool found = false;

	sb_reset(out);
	sb_add(out, name, len);
	drop_groups(out, '(', ')', true);
	drop_groups(out, '<', '>', false);
	/*
	 * "^.*\s+(\w+::)" -> "\1": drop everything through the last
	 * whitespace that is followed by "word::".
	 */
	for (i = 0; i < out->len; i++) {
		size_t k = i + 1;

		if (!is_ws(out->buf[i]))
			continue;
		while (k < out->len && is_word(out->buf[k]))
			k++;
		if (k > i + 1 && k + 1 < out->len && out->buf[k] == ':' &&
		    out->buf[k + 1] == ':') {
			cut = i + 1;
			found = true;
		}
	}
	if (found) {
		memmove(out->buf, out->buf + cut, out->len - cut);
		out->len -= cut;
		out->buf[out->len] = '\0';
	}
	return sb_str(out);
}

bool elf_address(uint64_t addr, const struct vma *vma,
		 const struct elf_span *spans, size_t n, uint64_t *out)
{
	uint64_t off;
	bool found = false;

	if (addr < vma->start || addr >= vma->end)
		return false;
	off = addr - vma->start + vma->offset;
	for (size_t i = 0; i < n; i++) {
		if (off >= spans[i].offset &&
		    off - spans[i].offset < spans[i].size) {
			*out = spans[i].addr + (off - spans[i].offset);
			found = true;
		}
	}
	return found;
}
