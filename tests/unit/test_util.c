/*
 * test_util.c - JSON output and base64.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util.h"

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
		cmocka_unit_test(test_util__base64),
		cmocka_unit_test(test_util__json_dump_as_jansson),
	};

	return cmocka_run_group_tests_name("util", tests, NULL, NULL);
}
