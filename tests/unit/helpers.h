/*
 * Unit-test helpers: scratch files and captured diagnostics.  Criterion
 * runs each test in its own process, so each has its own of both.
 */
#ifndef DMPROF_TEST_HELPERS_H
#define DMPROF_TEST_HELPERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "procimage.h"

/* A fresh scratch directory for this test process (created once). */
const char *tmpdir(void);
/* Write CONTENT (LEN bytes, or strlen if LEN is -1) to tmpdir()/NAME. */
const char *write_file(const char *name, const char *content, long len);
/*
 * dmprof's diagnostics are kept, not printed: capture_stderr() forgets
 * those so far, stderr_text() returns those since.
 */
void capture_stderr(void);
const char *stderr_text(void);

struct strbuf;
/*
 * DEPTH frames as readers of stack lines meet them, to SB: each a blank
 * (one space, three, or a tab), "0x" and its address in either case, of
 * 1 to 16 digits (all as wide as each other if SAME_WIDTH, else each its
 * own), random from *SEED; the addresses to WANT.
 */
void frames_text(struct strbuf *sb, uint64_t *seed, uint32_t depth,
		 bool same_width, uint64_t *want);

/*
 * A process image over a few buffers of the test's (zeroed, owned), for
 * what reads memory through one (the heap walk, the scan, the typing).
 * IMG is first: a callback's image pointer is the fake's.
 */
struct fake_seg {
	uint64_t addr;
	size_t len;
	uint8_t *data;
};

struct fake_image {
	struct procimage img;
	struct fake_seg segs[8];
	size_t nsegs;
};

/* Start F, named NAME, with no mappings. */
void fake_image_init(struct fake_image *f, const char *name);
/* Free F's buffers and its image. */
void fake_image_release(struct fake_image *f);
/* A mapping of LEN zero bytes at ADDR, PERMS ("rw-p"), named NAME. */
void fake_image_add(struct fake_image *f, uint64_t addr, size_t len,
		    const char *perms, const char *name);
/* Where ADDR's byte is kept (the test fails if nowhere). */
uint8_t *fake_image_at(struct fake_image *f, uint64_t addr);
/* The read callback of F's image (procimage_init's). */
size_t fake_image_read(struct procimage *img, uint64_t addr, void *buf,
		       size_t len);

#endif
