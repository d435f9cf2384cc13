/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

#ifndef WIRE_CM_MAD_H
#define WIRE_CM_MAD_H

/*
 * The IB connection manager's MADs (IBTA vol. 1 ch. 12) and rdma_cm's IP
 * private-data header, in host-order structs: packing and parsing only,
 * no state. A MAD is 256 bytes: a 24-byte common header, then the
 * message. Offsets below are from the message's start (MAD byte 24).
 */

#include <stdbool.h>
#include <stdint.h>

#define CM_MAD_LEN 256
#define CM_MAD_HDR 24
#define CM_MSG_LEN (CM_MAD_LEN - CM_MAD_HDR)
#define CM_QKEY 0x80010000u
#define CM_CLASS 0x07
#define CM_CLASS_VERSION 2
#define CM_METHOD_SEND 0x03

enum cm_attr {
	CM_ATTR_REQ = 0x10,
	CM_ATTR_MRA = 0x11,
	CM_ATTR_REJ = 0x12,
	CM_ATTR_REP = 0x13,
	CM_ATTR_RTU = 0x14,
	CM_ATTR_DREQ = 0x15,
	CM_ATTR_DREP = 0x16,
	CM_ATTR_SIDR_REQ = 0x17,
	CM_ATTR_SIDR_REP = 0x18,
};

/* Private data each message carries (IBTA table 99 and friends) */
enum {
	CM_REQ_PDATA = 92,
	CM_REP_PDATA = 196,
	CM_REJ_PDATA = 148,
	CM_MRA_PDATA = 222,
	CM_RTU_PDATA = 224,
	CM_DREQ_PDATA = 220,
	CM_DREP_PDATA = 224,
	CM_SIDR_REQ_PDATA = 216,
	CM_SIDR_REP_PDATA = 136,
};

/* REJ reasons droce sends or names (ib_cm.h's numbering) */
enum cm_rej_reason {
	CM_REJ_NO_QP = 1,
	CM_REJ_NO_RESOURCES = 3,
	CM_REJ_TIMEOUT = 4,
	CM_REJ_INVALID_COMM_ID = 6,
	CM_REJ_INVALID_SERVICE_ID = 8,
	CM_REJ_INVALID_TRANSPORT_TYPE = 9,
	CM_REJ_STALE_CONN = 10,
	CM_REJ_INVALID_GID = 12,
	CM_REJ_CONSUMER_DEFINED = 28,
};

/* What a REJ or MRA refers to */
enum cm_msg_ref {
	CM_REF_REQ = 0,
	CM_REF_REP = 1,
	CM_REF_OTHER = 2,
};

enum cm_sidr_status {
	CM_SIDR_SUCCESS = 0,
	CM_SIDR_UNSUPPORTED = 1,
	CM_SIDR_REJECT = 2,
	CM_SIDR_NO_QP = 3,
};

struct cm_mad_hdr {
	uint8_t method;
	uint16_t status;
	uint64_t tid;
	uint16_t attr_id;
	uint32_t attr_mod;
};

struct cm_req {
	uint32_t local_comm_id;
	uint64_t service_id;
	uint64_t ca_guid;
	uint32_t qkey;
	uint32_t qpn;
	uint8_t resp_res;
	uint8_t init_depth;
	uint8_t remote_cm_timeout;
	uint8_t transport;		/* 0 RC, 1 UC, 3 XRC (with ext) */
	bool e2e_fc;
	uint32_t psn;
	uint8_t local_cm_timeout;
	uint8_t retry_count;
	uint16_t pkey;
	uint8_t mtu;			/* enum ibv_mtu */
	uint8_t rnr_retry;
	uint8_t max_cm_retries;
	bool srq;
	uint8_t sgid[16], dgid[16];	/* the sender's, the receiver's */
	uint32_t flow_label;
	uint8_t rate;
	uint8_t traffic_class;
	uint8_t hop_limit;
	uint8_t sl;
	uint8_t ack_timeout;
	uint8_t pdata[CM_REQ_PDATA];
};

struct cm_rep {
	uint32_t local_comm_id, remote_comm_id;
	uint32_t qkey;
	uint32_t qpn;
	uint32_t psn;
	uint8_t resp_res;
	uint8_t init_depth;
	uint8_t target_ack_delay;
	uint8_t failover;
	bool e2e_fc;
	uint8_t rnr_retry;
	bool srq;
	uint64_t ca_guid;
	uint8_t pdata[CM_REP_PDATA];
};

struct cm_rej {
	uint32_t local_comm_id, remote_comm_id;
	uint8_t msg_rejected;		/* enum cm_msg_ref */
	uint8_t ari_len;
	uint16_t reason;
	uint8_t ari[72];
	uint8_t pdata[CM_REJ_PDATA];
};

struct cm_mra {
	uint32_t local_comm_id, remote_comm_id;
	uint8_t msg_mraed;		/* enum cm_msg_ref */
	uint8_t service_timeout;
};

/* RTU, DREQ and DREP: the comm IDs, DREQ's remote QPN, private data */
struct cm_simple {
	uint32_t local_comm_id, remote_comm_id;
	uint32_t remote_qpn;		/* DREQ only */
	uint8_t pdata[CM_RTU_PDATA];
};

struct cm_sidr_req {
	uint32_t request_id;
	uint16_t pkey;
	uint64_t service_id;
	uint8_t pdata[CM_SIDR_REQ_PDATA];
};

struct cm_sidr_rep {
	uint32_t request_id;
	uint8_t status;
	uint32_t qpn;
	uint64_t service_id;
	uint32_t qkey;
	uint8_t pdata[CM_SIDR_REP_PDATA];
};

/*
 * Who a CM message names, for those who route or police MADs without a
 * CM of their own (droced's QP1): the ID its sender calls its own (the
 * local communication ID; a SIDR REQ's request ID), the ID naming the
 * side it goes to (the remote communication ID; a SIDR REP's request
 * ID), and the service ID of a REQ or SIDR REQ or SIDR REP. 0 where the
 * message has none (a REQ names no remote side, a SIDR REP no sender's).
 * attr: a CM attribute cm_mad_parse_hdr took.
 */
uint32_t cm_msg_sender_id(uint16_t attr, const uint8_t *msg);
uint32_t cm_msg_target_id(uint16_t attr, const uint8_t *msg);
uint64_t cm_msg_service_id(uint16_t attr, const uint8_t *msg);

/* The MAD header: 0, or -1 when it is not a CM Send this CM answers. */
int cm_mad_parse_hdr(const uint8_t *mad, uint32_t len, struct cm_mad_hdr *h);
void cm_mad_put_hdr(uint8_t *mad, uint16_t attr_id, uint64_t tid);

void cm_req_pack(uint8_t *msg, const struct cm_req *r);
void cm_req_parse(const uint8_t *msg, struct cm_req *r);
void cm_rep_pack(uint8_t *msg, const struct cm_rep *r);
void cm_rep_parse(const uint8_t *msg, struct cm_rep *r);
void cm_rej_pack(uint8_t *msg, const struct cm_rej *r);
void cm_rej_parse(const uint8_t *msg, struct cm_rej *r);
void cm_mra_pack(uint8_t *msg, const struct cm_mra *r);
void cm_mra_parse(const uint8_t *msg, struct cm_mra *r);
/* attr: RTU, DREQ or DREP */
void cm_simple_pack(uint8_t *msg, uint16_t attr, const struct cm_simple *r);
void cm_simple_parse(const uint8_t *msg, uint16_t attr, struct cm_simple *r);
void cm_sidr_req_pack(uint8_t *msg, const struct cm_sidr_req *r);
void cm_sidr_req_parse(const uint8_t *msg, struct cm_sidr_req *r);
void cm_sidr_rep_pack(uint8_t *msg, const struct cm_sidr_rep *r);
void cm_sidr_rep_parse(const uint8_t *msg, struct cm_sidr_rep *r);

/*
 * rdma_cm's header at the start of a REQ's (and SIDR REQ's) private
 * data: version 0, the IP version, the active side's port, then the
 * source and destination addresses (IPv4 in the last 4 of 16 bytes).
 */
#define CM_IP_HDR_LEN 36
struct cm_ip_hdr {
	uint8_t ip_version;		/* 4 or 6 */
	uint16_t port;			/* the active side's */
	uint8_t src[16], dst[16];	/* IPv6, or IPv4 in bytes 12..15 */
};

void cm_ip_hdr_pack(uint8_t *p, const struct cm_ip_hdr *h);
/* 0, or -1 for a version or IP version rdma_cm does not send */
int cm_ip_hdr_parse(const uint8_t *p, struct cm_ip_hdr *h);

/* 4.096 us * 2^t in milliseconds, at least 1 */
uint32_t cm_timeout_ms(uint8_t t);

#endif
