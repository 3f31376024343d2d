/*
 * curlbody.h - what the two HTTPS clients (check, and the Kubernetes
 * client of certs) share: a response body that libcurl writes into,
 * capped, and the strict transport settings.
 */
#ifndef CURLBODY_H
#define CURLBODY_H

#include <stdbool.h>
#include <stddef.h>

/*
 * A body of at most max bytes, kept NUL-terminated; data is malloc'd.
 * With wipe (a body that may hold a private key), growing it copies into
 * a new buffer and zeroes the old one before it is freed, so no copy is
 * left in freed memory; curlbody_release() zeroes the last one.
 */
struct curlbody {
	char *data;
	size_t len;
	size_t max;
	bool too_long; /* the sender went past max: the transfer was cut */
	bool wipe;
};

#define CURLBODY_INIT(max) { NULL, 0, (max), false, false }
#define CURLBODY_INIT_WIPE(max) { NULL, 0, (max), false, true }

/*
 * A CURLOPT_WRITEFUNCTION for a struct curlbody (CURLOPT_WRITEDATA).  It
 * stops the transfer (CURLE_WRITE_ERROR) past b->max bytes, with
 * b->too_long set, or when memory runs out.
 */
size_t curlbody_take(char *ptr, size_t size, size_t n, void *b);

/*
 * Sets on h the transport both clients use: https only, TLS 1.2 or
 * later, the peer and its host name verified against ca_file alone (no
 * system store), no redirect followed, no signal, the whole request
 * within timeout_s seconds.  Returns 0, or libcurl's error.
 */
int curlbody_https(void *h, const char *ca_file, long timeout_s);

/* Frees b->data (zeroed first with b->wipe); b is empty afterwards. */
void curlbody_release(struct curlbody *b);

#endif /* CURLBODY_H */
