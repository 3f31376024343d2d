/*
 * cmd_review.h - the commands that work offline: review, default and
 * version.  Each takes its configuration built and checked by main.c and
 * returns the exit status of the process.
 */
#ifndef CMD_REVIEW_H
#define CMD_REVIEW_H

struct config;
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
 * default: decides the bare Pod in path ("-" for standard input) and
 * prints it with the operations applied on stdout, the warnings on
 * stderr.  Returns 0, 1 when the Pod is denied, or 2 when the input cannot
 * be read or is not a Pod.
 */
int cmd_default_run(const struct config *cfg, const char *path);

/* version: prints the program's version on stdout.  Returns 0. */
int cmd_version_run(void);

#endif /* CMD_REVIEW_H */
