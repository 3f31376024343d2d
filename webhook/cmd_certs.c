/*
 * cmd_certs.c - `certs ensure` and `certs cleanup` (see cmd_certs.h):
 * certgen.h makes and judges the pair, kube.h talks to the API server.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gnutls/gnutls.h>
#include <jansson.h>

#include "certgen.h"
#include "cmd_certs.h"
#include "kube.h"
#include "text.h"

#define PROG "vgpu-webhook certs"
#define ADMISSION "/apis/admissionregistration.k8s.io/v1/"
#define CMD_CERTS_TLS_TYPE "kubernetes.io/tls"

static const char *const secret_keys[] = { "ca.crt", "tls.crt", "tls.key" };

void cmd_certs_options_init(struct cmd_certs_options *o)
{
	memset(o, 0, sizeof(*o));
	o->cluster_domain = "cluster.local";
	o->validity = CMD_CERTS_VALIDITY;
	o->renew_before = CMD_CERTS_RENEW_BEFORE;
}

/* Whether s is a DNS-1123 label (dots too when dots): what the names of
 * Kubernetes objects are, and what goes into a path unescaped. */
static bool dns_name(const char *s, bool dots, size_t max)
{
	size_t i, n = strlen(s);

	if (!n || n > max || s[0] == '-' || s[0] == '.' || s[n - 1] == '-' ||
	    s[n - 1] == '.')
		return false;
	for (i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		      c == '-' || (dots && c == '.')))
			return false;
	}
	return true;
}

int cmd_certs_options_check(const struct cmd_certs_options *o, int ensure,
			    char *err, size_t errlen)
{
	const struct {
		const char *flag, *value;
		bool required, dots;
		size_t max;
	} names[] = {
		{ "--namespace", o->namespace_, ensure || o->helm_release, false,
		  63 },
		{ "--secret", o->secret, ensure, true, 253 },
		{ "--service", o->service, ensure, false, 63 },
		{ "--cluster-domain", o->cluster_domain, ensure, true, 253 },
		{ "--webhook", o->mutating, false, true, 253 },
		{ "--validating-webhook", o->validating, false, true, 253 },
		{ "--helm-release", o->helm_release, false, true, 53 },
	};
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!names[i].value) {
			if (names[i].required) {
				snprintf(err, errlen, "%s is required",
					 names[i].flag);
				return -1;
			}
			continue;
		}
		if (!dns_name(names[i].value, names[i].dots, names[i].max)) {
			snprintf(err, errlen, "%s: \"%.80s\" is not a name",
				 names[i].flag, names[i].value);
			return -1;
		}
	}
	if (!ensure && !o->mutating && !o->validating) {
		snprintf(err, errlen,
			 "--webhook or --validating-webhook is required");
		return -1;
	}
	if (ensure && o->renew_before >= o->validity) {
		snprintf(err, errlen,
			 "--renew-before must be shorter than --validity");
		return -1;
	}
	return 0;
}

/* Prints "what "name": status N: message" for an answer of the API
 * server. */
static void api_error(const char *what, const char *name,
		      const struct kube_answer *a)
{
	fprintf(stderr, PROG ": %s \"%s\": http %ld%s%s\n", what, name,
		a->status, a->message[0] ? ": " : "", a->message);
}

/* A base64 JSON string, decoded; NULL when absent or not base64. */
static char *b64_decode(const json_t *v, size_t *len)
{
	const char *s = json_string_value(v);
	gnutls_datum_t in, out = { NULL, 0 };
	char *d;

	*len = 0;
	if (!s || !s[0] || json_string_length(v) > UINT32_MAX)
		return NULL;
	in.data = (unsigned char *)(uintptr_t)s;
	in.size = (unsigned)json_string_length(v);
	if (gnutls_base64_decode2(&in, &out) < 0)
		return NULL;
	d = malloc((size_t)out.size + 1);
	if (d) {
		memcpy(d, out.data, out.size);
		d[out.size] = '\0';
		*len = out.size;
	}
	gnutls_memset(out.data, 0, out.size);
	gnutls_free(out.data);
	return d;
}

/* A new JSON string of the base64 of s, or NULL. */
static json_t *b64_encode(const char *s)
{
	gnutls_datum_t in, out = { NULL, 0 };
	json_t *v;

	in.data = (unsigned char *)(uintptr_t)s;
	in.size = (unsigned)strlen(s);
	if (gnutls_base64_encode2(&in, &out) < 0)
		return NULL;
	v = json_stringn((const char *)out.data, out.size);
	gnutls_memset(out.data, 0, out.size); /* may be a key's */
	gnutls_free(out.data);
	return v;
}

/*
 * The Secret to store: old (the one read, or NULL) with its type and the
 * three keys of data replaced (its other keys kept), or a new one.
 * Returns a new reference, or NULL out of memory.
 */
static json_t *secret_object(const struct cmd_certs_options *o,
			     const json_t *old, const struct certgen_pair *p)
{
	const char *pem[] = { p->ca_crt, p->tls_crt, p->tls_key };
	json_t *s, *data, *meta;
	size_t i;

	if (old) {
		s = json_deep_copy(old);
		json_object_del(s, "stringData");
	} else {
		s = json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}}}", "apiVersion",
			      "v1", "kind", "Secret", "metadata", "name",
			      o->secret, "namespace", o->namespace_, "labels",
			      "app.kubernetes.io/managed-by",
			      "vgpu-webhook-certs");
	}
	meta = json_object_get(s, "metadata");
	data = json_object_get(s, "data");
	if (!json_is_object(data)) {
		data = json_object();
		if (json_object_set_new(s, "data", data))
			data = NULL;
	}
	if (!s || !data || !json_is_object(meta)) {
		json_decref(s);
		return NULL;
	}
	json_object_del(meta, "managedFields");
	for (i = 0; i < 3; i++) {
		if (json_object_set_new(data, secret_keys[i],
					b64_encode(pem[i]))) {
			json_decref(s);
			return NULL;
		}
	}
	if (json_object_set_new(s, "type", json_string(CMD_CERTS_TLS_TYPE))) {
		json_decref(s);
		return NULL;
	}
	return s;
}

/*
 * Why the Secret read cannot be replaced by a PUT: the API server refuses
 * to change its type or an immutable one (422, at every run).  Writes the
 * reason into why[0..whylen) and returns -1, or returns 0.
 */
static int secret_unwritable(const json_t *old, char *why, size_t whylen)
{
	const json_t *type = json_object_get(old, "type");
	char shown[80];

	if (json_is_true(json_object_get(old, "immutable"))) {
		snprintf(why, whylen, "it is immutable");
		return -1;
	}
	if (type && (!json_is_string(type) ||
		     strcmp(json_string_value(type), CMD_CERTS_TLS_TYPE))) {
		const char *t = json_is_string(type) ? json_string_value(type) :
						       "";

		text_mask_cutn(shown, sizeof(shown), t, strlen(t), 47);
		snprintf(why, whylen, "its type is \"%s\", not " CMD_CERTS_TLS_TYPE,
			 shown);
		return -1;
	}
	return 0;
}

/*
 * Makes sure the Secret holds a valid pair for the Service's names; on
 * success *ca_crt is the CA of the pair in force (malloc'd PEM; NULL when
 * create_only kept a Secret without one).  Returns 0 or 1 (after the
 * message).
 */
static int ensure_secret(struct kube *k, const struct cmd_certs_options *o,
			 int64_t now, char **ca_crt)
{
	char path[400], id[400], why[300], err[600];
	char n1[80], n2[160], n3[200], n4[480];
	const char *names[] = { n1, n2, n3, n4 };
	char *pem[3] = { NULL, NULL, NULL };
	size_t len[3] = { 0, 0, 0 }, i;
	struct certgen_pair p = { NULL, NULL, NULL };
	struct kube_answer a, put = { 0, NULL, "" };
	json_t *data, *obj = NULL;
	enum certgen_verdict v = CERTGEN_UNREADABLE;
	int rc = 1;

	snprintf(n1, sizeof(n1), "%s", o->service);
	snprintf(n2, sizeof(n2), "%s.%s", o->service, o->namespace_);
	snprintf(n3, sizeof(n3), "%s.%s.svc", o->service, o->namespace_);
	snprintf(n4, sizeof(n4), "%s.%s.svc.%s", o->service, o->namespace_,
		 o->cluster_domain);
	snprintf(id, sizeof(id), "%s/%s", o->namespace_, o->secret);
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/secrets/%s",
		 o->namespace_, o->secret);
	if (kube_request(k, "GET", path, NULL, NULL, &a, err, sizeof(err))) {
		fprintf(stderr, PROG ": get secret \"%s\": %s\n", id, err);
		return 1;
	}
	if (a.status == 404) {
		snprintf(why, sizeof(why), "absent");
	} else if (a.status != 200 || !a.body) {
		api_error("get secret", id, &a);
		goto out;
	} else {
		data = json_object_get(a.body, "data");
		for (i = 0; i < 3; i++)
			pem[i] = b64_decode(json_object_get(data, secret_keys[i]),
					    &len[i]);
		v = certgen_judge(pem[0], len[0], pem[1], len[1], pem[2], len[2],
				  names, 4, now, o->renew_before, why,
				  sizeof(why));
	}
	if (v == CERTGEN_VALID || (a.status != 404 && o->create_only)) {
		if (v == CERTGEN_VALID)
			printf("secret \"%s\": kept: %s\n", id, why);
		else
			printf("secret \"%s\": kept (--create-only): %s\n", id,
			       why);
		*ca_crt = pem[0];
		pem[0] = NULL;
		rc = 0;
		goto out;
	}
	if (a.status != 404 && secret_unwritable(a.body, err, sizeof(err))) {
		fprintf(stderr,
			PROG ": secret \"%s\": must be replaced (%s) but %s: delete it, or name another with --secret\n",
			id, why, err);
		goto out;
	}
	if (certgen_make(names, 4, now, o->validity, &p, err, sizeof(err))) {
		fprintf(stderr, PROG ": secret \"%s\": %s\n", id, err);
		goto out;
	}
	obj = secret_object(o, a.status == 404 ? NULL : a.body, &p);
	if (!obj) {
		fprintf(stderr, PROG ": secret \"%s\": out of memory\n", id);
		goto out;
	}
	if (a.status == 404)
		snprintf(path, sizeof(path), "/api/v1/namespaces/%s/secrets",
			 o->namespace_);
	/* PUT carries the resourceVersion read: a concurrent writer makes it
	 * fail with 409 rather than be overwritten. */
	if (kube_request(k, a.status == 404 ? "POST" : "PUT", path, obj, NULL,
			 &put, err, sizeof(err))) {
		fprintf(stderr, PROG ": %s secret \"%s\": %s\n",
			a.status == 404 ? "create" : "replace", id, err);
		goto out;
	}
	if (put.status != 200 && put.status != 201) {
		api_error(a.status == 404 ? "create secret" : "replace secret",
			  id, &put);
		goto out;
	}
	printf("secret \"%s\": %s (%s): a new CA and serving certificate for %s\n",
	       id, a.status == 404 ? "created" : "renewed", why, n3);
	*ca_crt = p.ca_crt;
	p.ca_crt = NULL;
	rc = 0;
out:
	for (i = 0; i < 3; i++) {
		if (pem[i])
			gnutls_memset(pem[i], 0, len[i]);
		free(pem[i]);
	}
	certgen_pair_release(&p);
	json_decref(obj);
	json_decref(a.body);
	json_decref(put.body);
	return rc;
}

/*
 * The JSON Patch that sets the caBundle of each webhook of cfg that does
 * not start with ca_crt, each guarded by a test of the webhook's name,
 * after a test of the resourceVersion read; *changed counts them.
 * Returns a new reference, or NULL with the reason (a webhook without a
 * name, out of memory) in err[0..errlen).
 */
static json_t *bundle_patch(const json_t *cfg, const char *ca_crt,
			    int64_t now, size_t *changed, char *err,
			    size_t errlen)
{
	json_t *ops = json_array(), *hooks, *hook;
	const json_t *rv;
	size_t i;

	*changed = 0;
	snprintf(err, errlen, "out of memory");
	rv = json_object_get(json_object_get(cfg, "metadata"),
			     "resourceVersion");
	if (!ops || json_array_append_new(ops, json_pack("{s:s, s:s, s:O}",
							 "op", "test", "path",
							 "/metadata/resourceVersion",
							 "value", rv ? rv : json_null())))
		goto fail;
	hooks = json_object_get(cfg, "webhooks");
	json_array_foreach(hooks, i, hook) {
		json_t *cc = json_object_get(hook, "clientConfig");
		const json_t *name = json_object_get(hook, "name");
		size_t oldlen;
		char *old, *want, p[64];
		json_t *b64;
		int oom;

		if (!json_is_string(name)) {
			snprintf(err, errlen, "webhook %zu has no name", i);
			goto fail;
		}
		old = b64_decode(json_object_get(cc, "caBundle"), &oldlen);
		want = certgen_bundle(ca_crt, old, oldlen, now, &oom);
		free(old);
		if (oom)
			goto fail;
		if (!want)
			continue;
		b64 = b64_encode(want);
		free(want);
		snprintf(p, sizeof(p), "/webhooks/%zu/name", i);
		if (!b64 || json_array_append_new(
				    ops, json_pack("{s:s, s:s, s:O}", "op", "test",
						   "path", p, "value", name))) {
			json_decref(b64);
			goto fail;
		}
		snprintf(p, sizeof(p), "/webhooks/%zu/clientConfig/caBundle", i);
		if (json_array_append_new(ops, json_pack("{s:s, s:s, s:o}", "op",
							 "add", "path", p,
							 "value", b64)))
			goto fail;
		(*changed)++;
	}
	return ops;
fail:
	json_decref(ops);
	return NULL;
}

/* Sets the caBundle of every webhook of one configuration (kind, e.g.
 * "mutatingwebhookconfigurations").  Returns 0 or 1. */
static int ensure_bundle(struct kube *k, const char *kind, const char *what,
			 const char *name, const char *ca_crt, int64_t now)
{
	struct kube_answer a, pa = { 0, NULL, "" };
	char path[400], err[600];
	size_t changed = 0;
	json_t *ops = NULL;
	int rc = 1;

	snprintf(path, sizeof(path), ADMISSION "%s/%s", kind, name);
	if (kube_request(k, "GET", path, NULL, NULL, &a, err, sizeof(err))) {
		fprintf(stderr, PROG ": get %s \"%s\": %s\n", what, name, err);
		return 1;
	}
	if (a.status != 200 || !a.body) {
		char verb[100];

		snprintf(verb, sizeof(verb), "get %s", what);
		api_error(verb, name, &a);
		goto out;
	}
	ops = bundle_patch(a.body, ca_crt, now, &changed, err, sizeof(err));
	if (!ops) {
		fprintf(stderr, PROG ": %s \"%s\": %s\n", what, name, err);
		goto out;
	}
	if (!changed) {
		printf("%s \"%s\": caBundle up to date on %zu webhooks\n", what,
		       name, json_array_size(json_object_get(a.body, "webhooks")));
		rc = 0;
		goto out;
	}
	if (kube_request(k, "PATCH", path, ops, "application/json-patch+json",
			 &pa, err, sizeof(err))) {
		fprintf(stderr, PROG ": patch %s \"%s\": %s\n", what, name, err);
		goto out;
	}
	if (pa.status != 200) {
		char verb[100];

		snprintf(verb, sizeof(verb), "patch %s", what);
		api_error(verb, name, &pa);
		goto out;
	}
	printf("%s \"%s\": caBundle set on %zu of %zu webhooks\n", what, name,
	       changed, json_array_size(json_object_get(a.body, "webhooks")));
	rc = 0;
out:
	json_decref(ops);
	json_decref(a.body);
	json_decref(pa.body);
	return rc;
}

int cmd_certs_ensure(const struct cmd_certs_options *o)
{
	int64_t now = (int64_t)time(NULL);
	char err[600], *ca_crt = NULL;
	struct kube k;
	int rc = 1;

	if (kube_init(&k, &o->kube, err, sizeof(err))) {
		fprintf(stderr, PROG ": %s\n", err);
		goto out;
	}
	if (ensure_secret(&k, o, now, &ca_crt))
		goto out;
	if (!ca_crt && (o->mutating || o->validating)) {
		fprintf(stderr,
			PROG ": secret \"%s/%s\": no ca.crt to set as the caBundle\n",
			o->namespace_, o->secret);
		goto out;
	}
	rc = 0;
	if (o->mutating)
		rc |= ensure_bundle(&k, "mutatingwebhookconfigurations",
				    "mutatingwebhookconfiguration", o->mutating,
				    ca_crt, now);
	if (o->validating)
		rc |= ensure_bundle(&k, "validatingwebhookconfigurations",
				    "validatingwebhookconfiguration",
				    o->validating, ca_crt, now);
out:
	free(ca_crt);
	kube_release(&k);
	return rc;
}

#define HELM_RELEASE_NAME "meta.helm.sh/release-name"
#define HELM_RELEASE_NAMESPACE "meta.helm.sh/release-namespace"

/*
 * Whether the configuration cfg belongs to the Helm release o->helm_release
 * in o->namespace_: Helm writes both annotations on every object it
 * installs, and on none of its hooks; `helm template | kubectl apply`
 * writes neither.  Otherwise writes what it carries into why[0..whylen).
 */
static bool helm_owned(const struct cmd_certs_options *o, const json_t *cfg,
		       char *why, size_t whylen)
{
	const json_t *ann = json_object_get(json_object_get(cfg, "metadata"),
					    "annotations");
	const char *rel = json_string_value(json_object_get(ann, HELM_RELEASE_NAME));
	const char *ns = json_string_value(json_object_get(ann,
							   HELM_RELEASE_NAMESPACE));
	char r[80], n[80];

	if (rel && ns && !strcmp(rel, o->helm_release) &&
	    !strcmp(ns, o->namespace_))
		return true;
	if (!rel || !ns) {
		snprintf(why, whylen, "not installed by Helm (no " HELM_RELEASE_NAME
				      " and " HELM_RELEASE_NAMESPACE " annotations)");
		return false;
	}
	text_mask_cutn(r, sizeof(r), rel, strlen(rel), 53);
	text_mask_cutn(n, sizeof(n), ns, strlen(ns), 63);
	snprintf(why, whylen, "of the Helm release \"%s/%s\"", n, r);
	return false;
}

/*
 * Deletes one configuration; absent is fine.  With o->helm_release, only
 * one of that release, and only the object read (its uid a
 * precondition).  Returns 0 or 1.
 */
static int delete_config(struct kube *k, const struct cmd_certs_options *o,
			 const char *kind, const char *what, const char *name)
{
	struct kube_answer a = { 0, NULL, "" }, g = { 0, NULL, "" };
	char path[400], err[600], why[300], verb[100];
	json_t *opts = NULL;
	const json_t *uid;
	int rc = 1;

	snprintf(path, sizeof(path), ADMISSION "%s/%s", kind, name);
	if (o->helm_release) {
		if (kube_request(k, "GET", path, NULL, NULL, &g, err,
				 sizeof(err))) {
			fprintf(stderr, PROG ": get %s \"%s\": %s\n", what, name,
				err);
			return 1;
		}
		if (g.status == 404) {
			printf("%s \"%s\": already absent\n", what, name);
			rc = 0;
			goto out;
		}
		if (g.status != 200 || !g.body) {
			snprintf(verb, sizeof(verb), "get %s", what);
			api_error(verb, name, &g);
			goto out;
		}
		if (!helm_owned(o, g.body, why, sizeof(why))) {
			printf("%s \"%s\": kept: %s, not of the release \"%s/%s\" being deleted\n",
			       what, name, why, o->namespace_, o->helm_release);
			rc = 0;
			goto out;
		}
		uid = json_object_get(json_object_get(g.body, "metadata"), "uid");
		opts = json_pack("{s:s, s:s, s:{s:O}}", "apiVersion", "v1", "kind",
				 "DeleteOptions", "preconditions", "uid",
				 uid ? uid : json_null());
		if (!opts) {
			fprintf(stderr, PROG ": %s \"%s\": out of memory\n", what,
				name);
			goto out;
		}
	}
	if (kube_request(k, "DELETE", path, opts, NULL, &a, err, sizeof(err))) {
		fprintf(stderr, PROG ": delete %s \"%s\": %s\n", what, name, err);
		goto out;
	}
	if (a.status == 404) {
		printf("%s \"%s\": already absent\n", what, name);
		rc = 0;
		goto out;
	}
	if (a.status != 200 && a.status != 202) {
		snprintf(verb, sizeof(verb), "delete %s", what);
		api_error(verb, name, &a);
		goto out;
	}
	printf("%s \"%s\": deleted\n", what, name);
	rc = 0;
out:
	json_decref(opts);
	json_decref(g.body);
	json_decref(a.body);
	return rc;
}

int cmd_certs_cleanup(const struct cmd_certs_options *o)
{
	char err[600];
	struct kube k;
	int rc = 1;

	if (kube_init(&k, &o->kube, err, sizeof(err))) {
		fprintf(stderr, PROG ": %s\n", err);
		goto out;
	}
	rc = 0;
	if (o->mutating)
		rc |= delete_config(&k, o, "mutatingwebhookconfigurations",
				    "mutatingwebhookconfiguration", o->mutating);
	if (o->validating)
		rc |= delete_config(&k, o, "validatingwebhookconfigurations",
				    "validatingwebhookconfiguration",
				    o->validating);
out:
	kube_release(&k);
	return rc;
}
