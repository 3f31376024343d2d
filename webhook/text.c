/*
 * text.c - decimal numbers, paths, and messages into a caller's buffer
 * (UTF-8 and masking: text.h).
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "text.h"

int text_u64_parsen(const char *s, size_t len, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (!len)
		return -1;
	for (i = 0; i < len; i++) {
		unsigned d = (unsigned)((unsigned char)s[i] - '0');

		if (d > 9)
			return -1;
		/* v * 10 + d <= max, without overflow. */
		if (v > max / 10 || (v == max / 10 && d > max % 10))
			return -1;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

size_t text_clean_path(char *out, const char *s, size_t len)
{
	size_t n = 1, i = 0;

	out[0] = '/';
	while (i < len) {
		size_t start, seg;

		while (i < len && s[i] == '/')
			i++;
		start = i;
		while (i < len && s[i] != '/')
			i++;
		seg = i - start;
		if (!seg || (seg == 1 && s[start] == '.'))
			continue;
		if (seg == 2 && s[start] == '.' && s[start + 1] == '.') {
			/* Back over the last segment and its "/". */
			while (n > 1 && out[n - 1] != '/')
				n--;
			if (n > 1)
				n--;
			continue;
		}
		if (n > 1)
			out[n++] = '/';
		memcpy(out + n, s + start, seg);
		n += seg;
	}
	out[n] = '\0';
	return n;
}

void text_utc_time(int64_t t, char *out, size_t len)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (!gmtime_r(&tt, &tm) ||
	    !strftime(out, len, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(out, len, "%lld", (long long)t);
}

int text_errorf(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

size_t text_distancen(const char *a, size_t alen, const char *b,
		      size_t blen)
{
	/* Three rows of the table: row k is rows[k % 3]. */
	size_t rows[3][TEXT_DISTANCE_MAX + 1], i, j;

	if (alen > TEXT_DISTANCE_MAX || blen > TEXT_DISTANCE_MAX)
		return SIZE_MAX;
	for (j = 0; j <= blen; j++)
		rows[0][j] = j;
	for (i = 1; i <= alen; i++) {
		size_t *two = rows[(i + 1) % 3], *one = rows[(i + 2) % 3],
		       *cur = rows[i % 3];

		cur[0] = i;
		for (j = 1; j <= blen; j++) {
			size_t cost = a[i - 1] != b[j - 1], d;

			d = one[j] + 1;
			if (cur[j - 1] + 1 < d)
				d = cur[j - 1] + 1;
			if (one[j - 1] + cost < d)
				d = one[j - 1] + cost;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
			    a[i - 2] == b[j - 1] && two[j - 2] + 1 < d)
				d = two[j - 2] + 1;
			cur[j] = d;
		}
	}
	return rows[alen % 3][blen];
}
