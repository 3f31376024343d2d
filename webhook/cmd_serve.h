/*
 * cmd_serve.h - the `serve` command: its flags and its run loop.
 *
 * main.c splits each flag into a name (without dashes, "listen", "v") and a
 * value, gives the common ones to the config module and the rest to
 * cmd_serve_options_set(), then calls cmd_serve_run().
 */
#ifndef CMD_SERVE_H
#define CMD_SERVE_H

#include <stddef.h>

struct config;

struct cmd_serve_options {
	const char *listen;               /* "0.0.0.0:9443" */
	const char *tls_cert_file;        /* required */
	const char *tls_private_key_file; /* required */
	const char *tls_client_ca_file;   /* NULL: no client certificates */
	const char *metrics_listen;       /* "0.0.0.0:9090"; "" disables */
	int log_json;                     /* --log-format json */
	int verbosity;                    /* -v LEVEL, 0.. */
};

/* Fills the defaults of SPEC section 1. */
void cmd_serve_options_init(struct cmd_serve_options *o);

/*
 * Sets the serve flag name (without leading dashes) to value, which is
 * borrowed and must outlive o.  Returns 0 when set, 1 when name is not a
 * serve flag, and -1 for a bad value, with a message naming the flag in
 * err[0..errlen).
 */
int cmd_serve_options_set(struct cmd_serve_options *o, const char *name,
			  const char *value, char *err, size_t errlen);

/*
 * Checks o (required flags present, addresses parse), then serves until
 * SIGTERM or SIGINT.  Returns the process exit status: 0 after a clean
 * shutdown, 2 for a usage or configuration error (message on stderr), 1 for
 * a failure at run time.
 */
int cmd_serve_run(const struct config *cfg, const struct cmd_serve_options *o);

#endif /* CMD_SERVE_H */
