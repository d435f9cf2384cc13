/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * The client's tests: each worker keeps its QPs' windows full and counts
 * completions (client_job); a test asks the server to take part, runs,
 * has the server check what arrived, and is repeated beside its raw
 * baseline (run_test). ud_send posts to the UD QPs (ud.c) instead of the
 * RC ones, through the same loop.
 */

#include <arpa/inet.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf_internal.h"

int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The QPs the current test posts to: qp, or uqp for ud_send. */
static struct droce_qp **run_qp = qp;

/* The first error completion of a run: which QP, and what its transport
 * counted. */
static void
qp_report(uint32_t i, const struct ibv_wc *wc)
{
	struct droce_tp_stats st;
	uint32_t q = qp_queue(i);

	droce_port_lock(port, q);
	droce_qp_stats(run_qp[i], &st);
	droce_port_unlock(port, q);
	fprintf(stderr, "completion: %s (QP %u, QPN 0x%x, queue %u, WR %" PRIu64
		"): rx %" PRIu64 " retransmits %" PRIu64 " timeouts %" PRIu64
		" rewinds %" PRIu64 " seq-NAK rx %" PRIu64 " tx %" PRIu64
		" dup rx %" PRIu64 " out-of-seq rx %" PRIu64 " acks rx %" PRIu64
		"\n", droce_wc_status_str(wc->status), i,
		droce_qp_num(run_qp[i]), q,
		(uint64_t)(wc->wr_id & ((1ull << WR_ID_QP_SHIFT) - 1)),
		st.rx_pkts, st.retransmits, st.timeouts, st.rewinds,
		st.nak_seq_rx, st.nak_seq_tx, st.dup_rx, st.out_of_seq_rx,
		st.acks_rx);
}

/* The part of QP i's WRs that stays the same for a whole test; refill_wr
 * sets the rest per WR. */
static void
fill_wr(struct ibv_send_wr *wr, struct ibv_sge *sge, int op, uint32_t size,
		uint32_t i)
{
	uint64_t raddr = peer.addr + SLOT(i);

	memset(wr, 0, sizeof(*wr));
	sge->addr = (uint64_t)(uintptr_t)(mem + SLOT(i));
	sge->length = size;
	sge->lkey = droce_mr_lkey(mr);
	wr->sg_list = sge;
	wr->num_sge = 1;
	wr->send_flags = IBV_SEND_SIGNALED;
	if (opt.inline_data && size <= 256 &&
			(op == OP_WRITE || op == OP_WRITE_IMM || op == OP_SEND ||
			op == OP_UD_SEND))
		wr->send_flags |= IBV_SEND_INLINE;
	switch (op) {
	case OP_WRITE:
	case OP_WRITE_IMM:
		wr->opcode = op == OP_WRITE ? IBV_WR_RDMA_WRITE :
			IBV_WR_RDMA_WRITE_WITH_IMM;
		wr->wr.rdma.remote_addr = raddr;
		wr->wr.rdma.rkey = peer.rkey;
		break;
	case OP_SEND:
		wr->opcode = IBV_WR_SEND;
		break;
	case OP_UD_SEND:
		wr->opcode = IBV_WR_SEND;
		wr->wr.ud.ah = ud_ah;
		wr->wr.ud.remote_qpn = peer.ud_qpn[i];
		wr->wr.ud.remote_qkey = peer.ud_qkey;
		break;
	case OP_READ:
		wr->opcode = IBV_WR_RDMA_READ;
		wr->wr.rdma.remote_addr = raddr;
		wr->wr.rdma.rkey = peer.rkey;
		break;
	case OP_FADD:
	case OP_CSWAP:
		/* the result lands after the data region of the slot */
		sge->addr = (uint64_t)(uintptr_t)(mem + SLOT(i) +
			SLOT_SZ - 8);
		sge->length = 8;
		wr->opcode = op == OP_FADD ? IBV_WR_ATOMIC_FETCH_AND_ADD :
			IBV_WR_ATOMIC_CMP_AND_SWP;
		wr->wr.atomic.remote_addr = raddr;
		wr->wr.atomic.rkey = peer.rkey;
		if (op == OP_FADD)
			wr->wr.atomic.compare_add = 1;
		break;
	default:
		break;
	}
}

static int cur_op;
static uint32_t cur_size;
static uint64_t cur_per_qp;

/* --cq-mod: every cq_mod-th WR of a QP and its last one are signaled */
static inline int
signal_wr(uint64_t seq)
{
	return (seq + 1) % opt.cq_mod == 0 || seq + 1 == cur_per_qp;
}

/*
 * What changes from one WR of a QP to the next (k: its sequence number).
 * The rest was built once per test by fill_wr, as perftest builds its WRs
 * once: filling the whole WR per post was ~60 of the client's ~1,630
 * instructions per 64-byte WRITE.
 */
static inline void
refill_wr(struct ibv_send_wr *wr, int op, uint64_t k, uint64_t wr_id,
		int signaled)
{
	wr->wr_id = wr_id;
	wr->next = NULL;
	if (signaled)
		wr->send_flags |= IBV_SEND_SIGNALED;
	else
		wr->send_flags &= ~IBV_SEND_SIGNALED;
	switch (op) {
	case OP_WRITE_IMM:
		wr->imm_data = htonl((uint32_t)k);
		break;
	case OP_CSWAP:
		wr->wr.atomic.compare_add = k;
		/* fall through */
	case OP_FADD:
		wr->wr.atomic.swap = k + 1;
		break;
	default:
		break;
	}
}

/* Each of the worker's QPs' post_list WRs, built once for this test. */
static int
client_wrs(struct worker *w, uint32_t pl, struct ibv_send_wr **wrs_all,
		struct ibv_sge **sges_all)
{
	struct ibv_send_wr *wrs;
	struct ibv_sge *sges;
	uint32_t j, k;

	wrs = calloc((size_t)w->nqp * pl, sizeof(*wrs));
	sges = calloc((size_t)w->nqp * pl, sizeof(*sges));
	if (wrs == NULL || sges == NULL) {
		free(wrs);
		free(sges);
		return -1;
	}
	for (j = 0; j < w->nqp; j++)
		for (k = 0; k < pl; k++)
			fill_wr(&wrs[j * pl + k], &sges[j * pl + k], cur_op,
				cur_size, w->qi[j]);
	*wrs_all = wrs;
	*sges_all = sges;
	return 0;
}

/* The completions on the worker's queues: count them, check their order,
 * time them (--lat). Inline: client_job's per-message work. */
static inline void
client_reap(struct worker *w, const uint64_t *posted, uint64_t *done,
		uint64_t t_post)
{
	struct ibv_wc wc[64];
	uint64_t n_done;
	uint32_t j, q;
	int n, k;

	for (j = 0; j < w->nq; j++) {
		q = w->q[j];
		droce_port_lock(port, q);
		n = droce_cq_poll(cq[q], wc, 64);
		droce_port_unlock(port, q);
		for (k = 0; k < n; k++) {
			uint32_t qi = (uint32_t)(wc[k].wr_id >>
				WR_ID_QP_SHIFT);

			if (wc[k].status != IBV_WC_SUCCESS) {
				if (!w->bad && qi < opt.nqp)
					qp_report(qi, &wc[k]);
				else
					fprintf(stderr, "completion: %s\n",
						droce_wc_status_str(
						wc[k].status));
				w->bad = 1;
			}
			/* RC completes in order: a signaled WR says
			 * that every WR before it is done too */
			n_done = 1;
			if (qi < opt.nqp) {
				uint64_t seq = wc[k].wr_id &
					((1ull << WR_ID_QP_SHIFT) - 1);

				if (seq < done[qi] || seq >= posted[qi] ||
					(opt.verify &&
					wc[k].status == IBV_WC_SUCCESS &&
					!signal_wr(seq)))
					w->bad = 1;	/* out of order */
				else
					n_done = seq + 1 - done[qi];
				done[qi] += n_done;
			}
			if (opt.lat)
				w->lat[w->total] = droce_now_ns() - t_post;
			__atomic_store_n(&w->total, w->total + n_done,
				__ATOMIC_RELAXED);
		}
	}
}

/* --live: the test's progress over all workers. */
static void
live_report(void)
{
	uint64_t sum = 0;
	uint32_t j;

	for (j = 0; j < opt.cores; j++)
		sum += __atomic_load_n(&workers[j].total, __ATOMIC_RELAXED);
	fprintf(stderr, "  %s %u: %" PRIu64 " of %" PRIu64 "\n",
		op_names[cur_op], cur_size, sum, cur_per_qp * opt.nqp);
}

/* One worker's part of a test: keep every one of its QPs' windows full,
 * make progress on its queues, count its completions. */
static int
client_job(struct worker *w)
{
	uint64_t posted[PERF_MAX_QP] = { 0 }, done[PERF_MAX_QP] = { 0 };
	uint64_t want = cur_per_qp * w->nqp, t_post = 0, next_live;
	uint32_t j, q, depth = opt.lat ? 1 : opt.depth;
	uint32_t pl = opt.post_list < 64 ? opt.post_list : 64;
	uint32_t sig_count[PERF_MAX_QP] = { 0 };
	struct droce_qp **qps = run_qp;
	struct ibv_send_wr *wrs_all;
	struct ibv_sge *sges_all;
	int k, rc = 0;

	w->total = 0;
	w->bad = 0;
	if (client_wrs(w, pl, &wrs_all, &sges_all) != 0) {
		w->bad = 1;
		return -1;
	}
	next_live = droce_now_ns() + 1000000000ull;
	while (w->total < want) {
		for (j = 0; j < w->nqp; j++) {
			uint32_t i = w->qi[j], m;
			struct ibv_send_wr *wrs = &wrs_all[j * pl], *bad_wr;

			/* fill the window, post_list WRs per post call */
		again:
			m = 0;
			while (posted[i] < cur_per_qp &&
					posted[i] - done[i] < depth && m < pl) {
				/* signal_wr without a division per WR */
				if (++sig_count[j] == opt.cq_mod)
					sig_count[j] = 0;
				refill_wr(&wrs[m], cur_op, posted[i],
					(uint64_t)i << WR_ID_QP_SHIFT |
					posted[i], sig_count[j] == 0 ||
					posted[i] + 1 == cur_per_qp);
				if (m)
					wrs[m - 1].next = &wrs[m];
				posted[i]++;
				m++;
			}
			if (m == 0)
				continue;
			q = qp_queue(i);
			if (opt.lat)
				t_post = droce_now_ns();
			droce_port_lock(port, q);
			k = droce_qp_post_send(qps[i], wrs, &bad_wr);
			droce_port_unlock(port, q);
			if (k) {
				fprintf(stderr, "post_send: %s\n", strerror(k));
				w->bad = 1;
				rc = -1;
				goto out;
			}
			if (!opt.lat)
				goto again;
		}
		progress_worker(w);
		client_reap(w, posted, done, t_post);
		if (w->bad)
			break;
		if (opt.live && w->id == 0 && droce_now_ns() > next_live) {
			live_report();
			next_live += 1000000000ull;
		}
	}
out:
	free(wrs_all);
	free(sges_all);
	return rc;
}

static int
run_client(int op, uint32_t size, struct result *r)
{
	struct perf_cmd c = { .kind = PERF_CMD_RUN, .op = (uint32_t)op,
		.size = size, .iters = opt.iters, .seed = size * 31u + 7 };
	uint64_t per_qp = (opt.iters + opt.nqp - 1) / opt.nqp, total = 0;
	uint64_t *lat = NULL, t0;
	uint32_t i;
	int bad = 0, rc;

	memset(r, 0, sizeof(*r));
	if (op == OP_FADD || op == OP_CSWAP)
		size = 8;
	r->op = op;
	r->size = size;
	if (opt.lat)
		lat = calloc(per_qp * opt.nqp + 1, sizeof(*lat));
	workers[0].lat = lat;
	for (i = 0; i < opt.nqp; i++)
		pattern(mem + SLOT(i), size, c.seed + i);
	if (op == OP_UD_SEND && ud_ah == NULL && ud_client_start() != 0) {
		free(lat);
		return -1;
	}
	run_qp = op == OP_UD_SEND ? uqp : qp;
	if (sc_send(sc, &c, sizeof(c)) || sc_recv_progress(sc, &c, sizeof(c))) {
		free(lat);
		return -1;
	}
	cur_op = op;
	cur_size = size;
	cur_per_qp = per_qp;
	t0 = droce_now_ns();
	rc = run_workers(client_job);
	r->secs = (droce_now_ns() - t0) / 1e9;
	for (i = 0; i < opt.cores; i++) {
		total += workers[i].total;
		bad |= workers[i].bad;
	}
	if (rc) {
		free(lat);
		return -1;
	}
	r->msgs = total;
	r->mps = total / r->secs;
	r->gbps = r->mps * r->size * 8 / 1e9;
	if (opt.lat && total) {
		double s = 0;

		for (i = 0; i < total; i++)
			s += (double)lat[i];
		qsort(lat, total, sizeof(*lat), cmp_u64);
		r->lat_avg = s / total / 1000.0;
		r->lat_p50 = lat[total / 2] / 1000.0;
		r->lat_p99 = lat[total * 99 / 100] / 1000.0;
	}
	free(lat);
	workers[0].lat = NULL;
	/* verification at the server (WRITE, SEND, atomics), here (READ) */
	c.kind = PERF_CMD_DONE;
	c.value = per_qp;
	if (sc_send(sc, &c, sizeof(c)) || sc_recv_progress(sc, &c, sizeof(c)))
		return -1;
	r->ok = !bad && c.value == 1;
	/* UD drops what finds no receive: --verify wants every message */
	r->received = c.received;
	if (op == OP_UD_SEND && opt.verify && c.received != total)
		r->ok = 0;
	if (op == OP_READ && opt.verify)
		for (i = 0; i < opt.nqp; i++)
			if (!pattern_ok(mem + SLOT(i), size, c.seed + 1000 + i))
				r->ok = 0;
	if (op == OP_FADD && opt.verify)
		for (i = 0; i < opt.nqp; i++)
			if (*(uint64_t *)(mem + SLOT(i) + SLOT_SZ - 8)
					!= per_qp - 1)
				r->ok = 0;	/* the last original value */
	return 0;
}

static int
cmp_ratio(const void *a, const void *b)
{
	double x = ((const struct result *)a)->ratio;
	double y = ((const struct result *)b)->ratio;

	return x < y ? -1 : x > y;
}

/*
 * One test, --repeat times with its raw baseline after each run: the
 * machine's own speed drifts between runs (a shared VM moved the raw rate
 * by 30% within one), so the run of median ratio is what r gets, with
 * the ratios' range; every run must have passed.
 */
static int
run_test(int op, uint32_t size, struct result *r)
{
	struct result runs[16];
	uint32_t k, n = opt.repeat;
	int ok = 1;

	for (k = 0; k < n; k++) {
		if (run_client(op, size, &runs[k]) != 0)
			return -1;
		if (opt.raw)
			run_raw(&runs[k]);
		ok &= runs[k].ok;
	}
	qsort(runs, n, sizeof(runs[0]), cmp_ratio);
	*r = runs[n / 2];
	r->ratio_min = runs[0].ratio;
	r->ratio_max = runs[n - 1].ratio;
	r->ok = ok;
	return 0;
}

/* Every --op at every --size (atomics at 8 bytes only), at most max
 * tests; 1 if one failed or could not run. */
int
run_tests(struct result *rs, int max, int *nr)
{
	int i, n = 0, rc = 0;
	uint32_t s;

	for (i = 0; i < opt.nops; i++) {
		for (s = 0; s < opt.nsizes && n < max; s++) {
			if (run_test(opt.ops[i], opt.sizes[s], &rs[n]) != 0) {
				rc = 1;
				break;
			}
			if (!rs[n].ok)
				rc = 1;
			n++;
			if (opt.ops[i] == OP_FADD || opt.ops[i] == OP_CSWAP)
				break;	/* atomics are 8 bytes */
		}
	}
	*nr = n;
	return rc;
}
