/*
 * An ELF core file as a snapshot: its heap walked, scanned and typed as
 * `dmprof snapshot CORE` does, written as a snapshot file into memory
 * and read back by the snapshot files' reader, so that a core and the
 * snapshot of it are one thing to every command.
 */
#include "corefile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "procsnap.h"
#include "snapfile.h"
#include "util.h"

bool corefile_claims(const struct filebuf *fb)
{
	return fb->size >= 4 && !memcmp(fb->data, "\177ELF", 4);
}

int corefile_parse(struct snapshot *snap, const char *path, struct model *m,
		   struct read_run *run)
{
	struct procsnap s;
	struct filebuf fb;
	char *text = NULL, *missing;
	size_t len = 0;
	FILE *f;
	int rc;

	if (procsnap_take_core(&s, path, run->opts) < 0)
		return -1;
	/* (A cut core says so first: it is why its heap is not found, not
	 * "a static binary" or "another allocator".) */
	if ((missing = coreimage_missing(s.core)))
		warning("%s", missing);
	if (!s.walked)
		/* (WHY names the core already.) */
		warning("%s%s; its memory is classed by mapping only", s.h.why,
			missing ? " (the core is cut short: what it lacks may "
				  "hold it)" : "");
	free(missing);
	f = open_memstream(&text, &len);
	if (!f)
		die_errno("open_memstream");
	rc = procsnap_write_stream(&s, f);
	if (fclose(f) != 0 || rc < 0)
		die_errno("writing a snapshot in memory");
	procsnap_free(&s);
	memset(&fb, 0, sizeof(fb));
	fb.data = text;
	fb.size = fb.cap = len;
	fb.path = (char *)path;
	rc = snapfile_parse(snap, &fb, m, run);
	free(text);
	return rc;
}
