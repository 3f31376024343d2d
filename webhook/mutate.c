/*
 * mutate.c - writing the operations of a decided pod (mutate.h).
 *
 * Where the pod may lack the map or the list that gets new members
 * (resources.limits, resources.requests, spec.tolerations,
 * metadata.annotations), add_members() decides between one add of the
 * whole value and one add per member.
 */
#include <stdio.h>
#include <string.h>

#include "mutate.h"
#include "text.h"
#include "toleration.h"

enum env_var {
	ENV_TASK_PRIORITY,
	ENV_CORE_POLICY,
	ENV_OOM_KILLER,
	ENV_VISIBLE_DEVICES,
	ENV_NVARS
};

static const char *const env_names[ENV_NVARS] = {
	"CUDA_TASK_PRIORITY",
	"GPU_CORE_UTILIZATION_POLICY",
	"ACTIVE_OOM_KILLER",
	"NVIDIA_VISIBLE_DEVICES",
};

/* The state of one mutate_pod(). */
struct writer {
	const struct config *cfg;
	const struct pod *pod;
	struct patch *patch;
	json_t *warnings;
	bool oom;
};

/* "/spec/containers/3" and so on into b ("/ephemeralContainers/0" for a
 * list of the object itself). */
static void container_pointer(struct buf *b, const struct pod_container *c)
{
	buf_addf(b, "%s/%s/%zu", c->top ? "" : "/spec", c->list, c->index);
}

/* Appends one operation; value is stolen. */
static void push(struct writer *w, const char *op, const struct buf *path,
		 json_t *value)
{
	if (buf_failed(path)) {
		json_decref(value);
		w->oom = true;
	} else if (patch_push(w->patch, op, buf_str(path), value)) {
		w->oom = true;
	}
}

/*
 * Adds the members of items (an object, or an array) to the map or list
 * <path>/<parent_key>/<key>, where parent is the pod's value at
 * <path>/<parent_key> and map its value at <key> (each NULL when absent):
 * one add of {key: items} when parent is missing, one add of items when
 * map is missing, else one add per member, at .../<member key> for an
 * object and at .../- for an array.  Nothing when items is empty.  path
 * holds the base on entry and is changed; items is consumed.
 */
static void add_members(struct writer *w, struct buf *path,
			const json_t *parent, const char *parent_key,
			const json_t *map, const char *key, json_t *items)
{
	size_t base, i;
	const char *k;
	json_t *v;

	if (json_is_array(items) ? !json_array_size(items)
				 : !json_object_size(items)) {
		json_decref(items);
		return;
	}
	patch_pointer_append(path, parent_key);
	if (!parent) {
		push(w, "add", path, json_pack("{s:o}", key, items));
		return;
	}
	patch_pointer_append(path, key);
	if (!map) {
		push(w, "add", path, items);
		return;
	}
	base = path->len;
	if (json_is_array(items)) {
		buf_add(path, "/-");
		json_array_foreach(items, i, v)
			push(w, "add", path, json_incref(v));
	} else {
		json_object_foreach(items, k, v) {
			buf_truncate(path, base);
			patch_pointer_append(path, k);
			push(w, "add", path, json_incref(v));
		}
	}
	json_decref(items);
}

/*
 * The warning for key, whose value of 0 counted as not set (behaviour
 * §3.2): the value as written, the limit's or else the request's.
 */
static void warn_unset(struct writer *w, const struct pod_container *c,
		       const struct pod_slot *s, const char *key)
{
	const struct vgpu_pair *lists[2] = { s->limits, s->requests };
	const size_t counts[2] = { s->nlimits, s->nrequests };
	char value[POD_LINE_SIZE];
	size_t len = strlen(key), l, i;

	value[0] = '\0';
	for (l = 0; l < 2 && !value[0]; l++)
		for (i = 0; i < counts[l] && !value[0]; i++)
			if (lists[l][i].key_len == len &&
			    !memcmp(lists[l][i].key, key, len))
				text_mask_cutn(value, sizeof(value),
					       lists[l][i].value,
					       lists[l][i].value_len,
					       POD_LINE_CHARS);
	pod_warnf(w->warnings, &w->oom,
		  "container \"%s\": %s=%s counts as not set, as HAMi reads it",
		  c->label, key, value);
}

/* The warnings and the limits/requests entries of one family slot. */
static void collect_resources(struct writer *w, const struct pod_container *c,
			      const struct device *dev,
			      const struct pod_slot *s, json_t *limits,
			      json_t *requests)
{
	static const char *const reasons[VGPU_NRESOURCES] = {
		[VGPU_COUNT] = "defaultGPUNum",
		[VGPU_MEMORY] = "defaultMemory",
		[VGPU_MEMORY_PERCENTAGE] = "defaultMemory is 0",
		[VGPU_CORES] = "defaultCores",
	};
	static const unsigned from_profile[VGPU_NRESOURCES] = {
		[VGPU_COUNT] = DEVICE_FROM_PROFILE_GPU_NUM,
		[VGPU_MEMORY] = DEVICE_FROM_PROFILE_MEMORY,
		[VGPU_MEMORY_PERCENTAGE] = DEVICE_FROM_PROFILE_MEMORY,
		[VGPU_CORES] = DEVICE_FROM_PROFILE_CORES,
	};
	const struct vgpu_request *r = &s->req;
	int res;

	if (r->kind == VGPU_KIND_SKIPPED) {
		for (res = VGPU_MEMORY; res <= VGPU_CORES; res++)
			if (r->present & VGPU_BIT(res))
				break;
		pod_warnf(w->warnings, &w->oom,
			  "container \"%s\": %s without %s and defaultGPUNum is 0; not a vGPU container",
			  c->label, dev->resource[res],
			  dev->resource[VGPU_COUNT]);
		return;
	}
	for (res = 0; res < VGPU_NRESOURCES; res++) {
		const char *key = dev->resource[res];

		if (s->unset & VGPU_BIT(res))
			warn_unset(w, c, s, key);
		if (r->copied & VGPU_BIT(res)) {
			char value[POD_LINE_SIZE];
			size_t i;

			value[0] = '\0';
			for (i = 0; i < s->nrequests; i++)
				if (!strcmp(s->requests[i].key, key))
					text_mask_cutn(value, sizeof(value),
						       s->requests[i].value,
						       s->requests[i].value_len,
						       POD_LINE_CHARS);
			if (json_object_set_new(limits, key,
					json_deep_copy(s->request_value[res])))
				w->oom = true;
			pod_warnf(w->warnings, &w->oom,
				  "container \"%s\": copied request %s=%s into limits",
				  c->label, key, value);
		} else if (r->defaulted & VGPU_BIT(res)) {
			char text[24];
			const char *reason = reasons[res], *profile = NULL;

			snprintf(text, sizeof(text), "%lld",
				 (long long)r->value[res]);
			if (res == VGPU_CORES && dev->family.default_cores == 0)
				reason = "whole device";
			else if (dev->from_profile & from_profile[res])
				profile = w->cfg->profile;
			if (json_object_set_new(limits, key, json_string(text)) ||
			    (requests && json_object_set_new(requests, key,
							     json_string(text))))
				w->oom = true;
			if (profile)
				pod_warnf(w->warnings, &w->oom,
					  "container \"%s\": set %s=%s (%s, profile \"%s\")",
					  c->label, key, text, reason, profile);
			else
				pod_warnf(w->warnings, &w->oom,
					  "container \"%s\": set %s=%s (%s)",
					  c->label, key, text, reason);
		}
	}
}

/* The value each env variable should have in c; NULL when none. */
static void wanted_env(const struct writer *w, const struct pod_container *c,
		       const char *values[ENV_NVARS], char priority[24])
{
	const struct config *cfg = w->cfg;
	size_t f;

	memset(values, 0, sizeof(*values) * ENV_NVARS);
	if (cfg->allocation != CONFIG_ALLOCATION_HAMI)
		return; /* HAMi's env, and overwriteEnv, are HAMi's only */
	for (f = 0; f < cfg->ndevices; f++) {
		const struct device *dev = &cfg->devices[f];
		const struct vgpu_request *r = &c->slots[f].req;

		if (r->kind != VGPU_KIND_SHARED)
			continue;
		if (!values[ENV_TASK_PRIORITY] &&
		    (r->present & VGPU_BIT(VGPU_PRIORITY))) {
			snprintf(priority, 24, "%lld",
				 (long long)r->value[VGPU_PRIORITY]);
			values[ENV_TASK_PRIORITY] = priority;
		}
		if (!values[ENV_CORE_POLICY] &&
		    (!strcmp(dev->gpu_core_policy, "force") ||
		     !strcmp(dev->gpu_core_policy, "disable")))
			values[ENV_CORE_POLICY] = dev->gpu_core_policy;
		if (!values[ENV_OOM_KILLER] && dev->active_oom_killer[0])
			values[ENV_OOM_KILLER] = dev->active_oom_killer;
	}
	if (!c->vgpu && cfg->any_overwrite_env)
		values[ENV_VISIBLE_DEVICES] = "none";
}

/* The number of members of obj that are not null. */
static size_t count_present(const json_t *obj)
{
	const char *k;
	json_t *v;
	size_t n = 0;

	json_object_foreach((json_t *)obj, k, v)
		n += !json_is_null(v);
	return n;
}

/* The index of the last env entry named name, or -1. */
static long last_env(const json_t *env, const char *name)
{
	long found = -1;
	size_t i;
	json_t *e;

	json_array_foreach(env, i, e) {
		const char *n = json_string_value(json_object_get(e, "name"));

		if (n && !strcmp(n, name))
			found = (long)i;
	}
	return found;
}

/* The env entries of c the env guard removes before index. */
static size_t removed_before(const struct pod_container *c, size_t index)
{
	size_t n = 0;

	while (n < c->nstrip && c->strip[n] < index)
		n++;
	return n;
}

/*
 * The removals of the env guard in c, by descending index so that each
 * index is right when it is applied (behaviour §5.3).  path holds the
 * container's pointer on entry and is changed.
 */
static void write_env_removals(struct writer *w, const struct pod_container *c,
			       struct buf *path)
{
	size_t base = path->len, k;

	for (k = c->nstrip; k-- > 0;) {
		buf_truncate(path, base);
		buf_addf(path, "/env/%zu", c->strip[k]);
		push(w, "remove", path, NULL);
	}
}

bool mutate_env_written(const struct config *cfg,
			const struct pod_container *c, const char *name,
			const char *value, size_t len)
{
	struct writer w = { cfg, NULL, NULL, NULL, false };
	const char *values[ENV_NVARS];
	char priority[24];
	int v;

	wanted_env(&w, c, values, priority);
	for (v = 0; v < ENV_NVARS; v++)
		if (values[v] && !strcmp(name, env_names[v]))
			return !value || (strlen(values[v]) == len &&
					  !memcmp(values[v], value, len));
	return false;
}

/*
 * Sets the env variables c should have (behaviour §3.8): one add of
 * the whole list when c has no env, else a replace of the last entry of
 * that name when it is not exactly ours (with a warning), or an append.
 * path holds the container's pointer on entry and is changed.
 */
static void write_env(struct writer *w, const struct pod_container *c,
		      struct buf *path)
{
	const char *values[ENV_NVARS];
	char priority[24];
	json_t *added = NULL;
	size_t base;
	int v;

	wanted_env(w, c, values, priority);
	buf_add(path, "/env");
	base = path->len;
	for (v = 0; v < ENV_NVARS; v++) {
		json_t *entry, *old;
		const char *old_value;
		long i;

		if (!values[v])
			continue;
		entry = json_pack("{s:s, s:s}", "name", env_names[v], "value",
				  values[v]);
		if (!c->env) {
			if (!added && !(added = json_array()))
				w->oom = true;
			if (json_array_append_new(added, entry))
				w->oom = true;
			continue;
		}
		i = last_env(c->env, env_names[v]);
		old = i >= 0 ? json_array_get(c->env, (size_t)i) : NULL;
		old_value = json_string_value(json_object_get(old, "value"));
		if (old && count_present(old) == 2 && old_value &&
		    !strcmp(old_value, values[v])) {
			json_decref(entry);
			continue;
		}
		buf_truncate(path, base);
		if (!old) {
			buf_add(path, "/-");
			push(w, "add", path, entry);
			continue;
		}
		buf_addf(path, "/%ld", i - (long)removed_before(c, (size_t)i));
		push(w, "replace", path, entry);
		if (!json_is_null(json_object_get(old, "valueFrom")) &&
		    json_object_get(old, "valueFrom")) {
			pod_warnf(w->warnings, &w->oom,
				  "container \"%s\": replaced env %s (valueFrom) with \"%s\"",
				  c->label, env_names[v], values[v]);
		} else {
			char text[POD_LINE_SIZE];

			pod_warnf(w->warnings, &w->oom,
				  "container \"%s\": replaced env %s \"%s\" with \"%s\"",
				  c->label, env_names[v],
				  pod_label(text, old_value ? old_value : ""),
				  values[v]);
		}
	}
	if (added) {
		buf_truncate(path, base);
		push(w, "add", path, added);
	}
}

/* The operations of one container: limits, requests, then env. */
static void write_container(struct writer *w, const struct pod_container *c)
{
	const struct config *cfg = w->cfg;
	json_t *limits = json_object();
	json_t *requests = c->requests ? json_object() : NULL;
	struct buf path = BUF_INIT;
	size_t f, base;

	if (!limits || (c->requests && !requests)) {
		json_decref(limits);
		json_decref(requests);
		w->oom = true;
		return;
	}
	/* allocation dra: the count passes unchanged, nothing is added. */
	for (f = 0; cfg->allocation == CONFIG_ALLOCATION_HAMI &&
		    f < cfg->ndevices; f++)
		collect_resources(w, c, &cfg->devices[f], &c->slots[f], limits,
				  requests);
	container_pointer(&path, c);
	base = path.len;
	add_members(w, &path, c->resources, "resources", c->limits, "limits",
		    limits);
	if (requests) {
		buf_truncate(&path, base);
		add_members(w, &path, c->resources, "resources", c->requests,
			    "requests", requests);
	}
	buf_truncate(&path, base);
	write_env_removals(w, c, &path);
	buf_truncate(&path, base);
	write_env(w, c, &path);
	buf_release(&path);
}

/* Whether family f is in use: some container is its vGPU container. */
static bool family_in_use(const struct pod *pod, size_t f)
{
	size_t i;

	for (i = 0; i < pod->ncontainers; i++)
		if (pod->containers[i].slots[f].req.kind == VGPU_KIND_SHARED)
			return true;
	return false;
}

/*
 * Adds each toleration of each family in use, unless an equal one is on
 * the pod or already added.  path is changed.
 */
static void write_tolerations(struct writer *w, struct buf *path)
{
	const struct pod *pod = w->pod;
	json_t *added = json_array();
	size_t f, i;
	json_t *t;

	if (!added) {
		w->oom = true;
		return;
	}
	for (f = 0; f < w->cfg->ndevices; f++) {
		if (!family_in_use(pod, f))
			continue;
		json_array_foreach(w->cfg->devices[f].tolerations, i, t) {
			if (toleration_listed(pod->tolerations, t) ||
			    toleration_listed(added, t))
				continue;
			if (json_array_append_new(added, json_deep_copy(t)))
				w->oom = true;
		}
	}
	buf_truncate(path, 0);
	add_members(w, path, pod->spec, "spec", pod->tolerations,
		    "tolerations", added);
}

/* The removals of the annotation guard, in byte order of the keys. */
static void write_annotation_removals(struct writer *w)
{
	struct buf path = BUF_INIT;
	size_t i;
	json_t *k;

	json_array_foreach(w->pod->strip_keys, i, k) {
		buf_truncate(&path, 0);
		buf_add(&path, "/metadata/annotations");
		patch_pointer_append(&path, json_string_value(k));
		push(w, "remove", &path, NULL);
	}
	buf_release(&path);
}

/* The scheduler-policy annotations the pod lacks.  path is changed. */
static void write_annotations(struct writer *w, struct buf *path)
{
	const struct config *cfg = w->cfg;
	const struct pod *pod = w->pod;
	const char *policies[2][2] = {
		{ POD_ANNOTATION_NODE_POLICY, cfg->node_scheduler_policy },
		{ POD_ANNOTATION_GPU_POLICY, cfg->gpu_scheduler_policy },
	};
	json_t *annotations = json_object();
	int i;

	if (!annotations) {
		w->oom = true;
		return;
	}
	for (i = 0; i < 2; i++) {
		const char *have = json_string_value(
			json_object_get(pod->annotations, policies[i][0]));

		if (policies[i][1][0] && (!have || !have[0]) &&
		    json_object_set_new(annotations, policies[i][0],
					json_string(policies[i][1])))
			w->oom = true;
	}
	buf_truncate(path, 0);
	add_members(w, path, pod->metadata, "metadata", pod->annotations,
		    "annotations", annotations);
}

/*
 * The pod-level operations of a vGPU pod, in order: schedulerName,
 * tolerations, runtimeClassName, the scheduler-policy annotations (after
 * the annotation guard's removals).  With allocation dra only the
 * tolerations and the removals: the rest is HAMi's.
 */
static void write_pod_fields(struct writer *w)
{
	const struct config *cfg = w->cfg;
	const struct pod *pod = w->pod;
	struct buf path = BUF_INIT;
	size_t f;

	if (cfg->allocation == CONFIG_ALLOCATION_DRA) {
		write_tolerations(w, &path);
		write_annotation_removals(w);
		buf_release(&path);
		return;
	}
	if (strcmp(pod->scheduler_name, cfg->scheduler_name)) {
		buf_add(&path, "/spec/schedulerName");
		push(w, "add", &path, json_string(cfg->scheduler_name));
	}
	write_tolerations(w, &path);
	for (f = 0; !pod->runtime_class_name[0] && f < cfg->ndevices; f++) {
		if (!cfg->devices[f].runtime_class_name[0] ||
		    !family_in_use(pod, f))
			continue;
		buf_truncate(&path, 0);
		buf_add(&path, "/spec/runtimeClassName");
		push(w, "add", &path,
		     json_string(cfg->devices[f].runtime_class_name));
		break;
	}
	write_annotation_removals(w);
	write_annotations(w, &path);
	buf_release(&path);
}

int mutate_pod(const struct config *cfg, const struct pod *pod,
	       struct patch *patch, json_t *warnings)
{
	struct writer w = { cfg, pod, patch, warnings, false };
	size_t i;

	for (i = 0; i < pod->ncontainers; i++)
		write_container(&w, &pod->containers[i]);
	if (pod->vgpu)
		write_pod_fields(&w);
	else
		write_annotation_removals(&w);
	return w.oom ? -1 : 0;
}

int mutate_strip(const struct pod *pod, struct patch *patch)
{
	struct writer w = { NULL, pod, patch, NULL, false };
	struct buf path = BUF_INIT;
	size_t i;

	for (i = 0; i < pod->ncontainers; i++) {
		buf_truncate(&path, 0);
		container_pointer(&path, &pod->containers[i]);
		write_env_removals(&w, &pod->containers[i], &path);
	}
	buf_release(&path);
	write_annotation_removals(&w);
	return w.oom ? -1 : 0;
}
