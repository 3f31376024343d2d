/*
 * metrics.c - lock-free counters and the Prometheus text format.
 */
#include <stddef.h>
#include <stdio.h>

#include "metrics.h"
#include "version.h"

/* Upper bounds of the latency buckets, in nanoseconds and as printed. */
static const struct {
	uint64_t ns;
	const char *le;
} bounds[METRICS_BUCKETS - 1] = {
	{ 10000, "1e-05" },      { 25000, "2.5e-05" },
	{ 50000, "5e-05" },      { 100000, "0.0001" },
	{ 250000, "0.00025" },   { 500000, "0.0005" },
	{ 1000000, "0.001" },    { 2500000, "0.0025" },
	{ 5000000, "0.005" },    { 10000000, "0.01" },
	{ 25000000, "0.025" },   { 50000000, "0.05" },
	{ 100000000, "0.1" },    { 250000000, "0.25" },
	{ 500000000, "0.5" },    { 1000000000, "1" },
};

void metrics_init(struct metrics *m)
{
	size_t i;

	for (i = 0; i < METRICS_OUTCOMES; i++)
		atomic_init(&m->requests[i], 0);
	for (i = 0; i < METRICS_BUCKETS; i++)
		atomic_init(&m->buckets[i], 0);
	atomic_init(&m->latency_sum_ns, 0);
	atomic_init(&m->cert_not_after, 0);
	atomic_init(&m->reloads[0], 0);
	atomic_init(&m->reloads[1], 0);
	atomic_init(&m->config_reloads[0], 0);
	atomic_init(&m->config_reloads[1], 0);
	pthread_mutex_init(&m->lock, NULL);
	m->config_sha256[0] = '\0';
	for (i = 0; i < GUARD_NKINDS * GUARD_NACTIONS; i++)
		atomic_init(&m->guard_hits[i / GUARD_NACTIONS]
					  [i % GUARD_NACTIONS], 0);
}

void metrics_count_guards(struct metrics *m, const struct guard_hits *hits)
{
	size_t g, a;

	for (g = 0; g < GUARD_NKINDS; g++)
		for (a = 0; a < GUARD_NACTIONS; a++)
			if (hits->count[g][a])
				atomic_fetch_add_explicit(&m->guard_hits[g][a],
							  hits->count[g][a],
							  memory_order_relaxed);
}

void metrics_observe(struct metrics *m, enum review_outcome outcome,
		     uint64_t latency_ns)
{
	size_t b = 0;

	if ((unsigned)outcome >= METRICS_OUTCOMES)
		outcome = REVIEW_ERROR;
	while (b < METRICS_BUCKETS - 1 && latency_ns > bounds[b].ns)
		b++;
	atomic_fetch_add_explicit(&m->requests[outcome], 1,
				  memory_order_relaxed);
	atomic_fetch_add_explicit(&m->buckets[b], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&m->latency_sum_ns, latency_ns,
				  memory_order_relaxed);
}

void metrics_set_cert_not_after(struct metrics *m, int64_t not_after)
{
	atomic_store_explicit(&m->cert_not_after, not_after,
			      memory_order_relaxed);
}

void metrics_count_reload(struct metrics *m, bool done)
{
	atomic_fetch_add_explicit(&m->reloads[done ? 1 : 0], 1,
				  memory_order_relaxed);
}

void metrics_count_config_reload(struct metrics *m, bool done)
{
	atomic_fetch_add_explicit(&m->config_reloads[done ? 1 : 0], 1,
				  memory_order_relaxed);
}

void metrics_set_config_sha256(struct metrics *m, const char *sha256)
{
	pthread_mutex_lock(&m->lock);
	snprintf(m->config_sha256, sizeof(m->config_sha256), "%s", sha256);
	pthread_mutex_unlock(&m->lock);
}

void metrics_release(struct metrics *m)
{
	pthread_mutex_destroy(&m->lock);
}

static unsigned long long load(atomic_ullong *v)
{
	return atomic_load_explicit(v, memory_order_relaxed);
}

/* A label value of the text format: \\, \" and \n escaped. */
static void add_label_value(struct buf *out, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			buf_addf(out, "\\%c", *s);
		else if (*s == '\n')
			buf_add(out, "\\n");
		else
			buf_addf(out, "%c", *s);
	}
}

/* vgpu_webhook_build_info: the release and the source revision. */
static void render_build_info(struct buf *out)
{
	buf_add(out,
		"# HELP vgpu_webhook_build_info The build that serves: its release and source revision.\n"
		"# TYPE vgpu_webhook_build_info gauge\n"
		"vgpu_webhook_build_info{version=\"");
	add_label_value(out, version_release());
	buf_add(out, "\",revision=\"");
	add_label_value(out, version_revision());
	buf_add(out, "\"} 1\n");
}

int metrics_render(struct metrics *m, long in_flight, struct buf *out)
{
	unsigned long long cumulative = 0, sum;
	size_t i;

	buf_add(out,
		"# HELP vgpu_webhook_requests_total Admission requests answered, by outcome.\n"
		"# TYPE vgpu_webhook_requests_total counter\n");
	for (i = 0; i < METRICS_OUTCOMES; i++)
		buf_addf(out, "vgpu_webhook_requests_total{outcome=\"%s\"} %llu\n",
			 review_outcome_name((enum review_outcome)i),
			 load(&m->requests[i]));

	buf_add(out,
		"# HELP vgpu_webhook_latency_seconds Time from the request headers to the answer.\n"
		"# TYPE vgpu_webhook_latency_seconds histogram\n");
	for (i = 0; i < METRICS_BUCKETS; i++) {
		cumulative += load(&m->buckets[i]);
		buf_addf(out, "vgpu_webhook_latency_seconds_bucket{le=\"%s\"} %llu\n",
			 i < METRICS_BUCKETS - 1 ? bounds[i].le : "+Inf",
			 cumulative);
	}
	sum = load(&m->latency_sum_ns);
	buf_addf(out, "vgpu_webhook_latency_seconds_sum %llu.%09llu\n",
		 sum / 1000000000ull, sum % 1000000000ull);
	buf_addf(out, "vgpu_webhook_latency_seconds_count %llu\n", cumulative);

	buf_addf(out,
		 "# HELP vgpu_webhook_requests_in_flight Admission requests being received or answered.\n"
		 "# TYPE vgpu_webhook_requests_in_flight gauge\n"
		 "vgpu_webhook_requests_in_flight %ld\n",
		 in_flight);

	buf_addf(out,
		 "# HELP vgpu_webhook_certificate_expiry_timestamp_seconds notAfter of the serving certificate, in Unix time.\n"
		 "# TYPE vgpu_webhook_certificate_expiry_timestamp_seconds gauge\n"
		 "vgpu_webhook_certificate_expiry_timestamp_seconds %lld\n",
		 (long long)atomic_load_explicit(&m->cert_not_after,
						 memory_order_relaxed));

	buf_addf(out,
		 "# HELP vgpu_webhook_certificate_reloads_total Certificate pairs found changed on disk, by result.\n"
		 "# TYPE vgpu_webhook_certificate_reloads_total counter\n"
		 "vgpu_webhook_certificate_reloads_total{result=\"done\"} %llu\n"
		 "vgpu_webhook_certificate_reloads_total{result=\"refused\"} %llu\n",
		 load(&m->reloads[1]), load(&m->reloads[0]));

	buf_addf(out,
		 "# HELP vgpu_webhook_config_reloads_total Config files found changed on disk, by result.\n"
		 "# TYPE vgpu_webhook_config_reloads_total counter\n"
		 "vgpu_webhook_config_reloads_total{result=\"done\"} %llu\n"
		 "vgpu_webhook_config_reloads_total{result=\"refused\"} %llu\n",
		 load(&m->config_reloads[1]), load(&m->config_reloads[0]));
	pthread_mutex_lock(&m->lock);
	buf_addf(out,
		 "# HELP vgpu_webhook_config_info The config in force: the SHA-256 of its file.\n"
		 "# TYPE vgpu_webhook_config_info gauge\n"
		 "vgpu_webhook_config_info{sha256=\"%s\"} 1\n",
		 m->config_sha256);
	pthread_mutex_unlock(&m->lock);

	buf_add(out,
		"# HELP vgpu_webhook_guard_hits_total Guarded annotation keys and env entries met, by guard and action.\n"
		"# TYPE vgpu_webhook_guard_hits_total counter\n");
	for (i = 0; i < GUARD_NKINDS * GUARD_NACTIONS; i++) {
		size_t g = i / GUARD_NACTIONS, a = i % GUARD_NACTIONS;

		buf_addf(out, "vgpu_webhook_guard_hits_total{guard=\"%s\",action=\"%s\"} %llu\n",
			 guard_kind_name((enum guard_kind)g),
			 guard_action_name((enum guard_action)a),
			 load(&m->guard_hits[g][a]));
	}
	render_build_info(out);
	return buf_failed(out) ? -1 : 0;
}

int metrics_render_connections(const struct metrics_listener *l, size_t n,
			       struct buf *out)
{
	size_t i, r;

	buf_add(out,
		"# HELP vgpu_webhook_connections_closed_total Connections closed by the server, by listener and reason.\n"
		"# TYPE vgpu_webhook_connections_closed_total counter\n");
	for (i = 0; i < n; i++)
		for (r = 0; r < CONNS_NREASONS; r++)
			buf_addf(out, "vgpu_webhook_connections_closed_total{listener=\"%s\",reason=\"%s\"} %llu\n",
				 l[i].name,
				 conns_reason_name((enum conns_reason)r),
				 l[i].stats.closed[r]);
	buf_add(out,
		"# HELP vgpu_webhook_connections_open Connections open, by listener.\n"
		"# TYPE vgpu_webhook_connections_open gauge\n");
	for (i = 0; i < n; i++)
		buf_addf(out, "vgpu_webhook_connections_open{listener=\"%s\"} %u\n",
			 l[i].name, l[i].stats.open);
	return buf_failed(out) ? -1 : 0;
}
