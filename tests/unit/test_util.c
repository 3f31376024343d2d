/*
 * test_util.c - masking, JSON output and base64.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util.h"

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

static void test_util__mask_cut(void **state)
{
	char out[256];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(mask_cases) / sizeof(mask_cases[0]); i++) {
		const struct mask_case *c = &mask_cases[i];
		size_t n = util_mask_cut(out, sizeof(out), c->in, strlen(c->in),
					 c->max_chars);

		assert_string_equal(out, c->out);
		assert_int_equal(n, strlen(c->out));
	}
}

static void test_util__mask_cut_small_buffer(void **state)
{
	char out[8];

	(void)state;
	/* the byte size limits too, and "..." still fits */
	util_mask_cut(out, sizeof(out), "abcdefghijkl", 12, 100);
	assert_string_equal(out, "abcd...");
	util_mask_cut(out, sizeof(out), "abcdefg", 7, 100);
	assert_string_equal(out, "abcdefg");
	/* never a split UTF-8 sequence */
	util_mask_cut(out, sizeof(out), "\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac",
		      9, 100);
	assert_string_equal(out, "\xe2\x82\xac...");
}

static void test_util__base64(void **state)
{
	static const char *const cases[][2] = {
		{ "", "" },	      { "f", "Zg==" },	   { "fo", "Zm8=" },
		{ "foo", "Zm9v" },    { "foob", "Zm9vYg==" },
		{ "fooba", "Zm9vYmE=" }, { "foobar", "Zm9vYmFy" },
		{ "\xff\xfe\xfd", "//79" },
	};
	size_t i, len;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *b = util_base64(cases[i][0], strlen(cases[i][0]), &len);

		assert_non_null(b);
		assert_string_equal(b, cases[i][1]);
		assert_int_equal(len, strlen(cases[i][1]));
		free(b);
	}
}

/* util_json_dump() writes the bytes json_dumps() writes. */
static void test_util__json_dump_as_jansson(void **state)
{
	static const char *const docs[] = {
		"[\"plain\",\"q\\\"b\\\\s\\/\",\"\\b\\f\\n\\r\\t\"]",
		"[\"\\u0000\\u0001\\u001f\\u007f\\u00e9\\ud83d\\ude00\"]",
		"{\"b\":1,\"a\":[true,false,null],\"\\n\":{}}",
		"[-9223372036854775808,9223372036854775807,0,-1]",
		"[1.5,5.0,1e300,-0.25,0.1]",
		"[[],{},[[{\"x\":\"y\"}]]]",
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
		json_t *v = json_loads(docs[i], JSON_ALLOW_NUL, NULL);
		struct buf b = BUF_INIT;
		char *want;

		assert_non_null(v);
		want = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
		util_json_dump(&b, v);
		assert_false(buf_failed(&b));
		assert_int_equal(b.len, strlen(want));
		assert_memory_equal(b.s, want, b.len);
		free(want);
		buf_release(&b);
		json_decref(v);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_util__mask_cut),
		cmocka_unit_test(test_util__mask_cut_small_buffer),
		cmocka_unit_test(test_util__base64),
		cmocka_unit_test(test_util__json_dump_as_jansson),
	};

	return cmocka_run_group_tests_name("util", tests, NULL, NULL);
}
