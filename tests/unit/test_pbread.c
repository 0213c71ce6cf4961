/*
 * pb_gunzip, libdeflate's inflater a member at a time: gzip files of
 * several members, trailers that lie about the size, and data cut short
 * or corrupt anywhere, each said as such.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "pbread.h"
#include "pbwrite.h"
#include "util.h"

#define CUT "the gzip data ends early (file cut short?)"

/* The tests' data, made by .init: IN, 110 KB of text; GZ, it gzipped,
 * 23 KB. */
static struct strbuf in = STRBUF_INIT, gz = STRBUF_INIT;

static void gzipped_text(void)
{
	uint32_t x = 1;

	for (int i = 0; i < 5000; i++) {
		x = x * 1103515245 + 12345;
		sb_addf(&in, "sample %d: %u bytes\n", i % 613, x >> 20);
	}
	pbw_gzip(in.buf, in.len, &gz);
}

static void release(void)
{
}

/* DATA[0..N) inflated into at most MAX bytes: WANT[0..WN). */
static void inflates_to(const char *data, size_t n, size_t max,
			const char *want, size_t wn)
{
	struct fault why = { 0 };
	unsigned char *out;
	size_t outn;

	cr_assert_eq(pb_gunzip((const unsigned char *)data, n, max, &out,
			       &outn, "data", &why),
		     0, "%s", why.what);
	cr_assert_eq(outn, wn, "%zu bytes, want %zu", outn, wn);
	cr_assert(!memcmp(out, want, wn));
	free(out);
}

/* Why DATA[0..N) does not inflate into at most MAX bytes. */
static const char *fault_max(const char *data, size_t n, size_t max)
{
	static struct fault why;
	unsigned char *out;
	size_t outn;

	fault_release(&why);
	cr_assert_eq(pb_gunzip((const unsigned char *)data, n, max, &out,
			       &outn, "data", &why),
		     -1, "%zu bytes inflated", n);
	cr_assert_not_null(why.what);
	cr_assert_str_eq(why.where.path, "data");
	cr_assert(why.where.has_addr);
	return why.what;
}

static const char *fault(const char *data, size_t n)
{
	return fault_max(data, n, 1 << 30);
}

static void set_le32(char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (char)(v >> (8 * i));
}

Test(pbread, members_one_after_another, .init = gzipped_text, .fini = release)
{
	struct strbuf want = STRBUF_INIT;

	/* The trailer's size is the last member's: the first one runs out
	 * of room, and is inflated again into more. */
	pbw_gzip("", 0, &gz);
	pbw_gzip("tail\n", 5, &gz);
	sb_add(&want, in.buf, in.len);
	sb_add(&want, "tail\n", 5);
	inflates_to(gz.buf, gz.len, 1 << 30, want.buf, want.len);
	sb_release(&want);
}

Test(pbread, cut_short_anywhere, .init = gzipped_text, .fini = release)
{
	size_t first;

	cr_assert_str_eq(fault(gz.buf, 0), CUT);
	/* In the header, the deflate data and the trailer: the first and
	 * last bytes one by one. */
	for (size_t k = 1; k < gz.len;
	     k += k < 64 || gz.len - k < 64 ? 1 : gz.len - k < 1100 ? 13 : 97)
		cr_assert_str_eq(fault(gz.buf, k), CUT, "cut at %zu of %zu",
				 k, gz.len);
	/* A second member cut short. */
	first = gz.len;
	pbw_gzip(in.buf, in.len, &gz);
	for (size_t k = first + 1; k < gz.len; k += 331)
		cr_assert_str_eq(fault(gz.buf, k), CUT, "cut at %zu of %zu",
				 k, gz.len);
	cr_assert_str_eq(fault(gz.buf, gz.len - 1), CUT);
}

Test(pbread, trailers_that_lie, .init = gzipped_text, .fini = release)
{
	char *isize, *crc;

	isize = gz.buf + gz.len - 4;
	crc = gz.buf + gz.len - 8;
	/* A size too big, and too small (0: the room is grown). */
	set_le32(isize, (uint32_t)in.len + 1);
	cr_assert_str_eq(fault(gz.buf, gz.len),
			 "corrupt gzip data (its length does not match)");
	set_le32(isize, 0);
	cr_assert_str_eq(fault(gz.buf, gz.len),
			 "corrupt gzip data (its length does not match)");
	/* A size that says 4 GiB of 23 KB is not believed. */
	set_le32(isize, UINT32_MAX);
	cr_assert_str_eq(fault(gz.buf, gz.len),
			 "corrupt gzip data (its length does not match)");
	set_le32(isize, (uint32_t)in.len);
	inflates_to(gz.buf, gz.len, 1 << 30, in.buf, in.len);
	crc[0] ^= 1;
	cr_assert_str_eq(fault(gz.buf, gz.len),
			 "corrupt gzip data (its CRC-32 does not match)");
}

Test(pbread, corrupt_inside, .init = gzipped_text, .fini = release)
{
	const char *why;

	/* Anywhere but the last kilobyte (where it reads as cut short). */
	for (size_t k = 20; k + 1100 < gz.len; k += 89) {
		gz.buf[k] ^= 0x5a;
		why = fault(gz.buf, gz.len);
		cr_assert(!strncmp(why, "corrupt gzip data", 17),
			  "at %zu of %zu: %s", k, gz.len, why);
		gz.buf[k] ^= 0x5a;
	}
}

Test(pbread, headers)
{
	struct strbuf small = STRBUF_INIT, full = STRBUF_INIT;
	/* FHCRC, FEXTRA, FNAME and FCOMMENT, each read past. */
	static const char head[] = "\x1f\x8b\x08\x1e\0\0\0\0\0\xff"
				   "\x03\0abc" "p.pb\0" "c\0" "\xaa\xbb";
	size_t hn = sizeof(head) - 1;

	pbw_gzip("profile\n", 8, &small);
	sb_add(&full, head, hn);
	sb_add(&full, small.buf + 10, small.len - 10);
	inflates_to(full.buf, full.len, 1 << 30, "profile\n", 8);
	for (size_t k = 1; k <= hn; k++)
		cr_assert_str_eq(fault(full.buf, k), CUT, "cut at %zu", k);
	full.buf[2] = 7;
	cr_assert_str_eq(fault(full.buf, 3), "unknown compression method");
	full.buf[2] = 8;
	full.buf[3] |= 0x20;
	cr_assert_str_eq(fault(full.buf, 4), "unknown header flags set");
	cr_assert_str_eq(fault("PK\3\4", 4), "not gzip data");
	/* After a member: the start of another, or not. */
	sb_reset(&full);
	sb_add(&full, small.buf, small.len);
	sb_add(&full, "\x1f", 1);
	cr_assert_str_eq(fault(full.buf, full.len), CUT);
	sb_add(&full, "\x8b", 1);
	cr_assert_str_eq(fault(full.buf, full.len), CUT);
	full.buf[full.len - 1] = 0;
	cr_assert_str_eq(fault(full.buf, full.len),
			 "garbage after the gzip data");
	sb_release(&small);
	sb_release(&full);
}

Test(pbread, more_than_it_may, .init = gzipped_text, .fini = release)
{
	cr_assert_str_eq(fault_max(gz.buf, gz.len, in.len - 1),
			 "it inflates to more than 4 GiB");
	inflates_to(gz.buf, gz.len, in.len, in.buf, in.len);
}
