/*
 * String interning: equal strings become the same pointer, stored once in
 * an arena.  Symbol names, paths and type names all pass through here.
 */
#ifndef DMPROF_STRTAB_H
#define DMPROF_STRTAB_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "arena.h"
#include "hashmap.h"

struct strtab {
	struct hashmap map;
	struct arena *arena; /* not owned: the table's alone while shared */
	/* Interning takes LOCK while the table is shared with a thread
	 * (see strtab_share); reading an interned string never does. */
	bool shared;
	pthread_mutex_t lock;
};

void strtab_init(struct strtab *t, struct arena *arena);
/* Say, before another thread starts interning in T and after it has
 * been joined, whether interning must lock. */
void strtab_share(struct strtab *t, bool shared);
void strtab_free(struct strtab *t);
/* The interned copy of S[0..LEN); lives as long as the arena. */
const char *strtab_intern(struct strtab *t, const char *s, size_t len);
const char *strtab_intern_str(struct strtab *t, const char *s);
/* SIZE bytes in T's arena, living as long as its strings (locked as
 * interning is, while T is shared). */
void *strtab_alloc(struct strtab *t, size_t size);

#endif
