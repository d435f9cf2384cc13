/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * test_tp_errors's cases on what the responder answers again: duplicate
 * atomics executed once, lost and duplicate READ responses replayed, the
 * responses of a window of READs and atomics in PSN order.
 */

#include "tp_errors.h"

/* Duplicate everything the requester sends: atomics execute once. */
void
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
void
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
void
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

void
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
