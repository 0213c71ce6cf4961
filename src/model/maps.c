/*
 * Maps tables.  The parser accepts any whitespace runs and hex case, as the
 * kernel, gperftools (device printed as 00:00, inode padded) and Chromium's
 * producer each write the line a little differently.
 */
#include "maps.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "search.h"
#include "scan.h"
#include "util.h"

int maps_parse_line(const char *p, size_t len, struct vma *out,
		    struct strtab *strings)
{
	struct cursor c = { p, p + len };
	uint64_t maj, min;
	const char *name;
	size_t nlen;
	int i;

#define NUM(call)                                                             \
	do {                                                                  \
		enum num_status st_ = (call);                                 \
		if (st_ == NUM_RANGE)                                         \
			return -2;                                            \
		if (st_ != NUM_OK)                                            \
			return -1;                                            \
	} while (0)

	NUM(parse_hex(&c, &out->start, false));
	if (!cursor_eat(&c, "-"))
		return -1;
	NUM(parse_hex(&c, &out->end, false));
	if (c.p >= c.end || !is_space(*c.p))
		return -1;
	cursor_skip_space(&c);
	if (c.end - c.p < 4)
		return -1;
	for (i = 0; i < 4; i++) {
		static const char allowed[4][3] = {
			"r-", "w-", "x-", "ps"
		};
		char ch = c.p[i];

		if (ch != allowed[i][0] && ch != allowed[i][1] &&
		    !(i == 3 && ch == '-'))
			return -1;
		out->perms[i] = ch;
	}
	out->perms[4] = '\0';
	c.p += 4;
	if (c.p >= c.end || !is_space(*c.p))
		return -1;
	cursor_skip_space(&c);
	NUM(parse_hex(&c, &out->offset, false));
	cursor_skip_space(&c);
	NUM(parse_hex(&c, &maj, false));
	if (!cursor_eat(&c, ":"))
		return -1;
	NUM(parse_hex(&c, &min, false));
	if (maj > UINT32_MAX || min > UINT32_MAX)
		return -2;
	out->major = (uint32_t)maj;
	out->minor = (uint32_t)min;
	if (c.p >= c.end || !is_space(*c.p))
		return -1;
	cursor_skip_space(&c);
	NUM(parse_u64(&c, &out->inode));
	if (c.p < c.end && !is_space(*c.p))
		return -1;
#undef NUM
	cursor_skip_space(&c);
	/* The name is the rest of the line; it may contain spaces. */
	name = c.p;
	nlen = (size_t)(c.end - c.p);
	while (nlen && is_space(name[nlen - 1]))
		nlen--;
	if (memchr(name, '\0', nlen))
		return -1;
	if (out->end < out->start)
		return -1;
	out->name = strings ? strtab_intern(strings, name, nlen) : "";
	return 0;
}

void maps_init(struct maps *m)
{
	memset(m, 0, sizeof(*m));
}

void maps_free(struct maps *m)
{
	free(m->v);
	free(m->path);
	memset(m, 0, sizeof(*m));
}

void maps_add(struct maps *m, const struct vma *v)
{
	GROW(m->v, m->n + 1, m->alloc);
	m->v[m->n++] = *v;
}

static int cmp_vma(const void *a, const void *b)
{
	const struct vma *x = a, *y = b;

	return CMP(x->start, y->start) ?: CMP(x->end, y->end);
}

/* (Of each overlapping pair the first is kept.) */
void maps_sort(struct maps *m, const char *source)
{
	size_t i, out = 0;
	bool sorted = true;

	for (i = 1; i < m->n && sorted; i++)
		if (cmp_vma(&m->v[i - 1], &m->v[i]) > 0)
			sorted = false;
	if (!sorted)
		qsort(m->v, m->n, sizeof(*m->v), cmp_vma);
	/*
	 * Real maps never overlap.  Keeping both would make lookups depend on
	 * the search order, so keep the first and say what was dropped.
	 */
	for (i = 0; i < m->n; i++) {
		if (out && m->v[i].start < m->v[out - 1].end) {
			warning("%s: VMA %" PRIx64 "-%" PRIx64
				" overlaps %" PRIx64 "-%" PRIx64 "; ignored",
				source ? source : "maps", m->v[i].start,
				m->v[i].end, m->v[out - 1].start,
				m->v[out - 1].end);
			continue;
		}
		m->v[out++] = m->v[i];
	}
	m->n = out;
}

int maps_parse(struct maps *m, const char *data, size_t size,
	       const char *path, unsigned long first_line,
	       struct strtab *strings, bool lenient)
{
	struct line_reader r;
	struct line l;
	struct strbuf q = STRBUF_INIT;
	unsigned long skipped = 0, first_skipped = 0;

	lines_init(&r, data, size);
	r.no = first_line ? first_line - 1 : 0;
	while (lines_next(&r, &l)) {
		struct vma v;
		struct cursor c = cursor_of(&l);
		int rc;

		cursor_skip_space(&c);
		if (cursor_at_end(&c))
			continue;
		rc = maps_parse_line(l.p, l.len, &v, strings);
		if (rc < 0 && lenient) {
			if (!skipped++)
				first_skipped = l.no;
			continue;
		}
		if (rc == -2) {
			sb_release(&q);
			return error("%s:%lu: number out of range in maps line",
				     path, l.no);
		}
		if (rc < 0) {
			error("%s:%lu: not a maps line: '%s'", path, l.no,
			      quote_for_msg(l.p, l.len, &q));
			sb_release(&q);
			return -1;
		}
		maps_add(m, &v);
	}
	sb_release(&q);
	if (skipped)
		warning("%s:%lu: %lu line%s of its maps %s not maps lines; "
			"skipped", path, first_skipped, skipped,
			skipped > 1 ? "s" : "", skipped > 1 ? "are" : "is");
	maps_sort(m, path);
	return 0;
}

/* Drop a glog prefix, "...file.cc:123] ", as pprof does. */
static void drop_log_prefix(const char **p, const char *end)
{
	const char *q = *p;

	while (q < end && *q != ']' && *q != '[')
		q++;
	if (q >= end || *q != ']' || q + 1 >= end || !is_space(q[1]))
		return;
	{
		const char *d = q;

		while (d > *p && is_digit(d[-1]))
			d--;
		if (d == q || d == *p || d[-1] != ':')
			return;
	}
	*p = q + 2;
}

struct pprof_var {
	char *name; /* with its '$' */
	char *value;
};

/* LINE with $NAME replaced by the values defined so far, into SB. */
static void expand_vars(struct strbuf *sb, const char *p, const char *end,
			const struct pprof_var *vars, size_t nvars)
{
	sb_reset(sb);
	while (p < end) {
		size_t k;

		for (k = 0; *p == '$' && k < nvars; k++) {
			size_t n = strlen(vars[k].name);

			if ((size_t)(end - p) >= n &&
			    !memcmp(p, vars[k].name, n)) {
				sb_addstr(sb, vars[k].value);
				p += n;
				break;
			}
		}
		if (*p != '$' || k == nvars)
			sb_addch(sb, *p++);
	}
}

/* A hex number with an optional 0x. */
static bool brief_hex(struct cursor *c, uint64_t *v)
{
	return parse_hex(c, v, true) == NUM_OK;
}

/*
 * pprof's brief mapping: "START-END" or "START END", an optional ':',
 * then optional PERMS, PATH, "(@OFFSET)" and a build id.  0 when it is
 * one (OUT filled), -1 when not.
 */
static int brief_line(const char *p, size_t len, struct vma *out,
		      struct strtab *strings)
{
	struct cursor c = { p, p + len };
	const char *w;
	size_t wl;

	memset(out, 0, sizeof(*out));
	cursor_skip_space(&c);
	if (!brief_hex(&c, &out->start))
		return -1;
	if (!cursor_eat(&c, "-"))
		cursor_skip_space(&c);
	if (!brief_hex(&c, &out->end) || out->end <= out->start)
		return -1;
	cursor_eat(&c, ":");
	if (!cursor_at_end(&c) && !is_space(*c.p))
		return -1;
	memcpy(out->perms, "r-xp", 5);
	out->name = strtab_intern_str(strings, "");
	if (!cursor_word(&c, &w, &wl))
		return 0;
	if (wl == 4 && strchr("r-", w[0]) && strchr("w-", w[1]) &&
	    strchr("x-", w[2]) && strchr("ps-", w[3])) {
		memcpy(out->perms, w, 4);
		if (!cursor_word(&c, &w, &wl))
			return 0;
	}
	if (!(wl > 2 && w[0] == '(' && w[1] == '@')) {
		out->name = strtab_intern(strings, w, wl);
		if (!cursor_word(&c, &w, &wl))
			return 0;
	}
	if (wl > 3 && w[0] == '(' && w[1] == '@' && w[wl - 1] == ')') {
		if (word_hex(w + 2, wl - 3, &out->offset, true) != NUM_OK)
			return -1;
	}
	return 0;
}

int maps_parse_pprof(struct maps *m, const char *data, size_t size,
		     const char *path, struct strtab *strings)
{
	struct line_reader r;
	struct line l;
	struct strbuf sb = STRBUF_INIT;
	struct pprof_var *vars = NULL;
	size_t nvars = 0, alloc = 0;

	lines_init(&r, data, size);
	while (lines_next(&r, &l)) {
		const char *p = l.p, *end = l.p + l.len, *eq;
		struct vma v;

		drop_log_prefix(&p, end);
		expand_vars(&sb, p, end, vars, nvars);
		if (!sb.len)
			continue;
		if (maps_parse_line(sb.buf, sb.len, &v, strings) == 0 ||
		    brief_line(sb.buf, sb.len, &v, strings) == 0) {
			/* pprof keeps what may hold code. */
			if (vma_executable(&v))
				maps_add(m, &v);
			continue;
		}
		eq = memchr(sb.buf, '=', sb.len);
		if (eq) {
			struct cursor k = { sb.buf, eq }, val = { eq + 1,
								 sb.buf + sb.len };
			const char *kw, *vw;
			size_t kl, vl;

			if (!cursor_word(&k, &kw, &kl))
				continue;
			cursor_skip_space(&val);
			vw = val.p;
			vl = (size_t)(val.end - val.p);
			while (vl && is_space(vw[vl - 1]))
				vl--;
			GROW(vars, nvars + 1, alloc);
			vars[nvars].name = xmalloc(kl + 2);
			vars[nvars].name[0] = '$';
			memcpy(vars[nvars].name + 1, kw, kl);
			vars[nvars].name[kl + 1] = '\0';
			vars[nvars++].value = xstrndup(vw, vl);
		}
	}
	for (size_t i = 0; i < nvars; i++) {
		free(vars[i].name);
		free(vars[i].value);
	}
	free(vars);
	sb_release(&sb);
	maps_sort(m, path);
	return 0;
}

int maps_load(struct maps *m, const char *path, struct strtab *strings)
{
	struct filebuf fb;
	int rc;

	if (file_load(&fb, path) < 0)
		return -1;
	free(m->path);
	m->path = xstrdup(path);
	rc = maps_parse(m, fb.data, fb.size, path, 1, strings, false);
	file_release(&fb);
	return rc;
}

const struct vma *maps_find(const struct maps *m, uint64_t addr)
{
	/* The last VMA whose start <= addr. */
	size_t lo = PARTITION_POINT(m->n, i, m->v[i].start <= addr);

	if (lo == 0)
		return NULL;
	if (addr < m->v[lo - 1].end)
		return &m->v[lo - 1];
	return NULL;
}

enum vma_class vma_classify(const struct vma *v)
{
	if (v->name[0] == '/')
		return vma_executable(v) ? VMA_FILE_EXEC : VMA_FILE_NONEXEC;
	if (v->name[0] == '\0')
		return VMA_ANONYMOUS;
	if (strcmp(v->name, "[stack]") == 0)
		return VMA_STACK;
	return VMA_OTHER;
}
