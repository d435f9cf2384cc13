/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * Tail drop, as droced's loopback queue does it: many RC QPs, both ways,
 * each with several 8256-byte SENDs (UCX's eager fragments: 8 packets of
 * 1024 and one of 64 at path MTU 1024), WRITEs and READs outstanding,
 * over a link whose every direction is a bounded FIFO that drops what
 * arrives when it is full and delivers at most a burst a step. Nothing is
 * reordered, duplicated or corrupted: only runs of frames vanish. Each
 * side's QPs receive from one SRQ (UCX's rc_verbs does), its buffers
 * given back a few a step, as an application reposts while other QPs'
 * messages are half placed (with few buffers, RNR NAKs too). Every
 * receive is checked whole: its byte_len against what was posted, every
 * byte of it, its order on its QP; every WRITE's target and READ's
 * buffer after its completion.
 *
 *   test_tp_taildrop [OPS] [SEED] [QCAP] [BURST] [CONNS] [SRQ_BUFS] [REPOST]
 */

#include <inttypes.h>

#include "tp_util.h"

#define MAX_CONN	64
#define DEPTH		8		/* send WRs outstanding per side */
#define SLOT_SZ		16384u
#define FRAG		8256u
#define LEN_RING	64
#define MAX_BUFS	1024

static struct fakelink L;
static int nb_conn = 32;
static uint32_t nb_bufs = 256;		/* receive buffers per side */
static uint32_t repost = 8;		/* given back per step and side */

enum { K_SEND, K_WRITE, K_READ };

struct side {
	struct droce_qp *qp;
	struct droce_cq *scq;
	struct tbuf loc;	/* what this side sends, or READs into */
	struct tbuf tgt;	/* the peer's WRITEs land here, READs from */
	uint64_t posted, completed;
	uint64_t send_seq, recv_seq;
	uint32_t send_len[LEN_RING];	/* by send_seq: what the peer gets */
	uint32_t size[DEPTH];
	uint8_t kind[DEPTH];
};

struct end {
	struct droce_srq *srq;
	struct droce_cq *rcq;
	struct tbuf rcv;
	uint32_t back[MAX_BUFS];	/* buffers to give back */
	uint32_t nback;
};

static struct side S[MAX_CONN][2];
static struct end E[2];
static uint64_t done_ops, bad_recvs;

static uint32_t
seed_of(int c, int s, uint64_t seq, int kind)
{
	return (uint32_t)(seq * 7919u + (uint32_t)c * 131u + (uint32_t)s +
		(uint32_t)kind * 0x5555u);
}

static void
post_buf(int s, uint32_t b)
{
	struct end *e = &E[s];
	struct ibv_sge sg = sge_of(&e->rcv, (size_t)b * SLOT_SZ, SLOT_SZ);
	struct ibv_recv_wr wr = { .wr_id = b, .sg_list = &sg, .num_sge = 1 },
		*bad;

	memset(e->rcv.p + (size_t)b * SLOT_SZ, 0, SLOT_SZ);
	CHECK_EQ(droce_srq_post_recv(e->srq, &wr, &bad), 0, "post recv");
}

/* Mostly UCX's fragment; now and then a message of another length. */
static uint32_t
pick_len(void)
{
	uint64_t r = fl_rand(&L) % 16;

	if (r < 12)
		return FRAG;
	if (r < 14)
		return (uint32_t)(8 + fl_rand(&L) % (SLOT_SZ - 8));
	return (uint32_t)(1 + fl_rand(&L) % 4) * 1024;
}

static void
post_one(int c, int s)
{
	struct side *d = &S[c][s], *peer = &S[c][1 - s];
	uint32_t slot = (uint32_t)(d->posted % DEPTH), len = pick_len();
	uint8_t *src = d->loc.p + (size_t)slot * SLOT_SZ;
	uint8_t *tgt = peer->tgt.p + (size_t)slot * SLOT_SZ;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sg[2];
	uint64_t r = fl_rand(&L) % 8;
	int kind = r < 5 ? K_SEND : r < 6 ? K_WRITE : K_READ;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = d->posted;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = sg;
	/* now and then UCX's zero-copy: a header and the user's buffer */
	sg[0] = sge_of(&d->loc, (size_t)slot * SLOT_SZ, len);
	if (len > 64 && (fl_rand(&L) & 1)) {
		sg[0].length = 64;
		sg[1] = sge_of(&d->loc, (size_t)slot * SLOT_SZ + 64, len - 64);
		wr.num_sge = 2;
	} else {
		wr.num_sge = 1;
	}
	wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)tgt;
	wr.wr.rdma.rkey = droce_mr_rkey(peer->tgt.mr);
	if (kind == K_WRITE) {
		wr.opcode = IBV_WR_RDMA_WRITE;
		pattern(src, len, seed_of(c, s, d->posted, kind));
		memset(tgt, 0, len);
	} else if (kind == K_READ) {
		/* UCX's rendezvous: a READ of the peer's buffer */
		wr.opcode = IBV_WR_RDMA_READ;
		pattern(tgt, len, seed_of(c, s, d->posted, kind));
		memset(src, 0, len);
	} else {
		wr.opcode = IBV_WR_SEND;
		pattern(src, len, seed_of(c, s, d->send_seq, kind));
		memcpy(src, &d->send_seq, 8);
		d->send_len[d->send_seq % LEN_RING] = len;
		d->send_seq++;
	}
	d->size[slot] = len;
	d->kind[slot] = (uint8_t)kind;
	CHECK_EQ(droce_qp_post_send(d->qp, &wr, &bad), 0, "post send");
	d->posted++;
}

static void
check_send_wc(int c, int s, const struct ibv_wc *wc)
{
	struct side *d = &S[c][s], *peer = &S[c][1 - s];
	uint32_t slot = (uint32_t)(wc->wr_id % DEPTH), len = d->size[slot];
	uint32_t seed = seed_of(c, s, wc->wr_id, d->kind[slot]);

	CHECK(wc->wr_id == d->completed, "conn %d side %d: completion %"
		PRIu64 " out of order", c, s, wc->wr_id);
	CHECK(wc->status == IBV_WC_SUCCESS, "conn %d side %d wr %" PRIu64
		": status %d", c, s, wc->wr_id, wc->status);
	if (wc->status == IBV_WC_SUCCESS && d->kind[slot] == K_WRITE)
		CHECK(pattern_ok(peer->tgt.p + (size_t)slot * SLOT_SZ, len,
			seed), "conn %d side %d WRITE %" PRIu64 " of %u bytes "
			"placed", c, s, wc->wr_id, len);
	if (wc->status == IBV_WC_SUCCESS && d->kind[slot] == K_READ)
		CHECK(wc->byte_len == len && pattern_ok(d->loc.p +
			(size_t)slot * SLOT_SZ, len, seed), "conn %d side %d "
			"READ %" PRIu64 " of %u bytes", c, s, wc->wr_id, len);
	d->completed++;
	done_ops++;
}

static int
conn_of(int s, uint32_t qpn)
{
	int c;

	for (c = 0; c < nb_conn; c++)
		if (droce_qp_num(S[c][s].qp) == qpn)
			return c;
	return -1;
}

static void
check_recv_wc(int s, const struct ibv_wc *wc)
{
	int c = conn_of(s, wc->qp_num);
	struct side *d, *peer;
	uint8_t *p = E[s].rcv.p + (size_t)wc->wr_id * SLOT_SZ;
	uint64_t seq, got_seq;
	uint32_t want, seed, i;

	E[s].back[E[s].nback++] = (uint32_t)wc->wr_id;
	CHECK(c >= 0, "receive on QP %#x", wc->qp_num);
	CHECK(wc->status == IBV_WC_SUCCESS, "side %d recv status %d", s,
		wc->status);
	if (c < 0 || wc->status != IBV_WC_SUCCESS)
		return;
	d = &S[c][s];
	peer = &S[c][1 - s];
	seq = d->recv_seq++;
	want = peer->send_len[seq % LEN_RING];
	seed = seed_of(c, 1 - s, seq, K_SEND);
	memcpy(&got_seq, p, 8);
	CHECK(got_seq == seq, "conn %d side %d: SEND %" PRIu64 " arrived, "
		"want %" PRIu64, c, s, got_seq, seq);
	pattern(p, 8, seed);
	if (wc->byte_len == want && pattern_ok(p, want, seed))
		return;
	for (i = 0; i < want && p[i] == (uint8_t)((i * 2654435761u + seed) >>
			13); i++)
		;
	bad_recvs++;
	CHECK(0, "conn %d side %d SEND %" PRIu64 " (QP %#x): byte_len %u of %u,"
		" bytes right up to %u (%02x%02x%02x%02x, buffer %" PRIu64 ")",
		c, s, seq, wc->qp_num, wc->byte_len, want, i, p[i], p[i + 1],
		p[i + 2], p[i + 3], wc->wr_id);
}

static void
poll_all(void)
{
	struct ibv_wc wc[16];
	int c, s, n, i;
	uint32_t k;

	for (c = 0; c < nb_conn; c++)
		for (s = 0; s < 2; s++)
			while ((n = droce_cq_poll(S[c][s].scq, wc, 16)) > 0)
				for (i = 0; i < n; i++)
					check_send_wc(c, s, &wc[i]);
	for (s = 0; s < 2; s++) {
		struct end *e = &E[s];

		while ((n = droce_cq_poll(e->rcq, wc, 16)) > 0)
			for (i = 0; i < n; i++)
				check_recv_wc(s, &wc[i]);
		CHECK(n == 0, "receive CQ overflow");
		/* a few back a step, oldest first: a slow receiver */
		for (k = 0; k < e->nback && k < repost; k++)
			post_buf(s, e->back[k]);
		memmove(e->back, e->back + k, (e->nback - k) *
			sizeof(e->back[0]));
		e->nback -= k;
	}
}

static void
setup(void)
{
	struct ibv_srq_init_attr sa;
	struct ibv_qp_init_attr ia;
	struct fl_qp_opts o;
	uint32_t b;
	int c, s;

	fl_qp_opts_default(&o);
	o.timeout = 14;		/* 67 ms (UCX asks for 1 s) */
	o.min_rnr_timer = 12;	/* 0.64 ms */
	for (s = 0; s < 2; s++) {
		memset(&sa, 0, sizeof(sa));
		sa.attr.max_wr = nb_bufs;
		sa.attr.max_sge = 1;
		E[s].srq = droce_srq_create(L.end[s].pd, 0, &sa);
		E[s].rcq = droce_cq_create(L.end[s].dev, 0, 2 * nb_bufs);
		CHECK(E[s].srq != NULL && E[s].rcq != NULL, "SRQ and CQ");
		tbuf_init(&E[s].rcv, L.end[s].pd, (size_t)nb_bufs * SLOT_SZ,
			ACC_ALL);
		for (b = 0; b < nb_bufs; b++)
			post_buf(s, b);
	}
	for (c = 0; c < nb_conn; c++) {
		for (s = 0; s < 2; s++) {
			struct side *d = &S[c][s];

			d->scq = droce_cq_create(L.end[s].dev, 0, 2 * DEPTH);
			qp_attr(&ia, IBV_QPT_RC, DEPTH, 2);
			d->qp = droce_qp_create(L.end[s].pd, &ia, d->scq,
				E[s].rcq, E[s].srq);
			CHECK(d->qp != NULL, "QP");
			tbuf_init(&d->loc, L.end[s].pd, DEPTH * SLOT_SZ,
				ACC_ALL);
			tbuf_init(&d->tgt, L.end[s].pd, DEPTH * SLOT_SZ,
				ACC_ALL);
		}
		CHECK_EQ(fl_connect(&L, S[c][0].qp, S[c][1].qp, &o), 0,
			"connect");
	}
}

int
main(int argc, char **argv)
{
	uint64_t ops = argc > 1 ? strtoull(argv[1], NULL, 0) : 4000;
	uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 0) : 1;
	uint64_t issued = 0, limit_ns;
	struct droce_tp_stats st[2];
	int c, s, dir, stuck = 0;

	CHECK_EQ(fl_init(&L, seed, 1500), 0, "fakelink");
	L.qcap = argc > 3 ? (uint32_t)atoi(argv[3]) : 512;
	L.rx_burst = argc > 4 ? (uint32_t)atoi(argv[4]) : 32;
	nb_conn = argc > 5 ? atoi(argv[5]) : 32;
	if (nb_conn < 1 || nb_conn > MAX_CONN)
		nb_conn = 32;
	nb_bufs = argc > 6 ? (uint32_t)atoi(argv[6]) : 256;
	if (nb_bufs < 1 || nb_bufs > MAX_BUFS)
		nb_bufs = 256;
	repost = argc > 7 ? (uint32_t)atoi(argv[7]) : 8;
	L.delay_ns = 0;
	setup();
	limit_ns = 5000000000ull + ops * 5000000ull;
	while (L.now < limit_ns) {
		int busy = 0;

		for (c = 0; c < nb_conn; c++) {
			for (s = 0; s < 2; s++) {
				struct side *d = &S[c][s];

				while (issued < ops && d->posted -
						d->completed < DEPTH) {
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
	fl_run_idle(&L, 1000000000ull);
	poll_all();
	for (c = 0; c < nb_conn; c++) {
		for (s = 0; s < 2; s++) {
			struct side *d = &S[c][s];

			if (d->posted != d->completed)
				stuck++;
			CHECK(droce_qp_state(d->qp) == IBV_QPS_RTS,
				"conn %d side %d state %d", c, s,
				droce_qp_state(d->qp));
			CHECK(d->recv_seq == S[c][1 - s].send_seq,
				"conn %d side %d: %" PRIu64 " SENDs received "
				"of %" PRIu64, c, s, d->recv_seq,
				S[c][1 - s].send_seq);
		}
	}
	CHECK_EQ(stuck, 0, "QPs with WRs never completed");
	CHECK_EQ(done_ops, ops, "all operations completed");
	CHECK_EQ(bad_recvs, 0, "receives short or wrong");
	droce_tp_queue_stats(L.end[0].q, &st[0]);
	droce_tp_queue_stats(L.end[1].q, &st[1]);
	printf("ops %" PRIu64 " virtual time %.3f s\n", done_ops, L.now / 1e9);
	for (dir = 0; dir < 2; dir++)
		printf("link %d->%d: sent %" PRIu64 " tail-dropped %" PRIu64
			"\n", dir, 1 - dir, L.cnt[dir].sent,
			L.cnt[dir].dropped);
	for (s = 0; s < 2; s++)
		printf("end %d: retransmits %" PRIu64 " timeouts %" PRIu64
			" seq-NAK tx %" PRIu64 " rx %" PRIu64 " RNR NAK tx %"
			PRIu64 " rx %" PRIu64 " dup rx %" PRIu64 "\n", s,
			st[s].retransmits, st[s].timeouts, st[s].nak_seq_tx,
			st[s].nak_seq_rx, st[s].rnr_nak_tx, st[s].rnr_nak_rx,
			st[s].dup_rx);
	CHECK(L.cnt[0].dropped + L.cnt[1].dropped > 0, "frames were dropped");
	return check_report("test_tp_taildrop");
}
