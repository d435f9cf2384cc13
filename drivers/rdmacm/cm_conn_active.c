/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * The active side of an RC or UC connection (cm_conn.c): rdma_connect
 * sends the REQ; its REP takes the QP to RTS and is answered with the
 * RTU (an ID with no QP hears CONNECT_RESPONSE, and rdma_establish sends
 * the RTU).
 */

#include <errno.h>
#include <string.h>

#include "cm_internal.h"

static uint32_t tid_seq;

static uint64_t
new_tid(void)
{
	return (uint64_t)cm_random32() << 32 | ++tid_seq;
}

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
	if (param != NULL && (cm_conn_depth(param->responder_resources,
			p->dev->max_resp_res, UINT8_MAX, &p->resp_res) != 0 ||
			cm_conn_depth(param->initiator_depth,
			p->dev->max_init_depth, UINT8_MAX,
			&p->init_depth) != 0))
		return -1;
	p->retry_count = param != NULL ? cm_min8(param->retry_count, 7) : 7;
	p->rnr_retry = param != NULL ? cm_min8(param->rnr_retry_count, 7) : 7;
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

void
cm_conn_rx_rep(struct cm_id_priv *p, struct cm_rep *r)
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
	p->init_depth = cm_min8(p->init_depth, r->resp_res);
	p->resp_res = cm_min8(p->resp_res, r->init_depth);
	p->rnr_retry = r->rnr_retry;
	if (p->id.qp == NULL) {
		p->state = CM_REP_RCVD;
		cm_conn_event(p, RDMA_CM_EVENT_CONNECT_RESPONSE, 0, r->pdata,
			CM_REP_PDATA);
		return;
	}
	/* before RTR: the peer's QP has it already, so a QP that cannot
	 * take it cannot be connected to it either */
	if ((sr && cm_sr_set(p) != 0) ||
			cm_qp_modify(p, IBV_QPS_RTR) != 0 ||
			cm_qp_modify(p, IBV_QPS_RTS) != 0) {
		cm_rej_peer(p, CM_REF_REP, CM_REJ_NO_QP, NULL, 0);
		cm_conn_fail(p, RDMA_CM_EVENT_CONNECT_ERROR, -errno, NULL, 0);
		return;
	}
	send_rtu(p);
	p->state = CM_ESTABLISHED;
	cm_conn_event(p, RDMA_CM_EVENT_ESTABLISHED, 0, r->pdata, CM_REP_PDATA);
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
