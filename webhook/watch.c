/*
 * watch.c - the files `serve` follows and the value in force (watch.h).
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>

#include "buf.h"
#include "file.h"
#include "text.h"
#include "watch.h"

void watch_sha256(const void *data, size_t len, char out[65])
{
	unsigned char d[32];
	size_t i;

	out[0] = '\0';
	if (gnutls_hash_fast(GNUTLS_DIG_SHA256, data, len, d) < 0)
		return;
	for (i = 0; i < sizeof(d); i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
}

void watch_hash(const struct watch_bytes *files, size_t n, char out[65])
{
	gnutls_hash_hd_t h;
	unsigned char d[32], len[8];
	size_t i, b;

	out[0] = '\0';
	if (n == 1) {
		watch_sha256(files[0].data, files[0].len, out);
		return;
	}
	if (gnutls_hash_init(&h, GNUTLS_DIG_SHA256) < 0)
		return;
	for (i = 0; i < n; i++) {
		for (b = 0; b < sizeof(len); b++)
			len[b] = (unsigned char)((uint64_t)files[i].len >>
						 (8 * b));
		gnutls_hash(h, len, sizeof(len));
		gnutls_hash(h, files[i].data, files[i].len);
	}
	gnutls_hash_deinit(h, d);
	for (i = 0; i < sizeof(d); i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void stamp_take(const char *path, struct watch_stamp *s)
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

static bool stamp_equal(const struct watch_stamp *a,
			const struct watch_stamp *b)
{
	return a->err == b->err && a->dev == b->dev && a->ino == b->ino &&
	       a->size == b->size && a->mtime.tv_sec == b->mtime.tv_sec &&
	       a->mtime.tv_nsec == b->mtime.tv_nsec &&
	       a->ctime.tv_sec == b->ctime.tv_sec &&
	       a->ctime.tv_nsec == b->ctime.tv_nsec;
}

static void stamps_take(const struct watch *w, struct watch_stamp *s)
{
	size_t i;

	for (i = 0; i < w->nfiles; i++)
		stamp_take(w->paths[i], &s[i]);
}

static bool stamps_equal(const struct watch *w, const struct watch_stamp *a,
			 const struct watch_stamp *b)
{
	size_t i;

	for (i = 0; i < w->nfiles; i++)
		if (!stamp_equal(&a[i], &b[i]))
			return false;
	return true;
}

/* The bytes of the files, read between two sets of stamps. */
struct reading {
	struct watch_stamp stamps[WATCH_FILES_MAX]; /* taken before */
	char *data[WATCH_FILES_MAX];
	struct watch_bytes files[WATCH_FILES_MAX];
	int err; /* errno of a file that could not be read */
};

/* Wipes (a private key may be among them) and frees the bytes read. */
static void reading_release(struct reading *rd)
{
	size_t i;

	for (i = 0; i < WATCH_FILES_MAX; i++) {
		if (rd->data[i])
			gnutls_memset(rd->data[i], 0, rd->files[i].len);
		free(rd->data[i]);
		rd->data[i] = NULL;
	}
}

/*
 * Reads every file into rd, taking the stamps before and after.  Returns
 * 0, 1 when the files changed meanwhile (nothing kept), or -1 when one
 * cannot be read (rd->err, and the message in err).
 */
static int reading_take(const struct watch *w, struct reading *rd, char *err,
			size_t errlen)
{
	struct watch_stamp after[WATCH_FILES_MAX];
	size_t i, len;
	int rc = 0;

	memset(rd, 0, sizeof(*rd));
	stamps_take(w, rd->stamps);
	for (i = 0; i < w->nfiles && !rc; i++) {
		if (file_read(w->paths[i], w->max, &rd->data[i], &len, err,
			      errlen)) {
			rd->err = errno ? errno : EIO;
			rc = -1;
			break;
		}
		rd->files[i].data = rd->data[i];
		rd->files[i].len = len;
	}
	stamps_take(w, after);
	if (!stamps_equal(w, rd->stamps, after)) {
		reading_release(rd);
		return 1;
	}
	if (rc)
		reading_release(rd);
	return rc;
}

void watch_init(struct watch *w, const char *const *paths, size_t nfiles,
		size_t max, watch_load_fn *load, void *arg)
{
	size_t i;

	memset(w, 0, sizeof(*w));
	for (i = 0; i < nfiles && i < WATCH_FILES_MAX; i++)
		w->paths[i] = paths[i];
	w->nfiles = i;
	w->max = max;
	w->load = load;
	w->arg = arg;
	atomic_init(&w->current, NULL);
	atomic_init(&w->acquiring, 0);
}

/* Puts v in force, first or over the value in force. */
static void put_in_force(struct watch *w, struct watch_value *v,
			 const char *sha256)
{
	struct watch_value *old, **tail;

	atomic_store(&v->refs, 1);
	v->newer = NULL;
	snprintf(w->sha256, sizeof(w->sha256), "%s", sha256 ? sha256 : "");
	old = atomic_exchange(&w->current, v);
	if (!old)
		return;
	/* Every holder that loaded old has counted itself in old's refs
	 * once acquiring has been seen at zero after the exchange. */
	while (atomic_load(&w->acquiring))
		sched_yield();
	atomic_fetch_sub(&old->refs, 1);
	for (tail = &w->superseded; *tail; tail = &(*tail)->newer)
		;
	*tail = old;
}

/*
 * Frees the superseded values, oldest first, up to the first one still
 * held: a value held keeps every newer one alive.
 */
static void reap(struct watch *w)
{
	while (w->superseded && atomic_load(&w->superseded->refs) == 0) {
		struct watch_value *v = w->superseded;

		w->superseded = v->newer;
		v->destroy(v);
	}
}

int watch_start(struct watch *w, int tries, char *err, size_t errlen)
{
	struct buf paths = BUF_INIT;
	struct reading rd;
	int t, rc;

	for (t = 0; t < tries; t++) {
		struct timespec pause = { 0, 100000000 };
		struct watch_value *v;
		int64_t retry_at = 0;
		char sha[65];

		if (t)
			nanosleep(&pause, NULL);
		rc = reading_take(w, &rd, err, errlen);
		if (rc < 0)
			return -1;
		if (rc > 0)
			continue; /* being replaced right now */
		watch_hash(rd.files, w->nfiles, sha);
		v = w->load(w->arg, rd.files, sha, err, errlen, &retry_at);
		reading_release(&rd);
		if (!v)
			return -1;
		memcpy(w->loaded, rd.stamps, sizeof(w->loaded));
		put_in_force(w, v, sha);
		return 0;
	}
	for (t = 0; t < (int)w->nfiles; t++)
		buf_addf(&paths, "%s%s", t ? " and " : "", w->paths[t]);
	text_errorf(err, errlen, "%s keep changing", buf_str(&paths));
	buf_release(&paths);
	return -1;
}

void watch_start_with(struct watch *w, struct watch_value *v,
		      const char *sha256)
{
	stamps_take(w, w->loaded);
	put_in_force(w, v, sha256);
}

void watch_release(struct watch *w)
{
	struct watch_value *v = atomic_load(&w->current);

	while (w->superseded) {
		struct watch_value *s = w->superseded;

		w->superseded = s->newer;
		s->destroy(s);
	}
	if (v)
		v->destroy(v);
	atomic_store(&w->current, NULL);
}

struct watch_value *watch_hold(struct watch *w)
{
	struct watch_value *v;

	/*
	 * Counted in acquiring while v is loaded and not yet counted in its
	 * refs: the poller waits for acquiring to drop to zero after a swap
	 * before it lets the old value's count fall.
	 */
	atomic_fetch_add(&w->acquiring, 1);
	v = atomic_load(&w->current);
	atomic_fetch_add(&v->refs, 1);
	atomic_fetch_sub(&w->acquiring, 1);
	return v;
}

void watch_unhold(struct watch_value *v)
{
	if (v)
		atomic_fetch_sub(&v->refs, 1);
}

struct watch_value *watch_current(struct watch *w)
{
	return atomic_load(&w->current);
}

/*
 * Reads the files and, when their bytes are new, loads them (see
 * watch.h).  retry: the refused bytes may be tried again.
 */
static enum watch_change load(struct watch *w, bool retry, char *err,
			      size_t errlen)
{
	enum watch_change change = WATCH_SAME;
	struct watch_value *v;
	struct reading rd;
	int64_t retry_at = 0;
	char sha[65];
	int rc;

	rc = reading_take(w, &rd, err, errlen);
	if (rc > 0)
		return WATCH_SAME; /* changed while read: look again later */
	memcpy(w->loaded, rd.stamps, sizeof(w->loaded));
	w->have_pending = false;
	if (rc < 0) {
		/* Refused once until the files read again. */
		snprintf(sha, sizeof(sha), "unreadable:%d", rd.err);
		if (!strcmp(sha, w->refused))
			return WATCH_SAME;
		memcpy(w->refused, sha, sizeof(sha));
		w->retry_at = 0;
		return WATCH_REFUSED;
	}
	watch_hash(rd.files, w->nfiles, sha);
	if (!strcmp(sha, w->sha256)) {
		/* The bytes in force (a touch, a copy of the same files). */
		w->refused[0] = '\0';
		w->retry_at = 0;
		goto out;
	}
	if (!strcmp(sha, w->refused) && !retry)
		goto out;
	w->retry_at = 0;
	v = w->load(w->arg, rd.files, sha, err, errlen, &retry_at);
	if (!v) {
		memcpy(w->refused, sha, sizeof(sha));
		w->retry_at = retry_at;
		change = WATCH_REFUSED;
		goto out;
	}
	w->refused[0] = '\0';
	put_in_force(w, v, sha);
	reap(w);
	change = WATCH_LOADED;
out:
	reading_release(&rd);
	return change;
}

enum watch_change watch_poll(struct watch *w, bool now, char *err,
			     size_t errlen)
{
	struct watch_stamp stamps[WATCH_FILES_MAX];
	bool retry;

	reap(w);
	if (!w->nfiles)
		return WATCH_SAME;
	retry = w->retry_at && (int64_t)time(NULL) >= w->retry_at;
	if (!now) {
		stamps_take(w, stamps);
		if (stamps_equal(w, stamps, w->loaded)) {
			w->have_pending = false;
			if (!retry)
				return WATCH_SAME;
		} else if (!w->have_pending ||
			   !stamps_equal(w, stamps, w->pending)) {
			/* Changed since the last look: wait until it holds
			 * still. */
			memcpy(w->pending, stamps, sizeof(stamps));
			w->have_pending = true;
			return WATCH_SAME;
		}
	}
	return load(w, retry, err, errlen);
}
