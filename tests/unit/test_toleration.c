/*
 * test_toleration.c - validating a toleration of the config file, its
 * copy, and the equality the policy uses before it adds one to a pod.
 */
#include "test.h"

#include "toleration.h"

static const char *const accepted[] = {
	"{\"operator\":\"Exists\"}",
	"{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}",
	"{\"key\":\"k\",\"operator\":\"Equal\",\"value\":\"v\"}",
	"{\"key\":\"k\"}",
	"{\"key\":\"k\",\"operator\":\"\",\"value\":\"\",\"effect\":\"\"}",
	"{\"key\":\"k\",\"effect\":\"PreferNoSchedule\"}",
	"{\"key\":\"k\",\"effect\":\"NoExecute\",\"tolerationSeconds\":-5}",
	"{\"key\":null,\"operator\":\"Exists\",\"value\":null,\"effect\":null,"
	"\"tolerationSeconds\":null}",
	"{\"key\":\"example.com/a-b.c_d\",\"value\":\"A-1.b_2\"}",
};

static void test_toleration__accepted(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(accepted); i++) {
		json_t *v = test_json(accepted[i]);
		char err[512] = "";

		if (toleration_check(v, "t", err, sizeof(err)))
			fail_msg("case %zu: %s\n  got: %s", i, accepted[i],
				 err);
		json_decref(v);
	}
}

struct refused_case {
	const char *text;
	const char *message; /* the whole message, for the path "t[0]" */
};

static const struct refused_case refused[] = {
	{ "[]", "t[0]: expected an object, got an array" },
	{ "\"k\"", "t[0]: expected an object, got a string" },
	{ "{\"keys\":\"x\"}", "unknown key \"t[0].keys\"" },
	{ "{\"key\":\"k\",\"Effect\":\"NoSchedule\"}",
	  "unknown key \"t[0].Effect\"" },
	{ "{\"key\":1}", "t[0].key: expected a string, got a number" },
	{ "{\"key\":\"k\",\"value\":true}",
	  "t[0].value: expected a string, got a boolean" },
	{ "{\"key\":\"k\",\"effect\":\"NoExecute\",\"tolerationSeconds\":\"5\"}",
	  "t[0].tolerationSeconds: expected an integer, got a string" },
	{ "{\"key\":\"k\",\"effect\":\"NoExecute\",\"tolerationSeconds\":1.5}",
	  "t[0].tolerationSeconds: expected an integer, got a number" },
	{ "{\"key\":\"k\",\"operator\":\"In\"}",
	  "t[0].operator: \"In\" is not one of \"\", \"Equal\", \"Exists\"" },
	{ "{\"key\":\"k\",\"effect\":\"NoRun\"}",
	  "t[0].effect: \"NoRun\" is not one of \"\", \"NoSchedule\", "
	  "\"PreferNoSchedule\", \"NoExecute\"" },
	{ "{\"key\":\"bad key\"}",
	  "t[0].key: \"bad key\" is not a qualified name" },
	{ "{\"key\":\"-k\"}", "t[0].key: \"-k\" is not a qualified name" },
	{ "{\"operator\":\"Equal\"}",
	  "t[0].operator: must be \"Exists\" when key is empty" },
	{ "{\"value\":\"v\"}",
	  "t[0].operator: must be \"Exists\" when key is empty" },
	{ "{\"key\":\"k\",\"operator\":\"Exists\",\"value\":\"v\"}",
	  "t[0].value: must be empty when operator is \"Exists\"" },
	{ "{\"key\":\"k\",\"value\":\"a b\"}",
	  "t[0].value: \"a b\" is not a valid label value" },
	{ "{\"key\":\"k\",\"operator\":\"Equal\",\"value\":\"-v\"}",
	  "t[0].value: \"-v\" is not a valid label value" },
	{ "{\"key\":\"k\",\"effect\":\"NoSchedule\",\"tolerationSeconds\":5}",
	  "t[0].effect: must be \"NoExecute\" when tolerationSeconds is set" },
	{ "{\"key\":\"k\",\"tolerationSeconds\":5}",
	  "t[0].effect: must be \"NoExecute\" when tolerationSeconds is set" },
	/* members are checked in document order, the rules after them */
	{ "{\"operator\":\"Equal\",\"effect\":\"NoRun\"}",
	  "t[0].effect: \"NoRun\" is not one of \"\", \"NoSchedule\", "
	  "\"PreferNoSchedule\", \"NoExecute\"" },
	{ "{\"effect\":1,\"key\":1}",
	  "t[0].effect: expected a string, got a number" },
};

static void test_toleration__refused(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(refused); i++) {
		json_t *v = test_json(refused[i].text);
		char err[512] = "";

		if (toleration_check(v, "t[0]", err, sizeof(err)) != -1 ||
		    strcmp(err, refused[i].message))
			fail_msg("case %zu: %s\n  want: %s\n  got:  %s", i,
				 refused[i].text, refused[i].message, err);
		json_decref(v);
	}
}

/* Long paths and values still give a whole message in 512 bytes. */
static void test_toleration__message_bound(void **state)
{
	char path[160], err[512], text[600];
	json_t *v;

	(void)state;
	memset(path, 'p', sizeof(path) - 1);
	path[sizeof(path) - 1] = '\0';
	snprintf(text, sizeof(text),
		 "{\"key\":\"k\",\"effect\":\"%0200d\"}", 0);
	v = test_json(text);
	assert_int_equal(toleration_check(v, path, err, sizeof(err)), -1);
	assert_true(strlen(err) < sizeof(err) - 1);
	assert_non_null(strstr(err, "\"NoExecute\""));
	json_decref(v);
}

static void test_toleration__copy(void **state)
{
	json_t *v, *copy;
	const char *key;
	json_t *item;
	const char *want[] = { "key", "operator", "value", "effect",
			       "tolerationSeconds" };
	size_t i = 0;

	(void)state;
	v = test_json("{\"tolerationSeconds\":60,\"effect\":\"NoExecute\","
		  "\"value\":\"v\",\"operator\":\"Equal\",\"key\":\"k\"}");
	assert_int_equal(toleration_check(v, "t", NULL, 0), 0);
	copy = toleration_copy(v);
	assert_non_null(copy);
	assert_true(json_equal(copy, v));
	json_object_foreach(copy, key, item) {
		assert_true(i < 5);
		assert_string_equal(key, want[i]);
		assert_ptr_equal(item, json_object_get(v, want[i]));
		i++;
	}
	assert_int_equal(i, 5);
	json_decref(copy);
	json_decref(v);

	/* null members are left out */
	v = test_json("{\"key\":\"k\",\"operator\":\"Exists\",\"value\":null,"
		  "\"effect\":null,\"tolerationSeconds\":null}");
	copy = toleration_copy(v);
	assert_non_null(copy);
	assert_int_equal(json_object_size(copy), 2);
	assert_string_equal(json_string_value(json_object_get(copy, "key")),
			    "k");
	assert_string_equal(
		json_string_value(json_object_get(copy, "operator")),
		"Exists");
	json_decref(copy);
	json_decref(v);
}

struct equal_case {
	const char *a;
	const char *b;
	bool equal;
};

static const struct equal_case equal_cases[] = {
	{ "{}", "{}", true },
	{ "{\"key\":\"k\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}",
	  "{\"effect\":\"NoSchedule\",\"operator\":\"Exists\",\"key\":\"k\"}",
	  true },
	/* absent, null, "" and a value that is not a string are all "" */
	{ "{\"key\":\"k\"}", "{\"key\":\"k\",\"value\":\"\"}", true },
	{ "{\"key\":\"k\",\"value\":null}", "{\"key\":\"k\"}", true },
	{ "{\"key\":\"k\",\"effect\":1}", "{\"key\":\"k\"}", true },
	/* tolerationSeconds and other members are not compared */
	{ "{\"key\":\"k\",\"effect\":\"NoExecute\",\"tolerationSeconds\":5}",
	  "{\"key\":\"k\",\"effect\":\"NoExecute\",\"tolerationSeconds\":60}",
	  true },
	{ "{\"key\":\"k\",\"extra\":\"x\"}", "{\"key\":\"k\"}", true },
	/* but each of the four is */
	{ "{\"key\":\"k\"}", "{\"key\":\"K\"}", false },
	{ "{\"key\":\"k\",\"operator\":\"Exists\"}",
	  "{\"key\":\"k\",\"operator\":\"Equal\"}", false },
	/* "" is not Equal by this comparison, though Kubernetes reads it so */
	{ "{\"key\":\"k\",\"operator\":\"\"}",
	  "{\"key\":\"k\",\"operator\":\"Equal\"}", false },
	{ "{\"key\":\"k\",\"value\":\"a\"}", "{\"key\":\"k\",\"value\":\"b\"}",
	  false },
	{ "{\"key\":\"k\",\"effect\":\"NoSchedule\"}",
	  "{\"key\":\"k\",\"effect\":\"NoExecute\"}", false },
	{ "{\"key\":\"k\",\"effect\":\"NoSchedule\"}", "{\"key\":\"k\"}",
	  false },
};

static void test_toleration__equal(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(equal_cases); i++) {
		json_t *a = test_json(equal_cases[i].a);
		json_t *b = test_json(equal_cases[i].b);

		if (toleration_equal(a, b) != equal_cases[i].equal ||
		    toleration_equal(b, a) != equal_cases[i].equal)
			fail_msg("case %zu: %s %s", i, equal_cases[i].a,
				 equal_cases[i].b);
		json_decref(a);
		json_decref(b);
	}
}

static void test_toleration__listed(void **state)
{
	json_t *list = test_json("[{\"key\":\"a\"},{\"key\":\"nvidia.com/gpu\","
			     "\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}]");
	json_t *in = test_json("{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\","
			   "\"effect\":\"NoSchedule\",\"tolerationSeconds\":1}");
	json_t *out = test_json("{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\"}");
	json_t *empty = test_json("[]");

	(void)state;
	assert_true(toleration_listed(list, in));
	assert_false(toleration_listed(list, out));
	assert_false(toleration_listed(empty, in));
	assert_false(toleration_listed(NULL, in));
	json_decref(list);
	json_decref(in);
	json_decref(out);
	json_decref(empty);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_toleration__accepted),
		cmocka_unit_test(test_toleration__refused),
		cmocka_unit_test(test_toleration__message_bound),
		cmocka_unit_test(test_toleration__copy),
		cmocka_unit_test(test_toleration__equal),
		cmocka_unit_test(test_toleration__listed),
	};

	return cmocka_run_group_tests_name("toleration", tests, NULL, NULL);
}
