/*
 * test_config.c - built-in defaults, the config file, flags, validation.
 */
#include <unistd.h>

#include "test.h"

#include "cfgkey.h"
#include "config.h"
#include "yamlio.h"

static char path[64];

/* Writes text to a fresh temporary file named in path. */
static void write_config(const char *text)
{
	int fd;

	snprintf(path, sizeof(path), "/tmp/vgpu-test-config-XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

/* Loads text over the defaults and checks; returns 0 or -1 with err. */
static int load(struct config *cfg, const char *text, char *err, size_t len)
{
	int rc;

	assert_int_equal(config_init(cfg), 0);
	write_config(text);
	rc = config_load_file(cfg, path, err, len);
	if (!rc)
		rc = config_check(cfg, err, len);
	unlink(path);
	return rc;
}

static void test_config__defaults(void **state)
{
	struct config cfg;
	const struct device *d;
	char err[256];

	(void)state;
	assert_int_equal(config_init(&cfg), 0);
	assert_int_equal(config_check(&cfg, err, sizeof(err)), 0);
	assert_string_equal(cfg.scheduler_name, "hami-scheduler");
	assert_true(cfg.force_overwrite_default_scheduler);
	assert_int_equal(cfg.privileged_policy, CONFIG_POLICY_DENY);
	assert_int_equal(cfg.node_name_policy, CONFIG_POLICY_DENY);
	assert_string_equal(cfg.node_scheduler_policy, "");
	assert_int_equal(cfg.ndevices, 1);
	d = &cfg.devices[0];
	assert_string_equal(d->family.name, "nvidia");
	assert_string_equal(d->family.resource[VGPU_COUNT], "nvidia.com/gpu");
	assert_string_equal(d->family.resource[VGPU_PRIORITY],
			    "nvidia.com/priority");
	assert_int_equal(d->family.default_gpu_num, 1);
	assert_int_equal(d->family.default_memory, 5000);
	assert_int_equal(d->family.default_cores, 0);
	assert_false(d->overwrite_env);
	assert_false(cfg.any_overwrite_env);
	assert_int_equal(json_array_size(d->tolerations), 1);
	assert_string_equal(json_string_value(json_object_get(
				    json_array_get(d->tolerations, 0), "operator")),
			    "Exists");
	config_release(&cfg);
	config_release(&cfg); /* releasing twice is harmless */
}

static void test_config__every_key(void **state)
{
	struct config cfg;
	const struct device *d;
	char err[256];

	(void)state;
	assert_int_equal(
		load(&cfg,
		     "{\"schedulerName\":\"my-sched\","
		     "\"forceOverwriteDefaultScheduler\":false,"
		     "\"privilegedPolicy\":\"warn\",\"nodeNamePolicy\":\"warn\","
		     "\"schedulerPolicy\":{\"node\":\"binpack\",\"gpu\":\"spread\"},"
		     "\"devices\":[{\"name\":\"a\",\"resourceCountName\":\"a.io/gpu\","
		     "\"resourceMemoryName\":\"a.io/mem\","
		     "\"resourceMemoryPercentageName\":\"a.io/pct\","
		     "\"resourceCoreName\":\"a.io/cores\","
		     "\"resourcePriorityName\":\"a.io/prio\","
		     "\"defaultGPUNum\":2,\"defaultMemory\":0,\"defaultCores\":50,"
		     "\"tolerations\":[{\"key\":\"a.io/gpu\",\"operator\":\"Equal\","
		     "\"value\":\"yes\",\"effect\":\"NoExecute\",\"tolerationSeconds\":60}],"
		     "\"runtimeClassName\":\"nvidia\",\"gpuCorePolicy\":\"force\","
		     "\"activeOOMKiller\":\"true\",\"overwriteEnv\":true},"
		     "{\"name\":\"b\",\"resourceCountName\":\"b.io/gpu\","
		     "\"resourceMemoryName\":\"b.io/mem\",\"defaultGPUNum\":0,"
		     "\"defaultMemory\":1048576,\"defaultCores\":0,\"tolerations\":[]}]}",
		     err, sizeof(err)),
		0);
	assert_string_equal(cfg.scheduler_name, "my-sched");
	assert_false(cfg.force_overwrite_default_scheduler);
	assert_int_equal(cfg.privileged_policy, CONFIG_POLICY_WARN);
	assert_int_equal(cfg.node_name_policy, CONFIG_POLICY_WARN);
	assert_string_equal(cfg.node_scheduler_policy, "binpack");
	assert_string_equal(cfg.gpu_scheduler_policy, "spread");
	assert_int_equal(cfg.ndevices, 2);
	d = &cfg.devices[0];
	assert_string_equal(d->family.resource[VGPU_MEMORY_PERCENTAGE],
			    "a.io/pct");
	assert_int_equal(d->family.default_gpu_num, 2);
	assert_int_equal(d->family.default_cores, 50);
	assert_string_equal(d->runtime_class_name, "nvidia");
	assert_string_equal(d->gpu_core_policy, "force");
	assert_string_equal(d->active_oom_killer, "true");
	assert_true(cfg.any_overwrite_env);
	assert_int_equal(json_integer_value(json_object_get(
				 json_array_get(d->tolerations, 0),
				 "tolerationSeconds")),
			 60);
	d = &cfg.devices[1];
	assert_null(vgpu_family_resource(&d->family, VGPU_CORES));
	assert_int_equal(d->family.default_memory, 1048576);
	config_release(&cfg);
}

struct bad_case {
	const char *text;
	const char *message; /* a part of the message */
};

#define DEVX(gpu, mem, cores)                                          \
	"\"name\":\"n\",\"resourceCountName\":\"n.io/gpu\","                \
	"\"resourceMemoryName\":\"n.io/mem\",\"defaultGPUNum\":" gpu          \
	",\"defaultMemory\":" mem ",\"defaultCores\":" cores
#define DEV DEVX("1", "1", "0")

static const struct bad_case bad_cases[] = {
	{ "{not json", "line 1" },
	/* Not JSON: YAML, here a string. */
	{ "not json", "(top level): expected an object, got a string" },
	{ "[]", "(top level): expected an object, got an array" },
	{ "{\"schedulerName\":\"a\",\"schedulerName\":\"b\"}", "duplicate" },
	{ "{\"nope\":1}", "unknown key \"nope\"" },
	{ "{\"schedulerPolicy\":{\"zone\":\"\"}}",
	  "unknown key \"schedulerPolicy.zone\"" },
	{ "{\"schedulerPolicy\":{\"node\":\"random\"}}",
	  "schedulerPolicy.node: \"random\" is not one of \"\", \"binpack\", \"spread\"" },
	{ "{\"schedulerName\":5}", "schedulerName: expected a string, got a number" },
	{ "{\"schedulerName\":\"Bad_Name\"}", "schedulerName" },
	{ "{\"schedulerName\":\"\"}", "schedulerName" },
	{ "{\"forceOverwriteDefaultScheduler\":\"yes\"}",
	  "forceOverwriteDefaultScheduler: expected a boolean" },
	{ "{\"privilegedPolicy\":\"allow\"}", "privilegedPolicy: \"allow\"" },
	{ "{\"nodeNamePolicy\":\"\"}", "nodeNamePolicy: \"\" is not one of" },
	{ "{\"devices\":{}}", "devices: expected an array" },
	{ "{\"devices\":[1]}", "devices[0]: expected an object" },
	{ "{\"devices\":[{" DEV "}]}",
	  "devices[0]: missing required key \"tolerations\"" },
	{ "{\"devices\":[{" DEV ",\"tolerations\":[],\"extra\":1}]}",
	  "unknown key \"devices[0].extra\"" },
	{ "{\"devices\":[{" DEV ",\"tolerations\":[{\"keys\":\"x\"}]}]}",
	  "unknown key \"devices[0].tolerations[0].keys\"" },
	{ "{\"devices\":[{" DEV ",\"tolerations\":[{\"operator\":\"Equal\"}]}]}",
	  "devices[0].tolerations[0].operator: must be \"Exists\" when key is empty" },
	{ "{\"devices\":[{" DEV ",\"tolerations\":[{\"key\":\"k\",\"operator\":\"Exists\",\"value\":\"v\"}]}]}",
	  "devices[0].tolerations[0].value: must be empty" },
	{ "{\"devices\":[{" DEV ",\"tolerations\":[{\"key\":\"k\",\"operator\":\"In\"}]}]}",
	  "devices[0].tolerations[0].operator: \"In\"" },
	{ "{\"devices\":[{" DEV ",\"tolerations\":[{\"key\":\"k\",\"effect\":\"NoRun\"}]}]}",
	  "devices[0].tolerations[0].effect: \"NoRun\"" },
	{ "{\"devices\":[{" DEV ",\"tolerations\":[{\"key\":\"k\",\"effect\":\"NoSchedule\",\"tolerationSeconds\":5}]}]}",
	  "must be \"NoExecute\" when tolerationSeconds is set" },
	{ "{\"devices\":[{" DEV ",\"tolerations\":[{\"key\":\"bad key\"}]}]}",
	  "devices[0].tolerations[0].key: \"bad key\" is not a qualified name" },
	{ "{\"devices\":[{" DEVX("1.5", "1", "0") ",\"tolerations\":[]}]}",
	  "devices[0].defaultGPUNum: expected an integer" },
	{ "{\"devices\":[{" DEV ",\"tolerations\":[],\"gpuCorePolicy\":\"max\"}]}",
	  "devices[0].gpuCorePolicy: \"max\"" },
	{ "{\"devices\":[{" DEV ",\"tolerations\":[],\"activeOOMKiller\":\"yes\"}]}",
	  "devices[0].activeOOMKiller: \"yes\"" },
	{ "{\"devices\":[{" DEV ",\"tolerations\":[],\"overwriteEnv\":1}]}",
	  "devices[0].overwriteEnv: expected a boolean" },
	{ "{\"devices\":[{" DEVX("1", "1048577", "0") ",\"tolerations\":[]}]}",
	  "devices[0].defaultMemory: 1048577 is out of range 0..1048576" },
	{ "{\"devices\":[{" DEVX("1", "1", "101") ",\"tolerations\":[]}]}",
	  "devices[0].defaultCores: 101 is out of range 0..100" },
	{ "{\"devices\":[{" DEVX("-1", "1", "0") ",\"tolerations\":[]}]}",
	  "devices[0].defaultGPUNum: -1 is out of range 0..2147483647" },
	{ "{\"devices\":[{" DEV ",\"tolerations\":[],\"resourceCoreName\":\"cores\"}]}",
	  "devices[0].resourceCoreName: \"cores\" is not a valid extended resource name" },
	{ "{\"devices\":[{" DEV ",\"tolerations\":[],\"runtimeClassName\":\"NV\"}]}",
	  "devices[0].runtimeClassName: \"NV\" is not a DNS-1123 subdomain" },
	{ "{\"devices\":[{" DEV ",\"tolerations\":[]},{" DEV ",\"tolerations\":[]}]}",
	  "devices[1].name: \"n\" is also the name of devices[0]" },
	{ "{\"devices\":[{" DEV ",\"tolerations\":[]},{\"name\":\"m\","
	  "\"resourceCountName\":\"m.io/gpu\",\"resourceMemoryName\":\"n.io/gpu\","
	  "\"defaultGPUNum\":1,\"defaultMemory\":1,\"defaultCores\":0,\"tolerations\":[]}]}",
	  "devices[1].resourceMemoryName: \"n.io/gpu\" is also devices[0].resourceCountName" },
	/* guards (SPEC section 2.1) */
	{ "{\"guards\":[]}", "guards: expected an object, got an array" },
	{ "{\"guards\":{\"labels\":{}}}", "unknown key \"guards.labels\"" },
	{ "{\"guards\":{\"env\":{\"policy\":\"allow\"}}}",
	  "guards.env.policy: \"allow\" is not one of \"deny\", \"strip\", \"warn\", \"off\"" },
	{ "{\"guards\":{\"env\":{\"names\":\"X\"}}}",
	  "guards.env.names: expected an array, got a string" },
	{ "{\"guards\":{\"env\":{\"names\":[\"\"]}}}",
	  "guards.env.names[0]: expected a non-empty string" },
	{ "{\"guards\":{\"env\":{\"allowedValues\":{\"X\":[1]}}}}",
	  "guards.env.allowedValues[\"X\"][0]: expected a non-empty string, got a number" },
	{ "{\"guards\":{\"env\":{\"extra\":1}}}",
	  "unknown key \"guards.env.extra\"" },
	{ "{\"guards\":{\"schedulerAnnotations\":{\"policy\":\"Deny\"}}}",
	  "guards.schedulerAnnotations.policy: \"Deny\"" },
	{ "{\"guards\":{\"schedulerAnnotations\":{\"keys\":[5]}}}",
	  "guards.schedulerAnnotations.keys[0]: expected a non-empty string, got a number" },
	{ "{\"guards\":{\"schedulerAnnotations\":{\"writers\":[\"a\",\"group:system:authenticated\"]}}}",
	  "guards.schedulerAnnotations.writers[1]: \"group:system:authenticated\" holds every tenant" },
	{ "{\"schedulerPolicy\":{\"node\":\"binpack\"},\"guards\":{\"schedulerAnnotations\":{\"keys\":[\"hami.io/*\"]}}}",
	  "guards.schedulerAnnotations.keys: a pattern matches \"hami.io/node-scheduler-policy\", which the webhook writes (schedulerPolicy.node)" },
	{ "{\"guards\":{\"schedulerAnnotations\":{\"writers\":[\"group:system:unauthenticated\"]}}}",
	  "writers[0]: \"group:system:unauthenticated\" holds every tenant" },
	{ "{\"guards\":{\"schedulerAnnotations\":{\"writers\":[\"group:system:serviceaccounts\"]}}}",
	  "writers[0]: \"group:system:serviceaccounts\" holds every tenant" },
	{ "{\"guards\":{\"schedulerAnnotations\":{\"writers\":[\"group:\"]}}}",
	  "writers[0]: \"group:\" names no group" },
	{ "{\"guards\":{\"volumeMounts\":{\"policy\":\"strip\"}}}",
	  "guards.volumeMounts.policy: \"strip\" is not one of \"deny\", \"warn\", \"off\"" },
	{ "{\"guards\":{\"volumeMounts\":{\"paths\":[\"/a\",\"\"]}}}",
	  "guards.volumeMounts.paths[1]: expected a non-empty string" },
	{ "{\"guards\":{\"volumeMounts\":{\"paths\":[\"./a\"]}}}",
	  "guards.volumeMounts.paths[0]: \"./a\" is not an absolute path" },
	{ "{\"guards\":{\"volumeMounts\":{\"paths\":\"/a\"}}}",
	  "guards.volumeMounts.paths: expected an array, got a string" },
	{ "{\"guards\":{\"volumeMounts\":[]}}",
	  "guards.volumeMounts: expected an object, got an array" },
	{ "{\"guards\":{\"volumeMounts\":{\"path\":[]}}}",
	  "unknown key \"guards.volumeMounts.path\"" },
};

static void test_config__refusals(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(bad_cases); i++) {
		struct config cfg;
		char err[512] = "";

		if (load(&cfg, bad_cases[i].text, err, sizeof(err)) != -1 ||
		    !strstr(err, bad_cases[i].message))
			fail_msg("case %zu: %s\n  got: %s", i, bad_cases[i].text,
				 err);
		config_release(&cfg);
	}
}

/* The built-in guards, and a file level that replaces only what it gives. */
static void test_config__guards(void **state)
{
	struct config cfg;
	const struct guards *g = &cfg.guards;
	json_t *groups = json_pack("[s]", "ops");
	char err[512];

	(void)state;
	assert_int_equal(config_init(&cfg), 0);
	assert_int_equal(g->annotation_policy, GUARD_POLICY_DENY);
	assert_int_equal(g->env_policy, GUARD_POLICY_DENY);
	assert_int_equal(g->keys.n, 6);
	assert_int_equal(g->names.n, 13);
	assert_true(pattern_set_findn(&g->keys, "hami.io/vgpu-devices-allocated",
				      30) >= 0);
	/* HAMi-core's controls are guarded; its log level and CUDA's own
	 * device selection are not */
	assert_true(pattern_set_findn(&g->names, "CUDA_REDIRECT", 13) >= 0);
	assert_true(pattern_set_findn(&g->names, "RECORD_KERNEL_INTERVAL",
				      22) >= 0);
	assert_true(pattern_set_findn(&g->names, "CUDA_DEVICE_SM_LIMIT_7",
				      22) >= 0);
	assert_true(pattern_set_findn(&g->names, "LIBCUDA_LOG_LEVEL", 17) < 0);
	assert_true(pattern_set_findn(&g->names, "CUDA_VISIBLE_DEVICES",
				      20) < 0);
	assert_true(guardcfg_allowed(g, "NVIDIA_VISIBLE_DEVICES", 22, "void", 4));
	assert_false(guardcfg_allowed(g, "NVIDIA_VISIBLE_DEVICES", 22, "all", 3));
	assert_true(guardcfg_is_writer(g,
		"system:serviceaccount:kube-system:hami-scheduler", NULL));
	assert_false(guardcfg_is_writer(g, "alice", groups));
	assert_int_equal(g->mount_policy, GUARD_POLICY_DENY);
	assert_int_equal(json_array_size(g->mount_paths), 1);
	assert_string_equal(guardcfg_mount_path(g,
		"/var/run/nvidia-container-devices/all", 37),
		"/var/run/nvidia-container-devices");
	assert_null(guardcfg_mount_path(g, "/var/run/nvidia-container", 25));
	config_release(&cfg);

	/* mount paths are kept in their normal form; a level gives only what
	 * it names */
	assert_int_equal(load(&cfg,
		"{\"guards\":{\"volumeMounts\":{\"paths\":[\"/a//b/./c/..\","
		"\"/\"],\"policy\":null}}}", err, sizeof(err)), 0);
	assert_int_equal(g->mount_policy, GUARD_POLICY_DENY);
	assert_string_equal(json_string_value(json_array_get(g->mount_paths,
							     0)), "/a/b");
	assert_string_equal(json_string_value(json_array_get(g->mount_paths,
							     1)), "/");
	/* what the level did not give keeps its built-in value */
	assert_int_equal(g->keys.n, 6);
	assert_int_equal(g->env_policy, GUARD_POLICY_DENY);
	config_release(&cfg);
	assert_int_equal(load(&cfg,
		"{\"guards\":{\"volumeMounts\":{\"policy\":\"warn\"}},"
		"\"profiles\":[{\"name\":\"p\",\"namespaces\":[\"x\"],"
		"\"guards\":{\"volumeMounts\":{\"policy\":\"off\","
		"\"paths\":[\"/x/\"]}}}]}", err, sizeof(err)), 0);
	assert_int_equal(g->mount_policy, GUARD_POLICY_WARN);
	assert_int_equal(json_array_size(g->mount_paths), 1);
	assert_int_equal(cfg.profiles[0].cfg.guards.mount_policy,
			 GUARD_POLICY_OFF);
	assert_string_equal(json_string_value(json_array_get(
		cfg.profiles[0].cfg.guards.mount_paths, 0)), "/x");
	config_release(&cfg);

	assert_int_equal(load(&cfg,
		"{\"guards\":{\"env\":{\"policy\":\"warn\"},"
		"\"schedulerAnnotations\":{\"writers\":[\"bob\",\"group:ops\"],"
		"\"policy\":null}}}", err, sizeof(err)), 0);
	assert_int_equal(g->env_policy, GUARD_POLICY_WARN);
	assert_int_equal(g->names.n, 13); /* kept */
	assert_int_equal(g->annotation_policy, GUARD_POLICY_DENY);
	assert_true(guardcfg_is_writer(g, "bob", NULL));
	assert_true(guardcfg_is_writer(g, "alice", groups));
	assert_false(guardcfg_is_writer(g,
		"system:serviceaccount:kube-system:hami-scheduler", NULL));
	assert_int_equal(g->keys.n, 6);
	assert_int_equal(json_array_size(g->mount_paths), 1);
	config_release(&cfg);

	/* a list replaces the built-in one whole */
	assert_int_equal(load(&cfg,
		"{\"guards\":{\"env\":{\"names\":[\"X_*\"],"
		"\"allowedValues\":{\"X_*\":[\"ok\"]}}}}", err, sizeof(err)), 0);
	assert_int_equal(g->names.n, 1);
	assert_true(guardcfg_allowed(g, "X_1", 3, "ok", 2));
	assert_false(guardcfg_allowed(g, "NVIDIA_VISIBLE_DEVICES", 22, "none", 4));
	config_release(&cfg);
	json_decref(groups);
}

static void test_config__null_is_absent(void **state)
{
	struct config cfg;
	char err[256];

	(void)state;
	/* as Helm renders unset values: optional keys may be null */
	assert_int_equal(
		load(&cfg,
		     "{\"schedulerName\":null,\"schedulerPolicy\":{\"node\":null},"
		     "\"devices\":[{" DEV ",\"tolerations\":[{\"key\":\"k\","
		     "\"operator\":\"Exists\",\"value\":null}],"
		     "\"resourceCoreName\":null,\"runtimeClassName\":null,"
		     "\"overwriteEnv\":null}]}",
		     err, sizeof(err)),
		0);
	assert_string_equal(cfg.scheduler_name, "hami-scheduler");
	assert_null(vgpu_family_resource(&cfg.devices[0].family, VGPU_CORES));
	assert_null(json_object_get(json_array_get(cfg.devices[0].tolerations, 0),
				    "value"));
	config_release(&cfg);

	/* but not for a required key */
	assert_int_equal(load(&cfg, "{\"devices\":[{" DEVX("null", "1", "0")
				    ",\"tolerations\":[]}]}",
			      err, sizeof(err)),
			 -1);
	assert_non_null(strstr(err, "devices[0].defaultGPUNum: expected an integer, got null"));
	config_release(&cfg);
}

static void test_config__unreadable_file(void **state)
{
	struct config cfg;
	char err[256];

	(void)state;
	assert_int_equal(config_init(&cfg), 0);
	assert_int_equal(config_load_file(&cfg, "/nonexistent/c.json", err,
					  sizeof(err)),
			 -1);
	assert_non_null(strstr(err, "/nonexistent/c.json"));
	config_release(&cfg);
}

static void test_config__flags(void **state)
{
	struct config cfg;
	char err[256];

	(void)state;
	assert_int_equal(config_init(&cfg), 0);
	assert_int_equal(config_set_scheduler_name(&cfg, "--scheduler-name",
						   "vgpu", err, sizeof(err)),
			 0);
	assert_int_equal(config_set_default_gpu_num(&cfg, "--default-gpu-num",
						    "3", err, sizeof(err)),
			 0);
	assert_int_equal(config_set_default_memory(&cfg, "--default-mem", "0",
						   err, sizeof(err)),
			 0);
	assert_int_equal(config_set_default_cores(&cfg, "--default-cores",
						  "100", err, sizeof(err)),
			 0);
	assert_string_equal(cfg.scheduler_name, "vgpu");
	assert_int_equal(cfg.devices[0].family.default_gpu_num, 3);
	assert_int_equal(cfg.devices[0].family.default_memory, 0);
	assert_int_equal(cfg.devices[0].family.default_cores, 100);

	assert_int_equal(config_set_default_cores(&cfg, "--default-cores",
						  "101", err, sizeof(err)),
			 -1);
	assert_non_null(strstr(err, "--default-cores"));
	assert_int_equal(config_set_default_memory(&cfg, "--default-mem", "5k",
						   err, sizeof(err)),
			 -1);
	assert_non_null(strstr(err, "\"5k\""));
	assert_int_equal(config_set_default_gpu_num(&cfg, "--default-gpu-num",
						    "-1", err, sizeof(err)),
			 -1);
	assert_int_equal(config_set_default_gpu_num(&cfg, "--default-gpu-num",
						    "99999999999999999999",
						    err, sizeof(err)),
			 -1);
	assert_int_equal(config_set_default_memory(&cfg, "--default-mem", "",
						   err, sizeof(err)),
			 -1);
	assert_int_equal(config_set_scheduler_name(&cfg, "--scheduler-name",
						   "", err, sizeof(err)),
			 -1);
	assert_non_null(strstr(err, "--scheduler-name"));
	config_release(&cfg);

	/* no device family to set */
	assert_int_equal(load(&cfg, "{\"devices\":[]}", err, sizeof(err)), 0);
	assert_int_equal(config_set_default_memory(&cfg, "--default-mem", "1",
						   err, sizeof(err)),
			 -1);
	assert_non_null(strstr(err, "no device family"));
	config_release(&cfg);
}

/* Profiles (behaviour §2.2): selection, effective configs, flags. */
static void test_config__profiles(void **state)
{
	static const char text[] =
		"{\"privilegedPolicy\": \"deny\", \"profiles\": ["
		"{\"name\": \"inference\", \"namespaces\": [\"serving-*\"],"
		" \"privilegedPolicy\": \"warn\","
		" \"guards\": {\"env\": {\"policy\": \"warn\"}},"
		" \"devices\": [{\"name\": \"nvidia\", \"defaultMemory\": 2000}]},"
		"{\"name\": \"whole\", \"podLabels\": {\"size\": \"whole\","
		" \"tier\": \"a\"},"
		" \"devices\": [{\"name\": \"nvidia\", \"defaultMemory\": 0}]}]}";
	const struct config *sel;
	struct config cfg;
	json_t *labels;
	char err[512];

	(void)state;
	assert_int_equal(load(&cfg, text, err, sizeof(err)), 0);
	assert_int_equal(cfg.nprofiles, 2);
	assert_null(cfg.profile);
	/* A flag set after the file: the profiles are built over it. */
	assert_int_equal(config_set_default_memory(&cfg, "--default-mem",
						   "9000", err, sizeof(err)),
			 0);
	assert_int_equal(config_check(&cfg, err, sizeof(err)), 0);
	assert_int_equal(cfg.devices[0].family.default_memory, 9000);

	labels = json_pack("{ssss}", "size", "whole", "tier", "a");
	sel = config_select(&cfg, "serving-x", 9, labels);
	assert_string_equal(sel->profile, "inference");
	assert_int_equal(sel->privileged_policy, CONFIG_POLICY_WARN);
	assert_int_equal(sel->guards.env_policy, GUARD_POLICY_WARN);
	assert_int_equal(sel->devices[0].family.default_memory, 2000);
	assert_true(sel->devices[0].from_profile &
		    DEVICE_FROM_PROFILE_MEMORY);
	assert_false(sel->devices[0].from_profile &
		     DEVICE_FROM_PROFILE_CORES);
	assert_int_equal(sel->nprofiles, 0);
	/* first match wins; the labels match the second */
	sel = config_select(&cfg, "ml", 2, labels);
	assert_string_equal(sel->profile, "whole");
	assert_int_equal(sel->privileged_policy, CONFIG_POLICY_DENY);
	assert_int_equal(sel->devices[0].family.default_memory, 0);
	/* every label must be there, with that value */
	json_object_set_new(labels, "tier", json_string("b"));
	assert_ptr_equal(config_select(&cfg, "ml", 2, labels), &cfg);
	assert_ptr_equal(config_select(&cfg, "serving", 7, NULL), &cfg);
	json_decref(labels);
	config_release(&cfg);

	/* a profile's keys in any order: its name and selectors after the
	 * families it overrides */
	assert_int_equal(load(&cfg,
		"{\"profiles\": [{\"devices\": [{\"defaultMemory\": 1,"
		" \"name\": \"nvidia\"}], \"podLabels\": {\"a\": \"b\"},"
		" \"name\": \"late\", \"schedulerPolicy\": {\"gpu\": \"spread\"}}]}",
		err, sizeof(err)), 0);
	assert_string_equal(cfg.profiles[0].name, "late");
	assert_int_equal(cfg.profiles[0].cfg.devices[0].family.default_memory, 1);
	assert_string_equal(cfg.profiles[0].cfg.gpu_scheduler_policy, "spread");
	config_release(&cfg);
}

/*
 * A podLabels profile applies over the namespace's profile (behaviour
 * §2.2): the keys it may give are its own, the rest (guards, policies)
 * the namespace's, whatever the order of the list; its configs over a
 * namespace profile are checked at load and a conflict names both.
 */
static void test_config__profiles_over_namespace(void **state)
{
	static const char text[] =
		"{\"privilegedPolicy\": \"warn\","
		" \"guards\": {\"env\": {\"policy\": \"warn\"}}, \"profiles\": ["
		"{\"name\": \"whole\", \"podLabels\": {\"size\": \"whole\"},"
		" \"schedulerPolicy\": {\"gpu\": \"spread\"},"
		" \"devices\": [{\"name\": \"nvidia\", \"defaultMemory\": 0}]},"
		"{\"name\": \"prod\", \"namespaces\": [\"prod-*\"],"
		" \"privilegedPolicy\": \"deny\","
		" \"guards\": {\"env\": {\"policy\": \"deny\"}},"
		" \"devices\": [{\"name\": \"nvidia\", \"defaultCores\": 30}]},"
		"{\"name\": \"dev\", \"namespaces\": [\"dev\"]}]}";
	static const char conflict[] =
		"{\"profiles\": [{\"name\": \"whole\", \"podLabels\":"
		" {\"size\": \"whole\"}, \"schedulerPolicy\": {\"node\":"
		" \"binpack\"}}, {\"name\": \"prod\", \"namespaces\": [\"prod\"],"
		" \"guards\": {\"schedulerAnnotations\": {\"keys\":"
		" [\"hami.io/*\"]}}}]}";
	const struct config *sel;
	struct config cfg;
	json_t *labels = json_pack("{ss}", "size", "whole");
	char err[512];

	(void)state;
	assert_int_equal(load(&cfg, text, err, sizeof(err)), 0);
	sel = config_select(&cfg, "prod-a", 6, labels);
	assert_string_equal(sel->profile, "prod/whole");
	assert_int_equal(sel->privileged_policy, CONFIG_POLICY_DENY);
	assert_int_equal(sel->guards.env_policy, GUARD_POLICY_DENY);
	assert_string_equal(sel->gpu_scheduler_policy, "spread");
	assert_int_equal(sel->devices[0].family.default_memory, 0);
	assert_int_equal(sel->devices[0].family.default_cores, 30);
	assert_ptr_equal(sel, &cfg.profiles[0].layered[0]);
	sel = config_select(&cfg, "dev", 3, labels);
	assert_string_equal(sel->profile, "dev/whole");
	assert_int_equal(sel->privileged_policy, CONFIG_POLICY_WARN);
	/* no namespace profile: over the top level */
	sel = config_select(&cfg, "test", 4, labels);
	assert_string_equal(sel->profile, "whole");
	assert_int_equal(sel->privileged_policy, CONFIG_POLICY_WARN);
	assert_int_equal(sel->guards.env_policy, GUARD_POLICY_WARN);
	/* without the label, the namespace's profile alone */
	sel = config_select(&cfg, "prod-a", 6, NULL);
	assert_string_equal(sel->profile, "prod");
	assert_int_equal(sel->devices[0].family.default_memory, 5000);
	config_release(&cfg);
	json_decref(labels);

	assert_int_equal(load(&cfg, conflict, err, sizeof(err)), -1);
	if (!strstr(err, "profiles[0] (\"whole\") over profiles[1] (\"prod\"): ") ||
	    !strstr(err, "hami.io/node-scheduler-policy"))
		fail_msg("message: %s", err);
	config_release(&cfg);
}

/* Builds {"profiles": [nns namespace profiles, nl podLabels profiles]}. */
static char *many_profiles(size_t nns, size_t nl)
{
	json_t *list = json_array(), *top;
	char name[32];
	size_t i;
	char *text;

	for (i = 0; i < nns + nl; i++) {
		snprintf(name, sizeof(name), "%s%zu", i < nns ? "ns" : "l", i);
		json_array_append_new(list, i < nns ?
			json_pack("{ss s[s]}", "name", name, "namespaces", name) :
			json_pack("{ss s{ss}}", "name", name, "podLabels", "k", name));
	}
	top = json_pack("{so}", "profiles", list);
	text = json_dumps(top, 0);
	json_decref(top);
	return text;
}

/* The podLabels-over-namespace combinations are bounded: 64 x 64 is
 * built, 65 x 65 refused with the count. */
static void test_config__profile_combinations_bounded(void **state)
{
	struct config cfg;
	char err[512];
	char *text;

	(void)state;
	text = many_profiles(64, 64);
	assert_non_null(text);
	if (load(&cfg, text, err, sizeof(err)))
		fail_msg("64 x 64: %s", err);
	assert_int_equal(cfg.profiles[64].nlayered, 64);
	config_release(&cfg);
	free(text);
	text = many_profiles(65, 65);
	assert_non_null(text);
	assert_int_equal(load(&cfg, text, err, sizeof(err)), -1);
	if (!strstr(err, "65 podLabels profiles over 65 namespace profiles "
			 "make 4225 combinations, more than 4096"))
		fail_msg("message: %s", err);
	config_release(&cfg);
	free(text);
}

static void test_config__profile_refusals(void **state)
{
	static const struct {
		const char *text, *want;
	} cases[] = {
		{ "{\"profiles\": [{\"name\": \"a\"}]}", "profiles[0]" },
		{ "{\"profiles\": [{\"namespaces\": [\"x\"]}]}", "name" },
		{ "{\"profiles\": [{\"name\": \"a\", \"namespaces\": []},"
		  "{\"name\": \"a\", \"namespaces\": [\"x\"]}]}",
		  "profiles[1].name" },
		{ "{\"profiles\": [{\"name\": \"a\", \"podLabels\": {\"k\": \"v\"},"
		  " \"guards\": {}}]}", "profiles[0].guards" },
		{ "{\"profiles\": [{\"name\": \"a\", \"podLabels\": {\"k\": \"v\"},"
		  " \"devices\": [{\"name\": \"nvidia\","
		  " \"activeOOMKiller\": \"true\"}]}]}",
		  "profiles[0].devices[0].activeOOMKiller" },
		/* a label must not choose how the GPUs are allocated */
		{ "{\"profiles\": [{\"name\": \"a\", \"podLabels\": {\"k\": \"v\"},"
		  " \"allocation\": \"dra\"}]}", "profiles[0].allocation" },
		{ "{\"allocation\": \"whole\"}", "allocation" },
		{ "{\"profiles\": [{\"name\": \"a\", \"podLabels\": {}}]}",
		  "profiles[0].podLabels" },
		{ "{\"profiles\": [{\"name\": \"a\", \"podLabels\": {\"k\": 1}}]}",
		  "profiles[0].podLabels.k" },
		{ "{\"profiles\": [{\"name\": \"a\", \"namespaces\": [\"x\"],"
		  " \"devices\": [{\"name\": \"hygon\"}]}]}",
		  "profiles[0].devices[0].name" },
		{ "{\"profiles\": [{\"name\": \"a\", \"namespaces\": [\"x\"],"
		  " \"schedulerPolicy\": {\"node\": \"tight\"}}]}",
		  "profiles[0].schedulerPolicy.node" },
		{ "{\"profiles\": {}}", "profiles" },
	};
	struct config cfg;
	char err[512];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(load(&cfg, cases[i].text, err, sizeof(err)),
				 -1);
		if (!strstr(err, cases[i].want))
			fail_msg("case %zu: \"%s\" does not name %s", i, err,
				 cases[i].want);
		config_release(&cfg);
	}
}

/* --- the table of keys ------------------------------------------------ */

/* One key of the table, with its path from the top of the file. */
struct key_at {
	char path[96];          /* "guards.env.policy"; a family's: its name */
	const struct cfgkey *k;
	bool family;            /* a key of an entry of devices */
};

/* Collects every key of keys (but objects, whose keys it collects). */
static size_t collect_keys(const struct cfgkey *keys, const char *prefix,
			   bool family, struct key_at *out, size_t n,
			   size_t max)
{
	for (; keys->name; keys++) {
		char kpath[96];

		snprintf(kpath, sizeof(kpath), "%s%s%s", prefix,
			 prefix[0] ? "." : "", keys->name);
		if (keys->type != &cfgkey_object) {
			assert_true(n < max);
			snprintf(out[n].path, sizeof(out[n].path), "%s", kpath);
			out[n].k = keys;
			out[n++].family = family;
		}
		if (keys->keys)
			n = collect_keys(keys->keys,
					 keys->type == &cfgkey_object ? kpath : "",
					 keys->type != &cfgkey_object, out, n,
					 max);
	}
	return n;
}

/* The member at the dotted kpath of obj, or NULL (borrowed). */
static json_t *at_path(json_t *obj, const char *kpath)
{
	char part[96];
	const char *dot;

	while (obj && (dot = strchr(kpath, '.'))) {
		snprintf(part, sizeof(part), "%.*s", (int)(dot - kpath), kpath);
		obj = json_object_get(obj, part);
		kpath = dot + 1;
	}
	return json_object_get(obj, kpath);
}

/* Sets the member at the dotted kpath of obj to v (stolen). */
static void set_path(json_t *obj, const char *kpath, json_t *v)
{
	char part[96];
	const char *dot;

	while ((dot = strchr(kpath, '.'))) {
		json_t *next;

		snprintf(part, sizeof(part), "%.*s", (int)(dot - kpath), kpath);
		next = json_object_get(obj, part);
		if (!next) {
			next = json_object();
			json_object_set_new(obj, part, next);
		}
		obj = next;
		kpath = dot + 1;
	}
	json_object_set_new(obj, kpath, v);
}

/* The value of key a at in cfg (a family's: of its first family). */
static json_t *value_of(const struct config *c, const struct key_at *a)
{
	json_t *dump = config_dump(c), *v;

	assert_non_null(dump);
	v = a->family ? json_object_get(json_array_get(json_object_get(dump,
			"devices"), 0), a->path) : at_path(dump, a->path);
	json_incref(v);
	json_decref(dump);
	return v;
}

/* Loads doc (consumed) as a config file; 0, or -1 with err. */
static int load_doc(struct config *c, json_t *doc, char *err, size_t len)
{
	char *text = json_dumps(doc, 0);
	int rc;

	assert_non_null(text);
	json_decref(doc);
	rc = load(c, text, err, len);
	free(text);
	return rc;
}

/*
 * A config file that gives the key a as value (consumed), plus profiles
 * (consumed, or NULL): a family's key in the built-in family.
 */
static json_t *file_with(const struct key_at *a, json_t *value,
			 json_t *profiles)
{
	json_t *doc = json_object();

	if (a->family) {
		struct config c;
		json_t *dump, *family;

		assert_int_equal(config_init(&c), 0);
		dump = config_dump(&c);
		family = json_deep_copy(json_array_get(json_object_get(dump,
						"devices"), 0));
		json_object_set_new(family, a->path, value);
		json_object_set_new(doc, "devices", json_pack("[o]", family));
		json_decref(dump);
		config_release(&c);
	} else if (value) {
		set_path(doc, a->path, value);
	}
	if (profiles)
		json_object_set_new(doc, "profiles", profiles);
	return doc;
}

/* A profile named name, selecting by namespace or by labels, giving a. */
static json_t *profile_with(const char *name, bool labels,
			    const struct key_at *a, json_t *value)
{
	json_t *p = labels ? json_pack("{ss s{ss}}", "name", name,
				       "podLabels", "team", "a") :
			     json_pack("{ss s[s]}", "name", name,
				       "namespaces", "ns");

	if (a && a->family)
		json_object_set_new(p, "devices",
				    json_pack("[{ss so}]", "name", "nvidia",
					      a->path, value));
	else if (a)
		set_path(p, a->path, value);
	return p;
}

/*
 * Every key of the table goes through read, copy and profile override: a
 * file that gives it reads it (the top level has the value), a profile
 * that does not give it has a copy of it, a profile that gives it has it
 * (and the top level keeps the built-in value), and a profile may give it
 * exactly where the table says.  A key dropped from any of these steps,
 * or a row without a sample, fails here.
 */
static void test_config__every_key_round_trips(void **state)
{
	struct key_at keys[64];
	struct config builtin, c;
	size_t n, i;
	char err[512];

	(void)state;
	n = collect_keys(config_keys, "", false, keys, 0, NELEM(keys));
	assert_true(n >= 30);
	assert_int_equal(config_init(&builtin), 0);
	assert_int_equal(config_check(&builtin, err, sizeof(err)), 0);
	for (i = 0; i < n; i++) {
		const struct key_at *a = &keys[i];
		const struct cfgkey *k = a->k;
		/* A profile has no profiles; it has a copy of every other key. */
		bool own = !a->family && !strcmp(a->path, "profiles");
		json_t *sample, *def, *got;

		if (!(k->where & CFGKEY_OWN) != !own)
			fail_msg("%s: %s copied into a profile's config", a->path,
				 own ? "must not be" : "must be");
		if (!k->sample)
			fail_msg("%s: the row has no sample", a->path);
		sample = json_loads(k->sample, JSON_DECODE_ANY, NULL);
		assert_non_null(sample);
		def = value_of(&builtin, a);
		if (json_equal(def, sample))
			fail_msg("%s: the sample is the built-in value", a->path);

		/* a key of profiles only: refused at the top level */
		if (!(k->where & (CFGKEY_TOP | CFGKEY_FAMILY))) {
			if (!load_doc(&c, file_with(a, json_incref(sample),
						    NULL), err, sizeof(err)) ||
			    !strstr(err, "unknown key"))
				fail_msg("%s: a key of profiles only is read at the top level",
					 a->path);
			config_release(&c);
			goto override;
		}
		/* read, and copied into a profile that does not give it */
		if (load_doc(&c, file_with(a, json_incref(sample),
					   k->where & CFGKEY_OWN ? NULL :
					   json_pack("[o]", profile_with("p",
						false, NULL, NULL))),
			     err, sizeof(err)))
			fail_msg("%s: the sample is refused: %s", a->path, err);
		got = value_of(&c, a);
		if (!json_equal(got, sample))
			fail_msg("%s: not read from the file", a->path);
		json_decref(got);
		if (!own) {
			got = value_of(&c.profiles[0].cfg, a);
			if (!json_equal(got, sample))
				fail_msg("%s: not copied into a profile",
					 a->path);
			json_decref(got);
		}
		config_release(&c);

override:
		/* a profile's own value; the top level keeps the built-in */
		if (k->keys || (a->family && !strcmp(a->path, "name"))) {
			/* devices: a profile overrides the families' keys
			 * (tested each); a family's name selects it */
		} else if (k->where & CFGKEY_PROFILE) {
			if (load_doc(&c, file_with(a, NULL, json_pack("[o]",
					profile_with("p", false, a,
						     json_incref(sample)))),
				     err, sizeof(err)))
				fail_msg("%s: refused in a profile: %s",
					 a->path, err);
			got = value_of(&c.profiles[0].cfg, a);
			if (!json_equal(got, sample))
				fail_msg("%s: a profile does not override it",
					 a->path);
			json_decref(got);
			got = value_of(&c, a);
			if (!json_equal(got, def))
				fail_msg("%s: a profile changed the top level",
					 a->path);
			json_decref(got);
			if (a->family &&
			    c.profiles[0].cfg.devices[0].from_profile != k->from)
				fail_msg("%s: from_profile %u, want %u",
					 a->path,
					 c.profiles[0].cfg.devices[0].from_profile,
					 k->from);
			config_release(&c);
			/* a profile that selects by podLabels */
			if (load_doc(&c, file_with(a, NULL, json_pack("[o]",
					profile_with("p", true, a,
						     json_incref(sample)))),
				     err, sizeof(err)) !=
			    ((k->where & CFGKEY_LABELS) ? 0 : -1))
				fail_msg("%s: podLabels profile: %s", a->path,
					 (k->where & CFGKEY_LABELS) ? err :
					 "accepted");
			if (!(k->where & CFGKEY_LABELS) &&
			    !strstr(err, "a profile that selects by podLabels may not override this key"))
				fail_msg("%s: %s", a->path, err);
			config_release(&c);
		} else {
			if (!load_doc(&c, file_with(a, NULL, json_pack("[o]",
					profile_with("p", false, a,
						     json_incref(sample)))),
				      err, sizeof(err)))
				fail_msg("%s: a profile may give it", a->path);
			if (!strstr(err, a->family ?
				    "a profile may not override this key" :
				    "unknown key"))
				fail_msg("%s: %s", a->path, err);
			config_release(&c);
		}
		json_decref(def);
		json_decref(sample);
	}
	config_release(&builtin);
}

/* The names of the keys of keys with a bit of where, and extra names. */
static json_t *names_where(const struct cfgkey *keys, unsigned where,
			   const char *const *extra)
{
	json_t *set = json_object();

	for (; extra && *extra; extra++)
		json_object_set_new(set, *extra, json_true());
	for (; keys->name; keys++)
		if (keys->where & where)
			json_object_set_new(set, keys->name, json_true());
	return set;
}

/* The strings of the array list as a set (an object). */
static json_t *set_of(const json_t *list)
{
	json_t *set = json_object(), *v;
	size_t i;

	json_array_foreach(list, i, v)
		json_object_set_new(set, json_string_value(v), json_true());
	return set;
}

static int failures;

/*
 * Compares the schema properties props (of the object at kpath) with the
 * keys of keys that have a bit of where, plus extra names: the same
 * names, and for each key its JSON type, its choices, its range, the keys
 * of an object and of a family, the required keys of a family.
 */
static void compare_schema(const struct cfgkey *keys, const json_t *props,
			   unsigned where, const char *const *extra,
			   const char *kpath)
{
	json_t *want = names_where(keys, where, extra), *have = json_object();
	const char *name;
	json_t *v;

	json_object_foreach((json_t *)props, name, v)
		json_object_set_new(have, name, json_true());
	EXPECT(json_equal(want, have), "%s: the chart's schema has %s, the table %s",
	       kpath, json_dumps(have, JSON_COMPACT | JSON_SORT_KEYS),
	       json_dumps(want, JSON_COMPACT | JSON_SORT_KEYS));
	json_decref(want);
	json_decref(have);
	for (; keys->name; keys++) {
		const json_t *p = json_object_get(props, keys->name);
		char sub[128];

		if (!(keys->where & where) || !p)
			continue;
		snprintf(sub, sizeof(sub), "%s.%s", kpath, keys->name);
		EXPECT(json_is_string(json_object_get(p, "type")) &&
		       !strcmp(json_string_value(json_object_get(p, "type")),
			       keys->type->json),
		       "%s: schema type is not %s", sub, keys->type->json);
		if (keys->choices) {
			json_t *a = set_of(json_object_get(p, "enum")), *b;
			size_t i;

			b = json_object();
			for (i = 0; keys->choices[i]; i++)
				json_object_set_new(b, keys->choices[i],
						    json_true());
			EXPECT(json_equal(a, b), "%s: schema enum differs", sub);
			json_decref(a);
			json_decref(b);
		}
		if (keys->type == &cfgkey_int)
			EXPECT(json_integer_value(json_object_get(p, "minimum")) == 0 &&
			       json_integer_value(json_object_get(p, "maximum")) == keys->max,
			       "%s: schema range is not 0..%lld", sub,
			       (long long)keys->max);
		if (keys->type == &cfgkey_object) {
			EXPECT(json_is_false(json_object_get(p,
				"additionalProperties")),
			       "%s: schema allows other keys", sub);
			compare_schema(keys->keys, json_object_get(p,
				       "properties"), where, NULL, sub);
		} else if (keys->keys) {
			/* devices: the keys of a family */
			const json_t *items = json_object_get(p, "items");
			static const char *const name_only[] = { "name",
								  NULL };

			compare_schema(keys->keys, json_object_get(items,
				       "properties"), where & CFGKEY_TOP ?
				       CFGKEY_FAMILY : where,
				       where & CFGKEY_TOP ? NULL : name_only, sub);
			if (where & CFGKEY_TOP) {
				json_t *a = set_of(json_object_get(items,
							"required"));
				json_t *b = names_where(keys->keys,
							CFGKEY_REQUIRED, NULL);

				EXPECT(json_equal(a, b),
				       "%s: schema's required keys differ", sub);
				json_decref(a);
				json_decref(b);
			}
		}
	}
}

/* Deletes from the dump of a config the keys of profiles only. */
static void prune_profile_only(json_t *dump)
{
	struct key_at keys[64];
	size_t n, i;

	n = collect_keys(config_keys, "", false, keys, 0, NELEM(keys));
	for (i = 0; i < n; i++) {
		char parent[96], *dot;

		if (keys[i].family ||
		    (keys[i].k->where & (CFGKEY_TOP | CFGKEY_FAMILY)))
			continue;
		memcpy(parent, keys[i].path, sizeof(parent));
		dot = strrchr(parent, '.');
		if (dot) {
			*dot = '\0';
			json_object_del(at_path(dump, parent), dot + 1);
		} else {
			json_object_del(dump, parent);
		}
	}
}

/*
 * The chart (charts/vgpu-webhook): values.schema.json holds the keys of
 * the table, each with its type, choices and range, and the profiles'
 * rules; values.yaml gives every key its built-in value (but the writers,
 * which the chart fills from hami.*, and no profiles).
 */
static void test_config__chart_schema_and_values(void **state)
{
	static const char *const selectors[] = { "name", "namespaces",
						 "podLabels", NULL };
	static const char *const name[] = { "name", NULL };
	const json_t *config, *profile, *labels;
	struct yamlio_error yerr;
	json_error_t jerr;
	json_t *schema, *values, *want, *got, *docs;
	struct config c;
	char *text;
	size_t len = 0;

	(void)state;
	failures = 0;
	schema = json_load_file("charts/vgpu-webhook/values.schema.json", 0,
				&jerr);
	if (!schema)
		fail_msg("charts/vgpu-webhook/values.schema.json: %s", jerr.text);
	config = json_object_get(json_object_get(schema, "properties"),
				 "config");
	compare_schema(config_keys, json_object_get(config, "properties"),
		       CFGKEY_TOP, NULL, "config");
	profile = json_object_get(json_object_get(json_object_get(
		json_object_get(config, "properties"), "profiles"), "items"),
		"properties");
	compare_schema(config_keys, profile, CFGKEY_PROFILE, selectors,
		       "config.profiles[]");
	/* what a profile that selects by podLabels may give */
	labels = json_object_get(json_object_get(json_object_get(
		json_object_get(config, "properties"), "profiles"), "items"),
		"then");
	want = names_where(config_keys, CFGKEY_LABELS, selectors);
	got = set_of(json_object_get(json_object_get(labels, "propertyNames"),
				     "enum"));
	EXPECT(json_equal(want, got), "podLabels profile: keys differ");
	json_decref(want);
	json_decref(got);
	want = names_where(cfgkey_find(config_keys, "devices")->keys,
			   CFGKEY_LABELS, name);
	got = set_of(json_object_get(json_object_get(json_object_get(
		json_object_get(json_object_get(labels, "properties"),
				"devices"), "items"), "propertyNames"), "enum"));
	EXPECT(json_equal(want, got), "podLabels profile: family keys differ");
	json_decref(want);
	json_decref(got);
	json_decref(schema);

	text = test_read_file("charts/vgpu-webhook/values.yaml", &len);
	if (!text)
		fail_msg("charts/vgpu-webhook/values.yaml cannot be read");
	docs = yamlio_load(text, len, NULL, &yerr);
	free(text);
	if (!docs)
		fail_msg("values.yaml: %s", yerr.text);
	values = json_deep_copy(json_object_get(json_array_get(docs, 0),
						"config"));
	json_decref(docs);
	assert_int_equal(config_init(&c), 0);
	want = config_dump(&c);
	config_release(&c);
	json_object_del(json_object_get(json_object_get(values, "guards"),
					"schedulerAnnotations"), "writers");
	json_object_del(json_object_get(json_object_get(want, "guards"),
					"schedulerAnnotations"), "writers");
	prune_profile_only(want);
	EXPECT(json_is_array(json_object_get(values, "profiles")) &&
	       !json_array_size(json_object_get(values, "profiles")),
	       "values.yaml: config.profiles is not []");
	json_object_del(values, "profiles");
	EXPECT(json_equal(values, want),
	       "values.yaml config differs from the built-in one:\n%s\n%s",
	       json_dumps(values, JSON_COMPACT | JSON_SORT_KEYS),
	       json_dumps(want, JSON_COMPACT | JSON_SORT_KEYS));
	json_decref(values);
	json_decref(want);
	assert_int_equal(failures, 0);
}

/*
 * The configuration config_build() makes of the file text (named name in
 * messages), as its JSON dump (a malloc'd string), or NULL with err.
 */
static char *build_dump(const char *name, const char *text, char *err,
			size_t errlen)
{
	struct config_source src = { name, NULL, false, NULL, 0 };
	struct config_bytes file = { text, strlen(text) }, none = { NULL, 0 };
	struct config cfg;
	json_t *dump;
	char *out;

	if (config_build(&cfg, &src, &file, &none, err, errlen))
		return NULL;
	dump = config_dump(&cfg);
	assert_non_null(dump);
	out = json_dumps(dump, JSON_SORT_KEYS);
	json_decref(dump);
	config_release(&cfg);
	return out;
}

/* Both texts build, and into the same configuration. */
static void assert_same_config(const char *a, const char *b)
{
	char err[512], *da, *db;

	da = build_dump("a", a, err, sizeof(err));
	if (!da)
		fail_msg("a: %s", err);
	db = build_dump("b", b, err, sizeof(err));
	if (!db)
		fail_msg("b: %s", err);
	assert_string_equal(da, db);
	free(da);
	free(db);
}

static const char json_config[] =
	"{\"schedulerName\": \"vgpu\", \"nodeNamePolicy\": \"warn\",\n"
	" \"schedulerPolicy\": {\"node\": \"binpack\"},\n"
	" \"guards\": {\"schedulerAnnotations\": {\"writers\": [\"ops\"]}},\n"
	" \"devices\": [{\"name\": \"nvidia\", \"resourceCountName\": \"nvidia.com/gpu\",\n"
	"   \"resourceMemoryName\": \"nvidia.com/gpumem\",\n"
	"   \"resourceMemoryPercentageName\": \"nvidia.com/gpumem-percentage\",\n"
	"   \"resourceCoreName\": \"nvidia.com/gpucores\",\n"
	"   \"resourcePriorityName\": \"nvidia.com/priority\",\n"
	"   \"defaultGPUNum\": 1, \"defaultMemory\": 3000, \"defaultCores\": 25,\n"
	"   \"tolerations\": [{\"key\": \"nvidia.com/gpu\", \"operator\": \"Exists\",\n"
	"                     \"effect\": \"NoSchedule\"}]}]}\n";

static const char yaml_body[] =
	"schedulerName: vgpu\n"
	"nodeNamePolicy: warn # a comment\n"
	"schedulerPolicy: {node: binpack}\n"
	"guards:\n"
	"  schedulerAnnotations:\n"
	"    writers: [ops]\n"
	"devices:\n"
	"  - name: nvidia\n"
	"    resourceCountName: nvidia.com/gpu\n"
	"    resourceMemoryName: nvidia.com/gpumem\n"
	"    resourceMemoryPercentageName: nvidia.com/gpumem-percentage\n"
	"    resourceCoreName: nvidia.com/gpucores\n"
	"    resourcePriorityName: nvidia.com/priority\n"
	"    defaultGPUNum: 1\n"
	"    defaultMemory: 3000\n"
	"    defaultCores: 25\n"
	"    tolerations:\n"
	"      - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}\n";

/* Indents every line of text by n spaces, into out. */
static void indent(char *out, size_t size, const char *text, int n)
{
	size_t at = 0;

	while (*text) {
		size_t len = strcspn(text, "\n");

		at += (size_t)snprintf(out + at, size - at, "%*s%.*s\n", n, "",
				       (int)len, text);
		assert_true(at < size);
		text += len + (text[len] ? 1 : 0);
	}
}

/* A YAML file gives what the JSON file it stands for gives. */
static void test_config__yaml_file(void **state)
{
	(void)state;
	assert_same_config(json_config, yaml_body);
	/* JSON is read as JSON after white space and a byte order mark. */
	assert_same_config("{\"schedulerName\": \"x\"}", "\xef\xbb\xbf \n{\"schedulerName\": \"x\"}");
	assert_same_config("{\"schedulerName\": \"x\"}", "---\nschedulerName: x\n...\n");
	/* Kubernetes' reading: yes is a boolean. */
	assert_same_config("{\"forceOverwriteDefaultScheduler\": false}",
			   "forceOverwriteDefaultScheduler: no\n");
}

/* The chart's values file: its config key, rendered as the chart does. */
static void test_config__values_file(void **state)
{
	char values[4096], body[2048];

	(void)state;
	indent(body, sizeof(body), yaml_body, 2);
	snprintf(values, sizeof(values),
		 "image:\n  repository: vgpu-webhook\nreplicaCount: 2\nconfig:\n%s",
		 body);
	assert_same_config(json_config, values);
	/* writers empty: HAMi's service accounts, from hami.*; an empty
	 * profiles list is no profiles. */
	assert_same_config(
		"{\"guards\": {\"schedulerAnnotations\": {\"writers\": [\n"
		"  \"system:serviceaccount:hami-system:gpu-scheduler\",\n"
		"  \"system:serviceaccount:hami-system:gpu-device-plugin\"]}}}",
		"hami: {namespace: hami-system, releaseName: gpu}\n"
		"config:\n  profiles: []\n"
		"  guards: {schedulerAnnotations: {writers: []}}\n");
	assert_same_config(
		"{\"guards\": {\"schedulerAnnotations\": {\"writers\": [\n"
		"  \"system:serviceaccount:kube-system:hami-scheduler\",\n"
		"  \"system:serviceaccount:kube-system:hami-device-plugin\"]}}}",
		"config: {nodeNamePolicy: deny}\n");
	assert_same_config("{\"guards\": {\"schedulerAnnotations\": {\"writers\": [\"a\"]}}}",
			   "config: {guards: {schedulerAnnotations: {writers: [a]}}}\n");
}

/* The chart's ConfigMap: its data."config.json", JSON or YAML. */
static void test_config__configmap(void **state)
{
	char cm[4096], body[2048];

	(void)state;
	indent(body, sizeof(body), json_config, 4);
	snprintf(cm, sizeof(cm),
		 "# Source: vgpu-webhook/templates/configmap.yaml\n"
		 "apiVersion: v1\nkind: ConfigMap\n"
		 "metadata:\n  name: vgpu-webhook-config\n  namespace: vgpu-system\n"
		 "data:\n  config.json: |\n%s", body);
	assert_same_config(json_config, cm);
	/* kubectl get -o json writes it as JSON. */
	assert_same_config("{\"schedulerName\": \"x\"}",
			   "{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"data\": "
			   "{\"config.json\": \"schedulerName: x\\n\"}}");
}

/* Each refusal names the file, and the key, line and column it can. */
static void test_config__yaml_refusals(void **state)
{
	static const struct {
		const char *text, *want;
	} cases[] = {
		{ "schedulerName: a\n  bad: [\n",
		  "config f.yaml: line 2, column 6: mapping values are not allowed in this context" },
		{ "schedulerNmae: x\n", "config f.yaml: unknown key \"schedulerNmae\"" },
		{ "a: 1\n---\nb: 2\n", "config f.yaml: 2 YAML documents, expected one" },
		{ "schedulerName: a\nschedulerName: b\n", "config f.yaml: line 2" },
		{ "config:\n  schedulerNmae: x\n",
		  "config f.yaml: unknown key \"config.schedulerNmae\"" },
		{ "config: [1]\n", "config f.yaml: config: expected an object" },
		{ "config:\n  nodeNamePolicy: allow\n", "nodeNamePolicy" },
		{ "kind: ConfigMap\ndata: {other: x}\n",
		  "config f.yaml: a ConfigMap without the string data.\"config.json\"" },
		{ "kind: ConfigMap\ndata:\n  config.json: |\n    {\"schedulerName\": \n",
		  "config f.yaml, data.\"config.json\": " },
		{ "kind: ConfigMap\ndata:\n  config.json: |\n    {\"defaultMem\": 1}\n",
		  "config f.yaml, data.\"config.json\": unknown key \"defaultMem\"" },
		{ "- a\n", "config f.yaml: (top level): expected an object" },
	};
	char err[512], *d;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		err[0] = '\0';
		d = build_dump("f.yaml", cases[i].text, err, sizeof(err));
		if (d || !strstr(err, cases[i].want))
			fail_msg("case %zu: \"%s\", want \"%s\"", i, d ? d : err,
				 cases[i].want);
	}
}

/* hamiDeviceConfig is found in a YAML file, a values file, a ConfigMap. */
static void test_config__hami_path_yaml(void **state)
{
	static const char *const texts[] = {
		"hamiDeviceConfig: /h.yaml\n",
		"config: {hamiDeviceConfig: /h.yaml}\n",
		"kind: ConfigMap\ndata: {config.json: '{\"hamiDeviceConfig\": \"/h.yaml\"}'}\n",
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		char *p = config_hami_path(texts[i], strlen(texts[i]));

		assert_non_null(p);
		assert_string_equal(p, "/h.yaml");
		free(p);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_config__defaults),
		cmocka_unit_test(test_config__every_key),
		cmocka_unit_test(test_config__refusals),
		cmocka_unit_test(test_config__guards),
		cmocka_unit_test(test_config__null_is_absent),
		cmocka_unit_test(test_config__unreadable_file),
		cmocka_unit_test(test_config__flags),
		cmocka_unit_test(test_config__profiles),
		cmocka_unit_test(test_config__profiles_over_namespace),
		cmocka_unit_test(test_config__profile_refusals),
		cmocka_unit_test(test_config__profile_combinations_bounded),
		cmocka_unit_test(test_config__every_key_round_trips),
		cmocka_unit_test(test_config__chart_schema_and_values),
		cmocka_unit_test(test_config__yaml_file),
		cmocka_unit_test(test_config__values_file),
		cmocka_unit_test(test_config__configmap),
		cmocka_unit_test(test_config__yaml_refusals),
		cmocka_unit_test(test_config__hami_path_yaml),
	};

	return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
