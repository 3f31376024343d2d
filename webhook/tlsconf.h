/*
 * tlsconf.h - the TLS settings of serve in Kubernetes' words
 * (--tls-min-version, --tls-cipher-suites), as a GnuTLS priority string.
 *
 * Only forward-secret suites (ECDHE) and TLS 1.2 or 1.3 are ever served.
 * The default is TLS 1.2 and 1.3 with the ECDHE suites of AES-GCM and
 * ChaCha20-Poly1305: with an ECDSA key the three ECDHE_ECDSA ones, with an
 * RSA key the three ECDHE_RSA ones, and TLS 1.3's three.
 *
 * Suite names are Go's (crypto/tls), as every Kubernetes component takes
 * them.  Refused: names Go does not know, and those it calls insecure
 * (static RSA key exchange, RC4, 3DES, CBC with SHA-256).  TLS 1.3 names
 * are taken and change nothing, as in Go.  GnuTLS chooses suites by key
 * exchange, cipher and MAC: a list is refused when those would serve a
 * TLS 1.2 suite it does not name, and TLS 1.3 then serves the AEAD ciphers
 * of the listed suites (GnuTLS has one cipher list for both versions); so
 * the list needs one AES-GCM or ChaCha20-Poly1305 suite.  With
 * VersionTLS13 the list is checked but TLS 1.3 keeps its three suites.
 */
#ifndef TLSCONF_H
#define TLSCONF_H

#include <stddef.h>

#include "compiler.h"

/* Room for the longest priority string tlsconf_priority() writes. */
#define TLSCONF_PRIORITY_MAX 512

/*
 * Writes the GnuTLS priority string for min_version (VersionTLS12 or
 * VersionTLS13; NULL: VersionTLS12) and suites (comma-separated Go names;
 * NULL or "": the default) into out[0..TLSCONF_PRIORITY_MAX), checked by
 * GnuTLS.  Returns 0, or -1 with a message naming the flag and the value
 * in err[0..errlen).
 */
int tlsconf_priority(const char *min_version, const char *suites,
		     char out[TLSCONF_PRIORITY_MAX], char *err, size_t errlen)
	COMPILER_WUR;

#endif /* TLSCONF_H */
