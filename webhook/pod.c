/*
 * pod.c - reading a pod (pod.h): the schema and, beside each part of it,
 * the reader that checks the JSON types of what it keeps.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonout.h"
#include "pod.h"
#include "text.h"

/* The state of one pod_read(). */
struct reader {
	struct pod *p;
	const struct config *cfg;
	enum pod_part part;
	bool ephemeral; /* pod_read_added(): containers without quantities */
	bool top;       /* pod_read_added() of an EphemeralContainers object */
	char *err;
	size_t errlen;
	bool nomem;
};

const char *pod_label(char out[POD_LINE_SIZE], const char *s)
{
	text_mask_cutn(out, POD_LINE_SIZE, s, strlen(s), POD_LINE_CHARS);
	return out;
}

void pod_warnf(json_t *list, bool *nomem, const char *fmt, ...)
{
	char line[2048], cut[POD_LINE_SIZE];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	text_mask_cutn(cut, sizeof(cut), line, strlen(line), POD_LINE_CHARS);
	if (json_array_append_new(list, json_string(cut)))
		*nomem = true;
}

static void invalid(struct reader *r, const char *fmt, ...)
	COMPILER_PRINTF(2, 3);

/* The pod has a field of the wrong type: the message into r->err. */
static void invalid(struct reader *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->err, r->errlen, fmt, ap);
	va_end(ap);
}

/*
 * Returns the member key of obj when it has type t, NULL when it is absent
 * or null, and fails with the path (printf-style, formatted only then)
 * otherwise; *bad is then set.
 */
static json_t *vmember(struct reader *r, const json_t *obj, const char *key,
		       json_type t, bool *bad, const char *fmt, va_list ap)
	COMPILER_PRINTF(6, 0);

static json_t *vmember(struct reader *r, const json_t *obj, const char *key,
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
		invalid(r, "%s: contains a NUL character", path);
	else
		invalid(r, "%s: expected %s, got %s", path,
			t == JSON_OBJECT ? "an object" :
			t == JSON_ARRAY ? "an array" :
			t == JSON_STRING ? "a string" : "a boolean",
			jsonout_type_name(v));
	*bad = true;
	return NULL;
}

static json_t *member(struct reader *r, const json_t *obj, const char *key,
		      json_type t, bool *bad, const char *fmt, ...)
	COMPILER_PRINTF(6, 7);

static json_t *member(struct reader *r, const json_t *obj, const char *key,
		      json_type t, bool *bad, const char *fmt, ...)
{
	va_list ap;
	json_t *v;

	va_start(ap, fmt);
	v = vmember(r, obj, key, t, bad, fmt, ap);
	va_end(ap);
	return v;
}

/* member() for a string; "" when absent. */
static const char *string_member(struct reader *r, const json_t *obj,
				 const char *key, bool *bad, const char *fmt,
				 ...) COMPILER_PRINTF(5, 6);

static const char *string_member(struct reader *r, const json_t *obj,
				 const char *key, bool *bad, const char *fmt,
				 ...)
{
	va_list ap;
	json_t *v;

	va_start(ap, fmt);
	v = vmember(r, obj, key, JSON_STRING, bad, fmt, ap);
	va_end(ap);
	return v ? json_string_value(v) : "";
}

/* The text of a JSON number as it would be written: shortest round trip. */
static void number_text(const json_t *v, char *out, size_t size)
{
	double d;

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
	snprintf(out, size, "%.*g", jsonout_real_precision(d, 1), d);
}

/*
 * Reads the family keys of one resource map (limits or requests) into
 * pairs.  Values must be strings or numbers; null is absent.
 */
static bool read_quantities(struct reader *r, const struct device *dev,
			    json_t *map, const char *base, int which,
			    struct pod_slot *s)
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
			invalid(r, "%s.resources.%s[\"%.100s\"]: expected a quantity, got %s",
				base, which ? "requests" : "limits", key,
				jsonout_type_name(v));
			return false;
		}
		if (which)
			s->request_value[res] = v;
	}
	return true;
}

/* Checks the types of env entries: objects with a string name and value. */
static bool read_env(struct reader *r, const json_t *env, const char *base)
{
	bool bad = false;
	size_t i;
	json_t *e;

	json_array_foreach(env, i, e) {
		if (!json_is_object(e)) {
			invalid(r, "%s.env[%zu]: expected an object, got %s",
				base, i, jsonout_type_name(e));
			return false;
		}
		member(r, e, "name", JSON_STRING, &bad, "%s.env[%zu].name",
		       base, i);
		if (!bad)
			member(r, e, "value", JSON_STRING, &bad,
			       "%s.env[%zu].value", base, i);
		if (bad)
			return false;
	}
	return true;
}

/*
 * Checks the types of envFrom entries: objects with a string prefix and
 * configMapRef and secretRef objects with a string name.
 */
static bool read_env_from(struct reader *r, const json_t *list,
			  const char *base)
{
	static const char *const refs[2] = { "configMapRef", "secretRef" };
	bool bad = false;
	size_t i;
	json_t *e, *ref;
	int k;

	json_array_foreach(list, i, e) {
		if (!json_is_object(e)) {
			invalid(r, "%s.envFrom[%zu]: expected an object, got %s",
				base, i, jsonout_type_name(e));
			return false;
		}
		member(r, e, "prefix", JSON_STRING, &bad, "%s.envFrom[%zu].prefix",
		       base, i);
		for (k = 0; k < 2 && !bad; k++) {
			ref = member(r, e, refs[k], JSON_OBJECT, &bad,
				     "%s.envFrom[%zu].%s", base, i, refs[k]);
			if (ref && !bad)
				member(r, ref, "name", JSON_STRING, &bad,
				       "%s.envFrom[%zu].%s.name", base, i,
				       refs[k]);
		}
		if (bad)
			return false;
	}
	return true;
}

/* Checks the types of volumeMounts: objects with a string mountPath. */
static bool read_mounts(struct reader *r, const json_t *mounts,
			const char *base)
{
	bool bad = false;
	size_t i;
	json_t *m;

	json_array_foreach(mounts, i, m) {
		if (!json_is_object(m)) {
			invalid(r, "%s.volumeMounts[%zu]: expected an object, got %s",
				base, i, jsonout_type_name(m));
			return false;
		}
		member(r, m, "mountPath", JSON_STRING, &bad,
		       "%s.volumeMounts[%zu].mountPath", base, i);
		if (bad)
			return false;
	}
	return true;
}

/*
 * What read_container() reads, for initContainers and containers alike.
 * Resource maps are kept whole, because the family names come from the
 * config.  An env entry keeps name and value, and an empty stub of any
 * other member, because an entry is "ours" only when it has no other
 * member that is not null.  Of envFrom, the prefix and the names of the
 * sources.
 */
static const struct pick_rule container_rule = {
	PICK_OBJECT, PICK_FIELDS(
		PICK_FIELD("name", &pick_all),
		PICK_FIELD("resources", PICK_OBJ(
			PICK_FIELD("limits", &pick_all),
			PICK_FIELD("requests", &pick_all))),
		PICK_FIELD("env", PICK_ARR(PICK_OBJ_OTHERS(&pick_stub,
			PICK_FIELD("name", &pick_all),
			PICK_FIELD("value", &pick_all)))),
		PICK_FIELD("envFrom", PICK_ARR(PICK_OBJ(
			PICK_FIELD("prefix", &pick_all),
			PICK_FIELD("configMapRef", PICK_OBJ(
				PICK_FIELD("name", &pick_all))),
			PICK_FIELD("secretRef", PICK_OBJ(
				PICK_FIELD("name", &pick_all)))))),
		PICK_FIELD("securityContext", PICK_OBJ(
			PICK_FIELD("privileged", &pick_all))),
		PICK_FIELD("volumeMounts", PICK_ARR(PICK_OBJ(
			PICK_FIELD("mountPath", &pick_all))))),
	NULL, NULL
};

/*
 * Reads one container into c: its name, resource maps, env, privilege and
 * volume mounts, and per family the entries the library resolves.  Returns false when
 * a type is wrong (or memory ran out).
 */
static bool read_container(struct reader *r, const char *list, size_t index,
			   json_t *obj, struct pod_container *c)
{
	const struct config *cfg = r->cfg;
	char base[64];
	json_t *security, *privileged;
	bool bad = false;
	size_t f;

	c->list = list;
	c->top = r->top;
	c->index = index;
	snprintf(base, sizeof(base), "%s%s[%zu]", r->top ? "" : "spec.", list,
		 index);
	if (!json_is_object(obj)) {
		invalid(r, "%s: expected an object, got %s", base,
			jsonout_type_name(obj));
		return false;
	}
	c->name = string_member(r, obj, "name", &bad, "%s.name", base);
	pod_label(c->label, c->name);
	if (!bad)
		c->resources = member(r, obj, "resources", JSON_OBJECT, &bad,
				      "%s.resources", base);
	if (!bad && c->resources)
		c->limits = member(r, c->resources, "limits", JSON_OBJECT, &bad,
				   "%s.resources.limits", base);
	if (!bad && c->resources)
		c->requests = member(r, c->resources, "requests", JSON_OBJECT,
				     &bad, "%s.resources.requests", base);
	if (!bad)
		c->env = member(r, obj, "env", JSON_ARRAY, &bad, "%s.env",
				base);
	if (bad || (c->env && !read_env(r, c->env, base)))
		return false;
	c->env_from = member(r, obj, "envFrom", JSON_ARRAY, &bad, "%s.envFrom",
			     base);
	if (bad || (c->env_from && !read_env_from(r, c->env_from, base)))
		return false;
	security = member(r, obj, "securityContext", JSON_OBJECT, &bad,
			  "%s.securityContext", base);
	privileged = security && !bad ?
		     member(r, security, "privileged", JSON_TRUE, &bad,
			    "%s.securityContext.privileged", base) :
		     NULL;
	if (!bad)
		c->mounts = member(r, obj, "volumeMounts", JSON_ARRAY, &bad,
				   "%s.volumeMounts", base);
	if (bad || (c->mounts && !read_mounts(r, c->mounts, base)))
		return false;
	c->privileged = json_is_true(privileged);

	c->slots = calloc(cfg->ndevices ? cfg->ndevices : 1, sizeof(*c->slots));
	if (!c->slots) {
		r->nomem = true;
		return false;
	}
	for (f = 0; !r->ephemeral && f < cfg->ndevices; f++) {
		struct pod_slot *s = &c->slots[f];

		if (!read_quantities(r, &cfg->devices[f], c->limits, base, 0, s))
			return false;
		if (!read_quantities(r, &cfg->devices[f], c->requests, base, 1,
				     s))
			return false;
		c->asks |= s->nlimits + s->nrequests > 0;
	}
	return true;
}

/* Checks the types of the pod's tolerations (the fields compared). */
static bool read_tolerations(struct reader *r)
{
	static const char *const keys[] = { "key", "operator", "value",
					    "effect" };
	bool bad = false;
	size_t i, k;
	json_t *t;

	json_array_foreach(r->p->tolerations, i, t) {
		if (!json_is_object(t)) {
			invalid(r, "spec.tolerations[%zu]: expected an object, got %s",
				i, jsonout_type_name(t));
			return false;
		}
		for (k = 0; k < 4 && !bad; k++)
			member(r, t, keys[k], JSON_STRING, &bad,
			       "spec.tolerations[%zu].%s", i, keys[k]);
		if (bad)
			return false;
	}
	return true;
}

/*
 * Checks that the map at metadata.<key> (labels or annotations) holds
 * strings only.  Returns false when a type is wrong.
 */
static bool read_string_map(struct reader *r, const json_t *map,
			    const char *key)
{
	const char *k;
	size_t klen;
	json_t *v;

	json_object_keylen_foreach((json_t *)map, k, klen, v) {
		char shown[POD_LINE_SIZE];

		/* null counts as absent, as everywhere in the pod. */
		if (json_is_string(v) || json_is_null(v))
			continue;
		text_mask_cutn(shown, sizeof(shown), k, klen, 64);
		invalid(r, "metadata.%s[\"%s\"]: expected a string, got %s",
			key, shown, jsonout_type_name(v));
		return false;
	}
	return true;
}

/* What read_pod() and read_tolerations() read, and the pod's names and
 * namespace (for logs and profiles). */
const struct pick_rule pod_rule = {
	PICK_OBJECT, PICK_FIELDS(
		PICK_FIELD("metadata", PICK_OBJ(
			PICK_FIELD("name", &pick_all),
			PICK_FIELD("generateName", &pick_all),
			PICK_FIELD("namespace", &pick_all),
			PICK_FIELD("labels", &pick_all),
			PICK_FIELD("annotations", &pick_all))),
		PICK_FIELD("spec", PICK_OBJ(
			PICK_FIELD("schedulerName", &pick_all),
			PICK_FIELD("nodeName", &pick_all),
			PICK_FIELD("runtimeClassName", &pick_all),
			PICK_FIELD("tolerations", PICK_ARR(PICK_OBJ(
				PICK_FIELD("key", &pick_all),
				PICK_FIELD("operator", &pick_all),
				PICK_FIELD("value", &pick_all),
				PICK_FIELD("effect", &pick_all)))),
			PICK_FIELD("initContainers", PICK_ARR(&container_rule)),
			PICK_FIELD("containers", PICK_ARR(&container_rule)),
			PICK_FIELD("ephemeralContainers",
				   PICK_ARR(&container_rule)))),
		/* an EphemeralContainers object (Kubernetes 1.16 to 1.21) */
		PICK_FIELD("ephemeralContainers", PICK_ARR(&container_rule))),
	NULL, NULL
};

/*
 * Reads the containers of init (may be NULL) then of app into p.  Returns
 * false when a type is wrong (or memory ran out).
 */
static bool read_containers(struct reader *r, const json_t *init,
			    const json_t *app)
{
	static const char *const names[2] = { "initContainers", "containers" };
	struct pod *p = r->p;
	const json_t *lists[2] = { init, app };
	size_t n, i, l;

	n = json_array_size(init) + json_array_size(app);
	p->napp = json_array_size(app);
	p->containers = calloc(n ? n : 1, sizeof(*p->containers));
	if (!p->containers) {
		r->nomem = true;
		return false;
	}
	for (l = 0; l < 2; l++) {
		json_t *obj;

		json_array_foreach(lists[l], i, obj) {
			struct pod_container *c =
				&p->containers[p->ncontainers++];

			if (!read_container(r, names[l], i, obj, c))
				return false;
		}
	}
	return true;
}

/* Returns false when a type is wrong (or memory ran out). */
static bool read_pod(struct reader *r, const json_t *pod)
{
	struct pod *p = r->p;
	json_t *lists[2] = { NULL, NULL };
	bool bad = false;

	p->metadata = member(r, pod, "metadata", JSON_OBJECT, &bad, "metadata");
	if (!bad && p->metadata)
		p->labels = member(r, p->metadata, "labels", JSON_OBJECT, &bad,
				   "metadata.labels");
	if (!bad && p->metadata)
		p->annotations = member(r, p->metadata, "annotations",
					JSON_OBJECT, &bad,
					"metadata.annotations");
	if (bad || (p->labels && !read_string_map(r, p->labels, "labels")) ||
	    (p->annotations &&
	     !read_string_map(r, p->annotations, "annotations")))
		return false;
	if (r->part == POD_PART_METADATA)
		return true;
	p->spec = member(r, pod, "spec", JSON_OBJECT, &bad, "spec");
	if (bad)
		return false;
	if (!p->spec)
		return true;
	p->scheduler_name = string_member(r, p->spec, "schedulerName", &bad,
					  "spec.schedulerName");
	if (!bad)
		p->node_name = string_member(r, p->spec, "nodeName", &bad,
					     "spec.nodeName");
	pod_label(p->scheduler_label, p->scheduler_name);
	pod_label(p->node_label, p->node_name);
	if (!bad)
		p->runtime_class_name = string_member(r, p->spec,
						      "runtimeClassName", &bad,
						      "spec.runtimeClassName");
	if (!bad)
		p->tolerations = member(r, p->spec, "tolerations", JSON_ARRAY,
					&bad, "spec.tolerations");
	if (!bad)
		lists[0] = member(r, p->spec, "initContainers", JSON_ARRAY,
				  &bad, "spec.initContainers");
	if (!bad)
		lists[1] = member(r, p->spec, "containers", JSON_ARRAY, &bad,
				  "spec.containers");
	if (bad || (p->tolerations && !read_tolerations(r)))
		return false;
	return read_containers(r, lists[0], lists[1]);
}

enum pod_status pod_read(struct pod *p, const struct config *cfg,
			 const json_t *obj, char *err, size_t errlen)
{
	return pod_read_part(p, cfg, obj, POD_PART_ALL, err, errlen);
}

/* A reader over p, which it empties first. */
static struct reader reader_start(struct pod *p, const struct config *cfg,
				  enum pod_part part, char *err, size_t errlen)
{
	struct reader r = { p, cfg, part, false, false, err, errlen, false };

	memset(p, 0, sizeof(*p));
	p->scheduler_name = p->node_name = p->runtime_class_name = "";
	return r;
}

static enum pod_status reader_status(const struct reader *r, bool ok)
{
	return ok ? POD_OK : r->nomem ? POD_NOMEM : POD_INVALID;
}

enum pod_status pod_read_part(struct pod *p, const struct config *cfg,
			      const json_t *obj, enum pod_part part, char *err,
			      size_t errlen)
{
	struct reader r = reader_start(p, cfg, part, err, errlen);

	return reader_status(&r, read_pod(&r, obj));
}

/*
 * The ephemeral containers of obj: spec.ephemeralContainers, or with r->top
 * the member ephemeralContainers; NULL when absent.  what prefixes paths
 * in messages ("" or "oldObject.").  Sets *bad on a wrong type.
 */
static json_t *ephemeral_list(struct reader *r, const json_t *obj,
			      const char *what, bool *bad)
{
	const json_t *spec = obj;

	if (!r->top) {
		spec = member(r, obj, "spec", JSON_OBJECT, bad, "%sspec", what);
		if (!spec)
			return NULL;
	}
	return member(r, spec, "ephemeralContainers", JSON_ARRAY, bad,
		      "%s%sephemeralContainers", what, r->top ? "" : "spec.");
}

/*
 * Whether old (a list of ephemeral containers, or NULL) has one named
 * name[0..len).  Checks the types of the entries compared.  *bad is set on
 * a wrong type.
 */
static bool has_name(struct reader *r, const json_t *old, const char *name,
		     size_t len, bool *bad)
{
	const char *base = r->top ? "" : "spec.";
	size_t i;
	json_t *c;

	json_array_foreach(old, i, c) {
		const json_t *n;

		if (!json_is_object(c)) {
			invalid(r, "oldObject.%sephemeralContainers[%zu]: expected an object, got %s",
				base, i, jsonout_type_name(c));
			*bad = true;
			return false;
		}
		n = member(r, c, "name", JSON_STRING, bad,
			   "oldObject.%sephemeralContainers[%zu].name", base, i);
		if (*bad)
			return false;
		if (n && json_string_length(n) == len &&
		    !memcmp(json_string_value(n), name, len))
			return true;
	}
	return false;
}

enum pod_status pod_read_added(struct pod *p, const struct config *cfg,
			       const json_t *obj, const json_t *old, bool list,
			       char *err, size_t errlen)
{
	struct reader r = reader_start(p, cfg, POD_PART_METADATA, err, errlen);
	json_t *items, *old_items = NULL, *c;
	bool bad = false;
	size_t i;

	r.ephemeral = true;
	r.top = list;
	if (!read_pod(&r, obj))
		return reader_status(&r, false);
	items = ephemeral_list(&r, obj, "", &bad);
	if (!bad && old)
		old_items = ephemeral_list(&r, old, "oldObject.", &bad);
	if (bad)
		return POD_INVALID;
	p->containers = calloc(json_array_size(items) + 1,
			       sizeof(*p->containers));
	if (!p->containers)
		return POD_NOMEM;
	json_array_foreach(items, i, c) {
		const json_t *name = json_object_get(c, "name");

		/* Already in the pod: not this request's to answer for. */
		if (json_is_string(name) &&
		    has_name(&r, old_items, json_string_value(name),
			     json_string_length(name), &bad))
			continue;
		if (bad || !read_container(&r, "ephemeralContainers", i, c,
					   &p->containers[p->ncontainers++]))
			return reader_status(&r, false);
	}
	p->napp = p->ncontainers;
	return POD_OK;
}

void pod_release(struct pod *p)
{
	size_t i;

	for (i = 0; i < p->ncontainers; i++) {
		free(p->containers[i].slots);
		free(p->containers[i].strip);
	}
	free(p->containers);
	p->containers = NULL;
	p->ncontainers = 0;
	json_decref(p->strip_keys);
	p->strip_keys = NULL;
}
