/*
 * addr.c - HOST:PORT parsing and binding (see addr.h).
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "addr.h"
#include "text.h"

int addr_parse(const char *hostport, struct addr *out, char *err,
	       size_t errlen)
{
	const char *colon, *h = hostport, *p;
	size_t n;
	uint64_t v;

	if (hostport[0] == '[') {
		const char *close = strchr(hostport, ']');

		if (!close || close[1] != ':') {
			snprintf(err, errlen, "\"%s\": expected [IPV6]:PORT",
				 hostport);
			return -1;
		}
		h = hostport + 1;
		n = (size_t)(close - h);
		colon = close + 1;
	} else {
		colon = strrchr(hostport, ':');
		if (!colon) {
			snprintf(err, errlen, "\"%s\": expected HOST:PORT",
				 hostport);
			return -1;
		}
		n = (size_t)(colon - hostport);
		if (memchr(hostport, ':', n)) {
			snprintf(err, errlen,
				 "\"%s\": write an IPv6 address in brackets, as [::1]:8443",
				 hostport);
			return -1;
		}
	}
	if (n >= sizeof(out->host)) {
		snprintf(err, errlen, "\"%s\": host name too long", hostport);
		return -1;
	}
	p = colon + 1;
	if (strlen(p) > 5 || text_u64_parsen(p, strlen(p), 65535, &v) || v < 1)
		goto bad_port;
	memcpy(out->host, h, n);
	out->host[n] = '\0';
	out->port = (unsigned)v;
	return 0;
bad_port:
	snprintf(err, errlen, "\"%s\": the port must be a number from 1 to 65535",
		 hostport);
	return -1;
}

enum addr_status addr_listen(const char *hostport, int *fd, char *err,
			     size_t errlen)
{
	struct addrinfo hints, *res = NULL, *ai;
	struct addr a;
	char port[8], why[160] = "no usable address";
	int pass, rc, one = 1, zero = 0;

	if (addr_parse(hostport, &a, err, errlen))
		return ADDR_BAD;
	snprintf(port, sizeof(port), "%u", a.port);
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	rc = getaddrinfo(a.host[0] ? a.host : NULL, port, &hints, &res);
	if (rc) {
		snprintf(err, errlen, "\"%s\": cannot resolve: %s", hostport,
			 gai_strerror(rc));
		return ADDR_BAD;
	}
	/* Pass 0 takes the preferred family, pass 1 the others. */
	for (pass = 0; pass < 2; pass++) {
		int want = a.host[0] ? AF_INET : AF_INET6;

		for (ai = res; ai; ai = ai->ai_next) {
			int s;

			if ((ai->ai_family == want) != (pass == 0))
				continue;
			s = socket(ai->ai_family,
				   ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
				   ai->ai_protocol);
			if (s < 0) {
				snprintf(why, sizeof(why), "%s", strerror(errno));
				continue;
			}
			setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
			if (ai->ai_family == AF_INET6 && !a.host[0])
				setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &zero,
					   sizeof(zero));
			if (bind(s, ai->ai_addr, ai->ai_addrlen) == 0 &&
			    listen(s, SOMAXCONN) == 0) {
				freeaddrinfo(res);
				*fd = s;
				return ADDR_OK;
			}
			snprintf(why, sizeof(why), "%s", strerror(errno));
			close(s);
		}
	}
	freeaddrinfo(res);
	snprintf(err, errlen, "cannot listen on \"%s\": %s", hostport, why);
	return ADDR_BIND;
}
