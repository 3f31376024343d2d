/*
 * fuzz_config.c - libFuzzer target for the config file (config.h): JSON
 * or YAML, a values file of the chart, or its ConfigMap.
 *
 * The input is the file.  Checked: config_build() never crashes; it
 * either builds a config or says why in a message that names the file;
 * and a config it builds is given again, unchanged, by the JSON file that
 * config_dump() writes of it (what `vgpu-webhook config` prints).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "config.h"
#include "fuzz_common.h"

#define PATH "c.yaml"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The dump of the config built of file[0..len), or NULL with err. */
static json_t *build_dump(const char *file, size_t len, char *err,
			  size_t errlen)
{
	struct config_source src = { PATH, NULL, false, NULL, 0 };
	struct config_bytes bytes = { file, len }, none = { NULL, 0 };
	struct config cfg;
	json_t *dump;

	err[0] = '\0';
	if (config_build(&cfg, &src, &bytes, &none, err, errlen))
		return NULL;
	dump = config_dump(&cfg);
	FUZZ_ASSERT(dump);
	config_release(&cfg);
	return dump;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *dump, *again;
	char err[512], *text;

	dump = build_dump((const char *)data, size, err, sizeof(err));
	if (!dump) {
		FUZZ_ASSERT(!strncmp(err, "config " PATH, strlen("config " PATH)));
		return 0;
	}
	/* A hamiDeviceConfig names a file this build did not read: the
	 * dump is built again without it. */
	json_object_del(dump, "hamiDeviceConfig");
	text = json_dumps(dump, JSON_COMPACT);
	FUZZ_ASSERT(text);
	again = build_dump(text, strlen(text), err, sizeof(err));
	FUZZ_ASSERT(again);
	json_object_del(again, "hamiDeviceConfig");
	FUZZ_ASSERT(json_equal(dump, again));
	free(text);
	json_decref(again);
	json_decref(dump);
	return 0;
}
