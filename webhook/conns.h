/*
 * conns.h - the open connections of one listener: the phase and times of
 * each, absolute deadlines, a cap per client address, and room made for a
 * new connection when every slot is taken.
 *
 * The server registers a connection when it opens (with its socket) and
 * unregisters it just before it closes the socket; in between it reports
 * when a request's headers are in and when its answer has been sent.
 *
 * Phases, and the deadline of each (times from the limits' clock):
 *   opening  from accept to the first request's headers (the TLS
 *            handshake included): start + open_ns
 *   idle     from the end of an answer to the next request's headers:
 *            start + idle_ns
 *   request  from the headers to the end of the answer: start +
 *            request_ns, where start is the start of the request: the
 *            accept, or the end of the previous answer
 * No byte moves a deadline.  conns_reap() closes the connections past
 * theirs.
 *
 * Memory: the registry also keeps the ledger of the memory that
 * connections hold for request bodies (conns_take()): at most `memory` in
 * all, and at most `memory_per_address` for the connections of one
 * address.  When a connection needs more than is left, other connections
 * holding memory whose bodies are slow may be closed for it: those that
 * received fewer than slow_bytes of body (conns_touch()) in the last
 * slow_ns (to 2 * slow_ns), the first slow_ns of a request counting as
 * fast, and whose bodies are not whole (conns_settle()).  Slowness is a
 * rate, not the age of the last byte, so a client that trickles a byte
 * now and then is as slow as one that stopped.  The one holding the most
 * goes first, and none goes unless that makes the room needed
 * (conns_take()).  What a closed connection
 * held is counted free at once; its buffer is freed by its own thread as
 * the connection closes, a moment later, so the memory in use may pass
 * `memory` by the buffers of connections closing.
 *
 * Room: when more than `slots` connections are open, the one that has gone
 * longest without progress (accepted, headers in, bytes of a body in,
 * answer sent), which is
 * the slowest or the longest idle, is closed for the new one; the new one
 * is never that one while another is open.  A new connection from an
 * address that already has per_address open ones is refused.
 *
 * Closing here is shutdown(2) of the socket, both ways: the thread that
 * serves the connection then reads the end of the stream and closes it.
 * Every shutdown is made under the registry's lock on a registered
 * connection, and the server unregisters a connection before close(2) of
 * its socket, so a descriptor number that the system has given to another
 * socket is never shut down.  A connection so closed stays registered,
 * as "closing", until then; it no longer counts as open.
 *
 * Thread-safe: every function takes the registry's lock.
 */
#ifndef CONNS_H
#define CONNS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "compiler.h"

/* Why a connection was closed (the metric's label, conns_reason_name()). */
enum conns_reason {
	CONNS_OPENING, /* no request headers within open_ns of the accept */
	CONNS_IDLE,    /* none within idle_ns of the end of the last answer */
	CONNS_REQUEST, /* not answered within request_ns of its start */
	CONNS_EVICTED, /* closed to make room for a new connection */
	CONNS_ADDRESS, /* a new connection refused: its address is at the cap */
	CONNS_MEMORY,  /* closed to free the memory it held (conns_take()),
			* or refused for want of memory (conns_refuse()) */
	CONNS_NREASONS,
};

/* "opening", "idle", "request", "evicted", "address" or "memory". */
const char *conns_reason_name(enum conns_reason reason);

struct conns_limits {
	unsigned slots;       /* open connections kept; at least 1 */
	/* Connections registered at most, open or closing; at least slots.
	 * A new connection beyond it is closed at once (counted evicted). */
	unsigned capacity;
	unsigned per_address; /* open connections of one address; 0: no cap */
	uint64_t open_ns;
	uint64_t idle_ns;
	uint64_t request_ns;
	size_t memory;             /* the ledger's total; 0: none */
	size_t memory_per_address; /* of one address; 0: no share */
	/* A connection that received fewer than slow_bytes of body in the
	 * last slow_ns may be closed for memory; slow_ns at least 1. */
	uint64_t slow_ns;
	size_t slow_bytes;
	/* Nanoseconds, never decreasing; NULL: CLOCK_MONOTONIC.  Read under
	 * the lock. */
	uint64_t (*clock)(void);
};

struct conns_stats {
	unsigned long long closed[CONNS_NREASONS]; /* since conns_create() */
	unsigned open;                             /* open now */
	size_t held;                               /* of the ledger, now */
};

struct conns;

/* A registry for lim (copied).  Returns NULL when memory ran out. */
struct conns *conns_create(const struct conns_limits *lim) COMPILER_WUR;

/* Frees c (NULL ok).  Shuts nothing down. */
void conns_destroy(struct conns *c);

/*
 * Whether a new connection from sa may be taken: false, counted as
 * CONNS_ADDRESS, when its address has per_address open connections.  A
 * cheap check before the connection is set up; conns_open() checks again.
 */
bool conns_admit(struct conns *c, const struct sockaddr *sa, socklen_t len);

/*
 * Registers the connection on socket fd from sa, accepted now, in the
 * opening phase.  Returns its id (0 or more), or -1 when it was refused
 * (its address at the cap, or no entry free): its socket is then shut
 * down.  Closes the connection with the oldest progress when more than
 * slots are open.
 */
int conns_open(struct conns *c, int fd, const struct sockaddr *sa,
	       socklen_t len);

/*
 * Refuses the connection on socket fd, which is not registered: shuts it
 * down (it closes at once) and counts it closed for reason.
 */
void conns_refuse(struct conns *c, int fd, enum conns_reason reason);

/* The headers of a request of connection id are in (request phase). */
void conns_begin(struct conns *c, int id);

/* The answer of connection id has been sent: idle phase, a new start. */
void conns_end(struct conns *c, int id);

/*
 * Unregisters connection id, whose socket is about to be closed; id may
 * then be given to another connection.
 */
void conns_close(struct conns *c, int id);

/*
 * n bytes of a request's body arrived on connection id: its last byte is
 * now, they count in its rate, and it is the last in the order of
 * progress (deadlines unchanged).
 */
void conns_touch(struct conns *c, int id, size_t n);

/*
 * The body of connection id's request is whole and being decided: until
 * the request ends (conns_end(), conns_begin()) it is never closed for
 * memory, nor for want of progress while draining (its deadline stays).
 */
void conns_settle(struct conns *c, int id);

/*
 * Takes memory of the ledger for open connection id: want bytes when they
 * fit, else need bytes (0 < need <= want) when they fit, else need bytes
 * once slow holders (see above; of its address when the share of its
 * address is what is short; those holding the most first) are shut down
 * (CONNS_MEMORY) and what they held taken back.  They are shut down only
 * when that makes room for need: a take that fails closes nobody, and
 * nobody is closed for more than need.  Returns the bytes taken (want or
 * need), or 0 when there is no room (or id is not open).
 */
size_t conns_take(struct conns *c, int id, size_t want, size_t need)
	COMPILER_WUR;

/*
 * Gives back n bytes that connection id took, or what it still holds when
 * that is less: a connection shut down holds nothing.
 */
void conns_give(struct conns *c, int id, size_t n);

/*
 * The server drains: every idle connection is closed now, and from now on
 * each as soon as it is idle (reason idle), and a request without progress
 * (its headers, a byte of its body) for stall_ns is closed (reason
 * request) by conns_reap() before its deadline, unless its body is whole
 * (conns_settle()).  "Idle" is the phase between an answer and the next
 * request's headers: a connection whose next headers have come in part is
 * idle (the server is not told of them).  A connection still opening keeps
 * its deadline.  Returns how many were closed now.
 */
unsigned conns_drain(struct conns *c, uint64_t stall_ns);

/* Closes every open connection past its deadline; returns how many. */
unsigned conns_reap(struct conns *c);

/* The counts of c. */
void conns_stats(struct conns *c, struct conns_stats *out);

#endif /* CONNS_H */
