/*
 * Scanning a line: words, and numbers parsed by hand with overflow
 * checks, eight digits at a time where the hot readers need it (SWAR).
 */
#ifndef DMPROF_SCAN_H
#define DMPROF_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "input.h"

#if defined(__SSE2__) && defined(__x86_64__)
#include <emmintrin.h>
#endif

/* A cursor over one line's bytes. */
struct cursor {
	const char *p;
	const char *end;
};

static inline struct cursor cursor_of(const struct line *l)
{
	struct cursor c = { l->p, l->p + l->len };

	return c;
}

static inline bool is_space(int c)
{
	return c == ' ' || c == '\t' || c == '\v' || c == '\f' || c == '\r';
}

static inline bool is_digit(int c)
{
	return c >= '0' && c <= '9';
}

/*
 * Eight bytes at a time, for the hot loops of big files (the bytes are
 * loaded little-endian: the first one is the lowest).
 */
static inline uint64_t load8(const char *p)
{
	uint64_t w;

	memcpy(&w, p, 8);
	return w;
}

/* P past the blanks (' ') at P, before END. */
static inline const char *skip_blanks(const char *p, const char *end)
{
	while (end - p >= 8) {
		uint64_t w = load8(p) ^ 0x2020202020202020ULL;

		if (w)
			return p + (__builtin_ctzll(w) >> 3);
		p += 8;
	}
	while (p < end && *p == ' ')
		p++;
	return p;
}

/* How many of W's bytes, from the first, are decimal digits (0 to 8). */
static inline unsigned digits8(uint64_t w)
{
	/* A digit's high nibble is 3, and its low one + 6 stays a nibble. */
	uint64_t bad = ((w & 0xF0F0F0F0F0F0F0F0ULL) ^ 0x3030303030303030ULL) |
		       (((w & 0x0F0F0F0F0F0F0F0FULL) + 0x0606060606060606ULL) &
			0xF0F0F0F0F0F0F0F0ULL);

	return bad ? (unsigned)__builtin_ctzll(bad) >> 3 : 8;
}

/* The number W's first N (1 to 8) bytes spell, all digits. */
static inline uint64_t digits8_value(uint64_t w, unsigned n)
{
	/* Shifted up: the bytes below are zeros, leading ones. */
	w = (w & 0x0F0F0F0F0F0F0F0FULL) << (8 * (8 - n));
	w = (w * 10 + (w >> 8)) & 0x00FF00FF00FF00FFULL;
	w = (w * 100 + (w >> 16)) & 0x0000FFFF0000FFFFULL;
	return (w * 10000 + (w >> 32)) & 0xFFFFFFFFULL;
}

/*
 * Up to 18 decimal digits at P, before END: the end of them, their value
 * in *V; NULL if P holds none.  (A longer number stops at 18: the caller
 * sees a digit where it wants something else, and asks the general
 * parser.)
 */
static inline const char *digits_at(const char *p, const char *end,
				    int64_t *v)
{
	int64_t x = 0;
	int n = 0;

	/* Up to 7 digits at once; longer numbers a digit at a time. */
	if (end - p >= 8) {
		uint64_t w = load8(p);
		unsigned k = digits8(w);

		if (k && k < 8) {
			x = (int64_t)digits8_value(w, k);
			n = (int)k;
			p += k;
		}
	}
	for (; p < end && is_digit(*p) && n < 18; p++, n++)
		x = x * 10 + (*p - '0');
	*v = x;
	return n ? p : NULL;
}

/* Per byte of X (below 128): its high bit set iff M < byte < N. */
#define BYTES_BETWEEN(x, m, n)                                              \
	(((0x0101010101010101ULL * (127 + (n)) -                            \
	   ((x) & 0x7F7F7F7F7F7F7F7FULL)) &                                 \
	  ~(x) &                                                            \
	  (((x) & 0x7F7F7F7F7F7F7F7FULL) +                                  \
	   0x0101010101010101ULL * (127 - (m)))) &                          \
	 0x8080808080808080ULL)

/* How many of W's bytes, from the first, are hex digits (0 to 8). */
static inline unsigned xdigits8(uint64_t w)
{
	uint64_t ok = BYTES_BETWEEN(w, '0' - 1, '9' + 1) |
		      BYTES_BETWEEN(w | 0x2020202020202020ULL, 'a' - 1,
				    'f' + 1);
	uint64_t bad = ~ok & 0x8080808080808080ULL;

	return bad ? (unsigned)__builtin_ctzll(bad) >> 3 : 8;
}

/* The number W's first N (1 to 8) bytes spell, all hex digits. */
static inline uint64_t xdigits8_value(uint64_t w, unsigned n)
{
	/* A letter's bit 6 is set: its low nibble + 9. */
	w = (w & 0x0F0F0F0F0F0F0F0FULL) +
	    ((w >> 6) & 0x0101010101010101ULL) * 9;
	w <<= 8 * (8 - n);
	w = (w * 16 + (w >> 8)) & 0x00FF00FF00FF00FFULL;
	w = (w * 256 + (w >> 16)) & 0x0000FFFF0000FFFFULL;
	return (w * 65536 + (w >> 32)) & 0xFFFFFFFFULL;
}

/*
 * The hex digits that open the 16 bytes at Q: how many (0 to 16), and
 * the number they spell in *V when there is one.  An address is a dozen
 * digits: with SSE2 (every x86-64) the sixteen bytes are looked at
 * together, in a third of the instructions of two words' SWAR.
 */
static inline unsigned xdigits16(const char *q, uint64_t *v)
{
#if defined(__SSE2__) && defined(__x86_64__)
	const __m128i x = _mm_loadu_si128((const __m128i *)(const void *)q);
	const __m128i lower = _mm_or_si128(x, _mm_set1_epi8(0x20));
	/* (Signed compares: a byte from 0x80 up is below all of them.) */
	const __m128i digit =
		_mm_and_si128(_mm_cmpgt_epi8(x, _mm_set1_epi8('0' - 1)),
			      _mm_cmplt_epi8(x, _mm_set1_epi8('9' + 1)));
	const __m128i alpha =
		_mm_and_si128(_mm_cmpgt_epi8(lower, _mm_set1_epi8('a' - 1)),
			      _mm_cmplt_epi8(lower, _mm_set1_epi8('f' + 1)));
	unsigned other = ~(unsigned)_mm_movemask_epi8(
				 _mm_or_si128(digit, alpha)) & 0xffffu;
	unsigned n = other ? (unsigned)__builtin_ctz(other) : 16;
	__m128i val, pairs;
	uint64_t w;

	if (!n)
		return 0;
	/* Each byte its digit's value (0 where no digit); each pair of
	 * bytes one byte, the first digit high; the eight bytes as the
	 * number of all sixteen digits, then only the first N kept. */
	val = _mm_or_si128(
		_mm_and_si128(digit, _mm_sub_epi8(x, _mm_set1_epi8('0'))),
		_mm_and_si128(alpha,
			      _mm_sub_epi8(lower, _mm_set1_epi8('a' - 10))));
	pairs = _mm_or_si128(
		_mm_slli_epi16(_mm_and_si128(val, _mm_set1_epi16(0x00ff)), 4),
		_mm_srli_epi16(val, 8));
	w = __builtin_bswap64(
		(uint64_t)_mm_cvtsi128_si64(_mm_packus_epi16(pairs, pairs)));
	*v = n == 16 ? w : w >> (4 * (16 - n));
	return n;
#else
	uint64_t w = load8(q);
	unsigned n = xdigits8(w), k;

	if (!n)
		return 0;
	*v = xdigits8_value(w, n);
	if (n == 8) {
		w = load8(q + 8);
		k = xdigits8(w);
		if (k) {
			*v = *v << (4 * k) | xdigits8_value(w, k);
			n += k;
		}
	}
	return n;
#endif
}

/*
 * Words from P (at the blank before one) while each is one blank, "0x"
 * and 1 to 16 hex digits ended by a blank (a space, or a tab if TAB) or
 * END, with 16 bytes readable after its "0x" before LIMIT: their values
 * to OUT, which has room for (END - P) / 4 + 1 (a word takes 4 bytes at
 * least); how many in *N, and where they stop.
 *
 * A frame's end waits for its digits to be read, and the next frame's
 * reading waited for that: a chain through every frame of a line.
 * Producers print addresses as wide as each other (zero-padded, or of
 * one region), so the next word is looked for where the last width puts
 * it, the check of that guess off the chain; a wrong guess is a
 * mispredicted branch, not a wrong word.
 */
static inline const char *hex_words_run(const char *p, const char *end,
					const char *limit, bool tab,
					uint64_t *out, size_t *n)
{
	size_t guess = 0, miss;
	const uint64_t *first = out;

	while (limit - p >= 19 && end - p >= 4 && p[0] == ' ' &&
	       p[1] == '0' && p[2] == 'x') {
		uint64_t v;
		unsigned k = xdigits16(p + 3, &v);
		size_t step = 3 + (size_t)k;

		/* (17 digits too: no blank after 16.) */
		if (!k || p + step > end ||
		    (p + step < end && p[step] != ' ' &&
		     !(tab && p[step] == '\t')))
			break;
		*out++ = v;
		/*
		 * (Not p += step, which is what a compiler makes of "if
		 * step differs, guess = step; p += guess": the chain would
		 * go through the digits again.  The difference hidden from
		 * it, the guess is only written when wrong.)
		 */
		miss = step ^ guess;
		__asm__("" : "+r"(miss));
		if (miss)
			guess = step;
		p += guess;
	}
	*n = (size_t)(out - first);
	return p;
}

/*
 * "0x" and 1 to 16 hex digits at P, then END or a blank: the word's
 * length, its value in *V.  0 if P holds no such word (let the general
 * parser say why).  Reads up to 18 bytes from P, which LIMIT (the end of
 * the buffer, past END) must allow.
 */
static inline size_t hex_word(const char *p, const char *end,
			      const char *limit, uint64_t *v)
{
	const char *q = p + 2;
	unsigned n;

	if (end - p < 3 || limit - q < 16 || p[0] != '0' || p[1] != 'x')
		return 0;
	n = xdigits16(q, v);
	if (!n)
		return 0;
	/* (More than 16 digits: no blank after the 16th.) */
	if (q + n > end || (q + n < end && q[n] != ' '))
		return 0;
	return 2 + n;
}

extern const signed char hex_digit_value[256];

/* Value of hex digit C, or -1. */
static inline int hex_value(int c)
{
	return hex_digit_value[(unsigned char)c];
}

void cursor_skip_space(struct cursor *c);
bool cursor_at_end(const struct cursor *c);
/* Next whitespace-separated word; false at end of line. */
bool cursor_word(struct cursor *c, const char **w, size_t *len);
/* Consume LIT if the cursor starts with it. */
bool cursor_eat(struct cursor *c, const char *lit);

enum num_status { NUM_OK = 0, NUM_NONE = -1, NUM_RANGE = -2 };

/*
 * Parse digits at the cursor (no leading space skipped).  NUM_NONE leaves
 * the cursor alone; NUM_RANGE consumes the digits.  parse_i64 accepts one
 * leading '-'.  parse_hex accepts an optional "0x"/"0X" only when ALLOW_0X.
 */
enum num_status parse_u64(struct cursor *c, uint64_t *out);
enum num_status parse_i64(struct cursor *c, int64_t *out);
enum num_status parse_hex(struct cursor *c, uint64_t *out, bool allow_0x);

/* Whole-word variants: the word must be a number and nothing else. */
enum num_status word_u64(const char *w, size_t len, uint64_t *out);
enum num_status word_i64(const char *w, size_t len, int64_t *out);
enum num_status word_hex(const char *w, size_t len, uint64_t *out,
			 bool allow_0x);

#endif
