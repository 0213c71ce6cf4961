/* What every reader shares (reader.h): where it is, said. */
#include <criterion/criterion.h>
#include <string.h>

#include "helpers.h"
#include "reader.h"

Test(reader, error_names_file_line_and_column)
{
	struct reader_pos pos = { .path = "d/p.0001.heap" };

	capture_stderr();
	cr_assert_eq(read_error(&pos, "empty %s", "dump"), -1);
	pos.line = 12;
	read_error(&pos, "bad word '%s'", read_quote(&pos, "a\tb", 3));
	pos.col = 7;
	read_error(&pos, "bad token");
	cr_assert_str_eq(stderr_text(),
			 "dmprof: d/p.0001.heap: empty dump\n"
			 "dmprof: d/p.0001.heap:12: bad word 'a\\x09b'\n"
			 "dmprof: d/p.0001.heap:12:7: bad token\n");
	read_pos_release(&pos);
}

Test(reader, quiet_says_nothing)
{
	struct reader_pos pos = { .path = "p.pb", .line = 3, .quiet = true };

	capture_stderr();
	cr_assert_eq(read_error(&pos, "not said"), -1);
	cr_assert_str_eq(stderr_text(), "");
}
