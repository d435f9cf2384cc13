/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * Posting, as ibv_post_send(3) / ibv_post_recv(3) and the QP-state rules
 * say: stop at the first WR that fails, return its errno (EINVAL for a bad
 * value or a state that does not accept WRs, ENOMEM for a full queue),
 * point *bad_wr at it, and post nothing from it on.
 *  - send: RESET, INIT, RTR fail at once; RTS processes; SQD queues
 *    without processing; SQE and ERR accept and flush (WR_FLUSH_ERR).
 *  - receive: RESET fails; INIT and later accept (ERR: flushed).
 */

#include <errno.h>
#include <string.h>

#include "tp_internal.h"
#include "tp_raw.h"

/* The WR's errno, 0 if it may be posted; *lenp: its message length. */
static inline __attribute__((always_inline)) int
check_send_wr(struct droce_qp *qp, const struct ibv_send_wr *wr,
		uint64_t *lenp, unsigned int *flagsp)
{
	const struct tp_wr_opcode_info *wi = tp_wr_opcode(qp->xrc ? qp->xrc :
		qp->type, wr->opcode);
	uint64_t len;

	if (wi == NULL)
		return EINVAL;
	*flagsp = wi->flags;
	/* XRC: every request names the target's SRQ (24 bits, never 0) */
	if (qp->xrc && !(wi->flags & TP_WRF_LOCAL) &&
			(wr->qp_type.xrc.remote_srqn == 0 ||
			wr->qp_type.xrc.remote_srqn > DROCE_PSN_MASK))
		return EINVAL;
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->sq.max_sge ||
			(wr->num_sge > 0 && wr->sg_list == NULL))
		return EINVAL;
	len = wr->num_sge ? tp_sge_total(wr->sg_list, wr->num_sge) : 0;
	if (wi->flags & TP_WRF_FLUSH) {
		/* nothing local; the type a mask of the two kinds, the level
		 * one of two (ibv_wr_flush(3)) */
		uint64_t plt = wr->wr.atomic.swap & 0xff;
		uint64_t sel = wr->wr.atomic.swap >> 8;

		if (wr->num_sge || (wr->send_flags & IBV_SEND_INLINE) ||
				plt == 0 || (plt & ~(uint64_t)(DROCE_FLUSH_GLOBAL |
				DROCE_FLUSH_PERSISTENT)) || sel > DROCE_FLUSH_MR ||
				wr->wr.atomic.compare_add > 1ull << 31)
			return EINVAL;
		len = wr->wr.atomic.compare_add;
	}
	*lenp = len;
	if (len > qp->dev->lim.max_msg_sz)
		return EINVAL;
	if (wr->send_flags & IBV_SEND_INLINE) {
		/* a READ's or an atomic's SGEs receive: nothing to inline */
		if (wi->flags & TP_WRF_RD_ATOMIC)
			return EINVAL;
		/* an ATOMIC WRITE's 8 bytes live in the WQE itself */
		if (len > qp->sq.max_inline &&
				!(wi->flags & TP_WRF_ATOMIC_WRITE))
			return EINVAL;
	}
	if ((wr->send_flags & IBV_SEND_FENCE) && qp->type != IBV_QPT_RC)
		return EINVAL;
	/* 8 bytes, 8-byte aligned remote address (IBTA 9.4.5) */
	if ((wi->flags & TP_WRF_ATOMIC) &&
			((wr->wr.atomic.remote_addr & 7) || len != 8))
		return EINVAL;
	/* IBTA 1.5 ATOMIC WRITE: one 64-bit word, naturally aligned */
	if ((wi->flags & TP_WRF_ATOMIC_WRITE) &&
			((wr->wr.rdma.remote_addr & 7) ||
			len != DROCE_ATOMIC_WRITE_LEN))
		return EINVAL;
	if (wr->opcode == IBV_WR_BIND_MW && wr->bind_mw.mw == NULL)
		return EINVAL;
	if (qp->type == IBV_QPT_RAW_PACKET)
		return tp_raw_check_wr(qp, wr, len);
	if (qp->type == IBV_QPT_UD) {
		if (wr->wr.ud.ah == NULL)
			return EINVAL;
		/* A UD message is one packet. */
		if (len > droce_mtu_to_bytes(droce_eth_mtu_to_path_mtu(
				qp->dev->conf.eth_mtu)))
			return EINVAL;
	}
	return 0;
}

/* The WRs most programs post on an RC QP, with one SGE: the ones that
 * may be inline (their payload goes out), then READ and atomics. */
#define FAST_OUT (1u << IBV_WR_SEND | 1u << IBV_WR_SEND_WITH_IMM | \
	1u << IBV_WR_RDMA_WRITE | 1u << IBV_WR_RDMA_WRITE_WITH_IMM)
#define FAST_OPS (FAST_OUT | 1u << IBV_WR_RDMA_READ | \
	1u << IBV_WR_ATOMIC_FETCH_AND_ADD | 1u << IBV_WR_ATOMIC_CMP_AND_SWP)
/* ... and on a UD QP */
#define FAST_UD_OPS (1u << IBV_WR_SEND | 1u << IBV_WR_SEND_WITH_IMM)


/*
 * A valid WR of the common shape, told in a few tests: what
 * check_send_wr would accept for it (its length within max_msg_sz, an
 * inline one within max_inline and not a READ or atomic, an atomic's 8
 * aligned bytes; RC takes FENCE; UD: a SEND to an AH, one packet, no
 * FENCE). One SGE, or two inline ones (a header and a payload: UCX's
 * short messages). Anything else, valid or not, goes the general way,
 * which names the errno. *lenp: the length.
 */
static inline __attribute__((always_inline)) bool
fast_shape(const struct droce_qp *qp, const struct ibv_send_wr *wr,
		uint64_t *lenp)
{
	uint32_t op = (uint32_t)wr->opcode, len;

	if (!qp->post_rc || op >= 32 || !((FAST_OPS >> op) & 1) ||
			wr->sg_list == NULL)
		return false;
	if (wr->num_sge != 1) {
		uint64_t two;

		if (wr->num_sge != 2 || !(wr->send_flags & IBV_SEND_INLINE) ||
				!((FAST_OUT >> op) & 1) || qp->sq.max_sge < 2)
			return false;
		two = (uint64_t)wr->sg_list[0].length + wr->sg_list[1].length;
		*lenp = two;
		/* none: the general way keeps its two SGEs */
		return two != 0 && two <= qp->sq.max_inline;
	}
	len = wr->sg_list[0].length;
	*lenp = len;
	if (wr->send_flags & IBV_SEND_INLINE)
		return ((FAST_OUT >> op) & 1) && len <= qp->sq.max_inline;
	if (len > qp->dev->lim.max_msg_sz)
		return false;
	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD ||
			op == IBV_WR_ATOMIC_CMP_AND_SWP)
		return !(wr->wr.atomic.remote_addr & 7) && len == 8;
	return true;
}

/* The same on a UD QP: a SEND to an AH, one packet (the port's MTU), no
 * FENCE. */
static inline __attribute__((always_inline)) bool
fast_shape_ud(const struct droce_qp *qp, const struct ibv_send_wr *wr,
		uint64_t *lenp)
{
	uint32_t op = (uint32_t)wr->opcode;
	uint64_t len;

	if (!qp->post_ud || op >= 32 || !((FAST_UD_OPS >> op) & 1) ||
			wr->sg_list == NULL || wr->wr.ud.ah == NULL ||
			(wr->send_flags & IBV_SEND_FENCE))
		return false;
	if (wr->num_sge == 1)
		len = wr->sg_list[0].length;
	else if (wr->num_sge == 2 && (wr->send_flags & IBV_SEND_INLINE) &&
			qp->sq.max_sge >= 2)
		len = (uint64_t)wr->sg_list[0].length + wr->sg_list[1].length;
	else
		return false;
	*lenp = len;
	if (len > qp->mtu)
		return false;
	if (wr->send_flags & IBV_SEND_INLINE)
		return len <= qp->sq.max_inline && (len != 0 ||
			wr->num_sge == 1);
	return true;
}

/* f: the opcode's enum tp_wr_flag; fast: a WR fast_shape took, which
 * folds away what that shape never has (ud: a UD one) */
static inline __attribute__((always_inline)) void
fill_swqe(struct droce_qp *qp, struct tp_swqe *w, const struct ibv_send_wr *wr,
		uint64_t len, unsigned int f, bool fast, bool ud)
{
	w->wr_id = wr->wr_id;
	w->opcode = (uint8_t)wr->opcode;
	w->wr_flags = (uint16_t)f;
	w->flags = wr->send_flags;
	w->signaled = qp->sq_sig_all || (wr->send_flags & IBV_SEND_SIGNALED);
	w->imm_or_inv = (f & TP_WRF_INV) ? wr->invalidate_rkey : wr->imm_data;
	w->num_sge = (uint32_t)wr->num_sge;
	w->length = len;
	w->state = TP_WQE_POSTED;
	w->status = IBV_WC_SUCCESS;
	w->read_done = 0;
	w->rd_counted = 0;
	w->rd_inflight = 0;
	w->inline_data = NULL;
	if (f & (TP_WRF_WRITE | TP_WRF_READ | TP_WRF_ATOMIC_WRITE)) {
		w->remote_addr = wr->wr.rdma.remote_addr;
		w->rkey = wr->wr.rdma.rkey;
	} else if (f & (TP_WRF_ATOMIC | TP_WRF_FLUSH)) {
		/* a FLUSH: length in compare_add, type and level in swap */
		w->remote_addr = wr->wr.atomic.remote_addr;
		w->rkey = wr->wr.atomic.rkey;
		w->compare_add = wr->wr.atomic.compare_add;
		w->swap = wr->wr.atomic.swap;
	} else if (!fast && wr->opcode == IBV_WR_BIND_MW) {
		w->mw = droce_mw_from_ibv(wr->bind_mw.mw);
		w->bind = wr->bind_mw.bind_info;
		w->bind_rkey = wr->bind_mw.rkey;
	}
	if (fast) {
		if (ud) {
			w->av = droce_ah_from_ibv(wr->wr.ud.ah)->av;
			w->remote_qpn = wr->wr.ud.remote_qpn;
			w->remote_qkey = wr->wr.ud.remote_qkey;
		}
		if ((wr->send_flags & IBV_SEND_INLINE) && len) {
			/* copy now: the caller may reuse its buffer at once */
			uint32_t first = wr->sg_list[0].length;

			w->inline_data = qp->sq.inline_buf +
				(size_t)(w - qp->sq.wqe) * qp->sq.max_inline;
			memcpy(w->inline_data,
				(void *)(uintptr_t)wr->sg_list[0].addr, first);
			if (wr->num_sge == 2)
				memcpy(w->inline_data + first,
					(void *)(uintptr_t)wr->sg_list[1].addr,
					wr->sg_list[1].length);
			w->num_sge = 0;
		} else {
			w->sge[0] = wr->sg_list[0];
		}
		return;
	}
	if (f & TP_WRF_FLUSH)
		w->length = wr->wr.atomic.compare_add;
	if (qp->type == IBV_QPT_UD) {
		w->av = droce_ah_from_ibv(wr->wr.ud.ah)->av;
		w->remote_qpn = wr->wr.ud.remote_qpn;
		w->remote_qkey = wr->wr.ud.remote_qkey;
	} else if (qp->xrc) {
		w->remote_qpn = wr->qp_type.xrc.remote_srqn;	/* XRCETH */
	}
	if ((wr->send_flags & IBV_SEND_INLINE) &&
			(f & TP_WRF_ATOMIC_WRITE)) {
		/* the word goes in the WQE, whatever max_inline_data says:
		 * ibv_wr_atomic_write hands a pointer the caller may reuse */
		uint8_t *d = (uint8_t *)&w->swap;
		int i;

		for (i = 0; i < wr->num_sge; i++) {
			memcpy(d, (void *)(uintptr_t)wr->sg_list[i].addr,
				wr->sg_list[i].length);
			d += wr->sg_list[i].length;
		}
		w->inline_data = (uint8_t *)&w->swap;
		w->num_sge = 0;
	} else if ((wr->send_flags & IBV_SEND_INLINE) && w->length) {
		/* Copy now: the caller may reuse its buffer at once. */
		uint8_t *d = qp->sq.inline_buf + (size_t)(w - qp->sq.wqe) *
			qp->sq.max_inline;
		int i;

		for (i = 0; i < wr->num_sge; i++) {
			memcpy(d, (void *)(uintptr_t)wr->sg_list[i].addr,
				wr->sg_list[i].length);
			d += wr->sg_list[i].length;
		}
		w->inline_data = qp->sq.inline_buf +
			(size_t)(w - qp->sq.wqe) * qp->sq.max_inline;
		w->num_sge = 0;
	} else if (w->num_sge == 1) {
		w->sge[0] = wr->sg_list[0];	/* the common case */
	} else if (w->num_sge) {
		memcpy(w->sge, wr->sg_list, sizeof(*w->sge) * w->num_sge);
	}
	if (qp->type == IBV_QPT_RAW_PACKET)
		tp_raw_fill(qp, w, wr);
}

/* A WR fast_shape_ud took onto the send queue (out of the RC loop's way). */
static __attribute__((noinline)) void
post_ud_fast(struct droce_qp *qp, const struct ibv_send_wr *wr, uint64_t len)
{
	fill_swqe(qp, tp_sq_wqe(qp, qp->sq.head), wr, len,
		tp_wr_opcode_info[wr->opcode].flags, true, true);
	qp->sq.head++;
}

/* inlined into each entry point: all_or_nothing a constant there */
static inline __attribute__((always_inline)) int
post_send(struct droce_qp *qp, struct ibv_send_wr *wr,
		struct ibv_send_wr **bad_wr, bool all_or_nothing)
{
	struct ibv_send_wr *w;
	uint64_t len;
	unsigned int f;
	uint32_t n = 0;
	int rc;

	switch (qp->state) {
	case IBV_QPS_RESET:
	case IBV_QPS_INIT:
	case IBV_QPS_RTR:
		*bad_wr = wr;
		return EINVAL;
	default:
		break;
	}
	if (all_or_nothing) {
		/* validate the whole list before the first one is queued */
		for (w = wr; w != NULL; w = w->next, n++) {
			rc = check_send_wr(qp, w, &len, &f);
			if (rc == 0 && qp->sq.head - qp->sq.tail + n >= qp->sq.size)
				rc = ENOMEM;
			if (rc) {
				*bad_wr = w;
				return rc;
			}
		}
	}
	for (; wr != NULL; wr = wr->next) {
		if (!all_or_nothing && fast_shape(qp, wr, &len)) {
			if (qp->sq.head - qp->sq.tail >= qp->sq.size) {
				*bad_wr = wr;
				return ENOMEM;
			}
			fill_swqe(qp, tp_sq_wqe(qp, qp->sq.head), wr, len,
				tp_wr_opcode_info[wr->opcode].flags, true, false);
			qp->sq.head++;
			continue;
		}
		if (!all_or_nothing && fast_shape_ud(qp, wr, &len)) {
			if (qp->sq.head - qp->sq.tail >= qp->sq.size) {
				*bad_wr = wr;
				return ENOMEM;
			}
			post_ud_fast(qp, wr, len);
			continue;
		}
		if (all_or_nothing) {
			len = wr->num_sge ? tp_sge_total(wr->sg_list,
				wr->num_sge) : 0;
			f = tp_wr_opcode_info[wr->opcode].flags;
		} else {
			rc = check_send_wr(qp, wr, &len, &f);
			if (rc == 0 && qp->sq.head - qp->sq.tail >= qp->sq.size)
				rc = ENOMEM;
			if (rc) {
				*bad_wr = wr;
				return rc;
			}
		}
		fill_swqe(qp, tp_sq_wqe(qp, qp->sq.head), wr, len, f, false,
			false);
		qp->sq.head++;
	}
	qp->posted = 1;
	if (qp->state == IBV_QPS_ERR || qp->state == IBV_QPS_SQE)
		tp_qp_flush(qp);
	return 0;
}

int
droce_qp_post_send(struct droce_qp *qp, struct ibv_send_wr *wr,
		struct ibv_send_wr **bad_wr)
{
	return post_send(qp, wr, bad_wr, false);
}

int
droce_qp_post_send_all(struct droce_qp *qp, struct ibv_send_wr *wr,
		struct ibv_send_wr **bad_wr)
{
	return post_send(qp, wr, bad_wr, true);
}

int
droce_qp_post_refused(struct droce_qp *qp, uint64_t wr_id, uint32_t wr_opcode,
		enum ibv_wc_status status)
{
	struct tp_swqe *w;

	if (qp->state != IBV_QPS_ERR && qp->state != IBV_QPS_SQE)
		return EINVAL;
	if (qp->sq.head - qp->sq.tail >= qp->sq.size)
		return ENOMEM;
	w = tp_sq_wqe(qp, qp->sq.head);
	w->wr_id = wr_id;
	/* an opcode the QP does not take completes as a send */
	w->opcode = tp_wr_opcode(qp->type, (enum ibv_wr_opcode)wr_opcode) !=
		NULL ? (uint8_t)wr_opcode : IBV_WR_SEND;
	w->wr_flags = 0;
	w->flags = 0;
	w->signaled = 1;
	w->num_sge = 0;
	w->length = 0;
	w->inline_data = NULL;
	w->read_done = w->rd_counted = w->rd_inflight = 0;
	w->state = TP_WQE_DONE;
	w->status = status;
	qp->sq.head++;
	tp_qp_flush(qp);
	return 0;
}

int
droce_qp_post_recv(struct droce_qp *qp, struct ibv_recv_wr *wr,
		struct ibv_recv_wr **bad_wr)
{
	int rc;

	/* XRC QPs have no receive queue: their SRQs take the receives */
	if (qp->srq != NULL || qp->xrc || qp->state == IBV_QPS_RESET) {
		*bad_wr = wr;
		return EINVAL;
	}
	rc = tp_rq_post(&qp->rq, wr, bad_wr);
	if (qp->state == IBV_QPS_ERR)
		tp_qp_flush(qp);
	return rc;
}
