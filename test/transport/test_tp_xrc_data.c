/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * test_tp_xrc's cases on data: SENDs of every size into the SRQ named,
 * WRITE, WRITE with immediate, READ and both atomics, and a mix of them
 * over a lossy link.
 */

#include "tp_xrc.h"

/* SENDs of every size around the MTU into SRQ a. */
void
test_send(void)
{
	static const uint32_t sizes[] = { 0, 1, 3, 64, 1023, 1024, 1025,
		4096, 5000, 16384 };
	struct xpair p;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge s;
	struct ibv_wc wc;
	struct droce_tp_stats st;
	uint32_t i, n = sizeof(sizes) / sizeof(sizes[0]);

	xpair_make(&p);
	xpair_connect(&p);
	memset(&wire, 0, sizeof(wire));
	wire.srqn = droce_srq_num(p.a);
	L.filter = watch;
	for (i = 0; i < n; i++)
		srq_post(&p, p.a, 0, 20000, 100 + i);
	for (i = 0; i < n; i++) {
		pattern(p.sb.p, sizes[i], i);
		memset(p.rb.p, 0, 20000);
		s = sge_of(&p.sb, 0, sizes[i]);
		wr_init(&wr, &s, i & 1 ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND, i,
			droce_srq_num(p.a));
		wr.imm_data = 0x11223344;
		CHECK_EQF(droce_qp_post_send(p.ini, &wr, &bad), 0, "post %u", i);
		CHECK_EQF(wait_cq(p.scq, &wc), 0, "send completion %u", i);
		CHECK_EQF(wc.status, IBV_WC_SUCCESS, "send %u status", i);
		CHECK_EQF(wc.qp_num, droce_qp_num(p.ini), "send qp_num");
		CHECK_EQF(wait_cq(p.rcq, &wc), 0, "receive completion %u", i);
		CHECK_EQF(wc.status, IBV_WC_SUCCESS, "receive %u status", i);
		CHECK_EQF(wc.opcode, IBV_WC_RECV, "receive opcode");
		CHECK_EQF(wc.wr_id, 100 + i, "the SRQ's WQE, in order");
		CHECK_EQF(wc.byte_len, sizes[i], "bytes %u", i);
		CHECK_EQF(wc.qp_num, droce_qp_num(p.tgt),
			"qp_num is the XRC_RECV QP's");
		CHECK_EQF(!!(wc.wc_flags & IBV_WC_WITH_IMM), i & 1, "imm flag");
		if (i & 1)
			CHECK_EQF(wc.imm_data, 0x11223344, "imm");
		CHECK(pattern_ok(p.rb.p, sizes[i], i), "SEND %u bytes placed",
			sizes[i]);
	}
	fl_run_idle(&L, 100000000);
	CHECK(wire.req >= (int)n && wire.resp > 0, "frames both ways");
	CHECK_EQF(wire.bad, 0, "XRC opcodes; XRCETH on requests only");
	CHECK_EQF(droce_qp_state(p.ini), IBV_QPS_RTS, "XRC_SEND RTS");
	CHECK_EQF(droce_qp_state(p.tgt), IBV_QPS_RTS, "XRC_RECV RTS");
	droce_qp_stats(p.tgt, &st);
	CHECK_EQF(st.xrc_bad_srq, 0, "no bad XRCETH");
	/* no receive: RNR NAK, retried forever (rnr_retry 7) until one is
	 * posted to the SRQ */
	pattern(p.sb.p, 100, 77);
	s = sge_of(&p.sb, 0, 100);
	wr_init(&wr, &s, IBV_WR_SEND, 50, droce_srq_num(p.a));
	CHECK_EQF(droce_qp_post_send(p.ini, &wr, &bad), 0, "post (no recv)");
	fl_run_idle(&L, 50000000);
	CHECK_EQF(droce_cq_poll(p.rcq, &wc, 1), 0, "nothing received yet");
	srq_post(&p, p.a, 0, 200, 999);
	CHECK_EQF(wait_cq(p.rcq, &wc), 0, "received after the post");
	CHECK_EQF(wc.wr_id, 999, "the late WQE");
	CHECK(pattern_ok(p.rb.p, 100, 77), "late SEND placed");
	CHECK_EQF(wait_cq(p.scq, &wc), 0, "sender completes");
	CHECK_EQF(wc.status, IBV_WC_SUCCESS, "after RNR");
	xpair_free(&p);
}

/* WRITE, WRITE with immediate, READ and both atomics over XRC. */
void
test_rdma(void)
{
	struct xpair p;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge s;
	struct ibv_wc wc;
	uint64_t v;
	uint32_t srqn;

	xpair_make(&p);
	xpair_connect(&p);
	if (cap_path != NULL)
		CHECK_EQF(fl_capture(&L, cap_path, 1, 1000), 0, "capture");
	srqn = droce_srq_num(p.a);
	memset(&wire, 0, sizeof(wire));
	wire.srqn = srqn;
	L.filter = watch;
	/* WRITE of 3 MTUs + 7 */
	pattern(p.sb.p, 3079, 5);
	s = sge_of(&p.sb, 0, 3079);
	wr_init(&wr, &s, IBV_WR_RDMA_WRITE, 1, srqn);
	wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)p.rb.p + 8192;
	wr.wr.rdma.rkey = droce_mr_rkey(p.rb.mr);
	CHECK_EQF(droce_qp_post_send(p.ini, &wr, &bad), 0, "post WRITE");
	CHECK_EQF(wait_cq(p.scq, &wc), 0, "WRITE completes");
	CHECK_EQF(wc.status, IBV_WC_SUCCESS, "WRITE status");
	CHECK_EQF(wc.opcode, IBV_WC_RDMA_WRITE, "WRITE opcode");
	CHECK(pattern_ok(p.rb.p + 8192, 3079, 5), "WRITE placed");
	CHECK_EQF(p.rb.p[8192 + 3079], 0, "nothing past it");
	/* WRITE with immediate: consumes a receive of the SRQ */
	srq_post(&p, p.a, 0, 16, 7);
	pattern(p.sb.p, 200, 6);
	s = sge_of(&p.sb, 0, 200);
	wr_init(&wr, &s, IBV_WR_RDMA_WRITE_WITH_IMM, 2, srqn);
	wr.imm_data = 0xabcdef01;
	wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)p.rb.p + 16384;
	wr.wr.rdma.rkey = droce_mr_rkey(p.rb.mr);
	CHECK_EQF(droce_qp_post_send(p.ini, &wr, &bad), 0, "post WRITE_IMM");
	CHECK_EQF(wait_cq(p.rcq, &wc), 0, "WRITE_IMM received");
	CHECK_EQF(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM, "receive opcode");
	CHECK_EQF(wc.wr_id, 7, "from the SRQ");
	CHECK_EQF(wc.imm_data, 0xabcdef01, "imm");
	CHECK_EQF(wc.qp_num, droce_qp_num(p.tgt), "qp_num");
	CHECK(pattern_ok(p.rb.p + 16384, 200, 6), "WRITE_IMM placed");
	CHECK_EQF(wait_cq(p.scq, &wc), 0, "WRITE_IMM completes");
	CHECK_EQF(wc.status, IBV_WC_SUCCESS, "WRITE_IMM status");
	/* READ of 2 MTUs + 100 */
	pattern(p.rb.p + 32768, 2148, 8);
	memset(p.sb.p, 0, 4096);
	s = sge_of(&p.sb, 0, 2148);
	wr_init(&wr, &s, IBV_WR_RDMA_READ, 3, srqn);
	wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)p.rb.p + 32768;
	wr.wr.rdma.rkey = droce_mr_rkey(p.rb.mr);
	CHECK_EQF(droce_qp_post_send(p.ini, &wr, &bad), 0, "post READ");
	CHECK_EQF(wait_cq(p.scq, &wc), 0, "READ completes");
	CHECK_EQF(wc.status, IBV_WC_SUCCESS, "READ status");
	CHECK_EQF(wc.opcode, IBV_WC_RDMA_READ, "READ opcode");
	CHECK(pattern_ok(p.sb.p, 2148, 8), "READ data");
	/* fetch-add and compare-swap */
	v = 40;
	memcpy(p.rb.p + 40960, &v, 8);
	s = sge_of(&p.sb, 4096, 8);
	wr_init(&wr, &s, IBV_WR_ATOMIC_FETCH_AND_ADD, 4, srqn);
	wr.wr.atomic.remote_addr = (uint64_t)(uintptr_t)p.rb.p + 40960;
	wr.wr.atomic.rkey = droce_mr_rkey(p.rb.mr);
	wr.wr.atomic.compare_add = 2;
	CHECK_EQF(droce_qp_post_send(p.ini, &wr, &bad), 0, "post FETCH_ADD");
	CHECK_EQF(wait_cq(p.scq, &wc), 0, "FETCH_ADD completes");
	CHECK_EQF(wc.status, IBV_WC_SUCCESS, "FETCH_ADD status");
	memcpy(&v, p.sb.p + 4096, 8);
	CHECK_EQF(v, 40, "original value");
	memcpy(&v, p.rb.p + 40960, 8);
	CHECK_EQF(v, 42, "added");
	wr_init(&wr, &s, IBV_WR_ATOMIC_CMP_AND_SWP, 5, srqn);
	wr.wr.atomic.remote_addr = (uint64_t)(uintptr_t)p.rb.p + 40960;
	wr.wr.atomic.rkey = droce_mr_rkey(p.rb.mr);
	wr.wr.atomic.compare_add = 42;
	wr.wr.atomic.swap = 0x5555;
	CHECK_EQF(droce_qp_post_send(p.ini, &wr, &bad), 0, "post CMP_SWAP");
	CHECK_EQF(wait_cq(p.scq, &wc), 0, "CMP_SWAP completes");
	CHECK_EQF(wc.status, IBV_WC_SUCCESS, "CMP_SWAP status");
	memcpy(&v, p.rb.p + 40960, 8);
	CHECK_EQF(v, 0x5555, "swapped");
	fl_run_idle(&L, 100000000);
	CHECK_EQF(wire.bad, 0, "XRC opcodes; XRCETH on requests only");
	CHECK_EQF(droce_qp_state(p.tgt), IBV_QPS_RTS, "XRC_RECV RTS");
	xpair_free(&p);
}

/* SENDs, WRITEs and READs over 3% loss, duplication and reordering. */
void
test_lossy(void)
{
	struct xpair p;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge s;
	struct ibv_wc wc;
	uint32_t i, n = 240, srqn, sends = 0, got = 0, done = 0;
	int d;

	xpair_make(&p);
	xpair_connect(&p);
	srqn = droce_srq_num(p.a);
	for (d = 0; d < 2; d++) {
		L.faults[d].drop_ppm = 30000;
		L.faults[d].dup_ppm = 20000;
		L.faults[d].reorder_ppm = 20000;
	}
	for (i = 0; i < n; i++)
		if (i % 3 == 0)
			srq_post(&p, p.a, 256 * (i / 3), 256, i);
	for (i = 0; i < n; i++) {
		uint32_t len = 100 + i % 28;

		pattern(p.sb.p + 128 * i, len, i);
		s = sge_of(&p.sb, 128 * i, len);
		if (i % 3 == 0) {
			wr_init(&wr, &s, IBV_WR_SEND, i, srqn);
			sends++;
		} else if (i % 3 == 1) {
			wr_init(&wr, &s, IBV_WR_RDMA_WRITE, i, srqn);
			wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)p.rb.p +
				32768 + 128 * i;
			wr.wr.rdma.rkey = droce_mr_rkey(p.rb.mr);
			s.length = 100;
		} else {
			/* read back what the WRITE before it put */
			s = sge_of(&p.sb, 32768 + 128 * i, 100);
			wr_init(&wr, &s, IBV_WR_RDMA_READ, i, srqn);
			wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)p.rb.p +
				32768 + 128 * (i - 1);
			wr.wr.rdma.rkey = droce_mr_rkey(p.rb.mr);
		}
		/* fence: a READ after the WRITE it reads */
		if (i % 3 == 2)
			wr.send_flags |= IBV_SEND_FENCE;
		CHECK_EQF(droce_qp_post_send(p.ini, &wr, &bad), 0, "post %u", i);
		if ((i & 15) == 15)
			fl_step(&L, 1000);
	}
	while (done < n && wait_cq(p.scq, &wc) == 0) {
		CHECK_EQF(wc.status, IBV_WC_SUCCESS, "lossy %llu",
			(unsigned long long)wc.wr_id);
		CHECK_EQF(wc.wr_id, done, "in order");
		done++;
	}
	while (got < sends && wait_cq(p.rcq, &wc) == 0) {
		CHECK_EQF(wc.status, IBV_WC_SUCCESS, "receive");
		CHECK_EQF(wc.wr_id, 3 * got, "receives in order");
		got++;
	}
	CHECK_EQF(done, n, "every WR completed");
	CHECK_EQF(got, sends, "every SEND received");
	for (i = 0; i < n; i++) {
		if (i % 3 == 0)
			CHECK(pattern_ok(p.rb.p + 256 * (i / 3), 100 + i % 28,
				i), "SEND %u", i);
		else if (i % 3 == 1)
			CHECK(pattern_ok(p.rb.p + 32768 + 128 * i, 100, i),
				"WRITE %u", i);
		else
			CHECK(pattern_ok(p.sb.p + 32768 + 128 * i, 100, i - 1),
				"READ %u", i);
	}
	CHECK(L.cnt[0].dropped + L.cnt[1].dropped > 0, "the link lost frames");
	CHECK_EQF(droce_qp_state(p.ini), IBV_QPS_RTS, "XRC_SEND RTS");
	CHECK_EQF(droce_qp_state(p.tgt), IBV_QPS_RTS, "XRC_RECV RTS");
	xpair_free(&p);
}
