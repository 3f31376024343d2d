/*
 * util.c - JSON output and base64.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "util.h"

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
