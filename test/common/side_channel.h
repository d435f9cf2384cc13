/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * The TCP side channel of the test's own verbs programs (awr_pair,
 * flush_pair), as ibv_rc_pingpong's: the server accepts one connection
 * on the port, the client retries for 10 s, and each exchange writes a
 * block and reads the peer's.
 */

#ifndef DROCE_TEST_SIDE_CHANNEL_H
#define DROCE_TEST_SIDE_CHANNEL_H

#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

/* The server at host:port, tried every 100 ms for 10 s: an fd or -1. */
static inline int
side_connect(const char *host, const char *port)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res;
	int fd = -1, i;

	if (getaddrinfo(host, port, &hints, &res))
		return -1;
	for (i = 0; i < 100 && fd < 0; i++) {
		fd = socket(res->ai_family, res->ai_socktype, 0);
		if (connect(fd, res->ai_addr, res->ai_addrlen) != 0) {
			close(fd);
			fd = -1;
			usleep(100000);
		}
	}
	freeaddrinfo(res);
	return fd;
}

/* One client on port: an fd or -1. */
static inline int
side_accept(const char *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
		.sin_port = htons((uint16_t)atoi(port)) };
	int one = 1, l, fd;

	l = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1)) {
		close(l);
		return -1;
	}
	fd = accept(l, NULL, NULL);
	close(l);
	return fd;
}

/* Write len bytes of out, then read the peer's len into in (none when in
 * is NULL): 0 or -1. */
static inline int
side_xfer(int fd, const void *out, void *in, size_t len)
{
	size_t got = 0;

	if (write(fd, out, len) != (ssize_t)len)
		return -1;
	while (in != NULL && got < len) {
		ssize_t r = read(fd, (char *)in + got, len - got);

		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	return 0;
}

#endif
