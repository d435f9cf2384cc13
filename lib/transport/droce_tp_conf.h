/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

#ifndef DROCE_TP_CONF_H
#define DROCE_TP_CONF_H

/* What a device is made with: its limits, GIDs and modes (selective repeat,
 * congestion control). Included by droce_transport.h, not directly. */

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "droce_wire.h"

/** Limits droce enforces; reported by ibv_query_device. */
struct droce_dev_limits {
	uint32_t max_qp;
	uint32_t max_qp_wr;
	uint32_t max_sge;
	uint32_t max_inline;
	uint32_t max_cq;
	uint32_t max_cqe;
	uint32_t max_mr;
	uint64_t max_mr_size;
	uint32_t max_pd;
	uint32_t max_mw;
	uint32_t max_srq;
	uint32_t max_srq_wr;
	uint32_t max_srq_sge;
	uint32_t max_qp_rd_atom;	/**< max_rd_atomic / max_dest_rd_atomic */
	uint32_t max_ah;
	uint32_t max_msg_sz;		/**< 2^31 */
	/** Multicast: groups on the device, QPs per group, attachments in
	 * all (0: the default, also where max_qp is given) */
	uint32_t max_mcast_grp;
	uint32_t max_mcast_qp_attach;
	uint32_t max_total_mcast_qp_attach;
};

/** Fills lim with droce's defaults. */
void droce_dev_default_limits(struct droce_dev_limits *lim);

/** One local address of the device (a GID table entry). */
struct droce_gid_entry {
	uint8_t gid[16];
	uint8_t valid;
};

#define DROCE_MAX_GIDS 16

/** droce_dev_conf.selective_repeat */
enum droce_sr_mode {
	DROCE_SR_OFF = 0,
	DROCE_SR_ALL = 1,	/**< every RC QP (but XRC's) */
	DROCE_SR_CM = 2,	/**< offered through rdma_cm's private data */
};

/** droce_dev_conf.cc: the congestion control of RC and UC QPs */
enum droce_cc_mode {
	DROCE_CC_DCQCN = 0,	/**< DCQCN's reaction point (doc/congestion.md) */
	DROCE_CC_NONE = 1,	/**< CNPs counted (rp_cnp_ignored), not acted on */
	/** zero-touch: the rate follows the queueing delay the requester
	 *  measures (tp_delay.c); CNPs counted, not acted on */
	DROCE_CC_DELAY = 2,
};

/**
 * DCQCN's reaction point, with mlx5's cc_params names and ConnectX's
 * defaults (droce_dcqcn_params_default). Rates in Mbit/s, times in
 * microseconds, alpha and g in 1/1024.
 */
struct droce_dcqcn_params {
	uint32_t rp_rate_reduce_monitor_period;	/**< us between cuts: 4 */
	uint32_t rp_initial_alpha_value;	/**< alpha at the first CNP: 1023 */
	uint32_t rp_dce_tcp_g;	/**< alpha kept per period (of 1024): 1019 */
	uint32_t rp_dce_tcp_rtt;	/**< alpha's period, us: 1 */
	uint32_t rp_time_reset;	/**< us between increases by timer: 300 */
	uint32_t rp_byte_reset;	/**< bytes between increases by count: 32767 */
	uint32_t rp_threshold;	/**< stages before additive, hyper: 1 */
	uint32_t rp_ai_rate;	/**< additive increase, Mbit/s: 5 */
	uint32_t rp_hai_rate;	/**< hyper increase, Mbit/s: 50 */
	uint32_t rp_gd;		/**< a cut is by alpha / 2^gd (of 1024): 11 */
	uint32_t rp_min_dec_fac;	/**< a cut keeps at least this %: 50 */
	uint32_t rp_min_rate;	/**< floor, Mbit/s: 1 */
	uint32_t rp_rate_to_set_on_first_cnp;	/**< Mbit/s, 0: line rate */
	uint32_t rp_clamp_tgt_rate;	/**< target = current at every cut: 0 */
	/** target = current at a cut after an increase by timer: 1 */
	uint32_t rp_clamp_tgt_rate_ati;
};

/** ConnectX's defaults. */
void droce_dcqcn_params_default(struct droce_dcqcn_params *p);

/** What the device needs from its port; the dataplane supplies it. */
struct droce_dev_conf {
	uint8_t mac[6];
	uint32_t eth_mtu;		/**< 1500 -> active_mtu 1024 */
	uint32_t nb_queues;		/**< owner contexts, >= 1 */
	struct droce_gid_entry gids[DROCE_MAX_GIDS]; /**< 0: link-local, 1: IPv4-mapped */
	struct droce_dev_limits limits;	/**< zeroed: defaults */
	uint64_t seed;			/**< for initial PSNs and keys */
	/** FLUSHes leave with Linux rxe's ICRC, not the spec's
	 *  (droce_icrc_rxe_flush): rxe drops the others */
	uint8_t rxe_flush_icrc;
	/** The retransmission timer's floor in microseconds (0: 1000). An
	 *  RC requester times out after its measured round trip (smoothed,
	 *  plus four times its variation, doubling on each timeout), never
	 *  sooner than this nor later than the QP's local ACK timeout; a
	 *  floor at or above that timeout gives IBTA's fixed timer. */
	uint32_t rto_min_us;
	/** Selective repeat (doc/transport.md), enum droce_sr_mode: off
	 *  (go-back-N, as IBTA), for every RC QP (only where every peer is
	 *  droce with it too: the other end must hold and acknowledge
	 *  out-of-order requests, which a standard peer cannot), or offered
	 *  through rdma_cm (on for a connection whose both ends offered it;
	 *  QPs start with it off). droce_qp_set_sr chooses per QP. */
	uint8_t selective_repeat;
	/** Selective repeat's window: PSNs between the oldest unacknowledged
	 *  and the next sent, and out-of-order requests a responder holds
	 *  (a copy each, window x path MTU bytes once it holds any), 64 to
	 *  4096, rounded up to a power of 2 (0: 1024: 1 MB of 1 KB packets,
	 *  eight bandwidth-delay products of 100 Gbit/s at 10 us, so that
	 *  sending goes on while a loss is repaired) */
	uint32_t sr_window;
	/** Frames leave Not-ECT unless the address handle's traffic class
	 *  names an ECN codepoint (0: ECT(0), as ConnectX with DCQCN) */
	uint8_t no_ecn;
	/** The notification point: at most one CNP per QP per this (0:
	 *  4000 ns, ConnectX's np_min_time_between_cnps), on this DSCP (0:
	 *  48, its np_cnp_dscp) */
	uint32_t np_min_time_between_cnps_ns;
	uint8_t np_cnp_dscp;
	/** The reaction point (enum droce_cc_mode): a QP that receives a
	 *  CNP paces what it sends at the rate DCQCN gives it, from
	 *  line_rate_mbps (0: 100000) down; a QP that never saw one
	 *  sends as before, at no cost */
	uint8_t cc;
	uint32_t line_rate_mbps;
	/** DCQCN's parameters when dcqcn_set, else ConnectX's defaults */
	uint8_t dcqcn_set;
	struct droce_dcqcn_params dcqcn;
	/** DROCE_CC_DELAY: the queueing delay aimed at (0: 10000 ns) and
	 *  the additive increase per round trip (0: a thousandth of the
	 *  line rate) */
	uint32_t delay_target_ns;
	uint32_t delay_ai_mbps;
};

#endif /* DROCE_TP_CONF_H */
