/*
 * config.h - the policy configuration (docs/behaviour.md §2): built-in
 * defaults, the JSON file, the common flags, and their validation.  Each
 * key is one row of config_keys[] (cfgkey.h), which every step follows.
 *
 * Life cycle: config_init() fills the built-in defaults; config_load_file()
 * replaces what the file gives; the setters of the common flags
 * (config_set_scheduler_name() and the others) override single keys;
 * config_check() validates the result.  A checked config is only read
 * afterwards, so any number of threads may share it.
 */
#ifndef CONFIG_H
#define CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "guardcfg.h"
#include "vgpu.h"

/*
 * What privilegedPolicy and nodeNamePolicy say to do with a pod that
 * breaks them (not to be confused with policy.h's POLICY_* operations).
 */
enum config_policy {
	CONFIG_POLICY_DENY,
	CONFIG_POLICY_WARN,
	CONFIG_POLICY_OFF, /* resourceAnnotationPolicy and envFromPolicy */
};

/*
 * How the GPUs of the pods a config applies to are allocated (allocation,
 * behaviour §2): HAMi's scheduler and device plugin (what the webhook is
 * for), a DRA driver that serves whole devices through their extended
 * resource names (KEP-5004), or something the webhook leaves alone.
 */
enum config_allocation {
	CONFIG_ALLOCATION_HAMI,
	CONFIG_ALLOCATION_DRA,
	CONFIG_ALLOCATION_OFF,
};

/* "hami", "dra" or "off". */
const char *config_allocation_name(enum config_allocation a);

/* One device family and what the webhook writes for it. */
struct device {
	struct vgpu_family family; /* its strings point at the fields below */
	char *name;
	char *resource[VGPU_NRESOURCES]; /* "" when absent */
	char *runtime_class_name;        /* "" when absent */
	char *gpu_core_policy;           /* "", default, force or disable */
	char *active_oom_killer;         /* "", true or false */
	bool overwrite_env;
	json_t *tolerations; /* array of validated toleration objects */
	unsigned from_profile; /* DEVICE_FROM_PROFILE_*: defaults a profile set */
};

/* Bits of struct device.from_profile, for the warnings (behaviour §2.2). */
enum {
	DEVICE_FROM_PROFILE_GPU_NUM = 1u << 0,
	DEVICE_FROM_PROFILE_MEMORY = 1u << 1,
	DEVICE_FROM_PROFILE_CORES = 1u << 2,
};

struct profile;

struct config {
	enum config_allocation allocation;
	char *scheduler_name;
	bool force_overwrite_default_scheduler;
	enum config_policy privileged_policy;
	enum config_policy node_name_policy;
	enum config_policy resource_annotation_policy; /* behaviour §4.3 */
	enum config_policy env_from_policy;            /* behaviour §4.6 */
	char *node_scheduler_policy; /* "", binpack or spread */
	char *gpu_scheduler_policy;  /* "", binpack or spread */
	char *hami_device_config;    /* hamiDeviceConfig: a path, or "" */
	struct device *devices;
	size_t ndevices;
	bool any_overwrite_env; /* set by config_check() */
	struct guards guards;   /* behaviour §2.1 (guardcfg.h) */
	json_t *workloads_json; /* `workloads` (behaviour §8), checked: an
				   array of {apiVersion, kind, templates} */
	/* Profiles (behaviour §2.2).  The top-level config holds the file's
	 * `profiles` as read (checked at load) and, after config_check(),
	 * one effective config per profile; an effective config has no
	 * profiles of its own and names its profile. */
	const char *profile;     /* NULL at top level; borrowed */
	json_t *profiles_json;   /* the file's "profiles", or NULL */
	struct profile *profiles;
	size_t nprofiles;
	/* The names of the families of HAMi's file that config_build() left
	 * out because they share a name or a resource name with one of the
	 * file's own `devices`, "a, b" (malloc'd), or NULL: top level only. */
	char *hami_dropped;
};

/*
 * One profile, with the config its pods get.  A profile that selects by
 * podLabels gives only the keys tenants may choose (behaviour §2.2): the
 * rest comes from the namespace, so it has one effective config over the
 * top level (cfg) and one over each namespace profile (one that selects by
 * namespaces alone), in list order (layered).
 */
struct profile {
	char *name;
	struct pattern_set namespaces; /* empty: no namespace condition */
	bool by_namespace;
	char **label_keys; /* podLabels, nlabels pairs */
	char **label_values;
	size_t nlabels;
	size_t ns_ordinal; /* a namespace profile: 1 + its index among the
			      namespace profiles; else 0 */
	struct config cfg; /* the effective config over the top level */
	struct config *layered; /* podLabels: over namespace profile k,
				   layered[k - 1]; nlayered of them */
	char **layered_names;   /* their names, "NAMESPACE/LABELS" */
	size_t nlayered;
};

/*
 * The config for a pod (behaviour §2.2): the first profile of cfg whose
 * namespace patterns match ns[0..nslen) and whose podLabels are all in
 * labels (an object of the pod's labels, or NULL) is the one that
 * applies; none: cfg itself.  A profile that selects by podLabels applies
 * over the first namespace profile that matches ns (or the top level), so
 * that tenants, who write their labels, choose only the keys such a
 * profile may give.  A few comparisons per profile; cfg is only read.
 */
const struct config *config_select(const struct config *cfg, const char *ns,
				   size_t nslen, const json_t *labels);

/*
 * The keys of the config file, by the rules of cfgkey.h: the top level,
 * with the keys of a family under "devices" and of the guards under
 * "guards".
 */
extern const struct cfgkey config_keys[];

/* Fills the built-in configuration.  Returns 0, or -1 out of memory. */
int config_init(struct config *cfg) __attribute__((warn_unused_result));

/* Frees everything cfg owns.  Accepts a zeroed or released config. */
void config_release(struct config *cfg);

/*
 * Reads the JSON file path over cfg: each key the file gives replaces the
 * built-in value, and "devices" replaces the whole list.  Unknown keys at
 * any level, wrong types and bad values are refused.  Returns 0, or -1 with
 * a message naming the file and the key in err[0..errlen).
 */
int config_load_file(struct config *cfg, const char *path, char *err,
		     size_t errlen) __attribute__((warn_unused_result));

/*
 * The setters of the common flags, each for one key: schedulerName, and
 * defaultGPUNum, defaultMemory and defaultCores of the first device
 * family.  value is the flag's text; what is how the command line spells
 * the flag ("--default-mem"), and begins every message.  Each returns 0,
 * or -1 for a bad value (or no device family, or no memory) with the
 * message in err[0..errlen).  They check the value alone: config_check()
 * checks the whole afterwards.
 */
int config_set_scheduler_name(struct config *cfg, const char *what,
			      const char *value, char *err, size_t errlen)
	__attribute__((warn_unused_result));
int config_set_default_gpu_num(struct config *cfg, const char *what,
			       const char *value, char *err, size_t errlen)
	__attribute__((warn_unused_result));
int config_set_default_memory(struct config *cfg, const char *what,
			      const char *value, char *err, size_t errlen)
	__attribute__((warn_unused_result));
int config_set_default_cores(struct config *cfg, const char *what,
			     const char *value, char *err, size_t errlen)
	__attribute__((warn_unused_result));

/* The largest config file read. */
#define CONFIG_FILE_MAX ((size_t)4 << 20)

/*
 * Sets one key of the configuration from value, the text of a flag; what
 * is the flag as it is spelled ("--default-mem"), for the message.  The
 * config_set_*() functions above are such setters.
 */
typedef int config_set_fn(struct config *cfg, const char *what,
			  const char *value, char *err, size_t errlen);

/* One flag of the configuration, applied over the file. */
struct config_setting {
	config_set_fn *set;
	char what[64];     /* the flag as spelled */
	const char *value; /* borrowed */
};

/*
 * Where a configuration comes from: its file, HAMi's device-config.yaml,
 * and the flags over them.
 */
struct config_source {
	const char *path; /* the file, or NULL for none (borrowed) */
	/* HAMi's device-config.yaml (behaviour §2.3), or NULL (borrowed):
	 * that of --hami-device-config, or else the file's hamiDeviceConfig
	 * as it was at start (config_hami_path()). */
	const char *hami_path;
	bool hami_from_flag; /* hami_path is the flag's: the key is ignored */
	const struct config_setting *settings; /* in the order given */
	size_t nsettings;
};

/* The bytes of one file of a source (borrowed). */
struct config_bytes {
	const char *data;
	size_t len;
};

/*
 * Builds *cfg from src, with file the bytes of src->path and hami those
 * of src->hami_path (each unused without its path): the built-in values,
 * then HAMi's families over the built-in ones, then the file (which must
 * be valid on its own), then the families of HAMi's file that the file's
 * own `devices` leaves out (behaviour §2.3), then the flags in their
 * order, then the checks and the profiles.  Without the flag, the file's
 * hamiDeviceConfig must name src->hami_path (or be "" without one).
 * Returns 0, or -1 with a message that names the file, flag or key in
 * err[0..errlen) (cfg then released).  The one way `serve`, `review` and
 * `default` make a config, at start and at each reload.
 */
int config_build(struct config *cfg, const struct config_source *src,
		 const struct config_bytes *file,
		 const struct config_bytes *hami, char *err, size_t errlen)
	__attribute__((warn_unused_result));

/*
 * The hamiDeviceConfig of the JSON data[0..len) when it is a non-empty
 * string: a malloc'd copy the caller frees, or NULL (no such key, or
 * data not valid: config_build() says why).
 */
char *config_hami_path(const char *data, size_t len);

/*
 * config_load_file() for the bytes data[0..len) of the file path (named
 * in messages only).
 */
int config_load_buffer(struct config *cfg, const char *path, const char *data,
		       size_t len, char *err, size_t errlen)
	__attribute__((warn_unused_result));

/*
 * The top level of cfg (not its profiles' effective configs) as the JSON
 * file that would give it: a new reference, or NULL out of memory.
 */
json_t *config_dump(const struct config *cfg);

/*
 * Validates the whole configuration (ranges, names, uniqueness of family
 * and resource names), computes derived fields, and builds the effective
 * config of each profile over the top level as it stands (so after the
 * flags).  Returns 0, or -1 with a
 * message naming the key.
 */
int config_check(struct config *cfg, char *err, size_t errlen)
	__attribute__((warn_unused_result));

#endif /* CONFIG_H */
