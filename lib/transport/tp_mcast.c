/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * UD multicast: the device's group table (limits, the MACs the NIC must
 * pass), each queue's view of it (the QPs attached there), and the
 * receive of a frame to a group: a copy to every QP of the queue that is
 * attached to it.
 *
 * The table is split by queue so that the receive path reads only its
 * own queue's state, as for every other frame: an attach changes the
 * QP's queue's members with that queue held (the caller's rule, as for
 * modify), and the device's counts under the device lock.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tp_internal.h"
#include "tp_mcast.h"

static int
gid_eq(const uint64_t w[2], const uint8_t gid[16])
{
	uint64_t hi, lo;

	memcpy(&hi, gid, 8);
	memcpy(&lo, gid + 8, 8);
	return w[0] == hi && w[1] == lo;
}

static struct tp_mcast_grp *
dev_grp(struct droce_dev *dev, const uint8_t gid[16])
{
	uint32_t i;

	for (i = 0; i < dev->nb_mc; i++)
		if (gid_eq(dev->mc[i].gid, gid))
			return &dev->mc[i];
	return NULL;
}

static struct tp_mcast_member *
queue_member(struct droce_tp_queue *q, const uint8_t gid[16])
{
	uint32_t i;

	for (i = 0; i < q->nb_mc; i++)
		if (gid_eq(q->mc[i].gid, gid))
			return &q->mc[i];
	return NULL;
}

static int
member_has(const struct tp_mcast_member *m, const struct droce_qp *qp)
{
	uint32_t i;

	for (i = 0; i < m->nb_qps; i++)
		if (m->qps[i] == qp)
			return (int)i;
	return -1;
}

/* The queue's members, allocated at its first attach: one slot per
 * group the device may have, each with room for a full group. */
static int
queue_table(struct droce_tp_queue *q, const struct droce_dev_limits *lim)
{
	struct droce_qp **qps;
	uint32_t i;

	if (q->mc != NULL)
		return 0;
	q->mc = calloc(lim->max_mcast_grp, sizeof(*q->mc));
	qps = calloc((size_t)lim->max_mcast_grp * lim->max_mcast_qp_attach,
		sizeof(*qps));
	if (q->mc == NULL || qps == NULL) {
		free(q->mc);
		free(qps);
		q->mc = NULL;
		return -ENOMEM;
	}
	q->mc_qps = qps;
	for (i = 0; i < lim->max_mcast_grp; i++)
		q->mc[i].qps = qps + (size_t)i * lim->max_mcast_qp_attach;
	return 0;
}

/* With dev->lock held: room for qp in group gid, the group made if new. */
static int
attach_locked(struct droce_dev *dev, struct droce_qp *qp,
		const uint8_t gid[16])
{
	const struct droce_dev_limits *lim = &dev->lim;
	struct droce_tp_queue *q = qp->queue;
	struct tp_mcast_member *m = queue_member(q, gid);
	struct tp_mcast_grp *g = dev_grp(dev, gid);

	if (m != NULL && member_has(m, qp) >= 0)
		return 0;	/* as rxe: attaching twice is no error */
	if ((g == NULL && dev->nb_mc >= lim->max_mcast_grp) ||
			(g != NULL && g->nb_qps >= lim->max_mcast_qp_attach) ||
			dev->nb_mc_attach >= lim->max_total_mcast_qp_attach)
		return -ENOMEM;
	if (dev->mc == NULL) {
		dev->mc = calloc(lim->max_mcast_grp, sizeof(*dev->mc));
		if (dev->mc == NULL)
			return -ENOMEM;
	}
	if (queue_table(q, lim) != 0)
		return -ENOMEM;
	if (g == NULL) {
		g = &dev->mc[dev->nb_mc++];
		memcpy(g->gid, gid, 16);
		droce_gid_mcast_mac(gid, g->mac);
		g->nb_qps = 0;
	}
	if (m == NULL) {
		m = &q->mc[q->nb_mc];
		memcpy(m->gid, gid, 16);
		memcpy(m->mac, g->mac, 6);
		m->nb_qps = 0;
		/* published after the entry: other queues read the count */
		__atomic_store_n(&q->nb_mc, q->nb_mc + 1, __ATOMIC_RELEASE);
	}
	m->qps[m->nb_qps++] = qp;
	g->nb_qps++;
	dev->nb_mc_attach++;
	qp->nb_mcast++;
	return 0;
}

int
droce_qp_attach_mcast(struct droce_qp *qp, const uint8_t gid[16])
{
	struct droce_dev *dev;
	int rc;

	if (qp == NULL || gid == NULL || qp->type != IBV_QPT_UD ||
			!droce_gid_is_mcast(gid))
		return -EINVAL;
	dev = qp->dev;
	pthread_mutex_lock(&dev->lock);
	rc = attach_locked(dev, qp, gid);
	pthread_mutex_unlock(&dev->lock);
	return rc;
}

int
droce_qp_detach_mcast(struct droce_qp *qp, const uint8_t gid[16])
{
	struct droce_tp_queue *q;
	struct tp_mcast_member *m, *last;
	struct tp_mcast_grp *g;
	struct droce_dev *dev;
	struct droce_qp **qps;
	int i;

	if (qp == NULL || gid == NULL)
		return -EINVAL;
	dev = qp->dev;
	q = qp->queue;
	pthread_mutex_lock(&dev->lock);
	m = q->mc != NULL ? queue_member(q, gid) : NULL;
	i = m != NULL ? member_has(m, qp) : -1;
	if (i < 0) {
		pthread_mutex_unlock(&dev->lock);
		return -EINVAL;
	}
	m->qps[i] = m->qps[--m->nb_qps];
	if (m->nb_qps == 0) {
		/* the last entry takes the freed slot, slices swapped */
		last = &q->mc[q->nb_mc - 1];
		qps = m->qps;
		*m = *last;
		last->qps = qps;
		__atomic_store_n(&q->nb_mc, q->nb_mc - 1, __ATOMIC_RELEASE);
	}
	g = dev_grp(dev, gid);
	if (--g->nb_qps == 0)
		*g = dev->mc[--dev->nb_mc];
	dev->nb_mc_attach--;
	qp->nb_mcast--;
	pthread_mutex_unlock(&dev->lock);
	return 0;
}

uint32_t
droce_dev_mcast_macs(struct droce_dev *dev, uint8_t (*macs)[6], uint32_t max)
{
	uint32_t i, j, n = 0;

	pthread_mutex_lock(&dev->lock);
	for (i = 0; i < dev->nb_mc; i++) {
		for (j = 0; j < i; j++)
			if (memcmp(dev->mc[j].mac, dev->mc[i].mac, 6) == 0)
				break;
		if (j < i)
			continue;	/* told already */
		if (n < max)
			memcpy(macs[n], dev->mc[i].mac, 6);
		n++;
	}
	pthread_mutex_unlock(&dev->lock);
	return n;
}

uint32_t
droce_tp_queue_mcast_groups(const struct droce_tp_queue *q)
{
	return __atomic_load_n(&q->nb_mc, __ATOMIC_ACQUIRE);
}

void
tp_mcast_free(struct droce_dev *dev)
{
	uint32_t i;

	for (i = 0; i < dev->conf.nb_queues; i++) {
		free(dev->queues[i].mc_qps);
		free(dev->queues[i].mc);
	}
	free(dev->mc);
}

/*
 * A frame to a multicast MAC, on a queue whose QPs joined some group.
 * Taken only where the frame's MAC and IP are one group's (a frame with
 * one group's MAC and another's IP is not that group's) and its DestQP
 * is the multicast QP; then every QP of this queue attached to the group
 * gets it as a UD SEND of its own (state, Q_Key, receive WQE, GRH).
 */
void
tp_mcast_rx(struct droce_tp_queue *q, const uint8_t *frame, uint32_t len)
{
	static const struct droce_parse_opts opts = {
		.path_mtu = 4096,
		.transports = 1u << (DROCE_TRANSPORT_UD >> 5),
	};
	const struct tp_mcast_member *m = NULL;
	struct droce_pkt pkt;
	uint32_t i;
	int rc;

	for (i = 0; i < q->nb_mc; i++)
		if (memcmp(q->mc[i].mac, frame, 6) == 0)
			break;
	if (i == q->nb_mc) {
		q->st.rx_drop_mcast++;
		return;
	}
	rc = droce_wire_parse(frame, len, &opts, &pkt);
	if (rc != 0) {
		q->st.rx_drop_parse[-rc]++;
		return;
	}
	for (i = 0; i < q->nb_mc && m == NULL; i++)
		if (memcmp(q->mc[i].mac, frame, 6) == 0 &&
				gid_eq(q->mc[i].gid, pkt.dgid))
			m = &q->mc[i];
	if (m == NULL) {
		q->st.rx_drop_mcast++;
		return;
	}
	if (pkt.dqpn != DROCE_MCAST_QPN || pkt.pkey != 0xffff) {
		q->st.rx_drop_noqp++;
		return;
	}
	for (i = 0; i < m->nb_qps; i++) {
		struct droce_qp *qp = m->qps[i];

		qp->st.rx_pkts++;
		qp->st.rx_bytes += len;
		tp_resp_rx_frame(qp, &pkt, frame, 0);
	}
}
