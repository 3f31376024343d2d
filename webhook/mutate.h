/*
 * mutate.h - the operations of an allowed pod (pass 3 of policy.c), in the
 * order of docs/behaviour.md §5.3, and the warnings given with them.
 *
 * It writes what the policy decided: it takes a pod view that pod_read()
 * filled and that the policy resolved (every slot's req, every container's
 * and the pod's vgpu), and it decides nothing itself.
 */
#ifndef MUTATE_H
#define MUTATE_H

#include <stdbool.h>

#include <jansson.h>

#include "compiler.h"
#include "config.h"
#include "patch.h"
#include "pod.h"

/*
 * Appends to patch the operations of pod, read and resolved under cfg:
 * per container, in pod order, limits, requests and env; then, when the
 * pod is a vGPU pod, schedulerName, tolerations, runtimeClassName and the
 * scheduler-policy annotations.  With cfg's allocation dra, only the
 * guards' removals and the tolerations; mutate_pod() is not called for
 * allocation off (behaviour §2).  Appends each container's warnings to
 * warnings (an array of strings), in the same order.  pod is only read;
 * the values appended are new or shared (json_incref) with cfg, never with
 * the pod.  Returns 0, or -1 out of memory (patch and warnings are then
 * incomplete).
 */
int mutate_pod(const struct config *cfg, const struct pod *pod,
	       struct patch *patch, json_t *warnings) COMPILER_WUR;

/*
 * Only the removals of the guards (the strip lists of pod): per container
 * the env removals by descending index, then the annotation removals.
 * For a pod the policy does not examine further.  Returns 0, or -1 out of
 * memory.
 */
int mutate_strip(const struct pod *pod, struct patch *patch) COMPILER_WUR;

/*
 * Whether mutate_pod() sets the env variable name in c (behaviour §3.5 or
 * §3.6), c being read and resolved under cfg; with value not NULL, only
 * when it sets it to value[0..len).
 */
bool mutate_env_written(const struct config *cfg,
			const struct pod_container *c, const char *name,
			const char *value, size_t len);

#endif /* MUTATE_H */
