/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

#ifndef TP_RAW_H
#define TP_RAW_H

#include "tp_objects.h"

/* ---- RAW_PACKET QPs (tp_raw.c, tp_raw_tx.c) ---- */

#define TP_FLOW_CMP_MAX		16

/* Where a flow's compare looks: the headers as tp_raw_hdrs finds them. */
enum tp_flow_layer {
	TP_FL_L2 = 0,	/* from the frame's first byte */
	TP_FL_VLAN,	/* the 802.1Q TCI: the frame must have one */
	TP_FL_ETYPE,	/* the EtherType after any VLAN tag */
	TP_FL_L3,
	TP_FL_L4,
};

/* Bytes [off, off + len) of a layer, under a mask. */
struct tp_flow_cmp {
	uint8_t layer;
	uint8_t off;
	uint8_t len;
	uint8_t val[16];
	uint8_t mask[16];
};

struct droce_flow {
	struct droce_qp *qp;
	struct droce_flow *next;	/* the QP's, by priority */
	uint16_t priority;
	uint8_t l3;		/* 0: any, 4 or 6 */
	uint8_t l4;		/* 0: any, else the IP protocol */
	uint32_t ncmp;
	struct tp_flow_cmp cmp[TP_FLOW_CMP_MAX];
};

/* Where a frame's headers are: what flows match on. */
struct tp_raw_hdrs {
	uint32_t l3off, l4off;
	uint16_t etype;
	uint8_t vlan;		/* 1: an 802.1Q tag at byte 12 */
	uint8_t l3;		/* 0, 4 or 6 */
	uint8_t l4;		/* IP protocol; 0: none (or a fragment) */
};

/* A send WQE's TSO fields (its headers are in tp_raw.hdr). */
struct tp_raw_wqe {
	uint16_t hdr_sz;
	uint16_t mss;
};

struct tp_raw {
	uint8_t *hdr;		/* DROCE_RAW_TSO_HDR_MAX per send WQE */
	struct tp_raw_wqe *w;	/* per send WQE */
	struct droce_flow *flows;
	uint32_t nb_flows;
	/* packet pacing (IBV_QP_RATE_LIMIT): 0, or kbit/s and when the
	 * next frame may leave */
	uint32_t rate_kbps;
	uint64_t next_ns;
};

/* tp_raw.c */
int tp_raw_init(struct droce_qp *qp);
void tp_raw_free(struct droce_qp *qp);
/* A frame for the queue's RAW_PACKET QPs: 1 if taken (not RoCEv2). */
int tp_raw_rx(struct droce_tp_queue *q, const uint8_t *frame, uint32_t len);
/* 0 if the headers are Ethernet / IPv4 or IPv6 / at least that long. */
int tp_raw_parse(const uint8_t *f, uint32_t len, struct tp_raw_hdrs *h);

/* tp_raw_tx.c */
/* ibv_post_send's checks for a RAW_PACKET QP's WR: 0 or an errno. */
int tp_raw_check_wr(struct droce_qp *qp, const struct ibv_send_wr *wr,
		uint64_t len);
void tp_raw_fill(struct droce_qp *qp, struct tp_swqe *w,
		const struct ibv_send_wr *wr);
int tp_raw_progress(struct droce_qp *qp);
/* The one's-complement sum of the IPv4 header and the TCP/UDP checksum
 * of a frame are right (IBV_WC_IP_CSUM_OK). */
int tp_raw_csum_ok(const uint8_t *f, uint32_t len,
		const struct tp_raw_hdrs *h);

#endif /* TP_RAW_H */
