/*
 * dmprof policy check FILE...   load policies, report every problem
 * dmprof policy convert FILE    print a policy (JSON or text) as text
 * dmprof policy list            the policies -p can name, and defaults
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "json.h"
#include "policyset.h"
#include "text.h"

static int check(int argc, char **argv)
{
	int status = 0;

	if (argc < 1)
		return cmd_usage_error("policy", "check which file?");
	for (int i = 0; i < argc; i++) {
		struct policy *p = policy_load(argv[i], NULL);

		if (!p) {
			status = 1;
			continue;
		}
		printf("%s: ok (%zu columns, %zu rules)\n", argv[i], p->ncols,
		       p->nrules);
		policy_free(p);
	}
	return status;
}

static int convert(int argc, char **argv)
{
	struct strbuf out = STRBUF_INIT, comment = STRBUF_INIT;
	struct policy *p;
	struct filebuf fb;

	if (argc != 1)
		return cmd_usage_error("policy", "convert takes one file");
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

static int list(int argc, char **argv UNUSED)
{
	struct index_entry *idx;
	size_t n;

	if (argc)
		return cmd_usage_error("policy", "list takes no arguments");
	if (policy_index(&idx, &n) < 0)
		return 1;
	printf("search path: %s\n", policy_search_path());
	for (size_t i = 0; i < n; i++)
		printf("%-18s %s%s\n", idx[i].label, idx[i].path,
		       idx[i].is_default ? "  (default)" : "");
	policy_index_free(idx, n);
	return 0;
}

int cmd_policy(int argc, char **argv)
{
	int c, status = 0;

	while ((c = cmd_getopt("policy", argc, argv, NULL, NULL, &status)) !=
	       -1)
		if (c == -2)
			return status;
	if (optind >= argc)
		return cmd_usage_error("policy", "check, convert or list?");
	if (!strcmp(argv[optind], "check"))
		return check(argc - optind - 1, argv + optind + 1);
	if (!strcmp(argv[optind], "convert"))
		return convert(argc - optind - 1, argv + optind + 1);
	if (!strcmp(argv[optind], "list"))
		return list(argc - optind - 1, argv + optind + 1);
	return cmd_usage_error("policy", "unknown subcommand '%s'",
			       argv[optind]);
}
