/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * XRC for attached applications: domains (OPEN_XRCD, CLOSE_XRCD), XRC
 * SRQs (CREATE_SRQ naming a domain and a CQ) and XRC QPs (CREATE_QP of
 * type XRC_SEND or XRC_RECV). As in process (drivers/ibverbs/
 * verbs_xrc.c), XRC SRQs and XRC_RECV QPs live on queue 0: an XRC
 * request is served only from an SRQ of its XRC_RECV QP's queue. A
 * domain is the application's own; the library shares it among the
 * opens of one inode.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

/* The queue of XRC SRQs and XRC_RECV QPs. */
#define DD_XRC_QUEUE 0

int
op_open_xrcd(struct req_ctx *c)
{
	struct droce_chan_handle *p = c->rep;
	struct dd_xrcd *x = calloc(1, sizeof(*x));

	if (x == NULL)
		return -ENOMEM;
	x->tx = droce_xrcd_alloc(c->a->dp->dev);
	if (x->tx == NULL || dd_table_add(&c->a->xrcds, x, &p->handle) != 0) {
		if (x->tx != NULL)
			droce_xrcd_free(x->tx);
		free(x);
		return -ENOMEM;
	}
	return 0;
}

int
op_close_xrcd(struct req_ctx *c)
{
	const struct droce_chan_handle *r = c->req;
	struct dd_xrcd *x = dd_table_get(&c->a->xrcds, r->handle);
	int rc;

	if (x == NULL)
		return -EINVAL;
	rc = droce_xrcd_free(x->tx);	/* -EBUSY while SRQs or QPs use it */
	if (rc != 0)
		return rc;
	dd_table_del(&c->a->xrcds, r->handle);
	free(x);
	return 0;
}

/* CREATE_SRQ of an XRC SRQ: its CQ moves to queue 0 (EINVAL when QPs
 * hold it elsewhere), the SRQ's ring is on queue 0. */
int
dd_create_srq_xrc(struct req_ctx *c, struct dd_pd *pd)
{
	const struct droce_chan_create_srq_req *r = c->req;
	struct droce_chan_create_srq_rep *p = c->rep;
	struct dd_xrcd *x = dd_table_get(&c->a->xrcds, r->xrcd);
	struct dd_cq *cq = dd_table_get(&c->a->cqs, r->cq);
	struct ibv_srq_init_attr ia = { 0 };
	struct dd_srq *s;
	int rc = 0;

	if (x == NULL || cq == NULL)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return -ENOMEM;
	ia.attr.max_wr = r->max_wr;
	ia.attr.max_sge = r->max_sge;
	ia.attr.srq_limit = r->srq_limit;
	s->app = c->a;
	s->q = DD_XRC_QUEUE;
	dd_lock_all();
	if (dd_cq_move(cq, DD_XRC_QUEUE) != 0)
		rc = -EINVAL;
	if (rc == 0) {
		s->tsrq = droce_srq_create_xrc(pd->tpd, x->tx, cq->tcq, &ia);
		if (s->tsrq == NULL)
			rc = errno ? -errno : -EINVAL;
	}
	dd_unlock_all();
	if (rc != 0) {
		free(s);
		return rc;
	}
	droce_srq_query(s->tsrq, &ia.attr);
	s->max_sge = ia.attr.max_sge;
	if (dd_wq_alloc(c->a, &s->rq, ia.attr.max_wr,
			droce_chan_rq_slot(s->max_sge), s->q, &p->rq) != 0 ||
			dd_table_add(&c->a->srqs, s, &s->handle) != 0) {
		dd_wq_free(c->a, &s->rq);
		droce_port_lock(c->a->dp->port, s->q);
		droce_srq_destroy(s->tsrq);
		droce_port_unlock(c->a->dp->port, s->q);
		free(s);
		return -ENOMEM;
	}
	droce_srq_set_user(s->tsrq, s);
	p->handle = s->handle;
	p->srq_num = droce_srq_num(s->tsrq);
	p->max_wr = ia.attr.max_wr;
	p->max_sge = s->max_sge;
	return 0;
}

/* CREATE_QP of an XRC_RECV QP: no PD, CQs or rings, on queue 0. */
int
dd_create_qp_xrc_recv(struct req_ctx *c)
{
	const struct droce_chan_create_qp_req *r = c->req;
	struct droce_chan_create_qp_rep *p = c->rep;
	struct dd_app *a = c->a;
	struct dd_xrcd *x = dd_table_get(&a->xrcds, r->xrcd);
	struct ibv_qp_init_attr ia = { 0 };
	struct dd_qp *qp;
	int rc;

	if (x == NULL)
		return -EINVAL;
	if (a->qps.n >= a->qps.cap)
		return -ENOMEM;
	qp = calloc(1, sizeof(*qp));
	if (qp == NULL)
		return -ENOMEM;
	ia.qp_type = IBV_QPT_XRC_RECV;
	qp->app = a;
	qp->type = IBV_QPT_XRC_RECV;
	qp->q = DD_XRC_QUEUE;
	droce_port_lock(c->a->dp->port, qp->q);
	qp->tqp = droce_qp_create_xrc_recv(x->tx, qp->q, &ia);
	rc = qp->tqp == NULL ? (errno ? -errno : -EINVAL) : 0;
	if (rc == 0) {
		droce_qp_set_user(qp->tqp, qp);
		rc = dd_table_add(&a->qps, qp, &qp->handle);
		if (rc != 0)
			droce_qp_destroy(qp->tqp);
	}
	droce_port_unlock(c->a->dp->port, qp->q);
	if (rc != 0) {
		free(qp);
		return rc;
	}
	memset(&p->cap, 0, sizeof(p->cap));
	p->handle = qp->handle;
	p->qpn = droce_qp_num(qp->tqp);
	p->queue = qp->q;
	return 0;
}
