/*
 * quantity.c - Kubernetes quantities, parsed exactly.
 *
 * The grammar and the rounding are those of ParseQuantity in
 * k8s.io/apimachinery/pkg/api/resource: a value is rounded up, away from
 * zero, to a whole number of nano units, and kept as whole units plus nano
 * units with the same sign.  Where this parser differs from Kubernetes it
 * does so on purpose:
 *
 *  - Kubernetes keeps a decimal value above 2^63-1 as a big decimal and
 *    silently caps a binary one ("8Ei") at 2^63-1.  Nothing the library
 *    resolves can use such a value, so both are refused with VGPU_ERANGE:
 *    every accepted value has a magnitude of at most INT64_MAX once rounded
 *    up to a whole number, and vgpu_quantity_value() cannot overflow.
 *  - Kubernetes' scanner reads a missing number as zero, so it accepts "-",
 *    "." or a bare "Ki".  The documented grammar asks for at least one
 *    digit, and so does this parser.
 *  - Kubernetes reads an exponent as an int64 and then truncates it to 32
 *    bits.  Here an exponent is read as Go's strconv.ParseInt(s, 10, 32)
 *    reads it: one that does not fit an int32 is a syntax error.
 *  - Kubernetes turns the format of a binary value between 0 and 1 (such
 *    as "0.000000000001Ki") into DecimalSI.  Here the format always tells
 *    how the suffix was written.
 *
 * Like ParseQuantity, the parser accepts no white space anywhere; a caller
 * that wants Kubernetes' JSON leniency trims the text first.
 *
 * Parsing allocates nothing (see magnitude_compute()), so it never returns
 * VGPU_ENOMEM, and it takes time linear in the length of the text.
 */
#include <stdint.h>
#include <string.h>

#include "internal.h"
#include "vgpu.h"

#define NANOS_PER_UNIT UINT32_C(1000000000)

/*
 * A text longer than this cannot be held in memory.  Refusing it keeps every
 * decimal position computed below well inside int64_t.
 */
#define MAX_TEXT_LEN ((uint64_t)INT64_MAX / 4)

static const uint64_t pow10[19] = {
	UINT64_C(1),
	UINT64_C(10),
	UINT64_C(100),
	UINT64_C(1000),
	UINT64_C(10000),
	UINT64_C(100000),
	UINT64_C(1000000),
	UINT64_C(10000000),
	UINT64_C(100000000),
	UINT64_C(1000000000),
	UINT64_C(10000000000),
	UINT64_C(100000000000),
	UINT64_C(1000000000000),
	UINT64_C(10000000000000),
	UINT64_C(100000000000000),
	UINT64_C(1000000000000000),
	UINT64_C(10000000000000000),
	UINT64_C(100000000000000000),
	UINT64_C(1000000000000000000),
};

/*
 * The number part of a quantity, seen as one digit string: the integer
 * digits followed by the fraction digits, without the point.
 */
struct digits {
	const char *integer;
	size_t ninteger;
	const char *fraction;
	size_t nfraction;
};

/* The value of digit k of the digit string, 0 <= k < ninteger + nfraction. */
static unsigned digits_at(const struct digits *d, size_t k)
{
	char c = k < d->ninteger ? d->integer[k]
				 : d->fraction[k - d->ninteger];

	return (unsigned)(c - '0');
}

/* How a suffix scales the number: value = number * 10^exp10 * 2^exp2. */
struct suffix {
	enum vgpu_format format;
	int64_t exp10;
	unsigned exp2;
};

/*
 * Reads the digits of an exponent, s[0..len), as Go's strconv.ParseInt(s,
 * 10, 32) does: an optional sign, then at least one digit and nothing else,
 * any number of leading zeros, a value that fits an int32.  Returns 0 and
 * sets *exp, or VGPU_ESYNTAX.
 */
static int parse_exponent(const char *s, size_t len, int64_t *exp)
{
	uint64_t magnitude = 0;
	bool negative = false;
	size_t i = 0;

	if (i < len && (s[i] == '+' || s[i] == '-')) {
		negative = s[i] == '-';
		i++;
	}
	if (i == len)
		return VGPU_ESYNTAX;
	for (; i < len; i++) {
		if (!vgpu__is_digit(s[i]))
			return VGPU_ESYNTAX;
		magnitude = magnitude * 10 + (uint64_t)(s[i] - '0');
		/* Past -INT32_MIN nothing fits: stop before it can wrap. */
		if (magnitude > UINT64_C(2147483648))
			return VGPU_ESYNTAX;
	}
	if (!negative && magnitude > UINT64_C(2147483647))
		return VGPU_ESYNTAX;
	*exp = negative ? -(int64_t)magnitude : (int64_t)magnitude;
	return 0;
}

/* The suffixes other than an exponent, as Kubernetes' suffixer lists them. */
static const struct {
	char text[3];
	struct suffix suf;
} suffixes[] = {
	{ "", { VGPU_FORMAT_DECIMAL_SI, 0, 0 } },
	{ "n", { VGPU_FORMAT_DECIMAL_SI, -9, 0 } },
	{ "u", { VGPU_FORMAT_DECIMAL_SI, -6, 0 } },
	{ "m", { VGPU_FORMAT_DECIMAL_SI, -3, 0 } },
	{ "k", { VGPU_FORMAT_DECIMAL_SI, 3, 0 } },
	{ "M", { VGPU_FORMAT_DECIMAL_SI, 6, 0 } },
	{ "G", { VGPU_FORMAT_DECIMAL_SI, 9, 0 } },
	{ "T", { VGPU_FORMAT_DECIMAL_SI, 12, 0 } },
	{ "P", { VGPU_FORMAT_DECIMAL_SI, 15, 0 } },
	{ "E", { VGPU_FORMAT_DECIMAL_SI, 18, 0 } },
	{ "Ki", { VGPU_FORMAT_BINARY_SI, 0, 10 } },
	{ "Mi", { VGPU_FORMAT_BINARY_SI, 0, 20 } },
	{ "Gi", { VGPU_FORMAT_BINARY_SI, 0, 30 } },
	{ "Ti", { VGPU_FORMAT_BINARY_SI, 0, 40 } },
	{ "Pi", { VGPU_FORMAT_BINARY_SI, 0, 50 } },
	{ "Ei", { VGPU_FORMAT_BINARY_SI, 0, 60 } },
};

/*
 * Reads the suffix s[0..len), everything after the number: one of the
 * table above, or "e" or "E" and an exponent ("E" alone is exa).  Returns 0
 * and fills *suf, or VGPU_ESYNTAX.
 */
static int parse_suffix(const char *s, size_t len, struct suffix *suf)
{
	size_t i;

	for (i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
		if (strlen(suffixes[i].text) == len &&
		    memcmp(suffixes[i].text, s, len) == 0) {
			*suf = suffixes[i].suf;
			return 0;
		}
	}
	if (len >= 2 && (s[0] == 'e' || s[0] == 'E')) {
		suf->format = VGPU_FORMAT_DECIMAL_EXPONENT;
		suf->exp2 = 0;
		return parse_exponent(s + 1, len - 1, &suf->exp10);
	}
	return VGPU_ESYNTAX;
}

/* The magnitude being built, digit by digit, from the least significant. */
struct magnitude {
	uint64_t units;	/* digits at positions 0 to 18 */
	uint32_t nanos;	/* digits at positions -1 to -9 */
	bool sticky;	/* a non-zero digit below position -9 */
};

/*
 * Adds digit times 10^pos to m.  Returns false when that makes the value
 * 10^19 or more, which is out of range whatever else follows.
 */
static bool magnitude_add(struct magnitude *m, unsigned digit, int64_t pos)
{
	if (digit == 0)
		return true;
	if (pos < -9)
		m->sticky = true;
	else if (pos < 0)
		m->nanos += (uint32_t)(digit * pow10[pos + 9]);
	else if (pos < 19)
		m->units += digit * pow10[pos];
	else
		return false;
	return true;
}

/*
 * Computes the magnitude of the number d (its last significant digit, at
 * index hi, stands for 10^pos_hi; its first, at index lo, is not zero) times
 * 2^exp2, rounded up to nano units.
 *
 * The product with 2^exp2 (exp2 <= 60) is done on the decimal digits from
 * the least significant one up, with a carry: each step computes
 * x = digit * 2^exp2 + carry, emits x % 10 and carries x / 10.  The carry
 * stays below 2^exp2 (if carry < 2^exp2, x / 10 < 10 * 2^exp2 / 10), so x
 * stays below 10 * 2^60 < 2^64, and once the input digits run out the carry
 * gives at most 19 more digits.  Every digit of the exact product is thus
 * seen once, in order, in constant space: digits above the unit sum into
 * units, the nine below it into nanos, and the rest only tell whether
 * anything non-zero was cut (the round up).  Time is linear in the number
 * of digits and does not depend on the exponent.
 *
 * Returns 0 and fills *units and *nanos, or VGPU_ERANGE when the magnitude
 * rounded up to a whole number is larger than INT64_MAX.
 */
static int magnitude_compute(const struct digits *d, size_t lo, size_t hi,
			     int64_t pos_hi, unsigned exp2, uint64_t *units,
			     uint32_t *nanos)
{
	struct magnitude m = { 0, 0, false };
	uint64_t factor = UINT64_C(1) << exp2, carry = 0;
	int64_t pos = pos_hi;
	size_t k;

	for (k = hi;; k--) {
		uint64_t x = digits_at(d, k) * factor + carry;

		carry = x / 10;
		if (!magnitude_add(&m, (unsigned)(x % 10), pos++))
			return VGPU_ERANGE;
		if (k == lo)
			break;
	}
	while (carry != 0) {
		if (!magnitude_add(&m, (unsigned)(carry % 10), pos++))
			return VGPU_ERANGE;
		carry /= 10;
	}

	/* Round up, away from zero, to a whole number of nano units. */
	if (m.sticky && ++m.nanos == NANOS_PER_UNIT) {
		m.nanos = 0;
		m.units++; /* units < 10^19 before, so no overflow */
	}
	if (m.units > (uint64_t)INT64_MAX ||
	    (m.units == (uint64_t)INT64_MAX && m.nanos != 0))
		return VGPU_ERANGE;
	*units = m.units;
	*nanos = m.nanos;
	return 0;
}

/*
 * Parses s[0..len) as "[sign] number suffix" (see vgpu.h).  The syntax is
 * checked in full before any range check, so a text outside the grammar is
 * always VGPU_ESYNTAX.
 *
 * The number is read as a digit string D and a decimal position: with
 * leading and trailing zeros set aside, the value is D * 10^p * 2^b with
 * D's first and last digits non-zero.  When D's first digit stands for 10^19
 * or more the value is out of range at once; otherwise magnitude_compute()
 * finds the units and nanos in one pass over D.
 */
int vgpu_quantity_parsen(const char *s, size_t len, struct vgpu_quantity *q)
{
	struct digits d;
	struct suffix suf;
	size_t i = 0, total, lo, hi;
	bool negative = false;
	int64_t pos_last;
	uint64_t units = 0;
	uint32_t nanos = 0;
	int ret;

	VGPU__ASSERT(q != NULL);
	VGPU__ASSERT(s != NULL || len == 0);

	if (len == 0)
		return VGPU_ESYNTAX;

	if (s[i] == '+' || s[i] == '-') {
		negative = s[i] == '-';
		i++;
	}
	d.integer = s + i;
	while (i < len && vgpu__is_digit(s[i]))
		i++;
	d.ninteger = (size_t)(s + i - d.integer);
	d.fraction = s + i;
	d.nfraction = 0;
	if (i < len && s[i] == '.') {
		d.fraction = s + ++i;
		while (i < len && vgpu__is_digit(s[i]))
			i++;
		d.nfraction = (size_t)(s + i - d.fraction);
	}
	total = d.ninteger + d.nfraction;
	if (total == 0)
		return VGPU_ESYNTAX;
	ret = parse_suffix(s + i, len - i, &suf);
	if (ret != 0)
		return ret;
	if ((uint64_t)len > MAX_TEXT_LEN)
		return VGPU_ERANGE;

	for (lo = 0; lo < total && digits_at(&d, lo) == 0; lo++)
		;
	if (lo < total) {
		for (hi = total - 1; digits_at(&d, hi) == 0; hi--)
			;
		/* Digit k stands for 10^(exp10 - nfraction + total - 1 - k). */
		pos_last = suf.exp10 - (int64_t)d.nfraction +
			   (int64_t)(total - 1);
		if (pos_last - (int64_t)lo >= 19)
			return VGPU_ERANGE;
		ret = magnitude_compute(&d, lo, hi, pos_last - (int64_t)hi,
					suf.exp2, &units, &nanos);
		if (ret != 0)
			return ret;
	}

	q->units = negative ? -(int64_t)units : (int64_t)units;
	q->nanos = negative ? -(int32_t)nanos : (int32_t)nanos;
	q->format = suf.format;
	return 0;
}

int vgpu_quantity_parse(const char *s, struct vgpu_quantity *q)
{
	VGPU__ASSERT(s != NULL);
	return vgpu_quantity_parsen(s, strlen(s), q);
}

/*
 * Aborts unless q holds what the parser can produce: |nanos| < 10^9, nanos
 * of the sign of units, and a value that rounds up to an int64.
 */
static void quantity_check(const struct vgpu_quantity *q)
{
	VGPU__ASSERT(q != NULL);
	VGPU__ASSERT(q->nanos > -(int32_t)NANOS_PER_UNIT &&
		     q->nanos < (int32_t)NANOS_PER_UNIT);
	VGPU__ASSERT(q->units >= 0 || q->nanos <= 0);
	VGPU__ASSERT(q->units <= 0 || q->nanos >= 0);
	VGPU__ASSERT(q->nanos == 0 ||
		     (q->units != INT64_MAX && q->units != INT64_MIN));
}

bool vgpu_quantity_is_whole(const struct vgpu_quantity *q)
{
	quantity_check(q);
	return q->nanos == 0;
}

int64_t vgpu_quantity_value(const struct vgpu_quantity *q)
{
	quantity_check(q);
	if (q->nanos > 0)
		return q->units + 1;
	if (q->nanos < 0)
		return q->units - 1;
	return q->units;
}

/*
 * Since units is truncated toward zero and nanos has its sign, ordering by
 * units and then by nanos is the exact order of the values.
 */
int vgpu_quantity_cmp(const struct vgpu_quantity *a,
		      const struct vgpu_quantity *b)
{
	quantity_check(a);
	quantity_check(b);
	if (a->units != b->units)
		return a->units < b->units ? -1 : 1;
	if (a->nanos != b->nanos)
		return a->nanos < b->nanos ? -1 : 1;
	return 0;
}
