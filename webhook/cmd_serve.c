/*
 * cmd_serve.c - the `serve` command: the HTTPS server around
 * review_handlen() (and the denial of a body too large to read), the
 * decision log, metrics, certificate rotation and the shutdown on SIGTERM.
 *
 * Threads: the server's worker threads answer requests; the main thread
 * waits for signals and polls the certificate files once a second.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "certs.h"
#include "cmd_serve.h"
#include "config.h"
#include "httpd.h"
#include "log.h"
#include "metrics.h"
#include "reload.h"
#include "review.h"
#include "text.h"
#include "tlsconf.h"
#include "version.h"

#define PROG "vgpu-webhook"
#define POLL_NS 1000000000ull        /* certificate files: once a second */
#define DRAIN_NS 25000000000ull      /* in-flight requests get 25 s */
#define FORCE_AFTER_NS 1000000000ull /* a second signal after 1 s forces */
/* Bodies held at once by every connection: one at REVIEW_BODY_MAX and
 * many of the usual size (a few KiB, most never copied). */
#define BODY_MEMORY ((size_t)64 << 20)

struct serve_state {
	struct reload config;
	struct metrics metrics;
	struct certs certs;
};

void cmd_serve_options_init(struct cmd_serve_options *o)
{
	memset(o, 0, sizeof(*o));
	o->listen = "0.0.0.0:9443";
	o->metrics_listen = "0.0.0.0:9090";
}

/* --- the request path ---------------------------------------------------- */

/* The denial of a review whose body the server did not keep. */
struct unread {
	struct review_prefix prefix;
	int code;
	char message[160];
};

/*
 * The decision line (behaviour §6, logs), with the audit fields of a
 * denial or a guard hit: the requester, the kind, dryRun, the code and
 * message of a denial, and each guard hit with its key.
 */
static void log_decision(const struct review_answer *ans, uint64_t latency)
{
	char hits[GUARD_HITS_LISTED * (GUARD_KEY_SIZE + 32) + 32];
	struct log_field fields[16] = {
		LOG_STR("uid", ans->uid),
		LOG_STR("namespace", ans->namespace_),
		LOG_STR("name", ans->name),
		LOG_STR("operation", ans->operation),
		LOG_STR("outcome", review_outcome_name(ans->outcome)),
		LOG_NUM("ops", ans->ops),
		LOG_NUM("latency_us", latency / 1000),
		LOG_STR("profile", ans->profile),
	};
	size_t n = 8;

	/* Named only when it is not the default (behaviour §6, logs). */
	if (strcmp(ans->allocation, "hami"))
		fields[n++] = LOG_STR("allocation", ans->allocation);
	if (ans->audit) {
		guard_hits_format(&ans->hits, hits, sizeof(hits));
		fields[n++] = LOG_STR("kind", ans->kind);
		fields[n++] = LOG_STR("subresource", ans->subresource);
		fields[n++] = LOG_STR("user", ans->user);
		fields[n++] = LOG_STR("dry_run", ans->dry_run);
		if (ans->code) {
			fields[n++] = LOG_NUM("code", ans->code);
			fields[n++] = LOG_STR("message", ans->message);
		}
		fields[n++] = LOG_STR("guard_hits", hits);
	}
	log_event(LOG_INFO, "decision", fields, n);
}

/*
 * Answers one admission body: review_handlen_with() (or, for a body not
 * kept, the denial in unread), metrics, the log line.  validate: POST
 * /validate, which never patches.
 */
static void answer_review(struct serve_state *st, const char *body,
			  size_t len, uint64_t started_ns,
			  struct httpd_reply *reply, bool validate,
			  const struct unread *unread)
{
	struct review_options opt = { NULL, NULL, validate };
	struct review_answer ans;
	uint64_t latency;

	const struct reload_config *cfg = reload_hold(&st->config);

	review_answer_init(&ans);
	if (unread)
		review_deny_prefix(&unread->prefix, unread->code,
				   unread->message, &ans);
	else
		review_handlen_with(&cfg->cfg, body, len, &opt, &ans);
	latency = httpd_now_ns() - started_ns;
	metrics_observe(&st->metrics, ans.outcome, latency);
	metrics_count_guards(&st->metrics, &ans.hits);

	if (ans.http_status == 200) {
		log_decision(&ans, latency);
	} else if (ans.http_status < 500) {
		if (log_verbosity >= 1)
			log_fields(LOG_INFO, "request refused",
				   (struct log_field[]){
					   LOG_NUM("status", ans.http_status),
					   LOG_STR("reason", ans.body),
					   LOG_NUM("latency_us", latency / 1000) },
				   3);
	} else {
		log_fields(LOG_ERROR, "request failed",
			   (struct log_field[]){
				   LOG_NUM("status", ans.http_status),
				   LOG_STR("reason", ans.body ? ans.body
							       : "out of memory") },
			   2);
	}
	reply->status = (unsigned)ans.http_status;
	reply->content_type = ans.content_type;
	reply->body = ans.body;
	reply->len = ans.body_len;
	ans.body = NULL;
	review_answer_release(&ans);
	reload_unhold(cfg); /* ans.profile pointed into it */
}

static void on_review(void *arg, const char *body, size_t len,
		      uint64_t started_ns, struct httpd_reply *reply)
{
	answer_review(arg, body, len, started_ns, reply, false, NULL);
}

static void on_validate(void *arg, const char *body, size_t len,
			uint64_t started_ns, struct httpd_reply *reply)
{
	answer_review(arg, body, len, started_ns, reply, true, NULL);
}

/*
 * A body the server did not keep (over REVIEW_BODY_MAX, or no memory for
 * it): when its first bytes are those of an AdmissionReview, a denial
 * with the size; otherwise nothing, and the server answers 413 or 503.
 */
static void on_unread(void *arg, enum httpd_unread why, const char *prefix,
		      size_t len, uint64_t size, uint64_t started_ns,
		      struct httpd_reply *reply)
{
	struct unread u;

	if (review_prefix_scann(prefix, len, &u.prefix))
		return;
	u.code = why == HTTPD_UNREAD_TOO_LARGE ? 413 : 503;
	if (why == HTTPD_UNREAD_TOO_LARGE)
		snprintf(u.message, sizeof(u.message),
			 "the request body of %llu bytes is over the webhook's limit of %zu bytes",
			 (unsigned long long)size, REVIEW_BODY_MAX);
	else
		snprintf(u.message, sizeof(u.message),
			 "the webhook has no memory for a request body of %llu bytes now; try again",
			 (unsigned long long)size);
	answer_review(arg, NULL, 0, started_ns, reply, false, &u);
}

/* A request refused by the server (413, 503, 403): counted as an error. */
static void on_refused(void *arg, unsigned status, const char *reason,
		       uint64_t started_ns)
{
	struct serve_state *st = arg;

	(void)status;
	(void)reason;
	metrics_observe(&st->metrics, REVIEW_ERROR,
			httpd_now_ns() - started_ns);
}

static int on_metrics(void *arg, struct httpd *s, struct buf *out)
{
	struct serve_state *st = arg;
	struct metrics_listener conns[2] = {
		{ httpd_listener_name(HTTPD_LISTENER_TLS), { { 0 }, 0, 0 } },
		{ httpd_listener_name(HTTPD_LISTENER_METRICS), { { 0 }, 0, 0 } },
	};

	httpd_conn_stats(s, HTTPD_LISTENER_TLS, &conns[0].stats);
	httpd_conn_stats(s, HTTPD_LISTENER_METRICS, &conns[1].stats);
	if (metrics_render(&st->metrics, httpd_in_flight(s), out))
		return -1;
	return metrics_render_connections(conns, 2, out);
}

/* --- certificates -------------------------------------------------------- */

static void log_certificate(const char *msg, const struct certs_info *info)
{
	char when[40];

	text_utc_time(info->not_after, when, sizeof(when));
	log_fields(LOG_INFO, msg,
		   (struct log_field[]){ LOG_STR("subject", info->subject),
					 LOG_STR("serial", info->serial),
					 LOG_STR("not_after", when),
					 LOG_STR("sha256", info->sha256) },
		   4);
}

static void poll_certificates(struct serve_state *st)
{
	struct certs_info info;
	char err[512];

	switch (certs_poll(&st->certs, &info, err, sizeof(err))) {
	case CERTS_SAME:
		break;
	case CERTS_RELOADED:
		metrics_set_cert_not_after(&st->metrics,
					   certs_not_after(&st->certs));
		metrics_count_reload(&st->metrics, true);
		log_certificate("certificate reloaded", &info);
		break;
	case CERTS_REFUSED:
		metrics_count_reload(&st->metrics, false);
		log_fields(LOG_ERROR,
			   "certificate reload refused, the current certificate keeps serving",
			   (struct log_field[]){ LOG_STR("reason", err) }, 1);
		break;
	}
}

/* --- the config file ----------------------------------------------------- */

/* A warning naming the families of HAMi's file that the config file's own
 * devices left out (config.h, hami_dropped), if any. */
static void warn_hami_dropped(const struct config *cfg)
{
	if (cfg->hami_dropped)
		log_fields(LOG_WARN,
			   "families of HAMi's device config left out: they share a name or a resource name with a family of the config file",
			   (struct log_field[]){
				   LOG_STR("families", cfg->hami_dropped) },
			   1);
}

static void poll_config(struct serve_state *st, bool now)
{
	const struct reload_config *cfg;
	char err[700];

	switch (reload_poll(&st->config, now, err, sizeof(err))) {
	case RELOAD_SAME:
		break;
	case RELOAD_DONE:
		cfg = reload_hold(&st->config);
		metrics_count_config_reload(&st->metrics, true);
		metrics_set_config_sha256(&st->metrics, cfg->sha256);
		log_fields(LOG_INFO, "config reloaded",
			   (struct log_field[]){
				   LOG_STR("file", st->config.source->path ?
						   st->config.source->path : ""),
				   LOG_STR("sha256", cfg->sha256),
				   LOG_NUM("profiles", cfg->cfg.nprofiles),
				   LOG_STR("hamiDeviceConfig",
					   st->config.source->hami_path ?
					   st->config.source->hami_path : "") },
			   4);
		warn_hami_dropped(&cfg->cfg);
		reload_unhold(cfg);
		break;
	case RELOAD_REFUSED:
		metrics_count_config_reload(&st->metrics, false);
		log_fields(LOG_ERROR,
			   "config reload refused, the current config keeps serving",
			   (struct log_field[]){ LOG_STR("reason", err) }, 1);
		break;
	}
}

/* --- the run loop -------------------------------------------------------- */

/*
 * Reports a server that did not start, naming the flag of the address it
 * is about.  Returns the exit status: 2 for an address given wrong, 1 for
 * a failure at run time (address in use, out of memory...).
 */
static int start_failed(const struct httpd_error *e)
{
	const char *flag = e->listener == HTTPD_LISTENER_TLS ? "--listen" :
			   e->listener == HTTPD_LISTENER_METRICS ?
			   "--metrics-listen" : NULL;

	if (flag)
		fprintf(stderr, PROG ": %s: %s\n", flag, e->text);
	else
		fprintf(stderr, PROG ": %s\n", e->text);
	return e->status == HTTPD_BAD_ADDRESS ? 2 : 1;
}

/*
 * Waits for a signal of set for at most ns nanoseconds.  Returns the
 * signal, or 0 on time out.
 */
static int wait_signal(const sigset_t *set, uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000u),
			       (long)(ns % 1000000000u) };
	int sig = sigtimedwait(set, NULL, &ts);

	return sig > 0 ? sig : 0;
}

/*
 * The --shutdown-delay after the first SIGTERM or SIGINT: /readyz answers
 * 503 while everything else is served, and the certificate and config
 * files are still followed, for delay_s seconds or until another signal
 * comes at least a second after the first.
 */
static void delay_shutdown(struct serve_state *st, struct httpd *srv,
			   const sigset_t *set, unsigned delay_s)
{
	uint64_t start = httpd_now_ns(), end, next_poll = start + POLL_NS;

	if (!delay_s)
		return;
	end = start + (uint64_t)delay_s * 1000000000ull;
	httpd_unready(srv);
	log_info("shutting down in %u s: /readyz answers 503 meanwhile",
		 delay_s);
	for (;;) {
		uint64_t now = httpd_now_ns(), until;
		int sig;

		if (now >= end)
			return;
		until = next_poll < end ? next_poll : end;
		sig = wait_signal(set, until > now ? until - now : 0);
		if ((sig == SIGTERM || sig == SIGINT) &&
		    httpd_now_ns() - start >= FORCE_AFTER_NS)
			return;
		if (httpd_now_ns() >= next_poll) {
			poll_certificates(st);
			poll_config(st, false);
			next_poll = httpd_now_ns() + POLL_NS;
		}
	}
}

/*
 * Stops accepting, lets the requests in flight finish (for at most
 * DRAIN_NS, or until another SIGTERM or SIGINT comes at least a second
 * after the first: Ctrl-C under a wrapper script may arrive twice at
 * once), then stops the server.  Returns 0 when nothing was cut short, 1
 * otherwise.
 */
static int drain(struct httpd *srv, const sigset_t *set)
{
	uint64_t start = httpd_now_ns(), deadline = start + DRAIN_NS;
	long left = httpd_in_flight(srv);
	int status = 0;

	log_info("shutting down: %ld admission requests in flight", left);
	httpd_drain(srv);
	while ((left = httpd_in_flight(srv)) > 0) {
		int sig;

		if (httpd_now_ns() >= deadline) {
			log_warn("shutting down with %ld admission requests unfinished after %llu s",
				 left, DRAIN_NS / 1000000000ull);
			status = 1;
			break;
		}
		sig = wait_signal(set, 20000000u);
		if ((sig == SIGTERM || sig == SIGINT) &&
		    httpd_now_ns() - start >= FORCE_AFTER_NS) {
			log_warn("second signal: shutting down with %ld admission requests unfinished",
				 left);
			status = 1;
			break;
		}
	}
	httpd_stop(srv);
	return status;
}

int cmd_serve_run(struct config *cfg, const struct cmd_serve_options *o)
{
	struct serve_state *st;
	struct httpd_config sc;
	struct httpd_error herr;
	struct httpd *srv = NULL;
	struct certs_info info;
	sigset_t set, old;
	struct sigaction ign;
	uint64_t next_poll;
	char err[600], *client_ca = NULL;
	char priorities[TLSCONF_PRIORITY_MAX];
	int status;

	if (!o->tls_cert_file || !o->tls_private_key_file) {
		fprintf(stderr, PROG ": serve: %s is required\n",
			!o->tls_cert_file ? "--tls-cert-file"
					  : "--tls-private-key-file");
		return 2;
	}
	if (tlsconf_priority(o->tls_min_version, o->tls_cipher_suites,
			     priorities, err, sizeof(err))) {
		fprintf(stderr, PROG ": %s\n", err);
		return 2;
	}
	log_setup(o->log_json, o->verbosity);
	/*
	 * Signals go to this thread only, through sigtimedwait(); blocked
	 * from here on, so that a SIGTERM during the start is not lost.
	 */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	memset(&ign, 0, sizeof(ign));
	ign.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &ign, NULL);
	st = calloc(1, sizeof(*st));
	if (!st) {
		fprintf(stderr, PROG ": out of memory\n");
		status = 1;
		goto out;
	}
	metrics_init(&st->metrics);
	if (reload_init(&st->config, cfg, o->config_sha256,
			o->config_source)) {
		fprintf(stderr, PROG ": out of memory\n");
		free(st);
		st = NULL;
		status = 1;
		goto out;
	}
	metrics_set_config_sha256(&st->metrics,
				  o->config_sha256 ? o->config_sha256 : "");
	if (certs_init(&st->certs, o->tls_cert_file, o->tls_private_key_file,
		       &info, err, sizeof(err))) {
		fprintf(stderr,
			PROG ": --tls-cert-file, --tls-private-key-file: %s\n",
			err);
		status = 2;
		goto out;
	}
	metrics_set_cert_not_after(&st->metrics, info.not_after);
	if (o->tls_client_ca_file &&
	    certs_load_ca(o->tls_client_ca_file, &client_ca, err, sizeof(err))) {
		fprintf(stderr, PROG ": --tls-client-ca-file: %s\n", err);
		status = 2;
		goto out;
	}

	memset(&sc, 0, sizeof(sc));
	sc.listen = o->listen;
	sc.metrics_listen = o->metrics_listen;
	sc.certs = &st->certs;
	sc.client_ca = client_ca;
	sc.tls_priorities = priorities;
	sc.body_max = REVIEW_BODY_MAX;
	sc.body_memory = BODY_MEMORY;
	sc.handle = on_review;
	sc.validate = on_validate;
	sc.unread = on_unread;
	sc.refused = on_refused;
	sc.metrics = on_metrics;
	sc.arg = st;
	if (httpd_start(&sc, &srv, &herr)) {
		status = start_failed(&herr);
		goto out;
	}
	log_fields(LOG_INFO, "serving",
		   (struct log_field[]){
			   LOG_STR("listen", o->listen),
			   LOG_STR("metrics_listen", o->metrics_listen),
			   LOG_STR("client_ca", o->tls_client_ca_file ?
						o->tls_client_ca_file : ""),
			   LOG_STR("tls_priorities", priorities),
			   LOG_STR("version", version_release()),
			   LOG_STR("revision", version_revision()) },
		   6);
	log_certificate("certificate loaded", &info);
	{
		const struct reload_config *held = reload_hold(&st->config);

		warn_hami_dropped(&held->cfg);
		reload_unhold(held);
	}
	if (info.not_after <= (int64_t)time(NULL))
		log_warn("the serving certificate has expired; waiting for a new one in %s",
			 o->tls_cert_file);

	next_poll = httpd_now_ns() + POLL_NS;
	for (;;) {
		uint64_t now = httpd_now_ns();
		int sig = wait_signal(&set, next_poll > now ? next_poll - now : 0);

		if (sig == SIGTERM || sig == SIGINT)
			break;
		if (sig == SIGHUP || httpd_now_ns() >= next_poll) {
			poll_certificates(st);
			poll_config(st, sig == SIGHUP);
			next_poll = httpd_now_ns() + POLL_NS;
		}
	}
	delay_shutdown(st, srv, &set, o->shutdown_delay);
	status = drain(srv, &set);
	srv = NULL;
	log_info("stopped");
out:
	httpd_stop(srv);
	free(client_ca);
	if (st) {
		certs_release(&st->certs); /* also after a failed certs_init() */
		reload_release(&st->config);
		metrics_release(&st->metrics);
		free(st);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return status;
}
