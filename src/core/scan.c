/* Words and numbers in a line (scan.h). */
#include "scan.h"

#define H(c) ((c) >= '0' && (c) <= '9'   ? (c) - '0'                         \
	      : (c) >= 'a' && (c) <= 'f' ? (c) - 'a' + 10                    \
	      : (c) >= 'A' && (c) <= 'F' ? (c) - 'A' + 10                    \
					 : -1)
#define H4(c) H(c), H((c) + 1), H((c) + 2), H((c) + 3)
#define H16(c) H4(c), H4((c) + 4), H4((c) + 8), H4((c) + 12)
const signed char hex_digit_value[256] = {
	H16(0),	  H16(16),  H16(32),  H16(48),	H16(64),  H16(80),
	H16(96),  H16(112), H16(128), H16(144), H16(160), H16(176),
	H16(192), H16(208), H16(224), H16(240),
};
#undef H16
#undef H4
#undef H

void cursor_skip_space(struct cursor *c)
{
	while (c->p < c->end && is_space(*c->p))
		c->p++;
}

bool cursor_at_end(const struct cursor *c)
{
	return c->p >= c->end;
}

bool cursor_word(struct cursor *c, const char **w, size_t *len)
{
	const char *s;

	cursor_skip_space(c);
	if (c->p >= c->end)
		return false;
	s = c->p;
	while (c->p < c->end && !is_space(*c->p))
		c->p++;
	*w = s;
	*len = (size_t)(c->p - s);
	return true;
}

bool cursor_eat(struct cursor *c, const char *lit)
{
	size_t n = strlen(lit);

	if ((size_t)(c->end - c->p) < n || memcmp(c->p, lit, n) != 0)
		return false;
	c->p += n;
	return true;
}

enum num_status parse_u64(struct cursor *c, uint64_t *out)
{
	const char *p = c->p;
	uint64_t v = 0;
	bool range = false;

	if (p >= c->end || !is_digit(*p))
		return NUM_NONE;
	for (; p < c->end && is_digit(*p); p++) {
		unsigned d = (unsigned)(*p - '0');

		if (v > (UINT64_MAX - d) / 10)
			range = true;
		else
			v = v * 10 + d;
	}
	c->p = p;
	if (range)
		return NUM_RANGE;
	*out = v;
	return NUM_OK;
}

enum num_status parse_i64(struct cursor *c, int64_t *out)
{
	struct cursor save = *c;
	bool neg = false;
	uint64_t v;
	enum num_status st;

	if (c->p < c->end && *c->p == '-') {
		neg = true;
		c->p++;
	}
	st = parse_u64(c, &v);
	if (st == NUM_NONE) {
		*c = save;
		return st;
	}
	if (st == NUM_RANGE)
		return st;
	if (neg) {
		if (v > (uint64_t)INT64_MAX + 1)
			return NUM_RANGE;
		*out = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
	} else {
		if (v > (uint64_t)INT64_MAX)
			return NUM_RANGE;
		*out = (int64_t)v;
	}
	return NUM_OK;
}

enum num_status parse_hex(struct cursor *c, uint64_t *out, bool allow_0x)
{
	const char *p = c->p;
	uint64_t v = 0;
	bool range = false;
	int d;

	if (allow_0x && c->end - p > 2 && p[0] == '0' &&
	    (p[1] == 'x' || p[1] == 'X') && hex_value(p[2]) >= 0)
		p += 2;
	if (p >= c->end || hex_value(*p) < 0)
		return NUM_NONE;
	for (; p < c->end && (d = hex_value(*p)) >= 0; p++) {
		if (v >> 60)
			range = true;
		v = v << 4 | (unsigned)d;
	}
	c->p = p;
	if (range)
		return NUM_RANGE;
	*out = v;
	return NUM_OK;
}

#define WORD_PARSER(name, type, parse, ...)                                   \
	enum num_status name(const char *w, size_t len, type *out)           \
	{                                                                      \
		struct cursor c = { w, w + len };                              \
		enum num_status st = parse(&c, out __VA_ARGS__);               \
									       \
		if (st == NUM_OK && c.p != c.end)                              \
			return NUM_NONE;                                       \
		return st;                                                     \
	}

WORD_PARSER(word_u64, uint64_t, parse_u64)
WORD_PARSER(word_i64, int64_t, parse_i64)

enum num_status word_hex(const char *w, size_t len, uint64_t *out,
			 bool allow_0x)
{
	struct cursor c = { w, w + len };
	enum num_status st = parse_hex(&c, out, allow_0x);

	if (st == NUM_OK && c.p != c.end)
		return NUM_NONE;
	return st;
}
