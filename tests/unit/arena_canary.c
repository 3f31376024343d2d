/*
 * arena_canary.c - reads arena memory that no longer holds a value: a
 * string after its value's last reference is dropped, and a string after
 * arena_end().  `make valgrind` runs it under memcheck and expects both
 * reads reported; a run that reports nothing means memcheck cannot see
 * into the arena, and fails.
 *
 * Outside valgrind the reads land in memory the arena still holds, so the
 * program exits 0.  It is not one of the unit tests: under ASan the arena
 * is off and the first read is a use after free.
 */
#include <stdio.h>

#include <jansson.h>

#include "arena.h"

int main(void)
{
	const char *freed, *ended;
	json_t *v, *kept;
	char sum;

	arena_setup();
	if (arena_begin()) {
		fputs("arena_canary: the arena is off in this build\n", stderr);
		return 2;
	}

	v = json_string("freed canary");
	freed = json_string_value(v);
	json_decref(v);
	sum = *(const volatile char *)freed; /* reported: freed */

	kept = json_string("ended canary");
	ended = json_string_value(kept);
	arena_end(); /* takes kept back with the rest */
	sum ^= *(const volatile char *)ended; /* reported: after arena_end() */

	printf("arena_canary: read %d\n", sum);
	return 0;
}
