/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * QP objects and the state machine. Modify follows IBTA 10.3 / table 93:
 * one table of legal transitions with the attributes each requires and
 * allows per transport; chk validates, from applies, to reports.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tp_internal.h"
#include "tp_raw.h"

enum { T_UD = 0, T_UC, T_RC, T_RAW, T_NB };

struct qp_trans {
	int valid;
	int req[T_NB];
	int opt[T_NB];
};

#define S(x) IBV_QPS_##x
#define M(x) IBV_QP_##x

static const struct qp_trans trans[IBV_QPS_ERR + 1][IBV_QPS_ERR + 1] = {
	[S(RESET)] = {
		[S(RESET)] = { .valid = 1 },
		[S(INIT)] = { .valid = 1,
			.req = {
				[T_UD] = M(PKEY_INDEX) | M(PORT) | M(QKEY),
				[T_UC] = M(PKEY_INDEX) | M(PORT) | M(ACCESS_FLAGS),
				[T_RC] = M(PKEY_INDEX) | M(PORT) | M(ACCESS_FLAGS),
				[T_RAW] = M(PORT),
			} },
	},
	[S(INIT)] = {
		[S(INIT)] = { .valid = 1,
			.opt = {
				[T_UD] = M(PKEY_INDEX) | M(PORT) | M(QKEY),
				[T_UC] = M(PKEY_INDEX) | M(PORT) | M(ACCESS_FLAGS),
				[T_RC] = M(PKEY_INDEX) | M(PORT) | M(ACCESS_FLAGS),
				[T_RAW] = M(PORT),
			} },
		[S(RTR)] = { .valid = 1,
			.req = {
				[T_UC] = M(AV) | M(PATH_MTU) | M(DEST_QPN) |
					M(RQ_PSN),
				[T_RC] = M(AV) | M(PATH_MTU) | M(DEST_QPN) |
					M(RQ_PSN) | M(MAX_DEST_RD_ATOMIC) |
					M(MIN_RNR_TIMER),
			},
			.opt = {
				[T_UD] = M(PKEY_INDEX) | M(QKEY),
				[T_UC] = M(ALT_PATH) | M(ACCESS_FLAGS) |
					M(PKEY_INDEX),
				[T_RC] = M(ALT_PATH) | M(ACCESS_FLAGS) |
					M(PKEY_INDEX),
			} },
	},
	[S(RTR)] = {
		[S(RTS)] = { .valid = 1,
			.req = {
				[T_UD] = M(SQ_PSN),
				[T_UC] = M(SQ_PSN),
				[T_RC] = M(TIMEOUT) | M(RETRY_CNT) | M(RNR_RETRY) |
					M(SQ_PSN) | M(MAX_QP_RD_ATOMIC),
			},
			.opt = {
				[T_RAW] = M(RATE_LIMIT),
				[T_UD] = M(CUR_STATE) | M(QKEY),
				[T_UC] = M(CUR_STATE) | M(ALT_PATH) |
					M(ACCESS_FLAGS) | M(PATH_MIG_STATE),
				[T_RC] = M(CUR_STATE) | M(ALT_PATH) |
					M(ACCESS_FLAGS) | M(MIN_RNR_TIMER) |
					M(PATH_MIG_STATE),
			} },
	},
	[S(RTS)] = {
		[S(RTS)] = { .valid = 1,
			.opt = {
				[T_RAW] = M(RATE_LIMIT),
				[T_UD] = M(CUR_STATE) | M(QKEY),
				[T_UC] = M(CUR_STATE) | M(ACCESS_FLAGS) |
					M(ALT_PATH) | M(PATH_MIG_STATE),
				[T_RC] = M(CUR_STATE) | M(ACCESS_FLAGS) |
					M(ALT_PATH) | M(PATH_MIG_STATE) |
					M(MIN_RNR_TIMER),
			} },
		[S(SQD)] = { .valid = 1,
			.opt = {
				[T_UD] = M(EN_SQD_ASYNC_NOTIFY),
				[T_UC] = M(EN_SQD_ASYNC_NOTIFY),
				[T_RC] = M(EN_SQD_ASYNC_NOTIFY),
			} },
	},
	[S(SQD)] = {
		[S(RTS)] = { .valid = 1,
			.opt = {
				[T_UD] = M(CUR_STATE) | M(QKEY),
				[T_UC] = M(CUR_STATE) | M(ALT_PATH) |
					M(ACCESS_FLAGS) | M(PATH_MIG_STATE),
				[T_RC] = M(CUR_STATE) | M(ALT_PATH) |
					M(ACCESS_FLAGS) | M(MIN_RNR_TIMER) |
					M(PATH_MIG_STATE),
			} },
		[S(SQD)] = { .valid = 1,
			.opt = {
				[T_UD] = M(PKEY_INDEX) | M(QKEY),
				[T_UC] = M(AV) | M(ALT_PATH) | M(ACCESS_FLAGS) |
					M(PKEY_INDEX) | M(PATH_MIG_STATE),
				[T_RC] = M(PORT) | M(AV) | M(TIMEOUT) |
					M(RETRY_CNT) | M(RNR_RETRY) |
					M(MAX_QP_RD_ATOMIC) |
					M(MAX_DEST_RD_ATOMIC) | M(ALT_PATH) |
					M(ACCESS_FLAGS) | M(PKEY_INDEX) |
					M(MIN_RNR_TIMER) | M(PATH_MIG_STATE),
			} },
	},
	[S(SQE)] = {
		[S(RTS)] = { .valid = 1,
			.opt = {
				[T_UD] = M(CUR_STATE) | M(QKEY),
				[T_UC] = M(CUR_STATE) | M(ACCESS_FLAGS),
			} },
	},
};

static int
ttype(enum ibv_qp_type t)
{
	if (t == IBV_QPT_RAW_PACKET)
		return T_RAW;
	return t == IBV_QPT_UD ? T_UD : t == IBV_QPT_UC ? T_UC : T_RC;
}

/*
 * XRC (the kernel's qp_state_table): an XRC_SEND QP needs RC's attributes
 * less the responder's at RTR (MAX_DEST_RD_ATOMIC, MIN_RNR_TIMER); an
 * XRC_RECV QP needs RC's less the requester's at RTS (RETRY_CNT,
 * RNR_RETRY, MAX_QP_RD_ATOMIC). Either takes, optionally, whatever RC
 * takes: perftest sets RC's whole set on both halves.
 */
static int
xrc_req(enum ibv_qp_state cur, enum ibv_qp_state next, enum ibv_qp_type xrc,
		int rc_req)
{
	if (xrc == IBV_QPT_XRC_SEND && cur == S(INIT) && next == S(RTR))
		return rc_req & ~(M(MAX_DEST_RD_ATOMIC) | M(MIN_RNR_TIMER));
	if (xrc == IBV_QPT_XRC_RECV && cur == S(RTR) && next == S(RTS))
		return rc_req & ~(M(RETRY_CNT) | M(RNR_RETRY) |
			M(MAX_QP_RD_ATOMIC));
	return rc_req;
}

static int
legal(enum ibv_qp_state cur, enum ibv_qp_state next, enum ibv_qp_type type,
		int mask, enum ibv_qp_type xrc)
{
	const struct qp_trans *t;
	int req, opt;

	if (cur > IBV_QPS_ERR || next > IBV_QPS_ERR)
		return 0;
	/* Any state may go to RESET or ERR, with no other attribute. */
	if (next == IBV_QPS_RESET || next == IBV_QPS_ERR)
		return (mask & ~(M(STATE) | M(CUR_STATE))) == 0;
	t = &trans[cur][next];
	if (!t->valid)
		return 0;
	req = t->req[ttype(type)];
	opt = t->opt[ttype(type)];
	if (xrc) {
		opt |= req;
		req = xrc_req(cur, next, xrc, req);
	}
	if ((mask & req) != req)
		return 0;
	return (mask & ~(req | opt | M(STATE))) == 0;
}

static int
qp_chk_attr(struct droce_qp *qp, struct ibv_qp_attr *a, int mask,
		const struct droce_av *av)
{
	struct droce_dev *dev = qp->dev;
	enum ibv_qp_state cur = qp->state, next;

	if ((mask & M(CUR_STATE)) && a->cur_qp_state != cur)
		return -EINVAL;
	next = (mask & M(STATE)) ? a->qp_state : cur;
	if (!legal(cur, next, qp->type, mask, qp->xrc))
		return -EINVAL;
	if ((mask & M(PORT)) && a->port_num != 1)
		return -EINVAL;
	if ((mask & M(PKEY_INDEX)) && a->pkey_index != 0)
		return -EINVAL;
	if ((mask & M(PATH_MTU)) && (a->path_mtu < IBV_MTU_256 ||
			a->path_mtu > IBV_MTU_4096 ||
			droce_mtu_to_bytes(a->path_mtu) >
			droce_mtu_to_bytes(droce_eth_mtu_to_path_mtu(
				dev->conf.eth_mtu))))
		return -EINVAL;
	if ((mask & M(AV)) && (av == NULL || av->sgid_index >= DROCE_MAX_GIDS ||
			!dev->conf.gids[av->sgid_index].valid))
		return -EINVAL;
	if ((mask & M(DEST_QPN)) && (a->dest_qp_num > DROCE_PSN_MASK ||
			a->dest_qp_num == 0))
		return -EINVAL;
	if ((mask & M(MAX_QP_RD_ATOMIC)) &&
			a->max_rd_atomic > dev->lim.max_qp_rd_atom)
		return -EINVAL;
	if ((mask & M(MAX_DEST_RD_ATOMIC)) &&
			a->max_dest_rd_atomic > dev->lim.max_qp_rd_atom)
		return -EINVAL;
	if ((mask & M(TIMEOUT)) && a->timeout > 31)
		return -EINVAL;
	if ((mask & M(RETRY_CNT)) && a->retry_cnt > 7)
		return -EINVAL;
	if ((mask & M(RNR_RETRY)) && a->rnr_retry > 7)
		return -EINVAL;
	if ((mask & M(MIN_RNR_TIMER)) && a->min_rnr_timer > 31)
		return -EINVAL;
	if ((mask & M(RATE_LIMIT)) && a->rate_limit != 0 &&
			(a->rate_limit < DROCE_RAW_RATE_MIN_KBPS ||
			a->rate_limit > DROCE_RAW_RATE_MAX_KBPS))
		return -EINVAL;
	if ((mask & M(ACCESS_FLAGS)) && (a->qp_access_flags &
			~(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
			DROCE_ACCESS_FLUSH_GLOBAL | DROCE_ACCESS_FLUSH_PERSISTENT)))
		return -EINVAL;
	return 0;
}

static void
qp_reset(struct droce_qp *qp)
{
	qp->sq.head = qp->sq.tail = qp->sq.cur = 0;
	qp->rq.head = qp->rq.tail = 0;
	qp->cur_off = 0;
	qp->rd_atomic_out = qp->rd_in_flight = 0;
	qp->rr_pending = 0;
	qp->rd_newest_set = 0;
	tp_sr_reset(qp);
	qp->rd_cwnd = qp->max_rd_atomic ? qp->max_rd_atomic : 1;
	qp->ack_deadline = qp->rnr_deadline = qp->probe_deadline = 0;
	qp->reask_deadline = 0;
	qp->nak_at = 0;
	/* a new connection's round trip is measured anew */
	qp->srtt_ns = qp->rttvar_ns = qp->rtt_min_ns = 0;
	qp->rto_hw = 0;
	qp->rtt_timing = qp->rto_backoff = 0;
	qp->rx_have_wqe = 0;
	qp->ack_pending = 0;
	qp->ack_hold = 0;
	qp->posted = qp->pingpong = 0;
	qp->nak_sent = 0;
	qp->uc_drop = 0;
	qp->msn = 0;
	memset(qp->res, 0, sizeof(qp->res));
	qp->res_next = qp->res_send = qp->res_pending = 0;
	qp->res_replayed = 0;
}

static void
qp_from_attr(struct droce_qp *qp, struct ibv_qp_attr *a, int mask,
		const struct droce_av *av)
{
	if (mask & M(QKEY))
		qp->qkey = a->qkey;
	if (mask & M(ACCESS_FLAGS))
		qp->access = a->qp_access_flags;
	if (mask & M(PKEY_INDEX))
		qp->pkey_index = a->pkey_index;
	if (mask & M(PORT))
		qp->port_num = a->port_num;
	if (mask & M(PATH_MTU)) {
		qp->mtu_enum = a->path_mtu;
		qp->mtu = droce_mtu_to_bytes(a->path_mtu);
	}
	if (mask & M(DEST_QPN))
		qp->dest_qpn = a->dest_qp_num;
	if (mask & M(RQ_PSN))
		qp->epsn = a->rq_psn & DROCE_PSN_MASK;
	if (mask & M(SQ_PSN)) {
		qp->sq_psn = a->sq_psn & DROCE_PSN_MASK;
		qp->psn = qp->una = qp->psn_hw = qp->acked = qp->sq_psn;
		qp->last_acked_psn = droce_psn_add(qp->sq_psn, DROCE_PSN_MASK);
	}
	if (mask & M(TIMEOUT))
		qp->timeout = a->timeout;
	if (mask & M(RETRY_CNT))
		qp->retry_cnt = qp->retries_left = a->retry_cnt;
	if (mask & M(RNR_RETRY))
		qp->rnr_retry = qp->rnr_left = a->rnr_retry;
	if (mask & M(MIN_RNR_TIMER))
		qp->min_rnr_timer = a->min_rnr_timer;
	if (mask & M(MAX_QP_RD_ATOMIC)) {
		qp->max_rd_atomic = a->max_rd_atomic;
		qp->rd_cwnd = a->max_rd_atomic ? a->max_rd_atomic : 1;
	}
	if ((mask & M(MAX_DEST_RD_ATOMIC)) &&
			qp->max_dest_rd_atomic != a->max_dest_rd_atomic) {
		qp->max_dest_rd_atomic = a->max_dest_rd_atomic;
		tp_resp_res_resized(qp);
	}
	if ((mask & M(RATE_LIMIT)) && qp->raw != NULL)
		qp->raw->rate_kbps = a->rate_limit;
	if (mask & M(AV)) {
		qp->av = *av;
		tp_qp_set_template(qp);
	}
	if (mask & M(STATE)) {
		enum ibv_qp_state old = qp->state;

		qp->state = a->qp_state;
		if (qp->state == IBV_QPS_RESET)
			qp_reset(qp);
		else if (qp->state == IBV_QPS_ERR && old != IBV_QPS_ERR) {
			if (old >= IBV_QPS_RTR)
				tp_resp_ack_before_error(qp);
			tp_qp_flush(qp);
		}
		if (qp->state == IBV_QPS_SQD)
			qp->sq_draining = 1;
		if (qp->state == IBV_QPS_RTS) {
			qp->sq_draining = 0;
		}
		if (qp->type == IBV_QPT_UD && (mask & M(AV)) == 0 &&
				qp->state == IBV_QPS_RTS)
			tp_qp_set_template(qp);
	}
}

int
droce_qp_modify(struct droce_qp *qp, struct ibv_qp_attr *attr, int mask,
		const struct droce_av *av)
{
	int rc = qp_chk_attr(qp, attr, mask, av);

	if (rc)
		return rc;
	qp_from_attr(qp, attr, mask, av);
	return 0;
}

int
droce_qp_query(struct droce_qp *qp, struct ibv_qp_attr *a, int mask,
		struct ibv_qp_init_attr *init)
{
	(void)mask;
	memset(a, 0, sizeof(*a));
	a->qp_state = qp->state;
	a->cur_qp_state = qp->state;
	a->path_mtu = qp->mtu_enum;
	a->path_mig_state = IBV_MIG_MIGRATED;
	a->qkey = qp->qkey;
	a->rq_psn = qp->epsn;
	a->sq_psn = qp->psn;
	a->dest_qp_num = qp->dest_qpn;
	a->qp_access_flags = qp->access;
	a->cap = qp->cap;
	a->pkey_index = qp->pkey_index;
	a->sq_draining = qp->state == IBV_QPS_SQD && qp->sq.cur != qp->sq.head;
	a->max_rd_atomic = qp->max_rd_atomic;
	a->max_dest_rd_atomic = qp->max_dest_rd_atomic;
	a->min_rnr_timer = qp->min_rnr_timer;
	a->port_num = qp->port_num;
	a->timeout = qp->timeout;
	a->retry_cnt = qp->retry_cnt;
	a->rnr_retry = qp->rnr_retry;
	a->rate_limit = qp->raw != NULL ? qp->raw->rate_kbps : 0;
	a->ah_attr.is_global = 1;
	a->ah_attr.port_num = 1;
	memcpy(a->ah_attr.grh.dgid.raw, qp->av.dgid, 16);
	a->ah_attr.grh.sgid_index = qp->av.sgid_index;
	a->ah_attr.grh.hop_limit = qp->av.hop_limit;
	a->ah_attr.grh.traffic_class = qp->av.tclass;
	a->ah_attr.grh.flow_label = qp->av.flow_label;
	if (init != NULL) {
		memset(init, 0, sizeof(*init));
		init->qp_type = qp->xrc ? qp->xrc : qp->type;
		init->cap = qp->cap;
		init->sq_sig_all = qp->sq_sig_all;
	}
	return 0;
}

/* A number for a QP of queue q (dev->lock held): the next free slot of
 * the queue's after the last one taken, at its generation; 0 if none. */
static uint32_t
qpn_alloc(struct droce_dev *dev, uint32_t q)
{
	uint32_t nq = dev->conf.nb_queues, first, n, k, span;

	/* slot % nb_queues == the owner queue, from 0x11 on */
	first = TP_MIN_QPN + (q + nq - TP_MIN_QPN % nq) % nq;
	if (first >= dev->qp_tab_size)
		return 0;
	span = (dev->qp_tab_size - first + nq - 1) / nq;
	n = dev->qpn_next[q] >= first ? dev->qpn_next[q] : first;
	for (k = 0; k < span; k++, n += nq) {
		if (n >= dev->qp_tab_size)
			n = first;
		if (dev->qp_tab[n] == NULL) {
			dev->qpn_next[q] = n + nq;
			return n + dev->qpn_gen[n] * dev->qpn_stride;
		}
	}
	return 0;
}

/*
 * Room for the receive WQE a message in progress holds (tp_resp.c): its
 * SGEs are copied there when it is taken, max_sge of them at most.
 */
static int
rx_sges_init(struct droce_qp *qp, uint32_t max_sge)
{
	qp->rx_max_sge = max_sge ? max_sge : 1;
	qp->rx_sges = calloc(qp->rx_max_sge, sizeof(*qp->rx_sges));
	return qp->rx_sges == NULL ? -ENOMEM : 0;
}

static void
qp_free(struct droce_qp *qp)
{
	tp_raw_free(qp);
	tp_rq_free(&qp->rq);
	free(qp->rx_sges);
	free(qp->rd_bits);
	tp_sr_free(qp);
	free(qp->sq.wqe);
	free(qp->sq.sges);
	free(qp->sq.inline_buf);
	free(qp);
}

/* What ibv_create_qp takes: the type, CQs and SRQ of one queue, the
 * capabilities within the device's limits. */
static int
qp_init_ok(const struct droce_dev *dev, const struct ibv_qp_init_attr *attr,
		const struct droce_cq *scq, const struct droce_cq *rcq,
		const struct droce_srq *srq, int xrc)
{
	const struct ibv_qp_cap *cap = &attr->cap;
	const struct droce_dev_limits *lim = &dev->lim;

	return !((attr->qp_type != IBV_QPT_RC && attr->qp_type != IBV_QPT_UC &&
			attr->qp_type != IBV_QPT_UD &&
			attr->qp_type != IBV_QPT_RAW_PACKET && !xrc) ||
			scq == NULL || rcq == NULL || (xrc && rcq != scq) ||
			(srq != NULL && srq->xrcd != NULL) ||
			cap->max_send_wr > lim->max_qp_wr ||
			cap->max_recv_wr > lim->max_qp_wr ||
			cap->max_send_sge > lim->max_sge ||
			cap->max_recv_sge > lim->max_sge ||
			cap->max_inline_data > lim->max_inline ||
			rcq->queue != scq->queue ||
			(srq != NULL && srq->queue != scq->queue));
}

/* The send queue, the receive queue (none on an SRQ or XRC_SEND) and what
 * the QP's type needs beside them; cap says what was made. 0 or -ENOMEM. */
static int
qp_alloc_queues(struct droce_qp *qp, struct ibv_qp_cap *cap,
		struct droce_srq *srq, int xrc)
{
	struct droce_dev *dev = qp->dev;
	uint32_t i;

	qp->sq.size = tp_pow2(cap->max_send_wr ? cap->max_send_wr : 1);
	qp->sq.max_sge = cap->max_send_sge ? cap->max_send_sge : 1;
	qp->sq.max_inline = cap->max_inline_data;
	qp->sq.wqe = calloc(qp->sq.size, sizeof(*qp->sq.wqe));
	qp->sq.sges = calloc((size_t)qp->sq.size * qp->sq.max_sge,
		sizeof(*qp->sq.sges));
	if (qp->sq.max_inline)
		qp->sq.inline_buf = malloc((size_t)qp->sq.size *
			qp->sq.max_inline);
	if (qp->type == IBV_QPT_RC) {
		qp->rd_bits = calloc(TP_RD_BITS / 64, sizeof(uint64_t));
		qp->sr = !xrc && dev->conf.selective_repeat == DROCE_SR_ALL;
		qp->post_rc = !xrc;
	}
	if (qp->sq.wqe == NULL || qp->sq.sges == NULL ||
			(qp->type == IBV_QPT_RC && (qp->rd_bits == NULL ||
			tp_sr_init(qp) != 0)) ||
			(qp->sq.max_inline && qp->sq.inline_buf == NULL) ||
			(srq == NULL && tp_rq_init(&qp->rq, cap->max_recv_wr,
				cap->max_recv_sge) != 0) ||
			((qp->type == IBV_QPT_RC || qp->type == IBV_QPT_UC) &&
				!xrc && rx_sges_init(qp, srq != NULL ?
				srq->rq.max_sge : qp->rq.max_sge) != 0) ||
			(qp->type == IBV_QPT_RAW_PACKET && tp_raw_init(qp) != 0))
		return -ENOMEM;
	for (i = 0; i < qp->sq.size; i++)
		qp->sq.wqe[i].sge = &qp->sq.sges[(size_t)i * qp->sq.max_sge];
	cap->max_send_wr = qp->sq.size;
	cap->max_send_sge = qp->sq.max_sge;
	if (srq == NULL && !xrc) {
		cap->max_recv_wr = qp->rq.size;
		cap->max_recv_sge = qp->rq.max_sge;
	} else {
		cap->max_recv_wr = 0;
		cap->max_recv_sge = 0;
	}
	qp->cap = *cap;
	return 0;
}

/* A QPN for qp (1 for the GSI QP) and its place in the device's table and
 * its queue's list; the objects it uses counted. 0, -EBUSY (the GSI QP's
 * number taken or on another queue) or -ENOMEM. */
static int
qp_number(struct droce_qp *qp, struct droce_cq *rcq, int gsi, int xrc)
{
	struct droce_dev *dev = qp->dev;
	struct droce_tp_queue *q = qp->scq->queue;
	uint32_t qpn;

	pthread_mutex_lock(&dev->lock);
	if (gsi)	/* QPN 1, on the queue that number says */
		qpn = dev->qp_tab[TP_GSI_QPN] == NULL &&
			droce_qpn_queue(dev, TP_GSI_QPN) == q->index ?
			TP_GSI_QPN : 0;
	else
		qpn = dev->nb_qp < dev->lim.max_qp ?
			qpn_alloc(dev, q->index) : 0;
	if (qpn == 0 || tp_queue_add_qp(q, qp) != 0) {
		pthread_mutex_unlock(&dev->lock);
		return gsi && qpn == 0 ? -EBUSY : -ENOMEM;
	}
	qp->qpn = qpn;
	dev->qp_tab[tp_qpn_slot(dev, qpn)] = qp;
	dev->nb_qp++;
	qp->pd->refs++;
	qp->scq->refs++;
	if (!xrc)
		rcq->refs++;
	if (qp->srq)
		qp->srq->refs++;
	pthread_mutex_unlock(&dev->lock);
	qp->tmpl.udp_sport = droce_udp_sport_qpn(qpn);
	return 0;
}

static struct droce_qp *
qp_create(struct droce_pd *pd, struct ibv_qp_init_attr *attr,
		struct droce_cq *scq, struct droce_cq *rcq, struct droce_srq *srq,
		int gsi)
{
	struct droce_dev *dev = pd->dev;
	int xrc = attr->qp_type == IBV_QPT_XRC_SEND;
	struct droce_qp *qp;
	int rc;

	/* an XRC_SEND QP has no receive side: no receive CQ, no SRQ */
	if (xrc && rcq == NULL && srq == NULL)
		rcq = scq;
	if (!qp_init_ok(dev, attr, scq, rcq, srq, xrc)) {
		errno = EINVAL;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (qp == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	qp->dev = dev;
	qp->pd = pd;
	qp->type = xrc ? IBV_QPT_RC : attr->qp_type;
	qp->xrc = xrc ? IBV_QPT_XRC_SEND : 0;
	qp->queue = scq->queue;
	qp->scq = scq;
	qp->rcq = xrc ? NULL : rcq;
	qp->srq = srq;
	qp->sq_sig_all = attr->sq_sig_all;
	qp->state = IBV_QPS_RESET;
	qp->mtu = 256;
	qp->mtu_enum = IBV_MTU_256;
	if (qp->type == IBV_QPT_UD) {
		qp->post_ud = 1;
		/* UD has no path MTU attribute: a message is one port MTU */
		qp->mtu_enum = (enum ibv_mtu)droce_eth_mtu_to_path_mtu(
			dev->conf.eth_mtu);
		qp->mtu = droce_mtu_to_bytes(qp->mtu_enum);
	}
	rc = qp_alloc_queues(qp, &attr->cap, srq, xrc);
	if (rc == 0)
		rc = qp_number(qp, rcq, gsi, xrc);
	if (rc != 0) {
		qp_free(qp);
		errno = -rc;
		return NULL;
	}
	return qp;
}

struct droce_qp *
tp_qp_alloc(struct droce_dev *dev, struct droce_tp_queue *q,
		enum ibv_qp_type t)
{
	struct droce_qp *qp = calloc(1, sizeof(*qp));
	uint32_t qpn;

	if (qp == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	qp->dev = dev;
	qp->type = IBV_QPT_RC;
	qp->xrc = t;
	qp->queue = q;
	qp->state = IBV_QPS_RESET;
	qp->mtu = 256;
	qp->mtu_enum = IBV_MTU_256;
	/* an empty send queue of one slot: nothing is ever posted to it */
	qp->sq.size = 1;
	qp->sq.max_sge = 1;
	qp->sq.wqe = calloc(1, sizeof(*qp->sq.wqe));
	qp->sq.sges = calloc(1, sizeof(*qp->sq.sges));
	if (qp->sq.wqe == NULL || qp->sq.sges == NULL)
		goto nomem;
	qp->sq.wqe[0].sge = qp->sq.sges;
	/* an XRC_RECV QP takes its WQEs from any SRQ of its domain */
	if (t == IBV_QPT_XRC_RECV &&
			rx_sges_init(qp, dev->lim.max_srq_sge) != 0)
		goto nomem;
	pthread_mutex_lock(&dev->lock);
	qpn = dev->nb_qp < dev->lim.max_qp ? qpn_alloc(dev, q->index) : 0;
	if (qpn == 0 || tp_queue_add_qp(q, qp) != 0) {
		pthread_mutex_unlock(&dev->lock);
		goto nomem;
	}
	qp->qpn = qpn;
	dev->qp_tab[tp_qpn_slot(dev, qpn)] = qp;
	dev->nb_qp++;
	pthread_mutex_unlock(&dev->lock);
	qp->tmpl.udp_sport = droce_udp_sport_qpn(qpn);
	return qp;
nomem:
	qp_free(qp);
	errno = ENOMEM;
	return NULL;
}

struct droce_qp *
droce_qp_create(struct droce_pd *pd, struct ibv_qp_init_attr *attr,
		struct droce_cq *scq, struct droce_cq *rcq, struct droce_srq *srq)
{
	return qp_create(pd, attr, scq, rcq, srq, 0);
}

struct droce_qp *
droce_qp_create_gsi(struct droce_pd *pd, struct ibv_qp_init_attr *attr,
		struct droce_cq *scq, struct droce_cq *rcq)
{
	if (attr->qp_type != IBV_QPT_UD) {
		errno = EINVAL;
		return NULL;
	}
	return qp_create(pd, attr, scq, rcq, NULL, 1);
}

int
droce_qp_destroy(struct droce_qp *qp)
{
	struct droce_dev *dev = qp->dev;

	pthread_mutex_lock(&dev->lock);
	if (qp->nb_mcast || (qp->raw != NULL && qp->raw->nb_flows)) {
		pthread_mutex_unlock(&dev->lock);
		return -EBUSY;
	}
	tp_resp_last_ack(qp);	/* the frame outlives the QP */
	if (qp->xrc != IBV_QPT_XRC_RECV) {
		tp_cq_purge_qp(qp->scq, qp->qpn);
		if (qp->rcq != NULL && qp->rcq != qp->scq)
			tp_cq_purge_qp(qp->rcq, qp->qpn);
	}
	dev->qp_tab[tp_qpn_slot(dev, qp->qpn)] = NULL;
	/* the slot's next QP gets another number (QP1 keeps its own) */
	if (qp->qpn != TP_GSI_QPN)
		dev->qpn_gen[tp_qpn_slot(dev, qp->qpn)] =
			(dev->qpn_gen[tp_qpn_slot(dev, qp->qpn)] + 1) % dev->qpn_gens;
	dev->nb_qp--;
	tp_queue_del_qp(qp->queue, qp);
	if (qp->xrc == IBV_QPT_XRC_RECV) {
		/* its pd, rcq and srq were the last request's, not held */
		qp->xrcd->refs--;
	} else {
		qp->pd->refs--;
		qp->scq->refs--;
		if (qp->rcq != NULL)
			qp->rcq->refs--;
		if (qp->srq)
			qp->srq->refs--;
	}
	pthread_mutex_unlock(&dev->lock);
	tp_raw_free(qp);
	tp_rq_free(&qp->rq);
	free(qp->rx_sges);
	free(qp->rd_bits);
	tp_sr_free(qp);
	free(qp->sq.wqe);
	free(qp->sq.sges);
	free(qp->sq.inline_buf);
	free(qp);
	return 0;
}

uint32_t
droce_qp_num(const struct droce_qp *qp)
{
	return qp->qpn;
}

struct droce_tp_queue *
droce_qp_queue(const struct droce_qp *qp)
{
	return qp->queue;
}

enum ibv_qp_state
droce_qp_state(const struct droce_qp *qp)
{
	return qp->state;
}

/*
 * Flush (IBTA 10.3.1: in ERR every outstanding and later WR completes
 * with IBV_WC_WR_FLUSH_ERR; flush completions are always generated).
 */
void
tp_qp_flush(struct droce_qp *qp)
{
	struct ibv_wc wc;
	struct tp_rwqe rw;

	while (qp->sq.tail != qp->sq.head) {
		struct tp_swqe *w = tp_sq_wqe(qp, qp->sq.tail);

		memset(&wc, 0, sizeof(wc));
		wc.wr_id = w->wr_id;
		wc.status = w->state == TP_WQE_DONE ? w->status :
			IBV_WC_WR_FLUSH_ERR;
		wc.opcode = tp_wr_opcode_info[w->opcode].wc_opcode;
		wc.qp_num = qp->qpn;
		tp_cq_push(qp->scq, &wc, 0);
		qp->sq.tail++;
	}
	qp->sq.cur = qp->sq.head;
	qp->rd_atomic_out = qp->rd_in_flight = 0;
	qp->ack_deadline = qp->rnr_deadline = qp->probe_deadline = 0;
	qp->reask_deadline = 0;
	if (qp->rx_have_wqe && qp->rcq != NULL) {
		qp->rx_have_wqe = 0;
		memset(&wc, 0, sizeof(wc));
		wc.wr_id = qp->rx_wqe.wr_id;
		wc.status = IBV_WC_WR_FLUSH_ERR;
		wc.opcode = IBV_WC_RECV;
		wc.qp_num = qp->qpn;
		tp_cq_push(qp->rcq, &wc, 0);
	}
	if (qp->srq == NULL) {
		while (tp_rq_pop(&qp->rq, &rw) == 0) {
			memset(&wc, 0, sizeof(wc));
			wc.wr_id = rw.wr_id;
			wc.status = IBV_WC_WR_FLUSH_ERR;
			wc.opcode = IBV_WC_RECV;
			wc.qp_num = qp->qpn;
			tp_cq_push(qp->rcq, &wc, 0);
		}
	}
	qp->ack_pending = 0;
	memset(qp->res, 0, sizeof(qp->res));
}

void
tp_qp_to_error(struct droce_qp *qp)
{
	if (qp->state == IBV_QPS_ERR)
		return;
	qp->state = IBV_QPS_ERR;
	tp_qp_flush(qp);
}
