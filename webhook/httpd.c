/*
 * httpd.c - libmicrohttpd daemons, routing, body limits, client
 * certificates, timeouts and draining.
 *
 * Request life cycle on the HTTPS daemon (libmicrohttpd calls the access
 * handler several times per request):
 * 1. first call (headers in): route, method and client certificate checks,
 *    Content-Length against the limit; a refusal is queued at once, which
 *    makes libmicrohttpd close the connection after it;
 * 2. calls with data: the body is taken (see take_body());
 * 3. last call (no data): the answer is queued;
 * 4. on_completed(): the request state is reset, whatever happened.
 * The per-request state lives in the per-connection struct conn, made
 * when the connection opens (on_connection()), so a request allocates
 * only its body (when it came in pieces) and its answer.
 *
 * Connection management (conns.h): each listener has a registry.  A
 * connection is registered in the connection-started notification, which
 * libmicrohttpd 0.9.75 gives once the connection is in its lists, and
 * unregistered in the connection-closed notification, which it gives
 * (MHD_cleanup_connections(), and the clean-up path of
 * new_connection_process_()) before it calls close(2) on the socket, in
 * the thread that owns the connection.  So the registry, which shuts down
 * sockets of other threads' connections under its lock, only ever shuts
 * down a descriptor that is still that connection's.  The accept policy
 * callback refuses an address at its cap before anything is set up; the
 * reaper thread applies the deadlines.
 */
#define _GNU_SOURCE /* sched_getaffinity(), CPU_COUNT() */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <microhttpd.h>

#include "addr.h"
#include "certs.h"
#include "log.h"
#include "httpd.h"
#include "text.h"

#define SECOND_NS 1000000000ull
/* Deadlines (conns.h), from the accept or the end of the last answer. */
#define OPEN_NS (10 * SECOND_NS)    /* TLS handshake and first headers */
#define IDLE_NS (10 * SECOND_NS)    /* keep-alive: the next headers */
#define REQUEST_NS (30 * SECOND_NS) /* a request, to the end of its answer */
/* libmicrohttpd's own inactivity timeout: never the first to fire, it
 * only backs the deadlines up. */
#define BACKSTOP_TIMEOUT 60u
#define REAP_NS (SECOND_NS / 10)    /* the reaper's period */
/* While draining, a request without a byte for this long is closed. */
#define DRAIN_STALL_NS (5 * SECOND_NS)
#define LOG_EVERY_NS (10 * SECOND_NS) /* at most one closed-line per 10 s */
#define CONN_LIMIT 2048u    /* HTTPS slots, when file limits allow */
/* libmicrohttpd's memory per connection (headers, read buffer, answer
 * headers), zeroed after each request: half of it is the read buffer, so a
 * typical review (4 KiB) arrives whole and is answered without a copy. */
#define CONN_MEMORY (16u << 10)
#define METRICS_CONN_LIMIT 64u
#define THREADS_MAX 8u
/* Each worker's stack, whatever `ulimit -s` says: the deepest review the
 * decoder builds takes about 540 KB of it (pick.h). */
#define THREAD_STACK ((size_t)2 << 20)
/* Past the body limit, a body is read and dropped (but for its first
 * HTTPD_PREFIX_MAX bytes) up to this many more bytes, so that it can be
 * answered; a Content-Length beyond is refused at once, and a chunked
 * body that goes beyond has its connection closed. */
#define DISCARD_MAX ((size_t)64 << 20)
#define BODY_CHUNK (16u << 10)
/* A connection whose body came slower than BODY_SLOW_BYTES per
 * BODY_SLOW_NS (256 KiB/s) over the last 2 to 4 s may be closed to free
 * the body memory it holds for another (conns.h). */
#define BODY_SLOW_NS (2 * SECOND_NS)
#define BODY_SLOW_BYTES ((size_t)512 << 10)
#define CONTENT_TEXT "text/plain; charset=utf-8"
#define CONTENT_METRICS "text/plain; version=0.0.4; charset=utf-8"

enum route {
	ROUTE_NONE,
	ROUTE_REVIEW,
	ROUTE_HEALTHZ,
	ROUTE_READYZ,
	ROUTE_METRICS,
};

/* One connection of the HTTPS daemon and its request in progress. */
struct conn {
	void *hold;         /* certs_hold() handle */
	int id;             /* in the listener's registry, or -1 */
	signed char peer;   /* client certificate: -1 unchecked, 0 bad, 1 good */
	/* The request in progress; reset by request_end(). */
	enum route route;
	bool counted;       /* counted in in_flight */
	bool answered;      /* reply holds the answer */
	bool validate;      /* POST /validate: cfg.validate answers */
	int drop;           /* 0, or why the body is dropped (httpd_unread) */
	uint64_t started;
	size_t expect;      /* Content-Length, or SIZE_MAX when chunked */
	size_t total;       /* bytes of body seen */
	/* The body (dropping: its first bytes, at most HTTPD_PREFIX_MAX). */
	char *body;
	size_t len;
	size_t cap;
	size_t reserved;    /* of the body memory (conns_take()), for body */
	struct httpd_reply reply;
};

/* A listener's registry, and what its last log line reported. */
struct listener {
	struct httpd *s;
	enum httpd_listener which;
	/* Set before its daemon starts (its threads, and the metrics
	 * daemon's, read it), never changed after. */
	bool on;
	struct conns *conns;
	unsigned long long logged[CONNS_NREASONS];
};

/* Answers shared by every request, made once. */
struct canned {
	struct MHD_Response *ok;
	struct MHD_Response *draining;
	struct MHD_Response *not_found;
	struct MHD_Response *post_only;
	struct MHD_Response *get_only;
	struct MHD_Response *forbidden;
	struct MHD_Response *too_large;
	struct MHD_Response *internal;
	struct MHD_Response *busy;
	struct MHD_Response *bad_request;     /* framing; Connection: close */
	struct MHD_Response *not_implemented; /* Transfer-Encoding; close */
	struct MHD_Response *not_json;
};

struct httpd {
	struct httpd_config cfg;
	struct MHD_Daemon *tls;
	struct MHD_Daemon *plain;
	int tls_fd;            /* the HTTPS listener (libmicrohttpd's) */
	char too_large_body[104];  /* the 413's body, a line */
	char too_large_reason[96]; /* the same without its newline */
	struct canned r;
	atomic_long in_flight;
	atomic_bool draining;
	atomic_bool unready;  /* /readyz 503 before draining */
	struct listener lis[2];    /* TLS, metrics */
	/* The reaper thread; stop is guarded by lock. */
	pthread_t reaper;
	bool reaping;
	bool stop;
	pthread_mutex_t lock;
	pthread_cond_t wake;
};

/* Whether /readyz answers 503: draining, or told to before it. */
static bool not_ready(struct httpd *s)
{
	return atomic_load(&s->unready) || atomic_load(&s->draining);
}

/* A connection whose struct conn could not be allocated: its handle is
 * kept, tagged, in the socket context. */
#define HOLD_TAG ((uintptr_t)1)

uint64_t httpd_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* --- errors and addresses ----------------------------------------------- */

/* Fills *err and returns its status. */
__attribute__((format(printf, 4, 5)))
static enum httpd_status failed(struct httpd_error *err,
				enum httpd_status status,
				enum httpd_listener listener, const char *fmt,
				...)
{
	va_list ap;

	err->status = status;
	err->listener = listener;
	va_start(ap, fmt);
	vsnprintf(err->text, sizeof(err->text), fmt, ap);
	va_end(ap);
	return status;
}

/*
 * Binds the address of listener.  Returns HTTPD_OK with *fd, or the
 * failure in *err.
 */
static enum httpd_status listen_on(enum httpd_listener listener,
				   const char *hostport, int *fd,
				   struct httpd_error *err)
{
	char why[sizeof(err->text)];

	switch (addr_listen(hostport, fd, why, sizeof(why))) {
	case ADDR_OK:
		return HTTPD_OK;
	case ADDR_BAD:
		return failed(err, HTTPD_BAD_ADDRESS, listener, "%s", why);
	default:
		return failed(err, HTTPD_BIND_FAILED, listener, "%s", why);
	}
}

/* --- small helpers ------------------------------------------------------- */

static struct conn *conn_of(struct MHD_Connection *mc)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(mc, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	if (!ci || !ci->socket_context ||
	    ((uintptr_t)ci->socket_context & HOLD_TAG))
		return NULL;
	return ci->socket_context;
}

static enum route route_of(const char *url, bool tls)
{
	if (tls && (!strcmp(url, "/mutate") || !strcmp(url, "/webhook") ||
		    !strcmp(url, "/validate")))
		return ROUTE_REVIEW;
	if (!strcmp(url, "/healthz"))
		return ROUTE_HEALTHZ;
	if (!strcmp(url, "/readyz"))
		return ROUTE_READYZ;
	if (!tls && !strcmp(url, "/metrics"))
		return ROUTE_METRICS;
	return ROUTE_NONE;
}

static bool is_get(const char *method)
{
	return !strcmp(method, MHD_HTTP_METHOD_GET) ||
	       !strcmp(method, MHD_HTTP_METHOD_HEAD);
}

/* The client's address as text, for the log. */
static void remote_of(struct MHD_Connection *mc, char *out, size_t len)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *sa = ci ? ci->client_addr : NULL;

	snprintf(out, len, "?");
	if (!sa)
		return;
	if (sa->sa_family == AF_INET)
		inet_ntop(AF_INET,
			  &((const struct sockaddr_in *)(const void *)sa)->sin_addr,
			  out, (socklen_t)len);
	else if (sa->sa_family == AF_INET6)
		inet_ntop(AF_INET6,
			  &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr,
			  out, (socklen_t)len);
}

/* Logs a refused request at -v 1; the method and the path (the client's)
 * are masked and cut. */
static void log_refusal(struct MHD_Connection *mc, const char *method,
			const char *url, unsigned status, const char *reason)
{
	char path[96], verb[48], remote[64];

	if (log_verbosity < 1)
		return;
	text_mask_cutn(path, sizeof(path), url, strlen(url), 64);
	text_mask_cutn(verb, sizeof(verb), method, strlen(method), 16);
	remote_of(mc, remote, sizeof(remote));
	log_event(LOG_INFO, "request refused",
		   (struct log_field[]){ LOG_STR("remote", remote),
					 LOG_STR("method", verb),
					 LOG_STR("path", path),
					 LOG_NUM("status", status),
					 LOG_STR("reason", reason) },
		   5);
}

/* Queues r as the answer, with status. */
static enum MHD_Result queue(struct MHD_Connection *mc, unsigned status,
			     struct MHD_Response *r)
{
	return MHD_queue_response(mc, status, r);
}

/*
 * Whether the client certificate of mc verifies against the client CA,
 * for a TLS client (extended key usage clientAuth when the certificate
 * has one).  Logs why not at -v 1.
 */
static bool peer_verified(struct MHD_Connection *mc)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(mc, MHD_CONNECTION_INFO_GNUTLS_SESSION);
	gnutls_typed_vdata_st purpose = {
		.type = GNUTLS_DT_KEY_PURPOSE_OID,
		.data = (unsigned char *)GNUTLS_KP_TLS_WWW_CLIENT,
		.size = 0,
	};
	gnutls_datum_t text = { NULL, 0 };
	unsigned status = 0;
	int rc;

	if (!ci || !ci->tls_session)
		return false;
	rc = gnutls_certificate_verify_peers(ci->tls_session, &purpose, 1,
					     &status);
	if (rc == 0 && status == 0)
		return true;
	if (log_verbosity >= 1) {
		char remote[64];

		remote_of(mc, remote, sizeof(remote));
		if (rc == 0)
			gnutls_certificate_verification_status_print(
				status, GNUTLS_CRT_X509, &text, 0);
		log_event(LOG_INFO, "client certificate refused",
			   (struct log_field[]){
				   LOG_STR("remote", remote),
				   LOG_STR("reason", rc ? gnutls_strerror(rc) :
						     text.data ? (const char *)text.data :
						     "not trusted") },
			   2);
		gnutls_free(text.data);
	}
	return false;
}

/* --- request framing ----------------------------------------------------- */

/*
 * libmicrohttpd 0.9.75 in strict mode (MHD_OPTION_STRICT_FOR_CLIENT 1,
 * patched: patches/libmicrohttpd/) answers 400 itself, once, to a
 * Content-Length that is not a number, an HTTP/1.1 request without Host,
 * a NUL byte or obs-fold in the header block.  What it lets through is
 * checked here, on the first call of each request, before anything else,
 * as Go's server checks it (RFC 9112): the refusal closes the connection,
 * since where its body ends is unknown.
 */

/* What one pass over the header fields found. */
struct framing {
	const char *why;    /* the first malformed field, or NULL */
	const char *te;     /* Transfer-Encoding */
	const char *cl;     /* the first Content-Length */
	size_t cl_len;
	const char *ct;     /* Content-Type */
	unsigned n_te, n_ct, n_host;
	bool cl_differ;     /* a second Content-Length differs from the first */
};

/* RFC 9110 token characters: what a field name is made of. */
static bool is_tchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* s[0..n) without the spaces and tabs at its end. */
static size_t trimmed_len(const char *s, size_t n)
{
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	return n;
}

static bool name_is(const char *key, size_t key_size, const char *name)
{
	return key_size == strlen(name) && !strncasecmp(key, name, key_size);
}

/*
 * MHD_KeyValueIteratorN over the header fields: a name must be a token
 * (no space before the colon, no space or control character in it), a
 * value holds no control character but tab (a bare CR, a NUL that
 * libmicrohttpd did not see, DEL); the fields that frame the request are
 * noted.  Stops at the first malformed field.
 */
static enum MHD_Result framing_field(void *cls, enum MHD_ValueKind kind,
				     const char *key, size_t key_size,
				     const char *value, size_t value_size)
{
	struct framing *f = cls;
	size_t i;

	(void)kind;
	for (i = 0; i < key_size; i++)
		if (!is_tchar((unsigned char)key[i]))
			break;
	if (!key_size || i < key_size) {
		f->why = "malformed header field name";
		return MHD_NO;
	}
	for (i = 0; i < value_size; i++) {
		unsigned char c = (unsigned char)value[i];

		if ((c < 0x20 && c != '\t') || c == 0x7f) {
			f->why = "control character in a header field value";
			return MHD_NO;
		}
	}
	/* As libmicrohttpd decodes it: one field, exactly "chunked" in any
	 * case; a trailing space or tab makes another coding to it. */
	if (name_is(key, key_size, MHD_HTTP_HEADER_TRANSFER_ENCODING)) {
		f->te = f->n_te++ ? NULL : value;
		if (f->te && !(value_size == 7 && !strncasecmp(value, "chunked", 7)))
			f->te = NULL;
		return MHD_YES;
	}
	value_size = trimmed_len(value, value_size);
	if (name_is(key, key_size, MHD_HTTP_HEADER_CONTENT_LENGTH)) {
		if (!f->cl) {
			f->cl = value;
			f->cl_len = value_size;
		} else if (value_size != f->cl_len ||
			   memcmp(value, f->cl, value_size)) {
			f->cl_differ = true;
		}
	} else if (name_is(key, key_size, MHD_HTTP_HEADER_CONTENT_TYPE)) {
		f->ct = value;
		f->n_ct++;
	} else if (name_is(key, key_size, MHD_HTTP_HEADER_HOST)) {
		f->n_host++;
	}
	return MHD_YES;
}

/*
 * Checks the header fields of the request on mc.  Returns 0 when they
 * frame one request; otherwise its status, 400 (a malformed field, two
 * Host fields, Content-Lengths that differ, Transfer-Encoding with
 * Content-Length) or 501 (a Transfer-Encoding other than chunked), with
 * *why.  Fills *f.
 */
static unsigned framing_check(struct MHD_Connection *mc, struct framing *f,
			      const char **why)
{
	memset(f, 0, sizeof(*f));
	MHD_get_connection_values_n(mc, MHD_HEADER_KIND, framing_field, f);
	if (f->why) {
		*why = f->why;
		return MHD_HTTP_BAD_REQUEST;
	}
	if (f->n_host > 1) {
		*why = "more than one Host";
		return MHD_HTTP_BAD_REQUEST;
	}
	if (f->cl_differ) {
		*why = "Content-Length fields that differ";
		return MHD_HTTP_BAD_REQUEST;
	}
	if (f->n_te && !f->te) {
		*why = "a Transfer-Encoding other than chunked";
		return MHD_HTTP_NOT_IMPLEMENTED;
	}
	if (f->te && f->cl) {
		*why = "both Transfer-Encoding and Content-Length";
		return MHD_HTTP_BAD_REQUEST;
	}
	return 0;
}

/*
 * Whether the Content-Type of an admission request, f->ct, is JSON: one
 * field whose media type is application/json (any case, parameters such
 * as "; charset=utf-8" allowed), as the API server sends it.
 */
static bool is_json(const struct framing *f)
{
	size_t n;

	if (f->n_ct != 1)
		return false;
	n = trimmed_len(f->ct, strcspn(f->ct, ";"));
	return n == 16 && !strncasecmp(f->ct, "application/json", 16);
}

/* --- body memory --------------------------------------------------------- */

/*
 * The body memory is the ledger of the HTTPS listener's registry
 * (conns_take()): body_memory in all, a share of it per client address,
 * and a connection whose body is slow may be closed for another's.  Takes
 * want bytes of it for c, or need (closing slow holders only for need).
 * Returns what was taken, or 0.
 */
static size_t body_take(struct httpd *s, struct conn *c, size_t want,
			size_t need)
{
	size_t got = conns_take(s->lis[0].conns, c->id, want, need);

	c->reserved += got;
	return got;
}

/* Gives back all the body memory that c holds. */
static void body_give(struct httpd *s, struct conn *c)
{
	if (c->reserved)
		conns_give(s->lis[0].conns, c->id, c->reserved);
	c->reserved = 0;
}

/* --- request state ------------------------------------------------------- */

/* Frees what the request in progress holds and leaves in flight. */
static void request_end(struct httpd *s, struct conn *c)
{
	if (c->counted)
		atomic_fetch_sub_explicit(&s->in_flight, 1,
					  memory_order_relaxed);
	body_give(s, c);
	free(c->body);
	free(c->reply.body);
	c->route = ROUTE_NONE;
	c->counted = c->answered = false;
	c->validate = false;
	c->drop = 0;
	c->expect = c->total = c->len = c->cap = c->reserved = 0;
	c->body = NULL;
	memset(&c->reply, 0, sizeof(c->reply));
}

/*
 * Calls the handler on body[0..len); the body buffer is then freed.  A
 * body that holds memory is settled first, so that it is not closed for
 * memory, nor as stalled by a drain, while it is decided; one that came
 * in one piece holds none and is decided at once (no lock taken).
 */
static void answer(struct httpd *s, struct conn *c, const char *body,
		   size_t len)
{
	if (c->reserved)
		conns_settle(s->lis[0].conns, c->id);
	memset(&c->reply, 0, sizeof(c->reply));
	(c->validate ? s->cfg.validate : s->cfg.handle)(s->cfg.arg, body, len,
							c->started, &c->reply);
	c->answered = true;
	body_give(s, c);
	free(c->body);
	c->body = NULL;
	c->len = c->cap = 0;
}

/*
 * From now on the body is dropped, for why: its first HTTPD_PREFIX_MAX
 * bytes are kept (those already in, then those to come), in a block of
 * that size when one can be had; the body memory is given back.
 */
static void start_drop(struct httpd *s, struct conn *c, int why)
{
	char *p;

	c->drop = why;
	body_give(s, c);
	if (c->len > HTTPD_PREFIX_MAX)
		c->len = HTTPD_PREFIX_MAX;
	p = realloc(c->body, HTTPD_PREFIX_MAX);
	if (p) {
		c->body = p;
		c->cap = HTTPD_PREFIX_MAX;
	} else if (c->cap > HTTPD_PREFIX_MAX) {
		c->cap = HTTPD_PREFIX_MAX;
	}
}

/*
 * The size to grow a body buffer of cap bytes to, for need bytes in all:
 * cap times num / den, at least BODY_CHUNK and need, at most limit (which
 * is at least need).
 */
static size_t grown_size(size_t cap, size_t need, size_t limit, size_t num,
			 size_t den)
{
	size_t want = cap > limit / num * den ? limit : cap / den * num;

	if (want < BODY_CHUNK)
		want = BODY_CHUNK;
	if (want < need)
		want = need;
	return want > limit ? limit : want;
}

/*
 * Makes room for n more bytes of body, taken from the body memory before
 * malloc: the buffer doubles (from BODY_CHUNK), or grows by an eighth when
 * the body memory has no room for the double, up to the Content-Length
 * (or the limit); slow holders are closed only for the eighth.  So a
 * connection holds about what it has received, at most twice that.
 * Returns 0, or -1 when the body memory or malloc refused.
 */
static int grow(struct httpd *s, struct conn *c, size_t n)
{
	size_t limit = c->expect < s->cfg.body_max ? c->expect
		       : s->cfg.body_max;
	size_t need = c->len + n, want, got;
	char *grown;

	if (limit < need)
		limit = need; /* take_body() keeps need within body_max */
	want = grown_size(c->cap, need, limit, 2, 1);
	got = body_take(s, c, want - c->cap,
			grown_size(c->cap, need, limit, 9, 8) - c->cap);
	if (!got)
		return -1;
	want = c->cap + got;
	grown = realloc(c->body, want);
	if (!grown)
		return -1; /* start_drop() gives the memory back */
	c->body = grown;
	c->cap = want;
	return 0;
}

/*
 * Takes n bytes of body.  A body that arrives whole in its first piece is
 * answered from libmicrohttpd's buffer, without a copy; otherwise it is
 * copied into a buffer (grow()).  A body over the limit, or without room,
 * is dropped from then on (start_drop()); a chunked one that goes
 * DISCARD_MAX past the limit has its connection closed (MHD_NO).
 */
static enum MHD_Result take_body(struct httpd *s, struct conn *c,
				 const char *data, size_t n)
{
	size_t max = s->cfg.body_max, room;

	c->total += n;
	if (!c->drop && n > max - c->len)
		start_drop(s, c, HTTPD_UNREAD_TOO_LARGE);
	if (!c->drop && !c->body && c->len == 0 && n == c->expect) {
		answer(s, c, data, n);
		return MHD_YES;
	}
	conns_touch(s->lis[0].conns, c->id, n);
	if (!c->drop && n > c->cap - c->len && grow(s, c, n))
		start_drop(s, c, HTTPD_UNREAD_NO_MEMORY);
	if (c->drop) {
		if (c->total > max + DISCARD_MAX)
			return MHD_NO;
		room = c->cap > c->len ? c->cap - c->len : 0;
		n = n < room ? n : room;
	}
	if (n)
		memcpy(c->body + c->len, data, n);
	c->len += n;
	return MHD_YES;
}

/* Queues the handler's answer (taking its body) or a canned 500. */
static enum MHD_Result queue_reply(struct httpd *s, struct conn *c,
				   struct MHD_Connection *mc)
{
	struct MHD_Response *r;
	enum MHD_Result rc;

	if (!c->reply.body)
		return queue(mc, MHD_HTTP_INTERNAL_SERVER_ERROR, s->r.internal);
	r = MHD_create_response_from_buffer(c->reply.len, c->reply.body,
					    MHD_RESPMEM_MUST_FREE);
	if (!r)
		return queue(mc, MHD_HTTP_INTERNAL_SERVER_ERROR, s->r.internal);
	c->reply.body = NULL;
	if (MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
				    c->reply.content_type ? c->reply.content_type
							  : CONTENT_TEXT) != MHD_YES ||
	    (atomic_load(&s->draining) &&
	     MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close") !=
		     MHD_YES)) {
		MHD_destroy_response(r);
		return queue(mc, MHD_HTTP_INTERNAL_SERVER_ERROR, s->r.internal);
	}
	rc = queue(mc, c->reply.status ? c->reply.status : 500, r);
	MHD_destroy_response(r);
	return rc;
}

/* --- the HTTPS daemon ---------------------------------------------------- */

/* Refuses an admission request with 413, told and logged. */
static enum MHD_Result too_large(struct httpd *s, struct conn *c,
				 struct MHD_Connection *mc,
				 const char *method, const char *url)
{
	if (s->cfg.refused)
		s->cfg.refused(s->cfg.arg, MHD_HTTP_CONTENT_TOO_LARGE,
			       s->too_large_reason, c->started);
	log_refusal(mc, method, url, MHD_HTTP_CONTENT_TOO_LARGE,
		    s->too_large_reason);
	return queue(mc, MHD_HTTP_CONTENT_TOO_LARGE, s->r.too_large);
}

/*
 * Answers a request that framing_check() refused with its status (400 or
 * 501, each with "Connection: close"), counted as refused when it was
 * for an admission path.
 */
static enum MHD_Result refuse_framing(struct httpd *s,
				      struct MHD_Connection *mc,
				      const struct conn *c, const char *method,
				      const char *url, unsigned status,
				      const char *why)
{
	if (c && c->route == ROUTE_REVIEW && s->cfg.refused)
		s->cfg.refused(s->cfg.arg, status, why, c->started);
	log_refusal(mc, method, url, status, why);
	return MHD_queue_response(mc, status,
				  status == MHD_HTTP_NOT_IMPLEMENTED ?
				  s->r.not_implemented : s->r.bad_request);
}

/*
 * The first call of a request (its headers are in): starts its clock,
 * tells the registry, then checks the client certificate (with a client
 * CA, except for probes), the path, the method and the Content-Length.  A
 * refusal is queued at once (libmicrohttpd then closes the connection
 * without reading the body).  Otherwise returns MHD_YES to read on; an
 * admission request counts as in flight from here.  A Content-Length over
 * the limit drops the body from its first byte; one more than DISCARD_MAX
 * over it is refused with 413.
 */
static enum MHD_Result tls_begin(struct httpd *s, struct MHD_Connection *mc,
				 struct conn *c, const char *url,
				 const char *method)
{
	bool probe, get;
	const char *te, *cl, *reason;
	uint64_t length = 0;
	struct framing f;
	unsigned status;

	c->route = route_of(url, true);
	c->validate = !strcmp(url, "/validate");
	if (c->validate && !s->cfg.validate)
		c->route = ROUTE_NONE;
	c->started = httpd_now_ns();
	conns_begin(s->lis[0].conns, c->id);
	probe = c->route == ROUTE_HEALTHZ || c->route == ROUTE_READYZ;
	get = is_get(method);

	status = framing_check(mc, &f, &reason);
	if (status)
		return refuse_framing(s, mc, c, method, url, status, reason);
	if (s->cfg.client_ca && !(probe && get)) {
		if (c->peer < 0)
			c->peer = peer_verified(mc) ? 1 : 0;
		if (!c->peer) {
			const char *why = "no client certificate signed by the client CA";

			if (c->route == ROUTE_REVIEW && s->cfg.refused)
				s->cfg.refused(s->cfg.arg, MHD_HTTP_FORBIDDEN,
					       why, c->started);
			log_refusal(mc, method, url, MHD_HTTP_FORBIDDEN, why);
			return queue(mc, MHD_HTTP_FORBIDDEN, s->r.forbidden);
		}
	}
	if (c->route == ROUTE_NONE) {
		log_refusal(mc, method, url, MHD_HTTP_NOT_FOUND, "unknown path");
		return queue(mc, MHD_HTTP_NOT_FOUND, s->r.not_found);
	}
	if (probe && !get) {
		log_refusal(mc, method, url, MHD_HTTP_METHOD_NOT_ALLOWED,
			    "method not allowed");
		return queue(mc, MHD_HTTP_METHOD_NOT_ALLOWED, s->r.get_only);
	}
	if (probe)
		return MHD_YES;
	if (strcmp(method, MHD_HTTP_METHOD_POST)) {
		log_refusal(mc, method, url, MHD_HTTP_METHOD_NOT_ALLOWED,
			    "method not allowed");
		return queue(mc, MHD_HTTP_METHOD_NOT_ALLOWED, s->r.post_only);
	}
	if (!is_json(&f)) {
		reason = "Content-Type is not application/json";
		if (s->cfg.refused)
			s->cfg.refused(s->cfg.arg, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE,
				       reason, c->started);
		log_refusal(mc, method, url, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE,
			    reason);
		return queue(mc, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE,
			     s->r.not_json);
	}

	c->counted = true;
	atomic_fetch_add_explicit(&s->in_flight, 1, memory_order_relaxed);
	te = MHD_lookup_connection_value(mc, MHD_HEADER_KIND,
					 MHD_HTTP_HEADER_TRANSFER_ENCODING);
	cl = MHD_lookup_connection_value(mc, MHD_HEADER_KIND,
					 MHD_HTTP_HEADER_CONTENT_LENGTH);
	if (te && strcmp(te, "identity")) {
		c->expect = SIZE_MAX;
	} else if (cl) {
		if (text_u64_parsen(cl, strlen(cl),
				    s->cfg.body_max + DISCARD_MAX, &length))
			return too_large(s, c, mc, method, url);
		c->expect = (size_t)length;
		if (c->expect > s->cfg.body_max)
			start_drop(s, c, HTTPD_UNREAD_TOO_LARGE);
	}
	return MHD_YES;
}

/*
 * The last call of a request whose body was dropped: the unread hook's
 * answer, else 413 (too large) or 503 (no memory).
 */
static enum MHD_Result answer_unread(struct httpd *s, struct conn *c,
				     struct MHD_Connection *mc,
				     const char *method, const char *url)
{
	static const char no_memory[] = "no memory for the request body";

	memset(&c->reply, 0, sizeof(c->reply));
	if (s->cfg.unread)
		s->cfg.unread(s->cfg.arg, (enum httpd_unread)c->drop,
			      c->body ? c->body : "", c->body ? c->len : 0,
			      c->total, c->started, &c->reply);
	if (c->reply.body) {
		c->answered = true;
		return queue_reply(s, c, mc);
	}
	if (c->drop == HTTPD_UNREAD_TOO_LARGE)
		return too_large(s, c, mc, method, url);
	if (s->cfg.refused)
		s->cfg.refused(s->cfg.arg, MHD_HTTP_SERVICE_UNAVAILABLE,
			       no_memory, c->started);
	log_refusal(mc, method, url, MHD_HTTP_SERVICE_UNAVAILABLE, no_memory);
	return queue(mc, MHD_HTTP_SERVICE_UNAVAILABLE, s->r.busy);
}

/*
 * The access handler of the HTTPS daemon: tls_begin() on the first call,
 * take_body() on each piece of body, and the answer on the last call
 * (no data).  The request state is the connection's struct conn.
 */
static enum MHD_Result on_tls_request(void *cls, struct MHD_Connection *mc,
				      const char *url, const char *method,
				      const char *version,
				      const char *upload_data,
				      size_t *upload_data_size, void **req_cls)
{
	struct httpd *s = cls;
	struct conn *c = *req_cls;

	(void)version;
	if (!c) {
		c = conn_of(mc);
		if (!c)
			return queue(mc, MHD_HTTP_SERVICE_UNAVAILABLE, s->r.busy);
		*req_cls = c;
		return tls_begin(s, mc, c, url, method);
	}
	if (*upload_data_size) {
		size_t n = *upload_data_size;

		*upload_data_size = 0;
		if (c->route != ROUTE_REVIEW)
			return MHD_YES; /* a probe with a body: ignored */
		return take_body(s, c, upload_data, n);
	}
	switch (c->route) {
	case ROUTE_HEALTHZ:
		return queue(mc, MHD_HTTP_OK, s->r.ok);
	case ROUTE_READYZ:
		return not_ready(s) ?
		       queue(mc, MHD_HTTP_SERVICE_UNAVAILABLE, s->r.draining) :
		       queue(mc, MHD_HTTP_OK, s->r.ok);
	case ROUTE_REVIEW:
		break;
	default:
		return MHD_NO;
	}
	if (c->drop)
		return answer_unread(s, c, mc, method, url);
	if (!c->answered)
		answer(s, c, c->body ? c->body : "", c->len);
	return queue_reply(s, c, mc);
}

/* A request ended (answered, or its connection closed): resets its state. */
static void on_completed(void *cls, struct MHD_Connection *mc, void **req_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct httpd *s = cls;
	struct conn *c = *req_cls;

	(void)mc;
	if (!c)
		return;
	if (c->route == ROUTE_REVIEW && !c->answered &&
	    toe != MHD_REQUEST_TERMINATED_COMPLETED_OK)
		log_detail("admission request abandoned before its answer (%d)",
			   (int)toe);
	if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
		conns_end(s->lis[0].conns, c->id);
	request_end(s, c);
	*req_cls = NULL;
}

/* --- connections ---------------------------------------------------------- */

/* The accept policy of both daemons: an address at its cap is refused. */
static enum MHD_Result on_accept(void *cls, const struct sockaddr *addr,
				 socklen_t addrlen)
{
	struct listener *l = cls;

	return conns_admit(l->conns, addr, addrlen) ? MHD_YES : MHD_NO;
}

/*
 * Registers connection mc with the registry of l.  Returns its id, or -1
 * when it was refused (its socket is shut down: it closes at once).
 */
static int conn_register(struct listener *l, struct MHD_Connection *mc)
{
	const union MHD_ConnectionInfo *fd =
		MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *sa = ci ? ci->client_addr : NULL;
	socklen_t len = !sa ? 0 :
			sa->sa_family == AF_INET ? sizeof(struct sockaddr_in) :
			sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
			sizeof(sa->sa_family);

	if (!fd)
		return -1;
	return conns_open(l->conns, fd->connect_fd, sa, len);
}

/*
 * A connection of the HTTPS daemon opened: its struct conn, its entry in
 * the registry, and a hold on the current certificate pair (kept even when
 * the struct cannot be allocated, so that its handshake never uses a freed
 * pair; such a connection is refused, counted as closed for memory, and
 * its socket shut down so that it closes at once).  A connection closed:
 * all three go, the entry first of all (the socket is closed after this
 * returns).
 */
static void on_connection(void *cls, struct MHD_Connection *mc,
			  void **socket_context,
			  enum MHD_ConnectionNotificationCode toe)
{
	struct listener *l = cls;
	struct httpd *s = l->s;
	struct conn *c;

	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		void *hold = certs_hold(s->cfg.certs);

		c = calloc(1, sizeof(*c));
		if (!c) {
			const union MHD_ConnectionInfo *fd =
				MHD_get_connection_info(
					mc, MHD_CONNECTION_INFO_CONNECTION_FD);

			*socket_context = (void *)((uintptr_t)hold | HOLD_TAG);
			if (fd)
				conns_refuse(l->conns, fd->connect_fd,
					     CONNS_MEMORY);
			return;
		}
		c->hold = hold;
		c->peer = -1;
		c->id = conn_register(l, mc);
		*socket_context = c;
		return;
	}
	if (!*socket_context)
		return;
	if ((uintptr_t)*socket_context & HOLD_TAG) {
		certs_unhold(s->cfg.certs,
			     (void *)((uintptr_t)*socket_context & ~HOLD_TAG));
	} else {
		c = *socket_context;
		request_end(s, c); /* gives its body memory back first */
		conns_close(l->conns, c->id);
		certs_unhold(s->cfg.certs, c->hold);
		free(c);
	}
	*socket_context = NULL;
}

/*
 * A connection of the metrics daemon opened or closed: its entry in the
 * registry, whose id + 1 is its socket context.
 */
static void on_plain_connection(void *cls, struct MHD_Connection *mc,
				void **socket_context,
				enum MHD_ConnectionNotificationCode toe)
{
	struct listener *l = cls;

	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		*socket_context = (void *)(intptr_t)(conn_register(l, mc) + 1);
		return;
	}
	conns_close(l->conns, (int)(intptr_t)*socket_context - 1);
	*socket_context = NULL;
}

/* The registry id of a connection of the metrics daemon, or -1. */
static int plain_id(struct MHD_Connection *mc)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(mc, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? (int)(intptr_t)ci->socket_context - 1 : -1;
}

/* A request of the metrics daemon answered: the registry is told. */
static void on_plain_completed(void *cls, struct MHD_Connection *mc,
			       void **req_cls,
			       enum MHD_RequestTerminationCode toe)
{
	struct listener *l = cls;

	(void)req_cls;
	if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
		conns_end(l->conns, plain_id(mc));
}

/*
 * Logs what the registry of l closed since the last line, when the
 * reasons are more than idle connections (those only with -v 1): one
 * line, at most once every LOG_EVERY_NS, whatever the count.
 */
static void log_closed(struct listener *l)
{
	struct conns_stats st;
	unsigned long long d[CONNS_NREASONS];
	bool any = false, worrying = false;
	size_t i;

	conns_stats(l->conns, &st);
	for (i = 0; i < CONNS_NREASONS; i++) {
		d[i] = st.closed[i] - l->logged[i];
		l->logged[i] = st.closed[i];
		any |= d[i] != 0;
		worrying |= d[i] != 0 && i != CONNS_IDLE;
	}
	if (!any || (!worrying && log_verbosity < 1))
		return;
	log_fields(worrying ? LOG_WARN : LOG_INFO,
		   "connections closed in the last 10 s",
		   (struct log_field[]){
			   LOG_STR("listener", httpd_listener_name(l->which)),
			   LOG_NUM("opening", d[CONNS_OPENING]),
			   LOG_NUM("idle", d[CONNS_IDLE]),
			   LOG_NUM("request", d[CONNS_REQUEST]),
			   LOG_NUM("evicted", d[CONNS_EVICTED]),
			   LOG_NUM("address", d[CONNS_ADDRESS]),
			   LOG_NUM("memory", d[CONNS_MEMORY]),
			   LOG_NUM("open", st.open) },
		   8);
}

/*
 * The reaper thread: every REAP_NS, writes the log lines gathered since
 * (log_buffering()) and closes the connections past their deadlines;
 * every LOG_EVERY_NS, logs what was closed.
 */
static void *reaper(void *arg)
{
	struct httpd *s = arg;
	uint64_t next_log = httpd_now_ns() + LOG_EVERY_NS;
	struct timespec until;
	size_t i;

	pthread_mutex_lock(&s->lock);
	while (!s->stop) {
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_nsec += (long)REAP_NS;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&s->wake, &s->lock, &until);
		if (s->stop)
			break;
		pthread_mutex_unlock(&s->lock);
		log_flush();
		for (i = 0; i < 2; i++)
			if (s->lis[i].conns)
				conns_reap(s->lis[i].conns);
		if (httpd_now_ns() >= next_log) {
			next_log += LOG_EVERY_NS;
			for (i = 0; i < 2; i++)
				if (s->lis[i].conns)
					log_closed(&s->lis[i]);
		}
		pthread_mutex_lock(&s->lock);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* --- the plain HTTP daemon ----------------------------------------------- */

/*
 * The access handler of the metrics daemon: the path and method are
 * checked on the first call, the answer is given on the last one; a body
 * is read and ignored.
 */
static enum MHD_Result on_plain_request(void *cls, struct MHD_Connection *mc,
					const char *url, const char *method,
					const char *version,
					const char *upload_data,
					size_t *upload_data_size, void **req_cls)
{
	static char started; /* marks the first call as done */
	struct httpd *s = cls;
	enum route route = route_of(url, false);
	struct buf page = BUF_INIT;
	struct MHD_Response *r;
	enum MHD_Result rc;
	char *text;
	size_t len;

	(void)version;
	(void)upload_data;
	if (!*req_cls) {
		struct framing f;
		const char *why;
		unsigned status = framing_check(mc, &f, &why);

		*req_cls = &started;
		conns_begin(s->lis[1].conns, plain_id(mc));
		if (status)
			return refuse_framing(s, mc, NULL, method, url, status,
					      why);
		if (route == ROUTE_NONE) {
			log_refusal(mc, method, url, MHD_HTTP_NOT_FOUND,
				    "unknown path");
			return MHD_queue_response(mc, MHD_HTTP_NOT_FOUND,
						  s->r.not_found);
		}
		if (!is_get(method)) {
			log_refusal(mc, method, url,
				    MHD_HTTP_METHOD_NOT_ALLOWED,
				    "method not allowed");
			return MHD_queue_response(mc, MHD_HTTP_METHOD_NOT_ALLOWED,
						  s->r.get_only);
		}
		return MHD_YES;
	}
	if (*upload_data_size) {
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (route == ROUTE_HEALTHZ)
		return MHD_queue_response(mc, MHD_HTTP_OK, s->r.ok);
	if (route == ROUTE_READYZ)
		return not_ready(s) ?
		       MHD_queue_response(mc, MHD_HTTP_SERVICE_UNAVAILABLE,
					  s->r.draining) :
		       MHD_queue_response(mc, MHD_HTTP_OK, s->r.ok);
	if (s->cfg.metrics(s->cfg.arg, s, &page)) {
		buf_release(&page);
		return MHD_queue_response(mc, MHD_HTTP_INTERNAL_SERVER_ERROR,
					  s->r.internal);
	}
	text = buf_detach(&page, &len);
	r = text ? MHD_create_response_from_buffer(len, text,
						   MHD_RESPMEM_MUST_FREE)
		 : NULL;
	if (!r) {
		free(text);
		return MHD_queue_response(mc, MHD_HTTP_INTERNAL_SERVER_ERROR,
					  s->r.internal);
	}
	if (MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
				    CONTENT_METRICS) != MHD_YES) {
		MHD_destroy_response(r);
		return MHD_queue_response(mc, MHD_HTTP_INTERNAL_SERVER_ERROR,
					  s->r.internal);
	}
	rc = MHD_queue_response(mc, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return rc;
}

/* --- life cycle ---------------------------------------------------------- */

/* libmicrohttpd's own messages (with -v 2): one log line each. */
__attribute__((format(printf, 2, 0)))
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char msg[512];
	size_t n;

	(void)cls;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	n = strlen(msg);
	while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
		msg[--n] = '\0';
	log_fields(LOG_DEBUG, msg, NULL, 0);
}

/* A persistent text answer with its Content-Type (and Allow), or NULL. */
static struct MHD_Response *canned(const char *text, const char *allow)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(
		strlen(text), (void *)(uintptr_t)text, MHD_RESPMEM_PERSISTENT);

	if (!r)
		return NULL;
	if (MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
				    CONTENT_TEXT) != MHD_YES ||
	    (allow && MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW,
					      allow) != MHD_YES)) {
		MHD_destroy_response(r);
		return NULL;
	}
	return r;
}

/*
 * canned(text) that closes its connection: for a request whose end is
 * unknown.
 */
static struct MHD_Response *canned_closing(const char *text)
{
	struct MHD_Response *r = canned(text, NULL);

	if (r && MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION,
					 "close") != MHD_YES) {
		MHD_destroy_response(r);
		return NULL;
	}
	return r;
}

static void canned_release(struct canned *r)
{
	struct MHD_Response **all[] = {
		&r->ok, &r->draining, &r->not_found, &r->post_only, &r->get_only,
		&r->forbidden, &r->too_large, &r->internal, &r->busy,
		&r->bad_request, &r->not_implemented, &r->not_json,
	};
	size_t i;

	for (i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		if (*all[i])
			MHD_destroy_response(*all[i]);
		*all[i] = NULL;
	}
}

/*
 * Makes the canned answers.  Returns 0, or -1 out of memory.  A canned
 * answer serves its buffer as it is, for as long as the server runs.
 */
static int canned_init(struct httpd *s)
{
	struct canned *r = &s->r;

	snprintf(s->too_large_reason, sizeof(s->too_large_reason),
		 "request body larger than %zu bytes", s->cfg.body_max);
	snprintf(s->too_large_body, sizeof(s->too_large_body), "%s\n",
		 s->too_large_reason);
	r->ok = canned("ok\n", NULL);
	r->draining = canned("draining\n", NULL);
	r->not_found = canned("not found\n", NULL);
	r->post_only = canned("method not allowed: use POST\n", "POST");
	r->get_only = canned("method not allowed: use GET\n", "GET, HEAD");
	r->forbidden = canned("forbidden: a client certificate signed by the "
			      "client CA is required\n", NULL);
	r->too_large = canned(s->too_large_body, NULL);
	r->internal = canned("internal error\n", NULL);
	r->busy = canned("server busy\n", NULL);
	r->bad_request = canned_closing("bad request: malformed header "
					"fields or framing\n");
	r->not_implemented = canned_closing("not implemented: a "
					    "Transfer-Encoding other than "
					    "chunked\n");
	r->not_json = canned("unsupported media type: the Content-Type must "
			     "be application/json\n", NULL);
	if (!r->ok || !r->draining || !r->not_found || !r->post_only ||
	    !r->get_only || !r->forbidden || !r->too_large || !r->internal ||
	    !r->busy || !r->bad_request || !r->not_implemented || !r->not_json)
		return -1;
	return 0;
}

/*
 * The HTTPS slots: CONN_LIMIT, or less when file descriptors are few.
 * Each listener registers up to a quarter more connections than it has
 * slots (those closing, not yet closed), and the process needs some more
 * descriptors (listeners, epoll, files).
 */
static unsigned connection_limit(void)
{
	struct rlimit rl;
	rlim_t want = CONN_LIMIT + CONN_LIMIT / 4 + METRICS_CONN_LIMIT +
		      METRICS_CONN_LIMIT / 4 + 64;
	rlim_t spare = METRICS_CONN_LIMIT + METRICS_CONN_LIMIT / 4 + 64;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return 256;
	if (rl.rlim_cur < want && rl.rlim_max != rl.rlim_cur) {
		rl.rlim_cur = rl.rlim_max < want ? rl.rlim_max : want;
		setrlimit(RLIMIT_NOFILE, &rl);
		getrlimit(RLIMIT_NOFILE, &rl);
	}
	if (rl.rlim_cur >= want)
		return CONN_LIMIT;
	if (rl.rlim_cur < 80 + spare)
		return 64;
	return (unsigned)((rl.rlim_cur - spare) * 4 / 5);
}

/*
 * Worker threads: wanted, or one per CPU this process may run on (a
 * pinned process or a cpuset gets no idle workers), at most THREADS_MAX.
 */
static unsigned thread_count(unsigned wanted)
{
	cpu_set_t set;
	long n;

	if (wanted)
		return wanted > THREADS_MAX ? THREADS_MAX : wanted;
	n = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set)
		: sysconf(_SC_NPROCESSORS_ONLN);
	if (n < 1)
		return 1;
	return n > (long)THREADS_MAX ? THREADS_MAX : (unsigned)n;
}

/*
 * The registry of listener which (slots, a quarter more for connections
 * closing, a quarter of the slots per address), and for HTTPS the ledger
 * of the body memory: three quarters of it per address, at least
 * body_max.  Returns 0, or -1 out of memory.
 */
static int listener_init(struct httpd *s, enum httpd_listener which,
			 unsigned slots)
{
	bool tls = which == HTTPD_LISTENER_TLS;
	struct listener *l = &s->lis[tls ? 0 : 1];
	size_t memory = s->cfg.body_memory;
	struct conns_limits lim = {
		.slots = slots,
		.capacity = slots + slots / 4,
		.per_address = slots / 4,
		.open_ns = OPEN_NS,
		.idle_ns = IDLE_NS,
		.request_ns = REQUEST_NS,
		.memory = tls ? memory : 0,
		.memory_per_address = !tls ? 0 :
			memory / 4 * 3 > s->cfg.body_max ? memory / 4 * 3 :
			s->cfg.body_max,
		.slow_ns = BODY_SLOW_NS,
		.slow_bytes = BODY_SLOW_BYTES,
		.clock = httpd_now_ns,
	};

	l->s = s;
	l->which = which;
	l->conns = conns_create(&lim);
	return l->conns ? 0 : -1;
}

/* The reaper's lock and condition (on the monotonic clock), then the
 * thread; the log is buffered while the reaper flushes it.  Returns 0, or
 * -1. */
static int reaper_start(struct httpd *s)
{
	pthread_condattr_t attr;
	int rc;

	if (pthread_condattr_init(&attr))
		return -1;
	rc = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) ||
	     pthread_cond_init(&s->wake, &attr);
	pthread_condattr_destroy(&attr);
	if (rc)
		return -1;
	if (pthread_mutex_init(&s->lock, NULL)) {
		pthread_cond_destroy(&s->wake);
		return -1;
	}
	if (pthread_create(&s->reaper, NULL, reaper, s)) {
		pthread_mutex_destroy(&s->lock);
		pthread_cond_destroy(&s->wake);
		return -1;
	}
	s->reaping = true;
	log_buffering(true);
	return 0;
}

static void reaper_stop(struct httpd *s)
{
	if (!s->reaping)
		return;
	pthread_mutex_lock(&s->lock);
	s->stop = true;
	pthread_cond_signal(&s->wake);
	pthread_mutex_unlock(&s->lock);
	pthread_join(s->reaper, NULL);
	log_buffering(false);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->wake);
	s->reaping = false;
}

enum httpd_status httpd_start(const struct httpd_config *cfg,
			       struct httpd **out, struct httpd_error *err)
{
	/* Typed here: libmicrohttpd takes them through "...". */
	MHD_AccessHandlerCallback tls_handler = on_tls_request;
	MHD_AccessHandlerCallback plain_handler = on_plain_request;
	MHD_RequestCompletedCallback completed = on_completed;
	MHD_RequestCompletedCallback plain_completed = on_plain_completed;
	MHD_NotifyConnectionCallback connection = on_connection;
	MHD_NotifyConnectionCallback plain_connection = on_plain_connection;
	MHD_LogCallback logger = mhd_log;
	gnutls_certificate_retrieve_function2 *retrieve = certs_retrieve;
	struct httpd *s = calloc(1, sizeof(*s));
	/* ITC wakes the workers at the stop: after httpd_drain() their
	 * listen socket no longer does. */
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL |
			 MHD_USE_ITC;
	unsigned slots = connection_limit();
	enum httpd_status rc;
	int tls_fd = -1, plain_fd = -1;

	if (!s)
		return failed(err, HTTPD_NOMEM, HTTPD_LISTENER_NONE,
			      "out of memory");
	s->cfg = *cfg;
	if (s->cfg.body_memory < s->cfg.body_max)
		s->cfg.body_memory = s->cfg.body_max;
	s->tls_fd = -1;
	atomic_init(&s->in_flight, 0);
	atomic_init(&s->draining, false);
	atomic_init(&s->unready, false);
	if (log_verbosity >= 2)
		flags |= MHD_USE_ERROR_LOG;
	if (canned_init(s) || listener_init(s, HTTPD_LISTENER_TLS, slots) ||
	    listener_init(s, HTTPD_LISTENER_METRICS, METRICS_CONN_LIMIT) ||
	    reaper_start(s)) {
		rc = failed(err, HTTPD_NOMEM, HTTPD_LISTENER_NONE,
			    "out of memory");
		goto fail;
	}
	rc = listen_on(HTTPD_LISTENER_TLS, cfg->listen, &tls_fd, err);
	if (rc)
		goto fail;
	if (cfg->metrics_listen && cfg->metrics_listen[0]) {
		rc = listen_on(HTTPD_LISTENER_METRICS, cfg->metrics_listen,
			       &plain_fd, err);
		if (rc)
			goto fail;
	}

	certs_serve(cfg->certs);
	s->lis[0].on = true;
	s->tls = MHD_start_daemon(
		flags | MHD_USE_TLS, 0, on_accept, &s->lis[0], tls_handler, s,
		MHD_OPTION_EXTERNAL_LOGGER, logger, s,
		MHD_OPTION_LISTEN_SOCKET, (MHD_socket)tls_fd,
		MHD_OPTION_HTTPS_PRIORITIES, cfg->tls_priorities,
		MHD_OPTION_STRICT_FOR_CLIENT, 1,
		MHD_OPTION_HTTPS_CERT_CALLBACK, retrieve,
		MHD_OPTION_HTTPS_MEM_TRUST, cfg->client_ca,
		MHD_OPTION_CONNECTION_LIMIT, slots + slots / 4,
		MHD_OPTION_CONNECTION_TIMEOUT, BACKSTOP_TIMEOUT,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONN_MEMORY,
		MHD_OPTION_NOTIFY_CONNECTION, connection, &s->lis[0],
		MHD_OPTION_NOTIFY_COMPLETED, completed, s,
		MHD_OPTION_THREAD_POOL_SIZE, thread_count(cfg->threads),
		MHD_OPTION_THREAD_STACK_SIZE, THREAD_STACK,
		MHD_OPTION_END);
	if (!s->tls) {
		/* libmicrohttpd closed or owns tls_fd now. */
		tls_fd = -1;
		rc = failed(err, HTTPD_START_FAILED, HTTPD_LISTENER_TLS,
			    "cannot start the HTTPS server on \"%s\"",
			    cfg->listen);
		goto fail;
	}
	s->tls_fd = tls_fd;
	tls_fd = -1;
	if (plain_fd >= 0) {
		s->lis[1].on = true;
		s->plain = MHD_start_daemon(
			flags, 0, on_accept, &s->lis[1], plain_handler, s,
			MHD_OPTION_EXTERNAL_LOGGER, logger, s,
			MHD_OPTION_LISTEN_SOCKET, (MHD_socket)plain_fd,
			MHD_OPTION_CONNECTION_LIMIT,
			METRICS_CONN_LIMIT + METRICS_CONN_LIMIT / 4,
			MHD_OPTION_CONNECTION_TIMEOUT, BACKSTOP_TIMEOUT,
			MHD_OPTION_STRICT_FOR_CLIENT, 1,
			MHD_OPTION_NOTIFY_CONNECTION, plain_connection,
			&s->lis[1],
			MHD_OPTION_NOTIFY_COMPLETED, plain_completed, &s->lis[1],
			MHD_OPTION_END);
		plain_fd = -1;
		if (!s->plain) {
			rc = failed(err, HTTPD_START_FAILED,
				    HTTPD_LISTENER_METRICS,
				    "cannot start the metrics server on \"%s\"",
				    cfg->metrics_listen);
			goto fail;
		}
	}
	*out = s;
	return HTTPD_OK;
fail:
	if (tls_fd >= 0)
		close(tls_fd);
	if (plain_fd >= 0)
		close(plain_fd);
	httpd_stop(s);
	return rc;
}

/*
 * Stops accepting without MHD_quiesce_daemon(): in libmicrohttpd 0.9.75,
 * with a thread pool and epoll, it races with the workers removing the
 * listen socket from their epoll sets themselves, and aborts when they win.
 * Instead a listening AF_UNIX socket, which never becomes ready, takes the
 * place of the listener under the same descriptor number (dup2): the TCP
 * socket closes (new connections are refused), it leaves every epoll set
 * with it, and libmicrohttpd keeps a valid descriptor to close at the end.
 * A worker that reaches its connection limit then takes the listener out
 * of its epoll set and gets ENOENT, which our libmicrohttpd takes as done
 * (patches/libmicrohttpd/0002-listen-socket-gone-from-epoll.patch; with
 * MHD=system it aborts).
 */
void httpd_drain(struct httpd *s)
{
	struct sockaddr_un sa;
	int dummy;

	if (atomic_exchange(&s->draining, true))
		return;
	conns_drain(s->lis[0].conns, DRAIN_STALL_NS);
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	dummy = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	/* Binding just the family gives it a unique abstract name. */
	if (dummy < 0 ||
	    bind(dummy, (struct sockaddr *)&sa, sizeof(sa.sun_family)) ||
	    listen(dummy, 1) || dup2(dummy, s->tls_fd) < 0)
		log_warn("cannot close the HTTPS listener (%s); it keeps accepting while draining",
			 strerror(errno));
	if (dummy >= 0)
		close(dummy);
}

void httpd_unready(struct httpd *s)
{
	atomic_store(&s->unready, true);
}

long httpd_in_flight(struct httpd *s)
{
	return atomic_load_explicit(&s->in_flight, memory_order_relaxed);
}

void httpd_conn_stats(struct httpd *s, enum httpd_listener listener,
		      struct conns_stats *out)
{
	struct listener *l = &s->lis[listener == HTTPD_LISTENER_TLS ? 0 : 1];

	/* Not s->tls or s->plain: the metrics daemon may answer before
	 * httpd_start() has stored it. */
	memset(out, 0, sizeof(*out));
	if (l->on && l->conns)
		conns_stats(l->conns, out);
}

const char *httpd_listener_name(enum httpd_listener listener)
{
	return listener == HTTPD_LISTENER_TLS ? "https" :
	       listener == HTTPD_LISTENER_METRICS ? "metrics" : "none";
}

/* The reaper first, then the daemons (which unregister every connection
 * as they close it), then the registries. */
void httpd_stop(struct httpd *s)
{
	if (!s)
		return;
	reaper_stop(s);
	if (s->tls)
		MHD_stop_daemon(s->tls);
	if (s->plain)
		MHD_stop_daemon(s->plain);
	conns_destroy(s->lis[0].conns);
	conns_destroy(s->lis[1].conns);
	canned_release(&s->r);
	free(s);
}
