/*
 * Numbers as text: floats as Python's repr() writes them, byte counts
 * and percentages for people.
 */
#ifndef DMPROF_NUMFMT_H
#define DMPROF_NUMFMT_H

#include "util.h"

/*
 * A double as Python's repr() writes it: the shortest text that reads back
 * as the same double, with ".0" on integral values ("10.0", "0.25",
 * "1e-05").  The original's JSON carried time columns this way.
 */
void format_float_repr(struct strbuf *sb, double v);

/*
 * A byte count for people: "512 B", "12.3 KiB", "4.0 MiB", "1.2 GiB"
 * (one decimal, binary units); SIGNED adds '+' to positive counts.
 */
void format_bytes(struct strbuf *sb, int64_t v, bool sign);
/* PART as a percentage of WHOLE, one decimal ("12.5%"; "-" if WHOLE is
 * 0); SIGNED adds '+'. */
void format_percent(struct strbuf *sb, int64_t part, int64_t whole,
		    bool sign);
/*
 * N bytes at P as hexdump -C shows them, a line of 16 each, every line
 * after INDENT and ending in a newline (the first bytes of a block).
 */
void format_hexdump(struct strbuf *sb, const uint8_t *p, size_t n,
		    const char *indent);

#endif
