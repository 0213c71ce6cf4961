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
