/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * The fast path, reached through ibv_context.ops: post and poll under the
 * owner lock of the object's queue, with progress made inline so that a
 * posted WR leaves at once and a polling application needs no other core.
 */

#include <errno.h>

#include "attach.h"

static inline struct droce_port *
port_of(struct dv_context *ctx)
{
	return ctx->dev->port;
}

int
dv_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		struct ibv_send_wr **bad_wr)
{
	struct dv_qp *qp = dv_qp(ibqp);
	struct droce_port *port = port_of(qp->ctx);
	uint32_t queued;
	int rc;

	droce_port_lock(port, qp->q);
	queued = droce_qp_sq_outstanding(qp->tqp);
	rc = droce_qp_post_send(qp->tqp, wr, bad_wr);
	/*
	 * An idle send queue goes out now (latency). Behind WRs still in
	 * flight (a bandwidth loop keeping its window full) the next poll or
	 * the progress thread transmits what was posted together, a burst
	 * per pass instead of one frame and one NIC doorbell per call; the
	 * application polls then (its polls tell the thread it drives the
	 * queue, and such a post reads no clock).
	 */
	if (queued == 0)
		droce_port_progress_locked(port, qp->q);
	droce_port_unlock(port, qp->q);
	return rc;
}

int
dv_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		struct ibv_recv_wr **bad_wr)
{
	struct dv_qp *qp = dv_qp(ibqp);
	struct droce_port *port = port_of(qp->ctx);
	int rc;

	droce_port_lock(port, qp->q);
	rc = droce_qp_post_recv(qp->tqp, wr, bad_wr);
	droce_port_unlock(port, qp->q);
	return rc;
}

int
dv_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
		struct ibv_recv_wr **bad_wr)
{
	struct dv_srq *srq = dv_srq(ibsrq);
	struct droce_port *port = port_of(srq->ctx);
	uint32_t q;
	int rc;

	/* the SRQ moves to its first QP's queue (qp_place): post under the
	 * lock of the queue it is on once the lock is held */
	for (;;) {
		q = __atomic_load_n(&srq->q, __ATOMIC_ACQUIRE);
		droce_port_lock(port, q);
		if (__atomic_load_n(&srq->q, __ATOMIC_ACQUIRE) == q)
			break;
		droce_port_unlock(port, q);
	}
	rc = droce_srq_post_recv(srq->tsrq, wr, bad_wr);
	droce_port_unlock(port, q);
	return rc;
}

/*
 * Take up to n completions after one pass of progress (the application's
 * polling drives the queue). Returns the count or a negative errno (CQ
 * overrun).
 */
int
dv_cq_take(struct dv_cq *cq, struct ibv_wc *wc, int n)
{
	struct droce_port *port = port_of(cq->ctx);
	int got;

	int i, drained = 0;

	if (cq->ctx->att != NULL)
		return da_cq_take(cq, wc, n);
	droce_port_poll_driving(port, cq->q);
	got = droce_cq_poll(cq->tcq, wc, n);
	/* the newest send completion: did it leave its QP with nothing
	 * outstanding? */
	for (i = got - 1; i >= 0; i--) {
		if (wc[i].opcode < IBV_WC_RECV) {
			drained = droce_dev_qp_sq_idle(droce_port_dev(port),
				wc[i].qp_num);
			break;
		}
	}
	droce_port_unlock(port, cq->q);
	/*
	 * An application whose sends have all completed may wait on memory
	 * next, not on this CQ (ib_write_lat spins on the buffer the peer
	 * writes). It drove the queue a moment ago, so the progress thread
	 * would keep off it for a 50 us nap; hand it the queue now instead
	 * (where there are CPUs to spare for that).
	 */
	if (drained)
		droce_port_handoff(port, cq->q);
	return got;
}

int
dv_poll_cq(struct ibv_cq *ibcq, int n, struct ibv_wc *wc)
{
	struct dv_cq *cq = dv_cq(ibcq);
	int got;

	if (n <= 0)
		return n < 0 ? -EINVAL : 0;
	/* completions kept back by an ibv_cq_ex poll come first */
	if (cq->cur < cq->nbatch) {
		got = 0;
		while (got < n && cq->cur < cq->nbatch)
			wc[got++] = cq->batch[cq->cur++];
		return got;
	}
	got = dv_cq_take(cq, wc, n);
	return got;
}

int
dv_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct dv_cq *cq = dv_cq(ibcq);
	struct droce_port *port = port_of(cq->ctx);
	int rc;

	droce_port_lock(port, cq->q);
	rc = droce_cq_arm(cq->tcq, solicited_only);
	droce_port_unlock(port, cq->q);
	droce_port_armed(port, cq->q);
	return rc < 0 ? -rc : 0;
}
