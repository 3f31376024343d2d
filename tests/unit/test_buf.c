/*
 * test_buf.c - the growable string: appends, truncation, hand-over, and
 * what a failed buffer does.
 */
#include "test.h"

#include "buf.h"

static void test_buf__add_truncate_detach(void **state)
{
	struct buf b = BUF_INIT;
	char *s;
	size_t len, i;

	(void)state;
	assert_string_equal(buf_str(&b), "");
	buf_add(&b, "a");
	buf_addf(&b, "%d-%s", 42, "x");
	assert_string_equal(buf_str(&b), "a42-x");
	for (i = 0; i < 1000; i++)
		buf_addf(&b, "%s", "0123456789");
	assert_int_equal(b.len, 5 + 10000);
	buf_truncate(&b, 3);
	assert_string_equal(buf_str(&b), "a42");
	assert_false(buf_failed(&b));
	s = buf_detach(&b, &len);
	assert_string_equal(s, "a42");
	assert_int_equal(len, 3);
	assert_null(b.s);
	free(s);
	/* detaching an empty buffer gives "" */
	s = buf_detach(&b, NULL);
	assert_string_equal(s, "");
	free(s);
	buf_release(&b);
}

/* NUL bytes are contents like any other; buf_str() stops at the first. */
static void test_buf__holds_nul(void **state)
{
	struct buf b;

	(void)state;
	buf_init(&b);
	buf_addn(&b, "a\0b", 3);
	buf_addf(&b, "%c", 0);
	assert_int_equal(b.len, 4);
	assert_memory_equal(b.s, "a\0b\0", 5);
	assert_string_equal(buf_str(&b), "a");
	/* a longer length than the contents changes nothing */
	buf_truncate(&b, 10);
	assert_int_equal(b.len, 4);
	buf_release(&b);
	assert_null(b.s);
	assert_int_equal(b.len, 0);
}

/*
 * After a failure the contents stay as they were and every append does
 * nothing; buf_detach() gives NULL and leaves the buffer usable.
 */
static void test_buf__failure_sticks(void **state)
{
	struct buf b = BUF_INIT;
	size_t len = 99;
	char *s;

	(void)state;
	buf_add(&b, "kept");
	/* a length that cannot be added to fails without an allocation */
	buf_addn(&b, "x", SIZE_MAX);
	assert_true(buf_failed(&b));
	buf_add(&b, "lost");
	buf_addf(&b, "%s", "lost");
	assert_int_equal(b.len, 4);
	assert_string_equal(buf_str(&b), "kept");
	assert_null(buf_detach(&b, &len));
	assert_int_equal(len, 0);
	assert_false(buf_failed(&b));
	assert_null(b.s);

	buf_add(&b, "again");
	buf_fail(&b);
	assert_true(buf_failed(&b));
	buf_truncate(&b, 2);
	assert_true(buf_failed(&b));
	assert_string_equal(buf_str(&b), "ag");
	buf_release(&b);
	assert_false(buf_failed(&b));
	buf_add(&b, "new");
	s = buf_detach(&b, NULL);
	assert_string_equal(s, "new");
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_buf__add_truncate_detach),
		cmocka_unit_test(test_buf__holds_nul),
		cmocka_unit_test(test_buf__failure_sticks),
	};

	return cmocka_run_group_tests_name("buf", tests, NULL, NULL);
}
