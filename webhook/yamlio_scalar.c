/*
 * yamlio_scalar.c - what a plain YAML scalar means, as go-yaml v2 resolves
 * it, for the reader (yamlio_load.c) and the writer (yamlio_dump.c).
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "yamlio.h"
#include "yamlio_scalar.h"

static const char *const true_words[] = {
	"y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON",
};
static const char *const false_words[] = {
	"n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off",
	"OFF",
};
static const char *const null_words[] = { "~", "null", "Null", "NULL" };
/* Go reals that JSON cannot hold. */
static const char *const nonfinite_words[] = {
	".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf",
	"+.INF", "-.inf", "-.Inf", "-.INF",
};

#define NWORDS(a) (sizeof(a) / sizeof((a)[0]))

static bool in_words(const char *const *words, size_t nwords, const char *s,
		     size_t n)
{
	size_t i;

	for (i = 0; i < nwords; i++)
		if (strlen(words[i]) == n && !memcmp(words[i], s, n))
			return true;
	return false;
}

static int digit_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return 99;
}

/*
 * Reads s[0..n) as Go's strconv.Parse{Int,Uint}(s, base, 64) would, with
 * base 0 (a prefix picks it) or 2.  A sign is read when signed.  Returns
 * 0 with *neg and *mag set, or -1 when Go would fail for the syntax or
 * the uint64 range.
 */
static int go_parse_int(const char *s, size_t n, int base, bool signed_,
			bool *neg, uint64_t *mag)
{
	uint64_t v = 0;
	size_t i = 0;
	int d;

	*neg = false;
	if (signed_ && n && (s[0] == '+' || s[0] == '-')) {
		*neg = s[0] == '-';
		i = 1;
	}
	if (base == 0) {
		base = 10;
		if (n - i >= 2 && s[i] == '0') {
			char p = s[i + 1];

			if (p == 'x' || p == 'X') {
				base = 16;
				i += 2;
			} else if (p == 'o' || p == 'O') {
				base = 8;
				i += 2;
			} else if (p == 'b' || p == 'B') {
				base = 2;
				i += 2;
			} else {
				base = 8;
				i += 1;
			}
		}
	}
	if (i >= n)
		return -1;
	for (; i < n; i++) {
		d = digit_value(s[i]);
		if (d >= base)
			return -1;
		if (v > (UINT64_MAX - (uint64_t)d) / (uint64_t)base)
			return -1;
		v = v * (uint64_t)base + (uint64_t)d;
	}
	*mag = v;
	return 0;
}

/* Go's ParseInt(s, base, 64) into *out: 0, or -1 (syntax or range). */
static int go_int64(const char *s, size_t n, int base, int64_t *out)
{
	bool neg;
	uint64_t mag;

	if (go_parse_int(s, n, base, true, &neg, &mag))
		return -1;
	if (neg) {
		if (mag > (uint64_t)INT64_MAX + 1)
			return -1;
		*out = mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN :
			-(int64_t)mag;
	} else {
		if (mag > (uint64_t)INT64_MAX)
			return -1;
		*out = (int64_t)mag;
	}
	return 0;
}

/* Whether s matches ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$ */
static bool yaml_style_float(const char *s, size_t n)
{
	size_t i = 0, d;

	if (i < n && (s[i] == '+' || s[i] == '-'))
		i++;
	if (i < n && s[i] == '.') {
		for (d = ++i; i < n && s[i] >= '0' && s[i] <= '9'; i++)
			;
		if (i == d)
			return false;
	} else {
		for (d = i; i < n && s[i] >= '0' && s[i] <= '9'; i++)
			;
		if (i == d)
			return false;
		if (i < n && s[i] == '.')
			for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++)
				;
	}
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		if (i < n && (s[i] == '+' || s[i] == '-'))
			i++;
		for (d = i; i < n && s[i] >= '0' && s[i] <= '9'; i++)
			;
		if (i == d)
			return false;
	}
	return i == n;
}

/* strtod of s[0..n) (a yaml_style_float): 0, or -1 on overflow. */
static int parse_real(const char *s, size_t n, double *out)
{
	char tmp[128], *copy = tmp, *end;
	double d;
	int rc = 0;

	if (n >= sizeof(tmp)) {
		copy = malloc(n + 1);
		if (!copy)
			return -1;
	}
	memcpy(copy, s, n);
	copy[n] = '\0';
	d = strtod(copy, &end);
	if (end != copy + n || !isfinite(d))
		rc = -1;
	if (copy != tmp)
		free(copy);
	if (!rc)
		*out = d;
	return rc;
}

int yamlio_resolve_plain(const char *s, size_t n, struct yamlio_scalar *out)
{
	char tmp[128], *plain = tmp;
	size_t i, m = 0;
	int rc = 0;
	uint64_t mag;
	bool neg;
	char c = n ? s[0] : 'N';

	memset(out, 0, sizeof(*out));
	out->kind = SCALAR_STRING;
	if (!n) {
		out->kind = SCALAR_NULL;
		return 0;
	}
	/* The words are at most 6 bytes and start with one of these. */
	if (n > 6 || !strchr("yYnNtTfFoO~.+-", c))
		goto not_a_word;
	if (in_words(null_words, NWORDS(null_words), s, n)) {
		out->kind = SCALAR_NULL;
		return 0;
	}
	if (in_words(true_words, NWORDS(true_words), s, n) ||
	    in_words(false_words, NWORDS(false_words), s, n)) {
		out->kind = SCALAR_BOOL;
		out->b = in_words(true_words, NWORDS(true_words), s, n);
		return 0;
	}
	if (in_words(nonfinite_words, NWORDS(nonfinite_words), s, n)) {
		out->kind = SCALAR_NONFINITE;
		return 0;
	}
not_a_word:
	if (c == '.') {
		if (yaml_style_float(s, n) && !parse_real(s, n, &out->r))
			out->kind = SCALAR_REAL;
		return 0;
	}
	if (!(c == '+' || c == '-' || (c >= '0' && c <= '9')))
		return 0;
	if (n >= sizeof(tmp)) {
		plain = malloc(n + 1);
		if (!plain)
			return -1;
	}
	for (i = 0; i < n; i++)
		if (s[i] != '_')
			plain[m++] = s[i];
	if (!go_int64(plain, m, 0, &out->i)) {
		out->kind = SCALAR_INT;
	} else if (!go_parse_int(plain, m, 0, false, &neg, &mag)) {
		out->kind = SCALAR_REAL;
		out->r = (double)mag;
	} else if (yaml_style_float(plain, m) &&
		   !parse_real(plain, m, &out->r)) {
		out->kind = SCALAR_REAL;
	} else if (m > 2 && !memcmp(plain, "0b", 2)) {
		if (!go_int64(plain + 2, m - 2, 2, &out->i))
			out->kind = SCALAR_INT;
		else if (!go_parse_int(plain + 2, m - 2, 2, false, &neg, &mag)) {
			out->kind = SCALAR_REAL;
			out->r = (double)mag;
		}
	} else if (m > 3 && !memcmp(plain, "-0b", 3)) {
		plain[2] = '-';
		if (!go_int64(plain + 2, m - 2, 2, &out->i))
			out->kind = SCALAR_INT;
	}
	if (plain != tmp)
		free(plain);
	return rc;
}

int yamlio_plain_safe(const char *s, size_t n)
{
	struct yamlio_scalar sc;
	size_t i;
	char c;

	if (!n || n > 1000)
		return 0;
	c = s[0];
	/* "-x" and "--flag" are plain; "- x", "-1" and "---" are not. */
	if (c == '-' && n > 1 && ((s[1] >= 'a' && s[1] <= 'z') ||
				  (s[1] >= 'A' && s[1] <= 'Z') ||
				  (s[1] == '-' && n > 2 && s[2] != '-')))
		c = 'a';
	if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
	      c == '/'))
		return 0;
	for (i = 0; i < n; i++) {
		c = s[i];
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || (c && strchr("_./-=+@,()", c)))
			continue;
		if (c == ':' && i + 1 < n && s[i + 1] != ' ')
			continue;
		if (c == ' ' && i + 1 < n && s[i + 1] != ' ' &&
		    s[i + 1] != '#')
			continue;
		return 0;
	}
	if (yamlio_resolve_plain(s, n, &sc) || sc.kind != SCALAR_STRING)
		return 0;
	return 1;
}
