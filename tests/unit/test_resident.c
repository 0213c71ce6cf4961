/*
 * What of a process is resident (this one's: reading oneself needs no
 * ptrace): each mapping's Rss from smaps, and the committed pages of a
 * stretch from pagemap, partial pages counted byte by byte.
 */
#include <criterion/criterion.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "helpers.h"
#include "procimage.h"
#include "resident.h"
#include "util.h"

Test(resident, smaps_counts_each_mapping)
{
	struct procimage img;
	struct resident *r, total;
	long page = sysconf(_SC_PAGESIZE);
	/*
	 * Four pages between two inaccessible ones of its own: the kernel
	 * cannot merge it with a neighbour that a thread (or ASan) maps
	 * between the reading of maps and of smaps.
	 */
	char *guarded = mmap(NULL, 6 * page, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *map = guarded + page;
	const struct vma *v;
	uint64_t sum = 0;

	cr_assert_neq(guarded, MAP_FAILED);
	cr_assert_eq(mprotect(guarded, page, PROT_NONE), 0);
	cr_assert_eq(mprotect(map + 4 * page, page, PROT_NONE), 0);
	memset(map, 1, 3 * page);
	cr_assert_eq(procimage_open_pid(&img, getpid()), 0);
	r = xcalloc(img.maps.n, sizeof(*r));
	cr_assert_eq(resident_smaps(getpid(), &img.maps, r, &total), 0);
	v = maps_find(&img.maps, (uint64_t)(uintptr_t)map);
	cr_assert_not_null(v);
	cr_assert_eq(v->start, (uint64_t)(uintptr_t)map);
	cr_assert_geq(r[v - img.maps.v].rss, 3 * (uint64_t)page);
	for (size_t i = 0; i < img.maps.n; i++)
		sum += r[i].rss;
	cr_assert_eq(sum, total.rss);
	cr_assert_gt(total.pss, 0);
	free(r);
	procimage_close(&img);
	munmap(guarded, 6 * page);
}

Test(resident, pagemap_counts_committed_pages)
{
	struct pagemap pm;
	struct page_counts pc;
	long page = sysconf(_SC_PAGESIZE);
	char *map = mmap(NULL, 4 * page, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t a = (uint64_t)(uintptr_t)map, p = (uint64_t)page;
	volatile char c;

	cr_assert_neq(map, MAP_FAILED);
	map[0] = 1;
	map[2 * page] = 1;
	c = map[3 * page]; /* read, never written: the zero page */
	(void)c;
	cr_assert_eq(pagemap_open(&pm, getpid()), 0);
	cr_assert_eq(pagemap_counts(&pm, a, a + 4 * p, &pc), 0);
	/* The zero page counts where its frame number is hidden. */
	cr_assert_eq(page_counts_bytes(&pc, a, a + 4 * p),
		     (pm.zero_pfn ? 2 : 3) * p);
	cr_assert_eq(page_counts_bytes(&pc, a + 10, a + 20), 10);
	cr_assert_eq(page_counts_bytes(&pc, a + p + 10, a + p + 20), 0);
	/* The end of page 0, page 1 (none), the start of page 2. */
	cr_assert_eq(page_counts_bytes(&pc, a + p - 16, a + 2 * p + 16), 32);
	cr_assert_eq(page_counts_bytes(&pc, a + 5, a + 5), 0);
	page_counts_free(&pc);
	pagemap_close(&pm);
	munmap(map, 4 * page);
}
