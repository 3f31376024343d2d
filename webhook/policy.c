/*
 * policy.c - one pod: read it, resolve every container, decide, and write
 * the operations and warnings.
 *
 * The work is done in three passes over a borrowed pod:
 *   1. read (pod_read()): check the JSON type of every field the policy
 *      reads (a wrong type denies with 400 and the JSON path) and collect
 *      each container's resource entries per family;
 *   2. decide: the gates of SPEC section 4 and the library's resolution;
 *   3. write: the operations in the order of SPEC section 5.3.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pod.h"
#include "policy.h"
#include "toleration.h"

_Static_assert(POD_LINE_CHARS == POLICY_WARNING_MAX_CHARS,
	       "a warning is a line about the pod");

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

/* The state of one policy_decide(). */
struct decider {
	const struct config *cfg;
	struct decision *d;
	struct pod pod;
	json_t *pod_warnings; /* policy hits, given after container warnings */
	bool oom;
};

int decision_init(struct decision *d)
{
	memset(d, 0, sizeof(*d));
	d->warnings = json_array();
	if (!d->warnings || patch_init(&d->patch)) {
		decision_release(d);
		return -1;
	}
	return 0;
}

void decision_release(struct decision *d)
{
	free(d->message);
	patch_release(&d->patch);
	json_decref(d->warnings);
	memset(d, 0, sizeof(*d));
}

const char *decision_reason(int code)
{
	switch (code) {
	case 400:
		return "BadRequest";
	case 403:
		return "Forbidden";
	case 422:
		return "Invalid";
	default:
		return "InternalError";
	}
}

/* Denies with code and the message in b (which is released). */
static void deny(struct decider *p, int code, struct buf *b)
{
	if (buf_failed(b)) {
		p->oom = true;
		buf_release(b);
		return;
	}
	p->d->code = code;
	p->d->message = buf_detach(b, NULL);
	if (!p->d->message)
		p->oom = true;
}

/* Denies with code and a copy of text. */
static void deny_text(struct decider *p, int code, const char *text)
{
	struct buf b = BUF_INIT;

	buf_add(&b, text);
	deny(p, code, &b);
}

static void denyf(struct decider *p, int code, const char *fmt, ...)
	UTIL_PRINTF(3, 4);

static void denyf(struct decider *p, int code, const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	deny_text(p, code, line);
}

/* ------------------------------------------------------------------------
 * Pass 2: decide
 */

/* Resolves every container; denies with 422 and every error found. */
static bool resolve_all(struct decider *p)
{
	struct buf msg = BUF_INIT;
	size_t i, f, e;

	for (i = 0; i < p->pod.ncontainers; i++) {
		struct pod_container *c = &p->pod.containers[i];

		for (f = 0; f < p->cfg->ndevices; f++) {
			struct pod_slot *s = &c->slots[f];
			struct vgpu_errors errs;

			if (!vgpu_resolve(&p->cfg->devices[f].family, s->limits,
					  s->nlimits, s->requests, s->nrequests,
					  &s->req, &errs)) {
				c->vgpu |= s->req.kind == VGPU_KIND_SHARED;
				continue;
			}
			for (e = 0; e < errs.count; e++)
				buf_addf(&msg, "%scontainer \"%s\": %s",
					 msg.len ? "; " : "", c->label,
					 errs.error[e].message);
		}
	}
	if (!msg.len && !buf_failed(&msg))
		return true;
	deny(p, 422, &msg);
	return false;
}

static bool any_vgpu(const struct decider *p)
{
	size_t i;

	for (i = 0; i < p->pod.ncontainers; i++)
		if (p->pod.containers[i].vgpu)
			return true;
	return false;
}

/* Whether family f is in use: some container is its vGPU container. */
static bool family_in_use(const struct decider *p, size_t f)
{
	size_t i;

	for (i = 0; i < p->pod.ncontainers; i++)
		if (p->pod.containers[i].slots[f].req.kind == VGPU_KIND_SHARED)
			return true;
	return false;
}

/* Step 6 of section 4: privileged containers and spec.nodeName. */
static bool check_policies(struct decider *p)
{
	const struct config *cfg = p->cfg;
	char line[POD_LINE_SIZE + 160];
	size_t i;

	for (i = 0; i < p->pod.ncontainers; i++) {
		const struct pod_container *c = &p->pod.containers[i];

		if (!c->privileged)
			continue;
		snprintf(line, sizeof(line),
			 "container \"%s\": privileged containers can see every GPU of the node (privilegedPolicy: %s)",
			 c->label,
			 cfg->privileged_policy == POLICY_DENY ? "deny" : "warn");
		if (cfg->privileged_policy == POLICY_DENY) {
			denyf(p, 403, "%s", line);
			return false;
		}
		pod_warnf(p->pod_warnings, &p->oom, "%s", line);
	}
	if (p->pod.node_name[0]) {
		snprintf(line, sizeof(line),
			 "spec.nodeName \"%s\" bypasses the vGPU scheduler (nodeNamePolicy: %s)",
			 p->pod.node_label,
			 cfg->node_name_policy == POLICY_DENY ? "deny" : "warn");
		if (cfg->node_name_policy == POLICY_DENY) {
			denyf(p, 403, "%s", line);
			return false;
		}
		pod_warnf(p->pod_warnings, &p->oom, "%s", line);
	}
	return true;
}

/* ------------------------------------------------------------------------
 * Pass 3: write
 */

/* "/spec/containers/3" and so on into b. */
static void container_pointer(struct buf *b, const struct pod_container *c)
{
	buf_addf(b, "/spec/%s/%zu", c->list, c->index);
}

/* Appends one operation; value is stolen. */
static void push(struct decider *p, const char *op, const struct buf *path,
		 json_t *value)
{
	if (buf_failed(path)) {
		json_decref(value);
		p->oom = true;
	} else if (patch_push(&p->d->patch, op, buf_str(path), value)) {
		p->oom = true;
	}
}

/*
 * Writes the entries of keys (an object) into the map at <base>/<sub>:
 * one add of the whole object when the map is missing (or its parent, in
 * which case parent_key wraps it), else one add per key.  keys is consumed.
 */
static void write_map(struct decider *p, const struct pod_container *c,
		      json_t *parent, const char *parent_key, json_t *map,
		      const char *key, json_t *keys)
{
	struct buf path = BUF_INIT;
	const char *k;
	json_t *v;

	if (!json_object_size(keys)) {
		json_decref(keys);
		return;
	}
	container_pointer(&path, c);
	if (!parent) {
		patch_pointer_append(&path, parent_key);
		push(p, "add", &path, json_pack("{s:o}", key, keys));
	} else if (!map) {
		patch_pointer_append(&path, parent_key);
		patch_pointer_append(&path, key);
		push(p, "add", &path, keys);
	} else {
		size_t base;

		patch_pointer_append(&path, parent_key);
		patch_pointer_append(&path, key);
		base = path.len;
		json_object_foreach(keys, k, v) {
			buf_truncate(&path, base);
			patch_pointer_append(&path, k);
			push(p, "add", &path, json_incref(v));
		}
		json_decref(keys);
	}
	buf_release(&path);
}

/* The warnings and the limits/requests entries of one family slot. */
static void collect_resources(struct decider *p, const struct pod_container *c,
			      const struct device *dev, const struct pod_slot *s,
			      json_t *limits, json_t *requests)
{
	static const char *const reasons[VGPU_NRESOURCES] = {
		[VGPU_COUNT] = "defaultGPUNum",
		[VGPU_MEMORY] = "defaultMemory",
		[VGPU_MEMORY_PERCENTAGE] = "defaultMemory is 0",
		[VGPU_CORES] = "defaultCores",
	};
	const struct vgpu_request *r = &s->req;
	int res;

	if (r->kind == VGPU_KIND_SKIPPED) {
		for (res = VGPU_MEMORY; res <= VGPU_CORES; res++)
			if (r->present & VGPU_BIT(res))
				break;
		pod_warnf(p->d->warnings, &p->oom,
		          "container \"%s\": %s without %s and defaultGPUNum is 0; not a vGPU container",
		          c->label, dev->resource[res], dev->resource[VGPU_COUNT]);
		return;
	}
	for (res = 0; res < VGPU_NRESOURCES; res++) {
		const char *key = dev->resource[res];

		if (r->copied & VGPU_BIT(res)) {
			char value[POD_LINE_SIZE];
			size_t i;

			value[0] = '\0';
			for (i = 0; i < s->nrequests; i++)
				if (!strcmp(s->requests[i].key, key))
					util_mask_cut(value, sizeof(value),
						      s->requests[i].value,
						      s->requests[i].value_len,
						      POD_LINE_CHARS);
			if (json_object_set_new(limits, key,
					json_deep_copy(s->request_value[res])))
				p->oom = true;
			pod_warnf(p->d->warnings, &p->oom,
			          "container \"%s\": copied request %s=%s into limits",
			          c->label, key, value);
		} else if (r->defaulted & VGPU_BIT(res)) {
			char text[24];
			const char *reason = reasons[res];

			snprintf(text, sizeof(text), "%lld",
				 (long long)r->value[res]);
			if (res == VGPU_CORES && dev->family.default_cores == 0)
				reason = "whole device";
			if (json_object_set_new(limits, key, json_string(text)) ||
			    (requests && json_object_set_new(requests, key,
							     json_string(text))))
				p->oom = true;
			pod_warnf(p->d->warnings, &p->oom,
			          "container \"%s\": set %s=%s (%s)", c->label, key,
			          text, reason);
		}
	}
}

/* The value each env variable should have in c; NULL when none. */
static void wanted_env(const struct decider *p, const struct pod_container *c,
		       const char *values[ENV_NVARS], char priority[24])
{
	size_t f;

	memset(values, 0, sizeof(*values) * ENV_NVARS);
	for (f = 0; f < p->cfg->ndevices; f++) {
		const struct device *dev = &p->cfg->devices[f];
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
	if (!c->vgpu && p->cfg->any_overwrite_env)
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

/*
 * Sets the env variables c should have (SPEC section 3 step 8): one add of
 * the whole list when c has no env, else a replace of the last entry of
 * that name when it is not exactly ours (with a warning), or an append.
 */
static void write_env(struct decider *p, const struct pod_container *c)
{
	const char *values[ENV_NVARS];
	char priority[24];
	struct buf path = BUF_INIT;
	json_t *added = NULL;
	size_t base;
	int v;

	wanted_env(p, c, values, priority);
	container_pointer(&path, c);
	buf_add(&path, "/env");
	base = path.len;
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
				p->oom = true;
			if (json_array_append_new(added, entry))
				p->oom = true;
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
		buf_truncate(&path, base);
		if (!old) {
			buf_add(&path, "/-");
			push(p, "add", &path, entry);
			continue;
		}
		buf_addf(&path, "/%ld", i);
		push(p, "replace", &path, entry);
		if (!json_is_null(json_object_get(old, "valueFrom")) &&
		    json_object_get(old, "valueFrom")) {
			pod_warnf(p->d->warnings, &p->oom,
			          "container \"%s\": replaced env %s (valueFrom) with \"%s\"",
			          c->label, env_names[v], values[v]);
		} else {
			char text[POD_LINE_SIZE];

			pod_warnf(p->d->warnings, &p->oom,
			          "container \"%s\": replaced env %s \"%s\" with \"%s\"",
			          c->label, env_names[v],
			          pod_label(text, old_value ? old_value : ""),
			          values[v]);
		}
	}
	if (added) {
		buf_truncate(&path, base);
		push(p, "add", &path, added);
	}
	buf_release(&path);
}

/* The operations of one container: limits, requests, then env. */
static void write_container(struct decider *p, const struct pod_container *c)
{
	json_t *limits = json_object();
	json_t *requests = c->requests ? json_object() : NULL;
	size_t f;

	if (!limits || (c->requests && !requests)) {
		json_decref(limits);
		json_decref(requests);
		p->oom = true;
		return;
	}
	for (f = 0; f < p->cfg->ndevices; f++)
		collect_resources(p, c, &p->cfg->devices[f], &c->slots[f],
				  limits, requests);
	write_map(p, c, c->resources, "resources", c->limits, "limits", limits);
	if (requests)
		write_map(p, c, c->resources, "resources", c->requests,
			  "requests", requests);
	write_env(p, c);
}

/*
 * Adds each toleration of each family in use, unless an equal one is on
 * the pod or already added: one add of the list when the pod has none.
 */
static void write_tolerations(struct decider *p)
{
	struct buf path = BUF_INIT;
	json_t *added = json_array();
	size_t f, i;
	json_t *t;

	if (!added) {
		p->oom = true;
		return;
	}
	for (f = 0; f < p->cfg->ndevices; f++) {
		if (!family_in_use(p, f))
			continue;
		json_array_foreach(p->cfg->devices[f].tolerations, i, t) {
			if (toleration_listed(p->pod.tolerations, t) ||
			    toleration_listed(added, t))
				continue;
			if (json_array_append_new(added, json_deep_copy(t)))
				p->oom = true;
		}
	}
	if (!json_array_size(added)) {
		json_decref(added);
		return;
	}
	buf_add(&path, "/spec/tolerations");
	if (!p->pod.tolerations) {
		push(p, "add", &path, added);
	} else {
		buf_add(&path, "/-");
		json_array_foreach(added, i, t)
			push(p, "add", &path, json_incref(t));
		json_decref(added);
	}
	buf_release(&path);
}

/*
 * The pod-level operations of a vGPU pod, in order: schedulerName,
 * tolerations, runtimeClassName, the scheduler-policy annotations.
 */
static void write_pod_fields(struct decider *p)
{
	const struct config *cfg = p->cfg;
	struct buf path = BUF_INIT;
	const char *policies[2][2] = {
		{ POD_ANNOTATION_NODE_POLICY, cfg->node_scheduler_policy },
		{ POD_ANNOTATION_GPU_POLICY, cfg->gpu_scheduler_policy },
	};
	json_t *annotations;
	size_t f;
	int i;

	if (strcmp(p->pod.scheduler_name, cfg->scheduler_name)) {
		buf_add(&path, "/spec/schedulerName");
		push(p, "add", &path, json_string(cfg->scheduler_name));
	}
	write_tolerations(p);
	for (f = 0; !p->pod.runtime_class_name[0] && f < cfg->ndevices; f++) {
		if (!cfg->devices[f].runtime_class_name[0] ||
		    !family_in_use(p, f))
			continue;
		buf_truncate(&path, 0);
		buf_add(&path, "/spec/runtimeClassName");
		push(p, "add", &path,
		     json_string(cfg->devices[f].runtime_class_name));
		break;
	}

	annotations = json_object();
	for (i = 0; annotations && i < 2; i++) {
		const char *have = json_string_value(
			json_object_get(p->pod.annotations, policies[i][0]));

		if (policies[i][1][0] && (!have || !have[0]) &&
		    json_object_set_new(annotations, policies[i][0],
					json_string(policies[i][1])))
			p->oom = true;
	}
	if (!annotations) {
		p->oom = true;
	} else if (!json_object_size(annotations)) {
		json_decref(annotations);
	} else {
		const char *k;
		json_t *v;

		buf_truncate(&path, 0);
		if (!p->pod.metadata) {
			buf_add(&path, "/metadata");
			push(p, "add", &path,
			     json_pack("{s:o}", "annotations", annotations));
		} else if (!p->pod.annotations) {
			buf_add(&path, "/metadata/annotations");
			push(p, "add", &path, annotations);
		} else {
			json_object_foreach(annotations, k, v) {
				buf_truncate(&path, 0);
				buf_add(&path, "/metadata/annotations");
				patch_pointer_append(&path, k);
				push(p, "add", &path, json_incref(v));
			}
			json_decref(annotations);
		}
	}
	buf_release(&path);
}

/* Whether the scheduler gate of section 4 step 4 lets the pod through. */
static bool examined(const struct decider *p)
{
	const char *s = p->pod.scheduler_name;

	return !s[0] ||
	       (!strcmp(s, "default-scheduler") &&
		p->cfg->force_overwrite_default_scheduler) ||
	       !strcmp(s, p->cfg->scheduler_name);
}

static bool asks_vgpu(const struct decider *p)
{
	size_t i;

	for (i = 0; i < p->pod.ncontainers; i++)
		if (p->pod.containers[i].asks)
			return true;
	return false;
}

/* The steps of SPEC section 4, from the type checks to the operations. */
static void decide(struct decider *p, const json_t *pod)
{
	char err[1024];
	size_t i;

	switch (pod_read(&p->pod, p->cfg, pod, err, sizeof(err))) {
	case POD_OK:
		break;
	case POD_INVALID:
		deny_text(p, 400, err);
		return;
	default:
		p->oom = true;
		return;
	}
	if (!p->pod.napp) {
		denyf(p, 403, "pod has no containers");
		return;
	}
	if (!examined(p)) {
		if (asks_vgpu(p))
			pod_warnf(p->d->warnings, &p->oom,
				  "pod asks for vGPU resources but spec.schedulerName is \"%s\", not \"%s\"; left unchanged",
				  p->pod.scheduler_label, p->cfg->scheduler_name);
		return;
	}
	if (!resolve_all(p))
		return;
	if (any_vgpu(p) && !check_policies(p))
		return;
	for (i = 0; i < p->pod.ncontainers; i++)
		write_container(p, &p->pod.containers[i]);
	if (any_vgpu(p))
		write_pod_fields(p);
}

int policy_decide(const struct config *cfg, const json_t *pod,
		  struct decision *d)
{
	struct decider p;
	size_t i, more;
	json_t *w;

	p.cfg = cfg;
	p.d = d;
	p.oom = false;
	p.pod_warnings = json_array();
	if (!p.pod_warnings)
		return -1;

	decide(&p, pod);

	if (d->code) {
		/* A denial carries neither operations nor warnings. */
		json_array_clear(d->patch.ops);
		json_array_clear(d->warnings);
	} else {
		/* Pod-level warnings come last; past the cap, one count. */
		json_array_foreach(p.pod_warnings, i, w)
			if (json_array_append(d->warnings, w))
				p.oom = true;
		more = json_array_size(d->warnings);
		if (more > POLICY_WARNINGS_MAX) {
			json_t *kept = json_array();
			char line[48];

			for (i = 0; kept && i < POLICY_WARNINGS_MAX; i++)
				json_array_append(kept,
						  json_array_get(d->warnings, i));
			snprintf(line, sizeof(line), "... and %zu more",
				 more - POLICY_WARNINGS_MAX);
			if (!kept ||
			    json_array_size(kept) != POLICY_WARNINGS_MAX ||
			    json_array_append_new(kept, json_string(line)))
				p.oom = true;
			json_decref(d->warnings);
			d->warnings = kept ? kept : json_array();
		}
	}
	pod_release(&p.pod);
	json_decref(p.pod_warnings);
	return p.oom ? -1 : 0;
}
