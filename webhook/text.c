/*
 * text.c - decimal numbers, paths, and messages into a caller's buffer
 * (UTF-8 and masking: text.h).
 */
#include <stdarg.h>
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
