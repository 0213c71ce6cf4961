/*
 * DWARF read directly: libbfd's answers for a batch of addresses, each
 * compilation unit decoded once.
 *
 * libbfd (binutils 2.40, bfd/dwarf2.c) answers an address from the one
 * unit whose ranges hold it: the line of its line table's row, the
 * function of its function table with the smallest range holding the
 * address, and that function's callers through the DIE tree when it is
 * an inlined one.  It has quirks that show in dmprof's output, and this
 * reader keeps them: a function name that is not a "linkage" name (C++
 * without DW_AT_linkage_name) is replaced by the ELF symbol's, found by
 * libbfd's own rule and through its one-entry cache, and the function is
 * renamed for later questions when that symbol starts where the function
 * does; rows of a line sequence at one address keep the last; sequences
 * are trimmed where they overlap; file names join DW_AT_comp_dir, the
 * directory and the name as libbfd does.  Everything this reader does
 * not follow (forms for split DWARF or dwz, units that overlap, rows out
 * of order, opcodes it does not know) makes it decline the file, and
 * libbfd answers instead.
 *
 * Every read is bounded by its section: a hostile file makes it decline,
 * never read astray.  Compressed sections (SHF_COMPRESSED, zlib) are
 * inflated whole with libdeflate, .debug_info on a second thread while
 * the others are inflated, and the abbreviation tables read, here (the
 * caller may work meanwhile: dwarf_begin, dwarf_finish).  The units a
 * batch of addresses needs are decoded on both cores before they are
 * taken in libbfd's order (prepare_ahead).
 */
#include "symdwarf.h"

#include <elf.h>
#include <libdeflate.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "arena.h"
#include "hashmap.h"
#include "leb128.h"
#include "search.h"
#include "threads.h"
#include "util.h"

/* The DWARF constants used here (dwarf.h is not installed). */
enum {
	TAG_entry_point = 0x03,
	TAG_compile_unit = 0x11,
	TAG_subprogram = 0x2e,
	TAG_inlined_subroutine = 0x1d,
	AT_name = 0x03,
	AT_stmt_list = 0x10,
	AT_low_pc = 0x11,
	AT_high_pc = 0x12,
	AT_language = 0x13,
	AT_comp_dir = 0x1b,
	AT_abstract_origin = 0x31,
	AT_specification = 0x47,
	AT_ranges = 0x55,
	AT_call_file = 0x58,
	AT_call_line = 0x59,
	AT_linkage_name = 0x6e,
	AT_str_offsets_base = 0x72,
	AT_addr_base = 0x73,
	AT_MIPS_linkage_name = 0x2007,
	FORM_addr = 0x01,
	FORM_block2 = 0x03,
	FORM_block4 = 0x04,
	FORM_data2 = 0x05,
	FORM_data4 = 0x06,
	FORM_data8 = 0x07,
	FORM_string = 0x08,
	FORM_block = 0x09,
	FORM_block1 = 0x0a,
	FORM_data1 = 0x0b,
	FORM_flag = 0x0c,
	FORM_sdata = 0x0d,
	FORM_strp = 0x0e,
	FORM_udata = 0x0f,
	FORM_ref_addr = 0x10,
	FORM_ref1 = 0x11,
	FORM_ref2 = 0x12,
	FORM_ref4 = 0x13,
	FORM_ref8 = 0x14,
	FORM_ref_udata = 0x15,
	FORM_indirect = 0x16,
	FORM_sec_offset = 0x17,
	FORM_exprloc = 0x18,
	FORM_flag_present = 0x19,
	FORM_line_strp = 0x1f,
	FORM_ref_sig8 = 0x20,
	FORM_implicit_const = 0x21,
	FORM_loclistx = 0x22,
	FORM_data16 = 0x1e,
	LNS_copy = 1,
	LNS_advance_pc,
	LNS_advance_line,
	LNS_set_file,
	LNS_set_column,
	LNS_negate_stmt,
	LNS_set_basic_block,
	LNS_const_add_pc,
	LNS_fixed_advance_pc,
	LNE_end_sequence = 1,
	LNE_set_address = 2,
	LNE_set_discriminator = 4,
	LNCT_path = 1,
	LNCT_directory_index,
	LNCT_timestamp,
	LNCT_size,
	LNCT_MD5,
	RLE_end_of_list = 0,
	RLE_base_address = 5,
	RLE_offset_pair = 4,
	RLE_start_end = 6,
	RLE_start_length = 7,
};

struct section {
	const uint8_t *p;
	size_t size;
	size_t strings;  /* one past its last NUL: strings start before */
	void *owned;     /* inflated copy */
	size_t mapped;   /* its size, when mapped rather than allocated */
	bool present;
	/* Where it lies in the file, for inflating. */
	const uint8_t *raw;
	size_t raw_size;
	bool compressed;
	bool raw_mapped; /* RAW is a mapping of the file's (not memory) */
};

enum { S_INFO, S_ABBREV, S_LINE, S_STR, S_LINE_STR, S_RANGES, S_RNGLISTS,
       NSECT };
static const char *const section_names[NSECT] = {
	".debug_info",	   ".debug_abbrev", ".debug_line",	   ".debug_str",
	".debug_line_str", ".debug_ranges", ".debug_rnglists",
};

/* A bounded reader: running past the end sets BAD and reads zeros. */

struct abbrev_attr {
	uint32_t name, form;
	int64_t implicit;
};

struct abbrev {
	uint32_t code, tag;
	bool children;
	uint32_t nattr;
	uint32_t first;           /* its attributes in the table's array */
	struct abbrev_attr *attr; /* = that array + first */
	int32_t fixed; /* the attributes' size when it is fixed, else -1 */
	bool interesting; /* a function, or a compile unit */
};

struct abbrevs {
	struct abbrev *v;
	size_t n;
	struct abbrev_attr *attrs; /* every abbreviation's, in order */
	struct abbrev **by_code; /* codes 1..ncodes when dense */
	size_t ncodes;
	struct hashmap codes;    /* else code -> index + 1 */
};

/* The forms of DWARF 5 are below it (the GNU ones far above). */
#define FORMS 0x30

/*
 * Where tables are read before they are kept: grown once, for the largest
 * table, and reused (each table's own arrays are then allocated to size:
 * growing them by doubling cost libc's 67,000 abbreviations megabytes of
 * page faults).  Codes seen so far are marked by code in an array while
 * they stay dense (as compilers number them: 1, 2, 3...), in a hash table
 * beyond.
 */
struct abbrev_scratch {
	struct abbrev *v;
	size_t av;
	struct abbrev_attr *attrs;
	size_t aattrs;
	uint8_t *dense;  /* code -> 1 when seen, below ndense */
	size_t ndense;
	struct hashmap sparse;
	/* form_known and form_size of forms below FORMS for units of
	 * SHAPE (see form_sizes; 0: none yet). */
	uint32_t shape;
	int16_t size[FORMS];
	bool known[FORMS];
};

/* libbfd's struct arange: a first range, more after it. */
struct arange {
	uint64_t low, high;
	uint32_t next; /* index + 1 in its pool, 0: none */
};

/*
 * Where ranges after a first one go: the units' in the reader's, a
 * unit's functions' in the unit's own (so that units are prepared on
 * several threads at once).
 */
struct arange_pool {
	struct arange *v;
	size_t n, alloc;
};

/* The range after R in POOL, or NULL. */
static inline const struct arange *arange_next(const struct arange_pool *pool,
					       const struct arange *r)
{
	return r->next ? &pool->v[r->next - 1] : NULL;
}

/*
 * File numbers of line rows and call sites are kept as numbers, and
 * their names joined only for the answers: a name per row or DIE, each
 * DW_AT_comp_dir long, would let a small file ask for terabytes.  (32
 * bits of them, as libbfd's concat_filename takes them.)
 */
#define NO_FILE UINT64_MAX

struct func {
	struct arange ar;
	uint64_t die;     /* offset in .debug_info */
	uint32_t caller;  /* index + 1 in the unit's functions, 0: none */
	uint16_t tag;
	bool is_linkage;
	const char *name;
	uint64_t caller_file; /* or NO_FILE */
	uint32_t caller_line;
};

/*
 * What libbfd's lookup_address_in_function_table answers over a stretch
 * of addresses: FUNC (index + 1, 0: none) from LOW up to the next
 * span's LOW.
 */
struct fspan {
	uint64_t low;
	uint32_t func;
};

struct line_row {
	uint64_t addr;
	uint64_t file; /* or NO_FILE */
	uint32_t line;
	bool end;
};

struct sequence {
	uint64_t low;
	uint32_t first, n; /* rows in the unit's row array */
	uint32_t index;    /* to keep the sort stable, as libbfd does */
};

struct unit {
	size_t off, end;  /* in .debug_info: the header, one past the end */
	size_t die;       /* the unit DIE */
	uint8_t version, addr_size, offset_size;
	uint64_t abbrev_off;
	struct abbrevs *abbrevs;
	int lang;
	bool stmtlist;
	uint64_t line_off;
	const char *comp_dir;
	uint64_t base;
	struct arange ar;
	bool ok;          /* parse_comp_unit succeeded */
	/* Decoded on first need, as libbfd's comp_unit_maybe_decode_line_info. */
	bool decoded, failed;
	const char **files;  /* file number -> its name as concat_filename */
	uint32_t nfiles;
	const char **names;  /* file number -> joined name, when asked for */
	const char **dirs;
	uint32_t ndirs;
	bool dir_file_0;
	struct line_row *rows;
	size_t nrows;
	struct sequence *seqs;
	size_t nseqs;
	struct func *funcs;
	size_t nfuncs;
	struct fspan *spans;
	size_t nspans;
	struct arange_pool fpool; /* its functions' ranges after the first */
	/*
	 * Prepared ahead of the questions (see prepare_ahead), to be taken
	 * in turn: then its ranges that join the unit's ranges in libbfd
	 * once it is decoded (extend's, in order; those within its own
	 * ranges left out), made part of the reader's then.
	 */
	bool ahead;
	struct urange_pair {
		uint64_t low, high;
	} *exts;
	size_t nexts, aexts;
};

/* A symbol as libbfd's _bfd_elf_find_function sees it. */
struct bsym {
	uint64_t value;  /* st_value: absolute */
	uint64_t size;   /* maybe_function_sym's: never 0 */
	uint32_t order;  /* in the table */
	uint16_t shndx;
	const char *name;
};

/* .debug_info inflating on another core (see inflate_begin). */
struct inflating {
	struct section *x;
	bool ok;
	struct task task;
	bool threaded;
	bool others_ok; /* the other sections' */
};

struct dwarf {
	const struct elf_image *img;
	struct section s[NSECT];
	struct inflating info;
	int begun;        /* dwarf_begin's result: 0, or -1 (declined) */
	struct arena arena;
	/* What fills megabytes at once (huge pages): the abbreviation
	 * tables' arrays, the answers' frames. */
	struct arena big;
	struct unit *units;
	size_t nunits;
	/* Units with ranges, sorted by start: one range each. */
	struct urange {
		uint64_t low, high;
		uint32_t unit;
	} *uranges, *ext, *amb;
	size_t nuranges, next, aext, namb, aamb;
	struct hashmap abbrev_tabs; /* offset -> struct abbrevs */
	struct abbrev_scratch scratch;
	struct arange_pool upool;   /* units' ranges after the first */
	/* ELF sections (SHF_ALLOC) in header order, and the symbols. */
	struct esec {
		uint64_t addr, size;
		uint16_t index;
	} *secs;
	size_t nsecs;
	struct bsym *syms; /* by (shndx, value), then libbfd's preference */
	size_t nsyms;
	bool have_syms;
	/* _bfd_elf_find_function's cache. */
	int cache_sec;
	const struct bsym *cache_sym;
	struct strbuf sb;
	struct frame_block *frames; /* the answers' frames; newest first */
	/* A batch's last part, on another core (dwarf_lookup_start). */
	struct task answering;
	bool answering_on;
	struct progress answered;
	struct locus *loci;         /* the batch's, until answered */
	struct dwarf_answer *out;
	size_t nout;
	bool declined;
	bool refused;           /* and libbfd must not read it either */
	const char *why;
	unsigned nesting; /* prepare_unit's, through other units' DIEs */
	struct prep {
		/*
		 * A unit's preparation (its line program decoded, its DIEs
		 * walked): where it writes beside the unit, and how it
		 * fails.  In turn (AHEAD false), as libbfd decodes a unit on
		 * its first question, its effects on the reader are made as
		 * they come (this one is the reader's own).  Ahead of the
		 * questions, on any thread (see prepare_ahead), they are
		 * noted in the unit, and anything that would reach beyond it
		 * (another unit decoded, a decline) fails it instead: it is
		 * then prepared in turn, as if never tried.
		 */
		struct dwarf *d;
		struct unit *u;   /* ahead: the unit being prepared */
		bool ahead;
		bool failed;      /* ahead: something reached beyond U */
		/* Where line programs are decoded (decode_lines). */
		struct line_row *rows;
		struct sequence *seqs;
		size_t arows, aseqs;
	} prep;
};

/*
 * The partition point of [I, N) by STARTS_AT_OR_BELOW (a macro of an
 * index), all before I satisfying it: searched galloping from I, for
 * addresses that come in increasing order (the next one's answer is
 * mostly a few entries on).
 */
#define GALLOP(n, i, starts_at_or_below)                                  \
	({                                                                 \
		size_t step_ = 1, n_ = (n), i_ = (i);                      \
		while (i_ + step_ <= n_ && starts_at_or_below(i_ + step_ - 1)) { \
			i_ += step_;                                       \
			step_ *= 2;                                        \
		}                                                          \
		step_ = i_ + step_ - 1 < n_ ? step_ - 1 : n_ - i_;         \
		i_ + PARTITION_POINT(step_, k_, starts_at_or_below(i_ + k_)); \
	})

/* ---- reading ---- */

static uint64_t rd(struct byte_cur *c, size_t n)
{
	uint64_t v = 0;

	if ((size_t)(c->end - c->p) < n) {
		c->bad = true;
		c->p = c->end;
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)c->p[i] << (8 * i);
	c->p += n;
	return v;
}

static void skip(struct byte_cur *c, uint64_t n)
{
	if ((uint64_t)(c->end - c->p) < n) {
		c->bad = true;
		c->p = c->end;
	} else {
		c->p += n;
	}
}

/* A NUL-terminated string at C, or NULL (empty, as libbfd: none). */
static const char *cstr(struct byte_cur *c)
{
	const uint8_t *z = memchr(c->p, 0, (size_t)(c->end - c->p));
	const char *s = (const char *)c->p;

	if (!z) {
		c->bad = true;
		c->p = c->end;
		return NULL;
	}
	c->p = z + 1;
	return *s ? s : NULL;
}

/*
 * The string at OFF of section S, NULL if empty; BAD when outside.  (Its
 * NUL is not looked for up to the end of the section for each string:
 * 10^5 of them in a section of megabytes without one would take 10^11
 * steps.)
 */
static const char *sec_str(const struct dwarf *d, int s, uint64_t off,
			   bool *bad)
{
	const struct section *x = &d->s[s];

	if (!x->present || off >= x->strings) {
		*bad = true;
		return NULL;
	}
	return x->p[off] ? (const char *)x->p + off : NULL;
}

static int decline(struct dwarf *d, const char *why)
{
	if (!d->declined) {
		d->declined = true;
		d->why = why;
	}
	return -1;
}

/*
 * Decline the file, and tell the caller not to give it to libbfd either:
 * it is built to make a reader work without bound (libbfd 2.40 runs out
 * of stack on a chain of 30,000 units naming each other's DIEs, and reads
 * a tree of specifications 2^N times).
 */
static int refuse(struct dwarf *d, const char *why)
{
	if (!d->declined)
		d->refused = true;
	return decline(d, why);
}

/* A unit's preparation declines (ahead: fails, see struct prep). */
static int prep_decline(struct prep *p, const char *why)
{
	if (p->ahead) {
		p->failed = true;
		return -1;
	}
	return decline(p->d, why);
}

static int prep_refuse(struct prep *p, const char *why)
{
	if (p->ahead) {
		p->failed = true;
		return -1;
	}
	return refuse(p->d, why);
}

/* Has it declined (or, ahead, failed)? */
static bool prep_declined(const struct prep *p)
{
	return p->ahead ? p->failed : p->d->declined;
}

/* ---- the ELF side: sections, symbols, compressed sections ---- */

static int cmp_bsym(const void *a, const void *b)
{
	const struct bsym *x = a, *y = b;

	/* By address; at one, libbfd keeps the biggest, then the first. */
	return CMP(x->shndx, y->shndx) ?: CMP(x->value, y->value) ?:
	       CMP(y->size, x->size) ?: CMP(x->order, y->order);
}

/* cmp_bsym's first two keys in one (values past 2^48 alike: the rest of
 * the order is cmp_bsym's). */
static uint64_t bsym_key(const void *a)
{
	const struct bsym *x = a;
	uint64_t top = ((uint64_t)1 << 48) - 1;

	return (uint64_t)x->shndx << 48 | (x->value < top ? x->value : top);
}

/*
 * The symbols _bfd_elf_maybe_function_sym takes: not sections, files,
 * objects or TLS; not the hidden local untyped zero-sized ones annobin
 * makes; sizes of 0 count as 1.
 */
static void read_symbols(struct dwarf *d, const struct elf_shdr *symtab)
{
	const struct elf_file *f = &d->img->elf;
	struct elf_shdr strs;
	struct elf_symbol e;
	const char *str;
	size_t alloc = 0;

	if (symtab->link >= f->h.shnum || !elf_shdr(f, symtab->link, &strs))
		return;
	str = elf_at(f, strs.offset, strs.size);
	if (!str || !elf_at(f, symtab->offset, symtab->size) || !strs.size ||
	    str[strs.size - 1] || symtab->entsize != elf_sym_size(f))
		return;
	d->have_syms = true;
	for (size_t i = 1; elf_symbol(f, symtab, i, &e); i++) {
		int type = ELF64_ST_TYPE(e.info), bind = ELF64_ST_BIND(e.info);

		if (type == STT_SECTION || type == STT_FILE ||
		    type == STT_OBJECT || type == STT_COMMON ||
		    type == STT_TLS || e.shndx == SHN_UNDEF ||
		    e.shndx >= SHN_LORESERVE || e.name >= strs.size)
			continue;
		if (!e.size && bind == STB_LOCAL && type == STT_NOTYPE &&
		    ELF64_ST_VISIBILITY(e.other) == STV_HIDDEN)
			continue;
		GROW(d->syms, d->nsyms + 1, alloc);
		d->syms[d->nsyms++] = (struct bsym){
			e.value, e.size ? e.size : 1, (uint32_t)i, e.shndx,
			str + e.name
		};
	}
	if (d->nsyms)
		sort_keyed(d->syms, d->nsyms, sizeof(*d->syms), bsym_key,
			   cmp_bsym);
}

static int read_elf(struct dwarf *d)
{
	const struct elf_file *f = &d->img->elf;
	struct elf_shdr sh, names;
	size_t alloc = 0;

	if (!f->is64 || f->size < sizeof(Elf64_Ehdr))
		return decline(d, "not a 64-bit ELF file");
	/* (As every linker puts them: other placings are left to libbfd.) */
	if (!elf_at(f, f->h.shoff, (uint64_t)f->h.shnum * sizeof(Elf64_Shdr)) ||
	    f->h.shoff % _Alignof(Elf64_Shdr) ||
	    f->h.shentsize != sizeof(Elf64_Shdr) ||
	    f->h.shstrndx >= f->h.shnum)
		return decline(d, "no section headers");
	if (!elf_shdr(f, f->h.shstrndx, &names) ||
	    !elf_at(f, names.offset, names.size) || !names.size ||
	    f->data[names.offset + names.size - 1])
		return decline(d, "no section names");
	for (size_t i = 1; i < f->h.shnum; i++) {
		const char *name;

		elf_shdr(f, i, &sh);
		name = sh.name < names.size
			       ? (const char *)f->data + names.offset + sh.name
			       : "";
		if (sh.flags & SHF_ALLOC) {
			GROW(d->secs, d->nsecs + 1, alloc);
			d->secs[d->nsecs++] = (struct esec){
				sh.addr, sh.size, (uint16_t)i
			};
		}
		if (sh.type == SHT_SYMTAB && !d->have_syms)
			read_symbols(d, &sh);
		if (!strcmp(name, ".gnu_debugaltlink") ||
		    !strcmp(name, ".debug_types") || !strncmp(name, ".zdebug", 7))
			return decline(d, "dwz, type units or .zdebug sections");
		for (int k = 0; k < NSECT; k++) {
			struct section *x = &d->s[k];

			if (strcmp(name, section_names[k]) || x->present)
				continue;
			if (sh.type == SHT_NOBITS)
				break;
			x->raw = elf_at(f, sh.offset, sh.size);
			if (!x->raw)
				return decline(d, "a DWARF section past the "
						  "end of the file");
			x->raw_size = sh.size;
			x->raw_mapped = f->mapped;
			x->compressed = sh.flags & SHF_COMPRESSED;
			x->present = true;
		}
	}
	if (!d->s[S_INFO].present || !d->s[S_ABBREV].present)
		return decline(d, "no .debug_info");
	return 0;
}

/*
 * Room for SIZE inflated bytes.  A large section's in huge pages, not
 * faulted in 4 KiB at a time as the inflater writes them: libc's
 * .debug_info is 1,400 pages, and inflating it the longest part of a
 * cold symbolization's start (on a VM, beside the load: 18 ms mapped in
 * one go with MAP_POPULATE, 14 in huge pages; medians of 30 runs).
 */
static void *inflated_buffer(struct section *x, size_t size)
{
	void *p;

	if (size >= (1 << 20) && (p = huge_map(size, &x->mapped)))
		return p;
	return xmalloc(size ? size : 1);
}

/*
 * The file's pages of a section inflated are read no more: out of the
 * process's memory (a mapping of the file, read-only: read again from
 * it if ever touched).  libc's debug file is 4 MB, most of it
 * compressed DWARF.
 */
static void drop_pages(const uint8_t *p, size_t size)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t lo = ((uintptr_t)p + page - 1) & ~(page - 1);
	uintptr_t hi = ((uintptr_t)p + size) & ~(page - 1);

	if (hi > lo)
		madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

/* Inflate a SHF_COMPRESSED section (zlib; zstd is left to libbfd). */
static bool inflate(struct section *x)
{
	struct libdeflate_decompressor *z;
	uint32_t type;
	uint64_t size;
	size_t hdr, got;
	bool ok;

	if (!x->present || !x->compressed) {
		x->p = x->raw;
		x->size = x->raw_size;
		return true;
	}
	/* (The reader takes 64-bit files only.) */
	if (!elf_chdr(true, x->raw, x->raw_size, &type, &size, &hdr))
		return false;
	/*
	 * (A section bigger than 4 GiB inflated is not a debug file.)  The
	 * size is allocated before a byte is inflated: deflate makes at most
	 * 258 bytes of 2 bits, so more than 1032 bytes a byte is a lie, and
	 * a few bytes must not cost gigabytes.
	 */
	if (type != ELFCOMPRESS_ZLIB || size > (1ULL << 32) ||
	    size / 1032 > x->raw_size - hdr)
		return false;
	if (!(z = libdeflate_alloc_decompressor()))
		return false;
	x->owned = inflated_buffer(x, size);
	ok = libdeflate_zlib_decompress(z, x->raw + hdr, x->raw_size - hdr,
					x->owned, size, &got) ==
		     LIBDEFLATE_SUCCESS &&
	     got == size;
	libdeflate_free_decompressor(z);
	x->p = x->owned;
	x->size = size;
	if (ok && x->raw_mapped)
		drop_pages(x->raw, x->raw_size);
	return ok;
}

static void read_all_abbrevs(struct dwarf *d);

static void inflate_task(void *arg)
{
	struct inflating *in = arg;

	in->ok = inflate(in->x);
}

/*
 * The sections inflated: .debug_info, most of the work, on another core
 * until inflate_end, while this one inflates the others and reads the
 * abbreviation tables.
 */
static void inflate_begin(struct dwarf *d)
{
	struct inflating *in = &d->info;

	in->x = &d->s[S_INFO];
	in->ok = false;
	in->threaded = in->x->compressed &&
		       task_start(&in->task, inflate_task, in, false);
	if (!in->threaded)
		in->ok = inflate(in->x);
	in->others_ok = true;
	/* (.debug_abbrev first: its tables are read in the meantime.) */
	for (int k = 1; k < NSECT; k++) {
		if (!inflate(&d->s[k]))
			in->others_ok = false;
		else if (k == S_ABBREV)
			read_all_abbrevs(d);
	}
}

static int inflate_end(struct dwarf *d)
{
	struct inflating *in = &d->info;

	if (in->threaded) {
		task_release(&in->task);
		in->threaded = false;
	}
	if (!in->ok || !in->others_ok)
		return decline(d, "a compressed DWARF section that does not "
				  "inflate (or is not zlib)");
	for (int k = 0; k < NSECT; k++) {
		struct section *x = &d->s[k];
		const uint8_t *z = x->size ? memrchr(x->p, 0, x->size) : NULL;

		x->strings = z ? (size_t)(z - x->p) + 1 : 0;
	}
	return 0;
}

/* ---- abbreviations ---- */

/* The size of a form whose size is fixed, else -1 (0: no bytes). */
static int form_size(uint32_t form, const struct unit *u)
{
	switch (form) {
	case FORM_flag_present:
	case FORM_implicit_const:
		return 0;
	case FORM_data1:
	case FORM_ref1:
	case FORM_flag:
		return 1;
	case FORM_data2:
	case FORM_ref2:
		return 2;
	case FORM_data4:
	case FORM_ref4:
		return 4;
	case FORM_data8:
	case FORM_ref8:
	case FORM_ref_sig8:
		return 8;
	case FORM_data16:
		return 16;
	case FORM_addr:
		return u->addr_size;
	case FORM_strp:
	case FORM_line_strp:
	case FORM_sec_offset:
		return u->offset_size;
	case FORM_ref_addr:
		return u->version >= 3 ? u->offset_size : u->addr_size;
	default:
		return -1;
	}
}

static bool form_known(uint32_t form)
{
	switch (form) {
	case FORM_addr: case FORM_block2: case FORM_block4: case FORM_data2:
	case FORM_data4: case FORM_data8: case FORM_string: case FORM_block:
	case FORM_block1: case FORM_data1: case FORM_flag: case FORM_sdata:
	case FORM_strp: case FORM_udata: case FORM_ref_addr: case FORM_ref1:
	case FORM_ref2: case FORM_ref4: case FORM_ref8: case FORM_ref_udata:
	case FORM_sec_offset: case FORM_exprloc: case FORM_flag_present:
	case FORM_line_strp: case FORM_ref_sig8: case FORM_implicit_const:
	case FORM_data16: case FORM_loclistx:
		return true;
	default:
		/* strx, addrx, rnglistx, indirect, GNU alt: not followed. */
		return false;
	}
}

static bool is_func_tag(uint32_t tag)
{
	return tag == TAG_subprogram || tag == TAG_inlined_subroutine ||
	       tag == TAG_entry_point;
}

/* (Its arrays are in the reader's arena of big things.) */
static void abbrevs_free(struct abbrevs *t)
{
	hashmap_free(&t->codes);
}

/*
 * form_known and form_size of each form for units of U's shape, worked
 * out once: a debug file's tables have hundreds of thousands of
 * attributes (libc's: 309,000), and each switch was a jump the
 * processor could not foresee, form after form.
 */
static void form_sizes(struct abbrev_scratch *s, const struct unit *u)
{
	uint32_t shape = 1u << 24 | (uint32_t)u->version << 16 |
			 (uint32_t)u->addr_size << 8 | u->offset_size;

	if (s->shape == shape)
		return;
	for (uint32_t f = 0; f < FORMS; f++) {
		s->known[f] = form_known(f);
		s->size[f] = (int16_t)form_size(f, u);
	}
	s->shape = shape;
}

static bool code_seen(const struct abbrev_scratch *s, uint64_t code)
{
	if (code < s->ndense && s->dense[code])
		return true;
	return s->sparse.count &&
	       hashmap_get(&s->sparse, hash_u64(code), NULL, NULL) != NULL;
}

/* Mark CODE, the table's Nth: the array grows only as far as 4N + 64. */
static void code_add(struct abbrev_scratch *s, uint64_t code, size_t n)
{
	if (code >= s->ndense && code <= 4 * n + 64) {
		size_t want = s->ndense ? s->ndense : 64;

		while (want <= code)
			want *= 2;
		s->dense = xrecallocarray(s->dense, s->ndense, want, 1);
		s->ndense = want;
	}
	if (code < s->ndense)
		s->dense[code] = 1;
	else
		hashmap_put(&s->sparse, hash_u64(code), (void *)1);
}

/* Forget the codes of the N abbreviations of V, for the next table. */
static void codes_clear(struct abbrev_scratch *s, const struct abbrev *v,
			size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].code < s->ndense)
			s->dense[v[i].code] = 0;
	if (s->sparse.count) {
		hashmap_free(&s->sparse);
		s->sparse = (struct hashmap)HASHMAP_INIT;
	}
}

static void scratch_free(struct abbrev_scratch *s)
{
	free(s->v);
	free(s->attrs);
	free(s->dense);
	hashmap_free(&s->sparse);
}

struct akey {
	uint64_t key;
	struct abbrevs t;
};

/* The key of the table at OFF as a unit of U's sizes reads it. */
static uint64_t abbrev_key(const struct unit *u, uint64_t off)
{
	return off * 4 + (u->offset_size == 8) * 2 + (u->version < 3);
}

/* N elements of SIZE bytes at P, copied to an array of their own. */
static void *copy_array(const void *p, size_t n, size_t size)
{
	return n ? memcpy(xreallocarray(NULL, n, size), p, n * size) : NULL;
}

/* The same in the reader's arena of big things. */
static void *table_copy(struct dwarf *d, const void *p, size_t n,
			size_t size)
{
	return n ? memcpy(arena_alloc(&d->big, st_mult(n, size)), p,
			  n * size)
		 : NULL;
}

/*
 * The table at OFF, read as libbfd's read_abbrevs does: up to a code of
 * 0, the end of the section, or a code seen already.  Sizes depend on
 * the unit's offset size (addresses are 8 bytes here) and, for
 * DW_FORM_ref_addr, on whether its version is 2, so a table is kept per
 * (offset, sizes).  Codes are found in a table, not by a search of those
 * read so far: a section of 10^5 abbreviations must not cost 10^10 steps.
 * *NEXT is where the next table starts, when this one ended with a code
 * of 0; else 0.
 */
static struct abbrevs *read_abbrevs(struct dwarf *d, const struct unit *u,
				    uint64_t off, uint64_t *next)
{
	struct abbrev_scratch *s = &d->scratch;
	struct abbrevs *t;
	struct akey *k;
	struct byte_cur c;
	size_t n = 0, nattrs = 0;
	uint32_t maxcode = 0;
	bool zero = false;

	*next = 0;
	if (off >= d->s[S_ABBREV].size)
		return NULL;
	form_sizes(s, u);
	c = (struct byte_cur){ d->s[S_ABBREV].p + off,
			  d->s[S_ABBREV].p + d->s[S_ABBREV].size, false };
	for (uint64_t code = leb128_u(&c); !c.bad;) {
		struct abbrev *a;

		if (!code) {
			zero = true;
			break;
		}
		if (code > UINT32_MAX)
			goto bad;
		a = PUSH_ZEROED(s->v, n, s->av);
		a->code = (uint32_t)code;
		a->tag = (uint32_t)leb128_u(&c);
		a->children = rd(&c, 1) != 0;
		a->fixed = 0;
		/* (Attributes of all the table's abbreviations in one
		 * array: a->attr is set once it is the table's own.) */
		a->first = (uint32_t)nattrs;
		for (;;) {
			uint64_t name = leb128_u(&c), form = leb128_u(&c);
			int64_t imp = 0;
			int sz;

			if (form == FORM_implicit_const)
				imp = leb128_s(&c);
			if (!name || c.bad)
				break;
			if (!(form < FORMS ? s->known[form]
					   : form_known((uint32_t)form)) ||
			    name > UINT32_MAX) {
				a->fixed = -2; /* declines if ever read */
				form = 0;
			}
			if (nattrs == UINT32_MAX)
				goto bad;
			GROW(s->attrs, nattrs + 1, s->aattrs);
			s->attrs[nattrs++] = (struct abbrev_attr){
				(uint32_t)name, (uint32_t)form, imp
			};
			a->nattr++;
			sz = !form	    ? -1
			     : form < FORMS ? s->size[form]
					    : form_size((uint32_t)form, u);
			/* (Past 2^30 bytes, read attribute by attribute:
			 * the sum must not overflow.) */
			if (a->fixed >= 0)
				a->fixed = sz < 0 || a->fixed > (1 << 30)
						   ? -1
						   : a->fixed + sz;
		}
		a->interesting = is_func_tag(a->tag);
		if (a->code > maxcode)
			maxcode = a->code;
		code_add(s, a->code, n);
		if (c.p >= c.end)
			break;
		code = leb128_u(&c);
		/* A code seen already starts the next table. */
		if (code_seen(s, code))
			break;
	}
	if (c.bad)
		goto bad;
	codes_clear(s, s->v, n);
	k = arena_alloc(&d->arena, sizeof(*k));
	memset(k, 0, sizeof(*k));
	k->key = abbrev_key(u, off);
	t = &k->t;
	t->n = n;
	t->v = table_copy(d, s->v, n, sizeof(*t->v));
	t->attrs = table_copy(d, s->attrs, nattrs, sizeof(*t->attrs));
	/* (A table without attributes has no array: NULL + 0 is undefined,
	 * and each a->attr stays NULL, never read.) */
	for (size_t i = 0; t->attrs && i < n; i++)
		t->v[i].attr = t->attrs + t->v[i].first;
	if (maxcode <= 4 * n + 64) {
		t->ncodes = maxcode;
		t->by_code = arena_alloc(&d->big,
					 st_mult(maxcode + 1,
						 sizeof(*t->by_code)));
		memset(t->by_code, 0, (maxcode + 1) * sizeof(*t->by_code));
		for (size_t i = 0; i < n; i++)
			t->by_code[t->v[i].code] = &t->v[i];
	} else {
		hashmap_init(&t->codes, n);
		for (size_t i = 0; i < n; i++)
			hashmap_put(&t->codes, hash_u64(t->v[i].code),
				    (void *)(uintptr_t)(i + 1));
	}
	hashmap_put(&d->abbrev_tabs, hash_u64(k->key), k);
	if (zero)
		*next = (uint64_t)(c.p - d->s[S_ABBREV].p);
	return t;
bad:
	codes_clear(s, s->v, n);
	return NULL;
}

static struct abbrevs *abbrevs_of(struct dwarf *d, const struct unit *u)
{
	struct akey *k = hashmap_get(&d->abbrev_tabs,
				     hash_u64(abbrev_key(u, u->abbrev_off)),
				     NULL, NULL);
	uint64_t next;

	return k ? &k->t : read_abbrevs(d, u, u->abbrev_off, &next);
}

/*
 * Every table of the section, one after another, as units of DWARF 3 to
 * 5 with 4-byte offsets read them: done while .debug_info inflates on the
 * other core, rather than each as its unit is read once it has (the units
 * name these tables; a unit of other sizes, or naming a table elsewhere,
 * reads its own then).  It stops at a table that does not end with a
 * code of 0 (where the next one starts is then unknown) or does not read.
 */
static void read_all_abbrevs(struct dwarf *d)
{
	const struct unit dwarf5 = { .version = 5, .addr_size = 8,
				     .offset_size = 4 };
	uint64_t off = 0, next;
	size_t n = 0;

	/* (Offsets only grow: no table is read twice.  A file of tables of
	 * one abbreviation each, which no unit names, gets no more memory
	 * from this than from units naming them.) */
	while (off < d->s[S_ABBREV].size && n++ < (1 << 17) &&
	       read_abbrevs(d, &dwarf5, off, &next) && next > off)
		off = next;
}

/* The index + 1 of CODE in T, 0 if it has none. */
static size_t abbrev_index(const struct abbrevs *t, uint64_t code)
{
	return (size_t)(uintptr_t)hashmap_get(&t->codes, hash_u64(code), NULL,
					      NULL);
}

static const struct abbrev *abbrev_find(const struct abbrevs *t,
					uint64_t code)
{
	size_t i;

	/* (Compilers number a table's codes 1, 2, 3...: the Nth is code N,
	 * found without the array of codes.) */
	if (code - 1 < t->n && t->v[code - 1].code == code)
		return &t->v[code - 1];
	if (t->by_code)
		return code <= t->ncodes ? t->by_code[code] : NULL;
	return (i = abbrev_index(t, code)) ? &t->v[i - 1] : NULL;
}

/* ---- attribute values ---- */

struct attr {
	uint32_t form;
	uint64_t val;
	const char *str;
	bool is_str, is_int;
};

/* Read one attribute value as libbfd's read_attribute_value would. */
static bool read_value(const struct dwarf *d, const struct unit *u,
		       struct byte_cur *c, const struct abbrev_attr *aa,
		       struct attr *v)
{
	bool bad = false;

	v->form = aa->form;
	v->str = NULL;
	v->val = 0;
	v->is_str = v->is_int = false;
	if (c->p >= c->end && aa->form != FORM_flag_present)
		return false;
	switch (aa->form) {
	case FORM_flag_present:
		v->val = 1;
		v->is_int = true;
		break;
	case FORM_implicit_const:
		v->val = (uint64_t)aa->implicit;
		v->is_int = true;
		break;
	case FORM_ref_addr:
		v->val = rd(c, u->version >= 3 ? u->offset_size : u->addr_size);
		v->is_int = true;
		break;
	case FORM_addr:
		v->val = rd(c, u->addr_size);
		v->is_int = true;
		break;
	case FORM_sec_offset:
		v->val = rd(c, u->offset_size);
		v->is_int = true;
		break;
	case FORM_data1: case FORM_ref1: case FORM_flag:
		v->val = rd(c, 1);
		v->is_int = true;
		break;
	case FORM_data2: case FORM_ref2:
		v->val = rd(c, 2);
		v->is_int = true;
		break;
	case FORM_data4: case FORM_ref4:
		v->val = rd(c, 4);
		v->is_int = true;
		break;
	case FORM_data8: case FORM_ref8: case FORM_ref_sig8:
		v->val = rd(c, 8);
		v->is_int = true;
		break;
	case FORM_data16:
		skip(c, 16);
		break;
	case FORM_string:
		v->str = cstr(c);
		v->is_str = true;
		break;
	case FORM_strp:
	case FORM_line_strp:
		v->val = rd(c, u->offset_size);
		if (c->bad)
			return false;
		v->str = sec_str(d, aa->form == FORM_strp ? S_STR : S_LINE_STR,
				 v->val, &bad);
		v->is_str = true;
		if (bad)
			return false;
		break;
	case FORM_sdata:
		v->val = (uint64_t)leb128_s(c);
		v->is_int = true;
		break;
	case FORM_udata: case FORM_ref_udata:
		v->val = leb128_u(c);
		v->is_int = true;
		break;
	case FORM_loclistx:
		v->val = leb128_u(c);
		break;
	case FORM_block: case FORM_exprloc:
		skip(c, leb128_u(c));
		break;
	case FORM_block1:
		skip(c, rd(c, 1));
		break;
	case FORM_block2:
		skip(c, rd(c, 2));
		break;
	case FORM_block4:
		skip(c, rd(c, 4));
		break;
	default:
		return false;
	}
	return !c->bad;
}

/* skip_attrs for attributes whose sizes vary, read one by one. */
static __attribute__((noinline)) bool
skip_varied(const struct dwarf *d, const struct unit *u, struct byte_cur *c,
	    const struct abbrev *a)
{
	struct attr v;

	for (uint32_t i = 0; i < a->nattr; i++)
		if (!a->attr[i].form || !read_value(d, u, c, &a->attr[i], &v))
			return false;
	return true;
}

/*
 * Skip a DIE's attributes; false when they do not fit.  (Inline: nine
 * DIEs in ten that a walk passes have attributes of fixed sizes, libc's
 * 400,000 of them.)
 */
static inline bool skip_attrs(const struct dwarf *d, const struct unit *u,
			      struct byte_cur *c, const struct abbrev *a)
{
	if (a->fixed < 0)
		return skip_varied(d, u, c, a);
	/* (libbfd fails reading a form at the unit's end, too.) */
	if (a->nattr && c->p >= c->end)
		return false;
	skip(c, (uint64_t)a->fixed);
	return !c->bad;
}

/* ---- ranges, as libbfd's arange_add ---- */

static void arange_add(struct arange_pool *pool, struct arange *first,
		       uint64_t low, uint64_t high)
{
	struct arange *r;
	uint32_t i;

	if (low == high)
		return;
	if (!first->high) {
		first->low = low;
		first->high = high;
		return;
	}
	for (r = first;; r = &pool->v[i - 1]) {
		if (low == r->high) {
			r->high = high;
			return;
		}
		if (high == r->low) {
			r->low = low;
			return;
		}
		if (!(i = r->next))
			break;
	}
	GROW(pool->v, pool->n + 1, pool->alloc);
	pool->v[pool->n] = (struct arange){ low, high, first->next };
	first->next = (uint32_t)++pool->n;
}

static bool read_rangelist(const struct dwarf *d, const struct unit *u,
			   struct arange_pool *pool, struct arange *ar,
			   uint64_t off)
{
	uint64_t base = u->base;
	struct byte_cur c;

	if (u->version <= 4) {
		const struct section *x = &d->s[S_RANGES];

		if (!x->present || off > x->size)
			return false;
		c = (struct byte_cur){ x->p + off, x->p + x->size, false };
		for (;;) {
			uint64_t lo, hi;

			if ((size_t)(c.end - c.p) < 2u * u->addr_size)
				return false;
			lo = rd(&c, u->addr_size);
			hi = rd(&c, u->addr_size);
			if (!lo && !hi)
				return true;
			if (lo == (u->addr_size == 8 ? ~0ULL : 0xffffffffULL) &&
			    hi != lo)
				base = hi;
			else
				arange_add(pool, ar, base + lo, base + hi);
		}
	}
	{
		const struct section *x = &d->s[S_RNGLISTS];

		if (!x->present || off > x->size)
			return false;
		c = (struct byte_cur){ x->p + off, x->p + x->size, false };
	}
	for (;;) {
		uint64_t lo, hi;

		if (c.p >= c.end)
			return false;
		switch (rd(&c, 1)) {
		case RLE_end_of_list:
			return true;
		case RLE_base_address:
			base = rd(&c, u->addr_size);
			if (c.bad)
				return false;
			continue;
		case RLE_start_length:
			lo = rd(&c, u->addr_size);
			hi = lo + leb128_u(&c);
			break;
		case RLE_offset_pair:
			lo = base + leb128_u(&c);
			hi = base + leb128_u(&c);
			break;
		case RLE_start_end:
			lo = rd(&c, u->addr_size);
			hi = rd(&c, u->addr_size);
			break;
		default:
			return false;
		}
		if (c.bad)
			return false;
		arange_add(pool, ar, lo, hi);
	}
}

/* ---- units ---- */

/* libbfd's mangle_style(lang) == 0: a DW_AT_name is a linkage name. */
static bool plain_names(int lang)
{
	switch (lang) {
	case 0x01: /* C89 */
	case 0x02: /* C */
	case 0x05: /* Cobol74 */
	case 0x06: /* Cobol85 */
	case 0x07: /* Fortran77 */
	case 0x0a: /* Pascal83 */
	case 0x0f: /* PLI */
	case 0x0c: /* C99 */
	case 0x12: /* UPC */
	case 0x1d: /* C11 */
	case 0x8001: /* Mips_Assembler */
	case 0x8765: /* Upc */
	case 0x8101: /* HP_Basic91 */
	case 0x8109: /* HP_IMacro */
	case 0x8107: /* HP_Assembler */
		return true;
	default:
		return false;
	}
}

/* The unit header and its DIE, as libbfd's parse_comp_unit. */
static int read_unit(struct dwarf *d, struct unit *u)
{
	const struct section *x = &d->s[S_INFO];
	struct byte_cur c = { x->p + u->off, x->p + u->end, false };
	uint64_t low = 0, high = 0, len;
	bool high_rel = false;
	const struct abbrev *a;
	struct attr v;
	int unit_type = 1;

	len = rd(&c, 4);
	if (len == 0xffffffff) {
		rd(&c, 8);
		u->offset_size = 8;
	} else {
		u->offset_size = 4;
	}
	(void)len;
	u->version = (uint8_t)rd(&c, 2);
	if (u->version < 2 || u->version > 5)
		return u->version ? decline(d, "a DWARF version other than "
					       "2 to 5")
				  : 0;
	if (u->version >= 5) {
		unit_type = (int)rd(&c, 1);
		u->addr_size = (uint8_t)rd(&c, 1);
	}
	u->abbrev_off = rd(&c, u->offset_size);
	if (u->version < 5)
		u->addr_size = (uint8_t)rd(&c, 1);
	if (c.bad || unit_type != 1 || u->addr_size != 8)
		return decline(d, "a unit that is not a compile unit, or "
				  "addresses that are not 8 bytes");
	u->abbrevs = abbrevs_of(d, u);
	if (!u->abbrevs)
		return decline(d, "a bad abbreviation table");
	u->die = (size_t)(c.p - x->p);
	a = abbrev_find(u->abbrevs, leb128_u(&c));
	if (c.bad || !a)
		return decline(d, "a unit without a DIE");
	for (uint32_t i = 0; i < a->nattr; i++) {
		const struct abbrev_attr *aa = &a->attr[i];

		if (!aa->form || !read_value(d, u, &c, aa, &v))
			return decline(d, "a unit DIE this reader does not "
					  "follow");
		switch (aa->name) {
		case AT_stmt_list:
			if (v.is_int) {
				u->stmtlist = true;
				u->line_off = v.val;
			}
			break;
		case AT_low_pc:
			if (v.is_int) {
				low = v.val;
				if (a->tag == TAG_compile_unit)
					u->base = low;
			}
			break;
		case AT_high_pc:
			if (v.is_int) {
				high = v.val;
				high_rel = aa->form != FORM_addr;
			}
			break;
		case AT_ranges:
			if (v.is_int && !read_rangelist(d, u, &d->upool, &u->ar,
							v.val))
				return decline(d, "a unit's bad range list");
			break;
		case AT_comp_dir:
			u->comp_dir = v.is_str ? v.str : NULL;
			if (u->comp_dir) {
				const char *cp = strchr(u->comp_dir, ':');

				if (cp && cp != u->comp_dir && cp[-1] == '.' &&
				    cp[1] == '/')
					u->comp_dir = cp + 1;
			}
			break;
		case AT_language:
			if (v.is_int)
				u->lang = (int)v.val;
			break;
		case AT_addr_base:
		case AT_str_offsets_base:
			return decline(d, "string or address indexes");
		default:
			break;
		}
	}
	if (high_rel)
		high += low;
	if (high)
		arange_add(&d->upool, &u->ar, low, high);
	u->ok = true;
	return 0;
}

static void ambiguous(struct dwarf *d, uint64_t low, uint64_t high)
{
	GROW(d->amb, d->namb + 1, d->aamb);
	d->amb[d->namb++] = (struct urange){ low, high, 0 };
}

static bool is_ambiguous(const struct dwarf *d, uint64_t addr)
{
	for (size_t i = 0; i < d->namb; i++)
		if (addr >= d->amb[i].low && addr < d->amb[i].high)
			return true;
	return false;
}

static int cmp_urange(const void *a, const void *b)
{
	const struct urange *x = a, *y = b;

	return x->low < y->low ? -1 : x->low > y->low;
}

/*
 * Units with no ranges of their own are tried for every address by
 * libbfd (their line sequences become their ranges): this reader
 * follows only those that cannot answer, with no rows and no function
 * with a range.
 */
static bool prepare_unit(struct dwarf *d, struct unit *u);

static int check_rangeless(struct dwarf *d, struct unit *u)
{
	if (!u->stmtlist)
		return 0; /* (libbfd cannot decode it: never answers) */
	if (!prepare_unit(d, u))
		return -1;
	if (u->nrows)
		return decline(d, "a unit without ranges but with lines");
	for (size_t i = 0; i < u->nfuncs; i++)
		if (u->funcs[i].ar.high)
			return decline(d, "a unit without ranges but with "
					  "functions");
	return 0;
}

/*
 * Every unit's header and ranges.  The ranges are merged per unit into
 * disjoint intervals; ranges of two units must not meet.
 */
static int read_units(struct dwarf *d)
{
	const struct section *x = &d->s[S_INFO];
	size_t off = 0, alloc = 0, ralloc = 0, n = 0;

	while (off < x->size) {
		struct byte_cur c = { x->p + off, x->p + x->size, false };
		uint64_t len = rd(&c, 4);
		struct unit *u;

		if (len == 0xffffffff)
			len = rd(&c, 8);
		if (c.bad || len > (uint64_t)(c.end - c.p))
			return decline(d, "a unit past the end of .debug_info");
		if (!len)
			return decline(d, "an empty unit (padding?)");
		u = PUSH_ZEROED(d->units, d->nunits, alloc);
		u->off = off;
		u->end = (size_t)(c.p - x->p) + (size_t)len;
		off = u->end;
		if (read_unit(d, u) < 0)
			return -1;
	}
	for (size_t i = 0; i < d->nunits; i++) {
		struct unit *u = &d->units[i];
		const struct arange *r;

		if (!u->ok || !u->ar.high)
			continue;
		for (r = &u->ar; r; r = arange_next(&d->upool, r)) {
			if (r->low > r->high)
				return decline(d, "a unit range that ends "
						  "before it starts");
			if (r->low == r->high)
				continue;
			GROW(d->uranges, d->nuranges + 1, ralloc);
			d->uranges[d->nuranges++] = (struct urange){
				r->low, r->high, (uint32_t)i
			};
		}
	}
	if (d->nuranges)
		qsort(d->uranges, d->nuranges, sizeof(*d->uranges),
		      cmp_urange);
	for (size_t i = 0; i < d->nuranges; i++) {
		struct urange *m = n ? &d->uranges[n - 1] : NULL;
		const struct urange *r = &d->uranges[i];

		if (m && r->low <= m->high && r->unit == m->unit) {
			if (r->high > m->high)
				m->high = r->high;
		} else if (m && r->low < m->high) {
			/* Two units claim it (functions the linker dropped
			 * lie at 0 in several): libbfd's order of trying
			 * them would decide, so an address there is not
			 * answered here.  The rest of the range stays. */
			struct urange rest = *r;

			ambiguous(d, r->low, r->high < m->high ? r->high
							      : m->high);
			if (r->high > m->high) {
				rest.low = m->high;
				d->uranges[n++] = rest;
			}
		} else {
			d->uranges[n++] = *r;
		}
	}
	d->nuranges = n;
	for (size_t i = 0; i < d->nunits; i++)
		if (d->units[i].ok && !d->units[i].ar.high &&
		    check_rangeless(d, &d->units[i]) < 0)
			return -1;
	return 0;
}

/* The interval of the first I of D's (by their lows) holding ADDR, or
 * NULL. */
static const struct urange *interval_of(const struct dwarf *d, size_t i,
					uint64_t addr)
{
	return i && addr < d->uranges[i - 1].high ? &d->uranges[i - 1] : NULL;
}

/* The interval holding ADDR, or NULL. */
static const struct urange *interval_at(const struct dwarf *d, uint64_t addr)
{
	return interval_of(d, PARTITION_POINT(d->nuranges, k,
					      d->uranges[k].low <= addr),
			   addr);
}

/*
 * interval_at of each of the N addresses of ADDRS, into AT: walked in
 * their order SORTED (sort_batch's, keys above MIN) beside the intervals
 * (a binary search each, with its mispredicted branches, was a tenth of
 * a cold run: 82,000 addresses in libc's 1,600 units); without it, one
 * by one.
 */
static void intervals_at(const struct dwarf *d, const uint64_t *addrs,
			 size_t n, const uint64_t *sorted, uint64_t min,
			 const struct urange **at)
{
	size_t i = 0;

	if (!sorted) {
		for (size_t k = 0; k < n; k++)
			at[k] = interval_at(d, addrs[k]);
		return;
	}
	for (size_t k = 0; k < n; k++) {
		uint64_t a = (sorted[k] >> 32) + min;

		while (i < d->nuranges && d->uranges[i].low <= a)
			i++;
		at[(uint32_t)sorted[k]] = interval_of(d, i, a);
	}
}

/* Is [LOW, HIGH) within U's own ranges? */
static bool inside_own(const struct dwarf *d, const struct unit *u,
		       uint64_t low, uint64_t high)
{
	const struct urange *r = interval_at(d, low);

	return r && &d->units[r->unit] == u && high <= r->high;
}

/*
 * U's line sequences and function ranges join its ranges in libbfd once
 * it is decoded (GCC's sequences span the padding between functions).
 * Kept aside: an address there is U's only after U was decoded, as in
 * libbfd.  Over another unit's ranges, libbfd's order of trying units
 * would decide: not followed.
 */
static void extend(struct dwarf *d, struct unit *u, uint64_t low,
		   uint64_t high)
{
	size_t i;

	if (inside_own(d, u, low, high))
		return;
	i = PARTITION_POINT(d->nuranges, k, d->uranges[k].high <= low);
	for (; i < d->nuranges && d->uranges[i].low < high; i++)
		if (&d->units[d->uranges[i].unit] != u) {
			/* (Dropped functions at 0 again, mostly.) */
			ambiguous(d, low, high);
			return;
		}
	GROW(d->ext, d->next + 1, d->aext);
	d->ext[d->next++] = (struct urange){ low, high,
					     (uint32_t)(u - d->units) };
}

/*
 * extend(), as a unit's preparation makes it: ahead, noted in the unit
 * for when it is taken (but for what lies within its own ranges, which
 * extend() leaves alone whenever it comes).
 */
static void prep_extend(struct prep *p, struct unit *u, uint64_t low,
			uint64_t high)
{
	if (!p->ahead) {
		extend(p->d, u, low, high);
		return;
	}
	if (inside_own(p->d, u, low, high))
		return;
	GROW(u->exts, u->nexts + 1, u->aexts);
	u->exts[u->nexts++] = (struct urange_pair){ low, high };
}

/*
 * The unit of ADDR: its ranges (R, interval_at's), else a decoded unit's
 * extension.
 */
static struct unit *unit_of(struct dwarf *d, uint64_t addr,
			    const struct urange *r)
{
	struct unit *u, *found = NULL;

	if (r)
		return &d->units[r->unit];
	for (size_t i = 0; i < d->next; i++) {
		if (addr < d->ext[i].low || addr >= d->ext[i].high)
			continue;
		u = &d->units[d->ext[i].unit];
		if (found && found != u) {
			decline(d, "an address in two units' line sequences");
			return NULL;
		}
		found = u;
	}
	return found;
}

/* ---- line tables ---- */

/* libbfd's concat_filename. */
static const char *file_name(struct dwarf *d, const struct unit *u,
			     uint64_t file)
{
	const char *name, *dir_name = NULL, *subdir = NULL;
	uint64_t dir;

	if (!u->dir_file_0) {
		if (file == 0)
			return "<unknown>";
		file--;
	}
	if (file >= u->nfiles)
		return "<unknown>";
	name = u->files[file * 2];
	if (!name)
		return "<unknown>";
	if (name[0] == '/')
		return name;
	dir = (uint64_t)(uintptr_t)u->files[file * 2 + 1];
	if (!u->dir_file_0)
		dir--;
	if (dir < u->ndirs)
		subdir = u->dirs[dir];
	if (!subdir || subdir[0] != '/')
		dir_name = u->comp_dir;
	if (!dir_name) {
		dir_name = subdir;
		subdir = NULL;
	}
	if (!dir_name)
		return name;
	sb_reset(&d->sb);
	if (subdir)
		sb_addf(&d->sb, "%s/%s/%s", dir_name, subdir, name);
	else
		sb_addf(&d->sb, "%s/%s", dir_name, name);
	return arena_strndup(&d->arena, d->sb.buf, d->sb.len);
}

/* The name of file FILE (a row's or a call site's), joined once. */
static const char *file_of(struct dwarf *d, struct unit *u, uint64_t file)
{
	if (file == NO_FILE)
		return NULL;
	/* (Past the table, both numberings are unknown.) */
	if (file > u->nfiles)
		return "<unknown>";
	if (!u->names)
		u->names = xcalloc((size_t)u->nfiles + 1, sizeof(*u->names));
	if (!u->names[file])
		u->names[file] = file_name(d, u, file);
	return u->names[file];
}

/* DWARF 5's directory or file table; NAMES gets (name, dir) pairs or
 * names alone. */
static bool read_entries(const struct dwarf *d, const struct unit *u,
			 struct byte_cur *c, const char ***names, uint32_t *n,
			 bool files)
{
	uint8_t nformat = (uint8_t)rd(c, 1);
	struct byte_cur fmt = *c;
	uint64_t count;
	size_t alloc = 0;

	for (int i = 0; i < nformat; i++) {
		leb128_u(c);
		leb128_u(c);
	}
	count = leb128_u(c);
	if (c->bad || (!nformat && count) || count > (uint64_t)(c->end - c->p))
		return false;
	for (uint64_t k = 0; k < count; k++) {
		const char *name = NULL;
		uint64_t dir = 0;
		struct byte_cur f = fmt;

		for (int i = 0; i < nformat; i++) {
			uint64_t type = leb128_u(&f), form = leb128_u(&f);
			struct abbrev_attr aa = { 0, (uint32_t)form, 0 };
			struct attr v;

			if (type < LNCT_path || type > LNCT_MD5 ||
			    form == FORM_implicit_const || !form_known((uint32_t)form) ||
			    !read_value(d, u, c, &aa, &v))
				return false;
			/* (libbfd takes a path in these forms only.) */
			if (type == LNCT_path &&
			    (form == FORM_string || form == FORM_line_strp))
				name = v.str;
			else if (type == LNCT_directory_index &&
				 (form == FORM_data1 || form == FORM_data2 ||
				  form == FORM_data4 || form == FORM_data8 ||
				  form == FORM_udata))
				dir = v.val;
		}
		GROW(*names, (*n + 1) * 2, alloc);
		(*names)[*n * (files ? 2 : 1)] = name;
		if (files)
			(*names)[*n * 2 + 1] = (const char *)(uintptr_t)(uint32_t)dir;
		(*n)++;
	}
	return true;
}

static int cmp_seq(const void *a, const void *b, void *arg)
{
	const struct sequence *x = a, *y = b;
	const struct line_row *rows = arg;
	uint64_t xh = rows[x->first + x->n - 1].addr,
		 yh = rows[y->first + y->n - 1].addr;

	if (x->low != y->low)
		return x->low < y->low ? -1 : 1;
	if (xh != yh)
		return xh < yh ? 1 : -1;
	return x->index < y->index ? -1 : x->index > y->index;
}

static void add_row(struct prep *p, struct unit *u, size_t *alloc,
		    size_t *salloc, uint64_t addr, uint64_t file,
		    uint32_t line, bool end)
{
	struct sequence *s = u->nseqs ? &u->seqs[u->nseqs - 1] : NULL;
	struct line_row *last = u->nrows ? &u->rows[u->nrows - 1] : NULL;

	if (s && last->addr == addr && last->end == end) {
		/* libbfd keeps the last row of an address. */
		*last = (struct line_row){ addr, file, line, end };
		return;
	}
	if (!s || last->end) {
		GROW(u->seqs, u->nseqs + 1, *salloc);
		s = &u->seqs[u->nseqs++];
		s->low = addr;
		s->first = (uint32_t)u->nrows;
		s->n = 0;
	} else if (addr < last->addr) {
		/* Rows out of order: libbfd sorts them its own way. */
		prep_decline(p, "line rows out of order");
	}
	GROW(u->rows, u->nrows + 1, *alloc);
	u->rows[u->nrows++] = (struct line_row){ addr, file, line, end };
	s->n++;
}

/*
 * libbfd's decode_line_info, for U's line program, into U's rows and
 * sequences of ALLOC and SALLOC (grown as they must).
 */
static bool decode_program(struct prep *p, struct unit *u, size_t *alloc,
			   size_t *salloc)
{
	const struct dwarf *d = p->d;
	const struct section *x = &d->s[S_LINE];
	struct byte_cur c;
	uint64_t len, hdr;
	uint8_t min_insn, max_ops, def_stmt, range, opbase;
	int8_t line_base;
	const uint8_t *lengths;
	size_t nlive;
	int version, offset_size = 4;

	if (!x->present || x->size < 16 || u->line_off >= x->size)
		return false;
	c = (struct byte_cur){ x->p + u->line_off, x->p + x->size, false };
	len = rd(&c, 4);
	if (len == 0xffffffff) {
		len = rd(&c, 8);
		offset_size = 8;
	} else if (len == 0) {
		return false; /* (libbfd's "64-bit DWARF 2": not followed) */
	}
	if (len > (uint64_t)(c.end - c.p))
		return false;
	c.end = c.p + len;
	version = (int)rd(&c, 2);
	if (version < 2 || version > 5)
		return false;
	if (c.p + offset_size + (version >= 5 ? 8 : version >= 4 ? 6 : 5) >=
	    c.end)
		return false;
	if (version >= 5) {
		rd(&c, 1);
		if (rd(&c, 1))
			return false;
	}
	hdr = rd(&c, (size_t)offset_size);
	(void)hdr;
	min_insn = (uint8_t)rd(&c, 1);
	max_ops = version >= 4 ? (uint8_t)rd(&c, 1) : 1;
	def_stmt = (uint8_t)rd(&c, 1);
	(void)def_stmt;
	line_base = (int8_t)rd(&c, 1);
	range = (uint8_t)rd(&c, 1);
	opbase = (uint8_t)rd(&c, 1);
	if (max_ops != 1 || !range || !opbase)
		return prep_decline(p, "VLIW line programs"), false;
	if (c.p + (opbase - 1) >= c.end)
		return false;
	lengths = c.p - 1; /* lengths[op] for 1 <= op < opbase */
	c.p += opbase - 1;
	if (version >= 5) {
		if (!read_entries(p->d, u, &c, &u->dirs, &u->ndirs, false) ||
		    !read_entries(p->d, u, &c, &u->files, &u->nfiles, true))
			return false;
		u->dir_file_0 = true;
	} else {
		const char *s;
		size_t a = 0, fa = 0;

		while ((s = cstr(&c)) != NULL) {
			GROW(u->dirs, u->ndirs + 1, a);
			u->dirs[u->ndirs++] = s;
		}
		while (!c.bad && (s = cstr(&c)) != NULL) {
			uint64_t dir = leb128_u(&c);

			leb128_u(&c);
			leb128_u(&c);
			GROW(u->files, (u->nfiles + 1) * 2, fa);
			u->files[u->nfiles * 2] = s;
			u->files[u->nfiles * 2 + 1] =
				(const char *)(uintptr_t)(uint32_t)dir;
			u->nfiles++;
		}
		if (c.bad)
			return false;
	}
	while (c.p < c.end) {
		uint64_t addr = 0, low = ~0ULL, high = 0;
		uint32_t line = 1;
		uint64_t file = NO_FILE;
		bool end = false;

		if (u->nfiles)
			file = u->dir_file_0 ? 0 : 1;
		while (!end && c.p < c.end) {
			uint8_t op = (uint8_t)rd(&c, 1);

			if (op >= opbase) {
				uint8_t adj = op - opbase;

				addr += (uint64_t)(adj / range) * min_insn;
				line += (uint32_t)(line_base + adj % range);
				add_row(p, u, alloc, salloc, addr, file,
					line, false);
				low = addr < low ? addr : low;
				high = addr > high ? addr : high;
				continue;
			}
			switch (op) {
			case 0: {
				uint64_t n = leb128_u(&c);

				(void)n;
				switch (rd(&c, 1)) {
				case LNE_end_sequence:
					end = true;
					add_row(p, u, alloc, salloc, addr,
						file, line, true);
					low = addr < low ? addr : low;
					high = addr > high ? addr : high;
					/* libbfd's unit grows by its
					 * sequences: they must be in it. */
					if (low < high)
						prep_extend(p, u, low, high);
					break;
				case LNE_set_address:
					addr = rd(&c, u->addr_size);
					break;
				case LNE_set_discriminator:
					leb128_u(&c);
					break;
				default:
					/* define_file, HP's, unknown ones. */
					return prep_decline(p, "an extended "
							       "line opcode not "
							       "followed"),
					       false;
				}
				break;
			}
			case LNS_copy:
				add_row(p, u, alloc, salloc, addr, file,
					line, false);
				low = addr < low ? addr : low;
				high = addr > high ? addr : high;
				break;
			case LNS_advance_pc:
				addr += min_insn * leb128_u(&c);
				break;
			case LNS_advance_line:
				line += (uint32_t)leb128_s(&c);
				break;
			case LNS_set_file:
				file = (uint32_t)leb128_u(&c);
				break;
			case LNS_set_column:
				leb128_u(&c);
				break;
			case LNS_negate_stmt:
			case LNS_set_basic_block:
				break;
			case LNS_const_add_pc:
				addr += (uint64_t)min_insn *
					((255 - opbase) / range);
				break;
			case LNS_fixed_advance_pc:
				addr += rd(&c, 2);
				break;
			default:
				for (int i = 0; i < lengths[op]; i++)
					leb128_u(&c);
				break;
			}
		}
		if (c.bad)
			return false;
	}
	if (prep_declined(p))
		return false;
	/* libbfd's sort_line_sequences: by start, the longest first, the
	 * last read first; nested ones go, overlapping ones are cut. */
	for (size_t i = 0; i < u->nseqs; i++)
		u->seqs[i].index = (uint32_t)(u->nseqs - 1 - i);
	if (u->nseqs > 1)
		qsort_r(u->seqs, u->nseqs, sizeof(*u->seqs), cmp_seq, u->rows);
	nlive = u->nseqs ? 1 : 0;
	for (size_t i = 1; i < u->nseqs; i++) {
		uint64_t last_high =
			u->rows[u->seqs[nlive - 1].first + u->seqs[nlive - 1].n - 1]
				.addr;
		struct sequence s = u->seqs[i];
		uint64_t high = u->rows[s.first + s.n - 1].addr;

		if (s.low < last_high) {
			if (high <= last_high)
				continue;
			s.low = last_high;
		}
		u->seqs[nlive++] = s;
	}
	u->nseqs = nlive;
	return true;
}

/*
 * U's line program decoded.  Rows and sequences are decoded into arrays
 * kept for the next unit, then copied to U's own, of their size: grown
 * by doubling for each unit, they were allocated, copied and faulted in
 * over and over (libc's 1,600 units have 110,000 rows).
 */
static bool decode_lines(struct prep *p, struct unit *u)
{
	bool ok;

	u->rows = p->rows;
	u->seqs = p->seqs;
	ok = decode_program(p, u, &p->arows, &p->aseqs);
	p->rows = u->rows;
	p->seqs = u->seqs;
	u->rows = copy_array(p->rows, u->nrows, sizeof(*u->rows));
	u->seqs = copy_array(p->seqs, u->nseqs, sizeof(*u->seqs));
	return ok;
}

/* ---- functions ---- */

static struct unit *unit_of_offset(const struct dwarf *d, uint64_t off)
{
	size_t i = PARTITION_POINT(d->nunits, k, d->units[k].off <= off);

	return i && off < d->units[i - 1].end ? &d->units[i - 1] : NULL;
}

/*
 * libbfd's find_abstract_instance: the name (and whether it is a
 * linkage name) of the DIE that ATTR refers to, following
 * DW_AT_specification.  *CALLS counts the DIEs read for one question:
 * libbfd gives up 100 deep, this reader after 100 DIEs in all, or a DIE
 * naming its specification twice, in a chain of 100, would be read 2^100
 * times.  (Giving up declines the file: libbfd answers it.)
 */
static bool abstract_name(struct prep *p, struct unit *u,
			  const struct attr *ref, unsigned *calls,
			  const char **name, bool *linkage)
{
	const struct dwarf *d = p->d;
	const struct section *x = &d->s[S_INFO];
	uint64_t off;
	const struct abbrev *a;
	struct byte_cur c;
	struct attr v;

	if (++*calls > 100)
		return prep_refuse(p, "a DIE naming more than 100 others"),
		       false;
	if (ref->form == FORM_ref_addr) {
		if (!ref->val)
			return true;
		off = ref->val;
		if (off >= x->size)
			return false;
		if (off < u->off || off >= u->end) {
			u = unit_of_offset(d, off);
			if (!u || !u->ok)
				return false;
		}
	} else if (ref->form == FORM_ref1 || ref->form == FORM_ref2 ||
		   ref->form == FORM_ref4 || ref->form == FORM_ref8 ||
		   ref->form == FORM_ref_udata) {
		if (!ref->val || ref->val >= u->end - u->off)
			return false;
		off = u->off + ref->val;
	} else {
		/* Other integer forms: libbfd reads them as unit offsets. */
		if (!ref->val || ref->val >= u->end - u->off)
			return false;
		off = u->off + ref->val;
	}
	c = (struct byte_cur){ x->p + off, x->p + u->end, false };
	{
		uint64_t code = leb128_u(&c);

		if (c.bad)
			return false;
		if (!code)
			return true;
		a = abbrev_find(u->abbrevs, code);
	}
	if (!a)
		return false;
	for (uint32_t i = 0; i < a->nattr; i++) {
		const struct abbrev_attr *aa = &a->attr[i];

		if (!aa->form)
			return false;
		if (!read_value(d, u, &c, aa, &v))
			return true; /* libbfd stops reading, without failing */
		switch (aa->name) {
		case AT_name:
			if (!*name && v.is_str) {
				*name = v.str;
				if (plain_names(u->lang))
					*linkage = true;
			}
			break;
		case AT_specification:
			if (v.is_int &&
			    !abstract_name(p, u, &v, calls, name, linkage))
				return false;
			break;
		case AT_linkage_name:
		case AT_MIPS_linkage_name:
			if (v.is_str) {
				*name = v.str;
				*linkage = true;
			}
			break;
		case 0x3a: /* DW_AT_decl_file: libbfd decodes the unit's lines */
			if (p->ahead) {
				/* (Its own is being decoded: nothing to do.) */
				if (u != p->u)
					return p->failed = true, false;
			} else if (!prepare_unit(p->d, u)) {
				return false;
			}
			break;
		default:
			break;
		}
	}
	return true;
}

/*
 * libbfd's scan_unit_for_symbols, for the functions only: each
 * subprogram, inlined subroutine and entry point, its caller (the
 * nearest function around it, for inlined ones), name, call site and
 * ranges.
 */
static bool scan_functions(struct prep *p, struct unit *u)
{
	const struct dwarf *d = p->d;
	const struct section *x = &d->s[S_INFO];
	struct byte_cur c = { x->p + u->die, x->p + u->end, false };
	uint32_t *nest = NULL;
	size_t anest = 0, alloc = 0;
	int level = 0;
	const struct abbrev *a;
	bool ok = false;

	/* The unit DIE: skipped (its children are what is scanned). */
	a = abbrev_find(u->abbrevs, leb128_u(&c));
	if (!a || !skip_attrs(d, u, &c, a))
		return false;
	if (c.p >= c.end)
		return true; /* (no children: nothing to scan) */
	GROW(nest, 1, anest);
	nest[0] = 0;
	while (level >= 0) {
		uint64_t code, off;
		struct func *f = NULL;

		if (c.p >= c.end)
			goto out;
		off = (uint64_t)(c.p - x->p);
		code = leb128_u(&c);
		if (!code) {
			level--;
			continue;
		}
		a = abbrev_find(u->abbrevs, code);
		if (!a)
			goto out;
		if (a->interesting) {
			f = PUSH_ZEROED(u->funcs, u->nfuncs, alloc);
			f->caller_file = NO_FILE;
			f->tag = (uint16_t)a->tag;
			f->die = off;
			if (a->tag == TAG_inlined_subroutine)
				for (int i = level; i-- > 0;)
					if (nest[i]) {
						f->caller = nest[i];
						break;
					}
			nest[level] = (uint32_t)u->nfuncs;
		} else {
			nest[level] = 0;
		}
		if (f) {
			uint64_t low = 0, high = 0;
			bool high_rel = false;
			struct attr v;

			for (uint32_t i = 0; i < a->nattr; i++) {
				const struct abbrev_attr *aa = &a->attr[i];

				if (!aa->form || !read_value(d, u, &c, aa, &v))
					goto out;
				switch (aa->name) {
				case AT_call_file:
					if (v.is_int)
						f->caller_file = (uint32_t)v.val;
					break;
				case AT_call_line:
					if (v.is_int)
						f->caller_line = (uint32_t)v.val;
					break;
				case AT_abstract_origin:
				case AT_specification: {
					unsigned calls = 0;

					if (v.is_int &&
					    !abstract_name(p, u, &v, &calls,
							   &f->name,
							   &f->is_linkage))
						goto out;
					break;
				}
				case AT_name:
					if (!f->name && v.is_str) {
						f->name = v.str;
						if (plain_names(u->lang))
							f->is_linkage = true;
					}
					break;
				case AT_linkage_name:
				case AT_MIPS_linkage_name:
					if (v.is_str) {
						f->name = v.str;
						f->is_linkage = true;
					}
					break;
				case AT_low_pc:
					if (v.is_int)
						low = v.val;
					break;
				case AT_high_pc:
					if (v.is_int) {
						high = v.val;
						high_rel = aa->form != FORM_addr;
					}
					break;
				case AT_ranges:
					if (aa->form == FORM_loclistx)
						goto out; /* rnglistx: not followed */
					if (v.is_int &&
					    !read_rangelist(d, u, &u->fpool,
							    &f->ar, v.val))
						goto out;
					break;
				default:
					break;
				}
			}
			if (high_rel)
				high += low;
			if (high)
				arange_add(&u->fpool, &f->ar, low, high);
		} else if (!skip_attrs(d, u, &c, a)) {
			goto out;
		}
		if (a->children) {
			level++;
			GROW(nest, (size_t)level + 1, anest);
			nest[level] = 0;
		}
	}
	ok = true;
out:
	free(nest);
	return ok;
}

/* One range of a function, while the spans are built. */
struct frange {
	uint64_t low, high;
	uint32_t func;
};

/* By length, then the later function first: the order libbfd prefers. */
static int cmp_frange(const void *a, const void *b)
{
	const struct frange *x = a, *y = b;
	uint64_t lx = x->high - x->low, ly = y->high - y->low;

	if (lx != ly)
		return lx < ly ? -1 : 1;
	return x->func > y->func ? -1 : x->func < y->func;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t u64_key(const void *a)
{
	return *(const uint64_t *)a;
}

static uint64_t frange_key(const void *a)
{
	const struct frange *x = a;

	return x->high - x->low;
}

/* The first of the N points P that is not painted, from K on. */
static size_t unpainted(size_t *next, size_t k)
{
	size_t r = k;

	while (next[r] != r)
		r = next[r];
	while (next[k] != r) {
		size_t t = next[k];

		next[k] = r;
		k = t;
	}
	return r;
}

/*
 * U's functions as spans of addresses, each with the function libbfd's
 * lookup_address_in_function_table gives there: of the functions with a
 * range holding the address, the one with the smallest such range, the
 * later one of equal ranges.  libbfd scans every function starting below
 * the address whose ranges reach past it, which in a unit whose first
 * function has a cold part far away is all of them, per address; the
 * spans answer in one search.  They are painted shortest range first,
 * and a stretch painted once keeps its function.
 */
static void build_spans(struct unit *u)
{
	struct frange *r = NULL;
	uint64_t *pts;
	uint32_t *paint;
	size_t nr = 0, ar = 0, np = 0, *next;

	for (size_t i = 0; i < u->nfuncs; i++)
		for (const struct arange *q = &u->funcs[i].ar; q;
		     q = arange_next(&u->fpool, q))
			if (q->low < q->high) {
				GROW(r, nr + 1, ar);
				r[nr++] = (struct frange){ q->low, q->high,
							   (uint32_t)i + 1 };
			}
	if (!nr)
		return;
	pts = xcalloc(2 * nr, sizeof(*pts));
	for (size_t i = 0; i < nr; i++) {
		pts[2 * i] = r[i].low;
		pts[2 * i + 1] = r[i].high;
	}
	sort_keyed(pts, 2 * nr, sizeof(*pts), u64_key, cmp_u64);
	for (size_t i = 0; i < 2 * nr; i++)
		if (!np || pts[np - 1] != pts[i])
			pts[np++] = pts[i];
	/* Stretch K is [pts[K], pts[K + 1]); NEXT skips painted ones. */
	paint = xcalloc(np, sizeof(*paint));
	next = xcalloc(np, sizeof(*next));
	for (size_t k = 0; k < np; k++)
		next[k] = k;
	sort_keyed(r, nr, sizeof(*r), frange_key, cmp_frange);
	for (size_t i = 0; i < nr; i++) {
		size_t k = PARTITION_POINT(np, m, pts[m] < r[i].low);
		size_t end = PARTITION_POINT(np, m, pts[m] < r[i].high);

		for (k = unpainted(next, k); k < end;
		     k = unpainted(next, k + 1)) {
			paint[k] = r[i].func;
			next[k] = k + 1;
		}
	}
	/* (The last point ends every range: its stretch stays unpainted.) */
	u->spans = xcalloc(np, sizeof(*u->spans));
	for (size_t k = 0; k < np; k++)
		if (!u->nspans || u->spans[u->nspans - 1].func != paint[k])
			u->spans[u->nspans++] = (struct fspan){ pts[k],
								paint[k] };
	FREE_ALL(r, pts, paint, next);
}

/*
 * The function table of U, for lookups (build_lookup_funcinfo_table):
 * its ranges join the unit's.
 */
static void build_lookup(struct prep *p, struct unit *u)
{
	for (size_t i = 0; i < u->nfuncs; i++) {
		const struct arange *r = &u->funcs[i].ar;

		/* Ranges of functions outside the unit's: libbfd would find
		 * the unit for them too.  Not followed. */
		for (const struct arange *q = r; q && q->high;
		     q = arange_next(&u->fpool, q))
			if (q->low > q->high)
				prep_decline(p, "a function range that ends "
						"before it starts");
			else if (q->low < q->high)
				prep_extend(p, u, q->low, q->high);
	}
	build_spans(u);
}

/*
 * libbfd's comp_unit_maybe_decode_line_info: the lines, then functions.
 * A function may name a DIE of another unit with a DW_AT_decl_file, which
 * decodes that unit here, whose functions may name a third...: a chain
 * of units deeper than any compiler makes is declined, before the stack
 * runs out.
 */
static bool prepare_unit(struct dwarf *d, struct unit *u)
{
	bool ok;

	if (u->failed || !u->ok)
		return false;
	if (u->decoded)
		return true;
	if (!u->stmtlist) {
		u->failed = true; /* libbfd's unit error: it never answers */
		return false;
	}
	if (d->nesting == 32)
		return refuse(d, "units naming each other's DIEs 32 deep"),
		       false;
	if (u->ahead) {
		/* Prepared ahead: its effects on the reader, now. */
		u->decoded = true;
		for (size_t i = 0; i < u->nexts; i++)
			extend(d, u, u->exts[i].low, u->exts[i].high);
		return !d->declined;
	}
	/* Anything else amiss: libbfd's way with it is not followed. */
	if (!decode_lines(&d->prep, u))
		return decline(d, "a line program not followed"), false;
	u->decoded = true;
	d->nesting++;
	ok = scan_functions(&d->prep, u);
	d->nesting--;
	if (!ok)
		return decline(d, "a DIE tree not followed"), false;
	build_lookup(&d->prep, u);
	return !d->declined;
}

/* What preparing U left in it, gone: as if it had never been tried. */
static void unit_forget(struct unit *u)
{
	FREE_ALL(u->files, u->dirs, u->rows, u->seqs, u->funcs, u->spans,
		 u->fpool.v, u->exts);
	u->files = u->dirs = NULL;
	u->nfiles = u->ndirs = 0;
	u->dir_file_0 = false;
	u->rows = NULL;
	u->seqs = NULL;
	u->nrows = u->nseqs = 0;
	u->funcs = NULL;
	u->nfuncs = 0;
	u->spans = NULL;
	u->nspans = 0;
	memset(&u->fpool, 0, sizeof(u->fpool));
	u->exts = NULL;
	u->nexts = u->aexts = 0;
}

/* U prepared ahead with P (see struct prep), or left as it was. */
static void prepare_one_ahead(struct prep *p, struct unit *u)
{
	p->u = u;
	p->failed = false;
	if (decode_lines(p, u) && !p->failed && scan_functions(p, u) &&
	    !p->failed) {
		build_lookup(p, u);
		if (!p->failed) {
			u->ahead = true;
			return;
		}
	}
	unit_forget(u);
}

/* The units to prepare ahead, shared by the threads: the next is NEXT. */
struct ahead_work {
	struct dwarf *d;
	struct unit **todo;
	size_t n;
	size_t next; /* (atomic) */
};

static void ahead_share(void *ctx, size_t i, bool here)
{
	struct ahead_work *w = ctx;
	struct prep p = { .d = w->d, .ahead = true };
	size_t k;

	(void)i;
	(void)here;
	while ((k = __atomic_fetch_add(&w->next, 1, __ATOMIC_RELAXED)) < w->n)
		prepare_one_ahead(&p, w->todo[k]);
	free(p.rows);
	free(p.seqs);
}

/*
 * The units that N addresses lie in by their ranges (AT, interval_at's
 * for each), not decoded yet, prepared ahead on the threads wanted, a unit at a time
 * each: decoding line programs and walking DIEs is most of a batch's
 * work, and depends on nothing but the unit, while the order in which
 * units are taken (locate, in the order asked) decides libbfd's answers.
 */
static void prepare_ahead(struct dwarf *d, const struct urange *const *at,
			  size_t n)
{
	size_t threads = threads_wanted();
	struct ahead_work w = { d, NULL, 0, 0 };
	uint8_t *seen;

	if (threads < 2 || d->nunits < 2)
		return;
	seen = xcalloc(d->nunits, 1);
	w.todo = xcalloc(d->nunits, sizeof(*w.todo));
	for (size_t i = 0; i < n; i++) {
		const struct urange *r = at[i];
		struct unit *u;

		if (!r || seen[r->unit])
			continue;
		seen[r->unit] = 1;
		u = &d->units[r->unit];
		if (u->ok && u->stmtlist && !u->decoded && !u->failed &&
		    !u->ahead)
			w.todo[w.n++] = u;
	}
	if (w.n > 1)
		pool_run(threads < w.n ? threads : w.n, ahead_share, &w);
	free(seen);
	free(w.todo);
}

/* ---- names: libbfd's _bfd_elf_find_function and its cache ---- */

/*
 * The symbol _bfd_elf_find_function finds for ADDR of section SEC when
 * its cache does not hold it: of the highest start at or below ADDR in
 * the section, the biggest, then the first (the sort's order).  Searched
 * from hint H (the section's symbols, and where the last address, at or
 * below ADDR, was found), which it updates.
 */
struct sym_hint {
	int sec;
	uint64_t addr;
	size_t lo, hi, i;
};

static const struct bsym *sym_search(const struct dwarf *d, int sec,
				     uint64_t addr, struct sym_hint *h)
{
	const struct bsym *c;

	if (h->sec != sec || addr < h->addr) {
		uint16_t index = d->secs[sec].index;

		h->sec = sec;
		h->lo = PARTITION_POINT(d->nsyms, k, d->syms[k].shndx < index);
		h->hi = h->lo + PARTITION_POINT(d->nsyms - h->lo, k,
						d->syms[h->lo + k].shndx == index);
		h->i = h->lo;
	}
	h->addr = addr;
#define SYM_BELOW(k) (d->syms[k].value <= addr)
	h->i = GALLOP(h->hi, h->i, SYM_BELOW);
#undef SYM_BELOW
	if (h->i == h->lo)
		return NULL;
	c = &d->syms[h->i - 1];
	while (c > d->syms + h->lo && c[-1].value == c->value)
		c--;
	return c;
}

/* _bfd_elf_find_function with its one-entry cache; FOUND: what the
 * search finds for ADDR, sym_search's. */
static const struct bsym *find_function(struct dwarf *d, int sec,
					uint64_t addr,
					const struct bsym *found)
{
	const struct bsym *c = d->cache_sym;

	if (!d->have_syms)
		return NULL;
	if (d->cache_sec == sec && c && addr >= c->value &&
	    addr - c->value < c->size)
		return c;
	d->cache_sec = sec;
	d->cache_sym = found;
	return found;
}

/*
 * The answers' frames, in blocks that stay where they are: a batch's
 * answers are read while the later ones are written.  An answer's are
 * in one block (64 at most).
 */
#define FRAME_BLOCK 8192
#define ANSWER_FRAMES 64

struct frame_block {
	struct frame_block *next;
	size_t n;
	struct dwarf_frame v[FRAME_BLOCK];
};

/* Where the next answer's frames go, room made for them. */
static struct dwarf_frame *frames_next(struct dwarf *d)
{
	if (!d->frames || d->frames->n + ANSWER_FRAMES > FRAME_BLOCK) {
		struct frame_block *b = arena_alloc(&d->big, sizeof(*b));

		b->next = d->frames;
		b->n = 0;
		d->frames = b;
	}
	return d->frames->v + d->frames->n;
}

static void push_frame(struct dwarf *d, const char *func, const char *file,
		       uint32_t line)
{
	d->frames->v[d->frames->n++] = (struct dwarf_frame){ func, file, line };
}

/*
 * Where an address of the batch is: its section and unit (found in the
 * order asked, which decodes units), then its function and line row
 * (found in the order of addresses).
 */
struct locus {
	struct unit *u;
	struct func *fn;
	const struct bsym *sym; /* sym_search's */
	int sec;
	/* The line row's (copied: the last part then reads W in order). */
	bool row;
	uint32_t line;
	uint64_t file;
};

/*
 * The first part of a question, in the order asked: libbfd's unit for
 * ADDR, in interval R (interval_at's), decoded now, as libbfd decodes it
 * on its first address, or NULL.
 */
static void locate(struct dwarf *d, uint64_t addr, const struct urange *r,
		   struct locus *w)
{
	struct unit *u;

	w->u = NULL;
	w->sec = -1;
	/* symbfd.c's section lookup, before it asks libbfd. */
	for (size_t i = 0; i < d->nsecs; i++)
		if (addr >= d->secs[i].addr &&
		    addr - d->secs[i].addr < d->secs[i].size) {
			w->sec = (int)i;
			break;
		}
	if (w->sec < 0)
		return;
	if (is_ambiguous(d, addr)) {
		decline(d, "an address two units claim");
		return;
	}
	u = unit_of(d, addr, r);
	if (d->declined)
		return;
	if (u && prepare_unit(d, u))
		w->u = u;
}

/* From I on, the first of U's spans, sequences or the N rows R that
 * starts above A. */
static size_t span_after(const struct unit *u, size_t i, uint64_t a)
{
#define SPAN_BELOW(k) (u->spans[k].low <= a)
	return GALLOP(u->nspans, i, SPAN_BELOW);
#undef SPAN_BELOW
}

static size_t seq_after(const struct unit *u, size_t i, uint64_t a)
{
#define SEQ_BELOW(k) (u->seqs[k].low <= a)
	return GALLOP(u->nseqs, i, SEQ_BELOW);
#undef SEQ_BELOW
}

static size_t row_after(const struct line_row *r, size_t n, size_t i,
			uint64_t a)
{
#define ROW_BELOW(k) (r[k].addr <= a)
	return GALLOP(n, i, ROW_BELOW);
#undef ROW_BELOW
}

/*
 * Where the last address of a unit was found, for the next one at or
 * above it: the indices of its span, sequence and row.
 */
struct hint {
	const struct unit *u;
	uint64_t addr;
	size_t span, seq, row;
};

/*
 * libbfd's lookup_address_in_function_table and
 * lookup_address_in_line_info_table for ADDR of U, found from hint H.
 */
static void find_hinted(struct unit *u, uint64_t addr, struct hint *h,
			struct locus *w)
{
	const struct sequence *s;
	size_t i;

	if (h->u != u || addr < h->addr)
		*h = (struct hint){ u, addr, 0, 0, 0 };
	h->addr = addr;
	/* The function: that of the last span starting at or below. */
	i = span_after(u, h->span, addr);
	w->fn = i && u->spans[i - 1].func ? &u->funcs[u->spans[i - 1].func - 1]
					  : NULL;
	h->span = i ? i - 1 : 0;
	/* The line: sequences are disjoint and sorted by start, so only
	 * the last starting at or below can hold ADDR. */
	w->row = false;
	i = seq_after(u, h->seq, addr);
	if (!i)
		return;
	if (i - 1 != h->seq)
		h->row = 0;
	h->seq = i - 1;
	s = &u->seqs[h->seq];
	if (addr < s->low || addr >= u->rows[s->first + s->n - 1].addr)
		return;
	i = row_after(u->rows + s->first, s->n, h->row, addr);
	if (!i || i == s->n || u->rows[s->first + i - 1].end)
		return;
	h->row = i - 1;
	w->row = true;
	w->file = u->rows[s->first + i - 1].file;
	w->line = u->rows[s->first + i - 1].line;
}

/*
 * The second part, for the N located addresses of ADDRS: their
 * functions and line rows.  These depend only on the (decoded) unit, so
 * they are looked up in the order of addresses, each unit's together
 * and its tables searched from where the last address was found: in the
 * order asked, the addresses of one unit come each after all the
 * others', and each finds the unit's tables out of the cache.
 */
/* What the second part finds for ADDR (located as W says). */
static void find_one(const struct dwarf *d, uint64_t addr, struct hint *h,
		     struct sym_hint *sh, struct locus *w)
{
	if (w->sec < 0)
		return;
	if (w->u)
		find_hinted(w->u, addr, h, w);
	if (d->have_syms)
		w->sym = sym_search(d, w->sec, addr, sh);
}

/* The addresses of a batch in order, found in shares (find_all). */
struct finding {
	const struct dwarf *d;
	const uint64_t *addrs;
	struct locus *w;
	const uint64_t *sorted; /* offset << 32 | place */
	size_t m, shares;
};

/* A share of the sorted addresses, each searched from the last. */
static void find_share(void *ctx, size_t i, bool here)
{
	const struct finding *f = ctx;
	size_t lo = f->m * i / f->shares, hi = f->m * (i + 1) / f->shares;
	struct hint h = { 0 };
	struct sym_hint sh = { .sec = -1 };

	(void)here;
	for (size_t k = lo; k < hi; k++) {
		size_t at = (uint32_t)f->sorted[k];

		/* (W is read and written out of order: asked for ahead.) */
		if (k + 16 < hi)
			prefetch(&f->w[(uint32_t)f->sorted[k + 16]]);
		find_one(f->d, f->addrs[at], &h, &sh, &f->w[at]);
	}
}

/*
 * A batch this big is searched on two cores, half its addresses each
 * (they depend on nothing but the units, decoded by now): 82,000 took
 * 2.7 ms on one.
 */
#define FIND_SHARED_MIN 8192

static void find_all(const struct dwarf *d, const uint64_t *addrs, size_t n,
		     const uint64_t *sorted, struct locus *w)
{
	struct finding f = { d, addrs, w, sorted, n, 1 };

	if (!sorted) {
		/* (A few, or spread over more than 4 GB: as they come.) */
		struct hint h = { 0 };
		struct sym_hint sh = { .sec = -1 };

		for (size_t i = 0; i < n; i++)
			find_one(d, addrs[i], &h, &sh, &w[i]);
		return;
	}
	if (n >= FIND_SHARED_MIN && threads_wanted() > 1)
		f.shares = 2;
	pool_run(f.shares, find_share, &f);
}

/*
 * The last part, in the order asked (libbfd's names depend on the
 * questions before): the answer, as _bfd_dwarf2_find_nearest_line and
 * the inliner calls give it.
 */
static void answer(struct dwarf *d, const struct locus *w,
		   struct dwarf_answer *out)
{
	struct unit *u = w->u;
	struct func *fn = NULL;
	bool row = false;
	const char *name = NULL;
	uint64_t addr = out->addr;

	out->nframes = 0;
	out->frames = NULL;
	if (w->sec < 0)
		return;
	if (u) {
		fn = w->fn;
		row = w->row;
		if (!fn && !row)
			u = NULL;
	}
	if (fn && fn->is_linkage) {
		name = fn->name;
	} else {
		const struct bsym *sym = find_function(d, w->sec, addr,
						       w->sym);

		name = sym ? sym->name : NULL;
		if (fn) {
			if (!sym)
				name = fn->name;
			else if (sym->value == fn->ar.low)
				fn->name = name;
			fn->is_linkage = true;
		}
	}
	if (!row || w->file == NO_FILE || !w->line)
		return;
	out->frames = frames_next(d);
	out->nframes = 1;
	push_frame(d, name, file_of(d, u, w->file), w->line);
	for (struct func *f = fn;
	     f && f->tag == TAG_inlined_subroutine && f->caller;) {
		struct func *caller = &u->funcs[f->caller - 1];

		push_frame(d, caller->name, file_of(d, u, f->caller_file),
			   f->caller_line);
		out->nframes++;
		f = caller;
		if (out->nframes >= ANSWER_FRAMES)
			break;
	}
}

/* How many answers are made before the waiting side is told. */
#define ANSWERED_STEP 256

/* The batch's answers, in order, each step told as it is done. */
static void answer_all(void *arg)
{
	struct dwarf *d = arg;
	const struct locus *w = d->loci;
	size_t n = d->nout;

	for (size_t i = 0; i < n; i++) {
		/* (The functions are read out of order: asked for ahead.) */
		if (i + 8 < n && w[i + 8].fn)
			prefetch(w[i + 8].fn);
		answer(d, &w[i], &d->out[i]);
		if ((i + 1) % ANSWERED_STEP == 0)
			progress_set(&d->answered, i + 1);
	}
	progress_set(&d->answered, n);
}

/*
 * A batch this big has its answers made on another core while the caller
 * reads the first ones (a cold symbolization names the frames as they
 * come: 82,000 answers took 4 ms, their naming 7).
 */
#define ANSWER_AHEAD_MIN 1024

void dwarf_lookup_wait(struct dwarf *d)
{
	if (d->answering_on) {
		task_release(&d->answering);
		d->answering_on = false;
	}
	free(d->loci);
	d->loci = NULL;
}

const struct dwarf_answer *dwarf_answer(struct dwarf *d, size_t i)
{
	if (d->answering_on)
		progress_wait(&d->answered, i + 1);
	return &d->out[i];
}

int dwarf_lookup_start(struct dwarf *d, const uint64_t *addrs, size_t n,
		       struct dwarf_answer *out, const char **why)
{
	const struct urange **at;
	struct locus *w;
	uint64_t min, *sorted;

	dwarf_lookup_wait(d);
	if (d->declined)
		goto no;
	/* (The units' ranges stay as they are: searched once.) */
	at = xcalloc_table(n ? n : 1, sizeof(*at));
	sorted = sort_batch(addrs, n, &min);
	intervals_at(d, addrs, n, sorted, min, at);
	prepare_ahead(d, at, n);
	/* (Whatever declines the file does so in the first part.) */
	w = xcalloc_table(n ? n : 1, sizeof(*w));
	for (size_t i = 0; i < n; i++) {
		locate(d, addrs[i], at[i], &w[i]);
		if (d->declined) {
			FREE_ALL(w, at, sorted);
			goto no;
		}
	}
	free(at);
	find_all(d, addrs, n, sorted, w);
	free(sorted);
	/* (The addresses first: the caller checks them, in step, before
	 * it waits for their answers.) */
	for (size_t i = 0; i < n; i++)
		out[i].addr = addrs[i];
	d->loci = w;
	d->out = out;
	d->nout = n;
	progress_set(&d->answered, 0);
	if (n >= ANSWER_AHEAD_MIN &&
	    task_start(&d->answering, answer_all, d, false)) {
		d->answering_on = true;
		return 0;
	}
	answer_all(d);
	return 0;
no:
	*why = d->why ? d->why : "something this reader does not follow";
	return d->refused ? -2 : -1;
}

int dwarf_lookup(struct dwarf *d, const uint64_t *addrs, size_t n,
		 struct dwarf_answer *out, const char **why)
{
	int rc = dwarf_lookup_start(d, addrs, n, out, why);

	dwarf_lookup_wait(d);
	return rc;
}

struct dwarf *dwarf_begin(const struct elf_image *img)
{
	struct dwarf *d = xcalloc(1, sizeof(*d));

	d->img = img;
	d->cache_sec = -1;
	/* (libc's abbreviation tables: 8 MB read at once.) */
	d->big.huge = true;
	progress_init(&d->answered);
	d->prep.d = d;
	hashmap_init(&d->abbrev_tabs, 64);
	d->begun = read_elf(d);
	if (!d->begun)
		inflate_begin(d);
	return d;
}

struct dwarf *dwarf_finish(struct dwarf *d, const char **why)
{
	if (d->begun < 0 || inflate_end(d) < 0 || read_units(d) < 0) {
		*why = d->why;
		dwarf_close(d);
		return NULL;
	}
	return d;
}

struct dwarf *dwarf_open(const struct elf_image *img, const char **why)
{
	return dwarf_finish(dwarf_begin(img), why);
}

void dwarf_close(struct dwarf *d)
{
	struct akey *k;

	if (!d)
		return;
	dwarf_lookup_wait(d);
	progress_free(&d->answered);
	/* (Begun, and not finished: its inflating ends first.) */
	if (d->info.threaded)
		task_release(&d->info.task);
	for (size_t pos = 0; hashmap_next(&d->abbrev_tabs, &pos, (void **)&k);)
		abbrevs_free(&k->t);
	hashmap_free(&d->abbrev_tabs);
	scratch_free(&d->scratch);
	for (size_t i = 0; i < d->nunits; i++) {
		free(d->units[i].names);
		unit_forget(&d->units[i]);
	}
	for (int i = 0; i < NSECT; i++)
		if (d->s[i].mapped)
			munmap(d->s[i].owned, d->s[i].mapped);
		else
			free(d->s[i].owned);
	FREE_ALL(d->units, d->uranges, d->ext, d->amb, d->upool.v, d->prep.rows,
		 d->prep.seqs, d->secs, d->syms);
	sb_release(&d->sb);
	arena_free(&d->arena);
	arena_free(&d->big);
	free(d);
}
