/*
 * resolve.c - one container's request for one device family
 * (docs/behaviour.md §3.1 to §3.5).
 */
#include <stdio.h>
#include <string.h>

#include "vgpu.h"

#define MIB INT64_C(1048576)

static const int64_t minimum[VGPU_NRESOURCES] = {
	[VGPU_COUNT] = 0,
	[VGPU_MEMORY] = 1,
	[VGPU_MEMORY_PERCENTAGE] = 1,
	[VGPU_CORES] = 0,
	[VGPU_PRIORITY] = 0,
};

static const int64_t maximum[VGPU_NRESOURCES] = {
	[VGPU_COUNT] = VGPU_MAX_COUNT,
	[VGPU_MEMORY] = VGPU_MAX_MEMORY,
	[VGPU_MEMORY_PERCENTAGE] = VGPU_MAX_PERCENTAGE,
	[VGPU_CORES] = VGPU_MAX_CORES,
	[VGPU_PRIORITY] = VGPU_MAX_PRIORITY,
};

/* The entries of one resource: its limit and its request, either NULL. */
struct entry {
	const struct vgpu_pair *limit;
	const struct vgpu_pair *request;
};

static const struct vgpu_pair *find(const struct vgpu_pair *pairs, size_t n,
				    const char *key)
{
	size_t len = strlen(key), i;

	for (i = 0; i < n; i++)
		if (pairs[i].key_len == len && !memcmp(pairs[i].key, key, len))
			return &pairs[i];
	return NULL;
}

/*
 * Takes the next error of errs and fills its code, its key and its value:
 * the value of pair masked and cut only where it does not fit
 * (vgpu_mask_cutn()), also written to value for the caller's message.
 * Returns the error for the caller to write the message, or NULL when errs
 * already holds VGPU_MAX_ERRORS (the error is dropped).
 */
static struct vgpu_error *next_error(struct vgpu_errors *errs, int code,
				     const char *key,
				     const struct vgpu_pair *pair,
				     char value[VGPU_VALUE_MAX])
{
	struct vgpu_error *e;

	if (errs->count >= VGPU_MAX_ERRORS)
		return NULL;
	vgpu_mask_cutn(value, VGPU_VALUE_MAX, pair->value, pair->value_len,
		       VGPU_VALUE_MAX);
	e = &errs->error[errs->count++];
	e->code = code;
	e->key = key;
	memcpy(e->value, value, VGPU_VALUE_MAX);
	return e;
}

/*
 * Appends one error to errs (dropped past VGPU_MAX_ERRORS): "KEY=VALUE
 * TEXT", where VALUE is the masked value of pair.
 */
static void add_error(struct vgpu_errors *errs, int code, const char *key,
		      const struct vgpu_pair *pair, const char *text)
{
	char value[VGPU_VALUE_MAX];
	struct vgpu_error *e = next_error(errs, code, key, pair, value);

	if (e)
		snprintf(e->message, sizeof(e->message), "%.90s=%s %.72s", key,
			 value, text);
}

/*
 * The MiB a memory value too large for int64 stands for, when it is written
 * with a binary suffix: its value divided by 2^20, rounded up, is the same
 * number written with the suffix two steps lower (9Ei is 9Ti MiB).
 * Returns false when there is no such hint.
 */
static bool bytes_hint(const struct vgpu_pair *pair, int64_t *hint)
{
	static const char lower[] = { 'M', 0, 'G', 'K', 'T', 'M', 'P', 'G',
				      'E', 'T' };
	struct vgpu_quantity q;
	char text[96];
	size_t n = pair->value_len, i;

	if (n < 3 || n >= sizeof(text) || pair->value[0] == '-' ||
	    pair->value[n - 1] != 'i')
		return false;
	memcpy(text, pair->value, n);
	for (i = 0; i < sizeof(lower); i += 2) {
		if (text[n - 2] != lower[i])
			continue;
		if (lower[i + 1]) {
			text[n - 2] = lower[i + 1];
			text[n] = '\0';
		} else {
			text[n - 2] = '\0';
		}
		if (vgpu_quantity_parse(text, &q))
			return false;
		*hint = vgpu_quantity_value(&q);
		return *hint > 0;
	}
	return false;
}

/*
 * §3.2 for one effective value: whole, in range, and for memory not
 * written as bytes.  parsed is false when the parser found the value too
 * large for int64.  Returns 0 and sets *value, or records an error.
 */
static int check(enum vgpu_resource res, const char *key,
		 const struct vgpu_pair *pair, const struct vgpu_quantity *q,
		 bool parsed, int64_t *value, struct vgpu_errors *errs)
{
	char text[80];
	int64_t v, hint = 0;

	if (parsed && !vgpu_quantity_is_whole(q)) {
		add_error(errs, VGPU_EFRACTION, key, pair,
			  "is not a whole number");
		return VGPU_EFRACTION;
	}
	v = parsed ? vgpu_quantity_value(q) : 0;
	if (res == VGPU_MEMORY && parsed && v > 0 &&
	    (v > VGPU_MAX_MEMORY || q->format == VGPU_FORMAT_BINARY_SI))
		hint = v / MIB + (v % MIB != 0);
	else if (res == VGPU_MEMORY && !parsed && !bytes_hint(pair, &hint))
		hint = 0;
	if (hint) {
		snprintf(text, sizeof(text),
			 "looks like bytes; the unit is MiB: did you mean %lld?",
			 (long long)hint);
		add_error(errs, VGPU_EBYTES, key, pair, text);
		return VGPU_EBYTES;
	}
	if (!parsed || v < minimum[res] || v > maximum[res]) {
		snprintf(text, sizeof(text), "is out of range %lld..%lld",
			 (long long)minimum[res], (long long)maximum[res]);
		add_error(errs, VGPU_ERANGE, key, pair, text);
		return VGPU_ERANGE;
	}
	*value = v;
	return 0;
}

/* Records a limit and a request that differ as quantities. */
static void add_mismatch(struct vgpu_errors *errs, const char *key,
			 const struct entry *e)
{
	struct vgpu_error *err;
	char limit[VGPU_VALUE_MAX], request[VGPU_VALUE_MAX];

	err = next_error(errs, VGPU_EMISMATCH, key, e->limit, limit);
	if (!err)
		return;
	vgpu_mask_cutn(request, sizeof(request), e->request->value,
		       e->request->value_len, sizeof(request));
	snprintf(err->message, sizeof(err->message),
		 "%.90s: request %s differs from limit %s", key, request,
		 limit);
}

/* Records memory and memory percentage given together, with both values. */
static void add_conflict(struct vgpu_errors *errs, const char *mem_key,
			 const struct vgpu_pair *mem, const char *pct_key,
			 const struct vgpu_pair *pct)
{
	struct vgpu_error *err;
	char m[VGPU_VALUE_MAX], p[VGPU_VALUE_MAX];

	err = next_error(errs, VGPU_ECONFLICT, mem_key, mem, m);
	if (!err)
		return;
	vgpu_mask_cutn(p, sizeof(p), pct->value, pct->value_len, sizeof(p));
	snprintf(err->message, sizeof(err->message),
		 "%.60s=%s and %.60s=%s are both set; give one", mem_key, m,
		 pct_key, p);
}

/* read_entry()'s answer for a value of 0 that counts as not set. */
#define ENTRY_UNSET 1

/* Whether res's value of 0 counts as not set under flags. */
static bool zero_unset(enum vgpu_resource res, unsigned flags)
{
	return (flags & VGPU_RESOLVE_ZERO_UNSET) &&
	       (res == VGPU_MEMORY || res == VGPU_MEMORY_PERCENTAGE);
}

/*
 * §3.1 and §3.2 for one resource: the effective value is the limit, or the
 * request when there is no limit; a request that differs from its limit is
 * an error.  A value too large for int64 (VGPU_ERANGE from the parser) is
 * reported by check() as out of range.  Returns 0 and sets *value, or
 * ENTRY_UNSET for a value of 0 that flags count as not set, or a code
 * after recording every error of the entry.
 */
static int read_entry(enum vgpu_resource res, const char *key,
		      const struct entry *e, unsigned flags, int64_t *value,
		      struct vgpu_errors *errs)
{
	struct vgpu_quantity limit, request;
	int rl = 0, rr = 0, rc = 0;

	if (e->limit)
		rl = vgpu_quantity_parsen(e->limit->value, e->limit->value_len,
					  &limit);
	if (e->request)
		rr = vgpu_quantity_parsen(e->request->value,
					  e->request->value_len, &request);
	/* The parser fails only with VGPU_ESYNTAX or VGPU_ERANGE. */
	if (rl && rl != VGPU_ERANGE) {
		add_error(errs, rl, key, e->limit, "is not a valid quantity");
		rc = rl;
	}
	if (rr && rr != VGPU_ERANGE) {
		add_error(errs, rr, key, e->request, "is not a valid quantity");
		rc = rc ? rc : rr;
	}
	if (rc)
		return rc;
	if (e->limit && e->request &&
	    ((rl == VGPU_ERANGE) != (rr == VGPU_ERANGE) ||
	     (!rl && vgpu_quantity_cmp(&limit, &request)))) {
		int64_t ignored;

		add_mismatch(errs, key, e);
		/* The limit's own errors are worth knowing too, unless it is
		 * a 0 that counts as not set. */
		if (!(zero_unset(res, flags) && !rl && limit.units == 0 &&
		      limit.nanos == 0))
			(void)check(res, key, e->limit, &limit, !rl, &ignored,
				    errs);
		return VGPU_EMISMATCH;
	}
	if (zero_unset(res, flags)) {
		const struct vgpu_quantity *q = e->limit ? &limit : &request;

		if (!(e->limit ? rl : rr) && q->units == 0 && q->nanos == 0)
			return ENTRY_UNSET;
	}
	if (e->limit)
		return check(res, key, e->limit, &limit, !rl, value, errs);
	return check(res, key, e->request, &request, !rr, value, errs);
}

int vgpu_resolve(const struct vgpu_family *f, const struct vgpu_pair *limits,
		 size_t nlimits, const struct vgpu_pair *requests,
		 size_t nrequests, struct vgpu_request *out,
		 struct vgpu_errors *errs)
{
	unsigned unset;

	return vgpu_resolve_flags(f, 0, limits, nlimits, requests, nrequests,
				  out, &unset, errs);
}

int vgpu_resolve_flags(const struct vgpu_family *f, unsigned flags,
		       const struct vgpu_pair *limits, size_t nlimits,
		       const struct vgpu_pair *requests, size_t nrequests,
		       struct vgpu_request *out, unsigned *unset,
		       struct vgpu_errors *errs)
{
	struct vgpu_errors found = { 0 };
	struct vgpu_request r = { 0 };
	const char *mem = vgpu_family_resource(f, VGPU_MEMORY);
	const char *pct = vgpu_family_resource(f, VGPU_MEMORY_PERCENTAGE);
	unsigned zero = 0, request_only = 0;
	int first = 0;
	int i;

	for (i = 0; i < VGPU_NRESOURCES; i++) {
		const char *key = vgpu_family_resource(f, i);
		struct entry e = { NULL, NULL };
		int rc;

		if (!key)
			continue;
		e.limit = find(limits, nlimits, key);
		e.request = find(requests, nrequests, key);
		if (!e.limit && !e.request)
			continue;
		rc = read_entry(i, key, &e, flags, &r.value[i], &found);
		if (rc == ENTRY_UNSET) {
			zero |= VGPU_BIT(i);
			if (!e.limit)
				request_only |= VGPU_BIT(i);
			continue;
		}
		if (rc) {
			if (!first)
				first = rc;
			continue;
		}
		r.present |= VGPU_BIT(i);
		if (!e.limit)
			r.copied |= VGPU_BIT(i);
	}
	if (mem && pct && !(zero & (VGPU_BIT(VGPU_MEMORY) |
				    VGPU_BIT(VGPU_MEMORY_PERCENTAGE)))) {
		const struct vgpu_pair *m = find(limits, nlimits, mem);
		const struct vgpu_pair *c = find(limits, nlimits, pct);

		m = m ? m : find(requests, nrequests, mem);
		c = c ? c : find(requests, nrequests, pct);
		if (m && c) {
			add_conflict(&found, mem, m, pct, c);
			if (!first)
				first = VGPU_ECONFLICT;
		}
	}
	if (first) {
		*errs = found;
		return first;
	}

	/* §3.3 and §3.4: is this a vGPU container of the family? */
	if (r.present & VGPU_BIT(VGPU_COUNT)) {
		r.kind = r.value[VGPU_COUNT] ? VGPU_KIND_SHARED : VGPU_KIND_ZERO;
	} else if (r.present & (VGPU_BIT(VGPU_MEMORY) |
				VGPU_BIT(VGPU_MEMORY_PERCENTAGE) |
				VGPU_BIT(VGPU_CORES))) {
		if (f->default_gpu_num > 0) {
			r.kind = VGPU_KIND_SHARED;
			r.value[VGPU_COUNT] = f->default_gpu_num;
			r.present |= VGPU_BIT(VGPU_COUNT);
			r.defaulted |= VGPU_BIT(VGPU_COUNT);
		} else {
			r.kind = VGPU_KIND_SKIPPED;
			r.copied = 0; /* the family's keys are left alone */
		}
	} else {
		r.kind = VGPU_KIND_NONE;
	}

	/* §3.5: memory and cores of a vGPU container. */
	if (r.kind == VGPU_KIND_SHARED) {
		if (!(r.present & (VGPU_BIT(VGPU_MEMORY) |
				   VGPU_BIT(VGPU_MEMORY_PERCENTAGE)))) {
			if (f->default_memory > 0) {
				r.value[VGPU_MEMORY] = f->default_memory;
				r.present |= VGPU_BIT(VGPU_MEMORY);
				r.defaulted |= VGPU_BIT(VGPU_MEMORY);
			} else if (pct) {
				r.value[VGPU_MEMORY_PERCENTAGE] = 100;
				r.present |= VGPU_BIT(VGPU_MEMORY_PERCENTAGE);
				r.defaulted |= VGPU_BIT(VGPU_MEMORY_PERCENTAGE);
			}
		}
		if (!(r.present & VGPU_BIT(VGPU_CORES)) &&
		    vgpu_family_resource(f, VGPU_CORES)) {
			if (f->default_cores > 0) {
				r.value[VGPU_CORES] = f->default_cores;
				r.present |= VGPU_BIT(VGPU_CORES);
				r.defaulted |= VGPU_BIT(VGPU_CORES);
			} else if ((r.present &
				    VGPU_BIT(VGPU_MEMORY_PERCENTAGE)) &&
				   r.value[VGPU_MEMORY_PERCENTAGE] == 100) {
				r.value[VGPU_CORES] = 100;
				r.present |= VGPU_BIT(VGPU_CORES);
				r.defaulted |= VGPU_BIT(VGPU_CORES);
			}
		}
	}
	/* A request of 0 without a limit that no default replaces is still
	 * copied into limits (§3.1): Kubernetes wants both. */
	if (r.kind != VGPU_KIND_SKIPPED)
		r.copied |= request_only & ~r.defaulted;
	*out = r;
	*unset = zero;
	return 0;
}
