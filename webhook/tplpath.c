/*
 * tplpath.c - where the pod templates of a workload sit (tplpath.h).
 */
#include <stdio.h>
#include <string.h>

#include "jsonout.h"
#include "text.h"
#include "tplpath.h"

#define NAME_MAX_LEN 253

/* One segment of a path: a name or "*", and whether "[]" follows. */
struct seg {
	const char *name;
	size_t len;
	int star, array;
	const char *rest; /* the segments after it, "" for none */
};

/* Whether c may be part of a NAME. */
static int name_byte(unsigned char c)
{
	return c >= 0x20 && c != 0x7f && c != '.' && c != '*' && c != '[' &&
	       c != ']';
}

/* Splits the first segment of p (valid) into s. */
static void seg_read(const char *p, struct seg *s)
{
	const char *e = strchr(p, '.');
	size_t n = e ? (size_t)(e - p) : strlen(p);

	s->array = n >= 2 && !memcmp(p + n - 2, "[]", 2);
	s->name = p;
	s->len = n - (s->array ? 2 : 0);
	s->star = s->len == 1 && p[0] == '*';
	s->rest = e ? e + 1 : "";
}

int tplpath_check(const char *path, char *err, size_t errlen)
{
	const char *p;
	struct seg s;
	size_t i;

	if (!path[0])
		return 0;
	for (p = path;; p = s.rest) {
		seg_read(p, &s);
		if (!s.len)
			return text_errorf(err, errlen, "an empty segment");
		if (s.len > NAME_MAX_LEN)
			return text_errorf(err, errlen, "a segment longer than "
					   "%d bytes", NAME_MAX_LEN);
		for (i = 0; !s.star && i < s.len; i++)
			if (!name_byte((unsigned char)s.name[i]))
				return text_errorf(err, errlen,
						   "a segment is \"*\", NAME, "
						   "\"*[]\" or NAME[] (no '.', "
						   "'*', '[', ']' or control "
						   "bytes in NAME)");
		if (!strchr(p, '.'))
			return 0;
	}
}

int tplpath_has_wildcard(const char *path)
{
	return strchr(path, '*') || strstr(path, "[]");
}

/* The state of one walk. */
struct walk {
	tplpath_fn *fn;
	void *ctx;
	char *err;
	size_t errlen;
	struct buf where;
};

static int walk_object(struct walk *w, json_t *v, const char *p);

/* "WHERE: expected WANT, got TYPE" into w->err; returns -2. */
static int wrong_type(struct walk *w, const char *want, const json_t *v)
{
	snprintf(w->err, w->errlen, "%s: expected %s, got %s",
		 buf_str(&w->where), want, jsonout_type_name(v));
	return -2;
}

/* x, found at w->where, must be an object: the template, or the next
 * object on the way. */
static int descend(struct walk *w, json_t *x, const char *rest)
{
	if (!json_is_object(x))
		return wrong_type(w, "an object", x);
	if (!rest[0])
		return w->fn(w->ctx, x, buf_str(&w->where)) ? -1 : 0;
	return walk_object(w, x, rest);
}

/* The member key (valued val) of the segment s, and what follows it. */
static int member(struct walk *w, const struct seg *s, const char *key,
		  size_t keylen, json_t *val)
{
	size_t mark = w->where.len, i, item_mark;
	char tmp[NAME_MAX_LEN + 8];
	json_t *item;
	int rc = 0;

	if (!val || json_is_null(val))
		return 0;
	text_mask_cutn(tmp, sizeof(tmp), key, keylen, 63);
	buf_addf(&w->where, "%s%s", mark ? "." : "", tmp);
	if (!s->array) {
		rc = descend(w, val, s->rest);
	} else if (!json_is_array(val)) {
		rc = wrong_type(w, "an array", val);
	} else {
		item_mark = w->where.len;
		json_array_foreach(val, i, item) {
			if (json_is_null(item))
				continue;
			buf_addf(&w->where, "[%zu]", i);
			rc = descend(w, item, s->rest);
			buf_truncate(&w->where, item_mark);
			if (rc)
				break;
		}
	}
	buf_truncate(&w->where, mark);
	return rc;
}

/* The segments p of the object v (found at w->where). */
static int walk_object(struct walk *w, json_t *v, const char *p)
{
	char name[NAME_MAX_LEN + 1];
	const char *key;
	struct seg s;
	json_t *val;
	int rc;

	seg_read(p, &s);
	if (!s.star) {
		memcpy(name, s.name, s.len);
		name[s.len] = '\0';
		return member(w, &s, name, s.len, json_object_get(v, name));
	}
	json_object_foreach(v, key, val) {
		rc = member(w, &s, key, strlen(key), val);
		if (rc)
			return rc;
	}
	return 0;
}

int tplpath_each(json_t *obj, const char *path, tplpath_fn *fn, void *ctx,
		 char *err, size_t errlen)
{
	struct walk w = { fn, ctx, err, errlen, BUF_INIT };
	int rc;

	rc = descend(&w, obj, path);
	if (!rc && buf_failed(&w.where))
		rc = -1;
	buf_release(&w.where);
	return rc;
}
