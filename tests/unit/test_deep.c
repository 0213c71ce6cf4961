/* The deep-dump reader. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "bucketfile.h"
#include "deep.h"
#include "profile.h"
#include "helpers.h"
#include "util.h"

static struct model m;
static struct read_run run; /* the readers' memory of the run */
static struct snapshot snap;

static void setup(void)
{
	const char *p = write_file("r.buckets", "1 malloc 0x10 0x20\n"
						"3 mmap 0x30\n"
						"12 mmap 0x40\n", -1);

	model_init(&m);
	memset(&run, 0, sizeof(run));
	cr_assert_eq(bucketfile_load(&m, p), 0);
}

static void teardown(void)
{
	snapshot_release(&snap);
	model_free(&m);
}

TestSuite(deep, .init = setup, .fini = teardown);

#define GS_ALL                                                               \
	"GLOBAL_STATS:\n"                                                    \
	"# total (1) == profiled-mmap (1) + nonprofiled-* (0)\n"             \
	"                               virtual    committed\n"              \
	"                    total   1022775296     64831488\n"              \
	"                   absent            0            0\n"              \
	"                file-exec    207237120     32600064\n"              \
	"             file-nonexec    194805760     10862592\n"              \
	"                anonymous    620589056     21233664\n"              \
	"                    stack       139264       131072\n"              \
	"                    other         4096         4096\n"              \
	"        nonprofiled-total    414846427     47091700\n"              \
	"       nonprofiled-absent            0            0\n"              \
	"    nonprofiled-anonymous     23650304      3751936\n"              \
	"    nonprofiled-file-exec    207237120     32600064\n"              \
	" nonprofiled-file-nonexec    183815643     10604532\n"              \
	"        nonprofiled-stack       139264       131072\n"              \
	"        nonprofiled-other         4096         4096\n"              \
	"            profiled-mmap    607928869     17727500\n"              \
	"          profiled-malloc      1935377      1873937\n"

#define STACKS                                                               \
	"STACKTRACES:\n"                                                     \
	"   virtual  committed\n"                                            \
	"     65536      65536      1      0 @ 3\n"                          \
	"      8288       8288    109      0 @ 1\n"

static int load(const char *text)
{
	const char *p = write_file("d.0001.heap", text, -1);

	return profile_load(&snap, p, &m, &run);
}

static void load_fails(const char *text, const char *msg)
{
	capture_stderr();
	cr_assert_eq(load(text), -1, "accepted:\n%s", text);
	cr_assert(strstr(stderr_text(), msg), "stderr: %s", stderr_text());
}

Test(deep, deep6_full)
{
	cr_assert_eq(load("heap profile: DUMP_DEEP_6\n"
			  "META:\n"
			  "Time: 1700000000\n"
			  "Reason: interval\n"
			  "CommandLine: /bin/prog --flag x\n"
			  "RunID: host-linux-42-1700000000\n"
			  "PageSize: 4096\n"
			  "PageFrame: 24,Base64,PageCount\n"
			  "Rss: 123456\n"
			  "MMAP_LIST:\n"
			  "7f62f6a45000-7f62f6a55000 rw-p 00000000 00:00 0           \n"
			  "  PF: ASNF#B\n"
			  " (7f62f6a40000)- 7f62f6a46000  hooked 4096 / 4096 @ 3\n"
			  "  PF: ASNG#C\n"
			  "  7f62f6a46000 - 7f62f6a47000  unhooked 4096 / 4096\n"
			  "  7f62f6a47000 - 7f62f6a55000  hooked 0 / 57344 @ 12\n"
			  GS_ALL STACKS), 0);
	cr_assert_eq(snap.version, 6);
	cr_assert(snap.time_from_meta);
	cr_assert_eq(snap.time, 1700000000.0);
	cr_assert_str_eq(snap.reason, "interval");
	cr_assert_str_eq(snap.command_line, "/bin/prog --flag x");
	cr_assert_str_eq(snap.run_id, "host-linux-42-1700000000");
	cr_assert_eq(snap.pageframe_length, 24);
	cr_assert(snap.pageframe_base64);
	cr_assert(snap.has_pagecount);
	cr_assert_str_eq(snapshot_meta(&snap, "Rss"), "123456");
	cr_assert_eq(snap.nvmas, 1);
	cr_assert_eq(snap.nregions, 3);
	/* '(' clips the start to the VMA. */
	cr_assert_eq(snap.regions[0].start, 0x7f62f6a45000ULL);
	cr_assert_eq(snap.regions[0].end, 0x7f62f6a46000ULL);
	cr_assert_eq(snap.regions[0].kind, REGION_HOOKED);
	cr_assert_eq(snap.regions[0].bucket_id, 3);
	cr_assert_not_null(snap.regions[0].bucket);
	cr_assert_eq(snap.regions[0].pf_count, 1);
	cr_assert_eq(snap.pfs[snap.regions[0].pf_first].pfn, 0x012345);
	cr_assert_eq(snap.pfs[snap.regions[0].pf_first].mapcount, 1);
	cr_assert_eq(snap.regions[1].kind, REGION_UNHOOKED);
	cr_assert_eq(snap.regions[1].committed, 4096);
	cr_assert_eq(snap.pfs[snap.regions[1].pf_first].pfn, 0x012346);
	cr_assert_eq(snap.pfs[snap.regions[1].pf_first].mapcount, 2);
	cr_assert_eq(snap.regions[2].reserved, 57344);
	cr_assert_eq(snap.regions[2].pf_count, 0);
	cr_assert_eq(snap.gs.row[GS_TOTAL].committed, 64831488);
	cr_assert_eq(snap.gs.row[GS_PROFILED_MMAP].virt, 607928869);
	cr_assert_eq(snap.nlines, 2);
	cr_assert_eq(snap.lines[1].alloc, 109);
	cr_assert_eq(snap.lines[1].bucket, bucket_set_find(&m.buckets, 1));
	cr_assert_eq(snap.nunknown, 0);
}

Test(deep, deep5_no_meta_tolerant_gstats)
{
	/* The original's own test dumps lack 'absent'. */
	capture_stderr();
	cr_assert_eq(load("heap profile: DUMP_DEEP_5\n"
			  "GLOBAL_STATS:\n"
			  "    total 10 9\n"
			  "    unhooked-arena 5 4\n"
			  STACKS), 0);
	cr_assert_eq(snap.version, 5);
	cr_assert_not(snap.time_from_meta);
	cr_assert_eq(snap.gs.row[GS_TOTAL].committed, 9);
	cr_assert_eq(snap.gs.row[GS_ABSENT].committed, 0);
	cr_assert_eq(snap.gs.nextra, 1);
	cr_assert_str_eq(snap.gs.extra[0].name, "unhooked-arena");
	cr_assert_eq(snap.gs.extra[0].v.committed, 4);
	cr_assert(strstr(stderr_text(), "d.0001.heap:2: GLOBAL_STATS has no "
					"'absent', 'file-exec'"));
}

Test(deep, time_forms)
{
	setenv("TZ", "UTC", 1);
	cr_assert_eq(load("heap profile: DUMP_DEEP_6\nMETA:\n"
			  "Time: 2023/11/14 22:13:20.250\n" GS_ALL STACKS), 0);
	cr_assert_float_eq(snap.time, 1700000000.25, 1e-6);
	snapshot_release(&snap);
	cr_assert_eq(load("heap profile: DUMP_DEEP_6\nMETA:\n"
			  "Time: 2023/11/14 22:13:20.5\n" GS_ALL STACKS), 0);
	/* A decimal fraction, not "5 milliseconds" as the original read it. */
	cr_assert_float_eq(snap.time, 1700000000.5, 1e-6);
	snapshot_release(&snap);
	cr_assert_eq(load("heap profile: DUMP_DEEP_6\nMETA:\n"
			  "Time: 1700000000.75\n" GS_ALL STACKS), 0);
	cr_assert_float_eq(snap.time, 1700000000.75, 1e-6);
	snapshot_release(&snap);
	capture_stderr();
	cr_assert_eq(load("heap profile: DUMP_DEEP_6\nMETA:\n"
			  "Time: 2023/02/30 00:00:00\n" GS_ALL STACKS), 0);
	cr_assert_not(snap.time_from_meta);
	cr_assert(strstr(stderr_text(), "d.0001.heap:3: cannot read time"));
	snapshot_release(&snap);
	capture_stderr();
	/* A month that wraps through an int is no month. */
	cr_assert_eq(load("heap profile: DUMP_DEEP_6\nMETA:\n"
			  "Time: 2013/4294967298/01 00:00:00\n" GS_ALL STACKS), 0);
	cr_assert_not(snap.time_from_meta);
}

Test(deep, pageframe_tokens)
{
	struct pageframe pf;

	cr_assert(pageframe_parse("ASNF", 4, &pf, 4096));
	cr_assert_eq(pf.pfn, 0x012345);
	cr_assert_not(pf.has_count);
	cr_assert(pageframe_parse("<////#/>", 8, &pf, 4096));
	cr_assert_eq(pf.pfn, 0xffffff);
	cr_assert_eq(pf.mapcount, 63);
	cr_assert(pf.start_inside);
	cr_assert(pf.end_inside);
	cr_assert_not(pageframe_parse("ASN", 3, &pf, 4096));
	cr_assert_not(pageframe_parse("ASNFF", 5, &pf, 4096));
	cr_assert_not(pageframe_parse("AS-F", 4, &pf, 4096));
	cr_assert_not(pageframe_parse("ASNF#", 5, &pf, 4096));
	cr_assert_not(pageframe_parse("><ASNF", 6, &pf, 4096));
}

Test(deep, pageframe_sizes_at_unaligned_edges)
{
	cr_assert_eq(load("heap profile: DUMP_DEEP_6\nMETA:\nPageSize: 4096\n"
			  "MMAP_LIST:\n"
			  "1000-5000 rw-p 00000000 00:00 0 [heap]\n"
			  "  PF: AAAB#B AAAC#B>\n"
			  "  1000 - 2800  hooked 6144 / 6144 @ 12\n"
			  "  PF: <AAAC#B AAAD#B\n"
			  "  2800 - 4000  unhooked 6144 / 6144\n"
			  GS_ALL STACKS), 0);
	cr_assert_eq(snap.pfs[0].size, 4096);
	cr_assert_eq(snap.pfs[1].size, 2048); /* ends at 0x2800 */
	cr_assert_eq(snap.pfs[2].size, 2048); /* starts at 0x2800 */
	cr_assert_eq(snap.pfs[3].size, 4096);
}

Test(deep, region_details)
{
	capture_stderr();
	cr_assert_eq(load("heap profile: DUMP_DEEP_6\nMETA:\n"
			  "MMAP_LIST:\n"
			  "1000-5000 rw-p 00000000 00:00 0\n"
			  "  3000 -(9000)  HOOKED arena 4096 / 8192 @ 12\n"
			  "  1000 - 3000  unhooked 0 / 8192\n"
			  "  1000 - 3000  unhooked 4096 / 8192\n"
			  "ffffffffff600000-ffffffffff601000 r-xp 00000000 00:00 0 [vsyscall]\n"
			  GS_ALL STACKS), 0);
	cr_assert_eq(snap.nregions, 2);
	cr_assert_eq(snap.regions[0].committed, 4096); /* later line wins */
	cr_assert_eq(snap.regions[1].end, 0x5000);     /* '(' clips the end */
	cr_assert_str_eq(snap.regions[1].type, "arena");
	cr_assert_eq(snap.nvmas, 2);
	cr_assert(strstr(stderr_text(), "d.0001.heap:7: region 1000-3000 "
					"repeats line 6"));
}

Test(deep, legacy_regions)
{
	capture_stderr();
	cr_assert_eq(load("heap profile: DUMP_DEEP_6\nMMAP_LIST:\n"
			  "1000-5000 rw-p 00000000 00:00 0\n"
			  "  1000 - 2000  hooked mmap @ 3\n"
			  "  2000 - 5000  unhooked anonymous 8192\n"
			  GS_ALL STACKS), 0);
	cr_assert_not(snap.regions[0].has_committed);
	cr_assert_eq(snap.regions[0].bucket_id, 3);
	cr_assert_eq(snap.regions[1].committed, 8192);
	cr_assert_str_eq(snap.regions[1].type, "anonymous");
	cr_assert(strstr(stderr_text(), "legacy region line"));
}

Test(deep, unknown_bucket_warns_and_keeps_line)
{
	capture_stderr();
	cr_assert_eq(load("heap profile: DUMP_DEEP_6\n" GS_ALL
			  "STACKTRACES:\n"
			  "        10         10      1      0 @ 77\n"
			  "        20         20      1      0 @ 78\n"), 0);
	cr_assert_eq(snap.nlines, 2);
	cr_assert_null(snap.lines[0].bucket);
	cr_assert_eq(snap.nunknown, 2);
	cr_assert_eq(snap.unknown_bucket_bytes, 30);
	cr_assert_eq(snap.first_unknown_line, 22);
	snapshot_warn_unknown_buckets(&snap, "left out");
	cr_assert(strstr(stderr_text(),
			 "d.0001.heap:22: bucket 77 is not defined in any "
			 ".buckets file or BUCKETS section (2 such lines, 30 "
			 "committed bytes: left out)"));
}

Test(deep, comments_crlf_blank_lines)
{
	cr_assert_eq(load("# a comment\r\n\r\nheap profile: DUMP_DEEP_6\r\n"
			  "GLOBAL_STATS:\r\n\r\n"
			  "total 1 2\r\n# x\r\n"
			  "STACKTRACES:\r\n"
			  "        10         10      1      0 @ 1\r\n"), 0);
	cr_assert_eq(snap.gs.row[GS_TOTAL].committed, 2);
	cr_assert_eq(snap.nlines, 1);
}

Test(deep, truncated_last_line_skipped)
{
	capture_stderr();
	cr_assert_eq(load("heap profile: DUMP_DEEP_6\n" GS_ALL
			  "STACKTRACES:\n"
			  "        10         10      1      0 @ 1\n"
			  "        20         2"), 0);
	cr_assert_eq(snap.nlines, 1);
	cr_assert(strstr(stderr_text(), "d.0001.heap:23: last line has no "
					"newline (dump truncated?); skipped"));
}

Test(deep, errors)
{
	load_fails("", "d.0001.heap:1: empty dump");
	load_fails("\n\n# only comments\n", "empty dump");
	load_fails("heap profile: DUMP_DEEP_3\n",
		   "d.0001.heap:1: obsolete dump version 'DUMP_DEEP_3'");
	load_fails("STACKTRACES:\n", "obsolete dump version DUMP_DEEP_1");
	load_fails("MMAP_STACKTRACES:\n", "obsolete dump version DUMP_DEEP_2");
	load_fails("heap profile: DUMP_DEEP_7\n",
		   "unknown dump version 'DUMP_DEEP_7'");
	load_fails("hello\n", "d.0001.heap:1: not a heap profile dmprof reads: "
			      "'hello'; it reads deep heap dumps (DUMP_DEEP_5, "
			      "DUMP_DEEP_6), text heap profiles");
	load_fails("heap profile: DUMP_DEEP_6\n" GS_ALL,
		   "no STACKTRACES section (dump truncated?)");
	load_fails("heap profile: DUMP_DEEP_6\nMETA:\nTime: 1\n",
		   "no STACKTRACES section");
	load_fails("heap profile: DUMP_DEEP_6\n" STACKS,
		   "no GLOBAL_STATS section");
	load_fails("heap profile: DUMP_DEEP_6\n" GS_ALL STACKS
		   "garbage here\n",
		   "d.0001.heap:25: expected 'VIRTUAL COMMITTED ALLOCS FREES @ "
		   "BUCKET' in STACKTRACES, found 'garbage here'");
	load_fails("heap profile: DUMP_DEEP_6\n" GS_ALL "STACKTRACES:\n"
		   "  1 2 3 4 @ 5 6\n",
		   "d.0001.heap:22: expected 'VIRTUAL");
	load_fails("heap profile: DUMP_DEEP_6\n" GS_ALL "STACKTRACES:\n"
		   "  99999999999999999999 2 3 4 @ 5\n",
		   "d.0001.heap:22: out-of-range number in stack line");
	load_fails("heap profile: DUMP_DEEP_6\nGLOBAL_STATS:\n"
		   "total 1 184467440737095516160\n" STACKS,
		   "d.0001.heap:3: out-of-range number in GLOBAL_STATS row "
		   "'total'");
	load_fails("heap profile: DUMP_DEEP_6\nGLOBAL_STATS:\ntotal 1\n",
		   "d.0001.heap:3: expected 'NAME VIRTUAL COMMITTED'");
	load_fails("heap profile: DUMP_DEEP_6\nMETA:\nPageSize: 0\n",
		   "d.0001.heap:3: invalid page size '0'");
	load_fails("heap profile: DUMP_DEEP_6\nMETA:\njunk\n",
		   "d.0001.heap:3: expected 'Key: value' in META");
	load_fails("heap profile: DUMP_DEEP_6\nMMAP_LIST:\n"
		   "1000-2000 rw-p 0 00:00 0\n  PF: ASNF AB!D\n",
		   "d.0001.heap:4:12: malformed page frame 'AB!D'");
	load_fails("heap profile: DUMP_DEEP_6\nMMAP_LIST:\n"
		   "  1000 - 2000  unhooked 0 / 4096\n",
		   "d.0001.heap:3: region line before any VMA line");
	load_fails("heap profile: DUMP_DEEP_6\nMMAP_LIST:\n"
		   "1000-2000 rw-p 0 00:00 0\n  1000 - 2000  hooked 1 / 2\n",
		   "d.0001.heap:4: malformed hooked region");
	load_fails("heap profile: DUMP_DEEP_6\nMMAP_LIST:\n"
		   "1000-2000 rw-p 0 00:00 0\n  1000 : 2000  hooked 1 / 2 @ 1\n",
		   "d.0001.heap:4: malformed region line");
	load_fails("heap profile: DUMP_DEEP_6\nMMAP_LIST:\n"
		   "1000-2000 rw-p 0 00:00 0\n"
		   "  1000 - 2000  hooked 1 / 2 @ 99999999999999999999\n",
		   "d.0001.heap:4: number out of range in region line");
	load_fails("heap profile: DUMP_DEEP_6\nMMAP_LIST:\n"
		   "1000-2000 rw-p 0 00:00 0\n  3000 - 2000  unhooked 1 / 2\n",
		   "d.0001.heap:4: region ends (2000) before it starts (3000)");
	load_fails("heap profile: DUMP_DEEP_6\nMMAP_LIST:\nwhat\n",
		   "d.0001.heap:3: expected a VMA, page frame or region line");
	load_fails("heap profile: DUMP_DEEP_6\nMMAP_LIST:\n"
		   "10000000000000000-2 rw-p 0 00:00 0\n",
		   "d.0001.heap:3: number out of range in VMA line");
	load_fails("heap profile: DUMP_DEEP_6\nMETA:\nMETA:\n",
		   "d.0001.heap:3: second META: section");
	load_fails("heap profile: DUMP_DEEP_6\nstray\n",
		   "d.0001.heap:2: unexpected 'stray' outside any section");
	load_fails("heap profile: DUMP_DEEP_6\nMMAP_LIST:\n"
		   "0-10000 rw-p 0 00:00 0\n"
		   "  0 - 10000  unhooked 4096 / 65536\n"
		   "  2000 - 3000  hooked 4096 / 4096 @ 3\n" GS_ALL STACKS,
		   "d.0001.heap:5: region 2000-3000 overlaps region 0-10000 "
		   "of line 4");
}

Test(deep, nul_byte)
{
	const char *p = write_file("n.0001.heap",
				   "heap profile: DUMP_DEEP_6\nGLOB\0AL\n", 34);

	capture_stderr();
	cr_assert_eq(profile_load(&snap, p, &m, &run), -1);
	cr_assert(strstr(stderr_text(), "n.0001.heap:2: NUL byte"));
}

Test(deep, mapped_libraries_trailer)
{
	cr_assert_eq(load("heap profile: DUMP_DEEP_6\n" GS_ALL STACKS
			  "\nMAPPED_LIBRARIES:\n"
			  "00400000-0041f000 r-xp 00000000 00:00 1 /bin/x\n"), 0);
	cr_assert(snap.has_own_maps);
	cr_assert_eq(snap.own_maps.n, 1);
}

Test(deep, missing_file)
{
	capture_stderr();
	cr_assert_eq(profile_load(&snap, "/nonexistent/x.0001.heap", &m, &run),
		     -1);
	cr_assert(strstr(stderr_text(), "No such file"));
}

/* What deep_meta() reads of a dump whose head is TEXT. */
static struct deep_meta meta_of(const char *text)
{
	struct deep_meta mt;

	deep_meta(write_file("h.0001.heap", text, -1), &mt);
	return mt;
}

Test(deep, meta_of_the_head)
{
	struct deep_meta mt;

	mt = meta_of("heap profile: DUMP_DEEP_6\nMETA:\n"
		     "Time: 1700000000.250\nReason: peak\n"
		     "CommandLine:\nDumpSeconds: 0.012\r\n"
		     "Stopped: no (cannot stop the threads)\n"
		     "MMAP_LIST:\nStoppedSeconds: 9\n");
	cr_assert_str_eq(mt.reason, "peak");
	cr_assert_eq(mt.moment, MOMENT_OTHER);
	cr_assert_float_eq(mt.dump_seconds, 0.012, 1e-9);
	cr_assert(mt.running);
	cr_assert_str_eq(mt.running_why, "cannot stop the threads");
	/* (Not META's: after MMAP_LIST.) */
	cr_assert_eq(mt.stopped_seconds, 0);
	mt = meta_of("heap profile: DUMP_DEEP_6\nMETA:\nReason: exit called\n"
		     "DumpSeconds: 0.5\nStopped: yes\nStoppedSeconds: 0.25\n"
		     "Walks: 1\n");
	cr_assert_eq(mt.moment, MOMENT_BEFORE_TEARDOWN);
	cr_assert_float_eq(mt.stopped_seconds, 0.25, 1e-9);
	cr_assert_not(mt.running);
	/* A line cut short is not read; a file that is not, all unsaid. */
	mt = meta_of("heap profile: DUMP_DEEP_6\nMETA:\nReason: Exiting");
	cr_assert_eq(mt.moment, MOMENT_UNSAID);
	deep_meta("/nonexistent/x.0001.heap", &mt);
	cr_assert_str_eq(mt.reason, "");
	cr_assert_eq(mt.dump_seconds, 0);
}
