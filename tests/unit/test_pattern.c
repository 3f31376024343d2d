/*
 * test_pattern.c - the name patterns of the config: exact names, `*`
 * anywhere, several stars, empty names and patterns, and CEL-expressible
 * patterns.
 */
#include "test.h"

#include "pattern.h"

static int failures;

struct match_case {
	const char *pattern;
	const char *name;
	bool match;
};

static const struct match_case match_cases[] = {
	{ "hami.io/vgpu-node", "hami.io/vgpu-node", true },
	{ "hami.io/vgpu-node", "hami.io/vgpu-nodes", false },
	{ "hami.io/vgpu-node", "hami.io/vgpu-nod", false },
	{ "hami.io/vgpu-node", "", false },
	{ "", "", true },
	{ "", "a", false },
	{ "*", "", true },
	{ "*", "anything at all", true },
	{ "**", "", true },
	{ "CUDA_DEVICE_MEMORY_LIMIT_*", "CUDA_DEVICE_MEMORY_LIMIT_0", true },
	{ "CUDA_DEVICE_MEMORY_LIMIT_*", "CUDA_DEVICE_MEMORY_LIMIT_", true },
	{ "CUDA_DEVICE_MEMORY_LIMIT_*", "CUDA_DEVICE_MEMORY_LIMIT", false },
	{ "CUDA_DEVICE_MEMORY_LIMIT_*", "cuda_device_memory_limit_0", false },
	{ "hami.io/*-devices-to-allocate", "hami.io/vgpu-devices-to-allocate",
	  true },
	{ "hami.io/*-devices-to-allocate", "hami.io/-devices-to-allocate",
	  true },
	{ "hami.io/*-devices-to-allocate", "hami.io/vgpu-devices-to-allocatex",
	  false },
	{ "hami.io/*-allocated", "hami.io/vgpu-devices-allocated", true },
	{ "hami.io/*-allocated", "hami.io/allocated", false },
	/* prefix and suffix may not overlap */
	{ "ab*ba", "aba", false },
	{ "ab*ba", "abba", true },
	{ "a*b*c", "abc", true },
	{ "a*b*c", "axxbyyc", true },
	{ "a*b*c", "acb", false },
	{ "a*b*c", "abcbc", true },
	{ "*x*", "yyxyy", true },
	{ "*x*", "yyyy", false },
	{ "a*aa*a", "aaaa", true },
	{ "a*aa*a", "aaa", false },
	{ "*-*-*", "a-b-c", true },
	{ "*-*-*", "a-bc", false },
};

static void test_pattern__match(void **state)
{
	size_t i;

	(void)state;
	failures = 0; /* counted by EXPECT() in this test only */
	for (i = 0; i < NELEM(match_cases); i++) {
		const struct match_case *c = &match_cases[i];
		struct pattern_set set;

		assert_int_equal(pattern_set_init(&set, &c->pattern, 1), 0);
		EXPECT(pattern_matchn(&set.items[0], c->name, strlen(c->name)) ==
		       c->match, "\"%s\" ~ \"%s\": expected %d", c->pattern,
		       c->name, c->match);
		pattern_set_release(&set);
	}
	assert_int_equal(failures, 0);
}

/* Names are (pointer, length): a NUL byte is one more byte. */
static void test_pattern__nul_bytes(void **state)
{
	const char *texts[] = { "a*", "ab" };
	struct pattern_set set;

	(void)state;
	assert_int_equal(pattern_set_init(&set, texts, 2), 0);
	assert_true(pattern_matchn(&set.items[0], "a\0b", 3));
	assert_false(pattern_matchn(&set.items[1], "a\0b", 3));
	assert_false(pattern_matchn(&set.items[1], "ab\0", 3));
	pattern_set_release(&set);
}

static void test_pattern__set_first_match(void **state)
{
	const char *texts[] = { "x", "CUDA_*", "CUDA_DISABLE_CONTROL" };
	struct pattern_set set, copy, empty = PATTERN_SET_INIT;

	(void)state;
	assert_int_equal(pattern_set_init(&set, texts, 3), 0);
	assert_int_equal(pattern_set_findn(&set, "CUDA_DISABLE_CONTROL", 20), 1);
	assert_int_equal(pattern_set_findn(&set, "x", 1), 0);
	assert_int_equal(pattern_set_findn(&set, "y", 1), -1);
	assert_int_equal(pattern_set_copy(&copy, &set), 0);
	pattern_set_release(&set);
	assert_int_equal(copy.n, 3);
	assert_int_equal(pattern_set_findn(&copy, "CUDA_X", 6), 1);
	pattern_set_release(&copy);
	pattern_set_release(&copy); /* released twice: harmless */
	assert_int_equal(pattern_set_findn(&empty, "x", 1), -1);
	assert_int_equal(pattern_set_init(&empty, NULL, 0), 0);
	assert_int_equal(pattern_set_findn(&empty, "", 0), -1);
	pattern_set_release(&empty);
}

static void test_pattern__simple(void **state)
{
	static const struct {
		const char *text;
		bool simple;
	} cases[] = {
		{ "hami.io/vgpu-node", true },
		{ "CUDA_DEVICE_SM_LIMIT_*", true },
		{ "*", true },
		{ "", true },
		{ "hami.io/*-allocated", false },
		{ "a**", false },
		{ "*a", false },
	};
	size_t i;

	(void)state;
	failures = 0; /* counted by EXPECT() in this test only */
	for (i = 0; i < NELEM(cases); i++) {
		struct pattern_set set;

		assert_int_equal(pattern_set_init(&set, &cases[i].text, 1), 0);
		EXPECT(pattern_is_simple(&set.items[0]) == cases[i].simple,
		       "\"%s\": expected %d", cases[i].text, cases[i].simple);
		pattern_set_release(&set);
	}
	assert_int_equal(failures, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pattern__match),
		cmocka_unit_test(test_pattern__nul_bytes),
		cmocka_unit_test(test_pattern__set_first_match),
		cmocka_unit_test(test_pattern__simple),
	};

	return cmocka_run_group_tests_name("pattern", tests, NULL, NULL);
}
