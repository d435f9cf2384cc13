/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * The data path's side of the channel, run inside each pass over a
 * queue (droce_port_hooks) with the queue's lock held:
 *  - before receiving: each application's doorbell ring for the queue
 *    names the work queues with new WQEs; each WQE is copied out of the
 *    shared region, checked, and posted to the transport;
 *  - after the transport's progress: the CQs that got completions
 *    (their notify callback put them on the queue's list) are emptied
 *    into their shared rings, and a CQ the application armed fires its
 *    channel's eventfd.
 * Everything read from a region is read once, into our memory, and
 * checked there; a WQE that fails the check moves its QP to the error
 * state (the application's own QP: nobody else's).
 */

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>

#include "droced.h"

#define DD_BATCH 32

static int
list_add(void ***list, uint32_t *n, uint32_t *cap, void *p)
{
	if (*n == *cap) {
		uint32_t nc = *cap ? *cap * 2 : 16;
		void **l = realloc(*list, nc * sizeof(*l));

		if (l == NULL)
			return -ENOMEM;
		*list = l;
		*cap = nc;
	}
	(*list)[(*n)++] = p;
	return 0;
}

static void
list_del(void **list, uint32_t *n, void *p)
{
	uint32_t i;

	for (i = 0; i < *n; i++)
		if (list[i] == p) {
			list[i] = list[--*n];
			return;
		}
}

/* The transport's notify: a completion arrived on an armed CQ. */
void
dd_cq_notify(void *arg, struct droce_cq *tcq)
{
	struct dd_cq *cq = arg;
	struct dd_queue *dq = &cq->app->dp->q[cq->q];

	(void)tcq;
	if (cq->dirty)
		return;
	if (list_add((void ***)&dq->dirty, &dq->ndirty, &dq->cap_dirty, cq) == 0)
		cq->dirty = true;
}

void
dd_queue_forget_cq(struct dd_cq *cq)
{
	if (cq->dirty) {
		struct dd_queue *dq = &cq->app->dp->q[cq->q];

		list_del((void **)dq->dirty, &dq->ndirty, cq);
		cq->dirty = false;
	}
}

void
dd_queue_forget_qp(struct dd_qp *qp)
{
	if (qp->retry) {
		struct dd_queue *dq = &qp->app->dp->q[qp->q];

		list_del((void **)dq->retry, &dq->nretry, qp);
		qp->retry = false;
	}
}

void
dd_qp_retry_later(struct dd_qp *qp)
{
	struct dd_queue *dq = &qp->app->dp->q[qp->q];

	if (!qp->retry && list_add((void ***)&dq->retry, &dq->nretry,
			&dq->cap_retry, qp) == 0)
		qp->retry = true;
}

/* A WQE the daemon refuses: the QP goes to the error state, its WQEs
 * flush, and the application hears of it. */
static void
qp_refuse(struct dd_qp *qp, const char *why, int err)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };

	qp->app->st.refused_wqes++;
	if (qp->failed)
		return;
	DD_LOG(WARNING, "app %u (pid %d) QP %u: a WQE refused (%s, %s)",
		qp->app->id, (int)qp->app->pid, droce_qp_num(qp->tqp), why,
		strerror(err));
	qp->failed = true;
	droce_qp_modify(qp->tqp, &attr, IBV_QP_STATE, NULL);
	if (qp->sq.sh != NULL)
		__atomic_store_n(&qp->sq.sh->error, 1, __ATOMIC_RELEASE);
	dd_async(qp->app, IBV_EVENT_QP_FATAL, DROCE_KIND_QP, qp->handle);
}

/* One send WQE from our copy w into wr: 0, or -1 when it is malformed. */
static int
swqe_to_wr(struct dd_qp *qp, const struct droce_chan_swqe *w, uint32_t slot,
		struct ibv_send_wr *wr, struct ibv_sge *sge)
{
	uint32_t data = slot - (uint32_t)sizeof(*w);

	memset(wr, 0, sizeof(*wr));
	wr->wr_id = w->wr_id;
	wr->opcode = (enum ibv_wr_opcode)w->opcode;
	wr->send_flags = w->send_flags;
	if (w->send_flags & IBV_SEND_INLINE) {
		/* an ATOMIC WRITE's word goes inline whatever max_inline
		 * is (the transport keeps it in the WQE) */
		if ((w->inline_len > qp->max_inline &&
				(w->opcode != IBV_WR_ATOMIC_WRITE ||
				w->inline_len != 8)) || w->inline_len > data)
			return -1;
		sge->addr = (uint64_t)(uintptr_t)(w + 1);
		sge->length = w->inline_len;
		sge->lkey = 0;
		wr->num_sge = w->inline_len ? 1 : 0;
	} else {
		const struct ibv_sge *in = dd_slot_sges((const void *)w,
			sizeof(*w), w->num_sge, qp->max_send_sge, slot);

		if (in == NULL)
			return -1;
		memcpy(sge, in, w->num_sge * sizeof(struct ibv_sge));
		wr->num_sge = (int)w->num_sge;
	}
	wr->sg_list = sge;
	switch (wr->opcode) {
	case IBV_WR_SEND_WITH_IMM:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		wr->imm_data = w->imm_inv;
		break;
	case IBV_WR_SEND_WITH_INV:
	case IBV_WR_LOCAL_INV:
		wr->invalidate_rkey = w->imm_inv;
		break;
	case IBV_WR_BIND_MW: {
		struct dd_mw *mw = dd_table_get(&qp->app->mws, w->ah);
		struct dd_mr *mr = w->remote_qpn == DROCE_CHAN_NONE ? NULL :
			dd_table_get(&qp->app->mrs, w->remote_qpn);

		if (mw == NULL || (mr == NULL && w->remote_qpn != DROCE_CHAN_NONE))
			return -1;
		wr->bind_mw.mw = droce_mw_to_ibv(mw->tmw);
		wr->bind_mw.rkey = w->rkey;
		wr->bind_mw.bind_info.mr = mr != NULL ? droce_mr_to_ibv(mr->tmr) : NULL;
		wr->bind_mw.bind_info.addr = w->bind_addr;
		wr->bind_mw.bind_info.length = w->bind_len;
		wr->bind_mw.bind_info.mw_access_flags = w->remote_qkey;
		wr->num_sge = 0;
		return 0;
	}
	default:
		break;
	}
	if (qp->type == IBV_QPT_XRC_SEND)	/* the XRCETH */
		wr->qp_type.xrc.remote_srqn = w->remote_qpn;
	if (qp->type == IBV_QPT_UD) {
		struct dd_ah *ah = dd_table_get(&qp->app->ahs, w->ah);

		if (ah == NULL)
			return -1;
		wr->wr.ud.ah = droce_ah_to_ibv(ah->tah);
		wr->wr.ud.remote_qpn = w->remote_qpn;
		wr->wr.ud.remote_qkey = w->remote_qkey;
	} else if (wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
			wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD ||
			wr->opcode == DROCE_WR_FLUSH) {
		/* a FLUSH's length, type and level ride in these too */
		wr->wr.atomic.remote_addr = w->remote_addr;
		wr->wr.atomic.compare_add = w->compare_add;
		wr->wr.atomic.swap = w->swap;
		wr->wr.atomic.rkey = w->rkey;
	} else {
		wr->wr.rdma.remote_addr = w->remote_addr;
		wr->wr.rdma.rkey = w->rkey;
	}
	return 0;
}

/*
 * The WQE at cons, refused (status) or after a refused one (flushed):
 * it completes in order behind those the transport holds, as a QP in the
 * error state completes every WR. 0, or -1 when the SQ is full (again
 * next pass).
 */
static int
sq_complete_refused(struct dd_qp *qp, const struct droce_chan_swqe *w,
		enum ibv_wc_status status)
{
	if (droce_qp_post_refused(qp->tqp, w->wr_id, w->opcode, status) ==
			ENOMEM) {
		dd_qp_retry_later(qp);
		return -1;
	}
	return 0;
}

/* Post what the SQ holds, up to what the transport takes. */
static int
drain_sq(struct dd_qp *qp)
{
	static __thread union dd_slot copy;
	struct ibv_sge sge[DROCE_CHAN_SLOT_MAX / sizeof(struct ibv_sge)];
	const struct droce_chan_swqe *w = &copy.s;
	struct dd_wq *wq = &qp->sq;
	int64_t n = dd_wq_avail(wq);
	int done = 0, rc;

	if (n < 0) {	/* a scribbled index: no WQE to complete */
		qp_refuse(qp, "producer index past the ring", EINVAL);
		return 0;
	}
	while (n-- > 0) {
		struct ibv_send_wr wr, *bad;

		dd_wq_copy(wq, &copy);
		if (qp->failed) {
			if (sq_complete_refused(qp, w, IBV_WC_WR_FLUSH_ERR) != 0)
				break;
		} else if (swqe_to_wr(qp, w, wq->slot, &wr, sge) != 0) {
			qp_refuse(qp, "malformed", EINVAL);
			if (sq_complete_refused(qp, w, IBV_WC_LOC_QP_OP_ERR) != 0)
				break;
		} else if ((rc = droce_qp_post_send(qp->tqp, &wr, &bad)) != 0) {
			if (rc == ENOMEM) {
				/* the transport's SQ is full: again next pass */
				dd_qp_retry_later(qp);
				break;
			}
			qp_refuse(qp, "the transport's post", rc);
			if (sq_complete_refused(qp, w, IBV_WC_LOC_QP_OP_ERR) != 0)
				break;
		}
		wq->cons++;
		done++;
	}
	dd_wq_publish(wq);
	qp->app->st.sq_wqes += (uint64_t)done;
	return done;
}

/* Receive WQEs from wq to a QP's RQ (qp) or an SRQ (srq). */
static int
drain_rq(struct dd_app *a, struct dd_wq *wq, struct dd_qp *qp, struct dd_srq *srq,
		uint32_t max_sge)
{
	static __thread union dd_slot copy;
	const struct droce_chan_rwqe *w = &copy.r;
	int64_t n = dd_wq_avail(wq);
	int done = 0, rc, bad_wqe = n < 0;

	while (n-- > 0) {
		struct ibv_recv_wr wr = { 0 }, *bad;
		const struct ibv_sge *sge;

		dd_wq_copy(wq, &copy);
		sge = dd_slot_sges(&copy, sizeof(*w), w->num_sge, max_sge,
			wq->slot);
		wr.wr_id = w->wr_id;
		if (sge == NULL) {
			if (qp == NULL) {
				bad_wqe = 1;
				break;
			}
			/* the QP goes to ERR: this one, emptied, and those
			 * after it complete flushed, in order */
			qp_refuse(qp, "receive", EINVAL);
		} else {
			wr.sg_list = (struct ibv_sge *)(uintptr_t)sge;
			wr.num_sge = (int)w->num_sge;
		}
		rc = qp ? droce_qp_post_recv(qp->tqp, &wr, &bad) :
			droce_srq_post_recv(srq->tsrq, &wr, &bad);
		if (rc == ENOMEM)
			break;	/* full: the application overran its RQ */
		if (rc != 0) {
			bad_wqe = 1;
			break;
		}
		wq->cons++;
		done++;
	}
	if (bad_wqe) {
		/* nothing more of this ring is taken until it is posted to
		 * again; a scribbled index was caught up with already */
		a->st.refused_wqes++;
		if (qp != NULL)
			qp_refuse(qp, "receive", EINVAL);
		else
			dd_async(a, IBV_EVENT_SRQ_ERR, DROCE_KIND_SRQ, srq->handle);
		wq->cons = __atomic_load_n(&wq->sh->prod, __ATOMIC_ACQUIRE);
	}
	dd_wq_publish(wq);
	if (qp)
		a->st.rq_wqes += (uint64_t)done;
	else
		a->st.srq_wqes += (uint64_t)done;
	return done;
}

/*
 * A QP about to go (its queue's lock held): what its application posted
 * leaves first. UD and UC complete once sent, and programs destroy right
 * after their last unsignaled sends (mckey's sender does): a NIC would
 * have read the doorbell by then, so they must not be lost. An RC QP's
 * WQEs would wait for ACKs: those go, as destroying with WRs outstanding
 * does.
 */
void
dd_qp_last_sends(struct dd_qp *qp)
{
	int i;

	if (qp->gsi) {	/* onto QP1, which outlives the proxy */
		dd_gsi_drain_sq(qp);
		return;
	}
	if (qp->failed || (qp->type != IBV_QPT_UD && qp->type != IBV_QPT_UC))
		return;
	drain_sq(qp);
	for (i = 0; i < 1000 && droce_qp_sq_outstanding(qp->tqp) > 0; i++)
		droce_port_progress_locked(qp->app->dp->port, qp->q);
}

/*
 * Every UD send application a posted, taken now (every queue's lock
 * held): its AH is about to go, and what it posted before must leave
 * (a NIC reads the WQE, address and all, at the doorbell; the transport
 * copies the address at its post).
 */
void
dd_app_take_ud_sends(struct dd_app *a)
{
	uint32_t h;

	for (h = 0; h < a->qps.cap; h++) {
		struct dd_qp *qp = dd_table_get(&a->qps, h);

		if (qp != NULL && !qp->gsi && qp->type == IBV_QPT_UD)
			drain_sq(qp);
	}
}

int
dd_drain_srq(struct dd_srq *srq)
{
	return drain_rq(srq->app, &srq->rq, NULL, srq, srq->max_sge);
}

/* One doorbell of application a on queue q. */
static int
ring(struct dd_app *a, uint32_t q, uint32_t db)
{
	uint32_t h = DROCE_DB_HANDLE(db);

	switch (DROCE_DB_KIND(db)) {
	case DROCE_KIND_SQ: {
		struct dd_qp *qp = dd_table_get(&a->qps, h);

		/* an XRC_RECV QP has no SQ: a doorbell for it is noise */
		if (qp == NULL || qp->q != q ||
				(!qp->gsi && qp->sq.sh == NULL))
			return 0;
		return qp->gsi ? dd_gsi_drain_sq(qp) : drain_sq(qp);
	}
	case DROCE_KIND_RQ: {
		struct dd_qp *qp = dd_table_get(&a->qps, h);

		if (qp == NULL || qp->q != q || qp->rq.sh == NULL)
			return 0;
		return qp->gsi ? dd_gsi_drain_rq(qp) :
			drain_rq(a, &qp->rq, qp, NULL, qp->max_recv_sge);
	}
	case DROCE_KIND_SRQ: {
		struct dd_srq *s = dd_table_get(&a->srqs, h);

		return s && s->q == q ? dd_drain_srq(s) : 0;
	}
	default:
		return 0;	/* nonsense: the application's loss only */
	}
}

/* Every WQ of application a on queue q, as if rung: its doorbell ring's
 * producer index was scribbled, and what it rang is lost with it. */
static int
ring_all(struct dd_app *a, uint32_t q)
{
	uint32_t h;
	int work = 0;

	for (h = 0; h < a->qps.cap; h++) {
		struct dd_qp *qp = dd_table_get(&a->qps, h);

		if (qp != NULL && qp->q == q)
			work += ring(a, q, DROCE_DB(DROCE_KIND_SQ, h)) +
				ring(a, q, DROCE_DB(DROCE_KIND_RQ, h));
	}
	for (h = 0; h < a->srqs.cap; h++)
		if (dd_table_get(&a->srqs, h) != NULL)
			work += ring(a, q, DROCE_DB(DROCE_KIND_SRQ, h));
	return work;
}

static int
doorbells(struct dd_app *a, uint32_t q)
{
	int64_t n = dd_db_avail(a, q), i;
	int work = 0;

	if (n == 0)
		return 0;
	if (n < 0) {
		a->st.refused_wqes++;
		return ring_all(a, q);
	}
	for (i = 0; i < n; i++)
		work += ring(a, q, dd_db_take(a, q)) + 1;
	a->st.doorbells += (uint64_t)n;
	dd_db_publish(a, q);
	return work;
}

/* The CQ got completions: its channel, if the application armed it for
 * them (any, or solicited ones: solicited says whether one came). */
static void
cq_fire(struct dd_cq *cq, bool solicited)
{
	uint32_t arm;
	char one = 1;

	/* our store of the ring's prod before our load of arm: the
	 * application stores arm, then polls the ring (Dekker; release and
	 * acquire alone let x86 read arm before prod leaves the store
	 * buffer, and both sides missed: ibv_rc_pingpong -e hung) */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	arm = __atomic_load_n(&cq->sh->arm, __ATOMIC_ACQUIRE);

	if (arm == DROCE_ARM_NONE || cq->chan == NULL ||
			(arm == DROCE_ARM_SOLICITED && !solicited) ||
			__atomic_exchange_n(&cq->sh->arm, DROCE_ARM_NONE,
				__ATOMIC_ACQ_REL) == DROCE_ARM_NONE)
		return;
	cq->events++;
	__atomic_store_n(&cq->sh->events, cq->events, __ATOMIC_RELEASE);
	cq->app->st.events++;
	__atomic_fetch_add(&cq->app->fires, 1, __ATOMIC_RELEASE);
	if (write(cq->chan->wfd, &one, 1) < 0)
		DD_LOG(DEBUG, "channel eventfd: %s", strerror(errno));
}

int
dd_cq_put(struct dd_cq *cq, const struct ibv_wc *wc)
{
	uint32_t cons = __atomic_load_n(&cq->sh->cons, __ATOMIC_ACQUIRE);

	if (cq->prod - cons >= cq->size) {
		__atomic_store_n(&cq->sh->overflow, 1, __ATOMIC_RELEASE);
		return -ENOSPC;
	}
	cq->wc[cq->prod & (cq->size - 1)] = *wc;
	cq->prod++;
	__atomic_store_n(&cq->sh->prod, cq->prod, __ATOMIC_RELEASE);
	cq->app->st.cqes++;
	cq_fire(cq, true);
	return 0;
}

/* Completions of the transport's CQ into the shared ring, as far as the
 * application left room; then its channel if it armed the CQ. Returns
 * 1 while the transport's CQ still holds some. */
static int
cq_flush(struct dd_cq *cq, int *work)
{
	uint32_t cons = __atomic_load_n(&cq->sh->cons, __ATOMIC_ACQUIRE);
	uint32_t room, got = 0, sol;
	int n, more = 0;

	room = cq->prod - cons > cq->size ? 0 : cq->size - (cq->prod - cons);
	while (room > 0) {
		struct ibv_wc wc[DD_BATCH];
		int i;

		n = droce_cq_poll(cq->tcq, wc, (int)(room < DD_BATCH ? room : DD_BATCH));
		if (n == -EOVERFLOW) {
			__atomic_store_n(&cq->sh->overflow, 1, __ATOMIC_RELEASE);
			break;
		}
		if (n <= 0)
			break;
		for (i = 0; i < n; i++)
			cq->wc[(cq->prod + (uint32_t)i) & (cq->size - 1)] = wc[i];
		cq->prod += (uint32_t)n;
		got += (uint32_t)n;
		room -= (uint32_t)n;
	}
	if (room == 0)
		more = 1;	/* look again next pass */
	if (got == 0)
		return more;
	__atomic_store_n(&cq->sh->prod, cq->prod, __ATOMIC_RELEASE);
	cq->app->st.cqes += got;
	*work += (int)got;
	sol = droce_cq_solicited_seq(cq->tcq);
	cq_fire(cq, sol != cq->solicited_seen);
	cq->solicited_seen = sol;
	return more;
}

static int
completions(struct dd_port *dp, uint32_t q)
{
	struct dd_queue *dq = &dp->q[q];
	uint32_t i = 0;
	int work = 0;

	while (i < dq->ndirty) {
		struct dd_cq *cq = dq->dirty[i];

		if (cq_flush(cq, &work)) {
			i++;
			continue;
		}
		/* empty: the transport tells us of the next completion */
		droce_cq_arm(cq->tcq, 0);
		cq->dirty = false;
		dq->dirty[i] = dq->dirty[--dq->ndirty];
	}
	return work;
}

static int
retries(struct dd_port *dp, uint32_t q)
{
	struct dd_queue *dq = &dp->q[q];
	uint32_t i = 0, n;
	int work = 0;

	while (i < dq->nretry) {
		struct dd_qp *qp = dq->retry[i];

		n = dq->nretry;
		qp->retry = false;
		dq->retry[i] = dq->retry[--dq->nretry];
		work += qp->gsi ? dd_gsi_drain_sq(qp) : drain_sq(qp);
		if (dq->nretry > n - 1)	/* back on the list, at its end */
			i++;
	}
	return work;
}

int
dd_poll_hook(void *arg, uint32_t q, enum droce_hook_phase phase)
{
	struct dd_port *dp = arg;
	uint32_t i;
	int work = 0;

	if (phase == DROCE_HOOK_AFTER)
		return completions(dp, q) +
			(dp->gsi != NULL ? dd_gsi_poll(dp, q) : 0);
	if (dp->q[q].nretry)
		work += retries(dp, q);
	/* the port's sessions (apps[] changes with every queue locked) */
	for (i = 0; i < dd.nb_apps; i++)
		if (dd.apps[i]->dp == dp)
			work += doorbells(dd.apps[i], q);
	return work;
}

/* The wake pipes that ended a nap, emptied (dd.apps_lock held: a
 * session's pipe is closed under it). */
static void
drain_wakes(struct dd_port *dp)
{
	struct epoll_event ev[32];
	char buf[64];
	int n, i;

	if (dp->wake_ep < 0)
		return;
	n = epoll_wait(dp->wake_ep, ev, 32, 0);
	for (i = 0; i < n; i++)
		while (read(ev[i].data.fd, buf, sizeof(buf)) > 0)
			;
}

/*
 * Whether a thread of the application sleeps on a channel it armed
 * lately: it armed more channel CQs than we fired, the last within
 * DROCE_CHAN_ARMED_MS. Its completion is then ours to deliver at once,
 * as a NIC's interrupt would (in process, the progress thread's awaited
 * queues); after the window, naps again (a CQ armed and left so).
 */
static bool
app_awaited(const struct dd_app *a, uint64_t now_ns)
{
	uint32_t arms = __atomic_load_n(&a->region->arms, __ATOMIC_ACQUIRE);
	uint64_t at = __atomic_load_n(&a->region->arm_ns, __ATOMIC_ACQUIRE);

	return arms != __atomic_load_n(&a->fires, __ATOMIC_ACQUIRE) &&
		now_ns - at < (uint64_t)DROCE_CHAN_ARMED_MS * 1000000;
}

/* An application spinning on its empty CQs lately (region->spin_ns):
 * it waits for what only this daemon delivers. A stamp from the future
 * (scribbled) reads as long ago. */
static bool
app_spins(const struct dd_app *a, uint64_t now_ns)
{
	uint64_t at = __atomic_load_n(&a->region->spin_ns, __ATOMIC_RELAXED);

	return now_ns - at < (uint64_t)DROCE_CHAN_SPIN_MS * 1000000;
}

static uint64_t
mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + (uint64_t)ts.tv_nsec;
}

/* The progress thread naps: applications must wake it after a doorbell
 * or an arm. Say so in every region, then look once more (a doorbell
 * rung or a CQ armed before the flag was seen would otherwise wait out
 * the nap). */
int
dd_sleep_hook(void *arg, int sleeping)
{
	struct dd_port *dp = arg;
	uint32_t i, q;
	int pending = 0, awaited = 0;
	uint64_t now = sleeping ? mono_ns() : 0;

	/* no queue lock here: the list of applications under its mutex;
	 * a session's port is set once (dd_app_bind) */
	pthread_mutex_lock(&dd.apps_lock);
	if (!sleeping)
		drain_wakes(dp);
	for (i = 0; i < dd.nb_apps; i++)
		if (__atomic_load_n(&dd.apps[i]->dp, __ATOMIC_ACQUIRE) == dp)
			__atomic_store_n(&dd.apps[i]->region->sleeping,
				(uint32_t)sleeping, __ATOMIC_SEQ_CST);
	for (i = 0; sleeping && !pending && i < dd.nb_apps; i++) {
		struct dd_app *a = dd.apps[i];

		if (__atomic_load_n(&a->dp, __ATOMIC_ACQUIRE) != dp)
			continue;
		for (q = 0; q < dp->nb_queues; q++)
			if (__atomic_load_n(&a->db[q]->prod,
					__ATOMIC_SEQ_CST) != a->db_cons[q])
				pending = 1;
		if (!pending && app_awaited(a, now)) {
			a->st.awaited_skips++;
			pending = awaited = 1;
		} else if (!pending && app_spins(a, now)) {
			a->st.spin_skips++;
			pending = awaited = 1;
		}
	}
	pthread_mutex_unlock(&dd.apps_lock);
	/* spinning for a sleeper: let the woken one, or anyone waiting
	 * for this CPU, run first (on few CPUs a spinner finishing its
	 * slice would delay the very thread it woke) */
	if (awaited)
		sched_yield();
	return pending;
}
