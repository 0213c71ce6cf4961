/* Unit-test helpers (see helpers.h). */
#include "helpers.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

static char dir[256];
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

/*
 * Diagnostics go to a buffer of this process, not to the terminal: a test
 * that expects a warning looks at it with stderr_text(), and a run of the
 * suite prints only its verdict.
 */
static struct strbuf diagnostics;

static void keep(const char *prefix, const char *msg)
{
	sb_addf(&diagnostics, "dmprof: %s%s\n", prefix, msg);
}

__attribute__((constructor)) static void route_diagnostics(void)
{
	set_report_routine(keep);
}

void capture_stderr(void)
{
	sb_reset(&diagnostics);
}

const char *stderr_text(void)
{
	return sb_str(&diagnostics);
}
