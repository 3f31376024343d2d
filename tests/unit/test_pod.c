/*
 * test_pod.c - reading a pod: the typed view, type errors, and the schema
 * that must keep every part the reader looks at.
 */
#include "pod.h"

#define TEST_CONFIG
#include "test.h"

/* The pair of key in pairs[0..n), or fails. */
static const struct vgpu_pair *pair(const struct vgpu_pair *pairs, size_t n,
				    const char *key)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(pairs[i].key, key))
			return &pairs[i];
	fail_msg("no pair %s", key);
	return NULL;
}

static void assert_value(const struct vgpu_pair *p, const char *want)
{
	assert_int_equal(p->value_len, strlen(want));
	assert_memory_equal(p->value, want, p->value_len);
}

static void test_pod__view(void **state)
{
	json_t *obj = test_json(
		"{\"metadata\":{\"name\":\"p\",\"annotations\":{\"a\":\"b\"}},"
		"\"spec\":{\"schedulerName\":\"hami-scheduler\","
		"\"nodeName\":\"n\\u0001ode\",\"tolerations\":[{\"key\":\"k\"}],"
		"\"initContainers\":[{\"name\":\"init\"}],"
		"\"containers\":[{\"name\":\"cuda\",\"resources\":{\"limits\":"
		"{\"nvidia.com/gpu\":1,\"nvidia.com/gpumem\":\" 3000 \","
		"\"cpu\":\"1\"},\"requests\":{\"nvidia.com/gpumem\":2.5e3}},"
		"\"env\":[{\"name\":\"A\",\"value\":\"1\"}],"
		"\"securityContext\":{\"privileged\":true}},{}]}}");
	const struct pod_container *c;
	const struct pod_slot *s;
	struct pod p;
	char err[256];

	(void)state;
	assert_int_equal(pod_read(&p, &cfg, obj, err, sizeof(err)), POD_OK);
	assert_ptr_equal(p.metadata, json_object_get(obj, "metadata"));
	assert_ptr_equal(p.spec, json_object_get(obj, "spec"));
	assert_int_equal(json_array_size(p.tolerations), 1);
	assert_string_equal(p.scheduler_name, "hami-scheduler");
	assert_string_equal(p.node_name, "n\001ode");
	assert_string_equal(p.node_label, "node");
	assert_string_equal(p.runtime_class_name, "");
	assert_int_equal(p.ncontainers, 3);
	assert_int_equal(p.napp, 2);
	assert_false(p.vgpu);

	c = &p.containers[0];
	assert_string_equal(c->list, "initContainers");
	assert_int_equal(c->index, 0);
	assert_string_equal(c->name, "init");
	assert_false(c->asks);
	assert_null(c->resources);

	c = &p.containers[1];
	assert_string_equal(c->list, "containers");
	assert_int_equal(c->index, 0);
	assert_string_equal(c->label, "cuda");
	assert_true(c->privileged);
	assert_true(c->asks);
	assert_false(c->vgpu);
	assert_int_equal(json_array_size(c->env), 1);
	s = &c->slots[0];
	assert_int_equal(s->nlimits, 2);
	assert_int_equal(s->nrequests, 1);
	assert_value(pair(s->limits, s->nlimits, "nvidia.com/gpu"), "1");
	/* spaces trimmed as Kubernetes does; numbers as they are written */
	assert_value(pair(s->limits, s->nlimits, "nvidia.com/gpumem"), "3000");
	assert_value(pair(s->requests, s->nrequests, "nvidia.com/gpumem"),
		     "2500");
	assert_ptr_equal(s->request_value[VGPU_MEMORY],
			 json_object_get(c->requests, "nvidia.com/gpumem"));
	assert_null(s->request_value[VGPU_COUNT]);
	assert_int_equal(s->req.kind, 0);

	c = &p.containers[2];
	assert_int_equal(c->index, 1);
	assert_string_equal(c->name, "");
	assert_false(c->privileged);

	pod_release(&p);
	pod_release(&p); /* releasing twice is harmless */
	json_decref(obj);
}

struct invalid_case {
	const char *pod;
	const char *message;
};

static const struct invalid_case invalid_cases[] = {
	{ "{\"metadata\":{\"annotations\":{\"" POD_ANNOTATION_GPU_POLICY "\":1}}}",
	  "metadata.annotations[\"" POD_ANNOTATION_GPU_POLICY
	  "\"]: expected a string, got a number" },
	{ "{\"spec\":{\"runtimeClassName\":\"a\\u0000b\"}}",
	  "spec.runtimeClassName: contains a NUL character" },
	{ "{\"spec\":{\"tolerations\":[1]}}",
	  "spec.tolerations[0]: expected an object, got a number" },
	{ "{\"spec\":{\"containers\":[{},{\"securityContext\":[]}]}}",
	  "spec.containers[1].securityContext: expected an object, got an array" },
	{ "{\"spec\":{\"containers\":[{\"volumeMounts\":{}}]}}",
	  "spec.containers[0].volumeMounts: expected an array, got an object" },
	{ "{\"spec\":{\"containers\":[{\"volumeMounts\":[{\"mountPath\":\"/a\"},"
	  "{\"mountPath\":7}]}]}}",
	  "spec.containers[0].volumeMounts[1].mountPath: expected a string, got a number" },
	{ "{\"spec\":{\"containers\":[{\"volumeMounts\":[\"/a\"]}]}}",
	  "spec.containers[0].volumeMounts[0]: expected an object, got a string" },
	{ "{\"spec\":{\"containers\":[{\"volumeMounts\":[{\"mountPath\":"
	  "\"/a\\u0000b\"}]}]}}",
	  "spec.containers[0].volumeMounts[0].mountPath: contains a NUL character" },
	/* the first error in reading order: the second list is not read */
	{ "{\"spec\":{\"initContainers\":[{\"name\":1}],\"containers\":[3]}}",
	  "spec.initContainers[0].name: expected a string, got a number" },
};

static void test_pod__invalid(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(invalid_cases); i++) {
		json_t *obj = test_json(invalid_cases[i].pod);
		struct pod p;
		char err[256] = "";

		if (pod_read(&p, &cfg, obj, err, sizeof(err)) != POD_INVALID ||
		    strcmp(err, invalid_cases[i].message))
			fail_msg("case %zu: %s\n  want: %s\n  got:  %s", i,
				 invalid_cases[i].pod, invalid_cases[i].message,
				 err);
		pod_release(&p);
		json_decref(obj);
	}
}

/* The message is cut to errlen. */
static void test_pod__invalid_cut(void **state)
{
	json_t *obj = test_json("{\"spec\":[]}");
	struct pod p;
	char err[8];

	(void)state;
	assert_int_equal(pod_read(&p, &cfg, obj, err, sizeof(err)),
			 POD_INVALID);
	assert_string_equal(err, "spec: e");
	pod_release(&p);
	json_decref(obj);
}

/* What the policy sees of a value: its JSON, or "-" when absent. */
static void add_json(char **out, size_t *len, const char *what,
		     const json_t *v)
{
	char *text = v ? json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS |
					       JSON_ENCODE_ANY)
		       : NULL;
	size_t n = strlen(what) + (text ? strlen(text) : 1) + 3;

	*out = realloc(*out, *len + n + 1);
	assert_non_null(*out);
	*len += (size_t)snprintf(*out + *len, n + 1, "%s=%s; ", what,
				 text ? text : "-");
	free(text);
}

/*
 * The view of the pod as the policy reads it: the fields pod.h gives, of
 * the annotations and tolerations the members compared, and of each env
 * entry what pass 3 looks at (name, value, valueFrom set, and how many
 * members are not null).  A malloc'd string.
 */
static char *describe(const struct pod *p, enum pod_status status,
		      const char *err)
{
	char *out = NULL, line[600];
	size_t len = 0, i, j, f;
	json_t *t;

	snprintf(line, sizeof(line), "status=%d err=%s sched=%s node=%s rc=%s napp=%zu",
		 (int)status, status == POD_INVALID ? err : "",
		 p->scheduler_name ? p->scheduler_name : "(null)",
		 p->node_name ? p->node_name : "(null)",
		 p->runtime_class_name ? p->runtime_class_name : "(null)",
		 p->napp);
	add_json(&out, &len, line, NULL);
	add_json(&out, &len, "metadata?", p->metadata ? json_true() : NULL);
	add_json(&out, &len, "annotations?", p->annotations ? json_true() : NULL);
	add_json(&out, &len, "node policy",
		 json_object_get(p->annotations, POD_ANNOTATION_NODE_POLICY));
	add_json(&out, &len, "gpu policy",
		 json_object_get(p->annotations, POD_ANNOTATION_GPU_POLICY));
	add_json(&out, &len, "tolerations?", p->tolerations ? json_true() : NULL);
	json_array_foreach(p->tolerations, i, t) {
		static const char *const keys[] = { "key", "operator", "value",
						    "effect" };

		for (j = 0; j < 4; j++)
			add_json(&out, &len, keys[j], json_object_get(t, keys[j]));
	}
	for (i = 0; i < p->ncontainers; i++) {
		const struct pod_container *c = &p->containers[i];
		json_t *e;

		snprintf(line, sizeof(line), "c %s[%zu] name=%s priv=%d asks=%d",
			 c->list, c->index, c->name ? c->name : "(null)",
			 c->privileged, c->asks);
		add_json(&out, &len, line, NULL);
		add_json(&out, &len, "limits", c->limits);
		add_json(&out, &len, "requests", c->requests);
		json_array_foreach(c->mounts, j, e)
			add_json(&out, &len, "mountPath",
				 json_object_get(e, "mountPath"));
		json_array_foreach(c->env, j, e) {
			size_t present = 0;
			const char *k;
			json_t *v;

			json_object_foreach(e, k, v)
				present += !json_is_null(v);
			snprintf(line, sizeof(line), "env present=%zu from=%d",
				 present,
				 json_object_get(e, "valueFrom") &&
				 !json_is_null(json_object_get(e, "valueFrom")));
			add_json(&out, &len, line, NULL);
			add_json(&out, &len, "name", json_object_get(e, "name"));
			add_json(&out, &len, "value",
				 json_object_get(e, "value"));
		}
		for (f = 0; c->slots && f < cfg.ndevices; f++) {
			const struct pod_slot *s = &c->slots[f];

			for (j = 0; j < s->nlimits + s->nrequests; j++) {
				const struct vgpu_pair *q =
					j < s->nlimits
						? &s->limits[j]
						: &s->requests[j - s->nlimits];

				snprintf(line, sizeof(line), "%s %s=%.*s",
					 j < s->nlimits ? "L" : "R", q->key,
					 (int)q->value_len, q->value);
				add_json(&out, &len, line, NULL);
			}
		}
	}
	return out;
}

/*
 * pod_read_added(): the ephemeral containers a request adds, by name
 * against oldObject; their index in the object's list; both shapes;
 * oldObject's wrong types named as such.
 */
static void test_pod__added(void **state)
{
	static const struct {
		const char *obj, *old;
		bool list;
		const char *want; /* "name@index ..." or the error */
	} cases[] = {
		{ "{\"spec\":{\"ephemeralContainers\":[{\"name\":\"a\"},"
		  "{\"name\":\"b\"},{\"name\":\"c\"}]}}",
		  "{\"spec\":{\"ephemeralContainers\":[{\"name\":\"b\"}]}}",
		  false, "a@0 c@2" },
		/* no oldObject: every one is added */
		{ "{\"spec\":{\"ephemeralContainers\":[{\"name\":\"a\"}]}}",
		  NULL, false, "a@0" },
		/* names compared whole, NUL bytes included */
		{ "{\"spec\":{\"ephemeralContainers\":[{\"name\":\"ab\"},"
		  "{\"name\":\"a\\u0000b\"}]}}",
		  "{\"spec\":{\"ephemeralContainers\":[{\"name\":\"a\"}]}}",
		  false, "spec.ephemeralContainers[1].name: contains a NUL character" },
		{ "{\"spec\":{\"ephemeralContainers\":[{\"name\":\"a\"}]}}",
		  "{\"spec\":{\"ephemeralContainers\":[{\"name\":\"a\\u0000\"}]}}",
		  false, "oldObject.spec.ephemeralContainers[0].name: contains a NUL character" },
		{ "{\"ephemeralContainers\":[{\"name\":\"x\"},{\"name\":\"y\","
		  "\"env\":[1]}]}",
		  "{\"ephemeralContainers\":[{\"name\":\"x\"}]}", true,
		  "ephemeralContainers[1].env[0]: expected an object, got a number" },
		{ "{\"ephemeralContainers\":[{\"name\":\"x\"},{\"name\":\"y\"}]}",
		  "{\"ephemeralContainers\":[{\"name\":\"x\"}]}", true, "y@1" },
		/* a Pod's list is not an EphemeralContainers object's */
		{ "{\"ephemeralContainers\":[{\"name\":\"x\"}]}", NULL, false, "" },
		{ "{\"spec\":{\"ephemeralContainers\":[{\"name\":\"a\"}]}}",
		  "{\"spec\":{\"ephemeralContainers\":[{\"name\":7}]}}", false,
		  "oldObject.spec.ephemeralContainers[0].name: expected a string, got a number" },
		{ "{\"ephemeralContainers\":[{\"name\":\"a\"}]}",
		  "{\"ephemeralContainers\":[[]]}", true,
		  "oldObject.ephemeralContainers[0]: expected an object, got an array" },
		{ "{\"spec\":{\"ephemeralContainers\":[]}}", "{\"spec\":[]}", false,
		  "oldObject.spec: expected an object, got an array" },
		{ "{\"spec\":{\"ephemeralContainers\":{}}}", NULL, false,
		  "spec.ephemeralContainers: expected an array, got an object" },
	};
	size_t i, k;

	(void)state;
	for (i = 0; i < NELEM(cases); i++) {
		json_t *obj = test_json(cases[i].obj);
		json_t *old = cases[i].old ? test_json(cases[i].old) : NULL;
		char err[256] = "", got[256] = "";
		size_t n = 0;
		struct pod p;

		if (pod_read_added(&p, &cfg, obj, old, cases[i].list, err,
				   sizeof(err)) != POD_OK) {
			snprintf(got, sizeof(got), "%s", err);
		} else {
			for (k = 0; k < p.ncontainers; k++) {
				const struct pod_container *c = &p.containers[k];

				assert_string_equal(c->list, "ephemeralContainers");
				assert_int_equal(c->top, cases[i].list);
				assert_int_equal(c->asks, false);
				n += (size_t)snprintf(got + n, sizeof(got) - n,
						      "%s%s@%zu", k ? " " : "",
						      c->name, c->index);
			}
			assert_int_equal(p.napp, p.ncontainers);
		}
		if (strcmp(got, cases[i].want))
			fail_msg("case %zu: got \"%s\", want \"%s\"", i, got,
				 cases[i].want);
		pod_release(&p);
		json_decref(obj);
		json_decref(old);
	}
}

static const char *const schema_pods[] = {
	/* everything read, with parts the schema drops around it */
	"{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\","
	"\"generateName\":\"p-\",\"labels\":{\"a\":\"b\"},\"annotations\":{"
	"\"x\":\"y\",\"" POD_ANNOTATION_NODE_POLICY "\":\"binpack\"},"
	"\"managedFields\":[{\"manager\":\"kubectl\"}]},"
	"\"spec\":{\"schedulerName\":\"s\",\"nodeName\":\"n\","
	"\"runtimeClassName\":\"r\",\"volumes\":[{\"name\":\"v\"}],"
	"\"tolerations\":[{\"key\":\"k\",\"operator\":\"Exists\","
	"\"effect\":\"NoSchedule\",\"tolerationSeconds\":3}],"
	"\"initContainers\":[{\"name\":\"i\",\"image\":\"busybox\","
	"\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\",\"cpu\":1},"
	"\"claims\":[]}}],"
	"\"containers\":[{\"name\":\"c\",\"args\":[\"-v\"],"
	"\"resources\":{\"limits\":{\"nvidia.com/gpumem\":4096.5},"
	"\"requests\":{\"nvidia.com/gpucores\":\" 30 \",\"memory\":\"1Gi\"}},"
	"\"env\":[{\"name\":\"A\",\"value\":\"1\"},"
	"{\"name\":\"B\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"x\"}}},"
	"{\"name\":\"C\",\"value\":\"2\",\"valueFrom\":null}],"
	"\"securityContext\":{\"privileged\":false,\"runAsUser\":0},"
	"\"volumeMounts\":[{\"name\":\"v\",\"mountPath\":\"/data\","
	"\"readOnly\":true},{\"name\":\"w\",\"mountPath\":null}]}]},"
	"\"status\":{\"phase\":\"Pending\"}}",
	/* type errors found in the kept parts */
	"{\"metadata\":{\"annotations\":{\"" POD_ANNOTATION_GPU_POLICY "\":[1]}}}",
	"{\"spec\":{\"containers\":[{\"env\":[{\"name\":\"A\",\"value\":{}}]}]}}",
	"{\"spec\":{\"containers\":[{\"resources\":{\"requests\":"
	"{\"nvidia.com/gpu\":[]}}}]}}",
	"{\"spec\":{\"tolerations\":[{\"effect\":{\"a\":1}}],\"containers\":[]}}",
	"{\"spec\":{\"containers\":{\"name\":\"c\"}}}",
	"{\"spec\":{\"initContainers\":[[1]],\"containers\":[{}]}}",
	"{\"spec\":{\"containers\":[{\"securityContext\":{\"privileged\":\"x\"}}]}}",
	"{\"spec\":{\"containers\":[{\"volumeMounts\":[{\"mountPath\":[\"/\"]}]}]}}",
	"{\"spec\":{\"containers\":[{\"volumeMounts\":[7]}]}}",
	/* null is absent, in the schema too */
	"{\"metadata\":null,\"spec\":{\"tolerations\":null,"
	"\"containers\":[{\"resources\":null,\"env\":null}]}}",
};

/* A pod decoded with pod_rule reads as the whole pod does. */
static void test_pod__schema_keeps_what_is_read(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(schema_pods); i++) {
		const char *text = schema_pods[i];
		json_t *whole = test_json(text);
		struct pick_error perr;
		json_t *picked = pick_loadb(text, strlen(text), &pod_rule,
					    &perr);
		char err[2][256] = { "", "" };
		enum pod_status status[2];
		struct pod p[2];
		char *seen[2];

		assert_non_null(picked);
		status[0] = pod_read(&p[0], &cfg, whole, err[0], sizeof(err[0]));
		status[1] = pod_read(&p[1], &cfg, picked, err[1],
				     sizeof(err[1]));
		seen[0] = describe(&p[0], status[0], err[0]);
		seen[1] = describe(&p[1], status[1], err[1]);
		if (strcmp(seen[0], seen[1]))
			fail_msg("case %zu: %s\n  whole:  %s\n  picked: %s", i,
				 text, seen[0], seen[1]);
		if (i == 0)
			assert_int_equal(status[0], POD_OK);
		else if (i < NELEM(schema_pods) - 1)
			assert_int_equal(status[0], POD_INVALID);
		free(seen[0]);
		free(seen[1]);
		pod_release(&p[0]);
		pod_release(&p[1]);
		json_decref(whole);
		json_decref(picked);
	}
}

static void test_pod__lines(void **state)
{
	char label[POD_LINE_SIZE], long_name[300];
	json_t *list = json_array();
	bool nomem = false;
	const char *w;

	(void)state;
	assert_string_equal(pod_label(label, "a\tb\x7f" "c"), "abc");
	memset(long_name, 'x', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	pod_label(label, long_name);
	assert_int_equal(strlen(label), POD_LINE_CHARS);
	assert_string_equal(label + POD_LINE_CHARS - 3, "...");

	pod_warnf(list, &nomem, "container \"%s\": %s", "c\n", "set");
	pod_warnf(list, &nomem, "%s", long_name);
	assert_false(nomem);
	assert_int_equal(json_array_size(list), 2);
	assert_string_equal(json_string_value(json_array_get(list, 0)),
			    "container \"c\": set");
	w = json_string_value(json_array_get(list, 1));
	assert_int_equal(strlen(w), POD_LINE_CHARS);
	assert_string_equal(w + POD_LINE_CHARS - 3, "...");
	json_decref(list);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		TEST_WITH_CONFIG(test_pod__view),
		TEST_WITH_CONFIG(test_pod__invalid),
		TEST_WITH_CONFIG(test_pod__invalid_cut),
		TEST_WITH_CONFIG(test_pod__added),
		TEST_WITH_CONFIG(test_pod__schema_keeps_what_is_read),
		TEST_WITH_CONFIG(test_pod__lines),
	};

	return cmocka_run_group_tests_name("pod", tests, NULL, NULL);
}
