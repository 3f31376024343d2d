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
#include "yamlio.h"

/* Where the pod template of a kind sits ("" for a Pod itself). */
struct workload {
	const char *api_version;
	const char *kind;
	const char *const *path; /* NULL-terminated keys */
};

static const char *const no_path[] = { NULL };
static const char *const spec_template[] = { "spec", "template", NULL };
static const char *const job_template[] = { "spec", "jobTemplate", "spec",
					    "template", NULL };
static const char *const template_only[] = { "template", NULL };

static const struct workload workloads[] = {
	{ "v1", "Pod", no_path },
	{ "apps/v1", "Deployment", spec_template },
	{ "apps/v1", "ReplicaSet", spec_template },
	{ "apps/v1", "StatefulSet", spec_template },
	{ "apps/v1", "DaemonSet", spec_template },
	{ "batch/v1", "Job", spec_template },
	{ "v1", "ReplicationController", spec_template },
	{ "batch/v1", "CronJob", job_template },
	{ "batch/v1beta1", "CronJob", job_template },
	{ "v1", "PodTemplate", template_only },
};

/* The state of one run. */
struct run {
	const struct config *cfg;
	const struct manifest_options *opt;
	struct buf *msgs;
	struct buf *out;   /* YAML: the documents written so far */
	size_t written;    /* how many */
	bool denied, input_error, changed;
	const char *in;    /* the input, for the documents kept as they are */
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
 * The pod template of obj under path: 0 with *tpl set (NULL when a key
 * on the way is absent: nothing to decide), or -1 with a message in
 * err when a value on the way is not an object.
 */
static int find_template(json_t *obj, const char *const *path, json_t **tpl,
			 char *err, size_t errlen)
{
	struct buf where = BUF_INIT;
	json_t *v = obj;
	size_t i;

	for (i = 0; path[i]; i++) {
		v = json_object_get(v, path[i]);
		buf_addf(&where, "%s%s", i ? "." : "", path[i]);
		if (!v || json_is_null(v)) {
			*tpl = NULL;
			buf_release(&where);
			return 0;
		}
		if (!json_is_object(v)) {
			snprintf(err, errlen, "%s: expected an object, got %s",
				 buf_str(&where), jsonout_type_name(v));
			buf_release(&where);
			return -1;
		}
	}
	buf_release(&where);
	*tpl = v;
	return 0;
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
 * --namespace, or "default") and the labels of its pod template tpl.
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

/* Defaults one object (a document, or an item of a List) in place. */
static void default_object(struct run *r, json_t *obj, size_t doc,
			   size_t item)
{
	const struct config *cfg;
	const json_t *kind = json_object_get(obj, "kind");
	const json_t *api = json_object_get(obj, "apiVersion");
	struct review_pod_answer ans;
	struct buf label = BUF_INIT;
	const struct workload *w = NULL;
	json_t *tpl = obj;
	char err[256];
	size_t i;

	object_label(&label, obj, r->opt);
	if (!json_is_string(kind) || !json_is_string(api)) {
		buf_add(r->msgs, "warning: ");
		add_where(r->msgs, doc, item);
		buf_addf(r->msgs, " (%s): %s is not a string; passed through "
			 "unchanged\n", buf_str(&label),
			 !json_is_string(kind) ? "kind" : "apiVersion");
		goto out;
	}
	for (i = 0; i < sizeof(workloads) / sizeof(workloads[0]); i++)
		if (is_string(kind, workloads[i].kind) &&
		    is_string(api, workloads[i].api_version))
			w = &workloads[i];
	if (!w)
		goto out;
	review_pod_answer_init(&ans);
	if (find_template(obj, w->path, &tpl, err, sizeof(err))) {
		/* The 400 review gives for a field of the wrong type. */
		buf_add(r->msgs, "error: ");
		add_where(r->msgs, doc, item);
		buf_addf(r->msgs, " (%s): denied (400 BadRequest): %s\n",
			 buf_str(&label), err);
		r->denied = true;
		goto out_ans;
	}
	if (!tpl)
		goto out_ans;
	cfg = select_profile(r, obj, tpl);
	if ((tpl == obj ? review_pod_apply(cfg, obj, &ans) :
	     decide_template(cfg, tpl, &ans)) == 0)
		ans.status = REVIEW_POD_DEFAULTED;
	else if (ans.status == REVIEW_POD_DEFAULTED)
		ans.status = REVIEW_POD_FAILED;
	switch (ans.status) {
	case REVIEW_POD_DEFAULTED:
		if (ans.ops)
			r->changed = true;
		if (r->opt->check) {
			if (ans.ops)
				buf_addf(r->msgs, "%s: %zu operation%s\n",
					 buf_str(&label), ans.ops,
					 ans.ops == 1 ? "" : "s");
			break;
		}
		for (i = 0; i < json_array_size(ans.warnings); i++)
			buf_addf(r->msgs, "warning: %s: %s\n", buf_str(&label),
				 json_string_value(json_array_get(ans.warnings,
								  i)));
		break;
	case REVIEW_POD_DENIED:
		buf_add(r->msgs, "error: ");
		add_where(r->msgs, doc, item);
		buf_addf(r->msgs, " (%s): %s\n", buf_str(&label),
			 ans.message ? ans.message : "denied");
		r->denied = true;
		break;
	default:
		buf_add(r->msgs, "error: ");
		add_where(r->msgs, doc, item);
		buf_addf(r->msgs, " (%s): %s\n", buf_str(&label),
			 ans.message ? ans.message : "out of memory");
		r->input_error = true;
		break;
	}
out_ans:
	review_pod_answer_release(&ans);
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

/* Defaults one document: an object or a List of objects. */
static void default_document(struct run *r, json_t *doc, size_t index,
			     int line)
{
	json_t *items, *item;
	char what[96];
	size_t i;

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
	if (!is_list(doc)) {
		default_object(r, doc, index, 0);
		return;
	}
	items = json_object_get(doc, "items");
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
 * the value written anew.
 */
static void write_changed(struct run *r, const json_t *doc,
			  const struct yamlio_doc *d)
{
	const char *after = r->in + d->content_end;
	size_t n = d->end - d->content_end;

	buf_addn(r->out, r->in + d->start, d->content_start - d->start);
	if (d->content_start > d->start && r->in[d->content_start - 1] != '\n')
		buf_add(r->out, "\n"); /* "--- value" on one line */
	yamlio_dump(r->out, doc);
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
	if (!json_is_null(doc))
		default_document(r, doc, d->index, d->line);
	if (!r->input_error && !r->denied && !r->opt->check) {
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
	struct run r = { cfg, opt, msgs, out, 0, false, false, false, buf };
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
		if (!r.input_error && !r.denied && !opt->check) {
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
	if (buf_failed(out) || buf_failed(msgs))
		r.input_error = true;
	if (r.input_error || r.denied || opt->check)
		buf_truncate(out, 0);
	if (r.input_error)
		return MANIFEST_INPUT;
	if (r.denied)
		return MANIFEST_DENIED;
	if (r.changed && opt->check)
		return MANIFEST_CHANGED;
	return MANIFEST_OK;
}
