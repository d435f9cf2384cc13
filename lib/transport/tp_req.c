/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * Requester: turns send WQEs into request packets (segmented by path MTU,
 * First/Middle/Last/Only), assigns PSNs, keeps a bounded window of
 * unacknowledged PSNs, honours READ/atomic credits and FENCE, and runs the
 * retransmission (local ACK timeout) and RNR timers. Retransmission is
 * go-back-N: rewind to the WQE holding the PSN and send again from there.
 * Completion belongs to the completer (tp_comp.c), as in rxe.
 */

#include <string.h>

#include "tp_internal.h"
#include "tp_raw.h"

/*
 * Go back to psn: find the WQE that holds it and resend from there. The
 * READ/atomic credits are recounted from what stays outstanding.
 */
void
tp_req_rewind(struct droce_qp *qp, uint32_t psn)
{
	uint32_t i;

	qp->st.rewinds++;
	tp_rto_resend(qp);

	for (i = qp->sq.tail; i != qp->sq.head; i++) {
		struct tp_swqe *w = tp_sq_wqe(qp, i);
		int32_t d;

		if (w->state == TP_WQE_POSTED) {
			/* psn is past everything sent: continue from here */
			qp->sq.cur = i;
			qp->cur_off = 0;
			qp->psn = psn;
			break;
		}
		if (w->npsn == 0 || w->state == TP_WQE_DONE)
			continue;
		d = droce_psn_diff(psn, w->first_psn);
		if (d < 0 || (uint32_t)d >= w->npsn)
			continue;
		qp->sq.cur = i;
		if (w->wr_flags & TP_WRF_READ) {
			/* ask again for what has not arrived */
			qp->cur_off = w->read_done;
			qp->psn = droce_psn_add(w->first_psn,
				(uint32_t)(w->read_done / qp->mtu));
		} else if (w->wr_flags &
				(TP_WRF_ATOMIC | TP_WRF_EMPTY_RESP)) {
			qp->cur_off = 0;
			qp->psn = w->first_psn;
		} else {
			qp->cur_off = (uint64_t)d * qp->mtu;
			qp->psn = psn;
		}
		break;
	}
	if (i == qp->sq.head) {
		/* nothing sent is outstanding: the next WQE starts at psn */
		qp->sq.cur = qp->sq.head;
		qp->cur_off = 0;
		qp->psn = psn;
	}
	for (i = qp->sq.cur; i != qp->sq.head; i++) {
		struct tp_swqe *w = tp_sq_wqe(qp, i);

		if (w->rd_inflight) {	/* to be asked again */
			w->rd_inflight = 0;
			qp->rd_in_flight--;
		}
		tp_read_forget(qp, w);
		if (w->state != TP_WQE_DONE && i != qp->sq.cur)
			w->state = w->state == TP_WQE_POSTED ? TP_WQE_POSTED :
				TP_WQE_SENT;
	}
	qp->noack_pkts = 0;
}

/*
 * A READ response or an acknowledgement went missing. Each rewind asks
 * again for every READ from the missing one on, and each of those may
 * answer with many packets, so a deep READ window under loss re-requests
 * far more than it lost and buries a slow responder in duplicate requests
 * (doc/interop.md). Halve the READ/atomic window on each loss, open it by
 * one per answered READ (as TCP's congestion window, to the QP's
 * max_rd_atomic).
 */
void
tp_req_loss(struct droce_qp *qp)
{
	qp->rd_cwnd = qp->rd_cwnd > 2 ? qp->rd_cwnd / 2 : 1;
}

/* Local WQEs (BIND_MW, LOCAL_INV) execute when they reach the wire order. */
static void
exec_local(struct droce_qp *qp, struct tp_swqe *w)
{
	int rc;

	if (w->opcode == IBV_WR_BIND_MW)
		rc = tp_bind_mw(qp, w->mw, &w->bind, w->bind_rkey);
	else
		rc = tp_invalidate_rkey(qp, w->imm_or_inv, 0);
	w->first_psn = qp->psn;
	w->npsn = 0;
	tp_wqe_done(qp, w, rc == 0 ? IBV_WC_SUCCESS : rc == -EACCES ||
		rc == -EPERM ? IBV_WC_MW_BIND_ERR : IBV_WC_LOC_QP_OP_ERR);
	if (w->opcode == IBV_WR_BIND_MW && rc != 0)
		w->status = IBV_WC_MW_BIND_ERR;
}

/* Copy payload of w at off into dst; -1 on a local protection error. */
static inline __attribute__((always_inline)) int
gather(struct droce_qp *qp, struct tp_swqe *w, uint64_t off, uint8_t *dst,
		uint32_t len)
{
	if (len == 0)
		return 0;
	if (w->inline_data) {
		memcpy(dst, w->inline_data + off, len);
		return 0;
	}
	return tp_sge_copy_out(qp->dev, qp->pd, w->sge, w->num_sge, off, dst,
		len) ? -1 : 0;
}

/*
 * The payload at off of w sent by reference to its MRs where the queue
 * does zero-copy: 1 if the frame is done, 0 to copy it, -1 on a local
 * protection error.
 */
static inline __attribute__((always_inline)) int
zc_payload(struct droce_qp *qp, struct tp_swqe *w, uint64_t off,
		struct droce_txbuf *b, uint8_t *buf, uint32_t hlen,
		uint32_t plen, uint8_t ip_ver)
{
	int n;

	if (w->inline_data || !tp_tx_zc_wanted(qp->queue, ip_ver, plen))
		return 0;
	n = tp_sge_spans(qp->dev, qp->pd, w->sge, w->num_sge, off, plen,
		b->span, DROCE_TX_MAX_SPANS);
	if (n <= 0)
		return n == 0 ? 0 : -1;
	return tp_tx_spans_done(qp, b, buf, hlen, (uint32_t)n,
		plen) == 0;
}

/*
 * The fields of w's request packet at byte off with PSN psn (opcode,
 * extension headers, AckReq) into p, its payload's length, its PSNs and
 * whether it ends the message.
 */
static inline __attribute__((always_inline)) void
req_fields(struct droce_qp *qp, struct tp_swqe *w, uint64_t off, uint32_t psn,
		uint64_t rd_len, int resend, struct droce_pkt *p,
		uint32_t *plen, uint32_t *npsn_pkt, int *last)
{
	const struct tp_wr_opcode_info *wi = &tp_wr_opcode_info[w->opcode];
	unsigned int f = w->wr_flags;
	int first;

	*plen = 0;
	*npsn_pkt = 1;
	/* the headers come from qp->htmpl (UD: made for the WR's address):
	 * set what the BTH and extension headers need, not a whole packet */
	if (qp->type == IBV_QPT_UD)
		tp_ud_template(qp, &w->av);
	p->se = 0;
	p->ackreq = 0;
	p->dqpn = qp->type == IBV_QPT_UD ? w->remote_qpn : qp->dest_qpn;
	p->psn = psn;
	if (f & TP_WRF_PAYLOAD) {	/* SEND, WRITE: the common case first */
		first = off == 0;
		*plen = w->length - off > qp->mtu ? qp->mtu :
			(uint32_t)(w->length - off);
		*last = off + *plen >= w->length;
		if (qp->type == IBV_QPT_UD) {
			p->opcode = (uint8_t)(wi->pkt[TP_SEG_ONLY] +
				DROCE_TRANSPORT_UD);
			/* IBTA C10-15: a controlled Q_Key takes the QP's */
			p->deth_qkey = (w->remote_qkey & 0x80000000u) ?
				qp->qkey : w->remote_qkey;
			p->deth_sqpn = qp->qpn;
		} else {
			p->opcode = (uint8_t)(wi->pkt[first | *last << 1] +
				(qp->type == IBV_QPT_UC ? DROCE_TRANSPORT_UC :
				DROCE_TRANSPORT_RC));
		}
		if (first && (f & TP_WRF_WRITE)) {
			p->reth_va = w->remote_addr;
			p->reth_rkey = w->rkey;
			p->reth_len = (uint32_t)w->length;
		}
		if (*last) {
			p->imm_data = w->imm_or_inv;
			p->ieth_rkey = w->imm_or_inv;
			/* only a message the peer sees complete can ask for
			 * a solicited event */
			if ((w->flags & IBV_SEND_SOLICITED) &&
					(f & TP_WRF_RWR))
				p->se = 1;
		}
		/* paced (tp_cc.c), each packet asks: the next may leave
		 * much later, and an ACK held for it would stretch the
		 * round trip measured (and the timers) by the pacing */
		if (qp->type == IBV_QPT_RC)
			p->ackreq = *last || resend || qp->cc.limited ||
				++qp->noack_pkts >= TP_MAX_PKT_PER_ACK;
	} else if (f & TP_WRF_READ) {
		p->opcode = wi->pkt[TP_SEG_ONLY];
		p->reth_va = w->remote_addr + off;
		p->reth_rkey = w->rkey;
		p->reth_len = (uint32_t)rd_len;
		*npsn_pkt = tp_msg_npsn(qp, rd_len);
		p->ackreq = 1;
		*last = 1;
	} else if (f & TP_WRF_ATOMIC_WRITE) {
		/* one packet: RETH and the word, gathered below */
		p->opcode = wi->pkt[TP_SEG_ONLY];
		p->reth_va = w->remote_addr;
		p->reth_rkey = w->rkey;
		p->reth_len = DROCE_ATOMIC_WRITE_LEN;
		*plen = DROCE_ATOMIC_WRITE_LEN;
		p->ackreq = 1;
		*last = 1;
	} else if (f & TP_WRF_FLUSH) {
		/* one packet, no payload: what to flush, and how far */
		p->opcode = wi->pkt[TP_SEG_ONLY];
		p->feth_plt = (uint8_t)(w->swap & 0xff);
		p->feth_sel = (uint8_t)(w->swap >> 8);
		p->reth_va = w->remote_addr;
		p->reth_rkey = w->rkey;
		p->reth_len = (uint32_t)w->length;
		p->ackreq = 1;
		*last = 1;
	} else {	/* atomic */
		p->opcode = wi->pkt[TP_SEG_ONLY];
		tp_atomic_eth(p, w);
		p->ackreq = 1;
		*last = 1;
	}
	if (p->ackreq && !resend)
		qp->noack_pkts = 0;
	if (qp->xrc) {	/* RC's opcode over XRC, and the target's SRQ */
		p->opcode |= DROCE_TRANSPORT_XRC;
		p->xrceth_srqn = w->remote_qpn;
	}
}

/*
 * The request packet of w at byte off with PSN psn; a READ asks for rd_len
 * bytes from off; resend: a packet sent before (it asks for an ACK). 1
 * sent (*plen, *npsn: its payload and PSNs, *last: it ends the message),
 * 0 no buffer, -1 a local error.
 */
static inline __attribute__((always_inline)) int
tx_req(struct droce_qp *qp, struct tp_swqe *w, uint64_t off, uint32_t psn,
		uint64_t rd_len, int resend, uint32_t *plen_out,
		uint32_t *npsn_out, int *last_out)
{
	unsigned int f = w->wr_flags;
	struct droce_tp_queue *q = qp->queue;
	struct droce_txbuf *b;
	struct droce_pkt p;
	uint32_t plen, npsn_pkt, cap;
	uint8_t *buf;
	int hlen, rc;
	int last;

	cap = DROCE_MAX_HDR_LEN + qp->mtu + 8;
	buf = tp_tx_get(q, cap, &b);
	if (buf == NULL)
		return 0;
	req_fields(qp, w, off, psn, rd_len, resend, &p, &plen, &npsn_pkt,
		&last);
	p.payload_len = plen;
	hlen = tp_build_hdr(qp, &p, buf);
	if (hlen < 0)
		return -1;
	rc = zc_payload(qp, w, off, b, buf, (uint32_t)hlen, plen,
		qp->tmpl.ip_ver);
	if (rc < 0)
		return -1;
	if (rc == 0) {
		uint32_t flen;

		if (gather(qp, w, off, buf + hlen, plen) != 0)
			return -1;
		flen = tp_finish(&p, buf, (uint32_t)hlen);
		/* Linux rxe drops a FLUSH with the spec's ICRC */
		if ((f & TP_WRF_FLUSH) && qp->dev->conf.rxe_flush_icrc)
			droce_wire_set_icrc_rxe_flush(buf, flen);
		tp_tx_done(qp, b, flen);
	}

	*plen_out = plen;
	*npsn_out = npsn_pkt;
	*last_out = last;
	return 1;
}

int
tp_req_resend(struct droce_qp *qp, struct tp_swqe *w, uint64_t off,
		uint32_t psn, uint64_t rd_len)
{
	uint32_t plen, npsn;
	int last, rc;

	rc = tx_req(qp, w, off, psn, rd_len, 1, &plen, &npsn, &last);
	if (rc <= 0)
		return rc;
	qp->st.retransmits++;
	qp->st.resent_pkts++;
	/* Karn: an answer now may be to either sending */
	tp_rto_resend(qp);
	if (qp->reask_deadline == 0)
		qp->reask_deadline = qp->queue->now + tp_rto_reask_ns(qp);
	if (qp->ack_deadline == 0 && qp->timeout) {
		qp->ack_deadline = qp->queue->now + tp_rto_ns(qp);
		qp->retry_mark = qp->queue->now;
	}
	return 1;
}

/* Send one packet of the WQE at sq.cur. 1 sent, 0 stalled, -1 WQE failed. */
static int
send_one(struct droce_qp *qp, struct tp_swqe *w)
{
	unsigned int f = w->wr_flags;
	struct droce_tp_queue *q = qp->queue;
	uint32_t plen, npsn_pkt;
	uint64_t off = qp->cur_off;
	int last, rc;

	rc = tx_req(qp, w, off, qp->psn, (f & TP_WRF_READ) ? w->length - off : 0,
		0, &plen, &npsn_pkt, &last);
	if (rc <= 0)
		return rc;
	if (w->state == TP_WQE_POSTED) {
		w->first_psn = qp->psn;
		/* a READ takes a PSN per response; an atomic and a UD
		 * message take one */
		w->npsn = (f & (TP_WRF_ATOMIC | TP_WRF_EMPTY_RESP)) ||
			(qp->type == IBV_QPT_UD && !(f & TP_WRF_READ)) ?
			1 : tp_msg_npsn(qp, w->length);
		w->state = TP_WQE_SENDING;
		if (f & TP_WRF_CREDIT)
			tp_read_start(qp, w);
	}
	/* a READ or atomic holds a credit until it completes, and a place in
	 * the window while its request is out */
	if (f & TP_WRF_CREDIT) {
		if (!w->rd_counted) {
			w->rd_counted = 1;
			qp->rd_atomic_out++;
		}
		if (!w->rd_inflight) {
			w->rd_inflight = 1;
			qp->rd_in_flight++;
		}
	}
	if (qp->type == IBV_QPT_RC && qp->timeout) {
		if (qp->ack_deadline == 0) {
			qp->ack_deadline = q->now + tp_rto_ns(qp);
			qp->retry_mark = q->now;
		}
		tp_rto_sent(qp, qp->psn, q->now);
	}
	if (qp->sr && droce_psn_diff(qp->psn, qp->psn_hw) >= 0)
		tp_sr_sent(qp, qp->psn);
	qp->psn = droce_psn_add(qp->psn, npsn_pkt);
	if (droce_psn_diff(qp->psn, qp->psn_hw) > 0)
		qp->psn_hw = qp->psn;
	if (last) {
		w->state = TP_WQE_SENT;
		qp->cur_off = 0;
		qp->sq.cur++;
		/* UC and UD complete once sent */
		if (qp->type != IBV_QPT_RC)
			tp_wqe_done(qp, w, IBV_WC_SUCCESS);
	} else {
		qp->cur_off = off + plen;
	}
	return 1;
}

/* The WQE at sq.cur cannot be sent (local protection): complete it so. */
static void
local_fail(struct droce_qp *qp, struct tp_swqe *w)
{
	if (w->state == TP_WQE_POSTED) {
		w->first_psn = qp->psn;
		w->npsn = 0;
		w->state = TP_WQE_SENDING;
	}
	tp_wqe_done(qp, w, IBV_WC_LOC_PROT_ERR);
	qp->sq.cur++;
	qp->cur_off = 0;
	tp_comp_retire(qp);
}

int
tp_req_progress(struct droce_qp *qp)
{
	int sent = 0, rc;

	if (qp->type == IBV_QPT_RAW_PACKET)
		return tp_raw_progress(qp);	/* no IB transport */
	if (qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_SQD)
		return 0;
	if (qp->rnr_deadline || tp_cc_wait(qp))
		return 0;
	/* what is asked again alone first: it holds the window */
	if (qp->sr_nneed)
		sent += tp_sr_resend(qp);
	if (qp->rr_pending) {
		sent += tp_read_resend(qp);
		if (qp->state == IBV_QPS_ERR)
			return sent;
	}
	if (qp->sq.cur != qp->sq.head && tp_req_small_qp(qp)) {
		int failed = 0;

		sent += tp_req_small(qp, &failed);
		if (failed) {
			local_fail(qp, tp_sq_wqe(qp, qp->sq.cur));
			return sent;
		}
	} else if (qp->sq.cur != qp->sq.head && tp_req_small_ud_qp(qp)) {
		int failed = 0;

		sent += tp_req_small_ud(qp, &failed);
		if (failed) {
			local_fail(qp, tp_sq_wqe(qp, qp->sq.cur));
			return sent;
		}
	}
	while (qp->sq.cur != qp->sq.head && tp_tx_room(qp->queue) &&
			!tp_cc_wait(qp)) {
		struct tp_swqe *w = tp_sq_wqe(qp, qp->sq.cur);

		/* SQD: finish the message in progress, start no new one */
		if (qp->state == IBV_QPS_SQD && qp->cur_off == 0 &&
				w->state == TP_WQE_POSTED)
			break;
		if (w->state == TP_WQE_DONE) {	/* completed during a rewind */
			if (w->npsn)
				qp->psn = droce_psn_add(w->first_psn, w->npsn);
			qp->sq.cur++;
			qp->cur_off = 0;
			continue;
		}
		if (w->wr_flags & TP_WRF_LOCAL) {
			/* ordered after everything before it */
			if (qp->sq.tail != qp->sq.cur)
				break;
			exec_local(qp, w);
			qp->sq.cur++;
			tp_comp_retire(qp);
			if (qp->state == IBV_QPS_ERR)
				return sent;
			continue;
		}
		if (qp->type == IBV_QPT_RC) {
			if ((w->flags & IBV_SEND_FENCE) && qp->cur_off == 0 &&
					w->state == TP_WQE_POSTED &&
					qp->rd_atomic_out)
				break;
			if ((w->wr_flags & TP_WRF_CREDIT) &&
					((!w->rd_counted &&
					qp->rd_atomic_out >= (qp->max_rd_atomic ?
						qp->max_rd_atomic : 1u)) ||
					(!w->rd_inflight &&
					qp->rd_in_flight >= qp->rd_cwnd)))
				break;
			if (droce_psn_diff(qp->psn, qp->una) >= (qp->sr ?
					(int32_t)qp->sr_win : TP_MAX_UNACKED_PSNS))
				break;
			if (qp->dev->conf.cc == DROCE_CC_DELAY &&
					tp_cc_window_full(qp))
				break;
		}
		/*
		 * Local checks once, before the first packet, for a message
		 * of several packets (none may leave if a later one would
		 * fail) and for READ and atomics (their SGEs are written
		 * later). A one-packet SEND or WRITE is checked by its own
		 * gather, which fails before anything leaves.
		 */
		if (w->state == TP_WQE_POSTED && qp->cur_off == 0 &&
				w->inline_data == NULL && w->num_sge &&
				(w->length > qp->mtu ||
					(w->wr_flags & TP_WRF_RD_ATOMIC)) &&
				tp_sge_check(qp->dev, qp->pd, w->sge, w->num_sge,
					(w->wr_flags & TP_WRF_RD_ATOMIC) ?
					IBV_ACCESS_LOCAL_WRITE : 0) != 0) {
			local_fail(qp, w);
			return sent;
		}
		rc = send_one(qp, w);
		if (rc == 0)
			break;
		if (rc < 0) {
			local_fail(qp, w);
			return sent;
		}
		sent++;
	}
	if (qp->type != IBV_QPT_RC)
		tp_comp_retire(qp);
	/* selective repeat with nothing more to send: a probe a round trip
	 * from now unless the acknowledgements move */
	if (qp->sr && droce_psn_diff(qp->una, qp->psn_hw) < 0) {
		uint64_t t = qp->queue->now + tp_rto_rtt_ns(qp);

		/* (sooner, once the first round trip is measured) */
		if (qp->probe_deadline == 0 || qp->probe_deadline > t) {
			qp->probe_deadline = t;
			qp->probe_una = qp->una;
		}
	}
	return sent;
}

/*
 * Selective repeat, nothing acknowledged for a round trip (a tail lost,
 * or the ACK of it: nothing later shows it): the last PSN sent goes
 * again asking for an ACK; the SACK it brings shows the rest.
 */
static void
tp_req_probe(struct droce_qp *qp)
{
	if (qp->sr && qp->una == qp->probe_una &&
			droce_psn_diff(qp->una, qp->psn_hw) < 0)
		tp_sr_need(qp, droce_psn_add(qp->psn_hw, DROCE_PSN_MASK), 1);
}

/*
 * A READ's hole or an atomic asked again whose answer has not come in
 * time (tp_read_reask_ns) is asked once more now, not left to the timer
 * (nothing else may arrive to show it lost); the next one due sets the
 * next look.
 */
static void
tp_req_reask(struct droce_qp *qp, uint64_t now)
{
	uint64_t next = 0, due;
	uint32_t i;

	for (i = qp->sq.tail; i != qp->sq.cur; i++) {
		struct tp_swqe *w = tp_sq_wqe(qp, i);

		if (!w->rr_at || w->state == TP_WQE_DONE)
			continue;
		due = w->rr_at + tp_read_reask_ns(qp, w);
		if (now >= due)
			tp_read_hole(qp, w);
		else if (next == 0 || due < next)
			next = due;
	}
	if (next && (qp->reask_deadline == 0 || next < qp->reask_deadline))
		qp->reask_deadline = next;
}

/*
 * Go-back-N's timer with a READ or atomic at una that the responder has
 * executed (its responses began, or what follows it was acknowledged):
 * what is missing is only its answer, so the timer asks for its first
 * hole alone, as a response past it would have. A rewind would ask for
 * the rest of the READ and every request after it again, and a slow
 * responder (rxe under emulation: ~0.1-0.2 s per 1,024 responses)
 * answers each copy in full, falling further behind with every timeout
 * until the retry budget runs out. 1 if so.
 */
static int
timeout_asks_again(struct droce_qp *qp)
{
	struct tp_swqe *w = tp_wqe_of_psn(qp, qp->una);

	if (w == NULL || !(w->wr_flags & TP_WRF_CREDIT) ||
			w->state != TP_WQE_SENT || !tp_read_tracked(qp, w) ||
			(w->rd_got == 0 &&
			droce_psn_diff(qp->acked, w->first_psn) <= 0))
		return 0;
	tp_read_ask(qp, w);	/* due now, whatever its backoff */
	return 1;
}

void
tp_req_timers(struct droce_qp *qp, uint64_t now)
{
	if (qp->type != IBV_QPT_RC ||
			(qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_SQD))
		return;
	if (qp->rnr_deadline && now >= qp->rnr_deadline)
		qp->rnr_deadline = 0;
	if (qp->probe_deadline && now >= qp->probe_deadline) {
		qp->probe_deadline = 0;
		tp_req_probe(qp);
	}
	if (qp->reask_deadline && now >= qp->reask_deadline) {
		qp->reask_deadline = 0;
		tp_req_reask(qp, now);
	}
	if (qp->ack_deadline && now >= qp->ack_deadline) {
		if (qp->una == qp->psn_hw && qp->sq.tail == qp->sq.cur) {
			qp->ack_deadline = 0;
			return;
		}
		qp->st.timeouts++;
		tp_cc_timeout(qp);
		/* an early timeout (tp_rto.c) resends without charging
		 * the retry budget */
		if (tp_rto_expired(qp, now)) {
			qp->st.timeouts_charged++;
			if (qp->retries_left == 0) {
				tp_comp_error(qp, IBV_WC_RETRY_EXC_ERR);
				return;
			}
			qp->retries_left--;
		}
		if (qp->sr) {
			/* the oldest alone, and what no SACK spoke of */
			tp_sr_timeout(qp);
		} else if (!timeout_asks_again(qp)) {
			qp->st.retransmits++;
			tp_req_loss(qp);
			tp_req_rewind(qp, qp->una);
		}
		qp->ack_deadline = now + tp_rto_ns(qp);
	}
}
