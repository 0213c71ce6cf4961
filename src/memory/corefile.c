/*
 * An ELF core file as a snapshot: its heap walked, scanned and typed as
 * `dmprof snapshot CORE` does, and what that capture says handed, record
 * by record, to the snapshot builder that the snapshot files' reader
 * fills the model with: a core and the snapshot of it are one thing to
 * every command, with no text in between.
 */
#include "corefile.h"

#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "snapbuild.h"
#include "util.h"

bool corefile_claims(const struct filebuf *fb)
{
	return fb->size >= 4 && !memcmp(fb->data, "\177ELF", 4);
}

/* A capture's record to the builder (no line: the core as a whole). */
static int build(void *ctx, const struct snap_record *r)
{
	return snapbuild_put(ctx, r, 0);
}

int corefile_parse(struct snapshot *snap, const char *path, struct model *m,
		   struct read_run *run)
{
	struct reader_pos pos = { .path = path };
	struct fault missing = { 0 };
	struct snap_builder b;
	struct capture s;
	bool cut;
	int rc;

	if (capture_core(&s, path, run->opts, NULL) < 0)
		return -1;
	/* (A cut core says so first: it is why its heap is not found, not
	 * "a static binary" or "another allocator".) */
	if ((cut = coreimage_missing(s.core, &missing)))
		fault_warning(&missing, NULL);
	if (!s.walked)
		/* (WHY names the core already.) */
		capture_say_unwalked(&s, cut ? " (the core is cut short: "
					       "what it lacks may hold it)"
					     : "");
	capture_say_python(&s);
	fault_release(&missing);
	snapbuild_init(&b, snap, m, &pos);
	rc = capture_emit(&s, build, &b);
	if (rc == 0)
		rc = snapbuild_finish(&b);
	capture_free(&s);
	read_pos_release(&pos);
	return rc;
}
