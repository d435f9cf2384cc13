/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * Completion queues. Produced by the owner context, consumed by the
 * application under the same per-queue exclusion. A full CQ is never
 * overwritten: the completion is refused, the CQ marked overflowed and
 * IBV_EVENT_CQ_ERR raised (IBTA 11.4.2.1: CQ overrun is an error).
 */

#include <errno.h>
#include <stdlib.h>

#include <string.h>

#include "tp_internal.h"

struct droce_cq *
droce_cq_create(struct droce_dev *dev, uint32_t q, uint32_t cqe)
{
	struct droce_cq *cq;

	if (cqe == 0 || cqe > dev->lim.max_cqe || q >= dev->conf.nb_queues) {
		errno = EINVAL;
		return NULL;
	}
	cq = calloc(1, sizeof(*cq));
	if (cq == NULL)
		goto nomem;
	cq->size = tp_pow2(cqe + 1);
	cq->cqe = cq->size - 1;
	cq->ring = calloc(cq->size, sizeof(*cq->ring));
	if (cq->ring == NULL)
		goto nomem;
	cq->dev = dev;
	cq->queue = &dev->queues[q];
	pthread_mutex_lock(&dev->lock);
	dev->nb_cq++;
	pthread_mutex_unlock(&dev->lock);
	return cq;
nomem:
	if (cq)
		free(cq);
	errno = ENOMEM;
	return NULL;
}

int
droce_cq_destroy(struct droce_cq *cq)
{
	struct droce_dev *dev = cq->dev;

	pthread_mutex_lock(&dev->lock);
	if (cq->refs) {
		pthread_mutex_unlock(&dev->lock);
		return -EBUSY;
	}
	dev->nb_cq--;
	pthread_mutex_unlock(&dev->lock);
	if (cq->awaited && cq->armed != TP_CQ_UNARMED)
		cq->queue->cqs_awaited--;
	free(cq->ring);
	free(cq);
	return 0;
}

int
droce_cq_resize(struct droce_cq *cq, uint32_t cqe)
{
	uint32_t n = cq->head - cq->tail, size, i;
	struct ibv_wc *ring;

	if (cqe == 0 || cqe > cq->dev->lim.max_cqe || cqe < n)
		return -EINVAL;
	size = tp_pow2(cqe + 1);
	if (size == cq->size)
		return 0;
	ring = calloc(size, sizeof(*ring));
	if (ring == NULL)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		ring[i] = cq->ring[(cq->tail + i) & (cq->size - 1)];
	free(cq->ring);
	cq->ring = ring;
	cq->size = size;
	cq->cqe = size - 1;
	cq->tail = 0;
	cq->head = n;
	return 0;
}

int
droce_cq_move(struct droce_cq *cq, uint32_t q)
{
	return tp_owner_move(cq->dev, &cq->queue, &cq->refs, q);
}

uint32_t
droce_cq_size(const struct droce_cq *cq)
{
	return cq->cqe;
}

struct droce_tp_queue *
droce_cq_queue(const struct droce_cq *cq)
{
	return cq->queue;
}

struct ibv_wc *
tp_cq_overflowed(struct droce_cq *cq)
{
	if (!cq->overflow) {
		cq->overflow = 1;
		cq->queue->st.cq_overflows++;
		tp_async(cq->dev, IBV_EVENT_CQ_ERR, cq);
	}
	return NULL;
}

void
tp_cq_fire(struct droce_cq *cq, int solicited)
{
	const struct ibv_wc *wc = &cq->ring[(cq->head - 1) & (cq->size - 1)];

	if (cq->armed == TP_CQ_ARMED_ANY || solicited ||
			wc->status != IBV_WC_SUCCESS) {
		cq->armed = TP_CQ_UNARMED;
		if (cq->awaited) {
			cq->queue->cqs_awaited--;
			cq->queue->cq_wakeups++;
		}
		if (cq->notify)
			cq->notify(cq->notify_arg, cq);
	}
}

int
tp_cq_push(struct droce_cq *cq, const struct ibv_wc *wc, int solicited)
{
	struct ibv_wc *slot = tp_cq_slot(cq);

	if (slot == NULL)
		return -EOVERFLOW;
	*slot = *wc;
	tp_cq_commit(cq, solicited);
	return 0;
}

/*
 * A QP goes: its completions still in the CQ go with it, as a ConnectX
 * provider cleans its CQs when it destroys a QP. Programs rely on it:
 * libfabric's ofi_rxm reposts the buffer of any successful receive to
 * its QP, freed by then (a crash at teardown, found under droced).
 */
void
tp_cq_purge_qp(struct droce_cq *cq, uint32_t qpn)
{
	uint32_t from, to = cq->tail;

	for (from = cq->tail; from != cq->head; from++) {
		const struct ibv_wc *wc = &cq->ring[from & (cq->size - 1)];

		if (wc->qp_num == qpn)
			continue;
		if (to != from)
			cq->ring[to & (cq->size - 1)] = *wc;
		to++;
	}
	cq->head = to;
}

int
droce_cq_poll(struct droce_cq *cq, struct ibv_wc *wc, int n)
{
	int i = 0;

	while (i < n && cq->tail != cq->head) {
		wc[i++] = cq->ring[cq->tail & (cq->size - 1)];
		cq->tail++;
	}
	if (i == 0 && cq->overflow)
		return -EOVERFLOW;
	return i;
}

int
droce_cq_arm(struct droce_cq *cq, int solicited_only)
{
	if (cq->awaited && cq->armed == TP_CQ_UNARMED)
		cq->queue->cqs_awaited++;
	cq->armed = solicited_only ? TP_CQ_ARMED_SOLICITED : TP_CQ_ARMED_ANY;
	return 0;
}

uint32_t
droce_cq_solicited_seq(const struct droce_cq *cq)
{
	return cq->solicited_seq;
}

void
droce_cq_set_awaited(struct droce_cq *cq)
{
	cq->awaited = true;
	if (cq->armed != TP_CQ_UNARMED)
		cq->queue->cqs_awaited++;
}

uint32_t
droce_tp_queue_awaited(const struct droce_tp_queue *q)
{
	return q->cqs_awaited;
}

uint64_t
droce_tp_queue_wakeups(const struct droce_tp_queue *q)
{
	return q->cq_wakeups;
}

void
droce_cq_set_notify(struct droce_cq *cq, droce_cq_notify_cb cb, void *arg)
{
	cq->notify = cb;
	cq->notify_arg = arg;
}

const char *
droce_wc_status_str(enum ibv_wc_status st)
{
	static const char *const names[] = {
		[IBV_WC_SUCCESS] = "success",
		[IBV_WC_LOC_LEN_ERR] = "local length error",
		[IBV_WC_LOC_QP_OP_ERR] = "local QP operation error",
		[IBV_WC_LOC_EEC_OP_ERR] = "local EE context operation error",
		[IBV_WC_LOC_PROT_ERR] = "local protection error",
		[IBV_WC_WR_FLUSH_ERR] = "Work Request Flushed Error",
		[IBV_WC_MW_BIND_ERR] = "memory management operation error",
		[IBV_WC_BAD_RESP_ERR] = "bad response error",
		[IBV_WC_LOC_ACCESS_ERR] = "local access error",
		[IBV_WC_REM_INV_REQ_ERR] = "remote invalid request error",
		[IBV_WC_REM_ACCESS_ERR] = "remote access error",
		[IBV_WC_REM_OP_ERR] = "remote operation error",
		[IBV_WC_RETRY_EXC_ERR] = "transport retry counter exceeded",
		[IBV_WC_RNR_RETRY_EXC_ERR] = "RNR retry counter exceeded",
		[IBV_WC_LOC_RDD_VIOL_ERR] = "local RDD violation error",
		[IBV_WC_REM_INV_RD_REQ_ERR] = "remote invalid RD request",
		[IBV_WC_REM_ABORT_ERR] = "aborted error",
		[IBV_WC_INV_EECN_ERR] = "invalid EE context number",
		[IBV_WC_INV_EEC_STATE_ERR] = "invalid EE context state",
		[IBV_WC_FATAL_ERR] = "fatal error",
		[IBV_WC_RESP_TIMEOUT_ERR] = "response timeout error",
		[IBV_WC_GENERAL_ERR] = "general error",
		[IBV_WC_TM_ERR] = "TM error",
		[IBV_WC_TM_RNDV_INCOMPLETE] = "TM software rendezvous",
	};

	if ((unsigned int)st < sizeof(names) / sizeof(names[0]) &&
			names[st] != NULL)
		return names[st];
	return "unknown";
}
