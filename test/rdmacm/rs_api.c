/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * rsockets' behaviour where rstream does not go (test/rdmacm/meson.build):
 * datagram sockets refused, a non-blocking accept and connect finished
 * through rpoll and SO_ERROR, a connect nobody listens for refused, 8 MB
 * each way through a 128 KB receive buffer with every byte checked,
 * MSG_PEEK, rselect, the addresses, options, 8 MB both ways at once
 * (a sending thread beside a receiving one, on one socket), and EOF
 * after the peer's rshutdown(SHUT_WR) while the other way stays open.
 *
 *   rs_api server ADDR | rs_api client ADDR
 *
 * Prints "ok: ..." per check and "PASS" at the end; exits 1 at the first
 * failure.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>

#include <rdma/rsocket.h>

#define PORT 7472
#define NOPORT 7473
#define BIG (8u << 20)

#define CHECK(c, what) do {						\
	if (!(c)) {							\
		printf("FAIL: %s (%s)\n", what, strerror(errno));	\
		exit(1);						\
	}								\
	printf("ok: %s\n", what);					\
	fflush(stdout);							\
} while (0)

static struct sockaddr_in
addr_of(const char *ip, int port)
{
	struct sockaddr_in a;

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons(port);
	if (ip != NULL)
		inet_pton(AF_INET, ip, &a.sin_addr);
	return a;
}

static uint8_t
pattern(size_t i, uint8_t seed)
{
	return (uint8_t)(i * 7 + (i >> 12) + seed);
}

static void
send_big(int s, uint8_t seed)
{
	static uint8_t buf[BIG];
	size_t off = 0, i;
	ssize_t n;

	for (i = 0; i < BIG; i++)
		buf[i] = pattern(i, seed);
	while (off < BIG) {
		/* uneven pieces: chunks, wraps and partial messages */
		size_t len = BIG - off < 300000 ? BIG - off : 300000 - off % 977;

		n = rsend(s, buf + off, len, 0);
		if (n <= 0) {
			printf("FAIL: rsend (%s)\n", strerror(errno));
			exit(1);
		}
		off += (size_t)n;
	}
}

static bool
recv_big(int s, uint8_t seed)
{
	static uint8_t buf[BIG];
	size_t off = 0, i;
	ssize_t n;

	while (off < BIG) {
		/* half with MSG_WAITALL, half with whatever has come */
		n = rrecv(s, buf + off, BIG - off < 65537 ? BIG - off : 65537,
				(off / 65537) % 2 ? MSG_WAITALL : 0);
		if (n <= 0) {
			printf("FAIL: rrecv at %zu: %zd (%s)\n", off, n,
				strerror(errno));
			exit(1);
		}
		off += (size_t)n;
	}
	for (i = 0; i < BIG; i++)
		if (buf[i] != pattern(i, seed)) {
			printf("FAIL: byte %zu is %u, not %u\n", i, buf[i],
				pattern(i, seed));
			return false;
		}
	return true;
}

struct duplex {
	int s;
	uint8_t seed;
};

static void *
duplex_send(void *arg)
{
	struct duplex *d = arg;

	send_big(d->s, d->seed);
	return NULL;
}

/* 8 MB out from a thread while 8 MB come in on this one */
static void
duplex(int s, uint8_t out, uint8_t in)
{
	struct duplex d = { s, out };
	pthread_t t;

	CHECK(pthread_create(&t, NULL, duplex_send, &d) == 0, "sender thread");
	CHECK(recv_big(s, in), "8 MB in while 8 MB go out, every byte");
	pthread_join(t, NULL);
}

static int
wait_for(int s, short ev, int ms)
{
	struct pollfd p = { .fd = s, .events = ev };
	int n = rpoll(&p, 1, ms);

	return n == 1 ? p.revents : -1;
}

static void
refusals(void)
{
	errno = 0;
	CHECK(rsocket(AF_INET, SOCK_DGRAM, 0) < 0 && errno == EPROTONOSUPPORT,
		"SOCK_DGRAM refused with EPROTONOSUPPORT");
	CHECK(rsocket(AF_UNIX, SOCK_STREAM, 0) < 0, "AF_UNIX refused");
	CHECK(rclose(12345) < 0 && errno == EBADF, "rclose of no rsocket: EBADF");
}

static void
server(const char *ip)
{
	struct sockaddr_in a = addr_of(NULL, PORT), peer;
	socklen_t len = sizeof(peer);
	int l, s, one = 1, v;
	char b[8];
	fd_set rd;
	struct timeval tv = { 60, 0 };

	refusals();
	l = rsocket(AF_INET, SOCK_STREAM, 0);
	CHECK(l >= 0, "rsocket");
	CHECK(rsetsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == 0,
		"SO_REUSEADDR");
	CHECK(rbind(l, (struct sockaddr *)&a, sizeof(a)) == 0, "rbind");
	CHECK(rlisten(l, 4) == 0, "rlisten");
	CHECK(rfcntl(l, F_SETFL, O_NONBLOCK) == 0, "O_NONBLOCK listener");
	errno = 0;
	CHECK(raccept(l, NULL, NULL) < 0 && (errno == EAGAIN ||
		errno == EWOULDBLOCK), "raccept with nothing: EAGAIN");
	CHECK(wait_for(l, POLLIN, 120000) & POLLIN, "rpoll: a connection waits");
	s = raccept(l, (struct sockaddr *)&peer, &len);
	CHECK(s >= 0, "raccept");
	CHECK(peer.sin_family == AF_INET && len == sizeof(peer),
		"raccept's peer address");
	CHECK(rfcntl(s, F_SETFL, 0) == 0, "blocking again");
	CHECK(recv_big(s, 1), "8 MB in, every byte");
	send_big(s, 2);
	printf("ok: 8 MB out\n");
	duplex(s, 4, 3);
	/* the client's "peek" */
	CHECK(rrecv(s, b, 4, MSG_PEEK | MSG_WAITALL) == 4 && !memcmp(b, "peek", 4),
		"MSG_PEEK sees the data");
	FD_ZERO(&rd);
	FD_SET(s, &rd);
	CHECK(rselect(s + 1, &rd, NULL, NULL, &tv) == 1 && FD_ISSET(s, &rd),
		"rselect: readable");
	CHECK(rrecv(s, b, 4, MSG_WAITALL) == 4 && !memcmp(b, "peek", 4),
		"and rrecv takes the same");
	CHECK(rrecv(s, b, sizeof(b), 0) == 0, "EOF after the peer's SHUT_WR");
	CHECK(rsend(s, "bye", 3, 0) == 3, "rsend after the peer's SHUT_WR");
	len = sizeof(v);
	CHECK(rgetsockopt(s, SOL_SOCKET, SO_ERROR, &v, &len) == 0 && v == 0,
		"SO_ERROR 0");
	(void)ip;
	rshutdown(s, SHUT_RDWR);
	rclose(s);
	rclose(l);
	printf("PASS\n");
}

static void
client(const char *ip)
{
	struct sockaddr_in a = addr_of(ip, PORT), no = addr_of(ip, NOPORT), me;
	socklen_t len = sizeof(me);
	int s, r, one = 1, v, rev;
	char b[8];

	refusals();
	r = rsocket(AF_INET, SOCK_STREAM, 0);
	errno = 0;
	CHECK(rconnect(r, (struct sockaddr *)&no, sizeof(no)) < 0 &&
		errno == ECONNREFUSED, "rconnect to no listener: ECONNREFUSED");
	rclose(r);

	s = rsocket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	CHECK(s >= 0, "rsocket SOCK_NONBLOCK");
	CHECK(rsetsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) == 0,
		"TCP_NODELAY");
	v = 32;
	CHECK(rsetsockopt(s, SOL_RDMA, RDMA_INLINE, &v, sizeof(v)) == 0,
		"RDMA_INLINE before connecting");
	errno = 0;
	r = rconnect(s, (struct sockaddr *)&a, sizeof(a));
	CHECK(r == 0 || errno == EINPROGRESS, "rconnect: EINPROGRESS");
	do {
		rev = wait_for(s, POLLOUT, 60000);
	} while (rev == 0);
	CHECK(rev > 0 && (rev & POLLOUT) && !(rev & POLLERR),
		"rpoll: POLLOUT once connected");
	len = sizeof(v);
	CHECK(rgetsockopt(s, SOL_SOCKET, SO_ERROR, &v, &len) == 0 && v == 0,
		"SO_ERROR 0 after connecting");
	CHECK(rsetsockopt(s, SOL_RDMA, RDMA_INLINE, &v, sizeof(v)) < 0 &&
		errno == EINVAL, "RDMA_INLINE once connected: EINVAL");
	len = sizeof(v);
	CHECK(rgetsockopt(s, IPPROTO_TCP, TCP_NODELAY, &v, &len) == 0 && v == 1,
		"TCP_NODELAY reads back");
	len = sizeof(me);
	CHECK(rgetsockname(s, (struct sockaddr *)&me, &len) == 0 &&
		me.sin_family == AF_INET && me.sin_port != 0, "rgetsockname");
	len = sizeof(me);
	CHECK(rgetpeername(s, (struct sockaddr *)&me, &len) == 0 &&
		me.sin_port == htons(PORT) &&
		me.sin_addr.s_addr == a.sin_addr.s_addr, "rgetpeername");
	CHECK(rfcntl(s, F_GETFL) & O_NONBLOCK, "F_GETFL: O_NONBLOCK");
	errno = 0;
	CHECK(rrecv(s, b, sizeof(b), 0) < 0 && errno == EAGAIN,
		"non-blocking rrecv with nothing: EAGAIN");
	CHECK(rfcntl(s, F_SETFL, 0) == 0, "blocking again");
	send_big(s, 1);
	printf("ok: 8 MB out\n");
	CHECK(recv_big(s, 2), "8 MB in, every byte");
	duplex(s, 3, 4);
	CHECK(rsend(s, "peek", 4, 0) == 4, "rsend");
	CHECK(rshutdown(s, SHUT_WR) == 0, "rshutdown SHUT_WR");
	CHECK(rrecv(s, b, 3, MSG_WAITALL) == 3 && !memcmp(b, "bye", 3),
		"rrecv after our SHUT_WR");
	CHECK(rrecv(s, b, sizeof(b), 0) == 0, "EOF once the server closes");
	rclose(s);
	printf("PASS\n");
}

int
main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc != 3) {
		fprintf(stderr, "usage: rs_api server|client ADDR\n");
		return 2;
	}
	if (!strcmp(argv[1], "server"))
		server(argv[2]);
	else
		client(argv[2]);
	return 0;
}
