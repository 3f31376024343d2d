/*
 * certs.c - the serving pair: checks, GnuTLS objects, rotation.
 *
 * Everything is done with GnuTLS, which serves the handshakes anyway:
 * loading OpenSSL's libcrypto only for these checks would add about 4 MB
 * to the resident size of the process.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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
	gnutls_pcert_st pcerts[CHAIN_MAX];
	unsigned npcerts;
	gnutls_privkey_t key;
	unsigned long conns; /* open connections that started under this pair */
	struct certs_pair *next; /* the next newer superseded pair */
	char *cert_pem;          /* the bytes it was made from */
	size_t cert_len;
	char *key_pem;
	size_t key_len;
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
	free(p->cert_pem);
	if (p->key_pem)
		gnutls_memset(p->key_pem, 0, p->key_len);
	free(p->key_pem);
	free(p);
}

static void stamp_take(const char *path, struct certs_stamp *s)
{
	struct stat st;

	memset(s, 0, sizeof(*s));
	if (stat(path, &st)) {
		s->err = errno ? errno : EIO;
		return;
	}
	s->dev = st.st_dev;
	s->ino = st.st_ino;
	s->size = st.st_size;
	s->mtime = st.st_mtim;
	s->ctime = st.st_ctim;
}

static bool stamp_equal(const struct certs_stamp *a, const struct certs_stamp *b)
{
	return a->err == b->err && a->dev == b->dev && a->ino == b->ino &&
	       a->size == b->size && a->mtime.tv_sec == b->mtime.tv_sec &&
	       a->mtime.tv_nsec == b->mtime.tv_nsec &&
	       a->ctime.tv_sec == b->ctime.tv_sec &&
	       a->ctime.tv_nsec == b->ctime.tv_nsec;
}

static bool stamps_equal(const struct certs_stamp a[2],
			 const struct certs_stamp b[2])
{
	return stamp_equal(&a[0], &b[0]) && stamp_equal(&a[1], &b[1]);
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
 * and makes the GnuTLS objects for handshakes.  Takes ownership of
 * cert_pem and key_pem whatever happens.  With refuse_expired, an expired
 * certificate is an error.  Returns the pair, or NULL with a message in
 * err (and info->not_before set once it was read).
 */
static struct certs_pair *pair_load(const struct certs *c, char *cert_pem,
				    size_t cert_len, char *key_pem,
				    size_t key_len, bool refuse_expired,
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
		gnutls_memset(key_pem, 0, key_len);
		free(cert_pem);
		free(key_pem);
		return NULL;
	}
	p->cert_pem = cert_pem;
	p->cert_len = cert_len;
	p->key_pem = key_pem;
	p->key_len = key_len;
	if (cert_len > UINT32_MAX || key_len > UINT32_MAX) {
		snprintf(err, errlen, "%s: too large", c->cert_file);
		goto fail;
	}

	d.data = (unsigned char *)cert_pem;
	d.size = (unsigned)cert_len;
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
	d.data = (unsigned char *)key_pem;
	d.size = (unsigned)key_len;
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
 * Reads both files, taking the stamps before and after: *stable says
 * whether the files stayed the same meanwhile.  Returns the new pair (or
 * NULL with err), or NULL with *stable false.
 */
static struct certs_pair *load_files(struct certs *c, struct certs_stamp now[2],
				     bool refuse_expired, bool *stable,
				     struct certs_info *info, char *err,
				     size_t errlen)
{
	struct certs_stamp after[2];
	char *cert = NULL, *key = NULL;
	size_t cert_len = 0, key_len = 0;
	int rc;

	stamp_take(c->cert_file, &now[0]);
	stamp_take(c->key_file, &now[1]);
	rc = file_read(c->cert_file, PEM_MAX, &cert, &cert_len, err, errlen);
	if (rc == 0)
		rc = file_read(c->key_file, PEM_MAX, &key, &key_len, err,
			       errlen);
	stamp_take(c->cert_file, &after[0]);
	stamp_take(c->key_file, &after[1]);
	*stable = stamps_equal(now, after);
	if (rc || !*stable) {
		free(cert);
		if (key)
			gnutls_memset(key, 0, key_len);
		free(key);
		return NULL;
	}
	return pair_load(c, cert, cert_len, key, key_len, refuse_expired,
			 info, err, errlen);
}

int certs_init(struct certs *c, const char *cert_file, const char *key_file,
	       struct certs_info *info, char *err, size_t errlen)
{
	struct certs_pair *p = NULL;
	bool stable = false;
	int tries;

	memset(c, 0, sizeof(*c));
	c->cert_file = cert_file;
	c->key_file = key_file;
	/* Files being replaced right now: read them again a bit later. */
	for (tries = 0; tries < 5 && !p; tries++) {
		struct timespec pause = { 0, 100000000 };

		if (tries)
			nanosleep(&pause, NULL);
		p = load_files(c, c->loaded, false, &stable, info, err, errlen);
		if (!p && stable)
			return -1;
	}
	if (!p) {
		snprintf(err, errlen, "%s and %s keep changing", cert_file,
			 key_file);
		return -1;
	}
	if (pthread_mutex_init(&c->lock, NULL)) {
		pair_destroy(p);
		snprintf(err, errlen, "cannot create a mutex");
		return -1;
	}
	c->current = p;
	c->not_after = p->not_after;
	return 0;
}

/* Frees the superseded pairs that no open connection can still use. */
static void collect(struct certs *c)
{
	while (c->superseded && c->superseded->conns == 0) {
		struct certs_pair *p = c->superseded;

		c->superseded = p->next;
		pair_destroy(p);
	}
}

void certs_release(struct certs *c)
{
	if (serving == c)
		serving = NULL;
	while (c->superseded) {
		struct certs_pair *p = c->superseded;

		c->superseded = p->next;
		pair_destroy(p);
	}
	pair_destroy(c->current);
	if (c->current)
		pthread_mutex_destroy(&c->lock);
	c->current = NULL;
}

enum certs_change certs_poll(struct certs *c, struct certs_info *info,
			     char *err, size_t errlen)
{
	struct certs_stamp now[2];
	struct certs_pair *p, **tail;
	bool stable;

	stamp_take(c->cert_file, &now[0]);
	stamp_take(c->key_file, &now[1]);
	if (stamps_equal(now, c->loaded)) {
		c->have_pending = false;
		/* A pair refused as not yet valid is loaded once it is. */
		if (!c->retry_at || (int64_t)time(NULL) < c->retry_at)
			return CERTS_SAME;
	} else if (!c->have_pending || !stamps_equal(now, c->pending)) {
		/* Wait until the files have stayed the same for one poll. */
		memcpy(c->pending, now, sizeof(now));
		c->have_pending = true;
		return CERTS_SAME;
	}
	c->have_pending = false;
	c->retry_at = 0;
	info->not_before = 0;
	p = load_files(c, now, true, &stable, info, err, errlen);
	if (!stable)
		return CERTS_SAME; /* changed while read: look again later */
	memcpy(c->loaded, now, sizeof(now));
	if (!p) {
		if (info->not_before > (int64_t)time(NULL))
			c->retry_at = info->not_before;
		return CERTS_REFUSED;
	}
	/* Same bytes (a touch, a copy of the same files): keep serving. */
	if (p->cert_len == c->current->cert_len &&
	    p->key_len == c->current->key_len &&
	    !memcmp(p->cert_pem, c->current->cert_pem, p->cert_len) &&
	    !memcmp(p->key_pem, c->current->key_pem, p->key_len)) {
		pair_destroy(p);
		return CERTS_SAME;
	}
	pthread_mutex_lock(&c->lock);
	for (tail = &c->superseded; *tail; tail = &(*tail)->next)
		;
	*tail = c->current;
	c->current = p;
	collect(c);
	pthread_mutex_unlock(&c->lock);
	c->not_after = p->not_after;
	return CERTS_RELOADED;
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
	pthread_mutex_lock(&c->lock);
	p = c->current;
	pthread_mutex_unlock(&c->lock);
	*pcert = p->pcerts;
	*pcert_length = p->npcerts;
	*privkey = p->key;
	return 0;
}

void *certs_hold(struct certs *c)
{
	struct certs_pair *p;

	pthread_mutex_lock(&c->lock);
	p = c->current;
	p->conns++;
	pthread_mutex_unlock(&c->lock);
	return p;
}

void certs_unhold(struct certs *c, void *handle)
{
	struct certs_pair *p = handle;

	if (!p)
		return;
	pthread_mutex_lock(&c->lock);
	p->conns--;
	collect(c);
	pthread_mutex_unlock(&c->lock);
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
