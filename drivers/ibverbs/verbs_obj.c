/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * The verbs objects: PD, CQ, SRQ, QP, AH (MRs and MWs: verbs_mr.c).
 * Each wraps the transport's object; creating the first PD or CQ of a
 * context starts the device's data path. Errors follow the man pages: constructors return
 * NULL with errno, destructors and modify return an errno value.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "droce_verbs.h"
#include "attach.h"

/* ---- protection domains ---- */

struct ibv_pd *
ibv_alloc_pd(struct ibv_context *context)
{
	struct dv_context *ctx = dv_ctx(context);
	struct dv_pd *pd;
	int rc;

	if (ctx->att != NULL)
		return da_alloc_pd(context);
	rc = dv_port_get(ctx);
	if (rc) {
		errno = rc;
		return NULL;
	}
	pd = calloc(1, sizeof(*pd));
	if (pd == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	pd->tpd = droce_pd_alloc(ctx->dev->tdev);
	if (pd->tpd == NULL) {
		free(pd);
		return NULL;
	}
	pd->pd.context = context;
	return &pd->pd;
}

int
ibv_dealloc_pd(struct ibv_pd *ibpd)
{
	struct dv_pd *pd = dv_pd(ibpd);
	int rc;

	if (da_attached(ibpd->context))
		return da_dealloc_pd(pd);
	rc = droce_pd_dealloc(pd->tpd);
	if (rc)
		return -rc;
	free(pd);
	return 0;
}

/* ---- completion queues ---- */

struct dv_cq *
dv_cq_create(struct ibv_context *context, int cqe, void *cq_context,
		struct ibv_comp_channel *channel)
{
	struct dv_context *ctx = dv_ctx(context);
	struct dv_device *d = ctx->dev;
	struct dv_cq *cq;
	int rc;

	if (ctx->att != NULL)
		return da_cq_create(context, cqe, cq_context, channel, 0);
	rc = dv_port_get(ctx);
	if (rc) {
		errno = rc;
		return NULL;
	}
	if (cqe <= 0 || (uint32_t)cqe > droce_dev_limits(d->tdev)->max_cqe) {
		errno = EINVAL;
		return NULL;
	}
	if (channel != NULL && channel->context != context) {
		errno = EINVAL;
		return NULL;
	}
	cq = calloc(1, sizeof(*cq));
	if (cq == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_lock(&d->lock);
	cq->q = d->next_queue++ % d->nb_queues;
	pthread_mutex_unlock(&d->lock);
	cq->tcq = droce_cq_create(d->tdev, cq->q, (uint32_t)cqe);
	if (cq->tcq == NULL) {
		free(cq);
		return NULL;
	}
	cq->ctx = ctx;
	droce_cq_set_user(cq->tcq, cq);
	cq->ex.context = context;
	cq->ex.channel = channel;
	cq->ex.cq_context = cq_context;
	cq->ex.cqe = (int)droce_cq_size(cq->tcq);
	pthread_mutex_init(&cq->ex.mutex, NULL);
	pthread_cond_init(&cq->ex.cond, NULL);
	if (channel != NULL) {
		__atomic_fetch_add(&channel->refcnt, 1, __ATOMIC_RELAXED);
		__atomic_fetch_or(&((struct dv_channel *)channel)->qmask,
			1ull << (cq->q % 64), __ATOMIC_RELAXED);
		droce_port_lock(d->port, cq->q);
		droce_cq_set_notify(cq->tcq, dv_cq_notify, cq);
		droce_cq_set_awaited(cq->tcq);
		droce_port_unlock(d->port, cq->q);
	}
	dv_cq_ex_setup(cq);
	return cq;
}

struct ibv_cq *
ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
		struct ibv_comp_channel *channel, int comp_vector)
{
	struct dv_cq *cq;

	if (comp_vector < 0 || comp_vector >= context->num_comp_vectors) {
		errno = EINVAL;
		return NULL;
	}
	cq = dv_cq_create(context, cqe, cq_context, channel);
	return cq ? ibv_cq_ex_to_cq(&cq->ex) : NULL;
}

/*
 * At least cqe entries from now on, the completions it holds kept in
 * order; EINVAL below what it holds (or past the device's max_cqe).
 */
int
ibv_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct dv_cq *cq = dv_cq(ibcq);
	struct droce_port *port;
	int rc;

	if (cqe <= 0)
		return EINVAL;
	if (da_attached(ibcq->context))
		return da_resize_cq(cq, cqe);
	port = cq->ctx->dev->port;
	droce_port_lock(port, cq->q);
	rc = -droce_cq_resize(cq->tcq, (uint32_t)cqe);
	if (rc == 0)
		cq->ex.cqe = (int)droce_cq_size(cq->tcq);
	droce_port_unlock(port, cq->q);
	return rc;
}

int
ibv_destroy_cq(struct ibv_cq *ibcq)
{
	struct dv_cq *cq = dv_cq(ibcq);
	struct droce_port *port = cq->ctx->dev->port;
	int rc;

	if (cq->ctx->att != NULL)
		return da_destroy_cq(cq);
	droce_port_lock(port, cq->q);
	rc = droce_cq_destroy(cq->tcq);
	droce_port_unlock(port, cq->q);
	if (rc)
		return -rc;
	if (ibcq->channel != NULL)
		__atomic_fetch_sub(&ibcq->channel->refcnt, 1, __ATOMIC_RELAXED);
	/* as rdma-core: wait for the application to ack every event */
	pthread_mutex_lock(&ibcq->mutex);
	while (ibcq->comp_events_completed != cq->comp_events_reported)
		pthread_cond_wait(&ibcq->cond, &ibcq->mutex);
	pthread_mutex_unlock(&ibcq->mutex);
	free(cq);
	return 0;
}

/* ---- shared receive queues ---- */

struct ibv_srq *
dv_create_srq_ex(struct ibv_context *context, struct ibv_srq_init_attr_ex *attr)
{
	struct dv_context *ctx = dv_ctx(context);
	struct dv_device *d = ctx->dev;
	struct ibv_srq_init_attr ia;
	struct dv_srq *srq;
	uint32_t known = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
		IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_XRCD;

	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || attr->pd == NULL ||
			(attr->comp_mask & ~known)) {
		errno = EINVAL;
		return NULL;
	}
	if ((attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) &&
			attr->srq_type == IBV_SRQT_XRC)
		return dv_create_srq_xrc(ctx, attr);
	if ((attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) &&
			attr->srq_type != IBV_SRQT_BASIC) {
		errno = EOPNOTSUPP;	/* tag matching */
		return NULL;
	}
	if (ctx->att != NULL)
		return da_create_srq(context, attr);
	srq = calloc(1, sizeof(*srq));
	if (srq == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	memset(&ia, 0, sizeof(ia));
	ia.srq_context = attr->srq_context;
	ia.attr = attr->attr;
	/* an SRQ feeds QPs of one queue: the first queue's, as CQs start */
	srq->q = 0;
	srq->tsrq = droce_srq_create(dv_pd(attr->pd)->tpd, srq->q, &ia);
	if (srq->tsrq == NULL) {
		free(srq);
		return NULL;
	}
	attr->attr = ia.attr;
	srq->ctx = ctx;
	droce_srq_set_user(srq->tsrq, srq);
	srq->srq.context = context;
	srq->srq.srq_context = attr->srq_context;
	srq->srq.pd = attr->pd;
	pthread_mutex_init(&srq->srq.mutex, NULL);
	pthread_cond_init(&srq->srq.cond, NULL);
	(void)d;
	return &srq->srq;
}

struct ibv_srq *
ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	struct ibv_srq_init_attr_ex ax;
	struct ibv_srq *s;

	memset(&ax, 0, sizeof(ax));
	ax.srq_context = attr->srq_context;
	ax.attr = attr->attr;
	ax.comp_mask = IBV_SRQ_INIT_ATTR_PD;
	ax.pd = pd;
	s = dv_create_srq_ex(pd->context, &ax);
	if (s != NULL)
		attr->attr = ax.attr;
	return s;
}

int
ibv_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr, int mask)
{
	struct dv_srq *srq = dv_srq(ibsrq);
	struct droce_port *port = srq->ctx->dev->port;
	int rc;

	if (srq->ctx->att != NULL)
		return da_modify_srq(srq, attr, mask);
	droce_port_lock(port, srq->q);
	rc = droce_srq_modify(srq->tsrq, attr, mask);
	droce_port_unlock(port, srq->q);
	return -rc;
}

int
ibv_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
	struct dv_srq *srq = dv_srq(ibsrq);
	struct droce_port *port = srq->ctx->dev->port;
	int rc;

	if (srq->ctx->att != NULL)
		return da_query_srq(srq, attr);
	droce_port_lock(port, srq->q);
	rc = droce_srq_query(srq->tsrq, attr);
	droce_port_unlock(port, srq->q);
	return -rc;
}

int
ibv_destroy_srq(struct ibv_srq *ibsrq)
{
	struct dv_srq *srq = dv_srq(ibsrq);
	struct droce_port *port = srq->ctx->dev->port;
	int rc;

	if (srq->ctx->att != NULL)
		return da_destroy_srq(srq);
	droce_port_lock(port, srq->q);
	rc = droce_srq_destroy(srq->tsrq);
	droce_port_unlock(port, srq->q);
	if (rc)
		return -rc;
	free(srq);
	return 0;
}

/* ---- queue pairs ---- */

/*
 * Put a new QP's CQs and SRQ on one queue: the first of theirs (send CQ,
 * receive CQ, SRQ) that each of them is on or can move to; one no QP uses
 * yet moves. CQs are spread over the queues as they are created, so an
 * application with a send CQ and a receive CQ (perftest's SEND tests)
 * had them on two queues and could create no QP with DROCE_QUEUES > 1.
 * EINVAL only when QPs already tie them to different queues.
 */
static int
qp_place(struct dv_context *ctx, struct dv_cq *scq, struct dv_cq *rcq,
		struct dv_srq *srq)
{
	struct droce_port *port = ctx->dev->port;
	uint32_t cand[3] = { scq->q, rcq->q, srq != NULL ? srq->q : scq->q };
	uint32_t i, c, old;

	for (i = 0; i < 3; i++) {
		c = cand[i];
		if (droce_cq_move(scq->tcq, c) != 0)
			continue;
		scq->q = c;
		if (droce_cq_move(rcq->tcq, c) != 0)
			continue;
		rcq->q = c;
		if (srq != NULL && srq->q != c) {
			/* posts in flight under the old queue's lock finish
			 * first; later ones find the new queue */
			old = srq->q;
			droce_port_lock(port, old);
			if (droce_srq_move(srq->tsrq, c) == 0)
				__atomic_store_n(&srq->q, c, __ATOMIC_RELEASE);
			droce_port_unlock(port, old);
			if (srq->q != c)
				continue;
		}
		return 0;
	}
	return EINVAL;
}

/* The GSI QP's CQs must be on the queue that owns QPN 1. */
static int
gsi_place(struct dv_context *ctx, struct dv_cq *scq, struct dv_cq *rcq)
{
	uint32_t q = droce_qpn_queue(ctx->dev->tdev, 1);

	if (droce_cq_move(scq->tcq, q) != 0 || droce_cq_move(rcq->tcq, q) != 0)
		return EINVAL;
	scq->q = rcq->q = q;
	return 0;
}

static struct ibv_qp *
create_qp(struct ibv_context *context, struct ibv_qp_init_attr_ex *attr,
		int gsi)
{
	struct dv_context *ctx = dv_ctx(context);
	uint32_t known = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	struct dv_cq *scq, *rcq;
	struct dv_srq *srq = NULL;
	struct ibv_qp_init_attr ia;
	struct dv_qp *qp;
	/* XRC_SEND: a send CQ, no receive side (verbs_xrc.c) */
	int xrc = attr->qp_type == IBV_QPT_XRC_SEND;

	if (attr->qp_type == IBV_QPT_XRC_RECV && !gsi)
		return dv_create_qp_xrc(ctx, attr);
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || attr->pd == NULL ||
			attr->send_cq == NULL ||
			(attr->recv_cq == NULL && !xrc)) {
		errno = EINVAL;
		return NULL;
	}
	if (attr->comp_mask & ~known) {
		/* XRC domains, TSO, RSS, a thread domain: not droce's */
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (attr->qp_type != IBV_QPT_RC && attr->qp_type != IBV_QPT_UC &&
			attr->qp_type != IBV_QPT_UD && !xrc &&
			(attr->qp_type != IBV_QPT_RAW_PACKET || gsi ||
			ctx->att != NULL)) {
		/* RAW_PACKET in process only: droced has no flows */
		errno = EOPNOTSUPP;
		return NULL;
	}
	scq = dv_cq(attr->send_cq);
	rcq = xrc ? scq : dv_cq(attr->recv_cq);
	if (attr->srq != NULL && !xrc)
		srq = dv_srq(attr->srq);
	if (scq->ctx != ctx || rcq->ctx != ctx || attr->pd->context != context) {
		errno = EINVAL;
		return NULL;
	}
	if (ctx->att != NULL)
		return da_create_qp(context, attr, gsi);
	/* One owner per QP: its CQs and SRQ must live on the same queue. */
	if ((gsi ? gsi_place(ctx, scq, rcq) : qp_place(ctx, scq, rcq, srq)) != 0) {
		errno = EINVAL;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (qp == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	memset(&ia, 0, sizeof(ia));
	ia.qp_context = attr->qp_context;
	ia.qp_type = attr->qp_type;
	ia.cap = attr->cap;
	ia.sq_sig_all = attr->sq_sig_all;
	/* the queue's QP list grows: its progress must not be walking it */
	droce_port_lock(ctx->dev->port, scq->q);
	qp->tqp = gsi ? droce_qp_create_gsi(dv_pd(attr->pd)->tpd, &ia,
		scq->tcq, rcq->tcq) : droce_qp_create(dv_pd(attr->pd)->tpd, &ia,
		scq->tcq, xrc ? NULL : rcq->tcq, srq ? srq->tsrq : NULL);
	droce_port_unlock(ctx->dev->port, scq->q);
	if (qp->tqp == NULL) {
		free(qp);
		return NULL;
	}
	attr->cap = ia.cap;
	qp->ctx = ctx;
	qp->q = scq->q;
	droce_qp_set_user(qp->tqp, qp);
	qp->ex.qp_base.context = context;
	qp->ex.qp_base.qp_context = attr->qp_context;
	qp->ex.qp_base.pd = attr->pd;
	qp->ex.qp_base.send_cq = attr->send_cq;
	qp->ex.qp_base.recv_cq = xrc ? NULL : attr->recv_cq;
	qp->ex.qp_base.srq = xrc ? NULL : attr->srq;
	qp->ex.qp_base.qp_num = droce_qp_num(qp->tqp);
	qp->ex.qp_base.handle = qp->ex.qp_base.qp_num;
	qp->ex.qp_base.state = IBV_QPS_RESET;
	qp->ex.qp_base.qp_type = attr->qp_type;
	pthread_mutex_init(&qp->ex.qp_base.mutex, NULL);
	pthread_cond_init(&qp->ex.qp_base.cond, NULL);
	qp->max_sge = ia.cap.max_send_sge;
	qp->max_inline = ia.cap.max_inline_data;
	if ((attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
			dv_qp_ex_setup(qp, attr->send_ops_flags) != 0) {
		int e = errno;

		droce_port_lock(ctx->dev->port, qp->q);
		droce_qp_destroy(qp->tqp);
		droce_port_unlock(ctx->dev->port, qp->q);
		free(qp);
		errno = e;
		return NULL;
	}
	return &qp->ex.qp_base;
}

struct ibv_qp *
dv_create_qp_ex(struct ibv_context *context, struct ibv_qp_init_attr_ex *attr)
{
	return create_qp(context, attr, 0);
}

/* ibv_create_qp's attributes as the extended ones */
static struct ibv_qp *
create_qp_basic(struct ibv_pd *pd, struct ibv_qp_init_attr *attr, int gsi)
{
	struct ibv_qp_init_attr_ex ax;
	struct ibv_qp *qp;

	memset(&ax, 0, sizeof(ax));
	ax.qp_context = attr->qp_context;
	ax.send_cq = attr->send_cq;
	ax.recv_cq = attr->recv_cq;
	ax.srq = attr->srq;
	ax.cap = attr->cap;
	ax.qp_type = attr->qp_type;
	ax.sq_sig_all = attr->sq_sig_all;
	ax.comp_mask = IBV_QP_INIT_ATTR_PD;
	ax.pd = pd;
	qp = create_qp(pd->context, &ax, gsi);
	if (qp != NULL)
		attr->cap = ax.cap;
	return qp;
}

/*
 * droce's own entry for its librdmacm: the port's GSI QP (QPN 1, UD),
 * which carries the connection manager's MADs. NULL and errno (EBUSY: the
 * process has it already).
 */
struct ibv_qp *
droce_create_gsi_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	if (pd == NULL || attr == NULL || attr->qp_type != IBV_QPT_UD ||
			attr->srq != NULL) {
		errno = EINVAL;
		return NULL;
	}
	return create_qp_basic(pd, attr, 1);
}

/*
 * droce's own entry for its librdmacm: the MAC behind a GID on the
 * context's port (ARP or ND), waiting up to timeout_ms. 0 or an errno.
 */
int
droce_resolve_gid(struct ibv_context *context, const uint8_t gid[16],
		uint32_t timeout_ms)
{
	struct dv_context *ctx = dv_ctx(context);
	uint8_t mac[6];
	int rc;

	if (ctx->att != NULL)
		return da_resolve_gid(ctx, gid, timeout_ms);
	rc = dv_port_get(ctx);
	if (rc != 0)
		return rc;
	rc = droce_port_resolve(ctx->dev->port, gid, mac, timeout_ms);
	return rc == 0 ? 0 : rc == -ETIMEDOUT ? ETIMEDOUT : EHOSTUNREACH;
}

struct ibv_qp *
ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	return create_qp_basic(pd, attr, 0);
}

struct ibv_qp_ex *
ibv_qp_to_qp_ex(struct ibv_qp *ibqp)
{
	struct dv_qp *qp = dv_qp(ibqp);

	return qp->is_ex ? &qp->ex : NULL;
}

/* DROCE_DEBUG (droce_conf.h): set and not 0 */
static int
debug_on(void)
{
	const char *v = droce_conf_get("DROCE_DEBUG");

	return v != NULL && v[0] != '\0' && strcmp(v, "0") != 0;
}

int
ibv_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int mask)
{
	struct dv_qp *qp = dv_qp(ibqp);
	struct droce_port *port = qp->ctx->dev->port;
	struct droce_av av, *avp = NULL;
	int rc;

	if (qp->ctx->att != NULL)
		return da_modify_qp(qp, attr, mask);
	if (mask & IBV_QP_AV) {
		/* resolving may wait for ARP: outside the queue lock */
		rc = dv_resolve(qp->ctx, &attr->ah_attr, &av);
		if (rc)
			return rc;
		avp = &av;
	}
	droce_port_lock(port, qp->q);
	rc = droce_qp_modify(qp->tqp, attr, mask, avp);
	ibqp->state = droce_qp_state(qp->tqp);
	droce_port_unlock(port, qp->q);
	if (rc && debug_on())
		fprintf(stderr, "droce: modify_qp %u mask %#x state %d: %s "
			"(mtu %d rd_atomic %u dest_rd_atomic %u timeout %u "
			"retry %u rnr_retry %u min_rnr %u access %#x)\n",
			ibqp->qp_num, (unsigned int)mask, attr->qp_state,
			strerror(-rc), attr->path_mtu, attr->max_rd_atomic,
			attr->max_dest_rd_atomic, attr->timeout, attr->retry_cnt,
			attr->rnr_retry, attr->min_rnr_timer,
			attr->qp_access_flags);
	return -rc;
}

int
ibv_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int mask,
		struct ibv_qp_init_attr *init)
{
	struct dv_qp *qp = dv_qp(ibqp);
	struct droce_port *port = qp->ctx->dev->port;
	int rc;

	if (qp->ctx->att != NULL)
		return da_query_qp(qp, attr, mask, init);
	droce_port_lock(port, qp->q);
	rc = droce_qp_query(qp->tqp, attr, mask, init);
	droce_port_unlock(port, qp->q);
	if (rc)
		return -rc;
	if (init != NULL) {
		init->qp_context = ibqp->qp_context;
		init->send_cq = ibqp->send_cq;
		init->recv_cq = ibqp->recv_cq;
		init->srq = ibqp->srq;
	}
	return 0;
}

int
ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op,
		uint32_t flags)
{
	(void)qp;
	(void)op;
	(void)flags;
	/* the transport places data strictly in order (go-back-N) */
	return 1;
}

/*
 * A RAW_PACKET QP's frames posted before ibv_destroy_qp leave first, as
 * a NIC's queue would have sent them by then: a program that posts its
 * last reply and exits (perftest's raw_ethernet servers) would otherwise
 * lose it. Bounded (packet pacing may hold them back); queue held.
 */
#define DV_RAW_DRAIN_NS (100 * 1000 * 1000)

static void
raw_drain(struct droce_port *port, struct dv_qp *qp)
{
	uint64_t end = droce_now_ns() + DV_RAW_DRAIN_NS;

	while (droce_qp_sq_untransmitted(qp->tqp) != 0 &&
			droce_qp_state(qp->tqp) == IBV_QPS_RTS &&
			droce_now_ns() < end)
		droce_port_progress_locked(port, qp->q);
}

int
ibv_destroy_qp(struct ibv_qp *ibqp)
{
	struct dv_qp *qp = dv_qp(ibqp);
	struct droce_port *port = qp->ctx->dev->port;
	struct droce_tp_stats st;
	int rc;

	if (qp->ctx->att != NULL)
		return da_destroy_qp(qp);
	if (qp->tgt != NULL)
		return dv_destroy_qp_xrc(qp);
	droce_port_lock(port, qp->q);
	if (ibqp->qp_type == IBV_QPT_RAW_PACKET)
		raw_drain(port, qp);
	droce_qp_stats(qp->tqp, &st);
	rc = droce_qp_destroy(qp->tqp);
	droce_port_unlock(port, qp->q);
	if (rc)
		return -rc;
	if (debug_on())	/* its counters, printed outside the lock */
		fprintf(stderr, "droce: qp %u: tx %" PRIu64 " rx %" PRIu64
			" retransmits %" PRIu64 " timeouts %" PRIu64
			" rnr_nak tx %" PRIu64 " rx %" PRIu64 " seq_nak tx %"
			PRIu64 " rx %" PRIu64 " dup %" PRIu64 "\n",
			ibqp->qp_num, st.tx_pkts, st.rx_pkts, st.retransmits,
			st.timeouts, st.rnr_nak_tx, st.rnr_nak_rx,
			st.nak_seq_tx, st.nak_seq_rx, st.dup_rx);
	dv_qp_ex_fini(qp);
	free(qp);
	return 0;
}

/* ---- address handles ---- */

struct ibv_ah *
ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct dv_context *ctx = dv_ctx(pd->context);
	struct droce_av av;
	struct droce_ah *ah;
	struct ibv_ah *a;
	int rc;

	if (ctx->att != NULL)
		return da_create_ah(pd, attr);
	rc = dv_resolve(ctx, attr, &av);
	if (rc) {
		errno = rc;
		return NULL;
	}
	ah = droce_ah_create(dv_pd(pd)->tpd, &av);
	if (ah == NULL)
		return NULL;
	a = droce_ah_to_ibv(ah);
	a->context = pd->context;
	a->pd = pd;
	return a;
}

int
ibv_destroy_ah(struct ibv_ah *ah)
{
	if (da_attached(ah->context))
		return da_destroy_ah(ah);
	return -droce_ah_destroy(droce_ah_from_ibv(ah));
}

/* The GRH area of a UD receive: an IPv6 header, or 20 zero bytes and an
 * IPv4 header for RoCEv2 over IPv4 (as rxe lays it out). */
int
ibv_init_ah_from_wc(struct ibv_context *context, uint8_t port_num,
		struct ibv_wc *wc, struct ibv_grh *grh, struct ibv_ah_attr *ah)
{
	struct dv_device *d = dv_ctx(context)->dev;
	const uint8_t *raw = (const uint8_t *)grh;
	uint8_t sgid[16], dgid[16];
	int i;

	memset(ah, 0, sizeof(*ah));
	ah->port_num = port_num;
	ah->sl = wc->sl;
	ah->src_path_bits = wc->dlid_path_bits;
	if (!(wc->wc_flags & IBV_WC_GRH))
		return EINVAL;	/* RoCE: the GID is the address */
	if ((raw[20] >> 4) == 4) {
		uint32_t s, dd;

		memcpy(&s, raw + 20 + 12, 4);
		memcpy(&dd, raw + 20 + 16, 4);
		droce_gid_from_ipv4(sgid, ntohl(s));
		droce_gid_from_ipv4(dgid, ntohl(dd));
		ah->grh.traffic_class = raw[21];
	} else {
		memcpy(sgid, grh->sgid.raw, 16);
		memcpy(dgid, grh->dgid.raw, 16);
		ah->grh.traffic_class = (uint8_t)((ntohl(grh->version_tclass_flow)
			>> 20) & 0xff);
		ah->grh.flow_label = ntohl(grh->version_tclass_flow) & 0xfffff;
	}
	ah->is_global = 1;
	ah->grh.hop_limit = 0xff;
	memcpy(ah->grh.dgid.raw, sgid, 16);
	for (i = 0; i < DROCE_MAX_GIDS; i++)
		if (d->gids[i].valid && memcmp(d->gids[i].gid, dgid, 16) == 0)
			break;
	if (i == DROCE_MAX_GIDS)
		return ENOENT;
	ah->grh.sgid_index = (uint8_t)i;
	return 0;
}

struct ibv_ah *
ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc,
		struct ibv_grh *grh, uint8_t port_num)
{
	struct ibv_ah_attr attr;
	int rc = ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &attr);

	if (rc) {
		errno = rc;
		return NULL;
	}
	return ibv_create_ah(pd, &attr);
}

/* ---- multicast ---- */

/* RoCE has no LIDs: lid is ignored, as rxe does. */
int
ibv_attach_mcast(struct ibv_qp *ibqp, const union ibv_gid *gid, uint16_t lid)
{
	struct dv_qp *qp = dv_qp(ibqp);

	(void)lid;
	if (gid == NULL)
		return EINVAL;
	if (qp->ctx->att != NULL)
		return da_mcast(qp, gid, 1);
	return -droce_port_attach_mcast(qp->ctx->dev->port, qp->tqp, gid->raw);
}

int
ibv_detach_mcast(struct ibv_qp *ibqp, const union ibv_gid *gid, uint16_t lid)
{
	struct dv_qp *qp = dv_qp(ibqp);

	(void)lid;
	if (gid == NULL)
		return EINVAL;
	if (qp->ctx->att != NULL)
		return da_mcast(qp, gid, 0);
	return -droce_port_detach_mcast(qp->ctx->dev->port, qp->tqp, gid->raw);
}
