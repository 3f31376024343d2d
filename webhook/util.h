/*
 * util.h - base64.  The growable string is in buf.h, masking in text.h,
 * JSON output in jsonout.h.
 */
#ifndef UTIL_H
#define UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "buf.h"
#include "compiler.h"
#include "jsonout.h"
#include "text.h"

/* The old names of compiler.h, text.h and jsonout.h, until every file
 * uses the new ones. */
#define UTIL_PRINTF(f, a) COMPILER_PRINTF(f, a)
#define UTIL_WUR COMPILER_WUR
#define util_mask_cut text_mask_cutn
#define util_json_type jsonout_type_name

/* The base64 (RFC 4648, padded) of data[0..len); malloc'd, or NULL. */
char *util_base64(const void *data, size_t len, size_t *out_len) UTIL_WUR;

#endif /* UTIL_H */
