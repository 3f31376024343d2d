/*
 * pattern.h - name patterns of the config (behaviour §2.1): `*` matches
 * any run of bytes, none included; every other byte matches itself.
 *
 * A set is compiled once, when the config is loaded, and only read
 * afterwards, so any number of threads may share it.  A pattern without
 * `*` is compared whole; one with `*` keeps its literal prefix and suffix
 * so that most names are refused by two memcmp() calls.
 */
#ifndef PATTERN_H
#define PATTERN_H

#include <stdbool.h>
#include <stddef.h>

#include "compiler.h"

struct pattern {
	char *text;    /* owned, NUL-terminated */
	size_t len;
	size_t prefix; /* bytes before the first `*`; len when there is none */
	size_t suffix; /* bytes after the last `*`; 0 when there is none */
	bool wild;     /* has a `*` */
};

struct pattern_set {
	struct pattern *items; /* owned */
	size_t n;
	/* A name can match only when its first byte is set here, or when
	 * some pattern starts with `*` (any_first); the empty name only when
	 * some pattern can match it (empty).  Most names stop at this test. */
	unsigned char first[32];
	bool any_first;
	bool empty;
};

#define PATTERN_SET_INIT { NULL, 0, { 0 }, false, false }

/*
 * Compiles texts[0..n) (copied) into *set, whose former content is not
 * looked at.  Returns 0, or -1 out of memory (*set is then empty).
 */
int pattern_set_init(struct pattern_set *set, const char *const *texts,
		     size_t n) COMPILER_WUR;

/* Copies src into *dst.  Returns 0, or -1 out of memory (*dst empty). */
int pattern_set_copy(struct pattern_set *dst, const struct pattern_set *src)
	COMPILER_WUR;

/* Frees what set owns.  Accepts an empty or released set. */
void pattern_set_release(struct pattern_set *set);

/* Whether s[0..len) matches p. */
bool pattern_matchn(const struct pattern *p, const char *s, size_t len);

/*
 * The index of the first pattern of set that s[0..len) matches, or -1.
 * An empty set costs nothing.
 */
long pattern_set_findn(const struct pattern_set *set, const char *s,
		       size_t len);

/*
 * Whether p is an exact name or a `prefix*` (a single `*`, at the end):
 * the patterns a CEL expression can test with == and startsWith().
 */
bool pattern_is_simple(const struct pattern *p);

#endif /* PATTERN_H */
