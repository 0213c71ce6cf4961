/*
 * The one JSON writer: every command's --json, the html page's data and
 * the policy files dmprof writes go through it.  The caller says what
 * comes next (an object, a key, a number); the writer puts in the commas,
 * the line breaks and the indentation, escapes strings (invalid UTF-8
 * bytes as \u00XX) and writes numbers exactly: integers in full, doubles
 * as Python's repr() does (see format_float_repr).
 *
 * Three layouts, chosen per container so that one document mixes them:
 * pretty (a member per line, indented two spaces a level, as Python's
 * json.dumps(indent=2)), on one line ("{ "a": 1, "b": 2 }", for rows
 * that read best whole), and compact (no white space at all, set for
 * the whole document).
 *
 * Output goes to a strbuf; given a FILE, the writer empties the buffer
 * into it as it fills, so a document of any size streams.
 */
#ifndef DMPROF_JSON_WRITE_H
#define DMPROF_JSON_WRITE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "util.h"

#define JSON_WRITE_DEPTH 32

struct json_writer {
	struct strbuf *out;
	FILE *sink;        /* NULL: everything stays in OUT */
	bool compact;
	bool keyed;        /* a key was written; its value comes next */
	unsigned depth;
	struct {
		bool empty;    /* no member or element yet */
		bool one_line;
		char close;    /* '}' or ']' */
	} level[JSON_WRITE_DEPTH];
};

/*
 * Start a document written to OUT, and on into SINK if not NULL.
 * COMPACT: no white space anywhere.
 */
void json_write_init(struct json_writer *w, struct strbuf *out, FILE *sink,
		     bool compact);

void json_object(struct json_writer *w);
void json_array(struct json_writer *w);
/* The same, kept on one line ("{ ... }"; in a compact document, as any). */
void json_object_line(struct json_writer *w);
void json_array_line(struct json_writer *w);
/* Close the innermost object or array. */
void json_end(struct json_writer *w);

/* An object member's key; its value is what is written next. */
void json_key(struct json_writer *w, const char *key);

void json_string(struct json_writer *w, const char *s);
/*
 * S, bytes that may be no UTF-8 (a command line), as a string whose
 * bytes of no valid character are lone surrogates \udc80..\udcff: what
 * Python's surrogateescape reads back into the same bytes
 * (json.loads(...).encode("utf-8", "surrogateescape")).
 */
void json_bytes(struct json_writer *w, const char *s);
void json_int(struct json_writer *w, int64_t v);
void json_uint(struct json_writer *w, uint64_t v);
void json_bool(struct json_writer *w, bool v);
void json_null(struct json_writer *w);
/* V as Python's repr() writes it ("10.0", "0.25"). */
void json_double(struct json_writer *w, double v);
/* A value that is JSON already, LEN bytes of it, taken as it is. */
void json_raw(struct json_writer *w, const char *json, size_t len);

/* Key and value in one call, for the common members. */
void json_member_string(struct json_writer *w, const char *key,
			const char *s);
void json_member_int(struct json_writer *w, const char *key, int64_t v);
void json_member_uint(struct json_writer *w, const char *key, uint64_t v);
void json_member_bool(struct json_writer *w, const char *key, bool v);
void json_member_double(struct json_writer *w, const char *key, double v);

/*
 * End the document: a newline after it unless compact, and what is left
 * in the buffer written to the sink.  A failed write shows in the sink's
 * error flag (ferror), as for any other output.
 */
void json_write_finish(struct json_writer *w);

#endif
