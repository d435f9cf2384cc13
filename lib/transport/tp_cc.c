/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * Congestion notification (doc/congestion.md). What droce sends is
 * ECN-capable: ECT(0) in the IP header unless the address handle's
 * traffic class names a codepoint of its own, as ConnectX with DCQCN on,
 * so that a switch can mark instead of drop (Linux rxe sends Not-ECT,
 * and a switch can only drop its frames). The notification point: a
 * frame of a connected QP that arrives marked CE (congestion
 * experienced) makes this end send a CNP to the peer QP, at most one per
 * QP per np_min_time_between_cnps (ConnectX's 4 us), in the format of
 * IBTA's RoCEv2 annex (A17.9.3): BTH opcode 0x81 with BECN set, PSN 0,
 * 16 reserved bytes, on DSCP 48 and Not-ECT. A CNP that arrives goes to
 * the reaction point (tp_dcqcn.c), which cuts the QP's rate; from then on
 * the QP is paced at that rate until it climbs back to the line rate.
 */

#include <string.h>

#include "tp_internal.h"

#define TP_NP_MIN_GAP_DEFAULT_NS	4000
#define TP_NP_CNP_DSCP_DEFAULT		48

uint8_t
tp_cc_tclass(const struct droce_dev *dev, uint8_t tclass)
{
	if (dev->conf.no_ecn || (tclass & DROCE_ECN_MASK))
		return tclass;
	return tclass | DROCE_ECN_ECT0;
}

void
tp_cc_rx_ce(struct droce_qp *qp)
{
	uint64_t gap = qp->dev->conf.np_min_time_between_cnps_ns, now;

	qp->st.np_ecn_marked++;
	if (qp->type == IBV_QPT_UD || qp->cnp_pending)
		return;
	now = qp->queue->now;
	if (gap == 0)
		gap = TP_NP_MIN_GAP_DEFAULT_NS;
	if (qp->cnp_sent_at && now - qp->cnp_sent_at < gap)
		return;
	qp->cnp_pending = 1;
}

int
tp_cc_send_cnp(struct droce_qp *qp)
{
	struct droce_tp_queue *q = qp->queue;
	uint8_t dscp = qp->dev->conf.np_cnp_dscp;
	struct droce_txbuf *b;
	struct droce_pkt p;
	uint8_t *buf;
	int hlen;

	buf = tp_tx_get(q, DROCE_MAX_HDR_LEN + 8, &b);
	if (buf == NULL)
		return 0;
	p = qp->tmpl;
	p.tclass = (uint8_t)((dscp ? dscp : TP_NP_CNP_DSCP_DEFAULT) << 2);
	p.opcode = DROCE_OP_CNP;
	p.dqpn = qp->dest_qpn;
	p.psn = 0;
	p.becn = 1;
	p.fecn = 0;
	p.se = 0;
	p.ackreq = 0;
	p.payload_len = 0;
	hlen = droce_wire_build_hdr(&p, buf, b->cap);
	if (hlen < 0) {
		qp->cnp_pending = 0;
		return 0;
	}
	tp_tx_done(qp, b, tp_finish(&p, buf, (uint32_t)hlen));
	qp->cnp_pending = 0;
	qp->cnp_sent_at = q->now ? q->now : 1;
	qp->st.np_cnp_sent++;
	return 1;
}

void
tp_cc_rx_cnp(struct droce_tp_queue *q, const struct droce_pkt *pkt)
{
	struct droce_qp *qp = tp_qp_by_qpn(q->dev, pkt->dqpn);

	if (qp == NULL || qp->queue != q || qp->type == IBV_QPT_UD ||
			memcmp(pkt->sgid, qp->av.dgid, 16) != 0) {
		q->st.rx_drop_noqp++;
		return;
	}
	if (qp->dev->conf.cc == DROCE_CC_NONE) {
		qp->st.rp_cnp_ignored++;
		return;
	}
	qp->st.rp_cnp_handled++;
	if (!qp->cc.limited)	/* paced from now on */
		qp->cc_next_tx = q->now;
	tp_dcqcn_cnp(&qp->cc, &qp->dev->dcqcn, q->now);
}

/*
 * Pacing: a limited QP's next frame may leave when the last one would
 * have finished at its rate. A QP that waited (nothing to send) gets at
 * most TP_CC_BURST bytes of credit back, so it cannot burst above its
 * rate after a pause, yet a data path that looks only every few
 * microseconds still reaches it.
 */
#define TP_CC_BURST	16384u

void
tp_cc_tx(struct droce_qp *qp, uint32_t len)
{
	uint64_t now = qp->queue->now, rate, floor;

	tp_dcqcn_sent(&qp->cc, &qp->dev->dcqcn, len, now);
	if (!qp->cc.limited)
		return;
	rate = qp->cc.rc;
	floor = now - TP_CC_BURST * 8000000000ull / rate;
	if (now > TP_CC_BURST * 8000000000ull / rate && qp->cc_next_tx < floor)
		qp->cc_next_tx = floor;
	qp->cc_next_tx += (uint64_t)len * 8000000000ull / rate;
}
