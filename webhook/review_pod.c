/*
 * review_pod.c - the offline defaulter's core (review_pod.h): one Pod
 * decided as a Pod CREATE, with the operations applied.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonout.h"
#include "patch.h"
#include "pick.h"
#include "policy.h"
#include "review.h"
#include "review_pod.h"
#include "text.h"

void review_pod_answer_init(struct review_pod_answer *ans)
{
	memset(ans, 0, sizeof(*ans));
	ans->status = REVIEW_POD_FAILED;
}

void review_pod_answer_release(struct review_pod_answer *ans)
{
	jsonout_free(ans->pod); /* jansson's text (arena.h) */
	free(ans->message);
	json_decref(ans->warnings);
	review_pod_answer_init(ans);
}

/* Sets a status other than REVIEW_POD_DEFAULTED.  Returns -1. */
__attribute__((format(printf, 3, 4)))
static int pod_fails(struct review_pod_answer *ans,
		     enum review_pod_status status, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	free(ans->message);
	ans->message = n < 0 ? NULL : malloc((size_t)n + 1);
	if (ans->message) {
		va_start(ap, fmt);
		vsnprintf(ans->message, (size_t)n + 1, fmt, ap);
		va_end(ap);
	}
	ans->status = status;
	return -1;
}

int review_pod_apply(const struct config *cfg, json_t *pod,
		     struct review_pod_answer *ans)
{
	struct policy_decision d;
	char err[256];
	int rc = -1;

	if (policy_decision_init(&d))
		return pod_fails(ans, REVIEW_POD_FAILED, "out of memory");
	if (policy_decide(cfg, pod, &d)) {
		pod_fails(ans, REVIEW_POD_FAILED, "out of memory");
		goto out;
	}
	if (d.code) {
		pod_fails(ans, REVIEW_POD_DENIED, "denied (%d %s): %s", d.code,
			  policy_decision_reason(d.code), d.message);
		goto out;
	}
	if (patch_apply(pod, &d.patch, err, sizeof(err))) {
		pod_fails(ans, REVIEW_POD_FAILED, "%s", err);
		goto out;
	}
	json_decref(ans->warnings);
	ans->warnings = json_incref(d.warnings);
	ans->ops = patch_count(&d.patch);
	ans->status = REVIEW_POD_DEFAULTED;
	rc = 0;
out:
	policy_decision_release(&d);
	return rc;
}

int review_pod(const struct config *cfg, const char *body, size_t len,
	       struct review_pod_answer *ans)
{
	struct pick_error perr;
	const json_t *kind, *meta;
	json_t *pod;
	int rc = -1, precision = 1;

	/* The decoder of review, keeping everything: the same verdict on
	 * the same bytes. */
	pod = pick_loadb(body, len, &pick_all, &perr);
	if (!pod)
		return pod_fails(ans, REVIEW_POD_NOT_JSON,
				 "%s (line %d, column %d)", perr.text,
				 perr.line, perr.column);
	kind = json_object_get(pod, "kind");
	if (!json_is_object(pod) || !json_is_string(kind) ||
	    json_string_length(kind) != 3 ||
	    strcmp(json_string_value(kind), "Pod")) {
		char shown[REVIEW_FIELD_MAX];

		if (json_is_string(kind))
			text_mask_cutn(shown, sizeof(shown),
				       json_string_value(kind),
				       json_string_length(kind), 64);
		else
			snprintf(shown, sizeof(shown), "(no kind)");
		rc = pod_fails(ans, REVIEW_POD_NOT_POD, "not a Pod: %s", shown);
		json_decref(pod);
		return rc;
	}
	meta = json_object_get(pod, "metadata");
	cfg = review_select(cfg, json_object_get(meta, "namespace"), NULL,
			    "default", json_object_get(meta, "labels"));
	if (review_pod_apply(cfg, pod, ans))
		goto out;
	/* Reals are printed with the fewest digits that keep their value, so
	 * that cpu: 0.1 stays 0.1 (jansson's default of 17 digits would not). */
	jsonout_value_precision(pod, &precision);
	ans->pod = json_dumps(pod, JSON_INDENT(2) |
				   JSON_REAL_PRECISION(precision));
	if (!ans->pod) {
		pod_fails(ans, REVIEW_POD_FAILED, "out of memory");
		goto out;
	}
	rc = 0;
out:
	json_decref(pod);
	return rc;
}
