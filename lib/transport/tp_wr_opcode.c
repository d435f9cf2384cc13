/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * Work-request opcodes: one row per IBV_WR_* with the QP types that accept
 * it (ibv_post_send(3)), its completion opcode, its packets' BTH opcodes
 * and what kind of request it is. Posting, the requester and the completer
 * look facts up here instead of switching on the opcode, so a new opcode
 * (XRC's) is one row. The packet opcodes are RC's:
 * UC and UD add their transport (IBTA 9.2, table 38).
 */

#include <assert.h>

#include "tp_internal.h"

/* a send WQE keeps its opcode in a byte and the flags in 16 bits */
static_assert(TP_WR_OPCODE_NUM <= 256, "WR opcode does not fit a byte");
static_assert(TP_WRF_FLUSH < 1u << 16, "WR flags do not fit 16 bits");

#define QPT(t)	(1u << IBV_QPT_##t)
#define PKT(first, middle, last, only) { \
	[TP_SEG_FIRST] = DROCE_OP_RC_##first, \
	[TP_SEG_MIDDLE] = DROCE_OP_RC_##middle, \
	[TP_SEG_LAST] = DROCE_OP_RC_##last, \
	[TP_SEG_ONLY] = DROCE_OP_RC_##only, \
}
/* a request that is one packet whatever its length */
#define PKT1(only)	{ [TP_SEG_ONLY] = DROCE_OP_RC_##only }

/*
 * An XRC_SEND QP takes what RC takes but ATOMIC WRITE (IBTA defines no
 * XRC opcode for it); its packets are RC's with the XRC transport bits.
 */
const struct tp_wr_opcode_info tp_wr_opcode_info[TP_WR_OPCODE_NUM] = {
	[IBV_WR_RDMA_WRITE] = {
		.qp_types = QPT(RC) | QPT(UC) | QPT(XRC_SEND),
		.send_op = IBV_QP_EX_WITH_RDMA_WRITE,
		.wc_opcode = IBV_WC_RDMA_WRITE,
		.flags = TP_WRF_WRITE | TP_WRF_PAYLOAD,
		.pkt = PKT(WRITE_FIRST, WRITE_MIDDLE, WRITE_LAST, WRITE_ONLY),
	},
	[IBV_WR_RDMA_WRITE_WITH_IMM] = {
		.qp_types = QPT(RC) | QPT(UC) | QPT(XRC_SEND),
		.send_op = IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM,
		.wc_opcode = IBV_WC_RDMA_WRITE,
		.flags = TP_WRF_WRITE | TP_WRF_PAYLOAD | TP_WRF_RWR,
		.pkt = PKT(WRITE_FIRST, WRITE_MIDDLE, WRITE_LAST_IMM,
			WRITE_ONLY_IMM),
	},
	[IBV_WR_SEND] = {
		/* RAW_PACKET: one whole Ethernet frame (tp_raw_tx.c) */
		.qp_types = QPT(RC) | QPT(UC) | QPT(UD) | QPT(XRC_SEND) |
			QPT(RAW_PACKET),
		.send_op = IBV_QP_EX_WITH_SEND,
		.wc_opcode = IBV_WC_SEND,
		.flags = TP_WRF_SEND | TP_WRF_PAYLOAD | TP_WRF_RWR,
		.pkt = PKT(SEND_FIRST, SEND_MIDDLE, SEND_LAST, SEND_ONLY),
	},
	[IBV_WR_SEND_WITH_IMM] = {
		.qp_types = QPT(RC) | QPT(UC) | QPT(UD) | QPT(XRC_SEND),
		.send_op = IBV_QP_EX_WITH_SEND_WITH_IMM,
		.wc_opcode = IBV_WC_SEND,
		.flags = TP_WRF_SEND | TP_WRF_PAYLOAD | TP_WRF_RWR,
		.pkt = PKT(SEND_FIRST, SEND_MIDDLE, SEND_LAST_IMM,
			SEND_ONLY_IMM),
	},
	[IBV_WR_RDMA_READ] = {
		.qp_types = QPT(RC) | QPT(XRC_SEND),
		.send_op = IBV_QP_EX_WITH_RDMA_READ,
		.wc_opcode = IBV_WC_RDMA_READ,
		.flags = TP_WRF_READ,
		.pkt = PKT1(READ_REQ),
	},
	[IBV_WR_ATOMIC_CMP_AND_SWP] = {
		.qp_types = QPT(RC) | QPT(XRC_SEND),
		.send_op = IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP,
		.wc_opcode = IBV_WC_COMP_SWAP,
		.flags = TP_WRF_ATOMIC,
		.pkt = PKT1(CMP_SWAP),
	},
	[IBV_WR_ATOMIC_FETCH_AND_ADD] = {
		.qp_types = QPT(RC) | QPT(XRC_SEND),
		.send_op = IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD,
		.wc_opcode = IBV_WC_FETCH_ADD,
		.flags = TP_WRF_ATOMIC,
		.pkt = PKT1(FETCH_ADD),
	},
	[IBV_WR_LOCAL_INV] = {
		.qp_types = QPT(RC) | QPT(UC) | QPT(XRC_SEND),
		.send_op = IBV_QP_EX_WITH_LOCAL_INV,
		.wc_opcode = IBV_WC_LOCAL_INV,
		.flags = TP_WRF_LOCAL | TP_WRF_INV,
	},
	[IBV_WR_BIND_MW] = {
		.qp_types = QPT(RC) | QPT(UC) | QPT(XRC_SEND),
		.send_op = IBV_QP_EX_WITH_BIND_MW,
		.wc_opcode = IBV_WC_BIND_MW,
		.flags = TP_WRF_LOCAL,
	},
	[IBV_WR_SEND_WITH_INV] = {
		/* ibv_post_send(3) lets UC post it, but IBTA has no UC
		 * opcode for it: the header builder refuses RC's plus UC's
		 * transport and the WR completes with a local error */
		.qp_types = QPT(RC) | QPT(UC) | QPT(XRC_SEND),
		.send_op = IBV_QP_EX_WITH_SEND_WITH_INV,
		.wc_opcode = IBV_WC_SEND,
		.flags = TP_WRF_SEND | TP_WRF_PAYLOAD | TP_WRF_RWR | TP_WRF_INV,
		.pkt = PKT(SEND_FIRST, SEND_MIDDLE, SEND_LAST_INV,
			SEND_ONLY_INV),
	},
	[IBV_WR_ATOMIC_WRITE] = {
		/* IBTA 1.5: RC only; 8 bytes from the SGEs (or inline, or
		 * ibv_wr_atomic_write's pointer) to an aligned address */
		.qp_types = QPT(RC),
		.send_op = IBV_QP_EX_WITH_ATOMIC_WRITE,
		.wc_opcode = IBV_WC_ATOMIC_WRITE,
		.flags = TP_WRF_ATOMIC_WRITE,
		.pkt = PKT1(ATOMIC_WRITE),
	},
	[IBV_WR_TSO] = {
		/* headers and a payload cut into MSS segments (tp_raw_tx.c) */
		.qp_types = QPT(RAW_PACKET),
		.send_op = IBV_QP_EX_WITH_TSO,
		.wc_opcode = IBV_WC_TSO,
		.flags = TP_WRF_SEND | TP_WRF_PAYLOAD,
	},
	[DROCE_WR_FLUSH] = {
		/* IBTA 1.5: RC only; a range or a whole MR made visible or
		 * persistent, no local data (droce_qp_post_send's fields) */
		.qp_types = QPT(RC),
		.send_op = DROCE_QP_EX_WITH_FLUSH,
		.wc_opcode = DROCE_WC_FLUSH,
		.flags = TP_WRF_FLUSH,
		.pkt = PKT1(FLUSH),
	},
	/* DRIVER1: no QP type takes it */
};

uint64_t
droce_qp_type_send_ops(enum ibv_qp_type type)
{
	uint64_t ops = 0;
	unsigned int op;

	if ((unsigned int)type >= 16)	/* IBV_QPT_DRIVER: no row names it */
		return 0;
	for (op = 0; op < TP_WR_OPCODE_NUM; op++)
		if (tp_wr_opcode(type, (enum ibv_wr_opcode)op) != NULL)
			ops |= tp_wr_opcode_info[op].send_op;
	return ops;
}
