/* Number and string formatting shared by the writers. */
#ifndef DMPROF_FORMAT_H
#define DMPROF_FORMAT_H

#include "util.h"

/*
 * A double as Python's repr() writes it: the shortest text that reads back
 * as the same double, with ".0" on integral values ("10.0", "0.25",
 * "1e-05").  The original's JSON carried time columns this way.
 */
void format_float_repr(struct strbuf *sb, double v);

/* S as a JSON string literal; invalid UTF-8 bytes become \u00XX. */
void format_json_string(struct strbuf *sb, const char *s);

#endif
