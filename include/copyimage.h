/*
 * A copy of a held process's memory, read from once the process goes on
 * (src/memory/copyimage.c): what a heap walk, a scan for pointers and the
 * typing of blocks read of it.  The process stands still only as long as
 * the copy takes; the rest runs on the copy.
 */
#ifndef DMPROF_COPYIMAGE_H
#define DMPROF_COPYIMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "procimage.h"
#include "resident.h"

/*
 * A mapping copied: its committed pages.  Its other pages were never
 * written: zeros in an anonymous mapping, the file's bytes in a file's.
 */
struct copy_vma {
	uint64_t start, end;
	uint8_t *buf;          /* a mapping of its own, as long as the VMA */
	uint64_t *copied;      /* a bit a page: in BUF */
	uint64_t page;
	const char *path;      /* the file mapped, or NULL */
	uint64_t offset;       /* its offset at START */
	int fd;                /* PATH, opened once needed (-1 before) */
};

struct copyimage {
	struct procimage img;  /* (first) the image to read */
	struct procimage *live; /* the rest is read from there */
	struct copy_vma *v;    /* sorted */
	size_t n;
	uint64_t bytes;        /* copied */
	/* Mappings made ready before the process was held (their pages in
	 * memory), for copies of the same stretches. */
	struct copy_vma *spare;
	size_t nspare;
};

/*
 * Which mappings of a process a copy holds: its private ones that are
 * not code (the heap, stacks, data, and the read-only data of binaries:
 * relocated vtables, type names).  Code is the file's, and shared
 * mappings can be any size: they are read from the process.
 */
bool copyimage_wants(const struct vma *v);

/*
 * Before the process is held: mappings for a copy of LIVE's maps with
 * PAGES (a moment's count, the process running), their committed pages
 * in memory already, so that the copy itself writes into memory and
 * takes no page faults while the process stands still.  C is then ready
 * for copyimage_take (or copyimage_close).
 */
void copyimage_prepare(struct copyimage *c, const struct procimage *live,
		       const struct page_counts *pages);

/*
 * Copy, from LIVE (a held process), the committed pages of each mapping
 * of its maps that copyimage_wants and PAGES[i] covers (PAGES as
 * LIVE->maps; a mapping whose PAGES[i].before is NULL is not copied)
 * into C, whose image then has LIVE's maps and threads.  -1 after saying
 * why not (no memory; the process gone: a page that could not be read).
 * C was zeroed or prepared (copyimage_prepare).
 */
int copyimage_take(struct copyimage *c, struct procimage *live,
		   const struct page_counts *pages);

/* The committed bytes a copy of LIVE's maps with PAGES would hold. */
uint64_t copyimage_size(const struct procimage *live,
			const struct page_counts *pages);

/* Let the copy go (its image closed). */
void copyimage_close(struct copyimage *c);

#endif
