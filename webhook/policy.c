/*
 * policy.c - one pod: read it, resolve every container, decide, and write
 * the operations and warnings.
 *
 * The work is done in three passes over a borrowed pod:
 *   1. read: check the JSON type of every field the policy reads (a wrong
 *      type denies with 400 and the JSON path) and collect each container's
 *      resource entries per family;
 *   2. decide: the gates of SPEC section 4 and the library's resolution;
 *   3. write: the operations in the order of SPEC section 5.3.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"
#include "toleration.h"

/*
 * Pod values in messages, control bytes removed and bounded: a warning is
 * cut at 120 characters anyway, so a value of 120 reads the same whole.
 */
#define LABEL_CHARS POLICY_WARNING_MAX_CHARS
#define LABEL_SIZE (LABEL_CHARS * 4 + 4)

#define ANNOTATION_NODE_POLICY "hami.io/node-scheduler-policy"
#define ANNOTATION_GPU_POLICY "hami.io/gpu-scheduler-policy"

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

/*
 * What the policy reads (policy.h).  Resource maps are kept whole, because
 * the family names come from the config.  An env entry keeps name and
 * value, and an empty stub of any other member, because an entry is "ours"
 * only when it has no other member that is not null.
 */
static const struct pick_field env_entry_fields[] = {
	PICK_FIELD("name", &pick_all),
	PICK_FIELD("value", &pick_all),
	PICK_END,
};
static const struct pick_rule env_entry_rule = {
	PICK_OBJECT, env_entry_fields, &pick_stub, NULL
};
static const struct pick_rule env_rule = {
	PICK_ARRAY, NULL, NULL, &env_entry_rule
};
static const struct pick_field resources_fields[] = {
	PICK_FIELD("limits", &pick_all),
	PICK_FIELD("requests", &pick_all),
	PICK_END,
};
static const struct pick_rule resources_rule = {
	PICK_OBJECT, resources_fields, NULL, NULL
};
static const struct pick_field security_fields[] = {
	PICK_FIELD("privileged", &pick_all),
	PICK_END,
};
static const struct pick_rule security_rule = {
	PICK_OBJECT, security_fields, NULL, NULL
};
static const struct pick_field container_fields[] = {
	PICK_FIELD("name", &pick_all),
	PICK_FIELD("resources", &resources_rule),
	PICK_FIELD("env", &env_rule),
	PICK_FIELD("securityContext", &security_rule),
	PICK_END,
};
static const struct pick_rule container_rule = {
	PICK_OBJECT, container_fields, NULL, NULL
};
static const struct pick_rule containers_rule = {
	PICK_ARRAY, NULL, NULL, &container_rule
};
static const struct pick_field toleration_fields[] = {
	PICK_FIELD("key", &pick_all),
	PICK_FIELD("operator", &pick_all),
	PICK_FIELD("value", &pick_all),
	PICK_FIELD("effect", &pick_all),
	PICK_END,
};
static const struct pick_rule toleration_rule = {
	PICK_OBJECT, toleration_fields, NULL, NULL
};
static const struct pick_rule tolerations_rule = {
	PICK_ARRAY, NULL, NULL, &toleration_rule
};
static const struct pick_field spec_fields[] = {
	PICK_FIELD("schedulerName", &pick_all),
	PICK_FIELD("nodeName", &pick_all),
	PICK_FIELD("runtimeClassName", &pick_all),
	PICK_FIELD("tolerations", &tolerations_rule),
	PICK_FIELD("initContainers", &containers_rule),
	PICK_FIELD("containers", &containers_rule),
	PICK_END,
};
static const struct pick_rule spec_rule = {
	PICK_OBJECT, spec_fields, NULL, NULL
};
static const struct pick_field annotations_fields[] = {
	PICK_FIELD(ANNOTATION_NODE_POLICY, &pick_all),
	PICK_FIELD(ANNOTATION_GPU_POLICY, &pick_all),
	PICK_END,
};
static const struct pick_rule annotations_rule = {
	PICK_OBJECT, annotations_fields, NULL, NULL
};
static const struct pick_field metadata_fields[] = {
	PICK_FIELD("name", &pick_all),
	PICK_FIELD("generateName", &pick_all),
	PICK_FIELD("annotations", &annotations_rule),
	PICK_END,
};
static const struct pick_rule metadata_rule = {
	PICK_OBJECT, metadata_fields, NULL, NULL
};
static const struct pick_field pod_fields[] = {
	PICK_FIELD("metadata", &metadata_rule),
	PICK_FIELD("spec", &spec_rule),
	PICK_END,
};
const struct pick_rule policy_pod_rule = {
	PICK_OBJECT, pod_fields, NULL, NULL
};

/* One family's entries in one container. */
struct slot {
	struct vgpu_pair limits[VGPU_NRESOURCES];
	struct vgpu_pair requests[VGPU_NRESOURCES];
	size_t nlimits, nrequests;
	json_t *request_value[VGPU_NRESOURCES]; /* borrowed, for copies */
	char text[2][VGPU_NRESOURCES][32];      /* JSON numbers as text */
	struct vgpu_request req;
};

struct container {
	const char *list; /* "initContainers" or "containers" */
	size_t index;
	const char *name;
	char label[LABEL_SIZE]; /* name, masked and cut for messages */
	json_t *resources; /* NULL when absent or null, likewise below */
	json_t *limits;
	json_t *requests;
	json_t *env;
	bool privileged;
	bool vgpu;     /* a vGPU container of at least one family */
	bool asks;     /* names a resource of some family */
	struct slot *slots; /* one per device family */
};

struct pod {
	const struct config *cfg;
	struct decision *d;
	json_t *metadata;
	json_t *annotations;
	json_t *spec;
	json_t *tolerations;
	const char *scheduler_name;
	const char *node_name;
	const char *runtime_class_name;
	char scheduler_label[LABEL_SIZE]; /* masked and cut for messages */
	char node_label[LABEL_SIZE];
	struct container *containers;
	size_t ncontainers;
	size_t napp; /* app containers, after the init containers */
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

/* A value from the pod, masked and cut to max_chars, into out. */
static const char *label(char out[LABEL_SIZE], const char *s, size_t max_chars)
{
	util_mask_cut(out, LABEL_SIZE, s, strlen(s), max_chars);
	return out;
}

/* Denies with code and the message in b (which is released). */
static void deny(struct pod *p, int code, struct buf *b)
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

static void denyf(struct pod *p, int code, const char *fmt, ...)
	UTIL_PRINTF(3, 4);

static void denyf(struct pod *p, int code, const char *fmt, ...)
{
	struct buf b = BUF_INIT;
	char line[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	buf_add(&b, line);
	deny(p, code, &b);
}

/* Appends one warning line to list: masked, cut, and counted. */
static void warnf(struct pod *p, json_t *list, const char *fmt, ...)
	UTIL_PRINTF(3, 4);

static void warnf(struct pod *p, json_t *list, const char *fmt, ...)
{
	char line[2048], cut[POLICY_WARNING_MAX_CHARS * 4 + 4];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	util_mask_cut(cut, sizeof(cut), line, strlen(line),
		      POLICY_WARNING_MAX_CHARS);
	if (json_array_append_new(list, json_string(cut)))
		p->oom = true;
}

/* ------------------------------------------------------------------------
 * Pass 1: read
 */

/*
 * Returns the member key of obj when it has type t, NULL when it is absent
 * or null, and denies with 400 naming the path (printf-style, formatted
 * only then) otherwise; *bad is then set.
 */
static json_t *vmember(struct pod *p, const json_t *obj, const char *key,
		       json_type t, bool *bad, const char *fmt, va_list ap)
{
	json_t *v = json_object_get(obj, key);
	char path[256];

	if (!v || json_is_null(v))
		return NULL;
	if (t == JSON_STRING && json_is_string(v) &&
	    strlen(json_string_value(v)) == json_string_length(v))
		return v;
	if (t != JSON_STRING && (json_typeof(v) == t ||
				 (t == JSON_TRUE && json_typeof(v) == JSON_FALSE)))
		return v;
	vsnprintf(path, sizeof(path), fmt, ap);
	if (json_is_string(v) && t == JSON_STRING)
		denyf(p, 400, "%s: contains a NUL character", path);
	else
		denyf(p, 400, "%s: expected %s, got %s", path,
		      t == JSON_OBJECT ? "an object" :
		      t == JSON_ARRAY ? "an array" :
		      t == JSON_STRING ? "a string" : "a boolean",
		      util_json_type(v));
	*bad = true;
	return NULL;
}

static json_t *member(struct pod *p, const json_t *obj, const char *key,
		      json_type t, bool *bad, const char *fmt, ...)
	UTIL_PRINTF(6, 7);

static json_t *member(struct pod *p, const json_t *obj, const char *key,
		      json_type t, bool *bad, const char *fmt, ...)
{
	va_list ap;
	json_t *v;

	va_start(ap, fmt);
	v = vmember(p, obj, key, t, bad, fmt, ap);
	va_end(ap);
	return v;
}

/* member() for a string; "" when absent. */
static const char *string_member(struct pod *p, const json_t *obj,
				 const char *key, bool *bad, const char *fmt,
				 ...) UTIL_PRINTF(5, 6);

static const char *string_member(struct pod *p, const json_t *obj,
				 const char *key, bool *bad, const char *fmt,
				 ...)
{
	va_list ap;
	json_t *v;

	va_start(ap, fmt);
	v = vmember(p, obj, key, JSON_STRING, bad, fmt, ap);
	va_end(ap);
	return v ? json_string_value(v) : "";
}

/* The text of a JSON number as it would be written: shortest round trip. */
static void number_text(const json_t *v, char *out, size_t size)
{
	double d;
	int prec;

	if (json_is_integer(v)) {
		snprintf(out, size, "%" JSON_INTEGER_FORMAT,
			 json_integer_value(v));
		return;
	}
	d = json_real_value(v);
	if (d > -1e15 && d < 1e15 && d == (double)(long long)d) {
		snprintf(out, size, "%lld", (long long)d);
		return;
	}
	for (prec = 1; prec <= 17; prec++) {
		snprintf(out, size, "%.*g", prec, d);
		if (strtod(out, NULL) == d)
			return;
	}
}

/*
 * Reads the family keys of one resource map (limits or requests) into
 * pairs.  Values must be strings or numbers; null is absent.
 */
static bool read_quantities(struct pod *p, const struct device *dev,
			    json_t *map, const char *base, int which,
			    struct slot *s)
{
	int res;

	for (res = 0; res < VGPU_NRESOURCES; res++) {
		const char *key = vgpu_family_resource(&dev->family, res);
		struct vgpu_pair *pair;
		json_t *v;

		if (!key || !map)
			continue;
		v = json_object_get(map, key);
		if (!v || json_is_null(v))
			continue;
		pair = which ? &s->requests[s->nrequests++]
			     : &s->limits[s->nlimits++];
		pair->key = key;
		pair->key_len = strlen(key);
		if (json_is_string(v)) {
			/* Kubernetes trims spaces when it decodes a quantity. */
			pair->value = json_string_value(v);
			pair->value_len = json_string_length(v);
			while (pair->value_len && *pair->value == ' ') {
				pair->value++;
				pair->value_len--;
			}
			while (pair->value_len &&
			       pair->value[pair->value_len - 1] == ' ')
				pair->value_len--;
		} else if (json_is_number(v)) {
			number_text(v, s->text[which][res],
				    sizeof(s->text[which][res]));
			pair->value = s->text[which][res];
			pair->value_len = strlen(pair->value);
		} else {
			denyf(p, 400, "%s.resources.%s[\"%.100s\"]: expected a quantity, got %s",
			      base, which ? "requests" : "limits", key,
			      util_json_type(v));
			return false;
		}
		if (which)
			s->request_value[res] = v;
	}
	return true;
}

/* Checks the types of env entries: objects with a string name and value. */
static bool read_env(struct pod *p, const json_t *env, const char *base)
{
	bool bad = false;
	size_t i;
	json_t *e;

	json_array_foreach(env, i, e) {
		if (!json_is_object(e)) {
			denyf(p, 400, "%s.env[%zu]: expected an object, got %s",
			      base, i, util_json_type(e));
			return false;
		}
		member(p, e, "name", JSON_STRING, &bad, "%s.env[%zu].name",
		       base, i);
		if (!bad)
			member(p, e, "value", JSON_STRING, &bad,
			       "%s.env[%zu].value", base, i);
		if (bad)
			return false;
	}
	return true;
}

/*
 * Reads one container into c: its name, resource maps, env and privilege,
 * and per family the entries the library resolves.  Returns false when
 * the pod is denied for a type error (or memory ran out).
 */
static bool read_container(struct pod *p, const char *list, size_t index,
			   json_t *obj, struct container *c)
{
	const struct config *cfg = p->cfg;
	char base[64];
	json_t *security, *privileged;
	bool bad = false;
	size_t f;

	c->list = list;
	c->index = index;
	snprintf(base, sizeof(base), "spec.%s[%zu]", list, index);
	if (!json_is_object(obj)) {
		denyf(p, 400, "%s: expected an object, got %s", base,
		      util_json_type(obj));
		return false;
	}
	c->name = string_member(p, obj, "name", &bad, "%s.name", base);
	label(c->label, c->name, LABEL_CHARS);
	if (!bad)
		c->resources = member(p, obj, "resources", JSON_OBJECT, &bad,
				      "%s.resources", base);
	if (!bad && c->resources)
		c->limits = member(p, c->resources, "limits", JSON_OBJECT, &bad,
				   "%s.resources.limits", base);
	if (!bad && c->resources)
		c->requests = member(p, c->resources, "requests", JSON_OBJECT,
				     &bad, "%s.resources.requests", base);
	if (!bad)
		c->env = member(p, obj, "env", JSON_ARRAY, &bad, "%s.env",
				base);
	if (bad || (c->env && !read_env(p, c->env, base)))
		return false;
	security = member(p, obj, "securityContext", JSON_OBJECT, &bad,
			  "%s.securityContext", base);
	privileged = security && !bad ?
		     member(p, security, "privileged", JSON_TRUE, &bad,
			    "%s.securityContext.privileged", base) :
		     NULL;
	if (bad)
		return false;
	c->privileged = json_is_true(privileged);

	c->slots = calloc(cfg->ndevices ? cfg->ndevices : 1, sizeof(*c->slots));
	if (!c->slots) {
		p->oom = true;
		return false;
	}
	for (f = 0; f < cfg->ndevices; f++) {
		struct slot *s = &c->slots[f];

		if (!read_quantities(p, &cfg->devices[f], c->limits, base, 0, s))
			return false;
		if (!read_quantities(p, &cfg->devices[f], c->requests, base, 1,
				     s))
			return false;
		c->asks |= s->nlimits + s->nrequests > 0;
	}
	return true;
}

/* Checks the types of the pod's tolerations (the fields compared). */
static bool read_tolerations(struct pod *p)
{
	static const char *const keys[] = { "key", "operator", "value",
					    "effect" };
	bool bad = false;
	size_t i, k;
	json_t *t;

	json_array_foreach(p->tolerations, i, t) {
		if (!json_is_object(t)) {
			denyf(p, 400, "spec.tolerations[%zu]: expected an object, got %s",
			      i, util_json_type(t));
			return false;
		}
		for (k = 0; k < 4 && !bad; k++)
			member(p, t, keys[k], JSON_STRING, &bad,
			       "spec.tolerations[%zu].%s", i, keys[k]);
		if (bad)
			return false;
	}
	return true;
}

/* Pass 1.  Returns false when the pod is denied (or memory ran out). */
static bool read_pod(struct pod *p, const json_t *pod)
{
	json_t *lists[2] = { NULL, NULL };
	bool bad = false;
	size_t n, i, l;

	p->metadata = member(p, pod, "metadata", JSON_OBJECT, &bad, "metadata");
	if (!bad && p->metadata)
		p->annotations = member(p, p->metadata, "annotations",
					JSON_OBJECT, &bad,
					"metadata.annotations");
	if (!bad && p->annotations) {
		member(p, p->annotations, ANNOTATION_NODE_POLICY, JSON_STRING,
		       &bad, "metadata.annotations[\"" ANNOTATION_NODE_POLICY "\"]");
		if (!bad)
			member(p, p->annotations, ANNOTATION_GPU_POLICY,
			       JSON_STRING, &bad,
			       "metadata.annotations[\"" ANNOTATION_GPU_POLICY "\"]");
	}
	if (!bad)
		p->spec = member(p, pod, "spec", JSON_OBJECT, &bad, "spec");
	if (bad)
		return false;
	if (!p->spec)
		return true;
	p->scheduler_name = string_member(p, p->spec, "schedulerName", &bad,
					  "spec.schedulerName");
	if (!bad)
		p->node_name = string_member(p, p->spec, "nodeName", &bad,
					     "spec.nodeName");
	label(p->scheduler_label, p->scheduler_name, LABEL_CHARS);
	label(p->node_label, p->node_name, LABEL_CHARS);
	if (!bad)
		p->runtime_class_name = string_member(p, p->spec,
						      "runtimeClassName", &bad,
						      "spec.runtimeClassName");
	if (!bad)
		p->tolerations = member(p, p->spec, "tolerations", JSON_ARRAY,
					&bad, "spec.tolerations");
	if (!bad)
		lists[0] = member(p, p->spec, "initContainers", JSON_ARRAY,
				  &bad, "spec.initContainers");
	if (!bad)
		lists[1] = member(p, p->spec, "containers", JSON_ARRAY, &bad,
				  "spec.containers");
	if (bad || (p->tolerations && !read_tolerations(p)))
		return false;

	n = json_array_size(lists[0]) + json_array_size(lists[1]);
	p->napp = json_array_size(lists[1]);
	p->containers = calloc(n ? n : 1, sizeof(*p->containers));
	if (!p->containers) {
		p->oom = true;
		return false;
	}
	for (l = 0; l < 2; l++) {
		json_t *obj;

		json_array_foreach(lists[l], i, obj) {
			struct container *c = &p->containers[p->ncontainers++];

			if (!read_container(p, l ? "containers" : "initContainers",
					    i, obj, c))
				return false;
		}
	}
	return true;
}

/* ------------------------------------------------------------------------
 * Pass 2: decide
 */

/* Resolves every container; denies with 422 and every error found. */
static bool resolve_all(struct pod *p)
{
	struct buf msg = BUF_INIT;
	size_t i, f, e;

	for (i = 0; i < p->ncontainers; i++) {
		struct container *c = &p->containers[i];

		for (f = 0; f < p->cfg->ndevices; f++) {
			struct slot *s = &c->slots[f];
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

static bool any_vgpu(const struct pod *p)
{
	size_t i;

	for (i = 0; i < p->ncontainers; i++)
		if (p->containers[i].vgpu)
			return true;
	return false;
}

/* Whether family f is in use: some container is its vGPU container. */
static bool family_in_use(const struct pod *p, size_t f)
{
	size_t i;

	for (i = 0; i < p->ncontainers; i++)
		if (p->containers[i].slots[f].req.kind == VGPU_KIND_SHARED)
			return true;
	return false;
}

/* Step 6 of section 4: privileged containers and spec.nodeName. */
static bool check_policies(struct pod *p)
{
	const struct config *cfg = p->cfg;
	char line[LABEL_SIZE + 160];
	size_t i;

	for (i = 0; i < p->ncontainers; i++) {
		const struct container *c = &p->containers[i];

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
		warnf(p, p->pod_warnings, "%s", line);
	}
	if (p->node_name[0]) {
		snprintf(line, sizeof(line),
			 "spec.nodeName \"%s\" bypasses the vGPU scheduler (nodeNamePolicy: %s)",
			 p->node_label,
			 cfg->node_name_policy == POLICY_DENY ? "deny" : "warn");
		if (cfg->node_name_policy == POLICY_DENY) {
			denyf(p, 403, "%s", line);
			return false;
		}
		warnf(p, p->pod_warnings, "%s", line);
	}
	return true;
}

/* ------------------------------------------------------------------------
 * Pass 3: write
 */

/* "/spec/containers/3" and so on into b. */
static void container_pointer(struct buf *b, const struct container *c)
{
	buf_addf(b, "/spec/%s/%zu", c->list, c->index);
}

/* Appends one operation; value is stolen. */
static void push(struct pod *p, const char *op, const struct buf *path,
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
static void write_map(struct pod *p, const struct container *c,
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
static void collect_resources(struct pod *p, const struct container *c,
			      const struct device *dev, const struct slot *s,
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
		warnf(p, p->d->warnings,
		      "container \"%s\": %s without %s and defaultGPUNum is 0; not a vGPU container",
		      c->label, dev->resource[res], dev->resource[VGPU_COUNT]);
		return;
	}
	for (res = 0; res < VGPU_NRESOURCES; res++) {
		const char *key = dev->resource[res];

		if (r->copied & VGPU_BIT(res)) {
			char value[LABEL_SIZE];
			size_t i;

			value[0] = '\0';
			for (i = 0; i < s->nrequests; i++)
				if (!strcmp(s->requests[i].key, key))
					util_mask_cut(value, sizeof(value),
						      s->requests[i].value,
						      s->requests[i].value_len,
						      LABEL_CHARS);
			if (json_object_set_new(limits, key,
					json_deep_copy(s->request_value[res])))
				p->oom = true;
			warnf(p, p->d->warnings,
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
			warnf(p, p->d->warnings,
			      "container \"%s\": set %s=%s (%s)", c->label, key,
			      text, reason);
		}
	}
}

/* The value each env variable should have in c; NULL when none. */
static void wanted_env(const struct pod *p, const struct container *c,
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
static void write_env(struct pod *p, const struct container *c)
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
			warnf(p, p->d->warnings,
			      "container \"%s\": replaced env %s (valueFrom) with \"%s\"",
			      c->label, env_names[v], values[v]);
		} else {
			char text[LABEL_SIZE];

			warnf(p, p->d->warnings,
			      "container \"%s\": replaced env %s \"%s\" with \"%s\"",
			      c->label, env_names[v],
			      label(text, old_value ? old_value : "",
				    LABEL_CHARS),
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
static void write_container(struct pod *p, const struct container *c)
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
static void write_tolerations(struct pod *p)
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
			if (toleration_listed(p->tolerations, t) ||
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
	if (!p->tolerations) {
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
static void write_pod_fields(struct pod *p)
{
	const struct config *cfg = p->cfg;
	struct buf path = BUF_INIT;
	const char *policies[2][2] = {
		{ ANNOTATION_NODE_POLICY, cfg->node_scheduler_policy },
		{ ANNOTATION_GPU_POLICY, cfg->gpu_scheduler_policy },
	};
	json_t *annotations;
	size_t f;
	int i;

	if (strcmp(p->scheduler_name, cfg->scheduler_name)) {
		buf_add(&path, "/spec/schedulerName");
		push(p, "add", &path, json_string(cfg->scheduler_name));
	}
	write_tolerations(p);
	for (f = 0; !p->runtime_class_name[0] && f < cfg->ndevices; f++) {
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
			json_object_get(p->annotations, policies[i][0]));

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
		if (!p->metadata) {
			buf_add(&path, "/metadata");
			push(p, "add", &path,
			     json_pack("{s:o}", "annotations", annotations));
		} else if (!p->annotations) {
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
static bool examined(const struct pod *p)
{
	const char *s = p->scheduler_name;

	return !s[0] ||
	       (!strcmp(s, "default-scheduler") &&
		p->cfg->force_overwrite_default_scheduler) ||
	       !strcmp(s, p->cfg->scheduler_name);
}

static bool asks_vgpu(const struct pod *p)
{
	size_t i;

	for (i = 0; i < p->ncontainers; i++)
		if (p->containers[i].asks)
			return true;
	return false;
}

/* The steps of SPEC section 4, from the type checks to the operations. */
static void decide(struct pod *p, const json_t *pod)
{
	size_t i;

	if (!read_pod(p, pod))
		return;
	if (!p->napp) {
		denyf(p, 403, "pod has no containers");
		return;
	}
	if (!examined(p)) {
		if (asks_vgpu(p))
			warnf(p, p->d->warnings,
			      "pod asks for vGPU resources but spec.schedulerName is \"%s\", not \"%s\"; left unchanged",
			      p->scheduler_label, p->cfg->scheduler_name);
		return;
	}
	if (!resolve_all(p))
		return;
	if (any_vgpu(p) && !check_policies(p))
		return;
	for (i = 0; i < p->ncontainers; i++)
		write_container(p, &p->containers[i]);
	if (any_vgpu(p))
		write_pod_fields(p);
}

int policy_decide(const struct config *cfg, const json_t *pod,
		  struct decision *d)
{
	struct pod p;
	size_t i, more;
	json_t *w;

	memset(&p, 0, sizeof(p));
	p.cfg = cfg;
	p.d = d;
	p.scheduler_name = p.node_name = p.runtime_class_name = "";
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
	for (i = 0; i < p.ncontainers; i++)
		free(p.containers[i].slots);
	free(p.containers);
	json_decref(p.pod_warnings);
	return p.oom ? -1 : 0;
}
