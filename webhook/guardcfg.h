/*
 * guardcfg.h - the `guards` object of the config (behaviour §2.1): the
 * types of its values, read by config.c's table of keys (cfgkey.h), and
 * the questions the guards ask of them.  Three guards: scheduler
 * annotations, env names, and volume mount paths.
 *
 * Patterns are compiled when read; a struct guards is only read
 * afterwards, so threads may share it.
 */
#ifndef GUARDCFG_H
#define GUARDCFG_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "cfgkey.h"
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

/* env.allowedValues: name patterns, each with the values it allows. */
struct guard_allowed {
	json_t *values;           /* object: pattern -> array of strings */
	struct pattern_set names; /* the keys of values, in order */
};

struct guards {
	enum guard_policy annotation_policy;
	struct pattern_set keys;   /* schedulerAnnotations.keys */
	json_t *writers;           /* array of strings */
	enum guard_policy env_policy;
	struct pattern_set names;  /* env.names */
	struct guard_allowed allowed; /* env.allowedValues */
	enum guard_policy mount_policy; /* volumeMounts.policy: never strip */
	json_t *mount_paths;       /* volumeMounts.paths: array of absolute
				      paths, each in its lexical normal form
				      (text_clean_path()) */
};

/* The policies of a guard, and of one that cannot strip (cfgkey_enum). */
extern const char *const guardcfg_policies[];
extern const int guardcfg_policy_values[];
extern const char *const guardcfg_policies_no_strip[];
extern const int guardcfg_policy_values_no_strip[];

/*
 * The types of the guards' values (cfgkey.h): writers (a JSON array of
 * user names and "group:NAME", refusing the groups every requester is
 * in), allowedValues (struct guard_allowed) and mount paths (a JSON array
 * of absolute paths in their lexical normal form, text_clean_path()).
 */
extern const struct cfgkey_type guardcfg_writers;
extern const struct cfgkey_type guardcfg_allowed_values;
extern const struct cfgkey_type guardcfg_paths;

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
