/*
 * reload.c - the config in force and its reload (see reload.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reload.h"
#include "text.h"

static void config_free(struct watch_value *v)
{
	struct reload_config *c = (struct reload_config *)v;

	config_release(&c->cfg);
	free(c);
}

/* The load function of the watcher (watch_load_fn): a config built from
 * the source over the files' bytes (the config file's, then HAMi's). */
static struct watch_value *load_config(void *arg,
				       const struct watch_bytes *files,
				       const char *sha256, char *err,
				       size_t errlen, int64_t *retry_at)
{
	const struct reload *r = arg;
	struct reload_config *c = calloc(1, sizeof(*c));
	struct config_bytes file = { NULL, 0 }, hami = { NULL, 0 };
	size_t i = 0;

	(void)retry_at;
	if (!c) {
		text_errorf(err, errlen, "out of memory");
		return NULL;
	}
	if (r->source->path) {
		file.data = files[i].data;
		file.len = files[i++].len;
	}
	if (r->source->hami_path) {
		hami.data = files[i].data;
		hami.len = files[i].len;
	}
	if (config_build(&c->cfg, r->source, &file, &hami, err, errlen)) {
		free(c);
		return NULL;
	}
	c->head.destroy = config_free;
	snprintf(c->sha256, sizeof(c->sha256), "%s", sha256);
	return &c->head;
}

int reload_init(struct reload *r, struct config *cfg, const char *sha256,
		const struct config_source *source)
{
	struct reload_config *c = calloc(1, sizeof(*c));

	memset(r, 0, sizeof(*r));
	if (!c) {
		config_release(cfg);
		return -1;
	}
	c->cfg = *cfg;
	memset(cfg, 0, sizeof(*cfg));
	c->head.destroy = config_free;
	snprintf(c->sha256, sizeof(c->sha256), "%s", sha256 ? sha256 : "");
	r->source = source;
	if (source->path)
		r->paths[r->nfiles++] = source->path;
	if (source->hami_path)
		r->paths[r->nfiles++] = source->hami_path;
	watch_init(&r->watch, r->paths, r->nfiles, CONFIG_FILE_MAX,
		   load_config, r);
	watch_start_with(&r->watch, &c->head, c->sha256);
	return 0;
}

void reload_release(struct reload *r)
{
	watch_release(&r->watch);
}

const struct reload_config *reload_hold(struct reload *r)
{
	return (const struct reload_config *)watch_hold(&r->watch);
}

void reload_unhold(const struct reload_config *c)
{
	watch_unhold((struct watch_value *)&c->head);
}

enum reload_change reload_poll(struct reload *r, bool now, char *err,
			       size_t errlen)
{
	switch (watch_poll(&r->watch, now, err, errlen)) {
	case WATCH_LOADED:
		return RELOAD_DONE;
	case WATCH_REFUSED:
		return RELOAD_REFUSED;
	default:
		return RELOAD_SAME;
	}
}
