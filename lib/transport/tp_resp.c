/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * Responder: executes request packets in PSN order (IBTA 9.7.5).
 *  - expected PSN: execute, advance; ACK when asked (coalesced: one
 *    cumulative ACK per QP per progress pass);
 *  - duplicate: SEND/WRITE re-ACKed, READ replayed from the PSN asked,
 *    atomic answered from the replay cache, never executed twice;
 *  - ahead: one PSN-sequence-error NAK per gap, the rest dropped.
 * Errors: RNR NAK when no receive WQE; remote access NAK for a bad rkey,
 * bounds or permission; invalid request NAK for a malformed sequence,
 * length or misaligned atomic. UC never answers; UD has no sequence.
 */

#include <string.h>

#include "tp_internal.h"

static void
queue_ack(struct droce_qp *qp, uint32_t psn, uint8_t syndrome)
{
	int is_nak = DROCE_AETH_TYPE(syndrome) != 0;

	/* A NAK is not overridden by a later ACK; a later NAK wins. */
	if (qp->ack_pending && qp->ack_is_nak && !is_nak)
		return;
	qp->ack_pending = 1;
	qp->ack_psn = psn;
	qp->ack_syndrome = syndrome;
	qp->ack_is_nak = is_nak;
}

static void
rx_complete(struct droce_qp *qp, struct tp_rwqe *rw, enum ibv_wc_status st,
		enum ibv_wc_opcode op, uint32_t len, const struct droce_pkt *pkt,
		uint32_t src_qp, unsigned int flags)
{
	struct ibv_wc *wc = tp_cq_slot(qp->rcq);

	if (wc == NULL)
		return;
	wc->wr_id = rw->wr_id;
	wc->status = st;
	wc->opcode = op;
	wc->byte_len = len;
	wc->qp_num = qp->qpn;
	wc->src_qp = src_qp;
	wc->wc_flags = flags;
	if (pkt != NULL && (flags & IBV_WC_WITH_IMM))
		wc->imm_data = pkt->imm_data;
	if (pkt != NULL && (flags & IBV_WC_WITH_INV))
		wc->invalidated_rkey = pkt->ieth_rkey;
	tp_cq_commit(qp->rcq, pkt != NULL && pkt->se);
}

/* Take a receive WQE from the QP's RQ or its SRQ (SRQ limit event). */
static int
take_rwqe(struct droce_qp *qp, struct tp_rwqe *rw)
{
	if (qp->srq != NULL) {
		struct droce_srq *srq = qp->srq;

		if (tp_rq_pop(&srq->rq, rw) != 0)
			return -1;
		if (srq->limit && tp_rq_count(&srq->rq) < srq->limit) {
			srq->limit = 0;	/* one event per arming */
			tp_async(qp->dev, IBV_EVENT_SRQ_LIMIT_REACHED, srq);
		}
		return 0;
	}
	return tp_rq_pop(&qp->rq, rw);
}

/* Responder-side fatal error: NAK (RC), complete the receive, QP to ERR. */
static void
resp_error(struct droce_qp *qp, const struct droce_pkt *pkt, uint8_t nak,
		enum ibv_wc_status st)
{
	if (qp->type == IBV_QPT_RC) {
		queue_ack(qp, pkt->psn, nak);
		if (nak == DROCE_AETH_NAK_INV_REQ)
			qp->st.nak_inv_tx++;
		else if (nak == DROCE_AETH_NAK_REM_ACC)
			qp->st.nak_acc_tx++;
		else
			qp->st.nak_op_tx++;
	}
	if (qp->rx_have_wqe) {
		qp->rx_have_wqe = 0;
		rx_complete(qp, &qp->rx_wqe, st, IBV_WC_RECV,
			(uint32_t)qp->rx_off, NULL, 0, 0);
	}
	qp->rx_write_base = NULL;
	qp->rx_msg = 0;
	if (qp->type == IBV_QPT_RC) {
		/* The NAK must still go out: the QP errors after sending it. */
		qp->rx_err = 1;
	} else {
		tp_qp_to_error(qp);
	}
}

static void
write_grh(uint8_t *grh, const uint8_t *frame, const struct droce_pkt *pkt)
{
	const uint8_t *ip = frame + pkt->l3_off;

	if (pkt->ip_ver == 4) {
		memset(grh, 0, 20);
		memcpy(grh + 20, ip, 20);
	} else {
		memcpy(grh, ip, 40);
	}
}

static void
ud_rx(struct droce_qp *qp, const struct droce_pkt *pkt, const uint8_t *frame)
{
	struct tp_rwqe rw;
	uint8_t grh[DROCE_GRH_LEN];
	unsigned int flags = IBV_WC_GRH;

	if (pkt->deth_qkey != qp->qkey) {
		qp->queue->st.rx_drop_qkey++;
		return;
	}
	if (take_rwqe(qp, &rw) != 0) {
		qp->queue->st.rx_drop_state++;	/* no receive WQE: dropped */
		return;
	}
	write_grh(grh, frame, pkt);
	if (tp_sge_total(rw.sge, rw.num_sge) < DROCE_GRH_LEN + pkt->payload_len) {
		rx_complete(qp, &rw, IBV_WC_LOC_LEN_ERR, IBV_WC_RECV, 0, NULL,
			pkt->deth_sqpn, 0);
		tp_qp_to_error(qp);
		return;
	}
	if (tp_sge_copy_in(qp->dev, qp->pd, rw.sge, rw.num_sge, 0, grh,
			DROCE_GRH_LEN) != 0 ||
			(pkt->payload_len && tp_sge_copy_in(qp->dev, qp->pd,
			rw.sge, rw.num_sge, DROCE_GRH_LEN, pkt->payload,
			pkt->payload_len) != 0)) {
		rx_complete(qp, &rw, IBV_WC_LOC_PROT_ERR, IBV_WC_RECV, 0, NULL,
			pkt->deth_sqpn, 0);
		tp_qp_to_error(qp);
		return;
	}
	if (pkt->opcode == DROCE_OP_UD_SEND_ONLY_IMM)
		flags |= IBV_WC_WITH_IMM;
	rx_complete(qp, &rw, IBV_WC_SUCCESS, IBV_WC_RECV,
		DROCE_GRH_LEN + pkt->payload_len, pkt, pkt->deth_sqpn, flags);
}

/* SEND packet at the expected PSN. 0 executed, -1 refused (RNR/err). */
static int
exec_send(struct droce_qp *qp, const struct droce_pkt *pkt, unsigned int f)
{
	unsigned int flags = 0;

	if (f & DROCE_OPF_START) {
		if (!qp->rx_have_wqe) {
			if (take_rwqe(qp, &qp->rx_wqe) != 0) {
				if (qp->type == IBV_QPT_RC) {
					queue_ack(qp, pkt->psn, DROCE_AETH_RNR(
						qp->min_rnr_timer));
					qp->st.rnr_nak_tx++;
					/* stay quiet until the retry comes */
					qp->nak_sent = 1;
				} else {
					qp->uc_drop = 1;
				}
				return -1;
			}
			qp->rx_have_wqe = 1;
		}
		qp->rx_off = 0;
		qp->rx_msg = (f & DROCE_OPF_END) ? 0 : 1;
	}
	if (pkt->payload_len) {
		int rc = tp_sge_copy_in(qp->dev, qp->pd, qp->rx_wqe.sge,
			qp->rx_wqe.num_sge, qp->rx_off, pkt->payload,
			pkt->payload_len);

		if (rc != 0) {
			resp_error(qp, pkt, rc == -EMSGSIZE ?
				DROCE_AETH_NAK_INV_REQ : DROCE_AETH_NAK_REM_OP,
				rc == -EMSGSIZE ? IBV_WC_LOC_LEN_ERR :
				IBV_WC_LOC_PROT_ERR);
			return -1;
		}
	}
	qp->rx_off += pkt->payload_len;
	if (f & DROCE_OPF_END) {
		if (f & DROCE_OPF_IMM)
			flags |= IBV_WC_WITH_IMM;
		if (f & DROCE_OPF_INV) {
			if (tp_invalidate_rkey(qp, pkt->ieth_rkey) != 0) {
				resp_error(qp, pkt, DROCE_AETH_NAK_INV_REQ,
					IBV_WC_REM_INV_REQ_ERR);
				return -1;
			}
			flags |= IBV_WC_WITH_INV;
		}
		qp->rx_have_wqe = 0;
		qp->rx_msg = 0;
		rx_complete(qp, &qp->rx_wqe, IBV_WC_SUCCESS, IBV_WC_RECV,
			(uint32_t)qp->rx_off, pkt, 0, flags);
		qp->msn = droce_psn_add(qp->msn, 1);
	}
	return 0;
}

static int
exec_write(struct droce_qp *qp, const struct droce_pkt *pkt, unsigned int f)
{
	/*
	 * A WRITE with immediate consumes a receive WQE with its last
	 * packet: take it before touching anything, so that an RNR NAK
	 * leaves the packet to be retried as if it never came.
	 */
	if ((f & DROCE_OPF_IMM) && (f & DROCE_OPF_END) && !qp->rx_have_wqe) {
		if (take_rwqe(qp, &qp->rx_wqe) != 0) {
			if (qp->type == IBV_QPT_RC) {
				queue_ack(qp, pkt->psn, DROCE_AETH_RNR(
					qp->min_rnr_timer));
				qp->st.rnr_nak_tx++;
				qp->nak_sent = 1;
			}
			return -1;
		}
		qp->rx_have_wqe = 1;
	}
	if (f & DROCE_OPF_START) {
		qp->rx_write_left = pkt->reth_len;
		qp->rx_write_base = NULL;
		if (pkt->reth_len) {
			qp->rx_write_base = (qp->access & IBV_ACCESS_REMOTE_WRITE) ?
				tp_rkey_resolve(qp, pkt->reth_rkey, pkt->reth_va,
					pkt->reth_len, IBV_ACCESS_REMOTE_WRITE, NULL) :
				NULL;
			if (qp->rx_write_base == NULL) {
				if (qp->type == IBV_QPT_RC)
					resp_error(qp, pkt, DROCE_AETH_NAK_REM_ACC,
						IBV_WC_REM_ACCESS_ERR);
				return -1;
			}
		}
		qp->rx_off = 0;
		qp->rx_msg = (f & DROCE_OPF_END) ? 0 : 2;
	}
	if (pkt->payload_len > qp->rx_write_left) {
		if (qp->type == IBV_QPT_RC)
			resp_error(qp, pkt, DROCE_AETH_NAK_INV_REQ,
				IBV_WC_REM_INV_REQ_ERR);
		return -1;
	}
	if (pkt->payload_len)
		memcpy(qp->rx_write_base + qp->rx_off, pkt->payload,
			pkt->payload_len);
	qp->rx_off += pkt->payload_len;
	qp->rx_write_left -= pkt->payload_len;
	if (f & DROCE_OPF_END) {
		if (qp->rx_write_left != 0) {
			if (qp->type == IBV_QPT_RC)
				resp_error(qp, pkt, DROCE_AETH_NAK_INV_REQ,
					IBV_WC_REM_INV_REQ_ERR);
			return -1;
		}
		if (f & DROCE_OPF_IMM) {
			qp->rx_have_wqe = 0;
			rx_complete(qp, &qp->rx_wqe, IBV_WC_SUCCESS,
				IBV_WC_RECV_RDMA_WITH_IMM, (uint32_t)qp->rx_off,
				pkt, 0, IBV_WC_WITH_IMM);
		}
		qp->rx_write_base = NULL;
		qp->rx_msg = 0;
		qp->msn = droce_psn_add(qp->msn, 1);
	}
	return 0;
}

/* Responder resources in use: max_dest_rd_atomic of them (at least one). */
static inline unsigned int
res_count(const struct droce_qp *qp)
{
	uint32_t n = qp->max_dest_rd_atomic ? qp->max_dest_rd_atomic : 1;

	return n > TP_MAX_RD_ATOMIC ? TP_MAX_RD_ATOMIC : n;
}

static inline void
res_set_pending(struct droce_qp *qp, struct tp_res *r)
{
	if (!r->pending)
		qp->res_pending++;
	r->pending = 1;
}

static inline void
res_clear_pending(struct droce_qp *qp, struct tp_res *r)
{
	if (r->pending)
		qp->res_pending--;
	r->pending = 0;
}

static struct tp_res *
res_alloc(struct droce_qp *qp)
{
	uint32_t n = res_count(qp);
	uint32_t i = qp->res_next % n;
	struct tp_res *r = &qp->res[i];

	/* A ring: the oldest is recycled, as rxe does, without a NAK; a
	 * requester past max_dest_rd_atomic loses its oldest responses. */
	if (r->pending) {
		res_clear_pending(qp, r);
		if (qp->res_send % n == i)
			qp->res_send = (i + 1) % n;
	}
	qp->res_next = (i + 1) % n;
	memset(r, 0, sizeof(*r));
	r->valid = 1;
	return r;
}

static int
exec_read(struct droce_qp *qp, const struct droce_pkt *pkt)
{
	struct tp_res *r;
	uint8_t *base = NULL;
	uint32_t npsn;

	if (qp->max_dest_rd_atomic == 0) {
		resp_error(qp, pkt, DROCE_AETH_NAK_INV_REQ, IBV_WC_REM_INV_REQ_ERR);
		return -1;
	}
	if (pkt->reth_len) {
		base = (qp->access & IBV_ACCESS_REMOTE_READ) ?
			tp_rkey_resolve(qp, pkt->reth_rkey, pkt->reth_va,
				pkt->reth_len, IBV_ACCESS_REMOTE_READ, NULL) : NULL;
		if (base == NULL) {
			resp_error(qp, pkt, DROCE_AETH_NAK_REM_ACC,
				IBV_WC_REM_ACCESS_ERR);
			return -1;
		}
	}
	npsn = (uint32_t)(((uint64_t)pkt->reth_len + qp->mtu - 1) / qp->mtu);
	if (npsn == 0)
		npsn = 1;
	qp->msn = droce_psn_add(qp->msn, 1);
	r = res_alloc(qp);
	r->first_psn = pkt->psn;
	r->last_psn = droce_psn_add(pkt->psn, npsn - 1);
	r->va = pkt->reth_va;
	r->rkey = pkt->reth_rkey;
	r->len = pkt->reth_len;
	r->base = base;
	r->cur_psn = pkt->psn;
	r->sent = 0;
	res_set_pending(qp, r);
	r->msn = qp->msn;
	qp->epsn = droce_psn_add(pkt->psn, npsn);
	return 0;
}

static int
exec_atomic(struct droce_qp *qp, const struct droce_pkt *pkt)
{
	struct tp_res *r;
	uint64_t *p, orig;

	if (pkt->atm_va & 7) {
		resp_error(qp, pkt, DROCE_AETH_NAK_INV_REQ, IBV_WC_REM_INV_REQ_ERR);
		return -1;
	}
	p = (qp->access & IBV_ACCESS_REMOTE_ATOMIC) ?
		(uint64_t *)tp_rkey_resolve(qp, pkt->atm_rkey, pkt->atm_va, 8,
			IBV_ACCESS_REMOTE_ATOMIC, NULL) : NULL;
	if (p == NULL) {
		resp_error(qp, pkt, DROCE_AETH_NAK_REM_ACC, IBV_WC_REM_ACCESS_ERR);
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
	res_set_pending(qp, r);
	qp->epsn = droce_psn_add(pkt->psn, 1);
	return 0;
}

/* A duplicate READ or atomic: replay from the resources, or drop. */
static void
replay(struct droce_qp *qp, const struct droce_pkt *pkt, unsigned int f)
{
	unsigned int i;

	for (i = 0; i < res_count(qp); i++) {
		struct tp_res *r = &qp->res[i];
		int32_t d;

		if (!r->valid)
			continue;
		if (f & DROCE_OPF_ATOMIC) {
			if (r->is_atomic && r->first_psn == pkt->psn) {
				res_set_pending(qp, r);
				qp->res_replayed = 1;
				qp->st.atomic_replays++;
				return;
			}
			continue;
		}
		if (r->is_atomic)
			continue;
		d = droce_psn_diff(pkt->psn, r->first_psn);
		if (d < 0 || droce_psn_diff(r->last_psn, pkt->psn) < 0)
			continue;
		/* must ask for a part of the original, under the same key */
		if (pkt->reth_rkey != r->rkey || pkt->reth_va < r->va ||
				pkt->reth_va - r->va != (uint64_t)d * qp->mtu ||
				pkt->reth_len != r->len - (uint32_t)d * qp->mtu)
			continue;
		r->cur_psn = pkt->psn;
		r->sent = (uint32_t)d * qp->mtu;
		res_set_pending(qp, r);
		qp->res_replayed = 1;
		qp->st.read_replays++;
		return;
	}
}

/* Does this packet continue (or start) the message sequence correctly? */
static int
seq_ok(const struct droce_qp *qp, const struct droce_pkt *pkt, unsigned int f)
{
	int kind = (f & DROCE_OPF_SEND) ? 1 : (f & DROCE_OPF_WRITE) ? 2 : 3;

	if (f & DROCE_OPF_START) {
		if (qp->rx_msg != 0)
			return 0;
	} else if (qp->rx_msg != kind) {
		return 0;
	}
	/* Only the packet that ends a message may be short. */
	if (!(f & DROCE_OPF_END) && pkt->payload_len != qp->mtu)
		return 0;
	return 1;
}

void
tp_resp_rx_frame(struct droce_qp *qp, const struct droce_pkt *pkt,
		const uint8_t *frame)
{
	const struct droce_opcode_info *oi = &droce_opcode_info[pkt->opcode];
	unsigned int f = oi->flags;
	int32_t d;

	if (qp->state != IBV_QPS_RTR && qp->state != IBV_QPS_RTS &&
			qp->state != IBV_QPS_SQD && qp->state != IBV_QPS_SQE) {
		qp->queue->st.rx_drop_state++;
		return;
	}
	if (qp->type == IBV_QPT_UD) {
		ud_rx(qp, pkt, frame);
		return;
	}
	if (qp->rx_err)
		return;	/* waiting to send the NAK, then to ERR */

	d = droce_psn_diff(pkt->psn, qp->epsn);
	if (qp->type == IBV_QPT_UC) {
		if (d != 0) {
			/* Lost packets: abandon the message, keep its WQE. */
			qp->st.out_of_seq_rx++;
			qp->rx_off = 0;
			qp->rx_write_base = NULL;
			qp->rx_msg = 0;
			qp->uc_drop = 1;
		}
		qp->epsn = droce_psn_add(pkt->psn, 1);
		if (f & DROCE_OPF_START)
			qp->uc_drop = 0;
		if (qp->uc_drop) {
			qp->st.rx_drop_uc++;
			return;
		}
		if (!seq_ok(qp, pkt, f)) {
			qp->rx_msg = 0;
			qp->uc_drop = 1;
			qp->st.rx_drop_uc++;
			return;
		}
		if (f & DROCE_OPF_SEND)
			exec_send(qp, pkt, f);
		else
			exec_write(qp, pkt, f);
		return;
	}

	/* RC */
	if (d > 0) {
		qp->st.out_of_seq_rx++;
		if (!qp->nak_sent) {
			qp->nak_sent = 1;
			queue_ack(qp, qp->epsn, DROCE_AETH_NAK_PSN_SEQ);
			qp->st.nak_seq_tx++;
		}
		return;
	}
	if (d < 0) {
		qp->st.dup_rx++;
		if (f & (DROCE_OPF_READ | DROCE_OPF_ATOMIC))
			replay(qp, pkt, f);
		else
			queue_ack(qp, droce_psn_add(qp->epsn, DROCE_PSN_MASK),
				DROCE_AETH_ACK_NOCREDIT);
		return;
	}
	qp->nak_sent = 0;
	/* Opcode sequence (IBTA 9.7.5.1.3): continue what is open. */
	if (!seq_ok(qp, pkt, f)) {
		resp_error(qp, pkt, DROCE_AETH_NAK_INV_REQ,
			IBV_WC_REM_INV_REQ_ERR);
		return;
	}
	if (f & DROCE_OPF_READ) {
		if (exec_read(qp, pkt) == 0)
			qp->nak_sent = 0;
		return;
	}
	if (f & DROCE_OPF_ATOMIC) {
		exec_atomic(qp, pkt);
		return;
	}
	if (((f & DROCE_OPF_SEND) ? exec_send(qp, pkt, f) :
			exec_write(qp, pkt, f)) != 0)
		return;
	qp->epsn = droce_psn_add(pkt->psn, 1);
	if (pkt->ackreq)
		queue_ack(qp, pkt->psn, DROCE_AETH_ACK_NOCREDIT);
}

/* ---- transmit side of the responder ---- */

static int
send_ack(struct droce_qp *qp)
{
	struct droce_tp_queue *q = qp->queue;
	struct droce_txbuf *b;
	struct droce_pkt p;	/* BTH and AETH: the rest is qp->htmpl */
	uint8_t *buf;
	int hlen;

	buf = tp_tx_get(q, DROCE_MAX_HDR_LEN + 8, &b);
	if (buf == NULL)
		return 0;
	p.se = 0;
	p.ackreq = 0;
	p.opcode = DROCE_OP_RC_ACK;
	p.dqpn = qp->dest_qpn;
	p.psn = qp->ack_psn;
	p.aeth_syndrome = qp->ack_syndrome;
	p.aeth_msn = qp->msn;
	p.payload_len = 0;
	hlen = droce_wire_build_hdr_tmpl(&qp->htmpl, &p, buf);
	tp_tx_done(qp, b, tp_finish(&p, buf, (uint32_t)hlen));
	if (!qp->ack_is_nak)
		qp->st.acks_tx++;
	qp->ack_pending = 0;
	return 1;
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

/* One READ response packet or one atomic ACK from resource r. */
static int
send_res(struct droce_qp *qp, struct tp_res *r)
{
	struct droce_tp_queue *q = qp->queue;
	struct droce_txbuf *b;
	struct droce_pkt p;	/* BTH and after: the rest is qp->htmpl */
	uint32_t plen = 0;
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
		p.opcode = DROCE_OP_RC_ATOMIC_ACK;
		p.psn = r->first_psn;
		p.atmack_orig = r->orig;
		res_clear_pending(qp, r);
	} else {
		plen = r->len - r->sent > qp->mtu ? qp->mtu : r->len - r->sent;
		first = r->sent == 0;
		last = r->sent + plen >= r->len;
		p.opcode = first && last ? DROCE_OP_RC_READ_RESP_ONLY :
			first ? DROCE_OP_RC_READ_RESP_FIRST :
			last ? DROCE_OP_RC_READ_RESP_LAST :
			DROCE_OP_RC_READ_RESP_MIDDLE;
		p.psn = r->cur_psn;
	}
	p.payload_len = plen;
	hlen = droce_wire_build_hdr_tmpl(&qp->htmpl, &p, buf);
	if (plen && !zc_read_resp(qp, r, b, buf, (uint32_t)hlen, plen)) {
		memcpy(buf + hlen, r->base + r->sent, plen);
		tp_tx_done(qp, b, tp_finish(&p, buf, (uint32_t)hlen));
	} else if (plen == 0) {
		tp_tx_done(qp, b, tp_finish(&p, buf, (uint32_t)hlen));
	}
	if (!r->is_atomic) {
		r->sent += plen;
		r->cur_psn = droce_psn_add(r->cur_psn, 1);
		if (r->sent >= r->len)
			res_clear_pending(qp, r);
	}
	return 1;
}

/* max_dest_rd_atomic changed (SQD to SQD): resources past the new count
 * are dropped, the rest answered by PSN. */
void
tp_resp_res_resized(struct droce_qp *qp)
{
	unsigned int i, n = res_count(qp);

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
	return qp->ack_pending || qp->res_pending;
}

int
tp_resp_progress(struct droce_qp *qp)
{
	unsigned int i, n = res_count(qp), k;
	int sent = 0;

	if (qp->type != IBV_QPT_RC || qp->state == IBV_QPS_ERR ||
			qp->state == IBV_QPS_RESET || qp->state == IBV_QPS_INIT)
		return 0;
	/* Responses in PSN order: in ring order from the oldest ... */
	while (qp->res_pending && !qp->res_replayed) {
		struct tp_res *r = &qp->res[qp->res_send % n];

		while (r->pending && tp_tx_room(qp->queue)) {
			if (send_res(qp, r) == 0)
				return sent;
			sent++;
		}
		if (r->pending)
			return sent;
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
			while (r->pending && tp_tx_room(qp->queue)) {
				if (send_res(qp, r) == 0)
					return sent;
				sent++;
			}
			if (r->pending)
				return sent;
		}
	}
	if (qp->res_pending == 0) {
		qp->res_replayed = 0;
		qp->res_send = qp->res_next;
	}
	if (qp->ack_pending && tp_tx_room(qp->queue))
		sent += send_ack(qp);
	if (qp->rx_err && !qp->ack_pending) {
		qp->rx_err = 0;
		tp_qp_to_error(qp);
	}
	return sent;
}
