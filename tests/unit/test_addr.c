/*
 * test_addr.c - listen addresses: parsing (good and bad forms, port
 * bounds, brackets, the empty host) and binding on the loopback.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "test.h"

#include "addr.h"

#define BAD_PORT "the port must be a number from 1 to 65535"

static void test_addr__good(void **state)
{
	static const struct {
		const char *in;
		const char *host;
		unsigned port;
	} cases[] = {
		{ "127.0.0.1:8443", "127.0.0.1", 8443 },
		{ "0.0.0.0:9090", "0.0.0.0", 9090 },
		{ "localhost:1", "localhost", 1 },
		{ "vgpu-webhook.vgpu-system.svc:443",
		  "vgpu-webhook.vgpu-system.svc", 443 },
		{ "[::1]:8443", "::1", 8443 },
		{ "[::]:8443", "::", 8443 },
		{ "[fe80::1%eth0]:8443", "fe80::1%eth0", 8443 },
		{ "[::ffff:127.0.0.1]:80", "::ffff:127.0.0.1", 80 },
		{ "host:08443", "host", 8443 },
		{ "host:00001", "host", 1 },
	};
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(cases); i++) {
		struct addr a;
		char err[256] = "";

		if (addr_parse(cases[i].in, &a, err, sizeof(err)))
			fail_msg("%s: %s", cases[i].in, err);
		assert_string_equal(a.host, cases[i].host);
		assert_int_equal(a.port, cases[i].port);
	}
}

static void test_addr__bad(void **state)
{
	static const struct {
		const char *in;
		const char *err;
	} cases[] = {
		{ "", "\"\": expected HOST:PORT" },
		{ "127.0.0.1", "\"127.0.0.1\": expected HOST:PORT" },
		{ "x", "\"x\": expected HOST:PORT" },
		{ "127.0.0.1:", "\"127.0.0.1:\": " BAD_PORT },
		{ "host:http", "\"host:http\": " BAD_PORT },
		{ "host:+80", "\"host:+80\": " BAD_PORT },
		{ "host:-80", "\"host:-80\": " BAD_PORT },
		{ "host: 80", "\"host: 80\": " BAD_PORT },
		{ "host:80 ", "\"host:80 \": " BAD_PORT },
		{ "host:0x50", "\"host:0x50\": " BAD_PORT },
		{ "host:008443", "\"host:008443\": " BAD_PORT },
		{ "host:99999999999999999999",
		  "\"host:99999999999999999999\": " BAD_PORT },
	};
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(cases); i++) {
		struct addr a = { "untouched", 7 };
		char err[256] = "";

		if (!addr_parse(cases[i].in, &a, err, sizeof(err)))
			fail_msg("%s: accepted", cases[i].in);
		assert_string_equal(err, cases[i].err);
		assert_string_equal(a.host, "untouched");
		assert_int_equal(a.port, 7);
	}
}

static void test_addr__ports(void **state)
{
	static const struct {
		const char *in;
		unsigned port; /* 0: refused */
	} cases[] = {
		{ "h:0", 0 },     { "h:00000", 0 }, { "h:1", 1 },
		{ "h:80", 80 },   { "h:65534", 65534 }, { "h:65535", 65535 },
		{ "h:65536", 0 }, { "h:99999", 0 }, { "h:100000", 0 },
	};
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(cases); i++) {
		struct addr a;
		char err[256];
		int rc = addr_parse(cases[i].in, &a, err, sizeof(err));

		if (!cases[i].port) {
			if (rc == 0)
				fail_msg("%s: accepted", cases[i].in);
			assert_non_null(strstr(err, BAD_PORT));
			continue;
		}
		if (rc)
			fail_msg("%s: %s", cases[i].in, err);
		assert_int_equal(a.port, cases[i].port);
	}
}

static void test_addr__brackets(void **state)
{
	static const struct {
		const char *in;
		const char *err;
	} bad[] = {
		{ "::1:8443",
		  "\"::1:8443\": write an IPv6 address in brackets, as [::1]:8443" },
		{ ":::8443",
		  "\":::8443\": write an IPv6 address in brackets, as [::1]:8443" },
		{ "[::1]8443", "\"[::1]8443\": expected [IPV6]:PORT" },
		{ "[::1", "\"[::1\": expected [IPV6]:PORT" },
		{ "[::1]", "\"[::1]\": expected [IPV6]:PORT" },
		{ "[::1]:", "\"[::1]:\": " BAD_PORT },
		{ "[::1]:0", "\"[::1]:0\": " BAD_PORT },
		{ "[::1]:8443]:1", "\"[::1]:8443]:1\": " BAD_PORT },
	};
	struct addr a;
	char err[256];
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(bad); i++) {
		if (!addr_parse(bad[i].in, &a, err, sizeof(err)))
			fail_msg("%s: accepted", bad[i].in);
		assert_string_equal(err, bad[i].err);
	}
	/* The last colon splits when there are no brackets. */
	assert_int_equal(addr_parse("[::1]:1", &a, err, sizeof(err)), 0);
	assert_string_equal(a.host, "::1");
	assert_int_equal(a.port, 1);
}

static void test_addr__empty_host(void **state)
{
	struct addr a;
	char err[256];

	(void)state;
	assert_int_equal(addr_parse(":8443", &a, err, sizeof(err)), 0);
	assert_string_equal(a.host, "");
	assert_int_equal(a.port, 8443);
	assert_int_equal(addr_parse("[]:8443", &a, err, sizeof(err)), 0);
	assert_string_equal(a.host, "");
	assert_int_equal(addr_parse(":", &a, err, sizeof(err)), -1);
	assert_int_equal(addr_parse(":0", &a, err, sizeof(err)), -1);
}

static void test_addr__host_length(void **state)
{
	char in[ADDR_HOST_MAX + 16], err[600];
	struct addr a;

	(void)state;
	memset(in, 'h', ADDR_HOST_MAX - 1);
	snprintf(in + ADDR_HOST_MAX - 1, 16, ":8443");
	assert_int_equal(addr_parse(in, &a, err, sizeof(err)), 0);
	assert_int_equal(strlen(a.host), ADDR_HOST_MAX - 1);

	memset(in, 'h', ADDR_HOST_MAX);
	snprintf(in + ADDR_HOST_MAX, 16, ":8443");
	assert_int_equal(addr_parse(in, &a, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "\": host name too long"));
}

/* A port that nothing listens on right now, from the kernel. */
static unsigned free_port(void)
{
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);
	int s = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(s >= 0);
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(getsockname(s, (struct sockaddr *)&sa, &len), 0);
	close(s);
	return ntohs(sa.sin_port);
}

/*
 * addr_listen() on fmt ("127.0.0.1:%u", ":%u") with a port that was free a
 * moment ago; another process (a load test's clients) may take it in
 * between, so a port found in use is tried again with another, a few
 * times.  Returns the port, with *fd listening.
 */
static unsigned listen_free(const char *fmt, int *fd)
{
	char in[64], err[256];
	int tries;

	for (tries = 0; tries < 20; tries++) {
		unsigned port = free_port();
		enum addr_status rc;

		snprintf(in, sizeof(in), fmt, port);
		rc = addr_listen(in, fd, err, sizeof(err));
		if (rc == ADDR_OK)
			return port;
		assert_int_equal(rc, ADDR_BIND);
	}
	fail_msg("no free port in 20 tries: %s", err);
	return 0;
}

static unsigned bound_port(int fd, int *family)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	assert_int_equal(getsockname(fd, (struct sockaddr *)&ss, &len), 0);
	*family = ss.ss_family;
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

static void connect_loopback(unsigned port)
{
	struct sockaddr_in sa;
	int s = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(s >= 0);
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(s);
}

static void test_addr__listen_loopback(void **state)
{
	char in[64], err[256], want[128];
	unsigned port;
	int fd = -1, again = -1, family, accepting = 0;
	socklen_t len = sizeof(accepting);

	(void)state;
	port = listen_free("127.0.0.1:%u", &fd);
	snprintf(in, sizeof(in), "127.0.0.1:%u", port);
	assert_int_equal(bound_port(fd, &family), port);
	assert_int_equal(family, AF_INET);
	assert_int_equal(getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &accepting,
				    &len), 0);
	assert_true(accepting);
	assert_true(fcntl(fd, F_GETFL) & O_NONBLOCK);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	connect_loopback(port);

	/* The same address again: taken. */
	assert_int_equal(addr_listen(in, &again, err, sizeof(err)), ADDR_BIND);
	assert_int_equal(again, -1);
	snprintf(want, sizeof(want), "cannot listen on \"%s\": %s", in,
		 strerror(EADDRINUSE));
	assert_string_equal(err, want);
	close(fd);
}

/* Port 0 (any free port) is refused before anything is bound. */
static void test_addr__listen_port_zero(void **state)
{
	char err[256];
	int fd = -1;

	(void)state;
	assert_int_equal(addr_listen("127.0.0.1:0", &fd, err, sizeof(err)),
			 ADDR_BAD);
	assert_int_equal(fd, -1);
	assert_string_equal(err, "\"127.0.0.1:0\": " BAD_PORT);
}

/* The empty host listens on every address, the loopback among them. */
static void test_addr__listen_every_address(void **state)
{
	int fd = -1, family;
	unsigned port;

	(void)state;
	port = listen_free(":%u", &fd);
	assert_int_equal(bound_port(fd, &family), port);
	assert_true(family == AF_INET6 || family == AF_INET);
	connect_loopback(port);
	close(fd);
}

static void test_addr__listen_unresolvable(void **state)
{
	char err[256];
	int fd = -1;

	(void)state;
	assert_int_equal(addr_listen("no-such-host.invalid:8443", &fd, err,
				     sizeof(err)),
			 ADDR_BAD);
	assert_int_equal(fd, -1);
	assert_non_null(strstr(err, "\"no-such-host.invalid:8443\": "
				    "cannot resolve: "));
	assert_int_equal(addr_listen("::1:8443", &fd, err, sizeof(err)),
			 ADDR_BAD);
	assert_non_null(strstr(err, "in brackets"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_addr__good),
		cmocka_unit_test(test_addr__bad),
		cmocka_unit_test(test_addr__ports),
		cmocka_unit_test(test_addr__brackets),
		cmocka_unit_test(test_addr__empty_host),
		cmocka_unit_test(test_addr__host_length),
		cmocka_unit_test(test_addr__listen_loopback),
		cmocka_unit_test(test_addr__listen_port_zero),
		cmocka_unit_test(test_addr__listen_every_address),
		cmocka_unit_test(test_addr__listen_unresolvable),
	};

	return cmocka_run_group_tests_name("addr", tests, NULL, NULL);
}
