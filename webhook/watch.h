/*
 * watch.h - the files `serve` follows, and the value in force that is made
 * from them: the serving pair (certs.c) and the config (reload.c).
 *
 * Following: watch_poll(), called about once a second from one thread,
 * stats every path (following symlinks, so that a Secret or ConfigMap
 * volume's "..data" swap or a replaced file shows as a new device, inode,
 * size or time).  A change is loaded once the stamps have stayed the same
 * for one more poll, so that files written one after the other are loaded
 * together; watch_poll(now) reads at once (SIGHUP).  Files that change
 * while they are read are read again at a later poll.
 *
 * Loading: the bytes of every file are hashed (SHA-256; of one file, its
 * bytes' own hash).  Bytes with the hash of the value in force change
 * nothing.  Other bytes go to the load function, which makes a new value
 * or refuses them; refused bytes are not tried again until they change,
 * or until the time the load function gave (a certificate whose notBefore
 * is still to come).  A file that cannot be read counts as refused bytes
 * of their own, once per errno.
 *
 * Holding: a user takes the value in force with watch_hold() and gives it
 * back with watch_unhold(), two atomic operations each, without a lock.
 * A value that was replaced stays alive while it is held, and so does
 * every value that replaced it after it (a TLS connection that holds the
 * pair it opened under may hand its handshake a later one, and GnuTLS
 * keeps using that one until the connection closes).  The polling thread
 * frees them, oldest first, once nothing holds them.
 */
#ifndef WATCH_H
#define WATCH_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "compiler.h"

#define WATCH_FILES_MAX 2

/*
 * The head of a value in force (or once in force): the first member of
 * the user's struct.  destroy frees the whole struct.
 */
struct watch_value {
	atomic_long refs;           /* holders, plus one while in force */
	struct watch_value *newer;  /* next in the superseded list */
	void (*destroy)(struct watch_value *v);
};

/* The bytes of one file, for the load function (borrowed). */
struct watch_bytes {
	const char *data; /* NUL-terminated */
	size_t len;
};

/*
 * Makes a value from the bytes of the files (files[i] for the i-th path),
 * whose hash is sha256: a new value with refs 0 (the watcher counts it),
 * or NULL with a message in err[0..errlen) and, when the same bytes may
 * become good later, the Unix time from which to try them again in
 * *retry_at (left 0 otherwise).
 */
typedef struct watch_value *watch_load_fn(void *arg,
					  const struct watch_bytes *files,
					  const char *sha256, char *err,
					  size_t errlen, int64_t *retry_at);

/* What stat(2) says of one path; equal stamps mean "not changed". */
struct watch_stamp {
	int err; /* errno of stat, 0 when it worked */
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	struct timespec ctime;
};

struct watch {
	const char *paths[WATCH_FILES_MAX]; /* borrowed */
	size_t nfiles;                      /* 0: nothing to follow */
	size_t max;                         /* the largest file read */
	watch_load_fn *load;
	void *arg;
	_Atomic(struct watch_value *) current;
	atomic_long acquiring; /* holders between loading current and
				  counting themselves in */
	/* Only the polling thread reads or writes these. */
	struct watch_value *superseded; /* oldest first */
	char sha256[65];                /* of the bytes in force */
	char refused[65];               /* of the bytes last refused; "" */
	int64_t retry_at;               /* try the refused bytes again from
					   then (Unix seconds); 0: never */
	struct watch_stamp loaded[WATCH_FILES_MAX];
	struct watch_stamp pending[WATCH_FILES_MAX];
	bool have_pending;
};

enum watch_change {
	WATCH_SAME,    /* nothing to do */
	WATCH_LOADED,  /* a new value is in force from now on */
	WATCH_REFUSED, /* new bytes were refused; the old value stays */
};

/*
 * Follows the paths paths[0..nfiles) (borrowed, nfiles at most
 * WATCH_FILES_MAX, none for a value that never changes), each read up to
 * max bytes, loading a value with load(arg, ...).  No value is in force
 * yet: watch_start() or watch_start_with() puts the first.
 */
void watch_init(struct watch *w, const char *const *paths, size_t nfiles,
		size_t max, watch_load_fn *load, void *arg);

/*
 * Reads the files and loads the first value, trying again (tries times in
 * all, a tenth of a second apart) while the files change as they are
 * read.  Returns 0, or -1 with a message in err[0..errlen).
 */
int watch_start(struct watch *w, int tries, char *err, size_t errlen)
	COMPILER_WUR;

/*
 * Puts v, made elsewhere from bytes that hash to sha256 ("" or NULL:
 * none), in force as the first value, and takes the stamps of the files.
 */
void watch_start_with(struct watch *w, struct watch_value *v,
		      const char *sha256);

/* Frees every value.  Nothing may hold one any more. */
void watch_release(struct watch *w);

/*
 * Looks at the files once (see above); now: read them even if they look
 * unchanged.  On WATCH_REFUSED, err says why.  Only one thread may poll.
 */
enum watch_change watch_poll(struct watch *w, bool now, char *err,
			     size_t errlen);

/* The value in force, held until watch_unhold().  Never NULL once
 * started. */
struct watch_value *watch_hold(struct watch *w);

/* Gives back a value watch_hold() gave (NULL: nothing). */
void watch_unhold(struct watch_value *v);

/*
 * The value in force, not held: for the polling thread, and for a user
 * that holds this value or an older one (which keeps it alive).
 */
struct watch_value *watch_current(struct watch *w);

/* The SHA-256 of data[0..len) as 64 lower-case hexadecimal digits. */
void watch_sha256(const void *data, size_t len, char out[65]);

/*
 * The hash of the bytes of files[0..n), as watch_poll() compares it: that
 * of the one file's bytes, or the SHA-256 of each file's length (8 bytes,
 * little-endian) and bytes in turn, so that bytes moved from one file to
 * the other change it.
 */
void watch_hash(const struct watch_bytes *files, size_t n, char out[65]);

#endif /* WATCH_H */
