/*
 * main.c - the vgpu-webhook command: serve, review, default, version.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "cmd_review.h"
#include "cmd_serve.h"
#include "config.h"

#define PROG "vgpu-webhook"

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
		status = cmd_version_run();
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
		status = cmd_review_run(&cfg, file ? file : "-");
		break;
	case CMD_DEFAULT:
		status = cmd_default_run(&cfg, file ? file : "-");
		break;
	case CMD_VERSION:
		break;
	}
	config_release(&cfg);
out_flags:
	free(flags);
	return status;
}
