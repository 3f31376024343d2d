/*
 * util.c - base64.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

char *util_base64(const void *data, size_t len, size_t *out_len)
{
	static const char table[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const unsigned char *in = data;
	size_t n, i, o = 0;
	char *out;

	if (len > (SIZE_MAX - 1) / 4 * 3 - 3)
		return NULL;
	n = (len + 2) / 3 * 4;
	out = malloc(n + 1);
	if (!out)
		return NULL;
	for (i = 0; i + 2 < len; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 |
			     in[i + 2];

		out[o++] = table[v >> 18];
		out[o++] = table[(v >> 12) & 63];
		out[o++] = table[(v >> 6) & 63];
		out[o++] = table[v & 63];
	}
	if (i < len) {
		uint32_t v = (uint32_t)in[i] << 16;

		if (i + 1 < len)
			v |= (uint32_t)in[i + 1] << 8;
		out[o++] = table[v >> 18];
		out[o++] = table[(v >> 12) & 63];
		out[o++] = i + 1 < len ? table[(v >> 6) & 63] : '=';
		out[o++] = '=';
	}
	out[o] = '\0';
	if (out_len)
		*out_len = o;
	return out;
}
