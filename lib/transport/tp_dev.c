/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/* The device: limits, owner contexts (queues), PD, async events, stats. */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tp_internal.h"
#include "tp_mcast.h"

void
droce_dev_default_limits(struct droce_dev_limits *lim)
{
	memset(lim, 0, sizeof(*lim));
	lim->max_qp = 4096;
	lim->max_qp_wr = 16384;
	lim->max_sge = 32;
	lim->max_inline = 256;
	lim->max_cq = 4096;
	/*
	 * A ConnectX's 2^22 - 1: libfabric's ofi_rxm sizes one CQ for all
	 * of its peers (128 sends and 128 receives for each of 1024 by
	 * default, 262144 CQEs) and fails where a device has fewer. The
	 * ring is calloc'd, so only the entries used are ever touched.
	 */
	lim->max_cqe = (1u << 22) - 1;
	lim->max_mr = TP_KEY_SLOTS - 2;
	lim->max_mr_size = 1ull << 40;
	lim->max_pd = 4096;
	lim->max_mw = 4096;
	lim->max_srq = 1024;
	lim->max_srq_wr = 16384;
	lim->max_srq_sge = 32;
	lim->max_qp_rd_atom = TP_MAX_RD_ATOMIC;
	lim->max_ah = 65536;
	lim->max_msg_sz = 1u << 31;
	lim->max_mcast_grp = TP_MCAST_GRP;
	lim->max_mcast_qp_attach = TP_MCAST_QP_ATTACH;
	lim->max_total_mcast_qp_attach = TP_MCAST_GRP * TP_MCAST_QP_ATTACH;
}

/* Multicast limits left 0 take the defaults (a caller giving max_qp may
 * predate them). */
static void
mcast_limits(struct droce_dev_limits *lim)
{
	struct droce_dev_limits def;

	droce_dev_default_limits(&def);
	if (lim->max_mcast_grp == 0)
		lim->max_mcast_grp = def.max_mcast_grp;
	if (lim->max_mcast_qp_attach == 0)
		lim->max_mcast_qp_attach = def.max_mcast_qp_attach;
	if (lim->max_total_mcast_qp_attach == 0)
		lim->max_total_mcast_qp_attach = def.max_total_mcast_qp_attach;
}

/* The QPN stride: the slots rounded up to a power of 2 where that is a
 * multiple of the queues (a mask in the receive path), else to a
 * multiple of the queues; and the generations below QPN 0xffffff (the
 * multicast QPN). */
static void
qpn_layout(struct droce_dev *dev, uint32_t nq)
{
	uint32_t s = 1;

	while (s < dev->qp_tab_size)
		s <<= 1;
	if (s % nq == 0) {
		dev->qpn_mask = s - 1;
	} else {
		s = (dev->qp_tab_size + nq - 1) / nq * nq;
		dev->qpn_mask = 0;
	}
	dev->qpn_stride = s;
	dev->qpn_gens = DROCE_PSN_MASK / s;
}

struct droce_dev *
droce_dev_create(const struct droce_dev_conf *conf)
{
	struct droce_dev *dev;
	uint32_t i, nq;

	if (conf == NULL) {
		errno = EINVAL;
		return NULL;
	}
	dev = calloc(1, sizeof(*dev));
	if (dev == NULL)
		return NULL;
	dev->conf = *conf;
	if (dev->conf.eth_mtu == 0)
		dev->conf.eth_mtu = 1500;
	nq = conf->nb_queues ? conf->nb_queues : 1;
	dev->conf.nb_queues = nq;
	if (!conf->dcqcn_set)
		droce_dcqcn_params_default(&dev->conf.dcqcn);
	dev->conf.dcqcn_set = 1;
	if (dev->conf.line_rate_mbps == 0)
		dev->conf.line_rate_mbps = 100000;
	tp_dcqcn_conf(&dev->dcqcn, &dev->conf.dcqcn, dev->conf.line_rate_mbps);
	tp_delay_conf(&dev->delay, dev->conf.line_rate_mbps,
		dev->conf.delay_target_ns, dev->conf.delay_ai_mbps);
	droce_dev_default_limits(&dev->lim);
	if (conf->limits.max_qp)
		dev->lim = conf->limits;
	mcast_limits(&dev->lim);
	dev->rng = conf->seed ? conf->seed : 0x2545f4914f6cdd1dull;
	pthread_mutex_init(&dev->lock, NULL);
	dev->keys = calloc(TP_KEY_SLOTS, sizeof(*dev->keys));
	dev->qp_tab_size = TP_MIN_QPN + dev->lim.max_qp + nq;
	dev->qp_tab = calloc(dev->qp_tab_size, sizeof(*dev->qp_tab));
	dev->qpn_gen = calloc(dev->qp_tab_size, sizeof(*dev->qpn_gen));
	dev->qpn_next = calloc(nq, sizeof(*dev->qpn_next));
	qpn_layout(dev, nq);
	dev->queues = calloc(nq, sizeof(*dev->queues));
	if (dev->keys == NULL || dev->qp_tab == NULL || dev->queues == NULL ||
			dev->qpn_gen == NULL || dev->qpn_next == NULL) {
		droce_dev_destroy(dev);
		errno = ENOMEM;
		return NULL;
	}
	dev->key_hint = 1;
	for (i = 0; i < DROCE_MAX_GIDS; i++)
		if (conf->gids[i].valid)
			memcpy(dev->gid_words[dev->nb_gids++], conf->gids[i].gid,
				16);
	for (i = 0; i < nq; i++) {
		dev->queues[i].dev = dev;
		dev->queues[i].index = i;
	}
	return dev;
}

void
droce_dev_destroy(struct droce_dev *dev)
{
	uint32_t i;

	if (dev == NULL)
		return;
	if (dev->queues) {
		tp_mcast_free(dev);
		for (i = 0; i < dev->conf.nb_queues; i++)
			free(dev->queues[i].qps);
	}
	free(dev->queues);
	free(dev->qp_tab);
	free(dev->qpn_gen);
	free(dev->qpn_next);
	free(dev->srq_tab);
	free(dev->keys);
	pthread_mutex_destroy(&dev->lock);
	free(dev);
}

const struct droce_dev_limits *
droce_dev_limits(const struct droce_dev *dev)
{
	return &dev->lim;
}

const struct droce_dev_conf *
droce_dev_conf(const struct droce_dev *dev)
{
	return &dev->conf;
}

struct droce_tp_queue *
droce_dev_queue(struct droce_dev *dev, uint32_t q)
{
	return q < dev->conf.nb_queues ? &dev->queues[q] : NULL;
}

uint32_t
droce_qpn_queue(const struct droce_dev *dev, uint32_t qpn)
{
	return qpn % dev->conf.nb_queues;
}

void
droce_dev_set_async_cb(struct droce_dev *dev, droce_async_cb cb, void *arg)
{
	dev->async_cb = cb;
	dev->async_arg = arg;
}

void
tp_async(struct droce_dev *dev, enum ibv_event_type type, void *obj)
{
	struct ibv_async_event ev;

	if (dev->async_cb == NULL)
		return;
	memset(&ev, 0, sizeof(ev));
	ev.event_type = type;
	/* The driver maps droce objects to its own; pass ours through. */
	ev.element.qp = obj;
	dev->async_cb(dev->async_arg, &ev);
}

uint32_t
tp_rand(struct droce_dev *dev)
{
	/* xorshift64*: initial PSNs and key bytes, seeded per device */
	dev->rng ^= dev->rng >> 12;
	dev->rng ^= dev->rng << 25;
	dev->rng ^= dev->rng >> 27;
	return (uint32_t)((dev->rng * 0x2545f4914f6cdd1dull) >> 32);
}

void
droce_tp_queue_set_io(struct droce_tp_queue *q, const struct droce_tp_io *io)
{
	q->io = *io;
}

/* Hand a CQ or SRQ (its owner and QP count) to queue q, unless a QP uses
 * it: droce_cq_move, droce_srq_move. */
int
tp_owner_move(struct droce_dev *dev, struct droce_tp_queue **owner,
		const uint32_t *refs, uint32_t q)
{
	int rc = 0;

	if (q >= dev->conf.nb_queues)
		return -EINVAL;
	pthread_mutex_lock(&dev->lock);
	if ((*owner)->index != q) {
		if (*refs)
			rc = -EBUSY;
		else
			*owner = &dev->queues[q];
	}
	pthread_mutex_unlock(&dev->lock);
	return rc;
}

int
tp_queue_add_qp(struct droce_tp_queue *q, struct droce_qp *qp)
{
	if (q->nb_qps == q->cap_qps) {
		uint32_t cap = q->cap_qps ? q->cap_qps * 2 : 16;
		struct droce_qp **v = realloc(q->qps, cap * sizeof(*v));

		if (v == NULL)
			return -ENOMEM;
		q->qps = v;
		q->cap_qps = cap;
	}
	q->qps[q->nb_qps++] = qp;
	return 0;
}

static void
stats_add(struct droce_tp_stats *a, const struct droce_tp_stats *b)
{
	const uint64_t *s = (const uint64_t *)b;
	uint64_t *d = (uint64_t *)a;
	size_t i;

	/* packets and bytes are counted once, by the queue */
	for (i = 4; i < sizeof(*a) / sizeof(uint64_t); i++)
		d[i] += s[i];
}

void
tp_queue_del_qp(struct droce_tp_queue *q, struct droce_qp *qp)
{
	uint32_t i;

	for (i = 0; i < q->nb_qps; i++) {
		if (q->qps[i] == qp) {
			q->qps[i] = q->qps[--q->nb_qps];
			/* the queue's counters keep what its QPs did */
			stats_add(&q->st, &qp->st);
			return;
		}
	}
}

struct droce_pd *
droce_pd_alloc(struct droce_dev *dev)
{
	struct droce_pd *pd;

	pthread_mutex_lock(&dev->lock);
	if (dev->nb_pd >= dev->lim.max_pd) {
		pthread_mutex_unlock(&dev->lock);
		errno = ENOMEM;
		return NULL;
	}
	pd = calloc(1, sizeof(*pd));
	if (pd != NULL) {
		pd->dev = dev;
		dev->nb_pd++;
	}
	pthread_mutex_unlock(&dev->lock);
	if (pd == NULL)
		errno = ENOMEM;
	return pd;
}

int
droce_pd_dealloc(struct droce_pd *pd)
{
	struct droce_dev *dev = pd->dev;

	pthread_mutex_lock(&dev->lock);
	if (pd->refs) {
		pthread_mutex_unlock(&dev->lock);
		return -EBUSY;
	}
	dev->nb_pd--;
	pthread_mutex_unlock(&dev->lock);
	free(pd);
	return 0;
}

struct droce_ah *
droce_ah_create(struct droce_pd *pd, const struct droce_av *av)
{
	struct droce_ah *ah;

	if (av == NULL || av->sgid_index >= DROCE_MAX_GIDS ||
			!pd->dev->conf.gids[av->sgid_index].valid) {
		errno = EINVAL;
		return NULL;
	}
	ah = calloc(1, sizeof(*ah));
	if (ah == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	ah->pd = pd;
	ah->av = *av;
	pthread_mutex_lock(&pd->dev->lock);
	pd->refs++;
	pd->dev->nb_ah++;
	pthread_mutex_unlock(&pd->dev->lock);
	return ah;
}

int
droce_ah_destroy(struct droce_ah *ah)
{
	struct droce_dev *dev = ah->pd->dev;

	pthread_mutex_lock(&dev->lock);
	ah->pd->refs--;
	dev->nb_ah--;
	pthread_mutex_unlock(&dev->lock);
	free(ah);
	return 0;
}

struct ibv_ah *
droce_ah_to_ibv(struct droce_ah *ah)
{
	return &ah->ibv;
}

struct droce_ah *
droce_ah_from_ibv(struct ibv_ah *ah)
{
	return (struct droce_ah *)ah;
}


void
droce_tp_queue_stats(const struct droce_tp_queue *q, struct droce_tp_stats *st)
{
	uint32_t i;

	*st = q->st;
	for (i = 0; i < q->nb_qps; i++)
		stats_add(st, &q->qps[i]->st);
}

void
droce_qp_stats(const struct droce_qp *qp, struct droce_tp_stats *st)
{
	*st = qp->st;
}

void
droce_qp_cc(const struct droce_qp *qp, struct droce_qp_cc *cc)
{
	uint64_t line = qp->dev->dcqcn.line_bps;

	cc->limited = qp->cc.limited;
	cc->rate_mbps = (qp->cc.limited ? qp->cc.rc : line) / 1000000;
	cc->target_mbps = (qp->cc.limited ? qp->cc.rt : line) / 1000000;
	cc->alpha = qp->cc.limited ? qp->cc.alpha >> 10 : 0;
	cc->cuts = qp->cc.cuts;
}

void droce_qp_set_user(struct droce_qp *qp, void *user) { qp->user = user; }
void *droce_qp_user(const struct droce_qp *qp) { return qp->user; }
void droce_cq_set_user(struct droce_cq *cq, void *user) { cq->user = user; }
void *droce_cq_user(const struct droce_cq *cq) { return cq->user; }
void droce_srq_set_user(struct droce_srq *srq, void *user) { srq->user = user; }
void *droce_srq_user(const struct droce_srq *srq) { return srq->user; }

uint32_t
droce_qp_sq_untransmitted(const struct droce_qp *qp)
{
	return qp->sq.head - qp->sq.cur;
}

uint32_t
droce_qp_sq_outstanding(const struct droce_qp *qp)
{
	return qp->sq.head - qp->sq.tail;
}

int
droce_dev_qp_stats(const struct droce_dev *dev, uint32_t qpn,
		struct droce_tp_stats *st)
{
	const struct droce_qp *qp = tp_qp_by_qpn(dev, qpn);

	if (qp == NULL)
		return -ENOENT;
	droce_qp_stats(qp, st);
	return 0;
}

int
droce_dev_qp_cc(const struct droce_dev *dev, uint32_t qpn,
		struct droce_qp_cc *cc)
{
	const struct droce_qp *qp = tp_qp_by_qpn(dev, qpn);

	if (qp == NULL)
		return -ENOENT;
	droce_qp_cc(qp, cc);
	return 0;
}

uint32_t
droce_dev_qpns(struct droce_dev *dev, uint32_t *qpns, uint32_t max)
{
	uint32_t i, n = 0;

	pthread_mutex_lock(&dev->lock);
	for (i = 0; i < dev->qp_tab_size; i++) {
		if (dev->qp_tab[i] == NULL)
			continue;
		if (n < max)
			qpns[n] = dev->qp_tab[i]->qpn;
		n++;
	}
	pthread_mutex_unlock(&dev->lock);
	return n;
}

/*
 * Any thread: the device's lock keeps the QP and its CQs from going
 * while we read; the counts themselves move under their owners (the
 * queue produces, the application polls), so each is read atomically.
 */
int
droce_dev_qp_cq_pos(struct droce_dev *dev, uint32_t qpn,
		struct droce_cq_pos *pos)
{
	const struct droce_qp *qp;
	const struct droce_cq *rcq;

	pthread_mutex_lock(&dev->lock);
	qp = tp_qp_by_qpn(dev, qpn);
	if (qp == NULL || qp->scq == NULL) {
		pthread_mutex_unlock(&dev->lock);
		return -ENOENT;
	}
	rcq = qp->rcq != NULL ? qp->rcq : qp->scq;
	pos->send_prod = __atomic_load_n(&qp->scq->head, __ATOMIC_ACQUIRE);
	pos->send_cons = __atomic_load_n(&qp->scq->tail, __ATOMIC_ACQUIRE);
	pos->recv_prod = __atomic_load_n(&rcq->head, __ATOMIC_ACQUIRE);
	pos->recv_cons = __atomic_load_n(&rcq->tail, __ATOMIC_ACQUIRE);
	pthread_mutex_unlock(&dev->lock);
	return 0;
}

int
droce_dev_qp_sq_idle(const struct droce_dev *dev, uint32_t qpn)
{
	const struct droce_qp *qp;

	qp = tp_qp_by_qpn(dev, qpn);
	return qp != NULL && qp->sq.head == qp->sq.tail;
}
