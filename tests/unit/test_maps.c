/* Maps lines and lookups. */
#include <criterion/criterion.h>
#include <string.h>

#include "helpers.h"
#include "maps.h"
#include "util.h"

static struct arena arena;
static struct strtab strings;

static void setup(void)
{
	strtab_init(&strings, &arena);
}

TestSuite(maps, .init = setup);

static int parse(const char *s, struct vma *v)
{
	return maps_parse_line(s, strlen(s), v, &strings);
}

Test(maps, kernel_line)
{
	struct vma v;

	cr_assert_eq(parse("7f63051cd000-7f630fd06000 r-xp 00000000 fe:01 1234"
			   "   /home/user/chromium/src/out/Debug/chrome", &v), 0);
	cr_assert_eq(v.start, 0x7f63051cd000ULL);
	cr_assert_eq(v.end, 0x7f630fd06000ULL);
	cr_assert_str_eq(v.perms, "r-xp");
	cr_assert_eq(v.major, 0xfe);
	cr_assert_eq(v.minor, 1);
	cr_assert_eq(v.inode, 1234);
	cr_assert_str_eq(v.name, "/home/user/chromium/src/out/Debug/chrome");
	cr_assert(vma_executable(&v));
}

Test(maps, gperftools_line_anonymous_and_spaces)
{
	struct vma v;

	/* gperftools pads the inode and leaves trailing blanks. */
	cr_assert_eq(parse("7f9bea020000-7f9bea600000 rw-p 00000000 00:00 0"
			   "           ", &v), 0);
	cr_assert_str_eq(v.name, "");
	cr_assert_eq(vma_classify(&v), VMA_ANONYMOUS);
	cr_assert_eq(parse("00400000-00401000 rw-s 00000000 00:05 7 "
			   "/SYSV00000000 (deleted)", &v), 0);
	cr_assert_str_eq(v.name, "/SYSV00000000 (deleted)");
	cr_assert_str_eq(v.perms, "rw-s");
	cr_assert_eq(vma_classify(&v), VMA_FILE_NONEXEC);
}

Test(maps, not_maps_lines)
{
	struct vma v;

	cr_assert_eq(parse("", &v), -1);
	cr_assert_eq(parse("hello", &v), -1);
	cr_assert_eq(parse("1000-2000 rwxq 0 00:00 0", &v), -1);
	cr_assert_eq(parse("1000-2000 r-xp 0 00:00", &v), -1);
	cr_assert_eq(parse("2000-1000 r-xp 0 00:00 0", &v), -1);
	cr_assert_eq(parse("1000-2000 r-xp 0 00:00 0x", &v), -1);
	cr_assert_eq(parse("10000000000000000-2 r-xp 0 00:00 0", &v), -2);
	cr_assert_eq(parse("1000-2000 r-xp 0 00:00 99999999999999999999", &v),
		     -2);
}

Test(maps, find_and_classes)
{
	struct maps m;
	const char *text = "3000-4000 rw-p 00000000 00:00 0 [stack]\n"
			   "1000-2000 r-xp 00000000 08:01 5 /bin/x\n"
			   "\n"
			   "2000-3000 r--p 00001000 08:01 5 /bin/x\n"
			   "5000-6000 r-xp 00000000 00:00 0 [vdso]\n";

	maps_init(&m);
	cr_assert_eq(maps_parse(&m, text, strlen(text), "t", 1, &strings, false), 0);
	cr_assert_eq(m.n, 4);
	cr_assert_eq(m.v[0].start, 0x1000); /* sorted */
	cr_assert_null(maps_find(&m, 0xfff));
	cr_assert_eq(maps_find(&m, 0x1000)->start, 0x1000);
	cr_assert_eq(maps_find(&m, 0x1fff)->start, 0x1000);
	cr_assert_eq(maps_find(&m, 0x2000)->start, 0x2000);
	cr_assert_null(maps_find(&m, 0x4000)); /* end is exclusive */
	cr_assert_null(maps_find(&m, 0x4fff));
	cr_assert_eq(vma_classify(maps_find(&m, 0x3000)), VMA_STACK);
	cr_assert_eq(vma_classify(maps_find(&m, 0x5000)), VMA_OTHER);
	cr_assert_eq(vma_classify(maps_find(&m, 0x1000)), VMA_FILE_EXEC);
	maps_free(&m);
}

Test(maps, overlap_warns_and_keeps_first)
{
	struct maps m;
	const char *text = "1000-3000 r-xp 0 00:00 0 /a\n"
			   "2000-4000 r-xp 0 00:00 0 /b\n";

	capture_stderr();
	maps_init(&m);
	cr_assert_eq(maps_parse(&m, text, strlen(text), "t", 1, &strings, false), 0);
	cr_assert_eq(m.n, 1);
	cr_assert_str_eq(maps_find(&m, 0x2800)->name, "/a");
	cr_assert(strstr(stderr_text(), "overlaps"));
	maps_free(&m);
}

Test(maps, garbage_is_error_with_line)
{
	struct maps m;
	const char *text = "1000-3000 r-xp 0 00:00 0 /a\nbogus line\n";

	capture_stderr();
	maps_init(&m);
	cr_assert_eq(maps_parse(&m, text, strlen(text), "f.maps", 1, &strings, false),
		     -1);
	cr_assert_str_eq(stderr_text(),
			 "dmprof: f.maps:2: not a maps line: 'bogus line'\n");
	maps_free(&m);
}

Test(maps, load_missing_file)
{
	struct maps m;

	capture_stderr();
	maps_init(&m);
	cr_assert_eq(maps_load(&m, "/nonexistent/x.maps", &strings), -1);
	cr_assert(strstr(stderr_text(), "/nonexistent/x.maps: No such file"));
	maps_free(&m);
}
