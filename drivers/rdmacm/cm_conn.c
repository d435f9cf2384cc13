/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * RC and UC connections (IBTA 12.9's state machine, as rdma_cm drives
 * it): REQ, REP and DREQ are sent until answered; duplicates get the
 * last answer again; a MAD that names no ID, or comes in a state that
 * does not expect it, is counted and dropped (a REQ to no listener gets
 * a REJ, a DREQ to no ID a DREP, as the spec says).
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cm_internal.h"

#define CM_ACK_TIMEOUT 14	/* 67 ms: a software peer's round trip */
#define CM_TARGET_ACK_DELAY 15
#define CM_MRA_TIMEOUT 23	/* ~34 s: the consumer is slow to accept */

static uint32_t tid_seq;

static uint64_t
new_tid(void)
{
	return (uint64_t)cm_random32() << 32 | ++tid_seq;
}

static uint8_t
min8(uint8_t a, uint8_t b)
{
	return a < b ? a : b;
}

/*
 * A depth the application asks for: RDMA_MAX_RESP_RES and
 * RDMA_MAX_INIT_DEPTH (0xFF) mean the device's most, bounded by what
 * the peer offered (librpma asks so); above the device's most, EINVAL,
 * as rdma-core's librdmacm checks before the kernel sees it.
 */
static int
depth(uint8_t want, uint8_t dev_max, uint8_t peer, uint8_t *out)
{
	if (want == RDMA_MAX_RESP_RES) {
		*out = min8(dev_max, peer);
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

static struct cm_id_priv *
find_by_remote(uint32_t remote_comm_id, uint64_t guid)
{
	struct cm_id_priv *p;

	for (p = cm.ids; p != NULL; p = p->next)
		if (p->remote_comm_id == remote_comm_id &&
				p->remote_guid == guid && p->state != CM_LISTEN &&
				p->state != CM_IDLE)
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

static void
rej_peer(struct cm_id_priv *p, uint8_t ref, uint16_t reason,
		const void *pdata, uint8_t len)
{
	cm_send_rej(p->dev, p->ah, p->tid, p->local_comm_id, p->remote_comm_id,
		ref, reason, pdata, len);
}

/* An event with a connection's parameters and private data */
static struct cm_event_priv *
conn_event(struct cm_id_priv *p, enum rdma_cm_event_type t, int status,
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
static void
fail(struct cm_id_priv *p, enum rdma_cm_event_type t, int status,
		const uint8_t *pdata, uint8_t len)
{
	cm_retx_stop(p);
	p->state = t == RDMA_CM_EVENT_REJECTED ? CM_REJECTED : CM_ERROR;
	conn_event(p, t, status, pdata, len);
}

/* --- active side --- */

static int
send_req(struct cm_id_priv *p, const struct rdma_conn_param *param)
{
	const struct rdma_addr *ad = &p->id.route.addr;
	uint8_t mad[CM_MAD_LEN];
	struct cm_ip_hdr ip;
	struct cm_req r;
	uint16_t sport = cm_sa_port(&ad->src_addr);
	uint16_t dport = cm_sa_port(&ad->dst_addr);

	memset(&r, 0, sizeof(r));
	p->tid = new_tid();
	p->local_comm_id = cm_new_comm_id(p->dev);
	p->rq_psn = cm_random32() & 0xffffff;
	/* rdma_cm's flow label from the ports: both ends and rxe derive
	 * the UDP source port from it */
	p->flow_label = ((uint32_t)sport * 31 + dport) & 0xfffff;
	r.local_comm_id = p->local_comm_id;
	r.service_id = cm_service_id(p->id.ps, dport);
	r.ca_guid = p->dev->guid;
	r.qpn = p->qpn;
	r.resp_res = p->resp_res;
	r.init_depth = p->init_depth;
	r.remote_cm_timeout = CM_LOCAL_TIMEOUT;
	r.transport = p->id.qp_type == IBV_QPT_UC ? 1 : 0;
	r.psn = p->rq_psn;
	r.local_cm_timeout = CM_LOCAL_TIMEOUT;
	r.retry_count = p->retry_count;
	r.pkey = 0xffff;
	r.mtu = p->mtu;
	r.rnr_retry = p->rnr_retry;
	r.max_cm_retries = CM_RETRIES;
	r.srq = p->srq;
	memcpy(r.sgid, ad->addr.ibaddr.sgid.raw, 16);
	memcpy(r.dgid, ad->addr.ibaddr.dgid.raw, 16);
	r.flow_label = p->flow_label;
	r.traffic_class = p->tos;
	r.hop_limit = 64;
	r.ack_timeout = p->ack_timeout;
	memset(&ip, 0, sizeof(ip));
	ip.ip_version = ad->src_addr.sa_family == AF_INET6 ? 6 : 4;
	ip.port = sport;
	if (ip.ip_version == 4) {
		memcpy(ip.src + 12, &ad->src_sin.sin_addr, 4);
		memcpy(ip.dst + 12, &ad->dst_sin.sin_addr, 4);
	} else {
		memcpy(ip.src, &ad->src_sin6.sin6_addr, 16);
		memcpy(ip.dst, &ad->dst_sin6.sin6_addr, 16);
	}
	cm_ip_hdr_pack(r.pdata, &ip);
	if (param != NULL && param->private_data_len > 0)
		memcpy(r.pdata + CM_IP_HDR_LEN, param->private_data,
			param->private_data_len);
	p->sr_offered = cm_sr_offer(p, param != NULL ?
		param->private_data_len : 0, CM_REQ_PDATA - CM_IP_HDR_LEN);
	if (p->sr_offered)
		cm_sr_put(r.pdata + CM_IP_HDR_LEN, CM_REQ_PDATA - CM_IP_HDR_LEN,
			r.local_comm_id);
	p->ah = cm_dev_ah(p->dev, r.dgid, p->sgid_index);
	if (p->ah == NULL)
		return -1;
	cm_mad_put_hdr(mad, CM_ATTR_REQ, p->tid);
	cm_req_pack(mad + CM_MAD_HDR, &r);
	cm_send_mad(p->dev, p->ah, mad);
	cm_retx_arm(p, mad, CM_RETRY_MS);
	p->req_sent_ms = cm_now_ms();
	p->state = CM_REQ_SENT;
	return 0;
}

static int
conn_params(struct cm_id_priv *p, const struct rdma_conn_param *param)
{
	if (param != NULL && param->private_data_len > 0 &&
			param->private_data == NULL)
		return -1;
	p->resp_res = 1;
	p->init_depth = 1;
	if (param != NULL && (depth(param->responder_resources,
			p->dev->max_resp_res, UINT8_MAX, &p->resp_res) != 0 ||
			depth(param->initiator_depth, p->dev->max_init_depth,
			UINT8_MAX, &p->init_depth) != 0))
		return -1;
	p->retry_count = param != NULL ? min8(param->retry_count, 7) : 7;
	p->rnr_retry = param != NULL ? min8(param->rnr_retry_count, 7) : 7;
	p->qpn = p->id.qp != NULL ? p->id.qp->qp_num :
		param != NULL ? param->qp_num : 0;
	p->srq = p->id.qp != NULL ? p->id.qp->srq != NULL :
		param != NULL && param->srq;
	if (p->ack_timeout == 0)
		p->ack_timeout = CM_ACK_TIMEOUT;
	return p->qpn != 0 ? 0 : -1;
}

int
rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	struct cm_id_priv *p = cm_id(id);
	int rc = 0;

	if (id == NULL) {
		errno = EINVAL;
		return -1;
	}
	if (id->ps == RDMA_PS_UDP || id->ps == RDMA_PS_IPOIB)
		return cm_sidr_connect(p, conn_param);
	pthread_mutex_lock(&cm.lock);
	if (p->state != CM_ROUTE_RESOLVED || conn_params(p, conn_param) != 0 ||
			(conn_param != NULL && conn_param->private_data_len >
			CM_REQ_PDATA - CM_IP_HDR_LEN)) {
		errno = EINVAL;
		rc = -1;
	} else if (send_req(p, conn_param) != 0) {
		rc = -1;
	}
	pthread_mutex_unlock(&cm.lock);
	if (rc == 0 && p->sync)
		rc = cm_wait(p, RDMA_CM_EVENT_ESTABLISHED);
	return rc;
}

static void
send_rtu(struct cm_id_priv *p)
{
	uint8_t mad[CM_MAD_LEN];

	cm_send_simple(p->dev, p->ah, p->tid, CM_ATTR_RTU, p->local_comm_id,
		p->remote_comm_id, 0, mad);
	cm_keep_reply(p, CM_ATTR_RTU, mad);
}

static void
rx_rep(struct cm_id_priv *p, struct cm_rep *r)
{
	bool sr;

	if (p->state == CM_ESTABLISHED && p->last_reply_attr == CM_ATTR_RTU) {
		cm_send_mad(p->dev, p->ah, p->last_reply);	/* RTU lost */
		return;
	}
	if (p->state != CM_REQ_SENT) {
		cm.st.rx_drop_state++;
		return;
	}
	cm_retx_stop(p);
	/* the peer took our offer: its tag is not the application's */
	sr = cm_sr_take(r->pdata, CM_REP_PDATA, r->local_comm_id) &&
		p->sr_offered;
	p->remote_comm_id = r->local_comm_id;
	p->remote_guid = r->ca_guid;
	p->remote_qpn = r->qpn;
	p->sq_psn = r->psn;
	/* what the peer will answer bounds what this side may ask */
	p->init_depth = min8(p->init_depth, r->resp_res);
	p->resp_res = min8(p->resp_res, r->init_depth);
	p->rnr_retry = r->rnr_retry;
	if (p->id.qp == NULL) {
		p->state = CM_REP_RCVD;
		conn_event(p, RDMA_CM_EVENT_CONNECT_RESPONSE, 0, r->pdata,
			CM_REP_PDATA);
		return;
	}
	/* before RTR: the peer's QP has it already, so a QP that cannot
	 * take it cannot be connected to it either */
	if ((sr && cm_sr_set(p) != 0) ||
			cm_qp_modify(p, IBV_QPS_RTR) != 0 ||
			cm_qp_modify(p, IBV_QPS_RTS) != 0) {
		rej_peer(p, CM_REF_REP, CM_REJ_NO_QP, NULL, 0);
		fail(p, RDMA_CM_EVENT_CONNECT_ERROR, -errno, NULL, 0);
		return;
	}
	send_rtu(p);
	p->state = CM_ESTABLISHED;
	conn_event(p, RDMA_CM_EVENT_ESTABLISHED, 0, r->pdata, CM_REP_PDATA);
}

int
rdma_establish(struct rdma_cm_id *id)
{
	struct cm_id_priv *p = cm_id(id);
	int rc = 0;

	if (id == NULL) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&cm.lock);
	if (p->state != CM_REP_RCVD || id->qp != NULL) {
		errno = EINVAL;
		rc = -1;
	} else {
		send_rtu(p);
		p->state = CM_ESTABLISHED;
	}
	pthread_mutex_unlock(&cm.lock);
	return rc;
}

/* --- passive side --- */

struct cm_id_priv *
cm_conn_child(struct cm_id_priv *l, struct cm_dev *d, const uint8_t sgid[16],
		const struct cm_ip_hdr *ip)
{
	struct cm_channel *c = l->sync ? cm_channel_new(true) : l->chan;
	struct rdma_addr *ad;
	struct cm_id_priv *p;
	uint8_t mine[16];

	if (c == NULL)
		return NULL;
	p = cm_id_new(c, l->id.context, l->id.ps, l->id.qp_type);
	if (p == NULL) {
		if (l->sync)
			cm_channel_free(c);
		return NULL;
	}
	p->sync = l->sync;
	p->parent = l;
	p->dev = d;
	p->id.verbs = d->verbs;
	p->id.port_num = d->port_num;
	ad = &p->id.route.addr;
	if (ip->ip_version == 4) {
		ad->src_sin.sin_family = ad->dst_sin.sin_family = AF_INET;
		memcpy(&ad->src_sin.sin_addr, ip->dst + 12, 4);
		memcpy(&ad->dst_sin.sin_addr, ip->src + 12, 4);
	} else {
		ad->src_sin6.sin6_family = ad->dst_sin6.sin6_family = AF_INET6;
		memcpy(&ad->src_sin6.sin6_addr, ip->dst, 16);
		memcpy(&ad->dst_sin6.sin6_addr, ip->src, 16);
	}
	cm_sa_set_port(&ad->src_addr, cm_sa_port(&l->id.route.addr.src_addr));
	cm_sa_set_port(&ad->dst_addr, ip->port);
	cm_sa_to_gid(&ad->src_addr, mine);
	p->sgid_index = cm_dev_gid_index(d, mine, sgid);
	memcpy(ad->addr.ibaddr.sgid.raw, mine, 16);
	memcpy(ad->addr.ibaddr.dgid.raw, sgid, 16);
	ad->addr.ibaddr.pkey = htobe16(0xffff);
	p->tos = l->tos;
	return p;
}

static void
send_mra(struct cm_id_priv *p)
{
	uint8_t mad[CM_MAD_LEN];
	struct cm_mra m;

	memset(&m, 0, sizeof(m));
	m.local_comm_id = p->local_comm_id;
	m.remote_comm_id = p->remote_comm_id;
	m.msg_mraed = CM_REF_REQ;
	m.service_timeout = CM_MRA_TIMEOUT;
	cm_mad_put_hdr(mad, CM_ATTR_MRA, p->tid);
	cm_mra_pack(mad + CM_MAD_HDR, &m);
	cm_send_mad(p->dev, p->ah, mad);
}

/*
 * Whether a REQ (or SIDR REQ) to no listener was seen before. A server may be between
 * two listens (perftest -R closes its listener after the first
 * connection and listens again for the next, and its peer connects as
 * soon as it hears the first is done): the first copy is only
 * remembered, and the peer's CM retransmits it within seconds; a copy
 * seen again is rejected, as droced's QP1 does (app/droced/gsi.c).
 */
bool
cm_orphan_seen_before(const uint8_t sgid[16], uint32_t comm_id)
{
	uint64_t now = cm_now_ms();
	uint32_t i, oldest = 0;

	for (i = 0; i < CM_ORPHANS; i++) {
		if (cm.orphan[i].at_ms != 0 &&
				now - cm.orphan[i].at_ms < CM_ORPHAN_MS &&
				cm.orphan[i].comm_id == comm_id &&
				memcmp(cm.orphan[i].sgid, sgid, 16) == 0) {
			cm.orphan[i].at_ms = 0;
			return true;
		}
		if (cm.orphan[i].at_ms < cm.orphan[oldest].at_ms)
			oldest = i;
	}
	memcpy(cm.orphan[oldest].sgid, sgid, 16);
	cm.orphan[oldest].comm_id = comm_id;
	cm.orphan[oldest].at_ms = now ? now : 1;
	return false;
}

static void
rx_req(struct cm_dev *d, const uint8_t sgid[16], const struct cm_mad_hdr *h,
		const uint8_t *msg)
{
	struct cm_id_priv *p, *l;
	struct cm_event_priv *e;
	struct cm_ip_hdr ip;
	struct ibv_ah *ah;
	struct cm_req r;

	cm_req_parse(msg, &r);
	p = find_by_remote(r.local_comm_id, r.ca_guid);
	if (p != NULL) {		/* a retransmitted REQ */
		if (p->state == CM_REQ_RCVD)
			send_mra(p);
		else if (p->state == CM_REP_SENT)
			cm_send_mad(p->dev, p->ah, p->retx.mad);
		else
			cm.st.rx_drop_state++;
		return;
	}
	ah = cm_dev_ah(d, sgid, cm_dev_gid_index(d, r.dgid, sgid));
	if (cm_ip_hdr_parse(r.pdata, &ip) != 0 || r.transport > 1) {
		cm.st.rx_drop_malformed++;
		cm_send_rej(d, ah, h->tid, cm_new_comm_id(d), r.local_comm_id,
			CM_REF_REQ, CM_REJ_INVALID_TRANSPORT_TYPE, NULL, 0);
		return;
	}
	l = cm_listener_of(d, r.service_id, r.dgid);
	if (l == NULL && !cm_orphan_seen_before(sgid, r.local_comm_id)) {
		cm.st.rx_drop_orphan++;
		return;
	}
	if (l == NULL || (l->backlog > 0 && l->pending >= l->backlog)) {
		cm_send_rej(d, ah, h->tid, cm_new_comm_id(d), r.local_comm_id,
			CM_REF_REQ, l == NULL ? CM_REJ_INVALID_SERVICE_ID :
			CM_REJ_NO_RESOURCES, NULL, 0);
		return;
	}
	p = cm_conn_child(l, d, sgid, &ip);
	if (p == NULL) {
		cm_send_rej(d, ah, h->tid, cm_new_comm_id(d), r.local_comm_id,
			CM_REF_REQ, CM_REJ_NO_RESOURCES, NULL, 0);
		return;
	}
	p->ah = ah;
	p->tid = h->tid;
	p->local_comm_id = cm_new_comm_id(d);
	p->remote_comm_id = r.local_comm_id;
	p->remote_guid = r.ca_guid;
	p->remote_qpn = r.qpn;
	p->sq_psn = r.psn;
	p->mtu = r.mtu < d->mtu ? (enum ibv_mtu)r.mtu : d->mtu;
	p->retry_count = r.retry_count;
	p->rnr_retry = r.rnr_retry;
	p->ack_timeout = r.ack_timeout ? r.ack_timeout : CM_ACK_TIMEOUT;
	p->flow_label = r.flow_label;
	p->tos = r.traffic_class;
	p->srq = r.srq;
	/* the passive side sees the active side's limits swapped */
	p->resp_res = r.init_depth;
	p->init_depth = r.resp_res;
	p->id.qp_type = r.transport == 1 ? IBV_QPT_UC : IBV_QPT_RC;
	/* the offer is droce's: the application sees zeros where it was */
	p->sr_offered = cm_sr_take(r.pdata + CM_IP_HDR_LEN,
		CM_REQ_PDATA - CM_IP_HDR_LEN, r.local_comm_id);
	p->state = CM_REQ_RCVD;
	p->req_pending = true;
	l->pending++;
	e = cm_event_queue_on(l->chan, p, RDMA_CM_EVENT_CONNECT_REQUEST, 0);
	if (e == NULL)
		return;
	e->ev.listen_id = &l->id;
	memcpy(e->pdata, r.pdata + CM_IP_HDR_LEN, CM_REQ_PDATA - CM_IP_HDR_LEN);
	e->ev.param.conn.private_data = e->pdata;
	e->ev.param.conn.private_data_len = CM_REQ_PDATA - CM_IP_HDR_LEN;
	e->ev.param.conn.responder_resources = p->resp_res;
	e->ev.param.conn.initiator_depth = p->init_depth;
	e->ev.param.conn.flow_control = r.e2e_fc;
	e->ev.param.conn.retry_count = r.retry_count;
	e->ev.param.conn.rnr_retry_count = r.rnr_retry;
	e->ev.param.conn.srq = r.srq;
	e->ev.param.conn.qp_num = r.qpn;
}

void
cm_request_done(struct cm_id_priv *p)
{
	if (p->parent != NULL && p->parent->pending > 0)
		p->parent->pending--;
	p->parent = NULL;
}

static int
accept_rc(struct cm_id_priv *p, const struct rdma_conn_param *param)
{
	uint8_t mad[CM_MAD_LEN];
	uint8_t peer_init;
	struct cm_rep r;
	bool sr;

	if (param != NULL) {
		if (param->private_data_len > CM_REP_PDATA ||
				(param->private_data_len > 0 &&
				param->private_data == NULL))
			return -1;
		/* the REQ's depths, swapped, are the most the peer takes */
		peer_init = p->init_depth;
		if (depth(param->responder_resources, p->dev->max_resp_res,
				p->resp_res, &p->resp_res) != 0 ||
				depth(param->initiator_depth,
				p->dev->max_init_depth, peer_init,
				&p->init_depth) != 0)
			return -1;
		p->init_depth = min8(p->init_depth, peer_init);
	}
	p->qpn = p->id.qp != NULL ? p->id.qp->qp_num :
		param != NULL ? param->qp_num : 0;
	if (p->qpn == 0)
		return -1;
	p->rq_psn = cm_random32() & 0xffffff;
	/* the peer offered it, this side offers it too and the REP has
	 * room to say so: on before the QP leaves INIT. A QP that does
	 * not take it goes without, and the REP says nothing. */
	sr = p->sr_offered && cm_sr_offer(p, param != NULL ?
		param->private_data_len : 0, CM_REP_PDATA) && cm_sr_set(p) == 0;
	if (cm_qp_modify(p, IBV_QPS_RTR) != 0 ||
			cm_qp_modify(p, IBV_QPS_RTS) != 0)
		return -1;
	memset(&r, 0, sizeof(r));
	r.local_comm_id = p->local_comm_id;
	r.remote_comm_id = p->remote_comm_id;
	r.qpn = p->qpn;
	r.psn = p->rq_psn;
	r.resp_res = p->resp_res;
	r.init_depth = p->init_depth;
	r.target_ack_delay = CM_TARGET_ACK_DELAY;
	r.rnr_retry = param != NULL ? min8(param->rnr_retry_count, 7) : 7;
	r.srq = p->id.qp != NULL ? p->id.qp->srq != NULL :
		param != NULL && param->srq;
	r.ca_guid = p->dev->guid;
	if (param != NULL && param->private_data_len > 0)
		memcpy(r.pdata, param->private_data, param->private_data_len);
	if (sr)
		cm_sr_put(r.pdata, CM_REP_PDATA, r.local_comm_id);
	cm_mad_put_hdr(mad, CM_ATTR_REP, p->tid);
	cm_rep_pack(mad + CM_MAD_HDR, &r);
	cm_send_mad(p->dev, p->ah, mad);
	cm_retx_arm(p, mad, CM_RETRY_MS);
	p->state = CM_REP_SENT;
	cm_request_done(p);
	return 0;
}

int
rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	struct cm_id_priv *p = cm_id(id);
	int rc = 0;

	if (id == NULL) {
		errno = EINVAL;
		return -1;
	}
	if (id->qp_type == IBV_QPT_UD)
		return cm_sidr_accept(p, conn_param);
	pthread_mutex_lock(&cm.lock);
	if (p->state != CM_REQ_RCVD) {
		errno = EINVAL;
		rc = -1;
	} else if (accept_rc(p, conn_param) != 0) {
		if (errno == 0)
			errno = EINVAL;
		rc = -1;
	}
	pthread_mutex_unlock(&cm.lock);
	if (rc == 0 && p->sync)
		rc = cm_wait(p, RDMA_CM_EVENT_ESTABLISHED);
	return rc;
}

static int
reject(struct rdma_cm_id *id, const void *pdata, uint8_t len)
{
	struct cm_id_priv *p = cm_id(id);
	int rc = 0;

	if (id == NULL || (len > 0 && pdata == NULL)) {
		errno = EINVAL;
		return -1;
	}
	if (id->qp_type == IBV_QPT_UD)
		return cm_sidr_reject(p, pdata, len);
	pthread_mutex_lock(&cm.lock);
	if (p->state != CM_REQ_RCVD || len > CM_REJ_PDATA) {
		errno = EINVAL;
		rc = -1;
	} else {
		rej_peer(p, CM_REF_REQ, CM_REJ_CONSUMER_DEFINED, pdata, len);
		p->state = CM_REJECTED;
		cm_request_done(p);
	}
	pthread_mutex_unlock(&cm.lock);
	return rc;
}

int
rdma_reject(struct rdma_cm_id *id, const void *private_data,
		uint8_t private_data_len)
{
	return reject(id, private_data, private_data_len);
}

int
rdma_reject_ece(struct rdma_cm_id *id, const void *private_data,
		uint8_t private_data_len)
{
	return reject(id, private_data, private_data_len);
}

static void
rx_rtu(struct cm_id_priv *p, const uint8_t *pdata)
{
	if (p->state != CM_REP_SENT) {
		cm.st.rx_drop_state++;
		return;
	}
	cm_retx_stop(p);
	p->state = CM_ESTABLISHED;
	conn_event(p, RDMA_CM_EVENT_ESTABLISHED, 0, pdata, CM_RTU_PDATA);
}

int
rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event)
{
	struct cm_id_priv *p = cm_id(id);

	if (id == NULL) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&cm.lock);
	/* data before the RTU: the connection is up (IBTA 12.9.7.2) */
	if (event == IBV_EVENT_COMM_EST && p->state == CM_REP_SENT)
		rx_rtu(p, NULL);
	pthread_mutex_unlock(&cm.lock);
	return 0;
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
	fail(p, RDMA_CM_EVENT_REJECTED, r->reason, r->pdata, CM_REJ_PDATA);
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
		rej_peer(p, p->state == CM_REQ_SENT ? CM_REF_OTHER : CM_REF_REP,
			CM_REJ_CONSUMER_DEFINED, NULL, 0);
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

	if (p == NULL || p->remote_comm_id != s->local_comm_id ||
			(p->qpn != 0 && s->remote_qpn != p->qpn)) {
		/* the spec answers a DREQ to nobody with a DREP */
		if (!cm_linger_answered(s->remote_comm_id))
			cm.st.rx_drop_unknown++;
		cm_send_simple(d, cm_dev_ah(d, sgid, cm_dev_gid_index(d, NULL, sgid)),
			h->tid, CM_ATTR_DREP, s->remote_comm_id,
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
			conn_event(p, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0);
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
	conn_event(p, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0);
}

/* The agent's timer ran out of retries on the ID's MAD. */
void
cm_conn_timeout(struct cm_id_priv *p)
{
	switch (p->state) {
	case CM_REQ_SENT:
	case CM_REP_SENT:
		rej_peer(p, p->state == CM_REQ_SENT ? CM_REF_REQ : CM_REF_REP,
			CM_REJ_TIMEOUT, NULL, 0);
		if (p->state == CM_REP_SENT)
			cm_request_done(p);
		fail(p, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT, NULL, 0);
		break;
	case CM_DREQ_SENT:	/* the peer is gone: disconnected all the same */
		p->state = CM_DISCONNECTED;
		conn_event(p, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0);
		break;
	case CM_SIDR_REQ_SENT:
		fail(p, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT, NULL, 0);
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
		rx_req(d, sgid, h, msg);
		return;
	case CM_ATTR_REP:
		cm_rep_parse(msg, &rep);
		p = find_by_local(rep.remote_comm_id);
		if (p == NULL || p->dev != d) {
			cm.st.rx_drop_unknown++;
			return;
		}
		rx_rep(p, &rep);
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
			rx_rtu(p, s.pdata);
		else
			rx_drep(p);
		return;
	default:	/* LAP, APR: no alternate paths on RoCE */
		cm.st.rx_drop_malformed++;
	}
}
