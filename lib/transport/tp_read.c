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
	w->rr_tries = 0;
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

/*
 * A few of the shortest round trips, doubled each time the same hole is
 * asked again: a responder slower than the path (rxe under emulation
 * takes ~0.1-0.2 s per 1,024 responses, its shortest round trip well
 * under a millisecond) must not get the same request hundreds of times,
 * each one more to answer before it reaches the new ones.
 */
uint64_t
tp_read_reask_ns(const struct droce_qp *qp, const struct tp_swqe *w)
{
	uint64_t t = tp_rto_reask_ns(qp) << (w->rr_tries < 16 ? w->rr_tries : 16);
	uint64_t ceil = droce_ack_timeout_ns(qp->timeout);

	return qp->timeout && t > ceil ? ceil : t;
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
			qp->queue->now - w->rr_at < tp_read_reask_ns(qp, w))
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
	if (want && tp_read_copy(qp, w, off, pkt->payload, want) != 0) {
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

/* w's free-running index on the send queue. */
static inline uint32_t
wqe_index(const struct droce_qp *qp, const struct tp_swqe *w)
{
	uint32_t slot = (uint32_t)(w - qp->sq.wqe);

	return qp->sq.tail + ((slot - qp->sq.tail) & (qp->sq.size - 1));
}

/* Whether [a, a+n) meets a buffer of a WQE after w (index iw) that has
 * placed an answer; *end: where the part that does (or does not) ends. */
static int
later_covers(struct droce_qp *qp, uint32_t iw, uint64_t a, uint64_t n,
		uint64_t *end)
{
	uint64_t next = a + n;
	uint32_t i, k;

	for (i = iw + 1; (int32_t)(i - qp->rd_newest) <= 0; i++) {
		const struct tp_swqe *j = tp_sq_wqe(qp, i);

		if (!(j->wr_flags & TP_WRF_CREDIT) ||
				(j->rd_got == 0 && j->state != TP_WQE_DONE))
			continue;
		for (k = 0; k < j->num_sge; k++) {
			uint64_t s = j->sge[k].addr, e = s + j->sge[k].length;

			if (s <= a && a < e) {
				*end = e < a + n ? e : a + n;
				return 1;
			}
			if (s > a && s < next)
				next = s;
		}
	}
	*end = next;
	return 0;
}

/*
 * On a NIC a READ's responses and an atomic's answer land in posting
 * order, so where two outstanding requests' buffers overlap, the later
 * one's bytes are what stays. Answers placed by PSN can come in another
 * order (a hole asked again after the next READ was answered): the bytes
 * a later answer already covers are skipped, so memory ends as a NIC
 * leaves it. Only when a later answer has placed anything.
 */
int
tp_read_copy(struct droce_qp *qp, struct tp_swqe *w, uint64_t off,
		const uint8_t *src, uint32_t len)
{
	uint32_t iw = wqe_index(qp, w), k;
	uint64_t pos = 0;
	int rc;

	if (!qp->rd_newest_set || (int32_t)(qp->rd_newest - iw) <= 0) {
		rc = tp_sge_copy_in(qp->dev, qp->pd, w->sge, w->num_sge, off,
			src, len);
		if (rc == 0) {
			qp->rd_newest = iw;
			qp->rd_newest_set = 1;
		}
		return rc;
	}
	/* every piece checked first: nothing placed if one is bad */
	rc = tp_sge_room(qp->dev, qp->pd, w->sge, w->num_sge, off, len);
	if (rc != 0)
		return rc;
	for (k = 0; k < w->num_sge && len; k++) {
		uint64_t s_len = w->sge[k].length, a, b, x, end;

		if (off >= pos + s_len) {
			pos += s_len;
			continue;
		}
		a = off;
		b = off + len < pos + s_len ? off + len : pos + s_len;
		/* the piece's bytes by their address: copy what no later
		 * answer covers */
		for (x = a; x < b; x = end - w->sge[k].addr + pos) {
			uint64_t addr = w->sge[k].addr + (x - pos);

			if (!later_covers(qp, iw, addr, b - x, &end))
				tp_sge_copy_in(qp->dev, qp->pd, w->sge,
					w->num_sge, x, src + (x - off),
					(uint32_t)(end - addr));
		}
		src += b - a;
		len -= (uint32_t)(b - a);
		off = b;
		pos += s_len;
	}
	return 0;
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
	/* the same hole again: wait longer for it next time */
	w->rr_tries = w->rr_at && psn == w->rr_psn ?
		(uint8_t)(w->rr_tries + (w->rr_tries < 255)) : 0;
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
