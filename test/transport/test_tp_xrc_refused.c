/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * test_tp_xrc's cases on what is refused: an SRQ that does not exist, one
 * of another domain, an rkey of another PD than the SRQ's (NAKed, both
 * halves in ERR); frames of the wrong transport or direction (dropped).
 */

#include "tp_xrc.h"

/* One request the target refuses for its XRCETH or its key. */
static void
refusal(const char *what, int which, enum ibv_wc_status want, uint8_t nak)
{
	struct xpair p;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge s;
	struct ibv_wc wc;
	struct droce_tp_stats st;
	uint32_t srqn;

	xpair_make(&p);
	xpair_connect(&p);
	memset(&wire, 0, sizeof(wire));
	L.filter = watch;
	srq_post(&p, p.a, 0, 64, 1);
	srq_post(&p, p.b, 64, 64, 2);
	srqn = which == 0 ? 4000 : which == 1 ? droce_srq_num(p.b) :
		droce_srq_num(p.a);
	pattern(p.sb.p, 64, 3);
	s = sge_of(&p.sb, 0, 64);
	wr_init(&wr, &s, which == 2 ? IBV_WR_RDMA_WRITE : IBV_WR_SEND, 9,
		srqn);
	/* which 2: a key of another PD than the SRQ's */
	wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)p.ob.p;
	wr.wr.rdma.rkey = droce_mr_rkey(p.ob.mr);
	CHECK_EQF(droce_qp_post_send(p.ini, &wr, &bad), 0, "%s: post", what);
	CHECK_EQF(wait_cq(p.scq, &wc), 0, "%s: completion", what);
	CHECK_EQF(wc.status, want, "%s: status", what);
	fl_run_idle(&L, 20000000);
	CHECK_EQF(wire.naks, 1, "%s: one NAK", what);
	CHECK_EQF(wire.last_nak, nak, "%s: its syndrome", what);
	CHECK_EQF(droce_qp_state(p.ini), IBV_QPS_ERR, "%s: XRC_SEND ERR", what);
	CHECK_EQF(droce_qp_state(p.tgt), IBV_QPS_ERR, "%s: XRC_RECV ERR", what);
	CHECK_EQF(droce_cq_poll(p.rcq, &wc, 1), 0, "%s: nothing received",
		what);
	CHECK(pattern_ok(p.sb.p, 64, 3) && p.rb.p[0] == 0 && p.rb.p[64] == 0 &&
		p.ob.p[0] == 0, "%s: no byte placed", what);
	droce_qp_stats(p.tgt, &st);
	CHECK_EQF(st.xrc_bad_srq, which < 2, "%s: counted", what);
	xpair_free(&p);
}

void
test_refusals(void)
{
	refusal("no such SRQ", 0, IBV_WC_REM_INV_REQ_ERR,
		DROCE_AETH_NAK_INV_REQ);
	refusal("SRQ of another XRC domain", 1, IBV_WC_REM_ACCESS_ERR,
		DROCE_AETH_NAK_REM_ACC);
	refusal("rkey of another PD than the SRQ's", 2, IBV_WC_REM_ACCESS_ERR,
		DROCE_AETH_NAK_REM_ACC);
}

/* A frame from side 0 to qpn with opcode op (and an XRCETH naming
 * srqn where op has one), handed to side 'to' directly. */
static void
inject(int to, uint32_t qpn, uint8_t op, uint32_t srqn, uint32_t psn)
{
	static uint8_t payload[64], f[512];
	struct fl_end *a = &L.end[!to], *b = &L.end[to];
	const uint8_t *fp = f;
	struct droce_pkt pk;
	uint32_t len;
	int n;

	memset(&pk, 0, sizeof(pk));
	memcpy(pk.dst_mac, b->mac, 6);
	memcpy(pk.src_mac, a->mac, 6);
	pk.ip_ver = 4;
	pk.ttl = 64;
	droce_gid_from_ipv4(pk.sgid, a->ip);
	droce_gid_from_ipv4(pk.dgid, b->ip);
	pk.udp_sport = 0xc000;
	pk.udp_dport = DROCE_ROCE_UDP_PORT;
	pk.pkey = 0xffff;
	pk.opcode = op;
	pk.dqpn = qpn;
	pk.psn = psn;
	pk.ackreq = 1;
	pk.xrceth_srqn = srqn;
	pk.aeth_syndrome = DROCE_AETH_ACK_NOCREDIT;
	memset(payload, 0x77, sizeof(payload));
	if (droce_opcode_info[op].flags & DROCE_OPF_PAYLOAD) {
		pk.payload = payload;
		pk.payload_len = sizeof(payload);
	}
	n = droce_wire_build(&pk, f, sizeof(f));
	CHECK(n > 0, "build opcode %#x", op);
	len = (uint32_t)n;
	droce_tp_rx_burst(L.end[to].q, &fp, &len, 1, L.now);
}

/* Frames of the wrong transport or direction reach neither half. */
void
test_wrong_frames(void)
{
	struct xpair p;
	struct droce_tp_stats q0, q1, st;
	struct ibv_wc wc;
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr init;
	uint32_t srqn;

	xpair_make(&p);
	xpair_connect(&p);
	srqn = droce_srq_num(p.a);
	srq_post(&p, p.a, 0, 256, 1);
	droce_tp_queue_stats(L.end[1].q, &q1);
	droce_tp_queue_stats(L.end[0].q, &q0);
	droce_qp_query(p.tgt, &a, 0, &init);
	/* RC's SEND to the XRC_RECV QP at its expected PSN: no XRCETH */
	inject(1, droce_qp_num(p.tgt), DROCE_OP_RC_SEND_ONLY, 0, a.rq_psn);
	/* an XRC response to the XRC_RECV QP */
	inject(1, droce_qp_num(p.tgt), DROCE_OP_XRC_ACK, 0, a.rq_psn);
	/* an XRC request to the XRC_SEND QP */
	droce_qp_query(p.ini, &a, 0, &init);
	inject(0, droce_qp_num(p.ini), DROCE_OP_XRC_SEND_ONLY, srqn, a.rq_psn);
	/* RC's ACK to the XRC_SEND QP */
	inject(0, droce_qp_num(p.ini), DROCE_OP_RC_ACK, 0, a.sq_psn);
	droce_tp_queue_stats(L.end[1].q, &st);
	CHECK_EQF(st.rx_drop_noqp - q1.rx_drop_noqp, 2,
		"RC request and XRC response to XRC_RECV dropped, counted");
	droce_tp_queue_stats(L.end[0].q, &st);
	CHECK_EQF(st.rx_drop_noqp - q0.rx_drop_noqp, 2,
		"XRC request and RC ACK to XRC_SEND dropped, counted");
	fl_run_idle(&L, 10000000);
	CHECK_EQF(droce_cq_poll(p.rcq, &wc, 1), 0, "nothing received");
	CHECK_EQF(droce_cq_poll(p.scq, &wc, 1), 0, "nothing completed");
	CHECK_EQF(droce_qp_state(p.ini), IBV_QPS_RTS, "XRC_SEND RTS");
	CHECK_EQF(droce_qp_state(p.tgt), IBV_QPS_RTS, "XRC_RECV RTS");
	CHECK_EQF(p.rb.p[0], 0, "no byte placed");
	xpair_free(&p);
}
