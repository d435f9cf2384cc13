/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * QPs on rdma_cm IDs: creation with default PD and CQs as librdmacm
 * makes them, and the attributes of each transition, taken from what the
 * CM negotiated (rdma_init_qp_attr gives the same to applications).
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cm_internal.h"

#define CM_MIN_RNR_TIMER 12	/* 0.64 ms, librdmacm's default */

static void
fill_ah(struct cm_id_priv *p, struct ibv_ah_attr *ah)
{
	memset(ah, 0, sizeof(*ah));
	ah->is_global = 1;
	memcpy(ah->grh.dgid.raw, p->id.route.addr.addr.ibaddr.dgid.raw, 16);
	ah->grh.sgid_index = p->sgid_index;
	ah->grh.flow_label = p->flow_label;
	ah->grh.hop_limit = 64;
	ah->grh.traffic_class = p->tos;
	ah->port_num = p->id.port_num;
}

int
cm_init_attr(struct cm_id_priv *p, struct ibv_qp_attr *a, int *mask)
{
	enum ibv_qp_type t = p->id.qp != NULL ? p->id.qp->qp_type :
		p->id.qp_type;
	enum ibv_qp_state to = a->qp_state;

	memset(a, 0, sizeof(*a));
	a->qp_state = to;
	*mask = IBV_QP_STATE;
	switch (to) {
	case IBV_QPS_INIT:
		a->pkey_index = 0;
		a->port_num = p->id.port_num ? p->id.port_num : 1;
		*mask |= IBV_QP_PKEY_INDEX | IBV_QP_PORT;
		if (t == IBV_QPT_UD) {
			a->qkey = p->id.ps == RDMA_PS_UDP ? CM_UDP_QKEY :
				p->remote_qkey;
			*mask |= IBV_QP_QKEY;
		} else {
			a->qp_access_flags = IBV_ACCESS_LOCAL_WRITE |
				IBV_ACCESS_REMOTE_WRITE;
			/*
			 * and FLUSH where the device has it, as the kernel's
			 * CM gives an RC QP since 6.2: librpma >= 1.3 flushes
			 * natively over rdma_cm's QPs, whose responders
			 * otherwise answer Invalid Request
			 */
			if (t == IBV_QPT_RC)
				a->qp_access_flags |= IBV_ACCESS_REMOTE_READ |
					IBV_ACCESS_REMOTE_ATOMIC |
					(p->dev != NULL ? p->dev->flush_access : 0);
			*mask |= IBV_QP_ACCESS_FLAGS;
		}
		return 0;
	case IBV_QPS_RTR:
		if (t == IBV_QPT_UD)
			return 0;
		if (p->remote_qpn == 0) {
			errno = EINVAL;	/* not connected yet */
			return -1;
		}
		fill_ah(p, &a->ah_attr);
		a->path_mtu = p->mtu;
		a->dest_qp_num = p->remote_qpn;
		a->rq_psn = p->rq_psn;
		*mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			IBV_QP_RQ_PSN;
		if (t == IBV_QPT_RC) {
			a->max_dest_rd_atomic = p->resp_res;
			a->min_rnr_timer = CM_MIN_RNR_TIMER;
			*mask |= IBV_QP_MAX_DEST_RD_ATOMIC |
				IBV_QP_MIN_RNR_TIMER;
		}
		return 0;
	case IBV_QPS_RTS:
		a->sq_psn = p->sq_psn;
		*mask |= IBV_QP_SQ_PSN;
		if (t == IBV_QPT_RC) {
			a->timeout = p->ack_timeout;
			a->retry_cnt = p->retry_count;
			a->rnr_retry = p->rnr_retry;
			a->max_rd_atomic = p->init_depth;
			*mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
		}
		return 0;
	case IBV_QPS_ERR:
	case IBV_QPS_RESET:
		return 0;
	default:
		errno = EINVAL;
		return -1;
	}
}

int
rdma_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *qp_attr,
		int *qp_attr_mask)
{
	int rc;

	if (id == NULL || qp_attr == NULL || qp_attr_mask == NULL) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&cm.lock);
	rc = cm_init_attr(cm_id(id), qp_attr, qp_attr_mask);
	pthread_mutex_unlock(&cm.lock);
	return rc;
}

/* Move the ID's QP to state to: 0, or -1 and errno. No QP: nothing. */
int
cm_qp_modify(struct cm_id_priv *p, enum ibv_qp_state to)
{
	struct ibv_qp_attr a;
	int mask, rc;

	if (p->id.qp == NULL)
		return 0;
	a.qp_state = to;
	if (cm_init_attr(p, &a, &mask) != 0)
		return -1;
	rc = ibv_modify_qp(p->id.qp, &a, mask);
	if (rc != 0) {
		errno = rc;
		return -1;
	}
	return 0;
}

void
cm_qp_to_error(struct cm_id_priv *p)
{
	cm_qp_modify(p, IBV_QPS_ERR);
}

/* librdmacm's default CQs: one per direction, each on its own channel */
static int
own_cqs(struct cm_id_priv *p, struct ibv_qp_init_attr_ex *a)
{
	struct rdma_cm_id *id = &p->id;
	int n;

	if (a->send_cq != NULL && a->recv_cq != NULL)
		return 0;
	for (n = 0; n < 2; n++) {
		struct ibv_comp_channel *ch = ibv_create_comp_channel(id->verbs);
		uint32_t depth = n == 0 ? a->cap.max_send_wr : a->cap.max_recv_wr;
		struct ibv_cq *cq;

		if (ch == NULL)
			return -1;
		cq = ibv_create_cq(id->verbs, depth ? (int)depth : 1, id, ch, 0);
		if (cq == NULL) {
			ibv_destroy_comp_channel(ch);
			return -1;
		}
		if (n == 0) {
			id->send_cq_channel = ch;
			id->send_cq = cq;
		} else {
			id->recv_cq_channel = ch;
			id->recv_cq = cq;
		}
	}
	p->own_cqs = true;
	if (a->send_cq == NULL)
		a->send_cq = id->send_cq;
	if (a->recv_cq == NULL)
		a->recv_cq = id->recv_cq;
	return 0;
}

static void
free_own_cqs(struct cm_id_priv *p)
{
	struct rdma_cm_id *id = &p->id;

	if (!p->own_cqs)
		return;
	if (id->send_cq != NULL)
		ibv_destroy_cq(id->send_cq);
	if (id->recv_cq != NULL)
		ibv_destroy_cq(id->recv_cq);
	if (id->send_cq_channel != NULL)
		ibv_destroy_comp_channel(id->send_cq_channel);
	if (id->recv_cq_channel != NULL)
		ibv_destroy_comp_channel(id->recv_cq_channel);
	id->send_cq = id->recv_cq = NULL;
	id->send_cq_channel = id->recv_cq_channel = NULL;
	p->own_cqs = false;
}

int
rdma_create_qp_ex(struct rdma_cm_id *id, struct ibv_qp_init_attr_ex *attr)
{
	struct cm_id_priv *p = cm_id(id);
	struct ibv_qp *qp;
	int e;

	if (id == NULL || attr == NULL || id->verbs == NULL || id->qp != NULL) {
		errno = EINVAL;
		return -1;
	}
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || attr->pd == NULL) {
		attr->comp_mask |= IBV_QP_INIT_ATTR_PD;
		attr->pd = id->pd != NULL ? id->pd : cm_dev_pd(p->dev);
		if (attr->pd == NULL)
			return -1;
	}
	if (attr->pd->context != id->verbs) {
		errno = EINVAL;
		return -1;
	}
	if (attr->srq == NULL)
		attr->srq = id->srq;
	if (own_cqs(p, attr) != 0) {
		e = errno;
		free_own_cqs(p);
		errno = e;
		return -1;
	}
	qp = ibv_create_qp_ex(id->verbs, attr);
	if (qp == NULL) {
		e = errno;
		free_own_cqs(p);
		errno = e;
		return -1;
	}
	pthread_mutex_lock(&cm.lock);
	id->qp = qp;
	id->pd = attr->pd;
	id->qp_type = qp->qp_type;
	p->qpn = qp->qp_num;
	/* ready for receives; a UD QP for sends too (librdmacm's promise) */
	e = cm_qp_modify(p, IBV_QPS_INIT);
	if (e == 0 && qp->qp_type == IBV_QPT_UD) {
		e = cm_qp_modify(p, IBV_QPS_RTR);
		if (e == 0)
			e = cm_qp_modify(p, IBV_QPS_RTS);
	}
	if (e != 0) {
		e = errno;
		id->qp = NULL;
		pthread_mutex_unlock(&cm.lock);
		ibv_destroy_qp(qp);
		free_own_cqs(p);
		errno = e;
		return -1;
	}
	pthread_mutex_unlock(&cm.lock);
	return 0;
}

int
rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd,
		struct ibv_qp_init_attr *qp_init_attr)
{
	struct ibv_qp_init_attr_ex a;
	int rc;

	if (id == NULL || qp_init_attr == NULL) {
		errno = EINVAL;
		return -1;
	}
	memset(&a, 0, sizeof(a));
	a.qp_context = qp_init_attr->qp_context;
	a.send_cq = qp_init_attr->send_cq;
	a.recv_cq = qp_init_attr->recv_cq;
	a.srq = qp_init_attr->srq;
	a.cap = qp_init_attr->cap;
	a.qp_type = qp_init_attr->qp_type;
	a.sq_sig_all = qp_init_attr->sq_sig_all;
	if (pd != NULL) {
		a.comp_mask = IBV_QP_INIT_ATTR_PD;
		a.pd = pd;
	}
	rc = rdma_create_qp_ex(id, &a);
	if (rc == 0) {
		qp_init_attr->cap = a.cap;
		qp_init_attr->send_cq = a.send_cq;
		qp_init_attr->recv_cq = a.recv_cq;
	}
	return rc;
}

void
rdma_destroy_qp(struct rdma_cm_id *id)
{
	if (id == NULL || id->qp == NULL)
		return;
	pthread_mutex_lock(&cm.lock);
	cm_mcast_leave_all(cm_id(id));	/* droce refuses to destroy an
					 * attached QP, as the kernel does */
	pthread_mutex_unlock(&cm.lock);
	ibv_destroy_qp(id->qp);
	id->qp = NULL;
	free_own_cqs(cm_id(id));
}

int
rdma_create_srq_ex(struct rdma_cm_id *id, struct ibv_srq_init_attr_ex *attr)
{
	struct ibv_srq_init_attr a;
	struct ibv_pd *pd;

	if (id == NULL || attr == NULL || id->verbs == NULL) {
		errno = EINVAL;
		return -1;
	}
	pd = (attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) && attr->pd != NULL ?
		attr->pd : id->pd != NULL ? id->pd : cm_dev_pd(cm_id(id)->dev);
	if (pd == NULL)
		return -1;
	if ((attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) &&
			attr->srq_type != IBV_SRQT_BASIC) {
		errno = EOPNOTSUPP;	/* XRC SRQs: not yet (issue 23) */
		return -1;
	}
	memset(&a, 0, sizeof(a));
	a.srq_context = attr->srq_context;
	a.attr = attr->attr;
	id->srq = ibv_create_srq(pd, &a);
	if (id->srq == NULL)
		return -1;
	id->pd = pd;
	cm_id(id)->own_srq = true;
	return 0;
}

int
rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd,
		struct ibv_srq_init_attr *attr)
{
	struct ibv_srq_init_attr_ex a;
	int rc;

	if (attr == NULL) {
		errno = EINVAL;
		return -1;
	}
	memset(&a, 0, sizeof(a));
	a.srq_context = attr->srq_context;
	a.attr = attr->attr;
	if (pd != NULL) {
		a.comp_mask = IBV_SRQ_INIT_ATTR_PD;
		a.pd = pd;
	}
	rc = rdma_create_srq_ex(id, &a);
	if (rc == 0)
		attr->attr = a.attr;
	return rc;
}

void
rdma_destroy_srq(struct rdma_cm_id *id)
{
	if (id == NULL || id->srq == NULL)
		return;
	ibv_destroy_srq(id->srq);
	id->srq = NULL;
	cm_id(id)->own_srq = false;
}
