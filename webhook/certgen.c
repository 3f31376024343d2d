/*
 * certgen.c - the CA and serving certificate of `certs ensure` (see
 * certgen.h), with GnuTLS, which the binary links for its handshakes
 * anyway.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include "certgen.h"
#include "text.h"

/* Clocks of the nodes and of the API server disagree a little. */
#define BACKDATE 3600
/* 100 years, the longest duration taken. */
#define DURATION_MAX ((int64_t)100 * 365 * 86400)

void certgen_pair_release(struct certgen_pair *p)
{
	if (!p)
		return;
	free(p->ca_crt);
	free(p->tls_crt);
	if (p->tls_key)
		gnutls_memset(p->tls_key, 0, strlen(p->tls_key));
	free(p->tls_key);
	memset(p, 0, sizeof(*p));
}

/* A malloc'd NUL-terminated copy of a GnuTLS datum, which is wiped (it
 * may hold a key) and freed. */
static char *take_datum(gnutls_datum_t *d)
{
	char *s = malloc((size_t)d->size + 1);

	if (s) {
		memcpy(s, d->data, d->size);
		s[d->size] = '\0';
	}
	gnutls_memset(d->data, 0, d->size);
	gnutls_free(d->data);
	d->data = NULL;
	return s;
}

/*
 * Sets what a CA and a serving certificate share: version 3, a random
 * positive serial, the validity, the CN, the public key of key and its
 * subjectKeyIdentifier.  Returns a GnuTLS error code (< 0) or 0.
 */
static int set_common(gnutls_x509_crt_t crt, gnutls_x509_privkey_t key,
		      const char *cn, int64_t now, int64_t validity)
{
	unsigned char serial[16], id[64];
	size_t idlen = sizeof(id);
	int rc;

	rc = gnutls_rnd(GNUTLS_RND_NONCE, serial, sizeof(serial));
	serial[0] = (unsigned char)((serial[0] & 0x7f) | 0x40);
	if (rc >= 0)
		rc = gnutls_x509_crt_set_version(crt, 3);
	if (rc >= 0)
		rc = gnutls_x509_crt_set_serial(crt, serial, sizeof(serial));
	if (rc >= 0)
		rc = gnutls_x509_crt_set_activation_time(crt,
							 (time_t)(now - BACKDATE));
	if (rc >= 0)
		rc = gnutls_x509_crt_set_expiration_time(crt,
							 (time_t)(now + validity));
	if (rc >= 0)
		rc = gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME,
						   0, cn, (unsigned)strlen(cn));
	if (rc >= 0)
		rc = gnutls_x509_crt_set_key(crt, key);
	if (rc >= 0)
		rc = gnutls_x509_crt_get_key_id(crt, 0, id, &idlen);
	if (rc >= 0)
		rc = gnutls_x509_crt_set_subject_key_id(crt, id, idlen);
	return rc < 0 ? rc : 0;
}

static int new_key(gnutls_x509_privkey_t *key)
{
	int rc = gnutls_x509_privkey_init(key);

	if (rc < 0)
		return rc;
	return gnutls_x509_privkey_generate2(
		*key, GNUTLS_PK_ECDSA,
		GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0, NULL, 0);
}

int certgen_make(const char *const *names, size_t nnames, int64_t now,
		 int64_t validity, struct certgen_pair *out, char *err,
		 size_t errlen)
{
	gnutls_x509_privkey_t ca_key = NULL, key = NULL;
	gnutls_x509_crt_t ca = NULL, crt = NULL;
	gnutls_datum_t d = { NULL, 0 };
	struct certgen_pair p = { NULL, NULL, NULL };
	unsigned char id[64];
	size_t i, idlen = sizeof(id);
	char cn[300];
	const char *step = "key";
	int rc;

	if (!nnames || nnames > CERTGEN_NAMES_MAX || validity <= 0) {
		snprintf(err, errlen, "between 1 and %d names and a validity are needed",
			 CERTGEN_NAMES_MAX);
		return -1;
	}
	snprintf(cn, sizeof(cn), "%.200s-ca", names[0]);
	rc = new_key(&ca_key);
	if (rc >= 0)
		rc = new_key(&key);
	if (rc < 0)
		goto out;
	step = "ca certificate";
	rc = gnutls_x509_crt_init(&ca);
	if (rc >= 0)
		rc = set_common(ca, ca_key, cn, now, validity);
	if (rc >= 0)
		rc = gnutls_x509_crt_set_basic_constraints(ca, 1, 0);
	if (rc >= 0)
		rc = gnutls_x509_crt_set_key_usage(
			ca, GNUTLS_KEY_KEY_CERT_SIGN | GNUTLS_KEY_CRL_SIGN |
				    GNUTLS_KEY_DIGITAL_SIGNATURE);
	if (rc >= 0)
		rc = gnutls_x509_crt_sign2(ca, ca, ca_key, GNUTLS_DIG_SHA256, 0);
	if (rc < 0)
		goto out;
	step = "serving certificate";
	rc = gnutls_x509_crt_init(&crt);
	if (rc >= 0)
		rc = set_common(crt, key, names[0], now, validity);
	if (rc >= 0)
		rc = gnutls_x509_crt_set_basic_constraints(crt, 0, -1);
	if (rc >= 0)
		rc = gnutls_x509_crt_set_key_usage(crt,
						   GNUTLS_KEY_DIGITAL_SIGNATURE);
	if (rc >= 0)
		rc = gnutls_x509_crt_set_key_purpose_oid(crt,
							 GNUTLS_KP_TLS_WWW_SERVER,
							 0);
	for (i = 0; rc >= 0 && i < nnames; i++)
		rc = gnutls_x509_crt_set_subject_alt_name(
			crt, GNUTLS_SAN_DNSNAME, names[i],
			(unsigned)strlen(names[i]), GNUTLS_FSAN_APPEND);
	if (rc >= 0)
		rc = gnutls_x509_crt_get_subject_key_id(ca, id, &idlen, NULL);
	if (rc >= 0)
		rc = gnutls_x509_crt_set_authority_key_id(crt, id, idlen);
	if (rc >= 0)
		rc = gnutls_x509_crt_sign2(crt, ca, ca_key, GNUTLS_DIG_SHA256, 0);
	if (rc < 0)
		goto out;
	step = "pem";
	rc = gnutls_x509_crt_export2(ca, GNUTLS_X509_FMT_PEM, &d);
	if (rc >= 0 && !(p.ca_crt = take_datum(&d)))
		rc = GNUTLS_E_MEMORY_ERROR;
	if (rc >= 0)
		rc = gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, &d);
	if (rc >= 0 && !(p.tls_crt = take_datum(&d)))
		rc = GNUTLS_E_MEMORY_ERROR;
	if (rc >= 0)
		rc = gnutls_x509_privkey_export2_pkcs8(key, GNUTLS_X509_FMT_PEM,
						       NULL, GNUTLS_PKCS_PLAIN,
						       &d);
	if (rc >= 0 && !(p.tls_key = take_datum(&d)))
		rc = GNUTLS_E_MEMORY_ERROR;
out:
	gnutls_x509_crt_deinit(ca);
	gnutls_x509_crt_deinit(crt);
	gnutls_x509_privkey_deinit(ca_key);
	gnutls_x509_privkey_deinit(key);
	if (rc < 0) {
		certgen_pair_release(&p);
		snprintf(err, errlen, "making the %s: %s", step,
			 gnutls_strerror(rc));
		return -1;
	}
	*out = p;
	return 0;
}

/* The first certificate of a PEM text, or NULL. */
static gnutls_x509_crt_t import_crt(const char *pem, size_t len)
{
	gnutls_x509_crt_t crt;
	gnutls_datum_t d;

	if (!pem || !len || len > UINT32_MAX || gnutls_x509_crt_init(&crt) < 0)
		return NULL;
	d.data = (unsigned char *)(uintptr_t)pem;
	d.size = (unsigned)len;
	if (gnutls_x509_crt_import(crt, &d, GNUTLS_X509_FMT_PEM) < 0) {
		gnutls_x509_crt_deinit(crt);
		return NULL;
	}
	return crt;
}

static gnutls_x509_privkey_t import_key(const char *pem, size_t len)
{
	gnutls_x509_privkey_t key;
	gnutls_datum_t d;

	if (!pem || !len || len > UINT32_MAX ||
	    gnutls_x509_privkey_init(&key) < 0)
		return NULL;
	d.data = (unsigned char *)(uintptr_t)pem;
	d.size = (unsigned)len;
	if (gnutls_x509_privkey_import2(key, &d, GNUTLS_X509_FMT_PEM, NULL,
					0) < 0) {
		gnutls_x509_privkey_deinit(key);
		return NULL;
	}
	return key;
}

/* "2031-05-01T10:00:00Z" */
static void utc(int64_t t, char out[32])
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (!gmtime_r(&tt, &tm) ||
	    !strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(out, 32, "%lld", (long long)t);
}

/*
 * The time verdict of one certificate (what names it in why): not yet
 * valid, expiring within renew_before, or valid (*not_after set).
 */
static enum certgen_verdict judge_times(gnutls_x509_crt_t crt, const char *what,
					int64_t now, int64_t renew_before,
					int64_t *not_after, char *why,
					size_t whylen)
{
	int64_t starts = (int64_t)gnutls_x509_crt_get_activation_time(crt);
	int64_t ends = (int64_t)gnutls_x509_crt_get_expiration_time(crt);
	char when[32];

	if (starts == -1 || ends == -1) {
		snprintf(why, whylen, "%s: unreadable validity", what);
		return CERTGEN_UNREADABLE;
	}
	if (starts > now) {
		utc(starts, when);
		snprintf(why, whylen, "%s: not valid before %s", what, when);
		return CERTGEN_NOT_YET;
	}
	*not_after = ends;
	if (ends - now <= renew_before) {
		utc(ends, when);
		snprintf(why, whylen, "%s: expires at %s, within the renewal margin",
			 what, when);
		return CERTGEN_EXPIRING;
	}
	return CERTGEN_VALID;
}

/* Whether the key is the one of crt: the same key ID. */
static bool key_of(gnutls_x509_privkey_t key, gnutls_x509_crt_t crt)
{
	unsigned char a[64], b[64];
	size_t alen = sizeof(a), blen = sizeof(b);

	return gnutls_x509_privkey_get_key_id(key, 0, a, &alen) >= 0 &&
	       gnutls_x509_crt_get_key_id(crt, 0, b, &blen) >= 0 &&
	       alen == blen && !memcmp(a, b, alen);
}

/*
 * Whether crt is a leaf for a TLS server: basicConstraints absent or
 * CA:FALSE, and an extended key usage that lists serverAuth (what the API
 * server's Go client requires of it).
 */
static bool serving_leaf(gnutls_x509_crt_t crt)
{
	char oid[128];
	size_t len;
	unsigned i;
	int rc;

	if (gnutls_x509_crt_get_ca_status(crt, NULL) > 0)
		return false;
	for (i = 0;; i++) {
		len = sizeof(oid);
		rc = gnutls_x509_crt_get_key_purpose_oid(crt, i, oid, &len, NULL);
		if (rc < 0)
			return false;
		if (!strcmp(oid, GNUTLS_KP_TLS_WWW_SERVER))
			return true;
	}
}

enum certgen_verdict certgen_judge(const char *ca_crt, size_t ca_len,
				   const char *tls_crt, size_t crt_len,
				   const char *tls_key, size_t key_len,
				   const char *const *names, size_t nnames,
				   int64_t now, int64_t renew_before,
				   char *why, size_t whylen)
{
	gnutls_x509_crt_t ca = import_crt(ca_crt, ca_len);
	gnutls_x509_crt_t crt = import_crt(tls_crt, crt_len);
	gnutls_x509_privkey_t key = import_key(tls_key, key_len);
	enum certgen_verdict v = CERTGEN_VALID;
	int64_t ca_end = 0, crt_end = 0;
	unsigned status = 0;
	char name[300], when[32];
	size_t i;

	if (!ca || !crt || !key) {
		snprintf(why, whylen, "%s: %s",
			 !ca ? "ca.crt" : !crt ? "tls.crt" : "tls.key",
			 (!ca ? ca_crt : !crt ? tls_crt : tls_key) ?
				 "not PEM" : "missing");
		v = CERTGEN_UNREADABLE;
		goto out;
	}
	if (!key_of(key, crt)) {
		snprintf(why, whylen, "tls.key is not the key of tls.crt");
		v = CERTGEN_KEY;
		goto out;
	}
	if (gnutls_x509_crt_get_ca_status(ca, NULL) <= 0 ||
	    gnutls_x509_crt_verify(crt, &ca, 1,
				   GNUTLS_VERIFY_DISABLE_TIME_CHECKS |
					   GNUTLS_VERIFY_DISABLE_TRUSTED_TIME_CHECKS,
				   &status) < 0 ||
	    status) {
		snprintf(why, whylen, "tls.crt is not signed by the CA of ca.crt");
		v = CERTGEN_CHAIN;
		goto out;
	}
	if (!serving_leaf(crt)) {
		snprintf(why, whylen, "tls.crt is not a serving certificate "
				      "(CA:FALSE and extended key usage serverAuth)");
		v = CERTGEN_PURPOSE;
		goto out;
	}
	for (i = 0; i < nnames; i++) {
		if (!gnutls_x509_crt_check_hostname2(
			    crt, names[i], GNUTLS_VERIFY_DO_NOT_ALLOW_WILDCARDS)) {
			text_mask_cutn(name, sizeof(name), names[i],
				       strlen(names[i]), 253);
			snprintf(why, whylen, "tls.crt: the name \"%s\" is missing",
				 name);
			v = CERTGEN_NAMES;
			goto out;
		}
	}
	v = judge_times(ca, "ca.crt", now, renew_before, &ca_end, why, whylen);
	if (v == CERTGEN_VALID)
		v = judge_times(crt, "tls.crt", now, renew_before, &crt_end,
				why, whylen);
	if (v == CERTGEN_VALID) {
		utc(crt_end < ca_end ? crt_end : ca_end, when);
		snprintf(why, whylen, "valid until %s", when);
	}
out:
	gnutls_x509_crt_deinit(ca);
	gnutls_x509_crt_deinit(crt);
	gnutls_x509_privkey_deinit(key);
	return v;
}

char *certgen_bundle(const char *ca_crt, const char *old, size_t old_len,
		     int64_t now, int *oom)
{
	gnutls_x509_crt_t ca = import_crt(ca_crt, strlen(ca_crt));
	gnutls_x509_crt_t prev = import_crt(old, old_len);
	gnutls_datum_t d = { NULL, 0 };
	char *out = NULL, *keep = NULL;
	size_t calen = strlen(ca_crt);
	bool nl = calen && ca_crt[calen - 1] != '\n';

	*oom = 0;
	if (ca && prev && gnutls_x509_crt_equals(ca, prev))
		goto out; /* up to date */
	if (prev && (int64_t)gnutls_x509_crt_get_expiration_time(prev) > now &&
	    gnutls_x509_crt_export2(prev, GNUTLS_X509_FMT_PEM, &d) >= 0 &&
	    !(keep = take_datum(&d)))
		*oom = 1;
	if (*oom)
		goto out;
	out = malloc(calen + nl + (keep ? strlen(keep) : 0) + 1);
	if (!out) {
		*oom = 1;
		goto out;
	}
	memcpy(out, ca_crt, calen);
	if (nl)
		out[calen] = '\n';
	strcpy(out + calen + nl, keep ? keep : "");
out:
	free(keep);
	gnutls_x509_crt_deinit(ca);
	gnutls_x509_crt_deinit(prev);
	return out;
}

int certgen_parse_duration(const char *s, int64_t *seconds)
{
	static const struct {
		char unit;
		int64_t seconds;
	} units[] = { { 's', 1 }, { 'm', 60 }, { 'h', 3600 }, { 'd', 86400 } };
	size_t len = strlen(s), i;
	uint64_t v;

	if (len < 2)
		return -1;
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (s[len - 1] != units[i].unit)
			continue;
		if (text_u64_parsen(s, len - 1,
				    (uint64_t)(DURATION_MAX / units[i].seconds),
				    &v) || !v)
			return -1;
		*seconds = (int64_t)v * units[i].seconds;
		return 0;
	}
	return -1;
}
