/*
 * metrics.h - the counters of `serve`, and their Prometheus text form.
 *
 * Every update is one relaxed atomic operation, so the request path takes
 * no lock.  A scrape reads each value once; the histogram's _count is the
 * sum of the bucket counts read by that scrape, so the +Inf bucket always
 * equals _count.
 */
#ifndef METRICS_H
#define METRICS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "buf.h"
#include "conns.h"
#include "review.h"

#define METRICS_OUTCOMES 4      /* enum review_outcome */
#define METRICS_BUCKETS 17      /* 16 bounds, 10 us .. 1 s, then +Inf */

struct metrics {
	atomic_ullong requests[METRICS_OUTCOMES];
	atomic_ullong buckets[METRICS_BUCKETS]; /* not cumulative */
	atomic_ullong latency_sum_ns;
	atomic_llong cert_not_after;            /* Unix seconds */
	atomic_ullong reloads[2];               /* refused, done */
	atomic_ullong guard_hits[GUARD_NKINDS][GUARD_NACTIONS];
	atomic_ullong config_reloads[2]; /* refused, done */
	pthread_mutex_t lock;            /* guards config_sha256 */
	char config_sha256[65];
};

void metrics_init(struct metrics *m);

/* Counts one admission request and its latency in nanoseconds. */
void metrics_observe(struct metrics *m, enum review_outcome outcome,
		     uint64_t latency_ns);

/* Adds one review's guard hits (vgpu_webhook_guard_hits_total). */
void metrics_count_guards(struct metrics *m, const struct guard_hits *hits);

/* Sets the expiry gauge: notAfter of the serving certificate. */
void metrics_set_cert_not_after(struct metrics *m, int64_t not_after);

/* Counts one certificate reload, done or refused. */
void metrics_count_reload(struct metrics *m, bool done);

/* A config reload done or refused, and the SHA-256 of the config in force
 * ("" without a config file). */
void metrics_count_config_reload(struct metrics *m, bool done);
void metrics_set_config_sha256(struct metrics *m, const char *sha256);

/* Frees what metrics_init() made. */
void metrics_release(struct metrics *m);

/*
 * Appends the Prometheus text exposition (format 0.0.4) of m to out, with
 * in_flight as the in-flight gauge.  Returns 0, or -1 when out failed to
 * grow.
 */
int metrics_render(struct metrics *m, long in_flight, struct buf *out)
	__attribute__((warn_unused_result));

/* The connections of one listener, for metrics_render_connections(). */
struct metrics_listener {
	const char *name; /* the label: "https", "metrics" */
	struct conns_stats stats;
};

/*
 * Appends vgpu_webhook_connections_closed_total{listener,reason} (every
 * reason of every listener, from zero) and vgpu_webhook_connections_open
 * {listener} for the n listeners of l.  Returns 0, or -1 when out failed
 * to grow.
 */
int metrics_render_connections(const struct metrics_listener *l, size_t n,
			       struct buf *out)
	__attribute__((warn_unused_result));

#endif /* METRICS_H */
