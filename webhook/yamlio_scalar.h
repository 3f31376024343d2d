/*
 * yamlio_scalar.h - the scalar rules that the YAML reader and writer share
 * (yamlio.h says what they are): internal to yamlio_*.c.
 */
#ifndef YAMLIO_SCALAR_H
#define YAMLIO_SCALAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "compiler.h"

enum yamlio_scalar_kind {
	SCALAR_STRING,
	SCALAR_NULL,
	SCALAR_BOOL,
	SCALAR_INT,
	SCALAR_REAL,
	SCALAR_NONFINITE, /* a Go real that JSON cannot hold: .nan, .inf */
};

/* What a plain scalar means: kind, and the value of that kind. */
struct yamlio_scalar {
	enum yamlio_scalar_kind kind;
	bool b;
	int64_t i;
	double r;
};

/*
 * What go-yaml v2 makes of the plain scalar s[0..n) (its resolve()), into
 * *out.  Integers beyond int64 are reals, as JSON numbers.  Returns 0, or
 * -1 only out of memory.
 */
int yamlio_resolve_plain(const char *s, size_t n, struct yamlio_scalar *out)
	COMPILER_WUR;

#endif /* YAMLIO_SCALAR_H */
