/*
 * test_pick.c - the selective JSON decoder: the same verdict and values as
 * jansson, the schema's pruning, depth limited only where values are built
 * and checked without recursion elsewhere, and the same answers as a full
 * decode on every recorded review.
 */
#include <dirent.h>
#include <unistd.h>

#define TEST_STACK
#include "test.h"

#include "arena.h"
#include "buf.h"
#include "config.h"
#include "pick.h"
#include "review.h"

#define FLAGS (JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL)

struct doc {
	const char *text;
	size_t len; /* 0: strlen(text) */
	bool valid;
};

#define DOC(t, v) { (t), sizeof(t) - 1, (v) }

static const struct doc docs[] = {
	DOC("{}", true),
	DOC("[]", true),
	DOC(" \t\r\n{ \"a\" : [ ] } \n", true),
	DOC("{\"a\":1,\"b\":{\"c\":[true,false,null]}}", true),
	DOC("[0,-0,1,-1,0.5,-1.5e+3,1E-2,0e0,10e1]", true),
	DOC("[9223372036854775807,-9223372036854775808]", true),
	DOC("[1e308,1e-400,-1e-400]", true),
	DOC("[\"\\u00e9\\ud83d\\ude00\\\"\\\\\\/\\b\\f\\n\\r\\t\"]", true),
	DOC("[\"\\uFFFF\\uabcd\"]", true),
	DOC("{\"a\":\"x\\u0000y\"}", true),
	DOC("{\"\\u0061\":1,\"b\":2}", true),
	DOC("[\"\xc3\xa9\xf0\x9f\x98\x80\xef\xbf\xbf\x7f\"]", true),
	DOC("{\"\":\"\"}", true),
	DOC("", false),
	DOC("   ", false),
	DOC("1", false),
	DOC("\"a\"", false),
	DOC("null", false),
	DOC("\xef\xbb\xbf{}", false),
	DOC("{\"a\":1}x", false),
	DOC("{\"a\":1}{}", false),
	DOC("{\"a\":1,}", false),
	DOC("[1,]", false),
	DOC("[,1]", false),
	DOC("{\"a\"}", false),
	DOC("{\"a\":}", false),
	DOC("{\"a\" 1}", false),
	DOC("{a:1}", false),
	DOC("{'a':1}", false),
	DOC("[1 2]", false),
	DOC("[01]", false),
	DOC("[-]", false),
	DOC("[-a]", false),
	DOC("[1.]", false),
	DOC("[.5]", false),
	DOC("[1e]", false),
	DOC("[1e+]", false),
	DOC("[+1]", false),
	DOC("[0x10]", false),
	DOC("[9223372036854775808]", false),
	DOC("[-9223372036854775809]", false),
	DOC("[12345678901234567890]", false),
	DOC("[1e309]", false),
	DOC("[-1e309]", false),
	DOC("[tru]", false),
	DOC("[truex]", false),
	DOC("[True]", false),
	DOC("[nan]", false),
	DOC("[\"\\x\"]", false),
	DOC("[\"\\u12\"]", false),
	DOC("[\"\\u12g4\"]", false),
	DOC("[\"\\ud800\"]", false),
	DOC("[\"\\udc00\"]", false),
	DOC("[\"\\ud800\\u0041\"]", false),
	DOC("[\"\\ud800\\n\"]", false),
	DOC("[\"a\nb\"]", false),
	DOC("[\"a\x01\"]", false),
	DOC("[\"a\0b\"]", false),
	DOC("{\"a\\u0000\":1}", false),
	DOC("{\"a\":1,\"a\":2}", false),
	DOC("{\"a\":1,\"\\u0061\":2}", false),
	DOC("{\"x\":{\"a\":1,\"b\":{\"a\":1},\"a\":2}}", false),
	DOC("[\"\xc0\xaf\"]", false),
	DOC("[\"\xe0\x80\xaf\"]", false),
	DOC("[\"\xed\xa0\x80\"]", false),
	DOC("[\"\xf4\x90\x80\x80\"]", false),
	DOC("[\"\xf5\x80\x80\x80\"]", false),
	DOC("[\"\xe2\x82\"]", false),
	DOC("[\"\x80\"]", false),
	DOC("[\"\xff\"]", false),
	DOC("[\xc3\xa9]", false),
	DOC("[\"a\"", false),
	DOC("{\"a\":1", false),
	DOC("{\"a", false),
	DOC("[\"a\\", false),
	DOC("{} \0", false),
	/* jansson takes these four: it drops a NUL after a number or word */
	DOC("[1\0]", false),
	DOC("[true\0,1]", false),
	DOC("{\"a\":-0.5e3\0}", false),
	DOC("[null\0]", false),
};

/* jansson's quirk, pinned: were it fixed, the exception could go. */
static void test_pick__raw_nul_refused_unlike_jansson(void **state)
{
	static const char text[] = "[1\0]";
	struct pick_error perr;
	json_t *full = json_loadb(text, sizeof(text) - 1, FLAGS, NULL);

	(void)state;
	assert_non_null(full);
	json_decref(full);
	assert_null(pick_loadb(text, sizeof(text) - 1, &pick_all, &perr));
	assert_int_equal(perr.status, PICK_INVALID);
}

/*
 * Decodes text both ways and holds pick_loadb() to jansson's verdict, but
 * for a raw NUL byte, which pick_loadb() always refuses (pick.h).  With
 * pick_all everything is built, so that a document too deep for jansson
 * is too deep for it too (PICK_DEPTH).
 */
static void check_doc(const char *text, size_t len, bool valid)
{
	struct pick_error perr;
	json_error_t jerr;
	json_t *full = json_loadb(text, len, FLAGS, &jerr);
	json_t *picked = pick_loadb(text, len, &pick_all, &perr);

	if (memchr(text, '\0', len)) {
		assert_false(valid);
		assert_null(picked);
		assert_int_equal(perr.status, PICK_INVALID);
		json_decref(full);
		return;
	}

	if (!!full != valid || !!picked != valid)
		fail_msg("%.60s: expected %s, jansson %s, pick %s (%s)", text,
			 valid ? "valid" : "invalid",
			 full ? "valid" : "invalid",
			 picked ? "valid" : "invalid", perr.text);
	if (valid)
		assert_true(json_equal(full, picked));
	else
		assert_int_equal(perr.status,
				 json_error_code(&jerr) ==
				 json_error_stack_overflow ? PICK_DEPTH :
				 PICK_INVALID);
	json_decref(full);
	json_decref(picked);
}

static void test_pick__same_verdict_as_jansson(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(docs); i++)
		check_doc(docs[i].text, docs[i].len, docs[i].valid);
}

/* jansson counts every value, scalars included, up to 2048. */
static void test_pick__depth_as_jansson(void **state)
{
	static const struct {
		size_t n;
		const char *inner;
		bool valid;
	} cases[] = {
		{ JSON_PARSER_MAX_DEPTH, "", true },
		{ JSON_PARSER_MAX_DEPTH + 1, "", false },
		{ JSON_PARSER_MAX_DEPTH - 1, "1", true },
		{ JSON_PARSER_MAX_DEPTH, "1", false },
		{ JSON_PARSER_MAX_DEPTH - 1, "{}", true },
		{ JSON_PARSER_MAX_DEPTH - 1, "{\"a\":1}", false },
		{ 100000, "", false },
	};
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(cases); i++) {
		char *s = test_nest(cases[i].n, "[", cases[i].inner, "]");

		check_doc(s, strlen(s), cases[i].valid);
		free(s);
	}
}

/* An object of n keys "k0".."k<n-1>", then extra (a member or ""). */
static char *wide_object(size_t n, const char *extra)
{
	struct buf b = BUF_INIT;
	size_t i;

	buf_add(&b, "{");
	for (i = 0; i < n; i++)
		buf_addf(&b, "%s\"k%zu\":%zu", i ? "," : "", i, i);
	buf_add(&b, extra);
	buf_add(&b, "}");
	assert_false(buf_failed(&b));
	return buf_detach(&b, NULL);
}

/* Duplicates are found in small and large objects, escaped or not. */
static void test_pick__duplicates_in_large_objects(void **state)
{
	static const struct {
		size_t n;
		const char *extra;
		bool valid;
	} cases[] = {
		{ 23, "", true },
		{ 23, ",\"k0\":1", false },
		{ 24, ",\"k23\":1", false },
		{ 25, ",\"k24\":1", false },
		{ 1000, "", true },
		{ 1000, ",\"k999\":1", false },
		{ 1000, ",\"\\u006b0\":1", false },
		{ 1000, ",\"k1000\":1", true },
		{ 5000, ",\"k4321\":[]", false },
	};
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(cases); i++) {
		char *s = wide_object(cases[i].n, cases[i].extra);

		check_doc(s, strlen(s), cases[i].valid);
		free(s);
	}
}

/*
 * Many escaped keys: their decoded text outgrows the decoder's first
 * buffer while the object is open, and duplicates are still found.
 */
static void test_pick__many_escaped_keys(void **state)
{
	size_t n, i;

	(void)state;
	for (n = 10; n <= 2000; n *= 10) {
		struct buf b = BUF_INIT;
		char *s;

		buf_add(&b, "{\"o\":{");
		for (i = 0; i < n; i++)
			buf_addf(&b, "%s\"\\u006bey-%zu\":{\"\\u0076\":%zu}",
				 i ? "," : "", i, i);
		buf_add(&b, "}}");
		assert_false(buf_failed(&b));
		check_doc(b.s, b.len, true);
		buf_truncate(&b, b.len - 2);
		buf_addf(&b, ",\"key-%zu\":1}}", n / 2);
		s = buf_detach(&b, NULL);
		check_doc(s, strlen(s), false);
		free(s);
	}
}

/* Decodes text under rule and compares with the JSON text want. */
static void check_pruned(const char *text, const struct pick_rule *rule,
			 const char *want)
{
	struct pick_error perr;
	json_t *got = pick_loadb(text, strlen(text), rule, &perr);
	json_t *expected = test_json(want);

	assert_non_null(got);
	if (!json_equal(got, expected)) {
		char *dump = json_dumps(got, JSON_COMPACT);

		fail_msg("%s: got %s, want %s", text, dump, want);
	}
	json_decref(got);
	json_decref(expected);
}

static const struct pick_rule outer_rule = {
	PICK_OBJECT, PICK_FIELDS(
		PICK_FIELD("a", &pick_all),
		PICK_FIELD("b", PICK_OBJ(PICK_FIELD("c", &pick_all))),
		PICK_FIELD("l", PICK_ARR(PICK_OBJ(PICK_FIELD("c", &pick_all)))),
		PICK_FIELD("s", &pick_stub)),
	NULL, NULL
};
static const struct pick_rule stubs_rule = {
	PICK_OBJECT, PICK_FIELDS(PICK_FIELD("c", &pick_all)), &pick_stub, NULL
};
/* "l": an array of stubs */
static const struct pick_rule stubs_rule_deep = {
	PICK_OBJECT, PICK_FIELDS(PICK_FIELD("l", PICK_ARR(&pick_stub))), NULL,
	NULL
};
/* "t": kept whole */
static const struct pick_rule outer_rule_a = {
	PICK_OBJECT, PICK_FIELDS(PICK_FIELD("t", &pick_all)), NULL, NULL
};

static void test_pick__schema_keeps_what_it_names(void **state)
{
	(void)state;
	check_pruned("{\"a\":[1,{\"x\":2}],\"b\":{\"c\":1,\"d\":2},\"e\":3}",
		     &outer_rule, "{\"a\":[1,{\"x\":2}],\"b\":{\"c\":1}}");
	/* array elements keep their places */
	check_pruned("{\"l\":[{\"c\":1,\"d\":1},{\"d\":2},7,[3]]}", &outer_rule,
		     "{\"l\":[{\"c\":1},{},7,[]]}");
	/* a stub keeps the type, not the content */
	check_pruned("{\"c\":\"\\u00e9\",\"o\":{\"y\":1},\"a\":[1],\"s\":\"abc\","
		     "\"n\":5,\"r\":1.5,\"t\":true,\"f\":false,\"u\":null}",
		     &stubs_rule,
		     "{\"c\":\"\\u00e9\",\"o\":{},\"a\":[],\"s\":\"\",\"n\":0,"
		     "\"r\":0.0,\"t\":true,\"f\":false,\"u\":null}");
	check_pruned("{\"s\":{\"x\":[1,2]}}", &outer_rule, "{\"s\":{}}");
}

/* A value of another type than its rule expects keeps its type. */
static void test_pick__wrong_types_keep_their_type(void **state)
{
	(void)state;
	check_pruned("{\"b\":[1,2],\"l\":{\"c\":1}}", &outer_rule,
		     "{\"b\":[],\"l\":{}}");
	check_pruned("{\"b\":\"text\",\"l\":12}", &outer_rule,
		     "{\"b\":\"text\",\"l\":12}");
	check_pruned("{\"b\":null,\"l\":false}", &outer_rule,
		     "{\"b\":null,\"l\":false}");
	check_pruned("[{\"c\":1}]", &outer_rule, "[]");
}

/*
 * PICK_TEXT keeps a value's text as it stands, whatever its type; the text
 * decodes to what a full decode gives, and a bad value is still refused.
 */
static const struct pick_rule text_rule = {
	PICK_OBJECT, PICK_FIELDS(PICK_FIELD("t", &pick_text)), NULL, NULL
};

static void test_pick__text_keeps_the_value_text(void **state)
{
	static const char *const texts[] = {
		"{\"t\":{\"username\":\"a\\u00e9\",\"groups\":[\"g\", \"h\"]},\"x\":1}",
		"{\"x\":[1],\"t\" : \"s\\n\" }",
		"{\"t\":-1.5e3}",
		"{\"t\":null}",
		"{\"t\":[[],{}]}",
	};
	static const char dup[] = "{\"t\":{\"a\":1,\"a\":2}}";
	struct pick_error perr;
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(texts); i++) {
		json_t *v = pick_loadb(texts[i], strlen(texts[i]), &text_rule,
				       &perr);
		json_t *whole = test_json(texts[i]);
		json_t *t = json_object_get(v, "t"), *back;

		assert_non_null(v);
		assert_true(json_is_string(t));
		back = json_loadb(json_string_value(t), json_string_length(t),
				  JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL);
		assert_non_null(back);
		assert_true(json_equal(back, json_object_get(whole, "t")));
		json_decref(back);
		json_decref(whole);
		json_decref(v);
	}
	assert_null(pick_loadb(dup, strlen(dup), &text_rule, &perr));
	assert_int_equal(perr.status, PICK_INVALID);
}

/* What is not kept is checked all the same. */
static void test_pick__skipped_parts_are_checked(void **state)
{
	static const char *const bad[] = {
		"{\"b\":{\"c\":1},\"skip\":{\"x\":1,\"x\":2}}",
		"{\"skip\":[1,2,tru]}",
		"{\"skip\":\"\\ud800\"}",
		"{\"skip\":[9223372036854775808]}",
		"{\"skip\":1e999}",
		"{\"skip\":{\"a\\u0000\":1}}",
	};
	struct pick_error perr;
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(bad); i++) {
		json_t *v = pick_loadb(bad[i], strlen(bad[i]), &outer_rule,
				       &perr);

		if (v)
			fail_msg("accepted %s", bad[i]);
		assert_int_equal(perr.status, PICK_INVALID);
		assert_true(perr.text[0] != '\0');
	}
}

static void test_pick__error_position(void **state)
{
	static const char text[] = "{\"a\": 1,\n  \"b\": tru}";
	struct pick_error perr;

	(void)state;
	assert_null(pick_loadb(text, sizeof(text) - 1, &pick_all, &perr));
	assert_int_equal(perr.status, PICK_INVALID);
	assert_int_equal(perr.line, 2);
	assert_int_equal(perr.column, 8);
	assert_string_equal(perr.text, "invalid token");
}

/* before, then value, then after, in a new string. */
static char *around(const char *before, const char *value, const char *after)
{
	struct buf b = BUF_INIT;

	buf_add(&b, before);
	buf_add(&b, value);
	buf_add(&b, after);
	assert_false(buf_failed(&b));
	return buf_detach(&b, NULL);
}

/*
 * Decodes before + value + after under rule: want is the JSON text of the
 * value expected, or NULL for a refusal with status (and, for PICK_DEPTH,
 * a path that starts with path).
 */
static void check_deep(const char *before, const char *value,
		       const char *after, const struct pick_rule *rule,
		       const char *want, enum pick_status status,
		       const char *path)
{
	char *text = around(before, value, after);
	struct pick_error perr;
	json_t *got = pick_loadb(text, strlen(text), rule, &perr);

	if (want) {
		json_t *expected = test_json(want);

		if (!got)
			fail_msg("%.40s...: refused: %s (line %d, column %d)",
				 text, perr.text, perr.line, perr.column);
		assert_true(json_equal(got, expected));
		json_decref(expected);
	} else {
		if (got)
			fail_msg("%.40s...: accepted", text);
		assert_int_equal(perr.status, status);
		if (path && strncmp(perr.path, path, strlen(path)))
			fail_msg("%.40s...: path %s, want %s...", text,
				 perr.path, path);
		if (status != PICK_DEPTH)
			assert_string_equal(perr.path, "");
	}
	json_decref(got);
	free(text);
}

/*
 * What is only checked (a member the schema drops, a stub's content) may
 * nest to any depth and is still checked; what is built may not nest
 * deeper than jansson reads, and the refusal says where.
 */
static void test_pick__depth_only_where_built(void **state)
{
	char *arrays = test_nest(2100, "[", "", "]");
	char *objects = test_nest(2100, "{\"f:a\":", "{}", "}");
	char *mixed = test_nest(1050, "[{\"k\":", "1", "}]");
	char *million = test_nest(1000000, "[", "", "]");
	char *bad = test_nest(3000, "[", "1 2", "]");
	char *dup_deep = test_nest(3000, "[", "{\"k\":1,\"k\":2}", "]");
	char *dup_shallow = test_nest(100, "[", "{\"k\":1,\"k\":2}", "]");
	char *nul_key = test_nest(3000, "[", "{\"a\\u0000\":1}", "]");
	char *utf8 = test_nest(3000, "[", "\"\xc3\x28\"", "]");
	char *large = wide_object(30, ",\"k7\":7");
	/* {"skip": n arrays around an object}: the object is n + 2 deep */
	char *dup_at_max = test_nest(2046, "[", "{\"k\":1,\"k\":2}", "]");
	char *dup_below = test_nest(2047, "[", "{\"k\":1,\"k\":2}", "]");
	char *large_at_max = test_nest(2046, "[", large, "]");
	char *large_below = test_nest(2047, "[", large, "]");

	(void)state;
	/* dropped members, at any depth: not built, checked */
	check_deep("{\"skip\":", arrays, "}", &outer_rule, "{}", PICK_OK,
		   NULL);
	check_deep("{\"skip\":", objects, ",\"a\":1}", &outer_rule,
		   "{\"a\":1}", PICK_OK, NULL);
	check_deep("{\"b\":{\"d\":", mixed, ",\"c\":2}}", &outer_rule,
		   "{\"b\":{\"c\":2}}", PICK_OK, NULL);
	check_deep("{\"skip\":", million, "}", &outer_rule, "{}", PICK_OK,
		   NULL);
	/* stubs: the empty value of the type */
	check_deep("{\"s\":", arrays, "}", &outer_rule, "{\"s\":[]}", PICK_OK,
		   NULL);
	check_deep("{\"l\":[{\"x\":", objects, "},", &outer_rule, NULL,
		   PICK_INVALID, NULL);
	check_deep("{\"l\":[{\"x\":", objects, "},[[1]]]}", &outer_rule,
		   "{\"l\":[{},[]]}", PICK_OK, NULL);
	check_deep("{\"l\":[", objects, "]}", &stubs_rule_deep,
		   "{\"l\":[{}]}", PICK_OK, NULL);
	/* checked all the same, deep down */
	check_deep("{\"skip\":", bad, "}", &outer_rule, NULL, PICK_INVALID,
		   NULL);
	check_deep("{\"skip\":", nul_key, "}", &outer_rule, NULL,
		   PICK_INVALID, NULL);
	check_deep("{\"skip\":", utf8, "}", &outer_rule, NULL, PICK_INVALID,
		   NULL);
	check_deep("{\"skip\":", dup_shallow, "}", &outer_rule, NULL,
		   PICK_INVALID, NULL);
	/* keys are compared up to the depth jansson reads, not below */
	check_deep("{\"skip\":", dup_deep, "}", &outer_rule, "{}", PICK_OK,
		   NULL);
	check_deep("{\"skip\":", dup_at_max, "}", &outer_rule, NULL,
		   PICK_INVALID, NULL);
	check_deep("{\"skip\":", dup_below, "}", &outer_rule, "{}", PICK_OK,
		   NULL);
	check_deep("{\"skip\":", large_at_max, "}", &outer_rule, NULL,
		   PICK_INVALID, NULL);
	check_deep("{\"skip\":", large_below, "}", &outer_rule, "{}",
		   PICK_OK, NULL);
	/* and the keys of the objects around are compared after it */
	check_deep("{\"skip\":", large_below, ",\"a\":1,\"skip\":2}",
		   &outer_rule, NULL, PICK_INVALID, NULL);
	check_deep("{\"b\":{\"x\":", dup_below, ",\"c\":1,\"x\":2}}",
		   &outer_rule, NULL, PICK_INVALID, NULL);
	/* built: refused where jansson would be, with the path */
	check_deep("{\"a\":", arrays, "}", &outer_rule, NULL, PICK_DEPTH,
		   "a[0][0][0]");
	check_deep("{\"b\":{\"c\":", objects, "}}", &outer_rule, NULL,
		   PICK_DEPTH, "b.c.f:a.f:a.f:a");
	check_deep("{\"l\":[{},{\"c\":{\"k\\u00e9\\n\":", mixed, "}}]}",
		   &outer_rule, NULL, PICK_DEPTH,
		   "l[1].c.k\xc3\xa9[0].k[0].k[0].k");
	check_deep("{\"t\":", arrays, "}", &text_rule, NULL, PICK_DEPTH,
		   "t");
	/* a refusal of a built value reads no further */
	check_deep("{\"a\":", arrays, "} x", &outer_rule, NULL, PICK_DEPTH,
		   "a[");
	free(arrays);
	free(objects);
	free(mixed);
	free(million);
	free(bad);
	free(dup_deep);
	free(dup_shallow);
	free(nul_key);
	free(utf8);
	free(large);
	free(dup_at_max);
	free(dup_below);
	free(large_at_max);
	free(large_below);
}

/* An object of members "n" (this rule again) and "s" (a stub). */
static const struct pick_rule chain_rule = {
	PICK_OBJECT, PICK_FIELDS(PICK_FIELD("n", &chain_rule),
				 PICK_FIELD("s", &pick_stub)), NULL, NULL
};
static const struct pick_rule chain_top_rule = {
	PICK_OBJECT, PICK_FIELDS(PICK_FIELD("t", &chain_rule)), NULL, NULL
};

/* Decodes {"t": inner} under rule: accepted, or refused for its depth. */
static void check_depth_at(const char *inner, const struct pick_rule *rule,
			   bool valid)
{
	char *text = around("{\"t\":", inner, "}");
	struct pick_error perr;
	json_t *v = pick_loadb(text, strlen(text), rule, &perr);

	if (!!v != valid)
		fail_msg("%.60s: %s", text, v ? "accepted" : perr.text);
	if (!v)
		assert_int_equal(perr.status, PICK_DEPTH);
	json_decref(v);
	free(text);
}

/*
 * The limit on what is built counts as jansson counts, every value, from
 * the top: a value kept whole or as text, and a stub, not its content.
 */
static void test_pick__built_depth_counts_as_jansson(void **state)
{
	const size_t max = JSON_PARSER_MAX_DEPTH;
	char *deep = test_nest(1000, "[", "", "]");
	char *stub_in = around("{\"s\":", deep, "}");
	size_t n;

	(void)state;
	/* {"t": n arrays}: the innermost is n + 1 deep */
	for (n = max - 1; n <= max; n++) {
		char *arrays = test_nest(n, "[", "", "]");

		check_depth_at(arrays, &text_rule, n + 1 <= max);
		check_depth_at(arrays, &outer_rule_a, n + 1 <= max);
		free(arrays);
	}
	/* {"t": n of {"n": ...}, {"s": [1000 arrays]}}: the stub is n + 3
	 * deep */
	for (n = max - 4; n <= max - 2; n++) {
		char *chain = test_nest(n, "{\"n\":", stub_in, "}");

		check_depth_at(chain, &chain_top_rule, n + 3 <= max);
		free(chain);
	}
	free(stub_in);
	free(deep);
}

struct stack_job {
	const char *text;
	size_t len;
	const struct pick_rule *rule;
	bool ok;
};

static void *stack_job_run(void *arg)
{
	struct stack_job *job = arg;
	struct pick_error perr;
	json_t *v = pick_loadb(job->text, job->len, job->rule, &perr);

	job->ok = v != NULL;
	json_decref(v);
	return NULL;
}

/* The stack pick_loadb() takes for text under rule, on a 128 KiB one. */
static size_t stack_of(const char *text, const struct pick_rule *rule,
		       bool ok)
{
	struct stack_job job = { text, strlen(text), rule, !ok };
	size_t used = test_stack_used(stack_job_run, &job, 128 * 1024);

	assert_true(job.ok == ok);
	return used;
}

/*
 * Checking takes the same stack at any depth: 5,000 and 500,000 levels
 * of arrays and objects, dropped or stubbed, run on a thread of 128 KiB
 * of stack and take the same of it, but for what malloc() takes to grow
 * the heap stacks further (under a KiB); a recursive reader would need
 * some 50 MiB more for the second.
 */
static void test_pick__constant_stack(void **state)
{
	char *some = test_nest(2500, "[{\"k\":", "1", "}]");
	char *many = test_nest(250000, "[{\"k\":", "1", "}]");
	const char *keys[] = { "{\"skip\":", "{\"s\":" };
	size_t i, a, b;

	(void)state;
	for (i = 0; i < NELEM(keys); i++) {
		char *x = around(keys[i], some, "}");
		char *y = around(keys[i], many, "}");

		a = stack_of(x, &outer_rule, true);
		b = stack_of(y, &outer_rule, true);
		print_message("pick: %s: %zu bytes of stack for 5,000 levels, "
			      "%zu for 500,000\n", keys[i], a, b);
		assert_true(b <= a + 1024);
		free(x);
		free(y);
	}
	free(some);
	free(many);
}

/*
 * Everything but request.object.metadata.managedFields, which is kept as
 * an empty value of its type: a full decode, for a review whose
 * managedFields nest deeper than jansson reads.
 */
static const struct pick_rule all_but_managed_fields = {
	PICK_OBJECT, PICK_FIELDS(
		PICK_FIELD("request", PICK_OBJ_OTHERS(&pick_all,
			PICK_FIELD("object", PICK_OBJ_OTHERS(&pick_all,
				PICK_FIELD("metadata", PICK_OBJ_OTHERS(&pick_all,
					PICK_FIELD("managedFields",
						   &pick_stub)))))))),
	&pick_all, NULL
};

/*
 * Every recorded review, under its own config: review_handlen() (the
 * selective decode) gives the bytes that review_handle_json() gives on
 * jansson's full decode.  Where jansson refuses a review for its depth
 * (managedFields nested deeper than 2048), the full decode is everything
 * but that field.
 */
static void test_pick__corpus_answers_as_full_decode(void **state)
{
	const char *root = "tests/fixtures/cases";
	DIR *dir = opendir(root);
	struct dirent *e;
	size_t checked = 0, deep = 0;

	(void)state;
	assert_non_null(dir);
	while ((e = readdir(dir))) {
		struct review_answer fast, full;
		struct config cfg;
		char path[512], err[256];
		json_error_t jerr;
		json_t *doc;
		size_t len;
		char *body;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s/review.json", root,
			 e->d_name);
		body = test_read_file(path, &len);
		if (!body)
			continue;
		assert_int_equal(config_init(&cfg), 0);
		snprintf(path, sizeof(path), "%s/%s/config.json", root,
			 e->d_name);
		if (access(path, R_OK) == 0 &&
		    (config_load_file(&cfg, path, err, sizeof(err)) ||
		     config_check(&cfg, err, sizeof(err))))
			fail_msg("%s: %s", path, err);
		doc = json_loadb(body, len, FLAGS, &jerr);
		if (!doc) {
			struct pick_error perr;

			if (json_error_code(&jerr) != json_error_stack_overflow)
				fail_msg("%s: %s", e->d_name, jerr.text);
			doc = pick_loadb(body, len, &all_but_managed_fields,
					 &perr);
			assert_non_null(doc);
			deep++;
		}
		review_answer_init(&fast);
		review_answer_init(&full);
		review_handlen(&cfg, body, len, &fast);
		review_handle_json(&cfg, doc, &full);
		assert_int_equal(fast.http_status, full.http_status);
		if (fast.body_len != full.body_len ||
		    memcmp(fast.body, full.body, full.body_len))
			fail_msg("%s: %s\nfull decode: %s", e->d_name,
				 fast.body, full.body);
		assert_string_equal(fast.name, full.name);
		assert_string_equal(fast.uid, full.uid);
		assert_string_equal(fast.profile, full.profile);
		review_answer_release(&fast);
		review_answer_release(&full);
		json_decref(doc);
		config_release(&cfg);
		free(body);
		checked++;
	}
	closedir(dir);
	assert_true(checked >= 100);
	assert_true(deep >= 2);
}

/*
 * A review large enough that its values outgrow the arena's first chunk
 * and its budget (so that some come from malloc()): the same answer as
 * the full decode, with the arena on (as in main()).
 */
static void test_pick__large_review_as_full_decode(void **state)
{
	struct review_answer fast, full;
	json_t *doc, *containers, *first, *env;
	struct config cfg;
	size_t len, i, k;
	char *body;

	(void)state;
	body = test_read_file("tests/fixtures/cases/001-gpu-only-default-memory/review.json",
			 &len);
	assert_non_null(body);
	doc = json_loadb(body, len, FLAGS, NULL);
	assert_non_null(doc);
	free(body);
	containers = json_object_get(json_object_get(json_object_get(
		json_object_get(doc, "request"), "object"), "spec"), "containers");
	first = json_array_get(containers, 0);
	env = json_array();
	assert_non_null(first);
	assert_non_null(env);
	for (k = 0; k < 40; k++)
		assert_int_equal(json_array_append_new(env, json_pack(
			"{s:s, s:s}", "name", "VAR",
			"value", "0123456789abcdef0123456789abcdef")), 0);
	assert_int_equal(json_object_set_new(first, "env", env), 0);
	for (i = 0; i < 600; i++)
		assert_int_equal(json_array_append_new(containers,
						       json_deep_copy(first)), 0);
	body = json_dumps(doc, JSON_COMPACT);
	assert_non_null(body);
	len = strlen(body);
	assert_true(len > (size_t)1 << 20);

	assert_int_equal(config_init(&cfg), 0);
	review_answer_init(&fast);
	review_answer_init(&full);
	review_handlen(&cfg, body, len, &fast);
	review_handle_json(&cfg, doc, &full);
	assert_int_equal(fast.http_status, 200);
	assert_int_equal(fast.body_len, full.body_len);
	assert_memory_equal(fast.body, full.body, full.body_len);
	review_answer_release(&fast);
	review_answer_release(&full);
	config_release(&cfg);
	json_decref(doc);
	free(body);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pick__same_verdict_as_jansson),
		cmocka_unit_test(test_pick__raw_nul_refused_unlike_jansson),
		cmocka_unit_test(test_pick__depth_as_jansson),
		cmocka_unit_test(test_pick__duplicates_in_large_objects),
		cmocka_unit_test(test_pick__many_escaped_keys),
		cmocka_unit_test(test_pick__schema_keeps_what_it_names),
		cmocka_unit_test(test_pick__wrong_types_keep_their_type),
		cmocka_unit_test(test_pick__text_keeps_the_value_text),
		cmocka_unit_test(test_pick__skipped_parts_are_checked),
		cmocka_unit_test(test_pick__error_position),
		cmocka_unit_test(test_pick__depth_only_where_built),
		cmocka_unit_test(test_pick__built_depth_counts_as_jansson),
		cmocka_unit_test(test_pick__constant_stack),
		cmocka_unit_test(test_pick__corpus_answers_as_full_decode),
		cmocka_unit_test(test_pick__large_review_as_full_decode),
	};

	/* review_handlen() allocates from the arena, as in the server. */
	arena_setup();
	return cmocka_run_group_tests_name("pick", tests, NULL, NULL);
}
