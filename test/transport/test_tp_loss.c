/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * Loss recovery against scripted loss: which frames go again, and only
 * those. READ responses are placed by PSN and only a hole is asked for
 * again (tp_read.c), one READ request per hole; a lost atomic answer is
 * asked again alone, the atomic executed once. Every byte and every
 * completion is checked.
 */

#include <inttypes.h>

#include "tp_util.h"

static struct fakelink L;

struct pair {
	struct droce_cq *cq[2];
	struct droce_qp *qp[2];
	struct tbuf b[2];
};

/* The frames sent (lost ones too): which to drop (by index per
 * direction since watch_reset), and what each side sent. */
#define MAX_DROP 8
static struct {
	uint32_t drop[2][MAX_DROP], ndrop[2], seen[2];
	uint32_t resp;			/* READ responses and atomic ACKs */
	uint32_t reads;			/* READ requests */
	uint32_t read_psn[16], read_len[16];
	uint32_t atomics;
} W;

static int
watch(struct fakelink *l, int dir, const uint8_t *f, uint32_t len)
{
	struct droce_pkt pkt;
	uint32_t i, n = W.seen[dir]++;

	(void)l;
	if (droce_wire_parse(f, len, NULL, &pkt) != 0)
		return 0;
	if (dir == 1 && ((pkt.opcode >= DROCE_OP_RC_READ_RESP_FIRST &&
			pkt.opcode <= DROCE_OP_RC_READ_RESP_ONLY) ||
			pkt.opcode == DROCE_OP_RC_ATOMIC_ACK))
		W.resp++;
	if (dir == 0 && pkt.opcode == DROCE_OP_RC_READ_REQ) {
		if (W.reads < 16) {
			W.read_psn[W.reads] = pkt.psn;
			W.read_len[W.reads] = pkt.reth_len;
		}
		W.reads++;
	}
	if (dir == 0 && pkt.opcode == DROCE_OP_RC_FETCH_ADD)
		W.atomics++;
	for (i = 0; i < W.ndrop[dir]; i++)
		if (W.drop[dir][i] == n)
			return 1;
	return 0;
}

/* Drop frame a (and b) of direction dir, counted from now. */
static void
watch_reset(int dir, uint32_t a, uint32_t b)
{
	memset(&W, 0, sizeof(W));
	if (a != UINT32_MAX)
		W.drop[dir][W.ndrop[dir]++] = a;
	if (b != UINT32_MAX)
		W.drop[dir][W.ndrop[dir]++] = b;
}

static void
pair_make(struct pair *p)
{
	struct ibv_qp_init_attr ia;
	struct fl_qp_opts o;
	int s;

	fl_qp_opts_default(&o);
	CHECK_EQ(fl_init(&L, 5, 1500), 0, "fakelink");
	L.filter = watch;
	watch_reset(0, UINT32_MAX, UINT32_MAX);
	for (s = 0; s < 2; s++) {
		p->cq[s] = droce_cq_create(L.end[s].dev, 0, 64);
		qp_attr(&ia, IBV_QPT_RC, 16, 1);
		p->qp[s] = droce_qp_create(L.end[s].pd, &ia, p->cq[s], p->cq[s],
			NULL);
		tbuf_init(&p->b[s], L.end[s].pd, 1 << 20, ACC_ALL);
	}
	CHECK_EQ(fl_connect(&L, p->qp[0], p->qp[1], &o), 0, "connect");
}

static void
pair_free(struct pair *p)
{
	int s;

	for (s = 0; s < 2; s++) {
		droce_qp_destroy(p->qp[s]);
		droce_cq_destroy(p->cq[s]);
		tbuf_fini(&p->b[s]);
	}
	fl_fini(&L);
}

static void
post_rdma(struct pair *p, enum ibv_wr_opcode op, uint32_t off, uint32_t len,
		uint64_t id)
{
	struct ibv_sge s = sge_of(&p->b[0], off, len);
	struct ibv_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = id;
	wr.opcode = op;
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr.wr.atomic.remote_addr = (uint64_t)(uintptr_t)p->b[1].p + off;
		wr.wr.atomic.rkey = droce_mr_rkey(p->b[1].mr);
		wr.wr.atomic.compare_add = 1;
	} else {
		wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)p->b[1].p + off;
		wr.wr.rdma.rkey = droce_mr_rkey(p->b[1].mr);
	}
	CHECK_EQ(droce_qp_post_send(p->qp[0], &wr, &bad), 0, "post");
}

/* n completions on side 0, in order from id first, each a success. */
static void
expect_done(struct pair *p, uint64_t first, uint32_t n, const char *what)
{
	struct ibv_wc wc;
	uint32_t i;

	for (i = 0; i < n; i++) {
		int rc = wait_wc(&L, p->cq[0], &wc, 2000000000ull);

		CHECK(rc == 0 && wc.status == IBV_WC_SUCCESS &&
			wc.wr_id == first + i, "%s: completion %u (rc %d "
			"status %d id %" PRIu64 ")", what, i, rc, wc.status,
			wc.wr_id);
	}
}

/*
 * A READ of 16 PSNs loses its 5th and 10th response: each hole is asked
 * for alone, one PSN each, 18 responses in all, no timeout.
 */
static void
test_read_two_holes(void)
{
	struct droce_tp_stats st;
	struct pair p;
	uint32_t base;

	pair_make(&p);
	pattern(p.b[1].p, 16384, 3);
	watch_reset(1, 4, 9);
	post_rdma(&p, IBV_WR_RDMA_READ, 0, 16384, 1);
	expect_done(&p, 1, 1, "READ with two holes");
	CHECK(pattern_ok(p.b[0].p, 16384, 3), "READ: every byte");
	base = W.read_psn[0];
	CHECK_EQ(W.reads, 3, "the READ and one request per hole");
	CHECK(W.read_psn[1] == ((base + 4) & DROCE_PSN_MASK) &&
		W.read_len[1] == 1024, "first hole: PSN +%u, %u bytes",
		(W.read_psn[1] - base) & DROCE_PSN_MASK, W.read_len[1]);
	CHECK(W.read_psn[2] == ((base + 9) & DROCE_PSN_MASK) &&
		W.read_len[2] == 1024, "second hole: PSN +%u, %u bytes",
		(W.read_psn[2] - base) & DROCE_PSN_MASK, W.read_len[2]);
	CHECK_EQ(W.resp, 18, "responses: 16 and the two holes'");
	droce_qp_stats(p.qp[0], &st);
	CHECK_EQ(st.timeouts, 0, "no timeout");
	CHECK_EQ(st.resent_pkts, 2, "two requests sent again");
	pair_free(&p);
}

/*
 * Three READs in flight, the first's last response lost: the later
 * READs' responses show it, that PSN alone is asked again, the later
 * READs are not; completions stay in order.
 */
static void
test_read_tail_hole(void)
{
	struct droce_tp_stats st;
	struct pair p;

	pair_make(&p);
	pattern(p.b[1].p, 3 * 8192, 4);
	watch_reset(1, 7, UINT32_MAX);
	post_rdma(&p, IBV_WR_RDMA_READ, 0, 8192, 10);
	post_rdma(&p, IBV_WR_RDMA_READ, 8192, 8192, 11);
	post_rdma(&p, IBV_WR_RDMA_READ, 16384, 8192, 12);
	expect_done(&p, 10, 3, "three READs, the first's tail lost");
	CHECK(pattern_ok(p.b[0].p, 3 * 8192, 4), "READs: every byte");
	CHECK_EQ(W.reads, 4, "three READs and one for the hole");
	CHECK_EQ(W.read_len[3], 1024, "the hole: one PSN");
	CHECK_EQ(W.resp, 25, "24 responses and the hole's");
	droce_qp_stats(p.qp[0], &st);
	CHECK_EQ(st.timeouts, 0, "no timeout");
	pair_free(&p);
}

/*
 * A fetch-add's answer lost, a READ after it answered: the fetch-add is
 * asked again alone (answered from the responder's replay cache, added
 * once), the READ not again.
 */
static void
test_atomic_answer_lost(void)
{
	struct pair p;
	uint64_t v;

	pair_make(&p);
	memset(p.b[1].p, 0, 8);
	pattern(p.b[1].p + 4096, 4096, 5);
	watch_reset(1, 0, UINT32_MAX);
	post_rdma(&p, IBV_WR_ATOMIC_FETCH_AND_ADD, 0, 8, 20);
	post_rdma(&p, IBV_WR_RDMA_READ, 4096, 4096, 21);
	expect_done(&p, 20, 2, "fetch-add, its answer lost, then a READ");
	memcpy(&v, p.b[1].p, 8);
	CHECK_EQ(v, 1, "added once");
	CHECK_EQ(W.atomics, 2, "the fetch-add sent twice");
	CHECK_EQ(W.reads, 1, "the READ once");
	CHECK(pattern_ok(p.b[0].p + 4096, 4096, 5), "READ: every byte");
	pair_free(&p);
}

int
main(void)
{
	test_read_two_holes();
	test_read_tail_hole();
	test_atomic_answer_lost();
	return check_report("test_tp_loss");
}
