/*
 * The gperftools heap profile reader, through profile_load(): header forms,
 * pprof's unsampling, line kinds, truncation, and what it synthesizes.
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"
#include "input.h"
#include "helpers.h"
#include "util.h"

static struct model m;
static struct read_run run;  /* the readers' memory of the run */
static struct snapshot snap;

static void setup(void)
{
	model_init(&m);
	memset(&run, 0, sizeof(run));
}

static void teardown(void)
{
	snapshot_release(&snap);
	model_free(&m);
}

TestSuite(gperf, .init = setup, .fini = teardown);

#define HDR(tag) "heap profile:      3:     4096 [     5:     8192] @ " tag "\n"

/* As gperftools re-prints /proc/self/maps: padded inode, 00:00. */
#define MAPS                                                                 \
	"\nMAPPED_LIBRARIES:\n"                                              \
	"00400000-00401000 r--p 00000000 00:00 1234        /opt/app/bin\n"   \
	"00401000-00402000 r-xp 00001000 00:00 1234        /opt/app/bin\n"   \
	"7f0000000000-7f0000010000 r-xp 00000000 00:00 99          "         \
	"/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4\n"                       \
	"7f1000000000-7f1000010000 r-xp 00000000 00:00 98          "         \
	"/usr/lib/x86_64-linux-gnu/libc.so.6\n"                              \
	"7f2000000000-7f2000100000 rw-p 00000000 00:00 0           \n"

/* Two malloc lines that add up to the header's 4096 bytes. */
#define LINES                                                                \
	"     2:     2048 [     3:     4096] @ 0x00401136 0x00401200\n"      \
	"     1:     2048 [     2:     4096] @ 0x00401150 0x7f1000001234\n"

static int load(const char *text)
{
	const char *p = write_file("g.0001.heap", text, -1);

	return profile_load(&snap, p, &m, &run);
}

static int load_len(const char *text, long len)
{
	const char *p = write_file("g.0001.heap", text, len);

	return profile_load(&snap, p, &m, &run);
}

static void load_fails(const char *text, const char *msg)
{
	capture_stderr();
	cr_assert_eq(load(text), -1, "accepted:\n%s", text);
	cr_assert(strstr(stderr_text(), msg), "want '%s' in stderr: %s", msg,
		  stderr_text());
}

/* How often NEEDLE occurs in HAY. */
static int count(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

static uint64_t frame_addr(const struct bucket *b, uint32_t i)
{
	return frame_get(&m.frames, b->stack->frames[i])->addr;
}

/* pprof's scale for heap_v2/RATE, applied to one (objs, bytes) pair:
 * truncated, as pprof's int64() conversion does. */
static void pprof_unsample(double rate, int64_t objs, int64_t bytes,
			   int64_t *out_objs, int64_t *out_bytes)
{
	double scale = 1.0 / (1.0 - exp(-((double)bytes / objs) / rate));

	*out_objs = (int64_t)(objs * scale);
	*out_bytes = (int64_t)(bytes * scale);
}

Test(gperf, heapprofile_lines_maps_and_gstats)
{
	capture_stderr();
	cr_assert_eq(load(HDR("heapprofile") LINES MAPS), 0);
	cr_assert_eq(snap.format, FORMAT_GPERFTOOLS);
	cr_assert_eq(snap.page_size, 4096);
	cr_assert_eq(snap.nlines, 2);
	cr_assert_eq(snap.lines[0].virt, 2048);
	cr_assert_eq(snap.lines[0].committed, 2048);
	cr_assert_eq(snap.lines[0].alloc, 3);
	cr_assert_eq(snap.lines[0].free, 1);
	cr_assert_eq(snap.lines[1].alloc, 2);
	cr_assert_eq(snap.lines[1].free, 1);
	/* Buckets get ids in order of first appearance, from 1. */
	cr_assert_eq(snap.lines[0].bucket->id, 1);
	cr_assert_eq(snap.lines[1].bucket->id, 2);
	cr_assert_eq(snap.lines[0].bucket->kind, ALLOC_MALLOC);
	cr_assert_eq(snap.lines[0].bucket->stack->depth, 2);
	cr_assert_eq(frame_addr(snap.lines[0].bucket, 0), 0x401136);
	cr_assert_eq(frame_addr(snap.lines[0].bucket, 1), 0x401200);
	cr_assert_eq(frame_addr(snap.lines[1].bucket, 1), 0x7f1000001234ULL);
	/* (A bucket made of a stack keeps no place: never redefined.) */
	cr_assert_null(model_bucket_place(&m, snap.lines[0].bucket).source);
	cr_assert_eq(m.buckets.n, 2);
	/* The trailer is the snapshot's own maps. */
	cr_assert(snap.has_own_maps);
	cr_assert_eq(snap.own_maps.n, 5);
	cr_assert_str_eq(snap.own_maps.v[1].name, "/opt/app/bin");
	cr_assert_str_eq(snap.own_maps.v[4].name, "");
	/* GLOBAL_STATS as far as a profile tells: the two profiled rows. */
	cr_assert_eq(snap.gs.present,
		     1u << GS_PROFILED_MALLOC | 1u << GS_PROFILED_MMAP);
	cr_assert_eq(snap.gs.row[GS_PROFILED_MALLOC].virt, 4096);
	cr_assert_eq(snap.gs.row[GS_PROFILED_MALLOC].committed, 4096);
	cr_assert_eq(snap.gs.row[GS_PROFILED_MMAP].virt, 0);
	/* The total is the profile's own sum (mmap lines included), and
	 * not a process total: not marked present. */
	cr_assert_eq(snap.gs.row[GS_TOTAL].committed,
		     snap.gs.row[GS_PROFILED_MMAP].committed + 4096);
	cr_assert_not(snap.has_global_stats);
	/* Only the once-per-run note about gperftools sizes. */
	cr_assert_eq(count(stderr_text(), "warning:"), 1, "%s",
		     stderr_text());
	cr_assert(strstr(stderr_text(), "g.0001.heap: a gperftools heap "
					"profile: sizes are the bytes the "
					"program asked for"));
}

Test(gperf, gperftools_note_once_per_run)
{
	capture_stderr();
	cr_assert_eq(load(HDR("heapprofile") LINES MAPS), 0);
	snapshot_release(&snap);
	cr_assert_eq(load(HDR("heapprofile") LINES MAPS), 0);
	cr_assert_eq(count(stderr_text(), "a gperftools heap profile"), 1);
	/* The same stacks in a later profile are the same buckets. */
	cr_assert_eq(m.buckets.n, 2);
}

Test(gperf, heap_tag_is_unsampled)
{
	cr_assert_eq(load(HDR("heap") LINES MAPS), 0);
	cr_assert_eq(snap.nlines, 2);
	cr_assert_eq(snap.lines[0].virt, 2048);
	cr_assert_eq(snap.lines[0].alloc, 3);
	cr_assert_eq(snap.gs.row[GS_PROFILED_MALLOC].committed, 4096);
}

/* A run's last dump lets the model's tables by content go before its
 * buckets are made; a dump read after finds its stacks' buckets again
 * (html reads a run's dumps twice). */
Test(gperf, last_dump_trims_and_buckets_are_found_again)
{
	const struct bucket *b0, *b1;
	size_t n;

	run.last = true;
	cr_assert_eq(load(HDR("heapprofile") LINES MAPS), 0);
	cr_assert(m.anon_stale || m.nanon, "the map is made after the trim");
	b0 = snap.lines[0].bucket;
	b1 = snap.lines[1].bucket;
	n = m.buckets.n;
	model_trim(&m);
	cr_assert(m.anon_stale);
	snapshot_release(&snap);
	run.last = false;
	cr_assert_eq(load(HDR("heapprofile") LINES
			  "     1:       16 [     1:       16] @ 0x00401170\n"
			  MAPS),
		     0);
	cr_assert_eq(snap.lines[0].bucket, b0);
	cr_assert_eq(snap.lines[1].bucket, b1);
	cr_assert_eq(m.buckets.n, n + 1);
	cr_assert_neq(snap.lines[2].bucket, b0);
}

Test(gperf, header_spacing_and_leading_blank_lines)
{
	cr_assert_eq(load("\n  \nheap profile:1:4096[5:8192]@heapprofile\n"
			  "2:2048[3:4096]@0x401136\n"
			  "  2  :  2048  [  3  :  4096  ]  @  0x401136\n"
			  MAPS), 0);
	cr_assert_eq(snap.nlines, 2);
	cr_assert_eq(snap.lines[0].bucket, snap.lines[1].bucket);
	cr_assert_eq(snap.gs.row[GS_PROFILED_MALLOC].committed, 4096);
}

Test(gperf, heap_v2_unsampled_as_pprof_does)
{
	const double rate = 524288;
	int64_t objs, bytes, aobjs, abytes;

	capture_stderr();
	cr_assert_eq(load("heap profile:      9:  9999999 [    10: 19999999] "
			  "@ heap_v2/524288\n"
			  "     2:     2048 [     6: 12582912] @ 0x00401136\n"
			  "     0:        0 [     1:      100] @ 0x00401150\n"
			  "     1:  1048576 [     1:  1048576] @ 0x00401160\n"
			  MAPS), 0);
	cr_assert_eq(snap.nlines, 3);
	/* Small allocations are scaled up a lot, in-use and alloc apart. */
	pprof_unsample(rate, 2, 2048, &objs, &bytes);
	pprof_unsample(rate, 6, 12582912, &aobjs, &abytes);
	cr_assert_eq(snap.lines[0].virt, bytes);
	cr_assert_eq(snap.lines[0].committed, bytes);
	cr_assert_eq(snap.lines[0].alloc, aobjs);
	cr_assert_eq(snap.lines[0].free, aobjs - objs);
	/* Known values: 1 KiB average at a 512 KiB period is x512.50016,
	 * truncated. */
	cr_assert_eq(objs, 1025);
	cr_assert_eq(bytes, 1049600);
	cr_assert_eq(aobjs, 6);
	/* Zero in use: nothing to scale, no division by zero. */
	cr_assert_eq(snap.lines[1].virt, 0);
	pprof_unsample(rate, 1, 100, &aobjs, &abytes);
	cr_assert_eq(snap.lines[1].alloc, aobjs);
	cr_assert_eq(snap.lines[1].free, aobjs);
	pprof_unsample(rate, 1, 1048576, &objs, &bytes);
	cr_assert_eq(snap.lines[2].virt, bytes);
	/*
	 * The sampled header says nothing about the real heap: the malloc row
	 * is the sum of the unsampled lines, and no "lost bytes" warning.
	 */
	cr_assert_eq(snap.gs.row[GS_PROFILED_MALLOC].committed,
		     snap.lines[0].virt + snap.lines[2].virt);
	cr_assert_null(strstr(stderr_text(), "stack lines hold"));
}

Test(gperf, heap_v2_zero_objects_with_bytes_is_an_error)
{
	/* (Nothing to unsample them by: pprof refuses them too.) */
	load_fails("heap profile: 0: 512 [0: 512] @ heap_v2/524288\n"
		   "     0:      512 [     0:      512] @ 0x00401136\n" MAPS,
		   "g.0001.heap:2: 0 objects holding bytes in a sampled "
		   "profile");
}

Test(gperf, heap_v2_rates_up_to_1_are_exact)
{
	cr_assert_eq(load("heap profile: 1: 1 [2: 3] @ heap_v2/1\n"
			  "     1:        1 [     2:        3] @ 0x00401136\n"
			  MAPS), 0);
	cr_assert_eq(snap.lines[0].virt, 1);
	cr_assert_eq(snap.lines[0].alloc, 2);
	snapshot_release(&snap);
	cr_assert_eq(load("heap profile: 1: 1 [2: 3] @ heap_v2/0\n"
			  "     1:        1 [     2:        3] @ 0x00401136\n"
			  MAPS), 0);
	cr_assert_eq(snap.lines[0].virt, 1);
	snapshot_release(&snap);
	cr_assert_eq(load("heap profile: 1: 1 [2: 3] @ heap_v2/\n"
			  "     1:        1 [     2:        3] @ 0x00401136\n"
			  MAPS), 0);
	cr_assert_eq(snap.lines[0].virt, 1);
	snapshot_release(&snap);
	load_fails("heap profile: 1: 2 [3: 4] @ heap_v2/x\n",
		   "g.0001.heap:1: invalid sampling rate 'heap_v2/x'");
}

Test(gperf, equal_alloc_columns_do_not_count)
{
	/* tcmalloc's sampled profiles print the in-use pair twice. */
	cr_assert_eq(load("heap profile: 2: 2048 [2: 2048] @ heap_v2/1\n"
			  "     2:     2048 [     2:     2048] @ 0x00401136\n"
			  MAPS), 0);
	cr_assert(snap.counts_unknown);
	cr_assert_not(snap.has_alloc_bytes);
	cr_assert_eq(snap.lines[0].alloc, 2); /* (the blocks in use) */
	cr_assert_eq(snap.lines[0].free, 0);
}

Test(gperf, go_heap_is_half_the_rate_and_named_by_comments)
{
	cr_assert_eq(load("heap profile: 1: 4096 [2: 8192] @ heap/2\n"
			  "1: 4096 [2: 8192] @ 0x4b3c31 0x4b3ecd 0x461121\n"
			  "#\t0x4b3c30\tmain.grow+0x50\t\t/src/g.go:19\n"
			  "#\t0x4b3c30\tmain.inl+0x50\t\t/src/g.go:9\n"
			  "#\t0x4b3ecc\tmain.main+0x8c\t\t/src/g.go:44\n"
			  "\n# runtime.MemStats\n# Alloc = 1\n"), 0);
	/* heap/2 is rate 1: exact. */
	cr_assert_eq(snap.lines[0].virt, 4096);
	cr_assert_eq(snap.lines[0].bucket->stack->depth, 3);
	{
		const struct frame *f0 = frame_get(
			&m.frames, snap.lines[0].bucket->stack->frames[0]);
		const struct frame *f2 = frame_get(
			&m.frames, snap.lines[0].bucket->stack->frames[2]);

		cr_assert_str_eq(f0->func, "main.inl");
		cr_assert_eq(f0->ninline, 1);
		cr_assert_str_eq(f0->inl[0].func, "main.grow");
		cr_assert_eq(f0->line, 9);
		cr_assert_str_eq(f0->file, "/src/g.go");
		cr_assert_not(f2->symbolized); /* goexit: not printed */
	}
}

Test(gperf, growth_and_unknown_types)
{
	cr_assert_eq(load("heap profile: 1: 2 [3: 4] @ growthz\n"
			  "1: 2 [3: 4] @ 0x401000\n" MAPS), 0);
	cr_assert(snap.counts_unknown);
	cr_assert_eq(snap.lines[0].virt, 2);
	snapshot_release(&snap);
	load_fails("heap profile: 1: 2 [3: 4] @ heapz\n",
		   "g.0001.heap:1: unknown profile type 'heapz' (dmprof reads "
		   "heapprofile, heap_v2/RATE, heapz_v2/RATE");
	load_fails("heap profile: 1: 2 [3: 4] @ heapprofilex\n",
		   "unknown profile type 'heapprofilex'");
}

Test(gperf, header_errors)
{
	load_fails("heap profile: 1: 2 [3: 4]\n",
		   "g.0001.heap:1: heap profile header without '@ TYPE'");
	load_fails("heap profile: 1: 2 [3: 4] @\n",
		   "heap profile header without '@ TYPE'");
	load_fails("heap profile: 1: 2 [3 4] @ heapprofile\n",
		   "g.0001.heap:1: malformed heap profile header 'heap profile: "
		   "1: 2 [3 4] @ heapprofile'");
	load_fails("heap profile: 1: 99999999999999999999 [3: 4] @ heap\n",
		   "g.0001.heap:1: number out of range in header");
}

Test(gperf, warn_commands_before_header)
{
	capture_stderr();
	cr_assert_eq(load("%warn This heap profile does not have any data in "
			  "it, because the application was run with heap "
			  "profiling turned off.\n"
			  "%other command ignored\n"
			  "\n"
			  "%warn second\n"
			  HDR("heapprofile") LINES MAPS), 0);
	cr_assert_eq(snap.nlines, 2);
	cr_assert(strstr(stderr_text(),
			 "/g.0001.heap:1: the profile warns: "
			 "This heap profile does not have any data in it, "));
	cr_assert(strstr(stderr_text(), "g.0001.heap:4: the profile warns: "
					"second\n"));
	cr_assert_null(strstr(stderr_text(), "other command"));
}

Test(gperf, percent_line_after_header_is_garbage)
{
	load_fails(HDR("heapprofile") "%warn late\n" MAPS,
		   "g.0001.heap:2: expected 'N: B [N: B] @ FRAMES', "
		   "found stack line "
		   "'%warn late'");
}

Test(gperf, zero_frame_lines_are_mmap)
{
	/* As in 2.10's files: the zero-frame mmap lines come first. */
	cr_assert_eq(load(HDR("heapprofile")
			  "     2:   131072 [     2:   131072] @   \n"
			  LINES MAPS), 0);
	cr_assert_eq(snap.nlines, 3);
	cr_assert_eq(snap.lines[0].bucket->kind, ALLOC_MMAP);
	cr_assert_eq(snap.lines[0].bucket->stack->depth, 0);
	cr_assert_eq(snap.lines[0].alloc, 2);
	cr_assert_eq(snap.lines[1].bucket->kind, ALLOC_MALLOC);
	cr_assert_eq(snap.gs.row[GS_PROFILED_MMAP].committed, 131072);
	cr_assert_eq(snap.gs.row[GS_PROFILED_MMAP].virt, 131072);
	cr_assert_eq(snap.gs.row[GS_PROFILED_MALLOC].committed, 4096);
}

/*
 * Zero-frame lines share the one empty stack, however many there are and
 * in whichever profile (comparing empty stacks must not hand memcmp a
 * NULL frames array: the sanitizer build would abort).
 */
Test(gperf, zero_frame_lines_share_one_bucket)
{
	cr_assert_eq(load(HDR("heapprofile")
			  "     2:   131072 [     2:   131072] @\n"
			  "     3:   196608 [     3:   196608] @\n"
			  LINES MAPS), 0);
	cr_assert_eq(snap.nlines, 4);
	cr_assert_eq(snap.lines[0].bucket, snap.lines[1].bucket);
	cr_assert_eq(snap.lines[0].bucket->kind, ALLOC_MMAP);
	cr_assert_eq(snap.gs.row[GS_PROFILED_MMAP].committed, 327680);
}

Test(gperf, tcmalloc_frame0_is_mmap_others_malloc)
{
	cr_assert_eq(load(HDR("heapprofile")
			  /* mmap hook frames of libtcmalloc on top */
			  "    26:  3407872 [    26:  3407872] @ "
			  "0x7f00000014d5 "
			  "0x7f0000001bb7 0x00401136\n"
			  /* libtcmalloc deeper in the stack: still malloc */
			  "     1:     2048 [     1:     2048] @ 0x00401136 "
			  "0x7f00000014d5\n"
			  /* libc frame 0: malloc */
			  "     1:     1024 [     1:     1024] @ "
			  "0x7f1000000010\n"
			  /* frame 0 in no mapping: malloc */
			  "     1:     1024 [     1:     1024] @ 0x00000010\n"
			  /* frame 0 in an anonymous mapping: malloc */
			  "     1:        0 [     1:      512] @ "
			  "0x7f2000000010\n"
			  MAPS), 0);
	cr_assert_eq(snap.lines[0].bucket->kind, ALLOC_MMAP);
	cr_assert_eq(snap.lines[1].bucket->kind, ALLOC_MALLOC);
	cr_assert_eq(snap.lines[2].bucket->kind, ALLOC_MALLOC);
	cr_assert_eq(snap.lines[3].bucket->kind, ALLOC_MALLOC);
	cr_assert_eq(snap.lines[4].bucket->kind, ALLOC_MALLOC);
	cr_assert_eq(snap.gs.row[GS_PROFILED_MMAP].committed, 3407872);
	/* The header counts malloc only: the mmap line is not "lost". */
	cr_assert_eq(snap.gs.row[GS_PROFILED_MALLOC].committed, 4096);
}

Test(gperf, tcmalloc_minimal_counts_too)
{
	cr_assert_eq(load(HDR("heapprofile")
			  "     1:     4096 [     1:     4096] @ "
			  "0x7f30000000ff\n"
			  "\nMAPPED_LIBRARIES:\n"
			  "7f3000000000-7f3000001000 r-xp 00000000 00:00 9 "
			  "/usr/lib/libtcmalloc_minimal.so.4.5.9\n"), 0);
	cr_assert_eq(snap.lines[0].bucket->kind, ALLOC_MMAP);
}

Test(gperf, without_maps_every_framed_line_is_malloc)
{
	capture_stderr();
	cr_assert_eq(load(HDR("heapprofile")
			  "     1:        1 [     1:        1] @\n"
			  "     1:     4096 [     1:     4096] @ "
			  "0x7f00000014d5\n"),
		     0);
	cr_assert_not(snap.has_own_maps);
	cr_assert_eq(snap.lines[0].bucket->kind, ALLOC_MMAP);
	cr_assert_eq(snap.lines[1].bucket->kind, ALLOC_MALLOC);
}

Test(gperf, negative_counts_are_signed)
{
	cr_assert_eq(load("heap profile: -5: -1024 [ 3: 4096] @ heapprofile\n"
			  "    -5:    -1024 [     3:     4096] @ 0x00401136\n"
			  MAPS), 0);
	cr_assert_eq(snap.lines[0].virt, -1024);
	cr_assert_eq(snap.lines[0].committed, -1024);
	cr_assert_eq(snap.lines[0].alloc, 3);
	cr_assert_eq(snap.lines[0].free, 8);
	cr_assert_eq(snap.gs.row[GS_PROFILED_MALLOC].committed, -1024);
}

Test(gperf, zero_count_with_bytes)
{
	cr_assert_eq(load("heap profile: 0: 512 [0: 512] @ heapprofile\n"
			  "     0:      512 [     0:      512] @ 0x00401136\n"
			  MAPS), 0);
	cr_assert_eq(snap.lines[0].virt, 512);
	cr_assert_eq(snap.lines[0].alloc, 0);
	cr_assert_eq(snap.lines[0].free, 0);
}

Test(gperf, alloc_only_lines_kept)
{
	/* Many real lines have "0: 0" in use and only alloc data. */
	cr_assert_eq(load("heap profile: 0: 0 [1: 64] @ heapprofile\n"
			  "     0:        0 [     1:       64] @ 0x00401136 "
			  "0x7f1000000010\n" MAPS), 0);
	cr_assert_eq(snap.nlines, 1);
	cr_assert_eq(snap.lines[0].virt, 0);
	cr_assert_eq(snap.lines[0].alloc, 1);
	cr_assert_eq(snap.lines[0].free, 1);
}

Test(gperf, cut_last_line_before_maps_kept_with_warning)
{
	capture_stderr();
	/* gperftools' 1 MiB buffer ran out: no blank line, no more frames. */
	cr_assert_eq(load(HDR("heapprofile")
			  "     2:     2048 [     3:     4096] @ 0x00401136\n"
			  "     1:     2048 [     2:     4096] @ 0x00401150 "
			  "0x7f1000001234\n"
			  "MAPPED_LIBRARIES:\n"
			  "00401000-00402000 r-xp 00001000 00:00 1 /opt/app\n"),
		     0);
	cr_assert_eq(snap.nlines, 2);
	cr_assert_eq(snap.lines[1].virt, 2048);
	cr_assert_eq(snap.lines[1].bucket->stack->depth, 2);
	cr_assert(snap.has_own_maps);
	cr_assert_eq(snap.own_maps.n, 1);
	cr_assert(strstr(stderr_text(),
			 "/g.0001.heap:3: the last stack line "
			 "is cut short (gperftools 2.10-2.15 cut profiles at "
			 "1 MiB); its stack may be incomplete\n"),
		  "%s", stderr_text());
	cr_assert_null(strstr(stderr_text(), "no MAPPED_LIBRARIES"));
}

Test(gperf, cut_last_line_broken_word_dropped)
{
	capture_stderr();
	cr_assert_eq(load(HDR("heapprofile")
			  "     2:     4096 [     3:     4096] @ 0x00401136 "
			  "0x7f10000\n"
			  "     1:        0 [     2:     4096] @ 0x00401150 "
			  "0x\n"
			  "MAPPED_LIBRARIES:\n"), 0);
	cr_assert_eq(snap.nlines, 2);
	cr_assert_eq(snap.lines[1].bucket->stack->depth, 1);
	cr_assert_eq(frame_addr(snap.lines[1].bucket, 0), 0x401150);
	cr_assert(strstr(stderr_text(), "g.0001.heap:3: the last stack line "
					"is cut short"));
}

/*
 * gperftools 2.10 writes a bucket's counts and "@", then each frame, and
 * stops where its 1 MiB buffer ends; so the cut last line can be
 * "N: B [N: B] @" with no frame at all.  2.10 writes the mmap buckets
 * first and the malloc buckets after, so such a line is a malloc one,
 * not a zero-frame mmap line.
 */
Test(gperf, cut_line_without_frames_stays_malloc)
{
	cr_assert_eq(load(HDR("heapprofile")
			  "     2:     2048 [     3:     4096] @ 0x00401136\n"
			  "     1:     2048 [     2:     4096] @\n"
			  "MAPPED_LIBRARIES:\n"
			  "00401000-00402000 r-xp 00001000 00:00 1 /opt/app\n"),
		     0);
	cr_assert_eq(snap.nlines, 2);
	cr_assert_eq(snap.lines[1].bucket->kind, ALLOC_MALLOC,
		     "a malloc line cut before its first frame read as mmap");
	cr_assert_eq(snap.gs.row[GS_PROFILED_MMAP].committed, 0);
}

Test(gperf, broken_word_in_earlier_line_is_an_error)
{
	load_fails(HDR("heapprofile")
		   "     1:        0 [     2:     4096] @ 0x00401150 0x\n"
		   "     2:     4096 [     3:     4096] @ 0x00401136\n"
		   "MAPPED_LIBRARIES:\n",
		   "g.0001.heap:2: invalid frame address '0x'");
	/* With a blank line before the maps nothing was cut. */
	load_fails(HDR("heapprofile")
		   "     1:        0 [     2:     4096] @ 0x00401150 0x\n"
		   "\nMAPPED_LIBRARIES:\n",
		   "g.0001.heap:2: invalid frame address '0x'");
}

Test(gperf, file_ends_inside_a_stack_line)
{
	capture_stderr();
	cr_assert_eq(load(HDR("heapprofile")
			  "     2:     2048 [     3:     4096] @ 0x00401136\n"
			  "     1:     2048 [     2:     4096] @ 0x00401150 "
			  "0x7f1000001234 "), 0);
	cr_assert_eq(snap.nlines, 2);
	cr_assert_eq(snap.lines[1].virt, 2048);
	cr_assert_eq(frame_addr(snap.lines[1].bucket, 0), 0x401150);
	cr_assert_not(snap.has_own_maps);
	cr_assert(strstr(stderr_text(), "g.0001.heap:3: the last stack line "
					"is cut short"));
	cr_assert(strstr(stderr_text(), "/g.0001.heap: no MAPPED_LIBRARIES: "
					"section (file cut short?); its frames "
					"cannot be symbolized"));
}

/*
 * When the file ends inside a stack line (a profiler killed while
 * writing, a full disk), the last word may be cut anywhere: a cut word
 * that still reads as hex ("0x7f1000001234" cut to "0x7f10") must not
 * become a frame.  (At the 1 MiB cap gperftools writes whole frames, so
 * there the last word is sound; at end of file it is not.)
 */
Test(gperf, file_ends_inside_a_frame_keeps_no_cut_address)
{
	capture_stderr();
	cr_assert_eq(load(HDR("heapprofile")
			  "     2:     2048 [     3:     4096] @ 0x00401136\n"
			  "     1:     2048 [     2:     4096] @ 0x00401150 "
			  "0x7f10"), 0);
	cr_assert_eq(snap.nlines, 2);
	cr_assert_eq(frame_addr(snap.lines[1].bucket, 0), 0x401150);
	if (snap.lines[1].bucket->stack->depth > 1)
		cr_assert_fail("the cut word became frame %#" PRIx64,
			       frame_addr(snap.lines[1].bucket, 1));
}

Test(gperf, file_ends_inside_a_broken_frame)
{
	capture_stderr();
	cr_assert_eq(load(HDR("heapprofile")
			  "     2:     4096 [     3:     4096] @ 0x00401136 "
			  "0x"),
		     0);
	cr_assert_eq(snap.nlines, 1);
	cr_assert_eq(snap.lines[0].bucket->stack->depth, 1);
}

Test(gperf, file_ends_inside_the_counts_is_an_error)
{
	load_fails(HDR("heapprofile")
		   "     2:     2048 [     3:     4096] @ 0x00401136\n"
		   "     1:     20",
		   "g.0001.heap:3: expected 'N: B [N: B] @ FRAMES', "
		   "found stack line "
		   "'     1:     20'");
}

Test(gperf, missing_maps_section_warns)
{
	capture_stderr();
	cr_assert_eq(load(HDR("heapprofile") LINES), 0);
	cr_assert_eq(snap.nlines, 2);
	cr_assert_not(snap.has_own_maps);
	cr_assert(strstr(stderr_text(),
			 "/g.0001.heap: no MAPPED_LIBRARIES: "
			 "section (file cut short?); its frames cannot be "
			 "symbolized\n"));
	/* Complete last line and a newline: nothing was cut. */
	cr_assert_null(strstr(stderr_text(), "cut short ("));
}

Test(gperf, header_only)
{
	capture_stderr();
	cr_assert_eq(load("heap profile: 0: 0 [0: 0] @ heapprofile\n"), 0);
	cr_assert_eq(snap.nlines, 0);
	cr_assert_not_null(snap.lines);
	cr_assert(strstr(stderr_text(), "no MAPPED_LIBRARIES: section"));
}

Test(gperf, header_then_maps_no_lines)
{
	capture_stderr();
	cr_assert_eq(load("heap profile: 0: 0 [0: 0] @ heapprofile\n"
			  "MAPPED_LIBRARIES:\n"
			  "00401000-00402000 r-xp 00001000 00:00 1 /opt/app\n"),
		     0);
	cr_assert_eq(snap.nlines, 0);
	cr_assert(snap.has_own_maps);
	cr_assert_null(strstr(stderr_text(), "cut short"));
}

Test(gperf, pprof_memory_map_header)
{
	cr_assert_eq(load(HDR("heapprofile") LINES
			  "\n--- Memory map: ---\n"
			  "00401000-00402000 r-xp 00001000 00:00 1 /opt/app\n"),
		     0);
	cr_assert(snap.has_own_maps);
	cr_assert_eq(snap.own_maps.n, 1);
}

Test(gperf, garbage_in_maps_is_skipped_with_warning)
{
	capture_stderr();
	cr_assert_eq(load(HDR("heapprofile") LINES
			  "\nMAPPED_LIBRARIES:\n"
			  "00401000-00402000 r-xp 00001000 00:00 1 /opt/app\n"
			  "not a maps line\n"), 0);
	cr_assert(snap.has_own_maps);
	cr_assert_eq(snap.own_maps.n, 1);
	cr_assert(strstr(stderr_text(), "g.0001.heap:7: 1 line of its maps "
					"is not maps lines; skipped"),
		  "%s", stderr_text());
}

Test(gperf, crlf_line_endings)
{
	cr_assert_eq(load("heap profile: 1: 2048 [3: 4096] @ heapprofile\r\n"
			  "     2:     2048 [     3:     4096] @ 0x00401136\r\n"
			  "\r\nMAPPED_LIBRARIES:\r\n"
			  "00401000-00402000 r-xp 00001000 00:00 1 "
			  "/opt/app\r\n"),
		     0);
	cr_assert_eq(snap.nlines, 1);
	cr_assert_eq(frame_addr(snap.lines[0].bucket, 0), 0x401136);
	cr_assert_str_eq(snap.own_maps.v[0].name, "/opt/app");
}

Test(gperf, garbage_lines)
{
	load_fails(HDR("heapprofile") "hello world\n" MAPS,
		   "g.0001.heap:2: expected 'N: B [N: B] @ FRAMES', "
		   "found stack line "
		   "'hello world'");
	load_fails(HDR("heapprofile") LINES "     1:        0 [ 2: 3] 0x1\n"
		   MAPS,
		   "g.0001.heap:4: expected 'N: B [N: B] @ FRAMES'");
	load_fails(HDR("heapprofile") "     1:     2048 [     2:     4096] @ "
		   "0x00401150 0xZZ 0x00401200\n" MAPS,
		   "g.0001.heap:2: invalid frame address '0xZZ'");
	load_fails(HDR("heapprofile") "     1:     2048 [     2:     4096] @ "
		   "0x00401150 main+0x10\n" MAPS,
		   "g.0001.heap:2: invalid frame address 'main+0x10'");
	/* Non-printable bytes are quoted in the message. */
	load_fails(HDR("heapprofile") "\x01\xff junk\n" MAPS,
		   "g.0001.heap:2: expected 'N: B [N: B] @ FRAMES', "
		   "found stack line "
		   "'\\x01\\xff junk'");
}

Test(gperf, numbers_beyond_64_bits)
{
	load_fails(HDR("heapprofile")
		   "     1: 99999999999999999999 [ 2: 4096] @ 0x00401136\n"
		   MAPS,
		   "g.0001.heap:2: number out of range in stack line");
	load_fails(HDR("heapprofile")
		   "     1: 9223372036854775808 [ 2: 4096] @ 0x00401136\n"
		   MAPS,
		   "g.0001.heap:2: number out of range in stack line");
	load_fails(HDR("heapprofile")
		   "     1: 2048 [ 2: 4096] @ 0x10000000000000000\n" MAPS,
		   "g.0001.heap:2: out-of-range frame address "
		   "'0x10000000000000000'");
	/* The largest values still fit. */
	cr_assert_eq(load(HDR("heapprofile")
			  "     1: 9223372036854775807 [ 2: 4096] @ "
			  "0xffffffffffffffff\n" MAPS), 0);
	cr_assert_eq(snap.lines[0].virt, INT64_MAX);
	cr_assert_eq(frame_addr(snap.lines[0].bucket, 0), UINT64_MAX);
}

Test(gperf, nul_bytes)
{
	static const char text[] =
		"heap profile: 1: 2048 [3: 4096] @ heapprofile\n"
		"     2:     2048 [\0    3:     4096] @ 0x00401136\n";

	capture_stderr();
	cr_assert_eq(load_len(text, (long)sizeof(text) - 1), -1);
	cr_assert(strstr(stderr_text(), "g.0001.heap:2: NUL byte in line"),
		  "%s", stderr_text());
}

Test(gperf, nul_byte_in_header)
{
	static const char text[] =
		"heap profile: 1: 2048 [3: 4096] @ heap\0profile\n";

	capture_stderr();
	cr_assert_eq(load_len(text, (long)sizeof(text) - 1), -1);
	cr_assert(strstr(stderr_text(), "g.0001.heap:1: NUL byte in line"),
		  "%s", stderr_text());
}

Test(gperf, lost_bytes_warning)
{
	capture_stderr();
	cr_assert_eq(load(HDR("heapprofile")
			  "     2:   131072 [     2:   131072] @\n"
			  "     2:     2048 [     3:     4096] @ 0x00401136\n"
			  MAPS), 0);
	cr_assert(strstr(stderr_text(),
			 "/g.0001.heap: its stack lines hold "
			 "2048 of the 4096 bytes in use the header counts; the "
			 "rest was lost (gperftools 2.10-2.15 cut profiles at "
			 "1 MiB)\n"),
		  "%s", stderr_text());
	/* The header stays the malloc row: it is what the process held. */
	cr_assert_eq(snap.gs.row[GS_PROFILED_MALLOC].committed, 4096);
	cr_assert_eq(snap.gs.row[GS_PROFILED_MMAP].committed, 131072);
}

Test(gperf, no_lost_bytes_warning_when_lines_add_up)
{
	capture_stderr();
	cr_assert_eq(load(HDR("heapprofile") LINES MAPS), 0);
	cr_assert_null(strstr(stderr_text(), "stack lines hold"));
	snapshot_release(&snap);
	/* More in the lines than the header: not a loss. */
	cr_assert_eq(load("heap profile: 1: 100 [1: 100] @ heapprofile\n"
			  LINES MAPS), 0);
	cr_assert_null(strstr(stderr_text(), "stack lines hold"));
}

Test(gperf, same_stack_twice_one_bucket)
{
	cr_assert_eq(load(HDR("heapprofile")
			  "     2:     2048 [     3:     4096] @ 0x00401136 "
			  "0x00401200\n"
			  "     1:     1024 [     1:     1024] @ 0x00401150\n"
			  "     1:     1024 [     1:     1024] @ 0x00401136 "
			  "0x00401200\n" MAPS), 0);
	cr_assert_eq(snap.nlines, 3);
	cr_assert_eq(m.buckets.n, 2);
	cr_assert_eq(snap.lines[0].bucket, snap.lines[2].bucket);
	cr_assert_neq(snap.lines[0].bucket, snap.lines[1].bucket);
	/* Each line keeps its own numbers. */
	cr_assert_eq(snap.lines[0].virt, 2048);
	cr_assert_eq(snap.lines[2].virt, 1024);
	/* A prefix of a stack is another stack. */
	snapshot_release(&snap);
	cr_assert_eq(load(HDR("heapprofile")
			  "     1:     1024 [     1:     1024] @ 0x00401136\n"
			  MAPS), 0);
	cr_assert_eq(m.buckets.n, 3);
}

Test(gperf, deep_stacks)
{
	struct strbuf sb = STRBUF_INIT;

	sb_addstr(&sb, HDR("heapprofile"));
	sb_addstr(&sb, "     1:     4096 [     1:     4096] @");
	for (int i = 0; i < 100; i++)
		sb_addf(&sb, " 0x%08x", 0x401000 + i);
	sb_addstr(&sb, "\n" MAPS);
	cr_assert_eq(load(sb.buf), 0);
	cr_assert_eq(snap.lines[0].bucket->stack->depth, 100);
	cr_assert_eq(frame_addr(snap.lines[0].bucket, 99), 0x401000 + 99);
	sb_release(&sb);
}

Test(gperf, empty_and_blank_files_are_not_gperftools)
{
	/* Only '%' commands: no profile at all. */
	load_fails("%warn only\n\n", "g.0001.heap:2: empty dump");
	load_fails("", "g.0001.heap:1: empty dump");
}

/* A file that fails half-way leaves the model as it was: its stacks and
 * frames are neither symbolized nor counted. */
Test(gperf, failed_file_leaves_the_model_as_it_was)
{
	size_t frames, stacks;

	cr_assert_eq(load(HDR("heapprofile") LINES MAPS), 0);
	snapshot_release(&snap);
	frames = m.frames.n;
	stacks = m.stacks.n;
	capture_stderr();
	cr_assert_eq(load(HDR("heapprofile")
			  "     1:     1024 [     1:     1024] @ 0x00401999 "
			  "0x00401998\n"
			  "     1:     1024 [     1:     1024] @ 0x00401997\n"
			  "     1:     1024 [     1:     1024] @ 0xzz\n" MAPS),
		     -1);
	cr_assert(strstr(stderr_text(), "g.0001.heap:4: invalid frame "
					"address '0xzz'"),
		  "%s", stderr_text());
	cr_assert_eq(m.frames.n, frames);
	cr_assert_eq(m.stacks.n, stacks);
	/* The tables still find what was there, and take what is new. */
	cr_assert_eq(load(HDR("heapprofile") LINES
			  "     1:     1024 [     1:     1024] @ 0x00401999\n"
			  MAPS), 0);
	cr_assert_eq(m.stacks.n, stacks + 1);
	cr_assert_eq(m.frames.n, frames + 1);
	cr_assert_eq(snap.lines[0].bucket->index, 0);
}

/*
 * Where the file's end names no libtcmalloc, each line's bucket is made
 * as it is read (build makes none): malloc's, a zero-frame line's mmap's
 * and the lines after it made by build, in the lines' order either way.
 */
Test(gperf, buckets_made_as_read_where_no_tcmalloc)
{
	cr_assert_eq(load(HDR("heapprofile")
			  "     2:     2048 [     3:     4096] @ 0x00401136\n"
			  "     2:   131072 [     2:   131072] @\n"
			  "     1:     2048 [     2:     4096] @ 0x00401150\n"
			  "     1:     1024 [     1:     1024] @ 0x00401136\n"
			  "\nMAPPED_LIBRARIES:\n"
			  "00401000-00402000 r-xp 00001000 00:00 1 /opt/app\n"),
		     0);
	cr_assert_eq(snap.nlines, 4);
	cr_assert_eq(m.buckets.n, 3);
	for (size_t i = 0; i < 3; i++)
		cr_assert_eq(snap.lines[i].bucket->index, i);
	cr_assert_eq(snap.lines[3].bucket, snap.lines[0].bucket);
	cr_assert_eq(snap.lines[0].bucket->kind, ALLOC_MALLOC);
	cr_assert_eq(snap.lines[1].bucket->kind, ALLOC_MMAP);
	cr_assert_eq(snap.lines[2].bucket->kind, ALLOC_MALLOC);
	/* (Each line's key, made with its bucket, early or late.) */
	cr_assert_not_null(snap.line_index);
	for (size_t i = 0; i < snap.nlines; i++)
		cr_assert_eq(snap.line_index[i],
			     bucket_key(snap.lines[i].bucket), "line %zu", i);
	cr_assert_eq(snap.gs.row[GS_PROFILED_MMAP].committed, 131072);
	/* (The header's count.) */
	cr_assert_eq(snap.gs.row[GS_PROFILED_MALLOC].committed, 4096);
}

/*
 * The maps hold libtcmalloc, but further from the end than is looked at
 * before the lines: the buckets made as they were read go, and the
 * lines' own are made (the hook's line mmap's), numbered as if none had
 * been.
 */
Test(gperf, buckets_made_again_where_tcmalloc_is_far_from_the_end)
{
	struct strbuf sb = STRBUF_INIT;

	sb_addstr(&sb, HDR("heapprofile")
		  "    26:  3407872 [    26:  3407872] @ 0x7f00000014d5 "
		  "0x00401136\n"
		  "     2:     4096 [     2:     4096] @ 0x00401136\n"
		  "\nMAPPED_LIBRARIES:\n"
		  "7f0000000000-7f0000010000 r-xp 00000000 00:00 99 "
		  "/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4\n");
	while (sb.len < (100u << 10))
		sb_addstr(&sb, "00401000-00402000 r-xp 00001000 00:00 1 "
			       "/opt/app\n");
	cr_assert_eq(load_len(sb.buf, (long)sb.len), 0);
	cr_assert_eq(m.buckets.n, 2);
	cr_assert_eq(snap.lines[0].bucket->kind, ALLOC_MMAP);
	cr_assert_eq(snap.lines[0].bucket->index, 0);
	cr_assert_eq(snap.lines[1].bucket->kind, ALLOC_MALLOC);
	cr_assert_eq(snap.lines[1].bucket->index, 1);
	cr_assert_eq(snap.line_index[0], BUCKET_KEY_MMAP);
	cr_assert_eq(snap.line_index[1], 1);
	cr_assert_eq(snap.gs.row[GS_PROFILED_MMAP].committed, 3407872);
	/* The model finds them again, and makes no other. */
	cr_assert_eq(model_stack_bucket(&m, ALLOC_MMAP,
					snap.lines[0].bucket->stack, "x", 1),
		     snap.lines[0].bucket);
	cr_assert_eq(m.buckets.n, 2);
	sb_release(&sb);
}

/* A file that fails after buckets were made as it was read leaves none
 * of them, nor their stacks. */
Test(gperf, failed_file_leaves_no_bucket_made_as_read)
{
	capture_stderr();
	cr_assert_eq(load(HDR("heapprofile")
			  "     1:     1024 [     1:     1024] @ 0x00401999\n"
			  "     1:     1024 [     1:     1024] @ 0x00401997\n"
			  "     1:     1024 [     1:     1024] @ 0xzz\n"
			  "\nMAPPED_LIBRARIES:\n"
			  "00401000-00402000 r-xp 00001000 00:00 1 /opt/app\n"),
		     -1);
	cr_assert_eq(m.buckets.n, 0);
	cr_assert_eq(m.stacks.n, 0);
	snapshot_release(&snap);
	cr_assert_eq(load(HDR("heapprofile")
			  "     1:     1024 [     1:     1024] @ 0x00401997\n"
			  "\nMAPPED_LIBRARIES:\n"
			  "00401000-00402000 r-xp 00001000 00:00 1 /opt/app\n"),
		     0);
	cr_assert_eq(m.buckets.n, 1);
	cr_assert_eq(snap.lines[0].bucket->index, 0);
	cr_assert_eq(snap.lines[0].bucket->kind, ALLOC_MALLOC);
}

/*
 * Comments that drop the first frames (as Go's leave out the runtime's)
 * do not change the line's kind: that is judged by the first address in
 * the file.
 */
Test(gperf, renamed_first_frame_keeps_its_kind)
{
	cr_assert_eq(load(HDR("heapprofile")
			  "    26:  3407872 [    26:  3407872] @ "
			  "0x7f00000014d5 0x00401136\n"
			  "#\t0x00401135\tmap_it+0x4\t\t/src/t.cc:9\n"
			  "     1:     2048 [     1:     2048] @ 0x00401136\n"
			  MAPS), 0);
	cr_assert_eq(snap.lines[0].bucket->kind, ALLOC_MMAP);
	cr_assert_eq(snap.lines[0].bucket->stack->depth, 1);
	cr_assert_str_eq(frame_get(&m.frames,
				   snap.lines[0].bucket->stack->frames[0])
				 ->func,
			 "map_it");
	cr_assert_eq(snap.lines[1].bucket->kind, ALLOC_MALLOC);
}

/* Many blocks' worth of lines, each cut at a different place by the
 * blocks, read as one file read whole would be. */
Test(gperf, profile_of_many_blocks)
{
	struct strbuf sb = STRBUF_INIT;
	int64_t sum = 0;
	size_t n = 60000;

	sb_addf(&sb, "heap profile: %zu: %zu [%zu: %zu] @ heapprofile\n", n,
		n * 3 * (n + 1) / 2, n, n * 3 * (n + 1) / 2);
	for (size_t i = 1; i <= n; i++) {
		sb_addf(&sb, "1: %zu [1: %zu] @", i * 3, i * 3);
		for (size_t k = 0; k < 1 + i % 7; k++)
			sb_addf(&sb, " 0x%zx", 0x401000 + (i * 7 + k) % 4096);
		sb_addch(&sb, '\n');
	}
	sb_addstr(&sb, MAPS);
	cr_assert_gt(sb.len, 2 * STREAM_BLOCK);
	cr_assert_eq(load(sb.buf), 0);
	cr_assert_eq(snap.nlines, n);
	for (size_t i = 0; i < n; i++) {
		cr_assert_eq(snap.lines[i].bucket->stack->depth,
			     1 + (i + 1) % 7);
		sum += snap.lines[i].committed;
	}
	cr_assert_eq(sum, (int64_t)(n * 3 * (n + 1) / 2));
	/* The lines are counted across the blocks: a bad one after them
	 * is said at its own. */
	snapshot_release(&snap);
	model_free(&m);
	model_init(&m);
	sb.len -= strlen(MAPS);
	sb_addstr(&sb, "1: 3 [1: 3] @ 0xnothex\n" MAPS);
	capture_stderr();
	cr_assert_neq(load(sb.buf), 0);
	cr_assert(strstr(stderr_text(), ".heap:60002:"), "%s", stderr_text());
	sb_release(&sb);
}

/* What loading TEXT gives with DMPROF_THREADS=THREADS: a digest of the
 * snapshot and the model, and what was said, in OUT. */
static void digest(const char *text, long len, const char *threads,
		   struct strbuf *out)
{
	struct model mm;
	struct snapshot ss;
	int rc;

	setenv("DMPROF_THREADS", threads, 1);
	model_init(&mm);
	capture_stderr();
	rc = profile_load(&ss, write_file("d.0001.heap", text, len), &mm,
			  NULL);
	sb_addf(out, "rc %d\n%s\n", rc, stderr_text());
	for (size_t i = 0; rc == 0 && i < ss.nlines; i++) {
		const struct bucket *b = ss.lines[i].bucket;

		sb_addf(out, "%zu %lld %lld %lld %lld %s %u:", i,
			(long long)ss.lines[i].virt,
			(long long)ss.lines[i].alloc,
			(long long)ss.lines[i].free,
			(long long)ss.lines[i].alloc_bytes,
			alloc_kind_name((enum alloc_kind)b->kind),
			b->stack->depth);
		for (uint32_t k = 0; k < b->stack->depth; k++) {
			const struct frame *f =
				frame_get(&mm.frames, b->stack->frames[k]);

			sb_addf(out, " %llx/%s", (unsigned long long)f->addr,
				f->func ? f->func : "-");
		}
		sb_addch(out, '\n');
	}
	sb_addf(out, "maps %zu frames %zu stacks %zu\n",
		rc == 0 ? ss.own_maps.n : 0, mm.frames.n, mm.stacks.n);
	if (rc == 0)
		snapshot_release(&ss);
	model_free(&mm);
}

/* ONE and TWO the same digest (megabytes of it: where they part is
 * said, not all of them). */
static void same_digests(const struct strbuf *one, const struct strbuf *two)
{
	for (size_t k = 0; k < one->len || k < two->len; k++)
		if (k >= one->len || k >= two->len ||
		    one->buf[k] != two->buf[k])
			cr_assert_fail("one core and two part at byte %zu: "
				       "'%.80s' / '%.80s'", k,
				       k < one->len ? one->buf + k : "",
				       k < two->len ? two->buf + k : "");
}

/*
 * On two cores a profile is read by a thread and interned by another:
 * the snapshot, the model and what is said are those of one core, for
 * the lines the fast way takes and those it does not, wherever the
 * thread's blocks end.
 */
Test(gperf, two_cores_read_as_one)
{
	static const char *const texts[] = {
		HDR("heapprofile") LINES MAPS,
		/* cut at the cap, a broken word, then the maps at once */
		HDR("heapprofile") LINES
		"     1:     2048 [     2:     4096] @ 0x00401150 0x7f10zz"
		"MAPPED_LIBRARIES:\n"
		"00401000-00402000 r-xp 00001000 00:00 1 /opt/app\n",
		/* a broken line before another: an error */
		HDR("heapprofile") "1: 2 [3: 4] @ 0x10 0xzz\n" LINES MAPS,
		/* a NUL, and blank lines and comments between stack lines */
		HDR("heapprofile") LINES "\n# c\n 1: 2 [3: 4] @ 0x1\0x2\n",
		/* the end inside a stack line */
		HDR("heapprofile") LINES "     1:     2048 [     2:     4096] @ "
		"0x00401150 0x7f10",
		/* Go's comments, a frame renamed, one dropped */
		"heap profile: 1: 4096 [2: 8192] @ heap/2\n"
		"1: 4096 [2: 8192] @ 0x4b3c31 0x4b3ecd 0x461121\n"
		"#\t0x4b3c30\tmain.grow+0x50\t\t/src/g.go:19\n"
		"#\t0x4b3ecc\tmain.main+0x8c\t\t/src/g.go:44\n"
		"\n1: 4096 [2: 8192] @ 0x4b3ecd 0x461121\n"
		"#\t0x4b3ecc\tmain.main+0x8c\t\t/src/g.go:44\n",
		/* pprof's map, and a sampled profile */
		"heap profile: 2: 4096 [3: 8192] @ heap_v2/524288\n"
		" 2: 4096 [ 3: 8192] @ 0x401136 0x401200\n"
		"\n--- Memory map: ---\n"
		"00400000-00402000 r-xp 00000000 00:00 1 /opt/app\n",
	};
	struct strbuf one = STRBUF_INIT, two = STRBUF_INIT, big = STRBUF_INIT;

	for (size_t i = 0; i < ARRAY_SIZE(texts); i++) {
		/* (The NUL case is counted with its length.) */
		long len = i == 3 ? (long)sizeof(HDR("heapprofile") LINES
						  "\n# c\n 1: 2 [3: 4] @ 0x1\0x2\n") - 1
				  : -1;

		sb_reset(&one);
		sb_reset(&two);
		digest(texts[i], len, "1", &one);
		digest(texts[i], len, "2", &two);
		cr_assert_str_eq(one.buf, two.buf, "profile %zu", i);
	}
	/* Many blocks, a comment now and then, a line longer than a block,
	 * a broken line last before the maps. */
	sb_addstr(&big, HDR("heapprofile"));
	for (size_t i = 0; i < 40000; i++) {
		sb_addf(&big, "%zu: %zu [%zu: %zu] @", i % 3, i, i % 5, i * 2);
		for (size_t k = 0; k < 2 + i % 9; k++)
			sb_addf(&big, " 0x%zx", 0x401000 + (i * 13 + k) % 8192);
		sb_addstr(&big, i % 997 ? "\n" : "\n# a comment\n");
		if (i == 20000) {
			sb_addstr(&big, "1: 1 [1: 1] @");
			for (size_t k = 0; k < 200000; k++)
				sb_addstr(&big, " 0x401001");
			sb_addch(&big, '\n');
		}
	}
	sb_addstr(&big, "1: 1 [1: 1] @ 0x401000 0x40zz" MAPS);
	sb_reset(&one);
	sb_reset(&two);
	digest(big.buf, -1, "1", &one);
	digest(big.buf, -1, "2", &two);
	cr_assert(!strncmp(one.buf, "rc 0", 4), "%.300s", one.buf);
	same_digests(&one, &two);
	sb_release(&one);
	sb_release(&two);
	sb_release(&big);
}

/*
 * A profile big enough for its blocks to be read on a thread of their
 * own (stream_read_behind: 12 MB, more than four blocks after the first)
 * and broken: cut in the middle of a stack line at its end, or with a
 * broken word in a line far into it.  Two cores say the same as one, at
 * the same line.
 */
Test(gperf, big_and_broken_read_behind_as_on_one_core)
{
	struct strbuf big = STRBUF_INIT, one = STRBUF_INIT, two = STRBUF_INIT;
	size_t cut, bad;

	sb_addstr(&big, HDR("heapprofile"));
	for (size_t i = 0; big.len < (12u << 20); i++) {
		sb_addf(&big, "%zu: %zu [%zu: %zu] @", 1 + i % 3, 16 + i,
			1 + i % 5, 32 + i);
		for (size_t k = 0; k < 4 + i % 11; k++)
			sb_addf(&big, " 0x%zx", 0x401000 + (i * 31 + k) % 65536);
		sb_addch(&big, '\n');
	}
	/* Cut in a line's middle: the end of a file being written. */
	cut = big.len - 7;
	digest(big.buf, (long)cut, "1", &one);
	digest(big.buf, (long)cut, "2", &two);
	cr_assert(!strncmp(one.buf, "rc 0", 4), "%.300s", one.buf);
	same_digests(&one, &two);
	/* A broken word ten megabytes in: an error at that line. */
	bad = 10u << 20;
	while (big.buf[bad] != 'x')
		bad++;
	big.buf[bad] = 'z';
	sb_reset(&one);
	sb_reset(&two);
	digest(big.buf, (long)big.len, "1", &one);
	digest(big.buf, (long)big.len, "2", &two);
	cr_assert(strncmp(one.buf, "rc 0", 4), "%.300s", one.buf);
	cr_assert(strstr(one.buf, "invalid frame address"), "%.300s", one.buf);
	same_digests(&one, &two);
	unsetenv("DMPROF_THREADS");
	sb_release(&big);
	sb_release(&one);
	sb_release(&two);
}

/*
 * Read on two cores, the model's frames are those the thread that parses
 * the lines met first, only appended, and its table is taken over at the
 * end (frames_append, frames_adopt), sized for the file from the start:
 * each address is one frame, found by its address afterwards, and the
 * frames the model had keep their ids.
 */
Test(gperf, frames_of_the_thread_taken_over)
{
	enum { NLINES = 3000, DEPTH = 4 };
	struct strbuf sb = STRBUF_INIT;

	sb_addstr(&sb, HDR("heapprofile"));
	for (int i = 0; i < NLINES; i++) {
		sb_addstr(&sb, "     1:       16 [     1:       16] @");
		for (int j = 0; j < DEPTH; j++)
			sb_addf(&sb, " 0x%x", 0x100000 + 16 * (DEPTH * i + j));
		/* (And a frame met again and again.) */
		sb_addstr(&sb, " 0x401136\n");
	}
	sb_addstr(&sb, MAPS);
	/* Frames the model had (an earlier dump's): the thread's table,
	 * larger, starts with them. */
	for (uint32_t k = 0; k < 100; k++)
		cr_assert_eq(frames_intern(&m.frames, 0x100000 + 16 * k), k);
	setenv("DMPROF_THREADS", "2", 1);
	capture_stderr();
	cr_assert_eq(load(sb.buf), 0, "%s", stderr_text());
	unsetenv("DMPROF_THREADS");
	cr_assert_eq(m.frames.n, NLINES * DEPTH + 1);
	for (uint32_t k = 0; k <= NLINES * DEPTH; k++) {
		uint64_t a = k < NLINES * DEPTH ? 0x100000 + 16 * (uint64_t)k
					       : 0x401136;
		uint32_t id = frames_intern(&m.frames, a);

		cr_assert_neq(id, FRAME_NONE);
		cr_assert_eq(frame_get(&m.frames, id)->addr, a);
		cr_assert(k >= 100 || id == k);
	}
	cr_assert_eq(m.frames.n, NLINES * DEPTH + 1, "a frame interned twice");
	sb_release(&sb);
}


/*
 * Frames of every width, runs of one width and widths that change at
 * every frame, blanks of one space or more and tabs, a line that ends
 * in a blank: each line's frames what a word at a time gives (the
 * reader guesses where the next frame is from the width of the last).
 */
Test(gperf, frames_of_any_width_and_blank)
{
	enum { NLINES = 2000, MAXD = 40 };
	struct strbuf sb = STRBUF_INIT;
	static uint64_t want[NLINES][MAXD];
	static uint32_t depth[NLINES];
	uint64_t seed = 0x2545f4914f6cdd1dULL;
	int64_t total = 0;

	for (int i = 0; i < NLINES; i++)
		total += i + 1;
	sb_addf(&sb, "heap profile: %6d: %8" PRId64 " [%6d: %8" PRId64
		     "] @ heapprofile\n", NLINES, total, NLINES, total);
	for (int i = 0; i < NLINES; i++) {
		depth[i] = 1 + (uint32_t)(seed % (MAXD - 1));
		sb_addf(&sb, "%6d: %8d [%6d: %8d] @", 1, i + 1, 1, i + 1);
		/* (The first frame the line's own: the lines' stacks all
		 * differ.) */
		want[i][0] = 0x1000000ULL + (uint64_t)i;
		sb_addf(&sb, " 0x%" PRIx64, want[i][0]);
		frames_text(&sb, &seed, depth[i] - 1, i % 2, want[i] + 1);
		sb_addstr(&sb, i % 5 == 0 ? " \n" : "\n");
	}
	capture_stderr();
	cr_assert_eq(load_len(sb.buf, (long)sb.len), 0, "%s", stderr_text());
	sb_release(&sb);
	cr_assert_eq(snap.nlines, NLINES);
	for (int i = 0; i < NLINES; i++) {
		const struct bucket *b = snap.lines[i].bucket;

		cr_assert_eq(snap.lines[i].committed, i + 1);
		cr_assert_eq(b->stack->depth, depth[i], "line %d", i);
		for (uint32_t k = 0; k < depth[i]; k++)
			cr_assert_eq(frame_addr(b, k), want[i][k],
				     "line %d frame %u", i, k);
	}
}
