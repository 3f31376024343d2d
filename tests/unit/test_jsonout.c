/*
 * test_jsonout.c - JSON text out: the same bytes as jansson, type names,
 * the shortest real, and jansson's memory freed through jansson.
 */
#include "test.h"

#include "arena.h"
#include "jsonout.h"

/* jsonout_dump() writes the bytes json_dumps() writes. */
static void test_jsonout__dump_as_jansson(void **state)
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
	for (i = 0; i < NELEM(docs); i++) {
		json_t *v = json_loads(docs[i], JSON_ALLOW_NUL, NULL);
		struct buf b = BUF_INIT;
		char *want;

		assert_non_null(v);
		want = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
		jsonout_dump(&b, v);
		assert_false(buf_failed(&b));
		assert_int_equal(b.len, strlen(want));
		assert_memory_equal(b.s, want, b.len);
		free(want);
		buf_release(&b);
		json_decref(v);
	}
}

static void test_jsonout__type_name(void **state)
{
	static const char *const cases[][2] = {
		{ "{}", "an object" },   { "[]", "an array" },
		{ "\"\"", "a string" },  { "0", "a number" },
		{ "-1.5", "a number" },  { "true", "a boolean" },
		{ "false", "a boolean" }, { "null", "null" },
	};
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(cases); i++) {
		json_t *v = json_loads(cases[i][0], JSON_DECODE_ANY, NULL);

		assert_non_null(v);
		assert_string_equal(jsonout_type_name(v), cases[i][1]);
		json_decref(v);
	}
}

/* Quoting NUL and the bytes around the escapes, with a given length. */
static void test_jsonout__quoten(void **state)
{
	struct buf b = BUF_INIT;

	(void)state;
	jsonout_quoten(&b, "a\0\x1f \"\\/\x7f\xc3\xa9", 10);
	assert_false(buf_failed(&b));
	assert_string_equal(buf_str(&b),
			    "\"a\\u0000\\u001F \\\"\\\\/\x7f\xc3\xa9\"");
	buf_truncate(&b, 0);
	jsonout_quoten(&b, "", 0);
	assert_string_equal(buf_str(&b), "\"\"");
	buf_release(&b);
}

struct real_case {
	double d;
	int min;
	int want;
};

static const struct real_case real_cases[] = {
	{ 0.0, 1, 1 },
	{ -0.0, 1, 1 },
	{ 0.1, 1, 1 },
	{ 1.5, 1, 2 },
	{ -0.25, 1, 2 },
	{ 1e300, 1, 1 },
	{ 123456789.0, 1, 9 },
	{ 0.30000000000000004, 1, 17 }, /* 0.1 + 0.2 */
	{ 1.0 / 3.0, 1, 16 },
	{ 2.0 / 3.0, 1, 16 },
	{ 5e-324, 1, 1 },                  /* the smallest subnormal */
	{ 2.2250738585072014e-308, 1, 17 }, /* the smallest normal */
	{ 1.7976931348623157e308, 1, 17 },  /* the largest */
	{ 9007199254740993.0, 1, 16 },      /* 2^53 + 1 rounds to 2^53 */
	/* never fewer than min */
	{ 0.1, 3, 3 },
	{ 0.1, 17, 17 },
	{ 1.5, 2, 2 },
	{ 1.0 / 3.0, 16, 16 },
	{ 1.0 / 3.0, 17, 17 },
};

static void test_jsonout__real_precision(void **state)
{
	char text[40];
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(real_cases); i++) {
		const struct real_case *c = &real_cases[i];
		int got = jsonout_real_precision(c->d, c->min);

		if (got != c->want)
			fail_msg("case %zu (%.17g from %d): got %d, want %d", i,
				 c->d, c->min, got, c->want);
		/* and the text at that precision reads back the same */
		snprintf(text, sizeof(text), "%.*g", got, c->d);
		assert_true(strtod(text, NULL) == c->d);
	}
}

/*
 * With the arena on, json_dumps() text comes from the arena, which free()
 * must never see: jsonout_dump() gives it back through jansson, and so
 * does jsonout_free().  (Under ASan the arena is off; this then runs on
 * malloc().)
 */
static void test_jsonout__frees_through_jansson(void **state)
{
	struct buf b = BUF_INIT;
	json_t *v;
	char *text;

	(void)state;
	arena_setup();
	/* -1 when the arena is off: the values are then malloc()'d */
	(void)arena_begin();
	v = json_pack("[f,f,{s:f}]", 0.1, 1e300, "x", -2.5);
	assert_non_null(v);
	jsonout_dump(&b, v);
	assert_false(buf_failed(&b));
	text = json_dumps(v, JSON_COMPACT);
	assert_non_null(text);
	assert_string_equal(buf_str(&b), text);
	jsonout_free(text);
	jsonout_free(NULL);
	json_decref(v);
	arena_end();
	buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_jsonout__dump_as_jansson),
		cmocka_unit_test(test_jsonout__type_name),
		cmocka_unit_test(test_jsonout__quoten),
		cmocka_unit_test(test_jsonout__real_precision),
		/* last: it installs the arena's allocator in jansson */
		cmocka_unit_test(test_jsonout__frees_through_jansson),
	};

	return cmocka_run_group_tests_name("jsonout", tests, NULL, NULL);
}
