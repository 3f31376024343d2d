/*
 * yamlio_load.c - YAML in (yamlio.h): libyaml's event parser feeding a
 * builder of jansson values.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "jsonout.h"
#include "yamlio.h"
#include "yamlio_scalar.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

#define TAG_PREFIX "tag:yaml.org,2002:"

/* A collection being built. */
struct frame {
	json_t *value;    /* the object or array */
	json_t *key;      /* a mapping's pending key (a string), or NULL */
	bool merge;       /* the pending key is "<<" */
	char *anchor;     /* malloc'd, or NULL */
	size_t nodes0;    /* nodes made before this one */
	size_t height;    /* the greatest height of its children */
};

struct reader {
	struct frame *stack;
	size_t depth;
	json_t *anchors;    /* name -> [value, node count, height] */
	json_t *root;       /* the current document's value */
	size_t doc_start;   /* the byte where it starts */
	int doc_line;       /* the line where it starts */
	size_t nodes;       /* nodes made in the current document */
	size_t doc_alias_nodes; /* nodes copied by its aliases */
	size_t alias_nodes; /* nodes copied by aliases in the stream */
	size_t alias_max;   /* the stream's budget */
	yamlio_doc_fn *fn;
	void *ctx;
	struct yamlio_error *err;
	/* Where the documents sit (yamlio.h, struct yamlio_doc): libyaml's
	 * marks count characters, turned into bytes by byte_at(). */
	const char *buf;
	size_t len;
	size_t bom;         /* bytes of a UTF-8 byte order mark, not counted */
	size_t at_char, at_byte; /* byte_at()'s cursor */
	size_t prev_end;    /* where the last document ended */
	struct yamlio_doc doc;
	size_t (*scalars)[2]; /* doc.scalars, malloc'd */
	size_t scalars_cap;
};

__attribute__((format(printf, 3, 4)))
static int fail(struct reader *r, const yaml_mark_t *mark, const char *fmt,
		...)
{
	va_list ap;

	r->err->line = mark ? (int)mark->line + 1 : 0;
	r->err->column = mark ? (int)mark->column + 1 : 0;
	va_start(ap, fmt);
	vsnprintf(r->err->text, sizeof(r->err->text), fmt, ap);
	va_end(ap);
	return -1;
}

/* The text of s cut short and masked for a message (into out[64]). */
static const char *show(char out[64], const char *s, size_t n)
{
	size_t i, m = 0;

	for (i = 0; i < n && m < 40; i++)
		out[m++] = (unsigned char)s[i] < 0x20 ? '?' : s[i];
	if (i < n) {
		memcpy(out + m, "...", 3);
		m += 3;
	}
	out[m] = '\0';
	return out;
}

/* Go's strconv.FormatFloat(d, 'g', -1, 64), for a real used as a key. */
static void go_format_real(char out[40], double d)
{
	int p = jsonout_real_precision(d, 1), exp;
	char e[40];

	snprintf(e, sizeof(e), "%.*e", p - 1, d);
	exp = atoi(strchr(e, 'e') + 1);
	/* Go: %e when the exponent is below -4 or at least 6 (shortest). */
	if (exp < -4 || exp >= 6)
		snprintf(out, 40, "%s", e);
	else
		snprintf(out, 40, "%.*f", p - 1 - exp > 0 ? p - 1 - exp : 0,
			 d);
}

/*
 * The value of a scalar event: a new reference, or NULL after fail().
 * *is_merge is set for the plain "<<".
 */
static json_t *scalar_value(struct reader *r, const yaml_event_t *ev,
			    bool *is_merge)
{
	const char *s = (const char *)ev->data.scalar.value;
	size_t n = ev->data.scalar.length;
	const char *tag = (const char *)ev->data.scalar.tag;
	bool plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
	struct yamlio_scalar sc;
	char shown[64];
	json_t *v;

	*is_merge = false;
	if (tag && !strcmp(tag, "!"))
		plain = false, tag = NULL;
	if (tag && strcmp(tag, TAG_PREFIX "str")) {
		static const char *const known[] = {
			TAG_PREFIX "int", TAG_PREFIX "float", TAG_PREFIX "bool",
			TAG_PREFIX "null",
		};
		size_t i;

		for (i = 0; i < NELEM(known); i++)
			if (!strcmp(tag, known[i]))
				break;
		if (i == NELEM(known)) {
			fail(r, &ev->start_mark, "unsupported tag %s",
			     show(shown, tag, strlen(tag)));
			return NULL;
		}
		if (yamlio_resolve_plain(s, n, &sc))
			goto oom;
		if ((i == 0 && sc.kind != SCALAR_INT) ||
		    (i == 1 && sc.kind != SCALAR_INT && sc.kind != SCALAR_REAL &&
		     sc.kind != SCALAR_NONFINITE) ||
		    (i == 2 && sc.kind != SCALAR_BOOL) || (i == 3 && sc.kind != SCALAR_NULL)) {
			fail(r, &ev->start_mark, "cannot decode \"%s\" as !!%s",
			     show(shown, s, n), known[i] + strlen(TAG_PREFIX));
			return NULL;
		}
		if (i == 1 && sc.kind == SCALAR_INT) {
			sc.kind = SCALAR_REAL;
			sc.r = (double)sc.i;
		}
	} else if (tag || !plain) {
		sc.kind = SCALAR_STRING;
	} else {
		*is_merge = n == 2 && !memcmp(s, "<<", 2);
		if (yamlio_resolve_plain(s, n, &sc))
			goto oom;
	}
	switch (sc.kind) {
	case SCALAR_NULL:
		v = json_null();
		break;
	case SCALAR_BOOL:
		v = json_boolean(sc.b);
		break;
	case SCALAR_INT:
		v = json_integer(sc.i);
		break;
	case SCALAR_REAL:
		v = json_real(sc.r);
		break;
	case SCALAR_NONFINITE:
		fail(r, &ev->start_mark,
		     "%s is not a number JSON can hold", show(shown, s, n));
		return NULL;
	default:
		v = json_stringn(s, n);
		if (!v) {
			fail(r, &ev->start_mark, "invalid UTF-8 in a string");
			return NULL;
		}
		return v;
	}
	if (!v)
		goto oom;
	return v;
oom:
	fail(r, NULL, "out of memory");
	return NULL;
}

/* The member name a key value makes (sigs.k8s.io/yaml): new, or NULL. */
static json_t *key_string(struct reader *r, json_t *key,
			  const yaml_mark_t *mark)
{
	char tmp[40];

	if (json_is_string(key)) {
		/* jansson looks keys up as C strings, as JSON decoders do. */
		if (memchr(json_string_value(key), '\0',
			   json_string_length(key))) {
			fail(r, mark, "a mapping key holds a NUL character");
			return NULL;
		}
		return json_incref(key);
	}
	if (json_is_integer(key))
		snprintf(tmp, sizeof(tmp), "%lld",
			 (long long)json_integer_value(key));
	else if (json_is_real(key))
		go_format_real(tmp, json_real_value(key));
	else if (json_is_boolean(key))
		snprintf(tmp, sizeof(tmp), "%s",
			 json_is_true(key) ? "true" : "false");
	else {
		fail(r, mark, "a mapping key must be a string, a number or "
		     "a boolean, not %s", jsonout_type_name(key));
		return NULL;
	}
	return json_string(tmp);
}

/*
 * Merges the mapping src into the frame's mapping.  As in go-yaml v2's
 * strict mode, a merged key that the mapping has already, from its own
 * keys or another merge, is a duplicate.
 */
static int merge_into(struct reader *r, struct frame *f, json_t *src,
		      const yaml_mark_t *mark)
{
	const char *k;
	size_t klen;
	json_t *item;
	char shown[64];

	if (!json_is_object(src))
		return fail(r, mark, "a merge key (<<) needs a mapping or a "
			    "sequence of mappings");
	json_object_keylen_foreach(src, k, klen, item) {
		if (json_object_getn(f->value, k, klen))
			return fail(r, mark, "mapping key \"%s\" already defined",
				    show(shown, k, klen));
		if (json_object_setn(f->value, k, klen, item))
			return fail(r, NULL, "out of memory");
	}
	return 0;
}

/*
 * Puts the finished node v (a new reference, consumed) where it belongs:
 * the document root, an item, a key or a value.  anchor names it (v is
 * then registered with its node count and its height: the collections
 * nested in it, itself included, 0 for a scalar).  Returns 0 or -1 after
 * fail().
 */
static int place(struct reader *r, json_t *v, const char *anchor,
		 size_t nodes, size_t height, bool is_merge,
		 const yaml_mark_t *mark)
{
	struct frame *f;
	json_t *key, *pair;
	char shown[64];
	int rc = -1;

	if (anchor) {
		pair = json_pack("[OII]", v, (json_int_t)nodes,
				 (json_int_t)height);
		if (!pair || json_object_set_new(r->anchors, anchor, pair)) {
			fail(r, NULL, "out of memory");
			goto out;
		}
	}
	if (!r->depth) {
		json_decref(r->root);
		r->root = json_incref(v);
		rc = 0;
		goto out;
	}
	f = &r->stack[r->depth - 1];
	if (height > f->height)
		f->height = height;
	if (json_is_array(f->value)) {
		if (json_array_append(f->value, v)) {
			fail(r, NULL, "out of memory");
			goto out;
		}
		rc = 0;
		goto out;
	}
	if (!f->key && !f->merge) {
		if (is_merge) {
			f->merge = true;
			rc = 0;
			goto out;
		}
		f->key = key_string(r, v, mark);
		rc = f->key ? 0 : -1;
		goto out;
	}
	if (f->merge) {
		size_t i;

		f->merge = false;
		if (json_is_array(v)) {
			for (i = 0; i < json_array_size(v); i++)
				if (merge_into(r, f, json_array_get(v, i), mark))
					goto out;
		} else if (merge_into(r, f, v, mark)) {
			goto out;
		}
		rc = 0;
		goto out;
	}
	key = f->key;
	f->key = NULL;
	if (json_object_getn(f->value, json_string_value(key),
			     json_string_length(key))) {
		fail(r, mark, "mapping key \"%s\" already defined",
		     show(shown, json_string_value(key),
			  json_string_length(key)));
		json_decref(key);
		goto out;
	}
	if (json_object_setn(f->value, json_string_value(key),
			     json_string_length(key), v)) {
		fail(r, NULL, "out of memory");
		json_decref(key);
		goto out;
	}
	json_decref(key);
	rc = 0;
out:
	json_decref(v);
	return rc;
}

static void frame_release(struct frame *f)
{
	json_decref(f->value);
	json_decref(f->key);
	free(f->anchor);
}

/*
 * The byte offset of character index in the buffer, as libyaml counts
 * characters in UTF-8 input (after a byte order mark; "\r\n" is two).
 * Marks come in order, so the cursor moves forward; it starts again for
 * one behind it.
 */
static size_t byte_at(struct reader *r, size_t index)
{
	const unsigned char *b = (const unsigned char *)r->buf;

	if (index < r->at_char) {
		r->at_char = 0;
		r->at_byte = r->bom;
	}
	while (r->at_char < index && r->at_byte < r->len) {
		r->at_byte++;
		while (r->at_byte < r->len && (b[r->at_byte] & 0xC0) == 0x80)
			r->at_byte++;
		r->at_char++;
	}
	return r->at_byte;
}

/* Lists a scalar that spans lines in doc.scalars. */
static void add_scalar(struct reader *r, const yaml_event_t *ev)
{
	struct yamlio_doc *d = &r->doc;
	size_t start = byte_at(r, ev->start_mark.index);

	if (d->scalars_lost)
		return;
	if (d->nscalars == r->scalars_cap) {
		size_t cap = r->scalars_cap ? 2 * r->scalars_cap : 16;
		void *p = realloc(r->scalars, cap * sizeof(*r->scalars));

		if (!p) {
			d->scalars_lost = true;
			return;
		}
		r->scalars = p;
		r->scalars_cap = cap;
		d->scalars = (const size_t (*)[2])r->scalars;
	}
	r->scalars[d->nscalars][0] = start;
	r->scalars[d->nscalars][1] = byte_at(r, ev->end_mark.index);
	d->nscalars++;
}

/* Follows where the current document and its value start and end. */
static void track(struct reader *r, const yaml_event_t *ev)
{
	struct yamlio_doc *d = &r->doc;

	if (!d->spans)
		return;
	switch (ev->type) {
	case YAML_DOCUMENT_START_EVENT:
		d->start = r->prev_end;
		d->content_start = d->content_end = SIZE_MAX;
		d->nscalars = 0;
		d->scalars_lost = false;
		break;
	case YAML_DOCUMENT_END_EVENT:
		d->end = byte_at(r, ev->end_mark.index);
		if (d->content_start == SIZE_MAX)
			d->content_start = d->content_end = d->end;
		r->prev_end = d->end;
		break;
	case YAML_SCALAR_EVENT:
		if (ev->start_mark.line != ev->end_mark.line)
			add_scalar(r, ev);
		/* fall through */
	case YAML_ALIAS_EVENT:
	case YAML_SEQUENCE_START_EVENT:
	case YAML_MAPPING_START_EVENT:
		if (r->depth)
			break;
		d->content_start = byte_at(r, ev->start_mark.index);
		if (ev->type == YAML_SCALAR_EVENT || ev->type == YAML_ALIAS_EVENT)
			d->content_end = byte_at(r, ev->end_mark.index);
		break;
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT:
		if (r->depth == 1)
			d->content_end = byte_at(r, ev->end_mark.index);
		break;
	default:
		break;
	}
}

/* Handles one event.  Returns 0, 1 at the end of the stream, or -1. */
static int on_event(struct reader *r, const yaml_event_t *ev)
{
	const yaml_mark_t *mark = &ev->start_mark;
	const char *anchor = NULL;
	struct frame *f;
	json_t *v, *pair;
	bool is_merge = false;
	size_t nodes, height, doc_max;
	char shown[64];

	switch (ev->type) {
	case YAML_STREAM_END_EVENT:
		return 1;
	case YAML_DOCUMENT_START_EVENT:
		r->err->document++;
		r->nodes = 0;
		r->doc_alias_nodes = 0;
		r->doc_start = mark->index;
		r->doc_line = (int)mark->line + 1;
		json_decref(r->root);
		r->root = NULL;
		json_object_clear(r->anchors);
		return 0;
	case YAML_DOCUMENT_END_EVENT: {
		int rc;

		r->doc.index = r->err->document;
		r->doc.line = r->doc_line;
		rc = r->fn(r->ctx, r->root ? r->root : json_null(), &r->doc);

		json_decref(r->root);
		r->root = NULL;
		json_object_clear(r->anchors);
		if (rc) {
			r->err->text[0] = '\0';
			return -1;
		}
		return 0;
	}
	case YAML_ALIAS_EVENT: {
		const char *name = (const char *)ev->data.alias.anchor;

		pair = json_object_get(r->anchors, name);
		if (!pair)
			return fail(r, mark, "unknown anchor \"%s\" referenced",
				    show(shown, name, strlen(name)));
		nodes = (size_t)json_integer_value(json_array_get(pair, 1));
		height = (size_t)json_integer_value(json_array_get(pair, 2));
		/* A copy nests as deep as its anchor: the limit on depth
		 * holds for the tree built, not only for the text. */
		if (height > YAMLIO_DEPTH_MAX - r->depth)
			return fail(r, mark, "nested deeper than %d levels "
				    "through aliases", YAMLIO_DEPTH_MAX);
		/* A budget per stream bounds the time, one per document (by
		 * its bytes so far) the memory. */
		doc_max = YAMLIO_ALIAS_NODES_MIN +
			  (mark->index - r->doc_start) / 8;
		if (nodes > r->alias_max - r->alias_nodes ||
		    nodes > doc_max - r->doc_alias_nodes)
			return fail(r, mark, "aliases expand to more than %zu "
				    "nodes", nodes > r->alias_max - r->alias_nodes ?
				    r->alias_max : doc_max);
		r->alias_nodes += nodes;
		r->doc_alias_nodes += nodes;
		r->nodes += nodes;
		v = json_deep_copy(json_array_get(pair, 0));
		if (!v)
			return fail(r, NULL, "out of memory");
		return place(r, v, NULL, nodes, height, false, mark);
	}
	case YAML_SCALAR_EVENT:
		anchor = (const char *)ev->data.scalar.anchor;
		v = scalar_value(r, ev, &is_merge);
		if (!v)
			return -1;
		r->nodes++;
		return place(r, v, anchor, 1, 0, is_merge, mark);
	case YAML_SEQUENCE_START_EVENT:
	case YAML_MAPPING_START_EVENT:
		if (r->depth >= YAMLIO_DEPTH_MAX)
			return fail(r, mark, "nested deeper than %d levels",
				    YAMLIO_DEPTH_MAX);
		anchor = (const char *)(ev->type == YAML_MAPPING_START_EVENT ?
					ev->data.mapping_start.anchor :
					ev->data.sequence_start.anchor);
		f = &r->stack[r->depth];
		memset(f, 0, sizeof(*f));
		f->value = ev->type == YAML_MAPPING_START_EVENT ? json_object() :
			   json_array();
		f->anchor = anchor ? strdup(anchor) : NULL;
		f->nodes0 = r->nodes++;
		r->depth++;
		if (!f->value || (anchor && !f->anchor))
			return fail(r, NULL, "out of memory");
		return 0;
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT: {
		struct frame done = r->stack[--r->depth];
		int rc;

		rc = place(r, json_incref(done.value), done.anchor,
			   r->nodes - done.nodes0, done.height + 1, false,
			   mark);
		frame_release(&done);
		return rc;
	}
	default:
		return 0;
	}
}

/* Fills err from the parser's own error. */
static void parser_error(struct reader *r, const yaml_parser_t *p)
{
	const yaml_mark_t *mark = p->problem_mark.line || p->problem_mark.column ||
				  !p->context ? &p->problem_mark : &p->context_mark;

	if (p->error == YAML_MEMORY_ERROR) {
		fail(r, NULL, "out of memory");
		return;
	}
	if (p->context)
		fail(r, mark, "%s %s", p->problem ? p->problem : "syntax error",
		     p->context);
	else
		fail(r, mark, "%s", p->problem ? p->problem : "syntax error");
	if (p->error == YAML_READER_ERROR) {
		r->err->line = 0;
		r->err->column = 0;
		snprintf(r->err->text, sizeof(r->err->text),
			 "%s at byte %zu", p->problem ? p->problem :
			 "invalid input", p->problem_offset);
	}
}

int yamlio_each(const char *buf, size_t len, yamlio_doc_fn *fn, void *ctx,
		size_t *tail, struct yamlio_error *err)
{
	const unsigned char *b = (const unsigned char *)buf;
	struct reader r;
	yaml_parser_t parser;
	yaml_event_t ev;
	int rc = -1;

	memset(err, 0, sizeof(*err));
	memset(&r, 0, sizeof(r));
	r.err = err;
	r.fn = fn;
	r.ctx = ctx;
	r.alias_max = YAMLIO_ALIAS_NODES_MIN + len / 8;
	r.buf = buf;
	r.len = len;
	/* libyaml reads UTF-16 when a byte order mark says so: its marks
	 * then count characters of another encoding. */
	r.doc.spans = !(len >= 2 && ((b[0] == 0xFF && b[1] == 0xFE) ||
				     (b[0] == 0xFE && b[1] == 0xFF)));
	if (len >= 3 && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF)
		r.bom = 3;
	r.at_byte = r.bom;
	r.stack = calloc(YAMLIO_DEPTH_MAX + 1, sizeof(*r.stack));
	r.anchors = json_object();
	if (!r.stack || !r.anchors || !yaml_parser_initialize(&parser)) {
		fail(&r, NULL, "out of memory");
		goto out_noparser;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
	for (;;) {
		if (!yaml_parser_parse(&parser, &ev)) {
			parser_error(&r, &parser);
			rc = -1;
			break;
		}
		/* Refused as soon as it is seen, not once it is built. */
		if (ev.type != YAML_STREAM_END_EVENT &&
		    ev.type != YAML_DOCUMENT_START_EVENT &&
		    ev.end_mark.index - r.doc_start > YAMLIO_DOCUMENT_MAX)
			rc = fail(&r, NULL, "the document is larger than %zu "
				  "bytes", YAMLIO_DOCUMENT_MAX);
		else {
			track(&r, &ev);
			rc = on_event(&r, &ev);
		}
		yaml_event_delete(&ev);
		if (rc)
			break;
	}
	rc = rc == 1 ? 0 : -1;
	if (!rc && tail)
		*tail = r.doc.spans ? r.prev_end : len;
	yaml_parser_delete(&parser);
out_noparser:
	while (r.depth)
		frame_release(&r.stack[--r.depth]);
	free(r.stack);
	free(r.scalars);
	json_decref(r.anchors);
	json_decref(r.root);
	return rc;
}

/* What yamlio_load() collects. */
struct collected {
	json_t *docs, *lines;
};

static int collect(void *ctx, json_t *doc, const struct yamlio_doc *d)
{
	struct collected *c = ctx;

	if (json_array_append(c->docs, doc) ||
	    json_array_append_new(c->lines, json_integer(d->line)))
		return -1;
	return 0;
}

json_t *yamlio_load(const char *buf, size_t len, json_t **lines,
		    struct yamlio_error *err)
{
	struct collected c = { json_array(), json_array() };

	if (lines)
		*lines = NULL;
	if (!c.docs || !c.lines) {
		memset(err, 0, sizeof(*err));
		snprintf(err->text, sizeof(err->text), "out of memory");
		goto fail;
	}
	if (yamlio_each(buf, len, collect, &c, NULL, err)) {
		if (!err->text[0])
			snprintf(err->text, sizeof(err->text), "out of memory");
		goto fail;
	}
	if (lines)
		*lines = c.lines;
	else
		json_decref(c.lines);
	return c.docs;
fail:
	json_decref(c.docs);
	json_decref(c.lines);
	return NULL;
}
