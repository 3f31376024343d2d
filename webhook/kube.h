/*
 * kube.h - a small Kubernetes API client on libcurl, for `certs ensure`
 * and `certs cleanup`: the pod's service account (or files given instead),
 * one JSON request at a time, and errors that say what the API server
 * said.
 *
 * In a pod: the server is https://$KUBERNETES_SERVICE_HOST:
 * $KUBERNETES_SERVICE_PORT, verified against the service account's
 * ca.crt only, and each request carries its token.  The token is read
 * once at kube_init(): a command is done in seconds, well within the
 * lifetime of a projected token.
 */
#ifndef KUBE_H
#define KUBE_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#define KUBE_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"
#define KUBE_TIMEOUT_MAX 300 /* seconds */

/* Borrowed strings; NULL: the in-cluster default. */
struct kube_options {
	const char *server;     /* --kube-server https://HOST:PORT */
	const char *ca_file;    /* --kube-ca */
	const char *token_file; /* --kube-token-file */
	unsigned timeout;       /* seconds per request; 0: 30 */
};

struct kube {
	char *server; /* malloc'd, without a final "/" */
	char *ca_file; /* malloc'd */
	char *auth;    /* malloc'd: "Authorization: Bearer ..." */
	unsigned timeout;
	void *curl;    /* CURL *, kept for its connection */
	bool curl_global; /* curl_global_init() done: kube_release() undoes it */
};

/* An answer of the API server. */
struct kube_answer {
	long status;   /* HTTP status */
	json_t *body;  /* the JSON body, or NULL when it was not JSON */
	char message[300]; /* the Status message (masked, cut), or "" */
};

/*
 * Finds the server, CA and token (flags first, then the environment and
 * the service account's files).  Returns 0, or -1 with a message naming
 * the file or variable in err[0..errlen).  k is released by kube_release()
 * in both cases.
 */
int kube_init(struct kube *k, const struct kube_options *o, char *err,
	      size_t errlen) __attribute__((warn_unused_result));

void kube_release(struct kube *k);

/*
 * Sends method path (from the server's root, "/api/v1/...") with body
 * (NULL: none; else sent as content_type) and fills *a (the caller
 * releases a->body with json_decref).  Returns 0 when an HTTP answer came
 * back, whatever its status, or -1 with the transport error in
 * err[0..errlen).
 */
int kube_request(struct kube *k, const char *method, const char *path,
		 const json_t *body, const char *content_type,
		 struct kube_answer *a, char *err, size_t errlen)
	__attribute__((warn_unused_result));

#endif /* KUBE_H */
