/*
 * test_util.c - base64.
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_util__base64),
	};

	return cmocka_run_group_tests_name("util", tests, NULL, NULL);
}
