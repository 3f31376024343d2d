/*
 * test_patch.c - JSON Pointer escaping, base64, encoding and applying
 * operations.
 */
#include "test.h"

/*
 * The base64 encoder is static in patch.c: the program takes patch.c
 * whole, and the archive's copy is then never linked in.
 */
#include "patch.c"

static void test_patch__pointer_escape(void **state)
{
	struct buf b = BUF_INIT;

	(void)state;
	patch_pointer_append(&b, "spec");
	patch_pointer_append(&b, "nvidia.com/gpu");
	patch_pointer_append(&b, "a~b/c");
	assert_string_equal(buf_str(&b), "/spec/nvidia.com~1gpu/a~0b~1c");
	buf_release(&b);
}

static void test_patch__base64(void **state)
{
	static const char *const cases[][2] = {
		{ "", "" },	      { "f", "Zg==" },	   { "fo", "Zm8=" },
		{ "foo", "Zm9v" },    { "foob", "Zm9vYg==" },
		{ "fooba", "Zm9vYmE=" }, { "foobar", "Zm9vYmFy" },
		{ "\xff\xfe\xfd", "//79" },
	};
	size_t i, len;

	(void)state;
	for (i = 0; i < NELEM(cases); i++) {
		char *b = base64_encode(cases[i][0], strlen(cases[i][0]), &len);

		assert_non_null(b);
		assert_string_equal(b, cases[i][1]);
		assert_int_equal(len, strlen(cases[i][1]));
		free(b);
	}
}

static json_t *decode(const char *b64)
{
	/* a tiny base64 decoder, independent of the encoder under test */
	static const char table[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t n = strlen(b64), i, o = 0;
	unsigned char *out = malloc(n);
	json_t *v;

	for (i = 0; i + 3 < n; i += 4) {
		unsigned v4 = 0, k, pad = 0;

		for (k = 0; k < 4; k++) {
			const char *p = strchr(table, b64[i + k]);

			if (b64[i + k] == '=')
				pad++;
			v4 = v4 << 6 | (p && b64[i + k] != '=' ?
					(unsigned)(p - table) : 0);
		}
		out[o++] = (unsigned char)(v4 >> 16);
		if (pad < 2)
			out[o++] = (unsigned char)(v4 >> 8);
		if (pad < 1)
			out[o++] = (unsigned char)v4;
	}
	v = json_loadb((const char *)out, o, 0, NULL);
	free(out);
	return v;
}

static void test_patch__encode_and_apply(void **state)
{
	struct patch p;
	json_t *doc, *ops, *expect;
	char err[128], *b64, *again;

	(void)state;
	doc = json_loads("{\"spec\":{\"containers\":[{\"name\":\"a\","
			 "\"env\":[{\"name\":\"X\",\"value\":\"1\"}]}]}}",
			 0, NULL);
	assert_int_equal(patch_init(&p), 0);
	assert_int_equal(patch_push(&p, "add",
				    "/spec/containers/0/resources",
				    json_pack("{s:{s:s}}", "limits",
					      "nvidia.com/gpu", "1")),
			 0);
	assert_int_equal(patch_push(&p, "add",
				    "/spec/containers/0/resources/limits/nvidia.com~1gpumem",
				    json_string("5000")),
			 0);
	assert_int_equal(patch_push(&p, "replace", "/spec/containers/0/env/0",
				    json_pack("{s:s,s:s}", "name", "X", "value",
					      "2")),
			 0);
	assert_int_equal(patch_push(&p, "add", "/spec/containers/0/env/-",
				    json_pack("{s:s,s:s}", "name", "Y", "value",
					      "3")),
			 0);
	assert_int_equal(patch_count(&p), 4);

	b64 = patch_encode(&p);
	again = patch_encode(&p);
	assert_string_equal(b64, again);
	ops = decode(b64);
	assert_non_null(ops);
	assert_true(json_equal(ops, p.ops));
	assert_string_equal(json_string_value(json_object_get(
				    json_array_get(ops, 1), "path")),
			    "/spec/containers/0/resources/limits/nvidia.com~1gpumem");

	assert_int_equal(patch_apply(doc, &p, err, sizeof(err)), 0);
	expect = json_loads(
		"{\"spec\":{\"containers\":[{\"name\":\"a\",\"env\":["
		"{\"name\":\"X\",\"value\":\"2\"},{\"name\":\"Y\",\"value\":\"3\"}],"
		"\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\","
		"\"nvidia.com/gpumem\":\"5000\"}}}]}}",
		0, NULL);
	assert_true(json_equal(doc, expect));

	free(b64);
	free(again);
	json_decref(ops);
	json_decref(expect);
	json_decref(doc);
	patch_release(&p);
}

static void test_patch__apply_refuses_missing_parents(void **state)
{
	static const char *const bad[][2] = {
		{ "add", "/spec/missing/x" },
		{ "add", "/spec/containers/1/env" },
		{ "add", "/spec/containers/01/env" },
		{ "replace", "/spec/containers/-" },
		{ "replace", "/spec/containers/5" },
		{ "add", "/spec/bad~2escape" },
		{ "add", "spec" },
	};
	char err[128];
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(bad); i++) {
		json_t *doc = json_loads("{\"spec\":{\"containers\":[{}]}}", 0,
					 NULL);
		struct patch p;

		assert_int_equal(patch_init(&p), 0);
		assert_int_equal(patch_push(&p, bad[i][0], bad[i][1],
					    json_true()),
				 0);
		assert_int_equal(patch_apply(doc, &p, err, sizeof(err)), -1);
		assert_non_null(strstr(err, bad[i][1]));
		patch_release(&p);
		json_decref(doc);
	}
}

/* Array indexes: digits below the size, no leading zero, no sign. */
static void test_patch__array_index(void **state)
{
	static const struct {
		const char *path;
		int rc;
	} cases[] = {
		{ "/a/0", 0 },
		{ "/a/2", 0 },
		{ "/a/3", -1 },
		{ "/a/", -1 },
		{ "/a/00", -1 },
		{ "/a/02", -1 },
		{ "/a/-1", -1 },
		{ "/a/+1", -1 },
		{ "/a/ 1", -1 },
		{ "/a/1 ", -1 },
		{ "/a/1e0", -1 },
		{ "/a/18446744073709551617", -1 },
		{ "/a/99999999999999999999999", -1 },
		{ "/e/0", -1 },
	};
	char err[128];
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(cases); i++) {
		json_t *doc = json_loads("{\"a\":[1,2,3],\"e\":[]}", 0, NULL);
		struct patch p;

		assert_int_equal(patch_init(&p), 0);
		assert_int_equal(patch_push(&p, "replace", cases[i].path,
					    json_true()),
				 0);
		if (patch_apply(doc, &p, err, sizeof(err)) != cases[i].rc)
			fail_msg("case %zu: \"%s\"", i, cases[i].path);
		patch_release(&p);
		json_decref(doc);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_patch__pointer_escape),
		cmocka_unit_test(test_patch__base64),
		cmocka_unit_test(test_patch__encode_and_apply),
		cmocka_unit_test(test_patch__apply_refuses_missing_parents),
		cmocka_unit_test(test_patch__array_index),
	};

	return cmocka_run_group_tests_name("patch", tests, NULL, NULL);
}
