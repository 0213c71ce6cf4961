/*
 * The profile.proto encoder (google/pprof's proto/profile.proto), for
 * dmprof pprof --proto: samples with their stacks as locations (one per
 * frame, file:line in its function), the mappings the frames fall in,
 * each sample's component and policy as labels, the allocator's frames
 * as drop_frames, the whole gzipped.  Built on pbwrite's fields.
 */
#include "pprof_write.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pbwrite.h"
#include "stacktext.h"
#include "tally.h"

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

static void add_sample(struct proto *pr, const struct pprof_profile *pp,
		       const struct pprof_sample *e)
{
	struct strbuf sample = STRBUF_INIT;
	uint64_t values[2] = { (uint64_t)e->objs, (uint64_t)e->bytes };

	pr->nids = 0;
	if (e->stack && e->stack->depth) {
		for (uint32_t i = 0; i < e->stack->depth; i++) {
			GROW(pr->ids, pr->nids + 1, pr->alloc_ids);
			pr->ids[pr->nids++] = frame_location(
				pr, frame_get(&pp->m->frames, e->stack->frames[i]));
		}
	} else {
		GROW(pr->ids, 1, pr->alloc_ids);
		pr->ids[pr->nids++] =
			named_location(pr, e->stack ? "<no stack>" : e->name);
	}
	pbw_packed(&sample, SAMPLE_LOCATION_ID, pr->ids, pr->nids);
	pbw_packed(&sample, SAMPLE_VALUE, values, 2);
	add_label(pr, &sample, "component", pp->p->cols[e->col].name);
	add_label(pr, &sample, "policy", pp->p->label);
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

void pprof_write(const struct pprof_profile *pp,
		 const struct pprof_sample *v, size_t n, struct strbuf *gz)
{
	const struct maps *maps = pp->maps;
	struct proto pr;
	struct strbuf comment = STRBUF_INIT;

	memset(&pr, 0, sizeof(pr));
	tally_init(&pr.strings);
	tally_init(&pr.funcs);
	tally_init(&pr.named);
	pr.loc_of_frame = xcalloc(pp->m->frames.n + 1, sizeof(*pr.loc_of_frame));
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
	if (pp->time > 0)
		pbw_uint(&pr.out, PROFILE_TIME_NANOS,
			 (uint64_t)(pp->time * 1e9));
	/* The allocator's own frames own no bytes, as in dmprof's top. */
	allocator_pattern(&comment);
	pbw_uint(&pr.out, PROFILE_DROP_FRAMES, str_index(&pr, comment.buf,
							 comment.len));
	sb_reset(&comment);
	sb_addf(&comment, "dmprof pprof: %s, policy %s", pp->what,
		pp->p->label);
	pbw_uint(&pr.out, PROFILE_COMMENT, str_index(&pr, comment.buf,
						     comment.len));
	sb_reset(&comment);
	sb_addf(&comment, "dump: %s", pp->dump);
	pbw_uint(&pr.out, PROFILE_COMMENT, str_index(&pr, comment.buf,
						     comment.len));
	for (size_t i = 0; i < n; i++)
		add_sample(&pr, pp, &v[i]);
	for (size_t i = 0; i < pr.strings.n; i++)
		pbw_bytes(&pr.out, PROFILE_STRING_TABLE, pr.strings.v[i]->key,
			  pr.strings.v[i]->len);
	pbw_gzip(pr.out.buf, pr.out.len, gz);
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

