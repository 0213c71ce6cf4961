/* Input: lines, words and numbers. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scan.h"
#include "util.h"
#include "helpers.h"

static enum num_status u64(const char *s, uint64_t *v)
{
	return word_u64(s, strlen(s), v);
}

Test(input, u64_limits)
{
	uint64_t v;

	cr_assert_eq(u64("0", &v), NUM_OK);
	cr_assert_eq(v, 0);
	cr_assert_eq(u64("18446744073709551615", &v), NUM_OK);
	cr_assert_eq(v, UINT64_MAX);
	cr_assert_eq(u64("18446744073709551616", &v), NUM_RANGE);
	cr_assert_eq(u64("99999999999999999999999", &v), NUM_RANGE);
	cr_assert_eq(u64("", &v), NUM_NONE);
	cr_assert_eq(u64("12x", &v), NUM_NONE);
	cr_assert_eq(u64("-1", &v), NUM_NONE);
}

Test(input, i64_limits)
{
	int64_t v;

	cr_assert_eq(word_i64("-9223372036854775808", 20, &v), NUM_OK);
	cr_assert_eq(v, INT64_MIN);
	cr_assert_eq(word_i64("9223372036854775807", 19, &v), NUM_OK);
	cr_assert_eq(v, INT64_MAX);
	cr_assert_eq(word_i64("9223372036854775808", 19, &v), NUM_RANGE);
	cr_assert_eq(word_i64("-9223372036854775809", 20, &v), NUM_RANGE);
	cr_assert_eq(word_i64("-", 1, &v), NUM_NONE);
}

Test(input, hex)
{
	uint64_t v;

	cr_assert_eq(word_hex("0x7f630ff7e718", 14, &v, true), NUM_OK);
	cr_assert_eq(v, 0x7f630ff7e718ULL);
	cr_assert_eq(word_hex("ffffffffffffffff", 16, &v, false), NUM_OK);
	cr_assert_eq(v, UINT64_MAX);
	cr_assert_eq(word_hex("10000000000000000", 17, &v, false), NUM_RANGE);
	cr_assert_eq(word_hex("0x12", 4, &v, false), NUM_NONE);
	cr_assert_eq(word_hex("0x", 2, &v, true), NUM_NONE);
	cr_assert_eq(word_hex("DeadBeef", 8, &v, false), NUM_OK);
	cr_assert_eq(v, 0xdeadbeef);
}

Test(input, lines_crlf_and_unterminated)
{
	static const char data[] = "a\r\nbb\n\nlast";
	struct line_reader r;
	struct line l;

	lines_init(&r, data, sizeof(data) - 1);
	cr_assert(lines_next(&r, &l));
	cr_assert_eq(l.len, 1);
	cr_assert_eq(l.no, 1);
	cr_assert(l.newline);
	cr_assert(lines_next(&r, &l));
	cr_assert_eq(l.len, 2);
	cr_assert(lines_next(&r, &l));
	cr_assert_eq(l.len, 0);
	cr_assert(lines_next(&r, &l));
	cr_assert_eq(l.len, 4);
	cr_assert_not(l.newline);
	cr_assert_eq(l.no, 4);
	cr_assert_not(lines_next(&r, &l));
}

Test(input, words)
{
	struct line l = { " \t one  two\tthree ", 18, 1, true };
	struct cursor c = cursor_of(&l);
	const char *w;
	size_t n;

	cr_assert(cursor_word(&c, &w, &n));
	cr_assert_eq(n, 3);
	cr_assert(!memcmp(w, "one", 3));
	cr_assert(cursor_word(&c, &w, &n));
	cr_assert(cursor_word(&c, &w, &n));
	cr_assert(!memcmp(w, "three", 5));
	cr_assert_not(cursor_word(&c, &w, &n));
}

/* Eight bytes at a time says what a byte at a time says. */
Test(input, eight_bytes_at_a_time)
{
	static const char *const cases[] = {
		"0 ", "7@", "12345678", "1234567 ", "99999999", "00000010",
		"/0:9", "9:", "42\n", "1234-", "x1", "", "        ", "     7  ",
		"\xb0\xb9\x39", "3\x80",
	};
	uint64_t seed = 88172645463325252ULL;

	for (size_t i = 0; i < ARRAY_SIZE(cases) + 20000; i++) {
		char buf[9] = { 0 };
		unsigned n = 0;
		uint64_t v = 0;

		if (i < ARRAY_SIZE(cases)) {
			strncpy(buf, cases[i], 8);
		} else {
			/* Digits, blanks and their neighbours in ASCII. */
			static const char pool[] = "0123456789 /:@-\t";

			for (int k = 0; k < 8; k++) {
				seed ^= seed << 13;
				seed ^= seed >> 7;
				seed ^= seed << 17;
				buf[k] = pool[seed % (sizeof(pool) - 1)];
			}
		}
		while (n < 8 && buf[n] >= '0' && buf[n] <= '9')
			v = v * 10 + (uint64_t)(buf[n++] - '0');
		cr_assert_eq(digits8(load8(buf)), n, "'%s'", buf);
		if (n)
			cr_assert_eq(digits8_value(load8(buf), n), v, "'%s'",
				     buf);
		n = 0;
		while (n < 8 && buf[n] == ' ')
			n++;
		cr_assert_eq(skip_blanks(buf, buf + 8), buf + n, "'%s'", buf);
	}
	{
		static const char spaced[] = "                 x";

		cr_assert_eq(skip_blanks(spaced, spaced + sizeof(spaced) - 1),
			     spaced + 17);
		cr_assert_eq(skip_blanks(spaced, spaced + 5), spaced + 5);
	}
}

/* What a thread keeps (report_capture) is said later, the same, in order. */
Test(input, reports_kept_then_said)
{
	struct strbuf kept = STRBUF_INIT;

	capture_stderr();
	warning("first");
	report_capture(&kept);
	error("%s:%d: kept", "f", 3);
	warning("kept too");
	report_capture(NULL);
	warning("after");
	cr_assert_str_eq(stderr_text(),
			 "dmprof: warning: first\ndmprof: warning: after\n");
	report_replay(&kept);
	cr_assert_str_eq(stderr_text(),
			 "dmprof: warning: first\ndmprof: warning: after\n"
			 "dmprof: f:3: kept\ndmprof: warning: kept too\n");
	sb_release(&kept);
}

/* Hex words 8 bytes at a time: what word_hex says, or "not mine". */
Test(input, hex_words_eight_bytes_at_a_time)
{
	static const char pool[] = "0123456789abcdefABCDEFxX gG/:@`\t";
	uint64_t seed = 2463534242ULL;
	char buf[64];

	for (int i = 0; i < 50000; i++) {
		size_t len, n;
		uint64_t v = 0, want;
		const char *sp;

		/* "0x", then 0 to 20 random bytes from the pool, then a
		 * tail of blanks or not, in a buffer with room to read. */
		memset(buf, 0, sizeof(buf));
		memcpy(buf, "0x", 2);
		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		len = 2 + seed % 21;
		for (size_t k = 2; k < len; k++) {
			seed ^= seed << 13;
			seed ^= seed >> 7;
			seed ^= seed << 17;
			/* Mostly hex digits. */
			buf[k] = pool[seed % (seed & 0x100 ? 22 : sizeof(pool) -
								       1)];
		}
		n = hex_word(buf, buf + len, buf + sizeof(buf), &v);
		/* What a word-at-a-time parse says: the word up to a blank
		 * or the end, if it is 0x and 1 to 16 hex digits. */
		sp = memchr(buf, ' ', len);
		{
			size_t wl = sp ? (size_t)(sp - buf) : len, k;
			bool ok = wl >= 3 && wl <= 18;

			want = 0;
			for (k = 2; ok && k < wl; k++) {
				int d = hex_value(buf[k]);

				if (d < 0)
					ok = false;
				else
					want = want << 4 | (uint64_t)d;
			}
			if (ok && buf[2] != ' ') {
				cr_assert_eq(n, wl, "'%s'", buf);
				cr_assert_eq(v, want, "'%s'", buf);
			} else {
				cr_assert_eq(n, 0, "'%s': %zu", buf, n);
			}
		}
	}
	/* Too little room to read: not mine. */
	cr_assert_eq(hex_word("0x12", (const char *)"0x12" + 4,
			      (const char *)"0x12" + 5, &(uint64_t){ 0 }),
		     0);
}

/* Sixteen bytes at once: the hex digits that open them, as a digit at a
 * time counts them, bytes from 0x80 up (0xe1 is 'a' with the high bit)
 * and the neighbours of each range included. */
Test(input, hex_digits_sixteen_bytes_at_once)
{
	static const char pool[] = "0123456789abcdefABCDEF/:@`gG \t\x80\xb0"
				   "\xc1\xe1\xe6\xff";
	uint64_t seed = 88172645463325252ULL;

	for (int i = 0; i < 200000; i++) {
		char buf[16];
		uint64_t v = 0, want = 0;
		unsigned n, k;

		for (k = 0; k < sizeof(buf); k++) {
			seed ^= seed << 13;
			seed ^= seed >> 7;
			seed ^= seed << 17;
			/* Mostly digits, so that long runs come. */
			buf[k] = pool[seed % (seed & 0x300 ? 22
							   : sizeof(pool) - 1)];
		}
		for (k = 0; k < sizeof(buf) && hex_value(buf[k]) >= 0; k++)
			want = want << 4 | (uint64_t)hex_value(buf[k]);
		n = xdigits16(buf, &v);
		cr_assert_eq(n, k, "case %d", i);
		if (n)
			cr_assert_eq(v, want, "case %d: %" PRIx64 " for %" PRIx64,
				     i, v, want);
	}
}

/* Every line as lines_next() gives it from the whole text, the rest
 * read on another thread from line BEHIND on (0: never). */
static void stream_matches_behind(const char *path, const char *text,
				  size_t len, unsigned long behind)
{
	struct line_stream s;
	struct line_reader r;
	struct line a, b;

	cr_assert_eq(stream_open(&s, path), 0);
	lines_init(&r, text, len);
	while (lines_next(&r, &a)) {
		if (a.no == behind) {
			stream_read_behind(&s);
			cr_assert(s.behind, "line %lu: not read behind", a.no);
		}
		cr_assert_eq(stream_line(&s, &b), 1, "line %lu", a.no);
		cr_assert_eq(a.no, b.no);
		cr_assert_eq(a.len, b.len, "line %lu: %zu, %zu", a.no, a.len,
			     b.len);
		cr_assert_eq(a.newline, b.newline);
		cr_assert(!memcmp(a.p, b.p, a.len), "line %lu", a.no);
		/* (Zeros past the data, for reading ahead.) */
		cr_assert_geq(stream_limit(&s), b.p + b.len + STREAM_PAD);
	}
	cr_assert_eq(stream_line(&s, &b), 0);
	cr_assert_eq(stream_line(&s, &b), 0);
	stream_close(&s);
}

static void stream_matches(const char *path, const char *text, size_t len)
{
	stream_matches_behind(path, text, len, 0);
}

Test(input, stream_lines_across_blocks)
{
	size_t len = 3 * STREAM_BLOCK + 12345;
	char *text = xmalloc(len);
	uint64_t x = 88172645463325252ULL;

	/* Lines of 0 to 600 bytes, CRLF now and then, no last newline. */
	for (size_t i = 0, k = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		if (k++ > x % 600 || i + 1 == len - 40) {
			text[i] = '\n';
			k = 0;
		} else {
			text[i] = x % 17 == 0 ? '\r' : (char)('a' + x % 26);
		}
	}
	text[len - 1] = 'z';
	stream_matches(write_file("s", text, (long)len), text, len);
	/* One line longer than a block, then a short one. */
	memset(text, 'x', 2 * STREAM_BLOCK + 7);
	memcpy(text + 2 * STREAM_BLOCK + 7, "\r\nend\n", 6);
	len = 2 * STREAM_BLOCK + 13;
	stream_matches(write_file("s", text, (long)len), text, len);
	stream_matches(write_file("s", "", 0), "", 0);
	stream_matches(write_file("s", "\n\n", 2), "\n\n", 2);
	free(text);
}

Test(input, stream_rest_and_whole_file)
{
	static const char text[] = "one\ntwo\r\nthree\nfour";
	const char *path = write_file("s", text, -1), *rest;
	struct line_stream s;
	struct filebuf fb, head;
	struct line l;
	size_t len;

	cr_assert_eq(stream_open(&s, path), 0);
	stream_head(&s, &head);
	cr_assert_eq(head.size, strlen(text));
	cr_assert_eq(stream_line(&s, &l), 1);
	cr_assert_eq(stream_line(&s, &l), 1);
	cr_assert_eq(l.len, 3);
	cr_assert_eq(stream_rest(&s, &rest, &len), 0);
	cr_assert_eq(len, strlen("three\nfour"));
	cr_assert(!memcmp(rest, "three\nfour", len));
	stream_close(&s);

	cr_assert_eq(stream_open(&s, path), 0);
	cr_assert_eq(stream_to_file(&s, &fb), 0);
	cr_assert_eq(fb.size, strlen(text));
	cr_assert_str_eq(fb.data, text);
	file_release(&fb);

	capture_stderr();
	cr_assert_eq(stream_open(&s, "/nonexistent/x"), -1);
	cr_assert(strstr(stderr_text(), "/nonexistent/x: No such file"));
	cr_assert_eq(stream_open(&s, tmpdir()), -1);
	cr_assert(strstr(stderr_text(), "is a directory"));
}

/*
 * Read behind on another thread (stream_read_behind), a file's lines are
 * those read on one: lines of any length across the slots' blocks, a
 * line longer than a slot's head, one longer than a block, one that ends
 * a block exactly, no last newline; the stream closed while the
 * thread waits for a slot; the rest taken whole midway.
 */
Test(input, stream_read_behind_as_on_one_thread)
{
	size_t len = 12 * STREAM_BLOCK + 777, at;
	char *text = xmalloc(len);
	uint64_t x = 88172645463325252ULL;
	const char *path, *rest;
	struct line_stream s;
	struct line_reader r;
	struct line l, a;
	size_t rlen;

	setenv("DMPROF_THREADS", "2", 1);
	for (size_t i = 0, k = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		if (k++ > x % 900) {
			text[i] = '\n';
			k = 0;
		} else {
			text[i] = x % 19 == 0 ? '\r' : (char)('a' + x % 26);
		}
	}
	/* 100 KB and 2.5 blocks without a newline; one at a block's end. */
	memset(text + 3 * STREAM_BLOCK + 5, 'h', 100000);
	memset(text + 6 * STREAM_BLOCK + 3, 'b', 5 * STREAM_BLOCK / 2);
	text[9 * STREAM_BLOCK - 1] = '\n';
	text[len - 1] = 'z';
	path = write_file("s", text, (long)len);
	for (unsigned long from = 1; from < 400; from += 133)
		stream_matches_behind(path, text, len, from);

	/* Closed with the thread ahead, waiting for a slot. */
	cr_assert_eq(stream_open(&s, path), 0);
	stream_read_behind(&s);
	cr_assert(s.behind);
	cr_assert_eq(stream_line(&s, &l), 1);
	usleep(20000);
	stream_close(&s);

	/* The rest, whole, after three blocks' lines.  (Last: the spare
	 * buffer it leaves holds the file.) */
	cr_assert_eq(stream_open(&s, path), 0);
	stream_read_behind(&s);
	cr_assert(s.behind);
	lines_init(&r, text, len);
	while ((size_t)(r.p - text) < 3 * STREAM_BLOCK) {
		cr_assert(lines_next(&r, &a));
		cr_assert_eq(stream_line(&s, &l), 1);
	}
	at = (size_t)(r.p - text);
	cr_assert_eq(stream_rest(&s, &rest, &rlen), 0);
	cr_assert_eq(rlen, len - at);
	cr_assert(!memcmp(rest, text + at, rlen));
	stream_close(&s);

	unsetenv("DMPROF_THREADS");
	free(text);
}

/* A pipe: read as it comes, short reads and all. */
Test(input, stream_from_a_pipe)
{
	size_t len = STREAM_BLOCK + 300000;
	char *text = xmalloc(len);
	char path[64];
	int fd[2];

	for (size_t i = 0; i < len; i++)
		text[i] = i % 77 == 76 ? '\n' : (char)('0' + i % 10);
	cr_assert_eq(pipe(fd), 0);
	if (fork() == 0) {
		close(fd[0]);
		for (size_t off = 0; off < len; off += 4000)
			if (write(fd[1], text + off,
				  len - off < 4000 ? len - off : 4000) < 0)
				_exit(1);
		_exit(0);
	}
	close(fd[1]);
	snprintf(path, sizeof(path), "/dev/fd/%d", fd[0]);
	stream_matches(path, text, len);
	close(fd[0]);
	free(text);
}

/* digits_at() against a digit at a time, on runs of 0 to 24 digits. */
Test(input, digits_at_as_a_digit_at_a_time)
{
	uint64_t seed = 0x9e3779b97f4a7c15ULL;

	for (int i = 0; i < 50000; i++) {
		char buf[40];
		size_t len, n = 0;
		int64_t want = 0, got = -1;
		const char *end;

		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		len = seed % 30;
		for (size_t k = 0; k < len; k++)
			buf[k] = k < (seed >> 8) % 25 ? (char)('0' + (seed >> k) % 10)
						      : ":  @x"[(seed >> k) % 5];
		while (n < len && n < 18 && buf[n] >= '0' && buf[n] <= '9')
			want = want * 10 + (buf[n++] - '0');
		end = digits_at(buf, buf + len, &got);
		if (!n) {
			cr_assert_null(end);
			continue;
		}
		cr_assert_eq(end, buf + n, "'%.*s'", (int)len, buf);
		cr_assert_eq(got, want, "'%.*s'", (int)len, buf);
	}
}
