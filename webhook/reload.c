/*
 * reload.c - the config in force and its reload (see reload.h).
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>

#include "file.h"
#include "reload.h"
#include "text.h"

/* The largest config file read. */
#define CONFIG_FILE_MAX ((size_t)4 << 20)

void reload_sha256(const void *data, size_t len, char out[65])
{
	unsigned char d[32];
	size_t i;

	out[0] = '\0';
	if (gnutls_hash_fast(GNUTLS_DIG_SHA256, data, len, d) < 0)
		return;
	for (i = 0; i < sizeof(d); i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void stamp_take(const char *path, struct reload_stamp *s)
{
	struct stat st;

	memset(s, 0, sizeof(*s));
	if (stat(path, &st)) {
		s->err = errno ? errno : EIO;
		return;
	}
	s->dev = (unsigned long long)st.st_dev;
	s->ino = (unsigned long long)st.st_ino;
	s->size = (unsigned long long)st.st_size;
	s->mtime_s = (long long)st.st_mtim.tv_sec;
	s->mtime_ns = st.st_mtim.tv_nsec;
	s->ctime_s = (long long)st.st_ctim.tv_sec;
	s->ctime_ns = st.st_ctim.tv_nsec;
}

static bool stamp_equal(const struct reload_stamp *a,
			const struct reload_stamp *b)
{
	return !memcmp(a, b, sizeof(*a));
}

static void config_free(struct reload_config *c)
{
	config_release(&c->cfg);
	free(c);
}

int reload_init(struct reload *r, struct config *cfg, const char *sha256,
		const char *path, reload_build_fn *build, const void *arg)
{
	struct reload_config *c = calloc(1, sizeof(*c));

	memset(r, 0, sizeof(*r));
	if (!c) {
		config_release(cfg);
		return -1;
	}
	c->cfg = *cfg;
	memset(cfg, 0, sizeof(*cfg));
	snprintf(c->sha256, sizeof(c->sha256), "%s", sha256 ? sha256 : "");
	atomic_init(&c->refs, 1);
	r->path = path;
	r->build = build;
	r->arg = arg;
	atomic_init(&r->current, c);
	atomic_init(&r->acquiring, 0);
	if (path)
		stamp_take(path, &r->loaded);
	return 0;
}

/* Frees the superseded configs that no request holds any more. */
static void reap(struct reload *r)
{
	struct reload_config **p = &r->superseded;

	while (*p) {
		struct reload_config *c = *p;

		if (atomic_load(&c->refs) == 0) {
			*p = c->next;
			config_free(c);
		} else {
			p = &c->next;
		}
	}
}

void reload_release(struct reload *r)
{
	struct reload_config *c = atomic_load(&r->current);

	if (c)
		atomic_fetch_sub(&c->refs, 1);
	reap(r);
	/* Nothing holds a config any more: free what is left anyway. */
	while (r->superseded) {
		struct reload_config *s = r->superseded;

		r->superseded = s->next;
		config_free(s);
	}
	if (c)
		config_free(c);
	atomic_store(&r->current, NULL);
}

const struct reload_config *reload_hold(struct reload *r)
{
	struct reload_config *c;

	/*
	 * Counted in acquiring while c is loaded and not yet counted in its
	 * refs: the poller waits for acquiring to drop to zero after a swap
	 * before it lets the old config's count fall to zero.
	 */
	atomic_fetch_add(&r->acquiring, 1);
	c = atomic_load(&r->current);
	atomic_fetch_add(&c->refs, 1);
	atomic_fetch_sub(&r->acquiring, 1);
	return c;
}

void reload_unhold(const struct reload_config *c)
{
	atomic_fetch_sub(&((struct reload_config *)c)->refs, 1);
}

/* Puts next in force; the old config is freed once nobody holds it. */
static void swap_in(struct reload *r, struct reload_config *next)
{
	struct reload_config *old = atomic_exchange(&r->current, next);

	/* Every request that loaded old has counted itself in old's refs
	 * once acquiring has been seen at zero after the exchange. */
	while (atomic_load(&r->acquiring))
		sched_yield();
	atomic_fetch_sub(&old->refs, 1);
	old->next = r->superseded;
	r->superseded = old;
}

/* Reads and, when it is new, loads the file.  Sets r->loaded to stamp. */
static enum reload_change load(struct reload *r,
			       const struct reload_stamp *stamp, char *err,
			       size_t errlen)
{
	struct reload_config *cur = atomic_load(&r->current), *next;
	char *data = NULL, sha[65];
	size_t len = 0;
	enum reload_change rc = RELOAD_SAME;

	r->loaded = *stamp;
	r->have_pending = false;
	if (file_read(r->path, CONFIG_FILE_MAX, &data, &len, err, errlen)) {
		/* Counted once until the file reads again. */
		snprintf(sha, sizeof(sha), "unreadable:%d", errno);
		if (!strcmp(sha, r->refused))
			return RELOAD_SAME;
		snprintf(r->refused, sizeof(r->refused), "%s", sha);
		return RELOAD_REFUSED;
	}
	reload_sha256(data, len, sha);
	if (!strcmp(sha, cur->sha256)) {
		r->refused[0] = '\0';
		goto out;
	}
	if (!strcmp(sha, r->refused))
		goto out;
	next = calloc(1, sizeof(*next));
	if (!next) {
		text_errorf(err, errlen, "out of memory");
		rc = RELOAD_REFUSED;
		goto out;
	}
	if (r->build(&next->cfg, r->path, data, len, r->arg, err, errlen)) {
		free(next);
		snprintf(r->refused, sizeof(r->refused), "%s", sha);
		rc = RELOAD_REFUSED;
		goto out;
	}
	memcpy(next->sha256, sha, sizeof(sha));
	atomic_init(&next->refs, 1);
	r->refused[0] = '\0';
	swap_in(r, next);
	rc = RELOAD_DONE;
out:
	free(data);
	return rc;
}

enum reload_change reload_poll(struct reload *r, bool now, char *err,
			       size_t errlen)
{
	struct reload_stamp stamp;

	reap(r);
	if (!r->path)
		return RELOAD_SAME;
	stamp_take(r->path, &stamp);
	if (now)
		return load(r, &stamp, err, errlen);
	if (stamp_equal(&stamp, &r->loaded)) {
		r->have_pending = false;
		return RELOAD_SAME;
	}
	if (!r->have_pending || !stamp_equal(&stamp, &r->pending)) {
		/* Changed since the last look: wait until it holds still. */
		r->pending = stamp;
		r->have_pending = true;
		return RELOAD_SAME;
	}
	return load(r, &stamp, err, errlen);
}
