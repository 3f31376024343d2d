/*
 * yamlio_dump.c - YAML out (yamlio.h): a block-style writer of jansson
 * values.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonout.h"
#include "yamlio.h"

static void indent(struct buf *b, int n)
{
	static const char spaces[] = "                                ";

	while (n > 0) {
		int k = n < 32 ? n : 32;

		buf_addn(b, spaces, (size_t)k);
		n -= k;
	}
}

/* Appends s[0..n) as a double-quoted YAML scalar. */
static void write_quoted(struct buf *b, const char *s, size_t n)
{
	size_t i, start = 0;

	buf_add(b, "\"");
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		const char *esc = NULL;
		char hex[12];
		size_t skip = 1;

		if (c == '"')
			esc = "\\\"";
		else if (c == '\\')
			esc = "\\\\";
		else if (c == '\n')
			esc = "\\n";
		else if (c == '\t')
			esc = "\\t";
		else if (c < 0x20 || c == 0x7f) {
			snprintf(hex, sizeof(hex), "\\x%02x", c);
			esc = hex;
		} else if (c == 0xc2 && i + 1 < n &&
			   (unsigned char)s[i + 1] >= 0x80 &&
			   (unsigned char)s[i + 1] <= 0x9f) {
			/* C1 controls, NEL among them (a line break). */
			snprintf(hex, sizeof(hex), "\\x%02x",
				 (unsigned char)s[i + 1]);
			esc = hex;
			skip = 2;
		} else if (c == 0xe2 && i + 2 < n &&
			   (unsigned char)s[i + 1] == 0x80 &&
			   ((unsigned char)s[i + 2] == 0xa8 ||
			    (unsigned char)s[i + 2] == 0xa9)) {
			esc = (unsigned char)s[i + 2] == 0xa8 ? "\\L" : "\\P";
			skip = 3;
		} else if (c == 0xef && i + 2 < n &&
			   (unsigned char)s[i + 1] == 0xbb &&
			   (unsigned char)s[i + 2] == 0xbf) {
			esc = "\\uFEFF";
			skip = 3;
		} else if (c == 0xef && i + 2 < n &&
			   (unsigned char)s[i + 1] == 0xbf &&
			   ((unsigned char)s[i + 2] == 0xbe ||
			    (unsigned char)s[i + 2] == 0xbf)) {
			/* U+FFFE and U+FFFF, which a YAML reader refuses
			 * as they stand. */
			esc = (unsigned char)s[i + 2] == 0xbe ? "\\uFFFE" :
								"\\uFFFF";
			skip = 3;
		}
		if (!esc)
			continue;
		buf_addn(b, s + start, i - start);
		buf_add(b, esc);
		i += skip - 1;
		start = i + 1;
	}
	buf_addn(b, s + start, n - start);
	buf_add(b, "\"");
}

static void write_string(struct buf *b, const char *s, size_t n)
{
	if (yamlio_plain_safe(s, n))
		buf_addn(b, s, n);
	else
		write_quoted(b, s, n);
}

/* A scalar, or an empty collection, on the current line. */
static void write_scalar(struct buf *b, const json_t *v)
{
	char num[48];
	double d;
	int p, exp;

	switch (json_typeof(v)) {
	case JSON_OBJECT:
		buf_add(b, "{}");
		break;
	case JSON_ARRAY:
		buf_add(b, "[]");
		break;
	case JSON_STRING:
		write_string(b, json_string_value(v), json_string_length(v));
		break;
	case JSON_INTEGER:
		buf_addf(b, "%lld", (long long)json_integer_value(v));
		break;
	case JSON_REAL:
		d = json_real_value(v);
		p = jsonout_real_precision(d, 1);
		snprintf(num, sizeof(num), "%.*e", p - 1, d);
		exp = atoi(strchr(num, 'e') + 1);
		/* 1000.0 rather than 1e+03 for the reals people write. */
		if (exp >= p && exp < 17)
			p = exp + 1;
		snprintf(num, sizeof(num), "%.*g", p, d);
		/* A real stays a real when read back. */
		if (!strpbrk(num, ".eEn"))
			strcat(num, ".0");
		buf_add(b, num);
		break;
	case JSON_TRUE:
		buf_add(b, "true");
		break;
	case JSON_FALSE:
		buf_add(b, "false");
		break;
	default:
		buf_add(b, "null");
		break;
	}
}

static bool is_block(const json_t *v)
{
	return (json_is_object(v) && json_object_size(v)) ||
	       (json_is_array(v) && json_array_size(v));
}

/*
 * Writes the non-empty collection v with its lines at column col; the
 * first line's indent is already written when inline_first.
 */
static void write_block(struct buf *b, const json_t *v, int col,
			bool inline_first)
{
	bool first = true;
	const char *k;
	size_t klen, i;
	json_t *item;

	if (json_is_object(v)) {
		json_object_keylen_foreach((json_t *)v, k, klen, item) {
			if (!first || !inline_first)
				indent(b, col);
			first = false;
			write_string(b, k, klen);
			buf_add(b, ":");
			if (json_is_object(item) && is_block(item)) {
				buf_add(b, "\n");
				write_block(b, item, col + 2, false);
			} else if (is_block(item)) {
				buf_add(b, "\n");
				write_block(b, item, col, false);
			} else {
				buf_add(b, " ");
				write_scalar(b, item);
				buf_add(b, "\n");
			}
		}
		return;
	}
	json_array_foreach(v, i, item) {
		if (!first || !inline_first)
			indent(b, col);
		first = false;
		buf_add(b, "- ");
		if (is_block(item)) {
			write_block(b, item, col + 2, true);
		} else {
			write_scalar(b, item);
			buf_add(b, "\n");
		}
	}
}

void yamlio_dump(struct buf *b, const json_t *v)
{
	if (is_block(v)) {
		write_block(b, v, 0, false);
	} else {
		write_scalar(b, v);
		buf_add(b, "\n");
	}
}
