/*
 * cfgkey.h - configuration keys described once (docs/behaviour.md §2).
 *
 * A key of the config file is one row of a table (struct cfgkey): its
 * name, its type, where its value lives, its built-in value, where it may
 * appear (the top level, an entry of `devices`, a profile, a profile that
 * selects by podLabels) and how it is checked.  The table of the config is
 * config.c's; the walks below read a JSON object by a table, fill the
 * built-in values, copy, release and write back every key of a table, so
 * that none of them lists keys of its own.  The readers of single values
 * (cfgkey_read_string() and the others) are shared by every type of value,
 * guardcfg.c's included, and word every message the same way.
 *
 * Messages name the file and the key by its path ("devices[0].tolerations"):
 * "config FILE: PATH: expected a string, got a number".
 */
#ifndef CFGKEY_H
#define CFGKEY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "compiler.h"
#include "pattern.h"

/* Where a key may appear: bits of struct cfgkey.where. */
enum {
	CFGKEY_TOP = 1u << 0,      /* the top level of the file (or an object
				      of it) */
	CFGKEY_FAMILY = 1u << 1,   /* an entry of `devices` */
	CFGKEY_PROFILE = 1u << 2,  /* a profile may give it (behaviour §2.2) */
	CFGKEY_LABELS = 1u << 3,   /* a profile that selects by podLabels may
				      give it too */
	CFGKEY_REQUIRED = 1u << 4, /* an entry of `devices` must give it, and
				      not as null */
	CFGKEY_OWN = 1u << 5,      /* the top level's own: not copied into the
				      config of a profile */
	CFGKEY_ROOTED = 1u << 6,   /* an object whose messages name its keys
				      from the top of the file, also inside a
				      profile ("guards.env.policy") */
};

/* How a JSON object is read (struct cfgread.mode). */
enum cfgkey_mode {
	/* The file, or a built-in value: the keys of the table with
	 * CFGKEY_TOP or CFGKEY_FAMILY (a key with neither is a profile's
	 * only); null keeps the value, but for a CFGKEY_REQUIRED key. */
	CFGKEY_READ_FILE,
	/* A profile, over a copy of the top level: keys with CFGKEY_PROFILE
	 * (and CFGKEY_LABELS when it selects by podLabels); null keeps. */
	CFGKEY_READ_PROFILE,
	/* An object inside a profile (schedulerPolicy, guards): its keys;
	 * null keeps. */
	CFGKEY_READ_PROFILE_OBJECT,
	/* An entry of a profile's `devices`, over the family it names: keys
	 * with CFGKEY_PROFILE (and CFGKEY_LABELS); null is a wrong type. */
	CFGKEY_READ_PROFILE_FAMILY,
};

/* One reading: where its messages go, and how it reads. */
struct cfgread {
	const char *file; /* "config FILE: " begins every message */
	char *err;
	size_t errlen;
	enum cfgkey_mode mode;
	bool labels; /* a profile that selects by podLabels */
	/* Keys the table does not hold that the caller reads itself (a
	 * profile's name and selectors); NULL-terminated, or NULL. */
	const char *const *skip;
	/* Set by CFGKEY_READ_PROFILE_FAMILY: the `from` bits of the keys a
	 * profile gave. */
	unsigned from;
};

struct cfgkey;

/*
 * A type of value.  base is the struct the table describes (a struct
 * config, a struct device); the value is at base + key->offset, and a type
 * may use the fields around it.  A zeroed value is valid to release, to
 * read over and to copy over.
 */
struct cfgkey_type {
	/* The JSON Schema type of the value, for the chart's schema test. */
	const char *json;
	/*
	 * Reads v (not null), found at path, over the value: a value given
	 * replaces the old one whole.  Returns 0, or -1 with the message in
	 * r.  The old value stays valid to release on failure.
	 */
	int (*read)(struct cfgread *r, const struct cfgkey *k, const char *path,
		    const json_t *v, void *base);
	/* Replaces the value in dst with a copy of src's; -1 out of memory. */
	int (*copy)(const struct cfgkey *k, void *dst, const void *src);
	/* Frees the value (left zeroed). */
	void (*release)(const struct cfgkey *k, void *base);
	/* The value as JSON, as the file would give it: a new reference, or
	 * NULL out of memory. */
	json_t *(*dump)(const struct cfgkey *k, const void *base);
};

/*
 * Checks the value of k in base, found at path, once the whole config is
 * read (behaviour §2: names, ranges).  Returns 0, or -1 with a message
 * that starts with path in err[0..errlen).
 */
typedef int cfgkey_check_fn(const struct cfgkey *k, void *base,
			    const char *path, char *err, size_t errlen);

/* One key.  A table is an array of them ended by a row without a name. */
struct cfgkey {
	const char *name;
	const struct cfgkey_type *type;
	size_t offset;   /* of the value in the struct of the table */
	unsigned where;  /* CFGKEY_* */
	/* JSON text of the built-in value; NULL: none (the value stays
	 * zeroed), for a key that a family must give and for `profiles`. */
	const char *def;
	/* JSON text of a valid value other than def, for the tests that walk
	 * the table (a key without one fails them). */
	const char *sample;
	const struct cfgkey *keys;  /* an object's keys (cfgkey_object), or
				       those of each entry of a list (the
				       families of `devices`) */
	const char *const *choices; /* the strings a choice may be, NULL-ended */
	const int *values;          /* cfgkey_enum: the value of each choice */
	int64_t max;                /* cfgkey_int: 0..max, which its check
				       enforces (a family's: the library's
				       vgpu_family_check()); the flags and
				       the chart's schema test read it */
	unsigned from;              /* OR-ed into cfgread.from when a profile
				       gives the key */
	cfgkey_check_fn *check;     /* NULL: nothing more than its type */
};

/* The types every table may use. */
extern const struct cfgkey_type cfgkey_string; /* char *, never NULL once
						  read; choices: one of them */
extern const struct cfgkey_type cfgkey_bool;   /* bool */
extern const struct cfgkey_type cfgkey_int;    /* int64_t */
extern const struct cfgkey_type cfgkey_enum;   /* int, values[i] for
						  choices[i] */
extern const struct cfgkey_type cfgkey_object; /* keys, at offsets of the
						  same struct */
extern const struct cfgkey_type cfgkey_patterns; /* struct pattern_set, of
						    non-empty strings */

/* --- walks over a table ------------------------------------------------ */

/* The row of keys named name, or NULL. */
const struct cfgkey *cfgkey_find(const struct cfgkey *keys, const char *name);

/*
 * Fills base, zeroed, with the built-in value of every key of keys.
 * Returns 0, or -1 out of memory (base then valid to release).
 */
int cfgkey_init(const struct cfgkey *keys, void *base) COMPILER_WUR;

/* Replaces in dst each key of keys (but CFGKEY_OWN ones) with a copy of
 * src's.  Returns 0 or -1 out of memory. */
int cfgkey_copy(const struct cfgkey *keys, void *dst, const void *src)
	COMPILER_WUR;

/* Frees the value of every key of keys in base. */
void cfgkey_release(const struct cfgkey *keys, void *base);

/* The keys of base as a JSON object (a new reference; NULL out of memory);
 * the CFGKEY_OWN ones only when they have a value. */
json_t *cfgkey_dump(const struct cfgkey *keys, const void *base);

/*
 * Reads the JSON object v, found at path ("" for the top of the file), by
 * the table keys into base, as r->mode says: an unknown key, a key the
 * mode does not allow, and a value of the wrong type are refused, in the
 * order of the file.  Returns 0, or -1 with the message in r.
 */
int cfgkey_read_object(struct cfgread *r, const struct cfgkey *keys,
		       const char *path, const json_t *v, void *base)
	COMPILER_WUR;

/*
 * Runs the check of every key of keys over base, in the order of the
 * table; path is the prefix of their paths ("" or "devices[0]").  Returns
 * 0, or -1 with the message in err[0..errlen).
 */
int cfgkey_check(const struct cfgkey *keys, void *base, const char *path,
		 char *err, size_t errlen) COMPILER_WUR;

/* --- readers of one value ------------------------------------------------ */

/* "config FILE: " and the message into r->err.  Returns -1. */
int cfgkey_fail(struct cfgread *r, const char *fmt, ...) COMPILER_PRINTF(2, 3);

/* "PATH: expected WANT, got TYPE".  Returns -1. */
int cfgkey_bad_type(struct cfgread *r, const char *path, const char *want,
		    const json_t *v);

/* "unknown key "PATH.KEY"" (the key cut to 64 bytes).  Returns -1. */
int cfgkey_unknown(struct cfgread *r, const char *path, const char *key);

/* "PATH: missing required key "KEY"".  Returns -1. */
int cfgkey_missing(struct cfgread *r, const char *path, const char *key);

/* Replaces *dst with a copy of the string v (no NUL byte in it). */
int cfgkey_read_string(struct cfgread *r, const char *path, const json_t *v,
		       char **dst) COMPILER_WUR;

/* One of choices (NULL-terminated); *index gets its position. */
int cfgkey_read_choice(struct cfgread *r, const char *path, const json_t *v,
		       const char *const *choices, int *index) COMPILER_WUR;

/*
 * Checks that v is an array of non-empty strings without a NUL byte and
 * fills *texts, malloc'ed, with them (borrowed from v), json_array_size(v)
 * of them.
 */
int cfgkey_read_strings(struct cfgread *r, const char *path, const json_t *v,
			const char ***texts) COMPILER_WUR;

/* Replaces *dst (only on success) with the patterns of the array v. */
int cfgkey_read_patterns(struct cfgread *r, const char *path,
			 const json_t *v, struct pattern_set *dst)
	COMPILER_WUR;

/* Replaces *dst with a copy of s; -1 out of memory. */
int cfgkey_set_string(char **dst, const char *s) COMPILER_WUR;

/*
 * copy, release and dump for a type whose value is a json_t * (NULL or a
 * reference of its own): a deep copy, a decref, a deep copy.
 */
int cfgkey_json_copy(const struct cfgkey *k, void *dst, const void *src)
	COMPILER_WUR;
void cfgkey_json_release(const struct cfgkey *k, void *base);
json_t *cfgkey_json_dump(const struct cfgkey *k, const void *base);

/* Replaces *dst with a deep copy of src; -1 out of memory. */
int cfgkey_copy_json(json_t **dst, const json_t *src) COMPILER_WUR;

/* The value of key k in base (base + k->offset). */
static inline void *cfgkey_field(const struct cfgkey *k, const void *base)
{
	return (char *)base + k->offset;
}

#endif /* CFGKEY_H */
