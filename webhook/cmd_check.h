/*
 * cmd_check.h - the check command: one built-in GPU-pod AdmissionReview
 * sent to a running webhook over verified TLS, and its answer checked
 * (SPEC section 9).  The Helm chart's `helm test` runs it.
 */
#ifndef CMD_CHECK_H
#define CMD_CHECK_H

#include <stddef.h>

#define CMD_CHECK_TIMEOUT_MAX 300 /* seconds */

/* The flags of check; the strings are borrowed (from argv). */
struct cmd_check_options {
	const char *url;         /* --url https://HOST:PORT/PATH (required) */
	const char *ca_file;     /* --ca-file (required) */
	const char *server_name; /* --server-name; NULL: the URL's host */
	const char *cert_file;   /* --cert-file, with key_file */
	const char *key_file;    /* --key-file */
	const char *resource;    /* --resource (default nvidia.com/gpu) */
	unsigned timeout;        /* --timeout, in seconds (default 10) */
};

void cmd_check_options_init(struct cmd_check_options *o);

/*
 * Checks what the flags alone can tell: url and ca_file given, the URL
 * https, cert_file and key_file together.  Returns 0, or -1 with a message
 * naming the flag in err[0..errlen).
 */
int cmd_check_options_check(const struct cmd_check_options *o, char *err,
			    size_t errlen);

/*
 * check: sends the review and checks the answer: HTTP 200, the uid
 * echoed, allowed, a JSON Patch that applies to the pod sent and sets
 * spec.schedulerName.  Prints one line: on stdout what was sent and what
 * came back, or on stderr the first check that failed.  Returns 0 or 1.
 */
int cmd_check_run(const struct cmd_check_options *o);

#endif /* CMD_CHECK_H */
