/*
 * certs.c - the serving pair: checks, GnuTLS objects, rotation.
 *
 * Everything is done with GnuTLS, which serves the handshakes anyway:
 * loading OpenSSL's libcrypto only for these checks would add about 4 MB
 * to the resident size of the process.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gnutls/x509.h>

#include "certs.h"
#include "file.h"
#include "text.h"

/* PEM files larger than this are not a certificate or a key... */
#define PEM_MAX ((size_t)1 << 20)
/* ...nor a bundle of client CAs. */
#define CA_MAX ((size_t)4 << 20)
/* Certificates in tls.crt: the leaf and its chain. */
#define CHAIN_MAX 8

struct certs_pair {
	struct watch_value head; /* first: the watcher's count */
	gnutls_pcert_st pcerts[CHAIN_MAX];
	unsigned npcerts;
	gnutls_privkey_t key;
	int64_t not_after;
};

/* The store that certs_retrieve() serves from; set before the daemon starts. */
static struct certs *serving;

static void pair_destroy(struct certs_pair *p)
{
	unsigned i;

	if (!p)
		return;
	for (i = 0; i < p->npcerts; i++)
		gnutls_pcert_deinit(&p->pcerts[i]);
	if (p->key)
		gnutls_privkey_deinit(p->key);
	free(p);
}

static void pair_free(struct watch_value *v)
{
	pair_destroy((struct certs_pair *)v);
}

/* Writes the bytes as upper-case hexadecimal, with sep between them. */
static void hex(char *out, size_t outlen, const unsigned char *b, size_t n,
		const char *sep)
{
	size_t i, o = 0;

	out[0] = '\0';
	for (i = 0; i < n; i++) {
		const char *s = i + 1 < n ? sep : "";
		size_t need = 2 + strlen(s);

		if (o + need >= outlen)
			break;
		snprintf(out + o, outlen - o, "%02X%s", b[i], s);
		o += need;
	}
}

static void describe(gnutls_x509_crt_t crt, struct certs_info *info)
{
	unsigned char buf[64];
	gnutls_datum_t dn = { NULL, 0 };
	size_t len;

	info->subject[0] = info->serial[0] = info->sha256[0] = '\0';
	if (gnutls_x509_crt_get_dn2(crt, &dn) >= 0)
		snprintf(info->subject, sizeof(info->subject), "%.*s",
			 (int)dn.size, (const char *)dn.data);
	gnutls_free(dn.data);
	len = sizeof(buf);
	if (gnutls_x509_crt_get_serial(crt, buf, &len) >= 0) {
		size_t skip = 0;

		/* DER keeps a leading zero byte for the sign: not shown. */
		while (skip + 1 < len && buf[skip] == 0)
			skip++;
		hex(info->serial, sizeof(info->serial), buf + skip, len - skip,
		    "");
	}
	len = sizeof(buf);
	if (gnutls_x509_crt_get_fingerprint(crt, GNUTLS_DIG_SHA256, buf,
					    &len) >= 0)
		hex(info->sha256, sizeof(info->sha256), buf, len, ":");
}

/*
 * Whether key is the private key of the public key pub: their key IDs
 * (SHA-256 of the SubjectPublicKeyInfo) are equal.
 */
static bool key_matches(gnutls_privkey_t key, gnutls_pubkey_t pub)
{
	unsigned char a[64], b[64];
	size_t alen = sizeof(a), blen = sizeof(b);
	gnutls_pubkey_t mine = NULL;
	bool same = false;

	if (gnutls_pubkey_init(&mine) < 0)
		return false;
	if (gnutls_pubkey_import_privkey(mine, key, 0, 0) >= 0 &&
	    gnutls_pubkey_get_key_id(mine, GNUTLS_KEYID_USE_SHA256, a,
				     &alen) >= 0 &&
	    gnutls_pubkey_get_key_id(pub, GNUTLS_KEYID_USE_SHA256, b,
				     &blen) >= 0)
		same = alen == blen && !memcmp(a, b, alen);
	gnutls_pubkey_deinit(mine);
	return same;
}

/*
 * Checks the PEM pair (the key belongs to the first certificate, which
 * has readable notBefore and notAfter, and whose notBefore has passed)
 * and makes the GnuTLS objects for handshakes (copies: the bytes stay the
 * caller's).  With refuse_expired, an expired certificate is an error.
 * Returns the pair, or NULL with a message in err (and info->not_before
 * set once it was read).
 */
static struct certs_pair *pair_load(const struct certs *c,
				    const struct watch_bytes *cert,
				    const struct watch_bytes *key,
				    bool refuse_expired,
				    struct certs_info *info, char *err,
				    size_t errlen)
{
	struct certs_pair *p = calloc(1, sizeof(*p));
	gnutls_x509_crt_t leaf = NULL;
	gnutls_datum_t d;
	time_t expires, starts, now = time(NULL);
	char when[40];
	int rc;

	if (!p) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	p->head.destroy = pair_free;
	if (cert->len > UINT32_MAX || key->len > UINT32_MAX) {
		snprintf(err, errlen, "%s: too large", c->cert_file);
		goto fail;
	}

	d.data = (unsigned char *)cert->data;
	d.size = (unsigned)cert->len;
	p->npcerts = CHAIN_MAX;
	rc = gnutls_pcert_list_import_x509_raw(p->pcerts, &p->npcerts, &d,
					       GNUTLS_X509_FMT_PEM, 0);
	if (rc < 0 || p->npcerts == 0) {
		p->npcerts = rc < 0 ? 0 : p->npcerts;
		snprintf(err, errlen, "%s: no PEM certificate%s%s",
			 c->cert_file, rc < 0 ? ": " : "",
			 rc == GNUTLS_E_SHORT_MEMORY_BUFFER ?
			 "more than 8 certificates" :
			 rc < 0 ? gnutls_strerror(rc) : "");
		goto fail;
	}
	d.data = (unsigned char *)key->data;
	d.size = (unsigned)key->len;
	rc = gnutls_privkey_init(&p->key);
	if (rc >= 0)
		rc = gnutls_privkey_import_x509_raw(p->key, &d,
						    GNUTLS_X509_FMT_PEM, NULL,
						    0);
	if (rc < 0) {
		snprintf(err, errlen,
			 "%s: no PEM private key (or an encrypted one): %s",
			 c->key_file, gnutls_strerror(rc));
		goto fail;
	}
	if (!key_matches(p->key, p->pcerts[0].pubkey)) {
		snprintf(err, errlen, "%s does not match the certificate in %s",
			 c->key_file, c->cert_file);
		goto fail;
	}
	if (gnutls_pcert_export_x509(&p->pcerts[0], &leaf) < 0) {
		snprintf(err, errlen, "%s: unreadable certificate", c->cert_file);
		goto fail;
	}
	expires = gnutls_x509_crt_get_expiration_time(leaf);
	starts = gnutls_x509_crt_get_activation_time(leaf);
	if (expires == (time_t)-1 || starts == (time_t)-1) {
		snprintf(err, errlen, "%s: unreadable %s", c->cert_file,
			 expires == (time_t)-1 ? "notAfter" : "notBefore");
		goto fail;
	}
	p->not_after = (int64_t)expires;
	describe(leaf, info);
	info->not_after = p->not_after;
	info->not_before = (int64_t)starts;
	if (starts > now) {
		/* Every client would fail with "not yet valid". */
		text_utc_time((int64_t)starts, when, sizeof(when));
		snprintf(err, errlen, "%s: the certificate is not valid yet "
			 "(notBefore %s)", c->cert_file, when);
		goto fail;
	}
	if (refuse_expired && p->not_after <= (int64_t)now) {
		snprintf(err, errlen, "%s: the certificate expired (notAfter %lld)",
			 c->cert_file, (long long)p->not_after);
		goto fail;
	}
	gnutls_x509_crt_deinit(leaf);
	return p;
fail:
	if (leaf)
		gnutls_x509_crt_deinit(leaf);
	pair_destroy(p);
	return NULL;
}

/*
 * The load function of the watcher (watch_load_fn): the pair of the
 * bytes of both files, described in c->info.  A pair refused only for a
 * notBefore still to come is tried again from then on.
 */
static struct watch_value *load_pair(void *arg,
				     const struct watch_bytes *files,
				     const char *sha256, char *err,
				     size_t errlen, int64_t *retry_at)
{
	struct certs *c = arg;
	struct certs_pair *p;

	(void)sha256;
	memset(&c->info, 0, sizeof(c->info));
	p = pair_load(c, &files[0], &files[1], c->started, &c->info, err,
		      errlen);
	if (!p) {
		if (c->started && c->info.not_before > (int64_t)time(NULL))
			*retry_at = c->info.not_before;
		return NULL;
	}
	return &p->head;
}

int certs_init(struct certs *c, const char *cert_file, const char *key_file,
	       struct certs_info *info, char *err, size_t errlen)
{
	const char *paths[2] = { cert_file, key_file };

	memset(c, 0, sizeof(*c));
	c->cert_file = cert_file;
	c->key_file = key_file;
	watch_init(&c->watch, paths, 2, PEM_MAX, load_pair, c);
	/* Files being replaced right now: read them again a bit later. */
	if (watch_start(&c->watch, 5, err, errlen))
		return -1;
	c->started = true;
	c->not_after = c->info.not_after;
	*info = c->info;
	return 0;
}

void certs_release(struct certs *c)
{
	if (serving == c)
		serving = NULL;
	watch_release(&c->watch);
}

enum certs_change certs_poll(struct certs *c, struct certs_info *info,
			     char *err, size_t errlen)
{
	switch (watch_poll(&c->watch, false, err, errlen)) {
	case WATCH_LOADED:
		c->not_after = c->info.not_after;
		*info = c->info;
		return CERTS_RELOADED;
	case WATCH_REFUSED:
		return CERTS_REFUSED;
	default:
		return CERTS_SAME;
	}
}

int64_t certs_not_after(const struct certs *c)
{
	return c->not_after;
}

void certs_serve(struct certs *c)
{
	serving = c;
}

int certs_retrieve(gnutls_session_t session, const gnutls_datum_t *req_ca_dn,
		   int nreqs, const gnutls_pk_algorithm_t *pk_algos,
		   int pk_algos_length, gnutls_pcert_st **pcert,
		   unsigned int *pcert_length, gnutls_privkey_t *privkey)
{
	struct certs *c = serving;
	struct certs_pair *p;

	(void)session;
	(void)req_ca_dn;
	(void)nreqs;
	(void)pk_algos;
	(void)pk_algos_length;
	if (!c)
		return -1;
	/* The connection holds this pair or an older one (certs_hold()),
	 * which keeps this one alive. */
	p = (struct certs_pair *)watch_current(&c->watch);
	*pcert = p->pcerts;
	*pcert_length = p->npcerts;
	*privkey = p->key;
	return 0;
}

void *certs_hold(struct certs *c)
{
	return watch_hold(&c->watch);
}

void certs_unhold(struct certs *c, void *handle)
{
	(void)c;
	watch_unhold(handle);
}

int certs_load_ca(const char *path, char **pem, char *err, size_t errlen)
{
	gnutls_x509_crt_t *list = NULL;
	gnutls_datum_t d;
	unsigned n = 0, i;
	size_t len;
	char *data;
	int rc;

	if (file_read(path, CA_MAX, &data, &len, err, errlen))
		return -1;
	d.data = (unsigned char *)data;
	d.size = (unsigned)len;
	rc = gnutls_x509_crt_list_import2(&list, &n, &d, GNUTLS_X509_FMT_PEM,
					  0);
	if (rc < 0 || n == 0) {
		snprintf(err, errlen, "%s holds no PEM certificate%s%s", path,
			 rc < 0 ? ": " : "", rc < 0 ? gnutls_strerror(rc) : "");
		free(data);
		return -1;
	}
	for (i = 0; i < n; i++)
		gnutls_x509_crt_deinit(list[i]);
	gnutls_free(list);
	*pem = data;
	return 0;
}
