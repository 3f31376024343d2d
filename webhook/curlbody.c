/*
 * curlbody.c - a response body that libcurl writes into (curlbody.h).
 */
#include <stdlib.h>
#include <string.h>

#include "curlbody.h"

size_t curlbody_take(char *ptr, size_t size, size_t n, void *arg)
{
	struct curlbody *b = arg;
	size_t len = size * n;
	char *p;

	if (len > b->max - b->len) {
		b->too_long = true;
		return 0;
	}
	p = realloc(b->data, b->len + len + 1);
	if (!p)
		return 0;
	b->data = p;
	memcpy(b->data + b->len, ptr, len);
	b->len += len;
	b->data[b->len] = '\0';
	return len;
}
