/*
 * fuzz_review.c - libFuzzer target for the AdmissionReview decoder.
 *
 * Invariants: every input gets an answer (200, 400 or 500, never a crash);
 * the selective decoder keeping everything accepts exactly what jansson
 * accepts and keeps what jansson decodes, and the answer is the same bytes
 * as the answer to the full decode; a body jansson refuses for another
 * reason than its depth gets 400; a 200 answer is a JSON AdmissionReview
 * whose response.uid echoes the request; a patch is valid base64 of an
 * array of operations that applies to the request's object; the review
 * sent again with the patched object (the same operation, subresource and
 * oldObject, as reinvocation sends it) is allowed with no further patch;
 * and request.object's metadata.managedFields, which the policy never
 * reads, nested thousands of levels deep, leaves the answer as it is
 * shallow.
 *
 * Each input is also sent to /validate (review_options.validate): the same
 * HTTP status, never a patch, a denial wherever /mutate denies, and the
 * very bytes of /mutate's answer wherever /mutate allows without a patch.
 *
 * The config is one of fuzz_config()'s four, chosen by the number of white
 * space bytes that end the input (mod 4): a review may end in any number
 * of them, so every config is reached, and a mutation of the body keeps
 * it (the last byte of a JSON text is nearly always '}', which would pick
 * one config only).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
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

/* The config of an input: by the white space that ends it (above). */
static const struct config *config_of(const uint8_t *data, size_t size)
{
	unsigned n = 0;

	while (n < size && (data[size - 1 - n] == ' ' ||
			    data[size - 1 - n] == '\t' ||
			    data[size - 1 - n] == '\n' ||
			    data[size - 1 - n] == '\r'))
		n++;
	return fuzz_config(n & 3);
}

/* Whether the 200 answer ans (text) allows, and whether it patches. */
static bool answer_allows(const struct review_answer *ans, bool *patched)
{
	json_t *out = json_loadb(ans->body, ans->body_len,
				 JSON_REJECT_DUPLICATES, NULL);
	json_t *response = json_object_get(out, "response");
	bool allowed = json_is_true(json_object_get(response, "allowed"));

	FUZZ_ASSERT(out);
	*patched = json_object_get(response, "patch") != NULL;
	json_decref(out);
	return allowed;
}

/*
 * The same input to /validate, against /mutate's answer mutate: the same
 * status; never a patch; a denial where /mutate denies; the same bytes
 * where /mutate allows without a patch.
 */
static void check_validate(const struct config *cfg, const uint8_t *data,
			   size_t size, const struct review_answer *mutate)
{
	struct review_options opt = { NULL, NULL, true };
	struct review_answer v;
	bool m_patched, v_patched, m_allowed, v_allowed;

	review_answer_init(&v);
	review_handlen_with(cfg, (const char *)data, size, &opt, &v);
	FUZZ_ASSERT(v.http_status == mutate->http_status);
	if (v.http_status == 200) {
		m_allowed = answer_allows(mutate, &m_patched);
		v_allowed = answer_allows(&v, &v_patched);
		FUZZ_ASSERT(!v_patched);
		FUZZ_ASSERT(m_allowed || !v_allowed);
		if (m_allowed && !m_patched)
			FUZZ_ASSERT(v.body_len == mutate->body_len &&
				    !memcmp(v.body, mutate->body, v.body_len));
	}
	review_answer_release(&v);
}

/*
 * The review in sent again with its object patched by b64, as the API
 * server re-invokes the webhook: the same operation, subresource and
 * oldObject.  It must be allowed with no operation.
 */
static void check_resend(const struct config *cfg, const json_t *in,
			 const char *b64)
{
	json_t *again = json_deep_copy(in), *out, *response;
	struct review_answer ans;
	char *text;

	FUZZ_ASSERT(again);
	fuzz_apply_patch(json_object_get(json_object_get(again, "request"),
					 "object"), b64);
	text = json_dumps(again, JSON_COMPACT);
	FUZZ_ASSERT(text);
	review_answer_init(&ans);
	review_handlen(cfg, text, strlen(text), &ans);
	FUZZ_ASSERT(ans.http_status == 200);
	out = json_loadb(ans.body, ans.body_len, JSON_REJECT_DUPLICATES, NULL);
	response = json_object_get(out, "response");
	if (!json_is_true(json_object_get(response, "allowed")) ||
	    json_object_get(response, "patch")) {
		fprintf(stderr, "sent again: %.*s\n", (int)ans.body_len,
			ans.body);
		fuzz_fail("the patched review gives no further patch",
			  __FILE__, __LINE__);
	}
	json_decref(out);
	review_answer_release(&ans);
	free(text);
	json_decref(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct config *cfg = config_of(data, size);
	struct review_answer ans;
	json_t *out, *in, *response;

	review_answer_init(&ans);
	review_handlen(cfg, (const char *)data, size, &ans);
	FUZZ_ASSERT(ans.http_status == 200 || ans.http_status == 400 ||
		    ans.http_status == 500);
	check_validate(cfg, data, size, &ans);
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
		check_resend(cfg, in, json_string_value(json_object_get(response,
								"patch")));
	json_decref(in);
	json_decref(out);
	review_answer_release(&ans);
	return 0;
}
