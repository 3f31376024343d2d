/*
 * review.h - the AdmissionReview codec: one request body in, one answer
 * out.  review_handlen() is the entry point shared by `serve` and `review`
 * (review_pod.h holds that of `default`); it knows nothing of HTTP.
 */
#ifndef REVIEW_H
#define REVIEW_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "compiler.h"
#include "guard.h"

struct config;
struct policy_requester;

enum review_outcome {
	REVIEW_PATCHED, /* allowed with a patch */
	REVIEW_ALLOWED, /* allowed unchanged */
	REVIEW_DENIED,  /* allowed: false */
	REVIEW_ERROR,   /* not an AdmissionReview, or an internal failure */
};

/* "patched", "allowed", "denied" or "error": the metric and log label. */
const char *review_outcome_name(enum review_outcome outcome);

/*
 * The largest request body decided; a larger one is not read into memory
 * (review_prefix_scann() and review_deny_prefix() answer it).  40 MiB
 * holds every review a real API server sends for a pod it can store: it
 * takes request bodies of at most 3 MiB, a character of a string may come
 * back escaped in 6 bytes ("<" is written \u003c), and an UPDATE carries
 * both object and oldObject, so 2 x 6 x 3 MiB = 36 MiB, and 4 MiB more for
 * the envelope (userInfo, options) and the managedFields it adds.
 */
#define REVIEW_BODY_MAX ((size_t)40 << 20)

#define REVIEW_FIELD_MAX 96

/*
 * The answer to one body.  The strings uid, namespace_, name, operation,
 * kind, subresource and user are copies from the request for logging, cut
 * short with "..." and with control characters removed; "" when absent.
 * name is metadata.name, or metadata.generateName when there is no name;
 * kind is request.kind.kind, user request.userInfo.username.
 *
 * The audit trail (behaviour §6, logs): audit is set for a denial and for
 * an answer with a guard hit; then user, kind, subresource and dry_run
 * are filled, and for a denial code and message too.
 */
struct review_answer {
	int http_status;          /* 200, 400 (not a review) or 500 */
	const char *content_type; /* static: JSON, or text for 400 and 500 */
	char *body;               /* owned; no trailing newline */
	size_t body_len;
	enum review_outcome outcome;
	size_t ops; /* operations in the patch */
	char uid[REVIEW_FIELD_MAX];
	char namespace_[REVIEW_FIELD_MAX];
	char name[REVIEW_FIELD_MAX];
	char operation[REVIEW_FIELD_MAX];
	const char *profile;    /* the profile applied, "" for none; borrowed
				   from the config, which outlives the answer */
	const char *allocation; /* static: the allocation of the config
				   applied (behaviour §2), "hami" by
				   default */
	struct guard_hits hits; /* the guards' hits in this review */
	bool audit;             /* the fields below are filled */
	char user[REVIEW_FIELD_MAX];
	char kind[REVIEW_FIELD_MAX];
	char subresource[REVIEW_FIELD_MAX];
	const char *dry_run;    /* static: "true", "false", or "" */
	int code;               /* a denial's code, else 0 */
	char *message;          /* owned: a denial's message, masked and cut
				   to REVIEW_MESSAGE_CHARS; else NULL */
};

/* A denial's message in the log is cut to this many characters. */
#define REVIEW_MESSAGE_CHARS 400

/* The largest request.uid read by review_prefix_scann(), as JSON text. */
#define REVIEW_UID_MAX 256

/* What review_prefix_scann() read of the start of an AdmissionReview. */
struct review_prefix {
	const char *api_version; /* static: "admission.k8s.io/v1" or ...v1beta1 */
	/* request.uid as written, between its quotes: JSON string text whose
	 * escapes are valid (a surrogate escape has its pair), without
	 * control characters, in UTF-8; NUL-terminated. */
	char uid[REVIEW_UID_MAX + 1];
	size_t uid_len;
};

/* How a review is answered; a zeroed struct is the default. */
struct review_options {
	/* Replaces request.userInfo: username when not NULL, groups when
	 * not NULL (the `review` command's --user and --group). */
	const char *username;
	const json_t *groups;
	/* POST /validate: the same decision, never a patch. */
	bool validate;
};

void review_answer_init(struct review_answer *ans);
void review_answer_release(struct review_answer *ans);

/*
 * Decodes the AdmissionReview in body[0..len), decides it with cfg, and
 * fills *ans (which must have been initialised).  Always fills an answer:
 * 200 with a JSON AdmissionReview response (allowed, patched or denied,
 * also a denial with 400 when a field it reads nests deeper than 2048
 * levels; what it does not read may nest to any depth); 400 with a
 * one-line text reason when the body is not JSON or not an AdmissionReview
 * (docs/behaviour.md §5.1); 500 when memory ran out.  Returns 0 for a 200
 * answer and -1 otherwise.  Thread-safe: cfg is only read.  Its stack does
 * not grow with the depth of what it skips.
 */
int review_handlen(const struct config *cfg, const char *body, size_t len,
		   struct review_answer *ans);

/* review_handlen() with options (NULL: the defaults). */
int review_handlen_with(const struct config *cfg, const char *body,
			size_t len, const struct review_options *opt,
			struct review_answer *ans);

/*
 * review_handlen() for a document already decoded (borrowed): the answer
 * to root as a whole.  review_handlen() decodes only what the policy reads
 * and gives the same answer as this function on the full decode, wherever
 * jansson can decode the body; tests and the fuzzer hold the two to that.
 */
int review_handle_json(const struct config *cfg, const json_t *root,
		       struct review_answer *ans);

/*
 * Reads the start of an AdmissionReview from data[0..len), which may stop
 * anywhere (the first bytes of a body that is not read whole): a JSON
 * object whose members "kind" (AdmissionReview), "apiVersion"
 * (admission.k8s.io/v1 or v1beta1) and "request" come before the end of
 * data, "request" last of them and an object whose "uid" is a non-empty
 * string of at most REVIEW_UID_MAX bytes as written.  The API server
 * writes them in that order, first.  Other members before them are
 * skipped with constant memory, checked loosely: this is no parse of the
 * whole body, which may not even be JSON.  Returns 0 with *out filled, or
 * -1 when they are not all found (out is then untouched).
 */
int review_prefix_scann(const char *data, size_t len,
			struct review_prefix *out) COMPILER_WUR;

/*
 * Fills *ans (initialised) with the answer that denies the review that p
 * was read from: HTTP 200, an AdmissionReview of p's apiVersion whose
 * response echoes p's uid, "allowed": false, and status code (413 and 503
 * have their Kubernetes reasons) and message (one line); outcome
 * REVIEW_DENIED, uid copied for the log (as written, masked, cut).
 * Returns 0, or -1 when memory ran out (then a 500, as review_handlen()).
 */
int review_deny_prefix(const struct review_prefix *p, int code,
		       const char *message, struct review_answer *ans);

/*
 * The one profile selector (behaviour §2.2) of `serve`, `review` and
 * `default`: the config of the first profile of cfg that selects a pod of
 * the namespace ns, else ns_alt (each a JSON value: the first that is a
 * non-empty string counts), else fallback (NULL: ""), and of the labels
 * labels (an object; anything else is no labels); cfg itself when no
 * profile selects it.  Borrowed arguments; the result lives as long as
 * cfg.
 *
 *   serve, review: request.namespace, the object's metadata.namespace,
 *                  NULL; labels of the object (CREATE) or of oldObject
 *   default:       the manifest's metadata.namespace, NULL, --namespace
 *                  or "default"; labels of the pod template
 */
const struct config *review_select(const struct config *cfg, const json_t *ns,
				   const json_t *ns_alt, const char *fallback,
				   const json_t *labels);

#endif /* REVIEW_H */
