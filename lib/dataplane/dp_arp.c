/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * ARP: droce answers for its own IPv4 address and resolves peers', since
 * the kernel has no socket on the DPDK port. A small neighbour table keeps
 * what was learnt and the static entries for peers that do not answer.
 */

#include <string.h>

#include <rte_arp.h>
#include <rte_ether.h>

#include "dp_internal.h"

int
dp_neigh_lookup(struct droce_port *p, const uint8_t gid[16], uint8_t mac[6])
{
	int i, rc = -1;

	rte_spinlock_lock(&p->neigh_lock);
	for (i = 0; i < DP_NEIGH; i++) {
		if (p->neigh[i].valid && memcmp(p->neigh[i].gid, gid, 16) == 0) {
			memcpy(mac, p->neigh[i].mac, 6);
			rc = 0;
			break;
		}
	}
	rte_spinlock_unlock(&p->neigh_lock);
	return rc;
}

void
dp_neigh_learn(struct droce_port *p, const uint8_t gid[16],
		const uint8_t mac[6], int is_static)
{
	int i, slot = -1;

	rte_spinlock_lock(&p->neigh_lock);
	for (i = 0; i < DP_NEIGH; i++) {
		if (p->neigh[i].valid && memcmp(p->neigh[i].gid, gid, 16) == 0) {
			slot = i;
			break;
		}
		if (!p->neigh[i].valid && slot < 0)
			slot = i;
	}
	if (slot >= 0 && !(p->neigh[slot].valid && p->neigh[slot].is_static &&
			!is_static)) {
		memcpy(p->neigh[slot].gid, gid, 16);
		memcpy(p->neigh[slot].mac, mac, 6);
		p->neigh[slot].valid = 1;
		p->neigh[slot].is_static = (uint8_t)is_static;
	}
	rte_spinlock_unlock(&p->neigh_lock);
}

static struct rte_mbuf *
arp_build(struct droce_port *p, uint16_t op, const struct rte_ether_addr *tha,
		uint32_t tip)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(p->pool);
	struct rte_ether_hdr *eh;
	struct rte_arp_hdr *ah;

	if (m == NULL)
		return NULL;
	eh = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	ah = (struct rte_arp_hdr *)(eh + 1);
	if (op == RTE_ARP_OP_REQUEST)
		memset(&eh->dst_addr, 0xff, RTE_ETHER_ADDR_LEN);
	else
		rte_ether_addr_copy(tha, &eh->dst_addr);
	rte_ether_addr_copy(&p->mac, &eh->src_addr);
	eh->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP);
	ah->arp_hardware = rte_cpu_to_be_16(RTE_ARP_HRD_ETHER);
	ah->arp_protocol = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	ah->arp_hlen = RTE_ETHER_ADDR_LEN;
	ah->arp_plen = 4;
	ah->arp_opcode = rte_cpu_to_be_16(op);
	rte_ether_addr_copy(&p->mac, &ah->arp_data.arp_sha);
	ah->arp_data.arp_sip = rte_cpu_to_be_32(p->ipv4);
	if (op == RTE_ARP_OP_REQUEST)
		memset(&ah->arp_data.arp_tha, 0, RTE_ETHER_ADDR_LEN);
	else
		rte_ether_addr_copy(tha, &ah->arp_data.arp_tha);
	ah->arp_data.arp_tip = rte_cpu_to_be_32(tip);
	m->data_len = m->pkt_len = 60;	/* padded to the minimum frame */
	memset((uint8_t *)(ah + 1), 0, 60 - sizeof(*eh) - sizeof(*ah));
	return m;
}

/* 0 if m was ARP (answered or learnt from), -1 otherwise. */
int
dp_arp_input(struct droce_port *p, struct dp_queue *q, struct rte_mbuf *m)
{
	struct rte_ether_hdr *eh = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	struct rte_arp_hdr *ah;
	uint8_t gid[16];
	uint32_t sip, tip;

	if (rte_pktmbuf_data_len(m) < sizeof(*eh) + sizeof(*ah) ||
			eh->ether_type != rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP))
		return -1;
	ah = (struct rte_arp_hdr *)(eh + 1);
	if (ah->arp_hardware != rte_cpu_to_be_16(RTE_ARP_HRD_ETHER) ||
			ah->arp_protocol != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4) ||
			ah->arp_hlen != 6 || ah->arp_plen != 4)
		return -1;
	sip = rte_be_to_cpu_32(ah->arp_data.arp_sip);
	tip = rte_be_to_cpu_32(ah->arp_data.arp_tip);
	if (sip != 0) {
		droce_gid_from_ipv4(gid, sip);
		/* learn from requests to us and from replies */
		if (tip == p->ipv4 || ah->arp_opcode ==
				rte_cpu_to_be_16(RTE_ARP_OP_REPLY))
			dp_neigh_learn(p, gid, ah->arp_data.arp_sha.addr_bytes, 0);
	}
	if (p->ipv4 && tip == p->ipv4 &&
			ah->arp_opcode == rte_cpu_to_be_16(RTE_ARP_OP_REQUEST)) {
		struct rte_mbuf *r = arp_build(p, RTE_ARP_OP_REPLY,
			&ah->arp_data.arp_sha, sip);

		if (r != NULL)
			dp_queue_tx(q, r);
	}
	return 0;
}

int
dp_arp_request(struct droce_port *p, uint32_t ip)
{
	struct dp_queue *q = &p->q[0];
	struct rte_mbuf *m;

	if (p->ipv4 == 0)
		return -EADDRNOTAVAIL;
	m = arp_build(p, RTE_ARP_OP_REQUEST, NULL, ip);
	if (m == NULL)
		return -ENOMEM;
	rte_spinlock_lock(&q->lock);
	dp_queue_tx(q, m);
	dp_queue_flush(q);
	rte_spinlock_unlock(&q->lock);
	return 0;
}
