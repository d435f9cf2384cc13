/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * One case per error path of the transport: the exact completion status
 * and the QP state after it (and the peer's where it matters).
 */

#include "tp_util.h"

static struct fakelink L;
static int async_events[32];
static void *async_obj;

static void
on_async(void *arg, const struct ibv_async_event *ev)
{
	(void)arg;
	if (ev->event_type < 32)
		async_events[ev->event_type]++;
	async_obj = ev->element.qp;
}

static void
setup_link(void)
{
	fl_fini(&L);
	CHECK_EQ(fl_init(&L, 5, 1500), 0, "fakelink");
	droce_dev_set_async_cb(L.end[0].dev, on_async, NULL);
	droce_dev_set_async_cb(L.end[1].dev, on_async, NULL);
	memset(async_events, 0, sizeof(async_events));
}

/* A fresh link, and on it a pair of type t with 64 KiB each side, side
 * 1's registered with acc1, cqe entries a CQ (0: 64). */
static void
pair_make(struct pair *p, enum ibv_qp_type t, const struct fl_qp_opts *o,
		unsigned int acc1, uint32_t cqe)
{
	struct pair_cfg c = {
		.type = t, .cqe = cqe, .sges = 2,
		.buf_len = 65536, .acc1 = acc1, .o = o,
	};

	setup_link();
	pair_create(&L, p, &c);
}

/* op of len bytes from the start of b[0] (an atomic adds 1). */
static int
post_op(struct pair *p, enum ibv_wr_opcode op, uint32_t len, uint64_t raddr,
		uint32_t rkey, uint64_t id)
{
	return pair_post(p, op, 0, len, raddr, rkey, id);
}

static void
test_retry_exc(void)
{
	struct pair p;
	struct fl_qp_opts o;
	uint64_t id;

	fl_qp_opts_default(&o);
	o.retry_cnt = 2;
	o.timeout = 8;		/* ~1 ms */
	pair_make(&p, IBV_QPT_RC, &o, ACC_ALL, 0);
	L.faults[0].stalled = 1;	/* the responder never hears us */
	CHECK_EQ(post_op(&p, IBV_WR_RDMA_WRITE, 100, REMOTE(&p, 0), RKEY(&p), 1),
		0, "post");
	CHECK_EQ(post_op(&p, IBV_WR_SEND, 100, 0, 0, 2), 0, "post 2");
	CHECK_EQ(pair_status(&p, 0, 100000000, &id), IBV_WC_RETRY_EXC_ERR,
		"retry exceeded");
	CHECK_EQ(id, 1, "first WR fails");
	CHECK_EQ(pair_status(&p, 0, 1000000, &id), IBV_WC_WR_FLUSH_ERR,
		"next flushed");
	CHECK_EQ(droce_qp_state(p.qp[0]), IBV_QPS_ERR, "QP in ERR");
	/* exactly 1 + retry_cnt transmissions: 3 timeouts counted */
	{
		struct droce_tp_stats st;

		droce_qp_stats(p.qp[0], &st);
		CHECK_EQ(st.timeouts, 3, "timeouts before giving up");
	}
	/* a WR posted in ERR completes with a flush error */
	CHECK_EQ(post_op(&p, IBV_WR_SEND, 10, 0, 0, 3), 0, "post in ERR");
	CHECK_EQ(pair_status(&p, 0, 1000000, &id), IBV_WC_WR_FLUSH_ERR,
		"post in ERR flushed");
	pair_destroy(&p);
}

static void
test_rnr(int rnr_retry)
{
	struct pair p;
	struct fl_qp_opts o;
	uint64_t id;

	fl_qp_opts_default(&o);
	o.rnr_retry = (uint8_t)rnr_retry;
	o.min_rnr_timer = 5;	/* 60 us */
	pair_make(&p, IBV_QPT_RC, &o, ACC_ALL, 0);
	CHECK_EQ(post_op(&p, IBV_WR_SEND, 100, 0, 0, 1), 0, "post send");
	if (rnr_retry != 7) {
		CHECK_EQ(pair_status(&p, 0, 100000000, &id),
			IBV_WC_RNR_RETRY_EXC_ERR, "RNR retry exceeded");
		CHECK_EQ(droce_qp_state(p.qp[0]), IBV_QPS_ERR, "QP in ERR");
		{
			struct droce_tp_stats st;

			droce_qp_stats(p.qp[1], &st);
			CHECK_EQ(st.rnr_nak_tx, rnr_retry + 1, "RNR NAKs sent");
		}
	} else {
		/* 7 = retry forever: nothing completes until a recv comes */
		fl_step(&L, 1000);
		CHECK_EQ((int)pair_status(&p, 0, 20000000, &id), -1,
			"no completion while RNR");
		pair_post_recv(&p, 1, 0, 200, 9);
		CHECK_EQ(pair_status(&p, 0, 100000000, &id), IBV_WC_SUCCESS,
			"succeeds once a receive is posted");
		CHECK_EQ(pair_status(&p, 1, 100000000, &id), IBV_WC_SUCCESS,
			"received");
		CHECK_EQ(droce_qp_state(p.qp[0]), IBV_QPS_RTS, "still RTS");
	}
	pair_destroy(&p);
}

/* A multi-packet WRITE with immediate whose last packet meets no receive
 * WQE: RNR, then, once a receive is posted, the whole WRITE lands. */
static void
test_rnr_write_imm(void)
{
	struct pair p;
	uint64_t id;

	pair_make(&p, IBV_QPT_RC, NULL, ACC_ALL, 0);
	pattern(p.b[0].p, 3000, 17);
	CHECK_EQ(post_op(&p, IBV_WR_RDMA_WRITE_WITH_IMM, 3000, REMOTE(&p, 8192),
		RKEY(&p), 1), 0, "post write imm");
	CHECK_EQ((int)pair_status(&p, 0, 3000000, &id), -1,
		"waits while the responder has no receive");
	pair_post_recv(&p, 1, 0, 16, 2);
	CHECK_EQ(pair_status(&p, 0, 100000000, &id), IBV_WC_SUCCESS,
		"write with imm completes after RNR");
	CHECK_EQ(pair_status(&p, 1, 100000000, &id), IBV_WC_SUCCESS,
		"its receive completes");
	CHECK(pattern_ok(p.b[1].p + 8192, 3000, 17), "data intact after RNR");
	CHECK_EQ(droce_qp_state(p.qp[1]), IBV_QPS_RTS, "responder RTS");
	pair_destroy(&p);
}

static void
test_rem_access(int how)
{
	struct pair p;
	unsigned int acc = ACC_ALL;
	enum ibv_wr_opcode op = IBV_WR_RDMA_WRITE;
	uint64_t addr;
	uint32_t rkey;

	if (how == 2)
		acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ;
	pair_make(&p, IBV_QPT_RC, NULL, acc, 0);
	addr = REMOTE(&p, 0);
	rkey = RKEY(&p);
	if (how == 0)
		rkey ^= 0x100;			/* wrong key */
	if (how == 1) {
		op = IBV_WR_RDMA_READ;
		addr = REMOTE(&p, 65536 - 10);	/* past the end */
	}
	if (how == 3) {
		op = IBV_WR_ATOMIC_FETCH_AND_ADD;
		/* MR has no REMOTE_ATOMIC */
	}
	if (how == 3) {
		tbuf_fini(&p.b[1]);
		tbuf_init(&p.b[1], L.end[1].pd, 4096, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE);
		addr = REMOTE(&p, 0);
		rkey = RKEY(&p);
	}
	CHECK_EQ(post_op(&p, op, op == IBV_WR_ATOMIC_FETCH_AND_ADD ? 8 : 100,
		addr, rkey, 1), 0, "post");
	CHECK_EQ(pair_status(&p, 0, 100000000, NULL), IBV_WC_REM_ACCESS_ERR,
		"remote access error");
	CHECK_EQ(droce_qp_state(p.qp[0]), IBV_QPS_ERR, "requester ERR");
	fl_run_idle(&L, 10000000);
	CHECK_EQ(droce_qp_state(p.qp[1]), IBV_QPS_ERR, "responder ERR");
	pair_destroy(&p);
}

static void
test_inv_req_read(void)
{
	struct pair p;
	struct fl_qp_opts o;

	fl_qp_opts_default(&o);
	o.max_dest_rd_atomic = 0;	/* the responder takes no READs */
	pair_make(&p, IBV_QPT_RC, &o, ACC_ALL, 0);
	CHECK_EQ(post_op(&p, IBV_WR_RDMA_READ, 100, REMOTE(&p, 0), RKEY(&p), 1),
		0, "post read");
	CHECK_EQ(pair_status(&p, 0, 100000000, NULL), IBV_WC_REM_INV_REQ_ERR,
		"invalid request");
	CHECK_EQ(droce_qp_state(p.qp[0]), IBV_QPS_ERR, "requester ERR");
	pair_destroy(&p);
}

/* A crafted misaligned CmpSwap straight into the responder. */
static void
test_misaligned_atomic(void)
{
	struct pair p;
	struct droce_pkt pkt;
	struct droce_tp_stats st;
	uint8_t frame[256];
	const uint8_t *fp = frame;
	uint32_t len;

	pair_make(&p, IBV_QPT_RC, NULL, ACC_ALL, 0);
	fl_request_pkt(&L, p.qp[1], DROCE_OP_RC_CMP_SWAP, &pkt);
	pkt.atm_va = REMOTE(&p, 4);	/* not 8-byte aligned */
	pkt.atm_rkey = RKEY(&p);
	len = (uint32_t)droce_wire_build(&pkt, frame, sizeof(frame));
	droce_tp_rx_burst(L.end[1].q, &fp, &len, 1, L.now);
	fl_run_idle(&L, 10000000);
	droce_qp_stats(p.qp[1], &st);
	CHECK_EQ(st.nak_inv_tx, 1, "invalid request NAK sent");
	CHECK_EQ(droce_qp_state(p.qp[1]), IBV_QPS_ERR, "responder ERR");
	pair_destroy(&p);
}

static void
test_loc_len(void)
{
	struct pair p;
	uint64_t id;

	pair_make(&p, IBV_QPT_RC, NULL, ACC_ALL, 0);
	pair_post_recv(&p, 1, 0, 50, 7);	/* too small for 100 bytes */
	CHECK_EQ(post_op(&p, IBV_WR_SEND, 100, 0, 0, 1), 0, "post send");
	CHECK_EQ(pair_status(&p, 1, 100000000, &id), IBV_WC_LOC_LEN_ERR,
		"receiver: local length error");
	CHECK_EQ(id, 7, "the receive WR");
	CHECK_EQ(pair_status(&p, 0, 100000000, NULL), IBV_WC_REM_INV_REQ_ERR,
		"sender: remote invalid request");
	CHECK_EQ(droce_qp_state(p.qp[1]), IBV_QPS_ERR, "receiver ERR");
	CHECK_EQ(droce_qp_state(p.qp[0]), IBV_QPS_ERR, "sender ERR");
	pair_destroy(&p);
}

static void
test_loc_prot(void)
{
	struct droce_tp_stats st;
	struct pair p;
	struct ibv_sge s;
	struct ibv_send_wr wr, *bad;
	uint64_t id;

	pair_make(&p, IBV_QPT_RC, NULL, ACC_ALL, 0);
	s = sge_of(&p.b[0], 0, 100);
	s.lkey ^= 0x200;		/* nobody's key */
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 4;
	wr.opcode = IBV_WR_SEND;
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	CHECK_EQ(droce_qp_post_send(p.qp[0], &wr, &bad), 0, "post");
	CHECK_EQ(pair_status(&p, 0, 100000000, &id), IBV_WC_LOC_PROT_ERR,
		"local protection error");
	CHECK_EQ(droce_qp_state(p.qp[0]), IBV_QPS_ERR, "QP ERR");
	/* a one-packet message is checked by its gather: nothing left */
	droce_tp_queue_stats(L.end[0].q, &st);
	CHECK_EQ(st.tx_pkts, 0, "no frame of the failed SEND left");
	/* an SGE outside its MR is a protection error too */
	pair_destroy(&p);
	pair_make(&p, IBV_QPT_RC, NULL, ACC_ALL, 0);
	s = sge_of(&p.b[0], 65536 - 50, 100);
	CHECK_EQ(droce_qp_post_send(p.qp[0], &wr, &bad), 0, "post");
	CHECK_EQ(pair_status(&p, 0, 100000000, &id), IBV_WC_LOC_PROT_ERR,
		"SGE beyond the MR");
	droce_tp_queue_stats(L.end[0].q, &st);
	CHECK_EQ(st.tx_pkts, 0, "no frame of the SEND beyond its MR left");
	/* several packets: the second SGE is nobody's, the first is fine;
	 * no packet of the message may leave */
	pair_destroy(&p);
	pair_make(&p, IBV_QPT_RC, NULL, ACC_ALL, 0);
	{
		/* the first packet (path MTU 4096) lies in the first */
		struct ibv_sge two[2] = { sge_of(&p.b[0], 0, 5000),
			sge_of(&p.b[0], 5000, 3000) };

		two[1].lkey ^= 0x200;
		wr.sg_list = two;
		wr.num_sge = 2;
		CHECK_EQ(droce_qp_post_send(p.qp[0], &wr, &bad), 0, "post");
		CHECK_EQ(pair_status(&p, 0, 100000000, &id),
			IBV_WC_LOC_PROT_ERR, "second SGE nobody's");
		droce_tp_queue_stats(L.end[0].q, &st);
		CHECK_EQ(st.tx_pkts, 0,
			"no packet of the failing 8000-byte SEND left");
	}
	pair_destroy(&p);
}

static void
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

static void
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

static void
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

/* Duplicate everything the requester sends: atomics execute once. */
static void
test_dup_atomic(void)
{
	struct pair p;
	struct droce_tp_stats st;
	uint64_t *target;
	int i;

	pair_make(&p, IBV_QPT_RC, NULL, ACC_ALL, 0);
	L.faults[0].dup_ppm = 1000000;
	target = (uint64_t *)p.b[1].p;
	*target = 0;
	for (i = 0; i < 5; i++) {
		CHECK_EQ(post_op(&p, IBV_WR_ATOMIC_FETCH_AND_ADD, 8,
			REMOTE(&p, 0), RKEY(&p), (uint64_t)i), 0, "post");
		CHECK_EQ(pair_status(&p, 0, 100000000, NULL), IBV_WC_SUCCESS,
			"fetch-add");
	}
	fl_run_idle(&L, 10000000);
	CHECK_EQ(*target, 5, "each fetch-add executed exactly once");
	droce_qp_stats(p.qp[1], &st);
	CHECK(st.atomic_replays >= 5, "duplicates answered from the cache: %llu",
		(unsigned long long)st.atomic_replays);
	pair_destroy(&p);
}

static int drop_first_resp_left;

static int
drop_read_resp(struct fakelink *l, int dir, const uint8_t *f, uint32_t len)
{
	struct droce_pkt pkt;

	(void)l;
	if (dir != 1 || droce_wire_parse(f, len, NULL, &pkt) != 0)
		return 0;
	if (pkt.opcode == DROCE_OP_RC_READ_RESP_FIRST && drop_first_resp_left) {
		drop_first_resp_left--;
		return 1;
	}
	return 0;
}

/* Lose a READ's first response: the READ is re-executed, data intact. */
static void
test_dup_read(void)
{
	struct pair p;
	struct droce_tp_stats st;

	pair_make(&p, IBV_QPT_RC, NULL, ACC_ALL, 0);
	pattern(p.b[1].p, 8000, 5);
	drop_first_resp_left = 1;
	L.filter = drop_read_resp;
	CHECK_EQ(post_op(&p, IBV_WR_RDMA_READ, 8000, REMOTE(&p, 0), RKEY(&p), 1),
		0, "post read");
	CHECK_EQ(pair_status(&p, 0, 1000000000, NULL), IBV_WC_SUCCESS, "read");
	CHECK(pattern_ok(p.b[0].p, 8000, 5), "read data after a lost response");
	droce_qp_stats(p.qp[0], &st);
	CHECK(st.retransmits + st.out_of_seq_rx >= 1, "the READ was resent");
	L.filter = NULL;
	pair_destroy(&p);
}

/* The response PSNs the responder sent, in order. */
static uint32_t resp_psn[1024], nresp;

static int
watch_read_resp(struct fakelink *l, int dir, const uint8_t *f, uint32_t len)
{
	struct droce_pkt pkt;

	(void)l;
	if (dir == 1 && droce_wire_parse(f, len, NULL, &pkt) == 0 &&
			(droce_opcode_info[pkt.opcode].flags & DROCE_OPF_READ) &&
			nresp < 1024)
		resp_psn[nresp++] = pkt.psn;
	return 0;
}

/*
 * Duplicate READ requests for one READ, as a requester whose timer or
 * gaps make it ask again, arriving while the responder replays it: each
 * newer one takes the replay over from the PSN it asks for (IBTA's
 * duplicate READ: the range its RETH names), never a second replay of
 * the range beside the first. Seen on the wire: the response PSNs run +1
 * at a time, and go back only to a PSN a duplicate asked for, at most
 * once per duplicate.
 */
static void
test_dup_read_replay(void)
{
	const uint32_t len = 32768, npsn = 32;
	/* which duplicates, and how many steps of the link before each */
	static const struct { uint32_t off_pkts, steps; } dups[] = {
		{ 0, 0 }, { 0, 0 }, { 0, 3 }, { 16, 2 }, { 16, 0 }, { 4, 5 },
		{ 0, 1 }, { 31, 4 },
	};
	struct droce_tp_stats st0, st1;
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;
	struct pair p;
	uint32_t first, i, k, back = 0, tx;

	pair_make(&p, IBV_QPT_RC, NULL, ACC_ALL, 0);
	pattern(p.b[1].p, len, 21);
	CHECK_EQ(post_op(&p, IBV_WR_RDMA_READ, len, REMOTE(&p, 0), RKEY(&p), 1),
		0, "post read");
	CHECK_EQ(pair_status(&p, 0, 1000000000, NULL), IBV_WC_SUCCESS, "read");
	fl_run_idle(&L, 10000000);
	droce_qp_query(p.qp[1], &a, 0, &ia);
	first = (a.rq_psn - npsn) & DROCE_PSN_MASK;
	droce_qp_stats(p.qp[1], &st0);
	nresp = 0;
	L.filter = watch_read_resp;
	for (i = 0; i < sizeof(dups) / sizeof(dups[0]); i++) {
		struct droce_pkt pkt;
		uint8_t frame[256];
		const uint8_t *fp = frame;
		uint32_t flen;

		for (k = 0; k < dups[i].steps; k++)
			fl_step(&L, 1000);
		fl_request_pkt(&L, p.qp[1], DROCE_OP_RC_READ_REQ, &pkt);
		pkt.psn = (first + dups[i].off_pkts) & DROCE_PSN_MASK;
		pkt.reth_va = REMOTE(&p, dups[i].off_pkts * 1024);
		pkt.reth_rkey = RKEY(&p);
		pkt.reth_len = len - dups[i].off_pkts * 1024;
		flen = (uint32_t)droce_wire_build(&pkt, frame, sizeof(frame));
		droce_tp_rx_burst(L.end[1].q, &fp, &flen, 1, L.now);
	}
	fl_run_idle(&L, 10000000);
	L.filter = NULL;
	droce_qp_stats(p.qp[1], &st1);
	tx = (uint32_t)(st1.tx_pkts - st0.tx_pkts);
	CHECK(nresp > 0 && nresp == tx, "the replies seen on the wire: %u of "
		"%u", nresp, tx);
	for (i = 1; i < nresp; i++) {
		uint32_t d = (resp_psn[i] - resp_psn[i - 1]) & DROCE_PSN_MASK;
		uint32_t asked = (resp_psn[i] - first) & DROCE_PSN_MASK;

		if (d == 1)
			continue;
		back++;
		for (k = 0; k < sizeof(dups) / sizeof(dups[0]); k++)
			if (dups[k].off_pkts == asked)
				break;
		CHECK(k < sizeof(dups) / sizeof(dups[0]), "response %u: PSN "
			"+%u after +%u, not a PSN a duplicate asked for", i,
			asked, (resp_psn[i - 1] - first) & DROCE_PSN_MASK);
	}
	CHECK(back < sizeof(dups) / sizeof(dups[0]), "%u restarts for %zu "
		"duplicates", back, sizeof(dups) / sizeof(dups[0]));
	CHECK_EQ((resp_psn[nresp - 1] - first) & DROCE_PSN_MASK, npsn - 1,
		"the replay ends at the READ's last PSN");
	CHECK_EQ(st1.read_replays - st0.read_replays,
		sizeof(dups) / sizeof(dups[0]), "each duplicate replayed");
	CHECK_EQ(st1.dup_req_rx - st0.dup_req_rx,
		sizeof(dups) / sizeof(dups[0]), "each counted a duplicate request");
	CHECK(pattern_ok(p.b[0].p, len, 21), "the READ's data");
	CHECK_EQ(droce_qp_state(p.qp[0]), IBV_QPS_RTS, "requester fine");
	CHECK_EQ(droce_qp_state(p.qp[1]), IBV_QPS_RTS, "responder fine");
	pair_destroy(&p);
}

/* Frames of one direction past the first gone_keep ones, dropped while
 * gone_drop is set: a message cut after its start. */
static int gone_dir, gone_keep, gone_drop, gone_seen;

static int
cut_after(struct fakelink *l, int dir, const uint8_t *f, uint32_t len)
{
	struct droce_pkt pkt;

	(void)l;
	if (dir != gone_dir || droce_wire_parse(f, len, NULL, &pkt) != 0 ||
			pkt.opcode == DROCE_OP_RC_ACK)
		return 0;
	return ++gone_seen > gone_keep && gone_drop;
}

/*
 * The target MR deregistered between a 16 KB message's packets (lost after
 * the first two, so the rest come again): a WRITE's later packets and a
 * READ's later responses find its key gone and are answered with a Remote
 * Access NAK, as a NIC's would be; nothing more lands in, or leaves from,
 * the memory. The responder looked the key up again for each packet (before,
 * it kept the first packet's pointer and wrote through it: memory droced
 * may have unmapped).
 */
static void
test_mr_gone(enum ibv_wr_opcode op)
{
	const uint32_t len = 16384;
	struct tbuf t;
	struct pair p;
	struct fl_qp_opts o;
	uint32_t i, landed = 0;
	int s;

	fl_qp_opts_default(&o);
	o.mtu = IBV_MTU_1024;
	o.timeout = 8;		/* ~1 ms: the rest soon comes again */
	pair_make(&p, IBV_QPT_RC, &o, ACC_ALL, 0);
	tbuf_init(&t, L.end[1].pd, len, ACC_ALL);
	pattern(op == IBV_WR_RDMA_WRITE ? p.b[0].p : t.p, len, 9);
	gone_dir = op == IBV_WR_RDMA_WRITE ? 0 : 1;
	gone_keep = 2;
	gone_seen = 0;
	gone_drop = 1;
	L.filter = cut_after;
	CHECK_EQ(post_op(&p, op, len, (uint64_t)(uintptr_t)t.p,
		droce_mr_rkey(t.mr), 1), 0, "post");
	/* the first two packets placed (or sent back) at the responder */
	for (i = 0; i < 1000 && L.cnt[gone_dir].delivered < 2; i++)
		fl_step(&L, 1000);
	CHECK(gone_seen > gone_keep && L.cnt[gone_dir].delivered >= 2,
		"the message started: %d frames, %llu delivered", gone_seen,
		(unsigned long long)L.cnt[gone_dir].delivered);
	CHECK_EQ(droce_mr_dereg(t.mr), 0, "dereg mid-message");
	gone_drop = 0;
	s = pair_status(&p, 0, 1000000000, NULL);
	CHECK(s == IBV_WC_REM_ACCESS_ERR, "%s after the MR went: status %d",
		op == IBV_WR_RDMA_WRITE ? "WRITE" : "READ", s);
	if (op == IBV_WR_RDMA_WRITE) {
		for (i = 0; i < len; i++)
			landed += t.p[i] != 0;
		CHECK(landed <= 2 * 1024, "%u bytes landed after the first two "
			"packets", landed);
	} else {
		CHECK(pattern_ok(t.p, len, 9), "the READ's source untouched");
	}
	L.filter = NULL;
	free(t.p);
	pair_destroy(&p);
}

/* Responses (READ and atomic) seen by the requester, in arrival order. */
static struct {
	uint32_t next_psn;	/* the PSN the next response should carry */
	int started, out_of_order, drop_nth, seen;
} resp_seq;

static int
watch_resp(struct fakelink *l, int dir, const uint8_t *f, uint32_t len)
{
	struct droce_pkt pkt;

	(void)l;
	if (dir != 1 || droce_wire_parse(f, len, NULL, &pkt) != 0)
		return 0;
	if (!(pkt.opcode >= DROCE_OP_RC_READ_RESP_FIRST &&
			pkt.opcode <= DROCE_OP_RC_READ_RESP_ONLY) &&
			pkt.opcode != DROCE_OP_RC_ATOMIC_ACK)
		return 0;
	if (++resp_seq.seen == resp_seq.drop_nth)
		return 1;
	if (resp_seq.started && pkt.psn != resp_seq.next_psn)
		resp_seq.out_of_order++;
	resp_seq.started = 1;
	resp_seq.next_psn = droce_psn_add(pkt.psn, 1);
	return 0;
}

/*
 * READs and atomics by the window-full, with as many responder resources as
 * the requester may use: the resource ring wraps several times and every
 * response leaves in PSN order. With drop_nth, one response is lost: the
 * READ is asked again, answered from its resource, and the batch after it
 * is again answered in order.
 */
static void
resp_order_round(struct pair *p, uint32_t base_id, int expect_order)
{
	uint64_t *ctr = (uint64_t *)((uint8_t *)p->b[1].p + 60000);
	uint64_t before = *ctr;
	int i, ok = 1;

	for (i = 0; i < 12; i++) {
		if (i % 4 == 3)
			CHECK_EQ(pair_post(p, IBV_WR_ATOMIC_FETCH_AND_ADD,
				40000 + (uint32_t)i * 8, 8, REMOTE(p, 60000),
				RKEY(p), base_id + i), 0, "post fetch-add");
		else
			CHECK_EQ(pair_post(p, IBV_WR_RDMA_READ,
				(uint32_t)i * 2500, 2500,
				REMOTE(p, (uint32_t)i * 2500), RKEY(p),
				base_id + i), 0, "post read");
	}
	for (i = 0; i < 12; i++)
		if (pair_status(p, 0, 2000000000, NULL) != IBV_WC_SUCCESS)
			ok = 0;
	CHECK(ok, "12 READs and atomics complete with success");
	for (i = 0; i < 12; i++) {
		if (i % 4 == 3)
			continue;
		CHECK(memcmp((uint8_t *)p->b[0].p + i * 2500,
			(uint8_t *)p->b[1].p + i * 2500, 2500) == 0,
			"READ %d's data", i);
	}
	CHECK_EQ(*ctr, before + 3, "each fetch-add executed once");
	if (expect_order)
		CHECK(resp_seq.out_of_order == 0,
			"responses in PSN order (%d out of order)",
			resp_seq.out_of_order);
}

static void
test_resp_order(void)
{
	struct pair p;
	struct fl_qp_opts o;
	struct droce_tp_stats st;

	fl_qp_opts_default(&o);
	o.max_rd_atomic = o.max_dest_rd_atomic = 4;
	pair_make(&p, IBV_QPT_RC, &o, ACC_ALL, 0);
	pattern(p.b[1].p, 30000, 11);
	memset(&resp_seq, 0, sizeof(resp_seq));
	L.filter = watch_resp;
	resp_order_round(&p, 100, 1);
	/* lose the 5th response of the next round: a replay, then in order */
	resp_seq.drop_nth = resp_seq.seen + 5;
	resp_order_round(&p, 200, 0);
	droce_qp_stats(p.qp[1], &st);
	CHECK(st.read_replays + st.atomic_replays >= 1,
		"the lost response was answered again from its resource");
	resp_seq.started = 0;
	resp_seq.out_of_order = 0;
	resp_seq.drop_nth = 0;
	resp_order_round(&p, 300, 1);
	L.filter = NULL;
	pair_destroy(&p);
}

static int uc_drop_nth, uc_seen;

static int
drop_uc_middle(struct fakelink *l, int dir, const uint8_t *f, uint32_t len)
{
	struct droce_pkt pkt;

	(void)l;
	if (dir != 0 || droce_wire_parse(f, len, NULL, &pkt) != 0)
		return 0;
	if (pkt.opcode == DROCE_OP_UC_SEND_MIDDLE && uc_seen++ == uc_drop_nth)
		return 1;
	return 0;
}

/* UC: a broken message is dropped silently, the next one proceeds. */
static void
test_uc_broken(void)
{
	struct pair p;
	struct ibv_wc wc;
	struct droce_tp_stats st;

	pair_make(&p, IBV_QPT_UC, NULL, ACC_ALL, 0);
	uc_drop_nth = 0;
	uc_seen = 0;
	L.filter = drop_uc_middle;
	pair_post_recv(&p, 1, 0, 8192, 1);
	pair_post_recv(&p, 1, 0, 8192, 2);
	pattern(p.b[0].p, 3000, 1);
	CHECK_EQ(post_op(&p, IBV_WR_SEND, 3000, 0, 0, 1), 0, "send 1");
	CHECK_EQ(post_op(&p, IBV_WR_SEND, 3000, 0, 0, 2), 0, "send 2");
	CHECK_EQ(pair_status(&p, 0, 10000000, NULL), IBV_WC_SUCCESS, "sent 1");
	CHECK_EQ(pair_status(&p, 0, 10000000, NULL), IBV_WC_SUCCESS, "sent 2");
	CHECK_EQ(wait_wc(&L, p.cq[1], &wc, 10000000), 0, "one message");
	CHECK(wc.status == IBV_WC_SUCCESS && wc.byte_len == 3000 &&
		wc.wr_id == 1, "the second message lands in the first WQE");
	CHECK(pattern_ok(p.b[1].p, 3000, 1), "its data");
	CHECK_EQ(wait_wc(&L, p.cq[1], &wc, 10000000), -1, "and only one");
	droce_qp_stats(p.qp[1], &st);
	CHECK(st.rx_drop_uc >= 1, "the rest of the broken one dropped");
	CHECK_EQ(droce_qp_state(p.qp[1]), IBV_QPS_RTS, "UC stays RTS");
	L.filter = NULL;
	pair_destroy(&p);
}

static void
test_ud_qkey(void)
{
	struct pair p;
	struct droce_av av;
	struct droce_ah *ah;
	struct ibv_sge s;
	struct ibv_send_wr wr, *bad;
	struct ibv_wc wc;
	struct droce_tp_stats st;

	pair_make(&p, IBV_QPT_UD, NULL, ACC_ALL, 0);
	fl_av_to(&L, 0, &av);
	ah = droce_ah_create(L.end[0].pd, &av);
	pair_post_recv(&p, 1, 0, 2048, 1);
	s = sge_of(&p.b[0], 0, 100);
	memset(&wr, 0, sizeof(wr));
	wr.opcode = IBV_WR_SEND;
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.wr.ud.ah = droce_ah_to_ibv(ah);
	wr.wr.ud.remote_qpn = droce_qp_num(p.qp[1]);
	wr.wr.ud.remote_qkey = 0x22222222;	/* not the receiver's */
	CHECK_EQ(droce_qp_post_send(p.qp[0], &wr, &bad), 0, "post");
	CHECK_EQ(wait_wc(&L, p.cq[1], &wc, 10000000), -1, "nothing received");
	droce_tp_queue_stats(L.end[1].q, &st);
	CHECK_EQ(st.rx_drop_qkey, 1, "Q_Key violation counted");
	droce_ah_destroy(ah);
	pair_destroy(&p);
}

int
main(void)
{
	CHECK_EQ(fl_init(&L, 5, 1500), 0, "fakelink");
	test_retry_exc();
	test_rnr(2);
	test_rnr(0);
	test_rnr(7);
	test_rnr_write_imm();
	test_rem_access(0);
	test_rem_access(1);
	test_rem_access(2);
	test_rem_access(3);
	test_inv_req_read();
	test_misaligned_atomic();
	test_loc_len();
	test_loc_prot();
	test_cq_overflow();
	test_srq_limit();
	test_srq_repost_mid_message();
	test_dup_atomic();
	test_dup_read();
	test_dup_read_replay();
	test_mr_gone(IBV_WR_RDMA_WRITE);
	test_mr_gone(IBV_WR_RDMA_READ);
	test_resp_order();
	test_uc_broken();
	test_ud_qkey();
	fl_fini(&L);
	return check_report("test_tp_errors");
}
