/*
 * policy.h - deciding one pod (SPEC sections 3 and 4): the operations of
 * the patch, the warnings, or a denial.  It sees a borrowed pod and a
 * config; it knows nothing of HTTP or of the AdmissionReview envelope.
 */
#ifndef POLICY_H
#define POLICY_H

#include <jansson.h>

#include "config.h"
#include "patch.h"

#define POLICY_WARNING_MAX_CHARS 120
#define POLICY_WARNINGS_MAX 30

struct decision {
	int code;           /* 0 when allowed; 400, 403 or 422 when denied */
	char *message;      /* the denial's message (owned), else NULL */
	struct patch patch; /* the operations when allowed; may be empty */
	json_t *warnings;   /* array of strings, when allowed */
};

/* Returns 0, or -1 out of memory. */
int decision_init(struct decision *d) UTIL_WUR;
void decision_release(struct decision *d);

/* "BadRequest", "Forbidden" or "Invalid" for a denial code. */
const char *decision_reason(int code);

/*
 * Decides the pod (the object of a Pod CREATE) under cfg and fills *d,
 * which decision_init() prepared and which is empty.  pod is only read.
 * Returns 0 when *d holds the decision, or -1 out of memory (*d is then
 * incomplete and must only be released).
 */
int policy_decide(const struct config *cfg, const json_t *pod,
		  struct decision *d) UTIL_WUR;

#endif /* POLICY_H */
