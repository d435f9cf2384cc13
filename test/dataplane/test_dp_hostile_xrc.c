/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * test_dp_hostile's XRC cases: the hostile peer sends XRC requests to an
 * XRC_RECV QP whose domain has an XRC SRQ (another domain has one too).
 * A good SEND is answered with an XRC ACK and lands in the SRQ's receive
 * buffer; an XRCETH naming no SRQ (Invalid Request NAK) or another
 * domain's (Remote Access NAK), and a WRITE with a bad R_Key, put the QP
 * in ERR with not one byte placed; an RC request to the XRC QP and an XRC
 * request whose frame ends where its XRCETH should be are dropped in
 * silence and counted.
 */

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "dp_hostile.h"

static struct droce_xrcd *xrcd[2];
static struct droce_srq *xsrq[2];
static struct droce_qp *tgt;

static void
tgt_connect(void)
{
	struct ibv_qp_attr a;
	struct droce_av av;
	struct ibv_wc wc;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RESET;
	CHECK_EQ(droce_qp_modify(tgt, &a, IBV_QP_STATE, NULL), 0, "XRC RESET");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	CHECK_EQ(droce_qp_modify(tgt, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
		IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, NULL), 0, "XRC INIT");
	memset(&a, 0, sizeof(a));
	memset(&av, 0, sizeof(av));
	memcpy(av.dmac, peer_mac, 6);
	gid4(av.dgid, PEER_IP);
	av.sgid_index = 1;
	av.hop_limit = 64;
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_256;
	a.dest_qp_num = PEER_QPN;
	a.rq_psn = RQ_PSN;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	CHECK_EQ(droce_qp_modify(tgt, &a, IBV_QP_STATE | IBV_QP_AV |
		IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER, &av), 0,
		"XRC RTR");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0x5000;
	a.timeout = 14;
	CHECK_EQ(droce_qp_modify(tgt, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
		IBV_QP_TIMEOUT, NULL), 0, "XRC RTS");
	epsn = RQ_PSN;
	while (droce_cq_poll(cq, &wc, 1) == 1)
		;
}

/* An XRC request from the peer naming SRQ number srqn. */
static void
xrc_pkt(struct droce_pkt *p, uint8_t opcode, uint32_t srqn,
		const uint8_t *payload, uint32_t plen)
{
	pkt_init(p, opcode, epsn);
	p->dqpn = droce_qp_num(tgt);
	p->xrceth_srqn = srqn;
	p->reth_va = (uintptr_t)mem;
	p->reth_rkey = droce_mr_rkey(mr);
	p->reth_len = plen;
	p->payload = payload;
	p->payload_len = plen;
}

/* droce's answer: an XRC ACK or NAK of this syndrome for this PSN. */
static void
expect_xrc_aeth(const char *what, uint8_t syndrome, uint32_t psn)
{
	struct droce_pkt a;

	if (!answer(&a, 2000000000ull)) {
		CHECK(0, "%s: no answer on the wire", what);
		return;
	}
	CHECK(a.opcode == DROCE_OP_XRC_ACK, "%s: answered with opcode 0x%x, "
		"want XRC ACKNOWLEDGE 0xb1", what, a.opcode);
	CHECK(a.aeth_syndrome == syndrome,
		"%s: syndrome 0x%02x, want 0x%02x", what, a.aeth_syndrome,
		syndrome);
	CHECK(a.psn == psn, "%s: PSN 0x%x, want 0x%x", what, a.psn, psn);
	CHECK_EQ(a.dqpn, PEER_QPN, "answer to the peer's QP");
}

static void
expect_tgt(const char *what, enum ibv_qp_state want)
{
	CHECK(droce_qp_state(tgt) == want, "%s: XRC_RECV QP state %d, want %d",
		what, (int)droce_qp_state(tgt), (int)want);
}

/* A request the target refuses: the NAK, ERR, nothing placed, counted. */
static void
case_xrc_nak(const char *what, struct droce_pkt *p, uint8_t nak,
		int bad_srq)
{
	struct droce_tp_stats b, e;
	uint8_t f[2048];

	droce_qp_stats(tgt, &b);
	inject(f, (uint32_t)build(p, f, sizeof(f)));
	expect_xrc_aeth(what, nak, p->psn);
	expect_tgt(what, IBV_QPS_ERR);
	expect_unchanged(what);
	droce_qp_stats(tgt, &e);
	CHECK_EQ(e.xrc_bad_srq - b.xrc_bad_srq, bad_srq, "xrc_bad_srq");
}

int
cases_xrc(int *checks)
{
	static const uint8_t data[64] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	struct ibv_srq_init_attr sa;
	struct ibv_qp_init_attr ia;
	struct droce_tp_stats b, e;
	struct droce_pkt p;
	struct ibv_wc wc;
	uint8_t f[2048];
	uint32_t len;
	int d, i;

	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = 16;
	sa.attr.max_sge = 1;
	for (d = 0; d < 2; d++) {
		xrcd[d] = droce_xrcd_alloc(dev);
		xsrq[d] = xrcd[d] ? droce_srq_create_xrc(pd, xrcd[d], cq, &sa) :
			NULL;
		CHECK(xsrq[d] != NULL, "XRC SRQ %d", d);
	}
	memset(&ia, 0, sizeof(ia));
	ia.qp_type = IBV_QPT_XRC_RECV;
	tgt = xrcd[0] ? droce_qp_create_xrc_recv(xrcd[0], 0, &ia) : NULL;
	CHECK(tgt != NULL, "XRC_RECV QP");
	if (xsrq[0] == NULL || xsrq[1] == NULL || tgt == NULL)
		goto out;
	/* receives into the buffers the RC cases use, posted once: only the
	 * good SEND below takes one */
	for (i = 0; i < NRECV; i++) {
		struct ibv_sge s = {
			.addr = (uintptr_t)(rmem + i * RECV_LEN),
			.length = RECV_LEN, .lkey = droce_mr_lkey(rmr),
		};
		struct ibv_recv_wr wr = { .wr_id = 100 + (uint64_t)i,
			.sg_list = &s, .num_sge = 1 }, *bad;

		CHECK_EQ(droce_srq_post_recv(xsrq[0], &wr, &bad), 0,
			"post to the SRQ");
	}

	/* a good XRC SEND: ACKed, in the SRQ's first buffer */
	tgt_connect();
	snapshot();
	xrc_pkt(&p, DROCE_OP_XRC_SEND_ONLY, droce_srq_num(xsrq[0]), data, 64);
	inject(f, (uint32_t)build(&p, f, sizeof(f)));
	expect_xrc_aeth("valid XRC SEND", DROCE_AETH_ACK_NOCREDIT, epsn);
	expect_tgt("valid XRC SEND", IBV_QPS_RTS);
	CHECK(droce_cq_poll(cq, &wc, 1) == 1 && wc.status == IBV_WC_SUCCESS &&
		wc.wr_id == 100 && wc.byte_len == 64 &&
		wc.qp_num == droce_qp_num(tgt),
		"valid XRC SEND: received from the SRQ");
	memcpy(rshadow, data, 64);
	expect_unchanged("valid XRC SEND");

	tgt_connect();
	snapshot();
	xrc_pkt(&p, DROCE_OP_XRC_SEND_ONLY, 0x4242, data, 64);
	case_xrc_nak("XRC SEND to no SRQ", &p, DROCE_AETH_NAK_INV_REQ, 1);
	tgt_connect();
	snapshot();
	xrc_pkt(&p, DROCE_OP_XRC_SEND_ONLY, 0, data, 64);
	case_xrc_nak("XRC SEND to SRQ 0", &p, DROCE_AETH_NAK_INV_REQ, 1);
	tgt_connect();
	snapshot();
	xrc_pkt(&p, DROCE_OP_XRC_SEND_ONLY, droce_srq_num(xsrq[1]), data, 64);
	case_xrc_nak("XRC SEND to another domain's SRQ", &p,
		DROCE_AETH_NAK_REM_ACC, 1);
	tgt_connect();
	snapshot();
	xrc_pkt(&p, DROCE_OP_XRC_WRITE_ONLY, droce_srq_num(xsrq[0]), data, 64);
	p.reth_rkey ^= 0x100;
	case_xrc_nak("XRC WRITE with a bad R_Key", &p, DROCE_AETH_NAK_REM_ACC,
		0);

	/* RC's SEND to the XRC QP: not its transport */
	tgt_connect();
	snapshot();
	b = stats();
	xrc_pkt(&p, DROCE_OP_RC_SEND_ONLY, 0, data, 64);
	inject(f, (uint32_t)build(&p, f, sizeof(f)));
	expect_silence("RC SEND to an XRC_RECV QP");
	expect_tgt("RC SEND to an XRC_RECV QP", IBV_QPS_RTS);
	expect_unchanged("RC SEND to an XRC_RECV QP");
	e = stats();
	CHECK_EQ(e.rx_drop_noqp - b.rx_drop_noqp, 1, "RC SEND: counted");
	/* an XRC SEND ONLY whose frame ends after the BTH: no XRCETH */
	b = stats();
	xrc_pkt(&p, DROCE_OP_RC_SEND_ONLY, 0, data, 0);
	len = (uint32_t)build(&p, f, sizeof(f));
	f[14 + 20 + 8] = DROCE_OP_XRC_SEND_ONLY;
	frame_fix_icrc(f, len);
	inject(f, len);
	expect_silence("XRC SEND without its XRCETH");
	expect_tgt("XRC SEND without its XRCETH", IBV_QPS_RTS);
	expect_unchanged("XRC SEND without its XRCETH");
	e = stats();
	CHECK_EQ(e.rx_drop_parse[-DROCE_WIRE_EEXTHDR] -
		b.rx_drop_parse[-DROCE_WIRE_EEXTHDR], 1,
		"XRC SEND without its XRCETH: counted");
out:
	if (tgt != NULL)
		CHECK_EQ(droce_qp_destroy(tgt), 0, "destroy XRC_RECV");
	for (d = 0; d < 2; d++) {
		if (xsrq[d] != NULL)
			CHECK_EQ(droce_srq_destroy(xsrq[d]), 0, "destroy SRQ");
		if (xrcd[d] != NULL)
			CHECK_EQ(droce_xrcd_free(xrcd[d]), 0, "free XRCD");
	}
	printf("test_dp_hostile: XRC cases: %d checks, %d failed\n",
		check_count, check_failures);
	*checks = check_count;
	return check_failures;
}
