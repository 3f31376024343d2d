/*
 * cmd_test.h - the `test` command (docs/behaviour.md §11): declarative
 * policy tests, each a vgpu-webhook-test.yaml naming manifests or
 * AdmissionReviews, an optional config, the requester, and what each
 * object must come to (defaulted as a file says, denied with a message,
 * left unchanged, these warnings).
 */
#ifndef CMD_TEST_H
#define CMD_TEST_H

/* The name of a test file, looked for under the directory given. */
#define CMD_TEST_FILE "vgpu-webhook-test.yaml"

/*
 * Runs every test file under path (a directory, searched in name order
 * and at most 16 levels deep, or one test file), one line per check on
 * stdout (PASS or FAIL, then the first difference), then "N passed, N
 * failed".  Returns 0 when every check passed, 1 when one failed (a test
 * file that cannot be read or is not valid counts as one failure), 2
 * when path cannot be read or holds no test file.
 */
int cmd_test_run(const char *path);

#endif /* CMD_TEST_H */
