/*
 * manifest.c - `default` on manifests (see manifest.h, SPEC section 8).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "jsonout.h"
#include "config.h"
#include "manifest.h"
#include "pick.h"
#include "review.h"
#include "review_pod.h"
#include "text.h"
#include "tplpath.h"
#include "yamlio.h"

/*
 * Volcano's Job: its controller gives each pod without a schedulerName the
 * Job's spec.schedulerName, which Volcano's own webhook sets to "volcano"
 * when the Job has none (volcano-sh/volcano, job_controller_util.go and
 * mutate_job.go).
 */
#define VOLCANO_API "batch.volcano.sh/v1alpha1"
#define VOLCANO_SCHEDULER "volcano"

/*
 * Where the pod templates of a kind sit (tplpath.h paths; "" for a Pod
 * itself).
 */
struct workload {
	const char *api_version;
	const char *kind;
	const char *const *paths; /* NULL-terminated */
};

static const char *const pod_self[] = { "", NULL };
static const char *const spec_template[] = { "spec.template", NULL };
static const char *const job_template[] = {
	"spec.jobTemplate.spec.template", NULL };
static const char *const template_only[] = { "template", NULL };
static const char *const pytorch[] = {
	"spec.pytorchReplicaSpecs.*.template", NULL };
static const char *const tensorflow[] = {
	"spec.tfReplicaSpecs.*.template", NULL };
static const char *const mpi[] = { "spec.mpiReplicaSpecs.*.template", NULL };
static const char *const ray_cluster[] = {
	"spec.headGroupSpec.template", "spec.workerGroupSpecs[].template",
	NULL };
static const char *const ray_job[] = {
	"spec.rayClusterSpec.headGroupSpec.template",
	"spec.rayClusterSpec.workerGroupSpecs[].template",
	"spec.submitterPodTemplate", NULL };
static const char *const ray_service[] = {
	"spec.rayClusterConfig.headGroupSpec.template",
	"spec.rayClusterConfig.workerGroupSpecs[].template", NULL };
static const char *const jobset[] = {
	"spec.replicatedJobs[].template.spec.template", NULL };
static const char *const lws[] = {
	"spec.leaderWorkerTemplate.leaderTemplate",
	"spec.leaderWorkerTemplate.workerTemplate", NULL };
static const char *const volcano[] = { "spec.tasks[].template", NULL };

static const struct workload workloads[] = {
	{ "v1", "Pod", pod_self },
	{ "apps/v1", "Deployment", spec_template },
	{ "apps/v1", "ReplicaSet", spec_template },
	{ "apps/v1", "StatefulSet", spec_template },
	{ "apps/v1", "DaemonSet", spec_template },
	{ "batch/v1", "Job", spec_template },
	{ "v1", "ReplicationController", spec_template },
	{ "batch/v1", "CronJob", job_template },
	{ "batch/v1beta1", "CronJob", job_template },
	{ "v1", "PodTemplate", template_only },
	{ "kubeflow.org/v1", "PyTorchJob", pytorch },
	{ "kubeflow.org/v1", "TFJob", tensorflow },
	{ "kubeflow.org/v1", "MPIJob", mpi },
	{ "kubeflow.org/v2beta1", "MPIJob", mpi },
	{ "ray.io/v1", "RayCluster", ray_cluster },
	{ "ray.io/v1", "RayJob", ray_job },
	{ "ray.io/v1", "RayService", ray_service },
	{ "jobset.x-k8s.io/v1alpha2", "JobSet", jobset },
	{ "leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", lws },
	{ VOLCANO_API, "Job", volcano },
};

/* The state of one run. */
struct run {
	const struct config *cfg;
	const struct manifest_options *opt;
	struct buf *msgs;
	struct buf *out;   /* YAML: the documents written so far */
	size_t written;    /* how many */
	bool denied, input_error, changed;
	bool unknown;      /* a kind not known asks for a GPU */
	const char *in;    /* the input, for the documents kept as they are */
	json_t *results;   /* a ResourceList's: the results to add, or NULL */
	const json_t *old_results; /* the results it came with, or NULL */
	bool krm;          /* the input is a ResourceList (KRM function) */
	size_t objects;    /* documents that were not empty, so far */
};

/* Whether v is the string lit. */
static bool is_string(const json_t *v, const char *lit)
{
	size_t n = strlen(lit);

	return json_is_string(v) && json_string_length(v) == n &&
	       !memcmp(json_string_value(v), lit, n);
}

/* Appends a masked, shortened copy of the string v, or alt. */
static void add_field(struct buf *b, const json_t *v, const char *alt)
{
	char tmp[200];

	if (json_is_string(v) && json_string_length(v)) {
		text_mask_cutn(tmp, sizeof(tmp), json_string_value(v),
			       json_string_length(v), 63);
		buf_add(b, tmp);
	} else {
		buf_add(b, alt);
	}
}

/* "KIND NAMESPACE/NAME" of obj into label (a buf the caller releases). */
static void object_label(struct buf *label, const json_t *obj,
			 const struct manifest_options *opt)
{
	const json_t *meta = json_object_get(obj, "metadata");
	const json_t *name = json_object_get(meta, "name");

	add_field(label, json_object_get(obj, "kind"), "(no kind)");
	buf_add(label, " ");
	if (json_is_string(json_object_get(meta, "namespace")) &&
	    json_string_length(json_object_get(meta, "namespace")))
		add_field(label, json_object_get(meta, "namespace"), "");
	else
		buf_add(label, opt->namespace_ ? opt->namespace_ : "default");
	buf_add(label, "/");
	if (!json_is_string(name) || !json_string_length(name))
		name = json_object_get(meta, "generateName");
	add_field(label, name, "(no name)");
}

/* Appends "document N" (and " item I" for the I-th of a List). */
static void add_where(struct buf *b, size_t doc, size_t item)
{
	buf_addf(b, "document %zu", doc);
	if (item)
		buf_addf(b, " item %zu", item);
}

/* An error of the input (status 2) naming the place. */
static void input_error(struct run *r, size_t doc, size_t item,
			const char *what)
{
	buf_add(r->msgs, "error: ");
	add_where(r->msgs, doc, item);
	buf_addf(r->msgs, ": %s\n", what);
	r->input_error = true;
}

/*
 * Decides the Pod standing for the template tpl (its metadata and spec,
 * shared) and writes what the operations changed back into tpl.
 */
static int decide_template(const struct config *cfg, json_t *tpl,
			   struct review_pod_answer *ans)
{
	static const char *const keys[] = { "metadata", "spec" };
	json_t *pod = json_pack("{ssss}", "apiVersion", "v1", "kind", "Pod");
	json_t *v;
	size_t i;
	int rc;

	if (!pod) {
		ans->status = REVIEW_POD_FAILED;
		return -1;
	}
	for (i = 0; i < 2; i++) {
		v = json_object_get(tpl, keys[i]);
		if (v && json_object_set(pod, keys[i], v)) {
			json_decref(pod);
			ans->status = REVIEW_POD_FAILED;
			return -1;
		}
	}
	rc = review_pod_apply(cfg, pod, ans);
	for (i = 0; !rc && i < 2; i++) {
		v = json_object_get(pod, keys[i]);
		if (v && v != json_object_get(tpl, keys[i]) &&
		    json_object_set(tpl, keys[i], v)) {
			ans->status = REVIEW_POD_FAILED;
			rc = -1;
		}
	}
	json_decref(pod);
	return rc;
}

/*
 * The config for the pods of obj (behaviour §2.2): its namespace (or
 * --namespace, or "default") and the labels of its pod template tpl
 * (NULL: none).
 */
static const struct config *select_profile(const struct run *r,
					   const json_t *obj, const json_t *tpl)
{
	return review_select(r->cfg,
			     json_object_get(json_object_get(obj, "metadata"),
					     "namespace"),
			     NULL,
			     r->opt->namespace_ ? r->opt->namespace_ : "default",
			     json_object_get(json_object_get(tpl, "metadata"),
					     "labels"));
}

/* One object being defaulted, for the messages about it. */
struct object_run {
	struct run *r;
	json_t *obj;
	const char *label; /* "KIND NAMESPACE/NAME" */
	size_t doc, item;
	bool named;          /* messages name the template */
	const char *inherit; /* Volcano: the schedulerName of pods whose
				template has none; NULL for other kinds */
	size_t ops;
};

/* Whether the array list (or NULL) holds a value equal to res. */
static bool has_result(const json_t *list, const json_t *res)
{
	const json_t *v;
	size_t i;

	json_array_foreach(list, i, v)
		if (json_equal(v, res))
			return true;
	return false;
}

/*
 * A KRM result (kyaml's framework.Result) for o into r->results, when the
 * input is a ResourceList: severity, message, the object as resourceRef,
 * and where (a template) as field.path.  A result equal to one the list
 * holds already is not added again, so that the output of a run is a
 * fixed point.
 */
static void add_result(struct object_run *o, const char *severity,
		       const char *where, const char *message)
{
	static const char *const refkeys[] = { "apiVersion", "kind" };
	const json_t *meta = json_object_get(o->obj, "metadata");
	json_t *res, *ref;
	size_t i;

	if (!o->r->results)
		return;
	res = json_pack("{ssss}", "message", message, "severity", severity);
	ref = json_object();
	if (!res || !ref)
		goto fail;
	for (i = 0; i < 2; i++)
		if (json_is_string(json_object_get(o->obj, refkeys[i])) &&
		    json_object_set(ref, refkeys[i],
				    json_object_get(o->obj, refkeys[i])))
			goto fail;
	if (json_is_string(json_object_get(meta, "name")) &&
	    json_object_set(ref, "name", json_object_get(meta, "name")))
		goto fail;
	if (json_is_string(json_object_get(meta, "namespace")) &&
	    json_object_set(ref, "namespace",
			    json_object_get(meta, "namespace")))
		goto fail;
	if (json_object_set_new(res, "resourceRef", ref))
		goto fail_res;
	if (where && where[0] &&
	    json_object_set_new(res, "field", json_pack("{ss}", "path", where)))
		goto fail_res;
	if (has_result(o->r->old_results, res) ||
	    has_result(o->r->results, res)) {
		json_decref(res);
		return;
	}
	if (json_array_append_new(o->r->results, res))
		buf_fail(o->r->msgs);
	return;
fail:
	json_decref(ref);
fail_res:
	json_decref(res);
	buf_fail(o->r->msgs);
}

/* "warning: LABEL: [WHERE: ]TEXT" (where NULL or "": not named); with
 * --check, only its result (a ResourceList that would change). */
static void object_warn(struct object_run *o, const char *where,
			const char *text)
{
	bool named = where && where[0];
	struct buf msg = BUF_INIT;

	buf_addf(&msg, "%s%s%s", named ? where : "", named ? ": " : "", text);
	if (!o->r->opt->check)
		buf_addf(o->r->msgs, "warning: %s: %s\n", o->label,
			 buf_str(&msg));
	add_result(o, "warning", where, buf_str(&msg));
	if (buf_failed(&msg))
		buf_fail(o->r->msgs);
	buf_release(&msg);
}

/* "error: document N[ item I] (LABEL): [WHERE: ]TEXT"; a denial, or an
 * error of the input. */
static void object_error(struct object_run *o, const char *where,
			 const char *text, bool denial)
{
	bool named = where && where[0];
	struct buf msg = BUF_INIT;

	buf_addf(&msg, "%s%s%s", named ? where : "", named ? ": " : "", text);
	buf_add(o->r->msgs, "error: ");
	add_where(o->r->msgs, o->doc, o->item);
	buf_addf(o->r->msgs, " (%s): %s\n", o->label, buf_str(&msg));
	add_result(o, "error", where, buf_str(&msg));
	if (buf_failed(&msg))
		buf_fail(o->r->msgs);
	buf_release(&msg);
	if (denial)
		o->r->denied = true;
	else
		o->r->input_error = true;
}

/*
 * Volcano: gives the template tpl the schedulerName its pods will have
 * when it has none (empty or null counting as none).  Returns the value
 * it had (a new reference, or NULL when absent) in *old, and whether it
 * gave one.
 */
static bool inherit_scheduler(struct object_run *o, json_t *tpl, json_t **old)
{
	json_t *spec = json_object_get(tpl, "spec");
	json_t *s = json_object_get(spec, "schedulerName");

	*old = NULL;
	if (!o->inherit || !json_is_object(spec) ||
	    (json_is_string(s) && json_string_length(s)) ||
	    (s && !json_is_string(s) && !json_is_null(s)))
		return false;
	*old = json_incref(s);
	if (json_object_set_new(spec, "schedulerName",
				json_string(o->inherit))) {
		json_decref(*old);
		*old = NULL;
		return false;
	}
	return true;
}

/* Takes back what inherit_scheduler() gave, unless the decision changed
 * it: the pods take it from the object again. */
static void inherit_restore(struct object_run *o, json_t *tpl, json_t *old)
{
	json_t *spec = json_object_get(tpl, "spec");
	json_t *s = json_object_get(spec, "schedulerName");

	if (json_is_string(s) && !strcmp(json_string_value(s), o->inherit)) {
		if (old)
			json_object_set(spec, "schedulerName", old);
		else
			json_object_del(spec, "schedulerName");
	}
	json_decref(old);
}

/* Decides one template tpl of o->obj found at where (tplpath_fn). */
static int decide_one(void *ctx, json_t *tpl, const char *where)
{
	struct object_run *o = ctx;
	struct run *r = o->r;
	const struct config *cfg = select_profile(r, o->obj, tpl);
	struct review_pod_answer ans;
	json_t *old = NULL;
	bool inherited;
	size_t i;

	if (!o->named)
		where = NULL;
	review_pod_answer_init(&ans);
	inherited = inherit_scheduler(o, tpl, &old);
	if ((tpl == o->obj ? review_pod_apply(cfg, tpl, &ans) :
	     decide_template(cfg, tpl, &ans)) == 0)
		ans.status = REVIEW_POD_DEFAULTED;
	else if (ans.status == REVIEW_POD_DEFAULTED)
		ans.status = REVIEW_POD_FAILED;
	if (inherited)
		inherit_restore(o, tpl, old);
	switch (ans.status) {
	case REVIEW_POD_DEFAULTED:
		o->ops += ans.ops;
		if (ans.ops)
			r->changed = true;
		for (i = 0; i < json_array_size(ans.warnings); i++)
			object_warn(o, where,
				    json_string_value(json_array_get(ans.warnings,
								     i)));
		break;
	case REVIEW_POD_DENIED:
		object_error(o, where, ans.message ? ans.message : "denied",
			     true);
		break;
	default:
		object_error(o, where, ans.message ? ans.message :
			     "out of memory", false);
		break;
	}
	review_pod_answer_release(&ans);
	return 0;
}

/* The built-in workload of kind and api, or NULL. */
static const struct workload *builtin_workload(const json_t *kind,
					       const json_t *api)
{
	size_t i;

	for (i = 0; i < sizeof(workloads) / sizeof(workloads[0]); i++)
		if (is_string(kind, workloads[i].kind) &&
		    is_string(api, workloads[i].api_version))
			return &workloads[i];
	return NULL;
}

/* The entry of the config's `workloads` for kind and api, or NULL. */
static const json_t *config_workload(const struct config *cfg,
				     const json_t *kind, const json_t *api)
{
	const json_t *w;
	size_t i;

	json_array_foreach(cfg->workloads_json, i, w)
		if (json_equal(json_object_get(w, "kind"), kind) &&
		    json_equal(json_object_get(w, "apiVersion"), api))
			return w;
	return NULL;
}

/* Decides every template of o->obj at path. */
static void decide_path(struct object_run *o, const char *path)
{
	char err[256];

	if (tplpath_each(o->obj, path, decide_one, o, err, sizeof(err)) == -2) {
		/* The 400 review gives for a field of the wrong type. */
		struct buf msg = BUF_INIT;

		buf_addf(&msg, "denied (400 BadRequest): %s", err);
		object_error(o, NULL, buf_str(&msg), true);
		if (buf_failed(&msg))
			buf_fail(o->r->msgs);
		buf_release(&msg);
	}
}

/* What a container-like object found by find_gpu() asks for. */
struct gpu_ask {
	struct buf where;
	const char *resource; /* borrowed from the config; NULL: none */
};

/* Whether the resource list rl (limits or requests) names a resource of
 * a family of cfg; that name, or NULL. */
static const char *family_resource(const struct config *cfg, const json_t *rl)
{
	size_t i, j;

	if (!json_is_object(rl))
		return NULL;
	for (i = 0; i < cfg->ndevices; i++)
		for (j = 0; j < VGPU_NRESOURCES; j++)
			if (cfg->devices[i].resource[j][0] &&
			    json_object_get(rl, cfg->devices[i].resource[j]))
				return cfg->devices[i].resource[j];
	return NULL;
}

/*
 * Looks in v (found at a->where) for the first object whose `resources`
 * has limits or requests naming a resource of a family of cfg.  Returns
 * true with a->where and a->resource set.
 */
static bool find_gpu(const struct config *cfg, const json_t *v,
		     struct gpu_ask *a)
{
	size_t mark = a->where.len, i;
	const json_t *x, *res;
	const char *key;
	char tmp[100];

	if (json_is_object(v)) {
		res = json_object_get(v, "resources");
		a->resource = family_resource(cfg, json_object_get(res, "limits"));
		if (!a->resource)
			a->resource = family_resource(cfg,
						      json_object_get(res,
								      "requests"));
		if (a->resource)
			return true;
		json_object_foreach((json_t *)v, key, x) {
			if (!json_is_object(x) && !json_is_array(x))
				continue;
			text_mask_cutn(tmp, sizeof(tmp), key, strlen(key), 63);
			buf_addf(&a->where, "%s%s", mark ? "." : "", tmp);
			if (find_gpu(cfg, x, a))
				return true;
			buf_truncate(&a->where, mark);
		}
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, x) {
			if (!json_is_object(x) && !json_is_array(x))
				continue;
			buf_addf(&a->where, "[%zu]", i);
			if (find_gpu(cfg, x, a))
				return true;
			buf_truncate(&a->where, mark);
		}
	}
	return false;
}

/*
 * An object of a kind `default` does not know: when something in it asks
 * for a family's resource, its pods would go undecided, which is said (a
 * warning; with --check a line and exit status 3).
 */
static void check_unknown(struct object_run *o)
{
	struct gpu_ask a = { BUF_INIT, NULL };
	struct buf text = BUF_INIT;

	if (find_gpu(select_profile(o->r, o->obj, NULL), o->obj, &a)) {
		buf_addf(&text, "%s asks for %s, but vgpu-webhook does not know "
			 "where the pod templates of ",
			 a.where.len ? buf_str(&a.where) : "the object",
			 a.resource);
		add_field(&text, json_object_get(o->obj, "apiVersion"), "");
		buf_add(&text, " ");
		add_field(&text, json_object_get(o->obj, "kind"), "");
		buf_add(&text, " are: its pods are not defaulted (name them in "
			"the config's \"workloads\")");
		if (o->r->opt->check)
			buf_addf(o->r->msgs, "%s: %s\n", o->label,
				 buf_str(&text));
		object_warn(o, NULL, buf_str(&text));
		o->r->unknown = true;
	}
	if (buf_failed(&text) || buf_failed(&a.where))
		buf_fail(o->r->msgs);
	buf_release(&text);
	buf_release(&a.where);
}

/* Defaults one object (a document, or an item of a List) in place. */
static void default_object(struct run *r, json_t *obj, size_t doc,
			   size_t item)
{
	const json_t *kind = json_object_get(obj, "kind");
	const json_t *api = json_object_get(obj, "apiVersion");
	struct object_run o = { r, obj, NULL, doc, item, false, NULL, 0 };
	const struct workload *w;
	const json_t *cw, *t;
	struct buf label = BUF_INIT;
	size_t i, n = 0;

	object_label(&label, obj, r->opt);
	o.label = buf_str(&label);
	if (!json_is_string(kind) || !json_is_string(api)) {
		buf_add(r->msgs, "warning: ");
		add_where(r->msgs, doc, item);
		buf_addf(r->msgs, " (%s): %s is not a string; passed through "
			 "unchanged\n", buf_str(&label),
			 !json_is_string(kind) ? "kind" : "apiVersion");
		add_result(&o, "warning", NULL, !json_is_string(kind) ?
			   "kind is not a string; passed through unchanged" :
			   "apiVersion is not a string; passed through unchanged");
		goto out;
	}
	cw = config_workload(r->cfg, kind, api);
	w = cw ? NULL : builtin_workload(kind, api);
	if (!cw && !w) {
		check_unknown(&o);
		goto out;
	}
	if (is_string(kind, "Job") && is_string(api, VOLCANO_API)) {
		t = json_object_get(json_object_get(obj, "spec"),
				    "schedulerName");
		o.inherit = json_is_string(t) && json_string_length(t) &&
			    strlen(json_string_value(t)) == json_string_length(t) ?
			    json_string_value(t) : VOLCANO_SCHEDULER;
	}
	/* Templates are named when there may be more than one. */
	if (cw) {
		json_array_foreach(json_object_get(cw, "templates"), i, t)
			o.named = o.named || i ||
				  tplpath_has_wildcard(json_string_value(t));
		json_array_foreach(json_object_get(cw, "templates"), i, t)
			decide_path(&o, json_string_value(t));
	} else {
		for (n = 0; w->paths[n]; n++)
			o.named = o.named || n ||
				  tplpath_has_wildcard(w->paths[n]);
		for (n = 0; w->paths[n]; n++)
			decide_path(&o, w->paths[n]);
	}
	if (r->opt->check && o.ops)
		buf_addf(r->msgs, "%s: %zu operation%s\n", buf_str(&label),
			 o.ops, o.ops == 1 ? "" : "s");
out:
	buf_release(&label);
}

/* Whether obj is a List: a kind ending in "List", with items. */
static bool is_list(const json_t *obj)
{
	const json_t *kind = json_object_get(obj, "kind");
	size_t n = json_string_length(kind);

	return json_is_string(kind) && n >= 4 &&
	       !memcmp(json_string_value(kind) + n - 4, "List", 4) &&
	       json_is_array(json_object_get(obj, "items"));
}

/* Defaults each item of the array items (of document index). */
static void default_items(struct run *r, json_t *items, size_t index)
{
	json_t *item;
	char what[96];
	size_t i;

	json_array_foreach(items, i, item) {
		if (!json_is_object(item)) {
			snprintf(what, sizeof(what), "not an object but %s",
				 jsonout_type_name(item));
			input_error(r, index, i + 1, what);
			continue;
		}
		default_object(r, item, index, i + 1);
	}
}

/* Whether obj is a KRM ResourceList (config.kubernetes.io/v1). */
static bool is_resource_list(const json_t *obj)
{
	return is_string(json_object_get(obj, "kind"), "ResourceList") &&
	       is_string(json_object_get(obj, "apiVersion"),
			 "config.kubernetes.io/v1");
}

/*
 * Defaults the items of the ResourceList rl (KRM functions: kyaml's
 * fn/framework) and adds a result for each warning and denial to its
 * `results` (kept, and appended to, when it has some); functionConfig and
 * every other key stay as they are.
 */
static void default_resource_list(struct run *r, json_t *rl, size_t index)
{
	json_t *items = json_object_get(rl, "items"), *old;
	char what[96];

	r->krm = true;
	if (items && !json_is_array(items) && !json_is_null(items)) {
		snprintf(what, sizeof(what), "ResourceList items: expected an "
			 "array, got %s", jsonout_type_name(items));
		input_error(r, index, 0, what);
		return;
	}
	r->results = json_array();
	if (!r->results) {
		buf_fail(r->msgs);
		return;
	}
	r->old_results = json_object_get(rl, "results");
	default_items(r, items, index);
	if (json_array_size(r->results)) {
		old = json_object_get(rl, "results");
		if (json_is_array(old) ? json_array_extend(old, r->results) :
		    json_object_set(rl, "results", r->results))
			buf_fail(r->msgs);
		r->changed = true;
	}
	json_decref(r->results);
	r->results = NULL;
	r->old_results = NULL;
}

/* Defaults one document: an object or a List of objects. */
static void default_document(struct run *r, json_t *doc, size_t index,
			     int line)
{
	char what[96];

	if (!json_is_object(doc)) {
		if (line)
			snprintf(what, sizeof(what), "line %d: not a mapping "
				 "but %s", line, jsonout_type_name(doc));
		else
			snprintf(what, sizeof(what), "not an object but %s",
				 jsonout_type_name(doc));
		input_error(r, index, 0, what);
		return;
	}
	if (is_resource_list(doc)) {
		if (r->objects > 1)
			input_error(r, index, 0, "a ResourceList must be the "
				    "only document of its stream");
		else
			default_resource_list(r, doc, index);
		return;
	}
	if (r->krm) {
		input_error(r, index, 0, "a ResourceList must be the only "
			    "document of its stream");
		return;
	}
	if (!is_list(doc)) {
		default_object(r, doc, index, 0);
		return;
	}
	default_items(r, json_object_get(doc, "items"), index);
}

/* Appends doc as JSON indented by 2, then a newline. */
static void write_json(struct buf *out, const json_t *doc)
{
	int precision = 1;
	char *text;

	jsonout_value_precision(doc, &precision);
	text = json_dumps(doc, JSON_INDENT(2) | JSON_REAL_PRECISION(precision));
	if (!text) {
		buf_fail(out);
		return;
	}
	buf_add(out, text);
	buf_add(out, "\n");
	jsonout_free(text);
}

/*
 * Writes a changed document in the place of its text d: what came before
 * its value ("---", comments) and after it (comments, "...") as they were,
 * the value written anew with its comment lines put back.
 */
static void write_changed(struct run *r, const json_t *doc,
			  const struct yamlio_doc *d)
{
	const char *after = r->in + d->content_end;
	size_t n = d->end - d->content_end;

	struct buf value = BUF_INIT;

	buf_addn(r->out, r->in + d->start, d->content_start - d->start);
	if (d->content_start > d->start && r->in[d->content_start - 1] != '\n')
		buf_add(r->out, "\n"); /* "--- value" on one line */
	yamlio_dump(&value, doc);
	if (buf_failed(&value))
		buf_fail(r->out);
	else
		yamlio_keep_comments(r->out, r->in, d, value.s, value.len);
	buf_release(&value);
	if (n && after[0] == '\n') {
		after++;
		n--;
	}
	buf_addn(r->out, after, n);
}

/*
 * Defaults one YAML document as soon as it is read (yamlio_doc_fn), and
 * writes it while nothing has gone wrong: only one document is held.  A
 * document that is not changed is written as it was read, byte for byte;
 * so is the text around the value of one that is.  Without the places of
 * the documents (UTF-16 input), every document is written anew.
 */
static int on_document(void *ctx, json_t *doc, const struct yamlio_doc *d)
{
	struct run *r = ctx;
	bool before = r->changed;

	r->changed = false;
	if (!json_is_null(doc)) {
		r->objects++;
		default_document(r, doc, d->index, d->line);
	}
	if (!r->input_error && (!r->denied || r->krm) && !r->opt->check) {
		if (!d->spans) {
			if (!json_is_null(doc)) {
				if (r->written++)
					buf_add(r->out, "---\n");
				yamlio_dump(r->out, doc);
			}
		} else if (r->changed) {
			write_changed(r, doc, d);
		} else {
			buf_addn(r->out, r->in + d->start, d->end - d->start);
		}
	}
	r->changed = r->changed || before;
	return buf_failed(r->out) || buf_failed(r->msgs) ? -1 : 0;
}

enum manifest_status manifest_default(const struct config *cfg,
				      const char *buf, size_t len,
				      const struct manifest_options *opt,
				      struct buf *out, struct buf *msgs)
{
	struct run r = { cfg, opt, msgs, out, 0, false, false, false, false,
			 buf, NULL, NULL, false, 0 };
	struct pick_error perr;
	struct yamlio_error yerr;
	size_t tail = len;
	json_t *root;

	/* Input that parses as one JSON value is JSON. */
	root = pick_loadb(buf, len, &pick_all, &perr);
	if (root) {
		if (json_is_array(root))
			input_error(&r, 1, 0, "a JSON array is not a manifest "
				    "(put the objects in a List)");
		else if (len > YAMLIO_DOCUMENT_MAX)
			input_error(&r, 1, 0, "the document is larger than "
				    "3145728 bytes");
		else
			default_document(&r, root, 1, 0);
		if (!r.input_error && (!r.denied || r.krm) && !opt->check) {
			if (r.changed)
				write_json(out, root);
			else
				buf_addn(out, buf, len); /* as it was */
		}
		json_decref(root);
	} else if (perr.status == PICK_NOMEM) {
		buf_add(msgs, "error: out of memory\n");
		r.input_error = true;
	} else if (perr.status == PICK_DEPTH) {
		/* JSON up to there, and too deep for YAML's 200 levels too:
		 * said as JSON. */
		buf_addf(msgs, "error: document 1: line %d, column %d: nested "
			 "deeper than %d levels\n", perr.line, perr.column,
			 JSON_PARSER_MAX_DEPTH);
		r.input_error = true;
	} else if (!yamlio_each(buf, len, on_document, &r, &tail, &yerr)) {
		/* Comments after the last document. */
		buf_addn(out, buf + tail, len - tail);
	} else {
		buf_addf(msgs, "error: document %zu: ",
			 yerr.document ? yerr.document : 1);
		if (yerr.line)
			buf_addf(msgs, "line %d, column %d: ", yerr.line,
				 yerr.column);
		buf_addf(msgs, "%s\n", yerr.text[0] ? yerr.text :
			 "out of memory");
		r.input_error = true;
	}
	if (opt->resource_list && !r.krm && !r.input_error) {
		buf_add(msgs, "error: without a command, the input must be a "
			"KRM ResourceList (config.kubernetes.io/v1), as kustomize "
			"and kpt send to a function; for other input run "
			"`vgpu-webhook default`\n");
		r.input_error = true;
	}
	if (buf_failed(out) || buf_failed(msgs))
		r.input_error = true;
	if (r.input_error || (r.denied && !r.krm) || opt->check)
		buf_truncate(out, 0);
	if (r.input_error)
		return MANIFEST_INPUT;
	if (r.denied)
		return MANIFEST_DENIED;
	if ((r.changed || r.unknown) && opt->check)
		return MANIFEST_CHANGED;
	return MANIFEST_OK;
}

enum manifest_status manifest_default_object(const struct config *cfg,
					     json_t *obj,
					     const struct manifest_options *opt,
					     json_t *results, bool *changed)
{
	struct buf msgs = BUF_INIT;
	struct run r = { cfg, opt, &msgs, NULL, 0, false, false, false, false,
			 NULL, results, NULL, true, 0 };

	default_object(&r, obj, 1, 0);
	if (buf_failed(&msgs))
		r.input_error = true;
	buf_release(&msgs);
	*changed = r.changed;
	if (r.input_error)
		return MANIFEST_INPUT;
	return r.denied ? MANIFEST_DENIED : MANIFEST_OK;
}
