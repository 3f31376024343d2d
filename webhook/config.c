/*
 * config.c - the configuration (config.h): the table of its keys, and
 * the file, the profiles, the flags and the checks that follow it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "file.h"
#include "hami.h"
#include "jsonout.h"
#include "toleration.h"
#include "text.h"
#include "tplpath.h"
#include "yamlio.h"

/* ------------------------------------------------------------------------
 * The types of config.c's own values: the families, their tolerations,
 * the profiles as read.
 */

/* Points the family's borrowed strings at the device's own. */
static void device_link(struct device *d)
{
	int i;

	d->family.name = d->name;
	for (i = 0; i < VGPU_NRESOURCES; i++)
		d->family.resource[i] = d->resource[i];
}

static void devices_free(const struct cfgkey *k, struct device *devices,
			 size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		cfgkey_release(k->keys, &devices[i]);
	free(devices);
}

/*
 * The entries of a profile's `devices` (v, at path), each over the family
 * of cfg it names (behaviour §2.2).
 */
static int families_override(struct cfgread *r, const struct cfgkey *k,
			     const char *path, const json_t *v,
			     struct config *cfg)
{
	static const char *const name_only[] = { "name", NULL };
	const char *const *skip = r->skip;
	const json_t *item;
	size_t i, j;

	if (!json_is_array(v))
		return cfgkey_bad_type(r, path, "an array", v);
	json_array_foreach(v, i, item) {
		const json_t *name = json_object_get(item, "name");
		struct device *d = NULL;
		char dpath[96], sub[160];
		int rc;

		snprintf(dpath, sizeof(dpath), "%s[%zu]", path, i);
		if (!json_is_object(item))
			return cfgkey_bad_type(r, dpath, "an object", item);
		if (!name)
			return cfgkey_missing(r, dpath, "name");
		snprintf(sub, sizeof(sub), "%s.name", dpath);
		if (!json_is_string(name))
			return cfgkey_bad_type(r, sub, "a string", name);
		for (j = 0; j < cfg->ndevices; j++)
			if (!strcmp(cfg->devices[j].name,
				    json_string_value(name)))
				d = &cfg->devices[j];
		if (!d)
			return cfgkey_fail(r, "%s: \"%.64s\" is not the name of a family of devices",
					   sub, json_string_value(name));
		r->mode = CFGKEY_READ_PROFILE_FAMILY;
		r->skip = name_only;
		r->from = 0;
		rc = cfgkey_read_object(r, k->keys, dpath, item, d);
		d->from_profile |= r->from;
		r->mode = CFGKEY_READ_PROFILE;
		r->skip = skip; /* the profile's keys after devices */
		if (rc)
			return -1;
	}
	return 0;
}

/*
 * `devices`: in the file, a list that replaces the families whole when
 * every entry is valid (each read by the table k->keys: the required keys
 * present, in the order of the table, then each key of the file); in a
 * profile, overrides of the families it names.
 */
static int families_read(struct cfgread *r, const struct cfgkey *k,
			 const char *path, const json_t *v, void *base)
{
	struct config *cfg = base;
	struct device *devices;
	const struct cfgkey *key;
	size_t n = json_array_size(v), i, ready = 0;

	if (r->mode == CFGKEY_READ_PROFILE)
		return families_override(r, k, path, v, cfg);
	if (!json_is_array(v))
		return cfgkey_bad_type(r, path, "an array", v);
	devices = calloc(n ? n : 1, sizeof(*devices));
	if (!devices)
		return cfgkey_fail(r, "out of memory");
	for (i = 0; i < n; i++) {
		const json_t *item = json_array_get(v, i);
		char dpath[32];

		snprintf(dpath, sizeof(dpath), "%s[%zu]", path, i);
		if (!json_is_object(item)) {
			cfgkey_bad_type(r, dpath, "an object", item);
			goto fail;
		}
		for (key = k->keys; key->name; key++) {
			if ((key->where & CFGKEY_REQUIRED) &&
			    !json_object_get(item, key->name)) {
				cfgkey_missing(r, dpath, key->name);
				goto fail;
			}
		}
		ready++;
		if (cfgkey_init(k->keys, &devices[i])) {
			cfgkey_fail(r, "out of memory");
			goto fail;
		}
		if (cfgkey_read_object(r, k->keys, dpath, item, &devices[i]))
			goto fail;
		device_link(&devices[i]);
	}
	devices_free(k, cfg->devices, cfg->ndevices);
	cfg->devices = devices;
	cfg->ndevices = n;
	return 0;
fail:
	devices_free(k, devices, ready);
	return -1;
}

static int families_copy(const struct cfgkey *k, void *dst, const void *src)
{
	const struct config *s = src;
	struct config *d = dst;
	struct device *devices;
	size_t i;

	devices = calloc(s->ndevices ? s->ndevices : 1, sizeof(*devices));
	if (!devices)
		return -1;
	for (i = 0; i < s->ndevices; i++) {
		if (cfgkey_copy(k->keys, &devices[i], &s->devices[i])) {
			devices_free(k, devices, i + 1);
			return -1;
		}
		device_link(&devices[i]);
	}
	devices_free(k, d->devices, d->ndevices);
	d->devices = devices;
	d->ndevices = s->ndevices;
	return 0;
}

static void families_release(const struct cfgkey *k, void *base)
{
	struct config *cfg = base;

	devices_free(k, cfg->devices, cfg->ndevices);
	cfg->devices = NULL;
	cfg->ndevices = 0;
}

static json_t *families_dump(const struct cfgkey *k, const void *base)
{
	const struct config *cfg = base;
	json_t *list = json_array();
	size_t i;

	for (i = 0; list && i < cfg->ndevices; i++) {
		if (json_array_append_new(list, cfgkey_dump(k->keys,
							    &cfg->devices[i]))) {
			json_decref(list);
			list = NULL;
		}
	}
	return list;
}

static const struct cfgkey_type families = {
	"array", families_read, families_copy, families_release, families_dump
};

/*
 * A family's tolerations: each checked as Kubernetes checks a pod's
 * (toleration.h) and kept with its members in their order.
 */
static int tolerations_read(struct cfgread *r, const struct cfgkey *k,
			    const char *path, const json_t *v, void *base)
{
	json_t **dst = cfgkey_field(k, base), *list;
	const json_t *tol;
	size_t i;

	if (!json_is_array(v))
		return cfgkey_bad_type(r, path, "an array", v);
	list = json_array();
	if (!list)
		return cfgkey_fail(r, "out of memory");
	json_array_foreach(v, i, tol) {
		char tpath[160], msg[512];
		json_t *copy;

		snprintf(tpath, sizeof(tpath), "%s[%zu]", path, i);
		if (toleration_check(tol, tpath, msg, sizeof(msg))) {
			json_decref(list);
			return cfgkey_fail(r, "%s", msg);
		}
		copy = toleration_copy(tol);
		if (!copy || json_array_append_new(list, copy)) {
			json_decref(list);
			return cfgkey_fail(r, "out of memory");
		}
	}
	json_decref(*dst);
	*dst = list;
	return 0;
}

static const struct cfgkey_type tolerations = {
	"array", tolerations_read, cfgkey_json_copy, cfgkey_json_release,
	cfgkey_json_dump
};

/* `profiles`, kept as read: config_check() builds them over the flags. */
static int profiles_read(struct cfgread *r, const struct cfgkey *k,
			 const char *path, const json_t *v, void *base)
{
	json_t **dst = cfgkey_field(k, base);

	if (!json_is_array(v))
		return cfgkey_bad_type(r, path, "an array", v);
	json_decref(*dst);
	*dst = json_incref((json_t *)v);
	return 0;
}

/*
 * `workloads` (behaviour §8): kinds whose pod templates `default` decides,
 * each {apiVersion, kind, templates}, the templates paths by tplpath.h.
 * Kept as read, a checked copy.
 */
static int workloads_read(struct cfgread *r, const struct cfgkey *k,
			  const char *path, const json_t *v, void *base)
{
	static const char *const names[] = { "apiVersion", "kind",
					     "templates" };
	json_t **dst = cfgkey_field(k, base), *copy;
	const json_t *w, *x;
	const char *key;
	char ipath[64], msg[160];
	size_t i, j, n;

	if (!json_is_array(v))
		return cfgkey_bad_type(r, path, "an array", v);
	json_array_foreach(v, i, w) {
		snprintf(ipath, sizeof(ipath), "%s[%zu]", path, i);
		if (!json_is_object(w))
			return cfgkey_bad_type(r, ipath, "an object", w);
		json_object_foreach((json_t *)w, key, x) {
			for (n = 0; n < 3 && strcmp(key, names[n]); n++)
				;
			if (n == 3)
				return cfgkey_unknown(r, ipath, key);
		}
		for (n = 0; n < 3; n++)
			if (!json_object_get(w, names[n]))
				return cfgkey_missing(r, ipath, names[n]);
		for (n = 0; n < 2; n++) {
			x = json_object_get(w, names[n]);
			if (!json_is_string(x) || !json_string_length(x) ||
			    strlen(json_string_value(x)) != json_string_length(x))
				return cfgkey_fail(r, "%s.%s: expected a non-empty "
						   "string, got %s", ipath,
						   names[n], json_is_string(x) ?
						   "\"\" or a NUL byte" :
						   jsonout_type_name(x));
		}
		x = json_object_get(w, "templates");
		if (!json_is_array(x) || !json_array_size(x))
			return cfgkey_fail(r, "%s.templates: expected a non-empty "
					   "array, got %s", ipath,
					   json_is_array(x) ? "[]" :
					   jsonout_type_name(x));
		for (j = 0; j < json_array_size(x); j++) {
			const json_t *t = json_array_get(x, j);

			if (!json_is_string(t) ||
			    strlen(json_string_value(t)) != json_string_length(t))
				return cfgkey_fail(r, "%s.templates[%zu]: expected "
						   "a string, got %s", ipath, j,
						   json_is_string(t) ?
						   "a NUL byte" :
						   jsonout_type_name(t));
			if (tplpath_check(json_string_value(t), msg,
					  sizeof(msg)))
				return cfgkey_fail(r, "%s.templates[%zu]: "
						   "\"%.64s\": %s", ipath, j,
						   json_string_value(t), msg);
		}
	}
	copy = json_deep_copy(v);
	if (!copy)
		return cfgkey_fail(r, "out of memory");
	json_decref(*dst);
	*dst = copy;
	return 0;
}

static const struct cfgkey_type workloads_json = {
	"array", workloads_read, cfgkey_json_copy, cfgkey_json_release,
	cfgkey_json_dump
};

static const struct cfgkey_type profiles_json = {
	"array", profiles_read, cfgkey_json_copy, cfgkey_json_release,
	cfgkey_json_dump
};

/* ------------------------------------------------------------------------
 * Checks of single keys (cfgkey_check_fn)
 */

/* schedulerName: a non-empty DNS-1123 subdomain. */
static int check_name(const struct cfgkey *k, void *base, const char *path,
		      char *err, size_t errlen)
{
	const char *s = *(char **)cfgkey_field(k, base);

	if (vgpu_dns_subdomain_validn(s, strlen(s)))
		return 0;
	return text_errorf(err, errlen,
			   "%s: \"%.64s\" is not a non-empty DNS-1123 subdomain",
			   path, s);
}

/* runtimeClassName: "" or a DNS-1123 subdomain. */
static int check_name_or_empty(const struct cfgkey *k, void *base,
			       const char *path, char *err, size_t errlen)
{
	const char *s = *(char **)cfgkey_field(k, base);

	if (!s[0] || vgpu_dns_subdomain_validn(s, strlen(s)))
		return 0;
	return text_errorf(err, errlen,
			   "%s: \"%.64s\" is not a DNS-1123 subdomain", path,
			   s);
}

/*
 * The families: each checked by the library (names, ranges) and by its
 * keys' checks, then its name and resource names against the families
 * before it.
 */
static int check_families(const struct cfgkey *k, void *base,
			  const char *path, char *err, size_t errlen)
{
	struct config *cfg = base;
	size_t i, j;
	int r, s;

	for (i = 0; i < cfg->ndevices; i++) {
		struct device *d = &cfg->devices[i];
		struct vgpu_error e;
		char dpath[32];

		snprintf(dpath, sizeof(dpath), "%s[%zu]", path, i);
		if (vgpu_family_check(&d->family, &e))
			return text_errorf(err, errlen, "%s.%s", dpath,
					   e.message);
		if (cfgkey_check(k->keys, d, dpath, err, errlen))
			return -1;
		for (j = 0; j < i; j++) {
			const struct device *o = &cfg->devices[j];

			if (!strcmp(d->name, o->name))
				return text_errorf(err, errlen,
						   "%s.name: \"%.64s\" is also the name of %s[%zu]",
						   dpath, d->name, path, j);
			for (r = 0; r < VGPU_NRESOURCES; r++) {
				for (s = 0; s < VGPU_NRESOURCES; s++) {
					if (!d->resource[r][0] ||
					    strcmp(d->resource[r],
						   o->resource[s]))
						continue;
					return text_errorf(err, errlen,
							   "%s.%s: \"%.64s\" is also %s[%zu].%s",
							   dpath,
							   vgpu_resource_config_key(r),
							   d->resource[r], path, j,
							   vgpu_resource_config_key(s));
				}
			}
		}
	}
	return 0;
}

/* ------------------------------------------------------------------------
 * The keys (behaviour §2).  Adding a key is a row here, with its field in
 * config.h, the README and docs/behaviour.md, and the chart's values.yaml
 * and values.schema.json (test_config checks the last two against this
 * table, and walks the table through read, copy and profile override).
 */

#define TOP(field) offsetof(struct config, field)
#define FAMILY(field) offsetof(struct device, field)

static const char *const allocations[] = { "hami", "dra", "off", NULL };
static const int allocation_values[] = { CONFIG_ALLOCATION_HAMI,
					 CONFIG_ALLOCATION_DRA,
					 CONFIG_ALLOCATION_OFF };
static const char *const actions[] = { "deny", "warn", NULL };
static const int action_values[] = { CONFIG_POLICY_DENY, CONFIG_POLICY_WARN };
static const char *const advice[] = { "warn", "deny", "off", NULL };
static const int advice_values[] = { CONFIG_POLICY_WARN, CONFIG_POLICY_DENY,
				     CONFIG_POLICY_OFF };
static const char *const scheduler_policies[] = { "", "binpack", "spread",
						  NULL };
static const char *const core_policies[] = { "", "default", "force",
					     "disable", NULL };
static const char *const oom_killers[] = { "", "true", "false", NULL };

static const struct cfgkey scheduler_policy_keys[] = {
	{ .name = "node", .type = &cfgkey_string,
	  .offset = TOP(node_scheduler_policy),
	  .where = CFGKEY_TOP | CFGKEY_PROFILE | CFGKEY_LABELS,
	  .def = "\"\"", .sample = "\"binpack\"",
	  .choices = scheduler_policies },
	{ .name = "gpu", .type = &cfgkey_string,
	  .offset = TOP(gpu_scheduler_policy),
	  .where = CFGKEY_TOP | CFGKEY_PROFILE | CFGKEY_LABELS,
	  .def = "\"\"", .sample = "\"spread\"",
	  .choices = scheduler_policies },
	{ .name = NULL },
};

#define GUARD_KEY (CFGKEY_TOP | CFGKEY_PROFILE)

static const struct cfgkey annotation_guard_keys[] = {
	{ .name = "policy", .type = &cfgkey_enum,
	  .offset = TOP(guards.annotation_policy), .where = GUARD_KEY,
	  .def = "\"deny\"", .sample = "\"warn\"",
	  .choices = guardcfg_policies, .values = guardcfg_policy_values },
	{ .name = "keys", .type = &cfgkey_patterns,
	  .offset = TOP(guards.keys), .where = GUARD_KEY,
	  .def = "[\"hami.io/vgpu-node\", \"hami.io/vgpu-time\","
		 " \"hami.io/bind-time\", \"hami.io/bind-phase\","
		 " \"hami.io/*-devices-to-allocate\", \"hami.io/*-allocated\"]",
	  .sample = "[\"x.io/*\"]" },
	{ .name = "writers", .type = &guardcfg_writers,
	  .offset = TOP(guards.writers), .where = GUARD_KEY,
	  .def = "[\"system:serviceaccount:kube-system:hami-scheduler\","
		 " \"system:serviceaccount:kube-system:hami-device-plugin\"]",
	  .sample = "[\"bob\", \"group:ops\"]" },
	{ .name = NULL },
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
static const struct cfgkey env_guard_keys[] = {
	{ .name = "policy", .type = &cfgkey_enum,
	  .offset = TOP(guards.env_policy), .where = GUARD_KEY,
	  .def = "\"deny\"", .sample = "\"strip\"",
	  .choices = guardcfg_policies, .values = guardcfg_policy_values },
	{ .name = "names", .type = &cfgkey_patterns,
	  .offset = TOP(guards.names), .where = GUARD_KEY,
	  .def = "[\"NVIDIA_VISIBLE_DEVICES\", \"CUDA_DEVICE_MEMORY_LIMIT\","
		 " \"CUDA_DEVICE_MEMORY_LIMIT_*\", \"CUDA_DEVICE_SM_LIMIT\","
		 " \"CUDA_DEVICE_SM_LIMIT_*\","
		 " \"CUDA_DEVICE_MEMORY_SHARED_CACHE\","
		 " \"CUDA_DISABLE_CONTROL\", \"CUDA_OVERSUBSCRIBE\","
		 " \"CUDA_TASK_PRIORITY\", \"GPU_CORE_UTILIZATION_POLICY\","
		 " \"ACTIVE_OOM_KILLER\", \"CUDA_REDIRECT\","
		 " \"RECORD_KERNEL_INTERVAL\"]",
	  .sample = "[\"X_*\"]" },
	{ .name = "allowedValues", .type = &guardcfg_allowed_values,
	  .offset = TOP(guards.allowed), .where = GUARD_KEY,
	  .def = "{\"NVIDIA_VISIBLE_DEVICES\": [\"none\", \"void\"]}",
	  .sample = "{\"X_*\": [\"ok\"]}" },
	{ .name = NULL },
};

/* Where the NVIDIA container toolkit reads a device list from mounts. */
static const struct cfgkey mount_guard_keys[] = {
	{ .name = "policy", .type = &cfgkey_enum,
	  .offset = TOP(guards.mount_policy), .where = GUARD_KEY,
	  .def = "\"deny\"", .sample = "\"warn\"",
	  .choices = guardcfg_policies_no_strip,
	  .values = guardcfg_policy_values_no_strip },
	{ .name = "paths", .type = &guardcfg_paths,
	  .offset = TOP(guards.mount_paths), .where = GUARD_KEY,
	  .def = "[\"/var/run/nvidia-container-devices\"]",
	  .sample = "[\"/a/b\"]" },
	{ .name = NULL },
};

static const struct cfgkey guard_keys[] = {
	{ .name = "schedulerAnnotations", .type = &cfgkey_object,
	  .where = GUARD_KEY, .keys = annotation_guard_keys },
	{ .name = "env", .type = &cfgkey_object, .where = GUARD_KEY,
	  .keys = env_guard_keys },
	{ .name = "volumeMounts", .type = &cfgkey_object, .where = GUARD_KEY,
	  .keys = mount_guard_keys },
	{ .name = NULL },
};

/* A family's keys: any profile may override some, a podLabels one fewer. */
#define ANY_PROFILE (CFGKEY_PROFILE | CFGKEY_LABELS)
#define REQUIRED (CFGKEY_FAMILY | CFGKEY_REQUIRED)

static const struct cfgkey family_keys[] = {
	{ .name = "name", .type = &cfgkey_string, .offset = FAMILY(name),
	  .where = REQUIRED, .sample = "\"gpu-a\"" },
	{ .name = "resourceCountName", .type = &cfgkey_string,
	  .offset = FAMILY(resource[VGPU_COUNT]), .where = REQUIRED,
	  .sample = "\"a.io/gpu\"" },
	{ .name = "resourceMemoryName", .type = &cfgkey_string,
	  .offset = FAMILY(resource[VGPU_MEMORY]), .where = REQUIRED,
	  .sample = "\"a.io/mem\"" },
	{ .name = "resourceMemoryPercentageName", .type = &cfgkey_string,
	  .offset = FAMILY(resource[VGPU_MEMORY_PERCENTAGE]),
	  .where = CFGKEY_FAMILY, .def = "\"\"", .sample = "\"a.io/pct\"" },
	{ .name = "resourceCoreName", .type = &cfgkey_string,
	  .offset = FAMILY(resource[VGPU_CORES]), .where = CFGKEY_FAMILY,
	  .def = "\"\"", .sample = "\"a.io/cores\"" },
	{ .name = "resourcePriorityName", .type = &cfgkey_string,
	  .offset = FAMILY(resource[VGPU_PRIORITY]), .where = CFGKEY_FAMILY,
	  .def = "\"\"", .sample = "\"a.io/prio\"" },
	{ .name = "defaultGPUNum", .type = &cfgkey_int,
	  .offset = FAMILY(family.default_gpu_num),
	  .where = REQUIRED | ANY_PROFILE, .sample = "2",
	  .max = VGPU_MAX_COUNT, .from = DEVICE_FROM_PROFILE_GPU_NUM },
	{ .name = "defaultMemory", .type = &cfgkey_int,
	  .offset = FAMILY(family.default_memory),
	  .where = REQUIRED | ANY_PROFILE, .sample = "2000",
	  .max = VGPU_MAX_MEMORY, .from = DEVICE_FROM_PROFILE_MEMORY },
	{ .name = "defaultCores", .type = &cfgkey_int,
	  .offset = FAMILY(family.default_cores),
	  .where = REQUIRED | ANY_PROFILE, .sample = "30",
	  .max = VGPU_MAX_CORES, .from = DEVICE_FROM_PROFILE_CORES },
	{ .name = "tolerations", .type = &tolerations,
	  .offset = FAMILY(tolerations), .where = REQUIRED | ANY_PROFILE,
	  .def = "[]",
	  .sample = "[{\"key\": \"a.io/gpu\", \"operator\": \"Exists\"}]" },
	{ .name = "runtimeClassName", .type = &cfgkey_string,
	  .offset = FAMILY(runtime_class_name),
	  .where = CFGKEY_FAMILY | ANY_PROFILE, .def = "\"\"",
	  .sample = "\"nvidia\"", .check = check_name_or_empty },
	{ .name = "gpuCorePolicy", .type = &cfgkey_string,
	  .offset = FAMILY(gpu_core_policy),
	  .where = CFGKEY_FAMILY | CFGKEY_PROFILE, .def = "\"\"",
	  .sample = "\"force\"", .choices = core_policies },
	{ .name = "activeOOMKiller", .type = &cfgkey_string,
	  .offset = FAMILY(active_oom_killer),
	  .where = CFGKEY_FAMILY | CFGKEY_PROFILE, .def = "\"\"",
	  .sample = "\"true\"", .choices = oom_killers },
	{ .name = "overwriteEnv", .type = &cfgkey_bool,
	  .offset = FAMILY(overwrite_env), .where = CFGKEY_FAMILY,
	  .def = "false", .sample = "true" },
	{ .name = NULL },
};

const struct cfgkey config_keys[] = {
	/* Not with CFGKEY_LABELS: tenants write their labels, and a label
	 * must not take a pod off the namespace's way of allocating GPUs. */
	{ .name = "allocation", .type = &cfgkey_enum,
	  .offset = TOP(allocation), .where = CFGKEY_TOP | CFGKEY_PROFILE,
	  .def = "\"hami\"", .sample = "\"dra\"", .choices = allocations,
	  .values = allocation_values },
	{ .name = "schedulerName", .type = &cfgkey_string,
	  .offset = TOP(scheduler_name), .where = CFGKEY_TOP | CFGKEY_PROFILE,
	  .def = "\"hami-scheduler\"", .sample = "\"my-sched\"",
	  .check = check_name },
	{ .name = "forceOverwriteDefaultScheduler", .type = &cfgkey_bool,
	  .offset = TOP(force_overwrite_default_scheduler),
	  .where = CFGKEY_TOP | CFGKEY_PROFILE, .def = "true",
	  .sample = "false" },
	{ .name = "privilegedPolicy", .type = &cfgkey_enum,
	  .offset = TOP(privileged_policy),
	  .where = CFGKEY_TOP | CFGKEY_PROFILE, .def = "\"deny\"",
	  .sample = "\"warn\"", .choices = actions, .values = action_values },
	{ .name = "nodeNamePolicy", .type = &cfgkey_enum,
	  .offset = TOP(node_name_policy),
	  .where = CFGKEY_TOP | CFGKEY_PROFILE, .def = "\"deny\"",
	  .sample = "\"warn\"", .choices = actions, .values = action_values },
	{ .name = "resourceAnnotationPolicy", .type = &cfgkey_enum,
	  .offset = TOP(resource_annotation_policy),
	  .where = CFGKEY_TOP | CFGKEY_PROFILE, .def = "\"warn\"",
	  .sample = "\"deny\"", .choices = advice, .values = advice_values },
	{ .name = "envFromPolicy", .type = &cfgkey_enum,
	  .offset = TOP(env_from_policy),
	  .where = CFGKEY_TOP | CFGKEY_PROFILE, .def = "\"warn\"",
	  .sample = "\"deny\"", .choices = advice, .values = advice_values },
	{ .name = "schedulerPolicy", .type = &cfgkey_object,
	  .where = CFGKEY_TOP | ANY_PROFILE, .keys = scheduler_policy_keys },
	{ .name = "hamiDeviceConfig", .type = &cfgkey_string,
	  .offset = TOP(hami_device_config), .where = CFGKEY_TOP,
	  .def = "\"\"", .sample = "\"/etc/hami/device-config.yaml\"" },
	/* The built-in family is vgpu_family_nvidia's (lib/family.c), with
	 * the toleration of the device plugin's taint. */
	{ .name = "devices", .type = &families, .where = CFGKEY_TOP | ANY_PROFILE,
	  .def = "[{\"name\": \"nvidia\","
		 " \"resourceCountName\": \"nvidia.com/gpu\","
		 " \"resourceMemoryName\": \"nvidia.com/gpumem\","
		 " \"resourceMemoryPercentageName\":"
		 " \"nvidia.com/gpumem-percentage\","
		 " \"resourceCoreName\": \"nvidia.com/gpucores\","
		 " \"resourcePriorityName\": \"nvidia.com/priority\","
		 " \"defaultGPUNum\": 1, \"defaultMemory\": 5000,"
		 " \"defaultCores\": 0,"
		 " \"tolerations\": [{\"key\": \"nvidia.com/gpu\","
		 " \"operator\": \"Exists\", \"effect\": \"NoSchedule\"}]}]",
	  .sample = "[{\"name\": \"a\", \"resourceCountName\": \"a.io/gpu\","
		    " \"resourceMemoryName\": \"a.io/mem\","
		    " \"resourceMemoryPercentageName\": \"\","
		    " \"resourceCoreName\": \"\","
		    " \"resourcePriorityName\": \"\","
		    " \"defaultGPUNum\": 1, \"defaultMemory\": 1,"
		    " \"defaultCores\": 0, \"tolerations\": [],"
		    " \"runtimeClassName\": \"\", \"gpuCorePolicy\": \"\","
		    " \"activeOOMKiller\": \"\", \"overwriteEnv\": false}]",
	  .keys = family_keys, .check = check_families },
	{ .name = "guards", .type = &cfgkey_object,
	  .where = GUARD_KEY | CFGKEY_ROOTED, .keys = guard_keys },
	{ .name = "workloads", .type = &workloads_json,
	  .offset = TOP(workloads_json), .where = CFGKEY_TOP, .def = "[]",
	  .sample = "[{\"apiVersion\": \"example.com/v1\", \"kind\": \"Trainer\","
		    " \"templates\": [\"spec.workers[].template\"]}]" },
	{ .name = "profiles", .type = &profiles_json,
	  .offset = TOP(profiles_json), .where = CFGKEY_TOP | CFGKEY_OWN,
	  .sample = "[{\"name\": \"p\", \"namespaces\": [\"x\"]}]" },
	{ .name = NULL },
};

/* ------------------------------------------------------------------------
 * Life cycle
 */

const char *config_allocation_name(enum config_allocation a)
{
	return allocations[a];
}

static void profiles_free(struct profile *p, size_t n);

int config_init(struct config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	if (cfgkey_init(config_keys, cfg)) {
		config_release(cfg);
		return -1;
	}
	return 0;
}

void config_release(struct config *cfg)
{
	free(cfg->hami_dropped);
	profiles_free(cfg->profiles, cfg->nprofiles);
	cfgkey_release(config_keys, cfg);
	memset(cfg, 0, sizeof(*cfg));
}

/* Copies the top level of src (not its profiles) into dst; -1 for OOM. */
static int config_copy(struct config *dst, const struct config *src)
{
	memset(dst, 0, sizeof(*dst));
	if (cfgkey_copy(config_keys, dst, src)) {
		config_release(dst);
		return -1;
	}
	return 0;
}

json_t *config_dump(const struct config *cfg)
{
	return cfgkey_dump(config_keys, cfg);
}

/* ------------------------------------------------------------------------
 * The JSON file
 */

/*
 * Reads the decoded configuration root (borrowed) over cfg; at is the key
 * it sits under in the file ("" at the top), which begins the keys that
 * messages name.
 */
static int load_json(struct config *cfg, const char *path, const char *at,
		     json_t *root, char *err, size_t errlen)
{
	struct cfgread r = { path, err, errlen, CFGKEY_READ_FILE, false, NULL,
			     0 };

	return cfgkey_read_object(&r, config_keys, at, root, cfg);
}

/*
 * The one document of data[0..len): JSON when its first byte after white
 * space is "{" or "[" (jansson, with its line and column in a message),
 * else YAML read as Kubernetes reads it (yamlio.h).  what names the text
 * in messages.  Returns a new reference, or NULL with a message.
 */
static json_t *read_document(const char *what, const char *data, size_t len,
			     char *err, size_t errlen)
{
	struct yamlio_error yerr;
	json_error_t jerr;
	json_t *docs, *doc;
	size_t bom = len >= 3 && !memcmp(data, "\xef\xbb\xbf", 3) ? 3 : 0,
	       i = bom;

	while (i < len && (data[i] == ' ' || data[i] == '\t' ||
			   data[i] == '\r' || data[i] == '\n'))
		i++;
	if (i < len && (data[i] == '{' || data[i] == '[')) {
		doc = json_loadb(data + bom, len - bom, JSON_REJECT_DUPLICATES,
				 &jerr);
		if (!doc)
			text_errorf(err, errlen,
				    "config %s: %s (line %d, column %d)", what,
				    jerr.text, jerr.line, jerr.column);
		return doc;
	}
	docs = yamlio_load(data, len, NULL, &yerr);
	if (!docs) {
		if (yerr.line)
			text_errorf(err, errlen,
				    "config %s: line %d, column %d: %s", what,
				    yerr.line, yerr.column, yerr.text);
		else
			text_errorf(err, errlen, "config %s: %s", what,
				    yerr.text);
		return NULL;
	}
	if (json_array_size(docs) != 1) {
		text_errorf(err, errlen,
			    "config %s: %zu YAML documents, expected one", what,
			    json_array_size(docs));
		json_decref(docs);
		return NULL;
	}
	doc = json_incref(json_array_get(docs, 0));
	json_decref(docs);
	return doc;
}

/*
 * A string member of obj, or dflt when it is not a non-empty string.
 */
static const char *string_or(const json_t *obj, const char *key,
			     const char *dflt)
{
	const char *v = json_string_value(json_object_get(obj, key));

	return v && v[0] ? v : dflt;
}

/*
 * The configuration a values file of the chart stands for: a copy of its
 * `config` (v, borrowed) with what charts/vgpu-webhook/templates/
 * _helpers.tpl (vgpu-webhook.configJson) does to it for config.json:
 * guards.schedulerAnnotations.writers, when missing or empty, are the
 * service accounts of HAMi's scheduler and device plugin, from
 * hami.namespace and hami.releaseName (the chart's defaults kube-system
 * and hami); an empty `profiles` is left out.  Members of the wrong type
 * are left as they are, for the reading to name.  Returns a new
 * reference, or NULL out of memory.
 */
static json_t *values_config(const json_t *values, const json_t *v)
{
	const json_t *hami = json_object_get(values, "hami");
	json_t *cfg = json_deep_copy(v), *guards, *ann, *writers, *w;
	char name[600];

	if (!cfg || !json_is_object(cfg))
		return cfg;
	w = json_object_get(cfg, "profiles");
	if (w && (json_is_null(w) || (json_is_array(w) && !json_array_size(w))))
		json_object_del(cfg, "profiles");
	guards = json_object_get(cfg, "guards");
	if (!guards || json_is_null(guards)) {
		guards = json_object();
		if (json_object_set_new(cfg, "guards", guards))
			goto fail;
	}
	ann = json_object_get(guards, "schedulerAnnotations");
	if (json_is_object(guards) && (!ann || json_is_null(ann))) {
		ann = json_object();
		if (json_object_set_new(guards, "schedulerAnnotations", ann))
			goto fail;
	}
	if (!json_is_object(ann))
		return cfg;
	writers = json_object_get(ann, "writers");
	if (writers && !json_is_null(writers) &&
	    !(json_is_array(writers) && !json_array_size(writers)))
		return cfg;
	if (!(writers = json_array()) ||
	    json_object_set_new(ann, "writers", writers))
		goto fail;
	snprintf(name, sizeof(name), "system:serviceaccount:%.250s:%.250s-scheduler",
		 string_or(hami, "namespace", "kube-system"),
		 string_or(hami, "releaseName", "hami"));
	if (json_array_append_new(writers, json_string(name)))
		goto fail;
	snprintf(name, sizeof(name),
		 "system:serviceaccount:%.250s:%.250s-device-plugin",
		 string_or(hami, "namespace", "kube-system"),
		 string_or(hami, "releaseName", "hami"));
	if (json_array_append_new(writers, json_string(name)))
		goto fail;
	return cfg;
fail:
	json_decref(cfg);
	return NULL;
}

/*
 * The configuration that the file path's bytes data[0..len) stand for
 * (behaviour §2, "The file"): the document itself; the data."config.json"
 * of a ConfigMap (the chart's), read as a document in turn; or the
 * `config` key of a values file (a document with that key), as the chart
 * renders it (values_config()).  *at gets ""
 * or "config", the key the configuration sits under, and label how
 * messages name where it is read (the path, then the ConfigMap's key).
 * Returns a new reference, or NULL with a message naming path.
 */
static json_t *file_config(const char *path, const char *data, size_t len,
			   char *label, size_t labellen, const char **at,
			   char *err, size_t errlen)
{
	json_t *doc, *v;
	const char *kind;

	*at = "";
	snprintf(label, labellen, "%s", path);
	doc = read_document(path, data, len, err, errlen);
	if (!doc || !json_is_object(doc))
		return doc;
	kind = json_string_value(json_object_get(doc, "kind"));
	if (kind && !strcmp(kind, "ConfigMap")) {
		v = json_object_get(json_object_get(doc, "data"), "config.json");
		if (!json_is_string(v)) {
			json_decref(doc);
			text_errorf(err, errlen,
				    "config %s: a ConfigMap without the string data.\"config.json\"",
				    path);
			return NULL;
		}
		snprintf(label, labellen, "%s, data.\"config.json\"", path);
		v = read_document(label, json_string_value(v),
				  json_string_length(v), err, errlen);
		json_decref(doc);
		return v;
	}
	v = json_object_get(doc, "config");
	if (!v)
		return doc;
	*at = "config";
	v = values_config(doc, v);
	json_decref(doc);
	if (!v)
		text_errorf(err, errlen, "config %s: out of memory", path);
	return v;
}

int config_load_file(struct config *cfg, const char *path, char *err,
		     size_t errlen)
{
	char *data;
	size_t len;
	int rc;

	if (file_read(path, CONFIG_FILE_MAX, &data, &len, err, errlen)) {
		char why[600];

		snprintf(why, sizeof(why), "%s", err);
		return text_errorf(err, errlen, "config %s: %s", path, why);
	}
	rc = config_load_buffer(cfg, path, data, len, err, errlen);
	free(data);
	return rc;
}

/*
 * Reads the config file's bytes over cfg; *devices tells whether it gave
 * `devices` (not null).
 */
static int load_file(struct config *cfg, const char *path,
		     const struct config_bytes *file, bool *devices,
		     char *err, size_t errlen)
{
	char label[600];
	const char *at;
	json_t *root, *v;
	int rc;

	root = file_config(path, file->data, file->len, label, sizeof(label),
			   &at, err, errlen);
	if (!root)
		return -1;
	rc = load_json(cfg, label, at, root, err, errlen);
	v = json_object_get(root, "devices");
	*devices = v && !json_is_null(v);
	json_decref(root);
	return rc;
}

int config_load_buffer(struct config *cfg, const char *path, const char *data,
		       size_t len, char *err, size_t errlen)
{
	struct config_bytes file = { data, len };
	bool devices;

	return load_file(cfg, path, &file, &devices, err, errlen);
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
	if (cfgkey_set_string(&cfg->scheduler_name, value)) {
		text_errorf(err, errlen, "out of memory");
		return -1;
	}
	return 0;
}

/*
 * Sets the integer key of the first device family to value, a whole number
 * in 0..its max.  Returns 0, or -1 with a message that begins with what.
 */
static int set_first_family(struct config *cfg, const char *key,
			    const char *what, const char *value, char *err,
			    size_t errlen)
{
	const struct cfgkey *k = cfgkey_find(cfgkey_find(config_keys,
							 "devices")->keys,
					     key);
	uint64_t v;

	if (text_u64_parsen(value, strlen(value), (uint64_t)k->max, &v)) {
		text_errorf(err, errlen,
			    "%s: \"%.64s\" is not a whole number in 0..%lld",
			    what, value, (long long)k->max);
		return -1;
	}
	if (!cfg->ndevices) {
		text_errorf(err, errlen,
			    "%s: the configuration has no device family", what);
		return -1;
	}
	*(int64_t *)cfgkey_field(k, &cfg->devices[0]) = (int64_t)v;
	return 0;
}

int config_set_default_gpu_num(struct config *cfg, const char *what,
			       const char *value, char *err, size_t errlen)
{
	return set_first_family(cfg, "defaultGPUNum", what, value, err,
				errlen);
}

int config_set_default_memory(struct config *cfg, const char *what,
			      const char *value, char *err, size_t errlen)
{
	return set_first_family(cfg, "defaultMemory", what, value, err,
				errlen);
}

int config_set_default_cores(struct config *cfg, const char *what,
			     const char *value, char *err, size_t errlen)
{
	return set_first_family(cfg, "defaultCores", what, value, err,
				errlen);
}

/* ------------------------------------------------------------------------
 * Validation
 */

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

/* Checks one config (the top level, or a profile's) and derives fields. */
static int check_one(struct config *cfg, char *err, size_t errlen)
{
	size_t i;

	if (check_owned_annotations(cfg, err, errlen) ||
	    cfgkey_check(config_keys, cfg, "", err, errlen))
		return -1;
	cfg->any_overwrite_env = false;
	for (i = 0; i < cfg->ndevices; i++)
		cfg->any_overwrite_env |= cfg->devices[i].overwrite_env;
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
		for (j = 0; j < p[i].nlayered; j++) {
			config_release(&p[i].layered[j]);
			free(p[i].layered_names[j]);
		}
		free(p[i].layered);
		free(p[i].layered_names);
	}
	free(p);
}

static int profile_refuse(struct cfgread *r, const char *path,
			  const char *why)
{
	return cfgkey_fail(r, "%s: %s", path, why);
}

/* Reads namespaces and podLabels of profiles[pi] (v) into p. */
static int read_selectors(struct cfgread *r, size_t pi, const json_t *v,
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
			return cfgkey_bad_type(r, path, "an array", ns);
		n = json_array_size(ns);
		texts = calloc(n ? n : 1, sizeof(*texts));
		if (!texts)
			return cfgkey_fail(r, "out of memory");
		json_array_foreach(ns, i, item) {
			snprintf(path, sizeof(path),
				 "profiles[%zu].namespaces[%zu]", pi, i);
			if (!json_is_string(item)) {
				cfgkey_bad_type(r, path, "a string", item);
				goto out;
			}
			texts[i] = json_string_value(item);
		}
		if (pattern_set_init(&p->namespaces, texts, n)) {
			cfgkey_fail(r, "out of memory");
			goto out;
		}
		p->by_namespace = true;
	}
	if (labels && !json_is_null(labels)) {
		snprintf(path, sizeof(path), "profiles[%zu].podLabels", pi);
		if (!json_is_object(labels)) {
			cfgkey_bad_type(r, path, "an object", labels);
			goto out;
		}
		n = json_object_size(labels);
		p->label_keys = calloc(n ? n : 1, sizeof(char *));
		p->label_values = calloc(n ? n : 1, sizeof(char *));
		if (!p->label_keys || !p->label_values) {
			cfgkey_fail(r, "out of memory");
			goto out;
		}
		json_object_foreach((json_t *)labels, key, item) {
			snprintf(path, sizeof(path),
				 "profiles[%zu].podLabels.%.64s", pi, key);
			if (cfgkey_read_string(r, path, item,
					       &p->label_values[p->nlabels]) ||
			    cfgkey_set_string(&p->label_keys[p->nlabels], key)) {
				free(p->label_values[p->nlabels]);
				goto out;
			}
			p->nlabels++;
		}
		if (!n) {
			profile_refuse(r, path, "must hold at least one label");
			goto out;
		}
	}
	if (!p->by_namespace && !p->nlabels) {
		snprintf(path, sizeof(path), "profiles[%zu]", pi);
		profile_refuse(r, path,
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
 * a copy of base with the profile's keys over it (by the table: the keys
 * with CFGKEY_PROFILE, or CFGKEY_LABELS for a profile with podLabels).
 */
static int read_profile(struct cfgread *r, size_t pi, const json_t *v,
			const struct config *base, struct profile *p)
{
	static const char *const selectors[] = { "name", "namespaces",
						 "podLabels", NULL };
	const json_t *name = json_object_get(v, "name");
	char path[64], sub[160];
	size_t i;
	int rc;

	snprintf(path, sizeof(path), "profiles[%zu]", pi);
	if (!json_is_object(v))
		return cfgkey_bad_type(r, path, "an object", v);
	if (!name)
		return cfgkey_missing(r, path, "name");
	snprintf(sub, sizeof(sub), "%s.name", path);
	if (cfgkey_read_string(r, sub, name, &p->name))
		return -1;
	if (!p->name[0])
		return profile_refuse(r, sub, "must not be empty");
	for (i = 0; i < pi; i++)
		if (!strcmp(base->profiles[i].name, p->name))
			return cfgkey_fail(r, "%s: \"%.64s\" is also the name of profiles[%zu]",
					   sub, p->name, i);
	if (read_selectors(r, pi, v, p))
		return -1;
	if (config_copy(&p->cfg, base))
		return cfgkey_fail(r, "out of memory");
	p->cfg.profile = p->name;
	r->mode = CFGKEY_READ_PROFILE;
	r->labels = p->nlabels > 0;
	r->skip = selectors;
	rc = cfgkey_read_object(r, config_keys, path, v, &p->cfg);
	r->mode = CFGKEY_READ_FILE;
	r->labels = false;
	r->skip = NULL;
	return rc;
}

/* The most podLabels-over-namespace profile combinations a config makes. */
#define PROFILE_LAYERS_MAX 4096

/*
 * Builds the configs of the podLabels profile p (profiles[pi], JSON v)
 * over each of the nns namespace profiles of cfg: a copy of its config
 * with the keys of p over it, named "NAMESPACE/LABELS".  Returns 0, or -1
 * with the reason in msg[0..msglen) (the namespace profile is then the
 * last of p->layered, or there is none when memory ran out first).
 */
static int build_layers(const struct config *cfg, size_t pi, const json_t *v,
			struct profile *p, size_t nns, char *msg,
			size_t msglen)
{
	static const char *const selectors[] = { "name", "namespaces",
						 "podLabels", NULL };
	struct cfgread r = { "-", msg, msglen, CFGKEY_READ_PROFILE, true,
			     selectors, 0 };
	char path[64];
	size_t i;

	p->layered = calloc(nns, sizeof(*p->layered));
	p->layered_names = calloc(nns, sizeof(*p->layered_names));
	if (!p->layered || !p->layered_names)
		return text_errorf(msg, msglen, "out of memory");
	snprintf(path, sizeof(path), "profiles[%zu]", pi);
	for (i = 0; i < cfg->nprofiles; i++) {
		const struct profile *ns = &cfg->profiles[i];
		struct config *c = &p->layered[p->nlayered];
		char **name = &p->layered_names[p->nlayered];
		size_t len = strlen(ns->name) + strlen(p->name) + 2;

		if (!ns->ns_ordinal)
			continue;
		p->nlayered++;
		*name = malloc(len);
		if (!*name || config_copy(c, &ns->cfg))
			return text_errorf(msg, msglen, "out of memory");
		snprintf(*name, len, "%s/%s", ns->name, p->name);
		c->profile = *name;
		if (cfgkey_read_object(&r, config_keys, path, v, c)) {
			/* The readers name the file: here none. */
			if (!strncmp(msg, "config -: ", 10))
				memmove(msg, msg + 10, strlen(msg + 10) + 1);
			return -1;
		}
		if (check_one(c, msg, msglen))
			return -1;
	}
	return 0;
}

/*
 * Builds cfg->profiles from cfg->profiles_json over cfg as it stands.
 * Returns 0, or -1 with a message naming the key.
 */
static int build_profiles(struct config *cfg, char *err, size_t errlen)
{
	struct cfgread r = { "-", err, errlen, CFGKEY_READ_FILE, false, NULL,
			     0 };
	size_t n = json_array_size(cfg->profiles_json), i, nns = 0;
	size_t nlabels = 0;
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
		if (read_profile(&r, i, json_array_get(cfg->profiles_json, i),
				 cfg, p))
			goto fail;
		if (check_one(&p->cfg, msg, sizeof(msg))) {
			text_errorf(err, errlen, "profiles[%zu] (\"%.64s\"): %s",
				    i, p->name, msg);
			return -1;
		}
		if (!p->nlabels)
			p->ns_ordinal = ++nns;
	}
	/* Once every namespace profile is built: each podLabels profile
	 * over each of them.  Each combination is a whole config (about
	 * 5 KB), so their number is bounded. */
	for (i = 0; i < n; i++)
		nlabels += cfg->profiles[i].nlabels != 0;
	if (nns && nlabels > PROFILE_LAYERS_MAX / nns)
		return text_errorf(err, errlen,
				   "profiles: %zu podLabels profiles over %zu "
				   "namespace profiles make %zu combinations, "
				   "more than %d", nlabels, nns, nlabels * nns,
				   PROFILE_LAYERS_MAX);
	for (i = 0; nns && i < n; i++) {
		struct profile *p = &cfg->profiles[i];
		size_t j;

		if (!p->nlabels)
			continue;
		if (!build_layers(cfg, i, json_array_get(cfg->profiles_json, i),
				  p, nns, msg, sizeof(msg)))
			continue;
		for (j = 0; j < n; j++)
			if (p->nlayered &&
			    cfg->profiles[j].ns_ordinal == p->nlayered)
				break;
		if (j == n)
			return text_errorf(err, errlen, "%s", msg);
		return text_errorf(err, errlen,
				   "profiles[%zu] (\"%.64s\") over profiles[%zu] (\"%.64s\"): %s",
				   i, p->name, j, cfg->profiles[j].name, msg);
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

/*
 * Reads list, an array of `devices` entries made from HAMi's file path,
 * as the families of cfg.  Returns 0, or -1 with a message.
 */
static int set_families(struct config *cfg, const char *path, json_t *list,
			char *err, size_t errlen)
{
	struct cfgread r = { path, err, errlen, CFGKEY_READ_FILE, false, NULL,
			     0 };
	json_t *top = json_pack("{s:O}", "devices", list);
	int rc;

	if (!top)
		return text_errorf(err, errlen, "out of memory");
	rc = cfgkey_read_object(&r, config_keys, "", top, cfg);
	json_decref(top);
	return rc;
}

/* Whether the family h (a `devices` entry) shares its name or a resource
 * name with a family of cfg. */
static bool family_clashes(const struct config *cfg, const json_t *h)
{
	const char *key;
	json_t *v;
	size_t i;
	int r;

	json_object_foreach((json_t *)h, key, v) {
		const char *s = json_string_value(v);

		if (!s || !s[0] || (strcmp(key, "name") &&
				    strncmp(key, "resource", 8)))
			continue;
		for (i = 0; i < cfg->ndevices; i++) {
			if (!strcmp(cfg->devices[i].name, s))
				return true;
			for (r = 0; r < VGPU_NRESOURCES; r++)
				if (!strcmp(cfg->devices[i].resource[r], s))
					return true;
		}
	}
	return false;
}

/* Appends name to cfg->hami_dropped ("a, b").  Returns 0, or -1 out of
 * memory. */
static int note_dropped(struct config *cfg, const char *name)
{
	size_t old = cfg->hami_dropped ? strlen(cfg->hami_dropped) : 0;
	size_t n = old + (old ? 2 : 0) + strlen(name ? name : "") + 1;
	char *s = realloc(cfg->hami_dropped, n);

	if (!s)
		return -1;
	snprintf(s + old, n - old, "%s%s", old ? ", " : "", name ? name : "");
	cfg->hami_dropped = s;
	return 0;
}

/*
 * After a file that gave its own `devices`: the families of HAMi's file
 * (hami) that clash with none of them follow them (behaviour §2.3); the
 * others are named in cfg->hami_dropped.
 */
static int add_hami_families(struct config *cfg, const char *path,
			     const json_t *hami, char *err, size_t errlen)
{
	json_t *list = families_dump(cfgkey_find(config_keys, "devices"), cfg);
	const json_t *h;
	size_t i;
	int rc;

	if (!list)
		return text_errorf(err, errlen, "out of memory");
	json_array_foreach(hami, i, h) {
		if (family_clashes(cfg, h)) {
			if (note_dropped(cfg, json_string_value(json_object_get(h, "name")))) {
				json_decref(list);
				return text_errorf(err, errlen, "out of memory");
			}
			continue;
		}
		if (json_array_append(list, (json_t *)h)) {
			json_decref(list);
			return text_errorf(err, errlen, "out of memory");
		}
	}
	rc = set_families(cfg, path, list, err, errlen);
	json_decref(list);
	return rc;
}

int config_build(struct config *cfg, const struct config_source *src,
		 const struct config_bytes *file,
		 const struct config_bytes *hami, char *err, size_t errlen)
{
	const char *want = src->hami_path ? src->hami_path : "";
	json_t *hamis = NULL;
	bool devices = false;
	char msg[512];
	size_t i;

	if (config_init(cfg))
		return text_errorf(err, errlen, "out of memory");
	if (src->hami_path) {
		hamis = hami_devices(src->hami_path, hami->data, hami->len,
					cfg->devices[0].tolerations, err,
					errlen);
		if (!hamis ||
		    set_families(cfg, src->hami_path, hamis, err, errlen))
			goto fail;
	}
	if (src->path) {
		if (load_file(cfg, src->path, file, &devices, err, errlen))
			goto fail;
		if (!src->hami_from_flag &&
		    strcmp(cfg->hami_device_config, want)) {
			text_errorf(err, errlen,
				    "config %s: hamiDeviceConfig: \"%.200s\" is not the file read at start (\"%.200s\"): restart to read another",
				    src->path, cfg->hami_device_config, want);
			goto fail;
		}
		if (hamis && devices &&
		    add_hami_families(cfg, src->hami_path, hamis, err,
				      errlen))
			goto fail;
		if (config_check(cfg, msg, sizeof(msg))) {
			text_errorf(err, errlen, "config %s: %s", src->path,
				    msg);
			goto fail;
		}
	}
	for (i = 0; i < src->nsettings; i++) {
		const struct config_setting *s = &src->settings[i];

		if (s->set(cfg, s->what, s->value, err, errlen))
			goto fail;
	}
	if (config_check(cfg, err, errlen))
		goto fail;
	json_decref(hamis);
	return 0;
fail:
	json_decref(hamis);
	config_release(cfg);
	return -1;
}

char *config_hami_path(const char *data, size_t len)
{
	char label[8], err[8];
	const char *at;
	json_t *root = file_config("", data, len, label, sizeof(label), &at,
				   err, sizeof(err));
	const char *s = json_string_value(json_object_get(root,
							   "hamiDeviceConfig"));
	char *path = s && s[0] ? strdup(s) : NULL;

	json_decref(root);
	return path;
}

const struct config *config_select(const struct config *cfg, const char *ns,
				   size_t nslen, const json_t *labels)
{
	const struct profile *first = NULL;
	size_t i, j;

	for (i = 0; i < cfg->nprofiles; i++) {
		const struct profile *p = &cfg->profiles[i];

		if (p->by_namespace &&
		    pattern_set_findn(&p->namespaces, ns, nslen) < 0)
			continue;
		/* The first namespace profile that matches: the one that
		 * applies, or the base of a podLabels one before it. */
		if (p->ns_ordinal)
			return first ? &first->layered[p->ns_ordinal - 1] :
				       &p->cfg;
		if (first)
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
			first = p;
	}
	return first ? &first->cfg : cfg;
}
