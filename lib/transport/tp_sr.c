/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * Selective repeat between droce peers (doc/transport.md), on only where
 * both ends set it: IBTA's responder drops every request after a gap and
 * its requester goes back N, resending all that followed the lost packet.
 * Here the responder holds requests that come ahead of the PSN it
 * expects (a copy each, up to the window), executes them in PSN order
 * once the gap fills, so placement, completions and atomics stay exactly
 * as in order; and while it holds any it acknowledges with a selective
 * acknowledgement: an ACK of the last PSN in order whose payload is a
 * bitmap of the PSNs held after it. The requester sends again only the
 * PSNs the bitmap shows missing below the highest held, each at most
 * once per round trip; the retransmission timer, the backstop, resends
 * the oldest unacknowledged PSN alone. Data in flight is bounded by the
 * window. The frames are RoCEv2's (a SACK is an ACK with a payload,
 * which a standard peer never receives: it never turns selective repeat
 * on).
 *
 *   SACK payload: magic "DRSA" (be32), base PSN (be32: the one expected,
 *   ACKed PSN + 1), then 64-bit words (be64), bit i of word k: PSN
 *   base + 1 + 64k + i held.
 */

#include <stdlib.h>
#include <string.h>

#include <endian.h>

#include "tp_internal.h"

#define TP_SR_WIN_DEFAULT	1024
#define TP_SR_WIN_MIN		64
#define TP_SR_WIN_MAX		4096

/* A request held ahead of the responder's expected PSN. */
struct tp_sr_slot {
	struct droce_pkt pkt;	/* its payload points to data */
	uint8_t used;
	uint8_t data[];		/* qp->mtu bytes */
};

static inline size_t
slot_size(const struct droce_qp *qp)
{
	return (sizeof(struct tp_sr_slot) + qp->mtu + 63) & ~(size_t)63;
}

static inline struct tp_sr_slot *
slot_at(const struct droce_qp *qp, uint32_t psn)
{
	return (struct tp_sr_slot *)((uint8_t *)qp->sr_slot +
		(psn & (qp->sr_win - 1)) * slot_size(qp));
}

int
droce_qp_set_sr(struct droce_qp *qp, int on)
{
	if (qp->type != IBV_QPT_RC || qp->xrc ||
			(qp->state != IBV_QPS_RESET && qp->state != IBV_QPS_INIT))
		return -EINVAL;
	qp->sr = on ? 1 : 0;
	return 0;
}

int
droce_qp_sr(const struct droce_qp *qp)
{
	return qp->sr;
}

int
tp_sr_init(struct droce_qp *qp)
{
	uint32_t w = qp->dev->conf.sr_window;

	if (w < TP_SR_WIN_MIN || w > TP_SR_WIN_MAX)
		w = TP_SR_WIN_DEFAULT;
	w = tp_pow2(w);
	qp->sr_win = w;
	qp->sr_at = calloc(w, sizeof(*qp->sr_at));
	qp->sr_need = calloc(w / 64, sizeof(*qp->sr_need));
	return qp->sr_at == NULL || qp->sr_need == NULL ? -ENOMEM : 0;
}

void
tp_sr_free(struct droce_qp *qp)
{
	free(qp->sr_at);
	free(qp->sr_need);
	free(qp->sr_slot);
	qp->sr_at = NULL;
	qp->sr_need = NULL;
	qp->sr_slot = NULL;
}

void
tp_sr_reset(struct droce_qp *qp)
{
	if (qp->sr_at != NULL) {
		memset(qp->sr_at, 0, qp->sr_win * sizeof(*qp->sr_at));
		memset(qp->sr_need, 0, qp->sr_win / 64 * sizeof(*qp->sr_need));
	}
	qp->sr_nneed = 0;
	qp->sr_hi = 0;
	/* the slots follow the path MTU, which may change before RTR */
	free(qp->sr_slot);
	qp->sr_slot = NULL;
	qp->sr_held = 0;
}

/* ---- responder ---- */

int
tp_sr_hold(struct droce_qp *qp, const struct droce_pkt *pkt)
{
	uint32_t d = (uint32_t)droce_psn_diff(pkt->psn, qp->epsn), n = 1, i;
	unsigned int f = droce_opcode_info[pkt->opcode].flags;
	struct tp_sr_slot *s;

	/* a READ takes the PSNs of its responses: all must fit */
	if (f & DROCE_OPF_READ)
		n = tp_msg_npsn(qp, pkt->reth_len);
	if (d + n > qp->sr_win || pkt->payload_len > qp->mtu)
		return 0;
	if (qp->sr_slot == NULL) {
		qp->sr_slot = calloc(qp->sr_win, slot_size(qp));
		if (qp->sr_slot == NULL)
			return 0;
	}
	s = slot_at(qp, pkt->psn);
	if (s->used) {
		qp->st.dup_rx++;
		return 1;
	}
	/* the PSNs a READ's responses take are its too: none is missing */
	for (i = 1; i < n; i++)
		if (slot_at(qp, droce_psn_add(pkt->psn, i))->used)
			return 0;
	s->pkt = *pkt;
	memcpy(s->data, pkt->payload, pkt->payload_len);
	s->pkt.payload = s->data;
	s->used = 1;
	for (i = 1; i < n; i++)
		slot_at(qp, droce_psn_add(pkt->psn, i))->used = 2;
	qp->sr_held += n;
	qp->st.sr_held++;
	return 1;
}

const struct droce_pkt *
tp_sr_take(struct droce_qp *qp)
{
	struct tp_sr_slot *s;
	uint32_t i, n = 1;

	if (qp->sr_held == 0)
		return NULL;
	s = slot_at(qp, qp->epsn);
	if (s->used != 1)
		return NULL;
	if (droce_opcode_info[s->pkt.opcode].flags & DROCE_OPF_READ)
		n = tp_msg_npsn(qp, s->pkt.reth_len);
	for (i = 0; i < n; i++)
		slot_at(qp, droce_psn_add(s->pkt.psn, i))->used = 0;
	qp->sr_held -= n;
	return &s->pkt;
}

uint32_t
tp_sr_sack_fill(const struct droce_qp *qp, uint8_t *p)
{
	uint64_t words[TP_SR_WIN_MAX / 64];
	uint32_t i, nw = 0, v;

	if (qp->sr_held == 0)
		return 0;
	memset(words, 0, sizeof(words));
	for (i = 0; i + 1 < qp->sr_win; i++) {
		if (!slot_at(qp, droce_psn_add(qp->epsn, i + 1))->used)
			continue;
		words[i / 64] |= 1ull << (i % 64);
		nw = i / 64 + 1;
	}
	if (nw == 0)
		return 0;
	v = htobe32(TP_SACK_MAGIC);
	memcpy(p, &v, 4);
	v = htobe32(qp->epsn);
	memcpy(p + 4, &v, 4);
	for (i = 0; i < nw; i++) {
		uint64_t be = htobe64(words[i]);

		memcpy(p + 8 + 8 * i, &be, 8);
	}
	return 8 + 8 * nw;
}

/* ---- requester ---- */

void
tp_sr_need(struct droce_qp *qp, uint32_t psn, int force)
{
	uint32_t b = psn & (qp->sr_win - 1);
	uint64_t at = qp->sr_at[b];

	if (qp->sr_need[b / 64] & (1ull << (b % 64)))
		return;
	/* sent again already, and the answer may still be on its way */
	if (!force && at && qp->queue->now - at < tp_rto_reask_ns(qp))
		return;
	qp->sr_need[b / 64] |= 1ull << (b % 64);
	qp->sr_nneed++;
}

void
tp_sr_sack_rx(struct droce_qp *qp, const struct droce_pkt *pkt)
{
	uint32_t magic, base, nw, k, i, hi = 0, x;
	uint64_t words[TP_SR_WIN_MAX / 64];
	int any = 0;

	if (pkt->payload_len < 16 || (pkt->payload_len - 8) % 8 ||
			pkt->payload_len > TP_SACK_MAX)
		return;
	memcpy(&magic, pkt->payload, 4);
	memcpy(&base, pkt->payload + 4, 4);
	base = be32toh(base) & DROCE_PSN_MASK;
	if (be32toh(magic) != TP_SACK_MAGIC ||
			base != droce_psn_add(pkt->psn, 1))
		return;
	nw = (pkt->payload_len - 8) / 8;
	if (nw * 64 > qp->sr_win)
		return;
	qp->st.sack_rx++;
	for (k = 0; k < nw; k++) {
		memcpy(&words[k], pkt->payload + 8 + 8 * k, 8);
		words[k] = be64toh(words[k]);
		for (i = 0; i < 64; i++)
			if (words[k] >> i & 1) {
				hi = 64 * k + i + 1;	/* base + hi held */
				any = 1;
			}
	}
	if (!any)
		return;
	/* the highest held PSN must be one we sent */
	if (droce_psn_diff(droce_psn_add(base, hi), qp->psn_hw) >= 0)
		return;
	x = droce_psn_add(base, hi + 1);
	if (droce_psn_diff(x, qp->sr_hi) > 0 ||
			droce_psn_diff(qp->sr_hi, qp->psn_hw) > 0)
		qp->sr_hi = x;
	/* every PSN below the highest held and not held is lost */
	for (x = 0; x < hi; x++) {
		uint32_t psn = droce_psn_add(base, x);

		if (x > 0 && (words[(x - 1) / 64] >> ((x - 1) % 64) & 1))
			continue;
		if (droce_psn_diff(psn, qp->una) < 0)
			continue;
		tp_sr_need(qp, psn, 0);
	}
}

/* w's packet at psn goes again: 1 sent (or nothing to send), 0 no room,
 * -1 a local error. */
static int
resend_psn(struct droce_qp *qp, struct tp_swqe *w, uint32_t psn)
{
	uint32_t d = (uint32_t)droce_psn_diff(psn, w->first_psn);

	if (w->wr_flags & TP_WRF_CREDIT) {
		/* the request was lost: ask again (tp_read.c) */
		tp_read_ask(qp, w);
		return 1;
	}
	return tp_req_resend(qp, w, (uint64_t)d * qp->mtu, psn, 0);
}

int
tp_sr_resend(struct droce_qp *qp)
{
	uint32_t i;
	int sent = 0;

	for (i = qp->sq.tail; qp->sr_nneed && i != qp->sq.head; i++) {
		struct tp_swqe *w = tp_sq_wqe(qp, i);
		uint32_t k;

		if (w->state == TP_WQE_POSTED)
			break;
		int32_t k0 = droce_psn_diff(qp->una, w->first_psn);

		/* the bits are by psn % window: only [una, psn_hw) */
		if (k0 >= (int32_t)w->npsn)
			continue;
		for (k = k0 > 0 ? (uint32_t)k0 : 0; k < w->npsn && qp->sr_nneed;
				k++) {
			uint32_t psn = droce_psn_add(w->first_psn, k);
			uint32_t b = psn & (qp->sr_win - 1);
			int rc;

			if (!(qp->sr_need[b / 64] & (1ull << (b % 64))))
				continue;
			if (droce_psn_diff(psn, qp->psn_hw) >= 0)
				break;	/* not sent yet: nothing to resend */
			if (w->state != TP_WQE_DONE) {
				if (!tp_tx_room(qp->queue) || tp_cc_wait(qp))
					return sent;
				rc = resend_psn(qp, w, psn);
				if (rc == 0)
					return sent;
				if (rc < 0) {
					tp_wqe_done(qp, w, IBV_WC_LOC_PROT_ERR);
					tp_comp_retire(qp);
					return sent;
				}
				qp->sr_at[b] = qp->queue->now ? qp->queue->now : 1;
				sent++;
			}
			qp->sr_need[b / 64] &= ~(1ull << (b % 64));
			qp->sr_nneed--;
		}
	}
	if (qp->sr_nneed) {
		/* PSNs of no WQE left (all acknowledged meanwhile) */
		memset(qp->sr_need, 0, qp->sr_win / 64 * sizeof(*qp->sr_need));
		qp->sr_nneed = 0;
	}
	return sent;
}

/*
 * The timer fired: the oldest unacknowledged PSN goes again, and those
 * after the highest any SACK said held, which no SACK spoke of (a tail
 * lost whole brings none), up to 64.
 */
void
tp_sr_timeout(struct droce_qp *qp)
{
	uint32_t psn = qp->sr_hi, n;

	tp_sr_need(qp, qp->una, 1);
	if (droce_psn_diff(psn, qp->una) <= 0 ||
			droce_psn_diff(psn, qp->psn_hw) > 0)
		psn = droce_psn_add(qp->una, 1);
	for (n = 0; n < 64 && droce_psn_diff(psn, qp->psn_hw) < 0; n++) {
		tp_sr_need(qp, psn, 1);
		psn = droce_psn_add(psn, 1);
	}
}
