/*
 * patch.c - RFC 6902 operations: build, encode, apply.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonout.h"
#include "patch.h"
#include "text.h"

int patch_init(struct patch *p)
{
	p->ops = json_array();
	return p->ops ? 0 : -1;
}

void patch_release(struct patch *p)
{
	json_decref(p->ops);
	p->ops = NULL;
}

size_t patch_count(const struct patch *p)
{
	return json_array_size(p->ops);
}

int patch_push(struct patch *p, const char *op, const char *path,
	       json_t *value)
{
	json_t *o;
	bool remove = !strcmp(op, "remove");

	if (!value && !remove)
		return -1;
	/* By hand rather than json_pack(), which parses its format each
	 * time: a patch is built on every request. */
	o = json_object();
	if (!o || json_object_set_new_nocheck(o, "op", json_string(op)) ||
	    json_object_set_new_nocheck(o, "path", json_string(path))) {
		json_decref(o);
		json_decref(value);
		return -1;
	}
	if (!remove && json_object_set_new_nocheck(o, "value", value)) {
		json_decref(o);
		return -1;
	}
	return json_array_append_new(p->ops, o);
}

void patch_pointer_append(struct buf *b, const char *key)
{
	const char *s = key;

	buf_addn(b, "/", 1);
	for (;;) {
		size_t run = strcspn(s, "~/");

		buf_addn(b, s, run);
		s += run;
		if (!*s)
			break;
		buf_addn(b, *s == '~' ? "~0" : "~1", 2);
		s++;
	}
}

/*
 * The base64 (RFC 4648, padded) of data[0..len), and its length in
 * *out_len when out_len is not NULL.  malloc'd; NULL out of memory.
 */
static char *base64_encode(const void *data, size_t len, size_t *out_len)
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

char *patch_encode(const struct patch *p)
{
	struct buf json = BUF_INIT;
	char *b64;

	jsonout_dump(&json, p->ops);
	if (buf_failed(&json)) {
		buf_release(&json);
		return NULL;
	}
	b64 = base64_encode(json.s, json.len, NULL);
	buf_release(&json);
	return b64;
}

/*
 * Decodes the next reference token of the pointer at *path into tok (at
 * most size bytes with the NUL).  Returns 0 and advances *path, or -1.
 */
static int next_token(const char **path, char *tok, size_t size)
{
	const char *s = *path + 1;
	size_t n = 0;

	for (; *s && *s != '/'; s++) {
		char c = *s;

		if (c == '~') {
			if (s[1] != '0' && s[1] != '1')
				return -1;
			c = *++s == '0' ? '~' : '/';
		}
		if (n + 1 >= size)
			return -1;
		tok[n++] = c;
	}
	tok[n] = '\0';
	*path = s;
	return 0;
}

/*
 * An array index token: digits below size, without a leading zero (RFC
 * 6901 has none).
 */
static int parse_index(const char *tok, size_t size, size_t *index)
{
	uint64_t v;

	if ((tok[0] == '0' && tok[1]) || !size ||
	    text_u64_parsen(tok, strlen(tok), size - 1, &v))
		return -1;
	*index = (size_t)v;
	return 0;
}

/*
 * Applies one operation of the kinds patch_push() makes: the parent named
 * by path must exist.  value is borrowed.  Returns 0, or -1.
 */
static int apply_one(json_t *doc, const char *op, const char *path,
		     json_t *value)
{
	char tok[512];
	json_t *parent = doc;
	size_t index;

	if (path[0] != '/')
		return -1;
	for (;;) {
		if (next_token(&path, tok, sizeof(tok)))
			return -1;
		if (!*path)
			break;
		if (json_is_object(parent))
			parent = json_object_get(parent, tok);
		else if (json_is_array(parent) &&
			 !parse_index(tok, json_array_size(parent), &index))
			parent = json_array_get(parent, index);
		else
			return -1;
		if (!parent)
			return -1;
	}
	if (!strcmp(op, "add") && json_is_object(parent))
		return json_object_set(parent, tok, value);
	if (!strcmp(op, "add") && json_is_array(parent) && !strcmp(tok, "-"))
		return json_array_append(parent, value);
	if (!strcmp(op, "replace") && json_is_array(parent) &&
	    !parse_index(tok, json_array_size(parent), &index))
		return json_array_set(parent, index, value);
	if (!strcmp(op, "remove") && json_is_object(parent))
		return json_object_del(parent, tok);
	if (!strcmp(op, "remove") && json_is_array(parent) &&
	    !parse_index(tok, json_array_size(parent), &index))
		return json_array_remove(parent, index);
	return -1;
}

int patch_apply(json_t *doc, const struct patch *p, char *err, size_t errlen)
{
	size_t i;
	json_t *o;

	json_array_foreach(p->ops, i, o) {
		const char *op = json_string_value(json_object_get(o, "op"));
		const char *path = json_string_value(json_object_get(o, "path"));
		json_t *given = json_object_get(o, "value");
		json_t *value = given ? json_deep_copy(given) : NULL;
		int rc = value || !strcmp(op, "remove") ?
			 apply_one(doc, op, path, value) : -1;

		json_decref(value);
		if (rc) {
			snprintf(err, errlen, "cannot apply %s at %.200s", op,
				 path);
			return -1;
		}
	}
	return 0;
}
