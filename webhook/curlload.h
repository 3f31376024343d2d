/*
 * curlload.h - libcurl, loaded when a command needs it.
 *
 * `serve` never calls libcurl, yet a binary linked with it maps libcurl
 * and the libraries it links (Kerberos, LDAP, SSH, OpenSSL's libcrypto...)
 * at start: about 3 MB of the server's resident set.  So the binary is not
 * linked with libcurl: curlload.c defines the libcurl functions the
 * commands call (check, and the Kubernetes client of certs), each calling
 * libcurl's own once curl_load() has loaded the library with dlopen(3).
 * The callers include <curl/curl.h> and call libcurl as usual.
 */
#ifndef CURLLOAD_H
#define CURLLOAD_H

#include <stddef.h>

/*
 * The sonames tried in turn: Debian's libcurl3-gnutls (the one the image
 * holds), then libcurl4 (OpenSSL); the same API and ABI.  (A test defines
 * its own list.)
 */
#ifndef CURLLOAD_SONAMES
#define CURLLOAD_SONAMES { "libcurl-gnutls.so.4", "libcurl.so.4" }
#endif

/*
 * Loads libcurl and finds every function curlload.c forwards to, once
 * (later calls return the first result; not thread-safe: called before a
 * command starts threads).  Returns 0, or -1 with err set to a message
 * that names the library and what to install.  The library stays loaded
 * until the process ends.
 */
int curl_load(char *err, size_t errlen);

#endif
