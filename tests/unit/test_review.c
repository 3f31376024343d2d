/*
 * test_review.c - the AdmissionReview codec end to end: envelope checks,
 * answers, log fields, and every out-of-memory path (a failing allocator
 * behind both jansson and the webhook's own allocations, which this program
 * is linked to wrap).
 */
#define TEST_CONFIG
#define TEST_STACK
#include "test.h"

#include "config.h"
#include "review.h"
#include "review_pod.h"

#include <unistd.h>

/* ------------------------------------------------------------------------
 * A failing allocator: after fail_after successful allocations, every
 * allocation fails.  -1 never fails.
 */
static long fail_after = -1;

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
char *__wrap_strdup(const char *s);

static int should_fail(void)
{
	if (fail_after < 0)
		return 0;
	if (fail_after == 0)
		return 1;
	fail_after--;
	return 0;
}

void *__wrap_malloc(size_t n)
{
	return should_fail() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size)
{
	return should_fail() ? NULL : __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t n)
{
	return should_fail() ? NULL : __real_realloc(p, n);
}

char *__wrap_strdup(const char *s)
{
	return should_fail() ? NULL : __real_strdup(s);
}

static void *json_malloc(size_t n)
{
	return should_fail() ? NULL : __real_malloc(n);
}

static void json_free(void *p)
{
	free(p);
}

/* ------------------------------------------------------------------------ */

#define POD_CREATE(api, uid, object)                                            \
	"{\"apiVersion\":\"" api "\",\"kind\":\"AdmissionReview\",\"request\":{" \
	"\"uid\":\"" uid "\",\"kind\":{\"group\":\"\",\"version\":\"v1\","       \
	"\"kind\":\"Pod\"},\"resource\":{\"group\":\"\",\"version\":\"v1\","     \
	"\"resource\":\"pods\"},\"namespace\":\"ml\",\"operation\":\"CREATE\","  \
	"\"userInfo\":{\"username\":\"system:serviceaccount:kube-system:"        \
	"replicaset-controller\"},\"object\":" object ",\"oldObject\":null,"     \
	"\"dryRun\":false,\"options\":{\"kind\":\"CreateOptions\","              \
	"\"apiVersion\":\"meta.k8s.io/v1\"}}}"

#define GUARDED_POD                                                            \
	"{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":"    \
	"\"c\",\"env\":[{\"name\":\"CUDA_REDIRECT\",\"value\":\"/x.so\"}]}]}}"

#define GPU_POD                                                                \
	"{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{"                 \
	"\"generateName\":\"train-\",\"namespace\":\"ml\"},\"spec\":{"           \
	"\"containers\":[{\"name\":\"cuda\",\"image\":\"cuda\",\"resources\":{"  \
	"\"limits\":{\"nvidia.com/gpu\":\"1\"},\"requests\":{"                   \
	"\"nvidia.com/gpu\":\"1\"}}},{\"name\":\"side\",\"image\":\"b\","        \
	"\"resources\":{},\"env\":[{\"name\":\"OMP_NUM_THREADS\","               \
	"\"value\":\"0\"}]}],\"schedulerName\":\"default-scheduler\","           \
	"\"tolerations\":[{\"key\":\"node.kubernetes.io/not-ready\","            \
	"\"operator\":\"Exists\",\"effect\":\"NoExecute\","                      \
	"\"tolerationSeconds\":300}]},\"status\":{}}"

/* Runs body through review_handlen; returns the parsed JSON answer or NULL. */
static json_t *run(const char *body, struct review_answer *ans)
{
	review_answer_init(ans);
	review_handlen(&cfg, body, strlen(body), ans);
	if (ans->http_status != 200)
		return NULL;
	return json_loadb(ans->body, ans->body_len, 0, NULL);
}

static void test_review__not_a_review(void **state)
{
	static const char *const bodies[][2] = {
		{ "", "not JSON" },
		{ "{\"apiVersion\":", "not JSON" },
		{ "[1]", "not a JSON object" },
		{ "{\"apiVersion\":\"admission.k8s.io/v2\",\"kind\":\"AdmissionReview\","
		  "\"request\":{\"uid\":\"u\"}}",
		  "apiVersion" },
		{ "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"Review\","
		  "\"request\":{\"uid\":\"u\"}}",
		  "kind" },
		{ "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\"}",
		  "request" },
		{ "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
		  "\"request\":{\"uid\":\"\"}}",
		  "uid" },
		{ "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
		  "\"request\":{\"uid\":7}}",
		  "uid" },
		{ "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
		  "\"request\":{\"uid\":\"a\",\"uid\":\"b\"}}",
		  "duplicate" },
		{ "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
		  "\"request\":{\"uid\":\"a\"}}\n\x01",
		  "not JSON" },
	};
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(bodies); i++) {
		struct review_answer ans;

		assert_null(run(bodies[i][0], &ans));
		assert_int_equal(ans.http_status, 400);
		assert_int_equal(ans.outcome, REVIEW_ERROR);
		assert_non_null(strstr(ans.body, bodies[i][1]));
		assert_null(strchr(ans.body, '\n'));
		assert_string_equal(ans.content_type,
				    "text/plain; charset=utf-8");
		review_answer_release(&ans);
	}
}

static void test_review__patched(void **state)
{
	struct review_answer ans;
	json_t *out, *r;

	(void)state;
	out = run(POD_CREATE("admission.k8s.io/v1beta1", "u-1", GPU_POD), &ans);
	assert_non_null(out);
	assert_string_equal(json_string_value(json_object_get(out, "apiVersion")),
			    "admission.k8s.io/v1beta1");
	assert_string_equal(json_string_value(json_object_get(out, "kind")),
			    "AdmissionReview");
	r = json_object_get(out, "response");
	assert_string_equal(json_string_value(json_object_get(r, "uid")), "u-1");
	assert_true(json_is_true(json_object_get(r, "allowed")));
	assert_string_equal(json_string_value(json_object_get(r, "patchType")),
			    "JSONPatch");
	assert_true(json_is_string(json_object_get(r, "patch")));
	assert_int_equal(json_array_size(json_object_get(r, "warnings")), 1);
	assert_int_equal(ans.outcome, REVIEW_PATCHED);
	/* limits, requests, schedulerName, toleration */
	assert_int_equal(ans.ops, 4);
	assert_string_equal(ans.uid, "u-1");
	assert_string_equal(ans.namespace_, "ml");
	assert_string_equal(ans.name, "train-");
	assert_string_equal(ans.operation, "CREATE");
	assert_string_equal(ans.content_type, "application/json");
	json_decref(out);
	review_answer_release(&ans);
}

static void test_review__same_bytes(void **state)
{
	struct review_answer a, b;
	const char *body = POD_CREATE("admission.k8s.io/v1", "u", GPU_POD);

	(void)state;
	review_answer_init(&a);
	review_answer_init(&b);
	assert_int_equal(review_handlen(&cfg, body, strlen(body), &a), 0);
	assert_int_equal(review_handlen(&cfg, body, strlen(body), &b), 0);
	assert_int_equal(a.body_len, b.body_len);
	assert_memory_equal(a.body, b.body, a.body_len);
	review_answer_release(&a);
	review_answer_release(&b);
}

static void test_review__allowed_unchanged(void **state)
{
	static const char *const bodies[] = {
		/* not a Pod */
		"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
		"\"request\":{\"uid\":\"u\",\"kind\":{\"group\":\"apps\","
		"\"version\":\"v1\",\"kind\":\"Deployment\"},\"operation\":\"CREATE\","
		"\"object\":" GPU_POD "}}",
		/* a Pod of another group */
		"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
		"\"request\":{\"uid\":\"u\",\"kind\":{\"group\":\"x.io\","
		"\"version\":\"v1\",\"kind\":\"Pod\"},\"operation\":\"CREATE\","
		"\"object\":" GPU_POD "}}",
		/* UPDATE that changes no guarded annotation */
		"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
		"\"request\":{\"uid\":\"u\",\"kind\":{\"group\":\"\",\"version\":\"v1\","
		"\"kind\":\"Pod\"},\"operation\":\"UPDATE\",\"object\":" GPU_POD
		",\"oldObject\":" GPU_POD "}}",
		/* a subresource */
		"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
		"\"request\":{\"uid\":\"u\",\"kind\":{\"group\":\"\",\"version\":\"v1\","
		"\"kind\":\"Pod\"},\"subResource\":\"binding\",\"operation\":\"CREATE\","
		"\"object\":" GPU_POD "}}",
		/* no kind */
		"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
		"\"request\":{\"uid\":\"u\",\"operation\":\"CREATE\",\"object\":" GPU_POD
		"}}",
	};
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(bodies); i++) {
		struct review_answer ans;
		json_t *out = run(bodies[i], &ans), *r;

		assert_non_null(out);
		r = json_object_get(out, "response");
		assert_true(json_is_true(json_object_get(r, "allowed")));
		assert_null(json_object_get(r, "patch"));
		assert_null(json_object_get(r, "patchType"));
		assert_null(json_object_get(r, "warnings"));
		assert_int_equal(ans.outcome, REVIEW_ALLOWED);
		assert_int_equal(ans.ops, 0);
		json_decref(out);
		review_answer_release(&ans);
	}
}

static void test_review__bad_object(void **state)
{
	static const char *const objects[] = {
		POD_CREATE("admission.k8s.io/v1", "u", "null"),
		POD_CREATE("admission.k8s.io/v1", "u", "[]"),
		"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
		"\"request\":{\"uid\":\"u\",\"kind\":{\"group\":\"\",\"version\":\"v1\","
		"\"kind\":\"Pod\"},\"operation\":\"CREATE\"}}",
		POD_CREATE("admission.k8s.io/v1", "u",
			   "{\"spec\":{\"containers\":{}}}"),
	};
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(objects); i++) {
		struct review_answer ans;
		json_t *out = run(objects[i], &ans), *r, *status;

		assert_non_null(out);
		r = json_object_get(out, "response");
		status = json_object_get(r, "status");
		assert_true(json_is_false(json_object_get(r, "allowed")));
		assert_int_equal(json_integer_value(json_object_get(status, "code")),
				 400);
		assert_string_equal(json_string_value(json_object_get(status,
								      "reason")),
				    "BadRequest");
		assert_null(json_object_get(r, "patch"));
		assert_int_equal(ans.outcome, REVIEW_DENIED);
		json_decref(out);
		review_answer_release(&ans);
	}
}

static void test_review__log_fields_masked(void **state)
{
	struct review_answer ans;
	json_t *out;

	(void)state;
	out = run(POD_CREATE("admission.k8s.io/v1", "a\\nb\\u001bc",
			     "{\"metadata\":{\"name\":\"p\\td\"},\"spec\":{"
			     "\"containers\":[{\"name\":\"c\"}]}}"),
		  &ans);
	assert_non_null(out);
	assert_string_equal(ans.uid, "abc");
	assert_string_equal(ans.name, "pd");
	/* the answer echoes the uid exactly */
	assert_string_equal(json_string_value(json_object_get(
				    json_object_get(out, "response"), "uid")),
			    "a\nb\x1b" "c");
	json_decref(out);
	review_answer_release(&ans);
}

/*
 * Fails the n-th allocation of review_handlen(body) for every n until it
 * succeeds.  Each failing run must answer 500 (or leave no body at all
 * when even that failed), never a wrong 200, and leak nothing; the run
 * that succeeds gives the bytes of a run without failures, whose outcome
 * must be want.  Returns the number of failing runs.
 */
static long fail_each_allocation(const char *body, enum review_outcome want)
{
	struct review_answer ref, ans;
	long n;

	review_answer_init(&ref);
	assert_int_equal(review_handlen(&cfg, body, strlen(body), &ref), 0);
	assert_int_equal(ref.outcome, want);
	json_set_alloc_funcs(json_malloc, json_free);
	for (n = 0;; n++) {
		int rc;

		review_answer_init(&ans);
		fail_after = n;
		rc = review_handlen(&cfg, body, strlen(body), &ans);
		fail_after = -1;
		if (rc == 0) {
			assert_int_equal(ans.http_status, 200);
			assert_int_equal(ans.body_len, ref.body_len);
			assert_memory_equal(ans.body, ref.body, ref.body_len);
			review_answer_release(&ans);
			break;
		}
		if (ans.http_status != 500)
			fail_msg("allocation %ld failed: %d %s", n,
				 ans.http_status, ans.body ? ans.body : "");
		assert_int_equal(ans.outcome, REVIEW_ERROR);
		review_answer_release(&ans);
		assert_true(n < 100000);
	}
	json_set_alloc_funcs(malloc, free);
	review_answer_release(&ref);
	return n;
}

/* A patched answer, and a denial with its audit fields. */
static void test_review__out_of_memory(void **state)
{
	long n;

	(void)state;
	n = fail_each_allocation(POD_CREATE("admission.k8s.io/v1", "u",
					    GPU_POD), REVIEW_PATCHED);
	print_message("review: %ld allocation failures answered 500\n", n);
	assert_true(n > 20);
	assert_true(fail_each_allocation(POD_CREATE("admission.k8s.io/v1", "u",
						    GUARDED_POD),
					 REVIEW_DENIED) > 20);
}

/* fmt with each "%s" replaced by the next of up to two strings. */
static char *fill(const char *fmt, const char *a, const char *b)
{
	size_t n = strlen(fmt) + strlen(a) + (b ? strlen(b) : 0) + 1;
	char *s = malloc(n);

	assert_non_null(s);
	snprintf(s, n, fmt, a, b ? b : "");
	return s;
}

/*
 * A Pod CREATE as the API server sends it after a tenant gave
 * managedFields (%s: the fieldsV1 of its entry) on a pod with a forged
 * scheduler annotation and NVIDIA_VISIBLE_DEVICES=all (%s: "all"), or on a
 * plain GPU pod (%s: a harmless value).
 */
#define TENANT_POD                                                             \
	POD_CREATE("admission.k8s.io/v1", "u-deep",                            \
	"{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{"                \
	"\"name\":\"escape\",\"namespace\":\"ml\",\"managedFields\":[{"       \
	"\"manager\":\"kubectl-create\",\"operation\":\"Update\","             \
	"\"apiVersion\":\"v1\",\"time\":\"2024-05-01T10:00:00Z\","             \
	"\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:spec\":{}}},{"           \
	"\"manager\":\"tenant\",\"operation\":\"Update\",\"apiVersion\":"      \
	"\"v1\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":%s}]},\"spec\":{"     \
	"\"containers\":[{\"name\":\"cuda\",\"image\":\"cuda\",\"env\":[{"      \
	"\"name\":\"NVIDIA_VISIBLE_DEVICES\",\"value\":\"%s\"}],"              \
	"\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}")

/* The answer to body, run on a thread with a 256 KiB stack. */
struct stack_review {
	const char *body;
	struct review_answer ans;
};

static void *stack_review_run(void *arg)
{
	struct stack_review *job = arg;

	review_answer_init(&job->ans);
	review_handlen(&cfg, job->body, strlen(job->body), &job->ans);
	return NULL;
}

/*
 * A value the policy does not read is skipped at any depth, with the
 * same stack: managedFields nested 2,100 and 1,000,000 deep (an escape: a
 * body jansson refuses was answered 400, which a fail-open API server
 * takes as a pass) give the answer they give shallow, on a thread of 256
 * KiB of stack.
 */
static void test_review__deep_skipped_value_decided(void **state)
{
	static const char *const values[] = { "all", "none" };
	static const size_t depths[] = { 2100, 1000000 };
	size_t i, k;

	(void)state;
	for (i = 0; i < NELEM(values); i++) {
		char *flat = fill(TENANT_POD, "{\"f:metadata\":{}}", values[i]);
		struct stack_review ref = { flat, { 0 } };
		size_t base = test_stack_used(stack_review_run, &ref,
					      256 * 1024);

		assert_int_equal(ref.ans.http_status, 200);
		assert_int_equal(ref.ans.outcome, i == 0 ? REVIEW_DENIED :
				 REVIEW_PATCHED);
		for (k = 0; k < NELEM(depths); k++) {
			char *deep = test_nest(depths[k], "{\"f:a\":", "{}", "}");
			char *body = fill(TENANT_POD, deep, values[i]);
			struct stack_review job = { body, { 0 } };
			size_t used = test_stack_used(stack_review_run, &job,
						      256 * 1024);

			print_message("review: NVIDIA_VISIBLE_DEVICES=%s, "
				      "managedFields %zu deep: %s, %zu bytes "
				      "of stack (%zu shallow)\n", values[i],
				      depths[k],
				      review_outcome_name(job.ans.outcome),
				      used, base);
			assert_int_equal(job.ans.http_status, 200);
			assert_int_equal(job.ans.body_len, ref.ans.body_len);
			assert_memory_equal(job.ans.body, ref.ans.body,
					    ref.ans.body_len);
			assert_true(used <= base + 1024);
			review_answer_release(&job.ans);
			free(body);
			free(deep);
		}
		if (i == 0)
			assert_non_null(strstr(ref.ans.body, "\"code\":403"));
		review_answer_release(&ref.ans);
		free(flat);
	}
}

/*
 * A body whose deep value is one the webhook builds: a denial with 400
 * inside an AdmissionReview that echoes the uid and apiVersion and names
 * the path, the place and the limit.
 */
static void test_review__deep_built_value_denied(void **state)
{
	static const struct {
		const char *fmt;
		const char *path;
		const char *kind, *subresource, *user, *dry_run;
	} cases[] = {
		{ POD_CREATE("admission.k8s.io/v1beta1", "a\\nb",
			     "{\"metadata\":{\"name\":\"p\",\"annotations\":{"
			     "\"x\":%s}},\"spec\":{}}"),
		  "request.object.metadata.annotations.x[0][0][0]", "Pod", "",
		  "system:serviceaccount:kube-system:replicaset-controller",
		  "false" },
		{ "{\"apiVersion\":\"admission.k8s.io/v1beta1\",\"request\":{"
		  "\"uid\":\"a\\nb\",\"userInfo\":{\"extra\":%s},"
		  "\"operation\":\"UPDATE\",\"object\":{\"metadata\":"
		  "{\"generateName\":\"p\"}}},\"kind\":\"AdmissionReview\"}",
		  "request.userInfo", "", "", "", "" },
		{ "{\"apiVersion\":\"admission.k8s.io/v1beta1\",\"request\":{"
		  "\"uid\":\"a\\nb\",\"kind\":{\"group\":\"\",\"kind\":"
		  "\"EphemeralContainers\"},\"subResource\":"
		  "\"ephemeralcontainers\",\"dryRun\":true,\"userInfo\":"
		  "{\"username\":\"alice\",\"extra\":%s},"
		  "\"operation\":\"UPDATE\",\"object\":{\"metadata\":"
		  "{\"generateName\":\"p\"}}},\"kind\":\"AdmissionReview\"}",
		  "request.userInfo", "EphemeralContainers",
		  "ephemeralcontainers", "alice", "true" },
	};
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(cases); i++) {
		char *deep = test_nest(2100, "[", "", "]");
		char *body = fill(cases[i].fmt, deep, NULL);
		struct review_answer ans;
		json_t *out = run(body, &ans), *r, *status;
		const char *msg;

		assert_non_null(out);
		assert_string_equal(json_string_value(json_object_get(out,
					"apiVersion")), "admission.k8s.io/v1beta1");
		r = json_object_get(out, "response");
		assert_string_equal(json_string_value(json_object_get(r, "uid")),
				    "a\nb");
		assert_true(json_is_false(json_object_get(r, "allowed")));
		status = json_object_get(r, "status");
		assert_int_equal(json_integer_value(json_object_get(status,
								    "code")),
				 400);
		assert_string_equal(json_string_value(json_object_get(status,
								      "reason")),
				    "BadRequest");
		msg = json_string_value(json_object_get(status, "message"));
		if (strncmp(msg, cases[i].path, strlen(cases[i].path)) ||
		    !strstr(msg, "nested deeper than 2048 levels") ||
		    !strstr(msg, "(line 1, column "))
			fail_msg("message: %s", msg);
		assert_null(json_object_get(r, "patch"));
		assert_int_equal(ans.outcome, REVIEW_DENIED);
		assert_string_equal(ans.uid, "ab");
		assert_string_equal(ans.name, "p");
		/* the audit fields of a denial (behaviour §6, logs) */
		assert_true(ans.audit);
		assert_int_equal(ans.code, 400);
		assert_non_null(ans.message);
		assert_string_equal(ans.message, msg);
		assert_string_equal(ans.kind, cases[i].kind);
		assert_string_equal(ans.subresource, cases[i].subresource);
		assert_string_equal(ans.user, cases[i].user);
		assert_string_equal(ans.dry_run, cases[i].dry_run);
		json_decref(out);
		review_answer_release(&ans);
		free(body);
		free(deep);
	}
}

/*
 * A deep value to build in a body that is not an AdmissionReview, or not
 * JSON further on, still gets the 400 text answer of behaviour §5.1.
 */
static void test_review__deep_built_value_not_a_review(void **state)
{
	static const char *const fmts[][2] = {
		{ "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"Review\","
		  "\"request\":{\"uid\":\"u\",\"namespace\":%s}}",
		  "not an AdmissionReview: kind must be AdmissionReview" },
		{ "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":"
		  "\"AdmissionReview\",\"request\":{\"uid\":%s}}",
		  "not an AdmissionReview: request.uid must be a non-empty "
		  "string" },
		{ "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":"
		  "\"AdmissionReview\",\"request\":{\"uid\":\"u\","
		  "\"namespace\":%s,\"x\":tru}}",
		  "request body is not JSON: invalid token" },
	};
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(fmts); i++) {
		char *deep = test_nest(3000, "[", "", "]");
		char *body = fill(fmts[i][0], deep, NULL);
		struct review_answer ans;

		assert_null(run(body, &ans));
		assert_int_equal(ans.http_status, 400);
		assert_int_equal(ans.outcome, REVIEW_ERROR);
		if (strncmp(ans.body, fmts[i][1], strlen(fmts[i][1])))
			fail_msg("%s", ans.body);
		review_answer_release(&ans);
		free(body);
		free(deep);
	}
}

/*
 * The most stack a review takes: values built as deep as the decoder
 * builds them (objects, the deepest frames), in the labels and the
 * annotations of object and oldObject of an UPDATE.  It runs on a thread
 * of 1 MiB (4 MiB under AddressSanitizer, whose frames are larger): an
 * eighth of what the server's worker threads get from the default stack
 * limit of 8 MiB, half of the 2 MiB they get with an unlimited one.
 */
static void test_review__deepest_built_value_stack(void **state)
{
#ifdef __SANITIZE_ADDRESS__
	const size_t size = 4 << 20;
#else
	const size_t size = 1 << 20;
#endif
	/* labels: the top 1, request 2, object 3, metadata 4, labels 5,
	 * x 6: 2042 objects and a scalar end at 2048 */
	char *deep = test_nest(2042, "{\"a\":", "1", "}");
	char *meta = fill("{\"labels\":{\"x\":%s},\"annotations\":{\"y\":%s}}",
			  deep, deep);
	char *body = malloc(2 * strlen(meta) + 1024);
	struct stack_review job = { body, { 0 } };
	size_t used;

	(void)state;
	assert_non_null(body);
	sprintf(body, "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":"
		"\"AdmissionReview\",\"request\":{\"uid\":\"u\",\"kind\":"
		"{\"group\":\"\",\"kind\":\"Pod\"},\"operation\":\"UPDATE\","
		"\"object\":{\"metadata\":%s,\"spec\":{}},\"oldObject\":"
		"{\"metadata\":%s}}}", meta, meta);
	used = test_stack_used(stack_review_run, &job, size);
	print_message("review: values built 2048 deep: %zu bytes of stack\n",
		      used);
	assert_int_equal(job.ans.http_status, 200);
	review_answer_release(&job.ans);
	free(body);
	free(meta);
	free(deep);
}

/* Every allocation of the denial of a deep value failing in turn. */
static void test_review__deep_built_value_out_of_memory(void **state)
{
	char *deep = test_nest(2100, "[", "", "]");
	char *body = fill(POD_CREATE("admission.k8s.io/v1", "u",
				     "{\"metadata\":{\"labels\":{\"x\":%s}}}"),
			  deep, NULL);

	(void)state;
	assert_true(fail_each_allocation(body, REVIEW_DENIED) > 10);
	free(body);
	free(deep);
}

/*
 * The audit fields (behaviour §6, logs): for a denial and for an answer
 * with a guard hit, not for others; from the selective decode (userInfo
 * kept as text) as from a full one.
 */
static void test_review__audit(void **state)
{
	const char *body = POD_CREATE("admission.k8s.io/v1", "u", GUARDED_POD);
	struct review_answer ans;
	json_t *doc;

	(void)state;
	review_answer_init(&ans);
	assert_int_equal(review_handlen(&cfg, body, strlen(body), &ans), 0);
	assert_true(ans.audit);
	assert_int_equal(ans.code, 403);
	assert_string_equal(ans.message,
		"container \"c\": env CUDA_REDIRECT=\"/x.so\" cannot be set");
	assert_string_equal(ans.user,
		"system:serviceaccount:kube-system:replicaset-controller");
	assert_string_equal(ans.kind, "Pod");
	assert_string_equal(ans.subresource, "");
	assert_string_equal(ans.dry_run, "false");
	assert_int_equal(ans.hits.nlisted, 1);
	assert_string_equal(ans.hits.listed[0].key, "CUDA_REDIRECT");
	review_answer_release(&ans);

	doc = test_json(body);
	review_answer_init(&ans);
	assert_int_equal(review_handle_json(&cfg, doc, &ans), 0);
	assert_string_equal(ans.user,
		"system:serviceaccount:kube-system:replicaset-controller");
	assert_int_equal(ans.code, 403);
	review_answer_release(&ans);
	json_decref(doc);

	body = POD_CREATE("admission.k8s.io/v1", "u", GPU_POD);
	review_answer_init(&ans);
	assert_int_equal(review_handlen(&cfg, body, strlen(body), &ans), 0);
	assert_false(ans.audit);
	assert_null(ans.message);
	assert_string_equal(ans.user, "");
	review_answer_release(&ans);
}

/* review_pod(): the default command's decision on a bare Pod. */
static void test_review__pod(void **state)
{
	static const char real_pod[] =
		"{\"kind\":\"Pod\",\"spec\":{\"priority\":0.1,\"containers\":"
		"[{\"name\":\"a\",\"image\":\"a\"}]},\"x\":[1e300,2.5]}";
	/* spec.nodeName with a vGPU: denied under the default nodeNamePolicy */
	static const char denied_pod[] =
		"{\"kind\":\"Pod\",\"spec\":{\"nodeName\":\"n\",\"containers\":"
		"[{\"name\":\"a\",\"resources\":{\"limits\":{"
		"\"nvidia.com/gpu\":\"1\"}}}]}}";
	struct review_pod_answer ans;
	json_t *pod;

	(void)state;
	review_pod_answer_init(&ans);
	assert_int_equal(review_pod(&cfg, GPU_POD, strlen(GPU_POD), &ans), 0);
	assert_int_equal(ans.status, REVIEW_POD_DEFAULTED);
	assert_null(ans.message);
	assert_true(json_array_size(ans.warnings) > 0);
	assert_non_null(strstr(json_string_value(json_array_get(ans.warnings,
								 0)),
			       "defaultMemory"));
	assert_non_null(strstr(ans.pod, "\n  \"spec\": {"));
	pod = json_loads(ans.pod, 0, NULL);
	assert_non_null(pod);
	assert_string_equal(json_string_value(json_object_get(
				    json_object_get(pod, "spec"),
				    "schedulerName")),
			    "hami-scheduler");
	json_decref(pod);
	review_pod_answer_release(&ans);
	assert_null(ans.pod);
	assert_null(ans.warnings);

	/* Reals keep the fewest digits that keep their value. */
	assert_int_equal(review_pod(&cfg, real_pod, strlen(real_pod), &ans),
			 0);
	assert_non_null(strstr(ans.pod, "\"priority\": 0.1,"));
	assert_non_null(strstr(ans.pod, "1e300,"));
	assert_non_null(strstr(ans.pod, "2.5"));
	review_pod_answer_release(&ans);

	assert_int_equal(review_pod(&cfg, "{\"kind\":", 8, &ans), -1);
	assert_int_equal(ans.status, REVIEW_POD_NOT_JSON);
	assert_null(ans.pod);
	assert_string_equal(ans.message,
			    "unexpected token near end of file (line 1, column 9)");
	review_pod_answer_release(&ans);

	assert_int_equal(review_pod(&cfg, "{\"kind\":\"Deployment\"}", 21,
				    &ans),
			 -1);
	assert_int_equal(ans.status, REVIEW_POD_NOT_POD);
	assert_string_equal(ans.message, "not a Pod: Deployment");
	review_pod_answer_release(&ans);

	assert_int_equal(review_pod(&cfg, "[]", 2, &ans), -1);
	assert_int_equal(ans.status, REVIEW_POD_NOT_POD);
	assert_string_equal(ans.message, "not a Pod: (no kind)");
	review_pod_answer_release(&ans);

	assert_int_equal(review_pod(&cfg, denied_pod, strlen(denied_pod),
				    &ans),
			 -1);
	assert_int_equal(ans.status, REVIEW_POD_DENIED);
	assert_non_null(strstr(ans.message, "denied (403 Forbidden): "));
	assert_null(ans.pod);
	review_pod_answer_release(&ans);
}

/* Every allocation of review_pod() failing in turn: never a wrong pod. */
static void test_review__pod_out_of_memory(void **state)
{
	struct review_pod_answer ref, ans;
	long n;

	(void)state;
	review_pod_answer_init(&ref);
	assert_int_equal(review_pod(&cfg, GPU_POD, strlen(GPU_POD), &ref), 0);
	json_set_alloc_funcs(json_malloc, json_free);
	for (n = 0;; n++) {
		int rc;

		review_pod_answer_init(&ans);
		fail_after = n;
		rc = review_pod(&cfg, GPU_POD, strlen(GPU_POD), &ans);
		fail_after = -1;
		if (rc == 0) {
			assert_string_equal(ans.pod, ref.pod);
			review_pod_answer_release(&ans);
			break;
		}
		assert_int_not_equal(ans.status, REVIEW_POD_DEFAULTED);
		assert_null(ans.pod);
		review_pod_answer_release(&ans);
		assert_true(n < 100000);
	}
	json_set_alloc_funcs(malloc, free);
	assert_true(n > 20);
	review_pod_answer_release(&ref);
}

/* Fills *c with the built-in config and the config file text over it. */
static void load_config(struct config *c, const char *text)
{
	char err[256];

	assert_int_equal(config_init(c), 0);
	if (config_load_buffer(c, "t", text, strlen(text), err, sizeof(err)) ||
	    config_check(c, err, sizeof(err)))
		fail_msg("%s", err);
}

/* The profile of a request (behaviour §2.2): the namespace of the request,
 * the labels of the object, or of oldObject on an UPDATE. */
static void test_review__profile(void **state)
{
	static const char text[] =
		"{\"profiles\": [{\"name\": \"by-label\", \"podLabels\":"
		" {\"size\": \"whole\"}, \"devices\": [{\"name\": \"nvidia\","
		" \"defaultMemory\": 0}]}, {\"name\": \"by-ns\", \"namespaces\":"
		" [\"team-*\"]}]}";
	static const char create[] =
		"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
		"\"request\":{\"uid\":\"u\",\"kind\":{\"group\":\"\",\"kind\":\"Pod\"},"
		"\"operation\":\"CREATE\",\"namespace\":\"team-a\",\"object\":"
		"{\"metadata\":{\"labels\":{\"size\":\"whole\"}},\"spec\":"
		"{\"containers\":[{\"name\":\"a\",\"resources\":{\"limits\":"
		"{\"nvidia.com/gpu\":\"1\"}}}]}}}}";
	static const char update[] =
		"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
		"\"request\":{\"uid\":\"u\",\"kind\":{\"group\":\"\",\"kind\":\"Pod\"},"
		"\"operation\":\"UPDATE\",\"namespace\":\"team-a\",\"object\":"
		"{\"metadata\":{\"labels\":{\"size\":\"whole\"}},\"spec\":"
		"{\"containers\":[{\"name\":\"a\"}]}},\"oldObject\":{\"metadata\":"
		"{\"labels\":{\"size\":\"half\"}},\"spec\":{\"containers\":"
		"[{\"name\":\"a\"}]}}}}";
	struct config pcfg;
	struct review_answer ans;

	(void)state;
	load_config(&pcfg, text);
	review_answer_init(&ans);
	/* by-label selects the pod, over by-ns, the namespace's profile */
	assert_int_equal(review_handlen(&pcfg, create, strlen(create), &ans), 0);
	assert_string_equal(ans.profile, "by-ns/by-label");
	assert_non_null(strstr(ans.body, "profile \\\"by-ns/by-label\\\""));
	review_answer_release(&ans);
	review_answer_init(&ans);
	assert_int_equal(review_handlen(&pcfg, update, strlen(update), &ans), 0);
	assert_string_equal(ans.profile, "by-ns");
	review_answer_release(&ans);
	review_answer_init(&ans);
	assert_int_equal(review_handlen(&cfg, create, strlen(create), &ans), 0);
	assert_string_equal(ans.profile, "");
	review_answer_release(&ans);
	config_release(&pcfg);
}

/*
 * review_select(), the one profile selector: the first non-empty string
 * of the two namespaces, else the fallback; labels only from an object.
 */
static void test_review__select(void **state)
{
	static const char text[] =
		"{\"profiles\": [{\"name\": \"lab\", \"namespaces\": [\"lab\"],"
		" \"podLabels\": {\"tier\": \"gpu\"}}, {\"name\": \"ml\","
		" \"namespaces\": [\"ml\"]}, {\"name\": \"none\","
		" \"namespaces\": [\"\"]}, {\"name\": \"dflt\","
		" \"namespaces\": [\"default\"]}]}";
	json_t *ml = json_string("ml"), *empty = json_string("");
	json_t *lab = json_string("lab"), *num = json_integer(1);
	json_t *labels = test_json("{\"tier\": \"gpu\"}");
	json_t *not_labels = test_json("[[\"tier\", \"gpu\"]]");
	struct config pcfg;

	(void)state;
	load_config(&pcfg, text);
#define SELECTED(ns, alt, fb, l) review_select(&pcfg, ns, alt, fb, l)->profile
	assert_string_equal(SELECTED(ml, lab, "default", NULL), "ml");
	assert_string_equal(SELECTED(empty, ml, NULL, NULL), "ml");
	assert_string_equal(SELECTED(NULL, ml, "default", NULL), "ml");
	assert_string_equal(SELECTED(num, ml, NULL, NULL), "ml");
	assert_string_equal(SELECTED(NULL, NULL, "default", NULL), "dflt");
	assert_string_equal(SELECTED(empty, empty, "default", NULL), "dflt");
	assert_string_equal(SELECTED(NULL, NULL, NULL, NULL), "none");
	assert_string_equal(SELECTED(lab, NULL, NULL, labels), "lab");
	assert_null(SELECTED(lab, NULL, NULL, not_labels));
	assert_null(SELECTED(lab, NULL, NULL, NULL));
#undef SELECTED
	/* a config without profiles is itself */
	assert_ptr_equal(review_select(&cfg, ml, NULL, NULL, labels), &cfg);
	config_release(&pcfg);
	json_decref(ml);
	json_decref(empty);
	json_decref(lab);
	json_decref(num);
	json_decref(labels);
	json_decref(not_labels);
}

/*
 * Answers the recorded case name (tests/fixtures/cases) under its own
 * config (the built-in one when it has none), from /mutate or from
 * /validate.
 */
static void answer_case(const char *name, bool validate,
			struct review_answer *ans)
{
	struct review_options opt = { NULL, NULL, validate };
	struct config c;
	char path[256], err[256], *body;
	size_t len = 0;

	snprintf(path, sizeof(path), "tests/fixtures/cases/%s/review.json",
		 name);
	body = test_read_file(path, &len);
	assert_non_null(body);
	assert_int_equal(config_init(&c), 0);
	snprintf(path, sizeof(path), "tests/fixtures/cases/%s/config.json",
		 name);
	if ((!access(path, F_OK) &&
	     config_load_file(&c, path, err, sizeof(err))) ||
	    config_check(&c, err, sizeof(err)))
		fail_msg("%s", err);
	review_answer_init(ans);
	assert_int_equal(review_handlen_with(&c, body, len, &opt, ans), 0);
	config_release(&c);
	free(body);
}

/*
 * /validate cannot patch: where /mutate strips or replaces an entry, it
 * denies; what /mutate would only add is allowed without the patch.
 */
static void test_review__validate_cannot_patch(void **state)
{
	static const char *const denied[] = {
		"169-ephemeral-env-strip",          /* strip */
		"176-ephemeral-list-env-strip",
		"134-guard-env-strip-with-replace", /* strip on a CREATE */
		"168-ephemeral-overwrite-env-replaces", /* NVD=all replaced */
		"132-guard-env-webhook-owned",      /* CUDA_TASK_PRIORITY=0 */
	};
	static const char *const allowed[] = {
		"167-ephemeral-overwrite-env", /* NVD=none added */
		"174-ephemeral-list-overwrite-env",
	};
	struct review_answer ans;
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(denied); i++) {
		answer_case(denied[i], false, &ans);
		if (ans.outcome != REVIEW_PATCHED)
			fail_msg("%s from /mutate: %s", denied[i], ans.body);
		review_answer_release(&ans);
		answer_case(denied[i], true, &ans);
		if (ans.outcome != REVIEW_DENIED ||
		    !strstr(ans.body, "\"code\":403"))
			fail_msg("%s from /validate: %s", denied[i], ans.body);
		review_answer_release(&ans);
	}
	for (i = 0; i < NELEM(allowed); i++) {
		answer_case(allowed[i], true, &ans);
		if (ans.outcome != REVIEW_ALLOWED || strstr(ans.body, "patch"))
			fail_msg("%s from /validate: %s", allowed[i], ans.body);
		review_answer_release(&ans);
	}
}

/*
 * An ephemeralcontainers UPDATE of a Pod (behaviour §4.1): oldObject's
 * containers say whether the pod is a vGPU pod for the privileged policy,
 * never those of request.object, which the tenant writes; without
 * oldObject it may be one.  /mutate and /validate agree.
 */
static void test_review__ephemeral_old_object_decides(void **state)
{
	static const struct {
		const char *name;
		bool denied;
	} cases[] = {
		{ "164-ephemeral-privileged-vgpu-pod-denied", true },
		{ "165-ephemeral-privileged-cpu-pod", false },
		{ "179-ephemeral-privileged-containers-stripped-by-tenant", true },
		{ "180-ephemeral-privileged-cpu-pod-claims-gpu", false },
		{ "199-ephemeral-privileged-without-old-object", true },
	};
	struct review_answer ans;
	size_t i;
	int v;

	(void)state;
	for (i = 0; i < NELEM(cases); i++) {
		for (v = 0; v < 2; v++) {
			answer_case(cases[i].name, v, &ans);
			if (cases[i].denied ?
			    ans.outcome != REVIEW_DENIED ||
			    !strstr(ans.body, "privileged containers can see") :
			    ans.outcome != REVIEW_ALLOWED)
				fail_msg("%s from %s: %s", cases[i].name,
					 v ? "/validate" : "/mutate", ans.body);
			review_answer_release(&ans);
		}
	}
}

/*
 * Duplicate env names (behaviour §4.2): the webhook writes only the last
 * entry of a name, so only that one is exempt, and /mutate and /validate
 * judge an earlier duplicate alike.  /validate also judges the last one
 * when it does not already hold the value written.
 */
static void test_review__env_duplicates_both_endpoints(void **state)
{
#define PRIO_0 "container \"cuda\": env CUDA_TASK_PRIORITY=\"0\" cannot be set"
	static const struct {
		const char *name, *mutate, *validate;
	} cases[] = {
		{ "200-guard-env-duplicate-earlier-judged",
		  "container \"side\": env NVIDIA_VISIBLE_DEVICES=\"all\" cannot be set (allowed: \"none\", \"void\")",
		  "container \"side\": env NVIDIA_VISIBLE_DEVICES=\"all\" cannot be set (allowed: \"none\", \"void\")" },
		{ "201-guard-env-duplicate-earlier-priority", PRIO_0,
		  PRIO_0 "; " PRIO_0 },
	};
	struct review_answer ans;
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(cases); i++) {
		answer_case(cases[i].name, false, &ans);
		assert_int_equal(ans.outcome, REVIEW_DENIED);
		assert_string_equal(ans.message, cases[i].mutate);
		review_answer_release(&ans);
		answer_case(cases[i].name, true, &ans);
		assert_int_equal(ans.outcome, REVIEW_DENIED);
		assert_string_equal(ans.message, cases[i].validate);
		review_answer_release(&ans);
	}
#undef PRIO_0
}

/* ------------------------------------------------------------------------
 * The start of a review: review_prefix_scann() and review_deny_prefix().
 */

/* As the API server writes one: kind, apiVersion, then request.uid. */
#define SERVER_REVIEW(uid)                                                     \
	"{\"kind\":\"AdmissionReview\",\"apiVersion\":\"admission.k8s.io/v1\","  \
	"\"request\":{\"uid\":\"" uid "\",\"kind\":{\"group\":\"\","              \
	"\"version\":\"v1\",\"kind\":\"Pod\"},\"operation\":\"CREATE\","          \
	"\"object\":" GPU_POD "}}"

#define HEAD "{\"kind\":\"AdmissionReview\",\"apiVersion\":\"admission.k8s.io/v1\","

static int scan(const char *text, struct review_prefix *p)
{
	return review_prefix_scann(text, strlen(text), p);
}

/*
 * Every cut of a whole review: the start is found exactly when the cut
 * comes after the closing quote of request.uid.
 */
static void test_review__prefix_cuts(void **state)
{
	const char *body = SERVER_REVIEW("705ab4f5-6393-11e8-b7cc-42010a800002");
	const char *end = strstr(body, "0002\"") + 5;
	struct review_prefix p;
	size_t n;

	(void)state;
	for (n = 0; n <= strlen(body); n++) {
		int rc = review_prefix_scann(body, n, &p);

		if (n < (size_t)(end - body)) {
			assert_int_equal(rc, -1);
			continue;
		}
		assert_int_equal(rc, 0);
		assert_string_equal(p.api_version, "admission.k8s.io/v1");
		assert_string_equal(p.uid,
				    "705ab4f5-6393-11e8-b7cc-42010a800002");
		assert_int_equal(p.uid_len, 36);
	}
	/* The order of POD_CREATE, v1beta1. */
	body = POD_CREATE("admission.k8s.io/v1beta1", "u-1", GPU_POD);
	assert_int_equal(scan(body, &p), 0);
	assert_string_equal(p.api_version, "admission.k8s.io/v1beta1");
	assert_string_equal(p.uid, "u-1");
}

static void test_review__prefix_table(void **state)
{
	static const struct {
		const char *text;
		const char *uid; /* NULL: not found */
	} cases[] = {
		{ HEAD "\"request\":{\"uid\":\"u\"", "u" },
		{ " \n{ \"apiVersion\" : \"admission.k8s.io/v1\" ,\t\"kind\":"
		  "\"AdmissionReview\",\r\n\"request\" : { \"uid\" : \"u\"", "u" },
		/* members skipped before the three, and in request */
		{ "{\"metadata\":{\"x\":[1,\"}]\\\"\",{\"a\":null}],\"y\":{}},"
		  "\"n\":-1.5e+3,\"t\":true,\"z\":null,\"s\":\"{\","
		  "\"kind\":\"AdmissionReview\",\"apiVersion\":"
		  "\"admission.k8s.io/v1\",\"request\":{\"kind\":{\"group\":"
		  "\"\",\"kind\":\"Pod\"},\"dryRun\":false,\"uid\":\"u\"", "u" },
		/* escapes and characters kept as written */
		{ HEAD "\"request\":{\"uid\":\"a\\\"b\\\\\\u00e9\\ud83d\\ude00\\n\\/\xc3\xa9\"",
		  "a\\\"b\\\\\\u00e9\\ud83d\\ude00\\n\\/\xc3\xa9" },
		{ HEAD "\"request\":{\"uid\":\"\\u0000\"", "\\u0000" },
		/* not found */
		{ "", NULL },
		{ "[]", NULL },
		{ "x", NULL },
		{ "{}", NULL },
		{ "{\"request\":{\"uid\":\"u\"}", NULL },
		{ "{\"apiVersion\":\"admission.k8s.io/v1\",\"request\":{\"uid\":\"u\"",
		  NULL },
		{ "{\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u\"", NULL },
		{ "{\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u\"},"
		  "\"apiVersion\":\"admission.k8s.io/v1\"}", NULL },
		{ "{\"kind\":\"Review\",\"apiVersion\":\"admission.k8s.io/v1\","
		  "\"request\":{\"uid\":\"u\"", NULL },
		{ "{\"kind\":\"AdmissionReview\",\"apiVersion\":\"admission.k8s.io/v2\","
		  "\"request\":{\"uid\":\"u\"", NULL },
		{ "{\"kind\":\"AdmissionReview\",\"kind\":\"AdmissionReview\","
		  "\"apiVersion\":\"admission.k8s.io/v1\",\"request\":{\"uid\":\"u\"",
		  NULL },
		{ HEAD "\"apiVersion\":\"admission.k8s.io/v1\",\"request\":{\"uid\":\"u\"",
		  NULL },
		{ HEAD "\"request\":{\"uid\":\"\"", NULL },
		{ HEAD "\"request\":{\"uid\":7", NULL },
		{ HEAD "\"request\":{\"uid\":null", NULL },
		{ HEAD "\"request\":{}", NULL },
		{ HEAD "\"request\":[\"uid\",\"u\"]", NULL },
		{ HEAD "\"request\":\"uid\"", NULL },
		{ HEAD "\"request\":{\"kind\":{\"uid\":\"u\"}", NULL },
		{ HEAD "\"request\":{\"uid\":\"u", NULL },
		{ HEAD "\"request\":{\"uid\":\"a\\x\"", NULL },
		{ HEAD "\"request\":{\"uid\":\"a\\u12\"", NULL },
		{ HEAD "\"request\":{\"uid\":\"a\\u12g4\"", NULL },
		{ HEAD "\"request\":{\"uid\":\"a\\udc00\"", NULL },
		{ HEAD "\"request\":{\"uid\":\"a\\ud800\"", NULL },
		{ HEAD "\"request\":{\"uid\":\"a\\ud800\\u0041\"", NULL },
		{ HEAD "\"request\":{\"uid\":\"a\tb\"", NULL },
		{ HEAD "\"request\":{\"uid\":\"a\xff\"", NULL },
		{ HEAD "\"request\":{\"uid\":\"a\xc3\"", NULL },
		{ HEAD "\"request\":{\"uid\":\"a\xed\xa0\x80\"", NULL },
		/* a member before them cut short, or not a value */
		{ "{\"n\":12", NULL },
		{ "{\"o\":{\"a\":[1,2]", NULL },
		{ "{\"o\":}", NULL },
		{ "{\"o\" 1,", NULL },
	};
	struct review_prefix p;
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(cases); i++) {
		int rc = scan(cases[i].text, &p);

		if (!cases[i].uid) {
			if (rc != -1)
				fail_msg("case %zu found uid \"%s\" in %s", i,
					 p.uid, cases[i].text);
			continue;
		}
		if (rc != 0)
			fail_msg("case %zu: not found in %s", i, cases[i].text);
		assert_string_equal(p.uid, cases[i].uid);
		assert_int_equal(p.uid_len, strlen(cases[i].uid));
	}
}

/* request.uid of at most REVIEW_UID_MAX bytes as written. */
static void test_review__prefix_uid_length(void **state)
{
	char text[REVIEW_UID_MAX + 200];
	struct review_prefix p;
	size_t n;

	(void)state;
	for (n = REVIEW_UID_MAX - 1; n <= REVIEW_UID_MAX + 1; n++) {
		int k = snprintf(text, sizeof(text), HEAD "\"request\":{\"uid\":\"");

		memset(text + k, 'u', n);
		memcpy(text + k + n, "\"", 2);
		assert_int_equal(scan(text, &p), n <= REVIEW_UID_MAX ? 0 : -1);
	}
	assert_int_equal(p.uid_len, REVIEW_UID_MAX);
	assert_int_equal(strlen(p.uid), REVIEW_UID_MAX);
}

/*
 * The denial of a review read from its start: an AdmissionReview that the
 * API server takes (its uid, decoded, is the request's), with the code,
 * its reason and the message.
 */
static void test_review__deny_prefix(void **state)
{
	static const struct {
		const char *api;
		int code;
		const char *reason;
	} cases[] = {
		{ "admission.k8s.io/v1", 413, "RequestEntityTooLarge" },
		{ "admission.k8s.io/v1beta1", 503, "ServiceUnavailable" },
		{ "admission.k8s.io/v1", 403, "Forbidden" },
	};
	const char *message = "the body is \"big\"\n";
	char body[4096];
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(cases); i++) {
		struct review_prefix p;
		struct review_answer ans;
		json_t *in, *out, *status;

		snprintf(body, sizeof(body),
			 "{\"kind\":\"AdmissionReview\",\"apiVersion\":\"%s\","
			 "\"request\":{\"uid\":\"a\\\"b\\u00e9\\ud83d\\ude00\","
			 "\"object\":{}}}", cases[i].api);
		assert_int_equal(scan(body, &p), 0);
		review_answer_init(&ans);
		assert_int_equal(review_deny_prefix(&p, cases[i].code, message,
						    &ans), 0);
		assert_int_equal(ans.http_status, 200);
		assert_int_equal(ans.outcome, REVIEW_DENIED);
		assert_string_equal(ans.content_type, "application/json");
		assert_int_equal(ans.ops, 0);
		assert_string_equal(ans.uid, "a\\\"b\\u00e9\\ud83d\\ude00");
		in = test_json(body);
		out = json_loadb(ans.body, ans.body_len, JSON_REJECT_DUPLICATES,
				 NULL);
		assert_non_null(out);
		assert_string_equal(json_string_value(json_object_get(out,
								      "apiVersion")),
				    cases[i].api);
		assert_string_equal(json_string_value(json_object_get(out, "kind")),
				    "AdmissionReview");
		assert_true(json_equal(
			json_object_get(json_object_get(out, "response"), "uid"),
			json_object_get(json_object_get(in, "request"), "uid")));
		assert_true(json_is_false(json_object_get(
			json_object_get(out, "response"), "allowed")));
		status = json_object_get(json_object_get(out, "response"),
					 "status");
		assert_int_equal(json_integer_value(json_object_get(status, "code")),
				 cases[i].code);
		assert_string_equal(json_string_value(json_object_get(status,
								      "reason")),
				    cases[i].reason);
		assert_string_equal(json_string_value(json_object_get(status,
								      "message")),
				    message);
		assert_int_equal(json_object_size(json_object_get(out, "response")),
				 3);
		json_decref(in);
		json_decref(out);
		review_answer_release(&ans);
	}
}

/* Every allocation of review_deny_prefix() failing in turn: a 500 or
 * nothing, never a wrong 200. */
static void test_review__deny_prefix_out_of_memory(void **state)
{
	struct review_prefix p;
	struct review_answer ans;
	long n;

	(void)state;
	assert_int_equal(scan(HEAD "\"request\":{\"uid\":\"u\"", &p), 0);
	for (n = 0;; n++) {
		int rc;

		review_answer_init(&ans);
		fail_after = n;
		rc = review_deny_prefix(&p, 413, "too large", &ans);
		fail_after = -1;
		if (rc == 0) {
			assert_int_equal(ans.http_status, 200);
			assert_non_null(strstr(ans.body, "\"uid\":\"u\""));
			review_answer_release(&ans);
			break;
		}
		assert_int_equal(ans.http_status, 500);
		assert_int_equal(ans.outcome, REVIEW_ERROR);
		review_answer_release(&ans);
		assert_true(n < 1000);
	}
	assert_true(n > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		TEST_WITH_CONFIG(test_review__not_a_review),
		TEST_WITH_CONFIG(test_review__patched),
		TEST_WITH_CONFIG(test_review__same_bytes),
		TEST_WITH_CONFIG(test_review__allowed_unchanged),
		TEST_WITH_CONFIG(test_review__bad_object),
		TEST_WITH_CONFIG(test_review__log_fields_masked),
		TEST_WITH_CONFIG(test_review__out_of_memory),
		TEST_WITH_CONFIG(test_review__audit),
		TEST_WITH_CONFIG(test_review__deep_skipped_value_decided),
		TEST_WITH_CONFIG(test_review__deep_built_value_denied),
		TEST_WITH_CONFIG(test_review__deep_built_value_not_a_review),
		TEST_WITH_CONFIG(test_review__deep_built_value_out_of_memory),
		TEST_WITH_CONFIG(test_review__deepest_built_value_stack),
		TEST_WITH_CONFIG(test_review__pod),
		TEST_WITH_CONFIG(test_review__profile),
		TEST_WITH_CONFIG(test_review__select),
		TEST_WITH_CONFIG(test_review__validate_cannot_patch),
		TEST_WITH_CONFIG(test_review__ephemeral_old_object_decides),
		TEST_WITH_CONFIG(test_review__env_duplicates_both_endpoints),
		TEST_WITH_CONFIG(test_review__pod_out_of_memory),
		TEST_WITH_CONFIG(test_review__prefix_cuts),
		TEST_WITH_CONFIG(test_review__prefix_table),
		TEST_WITH_CONFIG(test_review__prefix_uid_length),
		TEST_WITH_CONFIG(test_review__deny_prefix),
		TEST_WITH_CONFIG(test_review__deny_prefix_out_of_memory),
	};

	return cmocka_run_group_tests_name("review", tests, NULL, NULL);
}
