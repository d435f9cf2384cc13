/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * droced's answers to a CM REQ or SIDR REQ that no application listens
 * for (a REJ, a SIDR REP), as a host whose CM has no listener gives them:
 * the data path remembers the first copy and queues a retransmitted one;
 * a thread of its own sends the answers (an answer may wait for the
 * peer's neighbour, which the data path must never do).
 */

#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>

#include "droced.h"
#include "gsi.h"
#include "wire_cm_mad.h"

/* The peer's GID and ours from a receive's GRH (RoCEv2 over IPv4: the
 * IPv4 header in its last 20 bytes); -1 when it is neither. */
static int
grh_gids(const uint8_t *grh, uint8_t sgid[16], uint8_t dgid[16])
{
	static const uint8_t zero[20];

	if (memcmp(grh, zero, 20) == 0 && (grh[20] >> 4) == 4) {
		memset(sgid, 0, 16);
		memset(dgid, 0, 16);
		sgid[10] = sgid[11] = dgid[10] = dgid[11] = 0xff;
		memcpy(sgid + 12, grh + 20 + 12, 4);
		memcpy(dgid + 12, grh + 20 + 16, 4);
		return 0;
	}
	if ((grh[0] >> 4) == 6) {
		memcpy(sgid, grh + 8, 16);
		memcpy(dgid, grh + 24, 16);
		return 0;
	}
	return -1;
}

/*
 * Whether an orphan is a retransmission: a server may be between two
 * listens (perftest -R closes its listener after the first connection
 * and listens again for the next), so the first copy of a REQ nobody
 * listens for is only remembered, and a copy seen again (the peer's CM
 * retransmits it within seconds) is answered. Data-path thread only.
 */
static bool
orphan_seen_before(struct dd_gsi *g, const uint8_t *grh, uint32_t id)
{
	uint8_t sgid[16], dgid[16];
	uint64_t now = rte_get_timer_cycles(), hz = rte_get_timer_hz();
	uint32_t i, oldest = 0;

	if (grh_gids(grh, sgid, dgid) != 0)
		return false;
	for (i = 0; i < GSI_SEEN; i++) {
		struct gsi_seen *e = &g->seen[i];

		if (e->at != 0 && now - e->at < GSI_SEEN_SECS * hz &&
				memcmp(e->sgid, sgid, 16) == 0 && e->id == id) {
			e->at = 0;
			return true;
		}
		if (e->at < g->seen[oldest].at)
			oldest = i;
	}
	memcpy(g->seen[oldest].sgid, sgid, 16);
	g->seen[oldest].id = id;
	g->seen[oldest].at = now;
	return false;
}

/* A CM REQ or SIDR REQ (a MAD of len bytes after the GRH) that no
 * application listens for, seen again: to the answering thread, which
 * answers it (REJ, SIDR REP); true when queued. */
bool
gsi_orphan_req(struct dd_gsi *g, const uint8_t *mad, uint32_t len)
{
	const uint8_t *msg = mad + CM_MAD_HDR;
	uint32_t prod = g->orphan_prod;
	struct cm_mad_hdr h;
	uint32_t k;

	if (cm_mad_parse_hdr(mad, len, &h) != 0 ||
			(h.attr_id != CM_ATTR_REQ && h.attr_id != CM_ATTR_SIDR_REQ))
		return false;
	if (!orphan_seen_before(g, mad - GSI_GRH,
			cm_msg_sender_id(h.attr_id, msg)))
		return false;	/* dropped this once */
	if (prod - __atomic_load_n(&g->orphan_cons, __ATOMIC_ACQUIRE) >=
			GSI_ORPHANS)
		return false;	/* a burst of them: the rest dropped */
	k = prod % GSI_ORPHANS;
	memcpy(g->orphan[k].grh, mad - GSI_GRH, GSI_GRH);
	g->orphan[k].tid = h.tid;
	g->orphan[k].attr = h.attr_id;
	g->orphan[k].id = cm_msg_sender_id(h.attr_id, msg);
	g->orphan[k].service_id = cm_msg_service_id(h.attr_id, msg);
	__atomic_store_n(&g->orphan_prod, prod + 1, __ATOMIC_RELEASE);
	return true;
}

/* The answer to orphan o into out (a MAD): a REJ "invalid service ID"
 * to a REQ, a SIDR REP "service ID not supported" to a SIDR REQ, as a
 * host whose CM has no listener gives them (IBTA 12.6.7, 12.11.2). */
static void
orphan_answer(const struct gsi_orphan *o, uint8_t *out)
{
	if (o->attr == CM_ATTR_SIDR_REQ) {
		struct cm_sidr_rep r = { .request_id = o->id,
			.status = CM_SIDR_UNSUPPORTED,
			.service_id = o->service_id };

		cm_mad_put_hdr(out, CM_ATTR_SIDR_REP, o->tid);
		cm_sidr_rep_pack(out + CM_MAD_HDR, &r);
	} else {
		/* our comm ID 0: no connection of ours will follow */
		struct cm_rej r = { .remote_comm_id = o->id,
			.msg_rejected = CM_REF_REQ,
			.reason = CM_REJ_INVALID_SERVICE_ID };

		cm_mad_put_hdr(out, CM_ATTR_REJ, o->tid);
		cm_rej_pack(out + CM_MAD_HDR, &r);
	}
}

/* One answer onto QP1 (the answering thread): 0, or -1 when it cannot
 * go. */
static int
orphan_send(struct dd_gsi *g, const struct gsi_orphan *o)
{
	const struct droce_dev_conf *conf = droce_dev_conf(g->dp->dev);
	struct ibv_ah_attr attr = { .is_global = 1, .port_num = 1 };
	struct ibv_send_wr wr = { 0 }, *bad;
	uint8_t sgid[16], dgid[16];
	struct droce_ah *ah;
	struct droce_av av;
	struct ibv_sge sge;
	uint32_t i, k;
	int rc = -1;

	if (grh_gids(o->grh, sgid, dgid) != 0)
		return -1;
	for (i = 0; i < DROCE_MAX_GIDS; i++)
		if (conf->gids[i].valid && memcmp(conf->gids[i].gid, dgid, 16) == 0)
			break;
	if (i == DROCE_MAX_GIDS)
		return -1;	/* not to one of our addresses */
	memcpy(attr.grh.dgid.raw, sgid, 16);
	attr.grh.sgid_index = (uint8_t)i;
	attr.grh.hop_limit = 64;
	/* may wait for the neighbour: this thread's other work waits too */
	if (droce_port_av_from_ah(g->dp->port, &attr, &av, 1000) != 0)
		return -1;
	ah = droce_ah_create(g->pd, &av);
	if (ah == NULL)
		return -1;
	droce_port_lock(g->dp->port, g->q);
	for (k = 0; k < GSI_SENDS && g->send[k].busy; k++)
		;
	if (k < GSI_SENDS) {
		orphan_answer(o, send_slot(g, k));
		sge = (struct ibv_sge){ (uint64_t)(uintptr_t)send_slot(g, k),
			GSI_SLOT, droce_mr_lkey(g->mr) };
		wr.wr_id = k;
		wr.opcode = IBV_WR_SEND;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.wr.ud.ah = droce_ah_to_ibv(ah);
		wr.wr.ud.remote_qpn = 1;
		wr.wr.ud.remote_qkey = CM_QKEY;
		if (droce_qp_post_send(g->qp, &wr, &bad) == 0) {
			g->send[k].busy = true;
			g->send[k].qp = NULL;
			g->tx++;
			rc = 0;
		}
	}
	droce_port_unlock(g->dp->port, g->q);
	droce_ah_destroy(ah);	/* the transport copied its address */
	return rc;
}

/* The answering thread: the REQs and SIDR REQs nobody listens for. */
static void
answer_orphans(struct dd_gsi *g)
{
	uint32_t cons = g->orphan_cons;

	while (cons != __atomic_load_n(&g->orphan_prod, __ATOMIC_ACQUIRE)) {
		if (orphan_send(g, &g->orphan[cons % GSI_ORPHANS]) == 0)
			__atomic_fetch_add(&g->rejected, 1, __ATOMIC_RELAXED);
		else
			__atomic_fetch_add(&g->unanswered, 1, __ATOMIC_RELAXED);
		cons++;
		__atomic_store_n(&g->orphan_cons, cons, __ATOMIC_RELEASE);
	}
}

static pthread_t answerer;
static int answering;

/* A thread of its own: an answer may wait up to a second for the
 * peer's neighbour, which the main thread, serving every session, must
 * never do. */
static void *
answer_run(void *arg)
{
	uint32_t p;

	(void)arg;
	while (!dd.stop) {
		for (p = 0; p < dd.nb_ports; p++)
			if (dd.ports[p].gsi != NULL)
				answer_orphans(dd.ports[p].gsi);
		usleep(20000);
	}
	return NULL;
}

int
dd_gsi_start(void)
{
	int rc = pthread_create(&answerer, NULL, answer_run, NULL);

	answering = rc == 0;
	return -rc;
}

void
dd_gsi_stop(void)
{
	if (answering)
		pthread_join(answerer, NULL);
	answering = 0;
}
