/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/* The TCP side channel on loopback: QP numbers, keys, commands. */

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "perf.h"

int
sc_listen(const char *addr, int port)
{
	struct sockaddr_in a;
	int fd, c, one = 1;

	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, addr, &a.sin_addr) != 1) {
		close(fd);
		return -1;
	}
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 1) < 0) {
		perror("droce-perf: side channel");
		close(fd);
		return -1;
	}
	c = accept(fd, NULL, NULL);
	close(fd);
	if (c >= 0)
		setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return c;
}

int
sc_connect(const char *host, int port, int timeout_s)
{
	struct sockaddr_in a;
	int fd, i, one = 1;

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, host, &a.sin_addr) != 1)
		return -1;
	for (i = 0; i < timeout_s * 10; i++) {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0) {
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one,
				sizeof(one));
			return fd;
		}
		close(fd);
		usleep(100000);
	}
	return -1;
}

int
sc_send(int fd, const void *b, size_t n)
{
	const char *p = b;

	while (n) {
		ssize_t r = send(fd, p, n, MSG_NOSIGNAL);

		if (r <= 0) {
			if (r < 0 && errno == EINTR)
				continue;
			return -1;
		}
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

int
sc_recv(int fd, void *b, size_t n)
{
	char *p = b;

	while (n) {
		ssize_t r = recv(fd, p, n, 0);

		if (r <= 0) {
			if (r < 0 && errno == EINTR)
				continue;
			return -1;
		}
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

int
sc_ready(int fd)
{
	struct pollfd pf = { .fd = fd, .events = POLLIN };

	return poll(&pf, 1, 0) > 0 ? 1 : 0;
}
