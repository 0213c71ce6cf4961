/*
 * dmprof policy convert FILE: print a policy (JSON or text) as text.
 */
#include <stdio.h>
#include <string.h>

#include "cmd_policy.h"
#include "input.h"
#include "json.h"

static int convert(struct cmd_args *a)
{
	struct strbuf out = STRBUF_INIT, comment = STRBUF_INIT;
	char **argv = a->argv;
	struct policy *p;
	struct filebuf fb;

	if (a->argc != 1)
		return cmd_usage_error(a, "convert takes one file");
	if (file_load(&fb, argv[0]) < 0)
		return 1;
	p = policy_parse(fb.data, fb.size, argv[0], NULL);
	if (!p) {
		file_release(&fb);
		return 1;
	}
	if (fb.size && fb.data[strspn(fb.data, " \t\r\n")] == '{') {
		/* Say where a converted policy came from. */
		struct json_value *doc = json_parse(fb.data, fb.size, argv[0]);
		const char *base = strrchr(argv[0], '/');
		const char *version = json_get_string(doc, "version");

		sb_addf(&comment, "Converted from %s%s%s%s by dmprof policy "
				  "convert.",
			base ? base + 1 : argv[0], version ? " (" : "",
			version ? version : "", version ? ")" : "");
		json_free(doc);
	}
	if (policy_write(p, &out, comment.buf) < 0) {
		sb_release(&out);
		sb_release(&comment);
		policy_free(p);
		file_release(&fb);
		return 1;
	}
	fwrite(out.buf, 1, out.len, stdout);
	sb_release(&out);
	sb_release(&comment);
	policy_free(p);
	file_release(&fb);
	return 0;
}

static const char *const usage[] = { "FILE", NULL };

const struct cmd_entry cmd_policy_convert = { .name = "convert",
	.run = convert, .usage = usage,
	.summary = "print a policy (from JSON or text) as text" };
