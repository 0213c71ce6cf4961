/*
 * Symbolization: the backend interface, the run-wide pass that resolves
 * each distinct address once, and the helpers every backend shares (the
 * address rule, the original's short function names).
 */
#ifndef DMPROF_SYMBOL_H
#define DMPROF_SYMBOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "maps.h"
#include "model.h"

struct sym_info {
	const char *func; /* interned; NULL = unresolved */
	const char *file; /* interned; NULL = unknown */
	uint32_t line;
	uint16_t ninline; /* functions inlined at the address, innermost */
	const struct inline_frame *inl; /* first; lives in the arena */
};

struct symbolizer;

struct symbolizer_ops {
	const char *name;
	/*
	 * Resolve the return address ADDR (the backend looks up the call
	 * before it) in a process laid out as MAPS.  Leaves OUT zeroed when
	 * nothing is known.
	 */
	void (*code)(struct symbolizer *s, const struct maps *maps,
		     uint64_t addr, struct sym_info *out);
	/*
	 * The symbol at exactly the data address ADDR (a std::type_info), as
	 * the backend names it ("typeinfo for X"), or NULL.
	 */
	const char *(*data)(struct symbolizer *s, const struct maps *maps,
			    uint64_t addr);
	/*
	 * Optional: code() is about to be called for the N addresses of
	 * ADDRS, in this order, with MAPS (both stay valid until then): a
	 * backend may look them up in batches.
	 */
	void (*prepare)(struct symbolizer *s, const struct maps *maps,
			const uint64_t *addrs, size_t n);
	/*
	 * Optional, right after prepare: name the whole batch at once, as
	 * code() would one by one, each address's answer given to TAKE(ARG,
	 * I, INFO), I its index in the batch (once each, from any thread;
	 * none where code() would leave OUT zeroed), and say what code()
	 * would say, in its order: true.  False: nothing done (the batch is
	 * not worth it), code() is asked.
	 */
	bool (*code_batch)(struct symbolizer *s, const struct maps *maps,
			   void (*take)(void *arg, size_t i,
					const struct sym_info *info),
			   void *arg);
	/*
	 * Optional: get ready for lookups in the binaries at PATHS (N, as
	 * the maps name them): open them, read their symbols and what their
	 * DWARF's reading needs first, on the calling thread, while the
	 * caller's other threads read a dump; no binary more once *STOP is
	 * set (the others are opened at their first lookup, as without).
	 * Nothing else of S is used until it returns.  What goes wrong is
	 * said at the first lookup, not here.
	 */
	void (*ready)(struct symbolizer *s, char *const *paths, size_t n,
		      const _Atomic bool *stop);
	/* Optional: let go of what serves only further lookups (read again
	 * if they come). */
	void (*trim)(struct symbolizer *s);
	void (*destroy)(struct symbolizer *s);
};

struct sym_options;

struct symbolizer {
	const struct symbolizer_ops *ops;
	struct strtab *strings; /* where results are interned; not owned */
	/* The caller's, read at each lookup (so that a command may ask for
	 * source lines once it knows its policies). */
	const struct sym_options *opts;
};

/* What the user asked of symbolization (common command-line options). */
struct alt_dir {
	char *target; /* a directory as the profiled machine named it */
	char *host;   /* where it is here */
};

struct sym_options {
	const char *symfs;      /* --symfs: a root for every binary path */
	struct alt_dir *alts;   /* --alternative-dirs TARGET@HOST:... */
	size_t nalts;
	bool full_names;        /* --full-names: demangled in full */
	bool no_inline;         /* --no-inline: no inlined frames */
	bool no_cache;          /* --no-symbol-cache */
	bool want_source;       /* source files and lines are needed */
	int verbose;            /* -v: say where symbols come from */
};

/* Parse "TARGET@HOST[:TARGET@HOST...]" into O; -1 if malformed. */
int sym_options_alternative_dirs(struct sym_options *o, const char *spec);
void sym_options_release(struct sym_options *o);
/*
 * The path to open for a binary the maps name PATH: alternative
 * directories first (the longest matching TARGET), then the --symfs root.
 * Returns a new string.
 */
char *sym_host_path(const struct sym_options *o, const char *path);

void symbolizer_destroy(struct symbolizer *s);
/* No more lookups are expected: what serves them may go (see trim). */
void symbolizer_trim(struct symbolizer *s);

/*
 * Resolve every frame of M not resolved yet, once each, and every bucket's
 * type.  S may be NULL: frames then stay unresolved.
 */
void symbolize_model(struct model *m, struct symbolizer *s,
		     const struct maps *maps);
struct progress;
/*
 * The same, saying how far it has got in DONE (which may be NULL): N + 1
 * once the frames below id N are resolved (frames are resolved in id
 * order), 1 as it starts.  Another thread may read a frame as soon as it
 * is said to be resolved (see cmd_stacktrace.c).
 */
void symbolize_model_telling(struct model *m, struct symbolizer *s,
			     const struct maps *maps, struct progress *done);

/*
 * The original's short function name: drop argument lists (with a
 * following "const"), then template arguments, then any leading return
 * type.  "WTF::RefCounted<X>::operator new(unsigned long)" becomes
 * "WTF::RefCounted::operator new".  Writes into OUT and returns its text.
 */
const char *symbol_short_name(const char *name, size_t len,
			      struct strbuf *out);

/*
 * A span of an ELF file that is mapped: file offsets [offset,
 * offset+size) appear at link-time address addr.  Sections and PT_LOAD
 * segments both describe spans.
 */
struct elf_span {
	uint64_t addr;
	uint64_t offset;
	uint64_t size;
};

/*
 * The address rule: runtime ADDR in VMA is at file offset
 * addr - vma.start + vma.offset; the link-time address is that offset
 * moved by the span containing it (the last such span, as the original
 * did with overlapping section headers).  False if no span contains it.
 */
bool elf_address(uint64_t addr, const struct vma *vma,
		 const struct elf_span *spans, size_t n, uint64_t *out);

#endif
