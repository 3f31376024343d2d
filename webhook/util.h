/*
 * util.h - the old names of the helpers, for the files that still use
 * them: the growable string is in buf.h, masking and numbers in text.h,
 * JSON output in jsonout.h, the attributes in compiler.h.  This header
 * goes once no file includes it.
 */
#ifndef UTIL_H
#define UTIL_H

#include "buf.h"
#include "compiler.h"
#include "jsonout.h"
#include "text.h"

#define UTIL_PRINTF(f, a) COMPILER_PRINTF(f, a)
#define UTIL_WUR COMPILER_WUR
#define util_mask_cut text_mask_cutn
#define util_json_type jsonout_type_name

#endif /* UTIL_H */
