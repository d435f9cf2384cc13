/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * UD sends from one QP through several address handles: the QP keeps one
 * header template, made for the address of the WR it sends and made again
 * when the next WR's address differs, so every frame must carry its own
 * AH's traffic class and hop limit (seen in the GRH of its receive), in
 * one post list that alternates them, and after an AH is destroyed and
 * another made in its place. Receives: one SGE that holds the GRH and the
 * payload, the same over three SGEs, one too short (LOC_LEN_ERR). Posts
 * the fast way takes (one SGE, two inline) and the ones it leaves to the
 * general checks (FENCE, no AH, over the MTU, not a SEND); a SEND under
 * an lkey that names nothing (LOC_PROT_ERR, nothing sent).
 */

#include "tp_util.h"

#define QKEY 0x11111111u
#define LEN 100
#define NWR 6

static struct fakelink L;

static struct droce_ah *
ah_with(uint8_t tclass, uint8_t hop_limit)
{
	struct droce_av av;

	fl_av_to(&L, 0, &av);
	av.tclass = tclass;
	av.hop_limit = hop_limit;
	return droce_ah_create(L.end[0].pd, &av);
}

static void
ud_wr(struct ibv_send_wr *wr, struct ibv_sge *s, struct droce_ah *ah,
		uint32_t dqpn, uint64_t id)
{
	wr_signaled(wr, s, IBV_WR_SEND, id);
	wr->wr.ud.ah = droce_ah_to_ibv(ah);
	wr->wr.ud.remote_qpn = dqpn;
	wr->wr.ud.remote_qkey = QKEY;
}

/* Receive i's GRH (an IPv4 header in its last 20 bytes): the DSCP and
 * TTL its frame had. */
static void
grh_of(const uint8_t *grh, uint8_t *dscp, uint8_t *ttl)
{
	*dscp = grh[20 + 1] >> 2;
	*ttl = grh[20 + 8];
}

/* NWR sends in one list, AHs alternating, into one-SGE receives. */
static void
test_alternating(struct pair *p)
{
	static const uint8_t tclass[2] = { 0, 0x48 }, hops[2] = { 64, 7 };
	struct droce_ah *ah[2] = { ah_with(tclass[0], hops[0]),
		ah_with(tclass[1], hops[1]) };
	struct ibv_send_wr wr[NWR], *bad;
	struct ibv_sge s[NWR];
	struct ibv_wc wc;
	uint32_t slot = DROCE_GRH_LEN + LEN, i;
	uint8_t dscp, ttl;

	CHECK(ah[0] != NULL && ah[1] != NULL, "two AHs");
	for (i = 0; i < NWR; i++) {
		pair_post_recv(p, 1, i * slot, slot, 100 + i);
		pattern(p->b[0].p + i * LEN, LEN, i);
		s[i] = sge_of(&p->b[0], i * LEN, LEN);
		ud_wr(&wr[i], &s[i], ah[i & 1], droce_qp_num(p->qp[1]), i);
		wr[i].next = i + 1 < NWR ? &wr[i + 1] : NULL;
	}
	CHECK_EQ(droce_qp_post_send(p->qp[0], wr, &bad), 0, "post list");
	for (i = 0; i < NWR; i++) {
		CHECK(pair_wait(p, 1, &wc, 100000000) == 0, "receive %u", i);
		CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 100 + i &&
			wc.byte_len == slot && (wc.wc_flags & IBV_WC_GRH),
			"receive %u: status %d id %llu len %u", i, wc.status,
			(unsigned long long)wc.wr_id, wc.byte_len);
		grh_of(p->b[1].p + i * slot, &dscp, &ttl);
		CHECK(dscp == tclass[i & 1] >> 2 && ttl == hops[i & 1],
			"frame %u: DSCP %u TTL %u, its AH's %u %u", i, dscp,
			ttl, tclass[i & 1] >> 2, hops[i & 1]);
		CHECK(pattern_ok(p->b[1].p + i * slot + DROCE_GRH_LEN, LEN, i),
			"frame %u: payload", i);
	}
	for (i = 0; i < NWR; i++)
		CHECK(pair_wait(p, 0, &wc, 100000000) == 0, "send %u", i);
	droce_ah_destroy(ah[0]);
	droce_ah_destroy(ah[1]);
}

/* An AH destroyed after its WR was posted and another made: the next
 * frame has the new one's header, the one posted before its own. */
static void
test_ah_replaced(struct pair *p)
{
	struct droce_ah *ah = ah_with(0, 33);
	struct ibv_send_wr wr, *bad;
	struct ibv_sge s = sge_of(&p->b[0], 0, LEN);
	struct ibv_wc wc;
	uint32_t slot = DROCE_GRH_LEN + LEN;
	uint8_t dscp, ttl;
	int i;

	for (i = 0; i < 2; i++) {
		pair_post_recv(p, 1, (uint32_t)i * slot, slot, 200 + i);
		ud_wr(&wr, &s, ah, droce_qp_num(p->qp[1]), 200 + i);
		CHECK_EQ(droce_qp_post_send(p->qp[0], &wr, &bad), 0, "post");
		droce_ah_destroy(ah);	/* the WQE has its own copy */
		ah = ah_with(0x20, 44);
		CHECK_EQ(pair_wait(p, 1, &wc, 100000000), 0, "receive");
		grh_of(p->b[1].p + i * slot, &dscp, &ttl);
		CHECK(wc.status == IBV_WC_SUCCESS &&
			ttl == (i == 0 ? 33 : 44) &&
			dscp == (i == 0 ? 0 : 0x20 >> 2),
			"WR %d: status %d TTL %u DSCP %u", i, wc.status, ttl,
			dscp);
		CHECK_EQ(pair_wait(p, 0, &wc, 100000000), 0, "send");
	}
	droce_ah_destroy(ah);
}

/* The GRH and payload over three SGEs (the GRH split), then a receive
 * one byte short of them. */
static void
test_receive_shapes(struct pair *p)
{
	struct droce_ah *ah = ah_with(0, 64);
	struct ibv_sge rs[3] = { sge_of(&p->b[1], 0, 24),
		sge_of(&p->b[1], 1000, 50), sge_of(&p->b[1], 2000, 100) };
	struct ibv_recv_wr rw = { .wr_id = 300, .sg_list = rs, .num_sge = 3 };
	struct ibv_recv_wr *rbad;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge s = sge_of(&p->b[0], 0, LEN);
	struct ibv_wc wc;
	uint8_t whole[DROCE_GRH_LEN + LEN];

	pattern(p->b[0].p, LEN, 77);
	CHECK_EQ(droce_qp_post_recv(p->qp[1], &rw, &rbad), 0, "post 3 SGEs");
	ud_wr(&wr, &s, ah, droce_qp_num(p->qp[1]), 300);
	CHECK_EQ(droce_qp_post_send(p->qp[0], &wr, &bad), 0, "post");
	CHECK_EQ(pair_wait(p, 1, &wc, 100000000), 0, "receive");
	CHECK(wc.status == IBV_WC_SUCCESS &&
		wc.byte_len == DROCE_GRH_LEN + LEN, "3 SGEs: status %d len %u",
		wc.status, wc.byte_len);
	memcpy(whole, p->b[1].p, 24);
	memcpy(whole + 24, p->b[1].p + 1000, 50);
	memcpy(whole + 74, p->b[1].p + 2000, DROCE_GRH_LEN + LEN - 74);
	CHECK(whole[20] == 0x45 && pattern_ok(whole + DROCE_GRH_LEN, LEN, 77),
		"3 SGEs: GRH and payload in order");
	CHECK_EQ(pair_wait(p, 0, &wc, 100000000), 0, "send");

	pair_post_recv(p, 1, 4000, DROCE_GRH_LEN + LEN - 1, 301);
	CHECK_EQ(droce_qp_post_send(p->qp[0], &wr, &bad), 0, "post");
	CHECK_EQ(pair_wait(p, 1, &wc, 100000000), 0, "short receive");
	CHECK(wc.wr_id == 301 && wc.status == IBV_WC_LOC_LEN_ERR,
		"one byte short: status %d", wc.status);
	CHECK_EQ(pair_wait(p, 0, &wc, 100000000), 0, "send");
	droce_ah_destroy(ah);
}

/* What the post takes and refuses: every refusal EINVAL at the WR, and
 * a SEND of two inline SGEs (a header and a payload) arrives joined. */
static void
test_post_shapes(struct pair *p)
{
	struct droce_ah *ah = ah_with(0, 64);
	uint32_t dqpn = droce_qp_num(p->qp[1]);
	struct ibv_send_wr wr, *bad;
	struct ibv_sge s = sge_of(&p->b[0], 0, LEN), two[2];
	struct ibv_wc wc;

	ud_wr(&wr, &s, ah, dqpn, 400);
	wr.send_flags |= IBV_SEND_FENCE;
	CHECK(droce_qp_post_send(p->qp[0], &wr, &bad) == EINVAL && bad == &wr,
		"FENCE on UD refused");
	ud_wr(&wr, &s, ah, dqpn, 401);
	wr.wr.ud.ah = NULL;
	CHECK(droce_qp_post_send(p->qp[0], &wr, &bad) == EINVAL && bad == &wr,
		"no AH refused");
	s.length = 1025;	/* path MTU 1024 on this link */
	ud_wr(&wr, &s, ah, dqpn, 402);
	CHECK(droce_qp_post_send(p->qp[0], &wr, &bad) == EINVAL && bad == &wr,
		"a message over the MTU refused");
	s.length = LEN;
	ud_wr(&wr, &s, ah, dqpn, 403);
	wr.opcode = IBV_WR_RDMA_WRITE;
	CHECK(droce_qp_post_send(p->qp[0], &wr, &bad) == EINVAL && bad == &wr,
		"WRITE on UD refused");

	pattern(p->b[0].p, 8, 5);
	pattern(p->b[0].p + 512, 56, 6);
	two[0] = sge_of(&p->b[0], 0, 8);
	two[1] = sge_of(&p->b[0], 512, 56);
	pair_post_recv(p, 1, 0, DROCE_GRH_LEN + 64, 404);
	ud_wr(&wr, two, ah, dqpn, 404);
	wr.num_sge = 2;
	wr.send_flags |= IBV_SEND_INLINE;
	CHECK_EQ(droce_qp_post_send(p->qp[0], &wr, &bad), 0, "two inline SGEs");
	memset(p->b[0].p, 0, 1024);	/* inline: copied at the post */
	CHECK_EQ(pair_wait(p, 1, &wc, 100000000), 0, "receive");
	CHECK(wc.status == IBV_WC_SUCCESS && wc.byte_len == DROCE_GRH_LEN + 64 &&
		pattern_ok(p->b[1].p + DROCE_GRH_LEN, 8, 5) &&
		pattern_ok(p->b[1].p + DROCE_GRH_LEN + 8, 56, 6),
		"two inline SGEs joined: status %d len %u", wc.status,
		wc.byte_len);
	CHECK_EQ(pair_wait(p, 0, &wc, 100000000), 0, "send");
	droce_ah_destroy(ah);
}

/* A SEND whose lkey names nothing: LOC_PROT_ERR, nothing sent. Last:
 * the QP errors. */
static void
test_bad_lkey(struct pair *p)
{
	struct droce_ah *ah = ah_with(0, 64);
	struct ibv_send_wr wr, *bad;
	struct ibv_sge s = sge_of(&p->b[0], 0, LEN);
	struct ibv_wc wc;
	uint64_t sent = L.cnt[0].sent;

	s.lkey ^= 0x5a5a00;
	ud_wr(&wr, &s, ah, droce_qp_num(p->qp[1]), 500);
	CHECK_EQ(droce_qp_post_send(p->qp[0], &wr, &bad), 0, "post");
	CHECK_EQ(pair_wait(p, 0, &wc, 100000000), 0, "send completion");
	CHECK(wc.wr_id == 500 && wc.status == IBV_WC_LOC_PROT_ERR,
		"bad lkey: status %d", wc.status);
	CHECK_EQ(L.cnt[0].sent, sent, "nothing sent");
	droce_ah_destroy(ah);
}

int
main(void)
{
	struct pair_cfg c = {
		.type = IBV_QPT_UD, .cqe = 64, .send_wr = 16, .sges = 3,
		.recv_wr = 16, .max_inline = 128, .check_qp = 1,
		.buf_len = 8192,
		.acc1 = ACC_ALL,
	};
	struct pair p;

	CHECK_EQ(fl_init(&L, 1, 1500), 0, "fakelink");
	pair_create(&L, &p, &c);
	test_alternating(&p);
	test_ah_replaced(&p);
	test_post_shapes(&p);
	test_receive_shapes(&p);
	test_bad_lkey(&p);
	pair_destroy(&p);
	fl_fini(&L);
	return check_report("test_tp_ud");
}
