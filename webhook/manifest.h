/*
 * manifest.h - the `default` command on Kubernetes manifests (SPEC
 * section 8): JSON or YAML in, one object, a multi-document stream or a
 * List; each Pod and each workload's pod template decided by
 * review_pod_apply() (the decision review and serve make) and patched in
 * place; the manifests out in the input's format.
 */
#ifndef MANIFEST_H
#define MANIFEST_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "buf.h"
#include "compiler.h"

struct config;

/* Exit statuses of `default`, also the order in which they win. */
enum manifest_status {
	MANIFEST_OK = 0,      /* defaulted (or nothing to do) */
	MANIFEST_DENIED = 1,  /* some object denied */
	MANIFEST_INPUT = 2,   /* unreadable input, a syntax error, a limit */
	MANIFEST_CHANGED = 3, /* --check: something would change */
};

struct manifest_options {
	const char *namespace_; /* for objects without one; NULL: "default" */
	bool check;             /* say what would change, write nothing */
	bool resource_list;     /* the input must be a ResourceList (a KRM
				   function run without arguments) */
};

/*
 * Defaults the manifests in buf[0..len) with cfg.  The manifests go to
 * out (only when the status is MANIFEST_OK and check is off; for a KRM
 * ResourceList, also when it is MANIFEST_DENIED, its results saying why:
 * docs/behaviour.md §8 "KRM functions"), and one
 * line per warning, denial, error or (with check) changed object goes to
 * msgs, each ending in a newline:
 *   warning: KIND NAMESPACE/NAME: TEXT
 *   error: document N (KIND NAMESPACE/NAME): MESSAGE
 *   error: document N: line L, column C: MESSAGE
 *   KIND NAMESPACE/NAME: N operations
 * Returns the exit status: the first of 2, 1, 3, 0 that applies.  Out of
 * memory is an error of status 2.
 */
enum manifest_status manifest_default(const struct config *cfg,
				      const char *buf, size_t len,
				      const struct manifest_options *opt,
				      struct buf *out, struct buf *msgs);

/*
 * Defaults the one object obj in place (a Pod, a workload, a kind not
 * known: §8 "Objects"), as `default` does each object of a stream, and
 * appends to results (an array) a KRM result for each of its warnings and
 * denials, as for an item of a ResourceList (§8 "KRM functions"):
 * {message, severity, resourceRef[, field]}.  *changed says whether an
 * operation applied.  Returns MANIFEST_OK (allowed), MANIFEST_DENIED, or
 * MANIFEST_INPUT (out of memory, an error inside the object).  For `test`
 * (cmd_test.c).
 */
enum manifest_status manifest_default_object(const struct config *cfg,
					     json_t *obj,
					     const struct manifest_options *opt,
					     json_t *results, bool *changed);

#endif /* MANIFEST_H */
