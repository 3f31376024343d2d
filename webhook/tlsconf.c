/*
 * tlsconf.c - Kubernetes' TLS flags as a GnuTLS priority string.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <gnutls/gnutls.h>

#include "text.h"
#include "tlsconf.h"

#define FLAG_MIN "--tls-min-version"
#define FLAG_SUITES "--tls-cipher-suites"

/* One of Go's cipher suite names (crypto/tls), and how GnuTLS picks it. */
struct suite {
	const char *name;
	unsigned id;        /* IANA number */
	const char *kx;     /* GnuTLS key exchange; NULL: a TLS 1.3 suite */
	const char *cipher; /* GnuTLS cipher */
	const char *mac;    /* GnuTLS MAC */
	const char *insecure; /* why it is refused, or NULL */
};

#define NFS "static RSA key exchange, without forward secrecy"

static const struct suite suites_known[] = {
	/* What Go's tls.CipherSuites() lists (TLS 1.0 to 1.2). */
	{ "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", 0xc02b, "ECDHE-ECDSA",
	  "AES-128-GCM", "AEAD", NULL },
	{ "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", 0xc02f, "ECDHE-RSA",
	  "AES-128-GCM", "AEAD", NULL },
	{ "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", 0xc02c, "ECDHE-ECDSA",
	  "AES-256-GCM", "AEAD", NULL },
	{ "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", 0xc030, "ECDHE-RSA",
	  "AES-256-GCM", "AEAD", NULL },
	{ "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", 0xcca9,
	  "ECDHE-ECDSA", "CHACHA20-POLY1305", "AEAD", NULL },
	{ "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", 0xcca8, "ECDHE-RSA",
	  "CHACHA20-POLY1305", "AEAD", NULL },
	/* Go's older spellings of the two above. */
	{ "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305", 0xcca9, "ECDHE-ECDSA",
	  "CHACHA20-POLY1305", "AEAD", NULL },
	{ "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305", 0xcca8, "ECDHE-RSA",
	  "CHACHA20-POLY1305", "AEAD", NULL },
	{ "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA", 0xc009, "ECDHE-ECDSA",
	  "AES-128-CBC", "SHA1", NULL },
	{ "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA", 0xc00a, "ECDHE-ECDSA",
	  "AES-256-CBC", "SHA1", NULL },
	{ "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", 0xc013, "ECDHE-RSA",
	  "AES-128-CBC", "SHA1", NULL },
	{ "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA", 0xc014, "ECDHE-RSA",
	  "AES-256-CBC", "SHA1", NULL },
	/* TLS 1.3: taken, and fixed (as in Go). */
	{ "TLS_AES_128_GCM_SHA256", 0x1301, NULL, NULL, NULL, NULL },
	{ "TLS_AES_256_GCM_SHA384", 0x1302, NULL, NULL, NULL, NULL },
	{ "TLS_CHACHA20_POLY1305_SHA256", 0x1303, NULL, NULL, NULL, NULL },
	/* What Go's tls.InsecureCipherSuites() lists. */
	{ "TLS_RSA_WITH_RC4_128_SHA", 0x0005, NULL, NULL, NULL, NFS },
	{ "TLS_RSA_WITH_3DES_EDE_CBC_SHA", 0x000a, NULL, NULL, NULL, NFS },
	{ "TLS_RSA_WITH_AES_128_CBC_SHA", 0x002f, NULL, NULL, NULL, NFS },
	{ "TLS_RSA_WITH_AES_256_CBC_SHA", 0x0035, NULL, NULL, NULL, NFS },
	{ "TLS_RSA_WITH_AES_128_CBC_SHA256", 0x003c, NULL, NULL, NULL, NFS },
	{ "TLS_RSA_WITH_AES_128_GCM_SHA256", 0x009c, NULL, NULL, NULL, NFS },
	{ "TLS_RSA_WITH_AES_256_GCM_SHA384", 0x009d, NULL, NULL, NULL, NFS },
	{ "TLS_ECDHE_ECDSA_WITH_RC4_128_SHA", 0xc007, NULL, NULL, NULL,
	  "RC4 is broken" },
	{ "TLS_ECDHE_RSA_WITH_RC4_128_SHA", 0xc011, NULL, NULL, NULL,
	  "RC4 is broken" },
	{ "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA", 0xc012, NULL, NULL, NULL,
	  "3DES has 64-bit blocks" },
	{ "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256", 0xc023, NULL, NULL, NULL,
	  "CBC with SHA-256, which Go calls insecure" },
	{ "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256", 0xc027, NULL, NULL, NULL,
	  "CBC with SHA-256, which Go calls insecure" },
};

#define NSUITES (sizeof(suites_known) / sizeof(suites_known[0]))

/* The default list: every ECDHE suite with an AEAD cipher. */
static const char suites_default[] =
	"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,"
	"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,"
	"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,"
	"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,"
	"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,"
	"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256";

/* TLS 1.3 alone: its three suites, whatever the list says. */
static const char priority_tls13[] =
	"NORMAL:-VERS-ALL:+VERS-TLS1.3:-KX-ALL:+ECDHE-ECDSA:+ECDHE-RSA:"
	"-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM:+CHACHA20-POLY1305:"
	"-MAC-ALL:+AEAD";

/* The GnuTLS keywords one list brings in, each once, in order. */
struct words {
	const char *kx[4];
	const char *cipher[8];
	const char *mac[4];
	size_t nkx, ncipher, nmac;
};

static void words_add(const char **list, size_t *n, size_t max,
		      const char *w)
{
	size_t i;

	for (i = 0; i < *n; i++)
		if (!strcmp(list[i], w))
			return;
	if (*n < max)
		list[(*n)++] = w;
}

static const struct suite *suite_by_name(const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < NSUITES; i++)
		if (strlen(suites_known[i].name) == len &&
		    !memcmp(suites_known[i].name, name, len))
			return &suites_known[i];
	return NULL;
}

static const struct suite *suite_by_id(unsigned id)
{
	size_t i;

	for (i = 0; i < NSUITES; i++)
		if (suites_known[i].id == id)
			return &suites_known[i];
	return NULL;
}

static int min_version(const char *v, bool *tls13, char *err, size_t errlen)
{
	if (!v || !strcmp(v, "VersionTLS12")) {
		*tls13 = false;
		return 0;
	}
	if (!strcmp(v, "VersionTLS13")) {
		*tls13 = true;
		return 0;
	}
	return text_errorf(err, errlen,
			   FLAG_MIN ": \"%.64s\": %s; expected VersionTLS12 or "
			   "VersionTLS13", v,
			   !strcmp(v, "VersionTLS10") || !strcmp(v, "VersionTLS11") ?
			   "refused, TLS 1.0 and 1.1 are insecure" : "unknown");
}

/*
 * Reads the list into *w and ids[] (the IANA numbers named, at most
 * NSUITES).  Returns 0, or -1 with err for an empty, unknown or insecure
 * name.
 */
static int read_list(const char *list, struct words *w, unsigned *ids,
		     size_t *nids, char *err, size_t errlen)
{
	const char *p = list;

	memset(w, 0, sizeof(*w));
	*nids = 0;
	for (;;) {
		size_t len = strcspn(p, ","), start = 0;
		const struct suite *s;

		while (start < len && p[start] == ' ')
			start++;
		while (len > start && p[len - 1] == ' ')
			len--;
		s = suite_by_name(p + start, len - start);
		if (len == start)
			return text_errorf(err, errlen, FLAG_SUITES
					   ": \"%.300s\": an empty name", list);
		if (!s)
			return text_errorf(err, errlen, FLAG_SUITES
					   ": \"%.*s\": unknown cipher suite "
					   "(Go's names, such as "
					   "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256)",
					   (int)(len - start > 80 ? 80 : len - start),
					   p + start);
		if (s->insecure)
			return text_errorf(err, errlen, FLAG_SUITES
					   ": \"%s\": refused, insecure (%s)",
					   s->name, s->insecure);
		if (*nids < NSUITES)
			ids[(*nids)++] = s->id;
		if (s->kx) {
			words_add(w->kx, &w->nkx, 4, s->kx);
			words_add(w->cipher, &w->ncipher, 8, s->cipher);
			words_add(w->mac, &w->nmac, 4, s->mac);
		}
		p += strcspn(p, ",");
		if (!*p)
			return 0;
		p++;
	}
}

static void put_words(char *out, size_t *o, const char *minus,
		      const char *const *list, size_t n)
{
	size_t i;

	*o += (size_t)snprintf(out + *o, TLSCONF_PRIORITY_MAX - *o, ":%s",
			       minus);
	for (i = 0; i < n && *o < TLSCONF_PRIORITY_MAX; i++)
		*o += (size_t)snprintf(out + *o, TLSCONF_PRIORITY_MAX - *o,
				       ":+%s", list[i]);
}

/*
 * Checks the priority string with GnuTLS: it must parse, serve a suite,
 * and serve no TLS 1.2 suite outside ids[0..nids).  Returns 0, or -1 with
 * err.
 */
static int check_priority(const char *prio, const char *list,
			  const unsigned *ids, size_t nids, char *err,
			  size_t errlen)
{
	gnutls_priority_t p;
	const char *at = NULL;
	unsigned i, served = 0;
	int rc = gnutls_priority_init(&p, prio, &at);

	if (rc < 0)
		return text_errorf(err, errlen,
				   "the GnuTLS priority string \"%s\" is refused "
				   "at \"%.40s\": %s", prio, at ? at : "",
				   gnutls_strerror(rc));
	for (i = 0;; i++) {
		unsigned idx, id, k;
		unsigned char cs[2];
		gnutls_protocol_t min;
		const char *name;
		const struct suite *s;

		rc = gnutls_priority_get_cipher_suite_index(p, i, &idx);
		if (rc == GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE)
			break;
		if (rc < 0)
			continue;
		name = gnutls_cipher_suite_info(idx, cs, NULL, NULL, NULL, &min);
		if (!name)
			continue;
		served++;
		id = (unsigned)cs[0] << 8 | cs[1];
		if (min == GNUTLS_TLS1_3 || !list)
			continue;
		for (k = 0; k < nids && ids[k] != id; k++)
			;
		if (k == nids) {
			s = suite_by_id(id);
			gnutls_priority_deinit(p);
			return text_errorf(err, errlen, FLAG_SUITES
					   ": \"%.300s\": GnuTLS would also serve "
					   "%s, which the list does not name "
					   "(it picks suites by key exchange, "
					   "cipher and MAC): name it too",
					   list, s ? s->name : name);
		}
	}
	gnutls_priority_deinit(p);
	if (!served)
		return text_errorf(err, errlen, "the GnuTLS priority string "
				   "\"%s\" serves no cipher suite", prio);
	return 0;
}

int tlsconf_priority(const char *min, const char *list,
		     char out[TLSCONF_PRIORITY_MAX], char *err, size_t errlen)
{
	struct words w;
	unsigned ids[NSUITES];
	size_t nids, o = 0;
	bool tls13 = false;

	if (min_version(min, &tls13, err, errlen))
		return -1;
	if (read_list(list && list[0] ? list : suites_default, &w, ids, &nids,
		      err, errlen))
		return -1;
	if (tls13) {
		snprintf(out, TLSCONF_PRIORITY_MAX, "%s", priority_tls13);
		return check_priority(out, NULL, NULL, 0, err, errlen);
	}
	if (!w.nkx)
		return text_errorf(err, errlen, FLAG_SUITES ": \"%.300s\": names "
				   "no TLS 1.2 suite, and " FLAG_MIN " is "
				   "VersionTLS12", list);
	if (!(w.nmac > 1 || !strcmp(w.mac[0], "AEAD")))
		return text_errorf(err, errlen, FLAG_SUITES ": \"%.300s\": names "
				   "no AES-GCM or ChaCha20-Poly1305 suite, which "
				   "TLS 1.3 needs (GnuTLS has one list of "
				   "ciphers for both versions)", list);
	o = (size_t)snprintf(out, TLSCONF_PRIORITY_MAX,
			     "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2");
	put_words(out, &o, "-KX-ALL", w.kx, w.nkx);
	put_words(out, &o, "-CIPHER-ALL", w.cipher, w.ncipher);
	put_words(out, &o, "-MAC-ALL", w.mac, w.nmac);
	return check_priority(out, list && list[0] ? list : suites_default, ids,
			      nids, err, errlen);
}
