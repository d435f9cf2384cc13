/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/* Receive queues (a QP's own or an SRQ) and SRQ objects. */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tp_internal.h"

int
tp_rq_init(struct tp_rq *rq, uint32_t wr, uint32_t sge)
{
	uint32_t i;

	memset(rq, 0, sizeof(*rq));
	rq->size = tp_pow2(wr ? wr : 1);
	rq->max_sge = sge ? sge : 1;
	rq->wqe = calloc(rq->size, sizeof(*rq->wqe));
	rq->sges = calloc((size_t)rq->size * rq->max_sge, sizeof(*rq->sges));
	if (rq->wqe == NULL || rq->sges == NULL) {
		tp_rq_free(rq);
		return -ENOMEM;
	}
	for (i = 0; i < rq->size; i++)
		rq->wqe[i].sge = &rq->sges[(size_t)i * rq->max_sge];
	return 0;
}

void
tp_rq_free(struct tp_rq *rq)
{
	free(rq->wqe);
	free(rq->sges);
	rq->wqe = NULL;
	rq->sges = NULL;
}

/* ibv_post_recv(3) rules: EINVAL bad WR, ENOMEM full; stop at the first. */
int
tp_rq_post(struct tp_rq *rq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	struct tp_rwqe *w;

	for (; wr != NULL; wr = wr->next) {
		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > rq->max_sge ||
				(wr->num_sge > 0 && wr->sg_list == NULL)) {
			*bad_wr = wr;
			return EINVAL;
		}
		if (rq->head - rq->tail >= rq->size) {
			*bad_wr = wr;
			return ENOMEM;
		}
		w = &rq->wqe[rq->head & (rq->size - 1)];
		w->wr_id = wr->wr_id;
		w->num_sge = (uint32_t)wr->num_sge;
		if (wr->num_sge == 1)
			w->sge[0] = wr->sg_list[0];	/* the common case */
		else if (wr->num_sge)
			memcpy(w->sge, wr->sg_list, sizeof(*w->sge) * wr->num_sge);
		rq->head++;
	}
	return 0;
}

int
tp_rq_pop(struct tp_rq *rq, struct tp_rwqe *out)
{
	struct tp_rwqe *w;

	if (rq->head == rq->tail)
		return -ENOENT;
	w = &rq->wqe[rq->tail & (rq->size - 1)];
	out->wr_id = w->wr_id;
	out->num_sge = w->num_sge;
	/* the slot is free from here: a receive posted next may overwrite
	 * these SGEs (a WQE held across packets copies them, tp_resp.c) */
	out->sge = w->sge;
	rq->tail++;
	return 0;
}

struct droce_srq *
droce_srq_create(struct droce_pd *pd, uint32_t q,
		const struct ibv_srq_init_attr *attr)
{
	struct droce_dev *dev = pd->dev;
	struct droce_srq *srq;

	if (attr == NULL || attr->attr.max_wr == 0 ||
			attr->attr.max_wr > dev->lim.max_srq_wr ||
			attr->attr.max_sge > dev->lim.max_srq_sge ||
			q >= dev->conf.nb_queues ||
			attr->attr.srq_limit > attr->attr.max_wr) {
		errno = EINVAL;
		return NULL;
	}
	srq = calloc(1, sizeof(*srq));
	if (srq == NULL || tp_rq_init(&srq->rq, attr->attr.max_wr,
			attr->attr.max_sge) != 0) {
		free(srq);
		errno = ENOMEM;
		return NULL;
	}
	srq->pd = pd;
	srq->queue = &dev->queues[q];
	srq->max_wr = srq->rq.size;
	srq->limit = attr->attr.srq_limit;
	pthread_mutex_lock(&dev->lock);
	pd->refs++;
	dev->nb_srq++;
	pthread_mutex_unlock(&dev->lock);
	return srq;
}

int
droce_srq_move(struct droce_srq *srq, uint32_t q)
{
	return tp_owner_move(srq->pd->dev, &srq->queue, &srq->refs, q);
}

int
droce_srq_destroy(struct droce_srq *srq)
{
	struct droce_dev *dev = srq->pd->dev;

	if (srq->xrcd != NULL && tp_xrc_srq_release(srq) != 0)
		return -EBUSY;
	pthread_mutex_lock(&dev->lock);
	if (srq->refs) {
		pthread_mutex_unlock(&dev->lock);
		return -EBUSY;
	}
	srq->pd->refs--;
	dev->nb_srq--;
	pthread_mutex_unlock(&dev->lock);
	tp_rq_free(&srq->rq);
	free(srq);
	return 0;
}

int
droce_srq_modify(struct droce_srq *srq, struct ibv_srq_attr *attr, int mask)
{
	if (mask & IBV_SRQ_MAX_WR)
		return -EINVAL;	/* resizing is not supported */
	if (mask & IBV_SRQ_LIMIT) {
		if (attr->srq_limit > srq->max_wr)
			return -EINVAL;
		srq->limit = attr->srq_limit;
	}
	return 0;
}

int
droce_srq_query(struct droce_srq *srq, struct ibv_srq_attr *attr)
{
	attr->max_wr = srq->max_wr;
	attr->max_sge = srq->rq.max_sge;
	attr->srq_limit = srq->limit;
	return 0;
}

int
droce_srq_post_recv(struct droce_srq *srq, struct ibv_recv_wr *wr,
		struct ibv_recv_wr **bad_wr)
{
	return tp_rq_post(&srq->rq, wr, bad_wr);
}
