/*
 * guardcfg.h - the `guards` object of the config (behaviour §2.1): its
 * built-in defaults, reading it from JSON, and merging one level over
 * another.  Three guards: scheduler annotations, env names, and volume
 * mount paths.
 *
 * Each key read is recorded in `given`, so that a level (the file, or a
 * profile) is read into an empty struct guards and merged over the level
 * above with guardcfg_merge(): a key given replaces its value whole, a key
 * not given keeps the value above.  Patterns are compiled when read; a
 * struct guards is only read afterwards, so threads may share it.
 */
#ifndef GUARDCFG_H
#define GUARDCFG_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "compiler.h"
#include "pattern.h"

/*
 * What a guard's `policy` key says to do with a violation; what was done
 * with one hit is guard.h's enum guard_action (GUARD_DENIED, ...).
 */
enum guard_policy {
	GUARD_POLICY_DENY,
	GUARD_POLICY_STRIP,
	GUARD_POLICY_WARN,
	GUARD_POLICY_OFF,
};

/* Bits of struct guards.given: the keys a level gave. */
enum {
	GUARD_GIVEN_ANNOTATION_POLICY = 1u << 0,
	GUARD_GIVEN_KEYS = 1u << 1,
	GUARD_GIVEN_WRITERS = 1u << 2,
	GUARD_GIVEN_ENV_POLICY = 1u << 3,
	GUARD_GIVEN_NAMES = 1u << 4,
	GUARD_GIVEN_ALLOWED = 1u << 5,
	GUARD_GIVEN_MOUNT_POLICY = 1u << 6,
	GUARD_GIVEN_MOUNT_PATHS = 1u << 7,
};

struct guards {
	enum guard_policy annotation_policy;
	struct pattern_set keys;   /* schedulerAnnotations.keys */
	json_t *writers;           /* array of strings */
	enum guard_policy env_policy;
	struct pattern_set names;  /* env.names */
	json_t *allowed;           /* env.allowedValues: object, pattern ->
				      array of strings */
	struct pattern_set allowed_names; /* the keys of allowed, in order */
	enum guard_policy mount_policy; /* volumeMounts.policy: never strip */
	json_t *mount_paths;       /* volumeMounts.paths: array of absolute
				      paths, each in its lexical normal form
				      (text_clean_path()) */
	unsigned given;            /* GUARD_GIVEN_* */
};

/* "deny", "strip", "warn" or "off". */
const char *guard_policy_name(enum guard_policy policy);

/* The built-in guards.  Returns 0, or -1 out of memory (g then empty). */
int guardcfg_init(struct guards *g) COMPILER_WUR;

/* An empty level: nothing given, no patterns.  Returns 0 or -1 (OOM). */
int guardcfg_init_empty(struct guards *g) COMPILER_WUR;

/* Frees what g owns.  Accepts a zeroed or released struct. */
void guardcfg_release(struct guards *g);

/*
 * Reads the JSON object v (the value of `guards`) into g, which
 * guardcfg_init_empty() prepared: every key optional (null as absent), no
 * unknown key, values checked, writer groups that every requester is in
 * refused.  Returns 0, or -1 with a message "<where>: guards.KEY: ..."
 * in err[0..errlen).
 */
int guardcfg_read(struct guards *g, const json_t *v, const char *where,
		  char *err, size_t errlen) COMPILER_WUR;

/*
 * Replaces in dst each key that src gave, with a copy of src's value, and
 * marks it given in dst.  Returns 0, or -1 out of memory (dst is then
 * unchanged or partly merged, and still valid to read and release).
 */
int guardcfg_merge(struct guards *dst, const struct guards *src)
	COMPILER_WUR;

/*
 * Whether value is in the allowed values of the env name name[0..len):
 * the lists of every allowedValues key that the name matches.
 */
bool guardcfg_allowed(const struct guards *g, const char *name, size_t len,
		      const char *value, size_t value_len);

/*
 * The first of the guarded mount paths that the path s[0..len), in its
 * lexical normal form (text_clean_path()), starts with, compared as bytes
 * as the NVIDIA container toolkit compares a mount's destination with
 * /var/run/nvidia-container-devices; NULL when none.  Borrowed from g.
 */
const char *guardcfg_mount_path(const struct guards *g, const char *s,
				size_t len);

/* Whether username or one of groups (array of strings) is a writer. */
bool guardcfg_is_writer(const struct guards *g, const char *username,
			const json_t *groups);

#endif /* GUARDCFG_H */
