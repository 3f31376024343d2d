/*
 * test_quantity.c - the quantity parser against the cases of Kubernetes'
 * apimachinery quantity tests (pkg/api/resource/quantity_test.go), and the
 * boundaries of this library: int64 range, nano rounding, exponents and
 * long digit runs.
 */
#include "test.h"

#include "vgpu.h"

#define DSI VGPU_FORMAT_DECIMAL_SI
#define BSI VGPU_FORMAT_BINARY_SI
#define DEX VGPU_FORMAT_DECIMAL_EXPONENT

/* Mismatches are counted and printed, so that one run shows all of them. */
static int failures; /* counted by EXPECT() */

struct valid {
	const char *in;
	int64_t units;
	int32_t nanos;
	enum vgpu_format format;
};

struct invalid {
	const char *in;
	int code;
};

/* What every parsed quantity must satisfy. */
static void check_invariants(const char *in, const struct vgpu_quantity *q)
{
	EXPECT(q->nanos > -1000000000 && q->nanos < 1000000000,
	       "%s: nanos %d out of range", in, (int)q->nanos);
	EXPECT(!(q->units > 0 && q->nanos < 0) &&
		       !(q->units < 0 && q->nanos > 0),
	       "%s: units %lld and nanos %d differ in sign", in,
	       (long long)q->units, (int)q->nanos);
	EXPECT(q->units != INT64_MIN, "%s: units is INT64_MIN", in);
	EXPECT(vgpu_quantity_is_whole(q) == (q->nanos == 0),
	       "%s: is_whole disagrees with nanos", in);
	EXPECT(vgpu_quantity_cmp(q, q) == 0, "%s: cmp(q, q) != 0", in);
}

static void expect_valid(const char *in, size_t len, int64_t units,
			 int32_t nanos, enum vgpu_format format)
{
	struct vgpu_quantity q;
	int ret;

	memset(&q, 0x5a, sizeof(q));
	ret = vgpu_quantity_parsen(in, len, &q);
	EXPECT(ret == 0, "%.*s: parse returned %d", (int)len, in, ret);
	if (ret != 0)
		return;
	EXPECT(q.units == units && q.nanos == nanos && q.format == format,
	       "%.*s: got {%lld, %d, %d}, want {%lld, %d, %d}", (int)len, in,
	       (long long)q.units, (int)q.nanos, (int)q.format,
	       (long long)units, (int)nanos, (int)format);
	check_invariants(in, &q);
}

static void expect_error(const char *in, size_t len, int code)
{
	struct vgpu_quantity q, before;
	int ret;

	memset(&q, 0x5a, sizeof(q));
	before = q;
	ret = vgpu_quantity_parsen(in, len, &q);
	EXPECT(ret == code, "%.*s: parse returned %d, want %d", (int)len, in,
	       ret, code);
	EXPECT(memcmp(&q, &before, sizeof(q)) == 0,
	       "%.*s: *q written on error", (int)len, in);
}

/*
 * Checks each case as written, then with "+" (same value) and with "-"
 * (the opposite value) in front, as Kubernetes' TestQuantityParse does.
 */
static void check_valid_table(const struct valid *t, size_t n)
{
	char buf[128];
	size_t i;

	for (i = 0; i < n; i++) {
		size_t len = strlen(t[i].in);

		expect_valid(t[i].in, len, t[i].units, t[i].nanos,
			     t[i].format);
		if (t[i].in[0] == '+' || t[i].in[0] == '-' ||
		    len + 2 > sizeof(buf))
			continue;
		snprintf(buf, sizeof(buf), "+%s", t[i].in);
		expect_valid(buf, len + 1, t[i].units, t[i].nanos,
			     t[i].format);
		snprintf(buf, sizeof(buf), "-%s", t[i].in);
		expect_valid(buf, len + 1, -t[i].units, -t[i].nanos,
			     t[i].format);
		/* A second sign is never allowed. */
		snprintf(buf, sizeof(buf), "--%s", t[i].in);
		expect_error(buf, len + 2, VGPU_ESYNTAX);
		snprintf(buf, sizeof(buf), "+-%s", t[i].in);
		expect_error(buf, len + 2, VGPU_ESYNTAX);
	}
}

static void check_error_table(const struct invalid *t, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		expect_error(t[i].in, strlen(t[i].in), t[i].code);
}

/* ------------------------------------------------------------------------
 * Kubernetes' TestQuantityParse table, every entry within int64.
 */
static const struct valid k8s_parse[] = {
	{ "0", 0, 0, DSI },
	{ "0n", 0, 0, DSI },
	{ "0u", 0, 0, DSI },
	{ "0m", 0, 0, DSI },
	{ "0Ki", 0, 0, BSI },
	{ "0k", 0, 0, DSI },
	{ "0Mi", 0, 0, BSI },
	{ "0M", 0, 0, DSI },
	{ "0Gi", 0, 0, BSI },
	{ "0G", 0, 0, DSI },
	{ "0Ti", 0, 0, BSI },
	{ "0T", 0, 0, DSI },
	{ "1", 1, 0, DSI },
	/* binary suffixes */
	{ "1Ki", 1024, 0, BSI },
	{ "8Ki", 8192, 0, BSI },
	{ "7Mi", 7340032, 0, BSI },
	{ "6Gi", 6442450944, 0, BSI },
	{ "5Ti", 5497558138880, 0, BSI },
	{ "4Pi", 4503599627370496, 0, BSI },
	{ "3Ei", 3458764513820540928, 0, BSI },
	{ "10Ti", 10995116277760, 0, BSI },
	{ "100Ti", 109951162777600, 0, BSI },
	/* decimal suffixes */
	{ "5n", 0, 5, DSI },
	{ "4u", 0, 4000, DSI },
	{ "3m", 0, 3000000, DSI },
	{ "9", 9, 0, DSI },
	{ "8k", 8000, 0, DSI },
	{ "50k", 50000, 0, DSI },
	{ "7M", 7000000, 0, DSI },
	{ "6G", 6000000000, 0, DSI },
	{ "5T", 5000000000000, 0, DSI },
	{ "40T", 40000000000000, 0, DSI },
	{ "300T", 300000000000000, 0, DSI },
	{ "2P", 2000000000000000, 0, DSI },
	{ "1E", 1000000000000000000, 0, DSI },
	/* decimal exponents */
	{ "1E-3", 0, 1000000, DEX },
	{ "1e3", 1000, 0, DEX },
	{ "1E6", 1000000, 0, DEX },
	{ "1e9", 1000000000, 0, DEX },
	{ "1E12", 1000000000000, 0, DEX },
	{ "1e15", 1000000000000000, 0, DEX },
	{ "1E18", 1000000000000000000, 0, DEX },
	/* nonstandard but still parsable */
	{ "1e14", 100000000000000, 0, DEX },
	{ "1e13", 10000000000000, 0, DEX },
	{ "100.035k", 100035, 0, DSI },
	/* things that look like floating point */
	{ "0.001", 0, 1000000, DSI },
	{ "0.0005k", 0, 500000000, DSI },
	{ "0.005", 0, 5000000, DSI },
	{ "0.05", 0, 50000000, DSI },
	{ "0.5", 0, 500000000, DSI },
	{ "0.00050k", 0, 500000000, DSI },
	{ "0.00500", 0, 5000000, DSI },
	{ "0.05000", 0, 50000000, DSI },
	{ "0.50000", 0, 500000000, DSI },
	{ "0.5e0", 0, 500000000, DEX },
	{ "0.5e-1", 0, 50000000, DEX },
	{ "0.5e-2", 0, 5000000, DEX },
	{ "10.035M", 10035000, 0, DSI },
	{ "1.2e3", 1200, 0, DEX },
	{ "1.3E+6", 1300000, 0, DEX },
	{ "1.40e9", 1400000000, 0, DEX },
	{ "1.53E12", 1530000000000, 0, DEX },
	{ "1.6e15", 1600000000000000, 0, DEX },
	{ "1.7E18", 1700000000000000000, 0, DEX },
	{ "9.01", 9, 10000000, DSI },
	{ "8.1k", 8100, 0, DSI },
	{ "7.123456M", 7123456, 0, DSI },
	{ "6.987654321G", 6987654321, 0, DSI },
	{ "5.444T", 5444000000000, 0, DSI },
	{ "40.1T", 40100000000000, 0, DSI },
	{ "300.2T", 300200000000000, 0, DSI },
	{ "2.5P", 2500000000000000, 0, DSI },
	{ "1.01E", 1010000000000000000, 0, DSI },
	/* things that round up to a nano unit */
	{ "3.001n", 0, 4, DSI },
	{ "1.1E-9", 0, 2, DEX },
	{ "0.0000000001", 0, 1, DSI },
	{ "0.0000000005", 0, 1, DSI },
	{ "0.00000000050", 0, 1, DSI },
	{ "0.5e-9", 0, 1, DEX },
	{ "0.9n", 0, 1, DSI },
	{ "0.00000012345", 0, 124, DSI },
	{ "0.00000012354", 0, 124, DSI },
	/* fractional binary values */
	{ "100.035Ki", 102435, 840000000, BSI },
	{ "0.5Mi", 524288, 0, BSI },
	{ "0.05Gi", 53687091, 200000000, BSI },
	{ "0.025Ti", 27487790694, 400000000, BSI },
	/*
	 * "things written by trolls".  Kubernetes reports DecimalSI for
	 * "0.000000000001Ki" because the value is below 1; the format here
	 * tells how the suffix was written.
	 */
	{ "0.000000000001Ki", 0, 2, BSI },
	{ ".001", 0, 1000000, DSI },
	{ ".0001k", 0, 100000000, DSI },
	{ "1.", 1, 0, DSI },
	{ "1.G", 1000000000, 0, DSI },
};

/*
 * The texts of TestQuantityParseEmit and of TestQuantityString (canonical
 * and alternate forms), with the values Kubernetes gives them.
 */
static const struct valid k8s_emit[] = {
	{ "1Ki", 1024, 0, BSI },
	{ "1Mi", 1048576, 0, BSI },
	{ "1Gi", 1073741824, 0, BSI },
	{ "1024Mi", 1073741824, 0, BSI },
	{ "1000M", 1000000000, 0, DSI },
	{ ".001Ki", 1, 24000000, BSI },
	{ ".000001Ki", 0, 1024000, BSI },
	{ ".000000001Ki", 0, 1024, BSI },
	{ ".000000000001Ki", 0, 2, BSI },
	{ "300Mi", 314572800, 0, BSI },
	{ "307200Ki", 314572800, 0, BSI },
	{ "6Ki", 6144, 0, BSI },
	{ "1001Gi", 1074815565824, 0, BSI },
	{ "1025024Mi", 1074815565824, 0, BSI },
	{ "1Ti", 1099511627776, 0, BSI },
	{ "1024Gi", 1099511627776, 0, BSI },
	{ "5", 5, 0, DSI },
	{ "5000m", 5, 0, DSI },
	{ "500m", 0, 500000000, DSI },
	{ "1G", 1000000000, 0, DSI },
	{ "0.001T", 1000000000, 0, DSI },
	{ "1m", 0, 1000000, DSI },
	{ "1000u", 0, 1000000, DSI },
	{ "80m", 0, 80000000, DSI },
	{ "1080m", 1, 80000000, DSI },
	{ "1.08", 1, 80000000, DSI },
	{ "1080000000n", 1, 80000000, DSI },
	{ "300M", 300000000, 0, DSI },
	{ "1T", 1000000000000, 0, DSI },
	{ "1234567M", 1234567000000, 0, DSI },
	{ "1234567m", 1234, 567000000, DSI },
	{ "3k", 3000, 0, DSI },
	{ "1025", 1025, 0, DSI },
	{ "00", 0, 0, DSI },
	{ "1e9", 1000000000, 0, DEX },
	{ ".001e12", 1000000000, 0, DEX },
	{ "1e-3", 0, 1000000, DEX },
	{ "0.001e0", 0, 1000000, DEX },
	{ "1e-9", 0, 1, DEX },
	{ "1000e-12", 0, 1, DEX },
	{ "80e-3", 0, 80000000, DEX },
	{ "300e6", 300000000, 0, DEX },
	{ "3e3", 3000, 0, DEX },
	{ "1n", 0, 1, DSI },
	{ "80n", 0, 80, DSI },
	{ "1080n", 0, 1080, DSI },
	{ "1u", 0, 1000, DSI },
	{ "80u", 0, 80000, DSI },
	{ "1080u", 0, 1080000, DSI },
	/* TestNewSet and TestQuantityValueSet round trips */
	{ "1234k", 1234000, 0, DSI },
	{ "1e6", 1000000, 0, DEX },
};

static void test_quantity__k8s_parse_table(void **state)
{
	(void)state;
	failures = 0;
	check_valid_table(k8s_parse, NELEM(k8s_parse));
	check_valid_table(k8s_emit, NELEM(k8s_emit));
	assert_int_equal(failures, 0);
}

/*
 * Kubernetes' invalid list, the texts its scanner refuses, and the ones
 * outside the documented grammar.
 */
static const struct invalid k8s_invalid[] = {
	{ "", VGPU_ESYNTAX },
	{ "1.1.M", VGPU_ESYNTAX },
	{ "1+1.0M", VGPU_ESYNTAX },
	{ "0.1mi", VGPU_ESYNTAX },
	{ "0.1am", VGPU_ESYNTAX },
	{ "aoeu", VGPU_ESYNTAX },
	{ ".5i", VGPU_ESYNTAX },
	{ "1i", VGPU_ESYNTAX },
	{ "-3.01i", VGPU_ESYNTAX },
	{ "-3.01e-", VGPU_ESYNTAX },
	{ " 1", VGPU_ESYNTAX },
	{ "1 ", VGPU_ESYNTAX },
	{ "Non-Numeric", VGPU_ESYNTAX },
	{ "invalid", VGPU_ESYNTAX },
};

static const struct invalid syntax_errors[] = {
	/* no digits at all (Kubernetes' scanner reads these as zero) */
	{ ".", VGPU_ESYNTAX },
	{ "-", VGPU_ESYNTAX },
	{ "+", VGPU_ESYNTAX },
	{ "-.", VGPU_ESYNTAX },
	{ "+.", VGPU_ESYNTAX },
	{ "Ki", VGPU_ESYNTAX },
	{ "-Mi", VGPU_ESYNTAX },
	{ "k", VGPU_ESYNTAX },
	{ "m", VGPU_ESYNTAX },
	{ "e3", VGPU_ESYNTAX },
	{ ".e3", VGPU_ESYNTAX },
	{ "E", VGPU_ESYNTAX },
	/* numbers */
	{ "1.2.3", VGPU_ESYNTAX },
	{ "1..2", VGPU_ESYNTAX },
	{ "..1", VGPU_ESYNTAX },
	{ "1,5", VGPU_ESYNTAX },
	{ "1_000", VGPU_ESYNTAX },
	{ "0x10", VGPU_ESYNTAX },
	{ "inf", VGPU_ESYNTAX },
	{ "NaN", VGPU_ESYNTAX },
	{ "\xd9\xa1", VGPU_ESYNTAX }, /* ARABIC-INDIC DIGIT ONE */
	/* signs */
	{ "++1", VGPU_ESYNTAX },
	{ "--1", VGPU_ESYNTAX },
	{ "+-1", VGPU_ESYNTAX },
	{ "-+1", VGPU_ESYNTAX },
	{ "1-", VGPU_ESYNTAX },
	{ "1+", VGPU_ESYNTAX },
	{ "1-5", VGPU_ESYNTAX },
	{ "- 1", VGPU_ESYNTAX },
	/* white space anywhere */
	{ "\t1", VGPU_ESYNTAX },
	{ "1\n", VGPU_ESYNTAX },
	{ "1 Ki", VGPU_ESYNTAX },
	{ "1Ki ", VGPU_ESYNTAX },
	/* suffixes */
	{ "1K", VGPU_ESYNTAX },
	{ "1ki", VGPU_ESYNTAX },
	{ "1KI", VGPU_ESYNTAX },
	{ "1kI", VGPU_ESYNTAX },
	{ "1mi", VGPU_ESYNTAX },
	{ "1ni", VGPU_ESYNTAX },
	{ "1ui", VGPU_ESYNTAX },
	{ "1ei", VGPU_ESYNTAX },
	{ "1KiB", VGPU_ESYNTAX },
	{ "1kb", VGPU_ESYNTAX },
	{ "1B", VGPU_ESYNTAX },
	{ "1Z", VGPU_ESYNTAX },
	{ "1Zi", VGPU_ESYNTAX },
	{ "1Y", VGPU_ESYNTAX },
	{ "1mm", VGPU_ESYNTAX },
	{ "1kk", VGPU_ESYNTAX },
	{ "1Mm", VGPU_ESYNTAX },
	{ "1EE", VGPU_ESYNTAX },
	{ "1Ki1", VGPU_ESYNTAX },
	{ "1Mi5", VGPU_ESYNTAX },
	{ "1m3", VGPU_ESYNTAX },
	{ "1n5", VGPU_ESYNTAX },
	{ "1k-3", VGPU_ESYNTAX },
	{ "1Ki.", VGPU_ESYNTAX },
	{ "1.Ki.", VGPU_ESYNTAX },
	/* exponents */
	{ "1e", VGPU_ESYNTAX },
	{ "1e+", VGPU_ESYNTAX },
	{ "1e-", VGPU_ESYNTAX },
	{ "1E+", VGPU_ESYNTAX },
	{ "1e+-3", VGPU_ESYNTAX },
	{ "1e--3", VGPU_ESYNTAX },
	{ "1ee3", VGPU_ESYNTAX },
	{ "1Ee3", VGPU_ESYNTAX },
	{ "1eE3", VGPU_ESYNTAX },
	{ "1e3e3", VGPU_ESYNTAX },
	{ "1e1.5", VGPU_ESYNTAX },
	{ "1e.5", VGPU_ESYNTAX },
	{ "1e3Ki", VGPU_ESYNTAX },
	{ "1e3k", VGPU_ESYNTAX },
	{ "1e 3", VGPU_ESYNTAX },
	{ "1e0x1", VGPU_ESYNTAX },
	{ "1e1_0", VGPU_ESYNTAX },
	/* exponents that do not fit an int32 */
	{ "1e2147483648", VGPU_ESYNTAX },
	{ "1e+2147483648", VGPU_ESYNTAX },
	{ "1e-2147483649", VGPU_ESYNTAX },
	{ "0e2147483648", VGPU_ESYNTAX },
	{ "1e4294967296", VGPU_ESYNTAX },
	{ "1e-4294967296", VGPU_ESYNTAX },
	{ "1e99999999999999999999999999", VGPU_ESYNTAX },
};

static void test_quantity__syntax_errors(void **state)
{
	(void)state;
	failures = 0;
	check_error_table(k8s_invalid, NELEM(k8s_invalid));
	check_error_table(syntax_errors, NELEM(syntax_errors));
	/* bytes that a NUL-terminated text cannot hold */
	expect_error("1\0", 2, VGPU_ESYNTAX);
	expect_error("\0" "1", 2, VGPU_ESYNTAX);
	expect_error("1K\0i", 4, VGPU_ESYNTAX);
	expect_error(NULL, 0, VGPU_ESYNTAX);
	assert_int_equal(failures, 0);
}

/* ------------------------------------------------------------------------
 * Every suffix, and every near miss.
 */
static void test_quantity__every_suffix(void **state)
{
	static const struct valid suffixes[] = {
		{ "7", 7, 0, DSI },
		{ "7n", 0, 7, DSI },
		{ "7u", 0, 7000, DSI },
		{ "7m", 0, 7000000, DSI },
		{ "7k", 7000, 0, DSI },
		{ "7M", 7000000, 0, DSI },
		{ "7G", 7000000000, 0, DSI },
		{ "7T", 7000000000000, 0, DSI },
		{ "7P", 7000000000000000, 0, DSI },
		{ "7E", 7000000000000000000, 0, DSI },
		{ "7Ki", 7168, 0, BSI },
		{ "7Mi", 7340032, 0, BSI },
		{ "7Gi", 7516192768, 0, BSI },
		{ "7Ti", 7696581394432, 0, BSI },
		{ "7Pi", 7881299347898368, 0, BSI },
		{ "7Ei", 8070450532247928832, 0, BSI },
		{ "7e0", 7, 0, DEX },
		{ "7E0", 7, 0, DEX },
		{ "7e+0", 7, 0, DEX },
		{ "7e-0", 7, 0, DEX },
		{ "7e1", 70, 0, DEX },
		{ "7E+2", 700, 0, DEX },
		{ "7e-1", 0, 700000000, DEX },
		{ "7E-9", 0, 7, DEX },
		{ "7e18", 7000000000000000000, 0, DEX },
		{ "7e007", 70000000, 0, DEX },
		{ "7e+0000000000000000000000003", 7000, 0, DEX },
		{ "7e-0000000000000000000000003", 0, 7000000, DEX },
	};
	static const char *const bad[] = {
		"K", "ki", "KI", "kI", "i", "I", "N", "U", "g", "t", "p",
		"Ki ", "iK", "KiKi", "Kii", "e", "E+", "E-", "ee", "eE", "b",
		"mi", "ui", "ni", "Mb", "MB", "Gb", "GB", "KB", "Kib", "kib",
		"EiB", "e+", "e-", "e1k", "1e", "M1",
	};
	char buf[32];
	size_t i;

	(void)state;
	failures = 0;
	check_valid_table(suffixes, NELEM(suffixes));
	for (i = 0; i < NELEM(bad); i++) {
		int len = snprintf(buf, sizeof(buf), "7%s", bad[i]);

		expect_error(buf, (size_t)len, VGPU_ESYNTAX);
		len = snprintf(buf, sizeof(buf), "7.5%s", bad[i]);
		expect_error(buf, (size_t)len, VGPU_ESYNTAX);
	}
	assert_int_equal(failures, 0);
}

/* ------------------------------------------------------------------------
 * Zero and the shapes of a number.
 */
static void test_quantity__zero_forms(void **state)
{
	static const struct valid zeros[] = {
		{ "0", 0, 0, DSI },
		{ "00", 0, 0, DSI },
		{ "000.000", 0, 0, DSI },
		{ "0.", 0, 0, DSI },
		{ ".0", 0, 0, DSI },
		{ "0.0", 0, 0, DSI },
		{ "0n", 0, 0, DSI },
		{ "0E", 0, 0, DSI },
		{ "0Ei", 0, 0, BSI },
		{ "0.0Ki", 0, 0, BSI },
		{ "0e0", 0, 0, DEX },
		{ "0e5", 0, 0, DEX },
		{ "0e-5", 0, 0, DEX },
		{ "0e2147483647", 0, 0, DEX },
		{ "0e-2147483648", 0, 0, DEX },
		{ "0.000e999999999", 0, 0, DEX },
	};
	struct vgpu_quantity a, b;

	(void)state;
	failures = 0;
	check_valid_table(zeros, NELEM(zeros));
	/* "-0" and "+0" are zero, equal to each other, with no sign left. */
	assert_int_equal(vgpu_quantity_parse("-0", &a), 0);
	assert_int_equal(vgpu_quantity_parse("+0", &b), 0);
	assert_int_equal(a.units, 0);
	assert_int_equal(a.nanos, 0);
	assert_int_equal(vgpu_quantity_cmp(&a, &b), 0);
	assert_int_equal(vgpu_quantity_value(&a), 0);
	assert_true(vgpu_quantity_is_whole(&a));
	/* Not zero: the smallest value rounds up to one nano unit. */
	expect_valid("0.0000000000000000001", 21, 0, 1, DSI);
	expect_valid("-0.0000000000000000001", 22, 0, -1, DSI);
	assert_int_equal(failures, 0);
}

static void test_quantity__number_shapes(void **state)
{
	static const struct valid shapes[] = {
		{ "12", 12, 0, DSI },
		{ "12.", 12, 0, DSI },
		{ ".12", 0, 120000000, DSI },
		{ "12.34", 12, 340000000, DSI },
		{ "0012.3400", 12, 340000000, DSI },
		{ "12.e1", 120, 0, DEX },
		{ ".5e1", 5, 0, DEX },
		{ "12.k", 12000, 0, DSI },
		{ ".5Ki", 512, 0, BSI },
		{ "123e-2", 1, 230000000, DEX },
		{ "1000e-3", 1, 0, DEX },
	};

	(void)state;
	failures = 0;
	check_valid_table(shapes, NELEM(shapes));
	assert_int_equal(failures, 0);
}

/* ------------------------------------------------------------------------
 * The int64 range: |value| rounded up to a whole number <= INT64_MAX.
 */
static void test_quantity__int64_boundaries(void **state)
{
	static const struct valid in_range[] = {
		{ "9223372036854775807", INT64_MAX, 0, DSI },
		{ "9223372036854775807.000", INT64_MAX, 0, DSI },
		{ "09223372036854775807", INT64_MAX, 0, DSI },
		{ "9223372036854775.807k", INT64_MAX, 0, DSI },
		{ "9.223372036854775807E", INT64_MAX, 0, DSI },
		{ "9223372036854775807000000000n", INT64_MAX, 0, DSI },
		{ "9.223372036854775807e18", INT64_MAX, 0, DEX },
		{ "92233720368547758070e-1", INT64_MAX, 0, DEX },
		{ "9223372036854775806.5", INT64_MAX - 1, 500000000, DSI },
		{ "9223372036854775806.999999999", INT64_MAX - 1, 999999999,
		  DSI },
		/* rounds up to exactly INT64_MAX */
		{ "9223372036854775806.9999999991", INT64_MAX, 0, DSI },
		{ "7Ei", 8070450532247928832, 0, BSI },
		{ "7.999999999999999999Ei", INT64_MAX - 1, 847078496, BSI },
		{ "8191.999999999Pi", 9223372036853649908, 93157376, BSI },
		{ "8388607.999999999Ti", INT64_MAX - 1099, 488372224, BSI },
		{ "9007199254740991Ki", 9223372036854774784, 0, BSI },
		{ "1e18", 1000000000000000000, 0, DEX },
	};
	static const struct invalid out_of_range[] = {
		{ "9223372036854775808", VGPU_ERANGE },
		{ "-9223372036854775808", VGPU_ERANGE },
		{ "9223372036854775807.5", VGPU_ERANGE },
		{ "-9223372036854775807.5", VGPU_ERANGE },
		{ "9223372036854775807.0000000001", VGPU_ERANGE },
		{ "9223372036854775807.000000001", VGPU_ERANGE },
		{ "9223372036854775.8075k", VGPU_ERANGE },
		{ "9223372036854775.808k", VGPU_ERANGE },
		{ "9.223372036854775808E", VGPU_ERANGE },
		{ "10E", VGPU_ERANGE },
		{ "99999999999999999999", VGPU_ERANGE },
		{ "18446744073709551616", VGPU_ERANGE },
		{ "1e19", VGPU_ERANGE },
		{ "10e18", VGPU_ERANGE },
		{ "8Ei", VGPU_ERANGE },
		{ "-8Ei", VGPU_ERANGE },
		{ "8192Pi", VGPU_ERANGE },
		{ "9007199254740992Ki", VGPU_ERANGE },
		{ "7.9999999999999999999Ei", VGPU_ERANGE },
		{ "8191.9999999999999999999Pi", VGPU_ERANGE },
		{ "1e2147483647", VGPU_ERANGE },
		{ "1e999999999", VGPU_ERANGE },
		{ "-1e999999999", VGPU_ERANGE },
		/*
		 * Texts Kubernetes accepts as values above 2^63-1 (the
		 * binary ones capped at 2^63-1).
		 */
		{ "9Ei", VGPU_ERANGE },
		{ "9223372036854775807Ki", VGPU_ERANGE },
		{ "12E", VGPU_ERANGE },
		{ "1e21", VGPU_ERANGE },
		{ "1000E", VGPU_ERANGE },
		{ "5e21", VGPU_ERANGE },
		{ "5000E", VGPU_ERANGE },
		{ "1e24", VGPU_ERANGE },
		{ "1000000E", VGPU_ERANGE },
		{ "9223372036854775809", VGPU_ERANGE },
		{ "9223372036854775818", VGPU_ERANGE },
		{ "9223372036854775808m", 0 }, /* fits: checked below */
	};
	size_t i;

	(void)state;
	failures = 0;
	check_valid_table(in_range, NELEM(in_range));
	for (i = 0; i < NELEM(out_of_range); i++)
		if (out_of_range[i].code != 0)
			expect_error(out_of_range[i].in,
				     strlen(out_of_range[i].in),
				     out_of_range[i].code);
	expect_valid("9223372036854775808m", 20, 9223372036854775,
		     808000000, DSI);
	/* A syntax error wins over a range error. */
	expect_error("99999999999999999999 ", 21, VGPU_ESYNTAX);
	expect_error("1e999999999x", 12, VGPU_ESYNTAX);
	assert_int_equal(failures, 0);
}

/* ------------------------------------------------------------------------
 * Rounding up to nano units, away from zero.
 */
static void test_quantity__nano_rounding(void **state)
{
	static const struct valid rounding[] = {
		{ "1.0000000001", 1, 1, DSI },
		{ "1.000000001", 1, 1, DSI },
		{ "1.0000000010", 1, 1, DSI },
		{ "1.0000000011", 1, 2, DSI },
		{ "1.9999999991", 2, 0, DSI },
		{ "0.9999999999", 1, 0, DSI },
		{ "0.999999999", 0, 999999999, DSI },
		{ "0.1n", 0, 1, DSI },
		{ "1.5n", 0, 2, DSI },
		{ "999.9999999999n", 0, 1000, DSI },
		{ "1u", 0, 1000, DSI },
		{ "1.0001u", 0, 1001, DSI },
		{ "0.0001u", 0, 1, DSI },
		{ "1e-10", 0, 1, DEX },
		{ "15e-10", 0, 2, DEX },
		{ "1e-999999999", 0, 1, DEX },
		{ "1e-2147483648", 0, 1, DEX },
		{ "1.000000000000000000000000001Ki", 1024, 1, BSI },
		{ "0.1Ki", 102, 400000000, BSI },
		{ "0.001Ki", 1, 24000000, BSI },
		{ "0.000000000000000001Ei", 1, 152921505, BSI },
	};

	(void)state;
	failures = 0;
	check_valid_table(rounding, NELEM(rounding));
	assert_int_equal(failures, 0);
}

/* ------------------------------------------------------------------------
 * Long digit runs: the work is linear in the length, whatever the value.
 */
#define LONG_RUN ((size_t)1 << 20)

/* head, then n copies of c, then tail, in a fresh buffer. */
static char *build(const char *head, char c, size_t n, const char *tail,
		   size_t *len)
{
	size_t hl = strlen(head), tl = strlen(tail);
	char *s = malloc(hl + n + tl + 1);

	assert_non_null(s);
	memcpy(s, head, hl);
	memset(s + hl, c, n);
	memcpy(s + hl + n, tail, tl + 1);
	*len = hl + n + tl;
	return s;
}

static void test_quantity__long_digit_runs(void **state)
{
	static const struct {
		const char *head;
		char c;
		const char *tail;
		int code;
		int64_t units;
		int32_t nanos;
		enum vgpu_format format;
	} t[] = {
		{ "1", '0', "", VGPU_ERANGE, 0, 0, DSI },
		{ "", '9', "", VGPU_ERANGE, 0, 0, DSI },
		{ "1", '0', "e-1048576", 0, 1, 0, DEX },
		{ "1", '0', "e-1048570", 0, 1000000, 0, DEX },
		{ "", '0', "5", 0, 5, 0, DSI },
		{ "-", '0', "5", 0, -5, 0, DSI },
		{ "", '0', "", 0, 0, 0, DSI },
		{ "0.", '0', "", 0, 0, 0, DSI },
		{ "0.", '0', "1", 0, 0, 1, DSI },
		{ "-0.", '0', "1", 0, 0, -1, DSI },
		{ "0.", '0', "1Ki", 0, 0, 1, BSI },
		{ "0.", '0', "1Ei", 0, 0, 1, BSI },
		{ "0.5", '0', "", 0, 0, 500000000, DSI },
		{ "0.5", '0', "Ki", 0, 512, 0, BSI },
		{ "1.", '9', "", 0, 2, 0, DSI },
		{ "-1.", '9', "", 0, -2, 0, DSI },
		{ "0.", '9', "Ki", 0, 1024, 0, BSI },
		{ "0.", '1', "Ki", 0, 113, 777777778, BSI },
		{ "0.", '3', "Ei", 0, 384307168202282325, 333333334, BSI },
		{ "0.", '1', "e9", 0, 111111111, 111111112, DEX },
		{ "0.", '1', "e-1", 0, 0, 11111112, DEX },
		{ "0.", '1', "e999999999", VGPU_ERANGE, 0, 0, DEX },
		{ "0.", '0', "1e-999999999", 0, 0, 1, DEX },
		{ "0.", '0', "1e1048585", 0, 100000000, 0, DEX },
		{ "", '1', "e-1048570", 0, 111111, 111111112, DEX },
		{ "", '7', "x", VGPU_ESYNTAX, 0, 0, DSI },
		{ "1.", '0', ".", VGPU_ESYNTAX, 0, 0, DSI },
	};
	size_t i;

	(void)state;
	failures = 0;
	for (i = 0; i < NELEM(t); i++) {
		size_t len;
		char *s = build(t[i].head, t[i].c, LONG_RUN, t[i].tail, &len);

		if (t[i].code == 0)
			expect_valid(s, len, t[i].units, t[i].nanos,
				     t[i].format);
		else
			expect_error(s, len, t[i].code);
		free(s);
	}
	assert_int_equal(failures, 0);
}

/* ------------------------------------------------------------------------
 * Value(): rounded up to an integer, away from zero.
 */
static void test_quantity__value(void **state)
{
	static const struct {
		const char *in;
		int64_t value;
	} t[] = {
		{ "0", 0 },
		{ "1.5", 2 },
		{ "-1.5", -2 },
		{ "1n", 1 },
		{ "-1n", -1 },
		{ "500m", 1 },
		{ "-500m", -1 },
		{ "1.0000000001", 2 },
		{ "5k", 5000 },
		{ "3000", 3000 },
		{ "3k", 3000 },
		{ "1e3", 1000 },
		{ "0.1Ki", 103 },
		{ "0.5Ki", 512 },
		{ "16Gi", 17179869184 },
		{ "9223372036854775806.5", INT64_MAX },
		{ "-9223372036854775806.5", -INT64_MAX },
		{ "9223372036854775807", INT64_MAX },
		/* TestNewSet and TestQuantityValueSet */
		{ "1", 1 },
		{ "1k", 1000 },
		{ "1234k", 1234000 },
		{ "1Ki", 1024 },
		{ "1e6", 1000000 },
		{ "1Mi", 1048576 },
	};
	struct vgpu_quantity q;
	size_t i;

	(void)state;
	failures = 0;
	for (i = 0; i < NELEM(t); i++) {
		int ret = vgpu_quantity_parse(t[i].in, &q);

		EXPECT(ret == 0, "%s: parse returned %d", t[i].in, ret);
		if (ret != 0)
			continue;
		EXPECT(vgpu_quantity_value(&q) == t[i].value,
		       "%s: value %lld, want %lld", t[i].in,
		       (long long)vgpu_quantity_value(&q),
		       (long long)t[i].value);
	}
	assert_int_equal(failures, 0);
}

/* ------------------------------------------------------------------------
 * Cmp(): exact, whatever the suffix.
 */
static void test_quantity__cmp(void **state)
{
	static const struct {
		const char *a, *b;
		int cmp;
	} t[] = {
		/* TestQuantityCmp */
		{ "0", "0", 0 },
		{ "100m", "50m", 1 },
		{ "50m", "100m", -1 },
		{ "10000T", "100Gi", 1 },
		/* TestQuantityCmpInt64AndDec, as texts */
		{ "901e-2", "901e-2", 0 },
		{ "90e-1", "901e-2", -1 },
		{ "901e-2", "900e-2", 1 },
		{ "0e1", "0e-1", 0 },
		{ "800e-3", "1", -1 },
		{ "800e-3", "79e-2", 1 },
		{ "9223372036854775807", "1e-1", 1 },
		{ "9223372036854775807e-16", "1e3", -1 },
		{ "-9223372036854775807", "0", -1 },
		{ "-9223372036854775808e-18", "-1", -1 },
		{ "-9223372036854775808e-19", "-1", 1 },
		{ "1000000000000000000e-17", "1e1", 0 },
		{ "1000000000000000000e-17", "-10", 1 },
		{ "-1000000000000000000e-17", "-10", 0 },
		{ "1000000000000000000e-17", "1", 1 },
		{ "1000000000000000001e-17", "1e1", 1 },
		/* parsed, 999999999999999999e-17 rounds up to 10 */
		{ "999999999999999999e-17", "1e1", 0 },
		{ "999999999e-8", "1e1", -1 },
		/* across formats */
		{ "1Ki", "1024", 0 },
		{ "1k", "1000", 0 },
		{ "1e3", "1k", 0 },
		{ "16Gi", "16384Mi", 0 },
		{ "1Ei", "1152921504606846976", 0 },
		{ "1E", "1e18", 0 },
		{ "1.5", "1500m", 0 },
		{ "5.0", "5", 0 },
		{ "-0", "+0", 0 },
		{ "0.000000000001Ki", "2n", 0 },
		{ "1Ki", "1k", 1 },
		/* signs and fractions */
		{ "-1.5", "-1", -1 },
		{ "-0.5", "0.3", -1 },
		{ "-1.5", "-0.2", -1 },
		{ "-1.5", "-1.6", 1 },
		{ "1n", "0", 1 },
		{ "-1n", "0", -1 },
		{ "1.000000001", "1.000000002", -1 },
		{ "9223372036854775807", "9223372036854775806.999999999", 1 },
		{ "-9223372036854775807", "-9223372036854775806.999999999", -1 },
	};
	struct vgpu_quantity a, b;
	size_t i;

	(void)state;
	failures = 0;
	for (i = 0; i < NELEM(t); i++) {
		int ra = vgpu_quantity_parse(t[i].a, &a);
		int rb = vgpu_quantity_parse(t[i].b, &b);

		EXPECT(ra == 0 && rb == 0, "%s, %s: parse returned %d, %d",
		       t[i].a, t[i].b, ra, rb);
		if (ra != 0 || rb != 0)
			continue;
		EXPECT(vgpu_quantity_cmp(&a, &b) == t[i].cmp,
		       "cmp(%s, %s) = %d, want %d", t[i].a, t[i].b,
		       vgpu_quantity_cmp(&a, &b), t[i].cmp);
		EXPECT(vgpu_quantity_cmp(&b, &a) == -t[i].cmp,
		       "cmp(%s, %s) = %d, want %d", t[i].b, t[i].a,
		       vgpu_quantity_cmp(&b, &a), -t[i].cmp);
	}
	assert_int_equal(failures, 0);
}

/* ------------------------------------------------------------------------
 * is_whole(): what docs/behaviour.md §3 (#s3-quantities) calls a whole
 * number.
 */
static void test_quantity__is_whole(void **state)
{
	static const struct {
		const char *in;
		bool whole;
	} t[] = {
		{ "5k", true },		{ "1e3", true },
		{ "5.0", true },	{ "1.5", false },
		{ "500m", false },	{ "0.5Ki", true },
		{ "0.1Ki", false },	{ "0", true },
		{ "-0", true },		{ "1n", false },
		{ "1000m", true },	{ "16Gi", true },
		{ "1.0000000001", false }, { "-1.5", false },
		{ "-2", true },		{ "1e-3", false },
		{ "12.5e1", true },	{ "0.9999999999", true },
		{ "1023.9999999999", true }, { "100.035Ki", false },
	};
	struct vgpu_quantity q;
	size_t i;

	(void)state;
	failures = 0;
	for (i = 0; i < NELEM(t); i++) {
		int ret = vgpu_quantity_parse(t[i].in, &q);

		EXPECT(ret == 0, "%s: parse returned %d", t[i].in, ret);
		if (ret == 0)
			EXPECT(vgpu_quantity_is_whole(&q) == t[i].whole,
			       "%s: is_whole %d, want %d", t[i].in,
			       (int)vgpu_quantity_is_whole(&q),
			       (int)t[i].whole);
	}
	assert_int_equal(failures, 0);
}

/* ------------------------------------------------------------------------
 * parsen reads exactly len bytes; parse reads up to the NUL.
 */
static void test_quantity__explicit_length(void **state)
{
	(void)state;
	failures = 0;
	expect_valid("12345", 3, 123, 0, DSI);
	expect_valid("1Ki", 1, 1, 0, DSI);
	expect_valid("1.5e3xyz", 5, 1500, 0, DEX);
	expect_valid("16Gi\"", 4, 17179869184, 0, BSI);
	expect_error("1Ki", 2, VGPU_ESYNTAX);
	expect_error("1e3", 2, VGPU_ESYNTAX);
	expect_error("-5", 1, VGPU_ESYNTAX);
	expect_error("5", 0, VGPU_ESYNTAX);
	assert_int_equal(failures, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_quantity__k8s_parse_table),
		cmocka_unit_test(test_quantity__syntax_errors),
		cmocka_unit_test(test_quantity__every_suffix),
		cmocka_unit_test(test_quantity__zero_forms),
		cmocka_unit_test(test_quantity__number_shapes),
		cmocka_unit_test(test_quantity__int64_boundaries),
		cmocka_unit_test(test_quantity__nano_rounding),
		cmocka_unit_test(test_quantity__long_digit_runs),
		cmocka_unit_test(test_quantity__value),
		cmocka_unit_test(test_quantity__cmp),
		cmocka_unit_test(test_quantity__is_whole),
		cmocka_unit_test(test_quantity__explicit_length),
	};

	return cmocka_run_group_tests_name("quantity", tests, NULL, NULL);
}
