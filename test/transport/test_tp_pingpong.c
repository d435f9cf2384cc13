/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * A ping-pong's ACK waits for the answer (tp_resp.c, hold_for_answer):
 * two QPs WRITE to each other in turn, as ib_write_lat does. Once each
 * answers the other's requests, the ACK of a request leaves in the same
 * pass as the answer, so that the requester's completion comes with the
 * answer's data already placed; a request left unanswered is ACKed after
 * TP_ACK_HOLD_NS; a stream of requests, never answered, is ACKed at once.
 */

#include "tp_util.h"

#define HOLD_NS	20000	/* TP_ACK_HOLD_NS */
#define OFF_OPCODE	42	/* Ethernet, IPv4, UDP, then the BTH */

static struct fakelink L;

/* frames seen: direction, opcode, when */
static struct {
	int dir;
	uint8_t op;
	uint64_t at;
} seen[4096];
static unsigned int nseen;

static int
record(struct fakelink *l, int dir, const uint8_t *f, uint32_t len)
{
	if (len > OFF_OPCODE && nseen < sizeof(seen) / sizeof(seen[0]))
		seen[nseen++] = (typeof(seen[0])){ dir, f[OFF_OPCODE], l->now };
	return 0;
}

struct side {
	struct droce_cq *cq;
	struct droce_qp *qp;
	struct tbuf buf;
};

static struct side S[2];

/* side s WRITEs byte v to the other side's buffer, signaled */
static void
write_to_peer(int s, uint8_t v)
{
	struct side *me = &S[s], *peer = &S[1 - s];
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad;

	me->buf.p[0] = v;
	sge = sge_of(&me->buf, 0, 1);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = v;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)peer->buf.p + 8;
	wr.wr.rdma.rkey = droce_mr_rkey(peer->buf.mr);
	CHECK(droce_qp_post_send(me->qp, &wr, &bad) == 0, "post write %u", v);
}

/* step until side s's buffer shows v; 0 or -1 */
static int
wait_byte(int s, uint8_t v)
{
	uint64_t end = L.now + 10000000;

	while (*(volatile uint8_t *)(S[s].buf.p + 8) != v) {
		if (L.now >= end)
			return -1;
		fl_step(&L, 1000);
	}
	return 0;
}

static void
setup(void)
{
	struct ibv_qp_init_attr ia;
	struct fl_qp_opts o;
	int s;

	for (s = 0; s < 2; s++) {
		S[s].cq = droce_cq_create(L.end[s].dev, 0, 64);
		qp_attr(&ia, IBV_QPT_RC, 16, 1);
		S[s].qp = droce_qp_create(L.end[s].pd, &ia, S[s].cq, S[s].cq,
			NULL);
		CHECK(S[s].qp != NULL, "qp create");
		tbuf_init(&S[s].buf, L.end[s].pd, 64, ACC_ALL);
	}
	fl_qp_opts_default(&o);
	CHECK_EQ(fl_connect(&L, S[0].qp, S[1].qp, &o), 0, "connect");
}

/* rounds from..to, each WRITE answered by one the other way, all done */
static void
answered_rounds(uint8_t from, uint8_t to)
{
	struct ibv_wc wc;
	uint8_t v;

	for (v = from; v <= to; v++) {
		write_to_peer(0, v);
		CHECK(wait_byte(1, v) == 0, "B sees %u", v);
		write_to_peer(1, v);
		CHECK(wait_byte(0, v) == 0, "A sees %u", v);
		CHECK(wait_wc(&L, S[0].cq, &wc, 10000000) == 0 &&
			wait_wc(&L, S[1].cq, &wc, 10000000) == 0,
			"round %u done", v);
	}
}

static void
teardown(void)
{
	int s;

	for (s = 0; s < 2; s++) {
		if (S[s].qp != NULL)
			droce_qp_destroy(S[s].qp);
		droce_cq_destroy(S[s].cq);
		tbuf_fini(&S[s].buf);
		memset(&S[s], 0, sizeof(S[s]));
	}
}

/* B's ACKs (direction 1) sent in a pass without a WRITE of B's */
static unsigned int
lone_acks(unsigned int from)
{
	unsigned int i, j, n = 0;

	for (i = from; i < nseen; i++) {
		int with_write = 0;

		if (seen[i].dir != 1 || seen[i].op != DROCE_OP_RC_ACK)
			continue;
		for (j = from; j < nseen; j++)
			with_write |= seen[j].dir == 1 &&
				seen[j].at == seen[i].at &&
				seen[j].op == DROCE_OP_RC_WRITE_ONLY;
		n += !with_write;
	}
	return n;
}

int
main(void)
{
	struct ibv_wc wc;
	unsigned int mark = 0;
	uint64_t t0;
	uint8_t v;

	CHECK_EQ(fl_init(&L, 3, 1500), 0, "fakelink");
	setup();
	L.filter = record;

	/* ping-pong: A (side 0) writes v, B answers with v */
	for (v = 1; v <= 12; v++) {
		if (v == 5)
			mark = nseen;
		write_to_peer(0, v);
		CHECK(wait_byte(1, v) == 0, "B sees %u", v);
		if (v >= 5) {
			/* B's application is slow to answer: its ACK waits */
			fl_step(&L, 3 * L.delay_ns);
			CHECK(droce_cq_poll(S[0].cq, &wc, 1) == 0,
				"round %u: B's ACK waits for its answer", v);
		}
		write_to_peer(1, v);
		CHECK(wait_byte(0, v) == 0, "A sees %u", v);
		/* what ib_write_lat needs: A's completion there with the
		 * answer, not a round trip before it */
		if (v >= 5)
			CHECK(droce_cq_poll(S[0].cq, &wc, 1) == 1,
				"round %u: A's completion came with B's WRITE",
				v);
		else
			CHECK(wait_wc(&L, S[0].cq, &wc, 10000000) == 0,
				"round %u: A's completion", v);
		CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == v,
			"round %u: A's WRITE done", v);
		CHECK(wait_wc(&L, S[1].cq, &wc, 10000000) == 0,
			"round %u: B's completion", v);
		CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == v,
			"round %u: B's WRITE done", v);
	}
	CHECK_EQ(lone_acks(mark), 0, "B's ACKs went with its WRITEs");

	/* unanswered: the ACK after the hold, not before, and not much
	 * after */
	write_to_peer(0, 13);
	CHECK_EQ(wait_byte(1, 13), 0, "B sees 13");
	t0 = L.now;
	CHECK_EQ(wait_wc(&L, S[0].cq, &wc, 10000000), 0, "A's 13 done");
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 13, "13 ok");
	CHECK(L.now - t0 >= HOLD_NS && L.now - t0 <= HOLD_NS + 10000,
		"unanswered: ACKed %llu ns after B saw it (hold %u)",
		(unsigned long long)(L.now - t0), HOLD_NS);

	/* a stream, never answered: each ACKed at once */
	for (v = 14; v <= 16; v++) {
		write_to_peer(0, v);
		CHECK(wait_byte(1, v) == 0, "B sees %u", v);
		t0 = L.now;
		CHECK(wait_wc(&L, S[0].cq, &wc, 10000000) == 0, "A's %u", v);
		CHECK(wc.wr_id == v && L.now - t0 <= 2 * L.delay_ns + 2000,
			"stream %u: ACKed %llu ns after B saw it", v,
			(unsigned long long)(L.now - t0));
	}

	/* B leaves for the error state while its ACK waits for an answer
	 * (libfabric closing a connection right after a receive): the
	 * ACK goes first, and A's WRITE completes */
	answered_rounds(17, 18);
	write_to_peer(0, 19);
	CHECK_EQ(wait_byte(1, 19), 0, "B sees 19");
	CHECK(droce_cq_poll(S[0].cq, &wc, 1) == 0, "19: B's ACK held");
	{
		struct ibv_qp_attr err = { .qp_state = IBV_QPS_ERR };

		CHECK_EQ(droce_qp_modify(S[1].qp, &err, IBV_QP_STATE, NULL), 0,
			"B to the error state");
	}
	CHECK_EQ(wait_wc(&L, S[0].cq, &wc, 10000000), 0, "A's 19 done");
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 19,
		"19: ACKed as B left for the error state (%s)",
		droce_wc_status_str(wc.status));
	CHECK_EQ(fl_run_idle(&L, 10000000), 0, "idle");
	L.filter = NULL;
	teardown();

	/* B's QP destroyed while its ACK waits for an answer, right after
	 * a pass that spent its queue's whole frame budget (a busy queue):
	 * the ACK still goes, and A's WRITE completes instead of being
	 * retried into a QP that is gone (RETRY_EXC_ERR) */
	setup();
	answered_rounds(20, 21);
	write_to_peer(0, 22);
	CHECK_EQ(wait_byte(1, 22), 0, "B sees 22");
	CHECK(droce_cq_poll(S[0].cq, &wc, 1) == 0, "22: B's ACK held");
	droce_tp_progress(L.end[1].q, L.now, 0);
	droce_qp_destroy(S[1].qp);
	S[1].qp = NULL;
	CHECK_EQ(wait_wc(&L, S[0].cq, &wc, 10000000), 0, "A's 22 done");
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 22,
		"22: ACKed as B's QP was destroyed (%s)",
		droce_wc_status_str(wc.status));
	teardown();
	fl_fini(&L);
	return check_report("test_tp_pingpong");
}
