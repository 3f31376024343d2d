/*
 * test_names.c - name validation against the cases of Kubernetes'
 * apimachinery validation tests (pkg/util/validation/validation_test.go)
 * and core helper tests (IsNativeResource, IsExtendedResourceName), plus
 * the length limits: 63 for a name part or label value, 253 for a DNS
 * subdomain, 244 for the domain of an extended resource name (so that
 * "requests." + domain stays within 253).
 */
#include "test.h"

#include "vgpu.h"

static int failures; /* counted by EXPECT() */

typedef bool (*validator)(const char *s, size_t len);

static void check_list(const char *what, validator f,
		       const char *const *list, size_t n, bool want)
{
	size_t i;

	for (i = 0; i < n; i++)
		EXPECT(f(list[i], strlen(list[i])) == want,
		       "%s(\"%s\") should be %s", what, list[i],
		       want ? "valid" : "invalid");
}

/*
 * A name built of pieces: each piece is a string repeated a number of
 * times.  Used for the long names at the limits.
 */
struct piece {
	const char *text;
	size_t times;
};

static char *build(const struct piece *p, size_t n, size_t *len)
{
	size_t total = 0, i, k, at = 0;
	char *s;

	for (i = 0; i < n; i++)
		total += strlen(p[i].text) * p[i].times;
	s = malloc(total + 1);
	assert_non_null(s);
	for (i = 0; i < n; i++)
		for (k = 0; k < p[i].times; k++) {
			memcpy(s + at, p[i].text, strlen(p[i].text));
			at += strlen(p[i].text);
		}
	s[at] = '\0';
	*len = at;
	return s;
}

struct long_case {
	struct piece piece[4];
	size_t npieces;
	size_t len; /* the length the pieces make, checked too */
	bool want;
};

static void check_long(const char *what, validator f,
		       const struct long_case *t, size_t n)
{
	size_t i, len;

	for (i = 0; i < n; i++) {
		char *s = build(t[i].piece, t[i].npieces, &len);

		EXPECT(len == t[i].len, "%s case %zu: length %zu, want %zu",
		       what, i, len, t[i].len);
		EXPECT(f(s, len) == t[i].want,
		       "%s(<%zu characters>) case %zu should be %s", what,
		       len, i, t[i].want ? "valid" : "invalid");
		free(s);
	}
}

/* ------------------------------------------------------------------------
 * DNS-1123 subdomains (TestIsDNS1123Subdomain)
 */
static void test_names__dns_subdomain(void **state)
{
	static const char *const good[] = {
		"a", "ab", "abc", "a1", "a-1", "a--1--2--b",
		"0", "01", "012", "1a", "1-a", "1--a--b--2",
		"a.a", "ab.a", "abc.a", "a1.a", "a-1.a", "a--1--2--b.a",
		"a.1", "ab.1", "abc.1", "a1.1", "a-1.1", "a--1--2--b.1",
		"0.a", "01.a", "012.a", "1a.a", "1-a.a", "1--a--b--2",
		"0.1", "01.1", "012.1", "1a.1", "1-a.1", "1--a--b--2.1",
		"a.b.c.d.e", "aa.bb.cc.dd.ee", "1.2.3.4.5", "11.22.33.44.55",
		"hami-scheduler", "default-scheduler", "nvidia.com",
		"kube-system.svc.cluster.local",
	};
	static const char *const bad[] = {
		"", "A", "ABC", "aBc", "A1", "A-1", "1-A",
		"-", "a-", "-a", "1-", "-1",
		"_", "a_", "_a", "a_b", "1_", "_1", "1_2",
		".", "a.", ".a", "a..b", "1.", ".1", "1..2",
		" ", "a ", " a", "a b", "1 ", " 1", "1 2",
		"A.a", "aB.a", "ab.A", "A1.a", "a1.A",
		"A.1", "aB.1", "A1.1", "1A.1",
		"0.A", "01.A", "012.A", "1A.a", "1a.A",
		"A.B.C.D.E", "AA.BB.CC.DD.EE", "a.B.c.d.e", "aa.bB.cc.dd.ee",
		"a@b", "a,b", "a_b", "a;b",
		"a:b", "a%b", "a?b", "a$b",
		"a-.b", "a.-b", "a/b", "a\tb", "\xc3\xa9", "a\xc3\xa9",
	};
	static const struct long_case lengths[] = {
		{ { { "a", 253 } }, 1, 253, true },
		{ { { "a", 254 } }, 1, 254, false },
		/* a label may be longer than 63 inside a subdomain */
		{ { { "a", 64 }, { ".b", 1 } }, 2, 66, true },
		{ { { "a", 63 }, { ".", 1 }, { "b", 189 } }, 3, 253, true },
		{ { { "a", 63 }, { ".", 1 }, { "b", 190 } }, 3, 254, false },
		{ { { "a.", 126 }, { "a", 1 } }, 2, 253, true },
		{ { { "a.", 127 } }, 1, 254, false },
	};

	(void)state;
	failures = 0;
	check_list("dns_subdomain", vgpu_dns_subdomain_validn, good,
		   NELEM(good), true);
	check_list("dns_subdomain", vgpu_dns_subdomain_validn, bad,
		   NELEM(bad), false);
	check_long("dns_subdomain", vgpu_dns_subdomain_validn, lengths,
		   NELEM(lengths));
	/* the length is what counts, not a NUL */
	EXPECT(vgpu_dns_subdomain_validn("abc.def", 3), "prefix \"abc\"");
	EXPECT(!vgpu_dns_subdomain_validn("abc.def", 4), "prefix \"abc.\"");
	EXPECT(!vgpu_dns_subdomain_validn("a\0b", 3), "embedded NUL");
	EXPECT(!vgpu_dns_subdomain_validn(NULL, 0), "NULL, 0");
	assert_int_equal(failures, 0);
}

/* ------------------------------------------------------------------------
 * Qualified names (TestIsQualifiedName)
 */
static void test_names__qualified_name(void **state)
{
	static const char *const good[] = {
		"simple",
		"now-with-dashes",
		"1-starts-with-num",
		"1234",
		"simple/simple",
		"now-with-dashes/simple",
		"now-with-dashes/now-with-dashes",
		"now.with.dots/simple",
		"now-with.dashes-and.dots/simple",
		"1-num.2-num/3-num",
		"1234/5678",
		"1.2.3.4/5678",
		"Uppercase_Is_OK_123",
		"example.com/Uppercase_Is_OK_123",
		"requests.storage-foo",
		"a", "A", "0", "a.b", "a_b", "a-b", "A.B_c-D",
		"hami.io/node-scheduler-policy",
		"hami.io/gpu-scheduler-policy",
	};
	static const char *const bad[] = {
		"nospecialchars%^=@",
		"cantendwithadash-",
		"-cantstartwithadash-",
		"only/one/slash",
		"Example.com/abc",
		"example_com/abc",
		"example.com/",
		"/simple",
		"", "/", "//", "a//b", "a/b/", ".a", "a.", "_a", "a_",
		"a b", "a\tb", "a/-b", "a/b-", "a./b", "-a/b", "a/b c",
		"\xc3\xa9", "Tama-nui-te-r\xc4\x81",
	};
	static const struct long_case lengths[] = {
		{ { { "a", 63 } }, 1, 63, true },
		{ { { "a", 64 } }, 1, 64, false },
		{ { { "a", 253 }, { "/", 1 }, { "b", 63 } }, 3, 317, true },
		{ { { "a", 254 }, { "/abc", 1 } }, 2, 258, false },
		{ { { "a", 253 }, { "/", 1 }, { "b", 64 } }, 3, 318, false },
		{ { { "example.com/", 1 }, { "b", 63 } }, 2, 75, true },
		{ { { "example.com/", 1 }, { "b", 64 } }, 2, 76, false },
	};

	(void)state;
	failures = 0;
	check_list("qualified_name", vgpu_qualified_name_validn, good,
		   NELEM(good), true);
	check_list("qualified_name", vgpu_qualified_name_validn, bad,
		   NELEM(bad), false);
	check_long("qualified_name", vgpu_qualified_name_validn, lengths,
		   NELEM(lengths));
	EXPECT(vgpu_qualified_name_validn("a/b/c", 3), "prefix \"a/b\"");
	EXPECT(!vgpu_qualified_name_validn("a/b\0", 4), "embedded NUL");
	EXPECT(!vgpu_qualified_name_validn(NULL, 0), "NULL, 0");
	assert_int_equal(failures, 0);
}

/* ------------------------------------------------------------------------
 * Label values (TestIsValidLabelValue)
 */
static void test_names__label_value(void **state)
{
	static const char *const good[] = {
		"simple", "now-with-dashes", "1-starts-with-num",
		"end-with-num-1", "1234", "", "a", "A_b.C-d", "binpack",
		"spread",
	};
	static const char *const bad[] = {
		"nospecialchars%^=@",
		"Tama-nui-te-r\xc4\x81.is.M\xc4\x81ori.sun",
		"\\backslashes\\are\\bad",
		"-starts-with-dash",
		"ends-with-dash-",
		".starts.with.dot",
		"ends.with.dot.",
		"a/b", "a b", " ", "_", "a_",
	};
	static const struct long_case lengths[] = {
		{ { { "a", 63 } }, 1, 63, true },
		{ { { "a", 64 } }, 1, 64, false },
		{ { { "a", 1 }, { "-", 61 }, { "z", 1 } }, 3, 63, true },
		{ { { "a", 1 }, { "-", 62 }, { "z", 1 } }, 3, 64, false },
	};

	(void)state;
	failures = 0;
	check_list("label_value", vgpu_label_value_validn, good, NELEM(good),
		   true);
	check_list("label_value", vgpu_label_value_validn, bad, NELEM(bad),
		   false);
	check_long("label_value", vgpu_label_value_validn, lengths,
		   NELEM(lengths));
	EXPECT(vgpu_label_value_validn(NULL, 0), "NULL, 0 is the empty value");
	EXPECT(!vgpu_label_value_validn("a\0", 2), "embedded NUL");
	assert_int_equal(failures, 0);
}

/* ------------------------------------------------------------------------
 * Extended resource names (IsExtendedResourceName)
 */
static void test_names__resource_name(void **state)
{
	static const char *const good[] = {
		"nvidia.com/gpu",
		"nvidia.com/gpumem",
		"nvidia.com/gpumem-percentage",
		"nvidia.com/gpucores",
		"nvidia.com/priority",
		"hami.io/vgpu-memory",
		"example.com/Uppercase_Is_OK_123",
		"a/b",
		"1.2.3.4/5678",
		"kubernetes.iox/gpu",		/* not the kubernetes.io/ text */
		"example.com/kubernetes.io",	/* likewise */
		"example.com/requests.gpu",	/* only a leading requests. */
		"foo.requests.com/gpu",
	};
	static const char *const bad[] = {
		"",
		"gpu",				/* no slash: kubernetes.io */
		"nvidia.com",
		"cpu",
		"memory",
		"kubernetes.io/gpu",
		"pod.alpha.kubernetes.io/opaque-int-resource-foo",
		"xkubernetes.io/gpu",
		"example.com/kubernetes.io/x",
		"requests.example.com/gpu",
		"requests./gpu",
		"requests.",
		"nvidia.com/",
		"/gpu",
		"/",
		"nvidia.com/gpu/x",
		"nvidia.com//gpu",
		"Nvidia.com/gpu",
		"nvidia_com/gpu",
		"nvidia..com/gpu",
		".nvidia.com/gpu",
		"nvidia.com./gpu",
		"nvidia.com/-gpu",
		"nvidia.com/gpu-",
		"nvidia.com/g pu",
		"nvidia.com/gpu ",
		" nvidia.com/gpu",
		"nvidia.com/gp\xc3\xba",
	};
	static const struct long_case lengths[] = {
		/* "requests." (9) + domain must stay within 253 */
		{ { { "a", 244 }, { "/x", 1 } }, 2, 246, true },
		{ { { "a", 245 }, { "/x", 1 } }, 2, 247, false },
		{ { { "a", 253 }, { "/x", 1 } }, 2, 255, false },
		/* the name part keeps its 63 */
		{ { { "example.com/", 1 }, { "b", 63 } }, 2, 75, true },
		{ { { "example.com/", 1 }, { "b", 64 } }, 2, 76, false },
		{ { { "a", 244 }, { "/", 1 }, { "b", 63 } }, 3, 308, true },
		{ { { "a", 244 }, { "/", 1 }, { "b", 64 } }, 3, 309, false },
		{ { { "a", 300 }, { "/b", 1 } }, 2, 302, false },
		{ { { "a", 400 }, { "/b", 1 } }, 2, 402, false },
	};

	(void)state;
	failures = 0;
	check_list("resource_name", vgpu_resource_name_validn, good,
		   NELEM(good), true);
	check_list("resource_name", vgpu_resource_name_validn, bad,
		   NELEM(bad), false);
	check_long("resource_name", vgpu_resource_name_validn, lengths,
		   NELEM(lengths));
	EXPECT(vgpu_resource_name_validn("nvidia.com/gpumem", 14),
	       "prefix \"nvidia.com/gpu\"");
	EXPECT(!vgpu_resource_name_validn("nvidia.com/gpu\0", 15),
	       "embedded NUL");
	EXPECT(!vgpu_resource_name_validn(NULL, 0), "NULL, 0");
	assert_int_equal(failures, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names__dns_subdomain),
		cmocka_unit_test(test_names__qualified_name),
		cmocka_unit_test(test_names__label_value),
		cmocka_unit_test(test_names__resource_name),
	};

	return cmocka_run_group_tests_name("names", tests, NULL, NULL);
}
