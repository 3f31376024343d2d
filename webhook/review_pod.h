/*
 * review_pod.h - the offline defaulter's core: one bare Pod decided as the
 * object of a Pod CREATE, and the operations applied to it.  `default`
 * (manifest.c) uses review_pod_apply() on each pod it finds; review_pod()
 * takes the bytes of one Pod.  The AdmissionReview codec is review.h.
 */
#ifndef REVIEW_POD_H
#define REVIEW_POD_H

#include <stddef.h>

#include <jansson.h>

struct config;

/* What review_pod() made of one bare Pod. */
enum review_pod_status {
	REVIEW_POD_DEFAULTED, /* allowed: pod is the defaulted Pod */
	REVIEW_POD_DENIED,    /* message: "denied (403 Forbidden): ..." */
	REVIEW_POD_NOT_JSON,  /* message: "REASON (line L, column C)" */
	REVIEW_POD_NOT_POD,   /* message: "not a Pod: KIND" */
	REVIEW_POD_FAILED,    /* out of memory, or the patch did not apply */
};

/*
 * The answer for one Pod.  pod and warnings are set for
 * REVIEW_POD_DEFAULTED only, message for the other statuses (NULL there
 * when memory ran out).
 */
struct review_pod_answer {
	enum review_pod_status status;
	/* The Pod with the operations applied: JSON indented by 2, without a
	 * trailing newline; reals keep the fewest digits that keep their
	 * value (0.1 stays 0.1). */
	char *pod;
	char *message;    /* one line, for the user */
	json_t *warnings; /* array of strings, possibly empty */
	size_t ops;       /* operations applied (REVIEW_POD_DEFAULTED) */
};

void review_pod_answer_init(struct review_pod_answer *ans);
void review_pod_answer_release(struct review_pod_answer *ans);

/*
 * Decides the bare Pod object in body[0..len) with cfg (its profile chosen
 * by review_select() from the pod's metadata.namespace, else "default"), as
 * review_handlen() decides the object of a Pod CREATE, and applies the
 * operations to it.  Fills *ans, which must have been initialised.
 * Returns 0 for REVIEW_POD_DEFAULTED and -1 otherwise.
 */
int review_pod(const struct config *cfg, const char *body, size_t len,
	       struct review_pod_answer *ans);

/*
 * The core of review_pod() for a Pod already decoded: decides pod (the
 * object of a Pod CREATE, borrowed) with cfg, the config review_select()
 * chose for it (nothing is selected here), and applies the operations to
 * it in place.  Sets ans->status, ->ops and ->warnings (REVIEW_POD_DEFAULTED)
 * or ->message; ans->pod stays NULL.  Returns 0 for REVIEW_POD_DEFAULTED and
 * -1 otherwise (pod is then unchanged, unless the patch failed to apply).
 */
int review_pod_apply(const struct config *cfg, json_t *pod,
		     struct review_pod_answer *ans);

#endif /* REVIEW_POD_H */
