/*
 * The persistent symbol cache: what an address of a binary symbolized to,
 * kept under $XDG_CACHE_HOME/dmprof/symbols (never beside the dumps) and
 * keyed by the binary's identity, so a rebuilt binary never reuses a stale
 * entry.
 */
#ifndef DMPROF_SYMCACHE_H
#define DMPROF_SYMCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stack.h"
#include "strtab.h"

enum {
	SC_DWARF = 1, /* file, line and inlined frames were looked up */
};

struct symcache_entry {
	uint64_t addr;        /* link-time return address */
	unsigned flags;
	const char *func;     /* demangled in full; NULL: unresolved */
	const char *file;
	uint32_t line;
	uint16_t ninline;
	struct inline_frame *inl; /* names demangled in full */
	/*
	 * An entry of the file, once symcache_show_with was called: the
	 * names as its reader shows them (func's, and the inlined frames'
	 * in a copy of their own).  NULL otherwise.
	 */
	const char *shown_func;
	struct inline_frame *shown_inl;
	bool shown;
};

struct symcache;

/*
 * The cache of the binary whose identity is IDENTITY ("build-id:..." or
 * "file:PATH:SIZE:MTIME"), or NULL when caching is off or impossible.
 * Strings are interned in STRINGS.
 */
struct symcache *symcache_open(const char *identity, struct strtab *strings);
/*
 * Show the file's names with SHOW (a name demangled in full in, the name
 * to show out, never NULL): asked once for each of them, then remembered
 * by its place in the file (a warm run's names, 82,000 addresses' and
 * their inlined frames', had been looked up by pointer in a hash table
 * each time: a quarter of its symbolization).
 */
typedef const char *symcache_show_fn(void *ctx, const char *name);
void symcache_show_with(struct symcache *c, symcache_show_fn *show,
			void *ctx);
/* Is there a cache for IDENTITY (whatever it holds)?  Thread-safe. */
bool symcache_exists(const char *identity);
/*
 * What ADDR symbolized to, or NULL.  The entry (and its inlined frames)
 * is valid until the next symcache_get or symcache_put: copy it.
 */
const struct symcache_entry *symcache_get(struct symcache *c, uint64_t addr);
/*
 * For a batch: where each of the N addresses ADDRS lies in the file, as
 * symcache_get_at wants it (WHERE[i]).  The batch is sorted and the file
 * walked once beside it, instead of searched once per address.
 */
void symcache_find_many(struct symcache *c, const uint64_t *addrs, size_t n,
			uint32_t *where);
/* symcache_get, the file's part found by symcache_find_many already. */
const struct symcache_entry *symcache_get_at(struct symcache *c,
					     uint64_t addr, uint32_t where);
void symcache_put(struct symcache *c, const struct symcache_entry *e);
/* Its file, and how many addresses it holds (for -v). */
const char *symcache_path(const struct symcache *c);
size_t symcache_count(const struct symcache *c);
/* Write the cache back if it gained entries, and free it. */
void symcache_close(struct symcache *c);
/* The cache directory (for messages and tests), or NULL. */
const char *symcache_dir(void);

#endif
