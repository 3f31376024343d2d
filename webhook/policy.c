/*
 * policy.c - one pod: read it, resolve every container, decide, and have
 * the operations and warnings written.
 *
 * The work is done in three passes over a borrowed pod:
 *   1. read (pod_read()): check the JSON type of every field the policy
 *      reads (a wrong type denies with 400 and the JSON path) and collect
 *      each container's resource entries per family;
 *   2. decide (here): the gates of docs/behaviour.md §4 and the
 *      library's resolution, which fills the view's requests and vgpu
 *      flags;
 *   3. write (mutate_pod()): the operations in the order of behaviour
 *      §5.3.
 * Warnings of the policy's own (privileged containers, spec.nodeName) come
 * after those of pass 3, and past POLICY_WARNINGS_MAX they are counted.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guard.h"
#include "mutate.h"
#include "pod.h"
#include "policy.h"

_Static_assert(POD_LINE_CHARS == POLICY_WARNING_MAX_CHARS,
	       "a warning is a line about the pod");

/* The state of one policy_decide(). */
struct decider {
	const struct config *cfg;
	const struct policy_request *req;
	struct policy_decision *d;
	struct pod pod;
	json_t *pod_warnings; /* policy hits, given after container warnings */
	bool oom;
};

int policy_decision_init(struct policy_decision *d)
{
	memset(d, 0, sizeof(*d));
	d->warnings = json_array();
	if (!d->warnings || patch_init(&d->patch)) {
		policy_decision_release(d);
		return -1;
	}
	return 0;
}

void policy_decision_release(struct policy_decision *d)
{
	free(d->message);
	patch_release(&d->patch);
	json_decref(d->warnings);
	memset(d, 0, sizeof(*d));
}

const char *policy_decision_reason(int code)
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
	COMPILER_PRINTF(3, 4);

static void denyf(struct decider *p, int code, const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	deny_text(p, code, line);
}

/*
 * Resolves every container of pod (p->pod or another view), a memory or
 * memory-percentage value of 0 counting as not set, as HAMi reads it
 * (behaviour §3.2).  Returns true
 * when no container has an error; else msg holds every error found, for a
 * denial with 422.
 */
static bool resolve_all(struct decider *p, struct pod *pod, struct buf *msg)
{
	size_t i, f, e;

	for (i = 0; i < pod->ncontainers; i++) {
		struct pod_container *c = &pod->containers[i];

		for (f = 0; f < p->cfg->ndevices; f++) {
			struct pod_slot *s = &c->slots[f];
			struct vgpu_errors errs;

			if (!vgpu_resolve_flags(&p->cfg->devices[f].family,
						VGPU_RESOLVE_ZERO_UNSET,
						s->limits, s->nlimits,
						s->requests, s->nrequests,
						&s->req, &s->unset, &errs)) {
				c->vgpu |= s->req.kind == VGPU_KIND_SHARED;
				pod->vgpu |= c->vgpu;
				continue;
			}
			for (e = 0; e < errs.count; e++)
				buf_addf(msg, "%scontainer \"%s\": %s",
					 msg->len ? "; " : "", c->label,
					 errs.error[e].message);
		}
	}
	return !msg->len && !buf_failed(msg);
}

/*
 * ", allocation: MODE" when cfg's allocation is not hami (behaviour §2),
 * for the lines of a policy; "" for hami.
 */
static const char *mode_note(const struct config *cfg, char *out, size_t size)
{
	out[0] = '\0';
	if (cfg->allocation != CONFIG_ALLOCATION_HAMI)
		snprintf(out, size, ", allocation: %s",
			 config_allocation_name(cfg->allocation));
	return out;
}

/* Privileged containers and spec.nodeName (behaviour §4.6, items 1 and 2). */
static bool check_policies(struct decider *p)
{
	const struct config *cfg = p->cfg;
	char line[POD_LINE_SIZE + 160], note[32];
	size_t i;

	mode_note(cfg, note, sizeof(note));
	for (i = 0; i < p->pod.ncontainers; i++) {
		const struct pod_container *c = &p->pod.containers[i];

		if (!c->privileged)
			continue;
		snprintf(line, sizeof(line),
			 "container \"%s\": privileged containers can see every GPU of the node (privilegedPolicy: %s%s)",
			 c->label,
			 cfg->privileged_policy == CONFIG_POLICY_DENY ? "deny"
								      : "warn",
			 note);
		if (cfg->privileged_policy == CONFIG_POLICY_DENY) {
			denyf(p, 403, "%s", line);
			return false;
		}
		pod_warnf(p->pod_warnings, &p->oom, "%s", line);
	}
	if (p->pod.node_name[0]) {
		snprintf(line, sizeof(line),
			 "spec.nodeName \"%s\" bypasses the %s (nodeNamePolicy: %s%s)",
			 p->pod.node_label,
			 cfg->allocation == CONFIG_ALLOCATION_HAMI ?
			 "vGPU scheduler" : "scheduler",
			 cfg->node_name_policy == CONFIG_POLICY_DENY ? "deny"
								     : "warn",
			 note);
		if (cfg->node_name_policy == CONFIG_POLICY_DENY) {
			denyf(p, 403, "%s", line);
			return false;
		}
		pod_warnf(p->pod_warnings, &p->oom, "%s", line);
	}
	return true;
}

/*
 * allocation dra (behaviour §2): a DRA driver serves whole devices only,
 * so every entry of a family's resource other than its count, in limits
 * or requests, is an error in msg (for a denial with 422).  Returns true
 * when there is none.
 */
static bool whole_devices_only(struct decider *p, const struct pod *pod,
			       struct buf *msg)
{
	size_t i, f, k;
	int res;

	for (i = 0; i < pod->ncontainers; i++) {
		const struct pod_container *c = &pod->containers[i];

		for (f = 0; f < p->cfg->ndevices; f++) {
			const struct device *dev = &p->cfg->devices[f];
			const struct pod_slot *s = &c->slots[f];

			for (res = VGPU_MEMORY; res < VGPU_NRESOURCES; res++) {
				const char *key = dev->resource[res];
				size_t len = strlen(key);
				bool given = false;

				for (k = 0; len && k < s->nlimits; k++)
					given |= s->limits[k].key_len == len &&
						 !memcmp(s->limits[k].key, key,
							 len);
				for (k = 0; len && k < s->nrequests; k++)
					given |= s->requests[k].key_len == len &&
						 !memcmp(s->requests[k].key,
							 key, len);
				if (given)
					buf_addf(msg,
						 "%scontainer \"%s\": %s: DRA serves whole devices only (allocation: dra); ask for %s alone",
						 msg->len ? "; " : "", c->label,
						 key, dev->resource[VGPU_COUNT]);
			}
		}
	}
	return !msg->len && !buf_failed(msg);
}

/*
 * The warning of allocation off (behaviour §2) on a pod that asks for a
 * family's resources, naming the profile that chose it.
 */
static void off_warning(struct decider *p)
{
	char profile[POD_LINE_SIZE + 16];

	profile[0] = '\0';
	if (p->cfg->profile)
		snprintf(profile, sizeof(profile), " (profile \"%s\")",
			 p->cfg->profile);
	pod_warnf(p->pod_warnings, &p->oom,
		  "allocation: off%s: vGPU resources left unchanged", profile);
}

/*
 * The end of a policy that lists its lines in msg (released): true when
 * there is none, else a denial with code whose message ends in
 * " (KEY: deny)", and false.
 */
static bool deny_lines(struct decider *p, int code, struct buf *msg,
		       const char *key)
{
	if (!msg->len && !buf_failed(msg)) {
		buf_release(msg);
		return true;
	}
	buf_addf(msg, " (%s: deny)", key);
	deny(p, code, msg);
	return false;
}

/* Whether key is a resource name of a family of cfg. */
static bool is_resource_name(const struct config *cfg, const char *key)
{
	size_t f;
	int res;

	if (!key[0])
		return false; /* "" is an absent resource name */
	for (f = 0; f < cfg->ndevices; f++)
		for (res = 0; res < VGPU_NRESOURCES; res++)
			if (cfg->devices[f].resource[res][0] == key[0] &&
			    !strcmp(cfg->devices[f].resource[res], key))
				return true;
	return false;
}

/*
 * resourceAnnotationPolicy (behaviour §4.3): a pod annotation or label
 * whose key is a family's resource name does nothing; warn (each, after
 * the container warnings) or deny with 422 (all in one message).
 * Returns false after a denial.
 */
static bool check_resource_keys(struct decider *p)
{
	static const char *const kinds[2] = { "annotation", "label" };
	const json_t *maps[2] = { p->pod.annotations, p->pod.labels };
	enum config_policy policy = p->cfg->resource_annotation_policy;
	struct buf msg = BUF_INIT;
	const char *key;
	json_t *v;
	int m;

	if (policy == CONFIG_POLICY_OFF)
		return true;
	for (m = 0; m < 2; m++) {
		json_object_foreach((json_t *)maps[m], key, v) {
			char line[POD_LINE_SIZE + 64];

			if (!is_resource_name(p->cfg, key))
				continue;
			snprintf(line, sizeof(line),
				 "%s \"%s\" has no effect: resources go in a container's resources.limits",
				 kinds[m], key);
			if (policy == CONFIG_POLICY_WARN)
				pod_warnf(p->pod_warnings, &p->oom, "%s", line);
			else
				buf_addf(&msg, "%s%s", msg.len ? "; " : "",
					 line);
		}
	}
	return deny_lines(p, 422, &msg, "resourceAnnotationPolicy");
}

/*
 * Whether an env name that begins with prefix[0..len) can match the
 * pattern pat: an exact name must begin with it; a pattern with `*`
 * needs its literal start and the prefix to agree as far as both go (the
 * `*` takes the rest of a longer prefix).
 */
static bool prefix_can_match(const struct pattern *pat, const char *prefix,
			     size_t len)
{
	size_t n = len < pat->prefix ? len : pat->prefix;

	if (!pat->wild)
		return pat->len >= len && !memcmp(pat->text, prefix, len);
	return !memcmp(pat->text, prefix, n);
}

/*
 * Whether c ends up with an env entry named name (of value value, unless
 * NULL) that envFrom cannot override (Kubernetes lets env win over
 * envFrom): one of the pod's that the env guard keeps, or one the webhook
 * writes (from /mutate only).
 */
static bool env_set(const struct decider *p, const struct pod_container *c,
		    const char *name, const char *value)
{
	size_t i, k, len = value ? strlen(value) : 0;
	const char *found = NULL;
	json_t *e;

	/* /validate writes nothing: only what the pod holds counts. */
	if (!p->req->validate &&
	    mutate_env_written(p->cfg, c, name, value, len))
		return true;
	json_array_foreach(c->env, i, e) {
		const char *n = json_string_value(json_object_get(e, "name"));

		if (!n || strcmp(n, name))
			continue;
		for (k = 0; k < c->nstrip && c->strip[k] != i; k++)
			;
		if (k == c->nstrip)
			found = json_string_value(json_object_get(e, "value"));
		if (k == c->nstrip && !value)
			return true;
	}
	/* The last entry of a name is the one the container gets. */
	return value && found && !strcmp(found, value);
}

/*
 * envFromPolicy (behaviour §4.6): an envFrom entry of c whose variables
 * could carry a guarded env name (no prefix, or one that can begin a
 * name of env.names) escapes the env guard, which sees env only.  An
 * exact name that c's env sets anyway does not count.  Each gives a line,
 * naming the first name that counts, in warnings (warn) or in *msg
 * (deny).
 */
static void check_env_from_container(struct decider *p,
				     const struct pod_container *c,
				     struct buf *msg)
{
	const struct pattern_set *names = &p->cfg->guards.names;
	size_t i, k;
	json_t *e;

	/* A container that sees no GPU (overwriteEnv's
	 * NVIDIA_VISIBLE_DEVICES=none, which env keeps over envFrom) has
	 * nothing for the guarded names to switch off or show. */
	if (!c->vgpu && env_set(p, c, "NVIDIA_VISIBLE_DEVICES", "none"))
		return;
	json_array_foreach(c->env_from, i, e) {
		const char *prefix = json_string_value(json_object_get(e, "prefix"));
		const json_t *cm = json_object_get(e, "configMapRef");
		const json_t *sec = json_object_get(e, "secretRef");
		const char *src = json_is_object(cm) ? "configMap" :
				  json_is_object(sec) ? "secret" : "source";
		const char *src_name = json_string_value(json_object_get(
			json_is_object(cm) ? cm : sec, "name"));
		char name[POD_LINE_SIZE], shown[POD_LINE_SIZE];
		char line[4 * POD_LINE_SIZE];
		size_t len = prefix ? strlen(prefix) : 0;

		for (k = 0; k < names->n; k++)
			if (prefix_can_match(&names->items[k], prefix ? prefix : "",
					     len) &&
			    (names->items[k].wild ||
			     !env_set(p, c, names->items[k].text, NULL)))
				break;
		if (k == names->n)
			continue;
		pod_label(name, src_name ? src_name : "");
		if (len)
			snprintf(shown, sizeof(shown), " (prefix \"%s\")",
				 pod_label(line, prefix));
		else
			shown[0] = '\0';
		snprintf(line, sizeof(line),
			 "container \"%s\": envFrom may set guarded %.256s: %s \"%s\"%s",
			 c->label, names->items[k].text, src, name, shown);
		if (p->cfg->env_from_policy == CONFIG_POLICY_WARN)
			pod_warnf(p->pod_warnings, &p->oom, "%s", line);
		else
			buf_addf(msg, "%s%s", msg->len ? "; " : "", line);
	}
}

/*
 * envFromPolicy over every container of the view that has envFrom.
 * Returns false after a denial (403).
 */
static bool check_env_from(struct decider *p)
{
	struct buf msg = BUF_INIT;
	size_t i;

	if (p->cfg->env_from_policy == CONFIG_POLICY_OFF ||
	    p->cfg->guards.env_policy == GUARD_POLICY_OFF)
		return true;
	for (i = 0; i < p->pod.ncontainers; i++)
		if (p->pod.containers[i].env_from)
			check_env_from_container(p, &p->pod.containers[i],
						 &msg);
	return deny_lines(p, 403, &msg, "envFromPolicy");
}

/* Whether some container of the view has an envFrom entry. */
static bool any_env_from(const struct decider *p)
{
	size_t i;

	for (i = 0; i < p->pod.ncontainers; i++)
		if (json_array_size(p->pod.containers[i].env_from))
			return true;
	return false;
}

/*
 * Whether the scheduler gate (behaviour §4.4) lets the pod through; with
 * allocation dra there is none (the webhook writes no schedulerName).
 */
static bool examined(const struct decider *p)
{
	const char *s = p->pod.scheduler_name;

	return p->cfg->allocation == CONFIG_ALLOCATION_DRA || !s[0] ||
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

/*
 * guard_written_fn over a decider whose pod resolved without error.  An
 * answer without a patch writes nothing: there an entry is the webhook's
 * only when it already holds the value the webhook writes.
 */
static bool env_written(const void *ctx, const struct pod_container *c,
			const char *name, const char *value, size_t len,
			bool from)
{
	const struct decider *p = ctx;

	if (!p->req->validate)
		return mutate_env_written(p->cfg, c, name, NULL, 0);
	return !from && mutate_env_written(p->cfg, c, name, value, len);
}

/* A guard run's state, borrowing the decider's. */
static void guard_start(struct decider *p, struct guard_run *run, bool update)
{
	enum policy_operation op = p->req->op;

	memset(run, 0, sizeof(*run));
	run->g = &p->cfg->guards;
	run->pod = &p->pod;
	run->update = update;
	run->can_patch = !p->req->validate &&
			 (op == POLICY_CREATE || op == POLICY_EPHEMERAL);
	buf_init(&run->deny);
	run->warnings = p->d->warnings;
	run->hits = &p->d->hits;
}

/* Ends a guard run: denies with 403 when a violation denies. */
static bool guard_end(struct decider *p, struct guard_run *run)
{
	p->oom |= run->oom;
	if (!run->deny.len && !buf_failed(&run->deny)) {
		buf_release(&run->deny);
		return true;
	}
	deny(p, 403, &run->deny);
	return false;
}

/*
 * Whether the request member what ("object" or "oldObject") is an object;
 * else denies with 400, naming the kind of object the request is about.
 */
static bool is_object(struct decider *p, const json_t *v, const char *what)
{
	const char *kind = p->req->op == POLICY_BINDING ? "a Binding" :
			   p->req->list ? "an EphemeralContainers" : "a Pod";

	if (json_is_object(v))
		return true;
	denyf(p, 400, "request.%s: expected %s object, got %s", what, kind,
	      !v ? "nothing" : json_is_null(v) ? "null" : "another type");
	return false;
}

/* A pod_read*() status: true for POD_OK, else denies with 400 or fails. */
static bool read_status(struct decider *p, enum pod_status status,
			const char *what, const char *err)
{
	switch (status) {
	case POD_OK:
		return true;
	case POD_INVALID:
		if (strcmp(what, "object"))
			denyf(p, 400, "%s.%s", what, err);
		else
			deny_text(p, 400, err);
		return false;
	default:
		p->oom = true;
		return false;
	}
}

/* Reads part of pod into p->pod; denies with 400 on a wrong type. */
static bool read_part(struct decider *p, const json_t *pod,
		      enum pod_part part, const char *what, struct pod *into)
{
	char err[1024];

	return is_object(p, pod, what) &&
	       read_status(p, pod_read_part(into, p->cfg, pod, part, err,
					    sizeof(err)), what, err);
}

/* The steps of behaviour §4, from the type checks to the operations. */
static void decide(struct decider *p, const json_t *pod)
{
	enum config_allocation mode = p->cfg->allocation;
	struct buf errors = BUF_INIT;
	struct guard_run run;
	bool writes;

	if (!read_part(p, pod, POD_PART_ALL, "object", &p->pod))
		return;
	/* The webhook writes env only into a pod it examines and resolves
	 * without error; the guards need to know which.  allocation off
	 * writes nothing, dra no env. */
	writes = p->pod.napp && mode != CONFIG_ALLOCATION_OFF && examined(p) &&
		 (mode != CONFIG_ALLOCATION_DRA ||
		  whole_devices_only(p, &p->pod, &errors)) &&
		 resolve_all(p, &p->pod, &errors);
	guard_start(p, &run, false);
	guard_annotations(&run, NULL, "", NULL);
	guard_env(&run, writes ? env_written : NULL, p);
	guard_mounts(&run);
	if (!guard_end(p, &run))
		goto out;
	if (!p->pod.napp) {
		denyf(p, 403, "pod has no containers");
		goto out;
	}
	if (!check_resource_keys(p))
		goto out;
	if (mode == CONFIG_ALLOCATION_OFF || !examined(p)) {
		if (mode == CONFIG_ALLOCATION_OFF && asks_vgpu(p))
			off_warning(p);
		else if (asks_vgpu(p))
			pod_warnf(p->d->warnings, &p->oom,
				  "pod asks for vGPU resources but spec.schedulerName is \"%s\", not \"%s\"; left unchanged",
				  p->pod.scheduler_label,
				  p->cfg->scheduler_name);
		if (mutate_strip(&p->pod, &p->d->patch))
			p->oom = true;
		goto out;
	}
	if (!writes) {
		deny(p, 422, &errors);
		return;
	}
	if (p->pod.vgpu && !check_policies(p))
		goto out;
	/* envFrom: a vGPU pod, or one where overwriteEnv writes
	 * NVIDIA_VISIBLE_DEVICES=none. */
	if ((p->pod.vgpu || (mode == CONFIG_ALLOCATION_HAMI &&
			     p->cfg->any_overwrite_env)) &&
	    any_env_from(p) && !check_env_from(p))
		goto out;
	if (mutate_pod(p->cfg, &p->pod, &p->d->patch, p->d->warnings))
		p->oom = true;
out:
	buf_release(&errors);
}

/* An UPDATE: the annotation guard against oldObject, never a patch. */
static void decide_update(struct decider *p, const json_t *pod,
			  const json_t *old, const struct policy_requester *who)
{
	struct pod prior;
	struct guard_run run;

	memset(&prior, 0, sizeof(prior));
	if (read_part(p, pod, POD_PART_METADATA, "object", &p->pod) &&
	    read_part(p, old, POD_PART_METADATA, "oldObject", &prior)) {
		guard_start(p, &run, true);
		guard_annotations(&run, &prior, who ? who->username : "",
				  who ? who->groups : NULL);
		guard_end(p, &run);
	}
	pod_release(&prior);
}

/*
 * A Binding: the API server copies its annotations onto the pod, so each
 * guarded key there counts as a change (there is no old value to compare
 * with), unless the requester is a writer.  Never a patch.
 */
static void decide_binding(struct decider *p, const json_t *binding,
			   const struct policy_requester *who)
{
	struct pod none;
	struct guard_run run;

	memset(&none, 0, sizeof(none));
	if (!read_part(p, binding, POD_PART_METADATA, "object", &p->pod))
		return;
	guard_start(p, &run, true);
	guard_annotations(&run, &none, who ? who->username : "",
			  who ? who->groups : NULL);
	guard_end(p, &run);
}

/*
 * Whether the pod of an ephemeralcontainers UPDATE is a vGPU pod, for the
 * privileged policy (behaviour §4.1).  The pod's containers are those of
 * request.oldObject, the pod as stored: the API server keeps only the
 * ephemeral containers of request.object, whose other fields the tenant
 * writes, so they prove nothing.  An EphemeralContainers object holds no
 * other container, and a request without oldObject shows none: either may
 * be a vGPU pod, so yes.  oldObject's containers are resolved as on a
 * CREATE; one that has an error may be one: yes.  Denies with 400 when a
 * field of oldObject has the wrong type (*known is then false).
 */
static bool ephemeral_vgpu(struct decider *p, const json_t *old, bool *known)
{
	struct buf errors = BUF_INIT;
	struct pod whole;
	char err[1024];
	bool vgpu;

	*known = true;
	if (p->req->list || !old)
		return true;
	*known = read_status(p, pod_read(&whole, p->cfg, old, err,
					 sizeof(err)), "oldObject", err);
	vgpu = !*known || !resolve_all(p, &whole, &errors) || whole.vgpu;
	buf_release(&errors);
	pod_release(&whole);
	return vgpu;
}

/*
 * An UPDATE of pods/ephemeralcontainers: the ephemeral containers it adds
 * get the guards, the privileged policy of a vGPU pod, and overwriteEnv.
 */
static void decide_ephemeral(struct decider *p)
{
	const json_t *old = p->req->old;
	struct guard_run run;
	bool privileged = false, known = true;
	char err[1024];
	size_t i;

	if (json_is_null(old))
		old = NULL;
	if (!is_object(p, p->req->object, "object") ||
	    (old && !is_object(p, old, "oldObject")) ||
	    !read_status(p, pod_read_added(&p->pod, p->cfg, p->req->object,
					   old, p->req->list, err, sizeof(err)),
			 "object", err))
		return;
	guard_start(p, &run, false);
	guard_env(&run, env_written, p);
	guard_mounts(&run);
	if (!guard_end(p, &run))
		return;
	if (p->cfg->allocation == CONFIG_ALLOCATION_OFF) {
		if (mutate_strip(&p->pod, &p->d->patch))
			p->oom = true;
		return;
	}
	for (i = 0; i < p->pod.ncontainers; i++)
		privileged |= p->pod.containers[i].privileged;
	if (privileged && ephemeral_vgpu(p, old, &known) &&
	    (!known || !check_policies(p)))
		return;
	if (any_env_from(p) &&
	    ((p->cfg->allocation == CONFIG_ALLOCATION_HAMI &&
	      p->cfg->any_overwrite_env) || ephemeral_vgpu(p, old, &known)) &&
	    (!known || !check_env_from(p)))
		return;
	if (mutate_pod(p->cfg, &p->pod, &p->d->patch, p->d->warnings))
		p->oom = true;
}

bool policy_wants(const struct config *cfg, enum policy_operation op)
{
	switch (op) {
	case POLICY_UPDATE:
	case POLICY_BINDING:
		return cfg->guards.annotation_policy != GUARD_POLICY_OFF;
	default:
		return true;
	}
}

int policy_decide(const struct config *cfg, const json_t *pod,
		  struct policy_decision *d)
{
	struct policy_request req = { POLICY_CREATE, pod, NULL, NULL, false,
				      false };

	return policy_decide_request(cfg, &req, d);
}

int policy_decide_request(const struct config *cfg,
			  const struct policy_request *req,
			  struct policy_decision *d)
{
	struct decider p;
	size_t i, more;
	json_t *w;

	memset(&p.pod, 0, sizeof(p.pod));
	p.cfg = cfg;
	p.req = req;
	p.d = d;
	p.oom = false;
	p.pod_warnings = json_array();
	if (!p.pod_warnings)
		return -1;

	switch (req->op) {
	case POLICY_UPDATE:
		decide_update(&p, req->object, req->old, req->who);
		break;
	case POLICY_BINDING:
		decide_binding(&p, req->object, req->who);
		break;
	case POLICY_EPHEMERAL:
		decide_ephemeral(&p);
		break;
	default:
		decide(&p, req->object);
		break;
	}

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
