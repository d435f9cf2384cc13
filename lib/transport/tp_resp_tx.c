/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * Responder, transmit side: what tp_resp.c decided goes out here, in a
 * progress turn. READ responses and atomic ACKs leave from the responder
 * resources in PSN order (in ring order, or after a replay by the
 * smallest PSN still to answer), then the one coalesced ACK or NAK; a
 * fatal NAK once sent moves the QP to ERR.
 */

#include <string.h>

#include "tp_internal.h"

static int
send_ack(struct droce_qp *qp)
{
	struct droce_tp_queue *q = qp->queue;
	struct droce_txbuf *b;
	struct droce_pkt p;	/* BTH and AETH: the rest is qp->htmpl */
	uint8_t *buf, sack[TP_SACK_MAX];
	uint32_t slen = 0;
	int hlen;

	buf = tp_tx_get(q, DROCE_MAX_HDR_LEN + 8 + TP_SACK_MAX, &b);
	if (buf == NULL)
		return 0;
	p.se = 0;
	p.ackreq = 0;
	p.opcode = DROCE_OP_RC_ACK | tp_xrc_bits(qp);
	p.dqpn = qp->dest_qpn;
	p.psn = qp->ack_psn;
	p.aeth_syndrome = qp->ack_syndrome;
	p.aeth_msn = qp->msn;
	/* selective repeat, requests held: the bitmap, after the last
	 * PSN in order as it is now */
	if (qp->sr_held && !qp->ack_is_nak &&
			(slen = tp_sr_sack_fill(qp, sack)) != 0) {
		p.psn = droce_psn_add(qp->epsn, DROCE_PSN_MASK);
		qp->st.sack_tx++;
	}
	p.payload_len = slen;
	hlen = tp_build_hdr(qp, &p, buf);
	if (slen)
		memcpy(buf + hlen, sack, slen);
	tp_tx_done(qp, b, tp_finish(&p, buf, (uint32_t)hlen));
	if (!qp->ack_is_nak)
		qp->st.acks_tx++;
	qp->ack_pending = 0;
	qp->ack_hold = 0;
	return 1;
}

/* A ping-pong's ACK waiting for the answer (hold_for_answer): until the
 * application posts it or the hold ends. */
static inline int
ack_held(const struct droce_qp *qp)
{
	return qp->ack_hold != 0 && qp->sq.cur == qp->sq.head &&
		qp->queue->now < qp->ack_hold;
}

/*
 * A READ response's payload sent from the MR without a copy, where the
 * queue does zero-copy: 1 if the frame is done. The key is looked up again
 * (not the pointer kept since the request) so that a span only ever takes
 * a reference on an MR that is still registered.
 */
static int
zc_read_resp(struct droce_qp *qp, const struct tp_res *r,
		struct droce_txbuf *b, uint8_t *buf, uint32_t hlen, uint32_t plen)
{
	struct droce_tp_queue *q = qp->queue;
	const uint8_t *src;

	if (!tp_tx_zc_wanted(q, qp->tmpl.ip_ver, plen))
		return 0;
	/* the memory the reference is on: the key's now */
	src = tp_rkey_resolve(qp, r->rkey, r->va + r->sent, plen,
		IBV_ACCESS_REMOTE_READ, &b->span[0].mr);
	if (src == NULL)
		return 0;
	b->span[0].addr = src;
	b->span[0].len = plen;
	return tp_tx_spans_done(qp, b, buf, hlen, 1, plen) == 0;
}

/*
 * A READ whose memory went (the MR deregistered, the window invalidated)
 * while its responses were going out: a Remote Access NAK at the next
 * PSN, as a NIC whose key went answers, and no response after it; the QP
 * errors once the NAK is out.
 */
static void
read_memory_gone(struct droce_qp *qp, struct tp_res *r)
{
	unsigned int i;

	for (i = 0; i < TP_MAX_RD_ATOMIC; i++)
		if (qp->res[i].pending)
			tp_res_clear_pending(qp, &qp->res[i]);
	tp_resp_nak(qp, r->cur_psn, DROCE_AETH_NAK_REM_ACC);
}

/* The frame of r's next answer: plen bytes of READ response from src, or
 * the atomic ACK. 1 when it went, 0 when the turn must end. */
static inline __attribute__((always_inline)) int
res_frame(struct droce_qp *qp, struct tp_res *r, const uint8_t *src,
		uint32_t plen)
{
	struct droce_tp_queue *q = qp->queue;
	struct droce_txbuf *b;
	struct droce_pkt p;	/* BTH and after: the rest is qp->htmpl */
	uint8_t *buf;
	int hlen, first, last;

	buf = tp_tx_get(q, DROCE_MAX_HDR_LEN + qp->mtu + 8, &b);
	if (buf == NULL)
		return 0;
	p.se = 0;
	p.ackreq = 0;
	p.dqpn = qp->dest_qpn;
	p.aeth_syndrome = DROCE_AETH_ACK_NOCREDIT;
	p.aeth_msn = r->msn;
	if (r->is_atomic) {
		p.opcode = DROCE_OP_RC_ATOMIC_ACK | tp_xrc_bits(qp);
		p.psn = r->first_psn;
		p.atmack_orig = r->orig;
		tp_res_clear_pending(qp, r);
	} else {
		first = r->sent == 0;
		last = r->sent + plen >= r->end;
		p.opcode = first && last ? DROCE_OP_RC_READ_RESP_ONLY :
			first ? DROCE_OP_RC_READ_RESP_FIRST :
			last ? DROCE_OP_RC_READ_RESP_LAST :
			DROCE_OP_RC_READ_RESP_MIDDLE;
		p.opcode |= tp_xrc_bits(qp);
		p.psn = r->cur_psn;
	}
	p.payload_len = plen;
	hlen = tp_build_hdr(qp, &p, buf);
	if (plen && !zc_read_resp(qp, r, b, buf, (uint32_t)hlen, plen)) {
		memcpy(buf + hlen, src, plen);
		tp_tx_done(qp, b, tp_finish(&p, buf, (uint32_t)hlen));
	} else if (plen == 0) {
		tp_tx_done(qp, b, tp_finish(&p, buf, (uint32_t)hlen));
	}
	if (!r->is_atomic) {
		r->sent += plen;
		r->cur_psn = droce_psn_add(r->cur_psn, 1);
		if (r->sent >= r->end)
			tp_res_clear_pending(qp, r);
	}
	return 1;
}

/* One READ response packet or one atomic ACK from resource r (an ATOMIC
 * WRITE's is a READ response ONLY of no payload: its len is 0): 1 when
 * it went, 0 when the turn must end. */
static int
send_res(struct droce_qp *qp, struct tp_res *r)
{
	const uint8_t *src = NULL;
	uint32_t plen = 0;

	if (!r->is_atomic) {
		plen = r->end - r->sent > qp->mtu ? qp->mtu : r->end - r->sent;
		/* the key's memory now, not when the READ came: it may
		 * have gone since */
		if (plen && (src = tp_rkey_resolve_ahead(qp, r->rkey,
				r->va + r->sent, plen, r->end - r->sent,
				IBV_ACCESS_REMOTE_READ, NULL)) == NULL) {
			read_memory_gone(qp, r);
			return 0;
		}
	}
	return res_frame(qp, r, src, plen);
}

int
tp_resp_answer_now(struct droce_qp *qp, struct tp_res *r, const uint8_t *src)
{
	struct droce_tp_queue *q = qp->queue;

	if (qp->res_pending || !tp_tx_room(q) || tp_cc_wait(qp) ||
			(!r->is_atomic && (r->end > qp->mtu ||
			tp_tx_zc_wanted(q, qp->tmpl.ip_ver, r->end))))
		return 0;
	if (!res_frame(qp, r, src, r->is_atomic ? 0 : r->end))
		return 0;
	qp->res_send = qp->res_next;
	return 1;
}

/* r's responses, while the turn lasts: 1 when all of them are out. */
static int
drain_res(struct droce_qp *qp, struct tp_res *r, int *sent)
{
	while (r->pending && tp_tx_room(qp->queue)) {
		if (tp_cc_wait(qp))	/* paced: the rest when due */
			return 0;
		if (send_res(qp, r) == 0)
			return 0;
		(*sent)++;
	}
	return !r->pending;
}

/* max_dest_rd_atomic changed (SQD to SQD): resources past the new count
 * are dropped, the rest answered by PSN. */
void
tp_resp_res_resized(struct droce_qp *qp)
{
	unsigned int i, n = tp_res_count(qp);

	qp->res_pending = 0;
	for (i = 0; i < TP_MAX_RD_ATOMIC; i++) {
		if (i >= n)
			memset(&qp->res[i], 0, sizeof(qp->res[i]));
		else if (qp->res[i].pending)
			qp->res_pending++;
	}
	qp->res_next %= n;
	qp->res_replayed = 1;
}

int
tp_resp_busy(const struct droce_qp *qp)
{
	return qp->ack_pending || qp->res_pending || qp->cnp_pending;
}

/*
 * The pending resources' responses, in PSN order, while the turn lasts
 * (*sent counts them): 1 if all went out, 0 if the turn ended first.
 */
static int
send_responses(struct droce_qp *qp, int *sent)
{
	unsigned int i, n = tp_res_count(qp), k;

	/* In ring order from the oldest ... */
	while (qp->res_pending && !qp->res_replayed) {
		struct tp_res *r = &qp->res[qp->res_send % n];

		if (!drain_res(qp, r, sent))
			return 0;
		qp->res_send = (qp->res_send + 1) % n;
	}
	/* ... or, after a replay, by the smallest PSN still to answer. */
	for (k = 0; qp->res_pending && k < n; k++) {
		struct tp_res *r;
		uint32_t oldest = 0;
		int found = 0;

		for (i = 0; i < n; i++) {
			r = &qp->res[i];
			if (r->valid && r->pending && (!found ||
					droce_psn_diff(r->cur_psn, oldest) < 0)) {
				oldest = r->cur_psn;
				found = 1;
			}
		}
		if (!found)
			break;
		for (i = 0; i < n; i++) {
			r = &qp->res[i];
			if (!(r->valid && r->pending && r->cur_psn == oldest))
				continue;
			if (!drain_res(qp, r, sent))
				return 0;
		}
	}
	return 1;
}

/*
 * An ACK sent from the owner's context, outside a progress pass, and out
 * at once. The queue's frame budget there is what the last pass left:
 * none after a pass that used it all (a busy queue), and the ACK, refused
 * for it, was never sent. It gets a frame of its own.
 */
static void
send_ack_now(struct droce_qp *qp)
{
	struct droce_tp_queue *q = qp->queue;
	uint32_t budget = q->tx_budget;

	q->tx_budget = 1;
	if (send_ack(qp))
		tp_tx_flush(q);
	q->tx_budget = budget;
}

/*
 * An RC QP about to be destroyed (owner context): its last ACK once more.
 * The peer may not have heard it (lost) and would retransmit to a QP
 * that is gone and end in RETRY_EXC_ERR: perftest's closing handshake
 * under 2% loss did, the server destroying its QP right after answering.
 * A duplicate ACK is harmless to the requester (IBTA 9.7.5.1.1: one for
 * PSNs already acknowledged is ignored).
 */
void
tp_resp_last_ack(struct droce_qp *qp)
{
	if (qp->type != IBV_QPT_RC || (qp->st.acks_tx == 0 &&
			!qp->ack_pending) || qp->ack_is_nak ||
			qp->state == IBV_QPS_RESET || qp->state == IBV_QPS_INIT)
		return;
	/* out now: no pass of the queue will flush it for this QP */
	send_ack_now(qp);
}

/*
 * An RC QP leaving for the error state (owner context): the ACK it owes,
 * maybe held for an answer that will not come now, goes out first, as a
 * NIC's would long before the error. Held and then dropped, the peer's
 * last request was retried into its own flush once the disconnect came:
 * libfabric's ofi_rxm closed the connection right after the receive
 * (daemon_eco_fi_bw_rdm's goodbye, "Operation canceled").
 */
void
tp_resp_ack_before_error(struct droce_qp *qp)
{
	if (qp->type != IBV_QPT_RC || !qp->ack_pending || qp->ack_is_nak)
		return;
	qp->ack_hold = 0;
	send_ack_now(qp);
}

int
tp_resp_progress(struct droce_qp *qp)
{
	int sent = 0;

	/* the peer's frames met congestion: it is told first (RC, UC) */
	if (qp->cnp_pending && tp_tx_room(qp->queue) &&
			qp->state != IBV_QPS_ERR && qp->state != IBV_QPS_RESET &&
			qp->state != IBV_QPS_INIT)
		sent = tp_cc_send_cnp(qp);
	if (qp->type != IBV_QPT_RC || qp->state == IBV_QPS_ERR ||
			qp->state == IBV_QPS_RESET || qp->state == IBV_QPS_INIT)
		return sent;
	if (qp->res_pending && !send_responses(qp, &sent))
		return sent;
	if (qp->res_pending == 0) {
		qp->res_replayed = 0;
		qp->res_send = qp->res_next;
	}
	if (qp->ack_pending && tp_tx_room(qp->queue) && !ack_held(qp))
		sent += send_ack(qp);
	if (qp->rx_err && !qp->ack_pending) {
		qp->rx_err = 0;
		tp_qp_to_error(qp);
	}
	return sent;
}
