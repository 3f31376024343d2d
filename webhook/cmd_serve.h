/*
 * cmd_serve.h - the `serve` command: its options and its run loop.
 *
 * main.c fills the options from the flags of serve (checking each value
 * as it comes), builds the configuration, then calls cmd_serve_run().
 */
#ifndef CMD_SERVE_H
#define CMD_SERVE_H

#include <stddef.h>

struct config;
struct config_source;

struct cmd_serve_options {
	const char *listen;               /* "0.0.0.0:9443" */
	const char *tls_cert_file;        /* required */
	const char *tls_private_key_file; /* required */
	const char *tls_client_ca_file;   /* NULL: no client certificates */
	/* tlsconf.h; NULL: the defaults. */
	const char *tls_min_version;      /* VersionTLS12, VersionTLS13 */
	const char *tls_cipher_suites;    /* Go's names, comma-separated */
	const char *metrics_listen;       /* "0.0.0.0:9090"; "" disables */
	int log_json;                     /* --log-format json */
	int verbosity;                    /* -v LEVEL */
	/* After SIGTERM, seconds of serving with /readyz 503 before the
	 * listener closes, so that the endpoints drop this replica first
	 * (the preStop sleep of an image without a shell). */
	unsigned shutdown_delay;
	/* The config file and the flags over it (config.h), rebuilt when
	 * the file changes (reload.h). */
	const struct config_source *config_source;
	const char *config_sha256;        /* of the bytes cfg was built from */
};

/* The largest --shutdown-delay, in seconds. */
#define CMD_SERVE_SHUTDOWN_DELAY_MAX 300

/* The largest -v LEVEL. */
#define CMD_SERVE_VERBOSITY_MAX 10

/* Fills the defaults of docs/behaviour.md §1 (#s1-serve-flags). */
void cmd_serve_options_init(struct cmd_serve_options *o);

/*
 * Checks o (required flags present), takes cfg (moved: *cfg is left
 * zeroed) as the config in force, then serves until SIGTERM or SIGINT.  Returns the process exit status: 0 after a clean
 * shutdown, 2 for a usage or configuration error (message on stderr), 1 for
 * a failure at run time.
 */
int cmd_serve_run(struct config *cfg, const struct cmd_serve_options *o);

#endif /* CMD_SERVE_H */
