/*
 * Whole-name regexes from the command line: one compile, with the words
 * PCRE2 gives for what is wrong and where.
 */
#include "pattern.h"

pcre2_code *pattern_compile(const char *pattern, struct strbuf *err)
{
	PCRE2_SIZE off;
	int code;
	/* Whole names, as a policy's patterns match whole fields. */
	pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern,
				       PCRE2_ZERO_TERMINATED,
				       PCRE2_ANCHORED | PCRE2_ENDANCHORED |
					       PCRE2_DOTALL,
				       &code, &off, NULL);

	if (!re) {
		PCRE2_UCHAR msg[256];

		pcre2_get_error_message(code, msg, sizeof(msg));
		if (err)
			sb_addf(err, "%s at offset %zu", (char *)msg,
				(size_t)off);
		return NULL;
	}
	pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
	return re;
}
