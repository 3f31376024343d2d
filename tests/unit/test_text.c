/*
 * test_text.c - UTF-8 characters, masking and cutting, decimal numbers.
 */
#include "test.h"

#include "text.h"

struct mask_case {
	const char *in;
	size_t max_chars;
	const char *out;
};

static const struct mask_case mask_cases[] = {
	{ "plain", 10, "plain" },
	{ "", 10, "" },
	{ "a\nb\tc\x1b[0m\x7f", 20, "abc[0m" },
	{ "C1 \xc2\x85 gone, \xc2\xa0 kept", 40, "C1  gone, \xc2\xa0 kept" },
	{ "0123456789", 10, "0123456789" },
	{ "0123456789A", 10, "0123456..." },
	/* characters, not bytes: eight two-byte letters fit in 8 */
	{ "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", 8,
	  "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9" },
	{ "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9",
	  8, "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9..." },
	/* control characters do not count */
	{ "\n\n\n\n\n\n\n\n\n\n\n\nabc", 4, "abc" },
};

static void test_text__mask_cut(void **state)
{
	char out[256];
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(mask_cases); i++) {
		const struct mask_case *c = &mask_cases[i];
		size_t n = text_mask_cutn(out, sizeof(out), c->in, strlen(c->in),
					  c->max_chars);

		assert_string_equal(out, c->out);
		assert_int_equal(n, strlen(c->out));
	}
}

static void test_text__mask_cut_small_buffer(void **state)
{
	char out[8];

	(void)state;
	/* the byte size limits too, and "..." still fits */
	text_mask_cutn(out, sizeof(out), "abcdefghijkl", 12, 100);
	assert_string_equal(out, "abcd...");
	text_mask_cutn(out, sizeof(out), "abcdefg", 7, 100);
	assert_string_equal(out, "abcdefg");
	/* never a split UTF-8 sequence */
	text_mask_cutn(out, sizeof(out), "\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac",
		       9, 100);
	assert_string_equal(out, "\xe2\x82\xac...");
}

/* Inputs that may hold NUL bytes: len is the length of in. */
struct bytes_case {
	const char *in;
	size_t len;
	size_t max_chars;
	const char *out;
};

#define BYTES(s) s, sizeof(s) - 1

/*
 * Bytes that are not UTF-8 are dropped one by one, as control characters
 * are; they never count as characters and never reach the output.
 */
static const struct bytes_case invalid_cases[] = {
	/* F8..FF never start a sequence */
	{ BYTES("a\xf8z"), 10, "az" },
	{ BYTES("a\xfb\xbf\xbf\xbf\xbfz"), 10, "az" },
	{ BYTES("a\xfc\x84\x80\x80\x80\x80z"), 10, "az" },
	{ BYTES("\xfe\xff\xfe\xff"), 10, "" },
	{ BYTES("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff" "abcdef"), 6,
	  "abcdef" },
	/* F5..F7: past U+10FFFF */
	{ BYTES("a\xf5\x80\x80\x80z"), 10, "az" },
	{ BYTES("a\xf7\xbf\xbf\xbfz"), 10, "az" },
	{ BYTES("a\xf4\x90\x80\x80z"), 10, "az" },
	/* lone continuation bytes, C0 and C1 as lead bytes (overlong) */
	{ BYTES("a\x80\xbfz"), 10, "az" },
	{ BYTES("a\xc0\xafz"), 10, "az" },
	{ BYTES("a\xc1\xbfz"), 10, "az" },
	{ BYTES("a\xe0\x80\xafz"), 10, "az" },
	{ BYTES("a\xf0\x80\x80\xafz"), 10, "az" },
	/* surrogates */
	{ BYTES("a\xed\xa0\x80z"), 10, "az" },
	{ BYTES("a\xed\xbf\xbfz"), 10, "az" },
	/* truncated sequences, in the middle and at the end */
	{ BYTES("a\xe2\x82z"), 10, "az" },
	{ BYTES("a\xf0\x9f\x98z"), 10, "az" },
	{ BYTES("a\xc3"), 10, "a" },
	{ BYTES("a\xe2\x82"), 10, "a" },
	{ BYTES("a\xf0\x9f\x98"), 10, "a" },
	{ BYTES("\xf0" "abc"), 10, "abc" },
	/* the largest and smallest of each length are kept */
	{ BYTES("\xc2\xa0\xdf\xbf\xe0\xa0\x80\xef\xbf\xbf"), 10,
	  "\xc2\xa0\xdf\xbf\xe0\xa0\x80\xef\xbf\xbf" },
	{ BYTES("\xf0\x90\x80\x80\xf4\x8f\xbf\xbf"), 10,
	  "\xf0\x90\x80\x80\xf4\x8f\xbf\xbf" },
	/* the first and last character around the surrogates */
	{ BYTES("\xed\x9f\xbf\xee\x80\x80"), 10, "\xed\x9f\xbf\xee\x80\x80" },
	/* invalid bytes do not count towards the cut */
	{ BYTES("\xff" "a\xff" "b\xff" "c\xff" "d\xff" "e\xff"), 4, "a..." },
	{ BYTES("\xff" "a\xff" "b\xff" "c\xff" "d\xff"), 4, "abcd" },
};

static void check_bytes_cases(const struct bytes_case *cases, size_t n)
{
	char out[64];
	size_t i;

	for (i = 0; i < n; i++) {
		const struct bytes_case *c = &cases[i];
		size_t len = text_mask_cutn(out, sizeof(out), c->in, c->len,
					    c->max_chars);

		if (strcmp(out, c->out))
			fail_msg("case %zu: got \"%s\", want \"%s\"", i, out,
				 c->out);
		assert_int_equal(len, strlen(c->out));
	}
}

static void test_text__mask_cut_invalid_bytes(void **state)
{
	char in[3], out[16];
	unsigned c;

	(void)state;
	check_bytes_cases(invalid_cases, NELEM(invalid_cases));
	/* every byte that never starts a character, alone between two letters */
	for (c = 0x80; c <= 0xff; c++) {
		if (c >= 0xc2 && c <= 0xf4)
			continue;
		in[0] = 'a';
		in[1] = (char)c;
		in[2] = 'z';
		assert_int_equal(text_mask_cutn(out, sizeof(out), in, 3, 10), 2);
		assert_string_equal(out, "az");
	}
}

static const struct bytes_case control_cases[] = {
	/* NUL is C0 too */
	{ BYTES("a\0b"), 10, "ab" },
	{ BYTES("\0\0\0"), 10, "" },
	/* C1 is C2 80 to C2 9F; C2 A0 (no-break space) is not a control */
	{ BYTES("a\xc2\x80" "b\xc2\x9f" "c\xc2\xa0"), 10, "abc\xc2\xa0" },
	/* DEL, and the characters next to the control ranges */
	{ BYTES("\x1f \x7e\x7f"), 10, " ~" },
	{ BYTES("\xc2\x9f\xc2\xa1"), 10, "\xc2\xa1" },
	/* controls do not count towards the cut */
	{ BYTES("\x01" "a\x02" "b\x03" "c\x04" "d\x05" "e"), 4, "a..." },
};

static void test_text__mask_cut_controls(void **state)
{
	char in[4], out[16];
	unsigned c;

	(void)state;
	check_bytes_cases(control_cases, NELEM(control_cases));
	/* every C0 control and DEL */
	for (c = 0; c <= 0x7f; c++) {
		in[0] = 'a';
		in[1] = (char)c;
		in[2] = 'z';
		text_mask_cutn(out, sizeof(out), in, 3, 10);
		if (c < 0x20 || c == 0x7f)
			assert_string_equal(out, "az");
		else
			assert_int_equal(strlen(out), 3);
	}
	/* every C1 control */
	for (c = 0x80; c <= 0x9f; c++) {
		in[0] = 'a';
		in[1] = (char)0xc2;
		in[2] = (char)c;
		in[3] = 'z';
		assert_int_equal(text_mask_cutn(out, sizeof(out), in, 4, 10), 2);
		assert_string_equal(out, "az");
	}
}

struct char_case {
	const char *in;
	size_t n;    /* the bytes given */
	size_t want; /* text_utf8_charn() */
};

static const struct char_case char_cases[] = {
	{ "\0", 1, 1 },
	{ "A", 1, 1 },
	{ "\x7f", 1, 1 },
	{ "\x80", 1, 0 },
	{ "\xc1\xbf", 2, 0 },
	{ "\xc2\x80", 2, 2 },
	{ "\xc2\x80", 1, 0 },
	{ "\xc2\x41", 2, 0 },
	{ "\xdf\xbf", 2, 2 },
	{ "\xe0\x9f\xbf", 3, 0 },
	{ "\xe0\xa0\x80", 3, 3 },
	{ "\xe0\xa0\x80", 2, 0 },
	{ "\xed\x9f\xbf", 3, 3 },
	{ "\xed\xa0\x80", 3, 0 },
	{ "\xef\xbf\xbf", 3, 3 },
	{ "\xf0\x8f\xbf\xbf", 4, 0 },
	{ "\xf0\x90\x80\x80", 4, 4 },
	{ "\xf0\x90\x80\x80", 3, 0 },
	{ "\xf4\x8f\xbf\xbf", 4, 4 },
	{ "\xf4\x90\x80\x80", 4, 0 },
	{ "\xf5\x80\x80\x80", 4, 0 },
	{ "\xf8\x88\x80\x80\x80", 5, 0 },
	{ "\xfc\x84\x80\x80\x80\x80", 6, 0 },
	{ "\xfe", 1, 0 },
	{ "\xff", 1, 0 },
};

static void test_text__utf8_charn(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(char_cases); i++) {
		const struct char_case *c = &char_cases[i];
		size_t got = text_utf8_charn((const unsigned char *)c->in, c->n);

		if (got != c->want)
			fail_msg("case %zu: got %zu, want %zu", i, got, c->want);
	}
}

struct u64_case {
	const char *in;
	size_t len;
	uint64_t max;
	int rc;
	uint64_t want;
};

#define U64(s, max, rc, want) { s, sizeof(s) - 1, max, rc, want }

static const struct u64_case u64_cases[] = {
	/* empty, zero, leading zeros */
	U64("", UINT64_MAX, -1, 0),
	U64("0", UINT64_MAX, 0, 0),
	U64("0", 0, 0, 0),
	U64("00", 0, 0, 0),
	U64("007", 7, 0, 7),
	U64("0000000000000000000000000000000000000001", 1, 0, 1),
	U64("00000000000000000000018446744073709551615", UINT64_MAX, 0,
	    UINT64_MAX),
	/* the largest value and one past it, for several limits */
	U64("1", 0, -1, 0),
	U64("7", 7, 0, 7),
	U64("8", 7, -1, 0),
	U64("10", 10, 0, 10),
	U64("11", 10, -1, 0),
	U64("19", 19, 0, 19),
	U64("20", 19, -1, 0),
	U64("65535", 65535, 0, 65535),
	U64("65536", 65535, -1, 0),
	U64("9223372036854775807", INT64_MAX, 0, INT64_MAX),
	U64("9223372036854775808", INT64_MAX, -1, 0),
	U64("18446744073709551615", UINT64_MAX, 0, UINT64_MAX),
	/* past UINT64_MAX */
	U64("18446744073709551616", UINT64_MAX, -1, 0),
	U64("18446744073709551620", UINT64_MAX, -1, 0),
	U64("99999999999999999999", UINT64_MAX, -1, 0),
	U64("184467440737095516150", UINT64_MAX, -1, 0),
	U64("100000000000000000000000000000", UINT64_MAX, -1, 0),
	/* signs, spaces, prefixes and other characters */
	U64("-0", UINT64_MAX, -1, 0),
	U64("-1", UINT64_MAX, -1, 0),
	U64("+1", UINT64_MAX, -1, 0),
	U64(" 1", UINT64_MAX, -1, 0),
	U64("1 ", UINT64_MAX, -1, 0),
	U64("\t1", UINT64_MAX, -1, 0),
	U64("1\n", UINT64_MAX, -1, 0),
	U64("1_000", UINT64_MAX, -1, 0),
	U64("1,000", UINT64_MAX, -1, 0),
	U64("1.0", UINT64_MAX, -1, 0),
	U64("1e3", UINT64_MAX, -1, 0),
	U64("0x10", UINT64_MAX, -1, 0),
	U64("a", UINT64_MAX, -1, 0),
	U64("/", UINT64_MAX, -1, 0),
	U64(":", UINT64_MAX, -1, 0),
	U64("\xef\xbc\x91", UINT64_MAX, -1, 0), /* FULLWIDTH DIGIT ONE */
	U64("\xd9\xa1", UINT64_MAX, -1, 0),     /* ARABIC-INDIC DIGIT ONE */
	/* NUL is not a digit, and only len bytes are read */
	U64("1\0", UINT64_MAX, -1, 0),
	U64("\0" "1", UINT64_MAX, -1, 0),
	{ "12", 1, UINT64_MAX, 0, 1 },
	{ "123abc", 3, 200, 0, 123 },
};

static void test_text__u64_parsen(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(u64_cases); i++) {
		const struct u64_case *c = &u64_cases[i];
		uint64_t v = 12345;
		int rc = text_u64_parsen(c->in, c->len, c->max, &v);

		if (rc != c->rc)
			fail_msg("case %zu \"%s\": got %d, want %d", i, c->in,
				 rc, c->rc);
		/* the value only on success, untouched otherwise */
		assert_true(v == (rc ? 12345 : c->want));
	}
}

/*
 * Go's path.Clean() tests (src/path/path_test.go), each path taken from
 * the root: what Clean("/" + in) gives.
 */
static const struct {
	const char *in, *out;
} clean_cases[] = {
	{ "", "/" }, { "abc", "/abc" }, { "abc/def", "/abc/def" },
	{ "a/b/c", "/a/b/c" }, { ".", "/" }, { "..", "/" }, { "../..", "/" },
	{ "../../abc", "/abc" }, { "/abc", "/abc" }, { "/", "/" },
	{ "abc/", "/abc" }, { "abc/def/", "/abc/def" }, { "a/b/c/", "/a/b/c" },
	{ "./", "/" }, { "../", "/" }, { "../../", "/" }, { "/abc/", "/abc" },
	{ "abc//def//ghi", "/abc/def/ghi" }, { "//abc", "/abc" },
	{ "///abc", "/abc" }, { "//abc//", "/abc" }, { "abc//", "/abc" },
	{ "abc/./def", "/abc/def" }, { "/./abc/def", "/abc/def" },
	{ "abc/.", "/abc" }, { "abc/def/ghi/../jkl", "/abc/def/jkl" },
	{ "abc/def/../ghi/../jkl", "/abc/jkl" }, { "abc/def/..", "/abc" },
	{ "abc/def/../..", "/" }, { "/abc/def/../..", "/" },
	{ "abc/def/../../..", "/" }, { "/abc/def/../../..", "/" },
	{ "abc/def/../../../ghi/jkl/../../../mno", "/mno" },
	{ "abc/./../def", "/def" }, { "abc//./../def", "/def" },
	{ "abc/../../././../def", "/def" },
	/* names that only look like . and .. */
	{ "/a/.../b", "/a/.../b" }, { "/a/..b/.c", "/a/..b/.c" },
	{ "//var/run/./nvidia-container-devices/../nvidia-container-devices/all/",
	  "/var/run/nvidia-container-devices/all" },
};

static void test_text__clean_path(void **state)
{
	char out[128];
	size_t i, n;

	(void)state;
	for (i = 0; i < NELEM(clean_cases); i++) {
		n = text_clean_path(out, clean_cases[i].in,
				    strlen(clean_cases[i].in));
		if (strcmp(out, clean_cases[i].out) || n != strlen(out))
			fail_msg("\"%s\": got \"%s\" (%zu), want \"%s\"",
				 clean_cases[i].in, out, n, clean_cases[i].out);
		/* the bound: len + 2 bytes always hold the result */
		assert_true(n + 1 <= strlen(clean_cases[i].in) + 2);
	}
	/* a NUL inside is a byte like any other */
	n = text_clean_path(out, "a\0b/..", 6);
	assert_int_equal(n, 1);
	n = text_clean_path(out, "a\0b", 3);
	assert_int_equal(n, 4);
	assert_memory_equal(out, "/a\0b", 5);
}

/* text_errorf() formats into the caller's buffer, cut to fit, and says -1. */
static void test_text__errorf(void **state)
{
	char err[8];

	(void)state;
	assert_int_equal(text_errorf(err, sizeof(err), "%s=%d", "ab", 7), -1);
	assert_string_equal(err, "ab=7");
	assert_int_equal(text_errorf(err, sizeof(err), "%s", "abcdefghij"), -1);
	assert_string_equal(err, "abcdefg");
}

/* text_distancen(): edits, swaps of neighbours, and the length limit. */
static void test_text__distancen(void **state)
{
	static const struct {
		const char *a, *b;
		size_t d;
	} cases[] = {
		{ "", "", 0 },
		{ "", "abc", 3 },
		{ "abc", "", 3 },
		{ "config", "config", 0 },
		{ "confg", "config", 1 },      /* a deletion */
		{ "configg", "config", 1 },    /* an insertion */
		{ "cinfig", "config", 1 },     /* a substitution */
		{ "cofnig", "config", 1 },     /* a swap */
		{ "defualt", "default", 1 },
		{ "sreve", "serve", 1 },
		{ "revew", "review", 1 },
		{ "lsiten", "listen", 1 },
		{ "ca", "abc", 3 },            /* OSA: no edit of a swapped pair */
		{ "namespcae", "namespace", 1 },
		{ "chekc", "check", 1 },
		{ "kitten", "sitting", 3 },
		{ "version", "serve", 5 },
	};
	char longer[TEXT_DISTANCE_MAX + 2];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t d = text_distancen(cases[i].a, strlen(cases[i].a),
					  cases[i].b, strlen(cases[i].b));

		if (d != cases[i].d)
			fail_msg("\"%s\" \"%s\": %zu, want %zu", cases[i].a,
				 cases[i].b, d, cases[i].d);
		assert_int_equal(text_distancen(cases[i].b,
						strlen(cases[i].b), cases[i].a,
						strlen(cases[i].a)),
				 cases[i].d);
	}
	memset(longer, 'a', sizeof(longer));
	assert_int_equal(text_distancen(longer, TEXT_DISTANCE_MAX, longer,
					TEXT_DISTANCE_MAX), 0);
	assert_int_equal(text_distancen(longer, TEXT_DISTANCE_MAX + 1, "a", 1),
			 SIZE_MAX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_text__mask_cut),
		cmocka_unit_test(test_text__mask_cut_small_buffer),
		cmocka_unit_test(test_text__mask_cut_invalid_bytes),
		cmocka_unit_test(test_text__mask_cut_controls),
		cmocka_unit_test(test_text__utf8_charn),
		cmocka_unit_test(test_text__u64_parsen),
		cmocka_unit_test(test_text__clean_path),
		cmocka_unit_test(test_text__errorf),
		cmocka_unit_test(test_text__distancen),
	};

	return cmocka_run_group_tests_name("text", tests, NULL, NULL);
}
