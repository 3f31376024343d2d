/*
 * test_log.c - the log line: quoting and escaping in both formats, control
 * bytes, U+2028, U+2029 and invalid UTF-8 masked, long values cut, one line
 * per call, and lines gathered whole and in order when buffered.
 */
#include <unistd.h>

#include "test.h"

#include "log.h"

/*
 * Runs log_fields() with stderr sent to a temporary file and returns the
 * line written, without the date and time (which start the text line and
 * are the "time" member of the JSON line).  The caller frees it.
 */
static char *logged(bool json, const char *msg, const struct log_field *f,
		    size_t n)
{
	FILE *tmp = tmpfile();
	int saved = dup(STDERR_FILENO);
	char *line;
	long size;

	assert_non_null(tmp);
	assert_true(saved >= 0);
	assert_true(dup2(fileno(tmp), STDERR_FILENO) >= 0);
	log_setup(json, 0);
	log_fields(LOG_INFO, msg, f, n);
	assert_true(dup2(saved, STDERR_FILENO) >= 0);
	close(saved);
	size = lseek(fileno(tmp), 0, SEEK_END);
	assert_true(size > 0);
	line = calloc(1, (size_t)size + 1);
	assert_non_null(line);
	assert_int_equal(pread(fileno(tmp), line, (size_t)size, 0), size);
	fclose(tmp);
	/* exactly one line */
	assert_int_equal(line[size - 1], '\n');
	assert_null(memchr(line, '\n', (size_t)size - 1));
	return line;
}

/* The text line after "TIME " (and before the newline). */
static void check_text(const char *msg, const struct log_field *f, size_t n,
		       const char *want)
{
	char *line = logged(false, msg, f, n);
	char *rest = strchr(line, ' ');

	assert_non_null(rest);
	rest[strlen(rest) - 1] = '\0';
	assert_string_equal(rest + 1, want);
	free(line);
}

static void test_log__text_quoting(void **state)
{
	(void)state;
	check_text("decision",
		   (struct log_field[]){ LOG_STR("uid", "abc-1"),
					 LOG_STR("name", "a b"),
					 LOG_STR("q", "say \"hi\" \\ x=y"),
					 LOG_STR("empty", ""),
					 LOG_NUM("ops", 4) },
		   5,
		   "info decision uid=abc-1 name=\"a b\" "
		   "q=\"say \\\"hi\\\" \\\\ x=y\" empty=\"\" ops=4");
	/* control bytes and invalid UTF-8 never reach the line as they are */
	check_text("m", (struct log_field[]){ LOG_STR("v", "a\nb\x01\xff\xc3\xa9") },
		   1, "info m v=\"a\\x0ab\\x01\\xff\xc3\xa9\"");
}

static void test_log__json_escaping(void **state)
{
	char *line;
	json_t *doc;

	(void)state;
	line = logged(true, "decision",
		      (struct log_field[]){ LOG_STR("uid", "u\"1\\"),
					    LOG_STR("name", "x\ty\x7f\xff\xc3\xa9"),
					    LOG_NUM("latency_us", 171) },
		      3);
	doc = json_loads(line, 0, NULL);
	assert_non_null(doc);
	assert_string_equal(json_string_value(json_object_get(doc, "level")),
			    "info");
	assert_string_equal(json_string_value(json_object_get(doc, "msg")),
			    "decision");
	assert_string_equal(json_string_value(json_object_get(doc, "uid")),
			    "u\"1\\");
	assert_string_equal(json_string_value(json_object_get(doc, "name")),
			    "x\ty\x7f\xef\xbf\xbd\xc3\xa9");
	assert_int_equal(json_integer_value(json_object_get(doc, "latency_us")),
			 171);
	json_decref(doc);
	free(line);
}

/*
 * U+2028 and U+2029 are escaped in both formats (valid JSON either way,
 * but many log readers end a line there); U+2027 and U+202A, their
 * neighbours, are not.
 */
static void test_log__line_separators(void **state)
{
	static const char v[] = "a\xe2\x80\xa8" "b\xe2\x80\xa9" "c\xe2\x80\xa7\xe2\x80\xaa";
	char *line;
	json_t *doc;

	(void)state;
	line = logged(true, "m\xe2\x80\xa8", (struct log_field[]){ LOG_STR("v", v) },
		      1);
	assert_null(strstr(line, "\xe2\x80\xa8"));
	assert_null(strstr(line, "\xe2\x80\xa9"));
	assert_non_null(strstr(line, "\"msg\":\"m\\u2028\""));
	assert_non_null(strstr(line, "\"v\":\"a\\u2028b\\u2029c\xe2\x80\xa7\xe2\x80\xaa\""));
	doc = json_loads(line, 0, NULL);
	assert_non_null(doc);
	assert_string_equal(json_string_value(json_object_get(doc, "v")), v);
	json_decref(doc);
	free(line);

	check_text("m", (struct log_field[]){ LOG_STR("v", v) }, 1,
		   "info m v=\"a\\xe2\\x80\\xa8b\\xe2\\x80\\xa9c"
		   "\xe2\x80\xa7\xe2\x80\xaa\"");
}

/* A value is cut after 1024 bytes with "...", in both formats. */
static void test_log__long_values_cut(void **state)
{
	char big[3000];
	char *line;
	json_t *doc;
	const char *v;

	(void)state;
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	line = logged(true, "m", (struct log_field[]){ LOG_STR("v", big) }, 1);
	doc = json_loads(line, 0, NULL);
	assert_non_null(doc);
	v = json_string_value(json_object_get(doc, "v"));
	assert_int_equal(strlen(v), 1025 + 3);
	assert_string_equal(v + 1025, "...");
	json_decref(doc);
	free(line);

	line = logged(false, "m", (struct log_field[]){ LOG_STR("v", big) }, 1);
	assert_non_null(strstr(line, " v="));
	assert_int_equal(strlen(strstr(line, " v=") + 3), 1025 + 3 + 1);
	free(line);
}

/* The bytes of the file f from its start, NUL-terminated; freed by the
 * caller. */
static char *file_text(FILE *f)
{
	long size = lseek(fileno(f), 0, SEEK_END);
	char *text;

	assert_true(size >= 0);
	text = calloc(1, (size_t)size + 1);
	assert_non_null(text);
	assert_int_equal(pread(fileno(f), text, (size_t)size, 0), size);
	return text;
}

/* The number of lines of text, each ending in " n=N" for N = 0, 1, ...
 * in order; -1 when a line is out of order, cut or split. */
static int lines_in_order(const char *text)
{
	int n = 0;
	const char *p = text;

	while (*p) {
		const char *nl = strchr(p, '\n');
		char want[64];
		size_t wl;

		if (!nl)
			return -1;
		wl = (size_t)snprintf(want, sizeof(want), " n=%d", n);
		if ((size_t)(nl - p) < wl || memcmp(nl - wl, want, wl))
			return -1;
		n++;
		p = nl + 1;
	}
	return n;
}

/*
 * Buffered, the lines of log_event() wait for log_flush(); a line of
 * log_fields() goes out at once, after the lines gathered before it; a
 * full buffer is written before the line that does not fit (whole lines
 * only); turning buffering off writes the rest.
 */
static void test_log__buffered(void **state)
{
	FILE *tmp = tmpfile();
	int saved = dup(STDERR_FILENO), i;
	char pad[1001], *text;

	(void)state;
	memset(pad, 'p', sizeof(pad) - 1);
	pad[sizeof(pad) - 1] = '\0';
	assert_non_null(tmp);
	assert_true(saved >= 0);
	assert_true(dup2(fileno(tmp), STDERR_FILENO) >= 0);
	log_setup(false, 0);
	log_buffering(true);

	log_event(LOG_INFO, "m", (struct log_field[]){ LOG_NUM("n", 0) }, 1);
	log_event(LOG_INFO, "m", (struct log_field[]){ LOG_NUM("n", 1) }, 1);
	assert_int_equal(lseek(fileno(tmp), 0, SEEK_END), 0);
	log_flush();
	text = file_text(tmp);
	assert_int_equal(lines_in_order(text), 2);
	free(text);

	log_event(LOG_INFO, "m", (struct log_field[]){ LOG_NUM("n", 2) }, 1);
	log_fields(LOG_INFO, "m", (struct log_field[]){ LOG_NUM("n", 3) }, 1);
	text = file_text(tmp);
	assert_int_equal(lines_in_order(text), 4);
	assert_non_null(strstr(text, "info m n=3\n"));
	free(text);

	/* about 1 KiB a line: the 16 KiB buffer is written before it is
	 * passed, never in the middle of a line */
	for (i = 4; i < 40; i++) {
		log_event(LOG_INFO, "m",
			   (struct log_field[]){ LOG_STR("pad", pad),
						 LOG_NUM("n", i) }, 2);
		text = file_text(tmp);
		assert_true(lines_in_order(text) >= 4);
		free(text);
	}
	text = file_text(tmp);
	i = lines_in_order(text);
	assert_true(i > 4 + 10 && i < 40);
	free(text);

	log_buffering(false);
	text = file_text(tmp);
	assert_int_equal(lines_in_order(text), 40);
	free(text);
	log_event(LOG_INFO, "m", (struct log_field[]){ LOG_NUM("n", 40) }, 1);
	text = file_text(tmp);
	assert_int_equal(lines_in_order(text), 41);
	free(text);

	assert_true(dup2(saved, STDERR_FILENO) >= 0);
	close(saved);
	fclose(tmp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_log__text_quoting),
		cmocka_unit_test(test_log__json_escaping),
		cmocka_unit_test(test_log__line_separators),
		cmocka_unit_test(test_log__long_values_cut),
		cmocka_unit_test(test_log__buffered),
	};

	return cmocka_run_group_tests_name("log", tests, NULL, NULL);
}
