/*
 * pprof's profile.proto, as Go's runtime/pprof, Google's tcmalloc,
 * jeprof --proto, pprof -proto and /debug/pprof/heap endpoints write it
 * (reference other-profiles.md §3).  The decoder is written here, not
 * generated: it reads the few fields dmprof needs, accepts packed and
 * unpacked repeated fields alike, skips the rest by wire type, and checks
 * every length and index against the buffer, which a generated decoder
 * would also do but with an allocation per message.
 *
 * A profile is one snapshot: each sample a stack line whose bucket is its
 * stack.  Its values are the sample types the user picks (in-use bytes by
 * default), already unsampled by the producer; a location's lines name
 * its frames (inlined ones first) when the producer symbolized it,
 * otherwise its address is symbolized here through the profile's
 * mappings.  time_nanos is the snapshot's time.
 */
#include "pbread.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <libdeflate.h>

#include "hashmap.h"
#include "reader.h"
#include "util.h"

/* A decompressed profile may be this big (a zip bomb is not). */
#define MAX_PROFILE (4ULL << 30)

bool pb_claims(const struct filebuf *fb)
{
	const unsigned char *p = (const unsigned char *)fb->data;

	if (fb->size >= 2 && p[0] == 0x1f && p[1] == 0x8b)
		return true;
	/*
	 * Uncompressed: field 1 (sample_type) or 11 (period_type), both
	 * length-delimited, whose first field is again a varint 1 (the
	 * type's string index): 0a LEN 08 or 5a LEN 08.
	 */
	return fb->size >= 4 && (p[0] == 0x0a || p[0] == 0x5a) &&
	       p[1] < 0x80 && p[2] == 0x08;
}

/*
 * gzip (RFC 1952), inflated by libdeflate a whole member at a time.  It
 * says "bad data" of every fault, so the header is read here first, and
 * a member that does not inflate is looked at again to say why.
 */
static const char gz_short[] = "the gzip data ends early (file cut short?)";

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

/* The length of the member header at IN[0..N), or 0 with WHY set;
 * LATER if a member came before. */
static size_t gz_header(const unsigned char *in, size_t n, bool later,
			const char **why)
{
	enum { FHCRC = 2, FEXTRA = 4, FNAME = 8, FCOMMENT = 16 };
	const unsigned char *nul;
	size_t k = 10;

	if (n && (in[0] != 0x1f || (n > 1 && in[1] != 0x8b))) {
		*why = later ? "garbage after the gzip data" : "not gzip data";
		return 0;
	}
	/* (Said as soon as the byte is there, as zlib does.) */
	if (n > 2 && in[2] != 8) {
		*why = "unknown compression method";
		return 0;
	}
	if (n > 3 && (in[3] & 0xe0)) {
		*why = "unknown header flags set";
		return 0;
	}
	if (n < k) {
		*why = gz_short;
		return 0;
	}
	if (in[3] & FEXTRA)
		k = n - k < 2 ? n + 1
			      : k + 2 + (in[k] | (size_t)in[k + 1] << 8);
	for (int f = FNAME; f <= FCOMMENT; f <<= 1)
		if (in[3] & f) {
			nul = k < n ? memchr(in + k, 0, n - k) : NULL;
			k = nul ? (size_t)(nul - in) + 1 : n + 1;
		}
	if (in[3] & FHCRC)
		k += 2;
	if (k > n) {
		*why = gz_short;
		return 0;
	}
	return k;
}

/*
 * Why the member at IN[0..N), its header HDR bytes, does not inflate
 * into ROOM bytes.  If its deflate data ends whole, the trailer is bad
 * or missing.  If not, the data is cut short or corrupt, which libdeflate
 * does not tell apart: inflated again without its last kilobyte, data
 * cut short stops sooner (it stopped for want of input, and a kilobyte
 * of deflate makes some output), corrupt data at the same byte
 * (where it is corrupt); the two outputs, written over zeros, show
 * which.  (Corruption in the last kilobyte, or in a member of less,
 * reads as cut short.)
 */
static const char *gz_fault(struct libdeflate_decompressor *d,
			    const unsigned char *in, size_t n, size_t hdr,
			    size_t room)
{
	const unsigned char *body = in + hdr;
	size_t bn = n - hdr, used, got;
	unsigned char *a = xcalloc(room + 1, 1), *b;
	const char *why = gz_short;

	if (libdeflate_deflate_decompress_ex(d, body, bn, a, room, &used,
					     &got) == LIBDEFLATE_SUCCESS) {
		if (bn - used < 8)
			why = gz_short;
		else if (le32(body + used) != libdeflate_crc32(0, a, got))
			why = "corrupt gzip data (its CRC-32 does not match)";
		else
			why = "corrupt gzip data (its length does not match)";
	} else if (bn > 1024) {
		b = xcalloc(room + 1, 1);
		libdeflate_deflate_decompress_ex(d, body, bn - 1024, b, room,
						 NULL, NULL);
		if (!memcmp(a, b, room))
			why = "corrupt gzip data";
		free(b);
	}
	free(a);
	return why;
}

/*
 * Room for IN[0..N) inflated, to begin with: what its trailer says, the
 * last member's size mod 2^32, believed up to 64 times N (dmprof's own
 * profiles shrink 1.6 to 2 times; deflate can 1032, but a few bytes
 * must not cost gigabytes) and MAX.  Pages the inflater does not write
 * cost nothing.  A first member of several, or more than 4 GiB, runs
 * out of room, and is inflated again into twice as much.
 */
static size_t gz_room(const unsigned char *in, size_t n, size_t max)
{
	size_t room = n >= 4 ? le32(in + n - 4) : 0;

	if (room / 64 > n)
		room = n * 64;
	return room < max ? room : max;
}

int pb_gunzip(const unsigned char *in, size_t n, size_t max,
	      unsigned char **out, size_t *outn, const char *path,
	      struct fault *f)
{
	const char *why = NULL;
	struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
	size_t pos = 0, len = 0, cap = gz_room(in, n, max);
	unsigned char *buf = xmalloc(cap + 1);

	if (!d)
		die("out of memory (a gzip decompressor)");
	do {
		size_t hdr = gz_header(in + pos, n - pos, pos > 0, &why);
		size_t used, got;
		enum libdeflate_result rc;

		if (!hdr)
			goto fail;
		rc = libdeflate_gzip_decompress_ex(d, in + pos, n - pos,
						   buf + len, cap - len, &used,
						   &got);
		if (rc == LIBDEFLATE_INSUFFICIENT_SPACE) {
			if (cap >= max) {
				why = "it inflates to more than 4 GiB";
				goto fail;
			}
			cap = max - cap > cap + 65536 ? cap * 2 + 65536 : max;
			buf = xrealloc(buf, cap + 1);
			continue;
		}
		if (rc != LIBDEFLATE_SUCCESS) {
			/* (What was inflated is of no use now.) */
			free(buf);
			buf = NULL;
			why = gz_fault(d, in + pos, n - pos, hdr, cap - len);
			goto fail;
		}
		pos += used;
		len += got;
	} while (pos < n);
	libdeflate_free_decompressor(d);
	*out = buf;
	*outn = len;
	return 0;
fail:
	/* (Where: the member that does not inflate, by its offset.) */
	fault_set(f, &(struct where){ .path = path, .has_addr = true,
				      .addr = pos },
		  "%s", why);
	libdeflate_free_decompressor(d);
	free(buf);
	return -1;
}

/* ---- wire format ---- */

struct pb {
	const unsigned char *p, *end;
};

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

static bool pb_varint(struct pb *b, uint64_t *v)
{
	uint64_t x = 0;

	for (int shift = 0; shift < 70; shift += 7) {
		if (b->p >= b->end)
			return false;
		x |= (uint64_t)(*b->p & 0x7f) << shift;
		if (!(*b->p++ & 0x80)) {
			*v = x;
			return true;
		}
	}
	return false; /* more than 10 bytes */
}

/* The next field: its number, wire type, and value or bytes. */
struct field {
	uint64_t num;
	int wt;
	uint64_t v;        /* WT_VARINT, WT_I64, WT_I32 */
	struct pb sub;     /* WT_LEN */
};

/* 1 a field, 0 at the end, -1 malformed. */
static int pb_next(struct pb *b, struct field *f)
{
	uint64_t key, len;

	if (b->p >= b->end)
		return 0;
	if (!pb_varint(b, &key))
		return -1;
	f->num = key >> 3;
	f->wt = (int)(key & 7);
	switch (f->wt) {
	case WT_VARINT:
		return pb_varint(b, &f->v) ? 1 : -1;
	case WT_I64:
	case WT_I32: {
		size_t n = f->wt == WT_I64 ? 8 : 4;

		if ((size_t)(b->end - b->p) < n)
			return -1;
		f->v = 0;
		for (size_t i = 0; i < n; i++)
			f->v |= (uint64_t)b->p[i] << (8 * i);
		b->p += n;
		return 1;
	}
	case WT_LEN:
		if (!pb_varint(b, &len) || len > (uint64_t)(b->end - b->p))
			return -1;
		f->sub.p = b->p;
		f->sub.end = b->p + len;
		b->p += len;
		return 1;
	default:
		return -1; /* groups, or garbage */
	}
}

/*
 * A repeated integer field, packed (a run of varints) or not (one): each
 * value to FN.  False when malformed.
 */
static bool pb_ints(const struct field *f, void (*fn)(void *ctx, uint64_t v),
		    void *ctx)
{
	struct pb b = f->sub;
	uint64_t v;

	if (f->wt == WT_VARINT) {
		fn(ctx, f->v);
		return true;
	}
	if (f->wt != WT_LEN)
		return false;
	while (b.p < b.end) {
		if (!pb_varint(&b, &v))
			return false;
		fn(ctx, v);
	}
	return true;
}

/* ---- the profile ---- */

struct pstr {
	const char *p;
	size_t len;
};

struct pvtype {
	uint64_t type, unit; /* string indexes */
};

struct pline {
	uint64_t function_id;
	int64_t line;
};

struct ploc {
	uint64_t id, mapping_id, address;
	size_t line_first, nlines; /* into pparser.lines */
	uint64_t frame;            /* the model's address, once resolved */
	bool resolved;
};

struct pfunc {
	uint64_t id, name, system_name, filename;
};

struct pmap {
	uint64_t id, start, limit, offset, filename;
};

struct u64s {
	uint64_t *v;
	size_t n, alloc;
};

static void u64s_add(void *ctx, uint64_t v)
{
	struct u64s *a = ctx;

	GROW(a->v, a->n + 1, a->alloc);
	a->v[a->n++] = v;
}

struct pparser {
	struct reader_pos pos; /* (no lines: the file as a whole) */
	struct model *m;
	const char *sample_type; /* the values to read (NULL: in-use bytes) */
	struct snapshot *snap;
	struct pstr *strs;
	size_t nstrs, strs_alloc;
	struct pvtype *types;
	size_t ntypes, types_alloc;
	struct pb *samples;        /* decoded once the rest is known */
	size_t nsamples, samples_alloc;
	struct ploc *locs;
	size_t nlocs, locs_alloc;
	struct pline *lines;
	size_t nlines, lines_alloc;
	struct pfunc *funcs;
	size_t nfuncs, funcs_alloc;
	struct pmap *maps;
	size_t nmaps, maps_alloc;
	struct hashmap loc_by_id, func_by_id;
	int64_t time_nanos, period;
	uint64_t default_type;
	bool has_time;
};

static int malformed(struct pparser *p, const char *what)
{
	return read_error(&p->pos, "malformed profile.proto (%s)", what);
}

/* The string at index I, or NULL (and an error) when out of range. */
static const struct pstr *str_at(struct pparser *p, uint64_t i)
{
	if (i >= p->nstrs) {
		read_error(&p->pos, "string index %" PRIu64 " out of range "
			   "(the table has %zu)", i, p->nstrs);
		return NULL;
	}
	return &p->strs[i];
}

static bool str_is(const struct pstr *s, const char *lit)
{
	return s->len == strlen(lit) && !memcmp(s->p, lit, s->len);
}

static int value_type(struct pparser *p, struct pb b, struct pvtype *t)
{
	struct field f;
	int rc;

	memset(t, 0, sizeof(*t));
	while ((rc = pb_next(&b, &f)) > 0) {
		if (f.wt != WT_VARINT)
			continue;
		if (f.num == 1)
			t->type = f.v;
		else if (f.num == 2)
			t->unit = f.v;
	}
	return rc < 0 ? malformed(p, "a value type") : 0;
}

static int location(struct pparser *p, struct pb b)
{
	struct ploc loc;
	struct field f;
	int rc;

	memset(&loc, 0, sizeof(loc));
	loc.line_first = p->nlines;
	while ((rc = pb_next(&b, &f)) > 0) {
		if (f.num == 4 && f.wt == WT_LEN) {
			struct pb lb = f.sub;
			struct field g;
			struct pline ln = { 0, 0 };

			while ((rc = pb_next(&lb, &g)) > 0)
				if (g.wt == WT_VARINT && g.num == 1)
					ln.function_id = g.v;
				else if (g.wt == WT_VARINT && g.num == 2)
					ln.line = (int64_t)g.v;
			if (rc < 0)
				return malformed(p, "a location's line");
			GROW(p->lines, p->nlines + 1, p->lines_alloc);
			p->lines[p->nlines++] = ln;
			loc.nlines++;
		} else if (f.wt == WT_VARINT) {
			if (f.num == 1)
				loc.id = f.v;
			else if (f.num == 2)
				loc.mapping_id = f.v;
			else if (f.num == 3)
				loc.address = f.v;
		}
	}
	if (rc < 0)
		return malformed(p, "a location");
	if (!loc.id)
		return read_error(&p->pos, "a location with id 0");
	GROW(p->locs, p->nlocs + 1, p->locs_alloc);
	p->locs[p->nlocs++] = loc;
	return 0;
}

static int function(struct pparser *p, struct pb b)
{
	struct pfunc fn;
	struct field f;
	int rc;

	memset(&fn, 0, sizeof(fn));
	while ((rc = pb_next(&b, &f)) > 0) {
		if (f.wt != WT_VARINT)
			continue;
		if (f.num == 1)
			fn.id = f.v;
		else if (f.num == 2)
			fn.name = f.v;
		else if (f.num == 3)
			fn.system_name = f.v;
		else if (f.num == 4)
			fn.filename = f.v;
	}
	if (rc < 0)
		return malformed(p, "a function");
	if (!fn.id)
		return read_error(&p->pos, "a function with id 0");
	GROW(p->funcs, p->nfuncs + 1, p->funcs_alloc);
	p->funcs[p->nfuncs++] = fn;
	return 0;
}

static int mapping(struct pparser *p, struct pb b)
{
	struct pmap mp;
	struct field f;
	int rc;

	memset(&mp, 0, sizeof(mp));
	while ((rc = pb_next(&b, &f)) > 0) {
		if (f.wt != WT_VARINT)
			continue;
		switch (f.num) {
		case 1: mp.id = f.v; break;
		case 2: mp.start = f.v; break;
		case 3: mp.limit = f.v; break;
		case 4: mp.offset = f.v; break;
		case 5: mp.filename = f.v; break;
		}
	}
	if (rc < 0)
		return malformed(p, "a mapping");
	GROW(p->maps, p->nmaps + 1, p->maps_alloc);
	p->maps[p->nmaps++] = mp;
	return 0;
}

/* The top-level fields; samples are kept for later. */
static int top_level(struct pparser *p, struct pb b)
{
	struct field f;
	int rc;

	while ((rc = pb_next(&b, &f)) > 0) {
		switch (f.num) {
		case 1: /* sample_type */
			if (f.wt != WT_LEN)
				break;
			GROW(p->types, p->ntypes + 1, p->types_alloc);
			if (value_type(p, f.sub, &p->types[p->ntypes++]) < 0)
				return -1;
			break;
		case 2: /* sample */
			if (f.wt != WT_LEN)
				break;
			GROW(p->samples, p->nsamples + 1, p->samples_alloc);
			p->samples[p->nsamples++] = f.sub;
			break;
		case 3:
			if (f.wt == WT_LEN && mapping(p, f.sub) < 0)
				return -1;
			break;
		case 4:
			if (f.wt == WT_LEN && location(p, f.sub) < 0)
				return -1;
			break;
		case 5:
			if (f.wt == WT_LEN && function(p, f.sub) < 0)
				return -1;
			break;
		case 6: /* string_table */
			if (f.wt != WT_LEN)
				break;
			GROW(p->strs, p->nstrs + 1, p->strs_alloc);
			p->strs[p->nstrs].p = (const char *)f.sub.p;
			p->strs[p->nstrs++].len = (size_t)(f.sub.end - f.sub.p);
			break;
		case 9: /* time_nanos */
			if (f.wt == WT_VARINT) {
				if (p->has_time)
					warning("%s: a second time_nanos "
						"(profiles concatenated?); "
						"the first is its time",
						p->pos.path);
				else
					p->time_nanos = (int64_t)f.v;
				p->has_time = true;
			}
			break;
		case 12:
			if (f.wt == WT_VARINT)
				p->period = (int64_t)f.v;
			break;
		case 14:
			if (f.wt == WT_VARINT)
				p->default_type = f.v;
			break;
		}
	}
	if (rc < 0)
		return malformed(p, "cut short, or not a profile");
	if (!p->nstrs || p->strs[0].len)
		return read_error(&p->pos, "not a pprof profile: its string "
				  "table does not start with \"\"");
	if (!p->ntypes)
		return read_error(&p->pos, "a profile without sample types");
	return 0;
}

/* ---- ids ---- */

struct by_id {
	uint64_t id;
	size_t index;
};

static bool by_id_eq(const void *item, const void *key)
{
	return ((const struct by_id *)item)->id == *(const uint64_t *)key;
}

/* Index items by id (ID_AT gives the id of item I); -1 on a duplicate. */
static int index_ids(struct pparser *p, struct hashmap *h, size_t n,
		     uint64_t (*id_at)(const struct pparser *, size_t),
		     const char *what)
{
	hashmap_init(h, n ? n : 1);
	for (size_t i = 0; i < n; i++) {
		uint64_t id = id_at(p, i);
		struct by_id *e;

		if (hashmap_get(h, hash_u64(id), by_id_eq, &id))
			return read_error(&p->pos, "two %ss with id %" PRIu64,
					  what, id);
		e = arena_alloc(&p->m->arena, sizeof(*e));
		e->id = id;
		e->index = i;
		hashmap_put(h, hash_u64(id), e);
	}
	return 0;
}

static uint64_t loc_id(const struct pparser *p, size_t i)
{
	return p->locs[i].id;
}

static uint64_t func_id(const struct pparser *p, size_t i)
{
	return p->funcs[i].id;
}

static const struct by_id *find_id(const struct hashmap *h, uint64_t id)
{
	return hashmap_get(h, hash_u64(id), by_id_eq, &id);
}

/* ---- building the snapshot ---- */

/* The index of the sample type to read, and of its object count. */
static int pick_types(struct pparser *p, size_t *bytes, size_t *objs,
		      size_t *alloc_objs, size_t *alloc_bytes)
{
	const char *want = p->sample_type;
	const struct pstr *t;
	struct strbuf have = STRBUF_INIT;
	size_t i;

	*bytes = *objs = *alloc_objs = *alloc_bytes = SIZE_MAX;
	for (i = 0; i < p->ntypes; i++) {
		if (!(t = str_at(p, p->types[i].type))) {
			sb_release(&have);
			return -1;
		}
		if (str_is(t, "inuse_objects"))
			*objs = i;
		else if (str_is(t, "alloc_objects"))
			*alloc_objs = i;
		else if (str_is(t, "alloc_space"))
			*alloc_bytes = i;
		if (want && str_is(t, want))
			*bytes = i;
		else if (!want && str_is(t, "inuse_space"))
			*bytes = i;
		sb_addf(&have, "%s%.*s", i ? ", " : "", (int)t->len, t->p);
	}
	if (*bytes == SIZE_MAX && !want) {
		/* Not a heap profile of Go's shape: its default type. */
		*bytes = p->ntypes - 1;
		for (i = 0; p->default_type && i < p->ntypes; i++)
			if (p->types[i].type == p->default_type)
				*bytes = i;
	}
	if (*bytes == SIZE_MAX) {
		read_error(&p->pos, "no sample type '%s'; it has %s", want,
			   have.buf);
		sb_release(&have);
		return -1;
	}
	sb_release(&have);
	/* Objects go with space of the same kind. */
	if (want && !strncmp(want, "alloc_", 6)) {
		*objs = *alloc_objs;
	}
	return 0;
}

/* The model address of location LOC's frame. */
static int resolve(struct pparser *p, struct ploc *loc)
{
	struct frame_name names[64];
	uint32_t n = 0;

	if (loc->resolved)
		return 0;
	for (size_t k = 0; k < loc->nlines && n < ARRAY_SIZE(names); k++) {
		const struct pline *ln = &p->lines[loc->line_first + k];
		const struct by_id *e = find_id(&p->func_by_id,
						ln->function_id);
		const struct pstr *name, *file;

		if (!e)
			return read_error(&p->pos, "location %" PRIu64 " names "
					  "function %" PRIu64 ", which is not "
					  "defined", loc->id, ln->function_id);
		if (!(name = str_at(p, p->funcs[e->index].name)) ||
		    !(file = str_at(p, p->funcs[e->index].filename)))
			return -1;
		if (!name->len && !(name = str_at(p, p->funcs[e->index]
							       .system_name)))
			return -1;
		if (!name->len)
			continue;
		names[n].func = name->p;
		names[n].func_len = name->len;
		names[n].file = file->p;
		names[n].file_len = file->len;
		names[n].line = ln->line > 0 && ln->line <= UINT32_MAX
					? (uint32_t)ln->line
					: 0;
		n++;
	}
	loc->frame = n ? model_named_frame(p->m, loc->address, names, n)
		       : loc->address;
	loc->resolved = true;
	return 0;
}

struct sample {
	struct u64s locs, values;
};

static int one_sample(struct pparser *p, struct pb b, struct sample *s)
{
	struct field f;
	int rc;

	s->locs.n = s->values.n = 0;
	while ((rc = pb_next(&b, &f)) > 0) {
		if (f.num == 1 && !pb_ints(&f, u64s_add, &s->locs))
			return malformed(p, "a sample's locations");
		if (f.num == 2 && !pb_ints(&f, u64s_add, &s->values))
			return malformed(p, "a sample's values");
	}
	if (rc < 0)
		return malformed(p, "a sample");
	if (s->values.n != p->ntypes)
		return read_error(&p->pos, "a sample with %zu values for %zu "
				  "sample types", s->values.n, p->ntypes);
	return 0;
}

/* What build reads of each sample, and with what (see sample_at). */
struct pbuild {
	struct pparser *p;
	struct sample s;
	uint64_t *frames;
	size_t fcap;
	/* The sample types to read (see pick_types; SIZE_MAX: none). */
	size_t ib, io, iao, iab;
	bool has_alloc;     /* allocations are counted apart from in use */
};

/* Sample I as a stack and its counts (see read_samples). */
static int sample_at(void *ctx, size_t i, struct read_sample *out)
{
	struct pbuild *b = ctx;
	struct pparser *p = b->p;
	const int64_t *v;

	if (one_sample(p, p->samples[i], &b->s) < 0)
		return -1;
	v = (const int64_t *)b->s.values.v;
	if (b->s.locs.n > UINT32_MAX)
		return read_error(&p->pos, "a stack too deep");
	GROW(b->frames, b->s.locs.n, b->fcap);
	for (size_t k = 0; k < b->s.locs.n; k++) {
		const struct by_id *e = find_id(&p->loc_by_id, b->s.locs.v[k]);

		if (!e)
			return read_error(&p->pos, "sample %zu: location id "
					  "%" PRIu64 " is not defined", i + 1,
					  b->s.locs.v[k]);
		if (resolve(p, &p->locs[e->index]) < 0)
			return -1;
		b->frames[k] = p->locs[e->index].frame;
	}
	out->frames = b->frames;
	out->depth = (uint32_t)b->s.locs.n;
	out->line = i + 1;
	out->c.bytes = v[b->ib];
	out->c.objs = b->io != SIZE_MAX ? v[b->io] : 0;
	out->c.has_alloc = b->has_alloc;
	if (b->has_alloc) {
		out->c.alloc_objs = v[b->iao];
		out->c.alloc_bytes = b->iab != SIZE_MAX ? v[b->iab] : 0;
	}
	return 0;
}

static int build(struct pparser *p)
{
	struct pbuild b;
	int64_t total;
	int rc;

	memset(&b, 0, sizeof(b));
	b.p = p;
	if (pick_types(p, &b.ib, &b.io, &b.iao, &b.iab) < 0 ||
	    index_ids(p, &p->loc_by_id, p->nlocs, loc_id, "location") < 0 ||
	    index_ids(p, &p->func_by_id, p->nfuncs, func_id, "function") < 0)
		return -1;
	b.has_alloc = b.iao != SIZE_MAX && b.io != SIZE_MAX && b.iao != b.io;
	rc = read_samples(p->snap, p->m, p->pos.path, p->nsamples, sample_at,
			  &b, &total);
	free(b.frames);
	free(b.s.locs.v);
	free(b.s.values.v);
	if (rc < 0)
		return -1;
	read_finish_profile(p->snap, total, 0, b.has_alloc,
			    b.has_alloc && b.iab != SIZE_MAX);
	return 0;
}

/* The mappings as the snapshot's own maps, for the symbolizer. */
static int own_maps(struct pparser *p)
{
	struct maps *maps = &p->snap->own_maps;

	for (size_t i = 0; i < p->nmaps; i++) {
		const struct pmap *mp = &p->maps[i];
		const struct pstr *name = str_at(p, mp->filename);
		struct vma v;

		if (!name)
			return -1;
		if (mp->limit <= mp->start)
			continue;
		memset(&v, 0, sizeof(v));
		v.start = mp->start;
		v.end = mp->limit;
		v.offset = mp->offset;
		memcpy(v.perms, "r-xp", 5);
		v.name = strtab_intern(&p->m->strings, name->p, name->len);
		maps_add(maps, &v);
	}
	maps_sort(maps, p->pos.path);
	p->snap->has_own_maps = maps->n > 0;
	return 0;
}

static void pparser_free(struct pparser *p)
{
	read_pos_release(&p->pos);
	hashmap_free(&p->loc_by_id);
	hashmap_free(&p->func_by_id);
	FREE_ALL(p->strs, p->types, p->samples, p->locs, p->lines, p->funcs,
		 p->maps);
}

int pb_parse(struct snapshot *snap, struct filebuf *fb,
	     struct model *m, struct read_run *run)
{
	const unsigned char *data = (const unsigned char *)fb->data;
	unsigned char *raw = NULL;
	size_t n = fb->size;
	struct fault why = { 0 };
	struct pparser p;
	int rc;

	memset(&p, 0, sizeof(p));
	p.pos.path = fb->path;
	p.m = m;
	p.sample_type = run->opts ? run->opts->sample_type : NULL;
	p.snap = snap;
	if (n >= 2 && data[0] == 0x1f && data[1] == 0x8b) {
		if (pb_gunzip(data, n, MAX_PROFILE, &raw, &n, fb->path,
			      &why) < 0) {
			rc = read_error(&p.pos, "cannot decompress: %s",
					why.what);
			fault_release(&why);
			return rc;
		}
		data = raw;
	}
	rc = top_level(&p, (struct pb){ data, data + n });
	if (rc == 0)
		rc = own_maps(&p);
	if (rc == 0)
		rc = build(&p);
	if (rc == 0 && p.has_time && p.time_nanos > 0) {
		snap->time = (double)p.time_nanos / 1e9;
		snap->time_from_meta = true;
	}
	if (rc == 0 && read_warn_first(run, READ_WARNED_PROFILE))
		warning("%s: a pprof profile: values are as its producer "
			"wrote them (unsampled by it%s); no committed/virtual "
			"split; total is the profile's own sum", p.pos.path,
			p.period > 1 ? ", from a sample" : "");
	pparser_free(&p);
	free(raw);
	return rc;
}
