/*
 * test_file.c - the file reader: whole files, the size limit at its
 * boundary, standard input, and the messages.
 */
#include <errno.h>
#include <unistd.h>

#include "test.h"

#include "file.h"

/* Writes n bytes of c to a new temporary file; returns its path (static). */
static const char *temp_file(char c, size_t n)
{
	static char path[64];
	FILE *f;
	int fd;

	snprintf(path, sizeof(path), "/tmp/test_file.XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "wb");
	assert_non_null(f);
	while (n--)
		assert_int_equal(fputc(c, f), (unsigned char)c);
	assert_int_equal(fclose(f), 0);
	return path;
}

static void test_file__whole(void **state)
{
	/* Around the first buffer (8 KiB) and its doublings. */
	static const size_t sizes[] = { 0, 1, 8191, 8192, 8193, 16384, 70000 };
	size_t i, len;
	char err[256], *data;

	(void)state;
	for (i = 0; i < NELEM(sizes); i++) {
		const char *path = temp_file('x', sizes[i]);

		assert_int_equal(file_read(path, 1 << 20, &data, &len, err,
					   sizeof(err)),
				 0);
		assert_int_equal(len, sizes[i]);
		assert_int_equal(data[len], '\0');
		assert_int_equal(strspn(data, "x"), len);
		free(data);
		unlink(path);
	}
}

static void test_file__limit(void **state)
{
	static const size_t limits[] = { 0, 1, 100, 8191, 8192, 8193, 20000 };
	size_t i, len;
	char err[256], want[256], *data = NULL;

	(void)state;
	for (i = 0; i < NELEM(limits); i++) {
		size_t max = limits[i];
		const char *path = temp_file('y', max);

		/* max bytes: read */
		assert_int_equal(file_read(path, max, &data, &len, err,
					   sizeof(err)),
				 0);
		assert_int_equal(len, max);
		free(data);
		unlink(path);

		/* one more: refused, named */
		path = temp_file('y', max + 1);
		data = NULL;
		errno = 0;
		assert_int_equal(file_read(path, max, &data, &len, err,
					   sizeof(err)),
				 -1);
		assert_int_equal(errno, EFBIG);
		assert_null(data);
		snprintf(want, sizeof(want), "%s: larger than %zu bytes", path,
			 max);
		assert_string_equal(err, want);
		unlink(path);
	}
}

static void test_file__unreadable(void **state)
{
	char err[256], want[256], *data = NULL;
	size_t len = 7;

	(void)state;
	assert_int_equal(file_read("/nonexistent/file", 100, &data, &len, err,
				   sizeof(err)),
			 -1);
	assert_int_equal(errno, ENOENT);
	snprintf(want, sizeof(want), "cannot read /nonexistent/file: %s",
		 strerror(ENOENT));
	assert_string_equal(err, want);
	assert_null(data);
	assert_int_equal(len, 7);

	/* A directory opens, but does not read. */
	assert_int_equal(file_read("/", 100, &data, &len, err, sizeof(err)),
			 -1);
	snprintf(want, sizeof(want), "cannot read /: %s", strerror(EISDIR));
	assert_string_equal(err, want);
}

static void test_file__stdin(void **state)
{
	int fds[2], saved = dup(0);
	char err[256], *data;
	size_t len;

	(void)state;
	assert_true(saved >= 0);
	assert_int_equal(pipe(fds), 0);
	assert_int_equal(write(fds[1], "{\"a\":1}", 7), 7);
	close(fds[1]);
	assert_true(dup2(fds[0], 0) == 0);
	close(fds[0]);
	clearerr(stdin);
	assert_int_equal(file_read(NULL, 100, &data, &len, err, sizeof(err)),
			 0);
	assert_int_equal(len, 7);
	assert_string_equal(data, "{\"a\":1}");
	free(data);

	/* Too much on standard input: named "-". */
	assert_int_equal(pipe(fds), 0);
	assert_int_equal(write(fds[1], "0123456789", 10), 10);
	close(fds[1]);
	assert_true(dup2(fds[0], 0) == 0);
	close(fds[0]);
	clearerr(stdin);
	assert_int_equal(file_read(NULL, 9, &data, &len, err, sizeof(err)),
			 -1);
	assert_string_equal(err, "-: larger than 9 bytes");

	assert_true(dup2(saved, 0) == 0);
	close(saved);
	clearerr(stdin);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_file__whole),
		cmocka_unit_test(test_file__limit),
		cmocka_unit_test(test_file__unreadable),
		cmocka_unit_test(test_file__stdin),
	};

	return cmocka_run_group_tests_name("file", tests, NULL, NULL);
}
