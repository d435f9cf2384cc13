/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * XRC (IBTA vol.1 14.6, Annex A14): XRC domains, XRC SRQs and their
 * numbers, and the two halves of an XRC connection.
 *  - An XRC_SEND QP is an RC requester whose requests carry an XRCETH
 *    naming the target's SRQ (tp_req.c); it has no receive side.
 *  - An XRC_RECV QP is an RC responder with no queues of its own: each
 *    request's XRCETH names the SRQ whose receive WQEs a SEND consumes,
 *    whose CQ gets the completion and whose PD checks every memory
 *    access (RDMA and atomics too). That SRQ must belong to the QP's XRC
 *    domain.
 * Both are RC QPs to the rest of the transport (qp->type is IBV_QPT_RC,
 * qp->xrc says which half), so the state machine's timers, PSNs, ACKs,
 * retransmission and responder resources are RC's, unchanged.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tp_internal.h"

struct droce_xrcd *
droce_xrcd_alloc(struct droce_dev *dev)
{
	struct droce_xrcd *x = calloc(1, sizeof(*x));

	if (x == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	x->dev = dev;
	return x;
}

int
droce_xrcd_free(struct droce_xrcd *x)
{
	struct droce_dev *dev = x->dev;

	pthread_mutex_lock(&dev->lock);
	if (x->refs) {
		pthread_mutex_unlock(&dev->lock);
		return -EBUSY;
	}
	pthread_mutex_unlock(&dev->lock);
	free(x);
	return 0;
}

struct droce_srq *
droce_srq_create_xrc(struct droce_pd *pd, struct droce_xrcd *xrcd,
		struct droce_cq *cq, const struct ibv_srq_init_attr *attr)
{
	struct droce_dev *dev = pd->dev;
	struct droce_srq *srq;
	uint32_t n;

	if (xrcd == NULL || cq == NULL || xrcd->dev != dev || cq->dev != dev) {
		errno = EINVAL;
		return NULL;
	}
	srq = droce_srq_create(pd, cq->queue->index, attr);
	if (srq == NULL)
		return NULL;
	pthread_mutex_lock(&dev->lock);
	if (dev->srq_tab == NULL)
		dev->srq_tab = calloc(dev->lim.max_srq + 1,
			sizeof(*dev->srq_tab));
	/* numbers from 1: 0 is no SRQ (a WR that names none) */
	for (n = 1; dev->srq_tab != NULL && n <= dev->lim.max_srq; n++)
		if (dev->srq_tab[n] == NULL)
			break;
	if (dev->srq_tab == NULL || n > dev->lim.max_srq) {
		pthread_mutex_unlock(&dev->lock);
		droce_srq_destroy(srq);
		errno = ENOMEM;
		return NULL;
	}
	srq->srqn = n;
	srq->xrcd = xrcd;
	srq->cq = cq;
	/* the CQ is tied to the SRQ's queue from now on */
	srq->refs++;
	cq->refs++;
	xrcd->refs++;
	dev->srq_tab[n] = srq;
	pthread_mutex_unlock(&dev->lock);
	return srq;
}

uint32_t
droce_srq_num(const struct droce_srq *srq)
{
	return srq->srqn;
}

/*
 * An XRC SRQ going away (the caller holds its queue, which is its
 * XRC_RECV QPs' queue): a QP that took its last request's SRQ, CQ and
 * PD from it forgets them, and a receive WQE of a SEND still open is
 * dropped with the SRQ (the rest of that message finds no message open:
 * Invalid Request NAK). Under the device lock.
 */
static void
xrc_srq_forget(struct droce_srq *srq)
{
	struct droce_tp_queue *q = srq->queue;
	uint32_t i;

	for (i = 0; i < q->nb_qps; i++) {
		struct droce_qp *qp = q->qps[i];

		if (qp->xrc != IBV_QPT_XRC_RECV || qp->srq != srq)
			continue;
		if (qp->rx_have_wqe) {
			qp->rx_have_wqe = 0;
			qp->rx_msg = TP_RX_NONE;
		}
		qp->srq = NULL;
		qp->rcq = NULL;
		qp->pd = NULL;
	}
}

int
tp_xrc_srq_release(struct droce_srq *srq)
{
	struct droce_dev *dev = srq->pd->dev;

	pthread_mutex_lock(&dev->lock);
	if (srq->refs > 1) {	/* one is its own hold on its CQ's queue */
		pthread_mutex_unlock(&dev->lock);
		return -EBUSY;
	}
	xrc_srq_forget(srq);
	dev->srq_tab[srq->srqn] = NULL;
	srq->cq->refs--;
	srq->xrcd->refs--;
	srq->refs = 0;
	srq->xrcd = NULL;
	pthread_mutex_unlock(&dev->lock);
	return 0;
}

struct droce_qp *
droce_qp_create_xrc_recv(struct droce_xrcd *xrcd, uint32_t q,
		struct ibv_qp_init_attr *attr)
{
	struct droce_dev *dev;
	struct droce_qp *qp;

	if (xrcd == NULL || attr == NULL ||
			attr->qp_type != IBV_QPT_XRC_RECV ||
			q >= xrcd->dev->conf.nb_queues) {
		errno = EINVAL;
		return NULL;
	}
	dev = xrcd->dev;
	qp = tp_qp_alloc(dev, &dev->queues[q], IBV_QPT_XRC_RECV);
	if (qp == NULL)
		return NULL;
	qp->xrcd = xrcd;
	pthread_mutex_lock(&dev->lock);
	xrcd->refs++;
	pthread_mutex_unlock(&dev->lock);
	memset(&attr->cap, 0, sizeof(attr->cap));
	return qp;
}

/*
 * An XRC_RECV QP's request at the expected PSN: the SRQ its XRCETH
 * names becomes the QP's SRQ, receive CQ and PD for this packet. 0, or
 * the NAK syndrome: Invalid Request for a number no SRQ has, Remote
 * Access for an SRQ of another XRC domain (a protection check, as a PD
 * mismatch is), and Invalid Request for a packet that continues a SEND
 * under another SRQ than the one its first packet named.
 */
uint8_t
tp_xrc_rx_srq(struct droce_qp *qp, const struct droce_pkt *pkt)
{
	struct droce_dev *dev = qp->dev;
	struct droce_srq *srq = NULL;
	uint32_t n = pkt->xrceth_srqn;

	if (dev->srq_tab != NULL && n != 0 && n <= dev->lim.max_srq)
		srq = dev->srq_tab[n];
	if (srq == NULL) {
		qp->st.xrc_bad_srq++;
		return DROCE_AETH_NAK_INV_REQ;
	}
	if (srq->xrcd != qp->xrcd) {
		qp->st.xrc_bad_srq++;
		return DROCE_AETH_NAK_REM_ACC;
	}
	/* one owner: an SRQ on another queue cannot be served here */
	if (srq->queue != qp->queue) {
		qp->st.xrc_bad_srq++;
		return DROCE_AETH_NAK_REM_OP;
	}
	if (qp->rx_msg != TP_RX_NONE && qp->srq != srq) {
		qp->st.xrc_bad_srq++;
		return DROCE_AETH_NAK_INV_REQ;
	}
	qp->srq = srq;
	qp->rcq = srq->cq;
	qp->pd = srq->pd;
	return 0;
}
