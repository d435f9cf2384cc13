/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * CM MAD layouts (IBTA vol. 1 12.6; checked against rxe-rping.pcap).
 * Sub-byte fields are written from the byte's most significant bit, as
 * the spec draws them.
 */

#include <string.h>

#include "wire_cm_mad.h"
#include "wire_bytes.h"

#define MIN(a, b) ((a) < (b) ? (a) : (b))

int
cm_mad_parse_hdr(const uint8_t *mad, uint32_t len, struct cm_mad_hdr *h)
{
	if (len < CM_MAD_LEN || mad[0] != 1 || mad[1] != CM_CLASS ||
			mad[2] != CM_CLASS_VERSION)
		return -1;
	h->method = mad[3];
	h->status = get_be16(mad + 4);
	h->tid = get_be64(mad + 8);
	h->attr_id = get_be16(mad + 16);
	h->attr_mod = get_be32(mad + 20);
	if (h->method != CM_METHOD_SEND ||
			h->attr_id < CM_ATTR_REQ || h->attr_id > CM_ATTR_SIDR_REP)
		return -1;
	return 0;
}

/* Every message but the SIDR pair opens with the local communication ID
 * and (but the REQ) the remote one; the SIDR pair with the request ID,
 * which is the requester's. */
uint32_t
cm_msg_sender_id(uint16_t attr, const uint8_t *msg)
{
	return attr == CM_ATTR_SIDR_REP ? 0 : get_be32(msg);
}

uint32_t
cm_msg_target_id(uint16_t attr, const uint8_t *msg)
{
	switch (attr) {
	case CM_ATTR_REQ:
	case CM_ATTR_SIDR_REQ:
		return 0;
	case CM_ATTR_SIDR_REP:
		return get_be32(msg);
	default:
		return get_be32(msg + 4);
	}
}

uint64_t
cm_msg_service_id(uint16_t attr, const uint8_t *msg)
{
	switch (attr) {
	case CM_ATTR_REQ:
	case CM_ATTR_SIDR_REQ:
		return get_be64(msg + 8);
	case CM_ATTR_SIDR_REP:
		return get_be64(msg + 12);
	default:
		return 0;
	}
}

void
cm_mad_put_hdr(uint8_t *mad, uint16_t attr_id, uint64_t tid)
{
	memset(mad, 0, CM_MAD_LEN);
	mad[0] = 1;
	mad[1] = CM_CLASS;
	mad[2] = CM_CLASS_VERSION;
	mad[3] = CM_METHOD_SEND;
	put_be64(mad + 8, tid);
	put_be16(mad + 16, attr_id);
}

void
cm_req_pack(uint8_t *m, const struct cm_req *r)
{
	put_be32(m + 0, r->local_comm_id);
	put_be64(m + 8, r->service_id);
	put_be64(m + 16, r->ca_guid);
	put_be32(m + 28, r->qkey);
	put_be24(m + 32, r->qpn);
	m[35] = r->resp_res;
	m[39] = r->init_depth;
	m[43] = (uint8_t)(r->remote_cm_timeout << 3 | (r->transport & 3) << 1 |
		r->e2e_fc);
	put_be24(m + 44, r->psn);
	m[47] = (uint8_t)(r->local_cm_timeout << 3 | (r->retry_count & 7));
	put_be16(m + 48, r->pkey);
	m[50] = (uint8_t)(r->mtu << 4 | (r->rnr_retry & 7));
	m[51] = (uint8_t)(r->max_cm_retries << 4 | r->srq << 3);
	put_be16(m + 52, 0xffff);	/* no LIDs on RoCE */
	put_be16(m + 54, 0xffff);
	memcpy(m + 56, r->sgid, 16);
	memcpy(m + 72, r->dgid, 16);
	put_be32(m + 88, r->flow_label << 12 | (r->rate & 0x3f));
	m[92] = r->traffic_class;
	m[93] = r->hop_limit;
	m[94] = (uint8_t)(r->sl << 4);
	m[95] = (uint8_t)(r->ack_timeout << 3);
	memcpy(m + 140, r->pdata, CM_REQ_PDATA);
}

void
cm_req_parse(const uint8_t *m, struct cm_req *r)
{
	r->local_comm_id = get_be32(m + 0);
	r->service_id = get_be64(m + 8);
	r->ca_guid = get_be64(m + 16);
	r->qkey = get_be32(m + 28);
	r->qpn = get_be24(m + 32);
	r->resp_res = m[35];
	r->init_depth = m[39];
	r->remote_cm_timeout = m[43] >> 3;
	r->transport = (m[43] >> 1) & 3;
	r->e2e_fc = m[43] & 1;
	r->psn = get_be24(m + 44);
	r->local_cm_timeout = m[47] >> 3;
	r->retry_count = m[47] & 7;
	r->pkey = get_be16(m + 48);
	r->mtu = m[50] >> 4;
	r->rnr_retry = m[50] & 7;
	r->max_cm_retries = m[51] >> 4;
	r->srq = (m[51] >> 3) & 1;
	memcpy(r->sgid, m + 56, 16);
	memcpy(r->dgid, m + 72, 16);
	r->flow_label = get_be32(m + 88) >> 12;
	r->rate = m[91] & 0x3f;
	r->traffic_class = m[92];
	r->hop_limit = m[93];
	r->sl = m[94] >> 4;
	r->ack_timeout = m[95] >> 3;
	memcpy(r->pdata, m + 140, CM_REQ_PDATA);
}

void
cm_rep_pack(uint8_t *m, const struct cm_rep *r)
{
	put_be32(m + 0, r->local_comm_id);
	put_be32(m + 4, r->remote_comm_id);
	put_be32(m + 8, r->qkey);
	put_be24(m + 12, r->qpn);
	put_be24(m + 20, r->psn);
	m[24] = r->resp_res;
	m[25] = r->init_depth;
	m[26] = (uint8_t)(r->target_ack_delay << 3 | (r->failover & 3) << 1 |
		r->e2e_fc);
	m[27] = (uint8_t)((r->rnr_retry & 7) << 5 | r->srq << 4);
	put_be64(m + 28, r->ca_guid);
	memcpy(m + 36, r->pdata, CM_REP_PDATA);
}

void
cm_rep_parse(const uint8_t *m, struct cm_rep *r)
{
	r->local_comm_id = get_be32(m + 0);
	r->remote_comm_id = get_be32(m + 4);
	r->qkey = get_be32(m + 8);
	r->qpn = get_be24(m + 12);
	r->psn = get_be24(m + 20);
	r->resp_res = m[24];
	r->init_depth = m[25];
	r->target_ack_delay = m[26] >> 3;
	r->failover = (m[26] >> 1) & 3;
	r->e2e_fc = m[26] & 1;
	r->rnr_retry = m[27] >> 5;
	r->srq = (m[27] >> 4) & 1;
	r->ca_guid = get_be64(m + 28);
	memcpy(r->pdata, m + 36, CM_REP_PDATA);
}

void
cm_rej_pack(uint8_t *m, const struct cm_rej *r)
{
	put_be32(m + 0, r->local_comm_id);
	put_be32(m + 4, r->remote_comm_id);
	m[8] = (uint8_t)(r->msg_rejected << 6);
	m[9] = (uint8_t)(MIN(r->ari_len, 72) << 1);
	put_be16(m + 10, r->reason);
	memcpy(m + 12, r->ari, 72);
	memcpy(m + 84, r->pdata, CM_REJ_PDATA);
}

void
cm_rej_parse(const uint8_t *m, struct cm_rej *r)
{
	r->local_comm_id = get_be32(m + 0);
	r->remote_comm_id = get_be32(m + 4);
	r->msg_rejected = m[8] >> 6;
	r->ari_len = MIN(m[9] >> 1, 72);
	r->reason = get_be16(m + 10);
	memcpy(r->ari, m + 12, 72);
	memcpy(r->pdata, m + 84, CM_REJ_PDATA);
}

void
cm_mra_pack(uint8_t *m, const struct cm_mra *r)
{
	put_be32(m + 0, r->local_comm_id);
	put_be32(m + 4, r->remote_comm_id);
	m[8] = (uint8_t)(r->msg_mraed << 6);
	m[9] = (uint8_t)(r->service_timeout << 3);
}

void
cm_mra_parse(const uint8_t *m, struct cm_mra *r)
{
	r->local_comm_id = get_be32(m + 0);
	r->remote_comm_id = get_be32(m + 4);
	r->msg_mraed = m[8] >> 6;
	r->service_timeout = m[9] >> 3;
}

void
cm_simple_pack(uint8_t *m, uint16_t attr, const struct cm_simple *r)
{
	put_be32(m + 0, r->local_comm_id);
	put_be32(m + 4, r->remote_comm_id);
	if (attr == CM_ATTR_DREQ) {
		put_be24(m + 8, r->remote_qpn);
		memcpy(m + 12, r->pdata, CM_DREQ_PDATA);
	} else {
		memcpy(m + 8, r->pdata, CM_RTU_PDATA);
	}
}

void
cm_simple_parse(const uint8_t *m, uint16_t attr, struct cm_simple *r)
{
	r->local_comm_id = get_be32(m + 0);
	r->remote_comm_id = get_be32(m + 4);
	memset(r->pdata, 0, sizeof(r->pdata));
	if (attr == CM_ATTR_DREQ) {
		r->remote_qpn = get_be24(m + 8);
		memcpy(r->pdata, m + 12, CM_DREQ_PDATA);
	} else {
		r->remote_qpn = 0;
		memcpy(r->pdata, m + 8, CM_RTU_PDATA);
	}
}

void
cm_sidr_req_pack(uint8_t *m, const struct cm_sidr_req *r)
{
	put_be32(m + 0, r->request_id);
	put_be16(m + 4, r->pkey);
	put_be64(m + 8, r->service_id);
	memcpy(m + 16, r->pdata, CM_SIDR_REQ_PDATA);
}

void
cm_sidr_req_parse(const uint8_t *m, struct cm_sidr_req *r)
{
	r->request_id = get_be32(m + 0);
	r->pkey = get_be16(m + 4);
	r->service_id = get_be64(m + 8);
	memcpy(r->pdata, m + 16, CM_SIDR_REQ_PDATA);
}

void
cm_sidr_rep_pack(uint8_t *m, const struct cm_sidr_rep *r)
{
	put_be32(m + 0, r->request_id);
	m[4] = r->status;
	put_be24(m + 8, r->qpn);
	put_be64(m + 12, r->service_id);
	put_be32(m + 20, r->qkey);
	memcpy(m + 96, r->pdata, CM_SIDR_REP_PDATA);
}

void
cm_sidr_rep_parse(const uint8_t *m, struct cm_sidr_rep *r)
{
	r->request_id = get_be32(m + 0);
	r->status = m[4];
	r->qpn = get_be24(m + 8);
	r->service_id = get_be64(m + 12);
	r->qkey = get_be32(m + 20);
	memcpy(r->pdata, m + 96, CM_SIDR_REP_PDATA);
}

void
cm_ip_hdr_pack(uint8_t *p, const struct cm_ip_hdr *h)
{
	p[0] = 0;
	p[1] = (uint8_t)(h->ip_version << 4);
	put_be16(p + 2, h->port);
	memcpy(p + 4, h->src, 16);
	memcpy(p + 20, h->dst, 16);
}

int
cm_ip_hdr_parse(const uint8_t *p, struct cm_ip_hdr *h)
{
	if (p[0] != 0 || ((p[1] >> 4) != 4 && (p[1] >> 4) != 6))
		return -1;
	h->ip_version = p[1] >> 4;
	h->port = get_be16(p + 2);
	memcpy(h->src, p + 4, 16);
	memcpy(h->dst, p + 20, 16);
	return 0;
}

uint32_t
cm_timeout_ms(uint8_t t)
{
	uint64_t us;

	if (t > 31)
		t = 31;
	us = (4096ull << t) / 1000;
	return us < 1000 ? 1 : (uint32_t)(us / 1000);
}
