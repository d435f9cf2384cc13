/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * IPv6 neighbour discovery (RFC 4861), the part droce needs: answer
 * neighbour solicitations for its own addresses (link-local and the
 * configured one), learn from solicitations and advertisements, and
 * solicit a peer's address through its solicited-node multicast group.
 */

#include <string.h>

#include <rte_ether.h>
#include <rte_ip.h>

#include "dp_internal.h"

#define ICMP6_NS 135
#define ICMP6_NA 136
#define ND_OPT_SLLA 1
#define ND_OPT_TLLA 2
#define ND_LEN (40 + 24 + 8)	/* IPv6 + NS/NA + one link-layer option */

static int
is_mine(struct droce_port *p, const uint8_t *a)
{
	const struct droce_dev_conf *c = droce_dev_conf(p->dev);
	int i;

	for (i = 0; i < DROCE_MAX_GIDS; i++)
		if (c->gids[i].valid && !droce_gid_is_ipv4(c->gids[i].gid, NULL) &&
				memcmp(c->gids[i].gid, a, 16) == 0)
			return 1;
	return 0;
}

static uint16_t
icmp6_csum(const uint8_t *ip6)
{
	uint32_t sum = 0, len = (uint32_t)(ip6[4] << 8 | ip6[5]), i;
	const uint8_t *b = ip6 + 40;

	for (i = 8; i < 40; i += 2)	/* source and destination */
		sum += (uint32_t)(ip6[i] << 8 | ip6[i + 1]);
	sum += len + 58;
	for (i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)(b[i] << 8 | b[i + 1]);
	if (len & 1)
		sum += (uint32_t)b[len - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* One NS or NA frame. */
static struct rte_mbuf *
nd_build(struct droce_port *p, int type, const uint8_t dmac[6],
		const uint8_t src[16], const uint8_t dst[16],
		const uint8_t target[16], int solicited)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(p->pool);
	uint8_t *f, *ip, *icmp;
	uint16_t c;

	if (m == NULL)
		return NULL;
	f = rte_pktmbuf_mtod(m, uint8_t *);
	memcpy(f, dmac, 6);
	memcpy(f + 6, p->mac.addr_bytes, 6);
	f[12] = 0x86;
	f[13] = 0xdd;
	ip = f + 14;
	memset(ip, 0, ND_LEN);
	ip[0] = 0x60;
	ip[5] = 24 + 8;			/* payload length */
	ip[6] = 58;			/* ICMPv6 */
	ip[7] = 255;			/* hop limit, as ND requires */
	memcpy(ip + 8, src, 16);
	memcpy(ip + 24, dst, 16);
	icmp = ip + 40;
	icmp[0] = (uint8_t)type;
	if (type == ICMP6_NA)
		icmp[4] = (uint8_t)((solicited ? 0x40 : 0) | 0x20); /* S, O */
	memcpy(icmp + 8, target, 16);
	icmp[24] = type == ICMP6_NS ? ND_OPT_SLLA : ND_OPT_TLLA;
	icmp[25] = 1;			/* 8 bytes */
	memcpy(icmp + 26, p->mac.addr_bytes, 6);
	c = icmp6_csum(ip);
	icmp[2] = (uint8_t)(c >> 8);
	icmp[3] = (uint8_t)c;
	m->data_len = m->pkt_len = 14 + ND_LEN;
	return m;
}

/* 0 if m was neighbour discovery (answered or learnt from), -1 if not. */
int
dp_nd_input(struct droce_port *p, struct dp_queue *q, struct rte_mbuf *m)
{
	const uint8_t *f = rte_pktmbuf_mtod(m, const uint8_t *);
	uint32_t len = rte_pktmbuf_data_len(m), plen, off;
	const uint8_t *ip = f + 14, *icmp, *lla = NULL;

	if (len < 14 + 40 + 24 || f[12] != 0x86 || f[13] != 0xdd ||
			ip[6] != 58 || ip[7] != 255)
		return -1;
	plen = (uint32_t)(ip[4] << 8 | ip[5]);
	if (plen < 24 || 14 + 40 + plen > len || icmp6_csum(ip) != 0)
		return -1;
	icmp = ip + 40;
	if (icmp[0] != ICMP6_NS && icmp[0] != ICMP6_NA)
		return -1;
	for (off = 24; off + 8 <= plen && icmp[off + 1]; off += icmp[off + 1] * 8u)
		if ((icmp[off] == ND_OPT_SLLA || icmp[off] == ND_OPT_TLLA) &&
				icmp[off + 1] == 1)
			lla = icmp + off + 2;
	if (icmp[0] == ICMP6_NA) {
		if (lla != NULL)
			dp_neigh_learn(p, icmp + 8, lla, 0);
		return 0;
	}
	/* a solicitation: is it for one of our addresses? */
	if (!is_mine(p, icmp + 8))
		return 0;
	if (lla != NULL && !(ip[8] == 0 && ip[9] == 0))	/* not DAD's :: */
		dp_neigh_learn(p, ip + 8, lla, 0);
	{
		struct rte_mbuf *r = nd_build(p, ICMP6_NA, f + 6, icmp + 8,
			ip + 8, icmp + 8, 1);

		if (r != NULL)
			dp_queue_tx(q, r);
	}
	return 0;
}

int
dp_nd_solicit(struct droce_port *p, const uint8_t target[16])
{
	const struct droce_dev_conf *c = droce_dev_conf(p->dev);
	uint8_t snm[16] = { 0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff };
	uint8_t dmac[6] = { 0x33, 0x33, 0xff };
	struct dp_queue *q = &p->q[0];
	const uint8_t *src = c->gids[0].gid;	/* link-local */
	struct rte_mbuf *m;
	int i;

	/* a global target is solicited from a global source if we have one */
	for (i = 1; i < DROCE_MAX_GIDS; i++)
		if (c->gids[i].valid && !droce_gid_is_ipv4(c->gids[i].gid, NULL) &&
				target[0] != 0xfe)
			src = c->gids[i].gid;
	memcpy(snm + 13, target + 13, 3);
	memcpy(dmac + 3, target + 13, 3);
	m = nd_build(p, ICMP6_NS, dmac, src, snm, target, 0);
	if (m == NULL)
		return -ENOMEM;
	rte_spinlock_lock(&q->lock);
	dp_queue_tx(q, m);
	dp_queue_flush(q);
	rte_spinlock_unlock(&q->lock);
	return 0;
}
