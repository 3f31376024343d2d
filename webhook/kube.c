/*
 * kube.c - the Kubernetes API client of kube.h.  What comes back is
 * hostile: the body is capped, and the message quoted from it is masked
 * and cut.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <gnutls/gnutls.h>

#include "curlbody.h"
#include "curlload.h"
#include "file.h"
#include "kube.h"
#include "text.h"

/* An object of the API server larger than this is not one of ours. */
#define BODY_MAX ((size_t)3 << 20)
#define TOKEN_MAX ((size_t)64 << 10)

/* https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT, malloc'd. */
static char *in_cluster_server(char *err, size_t errlen)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST");
	const char *port = getenv("KUBERNETES_SERVICE_PORT");
	bool v6 = host && strchr(host, ':');
	size_t n;
	char *s;

	if (!host || !host[0] || !port || !port[0]) {
		snprintf(err, errlen,
			 "KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are "
			 "not set: not in a pod (give --kube-server)");
		return NULL;
	}
	n = strlen(host) + strlen(port) + 16;
	s = malloc(n);
	if (s)
		snprintf(s, n, "https://%s%s%s:%s", v6 ? "[" : "", host,
			 v6 ? "]" : "", port);
	else
		snprintf(err, errlen, "out of memory");
	return s;
}

int kube_init(struct kube *k, const struct kube_options *o, char *err,
	      size_t errlen)
{
	const char *token_file = o->token_file ? o->token_file :
				 KUBE_SA_DIR "/token";
	char *token = NULL;
	size_t len, n;

	memset(k, 0, sizeof(*k));
	k->timeout = o->timeout ? o->timeout : 30;
	if (o->server) {
		if (strncmp(o->server, "https://", 8) || !o->server[8]) {
			snprintf(err, errlen,
				 "--kube-server: \"%.200s\": expected https://HOST:PORT",
				 o->server);
			return -1;
		}
		k->server = strdup(o->server);
	} else if (!(k->server = in_cluster_server(err, errlen))) {
		return -1;
	}
	k->ca_file = strdup(o->ca_file ? o->ca_file : KUBE_SA_DIR "/ca.crt");
	if (!k->server || !k->ca_file) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	n = strlen(k->server);
	while (n > 8 && k->server[n - 1] == '/')
		k->server[--n] = '\0';
	if (file_read(token_file, TOKEN_MAX, &token, &len, err, errlen))
		return -1;
	while (len && (token[len - 1] == '\n' || token[len - 1] == '\r' ||
		       token[len - 1] == ' '))
		token[--len] = '\0';
	if (!len || strcspn(token, "\r\n") != len) {
		snprintf(err, errlen, "%s: not a bearer token", token_file);
		free(token);
		return -1;
	}
	n = len + 32;
	k->auth = malloc(n);
	if (k->auth)
		snprintf(k->auth, n, "Authorization: Bearer %s", token);
	gnutls_memset(token, 0, len);
	free(token);
	if (curl_load(err, errlen))
		return -1;
	if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
		snprintf(err, errlen, "libcurl did not start");
		return -1;
	}
	k->curl_global = true;
	k->curl = curl_easy_init();
	if (!k->auth || !k->curl) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	return 0;
}

void kube_release(struct kube *k)
{
	if (k->curl)
		curl_easy_cleanup(k->curl);
	if (k->curl_global)
		curl_global_cleanup();
	if (k->auth)
		gnutls_memset(k->auth, 0, strlen(k->auth));
	free(k->auth);
	free(k->server);
	free(k->ca_file);
	memset(k, 0, sizeof(*k));
}

/* The message of a Status body, masked and cut, into a->message. */
static void status_message(struct kube_answer *a, const struct curlbody *b)
{
	const char *m = json_string_value(json_object_get(a->body, "message"));

	if (m)
		text_mask_cutn(a->message, sizeof(a->message), m, strlen(m),
			       240);
	else if (a->status >= 400 && b->len)
		text_mask_cutn(a->message, sizeof(a->message), b->data, b->len,
			       120);
}

int kube_request(struct kube *k, const char *method, const char *path,
		 const json_t *body, const char *content_type,
		 struct kube_answer *a, char *err, size_t errlen)
{
	/* A Secret's body holds its key: no copy is left behind. */
	struct curlbody b = CURLBODY_INIT_WIPE(BODY_MAX);
	struct curl_slist *headers = NULL;
	char ct[128], cerr[CURL_ERROR_SIZE] = "", *url = NULL, *sent = NULL;
	CURL *h = k->curl;
	CURLcode c;
	size_t n;
	int rc = -1;

	memset(a, 0, sizeof(*a));
	n = strlen(k->server) + strlen(path) + 1;
	url = malloc(n);
	if (body)
		sent = json_dumps(body, JSON_COMPACT);
	snprintf(ct, sizeof(ct), "Content-Type: %s",
		 content_type ? content_type : "application/json");
	headers = curl_slist_append(NULL, k->auth);
	if (headers)
		headers = curl_slist_append(headers, "Accept: application/json");
	if (headers && body)
		headers = curl_slist_append(headers, ct);
	if (!url || (body && !sent) || !headers) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	snprintf(url, n, "%s%s", k->server, path);
	curl_easy_reset(h);
	if (curl_easy_setopt(h, CURLOPT_URL, url) ||
	    curlbody_https(h, k->ca_file, (long)k->timeout) ||
	    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method) ||
	    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers) ||
	    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, curlbody_take) ||
	    curl_easy_setopt(h, CURLOPT_WRITEDATA, &b) ||
	    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, cerr) ||
	    (sent && curl_easy_setopt(h, CURLOPT_POSTFIELDS, sent)) ||
	    (!strcmp(method, "GET") && curl_easy_setopt(h, CURLOPT_HTTPGET, 1L))) {
		snprintf(err, errlen, "libcurl refused an option");
		goto out;
	}
	c = curl_easy_perform(h);
	if (c == CURLE_WRITE_ERROR && b.too_long) {
		snprintf(err, errlen, "%s %s: the answer is over %zu bytes",
			 method, path, BODY_MAX);
		goto out;
	}
	if (c != CURLE_OK) {
		snprintf(err, errlen, "%s %s%s: %s", method, k->server, path,
			 cerr[0] ? cerr : curl_easy_strerror(c));
		goto out;
	}
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &a->status);
	a->body = b.len ? json_loadb(b.data, b.len, JSON_REJECT_DUPLICATES,
				     NULL) :
			  NULL;
	if (a->body && !json_is_object(a->body)) {
		json_decref(a->body);
		a->body = NULL;
	}
	status_message(a, &b);
	rc = 0;
out:
	curl_slist_free_all(headers);
	if (sent)
		gnutls_memset(sent, 0, strlen(sent)); /* may hold a private key */
	free(sent);
	free(url);
	curlbody_release(&b);
	return rc;
}
