/*
 * test_hami.c - HAMi's device-config.yaml as families (hami.h), and how
 * config_build() puts them under the config file (behaviour §2.3).
 */
#include "test.h"

#include "config.h"
#include "hami.h"

static int failures;

#define REALISTIC "tests/fixtures/hami/device-config.yaml"

static const char tols[] =
	"[{\"key\": \"nvidia.com/gpu\", \"operator\": \"Exists\","
	" \"effect\": \"NoSchedule\"}]";

/* hami_devices() over text; NULL with the message in err. */
static json_t *devices_of(const char *text, char *err, size_t errlen)
{
	json_t *t = test_json(tols), *list;

	list = hami_devices("h.yaml", text, strlen(text), t, err, errlen);
	json_decref(t);
	return list;
}

/* The chart's own file: one family a section that names count and
 * memory, in the order of hami.h, with each role's name. */
static void test_hami__realistic_file(void **state)
{
	static const struct {
		const char *name, *count, *memory, *cores;
	} want[] = {
		{ "nvidia", "nvidia.com/gpu", "nvidia.com/gpumem",
		  "nvidia.com/gpucores" },
		{ "cambricon", "cambricon.com/vmlu",
		  "cambricon.com/mlu.smlu.vmemory", "cambricon.com/mlu.smlu.vcore" },
		{ "hygon", "hygon.com/dcunum", "hygon.com/dcumem",
		  "hygon.com/dcucores" },
		{ "metax", "metax-tech.com/sgpu", "metax-tech.com/vmemory",
		  "metax-tech.com/vcore" },
		{ "mthreads", "mthreads.com/vgpu", "mthreads.com/sgpu-memory",
		  "mthreads.com/sgpu-core" },
		{ "kunlun", "kunlunxin.com/vxpu", "kunlunxin.com/vxpu-memory", "" },
		{ "enflame", "enflame.com/drs-gcu", "enflame.com/gcu-memory",
		  "enflame.com/gcu-core" },
		{ "amd", "amd.com/gpu", "amd.com/gpumem", "amd.com/gpucores" },
		{ "MR-V100", "iluvatar.ai/MR-V100-vgpu", "iluvatar.ai/MR-V100.vMem",
		  "" },
		{ "BI-V150", "iluvatar.ai/BI-V150-vgpu", "iluvatar.ai/BI-V150.vMem",
		  "" },
		{ "Ascend910B3", "huawei.com/Ascend910B3",
		  "huawei.com/Ascend910B3-memory", "huawei.com/Ascend910B3-core" },
		{ "Ascend310P", "huawei.com/Ascend310P",
		  "huawei.com/Ascend310P-memory", "huawei.com/Ascend310P-core" },
	};
	char err[600], *text;
	json_t *list, *f, *t;
	size_t len = 0, i;

	(void)state;
	text = test_read_file(REALISTIC, &len);
	if (!text)
		fail_msg(REALISTIC " cannot be read");
	t = test_json(tols);
	list = hami_devices(REALISTIC, text, len, t, err, sizeof(err));
	free(text);
	if (!list)
		fail_msg("%s", err);
	EXPECT(json_array_size(list) == NELEM(want), "%zu families",
	       json_array_size(list));
	for (i = 0; i < NELEM(want) && i < json_array_size(list); i++) {
		f = json_array_get(list, i);
#define STR(k) json_string_value(json_object_get(f, k))
		EXPECT(!strcmp(STR("name"), want[i].name), "%zu: %s", i,
		       STR("name"));
		EXPECT(!strcmp(STR("resourceCountName"), want[i].count), "%s",
		       STR("resourceCountName"));
		EXPECT(!strcmp(STR("resourceMemoryName"), want[i].memory), "%s",
		       STR("resourceMemoryName"));
		EXPECT(!strcmp(STR("resourceCoreName"), want[i].cores), "%s",
		       STR("resourceCoreName"));
		if (i)
			EXPECT(json_array_size(json_object_get(f,
							       "tolerations")) == 0,
			       "%s has tolerations", want[i].name);
	}
	f = json_array_get(list, 0);
	EXPECT(!strcmp(STR("resourceMemoryPercentageName"),
		       "nvidia.com/gpumem-percentage"), "pct");
	EXPECT(!strcmp(STR("resourcePriorityName"), "nvidia.com/priority"),
	       "prio");
	EXPECT(!strcmp(STR("gpuCorePolicy"), "default"), "policy");
#undef STR
	EXPECT(json_integer_value(json_object_get(f, "defaultGPUNum")) == 1,
	       "gpu num");
	EXPECT(json_integer_value(json_object_get(f, "defaultMemory")) == 0,
	       "memory");
	EXPECT(json_equal(json_object_get(f, "tolerations"), t),
	       "nvidia tolerations");
	EXPECT(json_is_false(json_object_get(f, "overwriteEnv")), "env");
	json_decref(t);
	json_decref(list);
	assert_int_equal(failures, 0);
}

/* A key left out has Go's zero value, as HAMi reads it; the keys the
 * webhook uses are mapped; vnpus may be the older bare list. */
static void test_hami__mapping_and_zero_values(void **state)
{
	char err[600];
	json_t *list, *f;

	(void)state;
	list = devices_of("nvidia:\n"
			  "  resourceCountName: a.io/gpu\n"
			  "  resourceMemoryName: a.io/mem\n"
			  "  runtimeClassName: nvidia\n"
			  "  gpuCorePolicy: force\n"
			  "  overwriteEnv: true\n"
			  "  defaultCores: 25\n"
			  "  unknownKey: [1, {x: y}]\n"
			  "vnpus:\n"
			  "- chipName: 910A\n"
			  "  resourceName: huawei.com/Ascend910A\n"
			  "  resourceMemoryName: huawei.com/Ascend910A-memory\n"
			  "  runtimeClassName: ascend\n"
			  "  overwriteEnv: true\n",
			  err, sizeof(err));
	if (!list)
		fail_msg("%s", err);
	assert_int_equal(json_array_size(list), 2);
	f = json_array_get(list, 0);
	assert_int_equal(json_integer_value(json_object_get(f, "defaultGPUNum")),
			 0);
	assert_int_equal(json_integer_value(json_object_get(f, "defaultMemory")),
			 0);
	assert_int_equal(json_integer_value(json_object_get(f, "defaultCores")),
			 25);
	assert_string_equal(json_string_value(json_object_get(f,
			    "runtimeClassName")), "nvidia");
	assert_string_equal(json_string_value(json_object_get(f,
			    "gpuCorePolicy")), "force");
	assert_true(json_is_true(json_object_get(f, "overwriteEnv")));
	assert_string_equal(json_string_value(json_object_get(f,
			    "resourceCoreName")), "");
	f = json_array_get(list, 1);
	assert_string_equal(json_string_value(json_object_get(f, "name")),
			    "910A");
	assert_string_equal(json_string_value(json_object_get(f,
			    "runtimeClassName")), "ascend");
	/* overwriteEnv of an Ascend entry is Ascend's, not NVIDIA's. */
	assert_true(json_is_false(json_object_get(f, "overwriteEnv")));
	json_decref(list);
}

/* Refusals name the file, the key path and the value. */
static void test_hami__refusals(void **state)
{
	static const struct {
		const char *yaml;
		const char *want;
	} rows[] = {
		{ "nvidia:\n  resourceCountName: a.io/g\n"
		  "  resourceMemoryName: a.io/m\n  defaultMemory: lots\n",
		  "hami-device-config h.yaml: nvidia.defaultMemory: expected an integer, got a string \"lots\"" },
		{ "nvidia:\n  resourceCountName: a.io/g\n"
		  "  resourceMemoryName: a.io/m\n  defaultMemory: 1.5\n",
		  "nvidia.defaultMemory: expected an integer, got a number 1.5" },
		{ "nvidia:\n  resourceCountName: a.io/g\n"
		  "  resourceMemoryName: a.io/m\n  defaultCores: 101\n",
		  "nvidia.defaultCores: 101 is out of range 0..100" },
		{ "nvidia:\n  resourceCountName: a.io/g\n"
		  "  resourceMemoryName: a.io/m\n  defaultGPUNum: -1\n",
		  "nvidia.defaultGPUNum: -1 is out of range" },
		{ "nvidia:\n  resourceCountName: a.io/g\n"
		  "  resourceMemoryName: a.io/m\n  overwriteEnv: \"true\"\n",
		  "nvidia.overwriteEnv: expected a boolean, got a string \"true\"" },
		{ "nvidia:\n  resourceCountName: 5\n",
		  "nvidia.resourceCountName: expected a string, got an integer 5" },
		{ "nvidia:\n  resourceCountName: a.io/g\n"
		  "  resourceMemoryName: a.io/m\n  gpuCorePolicy: always\n",
		  "nvidia.gpuCorePolicy: \"always\" is not one of" },
		/* Values are masked (a control byte dropped) and cut to 47
		 * characters (behaviour §2.3). */
		{ "nvidia:\n  resourceCountName: a.io/g\n"
		  "  resourceMemoryName: a.io/m\n  gpuCorePolicy: \"al\\eways\"\n",
		  "nvidia.gpuCorePolicy: \"always\" is not one of" },
		{ "nvidia:\n  resourceCountName: a.io/g\n"
		  "  resourceMemoryName: a.io/m\n  runtimeClassName: "
		  "BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB\n",
		  "nvidia.runtimeClassName: \"BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB...\" is not a DNS-1123 subdomain" },
		{ "nvidia:\n  resourceCountName: gpu\n  resourceMemoryName: a.io/m\n",
		  "nvidia.resourceCountName: \"gpu\" is not a valid extended resource name" },
		{ "nvidia:\n  resourceCountName: a.io/g\n"
		  "  resourceMemoryName: a.io/m\n  runtimeClassName: Bad_Name\n",
		  "nvidia.runtimeClassName: \"Bad_Name\" is not a DNS-1123 subdomain" },
		{ "cambricon:\n  resourceCountName: a.io/g\n"
		  "  resourceMemoryName: a.io/g\n",
		  "cambricon.resourceMemoryName: \"a.io/g\" is also cambricon.resourceCountName" },
		{ "hygon:\n  resourceCountName: a.io/g\n  resourceMemoryName: a.io/m\n"
		  "amd:\n  resourceCountName: b.io/g\n  resourceMemoryName: a.io/m\n",
		  "amd.resourceMemoryName: \"a.io/m\" is also a resource name of hygon" },
		{ "iluvatars:\n- {commonWord: X, resourceCountName: a.io/g,"
		  " resourceMemoryName: a.io/m}\n- {commonWord: X,"
		  " resourceCountName: b.io/g, resourceMemoryName: b.io/m}\n",
		  "iluvatars[1]: the family name \"X\" is also that of iluvatars[0]" },
		{ "iluvatars: {a: b}\n", "iluvatars: expected a sequence, got an object" },
		{ "iluvatars: [5]\n", "iluvatars[0]: expected a mapping, got an integer 5" },
		{ "vnpus: {configs: 3}\n", "vnpus.configs: expected a sequence" },
		{ "cambricon: x\n", "cambricon: expected a mapping, got a string \"x\"" },
		{ "- a\n", "(top level): expected a mapping of device sections, got an array" },
		{ "", "(top level): expected a mapping of device sections, got null" },
		{ "nvidia: [\n", "hami-device-config h.yaml: line 2, column 1: " },
		{ "a: 1\na: 2\n", "h.yaml: line 2" },
		{ "vastai:\n  resourceCountName: v.com/va\n",
		  "no section names both a count and a memory resource" },
		{ "nvidia:\n  resourceCountName: a.io/g\n",
		  "no section names both a count and a memory resource" },
	};
	char err[600];
	json_t *list;
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(rows); i++) {
		err[0] = '\0';
		list = devices_of(rows[i].yaml, err, sizeof(err));
		EXPECT(!list, "row %zu accepted", i);
		json_decref(list);
		EXPECT(strstr(err, rows[i].want), "row %zu: %s", i, err);
		EXPECT(!strncmp(err, "hami-device-config h.yaml: ", 27),
		       "row %zu: %s", i, err);
	}
	assert_int_equal(failures, 0);
}

/* Aliases that copy too much and deep nesting are bounded by yamlio. */
static void test_hami__hostile_input(void **state)
{
	char err[600], *deep;
	json_t *list;

	(void)state;
	list = devices_of("a: &a [1,2,3,4,5,6,7,8,9]\n"
			  "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
			  "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
			  "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
			  "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
			  "f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
			  "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\n",
			  err, sizeof(err));
	assert_null(list);
	assert_non_null(strstr(err, "aliases expand to more than"));
	deep = test_nest(1000, "[", "", "]");
	list = devices_of(deep, err, sizeof(err));
	free(deep);
	assert_null(list);
	assert_non_null(strstr(err, "nested deeper than"));
}

/* --- config_build() with HAMi's file ------------------------------------ */

static const char hami_yaml[] =
	"nvidia:\n"
	"  resourceCountName: nvidia.com/gpu\n"
	"  resourceMemoryName: nvidia.com/gpumem\n"
	"  resourceMemoryPercentageName: nvidia.com/gpumem-percentage\n"
	"  resourceCoreName: nvidia.com/gpucores\n"
	"  defaultMemory: 3000\n"
	"  defaultGPUNum: 1\n"
	"cambricon:\n"
	"  resourceCountName: cambricon.com/vmlu\n"
	"  resourceMemoryName: cambricon.com/mlu.smlu.vmemory\n";

/* Builds cfg from a config file text (NULL: none), hami_yaml, the key
 * check as the flag or the key gives it, and settings. */
static int build(struct config *cfg, const char *json, bool from_flag,
		 const struct config_setting *settings, size_t n, char *err,
		 size_t errlen)
{
	struct config_source src = { json ? "c.json" : NULL, "h.yaml",
				     from_flag, settings, n };
	struct config_bytes file = { json, json ? strlen(json) : 0 };
	struct config_bytes hami = { hami_yaml, strlen(hami_yaml) };

	return config_build(cfg, &src, &file, &hami, err, errlen);
}

/* HAMi's families replace the built-in family; the file's keys and the
 * flags still apply over them. */
static void test_hami__build_replaces_builtin(void **state)
{
	struct config_setting mem = { config_set_default_memory, "--default-mem",
				      "1234" };
	struct config cfg;
	char err[600];

	(void)state;
	if (build(&cfg, NULL, true, NULL, 0, err, sizeof(err)))
		fail_msg("%s", err);
	assert_int_equal(cfg.ndevices, 2);
	assert_string_equal(cfg.devices[0].name, "nvidia");
	assert_int_equal(cfg.devices[0].family.default_memory, 3000);
	assert_string_equal(cfg.devices[0].resource[VGPU_PRIORITY], "");
	assert_int_equal(json_array_size(cfg.devices[0].tolerations), 1);
	assert_string_equal(cfg.devices[1].name, "cambricon");
	config_release(&cfg);

	if (build(&cfg, "{\"schedulerName\": \"s\"}", true, &mem, 1, err,
		  sizeof(err)))
		fail_msg("%s", err);
	assert_string_equal(cfg.scheduler_name, "s");
	assert_int_equal(cfg.ndevices, 2);
	assert_int_equal(cfg.devices[0].family.default_memory, 1234);
	config_release(&cfg);
}

/* The file's own devices come first; HAMi's families follow unless they
 * share a name or a resource name with one of them. */
static void test_hami__build_file_devices_win(void **state)
{
	struct config cfg;
	char err[600];

	(void)state;
	if (build(&cfg,
		  "{\"devices\": [{\"name\": \"gpu\","
		  " \"resourceCountName\": \"nvidia.com/gpu\","
		  " \"resourceMemoryName\": \"x.io/mem\", \"defaultGPUNum\": 1,"
		  " \"defaultMemory\": 7, \"defaultCores\": 0,"
		  " \"tolerations\": []}]}",
		  true, NULL, 0, err, sizeof(err)))
		fail_msg("%s", err);
	assert_int_equal(cfg.ndevices, 2);
	assert_string_equal(cfg.devices[0].name, "gpu");
	assert_int_equal(cfg.devices[0].family.default_memory, 7);
	assert_string_equal(cfg.devices[1].name, "cambricon");
	/* HAMi's nvidia, left out (it shares nvidia.com/gpu), is named. */
	assert_non_null(cfg.hami_dropped);
	assert_string_equal(cfg.hami_dropped, "nvidia");
	config_release(&cfg);

	/* Same name, other resources: still the file's. */
	if (build(&cfg,
		  "{\"devices\": [{\"name\": \"cambricon\","
		  " \"resourceCountName\": \"c.io/n\","
		  " \"resourceMemoryName\": \"c.io/m\", \"defaultGPUNum\": 1,"
		  " \"defaultMemory\": 7, \"defaultCores\": 0,"
		  " \"tolerations\": []}]}",
		  true, NULL, 0, err, sizeof(err)))
		fail_msg("%s", err);
	assert_int_equal(cfg.ndevices, 2);
	assert_string_equal(cfg.devices[0].resource[VGPU_COUNT], "c.io/n");
	assert_string_equal(cfg.devices[1].name, "nvidia");
	assert_string_equal(cfg.hami_dropped, "cambricon");
	config_release(&cfg);
}

/* Without the flag, the file's hamiDeviceConfig must name the file read
 * at start; with the flag, the key is not looked at. */
static void test_hami__build_key_must_match(void **state)
{
	struct config cfg;
	char err[600];

	(void)state;
	assert_int_equal(build(&cfg, "{\"hamiDeviceConfig\": \"h.yaml\"}", false,
			       NULL, 0, err, sizeof(err)), 0);
	config_release(&cfg);
	assert_int_equal(build(&cfg, "{\"hamiDeviceConfig\": \"other.yaml\"}",
			       false, NULL, 0, err, sizeof(err)), -1);
	assert_string_equal(err,
			    "config c.json: hamiDeviceConfig: \"other.yaml\" is not the file read at start (\"h.yaml\"): restart to read another");
	assert_int_equal(build(&cfg, "{\"hamiDeviceConfig\": \"other.yaml\"}",
			       true, NULL, 0, err, sizeof(err)), 0);
	config_release(&cfg);
}

/* config_hami_path() finds the key for main() before the build. */
static void test_hami__config_hami_path(void **state)
{
	char *p;

	(void)state;
#define PEEK(s) config_hami_path(s, strlen(s))
	p = PEEK("{\"hamiDeviceConfig\": \"/h/d.yaml\"}");
	assert_non_null(p);
	assert_string_equal(p, "/h/d.yaml");
	free(p);
	assert_null(PEEK("{\"hamiDeviceConfig\": \"\"}"));
	assert_null(PEEK("{\"hamiDeviceConfig\": 5}"));
	assert_null(PEEK("not json"));
#undef PEEK
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hami__realistic_file),
		cmocka_unit_test(test_hami__mapping_and_zero_values),
		cmocka_unit_test(test_hami__refusals),
		cmocka_unit_test(test_hami__hostile_input),
		cmocka_unit_test(test_hami__build_replaces_builtin),
		cmocka_unit_test(test_hami__build_file_devices_win),
		cmocka_unit_test(test_hami__build_key_must_match),
		cmocka_unit_test(test_hami__config_hami_path),
	};

	return cmocka_run_group_tests_name("hami", tests, NULL, NULL);
}
