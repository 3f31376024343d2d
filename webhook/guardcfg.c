/*
 * guardcfg.c - the guards of the config (guardcfg.h): the types of their
 * values, and what the guards ask of them.  Their built-in values are in
 * config.c's table of keys.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guardcfg.h"
#include "jsonout.h"
#include "text.h"

const char *const guardcfg_policies[] = { "deny", "strip", "warn", "off",
					  NULL };
const int guardcfg_policy_values[] = { GUARD_POLICY_DENY, GUARD_POLICY_STRIP,
				       GUARD_POLICY_WARN, GUARD_POLICY_OFF };
/* A mount cannot be removed: the pod would not start.  No strip. */
const char *const guardcfg_policies_no_strip[] = { "deny", "warn", "off",
						   NULL };
const int guardcfg_policy_values_no_strip[] = { GUARD_POLICY_DENY,
						GUARD_POLICY_WARN,
						GUARD_POLICY_OFF };

/* Groups every requester (or every service account) is in. */
static const char *const refused_groups[] = {
	"group:system:authenticated", "group:system:unauthenticated",
	"group:system:serviceaccounts",
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* schedulerAnnotations.writers: user names, or group:NAME. */
static int writers_read(struct cfgread *r, const struct cfgkey *k,
			const char *path, const json_t *v, void *base)
{
	const char **texts;
	size_t i, j, n;

	if (cfgkey_read_strings(r, path, v, &texts))
		return -1;
	n = json_array_size(v);
	for (i = 0; i < n; i++) {
		for (j = 0; j < NELEM(refused_groups); j++) {
			if (strcmp(texts[i], refused_groups[j]))
				continue;
			free(texts);
			return cfgkey_fail(r, "%s[%zu]: \"%s\" holds every tenant and cannot be a writer",
					   path, i, refused_groups[j]);
		}
		if (!strcmp(texts[i], "group:")) {
			free(texts);
			return cfgkey_fail(r, "%s[%zu]: \"group:\" names no group",
					   path, i);
		}
	}
	free(texts);
	if (cfgkey_copy_json(cfgkey_field(k, base), v))
		return cfgkey_fail(r, "out of memory");
	return 0;
}

const struct cfgkey_type guardcfg_writers = {
	"array", writers_read, cfgkey_json_copy, cfgkey_json_release,
	cfgkey_json_dump
};

/* env.allowedValues: an object of name patterns and lists of values. */
static int allowed_read(struct cfgread *r, const struct cfgkey *k,
			const char *path, const json_t *v, void *base)
{
	struct guard_allowed *a = cfgkey_field(k, base);
	struct pattern_set set;
	const char **texts;
	const char *key;
	json_t *item, *copy;
	size_t n = 0;

	if (!json_is_object(v))
		return cfgkey_bad_type(r, path, "an object", v);
	texts = calloc(json_object_size(v) + 1, sizeof(*texts));
	if (!texts)
		return cfgkey_fail(r, "out of memory");
	json_object_foreach((json_t *)v, key, item) {
		const char **values;
		char sub[160];

		snprintf(sub, sizeof(sub), "%s[\"%.64s\"]", path, key);
		if (!key[0] || cfgkey_read_strings(r, sub, item, &values)) {
			if (!key[0])
				cfgkey_fail(r, "%s: a key is empty", path);
			free(texts);
			return -1;
		}
		free(values);
		texts[n++] = key;
	}
	if (pattern_set_init(&set, texts, n)) {
		free(texts);
		return cfgkey_fail(r, "out of memory");
	}
	free(texts);
	copy = json_deep_copy(v);
	if (!copy) {
		pattern_set_release(&set);
		return cfgkey_fail(r, "out of memory");
	}
	pattern_set_release(&a->names);
	a->names = set;
	json_decref(a->values);
	a->values = copy;
	return 0;
}

static int allowed_copy(const struct cfgkey *k, void *dst, const void *src)
{
	const struct guard_allowed *s = cfgkey_field(k, src);
	struct guard_allowed *d = cfgkey_field(k, dst);
	struct pattern_set set;

	if (pattern_set_copy(&set, &s->names))
		return -1;
	if (cfgkey_copy_json(&d->values, s->values)) {
		pattern_set_release(&set);
		return -1;
	}
	pattern_set_release(&d->names);
	d->names = set;
	return 0;
}

static void allowed_release(const struct cfgkey *k, void *base)
{
	struct guard_allowed *a = cfgkey_field(k, base);

	pattern_set_release(&a->names);
	json_decref(a->values);
	a->values = NULL;
}

static json_t *allowed_dump(const struct cfgkey *k, const void *base)
{
	const struct guard_allowed *a = cfgkey_field(k, base);

	return json_deep_copy(a->values);
}

const struct cfgkey_type guardcfg_allowed_values = {
	"object", allowed_read, allowed_copy, allowed_release, allowed_dump
};

/*
 * volumeMounts.paths: absolute paths, kept in their normal form (the form
 * a mount's path is compared in).
 */
static int paths_read(struct cfgread *r, const struct cfgkey *k,
		      const char *path, const json_t *v, void *base)
{
	json_t **dst = cfgkey_field(k, base), *paths;
	const char **texts;
	size_t i, n;

	if (cfgkey_read_strings(r, path, v, &texts))
		return -1;
	n = json_array_size(v);
	paths = json_array();
	for (i = 0; paths && i < n; i++) {
		size_t len = strlen(texts[i]);
		char *clean;

		if (texts[i][0] != '/') {
			cfgkey_fail(r, "%s[%zu]: \"%.64s\" is not an absolute path",
				    path, i, texts[i]);
			json_decref(paths);
			free(texts);
			return -1;
		}
		clean = malloc(len + 2);
		if (!clean || json_array_append_new(paths, json_stringn(clean,
				text_clean_path(clean, texts[i], len)))) {
			json_decref(paths);
			paths = NULL;
		}
		free(clean);
	}
	free(texts);
	if (!paths)
		return cfgkey_fail(r, "out of memory");
	json_decref(*dst);
	*dst = paths;
	return 0;
}

const struct cfgkey_type guardcfg_paths = {
	"array", paths_read, cfgkey_json_copy, cfgkey_json_release,
	cfgkey_json_dump
};

bool guardcfg_allowed(const struct guards *g, const char *name, size_t len,
		      const char *value, size_t value_len)
{
	size_t i, j;
	json_t *v;

	for (i = 0; i < g->allowed.names.n; i++) {
		const struct pattern *p = &g->allowed.names.items[i];

		if (!pattern_matchn(p, name, len))
			continue;
		json_array_foreach(json_object_get(g->allowed.values, p->text),
				   j, v)
			if (json_string_length(v) == value_len &&
			    !memcmp(json_string_value(v), value, value_len))
				return true;
	}
	return false;
}

const char *guardcfg_mount_path(const struct guards *g, const char *s,
				size_t len)
{
	size_t i;
	json_t *p;

	json_array_foreach(g->mount_paths, i, p) {
		size_t n = json_string_length(p);

		if (n <= len && !memcmp(s, json_string_value(p), n))
			return json_string_value(p);
	}
	return NULL;
}

bool guardcfg_is_writer(const struct guards *g, const char *username,
			const json_t *groups)
{
	size_t i, k;
	json_t *w, *group;

	json_array_foreach(g->writers, i, w) {
		const char *s = json_string_value(w);

		if (strncmp(s, "group:", 6)) {
			if (!strcmp(s, username))
				return true;
			continue;
		}
		json_array_foreach(groups, k, group)
			if (json_is_string(group) &&
			    !strcmp(json_string_value(group), s + 6) &&
			    strlen(s + 6) == json_string_length(group))
				return true;
	}
	return false;
}
