/*
 * test_certgen.c - the CA and serving certificate that `certs ensure`
 * makes (checked through GnuTLS's verifier with the host name, and loaded
 * by the server's own loader), the decision to make them again (every
 * verdict), the caBundle kept through a renewal, and the durations.
 */
#include <stdbool.h>
#include <unistd.h>

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include "test.h"

#include "certgen.h"
#include "certs.h"

static int failures;

/* The allocator, wrapped (-Wl,--wrap=malloc): fail_nth >= 0 fails the
 * call of that rank from now on, once; -1 never. */
void *__real_malloc(size_t n);
void *__wrap_malloc(size_t n);
static int fail_nth = -1;

void *__wrap_malloc(size_t n)
{
	if (fail_nth >= 0 && fail_nth-- == 0)
		return NULL;
	return __real_malloc(n);
}

#define NOW ((int64_t)1767225600) /* 2026-01-01T00:00:00Z */
#define DAY ((int64_t)86400)

static const char *const names[] = {
	"vgpu-webhook", "vgpu-webhook.vgpu-system",
	"vgpu-webhook.vgpu-system.svc",
	"vgpu-webhook.vgpu-system.svc.cluster.local",
};

static void make(struct certgen_pair *p, int64_t now, int64_t validity)
{
	char err[300] = "";

	assert_int_equal(certgen_make(names, 4, now, validity, p, err,
				      sizeof(err)), 0);
	assert_non_null(p->ca_crt);
	assert_non_null(p->tls_crt);
	assert_non_null(p->tls_key);
}

static gnutls_x509_crt_t crt_of(const char *pem)
{
	gnutls_x509_crt_t crt;
	gnutls_datum_t d = { (unsigned char *)(uintptr_t)pem,
			     (unsigned)strlen(pem) };

	assert_int_equal(gnutls_x509_crt_init(&crt), 0);
	assert_int_equal(gnutls_x509_crt_import(crt, &d, GNUTLS_X509_FMT_PEM), 0);
	return crt;
}

static enum certgen_verdict judge(const char *ca, const char *crt,
				  const char *key, const char *const *n,
				  size_t nn, int64_t now, int64_t margin)
{
	char why[300];

	return certgen_judge(ca, ca ? strlen(ca) : 0, crt, crt ? strlen(crt) : 0,
			     key, key ? strlen(key) : 0, n, nn, now, margin, why,
			     sizeof(why));
}

/* What a client of the webhook checks: the chain to the CA, each name,
 * the server purpose; and the shape of both certificates. */
static void test_certgen__make(void **state)
{
	struct certgen_pair p;
	gnutls_x509_crt_t ca, crt;
	gnutls_x509_trust_list_t tl;
	unsigned bits = 0, usage = 0, critical, status, i;
	int64_t now = (int64_t)time(NULL);

	(void)state;
	make(&p, now, 365 * DAY);
	ca = crt_of(p.ca_crt);
	crt = crt_of(p.tls_crt);
	assert_int_equal(gnutls_x509_trust_list_init(&tl, 0), 0);
	assert_int_equal(gnutls_x509_trust_list_add_cas(tl, &ca, 1, 0), 1);
	for (i = 0; i < NELEM(names); i++) {
		gnutls_typed_vdata_st data[2] = {
			{ GNUTLS_DT_DNS_HOSTNAME, (unsigned char *)(uintptr_t)names[i], 0 },
			{ GNUTLS_DT_KEY_PURPOSE_OID,
			  (unsigned char *)(uintptr_t)GNUTLS_KP_TLS_WWW_SERVER, 0 },
		};

		status = 99;
		assert_int_equal(gnutls_x509_trust_list_verify_crt2(
					 tl, &crt, 1, data, 2, 0, &status, NULL), 0);
		EXPECT(status == 0, "%s: verify status %u", names[i], status);
	}
	{
		gnutls_typed_vdata_st other = { GNUTLS_DT_DNS_HOSTNAME,
						(unsigned char *)"other.vgpu-system.svc", 0 };

		status = 0;
		assert_int_equal(gnutls_x509_trust_list_verify_crt2(
					 tl, &crt, 1, &other, 1, 0, &status, NULL), 0);
		EXPECT(status != 0, "another name verified");
	}
	EXPECT(gnutls_x509_crt_get_pk_algorithm(crt, &bits) == GNUTLS_PK_ECDSA &&
		       bits == 256, "serving key: ECDSA P-256");
	EXPECT(gnutls_x509_crt_get_pk_algorithm(ca, &bits) == GNUTLS_PK_ECDSA,
	       "CA key: ECDSA");
	EXPECT(gnutls_x509_crt_get_ca_status(ca, &critical) == 1, "CA:TRUE");
	EXPECT(gnutls_x509_crt_get_ca_status(crt, &critical) == 0, "leaf CA:FALSE");
	EXPECT(gnutls_x509_crt_get_key_usage(crt, &usage, &critical) >= 0 &&
		       usage == GNUTLS_KEY_DIGITAL_SIGNATURE,
	       "leaf key usage %#x", usage);
	EXPECT(gnutls_x509_crt_get_key_usage(ca, &usage, &critical) >= 0 &&
		       (usage & GNUTLS_KEY_KEY_CERT_SIGN),
	       "CA key usage %#x", usage);
	EXPECT(gnutls_x509_crt_get_expiration_time(crt) == (time_t)(now + 365 * DAY),
	       "notAfter");
	EXPECT(gnutls_x509_crt_get_activation_time(crt) < (time_t)now,
	       "notBefore back-dated");
	EXPECT(gnutls_x509_crt_get_signature_algorithm(crt) ==
		       GNUTLS_SIGN_ECDSA_SHA256, "ecdsa-with-SHA256");
	EXPECT(!strstr(p.tls_key, "ENCRYPTED") &&
		       strstr(p.tls_key, "-----BEGIN PRIVATE KEY-----"),
	       "PKCS#8 key");
	gnutls_x509_trust_list_deinit(tl, 1);
	gnutls_x509_crt_deinit(crt);
	certgen_pair_release(&p);
	assert_int_equal(failures, 0);
}

static void write_file(char *path, const char *text)
{
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

/* The server loads what is made, as the pods do from the Secret. */
static void test_certgen__served(void **state)
{
	struct certgen_pair p;
	struct certs c;
	struct certs_info info;
	char crt[] = "/tmp/test_certgen.crt.XXXXXX";
	char key[] = "/tmp/test_certgen.key.XXXXXX", err[300] = "";

	(void)state;
	make(&p, (int64_t)time(NULL), DAY);
	write_file(crt, p.tls_crt);
	write_file(key, p.tls_key);
	memset(&c, 0, sizeof(c));
	EXPECT(certs_init(&c, crt, key, &info, err, sizeof(err)) == 0,
	       "certs_init: %s", err);
	EXPECT(!strcmp(info.subject, "CN=vgpu-webhook"), "subject %s",
	       info.subject);
	certs_release(&c);
	unlink(crt);
	unlink(key);
	certgen_pair_release(&p);
	assert_int_equal(failures, 0);
}

/*
 * A pair made here rather than by certgen_make(): a CA and, signed by it,
 * a certificate for names with basicConstraints CA:ca and, when
 * server_auth, extended key usage serverAuth (else clientAuth).
 */
static void odd_pair(bool ca, bool server_auth, struct certgen_pair *out)
{
	gnutls_x509_privkey_t ca_key, key;
	gnutls_x509_crt_t cac, crt;
	gnutls_datum_t d;
	unsigned char serial[] = { 1, 2, 3 };
	size_t i;

	assert_int_equal(gnutls_x509_privkey_init(&ca_key), 0);
	assert_int_equal(gnutls_x509_privkey_init(&key), 0);
	assert_int_equal(gnutls_x509_privkey_generate2(ca_key, GNUTLS_PK_ECDSA,
		GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0, NULL, 0), 0);
	assert_int_equal(gnutls_x509_privkey_generate2(key, GNUTLS_PK_ECDSA,
		GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0, NULL, 0), 0);
	assert_int_equal(gnutls_x509_crt_init(&cac), 0);
	assert_int_equal(gnutls_x509_crt_init(&crt), 0);
	assert_int_equal(gnutls_x509_crt_set_version(cac, 3), 0);
	assert_int_equal(gnutls_x509_crt_set_serial(cac, serial, 3), 0);
	gnutls_x509_crt_set_activation_time(cac, (time_t)(NOW - DAY));
	gnutls_x509_crt_set_expiration_time(cac, (time_t)(NOW + 90 * DAY));
	assert_int_equal(gnutls_x509_crt_set_dn_by_oid(cac, GNUTLS_OID_X520_COMMON_NAME,
						       0, "odd-ca", 6), 0);
	assert_int_equal(gnutls_x509_crt_set_key(cac, ca_key), 0);
	assert_int_equal(gnutls_x509_crt_set_basic_constraints(cac, 1, -1), 0);
	assert_int_equal(gnutls_x509_crt_set_key_usage(cac, GNUTLS_KEY_KEY_CERT_SIGN), 0);
	assert_int_equal(gnutls_x509_crt_sign2(cac, cac, ca_key, GNUTLS_DIG_SHA256, 0), 0);
	assert_int_equal(gnutls_x509_crt_set_version(crt, 3), 0);
	assert_int_equal(gnutls_x509_crt_set_serial(crt, serial, 3), 0);
	gnutls_x509_crt_set_activation_time(crt, (time_t)(NOW - DAY));
	gnutls_x509_crt_set_expiration_time(crt, (time_t)(NOW + 90 * DAY));
	assert_int_equal(gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME,
						       0, names[0], (unsigned)strlen(names[0])), 0);
	assert_int_equal(gnutls_x509_crt_set_key(crt, key), 0);
	assert_int_equal(gnutls_x509_crt_set_basic_constraints(crt, ca, -1), 0);
	assert_int_equal(gnutls_x509_crt_set_key_purpose_oid(crt,
		server_auth ? GNUTLS_KP_TLS_WWW_SERVER : GNUTLS_KP_TLS_WWW_CLIENT, 0), 0);
	for (i = 0; i < NELEM(names); i++)
		assert_int_equal(gnutls_x509_crt_set_subject_alt_name(crt,
			GNUTLS_SAN_DNSNAME, names[i], (unsigned)strlen(names[i]),
			GNUTLS_FSAN_APPEND), 0);
	assert_int_equal(gnutls_x509_crt_sign2(crt, cac, ca_key, GNUTLS_DIG_SHA256, 0), 0);
	assert_int_equal(gnutls_x509_crt_export2(cac, GNUTLS_X509_FMT_PEM, &d), 0);
	out->ca_crt = strndup((const char *)d.data, d.size);
	gnutls_free(d.data);
	assert_int_equal(gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, &d), 0);
	out->tls_crt = strndup((const char *)d.data, d.size);
	gnutls_free(d.data);
	assert_int_equal(gnutls_x509_privkey_export2_pkcs8(key, GNUTLS_X509_FMT_PEM,
		NULL, GNUTLS_PKCS_PLAIN, &d), 0);
	out->tls_key = strndup((const char *)d.data, d.size);
	gnutls_free(d.data);
	gnutls_x509_crt_deinit(cac);
	gnutls_x509_crt_deinit(crt);
	gnutls_x509_privkey_deinit(ca_key);
	gnutls_x509_privkey_deinit(key);
}

/* A certificate that the CA signed for the names is kept only when it is
 * a serving leaf: CA:FALSE and serverAuth. */
static void test_certgen__purpose(void **state)
{
	struct certgen_pair ok = { NULL, NULL, NULL }, ca = { NULL, NULL, NULL };
	struct certgen_pair client = { NULL, NULL, NULL };
	char why[300] = "";

	(void)state;
	odd_pair(false, true, &ok);
	odd_pair(true, true, &ca);
	odd_pair(false, false, &client);
	EXPECT(judge(ok.ca_crt, ok.tls_crt, ok.tls_key, names, 4, NOW, 0) ==
		       CERTGEN_VALID, "the control: CA:FALSE, serverAuth");
	EXPECT(judge(ca.ca_crt, ca.tls_crt, ca.tls_key, names, 4, NOW, 0) ==
		       CERTGEN_PURPOSE, "a leaf that is a CA");
	assert_int_equal(certgen_judge(client.ca_crt, strlen(client.ca_crt),
				       client.tls_crt, strlen(client.tls_crt),
				       client.tls_key, strlen(client.tls_key),
				       names, 4, NOW, 0, why, sizeof(why)),
			 CERTGEN_PURPOSE);
	EXPECT(!strcmp(why, "tls.crt is not a serving certificate (CA:FALSE and "
			    "extended key usage serverAuth)"), "%s", why);
	certgen_pair_release(&ok);
	certgen_pair_release(&ca);
	certgen_pair_release(&client);
	assert_int_equal(failures, 0);
}

/* Each verdict, and the message that goes with it. */
static void test_certgen__judge(void **state)
{
	struct certgen_pair p, q;
	const char *other[] = { "other", "other.vgpu-system.svc" };
	char why[300];

	(void)state;
	make(&p, NOW, 90 * DAY);
	make(&q, NOW, 90 * DAY);
	EXPECT(judge(p.ca_crt, p.tls_crt, p.tls_key, names, 4, NOW, 30 * DAY) ==
		       CERTGEN_VALID, "fresh pair");
	assert_int_equal(certgen_judge(p.ca_crt, strlen(p.ca_crt), p.tls_crt,
				       strlen(p.tls_crt), p.tls_key,
				       strlen(p.tls_key), names, 4, NOW, 30 * DAY,
				       why, sizeof(why)), CERTGEN_VALID);
	EXPECT(!strcmp(why, "valid until 2026-04-01T00:00:00Z"), "%s", why);
	/* A subset of the names is valid, other names are not. */
	EXPECT(judge(p.ca_crt, p.tls_crt, p.tls_key, names + 2, 1, NOW, 0) ==
		       CERTGEN_VALID, "one name");
	EXPECT(judge(p.ca_crt, p.tls_crt, p.tls_key, other, 2, NOW, 0) ==
		       CERTGEN_NAMES, "other names");
	/* Renewal: 60 days left with a margin of 60 days or more, 0 left. */
	EXPECT(judge(p.ca_crt, p.tls_crt, p.tls_key, names, 4, NOW + 30 * DAY,
		     59 * DAY) == CERTGEN_VALID, "60 days left, margin 59");
	EXPECT(judge(p.ca_crt, p.tls_crt, p.tls_key, names, 4, NOW + 30 * DAY,
		     60 * DAY) == CERTGEN_EXPIRING, "60 days left, margin 60");
	EXPECT(judge(p.ca_crt, p.tls_crt, p.tls_key, names, 4, NOW + 91 * DAY,
		     0) == CERTGEN_EXPIRING, "expired");
	assert_int_equal(certgen_judge(p.ca_crt, strlen(p.ca_crt), p.tls_crt,
				       strlen(p.tls_crt), p.tls_key,
				       strlen(p.tls_key), names, 4, NOW,
				       90 * DAY, why, sizeof(why)),
			 CERTGEN_EXPIRING);
	EXPECT(!strcmp(why, "ca.crt: expires at 2026-04-01T00:00:00Z, within "
			    "the renewal margin"), "%s", why);
	/* Back-dated one hour, not more. */
	EXPECT(judge(p.ca_crt, p.tls_crt, p.tls_key, names, 4, NOW - 3599, 0) ==
		       CERTGEN_VALID, "within the back-dating");
	EXPECT(judge(p.ca_crt, p.tls_crt, p.tls_key, names, 4, NOW - 3601, 0) ==
		       CERTGEN_NOT_YET, "before notBefore");
	/* Mixed pairs. */
	EXPECT(judge(p.ca_crt, p.tls_crt, q.tls_key, names, 4, NOW, 0) ==
		       CERTGEN_KEY, "another key");
	EXPECT(judge(q.ca_crt, p.tls_crt, p.tls_key, names, 4, NOW, 0) ==
		       CERTGEN_CHAIN, "another CA");
	EXPECT(judge(p.tls_crt, p.tls_crt, p.tls_key, names, 4, NOW, 0) ==
		       CERTGEN_CHAIN, "the leaf as its own CA");
	/* Missing or broken texts. */
	EXPECT(judge(NULL, p.tls_crt, p.tls_key, names, 4, NOW, 0) ==
		       CERTGEN_UNREADABLE, "no ca.crt");
	EXPECT(judge(p.ca_crt, NULL, p.tls_key, names, 4, NOW, 0) ==
		       CERTGEN_UNREADABLE, "no tls.crt");
	EXPECT(judge(p.ca_crt, p.tls_crt, "junk", names, 4, NOW, 0) ==
		       CERTGEN_UNREADABLE, "junk tls.key");
	EXPECT(judge(p.ca_crt, p.tls_key, p.tls_key, names, 4, NOW, 0) ==
		       CERTGEN_UNREADABLE, "a key as tls.crt");
	assert_int_equal(certgen_judge(p.ca_crt, strlen(p.ca_crt), "x", 1,
				       p.tls_key, strlen(p.tls_key), names, 4,
				       NOW, 0, why, sizeof(why)),
			 CERTGEN_UNREADABLE);
	EXPECT(!strcmp(why, "tls.crt: not PEM"), "%s", why);
	certgen_pair_release(&p);
	certgen_pair_release(&q);
	assert_int_equal(failures, 0);
}

/* The caBundle: left alone when it starts with the CA, else the CA and
 * the previous one while that is valid. */
static void test_certgen__bundle(void **state)
{
	struct certgen_pair p, q, old;
	char *b, both[8192];
	int oom;

	(void)state;
	make(&p, NOW, 90 * DAY);
	make(&q, NOW, 90 * DAY);
	make(&old, NOW - 80 * DAY, 90 * DAY); /* expires at NOW + 10 days */
	b = certgen_bundle(p.ca_crt, "", 0, NOW, &oom);
	EXPECT(b && !strcmp(b, p.ca_crt) && !oom, "empty: the CA alone");
	free(b);
	b = certgen_bundle(p.ca_crt, "not pem", 7, NOW, &oom);
	EXPECT(b && !strcmp(b, p.ca_crt), "junk: the CA alone");
	free(b);
	EXPECT(!certgen_bundle(p.ca_crt, p.ca_crt, strlen(p.ca_crt), NOW, &oom),
	       "the CA: nothing to do");
	snprintf(both, sizeof(both), "%s%s", p.ca_crt, q.ca_crt);
	EXPECT(!certgen_bundle(p.ca_crt, both, strlen(both), NOW, &oom),
	       "the CA first: nothing to do");
	b = certgen_bundle(p.ca_crt, both + strlen(p.ca_crt), strlen(q.ca_crt),
			   NOW, &oom);
	EXPECT(b && !strcmp(b, both), "renewed: the new CA, then the old");
	free(b);
	b = certgen_bundle(p.ca_crt, old.ca_crt, strlen(old.ca_crt), NOW, &oom);
	EXPECT(b && !strncmp(b, p.ca_crt, strlen(p.ca_crt)) &&
		       !strcmp(b + strlen(p.ca_crt), old.ca_crt),
	       "an old CA valid 10 more days is kept");
	free(b);
	b = certgen_bundle(p.ca_crt, old.ca_crt, strlen(old.ca_crt),
			   NOW + 11 * DAY, &oom);
	EXPECT(b && !strcmp(b, p.ca_crt), "an expired old CA is dropped");
	free(b);
	/* Out of memory while the old CA is copied: nothing is returned
	 * (a bundle without the old CA would make the pods untrusted). */
	fail_nth = 0;
	oom = 0;
	b = certgen_bundle(p.ca_crt, q.ca_crt, strlen(q.ca_crt), NOW, &oom);
	EXPECT(!b && oom, "out of memory: NULL and *oom (%p, %d)", (void *)b, oom);
	free(b);
	fail_nth = 1;
	oom = 0;
	b = certgen_bundle(p.ca_crt, q.ca_crt, strlen(q.ca_crt), NOW, &oom);
	EXPECT(!b && oom, "out of memory for the bundle: NULL and *oom");
	free(b);
	fail_nth = -1;
	certgen_pair_release(&p);
	certgen_pair_release(&q);
	certgen_pair_release(&old);
	assert_int_equal(failures, 0);
}

static void test_certgen__duration(void **state)
{
	static const struct {
		const char *in;
		int rc;
		int64_t seconds;
	} rows[] = {
		{ "1s", 0, 1 },
		{ "90m", 0, 5400 },
		{ "720h", 0, 2592000 },
		{ "30d", 0, 2592000 },
		{ "0030d", 0, 2592000 },
		{ "36500d", 0, 36500 * DAY },
		{ "36501d", -1, 0 },
		{ "3153600000s", 0, 3153600000 },
		{ "3153600001s", -1, 0 },
		{ "99999999999999999999999h", -1, 0 },
		{ "0h", -1, 0 },
		{ "", -1, 0 },
		{ "h", -1, 0 },
		{ "10", -1, 0 },
		{ "10x", -1, 0 },
		{ "10H", -1, 0 },
		{ "-1h", -1, 0 },
		{ "+1h", -1, 0 },
		{ " 1h", -1, 0 },
		{ "1h30m", -1, 0 },
		{ "1.5h", -1, 0 },
	};
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(rows); i++) {
		int64_t s = -7;
		int rc = certgen_parse_duration(rows[i].in, &s);

		EXPECT(rc == rows[i].rc, "\"%s\": rc %d", rows[i].in, rc);
		EXPECT(rc || s == rows[i].seconds, "\"%s\": %lld", rows[i].in,
		       (long long)s);
		EXPECT(!rc || s == -7, "\"%s\": written on failure", rows[i].in);
	}
	assert_int_equal(failures, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_certgen__make),
		cmocka_unit_test(test_certgen__served),
		cmocka_unit_test(test_certgen__judge),
		cmocka_unit_test(test_certgen__purpose),
		cmocka_unit_test(test_certgen__bundle),
		cmocka_unit_test(test_certgen__duration),
	};

	return cmocka_run_group_tests_name("certgen", tests, NULL, NULL);
}
