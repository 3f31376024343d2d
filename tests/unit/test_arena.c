/*
 * test_arena.c - arena_holds_all(): true between arena_begin() and
 * arena_end() while every jansson value is in the arena, false once one
 * did not fit (a malloc() of its own, which a tree dropped without
 * json_decref() would leak), outside the pair, and when the arena is off
 * (AddressSanitizer builds).
 */
#include "test.h"

#include "arena.h"

static void test_arena__holds_all(void **state)
{
	json_t *small, *big;
	char *text;
	size_t n = (size_t)2 << 20; /* past the arena's budget of 1 MiB */

	(void)state;
	arena_setup();
	assert_false(arena_holds_all());
	if (arena_begin()) {
		/* No arena in this build: every value is a malloc(). */
		assert_false(arena_holds_all());
		return;
	}
	assert_true(arena_holds_all());
	small = json_string("x");
	assert_non_null(small);
	assert_true(arena_holds_all());
	text = malloc(n);
	assert_non_null(text);
	memset(text, 'a', n);
	big = json_stringn(text, n);
	free(text);
	assert_non_null(big);
	assert_false(arena_holds_all());
	json_decref(big);
	json_decref(small);
	arena_end();
	assert_false(arena_holds_all());
	/* A new pair starts with nothing spilled. */
	assert_int_equal(arena_begin(), 0);
	assert_true(arena_holds_all());
	arena_end();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_arena__holds_all),
	};

	return cmocka_run_group_tests_name("arena", tests, NULL, NULL);
}
