/*
 * text.h - bytes from the outside as text: UTF-8 characters, masking for
 * messages and logs, decimal numbers.
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

/*
 * The length (1 to 4) of the UTF-8 character at the start of p[0..n),
 * n >= 1; 0 when p does not start with a valid UTF-8 sequence: a
 * continuation byte, C0, C1 or F5 to FF (F8 to FF are never UTF-8), an
 * overlong form, a surrogate, a code point past U+10FFFF, or a sequence
 * cut short by n.
 */
size_t text_utf8_charn(const unsigned char *p, size_t n);

/*
 * Whether the character at p, a valid UTF-8 sequence (text_utf8_charn()
 * gave its length), is a control character: C0 (U+0000 to U+001F), DEL
 * (U+007F) or C1 (U+0080 to U+009F).
 */
bool text_is_control(const unsigned char *p);

/*
 * Copies the text s[0..len) into dst[0..size), size >= 4, for a message or
 * a log line: control characters and the bytes that are not valid UTF-8
 * are dropped, and at most max_chars characters (code points; at least 4)
 * are kept.  A longer text is cut and ends in "...", as is one that does
 * not fit in size.  dst always ends in a NUL and holds valid UTF-8 without
 * control characters.  Returns the length written, without the NUL.
 */
size_t text_mask_cutn(char *dst, size_t size, const char *s, size_t len,
		      size_t max_chars);

/*
 * Reads s[0..len) as a decimal number in [0, max]: one or more ASCII
 * digits and nothing else (no sign, space or prefix; leading zeros are
 * allowed).  Returns 0 with the value in *out, or -1, *out untouched, when
 * s is empty, holds anything but digits, or is above max (also when it
 * would overflow uint64_t).
 */
int text_u64_parsen(const char *s, size_t len, uint64_t max, uint64_t *out)
	COMPILER_WUR;

#endif /* TEXT_H */
