/*
 * cfgkey.c - configuration keys described once (cfgkey.h): the readers of
 * one value, the common types, and the walks over a table.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "cfgkey.h"
#include "jsonout.h"

/* A path of a key: "devices[0].tolerations[1].key" fits. */
#define PATH_MAX_LEN 160

/* --- readers of one value ------------------------------------------------ */

int cfgkey_fail(struct cfgread *r, const char *fmt, ...)
{
	char msg[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(r->err, r->errlen, "config %s: %s", r->file, msg);
	return -1;
}

int cfgkey_bad_type(struct cfgread *r, const char *path, const char *want,
		    const json_t *v)
{
	return cfgkey_fail(r, "%s: expected %s, got %s", path, want,
			   jsonout_type_name(v));
}

int cfgkey_unknown(struct cfgread *r, const char *path, const char *key)
{
	return cfgkey_fail(r, "unknown key \"%s%s%.64s\"", path,
			   path[0] ? "." : "", key);
}

int cfgkey_missing(struct cfgread *r, const char *path, const char *key)
{
	return cfgkey_fail(r, "%s: missing required key \"%s\"", path, key);
}

int cfgkey_set_string(char **dst, const char *s)
{
	char *copy = strdup(s);

	if (!copy)
		return -1;
	free(*dst);
	*dst = copy;
	return 0;
}

int cfgkey_read_string(struct cfgread *r, const char *path, const json_t *v,
		       char **dst)
{
	if (!json_is_string(v))
		return cfgkey_bad_type(r, path, "a string", v);
	if (strlen(json_string_value(v)) != json_string_length(v))
		return cfgkey_fail(r, "%s: contains a NUL byte", path);
	if (cfgkey_set_string(dst, json_string_value(v)))
		return cfgkey_fail(r, "out of memory");
	return 0;
}

int cfgkey_read_choice(struct cfgread *r, const char *path, const json_t *v,
		       const char *const *choices, int *index)
{
	struct buf list = BUF_INIT;
	size_t i;

	if (!json_is_string(v))
		return cfgkey_bad_type(r, path, "a string", v);
	for (i = 0; choices[i]; i++) {
		if (!strcmp(json_string_value(v), choices[i])) {
			*index = (int)i;
			return 0;
		}
	}
	for (i = 0; choices[i]; i++)
		buf_addf(&list, "%s\"%s\"", i ? ", " : "", choices[i]);
	cfgkey_fail(r, "%s: \"%.64s\" is not one of %s", path,
		    json_string_value(v), buf_str(&list));
	buf_release(&list);
	return -1;
}

/* Whether v is a string without NUL bytes. */
static bool plain_string(const json_t *v)
{
	return json_is_string(v) &&
	       strlen(json_string_value(v)) == json_string_length(v);
}

int cfgkey_read_strings(struct cfgread *r, const char *path, const json_t *v,
			const char ***texts)
{
	size_t i, n = json_array_size(v);
	json_t *item;

	if (!json_is_array(v))
		return cfgkey_bad_type(r, path, "an array", v);
	*texts = calloc(n ? n : 1, sizeof(**texts));
	if (!*texts)
		return cfgkey_fail(r, "out of memory");
	json_array_foreach(v, i, item) {
		if (!plain_string(item) || !json_string_length(item)) {
			free(*texts);
			*texts = NULL;
			return cfgkey_fail(r, "%s[%zu]: expected a non-empty string, got %s",
					   path, i,
					   json_is_string(item) ?
					   "\"\" or a NUL byte" :
					   jsonout_type_name(item));
		}
		(*texts)[i] = json_string_value(item);
	}
	return 0;
}

int cfgkey_read_patterns(struct cfgread *r, const char *path,
			 const json_t *v, struct pattern_set *dst)
{
	struct pattern_set set;
	const char **texts;

	if (cfgkey_read_strings(r, path, v, &texts))
		return -1;
	if (pattern_set_init(&set, texts, json_array_size(v))) {
		free(texts);
		return cfgkey_fail(r, "out of memory");
	}
	free(texts);
	pattern_set_release(dst);
	*dst = set;
	return 0;
}

int cfgkey_copy_json(json_t **dst, const json_t *src)
{
	json_t *copy = json_deep_copy(src);

	if (src && !copy)
		return -1;
	json_decref(*dst);
	*dst = copy;
	return 0;
}

/* --- the common types ---------------------------------------------------- */

int cfgkey_json_copy(const struct cfgkey *k, void *dst, const void *src)
{
	return cfgkey_copy_json(cfgkey_field(k, dst),
				*(json_t **)cfgkey_field(k, src));
}

void cfgkey_json_release(const struct cfgkey *k, void *base)
{
	json_t **v = cfgkey_field(k, base);

	json_decref(*v);
	*v = NULL;
}

json_t *cfgkey_json_dump(const struct cfgkey *k, const void *base)
{
	return json_deep_copy(*(json_t **)cfgkey_field(k, base));
}

/* A string; with choices, one of them. */
static int string_read(struct cfgread *r, const struct cfgkey *k,
		       const char *path, const json_t *v, void *base)
{
	int choice;

	if (k->choices && cfgkey_read_choice(r, path, v, k->choices, &choice))
		return -1;
	return cfgkey_read_string(r, path, v, cfgkey_field(k, base));
}

static int string_copy(const struct cfgkey *k, void *dst, const void *src)
{
	const char *s = *(char **)cfgkey_field(k, src);

	return cfgkey_set_string(cfgkey_field(k, dst), s ? s : "");
}

static void string_release(const struct cfgkey *k, void *base)
{
	char **s = cfgkey_field(k, base);

	free(*s);
	*s = NULL;
}

static json_t *string_dump(const struct cfgkey *k, const void *base)
{
	const char *s = *(char **)cfgkey_field(k, base);

	return json_string(s ? s : "");
}

const struct cfgkey_type cfgkey_string = {
	"string", string_read, string_copy, string_release, string_dump
};

static int bool_read(struct cfgread *r, const struct cfgkey *k,
		     const char *path, const json_t *v, void *base)
{
	if (!json_is_boolean(v))
		return cfgkey_bad_type(r, path, "a boolean", v);
	*(bool *)cfgkey_field(k, base) = json_is_true(v);
	return 0;
}

static int bool_copy(const struct cfgkey *k, void *dst, const void *src)
{
	*(bool *)cfgkey_field(k, dst) = *(const bool *)cfgkey_field(k, src);
	return 0;
}

/* Nothing to free; zeroed, as every release leaves its value. */
static void bool_release(const struct cfgkey *k, void *base)
{
	*(bool *)cfgkey_field(k, base) = false;
}

static json_t *bool_dump(const struct cfgkey *k, const void *base)
{
	return json_boolean(*(const bool *)cfgkey_field(k, base));
}

const struct cfgkey_type cfgkey_bool = {
	"boolean", bool_read, bool_copy, bool_release, bool_dump
};

/* An integer; its range is the check's (a family's is the library's). */
static int int_read(struct cfgread *r, const struct cfgkey *k,
		    const char *path, const json_t *v, void *base)
{
	if (!json_is_integer(v))
		return cfgkey_bad_type(r, path, "an integer", v);
	*(int64_t *)cfgkey_field(k, base) = json_integer_value(v);
	return 0;
}

static int int_copy(const struct cfgkey *k, void *dst, const void *src)
{
	*(int64_t *)cfgkey_field(k, dst) =
		*(const int64_t *)cfgkey_field(k, src);
	return 0;
}

static void int_release(const struct cfgkey *k, void *base)
{
	*(int64_t *)cfgkey_field(k, base) = 0;
}

static json_t *int_dump(const struct cfgkey *k, const void *base)
{
	return json_integer(*(const int64_t *)cfgkey_field(k, base));
}

const struct cfgkey_type cfgkey_int = {
	"integer", int_read, int_copy, int_release, int_dump
};

/* One of choices, kept as values[i] in an int (an enum). */
static int enum_read(struct cfgread *r, const struct cfgkey *k,
		     const char *path, const json_t *v, void *base)
{
	int choice;

	if (cfgkey_read_choice(r, path, v, k->choices, &choice))
		return -1;
	*(int *)cfgkey_field(k, base) = k->values[choice];
	return 0;
}

static int enum_copy(const struct cfgkey *k, void *dst, const void *src)
{
	*(int *)cfgkey_field(k, dst) = *(const int *)cfgkey_field(k, src);
	return 0;
}

static void enum_release(const struct cfgkey *k, void *base)
{
	*(int *)cfgkey_field(k, base) = 0;
}

static json_t *enum_dump(const struct cfgkey *k, const void *base)
{
	int value = *(const int *)cfgkey_field(k, base);
	size_t i;

	for (i = 0; k->choices[i]; i++)
		if (k->values[i] == value)
			return json_string(k->choices[i]);
	return json_null();
}

const struct cfgkey_type cfgkey_enum = {
	"string", enum_read, enum_copy, enum_release, enum_dump
};

/*
 * An object of keys k->keys, whose values are fields of the same struct.
 * Inside a profile, its keys are those of an object (null keeps them, no
 * podLabels rule of its own); with CFGKEY_ROOTED its messages name its
 * keys from the top of the file.
 */
static int object_read(struct cfgread *r, const struct cfgkey *k,
		       const char *path, const json_t *v, void *base)
{
	enum cfgkey_mode mode = r->mode;
	const char *const *skip = r->skip;
	int rc;

	if (mode == CFGKEY_READ_PROFILE)
		r->mode = CFGKEY_READ_PROFILE_OBJECT;
	r->skip = NULL;
	rc = cfgkey_read_object(r, k->keys,
				k->where & CFGKEY_ROOTED ? k->name : path, v,
				base);
	r->mode = mode;
	r->skip = skip;
	return rc;
}

static int object_copy(const struct cfgkey *k, void *dst, const void *src)
{
	return cfgkey_copy(k->keys, dst, src);
}

static void object_release(const struct cfgkey *k, void *base)
{
	cfgkey_release(k->keys, base);
}

static json_t *object_dump(const struct cfgkey *k, const void *base)
{
	return cfgkey_dump(k->keys, base);
}

const struct cfgkey_type cfgkey_object = {
	"object", object_read, object_copy, object_release, object_dump
};

/* A list of patterns (pattern.h) of non-empty strings. */
static int patterns_read(struct cfgread *r, const struct cfgkey *k,
			 const char *path, const json_t *v, void *base)
{
	return cfgkey_read_patterns(r, path, v, cfgkey_field(k, base));
}

static int patterns_copy(const struct cfgkey *k, void *dst, const void *src)
{
	struct pattern_set *d = cfgkey_field(k, dst), set;

	if (pattern_set_copy(&set, cfgkey_field(k, src)))
		return -1;
	pattern_set_release(d);
	*d = set;
	return 0;
}

static void patterns_release(const struct cfgkey *k, void *base)
{
	pattern_set_release(cfgkey_field(k, base));
}

static json_t *patterns_dump(const struct cfgkey *k, const void *base)
{
	const struct pattern_set *set = cfgkey_field(k, base);
	json_t *list = json_array();
	size_t i;

	for (i = 0; list && i < set->n; i++) {
		if (json_array_append_new(list,
					  json_stringn(set->items[i].text,
						       set->items[i].len))) {
			json_decref(list);
			list = NULL;
		}
	}
	return list;
}

const struct cfgkey_type cfgkey_patterns = {
	"array", patterns_read, patterns_copy, patterns_release, patterns_dump
};

/* --- walks over a table -------------------------------------------------- */

const struct cfgkey *cfgkey_find(const struct cfgkey *keys, const char *name)
{
	for (; keys->name; keys++)
		if (!strcmp(keys->name, name))
			return keys;
	return NULL;
}

int cfgkey_init(const struct cfgkey *keys, void *base)
{
	char err[512];
	struct cfgread r = { "(built-in)", err, sizeof(err), CFGKEY_READ_FILE,
			     false, NULL, 0 };

	for (; keys->name; keys++) {
		json_t *v;
		int rc;

		if (keys->type == &cfgkey_object) {
			if (cfgkey_init(keys->keys, base))
				return -1;
			continue;
		}
		if (!keys->def)
			continue;
		/* The built-in value is read as the file's would be; it
		 * fails only out of memory (the tests read every one). */
		v = json_loads(keys->def, JSON_DECODE_ANY, NULL);
		rc = !v || keys->type->read(&r, keys, keys->name, v, base);
		json_decref(v);
		if (rc)
			return -1;
	}
	return 0;
}

int cfgkey_copy(const struct cfgkey *keys, void *dst, const void *src)
{
	for (; keys->name; keys++)
		if (!(keys->where & CFGKEY_OWN) &&
		    keys->type->copy(keys, dst, src))
			return -1;
	return 0;
}

void cfgkey_release(const struct cfgkey *keys, void *base)
{
	for (; keys->name; keys++)
		keys->type->release(keys, base);
}

json_t *cfgkey_dump(const struct cfgkey *keys, const void *base)
{
	json_t *obj = json_object();

	for (; obj && keys->name; keys++) {
		json_t *v = keys->type->dump(keys, base);

		if (!v && (keys->where & CFGKEY_OWN))
			continue;
		if (json_object_set_new(obj, keys->name, v)) {
			json_decref(obj);
			obj = NULL;
		}
	}
	return obj;
}

/* Whether key is in the NULL-terminated list keys (NULL: none). */
static bool in_list(const char *key, const char *const *keys)
{
	for (; keys && *keys; keys++)
		if (!strcmp(key, *keys))
			return true;
	return false;
}

/* "PATH: WHY" for a key a profile may not give.  Returns -1. */
static int refuse(struct cfgread *r, const char *path, const char *why)
{
	return cfgkey_fail(r, "%s: %s", path, why);
}

/*
 * Whether the key k (NULL: not in the table), given as item, is read in
 * r's mode: 1 to read it, 0 to pass over it (null keeps the value), -1
 * after a refusal naming path (the object) or sub (the key).
 */
static int allowed(struct cfgread *r, const struct cfgkey *k, const char *key,
		   const json_t *item, const char *path, const char *sub)
{
	static const char labels[] =
		"a profile that selects by podLabels may not override this key";

	switch (r->mode) {
	case CFGKEY_READ_FILE:
		if (!k || !(k->where & (CFGKEY_TOP | CFGKEY_FAMILY)))
			return cfgkey_unknown(r, path, key);
		return json_is_null(item) && !(k->where & CFGKEY_REQUIRED) ? 0
									  : 1;
	case CFGKEY_READ_PROFILE:
		if (!k || !(k->where & CFGKEY_PROFILE))
			return cfgkey_unknown(r, path, key);
		if (json_is_null(item))
			return 0;
		if (r->labels && !(k->where & CFGKEY_LABELS))
			return refuse(r, sub, labels);
		return 1;
	case CFGKEY_READ_PROFILE_OBJECT:
		if (!k || !(k->where & CFGKEY_PROFILE))
			return cfgkey_unknown(r, path, key);
		return json_is_null(item) ? 0 : 1;
	case CFGKEY_READ_PROFILE_FAMILY:
		if (!k || !(k->where & CFGKEY_PROFILE))
			return refuse(r, sub,
				      "a profile may not override this key");
		if (r->labels && !(k->where & CFGKEY_LABELS))
			return refuse(r, sub, labels);
		return 1;
	}
	return cfgkey_unknown(r, path, key);
}

int cfgkey_read_object(struct cfgread *r, const struct cfgkey *keys,
		       const char *path, const json_t *v, void *base)
{
	const json_t *item;
	const char *key;

	if (!json_is_object(v))
		return cfgkey_bad_type(r, path[0] ? path : "(top level)",
				       "an object", v);
	json_object_foreach((json_t *)v, key, item) {
		const struct cfgkey *k;
		char sub[PATH_MAX_LEN];
		int go;

		if (in_list(key, r->skip))
			continue;
		k = cfgkey_find(keys, key);
		snprintf(sub, sizeof(sub), "%s%s%.64s", path, path[0] ? "." : "",
			 key);
		go = allowed(r, k, key, item, path, sub);
		if (go < 0)
			return -1;
		if (!go)
			continue;
		if (k->type->read(r, k, sub, item, base))
			return -1;
		if (r->mode == CFGKEY_READ_PROFILE_FAMILY)
			r->from |= k->from;
	}
	return 0;
}

int cfgkey_check(const struct cfgkey *keys, void *base, const char *path,
		 char *err, size_t errlen)
{
	for (; keys->name; keys++) {
		char sub[PATH_MAX_LEN];

		snprintf(sub, sizeof(sub), "%s%s%s", path, path[0] ? "." : "",
			 keys->name);
		if (keys->type == &cfgkey_object &&
		    cfgkey_check(keys->keys, base, sub, err, errlen))
			return -1;
		if (keys->check && keys->check(keys, base, sub, err, errlen))
			return -1;
	}
	return 0;
}
