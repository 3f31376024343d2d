/*
 * conns.c - the connections of one listener (conns.h).
 *
 * A table of `capacity` entries.  The open ones are on a list in the order
 * of their last progress, oldest first, so that the connection to close
 * for a new one is the head; progress only ever moves an entry to the
 * tail.  The open connections of each client address are counted in a
 * hash table with linear probing (an address leaves it when its count
 * falls to 0), sized so that it is never more than half full; it also
 * keeps the memory the connections of each address hold.  An entry that
 * is shut down gives back the memory it held at once.  The rate of a body
 * is counted in two windows of slow_ns, the current one and the one
 * before, so that a stall shows within 2 * slow_ns and a worker that reads
 * a connection's bytes late (busy deciding another's body) does not make
 * it look slow at once.
 */
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "conns.h"

#define NONE UINT32_MAX

enum phase { PHASE_OPENING, PHASE_IDLE, PHASE_REQUEST };

struct entry {
	int fd;             /* -1: free */
	unsigned char phase;
	bool closing;       /* shut down, not yet unregistered */
	bool keyed;         /* has an address, counted in the address table */
	bool settled;       /* its body is whole: never closed for memory */
	bool doomed;        /* chosen to be closed (conns_take(), locked) */
	uint32_t prev;      /* the progress list (open entries), or the */
	uint32_t next;      /* free list (next only) */
	uint64_t start;     /* the start of the request: deadlines */
	uint64_t last;      /* its last progress: accept, headers, body byte */
	size_t held;        /* of the memory ledger */
	/* The rate of its body: bytes in the window that started at win
	 * (slow_ns long) and in the one before it (rate_of()). */
	uint64_t win;
	size_t bytes, before;
	unsigned char key[16]; /* the address, IPv4 mapped into IPv6 */
};

struct addr {
	unsigned char key[16];
	unsigned count; /* 0: the slot is empty */
	size_t held;    /* memory of its connections */
};

struct conns {
	struct conns_limits lim;
	pthread_mutex_t lock;
	struct entry *e;
	struct addr *addrs;
	uint32_t naddrs;    /* a power of two */
	uint32_t head, tail; /* the progress list */
	uint32_t free;       /* the free list */
	unsigned open;
	bool draining;       /* conns_drain() */
	uint64_t stall_ns;   /* while draining */
	size_t held;         /* memory of every connection */
	unsigned long long closed[CONNS_NREASONS];
};

const char *conns_reason_name(enum conns_reason reason)
{
	static const char *const names[CONNS_NREASONS] = {
		"opening", "idle", "request", "evicted", "address", "memory",
	};

	return (unsigned)reason < CONNS_NREASONS ? names[reason] : "unknown";
}

static uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

struct conns *conns_create(const struct conns_limits *lim)
{
	struct conns *c = calloc(1, sizeof(*c));
	uint32_t i;

	if (!c)
		return NULL;
	c->lim = *lim;
	if (!c->lim.clock)
		c->lim.clock = monotonic_ns;
	if (c->lim.slots < 1)
		c->lim.slots = 1;
	if (c->lim.capacity < c->lim.slots)
		c->lim.capacity = c->lim.slots;
	if (c->lim.slow_ns < 1)
		c->lim.slow_ns = 1;
	c->naddrs = 16;
	while (c->naddrs < 2 * c->lim.capacity)
		c->naddrs *= 2;
	c->e = calloc(c->lim.capacity, sizeof(*c->e));
	c->addrs = calloc(c->naddrs, sizeof(*c->addrs));
	if (!c->e || !c->addrs || pthread_mutex_init(&c->lock, NULL)) {
		free(c->e);
		free(c->addrs);
		free(c);
		return NULL;
	}
	for (i = 0; i < c->lim.capacity; i++) {
		c->e[i].fd = -1;
		c->e[i].next = i + 1 < c->lim.capacity ? i + 1 : NONE;
	}
	c->free = 0;
	c->head = c->tail = NONE;
	return c;
}

void conns_destroy(struct conns *c)
{
	if (!c)
		return;
	pthread_mutex_destroy(&c->lock);
	free(c->e);
	free(c->addrs);
	free(c);
}

/* --- addresses ------------------------------------------------------------ */

/* The address of sa as a key; false for a socket without one (AF_UNIX). */
static bool key_of(const struct sockaddr *sa, socklen_t len,
		   unsigned char key[16])
{
	if (sa && sa->sa_family == AF_INET &&
	    len >= (socklen_t)sizeof(struct sockaddr_in)) {
		const struct sockaddr_in *in = (const void *)sa;

		memset(key, 0, 10);
		key[10] = key[11] = 0xff;
		memcpy(key + 12, &in->sin_addr, 4);
		return true;
	}
	if (sa && sa->sa_family == AF_INET6 &&
	    len >= (socklen_t)sizeof(struct sockaddr_in6)) {
		const struct sockaddr_in6 *in6 = (const void *)sa;

		memcpy(key, &in6->sin6_addr, 16);
		return true;
	}
	return false;
}

static uint32_t hash_key(const unsigned char key[16])
{
	uint32_t h = 2166136261u; /* FNV-1a */
	int i;

	for (i = 0; i < 16; i++)
		h = (h ^ key[i]) * 16777619u;
	return h;
}

/* The slot of key, or the empty slot where it would go. */
static uint32_t addr_slot(const struct conns *c, const unsigned char key[16])
{
	uint32_t mask = c->naddrs - 1, i = hash_key(key) & mask;

	while (c->addrs[i].count && memcmp(c->addrs[i].key, key, 16))
		i = (i + 1) & mask;
	return i;
}

static unsigned addr_count(const struct conns *c, const unsigned char key[16])
{
	return c->addrs[addr_slot(c, key)].count;
}

static void addr_add(struct conns *c, const unsigned char key[16])
{
	struct addr *a = &c->addrs[addr_slot(c, key)];

	if (!a->count) {
		memcpy(a->key, key, 16);
		a->held = 0;
	}
	a->count++;
}

/*
 * One connection of key less; an address without any leaves the table,
 * and the slots after it that would no longer be found move back into
 * the hole (deletion from linear probing without tombstones).
 */
static void addr_remove(struct conns *c, const unsigned char key[16])
{
	uint32_t mask = c->naddrs - 1, hole = addr_slot(c, key), i, home;

	if (!c->addrs[hole].count || --c->addrs[hole].count)
		return;
	for (i = (hole + 1) & mask; c->addrs[i].count; i = (i + 1) & mask) {
		home = hash_key(c->addrs[i].key) & mask;
		/* i stays when its home lies cyclically in (hole, i]. */
		if (((i - home) & mask) < ((i - hole) & mask))
			continue;
		c->addrs[hole] = c->addrs[i];
		c->addrs[i].count = 0;
		hole = i;
	}
}

/* --- the progress list ---------------------------------------------------- */

static void unlink_entry(struct conns *c, uint32_t id)
{
	struct entry *x = &c->e[id];

	if (x->prev != NONE)
		c->e[x->prev].next = x->next;
	else
		c->head = x->next;
	if (x->next != NONE)
		c->e[x->next].prev = x->prev;
	else
		c->tail = x->prev;
	x->prev = x->next = NONE;
}

static void append_entry(struct conns *c, uint32_t id)
{
	struct entry *x = &c->e[id];

	x->prev = c->tail;
	x->next = NONE;
	if (c->tail != NONE)
		c->e[c->tail].next = id;
	else
		c->head = id;
	c->tail = id;
}

/* Gives back n bytes of what open entry x holds (at most all of it). */
static void release(struct conns *c, struct entry *x, size_t n)
{
	if (n > x->held)
		n = x->held;
	if (!n)
		return;
	x->held -= n;
	c->held -= n;
	if (x->keyed)
		c->addrs[addr_slot(c, x->key)].held -= n;
}

/* Takes open entry id out of the open ones: its memory, its address and
 * its place in the progress list go. */
static void leave(struct conns *c, uint32_t id)
{
	struct entry *x = &c->e[id];

	release(c, x, x->held);
	unlink_entry(c, id);
	if (x->keyed)
		addr_remove(c, x->key);
	c->open--;
}

/* Shuts open entry id down for reason: it is closing from now on. */
static void shut(struct conns *c, uint32_t id, enum conns_reason reason)
{
	struct entry *x = &c->e[id];

	shutdown(x->fd, SHUT_RDWR);
	x->closing = true;
	leave(c, id);
	c->closed[reason]++;
}

/* An open entry by id, or NULL for an id out of range, free or closing. */
static struct entry *open_entry(struct conns *c, int id)
{
	struct entry *x;

	if (id < 0 || (unsigned)id >= c->lim.capacity)
		return NULL;
	x = &c->e[id];
	return x->fd < 0 || x->closing ? NULL : x;
}

/* --- the interface -------------------------------------------------------- */

bool conns_admit(struct conns *c, const struct sockaddr *sa, socklen_t len)
{
	unsigned char key[16];
	bool ok = true;

	if (!c->lim.per_address || !key_of(sa, len, key))
		return true;
	pthread_mutex_lock(&c->lock);
	if (addr_count(c, key) >= c->lim.per_address) {
		c->closed[CONNS_ADDRESS]++;
		ok = false;
	}
	pthread_mutex_unlock(&c->lock);
	return ok;
}

int conns_open(struct conns *c, int fd, const struct sockaddr *sa,
	       socklen_t len)
{
	unsigned char key[16];
	bool keyed = key_of(sa, len, key);
	struct entry *x;
	uint32_t id;

	pthread_mutex_lock(&c->lock);
	if (keyed && c->lim.per_address &&
	    addr_count(c, key) >= c->lim.per_address) {
		c->closed[CONNS_ADDRESS]++;
		goto refuse;
	}
	if (c->free == NONE) {
		c->closed[CONNS_EVICTED]++;
		goto refuse;
	}
	id = c->free;
	x = &c->e[id];
	c->free = x->next;
	x->fd = fd;
	x->phase = PHASE_OPENING;
	x->closing = false;
	x->keyed = keyed;
	x->settled = x->doomed = false;
	x->held = 0;
	if (keyed) {
		memcpy(x->key, key, 16);
		addr_add(c, key);
	}
	x->start = x->last = x->win = c->lim.clock();
	x->bytes = 0;
	x->before = c->lim.slow_bytes;
	append_entry(c, id);
	c->open++;
	/* The head is never id here: id is the tail, and there are two. */
	while (c->open > c->lim.slots && c->head != id)
		shut(c, c->head, CONNS_EVICTED);
	pthread_mutex_unlock(&c->lock);
	return (int)id;
refuse:
	shutdown(fd, SHUT_RDWR);
	pthread_mutex_unlock(&c->lock);
	return -1;
}

void conns_refuse(struct conns *c, int fd, enum conns_reason reason)
{
	pthread_mutex_lock(&c->lock);
	shutdown(fd, SHUT_RDWR);
	if ((unsigned)reason < CONNS_NREASONS)
		c->closed[reason]++;
	pthread_mutex_unlock(&c->lock);
}

/* n + m, or SIZE_MAX when that overflows. */
static size_t sat_add(size_t n, size_t m)
{
	return n > SIZE_MAX - m ? SIZE_MAX : n + m;
}

/*
 * The bytes of body that entry x received lately: in its current window
 * and the one before, so over the last slow_ns at least (and 2 * slow_ns
 * at most).  A window without a byte counts nothing.
 */
static size_t rate_of(const struct conns *c, const struct entry *x,
		      uint64_t now)
{
	uint64_t age = now - x->win;

	if (age >= 2 * c->lim.slow_ns)
		return 0;
	if (age >= c->lim.slow_ns)
		return x->bytes;
	return sat_add(x->before, x->bytes);
}

/* Moves the windows of entry x on to now (the current one is the one
 * that holds now). */
static void roll(const struct conns *c, struct entry *x, uint64_t now)
{
	uint64_t age = now - x->win;

	if (age >= 2 * c->lim.slow_ns) {
		x->before = x->bytes = 0;
		x->win = now;
	} else if (age >= c->lim.slow_ns) {
		x->before = x->bytes;
		x->bytes = 0;
		x->win += c->lim.slow_ns;
	}
}

/*
 * Progress of connection id (open): the tail of the progress list, in
 * phase, and a new start for its deadlines when restart.  A new phase
 * ends the body of the last request (not settled) and starts the rate of
 * the next with a window of grace: it counts as slow_bytes.
 */
static void progress(struct conns *c, int id, enum phase phase, bool restart)
{
	struct entry *x;

	pthread_mutex_lock(&c->lock);
	x = open_entry(c, id);
	if (x && c->draining && phase == PHASE_IDLE) {
		shut(c, (uint32_t)id, CONNS_IDLE);
	} else if (x) {
		x->phase = phase;
		x->last = c->lim.clock();
		if (restart)
			x->start = x->last;
		x->settled = false;
		x->win = x->last;
		x->bytes = 0;
		x->before = c->lim.slow_bytes;
		unlink_entry(c, (uint32_t)id);
		append_entry(c, (uint32_t)id);
	}
	pthread_mutex_unlock(&c->lock);
}

void conns_begin(struct conns *c, int id)
{
	progress(c, id, PHASE_REQUEST, false);
}

void conns_end(struct conns *c, int id)
{
	progress(c, id, PHASE_IDLE, true);
}

void conns_touch(struct conns *c, int id, size_t n)
{
	struct entry *x;

	pthread_mutex_lock(&c->lock);
	x = open_entry(c, id);
	if (x) {
		x->last = c->lim.clock();
		roll(c, x, x->last);
		x->bytes = sat_add(x->bytes, n);
		unlink_entry(c, (uint32_t)id);
		append_entry(c, (uint32_t)id);
	}
	pthread_mutex_unlock(&c->lock);
}

void conns_settle(struct conns *c, int id)
{
	struct entry *x;

	pthread_mutex_lock(&c->lock);
	x = open_entry(c, id);
	if (x)
		x->settled = true;
	pthread_mutex_unlock(&c->lock);
}

/*
 * The open entry other than self, not yet doomed, that may be closed for
 * memory and holds the most (of two, the one whose last byte is older):
 * it holds some, its body is not whole, and it received fewer than
 * slow_bytes lately (rate_of()); of key when key is not NULL.  NONE when
 * there is none.  Looks at every entry: called only
 * when memory is short.
 */
static uint32_t slowest(const struct conns *c, uint32_t self,
			const unsigned char *key, uint64_t now)
{
	uint32_t id, best = NONE;

	for (id = 0; id < c->lim.capacity; id++) {
		const struct entry *x = &c->e[id];

		if (id == self || x->fd < 0 || x->closing || x->doomed ||
		    !x->held || x->settled ||
		    rate_of(c, x, now) >= c->lim.slow_bytes ||
		    (key && (!x->keyed || memcmp(x->key, key, 16))))
			continue;
		if (best == NONE || x->held > c->e[best].held ||
		    (x->held == c->e[best].held && x->last < c->e[best].last))
			best = id;
	}
	return best;
}

/*
 * Whether n more bytes for open entry x fit in the ledger once the
 * memory of the doomed entries is back: `freed` of it in all, `mine` of
 * it from x's address.  *addr_short says whether the share of x's
 * address is what is short.
 */
static bool fits(const struct conns *c, const struct entry *x, size_t n,
		 size_t freed, size_t mine, bool *addr_short)
{
	size_t share = c->lim.memory_per_address;
	const struct addr *a = x->keyed ? &c->addrs[addr_slot(c, x->key)]
					: NULL;

	*addr_short = a && share && n > share - (a->held - mine);
	return !*addr_short && n <= c->lim.memory - (c->held - freed);
}

/*
 * Takes n bytes for open entry x (index id).  When they do not fit and
 * reclaim, the slow holders to close are chosen first (the one holding
 * the most, of x's address while its share is short, then the next):
 * they are closed only when their memory makes room for n, and nobody is
 * closed otherwise.  Returns whether n was taken.
 */
static bool take(struct conns *c, uint32_t id, size_t n, bool reclaim)
{
	struct entry *x = &c->e[id];
	size_t freed = 0, mine = 0;
	uint64_t now = c->lim.clock();
	uint32_t v, i;
	bool addr_short, ok;

	while (!(ok = fits(c, x, n, freed, mine, &addr_short)) && reclaim) {
		v = slowest(c, id, addr_short ? x->key : NULL, now);
		if (v == NONE)
			break;
		c->e[v].doomed = true;
		freed += c->e[v].held;
		if (x->keyed && c->e[v].keyed && !memcmp(c->e[v].key, x->key, 16))
			mine += c->e[v].held;
	}
	if (freed) {
		for (i = 0; i < c->lim.capacity; i++) {
			if (!c->e[i].doomed)
				continue;
			c->e[i].doomed = false;
			if (ok)
				shut(c, i, CONNS_MEMORY);
		}
	}
	if (!ok)
		return false;
	x->held += n;
	c->held += n;
	if (x->keyed)
		c->addrs[addr_slot(c, x->key)].held += n;
	return true;
}

size_t conns_take(struct conns *c, int id, size_t want, size_t need)
{
	struct entry *x;
	size_t share = c->lim.memory_per_address, got = 0;

	pthread_mutex_lock(&c->lock);
	x = open_entry(c, id);
	if (!x || !need || need > want || need > c->lim.memory ||
	    (share && x->keyed && need > share))
		goto out;
	if (take(c, (uint32_t)id, want, false))
		got = want;
	else if (want != need && take(c, (uint32_t)id, need, false))
		got = need;
	else if (take(c, (uint32_t)id, need, true))
		got = need;
out:
	pthread_mutex_unlock(&c->lock);
	return got;
}

void conns_give(struct conns *c, int id, size_t n)
{
	struct entry *x;

	pthread_mutex_lock(&c->lock);
	x = open_entry(c, id);
	if (x)
		release(c, x, n);
	pthread_mutex_unlock(&c->lock);
}

void conns_close(struct conns *c, int id)
{
	struct entry *x;

	if (id < 0 || (unsigned)id >= c->lim.capacity)
		return;
	pthread_mutex_lock(&c->lock);
	x = &c->e[id];
	if (x->fd >= 0) {
		if (!x->closing)
			leave(c, (uint32_t)id);
		x->fd = -1;
		x->closing = false;
		x->next = c->free;
		c->free = (uint32_t)id;
	}
	pthread_mutex_unlock(&c->lock);
}

unsigned conns_drain(struct conns *c, uint64_t stall_ns)
{
	uint32_t id, next;
	unsigned n = 0;

	pthread_mutex_lock(&c->lock);
	c->draining = true;
	c->stall_ns = stall_ns;
	for (id = c->head; id != NONE; id = next) {
		next = c->e[id].next;
		if (c->e[id].phase == PHASE_IDLE) {
			shut(c, id, CONNS_IDLE);
			n++;
		}
	}
	pthread_mutex_unlock(&c->lock);
	return n;
}

unsigned conns_reap(struct conns *c)
{
	static const enum conns_reason reasons[] = {
		[PHASE_OPENING] = CONNS_OPENING,
		[PHASE_IDLE] = CONNS_IDLE,
		[PHASE_REQUEST] = CONNS_REQUEST,
	};
	unsigned n = 0;
	uint32_t id, next;
	uint64_t now;

	pthread_mutex_lock(&c->lock);
	now = c->lim.clock();
	for (id = c->head; id != NONE; id = next) {
		const struct entry *x = &c->e[id];
		uint64_t limit = x->phase == PHASE_OPENING ? c->lim.open_ns :
				 x->phase == PHASE_IDLE ? c->lim.idle_ns :
				 c->lim.request_ns;

		next = x->next;
		if (now - x->start >= limit ||
		    (c->draining && x->phase == PHASE_REQUEST &&
		     !x->settled && now - x->last >= c->stall_ns)) {
			shut(c, id, reasons[x->phase]);
			n++;
		}
	}
	pthread_mutex_unlock(&c->lock);
	return n;
}

void conns_stats(struct conns *c, struct conns_stats *out)
{
	pthread_mutex_lock(&c->lock);
	memcpy(out->closed, c->closed, sizeof(out->closed));
	out->open = c->open;
	out->held = c->held;
	pthread_mutex_unlock(&c->lock);
}
