/* Unit-test helpers (see helpers.h). */
#include "helpers.h"

#include <criterion/criterion.h>
#include <ftw.h>
#include <inttypes.h>
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

static void keep(const char *head, const char *msg)
{
	sb_addf(&diagnostics, "%s%s\n", head, msg);
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

size_t fake_image_read(struct procimage *img, uint64_t addr, void *buf,
		       size_t len)
{
	struct fake_image *fk = (struct fake_image *)img;

	for (size_t i = 0; i < fk->nsegs; i++) {
		const struct fake_seg *s = &fk->segs[i];

		if (addr >= s->addr && addr - s->addr < s->len) {
			size_t n = s->len - (addr - s->addr);

			n = n < len ? n : len;
			memcpy(buf, s->data + (addr - s->addr), n);
			return n;
		}
	}
	return 0;
}

void fake_image_init(struct fake_image *f, const char *name)
{
	memset(f, 0, sizeof(*f));
	procimage_init(&f->img, name, fake_image_read);
}

void fake_image_release(struct fake_image *f)
{
	for (size_t i = 0; i < f->nsegs; i++)
		free(f->segs[i].data);
	procimage_close(&f->img);
	f->nsegs = 0;
}

void fake_image_add(struct fake_image *f, uint64_t addr, size_t len,
		    const char *perms, const char *name)
{
	struct vma v = { 0 };

	cr_assert_lt(f->nsegs, sizeof(f->segs) / sizeof(f->segs[0]));
	v.start = addr;
	v.end = addr + len;
	memcpy(v.perms, perms, 5);
	v.name = strtab_intern_str(&f->img.strings, name);
	maps_add(&f->img.maps, &v);
	f->segs[f->nsegs].addr = addr;
	f->segs[f->nsegs].len = len;
	f->segs[f->nsegs++].data = xcalloc(1, len);
	maps_sort(&f->img.maps, "fake");
}

uint8_t *fake_image_at(struct fake_image *f, uint64_t addr)
{
	for (size_t i = 0; i < f->nsegs; i++)
		if (addr >= f->segs[i].addr &&
		    addr - f->segs[i].addr < f->segs[i].len)
			return f->segs[i].data + (addr - f->segs[i].addr);
	cr_assert_fail("no segment at 0x%llx", (unsigned long long)addr);
	return NULL;
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

void frames_text(struct strbuf *sb, uint64_t *seed, uint32_t depth,
		 bool same_width, uint64_t *want)
{
	unsigned width = 1 + (unsigned)(xorshift(seed) % 16);

	for (uint32_t k = 0; k < depth; k++) {
		uint64_t r = xorshift(seed);
		unsigned w = same_width ? width
					: 1 + (unsigned)(xorshift(seed) % 16);
		char digits[17];

		/* (W digits, the first not 0.) */
		want[k] = w == 16 ? r | 1ULL << 63
				  : (r & ((1ULL << (4 * w)) - 1)) |
					    1ULL << (4 * w - 4);
		snprintf(digits, sizeof(digits),
			 r & 0x100 ? "%" PRIX64 : "%" PRIx64, want[k]);
		sb_addstr(sb, r % 13 == 0 ? "\t" : r % 11 == 0 ? "   " : " ");
		sb_addf(sb, "0x%s", digits);
	}
}
