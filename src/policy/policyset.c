/*
 * The policy search path: $DMPROF_POLICY_PATH, then policies/ next to the
 * binary (running from a build tree), then share/dmprof/policies relative
 * to it and the configured data directory (installed).  Each directory
 * holds an `index` naming its policies: "LABEL FILE [default]".
 */
#include "policyset.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "paths.h"
#include "scan.h"
#include "util.h"

static char **dirs;
static size_t ndirs;
static struct strbuf search_path = STRBUF_INIT;

static void add_dir(const char *d)
{
	char real[PATH_MAX];
	struct stat st;

	if (!*d || stat(d, &st) < 0 || !S_ISDIR(st.st_mode) ||
	    !realpath(d, real))
		return;
	for (size_t i = 0; i < ndirs; i++)
		if (!strcmp(dirs[i], real))
			return;
	dirs = xreallocarray(dirs, ndirs + 1, sizeof(*dirs));
	dirs[ndirs++] = xstrdup(real);
	sb_addf(&search_path, "%s%s", search_path.len ? ":" : "", real);
}

static void init_dirs(void)
{
	const char *env = getenv("DMPROF_POLICY_PATH");
	struct strbuf scratch = STRBUF_INIT;
	char *exe;

	if (dirs)
		return;
	dirs = xcalloc(1, sizeof(*dirs));
	exe = paths_exe_dir();
	if (env) {
		char *copy = xstrdup(env), *save = NULL, *d;

		for (d = strtok_r(copy, ":", &save); d;
		     d = strtok_r(NULL, ":", &save))
			add_dir(d);
		free(copy);
	}
	if (exe) {
		struct strbuf sb = STRBUF_INIT;

		sb_addf(&sb, "%s/policies", exe);
		add_dir(sb.buf);
		sb_reset(&sb);
		sb_addf(&sb, "%s/../share/dmprof/policies", exe);
		add_dir(sb.buf);
		sb_release(&sb);
		free(exe);
	}
	sb_addf(&scratch, "%s/policies", dmprof_datadir);
	add_dir(scratch.buf);
	sb_release(&scratch);
}

const char *policy_search_path(void)
{
	init_dirs();
	return search_path.len ? search_path.buf : "(no policy directory)";
}

static int read_index(const char *dir, struct index_entry **out, size_t *n,
		      size_t *alloc)
{
	struct strbuf path = STRBUF_INIT;
	struct filebuf fb;
	struct line_reader r;
	struct line l;
	int rc = 0;

	sb_addf(&path, "%s/index", dir);
	if (access(path.buf, F_OK) < 0) {
		sb_release(&path);
		return 0;
	}
	if (file_load(&fb, path.buf) < 0) {
		sb_release(&path);
		return -1;
	}
	lines_init(&r, fb.data, fb.size);
	while (lines_next(&r, &l)) {
		struct cursor c = cursor_of(&l);
		const char *w[4];
		size_t wl[4];
		int nw = 0;
		bool dup = false;

		while (nw < 4 && cursor_word(&c, &w[nw], &wl[nw]))
			nw++;
		if (!nw || w[0][0] == '#')
			continue;
		if (nw < 2 || nw > 3 ||
		    (nw == 3 && (wl[2] != 7 || memcmp(w[2], "default", 7)))) {
			rc = error("%s:%lu: expected 'LABEL FILE [default]'",
				   path.buf, l.no);
			break;
		}
		for (size_t i = 0; i < *n && !dup; i++)
			dup = strlen((*out)[i].label) == wl[0] &&
			      !memcmp((*out)[i].label, w[0], wl[0]);
		if (dup)
			continue; /* an earlier directory wins */
		GROW(*out, *n + 1, *alloc);
		(*out)[*n].label = xstrndup(w[0], wl[0]);
		{
			struct strbuf f = STRBUF_INIT;

			if (w[1][0] == '/')
				sb_add(&f, w[1], wl[1]);
			else
				sb_addf(&f, "%s/%.*s", dir, (int)wl[1], w[1]);
			(*out)[*n].path = sb_detach(&f);
		}
		(*out)[*n].index = xstrdup(path.buf);
		(*out)[*n].line = l.no;
		(*out)[*n].is_default = nw == 3;
		(*n)++;
	}
	file_release(&fb);
	sb_release(&path);
	return rc;
}

int policy_index(struct index_entry **out, size_t *n)
{
	size_t alloc = 0;

	init_dirs();
	*out = NULL;
	*n = 0;
	for (size_t i = 0; i < ndirs; i++) {
		if (read_index(dirs[i], out, n, &alloc) < 0) {
			policy_index_free(*out, *n);
			*out = NULL;
			*n = 0;
			return -1;
		}
	}
	return 0;
}

void policy_index_free(struct index_entry *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].label);
		free(v[i].path);
		free(v[i].index);
	}
	free(v);
}

static bool is_path(const char *s)
{
	return strchr(s, '/') || ends_with(s, ".policy") ||
	       ends_with(s, ".json");
}

static void set_add(struct policy_set *set, struct policy *p)
{
	set->v = xreallocarray(set->v, set->n + 1, sizeof(*set->v));
	set->v[set->n++] = p;
}

/* Labels need the index; paths do not, so a broken index spares them. */
static bool needs_index(const char *spec)
{
	char *copy, *save = NULL, *item;
	bool need = false;

	if (!spec)
		return true;
	copy = xstrdup(spec);
	for (item = strtok_r(copy, ",", &save); item && !need;
	     item = strtok_r(NULL, ",", &save))
		need = !is_path(item);
	free(copy);
	return need;
}

/* Reports list policies by label, as the original did. */
static int cmp_label(const void *a, const void *b)
{
	return strcmp((*(struct policy *const *)a)->label,
		      (*(struct policy *const *)b)->label);
}

int policy_set_load(struct policy_set *set, const char *spec)
{
	struct index_entry *idx = NULL;
	size_t nidx = 0;
	int rc = 0;

	memset(set, 0, sizeof(*set));
	/* A file whose name holds a comma is still one policy. */
	if (spec && strchr(spec, ',') && access(spec, F_OK) == 0) {
		struct policy *p = policy_load(spec, NULL);

		if (!p)
			return -1;
		set_add(set, p);
		return 0;
	}
	if (needs_index(spec) && policy_index(&idx, &nidx) < 0)
		return -1;
	if (!spec) {
		for (size_t i = 0; i < nidx; i++) {
			struct policy *p;

			if (!idx[i].is_default)
				continue;
			p = policy_load(idx[i].path, idx[i].label);
			if (!p) {
				rc = -1;
			} else {
				p->indexed = true;
				set_add(set, p);
			}
		}
		if (!rc && !set->n)
			rc = error("no default policy: give one with -p (search "
				   "path: %s)", policy_search_path());
	} else {
		char *copy = xstrdup(spec), *save = NULL, *item;

		for (item = strtok_r(copy, ",", &save); item;
		     item = strtok_r(NULL, ",", &save)) {
			struct policy *p = NULL;
			size_t i;

			if (is_path(item)) {
				p = policy_load(item, NULL);
			} else {
				for (i = 0; i < nidx; i++)
					if (!strcmp(idx[i].label, item))
						break;
				if (i == nidx) {
					struct strbuf known = STRBUF_INIT;

					for (size_t k = 0; k < nidx; k++)
						sb_addf(&known, "%s%s",
							k ? ", " : "",
							idx[k].label);
					error("unknown policy '%s' (known: %s; "
					      "search path: %s)", item,
					      known.len ? known.buf : "none",
					      policy_search_path());
					sb_release(&known);
					rc = -1;
					continue;
				}
				p = policy_load(idx[i].path, idx[i].label);
				if (p)
					p->indexed = true;
			}
			if (!p)
				rc = -1;
			else
				set_add(set, p);
		}
		free(copy);
		if (!rc && !set->n)
			rc = error("-p names no policy");
	}
	policy_index_free(idx, nidx);
	if (rc < 0)
		policy_set_free(set);
	else if (set->n > 1) {
		const struct policy *first = set->v[0];

		qsort(set->v, set->n, sizeof(*set->v), cmp_label);
		for (size_t i = 0; i < set->n; i++)
			if (set->v[i] == first)
				set->first = i;
	}
	return rc;
}

bool policy_known(const char *spec)
{
	struct index_entry *idx;
	size_t n;
	bool known = false;

	if (is_path(spec))
		return access(spec, F_OK) == 0;
	if (policy_index(&idx, &n) < 0)
		return false;
	for (size_t i = 0; i < n && !known; i++)
		known = !strcmp(idx[i].label, spec);
	policy_index_free(idx, n);
	return known;
}

bool policy_set_uses(const struct policy_set *set, enum cond_field f)
{
	for (size_t i = 0; i < set->n; i++)
		if (set->v[i]->uses[f])
			return true;
	return false;
}

bool policy_set_needs_names(const struct policy_set *set)
{
	static const enum cond_field named[] = { COND_STACK, COND_SOURCE,
						 COND_TYPE };

	for (size_t i = 0; i < set->n; i++)
		for (size_t k = 0; k < set->v[i]->nrules; k++)
			for (size_t f = 0; f < ARRAY_SIZE(named); f++) {
				const struct pattern *pat =
					set->v[i]->rules[k].cond[named[f]];

				if (pat && !pat->match_all)
					return true;
			}
	return false;
}

struct policy *policy_set_load_one(const char *spec)
{
	struct policy_set set;
	struct policy *p;

	if (policy_set_load(&set, spec) < 0)
		return NULL;
	if (set.n != 1) {
		if (spec)
			error("one policy expected, not '%s'", spec);
		else
			error("the policy index has %zu default policies: say "
			      "which with -p", set.n);
		policy_set_free(&set);
		return NULL;
	}
	p = set.v[0];
	free(set.v);
	return p;
}

void policy_set_free(struct policy_set *set)
{
	for (size_t i = 0; i < set->n; i++)
		policy_free(set->v[i]);
	free(set->v);
	memset(set, 0, sizeof(*set));
}
