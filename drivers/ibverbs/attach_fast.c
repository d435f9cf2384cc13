/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * Attached mode, the fast path (ibv_context_ops): a post writes slots
 * of the WQ's ring in the shared region, publishes prod and rings the
 * doorbell of the WQ's queue; a poll copies completions out of the CQ's
 * ring. No system call, except a write to wake droced's progress thread
 * when it naps (idle mode).
 *
 * The daemon refuses a malformed WQE by moving the QP to the error
 * state, so we check here what ibv_post_send(3) would refuse (the same
 * rules as the transport's, lib/transport/tp_post.c) and return its
 * errno with *bad_wr set instead.
 */

#include <assert.h>
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "attach.h"

/* The ibv_wr_* flag of each opcode (droce_qp_type_send_ops' terms);
 * 0: not through droced (memory windows, TSO, driver opcodes). */
static const uint64_t op_flag[] = {
	[IBV_WR_RDMA_WRITE] = IBV_QP_EX_WITH_RDMA_WRITE,
	[IBV_WR_RDMA_WRITE_WITH_IMM] = IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM,
	[IBV_WR_SEND] = IBV_QP_EX_WITH_SEND,
	[IBV_WR_SEND_WITH_IMM] = IBV_QP_EX_WITH_SEND_WITH_IMM,
	[IBV_WR_RDMA_READ] = IBV_QP_EX_WITH_RDMA_READ,
	[IBV_WR_ATOMIC_CMP_AND_SWP] = IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP,
	[IBV_WR_ATOMIC_FETCH_AND_ADD] = IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD,
	[IBV_WR_LOCAL_INV] = IBV_QP_EX_WITH_LOCAL_INV,
	[IBV_WR_SEND_WITH_INV] = IBV_QP_EX_WITH_SEND_WITH_INV,
	[IBV_WR_BIND_MW] = IBV_QP_EX_WITH_BIND_MW,
	[IBV_WR_ATOMIC_WRITE] = IBV_QP_EX_WITH_ATOMIC_WRITE,
	[DROCE_WR_FLUSH] = DROCE_QP_EX_WITH_FLUSH,
};

/* An ATOMIC WRITE's word goes inline whatever max_inline_data is: the
 * slack of the smallest slot holds it. */
static_assert(((sizeof(struct droce_chan_swqe) + DROCE_CHAN_CL - 1) &
	~(size_t)(DROCE_CHAN_CL - 1)) - sizeof(struct droce_chan_swqe) >= 8,
	"no room for an ATOMIC WRITE's word in a send slot");

#define RD_ATOMIC_OPS (IBV_QP_EX_WITH_RDMA_READ | \
	IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)
#define ATOMIC_OPS (IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | \
	IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)

static inline int
dead(struct dv_context *c)
{
	return da_dead(c->att);
}

/* The WR's errno, 0 if the daemon will take it. */
static int
check_send(const struct dv_qp *qp, const struct ibv_send_wr *wr)
{
	uint64_t f, len = 0;
	int i;

	f = (unsigned int)wr->opcode < sizeof(op_flag) / sizeof(op_flag[0]) ?
		op_flag[wr->opcode] : 0;
	if (f == 0 || !(qp->type_ops & f))
		return EINVAL;
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->max_sge ||
			(wr->num_sge > 0 && wr->sg_list == NULL))
		return EINVAL;
	for (i = 0; i < wr->num_sge; i++)
		len += wr->sg_list[i].length;
	if (len > 1ull << 31)
		return EINVAL;
	if ((wr->send_flags & IBV_SEND_INLINE) &&
			((f & RD_ATOMIC_OPS) || (len > qp->max_inline &&
			f != IBV_QP_EX_WITH_ATOMIC_WRITE)))
		return EINVAL;
	if ((wr->send_flags & IBV_SEND_FENCE) &&
			qp->ex.qp_base.qp_type != IBV_QPT_RC &&
			qp->ex.qp_base.qp_type != IBV_QPT_XRC_SEND)
		return EINVAL;
	/* XRC: a remote operation names the target's SRQ (24 bits, not 0) */
	if (qp->ex.qp_base.qp_type == IBV_QPT_XRC_SEND &&
			wr->opcode != IBV_WR_LOCAL_INV &&
			wr->opcode != IBV_WR_BIND_MW &&
			(wr->qp_type.xrc.remote_srqn == 0 ||
			wr->qp_type.xrc.remote_srqn > 0xffffff))
		return EINVAL;
	if ((f & ATOMIC_OPS) && ((wr->wr.atomic.remote_addr & 7) || len != 8))
		return EINVAL;
	/* IBTA 1.5 ATOMIC WRITE: one aligned 64-bit word */
	if (f == IBV_QP_EX_WITH_ATOMIC_WRITE &&
			((wr->wr.rdma.remote_addr & 7) || len != 8))
		return EINVAL;
	/* FLUSH, in wr.atomic as the transport takes it: nothing local, a
	 * placement type (or both), a level, a 32-bit length */
	if (f == DROCE_QP_EX_WITH_FLUSH &&
			(wr->num_sge || (wr->send_flags & IBV_SEND_INLINE) ||
			(wr->wr.atomic.swap & 0xff) == 0 ||
			(wr->wr.atomic.swap & 0xff) > (DROCE_FLUSH_GLOBAL |
			DROCE_FLUSH_PERSISTENT) ||
			(wr->wr.atomic.swap >> 8) > DROCE_FLUSH_MR ||
			wr->wr.atomic.compare_add > 1ull << 31))
		return EINVAL;
	if (wr->opcode == IBV_WR_BIND_MW && (wr->bind_mw.mw == NULL ||
			wr->bind_mw.mw->context != qp->ex.qp_base.context ||
			(wr->bind_mw.bind_info.mr == NULL &&
			wr->bind_mw.bind_info.length != 0)))
		return EINVAL;
	if (qp->ex.qp_base.qp_type == IBV_QPT_UD &&
			(wr->wr.ud.ah == NULL || len > qp->ud_max_len))
		return EINVAL;
	return 0;
}

/* One send WR into slot: checked already. */
static void
write_swqe(const struct dv_qp *qp, uint8_t *slot, const struct ibv_send_wr *wr)
{
	struct droce_chan_swqe *w = (struct droce_chan_swqe *)slot;
	uint64_t f = op_flag[wr->opcode];
	int i;

	memset(w, 0, sizeof(*w));
	w->wr_id = wr->wr_id;
	w->opcode = wr->opcode;
	w->send_flags = wr->send_flags;
	w->imm_inv = (wr->opcode == IBV_WR_SEND_WITH_INV ||
		wr->opcode == IBV_WR_LOCAL_INV) ? wr->invalidate_rkey :
		wr->imm_data;
	if (wr->opcode == IBV_WR_BIND_MW) {
		const struct ibv_mw_bind_info *b = &wr->bind_mw.bind_info;

		w->ah = wr->bind_mw.mw->handle;
		w->remote_qpn = b->mr != NULL ? b->mr->handle : DROCE_CHAN_NONE;
		w->remote_qkey = (uint32_t)b->mw_access_flags;
		w->rkey = wr->bind_mw.rkey;
		w->bind_addr = b->addr;
		w->bind_len = b->length;
		return;		/* no SGEs */
	}
	if (qp->ex.qp_base.qp_type == IBV_QPT_XRC_SEND)
		w->remote_qpn = wr->qp_type.xrc.remote_srqn;
	if (qp->ex.qp_base.qp_type == IBV_QPT_UD) {
		w->ah = ((const struct da_ah *)wr->wr.ud.ah)->handle;
		w->remote_qpn = wr->wr.ud.remote_qpn;
		w->remote_qkey = wr->wr.ud.remote_qkey;
	} else if (f & (ATOMIC_OPS | DROCE_QP_EX_WITH_FLUSH)) {
		w->remote_addr = wr->wr.atomic.remote_addr;
		w->rkey = wr->wr.atomic.rkey;
		w->compare_add = wr->wr.atomic.compare_add;
		w->swap = wr->wr.atomic.swap;
	} else {
		w->remote_addr = wr->wr.rdma.remote_addr;
		w->rkey = wr->wr.rdma.rkey;
	}
	if (wr->send_flags & IBV_SEND_INLINE) {
		/* copied now: the caller may reuse its buffers at once */
		uint8_t *d = (uint8_t *)(w + 1);

		for (i = 0; i < wr->num_sge; i++) {
			memcpy(d, (const void *)(uintptr_t)wr->sg_list[i].addr,
				wr->sg_list[i].length);
			d += wr->sg_list[i].length;
		}
		w->inline_len = (uint32_t)(d - (uint8_t *)(w + 1));
	} else {
		w->num_sge = (uint32_t)wr->num_sge;
		/* no SGE (a WRITE WITH IMMEDIATE of nothing, rsockets'
		 * control messages): sg_list may be NULL */
		if (wr->num_sge > 0)
			memcpy(w + 1, wr->sg_list, sizeof(struct ibv_sge) *
				(size_t)wr->num_sge);
	}
}

static inline uint8_t *
wq_slot(struct da_wq *wq, uint32_t i)
{
	return wq->slots + (size_t)(i & (wq->size - 1)) * wq->slot;
}

static inline uint32_t
wq_room(const struct da_wq *wq)
{
	uint32_t used = wq->prod - __atomic_load_n(&wq->sh->cons,
		__ATOMIC_ACQUIRE);

	return used >= wq->size ? 0 : wq->size - used;
}

/* Publish what was written since prod0 and ring the doorbell. */
static void
wq_publish(struct da_ctx *a, struct da_wq *wq, uint32_t prod0, uint32_t kind,
		uint32_t handle)
{
	if (wq->prod == prod0)
		return;
	__atomic_store_n(&wq->sh->prod, wq->prod, __ATOMIC_RELEASE);
	da_ring(a, wq, kind, handle);
}

static int
post_send(struct dv_qp *qp, struct ibv_send_wr *wr,
		struct ibv_send_wr **bad_wr, int all)
{
	struct da_wq *wq = &qp->sq;
	struct ibv_send_wr *w;
	uint32_t prod0, n = 0;
	int rc = 0;

	if (dead(qp->ctx)) {
		*bad_wr = wr;
		return EIO;
	}
	if (wq->sh == NULL) {	/* an XRC_RECV QP sends nothing */
		*bad_wr = wr;
		return EINVAL;
	}
	pthread_spin_lock(&wq->lock);
	switch (qp->ex.qp_base.state) {
	case IBV_QPS_RESET:
	case IBV_QPS_INIT:
	case IBV_QPS_RTR:
		pthread_spin_unlock(&wq->lock);
		*bad_wr = wr;
		return EINVAL;
	default:
		break;
	}
	/* all or nothing (ibv_wr_complete): the whole list is checked first */
	for (w = wr; all && w != NULL; w = w->next, n++) {
		rc = check_send(qp, w);
		if (rc == 0 && n >= wq_room(wq))
			rc = ENOMEM;
		if (rc != 0) {
			pthread_spin_unlock(&wq->lock);
			*bad_wr = w;
			return rc;
		}
	}
	prod0 = wq->prod;
	for (; wr != NULL; wr = wr->next) {
		if (!all) {
			rc = check_send(qp, wr);
			if (rc == 0 && wq_room(wq) == 0)
				rc = ENOMEM;
			if (rc != 0) {
				*bad_wr = wr;
				break;
			}
		}
		write_swqe(qp, wq_slot(wq, wq->prod), wr);
		wq->prod++;
	}
	wq_publish(qp->ctx->att, wq, prod0, DROCE_KIND_SQ, qp->handle);
	pthread_spin_unlock(&wq->lock);
	return rc;
}

int
da_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		struct ibv_send_wr **bad_wr)
{
	return post_send(dv_qp(ibqp), wr, bad_wr, 0);
}

int
da_post_send_all(struct dv_qp *qp, struct ibv_send_wr *wr,
		struct ibv_send_wr **bad_wr)
{
	return post_send(qp, wr, bad_wr, 1);
}

/* Receive WRs into wq (a QP's RQ or an SRQ's). */
static int
post_rq(struct da_ctx *a, struct da_wq *wq, uint32_t max_sge, uint32_t kind,
		uint32_t handle, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	uint32_t prod0;
	int rc = 0;

	prod0 = wq->prod;
	for (; wr != NULL; wr = wr->next) {
		struct droce_chan_rwqe *w;

		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > max_sge ||
				(wr->num_sge > 0 && wr->sg_list == NULL))
			rc = EINVAL;
		else if (wq_room(wq) == 0)
			rc = ENOMEM;
		if (rc != 0) {
			*bad_wr = wr;
			break;
		}
		w = (struct droce_chan_rwqe *)wq_slot(wq, wq->prod);
		w->wr_id = wr->wr_id;
		w->num_sge = (uint32_t)wr->num_sge;
		w->pad = 0;
		/* a receive for an immediate alone has no SGE, and may have
		 * no sg_list (rsockets') */
		if (wr->num_sge > 0)
			memcpy(w + 1, wr->sg_list, sizeof(struct ibv_sge) *
				(size_t)wr->num_sge);
		wq->prod++;
	}
	wq_publish(a, wq, prod0, kind, handle);
	return rc;
}

int
da_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		struct ibv_recv_wr **bad_wr)
{
	struct dv_qp *qp = dv_qp(ibqp);
	int rc;

	if (dead(qp->ctx)) {
		*bad_wr = wr;
		return EIO;
	}
	if (ibqp->srq != NULL || qp->rq.sh == NULL) {
		*bad_wr = wr;
		return EINVAL;
	}
	pthread_spin_lock(&qp->rq.lock);
	/* the state is the SQ lock's; a stale RESET only refuses early */
	if (__atomic_load_n(&ibqp->state, __ATOMIC_RELAXED) == IBV_QPS_RESET) {
		*bad_wr = wr;
		rc = EINVAL;
	} else {
		rc = post_rq(qp->ctx->att, &qp->rq, qp->max_recv_sge,
			DROCE_KIND_RQ, qp->handle, wr, bad_wr);
	}
	pthread_spin_unlock(&qp->rq.lock);
	return rc;
}

int
da_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
		struct ibv_recv_wr **bad_wr)
{
	struct dv_srq *srq = dv_srq(ibsrq);
	int rc;

	if (dead(srq->ctx)) {
		*bad_wr = wr;
		return EIO;
	}
	pthread_spin_lock(&srq->rq.lock);
	rc = post_rq(srq->ctx->att, &srq->rq, srq->max_sge, DROCE_KIND_SRQ,
		srq->handle, wr, bad_wr);
	pthread_spin_unlock(&srq->rq.lock);
	return rc;
}

/*
 * Up to n completions from the CQ's ring: the count, or -EOVERFLOW once
 * the daemon lost a completion and none is left (as dv_poll_cq), or -1
 * (errno EIO) once the daemon is gone.
 */
/* Whether the completion at ring index i is of a QP destroyed since. */
static int
cq_gone(const struct dv_cq *cq, const struct ibv_wc *wc, uint32_t i)
{
	uint32_t k;

	for (k = 0; k < cq->ngone; k++)
		if (wc->qp_num == cq->gone[k].qpn &&
				(int32_t)(i - cq->gone[k].bound) < 0)
			return 1;
	return 0;
}

/* Records the ring has passed are done with (cq->lock held). */
static void
cq_gone_expire(struct dv_cq *cq, uint32_t cons)
{
	uint32_t k = 0;

	while (k < cq->ngone)
		if ((int32_t)(cons - cq->gone[k].bound) >= 0)
			cq->gone[k] = cq->gone[--cq->ngone];
		else
			k++;
}

/*
 * A QP goes: its completions the daemon already put in the ring go with
 * it, as a ConnectX provider cleans its CQs when it destroys a QP (the
 * daemon's transport dropped those it still held). Everything of the QP
 * is before the ring's prod now: the daemon destroyed it before it
 * answered. Without memory for the record, they stay (as before).
 */
void
da_cq_forget_qp(struct dv_cq *cq, uint32_t qpn)
{
	struct dv_cq_gone *g;

	pthread_spin_lock(&cq->lock);
	cq_gone_expire(cq, cq->sh->cons);
	g = realloc(cq->gone, (cq->ngone + 1) * sizeof(*g));
	if (g != NULL) {
		cq->gone = g;
		g[cq->ngone].qpn = qpn;
		g[cq->ngone].bound = __atomic_load_n(&cq->sh->prod,
			__ATOMIC_ACQUIRE);
		if (g[cq->ngone].bound != cq->sh->cons)
			cq->ngone++;
	}
	pthread_spin_unlock(&cq->lock);
}

/*
 * A thread that finds its CQs empty poll after poll spins on rings only
 * the daemon fills. Where the daemon shares the CPUs (it naps when idle,
 * or runs beside the applications) the spinner keeps it off the CPU it
 * needs until the scheduler's slice ends: milliseconds a round trip on
 * two CPUs. Every DROCE_CHAN_SPIN_POLLS empty polls in a row it says so
 * (the daemon then keeps from its naps) and gives the CPU up once; with
 * nothing else to run the yield returns at once.
 */
static void
spin_mark(struct dv_cq *cq, uint32_t got)
{
	static __thread uint32_t empty;

	if (got) {
		empty = 0;
		return;
	}
	if (++empty < DROCE_CHAN_SPIN_POLLS)
		return;
	empty = 0;
	__atomic_store_n(&cq->ctx->att->region->spin_ns, dv_now_ns(),
		__ATOMIC_RELAXED);
	sched_yield();
}

int
da_cq_take(struct dv_cq *cq, struct ibv_wc *wc, int n)
{
	uint32_t prod, cons, avail, got = 0;

	if (dead(cq->ctx)) {
		errno = EIO;
		return -1;
	}
	pthread_spin_lock(&cq->lock);
	prod = __atomic_load_n(&cq->sh->prod, __ATOMIC_ACQUIRE);
	cons = cq->sh->cons;
	avail = prod - cons;
	if (avail > cq->size)
		avail = cq->size;	/* never more than the ring holds */
	if (cq->ngone == 0) {
		if ((uint32_t)n < avail)
			avail = (uint32_t)n;
		for (got = 0; got < avail; got++)
			wc[got] = cq->wc[(cons + got) & (cq->size - 1)];
		cons += got;
	} else {
		for (; avail > 0 && got < (uint32_t)n; avail--, cons++) {
			const struct ibv_wc *w = &cq->wc[cons & (cq->size - 1)];

			if (!cq_gone(cq, w, cons))
				wc[got++] = *w;
		}
		cq_gone_expire(cq, cons);
	}
	if (cons != cq->sh->cons)
		__atomic_store_n(&cq->sh->cons, cons, __ATOMIC_RELEASE);
	pthread_spin_unlock(&cq->lock);
	if (got == 0 && __atomic_load_n(&cq->sh->overflow, __ATOMIC_RELAXED))
		return -EOVERFLOW;
	spin_mark(cq, got);
	return (int)got;
}

int
da_poll_cq(struct ibv_cq *ibcq, int n, struct ibv_wc *wc)
{
	struct dv_cq *cq = dv_cq(ibcq);
	int got = 0;

	if (n <= 0)
		return n < 0 ? -EINVAL : 0;
	/* completions kept back by an ibv_cq_ex poll come first */
	if (cq->cur < cq->nbatch) {
		while (got < n && cq->cur < cq->nbatch)
			wc[got++] = cq->batch[cq->cur++];
		return got;
	}
	return da_cq_take(cq, wc, n);
}

int
da_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct dv_cq *cq = dv_cq(ibcq);

	struct da_ctx *a;
	uint32_t was;

	if (dead(cq->ctx))
		return EIO;
	a = cq->ctx->att;
	if (ibcq->channel != NULL)	/* for a daemon that naps (idle) */
		__atomic_store_n(&a->region->arm_ns, dv_now_ns(),
			__ATOMIC_RELAXED);
	was = __atomic_exchange_n(&cq->sh->arm, solicited_only ?
		DROCE_ARM_SOLICITED : DROCE_ARM_ANY, __ATOMIC_ACQ_REL);
	if (ibcq->channel != NULL && was == DROCE_ARM_NONE)
		__atomic_fetch_add(&a->region->arms, 1, __ATOMIC_RELEASE);
	/* the daemon publishes a completion, then reads arm; the caller
	 * polls next: our store of arm must come before our load of the
	 * ring's prod (Dekker), or both miss and the channel waits forever */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (ibcq->channel != NULL && was == DROCE_ARM_NONE)
		da_wake(a);
	return 0;
}

/* ---- memory windows: binding (attach_obj.c allocates them) ---- */

/* ibv_bind_mw(3), type 1: a BIND_MW WQE whose new rkey (the window's
 * with the next key byte, as the transport's droce_mw_bind1 makes it)
 * the window carries at once. */
int
da_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *bind)
{
	struct ibv_send_wr wr, *bad;
	uint32_t rkey;
	int rc;

	if (mw == NULL || bind == NULL || mw->type != IBV_MW_TYPE_1)
		return EINVAL;
	rkey = (mw->rkey & ~0xffu) | ((mw->rkey + 1) & 0xff);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = bind->wr_id;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = bind->send_flags;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = rkey;
	wr.bind_mw.bind_info = bind->bind_info;
	rc = qp->context->ops.post_send(qp, &wr, &bad);
	if (rc == 0)
		mw->rkey = rkey;
	return rc;
}
