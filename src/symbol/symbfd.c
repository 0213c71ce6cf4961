/*
 * The symbolizer for real binaries.  Each binary the maps name is opened
 * once, on first need: its ELF program headers give the address rule
 * (file offset to link-time address through the PT_LOAD segment), its
 * .symtab (else .dynsym) the functions and objects with their sizes.  A
 * stripped binary's separate debug file is found by build-id under
 * /usr/lib/debug/.build-id, else by .gnu_debuglink (CRC checked), else,
 * when DEBUGINFOD_URLS names servers, fetched from them by build-id
 * (elfutils' libdebuginfod, which keeps what it fetched in its cache;
 * without the variable nothing touches the network).  libbfd
 * reads DWARF for source lines and inlined functions and demangles names.
 *
 * Frames are return addresses: the call is looked up at address - 1.  An
 * address past the end of the nearest symbol is shown as such ("?? after
 * f+0x12"), never given to it.  Results go to the persistent symbol cache.
 */
#include "symbfd.h"

#include <bfd.h>
#include <dlfcn.h>
#include <elfutils/debuginfod.h>
#include <libdeflate.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elfimage.h"
#include "search.h"
#include "symcache.h"
#include "symdwarf.h"
#include "threads.h"
#include "util.h"

/* libiberty's demangle.h, which Debian does not install. */
#define DMGL_PARAMS (1 << 0)
#define DMGL_ANSI (1 << 1)

#define DEBUG_DIR "/usr/lib/debug"

struct binary {
	const char *name;   /* as the maps name it (interned) */
	bool opened, ok;
	struct elf_image img;
	struct elf_image dbg; /* separate debug file, if any */
	bool has_dbg;
	const char *dwarf;  /* the file with DWARF: img's or dbg's path */
	/*
	 * dmprof's own reader of that DWARF, while it follows it: the
	 * answers for the addresses of the current batch, in the order
	 * they will be asked for.  Once it declines, libbfd answers.
	 */
	struct dwarf *dw;
	bool dw_tried, dw_off;
	struct dwarf *dw_begun; /* by bfd_ready: finished at the first lookup */
	bool dw_refused;        /* nor does libbfd: no DWARF at all */
	struct dwarf_answer *answers;
	size_t nanswers, next_answer;
	unsigned long batch;    /* the batch the answers are for */
	unsigned long slots_batch; /* the batch its slots were found for */
	size_t *at, nat;        /* and their places in it (find_slots) */
	bfd *abfd;
	asymbol **bfd_syms;
	bool bfd_tried;
	bool syms_done;         /* elfimage_load_symbols'd, debug file's taken */
	struct symcache *cache;
	/*
	 * By symbol (its index in img.code): its name demangled in full,
	 * and as shown, once each (a cold run of a million stacks looked
	 * them up by pointer for each of its 120,000 addresses: a fifth of
	 * its naming).
	 */
	struct symbol_names {
		const char *full, *shown;
	} *names;
	/* For -v: where the debug file came from, whether its symbol tables
	 * replaced the binary's, and the frames left unresolved. */
	const char *dbg_how;
	bool syms_from_dbg;
	unsigned long unresolved;
	unsigned long cached, looked_up; /* addresses, by where from */
};

/*
 * What code() needs of one address of the batch: its mapping (found in
 * prepare), then, once its binary first comes up, the binary's address,
 * where the symbol cache has it, and its ELF symbol (found once, for the
 * DWARF questions and the answer).
 */
struct slot {
	const struct vma *v;
	uint64_t elf;
	uint32_t where;      /* symcache_find_many's */
	/* (24 bytes: a batch has a slot per frame, 400,000 of them.) */
	uint32_t sym : 29;   /* index + 1 in its binary's code, 0: none */
	uint32_t placed : 1; /* elf is set (a binary of V's name is open) */
	uint32_t sym_found : 1, past : 1;
};

/* A memo: one interned string to another (mangled -> demangled, ...). */
struct memo {
	const void *key;
	const char *value;
};

/*
 * Memos by key pointer, the last found of each slot of a small table in
 * front of the hash table: five are asked per address (a name per frame,
 * its file, the names shown), and the hash table's random accesses were
 * a twentieth of a cold run.  (Of 16,384 slots: with 4,096, a cold
 * symbolize-dwarf run found 79,000 of 178,000 names in front, 145,000
 * now; the functions of 82,000 addresses and their callers are many.)
 */
#define MEMO_FRONT_BITS 14
#define MEMO_FRONT (1 << MEMO_FRONT_BITS)

struct memo_map {
	struct hashmap map;
	struct memo last; /* the last asked for: frames come in runs of a
			     function (an address's neighbours) */
	struct memo *front; /* MEMO_FRONT, made at the first put: a warm
			       run asks none (3 x 256 KiB zeroed for it) */
};

/*
 * A binary opened ahead, on another thread (bfd_ready): taken by
 * open_binary when a lookup first meets the file at HOST.
 */
struct readied {
	char *host;
	struct binary *b;  /* until taken */
	struct strbuf why; /* FAILED: why its headers could not be read */
	bool failed;
	bool fetch;        /* stripped, no debug file here: debuginfod's turn */
	bool taken;
};

/*
 * What naming an address changes besides its binary's own state: a
 * scratch buffer, the memos, and the batch's position.  The
 * symbolizer's own (main), for the addresses asked one by one; each
 * thread's own, for a batch named on two cores (bfd_code_batch).
 */
struct namer {
	struct bfdsym *bs;
	struct strbuf sb;
	/*
	 * A function has many frame addresses: demangle and shorten its
	 * name once.
	 */
	struct memo_map demangled; /* symbol name pointer -> full name */
	struct memo_map shortened; /* interned full name -> shown name */
	/* The DWARF reader's file names, which it keeps: pointer -> interned
	 * (a name per frame hashed in full was a twentieth of a cold run). */
	struct memo_map files;
	/* Their entries' arena: a thread's own; NULL (main's): the strings',
	 * through strtab_alloc (another thread may intern meanwhile: a dump
	 * read ahead). */
	struct arena *memos;
	struct arena own;
	size_t next; /* the batch's address after the one being named */
};

struct bfdsym {
	struct symbolizer base;
	struct readied **ready;
	size_t nready;
	struct hashmap bins; /* interned name -> binary */
	struct binary **v;
	size_t n;
	struct namer main;
	struct binary *last;      /* the binary of the last address */
	unsigned long unresolved; /* -vv: frames outside any binary */
	/* The addresses code() is about to be asked for (see prepare). */
	const uint64_t *batch;
	size_t nbatch;
	const struct maps *batch_maps;
	unsigned long batch_id;
	struct slot *slots;
	struct debuginfod_lib *dbgi;   /* once DEBUGINFOD_URLS is used */
	debuginfod_client *debuginfod;
	char *debuginfod_how;          /* "from debuginfod (URL)" */
};

/*
 * libdebuginfod, loaded when DEBUGINFOD_URLS first asks for it: linked
 * in, it and the 36 libraries it needs (curl, gnutls, Kerberos...) cost
 * every run of dmprof 3.5 ms of dynamic linking, most runs for nothing.
 */
struct debuginfod_lib {
	void *handle;
	__typeof__(debuginfod_begin) *begin;
	__typeof__(debuginfod_find_debuginfo) *find_debuginfo;
	__typeof__(debuginfod_get_url) *get_url;
	__typeof__(debuginfod_end) *end;
};

#define DEBUGINFOD_SONAME "libdebuginfod.so.1"

/* The library, or NULL after saying (once) why not. */
static struct debuginfod_lib *load_debuginfod(struct bfdsym *bs)
{
	static const char *const names[] = {
		"debuginfod_begin", "debuginfod_find_debuginfo",
		"debuginfod_get_url", "debuginfod_end",
	};
	struct debuginfod_lib *l;
	void *fn[ARRAY_SIZE(names)];

	if (bs->dbgi)
		return bs->dbgi->handle ? bs->dbgi : NULL;
	l = bs->dbgi = xcalloc(1, sizeof(*l));
	if (!(l->handle = dlopen(DEBUGINFOD_SONAME, RTLD_NOW | RTLD_LOCAL))) {
		warning("DEBUGINFOD_URLS is set, but %s cannot be loaded (%s): "
			"no debug file is fetched", DEBUGINFOD_SONAME,
			dlerror());
		return NULL;
	}
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (!(fn[i] = dlsym(l->handle, names[i]))) {
			warning("DEBUGINFOD_URLS is set, but %s has no %s: no "
				"debug file is fetched", DEBUGINFOD_SONAME,
				names[i]);
			dlclose(l->handle);
			l->handle = NULL;
			return NULL;
		}
	/* (POSIX lets a data pointer become a function's.) */
	memcpy(&l->begin, &fn[0], sizeof(fn[0]));
	memcpy(&l->find_debuginfo, &fn[1], sizeof(fn[1]));
	memcpy(&l->get_url, &fn[2], sizeof(fn[2]));
	memcpy(&l->end, &fn[3], sizeof(fn[3]));
	return l;
}

/* -vv says why this many frames of a binary stayed unresolved, no more. */
#define MAX_WHY 20

static struct memo *memo_front(struct memo_map *m, const void *key)
{
	return &m->front[((uintptr_t)key * 0x9e3779b97f4a7c15ULL) >>
			 (64 - MEMO_FRONT_BITS)];
}

static const char *memo_get(struct memo_map *m, const void *key)
{
	struct memo *f, *e;

	if (m->last.key == key && key)
		return m->last.value;
	if (!m->front)
		return NULL;
	f = memo_front(m, key);
	if (f->key != key) {
		e = hashmap_get(&m->map, hash_u64((uintptr_t)key), NULL, NULL);
		if (!e)
			return NULL;
		*f = *e;
	}
	m->last = *f;
	return f->value;
}

static const char *memo_put(struct namer *nm, struct memo_map *m,
			    const void *key, const char *value)
{
	struct memo *e = nm->memos ? arena_alloc(nm->memos, sizeof(*e))
				   : strtab_alloc(nm->bs->base.strings,
						  sizeof(*e));

	e->key = key;
	e->value = value;
	hashmap_put(&m->map, hash_u64((uintptr_t)key), e);
	if (!m->front)
		m->front = xcalloc_table(MEMO_FRONT, sizeof(*m->front));
	*memo_front(m, key) = *e;
	return value;
}

static bool file_ok(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static bool open_debug(struct binary *b, const char *path)
{
	struct strbuf why = STRBUF_INIT;
	bool ok;

	if (!file_ok(path))
		return false;
	ok = elfimage_open_headers(&b->dbg, path, &why) == 0;
	if (!ok)
		elfimage_close(&b->dbg);
	sb_release(&why);
	return ok;
}

/* The debug file by build-id: DEBUG_DIR/.build-id/ab/cdef....debug */
static bool find_by_build_id(const struct sym_options *o, struct binary *b)
{
	struct strbuf p = STRBUF_INIT;
	bool ok;

	if (!b->img.build_id_len)
		return false;
	if (o->symfs)
		sb_addstr(&p, o->symfs);
	sb_addf(&p, "%s/.build-id/%02x/", DEBUG_DIR, b->img.build_id[0]);
	for (size_t i = 1; i < b->img.build_id_len; i++)
		sb_addf(&p, "%02x", b->img.build_id[i]);
	sb_addstr(&p, ".debug");
	ok = open_debug(b, p.buf);
	/* A debug file with a different build-id is not this binary's. */
	if (ok && (b->dbg.build_id_len != b->img.build_id_len ||
		   memcmp(b->dbg.build_id, b->img.build_id,
			  b->img.build_id_len))) {
		elfimage_close(&b->dbg);
		ok = false;
	}
	sb_release(&p);
	return ok;
}

/* The debug file by .gnu_debuglink: beside, in .debug/, in DEBUG_DIR. */
static bool find_by_debuglink(const struct sym_options *o, struct binary *b)
{
	const char *link = b->img.debuglink;
	const char *slash = strrchr(b->img.path, '/');
	char *dirname = slash ? xstrndup(b->img.path,
					 (size_t)(slash - b->img.path))
			      : xstrdup(".");
	struct strbuf p = STRBUF_INIT;
	bool ok = false;

	if (!link || strchr(link, '/'))
		goto out;
	for (int i = 0; i < 3 && !ok; i++) {
		sb_reset(&p);
		if (i == 0)
			sb_addf(&p, "%s/%s", dirname, link);
		else if (i == 1)
			sb_addf(&p, "%s/.debug/%s", dirname, link);
		else
			sb_addf(&p, "%s%s%s/%s", o->symfs ? o->symfs : "",
				DEBUG_DIR, dirname, link);
		if (!strcmp(p.buf, b->img.path) || !open_debug(b, p.buf))
			continue;
		/*
		 * The CRC says it belongs to this very binary.  (.gnu_debuglink's
		 * is zlib's CRC-32: libdeflate's, with PCLMULQDQ, reads a 110 MB
		 * file in 8 ms where a table-driven loop took 245.)
		 */
		if (libdeflate_crc32(0, b->dbg.elf.data, b->dbg.elf.size) ==
		    b->img.debuglink_crc)
			ok = true;
		else
			elfimage_close(&b->dbg);
	}
out:
	free(dirname);
	sb_release(&p);
	return ok;
}

/*
 * The debug file from a debuginfod server, by build-id: only when
 * DEBUGINFOD_URLS names servers.  Sets B->dbg_how.
 */
static bool find_by_debuginfod(struct bfdsym *bs, struct binary *b)
{
	const char *urls = getenv("DEBUGINFOD_URLS"), *url;
	struct debuginfod_lib *l;
	char *path = NULL;
	int fd;
	bool ok;

	if (!urls || !*urls || !b->img.build_id_len ||
	    !(l = load_debuginfod(bs)))
		return false;
	if (!bs->debuginfod && !(bs->debuginfod = l->begin()))
		return false;
	fd = l->find_debuginfo(bs->debuginfod, b->img.build_id,
			       (int)b->img.build_id_len, &path);
	if (fd < 0)
		return false;
	close(fd);
	ok = open_debug(b, path);
	if (ok && (b->dbg.build_id_len != b->img.build_id_len ||
		   memcmp(b->dbg.build_id, b->img.build_id,
			  b->img.build_id_len))) {
		elfimage_close(&b->dbg);
		ok = false;
	}
	if (ok) {
		url = l->get_url(bs->debuginfod);
		free(bs->debuginfod_how);
		bs->debuginfod_how = xstrdup(url ? url : urls);
		b->dbg_how = "from debuginfod";
	}
	free(path);
	return ok;
}

static char *identity(const struct elf_image *img)
{
	struct strbuf sb = STRBUF_INIT;
	struct stat st;

	if (img->build_id_len) {
		sb_addstr(&sb, "build-id:");
		for (size_t i = 0; i < img->build_id_len; i++)
			sb_addf(&sb, "%02x", img->build_id[i]);
	} else if (stat(img->path, &st) == 0) {
		char *real = realpath(img->path, NULL);

		sb_addf(&sb, "file:%s:%lld:%lld.%09ld:%llu",
			real ? real : img->path, (long long)st.st_size,
			(long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec,
			(unsigned long long)st.st_ino);
		free(real);
	} else {
		return NULL;
	}
	return sb_detach(&sb);
}

/* The server a debug file came from, if it came from one. */
static const char *via(const struct bfdsym *bs, const struct binary *b)
{
	return b->dbg_how && !strcmp(b->dbg_how, "from debuginfod")
		       ? bs->debuginfod_how
		       : NULL;
}

/* -v: where a binary's symbols, lines and cache come from. */
static void say_sources(struct bfdsym *bs, const struct binary *b,
			const char *host)
{
	struct strbuf sb = STRBUF_INIT;

	sb_addf(&sb, "%s", b->name);
	if (strcmp(host, b->name))
		sb_addf(&sb, " (read as %s)", host);
	if (!b->img.ncode)
		sb_addstr(&sb, ": no symbols");
	else if (b->syms_from_dbg)
		sb_addf(&sb, ": symbols from %s of %s, found %s%s%s%s",
			b->img.has_symtab ? ".symtab" : ".dynsym", b->dbg.path,
			b->dbg_how, via(bs, b) ? " (" : "",
			via(bs, b) ? via(bs, b) : "", via(bs, b) ? ")" : "");
	else
		sb_addf(&sb, ": symbols from %s%s",
			b->img.has_symtab ? ".symtab" : ".dynsym",
			b->img.has_symtab ? "" : " (stripped: exported "
						 "functions only)");
	if (!b->syms_from_dbg && b->has_dbg)
		sb_addf(&sb, "; debug file %s, found %s%s%s%s", b->dbg.path,
			b->dbg_how, via(bs, b) ? " (" : "",
			via(bs, b) ? via(bs, b) : "", via(bs, b) ? ")" : "");
	else if (!b->has_dbg && !b->img.has_debug_info)
		sb_addf(&sb, "; no debug file by build-id or .gnu_debuglink%s",
			getenv("DEBUGINFOD_URLS") && *getenv("DEBUGINFOD_URLS")
				? ", nor from debuginfod"
				: " (DEBUGINFOD_URLS is not set)");
	if (b->dwarf)
		sb_addf(&sb, "; lines and inlined frames from the DWARF of %s",
			b->dwarf);
	else
		sb_addstr(&sb, "; no DWARF, so no lines or inlined frames");
	if (b->cache)
		sb_addf(&sb, "; cache %s (%zu addresses)",
			symcache_path(b->cache), symcache_count(b->cache));
	else
		sb_addf(&sb, "; no symbol cache%s",
			bs->base.opts->no_cache ? " (--no-symbol-cache)" : "");
	note("%s", sb.buf);
	sb_release(&sb);
}

/* -vv: why the frame at ADDR stayed unresolved (B: its binary, if any). */
static void PRINTF(4, 5) say_why(struct bfdsym *bs, struct binary *b,
				 uint64_t addr, const char *fmt, ...)
{
	unsigned long *n = b ? &b->unresolved : &bs->unresolved;
	struct strbuf sb = STRBUF_INIT;
	va_list ap;

	if (bs->base.opts->verbose < 2 || ++*n > MAX_WHY)
		return;
	va_start(ap, fmt);
	sb_vaddf(&sb, fmt, ap);
	va_end(ap);
	note("0x%016" PRIx64 " stays unresolved: %s", addr, sb.buf);
	sb_release(&sb);
}

/*
 * B's symbol tables, read now: the debug file's replace the binary's when
 * they are richer.
 */
static void binary_symbols(struct binary *b)
{
	size_t before;

	if (b->syms_done)
		return;
	b->syms_done = true;
	elfimage_load_symbols(&b->img);
	if (!b->has_dbg)
		return;
	elfimage_load_symbols(&b->dbg);
	before = b->dbg.ncode;
	elfimage_take_symbols(&b->img, &b->dbg);
	b->syms_from_dbg = before && !b->dbg.ncode;
	if ((b->img.ncode > 0) != b->ok)
		BUG("%s: symbols counted %s, read %zu", b->name,
		    b->ok ? "some" : "none", b->img.ncode);
}

/* Is B stripped, with no debug file found on this machine? */
static bool lacks_debug_file(const struct binary *b)
{
	return (!b->img.has_symtab || !b->img.has_debug_info) && !b->has_dbg;
}

/*
 * B's files: the binary at HOST (false, WHY saying why, when its headers
 * cannot be read), and, when it is stripped, its debug file, which has
 * the full story: by build-id, by .gnu_debuglink, else (FETCH) from
 * debuginfod.
 */
static bool open_files(struct bfdsym *bs, struct binary *b, const char *host,
		       struct strbuf *why, bool fetch)
{
	if (elfimage_open_headers(&b->img, host, why) < 0) {
		elfimage_close(&b->img);
		return false;
	}
	if (!b->img.has_symtab || !b->img.has_debug_info) {
		if (find_by_build_id(bs->base.opts, b))
			b->dbg_how = "by build-id";
		else if (find_by_debuglink(bs->base.opts, b))
			b->dbg_how = "by .gnu_debuglink";
		else if (fetch)
			find_by_debuginfod(bs, b);
		b->has_dbg = b->dbg_how != NULL;
	}
	return true;
}

static bool has_code(const struct binary *b)
{
	return b->img.has_code || (b->has_dbg && b->dbg.has_code);
}

/* The file whose DWARF is read for B, or NULL. */
static const struct elf_image *dwarf_image(const struct binary *b)
{
	return b->has_dbg && b->dbg.has_debug_info ? &b->dbg
	       : b->img.has_debug_info		   ? &b->img
						   : NULL;
}

/* What the symbol cache of B is keyed by (a new string), or NULL. */
static char *cache_identity(const struct binary *b)
{
	struct strbuf full = STRBUF_INIT;
	char *id = identity(&b->img), *dbg;

	if (!id)
		return NULL;
	dbg = b->has_dbg ? identity(&b->dbg) : NULL;
	/* What the results depend on: the binary and its debug file. */
	sb_addf(&full, "%s debug=%s", id, dbg ? dbg : "none");
	free(dbg);
	free(id);
	return sb_detach(&full);
}

/* The binary opened ahead at HOST, not taken yet, or NULL. */
static struct readied *readied_at(struct bfdsym *bs, const char *host)
{
	for (size_t i = 0; i < bs->nready; i++)
		if (!bs->ready[i]->taken && !strcmp(bs->ready[i]->host, host))
			return bs->ready[i];
	return NULL;
}

/*
 * The files of B, opened ahead as R (taken): what open_files would have
 * done, its images in place (a DWARF reader begun on them points to
 * them).
 */
static bool take_readied(struct bfdsym *bs, struct binary *b,
			 struct readied *r, struct strbuf *why)
{
	r->taken = true;
	if (r->failed) {
		sb_add(why, r->why.buf, r->why.len);
		return false;
	}
	if (r->fetch) {
		find_by_debuginfod(bs, b);
		b->has_dbg = b->dbg_how != NULL;
	}
	return true;
}

static const char *show_cached(void *nm, const char *full);

static void open_binary(struct bfdsym *bs, struct binary *b,
			struct readied *r)
{
	struct strbuf why = STRBUF_INIT;
	char *host = sym_host_path(bs->base.opts, b->name);
	char *full;

	b->opened = true;
	if (r ? !take_readied(bs, b, r, &why)
	      : !open_files(bs, b, host, &why, true)) {
		warning("cannot read '%s'%s%s: %s; its frames stay "
			"unsymbolized",
			host, strcmp(host, b->name) ? " for " : "",
			strcmp(host, b->name) ? b->name : "", why.buf);
		goto out;
	}
	/* (Its symbols are read when needed: a warm run may never.) */
	b->ok = has_code(b);
	if (!b->ok)
		warning("'%s' has no symbols (stripped, and no debug file "
			"found%s); its frames stay unsymbolized", host,
			getenv("DEBUGINFOD_URLS") && *getenv("DEBUGINFOD_URLS")
				? ", not even by debuginfod"
				: "");
	b->dwarf = dwarf_image(b) ? dwarf_image(b)->path : NULL;
	if (!bs->base.opts->no_cache && (full = cache_identity(b))) {
		b->cache = symcache_open(full, bs->base.strings);
		if (!bs->base.opts->full_names)
			symcache_show_with(b->cache, show_cached, &bs->main);
		free(full);
	}
	if (bs->base.opts->verbose) {
		binary_symbols(b);
		say_sources(bs, b, host);
	}
out:
	free(host);
	sb_release(&why);
}

static struct binary *binary_for(struct bfdsym *bs, const char *name)
{
	struct readied *r = NULL;
	uint64_t h;
	struct binary *b;

	/* (Names are interned: one binary's frames come in runs.) */
	if (bs->last && bs->last->name == name && bs->last->opened)
		return bs->last;
	h = hash_u64((uintptr_t)name);
	b = hashmap_get(&bs->bins, h, NULL, NULL);
	if (!b) {
		char *host = bs->nready ? sym_host_path(bs->base.opts, name)
					: NULL;

		r = host ? readied_at(bs, host) : NULL;
		free(host);
		/* (Opened ahead: the binary itself is taken.) */
		b = r ? r->b : xcalloc(1, sizeof(*b));
		b->name = name;
		hashmap_put(&bs->bins, h, b);
		bs->v = xreallocarray(bs->v, bs->n + 1, sizeof(*bs->v));
		bs->v[bs->n++] = b;
	}
	if (!b->opened)
		open_binary(bs, b, r);
	bs->last = b;
	return b;
}

/* SYM's name demangled in full, without its version suffix, interned
 * (see demangled). */
static const char *demangle(struct bfdsym *bs, const char *sym)
{
	const char *s, *at;
	char *plain = NULL, *d;

	at = strchr(sym, '@');
	/* "dlopen@@GLIBC_2.34": the version is not part of the name. */
	if (at && at != sym)
		plain = xstrndup(sym, (size_t)(at - sym));
	d = bfd_demangle(NULL, plain ? plain : sym, DMGL_PARAMS | DMGL_ANSI);
	s = strtab_intern_str(bs->base.strings,
			      d ? d : plain ? plain : sym);
	free(d);
	free(plain);
	return s;
}

/* The same, once for each SYM (a DWARF name: see struct binary's names
 * for the symbols'). */
static const char *demangled(struct namer *nm, const char *sym)
{
	const char *s = memo_get(&nm->demangled, sym);

	/* Keyed by the symbol's own pointer, stable while the image is. */
	return s ? s
		 : memo_put(nm, &nm->demangled, sym, demangle(nm->bs, sym));
}

static const char *shorten(struct namer *nm, const char *full);

/* The name a frame shows: in full, or the original's short form. */
static const char *shown(struct namer *nm, const char *full)
{
	const char *s;

	if (!full || nm->bs->base.opts->full_names)
		return full;
	if ((s = memo_get(&nm->shortened, full)))
		return s;
	s = shorten(nm, full);
	return memo_put(nm, &nm->shortened, full, s);
}

static const char *shorten(struct namer *nm, const char *full)
{
	struct strtab *t = nm->bs->base.strings;

	sb_reset(&nm->sb);
	/* "?? after f+0x12" keeps its prefix; the name is shortened. */
	if (starts_with(full, "?? after ")) {
		struct strbuf tmp = STRBUF_INIT;
		const char *plus = strrchr(full, '+');
		size_t n = plus ? (size_t)(plus - full - 9) : strlen(full) - 9;

		symbol_short_name(full + 9, n, &tmp);
		sb_addf(&nm->sb, "?? after %s%s", tmp.buf, plus ? plus : "");
		sb_release(&tmp);
		return strtab_intern(t, nm->sb.buf, nm->sb.len);
	}
	symbol_short_name(full, strlen(full), &nm->sb);
	return strtab_intern(t, nm->sb.buf, nm->sb.len);
}

/* shown(), as the symbol cache asks it (symcache_show_with): NM, the
 * namer of the thread that asks. */
static const char *show_cached(void *nm, const char *full)
{
	return shown(nm, full);
}

static bool open_dwarf(struct binary *b)
{
	if (b->bfd_tried)
		return b->abfd != NULL;
	b->bfd_tried = true;
	if (!b->dwarf)
		return false;
	b->abfd = bfd_openr(b->dwarf, NULL);
	if (!b->abfd)
		return false;
	/* Debian compresses the DWARF of its debug files (zlib). */
	b->abfd->flags |= BFD_DECOMPRESS;
	if (!bfd_check_format(b->abfd, bfd_object)) {
		bfd_close(b->abfd);
		b->abfd = NULL;
		return false;
	}
	/* The DWARF reader wants the symbols, as addr2line gives them. */
	if (bfd_get_file_flags(b->abfd) & HAS_SYMS) {
		long size = bfd_get_symtab_upper_bound(b->abfd);

		if (size > 0) {
			b->bfd_syms = xmalloc((size_t)size);
			if (bfd_canonicalize_symtab(b->abfd, b->bfd_syms) < 0) {
				free(b->bfd_syms);
				b->bfd_syms = NULL;
			}
		}
	}
	return true;
}

/*
 * libbfd keeps state of its own across its files (the cache of open
 * files, the last error): one thread at a time asks it, when a batch's
 * binaries are named on two (bfd_code_batch).
 */
static pthread_mutex_t bfd_lock = PTHREAD_MUTEX_INITIALIZER;

/* libbfd's answer for ELF address A, one frame after another. */
static int bfd_answer_locked(struct binary *b, uint64_t a,
			     struct dwarf_frame *chain, int max)
{
	const char *file = NULL, *func = NULL;
	unsigned int line = 0;
	asection *sec;
	int n = 0;

	if (b->dw_refused || !open_dwarf(b))
		return 0;
	for (sec = b->abfd->sections; sec; sec = sec->next)
		if ((sec->flags & SEC_ALLOC) && a >= sec->vma &&
		    a - sec->vma < sec->size)
			break;
	if (!sec || !bfd_find_nearest_line(b->abfd, sec, b->bfd_syms,
					   a - sec->vma, &file, &func, &line) ||
	    !file || !line)
		return 0; /* no line information there */
	do {
		chain[n++] = (struct dwarf_frame){ func, file, line };
	} while (n < max &&
		 bfd_find_inliner_info(b->abfd, &file, &func, &line));
	return n;
}

static int bfd_answer(struct binary *b, uint64_t a, struct dwarf_frame *chain,
		      int max)
{
	int n;

	pthread_mutex_lock(&bfd_lock);
	n = bfd_answer_locked(b, a, chain, max);
	pthread_mutex_unlock(&bfd_lock);
	return n;
}

/*
 * Where each of B's addresses in the batch, from position FROM on (or,
 * with AMONG, at the NMONG positions there, in order: a batch's group,
 * not found again in every binary's walk of the whole batch), lies in B
 * and in its symbol cache: the cache is walked once beside them.
 */
static void find_slots_among(struct bfdsym *bs, struct binary *b,
			     const size_t *among, size_t nmong, size_t from)
{
	uint64_t *elf = NULL;
	uint32_t *where;
	size_t *at = NULL;
	size_t n = 0, alloc = 0, at_alloc = 0;
	size_t last = among ? nmong : bs->nbatch - from;

	b->slots_batch = bs->batch_id;
	/* (B's addresses only, grown as found: a batch of a million frames
	 * in eight binaries would hold 16 MB more for the first.  Their
	 * places are kept: the batch was walked twice more for them, a
	 * seventh of a warm symbolization's naming.) */
	for (size_t j = 0; j < last; j++) {
		size_t i = among ? among[j] : from + j;
		struct slot *sl = &bs->slots[i];

		if (!sl->v || !vma_executable(sl->v) || sl->v->name != b->name ||
		    !elf_address(bs->batch[i], sl->v, b->img.loads,
				 b->img.nloads, &sl->elf))
			continue;
		sl->placed = true;
		GROW(elf, n + 1, alloc);
		GROW(at, n + 1, at_alloc);
		elf[n] = sl->elf;
		at[n++] = i;
	}
	where = xcalloc(n + 1, sizeof(*where));
	symcache_find_many(b->cache, elf, n, where);
	for (size_t k = 0; k < n; k++)
		bs->slots[at[k]].where = where[k];
	FREE_ALL(elf, where, b->at);
	b->at = at;
	b->nat = n;
}

static void find_slots(struct bfdsym *bs, struct binary *b, size_t from)
{
	find_slots_among(bs, b, NULL, 0, from);
}

/* The first of B's places in the batch (see find_slots) at FROM or
 * after. */
static size_t places_from(struct bfdsym *bs, struct binary *b, size_t from)
{
	if (b->slots_batch != bs->batch_id)
		find_slots(bs, b, from);
	return PARTITION_POINT(b->nat, k, b->at[k] < from);
}

/* SL's symbol is SYM (PAST its end or not), of B's. */
static void keep_symbol(struct binary *b, struct slot *sl,
			const struct elf_sym *sym, bool past)
{
	sl->past = past;
	/* (Past 2^29 functions: found again each time.) */
	if (sym && sym - b->img.code >= (1 << 29) - 1)
		return;
	sl->sym = sym ? (uint32_t)(sym - b->img.code) + 1 : 0;
	sl->sym_found = true;
}

/* "?? after NAME+0xOFF", interned: an address past NAME's end. */
static const char *after(struct namer *nm, const char *name, uint64_t off)
{
	sb_reset(&nm->sb);
	sb_addf(&nm->sb, "?? after %s+0x%" PRIx64, name, off);
	return strtab_intern(nm->bs->base.strings, nm->sb.buf, nm->sb.len);
}

/* SYM's names (see struct binary), a symbol of B's code. */
static struct symbol_names *symbol_names(struct binary *b,
					 const struct elf_sym *sym)
{
	size_t i = (size_t)(sym - b->img.code);

	if (i >= b->img.ncode)
		BUG("a symbol outside its binary's table");
	if (!b->names)
		b->names = xcalloc_table(b->img.ncode, sizeof(*b->names));
	return &b->names[i];
}

/* The ELF symbol of the call before return address SL->elf. */
static const struct elf_sym *slot_symbol(struct binary *b, struct slot *sl)
{
	const struct elf_sym *sym;
	bool past = false;

	if (sl->sym_found)
		return sl->sym ? &b->img.code[sl->sym - 1] : NULL;
	binary_symbols(b);
	sym = elfimage_find(b->img.code, b->img.ncode, sl->elf - 1, &past);
	keep_symbol(b, sl, sym, past);
	return sym;
}

/*
 * The ELF symbols of B's slots in the batch from FROM on, found at once:
 * their calls' addresses sorted, then walked beside B's sorted symbols.
 * (A binary search each was a tenth of a cold run: 82,000 addresses in
 * libc's functions, in no order.)  Too few, or spread over 4 GB: left
 * to slot_symbol, one by one.
 */
static void find_symbols(struct bfdsym *bs, struct binary *b, size_t from)
{
	const struct elf_sym *code;
	size_t n = 0, lo = 0, first = places_from(bs, b, from);
	uint64_t *a = xmalloc(st_mult(b->nat - first + 1, sizeof(*a)));
	size_t *place = xmalloc(st_mult(b->nat - first + 1, sizeof(*place)));
	uint64_t *sorted, min;

	for (size_t j = first; j < b->nat; j++) {
		const struct slot *sl = &bs->slots[b->at[j]];

		if (sl->sym_found)
			continue;
		a[n] = sl->elf - 1;
		place[n++] = b->at[j];
	}
	sorted = sort_batch(a, n, &min);
	if (sorted) {
		binary_symbols(b);
		code = b->img.code;
	}
	for (size_t k = 0; sorted && k < n; k++) {
		uint64_t addr = (sorted[k] >> 32) + min;
		const struct elf_sym *sym;

		/* (elfimage_find's partition point, found by walking.) */
		while (lo < b->img.ncode && code[lo].addr <= addr)
			lo++;
		sym = lo ? &code[lo - 1] : NULL;
		keep_symbol(b, &bs->slots[place[(uint32_t)sorted[k]]], sym,
			    sym && sym->size && addr - sym->addr >= sym->size);
	}
	FREE_ALL(a, place, sorted);
}

/*
 * The addresses of B that code() will look up in DWARF from the batch's
 * current position on, as code() will come to them: a cache hit, or an
 * address past its symbol, is not looked up.
 */
static size_t batch_queries(struct namer *nm, struct binary *b,
			    uint64_t **out)
{
	struct bfdsym *bs = nm->bs;
	const struct sym_options *o = bs->base.opts;
	bool need_dwarf = o->want_source || !o->no_inline;
	struct hashmap seen = HASHMAP_INIT;
	size_t n = 0, j0;

	/* (bfd_code has counted the address being looked up.) */
	find_symbols(bs, b, nm->next - 1);
	j0 = places_from(bs, b, nm->next - 1);
	/* (One for each of B's places left, not each of the batch's.) */
	*out = xcalloc(b->nat - j0 + 1, sizeof(**out));
	hashmap_init(&seen, 64);
	for (size_t j = j0; j < b->nat; j++) {
		const struct symcache_entry *hit;
		const struct elf_sym *sym;
		struct slot *sl = &bs->slots[b->at[j]];
		uint64_t elf = sl->elf;

		hit = symcache_get_at(b->cache, elf, sl->where);
		if (hit && (!need_dwarf || (hit->flags & SC_DWARF)))
			continue;
		/* Looked up once, then a cache hit when there is a cache. */
		if (b->cache && hashmap_get(&seen, hash_u64(elf), NULL, NULL))
			continue;
		if (b->cache)
			hashmap_put(&seen, hash_u64(elf), (void *)1);
		sym = slot_symbol(b, sl);
		if (need_dwarf && (!sym || !sl->past))
			(*out)[n++] = elf - 1;
	}
	hashmap_free(&seen);
	return n;
}

/*
 * Make B's answers for the batch ready (looked up when B's first address
 * in it comes), or return -1 when libbfd must answer.
 */
static int own_answers(struct namer *nm, struct binary *b)
{
	struct bfdsym *bs = nm->bs;
	const char *why = NULL;
	uint64_t *q = NULL;
	size_t n = 0;
	bool found = false;

	if (b->dw_off)
		return -1;
	if (!b->dw_tried) {
		struct dwarf *d;

		b->dw_tried = true;
		/* For comparing the two readers (tests/real/dwarf.sh). */
		if (getenv("DMPROF_DWARF") && !strcmp(getenv("DMPROF_DWARF"),
						      "libbfd")) {
			b->dw_off = true;
			return -1;
		}
		d = b->dw_begun ? b->dw_begun
				: dwarf_begin(b->has_dbg && b->dbg.has_debug_info
						      ? &b->dbg
						      : &b->img);
		b->dw_begun = NULL;
		/* (The batch's questions found while .debug_info inflates
		 * on the other core: it took longer than this core's part.) */
		if (bs->batch && nm->next) {
			n = batch_queries(nm, b, &q);
			found = true;
		}
		b->dw = dwarf_finish(d, &why);
		if (!b->dw) {
			free(q);
			b->dw_off = true;
			if (bs->base.opts->verbose > 1)
				note("%s: its DWARF is read by libbfd (%s)",
				     b->dwarf, why ? why : "?");
			return -1;
		}
	}
	if (b->batch != bs->batch_id || b->next_answer == b->nanswers) {
		/* A new batch, or code() called outside one: from here on. */
		if (bs->batch && nm->next) {
			if (!found)
				n = batch_queries(nm, b, &q);
		} else {
			/* (Outside a batch: libbfd's pace, one at a time.) */
			return -1;
		}
		/* (The last batch's answers, all made, before they go.) */
		dwarf_lookup_wait(b->dw);
		free(b->answers);
		b->answers = NULL;
		b->nanswers = b->next_answer = 0;
		b->batch = bs->batch_id;
		if (n) {
			int rc;

			b->answers = xcalloc_table(n, sizeof(*b->answers));
			rc = dwarf_lookup_start(b->dw, q, n, b->answers, &why);
			if (rc == -2) {
				free(q);
				goto refused;
			}
			if (rc < 0) {
				free(q);
				goto off;
			}
			b->nanswers = n;
		}
		free(q);
	}
	return 0;
off:
	b->dw_off = true;
	if (bs->base.opts->verbose > 1)
		note("%s: its DWARF is read by libbfd (%s)", b->dwarf, why);
	return -1;
refused:
	b->dw_off = b->dw_refused = true;
	warning("%s: its DWARF is not read (%s: built to make a reader work "
		"without end); its frames have no source lines nor inlined "
		"functions", b->dwarf, why);
	return -1;
}

/* A file name of dmprof's DWARF reader (which keeps it), interned. */
static const char *dwarf_file(struct namer *nm, const char *file)
{
	const char *s = memo_get(&nm->files, file);

	return s ? s : memo_put(nm, &nm->files, file,
				strtab_intern_str(nm->bs->base.strings, file));
}

/* DWARF's view of ELF address A: file, line and the inline chain. */
static void dwarf_lookup_at(struct namer *nm, struct binary *b, uint64_t a,
			    struct symcache_entry *e)
{
	struct bfdsym *bs = nm->bs;
	struct dwarf_frame bfdchain[64];
	const struct dwarf_frame *chain = bfdchain;
	struct inline_frame inl[64];
	bool own = false;
	int n = 0;

	e->flags |= SC_DWARF;
	if (own_answers(nm, b) == 0 && b->next_answer < b->nanswers &&
	    b->answers[b->next_answer].addr == a) {
		/* (Made on another core meanwhile: see dwarf_lookup_start.) */
		const struct dwarf_answer *ans =
			dwarf_answer(b->dw, b->next_answer++);

		chain = ans->frames;
		n = (int)ans->nframes;
		own = true;
	} else {
		if (b->dw && !b->dw_off) {
			/* Out of step with the batch: libbfd from now on. */
			b->dw_off = true;
			if (bs->base.opts->verbose > 1)
				note("%s: its DWARF is read by libbfd (the "
				     "batch was out of step)", b->dwarf);
		}
		n = bfd_answer(b, a, bfdchain, (int)ARRAY_SIZE(bfdchain));
	}
	if (!n)
		return;
	for (int k = 0; k < n; k++) {
		inl[k].func = chain[k].func && *chain[k].func
				      ? demangled(nm, chain[k].func)
				      : NULL;
		inl[k].file = !chain[k].file || !*chain[k].file ? NULL
			      : own ? dwarf_file(nm, chain[k].file)
				    : strtab_intern_str(bs->base.strings,
							chain[k].file);
		inl[k].line = chain[k].line;
		inl[k].func_len = 0;
	}
	/* The last is the function itself; the others were inlined into it. */
	e->file = inl[n - 1].file;
	e->line = inl[n - 1].line;
	if (!e->func && inl[n - 1].func)
		e->func = inl[n - 1].func;
	if (n > 1) {
		/* In the run's arena: they live as long as the frames. */
		e->ninline = (uint16_t)(n - 1);
		e->inl = strtab_alloc(bs->base.strings,
				      (size_t)(n - 1) * sizeof(*inl));
		memcpy(e->inl, inl, (size_t)(n - 1) * sizeof(*inl));
	}
}

/* The batch of addresses code() is about to be asked for. */
static void bfd_prepare(struct symbolizer *s, const struct maps *maps,
			const uint64_t *addrs, size_t n)
{
	struct bfdsym *bs = (struct bfdsym *)s;

	bs->batch = addrs;
	bs->nbatch = n;
	bs->main.next = 0;
	bs->batch_maps = maps;
	bs->batch_id++;
	free(bs->slots);
	bs->slots = n ? xcalloc_table(n, sizeof(*bs->slots)) : NULL;
	for (size_t i = 0; i < n; i++)
		bs->slots[i].v = maps ? maps_find(maps, addrs[i]) : NULL;
}

/* Is V a mapping of a binary's code (whose frames a binary names)? */
static bool binary_code(const struct vma *v)
{
	return v && vma_executable(v) && v->name[0] == '/';
}

/*
 * The binary that the frame at ADDR (in V, if any) is in, opened; NULL
 * when it has none to name it (said with -vv).
 */
static struct binary *binary_of(struct bfdsym *bs, const struct maps *maps,
				const struct vma *v, uint64_t addr)
{
	struct binary *b;

	if (!v) {
		say_why(bs, NULL, addr, "%s", maps ? "in no mapping of the maps"
						   : "no maps to place it");
		return NULL;
	}
	if (!binary_code(v)) {
		say_why(bs, NULL, addr, "in %s mapping %s %s",
			!vma_executable(v) ? "a non-executable" : "an",
			v->perms, *v->name ? v->name : "[anonymous]");
		return NULL;
	}
	b = binary_for(bs, v->name);
	if (!b->ok) {
		say_why(bs, b, addr, "%s %s (said above)", v->name,
			b->img.elf.data ? "has no symbols" : "could not be read");
		return NULL;
	}
	return b;
}

/*
 * The frame at ADDR, in V of binary B, named into OUT by NM (SL: its
 * slot in the batch, NULL outside one).  What it changes is NM's and
 * B's, and the strings' (interned, locked when shared): a batch's
 * binaries may be named on two threads, each by its own.
 */
static void code_in(struct namer *nm, struct binary *b, const struct vma *v,
		    struct slot *sl, uint64_t addr, struct sym_info *out)
{
	struct bfdsym *bs = nm->bs;
	const struct symcache_entry *hit, *ep = NULL;
	struct symcache_entry e;
	const struct elf_sym *sym;
	const struct sym_options *o = bs->base.opts;
	bool past, need_dwarf = o->want_source || !o->no_inline;
	const char *shown_func = NULL;
	uint64_t elf;

	if (sl && b->slots_batch != bs->batch_id)
		find_slots(bs, b, (size_t)(sl - bs->slots));
	if (sl ? !sl->placed
	       : !elf_address(addr, v, b->img.loads, b->img.nloads, &elf)) {
		say_why(bs, b, addr, "outside the loaded segments of %s (the "
				     "file is not the one the process mapped?)",
			v->name);
		return;
	}
	if (sl)
		elf = sl->elf;
	hit = sl ? symcache_get_at(b->cache, elf, sl->where)
		 : symcache_get(b->cache, elf);
	/* (A hit is read where it is: a copy of it, just written, waited
	 * for the stores to land.) */
	if (hit && (!need_dwarf || (hit->flags & SC_DWARF))) {
		ep = hit;
		b->cached++;
	} else {
		b->looked_up++;
		memset(&e, 0, sizeof(e));
		e.addr = elf;
		/* A return address: the call is the instruction before. */
		if (sl) {
			sym = slot_symbol(b, sl);
			past = sl->past;
		} else {
			binary_symbols(b);
			sym = elfimage_find(b->img.code, b->img.ncode, elf - 1,
				       &past);
		}
		if (sym) {
			struct symbol_names *names = symbol_names(b, sym);

			/* (Not in the memos: each symbol's are here.) */
			if (!names->full)
				names->full = demangle(bs, sym->name);
			if (!o->full_names && !names->shown)
				names->shown = shorten(nm, names->full);
			if (!past) {
				e.func = names->full;
				shown_func = o->full_names ? NULL
							   : names->shown;
			} else {
				/* (Each its own: "?? after", the name in
				 * full and as shown, the offset.) */
				uint64_t off = elf - 1 - sym->addr;

				e.func = after(nm, names->full, off);
				if (!o->full_names)
					shown_func = after(nm, names->shown,
							   off);
			}
		}
		if (need_dwarf && (!sym || !past))
			dwarf_lookup_at(nm, b, elf - 1, &e);
		symcache_put(b->cache, &e);
		ep = &e;
	}
	if (o->verbose > 1 && (!ep->func || starts_with(ep->func, "?? after "))) {
		/* (Whether it has a .symtab is known once its symbols are
		 * read, which a warm run may not have needed.) */
		binary_symbols(b);
		say_why(bs, b, addr, "%s %s%s",
			ep->func ? "past the end of the nearest symbol of"
			       : "below every symbol of",
			v->name,
			b->img.has_symtab ? ""
					  : " (stripped: only exported "
					    "functions have symbols; a debug "
					    "file would have the others)");
	}
	out->func = ep->shown ? ep->shown_func
		    : shown_func ? shown_func
				 : shown(nm, ep->func);
	out->file = ep->file;
	out->line = ep->line;
	if (ep->ninline && !o->no_inline && ep->shown) {
		size_t size = ep->ninline * sizeof(*out->inl);

		out->inl = memcpy(strtab_alloc(bs->base.strings, size),
				  ep->shown_inl, size);
		out->ninline = ep->ninline;
	} else if (ep->ninline && !o->no_inline) {
		struct inline_frame *inl =
			strtab_alloc(bs->base.strings,
				     ep->ninline * sizeof(*inl));

		for (int k = 0; k < ep->ninline; k++) {
			inl[k] = ep->inl[k];
			inl[k].func = shown(nm, ep->inl[k].func);
		}
		out->inl = inl;
		out->ninline = ep->ninline;
	}
}

static void namer_release(struct namer *nm)
{
	hashmap_free(&nm->demangled.map);
	hashmap_free(&nm->shortened.map);
	hashmap_free(&nm->files.map);
	FREE_ALL(nm->demangled.front, nm->shortened.front, nm->files.front);
	sb_release(&nm->sb);
	arena_free(&nm->own);
}

static void bfd_code(struct symbolizer *s, const struct maps *maps,
		     uint64_t addr, struct sym_info *out)
{
	struct bfdsym *bs = (struct bfdsym *)s;
	struct slot *sl = NULL;
	const struct vma *v;
	struct binary *b;

	/* Where the batch is: the next address after this one. */
	if (bs->batch) {
		if (bs->main.next < bs->nbatch &&
		    bs->batch[bs->main.next] == addr && maps == bs->batch_maps)
			sl = &bs->slots[bs->main.next++];
		else
			bs->batch = NULL; /* out of step: no more batching */
	}
	v = sl ? sl->v : maps ? maps_find(maps, addr) : NULL;
	if ((b = binary_of(bs, maps, v, addr)))
		code_in(&bs->main, b, v, sl, addr, out);
}

/*
 * A batch named on two cores: its binaries shared out, the biggest first,
 * each named whole by one thread in its addresses' order (its symbol
 * cache, DWARF answers and symbol names are its own), each thread with a
 * namer of its own, the strings locked.  What is said is kept with the
 * batch position it came at (a binary is opened, before the threads
 * start, at its first address) and said after, in the order one thread
 * would have said it.  Named one by one, the 117,532 frames of gperf-1m
 * of make bench, in three binaries, took 120 ms on one core with the
 * other mostly idle.
 */
#define TWO_MIN 2000 /* addresses, in the second-biggest binary at least */

/* The addresses of one binary's name in the batch. */
struct name_group {
	const char *name;
	struct binary *b;
	size_t *pos, n, alloc;
};

struct said_at {
	size_t pos;      /* the batch position it came at */
	size_t who;      /* 0: before the threads; I + 1: thread I's */
	size_t from, to; /* in WHO's records */
};

struct batch_two {
	struct bfdsym *bs;
	void (*take)(void *arg, size_t i, const struct sym_info *info);
	void *arg;
	struct name_group *g;
	size_t ng;
	size_t *order;          /* the groups to name, biggest first */
	size_t norder;
	_Atomic size_t next;    /* in ORDER, the next group taken */
	struct strbuf said[3];  /* records (report_capture) */
	struct said_at *at[3];
	size_t nat[3], at_alloc[3];
};

/* What WHO said since BEFORE came at batch position POS. */
static void said_mark(struct batch_two *bt, size_t who, size_t pos,
		      size_t before)
{
	if (bt->said[who].len == before)
		return;
	GROW(bt->at[who], bt->nat[who] + 1, bt->at_alloc[who]);
	bt->at[who][bt->nat[who]++] =
		(struct said_at){ pos, who, before, bt->said[who].len };
}

static void batch_share(void *ctx, size_t i, bool here)
{
	struct batch_two *bt = ctx;
	struct bfdsym *bs = bt->bs;
	bool shows = !bs->base.opts->full_names;
	struct strbuf *was = here ? report_captured() : NULL;
	struct namer nm = { .bs = bs };
	size_t k;

	nm.memos = &nm.own;
	report_capture(&bt->said[i + 1]);
	while ((k = atomic_fetch_add(&bt->next, 1)) < bt->norder) {
		const struct name_group *g = &bt->g[bt->order[k]];

		if (g->b->cache && shows)
			symcache_show_with(g->b->cache, show_cached, &nm);
		find_slots_among(bs, g->b, g->pos, g->n, 0);
		for (size_t j = 0; j < g->n; j++) {
			size_t p = g->pos[j], before = bt->said[i + 1].len;
			struct sym_info info = { NULL, NULL, 0, 0, NULL };

			nm.next = p + 1;
			code_in(&nm, g->b, bs->slots[p].v, &bs->slots[p],
				bs->batch[p], &info);
			bt->take(bt->arg, p, &info);
			said_mark(bt, i + 1, p, before);
		}
		if (g->b->cache && shows)
			symcache_show_with(g->b->cache, show_cached, &bs->main);
	}
	report_capture(was);
	namer_release(&nm);
}

static int said_cmp(const void *a, const void *b)
{
	const struct said_at *x = a, *y = b;

	if (x->pos != y->pos)
		return x->pos < y->pos ? -1 : 1;
	return x->who < y->who ? -1 : x->who > y->who;
}

/* What the batch's naming said, in its positions' order. */
static void said_replay(struct batch_two *bt)
{
	struct said_at *all = NULL;
	size_t n = 0, alloc = 0;

	for (size_t w = 0; w < 3; w++)
		for (size_t k = 0; k < bt->nat[w]; k++) {
			GROW(all, n + 1, alloc);
			all[n++] = bt->at[w][k];
		}
	/* (Of one position: the opening first, then one thread's.) */
	if (n)
		qsort(all, n, sizeof(*all), said_cmp);
	for (size_t k = 0; k < n; k++) {
		struct strbuf part = STRBUF_INIT;

		sb_add(&part, bt->said[all[k].who].buf + all[k].from,
		       all[k].to - all[k].from);
		report_replay(&part);
		sb_release(&part);
	}
	free(all);
}

/* The batch's executable addresses by binary name, in BT's groups (in
 * the order of their first addresses). */
static void group_names(struct batch_two *bt)
{
	struct bfdsym *bs = bt->bs;
	struct hashmap by_name = HASHMAP_INIT;
	size_t alloc = 0, last = SIZE_MAX;

	hashmap_init(&by_name, 64);
	for (size_t i = 0; i < bs->nbatch; i++) {
		const struct vma *v = bs->slots[i].v;
		struct name_group *g;

		if (!binary_code(v))
			continue;
		/* (A binary's addresses come in runs.) */
		if (last == SIZE_MAX || bt->g[last].name != v->name) {
			uint64_t h = hash_u64((uintptr_t)v->name);
			uintptr_t k = (uintptr_t)hashmap_get(&by_name, h, NULL,
							     NULL);

			if (!k) {
				GROW(bt->g, bt->ng + 1, alloc);
				memset(&bt->g[bt->ng], 0, sizeof(*bt->g));
				bt->g[bt->ng].name = v->name;
				k = ++bt->ng;
				hashmap_put(&by_name, h, (void *)k);
			}
			last = k - 1;
		}
		g = &bt->g[last];
		GROW(g->pos, g->n + 1, g->alloc);
		g->pos[g->n++] = i;
	}
	hashmap_free(&by_name);
}

static int bigger_first(const void *a, const void *b, void *arg)
{
	const struct batch_two *bt = arg;
	size_t x = bt->g[*(const size_t *)a].n, y = bt->g[*(const size_t *)b].n;

	return x > y ? -1 : x < y;
}

static void batch_free(struct batch_two *bt)
{
	for (size_t k = 0; k < bt->ng; k++)
		free(bt->g[k].pos);
	free(bt->g);
	free(bt->order);
	for (size_t w = 0; w < 3; w++) {
		sb_release(&bt->said[w]);
		free(bt->at[w]);
	}
}

static bool bfd_code_batch(struct symbolizer *s, const struct maps *maps,
			   void (*take)(void *arg, size_t i,
					const struct sym_info *info),
			   void *arg)
{
	struct bfdsym *bs = (struct bfdsym *)s;
	struct batch_two bt = { .bs = bs, .take = take, .arg = arg };
	struct strbuf *was;
	size_t first = 0, second = 0;
	bool shared;

	if (!bs->batch || maps != bs->batch_maps || bs->main.next ||
	    bs->base.opts->verbose > 1 || threads_wanted() < 2 ||
	    bs->nbatch < 2 * TWO_MIN)
		return false;
	group_names(&bt);
	for (size_t k = 0; k < bt.ng; k++) {
		if (bt.g[k].n > first) {
			second = first;
			first = bt.g[k].n;
		} else if (bt.g[k].n > second) {
			second = bt.g[k].n;
		}
	}
	if (second < TWO_MIN) {
		batch_free(&bt);
		return false;
	}
	/* Opened as one by one would, each at its first address. */
	was = report_captured();
	report_capture(&bt.said[0]);
	bt.order = xcalloc(bt.ng, sizeof(*bt.order));
	for (size_t k = 0; k < bt.ng; k++) {
		size_t before = bt.said[0].len;

		bt.g[k].b = binary_for(bs, bt.g[k].name);
		said_mark(&bt, 0, bt.g[k].pos[0], before);
		if (bt.g[k].b->ok)
			bt.order[bt.norder++] = k;
	}
	report_capture(was);
	qsort_r(bt.order, bt.norder, sizeof(*bt.order), bigger_first, &bt);
	atomic_init(&bt.next, 0);
	shared = bs->base.strings->shared;
	strtab_share(bs->base.strings, true);
	pool_run(2, batch_share, &bt);
	strtab_share(bs->base.strings, shared);
	said_replay(&bt);
	/* (Where one by one would be: at the batch's end.) */
	bs->main.next = bs->nbatch;
	batch_free(&bt);
	return true;
}

static const char *bfd_data(struct symbolizer *s, const struct maps *maps,
			    uint64_t addr)
{
	struct bfdsym *bs = (struct bfdsym *)s;
	const struct elf_sym *sym;
	const struct vma *v;
	struct binary *b;
	bool past;
	uint64_t elf;

	if (!maps || !(v = maps_find(maps, addr)) || v->name[0] != '/')
		return NULL;
	b = binary_for(bs, v->name);
	if (!b->img.elf.data ||
	    !elf_address(addr, v, b->img.loads, b->img.nloads, &elf))
		return NULL;
	binary_symbols(b);
	/* A type object is named by the symbol that starts exactly there. */
	sym = elfimage_find(b->img.data, b->img.ndata, elf, &past);
	if (!sym || sym->addr != elf)
		return NULL;
	return demangled(&bs->main, sym->name);
}

/* A memo's entries, all gone. */
static void memo_clear(struct memo_map *m)
{
	size_t n = m->map.count;

	hashmap_free(&m->map);
	hashmap_init(&m->map, n);
	memset(&m->last, 0, sizeof(m->last));
	if (m->front)
		memset(m->front, 0, MEMO_FRONT * sizeof(*m->front));
}

/*
 * The DWARF readers go (libbfd's too), to be opened again if asked.  The
 * memos keyed by their strings' addresses go with them: those addresses
 * may come back holding other strings.
 */
static void bfd_trim(struct symbolizer *s)
{
	struct bfdsym *bs = (struct bfdsym *)s;

	for (size_t i = 0; i < bs->n; i++) {
		struct binary *b = bs->v[i];

		dwarf_close(b->dw);
		b->dw = NULL;
		dwarf_close(b->dw_begun);
		b->dw_begun = NULL;
		/* (A reader that declined, or fell out of step, stays off.) */
		if (!b->dw_off)
			b->dw_tried = false;
		free(b->answers);
		b->answers = NULL;
		b->nanswers = b->next_answer = 0;
		b->batch = 0;
		if (b->abfd)
			bfd_close(b->abfd);
		b->abfd = NULL;
		free(b->bfd_syms);
		b->bfd_syms = NULL;
		b->bfd_tried = false;
		free(b->names);
		b->names = NULL;
	}
	memo_clear(&bs->main.demangled);
	memo_clear(&bs->main.files);
}

/* The binary at HOST, opened as far as a lookup will need. */
static void ready_one(struct bfdsym *bs, struct readied *r)
{
	const struct sym_options *o = bs->base.opts;
	const char *urls = getenv("DEBUGINFOD_URLS"), *env;
	struct binary *b = r->b = xcalloc(1, sizeof(*r->b));
	char *full;

	if (!open_files(bs, b, r->host, &r->why, false)) {
		r->failed = true;
		return;
	}
	/* (Fetching is main's, and what it fetches changes the rest.) */
	r->fetch = urls && *urls && lacks_debug_file(b);
	if (r->fetch)
		return;
	b->ok = has_code(b);
	if (!o->no_cache && (full = cache_identity(b))) {
		bool warm = symcache_exists(full);

		free(full);
		/* (A warm run may not need its symbols at all.) */
		if (warm)
			return;
	}
	binary_symbols(b);
	env = getenv("DMPROF_DWARF");
	if ((!o->want_source && o->no_inline) || !dwarf_image(b) ||
	    (env && !strcmp(env, "libbfd")))
		return;
	/* (Finished at the first lookup, after its questions are found.) */
	b->dw_begun = dwarf_begin(dwarf_image(b));
}

static void bfd_ready(struct symbolizer *s, char *const *paths, size_t n,
		      const _Atomic bool *stop)
{
	struct bfdsym *bs = (struct bfdsym *)s;

	bs->ready = xreallocarray(bs->ready, bs->nready + n,
				  sizeof(*bs->ready));
	for (size_t i = 0; i < n && !atomic_load(stop); i++) {
		char *host = sym_host_path(bs->base.opts, paths[i]);
		struct readied *r;

		if (readied_at(bs, host)) {
			free(host);
			continue;
		}
		r = bs->ready[bs->nready++] = xcalloc(1, sizeof(*r));
		r->host = host;
		ready_one(bs, r);
	}
}

static void readied_free(struct bfdsym *bs)
{
	for (size_t i = 0; i < bs->nready; i++) {
		struct readied *r = bs->ready[i];

		/* (Taken, the binary is the symbolizer's: freed with it.) */
		if (!r->taken) {
			dwarf_close(r->b->dw_begun);
			elfimage_close(&r->b->img);
			if (r->b->has_dbg)
				elfimage_close(&r->b->dbg);
			free(r->b);
		}
		free(r->host);
		sb_release(&r->why);
		free(r);
	}
	free(bs->ready);
}

static void bfd_destroy(struct symbolizer *s)
{
	struct bfdsym *bs = (struct bfdsym *)s;

	for (size_t i = 0; i < bs->n; i++) {
		struct binary *b = bs->v[i];

		if (bs->base.opts->verbose && b->cached + b->looked_up)
			note("%s: %lu addresses: %lu from the symbol cache, "
			     "%lu looked up", b->name, b->cached + b->looked_up,
			     b->cached, b->looked_up);
		if (b->unresolved > MAX_WHY)
			note("%s: %lu more frames stay unresolved", b->name,
			     b->unresolved - MAX_WHY);
		symcache_close(b->cache);
		dwarf_close(b->dw);
		dwarf_close(b->dw_begun);
		free(b->answers);
		free(b->at);
		free(b->names);
		if (b->abfd)
			bfd_close(b->abfd);
		free(b->bfd_syms);
		elfimage_close(&b->img);
		if (b->has_dbg)
			elfimage_close(&b->dbg);
		free(b);
	}
	if (bs->unresolved > MAX_WHY)
		note("%lu more frames outside any binary stay unresolved",
		     bs->unresolved - MAX_WHY);
	if (bs->debuginfod)
		bs->dbgi->end(bs->debuginfod);
	if (bs->dbgi && bs->dbgi->handle)
		dlclose(bs->dbgi->handle);
	free(bs->dbgi);
	free(bs->debuginfod_how);
	free(bs->v);
	hashmap_free(&bs->bins);
	namer_release(&bs->main);
	free(bs->slots);
	readied_free(bs);
	free(bs);
}

static const struct symbolizer_ops bfd_ops = {
	.name = "bfd",
	.code = bfd_code,
	.data = bfd_data,
	.prepare = bfd_prepare,
	.code_batch = bfd_code_batch,
	.ready = bfd_ready,
	.trim = bfd_trim,
	.destroy = bfd_destroy,
};

struct symbolizer *symbfd_open(struct strtab *strings,
			       const struct sym_options *opts)
{
	static bool initialized;
	struct bfdsym *bs = xcalloc(1, sizeof(*bs));

	if (!initialized) {
		bfd_init();
		initialized = true;
	}
	bs->base.ops = &bfd_ops;
	bs->base.strings = strings;
	bs->base.opts = opts;
	bs->main.bs = bs;
	hashmap_init(&bs->bins, 64);
	/* (The memos' tables made as they fill: a warm run fills none, and
	 * their 300 KiB zeroed were 80 page faults of its 500.) */
	return &bs->base;
}
