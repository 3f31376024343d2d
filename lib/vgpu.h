/*
 * vgpu.h - Kubernetes quantities, extended resource names and the
 * resolution of one container's HAMi-style vGPU request.
 *
 * This is the whole public interface of libvgpu.  The library depends on
 * libc only; it never logs, never exits and keeps no global state, so it is
 * safe to call from any number of threads.
 *
 * Conventions:
 *  - functions that can fail return 0 or a negative VGPU_E* code;
 *  - out-parameters are written only on success; a caller-supplied
 *    struct vgpu_error (or struct vgpu_errors) is written only on failure;
 *  - functions whose name ends in "n" take (pointer, length) and do not
 *    need a terminating NUL;
 *  - no function keeps a pointer to its arguments beyond the call, except
 *    where a comment says that a result borrows from an argument.
 */
#ifndef VGPU_H
#define VGPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define VGPU_WUR __attribute__((warn_unused_result))
#else
#define VGPU_WUR
#endif

#define VGPU_VERSION "0.1.0"

/*
 * Every error code of the library with its message.  The codes are
 * negative and stable; vgpu_strerror() gives the message.
 */
#define VGPU_ERRORS(X)                                                        \
	X(VGPU_OK, 0, "success")                                              \
	X(VGPU_ENOMEM, -1, "out of memory")                                   \
	X(VGPU_EINVAL, -2, "invalid argument")                                \
	X(VGPU_ESYNTAX, -3, "not a valid quantity")                           \
	X(VGPU_ERANGE, -4, "out of range")                                    \
	X(VGPU_EFRACTION, -5, "not a whole number")                           \
	X(VGPU_EBYTES, -6, "looks like bytes; the unit is MiB")               \
	X(VGPU_EMISMATCH, -7, "request differs from limit")                   \
	X(VGPU_ECONFLICT, -8, "memory and memory percentage are exclusive")   \
	X(VGPU_ENAME, -9, "not a valid extended resource name")               \
	X(VGPU_EDUPLICATE, -10, "duplicate name")

enum vgpu_code {
#define VGPU_ENUM_(name, code, message) name = code,
	VGPU_ERRORS(VGPU_ENUM_)
#undef VGPU_ENUM_
};

/* The message of a code; "unknown error" for a code not in the list. */
const char *vgpu_strerror(int code);

/* ------------------------------------------------------------------------
 * Quantities
 *
 * A Kubernetes quantity (k8s.io/apimachinery resource.Quantity):
 *
 *   quantity ::= [sign] number suffix
 *   number   ::= digits | digits "." | digits "." digits | "." digits
 *   suffix   ::= "" | "n" | "u" | "m" | "k" | "M" | "G" | "T" | "P" | "E"
 *              | "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei"
 *              | ("e" | "E") [sign] digits
 *
 * As Kubernetes does, a parsed value is rounded up (away from zero) to a
 * whole number of nano units (1e-9).  Parsing is exact otherwise: no
 * floating point is involved.  A value whose magnitude, once rounded up to
 * a whole number, is larger than INT64_MAX is refused with VGPU_ERANGE.
 * Parsing costs time linear in the length of the text whatever the
 * exponent (so "1e999999999" is refused at once).
 */

enum vgpu_format {
	VGPU_FORMAT_DECIMAL_SI,       /* no suffix, or n u m k M G T P E */
	VGPU_FORMAT_BINARY_SI,        /* Ki Mi Gi Ti Pi Ei */
	VGPU_FORMAT_DECIMAL_EXPONENT, /* e3, E-2 */
};

struct vgpu_quantity {
	/* Integer part, truncated toward zero. */
	int64_t units;
	/* Fraction in nano units: same sign as units, |nanos| < 1000000000. */
	int32_t nanos;
	/* How the suffix was written. */
	enum vgpu_format format;
};

/*
 * Parses the quantity in s[0..len).  Returns 0 and fills *q, or
 * VGPU_ESYNTAX for text outside the grammar, or VGPU_ERANGE for a value
 * too large.  It never allocates.
 */
int vgpu_quantity_parsen(const char *s, size_t len, struct vgpu_quantity *q)
	VGPU_WUR;
int vgpu_quantity_parse(const char *s, struct vgpu_quantity *q) VGPU_WUR;

/* True when q has no fractional part. */
bool vgpu_quantity_is_whole(const struct vgpu_quantity *q);

/*
 * The value rounded up to an integer, away from zero, as Kubernetes'
 * Quantity.Value() does: 1.5 gives 2 and -1.5 gives -2.
 */
int64_t vgpu_quantity_value(const struct vgpu_quantity *q);

/* -1, 0 or 1 as a is less than, equal to or greater than b. */
int vgpu_quantity_cmp(const struct vgpu_quantity *a,
		      const struct vgpu_quantity *b);

/* ------------------------------------------------------------------------
 * Names (Kubernetes validation rules)
 */

/*
 * An extended resource name: "domain/name", outside the kubernetes.io
 * namespace, not starting with "requests.", such that "requests." + name
 * is a qualified name (nvidia.com/gpu, hami.io/vgpu-memory).
 */
bool vgpu_resource_name_validn(const char *s, size_t len);

/* A DNS-1123 subdomain: at most 253 characters of [a-z0-9.-], dot-separated
 * labels that start and end with [a-z0-9]. */
bool vgpu_dns_subdomain_validn(const char *s, size_t len);

/* A qualified name: [prefix "/"] name, prefix a DNS-1123 subdomain, name at
 * most 63 characters of [A-Za-z0-9._-] that start and end alphanumeric. */
bool vgpu_qualified_name_validn(const char *s, size_t len);

/* A label value: empty, or at most 63 characters of [A-Za-z0-9._-] that
 * start and end alphanumeric. */
bool vgpu_label_value_validn(const char *s, size_t len);

/* ------------------------------------------------------------------------
 * Device families
 */

/* The resources of a family, in the order they are processed and written. */
enum vgpu_resource {
	VGPU_COUNT,
	VGPU_MEMORY,
	VGPU_MEMORY_PERCENTAGE,
	VGPU_CORES,
	VGPU_PRIORITY,
	VGPU_NRESOURCES
};

#define VGPU_BIT(res) (1u << (res))

/* Largest values (docs/behaviour.md §3.2; §2 for the defaults). */
#define VGPU_MAX_COUNT INT64_C(2147483647)
#define VGPU_MAX_MEMORY INT64_C(1048576)
#define VGPU_MAX_PERCENTAGE INT64_C(100)
#define VGPU_MAX_CORES INT64_C(100)
#define VGPU_MAX_PRIORITY INT64_C(2147483647)

/*
 * One device family.  The strings are borrowed: they must outlive every use
 * of the family, and the library never frees them.
 */
struct vgpu_family {
	const char *name;
	/* Resource names; NULL or "" where the family has no such key.
	 * VGPU_COUNT and VGPU_MEMORY are required. */
	const char *resource[VGPU_NRESOURCES];
	int64_t default_gpu_num; /* 0..VGPU_MAX_COUNT; 0: no count default */
	int64_t default_memory;  /* MiB, 0..VGPU_MAX_MEMORY; 0: whole device */
	int64_t default_cores;   /* 0..100; 0: no fixed default */
};

/* The built-in NVIDIA family (docs/behaviour.md §2, #s2-devices). */
extern const struct vgpu_family vgpu_family_nvidia;

/* The configuration key of a resource name, "resourceCountName" and so on. */
const char *vgpu_resource_config_key(enum vgpu_resource res);

/* The resource name of res in f, or NULL when the family has none. */
const char *vgpu_family_resource(const struct vgpu_family *f,
				 enum vgpu_resource res);

/* ------------------------------------------------------------------------
 * Text that a message quotes
 *
 * The library masks and cuts every value it copies into an error with
 * these.  They are exported for the webhook, so that its messages and log
 * lines treat text the same way; they are not needed to use the library.
 */

/*
 * The length (1 to 4) of the UTF-8 character at the start of p[0..n),
 * n >= 1; 0 when p does not start with a valid UTF-8 sequence: a
 * continuation byte, C0, C1 or F5 to FF (F8 to FF are never UTF-8), an
 * overlong form, a surrogate, a code point past U+10FFFF, or a sequence
 * cut short by n.
 */
size_t vgpu_utf8_charn(const unsigned char *p, size_t n);

/*
 * Whether the character at p, a valid UTF-8 sequence (vgpu_utf8_charn()
 * gave its length), is a control character: C0 (U+0000 to U+001F), DEL
 * (U+007F) or C1 (U+0080 to U+009F).
 */
bool vgpu_utf8_is_control(const unsigned char *p);

/*
 * Copies the text s[0..len) into dst[0..size), size >= 4, for a message or
 * a log line: control characters and the bytes that are not valid UTF-8
 * are dropped, and at most max_chars characters (code points; at least 4)
 * are kept.  A longer text is cut and ends in "...", as is one that does
 * not fit in size.  dst always ends in a NUL and holds valid UTF-8 without
 * control characters.  Returns the length written, without the NUL.
 */
size_t vgpu_mask_cutn(char *dst, size_t size, const char *s, size_t len,
		      size_t max_chars);

/* ------------------------------------------------------------------------
 * Errors
 */

#define VGPU_VALUE_MAX 48
#define VGPU_MESSAGE_MAX 256

/*
 * One error.  key points at a resource name of the family given to the
 * call (borrowed), or is NULL.  value is a copy of the offending value with
 * control characters and bytes that are not UTF-8 removed, cut to fit with
 * "..." at the end (vgpu_mask_cutn()).  message is
 * a complete sentence fragment in lower case that names key and value, such
 * as: nvidia.com/gpumem=16Gi looks like bytes; the unit is MiB: did you
 * mean 16384?
 */
struct vgpu_error {
	int code;
	const char *key;
	char value[VGPU_VALUE_MAX];
	char message[VGPU_MESSAGE_MAX];
};

#define VGPU_MAX_ERRORS 16

struct vgpu_errors {
	size_t count;
	struct vgpu_error error[VGPU_MAX_ERRORS];
};

/*
 * Checks a family: required names present, every name a valid extended
 * resource name and unique within the family, defaults in range.  Returns 0,
 * or a code with *err filled (err->key names the offending configuration
 * key, such as "defaultMemory", and err->message says why).
 */
int vgpu_family_check(const struct vgpu_family *f, struct vgpu_error *err)
	VGPU_WUR;

/* ------------------------------------------------------------------------
 * Resolving one container (docs/behaviour.md §3.1 to §3.5)
 */

/* A resource entry of a container: key and value text, both borrowed. */
struct vgpu_pair {
	const char *key;
	size_t key_len;
	const char *value;
	size_t value_len;
};

enum vgpu_kind {
	VGPU_KIND_NONE,    /* none of the family's keys is present */
	VGPU_KIND_ZERO,    /* count 0: no vGPU of this family */
	VGPU_KIND_SKIPPED, /* keys without count, and defaultGPUNum is 0 */
	VGPU_KIND_SHARED,  /* count >= 1: a vGPU container of the family */
};

/*
 * The effective request of one container for one family.
 *
 *  - present: bit VGPU_BIT(res) is set when res has a value, given or
 *    defaulted; value[res] holds it then (and is 0 otherwise).
 *  - copied: keys that had a request and no limit; the request's text is
 *    to be copied into limits unchanged (behaviour §3.1).
 *  - defaulted: keys set by §3.3 or §3.5; their text is the decimal value.
 *  - Neither copied nor defaulted keys are set for VGPU_KIND_SKIPPED: the
 *    family's keys are left alone.
 */
struct vgpu_request {
	enum vgpu_kind kind;
	unsigned present;
	unsigned copied;
	unsigned defaulted;
	int64_t value[VGPU_NRESOURCES];
};

/*
 * Resolves the family f for a container whose resources.limits entries are
 * limits[0..nlimits) and whose resources.requests entries are
 * requests[0..nrequests).  Entries whose key is not a name of f are
 * ignored; a caller leaves out entries whose value is null.  When a key
 * appears twice in one list the first entry counts.
 *
 * Returns 0 and fills *out; or returns the code of the first error and
 * fills *errs with every error found (at most VGPU_MAX_ERRORS, the rest
 * dropped), each naming its key and value.  *out is untouched on error and
 * *errs is untouched on success.
 */
int vgpu_resolve(const struct vgpu_family *f, const struct vgpu_pair *limits,
		 size_t nlimits, const struct vgpu_pair *requests,
		 size_t nrequests, struct vgpu_request *out,
		 struct vgpu_errors *errs) VGPU_WUR;

/* Flags of vgpu_resolve_flags(). */
enum {
	/*
	 * HAMi's reading (its TestGenerateResourceRequests_DefaultMemory): a
	 * memory or memory-percentage value equal to 0 ("0", "0Mi", "0.0")
	 * counts as not set, and the container is resolved as if the key
	 * were absent.  Without it such a value is out of range.
	 */
	VGPU_RESOLVE_ZERO_UNSET = 1u << 0,
};

/*
 * vgpu_resolve() with flags (VGPU_RESOLVE_*).  On success *unset gets
 * VGPU_BIT(res) for each key whose value counted as not set: it is not
 * present, a default may fill it (out->defaulted), and, in a vGPU
 * container, a request of it without a limit that no default fills is in
 * out->copied (its 0 is copied into limits); in a container that is not
 * one, nothing of it is copied.  A limit and a request of such a key that differ
 * are still an error, and so is any other value.  *unset is written only
 * on success, as *out is.  vgpu_resolve() is this function with flags 0.
 */
int vgpu_resolve_flags(const struct vgpu_family *f, unsigned flags,
		       const struct vgpu_pair *limits, size_t nlimits,
		       const struct vgpu_pair *requests, size_t nrequests,
		       struct vgpu_request *out, unsigned *unset,
		       struct vgpu_errors *errs) VGPU_WUR;

#ifdef __cplusplus
}
#endif

#endif /* VGPU_H */
