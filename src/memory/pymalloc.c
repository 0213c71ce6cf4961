/*
 * CPython's object allocator walked from outside, and Python objects
 * typed: see pymalloc.h.  Everything is read through the process image
 * (a live process's copy, or a core) and checked before it is believed:
 * a table whose arenas do not hold the pools they say, a pool whose
 * header is no pool's, a free list that leaves its pool or loops, a type
 * pointer that points at no type: each is said (a problem) or passed
 * over, never followed blindly.
 */
#include "pymalloc.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "elffile.h"
#include "heap.h"
#include "procimage.h"
#include "reach.h"
#include "search.h"

#define MAX_PROBLEMS 1000
/* How far a type's type may be from type itself (a metaclass's metaclass
 * ...). */
#define META_DEPTH 4
/* tp_flags: the type is ready (every type an object can have). */
#define TPFLAGS_READY (1ull << 12)
#define TPFLAGS_LIST_SUBCLASS (1ull << 25)
#define TPFLAGS_DICT_SUBCLASS (1ull << 29)
/* A type's name is read up to this long. */
#define NAME_MAX_LEN 200
/* A refcount past this is no object's (a pointer read as one). */
#define REFCNT_MAX (1ull << 40)

static void problem(struct pymalloc *p, const char *img, uint64_t addr,
		    const char *fmt, ...) PRINTF(4, 5);

static void problem(struct pymalloc *p, const char *img, uint64_t addr,
		    const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;

	if (p->nproblems >= MAX_PROBLEMS)
		return;
	va_start(ap, fmt);
	sb_vaddf(&sb, fmt, ap);
	va_end(ap);
	GROW(p->problems, p->nproblems + 1, p->problems_alloc);
	memset(&p->problems[p->nproblems], 0, sizeof(*p->problems));
	fault_set(&p->problems[p->nproblems++].f,
		  &(struct where){ .path = img, .has_addr = true,
				   .addr = addr },
		  "%s", sb.buf);
	sb_release(&sb);
}

static bool read_word(struct procimage *img, uint64_t addr, uint64_t *v)
{
	return procimage_read_all(img, addr, v, sizeof(*v));
}

/* ---- the interpreter ---- */

enum { SYM_RUNTIME, SYM_TYPE, SYM_VERSION, NSYMS };
static const char *const sym_names[NSYMS] = {
	"_PyRuntime", "PyType_Type", "Py_Version",
};

/* Is the file at PATH (a mapping's) one CPython may be in? */
static bool python_file(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return starts_with(base, "python3") || starts_with(base, "libpython3");
}

/* Where module PATH is loaded in IMG, given its first loadable
 * segment's address VADDR: the load bias, or false. */
static bool load_bias(const struct procimage *img, const char *path,
		      uint64_t vaddr, uint64_t *bias)
{
	for (size_t i = 0; i < img->maps.n; i++) {
		const struct vma *v = &img->maps.v[i];

		if (v->offset == 0 && !strcmp(v->name, path)) {
			*bias = v->start - (vaddr & ~(uint64_t)4095);
			return true;
		}
	}
	return false;
}

/* An interpreter mapped: its file (a mapping's name), version, and the
 * objects it exports. */
struct interpreter {
	const char *module;
	unsigned major, minor, micro;
	uint64_t runtime, type_type;
};

/* The interpreter IMG maps into IN; false when none is there. */
static bool find_interpreter(struct interpreter *in, struct procimage *img)
{
	const char *tried = NULL;

	memset(in, 0, sizeof(*in));
	for (size_t i = 0; i < img->maps.n; i++) {
		const char *path = img->maps.v[i].name;
		uint64_t v[NSYMS], vaddr, bias;

		/* (A module's mappings are in a row: each tried once.) */
		if (!path[0] || path == tried || !python_file(path))
			continue;
		tried = path;
		if (elf_dynsyms(path, sym_names, NSYMS, v, NULL, &vaddr) < 1 ||
		    !v[SYM_RUNTIME] || !v[SYM_TYPE] ||
		    !load_bias(img, path, vaddr, &bias))
			continue;
		in->module = path;
		in->runtime = v[SYM_RUNTIME] + bias;
		in->type_type = v[SYM_TYPE] + bias;
		if (v[SYM_VERSION]) {
			uint64_t hex;

			if (read_word(img, v[SYM_VERSION] + bias, &hex)) {
				in->major = (unsigned)(hex >> 24 & 0xff);
				in->minor = (unsigned)(hex >> 16 & 0xff);
				in->micro = (unsigned)(hex >> 8 & 0xff);
			}
		} else {
			/* (Before 3.11 Py_Version is not exported: the
			 * file's name says the version.) */
			const char *d = strstr(path, "python3.");

			if (d)
				in->major = 3, in->minor = (unsigned)atoi(d + 8);
		}
		return true;
	}
	return false;
}

/* ---- the arenas' table ---- */

struct arena_obj {
	uint64_t address, pool_address;
	uint32_t nfreepools, ntotalpools;
	uint32_t index;       /* in the table */
};

static void arena_decode(const struct pymalloc *p, const uint8_t *e,
			 struct arena_obj *a)
{
	const struct pymalloc_layout *l = p->lay;

	a->address = load_u64(e + l->arena_address);
	a->pool_address = load_u64(e + l->arena_pool_address);
	a->nfreepools = load_u32(e + l->arena_nfreepools);
	a->ntotalpools = load_u32(e + l->arena_ntotalpools);
}

/* The first pool of arena A. */
static uint64_t first_pool(const struct pymalloc *p, const struct arena_obj *a)
{
	uint64_t mask = p->lay->pool_size - 1;

	return (a->address + mask) & ~mask;
}

/* Do A's fields say an arena (A->address not 0)? */
static bool arena_sane(const struct pymalloc *p, const struct arena_obj *a)
{
	const struct pymalloc_layout *l = p->lay;
	uint64_t base = first_pool(p, a);

	return !(a->address & 4095) && a->address + l->arena_size > a->address &&
	       a->pool_address >= base &&
	       a->pool_address <= a->address + l->arena_size &&
	       (a->pool_address - base) % l->pool_size == 0 &&
	       a->ntotalpools <= l->arena_size / l->pool_size &&
	       a->nfreepools <= a->ntotalpools;
}

/*
 * How many arenas the table at ADDR (N entries) holds whose first pool
 * says it is theirs, or 0 when an entry is no arena's.
 */
static size_t table_score(struct pymalloc *p, struct procimage *img,
			  uint64_t addr, size_t n)
{
	const struct pymalloc_layout *l = p->lay;
	size_t esz = l->arena_object, score = 0;
	uint8_t *t = xmalloc(n * esz);

	if (!procimage_read_all(img, addr, t, n * esz)) {
		free(t);
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		struct arena_obj a;
		uint8_t hdr[64];

		arena_decode(p, t + i * esz, &a);
		if (!a.address)
			continue;
		if (!arena_sane(p, &a)) {
			score = 0;
			break;
		}
		if (a.pool_address > first_pool(p, &a) &&
		    procimage_read_all(img, first_pool(p, &a), hdr,
				       l->pool_overhead) &&
		    load_u32(hdr + l->pool_arenaindex) == i)
			score++;
	}
	free(t);
	return score;
}

/*
 * The table: a block of H in use that a word of the interpreter's data
 * (its writable mappings, and the anonymous one after them: its bss)
 * points at, and whose arenas hold their pools.  The best such.
 */
static bool find_table(struct pymalloc *p, struct procimage *img,
		       const struct heap *h)
{
	const struct maps *m = &img->maps;
	size_t best = 0;
	uint64_t lo, hi;

	if (!h->nblocks)
		return false;
	lo = h->blocks[0].chunk;
	hi = h->blocks[h->nblocks - 1].chunk + h->blocks[h->nblocks - 1].size;
	for (size_t i = 0; i < m->n; i++) {
		const struct vma *v = &m->v[i];
		bool bss = i && !v->name[0] && m->v[i - 1].end == v->start &&
			   !strcmp(m->v[i - 1].name, p->module);
		uint8_t buf[1 << 16];

		if (!vma_writable(v) || (strcmp(v->name, p->module) && !bss))
			continue;
		for (uint64_t a = v->start; a < v->end; a += sizeof(buf)) {
			size_t len = v->end - a < sizeof(buf) ? v->end - a
							       : sizeof(buf);

			len = img->read(img, a, buf, len) & ~(size_t)7;
			for (size_t k = 0; k < len; k += 8) {
				uint64_t w = load_u64(buf + k);
				ptrdiff_t b;
				size_t n, score;

				if (w & 15 || w < lo || w >= hi ||
				    (b = heap_find_block(h, w)) < 0 ||
				    h->blocks[b].chunk + 16 != w)
					continue;
				n = heap_block_usable(&h->blocks[b]) /
				    p->lay->arena_object;
				if (n < 16 || w == p->table)
					continue;
				score = table_score(p, img, w, n);
				if (score > best) {
					best = score;
					p->table = w;
					p->table_ptr = a + k;
					p->maxarenas = n;
				}
			}
		}
	}
	return best > 0;
}

/* ---- types ---- */

struct type_memo {
	uint64_t addr;
	uint32_t index;   /* 0: not a type */
	uint32_t hits;    /* (of a bad_meta one: blocks that named it) */
	const char *name; /* (of a bad_meta one) */
};

static uint32_t add_type(struct pymalloc *p, uint64_t addr, const char *name,
			 size_t len, uint64_t flags)
{
	struct py_type *t;

	GROW(p->types, p->ntypes + 1, p->types_alloc);
	t = &p->types[p->ntypes];
	memset(t, 0, sizeof(*t));
	t->addr = addr;
	t->name = arena_strndup(&p->arena, name, len);
	t->flags = flags;
	return (uint32_t)p->ntypes++;
}

/* Is T (an object's type pointer) a type, its name readable: its index
 * (a new type added), or 0. */
static uint32_t type_of(struct pymalloc *p, struct procimage *img, uint64_t t)
{
	const struct python_offsets *o = p->off;
	uint64_t h = hash_u64(t), meta, flags, name_at;
	struct type_memo *m = hashmap_get(&p->by_addr, h, NULL, NULL);
	char name[NAME_MAX_LEN + 1];
	size_t len;

	if (m) {
		m->hits += m->name != NULL;
		return m->index;
	}
	m = arena_alloc(&p->arena, sizeof(*m));
	m->addr = t;
	m->index = 0;
	m->hits = 0;
	m->name = NULL;
	hashmap_put(&p->by_addr, h, m);
	if (t & 7 || !read_word(img, t + o->ob_type, &meta) ||
	    !read_word(img, t + o->type_flags, &flags) ||
	    !(flags & TPFLAGS_READY) ||
	    !read_word(img, t + o->type_name, &name_at))
		return 0;
	len = img->read(img, name_at, name, NAME_MAX_LEN);
	name[len] = '\0';
	len = strlen(name);
	if (!len || len == NAME_MAX_LEN)
		return 0;
	/* (A name starts as an identifier: "str", "_io.TextIOWrapper".) */
	if (!isalpha((unsigned char)name[0]) && name[0] != '_')
		return 0;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)name[i] < 0x21 || name[i] == 0x7f)
			return 0;
	/* Its type is type, or a type whose type is (a metaclass).  A
	 * type ready and named whose types do not end there is kept aside:
	 * said after the walk if blocks name it (its objects untyped). */
	for (int d = 0; meta != p->type_type; d++)
		if (d == META_DEPTH || meta & 7 ||
		    !read_word(img, meta + o->ob_type, &meta)) {
			char *keep = arena_alloc(&p->arena, len + 1);

			memcpy(keep, name, len + 1);
			m->name = keep;
			m->hits = 1;
			GROW(p->bad_meta, p->nbad_meta + 1,
			     p->bad_meta_alloc);
			p->bad_meta[p->nbad_meta++] = m;
			return 0;
		}
	m->index = add_type(p, t, name, len, flags);
	return m->index;
}

uint32_t pymalloc_layout_type(struct pymalloc *p, const char *name)
{
	uint64_t h = hash_bytes(name, strlen(name));
	struct type_memo *m = hashmap_get(&p->by_name, h, NULL, NULL);
	size_t i;

	/* (Hashes of names may collide: the memo's index is checked.) */
	if (m && !strcmp(p->types[m->index].name, name))
		return m->index;
	for (i = 1; i < p->ntypes; i++)
		if (!p->types[i].addr && !strcmp(p->types[i].name, name))
			return (uint32_t)i;
	m = arena_alloc(&p->arena, sizeof(*m));
	m->addr = 0;
	m->index = add_type(p, 0, name, strlen(name), 0);
	hashmap_replace(&p->by_name, h, NULL, NULL, m);
	return m->index;
}

/*
 * Where the object of a block lies, by its layout: no header (0), a
 * PyGC_Head (16), a managed dict's two pointers before that (32); the
 * type's flags must say the same.
 */
uint32_t pymalloc_type_head(struct pymalloc *p, struct procimage *img,
			    uint64_t addr, const uint8_t *head, size_t len)
{
	const struct python_offsets *o = p->off;
	static const uint8_t offs[3] = { 0, 16, 32 };

	(void)addr;
	for (size_t i = 0; i < 3; i++) {
		size_t at = offs[i];
		uint64_t refcnt, tp, flags, want, gc_next;
		uint32_t t;

		if (at + o->ob_type + 8 > len)
			break;
		/* (A collected object's PyGC_Head first: its next is none
		 * or a pointer, not a count.  So a tuple whose type is
		 * garbled is not read as an object of another layout,
		 * its size for a count and its first item for a type.) */
		if (at && (gc_next = load_u64(head + at - 16)) &&
		    gc_next < 0x10000)
			continue;
		refcnt = load_u64(head + at);
		tp = load_u64(head + at + o->ob_type);
		if (!refcnt || refcnt >= REFCNT_MAX || !tp ||
		    !(t = type_of(p, img, tp)))
			continue;
		flags = p->types[t].flags;
		want = i == 0 ? 0
		     : i == 1 ? o->flag_have_gc
			      : o->flag_have_gc | o->flag_managed_dict;
		if ((flags & (o->flag_have_gc | o->flag_managed_dict)) == want)
			return t;
	}
	return 0;
}

/* Where in its block the object of type T starts (as above). */
static size_t object_at(const struct pymalloc *p, uint32_t t)
{
	uint64_t f = p->types[t].flags;

	if (!(f & p->off->flag_have_gc))
		return 0;
	return f & p->off->flag_managed_dict ? 32 : 16;
}

/* A storage's layout: OWNER's name then WHAT ("dict keys"). */
static uint32_t storage_type(struct pymalloc *p, uint32_t owner,
			     const char *what)
{
	char name[NAME_MAX_LEN + 16];

	snprintf(name, sizeof(name), "%s %s", p->types[owner].name, what);
	return pymalloc_layout_type(p, name);
}

size_t pymalloc_storage(struct pymalloc *p, uint32_t t, uint64_t block,
			const uint8_t *head, size_t len, uint64_t *targets,
			uint32_t *layouts)
{
	const struct python_offsets *o = p->off;
	const struct py_type *ty = &p->types[t];
	size_t at = object_at(p, t), n = 0;
	const uint8_t *obj = head + at;
	uint64_t v;

#define FIELD(off) (at + (off) + 8 <= len ? load_u64(obj + (off)) : 0)
#define LINK(addr, what)                                           \
	do {                                                       \
		if ((v = (addr)) && !(v & 7)) {                    \
			targets[n] = v;                            \
			layouts[n++] = storage_type(p, t, what);   \
		}                                                  \
	} while (0)
	if (!t || !ty->addr)
		return 0;
	if (ty->flags & TPFLAGS_DICT_SUBCLASS) {
		LINK(FIELD(o->dict_keys), "keys");
		LINK(FIELD(o->dict_values), "values");
	} else if (ty->flags & TPFLAGS_LIST_SUBCLASS) {
		LINK(FIELD(o->list_items), "items");
	} else if (!strcmp(ty->name, "bytearray")) {
		LINK(FIELD(o->bytearray_bytes), "bytes");
	} else if (!strcmp(ty->name, "set") || !strcmp(ty->name, "frozenset")) {
		uint64_t table = FIELD(o->set_table);

		if (table != block + at + o->set_smalltable)
			LINK(table, "table");
	} else if (at == 32) {
		/* (A managed dict's values: the pointer first in the
		 * block.) */
		LINK(load_u64(head), "values");
	}
#undef LINK
#undef FIELD
	return n;
}

/* ---- the walk ---- */

static void add_block(struct pymalloc *p, uint64_t addr, unsigned k,
		      uint32_t t)
{
	if (p->nblocks == p->blocks_alloc) {
		p->blocks_alloc = p->blocks_alloc ? 2 * p->blocks_alloc : 4096;
		p->blocks = xreallocarray(p->blocks, p->blocks_alloc,
					  sizeof(*p->blocks));
		p->type_of = xreallocarray(p->type_of, p->blocks_alloc,
					   sizeof(*p->type_of));
	}
	p->blocks[p->nblocks] = addr | (uint64_t)k << 56;
	p->type_of[p->nblocks++] = t;
}

struct walk {
	struct pymalloc *p;
	struct procimage *img;
	uint8_t *pool;
	uint8_t *free_map;
	struct py_link *links;
	size_t nlinks, links_alloc;
};

/* The blocks of the pool at ADDR (arena I, its bytes in W->pool). */
static void walk_pool(struct walk *w, uint64_t addr, size_t i)
{
	struct pymalloc *p = w->p;
	const struct pymalloc_layout *l = p->lay;
	const uint8_t *pool = w->pool;
	uint32_t count = load_u32(pool + l->pool_count);
	uint32_t k = load_u32(pool + l->pool_szidx);
	uint32_t next = load_u32(pool + l->pool_nextoffset);
	uint64_t size, cap, carved, nfree = 0, fb;

	if (load_u32(pool + l->pool_arenaindex) != i || k >= l->nclasses) {
		problem(p, w->img->name, addr,
			"pool 0x%" PRIx64 " of arena %zu: its header says "
			"arena %u, size class %u: not walked",
			addr, i, load_u32(pool + l->pool_arenaindex), k);
		return;
	}
	size = py_class_size(p, k);
	cap = (l->pool_size - l->pool_overhead) / size;
	if (count > cap) {
		problem(p, w->img->name, addr,
			"pool 0x%" PRIx64 ": %u blocks in use of %" PRIu64
			" (size %" PRIu64 "): not walked", addr, count, cap,
			size);
		return;
	}
	p->classes[k].pools++;
	p->classes[k].used += count;
	p->classes[k].avail += cap - count;
	carved = next > l->pool_overhead ? (next - l->pool_overhead) / size : 0;
	if (carved > cap)
		carved = cap;
	memset(w->free_map, 0, (cap + 7) / 8);
	/* The free list: blocks carved, each once. */
	for (fb = load_u64(pool + l->pool_freeblock); fb; nfree++) {
		uint64_t off = fb - addr - l->pool_overhead, b = off / size;

		if (fb < addr + l->pool_overhead || off % size || b >= carved ||
		    w->free_map[b / 8] & (1u << (b % 8))) {
			problem(p, w->img->name, fb,
				"pool 0x%" PRIx64 ": its free list goes to "
				"0x%" PRIx64 ", no free block of it: cut there",
				addr, fb);
			break;
		}
		w->free_map[b / 8] |= (uint8_t)(1u << (b % 8));
		fb = load_u64(pool + l->pool_overhead + off);
	}
	if (carved - nfree != count)
		problem(p, w->img->name, addr,
			"pool 0x%" PRIx64 ": %u blocks in use by its count, "
			"%" PRIu64 " by its free list (a thread inside "
			"pymalloc?)", addr, count, carved - nfree);
	for (uint64_t b = 0; b < carved; b++) {
		const uint8_t *head = pool + l->pool_overhead + b * size;
		uint64_t at = addr + l->pool_overhead + b * size;
		uint64_t targets[2];
		uint32_t layouts[2], t;
		size_t n;

		if (w->free_map[b / 8] & (1u << (b % 8)))
			continue;
		t = pymalloc_type_head(p, w->img, at, head, size);
		add_block(p, at, k, t);
		n = pymalloc_storage(p, t, at, head, size, targets, layouts);
		for (size_t j = 0; j < n; j++) {
			GROW(w->links, w->nlinks + 1, w->links_alloc);
			w->links[w->nlinks].target = targets[j];
			w->links[w->nlinks++].layout = layouts[j];
		}
	}
}

static int cmp_arena(const void *a, const void *b)
{
	const struct arena_obj *x = a, *y = b;

	return x->address < y->address ? -1 : x->address > y->address;
}

/* Every arena of the table, in address order: their pools. */
static void walk_arenas(struct walk *w)
{
	struct pymalloc *p = w->p;
	const struct pymalloc_layout *l = p->lay;
	size_t esz = l->arena_object, n = p->maxarenas, na = 0;
	uint8_t *t = xmalloc(n * esz);
	struct arena_obj *a = xcalloc(n ? n : 1, sizeof(*a));

	if (!procimage_read_all(w->img, p->table, t, n * esz))
		n = 0;
	for (size_t i = 0; i < n; i++) {
		arena_decode(p, t + i * esz, &a[na]);
		if (!a[na].address)
			continue;
		if (!arena_sane(p, &a[na])) {
			problem(p, w->img->name, p->table + i * esz,
				"arena %zu: its table entry says no arena "
				"(0x%" PRIx64 ", pools from 0x%" PRIx64 "): "
				"not walked", i, a[na].address,
				a[na].pool_address);
			continue;
		}
		a[na++].index = (uint32_t)i;
	}
	qsort(a, na, sizeof(*a), cmp_arena);
	p->spans = xcalloc(na ? na : 1, sizeof(*p->spans));
	for (size_t j = 0; j < na; j++) {
		uint64_t base = first_pool(p, &a[j]);

		p->narenas++;
		p->unused_pools += a[j].nfreepools;
		if (base != a[j].address)
			p->arena_alignment += l->pool_size;
		p->spans[j][0] = a[j].address;
		p->spans[j][1] = a[j].address + l->arena_size;
		for (uint64_t pool = base; pool < a[j].pool_address;
		     pool += l->pool_size) {
			if (!procimage_read_all(w->img, pool, w->pool,
						l->pool_size)) {
				problem(p, w->img->name, pool,
					"pool 0x%" PRIx64 " cannot be read",
					pool);
				continue;
			}
			if (load_u32(w->pool + l->pool_count))
				walk_pool(w, pool, a[j].index);
		}
	}
	p->arena_bytes = (uint64_t)p->narenas * l->arena_size;
	free(a);
	free(t);
}

bool pymalloc_in_arenas(const struct pymalloc *p, uint64_t addr)
{
	size_t k;

	if (!p || !p->walked)
		return false;
	k = PARTITION_POINT(p->narenas, i, p->spans[i][1] <= addr);
	return k < p->narenas && p->spans[k][0] <= addr;
}

ptrdiff_t pymalloc_find(const struct pymalloc *p, uint64_t addr)
{
	size_t lo = 0, hi = p->nblocks;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (py_block_addr(p->blocks[mid]) <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return -1;
	lo--;
	return addr < py_block_addr(p->blocks[lo]) +
			      py_class_size(p, py_block_class(p->blocks[lo]))
		       ? (ptrdiff_t)lo
		       : -1;
}

/*
 * The objects CPython keeps on its free lists to give out again: dead
 * (their count 0, so that no type reads as theirs), each of a type of its
 * own, "dict (free list)", as sys._debugmallocstats() counts them.  The
 * main interpreter's lists: the dicts' and the lists' (an array and its
 * count), the tuples' of each size and the floats' (linked lists, through
 * a tuple's first item and a float's type; a count each).  A list whose
 * count or links say no object of pymalloc's is left at that.
 */
static void free_listed(struct walk *w, uint64_t obj, size_t head,
			uint32_t t)
{
	ptrdiff_t b = pymalloc_find(w->p, obj - head);

	if (b >= 0 && py_block_addr(w->p->blocks[b]) == obj - head)
		w->p->type_of[b] = t;
}

static int64_t read_count(struct walk *w, uint64_t addr)
{
	int32_t n;

	return procimage_read_all(w->img, addr, &n, sizeof(n)) ? n : -1;
}

static void array_list(struct walk *w, uint64_t in, unsigned list,
		       unsigned count, const char *name)
{
	int64_t n = read_count(w, in + count);
	uint64_t obj[128];
	uint32_t t;

	/* (The array lies between the list and its count.) */
	if (n <= 0 || (uint64_t)n > (count - list) / 8 || n > 128 ||
	    !procimage_read_all(w->img, in + list, obj, (size_t)n * 8))
		return;
	t = pymalloc_layout_type(w->p, name);
	for (int64_t i = 0; i < n; i++)
		free_listed(w, obj[i], w->p->off->gc_head, t);
}

static void linked_list(struct walk *w, uint64_t head_at, int64_t n,
			unsigned next, size_t head, const char *name)
{
	uint32_t t = pymalloc_layout_type(w->p, name);
	uint64_t obj;

	if (!read_word(w->img, head_at, &obj))
		return;
	for (int64_t i = 0; i < n && obj && pymalloc_find(w->p, obj) >= 0;
	     i++) {
		free_listed(w, obj, head, t);
		if (!read_word(w->img, obj + next, &obj))
			return;
	}
}

static void free_lists(struct walk *w)
{
	const struct python_offsets *o = w->p->off;
	uint64_t in;
	int64_t n;

	if (!w->p->runtime ||
	    !read_word(w->img, w->p->runtime + o->runtime_interp_main, &in) ||
	    !in)
		return;
	array_list(w, in, o->dicts_free, o->dicts_nfree, "dict (free list)");
	array_list(w, in, o->lists_free, o->lists_nfree, "list (free list)");
	for (unsigned i = 0; i < o->tuple_lists; i++) {
		n = read_count(w, in + o->tuples_nfree + 4 * i);
		if (n > 0 && n <= o->tuples_max)
			linked_list(w, in + o->tuples_free + 8 * i, n,
				    o->tuple_items, o->gc_head,
				    "tuple (free list)");
	}
	n = read_count(w, in + o->floats_nfree);
	if (n > 0 && n <= o->floats_max)
		linked_list(w, in + o->floats_free, n, o->ob_type, 0,
			    "float (free list)");
}

/* The storage found: the block of pymalloc's it is in is of its owner's
 * layout (the link is certain, a guess of its own is not; a dict's
 * values start past a prefix of their block). */
static void type_links(struct walk *w)
{
	struct pymalloc *p = w->p;

	for (size_t i = 0; i < w->nlinks; i++) {
		ptrdiff_t b = pymalloc_find(p, w->links[i].target);

		if (b >= 0) {
			p->type_of[b] = w->links[i].layout;
			continue;
		}
		/* (Storage in glibc's heap: the typing of its blocks
		 * takes it.) */
		GROW(p->far, p->nfar + 1, p->far_alloc);
		p->far[p->nfar].target = w->links[i].target;
		p->far[p->nfar++].layout = w->links[i].layout;
	}
	for (size_t i = 0; i < p->nblocks; i++) {
		struct py_type *t = &p->types[p->type_of[i]];

		t->count++;
		t->bytes += py_class_size(p, py_block_class(p->blocks[i]));
	}
}

struct pymalloc *pymalloc_new(const char *module, unsigned major,
			      unsigned minor, unsigned micro, uint64_t type_type)
{
	struct pymalloc *p = xcalloc(1, sizeof(*p));

	p->module = xstrdup(module);
	p->major = major;
	p->minor = minor;
	p->micro = micro;
	p->type_type = type_type;
	hashmap_init(&p->by_addr, 256);
	hashmap_init(&p->by_name, 16);
	add_type(p, 0, "", 0, 0); /* [0]: unknown */
	p->off = python_offsets_for(major, minor);
	p->lay = pymalloc_layout_for(major, minor);
	return p;
}

/*
 * Most blocks in use of no type that reads as one: not a heap of Python
 * objects as the walk knows them (a type garbled, in a core).  Said, not
 * guessed: such blocks are counted by their size class.  (A process
 * holds some buffers of no type, a percent or two of its blocks.)
 */
static void untyped_said(struct pymalloc *p, struct procimage *img)
{
	size_t none = 0;

	/* (Eight blocks or more: not a pointer a probe met by chance.) */
	for (size_t i = 0; i < p->nbad_meta; i++)
		if (p->bad_meta[i]->hits >= 8)
			problem(p, img->name, p->bad_meta[i]->addr,
				"type '%s': its type is not type, nor a "
				"type whose type is (a cycle of types?): its "
				"objects (%u blocks) are not typed",
				p->bad_meta[i]->name, p->bad_meta[i]->hits);

	for (size_t i = 0; i < p->nblocks; i++)
		none += !p->type_of[i];
	if (p->nblocks >= 1000 && 2 * none > p->nblocks)
		problem(p, img->name, p->table,
			"%zu of its %zu blocks in use have no type that "
			"reads as one (their ob_type garbled?): counted by "
			"their size only", none, p->nblocks);
}

void pymalloc_run(struct pymalloc *p, struct procimage *img,
		  const struct heap *h)
{
	struct walk w = { .p = p, .img = img };

	if (!p->off || !p->lay) {
		fault_set(&p->why, &(struct where){ .path = img->name },
			  "%s: python %u.%u (%s): dmprof knows no layout of "
			  "its objects and arenas (3.11 only)", img->name,
			  p->major, p->minor, p->module);
		return;
	}
	if (!find_table(p, img, h)) {
		fault_set(&p->why, &(struct where){ .path = img->name },
			  "%s: python %u.%u.%u (%s): no pymalloc arenas "
			  "found (PYTHONMALLOC=malloc, or debug?)",
			  img->name, p->major, p->minor, p->micro, p->module);
		return;
	}
	w.pool = xmalloc(p->lay->pool_size);
	w.free_map = xmalloc(p->lay->pool_size / p->lay->alignment / 8 + 1);
	walk_arenas(&w);
	free_lists(&w);
	untyped_said(p, img);
	type_links(&w);
	free(w.links);
	free(w.free_map);
	free(w.pool);
	p->walked = true;
}

struct pymalloc *pymalloc_walk(struct procimage *img, const struct heap *h)
{
	struct interpreter in;
	struct pymalloc *p;

	if (!find_interpreter(&in, img))
		return NULL;
	p = pymalloc_new(in.module, in.major, in.minor, in.micro,
			 in.type_type);
	p->runtime = in.runtime;
	pymalloc_run(p, img, h);
	return p;
}

void pymalloc_free(struct pymalloc *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nproblems; i++)
		fault_release(&p->problems[i].f);
	free(p->problems);
	free(p->bad_meta);
	fault_release(&p->why);
	FREE_ALL(p->module, p->blocks, p->type_of, p->spans, p->far, p->types);
	hashmap_free(&p->by_addr);
	hashmap_free(&p->by_name);
	arena_free(&p->arena);
	free(p);
}

/* ---- a value, for people ---- */

/* Up to MAX characters of a str whose LEN characters of KIND bytes each
 * start at P (N bytes there), quoted, escaped as Python would. */
static void str_text(struct strbuf *sb, const uint8_t *p, size_t n,
		     uint64_t len, unsigned kind)
{
	const size_t max = 40;
	size_t k;

	sb_addch(sb, '\'');
	for (k = 0; k < len && k < max && (k + 1) * kind <= n; k++) {
		uint32_t c = kind == 1 ? p[k]
			   : kind == 2 ? (uint32_t)p[2 * k] | p[2 * k + 1] << 8
				       : load_u32(p + 4 * k);

		if (c == '\'' || c == '\\')
			sb_addf(sb, "\\%c", (char)c);
		else if (c >= 32 && c < 127)
			sb_addch(sb, (char)c);
		else if (c < 256)
			sb_addf(sb, "\\x%02x", c);
		else if (c < 0x10000)
			sb_addf(sb, "\\u%04x", c);
		else
			sb_addf(sb, "\\U%08x", c);
	}
	sb_addch(sb, '\'');
	if (k < len)
		sb_addf(sb, "... (%" PRIu64 " characters)", len);
}

/* An int of SIZE 30-bit digits (its sign SIZE's) at D (N bytes). */
static void int_text(struct strbuf *sb, const uint8_t *d, size_t n,
		     int64_t size)
{
	uint64_t v = 0, digits = size < 0 ? -(uint64_t)size : (uint64_t)size;

	if (digits > 2 || digits * 4 > n) {
		sb_addf(sb, " of %" PRIu64 " digits", digits);
		return;
	}
	for (uint64_t i = digits; i-- > 0;)
		v = v << 30 | (load_u32(d + 4 * i) & 0x3fffffff);
	sb_addf(sb, " %s%" PRIu64, size < 0 ? "-" : "", v);
}

void pymalloc_value(const struct pymalloc *p, const char *name,
		    uint64_t type, const uint8_t *bytes, size_t len,
		    struct strbuf *sb)
{
	const struct python_offsets *o = p->off;
	const struct py_type one = { .addr = type, .name = name };
	const struct py_type *ty = &one;
	const uint8_t *ob = NULL;
	size_t n = 0;
	double f;

	sb_addstr(sb, ty->name);
	if (!ty->addr || !o)
		return;
	/* (Where the type pointer is: the object's start before it.) */
	for (size_t off = 0; off <= 2u * o->gc_head && !ob; off += o->gc_head)
		if (off + o->ob_type + 8 <= len &&
		    load_u64(bytes + off + o->ob_type) == ty->addr)
			ob = bytes + off, n = len - off;
	if (!ob)
		return;
#define HAS(field, size) ((size_t)o->field + (size) <= n)
	if (!strcmp(ty->name, "str") && HAS(str_state, 4) &&
	    HAS(str_length, 8)) {
		uint32_t st = load_u32(ob + o->str_state);
		unsigned kind = st >> 2 & 7;
		size_t at = st >> 6 & 1 ? o->str_ascii_data : o->str_compact_data;

		/* (compact, ready; kind 1, 2 or 4) */
		if ((st >> 5 & 1) && (st >> 7 & 1) &&
		    (kind == 1 || kind == 2 || kind == 4) && at <= n) {
			sb_addch(sb, ' ');
			str_text(sb, ob + at, n - at, load_u64(ob + o->str_length),
				 kind);
		}
	} else if (!strcmp(ty->name, "bool") && HAS(var_size, 8)) {
		sb_addstr(sb, load_u64(ob + o->var_size) ? " True" : " False");
	} else if (!strcmp(ty->name, "int") && HAS(var_size, 8)) {
		int_text(sb, ob + o->long_digits,
			 n > o->long_digits ? n - o->long_digits : 0,
			 (int64_t)load_u64(ob + o->var_size));
	} else if (!strcmp(ty->name, "float") && HAS(float_value, 8)) {
		memcpy(&f, ob + o->float_value, 8);
		sb_addf(sb, " %.17g", f);
	} else if (!strcmp(ty->name, "dict") && HAS(dict_used, 8)) {
		sb_addf(sb, " len=%" PRId64, (int64_t)load_u64(ob + o->dict_used));
	} else if ((!strcmp(ty->name, "set") ||
		    !strcmp(ty->name, "frozenset")) && HAS(set_used, 8)) {
		sb_addf(sb, " len=%" PRId64, (int64_t)load_u64(ob + o->set_used));
	} else if ((!strcmp(ty->name, "list") || !strcmp(ty->name, "tuple") ||
		    !strcmp(ty->name, "bytes") ||
		    !strcmp(ty->name, "bytearray")) && HAS(var_size, 8)) {
		sb_addf(sb, " len=%" PRId64, (int64_t)load_u64(ob + o->var_size));
	}
#undef HAS
}
