/*
 * ELF reading on binaries compiled here (PIE, non-PIE, shared objects,
 * stripped copies, split debug files), checked against binutils' view of
 * the same files, and on damaged files, which must never crash.
 */
#include <criterion/criterion.h>
#include <elf.h>
#include <inttypes.h>
#include <libdeflate.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elfimage.h"
#include "helpers.h"
#include "input.h"
#include "util.h"

/*
 * Tiny functions aligned to 64 bytes leave a gap after each, so an
 * address past the end of one is not the start of the next.
 */
static const char exe_src[] =
	"int known_object[64] = { 1 };\n"
	"__attribute__((noinline)) int known_function(int x)\n"
	"{\n"
	"	return known_object[x & 63] * 3;\n"
	"}\n"
	"static __attribute__((noinline)) int local_function(int x)\n"
	"{\n"
	"	return known_object[(x + 1) & 63] + 1;\n"
	"}\n"
	"int main(int argc, char **argv)\n"
	"{\n"
	"	(void)argv;\n"
	"	return known_function(argc) + local_function(argc);\n"
	"}\n";

static const char lib_src[] =
	"int lib_object[16] = { 1 };\n"
	"static __attribute__((noinline)) int lib_helper(int x)\n"
	"{\n"
	"	return lib_object[x & 15] + 7;\n"
	"}\n"
	"int lib_function(int x)\n"
	"{\n"
	"	return lib_helper(x) * 3;\n"
	"}\n";

#define CFLAGS " -g -O1 -falign-functions=64 -Wl,--build-id=sha1 "

static struct elf_image img, dbg;
static struct strbuf why = STRBUF_INIT;

static void teardown(void)
{
	elfimage_close(&img);
	elfimage_close(&dbg);
	sb_release(&why);
}

TestSuite(elfimage, .fini = teardown);

static const char *scratch(const char *name)
{
	static char path[8][512];
	static int slot;
	char *p = path[slot++ % 8];

	snprintf(p, 512, "%s/%s", tmpdir(), name);
	return p;
}

static int sh(const char *fmt, ...) PRINTF(1, 2);
static int sh(const char *fmt, ...)
{
	struct strbuf cmd = STRBUF_INIT;
	va_list ap;
	int rc;

	va_start(ap, fmt);
	sb_vaddf(&cmd, fmt, ap);
	va_end(ap);
	rc = system(cmd.buf);
	sb_release(&cmd);
	return rc;
}

/* Compile SRC with FLAGS into tmpdir()/NAME; NULL if the compiler failed. */
static const char *compile(const char *name, const char *src,
			   const char *flags)
{
	struct strbuf c = STRBUF_INIT;
	const char *out = scratch(name);
	int rc;

	sb_addf(&c, "%s.c", name);
	write_file(c.buf, src, -1);
	rc = sh("cd '%s' && gcc %s -o '%s' '%s' 2>/dev/null", tmpdir(), flags,
		name, c.buf);
	sb_release(&c);
	return rc == 0 ? out : NULL;
}

static const char *must_compile(const char *name, const char *src,
				const char *flags)
{
	const char *p = compile(name, src, flags);

	cr_assert_not_null(p, "gcc %s failed", flags);
	return p;
}

/* What a command prints, whole. */
static char *output(const char *cmd)
{
	struct strbuf sb = STRBUF_INIT;
	char buf[4096];
	size_t n;
	FILE *f = popen(cmd, "r");

	cr_assert_not_null(f, "%s", cmd);
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		sb_add(&sb, buf, n);
	cr_assert_eq(pclose(f), 0, "%s failed", cmd);
	return sb_detach(&sb);
}

/* nm's address and size of the defined symbol NAME; false if absent. */
static bool nm_symbol(const char *path, const char *name, uint64_t *addr,
		      uint64_t *size)
{
	struct strbuf cmd = STRBUF_INIT;
	char *out, *line, *save = NULL;
	bool found = false;

	sb_addf(&cmd, "nm -S --defined-only '%s'", path);
	out = output(cmd.buf);
	for (line = strtok_r(out, "\n", &save); line && !found;
	     line = strtok_r(NULL, "\n", &save)) {
		char type, sym[256];

		if (sscanf(line, "%" SCNx64 " %" SCNx64 " %c %255s", addr, size,
			   &type, sym) == 4 &&
		    !strcmp(sym, name))
			found = true;
	}
	free(out);
	sb_release(&cmd);
	return found;
}

/* readelf's PT_LOAD segments of PATH, as elf_spans. */
static size_t readelf_loads(const char *path, struct elf_span *v, size_t max)
{
	struct strbuf cmd = STRBUF_INIT;
	char *out, *line, *save = NULL;
	size_t n = 0;

	sb_addf(&cmd, "readelf -lW '%s'", path);
	out = output(cmd.buf);
	for (line = strtok_r(out, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		uint64_t off, vaddr, paddr, filesz, memsz;

		if (sscanf(line, " LOAD 0x%" SCNx64 " 0x%" SCNx64 " 0x%" SCNx64
			   " 0x%" SCNx64 " 0x%" SCNx64,
			   &off, &vaddr, &paddr, &filesz, &memsz) == 5 &&
		    n < max)
			v[n++] = (struct elf_span){ vaddr, off, memsz };
	}
	free(out);
	sb_release(&cmd);
	return n;
}

/* readelf's build-id of PATH in hex, or "" (a new string). */
static char *readelf_build_id(const char *path)
{
	struct strbuf cmd = STRBUF_INIT;
	char *out, *p, *id;

	sb_addf(&cmd, "readelf -n '%s'", path);
	out = output(cmd.buf);
	p = strstr(out, "Build ID: ");
	id = p ? xstrndup(p + 10, strcspn(p + 10, "\n ")) : xstrdup("");
	free(out);
	sb_release(&cmd);
	return id;
}

static char *hex(const uint8_t *b, size_t n)
{
	struct strbuf sb = STRBUF_INIT;

	sb_addstr(&sb, "");
	for (size_t i = 0; i < n; i++)
		sb_addf(&sb, "%02x", b[i]);
	return sb_detach(&sb);
}

static const struct elf_sym *by_name(const struct elf_sym *v, size_t n,
				     const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].name, name))
			return &v[i];
	return NULL;
}

static void open_ok(const char *path)
{
	sb_reset(&why);
	cr_assert_eq(elfimage_open(&img, path, &why), 0, "%s: %s", path,
		     sb_str(&why));
}

static void check_loads(const char *path)
{
	struct elf_span want[16];
	size_t n = readelf_loads(path, want, 16);

	cr_assert_geq(n, 1);
	cr_assert_eq(img.nloads, n);
	for (size_t i = 0; i < n; i++) {
		cr_assert_eq(img.loads[i].offset, want[i].offset, "load %zu",
			     i);
		cr_assert_eq(img.loads[i].addr, want[i].addr, "load %zu", i);
		cr_assert_eq(img.loads[i].size, want[i].size, "load %zu", i);
	}
}

static void check_build_id(const char *path)
{
	char *want = readelf_build_id(path), *got;

	cr_assert_eq(img.build_id_len, 20);
	got = hex(img.build_id, img.build_id_len);
	cr_assert_str_eq(got, want);
	free(got);
	free(want);
}

/*
 * elfimage_find on function NAME of IMG's code, whose nm address and size
 * are known: inside, at its start, its last byte, and past its end.
 * False if the past-end case could not be tried.
 */
static bool check_function(const char *path, const char *name)
{
	const struct elf_sym *s;
	uint64_t addr, size;
	bool past;

	cr_assert(nm_symbol(path, name, &addr, &size), "nm lacks %s", name);
	cr_assert_gt(size, 0);
	cr_assert_lt(size, 64, "%s too big for the gap test", name);
	s = by_name(img.code, img.ncode, name);
	cr_assert_not_null(s, "no code symbol %s", name);
	cr_assert_eq(s->addr, addr);
	cr_assert_eq(s->size, size);

	s = elfimage_find(img.code, img.ncode, addr, &past);
	cr_assert_not_null(s);
	cr_assert_str_eq(s->name, name);
	cr_assert_not(past);
	s = elfimage_find(img.code, img.ncode, addr + size / 2, &past);
	cr_assert_str_eq(s->name, name);
	cr_assert_not(past);
	s = elfimage_find(img.code, img.ncode, addr + size - 1, &past);
	cr_assert_str_eq(s->name, name);
	cr_assert_not(past);
	/*
	 * The past-end rule: the nearest symbol below, flagged.  Unless a
	 * neighbour starts right there (i386's get_pc_thunk does).
	 */
	s = elfimage_find(img.code, img.ncode, addr + size, &past);
	cr_assert_not_null(s);
	if (s->addr == addr + size) {
		cr_assert_not(past);
		return false;
	}
	cr_assert_str_eq(s->name, name);
	cr_assert(past, "%s+%#" PRIx64 " not past the end", name, size);
	return true;
}

static void check_object(const char *path, const char *name, uint64_t size)
{
	const struct elf_sym *s;
	uint64_t addr, nsize;
	bool past;

	cr_assert(nm_symbol(path, name, &addr, &nsize), "nm lacks %s", name);
	s = elfimage_find(img.data, img.ndata, addr, &past);
	cr_assert_not_null(s, "no data symbol %s", name);
	cr_assert_str_eq(s->name, name);
	cr_assert_eq(s->addr, addr);
	cr_assert_eq(s->size, size);
	cr_assert_not(past);
	s = elfimage_find(img.data, img.ndata, addr + size - 1, &past);
	cr_assert_str_eq(s->name, name);
	cr_assert_not(past);
	/* Objects are not functions. */
	cr_assert_null(by_name(img.code, img.ncode, name));
}

/* The load span holding ADDR (a link-time address), or NULL. */
static const struct elf_span *span_of(uint64_t addr)
{
	for (size_t i = 0; i < img.nloads; i++)
		if (addr >= img.loads[i].addr &&
		    addr - img.loads[i].addr < img.loads[i].size)
			return &img.loads[i];
	return NULL;
}

/*
 * The address rule with real segments: the VMA a loader maps for the
 * segment holding ADDR, at BASE, brings the runtime address back to ADDR.
 */
static void check_address_rule(uint64_t base, uint64_t addr)
{
	const struct elf_span *sp = span_of(addr);
	struct vma v;
	uint64_t got = 0;

	cr_assert_not_null(sp);
	memset(&v, 0, sizeof(v));
	v.start = base + (sp->addr & ~0xfffULL);
	v.end = base + ((sp->addr + sp->size + 0xfff) & ~0xfffULL);
	v.offset = sp->offset & ~0xfffULL;
	strcpy(v.perms, "r-xp");
	v.name = "/x";
	cr_assert(elf_address(base + addr, &v, img.loads, img.nloads, &got));
	cr_assert_eq(got, addr, "%#" PRIx64 " != %#" PRIx64, got, addr);
}

Test(elfimage, pie_executable)
{
	const char *p = must_compile("pie", exe_src, CFLAGS "-fPIE -pie");
	uint64_t addr, size;

	open_ok(p);
	cr_assert(img.elf.is64);
	cr_assert(img.is_dyn);
	cr_assert(img.has_symtab);
	cr_assert(img.has_debug_info);
	cr_assert_null(img.debuglink);
	check_loads(p);
	cr_assert_eq(img.loads[0].addr, 0);
	check_build_id(p);
	cr_assert(check_function(p, "known_function"));
	cr_assert(check_function(p, "local_function"));
	cr_assert_not_null(by_name(img.code, img.ncode, "main"));
	check_object(p, "known_object", 256);
	/* Below every symbol: nothing. */
	{
		bool past = true;

		cr_assert_null(elfimage_find(img.code, img.ncode, 0, &past));
		cr_assert_not(past);
	}
	/* Sorted by address. */
	for (size_t i = 1; i < img.ncode; i++)
		cr_assert_lt(img.code[i - 1].addr, img.code[i].addr);
	cr_assert(nm_symbol(p, "known_function", &addr, &size));
	check_address_rule(0x555555554000ULL, addr + 4);
}

Test(elfimage, non_pie_executable)
{
	const char *p = must_compile("nopie", exe_src,
				     CFLAGS "-fno-pie -no-pie");
	uint64_t addr, size;

	open_ok(p);
	cr_assert(img.elf.is64);
	cr_assert_not(img.is_dyn);
	cr_assert(img.has_symtab);
	check_loads(p);
	cr_assert_eq(img.loads[0].addr, 0x400000);
	check_build_id(p);
	cr_assert(check_function(p, "known_function"));
	cr_assert(check_function(p, "local_function"));
	check_object(p, "known_object", 256);
	/* Mapped where it was linked: runtime and link addresses agree. */
	cr_assert(nm_symbol(p, "known_function", &addr, &size));
	check_address_rule(0, addr + 1);
}

Test(elfimage, shared_object)
{
	const char *p = must_compile("libx.so", lib_src,
				     CFLAGS "-shared -fPIC");
	uint64_t addr, size;

	open_ok(p);
	cr_assert(img.is_dyn);
	cr_assert(img.has_symtab);
	check_loads(p);
	check_build_id(p);
	cr_assert(check_function(p, "lib_function"));
	cr_assert(check_function(p, "lib_helper"));
	check_object(p, "lib_object", 64);
	cr_assert(nm_symbol(p, "lib_function", &addr, &size));
	check_address_rule(0x7f0000000000ULL, addr + 2);
}

Test(elfimage, stripped_shared_object_falls_back_to_dynsym)
{
	const char *p = must_compile("liby.so", lib_src,
				     CFLAGS "-shared -fPIC");
	const char *s = scratch("liby-stripped.so");
	const struct elf_sym *sym;
	uint64_t addr, size;
	bool past;

	cr_assert(nm_symbol(p, "lib_function", &addr, &size));
	cr_assert_eq(sh("strip --strip-all -o '%s' '%s'", s, p), 0);
	open_ok(s);
	cr_assert_not(img.has_symtab);
	cr_assert_not(img.has_debug_info);
	cr_assert_gt(img.ncode, 0);
	check_loads(s);
	/* The build-id note is loaded, so strip keeps it. */
	check_build_id(s);
	sym = elfimage_find(img.code, img.ncode, addr + 1, &past);
	cr_assert_not_null(sym);
	cr_assert_str_eq(sym->name, "lib_function");
	cr_assert_eq(sym->size, size);
	cr_assert_not(past);
	/* The static helper is gone with .symtab. */
	cr_assert_null(by_name(img.code, img.ncode, "lib_helper"));
	/* Exported objects are in .dynsym too. */
	cr_assert_not_null(by_name(img.data, img.ndata, "lib_object"));
}

Test(elfimage, stripped_executable_has_no_local_functions)
{
	const char *p = must_compile("nopie2", exe_src,
				     CFLAGS "-fno-pie -no-pie");
	const char *s = scratch("nopie2-stripped");

	cr_assert_eq(sh("strip --strip-all -o '%s' '%s'", s, p), 0);
	open_ok(s);
	cr_assert_not(img.has_symtab);
	cr_assert_not(img.has_debug_info);
	cr_assert_null(by_name(img.code, img.ncode, "known_function"));
	cr_assert_null(by_name(img.code, img.ncode, "local_function"));
	check_loads(s);
}

Test(elfimage, debuglink_crc_and_taking_symbols_from_the_debug_file)
{
	const char *p = must_compile("app", exe_src, CFLAGS "-fPIE -pie");
	const char *d = scratch("app.debug");
	const char *s = scratch("app-stripped");
	struct strbuf why2 = STRBUF_INIT;
	uint64_t addr, size;
	const struct elf_sym *sym;
	bool past;

	cr_assert_eq(sh("cd '%s' && objcopy --only-keep-debug app app.debug "
			"&& objcopy --strip-all --add-gnu-debuglink=app.debug "
			"app app-stripped",
			tmpdir()),
		     0);
	cr_assert(nm_symbol(p, "local_function", &addr, &size));
	open_ok(s);
	cr_assert_not(img.has_symtab);
	cr_assert_not_null(img.debuglink);
	cr_assert_str_eq(img.debuglink, "app.debug");
	cr_assert_eq(elfimage_open(&dbg, d, &why2), 0, "%s", sb_str(&why2));
	/* The CRC objcopy wrote is the CRC of the whole debug file. */
	cr_assert_eq(img.debuglink_crc, libdeflate_crc32(0, dbg.elf.data, dbg.elf.size),
		     "%#x != %#x", img.debuglink_crc,
		     libdeflate_crc32(0, dbg.elf.data, dbg.elf.size));
	cr_assert(dbg.has_symtab);
	cr_assert(dbg.has_debug_info);
	cr_assert_eq(dbg.build_id_len, img.build_id_len);
	cr_assert_arr_eq(dbg.build_id, img.build_id, img.build_id_len);

	cr_assert_null(by_name(img.code, img.ncode, "local_function"));
	elfimage_take_symbols(&img, &dbg);
	cr_assert(img.has_symtab);
	sym = elfimage_find(img.code, img.ncode, addr, &past);
	cr_assert_not_null(sym);
	cr_assert_str_eq(sym->name, "local_function");
	cr_assert_eq(sym->size, size);
	cr_assert_not_null(by_name(img.data, img.ndata, "known_object"));
	/* The stripped binary's own segments stay. */
	check_loads(s);
	sb_release(&why2);
}

Test(elfimage, elf32_shared_object)
{
	const char *p = compile("lib32.so", lib_src,
				"-m32 -shared -nostdlib -fPIC -O1 "
				"-falign-functions=64 -Wl,--build-id=sha1");

	if (!p)
		cr_skip_test("gcc -m32 cannot link here");
	open_ok(p);
	cr_assert_not(img.elf.is64);
	cr_assert(img.is_dyn);
	check_loads(p);
	check_build_id(p);
	check_function(p, "lib_function");
	check_function(p, "lib_helper");
	check_object(p, "lib_object", 64);
}

Test(elfimage, find_rules_on_a_table)
{
	static const struct elf_sym v[] = {
		{ 0x1000, 0x10, "sized" },
		{ 0x1040, 0, "unsized" },
		{ 0x1100, 0x20, "last" },
	};
	const struct elf_sym *s;
	bool past;

	cr_assert_null(elfimage_find(v, 3, 0xfff, &past));
	cr_assert_null(elfimage_find(v, 0, 0x1000, &past));
	s = elfimage_find(v, 3, 0x100f, &past);
	cr_assert_str_eq(s->name, "sized");
	cr_assert_not(past);
	s = elfimage_find(v, 3, 0x1010, &past);
	cr_assert_str_eq(s->name, "sized");
	cr_assert(past);
	/* A symbol without a size extends to the next one. */
	s = elfimage_find(v, 3, 0x10ff, &past);
	cr_assert_str_eq(s->name, "unsized");
	cr_assert_not(past);
	s = elfimage_find(v, 3, 0x1100, &past);
	cr_assert_str_eq(s->name, "last");
	cr_assert_not(past);
	s = elfimage_find(v, 3, UINT64_MAX, &past);
	cr_assert_str_eq(s->name, "last");
	cr_assert(past);
}

/* elfimage_open on bytes that are not a usable ELF file: an error, a reason. */
static void open_fails(const char *name, const char *data, long len,
		       const char *reason)
{
	const char *p = write_file(name, data, len);

	elfimage_close(&img);
	sb_reset(&why);
	cr_assert_eq(elfimage_open(&img, p, &why), -1, "%s opened", name);
	cr_assert(strstr(sb_str(&why), reason), "%s: '%s', want '%s'", name,
		  sb_str(&why), reason);
	elfimage_close(&img);
}

Test(elfimage, not_elf_files)
{
	char hdr[64];

	open_fails("empty", "", 0, "not an ELF file");
	open_fails("short", "\x7f" "ELF\x02\x01\x01", 7, "not an ELF file");
	open_fails("script", "#!/bin/sh\necho this is not an ELF file\n", -1,
		   "not a little-endian ELF file");

	/* 30 bytes that start well: the 64-byte header is cut. */
	memset(hdr, 0, sizeof(hdr));
	memcpy(hdr, "\x7f" "ELF\x02\x01\x01", 7);
	open_fails("cut64", hdr, 30, "truncated ELF header");
	/* Likewise the 52-byte header of a 32-bit file. */
	hdr[EI_CLASS] = ELFCLASS32;
	open_fails("cut32", hdr, 30, "truncated ELF header");
	/* Big-endian: another machine's binary. */
	hdr[EI_CLASS] = ELFCLASS64;
	hdr[EI_DATA] = ELFDATA2MSB;
	open_fails("bigendian", hdr, 64, "not a little-endian ELF file");
	/* An unknown class. */
	hdr[EI_CLASS] = 7;
	hdr[EI_DATA] = ELFDATA2LSB;
	open_fails("class7", hdr, 64, "not a little-endian ELF file");

	sb_reset(&why);
	cr_assert_eq(elfimage_open(&img, "/nonexistent/binary", &why), -1);
	cr_assert(strstr(sb_str(&why), "No such file or directory"));
	elfimage_close(&img);
	sb_reset(&why);
	cr_assert_eq(elfimage_open(&img, tmpdir(), &why), -1);
	cr_assert(strstr(sb_str(&why), "not an ELF file"), "%s",
		  sb_str(&why));
}

Test(elfimage, header_only_file_has_nothing)
{
	char hdr[64];

	/* A complete header with no tables: nothing to read, no crash. */
	memset(hdr, 0, sizeof(hdr));
	memcpy(hdr, "\x7f" "ELF\x02\x01\x01", 7);
	write_file("hdr", hdr, 64);
	open_ok(scratch("hdr"));
	cr_assert_eq(img.nloads, 0);
	cr_assert_eq(img.ncode, 0);
	cr_assert_eq(img.build_id_len, 0);
}

/* The bytes of a file (a new buffer) and its size. */
static char *slurp(const char *path, size_t *size)
{
	struct filebuf fb;
	char *p;

	cr_assert_eq(file_load(&fb, path), 0);
	p = xmemdup(fb.data, fb.size);
	*size = fb.size;
	file_release(&fb);
	return p;
}

/* The section header of type TYPE in a 64-bit image B, or NULL. */
static Elf64_Shdr *section_of_type(char *b, uint32_t type)
{
	Elf64_Ehdr *e = (Elf64_Ehdr *)b;

	for (size_t i = 0; i < e->e_shnum; i++) {
		Elf64_Shdr *s = (Elf64_Shdr *)(b + e->e_shoff +
					       i * e->e_shentsize);

		if (s->sh_type == type)
			return s;
	}
	return NULL;
}

/*
 * Open a damaged copy: it may open (with less in it) or fail with a
 * reason, but never crash nor read outside the file (ASan watches).
 */
static int open_damaged(const char *name, const char *data, size_t len)
{
	const char *p = write_file(name, data, (long)len);
	int rc;

	elfimage_close(&img);
	sb_reset(&why);
	rc = elfimage_open(&img, p, &why);
	if (rc < 0)
		cr_assert_gt(why.len, 0, "%s: error without a reason", name);
	return rc;
}

Test(elfimage, hostile_headers_never_crash)
{
	const char *p = must_compile("victim", exe_src, CFLAGS "-fPIE -pie");
	size_t size;
	char *orig = slurp(p, &size), *b = xmalloc(size);
	Elf64_Ehdr *e = (Elf64_Ehdr *)b;
	Elf64_Shdr *s;

#define FRESH() memcpy(b, orig, size)
	FRESH();
	e->e_phoff = size + 4096;
	open_damaged("phoff", b, size);
	cr_assert_eq(img.nloads, 0);

	FRESH();
	e->e_phoff = UINT64_MAX - 8;
	open_damaged("phoff-wrap", b, size);
	cr_assert_eq(img.nloads, 0);

	FRESH();
	e->e_phentsize = 8;
	open_damaged("phentsize", b, size);
	cr_assert_eq(img.nloads, 0);

	FRESH();
	e->e_shoff = UINT64_MAX - 63;
	open_damaged("shoff-wrap", b, size);
	cr_assert_eq(img.ncode, 0);

	FRESH();
	e->e_shnum = 0xffff;
	open_damaged("shnum", b, size);

	FRESH();
	e->e_shentsize = 16;
	open_damaged("shentsize", b, size);
	cr_assert_eq(img.ncode, 0);

	FRESH();
	e->e_shstrndx = e->e_shnum + 5;
	open_damaged("shstrndx", b, size);

	FRESH();
	s = section_of_type(b, SHT_SYMTAB);
	cr_assert_not_null(s);
	s->sh_offset = size - 8;
	open_damaged("symtab-offset", b, size);
	cr_assert_null(by_name(img.code, img.ncode, "local_function"));

	FRESH();
	s = section_of_type(b, SHT_SYMTAB);
	s->sh_size = UINT64_MAX - 4;
	open_damaged("symtab-size", b, size);
	cr_assert_null(by_name(img.code, img.ncode, "local_function"));

	FRESH();
	s = section_of_type(b, SHT_SYMTAB);
	s->sh_link = 0xfffff;
	open_damaged("symtab-link", b, size);
	cr_assert_null(by_name(img.code, img.ncode, "local_function"));

	FRESH();
	/* A string table whose last byte is not NUL: names could run off. */
	s = section_of_type(b, SHT_SYMTAB);
	{
		Elf64_Shdr *str = (Elf64_Shdr *)(b + e->e_shoff +
						 s->sh_link * e->e_shentsize);

		b[str->sh_offset + str->sh_size - 1] = 'x';
	}
	open_damaged("strtab-unterminated", b, size);
	cr_assert_null(by_name(img.code, img.ncode, "local_function"));

	FRESH();
	s = section_of_type(b, SHT_NOTE);
	cr_assert_not_null(s);
	/* A note whose descsz runs past its section. */
	memcpy(b + s->sh_offset + 4, "\xff\xff\xff\x7f", 4);
	open_damaged("note", b, size);

	for (size_t cut = 1; cut < size; cut = cut * 3 / 2 + 1)
		open_damaged("cut", orig, cut);
#undef FRESH
	free(b);
	free(orig);
}

/*
 * A binary cut short (a copy interrupted while fetching it for --symfs),
 * whose section headers now lie past the end of the file, is an error
 * with a reason, not a binary without symbols (which would send the user
 * looking for a debug file instead of a good copy).  The same for
 * e_shoff pointing past the end.
 */
Test(elfimage, truncated_binary_is_an_error)
{
	const char *p = must_compile("whole", exe_src, CFLAGS "-fPIE -pie");
	size_t size;
	char *orig = slurp(p, &size);
	Elf64_Ehdr *e = (Elf64_Ehdr *)orig;
	int rc;

	/* The first half: ELF header and program headers, no sections. */
	rc = open_damaged("half", orig, size / 2);
	if (rc == 0)
		free(orig);
	cr_assert_eq(rc, -1, "a binary cut to %zu of %zu bytes opened with "
			     "%zu functions and no reason",
		     size / 2, size, img.ncode);

	e->e_shoff = size + 4096;
	rc = open_damaged("shoff-past-end", orig, size);
	free(orig);
	cr_assert_eq(rc, -1, "section headers past the end of the file: "
			     "opened with %zu functions and no reason",
		     img.ncode);
}

/* PATH opened with its symbols read later: the tables elfimage_open reads,
 * and has_code saying beforehand whether there are functions. */
static void lazy_matches_eager(const char *path)
{
	struct elf_image lazy;
	struct strbuf why2 = STRBUF_INIT;

	open_ok(path);
	cr_assert_eq(elfimage_open_headers(&lazy, path, &why2), 0, "%s: %s", path,
		     sb_str(&why2));
	cr_assert_eq(lazy.ncode, 0);
	cr_assert_eq(lazy.ndata, 0);
	cr_assert_eq(lazy.has_code, img.ncode > 0, "%s", path);
	cr_assert_eq(lazy.has_symtab, img.has_symtab, "%s", path);
	elfimage_load_symbols(&lazy);
	elfimage_load_symbols(&lazy); /* (twice: once) */
	cr_assert_eq(lazy.has_symtab, img.has_symtab, "%s", path);
	cr_assert_eq(lazy.ncode, img.ncode, "%s", path);
	cr_assert_eq(lazy.ndata, img.ndata, "%s", path);
	for (size_t i = 0; i < img.ncode; i++) {
		cr_assert_eq(lazy.code[i].addr, img.code[i].addr);
		cr_assert_eq(lazy.code[i].size, img.code[i].size);
		cr_assert_str_eq(lazy.code[i].name, img.code[i].name);
	}
	for (size_t i = 0; i < img.ndata; i++)
		cr_assert_str_eq(lazy.data[i].name, img.data[i].name);
	elfimage_close(&lazy);
	elfimage_close(&img);
	sb_release(&why2);
}

Test(elfimage, symbols_read_when_asked_for)
{
	const char *p = must_compile("lazy", exe_src, CFLAGS "-fPIE -pie");
	const char *l = must_compile("liblazy.so", lib_src,
				     CFLAGS "-shared -fPIC");

	cr_assert_eq(sh("cd '%s' && objcopy --only-keep-debug lazy lazy.debug "
			"&& objcopy --strip-all lazy lazy-stripped && "
			"strip --strip-all -o liblazy-stripped.so liblazy.so && "
			"objcopy --remove-section=.dynsym --remove-section=.symtab "
			"lazy lazy-nosyms 2>/dev/null; "
			"objcopy --strip-all --keep-symbol=known_object lazy "
			"lazy-objects",
			tmpdir()),
		     0);
	lazy_matches_eager(p);
	lazy_matches_eager(l);
	lazy_matches_eager(scratch("lazy.debug"));
	lazy_matches_eager(scratch("lazy-stripped"));
	lazy_matches_eager(scratch("liblazy-stripped.so"));
	lazy_matches_eager(scratch("lazy-objects"));
	if (access(scratch("lazy-nosyms"), R_OK) == 0)
		lazy_matches_eager(scratch("lazy-nosyms"));
}
