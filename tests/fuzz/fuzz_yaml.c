/*
 * fuzz_yaml.c - libFuzzer target for the YAML reader and writer
 * (yamlio.h) and for `default` on manifests (manifest.h).
 *
 * The first byte picks a configuration and whether --check is on; the
 * rest is the input.  Checked:
 *  - yamlio_load() never crashes, and stays within its limits;
 *  - every document it reads, written by yamlio_dump() and read again,
 *    is one document equal (json_equal) to the first: the writer quotes
 *    whatever would read back as another type;
 *  - manifest_default() returns one of its four statuses, writes
 *    nothing to out unless the status is 0, and is a fixed point: its
 *    output defaulted again gives status 0 and the same bytes;
 *  - quiet diffs: an input that --check finds unchanged is written back
 *    byte for byte (UTF-16 aside).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "buf.h"
#include "fuzz_common.h"
#include "manifest.h"
#include "yamlio.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_round_trip(const json_t *doc)
{
	struct buf b = BUF_INIT;
	struct yamlio_error err;
	json_t *again;

	yamlio_dump(&b, doc);
	FUZZ_ASSERT(!buf_failed(&b));
	again = yamlio_load(b.s, b.len, NULL, &err);
	if (!again) {
		fprintf(stderr, "reread failed: %s (line %d, column %d)\n%s\n",
			err.text, err.line, err.column, b.s);
		FUZZ_ASSERT(!"the writer's output reads back");
	}
	FUZZ_ASSERT(json_array_size(again) == 1);
	if (!json_equal(json_array_get(again, 0), doc) &&
	    !(json_is_null(doc) && json_is_null(json_array_get(again, 0)))) {
		fprintf(stderr, "written:\n%s\n", b.s);
		FUZZ_ASSERT(!"the writer's output reads back as the same value");
	}
	json_decref(again);
	buf_release(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct manifest_options opt = { NULL, false };
	struct buf out = BUF_INIT, msgs = BUF_INIT, out2 = BUF_INIT,
		   msgs2 = BUF_INIT;
	const struct config *cfg;
	struct yamlio_error err;
	enum manifest_status st, st2;
	const char *text;
	json_t *docs;
	size_t i;

	if (size < 1)
		return 0;
	cfg = fuzz_config(data[0] & 3);
	opt.check = (data[0] & 4) != 0;
	text = (const char *)data + 1;
	size--;

	docs = yamlio_load(text, size, NULL, &err);
	if (docs) {
		for (i = 0; i < json_array_size(docs); i++)
			check_round_trip(json_array_get(docs, i));
		json_decref(docs);
	} else {
		FUZZ_ASSERT(err.text[0]);
	}

	st = manifest_default(cfg, text, size, &opt, &out, &msgs);
	FUZZ_ASSERT(st == MANIFEST_OK || st == MANIFEST_DENIED ||
		    st == MANIFEST_INPUT || st == MANIFEST_CHANGED);
	/* A ResourceList is written on a denial too, with its results. */
	FUZZ_ASSERT(st == MANIFEST_OK || st == MANIFEST_DENIED || out.len == 0);
	FUZZ_ASSERT(!opt.check || out.len == 0);
	/* Quiet diffs: what --check finds unchanged is written back byte for
	 * byte (UTF-16 aside, which is written anew). */
	if (opt.check && st == MANIFEST_OK &&
	    !(size >= 2 && ((data[1] == 0xFF && data[2] == 0xFE) ||
			    (data[1] == 0xFE && data[2] == 0xFF)))) {
		struct manifest_options plain = opt;

		plain.check = false;
		st2 = manifest_default(cfg, text, size, &plain, &out2, &msgs2);
		FUZZ_ASSERT(st2 == MANIFEST_OK && out2.len == size &&
			    (!size || !memcmp(out2.s, text, size)));
		buf_truncate(&out2, 0);
		buf_truncate(&msgs2, 0);
	}
	if (st == MANIFEST_OK && out.len) {
		st2 = manifest_default(cfg, out.s, out.len, &opt, &out2, &msgs2);
		if (st2 != MANIFEST_OK || out2.len != out.len ||
		    memcmp(out2.s, out.s, out.len)) {
			fprintf(stderr, "first:\n%s\nsecond (%d):\n%s\n%s\n",
				out.s, (int)st2, buf_str(&out2),
				buf_str(&msgs2));
			FUZZ_ASSERT(!"default is a fixed point");
		}
	}
	buf_release(&out);
	buf_release(&msgs);
	buf_release(&out2);
	buf_release(&msgs2);
	return 0;
}
