/*
 * tplpath.h - where the pod templates of a workload sit (docs/behaviour.md
 * §8 "Objects"): a small path language over a JSON object.
 *
 * A path is "" (the object itself: a Pod) or segments joined by ".":
 *   NAME    the member NAME of an object
 *   *       every member of an object, in its order
 *   NAME[]  every item of the array that is the member NAME
 *   *[]     every item of every array that is a member
 * so "spec.pytorchReplicaSpecs.*.template" finds the template of every
 * replica spec and "spec.workerGroupSpecs[].template" that of every worker
 * group.  A NAME is 1 to 253 bytes of anything but ".", "*", "[", "]" and
 * control bytes.
 */
#ifndef TPLPATH_H
#define TPLPATH_H

#include <stddef.h>

#include <jansson.h>

#include "buf.h"
#include "compiler.h"

/*
 * Whether path is a valid path: 0, or -1 with a message saying what is
 * wrong with it (the path itself not quoted) in err[0..errlen).
 */
int tplpath_check(const char *path, char *err, size_t errlen) COMPILER_WUR;

/* Whether path holds a wildcard ("*" or "[]"). */
int tplpath_has_wildcard(const char *path);

/*
 * Called by tplpath_each() for each template found: tpl (borrowed, an
 * object that the callee may change) and where it is ("spec.x.Worker.
 * template", "spec.groups[1].template"; member names masked and cut).
 * Returns 0 to go on, -1 to stop.
 */
typedef int tplpath_fn(void *ctx, json_t *tpl, const char *where);

/*
 * Calls fn for each value of obj at path (valid by tplpath_check()), in
 * the order of the members and items.  A member that is absent or null
 * on the way leads nowhere, silently; so does a null item.  Returns 0,
 * -1 when fn stopped, or -2 with "WHERE: expected an object, got TYPE"
 * (or "an array") in err when a value on the way, or found, has another
 * type.
 */
int tplpath_each(json_t *obj, const char *path, tplpath_fn *fn, void *ctx,
		 char *err, size_t errlen) COMPILER_WUR;

#endif /* TPLPATH_H */
