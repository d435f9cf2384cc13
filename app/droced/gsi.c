/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * QP1 belongs to the port, so to droced: the connection manager of every
 * attached application (drivers/rdmacm) sends and receives its MADs
 * through it. An application's GSI QP is a proxy with no transport QP of
 * its own: a send is copied out of the application's registered memory
 * into one of ours and leaves on QP1 (its AH is the application's); a MAD
 * that arrives on QP1 goes to the application it is for, into a receive
 * it posted, and the completions go to the proxy's CQs. Which application
 * a MAD is for (IBTA 12.6: the CM's messages):
 *  - a REQ or SIDR REQ: the one listening on its service ID;
 *  - any other CM message: the one whose prefix (cm_prefix) is the top
 *    byte of our communication ID in it (the remote one, for the sender),
 *    or of the SIDR request ID;
 *  - a REQ or SIDR REQ nobody listens for: answered (REJ, SIDR REP) when
 *    the peer retransmits it (the first copy only remembered);
 *  - anything else, or nobody: dropped and counted.
 * Everything runs on the queue that owns QPN 1, where the proxies and
 * their CQs live.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "droced.h"
#include "gsi.h"
#include "wire_cm_mad.h"

static struct dd_gsi gsis[DD_MAX_PORTS];

static void
post_recv(struct dd_gsi *g, uint32_t i)
{
	struct ibv_sge sge = { (uint64_t)(uintptr_t)recv_slot(g, i),
		GSI_GRH + GSI_SLOT, droce_mr_lkey(g->mr) };
	struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 }, *bad;

	if (droce_qp_post_recv(g->qp, &wr, &bad) != 0)
		DD_LOG(WARNING, "QP1: cannot post a receive");
}

int
dd_gsi_init(struct dd_port *dp)
{
	struct dd_gsi *g = &gsis[dp->idx];
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = GSI_SENDS, .max_recv_wr = GSI_RECVS,
			.max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
		.qkey = CM_QKEY };
	size_t len = (size_t)GSI_RECVS * (GSI_GRH + GSI_SLOT) +
		(size_t)GSI_SENDS * GSI_SLOT;
	uint32_t i;

	g->dp = dp;
	g->q = droce_qpn_queue(dp->dev, 1);
	g->pd = droce_pd_alloc(dp->dev);
	g->buf = calloc(1, len);
	if (g->pd == NULL || g->buf == NULL)
		return -ENOMEM;
	g->mr = droce_mr_reg(g->pd, g->buf, len, (uint64_t)(uintptr_t)g->buf,
		IBV_ACCESS_LOCAL_WRITE);
	g->scq = droce_cq_create(dp->dev, g->q, GSI_SENDS * 2);
	g->rcq = droce_cq_create(dp->dev, g->q, GSI_RECVS * 2);
	if (g->mr == NULL || g->scq == NULL || g->rcq == NULL)
		return -ENOMEM;
	droce_port_lock(dp->port, g->q);
	g->qp = droce_qp_create_gsi(g->pd, &ia, g->scq, g->rcq);
	if (g->qp == NULL ||
			droce_qp_modify(g->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				IBV_QP_PORT | IBV_QP_QKEY, NULL) != 0) {
		droce_port_unlock(dp->port, g->q);
		return -EINVAL;
	}
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	droce_qp_modify(g->qp, &a, IBV_QP_STATE, NULL);
	a.qp_state = IBV_QPS_RTS;
	droce_qp_modify(g->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN, NULL);
	for (i = 0; i < GSI_RECVS; i++)
		post_recv(g, i);
	dp->gsi = g;
	droce_port_unlock(dp->port, g->q);
	return 0;
}

/* A proxy on the QP1 queue (the caller moved its CQs there). */
int
dd_gsi_proxy_create(struct dd_app *a, struct dd_qp *qp, uint32_t max_recv_wr)
{
	struct dd_gsi *g = a->dp->gsi;

	if (g == NULL)
		return -EOPNOTSUPP;
	if (a->gsi_qp != NULL)
		return -EBUSY;	/* one per application, as one per device */
	qp->gsi = true;
	qp->q = g->q;
	qp->rfifo = calloc(dd_pow2(max_recv_wr), sizeof(*qp->rfifo));
	if (qp->rfifo == NULL)
		return -ENOMEM;
	a->gsi_qp = qp;
	return 0;
}

/* With the QP1 queue held. */
void
dd_gsi_proxy_destroy(struct dd_qp *qp)
{
	struct dd_gsi *g = qp->app->dp->gsi;
	uint32_t i;

	for (i = 0; i < GSI_SENDS; i++)
		if (g->send[i].qp == qp)
			g->send[i].qp = NULL;	/* its completion goes nowhere */
	if (qp->app->gsi_qp == qp)
		qp->app->gsi_qp = NULL;
	free(qp->rfifo);
	qp->rfifo = NULL;
	/* its CQs may go or move again */
	if (qp->scq != NULL)
		qp->scq->refs--;
	if (qp->rcq != NULL)
		qp->rcq->refs--;
	qp->scq = qp->rcq = NULL;
}

/* A send QP1 refused completes with an error, as every error does. */
static void
send_error(struct dd_qp *qp, uint64_t wr_id, enum ibv_wc_status status)
{
	struct ibv_wc wc = { .wr_id = wr_id, .status = status,
		.opcode = IBV_WC_SEND, .qp_num = 1 };

	qp->app->st.refused_wqes++;
	dd_cq_put(qp->scq, &wc);
}

/* The application listening on service_id, or NULL. */
static struct dd_app *
listener(const struct dd_gsi *g, uint64_t service_id)
{
	uint32_t i;

	for (i = 0; i < g->nlisten; i++)
		if (g->listen[i].service_id == service_id)
			return g->listen[i].app;
	return NULL;
}

/*
 * Why a MAD an application posts on QP1 is refused, or NULL. It must be
 * a CM message (the one class droced's QP1 serves) to a QP1 under the
 * CM's Q_Key, naming as its own a communication ID (a SIDR REQ: request
 * ID) that carries the application's prefix, so that it speaks for its
 * own connections only: a CM checks a message's IDs against its
 * connection's, and another application's prefix is what a forged DREQ
 * or REJ would need. A SIDR REP names the requester's ID: it goes only
 * from the application that listens on its service ID.
 */
static const char *
mad_refused(const struct dd_gsi *g, const struct dd_qp *qp,
		const struct droce_chan_swqe *w, const uint8_t *mad, uint32_t len)
{
	const uint8_t *msg = mad + CM_MAD_HDR;
	struct cm_mad_hdr h;

	if (w->remote_qpn != 1 || w->remote_qkey != CM_QKEY)
		return "not to a QP1 under the CM's Q_Key";
	if (cm_mad_parse_hdr(mad, len, &h) != 0)
		return "not a CM message";
	if (h.attr_id == CM_ATTR_SIDR_REP)
		return listener(g, cm_msg_service_id(h.attr_id, msg)) == qp->app ?
			NULL : "a SIDR REP for a service ID it does not listen on";
	if (cm_msg_sender_id(h.attr_id, msg) >> 24 != qp->app->cm_prefix)
		return "a communication ID of another's";
	return NULL;
}

/* A receive of a proxy in the error state completes flushed. */
static void
recv_flushed(struct dd_qp *qp, uint64_t wr_id)
{
	struct ibv_wc wc = { .wr_id = wr_id, .status = IBV_WC_WR_FLUSH_ERR,
		.opcode = IBV_WC_RECV, .qp_num = 1 };

	dd_cq_put(qp->rcq, &wc);
}

/*
 * A proxy whose ring the application broke (a scribbled producer index,
 * a malformed receive): in the error state, as a QP would be. Its sends
 * and receives complete flushed from then on; a RESET makes it new.
 */
static void
proxy_refuse(struct dd_qp *qp, const char *why)
{
	qp->app->st.refused_wqes++;
	if (qp->failed)
		return;
	DD_LOG(WARNING, "app %u (pid %d) QP1: a WQE refused (%s)", qp->app->id,
		(int)qp->app->pid, why);
	qp->failed = true;
	__atomic_store_n(&qp->sq.sh->error, 1, __ATOMIC_RELEASE);
	dd_async(qp->app, IBV_EVENT_QP_FATAL, DROCE_KIND_QP, qp->handle);
	/* the receives it holds complete flushed, in order */
	while (qp->rhead != qp->rtail)
		recv_flushed(qp, qp->rfifo[qp->rhead++ & (qp->rq.size - 1)].wr_id);
}

/* One send of the application's onto QP1 from send slot k: 0, or the
 * status its WR completes with. */
static enum ibv_wc_status
proxy_send(struct dd_gsi *g, struct dd_qp *qp, const union dd_slot *sl,
		uint32_t k)
{
	const struct droce_chan_swqe *w = &sl->s;
	const struct ibv_sge *sge = dd_slot_sges(sl, sizeof(*w), w->num_sge,
		DD_GSI_MAX_SGE, qp->sq.slot);
	struct dd_ah *ah = dd_table_get(&qp->app->ahs, w->ah);
	struct ibv_send_wr wr = { 0 }, *bad;
	uint8_t *dst = send_slot(g, k);
	struct ibv_sge out;
	uint32_t i, len = 0;
	const char *why;

	if (w->opcode != IBV_WR_SEND || sge == NULL || ah == NULL ||
			(w->send_flags & IBV_SEND_INLINE))
		return IBV_WC_LOC_QP_OP_ERR;
	for (i = 0; i < w->num_sge; i++) {
		const uint8_t *src;

		if (sge[i].length > GSI_SLOT - len)
			return IBV_WC_LOC_LEN_ERR;
		src = dd_app_mem(qp->app, sge[i].lkey, sge[i].addr,
			sge[i].length, 0);
		if (src == NULL)
			return IBV_WC_LOC_PROT_ERR;
		memcpy(dst + len, src, sge[i].length);
		len += sge[i].length;
	}
	why = mad_refused(g, qp, w, dst, len);
	if (why != NULL) {
		if (!qp->app->cm_warned)
			DD_LOG(WARNING, "app %u (pid %d): a MAD refused on QP1: "
				"%s", qp->app->id, (int)qp->app->pid, why);
		qp->app->cm_warned = true;
		g->refused++;
		return IBV_WC_LOC_QP_OP_ERR;
	}
	out = (struct ibv_sge){ (uint64_t)(uintptr_t)dst, len,
		droce_mr_lkey(g->mr) };
	wr.wr_id = k;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &out;
	wr.num_sge = 1;
	wr.wr.ud.ah = droce_ah_to_ibv(ah->tah);
	wr.wr.ud.remote_qpn = w->remote_qpn;
	wr.wr.ud.remote_qkey = w->remote_qkey;
	if (droce_qp_post_send(g->qp, &wr, &bad) != 0)
		return IBV_WC_LOC_QP_OP_ERR;
	g->send[k].busy = true;
	g->send[k].qp = qp;
	g->send[k].wr_id = w->wr_id;
	g->send[k].signaled = qp->sq_sig_all ||
		(w->send_flags & IBV_SEND_SIGNALED);
	g->tx++;
	return IBV_WC_SUCCESS;
}

/* The application's sends: copied out of its memory, then on QP1. */
int
dd_gsi_drain_sq(struct dd_qp *qp)
{
	static __thread union dd_slot copy;
	struct dd_gsi *g = qp->app->dp->gsi;
	struct dd_wq *wq = &qp->sq;
	int64_t n = dd_wq_avail(wq);
	enum ibv_wc_status st;
	int done = 0;
	uint32_t k;

	if (n < 0) {
		proxy_refuse(qp, "producer index past the ring");
		return 0;
	}
	while (n-- > 0) {
		for (k = 0; k < GSI_SENDS && g->send[k].busy; k++)
			;
		if (k == GSI_SENDS) {
			dd_qp_retry_later(qp);	/* QP1 busy: next pass */
			break;
		}
		dd_wq_copy(wq, &copy);
		wq->cons++;
		done++;
		st = qp->failed ? IBV_WC_WR_FLUSH_ERR :
			proxy_send(g, qp, &copy, k);
		if (st != IBV_WC_SUCCESS)
			send_error(qp, copy.s.wr_id, st);
	}
	dd_wq_publish(wq);
	qp->app->st.sq_wqes += (uint64_t)done;
	return done;
}

/* The application's receives wait in our FIFO for a MAD for it. */
int
dd_gsi_drain_rq(struct dd_qp *qp)
{
	static __thread union dd_slot copy;
	const struct droce_chan_rwqe *w = &copy.r;
	struct dd_wq *wq = &qp->rq;
	int64_t n = dd_wq_avail(wq);
	uint32_t cap = wq->size;
	int done = 0;

	if (n < 0)
		proxy_refuse(qp, "producer index past the ring");
	while (n-- > 0 && qp->rtail - qp->rhead < cap) {
		struct dd_gsi_rwqe *r = &qp->rfifo[qp->rtail & (cap - 1)];
		const struct ibv_sge *sge;

		dd_wq_copy(wq, &copy);
		wq->cons++;
		done++;
		sge = dd_slot_sges(&copy, sizeof(*w), w->num_sge,
			DD_GSI_MAX_SGE, wq->slot);
		if (sge == NULL)
			proxy_refuse(qp, "receive");
		if (qp->failed) {
			recv_flushed(qp, w->wr_id);
			continue;
		}
		r->wr_id = w->wr_id;
		r->num_sge = w->num_sge;
		memcpy(r->sge, sge, w->num_sge * sizeof(struct ibv_sge));
		qp->rtail++;
	}
	dd_wq_publish(wq);
	qp->app->st.rq_wqes += (uint64_t)done;
	return done;
}

/* Which application a MAD (after the GRH) is for, or NULL. */
static struct dd_app *
route(struct dd_gsi *g, const uint8_t *mad, uint32_t len)
{
	const uint8_t *msg = mad + CM_MAD_HDR;
	struct cm_mad_hdr h;
	struct dd_app *a;

	if (cm_mad_parse_hdr(mad, len, &h) != 0)
		return NULL;
	if (h.attr_id == CM_ATTR_REQ || h.attr_id == CM_ATTR_SIDR_REQ)
		return listener(g, cm_msg_service_id(h.attr_id, msg));
	/* our communication ID (the remote one to the sender), or our
	 * SIDR request ID */
	a = dd.by_prefix[cm_msg_target_id(h.attr_id, msg) >> 24];
	/* an ID of a session on another port is nobody's here */
	return a != NULL && a->dp == g->dp ? a : NULL;
}


/* A MAD received on QP1 into slot i: to its application, if any. */
static void
deliver(struct dd_gsi *g, const struct ibv_wc *in)
{
	const uint8_t *buf = recv_slot(g, (uint32_t)in->wr_id);
	struct dd_app *a = in->byte_len > GSI_GRH ?
		route(g, buf + GSI_GRH, in->byte_len - GSI_GRH) : NULL;
	struct dd_qp *qp = a != NULL ? a->gsi_qp : NULL;
	struct dd_gsi_rwqe *r;
	struct ibv_wc wc;
	uint32_t i, off = 0;

	if (a == NULL && in->byte_len > GSI_GRH &&
			gsi_orphan_req(g, buf + GSI_GRH, in->byte_len - GSI_GRH))
		return;
	if (qp == NULL || qp->rhead == qp->rtail) {
		g->dropped++;
		return;
	}
	r = &qp->rfifo[qp->rhead++ & (qp->rq.size - 1)];
	memset(&wc, 0, sizeof(wc));
	wc.wr_id = r->wr_id;
	wc.status = IBV_WC_SUCCESS;
	for (i = 0; i < r->num_sge && off < in->byte_len; i++) {
		uint32_t n = in->byte_len - off;
		uint8_t *dst;

		if (n > r->sge[i].length)
			n = r->sge[i].length;
		dst = dd_app_mem(a, r->sge[i].lkey, r->sge[i].addr, n,
			IBV_ACCESS_LOCAL_WRITE);
		if (dst == NULL) {
			wc.status = IBV_WC_LOC_PROT_ERR;
			break;
		}
		memcpy(dst, buf + off, n);
		off += n;
	}
	if (wc.status == IBV_WC_SUCCESS && off < in->byte_len)
		wc.status = IBV_WC_LOC_LEN_ERR;
	wc.opcode = IBV_WC_RECV;
	wc.byte_len = in->byte_len;
	wc.qp_num = 1;
	wc.src_qp = in->src_qp;
	wc.wc_flags = in->wc_flags;
	wc.pkey_index = in->pkey_index;
	dd_cq_put(qp->rcq, &wc);
	g->rx++;
}

/* After each pass over QP1's queue: its completions. */
int
dd_gsi_poll(struct dd_port *dp, uint32_t q)
{
	struct dd_gsi *g = dp->gsi;
	struct ibv_wc wc[16];
	int n, i, work = 0;

	if (q != g->q)
		return 0;
	while ((n = droce_cq_poll(g->rcq, wc, 16)) > 0) {
		for (i = 0; i < n; i++) {
			if (wc[i].status == IBV_WC_SUCCESS)
				deliver(g, &wc[i]);
			post_recv(g, (uint32_t)wc[i].wr_id);
		}
		work += n;
	}
	while ((n = droce_cq_poll(g->scq, wc, 16)) > 0) {
		for (i = 0; i < n; i++) {
			uint32_t k = (uint32_t)wc[i].wr_id;
			struct dd_qp *qp = k < GSI_SENDS ? g->send[k].qp : NULL;

			if (qp != NULL && g->send[k].signaled) {
				struct ibv_wc out = wc[i];

				out.wr_id = g->send[k].wr_id;
				out.qp_num = 1;
				dd_cq_put(qp->scq, &out);
			}
			if (k < GSI_SENDS) {
				g->send[k].qp = NULL;
				g->send[k].busy = false;
			}
		}
		work += n;
	}
	return work;
}

/* With the QP1 queue held. */
int
dd_gsi_listen(struct dd_app *a, uint64_t service_id, int on)
{
	struct dd_gsi *g = a->dp->gsi;
	uint32_t i;

	for (i = 0; i < g->nlisten; i++)
		if (g->listen[i].service_id == service_id)
			break;
	if (!on) {
		if (i == g->nlisten || g->listen[i].app != a)
			return -EINVAL;
		g->listen[i] = g->listen[--g->nlisten];
		return 0;
	}
	if (i < g->nlisten)
		return g->listen[i].app == a ? 0 : -EADDRINUSE;
	if (g->nlisten == GSI_LISTEN)
		return -ENOMEM;
	g->listen[g->nlisten].service_id = service_id;
	g->listen[g->nlisten++].app = a;
	return 0;
}

/* With the QP1 queue held: an application leaves. */
void
dd_gsi_app_gone(struct dd_app *a)
{
	struct dd_gsi *g = a->dp->gsi;
	uint32_t i = 0;

	while (i < g->nlisten) {
		if (g->listen[i].app == a)
			g->listen[i] = g->listen[--g->nlisten];
		else
			i++;
	}
	if (a->cm_prefix && dd.by_prefix[a->cm_prefix] == a)
		dd.by_prefix[a->cm_prefix] = NULL;
}

void
dd_gsi_stats(uint64_t *rx, uint64_t *tx, uint64_t *dropped, uint64_t *rejected,
		uint64_t *listeners, uint64_t *refused)
{
	uint32_t p;

	*rx = *tx = *dropped = *rejected = *listeners = *refused = 0;
	for (p = 0; p < dd.nb_ports; p++) {
		const struct dd_gsi *g = dd.ports[p].gsi;

		if (g == NULL)
			continue;
		*listeners += __atomic_load_n(&g->nlisten, __ATOMIC_RELAXED);
		*rx += g->rx;
		*tx += g->tx;
		*dropped += g->dropped +
			__atomic_load_n(&g->unanswered, __ATOMIC_RELAXED);
		*rejected += __atomic_load_n(&g->rejected, __ATOMIC_RELAXED);
		*refused += __atomic_load_n(&g->refused, __ATOMIC_RELAXED);
	}
}
