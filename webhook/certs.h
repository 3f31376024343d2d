/*
 * certs.h - the serving certificate and key: loading, checking, rotation.
 *
 * A pair is read from two PEM files (the certificate may be followed by
 * its chain), checked (the key matches the first certificate, which is
 * valid now: past its notBefore, and, except at the start, before its
 * notAfter) and imported into GnuTLS for the handshakes.
 *
 * Rotation: certs_poll(), called every second or so from one thread,
 * follows both files as watch.h says (a change loaded once it has been
 * stable for one poll, the same bytes ignored, a bad pair refused while the
 * current one keeps serving, reported once until the bytes change; a pair
 * refused only because its notBefore is still to come is loaded once that
 * time has passed: clients would refuse it until then).
 *
 * Handshakes take the current pair through certs_retrieve().  A pair that
 * was replaced stays alive while any connection that started before the
 * replacement is open (certs_hold() and certs_unhold() around each
 * connection, watch.h's holds), so a handshake never uses a freed key.
 *
 * The client CA bundle, which client certificates must chain to, is read
 * once at the start (certs_load_ca()).
 */
#ifndef CERTS_H
#define CERTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>

#include "watch.h"

struct certs_pair;

/* A description of a loaded certificate, for the log. */
struct certs_info {
	int64_t not_before; /* Unix seconds */
	int64_t not_after;  /* Unix seconds */
	char subject[256];  /* RFC 4514: "CN=..." */
	char serial[80];    /* hexadecimal */
	char sha256[96];    /* fingerprint of the DER, "AB:CD:..." */
};

struct certs {
	const char *cert_file; /* borrowed */
	const char *key_file;  /* borrowed */
	struct watch watch;    /* both files; the pair in force */
	/* Only the polling thread reads or writes these. */
	bool started;          /* past certs_init(): an expired pair is
				  refused */
	struct certs_info info; /* of the pair last read */
	int64_t not_after;
};

enum certs_change {
	CERTS_SAME,     /* nothing to do */
	CERTS_RELOADED, /* a new pair serves from now on */
	CERTS_REFUSED,  /* a new pair was found bad; the old one serves */
};

/*
 * Loads the pair from cert_file and key_file (borrowed, must outlive c)
 * and describes it in *info.  An expired certificate is accepted here, so
 * that a rotation can still replace it; the caller may warn.  A
 * certificate whose notBefore is still to come is not.  Returns 0, or -1
 * with a message naming the file in err[0..errlen).
 */
int certs_init(struct certs *c, const char *cert_file, const char *key_file,
	       struct certs_info *info, char *err, size_t errlen)
	__attribute__((warn_unused_result));

/* Frees every pair (also after a failed certs_init()).  No handshake may
 * be running. */
void certs_release(struct certs *c);

/*
 * Looks at the files once (see above).  On CERTS_RELOADED, *info describes
 * the new certificate; on CERTS_REFUSED, err says why.  Only one thread may
 * poll.
 */
enum certs_change certs_poll(struct certs *c, struct certs_info *info,
			     char *err, size_t errlen);

/* notAfter of the serving certificate, in Unix seconds. */
int64_t certs_not_after(const struct certs *c);

/* Makes c the store that certs_retrieve() hands pairs out from. */
void certs_serve(struct certs *c);

/*
 * The GnuTLS certificate callback (gnutls_certificate_retrieve_function2):
 * hands out the current pair of the store given to certs_serve().
 */
int certs_retrieve(gnutls_session_t session, const gnutls_datum_t *req_ca_dn,
		   int nreqs, const gnutls_pk_algorithm_t *pk_algos,
		   int pk_algos_length, gnutls_pcert_st **pcert,
		   unsigned int *pcert_length, gnutls_privkey_t *privkey);

/*
 * Called when a connection opens, before its handshake: keeps the current
 * pair, and every later one, alive until certs_unhold(c, handle).
 */
void *certs_hold(struct certs *c);
void certs_unhold(struct certs *c, void *handle);

/*
 * Reads the PEM bundle of client CAs at path and checks that it holds at
 * least one certificate.  Returns 0 with *pem, malloc'd and NUL-terminated,
 * for the caller to free; or -1 with a message naming the file in
 * err[0..errlen).
 */
int certs_load_ca(const char *path, char **pem, char *err, size_t errlen)
	__attribute__((warn_unused_result));

#endif /* CERTS_H */
