/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * Posting rules of ibv_post_send(3) / ibv_post_recv(3), WR by WR: per QP
 * state, the errno, bad_wr, and that nothing from the failing WR on was
 * posted; and modify_qp's attribute-mask and transition rules.
 */

#include "tp_util.h"

static struct fakelink L;

struct one {
	struct droce_cq *cq[2];
	struct droce_qp *qp[2];
	struct tbuf b;		/* side 0 */
	struct tbuf pb;		/* side 1 */
};

static void
make(struct one *o, enum ibv_qp_type t, uint32_t wr)
{
	struct ibv_qp_init_attr ia;
	int s;

	for (s = 0; s < 2; s++) {
		o->cq[s] = droce_cq_create(L.end[s].dev, 0, 256);
		memset(&ia, 0, sizeof(ia));
		ia.qp_type = t;
		ia.cap.max_send_wr = wr;
		ia.cap.max_recv_wr = wr;
		ia.cap.max_send_sge = 2;
		ia.cap.max_recv_sge = 2;
		ia.cap.max_inline_data = 32;
		o->qp[s] = droce_qp_create(L.end[s].pd, &ia, o->cq[s], o->cq[s],
			NULL);
	}
	tbuf_init(&o->b, L.end[0].pd, 4096, ACC_ALL);
	tbuf_init(&o->pb, L.end[1].pd, 4096, ACC_ALL);
}

static void
unmake(struct one *o)
{
	int s;

	for (s = 0; s < 2; s++) {
		droce_qp_destroy(o->qp[s]);
		droce_cq_destroy(o->cq[s]);
	}
	tbuf_fini(&o->b);
	tbuf_fini(&o->pb);
}

static void
wr_init(struct one *o, struct ibv_send_wr *wr, struct ibv_sge *s,
		enum ibv_wr_opcode op, uint64_t id)
{
	*s = sge_of(&o->b, 0, 16);
	wr_signaled(wr, s, op, id);
	wr->wr.rdma.remote_addr = 0x1000;
	wr->wr.rdma.rkey = 1;
}

static int
count_wc(struct droce_cq *cq, uint64_t max_ns, int status)
{
	struct ibv_wc wc;
	int n = 0;

	while (wait_wc(&L, cq, &wc, max_ns) == 0) {
		CHECK_EQ(wc.status, status, "completion status");
		n++;
	}
	return n;
}

static int
to_state(struct droce_qp *qp, enum ibv_qp_state st, int mask_extra,
		struct ibv_qp_attr *a)
{
	a->qp_state = st;
	return droce_qp_modify(qp, a, IBV_QP_STATE | mask_extra, NULL);
}

static void
test_states(enum ibv_qp_type t)
{
	struct one o;
	struct ibv_send_wr wr, *bad;
	struct ibv_recv_wr rwr, *rbad;
	struct ibv_sge s;
	struct ibv_qp_attr a;
	struct fl_qp_opts fo;
	enum ibv_qp_state st[] = { IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_RTR };
	int i;

	make(&o, t, 8);
	memset(&rwr, 0, sizeof(rwr));
	s = sge_of(&o.b, 0, 16);
	rwr.sg_list = &s;
	rwr.num_sge = 1;
	/* RESET: receive WRs fail too */
	CHECK_EQ(droce_qp_post_recv(o.qp[0], &rwr, &rbad), EINVAL,
		"post_recv in RESET");
	CHECK(rbad == &rwr, "bad_wr in RESET");
	for (i = 0; i < 3; i++) {
		if (i == 1) {
			memset(&a, 0, sizeof(a));
			a.port_num = 1;
			a.qkey = 1;
			a.qp_access_flags = 0;
			CHECK_EQ(to_state(o.qp[0], IBV_QPS_INIT,
				IBV_QP_PKEY_INDEX | IBV_QP_PORT | (t == IBV_QPT_UD ?
				IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS), &a), 0,
				"to INIT");
			/* INIT takes receive WRs */
			CHECK_EQ(droce_qp_post_recv(o.qp[0], &rwr, &rbad), 0,
				"post_recv in INIT");
		}
		if (i == 2) {
			unmake(&o);
			make(&o, t, 8);
			fl_qp_opts_default(&fo);
			/* up to RTS on the peer, RTR here via fl_connect then
			 * back: simpler to test RTR on a fresh pair below */
		}
		if (i < 2) {
			wr_init(&o, &wr, &s, IBV_WR_SEND, 1);
			bad = NULL;
			CHECK_EQ(droce_qp_post_send(o.qp[0], &wr, &bad), EINVAL,
				"post_send before RTS");
			CHECK(bad == &wr, "bad_wr before RTS");
			CHECK_EQ(droce_qp_state(o.qp[0]), st[i], "state kept");
		}
	}
	unmake(&o);

	/* RTR: connect both, then check RTR on a QP stopped there */
	make(&o, t, 8);
	fl_qp_opts_default(&fo);
	CHECK_EQ(fl_connect(&L, o.qp[0], o.qp[1], &fo), 0, "connect");
	/* RTS: processed */
	wr_init(&o, &wr, &s, IBV_WR_SEND, 5);
	if (t == IBV_QPT_UD) {
		struct droce_av av;

		fl_av_to(&L, 0, &av);
		wr.wr.ud.ah = droce_ah_to_ibv(droce_ah_create(L.end[0].pd, &av));
		wr.wr.ud.remote_qpn = droce_qp_num(o.qp[1]);
		wr.wr.ud.remote_qkey = fo.qkey;
	}
	{
		struct ibv_recv_wr r2 = rwr, *b2;
		struct ibv_sge s2 = sge_of(&o.pb, 1024, 1024);

		r2.sg_list = &s2;
		r2.next = NULL;
		CHECK_EQ(droce_qp_post_recv(o.qp[1], &r2, &b2), 0, "peer recv");
		CHECK_EQ(droce_qp_post_recv(o.qp[1], &r2, &b2), 0, "peer recv");
	}
	CHECK_EQ(droce_qp_post_send(o.qp[0], &wr, &bad), 0, "post in RTS");
	CHECK_EQ(count_wc(o.cq[0], 10000000, IBV_WC_SUCCESS), 1,
		"processed in RTS");
	/* SQD: queued, not processed; back to RTS: processed */
	memset(&a, 0, sizeof(a));
	CHECK_EQ(to_state(o.qp[0], IBV_QPS_SQD, 0, &a), 0, "to SQD");
	wr.wr_id = 6;
	CHECK_EQ(droce_qp_post_send(o.qp[0], &wr, &bad), 0, "post in SQD");
	CHECK_EQ(count_wc(o.cq[0], 5000000, IBV_WC_SUCCESS), 0,
		"not processed in SQD");
	CHECK_EQ(to_state(o.qp[0], IBV_QPS_RTS, 0, &a), 0, "SQD to RTS");
	CHECK_EQ(count_wc(o.cq[0], 10000000, IBV_WC_SUCCESS), 1,
		"processed after SQD");
	/* ERR: accepted and flushed */
	CHECK_EQ(to_state(o.qp[0], IBV_QPS_ERR, 0, &a), 0, "to ERR");
	count_wc(o.cq[0], 1000000, IBV_WC_WR_FLUSH_ERR);
	wr.wr_id = 7;
	CHECK_EQ(droce_qp_post_send(o.qp[0], &wr, &bad), 0, "post in ERR");
	CHECK_EQ(count_wc(o.cq[0], 1000000, IBV_WC_WR_FLUSH_ERR), 1,
		"flushed in ERR");
	/* ERR -> RESET -> INIT works */
	CHECK_EQ(to_state(o.qp[0], IBV_QPS_RESET, 0, &a), 0, "ERR to RESET");
	CHECK_EQ(droce_qp_state(o.qp[0]), IBV_QPS_RESET, "in RESET");
	if (t == IBV_QPT_UD)
		droce_ah_destroy(droce_ah_from_ibv(wr.wr.ud.ah));
	unmake(&o);
}

static void
test_bad_wrs(void)
{
	struct one o;
	struct ibv_send_wr w[4], *bad;
	struct ibv_sge s[4];
	struct fl_qp_opts fo;
	int i;

	make(&o, IBV_QPT_RC, 4);
	fl_qp_opts_default(&fo);
	CHECK_EQ(fl_connect(&L, o.qp[0], o.qp[1], &fo), 0, "connect");
	/* a list of three whose second is bad: only the first is posted */
	for (i = 0; i < 3; i++) {
		wr_init(&o, &w[i], &s[i], IBV_WR_RDMA_WRITE, (uint64_t)i);
		w[i].wr.rdma.rkey = droce_mr_rkey(o.b.mr);
		w[i].wr.rdma.remote_addr = (uint64_t)(uintptr_t)o.b.p;
		w[i].next = i < 2 ? &w[i + 1] : NULL;
	}
	w[1].num_sge = 3;	/* more than max_send_sge */
	CHECK_EQ(droce_qp_post_send(o.qp[0], &w[0], &bad), EINVAL,
		"too many SGEs");
	CHECK(bad == &w[1], "bad_wr is the second");
	/* the first was posted: it targets the peer with our rkey -> error
	 * is fine; just count one completion, whatever its status */
	{
		struct ibv_wc wc;
		int n = 0;

		while (wait_wc(&L, o.cq[0], &wc, 10000000) == 0)
			n++;
		CHECK_EQ(n, 1, "exactly the first WR was posted");
	}
	unmake(&o);

	make(&o, IBV_QPT_RC, 4);
	CHECK_EQ(fl_connect(&L, o.qp[0], o.qp[1], &fo), 0, "connect");
	wr_init(&o, &w[0], &s[0], IBV_WR_ATOMIC_FETCH_AND_ADD, 1);
	s[0].length = 8;
	w[0].wr.atomic.remote_addr = 0x1004;	/* misaligned */
	CHECK_EQ(droce_qp_post_send(o.qp[0], &w[0], &bad), EINVAL,
		"misaligned atomic");
	w[0].wr.atomic.remote_addr = 0x1008;
	s[0].length = 4;			/* not 8 bytes */
	CHECK_EQ(droce_qp_post_send(o.qp[0], &w[0], &bad), EINVAL,
		"atomic of 4 bytes");
	wr_init(&o, &w[0], &s[0], IBV_WR_SEND, 1);
	s[0].length = 33;
	w[0].send_flags |= IBV_SEND_INLINE;	/* max_inline_data 32 */
	CHECK_EQ(droce_qp_post_send(o.qp[0], &w[0], &bad), EINVAL,
		"inline too large");
	w[0].opcode = (enum ibv_wr_opcode)99;
	s[0].length = 8;
	CHECK_EQ(droce_qp_post_send(o.qp[0], &w[0], &bad), EINVAL,
		"unknown opcode");
	/* queue full: max_send_wr 4 -> the fifth fails with ENOMEM */
	L.faults[0].stalled = 1;
	for (i = 0; i < 4; i++) {
		wr_init(&o, &w[0], &s[0], IBV_WR_SEND, (uint64_t)i);
		CHECK_EQ(droce_qp_post_send(o.qp[0], &w[0], &bad), 0, "fill");
	}
	wr_init(&o, &w[0], &s[0], IBV_WR_SEND, 9);
	CHECK_EQ(droce_qp_post_send(o.qp[0], &w[0], &bad), ENOMEM, "SQ full");
	CHECK(bad == &w[0], "bad_wr when full");
	/* receive queue full */
	{
		struct ibv_recv_wr r, *rb;
		struct ibv_sge rs = sge_of(&o.b, 0, 16);

		memset(&r, 0, sizeof(r));
		r.sg_list = &rs;
		r.num_sge = 1;
		rs = sge_of(&o.pb, 0, 16);
		for (i = 0; i < 4; i++)
			CHECK_EQ(droce_qp_post_recv(o.qp[1], &r, &rb), 0, "rfill");
		CHECK_EQ(droce_qp_post_recv(o.qp[1], &r, &rb), ENOMEM,
			"RQ full");
		r.num_sge = 3;
		CHECK_EQ(droce_qp_post_recv(o.qp[1], &r, &rb), EINVAL,
			"recv with too many SGEs");
	}
	L.faults[0].stalled = 0;
	unmake(&o);

	/* opcodes a transport does not have */
	make(&o, IBV_QPT_UD, 4);
	CHECK_EQ(fl_connect(&L, o.qp[0], o.qp[1], &fo), 0, "connect ud");
	wr_init(&o, &w[0], &s[0], IBV_WR_RDMA_WRITE, 1);
	CHECK_EQ(droce_qp_post_send(o.qp[0], &w[0], &bad), EINVAL,
		"WRITE on UD");
	wr_init(&o, &w[0], &s[0], IBV_WR_SEND, 1);
	w[0].wr.ud.ah = NULL;
	CHECK_EQ(droce_qp_post_send(o.qp[0], &w[0], &bad), EINVAL,
		"UD without an AH");
	unmake(&o);
	make(&o, IBV_QPT_UC, 4);
	CHECK_EQ(fl_connect(&L, o.qp[0], o.qp[1], &fo), 0, "connect uc");
	wr_init(&o, &w[0], &s[0], IBV_WR_RDMA_READ, 1);
	CHECK_EQ(droce_qp_post_send(o.qp[0], &w[0], &bad), EINVAL,
		"READ on UC");
	wr_init(&o, &w[0], &s[0], IBV_WR_ATOMIC_CMP_AND_SWP, 1);
	CHECK_EQ(droce_qp_post_send(o.qp[0], &w[0], &bad), EINVAL,
		"atomic on UC");
	unmake(&o);
}

/* pair_wr's WR with its data inline in two pieces: len0 bytes at off0
 * of b[0], then len1 at off1 (s holds two SGEs). */
static void
wr_two_inline(struct pair *p, struct ibv_send_wr *wr, struct ibv_sge *s,
		enum ibv_wr_opcode op, uint32_t off0, uint32_t len0,
		uint32_t off1, uint32_t len1, uint64_t id)
{
	pair_wr(p, wr, &s[0], op, off0, len0, REMOTE(p, 256), RKEY(p), id);
	s[1] = sge_of(&p->b[0], off1, len1);
	wr->num_sge = 2;
	wr->send_flags |= IBV_SEND_INLINE;
}

/*
 * Inline data in two SGEs (a header and a payload, as UCX's short
 * messages post): what arrives is the two pieces in order, copied at
 * posting; too long for max_inline_data, or more SGEs than max_send_sge,
 * is EINVAL with bad_wr; two empty pieces are a message of none.
 */
static void
test_inline_pieces(void)
{
	static const struct pair_cfg c = {
		.sges = 2, .max_inline = 32, .buf_len = 4096, .acc1 = ACC_ALL,
		.check_qp = 1,
	};
	static const struct pair_cfg one = {
		.sges = 1, .max_inline = 32, .buf_len = 4096, .acc1 = ACC_ALL,
		.check_qp = 1,
	};
	struct ibv_send_wr wr, *bad;
	struct ibv_sge s[2];
	struct ibv_wc wc;
	struct pair p;
	uint8_t want[17];
	int i;

	pair_create(&L, &p, &c);
	pattern(p.b[0].p, 64, 7);
	memcpy(want, p.b[0].p + 40, 9);
	memcpy(want + 9, p.b[0].p, 8);
	memset(p.b[1].p, 0, 4096);
	/* a SEND, then a WRITE of the same two pieces */
	pair_post_recv(&p, 1, 0, 64, 100);
	for (i = 0; i < 2; i++) {
		wr_two_inline(&p, &wr, s, i ? IBV_WR_RDMA_WRITE : IBV_WR_SEND,
			40, 9, 0, 8, (uint64_t)i);
		CHECK_EQ(droce_qp_post_send(p.qp[0], &wr, &bad), 0,
			"two inline SGEs posted");
	}
	/* the caller's buffers are free once posted */
	memset(p.b[0].p, 0xee, 64);
	pair_expect_done(&p, 0, 2, "two inline SGEs");
	CHECK(pair_wait(&p, 1, &wc, 2000000000ull) == 0 &&
		wc.status == IBV_WC_SUCCESS && wc.byte_len == 17,
		"the SEND arrives whole (%u bytes)", wc.byte_len);
	CHECK(memcmp(p.b[1].p, want, 17) == 0, "SEND: header then payload");
	CHECK(memcmp(p.b[1].p + 256, want, 17) == 0,
		"WRITE: header then payload");

	/* 20 + 13 bytes: one more than max_inline_data */
	wr_two_inline(&p, &wr, s, IBV_WR_SEND, 0, 20, 32, 13, 9);
	CHECK_EQ(droce_qp_post_send(p.qp[0], &wr, &bad), EINVAL,
		"two inline SGEs past max_inline_data");
	CHECK(bad == &wr, "bad_wr at the long one");

	/* two empty pieces: a SEND of nothing */
	pair_post_recv(&p, 1, 0, 64, 101);
	s[0].length = 0;
	s[1].length = 0;
	CHECK_EQ(droce_qp_post_send(p.qp[0], &wr, &bad), 0,
		"two empty inline SGEs");
	pair_expect_done(&p, 9, 1, "two empty inline SGEs");
	CHECK(pair_wait(&p, 1, &wc, 2000000000ull) == 0 &&
		wc.status == IBV_WC_SUCCESS && wc.byte_len == 0,
		"an empty SEND arrives (%u bytes)", wc.byte_len);
	pair_destroy(&p);

	/* max_send_sge 1: two inline SGEs are one too many */
	pair_create(&L, &p, &one);
	wr_two_inline(&p, &wr, s, IBV_WR_SEND, 0, 4, 8, 4, 1);
	CHECK_EQ(droce_qp_post_send(p.qp[0], &wr, &bad), EINVAL,
		"two SGEs on a QP of one");
	CHECK(bad == &wr, "bad_wr at it");
	CHECK(pair_wait(&p, 0, &wc, 10000000) != 0, "nothing was posted");
	pair_destroy(&p);
}

static void
test_modify(void)
{
	struct one o;
	struct ibv_qp_attr a;
	struct droce_av av;

	make(&o, IBV_QPT_RC, 4);
	memset(&a, 0, sizeof(a));
	a.port_num = 1;
	/* RESET -> RTS: not a legal transition */
	CHECK_EQ(to_state(o.qp[0], IBV_QPS_RTS, 0, &a), -EINVAL, "RESET->RTS");
	/* RESET -> INIT without ACCESS_FLAGS (required for RC) */
	CHECK_EQ(to_state(o.qp[0], IBV_QPS_INIT, IBV_QP_PKEY_INDEX |
		IBV_QP_PORT, &a), -EINVAL, "INIT missing access flags");
	/* with QKEY, which RC does not take */
	CHECK_EQ(to_state(o.qp[0], IBV_QPS_INIT, IBV_QP_PKEY_INDEX |
		IBV_QP_PORT | IBV_QP_ACCESS_FLAGS | IBV_QP_QKEY, &a), -EINVAL,
		"INIT with a forbidden QKEY");
	CHECK_EQ(droce_qp_state(o.qp[0]), IBV_QPS_RESET, "failed: unchanged");
	a.port_num = 2;
	CHECK_EQ(to_state(o.qp[0], IBV_QPS_INIT, IBV_QP_PKEY_INDEX |
		IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, &a), -EINVAL, "port 2");
	a.port_num = 1;
	CHECK_EQ(to_state(o.qp[0], IBV_QPS_INIT, IBV_QP_PKEY_INDEX |
		IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, &a), 0, "INIT");
	/* RTR without MIN_RNR_TIMER */
	fl_av_to(&L, 0, &av);
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = droce_qp_num(o.qp[1]);
	a.max_dest_rd_atomic = 1;
	a.qp_state = IBV_QPS_RTR;
	CHECK_EQ(droce_qp_modify(o.qp[0], &a, IBV_QP_STATE | IBV_QP_AV |
		IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		IBV_QP_MAX_DEST_RD_ATOMIC, &av), -EINVAL, "RTR missing rnr timer");
	/* path MTU above the port's (1500 -> 1024) */
	a.path_mtu = IBV_MTU_4096;
	CHECK_EQ(droce_qp_modify(o.qp[0], &a, IBV_QP_STATE | IBV_QP_AV |
		IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER, &av), -EINVAL,
		"path MTU 4096 on a 1500 port");
	a.path_mtu = IBV_MTU_1024;
	CHECK_EQ(droce_qp_modify(o.qp[0], &a, IBV_QP_STATE | IBV_QP_AV |
		IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER, NULL), -EINVAL,
		"AV without an address");
	CHECK_EQ(droce_qp_modify(o.qp[0], &a, IBV_QP_STATE | IBV_QP_AV |
		IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER, &av), 0, "RTR");
	/* RTS without the retry attributes */
	a.qp_state = IBV_QPS_RTS;
	CHECK_EQ(droce_qp_modify(o.qp[0], &a, IBV_QP_STATE | IBV_QP_SQ_PSN,
		NULL), -EINVAL, "RTS missing timeout/retry");
	a.timeout = 14;
	a.retry_cnt = 8;	/* 3 bits */
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	CHECK_EQ(droce_qp_modify(o.qp[0], &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
		IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
		IBV_QP_MAX_QP_RD_ATOMIC, NULL), -EINVAL, "retry_cnt 8");
	a.retry_cnt = 7;
	CHECK_EQ(droce_qp_modify(o.qp[0], &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
		IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
		IBV_QP_MAX_QP_RD_ATOMIC, NULL), 0, "RTS");
	/* CUR_STATE must match */
	a.cur_qp_state = IBV_QPS_RTR;
	CHECK_EQ(droce_qp_modify(o.qp[0], &a, IBV_QP_STATE | IBV_QP_CUR_STATE,
		NULL), -EINVAL, "wrong CUR_STATE");
	/* RTS -> RTS may change timers, not the PSN */
	a.min_rnr_timer = 3;
	CHECK_EQ(droce_qp_modify(o.qp[0], &a, IBV_QP_STATE |
		IBV_QP_MIN_RNR_TIMER, NULL), 0, "RTS->RTS");
	CHECK_EQ(droce_qp_modify(o.qp[0], &a, IBV_QP_STATE | IBV_QP_RQ_PSN,
		NULL), -EINVAL, "RTS->RTS with RQ_PSN");
	/* UD: RESET -> INIT needs QKEY and takes no ACCESS_FLAGS */
	unmake(&o);
	make(&o, IBV_QPT_UD, 4);
	memset(&a, 0, sizeof(a));
	a.port_num = 1;
	CHECK_EQ(to_state(o.qp[0], IBV_QPS_INIT, IBV_QP_PKEY_INDEX |
		IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, &a), -EINVAL,
		"UD INIT with access flags");
	CHECK_EQ(to_state(o.qp[0], IBV_QPS_INIT, IBV_QP_PKEY_INDEX |
		IBV_QP_PORT | IBV_QP_QKEY, &a), 0, "UD INIT");
	CHECK_EQ(to_state(o.qp[0], IBV_QPS_RTR, 0, &a), 0, "UD RTR");
	CHECK_EQ(to_state(o.qp[0], IBV_QPS_RTS, 0, &a), -EINVAL,
		"UD RTS without SQ_PSN");
	CHECK_EQ(to_state(o.qp[0], IBV_QPS_RTS, IBV_QP_SQ_PSN, &a), 0, "UD RTS");
	unmake(&o);
}

/*
 * A QP's CQs and SRQ share its queue. One no QP uses can move to another
 * queue (droce_cq_move / droce_srq_move); one a QP uses cannot.
 */
static void
test_queue_moves(void)
{
	struct droce_dev_conf c;
	struct droce_dev *dev;
	struct droce_pd *pd;
	struct droce_cq *cq0, *cq1;
	struct droce_srq *srq;
	struct droce_qp *qp;
	struct ibv_qp_init_attr ia;
	struct ibv_srq_init_attr sa;

	memset(&c, 0, sizeof(c));
	c.mac[0] = 2;
	c.eth_mtu = 1500;
	c.nb_queues = 2;
	dev = droce_dev_create(&c);
	CHECK(dev != NULL, "device with 2 queues");
	pd = droce_pd_alloc(dev);
	cq0 = droce_cq_create(dev, 0, 16);
	cq1 = droce_cq_create(dev, 1, 16);
	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = 16;
	sa.attr.max_sge = 1;
	srq = droce_srq_create(pd, 0, &sa);
	CHECK(pd && cq0 && cq1 && srq, "objects");
	memset(&ia, 0, sizeof(ia));
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = 8;
	ia.cap.max_send_sge = 1;
	errno = 0;
	CHECK(droce_qp_create(pd, &ia, cq0, cq1, NULL) == NULL &&
		errno == EINVAL, "CQs on two queues: EINVAL");
	CHECK_EQ(droce_cq_move(cq1, 2), -EINVAL, "no queue 2");
	CHECK_EQ(droce_cq_move(cq1, 0), 0, "unused CQ moves");
	CHECK_EQ(droce_cq_queue(cq1), droce_cq_queue(cq0), "now together");
	qp = droce_qp_create(pd, &ia, cq0, cq1, srq);
	CHECK(qp != NULL, "QP with both CQs and the SRQ on queue 0");
	CHECK_EQ(droce_qp_num(qp) != 0 &&
		droce_qpn_queue(dev, droce_qp_num(qp)) == 0, 1,
		"its number names queue 0");
	CHECK_EQ(droce_cq_move(cq1, 1), -EBUSY, "a used CQ stays");
	CHECK_EQ(droce_srq_move(srq, 1), -EBUSY, "a used SRQ stays");
	CHECK_EQ(droce_cq_move(cq1, 0), 0, "a move to where it is");
	CHECK_EQ(droce_qp_destroy(qp), 0, "QP gone");
	CHECK_EQ(droce_cq_move(cq1, 1), 0, "free to move again");
	CHECK_EQ(droce_srq_move(srq, 1), 0, "the SRQ too");
	CHECK_EQ(droce_srq_destroy(srq), 0, "destroy SRQ");
	CHECK_EQ(droce_cq_destroy(cq0), 0, "destroy CQ 0");
	CHECK_EQ(droce_cq_destroy(cq1), 0, "destroy CQ 1");
	droce_pd_dealloc(pd);
	droce_dev_destroy(dev);
}

/* The GSI QP: QPN 1, one per device, UD only; MADs go out and in with
 * Q_Key 0x80010000 (the peer's GSI QP, through the fake link). */
static void
test_gsi(void)
{
	struct droce_cq *cq[2];
	struct droce_qp *g[2], *again;
	struct ibv_qp_init_attr ia;
	struct fl_qp_opts o;
	struct droce_ah *ah;
	struct droce_av av;
	struct ibv_wc wc;
	uint8_t buf[2][40 + 256];
	struct droce_mr *mr[2];
	int s;

	fl_qp_opts_default(&o);
	o.qkey = 0x80010000u;
	for (s = 0; s < 2; s++) {
		cq[s] = droce_cq_create(L.end[s].dev, 0, 16);
		memset(&ia, 0, sizeof(ia));
		ia.qp_type = IBV_QPT_RC;
		ia.cap.max_send_wr = ia.cap.max_recv_wr = 4;
		ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
		CHECK(droce_qp_create_gsi(L.end[s].pd, &ia, cq[s], cq[s]) == NULL &&
			errno == EINVAL, "GSI: RC refused with EINVAL");
		ia.qp_type = IBV_QPT_UD;
		g[s] = droce_qp_create_gsi(L.end[s].pd, &ia, cq[s], cq[s]);
		CHECK(g[s] != NULL && droce_qp_num(g[s]) == 1, "GSI QP is QPN 1");
		mr[s] = droce_mr_reg(L.end[s].pd, buf[s], sizeof(buf[s]),
			(uintptr_t)buf[s], IBV_ACCESS_LOCAL_WRITE);
	}
	again = droce_qp_create_gsi(L.end[0].pd, &ia, cq[0], cq[0]);
	CHECK(again == NULL && errno == EBUSY, "a second GSI QP: EBUSY");
	CHECK_EQ(fl_connect(&L, g[0], g[1], &o), 0, "GSI QPs up");
	{
		struct ibv_sge rs = { (uintptr_t)buf[1], sizeof(buf[1]),
			droce_mr_lkey(mr[1]) };
		struct ibv_recv_wr rw = { .wr_id = 7, .sg_list = &rs,
			.num_sge = 1 }, *rbad;
		struct ibv_sge ss = { (uintptr_t)buf[0] + 40, 256,
			droce_mr_lkey(mr[0]) };
		struct ibv_send_wr sw, *sbad;

		CHECK_EQ(droce_qp_post_recv(g[1], &rw, &rbad), 0, "GSI recv");
		fl_av_to(&L, 0, &av);
		ah = droce_ah_create(L.end[0].pd, &av);
		memset(&sw, 0, sizeof(sw));
		memset(buf[0] + 40, 0x07, 256);
		sw.opcode = IBV_WR_SEND;
		sw.sg_list = &ss;
		sw.num_sge = 1;
		sw.send_flags = IBV_SEND_SIGNALED;
		sw.wr.ud.remote_qpn = 1;
		sw.wr.ud.remote_qkey = 0x80010000u;
		sw.wr.ud.ah = (struct ibv_ah *)ah;
		CHECK_EQ(droce_qp_post_send(g[0], &sw, &sbad), 0, "GSI send");
		fl_run_idle(&L, 1000000000ull);
		CHECK(droce_cq_poll(cq[1], &wc, 1) == 1 &&
			wc.status == IBV_WC_SUCCESS && wc.src_qp == 1 &&
			wc.byte_len == 40 + 256 && buf[1][40] == 0x07,
			"a MAD from QP1 to QP1");
		droce_ah_destroy(ah);
	}
	for (s = 0; s < 2; s++) {
		CHECK_EQ(droce_qp_destroy(g[s]), 0, "GSI destroyed");
		droce_mr_dereg(mr[s]);
		droce_cq_destroy(cq[s]);
	}
}

int
main(void)
{
	CHECK_EQ(fl_init(&L, 9, 1500), 0, "fakelink");
	test_states(IBV_QPT_RC);
	test_states(IBV_QPT_UC);
	test_states(IBV_QPT_UD);
	test_bad_wrs();
	test_inline_pieces();
	test_modify();
	test_queue_moves();
	test_gsi();
	fl_fini(&L);
	return check_report("test_tp_post");
}
