/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * The work-request opcode table (tp_wr_opcode.c) against the packet
 * opcode table (lib/wire): every packet a row names exists, is a request,
 * sits where the row puts it in a message and is of the row's kind; each
 * row is one kind; the verbs builders each QP type takes.
 */

#include "check.h"
#include "tp_internal.h"

static const struct {
	enum ibv_qp_type type;
	uint8_t transport;
} types[] = {
	{ IBV_QPT_RC, DROCE_TRANSPORT_RC },
	{ IBV_QPT_UC, DROCE_TRANSPORT_UC },
	{ IBV_QPT_UD, DROCE_TRANSPORT_UD },
	{ IBV_QPT_XRC_SEND, DROCE_TRANSPORT_XRC },
};

/* enum tp_seg -> the packet's place in its message */
static const unsigned int seg_place[TP_SEG_NUM] = {
	[TP_SEG_MIDDLE] = DROCE_OPF_MIDDLE,
	[TP_SEG_FIRST] = DROCE_OPF_START,
	[TP_SEG_LAST] = DROCE_OPF_END,
	[TP_SEG_ONLY] = DROCE_OPF_START | DROCE_OPF_END,
};

static void
check_packet(unsigned int op, const struct tp_wr_opcode_info *wi,
		uint8_t transport, unsigned int seg)
{
	const struct droce_opcode_info *oi =
		&droce_opcode_info[(uint8_t)(wi->pkt[seg] + transport)];
	const unsigned int place = DROCE_OPF_START | DROCE_OPF_MIDDLE |
		DROCE_OPF_END;

	CHECK(oi->valid && (oi->flags & DROCE_OPF_REQ),
		"WR %u transport %#x seg %u: no such request", op, transport,
		seg);
	if (!oi->valid)
		return;
	CHECK((oi->flags & place) == seg_place[seg],
		"WR %u: %s in the wrong place", op, oi->name);
	CHECK(!(wi->flags & TP_WRF_SEND) == !(oi->flags & DROCE_OPF_SEND) &&
		!(wi->flags & TP_WRF_WRITE) == !(oi->flags & DROCE_OPF_WRITE) &&
		!(wi->flags & TP_WRF_READ) == !(oi->flags & DROCE_OPF_READ) &&
		!(wi->flags & TP_WRF_ATOMIC) ==
			!(oi->flags & DROCE_OPF_ATOMIC) &&
		!(wi->flags & TP_WRF_ATOMIC_WRITE) ==
			!(oi->flags & DROCE_OPF_ATOMIC_WRITE) &&
		!(wi->flags & TP_WRF_FLUSH) == !(oi->flags & DROCE_OPF_FLUSH),
		"WR %u: %s of another kind", op, oi->name);
	if (seg_place[seg] & DROCE_OPF_END)
		CHECK(!(wi->flags & TP_WRF_RWR) == !(oi->flags & DROCE_OPF_RWR),
			"WR %u: %s and the receive WR disagree", op, oi->name);
}

static void
check_row(unsigned int op)
{
	const struct tp_wr_opcode_info *wi = &tp_wr_opcode_info[op];
	const unsigned int kinds = TP_WRF_SEND | TP_WRF_WRITE | TP_WRF_READ |
		TP_WRF_ATOMIC | TP_WRF_LOCAL | TP_WRF_ATOMIC_WRITE |
		TP_WRF_FLUSH;
	unsigned int t, seg, k = wi->flags & kinds;

	if (wi->qp_types == 0)
		return;
	CHECK(k != 0 && (k & (k - 1)) == 0, "WR %u: one kind, not %#x", op, k);
	CHECK(!(wi->flags & TP_WRF_PAYLOAD) ==
		!(wi->flags & (TP_WRF_SEND | TP_WRF_WRITE)),
		"WR %u: payload and kind disagree", op);
	CHECK(wi->send_op != 0, "WR %u: no ibv_wr_* builder", op);
	for (t = 0; t < TP_ARRAY_SIZE(types); t++) {
		if (tp_wr_opcode(types[t].type, op) == NULL ||
				(wi->flags & TP_WRF_LOCAL))
			continue;
		/* IBTA has no UC SEND with invalidate (tp_wr_opcode.c) */
		if (types[t].type == IBV_QPT_UC && (wi->flags & TP_WRF_INV))
			continue;
		for (seg = 0; seg < TP_SEG_NUM; seg++)
			if (seg == TP_SEG_ONLY || ((wi->flags &
					TP_WRF_PAYLOAD) &&
					types[t].type != IBV_QPT_UD))
				check_packet(op, wi, types[t].transport, seg);
	}
}

int
main(void)
{
	const uint64_t uc = IBV_QP_EX_WITH_SEND |
		IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_WRITE |
		IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_BIND_MW |
		IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_SEND_WITH_INV;
	unsigned int op;

	for (op = 0; op < TP_WR_OPCODE_NUM; op++)
		check_row(op);
	CHECK_EQ(droce_qp_type_send_ops(IBV_QPT_RC), uc |
		IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
		IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |
		IBV_QP_EX_WITH_ATOMIC_WRITE | DROCE_QP_EX_WITH_FLUSH,
		"RC builders");
	CHECK_EQ(droce_qp_type_send_ops(IBV_QPT_UC), uc, "UC builders");
	CHECK_EQ(droce_qp_type_send_ops(IBV_QPT_UD), IBV_QP_EX_WITH_SEND |
		IBV_QP_EX_WITH_SEND_WITH_IMM, "UD builders");
	/* XRC_SEND: RC's but ATOMIC WRITE; XRC_RECV sends nothing */
	CHECK_EQ(droce_qp_type_send_ops(IBV_QPT_XRC_SEND), uc |
		IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
		IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD, "XRC_SEND builders");
	CHECK_EQ(droce_qp_type_send_ops(IBV_QPT_XRC_RECV), 0, "XRC_RECV");
	/* RAW_PACKET: whole frames, and TSO (tp_raw_tx.c) */
	CHECK_EQ(droce_qp_type_send_ops(IBV_QPT_RAW_PACKET),
		IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_TSO, "raw");
	CHECK_EQ(droce_qp_type_send_ops(IBV_QPT_DRIVER), 0, "driver");
	CHECK(tp_wr_opcode(IBV_QPT_RC, IBV_WR_TSO) == NULL &&
		tp_wr_opcode(IBV_QPT_UD, IBV_WR_TSO) == NULL &&
		tp_wr_opcode(IBV_QPT_RAW_PACKET, IBV_WR_SEND_WITH_IMM) == NULL &&
		tp_wr_opcode(IBV_QPT_RC, (enum ibv_wr_opcode)200) == NULL,
		"opcodes no QP takes");
	/* IBTA 1.5: ATOMIC WRITE is RC's alone */
	CHECK(tp_wr_opcode(IBV_QPT_RC, IBV_WR_ATOMIC_WRITE) != NULL &&
		tp_wr_opcode(IBV_QPT_UC, IBV_WR_ATOMIC_WRITE) == NULL &&
		tp_wr_opcode(IBV_QPT_UD, IBV_WR_ATOMIC_WRITE) == NULL,
		"ATOMIC_WRITE on RC only");
	CHECK(tp_wr_opcode(IBV_QPT_RC, DROCE_WR_FLUSH) != NULL &&
		tp_wr_opcode(IBV_QPT_UC, DROCE_WR_FLUSH) == NULL &&
		tp_wr_opcode(IBV_QPT_UD, DROCE_WR_FLUSH) == NULL &&
		tp_wr_opcode_info[DROCE_WR_FLUSH].wc_opcode == DROCE_WC_FLUSH,
		"FLUSH on RC only, completing as IBV_WC_FLUSH");
	return check_report("transport_wr_opcode_table");
}
