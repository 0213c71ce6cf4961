/*
 * The symbolization pass and the pieces shared by backends.  The pass
 * walks the frame table, not the buckets, so an address that appears in a
 * thousand stacks is looked up once.
 */
#include "symbol.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "util.h"

void symbolizer_destroy(struct symbolizer *s)
{
	if (s)
		s->ops->destroy(s);
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

void symbolize_model(struct model *m, struct symbolizer *s,
		     const struct maps *maps)
{
	struct hashmap types = HASHMAP_INIT;
	const char *no_type = strtab_intern_str(&m->strings, "no typeinfo");
	const char *question = strtab_intern_str(&m->strings, "?");

	for (size_t i = 0; i < m->frames.n; i++) {
		struct frame *f = m->frames.v[i];
		struct sym_info info = { NULL, NULL, 0 };

		if (f->symbolized)
			continue;
		if (s)
			s->ops->code(s, maps, f->addr, &info);
		/*
		 * An empty name (a hit on the table's unnamed first range)
		 * reads as "?", as in the original's symbol cache.
		 */
		if (info.func && !*info.func)
			info.func = question;
		f->func = info.func;
		f->file = info.file && *info.file ? info.file : NULL;
		f->line = info.line;
		f->symbolized = true;
	}
	hashmap_init(&types, 64);
	for (size_t i = 0; i < m->buckets.n; i++) {
		struct bucket *b = m->buckets.v[i];

		if (!b->has_typeinfo || !b->typeinfo)
			b->typeinfo_sym = no_type;
		else
			b->typeinfo_sym = type_symbol(m, s, maps, b->typeinfo,
						      &types);
	}
	hashmap_free(&types);
}

/*
 * Delete, left to right and repeatedly until nothing changes, every
 * OPEN...CLOSE group that contains neither OPEN nor CLOSE, plus (for
 * argument lists) an optional whitespace run and "const" after it.
 */
static bool drop_groups(struct strbuf *sb, char open, char close,
			bool and_const)
{
	size_t r = 0, w = 0, n = sb->len;
	char *s = sb->buf;
	bool changed = false;

	while (r < n) {
		if (s[r] == open) {
			size_t k = r + 1;

			while (k < n && s[k] != open && s[k] != close)
				k++;
			if (k < n && s[k] == close) {
				k++;
				if (and_const) {
					size_t c = k;

					while (c < n && (s[c] == ' ' ||
							 s[c] == '\t'))
						c++;
					if (n - c >= 5 &&
					    !memcmp(s + c, "const", 5))
						k = c + 5;
				}
				r = k;
				changed = true;
				continue;
			}
		}
		s[w++] = s[r++];
	}
	sb->len = w;
	s[w] = '\0';
	return changed;
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
	while (out->len && drop_groups(out, '(', ')', true))
		;
	while (out->len && drop_groups(out, '<', '>', false))
		;
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
