/*
 * pick.h - a selective JSON decoder: validates a whole document as
 * jansson's json_loadb(JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL) does, but
 * builds jansson values only for the parts a schema names.
 *
 * A review body is mostly fields the policy never reads (managedFields,
 * volumes, status, the rest of each container).  Building a jansson value
 * for each of them is where a full decode spends its time; checking and
 * skipping them is several times cheaper.
 *
 * Each value is built (a jansson value is made for it: kept, kept as text,
 * or a stub's empty value) or only checked (a member the schema drops, the
 * content of a stub).  What is only checked is read without recursion, at
 * any depth, with a stack of one bit a level on the heap; what is built is
 * read by recursion and never deeper than jansson reads.
 *
 * Invariants:
 * - pick_loadb() accepts exactly the documents that json_loadb() accepts
 *   with those flags, with two exceptions below: syntax, UTF-8, escapes and
 *   surrogate pairs, number ranges (int64 integers, reals that do not
 *   overflow), duplicate keys, NUL in keys.  It refuses every document
 *   that json_loadb() refuses, but for the second exception.
 * - Exception 1: a raw NUL byte is never accepted.  jansson drops one that
 *   directly follows a number or a literal (its lexer reads one byte ahead
 *   and loses a NUL when it puts it back), so it takes "[1\0]"; RFC 8259
 *   does not.
 * - Exception 2, depth.  json_loadb() refuses a document that nests any
 *   value deeper than JSON_PARSER_MAX_DEPTH (2048), counting every value,
 *   scalars included.  pick_loadb() counts the same way but refuses only
 *   when a value it builds is that deep, with PICK_DEPTH; a value it only
 *   checks may nest to any depth.  Duplicate keys are found in every
 *   object at most JSON_PARSER_MAX_DEPTH deep, which is every object of a
 *   document that json_loadb() can read and every object pick_loadb()
 *   builds; an object deeper than that (only checked, then) has its keys
 *   checked for everything else but not compared with each other, so that
 *   checking costs no memory per level.  Everything else is checked at
 *   every depth.
 * - The C stack it uses is bounded by the depth of what it builds (at
 *   most JSON_PARSER_MAX_DEPTH levels of one small frame each; with a
 *   schema, the schema's depth and the depth of its PICK_ALL values), never
 *   by the depth of what it only checks.  Its heap is one bit per level
 *   checked, plus the keys of the open objects it compares.
 * - Every value the schema keeps is equal (json_equal) to what json_loadb()
 *   gives for it, and objects keep their members in document order; but
 *   for PICK_TEXT, whose value is its text.
 * - Where a value does not have the type its rule expects, the type is
 *   still right: an object rule that meets an array keeps an empty array, an
 *   array rule that meets an object keeps an empty object, and a scalar is
 *   kept whole.  So a reader that checks JSON types sees the same types and
 *   says the same thing as with a full decode.
 */
#ifndef PICK_H
#define PICK_H

#include <stddef.h>

#include <jansson.h>

#include "compiler.h"

enum pick_kind {
	PICK_ALL,    /* the value, whole */
	PICK_OBJECT, /* an object with the named members, decoded by rule */
	PICK_ARRAY,  /* an array, each element decoded by one rule */
	PICK_STUB,   /* an empty value of the same type: {}, [], "", 0, or
			true, false or null as they are */
	PICK_TEXT,   /* the value's JSON text, as it stands in the document,
			kept as a string: checked, but decoded only by a
			reader that needs it (json_loadb() with
			JSON_DECODE_ANY | JSON_REJECT_DUPLICATES gives the
			value itself); built, as far as depth goes, so that
			json_loadb() can read it */
};

struct pick_field;

struct pick_rule {
	enum pick_kind kind;
	/* PICK_OBJECT: the members kept, ended by an entry with a NULL key */
	const struct pick_field *fields;
	/* PICK_OBJECT: the rule of every other member; NULL drops them */
	const struct pick_rule *others;
	/* PICK_ARRAY: the rule of each element */
	const struct pick_rule *items;
};

struct pick_field {
	const char *key;
	size_t len;
	const struct pick_rule *rule;
};

#define PICK_FIELD(k, r) { (k), sizeof(k) - 1, (r) }
#define PICK_END { NULL, 0, NULL }

/*
 * A schema written as the shape of the document, one macro per rule:
 *
 *	PICK_OBJ(
 *		PICK_FIELD("kind", &pick_all),
 *		PICK_FIELD("spec", PICK_OBJ(
 *			PICK_FIELD("nodeName", &pick_all),
 *			PICK_FIELD("volumes", PICK_ARR(&pick_stub)))))
 *
 * Each gives a pointer to a rule held in a compound literal, so it may
 * stand for the rule of a field or of an array's elements, also in a
 * file-scope initializer (the literals then have static storage).
 *   PICK_OBJ(fields...)              an object: the fields kept, others
 *                                    dropped (the PICK_END is added)
 *   PICK_OBJ_OTHERS(others, fields...) likewise, others by rule others
 *   PICK_ARR(items)                  an array, each element by rule items
 * A schema that another file names needs one rule object with external
 * linkage: write its initializer out, with PICK_FIELDS() for its fields.
 */
#define PICK_FIELDS(...) \
	((const struct pick_field[]){ __VA_ARGS__, PICK_END })
#define PICK_OBJ_OTHERS(others, ...) \
	(&(const struct pick_rule){ PICK_OBJECT, PICK_FIELDS(__VA_ARGS__), \
				    (others), NULL })
#define PICK_OBJ(...) PICK_OBJ_OTHERS(NULL, __VA_ARGS__)
#define PICK_ARR(items) \
	(&(const struct pick_rule){ PICK_ARRAY, NULL, NULL, (items) })

extern const struct pick_rule pick_all;
extern const struct pick_rule pick_stub;
extern const struct pick_rule pick_text;

enum pick_status {
	PICK_OK,
	PICK_INVALID, /* not JSON, or JSON that json_loadb() refuses */
	PICK_DEPTH,   /* a value to build is nested deeper than
			 JSON_PARSER_MAX_DEPTH; the text up to it is JSON,
			 the rest is unread */
	PICK_NOMEM,
};

struct pick_error {
	enum pick_status status;
	int line;        /* 1-based; 0 for PICK_NOMEM */
	int column;      /* 1-based, in bytes */
	char text[128];  /* "invalid escape", "duplicate object key", ... */
	/* PICK_DEPTH: where, as members and indexes from the top
	 * ("request.object.metadata.labels.a[0][0]"), masked, cut with "..."
	 * when long; "" otherwise */
	char path[192];
};

/*
 * Decodes buf[0..len) under rule (the document's top level must be an
 * object or an array).  Returns a new reference, or NULL with *err filled.
 * Uses no global state; thread-safe.
 */
json_t *pick_loadb(const char *buf, size_t len, const struct pick_rule *rule,
		   struct pick_error *err) COMPILER_WUR;

#endif /* PICK_H */
