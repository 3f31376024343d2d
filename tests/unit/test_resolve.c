/*
 * test_resolve.c - container resolution and family checks of libvgpu.
 */
#include "test.h"

#include "vgpu.h"

#define MAXP 8

struct input {
	struct vgpu_pair limits[MAXP], requests[MAXP];
	size_t nlimits, nrequests;
};

/* Adds "key=value" to the limits (L) or requests (R) of in. */
static void put(struct input *in, char which, const char *key,
		const char *value)
{
	struct vgpu_pair *p = which == 'L' ? &in->limits[in->nlimits++]
					   : &in->requests[in->nrequests++];

	p->key = key;
	p->key_len = strlen(key);
	p->value = value;
	p->value_len = strlen(value);
}

/* Parses "L:key=value R:key=value ..." into in (static storage). */
static void parse_spec(struct input *in, const char *spec)
{
	static char storage[16][128];
	static int next;
	char *tok, *save = NULL, buf[512];

	memset(in, 0, sizeof(*in));
	snprintf(buf, sizeof(buf), "%s", spec);
	for (tok = strtok_r(buf, " ", &save); tok;
	     tok = strtok_r(NULL, " ", &save)) {
		char *s = storage[next++ % 16], *eq;

		snprintf(s, 128, "%s", tok + 2);
		eq = strchr(s, '=');
		assert_non_null(eq);
		*eq = '\0';
		put(in, tok[0], s, eq + 1);
	}
}

static int resolve(const struct vgpu_family *f, const char *spec,
		   struct vgpu_request *out, struct vgpu_errors *errs)
{
	struct input in;

	parse_spec(&in, spec);
	return vgpu_resolve(f, in.limits, in.nlimits, in.requests,
			    in.nrequests, out, errs);
}

#define GPU VGPU_BIT(VGPU_COUNT)
#define MEM VGPU_BIT(VGPU_MEMORY)
#define PCT VGPU_BIT(VGPU_MEMORY_PERCENTAGE)
#define CORES VGPU_BIT(VGPU_CORES)
#define PRIO VGPU_BIT(VGPU_PRIORITY)

struct ok_case {
	const char *spec;
	int64_t gpu_num, memory, cores; /* family defaults */
	enum vgpu_kind kind;
	unsigned present, copied, defaulted;
	int64_t count, mem, pct, core, prio;
};

static const struct ok_case ok_cases[] = {
	/* count alone: memory defaulted, no cores (defaultCores 0, not whole) */
	{ "L:nvidia.com/gpu=1 R:nvidia.com/gpu=1", 1, 5000, 0,
	  VGPU_KIND_SHARED, GPU | MEM, 0, MEM, 1, 5000, 0, 0, 0 },
	/* memory without count: count defaulted */
	{ "L:nvidia.com/gpumem=3k", 1, 5000, 0, VGPU_KIND_SHARED, GPU | MEM, 0,
	  GPU, 1, 3000, 0, 0, 0 },
	/* percentage 100 given: the whole device gets cores 100 */
	{ "L:nvidia.com/gpu=2 L:nvidia.com/gpumem-percentage=100", 1, 5000, 0,
	  VGPU_KIND_SHARED, GPU | PCT | CORES, 0, CORES, 2, 0, 100, 100, 0 },
	/* percentage 50: not whole, no cores */
	{ "L:nvidia.com/gpu=1 L:nvidia.com/gpumem-percentage=50", 1, 5000, 0,
	  VGPU_KIND_SHARED, GPU | PCT, 0, 0, 1, 0, 50, 0, 0 },
	/* defaultMemory 0: percentage 100 and cores 100 */
	{ "L:nvidia.com/gpu=1", 1, 0, 0, VGPU_KIND_SHARED, GPU | PCT | CORES, 0,
	  PCT | CORES, 1, 0, 100, 100, 0 },
	/* defaultCores wins over the whole-device rule */
	{ "L:nvidia.com/gpu=1", 1, 0, 30, VGPU_KIND_SHARED, GPU | PCT | CORES,
	  0, PCT | CORES, 1, 0, 100, 30, 0 },
	/* given cores kept, even 0 */
	{ "L:nvidia.com/gpu=1 L:nvidia.com/gpucores=0", 1, 5000, 30,
	  VGPU_KIND_SHARED, GPU | MEM | CORES, 0, MEM, 1, 5000, 0, 0, 0 },
	/* request only: copied into limits, and counts as given */
	{ "R:nvidia.com/gpu=1 R:nvidia.com/gpumem=4096", 1, 5000, 0,
	  VGPU_KIND_SHARED, GPU | MEM, GPU | MEM, 0, 1, 4096, 0, 0, 0 },
	/* equal as quantities: 3k and 3000 */
	{ "L:nvidia.com/gpumem=3k R:nvidia.com/gpumem=3000", 1, 5000, 0,
	  VGPU_KIND_SHARED, GPU | MEM, 0, GPU, 1, 3000, 0, 0, 0 },
	/* count 0: nothing defaulted */
	{ "L:nvidia.com/gpu=0", 1, 5000, 0, VGPU_KIND_ZERO, GPU, 0, 0, 0, 0, 0,
	  0, 0 },
	/* count 0 with a request-only key: still copied */
	{ "L:nvidia.com/gpu=0 R:nvidia.com/gpumem=100", 1, 5000, 0,
	  VGPU_KIND_ZERO, GPU | MEM, MEM, 0, 0, 100, 0, 0, 0 },
	/* defaultGPUNum 0: keys left alone, not even copied */
	{ "R:nvidia.com/gpumem=100", 0, 5000, 0, VGPU_KIND_SKIPPED, MEM, 0, 0,
	  0, 100, 0, 0, 0 },
	/* defaultGPUNum 2 */
	{ "L:nvidia.com/gpucores=20", 2, 5000, 0, VGPU_KIND_SHARED,
	  GPU | MEM | CORES, 0, GPU | MEM, 2, 5000, 0, 20, 0 },
	/* priority alone is no vGPU request */
	{ "L:nvidia.com/priority=1", 1, 5000, 0, VGPU_KIND_NONE, PRIO, 0, 0, 0,
	  0, 0, 0, 1 },
	/* priority with a count */
	{ "L:nvidia.com/gpu=1 L:nvidia.com/gpumem=1 L:nvidia.com/priority=0", 1,
	  5000, 0, VGPU_KIND_SHARED, GPU | MEM | PRIO, 0, 0, 1, 1, 0, 0, 0 },
	/* other resources are ignored */
	{ "L:cpu=1.5 L:memory=1Gi L:example.com/gpu=x", 1, 5000, 0,
	  VGPU_KIND_NONE, 0, 0, 0, 0, 0, 0, 0, 0 },
	/* whole numbers written with suffixes and exponents */
	{ "L:nvidia.com/gpu=1 L:nvidia.com/gpumem=1e3", 1, 5000, 0,
	  VGPU_KIND_SHARED, GPU | MEM, 0, 0, 1, 1000, 0, 0, 0 },
	{ "L:nvidia.com/gpu=1 L:nvidia.com/gpumem=1048576", 1, 5000, 0,
	  VGPU_KIND_SHARED, GPU | MEM, 0, 0, 1, 1048576, 0, 0, 0 },
	{ "L:nvidia.com/gpu=2147483647", 1, 5000, 0, VGPU_KIND_SHARED,
	  GPU | MEM, 0, MEM, 2147483647, 5000, 0, 0, 0 },
};

static void test_resolve__table(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(ok_cases); i++) {
		const struct ok_case *c = &ok_cases[i];
		struct vgpu_family f = vgpu_family_nvidia;
		struct vgpu_request r;
		struct vgpu_errors errs;
		int rc;

		f.default_gpu_num = c->gpu_num;
		f.default_memory = c->memory;
		f.default_cores = c->cores;
		rc = resolve(&f, c->spec, &r, &errs);
		if (rc)
			print_error("case %zu (%s): %s\n", i, c->spec,
				    errs.error[0].message);
		assert_int_equal(rc, 0);
		assert_int_equal(r.kind, c->kind);
		assert_int_equal(r.present, c->present);
		assert_int_equal(r.copied, c->copied);
		assert_int_equal(r.defaulted, c->defaulted);
		assert_int_equal(r.value[VGPU_COUNT], c->count);
		assert_int_equal(r.value[VGPU_MEMORY], c->mem);
		assert_int_equal(r.value[VGPU_MEMORY_PERCENTAGE], c->pct);
		assert_int_equal(r.value[VGPU_CORES], c->core);
		assert_int_equal(r.value[VGPU_PRIORITY], c->prio);
	}
}

struct err_case {
	const char *spec;
	int code;
	const char *message; /* the first error's message */
	size_t count;
};

static const struct err_case err_cases[] = {
	{ "L:nvidia.com/gpumem=16Gi", VGPU_EBYTES,
	  "nvidia.com/gpumem=16Gi looks like bytes; the unit is MiB: did you mean 16384?",
	  1 },
	{ "L:nvidia.com/gpumem=2000000", VGPU_EBYTES,
	  "nvidia.com/gpumem=2000000 looks like bytes; the unit is MiB: did you mean 2?",
	  1 },
	{ "L:nvidia.com/gpumem=1048577", VGPU_EBYTES,
	  "nvidia.com/gpumem=1048577 looks like bytes; the unit is MiB: did you mean 2?",
	  1 },
	{ "L:nvidia.com/gpumem=1Mi", VGPU_EBYTES,
	  "nvidia.com/gpumem=1Mi looks like bytes; the unit is MiB: did you mean 1?",
	  1 },
	{ "L:nvidia.com/gpumem=0", VGPU_ERANGE,
	  "nvidia.com/gpumem=0 is out of range 1..1048576", 1 },
	{ "L:nvidia.com/gpu=1.5", VGPU_EFRACTION,
	  "nvidia.com/gpu=1.5 is not a whole number", 1 },
	{ "L:nvidia.com/gpu=500m", VGPU_EFRACTION,
	  "nvidia.com/gpu=500m is not a whole number", 1 },
	{ "L:nvidia.com/gpu=abc", VGPU_ESYNTAX,
	  "nvidia.com/gpu=abc is not a valid quantity", 1 },
	{ "L:nvidia.com/gpu=-1", VGPU_ERANGE,
	  "nvidia.com/gpu=-1 is out of range 0..2147483647", 1 },
	{ "L:nvidia.com/gpu=2147483648", VGPU_ERANGE,
	  "nvidia.com/gpu=2147483648 is out of range 0..2147483647", 1 },
	{ "L:nvidia.com/gpu=1 L:nvidia.com/gpucores=101", VGPU_ERANGE,
	  "nvidia.com/gpucores=101 is out of range 0..100", 1 },
	{ "L:nvidia.com/gpu=1 L:nvidia.com/gpumem-percentage=0", VGPU_ERANGE,
	  "nvidia.com/gpumem-percentage=0 is out of range 1..100", 1 },
	{ "L:nvidia.com/gpu=1 L:nvidia.com/priority=-2", VGPU_ERANGE,
	  "nvidia.com/priority=-2 is out of range 0..2147483647", 1 },
	{ "L:nvidia.com/gpumem=5k R:nvidia.com/gpumem=4k", VGPU_EMISMATCH,
	  "nvidia.com/gpumem: request 4k differs from limit 5k", 1 },
	{ "L:nvidia.com/gpumem=100 L:nvidia.com/gpumem-percentage=10",
	  VGPU_ECONFLICT,
	  "nvidia.com/gpumem=100 and nvidia.com/gpumem-percentage=10 are both set; give one",
	  1 },
	/* a request-only memory counts too */
	{ "R:nvidia.com/gpumem=100 L:nvidia.com/gpumem-percentage=10",
	  VGPU_ECONFLICT,
	  "nvidia.com/gpumem=100 and nvidia.com/gpumem-percentage=10 are both set; give one",
	  1 },
	/* beyond int64 with a binary suffix: the hint is still exact */
	{ "L:nvidia.com/gpumem=9Ei", VGPU_EBYTES,
	  "nvidia.com/gpumem=9Ei looks like bytes; the unit is MiB: did you mean 9895604649984?",
	  1 },
	{ "L:nvidia.com/gpumem=16Ei", VGPU_EBYTES,
	  "nvidia.com/gpumem=16Ei looks like bytes; the unit is MiB: did you mean 17592186044416?",
	  1 },
	{ "L:nvidia.com/gpumem=100000000000000000000", VGPU_ERANGE,
	  "nvidia.com/gpumem=100000000000000000000 is out of range 1..1048576",
	  1 },
	/* a mismatch does not hide the limit's own error */
	{ "L:nvidia.com/gpu=1.5 R:nvidia.com/gpu=2", VGPU_EMISMATCH,
	  "nvidia.com/gpu: request 2 differs from limit 1.5", 2 },
	/* every error is reported, in resource order */
	{ "L:nvidia.com/gpu=x L:nvidia.com/gpumem=1.5 L:nvidia.com/gpucores=200",
	  VGPU_ESYNTAX, "nvidia.com/gpu=x is not a valid quantity", 3 },
	/* a bad request next to a good limit */
	{ "L:nvidia.com/gpu=1 R:nvidia.com/gpu=one", VGPU_ESYNTAX,
	  "nvidia.com/gpu=one is not a valid quantity", 1 },
};

static void test_resolve__errors(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(err_cases); i++) {
		const struct err_case *c = &err_cases[i];
		struct vgpu_request r, before;
		struct vgpu_errors errs;
		int rc;

		memset(&r, 0x5a, sizeof(r));
		before = r;
		rc = resolve(&vgpu_family_nvidia, c->spec, &r, &errs);
		if (rc != c->code)
			print_error("case %zu (%s): got %d\n", i, c->spec, rc);
		assert_int_equal(rc, c->code);
		assert_int_equal(errs.count, c->count);
		assert_string_equal(errs.error[0].message, c->message);
		assert_non_null(errs.error[0].key);
		/* out is untouched on failure */
		assert_memory_equal(&r, &before, sizeof(r));
	}
}

static void test_resolve__error_value_masked_and_cut(void **state)
{
	struct vgpu_errors errs;
	struct vgpu_request r;
	struct input in;
	char value[300];

	(void)state;
	memset(&in, 0, sizeof(in));
	put(&in, 'L', "nvidia.com/gpu", "1\n\x1b[31mred");
	assert_int_equal(vgpu_resolve(&vgpu_family_nvidia, in.limits, 1, NULL,
				      0, &r, &errs),
			 VGPU_ESYNTAX);
	assert_string_equal(errs.error[0].value, "1[31mred");
	assert_null(strchr(errs.error[0].message, '\n'));

	/* a value that fits is not cut */
	memset(&in, 0, sizeof(in));
	memset(value, 'x', VGPU_VALUE_MAX - 1);
	value[VGPU_VALUE_MAX - 1] = '\0';
	put(&in, 'L', "nvidia.com/gpu", value);
	assert_int_equal(vgpu_resolve(&vgpu_family_nvidia, in.limits, 1, NULL,
				      0, &r, &errs),
			 VGPU_ESYNTAX);
	assert_string_equal(errs.error[0].value, value);

	memset(value, '9', sizeof(value) - 1);
	value[sizeof(value) - 1] = '\0';
	memset(&in, 0, sizeof(in));
	put(&in, 'L', "nvidia.com/gpu", value);
	assert_int_equal(vgpu_resolve(&vgpu_family_nvidia, in.limits, 1, NULL,
				      0, &r, &errs),
			 VGPU_ERANGE);
	assert_true(strlen(errs.error[0].value) < VGPU_VALUE_MAX);
	assert_string_equal(errs.error[0].value +
				    strlen(errs.error[0].value) - 3,
			    "...");
}

/*
 * Bytes F8 to FF are never UTF-8: each is dropped alone, and neither
 * starts a sequence that takes the bytes after it along nor cuts the value
 * short near its end.
 */
static void test_resolve__error_value_drops_bytes_not_utf8(void **state)
{
	static const struct {
		const char *in;
		const char *value;
	} cases[] = {
		{ "1\xf8\xf9\xfa\xfb" "x\xfc\xfd\xfe\xff" "2", "1x2" },
		{ "\xf8" "abc", "abc" },
		{ "12\xf8" "a", "12a" },
		{ "12\xff", "12" },
		{ "\xf5\x80\x80\x80" "9", "9" },
		{ "\xc3\xa9\xfe\xe2\x82\xac", "\xc3\xa9\xe2\x82\xac" },
	};
	struct vgpu_errors errs;
	struct vgpu_request r;
	struct input in;
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(cases); i++) {
		memset(&in, 0, sizeof(in));
		put(&in, 'L', "nvidia.com/gpu", cases[i].in);
		assert_int_equal(vgpu_resolve(&vgpu_family_nvidia, in.limits, 1,
					      NULL, 0, &r, &errs),
				 VGPU_ESYNTAX);
		assert_string_equal(errs.error[0].value, cases[i].value);
		assert_non_null(strstr(errs.error[0].message, cases[i].value));
	}
}

static void test_resolve__family_without_optional_names(void **state)
{
	struct vgpu_family f = {
		.name = "mini",
		.resource = { [VGPU_COUNT] = "example.com/vgpu",
			      [VGPU_MEMORY] = "example.com/vmem" },
		.default_gpu_num = 1,
		.default_memory = 0,
		.default_cores = 0,
	};
	struct vgpu_errors errs;
	struct vgpu_request r;

	(void)state;
	/* no percentage name: no memory default and never cores 100 */
	assert_int_equal(resolve(&f, "L:example.com/vgpu=1", &r, &errs), 0);
	assert_int_equal(r.kind, VGPU_KIND_SHARED);
	assert_int_equal(r.present, GPU);
	assert_int_equal(r.defaulted, 0);
	/* the other family's names are not ours */
	assert_int_equal(resolve(&f, "L:nvidia.com/gpu=1", &r, &errs), 0);
	assert_int_equal(r.kind, VGPU_KIND_NONE);
	assert_int_equal(vgpu_family_check(&f, &errs.error[0]), 0);
}

static void test_resolve__first_duplicate_counts(void **state)
{
	struct vgpu_errors errs;
	struct vgpu_request r;
	struct input in;

	(void)state;
	memset(&in, 0, sizeof(in));
	put(&in, 'L', "nvidia.com/gpu", "2");
	put(&in, 'L', "nvidia.com/gpu", "bad");
	assert_int_equal(vgpu_resolve(&vgpu_family_nvidia, in.limits, 2, NULL,
				      0, &r, &errs),
			 0);
	assert_int_equal(r.value[VGPU_COUNT], 2);
}

static void test_resolve__family_check(void **state)
{
	struct vgpu_family f;
	struct vgpu_error e;

	(void)state;
	assert_int_equal(vgpu_family_check(&vgpu_family_nvidia, &e), 0);

	f = vgpu_family_nvidia;
	f.name = "";
	assert_int_equal(vgpu_family_check(&f, &e), VGPU_EINVAL);

	f = vgpu_family_nvidia;
	f.resource[VGPU_MEMORY] = NULL;
	assert_int_equal(vgpu_family_check(&f, &e), VGPU_EINVAL);
	assert_string_equal(e.key, "resourceMemoryName");

	f = vgpu_family_nvidia;
	f.resource[VGPU_CORES] = "gpucores"; /* no domain: a native name */
	assert_int_equal(vgpu_family_check(&f, &e), VGPU_ENAME);
	assert_string_equal(e.key, "resourceCoreName");

	f = vgpu_family_nvidia;
	f.resource[VGPU_CORES] = "nvidia.com/gpu";
	assert_int_equal(vgpu_family_check(&f, &e), VGPU_EDUPLICATE);

	f = vgpu_family_nvidia;
	f.default_memory = VGPU_MAX_MEMORY + 1;
	assert_int_equal(vgpu_family_check(&f, &e), VGPU_ERANGE);
	assert_string_equal(e.key, "defaultMemory");
	assert_string_equal(e.message,
			    "defaultMemory: 1048577 is out of range 0..1048576");

	f = vgpu_family_nvidia;
	f.default_cores = -1;
	assert_int_equal(vgpu_family_check(&f, &e), VGPU_ERANGE);
	f = vgpu_family_nvidia;
	f.default_gpu_num = INT64_C(2147483648);
	assert_int_equal(vgpu_family_check(&f, &e), VGPU_ERANGE);
}

static void test_resolve__strerror(void **state)
{
	(void)state;
	assert_string_equal(vgpu_strerror(VGPU_OK), "success");
	assert_string_equal(vgpu_strerror(VGPU_EBYTES),
			    "looks like bytes; the unit is MiB");
	assert_string_equal(vgpu_strerror(12345), "unknown error");
	assert_string_equal(vgpu_resource_config_key(VGPU_CORES),
			    "resourceCoreName");
	assert_null(vgpu_resource_config_key(VGPU_NRESOURCES));
}


/* One case of vgpu_resolve_flags() with VGPU_RESOLVE_ZERO_UNSET. */
struct zero_case {
	const char *spec;
	int64_t memory; /* defaultMemory (defaultGPUNum 1, defaultCores 0) */
	int rc;
	unsigned unset, present, copied, defaulted;
	int64_t mem, pct;
};

static const struct zero_case zero_cases[] = {
	/* a 0 limit with another request is a mismatch, and only that */
	{ "L:nvidia.com/gpu=1 L:nvidia.com/gpumem=0 R:nvidia.com/gpumem=10",
	  5000, VGPU_EMISMATCH, 0, 0, 0, 0, 0, 0 },
	/* HAMi's TestGenerateResourceRequests_DefaultMemory: 0 is not set,
	 * and the default fills it */
	{ "L:nvidia.com/gpu=1 L:nvidia.com/gpumem=0 R:nvidia.com/gpumem=0",
	  5000, 0, MEM, GPU | MEM, 0, MEM, 5000, 0 },
	/* any spelling of 0 */
	{ "L:nvidia.com/gpu=1 L:nvidia.com/gpumem=0Mi", 5000, 0, MEM,
	  GPU | MEM, 0, MEM, 5000, 0 },
	{ "L:nvidia.com/gpu=1 L:nvidia.com/gpumem-percentage=0.0", 5000, 0,
	  PCT, GPU | MEM, 0, MEM, 5000, 0 },
	/* percentage 0 with memory given: no conflict, memory kept */
	{ "L:nvidia.com/gpu=1 L:nvidia.com/gpumem=3000"
	  " L:nvidia.com/gpumem-percentage=0", 5000, 0, PCT, GPU | MEM, 0, 0,
	  3000, 0 },
	/* memory 0 with percentage given: the percentage counts */
	{ "L:nvidia.com/gpu=1 L:nvidia.com/gpumem=0"
	  " L:nvidia.com/gpumem-percentage=50", 5000, 0, MEM, GPU | PCT, 0, 0,
	  0, 50 },
	/* defaultMemory 0: percentage 100 replaces the 0 */
	{ "L:nvidia.com/gpu=1 L:nvidia.com/gpumem-percentage=0", 0, 0, PCT,
	  GPU | PCT | CORES, 0, PCT | CORES, 0, 100 },
	/* a request of 0 alone, then defaulted: not copied */
	{ "R:nvidia.com/gpu=1 R:nvidia.com/gpumem=0", 5000, 0, MEM, GPU | MEM,
	  GPU, MEM, 5000, 0 },
	/* a request of 0 alone, no default: copied into limits as it is */
	{ "L:nvidia.com/gpu=1 R:nvidia.com/gpumem=0"
	  " L:nvidia.com/gpumem-percentage=50", 5000, 0, MEM, GPU | PCT, MEM, 0,
	  0, 50 },
	/* 0 alone is no vGPU request */
	{ "L:nvidia.com/gpumem=0", 5000, 0, MEM, 0, 0, 0, 0, 0 },
	/* a limit of 0 and another request still differ */
	{ "L:nvidia.com/gpu=1 L:nvidia.com/gpumem=0 R:nvidia.com/gpumem=10",
	  5000, VGPU_EMISMATCH, 0, 0, 0, 0, 0, 0 },
	/* below 0 is still out of range */
	{ "L:nvidia.com/gpu=1 L:nvidia.com/gpumem=-1", 5000, VGPU_ERANGE, 0, 0,
	  0, 0, 0, 0 },
};

static void test_resolve__zero_unset(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(zero_cases); i++) {
		const struct zero_case *c = &zero_cases[i];
		struct vgpu_family f = vgpu_family_nvidia;
		struct vgpu_request r, plain;
		struct vgpu_errors errs;
		struct input in;
		unsigned unset = 12345;
		int rc;

		f.default_memory = c->memory;
		parse_spec(&in, c->spec);
		rc = vgpu_resolve_flags(&f, VGPU_RESOLVE_ZERO_UNSET, in.limits,
					in.nlimits, in.requests, in.nrequests,
					&r, &unset, &errs);
		if (rc != c->rc)
			fail_msg("case %zu (%s): rc %d, want %d", i, c->spec, rc,
				 c->rc);
		if (rc) {
			assert_int_equal(unset, 12345); /* only on success */
			/* a 0 limit that differs from its request: the
			 * mismatch alone, never "0 is out of range" */
			if (rc == VGPU_EMISMATCH && errs.count != 1)
				fail_msg("case %zu (%s): %zu errors, the second "
					 "%s", i, c->spec, errs.count,
					 errs.count > 1 ? errs.error[1].message :
					 "");
			continue;
		}
		if (unset != c->unset || r.present != c->present ||
		    r.copied != c->copied || r.defaulted != c->defaulted ||
		    r.value[VGPU_MEMORY] != c->mem ||
		    r.value[VGPU_MEMORY_PERCENTAGE] != c->pct)
			fail_msg("case %zu (%s): unset %#x present %#x copied %#x defaulted %#x mem %lld pct %lld",
				 i, c->spec, unset, r.present, r.copied,
				 r.defaulted, (long long)r.value[VGPU_MEMORY],
				 (long long)r.value[VGPU_MEMORY_PERCENTAGE]);
		/* without the flag a 0 that counted is out of range, as
		 * before: vgpu_resolve() keeps its contract */
		if (c->unset)
			assert_int_equal(vgpu_resolve(&f, in.limits,
						      in.nlimits, in.requests,
						      in.nrequests, &plain,
						      &errs),
					 VGPU_ERANGE);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_resolve__table),
		cmocka_unit_test(test_resolve__errors),
		cmocka_unit_test(test_resolve__error_value_masked_and_cut),
		cmocka_unit_test(test_resolve__error_value_drops_bytes_not_utf8),
		cmocka_unit_test(test_resolve__family_without_optional_names),
		cmocka_unit_test(test_resolve__first_duplicate_counts),
		cmocka_unit_test(test_resolve__family_check),
		cmocka_unit_test(test_resolve__strerror),
		cmocka_unit_test(test_resolve__zero_unset),
	};

	return cmocka_run_group_tests_name("resolve", tests, NULL, NULL);
}
