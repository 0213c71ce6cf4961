/*
 * Process images of a live process (this one: reading oneself needs no
 * ptrace), and stopping one: what can and cannot be read, the pages a
 * gather leaves alone, the refusals.
 */
#include <criterion/criterion.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "helpers.h"
#include "procimage.h"
#include "procstop.h"
#include "util.h"

static char known[8192] = "procimage: the bytes at a known address";

Test(procimage, reads_its_own_memory)
{
	struct procimage img;
	char buf[64];
	uint64_t addr = (uint64_t)(uintptr_t)known;

	cr_assert_eq(procimage_open_pid(&img, getpid()), 0, "%s",
		     stderr_text());
	cr_assert(maps_find(&img.maps, addr), "no mapping holds 'known'");
	cr_assert(procimage_read_all(&img, addr, buf, 40));
	cr_assert_eq(memcmp(buf, known, 40), 0);
	cr_assert_eq(procimage_read(&img, 8, buf, sizeof(buf)), 0);
	cr_assert_eq(img.nbytes, 40);
	procimage_close(&img);
}

Test(procimage, gather_reads_present_pages_only)
{
	struct procimage img;
	long page = sysconf(_SC_PAGESIZE);
	char *map = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t addrs[3], words[3];
	bool ok[3];

	cr_assert_neq(map, MAP_FAILED);
	memcpy(map, "touched!", 8);
	addrs[0] = (uint64_t)(uintptr_t)map;
	addrs[1] = addrs[0] + (uint64_t)page; /* never touched */
	addrs[2] = 8;                           /* not mapped */
	cr_assert_eq(procimage_open_pid(&img, getpid()), 0);
	procimage_gather(&img, addrs, 3, 8, (uint8_t *)words, ok);
	cr_assert(ok[0]);
	cr_assert_eq(memcmp(&words[0], "touched!", 8), 0);
	cr_assert_not(ok[1], "an untouched page was read (and mapped)");
	cr_assert_not(ok[2]);
	procimage_close(&img);
	munmap(map, 2 * page);
}

Test(procimage, no_such_process)
{
	struct procimage img;
	struct procstop stop;

	capture_stderr();
	cr_assert_eq(procimage_open_pid(&img, 0x7ffffff0), -1);
	cr_assert_eq(procstop_stop(&stop, 0x7ffffff0, 100), -1);
	cr_assert_str_eq(stderr_text(), "dmprof: no process 2147483632\n"
					"dmprof: no process 2147483632\n");
}

Test(procimage, does_not_stop_itself)
{
	struct procstop stop;

	capture_stderr();
	cr_assert_eq(procstop_stop(&stop, getpid(), 100), -1);
	cr_assert(strstr(stderr_text(), "is dmprof itself"), "%s",
		  stderr_text());
}
