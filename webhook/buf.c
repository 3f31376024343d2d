/*
 * buf.c - the growable string.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"

/* The first allocation: most strings built here fit in it. */
#define BUF_FIRST_CAP 256

void buf_init(struct buf *b)
{
	b->s = NULL;
	b->len = b->cap = 0;
	b->failed = false;
}

void buf_release(struct buf *b)
{
	free(b->s);
	buf_init(b);
}

/*
 * Makes room for extra more bytes and the NUL.  Returns false, with b
 * failed, when that is not possible.
 */
static bool buf_grow(struct buf *b, size_t extra)
{
	size_t need, cap;
	char *s;

	if (b->failed)
		return false;
	if (extra > SIZE_MAX - b->len - 1)
		goto fail;
	need = b->len + extra + 1;
	if (need <= b->cap)
		return true;
	cap = b->cap ? b->cap : BUF_FIRST_CAP;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	s = realloc(b->s, cap);
	if (!s)
		goto fail;
	b->s = s;
	b->cap = cap;
	return true;
fail:
	b->failed = true;
	return false;
}

void buf_addn(struct buf *b, const char *s, size_t len)
{
	/* The common case, room left, without a call. */
	if (b->failed || len >= b->cap - b->len) {
		if (!buf_grow(b, len))
			return;
	}
	memcpy(b->s + b->len, s, len);
	b->len += len;
	b->s[b->len] = '\0';
}

void buf_add(struct buf *b, const char *s)
{
	buf_addn(b, s, strlen(s));
}

void buf_addf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!buf_grow(b, 64))
		return;
	va_start(ap, fmt);
	n = vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	if (n < 0)
		goto fail;
	if ((size_t)n >= b->cap - b->len) {
		if (!buf_grow(b, (size_t)n))
			goto fail;
		va_start(ap, fmt);
		vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
	}
	b->len += (size_t)n;
	return;
fail:
	/* vsnprintf() wrote over the NUL: the contents end where they did. */
	b->failed = true;
	b->s[b->len] = '\0';
}

void buf_truncate(struct buf *b, size_t len)
{
	if (b->s && len < b->len) {
		b->len = len;
		b->s[len] = '\0';
	}
}

void buf_fail(struct buf *b)
{
	b->failed = true;
}

bool buf_failed(const struct buf *b)
{
	return b->failed;
}

const char *buf_str(const struct buf *b)
{
	return b->s ? b->s : "";
}

char *buf_detach(struct buf *b, size_t *len)
{
	char *s = b->s;
	size_t n = b->len;

	if (b->failed) {
		free(s);
		s = NULL;
	} else if (!s) {
		s = calloc(1, 1);
	}
	if (len)
		*len = s ? n : 0;
	buf_init(b);
	return s;
}
