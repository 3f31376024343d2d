/*
 * main.c - the vgpu-webhook command line: the flags, the configuration
 * they build, and the dispatch to serve, review, default, check,
 * certs ensure, certs cleanup or version.
 *
 * One table (flags[] below) says everything of a flag: its spelling,
 * which commands take it, whether it takes a value, its line in the usage,
 * and its setter.  Setters of the command's options run as the flags are
 * read; setters of the configuration are collected into the config's
 * source (config.h), and config_build() runs them after the file, in the
 * order of the flags, so that a flag overrides the file (at start, and at
 * each reload of `serve`).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "addr.h"
#include "arena.h"
#include "certgen.h"
#include "cmd_certs.h"
#include "cmd_check.h"
#include "cmd_review.h"
#include "cmd_serve.h"
#include "cmd_test.h"
#include "config.h"
#include "file.h"
#include "manifest.h"
#include "review.h"
#include "text.h"
#include "watch.h"

#define PROG "vgpu-webhook"

enum command {
	CMD_SERVE,
	CMD_REVIEW,
	CMD_DEFAULT,
	CMD_VERSION,
	CMD_CHECK,
	CMD_ENSURE,  /* certs ensure */
	CMD_CLEANUP, /* certs cleanup */
	CMD_TEST,
};

#define ON_SERVE (1u << CMD_SERVE)
#define ON_CHECK (1u << CMD_CHECK)
#define ON_DEFAULT (1u << CMD_DEFAULT)
#define ON_ENSURE (1u << CMD_ENSURE)
#define ON_CERTS (ON_ENSURE | 1u << CMD_CLEANUP)
#define ON_EVERY \
	(ON_SERVE | 1u << CMD_REVIEW | 1u << CMD_DEFAULT | 1u << CMD_VERSION)
#define ON_OFFLINE (1u << CMD_REVIEW | 1u << CMD_DEFAULT)

struct flag;

/* What the command line asks for; the strings are borrowed from argv. */
struct args {
	enum command cmd;
	bool help;
	const char *file;        /* review, default: the input */
	const char *config_file; /* --config */
	const char *hami_file;   /* --hami-device-config */
	struct cmd_serve_options serve;
	struct cmd_check_options check;
	struct cmd_certs_options certs;
	struct review_options offline; /* review, default: --user, --group */
	json_t *groups;           /* --group values, or NULL */
	struct manifest_options def; /* default: --namespace, --check */
	/* The flags of the configuration, applied over the file (config.h):
	 * room for one per argument. */
	struct config_setting *settings;
	size_t nsettings;
};

/*
 * Takes value (NULL for a flag without one) into *a.  Returns 0, or -1
 * with a message naming the flag in err[0..errlen).
 */
typedef int flag_set_fn(struct args *a, const struct flag *f,
			const char *value, char *err, size_t errlen);

struct flag {
	/* Spelled "--name", and "-name" too when it is one letter.  A flag
	 * without a value is spelled only one way: "-h", "--help". */
	const char *name;
	unsigned commands; /* ON_EVERY, ON_SERVE, ON_CHECK */
	const char *value; /* the value's name in the usage; NULL: none */
	/* Its text in the usage, "\n" between lines; NULL: not listed. */
	const char *help;
	/* Exactly one of the two. */
	flag_set_fn *set;       /* at once */
	config_set_fn *setting; /* over the configuration file */
};

static int check_file(const struct flag *f, const char *value, char *err,
		      size_t errlen);
static flag_set_fn set_help, set_config_file, set_hami_file, set_listen, set_metrics_listen,
	set_tls_cert_file, set_tls_private_key_file, set_tls_client_ca_file,
	set_tls, set_shutdown_delay,
	set_log_format, set_verbosity, set_check, set_user,
	set_group, set_namespace, set_default_check, set_certs;

static const struct flag flags[] = {
	{ "help", ON_EVERY | ON_CHECK | ON_CERTS, NULL, NULL, set_help, NULL },
	{ "h", ON_EVERY | ON_CHECK | ON_CERTS, NULL, NULL, set_help, NULL },
	{ "config", ON_EVERY, "FILE", "JSON policy configuration",
	  set_config_file, NULL },
	{ "hami-device-config", ON_EVERY, "FILE",
	  "HAMi's device-config.yaml (wins over\nthe key hamiDeviceConfig)",
	  set_hami_file, NULL },
	{ "scheduler-name", ON_EVERY, "NAME",
	  "schedulerName (default hami-scheduler)", NULL,
	  config_set_scheduler_name },
	{ "default-gpu-num", ON_EVERY, "N",
	  "defaultGPUNum of the first device family", NULL,
	  config_set_default_gpu_num },
	{ "default-mem", ON_EVERY, "MIB",
	  "defaultMemory of the first device family", NULL,
	  config_set_default_memory },
	{ "default-cores", ON_EVERY, "PCT",
	  "defaultCores of the first device family", NULL,
	  config_set_default_cores },
	{ "listen", ON_SERVE, "HOST:PORT", "HTTPS address (default 0.0.0.0:9443)",
	  set_listen, NULL },
	{ "tls-cert-file", ON_SERVE, "FILE", "serving certificate (PEM, required)",
	  set_tls_cert_file, NULL },
	{ "tls-private-key-file", ON_SERVE, "F", "its private key (PEM, required)",
	  set_tls_private_key_file, NULL },
	{ "tls-client-ca-file", ON_SERVE, "FILE",
	  "require client certificates from this CA", set_tls_client_ca_file,
	  NULL },
	{ "tls-min-version", ON_SERVE, "V",
	  "VersionTLS12 (default) or VersionTLS13", set_tls, NULL },
	{ "tls-cipher-suites", ON_SERVE, "LIST",
	  "TLS 1.2 suites, Go's names, comma-separated\n"
	  "(default: the ECDHE ones with AES-GCM or ChaCha20)",
	  set_tls, NULL },
	{ "metrics-listen", ON_SERVE, "ADDR",
	  "HTTP /metrics, /healthz, /readyz\n"
	  "(default 0.0.0.0:9090; \"\" disables)",
	  set_metrics_listen, NULL },
	{ "shutdown-delay", ON_SERVE, "SECONDS",
	  "after SIGTERM, serve with /readyz 503 this\nlong before draining (default 0)",
	  set_shutdown_delay, NULL },
	{ "log-format", ON_SERVE, "text|json", "log line format (default text)",
	  set_log_format, NULL },
	{ "v", ON_SERVE, "LEVEL", "log verbosity (default 0)", set_verbosity,
	  NULL },
	/* check (set_check tells them apart by name) */
	{ "url", ON_CHECK, "URL", "https://HOST:PORT/mutate (required)", set_check, NULL },
	{ "ca-file", ON_CHECK, "FILE", "CA to verify the server (required)", set_check, NULL },
	{ "server-name", ON_CHECK, "NAME", "name to verify (default the URL's)", set_check, NULL },
	{ "cert-file", ON_CHECK, "FILE", "client certificate (PEM)", set_check, NULL },
	{ "key-file", ON_CHECK, "FILE", "its private key (PEM)", set_check, NULL },
	{ "resource", ON_CHECK, "NAME", "count resource (default nvidia.com/gpu)", set_check, NULL },
	{ "timeout", ON_CHECK, "SECONDS", "for the whole request (default 10)", set_check, NULL },
	/* certs ensure and cleanup (set_certs tells them apart by name) */
	{ "namespace", ON_ENSURE, "NS", "of the Secret and the Service (required)", set_certs, NULL },
	{ "secret", ON_ENSURE, "NAME", "the kubernetes.io/tls Secret (required)", set_certs, NULL },
	{ "service", ON_ENSURE, "NAME", "the Service the names are of (required)", set_certs, NULL },
	{ "cluster-domain", ON_ENSURE, "D", "of the last name (default cluster.local)", set_certs, NULL },
	{ "validity", ON_ENSURE, "DURATION", "of a new CA and certificate (default\n365d; s, m, h or d)",
	  set_certs, NULL },
	{ "renew-before", ON_ENSURE, "DURATION", "renew what expires within this (default\n30d)",
	  set_certs, NULL },
	{ "webhook", ON_CERTS, "NAME", "a MutatingWebhookConfiguration", set_certs, NULL },
	{ "validating-webhook", ON_CERTS, "NAME", "a ValidatingWebhookConfiguration", set_certs,
	  NULL },
	{ "kube-server", ON_CERTS, "URL", "API server (default: in-cluster)", set_certs, NULL },
	{ "kube-ca", ON_CERTS, "FILE", "its CA (default: the service account's)", set_certs, NULL },
	{ "kube-token-file", ON_CERTS, "F", "bearer token (default: the service\naccount's)",
	  set_certs, NULL },
	{ "timeout", ON_CERTS, "SECONDS", "per request (default 30)", set_certs, NULL },
	/* The requester of the guards (behaviour §4.2), offline only. */
	{ "user", ON_OFFLINE, "NAME",
	  "the requester (review: replaces\nrequest.userInfo.username)",
	  set_user, NULL },
	{ "group", ON_OFFLINE, "G",
	  "a group of the requester, repeatable\n(review: replaces request.userInfo.groups)",
	  set_group, NULL },
	{ "namespace", ON_DEFAULT, "NS", "for objects without one (default "
	  "default)", set_namespace, NULL },
	{ "check", ON_DEFAULT, NULL, "write nothing; exit 3 when something would "
	  "change", set_default_check, NULL },
};

#define NFLAGS (sizeof(flags) / sizeof(flags[0]))

/* --- the usage ----------------------------------------------------------- */

static const char usage_commands[] =
	"usage: " PROG " serve   [flags]\n"
	"       " PROG " review  [flags] [FILE|-]   decide one AdmissionReview\n"
	"       " PROG " default [flags] [FILE|-]   default manifests (JSON or YAML)\n"
	"       " PROG " check   [flags]   check a running webhook\n"
	"       " PROG " test    [DIR|FILE]   run the policy tests under DIR\n"
	"       " PROG " certs ensure  [flags]   make or renew the certificate\n"
	"       " PROG " certs cleanup [flags]   delete the webhook configurations\n"
	"       " PROG " version\n"
	"\n";

#define HELP_COLUMN 28

/* "--name" or "-v". */
static const char *dashes(const struct flag *f)
{
	return f->name[1] ? "--" : "-";
}

/* The flags of the usage, in groups of the commands that take them. */
static void usage(FILE *out)
{
	static const struct {
		const char *title;
		unsigned commands;
	} groups[] = {
		{ "flags of serve, review and default:", ON_EVERY },
		{ "flags of serve:", ON_SERVE },
		{ "flags of check:", ON_CHECK },
		{ "flags of certs ensure:", ON_ENSURE },
		{ "flags of certs ensure and cleanup:", ON_CERTS },
		{ "flags of review and default:", ON_OFFLINE },
		{ "flags of default:", ON_DEFAULT },
	};
	size_t g, i;

	fputs(usage_commands, out);
	for (g = 0; g < sizeof(groups) / sizeof(groups[0]); g++) {
		fprintf(out, "%s\n", groups[g].title);
		for (i = 0; i < NFLAGS; i++) {
			const struct flag *f = &flags[i];
			const char *line = f->help;
			int n;

			if (!line || f->commands != groups[g].commands)
				continue;
			n = fprintf(out, "  %s%s%s%s", dashes(f), f->name,
				    f->value ? " " : "", f->value ? f->value : "");
			for (;;) {
				size_t len = strcspn(line, "\n");

				fprintf(out, "%*s%.*s\n",
					n < HELP_COLUMN ? HELP_COLUMN - n : 1, "",
					(int)len, line);
				if (!line[len])
					break;
				line += len + 1;
				n = 0;
			}
		}
	}
}

/* Prints "what: arg" and the usage on stderr; returns the exit status 2. */
static int usage_error(const char *what, const char *arg)
{
	fprintf(stderr, PROG ": %s%s%s\n\n", what, arg ? ": " : "",
		arg ? arg : "");
	usage(stderr);
	return 2;
}

/* --- setters ------------------------------------------------------------- */

static int set_help(struct args *a, const struct flag *f, const char *value,
		    char *err, size_t errlen)
{
	(void)f;
	(void)value;
	(void)err;
	(void)errlen;
	a->help = true;
	return 0;
}

static int set_config_file(struct args *a, const struct flag *f,
			   const char *value, char *err, size_t errlen)
{
	(void)f;
	(void)err;
	(void)errlen;
	a->config_file = value;
	return 0;
}

static int set_hami_file(struct args *a, const struct flag *f,
			 const char *value, char *err, size_t errlen)
{
	if (check_file(f, value, err, errlen))
		return -1;
	a->hami_file = value;
	return 0;
}

/* Checks a listen address; "" is taken when it may disable. */
static int check_address(const struct flag *f, const char *value,
			 bool may_disable, char *err, size_t errlen)
{
	struct addr addr;
	char why[200];

	if ((may_disable && !value[0]) ||
	    !addr_parse(value, &addr, why, sizeof(why)))
		return 0;
	snprintf(err, errlen, "%s%s: %s", dashes(f), f->name, why);
	return -1;
}

static int set_listen(struct args *a, const struct flag *f, const char *value,
		      char *err, size_t errlen)
{
	if (check_address(f, value, false, err, errlen))
		return -1;
	a->serve.listen = value;
	return 0;
}

static int set_metrics_listen(struct args *a, const struct flag *f,
			      const char *value, char *err, size_t errlen)
{
	if (check_address(f, value, true, err, errlen))
		return -1;
	a->serve.metrics_listen = value;
	return 0;
}

/* Checks that a file flag names a file. */
static int check_file(const struct flag *f, const char *value, char *err,
		      size_t errlen)
{
	if (value[0])
		return 0;
	snprintf(err, errlen, "%s%s: a file name is required", dashes(f),
		 f->name);
	return -1;
}

static int set_tls_cert_file(struct args *a, const struct flag *f,
			     const char *value, char *err, size_t errlen)
{
	if (check_file(f, value, err, errlen))
		return -1;
	a->serve.tls_cert_file = value;
	return 0;
}

static int set_tls_private_key_file(struct args *a, const struct flag *f,
				    const char *value, char *err,
				    size_t errlen)
{
	if (check_file(f, value, err, errlen))
		return -1;
	a->serve.tls_private_key_file = value;
	return 0;
}

static int set_tls_client_ca_file(struct args *a, const struct flag *f,
				  const char *value, char *err, size_t errlen)
{
	if (check_file(f, value, err, errlen))
		return -1;
	a->serve.tls_client_ca_file = value;
	return 0;
}

/*
 * --tls-min-version and --tls-cipher-suites, by name, taken as given:
 * cmd_serve_run() checks the two together (tlsconf.h).
 */
static int set_tls(struct args *a, const struct flag *f, const char *value,
		   char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	if (!strcmp(f->name, "tls-min-version"))
		a->serve.tls_min_version = value;
	else
		a->serve.tls_cipher_suites = value;
	return 0;
}

static int set_shutdown_delay(struct args *a, const struct flag *f,
			      const char *value, char *err, size_t errlen)
{
	uint64_t v;

	if (text_u64_parsen(value, strlen(value), CMD_SERVE_SHUTDOWN_DELAY_MAX,
			    &v)) {
		snprintf(err, errlen,
			 "--%s: \"%.64s\": expected seconds from 0 to %d",
			 f->name, value, CMD_SERVE_SHUTDOWN_DELAY_MAX);
		return -1;
	}
	a->serve.shutdown_delay = (unsigned)v;
	return 0;
}

static int set_log_format(struct args *a, const struct flag *f,
			  const char *value, char *err, size_t errlen)
{
	if (strcmp(value, "text") && strcmp(value, "json")) {
		snprintf(err, errlen,
			 "%s%s: \"%.64s\": expected text or json", dashes(f),
			 f->name, value);
		return -1;
	}
	a->serve.log_json = !strcmp(value, "json");
	return 0;
}

static int set_user(struct args *a, const struct flag *f, const char *value,
		    char *err, size_t errlen)
{
	(void)f;
	(void)err;
	(void)errlen;
	a->offline.username = value;
	return 0;
}

static int set_group(struct args *a, const struct flag *f, const char *value,
		     char *err, size_t errlen)
{
	if ((!a->groups && !(a->groups = json_array())) ||
	    json_array_append_new(a->groups, json_string(value))) {
		snprintf(err, errlen, "--%s: out of memory or not UTF-8: \"%.64s\"",
			 f->name, value);
		return -1;
	}
	a->offline.groups = a->groups;
	return 0;
}

static int set_verbosity(struct args *a, const struct flag *f,
			 const char *value, char *err, size_t errlen)
{
	uint64_t v;

	if (text_u64_parsen(value, strlen(value), CMD_SERVE_VERBOSITY_MAX,
			    &v)) {
		snprintf(err, errlen,
			 "%s%s: \"%.64s\": expected a level from 0 to %d",
			 dashes(f), f->name, value, CMD_SERVE_VERBOSITY_MAX);
		return -1;
	}
	a->serve.verbosity = (int)v;
	return 0;
}

/* The flags of check, by name; the options are checked before the run. */
static int set_check(struct args *a, const struct flag *f, const char *value,
		     char *err, size_t errlen)
{
	struct cmd_check_options *o = &a->check;
	uint64_t v;

	if (strcmp(f->name, "timeout")) {
		if (check_file(f, value, err, errlen))
			return -1;
	} else if (text_u64_parsen(value, strlen(value), CMD_CHECK_TIMEOUT_MAX,
				   &v) || !v) {
		snprintf(err, errlen,
			 "--timeout: \"%.64s\": expected seconds from 1 to %d",
			 value, CMD_CHECK_TIMEOUT_MAX);
		return -1;
	} else {
		o->timeout = (unsigned)v;
		return 0;
	}
	if (!strcmp(f->name, "url"))
		o->url = value;
	else if (!strcmp(f->name, "ca-file"))
		o->ca_file = value;
	else if (!strcmp(f->name, "server-name"))
		o->server_name = value;
	else if (!strcmp(f->name, "cert-file"))
		o->cert_file = value;
	else if (!strcmp(f->name, "key-file"))
		o->key_file = value;
	else
		o->resource = value;
	return 0;
}

static int set_namespace(struct args *a, const struct flag *f,
			 const char *value, char *err, size_t errlen)
{
	if (!*value || strlen(value) > 63) {
		snprintf(err, errlen, "--%s: \"%.80s\" is not a namespace name",
			 f->name, value);
		return -1;
	}
	a->def.namespace_ = value;
	return 0;
}

static int set_default_check(struct args *a, const struct flag *f,
			     const char *value, char *err, size_t errlen)
{
	(void)f, (void)value, (void)err, (void)errlen;
	a->def.check = true;
	return 0;
}

/* The flags of certs, by name; the options are checked before the run. */
static int set_certs(struct args *a, const struct flag *f, const char *value,
		     char *err, size_t errlen)
{
	struct cmd_certs_options *o = &a->certs;
	const char **strings[] = {
		&o->namespace_, &o->secret, &o->service, &o->cluster_domain,
		&o->mutating, &o->validating, &o->kube.server, &o->kube.ca_file,
		&o->kube.token_file,
	};
	static const char *const names[] = {
		"namespace", "secret", "service", "cluster-domain", "webhook",
		"validating-webhook", "kube-server", "kube-ca", "kube-token-file",
	};
	uint64_t v;
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcmp(f->name, names[i]))
			continue;
		if (!value[0]) {
			snprintf(err, errlen, "--%s: a value is required",
				 f->name);
			return -1;
		}
		*strings[i] = value;
		return 0;
	}
	if (!strcmp(f->name, "timeout")) {
		if (text_u64_parsen(value, strlen(value), KUBE_TIMEOUT_MAX, &v) ||
		    !v) {
			snprintf(err, errlen,
				 "--timeout: \"%.64s\": expected seconds from 1 to %d",
				 value, KUBE_TIMEOUT_MAX);
			return -1;
		}
		o->kube.timeout = (unsigned)v;
		return 0;
	}
	if (certgen_parse_duration(value, !strcmp(f->name, "validity") ?
						  &o->validity :
						  &o->renew_before)) {
		snprintf(err, errlen,
			 "--%s: \"%.64s\": expected a duration such as 720h or 30d",
			 f->name, value);
		return -1;
	}
	return 0;
}

/* --- parsing ------------------------------------------------------------- */

/* The flag without a value that cmd takes and arg spells exactly, or
 * NULL. */
static const struct flag *find_switch(const char *arg, enum command cmd)
{
	size_t i;

	for (i = 0; i < NFLAGS; i++) {
		const struct flag *f = &flags[i];
		size_t d = strlen(dashes(f));

		if (!f->value && (f->commands & 1u << cmd) &&
		    !strncmp(arg, "--", d) &&
		    !strcmp(arg + d, f->name))
			return &flags[i];
	}
	return NULL;
}

/* Whether arg is "-X" or "-X=..." for a one-letter flag X with a value. */
static bool is_letter_flag(const char *arg)
{
	size_t i;

	for (i = 0; i < NFLAGS; i++)
		if (flags[i].value && !flags[i].name[1] &&
		    arg[1] == flags[i].name[0] && (!arg[2] || arg[2] == '='))
			return true;
	return false;
}

/* The flag with a value named name that cmd takes, or NULL. */
static const struct flag *find_flag(const char *name, enum command cmd)
{
	size_t i;

	for (i = 0; i < NFLAGS; i++)
		if (flags[i].value && (flags[i].commands & 1u << cmd) &&
		    !strcmp(flags[i].name, name))
			return &flags[i];
	return NULL;
}

/*
 * Reads the arguments from argv[first] on into *a: flags in any order
 * ("--name value" or "--name=value"), the input of review and default,
 * and "--" before an input that starts with a dash.  Returns -1 to go on,
 * or the exit status after the usage or a message.
 */
static int parse_args(int argc, char **argv, int first, struct args *a)
{
	bool positional_only = false;
	int i;

	for (i = first; i < argc; i++) {
		char *arg = argv[i], *eq;
		const struct flag *f;
		const char *value;
		char err[256];

		if (positional_only || arg[0] != '-' || !strcmp(arg, "-")) {
			if (a->cmd == CMD_SERVE || a->cmd == CMD_VERSION ||
			    a->cmd == CMD_CHECK || a->cmd == CMD_ENSURE ||
			    a->cmd == CMD_CLEANUP || a->file)
				return usage_error("unexpected argument", arg);
			a->file = arg;
			continue;
		}
		if (!strcmp(arg, "--")) {
			positional_only = true;
			continue;
		}
		f = find_switch(arg, a->cmd);
		if (f) {
			value = NULL;
		} else {
			if (arg[1] != '-' && !is_letter_flag(arg))
				return usage_error("unknown flag", arg);
			eq = strchr(arg, '=');
			if (eq) {
				*eq = '\0';
				value = eq + 1;
			} else if (i + 1 < argc) {
				value = argv[++i];
			} else {
				return usage_error("a value is missing for flag",
						   arg);
			}
			f = find_flag(arg + (arg[1] == '-' ? 2 : 1), a->cmd);
			if (!f)
				return usage_error("unknown flag", arg);
		}
		if (f->setting) {
			struct config_setting *cs = &a->settings[a->nsettings++];

			cs->set = f->setting;
			snprintf(cs->what, sizeof(cs->what), "%s%s", dashes(f),
				 f->name);
			cs->value = value;
			continue;
		}
		if (f->set(a, f, value, err, sizeof(err))) {
			fprintf(stderr, PROG ": %s\n", err);
			return 2;
		}
		if (a->help) {
			usage(stdout);
			return 0;
		}
	}
	return -1;
}

/*
 * Reads the file path (what names it in messages) into *out.  Returns 0,
 * or 2 after a message.
 */
static int read_source_file(const char *what, const char *path,
			    struct config_bytes *out, char **data)
{
	char err[600];

	if (file_read(path, CONFIG_FILE_MAX, data, &out->len, err,
		      sizeof(err))) {
		fprintf(stderr, PROG ": %s: %s\n", what, err);
		return 2;
	}
	out->data = *data;
	return 0;
}

/*
 * Builds the configuration from the files (each read once) and the flags,
 * and the hash of the files' bytes into sha256 (watch_hash(), as the
 * reload compares it; "" without a file).  HAMi's file is that of the
 * flag, else the config file's hamiDeviceConfig, whose copy goes to
 * *hami_key (the caller frees it; src->hami_path points at it).  Returns
 * 0, or 2 after a message that names the file, flag or key.
 */
static int load_config(struct config *cfg, struct config_source *src,
		       char **hami_key, char sha256[65])
{
	struct config_bytes file = { NULL, 0 }, hami = { NULL, 0 };
	struct watch_bytes files[WATCH_FILES_MAX];
	char err[600], *data = NULL, *hami_data = NULL;
	size_t n = 0;
	int rc = 2;

	sha256[0] = '\0';
	if (src->path) {
		if (read_source_file("--config", src->path, &file, &data))
			goto out;
		files[n].data = file.data;
		files[n++].len = file.len;
		if (!src->hami_path) {
			*hami_key = config_hami_path(file.data, file.len);
			src->hami_path = *hami_key;
		}
	}
	if (src->hami_path) {
		if (read_source_file(src->hami_from_flag ?
				     "--hami-device-config" :
				     "hamiDeviceConfig", src->hami_path,
				     &hami, &hami_data))
			goto out;
		files[n].data = hami.data;
		files[n++].len = hami.len;
	}
	if (n)
		watch_hash(files, n, sha256);
	if (config_build(cfg, src, &file, &hami, err, sizeof(err))) {
		fprintf(stderr, PROG ": %s\n", err);
		goto out;
	}
	rc = 0;
out:
	free(data);
	free(hami_data);
	return rc;
}

int main(int argc, char **argv)
{
	struct args a;
	struct config cfg;
	struct config_source src;
	char sha256[65], *hami_key = NULL;
	int status, first = 2;

	arena_setup();
	if (argc < 2 && isatty(STDIN_FILENO))
		return usage_error("a command is required", NULL);
	if (argc > 1 && (!strcmp(argv[1], "help") ||
			 !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		usage(stdout);
		return 0;
	}
	memset(&a, 0, sizeof(a));
	/* kustomize runs an exec KRM function without arguments: its
	 * ResourceList on stdin goes to `default` (behaviour §8). */
	if (argc < 2)
		a.cmd = CMD_DEFAULT, a.def.resource_list = true, first = 1;
	else if (!strcmp(argv[1], "serve"))
		a.cmd = CMD_SERVE;
	else if (!strcmp(argv[1], "review"))
		a.cmd = CMD_REVIEW;
	else if (!strcmp(argv[1], "default"))
		a.cmd = CMD_DEFAULT;
	else if (!strcmp(argv[1], "version") || !strcmp(argv[1], "--version"))
		a.cmd = CMD_VERSION;
	else if (!strcmp(argv[1], "check"))
		a.cmd = CMD_CHECK;
	else if (!strcmp(argv[1], "test"))
		a.cmd = CMD_TEST;
	else if (strcmp(argv[1], "certs"))
		return usage_error("unknown command", argv[1]);
	else if (argc > 2 && !strcmp(argv[2], "ensure"))
		a.cmd = CMD_ENSURE, first = 3;
	else if (argc > 2 && !strcmp(argv[2], "cleanup"))
		a.cmd = CMD_CLEANUP, first = 3;
	else
		return usage_error("certs: expected ensure or cleanup",
				   argc > 2 ? argv[2] : NULL);

	cmd_serve_options_init(&a.serve);
	cmd_check_options_init(&a.check);
	cmd_certs_options_init(&a.certs);
	a.settings = calloc((size_t)argc, sizeof(*a.settings));
	if (!a.settings) {
		fprintf(stderr, PROG ": out of memory\n");
		return 2;
	}
	status = parse_args(argc, argv, first, &a);
	if (status >= 0)
		goto out;
	if (a.cmd == CMD_VERSION) {
		status = cmd_version_run();
		goto out;
	}
	if (a.cmd == CMD_CHECK) {
		char err[300];

		status = cmd_check_options_check(&a.check, err, sizeof(err)) ?
				 usage_error(err, NULL) :
				 cmd_check_run(&a.check);
		goto out;
	}
	if (a.cmd == CMD_TEST) {
		status = cmd_test_run(a.file ? a.file : ".");
		goto out;
	}
	if (a.cmd == CMD_ENSURE || a.cmd == CMD_CLEANUP) {
		char err[300];
		bool ensure = a.cmd == CMD_ENSURE;

		status = cmd_certs_options_check(&a.certs, ensure, err,
						 sizeof(err)) ?
				 usage_error(err, NULL) :
			 ensure ? cmd_certs_ensure(&a.certs) :
				  cmd_certs_cleanup(&a.certs);
		goto out;
	}
	memset(&src, 0, sizeof(src));
	src.path = a.config_file;
	src.hami_path = a.hami_file;
	src.hami_from_flag = a.hami_file != NULL;
	src.settings = a.settings;
	src.nsettings = a.nsettings;
	status = load_config(&cfg, &src, &hami_key, sha256);
	if (status)
		goto out;
	switch (a.cmd) {
	case CMD_SERVE:
		a.serve.config_source = &src;
		a.serve.config_sha256 = sha256;
		status = cmd_serve_run(&cfg, &a.serve);
		break;
	case CMD_REVIEW:
		status = cmd_review_run(&cfg, a.file ? a.file : "-",
					&a.offline);
		break;
	case CMD_DEFAULT:
		status = cmd_default_run(&cfg, a.file ? a.file : "-", &a.def);
		break;
	case CMD_VERSION:
	case CMD_CHECK:
	case CMD_ENSURE:
	case CMD_CLEANUP:
	case CMD_TEST:
		break;
	}
	config_release(&cfg);
out:
	free(a.settings);
	free(hami_key);
	json_decref(a.groups);
	return status;
}
