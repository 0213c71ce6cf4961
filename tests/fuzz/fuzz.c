/*
 * libFuzzer targets for every parser, one binary each (make fuzz builds
 * this file once per target, with -DFUZZ_READER="NAME" for a reader's,
 * else -DFUZZ_<TARGET>):
 *
 *   deep, gperf, jemalloc, proto, dhat, ...: one per row of the readers'
 *             table (profile.h), by the name the row gives; the input as
 *             a file, loaded (profile_load picks the reader), each of its
 *             parts classified and aggregated under the linux policy.  A
 *             row may shape its target's input (see struct shape):
 *               gperf     the input follows "heap profile: " (so the
 *                         fuzzer spends no time finding it; every
 *                         variant pprof reads: heapprofile, heap_v2,
 *                         heapz_v2, Go's heap/N, growth, fragmentation,
 *                         the memory map)
 *               jemalloc  the same after "heap_v2/" (jemalloc's dumps,
 *                         t* lines)
 *               proto     a pprof profile.proto: the first byte picks
 *                         whether the rest is the file or is gzipped
 *                         first (so the fuzzer works on the protobuf,
 *                         and the gzip path runs too)
 *             and deep's input is a dump as it is, DHAT's a JSON file
 *             read as both of its snapshots; a core is also read block
 *             by block, as describe and expand -t read it.
 *   buckets   a .buckets file
 *   maps      /proc/PID/maps text (strict, then lenient)
 *   symmap    a symbol map's nm, readelf or decoded-line file (the first
 *             byte picks), then addresses looked up in it
 *   policy    a policy (text, or JSON when it starts with '{'), then
 *             matched against a few subjects, each stack whole and again
 *             handed out frame by frame (classify.c's partial matching):
 *             the answers must agree
 *   json      any JSON
 *   symcache  a symbol cache file (of the identity it names): its first
 *             entries looked up, one added, the file written back
 *             (merged) and read again
 *   dwarf     an ELF file's DWARF (symdwarf.c): read, then the starts and
 *             middles of its functions looked up
 *
 * Parsers that read files get the input through a file in /dev/shm (or
 * $TMPDIR), so the real path (file_load included) is what runs.
 * Diagnostics go to /dev/null; sanitizer reports still reach the
 * terminal.
 */
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "aggregate.h"
#include "bucketfile.h"
#include "bucket.h"
#include "classify.h"
#include "cli.h"
#include "profile.h"
#include "json.h"
#include "maps.h"
#include "model.h"
#include "pbwrite.h"
#include "policy.h"
#include "symcache.h"
#include "symdwarf.h"
#include "symmap.h"
#include "input.h"
#include "util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[256];

/* The input as a file NAME in the scratch directory; its path. */
static const char *as_file(const char *name, const uint8_t *data,
			   size_t size)
{
	static char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f)
		abort();
	if (size && fwrite(data, 1, size, f) != size)
		abort();
	if (fclose(f))
		abort();
	return path;
}

static void drop(const char *prefix, const char *msg)
{
	(void)prefix;
	(void)msg;
}

static int remove_one(const char *path, const struct stat *st, int type,
		      struct FTW *ftw)
{
	(void)st;
	(void)type;
	(void)ftw;
	remove(path);
	return 0;
}

/* The scratch directory goes with its process, and only it: other
 * targets may be running (run.sh removed every one it found). */
static void remove_dir(void)
{
	nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm"
			  : getenv("TMPDIR")		  ? getenv("TMPDIR")
							  : "/tmp";

	(void)argc;
	(void)argv;
	snprintf(dir, sizeof(dir), "%s/dmprof-fuzz.%d", tmp, (int)getpid());
	if (mkdir(dir, 0700) && access(dir, W_OK))
		abort();
	atexit(remove_dir);
	/* Our diagnostics nowhere (libFuzzer keeps its own stream). */
	set_report_routine(drop);
	return 0;
}

#ifdef FUZZ_READER
/*
 * A reader's target: -DFUZZ_READER='"NAME"', NAME a row of the readers'
 * table (profile.h), which the Makefile builds one of per row.  The
 * input goes to a file as the row's shape below says (as it is, for a
 * row without one); profile_load picks the reader, so that near misses
 * reach the others too; each part of it is classified and aggregated.
 */
static const struct shape {
	const char *reader;
	const char *head;  /* put back before the input (so the fuzzer
			      spends no time finding it) */
	bool gzip_bit;     /* the input's first byte says whether the rest
			      is gzipped first (so the fuzzer works on what
			      is inside, and the gzip path runs too) */
} shapes[] = {
	{ "gperf", "heap profile: ", false },
	{ "jemalloc", "heap_v2/", false },
	{ "proto", NULL, true },
};

static const struct profile_traits *row;
static const struct shape *shape;
static struct policy *linux_policy;

extern const struct cmd_entry cmd_describe, cmd_expand;

/*
 * A core read block by block too, as describe and expand -t read it:
 * addresses where the seeds' heap, thread arena, mapped chunk, stack and
 * binary lie (tests/fuzz/coreseeds.py), and in no mapping; a size class
 * of blocks.  Their output goes nowhere (stdout is /dev/null).
 */
static void inspect_core(const char *path)
{
	char *describe[] = { "describe", (char *)path, "0x402010", "0x402100",
			     "0x402400", "0x7f0008000900", "0x7f0000100010",
			     "0x7ffff0000100", "0x400010", "0x10", NULL };
	char *expand[] = { "expand", "-t", "size-25..40", (char *)path, NULL };

	cmd_main(&cmd_describe, "describe", ARRAY_SIZE(describe) - 1, describe);
	cmd_main(&cmd_expand, "expand", ARRAY_SIZE(expand) - 1, expand);
}

/* The row and shape of the target, once. */
static void find_row(void)
{
	for (size_t i = 0; !row && profile_reader(i); i++)
		if (!strcmp(profile_reader(i)->name, FUZZ_READER))
			row = profile_reader(i);
	if (!row)
		abort(); /* (a target the table does not have) */
	for (size_t i = 0; i < ARRAY_SIZE(shapes); i++)
		if (!strcmp(shapes[i].reader, FUZZ_READER))
			shape = &shapes[i];
	linux_policy = policy_load("policies/linux.policy", "linux");
	/* (describe's and expand's, of a core: see inspect_core.) */
	if (row->format == FORMAT_CORE && !freopen("/dev/null", "w", stdout))
		abort();
}

/* Part PART of the file (0: the one there is), classified. */
static void load_and_classify_part(const char *path, int part)
{
	static const uint64_t frames[3] = { 0x401000, 0x401100, 0x7f0000001000 };
	struct model m;
	struct snapshot snap;

	model_init(&m);
	/* A few buckets for its lines and regions to name. */
	for (uint64_t id = 0; id < 4; id++)
		model_define_bucket(&m, id, id & 1 ? ALLOC_MMAP : ALLOC_MALLOC,
				    false, 0, "", frames, (uint32_t)(id % 4),
				    "fuzz", 1);
	if (profile_load_part(&snap, path, part, &m, NULL) == 0) {
		if (linux_policy) {
			struct classifier c;
			struct agg_stats stats;
			int64_t *values = xcalloc(linux_policy->ncols,
						  sizeof(*values));

			memset(&stats, 0, sizeof(stats));
			symbolize_model(&m, NULL, NULL);
			classifier_init(&c, linux_policy, &m);
			aggregate_snapshot(&c, &snap, NULL, values, NULL,
					   &stats);
			aggregate_verify(&snap);
			classifier_free(&c);
			free(values);
		}
		snapshot_release(&snap);
	}
	model_free(&m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct strbuf in = STRBUF_INIT;
	char name[64];
	const char *path;

	if (!row)
		find_row();
	if (shape && shape->gzip_bit) {
		if (!size)
			return 0;
		if (!(data[0] & 1))
			sb_add(&in, data + 1, size - 1);
		else
			pbw_gzip(data + 1, size - 1, &in);
	} else {
		if (shape && shape->head)
			sb_addstr(&in, shape->head);
		sb_add(&in, data, size);
	}
	snprintf(name, sizeof(name), "f.0001.%s",
		 row->suffixes ? row->suffixes[0] : row->name);
	path = as_file(name, (const uint8_t *)in.buf, in.len);
	if (row->parts > 1)
		for (int part = 1; part <= row->parts; part++)
			load_and_classify_part(path, part);
	else
		load_and_classify_part(path, 0);
	if (row->format == FORMAT_CORE)
		inspect_core(path);
	sb_release(&in);
	return 0;
}
#endif

#ifdef FUZZ_BUCKETS
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct model m;
	const char *path = as_file("f.00001.0001.buckets", data, size);

	model_init(&m);
	bucketfile_load(&m, path);
	model_free(&m);
	/* The same as a dump of dmprof record's, its sections read. */
	{
		struct dump_maps maps = { STRBUF_INIT, NULL, 0 };

		path = as_file("f.00001.0001.heap", data, size);
		model_init(&m);
		bucketfile_load_dumps(&m, &path, 1, NULL, &maps);
		dump_maps_release(&maps);
		model_free(&m);
	}
	return 0;
}
#endif

#ifdef FUZZ_MAPS
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	for (int lenient = 0; lenient < 2; lenient++) {
		struct arena arena;
		struct strtab strings;
		struct maps maps;

		memset(&arena, 0, sizeof(arena));
		strtab_init(&strings, &arena);
		maps_init(&maps);
		if (maps_parse(&maps, (const char *)data, size, "fuzz", 1,
			       &strings, lenient) == 0 &&
		    maps.n) {
			maps_find(&maps, maps.v[0].start);
			maps_find(&maps, maps.v[maps.n - 1].end - 1);
		}
		maps_free(&maps);
		strtab_free(&strings);
		arena_free(&arena);
	}
	return 0;
}
#endif

#ifdef FUZZ_SYMMAP
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct symmap_binary *b;
	struct arena arena;
	struct strtab strings;
	const char *path;
	int which;

	if (!size)
		return 0;
	which = data[0] % 4;
	path = as_file("f.symmap", data + 1, size - 1);
	b = symmap_binary_new("/fuzz/bin");
	memset(&arena, 0, sizeof(arena));
	strtab_init(&strings, &arena);
	switch (which) {
	case 0:
	case 1:
		symmap_load_nm(b, path, which == 1);
		break;
	case 2:
		symmap_load_readelf(b, path);
		break;
	default:
		symmap_load_decodedline(b, path);
		break;
	}
	for (uint64_t a = 0; a < 0x10000; a += 0x1234) {
		symmap_binary_function(b, a, &strings);
		symmap_binary_sourcefile(b, a, &strings);
		symmap_binary_typeinfo(b, a, &strings);
	}
	symmap_binary_free(b);
	strtab_free(&strings);
	arena_free(&arena);
	return 0;
}
#endif

#ifdef FUZZ_POLICY
/* The stack handed out a frame at a time, as classify.c builds it. */
struct pieces {
	const char *text;
	size_t len, given;
};

static void give_start(void *ctx, int field, size_t min, const char **s,
		       size_t *len, bool *whole)
{
	struct pieces *pc = ctx;

	(void)field;
	while (pc->given < pc->len && pc->given < min) {
		const char *sp = memchr(pc->text + pc->given + 1, ' ',
					pc->len - pc->given - 1);

		pc->given = sp ? (size_t)(sp - pc->text) : pc->len;
	}
	*s = pc->text;
	*len = pc->given;
	*whole = pc->given == pc->len;
}

static void give_all(void *ctx, int field, const char **s, size_t *len)
{
	bool whole;

	give_start(ctx, field, SIZE_MAX, s, len, &whole);
}

/* The stack as its frames (split at spaces), as classify.c walks it. */
static int walk_frames(void *ctx, int field, const struct pattern *pat,
		       struct matcher *mt, const char *what,
		       const struct subject *subj)
{
	struct pieces *pc = ctx;
	const char *at = pc->text, *end = pc->text + pc->len;
	uint32_t j = 0;

	(void)field;
	do {
		const char *sp = memchr(at, ' ', (size_t)(end - at));
		size_t n = sp ? (size_t)(sp - at) : (size_t)(end - at);
		int r = pattern_seq_step(NULL, mt, pat, j, at, n, what, subj);

		if (r < 0)
			return -1;
		j = (uint32_t)r;
		at = sp ? sp + 1 : end;
	} while (at < end && j < pat->seq->k);
	return j == pat->seq->k;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct policy *p = policy_parse((const char *)data, size, "fuzz.policy",
					"fuzz");
	struct strbuf out = STRBUF_INIT;

	if (!p)
		return 0;
	{
		static const char *const stacks[] = {
			"malloc WebCore::Node::create v8::internal::Heap main",
			"", "operator new std::vector::push_back",
			"a b c d e f g h i j k l m n o p q r s t u v w x y z "
			"calloc _dl_map_object Py_Initialize main",
		};

		for (size_t i = 0; i < ARRAY_SIZE(stacks); i++) {
			struct subject s;

			memset(&s, 0, sizeof(s));
			s.s[COND_STACK] = stacks[i];
			s.len[COND_STACK] = strlen(stacks[i]);
			s.s[COND_PATH] = "/usr/lib/libc.so.6";
			s.len[COND_PATH] = strlen(s.s[COND_PATH]);
			s.s[COND_PERM] = "r-xp";
			s.len[COND_PERM] = 4;
			s.s[COND_TYPE] = "no typeinfo";
			s.len[COND_TYPE] = 11;
			for (int a = 0; a < RULE_NALLOC; a++) {
				int whole = policy_match(p, (enum rule_alloc)a,
							 &s, "fuzz");
				struct pieces pc = { stacks[i],
						     strlen(stacks[i]), 0 };
				struct subject t = s;

				/* Matching the stack's start as it grows must
				 * say what matching all of it says. */
				t.s[COND_STACK] = NULL;
				t.len[COND_STACK] = 0;
				t.fill = give_all;
				t.fill_start = give_start;
				t.ctx = &pc;
				if (whole >= -1 &&
				    policy_match(p, (enum rule_alloc)a, &t,
						 "fuzz") != whole)
					abort();
				/* And so must matching frame by frame. */
				pc.given = 0;
				t.fill_start = NULL;
				t.seq = walk_frames;
				if (whole >= -1 &&
				    policy_match(p, (enum rule_alloc)a, &t,
						 "fuzz") != whole)
					abort();
			}
		}
	}
	policy_write(p, &out, NULL);
	sb_release(&out);
	policy_free(p);
	return 0;
}
#endif

#ifdef FUZZ_JSON
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct json_value *v = json_parse((const char *)data, size, "fuzz");

	json_free(v);
	return 0;
}
#endif

#ifdef FUZZ_SYMCACHE
/*
 * The identity the input's header names, so that dmprof's own caches
 * (each of another binary) are seeds that get used; else a made-up one.
 */
static const char *input_identity(const uint8_t *data, size_t size,
				  char *buf, size_t bufsize)
{
	uint32_t n;

	if (size < 64)
		return "build-id:00112233 debug=none";
	memcpy(&n, data + 28, sizeof(n));
	if (!n || n >= bufsize || n > size - 64 || memchr(data + 64, 0, n))
		return "build-id:00112233 debug=none";
	memcpy(buf, data + 64, n);
	buf[n] = '\0';
	return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char idbuf[256];
	const char *id = input_identity(data, size, idbuf, sizeof(idbuf));
	struct arena arena;
	struct strtab strings;
	struct symcache *c;
	struct symcache_entry e;
	struct strbuf sb = STRBUF_INIT;
	uint64_t addrs[64];
	size_t naddrs = 0, off;
	FILE *f;

	/* (mkdir, not "mkdir -p" through system(): no process an input.) */
	sb_addf(&sb, "%s/cache", dir);
	setenv("XDG_CACHE_HOME", sb.buf, 1);
	mkdir(sb.buf, 0700);
	sb_addstr(&sb, "/dmprof");
	mkdir(sb.buf, 0700);
	sb_addstr(&sb, "/symbols");
	if (mkdir(sb.buf, 0700) && access(sb.buf, W_OK))
		abort();
	/* The addresses of the first entries, where they would be. */
	off = 64 + ((strlen(id) + 7) & ~(size_t)7);
	for (; naddrs < 64 && off <= size && size - off >= 8; off += 32)
		memcpy(&addrs[naddrs++], data + off, 8);
	memset(&arena, 0, sizeof(arena));
	strtab_init(&strings, &arena);
	c = symcache_open(id, &strings);
	if (!c || !(f = fopen(symcache_path(c), "wb")))
		abort();
	if (size && fwrite(data, 1, size, f) != size)
		abort();
	fclose(f);
	symcache_close(c); /* (nothing added, nothing read: not written) */
	for (int round = 0; round < 2; round++) {
		c = symcache_open(id, &strings);
		for (uint64_t a = 0; a < 0x400; a += 0x10)
			symcache_get(c, a);
		for (size_t i = 0; i < naddrs; i++)
			symcache_get(c, addrs[i]);
		symcache_count(c);
		memset(&e, 0, sizeof(e));
		e.addr = 0x123;
		e.func = strtab_intern_str(&strings, "added()");
		symcache_put(c, &e);
		symcache_close(c);
	}
	strtab_free(&strings);
	arena_free(&arena);
	sb_release(&sb);
	return 0;
}
#endif

#ifdef FUZZ_DWARF
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct strbuf why = STRBUF_INIT;
	struct elf_image img;
	struct dwarf_answer out[64];
	uint64_t addrs[64];
	struct dwarf *d;
	const char *w;
	size_t n = 0;

	if (elfimage_open(&img, as_file("f.elf", data, size), &why) == 0 &&
	    (d = dwarf_open(&img, &w))) {
		for (size_t i = 0; i < img.ncode && n + 2 <= 64; i++) {
			addrs[n++] = img.code[i].addr;
			addrs[n++] = img.code[i].addr + img.code[i].size / 2;
		}
		addrs[n++] = 0;
		dwarf_lookup(d, addrs, n, out, &w);
		dwarf_close(d);
	}
	elfimage_close(&img);
	sb_release(&why);
	return 0;
}
#endif
