/*
 * The DWARF reader (symdwarf.c) on files made here byte by byte: what a
 * hostile file may try (a claimed size, chains of DIEs or of units, a
 * table of 10^5 abbreviations) must end in a declined file or an answer,
 * in bounded time, memory and stack.  Answers themselves are compared
 * with libbfd's on real binaries by tests/real/dwarf.sh.
 */
#include <criterion/criterion.h>
#include <elf.h>
#include <inttypes.h>
#include <libdeflate.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "elfimage.h"
#include "helpers.h"
#include "maps.h"
#include "model.h"
#include "symbfd.h"
#include "symbol.h"
#include "symdwarf.h"
#include "input.h"
#include "util.h"

/* DWARF's numbers, as the tests use them. */
enum {
	TAG_compile_unit = 0x11,
	TAG_subprogram = 0x2e,
	TAG_variable = 0x34,
	AT_name = 0x03,
	AT_stmt_list = 0x10,
	AT_low_pc = 0x11,
	AT_high_pc = 0x12,
	AT_comp_dir = 0x1b,
	AT_abstract_origin = 0x31,
	AT_decl_file = 0x3a,
	AT_specification = 0x47,
	AT_type = 0x49,
	FORM_addr = 0x01,
	FORM_data4 = 0x06,
	FORM_data8 = 0x07,
	FORM_string = 0x08,
	FORM_data1 = 0x0b,
	FORM_strp = 0x0e,
	FORM_ref_addr = 0x10,
	FORM_ref4 = 0x13,
};

/* ---- bytes ---- */

static void put(struct strbuf *b, uint64_t v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sb_addch(b, (int)(v >> (8 * i)) & 0xff);
}

static void uleb(struct strbuf *b, uint64_t v)
{
	do {
		int c = v & 0x7f;

		v >>= 7;
		sb_addch(b, v ? c | 0x80 : c);
	} while (v);
}

static void str(struct strbuf *b, const char *s)
{
	sb_add(b, s, strlen(s) + 1);
}

static void patch32(struct strbuf *b, size_t at, uint64_t v)
{
	uint32_t v32 = (uint32_t)v;

	memcpy(b->buf + at, &v32, 4);
}

/* An abbreviation: CODE, TAG, children or not, then (name, form) pairs
 * up to a 0. */
static void abbrev(struct strbuf *b, uint64_t code, unsigned tag,
		   bool children, ...)
{
	va_list ap;
	unsigned name;

	uleb(b, code);
	uleb(b, tag);
	sb_addch(b, children);
	va_start(ap, children);
	while ((name = va_arg(ap, unsigned)) != 0) {
		uleb(b, name);
		uleb(b, va_arg(ap, unsigned));
	}
	va_end(ap);
	uleb(b, 0);
	uleb(b, 0);
}

/* A unit header of VERSION (2 to 4) with 8-byte addresses, its length
 * patched by unit_end. */
static size_t unit_begin(struct strbuf *b, int version, uint32_t abbrev_off)
{
	size_t start = b->len;

	put(b, 0, 4);
	put(b, (uint64_t)version, 2);
	put(b, abbrev_off, 4);
	put(b, 8, 1);
	return start;
}

static void unit_end(struct strbuf *b, size_t start)
{
	patch32(b, start, b->len - start - 4);
}

/*
 * A version 4 line program: "a.c", line 1 at ADDR, line 2 at ADDR + 16,
 * to ADDR + 32, after SET_FILES times DW_LNS_set_file 1.  Without those,
 * LINE_PROGRAM_SIZE bytes.
 */
#define LINE_PROGRAM_SIZE 59
static void line_program_files(struct strbuf *l, uint64_t addr,
			       int set_files)
{
	static const char lengths[12] = { 0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1 };
	size_t start = l->len, hdr;

	put(l, 0, 4);
	put(l, 4, 2);
	hdr = l->len;
	put(l, 0, 4);
	put(l, 1, 1);    /* minimum_instruction_length */
	put(l, 1, 1);    /* maximum_operations_per_instruction */
	put(l, 1, 1);    /* default_is_stmt */
	put(l, 0xfb, 1); /* line_base -5 */
	put(l, 14, 1);   /* line_range */
	put(l, 13, 1);   /* opcode_base */
	sb_add(l, lengths, sizeof(lengths));
	put(l, 0, 1); /* no directories */
	str(l, "a.c");
	uleb(l, 0);
	uleb(l, 0);
	uleb(l, 0);
	put(l, 0, 1);
	patch32(l, hdr, l->len - hdr - 4);
	put(l, 0, 1); /* DW_LNE_set_address */
	uleb(l, 9);
	put(l, 2, 1);
	put(l, addr, 8);
	for (int i = 0; i < set_files; i++) {
		put(l, 4, 1); /* DW_LNS_set_file */
		uleb(l, 1);
	}
	put(l, 1, 1); /* DW_LNS_copy */
	put(l, 2, 1); /* DW_LNS_advance_pc */
	uleb(l, 16);
	put(l, 3, 1); /* DW_LNS_advance_line */
	uleb(l, 1);
	put(l, 1, 1);
	put(l, 2, 1);
	uleb(l, 16);
	put(l, 0, 1); /* DW_LNE_end_sequence */
	uleb(l, 1);
	put(l, 1, 1);
	patch32(l, start, l->len - start - 4);
	cr_assert_eq(l->len - start, LINE_PROGRAM_SIZE + 2 * (size_t)set_files);
}

static void line_program(struct strbuf *l, uint64_t addr)
{
	line_program_files(l, addr, 0);
}

/* ---- ELF files ---- */

struct section {
	const char *name;
	uint32_t type;
	uint64_t flags, addr, size; /* SIZE: of a NOBITS section */
	struct strbuf data;
};

struct elf {
	struct section s[12];
	int n;
};

static struct strbuf *add_section(struct elf *e, const char *name,
				  uint64_t flags)
{
	struct section *s = &e->s[e->n++];

	memset(s, 0, sizeof(*s));
	s->name = name;
	s->type = SHT_PROGBITS;
	s->flags = flags;
	return &s->data;
}

/* Whether write_elf adds a symbol table (a function over the code). */
static bool with_symbols;

/*
 * The sections, after a .text of code at 0x1000 (NOBITS: nothing needs
 * its bytes) SIZE long; written as NAME in the scratch directory.
 */
static const char *write_elf(struct elf *e, const char *name, uint64_t size)
{
	struct strbuf f = STRBUF_INIT, names = STRBUF_INIT;
	Elf64_Ehdr eh;
	Elf64_Shdr sh[16];
	int n = 0;
	const char *path;

	memset(sh, 0, sizeof(sh));
	sb_addch(&names, 0);
	sb_add(&f, &(Elf64_Ehdr){ 0 }, sizeof(eh));
	n++;
	sh[n].sh_name = (uint32_t)names.len;
	str(&names, ".text");
	sh[n].sh_type = SHT_NOBITS;
	sh[n].sh_flags = SHF_ALLOC | SHF_EXECINSTR;
	sh[n].sh_addr = 0x1000;
	sh[n].sh_offset = f.len;
	sh[n].sh_size = size;
	for (int i = 0; i < e->n; i++) {
		struct section *s = &e->s[i];

		n++;
		while (f.len % 8)
			sb_addch(&f, 0);
		sh[n].sh_name = (uint32_t)names.len;
		str(&names, s->name);
		sh[n].sh_type = s->type;
		sh[n].sh_flags = s->flags;
		sh[n].sh_offset = f.len;
		sh[n].sh_size = s->data.len;
		sh[n].sh_addralign = 1;
		sb_add(&f, s->data.buf, s->data.len);
		sb_release(&s->data);
	}
	if (with_symbols) {
		/* A function "leaf" over the code, in a .symtab. */
		Elf64_Sym sym[2] = { { 0 },
				     { .st_name = 1, .st_info = ELF64_ST_INFO(
							     STB_GLOBAL, STT_FUNC),
				       .st_shndx = 1, .st_value = 0x1000,
				       .st_size = size } };

		n++;
		sh[n].sh_name = (uint32_t)names.len;
		str(&names, ".strtab");
		sh[n].sh_type = SHT_STRTAB;
		sh[n].sh_offset = f.len;
		sh[n].sh_size = 6;
		sb_add(&f, "\0leaf", 6);
		while (f.len % 8)
			sb_addch(&f, 0);
		n++;
		sh[n].sh_name = (uint32_t)names.len;
		str(&names, ".symtab");
		sh[n].sh_type = SHT_SYMTAB;
		sh[n].sh_offset = f.len;
		sh[n].sh_size = sizeof(sym);
		sh[n].sh_entsize = sizeof(sym[0]);
		sh[n].sh_link = (uint32_t)n - 1;
		sh[n].sh_info = 1;
		sb_add(&f, sym, sizeof(sym));
	}
	n++;
	sh[n].sh_name = (uint32_t)names.len;
	str(&names, ".shstrtab");
	sh[n].sh_type = SHT_STRTAB;
	sh[n].sh_offset = f.len;
	sh[n].sh_size = names.len;
	sb_add(&f, names.buf, names.len);
	while (f.len % 8)
		sb_addch(&f, 0);
	memset(&eh, 0, sizeof(eh));
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = ET_EXEC;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	eh.e_ehsize = sizeof(eh);
	eh.e_shoff = f.len;
	eh.e_shentsize = sizeof(Elf64_Shdr);
	eh.e_shnum = (uint16_t)(n + 1);
	eh.e_shstrndx = (uint16_t)n;
	/* One segment from 0, so that a mapping of the file at offset 0
	 * puts its code where the sections say (for the symbolizer). */
	eh.e_phoff = f.len + (size_t)(n + 1) * sizeof(sh[0]);
	eh.e_phentsize = sizeof(Elf64_Phdr);
	eh.e_phnum = 1;
	memcpy(f.buf, &eh, sizeof(eh));
	sb_add(&f, sh, (size_t)(n + 1) * sizeof(sh[0]));
	sb_add(&f, &(Elf64_Phdr){ .p_type = PT_LOAD, .p_flags = PF_R | PF_X,
				  .p_memsz = 0x200000, .p_align = 0x1000 },
	       sizeof(Elf64_Phdr));
	path = write_file(name, f.buf, (long)f.len);
	sb_release(&f);
	sb_release(&names);
	e->n = 0;
	return path;
}

/* ---- asking ---- */

static struct elf_image img;
static struct dwarf *dw;

/* The reader of PATH; NULL (with WHY) when it declines at once. */
static struct dwarf *open_reader(const char *path, const char **why)
{
	struct strbuf err = STRBUF_INIT;

	elfimage_close(&img);
	cr_assert_eq(elfimage_open(&img, path, &err), 0, "%s", err.buf);
	sb_release(&err);
	*why = NULL;
	return dw = dwarf_open(&img, why);
}

/* The reader of E, written as NAME with SIZE bytes of code: taken. */
static void open_elf(struct elf *e, const char *name, uint64_t size)
{
	const char *why;

	cr_assert_not_null(open_reader(write_elf(e, name, size), &why), "%s",
			   why);
}

/* The answer for ADDR: 0, or -1 when the reader declined the file. */
static int ask(uint64_t addr, struct dwarf_answer *out)
{
	const char *why = NULL;

	cr_assert_not_null(dw);
	return dwarf_lookup(dw, &addr, 1, out, &why);
}

/* ADDR is in FUNC, at line LINE of a.c. */
static void answers(uint64_t addr, const char *func, uint32_t line)
{
	struct dwarf_answer a;

	cr_assert_eq(ask(addr, &a), 0, "declined");
	cr_assert_eq(a.nframes, 1);
	cr_assert_str_eq(a.frames[0].func, func);
	cr_assert_str_eq(a.frames[0].file, "a.c");
	cr_assert_eq(a.frames[0].line, line);
}

static void close_reader(void)
{
	dwarf_close(dw);
	dw = NULL;
	elfimage_close(&img);
}

TestSuite(symdwarf, .fini = close_reader);

/* ---- the tests' DWARF ---- */

/* The three sections each test fills. */
struct dw {
	struct strbuf *ab, *in, *li;
};

static struct dw dwarf_sections(struct elf *e)
{
	struct dw w;

	w.ab = add_section(e, ".debug_abbrev", 0);
	w.in = add_section(e, ".debug_info", 0);
	w.li = add_section(e, ".debug_line", 0);
	return w;
}

/* A unit DIE with a line program and 32 bytes of code (unit_die), a
 * function with a name and 32 bytes of code (func_die). */
#define UNIT_ATTRS                                                          \
	AT_stmt_list, FORM_data4, AT_low_pc, FORM_addr, AT_high_pc, FORM_data8
#define FUNC_ATTRS                                                          \
	AT_name, FORM_string, AT_low_pc, FORM_addr, AT_high_pc, FORM_data8

static void unit_die(struct strbuf *in, uint64_t code, uint64_t line_off,
		     uint64_t low)
{
	uleb(in, code);
	put(in, line_off, 4);
	put(in, low, 8);
	put(in, 0x20, 8);
}

static void func_die(struct strbuf *in, uint64_t code, const char *name,
		     uint64_t low)
{
	uleb(in, code);
	str(in, name);
	put(in, low, 8);
	put(in, 0x20, 8);
}

/* A unit of VERSION with function "f" at 0x1000 to 0x1020. */
static void one_function(struct elf *e, int version)
{
	struct dw w = dwarf_sections(e);
	size_t u;

	abbrev(w.ab, 1, TAG_compile_unit, true, UNIT_ATTRS, 0);
	abbrev(w.ab, 2, TAG_subprogram, false, FUNC_ATTRS, 0);
	uleb(w.ab, 0);
	u = unit_begin(w.in, version, 0);
	unit_die(w.in, 1, 0, 0x1000);
	func_die(w.in, 2, "f", 0x1000);
	uleb(w.in, 0);
	unit_end(w.in, u);
	line_program(w.li, 0x1000);
}

/* ---- the tests ---- */

Test(symdwarf, baseline)
{
	struct dwarf_answer a;
	struct elf e = { .n = 0 };

	one_function(&e, 4);
	open_elf(&e, "f", 0x100);
	/* Outside the code, first: no frames, and none made yet (an array
	 * of none was NULL + 0, which UBSan stops). */
	cr_assert_eq(ask(0x10, &a), 0);
	cr_assert_eq(a.nframes, 0);
	answers(0x1008, "f", 1);
	answers(0x1018, "f", 2);
}

/*
 * Functions nested and side by side in one unit: libbfd gives an address
 * the function with the smallest range holding it, the later of two
 * equal ones; the same whether asked one at a time or in a batch (whose
 * functions are found in the order of addresses), in any order.
 */
Test(symdwarf, smallest_function_in_any_order)
{
	static const struct {
		const char *name;
		uint64_t low, len;
	} funcs[] = {
		{ "outer", 0x1000, 0x20 },  { "inner", 0x1004, 0x8 },
		{ "twin_a", 0x1010, 0x8 }, { "twin_b", 0x1010, 0x8 },
		{ "late", 0x1018, 0x4 },
	};
	struct elf e = { .n = 0 };
	struct dw w = dwarf_sections(&e);
	struct dwarf_answer one, many[96];
	uint64_t addrs[96];
	const char *why = NULL;
	size_t u;

	abbrev(w.ab, 1, TAG_compile_unit, true, UNIT_ATTRS, 0);
	abbrev(w.ab, 2, TAG_subprogram, false, FUNC_ATTRS, 0);
	uleb(w.ab, 0);
	u = unit_begin(w.in, 4, 0);
	unit_die(w.in, 1, 0, 0x1000);
	for (size_t i = 0; i < ARRAY_SIZE(funcs); i++) {
		uleb(w.in, 2);
		str(w.in, funcs[i].name);
		put(w.in, funcs[i].low, 8);
		put(w.in, funcs[i].len, 8);
	}
	uleb(w.in, 0);
	unit_end(w.in, u);
	line_program(w.li, 0x1000);
	open_elf(&e, "nested", 0x100);
	/* Each byte three times, in an order all over the unit. */
	for (size_t i = 0; i < ARRAY_SIZE(addrs); i++)
		addrs[i] = 0x1000 + (i * 37 + i / 32) % 32;
	cr_assert_eq(dwarf_lookup(dw, addrs, ARRAY_SIZE(addrs), many, &why), 0);
	/* (A batch's answers live until the next lookup: all of them
	 * first, then one at a time.) */
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < ARRAY_SIZE(addrs); i++) {
			uint64_t a = addrs[i];
			const char *want =
				a >= 0x1004 && a < 0x100c   ? "inner"
				: a >= 0x1010 && a < 0x1018 ? "twin_b"
				: a >= 0x1018 && a < 0x101c ? "late"
							    : "outer";
			const struct dwarf_answer *got = &many[i];

			if (pass) {
				cr_assert_eq(ask(a, &one), 0);
				got = &one;
			}
			cr_assert_eq(got->addr, a);
			cr_assert_eq(got->nframes, 1, "0x%" PRIx64, a);
			cr_assert_str_eq(got->frames[0].func, want,
					 "0x%" PRIx64, a);
			cr_assert_eq(got->frames[0].line, a < 0x1010 ? 1u : 2u);
		}
	}
}

/* A section as SHF_COMPRESSED holds it: claiming SIZE bytes inflated. */
static void compress_section(struct strbuf *data, uint64_t claim)
{
	struct libdeflate_compressor *c = libdeflate_alloc_compressor(9);
	size_t bound = libdeflate_zlib_compress_bound(c, data->len);
	Elf64_Chdr ch = { ELFCOMPRESS_ZLIB, 0, claim, 1 };
	char *z = xmalloc(bound);
	size_t n = libdeflate_zlib_compress(c, data->buf, data->len, z, bound);

	libdeflate_free_compressor(c);
	cr_assert_gt(n, 0);
	sb_reset(data);
	sb_add(data, &ch, sizeof(ch));
	sb_add(data, z, n);
	free(z);
}

/* Address space for what the test needs, and less than a claimed 4 GiB
 * (not under ASan, whose shadow needs terabytes of it). */
static void limit_memory(void)
{
#ifndef __SANITIZE_ADDRESS__
	struct rlimit r;
	unsigned long pages = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	cr_assert_not_null(f);
	cr_assert_eq(fscanf(f, "%lu", &pages), 1);
	fclose(f);
	r.rlim_cur = r.rlim_max = pages * 4096 + (1UL << 30);
	cr_assert_eq(setrlimit(RLIMIT_AS, &r), 0);
#endif
}

/*
 * Compressed sections inflate; a claimed inflated size that the bytes
 * cannot make (deflate's most is 1032 bytes a byte) is declined before
 * it is allocated: 4 GiB from a few bytes ended the run.
 */
Test(symdwarf, compressed_sections_and_sizes_they_cannot_have)
{
	const char *why;
	struct elf e = { .n = 0 };

	one_function(&e, 4);
	for (int i = 0; i < e.n; i++) {
		compress_section(&e.s[i].data, e.s[i].data.len);
		e.s[i].flags |= SHF_COMPRESSED;
	}
	open_elf(&e, "z", 0x100);
	answers(0x1018, "f", 2);
	close_reader();

	limit_memory();
	for (int k = 0; k < 2; k++) {
		one_function(&e, 4);
		/* .debug_info's claim, and .debug_line's. */
		compress_section(&e.s[k ? 2 : 1].data, 1ULL << 32);
		e.s[k ? 2 : 1].flags |= SHF_COMPRESSED;
		cr_assert_null(open_reader(write_elf(&e, "big", 0x100), &why));
		cr_assert_not_null(strstr(why, "compressed"), "%s", why);
		close_reader();
	}
}

/*
 * DW_FORM_ref_addr is an address in a version 2 unit, an offset after:
 * a table shared by units of both is read for each as its version says.
 */
Test(symdwarf, ref_addr_size_by_version)
{
	struct elf e = { .n = 0 };
	struct dw w = dwarf_sections(&e);

	abbrev(w.ab, 1, TAG_compile_unit, true, UNIT_ATTRS, 0);
	abbrev(w.ab, 2, TAG_subprogram, false, FUNC_ATTRS, 0);
	abbrev(w.ab, 3, TAG_variable, false, AT_type, FORM_ref_addr, 0);
	uleb(w.ab, 0);
	for (int version = 2; version <= 4; version += 2) {
		uint64_t at = version == 2 ? 0x1000 : 0x1100;
		size_t u = unit_begin(w.in, version, 0);

		unit_die(w.in, 1, version == 2 ? 0 : LINE_PROGRAM_SIZE, at);
		uleb(w.in, 3);
		put(w.in, 0, version == 2 ? 8 : 4);
		func_die(w.in, 2, version == 2 ? "f" : "g", at);
		uleb(w.in, 0);
		unit_end(w.in, u);
		line_program(w.li, at);
	}
	open_elf(&e, "v24", 0x200);
	answers(0x1008, "f", 1);
	answers(0x1118, "g", 2);
}

/*
 * Units whose function names a DIE of the next unit that has a
 * DW_AT_decl_file: each unit's lines and functions are read while the
 * one before is, and 10^5 of them ran out of stack.  Declined, deep;
 * answered, shallow.
 */
static void unit_chain(struct elf *e, int nunits)
{
	/* Header 11, unit DIE 21, function 6, end 1. */
	enum { UNIT = 39, FUNC_DIE = 32 };
	struct dw w = dwarf_sections(e);

	abbrev(w.ab, 1, TAG_compile_unit, true, UNIT_ATTRS, 0);
	abbrev(w.ab, 2, TAG_subprogram, false, AT_decl_file, FORM_data1,
	       AT_abstract_origin, FORM_ref_addr, 0);
	uleb(w.ab, 0);
	for (int k = 0; k < nunits; k++) {
		size_t u = unit_begin(w.in, 4, 0);

		cr_assert_eq(u, (size_t)k * UNIT);
		unit_die(w.in, 1, (uint64_t)k * LINE_PROGRAM_SIZE,
			 0x1000 + 0x20 * (uint64_t)k);
		uleb(w.in, 2);
		put(w.in, 1, 1);
		/* The next unit's function; the last names none. */
		put(w.in, k + 1 < nunits ? (uint64_t)(k + 1) * UNIT + FUNC_DIE
					 : 0, 4);
		uleb(w.in, 0);
		unit_end(w.in, u);
		line_program(w.li, 0x1000 + 0x20 * (uint64_t)k);
	}
	open_elf(e, "chain", 0x20 * (uint64_t)nunits);
}

Test(symdwarf, chains_of_units)
{
	struct dwarf_answer a;
	struct elf e = { .n = 0 };

	unit_chain(&e, 4);
	cr_assert_eq(ask(0x1008, &a), 0);
	cr_assert_eq(a.nframes, 1);
	cr_assert_eq(a.frames[0].line, 1);
	close_reader();
	unit_chain(&e, 100000);
	cr_assert_eq(ask(0x1008, &a), -2);
}

/*
 * Such a file goes to no reader: libbfd, which reads the files dmprof's
 * reader declines, runs out of stack on that chain of units.  Its frame
 * keeps no source line, and the user is told why.
 */
Test(symdwarf, files_refused_go_to_no_reader, .timeout = 60)
{
	struct elf e = { .n = 0 };
	struct model m;
	struct maps maps;
	struct vma v = { 0x7f0000000000, 0x7f0000200000, 0, 7, 0, 0, "r-xp",
			 NULL };
	struct sym_options opts = { .no_cache = true, .want_source = true };
	struct symbolizer *sym;
	uint64_t frame = 0x7f0000001009; /* (a return address: 0x1008) */
	char path[4096];

	with_symbols = true;
	unit_chain(&e, 100000);
	snprintf(path, sizeof(path), "%s/chain", tmpdir());
	model_init(&m);
	maps_init(&maps);
	v.name = strtab_intern_str(&m.strings, path);
	maps_add(&maps, &v);
	maps_sort(&maps, "t");
	cr_assert_not_null(model_intern_bucket(&m, ALLOC_MALLOC, &frame, 1,
					       "t", 1));
	sym = symbfd_open(&m.strings, &opts);
	capture_stderr();
	symbolize_model(&m, sym, &maps);
	cr_assert(strstr(stderr_text(), "chain: its DWARF is not read (units "
					"naming each other's DIEs 32 deep"),
		  "%s", stderr_text());
	cr_assert_str_eq(m.frames.v[0]->func, "leaf");
	cr_assert_null(m.frames.v[0]->file);
	symbolizer_destroy(sym);
	maps_free(&maps);
	model_free(&m);
}

/*
 * A chain of N DIEs that each name the next as their DW_AT_specification
 * REFS times, the last named "leaf".  Twice each in 60: 2^59 reads, and
 * libbfd's limit of 100 deep never reached.  Once each in 50: followed.
 */
static void specification_chain(struct elf *e, int n, int refs)
{
	/* Header 11, unit DIE 21, function 17 + 4 a reference. */
	size_t die = 11 + 21 + 17 + 4 * (size_t)refs, len = 1 + 4 * (size_t)refs;
	struct dw w = dwarf_sections(e);
	size_t u;

	abbrev(w.ab, 1, TAG_compile_unit, true, UNIT_ATTRS, 0);
	if (refs == 2) {
		abbrev(w.ab, 2, TAG_subprogram, false, AT_low_pc, FORM_addr,
		       AT_high_pc, FORM_data8, AT_specification, FORM_ref4,
		       AT_specification, FORM_ref4, 0);
		abbrev(w.ab, 3, TAG_variable, false, AT_specification,
		       FORM_ref4, AT_specification, FORM_ref4, 0);
	} else {
		abbrev(w.ab, 2, TAG_subprogram, false, AT_low_pc, FORM_addr,
		       AT_high_pc, FORM_data8, AT_specification, FORM_ref4, 0);
		abbrev(w.ab, 3, TAG_variable, false, AT_specification,
		       FORM_ref4, 0);
	}
	abbrev(w.ab, 4, TAG_variable, false, AT_name, FORM_string, 0);
	uleb(w.ab, 0);
	u = unit_begin(w.in, 4, 0);
	unit_die(w.in, 1, 0, 0x1000);
	uleb(w.in, 2);
	put(w.in, 0x1000, 8);
	put(w.in, 0x20, 8);
	for (int r = 0; r < refs; r++)
		put(w.in, die, 4);
	for (int k = 1; k < n; k++) {
		cr_assert_eq(w.in->len, die + (size_t)(k - 1) * len);
		uleb(w.in, 3);
		for (int r = 0; r < refs; r++)
			put(w.in, die + (size_t)k * len, 4);
	}
	uleb(w.in, 4);
	str(w.in, "leaf");
	uleb(w.in, 0);
	unit_end(w.in, u);
	line_program(w.li, 0x1000);
	open_elf(e, "spec", 0x100);
}

Test(symdwarf, trees_of_specifications, .timeout = 20)
{
	struct dwarf_answer a;
	struct elf e = { .n = 0 };

	specification_chain(&e, 50, 1);
	answers(0x1008, "leaf", 1);
	close_reader();
	specification_chain(&e, 60, 2);
	cr_assert_eq(ask(0x1008, &a), -2);
}

/*
 * 400,000 abbreviations of scattered codes: each code is found in a
 * table, not by a search of those before it (8 * 10^10 steps).
 */
Test(symdwarf, many_abbreviations, .timeout = 20)
{
	enum { N = 400000 };
	struct elf e = { .n = 0 };
	struct dw w = dwarf_sections(&e);
	size_t u;

	for (uint64_t k = 0; k < N; k++)
		abbrev(w.ab, 1000 * k + 7, TAG_variable, false, 0);
	abbrev(w.ab, 1000ULL * N + 1, TAG_compile_unit, true, UNIT_ATTRS, 0);
	abbrev(w.ab, 1000ULL * N + 2, TAG_subprogram, false, FUNC_ATTRS, 0);
	uleb(w.ab, 0);
	u = unit_begin(w.in, 4, 0);
	unit_die(w.in, 1000ULL * N + 1, 0, 0x1000);
	uleb(w.in, 7); /* the first, then the middle one */
	uleb(w.in, 1000ULL * (N / 2) + 7);
	func_die(w.in, 1000ULL * N + 2, "f", 0x1000);
	uleb(w.in, 0);
	unit_end(w.in, u);
	line_program(w.li, 0x1000);
	open_elf(&e, "abbrevs", 0x100);
	answers(0x1008, "f", 1);
}

/*
 * 100,000 functions named by DW_FORM_strp at the start of a string of
 * 8 MB: each name's NUL was looked for anew (8 * 10^11 bytes).
 */
Test(symdwarf, long_strings_named_often, .timeout = 20)
{
	enum { N = 100000, LEN = 8 << 20 };
	struct elf e = { .n = 0 };
	struct dw w = dwarf_sections(&e);
	struct strbuf *st = add_section(&e, ".debug_str", 0);
	struct dwarf_answer a;
	char *name;
	size_t u;

	abbrev(w.ab, 1, TAG_compile_unit, true, UNIT_ATTRS, 0);
	abbrev(w.ab, 2, TAG_subprogram, false, AT_name, FORM_strp, 0);
	abbrev(w.ab, 3, TAG_subprogram, false, AT_name, FORM_strp, AT_low_pc,
	       FORM_addr, AT_high_pc, FORM_data8, 0);
	uleb(w.ab, 0);
	name = xmalloc(LEN);
	memset(name, 'f', LEN - 1);
	name[LEN - 1] = '\0';
	sb_add(st, name, LEN);
	u = unit_begin(w.in, 4, 0);
	unit_die(w.in, 1, 0, 0x1000);
	for (int k = 0; k < N; k++) {
		uleb(w.in, 2);
		put(w.in, (uint64_t)k % 64, 4);
	}
	uleb(w.in, 3);
	put(w.in, 0, 4);
	put(w.in, 0x1000, 8);
	put(w.in, 0x20, 8);
	uleb(w.in, 0);
	unit_end(w.in, u);
	line_program(w.li, 0x1000);
	open_elf(&e, "strp", 0x100);
	cr_assert_eq(ask(0x1008, &a), 0);
	cr_assert_eq(a.nframes, 1);
	cr_assert_str_eq(a.frames[0].func, name);
	free(name);
}

/*
 * A line program that names its file 100,000 times, in a unit whose
 * DW_AT_comp_dir is a megabyte long: the file's name is made for the
 * answer, not a megabyte for each DW_LNS_set_file.
 */
Test(symdwarf, file_named_often)
{
	enum { N = 100000, LEN = 1 << 20 };
	struct elf e = { .n = 0 };
	struct dw w = dwarf_sections(&e);
	struct dwarf_answer a;
	char *dir;
	size_t u;

	limit_memory();
	abbrev(w.ab, 1, TAG_compile_unit, true, UNIT_ATTRS, AT_comp_dir,
	       FORM_string, 0);
	uleb(w.ab, 0);
	dir = xmalloc(LEN + 1);
	memset(dir, 'd', LEN);
	dir[0] = '/';
	dir[LEN] = '\0';
	u = unit_begin(w.in, 4, 0);
	unit_die(w.in, 1, 0, 0x1000);
	str(w.in, dir);
	uleb(w.in, 0);
	unit_end(w.in, u);
	line_program_files(w.li, 0x1000, N);
	open_elf(&e, "files", 0x100);
	cr_assert_eq(ask(0x1008, &a), 0);
	cr_assert_eq(a.nframes, 1);
	cr_assert_eq(strlen(a.frames[0].file), LEN + 4);
	cr_assert_str_eq(a.frames[0].file + LEN, "/a.c");
	cr_assert_eq(a.frames[0].line, 1);
	free(dir);
}

/* A table that goes bad after some abbreviations: declined, and (under
 * LeakSanitizer) what was read of it is freed. */
Test(symdwarf, bad_abbreviation_table)
{
	struct strbuf *ab;
	const char *why;
	struct elf e = { .n = 0 };

	one_function(&e, 4);
	ab = &e.s[0].data;
	sb_reset(ab);
	abbrev(ab, 1, TAG_compile_unit, true, AT_stmt_list, FORM_data4, 0);
	abbrev(ab, 2, TAG_subprogram, false, AT_name, FORM_string, 0);
	uleb(ab, 1ULL << 33); /* a code past 32 bits */
	uleb(ab, TAG_variable);
	cr_assert_null(open_reader(write_elf(&e, "badabbrev", 0x100), &why));
	cr_assert_str_eq(why, "a bad abbreviation table");
}

/*
 * A unit whose table has no attributes at all, next to one that answers:
 * the table's one array of attributes is none (NULL + 0 for each
 * abbreviation stopped UBSan: a fuzzer's find).
 */
Test(symdwarf, abbreviation_table_without_attributes)
{
	struct elf e = { .n = 0 };
	struct dw w = dwarf_sections(&e);
	uint32_t bare;
	size_t u;

	abbrev(w.ab, 1, TAG_compile_unit, true, UNIT_ATTRS, 0);
	abbrev(w.ab, 2, TAG_subprogram, false, FUNC_ATTRS, 0);
	uleb(w.ab, 0);
	bare = (uint32_t)w.ab->len;
	abbrev(w.ab, 1, TAG_compile_unit, false, 0);
	abbrev(w.ab, 2, TAG_variable, false, 0);
	uleb(w.ab, 0);
	u = unit_begin(w.in, 4, bare);
	uleb(w.in, 1);
	unit_end(w.in, u);
	u = unit_begin(w.in, 4, 0);
	unit_die(w.in, 1, 0, 0x1000);
	func_die(w.in, 2, "f", 0x1000);
	uleb(w.in, 0);
	unit_end(w.in, u);
	line_program(w.li, 0x1000);
	open_elf(&e, "bare", 0x100);
	answers(0x1008, "f", 1);
}

/* Section headers that are not aligned are not read in place. */
Test(symdwarf, misaligned_section_headers)
{
	struct elf e = { .n = 0 };
	const char *path, *why;
	struct filebuf fb;
	Elf64_Ehdr eh;
	char *b;

	one_function(&e, 4);
	path = write_elf(&e, "misaligned", 0x100);
	cr_assert_eq(file_load(&fb, path), 0);
	/* The headers one byte later, the header saying so. */
	b = xcalloc(1, fb.size + 1);
	memcpy(&eh, fb.data, sizeof(eh));
	memcpy(b, fb.data, eh.e_shoff);
	memcpy(b + eh.e_shoff + 1, (const char *)fb.data + eh.e_shoff,
	       fb.size - eh.e_shoff);
	eh.e_shoff++;
	memcpy(b, &eh, sizeof(eh));
	path = write_file("misaligned", b, (long)fb.size + 1);
	file_release(&fb);
	free(b);
	cr_assert_null(open_reader(path, &why));
	cr_assert_str_eq(why, "no section headers");
}

/*
 * Unit K of a file of such units: VERSION, its abbreviations at
 * ABBREV_OFF (codes UNIT_CODE, then FUNC_CODE), its line program the Kth,
 * function NAME over its 32 bytes of code at 0x1000 + 0x20 * K.
 */
static void unit_k(struct dw *w, int k, int version, uint32_t abbrev_off,
		   uint64_t unit_code, uint64_t func_code, const char *name)
{
	size_t u = unit_begin(w->in, version, abbrev_off);
	uint64_t low = 0x1000 + 0x20 * (uint64_t)k;

	unit_die(w->in, unit_code, (uint64_t)k * LINE_PROGRAM_SIZE, low);
	func_die(w->in, func_code, name, low);
	uleb(w->in, 0);
	unit_end(w->in, u);
	line_program(w->li, low);
}

/*
 * The section's tables are read ahead, one after another, while
 * .debug_info inflates: a table of no attributes, an empty table, one
 * that ends with a code seen already (the read-ahead stops there: where
 * the next starts is not known) and the units' own, after them, are all
 * read as if read when named; a version 2 unit names the same table with
 * other sizes.  Sections as they are, then compressed (.debug_info
 * inflating on another thread meanwhile).
 */
Test(symdwarf, abbreviation_tables_read_ahead)
{
	for (int z = 0; z < 2; z++) {
		struct elf e = { .n = 0 };
		struct dw w = dwarf_sections(&e);
		uint32_t own, own2;

		abbrev(w.ab, 1, TAG_variable, false, 0); /* no attributes */
		uleb(w.ab, 0);
		uleb(w.ab, 0); /* empty */
		own = (uint32_t)w.ab->len;
		abbrev(w.ab, 1, TAG_compile_unit, true, UNIT_ATTRS, 0);
		abbrev(w.ab, 2, TAG_subprogram, false, FUNC_ATTRS, 0);
		uleb(w.ab, 0);
		own2 = (uint32_t)w.ab->len;
		abbrev(w.ab, 3, TAG_compile_unit, true, UNIT_ATTRS, 0);
		abbrev(w.ab, 4, TAG_subprogram, false, FUNC_ATTRS, 0);
		abbrev(w.ab, 3, TAG_variable, false, 0); /* ends it: seen */
		abbrev(w.ab, 5, TAG_variable, false, 0);
		uleb(w.ab, 0);
		unit_k(&w, 0, 4, own, 1, 2, "f");
		unit_k(&w, 1, 4, own2, 3, 4, "g");
		unit_k(&w, 2, 2, own, 1, 2, "h");
		for (int i = 0; z && i < e.n; i++) {
			compress_section(&e.s[i].data, e.s[i].data.len);
			e.s[i].flags |= SHF_COMPRESSED;
		}
		setenv("DMPROF_THREADS", "2", 1);
		open_elf(&e, "ahead", 0x100);
		unsetenv("DMPROF_THREADS");
		answers(0x1008, "f", 1);
		answers(0x1028, "g", 1);
		answers(0x1058, "h", 2);
		close_reader();
	}
}

/* A line program of rows out of order: LOW + 16, then LOW. */
static void line_program_backwards(struct strbuf *l, uint64_t low)
{
	/* (line_program's header, 37 bytes, then rows of its own.) */
	size_t start = l->len;

	line_program(l, low);
	l->len = start + 37;
	for (int i = 0; i < 2; i++) {
		put(l, 0, 1); /* DW_LNE_set_address */
		uleb(l, 9);
		put(l, 2, 1);
		put(l, i ? low : low + 16, 8);
		put(l, 1, 1); /* DW_LNS_copy */
	}
	put(l, 2, 1); /* DW_LNS_advance_pc */
	uleb(l, 32);
	put(l, 0, 1); /* DW_LNE_end_sequence */
	uleb(l, 1);
	put(l, 1, 1);
	patch32(l, start, l->len - start - 4);
}

/*
 * A file of NUNITS units, unit K's code at 0x1000 + 0x20 * K: an even
 * unit has function "fK" and an abstract DIE "gK" with a DW_AT_decl_file;
 * an odd unit's function takes its name from the unit before's "gK",
 * whose DW_AT_decl_file decodes that unit meanwhile (so it cannot be
 * prepared on its own, ahead of the questions).  Unit BAD's line rows go
 * backwards (the file is declined once it is decoded); -1: none.
 */
static void units_for_ahead(struct elf *e, int nunits, int bad)
{
	struct dw w = dwarf_sections(e);
	size_t abstract = 0;

	abbrev(w.ab, 1, TAG_compile_unit, true, UNIT_ATTRS, 0);
	abbrev(w.ab, 2, TAG_subprogram, false, FUNC_ATTRS, 0);
	abbrev(w.ab, 3, TAG_subprogram, false, AT_abstract_origin,
	       FORM_ref_addr, AT_low_pc, FORM_addr, AT_high_pc, FORM_data8, 0);
	abbrev(w.ab, 4, TAG_subprogram, false, AT_decl_file, FORM_data1,
	       AT_name, FORM_string, 0);
	uleb(w.ab, 0);
	for (int k = 0; k < nunits; k++) {
		uint64_t low = 0x1000 + 0x20 * (uint64_t)k;
		size_t u = unit_begin(w.in, 4, 0);
		char name[16];

		unit_die(w.in, 1, w.li->len, low);
		if (k % 2) {
			uleb(w.in, 3);
			put(w.in, abstract, 4);
			put(w.in, low, 8);
			put(w.in, 0x20, 8);
		} else {
			snprintf(name, sizeof(name), "f%d", k);
			func_die(w.in, 2, name, low);
			abstract = w.in->len;
			snprintf(name, sizeof(name), "g%d", k);
			uleb(w.in, 4);
			put(w.in, 1, 1);
			str(w.in, name);
		}
		uleb(w.in, 0);
		unit_end(w.in, u);
		if (k != bad) {
			line_program(w.li, low);
			continue;
		}
		line_program_backwards(w.li, low);
	}
	open_elf(e, "ahead", 0x20 * (uint64_t)nunits);
}

/* The batch ADDRS asked of a file units_for_ahead makes, on THREADS. */
static int ask_ahead(int nunits, int bad, const char *threads,
		     const uint64_t *addrs, size_t n, struct dwarf_answer *out)
{
	struct elf e = { .n = 0 };
	const char *why = NULL;
	int rc;

	close_reader();
	units_for_ahead(&e, nunits, bad);
	setenv("DMPROF_THREADS", threads, 1);
	rc = dwarf_lookup(dw, addrs, n, out, &why);
	unsetenv("DMPROF_THREADS");
	return rc;
}

/*
 * The one frame of each of the N answers of A copied out (the answers
 * live in the reader until it closes); the caller frees them.
 */
static void keep_one_frame(struct dwarf_answer *a, int n)
{
	for (int i = 0; i < n; i++) {
		cr_assert_eq(a[i].nframes, 1);
		a[i].frames = memcpy(xmalloc(sizeof(*a[i].frames)),
				     a[i].frames, sizeof(*a[i].frames));
	}
}

/*
 * Units decoded ahead of the questions, on two threads, answer as units
 * decoded one by one as questions come: the one that another's DIE
 * decodes too, in whatever order the questions come; and a unit that
 * declines the file declines it the same, whether decoded ahead or not.
 */
Test(symdwarf, units_prepared_ahead)
{
	enum { NUNITS = 40, N = 2 * NUNITS };
	static struct dwarf_answer one[N], two[N];
	uint64_t addrs[N];
	char want[16];

	/* The last unit first, each unit's two lines. */
	for (int i = 0; i < N; i++)
		addrs[i] = 0x1000 + 0x20 * (uint64_t)(NUNITS - 1 - i / 2) +
			   (i % 2 ? 0x18 : 0x8);
	cr_assert_eq(ask_ahead(NUNITS, -1, "1", addrs, N, one), 0);
	keep_one_frame(one, N);
	cr_assert_eq(ask_ahead(NUNITS, -1, "2", addrs, N, two), 0);
	for (int i = 0; i < N; i++) {
		int k = NUNITS - 1 - i / 2;

		snprintf(want, sizeof(want), "%c%d", k % 2 ? 'g' : 'f',
			 k - k % 2);
		cr_assert_eq(two[i].addr, addrs[i]);
		cr_assert_eq(two[i].nframes, 1);
		cr_assert_str_eq(two[i].frames[0].func, want);
		cr_assert_str_eq(one[i].frames[0].func, want);
		cr_assert_str_eq(two[i].frames[0].file, "a.c");
		cr_assert_eq(two[i].frames[0].line, one[i].frames[0].line);
		cr_assert_eq(two[i].frames[0].line, i % 2 ? 2u : 1u);
		free((void *)one[i].frames);
	}
	/* An odd unit, then an even one. */
	for (int bad = 19; bad <= 20; bad++) {
		cr_assert_eq(ask_ahead(NUNITS, bad, "1", addrs, N, one), -1);
		cr_assert_eq(ask_ahead(NUNITS, bad, "2", addrs, N, two), -1);
	}
}

/*
 * A batch big enough to be answered on another core while its first
 * answers are read: each answer, taken in order as it comes (the first
 * ones before the last are made), is the one a lookup on one thread
 * gives, and the frames of the first stay where they were while more
 * are made (5,000 answers: frames in more than one block).  A new lookup
 * and closing the reader wait for a batch whose answers were not read.
 */
Test(symdwarf, answers_read_as_they_come)
{
	enum { NUNITS = 40, N = 5000 };
	static struct dwarf_answer one[N], two[N];
	static uint64_t addrs[N];
	static const struct dwarf_frame *first[N];
	struct elf e = { .n = 0 };
	const char *why = NULL;

	for (int i = 0; i < N; i++)
		addrs[i] = 0x1000 + 0x20 * (uint64_t)((i * 7) % NUNITS) +
			   (i % 3 ? 0x18 : 0x8);
	cr_assert_eq(ask_ahead(NUNITS, -1, "1", addrs, N, one), 0);
	keep_one_frame(one, N);
	close_reader();
	units_for_ahead(&e, NUNITS, -1);
	setenv("DMPROF_THREADS", "2", 1);
	cr_assert_eq(dwarf_lookup_start(dw, addrs, N, two, &why), 0);
	for (int i = 0; i < N; i++) {
		const struct dwarf_answer *got;

		/* (Each address is there before its answer.) */
		cr_assert_eq(two[i].addr, addrs[i]);
		got = dwarf_answer(dw, (size_t)i);
		cr_assert_eq(got, &two[i]);
		cr_assert_eq(got->nframes, 1);
		first[i] = got->frames;
		cr_assert_str_eq(got->frames[0].func, one[i].frames[0].func);
		cr_assert_eq(got->frames[0].line, one[i].frames[0].line);
	}
	dwarf_lookup_wait(dw);
	for (int i = 0; i < N; i++) {
		cr_assert_eq(two[i].frames, first[i]);
		cr_assert_str_eq(two[i].frames[0].func, one[i].frames[0].func);
		free((void *)one[i].frames);
	}
	/* Unread: the next lookup, then closing, wait for it. */
	cr_assert_eq(dwarf_lookup_start(dw, addrs, N, two, &why), 0);
	cr_assert_eq(dwarf_lookup_start(dw, addrs, N / 2, one, &why), 0);
	close_reader();
	unsetenv("DMPROF_THREADS");
}

/*
 * A reader begun (.debug_info inflating on another thread) and finished
 * answers as one opened; one begun and closed unfinished lets its thread
 * end; one that declines as it begins says why when finished.
 */
Test(symdwarf, begun_then_finished_or_closed)
{
	struct strbuf err = STRBUF_INIT;
	struct elf e = { .n = 0 };
	const char *why = NULL, *path;
	struct dwarf *d;

	one_function(&e, 4);
	for (int i = 0; i < e.n; i++) {
		compress_section(&e.s[i].data, e.s[i].data.len);
		e.s[i].flags |= SHF_COMPRESSED;
	}
	path = write_elf(&e, "begun", 0x100);
	elfimage_close(&img);
	cr_assert_eq(elfimage_open(&img, path, &err), 0, "%s", err.buf);
	setenv("DMPROF_THREADS", "2", 1);
	dwarf_close(dwarf_begin(&img));
	dw = dwarf_finish(dwarf_begin(&img), &why);
	unsetenv("DMPROF_THREADS");
	cr_assert_not_null(dw, "%s", why);
	answers(0x1018, "f", 2);
	close_reader();

	e.n = 0;
	add_section(&e, ".debug_abbrev", 0);
	cr_assert_eq(elfimage_open(&img, write_elf(&e, "none", 0x100), &err),
		     0, "%s", err.buf);
	d = dwarf_begin(&img);
	cr_assert_null(dwarf_finish(d, &why));
	cr_assert_str_eq(why, "no .debug_info");
	sb_release(&err);
}
