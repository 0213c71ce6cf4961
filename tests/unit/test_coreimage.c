/*
 * Core files built here, byte by byte: a minimal ET_CORE (a PT_NOTE with
 * NT_PRPSINFO, NT_PRSTATUS and NT_FILE, two PT_LOAD segments) read as a
 * process image, then hostile variants of it (bad offsets and sizes, a
 * note past its segment, no segments, every truncation, every header
 * byte garbled), which give errors or partial images, never a crash.
 */
#include <criterion/criterion.h>
#include <elf.h>
#include <stddef.h>
#include <string.h>

#include "coreimage.h"
#include "helpers.h"
#include "util.h"

#define CODE_ADDR 0x400000ull
#define STACK_ADDR 0x7ffd0000ull
#define SEG_SIZE 4096u
#define RSP (STACK_ADDR + 0x800)
#define RIP (CODE_ADDR + 0x123)
#define FS_BASE 0x7f0000001000ull
#define TID 4242

/* A core being built: its bytes, and where its parts are. */
struct fake {
	uint8_t b[16384];
	size_t len;
	size_t notes, file_note; /* offsets of the notes, of NT_FILE's */
	size_t data;             /* the first segment's bytes */
};

static Elf64_Ehdr *ehdr(struct fake *f) { return (Elf64_Ehdr *)f->b; }

static Elf64_Phdr *phdr(struct fake *f, int i)
{
	return (Elf64_Phdr *)(f->b + sizeof(Elf64_Ehdr)) + i;
}

/* A note of TYPE named "CORE" with DESC (LEN bytes) at the end; returns
 * where its header starts. */
static size_t add_note(struct fake *f, uint32_t type, const void *desc,
		       uint32_t len)
{
	size_t at = f->len;
	Elf64_Nhdr nh = { 5, len, type };

	memcpy(f->b + at, &nh, sizeof(nh));
	memcpy(f->b + at + sizeof(nh), "CORE\0\0\0", 8);
	memcpy(f->b + at + sizeof(nh) + 8, desc, len);
	f->len = at + sizeof(nh) + 8 + ((len + 3) & ~3u);
	return at;
}

static void add_notes(struct fake *f)
{
	uint8_t prpsinfo[136] = { 0 }, prstatus[336] = { 0 }, file[64] = { 0 };
	struct user_regs_struct regs = { 0 };
	uint32_t pid = TID;
	uint64_t nt_file[5] = { 1, SEG_SIZE, CODE_ADDR, CODE_ADDR + SEG_SIZE,
				0 };

	memcpy(prpsinfo + 24, &pid, 4);
	memcpy(prpsinfo + 40, "fake", 5);
	memcpy(prstatus + 32, &pid, 4);
	regs.rsp = RSP;
	regs.rip = RIP;
	regs.fs_base = FS_BASE;
	memcpy(prstatus + 112, &regs, sizeof(regs));
	memcpy(file, nt_file, sizeof(nt_file));
	memcpy(file + sizeof(nt_file), "/bin/fake", 10);
	f->notes = f->len;
	add_note(f, NT_PRPSINFO, prpsinfo, sizeof(prpsinfo));
	add_note(f, NT_PRSTATUS, prstatus, sizeof(prstatus));
	f->file_note = add_note(f, NT_FILE, file, sizeof(nt_file) + 10);
}

static void set_load(struct fake *f, int i, uint64_t vaddr, uint32_t flags,
		     char fill)
{
	Elf64_Phdr *ph = phdr(f, i);

	ph->p_type = PT_LOAD;
	ph->p_flags = flags;
	ph->p_vaddr = vaddr;
	ph->p_offset = f->len;
	ph->p_filesz = ph->p_memsz = SEG_SIZE;
	memset(f->b + f->len, fill, SEG_SIZE);
	f->len += SEG_SIZE;
}

/* The minimal core: notes, code 'c'..., stack 's'... */
static void build(struct fake *f)
{
	Elf64_Ehdr *eh = ehdr(f);
	Elf64_Phdr *note = phdr(f, 0);

	memset(f, 0, sizeof(*f));
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_CORE;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_phoff = sizeof(*eh);
	eh->e_ehsize = sizeof(*eh);
	eh->e_phentsize = sizeof(Elf64_Phdr);
	eh->e_phnum = 3;
	f->len = sizeof(*eh) + 3 * sizeof(Elf64_Phdr);
	add_notes(f);
	note->p_type = PT_NOTE;
	note->p_offset = f->notes;
	note->p_filesz = f->len - f->notes;
	f->data = f->len;
	set_load(f, 1, CODE_ADDR, PF_R | PF_X, 'c');
	set_load(f, 2, STACK_ADDR, PF_R | PF_W, 's');
}

/* F (its first LEN bytes) written and opened: coreimage_open's status. */
static int open_fake(struct fake *f, size_t len, struct coreimage *core)
{
	const char *path = write_file("core", (const char *)f->b, (long)len);

	capture_stderr();
	return coreimage_open(core, path);
}

Test(coreimage, reads_a_minimal_core)
{
	struct fake f;
	struct coreimage core;
	const struct vma *code, *stack;
	char buf[SEG_SIZE + 16];

	build(&f);
	cr_assert_eq(open_fake(&f, f.len, &core), 0, "%s", stderr_text());
	cr_assert_str_empty(stderr_text());
	cr_assert_eq(core.pid, TID);
	cr_assert_str_eq(core.command, "fake");
	cr_assert_eq(core.nthreads, 1);
	cr_assert_eq(core.threads[0].pid, TID);
	cr_assert_eq(core.threads[0].regs.rsp, RSP);
	cr_assert_eq(core.threads[0].regs.rip, RIP);
	cr_assert_eq(core.threads[0].regs.fs_base, FS_BASE);
	cr_assert_eq(core.img.maps.n, 2);
	code = maps_find(&core.img.maps, CODE_ADDR + 10);
	stack = maps_find(&core.img.maps, RSP);
	cr_assert(code && stack);
	cr_assert_str_eq(code->name, "/bin/fake");
	cr_assert_str_eq(code->perms, "r-xp");
	cr_assert_str_eq(stack->name, "[stack]");
	cr_assert_str_eq(stack->perms, "rw-p");
	cr_assert_eq(procimage_read(&core.img, STACK_ADDR + 10, buf, 8), 8);
	cr_assert_eq(memcmp(buf, "ssssssss", 8), 0);
	/* To the end of the segment, and nothing past it. */
	cr_assert_eq(procimage_read(&core.img, STACK_ADDR + 16, buf,
				    sizeof(buf)), SEG_SIZE - 16);
	cr_assert_eq(procimage_read(&core.img, STACK_ADDR - 1, buf, 1), 0);
	cr_assert_not(coreimage_missing(&core, &(struct fault){ 0 }));
	cr_assert(!strncmp(core.img.name, "core /", 6), "%s", core.img.name);
	coreimage_close(&core);
}

/* ... and an error naming the file, whose text holds WHAT. */
static void refused(struct fake *f, size_t len, const char *what)
{
	struct coreimage core;

	cr_assert_eq(open_fake(f, len, &core), -1, "accepted: %s", what);
	cr_assert(strstr(stderr_text(), what), "said '%s', not '%s'",
		  stderr_text(), what);
	cr_assert(strstr(stderr_text(), "/core: "), "%s", stderr_text());
}

Test(coreimage, refuses_what_is_not_an_x86_64_core)
{
	struct fake f;

	build(&f);
	refused(&f, 3, "not an ELF file");
	memcpy(f.b, "garbage!", 8);
	refused(&f, f.len, "not an ELF file");
	build(&f);
	ehdr(&f)->e_type = ET_EXEC;
	refused(&f, f.len, "not a core file (ELF type 2, an executable)");
	build(&f);
	ehdr(&f)->e_ident[EI_CLASS] = ELFCLASS32;
	refused(&f, f.len, "a 32-bit ELF file: only x86-64 cores are read");
	build(&f);
	ehdr(&f)->e_machine = EM_AARCH64;
	refused(&f, f.len, "not x86-64");
	build(&f);
	refused(&f, 40, "the ELF header is cut short (40 of 64 bytes)");
	refused(&f, 100, "the 3 program headers run past the end of the file");
	ehdr(&f)->e_phoff = UINT64_MAX - 8;
	refused(&f, f.len, "run past the end of the file");
	build(&f);
	ehdr(&f)->e_phentsize = 32;
	refused(&f, f.len, "program headers of 32 bytes, not 56");
	build(&f);
	ehdr(&f)->e_phnum = PN_XNUM;
	ehdr(&f)->e_shoff = f.len;
	refused(&f, f.len, "the section header holding the number of segments");
}

Test(coreimage, a_cut_core_is_read_as_far_as_it_goes)
{
	struct fake f;
	struct coreimage core;
	struct fault why = { 0 };
	char buf[64];

	build(&f);
	cr_assert_eq(open_fake(&f, f.len - SEG_SIZE + 100, &core), 0);
	cr_assert_eq(core.cut.count, 1);
	cr_assert_eq(core.cut.bytes, SEG_SIZE - 100);
	cr_assert_eq(core.absent.count, 0);
	cr_assert_eq(procimage_read(&core.img, STACK_ADDR + 90, buf, 64), 10);
	cr_assert(coreimage_missing(&core, &why));
	cr_assert(strstr(why.what, "is cut short at"), "%s", why.what);
	cr_assert(strstr(why.what, ": 0 segments absent and 1 cut, 3996 "
			 "bytes of memory missing"), "%s", why.what);
	/* Where: the core, at the byte it is cut at. */
	cr_assert(why.where.has_addr);
	cr_assert_eq(why.where.addr, core.size);
	cr_assert_str_eq(why.where.path, core.path);
	fault_release(&why);
	coreimage_close(&core);

	cr_assert_eq(open_fake(&f, f.data + 10, &core), 0);
	cr_assert_eq(core.absent.count, 1);
	cr_assert_eq(core.cut.count, 1);
	cr_assert_eq(core.absent.bytes + core.cut.bytes, 2 * SEG_SIZE - 10);
	cr_assert_eq(procimage_read(&core.img, STACK_ADDR, buf, 8), 0);
	cr_assert_eq(core.nthreads, 1, "the notes are whole");
	coreimage_close(&core);

	/* Cut inside the notes: the threads before the cut are kept. */
	cr_assert_eq(open_fake(&f, f.file_note + 20, &core), 0);
	cr_assert_eq(core.nthreads, 1);
	cr_assert(strstr(stderr_text(), "the notes are cut short"), "%s",
		  stderr_text());
	cr_assert_eq(core.img.maps.n, 2);
	coreimage_close(&core);
}

Test(coreimage, segments_that_make_no_sense)
{
	struct fake f;
	struct coreimage core;
	char buf[8];

	build(&f);
	phdr(&f, 2)->p_offset = UINT64_MAX - 8;
	cr_assert_eq(open_fake(&f, f.len, &core), 0);
	cr_assert_eq(core.absent.count, 1);
	cr_assert_eq(procimage_read(&core.img, STACK_ADDR, buf, 8), 0);
	coreimage_close(&core);

	build(&f);
	phdr(&f, 2)->p_vaddr = UINT64_MAX - 100;
	cr_assert_eq(open_fake(&f, f.len, &core), 0);
	cr_assert(strstr(stderr_text(), "wraps around the address space"),
		  "%s", stderr_text());
	cr_assert_eq(core.nsegs, 1);
	coreimage_close(&core);

	build(&f);
	phdr(&f, 2)->p_filesz = UINT64_MAX;
	cr_assert_eq(open_fake(&f, f.len, &core), 0);
	cr_assert(strstr(stderr_text(), "says it holds"), "%s",
		  stderr_text());
	cr_assert_eq(procimage_read(&core.img, STACK_ADDR, buf, 8), 8);
	coreimage_close(&core);

	/* Not dumped by choice: in the map, not in the core, not missing. */
	build(&f);
	phdr(&f, 1)->p_filesz = 0;
	cr_assert_eq(open_fake(&f, f.len, &core), 0);
	cr_assert_eq(core.not_dumped.bytes, SEG_SIZE);
	cr_assert_not(coreimage_missing(&core, &(struct fault){ 0 }));
	cr_assert(maps_find(&core.img.maps, CODE_ADDR));
	cr_assert_eq(procimage_read(&core.img, CODE_ADDR, buf, 8), 0);
	coreimage_close(&core);

	/* Overlapping: the first kept, said. */
	build(&f);
	phdr(&f, 2)->p_vaddr = CODE_ADDR + 8;
	cr_assert_eq(open_fake(&f, f.len, &core), 0);
	cr_assert(strstr(stderr_text(), "overlaps"), "%s", stderr_text());
	cr_assert_eq(core.nsegs, 1);
	coreimage_close(&core);
}

Test(coreimage, zero_segments)
{
	struct fake f;
	struct coreimage core;
	char buf[8];

	build(&f);
	ehdr(&f)->e_phnum = 0;
	cr_assert_eq(open_fake(&f, f.len, &core), 0);
	cr_assert(strstr(stderr_text(), "no PT_LOAD segment"), "%s",
		  stderr_text());
	cr_assert_eq(core.img.maps.n, 0);
	cr_assert_eq(core.nthreads, 0);
	cr_assert_eq(procimage_read(&core.img, CODE_ADDR, buf, 8), 0);
	coreimage_close(&core);
}

Test(coreimage, notes_that_overrun)
{
	struct fake f;
	struct coreimage core;
	Elf64_Nhdr *nh;

	build(&f);
	nh = (Elf64_Nhdr *)(f.b + f.file_note);
	nh->n_descsz = 0xfffffff0;
	cr_assert_eq(open_fake(&f, f.len, &core), 0);
	cr_assert(strstr(stderr_text(), "runs past the notes' end"), "%s",
		  stderr_text());
	cr_assert_eq(core.nthreads, 1, "the notes before it are read");
	cr_assert_str_empty(maps_find(&core.img.maps, CODE_ADDR)->name);
	coreimage_close(&core);

	/* NT_FILE: more entries than bytes, then a path with no end. */
	build(&f);
	memset(f.b + f.file_note + 20, 0xff, 8);
	cr_assert_eq(open_fake(&f, f.len, &core), 0);
	cr_assert(strstr(stderr_text(), "too short for its entries"), "%s",
		  stderr_text());
	coreimage_close(&core);
	build(&f);
	memset(f.b + f.file_note + 20 + 40, 'x', 10);
	nh = (Elf64_Nhdr *)(f.b + f.file_note);
	nh->n_descsz = 48;
	cr_assert_eq(open_fake(&f, f.len, &core), 0);
	cr_assert(strstr(stderr_text(), "runs past the note"), "%s",
		  stderr_text());
	coreimage_close(&core);
}

/* Open, list and read every mapping: what a walk would do. */
static void survive(struct fake *f, size_t len)
{
	struct coreimage core;
	char buf[SEG_SIZE];

	if (open_fake(f, len, &core) < 0)
		return;
	for (size_t i = 0; i < core.img.maps.n; i++)
		procimage_read(&core.img, core.img.maps.v[i].start, buf,
			       sizeof(buf));
	{
		struct fault why = { 0 };

		coreimage_missing(&core, &why);
		fault_release(&why);
	}
	coreimage_close(&core);
}

Test(coreimage, every_truncation_and_garbled_header_byte)
{
	struct fake f;

	build(&f);
	for (size_t len = 0; len <= f.data + 8; len++)
		survive(&f, len);
	for (size_t i = 0; i < f.data; i++) {
		for (int v = 0; v < 3; v++) {
			build(&f);
			f.b[i] = (uint8_t)(v == 0 ? 0xff : v == 1 ? 0 : 0x80);
			survive(&f, f.len);
		}
	}
}
