/*
 * String interning: equal strings become the same pointer, stored once in
 * an arena.  Symbol names, paths and type names all pass through here.
 */
#ifndef DMPROF_STRTAB_H
#define DMPROF_STRTAB_H

#include <stddef.h>

#include "arena.h"
#include "hashmap.h"

struct strtab {
	struct hashmap map;
	struct arena *arena; /* not owned */
};

void strtab_init(struct strtab *t, struct arena *arena);
void strtab_free(struct strtab *t);
/* The interned copy of S[0..LEN); lives as long as the arena. */
const char *strtab_intern(struct strtab *t, const char *s, size_t len);
const char *strtab_intern_str(struct strtab *t, const char *s);

#endif
