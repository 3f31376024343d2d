/*
 * hami.c - HAMi's device-config.yaml read as device families (hami.h).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "hami.h"
#include "jsonout.h"
#include "text.h"
#include "vgpu.h"
#include "yamlio.h"

/* One reading: the file for the messages, and where they go. */
struct hami_read {
	const char *path;
	char *err;
	size_t errlen;
	json_t *where; /* the path in the file of each family made */
};

/* A section of the file that may make a family. */
struct section {
	const char *key;  /* at the top of the file */
	const char *name; /* of the family; NULL: each entry's commonWord */
	/* HAMi's key of each role (enum vgpu_resource), NULL for none. */
	const char *roles[VGPU_NRESOURCES];
	bool list;        /* a list of entries (iluvatars, vnpus) */
	bool runtime;     /* reads runtimeClassName */
};

static const struct section sections[] = {
	{ "nvidia", "nvidia",
	  { "resourceCountName", "resourceMemoryName",
	    "resourceMemoryPercentageName", "resourceCoreName",
	    "resourcePriorityName" }, false, true },
	{ "cambricon", "cambricon",
	  { "resourceCountName", "resourceMemoryName", NULL,
	    "resourceCoreName", NULL }, false, false },
	{ "hygon", "hygon",
	  { "resourceCountName", "resourceMemoryName", NULL,
	    "resourceCoreName", NULL }, false, false },
	{ "metax", "metax",
	  { "resourceVCountName", "resourceVMemoryName", NULL,
	    "resourceVCoreName", NULL }, false, false },
	{ "mthreads", "mthreads",
	  { "resourceCountName", "resourceMemoryName", NULL,
	    "resourceCoreName", NULL }, false, false },
	{ "kunlun", "kunlun",
	  { "resourceVCountName", "resourceVMemoryName", NULL, NULL, NULL },
	  false, false },
	{ "enflame", "enflame",
	  { "resourceNameDRSGCU", "resourceNameGCUMemory", NULL,
	    "resourceNameGCUCore", NULL }, false, false },
	{ "amd", "amd",
	  { "resourceCountName", "resourceMemoryName", NULL,
	    "resourceCoreName", NULL }, false, false },
	/* HAMi's own webhook writes an Iluvatar core limit of 100 per
	 * device, past the 0..100 of a family's cores: no core role. */
	{ "iluvatars", NULL,
	  { "resourceCountName", "resourceMemoryName", NULL, NULL, NULL },
	  true, false },
	{ "vnpus", NULL,
	  { "resourceName", "resourceMemoryName", NULL, "resourceCoreName",
	    NULL }, true, true },
};

static const char *const core_policies[] = { "", "default", "force",
					     "disable", NULL };

/* Writes "hami-device-config PATH: MESSAGE" into r; returns -1. */
static int fail(struct hami_read *r, const char *fmt, ...)
	COMPILER_PRINTF(2, 3);

static int fail(struct hami_read *r, const char *fmt, ...)
{
	char msg[600];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return text_errorf(r->err, r->errlen, "hami-device-config %s: %s",
			   r->path, msg);
}

/* s masked and cut to 47 characters into out, which is returned: a value
 * of the file as its messages quote it (behaviour §2.3). */
static const char *shown(char out[80], const char *s)
{
	text_mask_cutn(out, 80, s, strlen(s), 47);
	return out;
}

/*
 * "expected WANT, got TYPE" with the value when it is a scalar, masked and
 * cut short.
 */
static int bad_type(struct hami_read *r, const char *path, const char *want,
		    const json_t *v)
{
	char text[80];

	if (json_is_string(v)) {
		text_mask_cutn(text, sizeof(text), json_string_value(v),
			       json_string_length(v), 47);
		return fail(r, "%s: expected %s, got a string \"%s\"", path,
			    want, text);
	}
	if (json_is_integer(v))
		return fail(r, "%s: expected %s, got an integer %" PRId64,
			    path, want, (int64_t)json_integer_value(v));
	if (json_is_real(v))
		return fail(r, "%s: expected %s, got a number %g", path, want,
			    json_real_value(v));
	if (json_is_boolean(v))
		return fail(r, "%s: expected %s, got a boolean %s", path, want,
			    json_is_true(v) ? "true" : "false");
	return fail(r, "%s: expected %s, got %s", path, want,
		    jsonout_type_name(v));
}

/*
 * The value at key of obj (found at path), with its path in sub; NULL
 * when it is absent or null.
 */
static const json_t *lookup(const json_t *obj, const char *path,
			    const char *key, char sub[200])
{
	const json_t *v = json_object_get(obj, key);

	snprintf(sub, 200, "%s.%s", path, key);
	return v && !json_is_null(v) ? v : NULL;
}

/* The string at key of obj, "" when absent, in *out (borrowed). */
static int get_string(struct hami_read *r, const json_t *obj,
		      const char *path, const char *key, const char **out)
{
	char sub[200];
	const json_t *v = lookup(obj, path, key, sub);

	*out = "";
	if (!v)
		return 0;
	if (!json_is_string(v) ||
	    strlen(json_string_value(v)) != json_string_length(v))
		return bad_type(r, sub, "a string", v);
	*out = json_string_value(v);
	return 0;
}

/* The integer at key of obj in 0..max, 0 when absent. */
static int get_int(struct hami_read *r, const json_t *obj, const char *path,
		   const char *key, int64_t max, int64_t *out)
{
	char sub[200];
	const json_t *v = lookup(obj, path, key, sub);

	*out = 0;
	if (!v)
		return 0;
	if (!json_is_integer(v))
		return bad_type(r, sub, "an integer", v);
	*out = (int64_t)json_integer_value(v);
	if (*out < 0 || *out > max)
		return fail(r, "%s: %" PRId64 " is out of range 0..%" PRId64,
			    sub, *out, max);
	return 0;
}

/* The boolean at key of obj, false when absent. */
static int get_bool(struct hami_read *r, const json_t *obj, const char *path,
		    const char *key, bool *out)
{
	char sub[200];
	const json_t *v = lookup(obj, path, key, sub);

	*out = false;
	if (!v)
		return 0;
	if (!json_is_boolean(v))
		return bad_type(r, sub, "a boolean", v);
	*out = json_is_true(v);
	return 0;
}

/*
 * Whether name is the family name or a resource name of a family of list
 * made before; *where gets that family's path in the file.
 */
static bool taken(const struct hami_read *r, const json_t *list,
		  const char *name, const char **where)
{
	const json_t *f;
	const char *key;
	json_t *v;
	size_t i;

	json_array_foreach(list, i, f) {
		json_object_foreach((json_t *)f, key, v) {
			if ((!strcmp(key, "name") || !strncmp(key, "resource", 8)) &&
			    json_is_string(v) &&
			    !strcmp(json_string_value(v), name)) {
				*where = json_string_value(
					json_array_get(r->where, i));
				return true;
			}
		}
	}
	return false;
}

/* Reads nvidia's own keys (path "nvidia") into the family f. */
static int read_nvidia(struct hami_read *r, const json_t *obj, json_t *f)
{
	static const struct {
		const char *key;
		int64_t max;
	} ints[] = {
		{ "defaultGPUNum", VGPU_MAX_COUNT },
		{ "defaultMemory", VGPU_MAX_MEMORY },
		{ "defaultCores", VGPU_MAX_CORES },
	};
	const char *policy;
	char text[80];
	int64_t n;
	bool b;
	size_t i;

	for (i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
		if (get_int(r, obj, "nvidia", ints[i].key, ints[i].max, &n))
			return -1;
		if (json_object_set_new(f, ints[i].key, json_integer(n)))
			return fail(r, "out of memory");
	}
	if (get_bool(r, obj, "nvidia", "overwriteEnv", &b) ||
	    get_string(r, obj, "nvidia", "gpuCorePolicy", &policy))
		return -1;
	for (i = 0; core_policies[i]; i++)
		if (!strcmp(policy, core_policies[i]))
			break;
	if (!core_policies[i])
		return fail(r, "nvidia.gpuCorePolicy: \"%s\" is not one of \"default\", \"force\", \"disable\"",
			    shown(text, policy));
	if (json_object_set_new(f, "overwriteEnv", json_boolean(b)) ||
	    json_object_set_new(f, "gpuCorePolicy", json_string(policy)))
		return fail(r, "out of memory");
	return 0;
}

/*
 * Makes the family of the section s from obj (at path), named name, and
 * appends it to list; a section without a count or a memory name makes
 * none.  nvidia_tolerations go to the nvidia section's family.
 */
static int read_family(struct hami_read *r, const struct section *s,
		       const json_t *obj, const char *path, const char *name,
		       const json_t *nvidia_tolerations, json_t *list)
{
	const char *names[VGPU_NRESOURCES], *runtime = "";
	char sub[200], text[80];
	json_t *f;
	const char *other;
	int i, j;

	if (!json_is_object(obj))
		return bad_type(r, path, "a mapping", obj);
	for (i = 0; i < VGPU_NRESOURCES; i++) {
		names[i] = "";
		if (s->roles[i] &&
		    get_string(r, obj, path, s->roles[i], &names[i]))
			return -1;
	}
	if (s->runtime && get_string(r, obj, path, "runtimeClassName", &runtime))
		return -1;
	if (!names[VGPU_COUNT][0] || !names[VGPU_MEMORY][0])
		return 0;
	if (taken(r, list, name, &other))
		return fail(r, "%s: the family name \"%s\" is also that of %s",
			    path, shown(text, name), other);
	for (i = 0; i < VGPU_NRESOURCES; i++) {
		if (!names[i][0])
			continue;
		snprintf(sub, sizeof(sub), "%s.%s", path, s->roles[i]);
		if (!vgpu_resource_name_validn(names[i], strlen(names[i])))
			return fail(r, "%s: \"%s\" is not a valid extended resource name",
				    sub, shown(text, names[i]));
		for (j = 0; j < i; j++)
			if (!strcmp(names[i], names[j]))
				return fail(r, "%s: \"%s\" is also %s.%s", sub,
					    shown(text, names[i]), path,
					    s->roles[j]);
		if (taken(r, list, names[i], &other))
			return fail(r, "%s: \"%s\" is also a resource name of %s",
				    sub, shown(text, names[i]), other);
	}
	if (runtime[0] && !vgpu_dns_subdomain_validn(runtime, strlen(runtime)))
		return fail(r, "%s.runtimeClassName: \"%s\" is not a DNS-1123 subdomain",
			    path, shown(text, runtime));
	f = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:i, s:i, s:i, s:o, s:s,"
		      " s:s, s:s, s:b}",
		      "name", name, "resourceCountName", names[VGPU_COUNT],
		      "resourceMemoryName", names[VGPU_MEMORY],
		      "resourceMemoryPercentageName",
		      names[VGPU_MEMORY_PERCENTAGE],
		      "resourceCoreName", names[VGPU_CORES],
		      "resourcePriorityName", names[VGPU_PRIORITY],
		      "defaultGPUNum", 0, "defaultMemory", 0, "defaultCores", 0,
		      "tolerations", s == &sections[0] ?
		      json_deep_copy(nvidia_tolerations) : json_array(),
		      "runtimeClassName", runtime, "gpuCorePolicy", "",
		      "activeOOMKiller", "", "overwriteEnv", 0);
	if (!f)
		return fail(r, "out of memory");
	if (json_array_append_new(list, f) ||
	    json_array_append_new(r->where, json_string(path)))
		return fail(r, "out of memory");
	if (s == &sections[0] && read_nvidia(r, obj, f))
		return -1;
	return 0;
}

/*
 * The entries of a list section (iluvatars; vnpus, a list or a mapping
 * with a list `configs`), each a family named by its commonWord, else its
 * chipName.
 */
static int read_list(struct hami_read *r, const struct section *s,
		     const json_t *v, json_t *list)
{
	const json_t *entries = v, *item;
	char path[64], name[64];
	const char *word, *chip;
	size_t i;

	if (!strcmp(s->key, "vnpus") && json_is_object(v)) {
		entries = json_object_get(v, "configs");
		snprintf(path, sizeof(path), "vnpus.configs");
		if (!entries || json_is_null(entries))
			return 0;
	} else {
		snprintf(path, sizeof(path), "%s", s->key);
	}
	if (!json_is_array(entries))
		return bad_type(r, path, "a sequence", entries);
	json_array_foreach(entries, i, item) {
		char ipath[96];

		snprintf(ipath, sizeof(ipath), "%s[%zu]", path, i);
		if (!json_is_object(item))
			return bad_type(r, ipath, "a mapping", item);
		if (get_string(r, item, ipath, "commonWord", &word) ||
		    get_string(r, item, ipath, "chipName", &chip))
			return -1;
		if (!word[0])
			word = chip;
		if (!word[0]) {
			snprintf(name, sizeof(name), "%s-%zu", s->key, i);
			word = name;
		}
		if (read_family(r, s, item, ipath, word, NULL, list))
			return -1;
	}
	return 0;
}

json_t *hami_devices(const char *path, const char *data, size_t len,
		     const json_t *nvidia_tolerations, char *err,
		     size_t errlen)
{
	struct hami_read r = { path, err, errlen, NULL };
	struct yamlio_error yerr;
	json_t *docs, *top, *list = NULL;
	size_t i;

	docs = yamlio_load(data, len, NULL, &yerr);
	if (!docs) {
		if (yerr.line)
			fail(&r, "line %d, column %d: %s", yerr.line,
			     yerr.column, yerr.text);
		else
			fail(&r, "%s", yerr.text);
		return NULL;
	}
	/* go-yaml reads the first document of a stream. */
	top = json_array_get(docs, 0);
	if (!json_is_object(top)) {
		bad_type(&r, "(top level)", "a mapping of device sections",
			 top ? top : json_null());
		goto out;
	}
	list = json_array();
	r.where = json_array();
	if (!list || !r.where) {
		fail(&r, "out of memory");
		goto out;
	}
	for (i = 0; i < sizeof(sections) / sizeof(sections[0]); i++) {
		const struct section *s = &sections[i];
		const json_t *v = json_object_get(top, s->key);
		int rc;

		if (!v || json_is_null(v))
			continue;
		rc = s->list ? read_list(&r, s, v, list) :
			       read_family(&r, s, v, s->key, s->name,
					   nvidia_tolerations, list);
		if (rc)
			goto fail;
	}
	if (!json_array_size(list)) {
		fail(&r, "no section names both a count and a memory resource, so the file gives no device family");
		goto fail;
	}
	goto out;
fail:
	json_decref(list);
	list = NULL;
out:
	json_decref(r.where);
	json_decref(docs);
	return list;
}
