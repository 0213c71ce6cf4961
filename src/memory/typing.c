/*
 * What a heap's blocks are (see typing.h): classes by their vtables,
 * read through the image once per vtable; library layouts by the words
 * that point at them, seen as the scan offers every block and root.
 */
#include "typing.h"

#include <bfd.h>
#include <stdlib.h>
#include <string.h>

#include "pymalloc.h"
#include "util.h"

/* libiberty's demangle.h, which Debian does not install. */
#define DMGL_PARAMS (1 << 0)
#define DMGL_ANSI (1 << 1)

/* A type's mangled name longer than this is taken for garbage. */
#define NAME_MAX_LEN 4096
/* The longest pattern, a _Hashtable's header, in words; a piece keeps
 * one word fewer for the next piece of the same memory. */
#define PATTERN_WORDS 7
#define CARRY (PATTERN_WORDS - 1)
/* The first words of a block kept while it is offered: a tree node's. */
/* The first words of a block kept: a tree node's 4, a Python object's
 * (its headers, type and the fields that point at its storage) 8. */
#define HEAD_WORDS 8
#define TREE_WORDS 4
/* A size or a count beyond this is no library's. */

enum layout {
	L_STRING,
	L_VECTOR,
	L_BUCKETS,
	L_HASH_NODE,
	L_TREE_NODE,
	NLAYOUTS
};

static const char *const layout_names[NLAYOUTS] = {
	"string body",
	"vector body",
	"unordered_map/set buckets",
	"unordered_map/set node",
	"map/set node",
};

/* What a vtable address was found to be (TYPE 0: no vtable). */
struct vtable_entry {
	uint64_t vtable;
	uint32_t type;
};

/*
 * A block that may be a tree node: its first words, {color, parent,
 * left, right}.  Only blocks whose first word could be a color and
 * whose links could be links are kept, so the memory is that of the
 * blocks that look like nodes, not of every block.
 */
struct tree_cand {
	uint32_t block;
	uint32_t color;
	uint64_t parent, left, right;
};

enum header_kind { HDR_HASH, HDR_TREE };

/*
 * A container's header found in a block or a root, checked at finish
 * where its nodes' words are all known.  HASH: w = {buckets' block,
 * before_begin's next, element_count}; TREE: w = {root, leftmost,
 * rightmost, node_count}.  AT: the header's address (a tree's: of its
 * color word, where its root's parent points).
 */
struct header {
	uint64_t at;
	uint64_t w[4];
	enum header_kind kind;
};

/* The last words of the memory last offered, for patterns across the
 * boundary between two pieces of it. */
struct carry {
	bool block;
	uint64_t owner;  /* block index, or the root range's start */
	uint64_t end;    /* the address after W[N - 1] */
	uint64_t w[CARRY];
	size_t n;
};

struct typer {
	const struct heap *h;
	struct procimage *img;
	uint64_t lo, hi;          /* the user bytes of the blocks in use */
	uint64_t max_usable;      /* of the largest of them */
	/* Where to look for a block: the heap's extents, and for each
	 * 4 KiB page of one, the first block whose chunk starts at or past
	 * the page (a look-up is a search among a page's blocks). */
	struct page_index *pages;
	size_t npages_idx;
	uint64_t *first;          /* per block: its first word ... */
	uint8_t *have;            /* ... when this bit is set */
	uint32_t layout[NLAYOUTS]; /* type indexes; 0 until one is found */
	struct hashmap names;     /* interned name -> type index */
	/* The head of the block being offered. */
	size_t head_block;
	uint64_t head[HEAD_WORDS];
	size_t nhead;
	struct carry carry;
	struct tree_cand *cands;
	size_t ncands, cands_alloc;
	struct header *hdrs;
	size_t nhdrs, hdrs_alloc;
	/* CPython's objects: its pymalloc (NULL: none), its types' indexes
	 * here, the storage its objects in glibc's blocks point at. */
	struct pymalloc *py;
	uint32_t *py_map;
	size_t npy_map;
	struct py_link *links;
	size_t nlinks, links_alloc;
};

struct page_index {
	uint64_t start, end;
	uint32_t *first;          /* (end - start) / 4 KiB + 1 entries */
};

/* Could ADDR be a block's user pointer (a cheap test before looking)? */
static inline bool maybe_ptr(const struct typer *ty, uint64_t addr)
{
	return !(addr & 15) && addr - ty->lo < ty->hi - ty->lo;
}

/* The block in use whose user pointer is exactly ADDR, or -1. */
static ptrdiff_t block_at(const struct typer *ty, uint64_t addr)
{
	const struct heap_block *b = ty->h->blocks;
	size_t lo = 0, hi = ty->h->nblocks;
	uint64_t chunk = addr - 16;

	if (!maybe_ptr(ty, addr))
		return -1;
	if (ty->npages_idx) {
		/* The extent, then the page: a few blocks to search. */
		size_t el = 0, eh = ty->npages_idx;

		while (el < eh) {
			size_t mid = el + (eh - el) / 2;

			if (ty->pages[mid].start <= chunk)
				el = mid + 1;
			else
				eh = mid;
		}
		if (el && chunk < ty->pages[el - 1].end) {
			const struct page_index *x = &ty->pages[el - 1];
			uint64_t pg = (chunk - x->start) >> 12;

			lo = x->first[pg];
			hi = x->first[pg + 1] + 1;
			if (hi > ty->h->nblocks)
				hi = ty->h->nblocks;
		}
	}
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (b[mid].chunk < chunk)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < ty->h->nblocks && b[lo].chunk == chunk &&
	    b[lo].state == HEAP_IN_USE)
		return (ptrdiff_t)lo;
	return -1;
}

/*
 * Could a request of R bytes have been given block B?  glibc (x86-64)
 * makes a chunk of R + 8 rounded up to 16, at least 32, so the usable
 * size U is R to R + 15 (24 for any R up to 24); but a chunk taken from
 * a bin is handed out whole when what would be left is too small to be
 * a chunk (16 bytes), so U can be up to R + 31 (seen: strings of 41
 * bytes in 80-byte chunks).  An mmapped chunk is rounded up to a page.
 */
static bool request_fits(const struct heap_block *b, uint64_t r)
{
	uint64_t u = heap_block_usable(b);

	if (!r || r > u)
		return false;
	if (b->arena == HEAP_MMAPPED_ARENA)
		return u - r < 4096 + 16;
	return u - r < 32;
}

static uint32_t type_add(struct typing *t, enum block_type_kind kind,
			 const char *name, uint64_t typeinfo)
{
	struct typer *ty = t->priv;
	uint64_t hash = hash_u64((uintptr_t)name);
	uintptr_t found = (uintptr_t)hashmap_get(&ty->names, hash, NULL, NULL);
	struct block_type *tp;

	/* The same class from two binaries (vague linkage) is one type. */
	if (found) {
		tp = &t->types[found];
		if (typeinfo && (!tp->typeinfo || typeinfo < tp->typeinfo))
			tp->typeinfo = typeinfo;
		return (uint32_t)found;
	}
	if (t->ntypes >= UINT32_MAX)
		return 0;
	GROW(t->types, t->ntypes + 1, t->alloc);
	tp = &t->types[t->ntypes];
	memset(tp, 0, sizeof(*tp));
	tp->kind = kind;
	tp->name = name;
	tp->typeinfo = typeinfo;
	hashmap_put(&ty->names, hash, (void *)(uintptr_t)t->ntypes);
	return (uint32_t)t->ntypes++;
}

static uint32_t layout_type(struct typing *t, enum layout l)
{
	struct typer *ty = t->priv;

	if (!ty->layout[l])
		ty->layout[l] = type_add(t, TYPE_LAYOUT,
					 strtab_intern_str(&t->strings,
							   layout_names[l]),
					 0);
	return ty->layout[l];
}

/* Found by a triple pointing at it, not by a whole container checked. */
static bool weak_layout(const struct typer *ty, uint32_t k)
{
	return k && (k == ty->layout[L_STRING] || k == ty->layout[L_VECTOR]);
}

/*
 * Block I is of layout L unless something claimed it first, or L is a
 * container's whole structure checked and the claim before only a
 * triple's: a hash node {next, 2, 20} looks like a string {begin, size,
 * capacity} pointing at the next node, never the reverse.  A class is
 * never claimed over.
 */
static void claim(struct typing *t, size_t i, enum layout l)
{
	struct typer *ty = t->priv;

	if (!t->of[i] || (l >= L_BUCKETS && weak_layout(ty, t->of[i])))
		t->of[i] = layout_type(t, l);
}

/* Is block I a class, or already another container's node? */
static bool taken_as_node(const struct typing *t, size_t i)
{
	const struct typer *ty = t->priv;
	uint32_t k = t->of[i];

	return k && (t->types[k].kind == TYPE_CLASS ||
		     k == ty->layout[L_HASH_NODE] ||
		     k == ty->layout[L_TREE_NODE]);
}

/* Readable memory of a binary (or any file): where vtables, typeinfos
 * and their names live. */
static bool in_file(const struct typer *ty, uint64_t addr)
{
	const struct vma *v = maps_find(&ty->img->maps, addr);

	return v && v->perms[0] == 'r' && v->name[0] && v->name[0] != '[';
}

/* The NUL-terminated string at ADDR into BUF (MAX bytes and the NUL at
 * most): its length, or -1. */
static long read_cstr(struct procimage *img, uint64_t addr, char *buf,
		      size_t max)
{
	size_t len = 0;

	if (addr > UINT64_MAX - max)
		return -1;
	while (len <= max) {
		size_t want = max + 1 - len < 256 ? max + 1 - len : 256;
		size_t got = procimage_read(img, addr + len, buf + len, want);
		const char *nul = memchr(buf + len, '\0', got);

		if (nul)
			return nul - buf;
		if (!got)
			return -1;
		len += got;
	}
	return -1;
}

/*
 * Is S an Itanium-ABI mangled type name as a std::type_info holds it:
 * a class's name (a source name "7Session", a nested one "N2ns4ConnE",
 * a std:: one "St9exception", a local one "Z4mainE5Local") of the
 * characters mangling uses?  (GCC marks a type of internal linkage with
 * a leading '*', dropped by the caller.)
 */
static bool mangled_type_name(const char *s, size_t len)
{
	if (!len || !strchr("0123456789NSZ", s[0]))
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_' || c == '$'))
			return false;
	}
	return true;
}

/*
 * What a class is called in a type table.  make_shared (and
 * allocate_shared) put the object in the block of its shared_ptr's
 * control block, a std::_Sp_counted_ptr_inplace<T, ALLOC, POLICY>
 * whose vtable comes first: the block is T's, and named so, "T
 * (make_shared)", not hidden under a std:: name that owners pass over
 * (a cache of 100,000 make_shared records showed as size-25..40).
 * CLS otherwise.  Into SB; the name is SB's buffer.
 */
static const char *class_name(struct strbuf *sb, const char *cls)
{
	static const char inplace[] = "std::_Sp_counted_ptr_inplace<";
	const char *p = cls + sizeof(inplace) - 1, *end = NULL;
	int depth = 0;

	sb_reset(sb);
	if (starts_with(cls, inplace)) {
		/* T: up to the first ',' (or the closing '>') outside any
		 * brackets of its own. */
		for (const char *q = p; *q && !end; q++) {
			if (*q == '<' || *q == '(' || *q == '[')
				depth++;
			else if ((*q == '>' || *q == ')' || *q == ']') &&
				 depth)
				depth--;
			else if ((*q == ',' || *q == '>') && !depth)
				end = q;
		}
		while (end && end > p && end[-1] == ' ')
			end--;
	}
	if (end && end > p) {
		sb_add(sb, p, (size_t)(end - p));
		sb_addstr(sb, " (make_shared)");
	} else {
		sb_addstr(sb, cls);
	}
	return sb->buf;
}

/*
 * The class whose vtable W is, as a type index, or 0.  W - 16 holds the
 * offset to top, 0 at a complete object's start; W - 8 the typeinfo T,
 * whose first word is its own vtable (__class_type_info & co) and whose
 * second the mangled name.  All of them in binaries' mappings.
 */
static uint32_t class_of_vtable(struct typing *t, uint64_t w)
{
	static const char prefix[] = "typeinfo name for ";
	struct typer *ty = t->priv;
	char buf[4 + NAME_MAX_LEN + 1];
	uint64_t pre[2], ti[2];
	char *mangled = buf + 4, *d;
	const char *name;
	struct strbuf sb = STRBUF_INIT;
	long len;
	uint32_t k = 0;

	if (w < 16 || !procimage_read_all(ty->img, w - 16, pre, sizeof(pre)) ||
	    pre[0] || pre[1] & 7 || !in_file(ty, pre[1]) ||
	    !procimage_read_all(ty->img, pre[1], ti, sizeof(ti)) ||
	    !in_file(ty, ti[0]) || !in_file(ty, ti[1]))
		return 0;
	len = read_cstr(ty->img, ti[1], mangled, NAME_MAX_LEN);
	if (len > 0 && *mangled == '*') {
		mangled++;
		len--;
	}
	if (len <= 0 || !mangled_type_name(mangled, (size_t)len))
		return 0;
	memcpy(mangled - 4, "_ZTS", 4);
	d = bfd_demangle(NULL, mangled - 4, DMGL_PARAMS | DMGL_ANSI);
	if (d && starts_with(d, prefix) && d[sizeof(prefix) - 1]) {
		name = strtab_intern_str(&t->strings,
					 class_name(&sb, d + sizeof(prefix) -
								 1));
		k = type_add(t, TYPE_CLASS, name, pre[1]);
	}
	free(d);
	sb_release(&sb);
	return k;
}

/* W's class through the cache: each vtable is read once. */
static uint32_t vtable_type(struct typing *t, uint64_t w)
{
	struct typer *ty = t->priv;
	struct vtable_entry *e;
	uint64_t hash;

	/* Only addresses in binaries are cached, found or not. */
	if (w & 7 || (w >= ty->lo && w < ty->hi) || !in_file(ty, w))
		return 0;
	hash = hash_u64(w);
	e = hashmap_get(&t->vtables, hash, NULL, NULL);
	if (!e) {
		e = arena_alloc(&t->arena, sizeof(*e));
		e->vtable = w;
		e->type = class_of_vtable(t, w);
		hashmap_put(&t->vtables, hash, e);
	}
	return e->type;
}

/*
 * Block I's first words H: a candidate tree node when its color is red
 * or black (the int's padding is not looked at: a node's block used to
 * hold a free list's links), it has a parent, and its children are 0 or
 * distinct blocks.  A node holds a value past the four words.
 */
static void tree_candidate(struct typer *ty, size_t i, const uint64_t *hd)
{
	struct tree_cand *c;

	if ((uint32_t)hd[0] > 1 || !hd[1] || hd[1] & 7 ||
	    heap_block_usable(&ty->h->blocks[i]) < 40 ||
	    (hd[2] && !maybe_ptr(ty, hd[2])) ||
	    (hd[3] && !maybe_ptr(ty, hd[3])) || (hd[2] && hd[2] == hd[3]) ||
	    i > UINT32_MAX)
		return;
	GROW(ty->cands, ty->ncands + 1, ty->cands_alloc);
	c = &ty->cands[ty->ncands++];
	c->block = (uint32_t)i;
	c->color = (uint32_t)hd[0];
	c->parent = hd[1];
	c->left = hd[2];
	c->right = hd[3];
}

/* The words of block I a Python object's type and storage are read
 * from: HEAD_WORDS, or all of a smaller block. */
static size_t py_words(const struct typer *ty, size_t i)
{
	uint64_t n = heap_block_usable(&ty->h->blocks[i]) / 8;

	return n < HEAD_WORDS ? (size_t)n : HEAD_WORDS;
}

/* The type here of pymalloc's type K (added if new). */
static uint32_t py_type(struct typing *t, uint32_t k)
{
	struct typer *ty = t->priv;
	const struct py_type *pt = &ty->py->types[k];

	if (k >= ty->npy_map) {
		size_t n = ty->py->ntypes;

		ty->py_map = xrecallocarray(ty->py_map, ty->npy_map, n,
					    sizeof(*ty->py_map));
		ty->npy_map = n;
	}
	if (!ty->py_map[k])
		ty->py_map[k] = type_add(t, pt->addr ? TYPE_PYTHON
						     : TYPE_LAYOUT,
					 strtab_intern_str(&t->strings,
							   pt->name),
					 pt->addr);
	return ty->py_map[k];
}

/*
 * Block I, its head kept: a Python object (no class found in it), its
 * type, and the storage it points at remembered for typing_finish.
 */
static void python_object(struct typing *t, size_t i)
{
	struct typer *ty = t->priv;
	const struct heap_block *b = &ty->h->blocks[i];
	const uint8_t *head = (const uint8_t *)ty->head;
	size_t len = 8 * py_words(ty, i), n;
	uint64_t targets[2];
	uint32_t layouts[2], k;

	if (t->of[i] && t->types[t->of[i]].kind == TYPE_CLASS)
		return;
	k = pymalloc_type_head(ty->py, ty->img, b->chunk + 16, head, len);
	if (!k)
		return;
	t->of[i] = py_type(t, k);
	n = pymalloc_storage(ty->py, k, b->chunk + 16, head, len, targets,
			     layouts);
	for (size_t j = 0; j < n; j++) {
		GROW(ty->links, ty->nlinks + 1, ty->links_alloc);
		ty->links[ty->nlinks].target = targets[j];
		ty->links[ty->nlinks++].layout = py_type(t, layouts[j]);
	}
}

/* The first words of block I as they come, whatever the pieces. */
static void take_head(struct typing *t, size_t i, uint64_t offset,
		      const uint64_t *words, size_t n)
{
	struct typer *ty = t->priv;
	size_t was, k;
	uint32_t cls;

	if (!offset) {
		ty->head_block = i;
		ty->nhead = 0;
	} else if (ty->head_block != i || offset != 8 * ty->nhead) {
		return;
	}
	was = ty->nhead;
	if (was >= HEAD_WORDS)
		return;
	k = HEAD_WORDS - was < n ? HEAD_WORDS - was : n;
	memcpy(ty->head + was, words, 8 * k);
	ty->nhead += k;
	if (!was) {
		ty->first[i] = ty->head[0];
		ty->have[i / 8] |= (uint8_t)(1u << (i % 8));
		/* A class wins over any layout claimed for it so far. */
		cls = vtable_type(t, ty->head[0]);
		if (cls)
			t->of[i] = cls;
	}
	if (was < TREE_WORDS && ty->nhead >= TREE_WORDS)
		tree_candidate(ty, i, ty->head);
	if (ty->py && was < py_words(ty, i) && ty->nhead >= py_words(ty, i))
		python_object(t, i);
}

static void add_header(struct typer *ty, enum header_kind kind, uint64_t at,
		       const uint64_t w[4])
{
	struct header *hd;

	GROW(ty->hdrs, ty->nhdrs + 1, ty->hdrs_alloc);
	hd = &ty->hdrs[ty->nhdrs++];
	hd->at = at;
	memcpy(hd->w, w, sizeof(hd->w));
	hd->kind = kind;
}

/*
 * The patterns starting at W[K] for K < KEND, W[0] being at ADDR, of
 * the lengths that end past word FIT (those ending before were looked
 * at with the piece before) and within the N words.  Strings and
 * vectors claim their bodies at once, in the order the scan offers
 * them; tables and trees need their nodes' words, so they wait.
 */
static void scan_words(struct typing *t, uint64_t addr,
		       const uint64_t *w, size_t n, size_t kend, size_t fit)
{
	struct typer *ty = t->priv;
	const struct heap_block *blocks = ty->h->blocks;

#define WANT(len) (k + (len) <= n && k + (len) > fit)
	for (size_t k = 0; k < kend; k++) {
		uint64_t a = w[k], at = addr + 8 * k;
		ptrdiff_t b, found = -2; /* -2: not looked up yet */

		/*
		 * {begin, length, capacity}: a long std::string, whose
		 * buffer holds capacity + 1 (the NUL).  Up to 15 bytes it
		 * would be inside the string itself.  (That the byte at
		 * length is NUL is not checked: the body may have been
		 * offered long before, and keeping a byte of every block
		 * at every possible length is out of the question.)
		 */
		if (WANT(3) && maybe_ptr(ty, a) && w[k + 1] <= w[k + 2] &&
		    w[k + 2] > 15 && w[k + 2] < ty->max_usable) {
			b = found = block_at(ty, a);
			if (b >= 0 && request_fits(&blocks[b], w[k + 2] + 1))
				claim(t, (size_t)b, L_STRING);
		}
		/* {begin, end, end of storage}: a std::vector. */
		if (WANT(3) && maybe_ptr(ty, a) && a <= w[k + 1] &&
		    w[k + 1] <= w[k + 2] && w[k + 2] > a &&
		    w[k + 2] - a <= ty->max_usable) {
			b = found != -2 ? found : block_at(ty, a);
			if (b >= 0 && request_fits(&blocks[b], w[k + 2] - a))
				claim(t, (size_t)b, L_VECTOR);
		}
		/*
		 * A _Hashtable: {buckets, bucket_count, before_begin's
		 * next, element_count, {max_load_factor, next_resize},
		 * single_bucket}.  One bucket is the header's own
		 * single_bucket: nothing to find.
		 */
		if (WANT(7) && maybe_ptr(ty, a) && w[k + 1] > 1 &&
		    w[k + 1] <= ty->max_usable / 8 &&
		    (!w[k + 2] || maybe_ptr(ty, w[k + 2])) &&
		    !w[k + 2] == !w[k + 3] && w[k + 3] <= ty->h->nblocks) {
			uint32_t bits = (uint32_t)w[k + 4];
			float load;

			memcpy(&load, &bits, sizeof(load));
			b = load > 0 && load < 1e9f ? block_at(ty, a) : -1;
			if (b >= 0 && request_fits(&blocks[b], 8 * w[k + 1])) {
				uint64_t hw[4] = { (uint64_t)b, w[k + 2],
						   w[k + 3], 0 };

				add_header(ty, HDR_HASH, at, hw);
			}
		}
		/*
		 * An _Rb_tree's header: {color (red), root, leftmost,
		 * rightmost}, then node_count.  An empty tree's links
		 * point at the header: nothing to find.
		 */
		if (WANT(5) && !(uint32_t)a && maybe_ptr(ty, w[k + 1]) &&
		    maybe_ptr(ty, w[k + 2]) && maybe_ptr(ty, w[k + 3]) &&
		    w[k + 4] && w[k + 4] <= ty->h->nblocks)
			add_header(ty, HDR_TREE, at, w + k + 1);
	}
#undef WANT
}

/*
 * A piece of memory at ADDR, of block or root range OWNER: first the
 * patterns that start in the words kept from the piece before it (when
 * it comes right after it) and end in this one, then this piece's own;
 * then keep its last words for the next.
 */
static void scan_piece(struct typing *t, bool block, uint64_t owner,
		       uint64_t addr, const uint64_t *words, size_t n)
{
	struct typer *ty = t->priv;
	struct carry *c = &ty->carry;
	uint64_t buf[2 * CARRY];
	size_t m = n < CARRY ? n : CARRY, total;

	if (c->n && c->block == block && c->owner == owner && c->end == addr) {
		memcpy(buf, c->w, 8 * c->n);
		memcpy(buf + c->n, words, 8 * m);
		total = c->n + m;
		scan_words(t, addr - 8 * c->n, buf, total, c->n, c->n);
	} else {
		memcpy(buf, words, 8 * m);
		total = m;
	}
	scan_words(t, addr, words, n, n, 0);
	if (n >= CARRY) {
		memcpy(c->w, words + n - CARRY, 8 * CARRY);
		c->n = CARRY;
	} else {
		c->n = total < CARRY ? total : CARRY;
		memmove(c->w, buf + total - c->n, 8 * c->n);
	}
	c->block = block;
	c->owner = owner;
	c->end = addr + 8 * n;
}

static void visit_block(void *ctx, size_t i, uint64_t offset,
			const uint64_t *words, size_t nwords)
{
	struct typing *t = ctx;
	struct typer *ty = t->priv;
	const struct heap_block *b;

	if (!ty || i >= t->nblocks || !nwords || offset & 7)
		return;
	b = &ty->h->blocks[i];
	if (b->state != HEAP_IN_USE || offset >= heap_block_usable(b))
		return;
	take_head(t, i, offset, words, nwords);
	scan_piece(t, true, i, b->chunk + 16 + offset, words, nwords);
}

static void visit_root(void *ctx, const struct heap_root_range *range,
		       uint64_t addr, const uint64_t *words, size_t nwords)
{
	struct typing *t = ctx;

	/* Registers are values, not memory: no structure to find there. */
	if (!t->priv || !nwords || addr & 7 ||
	    (range && range->kind == ROOT_REGISTERS))
		return;
	scan_piece(t, false, range ? range->start : 0, addr, words, nwords);
}

/* Extents sorted by start. */
static int cmp_page_index(const void *a, const void *b)
{
	const struct page_index *x = a, *y = b;

	return (x->start > y->start) - (x->start < y->start);
}

/*
 * The page index of TY's heap: its extents (those that do not overlap,
 * as only hostile memory makes them: else none, and block_at searches
 * every block), each page's first block.
 */
static void index_pages(struct typer *ty)
{
	const struct heap *h = ty->h;
	size_t n = 0, at = 0;

	if (!h->nextents || h->nblocks > UINT32_MAX)
		return;
	ty->pages = xcalloc(h->nextents, sizeof(*ty->pages));
	for (size_t i = 0; i < h->nextents; i++) {
		const struct heap_extent *e = &h->extents[i];

		if (e->end <= e->start || e->end - e->start > (1ull << 40))
			continue;
		ty->pages[n].start = e->start;
		ty->pages[n++].end = e->end;
	}
	qsort(ty->pages, n, sizeof(*ty->pages), cmp_page_index);
	for (size_t i = 1; i < n; i++)
		if (ty->pages[i].start < ty->pages[i - 1].end)
			n = 0; /* (overlapping: no index) */
	for (size_t i = 0; i < n; i++) {
		struct page_index *x = &ty->pages[i];
		size_t np = (size_t)((x->end - x->start + 4095) >> 12);

		x->first = xcalloc(np + 1, sizeof(*x->first));
		while (at && h->blocks[at - 1].chunk >= x->start)
			at--;
		for (size_t p = 0; p <= np; p++) {
			uint64_t pos = x->start + ((uint64_t)p << 12);

			while (at < h->nblocks && h->blocks[at].chunk < pos)
				at++;
			x->first[p] = (uint32_t)at;
		}
	}
	if (!n) {
		free(ty->pages);
		ty->pages = NULL;
	}
	ty->npages_idx = n;
}

void typing_init(struct typing *t, const struct heap *h,
		     struct procimage *img)
{
	struct typer *ty;
	size_t n = h->nblocks;

	memset(t, 0, sizeof(*t));
	t->nblocks = n;
	t->of = xcalloc(n ? n : 1, sizeof(*t->of));
	strtab_init(&t->strings, &t->arena);
	hashmap_init(&t->vtables, 64);
	GROW(t->types, 1, t->alloc);
	memset(&t->types[0], 0, sizeof(t->types[0]));
	t->types[0].kind = TYPE_UNKNOWN;
	t->types[0].name = strtab_intern_str(&t->strings, "unknown");
	t->ntypes = 1;

	ty = xcalloc(1, sizeof(*ty));
	t->priv = ty;
	ty->h = h;
	ty->img = img;
	ty->first = xcalloc(n ? n : 1, sizeof(*ty->first));
	ty->have = xcalloc(n / 8 + 1, 1);
	ty->head_block = SIZE_MAX;
	hashmap_init(&ty->names, 64);
	if (h->py && h->py->walked)
		ty->py = h->py;
	/* An empty span (lo == hi) makes maybe_ptr false for all. */
	for (size_t i = 0; i < n; i++) {
		const struct heap_block *b = &h->blocks[i];
		uint64_t u = b->chunk + 16;

		if (b->state != HEAP_IN_USE)
			continue;
		if (!ty->hi || u < ty->lo)
			ty->lo = u;
		if (u + heap_block_usable(b) > ty->hi)
			ty->hi = u + heap_block_usable(b);
		if (heap_block_usable(b) > ty->max_usable)
			ty->max_usable = heap_block_usable(b);
	}
	index_pages(ty);
}

struct reach_visitor typing_visitor(struct typing *t)
{
	struct reach_visitor v = { visit_block, visit_root, t };

	return v;
}

static int cmp_cand(const void *a, const void *b)
{
	const struct tree_cand *x = a, *y = b;

	return (x->block > y->block) - (x->block < y->block);
}

/* The candidate node at ADDR, or NULL. */
static const struct tree_cand *cand_at(const struct typer *ty, uint64_t addr)
{
	ptrdiff_t b = block_at(ty, addr);
	size_t lo = 0, hi = ty->ncands;

	if (b < 0)
		return NULL;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ty->cands[mid].block < (uint64_t)b)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < ty->ncands && ty->cands[lo].block == (uint64_t)b)
		return &ty->cands[lo];
	return NULL;
}

/*
 * A hash table's chain: element_count nodes from before_begin's next,
 * each a block in use whose first word is the next, the last's 0.  All
 * checked before any is claimed: a chain that breaks, loops or is longer
 * is no table's.  *BUDGET bounds the steps of all chains together, so
 * that many headers claiming one long chain cannot make the work
 * quadratic.
 */
static void hash_table(struct typing *t, const struct header *hd,
		       uint64_t *budget)
{
	struct typer *ty = t->priv;
	uint64_t next = hd->w[1], count = hd->w[2], k;
	ptrdiff_t b;

	for (k = 0; k < count && next; k++) {
		if (!*budget)
			return;
		--*budget;
		b = block_at(ty, next);
		if (b < 0 || !(ty->have[b / 8] & (1u << (b % 8))) ||
		    taken_as_node(t, (size_t)b))
			return;
		next = ty->first[b];
	}
	if (k != count || next)
		return;
	claim(t, hd->w[0], L_BUCKETS);
	next = hd->w[1];
	for (k = 0; k < count; k++) {
		b = block_at(ty, next);
		claim(t, (size_t)b, L_HASH_NODE);
		next = ty->first[b];
	}
}

/*
 * A red-black tree from its header: the root's parent is the header,
 * the root is black, each child's parent is the node that points at
 * it, node_count nodes in all, and the leftmost and rightmost are the
 * header's.  Walked with a stack of its own; as each node is reached
 * only from its parent, a walk ends after node_count + 1 nodes at the
 * most, whatever the memory says.  All or nothing, as a hash table.
 */
static void rb_tree(struct typing *t, const struct header *hd,
		    size_t **nodes, size_t *nodes_alloc,
		    const struct tree_cand ***stack, size_t *stack_alloc)
{
	struct typer *ty = t->priv;
	uint64_t count = hd->w[3], end;
	const struct tree_cand *root = cand_at(ty, hd->w[0]), *x;
	size_t nn = 0, ns = 0;

	if (!root || root->parent != hd->at || root->color != 1)
		return;
	GROW(*stack, 1, *stack_alloc);
	(*stack)[ns++] = root;
	while (ns) {
		uint64_t self, kid[2];

		x = (*stack)[--ns];
		if (nn >= count || taken_as_node(t, x->block))
			return;
		GROW(*nodes, nn + 1, *nodes_alloc);
		(*nodes)[nn++] = x->block;
		self = ty->h->blocks[x->block].chunk + 16;
		kid[0] = x->left;
		kid[1] = x->right;
		for (int j = 0; j < 2; j++) {
			const struct tree_cand *c;

			if (!kid[j])
				continue;
			c = cand_at(ty, kid[j]);
			if (!c || c->parent != self)
				return;
			GROW(*stack, ns + 1, *stack_alloc);
			(*stack)[ns++] = c;
		}
	}
	if (nn != count)
		return;
	/* The ends: down one side from the root, within the nodes seen. */
	for (int j = 0; j < 2; j++) {
		x = root;
		for (uint64_t k = 0; k < count; k++) {
			end = j ? x->right : x->left;
			if (!end)
				break;
			x = cand_at(ty, end);
			if (!x)
				return;
		}
		if (ty->h->blocks[x->block].chunk + 16 != hd->w[1 + j])
			return;
	}
	for (size_t i = 0; i < nn; i++)
		claim(t, (*nodes)[i], L_TREE_NODE);
}

/*
 * The storage Python objects point at, in glibc's blocks: those found
 * here, and pymalloc's objects' (the block it lies in, a class's
 * excepted).
 */
static void python_storage(struct typing *t)
{
	struct typer *ty = t->priv;
	const struct pymalloc *py = ty->py;

	for (size_t i = 0; py && i < ty->nlinks + py->nfar; i++) {
		const struct py_link *l = i < ty->nlinks
			? &ty->links[i] : &py->far[i - ty->nlinks];
		uint32_t k = i < ty->nlinks ? l->layout
					    : py_type(t, l->layout);
		ptrdiff_t b = block_at(ty, l->target);

		if (b >= 0 && (!t->of[b] ||
			       t->types[t->of[b]].kind != TYPE_CLASS))
			t->of[b] = k;
	}
}

/* pymalloc's blocks counted by type too, each of its types here. */
static void python_counts(struct typing *t)
{
	struct typer *ty = t->priv;
	const struct pymalloc *py = ty->py;

	if (!py)
		return;
	for (uint32_t k = 1; k < py->ntypes; k++) {
		uint32_t to;

		if (!py->types[k].count)
			continue;
		to = py_type(t, k);
		t->types[to].count += py->types[k].count;
		t->types[to].bytes += py->types[k].bytes;
	}
	t->types[0].count += py->types[0].count;
	t->types[0].bytes += py->types[0].bytes;
	t->npy = py->ntypes;
	t->py_of = xcalloc(t->npy ? t->npy : 1, sizeof(*t->py_of));
	for (size_t k = 1; k < ty->npy_map && k < t->npy; k++)
		t->py_of[k] = ty->py_map[k];
}

static int cmp_type(const void *a, const void *b, void *types)
{
	const struct block_type *x =
		(const struct block_type *)types + *(const uint32_t *)a;
	const struct block_type *y =
		(const struct block_type *)types + *(const uint32_t *)b;

	return strcmp(x->name, y->name);
}

/* Types 1.. by name, the same heap giving the same indexes. */
static void sort_by_name(struct typing *t)
{
	struct typer *ty = t->priv;
	uint32_t *order = xcalloc(t->ntypes, sizeof(*order));
	uint32_t *to = xcalloc(t->ntypes, sizeof(*to));
	struct block_type *sorted = xcalloc(t->ntypes, sizeof(*sorted));
	struct vtable_entry *e;
	size_t pos = 0;
	void *item;

	for (size_t i = 0; i < t->ntypes; i++)
		order[i] = (uint32_t)i;
	if (t->ntypes > 2)
		qsort_r(order + 1, t->ntypes - 1, sizeof(*order), cmp_type,
			t->types);
	for (size_t i = 0; i < t->ntypes; i++) {
		sorted[i] = t->types[order[i]];
		to[order[i]] = (uint32_t)i;
	}
	free(t->types);
	t->types = sorted;
	t->alloc = t->ntypes;
	for (size_t i = 0; i < t->nblocks; i++)
		t->of[i] = to[t->of[i]];
	for (size_t k = 0; k < t->npy; k++)
		t->py_of[k] = to[t->py_of[k]];
	while (hashmap_next(&t->vtables, &pos, &item)) {
		e = item;
		e->type = to[e->type];
	}
	for (int l = 0; l < NLAYOUTS; l++)
		ty->layout[l] = to[ty->layout[l]];
	free(order);
	free(to);
}

static void typer_free(struct typing *t)
{
	struct typer *ty = t->priv;

	if (!ty)
		return;
	free(ty->first);
	free(ty->have);
	for (size_t i = 0; i < ty->npages_idx; i++)
		free(ty->pages[i].first);
	FREE_ALL(ty->pages, ty->cands, ty->hdrs, ty->py_map, ty->links);
	hashmap_free(&ty->names);
	free(ty);
	t->priv = NULL;
}

void typing_finish(struct typing *t, const struct reach_scan *s)
{
	struct typer *ty = t->priv;
	const struct tree_cand **stack = NULL;
	size_t *nodes = NULL, nodes_alloc = 0, stack_alloc = 0;
	uint64_t budget;
	bool sorted = true;

	(void)s;
	if (!ty)
		return;
	for (size_t i = 1; i < ty->ncands && sorted; i++)
		sorted = ty->cands[i - 1].block < ty->cands[i].block;
	if (!sorted)
		qsort(ty->cands, ty->ncands, sizeof(*ty->cands), cmp_cand);
	budget = st_add(st_mult(t->nblocks, 4), 4096);
	/* A Python object's storage: certain, before any guess. */
	python_storage(t);
	/* Headers in the order found: the first to claim a block keeps it. */
	for (size_t i = 0; i < ty->nhdrs; i++) {
		if (ty->hdrs[i].kind == HDR_HASH)
			hash_table(t, &ty->hdrs[i], &budget);
		else
			rb_tree(t, &ty->hdrs[i], &nodes, &nodes_alloc, &stack,
				&stack_alloc);
	}
	free(nodes);
	free(stack);
	for (size_t i = 0; i < t->nblocks; i++) {
		const struct heap_block *b = &ty->h->blocks[i];

		if (b->state != HEAP_IN_USE)
			continue;
		t->types[t->of[i]].count++;
		t->types[t->of[i]].bytes += b->size;
	}
	python_counts(t);
	sort_by_name(t);
	typer_free(t);
}

void typing_release(struct typing *t)
{
	typer_free(t);
	free(t->of);
	free(t->py_of);
	free(t->types);
	hashmap_free(&t->vtables);
	strtab_free(&t->strings);
	arena_free(&t->arena);
	memset(t, 0, sizeof(*t));
}
