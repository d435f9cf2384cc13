/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * Responder: the requests answered from a responder resource (READ,
 * atomics, and IBTA 1.5's ATOMIC WRITE and FLUSH), executed at the
 * expected PSN (tp_resp.c has checked their sequence and length), and
 * their duplicates, answered again from the resource and never executed
 * twice. The answers go out from tp_resp_tx.c.
 */

#include <string.h>

#include "tp_internal.h"

static struct tp_res *
res_alloc(struct droce_qp *qp)
{
	uint32_t n = tp_res_count(qp);
	uint32_t i = qp->res_next % n;
	struct tp_res *r = &qp->res[i];

	/* A ring: the oldest is recycled, as rxe does, without a NAK; a
	 * requester past max_dest_rd_atomic loses its oldest responses. */
	if (r->pending) {
		tp_res_clear_pending(qp, r);
		if (qp->res_send % n == i)
			qp->res_send = (i + 1) % n;
	}
	qp->res_next = (i + 1) % n;
	memset(r, 0, sizeof(*r));
	r->valid = 1;
	return r;
}

int
tp_resp_read(struct droce_qp *qp, const struct droce_pkt *pkt)
{
	const uint8_t *src = NULL;
	struct tp_res *r;
	uint32_t npsn;

	if (qp->max_dest_rd_atomic == 0) {
		tp_resp_error(qp, pkt, DROCE_AETH_NAK_INV_REQ, IBV_WC_REM_INV_REQ_ERR);
		return -1;
	}
	/* the whole range now; a response sent later looks its piece up
	 * again (the memory may go meanwhile), one sent now uses this */
	if (pkt->reth_len && (!(qp->access & IBV_ACCESS_REMOTE_READ) ||
			(src = tp_rkey_resolve(qp, pkt->reth_rkey,
			pkt->reth_va, pkt->reth_len, IBV_ACCESS_REMOTE_READ,
			NULL)) == NULL)) {
		tp_resp_error(qp, pkt, DROCE_AETH_NAK_REM_ACC, IBV_WC_REM_ACCESS_ERR);
		return -1;
	}
	npsn = tp_msg_npsn(qp, pkt->reth_len);
	qp->msn = droce_psn_add(qp->msn, 1);
	r = res_alloc(qp);
	r->first_psn = pkt->psn;
	r->last_psn = droce_psn_add(pkt->psn, npsn - 1);
	r->va = pkt->reth_va;
	r->rkey = pkt->reth_rkey;
	r->len = r->end = pkt->reth_len;
	r->cur_psn = pkt->psn;
	r->sent = 0;
	r->msn = qp->msn;
	qp->epsn = droce_psn_add(pkt->psn, npsn);
	if (!tp_resp_answer_now(qp, r, src))
		tp_res_set_pending(qp, r);
	return 0;
}

int
tp_resp_atomic(struct droce_qp *qp, const struct droce_pkt *pkt)
{
	struct tp_res *r;
	uint64_t *p, orig;

	if (pkt->atm_va & 7) {
		tp_resp_error(qp, pkt, DROCE_AETH_NAK_INV_REQ, IBV_WC_REM_INV_REQ_ERR);
		return -1;
	}
	p = (qp->access & IBV_ACCESS_REMOTE_ATOMIC) ?
		(uint64_t *)tp_rkey_resolve(qp, pkt->atm_rkey, pkt->atm_va, 8,
			IBV_ACCESS_REMOTE_ATOMIC, NULL) : NULL;
	if (p == NULL) {
		tp_resp_error(qp, pkt, DROCE_AETH_NAK_REM_ACC, IBV_WC_REM_ACCESS_ERR);
		return -1;
	}
	/* Atomic against other QPs of this device and the CPU. */
	if (pkt->opcode == DROCE_OP_RC_CMP_SWAP) {
		orig = pkt->atm_compare;
		__atomic_compare_exchange_n(p, &orig, pkt->atm_swap_add, 0,
			__ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	} else {
		orig = __atomic_fetch_add(p, pkt->atm_swap_add, __ATOMIC_SEQ_CST);
	}
	qp->msn = droce_psn_add(qp->msn, 1);
	r = res_alloc(qp);
	r->is_atomic = 1;
	r->first_psn = r->last_psn = pkt->psn;
	r->orig = orig;
	r->msn = qp->msn;
	qp->epsn = droce_psn_add(pkt->psn, 1);
	if (!tp_resp_answer_now(qp, r, NULL))
		tp_res_set_pending(qp, r);
	return 0;
}

/* An ATOMIC WRITE or FLUSH done: a responder resource that answers it,
 * and its duplicates, with a READ response ONLY of no payload. */
static void
empty_resp(struct droce_qp *qp, const struct droce_pkt *pkt)
{
	struct tp_res *r;

	qp->msn = droce_psn_add(qp->msn, 1);
	r = res_alloc(qp);
	r->is_empty_resp = 1;
	r->first_psn = r->last_psn = r->cur_psn = pkt->psn;
	r->len = 0;
	r->msn = qp->msn;
	tp_res_set_pending(qp, r);
	qp->epsn = droce_psn_add(pkt->psn, 1);
}

/*
 * IBTA 1.5 ATOMIC WRITE at the expected PSN: 8 bytes to an 8-byte aligned
 * address under an rkey with remote write access (rxe's check_rkey and
 * qp access check ask IB_ACCESS_REMOTE_WRITE, not REMOTE_ATOMIC), stored
 * with one 64-bit store. It takes a responder resource like a READ, and
 * the answer is a zero-length READ response ONLY (tp_resp_tx.c), kept to
 * be replayed for a duplicate: it is never executed twice.
 */
int
tp_resp_atomic_write(struct droce_qp *qp, const struct droce_pkt *pkt)
{
	uint64_t *p, v;

	/* no resource to answer from, a length other than 8, a misaligned
	 * VA: Invalid Request (class C, as rxe) */
	if (qp->max_dest_rd_atomic == 0 ||
			pkt->reth_len != DROCE_ATOMIC_WRITE_LEN ||
			pkt->payload_len != DROCE_ATOMIC_WRITE_LEN ||
			(pkt->reth_va & 7)) {
		tp_resp_error(qp, pkt, DROCE_AETH_NAK_INV_REQ, IBV_WC_REM_INV_REQ_ERR);
		return -1;
	}
	p = (qp->access & IBV_ACCESS_REMOTE_WRITE) ?
		(uint64_t *)tp_rkey_resolve(qp, pkt->reth_rkey, pkt->reth_va,
			DROCE_ATOMIC_WRITE_LEN, IBV_ACCESS_REMOTE_WRITE, NULL) :
		NULL;
	if (p == NULL) {
		tp_resp_error(qp, pkt, DROCE_AETH_NAK_REM_ACC, IBV_WC_REM_ACCESS_ERR);
		return -1;
	}
	/* an MR whose iova and host address disagree mod 8: no single
	 * aligned store reaches it (rxe checks the address it stores to) */
	if ((uintptr_t)p & 7) {
		tp_resp_error(qp, pkt, DROCE_AETH_NAK_INV_REQ, IBV_WC_REM_INV_REQ_ERR);
		return -1;
	}
	/* the bytes as sent; release: what this QP wrote before is seen by
	 * whoever sees the word (rxe: smp_store_release) */
	memcpy(&v, pkt->payload, sizeof(v));
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
	empty_resp(qp, pkt);
	return 0;
}

/*
 * IBTA 1.5 FLUSH at the expected PSN (rxe's process_flush). What this QP
 * placed before it is in memory already: one responder, in PSN order. A
 * placement type the QP's access flags do not allow is an Invalid Request
 * (rxe's check_qp_attr_access), one the MR's (or window's) do not, or a
 * range outside it, a Remote Access error. Global visibility is a fence;
 * persistence writes the range (or the whole MR) back to its file before
 * the answer leaves (tp_flush_persist). It takes a responder resource
 * and is answered like an ATOMIC WRITE; a duplicate is answered again
 * from the resource and not flushed again.
 */
int
tp_resp_flush(struct droce_qp *qp, const struct droce_pkt *pkt)
{
	unsigned int plt = pkt->feth_plt, need = 0;
	uint64_t va = pkt->reth_va, len = pkt->reth_len, iova, mlen;
	struct droce_mr *mr;
	uint8_t *base;

	if (plt & DROCE_FLUSH_GLOBAL)
		need |= DROCE_ACCESS_FLUSH_GLOBAL;
	if (plt & DROCE_FLUSH_PERSISTENT)
		need |= DROCE_ACCESS_FLUSH_PERSISTENT;
	if (qp->max_dest_rd_atomic == 0 || need == 0 ||
			(plt & ~(DROCE_FLUSH_GLOBAL | DROCE_FLUSH_PERSISTENT)) ||
			pkt->feth_sel > DROCE_FLUSH_MR ||
			(qp->access & need) != need) {
		tp_resp_error(qp, pkt, DROCE_AETH_NAK_INV_REQ, IBV_WC_REM_INV_REQ_ERR);
		return -1;
	}
	if (tp_rkey_object(qp, pkt->reth_rkey, need, &mr, &base, &iova,
			&mlen) != 0) {
		tp_resp_error(qp, pkt, DROCE_AETH_NAK_REM_ACC, IBV_WC_REM_ACCESS_ERR);
		return -1;
	}
	/* the whole MR (or window): the RETH's VA and length mean nothing */
	if (pkt->feth_sel == DROCE_FLUSH_MR) {
		va = iova;
		len = mlen;
	} else if (va < iova || len > mlen || va - iova > mlen - len) {
		tp_resp_error(qp, pkt, DROCE_AETH_NAK_REM_ACC, IBV_WC_REM_ACCESS_ERR);
		return -1;
	}
	/* no page faulted in: only what was written needs writing back */
	if ((plt & DROCE_FLUSH_PERSISTENT) &&
			tp_flush_persist(base + (va - iova), len) != 0) {
		qp->st.flush_errors++;
		tp_resp_error(qp, pkt, DROCE_AETH_NAK_REM_ACC, IBV_WC_REM_ACCESS_ERR);
		return -1;
	}
	/* visible to whoever reads after the answer (rxe: wmb()) */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	qp->st.flushes++;
	qp->st.flush_rxe_icrc += pkt->icrc_rxe_flush;
	empty_resp(qp, pkt);
	return 0;
}

/* A duplicate READ, atomic, ATOMIC WRITE or FLUSH: replay from the
 * resources, or drop. */
void
tp_resp_replay(struct droce_qp *qp, const struct droce_pkt *pkt, unsigned int f)
{
	unsigned int i;
	uint64_t off;

	for (i = 0; i < tp_res_count(qp); i++) {
		struct tp_res *r = &qp->res[i];
		int32_t d;

		if (!r->valid)
			continue;
		if (f & (DROCE_OPF_ATOMIC_WRITE | DROCE_OPF_FLUSH)) {
			/* the same empty response again, nothing stored
			 * or flushed */
			if (r->is_empty_resp && r->first_psn == pkt->psn) {
				r->cur_psn = r->first_psn;
				r->sent = 0;
				tp_res_set_pending(qp, r);
				qp->res_replayed = 1;
				qp->st.atomic_replays++;
				return;
			}
			continue;
		}
		if (f & DROCE_OPF_ATOMIC) {
			if (r->is_atomic && r->first_psn == pkt->psn) {
				tp_res_set_pending(qp, r);
				qp->res_replayed = 1;
				qp->st.atomic_replays++;
				return;
			}
			continue;
		}
		if (r->is_atomic || r->is_empty_resp)
			continue;
		d = droce_psn_diff(pkt->psn, r->first_psn);
		if (d < 0 || droce_psn_diff(r->last_psn, pkt->psn) < 0)
			continue;
		/*
		 * must ask for a part of the original, under the same key,
		 * from its PSN's place: to the end, or whole MTUs (the
		 * requester asks again for a hole it found, tp_read.c)
		 */
		off = (uint64_t)d * qp->mtu;
		if (pkt->reth_rkey != r->rkey || pkt->reth_va < r->va ||
				pkt->reth_va - r->va != off ||
				pkt->reth_len > r->len - off ||
				(pkt->reth_len != r->len - off &&
				(pkt->reth_len == 0 ||
				pkt->reth_len % qp->mtu != 0)))
			continue;
		/* a newer duplicate takes the place of the replay going */
		r->cur_psn = pkt->psn;
		r->sent = (uint32_t)off;
		r->end = (uint32_t)(off + pkt->reth_len);
		tp_res_set_pending(qp, r);
		qp->res_replayed = 1;
		qp->st.read_replays++;
		return;
	}
}
