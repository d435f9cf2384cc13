/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * Loss recovery against scripted loss, duplication and reordering: which
 * frames go again, and only those. READ responses are placed by PSN and
 * only a hole is asked for again (tp_read.c), one READ request per hole;
 * a lost atomic answer is asked again alone, the atomic executed once.
 * With selective repeat (tp_sr.c) only the lost packets go again, a
 * lost tail is probed without the timer, and requests that come out of
 * order or twice are executed once, in order. Every byte and every
 * completion is checked.
 */

#include <inttypes.h>

#include "tp_util.h"

static struct fakelink L;

/* The frames sent (lost ones too): which to drop (by index per
 * direction since watch_reset), and what each side sent. */
#define MAX_DROP 8
#define MAX_KEEP 4
static struct {
	uint32_t drop[2][MAX_DROP], ndrop[2], seen[2];
	/* frames of side 0 kept to be delivered later (inject): held back
	 * (reordered) or let through too (duplicated) */
	uint32_t keep_at[MAX_KEEP], nkeep;
	int keep_pass[MAX_KEEP];
	uint8_t kept[MAX_KEEP][2048];
	uint32_t kept_len[MAX_KEEP];
	uint32_t data;			/* SEND and WRITE packets */
	uint32_t resp;			/* READ responses and atomic ACKs */
	uint32_t reads;			/* READ requests */
	uint32_t read_psn[16], read_len[16];
	uint32_t atomics;
	/* the first sequence NAK side 1 sends, kept (dup_nak: to deliver
	 * it a second time) */
	int dup_nak;
	uint8_t nak[256];
	uint32_t nak_len;
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
	if (dir == 1 && W.dup_nak && W.nak_len == 0 &&
			pkt.opcode == DROCE_OP_RC_ACK &&
			pkt.aeth_syndrome == DROCE_AETH_NAK_PSN_SEQ &&
			len <= sizeof(W.nak)) {
		memcpy(W.nak, f, len);
		W.nak_len = len;
	}
	if (dir == 0 && (droce_opcode_info[pkt.opcode].flags &
			(DROCE_OPF_SEND | DROCE_OPF_WRITE)))
		W.data++;
	for (i = 0; dir == 0 && i < W.nkeep; i++)
		if (W.keep_at[i] == n && len <= sizeof(W.kept[i])) {
			memcpy(W.kept[i], f, len);
			W.kept_len[i] = len;
			return !W.keep_pass[i];
		}
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

/* Side 0's frame n kept: held back (pass 0) or let through (pass 1). */
static void
keep(uint32_t n, int pass)
{
	W.keep_at[W.nkeep] = n;
	W.keep_pass[W.nkeep++] = pass;
}

/* The kept frame k delivered to side 1 now. */
static void
inject(uint32_t k)
{
	const uint8_t *fp = W.kept[k];
	uint32_t len = W.kept_len[k];

	CHECK(len > 0, "frame %u was kept", k);
	if (len)
		droce_tp_rx_burst(L.end[1].q, &fp, &len, 1, L.now);
}

/* Step the link until side 0 sent n frames (or a second went by). */
static void
run_until_sent(uint32_t n)
{
	uint64_t end = L.now + 1000000000ull;

	while (W.seen[0] < n && L.now < end)
		fl_step(&L, 1000);
}

static void
pair_make_sr(struct pair *p, int sr)
{
	struct pair_cfg c = {
		.set_sr = 1, .sr = sr,
		.buf_len = 1 << 20, .acc1 = ACC_ALL,
	};

	CHECK_EQ(fl_init(&L, 5, 1500), 0, "fakelink");
	L.filter = watch;
	watch_reset(0, UINT32_MAX, UINT32_MAX);
	pair_create(&L, p, &c);
	CHECK_EQ(droce_qp_sr(p->qp[0]), sr, "selective repeat as set");
	CHECK_EQ(droce_qp_set_sr(p->qp[0], sr), -EINVAL,
		"selective repeat set only before the connection");
}

static void
pair_make(struct pair *p)
{
	pair_make_sr(p, 0);
}

static void
pair_free(struct pair *p)
{
	pair_destroy(p);
	fl_fini(&L);
}

/* op from off in b[0] to off in b[1] (an atomic adds 1). */
static void
post_rdma(struct pair *p, enum ibv_wr_opcode op, uint32_t off, uint32_t len,
		uint64_t id)
{
	CHECK_EQ(pair_post(p, op, off, len, REMOTE(p, off), RKEY(p), id), 0,
		"post");
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
	pair_expect_done(&p, 1, 1, "READ with two holes");
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
	pair_expect_done(&p, 10, 3, "three READs, the first's tail lost");
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
	pair_expect_done(&p, 20, 2, "fetch-add, its answer lost, then a READ");
	memcpy(&v, p.b[1].p, 8);
	CHECK_EQ(v, 1, "added once");
	CHECK_EQ(W.atomics, 2, "the fetch-add sent twice");
	CHECK_EQ(W.reads, 1, "the READ once");
	CHECK(pattern_ok(p.b[0].p + 4096, 4096, 5), "READ: every byte");
	pair_free(&p);
}

/* A few WRITEs without loss: a round trip measured. */
static void
warm_up(struct pair *p)
{
	uint32_t i;

	for (i = 0; i < 8; i++) {
		post_rdma(p, IBV_WR_RDMA_WRITE, 0, 2048, 1000 + i);
		pair_expect_done(p, 1000 + i, 1, "warm-up WRITE");
	}
}

/*
 * Selective repeat: a WRITE of 32 packets loses its 4th, 11th and 12th.
 * The responder holds what follows each gap and says so; exactly those
 * three go again, with no timeout.
 */
static void
test_sr_write_holes(void)
{
	struct droce_tp_stats st0, st1;
	struct pair p;

	pair_make_sr(&p, 1);
	pattern(p.b[0].p, 32768, 6);
	watch_reset(0, 3, 10);
	W.drop[0][W.ndrop[0]++] = 11;
	post_rdma(&p, IBV_WR_RDMA_WRITE, 0, 32768, 30);
	pair_expect_done(&p, 30, 1, "SR WRITE with three holes");
	fl_run_idle(&L, 10000000);
	CHECK(pattern_ok(p.b[1].p, 32768, 6), "SR WRITE: every byte");
	CHECK_EQ(W.data, 35, "32 packets and the three lost");
	droce_qp_stats(p.qp[0], &st0);
	droce_qp_stats(p.qp[1], &st1);
	CHECK_EQ(st0.resent_pkts, 3, "three sent again");
	CHECK_EQ(st0.timeouts, 0, "no timeout");
	CHECK(st1.sack_tx > 0 && st0.sack_rx > 0, "SACKs: %" PRIu64 " sent, %"
		PRIu64 " taken", st1.sack_tx, st0.sack_rx);
	CHECK_EQ(st1.nak_seq_tx, 0, "no sequence NAK");
	CHECK(st1.sr_held >= 20, "%" PRIu64 " held out of order",
		st1.sr_held);
	pair_free(&p);
}

/*
 * Selective repeat: the last two packets of a WRITE lost, so nothing
 * after them shows the gap: the probe sends them again a round trip
 * later, one each, without the retransmission timer.
 */
static void
test_sr_tail(void)
{
	struct droce_tp_stats st0, st1;
	struct pair p;

	pair_make_sr(&p, 1);
	warm_up(&p);
	droce_qp_stats(p.qp[0], &st0);
	pattern(p.b[0].p, 8192, 7);
	watch_reset(0, 6, 7);
	post_rdma(&p, IBV_WR_RDMA_WRITE, 0, 8192, 40);
	pair_expect_done(&p, 40, 1, "SR WRITE, its tail lost");
	CHECK(pattern_ok(p.b[1].p, 8192, 7), "tail: every byte");
	droce_qp_stats(p.qp[0], &st1);
	CHECK_EQ(st1.resent_pkts - st0.resent_pkts, 2, "the two sent again");
	CHECK_EQ(st1.timeouts - st0.timeouts, 0, "no timeout");
	CHECK_EQ(W.data, 10, "8 packets and the two lost");
	pair_free(&p);
}

/*
 * Selective repeat, every kind of request at once: a SEND of 5 packets
 * whose 2nd comes after the fetch-add, a WRITE with immediate whose 2nd
 * comes twice, a READ whose request is lost, a fetch-add and a WRITE.
 * Each executes once, in PSN order: both receives complete in order,
 * every byte lands, the fetch-add adds once, the send queue completes in
 * order.
 */
static void
test_sr_mixed(void)
{
	struct pair p;
	struct ibv_wc wc;
	uint64_t v;

	pair_make_sr(&p, 1);
	memset(p.b[1].p + 65536, 0, 8);
	pattern(p.b[0].p, 5000, 8);
	pattern(p.b[0].p + 8192, 3000, 9);
	pattern(p.b[1].p + 16384, 4096, 10);
	pattern(p.b[0].p + 24576, 2048, 11);
	pair_post_recv(&p, 1, 100000, 8192, 50);
	pair_post_recv(&p, 1, 110000, 64, 51);
	watch_reset(0, 8, UINT32_MAX);	/* the READ request */
	keep(1, 0);	/* the SEND's 2nd: held back */
	keep(6, 1);	/* the WRITE's 2nd: through, and again later */
	post_rdma(&p, IBV_WR_SEND, 0, 5000, 60);
	{
		struct ibv_send_wr wr, *bad;
		struct ibv_sge s;

		pair_wr(&p, &wr, &s, IBV_WR_RDMA_WRITE_WITH_IMM, 8192, 3000,
			REMOTE(&p, 8192), RKEY(&p), 61);
		wr.imm_data = 0x12345678;
		CHECK_EQ(droce_qp_post_send(p.qp[0], &wr, &bad), 0, "post imm");
	}
	post_rdma(&p, IBV_WR_RDMA_READ, 16384, 4096, 62);
	post_rdma(&p, IBV_WR_ATOMIC_FETCH_AND_ADD, 65536, 8, 63);
	post_rdma(&p, IBV_WR_RDMA_WRITE, 24576, 2048, 64);
	run_until_sent(12);
	inject(0);	/* the SEND's 2nd, after everything */
	inject(1);	/* the WRITE's 2nd, a second time */
	pair_expect_done(&p, 60, 5,
		"SR: SEND, WRITE imm, READ, fetch-add, WRITE");
	CHECK(wait_wc(&L, p.cq[1], &wc, 1000000000) == 0 && wc.wr_id == 50 &&
		wc.status == IBV_WC_SUCCESS && wc.byte_len == 5000 &&
		wc.opcode == IBV_WC_RECV, "the SEND received first, whole");
	CHECK(wait_wc(&L, p.cq[1], &wc, 1000000000) == 0 && wc.wr_id == 51 &&
		wc.status == IBV_WC_SUCCESS &&
		wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM &&
		wc.imm_data == 0x12345678, "then the WRITE's immediate");
	fl_run_idle(&L, 10000000);
	CHECK(droce_cq_poll(p.cq[1], &wc, 1) == 0, "and nothing else");
	CHECK(pattern_ok(p.b[1].p + 100000, 5000, 8), "SEND: every byte");
	CHECK(pattern_ok(p.b[1].p + 8192, 3000, 9), "WRITE imm: every byte");
	CHECK(pattern_ok(p.b[0].p + 16384, 4096, 10), "READ: every byte");
	CHECK(pattern_ok(p.b[1].p + 24576, 2048, 11), "WRITE: every byte");
	memcpy(&v, p.b[1].p + 65536, 8);
	CHECK_EQ(v, 1, "fetch-add added once");
	CHECK_EQ(W.reads, 2, "the READ request sent twice");
	CHECK_EQ(droce_qp_state(p.qp[1]), IBV_QPS_RTS, "responder fine");
	pair_free(&p);
}

/*
 * Go-back-N: a WRITE of 16 packets loses its 4th; the sequence NAK
 * arrives twice (the fabric duplicated it). The requester goes back once:
 * 16 packets and the 13 from the 4th on, one rewind.
 */
static void
test_gbn_nak_twice(void)
{
	struct droce_tp_stats st;
	struct pair p;
	uint64_t end;

	pair_make(&p);
	pattern(p.b[0].p, 16384, 12);
	watch_reset(0, 3, UINT32_MAX);
	W.dup_nak = 1;
	post_rdma(&p, IBV_WR_RDMA_WRITE, 0, 16384, 70);
	for (end = L.now + 1000000000ull; W.nak_len == 0 && L.now < end; )
		fl_step(&L, 1000);
	CHECK(W.nak_len > 0, "a sequence NAK was sent");
	if (W.nak_len) {
		const uint8_t *fp = W.nak;
		uint32_t len = W.nak_len;

		/* the copy lands once the original has been taken */
		fl_step(&L, 20000);
		droce_tp_rx_burst(L.end[0].q, &fp, &len, 1, L.now);
	}
	pair_expect_done(&p, 70, 1, "WRITE, its NAK duplicated");
	CHECK(pattern_ok(p.b[1].p, 16384, 12), "every byte");
	droce_qp_stats(p.qp[0], &st);
	CHECK_EQ(st.nak_seq_rx, 2, "the NAK taken twice");
	CHECK_EQ(st.rewinds, 1, "gone back once");
	CHECK_EQ(W.data, 29, "16 packets and the 13 from the lost one on");
	pair_free(&p);
}

/*
 * Two fetch-adds whose original values land in the same 8 bytes, the
 * first's answer lost: asked again, it comes after the second's, and the
 * bytes keep the second's value (1), as answers in order leave them.
 */
static void
test_answers_in_order(void)
{
	struct pair p;
	uint64_t v;

	pair_make(&p);
	memset(p.b[1].p, 0, 8);
	memset(p.b[0].p, 0xee, 8);
	watch_reset(1, 0, UINT32_MAX);
	post_rdma(&p, IBV_WR_ATOMIC_FETCH_AND_ADD, 0, 8, 80);
	post_rdma(&p, IBV_WR_ATOMIC_FETCH_AND_ADD, 0, 8, 81);
	pair_expect_done(&p, 80, 2, "two fetch-adds, the first's answer lost");
	CHECK_EQ(W.atomics, 3, "the first sent again");
	memcpy(&v, p.b[1].p, 8);
	CHECK_EQ(v, 2, "added twice");
	memcpy(&v, p.b[0].p, 8);
	CHECK_EQ(v, 1, "the later one's original value stays");
	pair_free(&p);
}

int
main(void)
{
	test_answers_in_order();
	test_gbn_nak_twice();
	test_sr_write_holes();
	test_sr_tail();
	test_sr_mixed();
	test_read_two_holes();
	test_read_tail_hole();
	test_atomic_answer_lost();
	return check_report("test_tp_loss");
}
