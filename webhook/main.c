/*
 * main.c - the vgpu-webhook command line: the flags, the configuration
 * they build, and the dispatch to serve, review, default, check,
 * certs ensure, certs cleanup, version, help or completion.
 *
 * One table (flags[] below) says everything of a flag: its spelling,
 * which commands take it, whether it takes a value, its line in the usage,
 * and its setter.  Setters of the command's options run as the flags are
 * read; setters of the configuration are collected into the config's
 * source (config.h), and config_build() runs them after the file, in the
 * order of the flags, so that a flag overrides the file (at start, and at
 * each reload of `serve`).  The usage, each command's help, the
 * suggestions for a misspelt command or flag and the shell completion
 * scripts are all made from that table and from commands[] below, so
 * that none of them can name a flag the parser does not take.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "addr.h"
#include "arena.h"
#include "certgen.h"
#include "compiler.h"
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
	CMD_CONFIG,
	CMD_TEST,
	CMD_HELP,
	CMD_COMPLETION,
};

#define ON_SERVE (1u << CMD_SERVE)
#define ON_CHECK (1u << CMD_CHECK)
#define ON_DEFAULT (1u << CMD_DEFAULT)
#define ON_ENSURE (1u << CMD_ENSURE)
#define ON_CLEANUP (1u << CMD_CLEANUP)
#define ON_TEST (1u << CMD_TEST)
#define ON_CERTS (ON_ENSURE | ON_CLEANUP)
#define ON_EVERY                                                     \
	(ON_SERVE | 1u << CMD_REVIEW | 1u << CMD_DEFAULT | 1u << CMD_VERSION | \
	 1u << CMD_CONFIG)
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
	{ "help", ON_EVERY | ON_CHECK | ON_CERTS | ON_TEST, NULL, NULL,
	  set_help, NULL },
	{ "h", ON_EVERY | ON_CHECK | ON_CERTS | ON_TEST, NULL, NULL, set_help,
	  NULL },
	{ "config", ON_EVERY, "FILE",
	  "policy configuration: JSON or YAML, or the\nchart's values file or ConfigMap",
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
	{ "namespace", ON_CERTS, "NS", "of the Secret and the Service (ensure:\nrequired), of the Helm release (cleanup)",
	  set_certs, NULL },
	{ "secret", ON_ENSURE, "NAME", "the kubernetes.io/tls Secret (required)", set_certs, NULL },
	{ "service", ON_ENSURE, "NAME", "the Service the names are of (required)", set_certs, NULL },
	{ "cluster-domain", ON_ENSURE, "D", "of the last name (default cluster.local)", set_certs, NULL },
	{ "validity", ON_ENSURE, "DURATION", "of a new CA and certificate (default\n365d; s, m, h or d)",
	  set_certs, NULL },
	{ "renew-before", ON_ENSURE, "DURATION", "renew what expires within this (default\n30d)",
	  set_certs, NULL },
	{ "create-only", ON_ENSURE, NULL, "keep a Secret that exists (renewal is left\nto a later run)",
	  set_certs, NULL },
	{ "helm-release", ON_CLEANUP, "NAME", "delete only a configuration of this Helm\nrelease (in --namespace)",
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

/* --- the commands -------------------------------------------------------- */

/* What the help says of a command. */
struct command_info {
	const char *name;     /* as typed: "serve", "certs ensure" */
	enum command cmd;
	const char *operands; /* in the synopsis, after "[flags]"; or "" */
	const char *summary;  /* "\n" between lines */
	const char *examples; /* command lines, "\n" between them */
	const char *exits;    /* "N  meaning" lines, "\n" between them */
};

static const struct command_info commands[] = {
	{ "serve", CMD_SERVE, "",
	  "Serve the mutating admission webhook over HTTPS (POST /mutate),\n"
	  "with /metrics, /healthz and /readyz on --metrics-listen.  The\n"
	  "configuration is read again when its file changes.",
	  PROG " serve --tls-cert-file tls.crt --tls-private-key-file tls.key "
	  "--config config.json",
	  "0  a clean shutdown after SIGTERM or SIGINT\n"
	  "1  the address cannot be bound, or requests dropped at shutdown\n"
	  "2  a usage, certificate or configuration error" },
	{ "review", CMD_REVIEW, "[FILE|-]",
	  "Decide one AdmissionReview (v1 or v1beta1) as serve would and\n"
	  "write its response on stdout (standard input without FILE).",
	  PROG " review --config config.json review.json\n"
	  PROG " review --user system:serviceaccount:kube-system:hami-scheduler "
	  "update.json",
	  "0  a response was written (allowed or denied)\n"
	  "1  the input is unreadable or not an AdmissionReview\n"
	  "2  a usage or configuration error" },
	{ "default", CMD_DEFAULT, "[FILE|-]",
	  "Default manifests (JSON or YAML: one object, a stream or a List):\n"
	  "each Pod and workload pod template decided as serve decides a Pod\n"
	  "CREATE, written back in the input's format; warnings on stderr.",
	  "helm template ml ./chart | " PROG " default --namespace ml "
	  ">rendered.yaml\n"
	  PROG " default --check --config config.json rendered.yaml",
	  "0  allowed (with --check: nothing would change)\n"
	  "1  an object is denied (each denial on stderr, stdout empty)\n"
	  "2  unreadable input, a syntax error, a limit, or a usage or\n"
	  "   configuration error\n"
	  "3  with --check: something would change" },
	{ "check", CMD_CHECK, "",
	  "Send a running webhook one pod asking for 1 --resource and check\n"
	  "its answer: HTTP 200, the uid echoed, allowed, a JSON Patch that\n"
	  "applies and sets spec.schedulerName.",
	  PROG " check --url https://127.0.0.1:8443/mutate --ca-file ca.crt "
	  "--server-name vgpu-webhook.vgpu-system.svc",
	  "0  the webhook answered correctly\n"
	  "1  it did not (the reason on stderr)\n"
	  "2  a usage error" },
	{ "certs ensure", CMD_ENSURE, "",
	  "Make or renew the webhook's CA and serving certificate in a\n"
	  "kubernetes.io/tls Secret, and put the CA into the caBundle of\n"
	  "the webhook configurations.",
	  PROG " certs ensure --namespace vgpu-system --secret vgpu-webhook-tls "
	  "--service vgpu-webhook --webhook vgpu-webhook-vgpu-system",
	  "0  done (one line per object on stdout)\n"
	  "1  an API error, naming the object, the HTTP status and the message\n"
	  "2  a usage error" },
	{ "certs cleanup", CMD_CLEANUP, "",
	  "Delete the webhook configurations (before the server goes away).",
	  PROG " certs cleanup --namespace vgpu-system --helm-release "
	  "vgpu-webhook --webhook vgpu-webhook-vgpu-system "
	  "--validating-webhook vgpu-webhook-vgpu-system",
	  "0  done (one line per object on stdout)\n"
	  "1  an API error, naming the object, the HTTP status and the message\n"
	  "2  a usage error" },
	{ "config", CMD_CONFIG, "",
	  "Print the configuration the flags and files give, as the JSON\n"
	  "file that would give it (what serve, review and default use).",
	  PROG " config --config charts/vgpu-webhook/values.yaml\n"
	  "kubectl -n vgpu-system get configmap vgpu-webhook-config -o yaml | "
	  PROG " config --config /dev/stdin",
	  "0  the configuration was printed\n"
	  "2  a usage or configuration error" },
	{ "test", CMD_TEST, "[DIR|FILE]",
	  "Run the declarative policy tests: every vgpu-webhook-test.yaml\n"
	  "under DIR (default .), or FILE; a PASS or FAIL line per check,\n"
	  "the first difference of a failure, then \"N passed, N failed\".",
	  PROG " test examples/policy-tests",
	  "0  every check passed\n"
	  "1  a check failed\n"
	  "2  nothing to run, a test file that cannot be read, or a usage\n"
	  "   error" },
	{ "version", CMD_VERSION, "",
	  "Print the version, then the build's revision and date.",
	  PROG " version",
	  "0  always" },
	{ "help", CMD_HELP, "[COMMAND]",
	  "Print the usage, or the help of one command.",
	  PROG " help default",
	  "0  the help was printed\n"
	  "2  an unknown command" },
	{ "completion", CMD_COMPLETION, "bash|zsh",
	  "Print a shell completion script, made from the flags the binary\n"
	  "takes.",
	  "source <(" PROG " completion bash)\n"
	  PROG " completion zsh >\"${fpath[1]}/_" PROG "\"",
	  "0  the script was printed\n"
	  "2  no shell or an unknown one" },
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

/* What the help says of cmd (serve's for an unknown value). */
static const struct command_info *command_info(enum command cmd)
{
	size_t i;

	for (i = 0; i < NCOMMANDS; i++)
		if (commands[i].cmd == cmd)
			return &commands[i];
	return &commands[0];
}

/* Whether the flag f is one of the command c's. */
static bool flag_of(const struct flag *f, const struct command_info *c)
{
	return f->commands & 1u << c->cmd;
}

/*
 * Whether the help, the man page and the completion list f as c's:
 * version takes the configuration's flags and ignores them, so they are
 * not listed as its own; -h and --help have a line of their own.
 */
static bool flag_listed(const struct flag *f, const struct command_info *c)
{
	return f->help && flag_of(f, c) &&
	       !(c->cmd == CMD_VERSION && f->commands & ON_SERVE);
}

/* --- the usage and the help ---------------------------------------------- */

static const char usage_commands[] =
	"usage: " PROG " serve   [flags]\n"
	"       " PROG " review  [flags] [FILE|-]   decide one AdmissionReview\n"
	"       " PROG " default [flags] [FILE|-]   default manifests (JSON or YAML)\n"
	"       " PROG " check   [flags]   check a running webhook\n"
	"       " PROG " test    [DIR|FILE]   run the policy tests under DIR\n"
	"       " PROG " certs ensure  [flags]   make or renew the certificate\n"
	"       " PROG " certs cleanup [flags]   delete the webhook configurations\n"
	"       " PROG " config  [flags]   print the configuration\n"
	"       " PROG " version\n"
	"       " PROG " help [COMMAND]   a command's flags, examples and exit status\n"
	"       " PROG " completion bash|zsh   a shell completion script\n"
	"\n";

#define HELP_COLUMN 28

/* "--name" or "-v". */
static const char *dashes(const struct flag *f)
{
	return f->name[1] ? "--" : "-";
}

/* Writes text's lines, each after indent spaces. */
static void print_lines(FILE *out, int indent, const char *text)
{
	for (;;) {
		size_t len = strcspn(text, "\n");

		fprintf(out, "%*s%.*s\n", indent, "", (int)len, text);
		if (!text[len])
			break;
		text += len + 1;
	}
}

/* One flag of the usage: its spelling and its help, in a column. */
static void print_flag(FILE *out, const struct flag *f)
{
	const char *line = f->help;
	int n = fprintf(out, "  %s%s%s%s", dashes(f), f->name,
			f->value ? " " : "", f->value ? f->value : "");
	size_t len = strcspn(line, "\n");

	fprintf(out, "%*s%.*s\n", n < HELP_COLUMN ? HELP_COLUMN - n : 1, "",
		(int)len, line);
	if (line[len])
		print_lines(out, HELP_COLUMN, line + len + 1);
}

/* The flags of the usage, in groups of the commands that take them. */
static void usage(FILE *out)
{
	static const struct {
		const char *title;
		unsigned commands;
	} groups[] = {
		{ "flags of serve, review, default and config:", ON_EVERY },
		{ "flags of serve:", ON_SERVE },
		{ "flags of check:", ON_CHECK },
		{ "flags of certs ensure:", ON_ENSURE },
		{ "flags of certs cleanup:", ON_CLEANUP },
		{ "flags of certs ensure and cleanup:", ON_CERTS },
		{ "flags of review and default:", ON_OFFLINE },
		{ "flags of default:", ON_DEFAULT },
	};
	size_t g, i;

	fputs(usage_commands, out);
	for (g = 0; g < sizeof(groups) / sizeof(groups[0]); g++) {
		fprintf(out, "%s\n", groups[g].title);
		for (i = 0; i < NFLAGS; i++)
			if (flags[i].help &&
			    flags[i].commands == groups[g].commands)
				print_flag(out, &flags[i]);
	}
	fputs("\nRun \"" PROG " help COMMAND\" for a command's examples and exit "
	      "status.\n", out);
}

/* The help of one command: synopsis, summary, flags, examples, exits. */
static void command_help(FILE *out, const struct command_info *c)
{
	size_t i;

	fprintf(out, "usage: " PROG " %s%s%s%s\n\n", c->name,
		c->cmd == CMD_VERSION || c->cmd == CMD_HELP ||
				c->cmd == CMD_COMPLETION ? "" : " [flags]",
		c->operands[0] ? " " : "", c->operands);
	print_lines(out, 0, c->summary);
	fputs("\nflags:\n", out);
	for (i = 0; i < NFLAGS; i++)
		if (flag_listed(&flags[i], c))
			print_flag(out, &flags[i]);
	fprintf(out, "  -h, --help%*sthis help\n", HELP_COLUMN - 12, "");
	fputs("\nexamples:\n", out);
	print_lines(out, 2, c->examples);
	fputs("\nexit status:\n", out);
	print_lines(out, 2, c->exits);
}

/*
 * The nearest candidate to a word: within an edit distance of 2
 * (text_distancen()), and of less than half the candidate's length, so
 * that a short word is not taken for any other; the first of the
 * nearest.  Fed one candidate at a time by suggest_consider().
 */
struct suggestion {
	bool found;
	size_t index; /* the caller's number of the best candidate */
	size_t distance;
};

static void suggest_consider(struct suggestion *s, const char *word,
			     size_t len, const char *candidate, size_t index)
{
	size_t n = strlen(candidate), d = text_distancen(word, len, candidate, n);

	if (d <= 2 && 2 * d < n && (!s->found || d < s->distance)) {
		s->found = true;
		s->index = index;
		s->distance = d;
	}
}

/*
 * Prints "PROG: MESSAGE" on stderr, then the usage of c (the general
 * usage when c is NULL).  Returns the exit status 2.
 */
static int usage_errorf(const struct command_info *c, const char *fmt, ...)
	COMPILER_PRINTF(2, 3);

static int usage_errorf(const struct command_info *c, const char *fmt, ...)
{
	va_list ap;

	fputs(PROG ": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\n\n", stderr);
	if (!c) {
		usage(stderr);
		return 2;
	}
	fprintf(stderr, "usage: " PROG " %s [flags]%s%s\n"
		"Run \"" PROG " help %s\" for its flags.\n", c->name,
		c->operands[0] ? " " : "", c->operands, c->name);
	return 2;
}

/* The error for a command word that names no command, with a suggestion. */
static int unknown_command(const char *word)
{
	static const char *const words[] = { "serve", "review", "default",
					     "check", "certs", "config",
					     "version", "help", "completion" };
	struct suggestion s = { false, 0, 0 };
	size_t i;

	for (i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		suggest_consider(&s, word, strlen(word), words[i], i);
	if (s.found)
		return usage_errorf(NULL,
				    "unknown command \"%.64s\" (did you mean \"%s\"?)",
				    word, words[s.index]);
	return usage_errorf(NULL, "unknown command \"%.64s\"", word);
}

/* --- shell completion ---------------------------------------------------- */

/* What completes a flag's value: files, words, or nothing. */
static bool value_is_file(const struct flag *f)
{
	return f->value && (!strcmp(f->value, "FILE") || !strcmp(f->value, "F"));
}

static bool value_is_words(const struct flag *f)
{
	return f->value && strchr(f->value, '|');
}

/* Writes the words of "a|b|c" with sep between them. */
static void print_words(FILE *out, const char *words, const char *sep)
{
	size_t len;

	for (;;) {
		len = strcspn(words, "|");
		fprintf(out, "%.*s", (int)len, words);
		if (!words[len])
			break;
		fputs(sep, out);
		words += len + 1;
	}
}

/* The words of the commands after "PROG", in order: "certs" once. */
static void print_command_words(FILE *out)
{
	size_t i;

	for (i = 0; i < NCOMMANDS; i++) {
		if (commands[i].cmd == CMD_CLEANUP)
			continue;
		fprintf(out, "%s%.*s", i ? " " : "",
			(int)strcspn(commands[i].name, " "), commands[i].name);
	}
}

/*
 * The bash completion script: a function completing the command words,
 * then by command its flags, the files or words of a flag's value, and
 * files for the input of review and default.
 */
static void completion_bash(FILE *out)
{
	size_t c, i;

	fputs("# bash completion for " PROG ", printed by `" PROG
	      " completion bash`\n"
	      "_vgpu_webhook()\n{\n"
	      "\tlocal cur=${COMP_WORDS[COMP_CWORD]} "
	      "prev=${COMP_WORDS[COMP_CWORD-1]}\n"
	      "\tlocal cmd=${COMP_WORDS[1]} flags= files=\n"
	      "\tif ((COMP_CWORD == 1)); then\n"
	      "\t\tCOMPREPLY=($(compgen -W '", out);
	print_command_words(out);
	fputs("' -- \"$cur\"))\n\t\treturn\n\tfi\n"
	      "\tcase $cmd in\n"
	      "\thelp)\n\t\t((COMP_CWORD == 2)) && COMPREPLY=($(compgen -W '",
	      out);
	print_command_words(out);
	fputs("' -- \"$cur\"))\n\t\treturn ;;\n"
	      "\tcompletion)\n\t\t((COMP_CWORD == 2)) && "
	      "COMPREPLY=($(compgen -W 'bash zsh' -- \"$cur\"))\n"
	      "\t\treturn ;;\n"
	      "\tcerts)\n\t\tif ((COMP_CWORD == 2)); then\n"
	      "\t\t\tCOMPREPLY=($(compgen -W 'ensure cleanup' -- \"$cur\"))\n"
	      "\t\t\treturn\n\t\tfi\n"
	      "\t\tcmd=\"certs ${COMP_WORDS[2]}\" ;;\n"
	      "\tesac\n"
	      "\tcase $cmd in\n", out);
	for (c = 0; c < NCOMMANDS; c++) {
		const struct command_info *ci = &commands[c];

		if (ci->cmd == CMD_HELP || ci->cmd == CMD_COMPLETION)
			continue;
		fprintf(out, "\t'%s')\n\t\tcase $prev in\n", ci->name);
		for (i = 0; i < NFLAGS; i++) {
			const struct flag *f = &flags[i];

			if (!flag_listed(f, ci) || !f->value)
				continue;
			fprintf(out, "\t\t%s%s)", dashes(f), f->name);
			if (value_is_file(f)) {
				fputs(" COMPREPLY=($(compgen -f -- \"$cur\"))"
				      " ;;\n", out);
			} else if (value_is_words(f)) {
				fputs(" COMPREPLY=($(compgen -W '", out);
				print_words(out, f->value, " ");
				fputs("' -- \"$cur\")) ;;\n", out);
			} else {
				fputs(" ;;\n", out);
			}
		}
		fputs("\t\t*) false ;;\n\t\tesac && return\n\t\tflags='--help",
		      out);
		for (i = 0; i < NFLAGS; i++)
			if (flag_listed(&flags[i], ci))
				fprintf(out, " %s%s", dashes(&flags[i]),
					flags[i].name);
		fputs("'\n", out);
		if (ci->operands[0])
			fputs("\t\tfiles=1\n", out);
		fputs("\t\t;;\n", out);
	}
	fputs("\tesac\n"
	      "\tif [[ $cur == -* ]]; then\n"
	      "\t\tCOMPREPLY=($(compgen -W \"$flags\" -- \"$cur\"))\n"
	      "\telif [[ -n $files ]]; then\n"
	      "\t\tCOMPREPLY=($(compgen -f -- \"$cur\"))\n"
	      "\tfi\n"
	      "}\n"
	      "complete -o filenames -F _vgpu_webhook " PROG "\n", out);
}

/*
 * Writes text for zsh's _arguments inside '...': its lines joined by
 * spaces, with what ends a description or a field (brackets, colons)
 * escaped.
 */
static void print_zsh_text(FILE *out, const char *text)
{
	for (; *text; text++) {
		if (*text == '\'')
			fputs("'\\''", out);
		else if (*text == '\n')
			fputc(' ', out);
		else if (strchr("[]:\\", *text))
			fprintf(out, "\\%c", *text);
		else
			fputc(*text, out);
	}
}

/*
 * The zsh completion script (for fpath, as _vgpu-webhook): the command
 * words, then _arguments with the command's flags, each with its help
 * and what completes its value.
 */
static void completion_zsh(FILE *out)
{
	size_t c, i;

	fputs("#compdef " PROG "\n"
	      "# zsh completion for " PROG ", printed by `" PROG
	      " completion zsh`\n"
	      "_vgpu_webhook() {\n"
	      "\tlocal cmd=${words[2]}\n"
	      "\tif (( CURRENT == 2 )); then\n"
	      "\t\tcompadd -- ", out);
	print_command_words(out);
	fputs("\n\t\treturn\n\tfi\n"
	      "\tcase $cmd in\n"
	      "\thelp) (( CURRENT == 3 )) && compadd -- ", out);
	print_command_words(out);
	fputs("; return ;;\n"
	      "\tcompletion) (( CURRENT == 3 )) && compadd -- bash zsh; "
	      "return ;;\n"
	      "\tcerts)\n"
	      "\t\tif (( CURRENT == 3 )); then compadd -- ensure cleanup; "
	      "return; fi\n"
	      "\t\tcmd=\"certs ${words[3]}\"\n"
	      "\t\tshift words; (( CURRENT-- )) ;;\n"
	      "\tesac\n"
	      "\tshift words; (( CURRENT-- ))\n"
	      "\tcase $cmd in\n", out);
	for (c = 0; c < NCOMMANDS; c++) {
		const struct command_info *ci = &commands[c];

		if (ci->cmd == CMD_HELP || ci->cmd == CMD_COMPLETION)
			continue;
		fprintf(out, "\t'%s') _arguments -s -S \\\n"
			"\t\t'(- *)'{-h,--help}'[this help]'", ci->name);
		for (i = 0; i < NFLAGS; i++) {
			const struct flag *f = &flags[i];

			if (!flag_listed(f, ci))
				continue;
			fprintf(out, " \\\n\t\t'%s%s%s%s[",
				f->set == set_group ? "*" : "", dashes(f),
				f->name, f->value && f->name[1] ? "=" : "");
			print_zsh_text(out, f->help);
			fputc(']', out);
			if (f->value) {
				fputc(':', out);
				print_zsh_text(out, f->value);
				fputc(':', out);
				if (value_is_file(f)) {
					fputs("_files", out);
				} else if (value_is_words(f)) {
					fputc('(', out);
					print_words(out, f->value, " ");
					fputc(')', out);
				} else {
					fputc(' ', out);
				}
			}
			fputc('\'', out);
		}
		if (ci->operands[0])
			fputs(" \\\n\t\t'1::FILE:_files'", out);
		fputs(" ;;\n", out);
	}
	fputs("\tesac\n}\n"
	      "if [[ $zsh_eval_context[-1] == loadautofunc ]]; then\n"
	      "\t_vgpu_webhook \"$@\"\n"
	      "else\n"
	      "\tcompdef _vgpu_webhook " PROG "\n"
	      "fi\n", out);
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
		&o->kube.token_file, &o->helm_release,
	};
	static const char *const names[] = {
		"namespace", "secret", "service", "cluster-domain", "webhook",
		"validating-webhook", "kube-server", "kube-ca", "kube-token-file",
		"helm-release",
	};
	uint64_t v;
	size_t i;

	if (!strcmp(f->name, "create-only")) {
		o->create_only = true;
		return 0;
	}

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

/*
 * Whether arg[0..len) spells the flag f: "--name", or "-n" for a
 * one-letter name (and "--n" for one that takes a value).
 */
static bool flag_spelled(const struct flag *f, const char *arg, size_t len)
{
	size_t n = strlen(f->name), d = strlen(dashes(f));

	if (len == d + n && !strncmp(arg, dashes(f), d) &&
	    !strncmp(arg + d, f->name, n))
		return true;
	return f->value && n == 1 && len == 3 && !strncmp(arg, "--", 2) &&
	       arg[2] == f->name[0];
}

/* The flag of c that arg[0..len) spells, or NULL. */
static const struct flag *find_flag(const struct command_info *c,
				    const char *arg, size_t len)
{
	size_t i;

	for (i = 0; i < NFLAGS; i++)
		if (flag_of(&flags[i], c) && flag_spelled(&flags[i], arg, len))
			return &flags[i];
	return NULL;
}

/* Whether c lists a flag that arg[0..len) spells. */
static bool takes(const struct command_info *c, const char *arg, size_t len)
{
	size_t i;

	for (i = 0; i < NFLAGS; i++)
		if (flag_listed(&flags[i], c) && flag_spelled(&flags[i], arg, len))
			return true;
	return false;
}

/*
 * The error for arg[0..len), a flag that c does not take: the commands
 * it belongs to when another takes it, else "unknown flag" and the
 * nearest of c's own flags.  Returns the exit status 2.
 */
static int unknown_flag(const struct command_info *c, const char *arg,
			size_t len)
{
	struct suggestion s = { false, 0, 0 };
	char owners[200] = "";
	const char *name;
	size_t i, j, n = 0, at = 0;

	/* The commands that take it, "a", "a and b", "a, b and c". */
	for (j = 0; j < NCOMMANDS; j++)
		if (&commands[j] != c && takes(&commands[j], arg, len))
			n++;
	for (j = 0, i = 0; j < NCOMMANDS && at < sizeof(owners); j++) {
		if (&commands[j] == c || !takes(&commands[j], arg, len))
			continue;
		i++;
		at += (size_t)snprintf(owners + at, sizeof(owners) - at, "%s%s",
				       i == 1 ? "" : i == n ? " and " : ", ",
				       commands[j].name);
	}
	if (n)
		return usage_errorf(c, "flag \"%.*s\" belongs to %s, not to %s",
				    (int)len, arg, owners, c->name);
	name = arg + strspn(arg, "-");
	for (i = 0; i < NFLAGS; i++)
		if (flag_listed(&flags[i], c) ||
		    (flag_of(&flags[i], c) && flags[i].set == set_help))
			suggest_consider(&s, name, len - (size_t)(name - arg),
					 flags[i].name, i);
	if (s.found)
		return usage_errorf(c, "unknown flag \"%.*s\" (did you mean \"%s%s\"?)",
				    (int)len, arg, dashes(&flags[s.index]),
				    flags[s.index].name);
	return usage_errorf(c, "unknown flag \"%.*s\"", (int)len, arg);
}

/*
 * Reads the arguments from argv[first] on into *a: flags in any order
 * ("--name value" or "--name=value"), the input of review and default,
 * and "--" before an input that starts with a dash.  Returns -1 to go on,
 * or the exit status after the help or a message.
 */
static int parse_args(int argc, char **argv, int first, struct args *a)
{
	const struct command_info *c = command_info(a->cmd);
	bool positional_only = false;
	int i;

	for (i = first; i < argc; i++) {
		const char *arg = argv[i], *value;
		const struct flag *f;
		size_t len;
		char err[256];

		if (positional_only || arg[0] != '-' || !strcmp(arg, "-")) {
			if (!c->operands[0] || a->file)
				return usage_errorf(c, "unexpected argument \"%.200s\"",
						    arg);
			a->file = arg;
			continue;
		}
		if (!strcmp(arg, "--")) {
			positional_only = true;
			continue;
		}
		len = strcspn(arg, "=");
		f = find_flag(c, arg, len);
		if (!f)
			return unknown_flag(c, arg, len);
		if (!f->value && arg[len])
			return usage_errorf(c, "flag \"%.*s\" takes no value (\"%.64s\")",
					    (int)len, arg, arg + len + 1);
		if (!f->value)
			value = NULL;
		else if (arg[len])
			value = arg + len + 1;
		else if (i + 1 < argc)
			value = argv[++i];
		else
			return usage_errorf(c, "flag \"%s\" needs a value (%s)",
					    arg, f->value);
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
			command_help(stdout, c);
			return 0;
		}
	}
	return -1;
}

static int help_run(int argc, char **argv);

/* The help of both certs commands on stdout.  Returns the exit status 0. */
static int certs_help(void)
{
	command_help(stdout, command_info(CMD_ENSURE));
	fputc('\n', stdout);
	command_help(stdout, command_info(CMD_CLEANUP));
	return 0;
}

/*
 * The command that argv[1] (and argv[2] after "certs") names into *cmd,
 * and the index of its first argument into *first.  Returns -1, or the
 * exit status 2 after a message with the nearest command.
 */
static int command_find(int argc, char **argv, enum command *cmd, int *first)
{
	static const char *const subs[] = { "ensure", "cleanup" };
	struct suggestion s = { false, 0, 0 };
	size_t i;

	*first = 2;
	if (!strcmp(argv[1], "--version")) {
		*cmd = CMD_VERSION;
		return -1;
	}
	if (strcmp(argv[1], "certs")) {
		for (i = 0; i < NCOMMANDS; i++)
			if (!strcmp(argv[1], commands[i].name)) {
				*cmd = commands[i].cmd;
				return -1;
			}
		return unknown_command(argv[1]);
	}
	*first = 3;
	if (argc > 2 && !strcmp(argv[2], "ensure")) {
		*cmd = CMD_ENSURE;
		return -1;
	}
	if (argc > 2 && !strcmp(argv[2], "cleanup")) {
		*cmd = CMD_CLEANUP;
		return -1;
	}
	if (argc > 2 && (!strcmp(argv[2], "--help") || !strcmp(argv[2], "-h")))
		return certs_help();
	if (argc < 3)
		return usage_errorf(NULL, "certs: expected ensure or cleanup");
	for (i = 0; i < 2; i++)
		suggest_consider(&s, argv[2], strlen(argv[2]), subs[i], i);
	if (s.found)
		return usage_errorf(NULL, "certs: unknown command \"%.64s\" (did you mean \"%s\"?)",
				    argv[2], subs[s.index]);
	return usage_errorf(NULL, "certs: expected ensure or cleanup, not \"%.64s\"",
			    argv[2]);
}

/*
 * help [COMMAND] (argv[0] is "help", or "--help"; "certs" alone is the
 * help of both certs commands): the usage, or the command's help, on
 * stdout.  Returns the exit status.
 */
static int help_run(int argc, char **argv)
{
	char name[64];
	size_t i;

	if (argc < 2) {
		usage(stdout);
		return 0;
	}
	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		command_help(stdout, command_info(CMD_HELP));
		return 0;
	}
	if (argc > 3 || (argc == 3 && strcmp(argv[1], "certs")))
		return usage_errorf(command_info(CMD_HELP),
				    "unexpected argument \"%.200s\"",
				    argv[argc - 1]);
	snprintf(name, sizeof(name), "%s%s%.40s", argv[1], argc == 3 ? " " : "",
		 argc == 3 ? argv[2] : "");
	for (i = 0; i < NCOMMANDS; i++)
		if (!strcmp(name, commands[i].name)) {
			command_help(stdout, &commands[i]);
			return 0;
		}
	if (!strcmp(name, "certs"))
		return certs_help();
	return unknown_command(name);
}

/* completion bash|zsh (argv[0] is "completion"): the script on stdout. */
static int completion_run(int argc, char **argv)
{
	const struct command_info *c = command_info(CMD_COMPLETION);

	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		command_help(stdout, c);
		return 0;
	}
	if (argc < 2)
		return usage_errorf(c, "a shell is required (bash or zsh)");
	if (argc > 2)
		return usage_errorf(c, "unexpected argument \"%.200s\"",
				    argv[2]);
	if (!strcmp(argv[1], "bash"))
		completion_bash(stdout);
	else if (!strcmp(argv[1], "zsh"))
		completion_zsh(stdout);
	else
		return usage_errorf(c, "unknown shell \"%.64s\" (bash or zsh)",
				    argv[1]);
	return fflush(stdout) ? 1 : 0;
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

/* config: cfg as its JSON file on stdout.  Returns the exit status. */
static int print_config(const struct config *cfg)
{
	json_t *dump = config_dump(cfg);
	int rc = !dump || json_dumpf(dump, stdout, JSON_INDENT(2)) ||
		 fputc('\n', stdout) == EOF || fflush(stdout);

	json_decref(dump);
	if (rc)
		fprintf(stderr, PROG ": config: cannot write the configuration\n");
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
		return usage_errorf(NULL, "a command is required");
	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")))
		return help_run(argc - 1, argv + 1);
	memset(&a, 0, sizeof(a));
	if (argc < 2) {
		/* kustomize runs an exec KRM function without arguments: its
		 * ResourceList on stdin goes to `default` (behaviour §8). */
		a.cmd = CMD_DEFAULT;
		a.def.resource_list = true;
		first = 1;
	} else {
		status = command_find(argc, argv, &a.cmd, &first);
		if (status >= 0)
			return status;
	}
	if (a.cmd == CMD_HELP || a.cmd == CMD_COMPLETION)
		return (a.cmd == CMD_HELP ? help_run :
			completion_run)(argc - 1, argv + 1);

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
				 usage_errorf(command_info(a.cmd), "%s", err) :
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
				 usage_errorf(command_info(a.cmd), "%s", err) :
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
	case CMD_CONFIG:
		status = print_config(&cfg);
		break;
	case CMD_VERSION:
	case CMD_CHECK:
	case CMD_ENSURE:
	case CMD_CLEANUP:
	case CMD_TEST:
	case CMD_HELP:
	case CMD_COMPLETION:
		break;
	}
	config_release(&cfg);
out:
	free(a.settings);
	free(hami_key);
	json_decref(a.groups);
	return status;
}
