/*
 * The original's symbol-map directory (PREFIX.symmap/: maps, files.json,
 * nm and readelf text per binary) as a symbolizer backend.
 */
#ifndef DMPROF_SYMMAP_H
#define DMPROF_SYMMAP_H

#include <stdbool.h>

#include "symbol.h"

/*
 * Open DIR.  Returns NULL and prints why when DIR has no usable maps or
 * files.json; a binary whose nm or readelf file is missing or broken gets
 * one warning and stays unsymbolized.
 */
struct symbolizer *symmap_open(const char *dir, struct strtab *strings,
			       const struct sym_options *opts);

/* True if DIR looks like a symbol-map directory (has files.json). */
bool symmap_present(const char *dir);

/* Parsers, exposed for unit tests. */
struct symmap_binary;
struct symmap_binary *symmap_binary_new(const char *name);
void symmap_binary_free(struct symmap_binary *b);
int symmap_load_nm(struct symmap_binary *b, const char *path, bool mangled);
int symmap_load_readelf(struct symmap_binary *b, const char *path);
int symmap_load_decodedline(struct symmap_binary *b, const char *path);
/*
 * Look up the link-time address ELF_ADDR: the procedure with the largest
 * start below it (short name, "" for the unnamed first range), or NULL if
 * the table is empty.
 */
const char *symmap_binary_function(struct symmap_binary *b, uint64_t elf_addr,
				   struct strtab *strings);
const char *symmap_binary_sourcefile(struct symmap_binary *b,
				     uint64_t elf_addr, struct strtab *strings);
const char *symmap_binary_typeinfo(struct symmap_binary *b, uint64_t elf_addr,
				   struct strtab *strings);
bool symmap_binary_elf_address(struct symmap_binary *b, uint64_t addr,
			       const struct vma *vma, uint64_t *elf_addr);

#endif
