/*
 * core.c - the admission core alone: review_handlen() in a loop, without
 * HTTP or TLS, so that the benchmark can tell the server's share of a
 * request from the decision's.
 *
 *   core [-t MS] [-c CONFIG] FILE...
 *
 * For each FILE (an AdmissionReview), decides it with the built-in
 * configuration (or the config file CONFIG) for about MS milliseconds of CPU time (default 500), in
 * SLICES slices, and prints one line:
 *
 *   CORE file=FILE bytes=N calls=N us_per_call=X us_worst=Y ops=N
 *        outcome=patched
 *
 * (on one line), where X is the CPU time per call in the best slice and Y in
 * the worst: the machine may be shared, and the best slice is the one least
 * disturbed.
 * Exit status 0, or 1 when a file cannot be read or is not answered with
 * HTTP 200.  Under valgrind --tool=callgrind, use a small -t.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "arena.h"
#include "config.h"
#include "file.h"
#include "review.h"

#define SLICES 5

static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Decides the review in path for about ms of CPU time; 0 or -1. */
static int bench_file(const struct config *cfg, const char *path, long ms)
{
	struct review_answer ans;
	unsigned long calls = 0, n;
	double start, spent, per, best = 0, worst = 0;
	size_t len, ops;
	int slice;
	enum review_outcome outcome;
	char *body, err[256];
	int rc;

	if (file_read(path, SIZE_MAX, &body, &len, err, sizeof(err))) {
		fprintf(stderr, "core: cannot read '%s'\n", path);
		return -1;
	}
	review_answer_init(&ans);
	rc = review_handlen(cfg, body, len, &ans);
	ops = ans.ops;
	outcome = ans.outcome;
	review_answer_release(&ans);
	if (rc) {
		fprintf(stderr, "core: '%s' answered with HTTP %d\n", path,
			ans.http_status);
		free(body);
		return -1;
	}
	for (slice = 0; slice < SLICES; slice++) {
		n = 0;
		start = cpu_seconds();
		do {
			review_answer_init(&ans);
			rc |= review_handlen(cfg, body, len, &ans);
			review_answer_release(&ans);
			n++;
			spent = cpu_seconds() - start;
		} while (spent * 1000 * SLICES < (double)ms);
		per = spent * 1e6 / (double)n;
		if (!slice || per < best)
			best = per;
		if (!slice || per > worst)
			worst = per;
		calls += n;
	}
	free(body);
	if (rc) {
		fprintf(stderr, "core: '%s' failed in the loop\n", path);
		return -1;
	}
	printf("CORE file=%s bytes=%zu calls=%lu us_per_call=%.1f "
	       "us_worst=%.1f ops=%zu outcome=%s\n", path, len, calls, best,
	       worst, ops, review_outcome_name(outcome));
	return 0;
}

int main(int argc, char **argv)
{
	struct config cfg;
	char err[512] = "out of memory";
	long ms = 500;
	const char *config = NULL;
	char *end;
	int opt, i, status = 0;

	arena_setup(); /* as main.c does */
	while ((opt = getopt(argc, argv, "t:c:")) != -1) {
		if (opt == 'c') {
			config = optarg;
			continue;
		}
		if (opt != 't')
			goto usage;
		ms = strtol(optarg, &end, 10);
		if (*end || ms < 0 || ms > 60000)
			goto usage;
	}
	if (optind == argc)
		goto usage;
	if (config_init(&cfg) ||
	    (config && config_load_file(&cfg, config, err, sizeof(err))) ||
	    config_check(&cfg, err, sizeof(err))) {
		fprintf(stderr, "core: cannot set up the configuration: %s\n",
			err);
		config_release(&cfg);
		return 1;
	}
	for (i = optind; i < argc; i++)
		if (bench_file(&cfg, argv[i], ms))
			status = 1;
	config_release(&cfg);
	return status;
usage:
	fprintf(stderr, "usage: core [-t MS] [-c CONFIG] FILE...\n");
	return 1;
}
