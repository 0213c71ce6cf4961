/*
 * The original's JSON policies (POLICY_DEEP_1 to _4), read as it read
 * them: "components" are the columns, "rules" are tried in order, an
 * empty pattern is a wildcard.
 */
#include "policy_load.h"

#include <string.h>

#include "json.h"
#include "util.h"

void policy_parse_json(struct loader *ld, const char *text, size_t len)
{
	struct json_value *doc = json_parse(text, len, ld->name);
	const struct json_value *comps, *rules;
	static const struct {
		const char *key;
		int field;
	} keys[] = {
		{ "stackfunction", COND_STACK },
		{ "stacktrace", COND_STACK },
		{ "stacksourcefile", COND_SOURCE },
		{ "typeinfo", COND_TYPE },
		{ "mappedpathname", COND_PATH },
		{ "mappedpermission", COND_PERM },
	};

	if (!doc) {
		ld->errors++;
		return;
	}
	comps = json_get(doc, "components");
	rules = json_get(doc, "rules");
	if (!comps || comps->type != JSON_ARRAY || !rules ||
	    rules->type != JSON_ARRAY) {
		lerr(ld, doc->line, doc->col,
		     "expected an object with \"components\" and \"rules\" "
		     "arrays");
		json_free(doc);
		return;
	}
	for (size_t i = 0; i < comps->n; i++) {
		const struct json_value *c = comps->items[i];

		if (c->type != JSON_STRING)
			lerr(ld, c->line, c->col, "component is not a string");
		else
			add_column(ld, c->string, c->line, c->col);
	}
	for (size_t i = 0; i < rules->n; i++) {
		const struct json_value *o = rules->items[i];
		const char *name = json_get_string(o, "name");
		const char *alloc = json_get_string(o, "allocator");
		const struct json_value *shared = json_get(o, "sharedwith");
		enum rule_alloc a = RULE_NALLOC;
		bool have[COND_NFIELDS] = { false };
		struct rule *r;

		if (!name || !alloc) {
			lerr(ld, o->line, o->col,
			     "rule needs \"name\" and \"allocator\" strings");
			continue;
		}
		for (int k = 0; k < RULE_NALLOC; k++)
			if (!strcmp(alloc, rule_alloc_name(k)))
				a = (enum rule_alloc)k;
		/* Other allocators ("optional") never matched anything. */
		if (a == RULE_NALLOC) {
			if (strcmp(alloc, "optional"))
				warning("%s:%lu:%lu: unknown allocator '%s': "
					"the rule never matches, as in the "
					"original", ld->name, o->line, o->col,
					alloc);
			continue;
		}
		for (size_t k = 0; k < o->n; k++) {
			static const char *const known[] = {
				"name", "allocator", "stackfunction",
				"stacktrace", "stacksourcefile", "typeinfo",
				"mappedpathname", "mappedpermission",
				"sharedwith",
			};
			size_t j;

			for (j = 0; j < ARRAY_SIZE(known); j++)
				if (!strcmp(o->keys[k], known[j]))
					break;
			if (j == ARRAY_SIZE(known))
				warning("%s:%lu:%lu: unknown key \"%s\" "
					"ignored", ld->name,
					o->items[k]->line, o->items[k]->col,
					o->keys[k]);
		}
		r = add_rule(ld, name, o->col, a, o->line);
		for (size_t k = 0; k < ARRAY_SIZE(keys); k++) {
			const struct json_value *v = json_get(o, keys[k].key);
			int f = keys[k].field;

			/* An empty pattern was a wildcard; "stackfunction"
			 * wins over "stacktrace". */
			if (!v || v->type != JSON_STRING || !v->string_len ||
			    have[f])
				continue;
			have[f] = true;
			if (!field_allowed(a, f)) {
				warning("%s:%lu:%lu: \"%s\" does not apply to "
					"%s rules; ignored, as the original "
					"did", ld->name, v->line, v->col,
					keys[k].key, rule_alloc_name(a));
				continue;
			}
			r->cond[f] = compile_pattern(ld, v->string,
						     v->string_len, v->line,
						     v->col + 1, NULL);
			if (!r->cond[f])
				r->broken = true;
		}
		if (shared && shared->type == JSON_ARRAY && shared->n &&
		    a == RULE_MALLOC) {
			warning("%s:%lu:%lu: \"sharedwith\" does not apply to "
				"malloc rules; ignored, as the original did",
				ld->name, shared->line, shared->col);
		} else if (shared && shared->type == JSON_ARRAY && shared->n) {
			for (size_t k = 0; k < shared->n; k++) {
				const struct json_value *s = shared->items[k];

				if (s->type == JSON_STRING &&
				    !strcmp(s->string, "private"))
					r->sharing |= SHARE_PRIVATE;
				else if (s->type == JSON_STRING &&
					 !strcmp(s->string, "group"))
					r->sharing |= SHARE_GROUP;
				else if (s->type == JSON_STRING &&
					 !strcmp(s->string, "others"))
					r->sharing |= SHARE_OTHERS;
				else
					lerr(ld, s->line, s->col,
					     "unknown sharing (expected "
					     "private, group or others)");
			}
		}
	}
	json_free(doc);
}
