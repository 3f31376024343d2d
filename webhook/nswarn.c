/*
 * nswarn.c - the warning for objects without a namespace where a
 * namespace profile could apply (nswarn.h).
 */
#include <string.h>

#include "nswarn.h"
#include "text.h"
#include "yamlio.h"

/* What the walk over the documents needs. */
struct nswarn {
	const char *profiles; /* "P1, P2" */
	struct buf *msgs;
};

/* Whether v holds a member "containers" that is an array, at any depth. */
static bool has_containers(const json_t *v, int depth)
{
	const char *key;
	const json_t *item;
	size_t i;

	if (depth > YAMLIO_DEPTH_MAX)
		return false;
	if (json_is_array(v)) {
		json_array_foreach(v, i, item)
			if (has_containers(item, depth + 1))
				return true;
		return false;
	}
	json_object_foreach((json_t *)v, key, item)
		if ((!strcmp(key, "containers") && json_is_array(item)) ||
		    has_containers(item, depth + 1))
			return true;
	return false;
}

/* Appends s, masked and cut, or "?" when s is not a string. */
static void add_masked(struct buf *b, const json_t *s)
{
	char out[128];

	if (!json_is_string(s)) {
		buf_add(b, "?");
		return;
	}
	text_mask_cutn(out, sizeof(out), json_string_value(s),
		       json_string_length(s), 64);
	buf_add(b, out);
}

/* The warning for obj when it needs one; the items of a List each. */
static void check_object(struct nswarn *w, const json_t *obj)
{
	const json_t *meta = json_object_get(obj, "metadata"), *ns, *items;
	const char *kind = json_string_value(json_object_get(obj, "kind"));
	size_t i, klen = kind ? strlen(kind) : 0;
	const json_t *item;

	items = json_object_get(obj, "items");
	if (klen >= 4 && !strcmp(kind + klen - 4, "List") &&
	    json_is_array(items)) {
		json_array_foreach(items, i, item)
			check_object(w, item);
		return;
	}
	ns = json_object_get(meta, "namespace");
	if (!json_is_object(obj) || (json_is_string(ns) && json_string_length(ns)) ||
	    !has_containers(obj, 0))
		return;
	buf_add(w->msgs, "warning: ");
	add_masked(w->msgs, json_object_get(obj, "kind"));
	buf_add(w->msgs, " ");
	add_masked(w->msgs, json_object_get(meta, "name"));
	buf_addf(w->msgs,
		 ": no namespace (neither metadata.namespace nor --namespace): "
		 "decided as in namespace \"default\"; give --namespace (helm: "
		 "--post-renderer-args --namespace=NS) for the profiles that "
		 "select namespaces (%s)\n",
		 w->profiles);
}

static int each_document(void *ctx, json_t *doc, const struct yamlio_doc *d)
{
	(void)d;
	if (doc)
		check_object(ctx, doc);
	return 0;
}

void nswarn_manifests(const struct config *cfg, const char *namespace_,
		      const char *buf, size_t len, struct buf *msgs)
{
	struct buf names = BUF_INIT;
	struct yamlio_error err;
	struct nswarn w;
	size_t i;

	if (namespace_)
		return;
	for (i = 0; i < cfg->nprofiles; i++) {
		if (!cfg->profiles[i].namespaces.n)
			continue;
		if (names.len)
			buf_add(&names, ", ");
		buf_add(&names, cfg->profiles[i].name);
	}
	if (names.len && !buf_failed(&names)) {
		w.profiles = buf_str(&names);
		w.msgs = msgs;
		/* Input that does not read: the defaulter says why. */
		int rc = yamlio_each(buf, len, each_document, &w, NULL, &err);

		(void)rc;
	}
	if (buf_failed(&names))
		buf_fail(msgs);
	buf_release(&names);
}
