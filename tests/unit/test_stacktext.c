/* Stacks as text, the functions they count under, and tallies. */
#include <criterion/criterion.h>
#include <string.h>

#include "bucketfile.h"
#include "numfmt.h"
#include "helpers.h"
#include "stacktext.h"
#include "symbol.h"
#include "tally.h"

static struct model m;
static struct tally t;

static void setup(void)
{
	model_init(&m);
	tally_init(&t);
}

static void teardown(void)
{
	tally_free(&t);
	model_free(&m);
}

TestSuite(stacks, .init = setup, .fini = teardown);

/*
 * Stacks, innermost first: 1 malloc <- cache_put <- main, 2 operator new
 * <- cache_put <- main, 3 walk <- walk <- main (recursion), 4 malloc
 * alone.  Frames are numbered by first appearance.
 */
static const struct stack *stack_of(uint64_t id)
{
	for (size_t i = 0; i < m.buckets.n; i++)
		if (m.buckets.v[i]->id == id)
			return m.buckets.v[i]->stack;
	cr_assert_fail("no bucket %lu", (unsigned long)id);
	return NULL;
}

static void name(size_t frame, const char *func, const char *file,
		 uint32_t line)
{
	struct frame *f = m.frames.v[frame];

	f->func = func;
	f->func_len = (uint32_t)strlen(func);
	f->file = file;
	f->line = line;
}

static void load(void)
{
	const char *b = write_file("s.00001.0001.buckets",
				   "1 malloc 0x10 0x20 0x30\n"
				   "2 malloc 0x40 0x21 0x30\n"
				   "3 malloc 0x50 0x51 0x30\n"
				   "4 malloc 0x10\n",
				   -1);

	cr_assert_eq(bucketfile_load(&m, b), 0);
	symbolize_model(&m, NULL, NULL);
	name(0, "malloc", NULL, 0);
	name(1, "cache_put", "cache.c", 12);
	name(2, "main", "main.c", 3);
	name(3, "operator new(unsigned long)", NULL, 0);
	name(4, "cache_put", "cache.c", 20);
	name(5, "walk", "walk.c", 7);
	name(6, "walk", "walk.c", 9);
}

Test(stacks, allocator_frames_are_pprofs)
{
	static const char *const yes[] = {
		"malloc", "operator new", "operator new(unsigned long)",
		"tc_malloc", "tcmalloc::PageHeap::New", "TCMalloc_SystemAlloc",
		"__libc_malloc", "dmprof_recorder_self", "je_prof_backtrace",
		"_rjem_je_malloc_default", "mallocx", "__rust_alloc",
		"alloc::alloc::alloc", "__malloc_alloc_template::allocate",
		"::do_malloc_or_cpp_alloc", "alloc::alloc::exchange_malloc",
	};
	static const char *const no[] = {
		"malloc_stats", "mymalloc", "operator delete", "main",
		"Cache::malloc", "jemalloc_init", "alloc::vec::Vec::push",
	};

	for (size_t i = 0; i < sizeof(yes) / sizeof(*yes); i++)
		cr_assert(frame_is_allocator(yes[i], strlen(yes[i])), "%s",
			  yes[i]);
	for (size_t i = 0; i < sizeof(no) / sizeof(*no); i++)
		cr_assert_not(frame_is_allocator(no[i], strlen(no[i])), "%s",
			      no[i]);
}

static const struct tally_entry *fn(const char *key)
{
	const struct tally_entry *e = tally_find(&t, key, strlen(key));

	cr_assert_not_null(e, "no function %s", key);
	return e;
}

Test(stacks, flat_goes_past_the_allocator_cum_counts_once)
{
	load();
	stacktext_tally_functions(&t, &m, stack_of(1), (int64_t[]){ 100 }, 1, true);
	stacktext_tally_functions(&t, &m, stack_of(2), (int64_t[]){ 50 }, 1, true);
	stacktext_tally_functions(&t, &m, stack_of(3), (int64_t[]){ 7 }, 1, true);
	stacktext_tally_functions(&t, &m, stack_of(4), (int64_t[]){ 1 }, 1, true);
	cr_assert_eq(fn("cache_put")->v[0], 150);
	cr_assert_eq(fn("cache_put")->v[1], 150);
	cr_assert_eq(fn("main")->v[0], 0);
	cr_assert_eq(fn("main")->v[1], 157);
	/* Recursion: its bytes count once in cum. */
	cr_assert_eq(fn("walk")->v[0], 7);
	cr_assert_eq(fn("walk")->v[1], 7);
	/* A stack of allocator frames only: its last frame owns it. */
	cr_assert_eq(fn("malloc")->v[0], 1);
	cr_assert_null(tally_find(&t, "operator new", 12));
	/* The place of the largest flat stack; of the largest call else. */
	cr_assert_str_eq(fn("cache_put")->file, "cache.c");
	cr_assert_eq(fn("cache_put")->line, 12);
	cr_assert_str_eq(fn("main")->file, "main.c");
	cr_assert_eq(fn("walk")->line, 7);
	cr_assert_not(t.overflow);
}

/* The entry of function NAME in FILE, a key of both (an interpreted
 * function's). */
static const struct tally_entry *fn_in(const char *name, const char *file)
{
	char key[256];
	size_t n = strlen(name), k = strlen(file);

	cr_assert_lt(n + 1 + k, sizeof(key));
	memcpy(key, name, n + 1);
	memcpy(key + n + 1, file, k);
	return tally_find(&t, key, n + 1 + k);
}

/* Python's top levels: a "<module>" in each file, one function each. */
static void two_modules(const char *runtime)
{
	load();
	m.runtime = runtime;
	name(1, "<module>", "/app/a.py", 3);
	name(4, "<module>", "/app/b.py", 7);
	name(2, "run", "/app/prog.py", 12);
	stacktext_tally_functions(&t, &m, stack_of(1), (int64_t[]){ 100 }, 1, true);
	stacktext_tally_functions(&t, &m, stack_of(2), (int64_t[]){ 50 }, 1, true);
}

Test(stacks, an_interpreted_function_is_its_name_in_its_file)
{
	const struct tally_entry *a, *b;

	two_modules("python");
	a = fn_in("<module>", "/app/a.py");
	b = fn_in("<module>", "/app/b.py");
	cr_assert_not_null(a);
	cr_assert_not_null(b);
	cr_assert_eq(a->v[0], 100);
	cr_assert_eq(b->v[0], 50);
	/* The key's text is the name alone; the file is its place. */
	cr_assert_str_eq(a->key, "<module>");
	cr_assert_str_eq(b->file, "/app/b.py");
	cr_assert_eq(b->line, 7);
	cr_assert_eq(fn_in("run", "/app/prog.py")->v[1], 150);
	cr_assert_null(tally_find(&t, "<module>", 8));
	/* Sorted apart, the same way every time. */
	tally_sort(&t, stacktext_cmp_flat);
	cr_assert_eq(t.v[0], a);
	cr_assert_eq(t.v[1], b);
	cr_assert_eq(t.v[2], fn_in("run", "/app/prog.py"));
}

Test(stacks, a_c_function_is_its_name_alone)
{
	two_modules(NULL);
	cr_assert_eq(fn("<module>")->v[0], 150);
}

static const char *text(const struct stack *st, uint64_t depth,
			enum stack_form form)
{
	static struct strbuf sb;

	sb_reset(&sb);
	stack_text(&sb, &m, st, depth, form);
	return sb_str(&sb);
}

Test(stacks, the_forms_of_a_stack)
{
	load();
	cr_assert_str_eq(text(stack_of(1), UINT64_MAX, STACK_FOLDED),
			 "main;cache_put;malloc");
	cr_assert_str_eq(text(stack_of(1), 1, STACK_FOLDED),
			 "cache_put;malloc");
	cr_assert_str_eq(text(stack_of(2), UINT64_MAX, STACK_CALLERS),
			 "operator new(unsigned long) <- cache_put (cache.c:20)"
			 " <- main (main.c:3)");
	cr_assert_str_eq(text(stack_of(3), 0, STACK_CALLERS),
			 "walk (walk.c:7)");
}

Test(stacks, tally_keys_and_order)
{
	struct tally_entry *a = tally_get(&t, "a", 1), *b = tally_get(&t, "b", 1);

	cr_assert_eq(tally_get(&t, "a", 1), a);
	cr_assert_eq(tally_get(&t, "", 0)->bytes, 0);
	a->bytes = 5;
	b->bytes = 9;
	tally_sort(&t, tally_cmp_bytes);
	cr_assert_eq(t.v[0], b);
	cr_assert_eq(t.v[1], a);
	cr_assert_eq(tally_find(&t, "a", 1), a);
	cr_assert_null(tally_find(&t, "c", 1));
}

static const char *bytes(int64_t v, bool sign)
{
	static struct strbuf sb;

	sb_reset(&sb);
	format_bytes(&sb, v, sign);
	return sb_str(&sb);
}

static const char *percent(int64_t part, int64_t whole, bool sign)
{
	static struct strbuf sb;

	sb_reset(&sb);
	format_percent(&sb, part, whole, sign);
	return sb_str(&sb);
}

Test(stacks, sizes_and_shares_for_people)
{
	cr_assert_str_eq(bytes(0, false), "0 B");
	cr_assert_str_eq(bytes(1023, false), "1023 B");
	cr_assert_str_eq(bytes(1024, false), "1.0 KiB");
	cr_assert_str_eq(bytes(90000, false), "87.9 KiB");
	cr_assert_str_eq(bytes(1048575, false), "1.0 MiB");
	cr_assert_str_eq(bytes(3 << 20, true), "+3.0 MiB");
	cr_assert_str_eq(bytes(-18000, true), "-17.6 KiB");
	cr_assert_str_eq(bytes(INT64_MIN, false), "-8.0 EiB");
	cr_assert_str_eq(percent(1, 3, false), "33.3%");
	cr_assert_str_eq(percent(5, 0, false), "-");
	cr_assert_str_eq(percent(-1, 4, true), "-25.0%");
	cr_assert_str_eq(percent(1, 4, true), "+25.0%");
}

/*
 * As pprof prunes: an allocator frame under the program's ends the stack,
 * whatever the allocator's own frames inside it are called.
 */
Test(stacks, flat_goes_past_the_last_allocator_frame)
{
	const char *b = write_file("p.00001.0001.buckets",
				   "1 malloc 0x10 0x20 0x30 0x40 0x50\n", -1);

	cr_assert_eq(bucketfile_load(&m, b), 0);
	symbolize_model(&m, NULL, NULL);
	name(0, "prof_backtrace_impl", NULL, 0);
	name(1, "?? after malloc_usable_size+0x70", NULL, 0);
	name(2, "malloc", NULL, 0);
	name(3, "grow", "grow.c", 5);
	name(4, "main", "main.c", 3);
	stacktext_tally_functions(&t, &m, stack_of(1), (int64_t[]){ 64 }, 1, true);
	cr_assert_eq(fn("grow")->v[0], 64);
	cr_assert_eq(fn("main")->v[1], 64);
	cr_assert_null(tally_find(&t, "prof_backtrace_impl", 19));
	cr_assert_null(tally_find(&t, "malloc", 6));
}

/*
 * The stack table: a stack is found as it was interned through the
 * table's growth, and what goes past a truncation is gone.
 */
Test(stacks, table_grows_and_truncates)
{
	enum { N = 100000 };
	static const struct stack *got[N];
	uint32_t frames[6];
	uint64_t x = 0x2545f4914f6cdd1dULL;

	for (int pass = 0; pass < 2; pass++) {
		x = 0x2545f4914f6cdd1dULL;
		for (uint32_t i = 0; i < N; i++) {
			const struct stack *s;
			uint32_t depth = i % 7;

			for (uint32_t k = 0; k < depth; k++) {
				x ^= x << 13;
				x ^= x >> 7;
				x ^= x << 17;
				frames[k] = (uint32_t)(x % 5000);
			}
			s = stacks_intern(&m.stacks, frames, depth);
			cr_assert_not_null(s);
			if (!pass)
				got[i] = s;
			else
				cr_assert_eq(s, got[i], "stack %u", i);
		}
	}
	/* (Random stacks this short meet now and then.) */
	cr_assert_leq(m.stacks.n, N);
	cr_assert_gt(m.stacks.n, N / 2);
	stacks_truncate(&m.stacks, 1000);
	cr_assert_eq(m.stacks.n, 1000);
	for (uint32_t i = 0; i < N; i++) {
		const struct stack *s;

		if (got[i]->id >= 1000)
			continue;
		s = stacks_intern(&m.stacks, got[i]->frames, got[i]->depth);
		cr_assert_eq(s, got[i]);
	}
	cr_assert_eq(m.stacks.n, 1000);
	for (uint32_t i = 0; i < N; i++)
		if (got[i]->id >= 1000) {
			const struct stack *s = stacks_intern(
				&m.stacks, got[i]->frames, got[i]->depth);

			cr_assert_eq(s->id, 1000);
			break;
		}
}

/*
 * A model trimmed once its last stacks are in finds them again, gives
 * the next ones the next ids, and truncates, as before.
 */
Test(stacks, trimmed_tables_come_back)
{
	enum { N = 20000 };
	static const struct stack *got[N];
	uint32_t frames[4];
	uint64_t addr[N];

	for (uint32_t i = 0; i < N; i++) {
		addr[i] = 0x400000 + 16 * (uint64_t)(i * 7919 % N);
		cr_assert_eq(frames_intern(&m.frames, addr[i]), i);
	}
	for (uint32_t i = 0; i < N; i++) {
		for (uint32_t k = 0; k < 4; k++)
			frames[k] = (i + k * 31) % N;
		got[i] = stacks_intern(&m.stacks, frames, i % 5);
	}
	model_trim(&m);
	for (uint32_t i = 0; i < N; i++) {
		cr_assert_eq(frames_intern(&m.frames, addr[i]), i);
		cr_assert_eq(stacks_intern(&m.stacks, got[i]->frames,
					   got[i]->depth),
			     got[i]);
	}
	cr_assert_eq(frames_intern(&m.frames, 0x10), N);
	model_trim(&m);
	frames_truncate(&m.frames, 10);
	stacks_truncate(&m.stacks, 10);
	cr_assert_eq(frames_intern(&m.frames, addr[11]), 10);
	frames[0] = 12345;
	cr_assert_eq(stacks_intern(&m.stacks, frames, 1)->id, 10);
	cr_assert_eq(stacks_intern(&m.stacks, got[3]->frames,
				   got[3]->depth),
		     got[3]);
}

/*
 * Frames known to be new appended without their slots: the table is
 * built again when a frame is next interned, or another that holds
 * exactly those frames is taken over.
 */
Test(stacks, frames_appended_then_interned_or_adopted)
{
	struct frame_table copy;

	cr_assert_eq(frames_intern(&m.frames, 0x10), 0);
	for (uint32_t i = 1; i < 10000; i++)
		cr_assert_eq(frames_append(&m.frames, 0x10 * i + 0x10), i);
	cr_assert(m.frames.stale);
	cr_assert_eq(frames_intern(&m.frames, 0x10 * 5000), 4999);
	cr_assert_eq(frames_intern(&m.frames, 0x8), 10000);
	/* Another table of the same frames, taken over. */
	frames_init(&copy, &m.arena);
	for (uint32_t i = 0; i <= 10000; i++)
		frames_intern(&copy, m.frames.v[i]->addr);
	cr_assert_eq(frames_append(&m.frames, 0x9), 10001);
	frames_intern(&copy, 0x9);
	frames_adopt(&m.frames, copy.slots, copy.mask);
	copy.slots = NULL;
	frames_free(&copy);
	cr_assert_not(m.frames.stale);
	for (uint32_t i = 1; i < 10000; i++)
		cr_assert_eq(frames_intern(&m.frames, 0x10 * i + 0x10), i);
	cr_assert_eq(frames_intern(&m.frames, 0x9), 10001);
	cr_assert_eq(frames_intern(&m.frames, 0x7), 10002);
	cr_assert_eq(m.frames.n, 10003);
}

/*
 * The program's own code: a C++ stack, innermost first, of frames in
 * three binaries (the executable, libstdc++, libc) with functions inlined
 * from the system's headers.
 */
static const struct stack *cxx_stack(void)
{
	const char *b = write_file("c.00001.0001.buckets",
				   "9 malloc 0x100 0x200 0x300 0x400 0x500 "
				   "0x600 0x700\n",
				   -1);
	uint32_t exe, stdcxx, libc;

	cr_assert_eq(bucketfile_load(&m, b), 0);
	symbolize_model(&m, NULL, NULL);
	exe = model_binary(&m, strtab_intern_str(&m.strings, "/opt/app/srv"));
	stdcxx = model_binary(&m, strtab_intern_str(
		&m.strings, "/usr/lib/x86_64-linux-gnu/libstdc++.so.6"));
	libc = model_binary(&m, strtab_intern_str(
		&m.strings, "/lib/x86_64-linux-gnu/libc.so.6"));
	m.main_bin = exe;
	name(0, "operator new", NULL, 0);
	m.frames.v[0]->bin = stdcxx;
	name(1, "std::__new_allocator::allocate",
	     "/usr/include/c++/12/bits/new_allocator.h", 137);
	m.frames.v[1]->bin = exe;
	name(2, "std::vector::_M_realloc_insert",
	     "/usr/include/c++/12/bits/vector.tcc", 453);
	m.frames.v[2]->bin = exe;
	name(3, "Session::Session", "/src/srv/session.cc", 21);
	m.frames.v[3]->bin = exe;
	name(4, "worker", "/src/srv/main.cc", 80);
	m.frames.v[4]->bin = exe;
	name(5, "start_thread", "./nptl/pthread_create.c", 442);
	m.frames.v[5]->bin = libc;
	name(6, "clone3", NULL, 0);
	m.frames.v[6]->bin = libc;
	return stack_of(9);
}

Test(stacks, owner_is_the_programs_first_frame)
{
	const struct stack *st = cxx_stack();
	struct owners own = { .rule = OWNER_PROGRAM };

	t.owners = &own;
	stacktext_tally_functions(&t, &m, st, (int64_t[]){ 4096 }, 1, true);
	cr_assert_eq(fn("Session::Session")->v[0], 4096);
	cr_assert_str_eq(fn("Session::Session")->file, "/src/srv/session.cc");
	/* cum as pprof's: every function past the allocator. */
	cr_assert_eq(fn("std::__new_allocator::allocate")->v[0], 0);
	cr_assert_eq(fn("std::__new_allocator::allocate")->v[1], 4096);
	cr_assert_eq(fn("worker")->v[1], 4096);
}

Test(stacks, pprof_owner_is_the_first_frame_past_the_allocator)
{
	const struct stack *st = cxx_stack();

	t.owners = &owners_pprof;
	stacktext_tally_functions(&t, &m, st, (int64_t[]){ 4096 }, 1, true);
	cr_assert_eq(fn("std::__new_allocator::allocate")->v[0], 4096);
	cr_assert_eq(fn("Session::Session")->v[0], 0);
}

Test(stacks, a_stack_without_own_code_keeps_pprofs_owner)
{
	const struct stack *st = cxx_stack();
	struct owners own = { .rule = OWNER_PROGRAM };

	/* The program's frames named as the system's: none is its own. */
	for (size_t i = 3; i < 5; i++)
		m.frames.v[i]->file = "/usr/include/c++/12/x.h";
	t.owners = &own;
	stacktext_tally_functions(&t, &m, st, (int64_t[]){ 8 }, 1, true);
	cr_assert_eq(fn("std::__new_allocator::allocate")->v[0], 8);
	/* (Nor does it hold the program's bytes, for html's answer.) */
	cr_assert_not(stacktext_programs_bytes(&t, &m, st));
}

Test(stacks, the_programs_bytes)
{
	const struct stack *st = cxx_stack();
	struct owners own = { .rule = OWNER_PROGRAM };

	/* Session::Session's vector: the program's; under pprof's rule no
	 * stack is. */
	t.owners = &own;
	cr_assert(stacktext_programs_bytes(&t, &m, st));
	tally_free(&t);
	tally_init(&t);
	t.owners = &owners_pprof;
	cr_assert_not(stacktext_programs_bytes(&t, &m, st));
}

Test(stacks, the_c_runtimes_state_is_not_the_programs)
{
	const struct stack *st = cxx_stack();
	struct owners own = { .rule = OWNER_PROGRAM };

	/* The same stack through stdio's buffer, in libc. */
	name(1, "_IO_file_doallocate", "./libio/filedoalloc.c", 101);
	m.frames.v[1]->bin = m.frames.v[5]->bin;
	t.owners = &own;
	cr_assert_not(stacktext_programs_bytes(&t, &m, st));
	/* (Its owner is still the program's function, in top's table.) */
	stacktext_tally_functions(&t, &m, st, (int64_t[]){ 4096 }, 1, false);
	cr_assert_eq(fn("Session::Session")->v[0], 4096);
	cr_assert(owner_runtime_state("_IO_file_doallocate"));
	cr_assert(owner_runtime_state("__GI__IO_doallocbuf"));
	cr_assert(owner_runtime_state("_dl_new_object"));
	cr_assert(owner_runtime_state("allocate_dtv"));
	cr_assert_not(owner_runtime_state("std::vector::_M_realloc_insert"));
	cr_assert_not(owner_runtime_state("getline"));
	cr_assert_not(owner_runtime_state(NULL));
}

Test(stacks, top_ranks_by_flat_then_cum_then_name)
{
	struct tally_entry *a = tally_get(&t, "b", 1), *b = tally_get(&t, "a", 1);
	struct tally_entry *c = tally_get(&t, "c", 1);

	a->v[0] = b->v[0] = 10;
	a->v[1] = 30;
	b->v[1] = 20;
	c->v[0] = c->v[1] = 10;
	c->v[1] = 20;
	tally_sort(&t, stacktext_cmp_flat);
	cr_assert_str_eq(t.v[0]->key, "b");
	cr_assert_str_eq(t.v[1]->key, "a");
	cr_assert_str_eq(t.v[2]->key, "c");
}

/* A C stack through redis's wrappers: zmalloc <- zmalloc_usable <- ... */
static const struct stack *wrapped_stack(void)
{
	const char *b = write_file("w.00001.0001.buckets",
				   "9 malloc 0x100 0x200 0x300 0x400 0x500\n",
				   -1);
	uint32_t exe;

	cr_assert_eq(bucketfile_load(&m, b), 0);
	symbolize_model(&m, NULL, NULL);
	exe = model_binary(&m, strtab_intern_str(&m.strings, "/opt/r/srv"));
	m.main_bin = exe;
	name(0, "malloc", NULL, 0);
	name(1, "ztrymalloc_usable_internal", "/src/r/zmalloc.c", 120);
	name(2, "zmalloc_usable", "/src/r/zmalloc.c", 150);
	name(3, "_sdsnewlen", "/src/r/sds.c", 88);
	name(4, "main", "/src/r/server.c", 7000);
	for (size_t i = 0; i < 5; i++)
		m.frames.v[i]->bin = exe;
	return stack_of(9);
}

Test(stacks, allocator_wrappers_pass_their_bytes_to_the_caller)
{
	const struct stack *st = wrapped_stack();
	struct owners own;
	struct tally passed;

	memset(&own, 0, sizeof(own));
	owners_builtin_wrappers(&own);
	tally_init(&passed);
	t.owners = &own;
	t.passed = &passed;
	stacktext_tally_functions(&t, &m, st, (int64_t[]){ 4096 }, 1, true);
	cr_assert_eq(fn("_sdsnewlen")->v[0], 4096);
	cr_assert_eq(fn("zmalloc_usable")->v[0], 0);
	cr_assert_eq(fn("zmalloc_usable")->v[1], 4096);
	/* What was passed over, once a stack. */
	cr_assert_eq(passed.n, 2);
	cr_assert_eq(tally_find(&passed, "zmalloc_usable", 14)->bytes, 4096);
	cr_assert_eq(tally_find(&passed, "zmalloc_usable", 14)->allocs, 1);
	/* The wrappers are still the program's code, shown as such. */
	cr_assert(owner_frame_is_own(&own, &m, m.frames.v[2], 0));
	tally_free(&passed);
	owners_release(&own);
}

Test(stacks, pprofs_rule_keeps_the_wrapper)
{
	const struct stack *st = wrapped_stack();
	struct owners own;

	memset(&own, 0, sizeof(own));
	owners_builtin_wrappers(&own);
	own.rule = OWNER_PPROF;
	t.owners = &own;
	stacktext_tally_functions(&t, &m, st, (int64_t[]){ 64 }, 1, true);
	cr_assert_eq(fn("ztrymalloc_usable_internal")->v[0], 64);
	owners_release(&own);
}

Test(stacks, the_built_in_wrappers)
{
	static const char *const wrappers[] = {
		"zmalloc", "zcalloc_num", "ztryrealloc_usable", "zstrdup",
		"g_malloc", "g_malloc0_n", "g_try_realloc", "g_strdup",
		"g_strdup_printf", "g_slice_alloc0", "g_memdup2", "xmalloc",
		"xmallocz_gently", "xcalloc", "xrealloc", "x2nrealloc",
		"xstrdup", "xmemdupz", "do_xmalloc", "palloc", "palloc0",
		"repalloc_huge", "MemoryContextAllocZero", "pstrdup",
		"ngx_alloc", "ngx_palloc", "ngx_pnalloc", "ngx_pcalloc",
		"PyMem_Malloc", "PyMem_RawCalloc", "PyObject_Malloc",
		"_PyObject_GC_New", "pymalloc_alloc", "CRYPTO_malloc",
		"CRYPTO_zalloc", "CRYPTO_strndup", "sqlite3Malloc",
		"sqlite3MallocZero", "sqlite3DbMallocRawNN", "sqlite3_malloc64",
		"luaM_malloc_", "luaM_realloc_", "l_alloc",
		"xmalloc(unsigned long)", "g_malloc(unsigned long) const",
		NULL,
	};
	static const char *const others[] = {
		"zaddCommand", "ziplistNew", "malloc_usable_size",
		"g_ptr_array_add", "g_hash_table_insert", "xz_dec_run",
		"xmalloc_helper", "main", "palloc_stats", "ngx_array_push",
		"PyList_New", "CRYPTO_free", "sqlite3VdbeExec", "luaH_new",
		"(anonymous namespace)::xmalloc", "xmalloc_stats(int)",
		"main.(*T).xmalloc", NULL,
	};
	struct owners o;
	struct strbuf err = STRBUF_INIT;

	memset(&o, 0, sizeof(o));
	cr_assert_eq(owner_wrapper(&o, "zmalloc", 7), -1); /* none yet */
	owners_builtin_wrappers(&o);
	for (size_t i = 0; wrappers[i]; i++)
		cr_assert_geq(owner_wrapper(&o, wrappers[i],
					    strlen(wrappers[i])), 0, "%s",
			      wrappers[i]);
	for (size_t i = 0; others[i]; i++)
		cr_assert_eq(owner_wrapper(&o, others[i], strlen(others[i])),
			     -1, "%s", others[i]);
	cr_assert_str_eq(o.fns[owner_wrapper(&o, "g_new0", 6)].origin,
			 "built-in glib");
	/* The program's own, after the built-in ones, whole names only. */
	cr_assert_eq(owners_add_wrapper(&o, "pool_(get|grow)", "--alloc-fn",
					&err), 0);
	cr_assert_eq(owner_wrapper(&o, "pool_get", 8), (long)o.nfns - 1);
	cr_assert_eq(owner_wrapper(&o, "pool_getter", 11), -1);
	cr_assert_eq(owner_wrapper(&o, "pool_get(int, char*)", 20),
		     (long)o.nfns - 1);
	cr_assert_geq(owners_add_wrapper(&o, "main\\.\\(\\*T\\)\\.get",
					 "--alloc-fn", &err), 0);
	cr_assert_eq(owner_wrapper(&o, "main.(*T).get", 13), (long)o.nfns - 1);
	cr_assert_geq(owners_add_wrapper(&o, "get\\(long\\)", "--alloc-fn",
					 &err), 0);
	cr_assert_eq(owner_wrapper(&o, "get(long)", 9), (long)o.nfns - 1);
	cr_assert_eq(owner_wrapper(&o, "get(int)", 8), -1);
	cr_assert_eq(owners_add_wrapper(&o, "pool_(", "--alloc-fn", &err), -1);
	cr_assert_str_eq(err.buf, "missing closing parenthesis at offset 6");
	sb_release(&err);
	owners_release(&o);
}

Test(stacks, own_frames_by_where_they_live)
{
	struct owners o = { .rule = OWNER_PROGRAM };
	const char *pats[] = { "/usr/lib/x86_64-linux-gnu/libsqlite3*" };
	const struct stack *st = cxx_stack();
	struct frame *lib = m.frames.v[5], *exe = m.frames.v[4];
	uint32_t sqlite = model_binary(&m, strtab_intern_str(
		&m.strings, "/usr/lib/x86_64-linux-gnu/libsqlite3.so.0"));
	uint32_t mine = model_binary(&m, strtab_intern_str(
		&m.strings, "/home/me/build/libmine.so"));

	(void)st;
	cr_assert(owner_frame_is_own(&o, &m, exe, 0));
	cr_assert_not(owner_frame_is_own(&o, &m, lib, 0));
	/* A library outside the system's directories is the program's. */
	lib->bin = mine;
	cr_assert(owner_frame_is_own(&o, &m, lib, 0));
	/* One inside them is not, unless --own names it. */
	lib->bin = sqlite;
	cr_assert_not(owner_frame_is_own(&o, &m, lib, 0));
	o.own = pats;
	o.nown = 1;
	cr_assert(owner_frame_is_own(&o, &m, lib, 0));
	/* A directory as a prefix, on source files too. */
	pats[0] = "/src/srv/";
	lib->file = "/src/srv/db.c";
	cr_assert(owner_frame_is_own(&o, &m, lib, 0));
	/* Never the allocator, nor an address without a name. */
	cr_assert_not(owner_frame_is_own(&o, &m, m.frames.v[0], 0));
	exe->func = NULL;
	cr_assert_not(owner_frame_is_own(&o, &m, exe, 0));
	/* A frame a profile named, with no binary: by its name and file. */
	exe->func = "main.grow";
	exe->func_len = 9;
	exe->bin = 0;
	exe->file = "/home/me/g.go";
	cr_assert(owner_frame_is_own(&o, &m, exe, 0));
	exe->file = "/usr/lib/go-1.19/src/runtime/proc.go";
	cr_assert_not(owner_frame_is_own(&o, &m, exe, 0));
	cr_assert_eq(owners_rule(&o, "pprof"), 0);
	cr_assert_eq(o.rule, OWNER_PPROF);
	cr_assert_eq(owners_rule(&o, "mine"), -1);
}

Test(stacks, compact_text_folds_library_runs)
{
	const struct stack *st = cxx_stack();
	struct owners own = { .rule = OWNER_PROGRAM };
	struct strbuf sb = STRBUF_INIT;

	stack_text_compact(&sb, &m, st, &own, SIZE_MAX);
	cr_assert_str_eq(sb_str(&sb),
			 "\u2026 3 frames in the C++ runtime <- Session::Session "
			 "(session.cc:21) <- worker (main.cc:80) <- \u2026 2 "
			 "frames in libc");
	sb_reset(&sb);
	stack_text_compact(&sb, &m, st, &own, 2);
	cr_assert_str_eq(sb_str(&sb), "\u2026 3 frames in the C++ runtime <- "
				      "Session::Session (session.cc:21) <- ...");
	/* Without a frame of the program's, every frame. */
	for (size_t i = 3; i < 5; i++)
		m.frames.v[i]->file = "/usr/include/c++/12/x.h";
	sb_reset(&sb);
	stack_text_compact(&sb, &m, st, &own, 3);
	cr_assert_str_eq(sb_str(&sb),
			 "operator new <- std::__new_allocator::allocate "
			 "(new_allocator.h:137) <- std::vector::_M_realloc_insert "
			 "(vector.tcc:453) <- ...");
	sb_release(&sb);
}

/*
 * Frames with inlined functions: what a tally keeps of each logical
 * frame (its function's entry, its kind), kept by (frame, logical frame)
 * when the tally is the model's, gives what it gives when nothing is
 * kept (a tally of another model's): over several passes, in which the
 * same frames come again.
 */
Test(stacks, inlined_frames_kept_as_when_not)
{
	static const struct inline_frame in1[] = {
		{ .func = "Entry::make", .file = "entry.h", .line = 5 },
	};
	static const struct inline_frame in5[] = {
		{ .func = "operator new(unsigned long)", .file = NULL },
		{ .func = "step", .file = "walk.h", .line = 2 },
	};
	struct tally plain;
	int other;

	load();
	m.frames.v[1]->inl = in1;
	m.frames.v[1]->ninline = 1;
	m.frames.v[5]->inl = in5;
	m.frames.v[5]->ninline = 2;
	tally_init(&plain);
	plain.by_id_of = &other; /* (another model's: keeps nothing) */
	for (int pass = 0; pass < 3; pass++)
		for (uint64_t id = 1; id <= 4; id++) {
			int64_t add[1] = { (int64_t)(id * 10 + pass) };

			stacktext_tally_functions(&t, &m, stack_of(id), add, 1,
						  pass != 1);
			stacktext_tally_functions(&plain, &m, stack_of(id),
						  add, 1, pass != 1);
		}
	cr_assert_not_null(t.multi_at);
	cr_assert_null(plain.multi_at);
	cr_assert_eq(t.n, plain.n);
	for (size_t i = 0; i < plain.n; i++) {
		const struct tally_entry *p = plain.v[i];
		const struct tally_entry *e = tally_find(&t, p->key, p->len);

		cr_assert_not_null(e, "%s", p->key);
		cr_assert_eq(e->v[0], p->v[0], "%s", p->key);
		cr_assert_eq(e->v[1], p->v[1], "%s", p->key);
		cr_assert_eq(e->line, p->line, "%s", p->key);
	}
	cr_assert_not_null(tally_find(&t, "Entry::make", 11));
	cr_assert_not_null(tally_find(&t, "step", 4));
	tally_free(&plain);
}
