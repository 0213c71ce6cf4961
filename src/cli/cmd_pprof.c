/*
 * dmprof pprof [-c COMPONENT] [-p POLICY] [--proto | --original] DUMP, or
 * the original's pprof DUMP POLICY: one dump as a pprof heap profile, the
 * legacy text one ("heap profile: ... @ heapprofile", stack lines,
 * MAPPED_LIBRARIES:) or a gzipped profile.proto whose samples carry their
 * component and policy as labels.  Committed bytes stand in for in-use
 * bytes.
 *
 * What is exported is what csv counts: the components between the
 * policy's markers, or COMPONENT, each byte once (the allocator's arenas
 * hold the malloc'd blocks a second time, and are outside the markers).
 * Malloc'd blocks and hooked regions come with their stacks; what has
 * none, a mapping no hook saw, an unknown bucket, a computed component
 * such as malloc-unused, comes as a line without frames (text) or with
 * one frame that names it (protobuf), so the totals are csv's.
 * --original writes the original's text instead: every hooked region,
 * then every malloc line.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "aggregate.h"
#include "pbwrite.h"
#include "setup.h"
#include "stacktext.h"
#include "strtab.h"
#include "tally.h"
#include "text.h"

enum { OPT_ORIGINAL = OPT_LONG_ONLY, OPT_PROTO };

struct entry {
	int64_t objs;
	int64_t bytes;
	const struct stack *stack; /* NULL: none; NAME says what it is */
	const char *name;
	int col;                   /* its component; -1 with --original */
};

struct export {
	const struct model *m;
	const struct policy *p;
	int col;               /* -c, or -1 */
	bool original;
	/* --original: hooked regions (one object each), then stack lines,
	 * as the original wrote them; else all in v[1], in item order. */
	struct entry *v[2];
	size_t n[2], alloc[2];
	int64_t *sums;         /* the entries' bytes by component */
	struct strtab names;   /* of entries without stacks */
	struct arena arena;
	struct strbuf sb;
	bool overflow;
};

static void add_entry(struct export *x, int which, struct entry e)
{
	GROW(x->v[which], x->n[which] + 1, x->alloc[which]);
	x->v[which][x->n[which]++] = e;
	if (e.col >= 0)
		x->sums[e.col] = add64(x->sums[e.col], e.bytes, &x->overflow);
}

static int64_t item_objects(struct export *x, const struct item *it)
{
	return it->line ? sub64(it->line->alloc, it->line->free, &x->overflow)
			: 1;
}

/* The original's lines: every hooked region and malloc line in scope. */
static int add_original(void *ctx, const struct item *it)
{
	struct export *x = ctx;

	if (!it->bucket || it->kind == ITEM_UNHOOKED)
		return 0; /* no stack to show (said for unknown buckets) */
	if (!it->line && it->bytes == 0)
		return 0;
	if (x->col >= 0 && !column_counts(x->p, x->col, it->kind, it->col))
		return 0;
	add_entry(x, it->line ? 1 : 0,
		  (struct entry){ item_objects(x, it), it->bytes,
				  it->bucket->stack, NULL, -1 });
	return 0;
}

static int add_item(void *ctx, const struct item *it)
{
	struct export *x = ctx;
	/* (An unknown bucket's bytes are no-bucket's, if the policy has it.) */
	int col = it->col >= 0 ? it->col : x->p->col_no_bucket;
	struct entry e;

	if (x->col >= 0 ? !column_counts(x->p, x->col, it->kind, it->col)
			: !policy_in_partition(x->p, col))
		return 0;
	e = (struct entry){ item_objects(x, it), it->bytes, NULL, NULL,
			    x->col >= 0 ? x->col : col };
	if (!e.objs && !e.bytes)
		return 0;
	if (it->bucket) {
		e.stack = it->bucket->stack;
	} else {
		sb_reset(&x->sb);
		item_text(&x->sb, x->m, it, UINT64_MAX, STACK_FOLDED);
		e.name = strtab_intern(&x->names, x->sb.buf, x->sb.len);
	}
	add_entry(x, 1, e);
	return 0;
}

/*
 * What the items did not give of each component exported: a computed
 * component's bytes (malloc-unused, tc-unused, a GLOBAL_STATS row...),
 * as one entry named for it.
 */
static void add_rest(struct export *x, const int64_t *values)
{
	for (size_t c = 0; c < x->p->ncols; c++) {
		int64_t rest;

		if (x->col >= 0 ? (int)c != x->col
				: !policy_in_partition(x->p, (int)c))
			continue;
		rest = sub64(values[c], x->sums[c], &x->overflow);
		if (rest < 0)
			warning("'%s' holds %" PRId64 " B, less than the %" PRId64
				" B of its parts: the export says %" PRId64
				" B", x->p->cols[c].name, values[c],
				x->sums[c], x->sums[c]);
		if (rest <= 0)
			continue;
		sb_reset(&x->sb);
		sb_addf(&x->sb, "<%s>", x->p->cols[c].name);
		add_entry(x, 1, (struct entry){
			0, rest, NULL,
			strtab_intern(&x->names, x->sb.buf, x->sb.len),
			(int)c });
	}
}

/* ---- the legacy text profile ---- */

static void print_entry(const struct model *m, const struct entry *e)
{
	printf("%6" PRId64 ": %8" PRId64 " [%6" PRId64 ": %8" PRId64 "] @",
	       e->objs, e->bytes, e->objs, e->bytes);
	for (uint32_t i = 0; e->stack && i < e->stack->depth; i++)
		printf(" 0x%016" PRIx64,
		       frame_get(&m->frames, e->stack->frames[i])->addr);
	putchar('\n');
}

static void print_text(struct export *x, const struct setup *o,
		       const struct snapshot *snap, int64_t objs, int64_t bytes)
{
	printf("heap profile: %6" PRId64 ": %8" PRId64 " [%6" PRId64
	       ": %8" PRId64 "] @ heapprofile\n",
	       objs, bytes, objs, bytes);
	for (int w = 0; w < 2; w++)
		for (size_t i = 0; i < x->n[w]; i++)
			print_entry(x->m, &x->v[w][i]);
	printf("MAPPED_LIBRARIES:\n");
	if (o->run.has_maps) {
		struct filebuf fb;

		if (file_load(&fb, o->run.maps.path) == 0) {
			fwrite(fb.data, 1, fb.size, stdout);
			file_release(&fb);
		}
	} else if (snap->has_own_maps) {
		/* A gperftools profile: its own maps trailer. */
		for (size_t i = 0; i < snap->own_maps.n; i++) {
			const struct vma *v = &snap->own_maps.v[i];

			printf("%08" PRIx64 "-%08" PRIx64 " %s %08" PRIx64
			       " %02x:%02x %-11" PRIu64 " %s\n",
			       v->start, v->end, v->perms, v->offset, v->major,
			       v->minor, v->inode, v->name);
		}
	}
}

/* ---- profile.proto (google/pprof's proto/profile.proto) ---- */

enum {
	PROFILE_SAMPLE_TYPE = 1, PROFILE_SAMPLE, PROFILE_MAPPING,
	PROFILE_LOCATION,
	PROFILE_FUNCTION, PROFILE_STRING_TABLE, PROFILE_DROP_FRAMES,
	PROFILE_TIME_NANOS = 9,
	PROFILE_PERIOD_TYPE = 11, PROFILE_PERIOD, PROFILE_COMMENT,
	PROFILE_DEFAULT_SAMPLE_TYPE,
	VALUE_TYPE_TYPE = 1, VALUE_TYPE_UNIT,
	SAMPLE_LOCATION_ID = 1, SAMPLE_VALUE, SAMPLE_LABEL,
	LABEL_KEY = 1, LABEL_STR,
	LOCATION_ID = 1, LOCATION_MAPPING_ID, LOCATION_ADDRESS, LOCATION_LINE,
	MAPPING_ID = 1, MAPPING_MEMORY_START, MAPPING_MEMORY_LIMIT,
	MAPPING_FILE_OFFSET, MAPPING_FILENAME, MAPPING_HAS_FUNCTIONS = 7,
	MAPPING_HAS_FILENAMES, MAPPING_HAS_LINE_NUMBERS,
	MAPPING_HAS_INLINE_FRAMES,
	LINE_FUNCTION_ID = 1, LINE_LINE,
	FUNCTION_ID = 1, FUNCTION_NAME, FUNCTION_FILENAME = 4,
};

struct proto {
	struct strbuf out, msg, sub;
	const struct maps *maps; /* where the frames are, or NULL */
	uint64_t *map_id;        /* by vma index; 0: not written yet */
	uint64_t nmaps;
	struct tally strings;  /* ref: the index */
	struct tally funcs;    /* "name\0file": ref, the id */
	struct tally named;    /* names of entries without stacks: ref,
				  their location's id */
	uint64_t *loc_of_frame; /* by frame id; 0: not written yet */
	uint64_t nloc;
	uint64_t *ids;
	size_t nids, alloc_ids;
};

static uint64_t str_index(struct proto *pr, const char *s, size_t len)
{
	struct tally_entry *e = tally_get(&pr->strings, s, len);

	if (!e->ref)
		e->ref = pr->strings.n; /* (index + 1) */
	return e->ref - 1;
}

static uint64_t str_index_z(struct proto *pr, const char *s)
{
	return str_index(pr, s, strlen(s));
}

static uint64_t function_id(struct proto *pr, const char *name,
			    size_t name_len, const char *file)
{
	struct strbuf key = STRBUF_INIT;
	struct tally_entry *e;

	sb_add(&key, name, name_len);
	sb_addch(&key, '\0');
	if (file)
		sb_addstr(&key, file);
	e = tally_get(&pr->funcs, key.buf, key.len);
	sb_release(&key);
	if (e->ref)
		return e->ref;
	e->ref = pr->funcs.n;
	sb_reset(&pr->msg);
	pbw_uint(&pr->msg, FUNCTION_ID, e->ref);
	pbw_uint(&pr->msg, FUNCTION_NAME, str_index(pr, name, name_len));
	/* (No system_name: pprof would demangle the names, which dmprof
	 * printed demangled, into nothing.) */
	if (file)
		pbw_uint(&pr->msg, FUNCTION_FILENAME, str_index_z(pr, file));
	pbw_bytes(&pr->out, PROFILE_FUNCTION, pr->msg.buf, pr->msg.len);
	return e->ref;
}

/* One Line of a Location: FUNC at FILE:LINE (FILE NULL, LINE 0: unknown). */
static void add_line(struct proto *pr, struct strbuf *loc, const char *func,
		     size_t func_len, const char *file, uint32_t line)
{
	uint64_t id = function_id(pr, func, func_len ? func_len : strlen(func),
				  file);

	sb_reset(&pr->sub);
	pbw_uint(&pr->sub, LINE_FUNCTION_ID, id);
	if (line)
		pbw_uint(&pr->sub, LINE_LINE, line);
	pbw_bytes(loc, LOCATION_LINE, pr->sub.buf, pr->sub.len);
}

/*
 * The mapping of the file that holds ADDR, written once; 0 if none (an
 * anonymous mapping, or a name the profile gave).  Symbolized already:
 * pprof must not look the addresses up again.
 */
static uint64_t mapping_id(struct proto *pr, uint64_t addr)
{
	const struct vma *v = pr->maps ? maps_find(pr->maps, addr) : NULL;
	size_t i;

	if (!v || !*v->name || *v->name == '[')
		return 0;
	i = (size_t)(v - pr->maps->v);
	if (pr->map_id[i])
		return pr->map_id[i];
	pr->map_id[i] = ++pr->nmaps;
	sb_reset(&pr->msg);
	pbw_uint(&pr->msg, MAPPING_ID, pr->map_id[i]);
	pbw_uint(&pr->msg, MAPPING_MEMORY_START, v->start);
	pbw_uint(&pr->msg, MAPPING_MEMORY_LIMIT, v->end);
	pbw_uint(&pr->msg, MAPPING_FILE_OFFSET, v->offset);
	pbw_uint(&pr->msg, MAPPING_FILENAME, str_index_z(pr, v->name));
	pbw_uint(&pr->msg, MAPPING_HAS_FUNCTIONS, 1);
	pbw_uint(&pr->msg, MAPPING_HAS_FILENAMES, 1);
	pbw_uint(&pr->msg, MAPPING_HAS_LINE_NUMBERS, 1);
	pbw_uint(&pr->msg, MAPPING_HAS_INLINE_FRAMES, 1);
	pbw_bytes(&pr->out, PROFILE_MAPPING, pr->msg.buf, pr->msg.len);
	return pr->map_id[i];
}

/*
 * The location of frame F: its address, and its functions (inlined ones
 * first, as pprof has them), or its address as the name of one, as
 * dmprof's reports print an unknown function.
 */
static uint64_t frame_location(struct proto *pr, const struct frame *f)
{
	struct strbuf loc = STRBUF_INIT;
	uint64_t id = pr->loc_of_frame[f->id], map;

	if (id)
		return id;
	id = pr->loc_of_frame[f->id] = ++pr->nloc;
	map = mapping_id(pr, f->addr);
	pbw_uint(&loc, LOCATION_ID, id);
	if (map)
		pbw_uint(&loc, LOCATION_MAPPING_ID, map);
	pbw_uint(&loc, LOCATION_ADDRESS, f->addr);
	for (uint32_t k = 0; f->func && k < f->ninline; k++)
		add_line(pr, &loc, f->inl[k].func, f->inl[k].func_len,
			 f->inl[k].file, f->inl[k].line);
	if (f->func) {
		add_line(pr, &loc, f->func, f->func_len, f->file, f->line);
	} else {
		char name[32];

		snprintf(name, sizeof(name), "0x%016" PRIx64, f->addr);
		add_line(pr, &loc, name, 0, NULL, 0);
	}
	pbw_bytes(&pr->out, PROFILE_LOCATION, loc.buf, loc.len);
	sb_release(&loc);
	return id;
}

/* The location of what has no stack: one function, NAME. */
static uint64_t named_location(struct proto *pr, const char *name)
{
	struct tally_entry *e = tally_get(&pr->named, name, strlen(name));
	struct strbuf loc = STRBUF_INIT;

	if (e->ref)
		return e->ref;
	e->ref = ++pr->nloc;
	pbw_uint(&loc, LOCATION_ID, e->ref);
	add_line(pr, &loc, name, 0, NULL, 0);
	pbw_bytes(&pr->out, PROFILE_LOCATION, loc.buf, loc.len);
	sb_release(&loc);
	return e->ref;
}

static void add_label(struct proto *pr, struct strbuf *sample, const char *key,
		      const char *value)
{
	sb_reset(&pr->sub);
	pbw_uint(&pr->sub, LABEL_KEY, str_index_z(pr, key));
	pbw_uint(&pr->sub, LABEL_STR, str_index_z(pr, value));
	pbw_bytes(sample, SAMPLE_LABEL, pr->sub.buf, pr->sub.len);
}

static void add_sample(struct proto *pr, const struct export *x,
		       const struct entry *e)
{
	struct strbuf sample = STRBUF_INIT;
	uint64_t values[2] = { (uint64_t)e->objs, (uint64_t)e->bytes };

	pr->nids = 0;
	if (e->stack && e->stack->depth) {
		for (uint32_t i = 0; i < e->stack->depth; i++) {
			GROW(pr->ids, pr->nids + 1, pr->alloc_ids);
			pr->ids[pr->nids++] = frame_location(
				pr, frame_get(&x->m->frames, e->stack->frames[i]));
		}
	} else {
		GROW(pr->ids, 1, pr->alloc_ids);
		pr->ids[pr->nids++] =
			named_location(pr, e->stack ? "<no stack>" : e->name);
	}
	pbw_packed(&sample, SAMPLE_LOCATION_ID, pr->ids, pr->nids);
	pbw_packed(&sample, SAMPLE_VALUE, values, 2);
	add_label(pr, &sample, "component", x->p->cols[e->col].name);
	add_label(pr, &sample, "policy", x->p->label);
	pbw_bytes(&pr->out, PROFILE_SAMPLE, sample.buf, sample.len);
	sb_release(&sample);
}

static void add_value_type(struct proto *pr, uint32_t field, const char *type,
			   const char *unit)
{
	sb_reset(&pr->sub);
	pbw_uint(&pr->sub, VALUE_TYPE_TYPE, str_index_z(pr, type));
	pbw_uint(&pr->sub, VALUE_TYPE_UNIT, str_index_z(pr, unit));
	pbw_bytes(&pr->out, field, pr->sub.buf, pr->sub.len);
}

static void write_proto(struct export *x, const struct snapshot *snap,
			const struct maps *maps)
{
	struct proto pr;
	struct strbuf gz = STRBUF_INIT, comment = STRBUF_INIT;

	memset(&pr, 0, sizeof(pr));
	tally_init(&pr.strings);
	tally_init(&pr.funcs);
	tally_init(&pr.named);
	pr.loc_of_frame = xcalloc(x->m->frames.n + 1, sizeof(*pr.loc_of_frame));
	pr.maps = maps;
	pr.map_id = xcalloc(maps ? maps->n + 1 : 1, sizeof(*pr.map_id));
	str_index_z(&pr, ""); /* index 0 is "" */
	/* pprof takes the first mapping for the program's own file: the
	 * maps list it first. */
	for (size_t i = 0; maps && i < maps->n; i++)
		if (maps->v[i].name[0] == '/' && vma_executable(&maps->v[i])) {
			mapping_id(&pr, maps->v[i].start);
			break;
		}
	add_value_type(&pr, PROFILE_SAMPLE_TYPE, "inuse_objects", "count");
	add_value_type(&pr, PROFILE_SAMPLE_TYPE, "inuse_space", "bytes");
	add_value_type(&pr, PROFILE_PERIOD_TYPE, "space", "bytes");
	pbw_uint(&pr.out, PROFILE_PERIOD, 1);
	pbw_uint(&pr.out, PROFILE_DEFAULT_SAMPLE_TYPE,
		 str_index_z(&pr, "inuse_space"));
	if (snap->time > 0)
		pbw_uint(&pr.out, PROFILE_TIME_NANOS,
			 (uint64_t)(snap->time * 1e9));
	/* The allocator's own frames own no bytes, as in dmprof's top. */
	allocator_pattern(&comment);
	pbw_uint(&pr.out, PROFILE_DROP_FRAMES, str_index(&pr, comment.buf,
							 comment.len));
	sb_reset(&comment);
	sb_addf(&comment, "dmprof pprof: %s, policy %s",
		x->col >= 0 ? x->p->cols[x->col].name
			    : "the components between the markers",
		x->p->label);
	pbw_uint(&pr.out, PROFILE_COMMENT, str_index(&pr, comment.buf,
						     comment.len));
	sb_reset(&comment);
	sb_addf(&comment, "dump: %s", snap->path);
	pbw_uint(&pr.out, PROFILE_COMMENT, str_index(&pr, comment.buf,
						     comment.len));
	for (size_t i = 0; i < x->n[1]; i++)
		add_sample(&pr, x, &x->v[1][i]);
	for (size_t i = 0; i < pr.strings.n; i++)
		pbw_bytes(&pr.out, PROFILE_STRING_TABLE, pr.strings.v[i]->key,
			  pr.strings.v[i]->len);
	pbw_gzip(pr.out.buf, pr.out.len, &gz);
	fwrite(gz.buf, 1, gz.len, stdout);
	sb_release(&gz);
	sb_release(&comment);
	sb_release(&pr.out);
	sb_release(&pr.msg);
	sb_release(&pr.sub);
	tally_free(&pr.strings);
	tally_free(&pr.funcs);
	tally_free(&pr.named);
	free(pr.loc_of_frame);
	free(pr.map_id);
	free(pr.ids);
}

/* ---- the command ---- */

/*
 * Can column C hold what the original's profile shows, stacks of malloc
 * lines or of hooked regions?  Not unhooked regions, nor unknown buckets.
 */
static bool has_stacks(const struct policy *p, int c)
{
	if (p->cols[c].builtin == B_NO_BUCKET)
		return false;
	if (p->cols[c].builtin != B_NONE)
		return true;
	for (size_t i = 0; i < p->nrules; i++)
		if (p->rules[i].column == (uint32_t)c &&
		    p->rules[i].alloc != RULE_UNHOOKED)
			return true;
	return false;
}

static int collect(struct export *x, struct setup *o, struct snapshot *snap)
{
	int64_t *values;
	int rc = 0;

	if (x->original) {
		if (x->col >= 0 && !has_stacks(x->p, x->col))
			return error("'%s' of policy '%s' holds only %s, which "
				     "have no stacks for the original's "
				     "profile; 'dmprof expand' lists them",
				     x->p->cols[x->col].name, x->p->label,
				     x->col == x->p->col_no_bucket
					     ? "the bytes of unknown buckets"
					     : "unhooked regions");
		snapshot_warn_unknown_buckets(snap, "left out");
		/* (The original saw regions whole.) */
		return aggregate_items(&o->cls, snap, NULL, false,
				       add_original, x);
	}
	snapshot_warn_unknown_buckets(snap, "counted as no-bucket");
	values = xcalloc(x->p->ncols, sizeof(*values));
	if (aggregate_snapshot(&o->cls, snap, NULL, values, NULL, NULL) < 0 ||
	    aggregate_items(&o->cls, snap, NULL, true, add_item, x) < 0)
		rc = -1;
	else
		add_rest(x, values);
	free(values);
	return rc;
}

static int cmd_pprof_run(struct cmd_args *a)
{
	const char *component = args_get(a, 'c'), *policy;
	bool proto = args_has(a, OPT_PROTO);
	struct export x;
	int64_t objs = 0, bytes = 0;
	struct setup o;
	struct snapshot snap;
	int status;

	memset(&x, 0, sizeof(x));
	x.col = -1;
	x.original = args_has(a, OPT_ORIGINAL);
	if (proto && x.original)
		return cmd_usage_error(a, "--original is the original's text "
					  "profile, not --proto");
	if (proto && isatty(STDOUT_FILENO))
		return cmd_usage_error(a, "--proto writes a gzipped profile: "
					  "redirect it to a file");
	if ((status = setup_policy_operand(a, &policy)))
		return status;
	/* file:line in the protobuf's functions. */
	if (proto)
		a->sym.want_source = true;
	if (setup_dump(&o, &snap, a, a->argv[0], policy) < 0)
		return 1;
	x.m = &o.run.model;
	x.p = o.policy;
	strtab_init(&x.names, &x.arena);
	x.sums = xcalloc(x.p->ncols, sizeof(*x.sums));
	if (component && (x.col = setup_component(o.policy, component)) < 0) {
		status = 1;
		goto out;
	}
	if (collect(&x, &o, &snap) < 0) {
		status = 1;
		goto out;
	}
	for (int w = 0; w < 2; w++)
		for (size_t i = 0; i < x.n[w]; i++) {
			objs = add64(objs, x.v[w][i].objs, &x.overflow);
			bytes = add64(bytes, x.v[w][i].bytes, &x.overflow);
		}
	if (x.overflow || snap.overflow) {
		status = sizes_overflow(&snap);
		goto out;
	}
	if (proto)
		write_proto(&x, &snap,
			    snap.has_own_maps ? &snap.own_maps
			    : o.run.has_maps  ? &o.run.maps
					       : NULL);
	else
		print_text(&x, &o, &snap, objs, bytes);
out:
	free(x.v[0]);
	free(x.v[1]);
	free(x.sums);
	sb_release(&x.sb);
	strtab_free(&x.names);
	arena_free(&x.arena);
	snapshot_release(&snap);
	setup_close(&o);
	return status;
}

static const struct cmd_option options[] = {
	OPTION_COMPONENT("only this component"),
	OPTION_POLICY,
	{ OPT_PROTO, "proto", NULL, OPT_SYNOPSIS,
	  "a gzipped profile.proto, component and policy as sample labels "
	  "(go tool pprof, speedscope, Pyroscope open it)" },
	{ OPT_ORIGINAL, "original", NULL, OPT_SYNOPSIS,
	  "the original's text: every hooked region and malloc line, the "
	  "allocator's arenas beside the blocks they hold" },
	OPT_END,
};

static const char *const usage[] = { "DUMP", "DUMP POLICY", NULL };

const struct cmd_entry cmd_pprof = {
	"pprof", "convert a dump to a pprof heap profile (text or protobuf)",
	usage, options, CMD_READS_DUMPS, NULL, cmd_pprof_run,
};
