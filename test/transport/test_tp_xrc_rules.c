/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * test_tp_xrc's cases on the rules: the attributes each half takes and
 * refuses, ibv_post_send and ibv_post_recv on either half, and what holds
 * what.
 */

#include "tp_xrc.h"

/* The attribute rules of each half. */
void
test_states(void)
{
	struct xpair p;
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr init;
	int base = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
		IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;

	xpair_make(&p);
	droce_qp_query(p.ini, &a, 0, &init);
	CHECK_EQF(init.qp_type, IBV_QPT_XRC_SEND, "query: XRC_SEND");
	droce_qp_query(p.tgt, &a, 0, &init);
	CHECK_EQF(init.qp_type, IBV_QPT_XRC_RECV, "query: XRC_RECV");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	CHECK_EQF(modify(p.tgt, &a, IBV_QP_STATE | IBV_QP_PORT), -EINVAL,
		"XRC_RECV INIT without pkey and access");
	CHECK_EQF(modify(p.tgt, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
		IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), 0, "XRC_RECV INIT");
	CHECK_EQF(modify(p.ini, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
		IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), 0, "XRC_SEND INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = 0x99;
	CHECK_EQF(modify(p.tgt, &a, base), -EINVAL,
		"XRC_RECV RTR without the responder's attributes");
	CHECK_EQF(modify(p.tgt, &a, base | IBV_QP_MAX_DEST_RD_ATOMIC |
		IBV_QP_MIN_RNR_TIMER), 0, "XRC_RECV RTR");
	CHECK_EQF(modify(p.ini, &a, base), 0,
		"XRC_SEND RTR with RC's less the responder's");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 10;
	CHECK_EQF(modify(p.ini, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
		IBV_QP_SQ_PSN), -EINVAL, "XRC_SEND RTS without retry counts");
	CHECK_EQF(modify(p.tgt, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
		IBV_QP_SQ_PSN), 0, "XRC_RECV RTS with timeout and SQ PSN");
	CHECK_EQF(modify(p.ini, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
		IBV_QP_SQ_PSN | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
		IBV_QP_MAX_QP_RD_ATOMIC), 0, "XRC_SEND RTS");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_SQD;
	CHECK_EQF(modify(p.ini, &a, IBV_QP_STATE | IBV_QP_QKEY), -EINVAL,
		"a Q_Key is UD's");
	xpair_free(&p);

	/* perftest sets RC's whole set on both halves: taken */
	xpair_make(&p);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	CHECK_EQF(modify(p.ini, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
		IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), 0, "XRC_SEND INIT");
	CHECK_EQF(modify(p.tgt, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
		IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), 0, "XRC_RECV INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = 0x99;
	CHECK_EQF(modify(p.ini, &a, base | IBV_QP_MAX_DEST_RD_ATOMIC |
		IBV_QP_MIN_RNR_TIMER), 0, "XRC_SEND RTR with RC's set");
	CHECK_EQF(modify(p.tgt, &a, base | IBV_QP_MAX_DEST_RD_ATOMIC |
		IBV_QP_MIN_RNR_TIMER), 0, "XRC_RECV RTR with RC's set");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	CHECK_EQF(modify(p.tgt, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
		IBV_QP_SQ_PSN | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
		IBV_QP_MAX_QP_RD_ATOMIC), 0, "XRC_RECV RTS with RC's set");
	xpair_free(&p);
}

/* ibv_post_send(3) / ibv_post_recv(3) on XRC QPs. */
void
test_posting(void)
{
	struct xpair p;
	struct ibv_send_wr wr[3], *bad;
	struct ibv_recv_wr rwr, *rbad;
	struct ibv_sge s = { 0 };
	struct ibv_wc wc;
	uint32_t srqn;

	xpair_make(&p);
	srqn = droce_srq_num(p.a);
	s = sge_of(&p.sb, 0, 8);
	wr_init(&wr[0], &s, IBV_WR_SEND, 1, srqn);
	CHECK_EQF(droce_qp_post_send(p.ini, &wr[0], &bad), EINVAL,
		"XRC_SEND in RESET");
	CHECK(bad == &wr[0], "bad_wr");
	xpair_connect(&p);
	srq_post(&p, p.a, 0, 64, 1);
	/* a SEND, then one naming no SRQ, then another SEND */
	wr_init(&wr[0], &s, IBV_WR_SEND, 10, srqn);
	wr_init(&wr[1], &s, IBV_WR_SEND, 11, 0);
	wr_init(&wr[2], &s, IBV_WR_SEND, 12, srqn);
	wr[0].next = &wr[1];
	wr[1].next = &wr[2];
	bad = NULL;
	CHECK_EQF(droce_qp_post_send(p.ini, &wr[0], &bad), EINVAL,
		"remote_srqn 0");
	CHECK(bad == &wr[1], "bad_wr at the one without remote_srqn");
	CHECK_EQF(wait_cq(p.scq, &wc), 0, "the one before it done");
	CHECK_EQF(wc.wr_id, 10, "wr_id");
	fl_run_idle(&L, 20000000);
	CHECK_EQF(droce_cq_poll(p.scq, &wc, 1), 0, "none after it posted");
	/* every remote operation needs it; the SRQ number has 24 bits */
	wr_init(&wr[0], &s, IBV_WR_RDMA_WRITE, 13, 0);
	CHECK_EQF(droce_qp_post_send(p.ini, &wr[0], &bad), EINVAL,
		"WRITE without remote_srqn");
	wr_init(&wr[0], &s, IBV_WR_RDMA_READ, 14, 0);
	CHECK_EQF(droce_qp_post_send(p.ini, &wr[0], &bad), EINVAL,
		"READ without remote_srqn");
	wr_init(&wr[0], &s, IBV_WR_SEND, 15, 1u << 24);
	CHECK_EQF(droce_qp_post_send(p.ini, &wr[0], &bad), EINVAL,
		"remote_srqn past 24 bits");
	/* ATOMIC WRITE has no XRC opcode */
	wr_init(&wr[0], &s, IBV_WR_ATOMIC_WRITE, 16, srqn);
	CHECK_EQF(droce_qp_post_send(p.ini, &wr[0], &bad), EINVAL,
		"ATOMIC WRITE on XRC_SEND");
	/* the all-or-nothing form (ibv_wr_complete) */
	wr_init(&wr[0], &s, IBV_WR_SEND, 17, srqn);
	wr_init(&wr[1], &s, IBV_WR_SEND, 18, 0);
	wr[0].next = &wr[1];
	wr[1].next = NULL;
	CHECK_EQF(droce_qp_post_send_all(p.ini, &wr[0], &bad), EINVAL,
		"all or nothing: remote_srqn 0");
	CHECK(bad == &wr[1], "bad_wr");
	fl_run_idle(&L, 20000000);
	CHECK_EQF(droce_cq_poll(p.scq, &wc, 1), 0, "nothing posted");
	/* the target sends nothing; neither half has a receive queue */
	wr_init(&wr[0], &s, IBV_WR_SEND, 19, srqn);
	CHECK_EQF(droce_qp_post_send(p.tgt, &wr[0], &bad), EINVAL,
		"post_send on XRC_RECV");
	memset(&rwr, 0, sizeof(rwr));
	rwr.sg_list = &s;
	rwr.num_sge = 1;
	CHECK_EQF(droce_qp_post_recv(p.ini, &rwr, &rbad), EINVAL,
		"post_recv on XRC_SEND");
	CHECK(rbad == &rwr, "recv bad_wr");
	CHECK_EQF(droce_qp_post_recv(p.tgt, &rwr, &rbad), EINVAL,
		"post_recv on XRC_RECV");
	/* an XRC SRQ is not an RC QP's SRQ */
	{
		struct ibv_qp_init_attr ia;

		memset(&ia, 0, sizeof(ia));
		ia.qp_type = IBV_QPT_RC;
		ia.cap.max_send_wr = 4;
		errno = 0;
		CHECK(droce_qp_create(L.end[1].pd, &ia, p.rcq, p.rcq, p.a) ==
			NULL && errno == EINVAL, "RC QP on an XRC SRQ: EINVAL");
	}
	CHECK_EQF(droce_qp_state(p.ini), IBV_QPS_RTS, "still RTS");
	xpair_free(&p);
}

/* What holds what: EBUSY until the users are gone. */
void
test_lifetimes(void)
{
	struct xpair p;
	struct ibv_srq_init_attr sa;
	struct droce_srq *s;

	xpair_make(&p);
	CHECK_EQF(droce_xrcd_free(p.x), -EBUSY, "XRCD with an SRQ and a QP");
	CHECK_EQF(droce_cq_destroy(p.rcq), -EBUSY, "an XRC SRQ's CQ");
	CHECK_EQF(droce_cq_move(p.rcq, 0), 0, "the same queue: no move");
	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = 4;
	errno = 0;
	CHECK(droce_srq_create_xrc(L.end[1].pd, NULL, p.rcq, &sa) == NULL &&
		errno == EINVAL, "XRC SRQ without a domain");
	CHECK(droce_srq_create_xrc(L.end[1].pd, p.x, NULL, &sa) == NULL &&
		errno == EINVAL, "XRC SRQ without a CQ");
	s = droce_srq_create_xrc(L.end[1].pd, p.x, p.rcq, &sa);
	CHECK(s != NULL && droce_srq_num(s) != droce_srq_num(p.a) &&
		droce_srq_num(s) != droce_srq_num(p.b), "a third number");
	CHECK_EQF(droce_srq_destroy(s), 0, "destroy it");
	xpair_free(&p);
}
