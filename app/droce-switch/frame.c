/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * The few fields of a frame a switch looks at past Ethernet: the ECN
 * codepoint of its IPv4 or IPv6 header, setting CE, and the key of the
 * flow it belongs to (for the per-flow series).
 */

#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>

#include <rte_byteorder.h>
#include <rte_ip.h>
#include <rte_udp.h>

#include "switch.h"

/* The IP header, or NULL; *v6 says which. Headers live in the first
 * segment: every frame droce and the kernel send has them there. */
static void *
ip_hdr(struct rte_mbuf *m, int *v6)
{
	struct rte_ether_hdr *e;
	uint16_t type;

	if (rte_pktmbuf_data_len(m) < sizeof(*e) + sizeof(struct rte_ipv4_hdr))
		return NULL;
	e = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	type = rte_be_to_cpu_16(e->ether_type);
	if (type == RTE_ETHER_TYPE_IPV4) {
		*v6 = 0;
		return e + 1;
	}
	if (type == RTE_ETHER_TYPE_IPV6 && rte_pktmbuf_data_len(m) >=
			sizeof(*e) + sizeof(struct rte_ipv6_hdr)) {
		*v6 = 1;
		return e + 1;
	}
	return NULL;
}

enum sw_ecn
sw_frame_ecn(struct rte_mbuf *m)
{
	int v6;
	void *h = ip_hdr(m, &v6);

	if (h == NULL)
		return SW_NOT_IP;
	if (v6)
		/* the traffic class is bits 20-27 of version/class/flow,
		 * ECN its low two */
		return (enum sw_ecn)((rte_be_to_cpu_32(
			((struct rte_ipv6_hdr *)h)->vtc_flow) >> 20) & 3);
	return (enum sw_ecn)(((struct rte_ipv4_hdr *)h)->type_of_service & 3);
}

/*
 * Whether RED's profile applies: UDP over IP, RoCEv2's class. ARP,
 * ICMPv6 neighbour discovery and the rest stand for traffic a switch
 * keeps in another class (another queue, or trapped): they share the
 * buffer, so the tail drop applies to them, but marking a queue above
 * Kmax must not drop a neighbour advertisement, or a host behind a
 * congested port could never resolve its peer.
 */
int
sw_frame_red_class(struct rte_mbuf *m)
{
	int v6;
	void *h = ip_hdr(m, &v6);

	if (h == NULL)
		return 0;
	if (v6)
		return ((struct rte_ipv6_hdr *)h)->proto == IPPROTO_UDP;
	return ((struct rte_ipv4_hdr *)h)->next_proto_id == IPPROTO_UDP;
}

void
sw_frame_set_ce(struct rte_mbuf *m)
{
	struct rte_ipv4_hdr *ip4;
	struct rte_ipv6_hdr *ip6;
	int v6;
	void *h = ip_hdr(m, &v6);

	if (h == NULL)
		return;
	if (v6) {
		ip6 = h;
		ip6->vtc_flow = rte_cpu_to_be_32(
			rte_be_to_cpu_32(ip6->vtc_flow) | (3u << 20));
		return;
	}
	/* RoCEv2's ICRC masks the TOS byte, so only the IPv4 header
	 * checksum covers what changed: recompute it */
	ip4 = h;
	ip4->type_of_service |= 3;
	ip4->hdr_checksum = 0;
	ip4->hdr_checksum = rte_ipv4_cksum(ip4);
}

/*
 * A flow: source and destination address and UDP source port for UDP
 * over IP (RoCEv2 gives each QP its own source port), the source MAC for
 * anything else. Returns the key's length; name gets a readable form.
 */
uint32_t
sw_frame_flow_key(struct rte_mbuf *m, uint8_t *key, char *name,
	size_t name_len)
{
	char a[INET6_ADDRSTRLEN], b[INET6_ADDRSTRLEN];
	struct rte_ether_hdr *e = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	struct rte_udp_hdr *u = NULL;
	uint32_t n;
	int v6;
	void *h = ip_hdr(m, &v6);

	if (h != NULL && !v6) {
		struct rte_ipv4_hdr *ip4 = h;
		uint32_t ihl = (uint32_t)(ip4->version_ihl & 0xf) * 4;

		if (ip4->next_proto_id == IPPROTO_UDP &&
				rte_pktmbuf_data_len(m) >= sizeof(*e) + ihl +
				sizeof(*u))
			u = (struct rte_udp_hdr *)((uint8_t *)ip4 + ihl);
		key[0] = 4;
		memcpy(key + 1, &ip4->src_addr, 4);
		memcpy(key + 5, &ip4->dst_addr, 4);
		n = 9;
		inet_ntop(AF_INET, &ip4->src_addr, a, sizeof(a));
		inet_ntop(AF_INET, &ip4->dst_addr, b, sizeof(b));
	} else if (h != NULL) {
		struct rte_ipv6_hdr *ip6 = h;

		if (ip6->proto == IPPROTO_UDP && rte_pktmbuf_data_len(m) >=
				sizeof(*e) + sizeof(*ip6) + sizeof(*u))
			u = (struct rte_udp_hdr *)(ip6 + 1);
		key[0] = 6;
		memcpy(key + 1, ip6->src_addr, 16);
		memcpy(key + 17, ip6->dst_addr, 16);
		n = 33;
		inet_ntop(AF_INET6, ip6->src_addr, a, sizeof(a));
		inet_ntop(AF_INET6, ip6->dst_addr, b, sizeof(b));
	} else {
		key[0] = 0;
		memcpy(key + 1, &e->src_addr, RTE_ETHER_ADDR_LEN);
		rte_ether_format_addr(name, name_len, &e->src_addr);
		return 1 + RTE_ETHER_ADDR_LEN;
	}
	if (u != NULL) {
		memcpy(key + n, &u->src_port, 2);
		n += 2;
		snprintf(name, name_len, "%s>%s:%u", a, b,
			rte_be_to_cpu_16(u->src_port));
	} else {
		snprintf(name, name_len, "%s>%s", a, b);
	}
	return n;
}
