/*
 * arena.h - a per-thread bump allocator for the jansson values of one
 * request.
 *
 * A review builds and frees a few hundred small jansson values; with
 * malloc() and free() for each, the allocator was a fifth of the server's
 * CPU.  Between arena_begin() and arena_end(), jansson allocates on the
 * calling thread from that thread's arena: a bump of a pointer, and a free
 * that does nothing.  arena_end() takes everything back at once.
 *
 * Invariants:
 * - Every jansson value allocated between arena_begin() and arena_end()
 *   is freed (its last reference dropped) before arena_end(), but a tree
 *   that arena_holds_all() lets go without a walk.  Values made
 *   outside, such as the config's, are ordinary malloc() memory, also when
 *   they are freed inside.
 * - Memory that jansson hands out to be freed by the caller (json_dumps())
 *   is freed with jansson's free function (jsonout_free()), never free().
 * - Other threads, and code outside the pair, are not affected.
 *
 * Under AddressSanitizer the arena is off, and every value is a malloc()
 * of its own that the sanitizer checks; -DVGPU_NO_ARENA turns it off in any
 * build.  The valgrind suite runs with the arena on, as in production:
 * memcheck sees each value as a block of its own (arena.c tells it), and
 * tests/unit/arena_canary.c checks that it does.
 */
#ifndef ARENA_H
#define ARENA_H

#include <stdbool.h>
#include <stddef.h>

/* Installs the allocation functions in jansson.  Call once, before any
 * jansson value exists and before any thread starts. */
void arena_setup(void);

/* Starts allocating this thread's jansson values from its arena.  Returns
 * 0, or -1 when the arena cannot be made (values then use malloc()). */
int arena_begin(void);

/* Takes back everything allocated since arena_begin() on this thread. */
void arena_end(void);

/*
 * Whether every jansson value allocated since arena_begin() on this thread
 * is in its arena: false when the arena is off or a value did not fit in
 * it (it was then a malloc() of its own).  While it is true, a tree built
 * since arena_begin() that holds no value from outside (no json_incref()
 * of a value made before, or by another thread) needs no json_decref():
 * arena_end() takes it back whole, without a walk over its values.
 */
bool arena_holds_all(void);

#endif /* ARENA_H */
