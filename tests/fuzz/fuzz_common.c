/*
 * fuzz_common.c - configurations and checks shared by the fuzz targets.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "patch.h"
#include "policy.h"

void fuzz_fail(const char *what, const char *file, int line)
{
	fprintf(stderr, "invariant broken at %s:%d: %s\n", file, line, what);
	abort();
}

#define NCONFIGS 4

/* The config.h setters of the common flags, and their values. */
static const struct {
	int (*set)(struct config *cfg, const char *what, const char *value,
		   char *err, size_t errlen);
	const char *value;
} settings[NCONFIGS][3] = {
	{ { NULL, NULL } },
	{ { config_set_default_memory, "0" }, { config_set_default_cores, "30" },
	  { NULL, NULL } },
	{ { config_set_default_gpu_num, "0" },
	  { config_set_scheduler_name, "vgpu" }, { NULL, NULL } },
	{ { config_set_default_gpu_num, "2" },
	  { config_set_default_memory, "1048576" }, { NULL, NULL } },
};

const struct config *fuzz_config(unsigned selector)
{
	static struct config configs[NCONFIGS];
	static int ready[NCONFIGS];
	unsigned i = selector % NCONFIGS;
	char err[256];
	int f;

	if (ready[i])
		return &configs[i];
	FUZZ_ASSERT(config_init(&configs[i]) == 0);
	for (f = 0; settings[i][f].set; f++)
		FUZZ_ASSERT(settings[i][f].set(&configs[i], "fuzz",
					       settings[i][f].value, err,
					       sizeof(err)) == 0);
	if (i == 3) {
		/* every optional writer on */
		struct device *d = &configs[i].devices[0];

		free(d->gpu_core_policy);
		d->gpu_core_policy = strdup("force");
		free(d->active_oom_killer);
		d->active_oom_killer = strdup("true");
		free(d->runtime_class_name);
		d->runtime_class_name = strdup("nvidia");
		d->overwrite_env = 1;
		free(configs[i].node_scheduler_policy);
		configs[i].node_scheduler_policy = strdup("binpack");
		configs[i].privileged_policy = CONFIG_POLICY_WARN;
		configs[i].node_name_policy = CONFIG_POLICY_WARN;
		/* the guards remove what they find */
		configs[i].guards.annotation_policy = GUARD_POLICY_STRIP;
		configs[i].guards.env_policy = GUARD_POLICY_STRIP;
	}
	if (i == 2) {
		/* the guards warn, and one pattern matches everything */
		const char *all = "*";

		configs[i].guards.annotation_policy = GUARD_POLICY_WARN;
		configs[i].guards.env_policy = GUARD_POLICY_WARN;
		pattern_set_release(&configs[i].guards.keys);
		FUZZ_ASSERT(pattern_set_init(&configs[i].guards.keys, &all, 1) == 0);
	}
	FUZZ_ASSERT(config_check(&configs[i], err, sizeof(err)) == 0);
	ready[i] = 1;
	return &configs[i];
}

void fuzz_check_warnings(const json_t *warnings)
{
	size_t i;
	json_t *w;

	FUZZ_ASSERT(json_array_size(warnings) <= POLICY_WARNINGS_MAX + 1);
	json_array_foreach(warnings, i, w) {
		const unsigned char *s =
			(const unsigned char *)json_string_value(w);
		size_t chars = 0;

		FUZZ_ASSERT(s);
		for (; *s; s++) {
			FUZZ_ASSERT(*s >= 0x20 && *s != 0x7f);
			chars += (*s & 0xc0) != 0x80;
		}
		FUZZ_ASSERT(chars <= POLICY_WARNING_MAX_CHARS);
	}
}

static int b64_value(char c)
{
	static const char table[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const char *p = c ? strchr(table, c) : NULL;

	return p ? (int)(p - table) : -1;
}

/* Decodes padded base64; NULL when the text is not base64. */
static char *b64_decode(const char *s, size_t *len)
{
	size_t n = strlen(s), i, o = 0;
	char *out;

	if (n % 4)
		return NULL;
	out = malloc(n / 4 * 3 + 1);
	FUZZ_ASSERT(out);
	for (i = 0; i < n; i += 4) {
		int a = b64_value(s[i]), b = b64_value(s[i + 1]);
		int c = s[i + 2] == '=' ? 0 : b64_value(s[i + 2]);
		int d = s[i + 3] == '=' ? 0 : b64_value(s[i + 3]);

		if (a < 0 || b < 0 || c < 0 || d < 0) {
			free(out);
			return NULL;
		}
		out[o++] = (char)(a << 2 | b >> 4);
		if (s[i + 2] != '=')
			out[o++] = (char)(b << 4 | c >> 2);
		if (s[i + 3] != '=')
			out[o++] = (char)(c << 6 | d);
	}
	*len = o;
	return out;
}

void fuzz_apply_patch(json_t *object, const char *b64)
{
	struct patch p;
	char err[256], *text;
	size_t len;

	FUZZ_ASSERT(object && b64);
	text = b64_decode(b64, &len);
	FUZZ_ASSERT(text);
	p.ops = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
	free(text);
	FUZZ_ASSERT(json_is_array(p.ops) && json_array_size(p.ops) > 0);
	FUZZ_ASSERT(patch_apply(object, &p, err, sizeof(err)) == 0);
	patch_release(&p);
}

void fuzz_check_patch(const struct config *cfg, const json_t *object,
		      const char *b64)
{
	struct policy_decision again;
	json_t *pod = json_deep_copy(object);

	FUZZ_ASSERT(pod);
	fuzz_apply_patch(pod, b64);
	FUZZ_ASSERT(policy_decision_init(&again) == 0);
	FUZZ_ASSERT(policy_decide(cfg, pod, &again) == 0);
	if (again.code || patch_count(&again.patch)) {
		char *dump = json_dumps(again.patch.ops, 0);

		fprintf(stderr, "second decision: %d %s\n%s\n", again.code,
			again.message ? again.message : "", dump ? dump : "");
		free(dump);
		fuzz_fail("the patched pod gives no further patch", __FILE__,
			  __LINE__);
	}
	policy_decision_release(&again);
	json_decref(pod);
}
