/*
 * test_config.c - built-in defaults, the config file, flags, validation.
 */
#include <unistd.h>

#include "test.h"

#include "config.h"

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
	{ "not json", "line 1" },
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
	assert_int_equal(g->given, GUARD_GIVEN_MOUNT_PATHS);
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
	assert_int_equal(g->given, GUARD_GIVEN_ENV_POLICY | GUARD_GIVEN_WRITERS);
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
		cmocka_unit_test(test_config__profile_refusals),
	};

	return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
