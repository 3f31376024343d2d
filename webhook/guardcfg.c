/*
 * guardcfg.c - the guards of the config (guardcfg.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guardcfg.h"
#include "jsonout.h"
#include "text.h"

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
/* Where the NVIDIA container toolkit reads a device list from mounts. */
static const char *const default_mount_paths[] = {
	"/var/run/nvidia-container-devices",
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
	g->mount_paths = json_array();
	if (!g->writers || !g->allowed || !g->mount_paths) {
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
	for (i = 0; i < NELEM(default_mount_paths); i++)
		if (json_array_append_new(g->mount_paths,
					  json_string(default_mount_paths[i])))
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
	json_decref(g->mount_paths);
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

/* A policy; strip only where the guard can remove what it finds. */
static int read_policy(struct reading *r, const char *path, const json_t *v,
		       bool strip, enum guard_policy *dst)
{
	size_t i;

	if (!json_is_string(v))
		return bad(r, "%s: expected a string, got %s", path,
			   jsonout_type_name(v));
	for (i = 0; i < NELEM(policies); i++) {
		if ((strip || i != GUARD_POLICY_STRIP) &&
		    !strcmp(json_string_value(v), policies[i])) {
			*dst = (enum guard_policy)i;
			return 0;
		}
	}
	return bad(r, "%s: \"%.64s\" is not one of \"deny\", %s\"warn\", \"off\"",
		   path, json_string_value(v), strip ? "\"strip\", " : "");
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

static int read_writers(struct reading *r, const char *path, const json_t *v,
			struct guards *g)
{
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

static int read_allowed(struct reading *r, const char *path, const json_t *v,
			struct guards *g)
{
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

/*
 * volumeMounts.paths: absolute paths, kept in their normal form (the form
 * a mount's path is compared in).
 */
static int read_mount_paths(struct reading *r, const char *path,
			    const json_t *v, struct guards *g)
{
	const char **texts;
	json_t *paths;
	size_t i, n;

	if (read_strings(r, path, v, &texts))
		return -1;
	n = json_array_size(v);
	paths = json_array();
	for (i = 0; paths && i < n; i++) {
		size_t len = strlen(texts[i]);
		char *clean;

		if (texts[i][0] != '/') {
			bad(r, "%s[%zu]: \"%.64s\" is not an absolute path",
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
		return bad(r, "out of memory");
	json_decref(g->mount_paths);
	g->mount_paths = paths;
	return 0;
}

static int read_annotation_policy(struct reading *r, const char *path,
				  const json_t *v, struct guards *g)
{
	return read_policy(r, path, v, true, &g->annotation_policy);
}

static int read_keys(struct reading *r, const char *path, const json_t *v,
		     struct guards *g)
{
	return read_patterns(r, path, v, &g->keys);
}

static int read_env_policy(struct reading *r, const char *path,
			   const json_t *v, struct guards *g)
{
	return read_policy(r, path, v, true, &g->env_policy);
}

static int read_names(struct reading *r, const char *path, const json_t *v,
		      struct guards *g)
{
	return read_patterns(r, path, v, &g->names);
}

/* A mount cannot be removed: the pod would not start.  No strip. */
static int read_mount_policy(struct reading *r, const char *path,
			     const json_t *v, struct guards *g)
{
	return read_policy(r, path, v, false, &g->mount_policy);
}

/* One key of a guard's object: its reader and its GUARD_GIVEN_* bit. */
struct key_reader {
	const char *key;
	int (*read)(struct reading *r, const char *path, const json_t *v,
		    struct guards *g);
	unsigned given;
};

/* The guards: each key of `guards` and the keys of its object. */
static const struct {
	const char *key;
	struct key_reader keys[4]; /* ended by a NULL key */
} sections[] = {
	{ "schedulerAnnotations", {
		{ "policy", read_annotation_policy,
		  GUARD_GIVEN_ANNOTATION_POLICY },
		{ "keys", read_keys, GUARD_GIVEN_KEYS },
		{ "writers", read_writers, GUARD_GIVEN_WRITERS },
		{ NULL, NULL, 0 } } },
	{ "env", {
		{ "policy", read_env_policy, GUARD_GIVEN_ENV_POLICY },
		{ "names", read_names, GUARD_GIVEN_NAMES },
		{ "allowedValues", read_allowed, GUARD_GIVEN_ALLOWED },
		{ NULL, NULL, 0 } } },
	{ "volumeMounts", {
		{ "policy", read_mount_policy, GUARD_GIVEN_MOUNT_POLICY },
		{ "paths", read_mount_paths, GUARD_GIVEN_MOUNT_PATHS },
		{ NULL, NULL, 0 } } },
};

/*
 * Reads the object v, guards.<section>, by the readers of keys: every key
 * optional, null as absent, no other key.
 */
static int read_section(struct reading *r, const char *section,
			const struct key_reader *keys, const json_t *v,
			struct guards *g)
{
	char path[96];
	const char *key;
	json_t *item;
	size_t k;

	snprintf(path, sizeof(path), "guards.%s", section);
	if (!json_is_object(v))
		return bad(r, "%s: expected an object, got %s", path,
			   jsonout_type_name(v));
	json_object_foreach((json_t *)v, key, item) {
		char sub[160];

		for (k = 0; keys[k].key && strcmp(key, keys[k].key); k++)
			;
		if (!keys[k].key)
			return bad(r, "unknown key \"%s.%.64s\"", path, key);
		if (json_is_null(item))
			continue;
		snprintf(sub, sizeof(sub), "%s.%s", path, key);
		if (keys[k].read(r, sub, item, g))
			return -1;
		g->given |= keys[k].given;
	}
	return 0;
}

int guardcfg_read(struct guards *g, const json_t *v, const char *where,
		  char *err, size_t errlen)
{
	struct reading r = { where, err, errlen };
	const char *key;
	json_t *item;
	size_t i;

	if (!json_is_object(v))
		return bad(&r, "guards: expected an object, got %s",
			   jsonout_type_name(v));
	json_object_foreach((json_t *)v, key, item) {
		for (i = 0; i < NELEM(sections) && strcmp(key, sections[i].key);
		     i++)
			;
		if (i == NELEM(sections))
			return bad(&r, "unknown key \"guards.%.64s\"", key);
		if (!json_is_null(item) &&
		    read_section(&r, sections[i].key, sections[i].keys, item,
				 g))
			return -1;
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
	if (src->given & GUARD_GIVEN_MOUNT_POLICY)
		dst->mount_policy = src->mount_policy;
	if (((src->given & GUARD_GIVEN_KEYS) &&
	     copy_patterns(&dst->keys, &src->keys)) ||
	    ((src->given & GUARD_GIVEN_NAMES) &&
	     copy_patterns(&dst->names, &src->names)) ||
	    ((src->given & GUARD_GIVEN_WRITERS) &&
	     copy_json(&dst->writers, src->writers)) ||
	    ((src->given & GUARD_GIVEN_MOUNT_PATHS) &&
	     copy_json(&dst->mount_paths, src->mount_paths)))
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
