/*
 * CPython's frames, read from inside the process: the walk of a thread's
 * chain of interpreter frames, and the names of the frames it finds.
 *
 * One native call of _PyEval_EvalFrameDefault runs many Python frames;
 * the thread's chain of them (PyThreadState -> cframe -> current_frame ->
 * previous ...) says which, innermost first, each native call's last one
 * marked is_entry.  A Python frame is recorded as an address of its own,
 * above user space (REC_PY_BASE), one per (function, file, line), named
 * in the dump's .buckets file ("frame" lines, before the buckets that use
 * them).  The names are read from the code object once per (code object,
 * instruction), checked again at each use by the code object's name
 * pointers, so that a code object freed and another made at its address
 * gets names of its own, and the old frames keep theirs.  A frame that
 * fails a check (a pointer out of range, a code object whose type is not
 * code) ends the walk with <python frames unreadable>: never a crash on
 * what the checks can see, never a wrong name.
 *
 * What the interpreter is (its offsets, symbols) is rec_python.c's to
 * find: it fills rec_py.
 */
#include "rec.h"
#include "python_offsets.h"

#include <string.h>

struct rec_py rec_py;

/* A pointer the interpreter's structures may hold. */
static inline bool plausible(uintptr_t p)
{
	return p >= 4096 && p < ((uintptr_t)1 << 47) && !(p & 7);
}

static inline uintptr_t word(uintptr_t base, unsigned at)
{
	return *(const uintptr_t *)(base + at);
}

/* ---- names of Python frames ---- */

/*
 * A name: function, file, line, and its address.  Names live in pages
 * that never move; the count is published once an entry is whole, so
 * that the dump thread writes what it sees without a lock.
 */
struct py_name {
	const char *func, *file;
	uint32_t func_len, file_len;
	uint32_t line;
	uint64_t hash;
};

#define NAME_PAGE 4096
#define NAME_PAGES 1024
static struct py_name *name_pages[NAME_PAGES];
static atomic_uint nnames;
static unsigned names_written; /* by this process's .buckets files */

/* Name N's address: 16 apart, a return address 8 into each (the
 * analyzer looks up the byte before a return address). */
static inline uintptr_t name_addr(unsigned n)
{
	return REC_PY_BASE + (uintptr_t)n * 16 + 8;
}

static struct py_name *name_at(unsigned n)
{
	return &name_pages[n / NAME_PAGE][n % NAME_PAGE];
}

/* (code object, instruction) -> name, and names by content: both under
 * a lock (the slow path; the threads' memos spare them most calls). */
struct site {
	uintptr_t code, instr;
	uintptr_t qualname, filename, linetable; /* the code's, then */
	unsigned name;                            /* + 1; 0: empty */
	uint64_t freed; /* rec_pyframes_codes_freed when last checked */
};

static struct site *sites;
static size_t sites_mask, nsites;
static unsigned *by_content; /* name index + 1 */
static size_t content_mask;
static rec_lock names_lock = REC_LOCK_INIT;

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v;
	h *= 0xbf58476d1ce4e5b9ULL;
	return h ^ (h >> 29);
}

static uint64_t hash_bytes(uint64_t h, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ULL;
	return mix(h, n);
}

/* Room for one more of N slots in a table of MASK + 1 (half full at
 * most): a new table, twice as big, or NULL. */
static void *grown(size_t *mask, size_t n, size_t elem)
{
	size_t cap = *mask ? (*mask + 1) * 2 : 4096;

	if ((n + 1) * 2 <= *mask + 1)
		return NULL;
	*mask = cap - 1;
	return rec_alloc(cap * elem);
}

static unsigned content_find(const struct py_name *want)
{
	for (size_t i = want->hash & content_mask;; i = (i + 1) & content_mask) {
		unsigned k = by_content[i];
		const struct py_name *e;

		if (!k)
			return 0;
		e = name_at(k - 1);
		if (e->hash == want->hash && e->line == want->line &&
		    e->func_len == want->func_len &&
		    e->file_len == want->file_len &&
		    !memcmp(e->func, want->func, e->func_len) &&
		    !memcmp(e->file, want->file, e->file_len))
			return k;
	}
}

static void content_put(unsigned k)
{
	size_t i = name_at(k - 1)->hash & content_mask;

	while (by_content[i])
		i = (i + 1) & content_mask;
	by_content[i] = k;
}

/* The index of name WANT (its strings copied when new); UINT32_MAX
 * without room.  (Lock held.) */
static unsigned name_intern(const struct py_name *want)
{
	unsigned n = atomic_load_explicit(&nnames, memory_order_relaxed), k;
	unsigned *t;
	char *s;

	if (by_content) {
		k = content_find(want);
		if (k)
			return k - 1;
	}
	if (n >= NAME_PAGE * NAME_PAGES)
		return UINT32_MAX;
	{
		size_t old_mask = content_mask;

		t = grown(&content_mask, n, sizeof(*t));
		if (t) {
			unsigned *old = by_content;

			by_content = t;
			for (size_t i = 0; old && i <= old_mask; i++)
				if (old[i])
					content_put(old[i]);
		} else if (!by_content) {
			return UINT32_MAX;
		}
	}
	if (!name_pages[n / NAME_PAGE]) {
		name_pages[n / NAME_PAGE] =
			rec_alloc(NAME_PAGE * sizeof(struct py_name));
		if (!name_pages[n / NAME_PAGE])
			return UINT32_MAX;
	}
	s = rec_alloc(want->func_len + want->file_len + 2);
	if (!s)
		return UINT32_MAX;
	memcpy(s, want->func, want->func_len);
	memcpy(s + want->func_len + 1, want->file, want->file_len);
	*name_at(n) = *want;
	name_at(n)->func = s;
	name_at(n)->file = s + want->func_len + 1;
	atomic_store_explicit(&nnames, n + 1, memory_order_release);
	content_put(n + 1);
	return n;
}

/* A str object's characters as UTF-8 into OUT (at most CAP bytes);
 * their length, or -1 when it is not a string this can read. */
static int str_utf8(uintptr_t s, char *out, size_t cap)
{
	uint32_t state;
	intptr_t len;
	unsigned kind;
	size_t n = 0;
	const unsigned char *d;

	if (!plausible(s))
		return -1;
	state = *(const uint32_t *)(s + rec_py.off->str_state);
	len = *(const intptr_t *)(s + rec_py.off->str_length);
	kind = (state >> 2) & 7;
	if (!(state & (1u << 5)) || len < 0 || len > 4096)
		return -1; /* (not compact: never for names) */
	if (state & (1u << 6)) {
		if ((size_t)len > cap)
			len = (intptr_t)cap;
		memcpy(out, (const char *)(s + rec_py.off->str_ascii_data), (size_t)len);
		return (int)len;
	}
	d = (const unsigned char *)(s + rec_py.off->str_compact_data);
	for (intptr_t i = 0; i < len; i++) {
		uint32_t c = kind == 1	 ? d[i]
			     : kind == 2 ? ((const uint16_t *)d)[i]
					 : ((const uint32_t *)d)[i];
		char b[4];
		size_t m;

		if (kind != 1 && kind != 2 && kind != 4)
			return -1;
		if (c < 0x80) {
			b[0] = (char)c, m = 1;
		} else if (c < 0x800) {
			b[0] = (char)(0xc0 | c >> 6);
			b[1] = (char)(0x80 | (c & 0x3f)), m = 2;
		} else if (c < 0x10000) {
			b[0] = (char)(0xe0 | c >> 12);
			b[1] = (char)(0x80 | ((c >> 6) & 0x3f));
			b[2] = (char)(0x80 | (c & 0x3f)), m = 3;
		} else {
			b[0] = (char)(0xf0 | c >> 18);
			b[1] = (char)(0x80 | ((c >> 12) & 0x3f));
			b[2] = (char)(0x80 | ((c >> 6) & 0x3f));
			b[3] = (char)(0x80 | (c & 0x3f)), m = 4;
		}
		if (n + m > cap)
			break;
		memcpy(out + n, b, m);
		n += m;
	}
	return (int)n;
}

/* Is CODE a code object (checked before anything else is read of it)? */
static inline bool is_code(uintptr_t code)
{
	return plausible(code) && word(code, rec_py.off->ob_type) == rec_py.code_type;
}

/* The name of CODE at instruction INSTR, new: UINT32_MAX when it cannot
 * be read.  (Lock held.) */
static unsigned name_of(uintptr_t code, uintptr_t instr)
{
	char func[512], file[1024];
	struct py_name want;
	int fl, fi;
	uintptr_t start = code + rec_py.off->code_adaptive;

	fl = str_utf8(word(code, rec_py.off->code_qualname), func, sizeof(func));
	fi = str_utf8(word(code, rec_py.off->code_filename), file, sizeof(file));
	if (fl <= 0 || fi < 0)
		return UINT32_MAX;
	want.func = func;
	want.func_len = (uint32_t)fl;
	want.file = file;
	want.file_len = (uint32_t)fi;
	/* (Before the first instruction: a frame being set up.) */
	want.line = instr >= start && instr - start < (1u << 30)
			    ? (uint32_t)rec_py.addr2line((void *)code,
						  (int)(instr - start))
			    : (uint32_t)*(const int *)(code +
						       rec_py.off->code_firstlineno);
	if ((int32_t)want.line < 0)
		want.line = 0;
	want.hash = mix(hash_bytes(hash_bytes(0x9e3779b97f4a7c15ULL, func,
					      want.func_len),
				   file, want.file_len),
			want.line);
	return name_intern(&want);
}

/*
 * The code objects freed lately, by the count of those freed before
 * (rec_pyframes_codes_freed): a name kept of an instruction in one of
 * them is read again, since a code object made at its address (its
 * names' strings maybe at their old addresses too) is another.  A name
 * checked last before what the log holds is read again as well.  Written
 * under the GIL (one thread at a time); read by any.
 */
#define FREED_LOG 64
static _Atomic uintptr_t freed_log[FREED_LOG];
_Atomic uint64_t rec_pyframes_codes_freed; /* (64 bits: never round) */

void rec_pyframes_code_freed(uintptr_t code)
{
	uint64_t n = atomic_load_explicit(&rec_pyframes_codes_freed,
					  memory_order_relaxed);

	atomic_store_explicit(&freed_log[n % FREED_LOG], code,
			      memory_order_release);
	atomic_store_explicit(&rec_pyframes_codes_freed, n + 1,
			      memory_order_release);
}

/*
 * May CODE have been freed (and another made there) since NOW was
 * THEN?  (Yes where the log does not say.)  Entry N is written over by
 * the free counted N + FREED_LOG, before the count goes past it: a
 * count of THEN + FREED_LOG, read after the entries (read acquiring: a
 * count written before an entry read is seen), may be a free writing
 * entry THEN's slot.
 */
static bool freed_since(uintptr_t code, uint64_t then, uint64_t now)
{
	if (now - then >= FREED_LOG)
		return true;
	for (uint64_t n = then; n != now; n++)
		if (atomic_load_explicit(&freed_log[n % FREED_LOG],
					 memory_order_acquire) == code)
			return true;
	return atomic_load_explicit(&rec_pyframes_codes_freed,
				    memory_order_acquire) -
		       then >=
	       FREED_LOG;
}

static size_t site_slot(uintptr_t code, uintptr_t instr)
{
	return (size_t)mix(mix(0, code), instr) & sites_mask;
}

/* The address of CODE's frame at INSTR; 0 when it cannot be named. */
static uintptr_t site_addr(uintptr_t code, uintptr_t instr)
{
	uintptr_t q = word(code, rec_py.off->code_qualname);
	uintptr_t f = word(code, rec_py.off->code_filename);
	uintptr_t lt = word(code, rec_py.off->code_linetable);
	uint64_t now = atomic_load_explicit(&rec_pyframes_codes_freed,
					    memory_order_acquire);
	unsigned n = UINT32_MAX;
	size_t i;

	rec_lock_take(&names_lock);
	if (sites) {
		for (i = site_slot(code, instr); sites[i].name;
		     i = (i + 1) & sites_mask) {
			struct site *s = &sites[i];

			if (s->code != code || s->instr != instr)
				continue;
			if (s->qualname == q && s->filename == f &&
			    s->linetable == lt &&
			    (s->freed == now ||
			     !freed_since(code, s->freed, now))) {
				s->freed = now;
				n = s->name - 1;
				goto out;
			}
			/* Another code object at this address. */
			n = name_of(code, instr);
			if (n != UINT32_MAX) {
				s->qualname = q, s->filename = f,
				s->linetable = lt, s->name = n + 1;
				s->freed = now;
			}
			goto out;
		}
	}
	n = name_of(code, instr);
	if (n == UINT32_MAX)
		goto out;
	{
		size_t old_mask = sites_mask;
		struct site *t = grown(&sites_mask, nsites, sizeof(*t));

		if (t) {
			struct site *old = sites;

			sites = t;
			for (size_t k = 0; old && k <= old_mask; k++) {
				if (!old[k].name)
					continue;
				for (i = site_slot(old[k].code, old[k].instr);
				     sites[i].name; i = (i + 1) & sites_mask)
					;
				sites[i] = old[k];
			}
		} else if (!sites) {
			goto out;
		}
	}
	for (i = site_slot(code, instr); sites[i].name; i = (i + 1) & sites_mask)
		;
	sites[i] = (struct site){ code, instr, q, f, lt, n + 1, now };
	nsites++;
out:
	rec_lock_give(&names_lock);
	return n == UINT32_MAX ? 0 : name_addr(n);
}

/* ---- the walk of the frame chain ---- */

/*
 * Each thread's memo of the frames it walked lately: a frame (at an
 * address of the chain) running the same code at the same instruction,
 * the code with the same names, has the same address as then, without
 * a lookup.  Loops allocate from the same lines over and over, at every
 * depth; the memo is by the frame's address and instruction, not by
 * depth, so that a call in and out of a function keeps its callers'.
 */
struct memo_frame {
	uintptr_t frame, instr, code, qualname, filename;
	uintptr_t addr;
	uint64_t freed; /* rec_pyframes_codes_freed then */
};
#define MEMO 256
static __thread struct memo_frame memo[MEMO];

static inline struct memo_frame *memo_of(uintptr_t frame, uintptr_t instr)
{
	uint64_t h = (frame ^ instr * 0x9e3779b97f4a7c15ULL) >> 3;

	return &memo[(h ^ h >> 17) % MEMO];
}

/* The first frame of TSTATE's chain, or 0. */
uintptr_t rec_pyframes_first(uintptr_t tstate)
{
	uintptr_t cf;

	if (!plausible(tstate))
		return 0;
	cf = word(tstate, rec_py.off->tstate_cframe);
	if (!plausible(cf))
		return 0;
	return word(cf, rec_py.off->cframe_current_frame);
}

/*
 * Up to MAX addresses of the Python frames from *FRAMEP on into OUT,
 * innermost first: to the end of the chain, or with ENTRY_ONLY to the
 * first entry frame (the last one a native eval-loop call ran).  *FRAMEP
 * is left where the walk ended; *BROKEN set when a frame failed a check
 * (the last address written is then the unreadable marker).
 */
/* The address of frame F running CODE (names Q, FN) at INSTR: the memo's,
 * else the names' (0: unreadable). */
static inline uintptr_t frame_addr(uintptr_t f, uintptr_t code,
				   uintptr_t instr, uintptr_t q, uintptr_t fn)
{
	struct memo_frame *m = memo_of(f, instr);
	uint64_t now = atomic_load_explicit(&rec_pyframes_codes_freed,
					    memory_order_acquire);
	uintptr_t a;

	if (m->frame == f && m->instr == instr && m->code == code &&
	    m->qualname == q && m->filename == fn &&
	    (m->freed == now || !freed_since(code, m->freed, now))) {
		m->freed = now;
		return m->addr;
	}
	a = site_addr(code, instr);
	if (a)
		*m = (struct memo_frame){ f, instr, code, q, fn, a, now };
	return a;
}

unsigned rec_pyframes_walk(uintptr_t *framep, uintptr_t *out, unsigned max,
			   bool entry_only, bool *broken)
{
	const struct python_offsets *o = rec_py.off;
	/* (In registers: the stores below could alias the table.) */
	const unsigned fc = o->frame_code, fi = o->frame_prev_instr,
		       fe = o->frame_is_entry, fp = o->frame_previous,
		       cq = o->code_qualname, cf = o->code_filename;
	uintptr_t f = *framep;
	unsigned n = 0;

	while (f && n < max) {
		uintptr_t code, instr, q, fn;
		bool entry;

		if (!plausible(f))
			goto unreadable;
		code = word(f, fc);
		instr = word(f, fi);
		entry = *(const uint8_t *)(f + fe);
		if (!is_code(code))
			goto unreadable;
		q = word(code, cq);
		fn = word(code, cf);
		out[n] = frame_addr(f, code, instr, q, fn);
		if (!out[n++])
			goto unreadable;
		f = word(f, fp);
		if (entry && entry_only)
			break;
	}
	*framep = f;
	return n;
unreadable:
	out[n++] = name_addr(0);
	*broken = true;
	*framep = 0;
	return n;
}

unsigned rec_pyframes_list(uintptr_t f, unsigned max, uintptr_t *frames,
			   uintptr_t *instrs, bool *whole)
{
	const struct python_offsets *o = rec_py.off;
	unsigned n = 0;

	for (; f && n < max; n++) {
		if (!plausible(f))
			return UINT32_MAX;
		frames[n] = f;
		instrs[n] = word(f, o->frame_prev_instr);
		f = word(f, o->frame_previous);
	}
	*whole = !f;
	return n;
}

unsigned rec_python_splice(uintptr_t *frames, unsigned n, unsigned max)
{
	uintptr_t out[REC_MAX_DEPTH], f;
	unsigned k = 0;
	bool broken = false;
	void *ts;

	if (!rec_py.on)
		return n;
	/* Any eval-loop frame at all?  (Most malloc calls of a Python
	 * program have some; its other threads' may not.) */
	for (unsigned i = 0;; i++) {
		if (i == n)
			return n;
		if (frames[i] - 1 - rec_py.eval_lo < rec_py.eval_hi - rec_py.eval_lo)
			break;
	}
	ts = rec_py.get_tstate();
	f = ts ? rec_pyframes_first((uintptr_t)ts) : 0;
	for (unsigned i = 0; i < n && k < max; i++) {
		if (frames[i] - 1 - rec_py.eval_lo >= rec_py.eval_hi - rec_py.eval_lo || broken ||
		    !f) {
			out[k++] = frames[i];
			continue;
		}
		k += rec_pyframes_walk(&f, out + k, max - k, true, &broken);
	}
	memcpy(frames, out, k * sizeof(*frames));
	return k;
}

bool rec_pyframes_init(const struct rec_py *py)
{
	struct py_name marker = { "<python frames unreadable>", "", 26, 0, 0,
				  0 };
	unsigned n;

	marker.hash = mix(hash_bytes(0, marker.func, marker.func_len), 0);
	rec_lock_take(&names_lock);
	n = name_intern(&marker); /* (name 0: the first) */
	rec_lock_give(&names_lock);
	if (n != 0)
		return false;
	rec_py = *py;
	rec_py.on = true;
	return true;
}

/* ---- the dump ---- */

unsigned rec_python_names(struct rec_buf *b)
{
	unsigned n = atomic_load_explicit(&nnames, memory_order_acquire);

	for (unsigned i = names_written; i < n; i++) {
		const struct py_name *e = name_at(i);

		rec_buf_frame(b, name_addr(i), e->func, e->func_len, e->file,
			      e->file_len, e->line);
	}
	return n;
}

void rec_python_names_written(unsigned n)
{
	names_written = n;
}

void rec_python_locks(bool take)
{
	if (take)
		rec_lock_take(&names_lock);
	else
		rec_lock_give(&names_lock);
}

void rec_python_after_fork(void)
{
	names_written = 0; /* (the child's first .buckets names them all) */
}

