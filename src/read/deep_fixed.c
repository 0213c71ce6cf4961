/*
 * A deep dump's stack lines as the producer writes them, in their exact
 * layout, many at a time (the parser's and the tail's hot loop): the
 * line's separators and field widths checked at once on its first 48
 * bytes, its fields read eight digits at a time, and its end known from
 * its last number, with no search for the newline.  A line in any other
 * shape stops the run, for the line-at-a-time parser.
 */
#include "deep_parse.h"

#ifdef __SSE2__
#include <emmintrin.h>
#endif

/*
 * "%10lld %10lld %6d %6d @ %d\n": bits of the line's first bytes.  The
 * four fields (each blanks, then at least one digit), where each starts,
 * and the blanks between them and around '@' (at 36).
 */
#define FIELD(at, w) ((((uint64_t)1 << (w)) - 1) << (at))
#define FIELDS (FIELD(0, 10) | FIELD(11, 10) | FIELD(22, 6) | FIELD(29, 6))
#define STARTS ((uint64_t)1 << 0 | (uint64_t)1 << 11 | (uint64_t)1 << 22 | \
		(uint64_t)1 << 29)
#define BLANKS ((uint64_t)1 << 10 | (uint64_t)1 << 21 | (uint64_t)1 << 28 | \
		(uint64_t)1 << 35 | (uint64_t)1 << 37)
/* What the check looks at: the fields, then the id's first 8 bytes. */
#define WINDOW 48
#define ID_AT 38

/* Eight bytes of digits or leading blanks (as zeros), the first the most
 * significant: their value. */
static inline uint64_t value8(uint64_t w)
{
	w &= 0x0F0F0F0F0F0F0F0FULL; /* (' ' & 15 is 0) */
	w = (w * 10 + (w >> 8)) & 0x00FF00FF00FF00FFULL;
	w = (w * 100 + (w >> 16)) & 0x0000FFFF0000FFFFULL;
	return (w * 10000 + (w >> 32)) & 0xFFFFFFFFULL;
}

/* The 10-byte field at P. */
static inline int64_t value10(const char *p)
{
	return (int64_t)(((uint64_t)(p[0] & 15) * 10 + (uint64_t)(p[1] & 15)) *
				 100000000 +
			 value8(load8(p + 2)));
}

/* The 6-byte field at P (P - 2 readable). */
static inline int64_t value6(const char *p)
{
	return (int64_t)value8(load8(p - 2) & ~(uint64_t)0xFFFF);
}

#ifdef __SSE2__
/* Bits of the 16 bytes at P: digits in *D, blanks in *B. */
static inline void classes16(const char *p, uint64_t *d, uint64_t *b)
{
	__m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
	__m128i digit = _mm_and_si128(_mm_cmpgt_epi8(x, _mm_set1_epi8('0' - 1)),
				      _mm_cmplt_epi8(x, _mm_set1_epi8('9' + 1)));

	*d = (uint64_t)(unsigned)_mm_movemask_epi8(digit);
	*b = (uint64_t)(unsigned)_mm_movemask_epi8(
		_mm_cmpeq_epi8(x, _mm_set1_epi8(' ')));
}
#else
static inline void classes16(const char *p, uint64_t *d, uint64_t *b)
{
	*d = *b = 0;
	for (int i = 0; i < 16; i++) {
		*d |= (uint64_t)is_digit(p[i]) << i;
		*b |= (uint64_t)(p[i] == ' ') << i;
	}
}
#endif

size_t deep_fixed_lines(const char *p, const char *end,
			struct stack_line *lines, uint64_t *ids, size_t room,
			const char **stop)
{
	size_t n = 0;

	while (n < room && end - p >= WINDOW) {
		uint64_t d[3], b[3], digits, blanks, first, w;
		unsigned k;

		classes16(p, &d[0], &b[0]);
		classes16(p + 16, &d[1], &b[1]);
		classes16(p + 32, &d[2], &b[2]);
		digits = d[0] | d[1] << 16 | d[2] << 32;
		blanks = b[0] | b[1] << 16 | b[2] << 32;
		/*
		 * Each field blanks then digits: its blanks plus its first
		 * bit carry to its first digit, and leave no blank (a field
		 * of blanks alone carries to the blank after it).
		 */
		first = (blanks & FIELDS) + STARTS;
		if ((blanks & BLANKS) != BLANKS || p[36] != '@' ||
		    ((digits | blanks) & FIELDS) != FIELDS || (first & ~digits))
			break;
		/* The id: 1 to 7 digits, then the newline. */
		w = load8(p + ID_AT);
		k = digits8(w);
		if (!k || k == 8 || p[ID_AT + k] != '\n')
			break;
		lines[n] = (struct stack_line){
			.virt = value10(p),
			.committed = value10(p + 11),
			.alloc = value6(p + 22),
			.free = value6(p + 29),
		};
		ids[n++] = digits8_value(w, k);
		p += ID_AT + k + 1;
	}
	*stop = p;
	return n;
}
