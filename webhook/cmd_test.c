/*
 * cmd_test.c - the `test` command (cmd_test.h, docs/behaviour.md §11).
 *
 * Each object of a test's manifests is decided by manifest_default_object()
 * (what `default` does to it), each review by review_handlen_with() (what
 * `serve` answers); their results are compared with the expectations.
 */
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "buf.h"
#include "cmd_test.h"
#include "config.h"
#include "file.h"
#include "jsonout.h"
#include "manifest.h"
#include "review.h"
#include "text.h"
#include "yamlio.h"

#define PROG "vgpu-webhook"
#define DEPTH_MAX 16
#define INPUT_MAX ((size_t)64 << 20)

/* The keys of a test file and of one of its results. */
static const char *const test_keys[] = {
	"apiVersion", "kind", "metadata", "name", "config", "namespace",
	"user", "groups", "resources", "results", NULL
};
static const char *const result_keys[] = {
	"kind", "resources", "review", "result", "patchedResource", "patch",
	"message", "warnings", NULL
};

/* One test file being run. */
struct test {
	const char *path; /* the file, as found */
	char *dir;        /* its folder, for the files it names */
	const char *name; /* metadata.name or name, else path */
	json_t *doc;      /* the file */
	struct config cfg;
	bool have_cfg;
	struct manifest_options opt;
	struct review_options ropt;
	json_t *objects;  /* the manifests' objects, as read */
	size_t passed, failed;
};

/* --- small helpers ------------------------------------------------------- */

/* "DIR/NAME" (or NAME when absolute), malloc'd; NULL out of memory. */
static char *join(const char *dir, const char *name)
{
	struct buf b = BUF_INIT;

	if (name[0] == '/' || !dir[0])
		buf_add(&b, name);
	else
		buf_addf(&b, "%s/%s", dir, name);
	if (buf_failed(&b)) {
		buf_release(&b);
		return NULL;
	}
	return buf_detach(&b, NULL);
}

/*
 * The documents of the YAML or JSON file path, empty ones left out: a new
 * array, or NULL with the reason in err.
 */
static json_t *load_docs_at(const char *path, char *err, size_t errlen)
{
	struct yamlio_error yerr;
	char *data = NULL, msg[600];
	json_t *docs = NULL, *all, *v;
	size_t len, i;

	if (file_read(path, INPUT_MAX, &data, &len, msg, sizeof(msg))) {
		snprintf(err, errlen, "%s", msg);
		return NULL;
	}
	all = yamlio_load(data, len, NULL, &yerr);
	free(data);
	if (!all) {
		snprintf(err, errlen, "%s: document %zu: line %d: %s", path,
			 yerr.document, yerr.line,
			 yerr.text[0] ? yerr.text : "out of memory");
		return NULL;
	}
	docs = json_array();
	json_array_foreach(all, i, v)
		if (!json_is_null(v) && docs && json_array_append(docs, v)) {
			json_decref(docs);
			docs = NULL;
		}
	json_decref(all);
	if (!docs)
		snprintf(err, errlen, "out of memory");
	return docs;
}

/* load_docs_at() for the file name of the test (relative to its folder). */
static json_t *load_docs(const struct test *t, const char *name, char *err,
			 size_t errlen)
{
	char *path = join(t->dir, name);
	json_t *docs;

	if (!path) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	docs = load_docs_at(path, err, errlen);
	free(path);
	return docs;
}

/* Whether obj has only keys of keys; else the first other into *bad. */
static bool known_keys(const json_t *obj, const char *const *keys,
		       const char **bad)
{
	const char *key;
	json_t *v;
	size_t i;

	json_object_foreach((json_t *)obj, key, v) {
		for (i = 0; keys[i] && strcmp(keys[i], key); i++)
			;
		if (!keys[i]) {
			*bad = key;
			return false;
		}
	}
	return true;
}

/* Whether v is an array of strings (NULL counts as an empty one). */
static bool strings(const json_t *v)
{
	const json_t *s;
	size_t i;

	if (!v)
		return true;
	if (!json_is_array(v))
		return false;
	json_array_foreach(v, i, s)
		if (!json_is_string(s))
			return false;
	return true;
}

/* A string member of obj, or alt. */
static const char *str(const json_t *obj, const char *key, const char *alt)
{
	const json_t *v = json_object_get(obj, key);

	return json_is_string(v) ? json_string_value(v) : alt;
}

/* --- reporting ----------------------------------------------------------- */

/* "PASS TEST: WHAT" */
static void pass(struct test *t, const char *what)
{
	printf("PASS %s: %s\n", t->name, what);
	t->passed++;
}

/* "FAIL TEST: WHAT: WHY" */
static void fail(struct test *t, const char *what, const char *why)
{
	printf("FAIL %s: %s: %s\n", t->name, what, why);
	t->failed++;
}

/* Appends v as compact JSON, cut to 300 bytes. */
static void add_json(struct buf *b, const json_t *v)
{
	struct buf tmp = BUF_INIT;

	if (!v) {
		buf_add(b, "(absent)");
		return;
	}
	jsonout_dump(&tmp, v);
	if (tmp.len > 300)
		buf_addf(b, "%.300s...", buf_str(&tmp));
	else
		buf_add(b, buf_str(&tmp));
	buf_release(&tmp);
}

/*
 * Finds the first place where got differs from want, in want's order
 * (then got's members that want lacks), and writes it into d as
 *   first difference at PATH:
 *   - WANT
 *   + GOT
 * Returns whether there is one.
 */
static bool first_difference(struct buf *d, struct buf *path,
			     const json_t *want, const json_t *got)
{
	size_t mark = path->len, i, n;
	const char *key;
	json_t *v;

	if (json_equal(want, got))
		return false;
	if (json_is_object(want) && json_is_object(got)) {
		json_object_foreach((json_t *)want, key, v) {
			buf_addf(path, "%s%s", mark ? "." : "", key);
			if (first_difference(d, path, v,
					     json_object_get(got, key)))
				return true;
			buf_truncate(path, mark);
		}
		json_object_foreach((json_t *)got, key, v) {
			buf_addf(path, "%s%s", mark ? "." : "", key);
			if (first_difference(d, path, NULL, v))
				return true;
			buf_truncate(path, mark);
		}
	} else if (json_is_array(want) && json_is_array(got)) {
		n = json_array_size(want) > json_array_size(got) ?
			    json_array_size(want) : json_array_size(got);
		for (i = 0; i < n; i++) {
			buf_addf(path, "[%zu]", i);
			if (first_difference(d, path, json_array_get(want, i),
					     json_array_get(got, i)))
				return true;
			buf_truncate(path, mark);
		}
	}
	buf_addf(d, "  first difference at %s:\n  - ",
		 path->len ? buf_str(path) : "(the whole value)");
	add_json(d, want);
	buf_add(d, "\n  + ");
	add_json(d, got);
	buf_add(d, "\n");
	return true;
}

/* Prints the first difference of got from want, indented. */
static void print_difference(const json_t *want, const json_t *got)
{
	struct buf d = BUF_INIT, path = BUF_INIT;

	if (first_difference(&d, &path, want, got))
		fputs(buf_str(&d), stdout);
	buf_release(&d);
	buf_release(&path);
}

/* --- what came out of one object or review -------------------------------- */

struct outcome {
	bool allowed, changed;
	const char *message; /* the denial's, or NULL (borrowed) */
	json_t *warnings;    /* array of strings */
	json_t *object;      /* manifests: the object after defaulting */
	json_t *patch;       /* reviews: the JSON Patch, [] for none */
	json_t *keep;        /* what message lives in */
};

/*
 * Compares o with the expectations of res, naming what as checked; one
 * PASS or FAIL line.
 */
static void judge(struct test *t, const json_t *res, const char *what,
		  const struct outcome *o)
{
	const char *want = str(res, "result", "pass");
	const char *msg = str(res, "message", NULL);
	const char *got = !o->allowed ? "fail" : o->changed ? "pass" : "skip";
	const json_t *warnings = json_object_get(res, "warnings");
	const json_t *file;
	json_t *docs;
	struct buf why = BUF_INIT;
	char err[700];

	if (strcmp(want, got) && !(!strcmp(want, "pass") && o->allowed)) {
		buf_addf(&why, "expected %s, got %s", want, got);
		if (o->message)
			buf_addf(&why, " (%s)", o->message);
		fail(t, what, buf_str(&why));
		goto out;
	}
	if (msg && (!o->message || !strstr(o->message, msg))) {
		buf_addf(&why, "the denial does not say \"%s\"", msg);
		fail(t, what, buf_str(&why));
		if (o->message)
			printf("  - %s\n  + %s\n", msg, o->message);
		goto out;
	}
	if (warnings && !json_equal(warnings, o->warnings)) {
		fail(t, what, "the warnings differ");
		print_difference(warnings, o->warnings);
		goto out;
	}
	file = json_object_get(res, o->object ? "patchedResource" : "patch");
	if (json_is_string(file)) {
		docs = load_docs(t, json_string_value(file), err, sizeof(err));
		if (!docs) {
			fail(t, what, err);
			goto out;
		}
		if (json_array_size(docs) != 1) {
			buf_addf(&why, "%s: expected one document, got %zu",
				 json_string_value(file), json_array_size(docs));
			fail(t, what, buf_str(&why));
		} else if (!json_equal(json_array_get(docs, 0),
				       o->object ? o->object : o->patch)) {
			buf_addf(&why, "%s differs",
				 o->object ? "the defaulted object" :
				 "the patch");
			fail(t, what, buf_str(&why));
			print_difference(json_array_get(docs, 0),
					 o->object ? o->object : o->patch);
		} else {
			pass(t, what);
		}
		json_decref(docs);
		goto out;
	}
	pass(t, what);
out:
	buf_release(&why);
}

/* The namespace of obj as `default` names it: its own, the test's, or
 * "default". */
static const char *object_namespace(const struct test *t, const json_t *obj)
{
	const char *ns = str(json_object_get(obj, "metadata"), "namespace", "");

	return ns[0] ? ns : t->opt.namespace_ ? t->opt.namespace_ : "default";
}

/* Whether obj is the object of kind named name ("NAME" or "NS/NAME"). */
static bool is_object(const struct test *t, const json_t *obj,
		      const char *kind, const char *name)
{
	const json_t *meta = json_object_get(obj, "metadata");
	const char *slash = strchr(name, '/');
	const char *own = str(meta, "name", "");

	if (strcmp(str(obj, "kind", ""), kind))
		return false;
	if (!slash)
		return !strcmp(own, name);
	return !strcmp(slash + 1, own) &&
	       strlen(object_namespace(t, obj)) == (size_t)(slash - name) &&
	       !strncmp(object_namespace(t, obj), name, (size_t)(slash - name));
}

/* Defaults a copy of obj and fills o (released by outcome_release()). */
static int decide_object(struct test *t, const json_t *obj, struct outcome *o,
			 char *err, size_t errlen)
{
	json_t *results = json_array(), *r;
	enum manifest_status st;
	size_t i;

	memset(o, 0, sizeof(*o));
	o->object = json_deep_copy(obj);
	o->warnings = json_array();
	if (!results || !o->object || !o->warnings)
		goto oom;
	st = manifest_default_object(&t->cfg, o->object, &t->opt, results,
				     &o->changed);
	if (st == MANIFEST_INPUT) {
		snprintf(err, errlen, "%s", json_array_size(results) ?
			 str(json_array_get(results, 0), "message", "error") :
			 "out of memory");
		json_decref(results);
		return -1;
	}
	o->allowed = st == MANIFEST_OK;
	json_array_foreach(results, i, r) {
		if (!strcmp(str(r, "severity", ""), "warning")) {
			if (json_array_append(o->warnings,
					      json_object_get(r, "message")))
				goto oom;
		} else if (!o->message) {
			o->message = str(r, "message", NULL);
		}
	}
	o->keep = results;
	return 0;
oom:
	json_decref(results);
	snprintf(err, errlen, "out of memory");
	return -1;
}

/* Frees what o holds; o is left zeroed. */
static void outcome_release(struct outcome *o)
{
	json_decref(o->warnings);
	json_decref(o->object);
	json_decref(o->patch);
	json_decref(o->keep);
	memset(o, 0, sizeof(*o));
}

/*
 * Decodes the base64 text s (padding optional) into a new buffer of *len
 * bytes that the caller frees; NULL when s holds another byte, or out of
 * memory.
 */
static char *base64_decode(const char *s, size_t *len)
{
	static const char digits[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t n = strlen(s), i, o = 0;
	unsigned acc = 0, bits = 0;
	char *out = malloc(n / 4 * 3 + 3);
	const char *p;

	if (!out)
		return NULL;
	for (i = 0; i < n && s[i] != '='; i++) {
		p = strchr(digits, s[i]);
		if (!p) {
			free(out);
			return NULL;
		}
		acc = (acc << 6) | (unsigned)(p - digits);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (char)((acc >> bits) & 0xff);
		}
	}
	*len = o;
	return out;
}

/* Answers the review file name and fills o. */
static int decide_review(struct test *t, const char *name, struct outcome *o,
			 char *err, size_t errlen)
{
	char *path = join(t->dir, name), *data = NULL, *patch;
	const json_t *resp, *p;
	struct review_answer ans;
	size_t len;
	int rc = -1;

	memset(o, 0, sizeof(*o));
	review_answer_init(&ans);
	if (!path) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	if (file_read(path, REVIEW_BODY_MAX, &data, &len, err, errlen))
		goto out;
	if (review_handlen_with(&t->cfg, data, len, &t->ropt, &ans)) {
		snprintf(err, errlen, "%s: %s", name,
			 ans.body ? ans.body : "out of memory");
		goto out;
	}
	o->keep = json_loadb(ans.body, ans.body_len, 0, NULL);
	resp = json_object_get(o->keep, "response");
	o->allowed = json_is_true(json_object_get(resp, "allowed"));
	p = json_object_get(resp, "warnings");
	o->warnings = p ? json_incref((json_t *)p) : json_array();
	p = json_object_get(resp, "patch");
	if (json_is_string(p)) {
		patch = base64_decode(json_string_value(p), &len);
		if (patch)
			o->patch = json_loadb(patch, len, 0, NULL);
		free(patch);
	} else {
		o->patch = json_array();
	}
	o->changed = json_array_size(o->patch) > 0;
	if (!o->allowed)
		o->message = str(json_object_get(resp, "status"), "message",
				 NULL);
	if (!resp || !o->warnings || !json_is_array(o->patch)) {
		snprintf(err, errlen, "%s: the answer cannot be read", name);
		goto out;
	}
	rc = 0;
out:
	review_answer_release(&ans);
	free(data);
	free(path);
	return rc;
}

/* --- one test file ------------------------------------------------------- */

/* Checks the shape of the test file; the reason in err. */
static int check_test(const json_t *doc, char *err, size_t errlen)
{
	const json_t *results = json_object_get(doc, "results"), *res;
	const char *bad, *result;
	size_t i;

	if (!json_is_object(doc))
		return text_errorf(err, errlen, "not a mapping but %s",
				   jsonout_type_name(doc));
	if (!known_keys(doc, test_keys, &bad))
		return text_errorf(err, errlen, "unknown key \"%.64s\"", bad);
	if (!strings(json_object_get(doc, "resources")) ||
	    !strings(json_object_get(doc, "groups")))
		return text_errorf(err, errlen, "resources and groups are lists "
				   "of strings");
	if (!json_is_array(results) || !json_array_size(results))
		return text_errorf(err, errlen, "results: expected a non-empty "
				   "list");
	json_array_foreach(results, i, res) {
		if (!json_is_object(res))
			return text_errorf(err, errlen, "results[%zu]: not a "
					   "mapping", i);
		if (!known_keys(res, result_keys, &bad))
			return text_errorf(err, errlen, "results[%zu]: unknown "
					   "key \"%.64s\"", i, bad);
		result = str(res, "result", "pass");
		if (strcmp(result, "pass") && strcmp(result, "fail") &&
		    strcmp(result, "skip"))
			return text_errorf(err, errlen, "results[%zu].result: "
					   "\"%.32s\" is not pass, fail or skip",
					   i, result);
		if (json_is_string(json_object_get(res, "review")) ==
		    (json_object_get(res, "kind") != NULL))
			return text_errorf(err, errlen, "results[%zu]: give "
					   "either review, or kind and "
					   "resources", i);
		if (json_object_get(res, "kind") &&
		    (!json_is_string(json_object_get(res, "kind")) ||
		     !strings(json_object_get(res, "resources")) ||
		     !json_array_size(json_object_get(res, "resources"))))
			return text_errorf(err, errlen, "results[%zu]: kind is a "
					   "string and resources a non-empty "
					   "list of names", i);
		if (!strings(json_object_get(res, "warnings")))
			return text_errorf(err, errlen, "results[%zu].warnings: "
					   "expected a list of strings", i);
	}
	return 0;
}

/* Builds t->cfg: the built-in config, or the test's config file. */
static int test_config(struct test *t, char *err, size_t errlen)
{
	struct config_source src;
	struct config_bytes file = { NULL, 0 }, hami = { NULL, 0 };
	const char *name = str(t->doc, "config", NULL);
	char *path = NULL, *data = NULL, msg[600];
	int rc = -1;

	memset(&src, 0, sizeof(src));
	if (name) {
		path = join(t->dir, name);
		if (!path || file_read(path, CONFIG_FILE_MAX, &data, &file.len,
				       msg, sizeof(msg))) {
			snprintf(err, errlen, "config: %s",
				 path ? msg : "out of memory");
			goto out;
		}
		file.data = data;
		src.path = path;
	}
	if (config_build(&t->cfg, &src, &file, &hami, err, errlen))
		goto out;
	t->have_cfg = true;
	rc = 0;
out:
	free(data);
	free(path);
	return rc;
}

/* Reads the objects of the test's manifests (Lists flattened). */
static int test_objects(struct test *t, char *err, size_t errlen)
{
	const json_t *files = json_object_get(t->doc, "resources"), *f, *d;
	json_t *docs;
	size_t i, j, k;

	t->objects = json_array();
	if (!t->objects)
		return text_errorf(err, errlen, "out of memory");
	json_array_foreach(files, i, f) {
		docs = load_docs(t, json_string_value(f), err, errlen);
		if (!docs)
			return -1;
		json_array_foreach(docs, j, d) {
			const json_t *items = json_object_get(d, "items");
			const char *kind = str(d, "kind", "");

			bool list = strlen(kind) >= 4 && json_is_array(items) &&
				    !strcmp(kind + strlen(kind) - 4, "List");

			for (k = 0; k < (list ? json_array_size(items) : 1); k++)
				if (json_array_append(t->objects,
						      list ? json_array_get(items, k) :
						      (json_t *)d)) {
					json_decref(docs);
					return text_errorf(err, errlen,
							   "out of memory");
				}
		}
		json_decref(docs);
	}
	return 0;
}

/* The checks of one result of a test file. */
static void run_result(struct test *t, const json_t *res)
{
	const char *kind = str(res, "kind", NULL), *name;
	struct outcome o;
	struct buf what = BUF_INIT;
	const json_t *n, *obj;
	char err[700];
	size_t i, j;

	if (!kind) {
		buf_addf(&what, "review %s", str(res, "review", ""));
		if (decide_review(t, str(res, "review", ""), &o, err,
				  sizeof(err)))
			fail(t, buf_str(&what), err);
		else
			judge(t, res, buf_str(&what), &o);
		outcome_release(&o);
		buf_release(&what);
		return;
	}
	json_array_foreach(json_object_get(res, "resources"), i, n) {
		name = json_string_value(n);
		buf_truncate(&what, 0);
		obj = NULL;
		json_array_foreach(t->objects, j, obj) {
			if (is_object(t, obj, kind, name))
				break;
			obj = NULL;
		}
		if (!obj) {
			buf_addf(&what, "%s %s", kind, name);
			fail(t, buf_str(&what), "no such object in resources");
			continue;
		}
		buf_addf(&what, "%s %s/%s", kind, object_namespace(t, obj),
			 str(json_object_get(obj, "metadata"), "name", ""));
		if (decide_object(t, obj, &o, err, sizeof(err)))
			fail(t, buf_str(&what), err);
		else
			judge(t, res, buf_str(&what), &o);
		outcome_release(&o);
	}
	buf_release(&what);
}

/* Runs the test file path; adds its counts to *passed and *failed. */
static void run_test(const char *path, size_t *passed, size_t *failed)
{
	struct test t;
	const json_t *res, *meta;
	char err[800], *slash;
	json_t *docs;
	size_t i;

	memset(&t, 0, sizeof(t));
	t.path = path;
	t.name = path;
	t.dir = strdup(path);
	if (!t.dir) {
		fail(&t, path, "out of memory");
		goto out;
	}
	slash = strrchr(t.dir, '/');
	if (slash)
		*slash = '\0';
	else
		t.dir[0] = '\0';
	docs = load_docs_at(path, err, sizeof(err));
	if (docs && json_array_size(docs) != 1) {
		snprintf(err, sizeof(err), "expected one document, got %zu",
			 json_array_size(docs));
		json_decref(docs);
		docs = NULL;
	}
	if (!docs) {
		fail(&t, path, err);
		goto out;
	}
	t.doc = json_incref(json_array_get(docs, 0));
	json_decref(docs);
	if (check_test(t.doc, err, sizeof(err))) {
		fail(&t, path, err);
		goto out;
	}
	meta = json_object_get(t.doc, "metadata");
	t.name = str(meta, "name", str(t.doc, "name", path));
	t.opt.namespace_ = str(t.doc, "namespace", NULL);
	t.ropt.username = str(t.doc, "user", NULL);
	t.ropt.groups = json_object_get(t.doc, "groups");
	if (test_config(&t, err, sizeof(err)) ||
	    test_objects(&t, err, sizeof(err))) {
		fail(&t, path, err);
		goto out;
	}
	json_array_foreach(json_object_get(t.doc, "results"), i, res)
		run_result(&t, res);
out:
	*passed += t.passed;
	*failed += t.failed;
	if (t.have_cfg)
		config_release(&t.cfg);
	json_decref(t.objects);
	json_decref(t.doc);
	free(t.dir);
}

/* --- finding the test files --------------------------------------------- */

/* qsort() order of two names: byte order. */
static int compare_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * Appends to files (an array of strings) the test files under dir, in
 * name order, depth levels down at most.  Returns 0, or -1 with the
 * reason in err.
 */
static int find_tests(const char *dir, int depth, json_t *files, char *err,
		      size_t errlen)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	struct stat st;
	char **names = NULL, **more, *path;
	size_t n = 0, cap = 0, i;
	int rc = 0;

	if (!d)
		return text_errorf(err, errlen, "cannot read \"%s\"", dir);
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			more = realloc(names, cap * sizeof(*names));
			if (!more) {
				rc = text_errorf(err, errlen, "out of memory");
				break;
			}
			names = more;
		}
		names[n] = strdup(e->d_name);
		if (!names[n]) {
			rc = text_errorf(err, errlen, "out of memory");
			break;
		}
		n++;
	}
	closedir(d);
	if (n)
		qsort(names, n, sizeof(*names), compare_names);
	for (i = 0; !rc && i < n; i++) {
		path = join(dir, names[i]);
		if (!path) {
			rc = text_errorf(err, errlen, "out of memory");
			break;
		}
		if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
			if (depth < DEPTH_MAX)
				rc = find_tests(path, depth + 1, files, err,
						errlen);
		} else if (!strcmp(names[i], CMD_TEST_FILE) &&
			   json_array_append_new(files, json_string(path))) {
			rc = text_errorf(err, errlen, "out of memory");
		}
		free(path);
	}
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return rc;
}

int cmd_test_run(const char *path)
{
	json_t *files = json_array(), *f;
	size_t passed = 0, failed = 0, i;
	struct stat st;
	char err[600];

	if (!files) {
		fprintf(stderr, PROG ": out of memory\n");
		return 2;
	}
	if (stat(path, &st)) {
		fprintf(stderr, PROG ": test: cannot read \"%s\"\n", path);
		json_decref(files);
		return 2;
	}
	if (!S_ISDIR(st.st_mode)) {
		if (json_array_append_new(files, json_string(path)))
			json_array_clear(files);
	} else if (find_tests(path, 0, files, err, sizeof(err))) {
		fprintf(stderr, PROG ": test: %s\n", err);
		json_decref(files);
		return 2;
	}
	if (!json_array_size(files)) {
		fprintf(stderr, PROG ": test: no " CMD_TEST_FILE " under \"%s\"\n",
			path);
		json_decref(files);
		return 2;
	}
	json_array_foreach(files, i, f)
		run_test(json_string_value(f), &passed, &failed);
	printf("%zu passed, %zu failed\n", passed, failed);
	json_decref(files);
	if (fflush(stdout))
		return 2;
	return failed ? 1 : 0;
}
