/*
 * fuzz_prefix.c - libFuzzer target for the start of a review read without
 * its body: review_prefix_scann() on hostile bytes, and the denial that
 * review_deny_prefix() writes from what it found.
 *
 * Invariants: no crash and no read past the input; what is found in the
 * input is found the same in every longer input that starts with it; the
 * denial is JSON (duplicate keys refused) whose response.uid is a string;
 * and when jansson decodes the whole input, the scanner agrees with it:
 * kind is AdmissionReview, apiVersion and request.uid are the same.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "review.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_denial(const struct review_prefix *p)
{
	struct review_answer ans;
	json_t *out, *uid;

	review_answer_init(&ans);
	FUZZ_ASSERT(review_deny_prefix(p, 413, "too large", &ans) == 0);
	FUZZ_ASSERT(ans.http_status == 200 && ans.outcome == REVIEW_DENIED);
	out = json_loadb(ans.body, ans.body_len,
			 JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, NULL);
	FUZZ_ASSERT(out);
	uid = json_object_get(json_object_get(out, "response"), "uid");
	FUZZ_ASSERT(json_is_string(uid));
	FUZZ_ASSERT(!strcmp(json_string_value(json_object_get(out, "apiVersion")),
			    p->api_version));
	json_decref(out);
	review_answer_release(&ans);
}

/* The whole input decoded by jansson agrees with what the scanner read. */
static void check_whole(const uint8_t *data, size_t size,
			const struct review_prefix *p)
{
	json_t *root = json_loadb((const char *)data, size,
				  JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, NULL);
	char *quoted;
	json_t *uid;

	if (!root)
		return;
	FUZZ_ASSERT(json_is_string(json_object_get(root, "kind")) &&
		    json_is_string(json_object_get(root, "apiVersion")));
	FUZZ_ASSERT(!strcmp(json_string_value(json_object_get(root, "kind")),
			    "AdmissionReview"));
	FUZZ_ASSERT(!strcmp(json_string_value(json_object_get(root,
							      "apiVersion")),
			    p->api_version));
	quoted = malloc(p->uid_len + 2);
	FUZZ_ASSERT(quoted);
	quoted[0] = '"';
	memcpy(quoted + 1, p->uid, p->uid_len);
	quoted[p->uid_len + 1] = '"';
	uid = json_loadb(quoted, p->uid_len + 2,
			 JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	FUZZ_ASSERT(uid);
	FUZZ_ASSERT(json_equal(uid, json_object_get(json_object_get(root,
								    "request"),
						    "uid")));
	json_decref(uid);
	free(quoted);
	json_decref(root);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct review_prefix p, again;
	uint8_t *copy;

	/* An exact-size copy: a read past the input is ASan's to see. */
	copy = malloc(size ? size : 1);
	FUZZ_ASSERT(copy);
	memcpy(copy, data, size);
	if (review_prefix_scann((const char *)copy, size, &p)) {
		free(copy);
		return 0;
	}
	check_denial(&p);
	check_whole(copy, size, &p);
	free(copy);
	copy = malloc(size + 7);
	FUZZ_ASSERT(copy);
	memcpy(copy, data, size);
	memcpy(copy + size, "\"}]} ,x", 7);
	FUZZ_ASSERT(review_prefix_scann((const char *)copy, size + 7,
					&again) == 0);
	FUZZ_ASSERT(again.api_version == p.api_version &&
		    again.uid_len == p.uid_len &&
		    !memcmp(again.uid, p.uid, p.uid_len));
	free(copy);
	return 0;
}
