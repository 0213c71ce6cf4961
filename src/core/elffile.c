/*
 * The ELF layer: a file's bytes mapped read-only, and every header,
 * table and note in it read through one bounds check (elf_at), so that a
 * cut or hostile file gives "not there", never a stray read.  Entries
 * are copied out and widened (memcpy: nothing in a file is trusted to be
 * aligned), which costs nothing next to what is done with them.
 */
#include "elffile.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * An entry of type TYPE at P, copied out (nothing in a file is aligned
 * for sure) as V, then OUT = its fields ..., widened: one line for a
 * class, the same fields for both.
 */
#define WIDEN(type, p, v, out, ...)                                        \
	do {                                                               \
		type v;                                                    \
		memcpy(&v, (p), sizeof(v));                                \
		(out) = (__typeof__(out)){ __VA_ARGS__ };                  \
	} while (0)

int elf_open_fd(struct elf_file *f, int fd, uint64_t size)
{
	void *p;

	memset(f, 0, sizeof(*f));
	if (size) {
		if (size > SIZE_MAX) {
			errno = EFBIG;
			return -1;
		}
		p = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (p == MAP_FAILED)
			return -1;
		f->data = p;
		f->size = size;
		f->mapped = true;
	}
	elf_identify(f);
	return 0;
}

int elf_open(struct elf_file *f, const char *path, struct strbuf *why)
{
	struct stat st;
	int fd, rc;

	memset(f, 0, sizeof(*f));
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
	rc = elf_open_fd(f, fd, (uint64_t)st.st_size);
	if (rc < 0)
		sb_addstr(why, strerror(errno));
	close(fd);
	return rc;
}

void elf_view(struct elf_file *f, const void *data, uint64_t size)
{
	memset(f, 0, sizeof(*f));
	f->data = data;
	f->size = size;
	elf_identify(f);
}

void elf_close(struct elf_file *f)
{
	if (f->mapped)
		munmap((void *)f->data, (size_t)f->size);
	memset(f, 0, sizeof(*f));
}

const void *elf_at(const struct elf_file *f, uint64_t off, uint64_t len)
{
	if (off > f->size || len > f->size - off)
		return NULL;
	return f->data + off;
}

/* Entry I of ESIZE bytes of a table at OFF (ESIZE bytes of it), or NULL. */
static const uint8_t *entry(const struct elf_file *f, uint64_t off, size_t i,
			    uint64_t esize)
{
	uint64_t at;

	if (__builtin_mul_overflow((uint64_t)i, esize, &at) ||
	    __builtin_add_overflow(at, off, &at))
		return NULL;
	return elf_at(f, at, esize);
}

void elf_decode_header(const uint8_t *p, size_t len, struct elf_header *h,
		       bool *is64)
{
	memset(h, 0, sizeof(*h));
	h->class = len > EI_CLASS ? p[EI_CLASS] : 0;
	h->data = len > EI_DATA ? p[EI_DATA] : 0;
	*is64 = h->class == ELFCLASS64;
	if (*is64 && len >= sizeof(Elf64_Ehdr))
		WIDEN(Elf64_Ehdr, p, e, *h, h->class, h->data, e.e_type,
		      e.e_machine, e.e_entry, e.e_phoff, e.e_shoff,
		      e.e_phentsize, e.e_phnum, e.e_shentsize, e.e_shnum,
		      e.e_shstrndx);
	else if (!*is64 && len >= sizeof(Elf32_Ehdr))
		WIDEN(Elf32_Ehdr, p, e, *h, h->class, h->data, e.e_type,
		      e.e_machine, e.e_entry, e.e_phoff, e.e_shoff,
		      e.e_phentsize, e.e_phnum, e.e_shentsize, e.e_shnum,
		      e.e_shstrndx);
}

enum elf_ident elf_identify(struct elf_file *f)
{
	size_t whole;

	f->header_len = f->size < sizeof(Elf64_Ehdr) ? (size_t)f->size
						     : sizeof(Elf64_Ehdr);
	if (f->size < SELFMAG || memcmp(f->data, ELFMAG, SELFMAG)) {
		memset(&f->h, 0, sizeof(f->h));
		f->is64 = false;
		return f->ident = ELF_NOT_ELF;
	}
	elf_decode_header(f->data, f->header_len, &f->h, &f->is64);
	whole = f->is64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr);
	if (f->header_len > whole)
		f->header_len = whole;
	return f->ident = f->header_len < whole ? ELF_CUT : ELF_OK;
}

void elf_decode_phdr(const uint8_t *p, bool is64, struct elf_phdr *out)
{
#define PHDR(h) h.p_type, h.p_flags, h.p_offset, h.p_vaddr, h.p_filesz, \
		h.p_memsz
	if (is64)
		WIDEN(Elf64_Phdr, p, h, *out, PHDR(h));
	else
		WIDEN(Elf32_Phdr, p, h, *out, PHDR(h));
#undef PHDR
}

bool elf_phdr(const struct elf_file *f, size_t i, struct elf_phdr *out)
{
	size_t need = f->is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr);
	const uint8_t *p = entry(f, f->h.phoff, i, f->h.phentsize);

	if (!p || f->h.phentsize < need)
		return false;
	elf_decode_phdr(p, f->is64, out);
	return true;
}

bool elf_shdr(const struct elf_file *f, size_t i, struct elf_shdr *out)
{
	size_t need = f->is64 ? sizeof(Elf64_Shdr) : sizeof(Elf32_Shdr);
	const uint8_t *p = entry(f, f->h.shoff, i, f->h.shentsize);

	if (!p || f->h.shentsize < need)
		return false;
#define SHDR(h) h.sh_name, h.sh_type, h.sh_flags, h.sh_addr, h.sh_offset, \
		h.sh_size, h.sh_link, h.sh_info, h.sh_entsize
	if (f->is64)
		WIDEN(Elf64_Shdr, p, h, *out, SHDR(h));
	else
		WIDEN(Elf32_Shdr, p, h, *out, SHDR(h));
#undef SHDR
	return true;
}

const char *elf_string(const struct elf_file *f, const struct elf_shdr *s,
		       uint64_t off)
{
	const char *p = elf_at(f, s->offset, s->size);

	if (!p || off >= s->size || !memchr(p + off, '\0', s->size - off))
		return NULL;
	return p + off;
}

size_t elf_sym_size(const struct elf_file *f)
{
	return f->is64 ? sizeof(Elf64_Sym) : sizeof(Elf32_Sym);
}

bool elf_symbol(const struct elf_file *f, const struct elf_shdr *tab,
		size_t i, struct elf_symbol *out)
{
	size_t esz = elf_sym_size(f);
	const uint8_t *p;

	if ((uint64_t)i >= tab->size / esz ||
	    !(p = entry(f, tab->offset, i, esz)))
		return false;
#define SYM(e) e.st_value, e.st_size, e.st_name, e.st_shndx, e.st_info, \
		e.st_other
	if (f->is64)
		WIDEN(Elf64_Sym, p, e, *out, SYM(e));
	else
		WIDEN(Elf32_Sym, p, e, *out, SYM(e));
#undef SYM
	return true;
}

int elf_dynsyms(const char *path, const char *const *names, size_t n,
		uint64_t *values, uint64_t *sizes, uint64_t *load_vaddr)
{
	struct elf_file f;
	struct strbuf why = STRBUF_INIT;
	struct elf_phdr ph;
	int found = -1;

	for (size_t k = 0; k < n; k++)
		values[k] = sizes ? (sizes[k] = 0) : 0;
	*load_vaddr = 0;
	if (elf_open(&f, path, &why) < 0) {
		sb_release(&why);
		return -1;
	}
	if (f.ident != ELF_OK)
		goto out;
	for (size_t i = 0; elf_phdr(&f, i, &ph); i++)
		if (ph.type == PT_LOAD) {
			*load_vaddr = ph.vaddr;
			break;
		}
	for (size_t i = 0; found < 0 && i < f.h.shnum; i++) {
		struct elf_shdr tab, strs;
		struct elf_symbol e;
		const char *name;

		if (!elf_shdr(&f, i, &tab) || tab.type != SHT_DYNSYM ||
		    !elf_shdr(&f, tab.link, &strs))
			continue;
		found = 0;
		for (size_t k = 1; elf_symbol(&f, &tab, k, &e); k++) {
			if (e.shndx == SHN_UNDEF ||
			    !(name = elf_string(&f, &strs, e.name)))
				continue;
			for (size_t j = 0; j < n; j++)
				if (!values[j] && !strcmp(name, names[j])) {
					values[j] = e.value;
					if (sizes)
						sizes[j] = e.size;
					found++;
				}
		}
	}
out:
	elf_close(&f);
	return found;
}

int elf_exports(const char *path, const char *name)
{
	uint64_t value, vaddr;
	int found = elf_dynsyms(path, &name, 1, &value, NULL, &vaddr);

	return found < 0 ? -1 : found > 0;
}

bool elf_chdr(bool is64, const uint8_t *p, uint64_t len, uint32_t *type,
	      uint64_t *size, size_t *hdr_len)
{
	struct { uint32_t type; uint64_t size; } w;

	*hdr_len = is64 ? sizeof(Elf64_Chdr) : sizeof(Elf32_Chdr);
	if (len < *hdr_len)
		return false;
	if (is64)
		WIDEN(Elf64_Chdr, p, c, w, c.ch_type, c.ch_size);
	else
		WIDEN(Elf32_Chdr, p, c, w, c.ch_type, c.ch_size);
	*type = w.type;
	*size = w.size;
	return true;
}

static uint64_t align4(uint64_t n)
{
	return (n + 3) & ~(uint64_t)3;
}

enum elf_note_next elf_note_next(const uint8_t *p, uint64_t len,
				 uint64_t *at, struct elf_note *n)
{
	uint64_t name, desc;

	if (*at > len || len - *at < 12)
		return ELF_NOTE_END;
	memcpy(&n->namesz, p + *at, 4);
	memcpy(&n->descsz, p + *at + 4, 4);
	memcpy(&n->type, p + *at + 8, 4);
	n->at = *at;
	name = *at + 12;
	desc = name + align4(n->namesz);
	if (desc > len || n->descsz > len - desc)
		return ELF_NOTE_CUT;
	n->name = (const char *)p + name;
	n->desc = p + desc;
	n->desc_at = desc;
	*at = desc + align4(n->descsz);
	return ELF_NOTE;
}
