/*
 * A perf map line's name as a frame names code, for the recorder (which
 * names a JIT's frames in its .buckets files) and the analyzer (which
 * names those left from the run's copy of the map) alike: V8's
 * "JS:~fillBuffers /app/prog.js:2:21" (node 18's "LazyCompile:*name
 * file:line:column") is the function "fillBuffers" of /app/prog.js, line
 * 2, where it starts (an anonymous one is "(anonymous)"; an ES module's
 * file:// URL its path); any other name (V8's "Builtin:ArrayMap", a JVM's
 * method) is a function, whole, of no file.  Header only: the recorder
 * links nothing of dmprof's; no allocation, no stdio.
 */
#ifndef DMPROF_PERFMAP_NAME_H
#define DMPROF_PERFMAP_NAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct perfmap_name {
	const char *func, *file; /* in the name, or a constant */
	size_t func_len, file_len;
	uint32_t line;           /* 0: none */
};

/* The length of the prefix of S (LEN bytes) that is in LIST, or 0. */
static inline size_t perfmap_prefix(const char *s, size_t len,
				    const char *const *list)
{
	for (; *list; list++) {
		size_t n = strlen(*list);

		if (len >= n && !memcmp(s, *list, n))
			return n;
	}
	return 0;
}

/* Does S (LEN bytes) end in ":DIGITS"?  Where the colon is, and the
 * digits' value. */
static inline bool perfmap_number_end(const char *s, size_t len,
				      size_t *colon, uint32_t *value)
{
	size_t k = len;
	uint32_t v = 0, mul = 1;

	while (k && s[k - 1] >= '0' && s[k - 1] <= '9') {
		k--;
		if (len - k > 9)
			return false;
		v += (uint32_t)(s[k] - '0') * mul;
		mul *= 10;
	}
	if (k == len || !k || s[k - 1] != ':')
		return false;
	*colon = k - 1;
	*value = v;
	return true;
}

/* Where a script's location may start: a path, node's own, a URL. */
static inline bool perfmap_location(const char *s, size_t len)
{
	return (len && s[0] == '/') || (len >= 5 && !memcmp(s, "node:", 5)) ||
	       (len >= 5 && !memcmp(s, "file:", 5));
}

static inline void perfmap_split_name(const char *name, size_t len,
				      struct perfmap_name *out)
{
	/* V8's kinds of JavaScript code (node 20's "JS:", 18's others). */
	static const char *const js_kinds[] = {
		"JS:", "LazyCompile:", "Function:", "Script:", "Eval:", NULL,
	};
	size_t k = perfmap_prefix(name, len, js_kinds), colon, sp;
	const char *s = name + k;
	size_t n = len - k;
	uint32_t line, column;

	out->func = name;
	out->func_len = len;
	out->file = NULL;
	out->file_len = 0;
	out->line = 0;
	if (!k)
		return;
	/* The tier: ~ interpreted, ^ baseline, + Maglev, * optimized. */
	if (n && (*s == '~' || *s == '^' || *s == '+' || *s == '*')) {
		s++;
		n--;
	}
	out->func = s;
	out->func_len = n;
	/* "NAME FILE:LINE:COLUMN": a name may hold spaces ("get x"), and
	 * a file too; the file starts where a location can, else after the
	 * last space. */
	if (!perfmap_number_end(s, n, &colon, &column) ||
	    !perfmap_number_end(s, colon, &colon, &line))
		return;
	sp = colon; /* (the space before the file; COLON: none) */
	for (size_t i = 0; i < colon && sp == colon; i++)
		if (s[i] == ' ' && perfmap_location(s + i + 1, colon - i - 1))
			sp = i;
	for (size_t i = colon; i-- > 0 && sp == colon;)
		if (s[i] == ' ')
			sp = i;
	if (sp == colon)
		return; /* no file */
	out->func = sp ? s : "(anonymous)";
	out->func_len = sp ? sp : 11;
	out->file = s + sp + 1;
	out->file_len = colon - sp - 1;
	if (out->file_len > 7 && !memcmp(out->file, "file://", 7)) {
		out->file += 7;
		out->file_len -= 7;
	}
	out->line = line;
	(void)column;
}

#endif
