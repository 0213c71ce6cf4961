/*
 * The deep-dump reader (DUMP_DEEP_5 and DUMP_DEEP_6, Chromium's and the
 * recorder's).  One pass over the file with a small section state
 * machine; the original searched each section from the top instead, which
 * accepts the same producer output but also hid garbage.  Here every line
 * is either understood or reported as FILE:LINE.
 */
#include "deep.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "reader.h"
#include "deep_parse.h"
#include "escape.h"
#include "scan.h"
#include "util.h"

static bool line_starts(const struct line *l, const char *lit)
{
	size_t n = strlen(lit);

	return l->len >= n && memcmp(l->p, lit, n) == 0;
}

static bool line_blank(const struct line *l)
{
	for (size_t i = 0; i < l->len; i++)
		if (!is_space(l->p[i]))
			return false;
	return true;
}

/* ---- version line ---- */

static int parse_version(struct parser *p)
{
	const struct line *l = p->l;
	const char *v;
	size_t len;

	if (line_is(l, "STACKTRACES:"))
		return read_error(&p->pos,
				  "obsolete dump version DUMP_DEEP_1 "
				  "(dmprof reads DUMP_DEEP_5 and DUMP_DEEP_6)");
	if (line_is(l, "MMAP_STACKTRACES:"))
		return read_error(&p->pos,
				  "obsolete dump version DUMP_DEEP_2 "
				  "(dmprof reads DUMP_DEEP_5 and DUMP_DEEP_6)");
	if (!line_starts(l, "heap profile: "))
		return read_error(&p->pos,
				  "not a heap dump: expected 'heap profile: "
				  "DUMP_DEEP_6', found '%s'",
				  read_quote(&p->pos, l->p, l->len));
	v = l->p + 14;
	len = l->len - 14;
	while (len && is_space(*v)) {
		v++;
		len--;
	}
	while (len && is_space(v[len - 1]))
		len--;
	if (len == 11 && !memcmp(v, "DUMP_DEEP_5", 11)) {
		p->snap->version = 5;
	} else if (len == 11 && !memcmp(v, "DUMP_DEEP_6", 11)) {
		p->snap->version = 6;
	} else if (len == 11 && !memcmp(v, "DUMP_DEEP_", 10) && v[10] >= '1' &&
		   v[10] <= '4') {
		return read_error(&p->pos,
				  "obsolete dump version '%s' (dmprof reads "
				  "DUMP_DEEP_5 and DUMP_DEEP_6)",
				  read_quote(&p->pos, v, len));
	} else {
		return read_error(&p->pos,
				  "unknown dump version '%s' (dmprof reads "
				  "DUMP_DEEP_5 and DUMP_DEEP_6)",
				  read_quote(&p->pos, v, len));
	}
	return 0;
}

/* ---- META ---- */

static bool days_valid(int y, int mo, int d)
{
	static const int mdays[] = { 31, 29, 31, 30, 31, 30,
				     31, 31, 30, 31, 30, 31 };
	bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;

	if (mo < 1 || mo > 12 || d < 1)
		return false;
	if (mo == 2 && !leap)
		return d <= 28;
	return d <= mdays[mo - 1];
}

/*
 * "Time: YYYY/MM/DD HH:MM:SS[.FRACTION]" (local time) or "Time: SECONDS[.F]".
 * The original read the fraction's digits as a count of milliseconds, so
 * ".5" meant 5 ms; here it is a decimal fraction, which agrees with the
 * original for the producer's three-digit milliseconds.
 */
static bool parse_meta_time(const char *s, size_t len, double *out)
{
	struct cursor c = { s, s + len };
	double frac = 0, scale = 0.1;
	uint64_t v[6];
	static const char seps[] = "// ::";

	if (parse_u64(&c, &v[0]) != NUM_OK)
		return false;
	if (c.p < c.end && *c.p == '/') {
		struct tm tm;
		time_t t;

		for (int i = 1; i < 6; i++) {
			if (c.p >= c.end || *c.p != seps[i - 1])
				return false;
			c.p++;
			if (parse_u64(&c, &v[i]) != NUM_OK)
				return false;
		}
		if (v[0] < 1900 || v[0] > 9999 || v[1] > 12 || v[2] > 31 ||
		    v[3] > 23 || v[4] > 59 || v[5] > 60 ||
		    !days_valid((int)v[0], (int)v[1], (int)v[2]))
			return false;
		memset(&tm, 0, sizeof(tm));
		tm.tm_year = (int)v[0] - 1900;
		tm.tm_mon = (int)v[1] - 1;
		tm.tm_mday = (int)v[2];
		tm.tm_hour = (int)v[3];
		tm.tm_min = (int)v[4];
		tm.tm_sec = (int)v[5];
		tm.tm_isdst = -1;
		t = mktime(&tm);
		if (t == (time_t)-1)
			return false;
		*out = (double)t;
	} else {
		if (v[0] > (1ULL << 53))
			return false;
		*out = (double)v[0];
	}
	if (c.p < c.end && *c.p == '.') {
		c.p++;
		if (c.p >= c.end || !is_digit(*c.p))
			return false;
		for (; c.p < c.end && is_digit(*c.p); c.p++) {
			frac += (*c.p - '0') * scale;
			scale /= 10;
		}
		*out += frac;
	}
	cursor_skip_space(&c);
	return cursor_at_end(&c);
}

static char *trimmed_dup(const char *s, size_t len)
{
	while (len && is_space(*s)) {
		s++;
		len--;
	}
	while (len && is_space(s[len - 1]))
		len--;
	return xstrndup(s, len);
}

/* A META line's key (its first KLEN bytes) and value (VAL[0..VLEN),
 * blanks before it skipped); false if it is no "Key: value". */
static bool meta_split(const struct line *l, size_t *klen, const char **val,
		       size_t *vlen)
{
	const char *colon = memchr(l->p, ':', l->len);

	if (!colon || colon == l->p)
		return false;
	*klen = (size_t)(colon - l->p);
	*val = colon + 1;
	*vlen = l->len - *klen - 1;
	while (*vlen && is_space(**val)) {
		(*val)++;
		(*vlen)--;
	}
	return true;
}

#define KEY(k) (klen == strlen(k) && !memcmp(l->p, k, klen))

static int parse_meta(struct parser *p)
{
	struct snapshot *snap = p->snap;
	const struct line *l = p->l;
	const char *val;
	size_t klen, vlen;

	if (!meta_split(l, &klen, &val, &vlen))
		return read_error(&p->pos,
				  "expected 'Key: value' in META, found '%s'",
				  read_quote(&p->pos, l->p, l->len));
	if (KEY("Time")) {
		double t;

		if (parse_meta_time(val, vlen, &t)) {
			snap->time = t;
			snap->time_from_meta = true;
		} else {
			warning("%s:%lu: cannot read time '%s'; using the "
				"file's modification time",
				p->pos.path, l->no,
				read_quote(&p->pos, val, vlen));
		}
	} else if (KEY("PageSize")) {
		struct cursor c = { val, val + vlen };

		cursor_skip_space(&c);
		if (parse_u64(&c, &snap->page_size) != NUM_OK ||
		    (cursor_skip_space(&c), !cursor_at_end(&c)) ||
		    snap->page_size == 0 || snap->page_size > (1ULL << 30) ||
		    (snap->page_size & (snap->page_size - 1)))
			return read_error(&p->pos, "invalid page size '%s'",
					  read_quote(&p->pos, val, vlen));
	} else if (KEY("PageFrame") || KEY("PFN")) {
		const char *s = val, *e = val + vlen;

		while (s < e) {
			const char *comma = memchr(s, ',', (size_t)(e - s));
			const char *we = comma ? comma : e;
			char *w = trimmed_dup(s, (size_t)(we - s));

			if (!strcmp(w, "24"))
				snap->pageframe_length = 24;
			else if (!strcmp(w, "Base64"))
				snap->pageframe_base64 = true;
			else if (!strcmp(w, "PageCount"))
				snap->has_pagecount = true;
			else
				warning("%s:%lu: unknown PageFrame flag '%s'",
					p->pos.path, l->no, w);
			free(w);
			s = comma ? comma + 1 : e;
		}
	} else if (KEY("RunID")) {
		free(snap->run_id);
		snap->run_id = trimmed_dup(val, vlen);
	} else if (KEY("CommandLine")) {
		/* (Escaped, as the recorder writes it: escape.h.) */
		free(snap->command_line);
		snap->command_line = trimmed_dup(val, vlen);
		snap->command_line[unescape_line(snap->command_line,
						 snap->command_line,
						 strlen(snap->command_line))] =
			'\0';
	} else if (KEY("Reason")) {
		free(snap->reason);
		snap->reason = trimmed_dup(val, vlen);
	} else {
		struct meta_entry *e;

		GROW(snap->meta_extra, snap->nmeta_extra + 1,
		     snap->meta_extra_alloc);
		e = &snap->meta_extra[snap->nmeta_extra++];
		e->key = xstrndup(l->p, klen);
		e->value = trimmed_dup(val, vlen);
	}
	return 0;
}

/*
 * One line of META into M, for deep_meta(): the keys dmprof record's
 * dumps say how they were taken with (the recorder's rec_dump.c).
 */
static void meta_head_line(const struct line *l, struct deep_meta *m)
{
	const char *val;
	size_t klen, vlen;

	if (!meta_split(l, &klen, &val, &vlen))
		return;
	while (vlen && is_space(val[vlen - 1]))
		vlen--;
	if (KEY("Reason")) {
		snprintf(m->reason, sizeof(m->reason), "%.*s", (int)vlen, val);
		if (!strcmp(m->reason, "main returned") ||
		    !strcmp(m->reason, "exit called") ||
		    !strcmp(m->reason, "python finalizing") ||
		    !strcmp(m->reason, "node exiting"))
			m->moment = MOMENT_BEFORE_TEARDOWN;
		else if (!strcmp(m->reason, "Exiting"))
			m->moment = MOMENT_AT_EXIT;
		else
			m->moment = MOMENT_OTHER;
	} else if (KEY("Runtime")) {
		/* "LANGUAGE VERSION PATH": the language. */
		size_t n = 0;

		while (n < vlen && !is_space(val[n]))
			n++;
		snprintf(m->runtime, sizeof(m->runtime), "%.*s", (int)n, val);
	} else if (KEY("DumpSeconds")) {
		m->dump_seconds = strtod(val, NULL);
	} else if (KEY("StoppedSeconds")) {
		m->stopped_seconds = strtod(val, NULL);
	} else if (KEY("Stopped") && vlen >= 4 && !memcmp(val, "no (", 4)) {
		/* "no (WHY)": WHY without its last parenthesis. */
		vlen -= 4 + (val[vlen - 1] == ')');
		m->running = true;
		snprintf(m->running_why, sizeof(m->running_why), "%.*s",
			 (int)vlen, val + 4);
	}
}
#undef KEY

/* ---- MMAP_LIST ---- */

static int b64(int c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

bool pageframe_parse(const char *tok, size_t len, struct pageframe *pf,
		     uint64_t page_size)
{
	size_t i = 0;

	memset(pf, 0, sizeof(*pf));
	if (i < len && tok[i] == '<') {
		pf->start_inside = true;
		i++;
	}
	if (len - i < 4)
		return false;
	for (int k = 0; k < 4; k++) {
		int d = b64((unsigned char)tok[i++]);

		if (d < 0)
			return false;
		pf->pfn = pf->pfn << 6 | (unsigned)d;
	}
	if (i < len && tok[i] == '#') {
		int d;

		if (++i >= len || (d = b64((unsigned char)tok[i])) < 0)
			return false;
		pf->mapcount = (uint8_t)d;
		pf->has_count = true;
		i++;
	}
	if (i < len && tok[i] == '>') {
		pf->end_inside = true;
		i++;
	}
	pf->size = (int64_t)page_size;
	return i == len;
}

static int parse_pf_line(struct parser *p)
{
	struct snapshot *snap = p->snap;
	struct cursor c = cursor_of(p->l);
	const char *w;
	size_t len;

	c.p += 5; /* "  PF:" */
	while (cursor_word(&c, &w, &len)) {
		struct pageframe pf;

		if (!pageframe_parse(w, len, &pf, snap->page_size)) {
			p->pos.col = (unsigned long)(w - p->l->p) + 1;
			return read_error(&p->pos,
					  "malformed page frame '%s' "
					  "(expected [<]BBBB[#C][>] in base64)",
					  read_quote(&p->pos, w, len));
		}
		if (snap->npfs >= UINT32_MAX)
			return read_error(&p->pos, "too many page frames");
		GROW(snap->pfs, snap->npfs + 1, snap->pfs_alloc);
		snap->pfs[snap->npfs++] = pf;
	}
	return 0;
}

static int parse_vma_line(struct parser *p, const struct vma *v)
{
	struct snapshot *snap = p->snap;

	if (snap->nvmas >= UINT32_MAX)
		return read_error(&p->pos, "too many VMAs");
	GROW(snap->vmas, snap->nvmas + 1, snap->vmas_alloc);
	snap->vmas[snap->nvmas] = *v;
	p->current_vma = (int64_t)snap->nvmas++;
	return 0;
}

static bool all_digits(const char *w, size_t len)
{
	if (!len)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!is_digit(w[i]))
			return false;
	return true;
}

/*
 * INFO after "hooked": "[TYPE ]COMMITTED / RESERVED @ BUCKET", or the
 * legacy "TYPE @ BUCKET".  After "unhooked": "[TYPE ]COMMITTED / RESERVED",
 * or the legacy "TYPE COMMITTED".  Parsed from the right, since TYPE is
 * free text.
 */
static int parse_region_info(struct parser *p, struct region *r,
			     const char *s, const char *e)
{
	const char *w[5];
	size_t wl[5];
	int nw = 0, need;
	const char *q = e, *type_end;
	enum num_status st = NUM_OK;

	while (q > s && is_space(q[-1]))
		q--;
	e = q;
	/* Collect up to five words from the right. */
	while (nw < 5 && q > s) {
		const char *we = q;

		while (q > s && !is_space(q[-1]))
			q--;
		w[nw] = q;
		wl[nw] = (size_t)(we - q);
		nw++;
		while (q > s && is_space(q[-1]))
			q--;
	}
	/* w[0] is the last word. */
	need = r->kind == REGION_HOOKED ? 5 : 3;
	if (nw >= need &&
	    (r->kind == REGION_UNHOOKED ||
	     (wl[1] == 1 && w[1][0] == '@' && all_digits(w[0], wl[0]))) &&
	    wl[need - 2] == 1 && w[need - 2][0] == '/' &&
	    all_digits(w[need - 1], wl[need - 1]) &&
	    all_digits(w[need - 3], wl[need - 3])) {
		struct cursor c;

		r->has_committed = r->has_reserved = true;
		if ((st = word_i64(w[need - 1], wl[need - 1], &r->committed)) ||
		    (st = word_i64(w[need - 3], wl[need - 3], &r->reserved)))
			goto range;
		if (r->kind == REGION_HOOKED) {
			if ((st = word_u64(w[0], wl[0], &r->bucket_id)))
				goto range;
			r->has_bucket = true;
		}
		type_end = w[need - 1];
		c.p = s;
		c.end = type_end;
		cursor_skip_space(&c);
		if (!cursor_at_end(&c)) {
			const char *te = type_end;

			while (te > c.p && is_space(te[-1]))
				te--;
			r->type = strtab_intern(&p->m->strings, c.p,
						(size_t)(te - c.p));
		}
		return 0;
	}
	/* Legacy forms from producers before committed/reserved. */
	if (r->kind == REGION_HOOKED && nw >= 3 && wl[1] == 1 &&
	    w[1][0] == '@' && all_digits(w[0], wl[0])) {
		if ((st = word_u64(w[0], wl[0], &r->bucket_id)))
			goto range;
		r->has_bucket = true;
		type_end = w[1];
	} else if (r->kind == REGION_UNHOOKED && nw >= 2 &&
		   all_digits(w[0], wl[0])) {
		if ((st = word_i64(w[0], wl[0], &r->committed)))
			goto range;
		r->has_committed = true;
		type_end = w[0];
	} else {
		return read_error(&p->pos,
				  "malformed %s region '%s' (expected "
				  "'COMMITTED / RESERVED%s')",
				  r->kind == REGION_HOOKED ? "hooked"
							   : "unhooked",
				  read_quote(&p->pos, s, (size_t)(e - s)),
				  r->kind == REGION_HOOKED ? " @ BUCKET" : "");
	}
	while (type_end > s && is_space(type_end[-1]))
		type_end--;
	r->type = strtab_intern(&p->m->strings, s, (size_t)(type_end - s));
	if (!p->legacy_region_line)
		p->legacy_region_line = p->l->no;
	return 0;
range:
	return read_error(&p->pos, "number out of range in region line");
}

/*
 * " S1 START S2 - S3 END S4  hooked|unhooked INFO" where S1,S3 are ' ' or
 * '(' and S2,S4 are ' ' or ')'.
 */
static int parse_region_line(struct parser *p)
{
	struct snapshot *snap = p->snap;
	const struct line *l = p->l;
	struct cursor c = cursor_of(l);
	struct region r;
	uint64_t start, end;
	char s1, s2, s3, s4;
	const char *w;
	size_t len;
	enum num_status st;

	memset(&r, 0, sizeof(r));
	r.line = l->no;
	c.p++; /* the leading space */
	if (c.p >= c.end || (*c.p != ' ' && *c.p != '('))
		goto bad;
	s1 = *c.p++;
	if ((st = parse_hex(&c, &start, false)) != NUM_OK)
		goto num;
	if (c.p >= c.end || (*c.p != ' ' && *c.p != ')'))
		goto bad;
	s2 = *c.p++;
	if (!cursor_eat(&c, "-"))
		goto bad;
	if (c.p >= c.end || (*c.p != ' ' && *c.p != '('))
		goto bad;
	s3 = *c.p++;
	if ((st = parse_hex(&c, &end, false)) != NUM_OK)
		goto num;
	if (c.p >= c.end || (*c.p != ' ' && *c.p != ')'))
		goto bad;
	s4 = *c.p++;
	(void)s2;
	(void)s4;
	if (!cursor_word(&c, &w, &len))
		goto bad;
	/* The original matched the kind case-insensitively; so do we. */
	if (len == 6 && !strncasecmp(w, "hooked", 6))
		r.kind = REGION_HOOKED;
	else if (len == 8 && !strncasecmp(w, "unhooked", 8))
		r.kind = REGION_UNHOOKED;
	else
		goto bad;
	cursor_skip_space(&c);
	if (cursor_at_end(&c))
		goto bad;
	if (parse_region_info(p, &r, c.p, c.end) < 0)
		return -1;
	if (p->current_vma < 0)
		return read_error(&p->pos, "region line before any VMA line");
	r.vma = (uint32_t)p->current_vma;
	r.start = s1 == '(' ? snap->vmas[r.vma].start : start;
	r.end = s3 == '(' ? snap->vmas[r.vma].end : end;
	if (r.end < r.start)
		return read_error(&p->pos,
				  "region ends (%" PRIx64 ") before it starts "
				  "(%" PRIx64 ")",
				  r.end, r.start);
	/* The page frames listed since the last region describe this one. */
	r.pf_first = p->pending_pf;
	r.pf_count = (uint32_t)(snap->npfs - p->pending_pf);
	if (r.pf_count) {
		struct pageframe *first = &snap->pfs[r.pf_first];
		struct pageframe *last = &snap->pfs[r.pf_first + r.pf_count - 1];

		if (first->start_inside)
			first->size -= (int64_t)(r.start % snap->page_size);
		if (last->end_inside)
			last->size -= (int64_t)(snap->page_size -
						r.end % snap->page_size);
	}
	p->pending_pf = (uint32_t)snap->npfs;
	if (snap->nregions >= UINT32_MAX)
		return read_error(&p->pos, "too many regions");
	GROW(snap->regions, snap->nregions + 1, snap->regions_alloc);
	snap->regions[snap->nregions++] = r;
	return 0;
num:
	if (st == NUM_RANGE)
		return read_error(&p->pos,
				  "address out of range in region line");
bad:
	return read_error(&p->pos, "malformed region line '%s'",
			  read_quote(&p->pos, l->p, l->len));
}

static int parse_mmap_list(struct parser *p)
{
	const struct line *l = p->l;
	struct vma v;
	int rc;

	if (l->len && l->p[0] != ' ') {
		rc = maps_parse_line(l->p, l->len, &v, &p->m->strings);
		if (rc == 0)
			return parse_vma_line(p, &v);
		if (rc == -2)
			return read_error(&p->pos,
					  "number out of range in VMA line");
		return read_error(
		    &p->pos,
		    "expected a VMA, page frame or region line in "
		    "MMAP_LIST, found '%s'",
		    read_quote(&p->pos, l->p, l->len));
	}
	if (line_starts(l, "  PF:"))
		return parse_pf_line(p);
	return parse_region_line(p);
}

static int cmp_region(const void *a, const void *b)
{
	const struct region *x = a, *y = b;

	/* Equal ranges: later line last, so it wins below. */
	return CMP(x->start, y->start) ?: CMP(x->end, y->end) ?:
	       CMP(x->line, y->line);
}

/*
 * Sort regions by range; a repeated range keeps its last line (as the
 * original did).  Regions that overlap otherwise would be counted twice:
 * the dump is inconsistent, and an error.
 */
static int finish_regions(struct parser *p)
{
	struct snapshot *snap = p->snap;
	size_t i, out = 0;

	if (!snap->nregions)
		return 0;
	qsort(snap->regions, snap->nregions, sizeof(*snap->regions),
	      cmp_region);
	for (i = 0; i < snap->nregions; i++) {
		if (out && snap->regions[out - 1].start ==
				   snap->regions[i].start &&
		    snap->regions[out - 1].end == snap->regions[i].end) {
			warning("%s:%lu: region %" PRIx64 "-%" PRIx64
				" repeats line %lu; the later line wins",
				p->pos.path, snap->regions[i].line,
				snap->regions[i].start, snap->regions[i].end,
				snap->regions[out - 1].line);
			snap->regions[out - 1] = snap->regions[i];
			continue;
		}
		if (out &&
		    snap->regions[i].start < snap->regions[out - 1].end) {
			p->pos.line = snap->regions[i].line;
			return read_error(&p->pos,
					  "region %" PRIx64 "-%" PRIx64
					  " overlaps region %" PRIx64
					  "-%" PRIx64 " of line %lu",
					  snap->regions[i].start,
					  snap->regions[i].end,
					  snap->regions[out - 1].start,
					  snap->regions[out - 1].end,
					  snap->regions[out - 1].line);
		}
		snap->regions[out++] = snap->regions[i];
	}
	snap->nregions = out;
	return 0;
}

/* ---- GLOBAL_STATS ---- */

static int parse_global_stat(struct parser *p)
{
	struct snapshot *snap = p->snap;
	struct cursor c = cursor_of(p->l);
	const char *w[4];
	size_t wl[4];
	int nw = 0, row;
	struct gstat v;
	enum num_status st;

	while (nw < 4 && cursor_word(&c, &w[nw], &wl[nw]))
		nw++;
	if (nw == 2 && wl[0] == 7 && !memcmp(w[0], "virtual", 7) &&
	    wl[1] == 9 && !memcmp(w[1], "committed", 9))
		return 0; /* the column header */
	if (nw != 3)
		return read_error(&p->pos,
				  "expected 'NAME VIRTUAL COMMITTED' in "
				  "GLOBAL_STATS, found '%s'",
				  read_quote(&p->pos, p->l->p, p->l->len));
	if ((st = word_i64(w[1], wl[1], &v.virt)) != NUM_OK ||
	    (st = word_i64(w[2], wl[2], &v.committed)) != NUM_OK)
		return read_error(&p->pos, "%s number in GLOBAL_STATS row '%s'",
				  st == NUM_RANGE ? "out-of-range" : "invalid",
				  read_quote(&p->pos, w[0], wl[0]));
	for (row = 0; row < GS_NROWS; row++)
		if (strlen(gstat_names[row]) == wl[0] &&
		    !memcmp(gstat_names[row], w[0], wl[0]))
			break;
	if (row < GS_NROWS) {
		if (snap->gs.present & (1u << row))
			warning("%s:%lu: GLOBAL_STATS row '%s' repeated; the "
				"later one wins",
				p->pos.path, p->l->no, gstat_names[row]);
		snap->gs.row[row] = v;
		snap->gs.present |= 1u << row;
	} else {
		struct gstat_extra *e;

		snap->gs.extra = xreallocarray(snap->gs.extra,
					       snap->gs.nextra + 1,
					       sizeof(*snap->gs.extra));
		e = &snap->gs.extra[snap->gs.nextra++];
		e->name = strtab_intern(&p->m->strings, w[0], wl[0]);
		e->v = v;
	}
	return 0;
}

static void check_global_stats(struct parser *p, unsigned long line)
{
	struct snapshot *snap = p->snap;
	struct strbuf missing = STRBUF_INIT;
	int row, n = 0;

	for (row = 0; row < GS_NROWS; row++) {
		if (!gstat_required(row) || (snap->gs.present & (1u << row)))
			continue;
		sb_addf(&missing, "%s'%s'", n ? ", " : "", gstat_names[row]);
		n++;
	}
	/*
	 * Older producers did not write 'absent', and the original's own
	 * test dumps lack it (the original crashed).  Reading 0 is right for
	 * them; say it once per run rather than once per dump.
	 */
	if (n && read_warn_first(p->run, READ_WARNED_GSTATS))
		warning("%s:%lu: GLOBAL_STATS has no %s row%s; read as 0 "
			"(not repeated for later dumps)",
			p->pos.path, line, missing.buf, n > 1 ? "s" : "");
	sb_release(&missing);
}

/* ---- STACKTRACES ---- */

/*
 * The bucket of each stack line.  Ids come in no order and the table is
 * big, so each lookup would wait for memory: the ones a few lines ahead
 * are fetched meanwhile.
 */
static void find_buckets(struct parser *p)
{
	enum { AHEAD = 16 };
	struct snapshot *snap = p->snap;
	const struct model *m = p->m;
	size_t n = snap->nlines ? snap->nlines : 1;
	uint32_t *keys = xreallocarray(NULL, n, sizeof(*keys));
	uint32_t *stacks = xreallocarray(NULL, n, sizeof(*stacks));
	bool keyed = true;

	for (size_t i = 0; i < snap->nlines; i++) {
		struct stack_line *sl = &snap->lines[i];
		struct bucket_note note = { BUCKET_KEY_NONE, BUCKET_KEY_NONE };

		if (i >= p->found_from && i < p->found_to) {
			/* (The tail's: looked up there, the note where its
			 * id was.) */
			if (sl->bucket)
				note = deep_note_unpack(p->ids[i]);
		} else {
			if (i + AHEAD < snap->nlines)
				bucket_set_prefetch(&m->buckets,
						    p->ids[i + AHEAD]);
			sl->bucket = bucket_set_find_note(&m->buckets,
							  p->ids[i], &note);
		}
		keys[i] = note.key;
		stacks[i] = note.stack;
		if (sl->bucket) {
			keyed = keyed && note.key != BUCKET_KEY_NONE;
			continue;
		}
		if (!snap->nunknown)
			snap->first_unknown_line = p->nos[i];
		GROW(snap->unknown, snap->nunknown + 1, snap->unknown_alloc);
		snap->unknown[snap->nunknown].index = i;
		snap->unknown[snap->nunknown++].id = p->ids[i];
		snap->unknown_bucket_bytes =
			add64(snap->unknown_bucket_bytes, sl->committed,
			      &snap->overflow);
	}
	/* (A line without a key: the keys are made from the buckets.) */
	if (keyed && snap->nlines) {
		free(snap->line_index);
		free(snap->line_stack);
		snap->line_index = keys;
		snap->line_stack = stacks;
	} else {
		FREE_ALL(keys, stacks);
	}
}

/* SL, of bucket ID, as the snapshot's next stack line. */
static void add_stack_line(struct parser *p, const struct stack_line *sl,
			   uint64_t id)
{
	struct snapshot *snap = p->snap;

	/* (sl->bucket: found once the section is read, see find_buckets.) */
	GROW(p->ids, snap->nlines + 1, p->ids_alloc);
	GROW(p->nos, snap->nlines + 1, p->nos_alloc);
	p->ids[snap->nlines] = id;
	p->nos[snap->nlines] = p->l->no;
	read_add_line(snap, sl);
}

/*
 * The lines of R in the producer's exact layout (most of them), many at
 * once, as far as the arrays have room (see deep_tail_start): R goes on
 * after them.
 */
static void fixed_lines(struct parser *p, struct line_reader *r)
{
	struct snapshot *snap = p->snap;
	size_t at = snap->nlines, room, n;

	room = snap->lines_alloc < p->ids_alloc ? snap->lines_alloc
						 : p->ids_alloc;
	if (p->nos_alloc < room)
		room = p->nos_alloc;
	if (room <= at)
		return;
	n = deep_fixed_lines(r->p, r->end, snap->lines + at, p->ids + at,
			     room - at, &r->p);
	for (size_t i = 0; i < n; i++)
		p->nos[at + i] = r->no + i + 1;
	r->no += n;
	snap->nlines += n;
}

static int parse_stack_line(struct parser *p)
{
	struct snapshot *snap = p->snap;
	struct cursor c = cursor_of(p->l);
	struct stack_line sl;
	uint64_t id;
	const char *w[7];
	size_t wl[7];
	int nw = 0;
	enum num_status st;

	if (deep_fast_stack_line(p->l, &sl, &id))
		goto add;

	while (nw < 7 && cursor_word(&c, &w[nw], &wl[nw]))
		nw++;
	if (!p->stack_header_seen && !snap->nlines && nw == 2 &&
	    wl[0] == 7 && !memcmp(w[0], "virtual", 7) && wl[1] == 9 &&
	    !memcmp(w[1], "committed", 9)) {
		p->stack_header_seen = true;
		return 0;
	}
	if (nw != 6 || wl[4] != 1 || w[4][0] != '@')
		return read_error(&p->pos,
				  "expected 'VIRTUAL COMMITTED ALLOCS FREES @ "
				  "BUCKET' in STACKTRACES, found '%s'",
				  read_quote(&p->pos, p->l->p, p->l->len));
	memset(&sl, 0, sizeof(sl));
	if ((st = word_i64(w[0], wl[0], &sl.virt)) ||
	    (st = word_i64(w[1], wl[1], &sl.committed)) ||
	    (st = word_i64(w[2], wl[2], &sl.alloc)) ||
	    (st = word_i64(w[3], wl[3], &sl.free)) ||
	    (st = word_u64(w[5], wl[5], &id)))
		return read_error(&p->pos, "%s number in stack line '%s'",
				  st == NUM_RANGE ? "out-of-range" : "invalid",
				  read_quote(&p->pos, p->l->p, p->l->len));
add:
	add_stack_line(p, &sl, id);
	return 0;
}

/* ---- driver ---- */

static const struct {
	const char *header;
	enum section sec;
} sections[] = {
	{ "META:", SEC_META },
	{ "MMAP_LIST:", SEC_MMAP_LIST },
	{ "GLOBAL_STATS:", SEC_GLOBAL_STATS },
	{ "STACKTRACES:", SEC_STACKTRACES },
	{ "MAPPED_LIBRARIES:", SEC_MAPPED_LIBRARIES },
	{ "BUCKETS:", SEC_BUCKETS },
	{ "MAPS:", SEC_MAPS },
};

/* The sections the run's companions read only before these. */
#define DATA_SECTIONS                                                        \
	(1u << SEC_MMAP_LIST | 1u << SEC_GLOBAL_STATS | 1u << SEC_STACKTRACES)

static int section_header(struct parser *p)
{
	for (size_t i = 0; i < ARRAY_SIZE(sections); i++) {
		if (!line_is(p->l, sections[i].header))
			continue;
		if (p->seen & (1u << sections[i].sec))
			return read_error(&p->pos, "second %s section",
					  sections[i].header);
		if ((sections[i].sec == SEC_BUCKETS ||
		     sections[i].sec == SEC_MAPS) &&
		    (p->seen & DATA_SECTIONS))
			return read_error(&p->pos, "%s section after the "
					  "dump's data (it comes before "
					  "MMAP_LIST)", sections[i].header);
		p->seen |= 1u << sections[i].sec;
		p->sec = sections[i].sec;
		if (p->sec == SEC_META)
			p->snap->has_meta = true;
		if (p->sec == SEC_MMAP_LIST)
			p->snap->has_mmap_list = true;
		if (p->sec == SEC_GLOBAL_STATS)
			p->snap->has_global_stats = true;
		return 1;
	}
	return 0;
}

static int parse_lines(struct parser *p, const struct filebuf *fb)
{
	struct snapshot *snap = p->snap;
	struct line_reader r;
	struct line l;
	unsigned long gs_line = 0;
	int rc;

	lines_init(&r, fb->data, fb->size);
	p->l = &l;
	for (;;) {
		struct stack_line sl;
		uint64_t id;

		if (p->sec == SEC_STACKTRACES)
			fixed_lines(p, &r);
		if (!lines_next(&r, &l)) {
			/* (Where the tail starts, with one: on after it.) */
			if (p->tail &&
			    deep_tail_take(p, &r, fb->data + fb->size))
				continue;
			break;
		}

		/* The common line first: a stack line the producer wrote,
		 * which holds no NUL and opens no section. */
		if (p->sec == SEC_STACKTRACES && l.newline &&
		    deep_fast_stack_line(&l, &sl, &id)) {
			add_stack_line(p, &sl, id);
			continue;
		}
		p->pos.line = l.no;
		if (memchr(l.p, '\0', l.len))
			return read_error(&p->pos, "NUL byte in line (not a "
						   "text dump?)");
		if (l.len && l.p[0] == '#')
			continue;
		if (!l.newline && p->sec != SEC_MAPPED_LIBRARIES &&
		    p->sec != SEC_BEFORE) {
			/* A producer killed mid-write. */
			warning("%s:%lu: last line has no newline (dump "
				"truncated?); skipped",
				p->pos.path, l.no);
			break;
		}
		if (p->sec == SEC_BEFORE) {
			if (line_blank(&l))
				continue;
			if (parse_version(p) < 0)
				return -1;
			p->sec = SEC_HEADER;
			continue;
		}
		if (p->sec == SEC_MAPPED_LIBRARIES) {
			/* The rest of the file is maps text. */
			if (maps_parse(&snap->own_maps, l.p,
				       (size_t)(fb->data + fb->size - l.p),
				       p->pos.path, l.no, &p->m->strings,
				       true) < 0)
				return -1;
			snap->has_own_maps = true;
			break;
		}
		rc = section_header(p);
		if (rc < 0)
			return -1;
		if (rc > 0) {
			if (p->sec == SEC_GLOBAL_STATS)
				gs_line = l.no;
			if (p->sec == SEC_STACKTRACES)
				deep_tail_start(p, &r);
			continue;
		}
		if (line_blank(&l))
			continue;
		switch (p->sec) {
		case SEC_META:
			rc = parse_meta(p);
			break;
		case SEC_MMAP_LIST:
			rc = parse_mmap_list(p);
			break;
		case SEC_GLOBAL_STATS:
			rc = parse_global_stat(p);
			break;
		case SEC_STACKTRACES:
			rc = parse_stack_line(p);
			break;
		case SEC_BUCKETS:
		case SEC_MAPS:
			rc = 0; /* (the run's companions': bucketfile.c) */
			break;
		default:
			rc = read_error(&p->pos,
					"unexpected '%s' outside any section",
					read_quote(&p->pos, l.p, l.len));
			break;
		}
		if (rc < 0)
			return -1;
	}
	p->pos.line = r.no ? r.no : 1;
	if (p->sec == SEC_BEFORE)
		return read_error(&p->pos, "empty dump (no 'heap profile:' "
					   "line)");
	if (!(p->seen & (1u << SEC_STACKTRACES)))
		return read_error(&p->pos, "no STACKTRACES section (dump "
					   "truncated?)");
	if (!(p->seen & (1u << SEC_GLOBAL_STATS)))
		return read_error(&p->pos, "no GLOBAL_STATS section (dump "
					   "truncated?)");
	check_global_stats(p, gs_line);
	return 0;
}

int deep_parse(struct snapshot *snap, struct filebuf *fb,
	       struct model *m, struct read_run *run)
{
	struct parser p;
	int rc;

	memset(&p, 0, sizeof(p));
	p.snap = snap;
	p.m = m;
	p.run = run;
	p.pos.path = fb->path;
	p.current_vma = -1;
	snap->kernel_view = true;
	snap->mmap_by_regions = true;
	rc = parse_lines(&p, fb);
	/* (Stopped before the tail: the tail's lines are not the
	 * section's.) */
	deep_tail_join(&p, false);
	if (rc == 0)
		rc = finish_regions(&p);
	if (rc == 0) {
		find_buckets(&p);
		for (size_t i = 0; i < snap->nregions; i++) {
			struct region *r = &snap->regions[i];

			if (r->has_bucket)
				r->bucket = bucket_set_find(&m->buckets,
							    r->bucket_id);
		}
		if (p.legacy_region_line)
			warning("%s:%lu: legacy region line without "
				"committed/reserved sizes; missing sizes read "
				"as 0",
				p.pos.path, p.legacy_region_line);
	}
	free(p.ids);
	free(p.nos);
	read_pos_release(&p.pos);
	return rc;
}

bool deep_claims(const char *line, size_t len)
{
	struct cursor c = { line, line + len };

	/* DUMP_DEEP_1 and _2 began so: claimed, to say they are obsolete. */
	if (cursor_eat(&c, "STACKTRACES:") || cursor_eat(&c, "MMAP_STACKTRACES:"))
		return true;
	if (!cursor_eat(&c, "heap profile:"))
		return false;
	/* A version, not counts ("heap profile: 4: 1024 [...]", gperftools). */
	cursor_skip_space(&c);
	return cursor_at_end(&c) || (!is_digit(*c.p) && *c.p != '-');
}

/* A dump's head is read this far for its META at most. */
#define META_HEAD_MAX 65536

void deep_meta(const char *path, struct deep_meta *m)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t alloc = 0, total = 0;
	ssize_t n;
	bool in_meta = false;

	memset(m, 0, sizeof(*m));
	while (f && total < META_HEAD_MAX &&
	       (n = getline(&buf, &alloc, f)) > 0 && buf[n - 1] == '\n') {
		struct line l = { buf, (size_t)n - 1, 0, true };

		total += (size_t)n;
		if (l.len && buf[l.len - 1] == '\r')
			l.len--;
		if (line_is(&l, "META:")) {
			in_meta = true;
			continue;
		}
		/* (Any other section ends it.) */
		for (size_t i = 0; i < ARRAY_SIZE(sections); i++)
			if (line_is(&l, sections[i].header))
				goto out;
		if (in_meta)
			meta_head_line(&l, m);
	}
out:
	free(buf);
	if (f)
		fclose(f);
}

enum dump_moment deep_moment(const char *path)
{
	struct deep_meta m;

	deep_meta(path, &m);
	return m.moment;
}
