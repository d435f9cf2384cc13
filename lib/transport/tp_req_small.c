/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * The requester's common case: a one-packet RC SEND or WRITE (one SGE or
 * inline data), a READ or an atomic, on a QP with nothing to ask again,
 * no pacing, no delay window and no selective repeat; and a UD SEND.
 * send_one and tx_req (tp_req.c) do the same for them through every case a
 * request can be; this path knows which it is, and takes the same window,
 * credit and key checks. Whether the QP qualifies is known once per call,
 * the WQE once per WQE; anything else stops it and the general path goes
 * on.
 */

#include <string.h>

#include "tp_internal.h"

static inline int
small_wqe(const struct droce_qp *qp, const struct tp_swqe *w)
{
	unsigned int f = w->wr_flags;

	if (w->state != TP_WQE_POSTED || qp->cur_off != 0 ||
			(w->flags & IBV_SEND_FENCE))
		return 0;
	if ((f & (TP_WRF_PAYLOAD | TP_WRF_LOCAL | TP_WRF_EMPTY_RESP)) ==
			TP_WRF_PAYLOAD)
		return w->length <= qp->mtu && (w->inline_data != NULL ||
			(w->num_sge <= 1 && !tp_tx_zc_wanted(qp->queue,
			qp->tmpl.ip_ver, (uint32_t)w->length)));
	/* a READ or an atomic: a credit and a place in the window */
	return (f & TP_WRF_RD_ATOMIC) && !(f & TP_WRF_LOCAL) &&
		qp->rd_atomic_out < (qp->max_rd_atomic ? qp->max_rd_atomic :
			1u) && qp->rd_in_flight < qp->rd_cwnd;
}

/* What send_one does once a small request's frame is built. */
static inline __attribute__((always_inline)) void
small_sent(struct droce_qp *qp, struct tp_swqe *w, uint32_t npsn)
{
	struct droce_tp_queue *q = qp->queue;

	qp->noack_pkts = 0;
	w->first_psn = qp->psn;
	w->npsn = npsn;
	w->state = TP_WQE_SENT;
	if (qp->timeout) {
		if (qp->ack_deadline == 0) {
			qp->ack_deadline = q->now + tp_rto_ns(qp);
			qp->retry_mark = q->now;
		}
		tp_rto_sent(qp, qp->psn, q->now);
	}
	qp->psn = droce_psn_add(qp->psn, npsn);
	if (droce_psn_diff(qp->psn, qp->psn_hw) > 0)
		qp->psn_hw = qp->psn;
	qp->sq.cur++;
}

/* The frame of p (its BTH and extension fields set) with w's payload
 * into buf, handed to the queue: 0, or -1 a local protection error. */
static inline __attribute__((always_inline)) int
small_out(struct droce_qp *qp, const struct tp_swqe *w, struct droce_pkt *p,
		struct droce_txbuf *b, uint8_t *buf)
{
	uint32_t plen = p->payload_len;
	int hlen = tp_build_hdr(qp, p, buf);

	if (hlen < 0)
		return -1;
	if (plen && w->inline_data != NULL)
		memcpy(buf + hlen, w->inline_data, plen);
	else if (plen && tp_sge_copy_out(qp->dev, qp->pd, w->sge, w->num_sge,
			0, buf + hlen, plen) != 0)
		return -1;
	tp_tx_done(qp, b, tp_finish(p, buf, (uint32_t)hlen));
	return 0;
}

/* A one-packet SEND or WRITE: 1 sent, 0 no buffer, -1 a local
 * protection error. */
static int
send_small(struct droce_qp *qp, struct tp_swqe *w)
{
	uint32_t plen = (uint32_t)w->length;
	struct droce_txbuf *b;
	struct droce_pkt p;
	uint8_t *buf;

	buf = tp_tx_get(qp->queue, DROCE_MAX_HDR_LEN + qp->mtu + 8, &b);
	if (buf == NULL)
		return 0;
	p.opcode = (uint8_t)(tp_wr_opcode_info[w->opcode].pkt[TP_SEG_ONLY] +
		DROCE_TRANSPORT_RC);
	p.se = (w->flags & IBV_SEND_SOLICITED) && (w->wr_flags & TP_WRF_RWR);
	p.ackreq = 1;	/* it ends its message */
	p.dqpn = qp->dest_qpn;
	p.psn = qp->psn;
	if (w->wr_flags & TP_WRF_WRITE) {
		p.reth_va = w->remote_addr;
		p.reth_rkey = w->rkey;
		p.reth_len = plen;
	}
	p.imm_data = w->imm_or_inv;
	p.ieth_rkey = w->imm_or_inv;
	p.payload_len = plen;
	if (small_out(qp, w, &p, b, buf) != 0)
		return -1;
	small_sent(qp, w, 1);
	return 1;
}

/* A READ or an atomic: the same, and its credit taken. */
static int
send_small_rd(struct droce_qp *qp, struct tp_swqe *w)
{
	struct droce_txbuf *b;
	struct droce_pkt p;
	uint32_t npsn = 1;
	uint8_t *buf;
	int hlen;

	/* its SGEs are written later: checked now */
	if (w->num_sge && tp_sge_check(qp->dev, qp->pd, w->sge, w->num_sge,
			IBV_ACCESS_LOCAL_WRITE) != 0)
		return -1;
	buf = tp_tx_get(qp->queue, DROCE_MAX_HDR_LEN + qp->mtu + 8, &b);
	if (buf == NULL)
		return 0;
	p.opcode = (uint8_t)(tp_wr_opcode_info[w->opcode].pkt[TP_SEG_ONLY] +
		DROCE_TRANSPORT_RC);
	p.se = 0;
	p.ackreq = 1;
	p.dqpn = qp->dest_qpn;
	p.psn = qp->psn;
	if (w->wr_flags & TP_WRF_READ) {
		p.reth_va = w->remote_addr;
		p.reth_rkey = w->rkey;
		p.reth_len = (uint32_t)w->length;
		npsn = tp_msg_npsn(qp, w->length);
	} else {
		tp_atomic_eth(&p, w);
	}
	p.payload_len = 0;
	hlen = tp_build_hdr(qp, &p, buf);
	if (hlen < 0)
		return -1;
	tp_tx_done(qp, b, tp_finish(&p, buf, (uint32_t)hlen));
	small_sent(qp, w, npsn);
	tp_read_start(qp, w);
	w->rd_counted = 1;
	qp->rd_atomic_out++;
	w->rd_inflight = 1;
	qp->rd_in_flight++;
	return 1;
}

int
tp_req_small(struct droce_qp *qp, int *failed)
{
	int sent = 0, rc;

	while (qp->sq.cur != qp->sq.head && tp_tx_room(qp->queue)) {
		struct tp_swqe *w = tp_sq_wqe(qp, qp->sq.cur);

		if (!small_wqe(qp, w) || droce_psn_diff(qp->psn, qp->una) >=
				TP_MAX_UNACKED_PSNS)
			break;
		rc = (w->wr_flags & TP_WRF_PAYLOAD) ?
			send_small(qp, w) : send_small_rd(qp, w);
		if (rc == 0)
			break;
		if (rc < 0) {
			*failed = 1;
			break;
		}
		sent++;
	}
	return sent;
}

/* A UD SEND the small path takes: one packet whose payload is copied. */
static inline int
small_wqe_ud(const struct droce_qp *qp, const struct tp_swqe *w)
{
	return w->state == TP_WQE_POSTED && qp->cur_off == 0 &&
		(w->wr_flags & (TP_WRF_PAYLOAD | TP_WRF_LOCAL)) ==
		TP_WRF_PAYLOAD && w->length <= qp->mtu &&
		(w->inline_data != NULL || (w->num_sge <= 1 &&
		!tp_tx_zc_wanted(qp->queue, qp->tmpl.ip_ver,
		(uint32_t)w->length)));
}

/* A UD SEND to its WR's address (the QP's header template made for it
 * already): 1 sent and completed, 0 no buffer, -1 a local protection
 * error. */
static int
send_small_ud(struct droce_qp *qp, struct tp_swqe *w)
{
	uint32_t plen = (uint32_t)w->length;
	struct droce_txbuf *b;
	struct droce_pkt p;
	uint8_t *buf;

	buf = tp_tx_get(qp->queue, DROCE_MAX_HDR_LEN + qp->mtu + 8, &b);
	if (buf == NULL)
		return 0;
	p.opcode = (uint8_t)(tp_wr_opcode_info[w->opcode].pkt[TP_SEG_ONLY] +
		DROCE_TRANSPORT_UD);
	p.se = (w->flags & IBV_SEND_SOLICITED) && (w->wr_flags & TP_WRF_RWR);
	p.ackreq = 0;
	p.dqpn = w->remote_qpn;
	p.psn = qp->psn;
	/* IBTA C10-15: a controlled Q_Key takes the QP's */
	p.deth_qkey = (w->remote_qkey & 0x80000000u) ? qp->qkey :
		w->remote_qkey;
	p.deth_sqpn = qp->qpn;
	p.imm_data = w->imm_or_inv;
	p.payload_len = plen;
	if (small_out(qp, w, &p, b, buf) != 0)
		return -1;
	small_sent(qp, w, 1);	/* a UD QP has no timer */
	tp_wqe_done(qp, w, IBV_WC_SUCCESS);
	return 1;
}

int
tp_req_small_ud(struct droce_qp *qp, int *failed)
{
	int sent = 0, rc;

	while (qp->sq.cur != qp->sq.head && tp_tx_room(qp->queue)) {
		struct tp_swqe *w = tp_sq_wqe(qp, qp->sq.cur);

		/* the template first: whether the frame may go by reference
		 * depends on its IP version */
		if (w->state == TP_WQE_POSTED)
			tp_ud_template(qp, &w->av);
		if (!small_wqe_ud(qp, w))
			break;
		rc = send_small_ud(qp, w);
		if (rc == 0)
			break;
		if (rc < 0) {
			*failed = 1;
			break;
		}
		sent++;
	}
	return sent;
}
