/*
 * internal.h - helpers shared by the files of lib/, never installed.
 *
 * Everything here is prefixed vgpu__ so that it cannot clash with a
 * program that links the library.  Character classes are ASCII only and do
 * not depend on the locale, as Kubernetes' validation does not.
 */
#ifndef VGPU_INTERNAL_H
#define VGPU_INTERNAL_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

/*
 * Aborts when a broken invariant (a caller's programming error, never bad
 * input) is found.  It is always compiled in: NDEBUG does not remove it.
 */
#define VGPU__ASSERT(cond)                                                    \
	((cond) ? (void)0                                                     \
		: vgpu__assert_fail(#cond, __FILE__, __LINE__, __func__))

#if defined(__GNUC__) || defined(__clang__)
#define VGPU__NORETURN __attribute__((noreturn))
#else
#define VGPU__NORETURN
#endif

static inline VGPU__NORETURN void vgpu__assert_fail(const char *cond,
						    const char *file, int line,
						    const char *func)
{
	fprintf(stderr, "libvgpu: %s:%d: %s: assertion failed: %s\n", file,
		line, func, cond);
	abort();
}

static inline bool vgpu__is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static inline bool vgpu__is_lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || vgpu__is_digit(c);
}

static inline bool vgpu__is_alnum(char c)
{
	return vgpu__is_lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

#endif /* VGPU_INTERNAL_H */
