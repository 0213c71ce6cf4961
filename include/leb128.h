/*
 * LEB128, DWARF's variable-length numbers, read from a cursor over bytes
 * that says when it ran out (header only: the DWARF reader and the
 * recorder's unwinder, a preload library linked with nothing of
 * dmprof's, both read .debug_* and .eh_frame with it).
 */
#ifndef DMPROF_LEB128_H
#define DMPROF_LEB128_H

#include <stdbool.h>
#include <stdint.h>

/* Bytes [P, END) to read; BAD once a read went past END. */
struct byte_cur {
	const uint8_t *p, *end;
	bool bad;
};

static __attribute__((noinline, unused)) uint64_t
leb128_u_long(struct byte_cur *c)
{
	uint64_t v = 0;
	unsigned shift = 0;

	while (c->p < c->end) {
		uint8_t b = *c->p++;

		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			return v;
	}
	c->bad = true;
	return v;
}

/* An unsigned one: its bits past 64 dropped; cut short, BAD and what was
 * read.  (Most are one byte: abbreviation codes, forms, opcodes.) */
static inline uint64_t leb128_u(struct byte_cur *c)
{
	if (c->p < c->end && !(*c->p & 0x80))
		return *c->p++;
	return leb128_u_long(c);
}

/* A signed one, sign-extended from its last byte; cut short, BAD and
 * what was read (not extended). */
static inline int64_t leb128_s(struct byte_cur *c)
{
	uint64_t v = 0;
	unsigned shift = 0;
	uint8_t b = 0;

	while (c->p < c->end) {
		b = *c->p++;
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80)) {
			if (shift < 64 && (b & 0x40))
				v |= ~(uint64_t)0 << shift;
			return (int64_t)v;
		}
	}
	c->bad = true;
	return (int64_t)v;
}

#endif
