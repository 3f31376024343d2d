/*
 * test_nswarn.c - the warning for objects without a namespace where a
 * namespace profile could apply (nswarn.h).
 */
#include "test.h"

#include "buf.h"
#include "config.h"
#include "nswarn.h"

/* A config with the profiles of the JSON text (NULL: none). */
static void make_config(struct config *cfg, const char *text)
{
	struct config_source src = { text ? "c.json" : NULL, NULL, false, NULL, 0 };
	struct config_bytes file = { text, text ? strlen(text) : 0 },
			    none = { NULL, 0 };
	char err[512];

	if (config_build(cfg, &src, &file, &none, err, sizeof(err)))
		fail_msg("%s", err);
}

/* The warnings for the manifests text; a malloc'd string. */
static char *warnings(const struct config *cfg, const char *ns,
		      const char *text)
{
	struct buf msgs = BUF_INIT;
	size_t len;
	char *s;

	nswarn_manifests(cfg, ns, text, strlen(text), &msgs);
	assert_false(buf_failed(&msgs));
	buf_add(&msgs, "");
	s = buf_detach(&msgs, &len);
	assert_non_null(s);
	return s;
}

#define NS_PROFILES                                                      \
	"{\"profiles\": [{\"name\": \"ml-team\", \"namespaces\": [\"ml\"]}," \
	" {\"name\": \"labels\", \"podLabels\": {\"tier\": \"gold\"}},"     \
	" {\"name\": \"research\", \"namespaces\": [\"r-*\"]}]}"

static const char stream[] =
	"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: trainer}\n"
	"spec: {template: {spec: {containers: [{name: c, image: i}]}}}\n"
	"---\n"
	"apiVersion: v1\nkind: Pod\nmetadata: {name: placed, namespace: ml}\n"
	"spec: {containers: [{name: c, image: i}]}\n"
	"---\n"
	"apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\n"
	"metadata: {name: reader}\nrules: []\n"
	"---\n"
	"apiVersion: v1\nkind: List\nitems:\n"
	"  - {apiVersion: v1, kind: Pod, metadata: {name: \"in\\nlist\"},"
	" spec: {containers: []}}\n"
	"---\n";

static void test_nswarn__objects_without_namespace(void **state)
{
	struct config cfg;
	char *w;

	(void)state;
	make_config(&cfg, NS_PROFILES);
	w = warnings(&cfg, NULL, stream);
	assert_string_equal(w,
		"warning: Deployment trainer: no namespace (neither "
		"metadata.namespace nor --namespace): decided as in namespace "
		"\"default\"; give --namespace (helm: --post-renderer-args "
		"--namespace=NS) for the profiles that select namespaces "
		"(ml-team, research)\n"
		"warning: Pod inlist: no namespace (neither "
		"metadata.namespace nor --namespace): decided as in namespace "
		"\"default\"; give --namespace (helm: --post-renderer-args "
		"--namespace=NS) for the profiles that select namespaces "
		"(ml-team, research)\n");
	free(w);
	/* --namespace names it. */
	w = warnings(&cfg, "ml", stream);
	assert_string_equal(w, "");
	free(w);
	/* Input that does not read: nothing (the defaulter says why). */
	w = warnings(&cfg, NULL, "a: [\n");
	assert_string_equal(w, "");
	free(w);
	config_release(&cfg);
}

static void test_nswarn__no_namespace_profile(void **state)
{
	struct config cfg;
	char *w;

	(void)state;
	make_config(&cfg, NULL);
	w = warnings(&cfg, NULL, stream);
	assert_string_equal(w, "");
	free(w);
	config_release(&cfg);
	make_config(&cfg, "{\"profiles\": [{\"name\": \"l\", \"podLabels\": {\"a\": \"b\"}}]}");
	w = warnings(&cfg, NULL, stream);
	assert_string_equal(w, "");
	free(w);
	config_release(&cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nswarn__objects_without_namespace),
		cmocka_unit_test(test_nswarn__no_namespace_profile),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
