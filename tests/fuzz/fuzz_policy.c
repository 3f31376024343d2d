/*
 * fuzz_policy.c - libFuzzer target for the pod policy.  The first byte
 * picks one of several configurations; the rest is a pod (JSON).
 *
 * Invariants: a decision is always made; a denial carries a message and
 * neither operations nor warnings; warnings are at most 31 lines of at most
 * 120 characters; an allowed patch applies to the pod, and the patched pod
 * is allowed with no further operation.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct config *cfg;
	struct policy_decision d;
	json_t *pod;

	if (size < 1)
		return 0;
	cfg = fuzz_config(data[0]);
	pod = json_loadb((const char *)data + 1, size - 1,
			 JSON_REJECT_DUPLICATES, NULL);
	if (!json_is_object(pod)) {
		json_decref(pod);
		return 0;
	}
	FUZZ_ASSERT(policy_decision_init(&d) == 0);
	FUZZ_ASSERT(policy_decide(cfg, pod, &d) == 0);
	fuzz_check_warnings(d.warnings);
	if (d.code) {
		FUZZ_ASSERT(d.code == 400 || d.code == 403 || d.code == 422);
		FUZZ_ASSERT(d.message && d.message[0]);
		FUZZ_ASSERT(!patch_count(&d.patch) && !json_array_size(d.warnings));
	} else if (patch_count(&d.patch)) {
		char *b64 = patch_encode(&d.patch);

		FUZZ_ASSERT(b64);
		fuzz_check_patch(cfg, pod, b64);
		free(b64);
	}
	policy_decision_release(&d);
	json_decref(pod);
	return 0;
}
