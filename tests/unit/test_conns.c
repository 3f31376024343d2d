/*
 * test_conns.c - the connection registry: deadlines by phase, room made
 * for a new connection by closing the one with the oldest progress, the
 * cap per address, the memory ledger, and the counts.  Connections are socket pairs: the
 * registry holds one end, and the test reads the other to see whether the
 * registry shut it down.  The clock is the test's.
 */
#include "test.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conns.h"

#define S 1000000000ull /* a second */

static uint64_t now_ns;

static uint64_t fake_clock(void)
{
	return now_ns;
}

/* One connection: the registry's end, the peer's end, and its id. */
struct pair {
	int mine, peer, id;
};

static struct sockaddr_storage ipv4(const char *text)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *in = (struct sockaddr_in *)&ss;

	memset(&ss, 0, sizeof(ss));
	in->sin_family = AF_INET;
	in->sin_port = htons(40000);
	assert_int_equal(inet_pton(AF_INET, text, &in->sin_addr), 1);
	return ss;
}

static struct sockaddr_storage ipv6(const char *text)
{
	struct sockaddr_storage ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

	memset(&ss, 0, sizeof(ss));
	in6->sin6_family = AF_INET6;
	assert_int_equal(inet_pton(AF_INET6, text, &in6->sin6_addr), 1);
	return ss;
}

static socklen_t len_of(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET ? sizeof(struct sockaddr_in)
	       : ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
	       : sizeof(sa_family_t);
}

/* Opens a connection from address a (NULL: an AF_UNIX peer, no address). */
static struct pair open_from(struct conns *c, const struct sockaddr_storage *a)
{
	struct sockaddr_storage unix_sa = { .ss_family = AF_UNIX };
	struct pair p;
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	p.mine = sv[0];
	p.peer = sv[1];
	if (!a)
		a = &unix_sa;
	p.id = conns_open(c, p.mine, (const struct sockaddr *)a, len_of(a));
	return p;
}

/* Whether the registry shut p down: its peer reads the end of the stream. */
static bool is_shut(const struct pair *p)
{
	char ch;
	ssize_t n = recv(p->peer, &ch, 1, MSG_DONTWAIT);

	if (n < 0)
		assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
	return n == 0;
}

static void drop(struct conns *c, struct pair *p)
{
	if (p->id >= 0)
		conns_close(c, p->id);
	close(p->mine);
	close(p->peer);
	p->id = -1;
}

static struct conns *registry(unsigned slots, unsigned capacity,
			      unsigned per_address)
{
	struct conns_limits lim = {
		.slots = slots, .capacity = capacity,
		.per_address = per_address, .open_ns = 10 * S,
		.idle_ns = 5 * S, .request_ns = 30 * S, .clock = fake_clock,
	};
	struct conns *c = conns_create(&lim);

	assert_non_null(c);
	now_ns = 1000 * S;
	return c;
}

static unsigned long long closed(struct conns *c, enum conns_reason r)
{
	struct conns_stats st;

	conns_stats(c, &st);
	return st.closed[r];
}

static unsigned open_now(struct conns *c)
{
	struct conns_stats st;

	conns_stats(c, &st);
	return st.open;
}

/* conns_take() of exactly n: 0, or -1 when refused. */
static int take(struct conns *c, int id, size_t n)
{
	return conns_take(c, id, n, n) == n ? 0 : -1;
}

static size_t held_now(struct conns *c)
{
	struct conns_stats st;

	conns_stats(c, &st);
	return st.held;
}

/* A registry with a memory ledger of 100 bytes, 60 per address, and
 * holders slow below 10 bytes a second. */
static struct conns *ledger(void)
{
	struct conns_limits lim = {
		.slots = 16, .capacity = 16, .per_address = 8,
		.open_ns = 10 * S, .idle_ns = 5 * S, .request_ns = 30 * S,
		.memory = 100, .memory_per_address = 60, .slow_ns = S,
		.slow_bytes = 10,
		.clock = fake_clock,
	};
	struct conns *c = conns_create(&lim);

	assert_non_null(c);
	now_ns = 1000 * S;
	return c;
}

static void test_conns__reason_names(void **state)
{
	(void)state;
	assert_string_equal(conns_reason_name(CONNS_OPENING), "opening");
	assert_string_equal(conns_reason_name(CONNS_IDLE), "idle");
	assert_string_equal(conns_reason_name(CONNS_REQUEST), "request");
	assert_string_equal(conns_reason_name(CONNS_EVICTED), "evicted");
	assert_string_equal(conns_reason_name(CONNS_ADDRESS), "address");
	assert_string_equal(conns_reason_name(CONNS_MEMORY), "memory");
	assert_string_equal(conns_reason_name(CONNS_NREASONS), "unknown");
}

/*
 * Each phase has its deadline, from the accept or from the end of the
 * last answer, and nothing else moves it: the headers do not.
 */
static void test_conns__deadlines(void **state)
{
	struct conns *c = registry(100, 100, 0);
	struct pair opening, slow, idle, busy;

	(void)state;
	opening = open_from(c, NULL);
	slow = open_from(c, NULL);
	idle = open_from(c, NULL);
	busy = open_from(c, NULL);
	assert_true(opening.id >= 0 && slow.id >= 0 && idle.id >= 0 &&
		    busy.id >= 0);
	/* slow: headers at 9 s; its request still ends 30 s after accept. */
	now_ns += 1 * S;
	conns_begin(c, busy.id);
	conns_end(c, idle.id); /* idle from 1 s: until 6 s */
	now_ns += 5 * S - 1;   /* 6 s - 1 ns */
	assert_int_equal(conns_reap(c), 0);
	now_ns += 1;
	assert_int_equal(conns_reap(c), 1);
	assert_true(is_shut(&idle));
	now_ns += 3 * S;       /* 9 s */
	conns_begin(c, slow.id);
	now_ns += 1 * S - 1;   /* 10 s - 1 ns */
	assert_int_equal(conns_reap(c), 0);
	assert_false(is_shut(&opening));
	now_ns += 1;           /* 10 s */
	assert_int_equal(conns_reap(c), 1);
	assert_true(is_shut(&opening));
	assert_false(is_shut(&slow) || is_shut(&busy));
	now_ns += 20 * S - 1;  /* 30 s - 1 ns */
	assert_int_equal(conns_reap(c), 0);
	now_ns += 1;
	assert_int_equal(conns_reap(c), 2);
	assert_true(is_shut(&slow) && is_shut(&busy));
	assert_int_equal(closed(c, CONNS_OPENING), 1);
	assert_int_equal(closed(c, CONNS_IDLE), 1);
	assert_int_equal(closed(c, CONNS_REQUEST), 2);
	assert_int_equal(open_now(c), 0);
	/* Shut once only: closing connections are not reaped again. */
	now_ns += 100 * S;
	assert_int_equal(conns_reap(c), 0);
	drop(c, &opening);
	drop(c, &slow);
	drop(c, &idle);
	drop(c, &busy);
	conns_destroy(c);
}

/* A keep-alive connection gets a new start with each answer. */
static void test_conns__keep_alive(void **state)
{
	struct conns *c = registry(10, 10, 0);
	struct pair p = open_from(c, NULL);
	int i;

	(void)state;
	for (i = 0; i < 20; i++) {
		now_ns += 4 * S;
		conns_begin(c, p.id);
		now_ns += 1 * S;
		conns_end(c, p.id);
		assert_int_equal(conns_reap(c), 0);
	}
	now_ns += 5 * S;
	assert_int_equal(conns_reap(c), 1);
	assert_true(is_shut(&p));
	assert_int_equal(closed(c, CONNS_IDLE), 1);
	drop(c, &p);
	conns_destroy(c);
}

/*
 * Over the slots, the connection with the oldest progress is closed for
 * the new one: an old idle connection, then the slowest request; the new
 * connection never, and the one just answered last.
 */
static void test_conns__room(void **state)
{
	struct conns *c = registry(3, 6, 0);
	struct pair a, b, d, e, f;

	(void)state;
	a = open_from(c, NULL);
	now_ns += S;
	b = open_from(c, NULL);
	now_ns += S;
	d = open_from(c, NULL);
	now_ns += S;
	conns_begin(c, a.id); /* a's headers: progress */
	now_ns += S;
	e = open_from(c, NULL); /* b has gone longest without progress */
	assert_true(e.id >= 0);
	assert_true(is_shut(&b));
	assert_false(is_shut(&a) || is_shut(&d) || is_shut(&e));
	conns_end(c, d.id); /* d answered */
	now_ns += S;
	f = open_from(c, NULL); /* a, then e, then d */
	assert_true(is_shut(&a));
	assert_false(is_shut(&d) || is_shut(&e) || is_shut(&f));
	assert_int_equal(closed(c, CONNS_EVICTED), 2);
	assert_int_equal(open_now(c), 3);
	/* Progress reported on a closing connection changes nothing. */
	conns_begin(c, a.id);
	conns_end(c, b.id);
	assert_int_equal(open_now(c), 3);
	drop(c, &a);
	drop(c, &b);
	drop(c, &d);
	drop(c, &e);
	drop(c, &f);
	assert_int_equal(open_now(c), 0);
	conns_destroy(c);
}

/*
 * Entries of closing connections are taken until they are unregistered:
 * with every entry taken, a new connection is closed at once.  An id is
 * given again after conns_close().
 */
static void test_conns__capacity(void **state)
{
	struct conns *c = registry(1, 2, 0);
	struct pair a, b, d;
	int old;

	(void)state;
	a = open_from(c, NULL);
	b = open_from(c, NULL); /* a is shut, still registered */
	assert_true(is_shut(&a));
	d = open_from(c, NULL);
	assert_int_equal(d.id, -1);
	assert_true(is_shut(&d));
	assert_false(is_shut(&b));
	assert_int_equal(closed(c, CONNS_EVICTED), 2);
	old = a.id;
	drop(c, &a);
	drop(c, &d);
	d = open_from(c, NULL);
	assert_int_equal(d.id, old);
	assert_true(is_shut(&b));
	drop(c, &b);
	drop(c, &d);
	conns_destroy(c);
}

/* At most per_address open connections from one address; IPv4 and
 * IPv6 alike, and a socket without an address has no cap. */
static void test_conns__per_address(void **state)
{
	struct conns *c = registry(100, 100, 2);
	struct sockaddr_storage one = ipv4("10.0.0.1"), two = ipv4("10.0.0.2");
	struct sockaddr_storage v6 = ipv6("fd00::1");
	struct sockaddr_storage mapped = ipv6("::ffff:10.0.0.1");
	struct pair p[8];
	int i;

	(void)state;
	p[0] = open_from(c, &one);
	p[1] = open_from(c, &one);
	assert_false(conns_admit(c, (struct sockaddr *)&one, len_of(&one)));
	assert_false(conns_admit(c, (struct sockaddr *)&mapped,
				 len_of(&mapped)));
	assert_true(conns_admit(c, (struct sockaddr *)&two, len_of(&two)));
	p[2] = open_from(c, &one);
	assert_int_equal(p[2].id, -1);
	assert_true(is_shut(&p[2]));
	assert_false(is_shut(&p[0]) || is_shut(&p[1]));
	p[3] = open_from(c, &two);
	p[4] = open_from(c, &v6);
	p[5] = open_from(c, &v6);
	p[6] = open_from(c, &v6);
	assert_true(p[3].id >= 0 && p[4].id >= 0 && p[5].id >= 0);
	assert_int_equal(p[6].id, -1);
	p[7] = open_from(c, NULL);
	assert_true(p[7].id >= 0);
	assert_int_equal(closed(c, CONNS_ADDRESS), 4);
	/* A connection closed (or shut) makes room for its address. */
	drop(c, &p[0]);
	assert_true(conns_admit(c, (struct sockaddr *)&one, len_of(&one)));
	now_ns += 11 * S;
	assert_int_equal(conns_reap(c), 5);
	assert_true(conns_admit(c, (struct sockaddr *)&v6, len_of(&v6)));
	for (i = 0; i < 8; i++)
		if (i != 0)
			drop(c, &p[i]);
	conns_destroy(c);
}

/*
 * The address table against a plain count, with many addresses coming and
 * going in a small table (collisions, removals from the middle of runs).
 */
static void test_conns__address_table(void **state)
{
	enum { N = 64, ADDRS = 40 };
	struct conns *c = registry(N, N, 3);
	struct pair p[N];
	unsigned want[ADDRS] = { 0 }, from[N] = { 0 };
	unsigned seed = 12345, round, i, k;
	char text[32];

	(void)state;
	for (i = 0; i < N; i++)
		p[i].id = -1;
	for (round = 0; round < 4000; round++) {
		struct sockaddr_storage a;

		seed = seed * 1103515245u + 12345u;
		i = (seed >> 8) % N;
		if (p[i].id >= 0) {
			want[from[i]]--;
			drop(c, &p[i]);
			continue;
		}
		k = (seed >> 16) % ADDRS;
		snprintf(text, sizeof(text), "192.168.%u.%u", k % 3, k);
		a = ipv4(text);
		assert_int_equal(conns_admit(c, (struct sockaddr *)&a,
					     len_of(&a)),
				 want[k] < 3);
		p[i] = open_from(c, &a);
		if (want[k] < 3) {
			assert_true(p[i].id >= 0);
			want[k]++;
			from[i] = k;
		} else {
			assert_int_equal(p[i].id, -1);
			drop(c, &p[i]);
		}
	}
	for (i = 0; i < N; i++)
		if (p[i].id >= 0)
			drop(c, &p[i]);
	assert_int_equal(open_now(c), 0);
	conns_destroy(c);
}

/*
 * The ledger: takes within the total and the share of an address, gives
 * back, and a connection shut down or closed holds nothing.  Two holders
 * that took little leave the rest to others (the memory is taken as it
 * is needed, not for a whole Content-Length).
 */
static void test_conns__memory_ledger(void **state)
{
	struct conns *c = ledger();
	struct sockaddr_storage one = ipv4("10.0.0.1"), two = ipv4("10.0.0.2");
	struct sockaddr_storage three = ipv4("10.0.0.3");
	struct pair a = open_from(c, &one), b = open_from(c, &one);
	struct pair d = open_from(c, &two), e = open_from(c, &three);
	struct pair u = open_from(c, NULL);

	(void)state;
	assert_int_equal(take(c, a.id, 1), 0);
	assert_int_equal(take(c, d.id, 1), 0);
	assert_int_equal(take(c, e.id, 60), 0);
	assert_int_equal(held_now(c), 62);
	/* The share of 10.0.0.1: 60, of which a holds 1. */
	assert_int_equal(take(c, b.id, 38), 0);
	assert_int_equal(take(c, b.id, 22), -1);
	assert_int_equal(take(c, b.id, 21), -1); /* the total: 100 */
	conns_give(c, e.id, 50);
	assert_int_equal(take(c, b.id, 21), 0);
	assert_int_equal(take(c, b.id, 1), -1);  /* the share */
	assert_int_equal(take(c, u.id, 30), -1); /* the total */
	/* More than the total or a share at once: never. */
	assert_int_equal(take(c, u.id, 101), -1);
	assert_int_equal(take(c, d.id, 61), -1);
	/* Giving more than held gives what is held. */
	conns_give(c, b.id, 1000);
	assert_int_equal(held_now(c), 1 + 1 + 10);
	assert_int_equal(take(c, u.id, 88), 0);
	/* Closed: its memory is back, and its id holds nothing. */
	drop(c, &u);
	assert_int_equal(held_now(c), 12);
	assert_int_equal(take(c, -1, 1), -1);
	/* Shut down by the reaper: the same. */
	now_ns += 11 * S;
	assert_int_equal(conns_reap(c), 4);
	assert_int_equal(held_now(c), 0);
	assert_int_equal(take(c, a.id, 1), -1);
	conns_give(c, a.id, 1);
	assert_int_equal(held_now(c), 0);
	drop(c, &a);
	drop(c, &b);
	drop(c, &d);
	drop(c, &e);
	assert_int_equal(closed(c, CONNS_MEMORY), 0);
	conns_destroy(c);
}

/*
 * When the memory is short, a slow holder (fewer than slow_bytes of body
 * in the last slow_ns, past the first) is shut down for it (reason
 * memory) and its memory taken back; a holder whose body comes fast, or
 * the taker itself, never is.  When the share of an address is what is
 * short, only a holder of that address is.
 */
static void test_conns__memory_eviction(void **state)
{
	struct conns *c = ledger();
	struct sockaddr_storage one = ipv4("10.0.0.1"), two = ipv4("10.0.0.2");
	struct sockaddr_storage three = ipv4("10.0.0.3");
	struct pair a = open_from(c, &one), b = open_from(c, &two);
	struct pair d = open_from(c, &three), e = open_from(c, &three);

	(void)state;
	assert_int_equal(take(c, a.id, 50), 0);
	conns_touch(c, a.id, 25);
	assert_int_equal(take(c, b.id, 40), 0);
	/* Within the first second, nobody is slow: refused, nobody shut. */
	assert_int_equal(take(c, d.id, 20), -1);
	assert_false(is_shut(&a) || is_shut(&b));
	/* 1.5 s on: a's 25 bytes count (they came within 2 s); b sends 8
	 * a second, below the floor of 10: b goes. */
	now_ns += S / 2;
	conns_touch(c, b.id, 4);
	now_ns += S / 2;
	conns_touch(c, b.id, 4);
	now_ns += S / 2;
	assert_int_equal(take(c, d.id, 20), 0);
	assert_true(is_shut(&b));
	assert_false(is_shut(&a) || is_shut(&d));
	assert_int_equal(closed(c, CONNS_MEMORY), 1);
	assert_int_equal(held_now(c), 70);
	conns_give(c, b.id, 40); /* b's thread gives back: nothing more */
	assert_int_equal(held_now(c), 70);
	/* a keeps its pace, 10 a second: d (slow now too, but the taker)
	 * stays, and so does a. */
	now_ns += S / 2;
	conns_touch(c, a.id, 5);
	now_ns += S / 2;
	conns_touch(c, a.id, 5);
	assert_int_equal(take(c, d.id, 31), -1);
	assert_false(is_shut(&a) || is_shut(&d));
	/* The share of 10.0.0.3 (60): e takes d's place, not a's (slow by
	 * now: a byte every 0.9 s is no pace). */
	conns_touch(c, e.id, 20);
	assert_int_equal(take(c, e.id, 30), 0);
	assert_false(is_shut(&d));
	now_ns += 2 * S;
	conns_touch(c, a.id, 1);
	conns_touch(c, e.id, 10);
	assert_int_equal(take(c, e.id, 20), 0);
	assert_true(is_shut(&d));
	assert_false(is_shut(&a) || is_shut(&e));
	assert_int_equal(closed(c, CONNS_MEMORY), 2);
	assert_int_equal(held_now(c), 100);
	drop(c, &a);
	drop(c, &b);
	drop(c, &d);
	drop(c, &e);
	assert_int_equal(held_now(c), 0);
	conns_destroy(c);
}

/*
 * Nobody is closed for nothing: a take that the slow holders' memory
 * cannot make room for fails and closes none of them; the smaller size
 * (need) that fits without closing is taken before anybody is closed for
 * the larger (want); and a holder is closed for need, never for want.
 */
static void test_conns__memory_no_waste(void **state)
{
	struct conns *c = ledger();
	struct sockaddr_storage one = ipv4("10.0.0.1"), two = ipv4("10.0.0.2");
	struct sockaddr_storage three = ipv4("10.0.0.3");
	struct pair a = open_from(c, &one), b = open_from(c, &two);
	struct pair d = open_from(c, &three), t = open_from(c, NULL);

	(void)state;
	assert_int_equal(take(c, a.id, 20), 0);
	assert_int_equal(take(c, b.id, 20), 0);
	assert_int_equal(take(c, d.id, 40), 0);
	now_ns += 3 * S;
	conns_touch(c, d.id, 100); /* fast: 40 not to be had */
	/* a and b are slow, 40 of them; 20 are free: 61 cannot be had. */
	assert_int_equal(take(c, t.id, 61), -1);
	assert_false(is_shut(&a) || is_shut(&b) || is_shut(&d));
	assert_int_equal(closed(c, CONNS_MEMORY), 0);
	/* want 40 would close a, need 15 fits: 15, nobody closed. */
	assert_int_equal(conns_take(c, t.id, 40, 15), 15);
	assert_false(is_shut(&a) || is_shut(&b));
	/* want 30, need 20: one slow holder goes for 20 (5 free), not two. */
	assert_int_equal(conns_take(c, t.id, 30, 20), 20);
	assert_int_equal(is_shut(&a) + is_shut(&b), 1);
	assert_int_equal(closed(c, CONNS_MEMORY), 1);
	assert_int_equal(held_now(c), 20 + 40 + 35);
	/* need above want, or 0: refused. */
	assert_int_equal(conns_take(c, t.id, 1, 2), 0);
	assert_int_equal(conns_take(c, t.id, 0, 0), 0);
	drop(c, &a);
	drop(c, &b);
	drop(c, &d);
	drop(c, &t);
	conns_destroy(c);
}

/*
 * Two addresses cannot keep the memory by trickling: with the server's
 * limits (64 MiB, 48 MiB an address, slow below 512 KiB in 2 s), A holds
 * 40 MiB (20 MiB in) and B 24 MiB (12 MiB in), then each sends a byte
 * every 0.9 s; a review of 64 KiB then gets its memory, and only one of
 * them, the larger, is closed for it.  An upload that goes on fast is
 * never closed for memory, even holding more than the others.
 */
static void test_conns__memory_tricklers(void **state)
{
	struct conns_limits lim = {
		.slots = 16, .capacity = 16, .per_address = 8,
		.open_ns = 10 * S, .idle_ns = 10 * S, .request_ns = 30 * S,
		.memory = (size_t)64 << 20, .memory_per_address = (size_t)48 << 20,
		.slow_ns = 2 * S, .slow_bytes = (size_t)512 << 10,
		.clock = fake_clock,
	};
	struct conns *c = conns_create(&lim);
	struct sockaddr_storage api = ipv4("10.0.0.1"), ta = ipv4("10.0.0.2");
	struct sockaddr_storage tb = ipv4("10.0.0.3");
	struct pair a, b, r, up, t;
	int i;

	(void)state;
	assert_non_null(c);
	now_ns = 1000 * S;
	a = open_from(c, &ta);
	b = open_from(c, &tb);
	conns_begin(c, a.id);
	conns_begin(c, b.id);
	conns_touch(c, a.id, (size_t)20 << 20);
	assert_int_equal(take(c, a.id, (size_t)40 << 20), 0);
	conns_touch(c, b.id, (size_t)12 << 20);
	assert_int_equal(take(c, b.id, (size_t)24 << 20), 0);
	for (i = 0; i < 6; i++) {
		now_ns += S * 9 / 10;
		conns_touch(c, a.id, 1);
		conns_touch(c, b.id, 1);
	}
	r = open_from(c, &api);
	conns_begin(c, r.id);
	conns_touch(c, r.id, 8 << 10);
	assert_int_equal(take(c, r.id, 64 << 10), 0);
	assert_true(is_shut(&a));
	assert_false(is_shut(&b) || is_shut(&r));
	assert_int_equal(closed(c, CONNS_MEMORY), 1);
	drop(c, &r);

	/* The API server uploads 36 MiB at 8 MiB a second; B trickles. */
	up = open_from(c, &api);
	conns_begin(c, up.id);
	for (i = 0; i < 9; i++) {
		conns_touch(c, up.id, (size_t)4 << 20);
		assert_int_equal(take(c, up.id, (size_t)4 << 20), 0);
		now_ns += S / 2;
		conns_touch(c, b.id, 1);
	}
	/* A tenant's new body: B (slow) is closed for it, never the
	 * upload, and when only the upload holds, the tenant is refused. */
	t = open_from(c, &ta);
	conns_begin(c, t.id);
	assert_int_equal(take(c, t.id, (size_t)8 << 20), 0);
	assert_true(is_shut(&b));
	assert_int_equal(take(c, t.id, (size_t)21 << 20), -1);
	assert_false(is_shut(&up) || is_shut(&t));
	assert_int_equal(closed(c, CONNS_MEMORY), 2);
	drop(c, &a);
	drop(c, &b);
	drop(c, &up);
	drop(c, &t);
	conns_destroy(c);
}

/*
 * A body that is whole (conns_settle()) is never closed for memory,
 * however long it is being decided; one that is not, as slow, is.  The
 * next request of the connection is judged again.
 */
static void test_conns__memory_settled(void **state)
{
	struct conns *c = ledger();
	struct sockaddr_storage one = ipv4("10.0.0.1"), two = ipv4("10.0.0.2");
	struct sockaddr_storage three = ipv4("10.0.0.3");
	struct pair a = open_from(c, &one), b = open_from(c, &two);
	struct pair d = open_from(c, &three);

	(void)state;
	conns_begin(c, a.id);
	conns_touch(c, a.id, 50);
	assert_int_equal(take(c, a.id, 50), 0);
	conns_settle(c, a.id);
	conns_begin(c, d.id);
	conns_touch(c, d.id, 30);
	assert_int_equal(take(c, d.id, 30), 0);
	now_ns += 2 * S;
	conns_touch(c, b.id, 40);
	assert_int_equal(take(c, b.id, 40), 0);
	assert_true(is_shut(&d));
	assert_false(is_shut(&a));
	assert_int_equal(take(c, b.id, 11), -1);
	assert_false(is_shut(&a));
	/* a answered, its memory given back; its next body is judged. */
	conns_give(c, a.id, 50);
	conns_end(c, a.id);
	conns_begin(c, a.id);
	conns_touch(c, a.id, 50);
	assert_int_equal(take(c, a.id, 50), 0);
	now_ns += 2 * S;
	conns_touch(c, b.id, 40);
	assert_int_equal(take(c, b.id, 11), 0);
	assert_true(is_shut(&a));
	assert_int_equal(closed(c, CONNS_MEMORY), 2);
	drop(c, &a);
	drop(c, &b);
	drop(c, &d);
	conns_destroy(c);
}

/*
 * Draining: idle connections are closed at once, and each as it becomes
 * idle; a request without progress for stall_ns is closed by the reaper
 * long before its deadline, one with progress is not, nor one whose body
 * is whole and being decided (until its deadline); a connection still
 * opening keeps its deadline.
 */
static void test_conns__drain(void **state)
{
	struct conns *c = registry(8, 8, 0);
	struct pair idle = open_from(c, NULL), stalled = open_from(c, NULL);
	struct pair busy = open_from(c, NULL), opening = open_from(c, NULL);
	struct pair deciding = open_from(c, NULL);

	(void)state;
	conns_begin(c, idle.id);
	conns_end(c, idle.id);
	conns_begin(c, stalled.id);
	conns_begin(c, busy.id);
	conns_begin(c, deciding.id);
	conns_touch(c, deciding.id, 100);
	conns_settle(c, deciding.id);
	assert_int_equal(conns_drain(c, 5 * S), 1);
	assert_true(is_shut(&idle));
	assert_false(is_shut(&stalled) || is_shut(&busy) || is_shut(&opening));
	now_ns += 3 * S;
	conns_touch(c, busy.id, 1);
	assert_int_equal(conns_reap(c), 0);
	now_ns += 2 * S;
	assert_int_equal(conns_reap(c), 1);
	assert_true(is_shut(&stalled));
	assert_false(is_shut(&busy) || is_shut(&opening) || is_shut(&deciding));
	conns_end(c, busy.id);
	assert_true(is_shut(&busy));
	assert_false(is_shut(&opening));
	assert_int_equal(closed(c, CONNS_IDLE), 2);
	assert_int_equal(closed(c, CONNS_REQUEST), 1);
	now_ns += 5 * S;
	assert_int_equal(conns_reap(c), 1);
	assert_true(is_shut(&opening));
	assert_false(is_shut(&deciding));
	now_ns += 20 * S; /* its deadline: 30 s from the accept */
	assert_int_equal(conns_reap(c), 1);
	assert_true(is_shut(&deciding));
	drop(c, &idle);
	drop(c, &stalled);
	drop(c, &busy);
	drop(c, &opening);
	drop(c, &deciding);
	conns_destroy(c);
}

/* A connection refused outside the registry: shut down and counted. */
static void test_conns__refuse(void **state)
{
	struct conns *c = registry(4, 4, 0);
	struct pair p = { -1, -1, -1 };
	int sv[2];

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	p.mine = sv[0];
	p.peer = sv[1];
	assert_false(is_shut(&p));
	conns_refuse(c, p.mine, CONNS_MEMORY);
	assert_true(is_shut(&p));
	assert_int_equal(closed(c, CONNS_MEMORY), 1);
	assert_int_equal(open_now(c), 0);
	drop(c, &p);
	conns_destroy(c);
}

/*
 * Body bytes are progress: a connection whose body is arriving is not the
 * one closed to make room, whatever its age, but its deadline stays.
 */
static void test_conns__touch_is_progress(void **state)
{
	struct conns *c = registry(2, 4, 0);
	struct pair p[3];

	(void)state;
	p[0] = open_from(c, NULL);
	conns_begin(c, p[0].id);
	now_ns += S;
	p[1] = open_from(c, NULL);
	now_ns += S;
	conns_touch(c, p[0].id, 1);
	p[2] = open_from(c, NULL);
	assert_true(is_shut(&p[1]));
	assert_false(is_shut(&p[0]) || is_shut(&p[2]));
	now_ns += 28 * S;
	conns_touch(c, p[0].id, 1);
	conns_reap(c);
	assert_true(is_shut(&p[0]));
	assert_int_equal(closed(c, CONNS_REQUEST), 1);
	drop(c, &p[0]);
	drop(c, &p[1]);
	drop(c, &p[2]);
	conns_destroy(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_conns__reason_names),
		cmocka_unit_test(test_conns__deadlines),
		cmocka_unit_test(test_conns__keep_alive),
		cmocka_unit_test(test_conns__room),
		cmocka_unit_test(test_conns__capacity),
		cmocka_unit_test(test_conns__per_address),
		cmocka_unit_test(test_conns__address_table),
		cmocka_unit_test(test_conns__memory_ledger),
		cmocka_unit_test(test_conns__memory_eviction),
		cmocka_unit_test(test_conns__memory_no_waste),
		cmocka_unit_test(test_conns__memory_tricklers),
		cmocka_unit_test(test_conns__memory_settled),
		cmocka_unit_test(test_conns__touch_is_progress),
		cmocka_unit_test(test_conns__refuse),
		cmocka_unit_test(test_conns__drain),
	};

	return cmocka_run_group_tests_name("conns", tests, NULL, NULL);
}
