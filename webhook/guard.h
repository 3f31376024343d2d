/*
 * guard.h - the guards of behaviour §4.2: scheduler annotations a
 * tenant may not write, env names the GPU runtime reads, and volume
 * mounts where the container runtime reads a device list.
 *
 * A guard run looks at a pod view that pod_read_part() filled and adds,
 * per violation, one of: a line to the denial message, an entry to remove
 * (the view's strip lists, written later by mutate.h), or a warning.  It
 * decides nothing else.  A pod without annotations or env costs a couple
 * of tests: patterns are matched only against keys and names present.
 */
#ifndef GUARD_H
#define GUARD_H

#include <stdbool.h>

#include <jansson.h>

#include "buf.h"
#include "guardcfg.h"
#include "pod.h"

enum guard_kind { GUARD_ANNOTATIONS, GUARD_ENV, GUARD_MOUNTS,
		  GUARD_NKINDS };
enum guard_action { GUARD_DENIED, GUARD_STRIPPED, GUARD_WARNED,
		    GUARD_NACTIONS };

/* The hits whose key is kept for the log, and the size of one key: a
 * request value masked and cut to 63 characters, as in every log line. */
#define GUARD_HITS_LISTED 8
#define GUARD_KEY_SIZE (63 * 4 + 4)

/* One hit: which guard, what it did, and the key (annotation key, env
 * name or mount path) masked and cut. */
struct guard_hit {
	unsigned char kind;   /* enum guard_kind */
	unsigned char action; /* enum guard_action */
	char key[GUARD_KEY_SIZE];
};

/*
 * Hits by guard and action (the metric vgpu_webhook_guard_hits_total), and
 * the first GUARD_HITS_LISTED of them with their keys (the audit trail).
 */
struct guard_hits {
	unsigned count[GUARD_NKINDS][GUARD_NACTIONS];
	struct guard_hit listed[GUARD_HITS_LISTED];
	size_t nlisted;
};

/* Counts one hit of key[0..len), and lists it while there is room. */
void guard_hits_add(struct guard_hits *h, enum guard_kind kind,
		    enum guard_action action, const char *key, size_t len);

/*
 * The listed hits as one line for a log field, into out[0..size): each
 * "ACTION GUARD KEY" ("denied env NVIDIA_VISIBLE_DEVICES"), joined by
 * "; ", then "; ... and N more" for the hits not listed; "" without hits.
 */
void guard_hits_format(const struct guard_hits *h, char *out, size_t size);

/* "annotations", "env" or "volumeMounts"; "denied", "stripped" or
 * "warned". */
const char *guard_kind_name(enum guard_kind kind);
const char *guard_action_name(enum guard_action action);

/*
 * Whether the webhook itself writes the env name in container c
 * (behaviour §3.5 or §3.6), given the entry's plain value value[0..len)
 * (from: it has a valueFrom instead); such an entry is no violation.
 */
typedef bool guard_written_fn(const void *ctx, const struct pod_container *c,
			      const char *name, const char *value, size_t len,
			      bool from);

/* The state of one guard run over one request. */
struct guard_run {
	const struct guards *g;
	struct pod *pod;      /* strip lists are set here */
	bool update;          /* an UPDATE or a Binding: annotations compared
				 with old, and named with the requester */
	bool can_patch;       /* the answer may carry a patch; else strip
				 denies */
	struct buf deny;      /* violations that deny, joined by "; " */
	json_t *warnings;     /* borrowed: strip and warn lines go here */
	struct guard_hits *hits; /* borrowed; counted into */
	bool oom;
};

/*
 * The annotation guard on a CREATE: every guarded key present counts.
 * On an UPDATE (run->update): every guarded key added, changed or removed
 * against old (the view of oldObject, metadata only) counts, unless the
 * requester (username, groups: an array of strings or NULL) is a writer.
 */
void guard_annotations(struct guard_run *run, const struct pod *old,
		       const char *username, const json_t *groups);

/*
 * The env guard over every container of the view, in order: an entry
 * whose name is guarded counts unless its plain value is allowed, or it
 * is the last entry of its name in the container and written(ctx, c,
 * name, ...) says the webhook writes it (written may be NULL: the webhook
 * writes nothing).  An earlier entry of the same name counts: the webhook
 * replaces only the last.
 */
void guard_env(struct guard_run *run, guard_written_fn *written,
	       const void *ctx);

/*
 * The mount guard over every container of the view, in order: a
 * volumeMounts entry whose mountPath, in its lexical normal form, starts
 * with a guarded path counts.  deny or warn (a mount is never removed).
 */
void guard_mounts(struct guard_run *run);

#endif /* GUARD_H */
