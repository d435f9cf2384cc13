/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * Attached mode, shared receive queues and queue pairs: requests to
 * droced, and the rings it allocates for them in the shared region
 * (checked to lie inside it before we use them).
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "attach.h"

static void *
fail_null(int rc)
{
	errno = rc;
	return NULL;
}

static int
destroy_req(struct da_ctx *a, uint32_t op, uint32_t handle)
{
	struct droce_chan_handle h = { .handle = handle };
	int rc = da_rpc(a, op, &h, NULL, NULL, 0, NULL, NULL);

	return rc == EIO && da_dead(a) ? 0 : rc;
}

/* A WQ's ring from the daemon's reply: 0 or EPROTO. */
static int
wq_setup(struct da_ctx *a, struct da_wq *wq, const struct droce_chan_wq_rep *r)
{
	if (r->size == 0 || (r->size & (r->size - 1)) || r->slot == 0 ||
			r->slot % DROCE_CHAN_CL || r->off < DROCE_CHAN_HEAP_OFF ||
			r->off > a->region_size ||
			droce_chan_wq_bytes(r->size, r->slot) > a->region_size - r->off)
		return EPROTO;
	wq->sh = droce_chan_at(a->region, r->off);
	wq->slots = droce_chan_at(a->region, r->off + DROCE_CHAN_WQ_SLOTS);
	wq->size = r->size;
	wq->slot = r->slot;
	wq->prod = __atomic_load_n(&wq->sh->prod, __ATOMIC_RELAXED);
	pthread_spin_init(&wq->lock, PTHREAD_PROCESS_PRIVATE);
	return 0;
}

static void
wq_fini(struct da_wq *wq)
{
	if (wq->sh != NULL)
		pthread_spin_destroy(&wq->lock);
}

/* ---- shared receive queues ---- */

struct ibv_srq *
da_create_srq(struct ibv_context *c, struct ibv_srq_init_attr_ex *attr)
{
	struct da_ctx *a = dv_ctx(c)->att;
	struct droce_chan_create_srq_req r;
	struct droce_chan_create_srq_rep p;
	struct dv_srq *srq = calloc(1, sizeof(*srq));
	int rc;

	if (srq == NULL)
		return fail_null(ENOMEM);
	memset(&r, 0, sizeof(r));
	r.pd = dv_pd(attr->pd)->handle;
	r.max_wr = attr->attr.max_wr;
	r.max_sge = attr->attr.max_sge;
	r.srq_limit = attr->attr.srq_limit;
	r.xrcd = DROCE_CHAN_NONE;
	r.cq = DROCE_CHAN_NONE;
	if ((attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) &&
			attr->srq_type == IBV_SRQT_XRC) {	/* checked before */
		r.xrcd = dv_xrcd_handle(attr->xrcd);
		r.cq = dv_cq(attr->cq)->handle;
	}
	rc = da_rpc(a, DROCE_OP_CREATE_SRQ, &r, &p, NULL, 0, NULL, NULL);
	if (rc != 0) {
		free(srq);
		return fail_null(rc);
	}
	if ((rc = wq_setup(a, &srq->rq, &p.rq)) != 0 ||
			(rc = da_obj_set(a, DA_SRQ, p.handle, srq)) != 0) {
		wq_fini(&srq->rq);
		destroy_req(a, DROCE_OP_DESTROY_SRQ, p.handle);
		free(srq);
		return fail_null(rc);
	}
	attr->attr.max_wr = p.max_wr;
	attr->attr.max_sge = p.max_sge;
	srq->handle = p.handle;
	srq->max_sge = p.max_sge;
	srq->srqn = p.srq_num;
	srq->ctx = dv_ctx(c);
	srq->srq.context = c;
	srq->srq.srq_context = attr->srq_context;
	srq->srq.pd = attr->pd;
	srq->srq.handle = p.handle;
	pthread_mutex_init(&srq->srq.mutex, NULL);
	pthread_cond_init(&srq->srq.cond, NULL);
	return &srq->srq;
}

int
da_modify_srq(struct dv_srq *srq, struct ibv_srq_attr *attr, int mask)
{
	struct droce_chan_modify_srq_req r;

	memset(&r, 0, sizeof(r));
	r.handle = srq->handle;
	r.mask = mask;
	r.attr = *attr;
	return da_rpc(srq->ctx->att, DROCE_OP_MODIFY_SRQ, &r, NULL, NULL, 0,
		NULL, NULL);
}

int
da_query_srq(struct dv_srq *srq, struct ibv_srq_attr *attr)
{
	struct droce_chan_handle h = { .handle = srq->handle };

	return da_rpc(srq->ctx->att, DROCE_OP_QUERY_SRQ, &h, attr, NULL, 0,
		NULL, NULL);
}

int
da_destroy_srq(struct dv_srq *srq)
{
	struct da_ctx *a = srq->ctx->att;
	int rc = destroy_req(a, DROCE_OP_DESTROY_SRQ, srq->handle);

	if (rc != 0)
		return rc;
	da_obj_del(a, DA_SRQ, srq->handle);
	wq_fini(&srq->rq);
	free(srq);
	return 0;
}

/* ---- queue pairs ---- */

static void
qp_init(struct dv_qp *qp, struct ibv_context *c,
		const struct ibv_qp_init_attr_ex *attr,
		const struct droce_chan_create_qp_rep *p, int gsi)
{
	struct da_ctx *a = dv_ctx(c)->att;
	enum ibv_qp_type t = gsi ? IBV_QPT_UD : attr->qp_type;

	qp->ctx = dv_ctx(c);
	qp->handle = p->handle;
	qp->max_sge = p->cap.max_send_sge;
	qp->max_inline = p->cap.max_inline_data;
	qp->max_recv_sge = p->cap.max_recv_sge;
	qp->type_ops = droce_qp_type_send_ops(t);
	/* a UD message is one packet */
	qp->ud_max_len = droce_mtu_to_bytes(droce_eth_mtu_to_path_mtu(
		a->hello.mtu));
	qp->ex.qp_base.context = c;
	qp->ex.qp_base.qp_context = attr->qp_context;
	qp->ex.qp_base.pd = attr->pd;
	qp->ex.qp_base.send_cq = t == IBV_QPT_XRC_RECV ? NULL : attr->send_cq;
	qp->ex.qp_base.recv_cq = t == IBV_QPT_XRC_RECV ||
		t == IBV_QPT_XRC_SEND ? NULL : attr->recv_cq;
	qp->ex.qp_base.srq = t == IBV_QPT_XRC_RECV ||
		t == IBV_QPT_XRC_SEND ? NULL : attr->srq;
	if (t == IBV_QPT_XRC_RECV)
		qp->ex.qp_base.pd = NULL;
	qp->ex.qp_base.qp_num = p->qpn;
	qp->ex.qp_base.handle = p->handle;
	qp->ex.qp_base.state = IBV_QPS_RESET;
	qp->ex.qp_base.qp_type = t;
	pthread_mutex_init(&qp->ex.qp_base.mutex, NULL);
	pthread_cond_init(&qp->ex.qp_base.cond, NULL);
}

/*
 * A QP (gsi: a proxy of the daemon's QP1, as droce_create_gsi_qp). The
 * caller checked the attributes droce takes.
 */
struct ibv_qp *
da_create_qp(struct ibv_context *c, struct ibv_qp_init_attr_ex *attr, int gsi)
{
	struct da_ctx *a = dv_ctx(c)->att;
	struct droce_chan_create_qp_req r;
	struct droce_chan_create_qp_rep p;
	struct dv_qp *qp;
	int rc, xs, xr;

	qp = calloc(1, sizeof(*qp));
	if (qp == NULL)
		return fail_null(ENOMEM);
	memset(&r, 0, sizeof(r));
	/* XRC: XRC_SEND has no receive side, XRC_RECV only a domain */
	xs = !gsi && attr->qp_type == IBV_QPT_XRC_SEND;
	xr = !gsi && attr->qp_type == IBV_QPT_XRC_RECV;
	r.pd = xr ? DROCE_CHAN_NONE : dv_pd(attr->pd)->handle;
	r.qp_type = gsi ? DROCE_QPT_GSI : (uint32_t)attr->qp_type;
	r.send_cq = xr ? DROCE_CHAN_NONE : dv_cq(attr->send_cq)->handle;
	r.recv_cq = xr || xs ? DROCE_CHAN_NONE : dv_cq(attr->recv_cq)->handle;
	r.srq = attr->srq != NULL && !xs && !xr ? dv_srq(attr->srq)->handle :
		DROCE_CHAN_NONE;
	r.sq_sig_all = (uint32_t)attr->sq_sig_all;
	r.cap = attr->cap;
	r.xrcd = xr ? dv_xrcd_handle(attr->xrcd) : DROCE_CHAN_NONE;
	rc = da_rpc(a, DROCE_OP_CREATE_QP, &r, &p, NULL, 0, NULL, NULL);
	if (rc != 0) {
		free(qp);
		return fail_null(rc);
	}
	/* an XRC_RECV QP has no SQ, but da_modify_qp orders its state with
	 * the SQ's lock: x86's glibc takes a zeroed spinlock as held */
	if (xr)
		pthread_spin_init(&qp->sq.lock, PTHREAD_PROCESS_PRIVATE);
	rc = xr ? 0 : wq_setup(a, &qp->sq, &p.sq);
	if (rc == 0 && attr->srq == NULL && !xs && !xr)
		rc = wq_setup(a, &qp->rq, &p.rq);
	if (rc == 0)
		rc = da_obj_set(a, DA_QP, p.handle, qp);
	if (rc != 0) {
		wq_fini(&qp->sq);
		wq_fini(&qp->rq);
		destroy_req(a, DROCE_OP_DESTROY_QP, p.handle);
		free(qp);
		return fail_null(rc);
	}
	attr->cap = p.cap;
	qp_init(qp, c, attr, &p, gsi);
	if ((attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
			dv_qp_ex_setup(qp, attr->send_ops_flags) != 0) {
		rc = errno;
		da_destroy_qp(qp);
		return fail_null(rc);
	}
	return &qp->ex.qp_base;
}

int
da_modify_qp(struct dv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	struct droce_chan_modify_qp_req r;
	int rc;

	memset(&r, 0, sizeof(r));
	r.handle = qp->handle;
	r.mask = mask;
	r.attr = *attr;
	rc = da_rpc(qp->ctx->att, DROCE_OP_MODIFY_QP, &r, NULL, NULL, 0,
		NULL, NULL);
	/* posting checks the state we know (the SQ's lock orders it) */
	if (rc == 0 && (mask & IBV_QP_STATE)) {
		pthread_spin_lock(&qp->sq.lock);
		qp->ex.qp_base.state = attr->qp_state;
		pthread_spin_unlock(&qp->sq.lock);
	}
	return rc;
}

int
da_set_sr(struct dv_qp *qp, int on)
{
	struct droce_chan_set_sr_req r = { .handle = qp->handle,
		.on = (uint32_t)on };

	return da_rpc(qp->ctx->att, DROCE_OP_SET_SR, &r, NULL, NULL, 0, NULL,
		NULL);
}

int
da_query_qp(struct dv_qp *qp, struct ibv_qp_attr *attr, int mask,
		struct ibv_qp_init_attr *init)
{
	struct ibv_qp *ibqp = &qp->ex.qp_base;
	struct droce_chan_query_qp_req r = { .handle = qp->handle, .mask = mask };
	struct droce_chan_query_qp_rep p;
	int rc = da_rpc(qp->ctx->att, DROCE_OP_QUERY_QP, &r, &p, NULL, 0,
		NULL, NULL);

	if (rc != 0)
		return rc;
	*attr = p.attr;
	if (ibqp->qp_num == 1 && ibqp->qp_type == IBV_QPT_UD)
		attr->qp_state = attr->cur_qp_state = ibqp->state;
	else
		ibqp->state = p.attr.qp_state;
	if (init != NULL) {
		memset(init, 0, sizeof(*init));
		init->qp_context = ibqp->qp_context;
		init->send_cq = ibqp->send_cq;
		init->recv_cq = ibqp->recv_cq;
		init->srq = ibqp->srq;
		init->cap = p.cap;
		init->qp_type = (enum ibv_qp_type)p.qp_type;
		init->sq_sig_all = (int)p.sq_sig_all;
	}
	return 0;
}

int
da_destroy_qp(struct dv_qp *qp)
{
	struct da_ctx *a = qp->ctx->att;
	struct ibv_qp *ibqp = &qp->ex.qp_base;
	int rc = destroy_req(a, DROCE_OP_DESTROY_QP, qp->handle);

	if (rc != 0)
		return rc;
	if (ibqp->send_cq != NULL)
		da_cq_forget_qp(dv_cq(ibqp->send_cq), ibqp->qp_num);
	if (ibqp->recv_cq != NULL && ibqp->recv_cq != ibqp->send_cq)
		da_cq_forget_qp(dv_cq(ibqp->recv_cq), ibqp->qp_num);
	da_obj_del(a, DA_QP, qp->handle);
	dv_qp_ex_fini(qp);
	wq_fini(&qp->sq);
	wq_fini(&qp->rq);
	free(qp);
	return 0;
}

int
da_open_xrcd(struct dv_context *ctx, uint32_t *handle)
{
	struct droce_chan_handle h;
	int rc = da_rpc(ctx->att, DROCE_OP_OPEN_XRCD, NULL, &h, NULL, 0, NULL,
		NULL);

	if (rc == 0)
		*handle = h.handle;
	return rc;
}

int
da_close_xrcd(struct dv_context *ctx, uint32_t handle)
{
	return destroy_req(ctx->att, DROCE_OP_CLOSE_XRCD, handle);
}
