/*
 * cmd_review.c - the review, default and version commands (see
 * cmd_review.h): input from a file or standard input, review.c for the
 * decision, the answer on stdout.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd_review.h"
#include "file.h"
#include "review.h"
#include "vgpu.h"

#define PROG "vgpu-webhook"

/* review and default refuse what serve would refuse with 413. */
#define INPUT_MAX REVIEW_BODY_MAX

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

int cmd_default_run(const struct config *cfg, const char *path)
{
	struct review_pod_answer ans;
	size_t len, i;
	char *body = read_input(path, &len);
	const char *message;
	int status;

	if (!body)
		return 2;
	review_pod_answer_init(&ans);
	(void)review_pod(cfg, body, len, &ans);
	free(body);
	message = ans.message ? ans.message : "out of memory";
	switch (ans.status) {
	case REVIEW_POD_DEFAULTED:
		for (i = 0; i < json_array_size(ans.warnings); i++)
			fprintf(stderr, "warning: %s\n",
				json_string_value(json_array_get(ans.warnings,
								 i)));
		fputs(ans.pod, stdout);
		fputc('\n', stdout);
		status = fflush(stdout) ? 2 : 0;
		break;
	case REVIEW_POD_NOT_JSON:
		if (ans.message)
			fprintf(stderr, PROG ": %s is not JSON: %s\n", path,
				message);
		else
			fprintf(stderr, PROG ": %s\n", message);
		status = 2;
		break;
	case REVIEW_POD_DENIED:
		fprintf(stderr, PROG ": %s\n", message);
		status = 1;
		break;
	default:
		fprintf(stderr, PROG ": %s\n", message);
		status = 2;
		break;
	}
	review_pod_answer_release(&ans);
	return status;
}

int cmd_version_run(void)
{
	printf(PROG " %s\n", VGPU_VERSION);
	return 0;
}
