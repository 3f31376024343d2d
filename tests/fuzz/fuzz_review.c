/*
 * fuzz_review.c - libFuzzer target for the AdmissionReview decoder.
 *
 * Invariants: every input gets an answer (200, 400 or 500, never a crash);
 * the selective decoder accepts exactly what jansson accepts, keeps what
 * jansson decodes, and the answer is the same bytes as the answer to the
 * full decode; a 200 answer is a JSON AdmissionReview whose response.uid echoes the
 * request; a patch is valid base64 of an array of operations that applies
 * to the request's object; and the patched object, sent again, gives no
 * further patch.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "fuzz_common.h"
#include "pick.h"
#include "review.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * The selective decoder against jansson: the same verdict on data, the
 * same values with pick_all, and the same answer from review_handlen() as
 * from review_handle_json() on jansson's decode.  Returns jansson's decode.
 */
static json_t *check_decoders(const struct config *cfg, const uint8_t *data,
			      size_t size, const struct review_answer *ans)
{
	struct review_answer full;
	struct pick_error perr;
	json_t *in, *picked;

	in = json_loadb((const char *)data, size,
			JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, NULL);
	picked = pick_loadb((const char *)data, size, &pick_all, &perr);
	if (memchr(data, '\0', size)) {
		/* Never JSON; jansson takes some of these (pick.h). */
		FUZZ_ASSERT(!picked && ans->http_status == 400);
		json_decref(in);
		return NULL;
	}
	FUZZ_ASSERT(!in == !picked);
	FUZZ_ASSERT(!in || json_equal(in, picked));
	json_decref(picked);
	if (!in) {
		FUZZ_ASSERT(ans->http_status == 400);
		return NULL;
	}
	review_answer_init(&full);
	review_handle_json(cfg, in, &full);
	FUZZ_ASSERT(full.http_status == ans->http_status);
	FUZZ_ASSERT(full.body_len == ans->body_len &&
		    !memcmp(full.body, ans->body, ans->body_len));
	review_answer_release(&full);
	return in;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct config *cfg = fuzz_config(size ? data[size - 1] & 3 : 0);
	struct review_answer ans;
	json_t *out, *in, *response;

	review_answer_init(&ans);
	review_handlen(cfg, (const char *)data, size, &ans);
	FUZZ_ASSERT(ans.http_status == 200 || ans.http_status == 400 ||
		    ans.http_status == 500);
	in = check_decoders(cfg, data, size, &ans);
	if (ans.http_status != 200) {
		json_decref(in);
		review_answer_release(&ans);
		return 0;
	}
	out = json_loadb(ans.body, ans.body_len, JSON_REJECT_DUPLICATES, NULL);
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
