/*
 * util.h - small helpers of the webhook: a growable string, masking of
 * values from requests, base64.
 */
#ifndef UTIL_H
#define UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#define UTIL_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define UTIL_WUR __attribute__((warn_unused_result))

/*
 * A growable NUL-terminated string.  Invariant: s is NULL and len 0, or s
 * holds len bytes and a NUL.  Once an allocation fails the buffer is
 * marked failed, later appends do nothing, and buf_failed() says so: a
 * caller builds a whole string and checks once.
 */
struct buf {
	char *s;
	size_t len;
	size_t cap;
	bool failed;
};

#define BUF_INIT { NULL, 0, 0, false }

void buf_release(struct buf *b);
void buf_addn(struct buf *b, const char *s, size_t len);
void buf_add(struct buf *b, const char *s);
void buf_addf(struct buf *b, const char *fmt, ...) UTIL_PRINTF(2, 3);
void buf_truncate(struct buf *b, size_t len);
bool buf_failed(const struct buf *b);
/* The string, "" for an empty buffer; borrowed until the next change. */
const char *buf_str(const struct buf *b);
/* Hands the string over to the caller (free() it); the buffer is empty. */
char *buf_detach(struct buf *b, size_t *len);

/*
 * Copies s[0..len) into dst[0..size) without control characters (C0, DEL
 * and C1), keeping at most max_chars characters (UTF-8 code points); a
 * longer text is cut and ends in "...".  Never splits a UTF-8 sequence.
 * Returns the length written.  size must be at least 4.
 */
size_t util_mask_cut(char *dst, size_t size, const char *s, size_t len,
		     size_t max_chars);

/*
 * The length of the valid UTF-8 sequence of two to four bytes at p[0..n)
 * (p[0] >= 0x80), or 0 when it is not one: overlong forms, surrogates and
 * code points past U+10FFFF are not valid.
 */
size_t util_utf8_sequence(const unsigned char *p, size_t n);

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
