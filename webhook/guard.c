/*
 * guard.c - the annotation and env guards (guard.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guard.h"
#include "text.h"

/* Values quoted in a message are cut to this many characters. */
#define QUOTE_CHARS 64

const char *guard_kind_name(enum guard_kind kind)
{
	switch (kind) {
	case GUARD_ANNOTATIONS:
		return "annotations";
	case GUARD_ENV:
		return "env";
	default:
		return "volumeMounts";
	}
}

const char *guard_action_name(enum guard_action action)
{
	switch (action) {
	case GUARD_DENIED:
		return "denied";
	case GUARD_STRIPPED:
		return "stripped";
	default:
		return "warned";
	}
}

void guard_hits_add(struct guard_hits *h, enum guard_kind kind,
		    enum guard_action action, const char *key, size_t len)
{
	struct guard_hit *hit;

	h->count[kind][action]++;
	if (h->nlisted == GUARD_HITS_LISTED)
		return;
	hit = &h->listed[h->nlisted++];
	hit->kind = (unsigned char)kind;
	hit->action = (unsigned char)action;
	text_mask_cutn(hit->key, sizeof(hit->key), key, len, 63);
}

void guard_hits_format(const struct guard_hits *h, char *out, size_t size)
{
	size_t i, n = 0, total = 0, k, a;

	for (k = 0; k < GUARD_NKINDS; k++)
		for (a = 0; a < GUARD_NACTIONS; a++)
			total += h->count[k][a];
	out[0] = '\0';
	for (i = 0; i < h->nlisted && n < size; i++)
		n += (size_t)snprintf(out + n, size - n, "%s%s %s %s",
				      i ? "; " : "",
				      guard_action_name(h->listed[i].action),
				      guard_kind_name(h->listed[i].kind),
				      h->listed[i].key);
	if (total > h->nlisted && n < size)
		snprintf(out + n, size - n, "; ... and %zu more",
			 total - h->nlisted);
}

/* s[0..len) for a message: control characters removed, cut short. */
static const char *quote(char out[POD_LINE_SIZE], const char *s, size_t len)
{
	text_mask_cutn(out, POD_LINE_SIZE, s, len, QUOTE_CHARS);
	return out;
}

/* One annotation key: where it is in the pod's map. */
struct key {
	const char *s;
	size_t len;
};

static int key_cmp(const void *a, const void *b)
{
	const struct key *x = a, *y = b;
	size_t n = x->len < y->len ? x->len : y->len;
	int c = memcmp(x->s, y->s, n);

	return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* Whether the string values a and b (NULL or null: absent) differ. */
static bool differ(const json_t *a, const json_t *b)
{
	if (json_is_null(a))
		a = NULL;
	if (json_is_null(b))
		b = NULL;
	if (!a || !b)
		return a != b;
	return json_string_length(a) != json_string_length(b) ||
	       memcmp(json_string_value(a), json_string_value(b),
		      json_string_length(a));
}

/*
 * Collects the guarded keys of map into keys (n of them), plus, when old
 * is given, those of old not in map.  On an UPDATE a key counts only when
 * its value differs between the two.
 */
static void collect_keys(const struct pattern_set *set, const json_t *map,
			 const json_t *old, bool update, struct key *keys,
			 size_t *n)
{
	const char *k;
	size_t klen;
	json_t *v;

	json_object_keylen_foreach((json_t *)map, k, klen, v) {
		if (json_is_null(v) || pattern_set_findn(set, k, klen) < 0)
			continue;
		if (update && !differ(v, json_object_getn(old, k, klen)))
			continue;
		keys[(*n)++] = (struct key){ k, klen };
	}
	if (!update)
		return;
	/* Removed: in old, absent (or null) in map. */
	json_object_keylen_foreach((json_t *)old, k, klen, v) {
		const json_t *now = json_object_getn(map, k, klen);

		if (!json_is_null(v) && (!now || json_is_null(now)) &&
		    pattern_set_findn(set, k, klen) >= 0)
			keys[(*n)++] = (struct key){ k, klen };
	}
}

void guard_annotations(struct guard_run *run, const struct pod *old,
		       const char *username, const json_t *groups)
{
	const struct guards *g = run->g;
	const json_t *map = run->pod->annotations;
	const json_t *old_map = old ? old->annotations : NULL;
	struct key *keys;
	size_t n = 0, i, cap;
	char who[POD_LINE_SIZE];

	if (g->annotation_policy == GUARD_POLICY_OFF || !g->keys.n ||
	    (!json_object_size(map) && !json_object_size(old_map)))
		return;
	cap = json_object_size(map) + json_object_size(old_map);
	keys = malloc(cap * sizeof(*keys));
	if (!keys) {
		run->oom = true;
		return;
	}
	collect_keys(&g->keys, map, old_map, run->update, keys, &n);
	if (n && run->update && guardcfg_is_writer(g, username, groups))
		n = 0;
	qsort(keys, n, sizeof(*keys), key_cmp);
	quote(who, username, strlen(username));
	for (i = 0; i < n; i++) {
		char k[POD_LINE_SIZE], line[POD_LINE_SIZE * 2 + 96];
		bool nul = strlen(keys[i].s) != keys[i].len;
		enum guard_policy policy = g->annotation_policy;

		quote(k, keys[i].s, keys[i].len);
		if (run->update)
			snprintf(line, sizeof(line),
				 "annotation \"%s\" is written by the scheduler and cannot be changed by \"%s\"",
				 k, who);
		else
			snprintf(line, sizeof(line),
				 "annotation \"%s\" is written by the scheduler and cannot be set",
				 k);
		/* A patch cannot name a key holding a NUL byte: deny it. */
		if (policy == GUARD_POLICY_STRIP && (!run->can_patch || nul))
			policy = GUARD_POLICY_DENY;
		if (policy == GUARD_POLICY_DENY) {
			buf_addf(&run->deny, "%s%s", run->deny.len ? "; " : "",
				 line);
			guard_hits_add(run->hits, GUARD_ANNOTATIONS,
				       GUARD_DENIED, keys[i].s, keys[i].len);
		} else if (policy == GUARD_POLICY_STRIP) {
			if (!run->pod->strip_keys &&
			    !(run->pod->strip_keys = json_array()))
				run->oom = true;
			else if (json_array_append_new(run->pod->strip_keys,
					json_stringn(keys[i].s, keys[i].len)))
				run->oom = true;
			pod_warnf(run->warnings, &run->oom,
				  "removed annotation \"%s\": it is written by the scheduler",
				  k);
			guard_hits_add(run->hits, GUARD_ANNOTATIONS,
				       GUARD_STRIPPED, keys[i].s, keys[i].len);
		} else {
			pod_warnf(run->warnings, &run->oom, "%s (policy warn)",
				  line);
			guard_hits_add(run->hits, GUARD_ANNOTATIONS,
				       GUARD_WARNED, keys[i].s, keys[i].len);
		}
	}
	free(keys);
}

/* Appends to b the allowed values of the env name, as `"a", "b"`. */
static void allowed_list(const struct guards *g, const char *name,
			 struct buf *b)
{
	size_t i, j;
	json_t *v;

	for (i = 0; i < g->allowed.names.n; i++) {
		const struct pattern *p = &g->allowed.names.items[i];

		if (!pattern_matchn(p, name, strlen(name)))
			continue;
		json_array_foreach(json_object_get(g->allowed.values, p->text),
				   j, v) {
			char q[POD_LINE_SIZE];

			buf_addf(b, "%s\"%s\"", b->len ? ", " : "",
				 quote(q, json_string_value(v),
				       json_string_length(v)));
		}
	}
}

/* Records that entry index of c is removed (indexes come ascending). */
static void strip_entry(struct guard_run *run, struct pod_container *c,
			size_t index)
{
	size_t *more = realloc(c->strip, (c->nstrip + 1) * sizeof(*more));

	if (!more) {
		run->oom = true;
		return;
	}
	c->strip = more;
	c->strip[c->nstrip++] = index;
}

/* One guarded entry of c that is not allowed: its action. */
static void env_hit(struct guard_run *run, struct pod_container *c,
		    size_t index, const char *name, const char *value,
		    size_t value_len, bool from)
{
	struct buf allowed = BUF_INIT;
	char n[POD_LINE_SIZE], v[POD_LINE_SIZE], line[POD_LINE_SIZE * 4 + 64];
	enum guard_policy policy = run->g->env_policy;

	allowed_list(run->g, name, &allowed);
	quote(n, name, strlen(name));
	if (from)
		snprintf(v, sizeof(v), " (valueFrom)");
	else
		quote(v, value, value_len);
	snprintf(line, sizeof(line), "container \"%s\": env %s%s%s%s cannot be set%s%.*s%s",
		 c->label, n, from ? "" : "=\"", v, from ? "" : "\"",
		 allowed.len ? " (allowed: " : "", (int)(allowed.len ? 200 : 0),
		 allowed.len ? buf_str(&allowed) : "",
		 allowed.len ? ")" : "");
	buf_release(&allowed);
	if (policy == GUARD_POLICY_STRIP && !run->can_patch)
		policy = GUARD_POLICY_DENY;
	if (policy == GUARD_POLICY_DENY) {
		buf_addf(&run->deny, "%s%s", run->deny.len ? "; " : "", line);
		guard_hits_add(run->hits, GUARD_ENV, GUARD_DENIED, name,
			       strlen(name));
	} else if (policy == GUARD_POLICY_STRIP) {
		strip_entry(run, c, index);
		pod_warnf(run->warnings, &run->oom,
			  "container \"%s\": removed env %s%s%s%s", c->label, n,
			  from ? "" : "=\"", v, from ? "" : "\"");
		guard_hits_add(run->hits, GUARD_ENV, GUARD_STRIPPED, name,
			       strlen(name));
	} else {
		pod_warnf(run->warnings, &run->oom, "%s (policy warn)", line);
		guard_hits_add(run->hits, GUARD_ENV, GUARD_WARNED, name,
			       strlen(name));
	}
}

/*
 * Whether entry index of env, named name, is the last of that name: the
 * one the webhook sets or replaces (behaviour §3.8), as the kubelet keeps
 * the last of duplicate names.  The scan stops at the next entry of the
 * name, so over all entries of one name it reads the list once.
 */
static bool last_of_name(const json_t *env, size_t index, const char *name)
{
	size_t i;

	for (i = index + 1; i < json_array_size(env); i++) {
		const char *n = json_string_value(json_object_get(
			json_array_get(env, i), "name"));

		if (n && !strcmp(n, name))
			return false;
	}
	return true;
}

void guard_env(struct guard_run *run, guard_written_fn *written,
	       const void *ctx)
{
	const struct guards *g = run->g;
	size_t i, j;

	if (g->env_policy == GUARD_POLICY_OFF || !g->names.n)
		return;
	for (i = 0; i < run->pod->ncontainers; i++) {
		struct pod_container *c = &run->pod->containers[i];
		json_t *e;

		json_array_foreach(c->env, j, e) {
			json_t *jname = json_object_get(e, "name");
			const char *name = json_string_value(jname);
			const json_t *value, *from;
			const char *text;
			size_t len;

			/* Most names stop here, before any other lookup. */
			if (!name || pattern_set_findn(&g->names, name,
					json_string_length(jname)) < 0)
				continue;
			value = json_object_get(e, "value");
			from = json_object_get(e, "valueFrom");
			if (from && json_is_null(from))
				from = NULL;
			if (!value || json_is_null(value))
				value = NULL;
			/* Neither value nor valueFrom: the value "". */
			text = value ? json_string_value(value) : "";
			len = value ? json_string_length(value) : 0;
			if (!from && guardcfg_allowed(g, name,
						      json_string_length(jname),
						      text, len))
				continue;
			/* Only the last entry of a name is the webhook's to
			 * write (a cheap test first: written() says yes to a
			 * few names only, so the scans stay linear). */
			if (written &&
			    written(ctx, c, name, text, len, from != NULL) &&
			    last_of_name(c->env, j, name))
				continue;
			env_hit(run, c, j, name, text, len, from != NULL);
		}
	}
}

/* One guarded mount of c at path[0..len), at or below prefix. */
static void mount_hit(struct guard_run *run, const struct pod_container *c,
		      const char *path, size_t len, const char *prefix)
{
	char m[POD_LINE_SIZE], p[POD_LINE_SIZE], line[POD_LINE_SIZE * 3 + 96];

	snprintf(line, sizeof(line),
		 "container \"%s\": volume mount at \"%s\" is at or below \"%s\" (guards.volumeMounts)",
		 c->label, quote(m, path, len), quote(p, prefix, strlen(prefix)));
	if (run->g->mount_policy == GUARD_POLICY_DENY) {
		buf_addf(&run->deny, "%s%s", run->deny.len ? "; " : "", line);
		guard_hits_add(run->hits, GUARD_MOUNTS, GUARD_DENIED, path,
			       len);
	} else {
		pod_warnf(run->warnings, &run->oom, "%s (policy warn)", line);
		guard_hits_add(run->hits, GUARD_MOUNTS, GUARD_WARNED, path,
			       len);
	}
}

void guard_mounts(struct guard_run *run)
{
	const struct guards *g = run->g;
	char small[512], *clean;
	size_t i, j;

	if (g->mount_policy == GUARD_POLICY_OFF ||
	    !json_array_size(g->mount_paths))
		return;
	for (i = 0; i < run->pod->ncontainers; i++) {
		const struct pod_container *c = &run->pod->containers[i];
		json_t *m;

		json_array_foreach(c->mounts, j, m) {
			const json_t *v = json_object_get(m, "mountPath");
			const char *path = json_string_value(v), *prefix;
			size_t len = json_string_length(v), n;

			if (!path)
				continue;
			clean = len + 2 <= sizeof(small) ? small : malloc(len + 2);
			if (!clean) {
				run->oom = true;
				return;
			}
			n = text_clean_path(clean, path, len);
			prefix = guardcfg_mount_path(g, clean, n);
			if (prefix)
				mount_hit(run, c, path, len, prefix);
			if (clean != small)
				free(clean);
		}
	}
}
