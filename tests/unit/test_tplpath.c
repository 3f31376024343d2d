/*
 * test_tplpath.c - the paths of pod templates: their syntax, and the
 * templates they find.
 */
#include "test.h"

#include "buf.h"
#include "tplpath.h"

static const char *const valid[] = {
	"", "template", "spec.template", "spec.*.template",
	"spec.workerGroupSpecs[].template", "spec.*[].template", "*",
	"spec.replicatedJobs[].template.spec.template", "a-b_c/d:e",
};

static const char *const invalid[] = {
	".", "spec.", ".spec", "spec..template", "[]", "spec.[].x", "a*",
	"a[", "a]", "a[]b", "a[][]", "sp\tec", "x.**",
};

static void test_tplpath__check(void **state)
{
	char err[200];
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(valid); i++)
		assert_int_equal(tplpath_check(valid[i], err, sizeof(err)), 0);
	for (i = 0; i < NELEM(invalid); i++) {
		err[0] = '\0';
		if (tplpath_check(invalid[i], err, sizeof(err)) != -1)
			fail_msg("\"%s\" is taken as a path", invalid[i]);
		assert_true(err[0] != '\0');
	}
	assert_true(tplpath_has_wildcard("a.*.b"));
	assert_true(tplpath_has_wildcard("a[].b"));
	assert_false(tplpath_has_wildcard("spec.template"));
}

/* Collects "WHERE=ID" for each template found (tplpath_fn). */
static int collect(void *ctx, json_t *tpl, const char *where)
{
	struct buf *b = ctx;

	buf_addf(b, "%s=%s;", where,
		 json_string_value(json_object_get(tpl, "id")));
	return 0;
}

struct walk_case {
	const char *json;
	const char *path;
	int rc;
	const char *found; /* or the message, for -2 */
};

static const struct walk_case walks[] = {
	{ "{\"id\": \"self\"}", "", 0, "=self;" },
	{ "{\"spec\": {\"r\": {\"Master\": {\"template\": {\"id\": \"m\"}},"
	  " \"Worker\": {\"template\": {\"id\": \"w\"}}}}}",
	  "spec.r.*.template", 0,
	  "spec.r.Master.template=m;spec.r.Worker.template=w;" },
	{ "{\"spec\": {\"g\": [{\"template\": {\"id\": \"a\"}}, null,"
	  " {\"template\": {\"id\": \"c\"}}, {\"other\": 1}]}}",
	  "spec.g[].template", 0, "spec.g[0].template=a;spec.g[2].template=c;" },
	{ "{\"spec\": {\"m\": {\"x\": [{\"t\": {\"id\": \"1\"}}],"
	  " \"y\": [{\"t\": {\"id\": \"2\"}}]}}}", "spec.m.*[].t", 0,
	  "spec.m.x[0].t=1;spec.m.y[0].t=2;" },
	/* absent and null lead nowhere */
	{ "{}", "spec.template", 0, "" },
	{ "{\"spec\": null}", "spec.template", 0, "" },
	{ "{\"spec\": {\"g\": null}}", "spec.g[].template", 0, "" },
	/* wrong types are named */
	{ "{\"spec\": []}", "spec.template", -2,
	  "spec: expected an object, got an array" },
	{ "{\"spec\": {\"g\": {}}}", "spec.g[].template", -2,
	  "spec.g: expected an array, got an object" },
	{ "{\"spec\": {\"g\": [{\"template\": 3}]}}", "spec.g[].template", -2,
	  "spec.g[0].template: expected an object, got a number" },
	{ "{\"spec\": {\"r\": {\"W\": \"x\"}}}", "spec.r.*.template", -2,
	  "spec.r.W: expected an object, got a string" },
};

static void test_tplpath__each(void **state)
{
	struct buf b = BUF_INIT;
	char err[200];
	json_t *obj;
	size_t i;
	int rc;

	(void)state;
	for (i = 0; i < NELEM(walks); i++) {
		obj = json_loads(walks[i].json, 0, NULL);
		assert_non_null(obj);
		buf_truncate(&b, 0);
		err[0] = '\0';
		rc = tplpath_each(obj, walks[i].path, collect, &b, err,
				  sizeof(err));
		if (rc != walks[i].rc)
			fail_msg("%s on %s: %d, not %d (%s)", walks[i].path,
				 walks[i].json, rc, walks[i].rc, err);
		assert_string_equal(rc == -2 ? err : buf_str(&b),
				    walks[i].found);
		json_decref(obj);
	}
	buf_release(&b);
}

/* A stop from the callback stops the walk. */
static int stop(void *ctx, json_t *tpl, const char *where)
{
	(void)tpl;
	(void)where;
	++*(int *)ctx;
	return -1;
}

static void test_tplpath__stop(void **state)
{
	json_t *obj = json_loads("{\"a\": [{}, {}, {}]}", 0, NULL);
	char err[64];
	int calls = 0;

	(void)state;
	assert_int_equal(tplpath_each(obj, "a[]", stop, &calls, err,
				      sizeof(err)), -1);
	assert_int_equal(calls, 1);
	json_decref(obj);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tplpath__check),
		cmocka_unit_test(test_tplpath__each),
		cmocka_unit_test(test_tplpath__stop),
	};

	return cmocka_run_group_tests_name("tplpath", tests, NULL, NULL);
}
