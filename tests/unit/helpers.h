/*
 * Unit-test helpers: scratch files and captured diagnostics.  Criterion
 * runs each test in its own process, so each has its own of both.
 */
#ifndef DMPROF_TEST_HELPERS_H
#define DMPROF_TEST_HELPERS_H

#include <stddef.h>

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

#endif
