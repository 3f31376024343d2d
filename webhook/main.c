/*
 * main.c - the vgpu-webhook command: serve, review, default, version.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "cmd_serve.h"
#include "config.h"
#include "file.h"
#include "pick.h"
#include "policy.h"
#include "review.h"

#define PROG "vgpu-webhook"

/* review and default refuse what serve would refuse with 413. */
#define INPUT_MAX REVIEW_BODY_MAX

static const char usage[] =
	"usage: " PROG " serve   [flags]\n"
	"       " PROG " review  [flags] [FILE|-]   decide one AdmissionReview\n"
	"       " PROG " default [flags] [FILE|-]   default one Pod\n"
	"       " PROG " version\n"
	"\n"
	"flags of every command:\n"
	"  --config FILE             JSON policy configuration\n"
	"  --scheduler-name NAME     schedulerName (default hami-scheduler)\n"
	"  --default-gpu-num N       defaultGPUNum of the first device family\n"
	"  --default-mem MIB         defaultMemory of the first device family\n"
	"  --default-cores PCT       defaultCores of the first device family\n"
	"flags of serve:\n"
	"  --listen HOST:PORT        HTTPS address (default 0.0.0.0:9443)\n"
	"  --tls-cert-file FILE      serving certificate (PEM, required)\n"
	"  --tls-private-key-file F  its private key (PEM, required)\n"
	"  --tls-client-ca-file FILE require client certificates from this CA\n"
	"  --metrics-listen ADDR     HTTP /metrics, /healthz, /readyz\n"
	"                            (default 0.0.0.0:9090; \"\" disables)\n"
	"  --log-format text|json    log line format (default text)\n"
	"  -v LEVEL                  log verbosity (default 0)\n";

enum command { CMD_SERVE, CMD_REVIEW, CMD_DEFAULT, CMD_VERSION };

struct flag {
	const char *name;
	const char *value;
};

/* Prints "what: arg" and the usage on stderr; returns the exit status 2. */
static int usage_error(const char *what, const char *arg)
{
	fprintf(stderr, PROG ": %s%s%s\n\n%s", what, arg ? ": " : "",
		arg ? arg : "", usage);
	return 2;
}

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

/* The review command: the answer serve would send, on stdout. */
static int run_review(const struct config *cfg, const char *path)
{
	struct review_answer ans;
	size_t len;
	char *body = read_input(path, &len);
	int status;

	if (!body)
		return 1;
	review_answer_init(&ans);
	if (review_handlen(cfg, body, len, &ans) == 0) {
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

/* Sets *precision to the digits that print v exactly (a real), at least. */
static void real_precision(const json_t *v, int *precision)
{
	const char *k;
	json_t *item;
	size_t i;

	if (json_is_real(v)) {
		char text[40];
		int p;

		for (p = *precision; p < 17; p++) {
			snprintf(text, sizeof(text), "%.*g", p,
				 json_real_value(v));
			if (strtod(text, NULL) == json_real_value(v))
				break;
		}
		*precision = p;
	} else if (json_is_object(v)) {
		json_object_foreach((json_t *)v, k, item)
			real_precision(item, precision);
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, item)
			real_precision(item, precision);
	}
}

/*
 * The default command: the pod with the policy's operations applied on
 * stdout, warnings on stderr.  Returns 0, 1 when denied, or 2 when the
 * input cannot be read or is not a Pod.
 */
static int run_default(const struct config *cfg, const char *path)
{
	struct policy_decision d;
	struct pick_error perr;
	json_t *pod = NULL;
	const char *kind;
	char err[256], *out = NULL;
	size_t len, i;
	char *body = read_input(path, &len);
	int status = 2, precision = 1;

	if (!body)
		return 2;
	/* The decoder of review, keeping everything: the same verdict on
	 * the same bytes. */
	pod = pick_loadb(body, len, &pick_all, &perr);
	free(body);
	if (!pod) {
		fprintf(stderr, PROG ": %s is not JSON: %s (line %d, column %d)\n",
			path, perr.text, perr.line, perr.column);
		return 2;
	}
	kind = json_string_value(json_object_get(pod, "kind"));
	if (!json_is_object(pod) || !kind ||
	    json_string_length(json_object_get(pod, "kind")) != 3 ||
	    strcmp(kind, "Pod")) {
		fprintf(stderr, PROG ": not a Pod: %.64s\n",
			kind ? kind : "(no kind)");
		json_decref(pod);
		return 2;
	}
	if (policy_decision_init(&d)) {
		json_decref(pod);
		fprintf(stderr, PROG ": out of memory\n");
		return 2;
	}
	if (policy_decide(cfg, pod, &d)) {
		fprintf(stderr, PROG ": out of memory\n");
		goto out;
	}
	if (d.code) {
		fprintf(stderr, PROG ": denied (%d %s): %s\n", d.code,
			policy_decision_reason(d.code), d.message);
		status = 1;
		goto out;
	}
	for (i = 0; i < json_array_size(d.warnings); i++)
		fprintf(stderr, "warning: %s\n",
			json_string_value(json_array_get(d.warnings, i)));
	if (patch_apply(pod, &d.patch, err, sizeof(err))) {
		fprintf(stderr, PROG ": %s\n", err);
		goto out;
	}
	/* Reals are printed with the fewest digits that keep their value, so
	 * that cpu: 0.1 stays 0.1 (jansson's default of 17 digits would not). */
	real_precision(pod, &precision);
	out = json_dumps(pod, JSON_INDENT(2) | JSON_REAL_PRECISION(precision));
	if (!out) {
		fprintf(stderr, PROG ": out of memory\n");
		goto out;
	}
	fputs(out, stdout);
	fputc('\n', stdout);
	status = fflush(stdout) ? 2 : 0;
out:
	free(out);
	policy_decision_release(&d);
	json_decref(pod);
	return status;
}

static bool is_common_flag(const char *name)
{
	return !strcmp(name, "scheduler-name") ||
	       !strcmp(name, "default-gpu-num") ||
	       !strcmp(name, "default-mem") || !strcmp(name, "default-cores");
}

/*
 * Builds the configuration: built-in defaults, then the file (which must be
 * valid on its own), then the flags in their order.  Returns 0, or 2 after
 * a message that names the file, flag or key.
 */
static int load_config(struct config *cfg, const char *file,
		       const struct flag *flags, size_t nflags)
{
	char err[512];
	size_t i;

	if (config_init(cfg)) {
		fprintf(stderr, PROG ": out of memory\n");
		return 2;
	}
	if (file) {
		if (config_load_file(cfg, file, err, sizeof(err)))
			goto fail;
		if (config_check(cfg, err, sizeof(err))) {
			fprintf(stderr, PROG ": config %s: %s\n", file, err);
			config_release(cfg);
			return 2;
		}
	}
	for (i = 0; i < nflags; i++)
		if (config_set_flag(cfg, flags[i].name, flags[i].value, err,
				    sizeof(err)))
			goto fail;
	if (config_check(cfg, err, sizeof(err)))
		goto fail;
	return 0;
fail:
	fprintf(stderr, PROG ": %s\n", err);
	config_release(cfg);
	return 2;
}

int main(int argc, char **argv)
{
	struct cmd_serve_options serve;
	struct config cfg;
	struct flag *flags;
	enum command cmd;
	const char *file = NULL, *config_file = NULL;
	size_t nflags = 0;
	int i, status;
	bool positional_only = false;

	arena_setup();
	if (argc < 2)
		return usage_error("a command is required", NULL);
	if (!strcmp(argv[1], "help") || !strcmp(argv[1], "--help") ||
	    !strcmp(argv[1], "-h")) {
		fputs(usage, stdout);
		return 0;
	}
	if (!strcmp(argv[1], "serve"))
		cmd = CMD_SERVE;
	else if (!strcmp(argv[1], "review"))
		cmd = CMD_REVIEW;
	else if (!strcmp(argv[1], "default"))
		cmd = CMD_DEFAULT;
	else if (!strcmp(argv[1], "version") || !strcmp(argv[1], "--version"))
		cmd = CMD_VERSION;
	else
		return usage_error("unknown command", argv[1]);

	cmd_serve_options_init(&serve);
	flags = calloc((size_t)argc, sizeof(*flags));
	if (!flags) {
		fprintf(stderr, PROG ": out of memory\n");
		return 2;
	}
	for (i = 2; i < argc; i++) {
		char *arg = argv[i], *eq;
		const char *name, *value;
		char err[256];
		int rc;

		if (positional_only || arg[0] != '-' || !strcmp(arg, "-")) {
			if (cmd == CMD_SERVE || cmd == CMD_VERSION || file) {
				status = usage_error("unexpected argument", arg);
				goto out_flags;
			}
			file = arg;
			continue;
		}
		if (!strcmp(arg, "--")) {
			positional_only = true;
			continue;
		}
		if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) {
			fputs(usage, stdout);
			status = 0;
			goto out_flags;
		}
		name = arg + (arg[1] == '-' ? 2 : 1);
		if (arg[1] != '-' && strcmp(name, "v") && strncmp(name, "v=", 2)) {
			status = usage_error("unknown flag", arg);
			goto out_flags;
		}
		eq = strchr(arg, '=');
		if (eq) {
			*eq = '\0';
			value = eq + 1;
		} else if (i + 1 < argc) {
			value = argv[++i];
		} else {
			status = usage_error("a value is missing for flag", arg);
			goto out_flags;
		}
		if (!strcmp(name, "config")) {
			config_file = value;
			continue;
		}
		if (is_common_flag(name)) {
			flags[nflags].name = name;
			flags[nflags++].value = value;
			continue;
		}
		rc = cmd == CMD_SERVE ? cmd_serve_options_set(&serve, name, value,
							  err, sizeof(err))
				      : 1;
		if (rc == 1) {
			status = usage_error("unknown flag", arg);
			goto out_flags;
		}
		if (rc < 0) {
			fprintf(stderr, PROG ": %s\n", err);
			status = 2;
			goto out_flags;
		}
	}

	if (cmd == CMD_VERSION) {
		printf(PROG " %s\n", VGPU_VERSION);
		status = 0;
		goto out_flags;
	}
	status = load_config(&cfg, config_file, flags, nflags);
	if (status)
		goto out_flags;
	switch (cmd) {
	case CMD_SERVE:
		status = cmd_serve_run(&cfg, &serve);
		break;
	case CMD_REVIEW:
		status = run_review(&cfg, file ? file : "-");
		break;
	case CMD_DEFAULT:
		status = run_default(&cfg, file ? file : "-");
		break;
	case CMD_VERSION:
		break;
	}
	config_release(&cfg);
out_flags:
	free(flags);
	return status;
}
