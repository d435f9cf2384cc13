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
	if (qp->dev->conf.cc != DROCE_CC_DCQCN) {
		qp->st.rp_cnp_ignored++;
		return;
	}
	qp->st.rp_cnp_handled++;
	if (!qp->cc.limited)	/* paced from now on */
		qp->cc_next_tx = q->now;
	tp_dcqcn_cnp(&qp->cc, &qp->dev->dcqcn, q->now);
}

/*
 * The retransmission timer fired: what was in flight is lost, most
 * likely to a queue that overflowed, and nothing may come back to say
 * so (every marked frame was dropped too). A QP at the line rate enters
 * the limiter as for a CNP (ConnectX's slow restart), or it would come
 * back at the line rate into the queue that dropped its window.
 */
void
tp_cc_timeout(struct droce_qp *qp)
{
	/* once limited, CNPs steer the rate: timeouts in a row (a peer
	 * gone, a long outage) would otherwise drive it to the floor */
	if (qp->dev->conf.cc == DROCE_CC_NONE || qp->type != IBV_QPT_RC)
		return;
	qp->st.slow_restart++;
	if (!qp->cc.limited)
		qp->cc_next_tx = qp->queue->now;
	if (qp->dev->conf.cc == DROCE_CC_DELAY)
		tp_delay_loss(&qp->cc, &qp->dev->delay, qp->queue->now);
	else
		tp_dcqcn_cnp(&qp->cc, &qp->dev->dcqcn, qp->queue->now);
}

/*
 * The delay-based controller also bounds what is in flight, as Swift's
 * window does: the rate (the line rate until the first cut) times the
 * round trip it aims at (the shortest seen plus the target), at least
 * two packets. Pacing alone lets a flow keep sending into a queue whose
 * delay it hears of only a queue's worth later; the window stops it
 * when its own packets wait, and keeps an incast's first burst to a
 * bandwidth-delay product per flow.
 */
int
tp_cc_window_full(const struct droce_qp *qp)
{
	const struct tp_delay_conf *c = &qp->dev->delay;
	uint64_t win, inflight, rate, rtt;

	rate = qp->cc.limited ? qp->cc.rc : c->line_bps;
	/* before the first round trip is measured: twice the target */
	rtt = (qp->rtt_min_ns ? qp->rtt_min_ns : c->target_ns) + c->target_ns;
	win = rate / 8 * rtt / 1000000000;
	if (win < 2ull * qp->mtu)
		win = 2ull * qp->mtu;
	inflight = (uint64_t)droce_psn_diff(qp->psn, qp->una) * qp->mtu;
	return inflight >= win;
}

void
tp_cc_rtt(struct droce_qp *qp, uint64_t rtt, uint64_t now)
{
	if (qp->dev->conf.cc != DROCE_CC_DELAY)
		return;
	if (!qp->cc.limited)
		qp->cc_next_tx = now;
	tp_delay_rtt(&qp->cc, &qp->dev->delay, rtt, qp->rtt_min_ns, now);
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

	if (qp->dev->conf.cc == DROCE_CC_DCQCN)
		tp_dcqcn_sent(&qp->cc, &qp->dev->dcqcn, len, now);
	if (!qp->cc.limited)
		return;
	rate = qp->cc.rc;
	floor = now - TP_CC_BURST * 8000000000ull / rate;
	if (now > TP_CC_BURST * 8000000000ull / rate && qp->cc_next_tx < floor)
		qp->cc_next_tx = floor;
	qp->cc_last_tx = qp->cc_next_tx > now ? qp->cc_next_tx : now;
	qp->cc_last_len = len;
	qp->cc_next_tx += (uint64_t)len * 8000000000ull / rate;
}

/*
 * A paced QP waits for its next frame's time; meanwhile DCQCN's timer
 * may have raised the rate (a flow cut to a few Mbit/s waits
 * milliseconds a frame, and only the timer brings it back): the time is
 * taken again at the rate now. 1 if it must still wait.
 */
int
tp_cc_wait_slow(struct droce_qp *qp)
{
	uint64_t now = qp->queue->now, rc = qp->cc.rc, t;

	if (qp->dev->conf.cc == DROCE_CC_DCQCN)
		tp_dcqcn_advance(&qp->cc, &qp->dev->dcqcn, now);
	if (!qp->cc.limited)
		return 0;
	if (qp->cc.rc != rc) {
		t = qp->cc_last_tx + (uint64_t)qp->cc_last_len *
			8000000000ull / qp->cc.rc;
		if (t < qp->cc_next_tx)
			qp->cc_next_tx = t;
	}
	return now < qp->cc_next_tx;
}

/* When a paced QP may send next, or its rate may rise (the timer). */
uint64_t
tp_cc_deadline(const struct droce_qp *qp)
{
	uint64_t t = qp->cc_next_tx;
	const struct tp_dcqcn_conf *c = &qp->dev->dcqcn;

	if (qp->dev->conf.cc == DROCE_CC_DCQCN && c->time_reset_ns &&
			qp->cc.timer_at + c->time_reset_ns < t)
		t = qp->cc.timer_at + c->time_reset_ns;
	return t;
}
