/*
 * Symbol-map directories and the lookup rules of the original (reference
 * section c.3), plus the shared address rule, short names, and how far
 * the naming of a model's frames says it has got.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "helpers.h"
#include "model.h"
#include "symbol.h"
#include "symmap.h"
#include "threads.h"
#include <stdatomic.h>
#include "util.h"

static struct arena arena;
static struct strtab strings;
static const struct sym_options opts;

static void setup(void)
{
	strtab_init(&strings, &arena);
}

TestSuite(symmap, .init = setup);
TestSuite(symbol, .init = setup);

static const char *shorten(const char *name)
{
	static struct strbuf sb;

	return symbol_short_name(name, strlen(name), &sb);
}

Test(symbol, short_names)
{
	cr_assert_str_eq(shorten("WTF::RefCounted<WebCore::CSSValue>::operator "
				 "new(unsigned long)<0000000000aa1820>"),
			 "WTF::RefCounted::operator new");
	cr_assert_str_eq(shorten("std::basic_string<char, std::char_traits<char>"
				 " >* logging::CheckEQImpl<int, int>(int const&"
				 ", int const&, char const*)"),
			 "logging::CheckEQImpl");
	cr_assert_str_eq(shorten("non-virtual thunk to WebKit::X::~X()"),
			 "WebKit::X::~X");
	cr_assert_str_eq(shorten("Foo::bar(int) const"), "Foo::bar");
	cr_assert_str_eq(shorten("Foo::bar(int (*)(char))"), "Foo::bar");
	cr_assert_str_eq(shorten("main"), "main");
	cr_assert_str_eq(shorten("operator<(A const&, B const&)"), "operator<");
	cr_assert_str_eq(shorten(""), "");
	/*
	 * Faithful to the original's regexes: "(anonymous namespace)" is an
	 * argument list to them, and "::f" follows no "word::".
	 */
	cr_assert_str_eq(shorten("void (anonymous namespace)::f()"),
			 "void ::f");
	cr_assert_str_eq(shorten("a b::c d::e(x)"), "d::e");
	cr_assert_str_eq(shorten("f(a(b) const) const g<x<y>>"), "f g");
	cr_assert_str_eq(shorten("a)b(c)d("), "a)bd(");
	cr_assert_str_eq(shorten("f(a) (b) const"), "f ");
}

Test(symbol, short_names_of_hostile_nesting_are_linear)
{
	/* 200,000 levels took the original's repeated passes minutes. */
	static char name[400002];
	size_t n = 200000;

	memset(name, '(', n);
	memset(name + n, ')', n);
	name[0] = 'f';
	name[2 * n - 1] = '\0';
	cr_assert_str_eq(shorten(name), "f");
}

Test(symbol, address_rule)
{
	/* chrome in the original's test data: bucket 4, frame 0. */
	struct vma text = { 0x7f63051cd000ULL, 0x7f630fd06000ULL, 0, 0, 0, 0,
			    "r-xp", "chrome" };
	struct elf_span sections[] = {
		{ 0x270, 0x270, 0x1c },
		{ 0x9fbcc0, 0x9fbcc0, 0x6a0c238 },
	};
	struct vma data = { 0x7f630fd06000ULL, 0x7f631010d000ULL, 0xab38000,
			    0, 0, 0, "r--p", "chrome" };
	struct elf_span relro[] = { { 0xad9b000, 0xad9a000, 0x200000 } };
	/* Overlapping spans: the last one wins, as in the original. */
	struct elf_span overlap[] = { { 0x1000, 0x1000, 0x1000 },
				      { 0x9000, 0x1000, 0x1000 } };
	uint64_t elf;

	cr_assert(elf_address(0x7f6306ff0571ULL, &text, sections, 2, &elf));
	cr_assert_eq(elf, 0x1e23571);
	cr_assert_not(elf_address(0x7f63051cd100ULL, &text, sections, 2,
				  &elf)); /* between sections */
	cr_assert_not(elf_address(0x7f630fd06000ULL, &text, sections, 2,
				  &elf)); /* outside the VMA */
	cr_assert(elf_address(0x7f630ff7e718ULL, &data, relro, 1, &elf));
	cr_assert_eq(elf, 0xadb1718);
	cr_assert(elf_address(0x1800, &(struct vma){ 0x1000, 0x3000, 0x1000,
						     0, 0, 0, "r-xp", "" },
			      overlap, 2, &elf));
	cr_assert_eq(elf, 0x9800);
}

static struct symmap_binary *binary_with(const char *nm, bool mangled)
{
	struct symmap_binary *b = symmap_binary_new("/bin/x");
	const char *p = write_file("x.nm", nm, -1);

	cr_assert_eq(symmap_load_nm(b, p, mangled), 0);
	return b;
}

static const char *fn(struct symmap_binary *b, uint64_t addr)
{
	return symmap_binary_function(b, addr, &strings);
}

Test(symmap, lookup_edges)
{
	struct symmap_binary *b = binary_with(
		"0000000000001000 T first(int)\n"
		"0000000000001000 W first_alias\n"
		"0000000000001100 t second<int>()\n"
		"0000000000001100 T second_real()\n"
		"0000000000001100 t second_too_late()\n"
		"                 U undefined_import\n"
		"0000000000001200 W third\n"
		"0000000000001200 D data_same_address\n"
		"0000000000002000 r typeinfo for Foo\n"
		"0000000000002010 V typeinfo name for Foo\n"
		"0000000000003000 T last()\n", false);

	/* Below the first symbol: the unnamed first range (later "?"). */
	cr_assert_str_eq(fn(b, 0x10), "");
	/* At a start: the previous symbol (right for return addresses). */
	cr_assert_str_eq(fn(b, 0x1000), "");
	cr_assert_str_eq(fn(b, 0x1001), "first");
	cr_assert_str_eq(fn(b, 0x1100), "first");
	/* At one address the first t/T after the first line wins... */
	cr_assert_str_eq(fn(b, 0x1101), "second_too_late");
	/* ...and other types never replace the first. */
	cr_assert_str_eq(fn(b, 0x1201), "third");
	/* Data symbols are ranges too; typeinfo names go in a table. */
	cr_assert_str_eq(fn(b, 0x2001), "typeinfo for Foo");
	cr_assert_str_eq(symmap_binary_typeinfo(b, 0x2000, &strings), "typeinfo for Foo");
	cr_assert_str_eq(symmap_binary_typeinfo(b, 0x2010, &strings),
			 "typeinfo name for Foo");
	cr_assert_null(symmap_binary_typeinfo(b, 0x2001, &strings));
	/* Past the last symbol: still the last (nm gives no sizes). */
	cr_assert_str_eq(fn(b, 0x3001), "last");
	cr_assert_str_eq(fn(b, 0xffffffff), "last");
	symmap_binary_free(b);
}

Test(symmap, nm_32bit_unsorted_and_mangled)
{
	struct symmap_binary *b = binary_with("08048200 T b\n"
					      "08048100 T a\n"
					      "08048300 T c\n", false);

	cr_assert_str_eq(fn(b, 0x08048101), "a");
	cr_assert_str_eq(fn(b, 0x08048201), "b");
	symmap_binary_free(b);
	b = binary_with("0000000000001000 T _ZN3Foo3barEv\n"
			"0000000000002000 V typeinfo for X\n", true);
	cr_assert_str_eq(fn(b, 0x1001), "_ZN3Foo3barEv");
	/* Mangled listings have no demangled typeinfo names. */
	cr_assert_null(symmap_binary_typeinfo(b, 0x2000, &strings));
	symmap_binary_free(b);
}

Test(symmap, nm_errors)
{
	struct symmap_binary *b = symmap_binary_new("/bin/x");
	const char *p = write_file("bad.nm", "0000000000001000 T a\nshort\n", -1);

	capture_stderr();
	cr_assert_eq(symmap_load_nm(b, p, false), -1);
	cr_assert(strstr(stderr_text(), "bad.nm:2: not an 'nm -n --format "
					"bsd' line"));
	symmap_binary_free(b);
}

Test(symmap, readelf_sections)
{
	struct symmap_binary *b = symmap_binary_new("/bin/x");
	const char *p = write_file("x.readelf",
		"ELF Header:\n  Magic: 7f 45\n\n"
		"Section Headers:\n"
		"  [Nr] Name              Type            Address          Off    Size   ES Flg Lk Inf Al\n"
		"  [ 0]                   NULL            0000000000000000 000000 000000 00      0   0  0\n"
		"  [ 1] .text             PROGBITS        0000000000401000 001000 050000 00  AX  0   0 16\n"
		"  [ 2] .rel.dyn          REL             0000000000451000 051000 000100 0c   A  4   0  4\n"
		"  [ 3] .bss              NOBITS          0000000000652400 052400 000800 00  WA  0   0 32\n"
		"Key to Flags:\n"
		"  [ 9] .after            PROGBITS        0000000000999000 099000 000100 00  AX  0   0 16\n",
		-1);
	struct vma v = { 0x400000, 0x452000, 0, 0, 0, 0, "r-xp", "/bin/x" };
	uint64_t elf;

	cr_assert_eq(symmap_load_readelf(b, p), 0);
	cr_assert(symmap_binary_elf_address(b, 0x401234, &v, &elf));
	cr_assert_eq(elf, 0x401234);
	cr_assert(symmap_binary_elf_address(b, 0x451010, &v, &elf));
	cr_assert_eq(elf, 0x451010);
	/* File offset 0 lies in the NULL section only: address 0, none. */
	cr_assert_not(symmap_binary_elf_address(b, 0x400000, &v, &elf));
	symmap_binary_free(b);

	b = symmap_binary_new("/bin/x");
	p = write_file("y.readelf", "not readelf\n", -1);
	capture_stderr();
	cr_assert_eq(symmap_load_readelf(b, p), -1);
	cr_assert(strstr(stderr_text(), "no 'Section Headers:' table"));
	symmap_binary_free(b);
}

Test(symmap, decodedline_sourcefiles)
{
	struct symmap_binary *b = symmap_binary_new("/bin/x");
	const char *p = write_file("x.dl", "1000 ../../a.cc\n"
					   "1800 ../../b.cc extra\n", -1);

	cr_assert_eq(symmap_load_decodedline(b, p), 0);
	cr_assert_str_eq(symmap_binary_sourcefile(b, 0x1001, &strings),
			 "../../a.cc");
	cr_assert_str_eq(symmap_binary_sourcefile(b, 0x1900, &strings),
			 "../../b.cc");
	symmap_binary_free(b);
}

/* A whole directory, through the symbolizer interface. */
Test(symmap, directory_and_symbolize_model)
{
	char dir[600], path[700];
	struct model m;
	struct symbolizer *s;
	FILE *f;
	const char *maps =
		"00400000-00452000 r-xp 00000000 08:01 1 /bin/prog\n"
		"00651000-00652000 r--p 00051000 08:01 1 /bin/prog\n"
		"00700000-00800000 r-xp 00000000 08:01 2 /lib/nosyms.so\n";

	snprintf(dir, sizeof(dir), "%s/p.symmap", tmpdir());
	mkdir(dir, 0755);
#define PUT(name, text)                                                      \
	do {                                                                 \
		snprintf(path, sizeof(path), "%s/%s", dir, name);            \
		f = fopen(path, "w");                                        \
		fputs(text, f);                                              \
		fclose(f);                                                   \
	} while (0)
	PUT("maps", maps);
	PUT("files.json", "{\"/bin/prog\": {\"nm\": {\"file\": \"p.nm\", "
			  "\"format\": \"bsd\", \"mangled\": false}, "
			  "\"readelf-e\": {\"file\": \"p.re\"}},"
			  " \"/bin/absent\": {}}");
	PUT("p.nm", "0000000000401000 T main\n"
		    "0000000000401100 T Foo::run(int)\n"
		    "0000000000651d40 V typeinfo for Foo\n");
	PUT("p.re", "Section Headers:\n"
		    "  [ 1] .text PROGBITS 0000000000401000 001000 050000 00 AX 0 0 16\n"
		    "  [ 2] .data.rel.ro PROGBITS 0000000000651d00 051d00 000200 00 WA 0 0 16\n");
	cr_assert(symmap_present(dir));
	model_init(&m);
	s = symmap_open(dir, &m.strings, &opts);
	cr_assert_not_null(s);
	{
		uint64_t frames[] = { 0x401105, 0x401000, 0x700010, 0x651000,
				      0x900000 };

		model_define_bucket(&m, 1, ALLOC_MALLOC, true, 0x651d40, "3Foo",
				    frames, 5, "t", 1);
		model_define_bucket(&m, 2, ALLOC_MALLOC, true, 0x651d50, "3Bar",
				    frames, 1, "t", 2);
		model_define_bucket(&m, 3, ALLOC_MALLOC, true, 0, "", frames, 1,
				    "t", 3);
	}
	symbolize_model(&m, s, NULL);
	cr_assert_str_eq(m.frames.v[0]->func, "Foo::run");
	cr_assert_str_eq(m.frames.v[1]->func, "?"); /* the unnamed range */
	cr_assert_null(m.frames.v[2]->func);          /* binary without symbols */
	cr_assert_null(m.frames.v[3]->func);          /* not executable */
	cr_assert_null(m.frames.v[4]->func);          /* not mapped */
	cr_assert_str_eq(bucket_type_sym(bucket_set_find(&m.buckets, 1)), "Foo");
	cr_assert_str_eq(bucket_type_sym(bucket_set_find(&m.buckets, 2)),
			 "0x0000000000651d50");
	cr_assert_str_eq(bucket_type_sym(bucket_set_find(&m.buckets, 3)),
			 "no typeinfo");
	symbolizer_destroy(s);
	model_free(&m);
}

Test(symmap, broken_directory)
{
	char dir[600], path[700];
	FILE *f;
	struct model m;

	snprintf(dir, sizeof(dir), "%s/q.symmap", tmpdir());
	mkdir(dir, 0755);
	PUT("maps", "00400000-00452000 r-xp 00000000 08:01 1 /bin/prog\n");
	PUT("files.json", "{\"/bin/prog\": ");
	model_init(&m);
	capture_stderr();
	cr_assert_null(symmap_open(dir, &m.strings, &opts));
	cr_assert(strstr(stderr_text(), "files.json:1:15: unexpected end"));
	/* A missing nm file degrades to unsymbolized, with a warning. */
	PUT("files.json", "{\"/bin/prog\": {\"nm\": {\"file\": \"gone.nm\", "
			  "\"format\": \"bsd\"}}}");
	capture_stderr();
	struct symbolizer *s = symmap_open(dir, &m.strings, &opts);
	cr_assert_not_null(s);
	cr_assert(strstr(stderr_text(), "gone.nm: No such file"));
	cr_assert(strstr(stderr_text(), "symbols of '/bin/prog' not loaded"));
	symbolizer_destroy(s);
	model_free(&m);
}

/*
 * symbolize_model_telling tells how far it has got: never a frame that
 * is not named yet (a printer may read it at once), never far behind,
 * all of them at the end.
 */
static struct progress *told;
static size_t asked;

static bool reached(const struct progress *p, size_t n)
{
	return atomic_load(&p->done) >= n;
}

static void code_checking(struct symbolizer *s, const struct maps *maps,
			  uint64_t addr, struct sym_info *out)
{
	/* Frame ASKED is being named: the ones before it at most. */
	size_t id = (size_t)(addr >> 4) - 1;

	(void)s;
	(void)maps;
	cr_assert_eq(id, asked, "frame %zu named out of order", id);
	cr_assert(!reached(told, id + 2),
		  "frame %zu said named before it was", id);
	cr_assert(reached(told, id + 1 > 512 ? id + 1 - 512 : 1),
		  "frame %zu: the progress is more than 512 frames behind",
		  id);
	out->func = "f";
	asked++;
}

Test(symbol, naming_tells_how_far_it_has_got)
{
	static const struct symbolizer_ops ops = { .name = "checking",
						   .code = code_checking };
	struct sym_options so;
	struct symbolizer s;
	struct progress p;
	struct model m;

	memset(&so, 0, sizeof(so));
	s = (struct symbolizer){ &ops, NULL, &so };
	model_init(&m);
	s.strings = &m.strings;
	for (uint64_t i = 1; i <= 3000; i++)
		cr_assert_eq(frames_intern(&m.frames, i << 4), i - 1);
	progress_init(&p);
	told = &p;
	asked = 0;
	symbolize_model_telling(&m, &s, NULL, &p);
	cr_assert_eq(asked, 3000);
	cr_assert(reached(&p, 3001) && !reached(&p, 3002));
	/* Frames added later: from where it was. */
	for (uint64_t i = 3001; i <= 3100; i++)
		frames_intern(&m.frames, i << 4);
	symbolize_model_telling(&m, &s, NULL, &p);
	cr_assert_eq(asked, 3100);
	cr_assert(reached(&p, 3101));
	progress_free(&p);
	model_free(&m);
}
