/*
 * dmprof heap [--json] [--blocks] PID|CORE: stop a running process, walk
 * its glibc malloc heap from outside, let it go, and say where every byte
 * of the arenas is: in use, in a tcache, a fastbin, the unsorted bin, a
 * bin, top, the allocator's own headers, or unknown past a corruption.
 * Given an ELF core file instead, the same walk over the core's memory.
 * The groundwork of `dmprof snapshot`, and the way to test the walk.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "coreimage.h"
#include "glibc_heap.h"
#include "json_write.h"
#include "procimage.h"
#include "procstop.h"
#include "pymalloc.h"
#include "setup.h"
#include "util.h"

enum {
	OPT_JSON = OPT_LONG_ONLY,
	OPT_BLOCKS,
};

/* How long a thread may take to stop; tries while an arena is locked. */
#define STOP_TIMEOUT_MS 2000
#define LOCKED_TRIES 5
/* Problems said on standard error; --json lists them all. */
#define PROBLEMS_SAID 10

struct heap_run {
	const char *core; /* the core file walked, or NULL: process PID */
	/* Where the files the core names are (the symbol options). */
	const struct read_options *read;
	pid_t pid;
	size_t threads;
	double held, stopping, walk;
	uint64_t nreads, nbytes;
	struct heap h;
};

static const char *const usage[] = { "PID", "CORE", NULL };
static const struct cmd_option options[] = {
	{ .key = OPT_JSON, .name = "json", .flags = OPT_SYNOPSIS,
	  .help = "exact numbers, as JSON" },
	{ .key = OPT_BLOCKS, .name = "blocks", .flags = OPT_SYNOPSIS,
	  .help = "every block too: address, usable size, chunk size, "
		  "state, arena" },
	OPT_END,
};

static double seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Stop, walk, let go: 0, or -1 (said). */
static int walk_once(struct heap_run *r)
{
	struct procstop stop;
	struct procimage img;
	double t0;
	int rc;

	if (procstop_stop(&stop, r->pid, STOP_TIMEOUT_MS) < 0)
		return -1;
	r->threads = stop.n;
	t0 = seconds();
	rc = procimage_open_pid(&img, r->pid);
	if (rc == 0) {
		rc = heap_walk(&r->h, &img);
		r->nreads = img.nreads;
		r->nbytes = img.nbytes;
		procimage_close(&img);
	}
	r->walk = seconds() - t0;
	procstop_release(&stop);
	r->held = procstop_held_seconds(&stop);
	r->stopping = procstop_stopping_seconds(&stop);
	if (procstop_exited(r->pid))
		rc = error("process %d exited during the walk", (int)r->pid);
	else if (rc < 0 && r->h.why.what)
		fault_error(&r->h.why, NULL);
	if (rc < 0)
		heap_release(&r->h);
	return rc;
}

/* Walk the core R->core: 0, or -1 (said).  Nothing to stop or let go. */
static int walk_core(struct heap_run *r)
{
	struct coreimage core;
	struct fault missing = { 0 };
	bool cut;
	double t0 = seconds();
	int rc;

	if (coreimage_open_at(&core, r->core, r->read->host_path,
			      r->read->host_ctx) < 0)
		return -1;
	if ((cut = coreimage_missing(&core, &missing)))
		fault_warning(&missing, NULL);
	r->pid = core.pid;
	r->threads = core.nthreads;
	rc = heap_walk(&r->h, &core.img);
	r->nreads = core.img.nreads;
	r->nbytes = core.img.nbytes;
	r->walk = seconds() - t0;
	coreimage_close(&core);
	if (rc < 0) {
		fault_error(&r->h.why, cut ? " (the core is cut short: what "
					     "it lacks may hold it)" : NULL);
		heap_release(&r->h);
	}
	fault_release(&missing);
	return rc;
}

/*
 * An arena locked at the instant means a thread stopped inside malloc:
 * its lists may be half-updated.  Let it run a little and look again.
 */
static int walk(struct heap_run *r)
{
	for (int try = 0;; try++) {
		if (walk_once(r) < 0)
			return -1;
		if (!heap_locked(&r->h) || try + 1 == LOCKED_TRIES)
			return 0;
		heap_release(&r->h);
		usleep(1000u << try);
	}
}

static void say_problems(const struct heap *h)
{
	const struct pymalloc *py = h->py;

	for (size_t i = 0; i < h->nproblems && i < PROBLEMS_SAID; i++)
		fault_warning(&h->problems[i].f, NULL);
	if (h->nproblems > PROBLEMS_SAID)
		warning("%zu more problems (--json lists them all)",
			h->nproblems - PROBLEMS_SAID);
	if (!py)
		return;
	if (!py->walked)
		fault_warning(&py->why, NULL);
	for (size_t i = 0; i < py->nproblems && i < PROBLEMS_SAID; i++)
		fault_warning(&py->problems[i].f, NULL);
	if (py->nproblems > PROBLEMS_SAID)
		warning("%zu more problems of pymalloc (--json lists them "
			"all)", py->nproblems - PROBLEMS_SAID);
}

/* sys._debugmallocstats()'s sums of PY. */
struct py_sums {
	uint64_t allocated, available, unused, headers, quantization, total;
};

static void py_sum(const struct pymalloc *py, struct py_sums *s)
{
	const struct pymalloc_layout *l = py->lay;

	memset(s, 0, sizeof(*s));
	for (unsigned k = 0; k < l->nclasses; k++) {
		const struct py_class *c = &py->classes[k];
		uint64_t size = py_class_size(py, k);

		s->allocated += c->used * size;
		s->available += c->avail * size;
		s->headers += c->pools * l->pool_overhead;
		s->quantization += c->pools *
				   ((l->pool_size - l->pool_overhead) % size);
	}
	s->unused = py->unused_pools * l->pool_size;
	s->total = s->allocated + s->available + s->unused + s->headers +
		   s->quantization + py->arena_alignment;
}

/* Python's types, largest first (by bytes, then count, then name). */
static int cmp_py_type(const void *a, const void *b)
{
	const struct py_type *x = *(const struct py_type *const *)a;
	const struct py_type *y = *(const struct py_type *const *)b;

	return CMP(y->bytes, x->bytes) ?: CMP(y->count, x->count) ?:
	       strcmp(x->name, y->name);
}

static const struct py_type **py_types_sorted(const struct pymalloc *py)
{
	const struct py_type **v = xcalloc(py->ntypes, sizeof(*v));

	for (size_t i = 0; i < py->ntypes; i++)
		v[i] = &py->types[i];
	qsort(v, py->ntypes, sizeof(*v), cmp_py_type);
	return v;
}

#define PY_TYPES_SHOWN 20

/* What sys._debugmallocstats() prints of pymalloc's, then the types. */
static void print_python(const struct pymalloc *py)
{
	const struct pymalloc_layout *l = py->lay;
	const struct py_type **types;
	struct py_sums s;
	size_t shown = 0;

	printf("\npython %u.%u.%u (%s): pymalloc, %zu arena%s (its table at "
	       "0x%" PRIx64 "), %zu blocks in use\n\n", py->major, py->minor,
	       py->micro, py->module, py->narenas,
	       py->narenas == 1 ? "" : "s", py->table, py->nblocks);
	printf("class   size   num pools   blocks in use  avail blocks\n"
	       "-----   ----   ---------   -------------  ------------\n");
	for (unsigned k = 0; k < l->nclasses; k++) {
		const struct py_class *c = &py->classes[k];

		if (c->pools)
			printf("%5u %6" PRIu64 " %11" PRIu64 " %15" PRIu64
			       " %13" PRIu64 "\n", k, py_class_size(py, k),
			       c->pools, c->used, c->avail);
	}
	py_sum(py, &s);
	printf("\n# arenas allocated current         = %20zu\n", py->narenas);
	printf("# bytes in arenas (%u each)   = %20" PRIu64 "\n",
	       l->arena_size, py->arena_bytes);
	printf("\n# bytes in allocated blocks        = %20" PRIu64 "\n",
	       s.allocated);
	printf("# bytes in available blocks        = %20" PRIu64 "\n",
	       s.available);
	printf("# bytes in unused pools (%6" PRIu64 ") = %20" PRIu64 "\n",
	       py->unused_pools, s.unused);
	printf("# bytes lost to pool headers       = %20" PRIu64 "\n",
	       s.headers);
	printf("# bytes lost to quantization       = %20" PRIu64 "\n",
	       s.quantization);
	printf("# bytes lost to arena alignment    = %20" PRIu64 "\n",
	       py->arena_alignment);
	printf("Total                              = %20" PRIu64 "\n",
	       s.total);
	types = py_types_sorted(py);
	printf("\n%12s %16s  %s\n", "blocks", "bytes",
	       "type (of pymalloc's blocks)");
	for (size_t i = 0; i < py->ntypes && shown < PY_TYPES_SHOWN; i++) {
		if (!types[i]->count)
			continue;
		printf("%12" PRIu64 " %16" PRIu64 "  %s\n", types[i]->count,
		       types[i]->bytes,
		       types[i]->name[0] ? types[i]->name : "(unknown)");
		shown++;
	}
	free(types);
}

static void print_row(const char *name, uint64_t count, uint64_t bytes,
		      bool counted)
{
	if (counted)
		printf("%-20s %12" PRIu64 " %16" PRIu64 "\n", name, count,
		       bytes);
	else
		printf("%-20s %12s %16" PRIu64 "\n", name, "", bytes);
}

static void print_arena(const struct heap *h, size_t k)
{
	const struct heap_arena *a = &h->arenas[k];
	const struct heap_tally *t = &a->t;

	printf("%5zu 0x%012" PRIx64 " %5u %13" PRIu64 " %13" PRIu64
	       " %9" PRIu64 " %9" PRIu64 " %9" PRIu64 " %11" PRIu64
	       " %11" PRIu64 " %9" PRIu64 " %9" PRIu64 "%s\n",
	       k, a->addr, a->nheaps, a->system_mem, t->bytes[HEAP_IN_USE],
	       t->bytes[HEAP_TCACHE], t->bytes[HEAP_FASTBIN],
	       t->bytes[HEAP_UNSORTED], t->bytes[HEAP_BIN],
	       t->bytes[HEAP_TOP], t->overhead, t->unknown,
	       a->corrupt ? "  corrupt" : a->locked ? "  locked" : "");
}

static void print_blocks(const struct heap *h)
{
	printf("\n%-18s %12s %12s %-8s %s\n", "address", "usable", "chunk",
	       "state", "arena");
	for (size_t i = 0; i < h->nblocks; i++) {
		const struct heap_block *b = &h->blocks[i];

		printf("0x%016" PRIx64 " %12" PRIu64 " %12" PRIu64 " %-8s ",
		       b->chunk + 16, heap_block_usable(b), (uint64_t)b->size,
		       heap_state_name(b->state));
		if (b->arena == HEAP_MMAPPED_ARENA)
			printf("mmapped\n");
		else
			printf("%u\n", (unsigned)b->arena);
	}
}

static void print_text(const struct heap_run *r, bool blocks)
{
	const struct heap *h = &r->h;
	struct heap_summary sum;
	const struct heap_tally *t = &sum.t;

	heap_summarize(h, &sum);
	if (r->core)
		printf("core %s: process %d, %zu thread%s (the walk %.1f ms,"
		       " %" PRIu64 " bytes read in %" PRIu64 " reads)\n",
		       r->core, (int)r->pid, r->threads,
		       r->threads == 1 ? "" : "s", r->walk * 1e3, r->nbytes,
		       r->nreads);
	else
		printf("process %d: %zu thread%s held %.1f ms (stopping them "
		       "%.1f ms, the walk %.1f ms, %" PRIu64 " bytes read in "
		       "%" PRIu64 " reads)\n", (int)r->pid, r->threads,
		       r->threads == 1 ? "" : "s", r->held * 1e3,
		       r->stopping * 1e3, r->walk * 1e3, r->nbytes, r->nreads);
	printf("glibc malloc: main_arena 0x%" PRIx64 ", %zu arena%s, %zu "
	       "tcache%s\n\n", h->arenas[0].addr, h->narenas,
	       h->narenas == 1 ? "" : "s", h->ntcaches,
	       h->ntcaches == 1 ? "" : "s");
	printf("%-20s %12s %16s\n", "", "blocks", "bytes");
	for (int s = 0; s < HEAP_NSTATES; s++)
		if (s != HEAP_UNLISTED || t->count[s])
			print_row(heap_state_name(s), t->count[s], t->bytes[s],
				  true);
	print_row("overhead", 0, t->overhead, false);
	print_row("unknown", 0, t->unknown, false);
	print_row("arenas (system)", 0, sum.system_mem, false);
	print_row("mmapped", h->mmapped_count, h->mmapped_bytes, true);
	printf("\n%5s %-14s %5s %13s %13s %9s %9s %9s %11s %11s %9s %9s\n",
	       "arena", "address", "heaps", "system", "in-use", "tcache",
	       "fastbin", "unsorted", "bin", "top", "overhead", "unknown");
	for (size_t k = 0; k < h->narenas; k++)
		print_arena(h, k);
	if (h->py && h->py->walked)
		print_python(h->py);
	if (blocks)
		print_blocks(h);
}

static void json_hex(struct json_writer *w, const char *key, uint64_t v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
	json_member_string(w, key, buf);
}

static void json_arenas(struct json_writer *w, const struct heap *h)
{
	json_key(w, "arenas");
	json_array(w);
	for (size_t k = 0; k < h->narenas; k++) {
		const struct heap_arena *a = &h->arenas[k];

		json_object(w);
		json_hex(w, "address", a->addr);
		json_member_uint(w, "heaps", a->nheaps);
		json_member_uint(w, "system_mem", a->system_mem);
		json_hex(w, "top", a->top);
		json_member_uint(w, "attached_threads", a->attached_threads);
		json_member_bool(w, "locked", a->locked);
		json_member_bool(w, "corrupt", a->corrupt);
		heap_tally_json(w, &a->t);
		json_end(w);
	}
	json_end(w);
}

static void json_params(struct json_writer *w, const struct heap_params *mp)
{
	json_key(w, "mp_");
	if (!mp->found) {
		json_null(w);
		return;
	}
	json_object(w);
	json_hex(w, "address", mp->addr);
	json_member_uint(w, "mmap_threshold", mp->mmap_threshold);
	json_member_uint(w, "n_mmaps", mp->n_mmaps);
	json_member_uint(w, "mmapped_mem", mp->mmapped_mem);
	json_hex(w, "sbrk_base", mp->sbrk_base);
	json_member_uint(w, "tcache_bins", mp->tcache_bins);
	json_member_uint(w, "tcache_count", mp->tcache_count);
	json_end(w);
}

static void json_problems(struct json_writer *w, const struct heap *h)
{
	json_key(w, "problems");
	json_array(w);
	for (size_t i = 0; i < h->nproblems; i++) {
		json_object_line(w);
		json_hex(w, "address", h->problems[i].f.where.addr);
		json_member_int(w, "arena", h->problems[i].arena);
		json_member_string(w, "message", h->problems[i].f.what);
		json_end(w);
	}
	json_end(w);
}

static void json_blocks(struct json_writer *w, const struct heap *h)
{
	json_key(w, "blocks");
	json_array(w);
	for (size_t i = 0; i < h->nblocks; i++) {
		const struct heap_block *b = &h->blocks[i];

		json_object_line(w);
		json_hex(w, "address", b->chunk + 16);
		json_member_uint(w, "usable", heap_block_usable(b));
		json_member_uint(w, "size", b->size);
		json_member_string(w, "state", heap_state_name(b->state));
		if (b->arena == HEAP_MMAPPED_ARENA)
			json_member_string(w, "arena", "mmapped");
		else
			json_member_uint(w, "arena", b->arena);
		json_end(w);
	}
	json_end(w);
}

static void json_python(struct json_writer *w, const struct pymalloc *py)
{
	const struct pymalloc_layout *l = py->lay;
	const struct py_type **types;
	struct py_sums s;

	json_key(w, "python");
	json_object(w);
	json_member_string(w, "module", py->module);
	json_member_uint(w, "major", py->major);
	json_member_uint(w, "minor", py->minor);
	json_member_uint(w, "micro", py->micro);
	if (!py->walked) {
		json_member_string(w, "not_walked", py->why.what);
		json_end(w);
		return;
	}
	json_hex(w, "arena_table", py->table);
	json_hex(w, "arena_table_pointer", py->table_ptr);
	json_member_uint(w, "arena_table_entries", py->maxarenas);
	json_member_uint(w, "arenas", py->narenas);
	json_member_uint(w, "arena_size", l->arena_size);
	json_member_uint(w, "pool_size", l->pool_size);
	json_key(w, "classes");
	json_array(w);
	for (unsigned k = 0; k < l->nclasses; k++) {
		const struct py_class *c = &py->classes[k];

		if (!c->pools)
			continue;
		json_object_line(w);
		json_member_uint(w, "class", k);
		json_member_uint(w, "size", py_class_size(py, k));
		json_member_uint(w, "pools", c->pools);
		json_member_uint(w, "blocks", c->used);
		json_member_uint(w, "avail", c->avail);
		json_end(w);
	}
	json_end(w);
	py_sum(py, &s);
	json_member_uint(w, "unused_pools", py->unused_pools);
	json_member_uint(w, "allocated_bytes", s.allocated);
	json_member_uint(w, "available_bytes", s.available);
	json_member_uint(w, "unused_pool_bytes", s.unused);
	json_member_uint(w, "pool_header_bytes", s.headers);
	json_member_uint(w, "quantization_bytes", s.quantization);
	json_member_uint(w, "arena_alignment_bytes", py->arena_alignment);
	json_member_uint(w, "total_bytes", s.total);
	json_member_uint(w, "blocks_in_use", py->nblocks);
	types = py_types_sorted(py);
	json_key(w, "types");
	json_array(w);
	for (size_t i = 0; i < py->ntypes; i++) {
		if (!types[i]->count)
			continue;
		json_object_line(w);
		json_member_string(w, "type", types[i]->name);
		if (types[i]->addr)
			json_hex(w, "address", types[i]->addr);
		json_member_string(w, "kind", !types[i]->name[0] ? "unknown"
					      : types[i]->addr ? "python"
							       : "storage");
		json_member_uint(w, "count", types[i]->count);
		json_member_uint(w, "bytes", types[i]->bytes);
		json_end(w);
	}
	json_end(w);
	free(types);
	json_key(w, "problems");
	json_array(w);
	for (size_t i = 0; i < py->nproblems; i++) {
		json_object_line(w);
		json_hex(w, "address", py->problems[i].f.where.addr);
		json_member_string(w, "message", py->problems[i].f.what);
		json_end(w);
	}
	json_end(w);
	json_end(w);
}

static void print_json(const struct heap_run *r, bool blocks)
{
	const struct heap *h = &r->h;
	struct strbuf out = STRBUF_INIT;
	struct json_writer w;
	struct heap_summary sum;

	heap_summarize(h, &sum);
	json_write_init(&w, &out, stdout, false);
	json_object(&w);
	if (r->core)
		json_member_string(&w, "core", r->core);
	json_member_int(&w, "pid", r->pid);
	json_member_uint(&w, "threads", r->threads);
	if (!r->core) {
		json_member_double(&w, "held_seconds", r->held);
		json_member_double(&w, "stopping_seconds", r->stopping);
	}
	json_member_double(&w, "walk_seconds", r->walk);
	json_member_uint(&w, "bytes_read", r->nbytes);
	json_member_uint(&w, "reads", r->nreads);
	json_hex(&w, "main_arena", h->arenas[0].addr);
	json_params(&w, &h->mp);
	heap_summary_json(&w, &sum);
	json_arenas(&w, h);
	json_key(&w, "tcaches");
	json_array_line(&w);
	for (size_t i = 0; i < h->ntcaches; i++) {
		char buf[32];

		snprintf(buf, sizeof(buf), "0x%" PRIx64, h->tcaches[i]);
		json_string(&w, buf);
	}
	json_end(&w);
	json_problems(&w, h);
	if (h->py)
		json_python(&w, h->py);
	if (blocks)
		json_blocks(&w, h);
	json_end(&w);
	json_write_finish(&w);
	sb_release(&out);
}

static int cmd_heap_run(struct cmd_args *a)
{
	struct heap_run r = { 0 };
	int status;

	r.core = setup_core_operand(a);
	r.read = &a->read;
	if (!r.core && (status = setup_pid(a, &r.pid)))
		return status;
	if ((r.core ? walk_core(&r) : walk(&r)) < 0)
		return 1;
	say_problems(&r.h);
	if (args_has(a, OPT_JSON))
		print_json(&r, args_has(a, OPT_BLOCKS));
	else
		print_text(&r, args_has(a, OPT_BLOCKS));
	heap_release(&r.h);
	return 0;
}

const struct cmd_entry cmd_heap = { .name = "heap", .run = cmd_heap_run,
	.flags = CMD_READS_DUMPS, .usage = usage, .options = options,
	.summary = "account for the glibc malloc heap of a process or a core" };
