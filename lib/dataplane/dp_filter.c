/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * Receive filtering in the NIC, where it can: frames for other hosts
 * should not reach droce at all. The port stays out of promiscuous mode
 * (droce's MAC is added as a unicast address where it is not the port's
 * own; only where the PMD cannot is the port made promiscuous), and
 * rte_flow rules pass UDP port 4791 only to the device's IP addresses and
 * drop the rest. The transport filters again in software (tp_recv.c), so
 * a NIC with neither loses nothing but CPU time. Multicast: the NIC's
 * list follows the groups the device's QPs are attached to.
 */

#include <errno.h>
#include <string.h>

#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_flow.h>

#include "dp_internal.h"

static const char *const mode_names[] = {
	[DP_RXF_NIC_MAC] = "nic_mac",
	[DP_RXF_PROMISC] = "promiscuous",
	[DP_RXF_FLOW] = "rte_flow",
};

static const char *const mc_names[] = {
	[DP_MCF_NONE] = "none",
	[DP_MCF_LIST] = "nic_list",
	[DP_MCF_ALLMULTI] = "allmulticast",
	[DP_MCF_PMD] = "pmd_default",
};

const char *
dp_filter_mode_name(const struct droce_port *p)
{
	return mode_names[p->rx_filter];
}

const char *
dp_filter_mc_name(const struct droce_port *p)
{
	return mc_names[p->mc_filter];
}

/* Keep the NIC's unicast filter: droce's MAC must be one it accepts. */
static void
mac_filter(struct droce_port *p)
{
	struct rte_ether_addr own;

	p->rx_filter = DP_RXF_NIC_MAC;
	if (rte_eth_macaddr_get(p->port_id, &own) == 0 &&
			!rte_is_same_ether_addr(&own, &p->mac)) {
		if (rte_eth_dev_mac_addr_add(p->port_id, &p->mac, 0) == 0) {
			p->mac_added = 1;
		} else {
			/* the PMD takes no second address: see everything,
			 * the transport drops what is not ours */
			rte_eth_promiscuous_enable(p->port_id);
			p->rx_filter = DP_RXF_PROMISC;
			DP_LOG(INFO, "port %u: promiscuous (no unicast "
				"filter for droce's MAC)", p->port_id);
			return;
		}
	}
	/* some PMDs start promiscuous (-ENOTSUP where there is no such
	 * thing, as on net_memif and net_ring) */
	rte_eth_promiscuous_disable(p->port_id);
}

/* One rule: ETH(dst = our MAC) / IPv4 or IPv6 (dst = gid) / UDP 4791. */
static struct rte_flow *
flow_to(struct droce_port *p, const uint8_t gid[16], int drop)
{
	struct rte_flow_attr attr = { .ingress = 1, .priority = drop };
	struct rte_flow_item_eth eth = { 0 }, eth_mask = { 0 };
	struct rte_flow_item_ipv4 v4 = { 0 }, v4_mask = { 0 };
	struct rte_flow_item_ipv6 v6 = { 0 }, v6_mask = { 0 };
	struct rte_flow_item_udp udp = { 0 }, udp_mask = { 0 };
	struct rte_flow_action_queue queue = { .index = 0 };
	struct rte_flow_item pattern[4];
	struct rte_flow_action actions[2];
	struct rte_flow_error err;
	uint32_t ip4;
	int is4 = droce_gid_is_ipv4(gid, &ip4);

	memset(pattern, 0, sizeof(pattern));
	memset(actions, 0, sizeof(actions));
	eth.hdr.dst_addr = p->mac;
	memset(&eth_mask.hdr.dst_addr, 0xff, sizeof(eth_mask.hdr.dst_addr));
	pattern[0].type = RTE_FLOW_ITEM_TYPE_ETH;
	pattern[0].spec = &eth;
	pattern[0].mask = &eth_mask;
	if (is4) {
		v4.hdr.dst_addr = rte_cpu_to_be_32(ip4);
		v4_mask.hdr.dst_addr = drop ? 0 : UINT32_MAX;
		pattern[1].type = RTE_FLOW_ITEM_TYPE_IPV4;
		pattern[1].spec = &v4;
		pattern[1].mask = &v4_mask;
	} else {
		memcpy(v6.hdr.dst_addr, gid, 16);
		memset(v6_mask.hdr.dst_addr, drop ? 0 : 0xff, 16);
		pattern[1].type = RTE_FLOW_ITEM_TYPE_IPV6;
		pattern[1].spec = &v6;
		pattern[1].mask = &v6_mask;
	}
	udp.hdr.dst_port = RTE_BE16(4791);
	udp_mask.hdr.dst_port = RTE_BE16(0xffff);
	pattern[2].type = RTE_FLOW_ITEM_TYPE_UDP;
	pattern[2].spec = &udp;
	pattern[2].mask = &udp_mask;
	pattern[3].type = RTE_FLOW_ITEM_TYPE_END;
	/* queue 0: as without the rules (no RSS is configured; the
	 * software hand-off steers by QPN) */
	actions[0].type = drop ? RTE_FLOW_ACTION_TYPE_DROP :
		RTE_FLOW_ACTION_TYPE_QUEUE;
	actions[0].conf = drop ? NULL : &queue;
	actions[1].type = RTE_FLOW_ACTION_TYPE_END;
	if (rte_flow_validate(p->port_id, &attr, pattern, actions, &err) != 0) {
		DP_LOG(DEBUG, "port %u: rte_flow rule refused: %s", p->port_id,
			err.message != NULL ? err.message : "?");
		return NULL;
	}
	return rte_flow_create(p->port_id, &attr, pattern, actions, &err);
}

void
dp_filter_teardown(struct droce_port *p)
{
	struct rte_flow_error err;
	uint32_t i;

	for (i = 0; i < p->nb_flows; i++)
		rte_flow_destroy(p->port_id, p->flows[i], &err);
	p->nb_flows = 0;
	if (p->mac_added) {
		rte_eth_dev_mac_addr_remove(p->port_id, &p->mac);
		p->mac_added = 0;
	}
	if (p->mc_filter == DP_MCF_LIST)
		rte_eth_dev_set_mc_addr_list(p->port_id, NULL, 0);
	if (p->allmulti)
		rte_eth_allmulticast_disable(p->port_id);
	p->allmulti = 0;
	p->mc_filter = DP_MCF_NONE;
}

/*
 * rte_flow: a passing rule per GID of the device (priority 0), then one
 * dropping rule per IP version (priority 1) for the rest of UDP 4791. All
 * or nothing: a PMD that refuses one rule gets none.
 */
static void
flow_filter(struct droce_port *p, const struct droce_dev_conf *dc)
{
	static const uint8_t any4[16] = {
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff
	}, any6[16] = { 0xfe, 0x80 };
	struct rte_flow *fl;
	uint32_t i;

	for (i = 0; i < DROCE_MAX_GIDS; i++) {
		if (!dc->gids[i].valid)
			continue;
		fl = flow_to(p, dc->gids[i].gid, 0);
		if (fl == NULL)
			goto refused;
		p->flows[p->nb_flows++] = fl;
	}
	fl = flow_to(p, any4, 1);
	if (fl == NULL)
		goto refused;
	p->flows[p->nb_flows++] = fl;
	fl = flow_to(p, any6, 1);
	if (fl == NULL)
		goto refused;
	p->flows[p->nb_flows++] = fl;
	p->rx_filter = DP_RXF_FLOW;
	DP_LOG(INFO, "port %u: %u rte_flow rules filter RoCE by address",
		p->port_id, p->nb_flows);
	return;
refused:
	while (p->nb_flows > 0) {
		struct rte_flow_error err;

		rte_flow_destroy(p->port_id, p->flows[--p->nb_flows], &err);
	}
}

void
dp_filter_setup(struct droce_port *p, const struct droce_dev_conf *dc,
		bool dmas)
{
	mac_filter(p);
	if (p->conf.rx_hw_filter == DROCE_OFFLOAD_ON ||
			(p->conf.rx_hw_filter == DROCE_OFFLOAD_AUTO && dmas))
		flow_filter(p, dc);
}

/* All multicast on (where the NIC keeps no list) or off again. */
static void
mc_allmulti(struct droce_port *p, int on, int list_rc)
{
	int rc;

	if (on && !p->allmulti) {
		rc = rte_eth_allmulticast_enable(p->port_id);
		if (rc == 0) {
			p->allmulti = 1;
			p->mc_filter = DP_MCF_ALLMULTI;
			DP_LOG(INFO, "port %u: all multicast (no multicast "
				"list: %s)", p->port_id, rte_strerror(-list_rc));
		} else {
			/* memif and ring pass every frame anyway */
			p->mc_filter = DP_MCF_PMD;
			DP_LOG(INFO, "port %u: neither a multicast list nor all "
				"multicast (%s): groups pass as the PMD lets them",
				p->port_id, rte_strerror(-rc));
		}
	} else if (!on && p->allmulti) {
		rte_eth_allmulticast_disable(p->port_id);
		p->allmulti = 0;
	}
}

/*
 * The NIC's multicast filter after an attach or detach: the MACs of all
 * the device's groups as its list (rte_eth_dev_set_mc_addr_list replaces
 * the whole list), or all multicast where the PMD keeps none or the
 * groups outnumber DP_MAX_MC. An application's own port keeps its own
 * filters, as for unicast.
 */
static void
mc_sync(struct droce_port *p)
{
	uint8_t raw[DP_MAX_MC][6];
	struct rte_ether_addr macs[DP_MAX_MC];
	uint32_t n, i;
	int rc = -ENOSPC;

	if (!p->owns_port)
		return;
	rte_spinlock_lock(&p->mc_lock);
	n = droce_dev_mcast_macs(p->dev, raw, DP_MAX_MC);
	if (n <= DP_MAX_MC) {
		for (i = 0; i < n; i++)
			memcpy(macs[i].addr_bytes, raw[i], 6);
		rc = rte_eth_dev_set_mc_addr_list(p->port_id,
			n ? macs : NULL, n);
	}
	if (rc == 0) {
		mc_allmulti(p, 0, 0);
		p->mc_filter = n ? DP_MCF_LIST : DP_MCF_NONE;
	} else if (n > 0) {
		mc_allmulti(p, 1, rc);
	} else {
		mc_allmulti(p, 0, 0);
		p->mc_filter = DP_MCF_NONE;
	}
	if (n != p->mc_macs)
		DP_LOG(DEBUG, "port %u: %u multicast MACs (%s)", p->port_id, n,
			dp_filter_mc_name(p));
	p->mc_macs = n;
	rte_spinlock_unlock(&p->mc_lock);
}

/* A transport attach or detach with the QP's queue held, then the NIC. */
static int
mc_change(struct droce_port *p, struct droce_qp *qp, const uint8_t gid[16],
		int (*fn)(struct droce_qp *, const uint8_t *))
{
	uint32_t q;
	int rc;

	if (p == NULL || qp == NULL)
		return -EINVAL;
	q = droce_qpn_queue(p->dev, droce_qp_num(qp));
	droce_port_lock(p, q);
	rc = fn(qp, gid);
	droce_port_unlock(p, q);
	if (rc == 0)
		mc_sync(p);
	return rc;
}

int
droce_port_attach_mcast(struct droce_port *p, struct droce_qp *qp,
		const uint8_t gid[16])
{
	return mc_change(p, qp, gid, droce_qp_attach_mcast);
}

int
droce_port_detach_mcast(struct droce_port *p, struct droce_qp *qp,
		const uint8_t gid[16])
{
	return mc_change(p, qp, gid, droce_qp_detach_mcast);
}
