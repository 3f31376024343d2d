/*
 * fuzz_hami.c - libFuzzer target for the reader of HAMi's
 * device-config.yaml (hami.h) and the config built over it.
 *
 * The input is the file.  Checked: hami_devices() never crashes and stays
 * within yamlio's limits; it gives either families or one message that
 * names the file; and config_build() on those bytes either builds a
 * config whose every family passes the checks, or says why, naming the
 * file or a key.
 */
#include <stdint.h>
#include <string.h>

#include <jansson.h>

#include "config.h"
#include "fuzz_common.h"
#include "hami.h"

#define PATH "device-config.yaml"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	struct config_source src = { NULL, PATH, true, NULL, 0 };
	struct config_bytes hami = { text, size };
	struct config cfg;
	json_t *tols, *fams;
	char err[512];

	tols = json_array();
	FUZZ_ASSERT(tols);
	err[0] = '\0';
	fams = hami_devices(PATH, text, size, tols, err, sizeof(err));
	if (fams) {
		FUZZ_ASSERT(json_is_array(fams) && json_array_size(fams) > 0);
	} else {
		FUZZ_ASSERT(!strncmp(err, "hami-device-config " PATH ": ",
				     strlen("hami-device-config " PATH ": ")));
		FUZZ_ASSERT(strlen(err) < sizeof(err) - 1);
	}
	err[0] = '\0';
	if (config_build(&cfg, &src, NULL, &hami, err, sizeof(err)) == 0) {
		FUZZ_ASSERT(fams);
		config_release(&cfg);
	} else {
		FUZZ_ASSERT(err[0]);
	}
	json_decref(fams);
	json_decref(tols);
	return 0;
}
