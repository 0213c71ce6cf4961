/*
 * The protobuf writer's wire encoding (varints, lengths, packed fields)
 * and its gzip, read back by the reader's pb_gunzip.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "pbread.h"
#include "pbwrite.h"
#include "util.h"

static void expect_bytes(const struct strbuf *sb, const unsigned char *want,
			 size_t n)
{
	cr_assert_eq(sb->len, n, "%zu bytes, want %zu", sb->len, n);
	cr_assert(!memcmp(sb->buf, want, n));
}

Test(pbwrite, varints)
{
	struct strbuf sb = STRBUF_INIT;
	/* Field 1 = 150 (the protobuf documentation's example), field 2 = 0,
	 * field 16 = 2^64 - 1 (-1 as an int64: ten bytes). */
	static const unsigned char want[] = {
		0x08, 0x96, 0x01, 0x10, 0x00, 0x80, 0x01, 0xff, 0xff, 0xff,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
	};

	pbw_uint(&sb, 1, 150);
	pbw_uint(&sb, 2, 0);
	pbw_uint(&sb, 16, (uint64_t)-1);
	expect_bytes(&sb, want, sizeof(want));
	sb_release(&sb);
}

Test(pbwrite, bytes_and_packed)
{
	struct strbuf sb = STRBUF_INIT;
	uint64_t v[] = { 3, 270, 86942 };
	static const unsigned char want[] = {
		0x12, 0x07, 't', 'e', 's', 't', 'i', 'n', 'g',
		0x22, 0x06, 0x03, 0x8e, 0x02, 0x9e, 0xa7, 0x05,
	};

	pbw_bytes(&sb, 2, "testing", 7);
	pbw_packed(&sb, 4, v, 3);
	pbw_packed(&sb, 5, v, 0); /* nothing */
	expect_bytes(&sb, want, sizeof(want));
	sb_release(&sb);
}

Test(pbwrite, gzip_round_trip)
{
	struct strbuf in = STRBUF_INIT, gz = STRBUF_INIT;
	unsigned char *out;
	size_t n;
	struct fault why = { 0 };

	for (int i = 0; i < 100000; i++)
		sb_addf(&in, "line %d\n", i % 977);
	pbw_gzip(in.buf, in.len, &gz);
	cr_assert(gz.len > 18 && gz.len < in.len / 4, "%zu bytes", gz.len);
	cr_assert_eq((unsigned char)gz.buf[0], 0x1f);
	cr_assert_eq((unsigned char)gz.buf[1], 0x8b);
	cr_assert_eq(pb_gunzip((unsigned char *)gz.buf, gz.len, 1 << 30, &out,
			       &n, "gz", &why),
		     0, "%s", why.what);
	cr_assert_eq(n, in.len);
	cr_assert(!memcmp(out, in.buf, n));
	free(out);
	/* Nothing at all is still a gzip member. */
	sb_reset(&gz);
	pbw_gzip("", 0, &gz);
	cr_assert_eq(pb_gunzip((unsigned char *)gz.buf, gz.len, 1 << 30, &out,
			       &n, "gz", &why),
		     0, "%s", why.what);
	cr_assert_eq(n, 0);
	free(out);
	sb_release(&in);
	sb_release(&gz);
}
