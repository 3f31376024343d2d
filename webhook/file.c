/*
 * file.c - the one file reader (see file.h).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "file.h"

#define FIRST_SIZE ((size_t)8192)

/* Overwrites n bytes at p with zeros, in a way the compiler keeps. */
static void wipe(void *p, size_t n)
{
	volatile unsigned char *v = p;

	while (n--)
		*v++ = 0;
}

/*
 * Grows *buf, which holds len bytes in size, to want bytes: a new buffer,
 * the bytes copied, the old one wiped and freed.  Returns 0, or -1 with
 * errno ENOMEM (*buf unchanged).
 */
static int grow(char **buf, size_t len, size_t size, size_t want)
{
	char *fresh = malloc(want);

	if (!fresh) {
		errno = ENOMEM;
		return -1;
	}
	if (*buf) {
		memcpy(fresh, *buf, len);
		wipe(*buf, size);
		free(*buf);
	}
	*buf = fresh;
	return 0;
}

int file_read(const char *path, size_t max, char **data, size_t *len,
	      char *err, size_t errlen)
{
	const char *name = path ? path : "-";
	FILE *f = path ? fopen(path, "rb") : stdin;
	/* One byte past max tells a file of max bytes from a longer one. */
	size_t limit = max < SIZE_MAX / 2 ? max + 1 : SIZE_MAX / 2;
	size_t n = 0, cap = 0; /* bytes read; room for bytes (and a NUL) */
	char *buf = NULL;
	int saved;

	if (!f)
		goto fail;
	for (;;) {
		size_t got;

		if (n == cap) {
			size_t want = cap ? cap * 2 : FIRST_SIZE;

			if (cap == limit)
				break;
			if (want > limit)
				want = limit;
			if (grow(&buf, n, cap ? cap + 1 : 0, want + 1))
				goto fail;
			cap = want;
		}
		errno = 0;
		got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (got == 0) {
			if (ferror(f)) {
				errno = errno ? errno : EIO;
				goto fail;
			}
			break;
		}
	}
	if (n > max) {
		errno = EFBIG;
		goto fail;
	}
	buf[n] = '\0';
	if (f != stdin)
		fclose(f);
	*data = buf;
	*len = n;
	return 0;
fail:
	saved = errno;
	if (saved == EFBIG)
		snprintf(err, errlen, "%s: larger than %zu bytes", name, max);
	else
		snprintf(err, errlen, "cannot read %s: %s", name,
			 strerror(saved));
	if (buf)
		wipe(buf, cap + 1);
	free(buf);
	if (f && f != stdin)
		fclose(f);
	errno = saved;
	return -1;
}
