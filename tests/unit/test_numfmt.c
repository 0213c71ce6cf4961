/* Writers' formatting, and the CSV output read back with libcsv. */
#include <criterion/criterion.h>
#include <csv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "numfmt.h"
#include "helpers.h"
#include "input.h"
#include "util.h"

static const char *repr(double v)
{
	static struct strbuf sb;

	sb_reset(&sb);
	format_float_repr(&sb, v);
	return sb_str(&sb);
}

Test(format, python_float_repr)
{
	cr_assert_str_eq(repr(0), "0.0");
	cr_assert_str_eq(repr(10), "10.0");
	cr_assert_str_eq(repr(0.25), "0.25");
	cr_assert_str_eq(repr(1.0 / 3), "0.3333333333333333");
	cr_assert_str_eq(repr(10.0 / 3600), "0.002777777777777778");
	cr_assert_str_eq(repr(1e-05), "1e-05");
	cr_assert_str_eq(repr(-2.5), "-2.5");
}

struct csv_check {
	size_t fields, rows, first_fields;
	bool bad;
};

static void on_field(void *s UNUSED, size_t len UNUSED, void *data)
{
	((struct csv_check *)data)->fields++;
}

static void on_row(int c UNUSED, void *data)
{
	struct csv_check *k = data;

	if (!k->rows)
		k->first_fields = k->fields;
	else if (k->fields != k->first_fields)
		k->bad = true;
	k->rows++;
	k->fields = 0;
}

extern const struct cmd_entry cmd_csv;

/* Run "dmprof csv ARGS" in-process and parse its output with libcsv. */
static struct csv_check run_csv(int argc, char **argv)
{
	char path[600];
	struct filebuf fb;
	struct csv_parser p;
	struct csv_check k = { 0, 0, 0, false };

	snprintf(path, sizeof(path), "%s/out.csv", tmpdir());
	fflush(stdout);
	cr_assert_not_null(freopen(path, "w", stdout));
	cr_assert_eq(cmd_main(&cmd_csv, "csv", argc, argv), 0);
	fflush(stdout);
	cr_assert_eq(file_load(&fb, path), 0);
	cr_assert_eq(csv_init(&p, CSV_STRICT | CSV_STRICT_FINI), 0);
	cr_assert_eq(csv_parse(&p, fb.data, fb.size, on_field, on_row, &k),
		     fb.size, "libcsv: %s", csv_strerror(csv_error(&p)));
	cr_assert_eq(csv_fini(&p, on_field, on_row, &k), 0);
	csv_free(&p);
	file_release(&fb);
	return k;
}

Test(format, csv_rows_have_the_header_width)
{
	char *argv[] = { "csv", "-p", "l0,l2,t0,android.webview",
			 "samples/cachesrv.04242.0001.heap", NULL };
	char *argv2[] = { "csv", "--bytes", "-p",
			  "l1", "samples/cachesrv.04242.0001.heap", NULL };
	struct csv_check k;

	setenv("DMPROF_POLICY_PATH", "policies", 1);
	k = run_csv(4, argv);
	cr_assert_not(k.bad);
	/* Four blocks of a label, a header and three snapshots. */
	cr_assert_eq(k.rows, 4 * 5);
	cr_assert_eq(k.first_fields, 95); /* android.webview is the widest */
	k = run_csv(5, argv2);
	cr_assert_not(k.bad);
	cr_assert_eq(k.rows, 4);
	cr_assert_eq(k.first_fields, 41);
}

Test(format, csv_quotes_odd_names)
{
	const char *pol = write_file(
		"odd.policy",
		"dmprof-policy 1\ncolumns 'a,b' '\"q\"' ' lead' m u\n"
		"rule 'a,b' malloc stack='.*Cache.*'\nrule '\"q\"' malloc\n"
		"rule ' lead' malloc\nrule m mmap\nrule u unhooked\n",
		-1);
	char *argv[] = { "csv", "-p", (char *)pol,
			 "samples/cachesrv.04242.0001.heap", NULL };
	char path[600];
	struct filebuf fb;
	struct csv_check k;

	setenv("DMPROF_POLICY_PATH", "policies", 1);
	capture_stderr();
	k = run_csv(4, argv);
	cr_assert_not(k.bad);
	cr_assert_eq(k.first_fields, 5);
	snprintf(path, sizeof(path), "%s/out.csv", tmpdir());
	cr_assert_eq(file_load(&fb, path), 0);
	cr_assert(starts_with(fb.data, "\"a,b\",\"\"\"q\"\"\",\" lead\",m,u\n"),
		  "%s", fb.data);
	file_release(&fb);
}
