/* Unit-test helpers (see helpers.h). */
#include "helpers.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "text.h"
#include "util.h"

static char dir[256];
static char errpath[300];
static pid_t owner;

static int remove_one(const char *path, const struct stat *st, int type,
		      struct FTW *ftw)
{
	(void)st;
	(void)type;
	(void)ftw;
	remove(path);
	return 0;
}

/* Each test runs in a process of its own; its directory goes with it. */
static void remove_tmpdir(void)
{
	if (dir[0] && getpid() == owner)
		nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

const char *tmpdir(void)
{
	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "%s/dmprof-unit.XXXXXX",
			 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
		if (!mkdtemp(dir))
			die_errno("mkdtemp");
		owner = getpid();
		atexit(remove_tmpdir);
	}
	return dir;
}

const char *write_file(const char *name, const char *content, long len)
{
	static char path[8][512];
	static int slot;
	char *p = path[slot++ % 8];
	FILE *f;

	snprintf(p, 512, "%s/%s", tmpdir(), name);
	f = fopen(p, "wb");
	if (!f)
		die_errno("%s", p);
	fwrite(content, 1, len < 0 ? strlen(content) : (size_t)len, f);
	fclose(f);
	return p;
}

void capture_stderr(void)
{
	snprintf(errpath, sizeof(errpath), "%s/stderr", tmpdir());
	fflush(stderr);
	if (!freopen(errpath, "w", stderr))
		die_errno("freopen");
}

const char *stderr_text(void)
{
	static struct filebuf fb;

	fflush(stderr);
	file_release(&fb);
	if (!errpath[0] || file_load(&fb, errpath) < 0)
		return "";
	return fb.data;
}
