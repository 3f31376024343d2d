/*
 * toleration.h - Kubernetes tolerations: validating one of the config file
 * as the API server validates a pod's (ValidateTolerations), and comparing
 * two as the policy does before it adds one to a pod.
 *
 * A toleration is a JSON object with the members key, operator, value,
 * effect and tolerationSeconds; a member given as null is absent.  Every
 * function here only reads its arguments and keeps no reference to them.
 */
#ifndef TOLERATION_H
#define TOLERATION_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "compiler.h"

/*
 * Checks v, found at path (as "devices[0].tolerations[1]", for messages):
 * an object with no other member than the five above, each a string
 * (tolerationSeconds an integer), the operator Equal or Exists, the effect
 * NoSchedule, PreferNoSchedule or NoExecute, a qualified-name key (empty
 * only with Exists), a label value (empty with Exists), and
 * tolerationSeconds only with NoExecute.  Returns 0, or -1 with a message
 * that names path (and the member) in err[0..errlen).  A path shorter than
 * 160 bytes gives a message shorter than 512 bytes.
 */
int toleration_check(const json_t *v, const char *path, char *err,
		     size_t errlen) COMPILER_WUR;

/*
 * A new object with the members of v that are not null, in the order key,
 * operator, value, effect, tolerationSeconds (the values are shared with
 * v).  v is a toleration that toleration_check() accepted.  Returns a new
 * reference, or NULL out of memory.
 */
json_t *toleration_copy(const json_t *v) COMPILER_WUR;

/*
 * Whether a and b are the same toleration: equal key, operator, value and
 * effect, where a member that is absent, null or not a string counts as
 * "".  tolerationSeconds is not compared.
 */
bool toleration_equal(const json_t *a, const json_t *b);

/* Whether the array list holds a toleration equal to t. */
bool toleration_listed(const json_t *list, const json_t *t);

#endif /* TOLERATION_H */
