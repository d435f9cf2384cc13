/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * Soak: mixed operations on many QPs (RC both ways, UC, UD) over a fake
 * link that drops, duplicates, reorders and corrupts frames on a seeded
 * schedule. Every byte is verified, every WR must complete exactly once
 * and in order with the right status and fields, atomics must add up, and
 * no QP may get stuck or fall into error.
 *
 *   test_tp_soak [OPS] [SEED] [PCAP]
 */

#include <inttypes.h>

#include "tp_util.h"

#define NB_RC	6
#define NB_UC	2
#define NB_UD	2
#define NB_QP	(NB_RC + NB_UC + NB_UD)
#define SLOTS	8
#define SLOT_SZ	(1u << 20)
#define BIG	(1u << 20)

static struct fakelink L;
static uint64_t total_ops, done_ops;

enum op_kind { K_SEND, K_SEND_IMM, K_WRITE, K_WRITE_IMM, K_READ, K_FADD,
	K_CSWAP, K_NB };

struct side {
	struct droce_qp *qp;
	struct droce_cq *scq, *rcq;
	struct tbuf loc;	/* source/destination of this side's WRs */
	struct tbuf tgt;	/* target of the peer's WRITE/READ/atomics */
	struct tbuf rcv;	/* receive buffers */
	uint64_t posted, completed;	/* send WRs */
	uint64_t recv_posted, recv_done;
	uint64_t send_seq;	/* SENDs posted (carry their seq) */
	uint64_t recv_seq;	/* SENDs received, in order */
	uint64_t fadd_sum, cswap_val;
	uint32_t size[SLOTS];
	uint8_t kind[SLOTS];
	uint64_t expect[SLOTS];	/* atomic original expected */
	uint32_t rlen[SLOTS];	/* receive slot: expected length (RC) */
};

struct conn {
	enum ibv_qp_type type;
	struct side s[2];
	struct droce_ah *ah[2];
	int active[2];		/* which sides post */
};

static struct conn C[NB_QP];

static uint32_t
pick_size(uint32_t mtu_max)
{
	uint64_t r = fl_rand(&L) % 1000;

	if (mtu_max)
		return (uint32_t)(fl_rand(&L) % (mtu_max + 1));
	if (r < 50)
		return 0;
	if (r < 400)
		return (uint32_t)(1 + fl_rand(&L) % 64);
	if (r < 600)
		return (uint32_t)(1000 + fl_rand(&L) % 100);
	if (r < 800)
		return (uint32_t)(1 + fl_rand(&L) % 5000);
	if (r < 990)
		return (uint32_t)(1 + fl_rand(&L) % 70000);
	return (uint32_t)(BIG - fl_rand(&L) % 4096);
}

static uint32_t
seed_of(int c, int s, uint64_t seq)
{
	return (uint32_t)(seq * 7919u + (uint32_t)c * 131u + (uint32_t)s);
}

static void
setup(void)
{
	struct ibv_qp_init_attr ia;
	struct fl_qp_opts o;
	int c, s;

	fl_qp_opts_default(&o);
	for (c = 0; c < NB_QP; c++) {
		struct conn *k = &C[c];

		k->type = c < NB_RC ? IBV_QPT_RC : c < NB_RC + NB_UC ?
			IBV_QPT_UC : IBV_QPT_UD;
		k->active[0] = 1;
		k->active[1] = k->type == IBV_QPT_RC && (c & 1);
		for (s = 0; s < 2; s++) {
			struct side *d = &k->s[s];

			d->scq = droce_cq_create(L.end[s].dev, 0, 4 * SLOTS);
			d->rcq = droce_cq_create(L.end[s].dev, 0, 4 * SLOTS);
			memset(&ia, 0, sizeof(ia));
			ia.qp_type = k->type;
			ia.cap.max_send_wr = SLOTS;
			ia.cap.max_recv_wr = SLOTS;
			ia.cap.max_send_sge = 2;
			ia.cap.max_recv_sge = 1;
			ia.cap.max_inline_data = 64;
			d->qp = droce_qp_create(L.end[s].pd, &ia, d->scq, d->rcq,
				NULL);
			tbuf_init(&d->loc, L.end[s].pd, SLOTS * SLOT_SZ, ACC_ALL);
			tbuf_init(&d->tgt, L.end[s].pd, SLOTS * SLOT_SZ + 4096, ACC_ALL);
			tbuf_init(&d->rcv, L.end[s].pd, SLOTS * SLOT_SZ, ACC_ALL);
		}
		CHECK_EQ(fl_connect(&L, k->s[0].qp, k->s[1].qp, &o), 0,
			"connect");
		if (k->type == IBV_QPT_UD) {
			for (s = 0; s < 2; s++) {
				struct droce_av av;

				fl_av_to(&L, s, &av);
				k->ah[s] = droce_ah_create(L.end[s].pd, &av);
			}
		}
	}
}

static void
post_recvs(int c, int s)
{
	struct conn *k = &C[c];
	struct side *d = &k->s[s];

	while (d->recv_posted - d->recv_done < SLOTS) {
		uint32_t slot = (uint32_t)(d->recv_posted % SLOTS);
		struct ibv_sge sg = sge_of(&d->rcv, (size_t)slot * SLOT_SZ,
			SLOT_SZ);
		struct ibv_recv_wr wr = { .wr_id = d->recv_posted,
			.sg_list = &sg, .num_sge = 1 }, *bad;

		CHECK_EQ(droce_qp_post_recv(d->qp, &wr, &bad), 0, "post recv");
		d->recv_posted++;
	}
}

static void
post_one(int c, int s)
{
	struct conn *k = &C[c];
	struct side *d = &k->s[s], *peer = &k->s[1 - s];
	uint64_t seq = d->posted;
	uint32_t slot = (uint32_t)(seq % SLOTS);
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sg[2];
	enum op_kind kind;
	uint32_t len, a;
	uint8_t *src = d->loc.p + (size_t)slot * SLOT_SZ;
	uint64_t remote = (uint64_t)(uintptr_t)(peer->tgt.p +
		(size_t)slot * SLOT_SZ);

	if (k->type == IBV_QPT_RC)
		kind = (enum op_kind)(fl_rand(&L) % K_NB);
	else if (k->type == IBV_QPT_UC)
		kind = (enum op_kind)(fl_rand(&L) % 4);
	else
		kind = (enum op_kind)(fl_rand(&L) % 2);
	len = pick_size(k->type == IBV_QPT_UD ? 1024 : 0);
	if (kind == K_FADD || kind == K_CSWAP)
		len = 8;
	if (kind == K_SEND || kind == K_SEND_IMM) {
		/* the first 8 bytes say which SEND this is */
		if (len < 8 && k->type != IBV_QPT_RC)
			len = 8;
	}
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = seq;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = sg;
	wr.num_sge = 1;
	sg[0] = sge_of(&d->loc, (size_t)slot * SLOT_SZ, len);
	switch (kind) {
	case K_SEND:
	case K_SEND_IMM:
		wr.opcode = kind == K_SEND ? IBV_WR_SEND : IBV_WR_SEND_WITH_IMM;
		pattern(src, len, seed_of(c, s, d->send_seq));
		if (len >= 8)
			memcpy(src, &d->send_seq, 8);
		wr.imm_data = (uint32_t)d->send_seq;
		d->send_seq++;
		if (len <= 64 && (fl_rand(&L) & 1))
			wr.send_flags |= IBV_SEND_INLINE;
		if (k->type == IBV_QPT_UD) {
			wr.wr.ud.ah = droce_ah_to_ibv(k->ah[s]);
			wr.wr.ud.remote_qpn = droce_qp_num(peer->qp);
			wr.wr.ud.remote_qkey = 0x11111111;
		}
		break;
	case K_WRITE:
	case K_WRITE_IMM:
		wr.opcode = kind == K_WRITE ? IBV_WR_RDMA_WRITE :
			IBV_WR_RDMA_WRITE_WITH_IMM;
		pattern(src, len, seed_of(c, s, seq) ^ 0x55);
		memset(peer->tgt.p + (size_t)slot * SLOT_SZ, 0, len);
		wr.wr.rdma.remote_addr = remote;
		wr.wr.rdma.rkey = droce_mr_rkey(peer->tgt.mr);
		wr.imm_data = 0xffff0000u | (uint32_t)(seq & 0xffff);
		if (len > 16) {	/* two SGEs */
			a = len / 2;
			sg[0].length = a;
			sg[1] = sge_of(&d->loc, (size_t)slot * SLOT_SZ + a,
				len - a);
			wr.num_sge = 2;
		}
		break;
	case K_READ:
		wr.opcode = IBV_WR_RDMA_READ;
		pattern(peer->tgt.p + (size_t)slot * SLOT_SZ, len,
			seed_of(c, s, seq) ^ 0xaa);
		memset(src, 0, len);
		wr.wr.rdma.remote_addr = remote;
		wr.wr.rdma.rkey = droce_mr_rkey(peer->tgt.mr);
		break;
	case K_FADD:
		wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
		wr.wr.atomic.remote_addr = (uint64_t)(uintptr_t)peer->tgt.p +
			(size_t)SLOTS * SLOT_SZ + 64;
		wr.wr.atomic.rkey = droce_mr_rkey(peer->tgt.mr);
		wr.wr.atomic.compare_add = 1 + fl_rand(&L) % 1000;
		d->expect[slot] = d->fadd_sum;
		d->fadd_sum += wr.wr.atomic.compare_add;
		break;
	case K_CSWAP:
		wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
		wr.wr.atomic.remote_addr = (uint64_t)(uintptr_t)peer->tgt.p +
			(size_t)SLOTS * SLOT_SZ + 72;
		wr.wr.atomic.rkey = droce_mr_rkey(peer->tgt.mr);
		wr.wr.atomic.compare_add = d->cswap_val;
		wr.wr.atomic.swap = fl_rand(&L);
		d->expect[slot] = d->cswap_val;
		d->cswap_val = wr.wr.atomic.swap;
		break;
	default:
		break;
	}
	d->size[slot] = len;
	d->kind[slot] = (uint8_t)kind;
	CHECK_EQ(droce_qp_post_send(d->qp, &wr, &bad), 0, "post send");
	d->posted++;
}

static void
check_send_wc(int c, int s, const struct ibv_wc *wc)
{
	struct conn *k = &C[c];
	struct side *d = &k->s[s], *peer = &k->s[1 - s];
	uint32_t slot = (uint32_t)(wc->wr_id % SLOTS);
	uint32_t len = d->size[slot];
	uint64_t seq = d->completed;

	CHECK(wc->wr_id == seq, "conn %d side %d: completion %" PRIu64
		" out of order (want %" PRIu64 ")", c, s, wc->wr_id, seq);
	CHECK(wc->status == IBV_WC_SUCCESS, "conn %d side %d wr %" PRIu64
		": status %s", c, s, wc->wr_id,
		wc->status < 23 ? "error" : "?");
	if (wc->status != IBV_WC_SUCCESS) {
		fprintf(stderr, "status %d kind %d len %u\n", wc->status,
			d->kind[slot], len);
		d->completed++;
		return;
	}
	switch (d->kind[slot]) {
	case K_WRITE:
	case K_WRITE_IMM:
		CHECK_EQ(wc->opcode, IBV_WC_RDMA_WRITE, "write opcode");
		if (k->type == IBV_QPT_RC)
			CHECK(pattern_ok(peer->tgt.p + (size_t)slot * SLOT_SZ,
				len, seed_of(c, s, wc->wr_id) ^ 0x55),
				"conn %d write data len %u", c, len);
		break;
	case K_READ:
		CHECK(wc->opcode == IBV_WC_RDMA_READ && wc->byte_len == len,
			"read wc");
		CHECK(pattern_ok(d->loc.p + (size_t)slot * SLOT_SZ, len,
			seed_of(c, s, wc->wr_id) ^ 0xaa),
			"conn %d read data len %u", c, len);
		break;
	case K_FADD:
	case K_CSWAP:
		CHECK(wc->opcode == (d->kind[slot] == K_FADD ?
			IBV_WC_FETCH_ADD : IBV_WC_COMP_SWAP), "atomic opcode");
		CHECK(*(uint64_t *)(d->loc.p + (size_t)slot * SLOT_SZ) ==
			d->expect[slot], "conn %d atomic original %" PRIu64
			" want %" PRIu64, c,
			*(uint64_t *)(d->loc.p + (size_t)slot * SLOT_SZ),
			d->expect[slot]);
		break;
	default:
		CHECK_EQ(wc->opcode, IBV_WC_SEND, "send opcode");
		break;
	}
	d->completed++;
	done_ops++;
}

static void
check_recv_wc(int c, int s, const struct ibv_wc *wc)
{
	struct conn *k = &C[c];
	struct side *d = &k->s[s];
	uint32_t slot = (uint32_t)(wc->wr_id % SLOTS);
	uint32_t off = k->type == IBV_QPT_UD ? DROCE_GRH_LEN : 0;
	uint8_t *p = d->rcv.p + (size_t)slot * SLOT_SZ + off;
	uint64_t seq = 0;
	uint32_t len;

	CHECK(wc->status == IBV_WC_SUCCESS, "conn %d recv status %d", c,
		wc->status);
	CHECK_EQ(wc->wr_id, d->recv_done, "receive completions in order");
	d->recv_done++;
	if (wc->status != IBV_WC_SUCCESS)
		return;
	if (wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
		CHECK(wc->wc_flags & IBV_WC_WITH_IMM, "write imm flag");
		return;
	}
	CHECK_EQ(wc->opcode, IBV_WC_RECV, "recv opcode");
	len = wc->byte_len - off;
	if (k->type == IBV_QPT_UD)
		CHECK(wc->wc_flags & IBV_WC_GRH, "UD GRH flag");
	if (len >= 8) {
		memcpy(&seq, p, 8);
		/* RC: exactly once and in order. UC/UD may lose, and a
		 * duplicated or reordered datagram is theirs to deliver:
		 * there only the content is checked against its seq. */
		if (k->type == IBV_QPT_RC)
			CHECK_EQ(seq, d->recv_seq, "RC sends arrive in order");
		else
			CHECK(seq < C[c].s[1 - s].send_seq,
				"UC/UD seq %" PRIu64 " was sent", seq);
		{
			uint8_t head[8];

			memcpy(head, p, 8);
			pattern(p, 8, seed_of(c, 1 - s, seq));
			CHECK(pattern_ok(p, len, seed_of(c, 1 - s, seq)) ||
				len <= 8, "conn %d recv data len %u", c, len);
			memcpy(p, head, 8);
		}
		if (seq + 1 > d->recv_seq)
			d->recv_seq = seq + 1;
	} else {
		CHECK(k->type == IBV_QPT_RC, "short send only on RC");
		if (wc->wc_flags & IBV_WC_WITH_IMM)
			CHECK_EQ(wc->imm_data, (uint32_t)d->recv_seq, "imm seq");
		CHECK(pattern_ok(p, len, seed_of(c, 1 - s, d->recv_seq)),
			"conn %d short recv data", c);
		d->recv_seq++;
	}
}

static void
poll_all(void)
{
	struct ibv_wc wc[16];
	int c, s, n, i;

	for (c = 0; c < NB_QP; c++) {
		for (s = 0; s < 2; s++) {
			struct side *d = &C[c].s[s];

			while ((n = droce_cq_poll(d->scq, wc, 16)) > 0)
				for (i = 0; i < n; i++)
					check_send_wc(c, s, &wc[i]);
			CHECK(n == 0, "scq overflow");
			while ((n = droce_cq_poll(d->rcq, wc, 16)) > 0)
				for (i = 0; i < n; i++)
					check_recv_wc(c, s, &wc[i]);
			CHECK(n == 0, "rcq overflow");
			post_recvs(c, s);
		}
	}
}

/* The link from the arguments and the environment: seeded, with its
 * faults (DROP DUP REORDER CORRUPT in ppm after the pcap), selective
 * repeat, CE marks, zero copy. */
static void
link_up(int argc, char **argv, uint64_t seed)
{
	int dir;

	/* TP_SOAK_SR=1: selective repeat on both ends */
	fl_sr = getenv("TP_SOAK_SR") != NULL && atoi(getenv("TP_SOAK_SR"));
	CHECK_EQ(fl_init(&L, seed, 1500), 0, "fakelink");
	if (argc > 3 && strcmp(argv[3], "-") != 0)
		fl_capture(&L, argv[3], 7, 2000);
	for (dir = 0; dir < 2; dir++) {
		L.faults[dir].drop_ppm = argc > 4 ? atoi(argv[4]) : 50000;
		L.faults[dir].dup_ppm = argc > 5 ? atoi(argv[5]) : 20000;
		L.faults[dir].reorder_ppm = argc > 6 ? atoi(argv[6]) : 50000;
		L.faults[dir].corrupt_ppm = argc > 7 ? atoi(argv[7]) : 1000;
		/* TP_SOAK_CE=PPM: ECN-capable frames marked CE (CNPs) */
		if (getenv("TP_SOAK_CE") != NULL)
			L.faults[dir].ce_ppm = (uint32_t)atoi(getenv("TP_SOAK_CE"));
	}
	/* TP_SOAK_ZC=N: payloads of N bytes or more go by reference */
	if (getenv("TP_SOAK_ZC") != NULL)
		fl_set_zero_copy(&L, (uint32_t)atoi(getenv("TP_SOAK_ZC")));
}

/* ops operations posted at random on the active sides, until all are
 * done or the virtual time runs out, then drained: how many issued. */
static uint64_t
run_ops(uint64_t ops)
{
	uint64_t limit_ns, issued = 0;
	int c, s;

	for (c = 0; c < NB_QP; c++)
		for (s = 0; s < 2; s++)
			post_recvs(c, s);
	/* generous virtual time: ~100 ms per 100 ops plus slack */
	limit_ns = 2000000000ull + ops * 2000000ull;
	while (L.now < limit_ns) {
		int busy = 0;

		for (c = 0; c < NB_QP; c++) {
			for (s = 0; s < 2; s++) {
				struct side *d = &C[c].s[s];

				if (!C[c].active[s])
					continue;
				while (issued < ops &&
						d->posted - d->completed < SLOTS &&
						(fl_rand(&L) % 4) != 0) {
					post_one(c, s);
					issued++;
				}
				if (d->posted != d->completed)
					busy = 1;
			}
		}
		if (!busy && issued >= ops)
			break;
		fl_step(&L, 1000);
		poll_all();
		if (check_failures > 20)
			break;
	}
	/* let the last ACKs and receives drain */
	fl_run_idle(&L, 1000000000ull);
	poll_all();
	return issued;
}

/* Every QP in RTS with all its WRs completed, the fetch-add sums landed
 * both ways on RC: how many QPs have WRs never completed. */
static int
check_qps(void)
{
	int c, s, stuck = 0;

	for (c = 0; c < NB_QP; c++) {
		for (s = 0; s < 2; s++) {
			struct side *d = &C[c].s[s];

			if (d->posted != d->completed) {
				stuck++;
				fprintf(stderr, "conn %d side %d: %" PRIu64
					" posted, %" PRIu64 " completed\n", c,
					s, d->posted, d->completed);
			}
			CHECK(droce_qp_state(d->qp) == IBV_QPS_RTS,
				"conn %d side %d state %d", c, s,
				droce_qp_state(d->qp));
		}
		if (C[c].type == IBV_QPT_RC) {
			/* both directions of fetch-add sums landed */
			for (s = 0; s < 2; s++)
				CHECK_EQ(*(uint64_t *)(C[c].s[1 - s].tgt.p +
					(size_t)SLOTS * SLOT_SZ + 64),
					C[c].s[s].fadd_sum, "fetch-add total");
		}
	}
	return stuck;
}

/* The link's and the transports' counters; the faults that must have
 * happened did. */
static void
report(uint64_t ops)
{
	struct droce_tp_stats st[2];
	int dir, s;

	droce_tp_queue_stats(L.end[0].q, &st[0]);
	droce_tp_queue_stats(L.end[1].q, &st[1]);
	printf("ops %" PRIu64 " virtual time %.3f s\n", done_ops, L.now / 1e9);
	for (dir = 0; dir < 2; dir++)
		printf("link %d->%d: sent %" PRIu64 " dropped %" PRIu64
			" dup %" PRIu64 " reordered %" PRIu64 " corrupted %"
			PRIu64 "\n", dir, 1 - dir, L.cnt[dir].sent,
			L.cnt[dir].dropped, L.cnt[dir].duplicated,
			L.cnt[dir].reordered, L.cnt[dir].corrupted);
	for (s = 0; s < 2; s++)
		printf("end %d: retransmits %" PRIu64 " timeouts %" PRIu64
			" seq-NAK tx %" PRIu64 " rx %" PRIu64 " dup rx %" PRIu64
			" ICRC drops %" PRIu64 " read replays %" PRIu64
			" atomic replays %" PRIu64 "\n", s, st[s].retransmits,
			st[s].timeouts, st[s].nak_seq_tx, st[s].nak_seq_rx,
			st[s].dup_rx, st[s].rx_drop_parse[-DROCE_WIRE_EICRC],
			st[s].read_replays, st[s].atomic_replays);
	CHECK(L.cnt[0].dropped + L.cnt[1].dropped > 0 || ops < 100,
		"the link really dropped frames");
	if (L.faults[0].ce_ppm) {
		printf("congestion: CNPs sent %" PRIu64 " + %" PRIu64
			", acted on %" PRIu64 " + %" PRIu64 "\n",
			st[0].np_cnp_sent, st[1].np_cnp_sent,
			st[0].rp_cnp_handled, st[1].rp_cnp_handled);
		CHECK(st[0].rp_cnp_handled > 0 && st[1].rp_cnp_handled > 0,
			"both ends' rates were cut");
	}
	if (L.zc_min) {
		printf("zero-copy frames: %" PRIu64 " + %" PRIu64 "\n",
			st[0].tx_zc_pkts, st[1].tx_zc_pkts);
		CHECK(st[0].tx_zc_pkts > 0 && st[1].tx_zc_pkts > 0,
			"frames went by reference");
	}
}

int
main(int argc, char **argv)
{
	uint64_t ops = argc > 1 ? strtoull(argv[1], NULL, 0) : 3000;
	uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 0) : 12345;
	uint64_t issued;
	int stuck;

	link_up(argc, argv, seed);
	setup();
	total_ops = ops;
	issued = run_ops(ops);
	stuck = check_qps();
	CHECK_EQ(stuck, 0, "QPs with WRs never completed");
	CHECK_EQ(issued, ops, "all operations issued");
	CHECK_EQ(done_ops, ops, "all operations completed successfully");
	report(ops);
	fl_fini(&L);
	return check_report("test_tp_soak");
}
