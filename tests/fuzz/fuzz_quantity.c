/*
 * fuzz_quantity.c - libFuzzer target for vgpu_quantity_parsen().
 *
 * Each input is parsed and the result checked three ways:
 *  - invariants: |nanos| < 10^9 with the sign of units, is_whole exactly
 *    when nanos is 0, cmp(q, q) == 0, value() rounded away from zero, and a
 *    sign in front giving the same or the opposite quantity;
 *  - an independent oracle: Kubernetes' scanner (parseQuantityString and
 *    the suffix interpretation of apimachinery) restated plainly, with the
 *    two rules of this library on top (at least one digit; an exponent
 *    that fits an int32), must agree on what is a syntax error; and a naive
 *    big-integer evaluation (a decimal digit array, doubled b times, cut at
 *    nano units) must agree on the value or on VGPU_ERANGE;
 *  - order: the input cut in two gives two quantities whose cmp() is
 *    antisymmetric and agrees with the oracle's values and with value().
 *
 *   clang-14 -g -O1 -fsanitize=fuzzer,address,undefined -Ilib \
 *       tests/fuzz/fuzz_quantity.c lib/quantity.c -o fuzz_quantity
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vgpu.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                           \
	do {                                                                  \
		if (!(cond)) {                                                \
			fprintf(stderr, "%s:%d: check failed: %s\n",          \
				__FILE__, __LINE__, #cond);                   \
			abort();                                              \
		}                                                             \
	} while (0)

/* ------------------------------------------------------------------------
 * The oracle
 */

enum oracle_verdict {
	ORACLE_SYNTAX,	/* not a quantity */
	ORACLE_RANGE,	/* a quantity, out of range */
	ORACLE_VALUE,	/* a quantity, value below */
	ORACLE_UNKNOWN,	/* a quantity, too long for the naive evaluation */
};

struct oracle {
	enum oracle_verdict verdict;
	bool negative;
	int64_t units; /* magnitudes */
	int64_t nanos;
	enum vgpu_format format;
};

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/*
 * Kubernetes' parseQuantityString, restated: sign, leading zeros, integer
 * digits, an optional point and fraction digits, then a run of suffix
 * letters, an optional sign and digits up to the end.  Returns false on
 * ErrFormatWrong.  *ndigits counts every digit of the number, the stripped
 * leading zeros included.
 */
static bool k8s_scan(const char *s, size_t len, bool *positive,
		     const char **num, size_t *nnum, const char **denom,
		     size_t *ndenom, const char **suffix, size_t *nsuffix,
		     size_t *ndigits)
{
	size_t pos = 0, start;

	*positive = true;
	*nnum = *ndenom = *nsuffix = *ndigits = 0;
	*num = *denom = *suffix = s;
	if (pos < len && (s[pos] == '-' || s[pos] == '+')) {
		*positive = s[pos] != '-';
		pos++;
	}
	while (pos < len && s[pos] == '0') {
		pos++;
		(*ndigits)++;
	}
	start = pos;
	while (pos < len && is_digit(s[pos]))
		pos++;
	*num = s + start;
	*nnum = pos - start;
	*ndigits += pos - start;
	if (pos < len && s[pos] == '.') {
		pos++;
		start = pos;
		while (pos < len && is_digit(s[pos]))
			pos++;
		*denom = s + start;
		*ndenom = pos - start;
		*ndigits += pos - start;
	}
	start = pos;
	while (pos < len && s[pos] != '\0' && strchr("eEinumkKMGTP", s[pos]))
		pos++;
	if (pos < len && (s[pos] == '-' || s[pos] == '+'))
		pos++;
	while (pos < len && is_digit(s[pos]))
		pos++;
	if (pos != len)
		return false;
	*suffix = s + start;
	*nsuffix = len - start;
	return true;
}

/* strconv.ParseInt(s, 10, 32), the rule this library applies. */
static bool parse_int32(const char *s, size_t len, int64_t *out)
{
	int64_t v = 0;
	bool neg = false;
	size_t i = 0;

	if (i < len && (s[i] == '+' || s[i] == '-'))
		neg = s[i++] == '-';
	if (i == len)
		return false;
	for (; i < len; i++) {
		if (!is_digit(s[i]))
			return false;
		v = v * 10 + (s[i] - '0');
		if (v > INT64_C(1) << 31)
			return false;
	}
	if (neg)
		v = -v;
	if (v < INT32_MIN || v > INT32_MAX)
		return false;
	*out = v;
	return true;
}

/* The suffixer's interpret(). */
static bool k8s_interpret(const char *s, size_t len, int64_t *exp10,
			  int *exp2, enum vgpu_format *format)
{
	static const char *const dec[] = { "n", "u", "m", "", "k", "M",
					   "G", "T", "P", "E" };
	static const char *const bin[] = { "Ki", "Mi", "Gi", "Ti", "Pi",
					   "Ei" };
	size_t i;

	*exp10 = 0;
	*exp2 = 0;
	for (i = 0; i < sizeof(dec) / sizeof(dec[0]); i++) {
		if (strlen(dec[i]) == len && memcmp(dec[i], s, len) == 0) {
			*exp10 = (int64_t)i * 3 - 9;
			*format = VGPU_FORMAT_DECIMAL_SI;
			return true;
		}
	}
	for (i = 0; i < sizeof(bin) / sizeof(bin[0]); i++) {
		if (len == 2 && memcmp(bin[i], s, 2) == 0) {
			*exp2 = (int)(i + 1) * 10;
			*format = VGPU_FORMAT_BINARY_SI;
			return true;
		}
	}
	if (len > 1 && (s[0] == 'e' || s[0] == 'E')) {
		*format = VGPU_FORMAT_DECIMAL_EXPONENT;
		return parse_int32(s + 1, len - 1, exp10);
	}
	return false;
}

#define BIG 640		/* decimal digits of the naive big integer */
#define MAX_SIG 200	/* longest digit string evaluated */
#define MAX_SHIFT 200	/* largest |decimal shift| evaluated */

/*
 * The value of digits[0..n) * 10^scale * 2^exp2 computed the slow way: the
 * digit string times 2^exp2 by repeated doubling of a little-endian digit
 * array, then the shift to nano units, the cut with round up, and the
 * split into units and nanos.
 */
static void naive_value(const char *digits, size_t n, int64_t scale,
			int exp2, struct oracle *o)
{
	unsigned char a[BIG];
	size_t i, top;
	int64_t shift = scale + 9, k;
	bool sticky = false;
	unsigned long long hi = 0;

	for (i = 0; i < n && digits[i] == '0'; i++)
		;
	if (i == n) {
		o->verdict = ORACLE_VALUE;
		o->units = o->nanos = 0;
		return;
	}
	digits += i;
	n -= i;
	if (n > MAX_SIG || shift > MAX_SHIFT || shift < -MAX_SHIFT) {
		/* Out of reach of the arrays; only the extremes are sure. */
		if ((int64_t)n + scale - 1 >= 19)
			o->verdict = ORACLE_RANGE;
		else if ((int64_t)n + scale + 19 < -9) {
			o->verdict = ORACLE_VALUE;
			o->units = 0;
			o->nanos = 1;
		} else
			o->verdict = ORACLE_UNKNOWN;
		return;
	}
	memset(a, 0, sizeof(a));
	for (i = 0; i < n; i++)
		a[i] = (unsigned char)(digits[n - 1 - i] - '0');
	for (k = 0; k < exp2; k++) {
		unsigned carry = 0;

		for (i = 0; i < BIG; i++) {
			unsigned x = a[i] * 2u + carry;

			a[i] = (unsigned char)(x % 10);
			carry = x / 10;
		}
		CHECK(carry == 0);
	}
	if (shift > 0) {
		memmove(a + shift, a, BIG - (size_t)shift);
		memset(a, 0, (size_t)shift);
	} else if (shift < 0) {
		for (i = 0; i < (size_t)-shift; i++)
			sticky |= a[i] != 0;
		memmove(a, a - shift, BIG - (size_t)-shift);
		memset(a + BIG + shift, 0, (size_t)-shift);
	}
	if (sticky) {
		for (i = 0; i < BIG && a[i] == 9; i++)
			a[i] = 0;
		CHECK(i < BIG);
		a[i]++;
	}
	o->nanos = 0;
	for (i = 9; i-- > 0;)
		o->nanos = o->nanos * 10 + a[i];
	for (top = BIG; top > 9 && a[top - 1] == 0; top--)
		;
	if (top - 9 > 19) {
		o->verdict = ORACLE_RANGE;
		return;
	}
	for (i = top; i-- > 9;)
		hi = hi * 10 + a[i];
	if (hi > (unsigned long long)INT64_MAX ||
	    (hi == (unsigned long long)INT64_MAX && o->nanos != 0)) {
		o->verdict = ORACLE_RANGE;
		return;
	}
	o->verdict = ORACLE_VALUE;
	o->units = (int64_t)hi;
}

static void oracle_eval(const char *s, size_t len, struct oracle *o)
{
	const char *num, *denom, *suffix;
	size_t nnum, ndenom, nsuffix, ndigits;
	bool positive;
	int64_t exp10;
	int exp2;
	char *digits;

	o->verdict = ORACLE_SYNTAX;
	if (len == 0)
		return;
	if (!k8s_scan(s, len, &positive, &num, &nnum, &denom, &ndenom,
		      &suffix, &nsuffix, &ndigits))
		return;
	if (!k8s_interpret(suffix, nsuffix, &exp10, &exp2, &o->format))
		return;
	if (ndigits == 0) /* Kubernetes reads this as 0; we refuse it */
		return;
	o->negative = !positive;
	digits = malloc(nnum + ndenom + 1);
	CHECK(digits != NULL);
	memcpy(digits, num, nnum);
	memcpy(digits + nnum, denom, ndenom);
	naive_value(digits, nnum + ndenom, exp10 - (int64_t)ndenom, exp2, o);
	free(digits);
}

/* ------------------------------------------------------------------------
 * The checks
 */

static void check_invariants(const struct vgpu_quantity *q)
{
	int64_t v = vgpu_quantity_value(q);

	CHECK(q->nanos > -1000000000 && q->nanos < 1000000000);
	CHECK(!(q->units > 0 && q->nanos < 0));
	CHECK(!(q->units < 0 && q->nanos > 0));
	CHECK(q->units != INT64_MIN);
	CHECK(vgpu_quantity_is_whole(q) == (q->nanos == 0));
	CHECK(vgpu_quantity_cmp(q, q) == 0);
	if (q->nanos == 0)
		CHECK(v == q->units);
	else if (q->nanos > 0)
		CHECK(v == q->units + 1);
	else
		CHECK(v == q->units - 1);
}

/* Parses s[0..len), checks it against the oracle; true when parsed. */
static bool check_one(const char *s, size_t len, struct vgpu_quantity *q,
		      struct oracle *o)
{
	int ret = vgpu_quantity_parsen(s, len, q);

	oracle_eval(s, len, o);
	CHECK(ret == 0 || ret == VGPU_ESYNTAX || ret == VGPU_ERANGE);
	CHECK((ret == VGPU_ESYNTAX) == (o->verdict == ORACLE_SYNTAX));
	if (o->verdict == ORACLE_RANGE)
		CHECK(ret == VGPU_ERANGE);
	if (o->verdict == ORACLE_VALUE)
		CHECK(ret == 0);
	if (ret != 0)
		return false;
	check_invariants(q);
	CHECK(q->format == o->format);
	if (o->verdict == ORACLE_VALUE) {
		int64_t sign = o->negative ? -1 : 1;

		CHECK(q->units == sign * o->units);
		CHECK(q->nanos == sign * o->nanos);
	} else {
		CHECK(o->verdict == ORACLE_UNKNOWN);
	}
	return true;
}

/* "+" and "-" in front of an unsigned text: the same, and the opposite. */
static void check_signs(const char *s, size_t len,
			const struct vgpu_quantity *q)
{
	struct vgpu_quantity p;
	char *buf;

	if (len == 0 || s[0] == '+' || s[0] == '-')
		return;
	buf = malloc(len + 1);
	CHECK(buf != NULL);
	memcpy(buf + 1, s, len);
	buf[0] = '+';
	CHECK(vgpu_quantity_parsen(buf, len + 1, &p) == 0);
	CHECK(p.units == q->units && p.nanos == q->nanos &&
	      p.format == q->format);
	buf[0] = '-';
	CHECK(vgpu_quantity_parsen(buf, len + 1, &p) == 0);
	CHECK(p.units == -q->units && p.nanos == -q->nanos &&
	      p.format == q->format);
	free(buf);
}

/* Compares oracle values (magnitude and sign) exactly. */
static int oracle_cmp(const struct oracle *a, const struct oracle *b)
{
	int64_t au = a->negative ? -a->units : a->units;
	int64_t an = a->negative ? -a->nanos : a->nanos;
	int64_t bu = b->negative ? -b->units : b->units;
	int64_t bn = b->negative ? -b->nanos : b->nanos;

	if (au != bu)
		return au < bu ? -1 : 1;
	return an < bn ? -1 : an > bn;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	struct vgpu_quantity q, a, b;
	struct oracle o, oa, ob;
	size_t cut;

	if (check_one(s, size, &q, &o))
		check_signs(s, size, &q);

	/* Two quantities from one input, data[1..cut) and data[cut..size),
	 * cut where the first byte says. */
	if (size < 2)
		return 0;
	cut = 1 + data[0] % (size - 1);
	if (check_one(s + 1, cut - 1, &a, &oa) &&
	    check_one(s + cut, size - cut, &b, &ob)) {
		int c = vgpu_quantity_cmp(&a, &b);

		CHECK(c == -vgpu_quantity_cmp(&b, &a));
		CHECK(c >= -1 && c <= 1);
		if (oa.verdict == ORACLE_VALUE && ob.verdict == ORACLE_VALUE)
			CHECK(c == oracle_cmp(&oa, &ob));
		if (c < 0)
			CHECK(vgpu_quantity_value(&a) <=
			      vgpu_quantity_value(&b));
	}
	return 0;
}
