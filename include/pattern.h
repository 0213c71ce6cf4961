/*
 * A regex given on the command line to match whole names (src/core/
 * pattern.c): compiled once the one way, for --alloc-fn's allocator
 * wrappers and for checking an OPT_REGEX option's value.
 */
#ifndef DMPROF_PATTERN_H
#define DMPROF_PATTERN_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "util.h"

/*
 * PATTERN compiled to match a whole name (anchored at both ends, '.'
 * matching newlines too, as a policy's patterns match whole fields) and
 * JIT-compiled, or NULL with "WHAT at offset N" added to ERR (when not
 * NULL).
 */
pcre2_code *pattern_compile(const char *pattern, struct strbuf *err);

#endif
