/*
 * util.h - small helpers of the webhook: JSON output, base64.  The growable
 * string is in buf.h, masking in text.h.
 */
#ifndef UTIL_H
#define UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "buf.h"
#include "compiler.h"
#include "text.h"

/* The old names of compiler.h and text.h, until every file uses the new
 * ones. */
#define UTIL_PRINTF(f, a) COMPILER_PRINTF(f, a)
#define UTIL_WUR COMPILER_WUR
#define util_mask_cut text_mask_cutn

/* "an object", "an array", "a string", "a number", "a boolean" or "null":
 * the JSON type of v for messages. */
const char *util_json_type(const json_t *v);

/*
 * Appends s[0..len) as a JSON string, quoted and escaped as jansson's
 * json_dumps() escapes it: '"', '\\' and control characters only, UTF-8
 * kept as it is.  s must be valid UTF-8 (it may hold NUL).
 */
void util_json_quote(struct buf *b, const char *s, size_t len);

/*
 * Appends the compact JSON text of v, the same bytes as
 * json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY): objects in their order.
 */
void util_json_dump(struct buf *b, const json_t *v);

/* The base64 (RFC 4648, padded) of data[0..len); malloc'd, or NULL. */
char *util_base64(const void *data, size_t len, size_t *out_len) UTIL_WUR;

#endif /* UTIL_H */
