/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * test_tp_errors's cases on the unreliable transports: a broken UC message
 * and a UD SEND with the wrong Q_Key are dropped, silently.
 */

#include "tp_errors.h"

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
void
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

void
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
