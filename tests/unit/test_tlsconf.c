/*
 * test_tlsconf.c - Kubernetes' TLS flags as GnuTLS priority strings: the
 * default, each accepted list, and every refusal naming its flag and value.
 * What GnuTLS then serves is asked of GnuTLS itself.
 */
#include <stdbool.h>

#include <gnutls/gnutls.h>

#include "test.h"

#include "tlsconf.h"

static int failures;

/*
 * The IANA numbers of the suites GnuTLS serves for prio, TLS 1.2 ones
 * in tls12[] and TLS 1.3 ones in tls13[] (each ends with 0).
 */
static void served(const char *prio, unsigned tls12[16], unsigned tls13[8])
{
	gnutls_priority_t p;
	size_t n12 = 0, n13 = 0;
	unsigned i, idx;

	assert_int_equal(gnutls_priority_init(&p, prio, NULL), 0);
	for (i = 0;; i++) {
		unsigned char cs[2];
		gnutls_protocol_t min;
		int rc = gnutls_priority_get_cipher_suite_index(p, i, &idx);

		if (rc == GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE)
			break;
		if (rc < 0 ||
		    !gnutls_cipher_suite_info(idx, cs, NULL, NULL, NULL, &min))
			continue;
		if (min == GNUTLS_TLS1_3) {
			assert_true(n13 < 7);
			tls13[n13++] = (unsigned)cs[0] << 8 | cs[1];
		} else {
			assert_true(n12 < 15);
			tls12[n12++] = (unsigned)cs[0] << 8 | cs[1];
		}
	}
	tls12[n12] = tls13[n13] = 0;
	gnutls_priority_deinit(p);
}

/* Whether the 0-terminated list holds exactly the ids of want. */
static bool same_ids(const unsigned *got, const unsigned *want)
{
	size_t i, j, n = 0, m = 0;

	for (; got[n]; n++)
		;
	for (; want[m]; m++)
		;
	if (n != m)
		return false;
	for (i = 0; i < m; i++) {
		for (j = 0; j < n && got[j] != want[i]; j++)
			;
		if (j == n)
			return false;
	}
	return true;
}

static const unsigned tls13_all[] = { 0x1301, 0x1302, 0x1303, 0 };

static void test_tlsconf__default(void **state)
{
	static const unsigned want[] = { 0xc02b, 0xc02f, 0xc02c, 0xc030,
					 0xcca9, 0xcca8, 0 };
	char prio[TLSCONF_PRIORITY_MAX], err[300];
	unsigned t12[16], t13[8];

	(void)state;
	assert_int_equal(tlsconf_priority(NULL, NULL, prio, err, sizeof(err)),
			 0);
	/* No TLS 1.0 or 1.1; the key exchanges are ECDHE only. */
	assert_non_null(strstr(prio, "-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:"));
	assert_non_null(strstr(prio, "-KX-ALL:+ECDHE-ECDSA:+ECDHE-RSA:"));
	served(prio, t12, t13);
	assert_true(same_ids(t12, want));
	assert_true(same_ids(t13, tls13_all));
	/* The same when given as VersionTLS12 and "". */
	{
		char again[TLSCONF_PRIORITY_MAX];

		assert_int_equal(tlsconf_priority("VersionTLS12", "", again, err,
						  sizeof(err)), 0);
		assert_string_equal(again, prio);
	}
}

static void test_tlsconf__lists(void **state)
{
	static const struct {
		const char *min, *list;
		unsigned tls12[8], tls13[4];
	} rows[] = {
		/* One key type, AES-256-GCM only: TLS 1.3 follows. */
		{ NULL, "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
		  { 0xc02c }, { 0x1302 } },
		/* Go's older ChaCha20 spelling, spaces around names. */
		{ NULL, " TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305 , "
			"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
		  { 0xcca8, 0xc02f }, { 0x1303, 0x1301 } },
		/* CBC with SHA-1 (Go calls it secure) next to an AEAD one. */
		{ NULL, "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,"
			"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
		  { 0xc02f, 0xc013 }, { 0x1301 } },
		/* TLS 1.3 names are taken and change nothing. */
		{ NULL, "TLS_AES_128_GCM_SHA256,"
			"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
		  { 0xc02b }, { 0x1301 } },
		/* VersionTLS13: the list is checked, TLS 1.3 keeps its three. */
		{ "VersionTLS13", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
		  { 0 }, { 0x1301, 0x1302, 0x1303 } },
		{ "VersionTLS13", "TLS_AES_256_GCM_SHA384",
		  { 0 }, { 0x1301, 0x1302, 0x1303 } },
	};
	char prio[TLSCONF_PRIORITY_MAX], err[300];
	unsigned t12[16], t13[8];
	size_t i;

	(void)state;
	failures = 0; /* counted by EXPECT() in this test only */
	for (i = 0; i < NELEM(rows); i++) {
		if (tlsconf_priority(rows[i].min, rows[i].list, prio, err,
				     sizeof(err))) {
			EXPECT(0, "row %zu refused: %s", i, err);
			continue;
		}
		served(prio, t12, t13);
		EXPECT(same_ids(t12, rows[i].tls12),
		       "row %zu: other TLS 1.2 suites for %s", i, prio);
		EXPECT(same_ids(t13, rows[i].tls13),
		       "row %zu: other TLS 1.3 suites for %s", i, prio);
	}
	assert_int_equal(failures, 0);
}

static void test_tlsconf__refused(void **state)
{
	static const struct {
		const char *min, *list, *want;
	} rows[] = {
		{ "VersionTLS10", NULL, "--tls-min-version: \"VersionTLS10\": "
		  "refused, TLS 1.0 and 1.1 are insecure" },
		{ "VersionTLS11", NULL, "--tls-min-version: \"VersionTLS11\": "
		  "refused" },
		{ "TLS12", NULL, "--tls-min-version: \"TLS12\": unknown; "
		  "expected VersionTLS12 or VersionTLS13" },
		{ "", NULL, "--tls-min-version: \"\": unknown" },
		{ NULL, "TLS_RSA_WITH_AES_128_GCM_SHA256",
		  "--tls-cipher-suites: \"TLS_RSA_WITH_AES_128_GCM_SHA256\": "
		  "refused, insecure (static RSA key exchange, without forward "
		  "secrecy)" },
		{ NULL, "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,"
			"TLS_RSA_WITH_AES_256_CBC_SHA",
		  "\"TLS_RSA_WITH_AES_256_CBC_SHA\": refused, insecure" },
		{ NULL, "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA", "3DES" },
		{ NULL, "TLS_ECDHE_ECDSA_WITH_RC4_128_SHA", "RC4" },
		{ NULL, "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256",
		  "CBC with SHA-256" },
		/* Checked with VersionTLS13 too. */
		{ "VersionTLS13", "AES128-GCM-SHA256",
		  "--tls-cipher-suites: \"AES128-GCM-SHA256\": unknown cipher "
		  "suite" },
		{ NULL, "tls_ecdhe_rsa_with_aes_128_gcm_sha256", "unknown" },
		{ NULL, "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,",
		  "--tls-cipher-suites: \"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,\": "
		  "an empty name" },
		{ NULL, ",", "an empty name" },
		/* GnuTLS would serve ECDHE_RSA AES-128-GCM, not named. */
		{ NULL, "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,"
			"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
		  "GnuTLS would also serve TLS_ECDHE_" },
		{ NULL, "TLS_AES_128_GCM_SHA256", "names no TLS 1.2 suite, and "
		  "--tls-min-version is VersionTLS12" },
		{ NULL, "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
		  "names no AES-GCM or ChaCha20-Poly1305 suite" },
	};
	char prio[TLSCONF_PRIORITY_MAX], err[300];
	size_t i;

	(void)state;
	failures = 0; /* counted by EXPECT() in this test only */
	for (i = 0; i < NELEM(rows); i++) {
		err[0] = '\0';
		EXPECT(tlsconf_priority(rows[i].min, rows[i].list, prio, err,
					sizeof(err)) == -1,
		       "row %zu taken: %s", i, prio);
		EXPECT(strstr(err, rows[i].want), "row %zu: \"%s\" lacks \"%s\"",
		       i, err, rows[i].want);
	}
	assert_int_equal(failures, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tlsconf__default),
		cmocka_unit_test(test_tlsconf__lists),
		cmocka_unit_test(test_tlsconf__refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
