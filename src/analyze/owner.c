/*
 * Whose code a frame is (see owner.h): the one place that decides it, for
 * every report that ranks owners.  The program's own code is found by
 * where it lives, as a person reading a stack would: not in the system's
 * directories, not in the system's headers, not the C++ runtime's names.
 */
#include "owner.h"

#include <fnmatch.h>
#include <string.h>

#include "pattern.h"
#include "perfmap.h"
#include "stacktext.h"
#include "util.h"

/*
 * The allocator wrappers of well-known C programs and libraries, by
 * family (dmprof(1) lists them).  Each wraps malloc to add accounting,
 * out-of-memory handling or pools, and sits between the allocator and
 * the code that wanted the memory: in the program's own binary where
 * the project builds it in (redis, git, postgres, nginx, python3,
 * sqlite3's amalgamation), so the location rule alone would name it the
 * owner of everything.  Containers (g_ptr_array_add, std::vector) are
 * not here: they are code the caller chose, and a library's.
 */
const struct wrapper_family owner_wrapper_families[] = {
	{ "redis", "z(?:try)?(?:m|c|re)alloc(?:_[a-z_]+)?|zstrdup" },
	{ "glib", "g_(?:try_)?(?:malloc0?|realloc)(?:_n)?|g_(?:new0?|renew)|"
		  "g_slice_(?:alloc0?|copy)|g_aligned_alloc0?|"
		  "g_(?:strn?dup|strdupv|memdup2?|strdup_v?printf|strconcat|"
		  "strjoinv?)" },
	{ "xmalloc", "(?:do_)?x(?:m|c|re|z|n|nre|2n?re|i|ic|ire|iz|p)alloc"
		     "(?:z|array)?(?:_gently|_nofail)?|"
		     "x(?:strn?dup|memdupz?|charalloc|reallocarray)" },
	{ "postgres", "palloc(?:0|_extended|_aligned)?|"
		      "repalloc(?:0|_huge|_extended)?|MemoryContextAlloc\\w*|"
		      "pn?strdup|psprintf|AllocSet(?:Alloc|Realloc)\\w*|"
		      "(?:Generation|Slab|Bump)(?:Alloc|Realloc)\\w*" },
	{ "nginx", "ngx_(?:alloc|calloc|memalign|p(?:n|c|mem)?alloc|"
		   "palloc_(?:small|large|block))" },
	{ "python", "_?Py(?:Mem|Object)_(?:Raw)?(?:Malloc|Calloc|Realloc)|"
		    "_PyMem_\\w*(?:Malloc|Calloc|Realloc)|pymalloc_\\w+|"
		    "_PyObject_(?:GC_)?(?:New|NewVar|Alloc)\\w*|gc_alloc|"
		    "PyType_GenericAlloc|_PyType_AllocNoTrack" },
	{ "openssl", "CRYPTO_(?:secure_)?(?:malloc|zalloc|realloc|"
		     "clear_realloc|strn?dup|memdup)" },
	{ "sqlite", "sqlite3(?:_malloc(?:64)?|_realloc(?:64)?|Malloc\\w*|"
		    "Realloc|Mem(?:Malloc|Realloc)|DbMalloc\\w*|DbRealloc\\w*|"
		    "DbStrN?Dup|PageMalloc)|mallocWithAlarm|dbMallocRawFinish|"
		    "dbReallocFinish|pcache1Alloc" },
	{ "lua", "luaM_\\w+|l_alloc" },
	{ NULL, NULL },
};

const struct owners owners_pprof = { .rule = OWNER_PPROF };

/* Where Debian (and most distributions) install libraries. */
const char *const owner_system_lib_dirs[] = {
	"/lib/", "/lib32/", "/lib64/", "/libx32/", "/usr/lib/", "/usr/lib32/",
	"/usr/lib64/", "/usr/libx32/", "/usr/libexec/", NULL,
};

/*
 * Where a source file is the system's: headers (libstdc++'s templates in
 * /usr/include/c++, gcc's own in /usr/lib/gcc), and the sources packages
 * ship (Go's runtime in /usr/lib/go-N and /usr/share/go-N).
 */
const char *const owner_system_include_dirs[] = {
	"/usr/include/", "/usr/local/include/", "/usr/share/", "/usr/src/",
	NULL,
};

/* Namespaces and prefixes of the C++ runtime: libstdc++ and the ABI's. */
static const char *const runtime_names[] = {
	"std::", "__gnu_cxx::", "__cxxabiv1::", "__cxa_", "__gnu_debug::",
	NULL,
};

/*
 * glibc keeping its own state: stdio's streams allocate their buffers in
 * _IO_* (and __GI__IO_*, the same functions by their internal names);
 * the dynamic loader its link maps, lookup tables and threads' TLS in
 * _dl_* and the few others named here.  (The linux policy's malloc-stdio
 * and malloc-loader rules name them too, as components.)
 */
static const char *const runtime_state_names[] = {
	"_IO_", "__GI__IO_", "_dl_", "_dlfo_", "dl_open_worker",
	"allocate_dtv", "__tls_get_addr", "_dlerror_run", NULL,
};

static bool has_prefix(const char *s, const char *const *prefixes)
{
	for (; *prefixes; prefixes++)
		if (!strncmp(s, *prefixes, strlen(*prefixes)))
			return true;
	return false;
}

/* A pattern without a wildcard is a prefix (a directory, a path). */
static bool pattern_matches(const char *pattern, const char *path)
{
	if (!strpbrk(pattern, "*?["))
		return !strncmp(path, pattern, strlen(pattern));
	return fnmatch(pattern, path, 0) == 0;
}

static bool named_own(const struct owners *o, const char *path)
{
	for (size_t i = 0; path && i < o->nown; i++)
		if (pattern_matches(o->own[i], path))
			return true;
	return false;
}

/*
 * A Python module of the interpreter's or of an installed package: its
 * standard library (/usr/lib/python3.11/, or PREFIX/lib/python3.11/ of a
 * Python built elsewhere, "<frozen importlib._bootstrap>"), and what pip
 * or the system installed (site-packages, dist-packages), a virtual
 * environment's included.  The program's own modules are elsewhere.
 */
static bool python_library(const char *file)
{
	const char *p = file;

	if (!strncmp(file, "<frozen ", 8))
		return true;
	while ((p = strstr(p, "/lib/python")) != NULL) {
		p += 11;
		if (*p >= '0' && *p <= '9')
			return true;
	}
	return strstr(file, "/site-packages/") || strstr(file, "/dist-packages/");
}

static bool system_file(const char *file)
{
	return has_prefix(file, owner_system_include_dirs) ||
	       has_prefix(file, owner_system_lib_dirs) || python_library(file);
}

bool owner_runtime_name(const char *func)
{
	return func && (has_prefix(func, runtime_names) ||
			frame_is_allocator(func, strlen(func)));
}

bool owner_runtime_state(const char *func)
{
	return func && has_prefix(func, runtime_state_names);
}

bool owner_frame_is_own(const struct owners *o, const struct model *m,
			const struct frame *f, uint32_t k)
{
	const char *func = k < f->ninline ? f->inl[k].func : f->func;
	const char *file = k < f->ninline ? f->inl[k].file : f->file;
	const char *bin = f->bin ? m->bins[f->bin] : NULL;

	if (!func || frame_is_allocator(func, strlen(func)))
		return false;
	if (named_own(o, bin) || named_own(o, file))
		return true;
	if (has_prefix(func, runtime_names))
		return false;
	if (file && system_file(file))
		return false;
	/* An interpreter's own code (CPython's eval loop, its objects):
	 * the runtime the program's interpreted frames run on. */
	if (f->bin && f->bin == m->runtime_bin)
		return false;
	/* JIT code named from a perf map: the program's JavaScript, not
	 * node's own (node:internal/...), a package's or V8's builtins. */
	if (!bin && perfmap_runtime_frame(func, file))
		return false;
	if (!bin)
		return true; /* named by the profile (Go, DHAT): by its name */
	return f->bin == m->main_bin ||
	       (*bin == '/' && !has_prefix(bin, owner_system_lib_dirs));
}

int owners_rule(struct owners *o, const char *name)
{
	if (!strcmp(name, "program"))
		o->rule = OWNER_PROGRAM;
	else if (!strcmp(name, "pprof"))
		o->rule = OWNER_PPROF;
	else
		return -1;
	return 0;
}

int owners_add_wrapper(struct owners *o, const char *pattern,
		       const char *origin, struct strbuf *err)
{
	struct strbuf all = STRBUF_INIT;
	pcre2_code *re = pattern_compile(pattern, err);
	struct alloc_fn *fn;

	if (!re)
		return -1;
	o->fns = xreallocarray(o->fns, o->nfns + 1, sizeof(*o->fns));
	fn = &o->fns[o->nfns++];
	fn->pattern = xstrdup(pattern);
	fn->origin = xstrdup(origin);
	fn->code = re;
	/*
	 * All of them in one pattern, asked first: one match per frame
	 * whatever their number, and which one only when it matched.
	 */
	for (size_t i = 0; i < o->nfns; i++)
		sb_addf(&all, "%s(?:%s)", i ? "|" : "", o->fns[i].pattern);
	pcre2_code_free(o->any);
	o->any = pattern_compile(all.buf, NULL);
	sb_release(&all);
	if (!o->mctx) {
		o->mctx = pcre2_match_context_create(NULL);
		pcre2_set_match_limit(o->mctx, 1000000);
		pcre2_set_depth_limit(o->mctx, 10000);
		o->md = pcre2_match_data_create(1, NULL);
	}
	return 0;
}

void owners_builtin_wrappers(struct owners *o)
{
	struct strbuf origin = STRBUF_INIT;

	for (const struct wrapper_family *w = owner_wrapper_families;
	     w->family; w++) {
		sb_reset(&origin);
		sb_addf(&origin, "built-in %s", w->family);
		if (owners_add_wrapper(o, w->pattern, origin.buf, NULL) < 0)
			BUG("built-in wrapper pattern of %s", w->family);
	}
	sb_release(&origin);
}

static bool matches(const struct owners *o, const void *code,
		    const char *func, size_t len)
{
	int rc = pcre2_match(code, (PCRE2_SPTR)func, len, 0, 0, o->md,
			     o->mctx);

	/* (An error, the limits met: no match, as for a policy's rule.) */
	return rc >= 0;
}

/*
 * The length of FUNC without its parameters ("xmalloc(unsigned long)"
 * with --full-names, DHAT's names, "A::get(int) const"): up to the '('
 * that opens a trailing "(...)" and its qualifiers, if any, and it is not
 * the whole name.  ("main.(*T).alloc" and "(anonymous namespace)::f"
 * have none.)
 */
static size_t without_parameters(const char *func, size_t len)
{
	size_t depth = 0, end = len;

	/* (Qualifiers: const, volatile, &, &&, noexcept.) */
	while (end && (func[end - 1] == ' ' || func[end - 1] == '&' ||
		       (func[end - 1] >= 'a' && func[end - 1] <= 'z')))
		end--;
	if (!end || func[end - 1] != ')')
		return len;
	for (size_t i = end; i-- > 0;) {
		if (func[i] == ')')
			depth++;
		else if (func[i] == '(' && !--depth)
			return i ? i : len;
	}
	return len;
}

long owner_wrapper(const struct owners *o, const char *func, size_t len)
{
	size_t bare;

	if (!o || !o->any || !func)
		return -1;
	/* By its bare name, else by its whole name. */
	bare = without_parameters(func, len);
	if (!matches(o, o->any, func, bare)) {
		if (bare == len || !matches(o, o->any, func, len))
			return -1;
		bare = len;
	}
	for (size_t i = 0; i < o->nfns; i++)
		if (matches(o, o->fns[i].code, func, bare))
			return (long)i;
	return -1;
}

void owners_release(struct owners *o)
{
	for (size_t i = 0; i < o->nfns; i++) {
		free(o->fns[i].pattern);
		free(o->fns[i].origin);
		pcre2_code_free(o->fns[i].code);
	}
	free(o->fns);
	pcre2_code_free(o->any);
	pcre2_match_context_free(o->mctx);
	pcre2_match_data_free(o->md);
	free(o->own);
	memset(o, 0, sizeof(*o));
}
