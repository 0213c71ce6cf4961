/*
 * The recorder's walk of CPython's frames (rec_pyframes.c) on frames,
 * code objects and strings laid out here as CPython 3.11 lays them out:
 * the names it writes, a chain cut by a frame that fails a check (a code
 * object of another type, a pointer out of range), a wrong table of
 * offsets, and a code object freed and another made at its address.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/recorder/rec.h"
#include "python_offsets.h"

/* Objects of the fake interpreter, zeroed, 8-aligned. */
static uintptr_t code_type_obj[8], other_type_obj[8];

/* (From a pool that lives as long as the test: nothing to free.) */
static _Alignas(16) char pool[1 << 16];
static size_t pool_used;

static void *obj(size_t n)
{
	void *p = pool + pool_used;

	pool_used += (n + 15) & ~(size_t)15;
	cr_assert(pool_used <= sizeof(pool));
	return p;
}

static void put(void *base, unsigned at, uintptr_t v)
{
	memcpy((char *)base + at, &v, sizeof(v));
}

/* A compact ASCII str. */
static uintptr_t str(const char *s)
{
	const struct python_offsets *o = python_offsets_for(3, 11);
	size_t n = strlen(s);
	char *p = obj(o->str_ascii_data + n + 1);
	uint32_t state = 1u << 2 | 1u << 5 | 1u << 6; /* kind 1, compact, ascii */
	intptr_t len = (intptr_t)n;

	memcpy(p + o->str_length, &len, sizeof(len));
	memcpy(p + o->str_state, &state, sizeof(state));
	memcpy(p + o->str_ascii_data, s, n);
	return (uintptr_t)p;
}

static uintptr_t code(const char *qualname, const char *file, int firstline)
{
	const struct python_offsets *o = python_offsets_for(3, 11);
	char *c = obj(o->code_adaptive + 64);

	put(c, o->ob_type, (uintptr_t)code_type_obj);
	put(c, o->code_qualname, str(qualname));
	put(c, o->code_filename, str(file));
	put(c, o->code_linetable, str("lt"));
	memcpy(c + o->code_firstlineno, &firstline, sizeof(firstline));
	return (uintptr_t)c;
}

/* A frame running CODE at its instruction INSTR (code units). */
static uintptr_t frame(uintptr_t c, unsigned instr, uintptr_t previous,
		       bool entry)
{
	const struct python_offsets *o = python_offsets_for(3, 11);
	char *f = obj(80);

	put(f, o->frame_code, c);
	put(f, o->frame_prev_instr, c + o->code_adaptive + 2 * instr);
	put(f, o->frame_previous, previous);
	f[o->frame_is_entry] = entry;
	return (uintptr_t)f;
}

/* PyCode_Addr2Line of the fake: a line per instruction. */
static int addr2line(void *c, int addrq)
{
	int first;

	memcpy(&first, (char *)c + python_offsets_for(3, 11)->code_firstlineno,
	       sizeof(first));
	return first + addrq / 2;
}

static void start(const struct python_offsets *o)
{
	struct rec_py py = { 0 };

	py.off = o;
	py.code_type = (uintptr_t)code_type_obj;
	py.addr2line = addr2line;
	cr_assert(rec_pyframes_init(&py));
}

/* The "frame" lines written so far. */
static char *names(void)
{
	struct rec_buf b = { 0 };
	char *s;

	rec_python_names(&b);
	s = strndup(b.p ? b.p : "", b.len);
	return s;
}

#define UNREADABLE (REC_PY_BASE + 8)

Test(pyframes, a_chain_named_innermost_first)
{
	uintptr_t outer = frame(code("<module>", "/app/prog.py", 1), 3, 0, true);
	uintptr_t inner = frame(code("Cache.add", "/app/cache.py", 10), 2,
				outer, false);
	uintptr_t out[8], f = inner;
	bool broken = false;
	char *text;

	start(python_offsets_for(3, 11));
	cr_assert_eq(rec_pyframes_walk(&f, out, 8, false, &broken), 2);
	cr_assert(!broken);
	cr_assert_eq(f, 0);
	cr_assert_neq(out[0], out[1]);
	cr_assert(out[0] > UNREADABLE && out[1] > UNREADABLE);
	text = names();
	cr_assert(strstr(text, "\tCache.add\t/app/cache.py\t12\n"), "%s", text);
	cr_assert(strstr(text, "\t<module>\t/app/prog.py\t4\n"), "%s", text);
	cr_assert(strstr(text, "\t<python frames unreadable>\t\t0\n"), "%s",
		  text);
	/* The same frames again: the same addresses (from the memo). */
	{
		uintptr_t again[8];

		f = inner;
		cr_assert_eq(rec_pyframes_walk(&f, again, 8, false, &broken), 2);
		cr_assert_eq(again[0], out[0]);
		cr_assert_eq(again[1], out[1]);
	}
	free(text);
}

Test(pyframes, an_entry_frame_ends_a_native_calls_frames)
{
	uintptr_t outer = frame(code("main", "/app/prog.py", 1), 1, 0, true);
	uintptr_t mid = frame(code("cb", "/app/prog.py", 5), 1, outer, true);
	uintptr_t inner = frame(code("key", "/app/prog.py", 9), 1, mid, false);
	uintptr_t out[8], f = inner;
	bool broken = false;

	start(python_offsets_for(3, 11));
	cr_assert_eq(rec_pyframes_walk(&f, out, 8, true, &broken), 2);
	cr_assert_eq(f, outer, "the walk stops past the entry frame");
	cr_assert_eq(rec_pyframes_walk(&f, out + 2, 6, true, &broken), 1);
	cr_assert(!broken);
}

Test(pyframes, a_frame_of_no_code_object_ends_the_walk)
{
	uintptr_t bad = code("x", "/app/x.py", 1);
	uintptr_t outer, inner, out[8], f;
	bool broken = false;

	put((void *)bad, python_offsets_for(3, 11)->ob_type,
	    (uintptr_t)other_type_obj);
	outer = frame(code("<module>", "/app/prog.py", 1), 0, 0, true);
	inner = frame(bad, 0, outer, false);
	start(python_offsets_for(3, 11));
	f = inner;
	cr_assert_eq(rec_pyframes_walk(&f, out, 8, false, &broken), 1);
	cr_assert(broken);
	cr_assert_eq(out[0], UNREADABLE);
	cr_assert_eq(f, 0);
}

Test(pyframes, a_chain_cut_by_a_wild_pointer)
{
	uintptr_t wild[] = { 0x10, 0x800000000000ULL, 0x7f0000000003ULL };

	start(python_offsets_for(3, 11));
	for (size_t i = 0; i < sizeof(wild) / sizeof(wild[0]); i++) {
		uintptr_t inner = frame(code("f", "/app/prog.py", 1), 0,
					wild[i], false);
		uintptr_t out[8], f = inner;
		bool broken = false;
		unsigned n = rec_pyframes_walk(&f, out, 8, false, &broken);

		cr_assert_eq(n, 2, "pointer %#lx", (unsigned long)wild[i]);
		cr_assert(broken);
		cr_assert_neq(out[0], UNREADABLE);
		cr_assert_eq(out[1], UNREADABLE);
	}
}

Test(pyframes, a_wrong_table_reads_no_name)
{
	/* Another version's layout, as if its table were taken for 3.11's:
	 * each field 8 bytes further on. */
	struct python_offsets wrong = *python_offsets_for(3, 11);
	uintptr_t inner = frame(code("f", "/app/prog.py", 1), 0, 0, true);
	uintptr_t out[8], f = inner;
	bool broken = false;
	char *text;

	wrong.frame_code += 8;
	wrong.frame_previous += 8;
	start(&wrong);
	cr_assert_eq(rec_pyframes_walk(&f, out, 8, false, &broken), 1);
	cr_assert(broken);
	cr_assert_eq(out[0], UNREADABLE);
	text = names();
	cr_assert(!strstr(text, "prog.py"), "%s", text);
	free(text);
}

Test(pyframes, a_code_object_made_again_at_an_address)
{
	const struct python_offsets *o = python_offsets_for(3, 11);
	uintptr_t c = code("old", "/app/old.py", 1);
	uintptr_t fr = frame(c, 0, 0, true);
	uintptr_t first, second, f;
	bool broken = false;
	char *text;

	start(o);
	f = fr;
	cr_assert_eq(rec_pyframes_walk(&f, &first, 1, false, &broken), 1);
	/* Freed, and another code object made there (its names new). */
	put((void *)c, o->code_qualname, str("new"));
	put((void *)c, o->code_filename, str("/app/new.py"));
	f = fr;
	cr_assert_eq(rec_pyframes_walk(&f, &second, 1, false, &broken), 1);
	cr_assert_neq(first, second);
	text = names();
	cr_assert(strstr(text, "\told\t/app/old.py\t1\n"), "%s", text);
	cr_assert(strstr(text, "\tnew\t/app/new.py\t1\n"), "%s", text);
	free(text);
}

/* Freed, and another code object made at its address whose names'
 * strings are at the old ones' addresses too (their text new): told, the
 * walk reads the names again.  FREES code objects are told freed, C
 * among them when C_TOO. */
static void made_again_in_place(unsigned frees, bool c_too)
{
	const struct python_offsets *o = python_offsets_for(3, 11);
	uintptr_t c = code("first", "/app/first.py", 1);
	uintptr_t fr = frame(c, 0, 0, true);
	uintptr_t q = *(uintptr_t *)(c + o->code_qualname);
	uintptr_t fn = *(uintptr_t *)(c + o->code_filename);
	uintptr_t a, b, f;
	bool broken = false;
	char *text;

	start(o);
	f = fr;
	cr_assert_eq(rec_pyframes_walk(&f, &a, 1, false, &broken), 1);
	for (unsigned i = 0; i < frees; i++)
		rec_pyframes_code_freed(c_too && i == 0 ? c : c + 4096 + i);
	memcpy((char *)q + o->str_ascii_data, "again", 5);
	memcpy((char *)fn + o->str_ascii_data, "/app/again.py", 13);
	f = fr;
	cr_assert_eq(rec_pyframes_walk(&f, &b, 1, false, &broken), 1);
	text = names();
	if (c_too) {
		cr_assert_neq(a, b);
		cr_assert(strstr(text, "\tagain\t/app/again.py\t1\n"), "%s",
			  text);
	} else {
		/* (Others freed: the name kept stays.) */
		cr_assert_eq(a, b);
	}
	free(text);
}

Test(pyframes, a_code_object_made_again_with_its_names_in_place)
{
	made_again_in_place(3, true);
}

Test(pyframes, a_code_object_freed_long_ago_is_read_again)
{
	/* (More frees than the log holds: C's among them is not seen.) */
	made_again_in_place(200, true);
}

Test(pyframes, other_code_objects_freed_keep_a_name)
{
	made_again_in_place(3, false);
}

Test(pyframes, a_chains_list_is_its_frames_and_instructions)
{
	const struct python_offsets *o = python_offsets_for(3, 11);
	uintptr_t outer = frame(code("<module>", "/app/prog.py", 1), 3, 0, true);
	uintptr_t inner = frame(code("f", "/app/prog.py", 10), 2, outer, false);
	uintptr_t frames[8], instrs[8];
	bool whole = false;

	start(o);
	cr_assert_eq(rec_pyframes_list(inner, 8, frames, instrs, &whole), 2);
	cr_assert(whole);
	cr_assert_eq(frames[0], inner);
	cr_assert_eq(frames[1], outer);
	cr_assert_eq(instrs[0], *(uintptr_t *)(inner + o->frame_prev_instr));
	cr_assert_eq(instrs[1], *(uintptr_t *)(outer + o->frame_prev_instr));
	/* Cut at MAX frames: not whole. */
	cr_assert_eq(rec_pyframes_list(inner, 1, frames, instrs, &whole), 1);
	cr_assert(!whole);
	/* No frame: nothing, whole. */
	cr_assert_eq(rec_pyframes_list(0, 8, frames, instrs, &whole), 0);
	cr_assert(whole);
}

Test(pyframes, a_chains_list_refuses_a_wild_pointer)
{
	uintptr_t inner = frame(code("f", "/app/prog.py", 1), 0,
				0x7f0000000003ULL, false);
	uintptr_t frames[8], instrs[8];
	bool whole;

	start(python_offsets_for(3, 11));
	cr_assert_gt(rec_pyframes_list(inner, 8, frames, instrs, &whole), 8,
		     "a chain with a frame that fails a check is not listed");
}
