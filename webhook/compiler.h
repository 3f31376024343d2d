/*
 * compiler.h - the function attributes the webhook uses, in one place.
 *
 * COMPILER_PRINTF(f, a): argument f is a printf format and the variable
 * arguments start at a, so the compiler checks every call.
 * COMPILER_WUR: ignoring the result is a warning (an error with -Werror);
 * every function that can fail carries it.
 * COMPILER_INLINE: inline wherever it is called, for the few small
 * functions of a hot loop that the compiler would otherwise call.
 * COMPILER_NOINLINE: never inlined, so that its locals stay out of the
 * frames of a recursion that calls it.
 */
#ifndef COMPILER_H
#define COMPILER_H

#define COMPILER_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define COMPILER_WUR __attribute__((warn_unused_result))
#define COMPILER_INLINE inline __attribute__((always_inline))
#define COMPILER_NOINLINE __attribute__((noinline))

#endif /* COMPILER_H */
