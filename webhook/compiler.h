/*
 * compiler.h - the function attributes the webhook uses, in one place.
 *
 * COMPILER_PRINTF(f, a): argument f is a printf format and the variable
 * arguments start at a, so the compiler checks every call.
 * COMPILER_WUR: ignoring the result is a warning (an error with -Werror);
 * every function that can fail carries it.
 */
#ifndef COMPILER_H
#define COMPILER_H

#define COMPILER_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define COMPILER_WUR __attribute__((warn_unused_result))

#endif /* COMPILER_H */
