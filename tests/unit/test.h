/*
 * test.h - what the cmocka programs share: the headers cmocka needs, the
 * size of a table, expectations that count instead of stopping, a file
 * reader, a JSON loader for test inputs, deep documents, a fixture that
 * makes the built-in config for each test, and a measure of the stack a
 * function uses.
 *
 * Everything here is a macro or a static inline function, so that each
 * program takes what it uses and nothing else.
 */
#ifndef TEST_H
#define TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

/* The number of elements of an array (not of a pointer). */
#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/*
 * Prints a mismatch and counts it in `failures`, an int the test file
 * defines, without stopping: a table-driven test shows every failing row
 * in one run, then asserts that failures is 0.
 */
#define EXPECT(cond, ...)                                                     \
	do {                                                                  \
		if (!(cond)) {                                                \
			print_error("%s:%d: ", __FILE__, __LINE__);           \
			print_error(__VA_ARGS__);                             \
			print_error("\n");                                    \
			failures++;                                           \
		}                                                             \
	} while (0)

/*
 * Reads the file at path whole.  Returns its bytes with a NUL after them
 * and their number in *len (the caller frees them), or NULL when the file
 * cannot be opened; a failure after the open fails the test.
 */
static inline char *test_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *data;
	long n;

	if (!f)
		return NULL;
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	assert_true(n >= 0);
	rewind(f);
	data = malloc((size_t)n + 1);
	assert_non_null(data);
	assert_int_equal(fread(data, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	data[n] = '\0';
	*len = (size_t)n;
	return data;
}

/*
 * Parses text, a JSON input written in the test, as the webhook parses a
 * request (duplicate keys refused, \u0000 allowed); it may be any JSON
 * value, a scalar too.  Returns a new reference; text that does not parse
 * fails the test with jansson's message.
 */
static inline json_t *test_json(const char *text)
{
	json_error_t jerr;
	json_t *v = json_loads(text, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL |
					     JSON_DECODE_ANY,
			       &jerr);

	if (!v)
		fail_msg("bad test JSON: %s (line %d, column %d)", jerr.text,
			 jerr.line, jerr.column);
	return v;
}

/*
 * n copies of open, then inner, then n copies of close: a document nested
 * n deep.  Returns a new string (the caller frees it).
 */
static inline char *test_nest(size_t n, const char *open, const char *inner,
			      const char *close)
{
	size_t a = strlen(open), b = strlen(inner), c = strlen(close), i;
	char *s = malloc(n * (a + c) + b + 1), *p = s;

	assert_non_null(s);
	for (i = 0; i < n; i++, p += a)
		memcpy(p, open, a);
	memcpy(p, inner, b);
	p += b;
	for (i = 0; i < n; i++, p += c)
		memcpy(p, close, c);
	*p = '\0';
	return s;
}

#ifdef TEST_CONFIG
/*
 * A program that defines TEST_CONFIG before it includes this header gets
 * `cfg`, the built-in config that main() uses without --config, made
 * afresh for each test by test_config_setup() and taken back by
 * test_config_teardown(): list a test with TEST_WITH_CONFIG(fn).  A test
 * may change cfg as it likes (releasing what it replaces); a failed assert
 * cannot leave the change to the next test.
 */
#include "config.h"

static struct config cfg;

static int test_config_setup(void **state)
{
	char err[128];

	(void)state;
	if (config_init(&cfg))
		return -1;
	if (config_check(&cfg, err, sizeof(err))) {
		print_error("built-in config refused: %s\n", err);
		config_release(&cfg);
		return -1;
	}
	return 0;
}

static int test_config_teardown(void **state)
{
	(void)state;
	config_release(&cfg);
	return 0;
}

#define TEST_WITH_CONFIG(fn) \
	cmocka_unit_test_setup_teardown(fn, test_config_setup, \
					test_config_teardown)
#endif

#ifdef TEST_STACK
/*
 * A program that defines TEST_STACK before it includes this header gets
 * test_stack_used(): it runs fn(arg) on a thread whose stack is size bytes
 * (a multiple of the page size) above a guard page, and returns how much
 * of that stack the thread wrote at most: the stack is painted first, and
 * the lowest byte that changed gives the depth it reached (the thread's
 * own start and its TLS, at the top, included).  A thread that needs more
 * hits the guard page and kills the program.
 */
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

/* Under valgrind, a dead thread's stack is no longer addressable: it is
 * made readable again before it is looked at (a no-op elsewhere). */
#if defined(__has_include) && __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#else
#define VALGRIND_MAKE_MEM_DEFINED(p, n) ((void)0)
#endif

#define TEST_STACK_PAINT 0xA5

static inline size_t test_stack_used(void *(*fn)(void *), void *arg,
				     size_t size)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), low;
	unsigned char *mem;
	pthread_attr_t attr;
	pthread_t thread;
	void *stack;

	assert_int_equal(size % page, 0);
	assert_int_equal(posix_memalign(&stack, page, page + size), 0);
	mem = stack;
	memset(mem + page, TEST_STACK_PAINT, size);
	assert_int_equal(mprotect(mem, page, PROT_NONE), 0);
	assert_int_equal(pthread_attr_init(&attr), 0);
	assert_int_equal(pthread_attr_setstack(&attr, mem + page, size), 0);
	assert_int_equal(pthread_create(&thread, &attr, fn, arg), 0);
	assert_int_equal(pthread_join(thread, NULL), 0);
	pthread_attr_destroy(&attr);
	assert_int_equal(mprotect(mem, page, PROT_READ | PROT_WRITE), 0);
	(void)VALGRIND_MAKE_MEM_DEFINED(mem + page, size);
	for (low = 0; low < size && mem[page + low] == TEST_STACK_PAINT; low++)
		;
	free(stack);
	return size - low;
}
#endif

#endif /* TEST_H */
