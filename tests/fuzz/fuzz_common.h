/*
 * fuzz_common.h - configurations and checks shared by the fuzz targets.
 */
#ifndef FUZZ_COMMON_H
#define FUZZ_COMMON_H

#include <jansson.h>

#include "config.h"

#define FUZZ_ASSERT(cond)                                                     \
	do {                                                                  \
		if (!(cond))                                                  \
			fuzz_fail(#cond, __FILE__, __LINE__);                 \
	} while (0)

void fuzz_fail(const char *what, const char *file, int line)
	__attribute__((noreturn));

/* One of a few fixed configurations, picked by selector; built once. */
const struct config *fuzz_config(unsigned selector);

/* Every warning is a string of at most 120 characters; at most 31. */
void fuzz_check_warnings(const json_t *warnings);

/*
 * Decodes the base64 patch b64 and applies it to object, in place; the
 * patch must be a non-empty array of operations that applies.
 */
void fuzz_apply_patch(json_t *object, const char *b64);

/*
 * Decodes the base64 patch b64, applies it to a copy of object, and decides
 * the result again: it must be allowed with no operation.
 */
void fuzz_check_patch(const struct config *cfg, const json_t *object,
		      const char *b64);

#endif
