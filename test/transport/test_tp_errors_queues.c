/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * test_tp_errors's cases on queues: a CQ overrun (its async event), an
 * SRQ's limit event, and a receive reposted to an SRQ mid-message.
 */

#include "tp_errors.h"

void
test_cq_overflow(void)
{
	struct pair p;
	struct ibv_wc wc[4];
	int i, n;

	pair_make(&p, IBV_QPT_RC, NULL, ACC_ALL, 1);
	CHECK_EQ(droce_cq_size(p.cq[0]), 1, "CQ of 1");
	for (i = 0; i < 3; i++)
		CHECK_EQ(post_op(&p, IBV_WR_RDMA_WRITE, 10, REMOTE(&p, 0),
			RKEY(&p), 100 + (uint64_t)i), 0, "post");
	fl_run_idle(&L, 10000000);
	CHECK_EQ(async_events[IBV_EVENT_CQ_ERR], 1, "CQ error event");
	n = droce_cq_poll(p.cq[0], wc, 4);
	CHECK(n == 1 && wc[0].wr_id == 100, "the first completion kept: n=%d",
		n);
	CHECK_EQ(droce_cq_poll(p.cq[0], wc, 4), -EOVERFLOW, "then overflow");
	pair_destroy(&p);
}

void
test_srq_limit(void)
{
	struct droce_srq *srq;
	struct ibv_srq_init_attr sa;
	struct ibv_qp_init_attr ia;
	struct droce_cq *cq0, *cq1;
	struct droce_qp *q0, *q1;
	struct tbuf b0, b1;
	struct fl_qp_opts o;
	struct ibv_wc wc;
	int i;

	setup_link();
	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = 8;
	sa.attr.max_sge = 1;
	sa.attr.srq_limit = 2;
	srq = droce_srq_create(L.end[1].pd, 0, &sa);
	CHECK(srq != NULL, "srq");
	cq0 = droce_cq_create(L.end[0].dev, 0, 64);
	cq1 = droce_cq_create(L.end[1].dev, 0, 64);
	qp_attr(&ia, IBV_QPT_RC, 16, 1);
	q0 = droce_qp_create(L.end[0].pd, &ia, cq0, cq0, NULL);
	q1 = droce_qp_create(L.end[1].pd, &ia, cq1, cq1, srq);
	fl_qp_opts_default(&o);
	CHECK_EQ(fl_connect(&L, q0, q1, &o), 0, "connect");
	tbuf_init(&b0, L.end[0].pd, 4096, ACC_ALL);
	tbuf_init(&b1, L.end[1].pd, 4096, ACC_ALL);
	for (i = 0; i < 4; i++) {
		struct ibv_sge s = sge_of(&b1, (size_t)i * 512, 512);
		struct ibv_recv_wr wr = { .wr_id = (uint64_t)i, .sg_list = &s,
			.num_sge = 1 }, *bad;

		CHECK_EQ(droce_srq_post_recv(srq, &wr, &bad), 0, "srq post");
	}
	{
		struct ibv_recv_wr rwr, *rbad;

		memset(&rwr, 0, sizeof(rwr));
		CHECK_EQ(droce_qp_post_recv(q1, &rwr, &rbad), EINVAL,
			"post_recv on a QP with an SRQ");
	}
	for (i = 0; i < 3; i++) {
		struct ibv_sge s = sge_of(&b0, 0, 64);
		struct ibv_send_wr wr, *bad;

		memset(&wr, 0, sizeof(wr));
		wr.opcode = IBV_WR_SEND;
		wr.sg_list = &s;
		wr.num_sge = 1;
		wr.send_flags = IBV_SEND_SIGNALED;
		CHECK_EQ(droce_qp_post_send(q0, &wr, &bad), 0, "send");
		CHECK_EQ(wait_wc(&L, cq1, &wc, 100000000), 0, "srq recv");
		CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == (uint64_t)i,
			"srq wc");
		CHECK_EQ(async_events[IBV_EVENT_SRQ_LIMIT_REACHED], i >= 2,
			"SRQ limit event once below 2");
	}
	droce_qp_destroy(q0);
	droce_qp_destroy(q1);
	CHECK_EQ(droce_srq_destroy(srq), 0, "srq destroy");
	droce_cq_destroy(cq0);
	droce_cq_destroy(cq1);
	tbuf_fini(&b0);
	tbuf_fini(&b1);
}

static int drop_send_last_left;

static int
drop_send_last(struct fakelink *l, int dir, const uint8_t *f, uint32_t len)
{
	struct droce_pkt pkt;

	(void)l;
	if (dir != 0 || droce_wire_parse(f, len, NULL, &pkt) != 0 ||
			pkt.opcode != DROCE_OP_RC_SEND_LAST ||
			drop_send_last_left == 0)
		return 0;
	drop_send_last_left--;
	return 1;
}

/*
 * A receive posted to a full SRQ while a SEND of several packets is half
 * placed (its last packet lost, retransmitted after the ACK timeout): it
 * takes the slot the SEND's WQE was taken from, and must not change
 * where the rest of that SEND goes. The SEND completes with every byte
 * in its own buffer, the new receive's buffer untouched. (Before the fix
 * the retransmitted last packet went to the new receive's buffer and the
 * SEND completed with its 64 last bytes zero: the holes an MPI job over
 * droced's loopback found, UCX's rc_verbs reposting to its SRQ.)
 */
static void
srq_post_at(struct droce_srq *srq, struct tbuf *b, uint32_t i)
{
	struct ibv_sge s = sge_of(b, (size_t)i * 16384, 16384);
	struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &s, .num_sge = 1 },
		*bad;

	CHECK_EQ(droce_srq_post_recv(srq, &wr, &bad), 0, "srq post");
}

void
test_srq_repost_mid_message(void)
{
	struct droce_srq *srq;
	struct ibv_srq_init_attr sa;
	struct ibv_qp_init_attr ia;
	struct droce_cq *cq0, *cq1;
	struct droce_qp *q0, *q1;
	struct tbuf b0, b1;
	struct fl_qp_opts o;
	struct ibv_wc wc;
	struct ibv_sge s;
	struct ibv_send_wr wr, *bad;
	uint32_t i;

	setup_link();
	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = 2;
	sa.attr.max_sge = 1;
	srq = droce_srq_create(L.end[1].pd, 0, &sa);
	CHECK(srq != NULL, "srq");
	cq0 = droce_cq_create(L.end[0].dev, 0, 64);
	cq1 = droce_cq_create(L.end[1].dev, 0, 64);
	qp_attr(&ia, IBV_QPT_RC, 16, 1);
	q0 = droce_qp_create(L.end[0].pd, &ia, cq0, cq0, NULL);
	q1 = droce_qp_create(L.end[1].pd, &ia, cq1, cq1, srq);
	fl_qp_opts_default(&o);
	CHECK_EQ(fl_connect(&L, q0, q1, &o), 0, "connect");
	tbuf_init(&b0, L.end[0].pd, 16384, ACC_ALL);
	tbuf_init(&b1, L.end[1].pd, 3 * 16384, ACC_ALL);
	/* receives 0 and 1: the SRQ is full */
	srq_post_at(srq, &b1, 0);
	srq_post_at(srq, &b1, 1);
	/* a SEND of 9 packets (UCX's 8256-byte fragment): the first 8
	 * placed in receive 0's buffer, the last lost */
	pattern(b0.p, 8256, 77);
	s = sge_of(&b0, 0, 8256);
	memset(&wr, 0, sizeof(wr));
	wr.opcode = IBV_WR_SEND;
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	drop_send_last_left = 1;
	L.filter = drop_send_last;
	CHECK_EQ(droce_qp_post_send(q0, &wr, &bad), 0, "send");
	fl_run_idle(&L, 500000);
	CHECK_EQ(drop_send_last_left, 0, "its last packet lost");
	CHECK_EQ(droce_cq_poll(cq1, &wc, 1), 0, "the SEND not received yet");
	/* receive 2, into the slot receive 0 was taken from; then the ACK
	 * timeout resends the SEND and its last packet arrives */
	srq_post_at(srq, &b1, 2);
	CHECK_EQ(wait_wc(&L, cq1, &wc, 100000000), 0, "the SEND received");
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 0 &&
		wc.byte_len == 8256, "into receive 0, 8256 bytes: status %d "
		"wr_id %llu byte_len %u", wc.status,
		(unsigned long long)wc.wr_id, wc.byte_len);
	CHECK(pattern_ok(b1.p, 8256, 77), "every byte of it in receive 0's "
		"buffer");
	for (i = 0; i < 16384 && b1.p[2 * 16384 + i] == 0; i++)
		;
	CHECK_EQ(i, 16384, "receive 2's buffer untouched");
	CHECK_EQ(wait_wc(&L, cq0, &wc, 100000000), 0, "send completion");
	CHECK_EQ(wc.status, IBV_WC_SUCCESS, "send status");
	L.filter = NULL;
	droce_qp_destroy(q0);
	droce_qp_destroy(q1);
	CHECK_EQ(droce_srq_destroy(srq), 0, "srq destroy");
	droce_cq_destroy(cq0);
	droce_cq_destroy(cq1);
	tbuf_fini(&b0);
	tbuf_fini(&b1);
}
