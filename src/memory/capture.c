/*
 * Taking a snapshot of a live process.  While its threads are held only
 * what must be one instant is read: the maps, smaps' Rss and Swap of
 * each mapping, the heap walk, and the pagemap of the mappings the heap
 * lies in (the heap's arenas and mmapped chunks cut them, and each part
 * needs its own committed bytes).  Then the process goes on, and the
 * blocks are counted into their buckets (each block's committed bytes
 * from the pagemap read) and written out.
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
#include "util.h"

/* How long a thread may take to stop; tries while an arena is locked. */
#define STOP_TIMEOUT_MS 2000
#define LOCKED_TRIES 5
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

/* A part of VMA I that is not the heap's: a thread's stack, or not. */
static void add_gap(struct capture *s, size_t i, uint64_t a, uint64_t b)
{
	const struct vma *v = &s->img->maps.v[i];

	add_part(s, a, b, thread_stack(s, v, a, b) ? PART_THREAD_STACK
						   : PART_NONE,
		 s->core ? coreimage_held(s->core, a, b)
			 : page_counts_bytes(&s->vmas[i].pages, a, b));
}

/*
 * VMA I cut by the heap's extents from *AT on (sorted): its parts, each
 * with its committed bytes, from its pagemap.
 */
static int split_vma(struct capture *s, struct pagemap *pm, size_t i,
		     size_t *at)
{
	const struct vma *v = &s->img->maps.v[i];
	struct capture_vma *sv = &s->vmas[i];
	const struct heap *h = &s->h;
	uint64_t pos = v->start;

	if (pm && pagemap_counts(pm, v->start, v->end, &sv->pages) < 0)
		return -1;
	sv->first_part = s->nparts;
	for (; *at < h->nextents && h->extents[*at].start < v->end; (*at)++) {
		const struct heap_extent *e = &h->extents[*at];
		uint64_t a = e->start > pos ? e->start : pos;
		uint64_t b = e->end < v->end ? e->end : v->end;

		add_gap(s, i, pos, a);
		add_part(s, a, b, (int)e->arena,
			 pm ? page_counts_bytes(&sv->pages, a, b)
			    : coreimage_held(s->core, a, b));
		pos = b;
		/* (An extent past this VMA goes on in the next.) */
		if (e->end > v->end)
			break;
	}
	add_gap(s, i, pos, v->end);
	sv->nparts = s->nparts - sv->first_part;
	if (pm)
		sv->committed = page_counts_bytes(&sv->pages, v->start, v->end);
	return 0;
}

/* VMA I, a thread's stack, as one part (of smaps' committed bytes). */
static void stack_vma(struct capture *s, size_t i)
{
	const struct vma *v = &s->img->maps.v[i];
	struct capture_vma *sv = &s->vmas[i];

	sv->first_part = s->nparts;
	add_part(s, v->start, v->end, PART_THREAD_STACK, sv->committed);
	sv->nparts = 1;
}

/*
 * The mappings the heap's extents lie in, cut into parts, and those the
 * threads' stacks are in, known by their stack pointers: PM reads a live
 * process's pages, a core's are what it holds (PM NULL).
 */
static int split_vmas(struct capture *s, struct pagemap *pm)
{
	const struct maps *m = &s->img->maps;
	const struct heap *h = &s->h;
	size_t at = 0;
	int rc = 0;

	for (size_t i = 0; i < m->n && rc == 0; i++) {
		const struct vma *v = &m->v[i];

		while (at < h->nextents && h->extents[at].end <= v->start)
			at++;
		if (at < h->nextents && h->extents[at].start < v->end)
			rc = split_vma(s, pm, i, &at);
		else if (thread_stack(s, v, v->start, v->end))
			stack_vma(s, i);
	}
	return rc;
}

/*
 * Each mapping's committed bytes: smaps' Rss + Swap, or the pagemap's
 * count of the parts of those the heap lies in.
 */
static int read_resident(struct capture *s)
{
	const struct maps *m = &s->img->maps;
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
	if (rc < 0)
		return rc;
	if (s->h.nextents && pagemap_open(&pm, s->pid) < 0)
		return -1;
	rc = split_vmas(s, &pm);
	if (s->h.nextents)
		pagemap_close(&pm);
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
	split_vmas(s, NULL);
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
			procimage_add_thread(s->img, stop->tids[i], sp, regs,
					     n);
}

/*
 * Hold the process, read what must be one instant, let it go.  Signals
 * that would end dmprof wait meanwhile: the process is let go first.
 */
static int take_once(struct capture *s)
{
	struct procstop stop;
	struct timespec now;
	sigset_t block, old;
	int rc;

	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigprocmask(SIG_BLOCK, &block, &old);
	rc = procstop_stop(&stop, s->pid, STOP_TIMEOUT_MS);
	if (rc == 0) {
		s->threads = stop.n;
		clock_gettime(CLOCK_REALTIME, &now);
		s->time = (double)now.tv_sec + (double)now.tv_nsec / 1e9;
		rc = procimage_open_pid(&s->live, s->pid);
		if (rc == 0) {
			s->img = &s->live;
			held_threads(s, &stop);
			read_heap(s);
			rc = read_resident(s);
		}
		procstop_release(&stop);
		s->held = procstop_held_seconds(&stop);
		if (procstop_exited(s->pid))
			rc = error("process %d exited during the snapshot",
				   (int)s->pid);
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
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
	} else if (s->live.name) {
		procimage_close(&s->live);
	}
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

static void count_block(struct counting *c, size_t i)
{
	struct capture *s = c->s;
	const struct heap_block *b = &s->h.blocks[i];
	unsigned cls;
	uint32_t type;
	bool leaked;
	uint64_t key;

	block_kind(s, i, &cls, &type, &leaked);
	key = (uint64_t)type << 32 | (uint64_t)leaked << 31 |
	      (uint64_t)b->arena << 16 | (uint64_t)b->state << 12 | cls;
	uint64_t hash = hash_u64(key);
	uintptr_t idx = (uintptr_t)hashmap_get(&c->keys, hash, NULL, NULL);
	struct capture_bucket *k;

	if (!idx) {
		GROW(s->buckets, s->nbuckets + 1, c->alloc);
		k = &s->buckets[s->nbuckets++];
		memset(k, 0, sizeof(*k));
		k->state = b->state;
		k->cls = cls;
		k->arena = b->arena;
		k->type = type;
		k->leaked = leaked;
		hashmap_put(&c->keys, hash, (void *)(uintptr_t)s->nbuckets);
	} else {
		k = &s->buckets[idx - 1];
	}
	k->count++;
	k->bytes += b->size;
	k->committed += committed(c, b->chunk, b->chunk + b->size);
}

/* Arenas first (mmapped chunks last), then state, then size. */
static int cmp_bucket(const void *x, const void *y)
{
	const struct capture_bucket *a = x, *b = y;

	if (a->arena != b->arena)
		return a->arena < b->arena ? -1 : 1;
	if (a->state != b->state)
		return a->state < b->state ? -1 : 1;
	if (a->cls != b->cls)
		return a->cls < b->cls ? -1 : 1;
	if (a->leaked != b->leaked)
		return a->leaked ? 1 : -1;
	return a->type < b->type ? -1 : a->type > b->type;
}

static void count_blocks(struct capture *s)
{
	struct counting c = { s, HASHMAP_INIT, 0, 0 };

	hashmap_init(&c.keys, 64);
	for (size_t i = 0; i < s->h.nblocks; i++)
		count_block(&c, i);
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
	if (s->scanned)
		typing_finish(&s->types, &s->scan);
	if (s->walked)
		count_blocks(s);
}

int capture_process(struct capture *s, pid_t pid, bool scan,
		    const struct capture_hook *hook)
{
	memset(s, 0, sizeof(*s));
	s->pid = pid;
	s->no_scan = !scan;
	s->hook = hook;
	s->command_line = command_line(pid);
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

void capture_free(struct capture *s)
{
	drop_reading(s);
	free(s->buckets);
	free(s->command_line);
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
	}
	meta(e, "Threads", "%zu", s->threads);
	meta(e, "PageSize", "%ld", sysconf(_SC_PAGESIZE));
	if (!s->core) {
		meta(e, "Rss", "%" PRIu64, s->total.rss);
		meta(e, "Pss", "%" PRIu64, s->total.pss);
		meta(e, "Swap", "%" PRIu64, s->total.swap);
	}
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
	out.kind = ty->kind == TYPE_CLASS ? SNAP_TYPE_CLASS : SNAP_TYPE_LAYOUT;
	out.typeinfo = ty->typeinfo;
	out.name = ty->name;
	out.name_len = strlen(ty->name);
	return out;
}

static int where_of(unsigned arena)
{
	return arena == HEAP_MMAPPED_ARENA ? SNAP_WHERE_MMAPPED : (int)arena;
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
