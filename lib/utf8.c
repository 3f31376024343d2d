/*
 * utf8.c - UTF-8 characters, and the masking and cutting of a text that a
 * message quotes: the one copy that the library and the webhook share.
 */
#include <stdint.h>
#include <string.h>

#include "vgpu.h"

size_t vgpu_utf8_charn(const unsigned char *p, size_t n)
{
	unsigned c = p[0];
	size_t len, i;
	uint32_t v;

	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF) {
		len = 2;
		v = c & 0x1F;
	} else if (c >= 0xE0 && c <= 0xEF) {
		len = 3;
		v = c & 0x0F;
	} else if (c >= 0xF0 && c <= 0xF4) {
		len = 4;
		v = c & 0x07;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (i = 1; i < len; i++) {
		if ((p[i] & 0xC0) != 0x80)
			return 0;
		v = (v << 6) | (p[i] & 0x3F);
	}
	if ((len == 3 && (v < 0x800 || (v >= 0xD800 && v <= 0xDFFF))) ||
	    (len == 4 && (v < 0x10000 || v > 0x10FFFF)))
		return 0;
	return len;
}

bool vgpu_utf8_is_control(const unsigned char *p)
{
	/* C1 is U+0080..U+009F: C2 80 to C2 9F. */
	return p[0] < 0x20 || p[0] == 0x7F || (p[0] == 0xC2 && p[1] < 0xA0);
}

size_t vgpu_mask_cutn(char *dst, size_t size, const char *s, size_t len,
		      size_t max_chars)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, o = 0, chars = 0, cut = 0;

	if (max_chars < 4)
		max_chars = 4;
	while (i < len) {
		size_t n = 1;

		/* Printable ASCII, most of what is masked, is taken as it is. */
		if (p[i] < 0x20 || p[i] >= 0x7F) {
			n = vgpu_utf8_charn(p + i, len - i);
			if (!n) {
				i++; /* a byte that is not UTF-8 */
				continue;
			}
			if (vgpu_utf8_is_control(p + i)) {
				i += n;
				continue;
			}
		}
		if (chars == max_chars || o + n >= size) {
			o = cut;
			memcpy(dst + o, "...", 3);
			o += 3;
			break;
		}
		if (n == 1)
			dst[o] = s[i];
		else
			memcpy(dst + o, s + i, n);
		o += n;
		i += n;
		/* The last place where "..." and the NUL still fit. */
		if (++chars <= max_chars - 3 && o + 4 <= size)
			cut = o;
	}
	dst[o] = '\0';
	return o;
}
