/*
 * Taking a snapshot of a live process.  While its threads are held only
 * what must be one instant is read: its maps, name and command line,
 * smaps' Rss and Swap of each mapping, the pagemap of the mappings a
 * copy takes (the heap's among them: its arenas and mmapped chunks cut
 * them, and each part needs its own committed bytes), and the copy of
 * their committed pages (copyimage.h).  Then the process goes on, and
 * the heap is walked, scanned and typed on the copy, its blocks counted
 * into their buckets (each block's committed bytes from the pagemap
 * read) and written out.  A copy bigger than allowed is not made: then
 * all of it runs while the process is held, as it did before copies.
 *
 * An arena locked at the instant means a thread stopped inside malloc,
 * its lists perhaps half-updated: as `dmprof heap` does, the process is
 * let go a little and held again, a few times at most.
 */
#include "capture.h"

#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "escape.h"
#include "hashmap.h"
#include "procstop.h"
#include "pymalloc.h"
#include "util.h"

/* How long a thread may take to stop; tries while an arena is locked. */
#define STOP_TIMEOUT_MS 2000
#define LOCKED_TRIES 5
static double now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* /proc/PID/comm, as a file name (no '/', space or control byte), or
 * "process". */
static char *comm_name(pid_t pid)
{
	char path[64], buf[64];
	size_t n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	if ((f = fopen(path, "re"))) {
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
	}
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		n--;
	buf[n] = '\0';
	for (size_t k = 0; k < n; k++)
		if (buf[k] == '/' || buf[k] == ' ' || (unsigned char)buf[k] < 32)
			buf[k] = '_';
	return xstrdup(n ? buf : "process");
}

/*
 * /proc/PID/cmdline, the NULs between its arguments as spaces (those
 * after the last, of a process that rewrote its arguments, dropped),
 * every other byte as it is: META escapes it.  "" when it cannot be
 * read.
 */
static char *command_line(pid_t pid)
{
	char path[64];
	struct strbuf sb = STRBUF_INIT;
	FILE *f;
	int c;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	if ((f = fopen(path, "re"))) {
		while ((c = getc(f)) != EOF)
			sb_addch(&sb, c);
		fclose(f);
	}
	while (sb.len && !sb.buf[sb.len - 1])
		sb.len--;
	for (size_t i = 0; i < sb.len; i++)
		if (!sb.buf[i])
			sb.buf[i] = ' ';
	if (sb.buf)
		sb.buf[sb.len] = '\0';
	return sb.buf ? sb_detach(&sb) : xstrdup("");
}

/* ---- while held ---- */

static void add_part(struct capture *s, uint64_t start, uint64_t end,
		     int where, uint64_t committed)
{
	struct capture_part *p;

	if (end <= start)
		return;
	GROW(s->parts, s->nparts + 1, s->parts_alloc);
	p = &s->parts[s->nparts++];
	p->start = start;
	p->end = end;
	p->where = where;
	p->committed = committed;
}

/* Does a held thread's stack pointer lie in [A, B) of VMA V (not the
 * main thread's [stack])? */
static bool thread_stack(const struct capture *s, const struct vma *v,
			 uint64_t a, uint64_t b)
{
	if (!strcmp(v->name, "[stack]"))
		return false;
	for (size_t i = 0; i < s->img->nthreads; i++)
		if (s->img->threads[i].sp >= a && s->img->threads[i].sp < b)
			return true;
	return false;
}

/* The committed bytes of [A, B) of VMA I: its pagemap's count, read
 * while held, or what the core holds. */
static uint64_t held_bytes(const struct capture *s, size_t i, uint64_t a,
			   uint64_t b)
{
	if (s->core)
		return coreimage_held(s->core, a, b);
	return s->vmas[i].pages.before ? page_counts_bytes(&s->vmas[i].pages,
							   a, b)
				       : 0;
}

/* A part of VMA I that is not the heap's: a thread's stack, or not. */
static void add_gap(struct capture *s, size_t i, uint64_t a, uint64_t b)
{
	const struct vma *v = &s->img->maps.v[i];

	add_part(s, a, b, thread_stack(s, v, a, b) ? PART_THREAD_STACK
						   : PART_NONE,
		 held_bytes(s, i, a, b));
}

/*
 * VMA I cut by the heap's extents from *AT on (sorted): its parts, each
 * with its committed bytes.
 */
static void split_vma(struct capture *s, size_t i, size_t *at)
{
	const struct vma *v = &s->img->maps.v[i];
	struct capture_vma *sv = &s->vmas[i];
	uint64_t pos = v->start;

	sv->first_part = s->nparts;
	for (; *at < s->next && s->ext[*at].start < v->end; (*at)++) {
		const struct heap_extent *e = &s->ext[*at];
		uint64_t a = e->start > pos ? e->start : pos;
		uint64_t b = e->end < v->end ? e->end : v->end;
		uint64_t c = held_bytes(s, i, a, b);

		add_gap(s, i, pos, a);
		add_part(s, a, b, e->arena == HEAP_PYMALLOC_ARENA
				     ? PART_PYMALLOC : (int)e->arena, c);
		if (e->arena == HEAP_PYMALLOC_ARENA)
			s->py_committed += c;
		pos = b;
		/* (An extent past this VMA goes on in the next.) */
		if (e->end > v->end)
			break;
	}
	add_gap(s, i, pos, v->end);
	sv->nparts = s->nparts - sv->first_part;
	if (!s->core)
		sv->committed = held_bytes(s, i, v->start, v->end);
}

/* VMA I as one part WHERE (of smaps' committed bytes). */
static void whole_vma(struct capture *s, size_t i, int where)
{
	const struct vma *v = &s->img->maps.v[i];
	struct capture_vma *sv = &s->vmas[i];

	sv->first_part = s->nparts;
	add_part(s, v->start, v->end, where, sv->committed);
	sv->nparts = 1;
}

/* VMA I, a thread's stack, as one part. */
static void stack_vma(struct capture *s, size_t i)
{
	whole_vma(s, i, PART_THREAD_STACK);
}

/*
 * Is V, in a process whose malloc is another allocator (not walked), that
 * allocator's: the brk heap and every anonymous private writable mapping
 * but the stacks.  A mapping the program made itself with mmap is not
 * told apart from the allocator's (that would take walking its heap).
 */
static bool allocators(const struct vma *v)
{
	return vma_writable(v) && v->perms[3] == 'p' &&
	       (!v->name[0] || !strcmp(v->name, "[heap]"));
}

/*
 * The mappings the heap's extents lie in, cut into parts, and those the
 * threads' stacks are in, known by their stack pointers.
 */
static int cmp_extent(const void *a, const void *b)
{
	const struct heap_extent *x = a, *y = b;

	return (x->start > y->start) - (x->start < y->start);
}

/*
 * What cuts the mappings: the heap's extents and pymalloc's arenas,
 * sorted, none overlapping another (as only hostile memory would make
 * them: the later one cut).
 */
static void all_extents(struct capture *s)
{
	const struct heap *h = &s->h;
	const struct pymalloc *py = h->py && h->py->walked ? h->py : NULL;
	size_t n = h->nextents + (py ? py->narenas : 0), k = 0;

	free(s->ext);
	s->ext = xcalloc(n ? n : 1, sizeof(*s->ext));
	if (h->nextents)
		memcpy(s->ext, h->extents, h->nextents * sizeof(*s->ext));
	for (size_t i = 0; py && i < py->narenas; i++) {
		s->ext[h->nextents + i].start = py->spans[i][0];
		s->ext[h->nextents + i].end = py->spans[i][1];
		s->ext[h->nextents + i].arena = HEAP_PYMALLOC_ARENA;
	}
	qsort(s->ext, n, sizeof(*s->ext), cmp_extent);
	for (size_t i = 0; i < n; i++) {
		if (k && s->ext[i].start < s->ext[k - 1].end)
			s->ext[i].start = s->ext[k - 1].end;
		if (s->ext[i].start < s->ext[i].end)
			s->ext[k++] = s->ext[i];
	}
	s->next = k;
	s->py_committed = 0;
}

static void split_vmas(struct capture *s)
{
	const struct maps *m = &s->img->maps;
	const struct heap *h = &s->h;
	size_t at = 0;

	all_extents(s);
	for (size_t i = 0; i < m->n; i++) {
		const struct vma *v = &m->v[i];

		while (at < s->next && s->ext[at].end <= v->start)
			at++;
		if (at < s->next && s->ext[at].start < v->end)
			split_vma(s, i, &at);
		else if (thread_stack(s, v, v->start, v->end))
			stack_vma(s, i);
		else if (!s->walked && h->allocator && allocators(v))
			whole_vma(s, i, PART_ALLOCATOR);
	}
}

/*
 * Each mapping's committed bytes, from smaps (Rss + Swap), and page by
 * page from the pagemap for those a copy takes: the heap lies in them,
 * and its parts each need their own count.
 */
static int read_resident(struct capture *s)
{
	const struct maps *m = &s->live.maps;
	struct resident *r = xcalloc(m->n ? m->n : 1, sizeof(*r));
	struct pagemap pm;
	int rc;

	s->vmas = xcalloc(m->n ? m->n : 1, sizeof(*s->vmas));
	rc = resident_smaps(s->pid, m, r, &s->total);
	for (size_t i = 0; i < m->n; i++) {
		s->vmas[i].r = r[i];
		s->vmas[i].committed = r[i].rss + r[i].swap;
	}
	free(r);
	if (rc < 0 || pagemap_open(&pm, s->pid) < 0)
		return -1;
	for (size_t i = 0; i < m->n && rc == 0; i++)
		if (copyimage_wants(&m->v[i]))
			rc = pagemap_counts(&pm, m->v[i].start, m->v[i].end,
					    &s->vmas[i].pages);
	pagemap_close(&pm);
	return rc;
}

/* The page counts of the mappings, as a copy takes them. */
static struct page_counts *counts_of(const struct capture *s)
{
	size_t n = s->live.maps.n;
	struct page_counts *pc = xcalloc(n ? n : 1, sizeof(*pc));

	for (size_t i = 0; i < n; i++)
		pc[i] = s->vmas[i].pages;
	return pc;
}

/*
 * Before the process is held: the copy's mappings made ready, their
 * pages in memory (what the process's are, now), so that the copy does
 * not fault them in while it stands still.  Nothing said: the stop says
 * what is wrong.
 */
static void prepare_copy(struct capture *s)
{
	struct strbuf unsaid = STRBUF_INIT;
	struct procimage img;
	struct pagemap pm;
	struct page_counts *pc;
	const char *other;
	size_t n;

	report_capture(&unsaid);
	if (procimage_open_pid(&img, s->pid) < 0)
		goto out;
	/* (A malloc dmprof does not walk: no heap to copy.  Were glibc's
	 * used beside it, that would be walked while held.) */
	if ((s->other_malloc = heap_allocator(&img, &other))) {
		procimage_close(&img);
		goto out;
	}
	n = img.maps.n;
	pc = xcalloc(n ? n : 1, sizeof(*pc));
	if (pagemap_open(&pm, s->pid) == 0) {
		for (size_t i = 0; i < n; i++)
			if (copyimage_wants(&img.maps.v[i]) &&
			    pagemap_counts(&pm, img.maps.v[i].start,
					   img.maps.v[i].end, &pc[i]) < 0)
				break;
		if (copyimage_size(&img, pc) <= s->max_copy)
			copyimage_prepare(&s->copy, &img, pc);
		pagemap_close(&pm);
	}
	for (size_t i = 0; i < n; i++)
		page_counts_free(&pc[i]);
	free(pc);
	procimage_close(&img);
out:
	report_capture(NULL);
	sb_release(&unsaid);
}

/*
 * Copy what the analysis reads, unless it would take more than allowed:
 * then the process stays held while it runs.  -1 after saying why not.
 */
static int copy(struct capture *s)
{
	struct page_counts *pc = counts_of(s);
	int rc = 0;

	s->copy_wanted = copyimage_size(&s->live, pc);
	if (s->other_malloc) {
		/* (Nothing to copy.) */
	} else if (s->copy_wanted > s->max_copy) {
		s->copy_too_big = true;
		copyimage_close(&s->copy); /* (what was made ready) */
	} else {
		rc = copyimage_take(&s->copy, &s->live, pc);
		s->copied = rc == 0;
	}
	free(pc);
	return rc;
}

/*
 * Does mapping V lie in the reservation of a thread arena's heap, past
 * the heap (PROT_NONE, never committed: gcore writes it all the same, as
 * zeros)?
 */
static bool arena_reserve(const struct capture *s, const struct vma *v)
{
	const struct heap *h = &s->h;
	uint64_t base = v->start & ~(HEAP_THREAD_HEAP_MAX - 1);

	for (size_t i = 0; s->walked && i < h->nextents; i++) {
		const struct heap_extent *e = &h->extents[i];

		if (e->arena && e->arena != HEAP_MMAPPED_ARENA &&
		    (e->start & ~(HEAP_THREAD_HEAP_MAX - 1)) == base &&
		    v->start >= e->end)
			return true;
	}
	return false;
}

/* A core's mappings: what it holds of each is their committed bytes
 * (but the arenas' reservations). */
static void core_held(struct capture *s)
{
	const struct maps *m = &s->img->maps;

	s->vmas = xcalloc(m->n ? m->n : 1, sizeof(*s->vmas));
	for (size_t i = 0; i < m->n; i++) {
		if (arena_reserve(s, &m->v[i]))
			continue;
		s->vmas[i].committed =
			coreimage_held(s->core, m->v[i].start, m->v[i].end);
		s->total.rss += s->vmas[i].committed;
	}
	split_vmas(s);
}

/* Does leaked block I of H come before J in the listing (larger, or as
 * large and first)? */
static bool leak_before(const struct heap_block *b, size_t i, size_t j)
{
	return b[i].size != b[j].size ? b[i].size > b[j].size : i < j;
}

/* Sift the min-heap of N block indexes V down from K (its root: the one
 * listed last). */
static void sift_down(const struct heap_block *b, size_t *v, size_t n,
		      size_t k)
{
	for (;;) {
		size_t c = 2 * k + 1;

		if (c >= n)
			return;
		if (c + 1 < n && leak_before(b, v[c], v[c + 1]))
			c++;
		if (!leak_before(b, v[k], v[c]))
			return;
		size_t t = v[k];

		v[k] = v[c];
		v[c] = t;
		k = c;
	}
}

static int cmp_index(const void *x, const void *y)
{
	size_t a = *(const size_t *)x, b = *(const size_t *)y;

	return a < b ? -1 : a > b;
}

/*
 * The leaked blocks to list: all of them, or the CAPTURE_MAX_LEAKS
 * largest (a heap of that many, in one pass: millions may be leaked),
 * in address order; their first bytes read.
 */
static void read_leaks(struct capture *s)
{
	const struct heap *h = &s->h;
	size_t *v = NULL, n = 0, alloc = 0;
	uint64_t *addrs;
	uint8_t *out;
	bool *ok;

	for (size_t i = 0; i < h->nblocks; i++) {
		if (s->scan.state[i] != REACH_LEAKED &&
		    s->scan.state[i] != REACH_UNREFERENCED)
			continue;
		if (n < CAPTURE_MAX_LEAKS) {
			GROW(v, n + 1, alloc);
			v[n++] = i;
			if (n == CAPTURE_MAX_LEAKS)
				for (size_t k = n / 2; k-- > 0;)
					sift_down(h->blocks, v, n, k);
		} else if (leak_before(h->blocks, i, v[0])) {
			v[0] = i;
			sift_down(h->blocks, v, n, 0);
		}
	}
	if (!n)
		return;
	qsort(v, n, sizeof(*v), cmp_index);
	s->leaks = xcalloc(n, sizeof(*s->leaks));
	s->nleaks = n;
	addrs = xcalloc(n, sizeof(*addrs));
	out = xcalloc(n, CAPTURE_HEAD);
	ok = xcalloc(n, sizeof(*ok));
	for (size_t i = 0; i < n; i++) {
		s->leaks[i].block = v[i];
		addrs[i] = h->blocks[v[i]].chunk + 16;
	}
	free(v);
	procimage_gather(s->img, addrs, n, CAPTURE_HEAD, out, ok);
	for (size_t i = 0; i < n; i++) {
		const struct heap_block *b = &h->blocks[s->leaks[i].block];
		uint64_t usable = heap_block_usable(b);

		if (!ok[i])
			continue;
		s->leaks[i].nhead = (uint8_t)(usable < CAPTURE_HEAD
						      ? usable
						      : CAPTURE_HEAD);
		memcpy(s->leaks[i].head, out + i * CAPTURE_HEAD,
		       s->leaks[i].nhead);
	}
	free(addrs);
	free(out);
	free(ok);
}

/* The typing's visitor and a hook's, both offered every piece. */
struct two_visitors {
	struct reach_visitor a, b;
};

static void both_block(void *ctx, size_t i, uint64_t offset,
		       const uint64_t *words, size_t nwords)
{
	struct two_visitors *v = ctx;

	if (v->a.block)
		v->a.block(v->a.ctx, i, offset, words, nwords);
	if (v->b.block)
		v->b.block(v->b.ctx, i, offset, words, nwords);
}

static void both_root(void *ctx, const struct heap_root_range *range,
		      uint64_t addr, const uint64_t *words, size_t nwords)
{
	struct two_visitors *v = ctx;

	if (v->a.root)
		v->a.root(v->a.ctx, range, addr, words, nwords);
	if (v->b.root)
		v->b.root(v->b.ctx, range, addr, words, nwords);
}

/*
 * With the image at one instant: the heap walked, who points at its
 * blocks and what they are, the leaked ones' first bytes; then what a
 * hook asks.
 */
static void read_heap(struct capture *s)
{
	struct procimage *img = s->img;
	const struct capture_hook *hook = s->hook;
	uint64_t *sps = xcalloc(img->nthreads + 1, sizeof(*sps));
	uint64_t *regs = xcalloc(img->nthreads + 1, IMAGE_NREGS * 8);
	struct two_visitors two;
	struct reach_visitor v;

	s->walked = heap_walk(&s->h, img) == 0;
	if (hook && hook->walked)
		hook->walked(s, hook->ctx);
	if (s->walked && !s->no_scan) {
		for (size_t i = 0; i < img->nthreads; i++) {
			sps[i] = img->threads[i].sp;
			memcpy(regs + i * IMAGE_NREGS, img->threads[i].regs,
			       sizeof(img->threads[i].regs));
		}
		reach_roots_build(&s->roots, img, &s->h, sps, regs, IMAGE_NREGS,
				 img->nthreads);
		typing_init(&s->types, &s->h, img);
		v = typing_visitor(&s->types);
		if (hook) {
			two.a = v;
			two.b = hook->visitor;
			v.block = both_block;
			v.root = both_root;
			v.ctx = &two;
		}
		s->scanned = reach_scan_run(&s->scan, &s->h, img, &s->roots,
					   &v) == 0;
		if (s->scanned)
			read_leaks(s);
		/* (A question reads types while the memory is at hand.) */
		if (s->scanned && hook)
			typing_finish(&s->types, &s->scan);
	}
	if (hook && hook->at_hand)
		hook->at_hand(s, hook->ctx);
	free(sps);
	free(regs);
}

/* The held threads, their stack pointers and registers, in the image. */
static void held_threads(struct capture *s, const struct procstop *stop)
{
	uint64_t regs[IMAGE_NREGS], sp;
	size_t n;

	for (size_t i = 0; i < stop->n; i++)
		if (procstop_registers(stop, i, &sp, regs, IMAGE_NREGS, &n))
			procimage_add_thread(&s->live, stop->tids[i], sp, regs,
					     n);
}

/*
 * For the tests: DMPROF_TEST_SIGNAL_HELD=N sends signal N to the process
 * before it is let go: with SIGKILL it exits while held (after what is
 * read of it), with SIGTERM right after.  Either way the snapshot of it
 * stands.
 */
static void test_signal(pid_t pid)
{
	const char *v = getenv("DMPROF_TEST_SIGNAL_HELD");

	if (v && atoi(v) > 0)
		kill(pid, atoi(v));
}

/*
 * Hold the process, read what must be one instant and copy what the
 * analysis reads, let it go, then walk, scan and type on the copy (or,
 * the copy too big, all of it while held).  Signals that would end
 * dmprof wait meanwhile: the process is let go first.
 */
static int take_once(struct capture *s)
{
	struct procstop stop;
	struct timespec now;
	sigset_t block, old;
	double t0 = now_seconds();
	struct strbuf said = STRBUF_INIT;
	int rc;

	prepare_copy(s);
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigprocmask(SIG_BLOCK, &block, &old);
	/* (What goes wrong is said once it is known whether the process
	 * exited meanwhile: killed before or while it was held.) */
	report_capture(&said);
	rc = procstop_stop(&stop, s->pid, STOP_TIMEOUT_MS);
	if (rc == 0) {
		s->threads = stop.n;
		clock_gettime(CLOCK_REALTIME, &now);
		s->time = (double)now.tv_sec + (double)now.tv_nsec / 1e9;
		/* Who it is, read while it is surely there. */
		free(s->name);
		free(s->command_line);
		s->name = comm_name(s->pid);
		s->command_line = command_line(s->pid);
		rc = procimage_open_pid(&s->live, s->pid);
		if (rc == 0) {
			held_threads(s, &stop);
			rc = read_resident(s);
		}
		if (rc == 0)
			rc = copy(s);
		if (rc == 0 && !s->copied) {
			s->img = &s->live;
			read_heap(s);
			split_vmas(s);
		}
		test_signal(s->pid);
		procstop_release(&stop);
		s->held = procstop_held_seconds(&stop);
		if (rc == 0 && s->copied) {
			s->img = &s->copy.img;
			read_heap(s);
			split_vmas(s);
		}
	}
	report_capture(NULL);
	if (rc < 0 && procstop_exited(s->pid))
		error("process %d exited during the snapshot", (int)s->pid);
	else
		report_replay(&said);
	sb_release(&said);
	sigprocmask(SIG_SETMASK, &old, NULL);
	s->took = now_seconds() - t0;
	return rc;
}

/* What one try read, gone (the command line stays). */
static void drop_reading(struct capture *s)
{
	for (size_t i = 0; s->vmas && i < s->img->maps.n; i++)
		page_counts_free(&s->vmas[i].pages);
	free(s->vmas);
	s->vmas = NULL;
	free(s->parts);
	s->parts = NULL;
	s->nparts = s->parts_alloc = 0;
	if (s->scanned) {
		reach_scan_release(&s->scan);
		free(s->leaks);
		s->leaks = NULL;
		s->nleaks = 0;
	}
	if (s->walked && !s->no_scan) {
		typing_release(&s->types);
		reach_roots_release(&s->roots);
	}
	heap_release(&s->h);
	if (s->core) {
		coreimage_close(s->core);
		free(s->core);
		s->core = NULL;
	} else {
		/* (The copy reads the rest from the process: first.  Not
		 * taken, it may hold mappings made ready.) */
		copyimage_close(&s->copy);
		if (s->live.name)
			procimage_close(&s->live);
	}
	s->copied = s->copy_too_big = false;
	s->img = NULL;
	s->walked = s->scanned = false;
}

/* ---- after ---- */

struct counting {
	struct capture *s;
	struct hashmap keys;   /* key -> bucket index + 1 */
	size_t alloc;
	size_t vma;            /* where the last block was */
};

/* The committed bytes of [A, B), in the split VMAs from C->vma on. */
static uint64_t committed(struct counting *c, uint64_t a, uint64_t b)
{
	const struct maps *m = &c->s->img->maps;
	uint64_t sum = 0;

	if (c->s->core)
		return coreimage_held(c->s->core, a, b);
	while (c->vma < m->n && m->v[c->vma].end <= a)
		c->vma++;
	for (size_t i = c->vma; i < m->n && m->v[i].start < b; i++) {
		const struct capture_vma *sv = &c->s->vmas[i];
		uint64_t lo = a > m->v[i].start ? a : m->v[i].start;
		uint64_t hi = b < m->v[i].end ? b : m->v[i].end;

		if (sv->pages.before)
			sum += page_counts_bytes(&sv->pages, lo, hi);
	}
	return sum;
}

/* What block I of S is known by, besides its state and arena. */
static void block_kind(const struct capture *s, size_t i, unsigned *cls,
		       uint32_t *type, bool *leaked)
{
	const struct heap_block *b = &s->h.blocks[i];

	*cls = 0;
	*type = 0;
	*leaked = false;
	if (b->state != HEAP_IN_USE)
		return;
	*cls = snap_size_class(heap_block_usable(b));
	if (s->scanned) {
		*type = s->types.of[i];
		*leaked = s->scan.state[i] == REACH_LEAKED ||
			  s->scan.state[i] == REACH_UNREFERENCED;
	}
}

/* Add a block of KEY's kind (its fields, and its bytes) to C's
 * buckets. */
static struct capture_bucket *bucket_of(struct counting *c,
					const struct capture_bucket *key)
{
	struct capture *s = c->s;
	uint64_t k = (uint64_t)key->type << 32 | (uint64_t)key->leaked << 31 |
		     (uint64_t)key->arena << 16 | (uint64_t)key->state << 12 |
		     key->cls;
	uint64_t hash = hash_u64(k);
	uintptr_t idx = (uintptr_t)hashmap_get(&c->keys, hash, NULL, NULL);
	struct capture_bucket *b;

	if (idx)
		return &s->buckets[idx - 1];
	GROW(s->buckets, s->nbuckets + 1, c->alloc);
	b = &s->buckets[s->nbuckets++];
	*b = *key;
	b->count = b->bytes = b->committed = 0;
	hashmap_put(&c->keys, hash, (void *)(uintptr_t)s->nbuckets);
	return b;
}

static void count_block(struct counting *c, size_t i)
{
	struct capture *s = c->s;
	const struct heap_block *hb = &s->h.blocks[i];
	struct capture_bucket key = { 0 }, *b;

	block_kind(s, i, &key.cls, &key.type, &key.leaked);
	key.state = hb->state;
	key.arena = hb->arena;
	b = bucket_of(c, &key);
	b->count++;
	b->bytes += hb->size;
	b->committed += committed(c, hb->chunk, hb->chunk + hb->size);
}

/* Arenas first (mmapped chunks last), then state, then size. */
static int cmp_bucket(const void *x, const void *y)
{
	const struct capture_bucket *a = x, *b = y;

	return CMP(a->arena, b->arena) ?: CMP(a->state, b->state) ?:
	       CMP(a->cls, b->cls) ?: CMP(a->leaked, b->leaked) ?:
	       CMP(a->type, b->type);
}

/* pymalloc's blocks in use: by size and type (when scanned); and the
 * committed bytes of its arenas they leave. */
static void count_python(struct counting *c)
{
	struct capture *s = c->s;
	const struct pymalloc *py = s->h.py;

	s->py_used_committed = 0;
	if (!py || !py->walked)
		return;
	c->vma = 0;
	for (size_t i = 0; i < py->nblocks; i++) {
		uint64_t a = py_block_addr(py->blocks[i]);
		uint64_t size = py_class_size(py, py_block_class(py->blocks[i]));
		struct capture_bucket key = { 0 }, *b;

		key.state = HEAP_IN_USE;
		key.cls = snap_size_class(size);
		key.arena = HEAP_PYMALLOC_ARENA;
		if (s->scanned && py->type_of[i] < s->types.npy)
			key.type = s->types.py_of[py->type_of[i]];
		b = bucket_of(c, &key);
		b->count++;
		b->bytes += size;
		size = committed(c, a, a + size);
		b->committed += size;
		s->py_used_committed += size;
	}
}

static void count_blocks(struct capture *s)
{
	struct counting c = { s, HASHMAP_INIT, 0, 0 };

	hashmap_init(&c.keys, 64);
	for (size_t i = 0; i < s->h.nblocks; i++)
		count_block(&c, i);
	count_python(&c);
	hashmap_free(&c.keys);
	if (s->nbuckets)
		qsort(s->buckets, s->nbuckets, sizeof(*s->buckets),
		      cmp_bucket);
}

/*
 * What needs no memory read, once the process goes on: the layouts
 * typed from the words kept, and the blocks counted.
 */
static void after(struct capture *s)
{
	/* (With a hook, read_heap finished the typing for it.) */
	if (s->scanned && !s->hook)
		typing_finish(&s->types, &s->scan);
	if (s->walked)
		count_blocks(s);
}

uint64_t capture_default_max_copy(void)
{
	FILE *f = fopen("/proc/meminfo", "re");
	char line[256];
	unsigned long long kb = 0;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb ? (uint64_t)kb * 1024 / 2 : (uint64_t)1 << 30;
}

int capture_process(struct capture *s, pid_t pid, bool scan,
		    uint64_t max_copy, const struct capture_hook *hook)
{
	memset(s, 0, sizeof(*s));
	s->pid = pid;
	s->no_scan = !scan;
	s->max_copy = max_copy;
	s->hook = hook;
	/* (Gone from here on, it exited during the snapshot.) */
	if (kill(pid, 0) < 0 && errno == ESRCH)
		return error("no process %d", (int)pid);
	for (;;) {
		s->tries++;
		if (take_once(s) < 0) {
			capture_free(s);
			return -1;
		}
		if (!s->walked || !heap_locked(&s->h) ||
		    s->tries == LOCKED_TRIES)
			break;
		drop_reading(s);
		usleep(1000u << s->tries);
	}
	after(s);
	return 0;
}

int capture_core(struct capture *s, const char *path,
		 const struct read_options *ro,
		 const struct capture_hook *hook)
{
	struct stat st;

	memset(s, 0, sizeof(*s));
	s->hook = hook;
	s->core = xcalloc(1, sizeof(*s->core));
	if (coreimage_open_at(s->core, path, ro ? ro->host_path : NULL,
			      ro ? ro->host_ctx : NULL) < 0) {
		free(s->core);
		s->core = NULL;
		return -1;
	}
	s->img = &s->core->img;
	s->pid = s->core->pid;
	/* (Whole from the stack, where it holds it: NT_PRPSINFO keeps 80
	 * bytes.) */
	s->command_line = coreimage_command_line(s->core);
	if (!s->command_line)
		s->command_line = xstrdup(s->core->args[0] ? s->core->args
							     : s->core->command);
	s->threads = s->core->nthreads;
	if (stat(path, &st) == 0)
		s->time = (double)st.st_mtim.tv_sec +
			  (double)st.st_mtim.tv_nsec / 1e9;
	read_heap(s);
	core_held(s);
	after(s);
	return 0;
}

void capture_say_python(const struct capture *s)
{
	const struct pymalloc *py = s->h.py;

	if (!py)
		return;
	if (!py->walked)
		fault_warning(&py->why, "; its objects are classed by mapping "
					"only");
	for (size_t i = 0; i < py->nproblems && i < 10; i++)
		fault_warning(&py->problems[i].f, NULL);
	if (py->nproblems > 10)
		warning("%zu more problems of pymalloc (the snapshot lists "
			"them all)", py->nproblems - 10);
}

void capture_say_unwalked(const struct capture *s, const char *why_more)
{
	char *more = s->h.allocator
		? xasprintf("%s; its mappings are classed as %s-arena, by "
			    "mapping only", why_more, s->h.allocator)
		: xasprintf("%s; its memory is classed by mapping only",
			    why_more);

	fault_warning(&s->h.why, more);
	free(more);
}

void capture_free(struct capture *s)
{
	drop_reading(s);
	FREE_ALL(s->ext, s->buckets, s->command_line, s->name);
	memset(s, 0, sizeof(*s));
}

/* ---- what it says, as records ---- */

/* Records handed to PUT with CTX, until one fails. */
struct emit {
	int (*put)(void *ctx, const struct snap_record *r);
	void *ctx;
	int rc;
	struct strbuf val, escaped;
};

static void put(struct emit *e, const struct snap_record *r)
{
	if (e->rc == 0)
		e->rc = e->put(e->ctx, r);
}

static void put_kind(struct emit *e, enum snap_record_kind kind)
{
	struct snap_record r = { .kind = kind };

	put(e, &r);
}

/*
 * META's KEY: the value formatted by FMT, escaped (escape.h: a command
 * line or a path may hold any byte but NUL, and a META line is one
 * line), as the file has it and the builder reads it.
 */
PRINTF(3, 4) static void meta(struct emit *e, const char *key,
			      const char *fmt, ...)
{
	struct snap_record r = { .kind = SNAP_META };
	va_list ap;

	sb_reset(&e->val);
	va_start(ap, fmt);
	sb_vaddf(&e->val, fmt, ap);
	va_end(ap);
	sb_reset(&e->escaped);
	escape_line(&e->escaped, e->val.buf ? e->val.buf : "", e->val.len);
	r.u.meta.key = key;
	r.u.meta.key_len = strlen(key);
	r.u.meta.value = e->escaped.buf ? e->escaped.buf : "";
	r.u.meta.value_len = e->escaped.len;
	put(e, &r);
}

static void emit_meta(struct emit *e, const struct capture *s)
{
	meta(e, "Time", "%.6f", s->time);
	meta(e, "Pid", "%d", (int)s->pid);
	meta(e, "CommandLine", "%s", s->command_line);
	meta(e, "Reason", "snapshot");
	if (s->core) {
		meta(e, "Core", "%s", s->core->path);
		meta(e, "Committed", "what the core holds (a core has no "
				     "residency)");
	} else {
		meta(e, "HeldSeconds", "%.6f", s->held);
		meta(e, "TookSeconds", "%.6f", s->took);
		if (s->copied)
			meta(e, "Copied", "%" PRIu64 " bytes, walked and "
					  "scanned once the process went on",
			     s->copy.bytes);
		else if (s->other_malloc)
			meta(e, "Copied", "no: malloc is %s's, not walked",
			     s->other_malloc);
		else if (s->copy_too_big)
			meta(e, "Copied", "no: %" PRIu64 " bytes, more than "
					  "%" PRIu64 " (--max-copy): held "
					  "while walked and scanned",
			     s->copy_wanted, s->max_copy);
	}
	meta(e, "Threads", "%zu", s->threads);
	meta(e, "PageSize", "%ld", sysconf(_SC_PAGESIZE));
	if (!s->core) {
		meta(e, "Rss", "%" PRIu64, s->total.rss);
		meta(e, "Pss", "%" PRIu64, s->total.pss);
		meta(e, "Swap", "%" PRIu64, s->total.swap);
	}
	if (!s->walked && s->h.allocator)
		meta(e, "Allocator", "%s", s->h.allocator);
	if (s->h.py && s->h.py->walked)
		meta(e, "Python", "%u.%u.%u %s: pymalloc, %zu arena%s, %zu "
				  "blocks in use", s->h.py->major,
		     s->h.py->minor, s->h.py->micro, s->h.py->module,
		     s->h.py->narenas, s->h.py->narenas == 1 ? "" : "s",
		     s->h.py->nblocks);
	else if (s->h.py)
		meta(e, "Python", "%u.%u.%u %s: pymalloc not walked (%s)",
		     s->h.py->major, s->h.py->minor, s->h.py->micro,
		     s->h.py->module, s->h.py->why.what);
	if (!s->walked)
		meta(e, "Heap", "none (%s)", s->h.why.what);
	else
		meta(e, "Heap", "glibc 2.36, main_arena 0x%" PRIx64 ", %zu "
				"arena%s, %zu tcache%s, %" PRIu64 " mmapped "
				"chunk%s",
		     s->h.arenas[0].addr, s->h.narenas,
		     s->h.narenas == 1 ? "" : "s", s->h.ntcaches,
		     s->h.ntcaches == 1 ? "" : "s", s->h.mmapped_count,
		     s->h.mmapped_count == 1 ? "" : "s");
}

/* Type T of the snapshot's, as a record's. */
static struct snap_type snap_type(const struct capture *s, uint32_t t)
{
	struct snap_type out = { SNAP_TYPE_NONE, 0, NULL, 0 };
	const struct block_type *ty;

	if (!t || !s->scanned || t >= s->types.ntypes)
		return out;
	ty = &s->types.types[t];
	out.kind = ty->kind == TYPE_CLASS ? SNAP_TYPE_CLASS
		 : ty->kind == TYPE_PYTHON ? SNAP_TYPE_PYTHON
					   : SNAP_TYPE_LAYOUT;
	out.typeinfo = ty->typeinfo;
	out.name = ty->name;
	out.name_len = strlen(ty->name);
	return out;
}

static int where_of(unsigned arena)
{
	return arena == HEAP_MMAPPED_ARENA ? SNAP_WHERE_MMAPPED
	     : arena == HEAP_PYMALLOC_ARENA ? SNAP_WHERE_PYMALLOC
					     : (int)arena;
}

/* What the scan found: totals, then the leaked blocks listed. */
static void emit_reach(struct emit *e, const struct capture *s)
{
	const struct reach_scan *sc = &s->scan;
	struct snap_record r = { .kind = SNAP_REACH };

	r.u.reach.anchored_count = sc->count[REACH_ANCHORED];
	r.u.reach.anchored_bytes = sc->bytes[REACH_ANCHORED];
	r.u.reach.leaked_count = sc->count[REACH_LEAKED];
	r.u.reach.leaked_bytes = sc->bytes[REACH_LEAKED];
	r.u.reach.unreferenced_count = sc->count[REACH_UNREFERENCED];
	r.u.reach.unreferenced_bytes = sc->bytes[REACH_UNREFERENCED];
	r.u.reach.listed = s->nleaks;
	put(e, &r);
	for (size_t i = 0; i < s->nleaks; i++) {
		const struct capture_leak *l = &s->leaks[i];
		const struct heap_block *b = &s->h.blocks[l->block];

		memset(&r, 0, sizeof(r));
		r.kind = SNAP_LISTED;
		r.u.listed.addr = b->chunk + 16;
		r.u.listed.size = b->size;
		r.u.listed.where = where_of(b->arena);
		r.u.listed.unreferenced =
			s->scan.state[l->block] == REACH_UNREFERENCED;
		r.u.listed.head = l->head;
		r.u.listed.nhead = l->nhead;
		r.u.listed.type = snap_type(s, s->types.of[l->block]);
		put(e, &r);
	}
}

/* pymalloc summed up (its free bytes: what blocks in use leave of its
 * arenas), and sys._debugmallocstats()'s rows. */
static void emit_python(struct emit *e, const struct capture *s)
{
	const struct pymalloc *py = s->h.py;
	struct snap_record r = { .kind = SNAP_PYMALLOC };
	uint64_t used = 0;

	for (size_t i = 0; i < s->nbuckets; i++)
		if (s->buckets[i].arena == HEAP_PYMALLOC_ARENA)
			used += s->buckets[i].bytes;
	r.u.pymalloc.arenas = py->narenas;
	r.u.pymalloc.unused_pools = py->unused_pools;
	r.u.pymalloc.alignment = py->arena_alignment;
	r.u.pymalloc.free = py->arena_bytes - used;
	r.u.pymalloc.free_committed = s->py_committed - s->py_used_committed;
	/* (A hostile table may say less than its blocks hold.) */
	if (used > py->arena_bytes)
		r.u.pymalloc.free = 0;
	if (s->py_used_committed > s->py_committed)
		r.u.pymalloc.free_committed = 0;
	if (r.u.pymalloc.free_committed > r.u.pymalloc.free)
		r.u.pymalloc.free_committed = r.u.pymalloc.free;
	put(e, &r);
	for (unsigned k = 0; k < py->lay->nclasses; k++) {
		if (!py->classes[k].pools)
			continue;
		memset(&r, 0, sizeof(r));
		r.kind = SNAP_PYCLASS;
		r.u.pyclass.index = k;
		r.u.pyclass.size = py_class_size(py, k);
		r.u.pyclass.pools = py->classes[k].pools;
		r.u.pyclass.used = py->classes[k].used;
		r.u.pyclass.avail = py->classes[k].avail;
		put(e, &r);
	}
}

static void emit_heap(struct emit *e, const struct capture *s)
{
	const struct heap *h = &s->h;
	struct snap_record r;

	put_kind(e, SNAP_HEAP);
	for (size_t k = 0; k < h->narenas; k++) {
		const struct heap_arena *a = &h->arenas[k];

		memset(&r, 0, sizeof(r));
		r.kind = SNAP_ARENA;
		r.u.arena.index = k;
		r.u.arena.addr = a->addr;
		r.u.arena.heaps = a->nheaps;
		r.u.arena.system = a->system_mem;
		r.u.arena.overhead = a->t.overhead;
		r.u.arena.unknown = a->t.unknown;
		r.u.arena.locked = a->locked;
		r.u.arena.corrupt = a->corrupt;
		put(e, &r);
	}
	memset(&r, 0, sizeof(r));
	r.kind = SNAP_TCACHES;
	r.u.tcaches = h->ntcaches;
	put(e, &r);
	for (size_t i = 0; i < s->nbuckets; i++) {
		const struct capture_bucket *b = &s->buckets[i];

		memset(&r, 0, sizeof(r));
		r.kind = SNAP_BLOCKS;
		r.u.blocks.state = b->state;
		if (b->state == HEAP_IN_USE)
			snap_size_bounds(b->cls, &r.u.blocks.lo,
					 &r.u.blocks.hi);
		r.u.blocks.where = where_of(b->arena);
		r.u.blocks.count = b->count;
		r.u.blocks.bytes = b->bytes;
		r.u.blocks.committed = b->committed;
		r.u.blocks.leaked = b->leaked;
		r.u.blocks.type = snap_type(s, b->type);
		put(e, &r);
	}
	if (h->py && h->py->walked)
		emit_python(e, s);
	if (s->scanned)
		emit_reach(e, s);
	for (size_t i = 0; i < h->nproblems; i++) {
		memset(&r, 0, sizeof(r));
		r.kind = SNAP_PROBLEM;
		r.u.problem.addr = h->problems[i].f.where.addr;
		r.u.problem.arena = h->problems[i].arena;
		r.u.problem.msg = h->problems[i].f.what;
		put(e, &r);
	}
	for (size_t i = 0; h->py && i < h->py->nproblems; i++) {
		memset(&r, 0, sizeof(r));
		r.kind = SNAP_PROBLEM;
		r.u.problem.addr = h->py->problems[i].f.where.addr;
		r.u.problem.arena = -1;
		r.u.problem.msg = h->py->problems[i].f.what;
		put(e, &r);
	}
}

static void emit_maps(struct emit *e, const struct capture *s)
{
	const struct maps *m = &s->img->maps;
	struct snap_record r;

	put_kind(e, SNAP_MAPS);
	for (size_t i = 0; i < m->n; i++) {
		const struct capture_vma *sv = &s->vmas[i];

		memset(&r, 0, sizeof(r));
		r.kind = SNAP_VMA;
		r.u.vma.committed = sv->committed;
		r.u.vma.rss = sv->r.rss;
		r.u.vma.swap = sv->r.swap;
		r.u.vma.v = m->v[i];
		put(e, &r);
		for (size_t k = 0; k < sv->nparts; k++) {
			const struct capture_part *p =
				&s->parts[sv->first_part + k];

			memset(&r, 0, sizeof(r));
			r.kind = SNAP_PART;
			r.u.part.start = p->start;
			r.u.part.end = p->end;
			r.u.part.committed = p->committed;
			r.u.part.where =
				p->where == PART_NONE ? SNAP_WHERE_NONE
				: p->where == PART_THREAD_STACK
					? SNAP_WHERE_THREAD_STACK
				: p->where == PART_ALLOCATOR
					? SNAP_WHERE_ALLOCATOR
				: p->where == PART_PYMALLOC
					? SNAP_WHERE_PYMALLOC
					: where_of((unsigned)p->where);
			put(e, &r);
		}
	}
}

int capture_emit(const struct capture *s,
		  int (*put_record)(void *ctx, const struct snap_record *r),
		  void *ctx)
{
	struct emit e = { put_record, ctx, 0, STRBUF_INIT, STRBUF_INIT };

	emit_meta(&e, s);
	if (s->walked)
		emit_heap(&e, s);
	emit_maps(&e, s);
	sb_release(&e.val);
	sb_release(&e.escaped);
	return e.rc;
}

int capture_write(const struct capture *s, const char *path)
{
	char *tmp = xasprintf("%s.tmp", path);
	FILE *f = fopen(tmp, "we");
	struct snap_writer w;
	int rc = 0;

	if (!f) {
		rc = error_errno("cannot write %s", tmp);
		free(tmp);
		return rc;
	}
	snapfile_writer_init(&w, f);
	capture_emit(s, snapfile_put, &w);
	if (ferror(f) | fclose(f))
		rc = error_errno("cannot write %s", tmp);
	else if (rename(tmp, path) < 0)
		rc = error_errno("cannot rename %s to %s", tmp, path);
	if (rc < 0)
		unlink(tmp);
	free(tmp);
	return rc;
}
