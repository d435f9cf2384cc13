/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * This side's port, QPs and memory; the side channel's exchange with
 * the peer, and the QPs connected to it.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_ethdev.h>

#include "droce_conf.h"
#include "perf_internal.h"

struct droce_port *port;
struct droce_pd *pd;
struct droce_cq *cq[16];
struct droce_qp *qp[PERF_MAX_QP];
uint8_t *mem;
size_t memsz;
struct droce_mr *mr;
struct perf_info me, peer;
int sc = -1;
uint32_t mtu_bytes = 1024;
struct droce_av peer_av;

/* What a test writes into a slot, and checks where it lands. */
void
pattern(uint8_t *p, size_t n, uint32_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)((i * 2654435761u + seed) >> 11);
}

int
pattern_ok(const uint8_t *p, size_t n, uint32_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != (uint8_t)((i * 2654435761u + seed) >> 11))
			return 0;
	return 1;
}

/* The largest SEND the client will make: the server sizes its receive
 * buffers for it (0 when no SEND is asked for). */
static uint32_t
max_send_size(void)
{
	uint32_t m = 0;
	int i, s;

	for (i = 0; i < opt.nops; i++)
		if (opt.ops[i] == OP_SEND)
			for (s = 0; s < (int)opt.nsizes; s++)
				if (opt.sizes[s] > m)
					m = opt.sizes[s];
	return m;
}

/*
 * Congestion control's keys from the environment, as the library reads
 * them (doc/congestion.md): DROCE_RP_*, DROCE_NP_MIN_TIME_BETWEEN_CNPS,
 * DROCE_CC_DELAY_*, DROCE_CC=delay; the options take precedence for
 * --cc none and --line-rate. A malformed key stops droce-perf.
 */
static void
cc_conf_env(struct droce_port_conf *pc)
{
	static char err[256];
	struct droce_conf c;

	if (droce_conf_check(err, sizeof(err)) != 0) {
		fprintf(stderr, "%s\n", err);
		exit(2);
	}
	droce_conf_load(&c);
	pc->dcqcn_set = c.dcqcn_set;
	pc->dcqcn = c.dcqcn;
	pc->np_min_time_between_cnps_ns = c.np_gap_ns;
	pc->np_cnp_dscp = c.np_cnp_dscp;
	pc->no_ecn = (uint8_t)c.no_ecn;
	pc->delay_target_ns = c.delay_target_ns;
	pc->delay_ai_mbps = c.delay_ai_mbps;
	if (!opt.cc_none && c.cc == DROCE_CC_DELAY)
		pc->cc = DROCE_CC_DELAY;
	if (!opt.line_rate)
		pc->line_rate_mbps = c.line_rate_mbps;
}

int
setup(void)
{
	struct droce_port_conf pc;
	struct ibv_qp_init_attr ia;
	struct in_addr a;
	uint32_t i;

	droce_port_conf_init(&pc);
	pc.eal_args = opt.eal;
	pc.devargs = opt.vdev;
	pc.nb_queues = opt.queues;
	if (opt.mtu)
		pc.mtu = opt.mtu;
	pc.tx_zc_min = opt.zc_min;
	pc.selective_repeat = (uint8_t)opt.sr;
	pc.sr_window = opt.sr_window;
	pc.cc = opt.cc_none ? DROCE_CC_NONE : DROCE_CC_DCQCN;
	pc.line_rate_mbps = opt.line_rate;
	cc_conf_env(&pc);
	pc.mode = DROCE_PROGRESS_INLINE;
	inet_pton(AF_INET, opt.ip, &a);
	pc.ipv4 = ntohl(a.s_addr);
	if (opt.ip6 && inet_pton(AF_INET6, opt.ip6, pc.ipv6) != 1) {
		fprintf(stderr, "droce-perf: bad --ip6 %s\n", opt.ip6);
		return -1;
	}
	memcpy(me.ipv6, pc.ipv6, 16);
	pc.fault_rx = opt.fault;
	pc.fault_rx.seed = 11 + (uint64_t)opt.server;
	pc.name = opt.server ? "perf-server" : "perf-client";
	port = droce_port_open(&pc);
	if (port == NULL) {
		fprintf(stderr, "droce-perf: cannot open %s: %s\n", opt.vdev,
			strerror(errno));
		return -1;
	}
	mtu_bytes = droce_mtu_to_bytes(droce_eth_mtu_to_path_mtu(
		droce_dev_conf(droce_port_dev(port))->eth_mtu));
	if (opt.expect_path_mtu && mtu_bytes != opt.expect_path_mtu) {
		fprintf(stderr, "droce-perf: path MTU %u, expected %u\n",
			mtu_bytes, opt.expect_path_mtu);
		droce_port_close(port);
		return -1;
	}
	if (ud_sizes_fit(mtu_bytes, "the port's") != 0) {
		droce_port_close(port);
		return -1;
	}
	pd = droce_pd_alloc(droce_port_dev(port));
	for (i = 0; i < opt.queues; i++)
		cq[i] = droce_cq_create(droce_port_dev(port), i, 4096);
	memset(&ia, 0, sizeof(ia));
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = opt.depth < 64 ? 64 : opt.depth;
	ia.cap.max_recv_wr = 512;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	ia.cap.max_inline_data = 256;
	for (i = 0; i < opt.nqp; i++) {
		/* progress may run already: hold the queue it walks */
		droce_port_lock(port, i % opt.queues);
		qp[i] = droce_qp_create(pd, &ia, cq[i % opt.queues],
			cq[i % opt.queues], NULL);
		droce_port_unlock(port, i % opt.queues);
		if (qp[i] == NULL) {
			fprintf(stderr, "droce-perf: QP: %s\n", strerror(errno));
			return -1;
		}
	}
	memsz = (size_t)PERF_MAX_QP * SLOT_SZ;
	mem = aligned_alloc(4096, memsz);
	memset(mem, 0, memsz);
	mr = droce_mr_reg(pd, mem, memsz, (uint64_t)(uintptr_t)mem,
		IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	me.nqp = opt.nqp;
	for (i = 0; i < opt.nqp; i++) {
		me.qpn[i] = droce_qp_num(qp[i]);
		me.psn[i] = (uint32_t)rand() & 0xffffff;
	}
	me.addr = (uint64_t)(uintptr_t)mem;
	me.rkey = droce_mr_rkey(mr);
	me.max_send = max_send_size();
	me.ipv4 = pc.ipv4;
	rte_eth_macaddr_get(droce_port_id(port), (struct rte_ether_addr *)me.mac);
	return 0;
}

/* The side channel to the peer, and what each side tells the other. */
int
sc_exchange(void)
{
	sc = opt.server ? sc_listen(opt.sc_addr, opt.port) :
		sc_connect(opt.sc_addr, opt.port, 60);
	if (sc < 0) {
		fprintf(stderr, "droce-perf: side channel on port %d failed\n",
			opt.port);
		return -1;
	}
	if (sc_send(sc, &me, sizeof(me)) || sc_recv(sc, &peer, sizeof(peer)) ||
			peer.nqp != me.nqp) {
		fprintf(stderr, "droce-perf: exchange failed (QP counts?)\n");
		return -1;
	}
	return 0;
}

/*
 * The server's answer on the side channel; meanwhile the port goes on
 * being progressed, as a NIC answers ARP and ND whatever its host does:
 * a server still resolving our address waits on us (nine busy processes
 * on two CPUs: fabric_incast_ecn_ipv6's receiver once timed out its
 * neighbour discovery while its sender sat in a blocking recv).
 */
int
sc_recv_progress(int fd, void *b, size_t n)
{
	uint32_t q;

	while (!sc_ready(fd))
		for (q = 0; q < opt.queues; q++)
			droce_port_progress(port, q);
	return sc_recv(fd, b, n);
}

int
connect_qps(void)
{
	struct ibv_qp_attr a;
	uint32_t i, max_rd;
	int rc;

	memset(&peer_av, 0, sizeof(peer_av));
	droce_gid_from_ipv4(peer_av.dgid, peer.ipv4);
	peer_av.sgid_index = 1;
	if (opt.ip6) {
		memcpy(peer_av.dgid, peer.ipv6, 16);
		peer_av.sgid_index = 2;
	}
	peer_av.hop_limit = 64;
	if (opt.static_neigh) {
		memcpy(peer_av.dmac, peer.mac, 6);
		droce_port_add_neighbor(port, peer_av.dgid, peer.mac);
	} else {
		rc = droce_port_resolve(port, peer_av.dgid, peer_av.dmac,
			10000);
		if (rc) {
			fprintf(stderr, "droce-perf: ARP for the peer: %s\n",
				strerror(-rc));
			return -1;
		}
	}
	/* as perftest: the device's maximum unless -o/--outs says less; the
	 * responder offers the maximum so a peer's --outs always fits */
	max_rd = droce_dev_limits(droce_port_dev(port))->max_qp_rd_atom;
	if (opt.outs > max_rd) {
		fprintf(stderr, "droce-perf: --outs %u above the device's %u,"
			" using %u\n", opt.outs, max_rd, max_rd);
		opt.outs = max_rd;
	} else if (opt.outs == 0) {
		opt.outs = max_rd;
	}
	for (i = 0; i < opt.nqp; i++) {
		uint32_t q = qp_queue(i);

		droce_port_lock(port, q);
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_INIT;
		a.port_num = 1;
		a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			IBV_ACCESS_REMOTE_ATOMIC;
		rc = droce_qp_modify(qp[i], &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, NULL);
		a.qp_state = IBV_QPS_RTR;
		a.path_mtu = (enum ibv_mtu)droce_bytes_to_mtu(mtu_bytes);
		a.dest_qp_num = peer.qpn[i];
		a.rq_psn = peer.psn[i];
		a.max_dest_rd_atomic = (uint8_t)max_rd;
		a.min_rnr_timer = 12;
		if (rc == 0)
			rc = droce_qp_modify(qp[i], &a, IBV_QP_STATE |
				IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				IBV_QP_MIN_RNR_TIMER, &peer_av);
		a.qp_state = IBV_QPS_RTS;
		a.sq_psn = me.psn[i];
		a.timeout = (uint8_t)opt.timeout;
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.max_rd_atomic = (uint8_t)opt.outs;
		if (rc == 0)
			rc = droce_qp_modify(qp[i], &a, IBV_QP_STATE |
				IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC, NULL);
		droce_port_unlock(port, q);
		if (rc) {
			fprintf(stderr, "droce-perf: modify QP %u (INIT, RTR, RTS): %s\n",
				i, strerror(-rc));
			return -1;
		}
	}
	return 0;
}
