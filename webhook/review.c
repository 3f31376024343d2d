/*
 * review.c - AdmissionReview in, AdmissionReview out (docs/behaviour.md
 * §5).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "config.h"
#include "buf.h"
#include "jsonout.h"
#include "pod.h"
#include "policy.h"
#include "review.h"
#include "text.h"

#define CONTENT_JSON "application/json"
#define CONTENT_TEXT "text/plain; charset=utf-8"

const char *review_outcome_name(enum review_outcome outcome)
{
	switch (outcome) {
	case REVIEW_PATCHED:
		return "patched";
	case REVIEW_ALLOWED:
		return "allowed";
	case REVIEW_DENIED:
		return "denied";
	default:
		return "error";
	}
}

void review_answer_init(struct review_answer *ans)
{
	memset(ans, 0, sizeof(*ans));
	ans->http_status = 500;
	ans->content_type = CONTENT_TEXT;
	ans->outcome = REVIEW_ERROR;
	ans->profile = "";
	ans->allocation = "hami";
	ans->dry_run = "";
}

void review_answer_release(struct review_answer *ans)
{
	free(ans->body);
	ans->body = NULL;
	ans->body_len = 0;
	free(ans->message);
	ans->message = NULL;
}

/*
 * What review_handlen() decodes of a body (pick.h): the envelope fields it
 * reads, and of the object what the policy reads.
 */
static const struct pick_rule review_rule = {
	PICK_OBJECT, PICK_FIELDS(
		PICK_FIELD("apiVersion", &pick_all),
		PICK_FIELD("kind", &pick_all),
		PICK_FIELD("request", PICK_OBJ(
			PICK_FIELD("uid", &pick_all),
			PICK_FIELD("kind", PICK_OBJ(
				PICK_FIELD("group", &pick_all),
				PICK_FIELD("kind", &pick_all))),
			PICK_FIELD("subResource", &pick_all),
			PICK_FIELD("operation", &pick_all),
			PICK_FIELD("namespace", &pick_all),
			PICK_FIELD("dryRun", &pick_all),
			/* Read only on an UPDATE, a Binding, and for the audit
			 * trail: kept as text. */
			PICK_FIELD("userInfo", &pick_text),
			PICK_FIELD("object", &pod_rule),
			/* oldObject as the object: an UPDATE compares its
			 * metadata, and an ephemeralcontainers UPDATE reads
			 * its ephemeral containers' names and resolves its
			 * containers (the object's are the tenant's there) */
			PICK_FIELD("oldObject", &pod_rule)))),
	NULL, NULL
};

/*
 * A scalar kept whole; an object or array kept empty, its content only
 * checked: nothing under it is built, so no depth can be refused there.
 */
static const struct pick_rule scalar_rule = { PICK_OBJECT, NULL, NULL, NULL };

/*
 * What a review's answer needs of a body that review_rule could not
 * decode, a value it builds being nested too deep: the envelope and what
 * the log line names, its audit fields included, each a scalar
 * (scalar_rule) at a fixed path, so that decoding with it can refuse only
 * what is not JSON at all.
 */
static const struct pick_rule envelope_rule = {
	PICK_OBJECT, PICK_FIELDS(
		PICK_FIELD("apiVersion", &scalar_rule),
		PICK_FIELD("kind", &scalar_rule),
		PICK_FIELD("request", PICK_OBJ(
			PICK_FIELD("uid", &scalar_rule),
			PICK_FIELD("kind", PICK_OBJ(
				PICK_FIELD("kind", &scalar_rule))),
			PICK_FIELD("subResource", &scalar_rule),
			PICK_FIELD("operation", &scalar_rule),
			PICK_FIELD("namespace", &scalar_rule),
			PICK_FIELD("dryRun", &scalar_rule),
			PICK_FIELD("userInfo", PICK_OBJ(
				PICK_FIELD("username", &scalar_rule))),
			PICK_FIELD("object", PICK_OBJ(
				PICK_FIELD("metadata", PICK_OBJ(
					PICK_FIELD("name", &scalar_rule),
					PICK_FIELD("generateName",
						   &scalar_rule)))))))),
	NULL, NULL
};

/* Sets a text answer (400 or 500): one line, masked.  Returns -1. */
static int text_answer(struct review_answer *ans, int status,
		       const char *reason)
{
	char line[512];
	size_t n = text_mask_cutn(line, sizeof(line) - 1, reason,
				  strlen(reason), 400);

	free(ans->body);
	ans->content_type = CONTENT_TEXT;
	ans->outcome = REVIEW_ERROR;
	ans->body = malloc(n + 1);
	ans->body_len = ans->body ? n : 0;
	/* Without a body the caller can only say 500. */
	ans->http_status = ans->body ? status : 500;
	if (ans->body)
		memcpy(ans->body, line, n + 1);
	return -1;
}

/* Copies a string field of the request for the log line. */
static void copy_field(char dst[REVIEW_FIELD_MAX], const json_t *v)
{
	if (json_is_string(v))
		text_mask_cutn(dst, REVIEW_FIELD_MAX, json_string_value(v),
			       json_string_length(v), 63);
	else
		dst[0] = '\0';
}

/* Whether v is the string lit, compared by length (it may hold a NUL). */
static bool is_string(const json_t *v, const char *lit)
{
	size_t n = strlen(lit);

	return json_is_string(v) && json_string_length(v) == n &&
	       !memcmp(json_string_value(v), lit, n);
}

/*
 * What the policy is asked (behaviour §4.1), by request.kind (group "")
 * and the subresource, into req->op and req->list:
 *   Pod CREATE                                  POLICY_CREATE
 *   Pod UPDATE, and UPDATE of pods/status       POLICY_UPDATE
 *   Pod or EphemeralContainers (list) UPDATE of
 *   pods/ephemeralcontainers                    POLICY_EPHEMERAL
 *   Binding CREATE of pods/binding or bindings  POLICY_BINDING
 * Returns false for anything else, which is allowed unchanged.
 */
static bool pod_operation(const json_t *request, struct policy_request *req)
{
	const json_t *kind = json_object_get(request, "kind");
	const json_t *group = json_object_get(kind, "group");
	const json_t *name = json_object_get(kind, "kind");
	const json_t *sub = json_object_get(request, "subResource");
	const json_t *operation = json_object_get(request, "operation");
	bool plain = !sub || json_is_null(sub) ||
		     is_string(sub, "");
	bool create = is_string(operation, "CREATE");
	bool update = is_string(operation, "UPDATE");
	bool ephemeral = update && is_string(sub, "ephemeralcontainers");

	req->list = false;
	if (!json_is_object(kind))
		return false;
	if (group && !json_is_null(group) &&
	    (!json_is_string(group) || json_string_length(group)))
		return false;
	if (is_string(name, "Binding")) {
		req->op = POLICY_BINDING;
		return create && (plain || is_string(sub, "binding"));
	}
	if (is_string(name, "EphemeralContainers")) {
		req->op = POLICY_EPHEMERAL;
		req->list = true;
		return ephemeral;
	}
	if (!is_string(name, "Pod"))
		return false;
	if (plain && create)
		req->op = POLICY_CREATE;
	else if (update && (plain || is_string(sub, "status")))
		req->op = POLICY_UPDATE;
	else if (ephemeral)
		req->op = POLICY_EPHEMERAL;
	else
		return false;
	return true;
}

/*
 * Writes the AdmissionReview answer for decision d (NULL: allowed
 * unchanged) into out, as compact JSON, and counts its operations.
 */
static void write_answer(struct buf *out, const char *api, const json_t *uid,
			 const struct policy_decision *d, size_t *ops)
{
	char *patch;

	*ops = 0;
	buf_add(out, "{\"apiVersion\":\"");
	buf_add(out, api);
	buf_add(out, "\",\"kind\":\"AdmissionReview\",\"response\":{\"uid\":");
	jsonout_dump(out, uid);
	if (d && d->code) {
		buf_addf(out, ",\"allowed\":false,\"status\":{\"code\":%d,"
			 "\"reason\":\"%s\",\"message\":", d->code,
			 policy_decision_reason(d->code));
		jsonout_quoten(out, d->message, strlen(d->message));
		buf_add(out, "}}}");
		return;
	}
	buf_add(out, ",\"allowed\":true");
	if (d && patch_count(&d->patch)) {
		patch = patch_encode(&d->patch);
		if (!patch) {
			buf_fail(out);
			return;
		}
		buf_add(out, ",\"patchType\":\"JSONPatch\",\"patch\":\"");
		buf_add(out, patch);
		buf_add(out, "\"");
		free(patch);
		*ops = patch_count(&d->patch);
	}
	if (d && json_array_size(d->warnings)) {
		buf_add(out, ",\"warnings\":");
		jsonout_dump(out, d->warnings);
	}
	buf_add(out, "}}");
}

static int handle_json(const struct config *cfg, const json_t *root,
		       bool user_text, const struct review_options *opt,
		       struct review_answer *ans);
static int envelope(const json_t *root, const char **api,
		    struct review_answer *ans);
static int too_deep(const char *body, size_t len,
		    const struct pick_error *deep,
		    const struct review_options *opt, struct review_answer *ans);

const struct config *review_select(const struct config *cfg, const json_t *ns,
				   const json_t *ns_alt, const char *fallback,
				   const json_t *labels)
{
	const char *s = fallback ? fallback : "";
	size_t len = strlen(s);

	if (!cfg->nprofiles)
		return cfg;
	if (!json_is_string(ns) || !json_string_length(ns))
		ns = ns_alt;
	if (json_is_string(ns) && json_string_length(ns)) {
		s = json_string_value(ns);
		len = json_string_length(ns);
	}
	return config_select(cfg, s, len,
			     json_is_object(labels) ? labels : NULL);
}

/* metadata.KEY of obj, or NULL. */
static const json_t *meta_get(const json_t *obj, const char *key)
{
	return json_object_get(json_object_get(obj, "metadata"), key);
}

/*
 * The config for a pod request (behaviour §2.2): the namespace of the
 * request, or of the object; the labels of the object on a CREATE, of
 * oldObject on an UPDATE (an EphemeralContainers object has none), none
 * on a Binding (its labels are not the pod's).
 */
static const struct config *select_profile(const struct config *cfg,
					   const json_t *request,
					   const json_t *object,
					   enum policy_operation op)
{
	const json_t *src = op == POLICY_CREATE ? object :
			    op == POLICY_BINDING ? NULL :
			    json_object_get(request, "oldObject");

	return review_select(cfg, json_object_get(request, "namespace"),
			     meta_get(object, "namespace"), NULL,
			     meta_get(src, "labels"));
}

int review_handlen(const struct config *cfg, const char *body, size_t len,
		   struct review_answer *ans)
{
	return review_handlen_with(cfg, body, len, NULL, ans);
}

int review_handlen_with(const struct config *cfg, const char *body,
			size_t len, const struct review_options *opt,
			struct review_answer *ans)
{
	struct pick_error perr;
	char reason[320];
	json_t *root;
	int rc;

	/* Every jansson value of this review lives and dies in here. */
	(void)arena_begin();
	root = pick_loadb(body, len, &review_rule, &perr);
	if (root) {
		rc = handle_json(cfg, root, true, opt, ans);
		/* The request's tree, read only (handle_json() takes it
		 * const), is a fifth of a typical review's instructions to
		 * free value by value: arena_end() takes it back whole. */
		if (!arena_holds_all())
			json_decref(root);
	} else if (perr.status == PICK_NOMEM) {
		rc = text_answer(ans, 500, "internal error: out of memory");
	} else if (perr.status == PICK_DEPTH) {
		rc = too_deep(body, len, &perr, opt, ans);
	} else {
		snprintf(reason, sizeof(reason),
			 "request body is not JSON: %s (line %d, column %d)",
			 perr.text, perr.line, perr.column);
		rc = text_answer(ans, 400, reason);
	}
	arena_end();
	return rc;
}

int review_handle_json(const struct config *cfg, const json_t *root,
		       struct review_answer *ans)
{
	return handle_json(cfg, root, false, NULL, ans);
}

/*
 * The requester of request.userInfo, into *who; user is that member, or
 * its JSON text when user_text (review_rule keeps it so), decoded here into
 * *parsed (a new reference for the caller, or NULL).  Returns -1 only when
 * memory ran out.  A name holding a NUL byte is no one's (it would compare
 * short).
 */
static int requester(const json_t *user, bool user_text,
		     const struct review_options *opt,
		     struct policy_requester *who, json_t **parsed)
{
	json_t *name, *groups;

	*parsed = NULL;
	if (user_text && json_is_string(user)) {
		json_error_t err;

		*parsed = json_loadb(json_string_value(user),
				     json_string_length(user),
				     JSON_DECODE_ANY | JSON_REJECT_DUPLICATES |
					     JSON_ALLOW_NUL,
				     &err);
		/* The decoder checked this text: only memory can fail. */
		if (!*parsed)
			return -1;
		user = *parsed;
	}
	name = json_object_get(user, "username");
	groups = json_object_get(user, "groups");
	who->username = opt->username ? opt->username :
			json_is_string(name) &&
			strlen(json_string_value(name)) ==
				json_string_length(name) ?
			json_string_value(name) : "";
	who->groups = opt->groups ? opt->groups :
		      json_is_array(groups) ? groups : NULL;
	return 0;
}

/*
 * The audit fields of ans (review.h) for decision d of request, whose
 * requester is who.  Returns -1 only when memory ran out.
 */
static int audit(struct review_answer *ans, const json_t *request,
		 const struct policy_requester *who,
		 const struct policy_decision *d)
{
	const json_t *dry = json_object_get(request, "dryRun");
	char line[REVIEW_MESSAGE_CHARS * 4 + 4];
	size_t n;

	ans->audit = true;
	text_mask_cutn(ans->user, sizeof(ans->user), who->username,
		       strlen(who->username), 63);
	copy_field(ans->kind, json_object_get(json_object_get(request, "kind"),
					      "kind"));
	copy_field(ans->subresource, json_object_get(request, "subResource"));
	ans->dry_run = json_is_true(dry) ? "true" :
		       json_is_false(dry) ? "false" : "";
	if (!d->code)
		return 0;
	ans->code = d->code;
	n = text_mask_cutn(line, sizeof(line), d->message, strlen(d->message),
			   REVIEW_MESSAGE_CHARS);
	free(ans->message);
	ans->message = malloc(n + 1);
	if (!ans->message)
		return -1;
	memcpy(ans->message, line, n + 1);
	return 0;
}

/* Whether d counted a guard hit. */
static bool any_hit(const struct policy_decision *d)
{
	return d->hits.nlisted > 0;
}

/*
 * Checks that root is an AdmissionReview (behaviour §5.1) and copies the
 * log fields of its request into *ans.  Returns 0 with *api the answer's
 * apiVersion (static), or -1 with *ans a 400 (or, out of memory, 500) text
 * answer.
 */
static int envelope(const json_t *root, const char **api,
		    struct review_answer *ans)
{
	const json_t *request = json_object_get(root, "request");
	const json_t *uid = json_object_get(request, "uid"), *meta;
	const char *bad = NULL;
	char reason[320];

	*api = is_string(json_object_get(root, "apiVersion"),
			 "admission.k8s.io/v1") ? "admission.k8s.io/v1" :
	       is_string(json_object_get(root, "apiVersion"),
			 "admission.k8s.io/v1beta1") ? "admission.k8s.io/v1beta1" :
	       NULL;
	if (!json_is_object(root))
		bad = "the body is not a JSON object";
	else if (!*api)
		bad = "apiVersion must be admission.k8s.io/v1 or admission.k8s.io/v1beta1";
	else if (!is_string(json_object_get(root, "kind"), "AdmissionReview"))
		bad = "kind must be AdmissionReview";
	else if (!json_is_object(request))
		bad = "request must be an object";
	else if (!json_is_string(uid) || !json_string_length(uid))
		bad = "request.uid must be a non-empty string";
	if (bad) {
		snprintf(reason, sizeof(reason), "not an AdmissionReview: %s",
			 bad);
		return text_answer(ans, 400, reason);
	}
	copy_field(ans->uid, uid);
	copy_field(ans->operation, json_object_get(request, "operation"));
	copy_field(ans->namespace_, json_object_get(request, "namespace"));
	meta = json_object_get(json_object_get(request, "object"), "metadata");
	copy_field(ans->name, json_object_get(meta, "name"));
	if (!ans->name[0])
		copy_field(ans->name, json_object_get(meta, "generateName"));
	return 0;
}

/*
 * The answer to a body in which review_rule met a value to build nested
 * deeper than JSON_PARSER_MAX_DEPTH (*deep says where): read again for its
 * envelope alone, which no depth can refuse, it is denied with 400 inside
 * an AdmissionReview (behaviour §5.2), since a review that the API server
 * sends must get a decision, with the audit fields of every denial
 * (behaviour §6, logs; the requester from opt as on any request, NULL
 * for none); or it gets the 400 text answer of a body that is not JSON or
 * not an AdmissionReview (§5.1).  Returns as review_handlen().
 */
static int too_deep(const char *body, size_t len,
		    const struct pick_error *deep,
		    const struct review_options *opt, struct review_answer *ans)
{
	static const struct review_options defaults;
	struct policy_decision d = { 0 };
	struct policy_requester who;
	struct pick_error perr;
	struct buf out = BUF_INIT;
	const json_t *request;
	const char *api;
	char reason[320];
	json_t *root, *user = NULL;
	int rc;

	root = pick_loadb(body, len, &envelope_rule, &perr);
	if (!root && perr.status == PICK_NOMEM)
		return text_answer(ans, 500, "internal error: out of memory");
	if (!root) {
		snprintf(reason, sizeof(reason),
			 "request body is not JSON: %s (line %d, column %d)",
			 perr.text, perr.line, perr.column);
		return text_answer(ans, 400, reason);
	}
	rc = envelope(root, &api, ans);
	if (!rc) {
		request = json_object_get(root, "request");
		d.code = 400;
		d.message = reason;
		snprintf(reason, sizeof(reason),
			 "%s: nested deeper than %d levels, the most the "
			 "webhook decodes in a field it reads (line %d, "
			 "column %d)", deep->path[0] ? deep->path : "(top)",
			 JSON_PARSER_MAX_DEPTH, deep->line, deep->column);
		write_answer(&out, api, json_object_get(request, "uid"), &d,
			     &ans->ops);
		free(ans->body);
		ans->body = buf_failed(&out) ? NULL :
			    buf_detach(&out, &ans->body_len);
		/* userInfo is an object here (envelope_rule), never text:
		 * requester() allocates nothing. */
		if (ans->body &&
		    (requester(json_object_get(request, "userInfo"), false,
			       opt ? opt : &defaults, &who, &user) ||
		     audit(ans, request, &who, &d))) {
			free(ans->body);
			ans->body = NULL;
		}
		if (ans->body) {
			ans->http_status = 200;
			ans->content_type = CONTENT_JSON;
			ans->outcome = REVIEW_DENIED;
		} else {
			rc = text_answer(ans, 500,
					 "internal error: out of memory");
		}
	}
	buf_release(&out);
	json_decref(user);
	json_decref(root);
	return rc;
}

static int handle_json(const struct config *cfg, const json_t *root,
		       bool user_text, const struct review_options *opt,
		       struct review_answer *ans)
{
	static const struct review_options defaults;
	struct policy_decision d;
	struct policy_requester who;
	struct policy_request req;
	bool decided = false, examined;
	json_t *request, *object, *user = NULL;
	struct buf out = BUF_INIT;
	const char *api;
	json_t *uid;
	int rc = -1;

	if (envelope(root, &api, ans))
		goto out;
	request = json_object_get(root, "request");
	uid = json_object_get(request, "uid");
	object = json_object_get(request, "object");

	if (!opt)
		opt = &defaults;
	who.username = "";
	who.groups = NULL;
	examined = pod_operation(request, &req);
	if (examined && cfg->nprofiles)
		cfg = select_profile(cfg, request, object, req.op);
	if (cfg->profile)
		ans->profile = cfg->profile;
	ans->allocation = config_allocation_name(cfg->allocation);
	if (examined && policy_wants(cfg, req.op)) {
		/* Only the annotation guard of an UPDATE or a Binding asks
		 * who it is. */
		if ((req.op == POLICY_UPDATE || req.op == POLICY_BINDING) &&
		    requester(json_object_get(request, "userInfo"), user_text,
			      opt, &who, &user))
			goto oom;
		if (policy_decision_init(&d))
			goto oom;
		decided = true;
		req.object = object;
		req.old = json_object_get(request, "oldObject");
		req.who = &who;
		req.validate = opt->validate;
		if (policy_decide_request(cfg, &req, &d))
			goto oom;
		ans->hits = d.hits;
		/* The requester of a CREATE is read for the audit only. */
		if ((d.code || any_hit(&d)) &&
		    ((req.op != POLICY_UPDATE && req.op != POLICY_BINDING &&
		      requester(json_object_get(request, "userInfo"),
				user_text, opt, &who, &user)) ||
		     audit(ans, request, &who, &d)))
			goto oom;
		/* Only a CREATE and an ephemeral container are patched, and
		 * never on /validate. */
		if ((req.op != POLICY_CREATE && req.op != POLICY_EPHEMERAL) ||
		    opt->validate)
			json_array_clear(d.patch.ops);
	}
	write_answer(&out, api, uid, decided ? &d : NULL, &ans->ops);
	if (buf_failed(&out))
		goto oom;
	free(ans->body);
	ans->body = buf_detach(&out, &ans->body_len);
	if (!ans->body)
		goto oom;
	ans->http_status = 200;
	ans->content_type = CONTENT_JSON;
	ans->outcome = !decided ? REVIEW_ALLOWED :
		       d.code ? REVIEW_DENIED :
		       ans->ops ? REVIEW_PATCHED : REVIEW_ALLOWED;
	rc = 0;
	goto out;
oom:
	ans->ops = 0;
	rc = text_answer(ans, 500, "internal error: out of memory");
out:
	if (decided)
		policy_decision_release(&d);
	json_decref(user);
	buf_release(&out);
	return rc;
}

/* --- the start of a review: bodies that are not read whole ------------- */

/* A cursor over the bytes of a prefix. */
struct scan {
	const unsigned char *p;
	const unsigned char *end;
};

static void skip_space(struct scan *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' ||
				 *s->p == '\n' || *s->p == '\r'))
		s->p++;
}

/* Takes ch, after white space.  Returns false when something else comes. */
static bool take(struct scan *s, unsigned char ch)
{
	skip_space(s);
	if (s->p >= s->end || *s->p != ch)
		return false;
	s->p++;
	return true;
}

/* The value of 4 hex digits at p, or -1. */
static long hex4(const unsigned char *p)
{
	long v = 0;
	int i;

	for (i = 0; i < 4; i++) {
		unsigned char ch = p[i];
		int d = ch >= '0' && ch <= '9' ? ch - '0' :
			ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 :
			ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;

		if (d < 0)
			return -1;
		v = v * 16 + d;
	}
	return v;
}

/*
 * Takes a JSON string, after white space, checked as jansson checks one:
 * valid escapes (a high surrogate followed by a low one, never a low one
 * alone), no control character, UTF-8.  Its text between the quotes, as
 * written, goes to *text and *len (both may be NULL).  Returns false for
 * anything else, and for a string that data cuts short.
 */
static bool take_string(struct scan *s, const char **text, size_t *len)
{
	const unsigned char *start;

	if (!take(s, '"'))
		return false;
	start = s->p;
	while (s->p < s->end) {
		unsigned char ch = *s->p;
		size_t left = (size_t)(s->end - s->p), n;
		long u;

		if (ch == '"') {
			if (text)
				*text = (const char *)start;
			if (len)
				*len = (size_t)(s->p - start);
			s->p++;
			return true;
		}
		if (ch < 0x20)
			return false;
		if (ch != '\\') {
			n = ch < 0x80 ? 1 : text_utf8_charn(s->p, left);
			if (!n)
				return false;
			s->p += n;
			continue;
		}
		if (left < 2)
			return false;
		if (s->p[1] != 'u') {
			if (!strchr("\"\\/bfnrt", s->p[1]) || !s->p[1])
				return false;
			s->p += 2;
			continue;
		}
		if (left < 6 || (u = hex4(s->p + 2)) < 0 ||
		    (u >= 0xdc00 && u <= 0xdfff))
			return false;
		s->p += 6;
		if (u >= 0xd800 && u <= 0xdbff) {
			left -= 6;
			if (left < 6 || s->p[0] != '\\' || s->p[1] != 'u' ||
			    (u = hex4(s->p + 2)) < 0xdc00 || u > 0xdfff)
				return false;
			s->p += 6;
		}
	}
	return false;
}

/* Whether ch may be part of a number or of true, false, null. */
static bool is_scalar_byte(unsigned char ch)
{
	return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') ||
	       ch == '-' || ch == '+' || ch == '.' || ch == 'E';
}

/*
 * Skips one value, after white space, with constant memory: a string, a
 * scalar (which data must not end in), or an object or array up to the
 * bracket that closes it, counted.  Loose: what is between the brackets
 * is not checked, but strings are, so a bracket inside one is no bracket.
 */
static bool skip_value(struct scan *s)
{
	size_t depth = 0;
	const unsigned char *start;

	skip_space(s);
	while (s->p < s->end) {
		unsigned char ch = *s->p;

		if (ch == '"') {
			if (!take_string(s, NULL, NULL))
				return false;
		} else if (ch == '{' || ch == '[') {
			depth++;
			s->p++;
		} else if (ch == '}' || ch == ']') {
			if (!depth)
				return false;
			depth--;
			s->p++;
		} else if (depth) {
			s->p++;
		} else {
			for (start = s->p; s->p < s->end &&
			     is_scalar_byte(*s->p); s->p++)
				;
			return s->p > start && s->p < s->end;
		}
		if (!depth)
			return true;
	}
	return false;
}

/* Whether text[0..len) is the literal lit. */
static bool same(const char *text, size_t len, const char *lit)
{
	return len == strlen(lit) && !memcmp(text, lit, len);
}

/*
 * Finds "uid" among the members of the request object, whose opening
 * brace was taken: its text goes to *uid and *len.
 */
static bool find_uid(struct scan *s, const char **uid, size_t *len)
{
	const char *key;
	size_t klen;

	if (take(s, '}'))
		return false;
	for (;;) {
		if (!take_string(s, &key, &klen) || !take(s, ':'))
			return false;
		if (same(key, klen, "uid"))
			return take_string(s, uid, len);
		if (!skip_value(s) || !take(s, ','))
			return false;
	}
}

int review_prefix_scann(const char *data, size_t len,
			struct review_prefix *out)
{
	struct scan s = { (const unsigned char *)data,
			  (const unsigned char *)data + len };
	const char *api = NULL, *key, *v, *uid = NULL;
	size_t klen, vlen, uid_len = 0;
	bool kind = false;

	if (!take(&s, '{'))
		return -1;
	for (;;) {
		if (!take_string(&s, &key, &klen) || !take(&s, ':'))
			return -1;
		if (same(key, klen, "kind")) {
			if (kind || !take_string(&s, &v, &vlen) ||
			    !same(v, vlen, "AdmissionReview"))
				return -1;
			kind = true;
		} else if (same(key, klen, "apiVersion")) {
			if (api || !take_string(&s, &v, &vlen))
				return -1;
			api = same(v, vlen, "admission.k8s.io/v1") ?
			      "admission.k8s.io/v1" :
			      same(v, vlen, "admission.k8s.io/v1beta1") ?
			      "admission.k8s.io/v1beta1" : NULL;
			if (!api)
				return -1;
		} else if (same(key, klen, "request")) {
			if (!take(&s, '{') || !find_uid(&s, &uid, &uid_len))
				return -1;
			break;
		} else if (!skip_value(&s)) {
			return -1;
		}
		if (!take(&s, ','))
			return -1;
	}
	if (!kind || !api || !uid_len || uid_len > REVIEW_UID_MAX)
		return -1;
	out->api_version = api;
	memcpy(out->uid, uid, uid_len);
	out->uid[uid_len] = '\0';
	out->uid_len = uid_len;
	return 0;
}

/* The Kubernetes reason of a status code of review_deny_prefix(). */
static const char *deny_reason(int code)
{
	switch (code) {
	case 413:
		return "RequestEntityTooLarge";
	case 503:
		return "ServiceUnavailable";
	default:
		return policy_decision_reason(code);
	}
}

int review_deny_prefix(const struct review_prefix *p, int code,
		       const char *message, struct review_answer *ans)
{
	struct buf out = BUF_INIT;

	buf_addf(&out, "{\"apiVersion\":\"%s\",\"kind\":\"AdmissionReview\","
		 "\"response\":{\"uid\":\"", p->api_version);
	buf_addn(&out, p->uid, p->uid_len);
	buf_addf(&out, "\",\"allowed\":false,\"status\":{\"code\":%d,"
		 "\"reason\":\"%s\",\"message\":", code, deny_reason(code));
	jsonout_quoten(&out, message, strlen(message));
	buf_add(&out, "}}}");
	free(ans->body);
	ans->body = buf_detach(&out, &ans->body_len);
	if (!ans->body)
		return text_answer(ans, 500, "internal error: out of memory");
	ans->http_status = 200;
	ans->content_type = CONTENT_JSON;
	ans->outcome = REVIEW_DENIED;
	ans->ops = 0;
	text_mask_cutn(ans->uid, REVIEW_FIELD_MAX, p->uid, p->uid_len, 63);
	/* The audit fields of a denial (behaviour §6, logs): the rest of the
	 * request was never read. */
	ans->audit = true;
	ans->code = code;
	free(ans->message);
	ans->message = strdup(message);
	if (!ans->message)
		return text_answer(ans, 500, "internal error: out of memory");
	return 0;
}
