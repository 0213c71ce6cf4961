/*
 * The ELF layer on bytes made here: headers of both classes widened
 * alike, every table read through the bounds check, notes walked to
 * their end or to where they are cut.  (Real binaries are read through
 * it in test_elf.c, cores in test_coreimage.c.)
 */
#include <criterion/criterion.h>
#include <elf.h>
#include <string.h>

#include "elffile.h"

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

Test(elffile, headers_of_both_classes_widened_alike)
{
	Elf64_Ehdr e64 = { .e_type = ET_DYN, .e_machine = EM_X86_64,
			   .e_phoff = 64, .e_phentsize = sizeof(Elf64_Phdr),
			   .e_phnum = 3, .e_shstrndx = 7 };
	Elf32_Ehdr e32 = { .e_type = ET_DYN, .e_machine = EM_386,
			   .e_phoff = 52, .e_phentsize = sizeof(Elf32_Phdr),
			   .e_phnum = 3, .e_shstrndx = 7 };
	struct elf_file f;

	memcpy(e64.e_ident, ELFMAG, SELFMAG);
	e64.e_ident[EI_CLASS] = ELFCLASS64;
	memcpy(e32.e_ident, ELFMAG, SELFMAG);
	e32.e_ident[EI_CLASS] = ELFCLASS32;
	elf_view(&f, &e64, sizeof(e64));
	cr_assert_eq(f.ident, ELF_OK);
	cr_assert(f.is64);
	cr_assert_eq(f.h.phoff, 64);
	cr_assert_eq(f.h.phnum, 3);
	cr_assert_eq(f.h.shstrndx, 7);
	elf_view(&f, &e32, sizeof(e32));
	cr_assert_eq(f.ident, ELF_OK);
	cr_assert_not(f.is64);
	cr_assert_eq(f.h.machine, EM_386);
	cr_assert_eq(f.h.phoff, 52);
	cr_assert_eq(f.h.phnum, 3);
	/* Cut: the class is known, the header not whole; not ELF at all. */
	elf_view(&f, &e64, 40);
	cr_assert_eq(f.ident, ELF_CUT);
	cr_assert_eq(f.h.class, ELFCLASS64);
	cr_assert_eq(f.header_len, 40);
	elf_view(&f, "\177ELG", 4);
	cr_assert_eq(f.ident, ELF_NOT_ELF);
	elf_view(&f, "", 0);
	cr_assert_eq(f.ident, ELF_NOT_ELF);
}

Test(elffile, nothing_outside_the_file_is_read)
{
	uint8_t buf[sizeof(Elf64_Ehdr) + sizeof(Elf64_Phdr)] = { 0 };
	Elf64_Ehdr *e = (Elf64_Ehdr *)buf;
	struct elf_shdr tab = { .offset = 72, .size = 3 * sizeof(Elf64_Sym) };
	struct elf_symbol sym;
	struct elf_phdr ph;
	struct elf_file f;

	memcpy(e->e_ident, ELFMAG, SELFMAG);
	e->e_ident[EI_CLASS] = ELFCLASS64;
	e->e_phoff = sizeof(Elf64_Ehdr);
	e->e_phentsize = sizeof(Elf64_Phdr);
	elf_view(&f, buf, sizeof(buf));
	cr_assert_not_null(elf_at(&f, 0, sizeof(buf)));
	cr_assert_null(elf_at(&f, 1, sizeof(buf)));
	cr_assert_null(elf_at(&f, UINT64_MAX, 2));
	cr_assert_null(elf_at(&f, 2, UINT64_MAX));
	cr_assert(elf_phdr(&f, 0, &ph));
	cr_assert_not(elf_phdr(&f, 1, &ph));
	cr_assert_not(elf_phdr(&f, SIZE_MAX / 56, &ph));
	/* Entries smaller than the class's are none. */
	e->e_phentsize = 8;
	elf_view(&f, buf, sizeof(buf));
	cr_assert_not(elf_phdr(&f, 0, &ph));
	/* A table that says more than the file holds ends where it does. */
	cr_assert(elf_symbol(&f, &tab, 0, &sym));
	cr_assert(elf_symbol(&f, &tab, 1, &sym));
	cr_assert_not(elf_symbol(&f, &tab, 2, &sym));
	cr_assert_not(elf_symbol(&f, &tab, 3, &sym));
}

Test(elffile, strings_end_inside_their_section)
{
	static const char strs[] = "\0one\0two";
	struct elf_shdr s = { .offset = 0, .size = sizeof(strs) - 1 };
	struct elf_file f;

	elf_view(&f, strs, sizeof(strs) - 1);
	cr_assert_str_eq(elf_string(&f, &s, 1), "one");
	/* "two" has no NUL inside the section (the array's is past it). */
	cr_assert_null(elf_string(&f, &s, 5));
	cr_assert_null(elf_string(&f, &s, 100));
}

Test(elffile, notes_walked_to_their_end_or_their_cut)
{
	uint8_t p[64] = { 0 };
	struct elf_note n;
	uint64_t at = 0;

	/* "CORE\0" (5, padded to 8), 3 bytes of desc (padded to 4). */
	put32(p, 5);
	put32(p + 4, 3);
	put32(p + 8, NT_PRSTATUS);
	memcpy(p + 12, "CORE", 5);
	memcpy(p + 20, "abc", 3);
	/* Then one whose desc runs past the 40 bytes given. */
	put32(p + 24, 4);
	put32(p + 28, 100);
	put32(p + 32, NT_FILE);
	cr_assert_eq(elf_note_next(p, 40, &at, &n), ELF_NOTE);
	cr_assert_eq(n.type, NT_PRSTATUS);
	cr_assert_eq(n.namesz, 5);
	cr_assert_str_eq(n.name, "CORE");
	cr_assert_eq(n.descsz, 3);
	cr_assert_eq(memcmp(n.desc, "abc", 3), 0);
	cr_assert_eq(n.desc_at, 20);
	cr_assert_eq(at, 24);
	cr_assert_eq(elf_note_next(p, 40, &at, &n), ELF_NOTE_CUT);
	cr_assert_eq(n.at, 24);
	cr_assert_eq(n.type, NT_FILE);
	cr_assert_eq(n.descsz, 100);
	/* Less than a note's header left: the end. */
	at = 0;
	cr_assert_eq(elf_note_next(p, 11, &at, &n), ELF_NOTE_END);
	at = 50;
	cr_assert_eq(elf_note_next(p, 40, &at, &n), ELF_NOTE_END);
}

Test(elffile, compressed_section_headers)
{
	Elf64_Chdr c64 = { .ch_type = ELFCOMPRESS_ZLIB, .ch_size = 1234 };
	Elf32_Chdr c32 = { .ch_type = ELFCOMPRESS_ZLIB, .ch_size = 99 };
	uint32_t type;
	uint64_t size;
	size_t hdr;

	cr_assert(elf_chdr(true, (const uint8_t *)&c64, sizeof(c64), &type,
			   &size, &hdr));
	cr_assert_eq(type, ELFCOMPRESS_ZLIB);
	cr_assert_eq(size, 1234);
	cr_assert_eq(hdr, sizeof(c64));
	cr_assert(elf_chdr(false, (const uint8_t *)&c32, sizeof(c32), &type,
			   &size, &hdr));
	cr_assert_eq(size, 99);
	cr_assert_eq(hdr, sizeof(c32));
	cr_assert_not(elf_chdr(true, (const uint8_t *)&c64, sizeof(c64) - 1,
			       &type, &size, &hdr));
}
