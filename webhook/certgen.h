/*
 * certgen.h - making the webhook's own CA and serving certificate, and
 * deciding when a stored pair must be made again (`certs ensure`).
 *
 * Everything is GnuTLS: ECDSA P-256 keys, SHA-256 signatures, a CA
 * (basicConstraints CA:TRUE, keyCertSign) that signs one serving
 * certificate (CA:FALSE, digitalSignature, serverAuth) whose subjectAltName
 * holds the Service's DNS names.  The CA's key is never written anywhere:
 * it lives only while certgen_make() runs, so nobody can sign with it later.
 *
 * Times are Unix seconds, passed in, so that the tests choose "now".
 */
#ifndef CERTGEN_H
#define CERTGEN_H

#include <stddef.h>
#include <stdint.h>

#define CERTGEN_NAMES_MAX 8

/* A PEM text, malloc'd and NUL-terminated. */
struct certgen_pair {
	char *ca_crt;  /* the CA certificate */
	char *tls_crt; /* the serving certificate */
	char *tls_key; /* its key, PKCS#8 */
};

void certgen_pair_release(struct certgen_pair *p);

/*
 * Makes a CA named "<names[0]>-ca" and a serving certificate for
 * names[0..nnames) (DNS names, the first also the subject's CN), both
 * valid from now - 1 hour (clocks of the cluster disagree) to now +
 * validity.  Returns 0 with *out filled (the caller releases it), or -1
 * with the reason in err[0..errlen).
 */
int certgen_make(const char *const *names, size_t nnames, int64_t now,
		 int64_t validity, struct certgen_pair *out, char *err,
		 size_t errlen) __attribute__((warn_unused_result));

/* Why a stored pair must be made again. */
enum certgen_verdict {
	CERTGEN_VALID,      /* keep it */
	CERTGEN_UNREADABLE, /* a PEM text is missing or not a certificate/key */
	CERTGEN_KEY,        /* tls.key is not the key of tls.crt */
	CERTGEN_CHAIN,      /* tls.crt is not signed by ca.crt, or ca.crt is
			       not a CA */
	CERTGEN_PURPOSE,    /* tls.crt is a CA, or lacks serverAuth */
	CERTGEN_NAMES,      /* a name is missing from tls.crt */
	CERTGEN_NOT_YET,    /* notBefore of either is still to come */
	CERTGEN_EXPIRING,   /* either expires within renew_before */
};

/*
 * Judges the stored pair (PEM texts of lengths given; NULL: absent) for
 * the names at time now: valid when the key matches, the CA signed the
 * certificate, the certificate is CA:FALSE with extended key usage
 * serverAuth, every name is in its subjectAltName, both are valid now
 * and neither expires within renew_before seconds.  Writes the reason
 * (or, when valid, "valid until <date>") into why[0..whylen).
 */
enum certgen_verdict certgen_judge(const char *ca_crt, size_t ca_len,
				   const char *tls_crt, size_t crt_len,
				   const char *tls_key, size_t key_len,
				   const char *const *names, size_t nnames,
				   int64_t now, int64_t renew_before,
				   char *why, size_t whylen);

/*
 * The caBundle that should replace old (PEM, old_len bytes, may be empty
 * or not PEM) so that the API server trusts ca_crt: NULL when old already
 * starts with ca_crt (nothing to change); otherwise a malloc'd PEM text of
 * ca_crt, followed by the first certificate of old when that one is a
 * different certificate, still valid at now: the pods serve the previous
 * certificate until the kubelet updates their Secret volume, so both are
 * trusted until the next renewal.  On allocation failure, sets *oom and
 * returns NULL.
 */
char *certgen_bundle(const char *ca_crt, const char *old, size_t old_len,
		     int64_t now, int *oom);

/*
 * Parses a duration: a whole number followed by s, m, h or d ("720h",
 * "30d"), at most 100 years, more than zero.  Returns 0 with *seconds, or
 * -1.
 */
int certgen_parse_duration(const char *s, int64_t *seconds)
	__attribute__((warn_unused_result));

#endif /* CERTGEN_H */
