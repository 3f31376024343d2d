/*
 * guardcfg.c - the guards of the config (guardcfg.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guardcfg.h"
#include "jsonout.h"

static const char *const default_keys[] = {
	"hami.io/vgpu-node", "hami.io/vgpu-time", "hami.io/bind-time",
	"hami.io/bind-phase", "hami.io/*-devices-to-allocate",
	"hami.io/*-allocated",
};
static const char *const default_writers[] = {
	"system:serviceaccount:kube-system:hami-scheduler",
	"system:serviceaccount:kube-system:hami-device-plugin",
};
/*
 * The env names guarded by default: NVIDIA_VISIBLE_DEVICES (read by the
 * container runtime) and every control variable HAMi-core reads
 * (src/libvgpu.c, src/multiprocess/multiprocess_memory_limit.c), plus
 * CUDA_DISABLE_CONTROL and CUDA_OVERSUBSCRIBE of HAMi's earlier releases.
 * Not guarded: LIBCUDA_LOG_LEVEL (logging only) and CUDA_VISIBLE_DEVICES
 * (chooses among the devices the container already sees).  The one list:
 * README and behaviour §2.1 copy it.
 */
static const char *const default_names[] = {
	"NVIDIA_VISIBLE_DEVICES", "CUDA_DEVICE_MEMORY_LIMIT",
	"CUDA_DEVICE_MEMORY_LIMIT_*", "CUDA_DEVICE_SM_LIMIT",
	"CUDA_DEVICE_SM_LIMIT_*", "CUDA_DEVICE_MEMORY_SHARED_CACHE",
	"CUDA_DISABLE_CONTROL", "CUDA_OVERSUBSCRIBE", "CUDA_TASK_PRIORITY",
	"GPU_CORE_UTILIZATION_POLICY", "ACTIVE_OOM_KILLER", "CUDA_REDIRECT",
	"RECORD_KERNEL_INTERVAL",
};
/* Groups every requester (or every service account) is in. */
static const char *const refused_groups[] = {
	"group:system:authenticated", "group:system:unauthenticated",
	"group:system:serviceaccounts",
};
static const char *const policies[] = { "deny", "strip", "warn", "off" };

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

const char *guard_policy_name(enum guard_policy policy)
{
	return (unsigned)policy < NELEM(policies) ? policies[policy] : "?";
}

int guardcfg_init_empty(struct guards *g)
{
	memset(g, 0, sizeof(*g));
	g->writers = json_array();
	g->allowed = json_object();
	if (!g->writers || !g->allowed) {
		guardcfg_release(g);
		return -1;
	}
	return 0;
}

int guardcfg_init(struct guards *g)
{
	size_t i;

	if (guardcfg_init_empty(g))
		return -1;
	for (i = 0; i < NELEM(default_writers); i++)
		if (json_array_append_new(g->writers,
					  json_string(default_writers[i])))
			goto fail;
	if (json_object_set_new(g->allowed, "NVIDIA_VISIBLE_DEVICES",
				json_pack("[s, s]", "none", "void")) ||
	    pattern_set_init(&g->keys, default_keys, NELEM(default_keys)) ||
	    pattern_set_init(&g->names, default_names, NELEM(default_names)) ||
	    pattern_set_init(&g->allowed_names,
			     (const char *const[]){ "NVIDIA_VISIBLE_DEVICES" },
			     1))
		goto fail;
	return 0;
fail:
	guardcfg_release(g);
	return -1;
}

void guardcfg_release(struct guards *g)
{
	pattern_set_release(&g->keys);
	pattern_set_release(&g->names);
	pattern_set_release(&g->allowed_names);
	json_decref(g->writers);
	json_decref(g->allowed);
	memset(g, 0, sizeof(*g));
}

/* The state of one guardcfg_read(). */
struct reading {
	const char *where;
	char *err;
	size_t errlen;
};

static int bad(struct reading *r, const char *fmt, ...) COMPILER_PRINTF(2, 3);

/* "<where>: <message>" into r->err.  Returns -1. */
static int bad(struct reading *r, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(r->err, r->errlen, "%s: %s", r->where, msg);
	return -1;
}

/* Whether v is a string without NUL bytes. */
static bool plain_string(const json_t *v)
{
	return json_is_string(v) &&
	       strlen(json_string_value(v)) == json_string_length(v);
}

static int read_policy(struct reading *r, const char *path, const json_t *v,
		       enum guard_policy *dst)
{
	size_t i;

	if (!json_is_string(v))
		return bad(r, "%s: expected a string, got %s", path,
			   jsonout_type_name(v));
	for (i = 0; i < NELEM(policies); i++) {
		if (!strcmp(json_string_value(v), policies[i])) {
			*dst = (enum guard_policy)i;
			return 0;
		}
	}
	return bad(r, "%s: \"%.64s\" is not one of \"deny\", \"strip\", \"warn\", \"off\"",
		   path, json_string_value(v));
}

/*
 * Checks that v is an array of non-empty strings without NUL bytes and
 * fills texts[0..n) with them (borrowed from v).  *texts is malloc'ed.
 */
static int read_strings(struct reading *r, const char *path, const json_t *v,
			const char ***texts)
{
	size_t i, n = json_array_size(v);
	json_t *item;

	if (!json_is_array(v))
		return bad(r, "%s: expected an array, got %s", path,
			   jsonout_type_name(v));
	*texts = calloc(n ? n : 1, sizeof(**texts));
	if (!*texts)
		return bad(r, "out of memory");
	json_array_foreach(v, i, item) {
		if (!plain_string(item) || !json_string_length(item)) {
			free(*texts);
			*texts = NULL;
			return bad(r, "%s[%zu]: expected a non-empty string, got %s",
				   path, i,
				   json_is_string(item) ? "\"\" or a NUL byte"
							: jsonout_type_name(item));
		}
		(*texts)[i] = json_string_value(item);
	}
	return 0;
}

/* Reads a pattern list into *dst (replaced only on success). */
static int read_patterns(struct reading *r, const char *path, const json_t *v,
			 struct pattern_set *dst)
{
	struct pattern_set set;
	const char **texts;

	if (read_strings(r, path, v, &texts))
		return -1;
	if (pattern_set_init(&set, texts, json_array_size(v))) {
		free(texts);
		return bad(r, "out of memory");
	}
	free(texts);
	pattern_set_release(dst);
	*dst = set;
	return 0;
}

static int read_writers(struct reading *r, const json_t *v, struct guards *g)
{
	const char *path = "guards.schedulerAnnotations.writers";
	const char **texts;
	size_t i, j, n;

	if (read_strings(r, path, v, &texts))
		return -1;
	n = json_array_size(v);
	for (i = 0; i < n; i++) {
		for (j = 0; j < NELEM(refused_groups); j++) {
			if (strcmp(texts[i], refused_groups[j]))
				continue;
			free(texts);
			return bad(r, "%s[%zu]: \"%s\" holds every tenant and cannot be a writer",
				   path, i, refused_groups[j]);
		}
		if (!strcmp(texts[i], "group:")) {
			free(texts);
			return bad(r, "%s[%zu]: \"group:\" names no group",
				   path, i);
		}
	}
	free(texts);
	json_decref(g->writers);
	g->writers = json_deep_copy(v);
	return g->writers ? 0 : bad(r, "out of memory");
}

static int read_allowed(struct reading *r, const json_t *v, struct guards *g)
{
	const char *path = "guards.env.allowedValues";
	struct pattern_set set;
	const char **texts;
	const char *key;
	json_t *item;
	size_t n = 0;

	if (!json_is_object(v))
		return bad(r, "%s: expected an object, got %s", path,
			   jsonout_type_name(v));
	texts = calloc(json_object_size(v) + 1, sizeof(*texts));
	if (!texts)
		return bad(r, "out of memory");
	json_object_foreach((json_t *)v, key, item) {
		const char **values;
		char sub[160];

		snprintf(sub, sizeof(sub), "%s[\"%.64s\"]", path, key);
		if (!key[0] || read_strings(r, sub, item, &values)) {
			if (!key[0])
				bad(r, "%s: a key is empty", path);
			free(texts);
			return -1;
		}
		free(values);
		texts[n++] = key;
	}
	if (pattern_set_init(&set, texts, n)) {
		free(texts);
		return bad(r, "out of memory");
	}
	free(texts);
	pattern_set_release(&g->allowed_names);
	g->allowed_names = set;
	json_decref(g->allowed);
	g->allowed = json_deep_copy(v);
	return g->allowed ? 0 : bad(r, "out of memory");
}

static int unknown(struct reading *r, const char *path, const char *key)
{
	return bad(r, "unknown key \"%s.%.64s\"", path, key);
}

static int read_annotations(struct reading *r, const json_t *v,
			    struct guards *g)
{
	const char *path = "guards.schedulerAnnotations";
	const char *key;
	json_t *item;

	if (!json_is_object(v))
		return bad(r, "%s: expected an object, got %s", path,
			   jsonout_type_name(v));
	json_object_foreach((json_t *)v, key, item) {
		if (json_is_null(item) &&
		    (!strcmp(key, "policy") || !strcmp(key, "keys") ||
		     !strcmp(key, "writers")))
			continue;
		if (!strcmp(key, "policy")) {
			if (read_policy(r, "guards.schedulerAnnotations.policy",
					item, &g->annotation_policy))
				return -1;
			g->given |= GUARD_GIVEN_ANNOTATION_POLICY;
		} else if (!strcmp(key, "keys")) {
			if (read_patterns(r, "guards.schedulerAnnotations.keys",
					  item, &g->keys))
				return -1;
			g->given |= GUARD_GIVEN_KEYS;
		} else if (!strcmp(key, "writers")) {
			if (read_writers(r, item, g))
				return -1;
			g->given |= GUARD_GIVEN_WRITERS;
		} else {
			return unknown(r, path, key);
		}
	}
	return 0;
}

static int read_env(struct reading *r, const json_t *v, struct guards *g)
{
	const char *path = "guards.env";
	const char *key;
	json_t *item;

	if (!json_is_object(v))
		return bad(r, "%s: expected an object, got %s", path,
			   jsonout_type_name(v));
	json_object_foreach((json_t *)v, key, item) {
		if (json_is_null(item) &&
		    (!strcmp(key, "policy") || !strcmp(key, "names") ||
		     !strcmp(key, "allowedValues")))
			continue;
		if (!strcmp(key, "policy")) {
			if (read_policy(r, "guards.env.policy", item,
					&g->env_policy))
				return -1;
			g->given |= GUARD_GIVEN_ENV_POLICY;
		} else if (!strcmp(key, "names")) {
			if (read_patterns(r, "guards.env.names", item,
					  &g->names))
				return -1;
			g->given |= GUARD_GIVEN_NAMES;
		} else if (!strcmp(key, "allowedValues")) {
			if (read_allowed(r, item, g))
				return -1;
			g->given |= GUARD_GIVEN_ALLOWED;
		} else {
			return unknown(r, path, key);
		}
	}
	return 0;
}

int guardcfg_read(struct guards *g, const json_t *v, const char *where,
		  char *err, size_t errlen)
{
	struct reading r = { where, err, errlen };
	const char *key;
	json_t *item;

	if (!json_is_object(v))
		return bad(&r, "guards: expected an object, got %s",
			   jsonout_type_name(v));
	json_object_foreach((json_t *)v, key, item) {
		if (json_is_null(item) &&
		    (!strcmp(key, "schedulerAnnotations") ||
		     !strcmp(key, "env")))
			continue;
		if (!strcmp(key, "schedulerAnnotations")) {
			if (read_annotations(&r, item, g))
				return -1;
		} else if (!strcmp(key, "env")) {
			if (read_env(&r, item, g))
				return -1;
		} else {
			return unknown(&r, "guards", key);
		}
	}
	return 0;
}

/* Replaces *dst with a copy of src.  Returns 0 or -1 (OOM). */
static int copy_patterns(struct pattern_set *dst, const struct pattern_set *src)
{
	struct pattern_set set;

	if (pattern_set_copy(&set, src))
		return -1;
	pattern_set_release(dst);
	*dst = set;
	return 0;
}

/* Replaces *dst with a deep copy of src.  Returns 0 or -1 (OOM). */
static int copy_json(json_t **dst, const json_t *src)
{
	json_t *copy = json_deep_copy(src);

	if (!copy)
		return -1;
	json_decref(*dst);
	*dst = copy;
	return 0;
}

int guardcfg_merge(struct guards *dst, const struct guards *src)
{
	if (src->given & GUARD_GIVEN_ANNOTATION_POLICY)
		dst->annotation_policy = src->annotation_policy;
	if (src->given & GUARD_GIVEN_ENV_POLICY)
		dst->env_policy = src->env_policy;
	if (((src->given & GUARD_GIVEN_KEYS) &&
	     copy_patterns(&dst->keys, &src->keys)) ||
	    ((src->given & GUARD_GIVEN_NAMES) &&
	     copy_patterns(&dst->names, &src->names)) ||
	    ((src->given & GUARD_GIVEN_WRITERS) &&
	     copy_json(&dst->writers, src->writers)))
		return -1;
	if (src->given & GUARD_GIVEN_ALLOWED) {
		struct pattern_set set;
		json_t *copy = json_deep_copy(src->allowed);

		if (!copy || pattern_set_copy(&set, &src->allowed_names)) {
			json_decref(copy);
			return -1;
		}
		pattern_set_release(&dst->allowed_names);
		dst->allowed_names = set;
		json_decref(dst->allowed);
		dst->allowed = copy;
	}
	dst->given |= src->given;
	return 0;
}

bool guardcfg_allowed(const struct guards *g, const char *name, size_t len,
		      const char *value, size_t value_len)
{
	size_t i, j;
	json_t *v;

	for (i = 0; i < g->allowed_names.n; i++) {
		const struct pattern *p = &g->allowed_names.items[i];

		if (!pattern_matchn(p, name, len))
			continue;
		json_array_foreach(json_object_get(g->allowed, p->text), j, v)
			if (json_string_length(v) == value_len &&
			    !memcmp(json_string_value(v), value, value_len))
				return true;
	}
	return false;
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
