/*
 * The protobuf wire format, writing side: only what a profile.proto needs
 * (varints and length-delimited fields; the reader in src/read/pbread.c
 * takes every wire type).
 */
#include "pbwrite.h"

#include <string.h>
#include <zlib.h>

enum { WT_VARINT = 0, WT_LEN = 2 };

static void varint(struct strbuf *sb, uint64_t v)
{
	unsigned char b[10];
	size_t n = 0;

	while (v >= 0x80) {
		b[n++] = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	b[n++] = (unsigned char)v;
	sb_add(sb, b, n);
}

static size_t varint_size(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

void pbw_uint(struct strbuf *sb, uint32_t num, uint64_t v)
{
	varint(sb, (uint64_t)num << 3 | WT_VARINT);
	varint(sb, v);
}

void pbw_bytes(struct strbuf *sb, uint32_t num, const void *data, size_t n)
{
	varint(sb, (uint64_t)num << 3 | WT_LEN);
	varint(sb, n);
	sb_add(sb, data, n);
}

void pbw_packed(struct strbuf *sb, uint32_t num, const uint64_t *v, size_t n)
{
	size_t len = 0;

	if (!n)
		return;
	for (size_t i = 0; i < n; i++)
		len += varint_size(v[i]);
	varint(sb, (uint64_t)num << 3 | WT_LEN);
	varint(sb, len);
	for (size_t i = 0; i < n; i++)
		varint(sb, v[i]);
}

int pbw_gzip(const void *in, size_t n, struct strbuf *out, const char **why)
{
	const unsigned char *p = in;
	z_stream z;
	int rc;

	memset(&z, 0, sizeof(z));
	/* 15 + 16: a gzip header and trailer; zlib's default level. */
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK) {
		*why = "cannot start zlib";
		return -1;
	}
	sb_grow(out, deflateBound(&z, n));
	do {
		size_t room;

		if (!z.avail_in && n) {
			/* At most 4 GiB at a time: avail_in is 32 bits. */
			z.next_in = (unsigned char *)p;
			z.avail_in = (uInt)(n > UINT32_MAX ? UINT32_MAX : n);
			p += z.avail_in;
			n -= z.avail_in;
		}
		if (out->len + 1 >= out->alloc)
			sb_grow(out, 65536);
		room = out->alloc - out->len - 1;
		z.next_out = (unsigned char *)out->buf + out->len;
		z.avail_out = (uInt)(room > UINT32_MAX ? UINT32_MAX : room);
		rc = deflate(&z, n ? Z_NO_FLUSH : Z_FINISH);
		out->len = (size_t)((char *)z.next_out - out->buf);
		if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) {
			*why = z.msg ? z.msg : "zlib failed";
			deflateEnd(&z);
			return -1;
		}
	} while (rc != Z_STREAM_END);
	deflateEnd(&z);
	out->buf[out->len] = '\0';
	return 0;
}
