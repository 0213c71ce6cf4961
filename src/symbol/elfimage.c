/*
 * A binary's symbols, segments, build-id and .gnu_debuglink, read
 * through the ELF layer (a truncated or hostile binary gives an error,
 * never a stray read).  Symbol names point into the mapping; nothing is
 * copied.
 */
#include "elfimage.h"

#include <elf.h>
#include <stdlib.h>
#include <string.h>

#include "search.h"
#include "util.h"

static int cmp_sym(const void *a, const void *b)
{
	const struct elf_sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* Sized symbols first: they say where the code ends. */
	if ((x->size != 0) != (y->size != 0))
		return x->size ? -1 : 1;
	return strcmp(x->name, y->name);
}

static uint64_t sym_key(const void *a)
{
	return ((const struct elf_sym *)a)->addr;
}

/*
 * At one address (aliases, like malloc and __libc_malloc), keep one name:
 * a public one over one starting with '_', then the shorter.
 */
static bool better_name(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);

	if ((a[0] == '_') != (b[0] == '_'))
		return b[0] == '_';
	return la < lb;
}

static void finish_syms(struct elf_sym *v, size_t *n)
{
	size_t out = 0;

	if (!*n)
		return;
	sort_keyed(v, *n, sizeof(*v), sym_key, cmp_sym);
	for (size_t i = 0; i < *n; i++) {
		if (out && v[out - 1].addr == v[i].addr) {
			if (!v[out - 1].size)
				v[out - 1].size = v[i].size;
			if (better_name(v[i].name, v[out - 1].name))
				v[out - 1].name = v[i].name;
			continue;
		}
		v[out++] = v[i];
	}
	*n = out;
}

/*
 * Whether symbol table SYM, named in STR, is one read_symtab reads: its
 * string table is whole.
 */
static bool symtab_usable(const struct elf_image *img, const struct elf_shdr *sym,
			  const struct elf_shdr *str, const char **strtab)
{
	*strtab = elf_at(&img->elf, str->offset, str->size);
	return *strtab && elf_at(&img->elf, sym->offset, sym->size) &&
	       str->size && (*strtab)[str->size - 1] == '\0';
}

/*
 * Read one symbol table section into code/data arrays; or, when CODE is
 * NULL, only say whether it has a function read_symtab would take.
 */
static bool read_symtab(const struct elf_image *img,
			const struct elf_shdr *sym, const struct elf_shdr *str,
			struct elf_sym **code, size_t *ncode, size_t *acode,
			struct elf_sym **data, size_t *ndata, size_t *adata)
{
	const char *strtab;
	struct elf_symbol e;

	if (!symtab_usable(img, sym, str, &strtab))
		return false;
	/* (Entry 0 is the null symbol.) */
	for (size_t i = 1; elf_symbol(&img->elf, sym, i, &e); i++) {
		struct elf_sym s;
		int type = ELF64_ST_TYPE(e.info);

		if (e.shndx == SHN_UNDEF || e.shndx == SHN_ABS || !e.name ||
		    e.name >= str->size || !strtab[e.name])
			continue;
		s.addr = e.value;
		s.size = e.size;
		s.name = strtab + e.name;
		if (type == STT_FUNC || type == STT_GNU_IFUNC) {
			if (!code)
				return true;
			GROW(*code, *ncode + 1, *acode);
			(*code)[(*ncode)++] = s;
		} else if (type == STT_OBJECT && code) {
			GROW(*data, *ndata + 1, *adata);
			(*data)[(*ndata)++] = s;
		}
	}
	return false;
}

/*
 * A cut copy of a binary (or a hostile one) has its header tables past
 * the end of the file: that is an error, not a binary without symbols.
 */
static bool tables_fit(const struct elf_file *f, struct strbuf *why)
{
	const struct elf_header *h = &f->h;

	if (h->phnum && !elf_at(f, h->phoff, (uint64_t)h->phentsize * h->phnum)) {
		sb_addstr(why, "truncated (program headers past the end of "
			       "the file)");
		return false;
	}
	if (h->shnum && !elf_at(f, h->shoff, (uint64_t)h->shentsize * h->shnum)) {
		sb_addstr(why, "truncated (section headers past the end of "
			       "the file)");
		return false;
	}
	return true;
}

/* .note.gnu.build-id: a note "GNU" of type NT_GNU_BUILD_ID. */
static void read_build_id(struct elf_image *img, const struct elf_shdr *s)
{
	const uint8_t *p = elf_at(&img->elf, s->offset, s->size);
	struct elf_note n;
	uint64_t at = 0;

	while (p && elf_note_next(p, s->size, &at, &n) == ELF_NOTE) {
		if (n.type == NT_GNU_BUILD_ID && n.namesz == 4 &&
		    !memcmp(n.name, "GNU", 4) && n.descsz &&
		    n.descsz <= sizeof(img->build_id)) {
			memcpy(img->build_id, n.desc, n.descsz);
			img->build_id_len = n.descsz;
			return;
		}
	}
}

/* .gnu_debuglink: a file name, then its CRC at the next 4 bytes. */
static void read_debuglink(struct elf_image *img, const struct elf_shdr *s)
{
	const char *d = elf_at(&img->elf, s->offset, s->size);
	size_t len = d ? strnlen(d, s->size) : s->size;
	size_t crc_at = (len + 4) & ~(size_t)3;

	if (d && len < s->size && crc_at + 4 <= s->size) {
		img->debuglink = d;
		memcpy(&img->debuglink_crc, d + crc_at, 4);
	}
}

static bool table_has_code(const struct elf_image *img, size_t index);

static void read_sections(struct elf_image *img)
{
	const struct elf_file *f = &img->elf;
	struct elf_shdr names, s;
	size_t symtab_index = 0, dynsym_index = 0;
	bool have_symtab = false, have_dynsym = false;

	if (!f->h.shnum || f->h.shstrndx >= f->h.shnum ||
	    !elf_shdr(f, f->h.shstrndx, &names) ||
	    !elf_at(f, names.offset, names.size) || !names.size)
		return;
	for (size_t i = 1; i < f->h.shnum; i++) {
		const char *name;

		if (!elf_shdr(f, i, &s))
			return;
		if (!(name = elf_string(f, &names, s.name)))
			name = "";
		if (s.type == SHT_SYMTAB) {
			symtab_index = i;
			have_symtab = true;
		} else if (s.type == SHT_DYNSYM) {
			dynsym_index = i;
			have_dynsym = true;
		} else if (!strcmp(name, ".debug_info") && s.size) {
			img->has_debug_info = true;
		} else if (!strcmp(name, ".gnu_debuglink") &&
			   s.type != SHT_NOBITS) {
			read_debuglink(img, &s);
		} else if (s.type == SHT_NOTE && !img->build_id_len) {
			read_build_id(img, &s);
		}
	}
	/* The tables are read when asked for (elfimage_load_symbols): a warm
	 * run answers from the symbol cache without them. */
	img->symtab_index = have_symtab ? symtab_index : 0;
	img->dynsym_index = have_dynsym ? dynsym_index : 0;
	img->has_code = table_has_code(img, img->symtab_index) ||
			table_has_code(img, img->dynsym_index);
	img->has_symtab = have_symtab && img->has_code;
}

/* Symbol table INDEX (0: none) and its string table, if both are there. */
static bool table(const struct elf_image *img, size_t index,
		  struct elf_shdr *sym, struct elf_shdr *str)
{
	return index && elf_shdr(&img->elf, index, sym) &&
	       elf_shdr(&img->elf, sym->link, str);
}

/* Whether section INDEX (0: none) is a symbol table with a function. */
static bool table_has_code(const struct elf_image *img, size_t index)
{
	struct elf_shdr sym, str;

	return table(img, index, &sym, &str) &&
	       read_symtab(img, &sym, &str, NULL, NULL, NULL, NULL, NULL,
			   NULL);
}

void elfimage_load_symbols(struct elf_image *img)
{
	struct elf_shdr sym, str;
	size_t acode = 0, adata = 0;

	if (img->syms_loaded || !img->elf.data)
		return;
	img->syms_loaded = true;
	/* The full table when there is one; the dynamic one otherwise. */
	if (table(img, img->symtab_index, &sym, &str))
		read_symtab(img, &sym, &str, &img->code, &img->ncode, &acode,
			    &img->data, &img->ndata, &adata);
	if (!img->ncode && table(img, img->dynsym_index, &sym, &str))
		read_symtab(img, &sym, &str, &img->code, &img->ncode, &acode,
			    &img->data, &img->ndata, &adata);
	finish_syms(img->code, &img->ncode);
	finish_syms(img->data, &img->ndata);
}

/* The PT_LOAD segments, for the address rule. */
static void read_segments(struct elf_image *img)
{
	struct elf_phdr ph;

	for (size_t i = 0; i < img->elf.h.phnum; i++) {
		if (!elf_phdr(&img->elf, i, &ph))
			return;
		if (ph.type != PT_LOAD)
			continue;
		img->loads = xreallocarray(img->loads, img->nloads + 1,
					   sizeof(*img->loads));
		img->loads[img->nloads++] =
			(struct elf_span){ ph.vaddr, ph.offset, ph.memsz };
	}
}

int elfimage_open(struct elf_image *img, const char *path, struct strbuf *why)
{
	if (elfimage_open_headers(img, path, why) < 0)
		return -1;
	elfimage_load_symbols(img);
	return 0;
}

int elfimage_open_headers(struct elf_image *img, const char *path,
		     struct strbuf *why)
{
	const struct elf_header *h = &img->elf.h;
	enum elf_ident id;

	memset(img, 0, sizeof(*img));
	img->path = xstrdup(path);
	if (elf_open(&img->elf, path, why) < 0)
		return -1;
	id = elf_identify(&img->elf);
	if (id == ELF_NOT_ELF ||
	    (h->class != ELFCLASS64 && h->class != ELFCLASS32) ||
	    h->data != ELFDATA2LSB) {
		sb_addstr(why, "not a little-endian ELF file");
		return -1;
	}
	if (id == ELF_CUT) {
		sb_addstr(why, "truncated ELF header");
		return -1;
	}
	img->is_dyn = h->type == ET_DYN;
	if (!tables_fit(&img->elf, why))
		return -1;
	read_segments(img);
	read_sections(img);
	return 0;
}

void elfimage_close(struct elf_image *img)
{
	elf_close(&img->elf);
	FREE_ALL(img->loads, img->code, img->data, img->path);
	memset(img, 0, sizeof(*img));
}

/* *TO (N of them) replaced by *FROM (*NFROM), when it has more: true. */
static bool take_table(struct elf_sym **to, size_t *n, struct elf_sym **from,
		       size_t *nfrom)
{
	if (*nfrom <= *n)
		return false;
	free(*to);
	*to = *from;
	*n = *nfrom;
	*from = NULL;
	*nfrom = 0;
	return true;
}

void elfimage_take_symbols(struct elf_image *img, struct elf_image *debug)
{
	bool symtab = debug->has_symtab;

	/* A debug file's .symtab has the local functions a stripped binary
	 * lost; its names point into the debug file's mapping, so the debug
	 * image must stay open as long as IMG. */
	if (take_table(&img->code, &img->ncode, &debug->code, &debug->ncode))
		img->has_symtab = symtab;
	take_table(&img->data, &img->ndata, &debug->data, &debug->ndata);
}

const struct elf_sym *elfimage_find(const struct elf_sym *v, size_t n,
			       uint64_t addr, bool *past)
{
	size_t lo = PARTITION_POINT(n, i, v[i].addr <= addr);

	*past = false;
	if (!lo)
		return NULL;
	/* A symbol without a size extends to the next one. */
	if (v[lo - 1].size && addr - v[lo - 1].addr >= v[lo - 1].size)
		*past = true;
	return &v[lo - 1];
}
