/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * UD "connections" (RDMA_PS_UDP): Service ID Resolution, SIDR REQ and
 * SIDR REP (IBTA 12.11). The active side learns the passive side's QPN
 * and Q_Key; nothing is established on the wire, nothing torn down.
 */

#include <errno.h>
#include <string.h>

#include "cm_internal.h"
#include "droce_wire.h"
#include "wire_bytes.h"

int
cm_sidr_connect(struct cm_id_priv *p, struct rdma_conn_param *param)
{
	const struct rdma_addr *ad = &p->id.route.addr;
	uint8_t mad[CM_MAD_LEN];
	struct cm_sidr_req r;
	struct cm_ip_hdr ip;
	int rc = 0;

	if (param != NULL && (param->private_data_len >
			CM_SIDR_REQ_PDATA - CM_IP_HDR_LEN ||
			(param->private_data_len && !param->private_data))) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&cm.lock);
	if (p->state != CM_ROUTE_RESOLVED) {
		errno = EINVAL;
		rc = -1;
		goto out;
	}
	p->ah = cm_dev_ah(p->dev, ad->addr.ibaddr.dgid.raw, p->sgid_index);
	if (p->ah == NULL) {
		rc = -1;
		goto out;
	}
	memset(&r, 0, sizeof(r));
	p->tid = (uint64_t)cm_random32() << 32 | cm_random32();
	p->local_comm_id = cm_new_comm_id(p->dev);
	r.request_id = p->local_comm_id;
	r.pkey = 0xffff;
	r.service_id = cm_service_id(p->id.ps, cm_sa_port(&ad->dst_addr));
	memset(&ip, 0, sizeof(ip));
	ip.ip_version = ad->src_addr.sa_family == AF_INET6 ? 6 : 4;
	ip.port = cm_sa_port(&ad->src_addr);
	cm_sa_to_gid(&ad->src_addr, ip.src);
	cm_sa_to_gid(&ad->dst_addr, ip.dst);
	if (ip.ip_version == 4) {	/* rdma_cm's header: IPv4 unmapped */
		memset(ip.src, 0, 12);
		memset(ip.dst, 0, 12);
	}
	cm_ip_hdr_pack(r.pdata, &ip);
	if (param != NULL && param->private_data_len)
		memcpy(r.pdata + CM_IP_HDR_LEN, param->private_data,
			param->private_data_len);
	cm_mad_put_hdr(mad, CM_ATTR_SIDR_REQ, p->tid);
	cm_sidr_req_pack(mad + CM_MAD_HDR, &r);
	cm_send_mad(p->dev, p->ah, mad);
	cm_retx_arm(p, mad, CM_RETRY_MS);
	p->req_sent_ms = cm_now_ms();
	p->state = CM_SIDR_REQ_SENT;
out:
	pthread_mutex_unlock(&cm.lock);
	if (rc == 0 && p->sync)
		rc = cm_wait(p, RDMA_CM_EVENT_ESTABLISHED);
	return rc;
}

static void
send_sidr_rep(struct cm_dev *d, struct ibv_ah *ah, uint64_t tid,
		const struct cm_sidr_rep *r, uint8_t *mad)
{
	cm_mad_put_hdr(mad, CM_ATTR_SIDR_REP, tid);
	cm_sidr_rep_pack(mad + CM_MAD_HDR, r);
	cm_send_mad(d, ah, mad);
}

static void
rx_sidr_req(struct cm_dev *d, const uint8_t sgid[16],
		const struct cm_mad_hdr *h, const uint8_t *msg)
{
	struct cm_id_priv *p, *l;
	struct cm_event_priv *e;
	struct cm_sidr_req r;
	struct cm_sidr_rep rep;
	struct cm_ip_hdr ip;
	uint8_t mad[CM_MAD_LEN], mine[16];
	struct ibv_ah *ah;

	cm_sidr_req_parse(msg, &r);
	for (p = cm.ids; p != NULL; p = p->next) {
		if (p->remote_comm_id == r.request_id && p->tid == h->tid &&
				p->id.qp_type == IBV_QPT_UD &&
				memcmp(p->id.route.addr.addr.ibaddr.dgid.raw,
				sgid, 16) == 0) {
			/* a retransmission: answered, or still with the app */
			if (p->last_reply_attr == CM_ATTR_SIDR_REP)
				cm_send_mad(d, p->ah, p->last_reply);
			return;
		}
	}
	if (cm_ip_hdr_parse(r.pdata, &ip) != 0) {
		cm.st.rx_drop_malformed++;
		return;
	}
	memcpy(mine, ip.dst, 16);
	if (ip.ip_version == 4)	/* rdma_cm's header: IPv4 unmapped */
		droce_gid_from_ipv4(mine, get_be32(ip.dst + 12));
	ah = cm_dev_reply_ah(d, sgid, cm_dev_gid_index(d, mine, sgid));
	if (ah == NULL)
		return;	/* no answer can reach the source yet */
	l = cm_listener_of(d, r.service_id, mine);
	/* the first copy to no listener only remembered, as a REQ's */
	if (l == NULL && !cm_orphan_seen_before(sgid, r.request_id)) {
		cm.st.rx_drop_orphan++;
		return;
	}
	if (l == NULL) {
		memset(&rep, 0, sizeof(rep));
		rep.request_id = r.request_id;
		rep.status = CM_SIDR_UNSUPPORTED;
		rep.service_id = r.service_id;
		cm.st.rej_sent++;
		send_sidr_rep(d, ah, h->tid, &rep, mad);
		return;
	}
	p = cm_conn_child(l, d, sgid, &ip);
	if (p == NULL)
		return;
	p->ah = ah;
	p->tid = h->tid;
	p->remote_comm_id = r.request_id;
	p->id.qp_type = IBV_QPT_UD;
	p->state = CM_SIDR_REQ_RCVD;
	p->req_pending = true;
	l->pending++;
	e = cm_event_queue_on(l->chan, p, RDMA_CM_EVENT_CONNECT_REQUEST, 0);
	if (e == NULL)
		return;
	e->ev.listen_id = &l->id;
	memcpy(e->pdata, r.pdata + CM_IP_HDR_LEN,
		CM_SIDR_REQ_PDATA - CM_IP_HDR_LEN);
	e->ev.param.ud.private_data = e->pdata;
	e->ev.param.ud.private_data_len = CM_SIDR_REQ_PDATA - CM_IP_HDR_LEN;
}

static int
sidr_answer(struct cm_id_priv *p, uint8_t status, uint32_t qpn, uint32_t qkey,
		const void *pdata, uint8_t len)
{
	struct cm_sidr_rep rep;
	uint8_t mad[CM_MAD_LEN];

	if (p->state != CM_SIDR_REQ_RCVD || len > CM_SIDR_REP_PDATA) {
		errno = EINVAL;
		return -1;
	}
	memset(&rep, 0, sizeof(rep));
	rep.request_id = p->remote_comm_id;
	rep.status = status;
	rep.qpn = qpn;
	rep.qkey = qkey;
	rep.service_id = cm_service_id(p->id.ps,
		cm_sa_port(&p->id.route.addr.src_addr));
	if (len)
		memcpy(rep.pdata, pdata, len);
	send_sidr_rep(p->dev, p->ah, p->tid, &rep, mad);
	cm_keep_reply(p, CM_ATTR_SIDR_REP, mad);
	p->state = status == CM_SIDR_SUCCESS ? CM_ESTABLISHED : CM_REJECTED;
	cm_request_done(p);
	return 0;
}

int
cm_sidr_accept(struct cm_id_priv *p, struct rdma_conn_param *param)
{
	uint32_t qpn = p->id.qp != NULL ? p->id.qp->qp_num :
		param != NULL ? param->qp_num : 0;
	int rc;

	if (qpn == 0 || (param != NULL && param->private_data_len &&
			param->private_data == NULL)) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&cm.lock);
	rc = sidr_answer(p, CM_SIDR_SUCCESS, qpn, CM_UDP_QKEY,
		param != NULL ? param->private_data : NULL,
		param != NULL ? param->private_data_len : 0);
	pthread_mutex_unlock(&cm.lock);
	return rc;
}

int
cm_sidr_reject(struct cm_id_priv *p, const void *pd, uint8_t len)
{
	int rc;

	pthread_mutex_lock(&cm.lock);
	rc = sidr_answer(p, CM_SIDR_REJECT, 0, 0, pd, len);
	cm.st.rej_sent += rc == 0;
	pthread_mutex_unlock(&cm.lock);
	return rc;
}

static void
rx_sidr_rep(const uint8_t *msg)
{
	struct cm_event_priv *e;
	struct cm_sidr_rep r;
	struct cm_id_priv *p;
	struct ibv_ah_attr *ah;

	cm_sidr_rep_parse(msg, &r);
	for (p = cm.ids; p != NULL; p = p->next)
		if (p->state == CM_SIDR_REQ_SENT &&
				p->local_comm_id == r.request_id)
			break;
	if (p == NULL) {
		cm.st.rx_drop_unknown++;
		return;
	}
	/*
	 * "Service ID not supported" in the first seconds: the server may
	 * not listen yet (perftest -R -c UD connects as soon as its
	 * hand-shake ends, while its server only then listens; a kernel's
	 * CM answers at once). The SIDR REQ's retransmission, armed
	 * already, asks again; the answer counts once the grace is over.
	 */
	if (r.status == CM_SIDR_UNSUPPORTED &&
			cm_now_ms() - p->req_sent_ms < CM_REJ8_GRACE_MS) {
		cm.st.rx_rej_retried++;
		return;
	}
	cm_retx_stop(p);
	if (r.status != CM_SIDR_SUCCESS) {
		p->state = CM_REJECTED;
		e = cm_event_queue(p, RDMA_CM_EVENT_UNREACHABLE, r.status);
	} else {
		p->state = CM_ESTABLISHED;
		p->remote_qpn = r.qpn;
		p->remote_qkey = r.qkey;
		e = cm_event_queue(p, RDMA_CM_EVENT_ESTABLISHED, 0);
	}
	if (e == NULL)
		return;
	memcpy(e->pdata, r.pdata, CM_SIDR_REP_PDATA);
	e->ev.param.ud.private_data = e->pdata;
	e->ev.param.ud.private_data_len = CM_SIDR_REP_PDATA;
	e->ev.param.ud.qp_num = r.qpn;
	e->ev.param.ud.qkey = r.qkey;
	ah = &e->ev.param.ud.ah_attr;
	ah->is_global = 1;
	memcpy(ah->grh.dgid.raw, p->id.route.addr.addr.ibaddr.dgid.raw, 16);
	ah->grh.sgid_index = p->sgid_index;
	ah->grh.hop_limit = 64;
	ah->grh.traffic_class = p->tos;
	ah->port_num = p->id.port_num;
}

void
cm_sidr_rx(struct cm_dev *d, const uint8_t sgid[16],
		const struct cm_mad_hdr *h, const uint8_t *msg)
{
	if (h->attr_id == CM_ATTR_SIDR_REQ)
		rx_sidr_req(d, sgid, h, msg);
	else
		rx_sidr_rep(msg);
}
