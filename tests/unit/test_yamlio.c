/*
 * test_yamlio.c - YAML in and out: go-yaml v2's scalar rules, keys,
 * anchors and merges, the limits, error places, and the writer's quoting
 * read back by the reader.  (tests/manifests checks the same against
 * go-yaml v2 itself.)
 */
#include "test.h"

#include "buf.h"
#include "yamlio.h"

static int failures;

/* The one document of text, or NULL with *err filled. */
static json_t *load_one(const char *text, struct yamlio_error *err)
{
	json_t *docs = yamlio_load(text, strlen(text), NULL, err), *v;

	if (!docs)
		return NULL;
	v = json_incref(json_array_get(docs, 0));
	json_decref(docs);
	return v;
}

/* A plain value read as go-yaml v2 reads it. */
static void test_yamlio__scalars(void **state)
{
	static const struct {
		const char *yaml, *json;
	} rows[] = {
		{ "y", "true" },         { "Y", "true" },
		{ "yes", "true" },       { "YES", "true" },
		{ "on", "true" },        { "On", "true" },
		{ "n", "false" },        { "no", "false" },
		{ "off", "false" },      { "OFF", "false" },
		{ "yEs", "\"yEs\"" },    { "~", "null" },
		{ "", "null" },          { "Null", "null" },
		{ "nulL", "\"nulL\"" },  { "1", "1" },
		{ "-1", "-1" },          { "+7", "7" },
		{ "017", "15" },         { "0o17", "15" },
		{ "0x1F", "31" },        { "0b101", "5" },
		{ "1_000", "1000" },     { "08", "8.0" },
		{ "1e3", "1000.0" },     { ".5", "0.5" },
		{ "-1.5E-3", "-0.0015" }, { "1.", "1.0" },
		{ "0x", "\"0x\"" },      { "1e", "\"1e\"" },
		{ "1:20", "\"1:20\"" },  { "2001-12-14", "\"2001-12-14\"" },
		{ "1.0.0", "\"1.0.0\"" }, { "_1", "\"_1\"" },
		{ "9223372036854775807", "9223372036854775807" },
		{ "-9223372036854775808", "-9223372036854775808" },
		{ "1e400", "\"1e400\"" },
		{ "'yes'", "\"yes\"" },  { "\"1\"", "\"1\"" },
		{ "!!str 1", "\"1\"" },  { "!!float 1", "1.0" },
		{ "! 1", "\"1\"" },
	};
	struct yamlio_error err;
	char text[128];
	size_t i;

	(void)state;
	failures = 0; /* counted by EXPECT() in this test only */
	for (i = 0; i < NELEM(rows); i++) {
		json_t *doc, *want;

		snprintf(text, sizeof(text), "v: %s\n", rows[i].yaml);
		doc = load_one(text, &err);
		want = json_loads(rows[i].json, JSON_DECODE_ANY, NULL);
		EXPECT(doc && want && json_equal(json_object_get(doc, "v"), want),
		       "%s: want %s (%s)", rows[i].yaml, rows[i].json,
		       doc ? "other value" : err.text);
		json_decref(doc);
		json_decref(want);
	}
	assert_int_equal(failures, 0);
}

/* Keys are named as sigs.k8s.io/yaml names them; collections refused. */
static void test_yamlio__keys(void **state)
{
	struct yamlio_error err;
	json_t *doc;

	(void)state;
	doc = load_one("1: a\nyes: b\n2.5: c\n1e6: d\nx: e\n", &err);
	assert_non_null(doc);
	assert_string_equal(json_string_value(json_object_get(doc, "1")), "a");
	assert_string_equal(json_string_value(json_object_get(doc, "true")),
			    "b");
	assert_string_equal(json_string_value(json_object_get(doc, "2.5")),
			    "c");
	assert_string_equal(json_string_value(json_object_get(doc, "1e+06")),
			    "d");
	json_decref(doc);
	assert_null(load_one("y: 1\ntrue: 2\n", &err));
	assert_string_equal(err.text, "mapping key \"true\" already defined");
	assert_int_equal(err.line, 2);
	assert_int_equal(err.column, 7);
	assert_null(load_one("? [a]\n: b\n", &err));
	assert_null(load_one("~: b\n", &err));
	assert_null(load_one("\"a\\0b\": 1\n", &err));
}

/* Anchors are copies; merges add keys; both stay inside a document. */
static void test_yamlio__anchors_and_merges(void **state)
{
	struct yamlio_error err;
	json_t *doc;

	(void)state;
	doc = load_one("a: &x {k: 1}\nb: *x\nc: {<<: [*x, {j: 2}], m: 3}\n",
		       &err);
	assert_non_null(doc);
	assert_true(json_equal(json_object_get(doc, "a"),
			       json_object_get(doc, "b")));
	assert_ptr_not_equal(json_object_get(doc, "a"),
			     json_object_get(doc, "b"));
	assert_int_equal(json_object_size(json_object_get(doc, "c")), 3);
	json_decref(doc);
	assert_null(load_one("a: &x {k: 1}\nc: {<<: *x, k: 2}\n", &err));
	assert_null(load_one("a: *nope\n", &err));
	assert_string_equal(err.text, "unknown anchor \"nope\" referenced");
	assert_null(yamlio_load("a: &x 1\n---\nb: *x\n", 17, NULL, &err));
	assert_int_equal(err.document, 2);
}

/* Deep nesting and alias bombs are refused; errors have a place. */
static void test_yamlio__limits_and_errors(void **state)
{
	struct yamlio_error err;
	struct buf b = BUF_INIT;
	int i;

	(void)state;
	buf_add(&b, "a: ");
	for (i = 0; i < YAMLIO_DEPTH_MAX + 1; i++)
		buf_add(&b, "[");
	for (i = 0; i < YAMLIO_DEPTH_MAX + 1; i++)
		buf_add(&b, "]");
	assert_null(yamlio_load(b.s, b.len, NULL, &err));
	assert_non_null(strstr(err.text, "nested deeper than"));
	buf_release(&b);

	buf_add(&b, "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
	for (i = 1; i < 10; i++)
		buf_addf(&b, "a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, "
			 "*a%d, *a%d, *a%d, *a%d]\n", i, i, i - 1, i - 1, i - 1,
			 i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1);
	assert_null(yamlio_load(b.s, b.len, NULL, &err));
	assert_non_null(strstr(err.text, "aliases expand to more than"));
	buf_release(&b);

	assert_null(yamlio_load("a: 1\n---\nb: [1\n", 14, NULL, &err));
	assert_int_equal(err.document, 2);
	assert_true(err.line >= 3);
	assert_true(err.column > 0);
	assert_null(load_one("a: .inf\n", &err));
	assert_null(load_one("a: !foo x\n", &err));
}

/* One value per document, null for an empty one, with start lines. */
static void test_yamlio__documents(void **state)
{
	static const char text[] = "# c\n---\na: 1\n---\n---\n# only\n...\n"
				   "--- b\n";
	struct yamlio_error err;
	json_t *lines, *docs = yamlio_load(text, strlen(text), &lines, &err);

	(void)state;
	assert_non_null(docs);
	assert_int_equal(json_array_size(docs), 4);
	assert_true(json_is_object(json_array_get(docs, 0)));
	assert_true(json_is_null(json_array_get(docs, 1)));
	assert_true(json_is_null(json_array_get(docs, 2)));
	assert_string_equal(json_string_value(json_array_get(docs, 3)), "b");
	assert_int_equal(json_integer_value(json_array_get(lines, 0)), 2);
	json_decref(docs);
	json_decref(lines);
	docs = yamlio_load("", 0, NULL, &err);
	assert_int_equal(json_array_size(docs), 0);
	json_decref(docs);
}

/* What the writer writes plain, and that everything reads back. */
static void test_yamlio__writer(void **state)
{
	static const char *const plain[] = {
		"nvidia.com/gpu", "x", "-x", "--flag", "a b", "http://h:80/p",
		"Always", "a=b", "nvcr.io/nvidia/cuda:12.2.0",
	};
	static const char *const quoted[] = {
		"y", "no", "True", "null", "~", "", "1", "1e3", "1:20",
		"2001-12-14", "-1", "---", "- x", "a: b", "a #b", "x ", " x",
		"<<", "a\nb", "*x", "&x", "!x", "%x", "@x", "'x'", ".5",
	};
	struct yamlio_error err;
	struct buf b = BUF_INIT;
	json_t *doc, *again;
	size_t i;

	(void)state;
	failures = 0; /* counted by EXPECT() in this test only */
	for (i = 0; i < NELEM(plain); i++)
		EXPECT(yamlio_plain_safe(plain[i], strlen(plain[i])),
		       "%s should be plain", plain[i]);
	for (i = 0; i < NELEM(quoted); i++)
		EXPECT(!yamlio_plain_safe(quoted[i], strlen(quoted[i])),
		       "%s should be quoted", quoted[i]);
	doc = json_pack("{s:[ssssss],s:{s:i,s:f,s:f,s:b,s:n},s:[],s:{},"
			"s:[[i,[s]],{s:[{s:s}]}]}",
			"s", "y", "caf\xc3\xa9 \xe2\x80\xa8", "\x01\xc2\x85\t",
			"\"\\", "k[\xef\xbf\xbf\xef\xbf\xbe", "1e3",
			"n", "i", (json_int_t)-5, "r", 1000.0, "e", 1e300, "b", 1,
			"z", "ea", "eo", "nest", 1, "x", "m", "k", "v");
	assert_non_null(doc);
	yamlio_dump(&b, doc);
	assert_false(buf_failed(&b));
	again = load_one(b.s, &err);
	assert_non_null(again);
	assert_true(json_equal(doc, again));
	assert_non_null(strstr(b.s, "r: 1000.0\n"));
	assert_non_null(strstr(b.s, "- \"y\"\n"));
	json_decref(again);
	json_decref(doc);
	buf_release(&b);
	assert_int_equal(failures, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_yamlio__scalars),
		cmocka_unit_test(test_yamlio__keys),
		cmocka_unit_test(test_yamlio__anchors_and_merges),
		cmocka_unit_test(test_yamlio__limits_and_errors),
		cmocka_unit_test(test_yamlio__documents),
		cmocka_unit_test(test_yamlio__writer),
	};

	return cmocka_run_group_tests_name("yamlio", tests, NULL, NULL);
}
