/*
 * cmd_certs.h - `certs ensure` and `certs cleanup`: the webhook's own
 * certificate made and renewed in the cluster, and the caBundle of its
 * webhook configurations kept in step, without cert-manager
 * (docs/behaviour.md §10).  The chart's certificates.mode job runs them in
 * hook Jobs and a CronJob.
 */
#ifndef CMD_CERTS_H
#define CMD_CERTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kube.h"

#define CMD_CERTS_VALIDITY (365 * 86400)    /* --validity default */
#define CMD_CERTS_RENEW_BEFORE (30 * 86400) /* --renew-before default */

/* The flags; the strings are borrowed (from argv). */
struct cmd_certs_options {
	const char *namespace_;     /* --namespace (ensure: required) */
	const char *secret;         /* --secret (ensure: required) */
	const char *service;        /* --service (ensure: required) */
	const char *cluster_domain; /* --cluster-domain (cluster.local) */
	const char *mutating;       /* --webhook: a MutatingWebhookConfiguration */
	const char *validating;     /* --validating-webhook */
	const char *helm_release;   /* --helm-release (cleanup): delete only a
				       configuration this release owns */
	bool create_only;           /* --create-only (ensure): keep a Secret
				       that exists, whatever its pair */
	int64_t validity;           /* --validity, seconds */
	int64_t renew_before;       /* --renew-before, seconds */
	struct kube_options kube;   /* --kube-server, --kube-ca,
				       --kube-token-file, --timeout */
};

void cmd_certs_options_init(struct cmd_certs_options *o);

/*
 * Checks what the flags alone can tell for ensure (cleanup when !ensure):
 * the required ones given, names that are DNS labels, renew_before below
 * validity.  Returns 0, or -1 with a message naming the flag in
 * err[0..errlen).
 */
int cmd_certs_options_check(const struct cmd_certs_options *o, int ensure,
			    char *err, size_t errlen);

/*
 * ensure: reads the Secret; makes a new CA and serving certificate when it
 * is absent, unreadable, for other names, or expires within renew_before,
 * and creates or replaces the Secret (kubernetes.io/tls: tls.crt, tls.key,
 * ca.crt; other data keys kept); with create_only, an existing Secret is
 * never replaced.  A Secret of another type, or immutable, is refused
 * rather than replaced.  Then sets the caBundle of every webhook of each named
 * configuration that does not already start with ca.crt.  Changes nothing
 * when everything is in order.  One line on stdout per object; errors on
 * stderr name the object, the HTTP status and the API server's message.
 * Returns 0, or 1.
 */
int cmd_certs_ensure(const struct cmd_certs_options *o);

/*
 * cleanup: deletes the named webhook configurations (absent ones are
 * fine).  With helm_release, only a configuration whose Helm ownership
 * annotations name that release in namespace_ is deleted (with its uid as
 * a precondition); another one is kept, and that is no error.  Returns 0,
 * or 1.
 */
int cmd_certs_cleanup(const struct cmd_certs_options *o);

#endif /* CMD_CERTS_H */
