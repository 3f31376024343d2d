/*
 * text.h - bytes from the outside as text: UTF-8 characters, masking for
 * messages and logs, decimal numbers; and messages into a caller's buffer.
 *
 * Nothing here allocates or depends on the locale.  A string is given as
 * (pointer, length) and may hold NUL bytes.
 */
#ifndef TEXT_H
#define TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "compiler.h"
#include "vgpu.h"

/*
 * UTF-8 characters and masking are the library's (vgpu.h): one copy, so
 * that the values the library quotes in its errors and the text the
 * webhook quotes in its messages and log lines are masked alike.  These
 * are their names here:
 *   text_utf8_charn(p, n)     the length of a valid UTF-8 character, or 0
 *   text_is_control(p)        C0, DEL or C1
 *   text_mask_cutn(dst, size, s, len, max_chars)
 *                             controls and bytes that are not UTF-8
 *                             dropped, cut with "..." past max_chars
 *                             characters or size bytes
 */
static inline size_t text_utf8_charn(const unsigned char *p, size_t n)
{
	return vgpu_utf8_charn(p, n);
}

static inline bool text_is_control(const unsigned char *p)
{
	return vgpu_utf8_is_control(p);
}

static inline size_t text_mask_cutn(char *dst, size_t size, const char *s,
				    size_t len, size_t max_chars)
{
	return vgpu_mask_cutn(dst, size, s, len, max_chars);
}

/*
 * Reads s[0..len) as a decimal number in [0, max]: one or more ASCII
 * digits and nothing else (no sign, space or prefix; leading zeros are
 * allowed).  Returns 0 with the value in *out, or -1, *out untouched, when
 * s is empty, holds anything but digits, or is above max (also when it
 * would overflow uint64_t).
 */
int text_u64_parsen(const char *s, size_t len, uint64_t max, uint64_t *out)
	COMPILER_WUR;

/*
 * Writes into out the lexical normal form of the path s[0..len), as Go's
 * path.Clean() gives it for "/" followed by s: repeated "/" and "."
 * segments dropped, ".." removing the segment before it (none above the
 * root), no "/" at the end but for the root itself.  A relative path is
 * taken from the root, as the kubelet takes a relative mountPath.  out
 * holds at least len + 2 bytes; returns the length written before its NUL.
 */
size_t text_clean_path(char *out, const char *s, size_t len);

/*
 * Writes the Unix time t (seconds) as "2026-01-02T03:04:05Z", in UTC, into
 * out[0..len) (21 bytes with the NUL); as a plain number when it has no
 * such date.
 */
void text_utc_time(int64_t t, char *out, size_t len);

/*
 * Writes the message fmt into err[0..errlen), cut to fit, for a module
 * that reports its errors in a caller's buffer.  Returns -1, so that the
 * caller may return what it returns.
 */
int text_errorf(char *err, size_t errlen, const char *fmt, ...)
	COMPILER_PRINTF(3, 4);

#define TEXT_DISTANCE_MAX 64

/*
 * The edit distance between a[0..alen) and b[0..blen): the fewest
 * insertions, deletions, substitutions and swaps of two neighbouring
 * bytes that make one the other (optimal string alignment, a restricted
 * Damerau-Levenshtein distance).  Strings longer than TEXT_DISTANCE_MAX
 * bytes give SIZE_MAX.
 */
size_t text_distancen(const char *a, size_t alen, const char *b,
		      size_t blen);

#endif /* TEXT_H */
