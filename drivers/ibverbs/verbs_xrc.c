/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * XRC through the verbs API: ibv_open_xrcd / ibv_close_xrcd, XRC SRQs
 * (ibv_create_srq_ex with IBV_SRQT_XRC, ibv_get_srq_num), XRC_SEND and
 * XRC_RECV QPs (ibv_create_qp_ex) and ibv_open_qp, in process and
 * attached to droced (which keeps the domains, SRQs and QPs; ibv_open_qp
 * is in process only: EOPNOTSUPP attached).
 *
 * An XRC domain opened with a file (fd != -1) is shared, as rdma-core
 * documents ibv_open_xrcd(3), by every open of the same inode: here
 * within the process (the device's list), not across processes. Its XRC
 * SRQs and XRC_RECV QPs live on queue 0 (the transport serves a request
 * only from an SRQ of the XRC_RECV QP's queue): an XRC SRQ moves its CQ
 * there, which fails (EINVAL) for a CQ QPs already hold elsewhere.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "attach.h"

/* The queue of XRC SRQs and XRC_RECV QPs. */
#define DV_XRC_QUEUE 0

/* One XRC domain, shared by the opens of one inode. */
struct dv_xrcd_sh {
	struct droce_xrcd *t;
	uint32_t handle;	/* attached: droced's */
	dev_t dev;
	ino_t ino;
	int has_ino;
	int opens;
	struct dv_xrcd_sh *next;
};

struct dv_xrcd {
	struct ibv_xrcd xrcd;
	struct dv_xrcd_sh *sh;
	struct dv_context *ctx;
};

/* An XRC_RECV QP: the handles ibv_create_qp_ex and ibv_open_qp gave. */
struct dv_xrc_tgt {
	struct droce_qp *tqp;
	uint32_t qpn;
	struct dv_xrcd_sh *sh;
	int refs;
	struct dv_xrc_tgt *next;
};

static inline struct dv_xrcd *
dv_xrcd(struct ibv_xrcd *x)
{
	return (struct dv_xrcd *)x;
}

struct ibv_xrcd *
dv_open_xrcd(struct ibv_context *context, struct ibv_xrcd_init_attr *attr)
{
	struct dv_context *ctx = dv_ctx(context);
	struct dv_device *d = ctx->dev;
	struct dv_xrcd_sh *sh = NULL;
	struct dv_xrcd *x;
	struct stat st;
	int rc, fd, oflags;

	if (attr == NULL || attr->comp_mask >= IBV_XRCD_INIT_ATTR_RESERVED) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!(attr->comp_mask & IBV_XRCD_INIT_ATTR_FD) ||
			!(attr->comp_mask & IBV_XRCD_INIT_ATTR_OFLAGS)) {
		errno = EINVAL;	/* as rdma-core's ibv_cmd_open_xrcd */
		return NULL;
	}
	fd = attr->fd;
	oflags = attr->oflags;
	if (fd != -1 && fstat(fd, &st) != 0) {
		errno = EBADF;
		return NULL;
	}
	rc = ctx->att != NULL ? 0 : dv_port_get(ctx);
	if (rc) {
		errno = rc;
		return NULL;
	}
	x = calloc(1, sizeof(*x));
	if (x == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_lock(&d->lock);
	if (fd != -1) {
		/* the kernel's rules (ib_uverbs_open_xrcd) */
		for (sh = d->xrcds; sh != NULL; sh = sh->next)
			if (sh->has_ino && sh->dev == st.st_dev &&
					sh->ino == st.st_ino)
				break;
		if (sh == NULL && !(oflags & O_CREAT)) {
			rc = EAGAIN;	/* no domain yet and no O_CREAT */
			goto fail;
		}
		if (sh != NULL && (oflags & O_EXCL)) {
			rc = EINVAL;
			goto fail;
		}
	}
	if (sh == NULL) {
		sh = calloc(1, sizeof(*sh));
		rc = sh == NULL ? ENOMEM : ctx->att != NULL ?
			da_open_xrcd(ctx, &sh->handle) :
			(sh->t = droce_xrcd_alloc(d->tdev)) == NULL ? ENOMEM : 0;
		if (rc != 0) {
			free(sh);
			goto fail;
		}
		if (fd != -1) {
			sh->has_ino = 1;
			sh->dev = st.st_dev;
			sh->ino = st.st_ino;
		}
		sh->next = d->xrcds;
		d->xrcds = sh;
	}
	sh->opens++;
	pthread_mutex_unlock(&d->lock);
	x->sh = sh;
	x->ctx = ctx;
	x->xrcd.context = context;
	return &x->xrcd;
fail:
	pthread_mutex_unlock(&d->lock);
	free(x);
	errno = rc;
	return NULL;
}

int
dv_close_xrcd(struct ibv_xrcd *ibx)
{
	struct dv_xrcd *x = dv_xrcd(ibx);
	struct dv_device *d = x->ctx->dev;
	struct dv_xrcd_sh *sh = x->sh, **pp;
	int rc;

	pthread_mutex_lock(&d->lock);
	if (sh->opens == 1) {
		/* the last open: the domain goes, if nothing uses it */
		rc = x->ctx->att != NULL ?
			da_close_xrcd(x->ctx, sh->handle) :
			-droce_xrcd_free(sh->t);
		if (rc) {
			pthread_mutex_unlock(&d->lock);
			return rc;
		}
		for (pp = &d->xrcds; *pp != sh; pp = &(*pp)->next)
			;
		*pp = sh->next;
		free(sh);
	} else {
		sh->opens--;
	}
	pthread_mutex_unlock(&d->lock);
	free(x);
	return 0;
}

/* ibv_create_srq_ex with IBV_SRQT_XRC: XRCD, CQ and PD required. */
struct ibv_srq *
dv_create_srq_xrc(struct dv_context *ctx, struct ibv_srq_init_attr_ex *attr)
{
	const uint32_t need = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
		IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;
	struct droce_port *port;
	struct ibv_srq_init_attr ia;
	struct dv_srq *srq;
	struct dv_cq *cq;
	int moved;

	if ((attr->comp_mask & need) != need || attr->pd == NULL ||
			attr->xrcd == NULL || attr->cq == NULL ||
			(attr->comp_mask & ~need) ||
			dv_xrcd(attr->xrcd)->ctx->dev != ctx->dev ||
			dv_cq(attr->cq)->ctx != ctx) {
		errno = EINVAL;
		return NULL;
	}
	if (ctx->att != NULL)	/* droced moves the CQ to its queue 0 */
		return da_create_srq(&ctx->vctx.context, attr);
	cq = dv_cq(attr->cq);
	port = ctx->dev->port;
	/* its CQ on the XRC queue (a CQ that QPs hold elsewhere stays) */
	droce_port_lock(port, cq->q);
	moved = droce_cq_move(cq->tcq, DV_XRC_QUEUE) == 0;
	droce_port_unlock(port, cq->q);
	if (!moved) {
		errno = EINVAL;
		return NULL;
	}
	cq->q = DV_XRC_QUEUE;
	srq = calloc(1, sizeof(*srq));
	if (srq == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	memset(&ia, 0, sizeof(ia));
	ia.srq_context = attr->srq_context;
	ia.attr = attr->attr;
	srq->q = DV_XRC_QUEUE;
	droce_port_lock(port, srq->q);
	srq->tsrq = droce_srq_create_xrc(dv_pd(attr->pd)->tpd,
		dv_xrcd(attr->xrcd)->sh->t, cq->tcq, &ia);
	droce_port_unlock(port, srq->q);
	if (srq->tsrq == NULL) {
		free(srq);
		return NULL;
	}
	attr->attr = ia.attr;
	srq->ctx = ctx;
	droce_srq_set_user(srq->tsrq, srq);
	srq->srq.context = &ctx->vctx.context;
	srq->srq.srq_context = attr->srq_context;
	srq->srq.pd = attr->pd;
	pthread_mutex_init(&srq->srq.mutex, NULL);
	pthread_cond_init(&srq->srq.cond, NULL);
	return &srq->srq;
}

/* A new handle on an XRC_RECV QP (create or open). */
static struct ibv_qp *
tgt_handle(struct dv_context *ctx, struct dv_xrc_tgt *t, void *qp_context)
{
	struct dv_qp *qp = calloc(1, sizeof(*qp));

	if (qp == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	qp->ctx = ctx;
	qp->q = DV_XRC_QUEUE;
	qp->tqp = t->tqp;
	qp->tgt = t;
	qp->ex.qp_base.context = &ctx->vctx.context;
	qp->ex.qp_base.qp_context = qp_context;
	qp->ex.qp_base.qp_num = t->qpn;
	qp->ex.qp_base.handle = t->qpn;
	qp->ex.qp_base.state = droce_qp_state(t->tqp);
	qp->ex.qp_base.qp_type = IBV_QPT_XRC_RECV;
	pthread_mutex_init(&qp->ex.qp_base.mutex, NULL);
	pthread_cond_init(&qp->ex.qp_base.cond, NULL);
	return &qp->ex.qp_base;
}

/* ibv_create_qp_ex of an XRC_RECV QP. */
struct ibv_qp *
dv_create_qp_xrc(struct dv_context *ctx, struct ibv_qp_init_attr_ex *attr)
{
	struct dv_device *d = ctx->dev;
	struct ibv_qp_init_attr ia;
	struct dv_xrc_tgt *t;
	struct ibv_qp *q;

	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_XRCD) || attr->xrcd == NULL ||
			dv_xrcd(attr->xrcd)->ctx->dev != d) {
		errno = EINVAL;
		return NULL;
	}
	if ((attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
			attr->send_ops_flags) {
		errno = EOPNOTSUPP;	/* it sends nothing */
		return NULL;
	}
	if (ctx->att != NULL)	/* one handle: no ibv_open_qp attached */
		return da_create_qp(&ctx->vctx.context, attr, 0);
	t = calloc(1, sizeof(*t));
	if (t == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	memset(&ia, 0, sizeof(ia));
	ia.qp_context = attr->qp_context;
	ia.qp_type = IBV_QPT_XRC_RECV;
	droce_port_lock(d->port, DV_XRC_QUEUE);
	t->tqp = droce_qp_create_xrc_recv(dv_xrcd(attr->xrcd)->sh->t,
		DV_XRC_QUEUE, &ia);
	droce_port_unlock(d->port, DV_XRC_QUEUE);
	if (t->tqp == NULL) {
		free(t);
		return NULL;
	}
	memset(&attr->cap, 0, sizeof(attr->cap));
	t->qpn = droce_qp_num(t->tqp);
	t->sh = dv_xrcd(attr->xrcd)->sh;
	t->refs = 1;
	q = tgt_handle(ctx, t, attr->qp_context);
	if (q == NULL) {
		droce_port_lock(d->port, DV_XRC_QUEUE);
		droce_qp_destroy(t->tqp);
		droce_port_unlock(d->port, DV_XRC_QUEUE);
		free(t);
		return NULL;
	}
	droce_qp_set_user(t->tqp, dv_qp(q));
	pthread_mutex_lock(&d->lock);
	t->next = d->xrc_tgts;
	d->xrc_tgts = t;
	pthread_mutex_unlock(&d->lock);
	return q;
}

/* ibv_open_qp(3): another handle on an XRC_RECV QP of the same domain. */
struct ibv_qp *
dv_open_qp(struct ibv_context *context, struct ibv_qp_open_attr *attr)
{
	const uint32_t need = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD |
		IBV_QP_OPEN_ATTR_TYPE;
	struct dv_context *ctx = dv_ctx(context);
	struct dv_device *d = ctx->dev;
	struct dv_xrc_tgt *t;
	struct ibv_qp *q;

	if (ctx->att != NULL) {
		errno = EOPNOTSUPP;	/* in process only (doc/verbs.md) */
		return NULL;
	}
	if (attr == NULL || (attr->comp_mask & need) != need ||
			attr->comp_mask >= IBV_QP_OPEN_ATTR_RESERVED ||
			attr->xrcd == NULL ||
			attr->qp_type != IBV_QPT_XRC_RECV ||
			dv_xrcd(attr->xrcd)->ctx->dev != d) {
		errno = EINVAL;
		return NULL;
	}
	pthread_mutex_lock(&d->lock);
	for (t = d->xrc_tgts; t != NULL; t = t->next)
		if (t->qpn == attr->qp_num && t->sh == dv_xrcd(attr->xrcd)->sh)
			break;
	if (t != NULL)
		t->refs++;
	pthread_mutex_unlock(&d->lock);
	if (t == NULL) {
		errno = ENOENT;	/* no such QP in this domain */
		return NULL;
	}
	q = tgt_handle(ctx, t, (attr->comp_mask & IBV_QP_OPEN_ATTR_CONTEXT) ?
		attr->qp_context : NULL);
	if (q == NULL) {
		pthread_mutex_lock(&d->lock);
		t->refs--;
		pthread_mutex_unlock(&d->lock);
	}
	return q;
}

/* ibv_destroy_qp of an XRC_RECV handle: the QP goes with the last. */
int
dv_destroy_qp_xrc(struct dv_qp *qp)
{
	struct dv_device *d = qp->ctx->dev;
	struct dv_xrc_tgt *t = qp->tgt, **pp;
	int rc;

	pthread_mutex_lock(&d->lock);
	if (t->refs > 1) {
		t->refs--;
		/* async events name the first handle: none once it goes */
		droce_port_lock(d->port, DV_XRC_QUEUE);
		if (droce_qp_user(t->tqp) == qp)
			droce_qp_set_user(t->tqp, NULL);
		droce_port_unlock(d->port, DV_XRC_QUEUE);
		pthread_mutex_unlock(&d->lock);
		free(qp);
		return 0;
	}
	pthread_mutex_unlock(&d->lock);
	droce_port_lock(d->port, DV_XRC_QUEUE);
	rc = droce_qp_destroy(t->tqp);
	droce_port_unlock(d->port, DV_XRC_QUEUE);
	if (rc)
		return -rc;
	pthread_mutex_lock(&d->lock);
	for (pp = &d->xrc_tgts; *pp != t; pp = &(*pp)->next)
		;
	*pp = t->next;
	pthread_mutex_unlock(&d->lock);
	free(t);
	free(qp);
	return 0;
}

int
dv_get_srq_num(struct ibv_srq *ibsrq, uint32_t *num)
{
	struct dv_srq *srq = dv_srq(ibsrq);
	uint32_t n;

	n = srq->ctx->att != NULL ? srq->srqn : droce_srq_num(srq->tsrq);
	if (n == 0)
		return EOPNOTSUPP;	/* SRQ numbers exist for XRC only */
	*num = n;
	return 0;
}

uint32_t
dv_xrcd_handle(struct ibv_xrcd *x)
{
	return dv_xrcd(x)->sh->handle;
}
