/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * The passive side of an RC or UC connection (cm_conn.c): a REQ to a
 * listener becomes a child ID and its CONNECT_REQUEST; rdma_accept
 * answers it with a REP, rdma_reject with a REJ; the RTU (or the first
 * data, rdma_notify) establishes it.
 */

#include <errno.h>
#include <string.h>

#include "cm_internal.h"

#define CM_TARGET_ACK_DELAY 15
#define CM_MRA_TIMEOUT 23	/* ~34 s: the consumer is slow to accept */

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

void
cm_conn_rx_req(struct cm_dev *d, const uint8_t sgid[16],
		const struct cm_mad_hdr *h, const uint8_t *msg)
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
	ah = cm_dev_reply_ah(d, sgid, cm_dev_gid_index(d, r.dgid, sgid));
	if (ah == NULL)
		return;	/* no answer can reach the source yet */
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
		if (cm_conn_depth(param->responder_resources,
				p->dev->max_resp_res, p->resp_res,
				&p->resp_res) != 0 ||
				cm_conn_depth(param->initiator_depth,
				p->dev->max_init_depth, peer_init,
				&p->init_depth) != 0)
			return -1;
		p->init_depth = cm_min8(p->init_depth, peer_init);
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
	r.rnr_retry = param != NULL ? cm_min8(param->rnr_retry_count, 7) : 7;
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
		cm_rej_peer(p, CM_REF_REQ, CM_REJ_CONSUMER_DEFINED, pdata, len);
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

void
cm_conn_rx_rtu(struct cm_id_priv *p, const uint8_t *pdata)
{
	if (p->state != CM_REP_SENT) {
		cm.st.rx_drop_state++;
		return;
	}
	cm_retx_stop(p);
	p->state = CM_ESTABLISHED;
	cm_conn_event(p, RDMA_CM_EVENT_ESTABLISHED, 0, pdata, CM_RTU_PDATA);
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
		cm_conn_rx_rtu(p, NULL);
	pthread_mutex_unlock(&cm.lock);
	return 0;
}
