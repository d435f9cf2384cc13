/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * Addresses: binding (ports per port space, as rdma_cm keeps them),
 * address resolution through droce's own ARP/ND (no kernel neighbour
 * table: droce's port is not a kernel interface), routes, and
 * rdma_getaddrinfo.
 */

#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>

#include "cm_internal.h"
#include "droce_verbs.h"
#include "droce_wire.h"

static bool
port_taken(const struct cm_id_priv *self, const struct sockaddr *sa,
		uint16_t port)
{
	const struct cm_id_priv *p;
	uint8_t a[16], b[16];

	cm_sa_to_gid(sa, a);
	for (p = cm.ids; p != NULL; p = p->next) {
		const struct sockaddr *o = &p->id.route.addr.src_addr;

		if (p == self || !p->bound || p->id.ps != self->id.ps ||
				cm_sa_port(o) != port)
			continue;
		if (p->reuse && self->reuse && p->state != CM_LISTEN)
			continue;
		cm_sa_to_gid(o, b);
		if (cm_sa_any(o) || cm_sa_any(sa) || memcmp(a, b, 16) == 0)
			return true;
	}
	return false;
}

/* Take sa's port for the ID, or a free one when it is 0 (lock held). */
int
cm_bind_port(struct cm_id_priv *p, struct sockaddr *sa)
{
	uint16_t port = cm_sa_port(sa);
	int tries;

	if (port != 0) {
		if (port_taken(p, sa, port)) {
			errno = EADDRINUSE;
			return -1;
		}
		return 0;
	}
	for (tries = 0; tries < 28000; tries++) {
		port = cm.next_port++;
		if (cm.next_port < 32768 || cm.next_port >= 60999)
			cm.next_port = 32768;
		if (!port_taken(p, sa, port)) {
			cm_sa_set_port(sa, port);
			return 0;
		}
	}
	errno = EADDRNOTAVAIL;
	return -1;
}

static void
set_src(struct cm_id_priv *p, const struct sockaddr *sa)
{
	struct rdma_addr *ad = &p->id.route.addr;

	memset(&ad->src_storage, 0, sizeof(ad->src_storage));
	memcpy(&ad->src_storage, sa, (size_t)cm_sa_len(sa));
	cm_sa_to_gid(sa, ad->addr.ibaddr.sgid.raw);
	ad->addr.ibaddr.pkey = htobe16(0xffff);
}

static int
bind_locked(struct cm_id_priv *p, const struct sockaddr *addr)
{
	struct sockaddr_storage ss;
	struct cm_dev *d = NULL;
	uint8_t gi = 0;

	if (cm_sa_len(addr) == 0) {
		errno = EAFNOSUPPORT;
		return -1;
	}
	if (p->bound || p->state != CM_IDLE) {
		errno = EINVAL;
		return -1;
	}
	/*
	 * A loopback address is no droce port's, yet binding it succeeds,
	 * to no device, as a wildcard does: libfabric's verbs provider
	 * binds "localhost" when it is given no address, and then takes the
	 * source of its MSG endpoints from its devices' interfaces when the
	 * bound ID has no device (and lists no MSG endpoint where the bind
	 * fails). Attaching the first device, as the kernel's rdma_cm does
	 * for a loopback destination, would make that source 127.0.0.1,
	 * an address no peer can reach.
	 */
	if (!cm_sa_any(addr) && !cm_sa_loopback(addr) &&
			cm_dev_find_addr(addr, &d, &gi) != 0) {
		errno = EADDRNOTAVAIL;	/* not an address of a droce port */
		return -1;
	}
	memset(&ss, 0, sizeof(ss));
	memcpy(&ss, addr, (size_t)cm_sa_len(addr));
	if (cm_bind_port(p, (struct sockaddr *)&ss) != 0)
		return -1;
	set_src(p, (struct sockaddr *)&ss);
	if (d != NULL) {
		p->dev = d;
		p->sgid_index = gi;
		p->id.verbs = d->verbs;
		p->id.port_num = d->port_num;
	}
	p->bound = true;
	return 0;
}

int
rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	int rc;

	if (id == NULL || addr == NULL) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&cm.lock);
	rc = bind_locked(cm_id(id), addr);
	pthread_mutex_unlock(&cm.lock);
	return rc;
}

/* Leading bits a and b (16 bytes each) share. */
static unsigned int
common_bits(const uint8_t *a, const uint8_t *b)
{
	unsigned int n = 0, i;

	for (i = 0; i < 16 && a[i] == b[i]; i++)
		n += 8;
	if (i < 16)
		n += (unsigned int)__builtin_clz((unsigned int)(a[i] ^ b[i]) << 24);
	return n;
}

/*
 * A source for dst: of the devices' GIDs of dst's kind, the one sharing
 * the longest prefix with it (droce has no routing table: a peer on a
 * port's subnet is reached through that port), the first on a tie.
 */
static int
pick_src(const struct sockaddr *dst, struct sockaddr_storage *src)
{
	uint8_t peer[16], gi;
	unsigned int best_bits = 0, bits;
	bool found = false;
	union ibv_gid g;
	struct cm_dev *d;

	cm_sa_to_gid(dst, peer);
	for (d = cm.devs; d != NULL; d = d->next) {
		struct sockaddr_storage ss;

		gi = cm_dev_gid_index(d, NULL, peer);
		if (ibv_query_gid(d->verbs, d->port_num, gi, &g) != 0)
			continue;
		if (droce_gid_is_ipv4(g.raw, NULL) != droce_gid_is_ipv4(peer, NULL))
			continue;
		memset(&ss, 0, sizeof(ss));
		cm_gid_to_sa(g.raw, 0, (struct sockaddr *)&ss);
		if (ss.ss_family != dst->sa_family)
			continue;
		bits = common_bits(g.raw, peer);
		if (!found || bits > best_bits) {
			found = true;
			best_bits = bits;
			*src = ss;
		}
	}
	if (found)
		return 0;
	errno = EADDRNOTAVAIL;
	return -1;
}

struct resolve_job {
	struct cm_id_priv *p;
	uint8_t dgid[16];
	uint32_t timeout_ms;
	bool local;
};

/* ARP or ND may take the whole timeout: a thread of its own, the ID
 * pinned by refs until it reports. */
static void *
resolve_main(void *arg)
{
	struct resolve_job *j = arg;
	struct cm_id_priv *p = j->p;
	int rc = j->local ? 0 :
		droce_resolve_gid(p->dev->verbs, j->dgid, j->timeout_ms);

	pthread_mutex_lock(&cm.lock);
	if (!p->destroying && p->state == CM_ADDR_QUERY) {
		p->state = rc == 0 ? CM_ADDR_RESOLVED : CM_IDLE;
		cm_event_queue(p, rc == 0 ? RDMA_CM_EVENT_ADDR_RESOLVED :
			RDMA_CM_EVENT_ADDR_ERROR, -rc);
	}
	p->refs--;
	pthread_cond_broadcast(&p->acked);
	pthread_mutex_unlock(&cm.lock);
	free(j);
	return NULL;
}

static int
resolve_start(struct cm_id_priv *p, const struct sockaddr *src,
		const struct sockaddr *dst, int timeout_ms)
{
	struct rdma_addr *ad = &p->id.route.addr;
	struct sockaddr_storage ss;
	struct resolve_job *j;
	pthread_t t;
	uint8_t gi;

	if (p->state != CM_IDLE && p->state != CM_ADDR_RESOLVED) {
		errno = EINVAL;
		return -1;
	}
	if (!p->bound) {
		if (src == NULL || cm_sa_any(src)) {
			if (pick_src(dst, &ss) != 0)
				return -1;
			if (src != NULL)
				cm_sa_set_port((struct sockaddr *)&ss,
					cm_sa_port(src));
			src = (struct sockaddr *)&ss;
		}
		if (bind_locked(p, src) != 0)
			return -1;
	} else if (p->dev == NULL) {	/* bound to a wildcard */
		if (pick_src(dst, &ss) != 0 ||
				cm_dev_find_addr((struct sockaddr *)&ss, &p->dev,
				&gi) != 0)
			return -1;
		cm_sa_set_port((struct sockaddr *)&ss, cm_sa_port(&ad->src_addr));
		set_src(p, (struct sockaddr *)&ss);
		p->sgid_index = gi;
		p->id.verbs = p->dev->verbs;
		p->id.port_num = p->dev->port_num;
	}
	if (cm_dev_start(p->dev) != 0)
		return -1;
	memset(&ad->dst_storage, 0, sizeof(ad->dst_storage));
	memcpy(&ad->dst_storage, dst, (size_t)cm_sa_len(dst));
	cm_sa_to_gid(dst, ad->addr.ibaddr.dgid.raw);
	j = calloc(1, sizeof(*j));
	if (j == NULL) {
		errno = ENOMEM;
		return -1;
	}
	j->p = p;
	memcpy(j->dgid, ad->addr.ibaddr.dgid.raw, 16);
	j->timeout_ms = timeout_ms > 0 ? (uint32_t)timeout_ms : 2000;
	j->local = memcmp(j->dgid, ad->addr.ibaddr.sgid.raw, 16) == 0;
	p->state = CM_ADDR_QUERY;
	p->refs++;
	if (pthread_create(&t, NULL, resolve_main, j) != 0) {
		p->refs--;
		p->state = CM_IDLE;
		free(j);
		errno = EAGAIN;
		return -1;
	}
	pthread_detach(t);
	return 0;
}

int
rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src_addr,
		struct sockaddr *dst_addr, int timeout_ms)
{
	struct cm_id_priv *p = cm_id(id);
	int rc;

	if (id == NULL || dst_addr == NULL || cm_sa_len(dst_addr) == 0 ||
			(src_addr != NULL && cm_sa_len(src_addr) != 0 &&
			src_addr->sa_family != dst_addr->sa_family)) {
		errno = EINVAL;
		return -1;
	}
	if (src_addr != NULL && cm_sa_len(src_addr) == 0)
		src_addr = NULL;
	pthread_mutex_lock(&cm.lock);
	rc = resolve_start(p, src_addr, dst_addr, timeout_ms);
	pthread_mutex_unlock(&cm.lock);
	if (rc == 0 && p->sync)
		rc = cm_wait(p, RDMA_CM_EVENT_ADDR_RESOLVED);
	return rc;
}

/* RoCE has no SA: the path is the two GIDs and the port's MTU. */
int
rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	struct cm_id_priv *p = cm_id(id);
	struct ibv_sa_path_rec *r = &p->path;
	int rc = 0;

	(void)timeout_ms;
	if (id == NULL) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&cm.lock);
	if (p->state != CM_ADDR_RESOLVED) {
		errno = EINVAL;
		rc = -1;
	} else {
		memset(r, 0, sizeof(*r));
		r->dgid = id->route.addr.addr.ibaddr.dgid;
		r->sgid = id->route.addr.addr.ibaddr.sgid;
		r->hop_limit = 64;
		r->traffic_class = p->tos;
		r->reversible = 1;
		r->numb_path = 1;
		r->pkey = htobe16(0xffff);
		r->mtu_selector = 2;	/* exactly */
		r->mtu = (uint8_t)p->dev->mtu;
		r->rate_selector = 2;
		r->rate = 3;		/* 10 Gb/s: a number, not a limit */
		r->packet_life_time_selector = 2;
		r->packet_life_time = 0;
		id->route.path_rec = r;
		id->route.num_paths = 1;
		p->mtu = p->dev->mtu;
		p->state = CM_ROUTE_RESOLVED;
		cm_event_queue(p, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	}
	pthread_mutex_unlock(&cm.lock);
	if (rc == 0 && p->sync)
		rc = cm_wait(p, RDMA_CM_EVENT_ROUTE_RESOLVED);
	return rc;
}

static struct sockaddr *
copy_sa(const struct sockaddr *sa, socklen_t *len)
{
	struct sockaddr *c;

	*len = (socklen_t)cm_sa_len(sa);
	c = *len ? malloc(*len) : NULL;
	if (c != NULL)
		memcpy(c, sa, *len);
	return c;
}

void
rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	struct rdma_addrinfo *n;

	for (; res != NULL; res = n) {
		n = res->ai_next;
		free(res->ai_src_addr);
		free(res->ai_dst_addr);
		free(res->ai_src_canonname);
		free(res->ai_dst_canonname);
		free(res->ai_route);
		free(res->ai_connect);
		free(res);
	}
}

/* sa's copy into *dst and *len; false when memory runs out */
static bool
take_sa(struct sockaddr **dst, socklen_t *len, const struct sockaddr *sa)
{
	*dst = copy_sa(sa, len);
	return *dst != NULL || *len == 0;
}

/*
 * IP addresses through getaddrinfo(3); its EAI_* codes are returned as
 * rdma-core's librdmacm returns them. With neither node nor service the
 * addresses are the hints' own, as there: libfabric's verbs provider
 * hands its destination (and source) that way.
 */
int
rdma_getaddrinfo(const char *node, const char *service,
		const struct rdma_addrinfo *hints, struct rdma_addrinfo **res)
{
	struct addrinfo h, *ai = NULL;
	struct rdma_addrinfo *r;
	bool ok = true;
	int rc;

	if (res == NULL || (node == NULL && service == NULL && hints == NULL)) {
		errno = EINVAL;
		return -1;
	}
	memset(&h, 0, sizeof(h));
	h.ai_socktype = SOCK_STREAM;
	if (hints != NULL) {
		h.ai_family = hints->ai_family;
		if (hints->ai_flags & RAI_PASSIVE)
			h.ai_flags |= AI_PASSIVE;
		if (hints->ai_flags & RAI_NUMERICHOST)
			h.ai_flags |= AI_NUMERICHOST;
	}
	if (node != NULL || service != NULL) {
		rc = getaddrinfo(node, service, &h, &ai);
		if (rc != 0)
			return rc;
	}
	r = calloc(1, sizeof(*r));
	if (r == NULL) {
		freeaddrinfo(ai);
		errno = ENOMEM;
		return -1;
	}
	if (hints != NULL) {
		r->ai_flags = hints->ai_flags;
		r->ai_family = hints->ai_family;
		r->ai_qp_type = hints->ai_qp_type;
		r->ai_port_space = hints->ai_port_space;
	}
	if (r->ai_qp_type == 0)
		r->ai_qp_type = r->ai_port_space == RDMA_PS_UDP ? IBV_QPT_UD :
			IBV_QPT_RC;
	if (r->ai_port_space == 0)
		r->ai_port_space = r->ai_qp_type == IBV_QPT_UD ? RDMA_PS_UDP :
			RDMA_PS_TCP;
	if (ai != NULL) {
		r->ai_family = ai->ai_family;
		if (r->ai_flags & RAI_PASSIVE)
			ok = take_sa(&r->ai_src_addr, &r->ai_src_len,
				ai->ai_addr);
		else
			ok = take_sa(&r->ai_dst_addr, &r->ai_dst_len,
				ai->ai_addr);
		freeaddrinfo(ai);
	} else if (hints->ai_dst_len > 0 && hints->ai_dst_addr != NULL) {
		ok = take_sa(&r->ai_dst_addr, &r->ai_dst_len,
			hints->ai_dst_addr);
	}
	if (ok && r->ai_src_addr == NULL && hints != NULL &&
			hints->ai_src_len > 0 && hints->ai_src_addr != NULL)
		ok = take_sa(&r->ai_src_addr, &r->ai_src_len,
			hints->ai_src_addr);
	if (ok && r->ai_family == 0)
		r->ai_family = r->ai_dst_addr != NULL ?
			r->ai_dst_addr->sa_family : r->ai_src_addr != NULL ?
			r->ai_src_addr->sa_family : 0;
	if (!ok) {
		rdma_freeaddrinfo(r);
		errno = ENOMEM;
		return -1;
	}
	*res = r;
	return 0;
}
