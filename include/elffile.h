/*
 * The one ELF layer (src/core/elffile.c): an ELF file's bytes, mapped
 * read-only, and what they hold read with every offset and size checked
 * against them, 32- and 64-bit alike (widened): the header, program
 * headers, sections and their names, symbol tables, notes, compressed
 * sections' headers.  The core reader (coreimage.c), the symbolizer
 * (elfimage.c) and the DWARF reader (symdwarf.c) read ELF through it;
 * what each accepts (a core of x86-64, a binary with symbols, 64-bit
 * DWARF) is each one's to say.  Little-endian only, as dmprof's hosts.
 */
#ifndef DMPROF_ELFFILE_H
#define DMPROF_ELFFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"

/* The ELF header, widened. */
struct elf_header {
	uint8_t class;            /* e_ident[EI_CLASS]: ELFCLASS32, 64 */
	uint8_t data;             /* e_ident[EI_DATA]: ELFDATA2LSB, ... */
	uint16_t type, machine;
	uint64_t entry, phoff, shoff;
	uint16_t phentsize, phnum, shentsize, shnum, shstrndx;
};

struct elf_phdr {
	uint32_t type, flags;
	uint64_t offset, vaddr, filesz, memsz;
};

struct elf_shdr {
	uint32_t name, type;
	uint64_t flags, addr, offset, size;
	uint32_t link, info;
	uint64_t entsize;
};

struct elf_symbol {
	uint64_t value, size;
	uint32_t name;
	uint16_t shndx;
	uint8_t info, other;
};

/* What the bytes at the start of a file are. */
enum elf_ident {
	ELF_NOT_ELF,       /* no \177ELF */
	ELF_CUT,           /* \177ELF, but the header is cut short */
	ELF_OK,            /* a whole header of its class (maybe an odd one:
			      the caller checks class, data, type) */
};

struct elf_file {
	const uint8_t *data;
	uint64_t size;
	bool mapped;          /* elf_close unmaps it */
	bool is64;
	enum elf_ident ident; /* what elf_identify said */
	struct elf_header h;  /* as far as the file has one */
	size_t header_len;    /* its bytes in the file (up to the class's) */
};

/*
 * Map the file at PATH: 0, or -1 with WHY saying why not (it cannot be
 * opened: strerror's words; "not an ELF file": not a regular file, or
 * shorter than an ELF ident).  The header is read (elf_identify).
 */
int elf_open(struct elf_file *f, const char *path, struct strbuf *why);
/* The same of open descriptor FD (SIZE bytes, a regular file; 0 bytes
 * map nothing): 0, or -1 with errno set. */
int elf_open_fd(struct elf_file *f, int fd, uint64_t size);
/* The SIZE bytes at DATA (the caller's, kept while F is used) as a file. */
void elf_view(struct elf_file *f, const void *data, uint64_t size);
void elf_close(struct elf_file *f);

/* What the file starts with; its header into F->h, widened (elf_open
 * and elf_view read it). */
enum elf_ident elf_identify(struct elf_file *f);

/* Bytes [OFF, OFF + LEN) of the file, or NULL when they are not in it. */
const void *elf_at(const struct elf_file *f, uint64_t off, uint64_t len);

/*
 * Program header I (by the header's phoff and phentsize), section header
 * I (shoff, shentsize): false when it is not in the file or its entries
 * are smaller than the class's.
 */
bool elf_phdr(const struct elf_file *f, size_t i, struct elf_phdr *out);
bool elf_shdr(const struct elf_file *f, size_t i, struct elf_shdr *out);
/* The same from the entry's bytes at P (of a 64-bit file if IS64). */
void elf_decode_header(const uint8_t *p, size_t len, struct elf_header *h,
		       bool *is64);
void elf_decode_phdr(const uint8_t *p, bool is64, struct elf_phdr *out);

/*
 * The NUL-ended string at OFF of string section S (its bytes in the file),
 * or NULL when OFF or the string's end is outside it.
 */
const char *elf_string(const struct elf_file *f, const struct elf_shdr *s,
		       uint64_t off);

/* The size of a symbol of F's class; symbol I of table TAB (its bytes in
 * the file), or false. */
size_t elf_sym_size(const struct elf_file *f);
bool elf_symbol(const struct elf_file *f, const struct elf_shdr *tab,
		size_t i, struct elf_symbol *out);

/* Does the ELF file at PATH export (define, in its dynamic symbols)
 * NAME: 1, 0, or -1 when it cannot be read or has no dynamic symbols. */
int elf_exports(const char *path, const char *name);
/*
 * The values (and sizes, if SIZES) of the dynamic symbols NAMES[0..N)
 * the ELF file at PATH defines (0: not defined), and its first loadable
 * segment's address (its load bias is where that is mapped minus it,
 * page-aligned): how many were found, or -1 when the file cannot be read
 * or has no dynamic symbols.
 */
int elf_dynsyms(const char *path, const char *const *names, size_t n,
		uint64_t *values, uint64_t *sizes, uint64_t *load_vaddr);

/* A compressed section's header (Elf_Chdr of a 64-bit file if IS64,
 * widened) at P, LEN bytes: its size in the file into *HDR_LEN, or false
 * when the section is too short for one. */
bool elf_chdr(bool is64, const uint8_t *p, uint64_t len, uint32_t *type,
	      uint64_t *size, size_t *hdr_len);

/* A note, in a run of notes (a PT_NOTE segment, an SHT_NOTE section). */
struct elf_note {
	uint32_t type;
	const char *name;     /* NAMESZ bytes (its NUL included) */
	uint32_t namesz;
	const uint8_t *desc;  /* DESCSZ bytes */
	uint32_t descsz;
	uint64_t at;          /* where the note starts in the run */
	uint64_t desc_at;     /* and its desc */
};

enum elf_note_next {
	ELF_NOTE_END,         /* no room left for a note's header */
	ELF_NOTE,             /* *N is the next one */
	ELF_NOTE_CUT,         /* the next one (at N->at, type N->type, of
				 N->descsz bytes) runs past the run's end */
};

/* The note at *AT of the LEN bytes at P into *N; *AT past it. */
enum elf_note_next elf_note_next(const uint8_t *p, uint64_t len,
				 uint64_t *at, struct elf_note *n);

#endif
