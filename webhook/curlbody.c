/*
 * curlbody.c - a response body that libcurl writes into (curlbody.h).
 */
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include <gnutls/gnutls.h>

#include "curlbody.h"

/* Grows b->data to size bytes: realloc, or with b->wipe a new buffer and
 * the old one zeroed and freed.  Returns 0, or -1 (b unchanged). */
static int grow(struct curlbody *b, size_t size)
{
	char *p;

	if (!b->wipe) {
		p = realloc(b->data, size);
		if (!p)
			return -1;
		b->data = p;
		return 0;
	}
	p = malloc(size);
	if (!p)
		return -1;
	if (b->data) {
		memcpy(p, b->data, b->len + 1);
		gnutls_memset(b->data, 0, b->len + 1);
		free(b->data);
	}
	b->data = p;
	return 0;
}

size_t curlbody_take(char *ptr, size_t size, size_t n, void *arg)
{
	struct curlbody *b = arg;
	size_t len = size * n;

	if (len > b->max - b->len) {
		b->too_long = true;
		return 0;
	}
	if (grow(b, b->len + len + 1))
		return 0;
	memcpy(b->data + b->len, ptr, len);
	b->len += len;
	b->data[b->len] = '\0';
	return len;
}

void curlbody_release(struct curlbody *b)
{
	if (b->data && b->wipe)
		gnutls_memset(b->data, 0, b->len + 1);
	free(b->data);
	b->data = NULL;
	b->len = 0;
}

int curlbody_https(void *handle, const char *ca_file, long timeout_s)
{
	CURL *h = handle;
	CURLcode c;

	if ((c = curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "https")) ||
	    (c = curl_easy_setopt(h, CURLOPT_SSLVERSION,
				  (long)CURL_SSLVERSION_TLSv1_2)) ||
	    (c = curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L)) ||
	    (c = curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L)) ||
	    (c = curl_easy_setopt(h, CURLOPT_CAINFO, ca_file)) ||
	    (c = curl_easy_setopt(h, CURLOPT_CAPATH, NULL)) ||
	    (c = curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_s * 1000)) ||
	    (c = curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L)) ||
	    (c = curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L)))
		return (int)c;
	return 0;
}
