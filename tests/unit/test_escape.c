/*
 * One-line text escaped and back (escape.h): a command line with
 * newlines, tabs, backslashes and bytes of no UTF-8 written as a META
 * value and read back identical, through the snapshot file's writer,
 * reader and builder too; what escaping never wrote reads as it is; a
 * JSON string of such bytes.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "escape.h"
#include "json_write.h"
#include "model.h"
#include "profile.h"
#include "snapbuild.h"
#include "snapfile.h"
#include "util.h"

/* S (LEN bytes) escaped, as a new string. */
static char *escaped(const char *s, size_t len)
{
	struct strbuf sb = STRBUF_INIT;

	escape_line(&sb, s, len);
	return sb.buf ? sb_detach(&sb) : xstrdup("");
}

/* S unescaped, as a new string (its length in *LEN). */
static char *unescaped(const char *s, size_t *len)
{
	char *out = xmalloc(strlen(s) + 1);

	*len = unescape_line(out, s, strlen(s));
	out[*len] = '\0';
	return out;
}

/* The command line: python3 -c with a program of three lines, a
 * tab, a backslash, a byte of no UTF-8 in an argument, and a é. */
static const char cmdline[] =
	"python3 -c import time\nd = {}\nwhile 1:\n\ttime.sleep(1) # a\\b "
	"\xff\t\xc3\xa9 ";

Test(escape, a_command_line)
{
	char *e = escaped(cmdline, sizeof(cmdline) - 1), *back;
	size_t len;

	cr_assert_str_eq(e, "python3 -c import time\\nd = {}\\nwhile 1:\\n"
			    "\\ttime.sleep(1) # a\\\\b \\xff\\t\xc3\xa9\\x20");
	back = unescaped(e, &len);
	cr_assert_eq(len, sizeof(cmdline) - 1);
	cr_assert_eq(memcmp(back, cmdline, len), 0);
	free(e);
	free(back);
	/* A space that begins it, and control bytes. */
	e = escaped(" a\x01\x7f\r", 5);
	cr_assert_str_eq(e, "\\x20a\\x01\\x7f\\r");
	free(e);
	e = escaped("", 0);
	cr_assert_str_eq(e, "");
	free(e);
}

/* Any bytes but NUL come back; what is written is one line of UTF-8. */
Test(escape, round_trip)
{
	uint64_t x = 0x243f6a8885a308d3ull;

	for (int round = 0; round < 20000; round++) {
		char in[64], *e, *back;
		size_t n, len;

		x = x * 6364136223846793005ull + 1442695040888963407ull;
		n = (x >> 33) % sizeof(in);
		for (size_t i = 0; i < n; i++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			/* (Half of them near the interesting bytes.) */
			in[i] = x >> 63 ? "\\\n\t\r x\xc3\xff"[(x >> 57) & 7]
					    : (char)(x >> 40);
			if (!in[i])
				in[i] = '0';
		}
		e = escaped(in, n);
		for (const unsigned char *p = (const unsigned char *)e; *p;) {
			size_t k = utf8_char_len(p);

			cr_assert(k, "not UTF-8 at %zu of '%s'", p - (unsigned char *)e, e);
			cr_assert(*p >= 0x20 && *p != 0x7f, "a control byte in '%s'", e);
			p += k;
		}
		cr_assert(!n || (e[0] != ' ' && e[strlen(e) - 1] != ' '));
		back = unescaped(e, &len);
		cr_assert_eq(len, n, "'%s'", e);
		cr_assert_eq(memcmp(back, in, n), 0, "'%s'", e);
		free(e);
		free(back);
	}
}

/* What escaping never writes reads as it is: an old dump's backslashes. */
Test(escape, lenient)
{
	static const char *const kept[] = {
		"C:\\q", "a\\", "\\x", "\\x4", "\\xzz", "\\x00", "\\u00e9", "\\",
	};
	size_t len;

	for (size_t i = 0; i < ARRAY_SIZE(kept); i++) {
		char *back = unescaped(kept[i], &len);

		cr_assert_str_eq(back, kept[i]);
		free(back);
	}
	{
		char *back = unescaped("\\\\x41\\x41\\X", &len);

		cr_assert_str_eq(back, "\\x41A\\X");
		free(back);
	}
}

/* JSON: a byte of no UTF-8 as a lone surrogate, as surrogateescape. */
Test(escape, json_bytes)
{
	struct strbuf out = STRBUF_INIT;
	struct json_writer w;

	json_write_init(&w, &out, NULL, true);
	json_bytes(&w, "a\xff\n\xc3\xa9\x80");
	cr_assert_str_eq(out.buf, "\"a\\udcff\\n\xc3\xa9\\udc80\"");
	sb_release(&out);
}

/*
 * The snapshot file: the writer escapes what the capture gives it (META
 * values are), the reader and the builder give back the command line.
 */
Test(escape, snapshot_file)
{
	struct snap_record r = { .kind = SNAP_META };
	struct strbuf val = STRBUF_INIT;
	struct snap_writer w;
	struct snapshot snap;
	struct model m;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	char path[] = "/tmp/dmprof-escape-XXXXXX";
	int fd;

	escape_line(&val, cmdline, sizeof(cmdline) - 1);
	snapfile_writer_init(&w, f);
	r.u.meta.key = "CommandLine";
	r.u.meta.key_len = 11;
	r.u.meta.value = val.buf;
	r.u.meta.value_len = val.len;
	snapfile_put(&w, &r);
	memset(&r, 0, sizeof(r));
	r.kind = SNAP_MAPS;
	snapfile_put(&w, &r);
	cr_assert_eq(fclose(f), 0);
	cr_assert_eq(memchr(text, '\t', len), NULL, "a tab in the file");
	cr_assert_eq(memcmp(text, "dmprof-snapshot 1\nMETA:\nCommandLine: "
				  "python3 -c import time\\nd",
			    48), 0);
	fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, text, len), (ssize_t)len);
	close(fd);
	model_init(&m);
	cr_assert_eq(profile_load(&snap, path, &m, NULL), 0);
	cr_assert_str_eq(snap.command_line, cmdline);
	snapshot_release(&snap);
	model_free(&m);
	unlink(path);
	free(text);
	sb_release(&val);
}
