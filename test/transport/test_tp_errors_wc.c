/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * test_tp_errors's cases on error completions: retries and RNR retries
 * exhausted, remote access, invalid requests, local length and protection
 * errors, an MR gone mid-message; each with the QP states after it.
 */

#include "tp_errors.h"

void
test_retry_exc(void)
{
	struct pair p;
	struct fl_qp_opts o;
	uint64_t id = 0;	/* pair_status leaves it on a timeout */

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

void
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
void
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

void
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

void
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
void
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

void
test_loc_len(void)
{
	struct pair p;
	uint64_t id = 0;	/* pair_status leaves it on a timeout */

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

void
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
void
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
