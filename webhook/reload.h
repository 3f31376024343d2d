/*
 * reload.h - the configuration in force in `serve`, and its reload
 * (docs/behaviour.md §6, configuration reload).
 *
 * The config file, and HAMi's device-config.yaml when the source names
 * one, are followed together as watch.h says: a change is loaded once it
 * has been stable for one poll, reload_poll() with now set (SIGHUP) reads
 * the file at once, bytes with the hash of the config in force are no
 * reload, and bytes refused once are not looked at again until they
 * change.  A new config is built from its source (config.h,
 * config_build()): the built-in values, the file, the flags over it.
 *
 * Requests take the config in force with reload_hold() and give it back
 * with reload_unhold(): two atomic operations each, no lock.  A config that
 * was replaced stays alive until its last holder is done; the polling
 * thread frees it at a later poll.
 */
#ifndef RELOAD_H
#define RELOAD_H

#include <stdbool.h>
#include <stddef.h>

#include "compiler.h"
#include "config.h"
#include "watch.h"

/* A config in force, or once in force. */
struct reload_config {
	struct watch_value head; /* first: the watcher's count */
	struct config cfg;
	char sha256[65]; /* watch_hash() of the files' bytes; "" without */
};

struct reload {
	const struct config_source *source; /* borrowed */
	/* The config file and HAMi's file, those of them the source has
	 * (none: never reloaded). */
	const char *paths[WATCH_FILES_MAX];
	size_t nfiles;
	struct watch watch;
};

enum reload_change {
	RELOAD_SAME,     /* nothing to do */
	RELOAD_DONE,     /* a new config serves from now on */
	RELOAD_REFUSED,  /* new bytes were refused; the old config serves */
};

/*
 * Takes cfg (moved: *cfg is zeroed), built from source (borrowed, outlives
 * r) and the files' bytes, which hash to sha256 (watch_hash(); "" or NULL
 * without a file), as the config in force.  Returns 0, or -1 out of memory (cfg
 * then released).
 */
int reload_init(struct reload *r, struct config *cfg, const char *sha256,
		const struct config_source *source) COMPILER_WUR;

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

#endif /* RELOAD_H */
