/*
 * cmd_review.c - the review, default and version commands (see
 * cmd_review.h): input from a file or standard input, review.c for the
 * decision, the answer on stdout.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd_review.h"
#include "buf.h"
#include "file.h"
#include "manifest.h"
#include "nswarn.h"
#include "review.h"
#include "version.h"
#include "vgpu.h"

#define PROG "vgpu-webhook"

/* review reads what serve would decide (40 MiB), no more. */
#define INPUT_MAX REVIEW_BODY_MAX
/* default reads streams of many documents, each at most 3 MiB. */
#define DEFAULT_INPUT_MAX ((size_t)64 << 20)

/*
 * Reads the input of review or default: path, or standard input for "-".
 * Returns the bytes (malloc'd, NUL-terminated), or NULL after a message.
 */
static char *read_input(const char *path, size_t *len)
{
	char err[600], *data;

	if (file_read(strcmp(path, "-") ? path : NULL, INPUT_MAX, &data, len,
		      err, sizeof(err))) {
		fprintf(stderr, PROG ": %s\n", err);
		return NULL;
	}
	return data;
}

int cmd_review_run(const struct config *cfg, const char *path,
		   const struct review_options *opt)
{
	struct review_answer ans;
	size_t len;
	char *body = read_input(path, &len);
	int status;

	if (!body)
		return 1;
	review_answer_init(&ans);
	if (review_handlen_with(cfg, body, len, opt, &ans) == 0) {
		fwrite(ans.body, 1, ans.body_len, stdout);
		fputc('\n', stdout);
		status = fflush(stdout) ? 1 : 0;
	} else {
		fprintf(stderr, PROG ": %s\n", ans.body ? ans.body :
			"out of memory");
		status = 1;
	}
	free(body);
	review_answer_release(&ans);
	return status;
}

int cmd_default_run(const struct config *cfg, const char *path,
		    const struct manifest_options *opt)
{
	struct buf out = BUF_INIT, msgs = BUF_INIT;
	char err[600], *body;
	enum manifest_status status;
	size_t len;

	if (file_read(strcmp(path, "-") ? path : NULL, DEFAULT_INPUT_MAX, &body,
		      &len, err, sizeof(err))) {
		fprintf(stderr, PROG ": %s\n", err);
		return 2;
	}
	status = manifest_default(cfg, body, len, opt, &out, &msgs);
	if (status == MANIFEST_OK || status == MANIFEST_CHANGED)
		nswarn_manifests(cfg, opt->namespace_, body, len, &msgs);
	free(body);
	fwrite(msgs.s ? msgs.s : "", 1, msgs.len, stderr);
	/* out is empty unless it is to be written: a ResourceList is written
	 * with its results even when an object is denied. */
	if (out.len) {
		fwrite(out.s, 1, out.len, stdout);
		if (fflush(stdout)) {
			fprintf(stderr, PROG ": cannot write the output\n");
			status = MANIFEST_INPUT;
		}
	}
	buf_release(&out);
	buf_release(&msgs);
	return (int)status;
}

int cmd_version_run(void)
{
	printf(PROG " %s\nrevision: %s\nbuild date: %s\n", version_release(),
	       version_revision(), version_build_date());
	return 0;
}
