/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * Responder: executes request packets in PSN order (IBTA 9.7.5).
 *  - expected PSN: execute, advance; ACK when asked (coalesced: one
 *    cumulative ACK per QP per progress pass);
 *  - duplicate: SEND/WRITE re-ACKed, READ replayed from the PSN asked,
 *    atomic and ATOMIC WRITE answered from the replay cache, never
 *    executed twice;
 *  - ahead: one PSN-sequence-error NAK per gap, the rest dropped.
 * A request at the expected PSN passes every check before one byte of it
 * is placed (a rejected request leaves memory as it was): opcode sequence,
 * packet length (C9-92), resources (RNR), keys and bounds, message length.
 * Errors: RNR NAK when no receive WQE; remote access NAK for a bad rkey,
 * bounds or permission; invalid request NAK for a malformed sequence,
 * length or misaligned atomic or ATOMIC WRITE. UC never answers (the
 * message is dropped); UD has no sequence. doc/transport.md has the table
 * of defects. What the responder decides to send (ACK, NAK, READ
 * responses, atomic ACKs, ATOMIC WRITE's empty READ responses) goes out
 * from tp_resp_tx.c.
 */

#include <string.h>

#include "tp_internal.h"

static void
queue_ack(struct droce_qp *qp, uint32_t psn, uint8_t syndrome)
{
	int is_nak = DROCE_AETH_TYPE(syndrome) != DROCE_AETH_TYPE_ACK;

	/* A NAK is not overridden by a later ACK; a later NAK wins. */
	if (qp->ack_pending && qp->ack_is_nak && !is_nak)
		return;
	qp->ack_hold = 0;	/* hold_for_answer says if this one waits */
	qp->ack_pending = 1;
	qp->ack_psn = psn;
	qp->ack_syndrome = syndrome;
	qp->ack_is_nak = is_nak;
}

/* A receive's completion. Inline where a message completes well (its
 * status, opcode and most flags known there), called on the rest. */
static inline __attribute__((always_inline)) void
rx_complete_inline(struct droce_qp *qp, struct tp_rwqe *rw,
		enum ibv_wc_status st, enum ibv_wc_opcode op, uint32_t len,
		const struct droce_pkt *pkt, uint32_t src_qp, unsigned int flags)
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
	wc->wc_flags = flags;	/* the slot is zeroed: slid, pkey_index 0 */
	/*
	 * RoCE has no SL; for a UD receive a ConnectX reports the frame's
	 * kind there (its PRM: bit 3 UDP, i.e. RoCEv2; bits 2:0 the L3
	 * header, 1 IPv6, 2 IPv4), and UCX's UD reads it to find the
	 * destination GID in the GRH area (4 bytes or 16).
	 */
	wc->sl = pkt != NULL && (flags & IBV_WC_GRH) ?
		(uint8_t)(pkt->ip_ver == 4 ? 0xa : 0x9) : 0;
	if (pkt != NULL && (flags & IBV_WC_WITH_IMM))
		wc->imm_data = pkt->imm_data;
	if (pkt != NULL && (flags & IBV_WC_WITH_INV))
		wc->invalidated_rkey = pkt->ieth_rkey;
	tp_cq_commit(qp->rcq, pkt != NULL && pkt->se);
}

static void
rx_complete(struct droce_qp *qp, struct tp_rwqe *rw, enum ibv_wc_status st,
		enum ibv_wc_opcode op, uint32_t len, const struct droce_pkt *pkt,
		uint32_t src_qp, unsigned int flags)
{
	rx_complete_inline(qp, rw, st, op, len, pkt, src_qp, flags);
}

/*
 * A ping-pong: each SEND or WRITE the peer sends is answered by one the
 * application here posts (ib_write_lat, ib_send_lat, an RPC). The ACK of
 * the request then waits, TP_ACK_HOLD_NS at most, and leaves with the
 * answer, in the same burst (tp_resp_progress). The peer, polling its CQ
 * for that ACK, finds the answer placed when the completion comes: an
 * ib_write_lat then spins on memory already written, where an ACK alone
 * first sent it away to wait there for its progress thread, which on two
 * CPUs shares them with both applications. Called at a message's end,
 * after queue_ack.
 */
static inline __attribute__((always_inline)) void
hold_for_answer(struct droce_qp *qp)
{
	qp->pingpong = qp->posted ? (qp->pingpong < 2 ? qp->pingpong + 1 : 2) : 0;
	qp->posted = 0;
	if (qp->pingpong == 2 && qp->ack_pending && !qp->ack_is_nak &&
			qp->ack_hold == 0)
		qp->ack_hold = qp->queue->now + TP_ACK_HOLD_NS;
}

/*
 * The receive WQE a SEND (or a WRITE with immediate) consumes, held in
 * the QP until the message's last packet, which may come passes later
 * (lost packets, go-back-N). Its SGEs are copied into the QP: the queue's
 * slot is free once taken, and a receive posted meanwhile (another QP's
 * message completed and its buffer reposted to a shared SRQ, say) would
 * overwrite them there, and the rest of this message would be placed in
 * that receive's buffer while this one completes with a hole (rxe's
 * get_srq_wqe copies the WQE too).
 */
static int
take_msg_rwqe(struct droce_qp *qp, unsigned int f)
{
	if (tp_take_rwqe(qp, &qp->rx_wqe) != 0)
		return -1;
	/* a message that ends with this packet is placed and completed
	 * before any receive can be posted: the slot's SGEs serve */
	if (!(f & DROCE_OPF_END)) {
		memcpy(qp->rx_sges, qp->rx_wqe.sge,
			qp->rx_wqe.num_sge * sizeof(*qp->rx_sges));
		qp->rx_wqe.sge = qp->rx_sges;
	}
	qp->rx_have_wqe = 1;
	return 0;
}

/* A NAK from the responder's transmit side (a READ whose memory went):
 * the QP errors once it is out. */
void
tp_resp_nak(struct droce_qp *qp, uint32_t psn, uint8_t syndrome)
{
	queue_ack(qp, psn, syndrome);
	if (syndrome == DROCE_AETH_NAK_REM_ACC)
		qp->st.nak_acc_tx++;
	else
		qp->st.nak_op_tx++;
	qp->rx_err = 1;
}

/* Responder-side fatal error: NAK (RC), complete the receive, QP to ERR. */
void
tp_resp_error(struct droce_qp *qp, const struct droce_pkt *pkt, uint8_t nak,
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
	qp->rx_msg = TP_RX_NONE;
	if (qp->type == IBV_QPT_RC) {
		/* The NAK must still go out: the QP errors after sending it. */
		qp->rx_err = 1;
	} else {
		tp_qp_to_error(qp);
	}
}

/*
 * A request the responder refuses for what the packet says (its opcode
 * sequence, length, key or bounds): RC answers with a NAK and errors the
 * QP (class C); UC has no way to answer, so the message is dropped and its
 * receive WQE kept for the next one (class D).
 */
static void
reject(struct droce_qp *qp, const struct droce_pkt *pkt, uint8_t nak,
		enum ibv_wc_status st)
{
	if (qp->type == IBV_QPT_RC) {
		tp_resp_error(qp, pkt, nak, st);
		return;
	}
	qp->st.rx_drop_uc++;
	qp->rx_write_base = NULL;
	qp->rx_msg = TP_RX_NONE;
	qp->uc_drop = 1;
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
	int rc;

	if (pkt->deth_qkey != qp->qkey) {
		qp->queue->st.rx_drop_qkey++;
		return;
	}
	if (tp_take_rwqe(qp, &rw) != 0) {
		qp->queue->st.rx_drop_state++;	/* no receive WQE: dropped */
		return;
	}
	if (pkt->opcode == DROCE_OP_UD_SEND_ONLY_IMM)
		flags |= IBV_WC_WITH_IMM;
	/* one SGE that holds it all (the common receive): one key lookup,
	 * the range checked before a byte goes in */
	if (rw.num_sge == 1 &&
			DROCE_GRH_LEN + pkt->payload_len <= rw.sge[0].length) {
		struct droce_mr *mr;
		uint8_t *d = tp_sge_piece(qp->dev, qp->pd, &rw.sge[0],
			IBV_ACCESS_LOCAL_WRITE, 0,
			DROCE_GRH_LEN + pkt->payload_len, &mr);

		if (d != NULL) {
			write_grh(d, frame, pkt);
			memcpy(d + DROCE_GRH_LEN, pkt->payload,
				pkt->payload_len);
			goto done;
		}
	}
	write_grh(grh, frame, pkt);
	/* the whole receive checked before the GRH goes in */
	rc = tp_sge_room(qp->dev, qp->pd, rw.sge, rw.num_sge, 0,
		DROCE_GRH_LEN + pkt->payload_len);
	if (rc != 0) {
		rx_complete(qp, &rw, rc == -EMSGSIZE ? IBV_WC_LOC_LEN_ERR :
			IBV_WC_LOC_PROT_ERR, IBV_WC_RECV, 0, NULL,
			pkt->deth_sqpn, 0);
		tp_qp_to_error(qp);
		return;
	}
	tp_sge_copy_in(qp->dev, qp->pd, rw.sge, rw.num_sge, 0, grh,
		DROCE_GRH_LEN);
	if (pkt->payload_len)
		tp_sge_copy_in(qp->dev, qp->pd, rw.sge, rw.num_sge,
			DROCE_GRH_LEN, pkt->payload, pkt->payload_len);
done:
	rx_complete_inline(qp, &rw, IBV_WC_SUCCESS, IBV_WC_RECV,
		DROCE_GRH_LEN + pkt->payload_len, pkt, pkt->deth_sqpn, flags);
}

/*
 * An RNR NAK for a packet that needs a receive WQE and found none (RC:
 * class B, the requester retries it later; UC: the message is dropped).
 * Nothing of the packet has been taken or placed.
 */
static void
no_rwqe(struct droce_qp *qp, const struct droce_pkt *pkt)
{
	if (qp->type == IBV_QPT_RC) {
		queue_ack(qp, pkt->psn, DROCE_AETH_RNR(qp->min_rnr_timer));
		qp->st.rnr_nak_tx++;
		/* stay quiet until the retry comes */
		qp->nak_sent = 1;
	} else {
		qp->rx_msg = TP_RX_NONE;
		qp->uc_drop = 1;
	}
}

/* SEND packet at the expected PSN. 0 executed, -1 refused (RNR/err). */
static inline __attribute__((always_inline)) int
exec_send(struct droce_qp *qp, const struct droce_pkt *pkt, unsigned int f)
{
	unsigned int flags = 0;
	int rc;

	if ((f & DROCE_OPF_START) && !qp->rx_have_wqe &&
			take_msg_rwqe(qp, f) != 0) {
		no_rwqe(qp, pkt);
		return -1;
	}
	if (f & DROCE_OPF_START)
		qp->rx_off = 0;
	/* an rkey that cannot be invalidated refuses the packet whole */
	if ((f & DROCE_OPF_INV) &&
			tp_invalidate_rkey(qp, pkt->ieth_rkey, 1) != 0) {
		tp_resp_error(qp, pkt, DROCE_AETH_NAK_INV_REQ,
			IBV_WC_REM_INV_REQ_ERR);
		return -1;
	}
	if (pkt->payload_len) {
		rc = tp_sge_copy_in(qp->dev, qp->pd, qp->rx_wqe.sge,
			qp->rx_wqe.num_sge, qp->rx_off, pkt->payload,
			pkt->payload_len);
		if (rc != 0) {
			/* too long for the buffer (C9-92), or an lkey gone
			 * bad since the post (class A) */
			tp_resp_error(qp, pkt, rc == -EMSGSIZE ?
				DROCE_AETH_NAK_INV_REQ : DROCE_AETH_NAK_REM_OP,
				rc == -EMSGSIZE ? IBV_WC_LOC_LEN_ERR :
				IBV_WC_LOC_PROT_ERR);
			return -1;
		}
	}
	qp->rx_off += pkt->payload_len;
	if (!(f & DROCE_OPF_END)) {
		qp->rx_msg = TP_RX_SEND;
		return 0;
	}
	if (f & DROCE_OPF_IMM)
		flags |= IBV_WC_WITH_IMM;
	if (f & DROCE_OPF_INV) {
		tp_invalidate_rkey(qp, pkt->ieth_rkey, 0);
		flags |= IBV_WC_WITH_INV;
	}
	qp->rx_have_wqe = 0;
	qp->rx_msg = TP_RX_NONE;
	rx_complete_inline(qp, &qp->rx_wqe, IBV_WC_SUCCESS, IBV_WC_RECV,
		(uint32_t)qp->rx_off, pkt, 0, flags);
	qp->msn = droce_psn_add(qp->msn, 1);
	return 0;
}

/*
 * The first packet of a WRITE: the target under the RETH's key. A
 * zero-length WRITE names no memory (C9-88). 0, or -1 with the QP
 * answered.
 */
static int
write_target(struct droce_qp *qp, const struct droce_pkt *pkt)
{
	qp->rx_write_base = NULL;
	if (pkt->reth_len == 0)
		return 0;
	if (qp->access & IBV_ACCESS_REMOTE_WRITE)
		qp->rx_write_base = tp_rkey_resolve(qp, pkt->reth_rkey,
			pkt->reth_va, pkt->reth_len, IBV_ACCESS_REMOTE_WRITE,
			NULL);
	if (qp->rx_write_base == NULL) {
		reject(qp, pkt, DROCE_AETH_NAK_REM_ACC, IBV_WC_REM_ACCESS_ERR);
		return -1;
	}
	qp->rx_write_va = pkt->reth_va;
	qp->rx_write_rkey = pkt->reth_rkey;
	return 0;
}

/*
 * Where a WRITE's packet lands: the first's target was checked whole; a
 * later one's is looked up again, so that an MR deregistered (or a window
 * invalidated) since the first packet takes no more of the message: a
 * Remote Access NAK, as a NIC whose key went gives (and the owner, droced
 * say, may unmap the memory once no pass holds a lookup).
 */
static uint8_t *
write_dst(struct droce_qp *qp, const struct droce_pkt *pkt, unsigned int f,
		uint64_t left)
{
	if (f & DROCE_OPF_START)
		return qp->rx_write_base;
	return tp_rkey_resolve_ahead(qp, qp->rx_write_rkey,
		qp->rx_write_va + qp->rx_off, pkt->payload_len, left,
		IBV_ACCESS_REMOTE_WRITE, NULL);
}

static inline __attribute__((always_inline)) int
exec_write(struct droce_qp *qp, const struct droce_pkt *pkt, unsigned int f)
{
	uint64_t left = (f & DROCE_OPF_START) ? pkt->reth_len : qp->rx_write_left;

	/*
	 * Every packet must fit what the RETH announced: the last one fills
	 * it exactly, the others take a whole MTU and leave some for the
	 * last (C9-92). Checked before anything is taken or placed.
	 */
	if ((f & DROCE_OPF_END) ? pkt->payload_len != left :
			left <= pkt->payload_len) {
		reject(qp, pkt, DROCE_AETH_NAK_INV_REQ, IBV_WC_REM_INV_REQ_ERR);
		return -1;
	}
	/*
	 * A WRITE with immediate consumes a receive WQE with its last
	 * packet: take it before touching anything, so that an RNR NAK
	 * leaves the packet to be retried as if it never came.
	 */
	if ((f & DROCE_OPF_IMM) && (f & DROCE_OPF_END) && !qp->rx_have_wqe &&
			take_msg_rwqe(qp, f) != 0) {
		no_rwqe(qp, pkt);
		return -1;
	}
	if (f & DROCE_OPF_START) {
		if (write_target(qp, pkt) != 0)
			return -1;
		qp->rx_off = 0;
	}
	if (pkt->payload_len) {
		uint8_t *dst = write_dst(qp, pkt, f, left);

		if (dst == NULL) {
			reject(qp, pkt, DROCE_AETH_NAK_REM_ACC,
				IBV_WC_REM_ACCESS_ERR);
			return -1;
		}
		memcpy(dst, pkt->payload, pkt->payload_len);
	}
	qp->rx_off += pkt->payload_len;
	qp->rx_write_left = left - pkt->payload_len;
	if (!(f & DROCE_OPF_END)) {
		qp->rx_msg = TP_RX_WRITE;
		return 0;
	}
	if (f & DROCE_OPF_IMM) {
		qp->rx_have_wqe = 0;
		rx_complete(qp, &qp->rx_wqe, IBV_WC_SUCCESS,
			IBV_WC_RECV_RDMA_WITH_IMM, (uint32_t)qp->rx_off,
			pkt, 0, IBV_WC_WITH_IMM);
	}
	qp->rx_write_base = NULL;
	qp->rx_msg = TP_RX_NONE;
	qp->msn = droce_psn_add(qp->msn, 1);
	return 0;
}

/* The message a SEND or WRITE packet belongs to. */
static inline enum tp_rx_msg
msg_kind(unsigned int f)
{
	return (f & DROCE_OPF_SEND) ? TP_RX_SEND :
		(f & DROCE_OPF_WRITE) ? TP_RX_WRITE : TP_RX_NONE;
}

/*
 * Opcode sequence (IBTA 9.7.5.1.3): a FIRST or ONLY (and READ, atomic)
 * only between messages, a MIDDLE or LAST only to continue one of its
 * kind.
 */
static int
op_seq_ok(const struct droce_qp *qp, unsigned int f)
{
	if (f & DROCE_OPF_START)
		return qp->rx_msg == TP_RX_NONE;
	return qp->rx_msg != TP_RX_NONE && qp->rx_msg == msg_kind(f);
}

/*
 * Packet length (C9-92): FIRST and MIDDLE carry exactly the path MTU,
 * LAST 1 to MTU bytes, ONLY at most the MTU (len_bad: the receive path
 * found it longer, or PadCnt or a payload where the opcode has none).
 * A RETH's DMA length is at most 2^31 (C9-94).
 */
static int
length_ok(const struct droce_qp *qp, const struct droce_pkt *pkt,
		unsigned int f, int len_bad)
{
	if (len_bad)
		return 0;
	if (!(f & DROCE_OPF_END))
		return pkt->payload_len == qp->mtu;
	if (!(f & DROCE_OPF_START) && pkt->payload_len == 0)
		return 0;
	if ((f & (DROCE_OPF_READ | DROCE_OPF_WRITE | DROCE_OPF_FLUSH)) &&
			(f & DROCE_OPF_START) &&
			pkt->reth_len > (1u << 31))
		return 0;
	return 1;
}

/* UC: a packet at any PSN. Lost packets abandon the message. */
static void
uc_rx(struct droce_qp *qp, const struct droce_pkt *pkt, unsigned int f,
		int len_bad)
{
	if (droce_psn_diff(pkt->psn, qp->epsn) != 0) {
		/* Lost packets: abandon the message, keep its WQE. */
		qp->st.out_of_seq_rx++;
		qp->rx_off = 0;
		qp->rx_write_base = NULL;
		qp->rx_msg = TP_RX_NONE;
		qp->uc_drop = 1;
	}
	qp->epsn = droce_psn_add(pkt->psn, 1);
	if (f & DROCE_OPF_START)
		qp->uc_drop = 0;
	if (qp->uc_drop) {
		qp->st.rx_drop_uc++;
		return;
	}
	if (!op_seq_ok(qp, f) || !length_ok(qp, pkt, f, len_bad)) {
		reject(qp, pkt, DROCE_AETH_NAK_INV_REQ, IBV_WC_REM_INV_REQ_ERR);
		return;
	}
	if (f & DROCE_OPF_SEND)
		exec_send(qp, pkt, f);
	else
		exec_write(qp, pkt, f);
}

static inline __attribute__((always_inline)) void rc_rx(
		struct droce_qp *qp, const struct droce_pkt *pkt, int len_bad);

/* Selective repeat: the requests held after the gap, now in order. */
static void
sr_drain(struct droce_qp *qp)
{
	const struct droce_pkt *p;
	int n = 0;

	while (!qp->rx_err && (p = tp_sr_take(qp)) != NULL) {
		rc_rx(qp, p, 0);
		n++;
	}
	if (n)
		queue_ack(qp, droce_psn_add(qp->epsn, DROCE_PSN_MASK),
			DROCE_AETH_ACK_NOCREDIT);
}

void
tp_resp_rx_frame(struct droce_qp *qp, const struct droce_pkt *pkt,
		const uint8_t *frame, int len_bad)
{
	unsigned int f = droce_opcode_info[pkt->opcode].flags;

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
	if (qp->type == IBV_QPT_UC) {
		uc_rx(qp, pkt, f, len_bad);
		return;
	}
	rc_rx(qp, pkt, len_bad);
	if (qp->sr_held)
		sr_drain(qp);
}

/* An RC request. */
static inline __attribute__((always_inline)) void
rc_rx(struct droce_qp *qp, const struct droce_pkt *pkt, int len_bad)
{
	unsigned int f = droce_opcode_info[pkt->opcode].flags;
	int32_t d;

	/* the PSN first (a sequence error is class B, no QP error) */
	d = droce_psn_diff(pkt->psn, qp->epsn);
	if (d > 0) {
		qp->st.out_of_seq_rx++;
		/* selective repeat: held until the gap fills, and a
		 * selective acknowledgement says so (tp_sr.c) */
		if (qp->sr && !len_bad && tp_sr_hold(qp, pkt)) {
			queue_ack(qp, droce_psn_add(qp->epsn, DROCE_PSN_MASK),
				DROCE_AETH_ACK_NOCREDIT);
			return;
		}
		if (!qp->nak_sent) {
			qp->nak_sent = 1;
			queue_ack(qp, qp->epsn, DROCE_AETH_NAK_PSN_SEQ);
			qp->st.nak_seq_tx++;
		}
		return;
	}
	if (d < 0) {
		qp->st.dup_rx++;
		qp->st.dup_req_rx++;
		if (f & (DROCE_OPF_READ | DROCE_OPF_ATOMIC |
				DROCE_OPF_ATOMIC_WRITE | DROCE_OPF_FLUSH))
			tp_resp_replay(qp, pkt, f);
		else
			queue_ack(qp, droce_psn_add(qp->epsn, DROCE_PSN_MASK),
				DROCE_AETH_ACK_NOCREDIT);
		return;
	}
	qp->nak_sent = 0;
	/* XRC: the SRQ, CQ and PD this request is for (class C) */
	if (qp->xrc == IBV_QPT_XRC_RECV) {
		uint8_t nak = tp_xrc_rx_srq(qp, pkt);

		if (nak) {
			tp_resp_error(qp, pkt, nak, nak == DROCE_AETH_NAK_REM_ACC ?
				IBV_WC_REM_ACCESS_ERR : IBV_WC_REM_INV_REQ_ERR);
			return;
		}
	}
	/* then what the packet says: class C, NAK and QP to ERR */
	if (!op_seq_ok(qp, f) || !length_ok(qp, pkt, f, len_bad)) {
		tp_resp_error(qp, pkt, DROCE_AETH_NAK_INV_REQ,
			IBV_WC_REM_INV_REQ_ERR);
		return;
	}
	if (f & DROCE_OPF_READ) {
		tp_resp_read(qp, pkt);
		return;
	}
	if (f & DROCE_OPF_ATOMIC) {
		tp_resp_atomic(qp, pkt);
		return;
	}
	if (f & DROCE_OPF_ATOMIC_WRITE) {
		tp_resp_atomic_write(qp, pkt);
		return;
	}
	if (f & DROCE_OPF_FLUSH) {
		tp_resp_flush(qp, pkt);
		return;
	}
	if (((f & DROCE_OPF_SEND) ? exec_send(qp, pkt, f) :
			exec_write(qp, pkt, f)) != 0)
		return;
	qp->epsn = droce_psn_add(pkt->psn, 1);
	if (pkt->ackreq)
		queue_ack(qp, pkt->psn, DROCE_AETH_ACK_NOCREDIT);
	if (f & DROCE_OPF_END)
		hold_for_answer(qp);
}
