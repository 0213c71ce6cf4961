/*
 * Stacks as text, and the functions they run through (see stacktext.h).
 * Function names are interned in the model, so "the same function" within
 * one run is the same pointer; the text is what crosses runs.
 */
#include "stacktext.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "owner.h"
#include "util.h"

void frame_name(struct strbuf *sb, const struct frame *f, uint32_t k)
{
	frame_add_func(sb, f, k);
}

static const char *frame_func(const struct frame *f, uint32_t k)
{
	return k < f->ninline ? f->inl[k].func : f->func;
}

static const char *frame_file(const struct frame *f, uint32_t k)
{
	return k < f->ninline ? f->inl[k].file : f->file;
}

/* Logical frame number N of ST (innermost first): its frame and index. */
struct lframe {
	const struct frame *f;
	uint32_t k;
	uint32_t slot;   /* where a tally keeps what it knows of it: */
	uint8_t kept;    /* LF_* (see tally_lframes) */
};

enum {
	LF_NONE,   /* nowhere */
	LF_SINGLE, /* by frame id (a frame of one function) */
	LF_MULTI,  /* in tally.mentry, mflag */
};

static size_t logical_frames(const struct model *m, const struct stack *st,
			     struct lframe **out, size_t *alloc)
{
	size_t n = 0;

	/* (The frames are far apart: all asked for at once, then their
	 * names.) */
	for (uint32_t i = 0; i < st->depth; i++)
		prefetch(frame_get(&m->frames, st->frames[i]));
	for (uint32_t i = 0; i < st->depth; i++)
		prefetch(frame_get(&m->frames, st->frames[i])->func);
	for (uint32_t i = 0; i < st->depth; i++) {
		const struct frame *f = frame_get(&m->frames, st->frames[i]);

		for (uint32_t k = 0; k < frame_nlogical(f); k++) {
			GROW(*out, n + 1, *alloc);
			(*out)[n++] = (struct lframe){ f, k, 0, LF_NONE };
		}
	}
	return n;
}

void place_text(struct strbuf *sb, const char *file, uint32_t line,
		bool base)
{
	const char *slash;

	if (!file)
		return;
	if (base && (slash = strrchr(file, '/')) && slash[1])
		file = slash + 1;
	if (line)
		sb_addf(sb, " (%s:%" PRIu32 ")", file, line);
	else
		sb_addf(sb, " (%s)", file);
}

void stack_text(struct strbuf *sb, const struct model *m,
		const struct stack *st, uint64_t depth, unsigned form)
{
	struct lframe *v = NULL;
	size_t alloc = 0, n = logical_frames(m, st, &v, &alloc);
	bool base = form & STACK_BASE_NAMES;

	form &= ~STACK_BASE_NAMES;
	if (depth < UINT64_MAX && n > depth + 1)
		n = (size_t)depth + 1;
	for (size_t i = 0; i < n; i++) {
		/* Folded stacks go root first. */
		const struct lframe *l = &v[form == STACK_FOLDED ? n - 1 - i
								 : i];
		size_t at = sb->len;

		switch (form) {
		case STACK_ORIGINAL:
		case STACK_ORIGINAL_LINES:
			frame_add_func(sb, l->f, l->k);
			sb_addstr(sb, "(@");
			frame_add_file(sb, l->f, l->k);
			if (form == STACK_ORIGINAL_LINES &&
			    frame_line(l->f, l->k))
				sb_addf(sb, ":%" PRIu32, frame_line(l->f, l->k));
			sb_addstr(sb, ") ");
			break;
		case STACK_CALLERS:
			if (i)
				sb_addstr(sb, " <- ");
			frame_add_func(sb, l->f, l->k);
			place_text(sb, frame_file(l->f, l->k),
				   frame_line(l->f, l->k), base);
			break;
		case STACK_FOLDED:
			if (i)
				sb_addch(sb, ';');
			at = sb->len;
			frame_add_func(sb, l->f, l->k);
			/* A ';' or a line end would cut the frame. */
			for (size_t c = at; c < sb->len; c++)
				if (sb->buf[c] == ';' || sb->buf[c] == '\n')
					sb->buf[c] = ':';
			break;
		}
	}
	free(v);
}

void library_name(struct strbuf *sb, const char *path)
{
	const char *base = strrchr(path, '/'), *so;

	base = base ? base + 1 : path;
	so = strstr(base, ".so");
	sb_add(sb, base, so && so > base ? (size_t)(so - base) : strlen(base));
}

/*
 * "... N frames in X" for logical frames V[FROM, TO) (N >= 2): X is
 * their library when they share one that is not the executable, else
 * "the C++ runtime" when they are all of std:: and the like or the
 * allocator's, else "libraries".
 */
static void marker_text(struct strbuf *sb, const struct model *m,
			const struct lframe *v, size_t from, size_t to)
{
	uint32_t bin = v[from].f->bin;
	bool std = true;

	for (size_t i = from; i < to; i++) {
		const char *func = frame_func(v[i].f, v[i].k);

		if (v[i].f->bin != bin)
			bin = 0;
		if (!owner_runtime_name(func))
			std = false;
	}
	sb_addf(sb, "\u2026 %zu frames in ", to - from);
	if (bin && bin != m->main_bin)
		library_name(sb, m->bins[bin]);
	else
		sb_addstr(sb, std ? "the C++ runtime" : "libraries");
}

void stack_text_compact(struct strbuf *sb, const struct model *m,
			const struct stack *st, const struct owners *o,
			size_t shown)
{
	struct lframe *v = NULL;
	size_t alloc = 0, n = logical_frames(m, st, &v, &alloc), entries = 0;
	bool *own = xcalloc(n + 1, sizeof(*own)), any = false;

	for (size_t i = 0; i < n; i++)
		any |= own[i] = owner_frame_is_own(o, m, v[i].f, v[i].k);
	for (size_t i = 0; i < n;) {
		size_t j = i;

		if (entries == shown) {
			sb_addstr(sb, " <- ...");
			break;
		}
		if (entries++)
			sb_addstr(sb, " <- ");
		while (any && j < n && !own[j])
			j++;
		if (j - i >= 2) {
			marker_text(sb, m, v, i, j);
			i = j;
			continue;
		}
		frame_add_func(sb, v[i].f, v[i].k);
		place_text(sb, frame_file(v[i].f, v[i].k),
			   frame_line(v[i].f, v[i].k), true);
		i++;
	}
	free(own);
	free(v);
}

/*
 * pprof's RemoveUninterestingFrames for heap profiles, and glibc's entry
 * points, Rust's allocator and the recorder's markers, which pprof never
 * met; with their lengths, as this is asked of every frame of every stack.
 */
#define N(s) { s, sizeof(s) - 1 }
static const struct {
	const char *name;
	size_t len;
} allocators[] = {
	N("calloc"), N("cfree"), N("malloc"), N("free"), N("memalign"),
	N("posix_memalign"), N("pvalloc"), N("valloc"), N("realloc"),
	N("tc_calloc"), N("tc_cfree"), N("tc_malloc"), N("tc_free"),
	N("tc_memalign"), N("tc_posix_memalign"), N("tc_pvalloc"),
	N("tc_valloc"), N("tc_realloc"), N("tc_new"), N("tc_delete"),
	N("tc_newarray"), N("tc_deletearray"), N("tc_new_nothrow"),
	N("tc_newarray_nothrow"), N("do_malloc"), N("::do_malloc"),
	N("::do_malloc_or_cpp_alloc"), N("DoSampledAllocation"),
	N("simple_alloc::allocate"), N("__malloc_alloc_template::allocate"),
	N("__builtin_delete"), N("__builtin_new"), N("__builtin_vec_delete"),
	N("__builtin_vec_new"), N("operator new"), N("operator new[]"),
	N("__start_google_malloc"), N("__stop_google_malloc"),
	N("__start_malloc_hook"), N("__stop_malloc_hook"),
	/* glibc */
	N("__libc_malloc"), N("__libc_calloc"), N("__libc_realloc"),
	N("__libc_memalign"), N("__libc_valloc"), N("__libc_pvalloc"),
	N("__posix_memalign"), N("aligned_alloc"), N("reallocarray"),
	/* Rust's global allocator (dhat-rs profiles, Rust programs) */
	N("__rust_alloc"), N("__rust_alloc_zeroed"), N("__rust_realloc"),
	N("__rdl_alloc"), N("__rdl_alloc_zeroed"), N("__rdl_realloc"),
	N("__rg_alloc"), N("__rg_alloc_zeroed"), N("__rg_realloc"),
	N("alloc::alloc::alloc"), N("alloc::alloc::alloc_zeroed"),
	N("alloc::alloc::realloc"), N("alloc::alloc::exchange_malloc"),
	/* jemalloc's API beyond malloc's (pprof's list has them) */
	N("mallocx"), N("rallocx"), N("xallocx"), N("dallocx"), N("sdallocx"),
	N("sdallocx_noflags"),
};
#undef N
/* The longest of them ("__malloc_alloc_template::allocate"; a unit test
 * checks it). */
#define LONGEST 33

bool frame_is_allocator(const char *func, size_t len)
{
	const char *paren = memchr(func, '(', len);

	/* "operator new(unsigned long)" with --full-names is operator new. */
	if (paren && paren > func)
		len = (size_t)(paren - func);
	for (size_t i = 0; len <= LONGEST && i < ARRAY_SIZE(allocators); i++)
		if (allocators[i].len == len &&
		    !memcmp(allocators[i].name, func, len))
			return true;
	/*
	 * pprof's "TCMalloc|^tcmalloc::", jemalloc's internals (all named
	 * je_..., or _rjem_... in Rust's build), and the recorder's markers.
	 */
	if (memmem(func, len, "TCMalloc", 8) ||
	    (len >= 10 && !memcmp(func, "tcmalloc::", 10)) ||
	    (len >= 3 && !memcmp(func, "je_", 3)) ||
	    (len >= 6 && !memcmp(func, "_rjem_", 6)) ||
	    (len >= 15 && !memcmp(func, "dmprof_recorder", 15)))
		return true;
	return false;
}

void allocator_pattern(struct strbuf *sb)
{
	sb_addstr(sb, "(?:");
	for (size_t i = 0; i < ARRAY_SIZE(allocators); i++) {
		if (i)
			sb_addch(sb, '|');
		for (const char *c = allocators[i].name; *c; c++) {
			if (strchr("[]().*+?|{}^$\\", *c))
				sb_addch(sb, '\\');
			sb_addch(sb, *c);
		}
	}
	sb_addstr(sb, ")(?:\\(.*\\))?|.*TCMalloc.*|tcmalloc::.*|je_.*|"
		      "_rjem_.*|dmprof_recorder.*");
}

/* (tally_entry.flags) */
#define PLACE_FLAT 1u

static bool is_allocator(const struct lframe *l)
{
	const char *func = frame_func(l->f, l->k);
	uint32_t len = l->k < l->f->ninline ? l->f->inl[l->k].func_len
					    : l->f->func_len;

	/* (0: not known, as for names set by hand.) */
	return func && frame_is_allocator(func, len ? len : strlen(func));
}

/*
 * Where function E is shown to be: the place of its largest flat stack,
 * or, for a function that allocates nothing itself, of its largest call.
 */
static void place(struct tally_entry *e, const struct lframe *l,
		  int64_t bytes, bool flat)
{
	bool had_flat = e->flags & PLACE_FLAT;
	const char *file;

	/* (The frame itself only when it may be the place: it is far.) */
	if ((had_flat && !flat) ||
	    (had_flat == flat && bytes <= e->file_bytes))
		return;
	file = frame_file(l->f, l->k);
	if (!file)
		return;
	e->file = file;
	e->line = frame_line(l->f, l->k);
	e->file_bytes = bytes;
	if (flat)
		e->flags |= PLACE_FLAT;
}

/* Can FUNCS keep what it knows of M's frames by their ids?  Then with
 * room for every frame. */
static bool tally_frames_ready(struct tally *funcs, const struct model *m)
{
	size_t n = m->frames.n;

	if (funcs->by_id_of && funcs->by_id_of != m)
		return false;
	if (funcs->nby_id < n) {
		funcs->by_id = xrecallocarray(funcs->by_id, funcs->nby_id, n,
					      sizeof(*funcs->by_id));
		funcs->flag_by_id = xrecallocarray(funcs->flag_by_id,
						   funcs->nby_id, n, 1);
		funcs->multi_at = xrecallocarray(funcs->multi_at,
						 funcs->nby_id, n,
						 sizeof(*funcs->multi_at));
		funcs->nby_id = n;
	}
	funcs->by_id_of = m;
	return true;
}

/* (tally.flag_by_id) What a frame is, once known. */
enum {
	FRAME_KNOWN = 1,
	FRAME_ALLOCATOR = 2,
	FRAME_OWN = 4, /* the program's own code */
	FRAME_WRAPPER = 8, /* an allocator wrapper (owner.h) */
	FRAME_SHAPE = 16, /* whether FRAME_INLINED is known */
	FRAME_INLINED = 32, /* it has inlined functions: no by_id */
};

/* Where FUNCS keeps what it knows of the NL logical frames of frame ID
 * (of inlined functions): the first's slot in mentry and mflag. */
static uint32_t multi_slot(struct tally *funcs, uint32_t id, uint32_t nl)
{
	size_t at = funcs->nmulti, old = funcs->multi_alloc;

	if (funcs->multi_at[id])
		return funcs->multi_at[id] - 1;
	GROW(funcs->mentry, at + nl, funcs->multi_alloc);
	funcs->mflag = xrecallocarray(funcs->mflag, old, funcs->multi_alloc,
				      1);
	memset(funcs->mentry + at, 0, nl * sizeof(*funcs->mentry));
	funcs->nmulti += nl;
	funcs->multi_at[id] = (uint32_t)at + 1;
	return (uint32_t)at;
}

/*
 * logical_frames for FUNCS' tallies, each with where FUNCS keeps what it
 * knows of it (its function's entry, what kind of frame it is): by frame
 * id for a frame of one function, else by (id, logical frame).  Whether
 * a frame has inlined functions is kept by id too: a million stacks of a
 * few hundred thousand frames would each fetch every frame they hold
 * only to count them.
 */
static size_t tally_lframes(struct tally *funcs, const struct model *m,
			    const struct stack *st)
{
	bool cache = tally_frames_ready(funcs, m);
	size_t n = 0;

	for (uint32_t i = 0; i < st->depth; i++) {
		uint32_t id = st->frames[i], nl, at = id;
		const struct frame *f = frame_get(&m->frames, id);
		uint8_t kept = LF_NONE;

		if (cache) {
			uint8_t *fl = &funcs->flag_by_id[id];

			if (!(*fl & FRAME_SHAPE))
				*fl |= FRAME_SHAPE |
				       (f->ninline ? FRAME_INLINED : 0);
			nl = *fl & FRAME_INLINED ? frame_nlogical(f) : 1;
			kept = nl == 1 ? LF_SINGLE : LF_MULTI;
			if (nl > 1)
				at = multi_slot(funcs, id, nl);
		} else {
			nl = frame_nlogical(f);
		}
		for (uint32_t k = 0; k < nl; k++) {
			GROW(funcs->lframes, n + 1, funcs->lframes_alloc);
			funcs->lframes[n++] = (struct lframe){
				f, k, kept == LF_MULTI ? at + k : at, kept
			};
		}
	}
	return n;
}

/* What FUNCS knows of LF's kind (FRAME_*), if it keeps it. */
static uint8_t *kept_flag(struct tally *funcs, const struct lframe *lf)
{
	return lf->kept == LF_SINGLE  ? &funcs->flag_by_id[lf->slot]
	       : lf->kept == LF_MULTI ? &funcs->mflag[lf->slot]
				      : NULL;
}

/* LF's function's entry in FUNCS, if it keeps it. */
static struct tally_entry **kept_entry(struct tally *funcs,
				       const struct lframe *lf)
{
	return lf->kept == LF_SINGLE  ? &funcs->by_id[lf->slot]
	       : lf->kept == LF_MULTI ? &funcs->mentry[lf->slot]
				      : NULL;
}

static uint8_t frame_kind(struct tally *funcs, const struct model *m,
			  const struct lframe *lf)
{
	uint8_t kind = FRAME_KNOWN;

	if (is_allocator(lf)) {
		kind |= FRAME_ALLOCATOR;
	} else if (funcs->owners && funcs->owners->rule == OWNER_PROGRAM) {
		const char *func = frame_func(lf->f, lf->k);

		if (func && owner_wrapper(funcs->owners, func, strlen(func)) >= 0)
			kind |= FRAME_WRAPPER;
		else if (owner_frame_is_own(funcs->owners, m, lf->f, lf->k))
			kind |= FRAME_OWN;
	}
	return kind;
}

/* frame_kind(LF), remembered by frame id where FUNCS can. */
static uint8_t frame_flags(struct tally *funcs, const struct model *m,
			   const struct lframe *lf)
{
	uint8_t *flag = kept_flag(funcs, lf);

	if (!flag)
		return frame_kind(funcs, m, lf);
	if (!(*flag & FRAME_KNOWN))
		*flag |= frame_kind(funcs, m, lf);
	return *flag;
}

static bool allocator_frame(struct tally *funcs, const struct model *m,
			    const struct lframe *lf)
{
	return frame_flags(funcs, m, lf) & FRAME_ALLOCATOR;
}

/*
 * The entry of LF's function in FUNCS: by frame id when the frame is
 * one function and of the model FUNCS caches (a million stacks over a
 * few hundred thousand frames), else by its name.  An interpreted
 * function (a Python or JIT frame of a run on such a runtime, in no
 * binary) is its name in its file, as pprof keeps them apart: every
 * Python module's top level is a "<module>", and two files may each have
 * a "main" or a "<lambda>".
 */
static struct tally_entry *function_entry(struct tally *funcs,
					  const struct model *m,
					  const struct lframe *lf,
					  struct strbuf *name)
{
	struct tally_entry *e, **kept = kept_entry(funcs, lf);

	if (kept && *kept)
		return *kept;
	sb_reset(name);
	frame_name(name, lf->f, lf->k);
	if (m->runtime && !lf->f->bin && frame_file(lf->f, lf->k)) {
		/* (After a NUL: the key's text is the name alone.) */
		sb_addch(name, '\0');
		sb_addstr(name, frame_file(lf->f, lf->k));
	}
	e = tally_get(funcs, name->buf, name->len);
	if (kept)
		*kept = e;
	return e;
}

int stacktext_cmp_flat(const void *a, const void *b)
{
	const struct tally_entry *x = *(const struct tally_entry *const *)a;
	const struct tally_entry *y = *(const struct tally_entry *const *)b;

	return CMP(y->v[0], x->v[0]) ?: CMP(y->v[1], x->v[1]) ?:
	       tally_key_cmp(x, y);
}

bool stacktext_placed_flat(const struct tally_entry *e)
{
	return e->flags & PLACE_FLAT;
}

/*
 * The allocator wrappers V[FROM, TO) passed over on the way to the owner
 * at TO, into FUNCS->passed: SIZE bytes and one stack each (once, in a
 * recursion).
 */
static void count_passed(struct tally *funcs, const struct model *m,
			 const struct lframe *v, size_t from, size_t to,
			 int64_t size)
{
	struct strbuf name = STRBUF_INIT;
	uint64_t stamp = ++funcs->passed->stamp;

	for (size_t i = from; i < to; i++) {
		struct tally_entry *e;

		if (!(frame_flags(funcs, m, &v[i]) & FRAME_WRAPPER))
			continue;
		sb_reset(&name);
		frame_name(&name, v[i].f, v[i].k);
		e = tally_get(funcs->passed, name.buf, name.len);
		if (e->stamp == stamp)
			continue;
		e->stamp = stamp;
		e->bytes = add64(e->bytes, size, &funcs->overflow);
		e->allocs++;
	}
	sb_release(&name);
}

/*
 * The owner of the logical frames V[0, NF) of a stack under FUNCS' rule:
 * its index (0 when NF is), with the first frame past the allocator
 * (pprof's owner) in *FIRST, and whether the owner is the program's own
 * code in *OWN (if OWN).
 */
static size_t find_owner(struct tally *funcs, const struct model *m,
			 const struct lframe *v, size_t nf, size_t *first,
			 bool *own)
{
	size_t owner = 0;

	/*
	 * As pprof prunes: from the root, the first allocator frame below a
	 * frame of the program ends the stack; what it called (the
	 * allocator's insides, named or not) owns nothing.
	 */
	for (size_t i = nf, user = 0; i-- > 0;) {
		if (!allocator_frame(funcs, m, &v[i])) {
			user = 1;
		} else if (user) {
			owner = i + 1;
			break;
		}
	}
	while (owner + 1 < nf && allocator_frame(funcs, m, &v[owner]))
		owner++;
	/* The program's own code, if the stack has any, owns its bytes; the
	 * frames between (std:: templates, libraries) only pass them on. */
	*first = owner;
	for (size_t i = owner; funcs->owners &&
			       funcs->owners->rule == OWNER_PROGRAM && i < nf;
	     i++)
		if (frame_flags(funcs, m, &v[i]) & FRAME_OWN) {
			if (own)
				*own = true;
			return i;
		}
	if (own)
		*own = false;
	return owner;
}

bool stacktext_programs_bytes(struct tally *funcs, const struct model *m,
			      const struct stack *st)
{
	size_t nf = tally_lframes(funcs, m, st), first;
	struct lframe *v = funcs->lframes;
	size_t owner;
	bool own;

	owner = find_owner(funcs, m, v, nf, &first, &own);
	for (size_t i = first; own && i < owner; i++)
		if (owner_runtime_state(frame_func(v[i].f, v[i].k)))
			return false;
	return own;
}

bool stack_is_marker(const struct model *m, const struct stack *st)
{
	const struct frame *f;

	if (!st || st->depth != 1)
		return false;
	f = frame_get(&m->frames, st->frames[0]);
	return f->func && !f->ninline && !strncmp(f->func, "dmprof_", 7);
}

struct tally_entry *stacktext_tally_functions(struct tally *funcs,
					      const struct model *m,
					      const struct stack *st,
					      const int64_t *add, size_t n,
					      bool cum)
{
	size_t nf = tally_lframes(funcs, m, st), owner;
	struct lframe *v = funcs->lframes;
	size_t first;
	struct strbuf name = STRBUF_INIT;
	struct tally_entry *own = NULL;
	int64_t size = add[0] < 0 ? -add[0] : add[0];
	/* A function met twice in this stack (recursion) counts once. */
	uint64_t stamp = ++funcs->stamp;

	if (stack_is_marker(m, st))
		return NULL;
	if (!nf) {
		own = tally_get(funcs, "<no stack>", 10);
		own->v[1] = add64(own->v[1], add[0], &funcs->overflow);
	}
	owner = find_owner(funcs, m, v, nf, &first, NULL);
	if (funcs->passed)
		count_passed(funcs, m, v, first, owner, size);
	for (size_t i = cum ? first : owner;
	     i < (cum ? nf : owner + (owner < nf)); i++) {
		struct tally_entry *e;

		if (i != owner && allocator_frame(funcs, m, &v[i]))
			continue; /* pprof removes them anywhere */
		e = function_entry(funcs, m, &v[i], &name);
		if (i == owner)
			own = e;
		if (e->stamp == stamp)
			continue; /* recursion: cum once */
		e->stamp = stamp;
		e->v[1] = add64(e->v[1], add[0], &funcs->overflow);
		place(e, &v[i], size, i == owner);
	}
	own->v[0] = add64(own->v[0], add[0], &funcs->overflow);
	if (funcs->lines && owner < nf)
		tally_line_add(funcs, own, frame_file(v[owner].f, v[owner].k),
			       frame_line(v[owner].f, v[owner].k), add[0]);
	for (size_t k = 1; k < n && k + 1 < ARRAY_SIZE(own->v); k++)
		own->v[k + 1] = add64(own->v[k + 1], add[k], &funcs->overflow);
	sb_release(&name);
	return own;
}

void item_text(struct strbuf *sb, const struct model *m, const struct item *it,
	       uint64_t depth, enum stack_form form)
{
	switch (it->kind) {
	case ITEM_MALLOC:
	case ITEM_HOOKED:
		if (it->bucket->stack->depth)
			stack_text(sb, m, it->bucket->stack, depth, form);
		else
			sb_addstr(sb, "<no stack>");
		break;
	case ITEM_UNHOOKED:
		sb_addf(sb, "%s %s", it->vma->perms,
			*it->vma->name ? it->vma->name : "[anonymous]");
		break;
	case ITEM_LINE_NO_BUCKET:
	case ITEM_REGION_NO_BUCKET:
		sb_addf(sb, "<bucket %" PRIu64 ", defined in no .buckets file>",
			it->bucket_id);
		break;
	}
}

size_t stack_frames(const struct model *m, const struct stack *st,
		    void (*fn)(void *ctx, const char *text, size_t len,
			       const struct frame *f, uint32_t k),
		    void *ctx)
{
	struct lframe *v = NULL;
	size_t alloc = 0, n = logical_frames(m, st, &v, &alloc);
	struct strbuf sb = STRBUF_INIT;

	for (size_t i = 0; i < n; i++) {
		sb_reset(&sb);
		frame_add_func(&sb, v[i].f, v[i].k);
		place_text(&sb, frame_file(v[i].f, v[i].k),
			   frame_line(v[i].f, v[i].k), false);
		fn(ctx, sb.buf, sb.len, v[i].f, v[i].k);
	}
	sb_release(&sb);
	free(v);
	return n;
}

size_t stack_depth(const struct model *m, const struct stack *st)
{
	size_t n = 0;

	for (uint32_t i = 0; i < st->depth; i++)
		n += frame_nlogical(frame_get(&m->frames, st->frames[i]));
	return n;
}

void stack_match_text(struct strbuf *sb, const struct model *m,
		      const struct stack *st, const struct maps *maps)
{
	struct lframe *v = NULL;
	size_t alloc = 0, n = logical_frames(m, st, &v, &alloc);

	for (size_t i = 0; i < n; i++) {
		const struct lframe *l = &v[n - 1 - i];
		const struct vma *vma;
		const char *base;

		if (i)
			sb_addch(sb, ';');
		if (frame_func(l->f, l->k)) {
			frame_add_func(sb, l->f, l->k);
			continue;
		}
		vma = maps ? maps_find(maps, l->f->addr) : NULL;
		if (!vma || !*vma->name) {
			sb_addch(sb, '?');
			continue;
		}
		base = strrchr(vma->name, '/');
		sb_addf(sb, "%s+0x%" PRIx64, base ? base + 1 : vma->name,
			l->f->addr - vma->start + vma->offset);
	}
	free(v);
}
