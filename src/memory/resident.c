/*
 * Resident memory of a live process, from /proc.  smaps gives each
 * mapping's Rss, Pss and Swap in kB; pagemap gives a 64-bit entry per
 * page: bit 63 present, 62 swapped, and the page frame number in bits
 * 0-54 where the reader may see it (root).  The shared zero page is
 * present but not in Rss: it is known by its frame number, learned by
 * reading a page of our own never written.
 */
#include "resident.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "input.h"
#include "scan.h"
#include "util.h"

#define PM_PRESENT (1ULL << 63)
#define PM_SWAPPED (1ULL << 62)
#define PM_PFN ((1ULL << 55) - 1)
/* Pagemap entries read at once. */
#define PM_BATCH 4096

/* "Rss:    1234 kB": KEY's value in bytes into *V, if L is that line. */
static bool smaps_field(const struct line *l, const char *key, uint64_t *v)
{
	size_t n = strlen(key);
	struct cursor c = { l->p, l->p + l->len };
	uint64_t kb;

	if (l->len <= n || memcmp(l->p, key, n) || l->p[n] != ':')
		return false;
	c.p += n + 1;
	cursor_skip_space(&c);
	if (parse_u64(&c, &kb) != NUM_OK || kb > UINT64_MAX / 1024)
		return false;
	*v = kb * 1024;
	return true;
}

static void add_resident(struct resident *to, const struct resident *r)
{
	to->rss += r->rss;
	to->pss += r->pss;
	to->swap += r->swap;
}

int resident_smaps(pid_t pid, const struct maps *maps,
		   struct resident *out, struct resident *total)
{
	char path[64];
	struct filebuf fb;
	struct line_reader r;
	struct line l;
	struct resident *cur = NULL;

	memset(out, 0, maps->n * sizeof(*out));
	memset(total, 0, sizeof(*total));
	snprintf(path, sizeof(path), "/proc/%d/smaps", (int)pid);
	if (file_load(&fb, path) < 0)
		return -1;
	lines_init(&r, fb.data, fb.size);
	while (lines_next(&r, &l)) {
		struct vma v;

		/* A mapping's line, then its fields. */
		if (l.len && hex_value(l.p[0]) >= 0 &&
		    maps_parse_line(l.p, l.len, &v, NULL) == 0) {
			const struct vma *m = maps_find(maps, v.start);

			cur = m && m->start == v.start ? &out[m - maps->v]
						       : NULL;
			continue;
		}
		if (cur && !smaps_field(&l, "Rss", &cur->rss) &&
		    !smaps_field(&l, "Pss", &cur->pss))
			smaps_field(&l, "Swap", &cur->swap);
	}
	file_release(&fb);
	for (size_t i = 0; i < maps->n; i++)
		add_resident(total, &out[i]);
	return 0;
}

/*
 * The zero page's frame number, from two pages of ours read and never
 * written; 0 when frame numbers are hidden from us, or when a page read
 * first is a page of its own (this VM's kernel, 6.18, gives each such
 * read a frame: the zero page is not used, and what was read is
 * committed).
 */
static uint64_t zero_pfn(uint64_t page)
{
	volatile char *p = mmap(NULL, 2 * page, PROT_READ,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t e[2] = { 0, 0 };
	int fd;

	if ((void *)p == MAP_FAILED)
		return 0;
	(void)p[0];
	(void)p[page];
	fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && pread(fd, e, sizeof(e),
			     (off_t)((uintptr_t)p / page * 8)) != sizeof(e))
		e[0] = e[1] = 0;
	if (fd >= 0)
		close(fd);
	munmap((void *)p, 2 * page);
	if (!(e[0] & PM_PRESENT) || !(e[1] & PM_PRESENT) ||
	    (e[0] & PM_PFN) != (e[1] & PM_PFN))
		return 0;
	return e[0] & PM_PFN;
}

int pagemap_open(struct pagemap *pm, pid_t pid)
{
	char path[64];

	pm->page = (uint64_t)sysconf(_SC_PAGESIZE);
	pm->zero_pfn = zero_pfn(pm->page);
	snprintf(path, sizeof(path), "/proc/%d/pagemap", (int)pid);
	pm->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (pm->fd < 0)
		return error_errno("cannot open %s", path);
	return 0;
}

void pagemap_close(struct pagemap *pm)
{
	if (pm->fd >= 0)
		close(pm->fd);
	pm->fd = -1;
}

static bool committed_entry(const struct pagemap *pm, uint64_t e)
{
	if (e & PM_SWAPPED)
		return true;
	return (e & PM_PRESENT) &&
	       !(pm->zero_pfn && (e & PM_PFN) == pm->zero_pfn);
}

int pagemap_counts(struct pagemap *pm, uint64_t start, uint64_t end,
		   struct page_counts *out)
{
	size_t n = (size_t)((end - start) / pm->page), done = 0;
	uint64_t *buf = xmalloc(PM_BATCH * sizeof(*buf));

	out->start = start;
	out->end = end;
	out->page = pm->page;
	out->before = xmalloc((n + 1) * sizeof(*out->before));
	out->before[0] = 0;
	while (done < n) {
		size_t want = n - done < PM_BATCH ? n - done : PM_BATCH;
		off_t at = (off_t)((start / pm->page + done) * 8);
		ssize_t got = pread(pm->fd, buf, want * 8, at);

		if (got != (ssize_t)(want * 8)) {
			free(buf);
			page_counts_free(out);
			return error("cannot read the pagemap of "
				     "0x%llx-0x%llx%s%s",
				     (unsigned long long)start,
				     (unsigned long long)end,
				     got < 0 ? ": " : "",
				     got < 0 ? strerror(errno) : "");
		}
		for (size_t k = 0; k < want; k++, done++)
			out->before[done + 1] = out->before[done] +
						committed_entry(pm, buf[k]);
	}
	free(buf);
	return 0;
}

void page_counts_free(struct page_counts *pc)
{
	free(pc->before);
	pc->before = NULL;
}

/* Is page K of PC committed? */
static bool page_in(const struct page_counts *pc, uint64_t k)
{
	return pc->before[k + 1] != pc->before[k];
}

uint64_t page_counts_bytes(const struct page_counts *pc, uint64_t a,
			   uint64_t b)
{
	uint64_t first, last, bytes;

	if (b <= a)
		return 0;
	first = (a - pc->start) / pc->page;
	last = (b - 1 - pc->start) / pc->page;
	if (first == last)
		return page_in(pc, first) ? b - a : 0;
	bytes = (uint64_t)(pc->before[last] - pc->before[first + 1]) *
		pc->page;
	if (page_in(pc, first))
		bytes += pc->start + (first + 1) * pc->page - a;
	if (page_in(pc, last))
		bytes += b - (pc->start + last * pc->page);
	return bytes;
}
