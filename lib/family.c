/*
 * family.c - the built-in device family and the checks of a configured one.
 */
#include <stdio.h>
#include <string.h>

#include "vgpu.h"

const struct vgpu_family vgpu_family_nvidia = {
	.name = "nvidia",
	.resource = {
		[VGPU_COUNT] = "nvidia.com/gpu",
		[VGPU_MEMORY] = "nvidia.com/gpumem",
		[VGPU_MEMORY_PERCENTAGE] = "nvidia.com/gpumem-percentage",
		[VGPU_CORES] = "nvidia.com/gpucores",
		[VGPU_PRIORITY] = "nvidia.com/priority",
	},
	.default_gpu_num = 1,
	.default_memory = 5000,
	.default_cores = 0,
};

static const char *const config_keys[VGPU_NRESOURCES] = {
	[VGPU_COUNT] = "resourceCountName",
	[VGPU_MEMORY] = "resourceMemoryName",
	[VGPU_MEMORY_PERCENTAGE] = "resourceMemoryPercentageName",
	[VGPU_CORES] = "resourceCoreName",
	[VGPU_PRIORITY] = "resourcePriorityName",
};

const char *vgpu_resource_config_key(enum vgpu_resource res)
{
	if ((unsigned)res >= VGPU_NRESOURCES)
		return NULL;
	return config_keys[res];
}

const char *vgpu_family_resource(const struct vgpu_family *f,
				 enum vgpu_resource res)
{
	if ((unsigned)res >= VGPU_NRESOURCES || !f->resource[res] ||
	    !f->resource[res][0])
		return NULL;
	return f->resource[res];
}

/* Fills *err with code, the configuration key and a formatted message. */
static int fail(struct vgpu_error *err, int code, const char *key,
		const char *message)
{
	err->code = code;
	err->key = key;
	err->value[0] = '\0';
	snprintf(err->message, sizeof(err->message), "%s", message);
	return code;
}

static int check_default(struct vgpu_error *err, const char *key,
			 int64_t value, int64_t max)
{
	char message[VGPU_MESSAGE_MAX];

	if (value >= 0 && value <= max)
		return 0;
	snprintf(message, sizeof(message), "%s: %lld is out of range 0..%lld",
		 key, (long long)value, (long long)max);
	return fail(err, VGPU_ERANGE, key, message);
}

int vgpu_family_check(const struct vgpu_family *f, struct vgpu_error *err)
{
	char message[VGPU_MESSAGE_MAX];
	int i, j, rc;

	if (!f->name || !f->name[0])
		return fail(err, VGPU_EINVAL, "name", "name: must not be empty");
	for (i = 0; i < VGPU_NRESOURCES; i++) {
		const char *name = vgpu_family_resource(f, i);

		if (!name) {
			if (i != VGPU_COUNT && i != VGPU_MEMORY)
				continue;
			snprintf(message, sizeof(message),
				 "%s: must not be empty", config_keys[i]);
			return fail(err, VGPU_EINVAL, config_keys[i], message);
		}
		if (!vgpu_resource_name_validn(name, strlen(name))) {
			snprintf(message, sizeof(message),
				 "%s: \"%.100s\" is not a valid extended resource name",
				 config_keys[i], name);
			return fail(err, VGPU_ENAME, config_keys[i], message);
		}
		for (j = 0; j < i; j++) {
			const char *other = vgpu_family_resource(f, j);

			if (!other || strcmp(name, other))
				continue;
			snprintf(message, sizeof(message),
				 "%s: \"%.100s\" is also %s", config_keys[i],
				 name, config_keys[j]);
			return fail(err, VGPU_EDUPLICATE, config_keys[i],
				    message);
		}
	}
	if ((rc = check_default(err, "defaultGPUNum", f->default_gpu_num,
				VGPU_MAX_COUNT)) ||
	    (rc = check_default(err, "defaultMemory", f->default_memory,
				VGPU_MAX_MEMORY)) ||
	    (rc = check_default(err, "defaultCores", f->default_cores,
				VGPU_MAX_CORES)))
		return rc;
	return 0;
}
