/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * Ports: bring up a DPDK ethdev (or take one the application configured),
 * create the transport device and its queues on it, close it all again,
 * and read the port's counters. Progress is dp_poll.c and dp_thread.c,
 * transmit dp_txbuf.c, per-process set-up dp_eal.c.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_bus.h>
#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_errno.h>
#include <rte_ether.h>
#include <rte_lcore.h>
#include <rte_log.h>

#include "dp_internal.h"

void
droce_port_conf_init(struct droce_port_conf *c)
{
	memset(c, 0, sizeof(*c));
	c->attach_port_id = -1;
	c->nb_queues = 1;
	c->mtu = 1500;
	c->mode = DROCE_PROGRESS_THREAD;
	c->name = "droce0";
}

/* The device's bus name, NULL if it has none. */
static const char *
dev_bus(const struct rte_eth_dev_info *info)
{
	if (info->device == NULL || rte_dev_bus(info->device) == NULL)
		return NULL;
	return rte_bus_name(rte_dev_bus(info->device));
}

/* Whether the device reads frames itself (DMA): any bus but vdev, whose
 * PMDs copy every frame in software. */
bool
dp_dev_dmas(const struct rte_eth_dev_info *info)
{
	const char *bus = dev_bus(info);

	return bus == NULL || strcmp(bus, "vdev") != 0;
}

/* DROCE_OFFLOAD_AUTO: on where the device DMAs (a NIC fills the sum in
 * for free), off on virtual devices (their PMD would compute it itself). */
static bool
ip_csum_offload_wanted(const struct droce_port *p,
		const struct rte_eth_dev_info *info)
{
	if (p->conf.tx_ip_csum == DROCE_OFFLOAD_ON)
		return true;
	return p->conf.tx_ip_csum == DROCE_OFFLOAD_AUTO && dp_dev_dmas(info);
}

/*
 * TCP segmentation for RAW_PACKET TSO WRs where the PMD has it with the
 * checksums it implies and multi-segment frames (the payload goes by
 * reference). net_tap cuts with rte_gso, which takes IPv4 only, keeps
 * its segments, headers included, within the MTU, and makes 64 at most
 * from one frame; a NIC's segments are the MTU plus Ethernet.
 */
static uint64_t
tso_offloads(struct droce_port *p, const struct rte_eth_dev_info *info)
{
	const uint64_t need = RTE_ETH_TX_OFFLOAD_TCP_TSO |
		RTE_ETH_TX_OFFLOAD_IPV4_CKSUM | RTE_ETH_TX_OFFLOAD_TCP_CKSUM |
		RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
	int tap = info->driver_name != NULL &&
		strcmp(info->driver_name, "net_tap") == 0;

	if ((info->tx_offload_capa & need) != need ||
			p->conf.tx_tso == DROCE_OFFLOAD_OFF)
		return 0;
	p->tso_segs = DP_TSO_SEGS;
	p->tso_tap = tap;
	DP_LOG(INFO, "port %u: TCP segmentation offloaded (IPv4%s)",
		p->port_id, tap ? "" : " and IPv6");
	return need;
}

/* Multi-segment transmit where the PMD has it (zero-copy needs it), the
 * IPv4 header checksum where the PMD has it and it is wanted, TSO. */
static uint64_t
tx_offloads(struct droce_port *p, const struct rte_eth_dev_info *info)
{
	uint64_t off = 0;

	if (info->tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS)
		off |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
	off |= tso_offloads(p, info);
	if ((info->tx_offload_capa & RTE_ETH_TX_OFFLOAD_IPV4_CKSUM) &&
			ip_csum_offload_wanted(p, info)) {
		off |= RTE_ETH_TX_OFFLOAD_IPV4_CKSUM;
		p->tx_ip_csum_offload = 1;
		DP_LOG(INFO, "port %u: IPv4 header checksum offloaded",
			p->port_id);
	}
	return off;
}

/*
 * Not every virtual PMD can set an MTU (net_memif has no mtu_set and
 * carries frames of any length up to its max_mtu): keep the one asked
 * for where the PMD says it fits, else take the PMD's.
 */
static void
mtu_set(struct droce_port *p, const struct rte_eth_dev_info *info)
{
	uint16_t mtu = (uint16_t)p->mtu;
	int rc;

	rc = rte_eth_dev_set_mtu(p->port_id, mtu);
	if (rc != 0 && !(rc == -ENOTSUP && mtu <= info->max_mtu))
		rte_eth_dev_get_mtu(p->port_id, &mtu);
	DP_LOG(DEBUG, "port %u: MTU %u (asked %u, set_mtu %d, max %u)",
		p->port_id, mtu, p->mtu, rc, info->max_mtu);
	p->mtu = mtu ? mtu : 1500;
}

/* Configure a port droce probed: offloads, MTU, a queue pair per droce
 * queue; then start it. 0 or a negative errno. */
static int
port_setup(struct droce_port *p)
{
	struct rte_eth_conf ec;
	struct rte_eth_dev_info info;
	uint32_t i;
	int rc;

	memset(&ec, 0, sizeof(ec));
	rc = rte_eth_dev_info_get(p->port_id, &info);
	if (rc)
		return rc;
	if (p->nb_queues > info.max_rx_queues || p->nb_queues > info.max_tx_queues)
		return -EINVAL;
	ec.txmode.offloads = tx_offloads(p, &info);
	rc = rte_eth_dev_configure(p->port_id, (uint16_t)p->nb_queues,
		(uint16_t)p->nb_queues, &ec);
	if (rc)
		return rc;
	mtu_set(p, &info);
	for (i = 0; i < p->nb_queues; i++) {
		rc = rte_eth_rx_queue_setup(p->port_id, (uint16_t)i, 1024,
			(unsigned int)rte_eth_dev_socket_id(p->port_id), NULL,
			p->pool);
		if (rc)
			return rc;
		rc = rte_eth_tx_queue_setup(p->port_id, (uint16_t)i, 1024,
			(unsigned int)rte_eth_dev_socket_id(p->port_id), NULL);
		if (rc)
			return rc;
	}
	return dp_port_start(p, &info);
}

/*
 * Which PMD this is decides two things: net_af_packet needs its TX ring
 * kicked (tx_kick), and zero-copy transmit is worth it only where the
 * device reads the frame itself; virtual devices copy it anyway.
 */
static void
zc_setup(struct droce_port *p)
{
	struct rte_eth_dev_info di;
	const char *bus;

	if (rte_eth_dev_info_get(p->port_id, &di) != 0)
		return;
	if (di.driver_name != NULL && strcmp(di.driver_name, "net_af_packet") == 0)
		p->tx_kick = 1;
	bus = dev_bus(&di);
	p->zc_dma = dp_dev_dmas(&di);
	p->zc_min = p->conf.tx_zc_min == DROCE_ZC_AUTO ?
		(p->zc_dma ? DROCE_ZC_DEFAULT_MIN : 0) :
		p->conf.tx_zc_min == DROCE_ZC_OFF ? 0 : p->conf.tx_zc_min;
	if (!(di.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS))
		p->zc_min = 0;
	/* a port the application configured may not take multi-segment
	 * frames (DPDK 22.11 has no stable call to ask): only if asked */
	if (!p->owns_port && p->conf.tx_zc_min == DROCE_ZC_AUTO)
		p->zc_min = 0;
	DP_LOG(DEBUG, "port %u: bus %s, zero-copy transmit from %u bytes",
		p->port_id, bus ? bus : "?", p->zc_min);
}

uint32_t
droce_port_zc_min(const struct droce_port *p)
{
	return p->zc_min;
}

/*
 * The steps of droce_port_open return 0, or -1 with errno saying why where
 * the failing call set it; droce_port_close undoes what any of them did.
 */

static struct droce_port *
port_alloc(const struct droce_port_conf *conf)
{
	struct droce_port *p = calloc(1, sizeof(*p));

	if (p == NULL)
		return NULL;
	p->wake_fd = -1;
	p->wake_extra = -1;
	p->conf = *conf;
	snprintf(p->name, sizeof(p->name), "%s", conf->name ? conf->name : "droce0");
	p->nb_queues = conf->nb_queues ? conf->nb_queues : 1;
	p->mtu = conf->mtu ? conf->mtu : 1500;
	rte_spinlock_init(&p->neigh_lock);
	rte_spinlock_init(&p->fault_lock);
	rte_spinlock_init(&p->mc_lock);
	droce_port_set_fault(p, &conf->fault_rx, &conf->fault_tx);
	return p;
}

static int
pool_create(struct droce_port *p)
{
	char pool_name[RTE_MEMPOOL_NAMESIZE + 64];
	uint32_t buf;

	/* mbufs big enough for a frame of the port MTU in one segment */
	buf = RTE_PKTMBUF_HEADROOM + p->mtu + 128;
	if (buf < RTE_MBUF_DEFAULT_BUF_SIZE)
		buf = RTE_MBUF_DEFAULT_BUF_SIZE;
	/* names are global in DPDK's shared memory: keep them short */
	snprintf(pool_name, RTE_MEMPOOL_NAMESIZE, "drc%d_%.12s", getpid(),
		p->name);
	p->pool = rte_pktmbuf_pool_create(pool_name, 8191 * p->nb_queues, 256, 0,
		(uint16_t)buf, (int)rte_socket_id());
	if (p->pool == NULL) {
		DP_LOG(ERR, "mbuf pool: %s", rte_strerror(rte_errno));
		return -1;
	}
	return 0;
}

/* Probe the device in conf.devargs and configure it as droce's own. */
static int
port_probe(struct droce_port *p)
{
	const char *devargs = p->conf.devargs;
	char name[128], *c;
	int rc;

	if (devargs == NULL) {
		errno = EINVAL;
		return -1;
	}
	snprintf(name, sizeof(name), "%s", devargs);
	c = strchr(name, ',');
	if (c)
		*c = 0;
	rc = rte_dev_probe(devargs);
	if (rc) {
		/* rte_dev_probe's code (EFAULT for a name no driver takes)
		 * says little: the device is not there for droce */
		DP_LOG(ERR, "DPDK refuses device %s (%s)", devargs,
			strerror(-rc));
		errno = ENODEV;
		return -1;
	}
	if (rte_eth_dev_get_port_by_name(name, &p->port_id) != 0) {
		DP_LOG(ERR, "no ethdev named %s", name);
		errno = ENODEV;
		return -1;
	}
	p->owns_port = 1;
	rc = port_setup(p);
	if (rc) {
		DP_LOG(ERR, "port %u setup: %s", p->port_id, strerror(-rc));
		return -1;
	}
	return 0;
}

/* MAC and addresses from the port or the configuration. */
static void
port_addresses(struct droce_port *p)
{
	static const uint8_t zero[6];

	if (memcmp(p->conf.mac, zero, 6) != 0)
		memcpy(p->mac.addr_bytes, p->conf.mac, 6);
	else
		rte_eth_macaddr_get(p->port_id, &p->mac);
	p->ipv4 = p->conf.ipv4;
}

/* The transport device: the port's MAC and MTU, GIDs as rxe lays them
 * out (0: link-local, 1: IPv4-mapped, 2: a configured IPv6 address). */
/* The link's speed for DCQCN's line rate; 100 Gbit/s where the PMD
 * reports none (virtual devices, a link still down). */
static uint32_t
link_mbps(const struct droce_port *p)
{
	struct rte_eth_link link;

	if (rte_eth_link_get_nowait(p->port_id, &link) != 0 ||
			link.link_speed == RTE_ETH_SPEED_NUM_NONE ||
			link.link_speed == RTE_ETH_SPEED_NUM_UNKNOWN)
		return 100000;
	return link.link_speed;
}

static int
dev_create(struct droce_port *p)
{
	static const uint8_t none[16];
	struct droce_dev_conf dc;

	memset(&dc, 0, sizeof(dc));
	memcpy(dc.mac, p->mac.addr_bytes, 6);
	dc.eth_mtu = p->mtu;
	dc.nb_queues = p->nb_queues;
	droce_gid_link_local(dc.gids[0].gid, dc.mac);
	dc.gids[0].valid = 1;
	if (p->ipv4) {
		droce_gid_from_ipv4(dc.gids[1].gid, p->ipv4);
		dc.gids[1].valid = 1;
	}
	if (memcmp(p->conf.ipv6, none, 16) != 0) {
		memcpy(dc.gids[2].gid, p->conf.ipv6, 16);
		dc.gids[2].valid = 1;
	}
	dc.seed = rte_get_tsc_cycles() ^ (uint64_t)getpid() << 32;
	dc.rxe_flush_icrc = p->conf.rxe_flush_icrc;
	dc.rto_min_us = p->conf.rto_min_us;
	dc.no_ecn = p->conf.no_ecn;
	dc.np_min_time_between_cnps_ns = p->conf.np_min_time_between_cnps_ns;
	dc.np_cnp_dscp = p->conf.np_cnp_dscp;
	dc.cc = p->conf.cc;
	dc.line_rate_mbps = p->conf.line_rate_mbps ? p->conf.line_rate_mbps :
		link_mbps(p);
	dc.dcqcn_set = p->conf.dcqcn_set;
	dc.dcqcn = p->conf.dcqcn;
	dc.delay_target_ns = p->conf.delay_target_ns;
	dc.delay_ai_mbps = p->conf.delay_ai_mbps;
	dc.selective_repeat = p->conf.selective_repeat;
	dc.sr_window = p->conf.sr_window;
	p->dev = droce_dev_create(&dc);
	if (p->dev == NULL)
		return -1;
	/* an application's own port keeps its own filters */
	if (p->owns_port)
		dp_filter_setup(p, &dc, p->zc_dma);
	return 0;
}

/* Each queue: its transport queue, transmit buffers and, with several
 * queues, the ring other queues hand its QPs' frames through. */
static int
queues_setup(struct droce_port *p)
{
	char rn[RTE_RING_NAMESIZE + 64];
	uint32_t i;

	for (i = 0; i < p->nb_queues; i++) {
		struct dp_queue *q = &p->q[i];

		q->port = p;
		q->index = i;
		rte_spinlock_init(&q->lock);
		q->tq = droce_dev_queue(p->dev, i);
		dp_txbuf_attach(q);
		if (p->nb_queues == 1)
			continue;
		snprintf(rn, RTE_RING_NAMESIZE, "drh%d_%.8s_%u", getpid(),
			p->name, i);
		q->handoff = rte_ring_create(rn, 4096, (int)rte_socket_id(),
			RING_F_SC_DEQ);
		if (q->handoff == NULL)
			return -1;
	}
	return 0;
}

struct droce_port *
droce_port_open(const struct droce_port_conf *conf)
{
	struct droce_port *p;
	int rc;

	rc = dp_eal_init(conf->eal_args);
	if (rc) {
		errno = -rc;
		return NULL;
	}
	p = port_alloc(conf);
	if (p == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	if (p->nb_queues > DP_MAX_QUEUES) {
		errno = EINVAL;
		goto fail;
	}
	if (pool_create(p) != 0)
		goto fail;
	if (conf->attach_port_id >= 0)
		p->port_id = (uint16_t)conf->attach_port_id;
	else if (port_probe(p) != 0)
		goto fail;
	port_addresses(p);
	dp_mtu_cap(p);
	zc_setup(p);
	if (dev_create(p) != 0 || queues_setup(p) != 0)
		goto fail;
	dp_telemetry_register(p);
	dp_port_track(p, 1);
	if (conf->mode == DROCE_PROGRESS_THREAD &&
			dp_progress_thread_start(p) != 0)
		goto fail;
	return p;
fail:
	rc = errno ? errno : EIO;
	droce_port_close(p);
	errno = rc;
	return NULL;
}

void
droce_port_close(struct droce_port *p)
{
	uint32_t i;

	if (p == NULL)
		return;
	/* stop polling first, drain, then close (memif: never mid-burst) */
	dp_progress_stop(p);
	dp_telemetry_unregister(p);
	dp_port_tx_release(p);
	for (i = 0; i < p->nb_queues; i++) {
		struct dp_queue *q = &p->q[i];

		if (q->tq == NULL)
			continue;
		if (q->handoff) {
			struct rte_mbuf *m;

			while (rte_ring_dequeue(q->handoff, (void **)&m) == 0)
				rte_pktmbuf_free(m);
			rte_ring_free(q->handoff);
		}
	}
	dp_fault_free(&p->frx);
	dp_fault_free(&p->ftx);
	if (p->owns_port) {
		dp_filter_teardown(p);
		dp_port_stop_close(p);
	}
	dp_port_track(p, 0);
	if (p->dev)
		droce_dev_destroy(p->dev);
	if (p->pool)
		rte_mempool_free(p->pool);
	free(p);
}

struct droce_dev *
droce_port_dev(struct droce_port *p)
{
	return p->dev;
}

static int
own_gid(struct droce_port *p, const uint8_t gid[16])
{
	const struct droce_dev_conf *dc = droce_dev_conf(p->dev);
	unsigned int i;

	for (i = 0; i < DROCE_MAX_GIDS; i++)
		if (dc->gids[i].valid && memcmp(dc->gids[i].gid, gid, 16) == 0)
			return 1;
	return 0;
}

int
droce_port_resolve(struct droce_port *p, const uint8_t dgid[16], uint8_t mac[6],
		uint32_t timeout_ms)
{
	uint64_t end = droce_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	uint64_t next = 0;
	uint32_t ip, q;

	/* a peer is about to be talked to: a net_memif server's link is up
	 * by now (the client's was at start) */
	dp_memif_prefault(p);
	/* a group has no neighbour to ask: its MAC is its address's */
	if (droce_gid_mcast_mac(dgid, mac) == 0)
		return 0;
	if (dp_neigh_lookup(p, dgid, mac) == 0)
		return 0;
	if (own_gid(p, dgid)) {
		/* loopback: frames to our MAC come back to us (dp_txbuf.c) */
		rte_ether_addr_copy(&p->mac, (struct rte_ether_addr *)mac);
		p->loopback = 1;
		return 0;
	}
	while (droce_now_ns() < end) {
		if (droce_now_ns() >= next) {
			if (droce_gid_is_ipv4(dgid, &ip))
				dp_arp_request(p, ip);
			else
				dp_nd_solicit(p, dgid);
			next = droce_now_ns() + 100000000ull;
		}
		if (p->conf.mode != DROCE_PROGRESS_THREAD) {
			/* the answer lands on whichever queue the NIC
			 * picks (RSS, af_packet's fanout) */
			for (q = 0; q < p->nb_queues; q++)
				droce_port_progress(p, q);
		} else
			usleep(200);
		if (dp_neigh_lookup(p, dgid, mac) == 0) {
			dp_memif_prefault(p);	/* the link is up */
			return 0;
		}
	}
	return -ETIMEDOUT;
}

int
droce_port_queue_stats(struct droce_port *p, uint32_t qi,
		struct droce_port_queue_stats *st)
{
	struct dp_queue *q;

	if (p == NULL || st == NULL || qi >= p->nb_queues)
		return -EINVAL;
	q = &p->q[qi];
	rte_spinlock_lock(&q->lock);
	st->rx_pkts = q->rx_pkts;
	st->tx_pkts = q->tx_pkts;
	st->tx_drops = q->tx_drops;
	st->tx_kicks = q->kicks;
	st->handoffs = q->handoffs;
	st->handoff_drops = q->handoff_drops;
	st->non_roce = q->non_roce;
	st->arp = q->arp;
	st->tx_zc_copied = q->zc_copied;
	st->rx_bursts = q->rx_bursts;
	st->tx_bursts = q->tx_bursts;
	st->tx_ip_csum_offloaded = q->ip_csum_offloaded;
	st->tx_tso_offloaded = q->tso_offloaded;
	st->tx_tso_drops = q->tso_drops;
	st->loopback = q->loopback;
	st->loopback_drops = q->loopback_drops;
	st->awaited_passes = q->armed_passes;
	st->awaited_naps = q->awaited_naps;
	rte_spinlock_unlock(&q->lock);
	return 0;
}

int
droce_port_add_neighbor(struct droce_port *p, const uint8_t gid[16],
		const uint8_t mac[6])
{
	dp_neigh_learn(p, gid, mac, 1);
	return 0;
}

uint32_t
droce_port_ipv4(const struct droce_port *p)
{
	return p->ipv4;
}

uint16_t
droce_port_id(const struct droce_port *p)
{
	return p->port_id;
}
