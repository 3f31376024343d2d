/*
 * cmd_check.c - the check command (see cmd_check.h): libcurl (GnuTLS) for
 * the HTTPS request, jansson for the review, patch_apply() for the answer's
 * operations.  What comes back from the server is hostile: the body is
 * capped, and any text of it that goes into the message is masked and cut.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <jansson.h>

#include "cmd_check.h"
#include "curlbody.h"
#include "curlload.h"
#include "patch.h"
#include "review.h"
#include "text.h"

#define PROG "vgpu-webhook check"

/* An answer longer than the API server takes as a request body (3 MiB)
 * is not a webhook's. */
#define ANSWER_MAX ((size_t)3 << 20)

void cmd_check_options_init(struct cmd_check_options *o)
{
	memset(o, 0, sizeof(*o));
	o->resource = "nvidia.com/gpu";
	o->timeout = 10;
}

int cmd_check_options_check(const struct cmd_check_options *o, char *err,
			    size_t errlen)
{
	if (!o->url || !o->url[0])
		snprintf(err, errlen, "--url is required");
	else if (strncmp(o->url, "https://", 8) || !o->url[8])
		snprintf(err, errlen, "--url: \"%.200s\": expected https://HOST:PORT/PATH",
			 o->url);
	else if (!o->ca_file || !o->ca_file[0])
		snprintf(err, errlen, "--ca-file is required");
	else if (!o->cert_file != !o->key_file)
		snprintf(err, errlen,
			 "--cert-file and --key-file go together");
	else if (!o->resource[0] || strchr(o->resource, '"') ||
		 strlen(o->resource) > 253)
		snprintf(err, errlen, "--resource: \"%.200s\": expected a resource name",
			 o->resource);
	else
		return 0;
	return -1;
}

/* A random version 4 UUID into out[37]. */
static void make_uid(char out[37])
{
	unsigned char r[16];
	size_t i, n = 0;

	if (gnutls_rnd(GNUTLS_RND_NONCE, r, sizeof(r)) < 0)
		memset(r, 0x5a, sizeof(r));
	r[6] = (unsigned char)((r[6] & 0x0f) | 0x40);
	r[8] = (unsigned char)((r[8] & 0x3f) | 0x80);
	for (i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			out[n++] = '-';
		n += (size_t)snprintf(out + n, 3, "%02x", r[i]);
	}
	out[n] = '\0';
}

/*
 * The pod of the review, as the API server sends it after its defaulting,
 * but with no schedulerName: one container asking for 1 of resource.
 * Returns a new reference, or NULL out of memory.
 */
static json_t *make_pod(const char *resource)
{
	return json_pack(
		"{s:s, s:s, s:{s:s, s:s, s:{s:s}}, s:{s:[{s:s, s:s, s:{s:{s:s}, s:{s:s}}}],"
		" s:s, s:s, s:i}}",
		"kind", "Pod", "apiVersion", "v1",
		"metadata", "name", "vgpu-webhook-check", "namespace", "default",
		"labels", "app.kubernetes.io/name", "vgpu-webhook-check",
		"spec", "containers", "name", "check", "image", "busybox",
		"resources", "limits", resource, "1", "requests", resource, "1",
		"restartPolicy", "Never", "dnsPolicy", "ClusterFirst",
		"terminationGracePeriodSeconds", 30);
}

static json_t *make_review(const char *uid, json_t *pod)
{
	return json_pack(
		"{s:s, s:s, s:{s:s, s:{s:s, s:s, s:s}, s:{s:s, s:s, s:s},"
		" s:{s:s, s:s, s:s}, s:{s:s, s:s, s:s}, s:s, s:s, s:s,"
		" s:{s:s, s:[s]}, s:O, s:n, s:b, s:{s:s, s:s}}}",
		"kind", "AdmissionReview", "apiVersion", "admission.k8s.io/v1",
		"request", "uid", uid,
		"kind", "group", "", "version", "v1", "kind", "Pod",
		"resource", "group", "", "version", "v1", "resource", "pods",
		"requestKind", "group", "", "version", "v1", "kind", "Pod",
		"requestResource", "group", "", "version", "v1", "resource",
		"pods",
		"name", "vgpu-webhook-check", "namespace", "default",
		"operation", "CREATE",
		"userInfo", "username", "vgpu-webhook-check", "groups",
		"system:authenticated",
		"object", pod, "oldObject", "dryRun", 1,
		"options", "kind", "CreateOptions", "apiVersion", "meta.k8s.io/v1");
}

/* Masks and cuts text from the server for the one line of the message. */
static const char *shown(const char *s, char *buf, size_t size)
{
	if (!s)
		return "(none)";
	text_mask_cutn(buf, size, s, strlen(s), 120);
	return buf;
}

/*
 * Checks the AdmissionReview answer to the review of pod with uid: on
 * success writes what came back into ok, else the reason into why.
 * pod is changed (the patch is applied to it).  Returns 0 or -1.
 */
static int check_answer(const struct curlbody *a, const char *uid, json_t *pod,
			char *ok, size_t oklen, char *why, size_t whylen)
{
	json_t *doc, *resp, *ops = NULL, *op;
	const char *got_uid, *ptype, *b64, *sched;
	gnutls_datum_t in, raw = { NULL, 0 };
	struct patch p;
	char text[160], err[300];
	size_t i;
	int rc = -1;

	doc = json_loadb(a->data ? a->data : "", a->len, JSON_REJECT_DUPLICATES,
			 NULL);
	resp = json_object_get(doc, "response");
	if (!json_is_object(resp)) {
		snprintf(why, whylen, "the answer is not an AdmissionReview response");
		goto out;
	}
	got_uid = json_string_value(json_object_get(resp, "uid"));
	if (!got_uid || strcmp(got_uid, uid)) {
		snprintf(why, whylen, "uid not echoed: sent %s, got %s", uid,
			 shown(got_uid, text, sizeof(text)));
		goto out;
	}
	if (!json_is_true(json_object_get(resp, "allowed"))) {
		snprintf(why, whylen, "not allowed: %s",
			 shown(json_string_value(json_object_get(
				       json_object_get(resp, "status"),
				       "message")),
			       text, sizeof(text)));
		goto out;
	}
	ptype = json_string_value(json_object_get(resp, "patchType"));
	b64 = json_string_value(json_object_get(resp, "patch"));
	if (!b64) {
		snprintf(why, whylen, "allowed without a patch: the pod would not be defaulted");
		goto out;
	}
	if (!ptype || strcmp(ptype, "JSONPatch")) {
		snprintf(why, whylen, "patchType %s, expected JSONPatch",
			 shown(ptype, text, sizeof(text)));
		goto out;
	}
	in.data = (unsigned char *)(uintptr_t)b64;
	in.size = (unsigned)strlen(b64);
	if (strlen(b64) > ANSWER_MAX || gnutls_base64_decode2(&in, &raw) < 0) {
		snprintf(why, whylen, "the patch is not base64");
		goto out;
	}
	ops = json_loadb((const char *)raw.data, raw.size,
			 JSON_REJECT_DUPLICATES, NULL);
	json_array_foreach(ops, i, op) {
		if (!json_is_string(json_object_get(op, "op")) ||
		    !json_is_string(json_object_get(op, "path")))
			break;
	}
	if (!json_is_array(ops) || i < json_array_size(ops)) {
		snprintf(why, whylen, "the patch is not a JSON Patch");
		goto out;
	}
	p.ops = ops;
	if (patch_apply(pod, &p, err, sizeof(err))) {
		snprintf(why, whylen, "the patch does not apply to the pod sent: %s",
			 shown(err, text, sizeof(text)));
		goto out;
	}
	sched = json_string_value(json_object_get(json_object_get(pod, "spec"),
						  "schedulerName"));
	if (!sched || !sched[0]) {
		snprintf(why, whylen, "the patch does not set spec.schedulerName");
		goto out;
	}
	snprintf(ok, oklen, "allowed, %zu operations, schedulerName %s",
		 json_array_size(ops), shown(sched, text, sizeof(text)));
	rc = 0;
out:
	gnutls_free(raw.data);
	json_decref(ops);
	json_decref(doc);
	return rc;
}

/*
 * Sets up h for the request: TLS verified against ca_file only, the
 * server name, the client certificate, the timeout.  connect_to and url
 * are lists and a handle it keeps (freed by the caller after the request).
 * Returns 0, or -1 with the reason in why.
 */
static int setup(CURL *h, const struct cmd_check_options *o, CURLU *url,
		 struct curl_slist **connect_to, char *why, size_t whylen)
{
	char *host = NULL, *port = NULL, entry[600];
	int rc = -1;

	if (curl_url_set(url, CURLUPART_URL, o->url, 0) ||
	    curl_url_get(url, CURLUPART_HOST, &host, 0) ||
	    curl_url_get(url, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT)) {
		snprintf(why, whylen, "--url: \"%.200s\": not a URL", o->url);
		goto out;
	}
	if (o->server_name) {
		/* Verify and send SNI for the name, connect to the URL's host. */
		snprintf(entry, sizeof(entry), "::%s:%s", host, port);
		*connect_to = curl_slist_append(NULL, entry);
		if (!*connect_to ||
		    curl_url_set(url, CURLUPART_HOST, o->server_name, 0)) {
			snprintf(why, whylen, "--server-name: \"%.200s\": not a host name",
				 o->server_name);
			goto out;
		}
		curl_easy_setopt(h, CURLOPT_CONNECT_TO, *connect_to);
	}
	if (curl_easy_setopt(h, CURLOPT_CURLU, url) ||
	    curlbody_https(h, o->ca_file, (long)o->timeout)) {
		snprintf(why, whylen, "libcurl refused an option");
		goto out;
	}
	if (o->cert_file &&
	    (curl_easy_setopt(h, CURLOPT_SSLCERT, o->cert_file) ||
	     curl_easy_setopt(h, CURLOPT_SSLKEY, o->key_file))) {
		snprintf(why, whylen, "libcurl refused the client certificate");
		goto out;
	}
	rc = 0;
out:
	curl_free(host);
	curl_free(port);
	return rc;
}

/* Whether a libcurl error is one of TLS: certificates, handshake. */
static bool tls_error(CURLcode c)
{
	return c == CURLE_SSL_CONNECT_ERROR || c == CURLE_PEER_FAILED_VERIFICATION ||
	       c == CURLE_SSL_CERTPROBLEM || c == CURLE_SSL_CIPHER ||
	       c == CURLE_SSL_CACERT_BADFILE || c == CURLE_SSL_ISSUER_ERROR ||
	       c == CURLE_SSL_INVALIDCERTSTATUS || c == CURLE_SSL_CRL_BADFILE ||
	       c == CURLE_SSL_PINNEDPUBKEYNOTMATCH || c == CURLE_SSL_ENGINE_INITFAILED ||
	       c == CURLE_USE_SSL_FAILED || c == CURLE_SSL_SHUTDOWN_FAILED;
}

int cmd_check_run(const struct cmd_check_options *o)
{
	struct curlbody a = CURLBODY_INIT(ANSWER_MAX);
	struct curl_slist *headers = NULL, *connect_to = NULL;
	char uid[37], why[600] = "", ok[300] = "", cerr[CURL_ERROR_SIZE] = "";
	char *body = NULL;
	json_t *pod = NULL, *review = NULL;
	CURLU *url = NULL;
	CURL *h = NULL;
	CURLcode c;
	long status = 0;
	int rc = 1;

	if (curl_load(why, sizeof(why)))
		goto out;
	if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
		snprintf(why, sizeof(why), "libcurl did not start");
		goto out;
	}
	make_uid(uid);
	pod = make_pod(o->resource);
	review = pod ? make_review(uid, pod) : NULL;
	body = review ? json_dumps(review, JSON_COMPACT) : NULL;
	h = curl_easy_init();
	url = curl_url();
	headers = curl_slist_append(NULL, "Content-Type: application/json");
	if (!body || !h || !url || !headers) {
		snprintf(why, sizeof(why), "out of memory");
		goto out;
	}
	if (setup(h, o, url, &connect_to, why, sizeof(why)))
		goto out;
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, curlbody_take);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &a);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, cerr);
	c = curl_easy_perform(h);
	if (c == CURLE_WRITE_ERROR && a.too_long) {
		snprintf(why, sizeof(why), "the answer is over %zu bytes",
			 (size_t)ANSWER_MAX);
		goto out;
	}
	if (c != CURLE_OK) {
		snprintf(why, sizeof(why), "%s: %s", tls_error(c) ? "tls" : "request",
			 cerr[0] ? cerr : curl_easy_strerror(c));
		goto out;
	}
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	if (status != 200) {
		snprintf(why, sizeof(why), "http status %ld, expected 200", status);
		goto out;
	}
	if (check_answer(&a, uid, pod, ok, sizeof(ok), why, sizeof(why)))
		goto out;
	rc = 0;
out:
	if (rc)
		fprintf(stderr, PROG ": %s: %s\n", o->url, why);
	else
		printf("ok: %s: pod asking for 1 %s: %s\n", o->url, o->resource,
		       ok);
	curl_slist_free_all(headers);
	curl_slist_free_all(connect_to);
	curl_easy_cleanup(h);
	curl_url_cleanup(url);
	free(body);
	json_decref(review);
	json_decref(pod);
	free(a.data);
	curl_global_cleanup();
	return rc;
}
