/*
 * pod.h - the parts of a pod the policy reads: a pick.h schema for the
 * decoder, and a typed view checked field by field (docs/behaviour.md
 * §4.2).
 *
 * pod_rule and pod_read() are two sides of one list: a pod decoded with the
 * schema reads exactly as the whole pod does.  Keep them in step: in pod.c
 * each part of the schema sits beside the readers of that part.
 *
 * The view borrows the JSON it was read from: its json_t pointers and
 * strings live as long as that pod, which must not change meanwhile.  It
 * is not shared between threads.
 */
#ifndef POD_H
#define POD_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "buf.h"
#include "compiler.h"
#include "config.h"
#include "pick.h"
#include "vgpu.h"

#define POD_ANNOTATION_NODE_POLICY "hami.io/node-scheduler-policy"
#define POD_ANNOTATION_GPU_POLICY "hami.io/gpu-scheduler-policy"

/*
 * Messages about a pod are lines of at most POD_LINE_CHARS characters,
 * control characters removed (behaviour §5.4); a longer one is cut and
 * ends in "...".  A value of the pod quoted in one (a label) is cut the
 * same way, so one of 120 characters reads the same whole.  POD_LINE_SIZE
 * bytes hold any such line.
 */
#define POD_LINE_CHARS 120
#define POD_LINE_SIZE (POD_LINE_CHARS * 4 + 4)

/*
 * The schema: metadata.name and metadata.generateName (which name the pod
 * in logs), metadata.namespace, the labels and every annotation (profiles
 * and the guards), and of the spec what pod_read() reads.
 */
extern const struct pick_rule pod_rule;

/*
 * One device family's entries in one container; slots[f] is for
 * cfg->devices[f].  The pairs are what the library resolves (vgpu.h):
 * their keys are the family's, and their values point into the pod's
 * strings or into text.
 */
struct pod_slot {
	struct vgpu_pair limits[VGPU_NRESOURCES];
	struct vgpu_pair requests[VGPU_NRESOURCES];
	size_t nlimits, nrequests;
	json_t *request_value[VGPU_NRESOURCES]; /* by resource; NULL if none */
	char text[2][VGPU_NRESOURCES][32];      /* JSON numbers as text */
	struct vgpu_request req; /* zeroed; the policy resolves into it */
	unsigned unset; /* VGPU_BIT()s of the keys whose 0 counted as not
			   set (vgpu_resolve_flags()); the policy fills it */
};

struct pod_container {
	const char *list; /* "initContainers", "containers" or
			     "ephemeralContainers" */
	bool top;         /* the list is a member of the object itself (an
			     EphemeralContainers object), not of its spec */
	size_t index;     /* in that list */
	const char *name; /* "" when absent */
	char label[POD_LINE_SIZE]; /* name, for messages */
	json_t *resources; /* NULL when absent or null, likewise below */
	json_t *limits;
	json_t *requests;
	json_t *env; /* entries are objects with string name and value */
	json_t *env_from; /* envFrom: objects whose prefix is a string and
			     whose configMapRef and secretRef are objects
			     with a string name */
	json_t *mounts; /* volumeMounts: objects with a string mountPath */
	bool privileged;
	bool asks; /* names a resource of some family */
	bool vgpu; /* false; the policy sets it for a vGPU container */
	struct pod_slot *slots; /* owned; one per device family */
	size_t *strip;  /* owned: env indexes the env guard removes,
			   ascending; NULL when none */
	size_t nstrip;
};

struct pod {
	json_t *metadata; /* NULL when absent or null, likewise below */
	json_t *labels;      /* of strings */
	json_t *annotations; /* of strings */
	json_t *spec;
	json_t *tolerations; /* of objects whose four fields are strings */
	const char *scheduler_name;     /* "" when absent, likewise below */
	const char *node_name;
	const char *runtime_class_name;
	char scheduler_label[POD_LINE_SIZE]; /* for messages */
	char node_label[POD_LINE_SIZE];
	struct pod_container *containers; /* owned: init containers, then
					     app containers */
	size_t ncontainers;
	size_t napp; /* app containers, after the init containers */
	bool vgpu; /* false; the policy sets it when a container is one */
	json_t *strip_keys; /* owned: the annotation keys the annotation
			       guard removes, in byte order; NULL when none */
};

/* What pod_read_part() reads of a pod. */
enum pod_part {
	POD_PART_ALL,        /* a CREATE: metadata, spec and containers */
	POD_PART_METADATA,   /* an UPDATE: metadata.labels and .annotations */
};

enum pod_status {
	POD_OK,
	POD_INVALID, /* a field has the wrong JSON type: deny with 400 */
	POD_NOMEM,
};

/*
 * Reads obj (the object of a Pod CREATE) into *p, whose former content is
 * not looked at, collecting each container's entries for every device
 * family of cfg.  Returns POD_OK; POD_INVALID at the first field of the
 * wrong type, with a message naming its JSON path in err[0..errlen) (the
 * view is then partly read); or POD_NOMEM.  Whatever it returns, *p is
 * released with pod_release().
 */
enum pod_status pod_read(struct pod *p, const struct config *cfg,
			 const json_t *obj, char *err, size_t errlen) COMPILER_WUR;

/* pod_read() for part of a pod. */
enum pod_status pod_read_part(struct pod *p, const struct config *cfg,
			      const json_t *obj, enum pod_part part, char *err,
			      size_t errlen) COMPILER_WUR;

/*
 * pod_read() for a pods/ephemeralcontainers UPDATE: the metadata of obj
 * (request.object), and as the containers of the view (napp their number)
 * the ephemeral containers obj adds: those whose name no ephemeral
 * container of old (request.oldObject; NULL: none) has.  They are
 * spec.ephemeralContainers of a Pod, or with list the ephemeralContainers
 * of an EphemeralContainers object (Kubernetes 1.16 to 1.21; each
 * container's top is then set).  Each is read as pod_read() reads a
 * container, its index that in obj's list; its slots are zeroed (an
 * ephemeral container has no resources).  Of old only the names are read;
 * a wrong type there is named with the prefix "oldObject.".  Returns as
 * pod_read() does.
 */
enum pod_status pod_read_added(struct pod *p, const struct config *cfg,
			       const json_t *obj, const json_t *old, bool list,
			       char *err, size_t errlen) COMPILER_WUR;

/* Frees what p owns (not the pod it borrows).  Accepts a released view. */
void pod_release(struct pod *p);

/* s for messages: control characters removed, cut as a line is; in out. */
const char *pod_label(char out[POD_LINE_SIZE], const char *s);

/*
 * Appends one warning to list (an array of strings): the formatted line,
 * its control characters removed and cut to POD_LINE_CHARS.  Sets *nomem
 * when memory ran out.
 */
void pod_warnf(json_t *list, bool *nomem, const char *fmt, ...)
	COMPILER_PRINTF(3, 4);

#endif /* POD_H */
