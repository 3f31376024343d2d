/*
 * patch.h - building an RFC 6902 JSON Patch of add and replace operations,
 * encoding it, and applying it (the `default` command applies the very
 * operations that `review` sends).
 */
#ifndef PATCH_H
#define PATCH_H

#include <stddef.h>

#include <jansson.h>

#include "buf.h"
#include "compiler.h"

struct patch {
	json_t *ops; /* array of {"op", "path", "value"} in order */
};

/* Returns 0, or -1 out of memory. */
int patch_init(struct patch *p) COMPILER_WUR;
void patch_release(struct patch *p);

/* The number of operations. */
size_t patch_count(const struct patch *p);

/*
 * Appends {"op": op, "path": path, "value": value}; op is "add" or
 * "replace", or "remove" with value NULL (no "value" member).  value is
 * stolen, also on failure.  Returns 0, or -1 out of memory.
 */
int patch_push(struct patch *p, const char *op, const char *path,
	       json_t *value) COMPILER_WUR;

/* Appends "/" and key escaped per RFC 6901 (~ as ~0, / as ~1) to b. */
void patch_pointer_append(struct buf *b, const char *key);

/*
 * The base64 of the compact JSON of the operations (malloc'd), or NULL out
 * of memory.  The same operations always give the same bytes.
 */
char *patch_encode(const struct patch *p) COMPILER_WUR;

/*
 * Applies the operations to doc in order.  Supports what patch_push
 * produces: add of an object member (added or replaced), add at "/-" of an
 * array, replace of an array element, remove of an object member or an
 * array element.  Returns 0, or -1 with a message in
 * err when a path does not resolve (doc may then be partly changed).
 */
int patch_apply(json_t *doc, const struct patch *p, char *err,
		size_t errlen) COMPILER_WUR;

#endif /* PATCH_H */
