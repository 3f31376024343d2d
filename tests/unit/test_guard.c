/*
 * test_guard.c - the guards' mechanics: UPDATE comparisons with writers by
 * user and group, null as absent, hit counting, the order of removals and
 * of the denial message, user names with a NUL byte.  The fixture corpus
 * covers the rules case by case.
 */
#include "policy.h"
#include "review.h"

#define TEST_CONFIG
#include "test.h"

#define SCHED "system:serviceaccount:kube-system:hami-scheduler"

/* A pod with the annotations ann (JSON object text) and one container. */
#define POD(ann, env)                                                        \
	"{\"metadata\":{\"annotations\":" ann "},\"spec\":{\"containers\":"  \
	"[{\"name\":\"c\",\"env\":" env "}]}}"

/* Decides an UPDATE of old into new by username and groups (JSON text). */
static void update(const char *old, const char *new, const char *user,
		   const char *groups, struct policy_decision *d)
{
	json_t *o = test_json(old), *n = test_json(new);
	json_t *g = groups ? test_json(groups) : NULL;
	struct policy_requester who = { user, g };
	struct policy_request req = { POLICY_UPDATE, n, o, &who, false, false };

	assert_int_equal(policy_decision_init(d), 0);
	assert_int_equal(policy_decide_request(&cfg, &req, d), 0);
	assert_int_equal(patch_count(&d->patch), 0); /* never a patch */
	json_decref(o);
	json_decref(n);
	json_decref(g);
}

static void test_guard__update_writers(void **state)
{
	const char *old = POD("{\"a\":\"1\"}", "[]");
	const char *added = POD("{\"a\":\"1\",\"hami.io/vgpu-node\":\"n\"}", "[]");
	struct policy_decision d;

	(void)state;
	update(old, added, "alice", "[\"system:authenticated\"]", &d);
	assert_int_equal(d.code, 403);
	assert_string_equal(d.message,
		"annotation \"hami.io/vgpu-node\" is written by the scheduler and cannot be changed by \"alice\"");
	assert_int_equal(d.hits.count[GUARD_ANNOTATIONS][GUARD_DENIED], 1);
	policy_decision_release(&d);

	update(old, added, SCHED, NULL, &d);
	assert_int_equal(d.code, 0);
	assert_int_equal(d.hits.count[GUARD_ANNOTATIONS][GUARD_DENIED], 0);
	policy_decision_release(&d);

	/* removed by the scheduler, changed by the device plugin */
	update(added, old, SCHED, NULL, &d);
	assert_int_equal(d.code, 0);
	policy_decision_release(&d);
	update(added, POD("{\"a\":\"1\",\"hami.io/vgpu-node\":\"m\"}", "[]"),
	       "system:serviceaccount:kube-system:hami-device-plugin", NULL, &d);
	assert_int_equal(d.code, 0);
	policy_decision_release(&d);

	/* a prefix of a writer's name is not the writer */
	update(old, added, "system:serviceaccount:kube-system:hami", NULL, &d);
	assert_int_equal(d.code, 403);
	policy_decision_release(&d);
}

static void test_guard__update_groups(void **state)
{
	json_t *writers = json_pack("[s]", "group:hami-operators");
	const char *old = POD("{}", "[]");
	const char *added = POD("{\"hami.io/bind-phase\":\"x\"}", "[]");
	struct policy_decision d;

	(void)state;
	json_decref(cfg.guards.writers);
	cfg.guards.writers = writers; /* cfg is this test's own */
	update(old, added, "bob", "[\"dev\",\"hami-operators\"]", &d);
	assert_int_equal(d.code, 0);
	policy_decision_release(&d);
	update(old, added, "bob", "[\"hami-operators-x\"]", &d);
	assert_int_equal(d.code, 403);
	policy_decision_release(&d);
	/* a user named like the group is not in it */
	update(old, added, "group:hami-operators", NULL, &d);
	assert_int_equal(d.code, 403);
	policy_decision_release(&d);
	/* groups that are not strings are skipped */
	update(old, added, "bob", "[1,null,\"hami-operators\"]", &d);
	assert_int_equal(d.code, 0);
	policy_decision_release(&d);
}

static void test_guard__update_compares(void **state)
{
	struct policy_decision d;

	(void)state;
	/* only another annotation changed */
	update(POD("{\"hami.io/vgpu-node\":\"n\",\"team\":\"a\"}", "[]"),
	       POD("{\"hami.io/vgpu-node\":\"n\",\"team\":\"b\"}", "[]"),
	       "alice", NULL, &d);
	assert_int_equal(d.code, 0);
	policy_decision_release(&d);
	/* null counts as absent on both sides */
	update(POD("{\"hami.io/vgpu-node\":null}", "[]"), POD("{}", "[]"),
	       "alice", NULL, &d);
	assert_int_equal(d.code, 0);
	policy_decision_release(&d);
	update(POD("{}", "[]"), POD("{\"hami.io/vgpu-node\":null}", "[]"),
	       "alice", NULL, &d);
	assert_int_equal(d.code, 0);
	policy_decision_release(&d);
	/* every key, in byte order, added, changed and removed at once */
	update(POD("{\"hami.io/vgpu-time\":\"1\",\"hami.io/bind-time\":\"2\"}",
		   "[]"),
	       POD("{\"hami.io/vgpu-node\":\"n\",\"hami.io/bind-time\":\"3\"}",
		   "[]"),
	       "", NULL, &d);
	assert_int_equal(d.code, 403);
	assert_string_equal(d.message,
		"annotation \"hami.io/bind-time\" is written by the scheduler and cannot be changed by \"\"; "
		"annotation \"hami.io/vgpu-node\" is written by the scheduler and cannot be changed by \"\"; "
		"annotation \"hami.io/vgpu-time\" is written by the scheduler and cannot be changed by \"\"");
	assert_int_equal(d.hits.count[GUARD_ANNOTATIONS][GUARD_DENIED], 3);
	policy_decision_release(&d);
	/* a wrong type in oldObject is named as such */
	update(POD("{\"hami.io/vgpu-node\":5}", "[]"), POD("{}", "[]"), "alice",
	       NULL, &d);
	assert_int_equal(d.code, 400);
	assert_string_equal(d.message,
		"oldObject.metadata.annotations[\"hami.io/vgpu-node\"]: expected a string, got a number");
	policy_decision_release(&d);
}

/* Decides a CREATE of text under cfg. */
static json_t *create(const char *text, struct policy_decision *d)
{
	json_t *pod = test_json(text);

	assert_int_equal(policy_decision_init(d), 0);
	assert_int_equal(policy_decide(&cfg, pod, d), 0);
	return pod;
}

static void test_guard__create_message_and_hits(void **state)
{
	struct policy_decision d;
	json_t *pod;

	(void)state;
	/* annotations first, then env by container and index; an error in
	 * the pod (16Gi) is replaced by the guard's 403 */
	pod = create("{\"metadata\":{\"annotations\":{\"hami.io/z-allocated\":\"\","
		     "\"hami.io/a-allocated\":\"x\"}},\"spec\":{\"initContainers\":"
		     "[{\"name\":\"i\",\"env\":[{\"name\":\"CUDA_OVERSUBSCRIBE\"}]}],"
		     "\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":"
		     "{\"nvidia.com/gpumem\":\"16Gi\"}},\"env\":["
		     "{\"name\":\"NVIDIA_VISIBLE_DEVICES\",\"valueFrom\":{}},"
		     "{\"name\":\"NVIDIA_VISIBLE_DEVICES\",\"value\":\"none\"},"
		     "{\"name\":\"CUDA_DEVICE_SM_LIMIT_3\",\"value\":\"9\"}]}]}}",
		     &d);
	assert_int_equal(d.code, 403);
	assert_string_equal(d.message,
		"annotation \"hami.io/a-allocated\" is written by the scheduler and cannot be set; "
		"annotation \"hami.io/z-allocated\" is written by the scheduler and cannot be set; "
		"container \"i\": env CUDA_OVERSUBSCRIBE=\"\" cannot be set; "
		"container \"c\": env NVIDIA_VISIBLE_DEVICES (valueFrom) cannot be set (allowed: \"none\", \"void\"); "
		"container \"c\": env CUDA_DEVICE_SM_LIMIT_3=\"9\" cannot be set");
	assert_int_equal(d.hits.count[GUARD_ANNOTATIONS][GUARD_DENIED], 2);
	assert_int_equal(d.hits.count[GUARD_ENV][GUARD_DENIED], 3);
	assert_int_equal(json_array_size(d.warnings), 0);
	policy_decision_release(&d);
	json_decref(pod);
}

static void test_guard__strip_and_warn_counts(void **state)
{
	struct policy_decision d;
	json_t *pod;

	(void)state;
	cfg.guards.annotation_policy = GUARD_POLICY_WARN;
	cfg.guards.env_policy = GUARD_POLICY_STRIP;
	pod = create(POD("{\"hami.io/vgpu-node\":\"n\"}",
			 "[{\"name\":\"CUDA_DISABLE_CONTROL\",\"value\":\"1\"},"
			 "{\"name\":\"X\",\"value\":\"1\"},"
			 "{\"name\":\"CUDA_DISABLE_CONTROL\",\"value\":\"2\"}]"),
		     &d);
	assert_int_equal(d.code, 0);
	assert_int_equal(d.hits.count[GUARD_ANNOTATIONS][GUARD_WARNED], 1);
	assert_int_equal(d.hits.count[GUARD_ENV][GUARD_STRIPPED], 2);
	assert_int_equal(patch_count(&d.patch), 2);
	assert_string_equal(json_string_value(json_object_get(
		json_array_get(d.patch.ops, 0), "path")), "/spec/containers/0/env/2");
	assert_string_equal(json_string_value(json_object_get(
		json_array_get(d.patch.ops, 1), "path")), "/spec/containers/0/env/0");
	assert_int_equal(json_array_size(d.warnings), 3);
	policy_decision_release(&d);
	json_decref(pod);
}

/*
 * Decides an UPDATE of pods/ephemeralcontainers (behaviour §4.1) of the
 * object and old texts; list: an EphemeralContainers object (Kubernetes
 * 1.16 to 1.21); validate: POST /validate.
 */
static void ephemeral(const char *object, const char *old, bool list,
		      bool validate, struct policy_decision *d)
{
	json_t *o = test_json(object), *p = test_json(old);
	struct policy_requester who = { "alice", NULL };
	struct policy_request req = { POLICY_EPHEMERAL, o, p, &who, list,
				      validate };

	assert_int_equal(policy_decision_init(d), 0);
	assert_int_equal(policy_decide_request(&cfg, &req, d), 0);
	json_decref(o);
	json_decref(p);
}

#define EPHEMERAL_POD(list)                                                   \
	"{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},\"spec\":{"          \
	"\"containers\":[{\"name\":\"c\"}],\"ephemeralContainers\":" list "}}"
#define EPHEMERAL_LIST(list)                                                  \
	"{\"kind\":\"EphemeralContainers\",\"apiVersion\":\"v1\","           \
	"\"metadata\":{\"name\":\"p\"},\"ephemeralContainers\":" list "}"
/* A CPU pod, and the same with a debug container added that reads a
 * ConfigMap whole. */
#define EPHEMERAL_POD_CPU EPHEMERAL_POD("[]")
#define EPHEMERAL_POD_CPU_ADDED                                               \
	EPHEMERAL_POD("[{\"name\":\"dbg\",\"envFrom\":[{\"configMapRef\":" \
		      "{\"name\":\"gpu-env\"}}]}]")
#define EPHEMERAL_OLD "{\"name\":\"old\",\"env\":[{\"name\":" \
	"\"CUDA_DISABLE_CONTROL\",\"value\":\"0\"}]}"
#define EPHEMERAL_ADDED "{\"name\":\"dbg\",\"env\":[{\"name\":\"TERM\"," \
	"\"value\":\"x\"},{\"name\":\"CUDA_DISABLE_CONTROL\",\"value\":\"1\"}]}"

/*
 * The strip rule of an ephemeral container (behaviour §4.1, §4.2): under
 * env policy strip, /mutate removes the guarded entry of the container the
 * UPDATE adds, by a patch with its warning, as on a CREATE; /validate,
 * which cannot patch, denies it.  Containers already there are not
 * looked at.  Both shapes of the request.
 */
static void test_guard__ephemeral_strip(void **state)
{
	static const struct {
		const char *object, *old, *path;
		bool list;
	} shapes[] = {
		{ EPHEMERAL_POD("[" EPHEMERAL_OLD "," EPHEMERAL_ADDED "]"),
		  EPHEMERAL_POD("[" EPHEMERAL_OLD "]"),
		  "/spec/ephemeralContainers/1/env/1", false },
		{ EPHEMERAL_LIST("[" EPHEMERAL_OLD "," EPHEMERAL_ADDED "]"),
		  EPHEMERAL_LIST("[" EPHEMERAL_OLD "]"),
		  "/ephemeralContainers/1/env/1", true },
	};
	struct policy_decision d;
	size_t i;

	(void)state;
	cfg.guards.env_policy = GUARD_POLICY_STRIP;
	for (i = 0; i < NELEM(shapes); i++) {
		ephemeral(shapes[i].object, shapes[i].old, shapes[i].list,
			  false, &d);
		assert_int_equal(d.code, 0);
		assert_int_equal(patch_count(&d.patch), 1);
		assert_string_equal(json_string_value(json_object_get(
			json_array_get(d.patch.ops, 0), "op")), "remove");
		assert_string_equal(json_string_value(json_object_get(
			json_array_get(d.patch.ops, 0), "path")),
			shapes[i].path);
		assert_int_equal(json_array_size(d.warnings), 1);
		assert_string_equal(json_string_value(json_array_get(
			d.warnings, 0)),
			"container \"dbg\": removed env CUDA_DISABLE_CONTROL=\"1\"");
		assert_int_equal(d.hits.count[GUARD_ENV][GUARD_STRIPPED], 1);
		assert_int_equal(d.hits.count[GUARD_ENV][GUARD_DENIED], 0);
		policy_decision_release(&d);

		ephemeral(shapes[i].object, shapes[i].old, shapes[i].list,
			  true, &d);
		assert_int_equal(d.code, 403);
		assert_string_equal(d.message,
			"container \"dbg\": env CUDA_DISABLE_CONTROL=\"1\" cannot be set");
		assert_int_equal(patch_count(&d.patch), 0);
		assert_int_equal(d.hits.count[GUARD_ENV][GUARD_STRIPPED], 0);
		assert_int_equal(d.hits.count[GUARD_ENV][GUARD_DENIED], 1);
		policy_decision_release(&d);
	}
	/* deny denies from both */
	cfg.guards.env_policy = GUARD_POLICY_DENY;
	ephemeral(shapes[0].object, shapes[0].old, false, false, &d);
	assert_int_equal(d.code, 403);
	assert_int_equal(patch_count(&d.patch), 0);
	policy_decision_release(&d);
}

/*
 * The privileged policy of an ephemeralcontainers UPDATE of a Pod
 * (behaviour §4.1): the pod is a vGPU pod by oldObject's containers, the
 * pod as stored; request.object's are the tenant's to write.  A wrong type
 * in oldObject's containers denies with 400 and names it.
 */
static void test_guard__ephemeral_privileged_by_old_object(void **state)
{
#define EPH_POD(containers, ephemeral)                                        \
	"{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},\"spec\":{"      \
	"\"containers\":" containers ",\"ephemeralContainers\":" ephemeral "}}"
#define CPU_CTRS "[{\"name\":\"c\"}]"
#define GPU_CTRS "[{\"name\":\"c\",\"resources\":{\"limits\":" \
	"{\"nvidia.com/gpu\":\"1\"}}}]"
#define PRIV_DBG "[{\"name\":\"dbg\",\"securityContext\":" \
	"{\"privileged\":true}}]"
	static const struct {
		const char *object, *old;
		int code;
	} cases[] = {
		{ EPH_POD(CPU_CTRS, PRIV_DBG), EPH_POD(GPU_CTRS, "[]"), 403 },
		{ EPH_POD(GPU_CTRS, PRIV_DBG), EPH_POD(CPU_CTRS, "[]"), 0 },
		{ EPH_POD(CPU_CTRS, PRIV_DBG), "null", 403 },
		{ EPH_POD(CPU_CTRS, PRIV_DBG), EPH_POD("\"x\"", "[]"), 400 },
	};
	struct policy_decision d;
	size_t i;
	int v;

	(void)state;
	for (i = 0; i < NELEM(cases); i++) {
		for (v = 0; v < 2; v++) {
			ephemeral(cases[i].object, cases[i].old, false, v, &d);
			assert_int_equal(d.code, cases[i].code);
			if (d.code == 403)
				assert_string_equal(d.message,
					"container \"dbg\": privileged containers can see every GPU of the node (privilegedPolicy: deny)");
			if (d.code == 400)
				assert_string_equal(d.message,
					"oldObject.spec.containers: expected an array, got a string");
			policy_decision_release(&d);
		}
	}
#undef EPH_POD
#undef CPU_CTRS
#undef GPU_CTRS
#undef PRIV_DBG
}

/* Decides a Binding of the annotations ann (JSON object text). */
static void bind(const char *ann, const char *user, const char *groups,
		 struct policy_decision *d)
{
	char text[512];
	json_t *b, *g = groups ? test_json(groups) : NULL;
	struct policy_requester who = { user, g };
	struct policy_request req = { POLICY_BINDING, NULL, NULL, &who, false,
				      false };

	snprintf(text, sizeof(text),
		 "{\"kind\":\"Binding\",\"metadata\":{\"name\":\"p\","
		 "\"annotations\":%s},\"target\":{\"kind\":\"Node\","
		 "\"name\":\"n\"}}", ann);
	b = test_json(text);
	req.object = b;
	assert_int_equal(policy_decision_init(d), 0);
	assert_int_equal(policy_decide_request(&cfg, &req, d), 0);
	assert_int_equal(patch_count(&d->patch), 0); /* never a patch */
	json_decref(b);
	json_decref(g);
}

/* A Binding: every guarded key present counts, unless a writer sends it. */
static void test_guard__binding(void **state)
{
	struct policy_decision d;

	(void)state;
	bind("{\"hami.io/vgpu-node\":\"n\",\"team\":\"a\"}", "alice", NULL, &d);
	assert_int_equal(d.code, 403);
	assert_string_equal(d.message,
		"annotation \"hami.io/vgpu-node\" is written by the scheduler and cannot be changed by \"alice\"");
	assert_int_equal(d.hits.count[GUARD_ANNOTATIONS][GUARD_DENIED], 1);
	policy_decision_release(&d);
	bind("{\"hami.io/vgpu-node\":\"n\"}", SCHED, NULL, &d);
	assert_int_equal(d.code, 0);
	policy_decision_release(&d);
	/* null is absent */
	bind("{\"hami.io/vgpu-node\":null}", "alice", NULL, &d);
	assert_int_equal(d.code, 0);
	policy_decision_release(&d);
	bind("{\"hami.io/vgpu-node\":1}", "alice", NULL, &d);
	assert_int_equal(d.code, 400);
	assert_string_equal(d.message,
		"metadata.annotations[\"hami.io/vgpu-node\"]: expected a string, got a number");
	policy_decision_release(&d);
	/* strip cannot patch a Binding: it denies */
	cfg.guards.annotation_policy = GUARD_POLICY_STRIP;
	bind("{\"hami.io/vgpu-node\":\"n\"}", "alice", "[\"ops\"]", &d);
	assert_int_equal(d.code, 403);
	policy_decision_release(&d);
	cfg.guards.annotation_policy = GUARD_POLICY_OFF;
	assert_false(policy_wants(&cfg, POLICY_BINDING));
	cfg.guards.annotation_policy = GUARD_POLICY_DENY;
	assert_true(policy_wants(&cfg, POLICY_BINDING));
}

/*
 * The mount guard: after env in the one message, in container order;
 * counted under its own label; a long path (past the stack buffer) is
 * normalised too; warn and off.
 */
static void test_guard__mounts(void **state)
{
	struct policy_decision d;
	char *long_path, *text, *want;
	size_t n = 2000, i;
	json_t *pod;

	(void)state;
	assert_string_equal(guard_kind_name(GUARD_MOUNTS), "volumeMounts");
	long_path = malloc(n + 1);
	assert_non_null(long_path);
	/* "/./././..." then the device directory */
	for (i = 0; i < n - 40; i += 2)
		memcpy(long_path + i, "/.", 2);
	snprintf(long_path + i, n + 1 - i,
		 "/var/run/nvidia-container-devices/0");
	text = malloc(n + 400);
	want = malloc(n + 400);
	assert_non_null(text);
	assert_non_null(want);
	snprintf(text, n + 400,
		 "{\"spec\":{\"initContainers\":[{\"name\":\"i\","
		 "\"volumeMounts\":[{\"mountPath\":\"/var/run/secrets\"},"
		 "{\"mountPath\":\"%s\"}]}],\"containers\":[{\"name\":\"c\","
		 "\"env\":[{\"name\":\"CUDA_REDIRECT\",\"value\":\"x\"}],"
		 "\"volumeMounts\":[{\"mountPath\":\"/var/run/nvidia-container-devices\"}]}]}}",
		 long_path);
	pod = create(text, &d);
	assert_int_equal(d.code, 403);
	snprintf(want, n + 400,
		 "container \"c\": env CUDA_REDIRECT=\"x\" cannot be set; "
		 "container \"i\": volume mount at \"%.61s...\" is at or below "
		 "\"/var/run/nvidia-container-devices\" (guards.volumeMounts); "
		 "container \"c\": volume mount at \"/var/run/nvidia-container-devices\" "
		 "is at or below \"/var/run/nvidia-container-devices\" (guards.volumeMounts)",
		 long_path);
	assert_string_equal(d.message, want);
	assert_int_equal(d.hits.count[GUARD_MOUNTS][GUARD_DENIED], 2);
	assert_int_equal(d.hits.count[GUARD_ENV][GUARD_DENIED], 1);
	policy_decision_release(&d);
	json_decref(pod);

	cfg.guards.mount_policy = GUARD_POLICY_WARN;
	cfg.guards.env_policy = GUARD_POLICY_OFF;
	pod = create(text, &d);
	assert_int_equal(d.code, 0);
	assert_int_equal(d.hits.count[GUARD_MOUNTS][GUARD_WARNED], 2);
	assert_int_equal(json_array_size(d.warnings), 2);
	assert_non_null(strstr(json_string_value(json_array_get(d.warnings, 0)),
			       "container \"i\": volume mount at"));
	policy_decision_release(&d);
	json_decref(pod);

	cfg.guards.mount_policy = GUARD_POLICY_OFF;
	pod = create(text, &d);
	assert_int_equal(d.code, 0);
	assert_int_equal(d.hits.count[GUARD_MOUNTS][GUARD_WARNED], 0);
	assert_int_equal(json_array_size(d.warnings), 0);
	policy_decision_release(&d);
	json_decref(pod);
	free(long_path);
	free(text);
	free(want);
}

/* The audit list: the first hits with keys masked and cut, then a count. */
static void test_guard__hits_listed(void **state)
{
	struct guard_hits h;
	char out[4096], key[100];
	size_t i;

	(void)state;
	memset(&h, 0, sizeof(h));
	guard_hits_format(&h, out, sizeof(out));
	assert_string_equal(out, "");
	guard_hits_add(&h, GUARD_ANNOTATIONS, GUARD_STRIPPED, "a\tb\0c", 5);
	guard_hits_add(&h, GUARD_MOUNTS, GUARD_WARNED, "/x", 2);
	guard_hits_format(&h, out, sizeof(out));
	assert_string_equal(out, "stripped annotations abc; warned volumeMounts /x");
	memset(key, 'k', sizeof(key));
	for (i = 0; i < 10; i++)
		guard_hits_add(&h, GUARD_ENV, GUARD_DENIED, key, sizeof(key));
	assert_int_equal(h.nlisted, GUARD_HITS_LISTED);
	assert_int_equal(h.count[GUARD_ENV][GUARD_DENIED], 10);
	assert_int_equal(strlen(h.listed[2].key), 63);
	assert_string_equal(h.listed[2].key + 60, "...");
	guard_hits_format(&h, out, sizeof(out));
	assert_non_null(strstr(out, "; ... and 4 more"));
	/* a small buffer is cut, never overrun */
	guard_hits_format(&h, out, 20);
	assert_string_equal(out, "stripped annotation");
}

/* A user name holding a NUL byte is nobody's, not a writer's prefix. */
static void test_guard__username_with_nul(void **state)
{
	static const char body[] =
		"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
		"\"request\":{\"uid\":\"u\",\"kind\":{\"group\":\"\",\"version\":\"v1\","
		"\"kind\":\"Pod\"},\"operation\":\"UPDATE\",\"userInfo\":{\"username\":"
		"\"" SCHED "\\u0000x\"},\"object\":{\"metadata\":{\"annotations\":"
		"{\"hami.io/vgpu-node\":\"n\"}}},\"oldObject\":{\"metadata\":{}}}}";
	struct review_answer ans;

	(void)state;
	review_answer_init(&ans);
	assert_int_equal(review_handlen(&cfg, body, sizeof(body) - 1, &ans), 0);
	assert_int_equal(ans.outcome, REVIEW_DENIED);
	assert_non_null(strstr(ans.body, "cannot be changed by \\\"\\\""));
	review_answer_release(&ans);
}

/*
 * envFromPolicy and overwriteEnv (behaviour §4.6, step 2a): an added
 * container without a vGPU sees no GPU once /mutate writes its
 * NVIDIA_VISIBLE_DEVICES=none, so its envFrom is no route past the env
 * guard; /validate writes nothing, so there the same container, without
 * that entry, is denied.
 */
static void test_guard__env_from_overwrite_env(void **state)
{
	struct policy_decision d;

	(void)state;
	cfg.devices[0].overwrite_env = true;
	cfg.any_overwrite_env = true;
	cfg.env_from_policy = CONFIG_POLICY_DENY;
	ephemeral(EPHEMERAL_POD_CPU_ADDED, EPHEMERAL_POD_CPU, false, false, &d);
	assert_int_equal(d.code, 0);
	policy_decision_release(&d);
	ephemeral(EPHEMERAL_POD_CPU_ADDED, EPHEMERAL_POD_CPU, false, true, &d);
	assert_int_equal(d.code, 403);
	if (!d.message || !strstr(d.message, "container \"dbg\": envFrom may "
				  "set guarded ") || !strstr(d.message,
				  ": configMap \"gpu-env\""))
		fail_msg("message: %s", d.message ? d.message : "(none)");
	policy_decision_release(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		TEST_WITH_CONFIG(test_guard__update_writers),
		TEST_WITH_CONFIG(test_guard__update_groups),
		TEST_WITH_CONFIG(test_guard__update_compares),
		TEST_WITH_CONFIG(test_guard__create_message_and_hits),
		TEST_WITH_CONFIG(test_guard__strip_and_warn_counts),
		TEST_WITH_CONFIG(test_guard__mounts),
		TEST_WITH_CONFIG(test_guard__binding),
		TEST_WITH_CONFIG(test_guard__ephemeral_strip),
		TEST_WITH_CONFIG(test_guard__ephemeral_privileged_by_old_object),
		TEST_WITH_CONFIG(test_guard__env_from_overwrite_env),
		TEST_WITH_CONFIG(test_guard__hits_listed),
		TEST_WITH_CONFIG(test_guard__username_with_nul),
	};

	return cmocka_run_group_tests_name("guard", tests, NULL, NULL);
}
