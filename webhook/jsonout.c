/*
 * jsonout.c - JSON text out.
 */
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonout.h"

const char *jsonout_type_name(const json_t *v)
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

void jsonout_quoten(struct buf *b, const char *s, size_t len)
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

void jsonout_dump(struct buf *b, const json_t *v)
{
	const char *key;
	json_t *item;
	size_t i;
	char *text;

	switch (json_typeof(v)) {
	case JSON_STRING:
		jsonout_quoten(b, json_string_value(v), json_string_length(v));
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
			jsonout_quoten(b, key, strlen(key));
			buf_addn(b, ":", 1);
			jsonout_dump(b, item);
		}
		buf_addn(b, "}", 1);
		return;
	case JSON_ARRAY:
		buf_addn(b, "[", 1);
		json_array_foreach(v, i, item) {
			if (i)
				buf_addn(b, ",", 1);
			jsonout_dump(b, item);
		}
		buf_addn(b, "]", 1);
		return;
	default:
		/* Reals: jansson's own shortest form. */
		text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
		if (!text) {
			buf_fail(b);
			return;
		}
		buf_add(b, text);
		jsonout_free(text);
		return;
	}
}

int jsonout_real_precision(double d, int min)
{
	char text[40];
	int prec;

	for (prec = min; prec < DBL_DECIMAL_DIG; prec++) {
		snprintf(text, sizeof(text), "%.*g", prec, d);
		if (strtod(text, NULL) == d)
			break;
	}
	return prec;
}

void jsonout_value_precision(const json_t *v, int *precision)
{
	const char *k;
	json_t *item;
	size_t i;

	if (json_is_real(v)) {
		*precision = jsonout_real_precision(json_real_value(v),
						    *precision);
	} else if (json_is_object(v)) {
		json_object_foreach((json_t *)v, k, item)
			jsonout_value_precision(item, precision);
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, item)
			jsonout_value_precision(item, precision);
	}
}

void jsonout_free(void *p)
{
	json_free_t release;

	if (!p)
		return;
	json_get_alloc_funcs(NULL, &release);
	release(p);
}
