/*
 * The snapshot object: what every reader fills, and the GLOBAL_STATS rows
 * a snapshot may hold.
 */
#include "snapshot.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

const char *const gstat_names[GS_NROWS] = {
	"total",
	"absent",
	"file-exec",
	"file-nonexec",
	"anonymous",
	"stack",
	"other",
	"nonprofiled-total",
	"nonprofiled-absent",
	"nonprofiled-anonymous",
	"nonprofiled-file-exec",
	"nonprofiled-file-nonexec",
	"nonprofiled-stack",
	"nonprofiled-other",
	"profiled-mmap",
	"profiled-malloc",
};

bool gstat_required(enum gstat_row row)
{
	return row != GS_NP_TOTAL;
}

void snapshot_init(struct snapshot *snap, const char *path)
{
	memset(snap, 0, sizeof(*snap));
	maps_init(&snap->own_maps);
	snap->path = xstrdup(path);
	snap->page_size = 4096;
}

void snapshot_release(struct snapshot *snap)
{
	FREE_ALL(snap->listed, snap->path, snap->run_id, snap->command_line,
		 snap->reason);
	for (size_t i = 0; i < snap->nmeta_extra; i++) {
		free(snap->meta_extra[i].key);
		free(snap->meta_extra[i].value);
	}
	FREE_ALL(snap->meta_extra, snap->vmas, snap->regions, snap->pfs,
		 snap->gs.extra, snap->lines, snap->line_index, snap->line_stack,
		 snap->unknown);
	maps_free(&snap->own_maps);
	memset(snap, 0, sizeof(*snap));
}

void snapshot_index_lines(struct snapshot *snap)
{
	enum { AHEAD = 16 };
	const struct stack_line *l = snap->lines;
	uint32_t *v;

	if (snap->line_index || !snap->nlines)
		return;
	v = xreallocarray(NULL, snap->nlines, sizeof(*v));
	for (size_t i = 0; i < snap->nlines; i++) {
		if (i + AHEAD < snap->nlines && l[i + AHEAD].bucket)
			prefetch(l[i + AHEAD].bucket);
		v[i] = bucket_key(l[i].bucket);
		if (v[i] == BUCKET_KEY_NONE && l[i].bucket) {
			free(v);
			return;
		}
	}
	snap->line_index = v;
}

void snapshot_warn_unknown_buckets(const struct snapshot *snap,
				   const char *consequence)
{
	if (!snap->nunknown)
		return;
	warning("%s:%lu: bucket %" PRIu64 " is not defined in any .buckets "
		"file or BUCKETS section (%zu such line%s, %" PRId64
		" committed bytes: %s)",
		snap->path, snap->first_unknown_line, snap->unknown[0].id,
		snap->nunknown, snap->nunknown > 1 ? "s" : "",
		snap->unknown_bucket_bytes, consequence);
}

uint64_t snapshot_unknown_id(const struct snapshot *snap, size_t i,
			     size_t *at)
{
	while (*at < snap->nunknown && snap->unknown[*at].index < i)
		(*at)++;
	if (*at < snap->nunknown && snap->unknown[*at].index == i)
		return snap->unknown[*at].id;
	BUG("line %zu of %s has a bucket", i, snap->path);
}

const char *snapshot_meta(const struct snapshot *snap, const char *key)
{
	for (size_t i = 0; i < snap->nmeta_extra; i++)
		if (!strcmp(snap->meta_extra[i].key, key))
			return snap->meta_extra[i].value;
	return NULL;
}
