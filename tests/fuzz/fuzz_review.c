/*
 * fuzz_review.c - libFuzzer target for the AdmissionReview decoder.
 *
 * Invariants: every input gets an answer (200, 400 or 500, never a crash);
 * the selective decoder keeping everything accepts exactly what jansson
 * accepts and keeps what jansson decodes, and the answer is the same bytes
 * as the answer to the full decode; a body jansson refuses for another
 * reason than its depth gets 400; a 200 answer is a JSON AdmissionReview
 * whose response.uid echoes the request; a patch is valid base64 of an
 * array of operations that applies to the request's object; the patched
 * object, sent again, gives no further patch; and request.object's
 * metadata.managedFields, which the policy never reads, nested thousands
 * of levels deep, leaves the answer as it is shallow.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "fuzz_common.h"
#include "pick.h"
#include "review.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define DEEP 2100 /* beyond jansson's 2048 wherever it starts */

/* A scalar whole; an object or array kept empty, its content checked. */
static const struct pick_rule scalar_rule = { PICK_OBJECT, NULL, NULL, NULL };
static const struct pick_rule uid_rule = {
	PICK_OBJECT, PICK_FIELDS(
		PICK_FIELD("request", PICK_OBJ(
			PICK_FIELD("uid", &scalar_rule)))),
	NULL, NULL
};

/*
 * A 200 answer to a body jansson refuses for its depth (a deep field the
 * policy does not read): an AdmissionReview that echoes the uid.
 */
static void check_deep_answer(const uint8_t *data, size_t size,
			      const struct review_answer *ans)
{
	struct pick_error perr;
	json_t *out, *in;

	if (ans->http_status != 200)
		return;
	in = pick_loadb((const char *)data, size, &uid_rule, &perr);
	out = json_loadb(ans->body, ans->body_len, JSON_REJECT_DUPLICATES, NULL);
	FUZZ_ASSERT(in && out);
	FUZZ_ASSERT(json_equal(json_object_get(json_object_get(out, "response"),
					       "uid"),
			       json_object_get(json_object_get(in, "request"),
					       "uid")));
	json_decref(in);
	json_decref(out);
}

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
	json_error_t jerr;
	json_t *in, *picked;

	in = json_loadb((const char *)data, size,
			JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
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
	if (!in && json_error_code(&jerr) == json_error_stack_overflow) {
		check_deep_answer(data, size, ans);
		return NULL;
	}
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

/* text with its first mark replaced by with: a new string. */
static char *replaced(const char *text, const char *mark, const char *with)
{
	const char *at = strstr(text, mark);
	size_t a = (size_t)(at - text), m = strlen(mark), w = strlen(with);
	size_t rest = strlen(at + m);
	char *s = malloc(a + w + rest + 1);

	FUZZ_ASSERT(s);
	memcpy(s, text, a);
	memcpy(s + a, with, w);
	memcpy(s + a + w, at + m, rest + 1);
	return s;
}

/*
 * in again, request.object.metadata.managedFields (when the metadata is an
 * object) set to an entry whose fieldsV1 nests DEEP levels and to one
 * whose fieldsV1 is {}: the same answer, to the byte.  Three reviews more,
 * one of them deep, cost several times a run: only inputs that start with
 * white space are read so (the seeds have some).
 */
static void check_deep_managed_fields(const struct config *cfg,
				      const json_t *in)
{
	static const char mark[] = "\"\\u0001deep-fields\\u0001\"";
	static const char head[] = "[{\"manager\":\"m\",\"fieldsV1\":";
	struct review_answer flat, deep;
	json_t *copy = json_deep_copy(in), *meta;
	char *text, *entry, *a, *b, *p;
	size_t i;

	meta = json_object_get(json_object_get(json_object_get(copy,
		"request"), "object"), "metadata");
	if (!json_is_object(meta)) {
		json_decref(copy);
		return;
	}
	FUZZ_ASSERT(!json_object_set_new(meta, "managedFields",
					 json_string("\001deep-fields\001")));
	text = json_dumps(copy, JSON_COMPACT);
	json_decref(copy);
	FUZZ_ASSERT(text);
	/* The mark must be the one set here, not a string of the input. */
	FUZZ_ASSERT(strstr(text, mark));
	if (strstr(strstr(text, mark) + 1, mark)) {
		free(text);
		return;
	}
	entry = malloc(sizeof(head) + DEEP * 8 + 8);
	FUZZ_ASSERT(entry);
	p = entry + sizeof(head) - 1;
	memcpy(entry, head, sizeof(head) - 1);
	for (i = 0; i < DEEP; i++, p += 7)
		memcpy(p, "{\"f:a\":", 7);
	memcpy(p, "{}", 2);
	p += 2;
	memset(p, '}', DEEP);
	memcpy(p + DEEP, "}]", 3);
	a = replaced(text, mark, "[{\"manager\":\"m\",\"fieldsV1\":{}}]");
	b = replaced(text, mark, entry);
	review_answer_init(&flat);
	review_answer_init(&deep);
	review_handlen(cfg, a, strlen(a), &flat);
	review_handlen(cfg, b, strlen(b), &deep);
	FUZZ_ASSERT(flat.http_status == deep.http_status);
	FUZZ_ASSERT(flat.body_len == deep.body_len &&
		    !memcmp(flat.body, deep.body, flat.body_len));
	review_answer_release(&flat);
	review_answer_release(&deep);
	free(a);
	free(b);
	free(entry);
	free(text);
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
	if (in && size && (data[0] == ' ' || data[0] == '\t' ||
			   data[0] == '\n' || data[0] == '\r'))
		check_deep_managed_fields(cfg, in);
	/* !in: a 200 to a body too deep for jansson, checked above */
	if (ans.http_status != 200 || !in) {
		json_decref(in);
		review_answer_release(&ans);
		return 0;
	}
	out = json_loadb(ans.body, ans.body_len, JSON_REJECT_DUPLICATES, NULL);
	FUZZ_ASSERT(out);
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
