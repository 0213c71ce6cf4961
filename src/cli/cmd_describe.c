/*
 * dmprof describe PID|CORE|DUMP ADDRESS...: what each address is, as
 * chap's describe says it: the block in use it falls in (its type,
 * whether anything reachable points at it, who points at it, what it
 * points at, its first bytes), or the free chunk, the arena's own
 * headers, the thread's stack, the mapping it falls in, or none.  A
 * process is held still while its memory is read (as a snapshot holds
 * it), a core read as a snapshot reads it; a dump (a snapshot file)
 * says what it kept: its mappings and the largest leaked blocks, no
 * references: where that is not enough, the process or a core is.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blocktypes.h"
#include "capture.h"
#include "inspect.h"
#include "numfmt.h"
#include "profile.h"
#include "pymalloc.h"
#include "scan.h"
#include "setup.h"
#include "util.h"

static const char *const usage[] = { "PID ADDRESS...", "CORE ADDRESS...",
				     "DUMP ADDRESS...", NULL };
static const struct cmd_option options[] = {
	OPT_END,
};

/* ---- a process or a core, read block by block ---- */

/* The thread of IMG whose stack pointer is the lowest in V, or NULL. */
static const struct image_thread *thread_of(const struct procimage *img,
					    const struct vma *v)
{
	const struct image_thread *best = NULL;

	for (size_t i = 0; v && i < img->nthreads; i++) {
		const struct image_thread *t = &img->threads[i];

		if (t->sp >= v->start && t->sp < v->end &&
		    (!best || t->sp < best->sp))
			best = t;
	}
	return best;
}

/* A mapping for people: "/usr/bin/x (r--p 555...-555...)". */
static void mapping_text(struct strbuf *sb, const struct vma *v)
{
	if (!v->name[0])
		sb_addstr(sb, "an anonymous mapping");
	else if (v->name[0] == '[')
		sb_addstr(sb, v->name);
	else
		sb_addf(sb, "a mapping of %s", v->name);
	sb_addf(sb, " (%s %" PRIx64 "-%" PRIx64 ")", v->perms, v->start,
		v->end);
}

/* Block I of S for people: "block 0x... (Session, 40 bytes, leaked)". */
static void block_text(struct strbuf *sb, const struct capture *s, size_t i)
{
	static const char *const reach[] = { "", "anchored", "leaked",
					     "leaked, unreferenced" };
	const struct heap_block *b = &s->h.blocks[i];
	struct strbuf name = STRBUF_INIT;

	sb_addf(sb, "block 0x%" PRIx64 " (%s, %" PRIu64 " bytes", b->chunk + 16,
		inspect_type_name(s, i, &name), heap_block_usable(b));
	if (s->scanned && s->scan.state[i])
		sb_addf(sb, ", %s", reach[s->scan.state[i] & 3]);
	sb_addch(sb, ')');
	sb_release(&name);
}

/* Block I of pymalloc's for people: "object 0x... (str, 48 bytes)". */
static void py_block_text(struct strbuf *sb, const struct capture *s,
			  size_t i)
{
	const struct pymalloc *py = s->h.py;
	uint64_t b = py->blocks[i];

	sb_addf(sb, "Python object 0x%" PRIx64 " (%s, %" PRIu64 " bytes)",
		py_block_addr(b),
		py->type_of[i] ? py->types[py->type_of[i]].name
			       : "type unknown",
		py_class_size(py, py_block_class(b)));
}

/* The block of pymalloc's at ADDR, or -1. */
static ptrdiff_t py_at(const struct capture *s, uint64_t addr)
{
	return s->h.py && s->h.py->walked ? pymalloc_find(s->h.py, addr) : -1;
}

/* Where an incoming reference R of S lies. */
static void ref_from(struct strbuf *sb, const struct capture *s,
		     const struct inspect_target *t,
		     const struct inspect_ref *r)
{
	const struct vma *v;
	const struct image_thread *th;
	ptrdiff_t j;

	if (r->block >= 0) {
		const struct heap_block *b = &s->h.blocks[r->block];

		sb_addf(sb, "0x%016" PRIx64 "  at +%" PRIu64 " of ", r->at,
			r->at - (b->chunk + 16));
		if (r->block == t->block)
			sb_addstr(sb, "the block itself");
		else
			block_text(sb, s, (size_t)r->block);
		return;
	}
	if (r->root == ROOT_REGISTERS) {
		sb_addf(sb, "%-18s  register %s of thread %d (a root)", "",
			inspect_reg_name(r->reg),
			(int)s->img->threads[r->thread].tid);
		return;
	}
	sb_addf(sb, "0x%016" PRIx64 "  ", r->at);
	if ((j = py_at(s, r->at)) >= 0) {
		sb_addf(sb, "at +%" PRIu64 " of ",
			r->at - py_block_addr(s->h.py->blocks[j]));
		if (t->place == PLACE_PYBLOCK && j == t->block)
			sb_addstr(sb, "the object itself");
		else
			py_block_text(sb, s, (size_t)j);
		return;
	}
	if (pymalloc_in_arenas(s->h.py, r->at)) {
		sb_addstr(sb, "pymalloc's arenas, in no block in use (a root)");
		return;
	}
	v = maps_find(&s->img->maps, r->at);
	th = thread_of(s->img, v);
	if (r->root == ROOT_STACK && th)
		sb_addf(sb, "the stack of thread %d", (int)th->tid);
	else if (r->root == ROOT_DATA && v && v->name[0] &&
		 v->name[0] != '[')
		sb_addf(sb, "the data of %s", v->name);
	else if (r->root == ROOT_DATA && v && v > s->img->maps.v &&
		 v[-1].name[0] && v[-1].name[0] != '[')
		sb_addf(sb, "the .bss of %s", v[-1].name);
	else if (r->root == ROOT_DATA)
		sb_addstr(sb, "a binary's .bss");
	else if (v)
		mapping_text(sb, v);
	else
		sb_addstr(sb, "memory outside the heap");
	sb_addstr(sb, " (a root)");
}

static void say_refs(const struct capture *s, const struct inspect_target *t)
{
	struct strbuf sb = STRBUF_INIT;
	bool py = t->place == PLACE_PYBLOCK;
	uint64_t lo = py ? t->lo : s->h.blocks[t->block].chunk + 16;

	printf("  pointed at by %" PRIu64 " word%s%s\n", t->in_count,
	       t->in_count == 1 ? "" : "s", t->in_count ? ":" : "");
	for (size_t k = 0; k < t->nin; k++) {
		sb_reset(&sb);
		ref_from(&sb, s, t, &t->in[k]);
		if (t->in[k].value != lo)
			sb_addf(&sb, ", to +%" PRId64,
				(int64_t)(t->in[k].value - lo));
		printf("    %s\n", sb.buf);
	}
	if (t->in_count > t->nin)
		printf("    (%" PRIu64 " more)\n", t->in_count - t->nin);
	if (!py && s->h.blocks[t->block].state != HEAP_IN_USE) {
		sb_release(&sb);
		return;
	}
	printf("  points at %" PRIu64 " block%s in use%s\n", t->out_count,
	       t->out_count == 1 ? "" : "s", t->out_count ? ":" : "");
	for (size_t k = 0; k < t->nout; k++) {
		const struct inspect_ref *r = &t->out[k];
		uint64_t to = r->py ? py_block_addr(s->h.py->blocks[r->block])
				    : s->h.blocks[r->block].chunk + 16;

		sb_reset(&sb);
		if (r->block == t->block && r->py == py)
			sb_addstr(&sb, "the block itself");
		else if (r->py)
			py_block_text(&sb, s, (size_t)r->block);
		else
			block_text(&sb, s, (size_t)r->block);
		printf("    +%-6" PRIu64 " 0x%016" PRIx64 "  ", r->at - lo,
		       r->value);
		if (r->value != to)
			printf("%" PRIu64 " bytes into ", r->value - to);
		printf("%s\n", sb.buf);
	}
	if (t->out_count > t->nout)
		printf("    (%" PRIu64 " more)\n", t->out_count - t->nout);
	sb_release(&sb);
}

static void say_bytes(const struct inspect_target *t)
{
	struct strbuf sb = STRBUF_INIT;
	size_t n = t->nbytes < 64 ? t->nbytes : 64;

	if (!n) {
		printf("  its bytes could not be read%s\n",
		       t->unread ? " (not in the core?)" : "");
		return;
	}
	printf("  its first %zu bytes:\n", n);
	format_hexdump(&sb, t->bytes, n, "    ");
	fputs(sb.buf, stdout);
	sb_release(&sb);
}

/* A block in use, or a free chunk, that T's address falls in. */
static void say_chunk(const struct capture *s, const struct inspect_target *t)
{
	static const char *const reach[] = {
		"not scanned",
		"anchored: something reachable from the roots points at it",
		"leaked: nothing reachable points at it",
		"leaked and unreferenced: nothing reachable points at it, "
		"nor any leaked block",
	};
	const struct heap_block *b = &s->h.blocks[t->block];
	uint64_t user = b->chunk + 16;
	struct strbuf sb = STRBUF_INIT;
	char arena[32];

	if (b->arena == HEAP_MMAPPED_ARENA)
		snprintf(arena, sizeof(arena), "mapped alone");
	else
		snprintf(arena, sizeof(arena), "in arena %u",
			 (unsigned)b->arena);
	if (t->place == PLACE_FREE) {
		printf("0x%" PRIx64 ": %" PRIu64 " bytes into a free chunk at "
		       "0x%" PRIx64 " (%" PRIu64 " bytes %s, free: %s)\n",
		       t->addr, t->addr - b->chunk, b->chunk,
		       (uint64_t)b->size, arena, heap_state_name(b->state));
		printf("  free: what it holds is stale, and a word that points "
		       "at it dangles (the arenas' own lists are not "
		       "counted)\n");
		say_refs(s, t);
		say_bytes(t);
		return;
	}
	if (t->place == PLACE_HEADER)
		printf("0x%" PRIx64 ": in the header of the chunk of a block in "
		       "use at 0x%" PRIx64 "\n", t->addr, user);
	else if (t->addr == user)
		printf("0x%" PRIx64 ": a block in use\n", t->addr);
	else
		printf("0x%" PRIx64 ": %" PRIu64 " bytes into a block in use at "
		       "0x%" PRIx64 "\n", t->addr, t->addr - user, user);
	printf("  block 0x%" PRIx64 ": %" PRIu64 " bytes (a chunk of %" PRIu64
	       " %s)\n", user, heap_block_usable(b), (uint64_t)b->size, arena);
	if (t->value)
		printf("  type: %s\n", t->value);
	else if (s->scanned && s->types.of[t->block])
		printf("  type: %s\n",
		       inspect_type_name(s, (size_t)t->block, &sb));
	else
		printf("  type: none known (%s)\n",
		       inspect_type_name(s, (size_t)t->block, &sb));
	printf("  %s\n", reach[s->scanned ? s->scan.state[t->block] & 3 : 0]);
	if (s->scanned)
		say_refs(s, t);
	say_bytes(t);
	sb_release(&sb);
}

/* A block of pymalloc's that T's address falls in. */
static void say_py_block(const struct capture *s,
			 const struct inspect_target *t)
{
	const struct pymalloc *py = s->h.py;
	uint32_t ty = py->type_of[t->block];

	if (t->addr == t->lo)
		printf("0x%" PRIx64 ": a Python object\n", t->addr);
	else
		printf("0x%" PRIx64 ": %" PRIu64 " bytes into a Python object "
		       "at 0x%" PRIx64 "\n", t->addr, t->addr - t->lo, t->lo);
	printf("  block 0x%" PRIx64 ": %" PRIu64 " bytes of pymalloc's (size "
	       "class %u)\n", t->lo, t->hi - t->lo,
	       py_block_class(py->blocks[t->block]));
	if (t->value)
		printf("  type: %s\n", t->value);
	else
		printf("  type: %s\n", ty ? py->types[ty].name : "none known");
	if (s->scanned)
		say_refs(s, t);
	say_bytes(t);
}

static void say_target(const struct capture *s, const struct inspect_target *t)
{
	const struct vma *v = t->vma >= 0 ? &s->img->maps.v[t->vma] : NULL;
	struct strbuf sb = STRBUF_INIT;

	switch (t->place) {
	case PLACE_BLOCK:
	case PLACE_HEADER:
	case PLACE_FREE:
		say_chunk(s, t);
		break;
	case PLACE_PYBLOCK:
		say_py_block(s, t);
		break;
	case PLACE_PYFREE:
		printf("0x%" PRIx64 ": in pymalloc's arenas, in no block in use "
		       "(a free block, a pool's header or an unused pool)\n",
		       t->addr);
		break;
	case PLACE_HEAP:
		if (t->arena == HEAP_MMAPPED_ARENA)
			printf("0x%" PRIx64 ": in a chunk mapped alone, past "
			       "its bytes\n", t->addr);
		else
			printf("0x%" PRIx64 ": in arena %u's heap, in no chunk: "
			       "the arena's own headers\n", t->addr, t->arena);
		break;
	case PLACE_STACK: {
		const struct image_thread *th = &s->img->threads[t->thread];

		mapping_text(&sb, v);
		printf("0x%" PRIx64 ": in the stack of thread %d, ", t->addr,
		       (int)th->tid);
		if (t->addr >= th->sp)
			printf("%" PRIu64 " bytes above its stack pointer "
			       "0x%" PRIx64 "\n", t->addr - th->sp, th->sp);
		else
			printf("%" PRIu64 " bytes below its stack pointer "
			       "0x%" PRIx64 " (not in use)\n",
			       th->sp - t->addr, th->sp);
		printf("  %s\n", sb.buf);
		break;
	}
	case PLACE_MAPPING:
		mapping_text(&sb, v);
		printf("0x%" PRIx64 ": in %s", t->addr, sb.buf);
		if (v->name[0] && v->name[0] != '[')
			printf(", at 0x%" PRIx64 " in the file",
			       t->addr - v->start + v->offset);
		printf("\n");
		break;
	case PLACE_NONE:
		printf("0x%" PRIx64 ": in no mapping\n", t->addr);
		break;
	}
	sb_release(&sb);
}

/* Describe IN's addresses of process PID (CORE NULL) or of CORE. */
static int describe_memory(struct cmd_args *a, pid_t pid, const char *core,
			   struct inspect *in)
{
	struct capture s;

	if ((core ? capture_core(&s, core, &a->read, &in->hook)
		  : capture_process(&s, pid, true,
				    capture_default_max_copy(),
				    &in->hook)) < 0)
		return 1;
	if (core)
		printf("core %s: process %d, %zu thread%s\n", core,
		       (int)s.pid, s.threads, s.threads == 1 ? "" : "s");
	else
		printf("process %d: %zu thread%s held still %.1f ms\n",
		       (int)s.pid, s.threads, s.threads == 1 ? "" : "s",
		       s.held * 1e3);
	if (!s.walked)
		printf("no heap walked: %s\n", s.h.why.what ? s.h.why.what
							   : "?");
	for (size_t k = 0; k < in->ntargets; k++) {
		printf("\n");
		say_target(&s, &in->targets[k]);
	}
	capture_free(&s);
	return 0;
}

/* ---- a dump: what it kept ---- */

/* The listed block of SNAP holding ADDR, or NULL. */
static const struct listed_block *listed_at(const struct snapshot *snap,
					    uint64_t addr)
{
	for (size_t i = 0; i < snap->nlisted; i++) {
		const struct listed_block *l = &snap->listed[i];

		/* (Usable bytes: 8 of the chunk's header are the user's.) */
		if (addr >= l->addr && addr - l->addr < l->size - 8)
			return l;
	}
	return NULL;
}

/* The region of SNAP holding ADDR, or NULL. */
static const struct region *region_at(const struct snapshot *snap,
				      uint64_t addr)
{
	for (size_t i = 0; i < snap->nregions; i++)
		if (addr >= snap->regions[i].start &&
		    addr < snap->regions[i].end)
			return &snap->regions[i];
	return NULL;
}

/* The name of frame K of B's stack (of M), or "". */
static const char *frame_name(const struct model *m, const struct bucket *b,
			      uint32_t k)
{
	const char *f;

	if (!b || k >= b->stack->depth)
		return "";
	f = frame_get(&m->frames, b->stack->frames[k])->func;
	return f ? f : "";
}

/*
 * ADDR in SNAP: 0 when what it kept answers, 1 when only the process
 * or a core can (said).
 */
static int describe_dump(const struct model *m, const struct snapshot *snap,
			 uint64_t addr)
{
	const struct listed_block *l = listed_at(snap, addr);
	const struct region *r;
	const struct vma *v;
	struct strbuf sb = STRBUF_INIT;
	const char *type;
	bool known;

	if (l) {
		type = bucket_type_sym(l->bucket);
		known = type && *type;
		type = blocktypes_name(m, l->bucket);
		if (addr == l->addr)
			printf("0x%" PRIx64 ": a leaked block\n", addr);
		else
			printf("0x%" PRIx64 ": %" PRIu64 " bytes into a leaked "
			       "block at 0x%" PRIx64 "\n", addr, addr - l->addr,
			       l->addr);
		printf("  block 0x%" PRIx64 ": a chunk of %" PRIu64 " bytes "
		       "in %s\n", l->addr, l->size,
		       frame_name(m, l->bucket,
				  l->bucket->stack->depth - 1));
		printf(known ? "  type: %s\n" : "  type: none known (%s)\n",
		       type ? type : "?");
		printf("  %s\n", l->unreferenced
					 ? "leaked and unreferenced: nothing "
					   "reachable points at it, nor any "
					   "leaked block"
					 : "leaked: nothing reachable points "
					   "at it");
		printf("  who points at it and what it points at: %s keeps "
		       "no references (describe the process or a core)\n",
		       snap->path);
		printf("  its first %u bytes:\n", l->nhead);
		format_hexdump(&sb, l->head, l->nhead, "    ");
		fputs(sb.buf ? sb.buf : "", stdout);
		sb_release(&sb);
		return 0;
	}
	r = region_at(snap, addr);
	v = r ? &snap->vmas[r->vma] : NULL;
	if (v)
		mapping_text(&sb, v);
	if (r && r->bucket &&
	    !strcmp(frame_name(m, r->bucket, 0), "dmprof_thread_stack")) {
		printf("0x%" PRIx64 ": in a thread's stack, %s\n", addr,
		       sb.buf);
	} else if (r && r->bucket &&
		   !strcmp(frame_name(m, r->bucket, 0),
			   "dmprof_glibc_malloc_arena")) {
		printf("0x%" PRIx64 ": in the heap (%s), %s\n", addr,
		       frame_name(m, r->bucket, 1), sb.buf);
		sb_release(&sb);
		error("%s keeps no blocks but its largest leaked ones: which "
		      "block 0x%" PRIx64 " is in, and what points at it, needs "
		      "the process (its PID) or a core", snap->path, addr);
		return 1;
	} else if (v) {
		printf("0x%" PRIx64 ": in %s", addr, sb.buf);
		if (v->name[0] && v->name[0] != '[')
			printf(", at 0x%" PRIx64 " in the file",
			       addr - v->start + v->offset);
		printf("\n");
	} else {
		printf("0x%" PRIx64 ": in no mapping\n", addr);
	}
	sb_release(&sb);
	return 0;
}

/* ---- the operands ---- */

/* ADDRESS operands, in hex (0x optional), into ADDRS. */
static int addresses(struct cmd_args *a, uint64_t *addrs)
{
	for (int i = 1; i < a->argc; i++) {
		const char *w = a->argv[i];

		if (word_hex(w, strlen(w), &addrs[i - 1], true) != NUM_OK)
			return cmd_usage_error(a, "'%s' is not an address (in "
						  "hex)", w);
	}
	return 0;
}

static int cmd_describe_run(struct cmd_args *a)
{
	const char *what;
	uint64_t *addrs;
	enum dump_format format;
	struct inspect in;
	int status;
	pid_t pid = 0;

	if (a->argc < 2)
		return cmd_usage_error(a, a->argc ? "which address?"
						  : "which process, core or "
						    "dump, and address?");
	what = a->argv[0];
	addrs = xcalloc((size_t)a->argc, sizeof(*addrs));
	if ((status = addresses(a, addrs))) {
		free(addrs);
		return status;
	}
	if ((status = setup_memory_operand(a, what, &pid, &format))) {
		free(addrs);
		return status;
	}
	if (pid || format == FORMAT_CORE) {
		inspect_init(&in, addrs, (size_t)a->argc - 1, NULL);
		status = describe_memory(a, pid, pid ? NULL : what, &in);
		inspect_release(&in);
	} else {
		struct setup o;
		struct snapshot snap;

		if (setup_dump(&o, &snap, a, what, NULL) < 0) {
			free(addrs);
			return 1;
		}
		if (!snap.has_heap)
			printf("%s holds no walked heap: its addresses are "
			       "known by mapping only\n", what);
		for (int i = 0; i + 1 < a->argc; i++) {
			printf("%s", i || !snap.has_heap ? "\n" : "");
			status |= describe_dump(&o.run.model, &snap, addrs[i]);
		}
		snapshot_release(&snap);
		setup_close(&o);
	}
	free(addrs);
	return status;
}

const struct cmd_entry cmd_describe = { .name = "describe",
	.run = cmd_describe_run, .flags = CMD_READS_DUMPS, .usage = usage,
	.options = options,
	.summary = "say what an address is: its block, type, who points "
		   "at it" };
