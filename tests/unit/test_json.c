/* The JSON reader. */
#include <criterion/criterion.h>
#include <string.h>

#include "helpers.h"
#include "json.h"

Test(json, document)
{
	const char *t = "{ \"a\": [1, -2.5e1, true, false, null],\n"
			"  \"b\": {\"s\": \"x\\u00e9\\n\\\"\"}, \"a\": 3 }";
	struct json_value *v = json_parse(t, strlen(t), "t.json");
	const struct json_value *a;

	cr_assert_not_null(v);
	cr_assert_eq(v->n, 3);
	a = v->items[0];
	cr_assert_eq(a->type, JSON_ARRAY);
	cr_assert_eq(a->n, 5);
	cr_assert_eq(a->items[1]->number, -25.0);
	cr_assert_eq(a->items[2]->type, JSON_TRUE);
	cr_assert_eq(a->items[4]->type, JSON_NULL);
	cr_assert_str_eq(json_get_string(json_get(v, "b"), "s"), "x\xc3\xa9\n\"");
	cr_assert_eq(json_get(v, "a")->number, 3); /* later key wins */
	cr_assert_eq(json_get(v, "b")->line, 2);
	json_free(v);
}

static void bad(const char *t, const char *msg)
{
	capture_stderr();
	cr_assert_null(json_parse(t, strlen(t), "t.json"), "accepted %s", t);
	cr_assert(strstr(stderr_text(), msg), "got %s", stderr_text());
}

Test(json, errors)
{
	bad("{\"a\": 1,}", "t.json:1:9: expected a string key");
	bad("[1 2]", "t.json:1:4: expected ',' or ']'");
	bad("{\"a\"\n 1}", "t.json:2:2: expected ':'");
	bad("\"abc", "unterminated string");
	bad("01", "unexpected text after");
	bad("tru", "invalid literal");
	bad("", "unexpected end of input");
	bad("\"\\x\"", "invalid escape");
	bad("[1,]", "t.json:1:4: expected a value");
	bad("{\"a\": }", "t.json:1:7: expected a value");
}

Test(json, deep_nesting_is_an_error)
{
	static char t[100001];

	memset(t, '[', 100000);
	bad(t, "nesting too deep");
}

Test(json, cursor_reads_piece_by_piece)
{
	static const char t[] = "{\"n\": [1, 2.5e3, -4],\n \"s\": \"a\\u00e9\","
				" \"skip\": {\"x\": [true, null]}, \"e\": []}";
	struct json_cursor j;
	struct strbuf key = STRBUF_INIT, s = STRBUF_INIT;
	double v[3];
	size_t nv = 0;
	bool first = true, seen_e = false;

	json_cursor_init(&j, t, strlen(t), "t.json");
	cr_assert(json_expect(&j, '{', "'{'"));
	while (json_next(&j, '}', &first)) {
		sb_reset(&key);
		cr_assert(json_read_string(&j, &key));
		cr_assert(json_expect(&j, ':', "':'"));
		if (!strcmp(key.buf, "n")) {
			bool f = true;

			cr_assert(json_expect(&j, '[', "'['"));
			while (json_next(&j, ']', &f))
				cr_assert(json_read_number(&j, &v[nv++]));
		} else if (!strcmp(key.buf, "s")) {
			cr_assert_eq(j.line, 2);
			cr_assert(json_read_string(&j, &s));
		} else if (!strcmp(key.buf, "e")) {
			bool f = true;

			cr_assert(json_expect(&j, '[', "'['"));
			cr_assert_not(json_next(&j, ']', &f));
			seen_e = true;
		} else {
			cr_assert(json_skip(&j));
		}
	}
	cr_assert_not(j.failed);
	cr_assert_eq(json_peek(&j), 0);
	cr_assert_eq(nv, 3);
	cr_assert(v[0] == 1 && v[1] == 2500 && v[2] == -4);
	cr_assert_str_eq(s.buf, "a\xc3\xa9");
	cr_assert(seen_e);
	sb_release(&key);
	sb_release(&s);
}

Test(json, cursor_errors_stop_every_call)
{
	static const char t[] = "[1,\n x]";
	struct json_cursor j;
	bool first = true;
	double v;

	capture_stderr();
	json_cursor_init(&j, t, strlen(t), "t.json");
	cr_assert(json_expect(&j, '[', "'['"));
	cr_assert(json_next(&j, ']', &first));
	cr_assert(json_read_number(&j, &v));
	cr_assert(json_next(&j, ']', &first));
	cr_assert_not(json_read_number(&j, &v));
	cr_assert(j.failed);
	cr_assert(strstr(stderr_text(), "t.json:2:2: expected a number"),
		  "got %s", stderr_text());
	/* Once failed, nothing reads on. */
	cr_assert_not(json_next(&j, ']', &first));
	cr_assert_not(json_skip(&j));
}
