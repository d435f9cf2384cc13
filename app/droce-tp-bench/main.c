/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * droce-tp-bench: messages per second through lib/transport alone, no NIC.
 * Two devices joined by an in-memory link (frames handed over by pointer,
 * buffers recycled); one thread runs both ends, so the figure is the cost
 * of requester + responder + completer together on one core. A benchmark:
 * it prints figures, it never fails on them.
 *
 *     droce-tp-bench [seconds per case] [op [bytes [in flight]]]
 *
 * With an op, that op alone, at bytes if given: up to the path MTU (4096)
 * for UD_SEND, a receive's 64 KB for SEND, the 1 MB region for the rest.
 *
 * UD_SEND: 64-byte SENDs between two UD QPs (an AH, a GRH on receive,
 * no ACK: a send completes when it leaves).
 *
 * In flight 1 is a latency test's pattern: every pass carries one frame,
 * so fixed per-pass costs show (run it under callgrind for instructions
 * per round trip, a figure this noisy VM cannot blur).
 */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "droce_transport.h"

#define NBUF 4096
#define MEM_SZ (1u << 20)	/* each device's one MR */
#define RECV_SZ 65536u		/* each receive's buffer */
#define BUFSZ 4608
#define DEPTH 128
#define UD_QKEY 0x11111111u

struct end {
	struct droce_dev *dev;
	struct droce_tp_queue *q;
	struct droce_pd *pd;
	struct droce_cq *cq;
	struct droce_qp *qp;
	struct droce_av av;	/* to the other end */
	struct droce_qp *ud;	/* UD_SEND's, made when it runs */
	struct droce_ah *ah;	/* to the other end's GID (UD_SEND) */
	struct droce_mr *mr;
	uint8_t *mem;
	uint8_t *free_bufs[NBUF];
	int nfree;
	/* frames sent to the peer, not yet received */
	uint8_t *out[NBUF];
	uint32_t outlen[NBUF];
	int nout;
};

static struct end E[2];
static uint32_t in_flight = DEPTH / 2;
/* WRs the last run posted, drain included (bench-instructions.sh), and
 * the completions its responder polled (a SEND's receives) */
static uint64_t wrs_posted, rx_polled;

static uint32_t
b_alloc(void *arg, struct droce_txbuf *b, uint32_t n, uint32_t cap)
{
	struct end *e = arg;
	uint32_t i;

	if (cap > BUFSZ)
		return 0;
	for (i = 0; i < n && e->nfree; i++) {
		b[i].data = e->free_bufs[--e->nfree];
		b[i].cap = BUFSZ;
	}
	return i;
}

static void
b_free(void *arg, struct droce_txbuf *b, uint32_t n)
{
	struct end *e = arg;
	uint32_t i;

	for (i = 0; i < n; i++)
		e->free_bufs[e->nfree++] = b[i].data;
}

static void
b_submit(void *arg, struct droce_txbuf *b, uint32_t n)
{
	struct end *e = arg;
	uint32_t i;

	for (i = 0; i < n; i++) {
		e->out[e->nout] = b[i].data;
		e->outlen[e->nout++] = b[i].len;
	}
}

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* Deliver what a sent to b, give the buffers back to a. */
static void
deliver(struct end *a, struct end *b, uint64_t t)
{
	int i;

	if (!a->nout)
		return;
	droce_tp_rx_burst(b->q, (const uint8_t *const *)a->out, a->outlen,
		(uint32_t)a->nout, t);
	for (i = 0; i < a->nout; i++)
		a->free_bufs[a->nfree++] = a->out[i];
	a->nout = 0;
}

/*
 * Each side's turn in its own function, never inlined: under callgrind
 * (bench-phases.sh) the call chain says which side spent an instruction.
 */
static __attribute__((noinline)) void
requester_progress(uint64_t t)
{
	droce_tp_progress(E[0].q, t, 64);
}

static __attribute__((noinline)) void
responder_receive(uint64_t t)
{
	deliver(&E[0], &E[1], t);
}

static __attribute__((noinline)) void
responder_progress(uint64_t t)
{
	droce_tp_progress(E[1].q, t, 64);
}

static __attribute__((noinline)) void
requester_receive(uint64_t t)
{
	deliver(&E[1], &E[0], t);
}

static __attribute__((noinline)) int
requester_poll(struct ibv_wc *wc)
{
	return droce_cq_poll(E[0].cq, wc, 64);
}

static __attribute__((noinline)) int
responder_poll(struct ibv_wc *wc)
{
	return droce_cq_poll(E[1].cq, wc, 64);
}

/*
 * e's UD QP, in RTS, and an AH to the other end's GID: made only for the
 * UD case (each progress pass visits every QP of the queue, and an idle
 * one there would count in the RC cases).
 */
static void
setup_ud(struct end *e)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr at;

	memset(&ia, 0, sizeof(ia));
	ia.qp_type = IBV_QPT_UD;
	ia.cap.max_send_wr = DEPTH;
	ia.cap.max_recv_wr = DEPTH;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	e->ud = droce_qp_create(e->pd, &ia, e->cq, e->cq, NULL);
	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_INIT;
	at.port_num = 1;
	at.qkey = UD_QKEY;
	droce_qp_modify(e->ud, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
		IBV_QP_PORT | IBV_QP_QKEY, NULL);
	at.qp_state = IBV_QPS_RTR;
	droce_qp_modify(e->ud, &at, IBV_QP_STATE, NULL);
	at.qp_state = IBV_QPS_RTS;
	at.sq_psn = 0;
	droce_qp_modify(e->ud, &at, IBV_QP_STATE | IBV_QP_SQ_PSN, NULL);
	e->ah = droce_ah_create(e->pd, &e->av);
}

static void
setup(size_t memsz)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr at;
	struct droce_av av;
	int s, i;

	for (s = 0; s < 2; s++) {
		struct droce_dev_conf c;
		struct droce_tp_io io;
		struct end *e = &E[s];

		memset(&c, 0, sizeof(c));
		memset(&io, 0, sizeof(io));
		c.mac[0] = 2;
		c.mac[5] = (uint8_t)(s + 1);
		c.eth_mtu = 4200;	/* path MTU 4096 */
		c.nb_queues = 1;
		droce_gid_from_ipv4(c.gids[1].gid, 0x0a000001u + (uint32_t)s);
		c.gids[1].valid = 1;
		e->dev = droce_dev_create(&c);
		e->q = droce_dev_queue(e->dev, 0);
		io.tx_alloc = b_alloc;
		io.tx_free = b_free;
		io.tx_submit = b_submit;
		io.arg = e;
		droce_tp_queue_set_io(e->q, &io);
		for (i = 0; i < NBUF; i++)
			e->free_bufs[i] = malloc(BUFSZ);
		e->nfree = NBUF;
		e->pd = droce_pd_alloc(e->dev);
		e->cq = droce_cq_create(e->dev, 0, 4 * DEPTH);
		memset(&ia, 0, sizeof(ia));
		ia.qp_type = IBV_QPT_RC;
		ia.cap.max_send_wr = DEPTH;
		ia.cap.max_recv_wr = DEPTH;
		ia.cap.max_send_sge = 1;
		ia.cap.max_recv_sge = 1;
		e->qp = droce_qp_create(e->pd, &ia, e->cq, e->cq, NULL);
		e->mem = aligned_alloc(4096, memsz);
		memset(e->mem, 1, memsz);
		e->mr = droce_mr_reg(e->pd, e->mem, memsz,
			(uint64_t)(uintptr_t)e->mem, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			IBV_ACCESS_REMOTE_ATOMIC);
	}
	for (s = 0; s < 2; s++) {
		struct end *e = &E[s];

		memset(&at, 0, sizeof(at));
		at.qp_state = IBV_QPS_INIT;
		at.port_num = 1;
		at.qp_access_flags = IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			IBV_ACCESS_REMOTE_ATOMIC;
		droce_qp_modify(e->qp, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, NULL);
		memset(&av, 0, sizeof(av));
		av.dmac[0] = 2;
		av.dmac[5] = (uint8_t)(2 - s);
		droce_gid_from_ipv4(av.dgid, 0x0a000002u - (uint32_t)s);
		av.sgid_index = 1;
		at.qp_state = IBV_QPS_RTR;
		at.path_mtu = IBV_MTU_4096;
		at.dest_qp_num = droce_qp_num(E[1 - s].qp);
		at.rq_psn = 0;
		at.max_dest_rd_atomic = 16;
		at.min_rnr_timer = 1;
		droce_qp_modify(e->qp, &at, IBV_QP_STATE | IBV_QP_AV |
			IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER, &av);
		at.qp_state = IBV_QPS_RTS;
		at.sq_psn = 0;
		at.timeout = 14;
		at.retry_cnt = 7;
		at.rnr_retry = 7;
		at.max_rd_atomic = 16;
		droce_qp_modify(e->qp, &at, IBV_QP_STATE | IBV_QP_SQ_PSN |
			IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC, NULL);
		e->av = av;
	}
}

/* Rates are taken over windows of this long; the best window is the
 * figure least disturbed by whatever else the machine runs. */
#define WINDOW_NS 50000000ull

/* never inlined: bench-instructions.sh reads its inclusive count */
static __attribute__((noinline)) double
run(enum ibv_wr_opcode op, uint32_t size, int ud, double secs, double *best)
{
	struct droce_qp *sq, *rq;
	struct ibv_sge sge = { .addr = (uint64_t)(uintptr_t)E[0].mem,
		.length = size, .lkey = droce_mr_lkey(E[0].mr) };
	struct ibv_send_wr wr, *bad;
	struct ibv_wc wc[64];
	uint64_t t0 = now_ns(), t = t0, done = 0, posted = 0, elapsed;
	uint64_t counted = 0, win_t = t0, win_done = 0;
	int n, i;

	if (ud && E[0].ud == NULL) {
		setup_ud(&E[0]);
		setup_ud(&E[1]);
	}
	sq = ud ? E[0].ud : E[0].qp;
	rq = ud ? E[1].ud : E[1].qp;
	memset(&wr, 0, sizeof(wr));
	wr.opcode = op;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)E[1].mem;
	wr.wr.rdma.rkey = droce_mr_rkey(E[1].mr);
	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		sge.length = 8;
		wr.wr.atomic.remote_addr = (uint64_t)(uintptr_t)E[1].mem;
		wr.wr.atomic.rkey = droce_mr_rkey(E[1].mr);
		wr.wr.atomic.compare_add = 1;
	}
	if (ud) {
		wr.wr.ud.ah = droce_ah_to_ibv(E[0].ah);
		wr.wr.ud.remote_qpn = droce_qp_num(E[1].ud);
		wr.wr.ud.remote_qkey = UD_QKEY;
	}
	while (t - t0 < (uint64_t)(secs * 1e9)) {
		if (op == IBV_WR_SEND) {
			struct ibv_sge rs = { .addr = (uint64_t)(uintptr_t)
				E[1].mem, .length = RECV_SZ,
				.lkey = droce_mr_lkey(E[1].mr) };
			struct ibv_recv_wr rw = { .sg_list = &rs, .num_sge = 1 };
			struct ibv_recv_wr *rb;

			while (droce_qp_post_recv(rq, &rw, &rb) == 0)
				;
		}
		while (posted - done < in_flight &&
				droce_qp_post_send(sq, &wr, &bad) == 0)
			posted++;
		requester_progress(t);
		responder_receive(t);
		responder_progress(t);
		requester_receive(t);
		while ((n = requester_poll(wc)) > 0) {
			for (i = 0; i < n; i++)
				if (wc[i].status != IBV_WC_SUCCESS) {
					fprintf(stderr, "status %d\n",
						wc[i].status);
					exit(1);
				}
			done += (uint64_t)n;
		}
		while ((n = responder_poll(wc)) > 0)
			rx_polled += (uint64_t)n;
		t = now_ns();
		if (t - win_t >= WINDOW_NS) {
			double r = (done - win_done) / ((t - win_t) / 1e9);

			if (r > *best)
				*best = r;
			win_t = t;
			win_done = done;
		}
	}
	counted = done;
	elapsed = t - t0;
	wrs_posted = posted;
	/* drain, so the next case starts with an empty queue */
	while (done < posted) {
		requester_progress(t);
		responder_receive(t);
		responder_progress(t);
		requester_receive(t);
		while ((n = requester_poll(wc)) > 0)
			done += (uint64_t)n;
		while ((n = responder_poll(wc)) > 0)
			rx_polled += (uint64_t)n;
		t = now_ns();
	}
	return counted / (elapsed / 1e9);
}

int
main(int argc, char **argv)
{
	static const struct {
		const char *name;
		enum ibv_wr_opcode op;
		uint32_t size;
		int ud;
	} cases[] = {
		{ "WRITE", IBV_WR_RDMA_WRITE, 64 },
		{ "SEND", IBV_WR_SEND, 64 },
		{ "READ", IBV_WR_RDMA_READ, 64 },
		{ "FETCH_ADD", IBV_WR_ATOMIC_FETCH_AND_ADD, 8 },
		{ "WRITE", IBV_WR_RDMA_WRITE, 4096 },
		{ "WRITE", IBV_WR_RDMA_WRITE, 65536 },
		{ "SEND", IBV_WR_SEND, 4096 },
		{ "READ", IBV_WR_RDMA_READ, 65536 },
		{ "UD_SEND", IBV_WR_SEND, 64, 1 },
	};
	double secs = argc > 1 ? atof(argv[1]) : 1.0;
	/* optional: one case only (op name, bytes), to profile it */
	const char *only_op = argc > 2 ? argv[2] : NULL;
	uint32_t only_size = argc > 3 ? (uint32_t)atoi(argv[3]) : 0;
	unsigned int i;

	if (argc > 4)
		in_flight = (uint32_t)atoi(argv[4]);
	if (in_flight < 1 || in_flight > DEPTH / 2) {
		fprintf(stderr, "in flight: 1 to %d\n", DEPTH / 2);
		return 2;
	}

	setup(MEM_SZ);
	printf("lib/transport alone, RC (and UD_SEND), path MTU 4096, one "
		"core running both ends, %u WRs in flight\n", in_flight);
	printf("%-10s %8s %14s %12s %14s\n", "op", "bytes", "msgs/s", "Gbit/s",
		"best msgs/s");
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		/* one op: at the size asked for, in the list or not */
		uint32_t size = only_size ? only_size : cases[i].size, max;
		double r, best = 0;

		if (only_op != NULL && strcasecmp(only_op, cases[i].name))
			continue;
		/* a UD SEND is one packet; an RC SEND fills one receive */
		max = cases[i].ud ? 4096u : cases[i].op == IBV_WR_SEND ?
			RECV_SZ : MEM_SZ;
		if (only_op != NULL && (size == 0 || size > max)) {
			fprintf(stderr, "bytes: 1 to %u for %s\n", max,
				cases[i].name);
			return 2;
		}
		rx_polled = 0;
		r = run(cases[i].op, only_op ? size : cases[i].size,
			cases[i].ud, secs, &best);
		printf("%-10s %8u %14.0f %12.2f %14.0f\n", cases[i].name,
			only_op ? size : cases[i].size, r,
			r * (only_op ? size : cases[i].size) * 8 / 1e9, best);
		if (only_op != NULL) {
			printf("posted %" PRIu64 ", received %" PRIu64 "\n",
				wrs_posted, rx_polled);
			break;
		}
	}
	return 0;
}
