/*
 * What of a live process's memory is in RAM or in swap, as the kernel
 * says it: per mapping from /proc/PID/smaps (Rss, Pss, Swap), and page
 * by page from /proc/PID/pagemap (present or swapped), for stretches
 * smaller than a mapping.  Read while the process is held (procstop.h)
 * for one instant's picture.
 */
#ifndef DMPROF_RESIDENT_H
#define DMPROF_RESIDENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "maps.h"

/* What the kernel counts of a mapping (or of the process), bytes. */
struct resident {
	uint64_t rss, pss, swap;
};

/*
 * The Rss, Pss and Swap of each VMA of MAPS (the process's, read in the
 * same instant) into OUT[i], from /proc/PID/smaps; a VMA smaps does not
 * list has zeros.  TOTAL: their sums.  -1 after saying why not.
 */
int resident_smaps(pid_t pid, const struct maps *maps,
		   struct resident *out, struct resident *total);

/*
 * The committed pages of a stretch of memory: present or swapped out,
 * but not the shared zero page (which Rss leaves out: memory read and
 * never written), as far as it can be told (its frame number is visible
 * to root only).  Held as the count of them before each page, so that
 * the committed bytes of any part are two lookups.
 */
struct page_counts {
	uint64_t start, end;   /* page-aligned */
	uint64_t page;         /* the page size */
	uint32_t *before;      /* (end - start) / page + 1 counts */
};

/* /proc/PID/pagemap, open. */
struct pagemap {
	int fd;
	uint64_t page;
	uint64_t zero_pfn;     /* 0: not known */
};

int pagemap_open(struct pagemap *pm, pid_t pid);
void pagemap_close(struct pagemap *pm);

/*
 * The committed pages of [START, END) (page-aligned) into OUT.  -1 after
 * saying why not (pagemap could not be read: the process gone).
 */
int pagemap_counts(struct pagemap *pm, uint64_t start, uint64_t end,
		   struct page_counts *out);
void page_counts_free(struct page_counts *pc);

/* The committed bytes of [A, B), a part of PC's stretch. */
uint64_t page_counts_bytes(const struct page_counts *pc, uint64_t a,
			   uint64_t b);

#endif
