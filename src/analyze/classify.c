/*
 * Classification.  The subject strings (joined function names, joined
 * source files) are built only for the fields the policy's rules look at,
 * and only once per bucket per policy: the result is cached by bucket.
 */
#include "classify.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "literals.h"
#include "threads.h"
#include "util.h"

void classifier_init(struct classifier *c, struct policy *p,
		     const struct model *m)
{
	memset(c, 0, sizeof(*c));
	c->p = p;
	c->m = m;
	hashmap_init(&c->regions, 256);
	for (size_t i = 0; i < ARRAY_SIZE(c->trie); i++)
		hashmap_init(&c->trie[i].map, 1024);
	c->prefix_off = p->uses[COND_TYPE];
	/* (The first malloc rule is the first to match: if it takes
	 * anything, no bucket's stack is looked at.) */
	c->malloc_all = -1;
	for (size_t i = 0; i < p->nrules; i++) {
		if (p->rules[i].alloc != RULE_MALLOC)
			continue;
		if (rule_is_catch_all(&p->rules[i]))
			c->malloc_all = (int)p->rules[i].column;
		break;
	}
}

/* C's clean scans by I: the whole-field ones, then the head ones, each
 * the stack field's (even I), then the source's (odd). */
static struct clean_scan *scan_n(struct classifier *c, int i)
{
	return i < 2 ? &c->clean_scan[i] : &c->head_scan[i - 2];
}

#define SCAN_FIELD(i) ((i) % 2 ? COND_SOURCE : COND_STACK)

void classifier_free(struct classifier *c)
{
	for (size_t i = 0; i < c->nhelpers; i++) {
		/* (They share the memo array with C.) */
		c->helpers[i].bucket_col = NULL;
		matcher_free(c->helpers[i].mt);
		free(c->helpers[i].mt);
		classifier_free(&c->helpers[i]);
	}
	free(c->helpers);
	for (int i = 0; i < 2; i++) {
		free(c->scan[i].e);
		free(c->scan[i].sets);
		hashmap_free(&c->scan[i].set_ids);
		free(c->scan[i].found);
		free(c->scan[i].tmp);
		free(c->scan[i].pos_set);
	}
	for (size_t i = 0; c->seq && i < c->p->nseq; i++)
		free(c->seq[i].st);
	free(c->seq);
	for (int i = 0; i < 4; i++) {
		struct clean_scan *cs = scan_n(c, i);

		free(cs->tmp);
		if (cs->borrowed)
			continue;
		acm_free(cs->a);
		FREE_ALL(cs->e, cs->plain[0], cs->plain[1], cs->synth);
	}
	if (!c->all_borrowed)
		FREE_ALL(c->all_plain[0], c->all_plain[1]);
	if (!c->canon_borrowed)
		free(c->canon);
	free(c->texts);
	free(c->bucket_col);
	hashmap_free(&c->regions);
	for (size_t i = 0; i < ARRAY_SIZE(c->trie); i++) {
		hashmap_free(&c->trie[i].map);
		free(c->trie[i].root);
	}
	arena_free(&c->arena);
	sb_release(&c->stack);
	sb_release(&c->source);
	sb_release(&c->what);
}

/* Add logical frame K's string for FIELD (as stack_field writes it). */
static void frame_add(struct strbuf *sb, const struct frame *f, uint32_t k,
		      int field)
{
	if (field == COND_STACK)
		frame_add_func(sb, f, k);
	else
		frame_add_file(sb, f, k);
}

void stack_functions(struct strbuf *sb, const struct model *m,
		     const struct stack *s)
{
	stack_field(sb, m, s, COND_STACK, NULL);
}

void stack_field(struct strbuf *sb, const struct model *m,
		 const struct stack *s, enum cond_field field,
		 struct frame_starts *starts)
{
	size_t start = sb->len, n = 0;

	if (starts)
		starts->n = 0;
	for (uint32_t i = 0; i < s->depth; i++) {
		const struct frame *f = frame_get(&m->frames, s->frames[i]);

		for (uint32_t k = 0; k < frame_nlogical(f); k++) {
			if (sb->len > start)
				sb_addch(sb, ' ');
			if (starts) {
				GROW(starts->v, n + 1, starts->alloc);
				starts->v[n] = sb->len - start;
			}
			n++;
			frame_add(sb, f, k, field);
		}
	}
	if (starts)
		starts->n = n;
}

/* The same, alone in SB. */
static void frame_text(struct strbuf *sb, const struct frame *f, uint32_t k,
		       int field)
{
	sb_reset(sb);
	frame_add(sb, f, k, field);
}

/*
 * F's whole text for FIELD (its logical frames joined, as in the field):
 * for the common frame, one symbolized function, its name where it is,
 * not copied (the copy cost as much as matching it); else built in SB.
 */
static const char *frame_whole(struct strbuf *sb, const struct frame *f,
			       int field, size_t *len)
{
	/* (As frame_add_func writes it.) */
	if (field == COND_STACK && !f->ninline && f->func) {
		*len = f->func_len ? f->func_len : strlen(f->func);
		return f->func;
	}
	sb_reset(sb);
	for (uint32_t l = 0; l < frame_nlogical(f); l++) {
		if (l)
			sb_addch(sb, ' ');
		frame_add(sb, f, l, field);
	}
	*len = sb->len;
	return sb->buf;
}

/* (A state this big is not remembered: slower, as right.) */
#define NO_MEMO UINT16_MAX

struct set_key {
	const struct frame_scan *fs;
	const uint64_t *w;
};

static bool set_eq(const void *item, const void *k)
{
	const struct set_key *key = k;
	size_t i = (size_t)(uintptr_t)item - 1;

	return !memcmp(key->fs->sets + i * key->fs->words, key->w,
		       key->fs->words * sizeof(*key->w));
}

/* The index of found set W in FS's table, added if new. */
static uint32_t set_of(struct frame_scan *fs, const uint64_t *w)
{
	struct set_key key = { fs, w };
	uint64_t h;
	void *item;
	size_t w_bytes = fs->words * sizeof(*w);
	bool any = false;

	for (size_t i = 0; i < fs->words && !any; i++)
		any = w[i] != 0;
	if (!any)
		return 0;
	h = hash_bytes(w, w_bytes);
	item = hashmap_get(&fs->set_ids, h, set_eq, &key);
	if (item)
		return (uint32_t)((uintptr_t)item - 1);
	GROW(fs->sets, st_mult(fs->nsets + 1, fs->words), fs->sets_alloc);
	memcpy(fs->sets + fs->nsets * fs->words, w, w_bytes);
	hashmap_put(&fs->set_ids, h, (void *)(uintptr_t)(fs->nsets + 1));
	return (uint32_t)fs->nsets++;
}

static void or_set(const struct frame_scan *fs, uint32_t set)
{
	const uint64_t *w = fs->sets + (size_t)set * fs->words;

	if (set)
		for (size_t i = 0; i < fs->words; i++)
			fs->found[i] |= w[i];
}

static void scan_init(struct frame_scan *fs, const struct acm *a)
{
	fs->a = a;
	fs->words = acm_words(a);
	fs->found = xcalloc(fs->words, sizeof(*fs->found));
	fs->tmp = xcalloc(fs->words, sizeof(*fs->tmp));
	/* Set 0: nothing found. */
	fs->sets = xcalloc(fs->words, sizeof(*fs->sets));
	fs->sets_alloc = fs->words;
	fs->nsets = 1;
	hashmap_init(&fs->set_ids, 64);
	fs->sep_from = UINT32_MAX;
}

/*
 * Which prefilter literals the joined FIELD of stack S holds.  A frame
 * has two entries: one for where it starts a stack (the automaton's
 * first state), one for where it follows a separator (most often the
 * same few states): most frames are met both ways, and one entry for
 * both was rewritten at every turn.
 */
static const uint64_t *scan_stack(struct classifier *c, int field,
				  const struct stack *s)
{
	struct frame_scan *fs = &c->scan[field == COND_STACK ? 0 : 1];
	uint32_t st = 0;

	if (!fs->a)
		scan_init(fs, policy_prefilter(c->p, field));
	if (fs->nframes < c->m->frames.n) {
		size_t n = c->m->frames.n;

		fs->e = xreallocarray(fs->e, st_mult(n, 2), sizeof(*fs->e));
		for (size_t i = 2 * fs->nframes; i < 2 * n; i++)
			fs->e[i].from = NO_MEMO;
		fs->nframes = n;
	}
	memset(fs->found, 0, fs->words * sizeof(*fs->found));
	GROW(fs->pos_set, s->depth, fs->pos_alloc);
	fs->pos_of = NULL;
	for (uint32_t i = 0; i < s->depth; i++) {
		struct scan_memo *e = &fs->e[2 * (size_t)s->frames[i] + (i > 0)];
		const struct frame *f;
		uint32_t from;

		if (i + 4 < s->depth)
			prefetch(&fs->e[2 * (size_t)s->frames[i + 4] + 1]);
		if (i) {
			/* The separator: the same few states, mostly. */
			if (st != fs->sep_from) {
				memset(fs->tmp, 0, fs->words * sizeof(*fs->tmp));
				fs->sep_from = st;
				fs->sep_to = acm_feed(fs->a, st, " ", 1,
						      fs->tmp);
				fs->sep_set = set_of(fs, fs->tmp);
			}
			st = fs->sep_to;
			or_set(fs, fs->sep_set);
		}
		if (e->from == st) {
			/* Seen from this state. */
			st = e->to;
			or_set(fs, e->set);
			fs->pos_set[i] = e->set;
			continue;
		}
		f = frame_get(&c->m->frames, s->frames[i]);
		from = st;
		memset(fs->tmp, 0, fs->words * sizeof(*fs->tmp));
		if (frame_nlogical(f) == 1) {
			/* (Its one name matched where it is, not copied.) */
			size_t len;
			const char *text = frame_whole(&c->what, f, field, &len);

			st = acm_feed(fs->a, st, text, len, fs->tmp);
		} else {
			/* Its logical frames, inlined ones first, as joined. */
			for (uint32_t k = 0; k < frame_nlogical(f); k++) {
				if (k)
					st = acm_feed(fs->a, st, " ", 1,
						      fs->tmp);
				frame_text(&c->what, f, k, field);
				st = acm_feed(fs->a, st, c->what.buf,
					      c->what.len, fs->tmp);
			}
		}
		for (size_t w = 0; w < fs->words; w++)
			fs->found[w] |= fs->tmp[w];
		fs->pos_set[i] = set_of(fs, fs->tmp);
		if (from < NO_MEMO && st < NO_MEMO) {
			e->from = (uint16_t)from;
			e->to = (uint16_t)st;
			e->set = fs->pos_set[i];
		}
	}
	fs->pos_of = s;
	return fs->found;
}

/* The current bucket's matching looked at its first N frames, and at
 * its end too if END. */
static void used(struct classifier *c, uint32_t n, bool end)
{
	if (n > c->used)
		c->used = n;
	c->used_end |= end;
}

/*
 * The joined field of the current bucket, built as far as asked: at
 * least MIN bytes of it, or all of it (*WHOLE).  Each call goes on from
 * where the last one stopped.
 */
static void fill_start(void *ctx, int field, size_t min, const char **s,
		       size_t *len, bool *whole)
{
	struct classifier *c = ctx;
	bool stack = field == COND_STACK;
	struct strbuf *sb = stack ? &c->stack : &c->source;
	struct join_state *j = &c->join[stack ? 0 : 1];
	const struct stack *st = c->cur->stack;

	if (field != COND_STACK && field != COND_SOURCE) {
		*s = "";
		*len = 0;
		*whole = true;
		return;
	}
	while (!j->done && sb->len < min) {
		const struct frame *f;

		if (j->frame == st->depth) {
			j->done = true;
			break;
		}
		f = frame_get(&c->m->frames, st->frames[j->frame]);
		if (sb->len)
			sb_addch(sb, ' ');
		frame_add(sb, f, j->k, field);
		if (++j->k == frame_nlogical(f)) {
			j->k = 0;
			j->frame++;
		}
	}
	if (j->frame == st->depth)
		j->done = true;
	used(c, j->frame + (j->k > 0), j->done);
	*s = sb_str(sb);
	*len = sb->len;
	*whole = j->done;
}

/* The joined strings, built only when a pattern must see them. */
static void fill_subject(void *ctx, int field, const char **s, size_t *len)
{
	bool whole;

	fill_start(ctx, field, SIZE_MAX, s, len, &whole);
}

/* The prefilter's literals in a field, scanned only when a rule asks. */
static const uint64_t *scan_field(void *ctx, int field)
{
	struct classifier *c = ctx;

	if (field != COND_STACK && field != COND_SOURCE)
		return NULL;
	/* (A clean stack's: see struct classifier.) */
	if (c->clean)
		return c->clean_scan[field == COND_STACK ? 0 : 1].synth;
	used(c, c->cur->stack->depth, true);
	return scan_stack(c, field, c->cur->stack);
}

/* Starts longer than this are not remembered (see prefix_add). */
#define PREFIX_MAX 4

/*
 * The same, of the field itself, a clean stack's too; but NULL (not
 * yet) while what the matching looked at is a start short enough to be
 * remembered: the scan looks at all of it.
 */
static const uint64_t *scan_own(void *ctx, int field)
{
	struct classifier *c = ctx;

	if (field != COND_STACK && field != COND_SOURCE)
		return NULL;
	if (!c->prefix_off && c->used + c->used_end <= PREFIX_MAX)
		return NULL;
	used(c, c->cur->stack->depth, true);
	return scan_stack(c, field, c->cur->stack);
}

/* What a head-clean stack's field cannot hold (see struct
 * classifier): the looping head patterns' key literals. */
static const uint64_t *scan_head(void *ctx, int field)
{
	struct classifier *c = ctx;

	if (!c->head_clean || (field != COND_STACK && field != COND_SOURCE))
		return NULL;
	return c->head_scan[field == COND_STACK ? 0 : 1].synth;
}

#define SEQ_UNKNOWN 0xff

/*
 * Does the current bucket's FIELD hold PAT's pieces?  Frame by frame,
 * each frame's answer remembered: a million stacks over a few hundred
 * thousand frames ask PCRE2 once per frame, and are never joined.  A
 * stack just scanned for literals says most frames' answers without
 * the memo (l2's ".*(WTF::|WebCore::|WebKit::).*v8::.*": a frame with
 * neither holds nothing of it): each frame's first ask was a miss, and
 * each thread asked its own.
 */
static int seq_field(void *ctx, int field, const struct pattern *pat,
		     struct matcher *mt, const char *what,
		     const struct subject *subj)
{
	struct classifier *c = ctx;
	const struct stack *st = c->cur->stack;
	uint32_t k = pat->seq->k, j = 0;
	struct seq_memo *sm;
	const struct frame_scan *fs = &c->scan[field == COND_STACK ? 0 : 1];
	/* (The stack's frames' literals, where it was scanned: whatever
	 * state the scan met a frame in, those a piece needs are its
	 * text's.) */
	const uint32_t *sets = fs->pos_of == st ? fs->pos_set : NULL;

	if (!c->seq)
		c->seq = xcalloc(c->p->nseq, sizeof(*c->seq));
	sm = &c->seq[pat->seq->id];
	if (sm->nframes < c->m->frames.n) {
		size_t n = c->m->frames.n;

		sm->st = xreallocarray(sm->st, st_mult(n, k), 1);
		memset(sm->st + sm->nframes * k, SEQ_UNKNOWN,
		       (n - sm->nframes) * k);
		sm->nframes = n;
	}
	if (!st->depth) {
		int r = pattern_seq_step(c->p, mt, pat, 0, "", 0, what, subj);

		used(c, 0, true);
		return r < 0 ? -1 : (uint32_t)r == k;
	}
	/* (The frames' entries are far apart: all asked for at once.) */
	for (uint32_t i = 0; !sets && i < st->depth; i++)
		prefetch(&sm->st[(size_t)st->frames[i] * k]);
	for (uint32_t i = 0; i < st->depth && j < k; i++) {
		/* (All pieces found, or the end: what it looked at.) */
		used(c, i + 1, i + 1 == st->depth);
		uint8_t *e;

		if (sets) {
			int r = pattern_seq_literals(
				pat, j, fs->sets + (size_t)sets[i] * fs->words);

			if (r >= 0) {
				j = (uint32_t)r;
				continue;
			}
		}
		e = &sm->st[(size_t)st->frames[i] * k + j];

		if (*e == SEQ_UNKNOWN) {
			const struct frame *f =
				frame_get(&c->m->frames, st->frames[i]);
			size_t len;
			const char *text = frame_whole(&c->what, f, field,
						       &len);
			int r;

			r = pattern_seq_step(c->p, mt, pat, j, text, len, what,
					     subj);
			if (r < 0)
				return -1;
			*e = (uint8_t)r;
		}
		j = *e;
	}
	return j == k;
}

static const char *describe_bucket(void *ctx)
{
	struct classifier *c = ctx;

	sb_reset(&c->what);
	sb_addf(&c->what, "the stack of bucket %" PRIu64, c->cur->id);
	return c->what.buf;
}

/* The stack-derived fields of SUBJ, built or scanned as rules ask. */
static void stack_subject(struct classifier *c, const struct bucket *b,
			  struct subject *subj)
{
	c->cur = b;
	c->used = 0;
	c->used_end = false;
	c->clean = false;
	c->head_clean = false;
	for (int i = 0; i < 2; i++) {
		c->join[i] = (struct join_state){ 0, 0, false };
		sb_reset(i ? &c->source : &c->stack);
	}
	subj->fill = fill_subject;
	subj->fill_start = fill_start;
	subj->scan = scan_field;
	subj->scan_own = scan_own;
	subj->scan_head = scan_head;
	subj->seq = seq_field;
	subj->describe = describe_bucket;
	subj->ctx = c;
}

/* The slot of the text (FUNC, FILE) in C's table: its own, or the
 * empty one where it goes. */
static struct canon_slot *text_slot(struct classifier *c, const char *func,
				    const char *file)
{
	size_t k = (size_t)hash_u64((uintptr_t)func * 0x9E3779B97F4A7C15ULL ^
				    (uintptr_t)file) &
		   c->texts_mask;

	while (c->texts[k].id &&
	       (c->texts[k].func != func || c->texts[k].file != file))
		k = (k + 1) & c->texts_mask;
	return &c->texts[k];
}

static void texts_grow(struct classifier *c)
{
	struct canon_slot *old = c->texts;
	size_t n = old ? c->texts_mask + 1 : 0, cap = n ? 2 * n : 4096;

	c->texts = xcalloc_table(cap, sizeof(*c->texts));
	c->texts_mask = cap - 1;
	for (size_t i = 0; i < n; i++)
		if (old[i].id)
			*text_slot(c, old[i].func, old[i].file) = old[i];
	free(old);
}

/*
 * The canonical ids of the frames from NCANON to N (see struct
 * classifier).  Rules read a frame's text alone: its name in the stack
 * field and its file in the source field (frame_add_func,
 * frame_add_file), both interned, so equal pointers are equal texts.
 * A frame of inlined functions, or without a name (its address is its
 * text), is its own.  A frame named after this keeps its own id: any
 * frame of the same text may stand for another, and its own always
 * can.
 */
static void canon_more(struct classifier *c, size_t n)
{
	if (c->ncanon >= n || c->canon_borrowed)
		return;
	c->canon = xreallocarray(c->canon, n, sizeof(*c->canon));
	for (size_t id = c->ncanon; id < n; id++) {
		const struct frame *f = frame_get(&c->m->frames, (uint32_t)id);
		struct canon_slot *sl;

		c->canon[id] = (uint32_t)id;
		if (!f->func || f->ninline)
			continue;
		if (2 * (c->ntexts + 1) > (c->texts ? c->texts_mask + 1 : 0))
			texts_grow(c);
		sl = text_slot(c, f->func, f->file);
		if (sl->id) {
			c->canon[id] = sl->id - 1;
			continue;
		}
		*sl = (struct canon_slot){ f->func, f->file, (uint32_t)id + 1 };
		c->ntexts++;
	}
	c->ncanon = n;
}

/* The canonical ids of every frame so far, where the tries are on:
 * before buckets are classified or split between threads, on the
 * caller's thread alone (its helpers read them). */
static void canon_ready(struct classifier *c)
{
	if (!c->prefix_off)
		canon_more(c, c->m->frames.n);
}

/* The id frame ID's column is remembered by (see struct classifier). */
static inline uint32_t canon_of(const struct classifier *c, uint32_t id)
{
	return id < c->ncanon ? c->canon[id] : id;
}

#define PREFIX_END UINT32_MAX
#define PREFIX_COL 0x80000000u

/*
 * The entry of (NODE, FRAME) in trie T: 0 if none.  The root's are in
 * an array by frame id (most stacks are decided on their first frame:
 * a hundred thousand of them), the rest in the map.
 */
static uint32_t prefix_get(const struct prefix_trie *t, uint32_t node,
			   uint32_t frame)
{
	void *v;

	if (!node && frame < t->nroot)
		return t->root[frame];
	if (!node && frame != PREFIX_END)
		return 0;
	v = hashmap_get(&t->map, hash_u64((uint64_t)node << 32 | frame),
			NULL, NULL);
	return (uint32_t)(uintptr_t)v;
}

static void prefix_put(const struct classifier *c, struct prefix_trie *t,
		       uint32_t node, uint32_t frame, uint32_t v)
{
	if (!node && frame != PREFIX_END) {
		if (frame >= t->nroot) {
			size_t n = c->m->frames.n > frame ? c->m->frames.n
							  : (size_t)frame + 1;

			t->root = xrecallocarray(t->root, t->nroot, n,
						 sizeof(*t->root));
			t->nroot = n;
		}
		t->root[frame] = v;
		return;
	}
	hashmap_put(&t->map, hash_u64((uint64_t)node << 32 | frame),
		    (void *)(uintptr_t)v);
}

/* The column the first frames of S decided before in T, or -1. */
static int prefix_find(const struct classifier *c,
		       const struct prefix_trie *t, const struct stack *s)
{
	uint32_t node = 0;

	for (uint32_t i = 0; i <= s->depth; i++) {
		uint32_t v = prefix_get(t, node,
					i < s->depth ? canon_of(c, s->frames[i])
						     : PREFIX_END);

		if (!v)
			return -1;
		if (v & PREFIX_COL)
			return (int)(v & ~PREFIX_COL);
		node = v;
	}
	return -1;
}

/*
 * The current bucket's stack decided COL on what it looked at: into T.
 * Only a short start is worth remembering: what looked at the whole
 * stack (a pattern that begins with ".*") is a stack's own.
 */
static void prefix_add(struct classifier *c, struct prefix_trie *t,
		       const struct stack *s, int col)
{
	uint32_t node = 0, n = c->used + c->used_end;

	if (n == 0 || n > PREFIX_MAX || t->nodes >= PREFIX_COL - 1)
		return;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t frame =
			i < s->depth ? canon_of(c, s->frames[i]) : PREFIX_END;
		uint32_t v = prefix_get(t, node, frame);

		if (i + 1 == n) {
			if (!v)
				prefix_put(c, t, node, frame,
					   PREFIX_COL | (uint32_t)col);
			return;
		}
		if (v & PREFIX_COL)
			return; /* (decided on less: cannot be) */
		if (!v) {
			v = ++t->nodes;
			prefix_put(c, t, node, frame, v);
		}
		node = v;
	}
}

const char *bucket_type_subject(const struct bucket *b)
{
	/*
	 * An unresolved type (its address) is matched by the mangled name
	 * the producer recorded, as the original did.
	 */
	const char *t = bucket_type_sym(b) ? bucket_type_sym(b)
					   : "no typeinfo";

	return starts_with(t, "0x") ? bucket_type_name(b) : t;
}

#define CLEAN_UNKNOWN UINT16_MAX

/*
 * The automaton of the key literals of the malloc rules' looping head
 * patterns on FIELD into HS, and what a head-clean stack cannot hold
 * (see struct classifier).  Only the key group: a pattern fails where
 * one group is missing, and the others may be everywhere (the
 * first-Python-frame rule's " ").
 */
static void head_init(struct classifier *c, int field, struct clean_scan *hs)
{
	const struct policy *p = c->p;
	const struct acm *all = policy_prefilter(p, field);

	for (size_t r = 0; all && r < p->nrules; r++) {
		const struct pattern *pat = p->rules[r].cond[field];
		struct literals l;

		if (p->rules[r].alloc != RULE_MALLOC || !pat || !pat->loops)
			continue;
		/* (The prefilter's literals, as it found them.) */
		if (!regex_literals(pat->text, pat->len, pat->lit_min, &l))
			BUG("'%s': its literals are gone", pat->text);
		if (!hs->a) {
			hs->a = acm_new();
			hs->synth = xmalloc(acm_words(all) * sizeof(uint64_t));
			memset(hs->synth, 0xff, acm_words(all) * sizeof(uint64_t));
		}
		for (size_t k = 0; k < l.n; k++)
			if (l.group[k] == pat->key_group)
				acm_add(hs->a, l.v[k], l.len[k]);
		for (size_t k = 0; k < pat->nlits; k++)
			if (pat->lit_group[k] == pat->key_group)
				hs->synth[pat->lits[k] / 64] &=
					~(1ULL << (pat->lits[k] % 64));
		literals_free(&l);
	}
	if (!hs->a)
		return;
	c->head_any = true;
	acm_build(hs->a);
	hs->tmp = xcalloc(acm_words(hs->a), sizeof(uint64_t));
	hs->sep0 = acm_feed(hs->a, 0, " ", 1, hs->tmp);
}

/* The automata of C's whole-field malloc patterns (see struct
 * classifier), and what a clean stack's scan reads as. */
static void clean_init(struct classifier *c)
{
	const struct policy *p = c->p;

	c->clean_done = true;
	for (int i = 0; i < 2; i++) {
		int f = i ? COND_SOURCE : COND_STACK;
		struct clean_scan *cs = &c->clean_scan[i];
		const struct acm *all = policy_prefilter(p, f);
		size_t words = all ? acm_words(all) : 0;

		if (all) {
			cs->synth = xmalloc(words * sizeof(uint64_t));
			memset(cs->synth, 0xff, words * sizeof(uint64_t));
		}
		for (size_t r = 0; r < p->nrules; r++) {
			const struct pattern *pat = p->rules[r].cond[f];
			struct literals l;

			/* (One without literals always runs on the whole
			 * field, which says it looked at it all.) */
			if (p->rules[r].alloc != RULE_MALLOC || !pat ||
			    pat->head || pat->seq || !pat->nlits)
				continue;
			/* (The prefilter's literals, as it found them.) */
			if (!regex_literals(pat->text, pat->len, 3, &l))
				BUG("'%s': its literals are gone", pat->text);
			if (!cs->a)
				cs->a = acm_new();
			for (size_t k = 0; k < l.n; k++)
				acm_add(cs->a, l.v[k], l.len[k]);
			for (size_t k = 0; k < pat->nlits; k++)
				cs->synth[pat->lits[k] / 64] &=
					~(1ULL << (pat->lits[k] % 64));
			literals_free(&l);
		}
		if (!cs->a)
			continue;
		acm_build(cs->a);
		cs->tmp = xcalloc(acm_words(cs->a), sizeof(uint64_t));
		cs->sep0 = acm_feed(cs->a, 0, " ", 1, cs->tmp);
	}
	for (int i = 0; i < 2; i++)
		head_init(c, i ? COND_SOURCE : COND_STACK, &c->head_scan[i]);
}

/*
 * Frame F's logical frames, as joined, through CS's automaton from state
 * ST: the state after them, and whether a literal was found (*FOUND).
 */
static uint32_t text_feed(const struct acm *a, uint32_t st, const char *text,
			  size_t len, uint64_t *tmp, bool *found)
{
	size_t words = acm_words(a);

	memset(tmp, 0, words * sizeof(*tmp));
	st = acm_feed(a, st, text, len, tmp);
	*found = false;
	for (size_t w = 0; w < words; w++)
		*found |= tmp[w] != 0;
	return st;
}

static uint32_t clean_feed(struct classifier *c, struct clean_scan *cs,
			   int field, const struct frame *f, uint32_t st,
			   bool *found)
{
	size_t len;
	/* (Its logical frames joined, as in the field.) */
	const char *text = frame_whole(&c->what, f, field, &len);

	return text_feed(cs->a, st, text, len, cs->tmp, found);
}

/* Room in CS's memo for N frames, the new ones unknown. */
static void clean_room(struct clean_scan *cs, size_t n)
{
	if (cs->nframes >= n)
		return;
	cs->e = xreallocarray(cs->e, st_mult(n, 2), sizeof(*cs->e));
	for (size_t i = 2 * cs->nframes; i < 2 * n; i++)
		cs->e[i] = CLEAN_UNKNOWN;
	for (int k = 0; k < 2; k++)
		cs->plain[k] = xrecallocarray(cs->plain[k],
					      (cs->nframes + 63) / 64,
					      (n + 63) / 64, sizeof(uint64_t));
	cs->nframes = n;
}

/* Frame ID's entry K (0: from the first state, 1: after a separator)
 * in CS: TO and FOUND, as clean_feed said. */
static void clean_note(struct clean_scan *cs, uint32_t id, int k,
		       uint32_t to, bool found)
{
	/* (Too many states to keep: left to be fed as it comes.) */
	if (to >= CLEAN_UNKNOWN / 2)
		return;
	cs->e[2 * (size_t)id + k] = (uint16_t)(to << 1 | found);
	if (!to && !found)
		cs->plain[k][id / 64] |= 1ULL << (id % 64);
}

/*
 * Does FIELD of S hold none of CS's literals?  A frame's answer from
 * the automaton's first state and from the one after a separator (most
 * frames start from one of those) is kept: two bytes, and a bit for the
 * common answer (none found, back to the first state), so that a
 * hundred thousand frames stay in the nearest cache.
 */
static bool field_clean(struct classifier *c, struct clean_scan *cs,
			int field, const struct stack *s)
{
	uint32_t st = 0;
	bool found;

	if (!cs->borrowed)
		clean_room(cs, c->m->frames.n);
	for (uint32_t i = 0; i < s->depth; i++) {
		uint32_t id = s->frames[i];
		uint16_t *e;

		if (i) {
			if (st) {
				memset(cs->tmp, 0, acm_words(cs->a) *
							   sizeof(*cs->tmp));
				st = acm_feed(cs->a, st, " ", 1, cs->tmp);
				for (size_t w = 0; w < acm_words(cs->a); w++)
					if (cs->tmp[w])
						return false;
			} else {
				st = cs->sep0;
			}
		}
		/* (Past a borrowed memo: frames added since, each fed.) */
		if ((st != 0 && st != cs->sep0) || id >= cs->nframes) {
			st = clean_feed(c, cs, field,
					frame_get(&c->m->frames, s->frames[i]),
					st, &found);
			if (found)
				return false;
			continue;
		}
		if (cs->plain[st != 0][id / 64] >> (id % 64) & 1) {
			st = 0;
			continue;
		}
		e = &cs->e[2 * (size_t)id + (st != 0)];
		if (*e == CLEAN_UNKNOWN) {
			uint32_t to = clean_feed(
				c, cs, field,
				frame_get(&c->m->frames, s->frames[i]), st,
				&found);

			/* (A borrowed memo is read only: its unknown
			 * entries are those too big to keep.) */
			if (!cs->borrowed)
				clean_note(cs, id, st != 0, to, found);
			if (*e == CLEAN_UNKNOWN) {
				if (found)
					return false;
				st = to;
				continue;
			}
		}
		if (*e & 1)
			return false;
		st = *e >> 1;
	}
	return true;
}

/* Does S hold none of the literals of CS's automata (by field:
 * COND_STACK, COND_SOURCE)? */
static bool fields_clean(struct classifier *c, struct clean_scan *cs,
			 const struct stack *s)
{
	for (int i = 0; i < 2; i++)
		if (cs[i].a && !field_clean(c, &cs[i],
					    i ? COND_SOURCE : COND_STACK, s))
			return false;
	return true;
}

/* Are all frames of S plain in every clean scan (see struct
 * classifier)? */
static bool all_plain(const struct classifier *c, const struct stack *s)
{
	for (uint32_t i = 0; i < s->depth; i++) {
		uint32_t id = s->frames[i];

		if (id >= c->nall_plain ||
		    !(c->all_plain[i > 0][id / 64] >> (id % 64) & 1))
			return false;
	}
	return true;
}

/* Is S clean, and head-clean (see struct classifier)?  The latter is
 * false without such rules: those stacks keep trie[0] and trie[1]. */
static void stack_clean(struct classifier *c, const struct stack *s)
{
	if (!c->clean_done)
		clean_init(c);
	/* (What each scan would say of such a stack.) */
	if (all_plain(c, s)) {
		c->clean = true;
		c->head_clean = c->head_any;
		return;
	}
	c->clean = fields_clean(c, c->clean_scan, s);
	c->head_clean = c->head_any && fields_clean(c, c->head_scan, s);
}

/* The column of bucket B, without the memo. */
static int classify_stack(struct classifier *c, const struct bucket *b)
{
	struct subject subj;
	struct prefix_trie *trie;
	int col;

	if (c->malloc_all >= 0)
		return c->malloc_all;
	memset(&subj, 0, sizeof(subj));
	stack_subject(c, b, &subj);
	if (c->p->uses[COND_TYPE]) {
		const char *t = bucket_type_subject(b);

		subj.s[COND_TYPE] = t;
		subj.len[COND_TYPE] = strlen(t);
	}
	if (!c->prefix_off)
		stack_clean(c, b->stack);
	trie = &c->trie[c->clean | c->head_clean << 1];
	if (!c->prefix_off && (col = prefix_find(c, trie, b->stack)) >= 0)
		return col;
	col = c->mt ? policy_match_with(c->p, c->mt, RULE_MALLOC, &subj, NULL)
		    : policy_match(c->p, RULE_MALLOC, &subj, NULL);
	if (col == -1 && !(c->mt && c->mt->quiet))
		return error("%s: no rule matches bucket %" PRIu64,
			     c->p->path, b->id) - 1;
	if (col < 0)
		return -2;
	if (!c->prefix_off)
		prefix_add(c, trie, b->stack, col);
	return col;
}

/* Room in the memo for bucket index N - 1: twice the room there was,
 * or N where that is more (all of a model's buckets, made at once and
 * in huge pages, not doubled up to them and copied). */
static void memo_room(struct classifier *c, size_t n)
{
	size_t want = c->nbucket_col ? st_mult(c->nbucket_col, 2) : 1024;

	if (n <= c->nbucket_col)
		return;
	if (want < n)
		want = n;
	c->bucket_col = xreserve_huge(c->bucket_col, c->nbucket_col, want,
				      sizeof(*c->bucket_col));
	memset(c->bucket_col + c->nbucket_col, 0,
	       (want - c->nbucket_col) * sizeof(*c->bucket_col));
	c->nbucket_col = want;
}

int classify_malloc(struct classifier *c, const struct bucket *b)
{
	int col;

	if (b->index < c->nbucket_col && c->bucket_col[b->index] > 0)
		return c->bucket_col[b->index] - 1;
	canon_ready(c);
	col = classify_stack(c, b);
	if (col < 0)
		return col;
	memo_room(c, (size_t)b->index + 1);
	c->bucket_col[b->index] = col + 1;
	return col;
}

/* ---- every core ---- */

/* Fewer new buckets than this: not worth a thread. */
#define FEW 8192

struct share {
	struct classifier *c;
	const uint32_t *v;       /* bucket indexes */
	size_t from, to;         /* its part of them */
};

/*
 * Bucket I of V (of N) is classified next: fetch what the ones after it
 * will need, a step further each (the bucket, its stack, the memo
 * entries of the stack's frames).  A stack is too short for its own
 * frames to be fetched ahead of each other in time.
 */
/* Frames whose files a source field's start is built of, ahead (see
 * source_ahead). */
#define SOURCE_AHEAD 8
/*
 * How many buckets ahead each step of the chain is asked for: the
 * bucket, its stack, the memo entries of its frames, the frames'
 * pointers, the frames, its first frame's entries at the tries' roots
 * (see classify_ahead and source_ahead).  A bucket decided at a trie's
 * root takes a few dozen nanoseconds, less than one miss: one and two
 * ahead, each load still waited for the one before it (gperf-1m of make
 * bench: classifying 137 -> 130 ms, medians of 11; further ahead than
 * this, no change).
 */
#define AHEAD_BUCKET 6
#define AHEAD_STACK 4
#define AHEAD_ENTRIES 2
#define AHEAD_FRAME_PTRS 2
#define AHEAD_FRAMES 1
#define AHEAD_ROOT 1

/*
 * The same for a policy that looks at source files: those are not in
 * the scan's memo, and a field's start is built of the frames
 * themselves, each a miss (the linux policy's Python rules read a few of
 * every stack's).  A later bucket's frame pointers, then a nearer
 * one's frames, all asked for at once rather than one after the other;
 * and the later one's memo entries of the source field.
 */
static void source_ahead(const struct classifier *c, const uint32_t *v,
			 size_t i, size_t n)
{
	struct bucket *const *b = c->m->buckets.v;
	struct frame *const *fv = c->m->frames.v;
	const struct frame_scan *fs = &c->scan[1];
	const struct stack *st;

	if (i + AHEAD_FRAMES >= n)
		return;
	st = b[v[i + AHEAD_FRAMES]]->stack;
	for (uint32_t k = 0; k < st->depth && k < SOURCE_AHEAD; k++)
		prefetch(fv[st->frames[k]]);
	if (i + AHEAD_FRAME_PTRS >= n)
		return;
	st = b[v[i + AHEAD_FRAME_PTRS]]->stack;
	for (uint32_t k = 0; k < st->depth && k < SOURCE_AHEAD; k++)
		prefetch(&fv[st->frames[k]]);
	for (uint32_t k = 0; fs->e && k < st->depth; k++)
		if (st->frames[k] < fs->nframes)
			prefetch(&fs->e[2 * (size_t)st->frames[k] + (k > 0)]);
}

static void classify_ahead(const struct classifier *c, const uint32_t *v,
			   size_t i, size_t n)
{
	struct bucket *const *b = c->m->buckets.v;
	const struct frame_scan *fs = &c->scan[0];

	if (i + AHEAD_BUCKET < n)
		prefetch(b[v[i + AHEAD_BUCKET]]);
	if (i + AHEAD_STACK < n) {
		const char *st = (const char *)b[v[i + AHEAD_STACK]]->stack;

		prefetch(st);
		prefetch(st + 64);
	}
	if (i + AHEAD_ENTRIES < n) {
		const struct stack *st = b[v[i + AHEAD_ENTRIES]]->stack;

		/* (Its first frame's canonical id, for the tries' roots.) */
		if (st->depth && st->frames[0] < c->ncanon)
			prefetch(&c->canon[st->frames[0]]);
		/* (A frame's entry where it starts the stack, else where it
		 * follows a separator: see scan_stack.) */
		for (uint32_t k = 0; fs->e && k < st->depth; k++)
			if (st->frames[k] < fs->nframes)
				prefetch(&fs->e[2 * (size_t)st->frames[k] +
						(k > 0)]);
	}
	if (i + AHEAD_ROOT < n && !c->prefix_off) {
		const struct stack *st = b[v[i + AHEAD_ROOT]]->stack;
		uint32_t f0 = st->depth ? canon_of(c, st->frames[0]) : 0;

		/* (Its first frame's entry at the tries' roots: which trie
		 * is known once its frames are scanned.) */
		for (size_t t = 0; st->depth && t < ARRAY_SIZE(c->trie); t++)
			if (f0 < c->trie[t].nroot)
				prefetch(&c->trie[t].root[f0]);
	}
	if (c->p->uses[COND_SOURCE])
		source_ahead(c, v, i, n);
}

static void classify_shares(struct share *s)
{
	struct classifier *c = s->c;
	struct matcher own, *was = c->mt;

	/* This thread's classifier matches with the policy's own scratch,
	 * quietly too: classify_malloc says what failed, once. */
	matcher_of_policy(&own, c->p, true);
	if (!c->mt)
		c->mt = &own;
	for (size_t i = s->from; i < s->to; i++) {
		int col;

		classify_ahead(c, s->v, i, s->to);
		col = classify_stack(c, c->m->buckets.v[s->v[i]]);

		/* (0: not done; classify_malloc will, and say why.) */
		c->bucket_col[s->v[i]] = col < 0 ? 0 : col + 1;
	}
	c->mt = was;
}

/* Share I of the pool's (CTX: the shares): on this thread, with this
 * thread's classifier. */
static void classify_share(void *ctx, size_t i, bool here)
{
	struct share *shares = ctx;

	if (here)
		shares[i].c = shares[0].c;
	classify_shares(&shares[i]);
}

/* The part of NT (see by_first_frame) that bucket B goes to: by its
 * first frame's text (canon_more made ready). */
static uint8_t first_frame_part(const struct classifier *c,
				const struct bucket *b, size_t nt)
{
	const struct stack *s = b->stack;

	return (uint8_t)(s->depth ? canon_of(c, s->frames[0]) % nt : 0);
}

/*
 * The N buckets of V in NT parts, by their stacks' first frames (PART[I]
 * is V[I]'s, from first_frame_part; part K from STARTS[K]): the columns
 * the first frames decide are remembered by each thread's classifier, so
 * that a first frame matched by one thread is not matched again by
 * another.  V and PART are freed.  (The parts are found as V is made, a
 * bucket at hand: found here, they were two loads of a million buckets
 * and stacks each, twice over, a tenth of a million-stack profile's
 * classification, on one core.)
 */
static uint32_t *by_first_frame(uint32_t *v, uint8_t *part, size_t n,
				size_t nt, size_t *starts)
{
	uint32_t *out = xreserve_huge(NULL, 0, n ? n : 1, sizeof(*out));
	size_t at[16] = { 0 };

	for (size_t i = 0; i < n; i++)
		at[part[i]]++;
	for (size_t k = 0, sum = 0; k < nt; k++) {
		starts[k] = sum;
		sum += at[k];
		at[k] = starts[k];
	}
	starts[nt] = n;
	for (size_t i = 0; i < n; i++)
		out[at[part[i]]++] = v[i];
	FREE_ALL(v, part);
	return out;
}

struct clean_part {
	struct classifier *c;
	size_t from, to;  /* frame ids, FROM a multiple of 64 */
	size_t parts;
	bool copies;      /* the second pass (see clean_fill) */
};

/* Frame ID's clean entries, those of the frame of the same text that
 * stands for it (see canon_more), filled before. */
static void clean_copy(struct classifier *c, uint32_t id, uint32_t from)
{
	for (int k = 0; k < 4; k++) {
		struct clean_scan *cs = scan_n(c, k);

		if (!cs->a)
			continue;
		for (int j = 0; j < 2; j++) {
			uint16_t e = cs->e[2 * (size_t)from + j];

			cs->e[2 * (size_t)id + j] = e;
			/* (As clean_note marks it: not from FROM's word,
			 * which another thread's copies may be writing.) */
			if (e == 0)
				cs->plain[j][id / 64] |= 1ULL << (id % 64);
		}
	}
}

/*
 * Part I of the frames' clean entries: each frame's text built once,
 * fed to each scan of its field, from the first state and (where a
 * separator leaves another) from the one after a separator.  Only a
 * text's first frame is fed; in a second pass (COPIES) the others take
 * its entries (a function's call sites are one text: gperf-pool of make
 * bench has 399,074 frames of 37,599 named texts, and feeding them all
 * was a sixth of its classification's samples).
 */
static void clean_fill(void *ctx, size_t i, bool here)
{
	const struct clean_part *cp = ctx;
	struct classifier *c = cp->c;
	size_t span = (cp->to - cp->from + cp->parts - 1) / cp->parts;
	size_t lo, hi, words = 0;
	struct strbuf sb = STRBUF_INIT;
	uint64_t *tmp;

	span = (span + 63) & ~(size_t)63;
	lo = cp->from + i * span;
	hi = lo + span < cp->to ? lo + span : cp->to;
	(void)here;
	if (cp->copies) {
		for (size_t id = lo; id < hi; id++) {
			uint32_t from = canon_of(c, (uint32_t)id);

			if (from != id)
				clean_copy(c, (uint32_t)id, from);
		}
		return;
	}
	for (int k = 0; k < 4; k++)
		if (scan_n(c, k)->a && acm_words(scan_n(c, k)->a) > words)
			words = acm_words(scan_n(c, k)->a);
	tmp = xcalloc(words ? words : 1, sizeof(*tmp));
	for (size_t id = lo; id < hi; id++) {
		const struct frame *f = frame_get(&c->m->frames, (uint32_t)id);

		if (canon_of(c, (uint32_t)id) != id)
			continue;
		for (int field = 0; field < 2; field++) {
			const char *text = NULL;
			size_t len = 0;

			for (int k = field; k < 4; k += 2) {
				struct clean_scan *cs = scan_n(c, k);
				uint32_t to;
				bool found;

				if (!cs->a)
					continue;
				if (!text)
					text = frame_whole(&sb, f, SCAN_FIELD(k),
							   &len);
				to = text_feed(cs->a, 0, text, len, tmp, &found);
				clean_note(cs, (uint32_t)id, 0, to, found);
				if (!cs->sep0)
					continue; /* (entry 1 never asked) */
				to = text_feed(cs->a, cs->sep0, text, len, tmp,
					       &found);
				clean_note(cs, (uint32_t)id, 1, to, found);
			}
		}
	}
	free(tmp);
	sb_release(&sb);
}

/*
 * C's bits of frames plain in every clean scan, from the word of the
 * first frame it lacks to N, from the scans' own (a bit past N may be
 * set: all_plain looks below NALL_PLAIN only).  After a separator a scan
 * goes on from its entry 1, or from entry 0 where the separator leaves
 * it in its first state (see field_clean).
 */
static void all_plain_fill(struct classifier *c, size_t n)
{
	size_t w0 = c->nall_plain / 64, words = (n + 63) / 64;

	for (int k = 0; k < 2; k++)
		c->all_plain[k] = xrecallocarray(c->all_plain[k],
						 (c->nall_plain + 63) / 64,
						 words, sizeof(uint64_t));
	for (size_t w = w0; w < words; w++) {
		uint64_t p0 = ~0ULL, p1 = ~0ULL;

		for (int k = 0; k < 4; k++) {
			const struct clean_scan *cs = scan_n(c, k);

			if (!cs->a)
				continue;
			p0 &= cs->plain[0][w];
			p1 &= cs->plain[cs->sep0 != 0][w];
		}
		c->all_plain[0][w] = p0;
		c->all_plain[1][w] = p1;
	}
	c->nall_plain = n;
}

/* Fewer new frames than this: their entries filled on this core. */
#define CLEAN_AHEAD 4096

/*
 * Before C and its helpers classify on every core: the clean scans'
 * entries for all frames, filled in frame order on every core (asked
 * for as stacks came, each was a miss, and each thread filled its own:
 * a frame fed five times on average, gperf-pool of make bench), and
 * lent to the helpers.  Every one is filled, however few are new: C
 * writes no entry while the helpers read them (those left unknown have
 * too many states to keep, and stay so).
 */
static void clean_ready(struct classifier *c, size_t nthreads)
{
	size_t n = c->m->frames.n, from = SIZE_MAX;
	struct clean_part cp;

	if (c->prefix_off)
		return;
	if (!c->clean_done)
		clean_init(c);
	for (int k = 0; k < 4; k++) {
		struct clean_scan *cs = scan_n(c, k);

		if (!cs->a)
			continue;
		if (cs->nframes < from)
			from = cs->nframes;
		clean_room(cs, n);
	}
	canon_more(c, n);
	if (from < n) {
		size_t parts = n - from >= CLEAN_AHEAD ? nthreads : 1;

		cp = (struct clean_part){ c, from & ~(size_t)63, n, parts,
					  false };
		pool_run(parts, clean_fill, &cp);
		cp.copies = true;
		pool_run(parts, clean_fill, &cp);
	}
	if (c->nall_plain < n)
		all_plain_fill(c, n);
	for (size_t i = 0; i < c->nhelpers; i++) {
		struct classifier *h = &c->helpers[i];

		h->canon = c->canon;
		h->ncanon = c->ncanon;
		h->canon_borrowed = true;
		h->clean_done = true;
		h->head_any = c->head_any;
		h->all_plain[0] = c->all_plain[0];
		h->all_plain[1] = c->all_plain[1];
		h->nall_plain = c->nall_plain;
		h->all_borrowed = true;
		for (int k = 0; k < 4; k++) {
			struct clean_scan *hs = scan_n(h, k), *cs = scan_n(c, k);
			uint64_t *tmp = hs->tmp;

			if (!hs->borrowed && hs->a)
				BUG("a helper's own clean scan");
			*hs = *cs;
			hs->borrowed = true;
			hs->tmp = tmp;
			if (cs->a && !tmp)
				hs->tmp = xcalloc(acm_words(cs->a),
						  sizeof(*hs->tmp));
		}
	}
}

/* Classify the N buckets of V (indexes, marked -1, each in its PART of
 * NTHREADS: first_frame_part) with one thread per core, NTHREADS of
 * them; V and PART are freed. */
static void classify_marked(struct classifier *c, uint32_t *v, uint8_t *part,
			    size_t n, size_t nthreads)
{
	struct share shares[16];
	size_t starts[17];

	if (!c->helpers) {
		c->nhelpers = nthreads - 1;
		c->helpers = xcalloc(c->nhelpers, sizeof(*c->helpers));
		for (size_t i = 0; i < c->nhelpers; i++) {
			classifier_init(&c->helpers[i], c->p, c->m);
			c->helpers[i].mt = xmalloc(sizeof(*c->helpers[i].mt));
			matcher_init(c->helpers[i].mt, c->p);
			c->helpers[i].mt->quiet = true;
		}
	}
	/* (Helpers made for another count: DMPROF_THREADS changed.) */
	if (c->nhelpers + 1 != nthreads)
		for (size_t i = 0; i < n; i++)
			part[i] = first_frame_part(c, c->m->buckets.v[v[i]],
						   c->nhelpers + 1);
	clean_ready(c, nthreads);
	v = by_first_frame(v, part, n, c->nhelpers + 1, starts);
	for (size_t i = 0; i <= c->nhelpers; i++) {
		struct classifier *h = i ? &c->helpers[i - 1] : c;

		if (i) {
			h->bucket_col = c->bucket_col;
			h->nbucket_col = c->nbucket_col;
		}
		shares[i] = (struct share){ h, v, starts[i], starts[i + 1] };
	}
	pool_run(c->nhelpers + 1, classify_share, shares);
	free(v);
}

void classify_snapshot(struct classifier *c, const struct snapshot *snap)
{
	size_t nthreads = threads_wanted(), n = 0, alloc, palloc, fresh;
	uint32_t *v = NULL;
	uint8_t *part = NULL;

	/* (Every bucket of the model done already: see
	 * classify_buckets.) */
	if (nthreads < 2 || snap->nlines < FEW ||
	    c->all_upto == c->m->buckets.n)
		return;
	canon_ready(c);
	/* (Room for as many as there can be, in huge pages from a million
	 * buckets' 1 MiB of parts on: a page or two faulted, not hundreds
	 * as the arrays double, and copied.) */
	fresh = c->m->buckets.n - c->all_upto;
	alloc = palloc = snap->nlines < fresh ? snap->nlines : fresh;
	memo_room(c, c->m->buckets.n);
	v = xreserve_huge(NULL, 0, alloc, sizeof(*v));
	part = xreserve_huge(NULL, 0, alloc, sizeof(*part));
	/* The new buckets, each once (marked -1 while pending).  Buckets
	 * come in no order: the ones a few lines ahead are fetched
	 * meanwhile, the stacks of those nearer, and nearer still their
	 * first frames' canonical ids. */
	for (size_t i = 0; i < snap->nlines; i++) {
		const struct bucket *b = snap->lines[i].bucket;

		if (i + 16 < snap->nlines && snap->lines[i + 16].bucket)
			prefetch(snap->lines[i + 16].bucket);
		if (i + 8 < snap->nlines && snap->lines[i + 8].bucket)
			prefetch(snap->lines[i + 8].bucket->stack);
		if (i + 4 < snap->nlines && snap->lines[i + 4].bucket) {
			const struct stack *st =
				snap->lines[i + 4].bucket->stack;

			if (st->depth && st->frames[0] < c->ncanon)
				prefetch(&c->canon[st->frames[0]]);
		}

		if (!b || b->kind == ALLOC_MMAP)
			continue;
		if (c->bucket_col[b->index])
			continue;
		c->bucket_col[b->index] = -1;
		GROW(v, n + 1, alloc);
		GROW(part, n + 1, palloc);
		part[n] = first_frame_part(c, b, nthreads);
		v[n++] = b->index;
	}
	if (n < FEW) {
		for (size_t i = 0; i < n; i++)
			c->bucket_col[v[i]] = 0;
		FREE_ALL(v, part);
		return;
	}
	classify_marked(c, v, part, n, nthreads);
}

void classify_buckets(struct classifier *c)
{
	const struct model *m = c->m;
	size_t nthreads = threads_wanted(), n = 0;
	uint32_t *v;
	uint8_t *part;

	/* (Nothing to decide ahead when the first rule takes all: each
	 * bucket's column is had at once.) */
	if (c->malloc_all >= 0) {
		c->all_upto = m->buckets.n;
		return;
	}
	if (nthreads < 2 || m->buckets.n - c->all_upto < FEW)
		return;
	memo_room(c, m->buckets.n);
	canon_ready(c);
	v = xreallocarray(NULL, m->buckets.n - c->all_upto, sizeof(*v));
	part = xmalloc(m->buckets.n - c->all_upto);
	for (size_t i = c->all_upto; i < m->buckets.n; i++) {
		if (m->buckets.v[i]->kind == ALLOC_MMAP || c->bucket_col[i])
			continue;
		c->bucket_col[i] = -1;
		part[n] = first_frame_part(c, m->buckets.v[i], nthreads);
		v[n++] = (uint32_t)i;
	}
	classify_marked(c, v, part, n, nthreads);
	c->all_upto = m->buckets.n;
}

struct region_key {
	const struct bucket *b;
	const char *path;     /* interned */
	uint32_t perms;
	unsigned sharing;
	int hooked;
};

struct region_memo {
	struct region_key key;
	int col;
};

static bool region_eq(const void *item, const void *k)
{
	const struct region_memo *m = item;
	const struct region_key *key = k;

	return m->key.b == key->b && m->key.path == key->path &&
	       m->key.perms == key->perms && m->key.sharing == key->sharing &&
	       m->key.hooked == key->hooked;
}

static int classify_region(struct classifier *c, const struct bucket *b,
			   const struct vma *v, unsigned sharing, int hooked)
{
	struct region_key key;
	struct region_memo *memo;
	struct subject subj;
	uint64_t h;
	int col;

	memset(&key, 0, sizeof(key));
	key.b = b;
	key.path = v->name;
	memcpy(&key.perms, v->perms, 4);
	key.sharing = sharing;
	key.hooked = hooked;
	h = hash_bytes(&key, sizeof(key));
	memo = hashmap_get(&c->regions, h, region_eq, &key);
	if (memo)
		return memo->col;

	memset(&subj, 0, sizeof(subj));
	if (hooked)
		stack_subject(c, b, &subj);
	subj.s[COND_PATH] = v->name;
	subj.len[COND_PATH] = strlen(v->name);
	subj.s[COND_PERM] = v->perms;
	subj.len[COND_PERM] = 4;
	subj.sharing = sharing;
	sb_reset(&c->what);
	if (hooked)
		sb_addf(&c->what, "the stack of bucket %" PRIu64, b->id);
	else
		sb_addf(&c->what, "the mapping of '%s'", v->name);
	col = policy_match(c->p, hooked ? RULE_MMAP : RULE_UNHOOKED, &subj,
			   c->what.buf);
	if (col == -1)
		col = error("%s: no rule matches %s", c->p->path,
			    c->what.buf) - 1;
	if (col < 0)
		return col;
	memo = arena_alloc(&c->arena, sizeof(*memo));
	memo->key = key;
	memo->col = col;
	hashmap_put(&c->regions, h, memo);
	if (c->on_region)
		c->on_region(c->on_region_ctx, hooked ? b : NULL, v, sharing,
			     col);
	return col;
}

void classify_subject(const struct classifier *c, const struct bucket *b,
		      const struct vma *v, unsigned sharing,
		      struct subject *subj, struct subject_text *t)
{
	const struct policy *p = c->p;

	memset(subj, 0, sizeof(*subj));
	for (int i = 0; i < 2; i++) {
		sb_reset(&t->field[i]);
		t->starts[i].n = 0;
	}
	if (b) {
		/* (The function names always: they say where a match is.) */
		stack_field(&t->field[0], c->m, b->stack, COND_STACK,
			    &t->starts[0]);
		subj->s[COND_STACK] = sb_str(&t->field[0]);
		subj->len[COND_STACK] = t->field[0].len;
		if (p->uses[COND_SOURCE]) {
			stack_field(&t->field[1], c->m, b->stack, COND_SOURCE,
				    &t->starts[1]);
			subj->s[COND_SOURCE] = sb_str(&t->field[1]);
			subj->len[COND_SOURCE] = t->field[1].len;
		}
	}
	if (b && !v) {
		subj->s[COND_TYPE] = bucket_type_subject(b);
		subj->len[COND_TYPE] = strlen(subj->s[COND_TYPE]);
	}
	if (v) {
		subj->s[COND_PATH] = v->name;
		subj->len[COND_PATH] = strlen(v->name);
		subj->s[COND_PERM] = v->perms;
		subj->len[COND_PERM] = 4;
		subj->sharing = sharing;
	}
}

void subject_text_release(struct subject_text *t)
{
	for (int i = 0; i < 2; i++) {
		sb_release(&t->field[i]);
		free(t->starts[i].v);
	}
	memset(t, 0, sizeof(*t));
}

const struct vma vma_unknown = { 0, 0, 0, 0, 0, 0, "----", "" };

int classify_hooked(struct classifier *c, const struct bucket *b,
		    const struct vma *v, unsigned sharing)
{
	return classify_region(c, b, v, sharing, 1);
}

int classify_unhooked(struct classifier *c, const struct vma *v,
		      unsigned sharing)
{
	return classify_region(c, NULL, v, sharing, 0);
}
