/*
 * reload.h - the configuration in force in `serve`, and its reload
 * (docs/behaviour.md §6, configuration reload).
 *
 * The config file is watched as the certificate files are (certs.h): by
 * stat(2), following symlinks, so that a ConfigMap volume's "..data" swap
 * or a replaced file shows as a new inode, size or time.  A change is
 * loaded once it has been stable for one poll; reload_poll() with now set
 * (SIGHUP) reads the file at once.  Bytes with the hash of the config in
 * force are no reload; bytes refused once are not looked at again until
 * they change.
 *
 * Requests take the config in force with reload_hold() and give it back
 * with reload_unhold(): two atomic operations each, no lock.  A config that
 * was replaced stays alive until its last holder is done; the polling
 * thread frees it at a later poll.
 */
#ifndef RELOAD_H
#define RELOAD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "compiler.h"
#include "config.h"

/*
 * Builds a config from the bytes data[0..len) of the file path: built-in
 * defaults, the file, the flags over it, checked.  Returns 0, or -1 with a
 * message naming the key in err[0..errlen) (cfg then released).
 */
typedef int reload_build_fn(struct config *cfg, const char *path,
			    const char *data, size_t len, const void *arg,
			    char *err, size_t errlen);

/* A config in force, or once in force. */
struct reload_config {
	struct config cfg;
	char sha256[65]; /* of the file's bytes; "" without a file */
	atomic_long refs; /* holders, plus one while in force */
	struct reload_config *next; /* superseded list */
};

struct reload_stamp {
	int err;
	unsigned long long dev, ino, size;
	long long mtime_s, mtime_ns, ctime_s, ctime_ns;
};

struct reload {
	const char *path; /* borrowed; NULL: no file, never reloaded */
	reload_build_fn *build;
	const void *arg;
	_Atomic(struct reload_config *) current;
	atomic_long acquiring; /* requests between loading current and
				  counting themselves in */
	/* Only the polling thread reads or writes these. */
	struct reload_config *superseded;
	struct reload_stamp loaded, pending;
	bool have_pending;
	char refused[65]; /* hash of the bytes last refused; "" for none */
};

enum reload_change {
	RELOAD_SAME,     /* nothing to do */
	RELOAD_DONE,     /* a new config serves from now on */
	RELOAD_REFUSED,  /* new bytes were refused; the old config serves */
};

/*
 * Takes cfg (moved: *cfg is zeroed), built from the file path whose bytes
 * hash to sha256 ("" and NULL without a file), as the config in force.
 * build and arg rebuild it on a change.  Returns 0, or -1 out of memory
 * (cfg then released).
 */
int reload_init(struct reload *r, struct config *cfg, const char *sha256,
		const char *path, reload_build_fn *build, const void *arg)
	COMPILER_WUR;

/* Frees every config.  No request may hold one. */
void reload_release(struct reload *r);

/* The config in force, held until reload_unhold().  Never NULL. */
const struct reload_config *reload_hold(struct reload *r);
void reload_unhold(const struct reload_config *c);

/*
 * Looks at the file once (see above); now: read it even if it looks
 * unchanged (SIGHUP).  On RELOAD_REFUSED, err says why.  Only one thread
 * may poll.
 */
enum reload_change reload_poll(struct reload *r, bool now, char *err,
			       size_t errlen);

/* The SHA-256 of data[0..len) as 64 lower-case hexadecimal digits. */
void reload_sha256(const void *data, size_t len, char out[65]);

#endif /* RELOAD_H */
