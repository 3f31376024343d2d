/*
 * nswarn.h - the warning `default` gives when a namespace profile could
 * apply to an object that names no namespace (behaviour §8): helm's
 * post-renderers, kustomize and plain files rarely carry
 * metadata.namespace, and an object without one is decided as in the
 * namespace of --namespace, or "default", so that the profiles selecting
 * the namespace it will be applied to are silently left out.
 */
#ifndef NSWARN_H
#define NSWARN_H

#include <stddef.h>

#include "buf.h"
#include "config.h"

/*
 * When namespace_ is NULL (no --namespace) and cfg has a profile that
 * selects by namespaces, appends to msgs one line for each object of the
 * manifests buf[0..len) (each document, and each item of a List) that
 * holds containers (a pod spec anywhere in it) and no
 * metadata.namespace:
 *   warning: KIND NAME: no namespace (neither metadata.namespace nor
 *   --namespace): decided as in namespace "default"; give --namespace
 *   (helm: --post-renderer-args --namespace=NS) for the profiles that
 *   select namespaces (P1, P2)
 * on one line.  Input that does not read as YAML or JSON is left to the
 * defaulter, which says why; nothing is appended for it.  Failures
 * show in buf_failed(msgs).
 */
void nswarn_manifests(const struct config *cfg, const char *namespace_,
		      const char *buf, size_t len, struct buf *msgs);

#endif /* NSWARN_H */
