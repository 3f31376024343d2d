/*
 * text.c - decimal numbers (UTF-8 and masking: text.h).
 */
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
