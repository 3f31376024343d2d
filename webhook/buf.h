/*
 * buf.h - a growable string of bytes, for text built in pieces.
 *
 * Invariants:
 * - Either nothing is allocated (s NULL, len and cap 0: after BUF_INIT,
 *   buf_init(), buf_release() or buf_detach()), or s is a malloc'd block
 *   of cap bytes that holds the len bytes of the contents and then a NUL
 *   (len < cap).  The contents may hold NUL bytes of their own.
 * - The buffer owns s.  A caller may read s[0..len] and len, but writes
 *   only through these functions.
 * - An allocation that fails, or a size that would overflow, sets failed.
 *   From then on every append does nothing, until buf_release() or
 *   buf_detach().  The contents stay as they were before the append that
 *   failed, NUL-terminated.  So a caller builds a whole string and checks
 *   buf_failed() once, at the end.
 */
#ifndef BUF_H
#define BUF_H

#include <stdbool.h>
#include <stddef.h>

#include "compiler.h"

struct buf {
	char *s;
	size_t len;
	size_t cap;
	bool failed;
};

#define BUF_INIT { NULL, 0, 0, false }

/* Makes b empty, allocating nothing: the same as BUF_INIT. */
void buf_init(struct buf *b);

/* Frees the contents; b is then empty (as after buf_init()), not failed. */
void buf_release(struct buf *b);

/* Appends s[0..len), which may hold NUL bytes. */
void buf_addn(struct buf *b, const char *s, size_t len);

/* Appends the NUL-terminated string s. */
void buf_add(struct buf *b, const char *s);

/* Appends the text that printf() would write for fmt and its arguments. */
void buf_addf(struct buf *b, const char *fmt, ...) COMPILER_PRINTF(2, 3);

/*
 * Shortens the contents to their first len bytes; does nothing when len is
 * not below b->len.  A failed buffer stays failed.
 */
void buf_truncate(struct buf *b, size_t len);

/*
 * Marks b failed, for a writer whose own allocation failed while it was
 * appending to b: its caller then sees one failure for the whole string.
 */
void buf_fail(struct buf *b);

/* Whether an append to b failed since buf_init() (or the last release). */
bool buf_failed(const struct buf *b);

/*
 * The contents as a NUL-terminated string, "" when nothing is allocated.
 * Borrowed: valid until the next call that changes b.
 */
const char *buf_str(const struct buf *b);

/*
 * Hands the contents over to the caller, who frees them with free(); b is
 * then empty and not failed.  The length goes to *len when len is not
 * NULL.  Returns NULL, with the contents freed, when b had failed, or when
 * b was empty and "" could not be allocated.
 */
char *buf_detach(struct buf *b, size_t *len) COMPILER_WUR;

#endif /* BUF_H */
