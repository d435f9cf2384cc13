/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * The incast run (incast.h): the senders' WRITEs go to slot k % depth of
 * their region at the receiver, each with its own pattern; a slot is
 * written again only after its last WRITE completed, so at each
 * completion the receiver's slot must hold exactly that WRITE's bytes.
 */

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "incast.h"

struct flow {
	struct droce_cq *cq;
	struct droce_qp *qp, *rqp;
	struct droce_mr *src_mr, *dst_mr;
	uint64_t *src, *dst;
	uint64_t posted, done;
	uint64_t tx_base;	/* src_bytes at the last sample */
};

void
incast_conf_default(struct incast_conf *c)
{
	memset(c, 0, sizeof(*c));
	c->senders = 8;
	c->gbps = 25;
	c->size = 65536;
	c->depth = 8;
	c->mtu = 4096;
	c->run_ns = 50000000;
	c->warm_ns = 10000000;
	c->step_ns = 1000;
	c->sample_ns = 20000;
	c->rtt_ns = 4000;
	c->timeout = 12;
	c->seed = 1;
}

static uint64_t
word(uint32_t flow, uint64_t k, uint64_t i)
{
	return ((uint64_t)flow << 48 | k << 24 | i) ^ 0x9e3779b97f4a7c15ull;
}

static void
fill(uint64_t *p, uint32_t words, uint32_t flow, uint64_t k)
{
	uint32_t i;

	for (i = 0; i < words; i++)
		p[i] = word(flow, k, i);
}

static uint64_t
check(const uint64_t *p, uint32_t words, uint32_t flow, uint64_t k)
{
	uint64_t bad = 0;
	uint32_t i;

	for (i = 0; i < words; i++)
		bad += p[i] != word(flow, k, i);
	return bad * 8;
}

static struct droce_mr *
reg(struct droce_pd *pd, uint64_t **p, size_t len)
{
	*p = aligned_alloc(4096, len);
	memset(*p, 0, len);
	return droce_mr_reg(pd, *p, len, (uint64_t)(uintptr_t)*p,
		IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
}

static int
post(const struct incast_conf *c, struct flow *fl, uint32_t i)
{
	uint32_t slot = (uint32_t)(fl->posted % c->depth);
	uint32_t words = c->size / 8;
	struct ibv_sge sg = {
		.addr = (uint64_t)(uintptr_t)(fl->src + (size_t)slot * words),
		.length = c->size, .lkey = droce_mr_lkey(fl->src_mr),
	};
	struct ibv_send_wr wr, *bad;

	fill(fl->src + (size_t)slot * words, words, i, fl->posted);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = fl->posted;
	wr.sg_list = &sg;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)(fl->dst +
		(size_t)slot * words);
	wr.wr.rdma.rkey = droce_mr_rkey(fl->dst_mr);
	if (droce_qp_post_send(fl->qp, &wr, &bad) != 0)
		return -1;
	fl->posted++;
	return 0;
}

static int
cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static void
series_row(const struct incast_conf *c, struct fabric *fab, struct flow *fl,
		uint64_t dt)
{
	struct fab_port *p = &fab->p[c->senders];
	struct droce_qp_cc cc;
	uint32_t i;

	fprintf(c->series, "%.1f,%" PRIu64, fab->now / 1e3, p->qbytes);
	for (i = 0; i < c->senders; i++) {
		fprintf(c->series, ",%.3f", (double)(p->src_bytes[i] -
			fl[i].tx_base) * 8 / (double)dt);
		fl[i].tx_base = p->src_bytes[i];
	}
	for (i = 0; i < c->senders; i++) {
		droce_qp_cc(fl[i].qp, &cc);
		fprintf(c->series, ",%.3f", cc.rate_mbps / 1e3);
	}
	fputc('\n', c->series);
}

static void
series_head(const struct incast_conf *c)
{
	uint32_t i;

	fprintf(c->series, "t_us,queue_bytes");
	for (i = 0; i < c->senders; i++)
		fprintf(c->series, ",flow%u_gbps", i);
	for (i = 0; i < c->senders; i++)
		fprintf(c->series, ",flow%u_rate_gbps", i);
	fputc('\n', c->series);
}

/* Completions of every flow: each WRITE's bytes checked at the receiver. */
static void
reap(const struct incast_conf *c, struct fabric *fab, struct flow *fl,
		struct incast_result *r, uint64_t t0)
{
	uint32_t i, words = c->size / 8;
	struct ibv_wc wc[32];
	int n, k;

	for (i = 0; i < c->senders; i++) {
		while ((n = droce_cq_poll(fl[i].cq, wc, 32)) > 0) {
			for (k = 0; k < n; k++) {
				uint64_t id = wc[k].wr_id;

				fl[i].done++;
				if (wc[k].status != IBV_WC_SUCCESS) {
					r->errors++;
					continue;
				}
				r->completed++;
				r->bad_bytes += check(fl[i].dst + (size_t)(id %
					c->depth) * words, words, i, id);
				if (fab->now >= t0 && fab->now <= t0 +
						(c->run_ns - c->warm_ns))
					r->flow_bytes[i] += c->size;
			}
		}
	}
}

/* The fabric: N senders and the receiver (host N), the switch between. */
static int
fabric_up(const struct incast_conf *c, struct fabric *fab)
{
	struct fab_conf fc;

	memset(&fc, 0, sizeof(fc));
	fc.hosts = c->senders + 1;
	fc.rate_bps = c->gbps * 1000000000ull;
	fc.delay_ns = c->rtt_ns / 4;
	fc.nic_queue_ns = 2000;
	fc.buffer = c->buffer;
	fc.kmin = c->kmin;
	fc.kmax = c->kmax;
	fc.pmax_ppm = c->pmax_ppm;
	fc.no_mark = c->no_mark;
	fc.eth_mtu = c->mtu + 100;
	fc.seed = c->seed;
	fc.dev.cc = c->cc;
	fc.dev.selective_repeat = c->sr;
	fc.dev.rto_min_us = c->rto_min_us;
	fc.dev.delay_target_ns = c->delay_target_ns;
	fc.dev.delay_ai_mbps = c->delay_ai_mbps;
	fc.dev.np_min_time_between_cnps_ns = c->np_gap_ns;
	if (c->dcqcn) {
		fc.dev.dcqcn = *c->dcqcn;
		fc.dev.dcqcn_set = 1;
	}
	return fab_init(fab, &fc);
}

/* Each sender's QP, CQ and buffers, and its peer QP at the receiver. */
static int
flows_up(const struct incast_conf *c, struct fabric *fab, struct flow *fl,
		struct droce_cq *rcq)
{
	uint32_t i, recv = c->senders;
	size_t span = (size_t)c->size * c->depth;
	struct fl_qp_opts qo;

	fl_qp_opts_default(&qo);
	qo.timeout = (uint8_t)c->timeout;
	qo.mtu = c->mtu == 4096 ? IBV_MTU_4096 : c->mtu == 2048 ?
		IBV_MTU_2048 : IBV_MTU_1024;
	for (i = 0; i < c->senders; i++) {
		struct ibv_qp_init_attr ia = {
			.qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = c->depth, .max_recv_wr = 1,
				.max_send_sge = 1, .max_recv_sge = 1 },
		};

		fl[i].cq = droce_cq_create(fab->h[i].dev, 0, 2 * c->depth);
		fl[i].qp = droce_qp_create(fab->h[i].pd, &ia, fl[i].cq,
			fl[i].cq, NULL);
		fl[i].rqp = droce_qp_create(fab->h[recv].pd, &ia, rcq, rcq,
			NULL);
		fl[i].src_mr = reg(fab->h[i].pd, &fl[i].src, span);
		fl[i].dst_mr = reg(fab->h[recv].pd, &fl[i].dst, span);
		if (fl[i].qp == NULL || fl[i].rqp == NULL ||
				fl[i].src_mr == NULL || fl[i].dst_mr == NULL ||
				fab_connect(fab, i, fl[i].qp, recv, fl[i].rqp,
					&qo) != 0) {
			fprintf(stderr, "incast: flow %u setup failed\n", i);
			return -1;
		}
	}
	return 0;
}

static void
flows_down(const struct incast_conf *c, struct flow *fl)
{
	uint32_t i;

	for (i = 0; i < c->senders; i++) {
		droce_qp_destroy(fl[i].qp);
		droce_qp_destroy(fl[i].rqp);
		droce_cq_destroy(fl[i].cq);
		droce_mr_dereg(fl[i].src_mr);
		droce_mr_dereg(fl[i].dst_mr);
		free(fl[i].src);
		free(fl[i].dst);
	}
}

/* Queue depths sampled after the warm-up. */
struct qsamples {
	uint32_t *v, n, cap;
	uint64_t sum;
};

static void
qsample(struct qsamples *q, uint64_t depth)
{
	if (q->n == q->cap) {
		q->cap = q->cap ? 2 * q->cap : 65536;
		q->v = realloc(q->v, q->cap * sizeof(*q->v));
	}
	q->v[q->n++] = (uint32_t)depth;
	q->sum += depth;
}

/* After the run: what each flow got, what recovery and the switch did. */
static void
tally(const struct incast_conf *c, struct fabric *fab, struct flow *fl,
		struct incast_result *r, struct qsamples *q)
{
	struct fab_port *bott = &fab->p[c->senders];
	struct droce_tp_stats st;
	struct droce_qp_cc cc;
	double s1 = 0, s2 = 0;
	uint32_t i;

	for (i = 0; i < c->senders; i++) {
		r->stuck += fl[i].posted - fl[i].done;
		droce_qp_stats(fl[i].qp, &st);
		r->retransmits += st.retransmits;
		r->resent += st.resent_pkts;
		r->timeouts += st.timeouts;
		r->cnps += st.rp_cnp_handled + st.rp_cnp_ignored;
		droce_qp_cc(fl[i].qp, &cc);
		r->cuts += cc.cuts;
		r->frames_sent += st.tx_pkts;
		s1 += (double)r->flow_bytes[i];
		s2 += (double)r->flow_bytes[i] * (double)r->flow_bytes[i];
	}
	droce_tp_queue_stats(fab->h[c->senders].q, &st);
	r->ce_rx = st.np_ecn_marked;
	r->cnp_tx = st.np_cnp_sent;
	r->frames_needed = r->completed * ((c->size + c->mtu - 1) / c->mtu);
	r->jain = s2 > 0 ? s1 * s1 / (c->senders * s2) : 0;
	r->goodput_gbps = s1 * 8 / (double)r->ns;
	r->drops = bott->dropped;
	r->marks = bott->marked;
	r->enq = bott->enq;
	r->qmax = bott->qmax;
	if (q->n) {
		r->q_mean = q->sum / q->n;
		qsort(q->v, q->n, sizeof(*q->v), cmp_u32);
		r->q_p50 = q->v[q->n / 2];
		r->q_p99 = q->v[(uint64_t)q->n * 99 / 100];
	}
}

int
incast_run(const struct incast_conf *c, struct incast_result *r)
{
	struct qsamples q = { 0 };
	struct fabric fab;
	struct flow *fl;
	struct droce_cq *rcq;
	struct fab_port *bott;
	uint64_t t0 = 0, drops0 = 0, tx0 = 0, next_sample, end, out;
	uint32_t i;

	memset(r, 0, sizeof(*r));
	r->flow_bytes = calloc(c->senders, sizeof(uint64_t));
	if (fabric_up(c, &fab) != 0)
		return -1;
	fl = calloc(c->senders, sizeof(*fl));
	rcq = droce_cq_create(fab.h[c->senders].dev, 0, 64);
	if (flows_up(c, &fab, fl, rcq) != 0)
		return -1;
	bott = &fab.p[c->senders];
	if (c->series)
		series_head(c);
	next_sample = c->sample_ns;
	while (fab.now < c->run_ns) {
		for (i = 0; i < c->senders; i++)
			while (fl[i].posted - fl[i].done < c->depth &&
					post(c, &fl[i], i) == 0)
				;
		fab_step(&fab, c->step_ns);
		reap(c, &fab, fl, r, c->warm_ns);
		if (fab.now >= c->warm_ns) {
			if (t0 == 0) {
				t0 = fab.now;
				drops0 = bott->dropped;
				tx0 = bott->tx_bytes;
			}
			qsample(&q, bott->qbytes);
		}
		if (c->series && fab.now >= next_sample) {
			series_row(c, &fab, fl, c->sample_ns);
			next_sample += c->sample_ns;
		}
	}
	r->ns = fab.now - t0;
	r->drops_after_warm = bott->dropped - drops0;
	r->util = (double)(bott->tx_bytes - tx0) * 8 / ((double)r->ns *
		(double)c->gbps);
	/* the rest completes (or is stuck), nothing more posted */
	for (end = fab.now + 2000000000ull; fab.now < end; ) {
		for (i = 0, out = 0; i < c->senders; i++)
			out += fl[i].posted - fl[i].done;
		if (out == 0)
			break;
		fab_step(&fab, c->step_ns);
		reap(c, &fab, fl, r, UINT64_MAX);
	}
	tally(c, &fab, fl, r, &q);
	free(q.v);
	flows_down(c, fl);
	droce_cq_destroy(rcq);
	free(fl);
	fab_fini(&fab);
	return r->errors || r->bad_bytes || r->stuck ? 1 : 0;
}

void
incast_result_free(struct incast_result *r)
{
	free(r->flow_bytes);
	r->flow_bytes = NULL;
}
