/*
 * jsonout.h - JSON text out: strings quoted, values dumped compact, the
 * names of JSON types for messages, and reals in their shortest form.
 *
 * Everything appends to a struct buf (buf.h): on failure the buffer is
 * marked failed, and the caller checks buf_failed() once at the end.  The
 * bytes are those jansson's json_dumps() writes, so an answer built here
 * and one dumped by jansson are the same.
 */
#ifndef JSONOUT_H
#define JSONOUT_H

#include <stddef.h>

#include <jansson.h>

#include "buf.h"

/*
 * "an object", "an array", "a string", "a number", "a boolean" or "null":
 * the JSON type of v (not NULL) for messages.  The string is static.
 */
const char *jsonout_type_name(const json_t *v);

/*
 * Appends s[0..len) as a JSON string, quoted and escaped as jansson's
 * json_dumps() escapes it: '"', '\\' and control characters only, UTF-8
 * kept as it is.  s must be valid UTF-8 (it may hold NUL).
 */
void jsonout_quoten(struct buf *b, const char *s, size_t len);

/*
 * Appends the compact JSON text of v (borrowed), the same bytes as
 * json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY): objects in their order.
 */
void jsonout_dump(struct buf *b, const json_t *v);

/*
 * The fewest significant digits, from min (1 to 17) up, with which "%.*g"
 * prints d so that strtod() reads back d exactly; 17 when no fewer do
 * (17 always do for a finite double).  For JSON_REAL_PRECISION(), and to
 * print a real as briefly as its value allows.
 */
int jsonout_real_precision(double d, int min);

/*
 * Raises *precision to the significant digits that print every real in v
 * exactly (JSON_REAL_PRECISION() for json_dumps()).
 */
void jsonout_value_precision(const json_t *v, int *precision);

/*
 * Frees memory that jansson handed to the caller, such as the text of
 * json_dumps(), with the free function installed in jansson (the arena's
 * when arena_setup() ran; see arena.h).  p may be NULL.
 */
void jsonout_free(void *p);

#endif /* JSONOUT_H */
