/*
 * config.c - built-in defaults, the JSON config file, the common flags.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "config.h"
#include "toleration.h"
#include "jsonout.h"
#include "text.h"

#define DEFAULT_SCHEDULER "hami-scheduler"

/* Replaces *dst with a copy of s; -1 when out of memory. */
static int set_string(char **dst, const char *s)
{
	char *copy = strdup(s);

	if (!copy)
		return -1;
	free(*dst);
	*dst = copy;
	return 0;
}

/* Points the family's borrowed strings at the device's own. */
static void device_link(struct device *d)
{
	int i;

	d->family.name = d->name;
	for (i = 0; i < VGPU_NRESOURCES; i++)
		d->family.resource[i] = d->resource[i];
}

static void device_release(struct device *d)
{
	int i;

	free(d->name);
	for (i = 0; i < VGPU_NRESOURCES; i++)
		free(d->resource[i]);
	free(d->runtime_class_name);
	free(d->gpu_core_policy);
	free(d->active_oom_killer);
	json_decref(d->tolerations);
	memset(d, 0, sizeof(*d));
}

/*
 * Fills d with name and the resource names resource[0..VGPU_NRESOURCES)
 * (NULL: all empty), empty strings elsewhere and no tolerations; -1 when
 * out of memory.
 */
static int device_init(struct device *d, const char *name,
		       const char *const *resource)
{
	int i;

	memset(d, 0, sizeof(*d));
	if (set_string(&d->name, name) ||
	    set_string(&d->runtime_class_name, "") ||
	    set_string(&d->gpu_core_policy, "") ||
	    set_string(&d->active_oom_killer, "") ||
	    !(d->tolerations = json_array()))
		goto fail;
	for (i = 0; i < VGPU_NRESOURCES; i++)
		if (set_string(&d->resource[i], resource ? resource[i] : ""))
			goto fail;
	device_link(d);
	return 0;
fail:
	device_release(d);
	return -1;
}

static void devices_free(struct device *devices, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		device_release(&devices[i]);
	free(devices);
}

/* The built-in NVIDIA family of docs/behaviour.md §2 (#s2-devices). */
static int device_init_nvidia(struct device *d)
{
	const struct vgpu_family *nv = &vgpu_family_nvidia;
	json_t *toleration;

	if (device_init(d, nv->name, nv->resource))
		return -1;
	d->family.default_gpu_num = nv->default_gpu_num;
	d->family.default_memory = nv->default_memory;
	d->family.default_cores = nv->default_cores;
	toleration = json_pack("{s:s, s:s, s:s}", "key", "nvidia.com/gpu",
			       "operator", "Exists", "effect", "NoSchedule");
	if (json_array_append_new(d->tolerations, toleration)) {
		device_release(d);
		return -1;
	}
	return 0;
}

int config_init(struct config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->force_overwrite_default_scheduler = true;
	cfg->privileged_policy = CONFIG_POLICY_DENY;
	cfg->node_name_policy = CONFIG_POLICY_DENY;
	if (set_string(&cfg->scheduler_name, DEFAULT_SCHEDULER) ||
	    set_string(&cfg->node_scheduler_policy, "") ||
	    set_string(&cfg->gpu_scheduler_policy, ""))
		goto fail;
	cfg->devices = calloc(1, sizeof(*cfg->devices));
	if (!cfg->devices || device_init_nvidia(&cfg->devices[0]))
		goto fail;
	cfg->ndevices = 1;
	if (guardcfg_init(&cfg->guards))
		goto fail;
	return 0;
fail:
	config_release(cfg);
	return -1;
}

static void profiles_free(struct profile *p, size_t n);

void config_release(struct config *cfg)
{
	profiles_free(cfg->profiles, cfg->nprofiles);
	json_decref(cfg->profiles_json);
	free(cfg->scheduler_name);
	free(cfg->node_scheduler_policy);
	free(cfg->gpu_scheduler_policy);
	devices_free(cfg->devices, cfg->ndevices);
	guardcfg_release(&cfg->guards);
	memset(cfg, 0, sizeof(*cfg));
}

/* ------------------------------------------------------------------------
 * The JSON file
 */

static int load_json(struct config *cfg, const char *path, json_t *root,
		     char *err, size_t errlen);

/* Where a value sits in the file, for messages: "devices[0].tolerations". */
struct where {
	const char *file;
	char *err;
	size_t errlen;
};

static int bad_type(struct where *w, const char *path, const char *want,
		    const json_t *v)
{
	text_errorf(w->err, w->errlen, "config %s: %s: expected %s, got %s",
		    w->file, path, want, jsonout_type_name(v));
	return -1;
}

static int read_string(struct where *w, const char *path, const json_t *v,
		       char **dst)
{
	if (!json_is_string(v))
		return bad_type(w, path, "a string", v);
	if (strlen(json_string_value(v)) != json_string_length(v)) {
		text_errorf(w->err, w->errlen,
			    "config %s: %s: contains a NUL byte", w->file,
			    path);
		return -1;
	}
	if (set_string(dst, json_string_value(v))) {
		text_errorf(w->err, w->errlen, "out of memory");
		return -1;
	}
	return 0;
}

static int read_bool(struct where *w, const char *path, const json_t *v,
		     bool *dst)
{
	if (!json_is_boolean(v))
		return bad_type(w, path, "a boolean", v);
	*dst = json_is_true(v);
	return 0;
}

static int read_int(struct where *w, const char *path, const json_t *v,
		    int64_t *dst)
{
	if (!json_is_integer(v))
		return bad_type(w, path, "an integer", v);
	*dst = json_integer_value(v);
	return 0;
}

/* One of a fixed set of strings; *index gets its position. */
static int read_choice(struct where *w, const char *path, const json_t *v,
		       const char *const *choices, size_t n, int *index)
{
	struct buf list = BUF_INIT;
	size_t i;

	if (!json_is_string(v))
		return bad_type(w, path, "a string", v);
	for (i = 0; i < n; i++) {
		if (!strcmp(json_string_value(v), choices[i])) {
			*index = (int)i;
			return 0;
		}
	}
	for (i = 0; i < n; i++)
		buf_addf(&list, "%s\"%s\"", i ? ", " : "", choices[i]);
	text_errorf(w->err, w->errlen,
		    "config %s: %s: \"%.64s\" is not one of %s", w->file, path,
		    json_string_value(v), buf_str(&list));
	buf_release(&list);
	return -1;
}

static int unknown_key(struct where *w, const char *path, const char *key)
{
	text_errorf(w->err, w->errlen, "config %s: unknown key \"%s%s%.64s\"",
		    w->file, path, path[0] ? "." : "", key);
	return -1;
}

static int missing_key(struct where *w, const char *path, const char *key)
{
	text_errorf(w->err, w->errlen,
		    "config %s: %s: missing required key \"%s\"", w->file, path,
		    key);
	return -1;
}

/*
 * Appends to out a copy of each toleration of the array v, each checked
 * as Kubernetes checks a pod's (toleration.h).  Returns 0, or -1 with the
 * message in w.
 */
static int read_tolerations(struct where *w, const char *path,
			    const json_t *v, json_t *out)
{
	const json_t *tol;
	size_t i;

	if (!json_is_array(v))
		return bad_type(w, path, "an array", v);
	json_array_foreach(v, i, tol) {
		char tpath[160], msg[512];
		json_t *copy;

		snprintf(tpath, sizeof(tpath), "%s[%zu]", path, i);
		if (toleration_check(tol, tpath, msg, sizeof(msg))) {
			text_errorf(w->err, w->errlen, "config %s: %s", w->file,
				    msg);
			return -1;
		}
		copy = toleration_copy(tol);
		if (!copy || json_array_append_new(out, copy)) {
			text_errorf(w->err, w->errlen, "out of memory");
			return -1;
		}
	}
	return 0;
}

static const char *const core_policies[] = { "", "default", "force",
					     "disable" };
static const char *const oom_killers[] = { "", "true", "false" };

/* Keys of a device that may be left out, or given as null. */
static bool is_optional_device_key(const char *key)
{
	static const char *const keys[] = {
		"resourceMemoryPercentageName", "resourceCoreName",
		"resourcePriorityName", "runtimeClassName", "gpuCorePolicy",
		"activeOOMKiller", "overwriteEnv"
	};
	size_t i;

	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (!strcmp(key, keys[i]))
			return true;
	return false;
}

/*
 * Reads devices[index] into d (which device_init() prepared empty): every
 * required key present, no unknown key, each value of its type; an
 * optional key given as null keeps its empty default.  Returns 0, or -1
 * with the message in w.
 */
/*
 * Reads key (one a profile may override too) of a device family into d.
 * Returns 0, -1 with the message in w, or 1 when key is not one of them.
 * *from is the DEVICE_FROM_PROFILE_* bit of the key, 0 for the others.
 */
static int read_device_default(struct where *w, const char *sub,
			       const char *key, const json_t *item,
			       struct device *d, unsigned *from)
{
	int choice;

	*from = 0;
	if (!strcmp(key, "defaultGPUNum")) {
		*from = DEVICE_FROM_PROFILE_GPU_NUM;
		return read_int(w, sub, item, &d->family.default_gpu_num);
	}
	if (!strcmp(key, "defaultMemory")) {
		*from = DEVICE_FROM_PROFILE_MEMORY;
		return read_int(w, sub, item, &d->family.default_memory);
	}
	if (!strcmp(key, "defaultCores")) {
		*from = DEVICE_FROM_PROFILE_CORES;
		return read_int(w, sub, item, &d->family.default_cores);
	}
	if (!strcmp(key, "tolerations")) {
		json_array_clear(d->tolerations);
		return read_tolerations(w, sub, item, d->tolerations);
	}
	if (!strcmp(key, "runtimeClassName"))
		return read_string(w, sub, item, &d->runtime_class_name);
	if (!strcmp(key, "gpuCorePolicy"))
		return read_choice(w, sub, item, core_policies, 4, &choice) ||
		       read_string(w, sub, item, &d->gpu_core_policy) ? -1 : 0;
	if (!strcmp(key, "activeOOMKiller"))
		return read_choice(w, sub, item, oom_killers, 3, &choice) ||
		       read_string(w, sub, item, &d->active_oom_killer) ? -1 : 0;
	return 1;
}

static int read_device(struct where *w, size_t index, const json_t *v,
		       struct device *d)
{
	static const char *const required[] = {
		"name", "resourceCountName", "resourceMemoryName",
		"defaultGPUNum", "defaultMemory", "defaultCores", "tolerations"
	};
	const json_t *item;
	const char *key;
	char path[32], sub[128];
	unsigned from;
	size_t i;
	int rc;

	snprintf(path, sizeof(path), "devices[%zu]", index);
	if (!json_is_object(v))
		return bad_type(w, path, "an object", v);
	for (i = 0; i < sizeof(required) / sizeof(required[0]); i++)
		if (!json_object_get(v, required[i]))
			return missing_key(w, path, required[i]);
	json_object_foreach((json_t *)v, key, item) {
		int res;

		snprintf(sub, sizeof(sub), "%s.%.64s", path, key);
		if (json_is_null(item) && is_optional_device_key(key))
			continue;
		for (res = 0; res < VGPU_NRESOURCES; res++)
			if (!strcmp(key, vgpu_resource_config_key(res)))
				break;
		if (res < VGPU_NRESOURCES) {
			if (read_string(w, sub, item, &d->resource[res]))
				return -1;
		} else if (!strcmp(key, "name")) {
			if (read_string(w, sub, item, &d->name))
				return -1;
		} else if (!strcmp(key, "overwriteEnv")) {
			if (read_bool(w, sub, item, &d->overwrite_env))
				return -1;
		} else if ((rc = read_device_default(w, sub, key, item, d,
						     &from)) < 0) {
			return -1;
		} else if (rc) {
			return unknown_key(w, path, key);
		}
	}
	device_link(d);
	return 0;
}

/*
 * Reads the devices list; it replaces cfg's list only when every entry is
 * valid.  Returns 0, or -1 with the message in w.
 */
static int read_devices(struct where *w, struct config *cfg, const json_t *v)
{
	struct device *devices;
	size_t n = json_array_size(v), i, ready = 0;

	if (!json_is_array(v))
		return bad_type(w, "devices", "an array", v);
	devices = calloc(n ? n : 1, sizeof(*devices));
	if (!devices)
		goto oom;
	for (i = 0; i < n; i++) {
		if (device_init(&devices[i], "", NULL))
			goto oom;
		ready++;
		if (read_device(w, i, json_array_get(v, i), &devices[i]))
			goto fail;
	}
	devices_free(cfg->devices, cfg->ndevices);
	cfg->devices = devices;
	cfg->ndevices = n;
	return 0;
oom:
	text_errorf(w->err, w->errlen, "out of memory");
fail:
	devices_free(devices, ready);
	return -1;
}

static const char *const actions[] = { "deny", "warn" };
static const char *const scheduler_policies[] = { "", "binpack", "spread" };

/* Reads schedulerPolicy.node and .gpu ("", binpack or spread). */
static int read_scheduler_policy(struct where *w, const char *prefix,
				 struct config *cfg, const json_t *v)
{
	const json_t *item;
	const char *key;
	char top[96], path[128];
	int choice;

	snprintf(top, sizeof(top), "%sschedulerPolicy", prefix);
	if (!json_is_object(v))
		return bad_type(w, top, "an object", v);
	json_object_foreach((json_t *)v, key, item) {
		char **dst;

		if (json_is_null(item) &&
		    (!strcmp(key, "node") || !strcmp(key, "gpu")))
			continue;
		if (!strcmp(key, "node")) {
			dst = &cfg->node_scheduler_policy;
		} else if (!strcmp(key, "gpu")) {
			dst = &cfg->gpu_scheduler_policy;
		} else {
			return unknown_key(w, top, key);
		}
		snprintf(path, sizeof(path), "%s.%s", top, key);
		if (read_choice(w, path, item, scheduler_policies, 3, &choice) ||
		    read_string(w, path, item, dst))
			return -1;
	}
	return 0;
}

/*
 * Reads `guards` as one level (guardcfg.h) and merges it over cfg's: a key
 * given replaces the built-in value whole.
 */
static int read_guards(struct where *w, struct config *cfg, const json_t *v)
{
	struct guards level;
	char where[300];
	int rc = -1;

	snprintf(where, sizeof(where), "config %s", w->file);
	if (guardcfg_init_empty(&level))
		return text_errorf(w->err, w->errlen, "out of memory");
	if (!guardcfg_read(&level, v, where, w->err, w->errlen)) {
		rc = guardcfg_merge(&cfg->guards, &level);
		if (rc)
			text_errorf(w->err, w->errlen, "out of memory");
	}
	guardcfg_release(&level);
	return rc;
}

static bool is_top_key(const char *key)
{
	static const char *const keys[] = {
		"schedulerName", "forceOverwriteDefaultScheduler",
		"privilegedPolicy", "nodeNamePolicy", "schedulerPolicy",
		"devices", "guards", "profiles"
	};
	size_t i;

	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (!strcmp(key, keys[i]))
			return true;
	return false;
}

int config_load_file(struct config *cfg, const char *path, char *err,
		     size_t errlen)
{
	json_error_t jerr;
	json_t *root;
	int rc;

	root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		text_errorf(err, errlen, "config %s: %s (line %d, column %d)",
			    path, jerr.text, jerr.line, jerr.column);
		return -1;
	}
	rc = load_json(cfg, path, root, err, errlen);
	json_decref(root);
	return rc;
}

int config_load_buffer(struct config *cfg, const char *path, const char *data,
		       size_t len, char *err, size_t errlen)
{
	json_error_t jerr;
	json_t *root;
	int rc;

	root = json_loadb(data, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		text_errorf(err, errlen, "config %s: %s (line %d, column %d)",
			    path, jerr.text, jerr.line, jerr.column);
		return -1;
	}
	rc = load_json(cfg, path, root, err, errlen);
	json_decref(root);
	return rc;
}

/* Reads the decoded file root (borrowed) over cfg. */
static int load_json(struct config *cfg, const char *path, json_t *root,
		     char *err, size_t errlen)
{
	struct where w = { path, err, errlen };
	const json_t *item;
	const char *key;
	int choice, rc = -1;

	if (!json_is_object(root)) {
		bad_type(&w, "(top level)", "an object", root);
		goto out;
	}
	json_object_foreach(root, key, item) {
		/* Every top-level key is optional: null keeps the default. */
		if (json_is_null(item) && is_top_key(key))
			continue;
		if (!strcmp(key, "schedulerName")) {
			if (read_string(&w, key, item, &cfg->scheduler_name))
				goto out;
		} else if (!strcmp(key, "forceOverwriteDefaultScheduler")) {
			if (read_bool(&w, key, item,
				      &cfg->force_overwrite_default_scheduler))
				goto out;
		} else if (!strcmp(key, "privilegedPolicy")) {
			if (read_choice(&w, key, item, actions, 2, &choice))
				goto out;
			cfg->privileged_policy = (enum config_policy)choice;
		} else if (!strcmp(key, "nodeNamePolicy")) {
			if (read_choice(&w, key, item, actions, 2, &choice))
				goto out;
			cfg->node_name_policy = (enum config_policy)choice;
		} else if (!strcmp(key, "schedulerPolicy")) {
			if (read_scheduler_policy(&w, "", cfg, item))
				goto out;
		} else if (!strcmp(key, "devices")) {
			if (read_devices(&w, cfg, item))
				goto out;
		} else if (!strcmp(key, "guards")) {
			if (read_guards(&w, cfg, item))
				goto out;
		} else if (!strcmp(key, "profiles")) {
			/* Read whole by config_check(), over the flags. */
			if (!json_is_array(item)) {
				bad_type(&w, key, "an array", item);
				goto out;
			}
			json_decref(cfg->profiles_json);
			cfg->profiles_json = json_incref((json_t *)item);
		} else {
			unknown_key(&w, "", key);
			goto out;
		}
	}
	rc = 0;
out:
	return rc;
}

/* ------------------------------------------------------------------------
 * Flags
 */

int config_set_scheduler_name(struct config *cfg, const char *what,
			      const char *value, char *err, size_t errlen)
{
	if (!vgpu_dns_subdomain_validn(value, strlen(value))) {
		text_errorf(err, errlen,
			    "%s: \"%.64s\" is not a DNS-1123 subdomain", what,
			    value);
		return -1;
	}
	if (set_string(&cfg->scheduler_name, value)) {
		text_errorf(err, errlen, "out of memory");
		return -1;
	}
	return 0;
}

/*
 * Sets the int64_t at offset in the first device family to value, a whole
 * number in 0..max.  Returns 0, or -1 with a message that begins with what.
 */
static int set_first_family(struct config *cfg, size_t offset, int64_t max,
			    const char *what, const char *value, char *err,
			    size_t errlen)
{
	uint64_t v;

	if (text_u64_parsen(value, strlen(value), (uint64_t)max, &v)) {
		text_errorf(err, errlen,
			    "%s: \"%.64s\" is not a whole number in 0..%lld",
			    what, value, (long long)max);
		return -1;
	}
	if (!cfg->ndevices) {
		text_errorf(err, errlen,
			    "%s: the configuration has no device family", what);
		return -1;
	}
	*(int64_t *)((char *)&cfg->devices[0].family + offset) = (int64_t)v;
	return 0;
}

int config_set_default_gpu_num(struct config *cfg, const char *what,
			       const char *value, char *err, size_t errlen)
{
	return set_first_family(cfg,
				offsetof(struct vgpu_family, default_gpu_num),
				VGPU_MAX_COUNT, what, value, err, errlen);
}

int config_set_default_memory(struct config *cfg, const char *what,
			      const char *value, char *err, size_t errlen)
{
	return set_first_family(cfg,
				offsetof(struct vgpu_family, default_memory),
				VGPU_MAX_MEMORY, what, value, err, errlen);
}

int config_set_default_cores(struct config *cfg, const char *what,
			     const char *value, char *err, size_t errlen)
{
	return set_first_family(cfg,
				offsetof(struct vgpu_family, default_cores),
				VGPU_MAX_CORES, what, value, err, errlen);
}

/* ------------------------------------------------------------------------
 * Validation
 */

/* Checks one device family (names, ranges, runtime class). */
static int check_device(const struct device *d, size_t index, char *err,
			size_t errlen)
{
	struct vgpu_error e;

	if (vgpu_family_check(&d->family, &e)) {
		text_errorf(err, errlen, "devices[%zu].%s", index, e.message);
		return -1;
	}
	if (d->runtime_class_name[0] &&
	    !vgpu_dns_subdomain_validn(d->runtime_class_name,
				       strlen(d->runtime_class_name))) {
		text_errorf(err, errlen,
			    "devices[%zu].runtimeClassName: \"%.64s\" is not a DNS-1123 subdomain",
			    index, d->runtime_class_name);
		return -1;
	}
	return 0;
}

/*
 * The webhook writes the scheduler-policy annotations itself (behaviour
 * §4.6) when schedulerPolicy asks for them: a guard on either would refuse
 * the webhook's own answer when the API server sends it again.
 */
static int check_owned_annotations(const struct config *cfg, char *err,
				   size_t errlen)
{
	const struct {
		const char *key;
		const char *setting;
		const char *value;
	} owned[] = {
		{ "hami.io/node-scheduler-policy", "schedulerPolicy.node",
		  cfg->node_scheduler_policy },
		{ "hami.io/gpu-scheduler-policy", "schedulerPolicy.gpu",
		  cfg->gpu_scheduler_policy },
	};
	size_t i;

	if (cfg->guards.annotation_policy == GUARD_POLICY_OFF)
		return 0;
	for (i = 0; i < sizeof(owned) / sizeof(owned[0]); i++) {
		if (!owned[i].value || !owned[i].value[0] ||
		    pattern_set_findn(&cfg->guards.keys, owned[i].key,
				      strlen(owned[i].key)) < 0)
			continue;
		return text_errorf(err, errlen,
				   "guards.schedulerAnnotations.keys: a pattern matches \"%s\", which the webhook writes (%s)",
				   owned[i].key, owned[i].setting);
	}
	return 0;
}

static int check_one(struct config *cfg, char *err, size_t errlen)
{
	size_t i, j;
	int r, s;

	if (check_owned_annotations(cfg, err, errlen))
		return -1;

	if (!vgpu_dns_subdomain_validn(cfg->scheduler_name,
				       strlen(cfg->scheduler_name))) {
		text_errorf(err, errlen,
			    "schedulerName: \"%.64s\" is not a non-empty DNS-1123 subdomain",
			    cfg->scheduler_name);
		return -1;
	}
	cfg->any_overwrite_env = false;
	for (i = 0; i < cfg->ndevices; i++) {
		const struct device *d = &cfg->devices[i];

		if (check_device(d, i, err, errlen))
			return -1;
		cfg->any_overwrite_env |= d->overwrite_env;
		for (j = 0; j < i; j++) {
			const struct device *o = &cfg->devices[j];

			if (!strcmp(d->name, o->name)) {
				text_errorf(err, errlen,
					    "devices[%zu].name: \"%.64s\" is also the name of devices[%zu]",
					    i, d->name, j);
				return -1;
			}
			for (r = 0; r < VGPU_NRESOURCES; r++) {
				for (s = 0; s < VGPU_NRESOURCES; s++) {
					if (!d->resource[r][0] ||
					    strcmp(d->resource[r],
						   o->resource[s]))
						continue;
					text_errorf(err, errlen,
						    "devices[%zu].%s: \"%.64s\" is also devices[%zu].%s",
						    i,
						    vgpu_resource_config_key(r),
						    d->resource[r], j,
						    vgpu_resource_config_key(s));
					return -1;
				}
			}
		}
	}
	return 0;
}

/* ------------------------------------------------------------------------
 * Profiles (behaviour §2.2)
 */

static void profiles_free(struct profile *p, size_t n)
{
	size_t i, j;

	for (i = 0; i < n; i++) {
		free(p[i].name);
		pattern_set_release(&p[i].namespaces);
		for (j = 0; j < p[i].nlabels; j++) {
			free(p[i].label_keys[j]);
			free(p[i].label_values[j]);
		}
		free(p[i].label_keys);
		free(p[i].label_values);
		config_release(&p[i].cfg);
	}
	free(p);
}

/* Copies the top level of src (not its profiles) into dst; -1 for OOM. */
static int config_copy(struct config *dst, const struct config *src)
{
	size_t i;
	int r;

	memset(dst, 0, sizeof(*dst));
	dst->force_overwrite_default_scheduler =
		src->force_overwrite_default_scheduler;
	dst->privileged_policy = src->privileged_policy;
	dst->node_name_policy = src->node_name_policy;
	dst->any_overwrite_env = src->any_overwrite_env;
	if (set_string(&dst->scheduler_name, src->scheduler_name) ||
	    set_string(&dst->node_scheduler_policy,
		       src->node_scheduler_policy) ||
	    set_string(&dst->gpu_scheduler_policy, src->gpu_scheduler_policy) ||
	    guardcfg_init(&dst->guards) ||
	    guardcfg_merge(&dst->guards, &src->guards))
		goto fail;
	dst->devices = calloc(src->ndevices ? src->ndevices : 1,
			      sizeof(*dst->devices));
	if (!dst->devices)
		goto fail;
	for (i = 0; i < src->ndevices; i++) {
		const struct device *s = &src->devices[i];
		struct device *d = &dst->devices[i];

		if (device_init(d, s->name, (const char *const *)s->resource))
			goto fail;
		dst->ndevices++;
		if (set_string(&d->runtime_class_name, s->runtime_class_name) ||
		    set_string(&d->gpu_core_policy, s->gpu_core_policy) ||
		    set_string(&d->active_oom_killer, s->active_oom_killer))
			goto fail;
		json_decref(d->tolerations);
		d->tolerations = json_deep_copy(s->tolerations);
		if (!d->tolerations)
			goto fail;
		d->overwrite_env = s->overwrite_env;
		d->family.default_gpu_num = s->family.default_gpu_num;
		d->family.default_memory = s->family.default_memory;
		d->family.default_cores = s->family.default_cores;
		for (r = 0; r < VGPU_NRESOURCES; r++)
			d->family.resource[r] = d->resource[r];
		d->family.name = d->name;
	}
	return 0;
fail:
	config_release(dst);
	return -1;
}

static int profile_refuse(struct where *w, const char *path, const char *why)
{
	text_errorf(w->err, w->errlen, "config %s: %s: %s", w->file, path,
		    why);
	return -1;
}

/* Whether key is in the NULL-terminated list keys. */
static bool in_list(const char *key, const char *const *keys)
{
	for (; *keys; keys++)
		if (!strcmp(key, *keys))
			return true;
	return false;
}

/*
 * Applies the override profiles[pi].devices[di] (v) to the family of cfg
 * it names.  by_labels: the profile selects by podLabels.
 */
static int read_profile_device(struct where *w, size_t pi, size_t di,
			       const json_t *v, struct config *cfg,
			       bool by_labels)
{
	static const char *const any[] = {
		"defaultGPUNum", "defaultMemory", "defaultCores", "tolerations",
		"runtimeClassName", "gpuCorePolicy", "activeOOMKiller", NULL
	};
	static const char *const labels[] = {
		"defaultGPUNum", "defaultMemory", "defaultCores", "tolerations",
		"runtimeClassName", NULL
	};
	const json_t *name = json_object_get(v, "name"), *item;
	struct device *d = NULL;
	const char *key;
	char path[64], sub[160];
	unsigned from;
	size_t i;

	snprintf(path, sizeof(path), "profiles[%zu].devices[%zu]", pi, di);
	if (!json_is_object(v))
		return bad_type(w, path, "an object", v);
	if (!name)
		return missing_key(w, path, "name");
	snprintf(sub, sizeof(sub), "%s.name", path);
	if (!json_is_string(name))
		return bad_type(w, sub, "a string", name);
	for (i = 0; i < cfg->ndevices; i++)
		if (!strcmp(cfg->devices[i].name, json_string_value(name)))
			d = &cfg->devices[i];
	if (!d) {
		text_errorf(w->err, w->errlen,
			    "config %s: %s: \"%.64s\" is not the name of a family of devices",
			    w->file, sub, json_string_value(name));
		return -1;
	}
	json_object_foreach((json_t *)v, key, item) {
		snprintf(sub, sizeof(sub), "%s.%.64s", path, key);
		if (!strcmp(key, "name"))
			continue;
		if (!in_list(key, any))
			return profile_refuse(w, sub,
					      "a profile may not override this key");
		if (by_labels && !in_list(key, labels))
			return profile_refuse(w, sub,
					      "a profile that selects by podLabels may not override this key");
		/* in_list(key, any) holds: every key of it is one of these. */
		if (read_device_default(w, sub, key, item, d, &from))
			return -1;
		d->from_profile |= from;
	}
	return 0;
}

/* Reads namespaces and podLabels of profiles[pi] (v) into p. */
static int read_selectors(struct where *w, size_t pi, const json_t *v,
			  struct profile *p)
{
	const json_t *ns = json_object_get(v, "namespaces");
	const json_t *labels = json_object_get(v, "podLabels"), *item;
	const char **texts = NULL, *key;
	char path[160];
	size_t i, n;
	int rc = -1;

	if (ns && !json_is_null(ns)) {
		snprintf(path, sizeof(path), "profiles[%zu].namespaces", pi);
		if (!json_is_array(ns))
			return bad_type(w, path, "an array", ns);
		n = json_array_size(ns);
		texts = calloc(n ? n : 1, sizeof(*texts));
		if (!texts)
			return text_errorf(w->err, w->errlen, "out of memory");
		json_array_foreach(ns, i, item) {
			snprintf(path, sizeof(path),
				 "profiles[%zu].namespaces[%zu]", pi, i);
			if (!json_is_string(item)) {
				bad_type(w, path, "a string", item);
				goto out;
			}
			texts[i] = json_string_value(item);
		}
		if (pattern_set_init(&p->namespaces, texts, n)) {
			text_errorf(w->err, w->errlen, "out of memory");
			goto out;
		}
		p->by_namespace = true;
	}
	if (labels && !json_is_null(labels)) {
		snprintf(path, sizeof(path), "profiles[%zu].podLabels", pi);
		if (!json_is_object(labels)) {
			bad_type(w, path, "an object", labels);
			goto out;
		}
		n = json_object_size(labels);
		p->label_keys = calloc(n ? n : 1, sizeof(char *));
		p->label_values = calloc(n ? n : 1, sizeof(char *));
		if (!p->label_keys || !p->label_values) {
			text_errorf(w->err, w->errlen, "out of memory");
			goto out;
		}
		json_object_foreach((json_t *)labels, key, item) {
			snprintf(path, sizeof(path),
				 "profiles[%zu].podLabels.%.64s", pi, key);
			if (read_string(w, path, item,
					&p->label_values[p->nlabels]) ||
			    set_string(&p->label_keys[p->nlabels], key)) {
				free(p->label_values[p->nlabels]);
				goto out;
			}
			p->nlabels++;
		}
		if (!n) {
			profile_refuse(w, path, "must hold at least one label");
			goto out;
		}
	}
	if (!p->by_namespace && !p->nlabels) {
		snprintf(path, sizeof(path), "profiles[%zu]", pi);
		profile_refuse(w, path,
			       "a profile needs \"namespaces\" or \"podLabels\"");
		goto out;
	}
	rc = 0;
out:
	free(texts);
	return rc;
}

/*
 * Reads profiles[pi] (v) into p: its selectors, and its effective config,
 * a copy of base with the profile's keys over it.
 */
static int read_profile(struct where *w, size_t pi, const json_t *v,
			const struct config *base, struct profile *p)
{
	static const char *const top[] = {
		"schedulerName", "forceOverwriteDefaultScheduler",
		"privilegedPolicy", "nodeNamePolicy", "schedulerPolicy",
		"guards", "devices", NULL
	};
	static const char *const labels[] = { "schedulerPolicy", "devices",
					      NULL };
	const json_t *name = json_object_get(v, "name"), *item;
	struct config *cfg = &p->cfg;
	const char *key;
	char path[64], sub[160], prefix[80];
	size_t i;
	int choice;

	snprintf(path, sizeof(path), "profiles[%zu]", pi);
	if (!json_is_object(v))
		return bad_type(w, path, "an object", v);
	if (!name)
		return missing_key(w, path, "name");
	snprintf(sub, sizeof(sub), "%s.name", path);
	if (read_string(w, sub, name, &p->name))
		return -1;
	if (!p->name[0])
		return profile_refuse(w, sub, "must not be empty");
	for (i = 0; i < pi; i++)
		if (!strcmp(base->profiles[i].name, p->name)) {
			text_errorf(w->err, w->errlen,
				    "config %s: %s: \"%.64s\" is also the name of profiles[%zu]",
				    w->file, sub, p->name, i);
			return -1;
		}
	if (read_selectors(w, pi, v, p))
		return -1;
	if (config_copy(cfg, base))
		return text_errorf(w->err, w->errlen, "out of memory");
	cfg->profile = p->name;
	snprintf(prefix, sizeof(prefix), "%s.", path);
	json_object_foreach((json_t *)v, key, item) {
		snprintf(sub, sizeof(sub), "%s.%.64s", path, key);
		if (!strcmp(key, "name") || !strcmp(key, "namespaces") ||
		    !strcmp(key, "podLabels"))
			continue;
		if (!in_list(key, top))
			return unknown_key(w, path, key);
		if (json_is_null(item))
			continue;
		if (p->nlabels && !in_list(key, labels))
			return profile_refuse(w, sub,
					      "a profile that selects by podLabels may not override this key");
		if (!strcmp(key, "schedulerName")) {
			if (read_string(w, sub, item, &cfg->scheduler_name))
				return -1;
		} else if (!strcmp(key, "forceOverwriteDefaultScheduler")) {
			if (read_bool(w, sub, item,
				      &cfg->force_overwrite_default_scheduler))
				return -1;
		} else if (!strcmp(key, "privilegedPolicy")) {
			if (read_choice(w, sub, item, actions, 2, &choice))
				return -1;
			cfg->privileged_policy = (enum config_policy)choice;
		} else if (!strcmp(key, "nodeNamePolicy")) {
			if (read_choice(w, sub, item, actions, 2, &choice))
				return -1;
			cfg->node_name_policy = (enum config_policy)choice;
		} else if (!strcmp(key, "schedulerPolicy")) {
			if (read_scheduler_policy(w, prefix, cfg, item))
				return -1;
		} else if (!strcmp(key, "guards")) {
			if (read_guards(w, cfg, item))
				return -1;
		} else {
			if (!json_is_array(item))
				return bad_type(w, sub, "an array", item);
			for (i = 0; i < json_array_size(item); i++)
				if (read_profile_device(w, pi, i,
							json_array_get(item, i),
							cfg, p->nlabels))
					return -1;
		}
	}
	return 0;
}

static int check_one(struct config *cfg, char *err, size_t errlen);

/*
 * Builds cfg->profiles from cfg->profiles_json over cfg as it stands.
 * Returns 0, or -1 with a message naming the key.
 */
static int build_profiles(struct config *cfg, char *err, size_t errlen)
{
	struct where w = { "-", err, errlen };
	size_t n = json_array_size(cfg->profiles_json), i;
	char msg[512];

	profiles_free(cfg->profiles, cfg->nprofiles);
	cfg->profiles = NULL;
	cfg->nprofiles = 0;
	if (!n)
		return 0;
	cfg->profiles = calloc(n, sizeof(*cfg->profiles));
	if (!cfg->profiles)
		return text_errorf(err, errlen, "out of memory");
	for (i = 0; i < n; i++) {
		struct profile *p = &cfg->profiles[i];

		cfg->nprofiles++;
		if (read_profile(&w, i, json_array_get(cfg->profiles_json, i),
				 cfg, p))
			goto fail;
		if (check_one(&p->cfg, msg, sizeof(msg))) {
			text_errorf(err, errlen, "profiles[%zu] (\"%.64s\"): %s",
				    i, p->name, msg);
			return -1;
		}
	}
	return 0;
fail:
	/* The readers name the file; the caller names it too. */
	if (!strncmp(err, "config -: ", 10))
		memmove(err, err + 10, strlen(err + 10) + 1);
	return -1;
}

int config_check(struct config *cfg, char *err, size_t errlen)
{
	if (check_one(cfg, err, errlen))
		return -1;
	return build_profiles(cfg, err, errlen);
}

const struct config *config_select(const struct config *cfg, const char *ns,
				   size_t nslen, const json_t *labels)
{
	size_t i, j;

	for (i = 0; i < cfg->nprofiles; i++) {
		const struct profile *p = &cfg->profiles[i];

		if (p->by_namespace &&
		    pattern_set_findn(&p->namespaces, ns, nslen) < 0)
			continue;
		for (j = 0; j < p->nlabels; j++) {
			const json_t *v = json_object_get(labels,
							  p->label_keys[j]);
			size_t len = strlen(p->label_values[j]);

			if (!json_is_string(v) || json_string_length(v) != len ||
			    memcmp(json_string_value(v), p->label_values[j],
				   len))
				break;
		}
		if (j == p->nlabels)
			return &p->cfg;
	}
	return cfg;
}
