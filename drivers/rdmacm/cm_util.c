/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/* Addresses, GIDs, clocks and randomness for the CM. */

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "cm_internal.h"
#include "droce_verbs.h"
#include "droce_wire.h"

uint64_t
cm_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

uint32_t
cm_random32(void)
{
	uint32_t v;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != sizeof(v))
		v = (uint32_t)cm_now_ms() * 2654435761u;
	return v;
}

/* A communication (or SIDR request) ID on device d: attached to droced,
 * its top byte routes the peer's answers to this process (QP1 is the
 * daemon's). */
uint32_t
cm_new_comm_id(const struct cm_dev *d)
{
	int prefix = d != NULL ? droce_cm_prefix(d->verbs) : -1;
	uint32_t id = cm_random32();

	if (prefix >= 0)
		id = (uint32_t)prefix << 24 | (id & 0xffffff);
	return id;
}

int
cm_sa_len(const struct sockaddr *sa)
{
	if (sa == NULL)
		return 0;
	return sa->sa_family == AF_INET ? sizeof(struct sockaddr_in) :
		sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : 0;
}

/* IPv4 maps to ::ffff:a.b.c.d, as RoCEv2 GIDs do */
void
cm_sa_to_gid(const struct sockaddr *sa, uint8_t gid[16])
{
	memset(gid, 0, 16);
	if (sa->sa_family == AF_INET) {
		droce_gid_from_ipv4(gid, ntohl(
			((const struct sockaddr_in *)sa)->sin_addr.s_addr));
	} else if (sa->sa_family == AF_INET6) {
		memcpy(gid, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
	}
}

void
cm_gid_to_sa(const uint8_t gid[16], uint16_t port, struct sockaddr *sa)
{
	if (droce_gid_is_ipv4(gid, NULL)) {
		struct sockaddr_in *s = (struct sockaddr_in *)sa;

		memset(s, 0, sizeof(*s));
		s->sin_family = AF_INET;
		s->sin_port = htons(port);
		memcpy(&s->sin_addr, gid + 12, 4);
	} else {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)sa;

		memset(s, 0, sizeof(*s));
		s->sin6_family = AF_INET6;
		s->sin6_port = htons(port);
		memcpy(&s->sin6_addr, gid, 16);
	}
}

uint16_t
cm_sa_port(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)sa)->sin_port);
	if (sa->sa_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
	return 0;
}

void
cm_sa_set_port(struct sockaddr *sa, uint16_t port)
{
	if (sa->sa_family == AF_INET)
		((struct sockaddr_in *)sa)->sin_port = htons(port);
	else if (sa->sa_family == AF_INET6)
		((struct sockaddr_in6 *)sa)->sin6_port = htons(port);
}

bool
cm_sa_any(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ((const struct sockaddr_in *)sa)->sin_addr.s_addr ==
			htonl(INADDR_ANY);
	if (sa->sa_family == AF_INET6)
		return IN6_IS_ADDR_UNSPECIFIED(
			&((const struct sockaddr_in6 *)sa)->sin6_addr);
	return true;
}

bool
cm_sa_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr)
			>> 24) == IN_LOOPBACKNET;
	if (sa->sa_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(
			&((const struct sockaddr_in6 *)sa)->sin6_addr);
	return false;
}

/* rdma_cm's service ID: the port space above the port (cma.c) */
uint64_t
cm_service_id(enum rdma_port_space ps, uint16_t port)
{
	return (uint64_t)ps << 16 | port;
}
