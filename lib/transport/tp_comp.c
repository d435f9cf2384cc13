/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * Completer: acknowledgements and responses coming back to the requester.
 * ACKs are cumulative; a NAK names the PSN it is about; READ responses and
 * atomic ACKs carry data and implicitly acknowledge everything before them
 * (IBTA 9.7.5.1). WQEs are marked done here and completed in order.
 */

#include <string.h>

#include "tp_internal.h"

/* Complete, in order, the WQEs at the tail that are done. */
void
tp_comp_retire(struct droce_qp *qp)
{
	struct ibv_wc *wc;

	while (qp->sq.tail != qp->sq.head) {
		struct tp_swqe *w = tp_sq_wqe(qp, qp->sq.tail);

		if (w->state != TP_WQE_DONE)
			break;
		if ((w->signaled || w->status != IBV_WC_SUCCESS) &&
				(wc = tp_cq_slot(qp->scq)) != NULL) {
			wc->wr_id = w->wr_id;
			wc->status = w->status;
			wc->opcode = tp_wr_opcode_info[w->opcode].wc_opcode;
			wc->qp_num = qp->qpn;
			if (w->wr_flags & TP_WRF_CREDIT)
				wc->byte_len = (uint32_t)w->length;
			tp_cq_commit(qp->scq, 0);
		}
		/*
		 * A READ/atomic credit comes back in order: a responder
		 * keeps its last max_dest_rd_atomic requests (a ring, as
		 * rxe's), and one done early behind a READ still missing a
		 * response must not let a new request push that READ's
		 * resource out before its hole is asked again (tp_read.c).
		 */
		if (w->rd_counted) {
			w->rd_counted = 0;
			qp->rd_atomic_out--;
		}
		qp->sq.tail++;
		if ((int32_t)(qp->sq.cur - qp->sq.tail) < 0) {
			/* completed ahead of a rewound cur: resume at una */
			qp->sq.cur = qp->sq.tail;
			qp->cur_off = 0;
			tp_req_rewind(qp, qp->una);
		}
		if (w->status != IBV_WC_SUCCESS) {
			tp_qp_to_error(qp);
			return;
		}
	}
	if (qp->state == IBV_QPS_SQD && qp->sq_draining &&
			qp->sq.tail == qp->sq.cur) {
		qp->sq_draining = 0;
		tp_async(qp->dev, IBV_EVENT_SQ_DRAINED, qp);
	}
}

/*
 * A fatal error for the requester: w (if any) completes with st after
 * everything before it, and the QP goes to ERR, which flushes the rest.
 */
static void
fail_wqe(struct droce_qp *qp, struct tp_swqe *w, enum ibv_wc_status st)
{
	if (w != NULL)
		tp_wqe_done(qp, w, st);
	tp_comp_retire(qp);
	tp_qp_to_error(qp);
}

void
tp_comp_error(struct droce_qp *qp, enum ibv_wc_status st)
{
	fail_wqe(qp, qp->sq.tail != qp->sq.head ?
		tp_sq_wqe(qp, qp->sq.tail) : NULL, st);
}

/* An ACK or response said every request before psn was executed. */
static inline void
raise_acked(struct droce_qp *qp, uint32_t psn)
{
	if (droce_psn_diff(psn, qp->acked) > 0)
		qp->acked = psn;
}

/* Forward progress: reset the retry budget and restart the timer. */
static void
progress_made(struct droce_qp *qp, uint32_t new_una)
{
	if (droce_psn_diff(new_una, qp->una) > 0) {
		qp->una = new_una;
		/* forward progress renews the retry budgets */
		qp->retries_left = qp->retry_cnt;
		qp->rnr_left = qp->rnr_retry;
		tp_rto_progress(qp, new_una, qp->queue->now);
	}
	/* After a rewind the peer may acknowledge past where we resend:
	 * skip ahead, keeping PSN and data offset together. */
	if (droce_psn_diff(qp->psn, qp->una) < 0)
		tp_req_rewind(qp, qp->una);
	qp->ack_deadline = (qp->una != qp->psn_hw || qp->sq.tail != qp->sq.cur) &&
		qp->timeout ? qp->queue->now + tp_rto_ns(qp) : 0;
}

/*
 * Acknowledge every PSN before `psn` (exclusive). SEND/WRITE WQEs whose
 * packets all lie before it are done. A READ or atomic before it whose
 * answer has not all come lost some of it: it is asked again alone
 * (tp_read.c), and una may move up to its first missing answer only,
 * *una_to (psn when nothing is missing). A READ too long to place by PSN
 * makes it return 1: the caller rewinds to *una_to.
 */
static int
ack_before(struct droce_qp *qp, uint32_t psn, uint32_t *una_to)
{
	int held = 0;
	uint32_t i;

	/* what any acknowledgement said before still holds */
	raise_acked(qp, psn);
	psn = qp->acked;
	*una_to = psn;
	for (i = qp->sq.tail; i != qp->sq.head; i++) {
		struct tp_swqe *w = tp_sq_wqe(qp, i);
		uint32_t end;

		if (w->state == TP_WQE_POSTED)
			break;
		if (w->state == TP_WQE_DONE)
			continue;
		if (w->npsn == 0)
			break;
		end = droce_psn_add(w->first_psn, w->npsn);
		if (droce_psn_diff(psn, end) < 0) {
			/* not wholly acknowledged; a READ answered in part
			 * is, up to its first missing response */
			if (!held && (w->wr_flags & TP_WRF_READ) &&
					w->state == TP_WQE_SENT &&
					tp_read_tracked(qp, w) &&
					droce_psn_diff(psn, w->first_psn) >= 0 &&
					droce_psn_diff(tp_read_missing(qp, w),
						psn) > 0)
				*una_to = tp_read_missing(qp, w);
			break;
		}
		if (w->state == TP_WQE_SENDING)
			break;
		if (w->wr_flags & TP_WRF_CREDIT) {
			if (!tp_read_tracked(qp, w)) {
				if (held)
					break;
				*una_to = tp_read_missing(qp, w);
				return 1;
			}
			tp_read_hole(qp, w);
			if (!held)
				*una_to = tp_read_missing(qp, w);
			held = 1;
			continue;
		}
		tp_wqe_done(qp, w, IBV_WC_SUCCESS);
	}
	return 0;
}

/*
 * A later response acknowledged everything before rw, the READ too long
 * to place by PSN whose response never came: that much is progress (una
 * moves, or a stale ACK or NAK for an earlier PSN would be taken as new
 * and rewind into WQEs already completed), then ask again from rw.
 */
static void
lost_response(struct droce_qp *qp, uint32_t rw)
{
	progress_made(qp, rw);
	tp_req_loss(qp);
	tp_req_rewind(qp, rw);
	qp->st.retransmits++;
}

/* una to where the acknowledgements so far say, short of any answer still
 * missing (ack_before). */
static void
settle(struct droce_qp *qp)
{
	uint32_t rw;

	if (ack_before(qp, qp->acked, &rw))
		lost_response(qp, rw);
	else
		progress_made(qp, rw);
}


static enum ibv_wc_status
nak_status(uint8_t syndrome)
{
	switch (syndrome) {
	case DROCE_AETH_NAK_INV_REQ:
		return IBV_WC_REM_INV_REQ_ERR;
	case DROCE_AETH_NAK_REM_ACC:
		return IBV_WC_REM_ACCESS_ERR;
	case DROCE_AETH_NAK_REM_OP:
		return IBV_WC_REM_OP_ERR;
	default:
		return IBV_WC_REM_INV_RD_REQ_ERR;
	}
}

static void
on_ack(struct droce_qp *qp, const struct droce_pkt *pkt)
{
	uint8_t syn = pkt->aeth_syndrome;
	uint32_t psn = pkt->psn, rw;

	/* An ACK for a PSN we have not sent is bogus. */
	if (droce_psn_diff(psn, qp->psn_hw) >= 0)
		return;
	switch (DROCE_AETH_TYPE(syn)) {
	case DROCE_AETH_TYPE_ACK:	/* everything up to and including psn */
		qp->st.acks_rx++;
		if (droce_psn_diff(psn, qp->una) < 0) {
			/* old; a SACK that acknowledges nothing new still
			 * says what is held */
			if (qp->sr && pkt->payload_len &&
					droce_psn_add(psn, 1) == qp->una)
				tp_sr_sack_rx(qp, pkt);
			return;
		}
		if (ack_before(qp, droce_psn_add(psn, 1), &rw)) {
			lost_response(qp, rw);
			break;
		}
		progress_made(qp, rw);
		if (qp->sr && pkt->payload_len)
			tp_sr_sack_rx(qp, pkt);
		break;
	case DROCE_AETH_TYPE_RNR:
		qp->st.rnr_nak_rx++;
		/* old, or older than an acknowledgement already had */
		if (droce_psn_diff(psn, qp->una) < 0 ||
				droce_psn_diff(psn, qp->acked) < 0)
			return;
		if (ack_before(qp, psn, &rw)) {
			progress_made(qp, rw);
			tp_req_rewind(qp, rw);
			break;
		}
		progress_made(qp, rw);
		if (qp->rnr_retry != TP_RNR_RETRY_FOREVER) {
			if (qp->rnr_left == 0) {
				fail_wqe(qp, tp_wqe_of_psn(qp, psn),
					IBV_WC_RNR_RETRY_EXC_ERR);
				return;
			}
			qp->rnr_left--;
		}
		tp_req_rewind(qp, psn);
		qp->rnr_deadline = qp->queue->now +
			(uint64_t)droce_rnr_timer_us(DROCE_AETH_VALUE(syn)) *
			1000;
		qp->ack_deadline = 0;
		break;
	case DROCE_AETH_TYPE_NAK:
		if (syn == DROCE_AETH_NAK_PSN_SEQ) {
			qp->st.nak_seq_rx++;
			if (droce_psn_diff(psn, qp->una) < 0 ||
					droce_psn_diff(psn, qp->acked) < 0)
				return;
			/* once per NAK: the same again within a round trip
			 * is the fabric's duplicate (a responder NAKs a gap
			 * once), and going back again would resend it all */
			if (qp->nak_at && psn == qp->nak_psn &&
					qp->queue->now - qp->nak_at <
					tp_rto_reask_ns(qp)) {
				qp->st.dup_rx++;
				return;
			}
			qp->nak_psn = psn;
			qp->nak_at = qp->queue->now ? qp->queue->now : 1;
			/* an answer missing before psn is asked again
			 * alone; psn itself goes back N */
			if (ack_before(qp, psn, &rw))
				psn = rw;
			progress_made(qp, rw);
			if (tp_rto_nak_charges(qp, qp->queue->now)) {
				if (qp->retries_left == 0) {
					fail_wqe(qp, tp_wqe_of_psn(qp, psn),
						IBV_WC_RETRY_EXC_ERR);
					return;
				}
				qp->retries_left--;
			}
			qp->st.retransmits++;
			tp_req_rewind(qp, psn);
			break;
		}
		if (syn == DROCE_AETH_NAK_INV_REQ)
			qp->st.nak_inv_rx++;
		else if (syn == DROCE_AETH_NAK_REM_ACC)
			qp->st.nak_acc_rx++;
		else
			qp->st.nak_op_rx++;
		if (ack_before(qp, psn, &rw) == 0)
			progress_made(qp, rw);
		fail_wqe(qp, tp_wqe_of_psn(qp, psn), nak_status(syn));
		return;
	default:
		return;	/* reserved syndrome: ignore */
	}
	tp_comp_retire(qp);
}

/*
 * The answer to an ATOMIC WRITE or a FLUSH: a READ response ONLY without
 * payload (IBTA 1.5; rxe's responder sends it, acknowledge()). Like a
 * READ's, it acknowledges everything before the request.
 */
static void
on_empty_resp(struct droce_qp *qp, const struct droce_pkt *pkt,
		struct tp_swqe *w)
{
	/* it acknowledges every request before its own */
	raise_acked(qp, w->first_psn);
	if (pkt->opcode != DROCE_OP_RC_READ_RESP_ONLY || pkt->payload_len) {
		settle(qp);
		fail_wqe(qp, w, IBV_WC_BAD_RESP_ERR);
		return;
	}
	tp_wqe_done(qp, w, IBV_WC_SUCCESS);
	raise_acked(qp, droce_psn_add(pkt->psn, 1));
	settle(qp);
	tp_comp_retire(qp);
}

/*
 * The common case of an answer: to the oldest WQE, one PSN long, with
 * nothing acknowledged past it yet. Once it is done, una moves right
 * after it, where settle would find it: the next WQE can hold no answer
 * (that would have raised acked past w) nor anything acknowledged.
 */
static inline int
oldest_alone(struct droce_qp *qp, const struct tp_swqe *w)
{
	return w->npsn == 1 && qp->acked == w->first_psn &&
		tp_sq_wqe(qp, qp->sq.tail) == w;
}

/* A response of READ w, placed where its PSN says. */
static void
read_resp_placed(struct droce_qp *qp, struct tp_swqe *w,
		const struct droce_pkt *pkt)
{
	int rc, alone;

	/* its responses acknowledge every request before the READ */
	raise_acked(qp, w->first_psn);
	alone = oldest_alone(qp, w);
	rc = tp_read_place(qp, w, pkt);
	if (rc == 1 && alone) {
		tp_wqe_done(qp, w, IBV_WC_SUCCESS);
		qp->acked = droce_psn_add(w->first_psn, 1);
		progress_made(qp, qp->acked);
		tp_comp_retire(qp);
		return;
	}
	if (rc < 0) {
		settle(qp);
		fail_wqe(qp, NULL, IBV_WC_SUCCESS);
		return;
	}
	if (rc == 0)
		return;
	if (w->rd_got == w->npsn) {
		tp_wqe_done(qp, w, IBV_WC_SUCCESS);
		raise_acked(qp, droce_psn_add(w->first_psn, w->npsn));
	} else if (w->rd_got > w->read_done / qp->mtu) {
		/* a response after a missing one: ask for the hole */
		tp_read_hole(qp, w);
	} else if (tp_sq_wqe(qp, qp->sq.tail) == w &&
			droce_psn_diff(qp->acked,
				droce_psn_add(w->first_psn, w->npsn)) < 0) {
		/* the oldest WQE answered in order so far: una follows
		 * it (what settle would find) */
		progress_made(qp, tp_read_missing(qp, w));
		return;
	}
	settle(qp);
	tp_comp_retire(qp);
}

static void
on_read_resp(struct droce_qp *qp, const struct droce_pkt *pkt)
{
	const struct droce_opcode_info *oi = &droce_opcode_info[pkt->opcode];
	struct tp_swqe *w = tp_wqe_of_psn(qp, pkt->psn);
	uint32_t expect, rw;

	if (w != NULL && (w->wr_flags & TP_WRF_EMPTY_RESP) &&
			w->state != TP_WQE_DONE) {
		on_empty_resp(qp, pkt, w);
		return;
	}
	if (w == NULL || !(w->wr_flags & TP_WRF_READ) ||
			w->state == TP_WQE_DONE) {
		qp->st.dup_rx++;
		return;
	}
	if (tp_read_tracked(qp, w)) {
		read_resp_placed(qp, w, pkt);
		return;
	}
	expect = droce_psn_add(w->first_psn, (uint32_t)(w->read_done / qp->mtu));
	if (pkt->psn != expect) {
		/* A gap: resend the READ from what is missing, once per gap. */
		if (droce_psn_diff(pkt->psn, expect) > 0 &&
				qp->last_acked_psn != expect) {
			qp->last_acked_psn = expect;
			qp->st.out_of_seq_rx++;
			tp_req_loss(qp);
			tp_req_rewind(qp, expect);
		} else {
			qp->st.dup_rx++;
		}
		return;
	}
	/* Its responses acknowledge everything before the READ. */
	if (ack_before(qp, w->first_psn, &rw)) {
		lost_response(qp, rw);
		return;
	}
	/* First/Middle carry a full MTU; Last/Only the rest. */
	if (((oi->flags & DROCE_OPF_END) == 0 && pkt->payload_len != qp->mtu) ||
			w->read_done + pkt->payload_len > w->length ||
			((oi->flags & DROCE_OPF_END) &&
			w->read_done + pkt->payload_len != w->length)) {
		fail_wqe(qp, w, IBV_WC_BAD_RESP_ERR);
		return;
	}
	if (pkt->payload_len && tp_sge_copy_in(qp->dev, qp->pd, w->sge,
			w->num_sge, w->read_done, pkt->payload,
			pkt->payload_len) != 0) {
		fail_wqe(qp, w, IBV_WC_LOC_PROT_ERR);
		return;
	}
	w->read_done += pkt->payload_len;
	rw = droce_psn_add(pkt->psn, 1);
	if (oi->flags & DROCE_OPF_END) {
		tp_wqe_done(qp, w, IBV_WC_SUCCESS);
		rw = droce_psn_add(w->first_psn, w->npsn);
	}
	raise_acked(qp, rw);
	settle(qp);
	tp_comp_retire(qp);
}

static void
on_atomic_ack(struct droce_qp *qp, const struct droce_pkt *pkt)
{
	struct tp_swqe *w = tp_wqe_of_psn(qp, pkt->psn);
	int alone;

	if (DROCE_AETH_TYPE(pkt->aeth_syndrome) != DROCE_AETH_TYPE_ACK) {
		on_ack(qp, pkt);
		return;
	}
	if (w == NULL || w->state == TP_WQE_DONE ||
			!(w->wr_flags & TP_WRF_ATOMIC)) {
		qp->st.dup_rx++;
		return;
	}
	/* it acknowledges every request before its own */
	raise_acked(qp, w->first_psn);
	alone = oldest_alone(qp, w);
	/* The original value lands in the local buffer in host order. */
	w->atomic_orig = pkt->atmack_orig;
	if (tp_read_copy(qp, w, 0, (const uint8_t *)&w->atomic_orig, 8) != 0) {
		settle(qp);
		fail_wqe(qp, w, IBV_WC_LOC_PROT_ERR);
		return;
	}
	tp_wqe_done(qp, w, IBV_WC_SUCCESS);
	raise_acked(qp, droce_psn_add(pkt->psn, 1));
	if (alone)
		progress_made(qp, qp->acked);
	else
		settle(qp);
	tp_comp_retire(qp);
}

void
tp_comp_rx(struct droce_qp *qp, const struct droce_pkt *pkt)
{
	const struct droce_opcode_info *oi = &droce_opcode_info[pkt->opcode];

	if (qp->type != IBV_QPT_RC)
		return;
	if (qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_SQD &&
			qp->state != IBV_QPS_SQE) {
		qp->queue->st.rx_drop_state++;
		return;
	}
	if (oi->flags & DROCE_OPF_ACK)
		on_ack(qp, pkt);
	else if (oi->flags & DROCE_OPF_READ)
		on_read_resp(qp, pkt);
	else if (oi->flags & DROCE_OPF_ATOMIC)
		on_atomic_ack(qp, pkt);
}
