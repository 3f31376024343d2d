/*
 * policy.h - deciding one pod (docs/behaviour.md §3 and §4): the
 * operations of the patch, the warnings, or a denial.  It sees a borrowed
 * pod and a config; it knows nothing of HTTP or of the AdmissionReview
 * envelope.
 *
 * The pod is read through pod.h (whose pod_rule tells the decoder what to
 * keep of a review) and the operations are written by mutate.h; this
 * module holds the gates and the resolution between the two.
 */
#ifndef POLICY_H
#define POLICY_H

#include <jansson.h>

#include "compiler.h"
#include "config.h"
#include "guard.h"
#include "patch.h"

/* A warning is one line of at most this many characters (POD_LINE_CHARS). */
#define POLICY_WARNING_MAX_CHARS 120
/* After this many warnings, one line counts the rest. */
#define POLICY_WARNINGS_MAX 30

/* A decision owns everything it points to. */
struct policy_decision {
	int code;           /* 0 when allowed; 400, 403 or 422 when denied */
	char *message;      /* the denial's message, else NULL */
	struct patch patch; /* the operations when allowed; may be empty */
	json_t *warnings;   /* array of strings, when allowed; at most
			       POLICY_WARNINGS_MAX lines and a count */
	struct guard_hits hits; /* guard hits, by guard and action */
};

/* What is asked of the policy (behaviour §4.1). */
enum policy_operation {
	POLICY_CREATE,    /* a Pod CREATE: every step */
	POLICY_UPDATE,    /* a Pod UPDATE, or of pods/status: the annotation
			     guard alone, against oldObject */
	POLICY_EPHEMERAL, /* an UPDATE of pods/ephemeralcontainers: the
			     ephemeral containers it adds get the guards, the
			     privileged policy and overwriteEnv */
	POLICY_BINDING,   /* a Binding CREATE (pods/binding, bindings): the
			     annotation guard alone, over the annotations the
			     API server copies onto the pod */
};

/* The requester: request.userInfo. */
struct policy_requester {
	const char *username; /* "" when absent */
	const json_t *groups; /* array of strings, or NULL */
};

/* One request to decide; its pointers are borrowed. */
struct policy_request {
	enum policy_operation op;
	const json_t *object; /* request.object: any JSON value, or NULL */
	const json_t *old;    /* request.oldObject, likewise */
	const struct policy_requester *who; /* NULL: nobody */
	bool list;     /* POLICY_EPHEMERAL: the object is an
			  EphemeralContainers object (request.kind
			  EphemeralContainers, Kubernetes 1.16 to 1.21), not a
			  Pod */
	bool validate; /* the answer cannot carry a patch (POST /validate):
			  strip denies, and an env entry the webhook writes
			  is no violation only when it already has the value
			  written */
};

/* An empty decision.  Returns 0, or -1 out of memory (d is then empty). */
int policy_decision_init(struct policy_decision *d) COMPILER_WUR;

/* Frees what d owns.  Accepts a released decision. */
void policy_decision_release(struct policy_decision *d);

/* "BadRequest", "Forbidden" or "Invalid" for a denial code. */
const char *policy_decision_reason(int code);

/*
 * Decides the pod (the object of a Pod CREATE) under cfg and fills *d,
 * which policy_decision_init() prepared and which is empty.  pod is only
 * read, and d keeps no reference to it.  Returns 0 when *d holds the
 * decision, or -1 out of memory (*d is then incomplete and must only be
 * released).
 */
int policy_decide(const struct config *cfg, const json_t *pod,
		  struct policy_decision *d) COMPILER_WUR;

/*
 * policy_decide() for any request: req->object not an object is a denial
 * with 400; req->old is read on POLICY_UPDATE (likewise) and
 * POLICY_EPHEMERAL (absent or null: no ephemeral container is there yet).
 * An UPDATE and a Binding are never patched.  Borrowed arguments, as
 * policy_decide().
 */
int policy_decide_request(const struct config *cfg,
			  const struct policy_request *req,
			  struct policy_decision *d) COMPILER_WUR;

/*
 * Whether the request needs the policy at all: an UPDATE or a Binding with
 * the guard it would run off is allowed unchanged without reading
 * anything.
 */
bool policy_wants(const struct config *cfg, enum policy_operation op);

#endif /* POLICY_H */
