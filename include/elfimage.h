/*
 * A binary as the symbolizer sees it, read through the ELF layer
 * (elffile.h): the PT_LOAD segments that carry the address rule, symbol
 * tables with their sizes (libbfd's generic API has neither), the
 * build-id and the .gnu_debuglink of a binary.
 */
#ifndef DMPROF_ELFIMAGE_H
#define DMPROF_ELFIMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "elffile.h"
#include "symbol.h"

struct elf_sym {
	uint64_t addr;   /* link-time address */
	uint64_t size;   /* 0: unknown, extends to the next symbol */
	const char *name; /* mangled, in the image's string table */
};

struct elf_image {
	char *path;
	struct elf_file elf; /* the whole file, mapped read-only */
	bool is_dyn;
	struct elf_span *loads;  /* PT_LOAD: file offset -> address */
	size_t nloads;
	/* Read by elfimage_load_symbols (elfimage_open reads them at once). */
	struct elf_sym *code;    /* functions, sorted by address */
	size_t ncode;
	struct elf_sym *data;    /* objects (type_info and friends), sorted */
	size_t ndata;
	bool syms_loaded;
	/* Known before: whether code will have a function (ncode > 0). */
	bool has_code;
	bool has_symtab;         /* .symtab, not only .dynsym */
	size_t symtab_index, dynsym_index; /* 0: none */
	bool has_debug_info;     /* a .debug_info section */
	uint8_t build_id[64];
	size_t build_id_len;
	const char *debuglink;   /* .gnu_debuglink file name, or NULL */
	uint32_t debuglink_crc;
};

/*
 * Open PATH.  Returns 0, or -1 with a reason in WHY (the caller decides
 * whether that is worth a warning).
 */
int elfimage_open(struct elf_image *img, const char *path, struct strbuf *why);
/*
 * The same without reading the symbol tables: has_code and has_symtab
 * say what they hold, elfimage_load_symbols reads them when they are needed.
 */
int elfimage_open_headers(struct elf_image *img, const char *path,
		     struct strbuf *why);
void elfimage_load_symbols(struct elf_image *img);
void elfimage_close(struct elf_image *img);

/*
 * Load symbols from DEBUG (a separate debug file of IMG) into IMG: the
 * debug file's tables replace IMG's when they are richer.  (Both have
 * their symbols loaded.)
 */
void elfimage_take_symbols(struct elf_image *img, struct elf_image *debug);

/* The symbol containing ADDR, or NULL; *past is set when ADDR lies past
 * the end of the nearest symbol below it (which is then returned). */
const struct elf_sym *elfimage_find(const struct elf_sym *v, size_t n,
			       uint64_t addr, bool *past);

#endif
