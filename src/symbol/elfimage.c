/*
 * Reading ELF files.  The file is mapped read-only and every offset and
 * size taken from it is checked against the mapping, so a truncated or
 * hostile binary gives an error, never a stray read.  Symbol names point
 * into the mapping; nothing is copied.
 */
#include "elfimage.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "search.h"
#include "util.h"

/* A range of the file, or NULL if it does not fit. */
static const void *at(const struct elf_image *img, uint64_t off, uint64_t len)
{
	if (off > img->size || len > img->size - off)
		return NULL;
	return (const char *)img->map + off;
}

/* Header fields of both classes, widened. */
struct shdr {
	uint32_t name, type;
	uint64_t flags, addr, offset, size;
	uint32_t link;
	uint64_t entsize;
};

static bool get_shdr(const struct elf_image *img, uint64_t shoff,
		     uint16_t shentsize, size_t i, struct shdr *s)
{
	const void *p = at(img, shoff + (uint64_t)i * shentsize, shentsize);

	if (!p)
		return false;
	if (img->is64) {
		Elf64_Shdr h;

		if (shentsize < sizeof(h))
			return false;
		memcpy(&h, p, sizeof(h));
		*s = (struct shdr){ h.sh_name, h.sh_type,  h.sh_flags,
				    h.sh_addr, h.sh_offset, h.sh_size,
				    h.sh_link, h.sh_entsize };
	} else {
		Elf32_Shdr h;

		if (shentsize < sizeof(h))
			return false;
		memcpy(&h, p, sizeof(h));
		*s = (struct shdr){ h.sh_name, h.sh_type,  h.sh_flags,
				    h.sh_addr, h.sh_offset, h.sh_size,
				    h.sh_link, h.sh_entsize };
	}
	return true;
}

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
	qsort(v, *n, sizeof(*v), cmp_sym);
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
static bool symtab_usable(const struct elf_image *img, const struct shdr *sym,
			  const struct shdr *str, const char **strtab,
			  const char **tab)
{
	*strtab = at(img, str->offset, str->size);
	*tab = at(img, sym->offset, sym->size);
	return *strtab && *tab && str->size && (*strtab)[str->size - 1] == '\0';
}

/*
 * Read one symbol table section into code/data arrays; or, when CODE is
 * NULL, only say whether it has a function read_symtab would take.
 */
static bool read_symtab(const struct elf_image *img, const struct shdr *sym,
			const struct shdr *str, struct elf_sym **code,
			size_t *ncode, size_t *acode, struct elf_sym **data,
			size_t *ndata, size_t *adata)
{
	size_t esz = img->is64 ? sizeof(Elf64_Sym) : sizeof(Elf32_Sym);
	const char *strtab, *tab;

	if (!symtab_usable(img, sym, str, &strtab, &tab))
		return false;
	for (uint64_t off = esz; off + esz <= sym->size; off += esz) {
		uint64_t value, size;
		uint32_t name;
		uint16_t shndx;
		unsigned char info;
		struct elf_sym s;
		int type;

		if (img->is64) {
			Elf64_Sym e;

			memcpy(&e, tab + off, sizeof(e));
			value = e.st_value, size = e.st_size;
			name = e.st_name, shndx = e.st_shndx;
			info = e.st_info;
		} else {
			Elf32_Sym e;

			memcpy(&e, tab + off, sizeof(e));
			value = e.st_value, size = e.st_size;
			name = e.st_name, shndx = e.st_shndx;
			info = e.st_info;
		}
		type = ELF64_ST_TYPE(info);
		if (shndx == SHN_UNDEF || shndx == SHN_ABS || !name ||
		    name >= str->size || !strtab[name])
			continue;
		s.addr = value;
		s.size = size;
		s.name = strtab + name;
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
static bool tables_fit(const struct elf_image *img, uint64_t phoff,
		       uint16_t phentsize, uint16_t phnum, uint64_t shoff,
		       uint16_t shentsize, uint16_t shnum, struct strbuf *why)
{
	uint64_t size = img->size;

	if (phnum && (phoff > size ||
		      (uint64_t)phentsize * phnum > size - phoff)) {
		sb_addstr(why, "truncated (program headers past the end of "
			       "the file)");
		return false;
	}
	if (shnum && (shoff > size ||
		      (uint64_t)shentsize * shnum > size - shoff)) {
		sb_addstr(why, "truncated (section headers past the end of "
			       "the file)");
		return false;
	}
	return true;
}

static bool table_has_code(const struct elf_image *img, size_t index);

static void read_sections(struct elf_image *img, uint64_t shoff,
			  uint16_t shentsize, uint16_t shnum, uint16_t shstrndx)
{
	struct shdr names, s;
	const char *shstr;
	size_t symtab_index = 0, dynsym_index = 0;
	bool have_symtab = false, have_dynsym = false;

	if (!shnum || shstrndx >= shnum ||
	    !get_shdr(img, shoff, shentsize, shstrndx, &names) ||
	    !(shstr = at(img, names.offset, names.size)) || !names.size)
		return;
	for (size_t i = 1; i < shnum; i++) {
		const char *name;

		if (!get_shdr(img, shoff, shentsize, i, &s))
			return;
		name = s.name < names.size &&
				       memchr(shstr + s.name, '\0',
					      names.size - s.name)
			       ? shstr + s.name
			       : "";
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
			const char *d = at(img, s.offset, s.size);
			size_t len = d ? strnlen(d, s.size) : s.size;
			size_t crc_at = (len + 4) & ~(size_t)3;

			if (d && len < s.size && crc_at + 4 <= s.size) {
				img->debuglink = d;
				memcpy(&img->debuglink_crc, d + crc_at, 4);
			}
		} else if (s.type == SHT_NOTE && !img->build_id_len) {
			/* .note.gnu.build-id: namesz descsz type "GNU\0" id */
			const unsigned char *n = at(img, s.offset, s.size);

			while (n && s.size >= 12) {
				uint32_t nsz, dsz, type;
				uint64_t rec;

				memcpy(&nsz, n, 4);
				memcpy(&dsz, n + 4, 4);
				memcpy(&type, n + 8, 4);
				rec = 12 + (((uint64_t)nsz + 3) & ~3ULL) +
				      (((uint64_t)dsz + 3) & ~3ULL);
				if (rec > s.size)
					break;
				if (type == NT_GNU_BUILD_ID && nsz == 4 &&
				    !memcmp(n + 12, "GNU", 4) && dsz &&
				    dsz <= sizeof(img->build_id)) {
					memcpy(img->build_id, n + 16, dsz);
					img->build_id_len = dsz;
					break;
				}
				n += rec;
				s.size -= rec;
			}
		}
	}
	/* The tables are read when asked for (elf_load_symbols): a warm
	 * run answers from the symbol cache without them. */
	img->shoff = shoff;
	img->shentsize = shentsize;
	img->symtab_index = have_symtab ? symtab_index : 0;
	img->dynsym_index = have_dynsym ? dynsym_index : 0;
	img->has_code = table_has_code(img, img->symtab_index) ||
			table_has_code(img, img->dynsym_index);
	img->has_symtab = have_symtab && img->has_code;
}

/* Whether section INDEX (0: none) is a symbol table with a function. */
static bool table_has_code(const struct elf_image *img, size_t index)
{
	struct shdr sym, link;

	return index &&
	       get_shdr(img, img->shoff, img->shentsize, index, &sym) &&
	       get_shdr(img, img->shoff, img->shentsize, sym.link, &link) &&
	       read_symtab(img, &sym, &link, NULL, NULL,
			   NULL, NULL, NULL, NULL);
}

void elf_load_symbols(struct elf_image *img)
{
	struct shdr sym, link;
	size_t acode = 0, adata = 0;

	if (img->syms_loaded || !img->map)
		return;
	img->syms_loaded = true;
	/* The full table when there is one; the dynamic one otherwise. */
	if (img->symtab_index &&
	    get_shdr(img, img->shoff, img->shentsize, img->symtab_index,
		     &sym) &&
	    get_shdr(img, img->shoff, img->shentsize, sym.link, &link))
		read_symtab(img, &sym, &link, &img->code, &img->ncode, &acode,
			    &img->data, &img->ndata, &adata);
	if (!img->ncode && img->dynsym_index &&
	    get_shdr(img, img->shoff, img->shentsize, img->dynsym_index,
		     &sym) &&
	    get_shdr(img, img->shoff, img->shentsize, sym.link, &link))
		read_symtab(img, &sym, &link, &img->code, &img->ncode, &acode,
			    &img->data, &img->ndata, &adata);
	finish_syms(img->code, &img->ncode);
	finish_syms(img->data, &img->ndata);
}

static void read_segments(struct elf_image *img, uint64_t phoff,
			  uint16_t phentsize, uint16_t phnum)
{
	for (size_t i = 0; i < phnum; i++) {
		const void *p = at(img, phoff + (uint64_t)i * phentsize,
				   phentsize);
		uint64_t type, off, vaddr, memsz;

		if (!p)
			return;
		if (img->is64) {
			Elf64_Phdr h;

			if (phentsize < sizeof(h))
				return;
			memcpy(&h, p, sizeof(h));
			type = h.p_type, off = h.p_offset;
			vaddr = h.p_vaddr, memsz = h.p_memsz;
		} else {
			Elf32_Phdr h;

			if (phentsize < sizeof(h))
				return;
			memcpy(&h, p, sizeof(h));
			type = h.p_type, off = h.p_offset;
			vaddr = h.p_vaddr, memsz = h.p_memsz;
		}
		if (type != PT_LOAD)
			continue;
		img->loads = xreallocarray(img->loads, img->nloads + 1,
					   sizeof(*img->loads));
		img->loads[img->nloads++] =
			(struct elf_span){ vaddr, off, memsz };
	}
}

int elf_open(struct elf_image *img, const char *path, struct strbuf *why)
{
	if (elf_open_headers(img, path, why) < 0)
		return -1;
	elf_load_symbols(img);
	return 0;
}

int elf_open_headers(struct elf_image *img, const char *path,
		     struct strbuf *why)
{
	const unsigned char *id;
	Elf64_Ehdr e;
	struct stat st;
	int fd;

	memset(img, 0, sizeof(*img));
	img->path = xstrdup(path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		sb_addstr(why, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (!S_ISREG(st.st_mode) || st.st_size < EI_NIDENT) {
		close(fd);
		sb_addstr(why, "not an ELF file");
		return -1;
	}
	img->size = (size_t)st.st_size;
	img->map = mmap(NULL, img->size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (img->map == MAP_FAILED) {
		img->map = NULL;
		sb_addstr(why, strerror(errno));
		return -1;
	}
	id = img->map;
	if (memcmp(id, ELFMAG, SELFMAG) ||
	    (id[EI_CLASS] != ELFCLASS64 && id[EI_CLASS] != ELFCLASS32) ||
	    id[EI_DATA] != ELFDATA2LSB) {
		sb_addstr(why, "not a little-endian ELF file");
		return -1;
	}
	img->is64 = id[EI_CLASS] == ELFCLASS64;
	if (img->size < (img->is64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr))) {
		sb_addstr(why, "truncated ELF header");
		return -1;
	}
	/* The 32-bit header's fields, widened, in the 64-bit one's shape. */
	if (img->is64) {
		memcpy(&e, img->map, sizeof(e));
	} else {
		Elf32_Ehdr e32;

		memcpy(&e32, img->map, sizeof(e32));
		e.e_type = e32.e_type;
		e.e_phoff = e32.e_phoff;
		e.e_phentsize = e32.e_phentsize;
		e.e_phnum = e32.e_phnum;
		e.e_shoff = e32.e_shoff;
		e.e_shentsize = e32.e_shentsize;
		e.e_shnum = e32.e_shnum;
		e.e_shstrndx = e32.e_shstrndx;
	}
	img->is_dyn = e.e_type == ET_DYN;
	if (!tables_fit(img, e.e_phoff, e.e_phentsize, e.e_phnum, e.e_shoff,
			e.e_shentsize, e.e_shnum, why))
		return -1;
	read_segments(img, e.e_phoff, e.e_phentsize, e.e_phnum);
	read_sections(img, e.e_shoff, e.e_shentsize, e.e_shnum, e.e_shstrndx);
	return 0;
}

void elf_close(struct elf_image *img)
{
	if (img->map)
		munmap(img->map, img->size);
	free(img->loads);
	free(img->code);
	free(img->data);
	free(img->path);
	memset(img, 0, sizeof(*img));
}

void elf_take_symbols(struct elf_image *img, struct elf_image *debug)
{
	/* A debug file's .symtab has the local functions a stripped binary
	 * lost; its names point into the debug file's mapping, so the debug
	 * image must stay open as long as IMG. */
	if (debug->ncode > img->ncode) {
		free(img->code);
		img->code = debug->code;
		img->ncode = debug->ncode;
		debug->code = NULL;
		debug->ncode = 0;
		img->has_symtab = debug->has_symtab;
	}
	if (debug->ndata > img->ndata) {
		free(img->data);
		img->data = debug->data;
		img->ndata = debug->ndata;
		debug->data = NULL;
		debug->ndata = 0;
	}
}

const struct elf_sym *elf_find(const struct elf_sym *v, size_t n,
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
