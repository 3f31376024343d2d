/*
 * cmd_review.h - the commands that work offline: review, default and
 * version.  Each takes its configuration built and checked by main.c and
 * returns the exit status of the process.
 */
#ifndef CMD_REVIEW_H
#define CMD_REVIEW_H

struct config;
struct manifest_options;
struct review_options;

/*
 * review: decides the AdmissionReview in path ("-" for standard input)
 * and prints the answer serve would send on stdout.  opt (--user and
 * --group; may be NULL) replaces the request's userInfo.  Returns 0, or 1
 * when the input cannot be read or is not an AdmissionReview (the reason
 * on stderr).
 */
int cmd_review_run(const struct config *cfg, const char *path,
		   const struct review_options *opt);

/*
 * default: defaults the manifests in path ("-" for standard input) as
 * manifest_default() says (behaviour §8): the manifests on stdout, the
 * warnings and errors on stderr.  Returns 0, 1 (denied), 2 (unreadable
 * input, an error) or 3 (opt->check: something would change).
 */
int cmd_default_run(const struct config *cfg, const char *path,
		    const struct manifest_options *opt);

/*
 * version: prints on stdout the release on the first line, in the format
 * scripts read ("vgpu-webhook 0.1.0"), then "revision: R" and
 * "build date: D" (version.h).  Returns 0.
 */
int cmd_version_run(void);

#endif /* CMD_REVIEW_H */
