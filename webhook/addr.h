/*
 * addr.h - listen addresses: HOST:PORT in, a listening socket out.
 *
 * HOST is a host name, an IPv4 address, an IPv6 address in brackets
 * ("[::1]:8443"), or empty (":8443"), which means every address.  PORT is
 * a decimal number from 1 to 65535, of at most five digits.
 *
 * Messages quote the address and never name the setting it came from
 * ("--listen"...): the caller puts that in front.
 */
#ifndef ADDR_H
#define ADDR_H

#include <stddef.h>

#define ADDR_HOST_MAX 256

struct addr {
	char host[ADDR_HOST_MAX]; /* brackets removed; "" for every address */
	unsigned port;            /* 1..65535 */
};

enum addr_status {
	ADDR_OK,
	ADDR_BAD,  /* the address does not parse, or does not resolve */
	ADDR_BIND, /* it resolves, but none of its addresses can be bound */
};

/*
 * Parses hostport.  Returns 0 with *out filled, or -1 with a message in
 * err[0..errlen) (*out untouched).
 */
int addr_parse(const char *hostport, struct addr *out, char *err,
	       size_t errlen) __attribute__((warn_unused_result));

/*
 * Parses and resolves hostport, then binds and listens on it: a
 * non-blocking, close-on-exec TCP socket with SO_REUSEADDR.  An empty host
 * takes IPv6 "::" with IPv4 mapped in (IPv4 "0.0.0.0" when there is no
 * IPv6); a name takes its first IPv4 address that binds, then the others.
 * Returns ADDR_OK with *fd set (the caller closes it), or another status
 * with a message in err[0..errlen).
 */
enum addr_status addr_listen(const char *hostport, int *fd, char *err,
			     size_t errlen) __attribute__((warn_unused_result));

#endif /* ADDR_H */
