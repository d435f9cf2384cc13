/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * RC and UC connections (IBTA 12.9's state machine, as rdma_cm drives
 * it): REQ, REP and DREQ are sent until answered; duplicates get the
 * last answer again; a MAD that names no ID, or comes in a state that
 * does not expect it, is counted and dropped (a REQ to no listener gets
 * a REJ, a DREQ to no ID a DREP, as the spec says).
 *
 * Here, what both sides share: the MADs' dispatch, REJ and MRA,
 * disconnection and timeouts. The active side (rdma_connect, REP in,
 * RTU out) is cm_conn_active.c; the passive side (REQ in, rdma_accept,
 * rdma_reject, RTU in) is cm_conn_passive.c.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cm_internal.h"

/*
 * A depth the application asks for: RDMA_MAX_RESP_RES and
 * RDMA_MAX_INIT_DEPTH (0xFF) mean the device's most, bounded by what
 * the peer offered (librpma asks so); above the device's most, EINVAL,
 * as rdma-core's librdmacm checks before the kernel sees it.
 */
int
cm_conn_depth(uint8_t want, uint8_t dev_max, uint8_t peer, uint8_t *out)
{
	if (want == RDMA_MAX_RESP_RES) {
		*out = cm_min8(dev_max, peer);
		return 0;
	}
	if (want > dev_max) {
		errno = EINVAL;
		return -1;
	}
	*out = want;
	return 0;
}

static struct cm_id_priv *
find_by_local(uint32_t local_comm_id)
{
	struct cm_id_priv *p;

	for (p = cm.ids; p != NULL; p = p->next)
		if (p->local_comm_id == local_comm_id && p->state != CM_IDLE &&
				p->state != CM_LISTEN)
			return p;
	return NULL;
}

/* RTU, DREQ or DREP: comm IDs (DREQ: the peer's QPN), no private data */
void
cm_send_simple(struct cm_dev *d, struct ibv_ah *ah, uint64_t tid, uint16_t attr,
		uint32_t local, uint32_t remote, uint32_t qpn, uint8_t *mad)
{
	struct cm_simple s;

	memset(&s, 0, sizeof(s));
	s.local_comm_id = local;
	s.remote_comm_id = remote;
	s.remote_qpn = qpn;
	cm_mad_put_hdr(mad, attr, tid);
	cm_simple_pack(mad + CM_MAD_HDR, attr, &s);
	cm_send_mad(d, ah, mad);
}

/* local: an ID of ours even for a REQ we never took (cm_new_comm_id):
 * attached, droced sends only MADs whose own ID carries the session's
 * prefix (doc/daemon.md, "The connection manager") */
void
cm_send_rej(struct cm_dev *d, struct ibv_ah *ah, uint64_t tid,
		uint32_t local, uint32_t remote, uint8_t ref, uint16_t reason,
		const void *pdata, uint8_t len)
{
	uint8_t mad[CM_MAD_LEN];
	struct cm_rej r;

	memset(&r, 0, sizeof(r));
	r.local_comm_id = local;
	r.remote_comm_id = remote;
	r.msg_rejected = ref;
	r.reason = reason;
	if (pdata != NULL)
		memcpy(r.pdata, pdata, len < CM_REJ_PDATA ? len : CM_REJ_PDATA);
	cm_mad_put_hdr(mad, CM_ATTR_REJ, tid);
	cm_rej_pack(mad + CM_MAD_HDR, &r);
	cm.st.rej_sent++;
	cm_send_mad(d, ah, mad);
}

void
cm_rej_peer(struct cm_id_priv *p, uint8_t ref, uint16_t reason,
		const void *pdata, uint8_t len)
{
	cm_send_rej(p->dev, p->ah, p->tid, p->local_comm_id, p->remote_comm_id,
		ref, reason, pdata, len);
}

/* An event with a connection's parameters and private data */
struct cm_event_priv *
cm_conn_event(struct cm_id_priv *p, enum rdma_cm_event_type t, int status,
		const uint8_t *pdata, uint8_t len)
{
	struct cm_event_priv *e = cm_conn_event_new(p, t, status, pdata, len);

	if (e != NULL)
		cm_event_post(p->chan, e);
	return e;
}

struct cm_event_priv *
cm_conn_event_new(struct cm_id_priv *p, enum rdma_cm_event_type t, int status,
		const uint8_t *pdata, uint8_t len)
{
	struct cm_event_priv *e = cm_event_new(p, t, status);

	if (e == NULL)
		return NULL;
	if (pdata != NULL && len > 0) {
		memcpy(e->pdata, pdata, len);
		e->ev.param.conn.private_data = e->pdata;
		e->ev.param.conn.private_data_len = len;
	}
	e->ev.param.conn.responder_resources = p->resp_res;
	e->ev.param.conn.initiator_depth = p->init_depth;
	e->ev.param.conn.retry_count = p->retry_count;
	e->ev.param.conn.rnr_retry_count = p->rnr_retry;
	e->ev.param.conn.srq = p->srq;
	e->ev.param.conn.qp_num = p->remote_qpn;
	return e;
}

/*
 * The agent never moves a QP to the error state on its own (a REJ, a DREQ,
 * a timeout): the application may be destroying it at that moment, as
 * with rdma-core, where the kernel does not know user QPs. The
 * application's rdma_disconnect does it, in its own thread.
 */
void
cm_conn_fail(struct cm_id_priv *p, enum rdma_cm_event_type t, int status,
		const uint8_t *pdata, uint8_t len)
{
	cm_retx_stop(p);
	p->state = t == RDMA_CM_EVENT_REJECTED ? CM_REJECTED : CM_ERROR;
	cm_conn_event(p, t, status, pdata, len);
}

/* --- REJ, MRA --- */

static void
rx_rej(const struct cm_rej *r)
{
	struct cm_id_priv *p = find_by_local(r->remote_comm_id);

	if (p == NULL) {
		cm.st.rx_drop_unknown++;
		return;
	}
	if (p->state != CM_REQ_SENT && p->state != CM_REP_SENT &&
			p->state != CM_REP_RCVD && p->state != CM_ESTABLISHED) {
		cm.st.rx_drop_state++;
		return;
	}
	/* a REJ of a REP carries the right remote ID; of a REQ, none yet */
	if (p->state != CM_REQ_SENT && r->local_comm_id != p->remote_comm_id) {
		cm.st.rx_drop_unknown++;
		return;
	}
	/*
	 * "Invalid service ID" in the first seconds: the server may be
	 * between two listens (perftest -R closes its listener and listens
	 * again while its client connects; a slow guest's kernel CM, which
	 * rejects at once, loses that race). The REQ's retransmission, armed
	 * already, tries again; the REJ counts once the grace is over.
	 */
	if (p->state == CM_REQ_SENT && r->reason == CM_REJ_INVALID_SERVICE_ID &&
			cm_now_ms() - p->req_sent_ms < CM_REJ8_GRACE_MS) {
		cm.st.rx_rej_retried++;
		return;
	}
	if (p->state == CM_REP_SENT)
		cm_request_done(p);
	cm_conn_fail(p, RDMA_CM_EVENT_REJECTED, r->reason, r->pdata,
		CM_REJ_PDATA);
}

static void
rx_mra(const struct cm_mra *m)
{
	struct cm_id_priv *p = find_by_local(m->remote_comm_id);

	if (p == NULL || !p->retx.armed) {
		cm.st.rx_drop_unknown++;
		return;
	}
	/* the peer is alive and slow: wait its service timeout, anew */
	p->retx.left = CM_RETRIES;
	p->retx.deadline_ms = cm_now_ms() + cm_timeout_ms(m->service_timeout) +
		CM_RETRY_MS;
}

/* --- disconnection --- */

void
cm_conn_dreq(struct cm_id_priv *p)
{
	uint8_t mad[CM_MAD_LEN];

	cm_retx_stop(p);
	cm_send_simple(p->dev, p->ah, p->tid, CM_ATTR_DREQ, p->local_comm_id,
		p->remote_comm_id, p->remote_qpn, mad);
	cm_retx_arm(p, mad, CM_DREQ_RETRY_MS);
	p->state = CM_DREQ_SENT;
}

int
rdma_disconnect(struct rdma_cm_id *id)
{
	struct cm_id_priv *p = cm_id(id);
	int rc = 0;

	if (id == NULL) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&cm.lock);
	switch (p->state) {
	case CM_ESTABLISHED:
	case CM_REP_SENT:
		cm_qp_to_error(p);
		cm_conn_dreq(p);
		break;
	case CM_REQ_SENT:
	case CM_REP_RCVD:
		cm_rej_peer(p, p->state == CM_REQ_SENT ? CM_REF_OTHER :
			CM_REF_REP, CM_REJ_CONSUMER_DEFINED, NULL, 0);
		cm_retx_stop(p);
		cm_qp_to_error(p);
		p->state = CM_DISCONNECTED;
		break;
	case CM_DREQ_SENT:
	case CM_DISCONNECTED:
	case CM_REJECTED:
	case CM_ERROR:
		cm_qp_to_error(p);
		break;
	default:
		if (id->qp_type == IBV_QPT_UD && p->dev != NULL)
			break;	/* nothing to tear down on the wire */
		errno = EINVAL;
		rc = -1;
	}
	pthread_mutex_unlock(&cm.lock);
	return rc;
}

static void
rx_dreq(struct cm_dev *d, const uint8_t sgid[16], const struct cm_mad_hdr *h,
		const struct cm_simple *s)
{
	struct cm_id_priv *p = find_by_local(s->remote_comm_id);
	uint8_t mad[CM_MAD_LEN];
	struct ibv_ah *ah;

	if (p == NULL || p->remote_comm_id != s->local_comm_id ||
			(p->qpn != 0 && s->remote_qpn != p->qpn)) {
		/* the spec answers a DREQ to nobody with a DREP */
		if (!cm_linger_answered(s->remote_comm_id))
			cm.st.rx_drop_unknown++;
		ah = cm_dev_reply_ah(d, sgid, cm_dev_gid_index(d, NULL, sgid));
		if (ah == NULL)
			return;	/* no answer can reach the source yet */
		cm_send_simple(d, ah, h->tid, CM_ATTR_DREP, s->remote_comm_id,
			s->local_comm_id, 0, mad);
		return;
	}
	switch (p->state) {
	case CM_ESTABLISHED:
	case CM_REP_SENT:
	case CM_DREQ_SENT:
		cm_retx_stop(p);
		cm_send_simple(d, p->ah, p->tid, CM_ATTR_DREP, p->local_comm_id,
			p->remote_comm_id, 0, mad);
		cm_keep_reply(p, CM_ATTR_DREP, mad);
		/* the peer's disconnect, after what came before it; ours
		 * crossing it: the application is tearing down already */
		if (p->state == CM_DREQ_SENT)
			cm_conn_event(p, RDMA_CM_EVENT_DISCONNECTED, 0,
				NULL, 0);
		else
			cm_held_disconnect(p);
		p->state = CM_DISCONNECTED;
		break;
	case CM_DISCONNECTED:
		if (p->last_reply_attr == CM_ATTR_DREP)
			cm_send_mad(d, p->ah, p->last_reply);
		break;
	default:
		cm.st.rx_drop_state++;
	}
}

static void
rx_drep(struct cm_id_priv *p)
{
	if (p->state != CM_DREQ_SENT) {
		cm.st.rx_drop_state++;
		return;
	}
	cm_retx_stop(p);
	p->state = CM_DISCONNECTED;
	cm_conn_event(p, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0);
}

/* The agent's timer ran out of retries on the ID's MAD. */
void
cm_conn_timeout(struct cm_id_priv *p)
{
	switch (p->state) {
	case CM_REQ_SENT:
	case CM_REP_SENT:
		cm_rej_peer(p, p->state == CM_REQ_SENT ? CM_REF_REQ :
			CM_REF_REP, CM_REJ_TIMEOUT, NULL, 0);
		if (p->state == CM_REP_SENT)
			cm_request_done(p);
		cm_conn_fail(p, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT, NULL, 0);
		break;
	case CM_DREQ_SENT:	/* the peer is gone: disconnected all the same */
		p->state = CM_DISCONNECTED;
		cm_conn_event(p, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0);
		break;
	case CM_SIDR_REQ_SENT:
		cm_conn_fail(p, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT, NULL, 0);
		break;
	default:
		break;
	}
}

void
cm_conn_rx(struct cm_dev *d, const uint8_t sgid[16],
		const struct cm_mad_hdr *h, const uint8_t *msg)
{
	struct cm_id_priv *p;
	struct cm_simple s;
	struct cm_rep rep;
	struct cm_rej rej;
	struct cm_mra mra;

	switch (h->attr_id) {
	case CM_ATTR_REQ:
		cm_conn_rx_req(d, sgid, h, msg);
		return;
	case CM_ATTR_REP:
		cm_rep_parse(msg, &rep);
		p = find_by_local(rep.remote_comm_id);
		if (p == NULL || p->dev != d) {
			cm.st.rx_drop_unknown++;
			return;
		}
		cm_conn_rx_rep(p, &rep);
		return;
	case CM_ATTR_REJ:
		cm_rej_parse(msg, &rej);
		rx_rej(&rej);
		return;
	case CM_ATTR_MRA:
		cm_mra_parse(msg, &mra);
		rx_mra(&mra);
		return;
	case CM_ATTR_DREQ:
		cm_simple_parse(msg, h->attr_id, &s);
		rx_dreq(d, sgid, h, &s);
		return;
	case CM_ATTR_RTU:
	case CM_ATTR_DREP:
		cm_simple_parse(msg, h->attr_id, &s);
		p = find_by_local(s.remote_comm_id);
		if (p == NULL && h->attr_id == CM_ATTR_DREP &&
				cm_linger_answered(s.remote_comm_id))
			return;
		if (p == NULL || p->remote_comm_id != s.local_comm_id) {
			cm.st.rx_drop_unknown++;
			return;
		}
		if (h->attr_id == CM_ATTR_RTU)
			cm_conn_rx_rtu(p, s.pdata);
		else
			rx_drep(p);
		return;
	default:	/* LAP, APR: no alternate paths on RoCE */
		cm.st.rx_drop_malformed++;
	}
}
