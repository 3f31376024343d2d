/*
 * httpd.h - the HTTP side of `serve`, on libmicrohttpd.
 *
 * Two listeners:
 * - HTTPS (the versions and suites of a GnuTLS priority string, tlsconf.h):
 *   POST /mutate and POST /webhook go to the handler; GET /healthz and GET
 *   /readyz answer probes.  The certificate
 *   comes from a struct certs for each handshake, so a rotated pair serves
 *   new connections at once.  With a client CA, every request except the
 *   probes needs a client certificate that verifies against it (403).
 * - plain HTTP, optional: GET /metrics, /healthz and /readyz.
 *
 * Framing is strict on both (RFC 9112, as Go's server): malformed header
 * fields, Content-Lengths that differ, Transfer-Encoding with
 * Content-Length and HTTP/1.1 without Host get 400, a Transfer-Encoding
 * other than chunked 501, each once, and the connection closes; an
 * admission request whose Content-Type is not application/json gets 415.
 *
 * A body is taken whole or not at all.  Up to body_max it is decided by
 * the handler, which sees it once, borrowed, straight from libmicrohttpd's
 * buffer when it arrived in one piece.  Otherwise it is copied into a
 * buffer that grows as its bytes come, within the memory kept for bodies
 * (body_memory, shared by all connections, three quarters of it at most
 * per client address; a connection whose body is slow may be closed for
 * its memory, never one whose body is whole: conns_take()).  A body over
 * body_max, or one
 * that finds no room, is read and dropped but for its first bytes, which
 * go to the unread hook at its end: it answers (an AdmissionReview
 * denial), or the server answers 413 or 503.
 *
 * Connections: a worker thread per CPU (at most 8) with epoll.  Each
 * listener keeps a registry of its connections (conns.h) with absolute
 * deadlines that no byte moves: a new connection has 10 s for its TLS
 * handshake and first request's headers, a keep-alive connection 10 s
 * after an answer for the next request's headers, and a request 30 s from
 * its start (the accept, or the end of the previous answer) to the end of
 * its answer.  One address may hold a quarter of the slots; when every
 * slot is taken, the connection that has gone longest without progress
 * (the slowest or the longest idle) is closed for the new one.  A thread
 * checks the deadlines ten times a second, and logs what was closed at
 * most once every 10 s per listener.
 *
 * The server knows nothing of Kubernetes.
 */
#ifndef HTTPD_H
#define HTTPD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "conns.h"

struct certs;
struct httpd;

/* The answer to one body. */
struct httpd_reply {
	unsigned status;
	const char *content_type; /* static */
	char *body;               /* malloc'd; the server takes it */
	size_t len;
};

/*
 * Answers the body[0..len) (borrowed for the call) of one admission
 * request whose headers arrived at started_ns (httpd_now_ns()).  Fills
 * *reply; a NULL body becomes a 500.  Called from the worker threads, on
 * several at once.
 */
typedef void httpd_handle_fn(void *arg, const char *body, size_t len,
			     uint64_t started_ns, struct httpd_reply *reply);

/* Why a body was not read into memory. */
enum httpd_unread {
	HTTPD_UNREAD_TOO_LARGE = 1, /* over body_max */
	HTTPD_UNREAD_NO_MEMORY,     /* no room in body_memory, or malloc */
};

/* The most bytes of an unread body kept for the unread hook. */
#define HTTPD_PREFIX_MAX 1024

/*
 * Answers an admission request whose body was not kept (why): prefix[0..
 * len) are its first bytes (at most HTTPD_PREFIX_MAX, fewer when it is
 * shorter or memory ran out), size is its length.  Fills *reply, or
 * leaves reply->body NULL for the server's own answer: 413 (too large) or
 * 503 (no memory).  Called from the worker threads, on several at once.
 */
typedef void httpd_unread_fn(void *arg, enum httpd_unread why,
			     const char *prefix, size_t len, uint64_t size,
			     uint64_t started_ns, struct httpd_reply *reply);

/*
 * Told of an admission request refused before the handler: 400 or 501
 * (framing), 403 (client certificate), 415 (Content-Type), 413 (body too
 * large) or 503 (no memory for it).  reason is one line.
 */
typedef void httpd_refused_fn(void *arg, unsigned status, const char *reason,
			      uint64_t started_ns);

/* Appends the /metrics page to out; returns 0, or -1 out of memory. */
typedef int httpd_metrics_fn(void *arg, struct httpd *s, struct buf *out);

struct httpd_config {
	const char *listen;         /* HOST:PORT for HTTPS */
	const char *metrics_listen; /* HOST:PORT for HTTP; NULL or "": none */
	struct certs *certs;        /* the serving pair; outlives the server */
	/* PEM of the CAs that client certificates must chain to (borrowed,
	 * outlives the server); NULL: no client certificates. */
	const char *client_ca;
	/* GnuTLS priority string of the HTTPS listener (borrowed). */
	const char *tls_priorities;
	size_t body_max;            /* larger bodies go to unread */
	/* Bytes of bodies held at once, by every connection; at least
	 * body_max (raised to it). */
	size_t body_memory;
	unsigned threads;           /* 0: one per CPU, at most 8 */
	httpd_handle_fn *handle;    /* POST /mutate and /webhook */
	httpd_handle_fn *validate;  /* POST /validate; NULL: 404 */
	httpd_unread_fn *unread;    /* may be NULL: 413 or 503 */
	httpd_refused_fn *refused;  /* may be NULL */
	httpd_metrics_fn *metrics;
	void *arg;                  /* first argument of the hooks */
};

/* Nanoseconds on the monotonic clock. */
uint64_t httpd_now_ns(void);

enum httpd_status {
	HTTPD_OK,
	HTTPD_NOMEM,        /* out of memory */
	HTTPD_BAD_ADDRESS,  /* an address does not parse or does not resolve */
	HTTPD_BIND_FAILED,  /* an address cannot be bound (in use, ...) */
	HTTPD_START_FAILED, /* libmicrohttpd did not start (TLS setup, ...) */
};

/* The address a failure is about. */
enum httpd_listener {
	HTTPD_LISTENER_NONE,
	HTTPD_LISTENER_TLS,     /* httpd_config.listen */
	HTTPD_LISTENER_METRICS, /* httpd_config.metrics_listen */
};

/* Why httpd_start() failed, filled only then. */
struct httpd_error {
	enum httpd_status status;
	enum httpd_listener listener;
	char text[512]; /* one line; quotes the address, not the setting */
};

/*
 * Binds both listeners and starts serving.  Returns HTTPD_OK with *out
 * set, or the failure, also in *err.
 */
enum httpd_status httpd_start(const struct httpd_config *cfg,
			      struct httpd **out, struct httpd_error *err)
	__attribute__((warn_unused_result));

/*
 * Starts draining: /readyz answers 503, the HTTPS listener stops
 * accepting (its socket is closed), answers carry "Connection: close",
 * idle HTTPS connections are closed (now, and each as it becomes idle).
 * Requests in progress go on, but one without a byte for 5 s is closed.
 */
void httpd_drain(struct httpd *s);

/*
 * /readyz answers 503 from now on, while everything else is served as
 * before: the time for the endpoints to drop this replica before
 * httpd_drain() stops accepting.
 */
void httpd_unready(struct httpd *s);

/* Admission requests between their headers and their completion. */
long httpd_in_flight(struct httpd *s);

/* The connections of one listener (HTTPD_LISTENER_TLS or _METRICS; all
 * zero for a listener that is not there). */
void httpd_conn_stats(struct httpd *s, enum httpd_listener listener,
		      struct conns_stats *out);

/* "https" or "metrics": the listener as the metric and the log name it. */
const char *httpd_listener_name(enum httpd_listener listener);

/* Closes every connection, stops both listeners and frees s (NULL ok). */
void httpd_stop(struct httpd *s);

#endif /* HTTPD_H */
