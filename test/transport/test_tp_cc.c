/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * Congestion notification (tp_cc.c): what droce sends is ECT(0) unless the
 * device says Not-ECT or the address handle names a codepoint; frames a
 * switch marked CE make the receiver send CNPs to the sender's QP, in
 * IBTA's format (opcode 0x81, BECN, PSN 0, DSCP 48, Not-ECT, 16 reserved
 * bytes), at most one per QP per 4 us; every byte still lands.
 */

#include <inttypes.h>

#include "tp_util.h"

static struct fakelink L;

/* What each direction carried. */
static struct {
	uint32_t frames[2], ecn[2][4];
	uint32_t cnps, cnp_bad;
	uint64_t cnp_at[64];
	uint32_t qpn0;		/* side 0's QP: where CNPs must go */
} W;

static int
watch(struct fakelink *l, int dir, const uint8_t *f, uint32_t len)
{
	struct droce_pkt pkt;
	uint32_t i;

	if (droce_wire_parse(f, len, NULL, &pkt) != 0)
		return 0;
	W.frames[dir]++;
	if (pkt.opcode != DROCE_OP_CNP) {
		W.ecn[dir][pkt.tclass & DROCE_ECN_MASK]++;
		return 0;
	}
	if (W.cnps < 64)
		W.cnp_at[W.cnps] = l->now;
	W.cnps++;
	/* IBTA A17.9.3, as ConnectX sends it */
	if (dir != 1 || pkt.becn != 1 || pkt.psn != 0 || pkt.ackreq ||
			pkt.dqpn != W.qpn0 || pkt.tclass != 48 << 2 ||
			pkt.payload_len != 0 || len != 14 + 20 + 8 + 12 + 16 + 4)
		W.cnp_bad++;
	for (i = 0; i < 16; i++)
		if (f[14 + 20 + 8 + 12 + i] != 0)
			W.cnp_bad++;
	return 0;
}

static void
make(struct pair *p, uint8_t no_ecn, uint8_t tclass)
{
	struct pair_cfg c = { .buf_len = 1 << 20, .acc1 = ACC_ALL };
	struct fl_qp_opts o;

	fl_no_ecn = no_ecn;
	fl_line_rate_mbps = 25000;
	CHECK_EQ(fl_init(&L, 3, 1500), 0, "fakelink");
	fl_no_ecn = 0;
	fl_line_rate_mbps = 0;
	fl_set_rate(&L, 25000000000ull, 5000);
	L.delay_ns = 5000;
	L.filter = watch;
	memset(&W, 0, sizeof(W));
	fl_qp_opts_default(&o);
	o.tclass = tclass;
	c.o = &o;
	pair_create(&L, p, &c);
	W.qpn0 = droce_qp_num(p->qp[0]);
}

/* A 64 KB WRITE (64 frames of 1 KB), every byte checked. */
static void
write64k(struct pair *p, uint32_t seed)
{
	pattern(p->b[0].p, 65536, seed);
	CHECK_EQ(pair_post(p, IBV_WR_RDMA_WRITE, 0, 65536, REMOTE(p, 0),
		RKEY(p), seed), 0, "post");
	pair_expect_done(p, seed, 1, "64 KB WRITE");
	fl_run_idle(&L, 10000000);
	CHECK(pattern_ok(p->b[1].p, 65536, seed), "every byte");
}

/* ECT(0) on every frame both ways; no CE, no CNP. */
static void
test_ect0(void)
{
	struct droce_tp_stats st;
	struct pair p;

	make(&p, 0, 0);
	write64k(&p, 1);
	CHECK(W.frames[0] >= 64 && W.ecn[0][DROCE_ECN_ECT0] == W.frames[0],
		"requests ECT(0): %u of %u", W.ecn[0][DROCE_ECN_ECT0],
		W.frames[0]);
	CHECK(W.frames[1] > 0 && W.ecn[1][DROCE_ECN_ECT0] == W.frames[1],
		"ACKs ECT(0): %u of %u", W.ecn[1][DROCE_ECN_ECT0], W.frames[1]);
	CHECK_EQ(W.cnps, 0, "no CNP without CE");
	droce_qp_stats(p.qp[1], &st);
	CHECK_EQ(st.np_ecn_marked, 0, "nothing marked");
	pair_destroy(&p);
	fl_fini(&L);
}

/* Not-ECT when the device says so; the AH's own codepoint kept. */
static void
test_ecn_off_and_ah(void)
{
	struct pair p;

	make(&p, 1, 0);
	write64k(&p, 2);
	CHECK(W.ecn[0][DROCE_ECN_NOT_ECT] == W.frames[0] && W.frames[0],
		"no_ecn: Not-ECT, %u of %u", W.ecn[0][DROCE_ECN_NOT_ECT],
		W.frames[0]);
	pair_destroy(&p);
	fl_fini(&L);

	make(&p, 0, 0x20 | DROCE_ECN_ECT1);	/* DSCP 8, ECT(1) */
	write64k(&p, 3);
	CHECK(W.ecn[0][DROCE_ECN_ECT1] == W.frames[0] && W.frames[0],
		"the AH's ECT(1) kept: %u of %u", W.ecn[0][DROCE_ECN_ECT1],
		W.frames[0]);
	pair_destroy(&p);
	fl_fini(&L);
}

/*
 * Every request marked CE on the way: the responder sends CNPs to the
 * requester's QP, at most one per 4 us, each as IBTA has it; the
 * requester's reaction point cuts its rate; the data lands.
 */
static void
test_cnp(void)
{
	struct droce_qp_cc cc;
	struct droce_tp_stats st0, st1;
	uint64_t span;
	struct pair p;
	uint32_t i, close = 0;

	make(&p, 0, 0);
	L.faults[0].ce_ppm = 1000000;
	write64k(&p, 4);
	write64k(&p, 5);
	droce_qp_stats(p.qp[0], &st0);
	droce_qp_stats(p.qp[1], &st1);
	CHECK(st1.np_ecn_marked >= 128, "%" PRIu64 " CE frames counted",
		st1.np_ecn_marked);
	CHECK(W.cnps > 1, "%u CNPs sent", W.cnps);
	CHECK_EQ(W.cnp_bad, 0, "CNPs as IBTA has them");
	CHECK_EQ(st1.np_cnp_sent, W.cnps, "np_cnp_sent counts them");
	CHECK_EQ(st0.rp_cnp_handled, W.cnps, "each arrived at the requester");
	CHECK_EQ(st0.rp_cnp_ignored, 0, "and was acted on");
	droce_qp_cc(p.qp[0], &cc);
	CHECK(cc.limited && cc.rate_mbps < 25000,
		"the requester's rate cut: %" PRIu64 " Mbit/s of 25000",
		cc.rate_mbps);
	for (i = 1; i < W.cnps && i < 64; i++)
		close += W.cnp_at[i] - W.cnp_at[i - 1] < 4000;
	CHECK_EQ(close, 0, "never two within 4 us");
	/* 128 frames at 25 Gbit/s take ~45 us: one CNP per 4 us at most */
	span = W.cnp_at[W.cnps < 64 ? W.cnps - 1 : 63] - W.cnp_at[0];
	CHECK(W.cnps <= span / 4000 + 1, "%u CNPs in %" PRIu64 " ns",
		W.cnps, span);
	CHECK(droce_qp_state(p.qp[0]) == IBV_QPS_RTS &&
		droce_qp_state(p.qp[1]) == IBV_QPS_RTS, "both QPs RTS");
	pair_destroy(&p);
	fl_fini(&L);
}

/* With the reaction point off, CNPs are counted and the rate stays. */
static void
test_cnp_ignored(void)
{
	struct droce_tp_stats st0;
	struct droce_qp_cc cc;
	struct pair p;

	fl_cc = DROCE_CC_NONE;
	make(&p, 0, 0);
	fl_cc = DROCE_CC_DCQCN;
	L.faults[0].ce_ppm = 1000000;
	write64k(&p, 6);
	droce_qp_stats(p.qp[0], &st0);
	CHECK(W.cnps > 1 && st0.rp_cnp_ignored == W.cnps &&
		st0.rp_cnp_handled == 0, "cc none: %u CNPs, %" PRIu64
		" ignored", W.cnps, st0.rp_cnp_ignored);
	droce_qp_cc(p.qp[0], &cc);
	CHECK(!cc.limited && cc.rate_mbps == 25000, "rate not cut");
	pair_destroy(&p);
	fl_fini(&L);
}

int
main(void)
{
	test_ect0();
	test_ecn_off_and_ah();
	test_cnp();
	test_cnp_ignored();
	return check_report("test_tp_cc");
}
