/*
 * handshake.c - new-connection load for the benchmark: every request on a
 * fresh TCP connection with a full TLS handshake.
 *
 *   handshake [-c CONNS] [-d SECONDS] [-b BODY] [-u PATH] HOST PORT
 *
 * CONNS threads each loop until the deadline: connect, handshake, send one
 * request with "Connection: close" (a POST of the file BODY, or a GET
 * without -b), read the answer to the end, close.  Sessions are never
 * resumed (no tickets, no session cache), unlike wrk, which resumes the
 * session of the previous connection.  The cipher suites are offered in the
 * order of the API server's Go client.  On the last line, one summary:
 *
 *   RESULT requests=N duration_us=D rps=R errors=E p50_us=A p99_us=B
 *          proto=TLSv1.3 cipher=... group=...
 *
 * (on one line).  An error is a failed connect or handshake, or an answer
 * other than HTTP 200.  Exit status 0, or 1 for bad usage or setup.
 */
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <openssl/err.h>
#include <openssl/objects.h>
#include <openssl/ssl.h>

#include "file.h"

#define MAX_THREADS 256
#define MAX_SAMPLES 65536 /* latencies kept per thread; the rest counted */

struct worker {
	pthread_t thread;
	SSL_CTX *ctx;
	const struct addrinfo *addr;
	const char *request;
	size_t request_len;
	uint64_t deadline_ns;
	uint64_t requests;
	uint64_t errors;
	uint32_t *samples; /* latency in microseconds */
	size_t nsamples;
	char proto[32], cipher[64], group[32];
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * Reads the answer on ssl to the end of the connection.  Returns 0 when it
 * starts with an HTTP 200 status line and -1 otherwise.
 */
static int read_answer(SSL *ssl)
{
	char buf[16384];
	char head[16];
	size_t have = 0;
	int n;

	while ((n = SSL_read(ssl, buf, sizeof(buf))) > 0) {
		size_t take = (size_t)n;

		if (have < sizeof(head)) {
			if (take > sizeof(head) - have)
				take = sizeof(head) - have;
			memcpy(head + have, buf, take);
			have += take;
		}
	}
	/* A close without close_notify still ends a Connection: close answer. */
	if (have < 12)
		return -1;
	return !memcmp(head, "HTTP/1.1 200", 12) ||
	       !memcmp(head, "HTTP/1.0 200", 12) ? 0 : -1;
}

/*
 * One request on a new connection.  Returns 0 on success; on the first
 * success of the thread, records the negotiated protocol, cipher and group.
 */
static int one_request(struct worker *w)
{
	const struct addrinfo *ai = w->addr;
	int fd, one = 1, rc = -1;
	SSL *ssl = NULL;
	size_t sent = 0;

	fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
	if (fd < 0)
		return -1;
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) ||
	    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)))
		goto out;
	ssl = SSL_new(w->ctx);
	if (!ssl || !SSL_set_fd(ssl, fd) || SSL_connect(ssl) != 1)
		goto out;
	while (sent < w->request_len) {
		int n = SSL_write(ssl, w->request + sent,
				  (int)(w->request_len - sent));

		if (n <= 0)
			goto out;
		sent += (size_t)n;
	}
	if (read_answer(ssl))
		goto out;
	if (!w->proto[0]) {
		int nid = (int)SSL_get_negotiated_group(ssl);
		const char *g = nid > 0 ? OBJ_nid2sn(nid) : NULL;

		snprintf(w->proto, sizeof(w->proto), "%s", SSL_get_version(ssl));
		snprintf(w->cipher, sizeof(w->cipher), "%s",
			 SSL_get_cipher_name(ssl));
		snprintf(w->group, sizeof(w->group), "%s", g ? g : "none");
	}
	rc = 0;
out:
	if (ssl) {
		SSL_shutdown(ssl);
		SSL_free(ssl);
	}
	close(fd);
	ERR_clear_error();
	return rc;
}

static void *worker_run(void *arg)
{
	struct worker *w = arg;

	while (now_ns() < w->deadline_ns) {
		uint64_t t0 = now_ns();

		if (one_request(w)) {
			w->errors++;
			continue;
		}
		w->requests++;
		if (w->nsamples < MAX_SAMPLES)
			w->samples[w->nsamples++] =
				(uint32_t)((now_ns() - t0) / 1000);
	}
	return NULL;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/* Builds the request text; returns a malloc'd string or NULL. */
static char *make_request(const char *host, const char *port, const char *path,
			  const char *body, size_t body_len, size_t *len)
{
	char head[512];
	int n;
	char *req;

	if (body)
		n = snprintf(head, sizeof(head),
			     "POST %s HTTP/1.1\r\nHost: %s:%s\r\n"
			     "Content-Type: application/json\r\n"
			     "Content-Length: %zu\r\nConnection: close\r\n\r\n",
			     path, host, port, body_len);
	else
		n = snprintf(head, sizeof(head),
			     "GET %s HTTP/1.1\r\nHost: %s:%s\r\n"
			     "Connection: close\r\n\r\n", path, host, port);
	if (n < 0 || (size_t)n >= sizeof(head))
		return NULL;
	if (body_len > SIZE_MAX - (size_t)n - 1)
		return NULL;
	req = malloc((size_t)n + body_len + 1);
	if (!req)
		return NULL;
	memcpy(req, head, (size_t)n);
	if (body)
		memcpy(req + n, body, body_len);
	*len = (size_t)n + body_len;
	req[*len] = '\0';
	return req;
}

static int usage(void)
{
	fprintf(stderr, "usage: handshake [-c CONNS] [-d SECONDS] [-b BODY] "
			"[-u PATH] HOST PORT\n");
	return 1;
}

int main(int argc, char **argv)
{
	struct worker *workers = NULL;
	struct addrinfo hints = { 0 }, *addr = NULL;
	const char *body_file = NULL, *path = NULL;
	char *body = NULL, *request = NULL, *end, err[256];
	uint32_t *all = NULL;
	size_t body_len = 0, request_len = 0, total = 0, i;
	uint64_t start, requests = 0, errors = 0, elapsed;
	long conns = 16, seconds = 3;
	SSL_CTX *ctx = NULL;
	int opt, started = 0, status = 1;

	while ((opt = getopt(argc, argv, "c:d:b:u:")) != -1) {
		switch (opt) {
		case 'c':
			conns = strtol(optarg, &end, 10);
			if (*end || conns < 1 || conns > MAX_THREADS)
				return usage();
			break;
		case 'd':
			seconds = strtol(optarg, &end, 10);
			if (*end || seconds < 1 || seconds > 600)
				return usage();
			break;
		case 'b':
			body_file = optarg;
			break;
		case 'u':
			path = optarg;
			break;
		default:
			return usage();
		}
	}
	if (argc - optind != 2)
		return usage();
	if (!path)
		path = body_file ? "/mutate" : "/healthz";
	signal(SIGPIPE, SIG_IGN);

	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	if (getaddrinfo(argv[optind], argv[optind + 1], &hints, &addr)) {
		fprintf(stderr, "handshake: cannot resolve %s\n", argv[optind]);
		goto out;
	}
	if (body_file && file_read(body_file, SIZE_MAX, &body, &body_len, err,
				   sizeof(err))) {
		fprintf(stderr, "handshake: cannot read '%s'\n", body_file);
		goto out;
	}
	request = make_request(argv[optind], argv[optind + 1], path, body,
			       body_len, &request_len);
	ctx = SSL_CTX_new(TLS_client_method());
	workers = calloc((size_t)conns, sizeof(*workers));
	if (!request || !ctx || !workers) {
		fprintf(stderr, "handshake: out of memory\n");
		goto out;
	}
	/*
	 * Offer the TLS 1.3 suites in the order of Go's client on hardware with
	 * AES, as the API server does: OpenSSL's own order starts with
	 * AES-256/SHA-384, which a server that follows the client's order
	 * would pay for in every handshake.
	 */
	if (!SSL_CTX_set_ciphersuites(ctx, "TLS_AES_128_GCM_SHA256:"
				      "TLS_CHACHA20_POLY1305_SHA256:"
				      "TLS_AES_256_GCM_SHA384")) {
		fprintf(stderr, "handshake: cannot set the cipher suites\n");
		goto out;
	}
	/* Every connection pays a full handshake. */
	SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);

	start = now_ns();
	for (i = 0; i < (size_t)conns; i++) {
		struct worker *w = &workers[i];

		w->ctx = ctx;
		w->addr = addr;
		w->request = request;
		w->request_len = request_len;
		w->deadline_ns = start + (uint64_t)seconds * 1000000000u;
		w->samples = malloc(MAX_SAMPLES * sizeof(*w->samples));
		if (!w->samples ||
		    pthread_create(&w->thread, NULL, worker_run, w)) {
			fprintf(stderr, "handshake: cannot start thread\n");
			free(w->samples);
			w->samples = NULL;
			break;
		}
		started++;
	}
	for (i = 0; i < (size_t)started; i++)
		pthread_join(workers[i].thread, NULL);
	elapsed = now_ns() - start;
	if (started < conns)
		goto out;

	for (i = 0; i < (size_t)conns; i++) {
		requests += workers[i].requests;
		errors += workers[i].errors;
		total += workers[i].nsamples;
	}
	all = malloc((total ? total : 1) * sizeof(*all));
	if (!all)
		goto out;
	total = 0;
	for (i = 0; i < (size_t)conns; i++) {
		memcpy(all + total, workers[i].samples,
		       workers[i].nsamples * sizeof(*all));
		total += workers[i].nsamples;
	}
	qsort(all, total, sizeof(*all), cmp_u32);
	printf("RESULT requests=%llu duration_us=%llu rps=%.1f errors=%llu "
	       "p50_us=%u p99_us=%u proto=%s cipher=%s group=%s\n",
	       (unsigned long long)requests,
	       (unsigned long long)(elapsed / 1000),
	       (double)requests * 1e9 / (double)elapsed,
	       (unsigned long long)errors, total ? all[total / 2] : 0,
	       total ? all[total * 99 / 100] : 0,
	       workers[0].proto[0] ? workers[0].proto : "none",
	       workers[0].cipher[0] ? workers[0].cipher : "none",
	       workers[0].group[0] ? workers[0].group : "none");
	status = 0;
out:
	if (workers)
		for (i = 0; i < (size_t)conns; i++)
			free(workers[i].samples);
	free(all);
	free(workers);
	SSL_CTX_free(ctx);
	free(request);
	free(body);
	if (addr)
		freeaddrinfo(addr);
	return status;
}
