/*
 * util.c - masking, JSON output and base64.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "util.h"

/* The length of the UTF-8 sequence that starts with byte c (1 if invalid). */
static size_t utf8_len(unsigned char c)
{
	if (c >= 0xf0 && c < 0xf8)
		return 4;
	if (c >= 0xe0)
		return c < 0xf0 ? 3 : 1;
	if (c >= 0xc0)
		return 2;
	return 1;
}

static bool is_control(const unsigned char *p, size_t n)
{
	if (n == 1)
		return p[0] < 0x20 || p[0] == 0x7f;
	return n == 2 && p[0] == 0xc2 && p[1] >= 0x80 && p[1] < 0xa0;
}

size_t util_mask_cut(char *dst, size_t size, const char *s, size_t len,
		     size_t max_chars)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, o = 0, chars = 0, cut = 0;

	if (max_chars < 4)
		max_chars = 4;
	while (i < len) {
		size_t n = utf8_len(p[i]);

		if (n > len - i)
			break; /* an incomplete sequence at the end */
		if (is_control(p + i, n)) {
			i += n;
			continue;
		}
		if (chars == max_chars || o + n >= size) {
			o = cut;
			memcpy(dst + o, "...", 3);
			o += 3;
			break;
		}
		memcpy(dst + o, s + i, n);
		o += n;
		i += n;
		/* The last place where "..." and the NUL still fit. */
		if (++chars <= max_chars - 3 && o + 4 <= size)
			cut = o;
	}
	dst[o] = '\0';
	return o;
}

size_t util_utf8_sequence(const unsigned char *p, size_t n)
{
	unsigned c = p[0];
	size_t len, i;
	uint32_t v;

	if (c >= 0xC2 && c <= 0xDF) {
		len = 2;
		v = c & 0x1F;
	} else if (c >= 0xE0 && c <= 0xEF) {
		len = 3;
		v = c & 0x0F;
	} else if (c >= 0xF0 && c <= 0xF4) {
		len = 4;
		v = c & 0x07;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (i = 1; i < len; i++) {
		if ((p[i] & 0xC0) != 0x80)
			return 0;
		v = (v << 6) | (p[i] & 0x3F);
	}
	if ((len == 3 && (v < 0x800 || (v >= 0xD800 && v <= 0xDFFF))) ||
	    (len == 4 && (v < 0x10000 || v > 0x10FFFF)))
		return 0;
	return len;
}

const char *util_json_type(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	case JSON_STRING:
		return "a string";
	case JSON_INTEGER:
	case JSON_REAL:
		return "a number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "a boolean";
	default:
		return "null";
	}
}

void util_json_quote(struct buf *b, const char *s, size_t len)
{
	const char *run = s, *end = s + len;
	char esc[8];

	buf_addn(b, "\"", 1);
	for (; s < end; s++) {
		unsigned char c = (unsigned char)*s;

		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		buf_addn(b, run, (size_t)(s - run));
		run = s + 1;
		switch (c) {
		case '"': buf_addn(b, "\\\"", 2); break;
		case '\\': buf_addn(b, "\\\\", 2); break;
		case '\b': buf_addn(b, "\\b", 2); break;
		case '\f': buf_addn(b, "\\f", 2); break;
		case '\n': buf_addn(b, "\\n", 2); break;
		case '\r': buf_addn(b, "\\r", 2); break;
		case '\t': buf_addn(b, "\\t", 2); break;
		default:
			snprintf(esc, sizeof(esc), "\\u%04X", c);
			buf_addn(b, esc, 6);
			break;
		}
	}
	buf_addn(b, run, (size_t)(end - run));
	buf_addn(b, "\"", 1);
}

void util_json_dump(struct buf *b, const json_t *v)
{
	const char *key;
	json_t *item;
	size_t i;
	char *text;

	switch (json_typeof(v)) {
	case JSON_STRING:
		util_json_quote(b, json_string_value(v), json_string_length(v));
		return;
	case JSON_INTEGER:
		buf_addf(b, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		return;
	case JSON_TRUE:
		buf_add(b, "true");
		return;
	case JSON_FALSE:
		buf_add(b, "false");
		return;
	case JSON_NULL:
		buf_add(b, "null");
		return;
	case JSON_OBJECT:
		buf_addn(b, "{", 1);
		i = 0;
		json_object_foreach((json_t *)v, key, item) {
			if (i++)
				buf_addn(b, ",", 1);
			util_json_quote(b, key, strlen(key));
			buf_addn(b, ":", 1);
			util_json_dump(b, item);
		}
		buf_addn(b, "}", 1);
		return;
	case JSON_ARRAY:
		buf_addn(b, "[", 1);
		json_array_foreach(v, i, item) {
			if (i)
				buf_addn(b, ",", 1);
			util_json_dump(b, item);
		}
		buf_addn(b, "]", 1);
		return;
	default:
		/* Reals: jansson's own shortest form. */
		text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
		if (!text) {
			b->failed = true;
			return;
		}
		buf_add(b, text);
		arena_free(text);
		return;
	}
}

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
