/*
 * fuzz_pick.c - libFuzzer target for the selective JSON decoder alone, on
 * short texts, where the mutations reach every corner of the grammar.
 *
 * Invariants (pick.h), for an input without a raw NUL byte (one with it is
 * always refused):
 * - With pick_all everything is built: pick_loadb() accepts exactly what
 *   json_loadb(JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL) accepts, depth
 *   included, and gives the same value.
 * - Under a schema it accepts every document jansson accepts, with the
 *   types the schema's rules keep; it refuses every document jansson
 *   refuses for another reason than depth; and it accepts one jansson
 *   refuses only for its depth.
 * - Deep down, where only a check reaches: the input nested 3000 levels
 *   deep in a member the schema drops, or in a stub, is accepted exactly
 *   when jansson accepts it nested shallow (without JSON_REJECT_DUPLICATES:
 *   objects deeper than jansson's limit have their keys checked but not
 *   compared).  (Kept that deep, it is refused before it is read: the
 *   unit tests hold that.)
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "pick.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FLAGS (JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL)
#define DEEP 3000

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

/* Whether jansson refused for the depth of the document. */
static bool too_deep(const json_error_t *err)
{
	return json_error_code(err) == json_error_stack_overflow;
}

/*
 * How the containers of a JSON text nest, counted outside strings as a
 * lexer counts them: *under, the most it closes that it did not open;
 * *over, the most it holds open beyond that.
 */
static void nesting(const uint8_t *d, size_t n, size_t *under, size_t *over)
{
	long depth = 0, low = 0, high = 0;
	bool in_string = false;
	size_t i;

	for (i = 0; i < n; i++) {
		if (in_string) {
			if (d[i] == '\\')
				i++;
			else if (d[i] == '"')
				in_string = false;
		} else if (d[i] == '"') {
			in_string = true;
		} else if (d[i] == '[' || d[i] == '{') {
			if (++depth > high)
				high = depth;
		} else if ((d[i] == ']' || d[i] == '}') && --depth < low) {
			low = depth;
		}
	}
	*under = (size_t)-low;
	*over = (size_t)(high - low);
}

/* head, then n '[', data, n ']', then tail: a new string of *len bytes. */
static char *wrap(const char *head, size_t n, const uint8_t *data,
		  size_t size, const char *tail, size_t *len)
{
	size_t h = strlen(head), t = strlen(tail);
	char *s = malloc(h + 2 * n + size + t);

	FUZZ_ASSERT(s);
	memcpy(s, head, h);
	memset(s + h, '[', n);
	memcpy(s + h + n, data, size);
	memset(s + h + n + size, ']', n);
	memcpy(s + h + 2 * n + size, tail, t);
	*len = h + 2 * n + size + t;
	return s;
}

/* The whole-document invariants: pick_all and the schema against jansson. */
static void check_shallow(const uint8_t *data, size_t size, bool nul)
{
	const char *text = (const char *)data;
	struct pick_error perr;
	json_error_t jerr;
	json_t *full, *all, *pruned;

	full = json_loadb(text, size, FLAGS, &jerr);
	all = pick_loadb(text, size, &pick_all, &perr);
	FUZZ_ASSERT(all || perr.status == PICK_INVALID ||
		    perr.status == PICK_DEPTH);
	pruned = pick_loadb(text, size, &outer_rule, &perr);
	if (nul) {
		FUZZ_ASSERT(!all && !pruned);
	} else {
		FUZZ_ASSERT(!full == !all);
		FUZZ_ASSERT(!full || pruned);
		FUZZ_ASSERT(full || too_deep(&jerr) || !pruned);
	}
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
}

/*
 * data nested DEEP levels in a dropped member (data starting with a tab)
 * or in a stub (a carriage return), against jansson on data nested just
 * enough to hold what it closes (jansson cannot read it deep, and there
 * are no key comparisons down there).  Reading 3000 levels under the
 * fuzzer's instrumentation costs some 30 times a shallow run, so only
 * those inputs are read so: the seeds have both, and a mutation moves an
 * input in or out.
 */
static void check_deep(const uint8_t *data, size_t size, bool nul)
{
	static const struct {
		const char *head, *tail, *want;
	} places[] = {
		{ "{\"skip\":", "}", "{}" },
		{ "{\"o\":{\"b\":", "}}", "{\"o\":{\"b\":[]}}" },
	};
	struct pick_error perr;
	size_t under, over, len, i;
	json_t *v, *want, *shallow = NULL;
	bool known = false;
	char *text;

	if (!size || (data[0] != '\t' && data[0] != '\r'))
		return;

	nesting(data, size, &under, &over);
	/* Deep enough that no object of data is compared in the deep text,
	 * shallow enough that jansson reads the shallow one. */
	if (under <= 900 && under + over <= 2000 && !nul) {
		json_error_t jerr;

		text = wrap("{\"skip\":", under + 1, data, size, "}", &len);
		shallow = json_loadb(text, len, JSON_ALLOW_NUL, &jerr);
		known = shallow || !too_deep(&jerr);
		free(text);
	}
	i = data[0] == '\r';
	text = wrap(places[i].head, DEEP, data, size, places[i].tail, &len);
	v = pick_loadb(text, len, &outer_rule, &perr);
	free(text);
	if (nul)
		FUZZ_ASSERT(!v);
	if (known)
		FUZZ_ASSERT(!v == !shallow);
	if (v) {
		want = json_loads(places[i].want, 0, NULL);
		FUZZ_ASSERT(want && json_equal(v, want));
		json_decref(want);
	} else {
		FUZZ_ASSERT(perr.status == PICK_INVALID);
	}
	json_decref(v);
	json_decref(shallow);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	bool nul = memchr(data, '\0', size) != NULL;

	check_shallow(data, size, nul);
	check_deep(data, size, nul);
	return 0;
}
