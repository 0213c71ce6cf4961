/*
 * Symbol-map directory backend.  Reproduces the original's lookup exactly
 * (reference section c): section headers from "readelf -eW" turn a file
 * offset into a link-time address, and the "nm -n" listing becomes a
 * sorted range table searched for the largest start strictly below the
 * address.  Searching strictly below is also what return addresses need:
 * the call instruction lies before the address.
 *
 * Name shortening runs lazily, only on the procedures some frame hits, so
 * a 100 MB nm listing costs one read and one scan.
 */
#include "search.h"
#include "symmap.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "json.h"
#include "scan.h"
#include "util.h"

struct range {
	uint64_t start;
	const char *name;   /* raw, points into a kept file buffer */
	size_t len;
	const char *short_name; /* interned on first use */
	uint64_t seq;       /* insertion order, for stable dedup */
};

struct range_table {
	struct range *v;
	size_t n, alloc;
	bool sorted;
	uint64_t seq;
};

struct symmap_binary {
	char *name;
	struct elf_span *sections;
	size_t nsections, sections_alloc;
	struct range_table procs;
	struct range_table files;
	struct hashmap typeinfos; /* elf addr -> struct range * */
	struct range *typeinfo_store;
	size_t ntypeinfo, typeinfo_alloc;
	struct filebuf *bufs;     /* kept alive: ranges point into them */
	size_t nbufs;
	bool mangled;
};

struct symmap {
	struct symbolizer base;
	struct maps maps;
	struct strtab *strings;
	struct arena arena;
	struct strtab own_strings;
	struct symmap_binary **bins;
	size_t nbins;
	struct hashmap by_name; /* interned name -> binary */
	struct strbuf scratch;
};

struct symmap_binary *symmap_binary_new(const char *name)
{
	struct symmap_binary *b = xcalloc(1, sizeof(*b));

	b->name = xstrdup(name);
	b->procs.sorted = b->files.sorted = true;
	hashmap_init(&b->typeinfos, 16);
	return b;
}

void symmap_binary_free(struct symmap_binary *b)
{
	if (!b)
		return;
	for (size_t i = 0; i < b->nbufs; i++)
		file_release(&b->bufs[i]);
	FREE_ALL(b->bufs, b->sections, b->procs.v, b->files.v);
	hashmap_free(&b->typeinfos);
	free(b->typeinfo_store);
	free(b->name);
	free(b);
}

static struct filebuf *keep_file(struct symmap_binary *b, const char *path)
{
	struct filebuf fb;

	if (file_load(&fb, path) < 0)
		return NULL;
	b->bufs = xreallocarray(b->bufs, b->nbufs + 1, sizeof(*b->bufs));
	b->bufs[b->nbufs] = fb;
	return &b->bufs[b->nbufs++];
}

/*
 * The original's RangeAddressMapping: an entry whose start equals the
 * previous entry's is dropped; out-of-order input is sorted on first
 * lookup, the later of equal starts winning.
 */
static void range_append(struct range_table *t, uint64_t start,
			 const char *name, size_t len)
{
	if (t->n) {
		if (t->v[t->n - 1].start > start)
			t->sorted = false;
		else if (t->v[t->n - 1].start == start)
			return;
	}
	GROW(t->v, t->n + 1, t->alloc);
	t->v[t->n].start = start;
	t->v[t->n].name = name;
	t->v[t->n].len = len;
	t->v[t->n].short_name = NULL;
	t->v[t->n].seq = t->seq++;
	t->n++;
}

static int cmp_range(const void *a, const void *b)
{
	const struct range *x = a, *y = b;

	return CMP(x->start, y->start) ?: CMP(x->seq, y->seq);
}

static void range_sort(struct range_table *t)
{
	size_t i, out = 0;

	if (t->sorted)
		return;
	qsort(t->v, t->n, sizeof(*t->v), cmp_range);
	for (i = 0; i < t->n; i++) {
		if (out && t->v[out - 1].start == t->v[i].start)
			t->v[out - 1] = t->v[i];
		else
			t->v[out++] = t->v[i];
	}
	t->n = out;
	t->sorted = true;
}

/* The entry with the largest start < ADDR; wraps to the last like bisect. */
static struct range *range_find(struct range_table *t, uint64_t addr)
{
	size_t lo;

	if (!t->n)
		return NULL;
	range_sort(t);
	lo = PARTITION_POINT(t->n, i, t->v[i].start < addr);
	return &t->v[lo ? lo - 1 : t->n - 1];
}

static bool is_hexstr(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (hex_value(s[i]) < 0)
			return false;
	return n > 0;
}

int symmap_load_nm(struct symmap_binary *b, const char *path, bool mangled)
{
	struct filebuf *fb = keep_file(b, path);
	struct line_reader r;
	struct line l;
	uint64_t last_start = 0;
	const char *routine = "";
	size_t routine_len = 0;

	if (!fb)
		return -1;
	b->mangled = mangled;
	lines_init(&r, fb->data, fb->size);
	while (lines_next(&r, &l)) {
		const char *s = l.p, *name;
		size_t len = l.len, vlen, nlen;
		uint64_t value;
		char type;

		while (len && is_space(s[len - 1]))
			len--;
		if (!len)
			continue;
		/* "%08x T name" or "%016x T name"; blank value = undefined. */
		if (len > 8 && s[8] == ' ')
			vlen = 8;
		else if (len > 16 && s[16] == ' ')
			vlen = 16;
		else
			return error("%s:%lu: not an 'nm -n --format bsd' line",
				     path, l.no);
		if (s[0] == ' ')
			continue;
		if (len < vlen + 2 || !is_hexstr(s, vlen) ||
		    word_hex(s, vlen, &value, false) != NUM_OK)
			return error("%s:%lu: not an 'nm -n --format bsd' line",
				     path, l.no);
		type = s[vlen + 1];
		name = len > vlen + 3 ? s + vlen + 3 : s + len;
		nlen = (size_t)(s + len - name);

		if (!mangled && strchr("rRDUdV", type) && nlen >= 8 &&
		    !memcmp(name, "typeinfo", 8)) {
			GROW(b->typeinfo_store, b->ntypeinfo + 1,
			     b->typeinfo_alloc);
			b->typeinfo_store[b->ntypeinfo++] =
				(struct range){ value, name, nlen, NULL, 0 };
		}
		/*
		 * Several symbols at one address (aliases, zero-sized
		 * markers): keep the first, unless a t/T symbol follows,
		 * which is the function itself.
		 */
		if (value == last_start) {
			if (type == 't' || type == 'T') {
				routine = name;
				routine_len = nlen;
			}
			continue;
		}
		range_append(&b->procs, last_start, routine, routine_len);
		last_start = value;
		routine = name;
		routine_len = nlen;
	}
	range_append(&b->procs, last_start, routine, routine_len);
	/* The store is final now; index it (later duplicates win). */
	for (size_t i = 0; i < b->ntypeinfo; i++)
		hashmap_replace(&b->typeinfos,
				hash_u64(b->typeinfo_store[i].start), NULL,
				NULL, &b->typeinfo_store[i]);
	return 0;
}

/*
 * A row of readelf's "Section Headers:" table:
 *   [Nr] Name Type Address Off Size ES Flg Lk Inf Al
 * Name and Flg may be empty.  Only address, offset and size matter.
 */
static bool parse_section_row(const struct line *l, struct elf_span *out)
{
	struct cursor c = cursor_of(l);
	const char *w[12];
	size_t wl[12];
	int nw = 0, base;

	cursor_skip_space(&c);
	if (!cursor_eat(&c, "["))
		return false;
	cursor_skip_space(&c);
	if (c.p >= c.end || !is_digit(*c.p))
		return false;
	while (c.p < c.end && is_digit(*c.p))
		c.p++;
	if (!cursor_eat(&c, "]"))
		return false;
	while (nw < 12 && cursor_word(&c, &w[nw], &wl[nw]))
		nw++;
	/* With no name, the three words after the type are hex numbers. */
	if (nw >= 4 && is_hexstr(w[1], wl[1]) && is_hexstr(w[2], wl[2]) &&
	    is_hexstr(w[3], wl[3]))
		base = 1;
	else
		base = 2;
	if (nw < base + 3 || !is_hexstr(w[base], wl[base]) ||
	    !is_hexstr(w[base + 1], wl[base + 1]) ||
	    !is_hexstr(w[base + 2], wl[base + 2]))
		return false;
	if (word_hex(w[base], wl[base], &out->addr, false) != NUM_OK ||
	    word_hex(w[base + 1], wl[base + 1], &out->offset, false) != NUM_OK ||
	    word_hex(w[base + 2], wl[base + 2], &out->size, false) != NUM_OK)
		return false;
	return true;
}

int symmap_load_readelf(struct symmap_binary *b, const char *path)
{
	struct filebuf fb;
	struct line_reader r;
	struct line l;
	bool in_table = false, found = false;

	if (file_load(&fb, path) < 0)
		return -1;
	lines_init(&r, fb.data, fb.size);
	while (lines_next(&r, &l)) {
		struct elf_span span;
		size_t len = l.len;

		while (len && is_space(l.p[len - 1]))
			len--;
		if (!in_table) {
			if (len == 16 && !memcmp(l.p, "Section Headers:", 16))
				in_table = found = true;
			continue;
		}
		if ((len == 13 && !memcmp(l.p, "Key to Flags:", 13)) ||
		    (len == 16 && !memcmp(l.p, "Program Headers:", 16)))
			break;
		if (parse_section_row(&l, &span)) {
			GROW(b->sections, b->nsections + 1, b->sections_alloc);
			b->sections[b->nsections++] = span;
		}
	}
	file_release(&fb);
	if (!found)
		return error("%s: no 'Section Headers:' table (not 'readelf "
			     "-eW' output?)", path);
	return 0;
}

int symmap_load_decodedline(struct symmap_binary *b, const char *path)
{
	struct filebuf *fb = keep_file(b, path);
	struct line_reader r;
	struct line l;

	if (!fb)
		return -1;
	lines_init(&r, fb->data, fb->size);
	while (lines_next(&r, &l)) {
		struct cursor c = cursor_of(&l);
		const char *w, *f;
		size_t wl, fl;
		uint64_t start;

		if (!cursor_word(&c, &w, &wl))
			continue;
		if (word_hex(w, wl, &start, false) != NUM_OK ||
		    !cursor_word(&c, &f, &fl))
			return error("%s:%lu: expected 'ADDRESS FILE'", path,
				     l.no);
		range_append(&b->files, start, f, fl);
	}
	return 0;
}

bool symmap_binary_elf_address(struct symmap_binary *b, uint64_t addr,
			       const struct vma *vma, uint64_t *elf_addr)
{
	/* The original treats link-time address 0 as "not found". */
	return elf_address(addr, vma, b->sections, b->nsections, elf_addr) &&
	       *elf_addr != 0;
}

const char *symmap_binary_function(struct symmap_binary *b, uint64_t elf_addr,
				   struct strtab *strings)
{
	struct range *r = range_find(&b->procs, elf_addr);

	if (!r)
		return NULL;
	if (!r->short_name) {
		struct strbuf sb = STRBUF_INIT;
		const char *s = r->name;
		size_t len = r->len;

		if (!b->mangled)
			s = symbol_short_name(r->name, r->len, &sb),
			len = sb.len;
		/* The original stripped surrounding whitespace. */
		while (len && is_space(*s))
			s++, len--;
		while (len && is_space(s[len - 1]))
			len--;
		r->short_name = strtab_intern(strings, s, len);
		sb_release(&sb);
	}
	return r->short_name;
}

const char *symmap_binary_sourcefile(struct symmap_binary *b, uint64_t elf_addr,
				     struct strtab *strings)
{
	struct range *r = range_find(&b->files, elf_addr);

	if (!r)
		return NULL;
	if (!r->short_name)
		r->short_name = strtab_intern(strings, r->name, r->len);
	return r->short_name;
}

const char *symmap_binary_typeinfo(struct symmap_binary *b, uint64_t elf_addr,
				   struct strtab *strings)
{
	struct range *r = hashmap_get(&b->typeinfos, hash_u64(elf_addr), NULL,
				      NULL);

	if (!r)
		return NULL;
	if (!r->short_name)
		r->short_name = strtab_intern(strings, r->name, r->len);
	return r->short_name;
}

/* ---- the backend ---- */

static struct symmap_binary *binary_for(struct symmap *sm,
					const struct vma *v)
{
	return v ? hashmap_get(&sm->by_name, hash_u64((uintptr_t)v->name),
			       NULL, NULL)
		 : NULL;
}

static void symmap_code(struct symbolizer *s, const struct maps *maps UNUSED,
			uint64_t addr, struct sym_info *out)
{
	struct symmap *sm = (struct symmap *)s;
	const struct vma *v = maps_find(&sm->maps, addr);
	struct symmap_binary *b;
	uint64_t elf;

	/* Functions live in executable mappings only. */
	if (!v || !vma_executable(v) || !(b = binary_for(sm, v))) {
		if (s->opts->verbose >= 2)
			note("0x%016" PRIx64 " stays unresolved: %s%s", addr,
			     !v ? "in no mapping of the symbol map's maps"
			     : !vma_executable(v)
				     ? "in a non-executable mapping "
				     : "the symbol map has no symbols of ",
			     v && *v->name ? v->name : v ? "[anonymous]" : "");
		return;
	}
	if (!symmap_binary_elf_address(b, addr, v, &elf)) {
		if (s->opts->verbose >= 2)
			note("0x%016" PRIx64 " stays unresolved: outside the "
			     "sections of %s", addr, v->name);
		return;
	}
	out->func = symmap_binary_function(b, elf, s->strings);
	out->file = symmap_binary_sourcefile(b, elf, s->strings);
}

static const char *symmap_data(struct symbolizer *s,
			       const struct maps *maps UNUSED, uint64_t addr)
{
	struct symmap *sm = (struct symmap *)s;
	const struct vma *v = maps_find(&sm->maps, addr);
	struct symmap_binary *b;
	uint64_t elf;

	/* Type objects live in read-only, non-executable mappings. */
	if (!v || vma_writable(v) || vma_executable(v) ||
	    !(b = binary_for(sm, v)))
		return NULL;
	if (!symmap_binary_elf_address(b, addr, v, &elf))
		return NULL;
	return symmap_binary_typeinfo(b, elf, s->strings);
}

static void symmap_destroy(struct symbolizer *s)
{
	struct symmap *sm = (struct symmap *)s;

	for (size_t i = 0; i < sm->nbins; i++)
		symmap_binary_free(sm->bins[i]);
	free(sm->bins);
	hashmap_free(&sm->by_name);
	maps_free(&sm->maps);
	strtab_free(&sm->own_strings);
	arena_free(&sm->arena);
	sb_release(&sm->scratch);
	free(sm);
}

static const struct symbolizer_ops symmap_ops = {
	.name = "symmap",
	.code = symmap_code,
	.data = symmap_data,
	.destroy = symmap_destroy,
};

bool symmap_present(const char *dir)
{
	struct strbuf p = STRBUF_INIT;
	struct stat st;
	bool ok;

	sb_addf(&p, "%s/files.json", dir);
	ok = stat(p.buf, &st) == 0;
	sb_release(&p);
	return ok;
}

static char *join(const char *dir, const char *file)
{
	struct strbuf sb = STRBUF_INIT;

	sb_addf(&sb, "%s/%s", dir, file);
	return sb_detach(&sb);
}

/* Load DIR/FILE with LOAD; -1 (after an error message) on failure. */
static int load_listed(struct symmap_binary *b, const char *dir,
		       const char *file,
		       int (*load)(struct symmap_binary *, const char *))
{
	char *path;
	int rc;

	/* The data files live in the symbol map directory itself. */
	if (!*file || strchr(file, '/') || !strcmp(file, "..") ||
	    !strcmp(file, "."))
		return error("%s: files.json names '%s', which is not a file "
			     "in that directory", dir, file);
	path = join(dir, file);
	rc = load(b, path);

	free(path);
	return rc;
}

static int load_nm_unmangled(struct symmap_binary *b, const char *path)
{
	return symmap_load_nm(b, path, false);
}

static int load_nm_mangled(struct symmap_binary *b, const char *path)
{
	return symmap_load_nm(b, path, true);
}

/* Read one files.json entry's data files; false (after a warning) if bad. */
static bool load_binary(struct symmap_binary *b, const char *dir,
			const char *files_json, const struct json_value *entry)
{
	const struct json_value *nm = json_get(entry, "nm");
	const char *re = json_get_string(json_get(entry, "readelf-e"), "file");
	const char *dl = json_get_string(
		json_get(entry, "readelf-debug-decodedline-file"), "file");

	if (nm) {
		const char *format = json_get_string(nm, "format");
		const struct json_value *mangled = json_get(nm, "mangled");
		const char *f = json_get_string(nm, "file");

		if (!f || (format && strcmp(format, "bsd"))) {
			warning("%s:%lu: nm entry for '%s' needs \"file\" and "
				"\"format\": \"bsd\"; binary left "
				"unsymbolized", files_json, nm->line, b->name);
			return false;
		}
		if (load_listed(b, dir, f,
				mangled && mangled->type == JSON_TRUE
					? load_nm_mangled
					: load_nm_unmangled) < 0)
			return false;
	}
	if (re && load_listed(b, dir, re, symmap_load_readelf) < 0)
		return false;
	if (dl && load_listed(b, dir, dl, symmap_load_decodedline) < 0)
		return false;
	return true;
}

struct symbolizer *symmap_open(const char *dir, struct strtab *strings,
			       const struct sym_options *opts)
{
	struct symmap *sm = xcalloc(1, sizeof(*sm));
	char *maps_path = join(dir, "maps");
	char *files_path = join(dir, "files.json");
	struct json_value *files = NULL;
	struct filebuf fb;

	sm->base.ops = &symmap_ops;
	sm->base.strings = strings;
	sm->base.opts = opts;
	sm->strings = strings;
	maps_init(&sm->maps);
	strtab_init(&sm->own_strings, &sm->arena);
	hashmap_init(&sm->by_name, 64);

	/* VMA names interned in the caller's table: pointer equality. */
	if (maps_load(&sm->maps, maps_path, strings) < 0)
		goto fail;
	if (file_load(&fb, files_path) < 0)
		goto fail;
	files = json_parse(fb.data, fb.size, files_path);
	file_release(&fb);
	if (!files)
		goto fail;
	if (files->type != JSON_OBJECT) {
		error("%s:%lu:%lu: expected an object of binaries",
		      files_path, files->line, files->col);
		goto fail;
	}
	for (size_t i = 0; i < files->n; i++) {
		const char *name = strtab_intern_str(strings, files->keys[i]);
		struct symmap_binary *b;
		bool mapped = false;

		/* Only binaries the process actually mapped matter. */
		for (size_t k = 0; k < sm->maps.n && !mapped; k++)
			mapped = sm->maps.v[k].name == name;
		if (!mapped || hashmap_get(&sm->by_name,
					   hash_u64((uintptr_t)name), NULL,
					   NULL))
			continue;
		b = symmap_binary_new(name);
		if (!load_binary(b, dir, files_path, files->items[i])) {
			warning("%s: symbols of '%s' not loaded; its frames "
				"stay unsymbolized", dir, name);
			symmap_binary_free(b);
			continue;
		}
		sm->bins = xreallocarray(sm->bins, sm->nbins + 1,
					 sizeof(*sm->bins));
		sm->bins[sm->nbins++] = b;
		hashmap_put(&sm->by_name, hash_u64((uintptr_t)name), b);
		if (opts->verbose)
			note("%s: symbols from the symbol map %s (nm and "
			     "readelf files listed in files.json)", name, dir);
	}
	json_free(files);
	free(maps_path);
	free(files_path);
	return &sm->base;
fail:
	json_free(files);
	free(maps_path);
	free(files_path);
	symmap_destroy(&sm->base);
	return NULL;
}
