/*
 * fuzz_pick.c - libFuzzer target for the selective JSON decoder alone, on
 * short texts, where the mutations reach every corner of the grammar.
 *
 * Invariants: pick_loadb() accepts what json_loadb(JSON_REJECT_DUPLICATES |
 * JSON_ALLOW_NUL) accepts, and nothing with a raw NUL byte (pick.h); with
 * pick_all it gives the same value; and under a schema it gives a value
 * whenever the full decode does, with the types the schema's rules keep.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "pick.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct pick_rule inner_rule = {
	PICK_OBJECT, PICK_FIELDS(
		PICK_FIELD("a", &pick_all),
		PICK_FIELD("b", &pick_stub)),
	&pick_stub, NULL
};
static const struct pick_rule outer_rule = {
	PICK_OBJECT, PICK_FIELDS(
		PICK_FIELD("a", &pick_all),
		PICK_FIELD("o", &inner_rule),
		PICK_FIELD("l", PICK_ARR(&inner_rule))),
	NULL, NULL
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	struct pick_error perr;
	json_t *full, *all, *pruned;

	full = json_loadb(text, size, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL,
			  NULL);
	all = pick_loadb(text, size, &pick_all, &perr);
	pruned = pick_loadb(text, size, &outer_rule, &perr);
	FUZZ_ASSERT(!all == !pruned);
	if (memchr(data, '\0', size))
		FUZZ_ASSERT(!all);
	else
		FUZZ_ASSERT(!full == !all);
	if (all && full) {
		FUZZ_ASSERT(json_equal(full, all));
		/* The top level keeps its type; so does every kept member. */
		FUZZ_ASSERT(json_typeof(pruned) == json_typeof(full));
		if (json_is_object(full)) {
			const char *keys[] = { "a", "o", "l" };
			size_t i;

			json_t *fa = json_object_get(full, "a");
			json_t *pa = json_object_get(pruned, "a");

			FUZZ_ASSERT(!fa == !pa && (!fa || json_equal(fa, pa)));
			for (i = 1; i < 3; i++) {
				json_t *f = json_object_get(full, keys[i]);
				json_t *p = json_object_get(pruned, keys[i]);

				FUZZ_ASSERT(!f == !p);
				FUZZ_ASSERT(!f || json_typeof(f) == json_typeof(p));
			}
		}
	}
	json_decref(full);
	json_decref(all);
	json_decref(pruned);
	return 0;
}
