/*
 * arena.c - a per-thread bump allocator for jansson (see arena.h).
 *
 * Each thread that calls arena_begin() gets an arena: a list of chunks,
 * the newest first, each twice the size of the one before.  The first
 * chunk is kept between requests, so a typical review allocates nothing
 * from malloc() for its values; the larger ones are freed by arena_end().
 * A pthread key frees the arena when its thread exits.
 *
 * Under valgrind, memcheck cannot tell the pieces of a chunk apart: to it
 * a chunk is one malloc() block, all of it readable.  Each arena is
 * therefore described to memcheck as a memory pool: a piece handed out is
 * a block of the pool, a piece freed or taken back by arena_end() is no
 * longer addressable, and the unused rest of a chunk never was.  So a read
 * of a value after its free or after arena_end() is reported as with
 * malloc().  The client requests are compiled in only with ARENA_MEMCHECK
 * (`make MEMCHECK=1`, which `make valgrind` sets): outside valgrind they
 * still cost a dozen instructions per allocation, about 4% of a typical
 * review, so the release build leaves them out.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include <jansson.h>

#include "arena.h"

#ifdef ARENA_MEMCHECK
#include <valgrind/memcheck.h>
#else
#define VALGRIND_CREATE_MEMPOOL(pool, redzone, zeroed) ((void)0)
#define VALGRIND_DESTROY_MEMPOOL(pool) ((void)0)
#define VALGRIND_MEMPOOL_ALLOC(pool, p, n) ((void)0)
#define VALGRIND_MEMPOOL_FREE(pool, p) ((void)0)
#define VALGRIND_MAKE_MEM_NOACCESS(p, n) ((void)0)
#endif

#if defined(__SANITIZE_ADDRESS__)
#define VGPU_NO_ARENA 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define VGPU_NO_ARENA 1
#endif
#endif

#ifdef VGPU_NO_ARENA
#define ARENA_ENABLED false
#else
#define ARENA_ENABLED true
#endif

#define FIRST_CHUNK ((size_t)64 << 10)
/*
 * What one request may take from its arena; past it, values are malloc()'d
 * as outside.  A large review then reuses freed memory that is still in
 * the cache, instead of touching megabytes of new pages.
 */
#define BUDGET ((size_t)1 << 20)
#define ALIGN ((size_t)16)

struct chunk {
	struct chunk *next;
	char *base;
	size_t size;
	size_t used;
};

struct arena {
	struct chunk *head; /* newest; the last one is the first chunk */
	size_t total;       /* the sizes of the chunks */
	bool active;
	bool spilled;       /* a value went to malloc() since arena_begin() */
};

static pthread_key_t arena_key;
static _Thread_local struct arena *mine;

static struct chunk *chunk_new(size_t size, struct chunk *next)
{
	struct chunk *c = malloc(sizeof(*c) + size);

	if (!c)
		return NULL;
	c->next = next;
	c->base = (char *)(c + 1);
	c->size = size;
	c->used = 0;
	VALGRIND_MAKE_MEM_NOACCESS(c->base, size);
	return c;
}

/*
 * Frees every chunk but the first, and empties that one.  For memcheck,
 * the pool loses its blocks before the chunks go back to malloc(), and the
 * first chunk is unused memory again.
 */
static void arena_reset(struct arena *a)
{
	VALGRIND_DESTROY_MEMPOOL(a);
	while (a->head && a->head->next) {
		struct chunk *c = a->head;

		a->head = c->next;
		free(c);
	}
	if (a->head) {
		a->head->used = 0;
		a->total = a->head->size;
		VALGRIND_MAKE_MEM_NOACCESS(a->head->base, a->head->size);
	}
	VALGRIND_CREATE_MEMPOOL(a, 0, 0);
}

static void arena_destroy(void *p)
{
	struct arena *a = p;

	if (!a)
		return;
	arena_reset(a);
	VALGRIND_DESTROY_MEMPOOL(a);
	free(a->head);
	free(a);
}

static bool owns(const struct arena *a, const void *p)
{
	const struct chunk *c;
	uintptr_t u = (uintptr_t)p;

	for (c = a->head; c; c = c->next)
		if (u >= (uintptr_t)c->base && u < (uintptr_t)c->base + c->size)
			return true;
	return false;
}

static void *arena_malloc(size_t want)
{
	struct arena *a = mine;
	struct chunk *c;
	size_t size, n;
	void *p;

	if (!a || !a->active)
		return malloc(want);
	if (want > SIZE_MAX / 4)
		return NULL;
	n = want ? (want + ALIGN - 1) & ~(ALIGN - 1) : ALIGN;
	c = a->head;
	if (n > c->size - c->used) {
		size = c->size * 2;
		while (size < n)
			size *= 2;
		if (size > BUDGET - a->total || !(c = chunk_new(size, a->head))) {
			a->spilled = true;
			return malloc(n);
		}
		a->head = c;
		a->total += size;
	}
	p = c->base + c->used;
	c->used += n;
	/* The padding up to ALIGN stays unaddressable. */
	VALGRIND_MEMPOOL_ALLOC(a, p, want);
	return p;
}

/* jansson's free: a no-op for memory of the active arena. */
static void arena_free(void *p)
{
	struct arena *a = mine;

	if (!p)
		return;
	if (a && a->active && owns(a, p)) {
		VALGRIND_MEMPOOL_FREE(a, p);
		return;
	}
	free(p);
}

static bool installed;

void arena_setup(void)
{
	if (!ARENA_ENABLED || installed ||
	    pthread_key_create(&arena_key, arena_destroy))
		return;
	json_set_alloc_funcs(arena_malloc, arena_free);
	installed = true;
}

int arena_begin(void)
{
	struct arena *a = mine;

	if (!installed)
		return -1;
	if (!a) {
		a = calloc(1, sizeof(*a));
		if (!a)
			return -1;
		a->head = chunk_new(FIRST_CHUNK, NULL);
		a->total = FIRST_CHUNK;
		if (!a->head || pthread_setspecific(arena_key, a)) {
			free(a->head);
			free(a);
			return -1;
		}
		VALGRIND_CREATE_MEMPOOL(a, 0, 0);
		mine = a;
	}
	a->active = true;
	a->spilled = false;
	return 0;
}

bool arena_holds_all(void)
{
	const struct arena *a = mine;

	return a && a->active && !a->spilled;
}

void arena_end(void)
{
	struct arena *a = mine;

	if (!a || !a->active)
		return;
	a->active = false;
	arena_reset(a);
}
