/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * The requester's answers that carry data: READ responses placed by PSN,
 * and a lost answer asked for again alone. A requester knows where every
 * response PSN of its READ lands ((psn - first) * MTU into its buffer),
 * so a response after a lost one is placed, not dropped, and only the
 * hole is asked for again: a READ request for that range at its PSN,
 * which any responder takes as a duplicate READ and answers from the
 * range its RETH names (IBTA 9.7.5.1.4; Linux rxe too, and it answers
 * MIDDLE .. LAST). Rewinding instead would ask for the whole rest of the
 * READ, and every request after it, again: 12-16x the frames at 2% loss
 * (doc/interop.md). An atomic, ATOMIC WRITE or FLUSH whose answer is
 * lost is asked again the same way, its responder answering from its
 * replay cache.
 *
 * A hole is asked for once per round trip at most, and always from the
 * first byte still missing: rxe keeps only the range last asked for and
 * ignores a request that starts before it, so the holes of one READ are
 * asked for in order, one at a time. The retransmission timer stays the
 * backstop: it rewinds, asking from the first missing byte to the end.
 */

#include <string.h>

#include "tp_internal.h"

static inline int
bit_get(const struct droce_qp *qp, uint32_t psn)
{
	uint32_t b = psn & (TP_RD_BITS - 1);

	return (qp->rd_bits[b >> 6] >> (b & 63)) & 1;
}

static inline void
bit_set(struct droce_qp *qp, uint32_t psn)
{
	uint32_t b = psn & (TP_RD_BITS - 1);

	qp->rd_bits[b >> 6] |= 1ull << (b & 63);
}


void
tp_read_start(struct droce_qp *qp, struct tp_swqe *w)
{
	uint32_t psn, n, k;

	w->rd_got = 0;
	w->rr_at = 0;
	w->rr_need = 0;
	if (!(w->wr_flags & TP_WRF_READ) || !tp_read_tracked(qp, w))
		return;
	/* its PSNs' bits cleared, a word's run at a time */
	psn = w->first_psn;
	if (w->npsn == 1) {
		uint32_t b = psn & (TP_RD_BITS - 1);

		qp->rd_bits[b >> 6] &= ~(1ull << (b & 63));
		return;
	}
	for (n = w->npsn; n; n -= k) {
		uint32_t b = psn & (TP_RD_BITS - 1), sh = b & 63;
		uint64_t m;

		k = 64 - sh < n ? 64 - sh : n;
		m = k == 64 ? ~0ull : ((1ull << k) - 1) << sh;
		qp->rd_bits[b >> 6] &= ~m;
		psn = droce_psn_add(psn, k);
	}
}


/* PSNs of the hole at w's first missing byte: up to the next response
 * placed, or the READ's end. */
static uint32_t
hole_len(const struct droce_qp *qp, const struct tp_swqe *w)
{
	uint32_t start = (uint32_t)(w->read_done / qp->mtu), i;

	for (i = start; i < w->npsn; i++)
		if (bit_get(qp, droce_psn_add(w->first_psn, i)))
			break;
	return i - start;
}

static void
need(struct droce_qp *qp, struct tp_swqe *w)
{
	if (!w->rr_need) {
		w->rr_need = 1;
		qp->rr_pending++;
	}
}

void
tp_read_hole(struct droce_qp *qp, struct tp_swqe *w)
{
	uint32_t miss = tp_read_missing(qp, w);

	if (w->state == TP_WQE_DONE || w->rr_need)
		return;
	/* asked already, and its answer may still be on its way */
	if (w->rr_at && droce_psn_diff(miss, w->rr_psn) >= 0 &&
			droce_psn_diff(miss, w->rr_end) < 0 &&
			qp->queue->now - w->rr_at < tp_rto_reask_ns(qp))
		return;
	need(qp, w);
}

void
tp_read_ask(struct droce_qp *qp, struct tp_swqe *w)
{
	if (w->state != TP_WQE_DONE)
		need(qp, w);
}

void
tp_read_forget(struct droce_qp *qp, struct tp_swqe *w)
{
	if (w->rr_need) {
		w->rr_need = 0;
		qp->rr_pending--;
	}
	w->rr_at = 0;
}

int
tp_read_place(struct droce_qp *qp, struct tp_swqe *w,
		const struct droce_pkt *pkt)
{
	uint8_t op = pkt->opcode & (uint8_t)~DROCE_TRANSPORT_MASK;
	uint32_t i = (uint32_t)droce_psn_diff(pkt->psn, w->first_psn);
	uint64_t off = (uint64_t)i * qp->mtu;
	uint32_t want = w->length - off > qp->mtu ? qp->mtu :
		(uint32_t)(w->length - off);
	int starts = op == DROCE_OP_RC_READ_RESP_FIRST ||
		op == DROCE_OP_RC_READ_RESP_ONLY;
	int ends = op == DROCE_OP_RC_READ_RESP_LAST ||
		op == DROCE_OP_RC_READ_RESP_ONLY;

	if (bit_get(qp, pkt->psn)) {
		qp->st.dup_rx++;
		return 0;
	}
	/*
	 * Each response carries its PSN's share of the READ: a whole MTU,
	 * the last one the rest. A FIRST or ONLY starts the READ; a LAST
	 * may end a range asked for again inside it; only the READ's last
	 * PSN may go without an end.
	 */
	if (pkt->payload_len != want || (starts && i != 0) ||
			(!ends && i + 1 == w->npsn)) {
		tp_wqe_done(qp, w, IBV_WC_BAD_RESP_ERR);
		return -1;
	}
	if (want && tp_sge_copy_in(qp->dev, qp->pd, w->sge, w->num_sge, off,
			pkt->payload, want) != 0) {
		tp_wqe_done(qp, w, IBV_WC_LOC_PROT_ERR);
		return -1;
	}
	bit_set(qp, pkt->psn);
	w->rd_got++;
	if (off != w->read_done)
		return 1;	/* after a hole */
	/* what is in, in a row from the start: this one, and those that
	 * came after the hole it filled */
	w->read_done += want;
	for (i++; i < w->rd_got && i < w->npsn &&
			bit_get(qp, droce_psn_add(w->first_psn, i)); i++)
		w->read_done += w->length - w->read_done > qp->mtu ?
			qp->mtu : w->length - w->read_done;
	return 1;
}

/* w's request, or the first hole of its READ, goes again: 1 sent, 0 no
 * room, -1 a local error. */
static int
resend(struct droce_qp *qp, struct tp_swqe *w)
{
	uint64_t len = 0, off = 0;
	uint32_t psn = w->first_psn, n = 1;
	int rc;

	if (w->wr_flags & TP_WRF_READ) {
		off = w->read_done;
		psn = tp_read_missing(qp, w);
		n = hole_len(qp, w);
		if (n == 0)
			return 1;	/* filled meanwhile */
		len = (uint64_t)n * qp->mtu;
		if (len > w->length - off)
			len = w->length - off;
	}
	rc = tp_req_resend(qp, w, off, psn, len);
	if (rc <= 0)
		return rc;
	w->rr_psn = psn;
	w->rr_end = droce_psn_add(psn, n);
	w->rr_at = qp->queue->now ? qp->queue->now : 1;
	return 1;
}

int
tp_read_resend(struct droce_qp *qp)
{
	uint32_t i;
	int sent = 0, rc;

	for (i = qp->sq.tail; qp->rr_pending && i != qp->sq.cur; i++) {
		struct tp_swqe *w = tp_sq_wqe(qp, i);

		if (!w->rr_need)
			continue;
		if (!tp_tx_room(qp->queue))
			break;
		if (w->state == TP_WQE_DONE) {
			tp_read_forget(qp, w);
			continue;
		}
		rc = resend(qp, w);
		if (rc == 0)
			break;
		w->rr_need = 0;
		qp->rr_pending--;
		if (rc < 0) {
			tp_wqe_done(qp, w, IBV_WC_LOC_PROT_ERR);
			tp_comp_retire(qp);
			return sent;
		}
		sent++;
	}
	return sent;
}
