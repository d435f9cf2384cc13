/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * The control requests for queue pairs, shared receive queues, address
 * handles and multicast. A QP's CQs and SRQ share its queue (the data
 * path's owner context): a CQ or SRQ that no QP uses yet moves to it.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

int
op_create_srq(struct req_ctx *c)
{
	const struct droce_chan_create_srq_req *r = c->req;
	struct droce_chan_create_srq_rep *p = c->rep;
	struct dd_pd *pd = dd_table_get(&c->a->pds, r->pd);
	struct ibv_srq_init_attr ia = { 0 };
	uint32_t q = c->a->dp->next_cq_queue++ % c->a->dp->nb_queues;
	struct dd_srq *s;

	if (pd == NULL)
		return -EINVAL;
	if (r->xrcd != DROCE_CHAN_NONE)
		return dd_create_srq_xrc(c, pd);
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return -ENOMEM;
	ia.attr.max_wr = r->max_wr;
	ia.attr.max_sge = r->max_sge;
	ia.attr.srq_limit = r->srq_limit;
	s->app = c->a;
	s->q = q;
	s->tsrq = droce_srq_create(pd->tpd, q, &ia);
	if (s->tsrq == NULL) {
		int rc = -errno;

		free(s);
		return rc ? rc : -EINVAL;
	}
	droce_srq_query(s->tsrq, &ia.attr);
	s->max_sge = ia.attr.max_sge;
	if (dd_wq_alloc(c->a, &s->rq, ia.attr.max_wr,
			droce_chan_rq_slot(s->max_sge), q, &p->rq) != 0 ||
			dd_table_add(&c->a->srqs, s, &s->handle) != 0) {
		dd_wq_free(c->a, &s->rq);
		droce_srq_destroy(s->tsrq);
		free(s);
		return -ENOMEM;
	}
	droce_srq_set_user(s->tsrq, s);
	p->handle = s->handle;
	p->srq_num = 0;		/* numbers are XRC SRQs' */
	p->max_wr = ia.attr.max_wr;
	p->max_sge = s->max_sge;
	return 0;
}

int
op_modify_srq(struct req_ctx *c)
{
	const struct droce_chan_modify_srq_req *r = c->req;
	struct dd_srq *s = dd_table_get(&c->a->srqs, r->handle);
	struct ibv_srq_attr attr = r->attr;
	int rc;

	if (s == NULL)
		return -EINVAL;
	droce_port_lock(c->a->dp->port, s->q);
	rc = droce_srq_modify(s->tsrq, &attr, r->mask);
	droce_port_unlock(c->a->dp->port, s->q);
	return rc;
}

int
op_query_srq(struct req_ctx *c)
{
	const struct droce_chan_handle *r = c->req;
	struct dd_srq *s = dd_table_get(&c->a->srqs, r->handle);
	int rc;

	if (s == NULL)
		return -EINVAL;
	droce_port_lock(c->a->dp->port, s->q);
	rc = droce_srq_query(s->tsrq, c->rep);
	droce_port_unlock(c->a->dp->port, s->q);
	return rc;
}

int
op_destroy_srq(struct req_ctx *c)
{
	const struct droce_chan_handle *r = c->req;
	struct dd_srq *s = dd_table_get(&c->a->srqs, r->handle);
	int rc;

	if (s == NULL)
		return -EINVAL;
	droce_port_lock(c->a->dp->port, s->q);
	rc = droce_srq_destroy(s->tsrq);
	if (rc == 0)
		dd_table_del(&c->a->srqs, r->handle);
	droce_port_unlock(c->a->dp->port, s->q);
	if (rc != 0)
		return rc;
	dd_wq_free(c->a, &s->rq);
	free(s);
	return 0;
}

/* Bring scq, rcq and srq onto one queue (every queue held). */
static int
place(struct dd_cq *scq, struct dd_cq *rcq, struct dd_srq *srq, uint32_t *qout)
{
	uint32_t cand[3] = { scq->q, rcq->q, srq ? srq->q : scq->q }, i, q;

	for (i = 0; i < 3; i++) {
		q = cand[i];
		if (dd_cq_move(scq, q) != 0 || dd_cq_move(rcq, q) != 0)
			continue;
		if (srq != NULL && srq->q != q) {
			if (droce_srq_move(srq->tsrq, q) != 0)
				continue;
			srq->q = q;
			__atomic_store_n(&srq->rq.sh->queue, q, __ATOMIC_RELEASE);
			/* receives rung on the old queue are posted here */
			dd_drain_srq(srq);
		}
		*qout = q;
		return 0;
	}
	return -EINVAL;
}

static int
qp_rings(struct req_ctx *c, struct dd_qp *qp, struct droce_chan_create_qp_rep *p)
{
	const struct ibv_qp_cap *cap = &p->cap;

	if (dd_wq_alloc(c->a, &qp->sq, cap->max_send_wr,
			droce_chan_sq_slot(cap->max_send_sge, cap->max_inline_data),
			qp->q, &p->sq) != 0)
		return -ENOMEM;
	if (qp->srq == NULL && qp->type != IBV_QPT_XRC_SEND &&
			dd_wq_alloc(c->a, &qp->rq, cap->max_recv_wr,
			droce_chan_rq_slot(cap->max_recv_sge), qp->q, &p->rq) != 0)
		return -ENOMEM;
	return 0;
}

/* The application's GSI QP: a proxy of QP1 (gsi.c) on QP1's queue. */
static int
create_gsi_proxy(struct req_ctx *c, struct dd_cq *scq, struct dd_cq *rcq)
{
	const struct droce_chan_create_qp_req *r = c->req;
	struct droce_chan_create_qp_rep *p = c->rep;
	struct dd_app *a = c->a;
	uint32_t gq = droce_qpn_queue(c->a->dp->dev, 1);
	struct dd_qp *qp;
	int rc = 0;

	if (c->a->dp->gsi == NULL)
		return -EOPNOTSUPP;
	/* every capacity checked before anything is sized by it */
	if (r->cap.max_send_sge > DD_GSI_MAX_SGE ||
			r->cap.max_recv_sge > DD_GSI_MAX_SGE ||
			r->cap.max_inline_data > 0 ||
			r->cap.max_send_wr > droce_dev_limits(a->dp->dev)->max_qp_wr ||
			r->cap.max_recv_wr > droce_dev_limits(a->dp->dev)->max_qp_wr)
		return -EINVAL;
	qp = calloc(1, sizeof(*qp));
	if (qp == NULL)
		return -ENOMEM;
	dd_lock_all();
	if (dd_cq_move(scq, gq) != 0 || dd_cq_move(rcq, gq) != 0)
		rc = -EINVAL;
	if (rc == 0)
		rc = dd_gsi_proxy_create(a, qp, r->cap.max_recv_wr ?
			r->cap.max_recv_wr : 1);
	dd_unlock_all();
	if (rc != 0) {
		free(qp);
		return rc;
	}
	qp->app = a;
	/* held until the proxy goes (dd_gsi_proxy_destroy): the
	 * transport knows nothing of a proxy's CQs */
	qp->scq = scq;
	qp->rcq = rcq;
	scq->refs++;
	rcq->refs++;
	qp->type = IBV_QPT_UD;
	qp->sq_sig_all = r->sq_sig_all != 0;
	p->cap = r->cap;
	qp->max_send_sge = p->cap.max_send_sge;
	qp->max_recv_sge = p->cap.max_recv_sge;
	rc = qp_rings(c, qp, p);
	if (rc == 0) {
		droce_port_lock(c->a->dp->port, gq);
		rc = dd_table_add(&a->qps, qp, &qp->handle);
		droce_port_unlock(c->a->dp->port, gq);
	}
	if (rc != 0) {
		dd_wq_free(a, &qp->sq);
		dd_wq_free(a, &qp->rq);
		droce_port_lock(c->a->dp->port, gq);
		dd_gsi_proxy_destroy(qp);
		droce_port_unlock(c->a->dp->port, gq);
		free(qp);
		return rc;
	}
	p->handle = qp->handle;
	p->qpn = 1;
	p->queue = gq;
	return 0;
}

int
op_create_qp(struct req_ctx *c)
{
	const struct droce_chan_create_qp_req *r = c->req;
	struct droce_chan_create_qp_rep *p = c->rep;
	struct dd_app *a = c->a;
	struct dd_pd *pd = dd_table_get(&a->pds, r->pd);
	struct dd_cq *scq = dd_table_get(&a->cqs, r->send_cq);
	struct dd_cq *rcq = dd_table_get(&a->cqs, r->recv_cq);
	struct dd_srq *srq = NULL;
	struct ibv_qp_init_attr ia = { 0 };
	struct dd_qp *qp;
	/* XRC_SEND: a send CQ alone (no receive side) */
	int xrc = r->qp_type == IBV_QPT_XRC_SEND;
	int rc;

	if (r->qp_type == IBV_QPT_XRC_RECV)
		return dd_create_qp_xrc_recv(c);
	if (xrc) {
		if (r->srq != DROCE_CHAN_NONE)
			return -EINVAL;
		rcq = scq;
	}
	if (pd == NULL || scq == NULL || rcq == NULL ||
			(r->srq != DROCE_CHAN_NONE &&
			(srq = dd_table_get(&a->srqs, r->srq)) == NULL))
		return -EINVAL;
	if (a->qps.n >= a->qps.cap)
		return -ENOMEM;
	if (r->qp_type == DROCE_QPT_GSI && srq == NULL)
		return create_gsi_proxy(c, scq, rcq);
	if (r->qp_type != IBV_QPT_RC && r->qp_type != IBV_QPT_UC &&
			r->qp_type != IBV_QPT_UD && !xrc)
		return -EOPNOTSUPP;
	qp = calloc(1, sizeof(*qp));
	if (qp == NULL)
		return -ENOMEM;
	ia.qp_type = (enum ibv_qp_type)r->qp_type;
	ia.cap = r->cap;
	ia.sq_sig_all = (int)r->sq_sig_all;
	/*
	 * A UD QP gets all the inline room the device has, whatever it
	 * asked for (ibv_create_qp(3): the caps returned may be larger),
	 * so that the drop-in copies short sends into the ring at the post,
	 * as a NIC reads them at the doorbell. We read a buffer only when
	 * our progress thread drains the ring, milliseconds later on a
	 * loaded host, and UCX's UD frees a CREQ's buffer as soon as the
	 * peer's own CREQ arrives, before its send completes: it wrote the
	 * next packet (another peer's) there, and we sent that to this
	 * peer (doc/daemon.md, "Short UD sends").
	 */
	if (ia.qp_type == IBV_QPT_UD && ia.cap.max_inline_data <
			droce_dev_limits(a->dp->dev)->max_inline)
		ia.cap.max_inline_data =
			droce_dev_limits(a->dp->dev)->max_inline;
	qp->app = a;
	qp->scq = scq;
	qp->rcq = rcq;
	qp->srq = srq;
	qp->type = r->qp_type;
	dd_lock_all();
	rc = place(scq, rcq, srq, &qp->q);
	if (rc == 0) {
		qp->tqp = droce_qp_create(pd->tpd, &ia, scq->tcq,
			xrc ? NULL : rcq->tcq, srq ? srq->tsrq : NULL);
		if (qp->tqp == NULL)
			rc = errno ? -errno : -EINVAL;
	}
	dd_unlock_all();
	if (rc != 0)
		goto fail;
	p->cap = ia.cap;
	qp->max_send_sge = ia.cap.max_send_sge;
	qp->max_recv_sge = ia.cap.max_recv_sge;
	qp->max_inline = ia.cap.max_inline_data;
	rc = qp_rings(c, qp, p);
	if (rc == 0) {
		droce_qp_set_user(qp->tqp, qp);
		droce_port_lock(c->a->dp->port, qp->q);
		rc = dd_table_add(&a->qps, qp, &qp->handle);
		droce_port_unlock(c->a->dp->port, qp->q);
	}
	if (rc != 0)
		goto fail;
	p->handle = qp->handle;
	p->qpn = droce_qp_num(qp->tqp);
	p->queue = qp->q;
	return 0;
fail:
	dd_wq_free(a, &qp->sq);
	dd_wq_free(a, &qp->rq);
	if (qp->tqp != NULL) {
		droce_port_lock(c->a->dp->port, qp->q);
		droce_qp_destroy(qp->tqp);
		droce_port_unlock(c->a->dp->port, qp->q);
	}
	free(qp);
	return rc;
}

int
op_modify_qp(struct req_ctx *c)
{
	const struct droce_chan_modify_qp_req *r = c->req;
	struct dd_qp *qp = dd_table_get(&c->a->qps, r->handle);
	struct ibv_qp_attr attr = r->attr;
	struct droce_av av;
	int rc;

	if (qp == NULL)
		return -EINVAL;
	if (qp->gsi) {
		/* QP1 is the daemon's, always ready; a RESET makes a proxy
		 * the application broke new (gsi.c) */
		if ((r->mask & IBV_QP_STATE) && attr.qp_state == IBV_QPS_RESET) {
			droce_port_lock(c->a->dp->port, qp->q);
			qp->failed = false;
			__atomic_store_n(&qp->sq.sh->error, 0, __ATOMIC_RELEASE);
			droce_port_unlock(c->a->dp->port, qp->q);
		}
		return 0;
	}
	/* the neighbour is asked before the queue is held (it may take
	 * seconds; the data path goes on meanwhile) */
	if (r->mask & IBV_QP_AV) {
		rc = droce_port_av_from_ah(c->a->dp->port, &attr.ah_attr, &av,
			c->neigh_ms);
		if (rc != 0)
			return rc;
	}
	droce_port_lock(c->a->dp->port, qp->q);
	rc = droce_qp_modify(qp->tqp, &attr, r->mask,
		(r->mask & IBV_QP_AV) ? &av : NULL);
	if (rc == 0 && (r->mask & IBV_QP_STATE) && attr.qp_state == IBV_QPS_RESET) {
		/* a fresh start: WQEs refused before are forgotten */
		qp->failed = false;
		if (qp->sq.sh != NULL)	/* XRC_RECV: none */
			__atomic_store_n(&qp->sq.sh->error, 0,
				__ATOMIC_RELEASE);
	}
	droce_port_unlock(c->a->dp->port, qp->q);
	return rc;
}

/*
 * Selective repeat changes what the QP's responder acknowledges, so only
 * a connection whose both ends agreed may have it: the port's setting
 * decides whether an application may ask (cm), and the transport takes
 * it only before the connection carries anything (RESET, INIT).
 */
int
op_set_sr(struct req_ctx *c)
{
	const struct droce_chan_set_sr_req *r = c->req;
	struct dd_qp *qp = dd_table_get(&c->a->qps, r->handle);
	int rc;

	if (qp == NULL || qp->gsi || qp->tqp == NULL ||
			qp->type != IBV_QPT_RC || r->on > 1)
		return -EINVAL;
	if (droce_dev_conf(c->a->dp->dev)->selective_repeat != DROCE_SR_CM)
		return -EPERM;
	droce_port_lock(c->a->dp->port, qp->q);
	rc = droce_qp_set_sr(qp->tqp, (int)r->on);
	droce_port_unlock(c->a->dp->port, qp->q);
	return rc;
}

int
op_query_qp(struct req_ctx *c)
{
	const struct droce_chan_query_qp_req *r = c->req;
	struct droce_chan_query_qp_rep *p = c->rep;
	struct dd_qp *qp = dd_table_get(&c->a->qps, r->handle);
	struct ibv_qp_init_attr init;
	int rc;

	if (qp == NULL)
		return -EINVAL;
	if (qp->gsi) {
		p->attr.qp_state = p->attr.cur_qp_state = IBV_QPS_RTS;
		p->attr.qkey = 0x80010000u;
		p->attr.port_num = 1;
		p->qp_type = IBV_QPT_UD;
		return 0;
	}
	droce_port_lock(c->a->dp->port, qp->q);
	rc = droce_qp_query(qp->tqp, &p->attr, r->mask, &init);
	droce_port_unlock(c->a->dp->port, qp->q);
	if (rc != 0)
		return rc;
	p->cap = init.cap;
	p->qp_type = init.qp_type;
	p->sq_sig_all = (uint32_t)init.sq_sig_all;
	return 0;
}

int
op_destroy_qp(struct req_ctx *c)
{
	const struct droce_chan_handle *r = c->req;
	struct dd_qp *qp = dd_table_get(&c->a->qps, r->handle);
	int rc;

	if (qp == NULL)
		return -EINVAL;
	droce_port_lock(c->a->dp->port, qp->q);
	dd_qp_last_sends(qp);
	if (qp->gsi) {
		dd_gsi_proxy_destroy(qp);
		rc = 0;
	} else {
		rc = droce_qp_destroy(qp->tqp);
	}
	if (rc == 0) {
		dd_queue_forget_qp(qp);
		dd_table_del(&c->a->qps, r->handle);
	}
	droce_port_unlock(c->a->dp->port, qp->q);
	if (rc != 0)
		return rc;
	dd_wq_free(c->a, &qp->sq);
	dd_wq_free(c->a, &qp->rq);
	free(qp);
	return 0;
}

int
op_create_ah(struct req_ctx *c)
{
	const struct droce_chan_create_ah_req *r = c->req;
	struct droce_chan_handle *p = c->rep;
	struct dd_pd *pd = dd_table_get(&c->a->pds, r->pd);
	struct droce_av av;
	struct dd_ah *ah;
	int rc;

	if (pd == NULL)
		return -EINVAL;
	if (c->a->ahs.n >= c->a->ahs.cap)
		return -ENOMEM;
	rc = droce_port_av_from_ah(c->a->dp->port, &r->attr, &av, c->neigh_ms);
	if (rc != 0)
		return rc;
	ah = calloc(1, sizeof(*ah));
	if (ah == NULL)
		return -ENOMEM;
	ah->tah = droce_ah_create(pd->tpd, &av);
	if (ah->tah == NULL || dd_table_add(&c->a->ahs, ah, &p->handle) != 0) {
		if (ah->tah != NULL)
			droce_ah_destroy(ah->tah);
		free(ah);
		return -ENOMEM;
	}
	return 0;
}

int
op_destroy_ah(struct req_ctx *c)
{
	const struct droce_chan_handle *r = c->req;
	struct dd_ah *ah = dd_table_get(&c->a->ahs, r->handle);
	int rc;

	if (ah == NULL)
		return -EINVAL;
	/* a UD WQE names its AH by handle: the queues must not be
	 * looking it up while it goes, and the sends the application
	 * posted before it destroyed the AH take its address first */
	dd_lock_all();
	dd_app_take_ud_sends(c->a);
	rc = droce_ah_destroy(ah->tah);
	if (rc == 0)
		dd_table_del(&c->a->ahs, r->handle);
	dd_unlock_all();
	if (rc != 0)
		return rc;
	free(ah);
	return 0;
}

int
op_attach_mcast(struct req_ctx *c)
{
	const struct droce_chan_mcast_req *r = c->req;
	struct dd_qp *qp = dd_table_get(&c->a->qps, r->qp);

	if (qp == NULL)
		return -EINVAL;
	return droce_port_attach_mcast(c->a->dp->port, qp->tqp, r->gid);
}

int
op_detach_mcast(struct req_ctx *c)
{
	const struct droce_chan_mcast_req *r = c->req;
	struct dd_qp *qp = dd_table_get(&c->a->qps, r->qp);

	if (qp == NULL)
		return -EINVAL;
	return droce_port_detach_mcast(c->a->dp->port, qp->tqp, r->gid);
}
