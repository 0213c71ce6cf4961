/* The JSON writer: layouts, separators, escaping, exact numbers. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "json.h"
#include "json_write.h"

/* A document of every layout, as the commands mix them. */
static void write_mixed(struct json_writer *w)
{
	json_object(w);
	json_member_string(w, "dump", "a \"b\"\n\x01\xff");
	json_key(w, "rows");
	json_array(w);
	json_object_line(w);
	json_member_int(w, "a", INT64_MIN);
	json_member_uint(w, "b", UINT64_MAX);
	json_member_double(w, "t", 0.25);
	json_member_bool(w, "s", true);
	json_end(w);
	json_object_line(w);
	json_end(w);
	json_end(w);
	json_key(w, "empty");
	json_array(w);
	json_end(w);
	json_key(w, "raw");
	json_raw(w, "[1,2]", 5);
	json_key(w, "n");
	json_null(w);
	json_end(w);
	json_write_finish(w);
}

Test(json_write, pretty_and_one_line)
{
	struct strbuf out = STRBUF_INIT;
	struct json_writer w;

	json_write_init(&w, &out, NULL, false);
	write_mixed(&w);
	cr_assert_str_eq(out.buf,
		"{\n"
		"  \"dump\": \"a \\\"b\\\"\\n\\u0001\\u00ff\",\n"
		"  \"rows\": [\n"
		"    { \"a\": -9223372036854775808, "
		"\"b\": 18446744073709551615, \"t\": 0.25, \"s\": true },\n"
		"    {}\n"
		"  ],\n"
		"  \"empty\": [],\n"
		"  \"raw\": [1,2],\n"
		"  \"n\": null\n"
		"}\n");
	sb_release(&out);
}

Test(json_write, compact)
{
	struct strbuf out = STRBUF_INIT;
	struct json_writer w;

	json_write_init(&w, &out, NULL, true);
	write_mixed(&w);
	cr_assert_str_eq(out.buf,
		"{\"dump\":\"a \\\"b\\\"\\n\\u0001\\u00ff\",\"rows\":"
		"[{\"a\":-9223372036854775808,\"b\":18446744073709551615,"
		"\"t\":0.25,\"s\":true},{}],\"empty\":[],\"raw\":[1,2],"
		"\"n\":null}");
	sb_release(&out);
}

Test(json_write, strings)
{
	struct strbuf out = STRBUF_INIT;
	struct json_writer w;

	json_write_init(&w, &out, NULL, true);
	json_string(&w, "a\"b\\c\n\x01 \xc3\xa9 \xff");
	json_write_finish(&w);
	cr_assert_str_eq(out.buf, "\"a\\\"b\\\\c\\n\\u0001 \xc3\xa9 \\u00ff\"");
	sb_release(&out);
}

/* Python's repr() of doubles: integral values keep ".0". */
Test(json_write, doubles)
{
	struct strbuf out = STRBUF_INIT;
	struct json_writer w;

	json_write_init(&w, &out, NULL, true);
	json_array(&w);
	json_double(&w, 10);
	json_double(&w, 1e-05);
	json_double(&w, 0.1);
	json_end(&w);
	json_write_finish(&w);
	cr_assert_str_eq(out.buf, "[10.0,1e-05,0.1]");
	sb_release(&out);
}

/*
 * Through a sink, a big document streams (the buffer stays small) and
 * reads back, every number exact.
 */
Test(json_write, streams_to_a_sink_and_reads_back)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	struct strbuf out = STRBUF_INIT;
	struct json_writer w;
	struct json_value *v;
	size_t most = 0;

	cr_assert(f);
	json_write_init(&w, &out, f, false);
	json_array(&w);
	for (int64_t i = 0; i < 100000; i++) {
		json_object_line(&w);
		json_member_int(&w, "i", i * 1000003);
		json_end(&w);
		most = out.len > most ? out.len : most;
	}
	json_end(&w);
	json_write_finish(&w);
	cr_assert_eq(out.len, 0);
	cr_assert_lt(most, 128 * 1024);
	fclose(f);
	v = json_parse(text, len, "stream");
	cr_assert(v);
	cr_assert_eq(v->n, 100000);
	for (size_t i = 0; i < v->n; i += 997)
		cr_assert_eq(json_get(v->items[i], "i")->number,
			     (double)((int64_t)i * 1000003));
	json_free(v);
	free(text);
	sb_release(&out);
}
