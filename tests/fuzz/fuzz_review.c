/*
 * fuzz_review.c - libFuzzer target for the AdmissionReview decoder.
 *
 * Invariants: every input gets an answer (200, 400 or 500, never a crash);
 * a 200 answer is a JSON AdmissionReview whose response.uid echoes the
 * request; a patch is valid base64 of an array of operations that applies
 * to the request's object; and the patched object, sent again, gives no
 * further patch.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "fuzz_common.h"
#include "review.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct config *cfg = fuzz_config(0);
	struct review_answer ans;
	json_t *out, *in, *response;

	review_answer_init(&ans);
	review_handlen(cfg, (const char *)data, size, &ans);
	FUZZ_ASSERT(ans.http_status == 200 || ans.http_status == 400 ||
		    ans.http_status == 500);
	if (ans.http_status != 200) {
		review_answer_release(&ans);
		return 0;
	}
	out = json_loadb(ans.body, ans.body_len, JSON_REJECT_DUPLICATES, NULL);
	in = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
	FUZZ_ASSERT(out && in);
	response = json_object_get(out, "response");
	FUZZ_ASSERT(json_equal(json_object_get(response, "uid"),
			       json_object_get(json_object_get(in, "request"),
					       "uid")));
	FUZZ_ASSERT(!json_object_get(response, "patch") ==
		    !json_object_get(response, "patchType"));
	if (json_object_get(response, "patch"))
		fuzz_check_patch(cfg, json_object_get(json_object_get(in, "request"),
						      "object"),
				 json_string_value(json_object_get(response,
								   "patch")));
	json_decref(in);
	json_decref(out);
	review_answer_release(&ans);
	return 0;
}
