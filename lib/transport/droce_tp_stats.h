/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

#ifndef DROCE_TP_STATS_H
#define DROCE_TP_STATS_H

/* The transport's counters: per queue, per QP, congestion control now.
 * Included by droce_transport.h, not directly. */

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "droce_wire.h"

struct droce_dev;
struct droce_qp;
struct droce_tp_queue;

/** Per-queue transport counters (summed over its QPs, those destroyed
 *  included). */
struct droce_tp_stats {
	uint64_t rx_pkts, rx_bytes, tx_pkts, tx_bytes;
	uint64_t rx_drop_parse[DROCE_WIRE_ERR_COUNT]; /**< by -droce_wire_err */
	uint64_t rx_drop_noqp, rx_drop_state, rx_drop_qkey, rx_drop_uc;
	/** Address filtering: another host's MAC; a multicast or broadcast
	 * MAC or IP that no QP of the queue joined (or a multicast MAC
	 * with an IP of another group); another host's IP (none of the
	 * device's GIDs); a connected QP's frame from other than its peer. */
	uint64_t rx_drop_mac, rx_drop_mcast, rx_drop_ip, rx_drop_src;
	/** Length defects not answered with a NAK (UC, UD, responses). */
	uint64_t rx_drop_len;
	uint64_t retransmits, timeouts, rewinds;
	uint64_t nak_seq_tx, nak_seq_rx, nak_inv_tx, nak_inv_rx;
	uint64_t nak_acc_tx, nak_acc_rx, nak_op_tx, nak_op_rx;
	uint64_t rnr_nak_tx, rnr_nak_rx;
	uint64_t dup_rx, out_of_seq_rx;
	uint64_t acks_tx, acks_rx;
	uint64_t read_replays, atomic_replays;
	/** FLUSHes executed; those whose write-back to the file failed;
	 *  those that came with Linux rxe's ICRC */
	uint64_t flushes, flush_errors, flush_rxe_icrc;
	uint64_t cq_overflows;
	uint64_t tx_zc_pkts;	/**< frames whose payload went by reference */
	/** XRC requests whose XRCETH named no SRQ, one of another XRC
	 * domain or of another queue (each NAKed) */
	uint64_t xrc_bad_srq;
	/** Retransmission timeouts that charged the retry budget: a whole
	 *  local ACK timeout without progress (IBTA's count; mlx5's
	 *  local_ack_timeout_err). timeouts counts every expiry of the
	 *  adaptive timer (tp_rto.c), the early ones too. */
	uint64_t timeouts_charged;
	/** Requests the responder received again (PSN before the one it
	 *  expects; mlx5's duplicate_request); dup_rx counts them with the
	 *  requester's duplicate responses. */
	uint64_t dup_req_rx;
	/** Requests sent again one by one, not by a rewind: a READ's
	 *  missing responses and a lost atomic answer asked again, and
	 *  selective repeat's packets */
	uint64_t resent_pkts;
	/** Selective repeat: requests the responder held out of order,
	 *  selective acknowledgements sent and received */
	uint64_t sr_held, sack_tx, sack_rx;
	/** Congestion notification (doc/congestion.md), mlx5's names in
	 *  telemetry: frames that came CE-marked
	 *  (np_ecn_marked_roce_packets), CNPs sent (np_cnp_sent), CNPs
	 *  acted on (rp_cnp_handled) and not (rp_cnp_ignored) */
	uint64_t np_ecn_marked, np_cnp_sent, rp_cnp_handled, rp_cnp_ignored;
	/** Retransmission timeouts that cut the rate as a CNP would
	 *  (mlx5's roce_slow_restart) */
	uint64_t slow_restart;
};

/** A QP's congestion control now (telemetry's per-QP rate). */
struct droce_qp_cc {
	uint8_t limited;	/**< paced: it received a CNP and has not
				 *  climbed back to the line rate */
	uint64_t rate_mbps;	/**< current rate (line rate when not limited) */
	uint64_t target_mbps;
	uint32_t alpha;		/**< of 1024 */
	uint64_t cuts;		/**< rate cuts since the QP was created */
};
void droce_qp_cc(const struct droce_qp *qp, struct droce_qp_cc *cc);
/** The same by QPN (the owner lock held, as droce_dev_qp_stats). */
int droce_dev_qp_cc(const struct droce_dev *dev, uint32_t qpn,
		struct droce_qp_cc *cc);

void droce_tp_queue_stats(const struct droce_tp_queue *q, struct droce_tp_stats *st);
/** Per-QP counters (same fields; the rx_drop_* that need no QP stay 0). */
void droce_qp_stats(const struct droce_qp *qp, struct droce_tp_stats *st);

/** The same by QPN: 0, or -ENOENT when no QP has that number (call with
 * the QP's queue's owner lock held, as for droce_dev_qp_sq_idle). */
int droce_dev_qp_stats(const struct droce_dev *dev, uint32_t qpn,
		struct droce_tp_stats *st);

/** The QPNs in use on dev, ascending: writes up to max, returns how many
 * there are (may be more than max). */
uint32_t droce_dev_qpns(struct droce_dev *dev, uint32_t *qpns, uint32_t max);

#endif /* DROCE_TP_STATS_H */
