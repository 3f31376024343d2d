/*
 * test_policy.c - pod decisions: type errors, gates, warnings, the order
 * of operations, and idempotence.  The recorded fixture corpus covers the
 * rules case by case; this program covers the mechanics.
 */
#include "policy.h"

#define TEST_CONFIG
#include "test.h"

/* Decides the pod in text; the caller releases *d and the returned pod. */
static json_t *decide(const char *text, struct policy_decision *d)
{
	json_t *pod = test_json(text);

	assert_int_equal(policy_decision_init(d), 0);
	assert_int_equal(policy_decide(&cfg, pod, d), 0);
	return pod;
}

struct type_case {
	const char *pod;
	const char *path;
};

static const struct type_case type_cases[] = {
	{ "{\"spec\":[]}", "spec: expected an object, got an array" },
	{ "{\"metadata\":1,\"spec\":{}}", "metadata: expected an object" },
	{ "{\"metadata\":{\"annotations\":[]},\"spec\":{}}",
	  "metadata.annotations: expected an object" },
	{ "{\"spec\":{\"containers\":{}}}",
	  "spec.containers: expected an array, got an object" },
	{ "{\"spec\":{\"initContainers\":\"x\",\"containers\":[]}}",
	  "spec.initContainers: expected an array, got a string" },
	{ "{\"spec\":{\"containers\":[7]}}",
	  "spec.containers[0]: expected an object, got a number" },
	{ "{\"spec\":{\"containers\":[{\"name\":3}]}}",
	  "spec.containers[0].name: expected a string" },
	{ "{\"spec\":{\"containers\":[{\"resources\":[]}]}}",
	  "spec.containers[0].resources: expected an object" },
	{ "{\"spec\":{\"containers\":[{\"resources\":{\"limits\":\"1\"}}]}}",
	  "spec.containers[0].resources.limits: expected an object" },
	{ "{\"spec\":{\"containers\":[{},{\"resources\":{\"requests\":true}}]}}",
	  "spec.containers[1].resources.requests: expected an object" },
	{ "{\"spec\":{\"containers\":[{\"resources\":{\"limits\":"
	  "{\"nvidia.com/gpu\":true}}}]}}",
	  "spec.containers[0].resources.limits[\"nvidia.com/gpu\"]: expected a quantity, got a boolean" },
	{ "{\"spec\":{\"containers\":[{\"resources\":{\"requests\":"
	  "{\"nvidia.com/gpumem\":{}}}}]}}",
	  "spec.containers[0].resources.requests[\"nvidia.com/gpumem\"]: expected a quantity, got an object" },
	{ "{\"spec\":{\"containers\":[{\"env\":{}}]}}",
	  "spec.containers[0].env: expected an array" },
	{ "{\"spec\":{\"containers\":[{\"env\":[\"A=1\"]}]}}",
	  "spec.containers[0].env[0]: expected an object, got a string" },
	{ "{\"spec\":{\"initContainers\":[{\"env\":[{\"name\":\"A\"},{\"name\":1}]}],"
	  "\"containers\":[{}]}}",
	  "spec.initContainers[0].env[1].name: expected a string" },
	{ "{\"spec\":{\"containers\":[{\"env\":[{\"name\":\"A\",\"value\":1}]}]}}",
	  "spec.containers[0].env[0].value: expected a string" },
	{ "{\"spec\":{\"containers\":[{\"securityContext\":{\"privileged\":\"yes\"}}]}}",
	  "spec.containers[0].securityContext.privileged: expected a boolean" },
	{ "{\"spec\":{\"schedulerName\":1,\"containers\":[{}]}}",
	  "spec.schedulerName: expected a string" },
	{ "{\"spec\":{\"nodeName\":{},\"containers\":[{}]}}",
	  "spec.nodeName: expected a string" },
	{ "{\"spec\":{\"tolerations\":{},\"containers\":[{}]}}",
	  "spec.tolerations: expected an array" },
	{ "{\"spec\":{\"tolerations\":[{\"key\":1}],\"containers\":[{}]}}",
	  "spec.tolerations[0].key: expected a string" },
};

static void test_policy__type_errors(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(type_cases); i++) {
		struct policy_decision d;
		json_t *pod = decide(type_cases[i].pod, &d);

		if (d.code != 400 || !strstr(d.message, type_cases[i].path))
			fail_msg("case %zu: %d %s", i, d.code,
				 d.message ? d.message : "(none)");
		assert_int_equal(patch_count(&d.patch), 0);
		assert_int_equal(json_array_size(d.warnings), 0);
		policy_decision_release(&d);
		json_decref(pod);
	}
}

static void test_policy__no_containers(void **state)
{
	static const char *const pods[] = {
		"{}",
		"{\"spec\":{}}",
		"{\"spec\":{\"containers\":[]}}",
		"{\"spec\":{\"containers\":null,\"initContainers\":[{}]}}",
	};
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(pods); i++) {
		struct policy_decision d;
		json_t *pod = decide(pods[i], &d);

		assert_int_equal(d.code, 403);
		assert_string_equal(d.message, "pod has no containers");
		policy_decision_release(&d);
		json_decref(pod);
	}
}

/* A pod with n GPU containers named by fmt (one %d). */
static char *gpu_pod(int n, const char *fmt)
{
	size_t size = 128 + (size_t)n * 256;
	char *s = malloc(size), name[200];
	size_t o;
	int i;

	o = (size_t)snprintf(s, size, "{\"spec\":{\"containers\":[");
	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), fmt, i);
		o += (size_t)snprintf(s + o, size - o,
				      "%s{\"name\":\"%s\",\"resources\":{\"limits\":"
				      "{\"nvidia.com/gpu\":\"1\"}}}",
				      i ? "," : "", name);
	}
	snprintf(s + o, size - o, "]}}");
	return s;
}

static void test_policy__warning_cap(void **state)
{
	struct policy_decision d;
	char *text = gpu_pod(40, "c%d");
	json_t *pod = decide(text, &d);
	size_t i;

	(void)state;
	assert_int_equal(d.code, 0);
	/* 40 limits adds, then schedulerName and tolerations */
	assert_int_equal(patch_count(&d.patch), 42);
	assert_int_equal(json_array_size(d.warnings), 31);
	for (i = 0; i < 30; i++) {
		char want[80];

		snprintf(want, sizeof(want),
			 "container \"c%zu\": set nvidia.com/gpumem=5000 (defaultMemory)",
			 i);
		assert_string_equal(json_string_value(json_array_get(d.warnings,
								     i)),
				    want);
	}
	assert_string_equal(json_string_value(json_array_get(d.warnings, 30)),
			    "... and 10 more");
	policy_decision_release(&d);
	json_decref(pod);
	free(text);
}

static void test_policy__warning_cut_and_masked(void **state)
{
	struct policy_decision d;
	char *text = gpu_pod(1, "x\\u0007%d-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
	json_t *pod = decide(text, &d);
	const char *w;

	(void)state;
	assert_int_equal(json_array_size(d.warnings), 1);
	w = json_string_value(json_array_get(d.warnings, 0));
	assert_int_equal(strlen(w), 120);
	assert_string_equal(w + 117, "...");
	assert_memory_equal(w, "container \"x0-aaa", 17);
	policy_decision_release(&d);
	json_decref(pod);
	free(text);
}

static void test_policy__hostile_values(void **state)
{
	struct policy_decision d;
	char *text, *name;
	json_t *pod;
	size_t i, o = 0;

	(void)state;
	/* a name of 1000 control characters, then 50 two-byte letters */
	name = malloc(1000 * 6 + 50 * 2 + 1);
	for (i = 0; i < 1000; i++)
		o += (size_t)sprintf(name + o, "\\u0001");
	for (i = 0; i < 50; i++)
		o += (size_t)sprintf(name + o, "\xc3\xa9");
	text = malloc(o + 200);
	sprintf(text, "{\"spec\":{\"containers\":[{\"name\":\"%s\","
		"\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}",
		name);
	pod = decide(text, &d);
	assert_int_equal(d.code, 0);
	assert_int_equal(json_array_size(d.warnings), 1);
	assert_non_null(strstr(json_string_value(json_array_get(d.warnings, 0)),
			       "\xc3\xa9\": set nvidia.com/gpumem=5000 (defaultMemory)"));
	policy_decision_release(&d);
	json_decref(pod);
	free(text);
	free(name);

	/* a NUL inside a name the policy compares is refused, not matched */
	pod = json_loadb("{\"spec\":{\"containers\":[{\"env\":[{\"name\":"
			 "\"CUDA_TASK_PRIORITY\\u0000x\"}]}]}}", 72,
			 JSON_ALLOW_NUL, NULL);
	assert_non_null(pod);
	assert_int_equal(policy_decision_init(&d), 0);
	assert_int_equal(policy_decide(&cfg, pod, &d), 0);
	assert_int_equal(d.code, 400);
	assert_string_equal(d.message,
			    "spec.containers[0].env[0].name: contains a NUL character");
	policy_decision_release(&d);
	json_decref(pod);

	/* a null valueFrom is absent: the entry is already ours */
	pod = decide("{\"spec\":{\"schedulerName\":\"hami-scheduler\","
		     "\"tolerations\":[{\"key\":\"nvidia.com/gpu\","
		     "\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}],"
		     "\"containers\":[{\"resources\":{\"limits\":{"
		     "\"nvidia.com/gpu\":\"1\",\"nvidia.com/gpumem\":\"1\","
		     "\"nvidia.com/priority\":\"2\"}},\"env\":[{\"name\":"
		     "\"CUDA_TASK_PRIORITY\",\"value\":\"2\",\"valueFrom\":null}]}]}}",
		     &d);
	assert_int_equal(d.code, 0);
	assert_int_equal(patch_count(&d.patch), 0);
	assert_int_equal(json_array_size(d.warnings), 0);
	policy_decision_release(&d);
	json_decref(pod);

	/* quantities as JSON numbers and with spaces, as manifests have them */
	pod = decide("{\"spec\":{\"containers\":[{\"resources\":{\"limits\":{"
		     "\"nvidia.com/gpu\":\" 1 \",\"nvidia.com/gpumem\":1e3}}}]}}",
		     &d);
	assert_int_equal(d.code, 0);
	policy_decision_release(&d);
	json_decref(pod);
}

static void test_policy__order_and_idempotence(void **state)
{
	static const char pod_text[] =
		"{\"metadata\":{\"name\":\"p\"},\"spec\":{"
		"\"initContainers\":[{\"name\":\"init\",\"resources\":{"
		"\"limits\":{\"nvidia.com/gpumem\":\"1k\"}}}],"
		"\"containers\":[{\"name\":\"a\"},{\"name\":\"b\",\"resources\":{"
		"\"limits\":{\"nvidia.com/gpu\":\"1\",\"nvidia.com/priority\":\"1\"},"
		"\"requests\":{\"nvidia.com/gpu\":\"1\"}},\"env\":[{\"name\":"
		"\"CUDA_TASK_PRIORITY\",\"valueFrom\":{\"fieldRef\":{}}}]}]}}";
	static const char *const paths[] = {
		"/spec/initContainers/0/resources/limits/nvidia.com~1gpu",
		"/spec/containers/1/resources/limits/nvidia.com~1gpumem",
		"/spec/containers/1/resources/requests/nvidia.com~1gpumem",
		"/spec/containers/1/env/0",
		"/spec/schedulerName",
		"/spec/tolerations",
	};
	struct policy_decision d, again;
	char err[128];
	json_t *pod = decide(pod_text, &d);
	size_t i;

	(void)state;
	assert_int_equal(d.code, 0);
	assert_int_equal(patch_count(&d.patch), NELEM(paths));
	for (i = 0; i < patch_count(&d.patch); i++)
		assert_string_equal(json_string_value(json_object_get(
					    json_array_get(d.patch.ops, i), "path")),
				    paths[i]);
	assert_string_equal(json_string_value(json_object_get(
				    json_array_get(d.patch.ops, 3), "op")),
			    "replace");
	assert_int_equal(json_array_size(d.warnings), 3);
	assert_string_equal(json_string_value(json_array_get(d.warnings, 0)),
			    "container \"init\": set nvidia.com/gpu=1 (defaultGPUNum)");
	assert_string_equal(json_string_value(json_array_get(d.warnings, 2)),
			    "container \"b\": replaced env CUDA_TASK_PRIORITY (valueFrom) with \"1\"");

	/* the patched pod gives no further operation and no warning */
	assert_int_equal(patch_apply(pod, &d.patch, err, sizeof(err)), 0);
	assert_int_equal(policy_decision_init(&again), 0);
	assert_int_equal(policy_decide(&cfg, pod, &again), 0);
	assert_int_equal(again.code, 0);
	assert_int_equal(patch_count(&again.patch), 0);
	assert_int_equal(json_array_size(again.warnings), 0);
	policy_decision_release(&again);
	policy_decision_release(&d);
	json_decref(pod);
}

static void test_policy__scheduler_gate(void **state)
{
	struct policy_decision d;
	json_t *pod;

	(void)state;
	pod = decide("{\"spec\":{\"schedulerName\":\"volcano\",\"containers\":"
		     "[{\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"x\"}}}]}}",
		     &d);
	/* not examined: even a bad value is left alone, with one warning */
	assert_int_equal(d.code, 0);
	assert_int_equal(patch_count(&d.patch), 0);
	assert_int_equal(json_array_size(d.warnings), 1);
	assert_string_equal(json_string_value(json_array_get(d.warnings, 0)),
			    "pod asks for vGPU resources but spec.schedulerName is \"volcano\", not \"hami-scheduler\"; left unchanged");
	policy_decision_release(&d);
	json_decref(pod);

	pod = decide("{\"spec\":{\"schedulerName\":\"volcano\",\"containers\":"
		     "[{\"resources\":{\"limits\":{\"cpu\":\"1\"}}}]}}",
		     &d);
	assert_int_equal(json_array_size(d.warnings), 0);
	policy_decision_release(&d);
	json_decref(pod);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		TEST_WITH_CONFIG(test_policy__type_errors),
		TEST_WITH_CONFIG(test_policy__no_containers),
		TEST_WITH_CONFIG(test_policy__warning_cap),
		TEST_WITH_CONFIG(test_policy__warning_cut_and_masked),
		TEST_WITH_CONFIG(test_policy__hostile_values),
		TEST_WITH_CONFIG(test_policy__order_and_idempotence),
		TEST_WITH_CONFIG(test_policy__scheduler_gate),
	};

	return cmocka_run_group_tests_name("policy", tests, NULL, NULL);
}
