/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * What loss costs, in virtual time: one RC QP between two droce
 * transports over a fake link of a real fabric's speed and round trip
 * (fakelink.c with fl_set_rate), DEPTH messages in flight, random loss
 * each way. For each operation and loss rate, beside the lossless run:
 * goodput, frames sent per frame needed (amplification), message
 * completion time (post to completion, p50 and p99), and the transport's
 * recovery counters. The transport runs as it does on a port; only the
 * clock is virtual, so two CPUs can show a 100 Gbit/s fabric.
 *
 *   droce-loss-bench [--op write,send,read] [--gbps 25,100]
 *       [--loss 1/N|N%|ppm,...] [--size B] [--depth N] [--msgs N]
 *       [--rtt-us N] [--timeout T] [--rto-min-us US] [--mtu 1024]
 *       [--sr 0|1] [--sr-window N] [--csv FILE]
 */

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fakelink.h"

struct opts {
	const char *ops;
	const char *gbps;
	const char *loss;
	uint32_t size, depth, msgs, rtt_us, timeout, mtu, rto_min_us;
	uint32_t sr, sr_window;
	FILE *csv;
};

struct result {
	uint64_t msgs_done, ns, frames_data, frames_needed;
	uint64_t p50_ns, p99_ns;
	struct droce_tp_stats req, resp;
	struct fl_counters link[2];
	int error;			/* a completion other than success */
};

enum bench_op { B_WRITE, B_SEND, B_READ };

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static struct droce_mr *
buf_reg(struct droce_pd *pd, uint8_t **p, size_t len)
{
	*p = aligned_alloc(4096, len);
	memset(*p, 0x5a, len);
	return droce_mr_reg(pd, *p, len, (uint64_t)(uintptr_t)*p,
		IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		IBV_ACCESS_REMOTE_READ);
}

/* The next moment anything can happen when a step sent nothing: a frame
 * arrives, a timer fires, or the NIC has room again. */
static uint64_t
next_event(struct fakelink *l)
{
	uint64_t t = UINT64_MAX, d;
	int s;

	for (s = 0; s < 2; s++) {
		if (l->inflight[s] && l->inflight[s]->due < t)
			t = l->inflight[s]->due;
		d = droce_tp_next_deadline(l->end[s].q);
		if (d < t)
			t = d;
		if (l->wire_free[s] > l->now + l->nic_queue_ns &&
				l->wire_free[s] - l->nic_queue_ns < t)
			t = l->wire_free[s] - l->nic_queue_ns;
	}
	return t;
}

/* One run's link, queues, buffers and timestamps. */
struct bench_run {
	struct fakelink l;
	struct droce_cq *cq[2];
	struct droce_qp *qp[2];
	struct droce_mr *src_mr, *dst_mr;
	uint8_t *src, *dst;
	uint64_t *post_ns, *lat;	/* per message: posted, its latency */
};

/* The link at gbps with loss_ppm each way, an RC QP connected across
 * it, the buffers registered; exits when the QPs do not connect. */
static void
run_setup(const struct opts *o, uint64_t gbps, uint32_t loss_ppm,
		struct bench_run *b)
{
	struct fl_qp_opts qo;
	struct ibv_qp_init_attr ia;
	size_t span = (size_t)o->size * o->depth;
	int s;

	fl_rto_min_us = o->rto_min_us;
	fl_sr = (uint8_t)o->sr;
	fl_sr_window = o->sr_window;
	fl_init(&b->l, 1000 + loss_ppm, 1500);
	b->l.delay_ns = (uint64_t)o->rtt_us * 1000 / 2;
	fl_set_rate(&b->l, gbps * 1000000000ull, 5000);
	for (s = 0; s < 2; s++)
		b->l.faults[s].drop_ppm = loss_ppm;
	for (s = 0; s < 2; s++) {
		b->cq[s] = droce_cq_create(b->l.end[s].dev, 0, 4 * o->depth);
		memset(&ia, 0, sizeof(ia));
		ia.qp_type = IBV_QPT_RC;
		ia.cap.max_send_wr = o->depth;
		ia.cap.max_recv_wr = o->depth;
		ia.cap.max_send_sge = 1;
		ia.cap.max_recv_sge = 1;
		b->qp[s] = droce_qp_create(b->l.end[s].pd, &ia, b->cq[s],
			b->cq[s], NULL);
	}
	b->src_mr = buf_reg(b->l.end[0].pd, &b->src, span);
	b->dst_mr = buf_reg(b->l.end[1].pd, &b->dst, span);
	fl_qp_opts_default(&qo);
	qo.timeout = (uint8_t)o->timeout;
	qo.mtu = o->mtu == 4096 ? IBV_MTU_4096 : o->mtu == 2048 ?
		IBV_MTU_2048 : o->mtu == 512 ? IBV_MTU_512 : IBV_MTU_1024;
	if (fl_connect(&b->l, b->qp[0], b->qp[1], &qo) != 0) {
		fprintf(stderr, "connect failed\n");
		exit(1);
	}
	b->post_ns = calloc(o->msgs, sizeof(*b->post_ns));
	b->lat = calloc(o->msgs, sizeof(*b->lat));
}

/* DEPTH messages in flight until all are done, a completion fails or
 * 120 s of virtual time pass: messages done, latencies, r->ns. */
static void
run_loop(const struct opts *o, enum bench_op op, struct bench_run *b,
		struct result *r)
{
	struct fakelink *l = &b->l;
	uint64_t posted = 0, recvs = 0, start, limit;

	start = l->now;
	/* a bound in virtual time: one that is not done by then says so */
	limit = start + 120ull * 1000000000ull;
	while (r->msgs_done < o->msgs && l->now < limit) {
		struct ibv_wc wc[64];
		uint64_t tx0, tx1, next;
		int n, i;

		/* the SEND's receiver keeps a receive for each in flight */
		while (op == B_SEND && recvs < o->msgs &&
				recvs - r->msgs_done < 2ull * o->depth) {
			struct ibv_sge sg = {
				.addr = (uint64_t)(uintptr_t)b->dst +
					(recvs % o->depth) * o->size,
				.length = o->size,
				.lkey = droce_mr_lkey(b->dst_mr),
			};
			struct ibv_recv_wr wr = { .wr_id = recvs,
				.sg_list = &sg, .num_sge = 1 }, *bad;

			if (droce_qp_post_recv(b->qp[1], &wr, &bad) != 0)
				break;
			recvs++;
		}
		while (posted < o->msgs && posted - r->msgs_done < o->depth) {
			size_t off = (posted % o->depth) * o->size;
			struct ibv_sge sg = { .length = o->size };
			struct ibv_send_wr wr, *bad;

			memset(&wr, 0, sizeof(wr));
			wr.wr_id = posted;
			wr.sg_list = &sg;
			wr.num_sge = 1;
			wr.send_flags = IBV_SEND_SIGNALED;
			sg.addr = (uint64_t)(uintptr_t)b->src + off;
			sg.lkey = droce_mr_lkey(b->src_mr);
			wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)b->dst +
				off;
			wr.wr.rdma.rkey = droce_mr_rkey(b->dst_mr);
			wr.opcode = op == B_WRITE ? IBV_WR_RDMA_WRITE :
				op == B_SEND ? IBV_WR_SEND : IBV_WR_RDMA_READ;
			if (droce_qp_post_send(b->qp[0], &wr, &bad) != 0)
				break;
			b->post_ns[posted++] = l->now;
		}
		tx0 = l->cnt[0].sent;
		tx1 = l->cnt[1].sent;
		fl_step(l, 0);
		n = droce_cq_poll(b->cq[0], wc, 64);
		for (i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS) {
				r->error = wc[i].status;
				goto out;
			}
			b->lat[r->msgs_done++] = l->now -
				b->post_ns[wc[i].wr_id];
		}
		/* the receiver's completions: only counted */
		while (op == B_SEND && droce_cq_poll(b->cq[1], wc, 64) > 0)
			;
		if (n)
			continue;
		/* nothing sent and nothing completed: on to the next event
		 * (fl_step delivers what is due and runs the timers) */
		next = l->cnt[0].sent != tx0 || l->cnt[1].sent != tx1 ?
			l->now + 100 : next_event(l);
		if (next == UINT64_MAX)
			next = l->now + 1000;
		if (next <= l->now)
			next = l->now + 1;
		fl_step(l, next - l->now);
	}
out:
	r->ns = l->now - start;
}

/* The counters, frames sent and needed, the latencies' p50 and p99. */
static void
run_results(const struct opts *o, enum bench_op op, struct bench_run *b,
		struct result *r)
{
	uint32_t pkts_per_msg = (o->size + o->mtu - 1) / o->mtu;

	droce_qp_stats(b->qp[0], &r->req);
	droce_qp_stats(b->qp[1], &r->resp);
	memcpy(r->link, b->l.cnt, sizeof(r->link));
	/* data frames: the requester's for WRITE and SEND (it sends no
	 * acknowledgements here), the responder's responses for READ */
	r->frames_data = op == B_READ ? r->resp.tx_pkts : r->req.tx_pkts;
	r->frames_needed = r->msgs_done * pkts_per_msg;
	if (r->msgs_done) {
		qsort(b->lat, r->msgs_done, sizeof(*b->lat), cmp_u64);
		r->p50_ns = b->lat[r->msgs_done / 2];
		r->p99_ns = b->lat[r->msgs_done * 99 / 100];
	}
}

static void
run_teardown(struct bench_run *b)
{
	int s;

	free(b->post_ns);
	free(b->lat);
	for (s = 0; s < 2; s++)
		droce_qp_destroy(b->qp[s]);
	for (s = 0; s < 2; s++)
		droce_cq_destroy(b->cq[s]);
	droce_mr_dereg(b->src_mr);
	droce_mr_dereg(b->dst_mr);
	fl_fini(&b->l);
	free(b->src);
	free(b->dst);
}

static void
run_one(const struct opts *o, enum bench_op op, uint64_t gbps,
		uint32_t loss_ppm, struct result *r)
{
	struct bench_run b;

	memset(r, 0, sizeof(*r));
	run_setup(o, gbps, loss_ppm, &b);
	run_loop(o, op, &b, r);
	run_results(o, op, &b, r);
	run_teardown(&b);
}

static void
print_head(void)
{
	printf("%-5s %4s %8s %8s %6s %6s %9s %9s %7s %7s %7s %7s %7s\n",
		"op", "Gb/s", "loss", "goodput", "of-0", "ampl",
		"p50-us", "p99-us", "retx", "tmo", "nakseq", "rdrepl",
		"done");
}

/* A loss rate as 1/N, N% or ppm: in ppm. */
static uint32_t
loss_ppm(const char *s)
{
	if (strncmp(s, "1/", 2) == 0)
		return (uint32_t)((1000000 + strtoul(s + 2, NULL, 0) / 2) /
			strtoul(s + 2, NULL, 0));
	if (strchr(s, '%') != NULL)
		return (uint32_t)(strtod(s, NULL) * 10000 + 0.5);
	return (uint32_t)strtoul(s, NULL, 0);
}

static void
print_row(const struct opts *o, const char *op, uint64_t gbps,
		const char *loss, uint32_t ppm, const struct result *r,
		double base)
{
	double gput = r->ns ? (double)r->msgs_done * o->size * 8 / r->ns : 0;
	double ampl = r->frames_needed ?
		(double)r->frames_data / r->frames_needed : 0;

	printf("%-5s %4" PRIu64 " %8s %8.2f %5.1f%% %6.2f %9.1f %9.1f %7"
		PRIu64 " %7" PRIu64 " %7" PRIu64 " %7" PRIu64 " %7s\n",
		op, gbps, loss, gput, base > 0 ? 100 * gput / base : 100,
		ampl, r->p50_ns / 1e3, r->p99_ns / 1e3,
		r->req.retransmits, r->req.timeouts, r->req.nak_seq_rx,
		r->resp.read_replays,
		r->error ? "error" : r->msgs_done == o->msgs ? "all" : "NOT");
	if (o->csv != NULL)
		fprintf(o->csv, "%s,%" PRIu64 ",%u,%.4f,%.4f,%.4f,%.1f,%.1f,%"
			PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%"
			PRIu64 ",%d\n", op, gbps, ppm, gput,
			base > 0 ? gput / base : 1, ampl, r->p50_ns / 1e3,
			r->p99_ns / 1e3, r->req.retransmits, r->req.timeouts,
			r->req.nak_seq_rx, r->resp.read_replays,
			r->msgs_done, r->error);
	fflush(stdout);
}

static void
usage(void)
{
	fprintf(stderr, "usage: droce-loss-bench [--op write,send,read] "
		"[--gbps 25,100] [--loss 1/N|N%%|ppm,...] [--size B] [--depth N] "
		"[--msgs N] [--rtt-us N] [--timeout T] [--rto-min-us US] [--sr 0|1] [--sr-window N] "
		"[--mtu M] [--csv FILE]\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "op", required_argument, NULL, 'o' },
		{ "gbps", required_argument, NULL, 'g' },
		{ "loss", required_argument, NULL, 'l' },
		{ "size", required_argument, NULL, 's' },
		{ "depth", required_argument, NULL, 'd' },
		{ "msgs", required_argument, NULL, 'n' },
		{ "rtt-us", required_argument, NULL, 'r' },
		{ "timeout", required_argument, NULL, 't' },
		{ "mtu", required_argument, NULL, 'm' },
		{ "csv", required_argument, NULL, 'c' },
		{ "rto-min-us", required_argument, NULL, 'R' },
		{ "sr", required_argument, NULL, 'S' },
		{ "sr-window", required_argument, NULL, 'W' },
		{ NULL, 0, NULL, 0 }
	};
	struct opts o = { .ops = "write,send,read", .gbps = "25,100",
		.loss = "1/16384,1/4096,1/1024,1/256,1%,5%", .size = 65536,
		.depth = 128, .msgs = 2048, .rtt_us = 10, .timeout = 14,
		.mtu = 1024 };
	char *ops, *op, *sp1, *g, *sp2, *lp, *sp3, *losses;
	int c;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'o': o.ops = optarg; break;
		case 'g': o.gbps = optarg; break;
		case 'l': o.loss = optarg; break;
		case 's': o.size = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'd': o.depth = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'n': o.msgs = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'r': o.rtt_us = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 't': o.timeout = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'm': o.mtu = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'S': o.sr = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'W':
			o.sr_window = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'R':
			o.rto_min_us = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'c':
			o.csv = fopen(optarg, "w");
			if (o.csv == NULL) {
				perror(optarg);
				return 1;
			}
			fprintf(o.csv, "op,gbps,loss_ppm,goodput_gbps,"
				"of_lossless,amplification,p50_us,p99_us,"
				"retransmits,timeouts,nak_seq_rx,read_replays,"
				"msgs_done,error\n");
			break;
		default: usage();
		}
	}
	if (o.size == 0 || o.depth == 0 || o.msgs == 0 || o.timeout > 31 ||
			(o.mtu != 512 && o.mtu != 1024 && o.mtu != 2048 &&
			 o.mtu != 4096))
		usage();
	printf("RC, %u B messages, %u in flight, %u each run, MTU %u, "
		"round trip %u us, local ACK timeout %u (%.1f ms), timer "
		"floor %u us, %s; loss each way; goodput in Gbit/s (of-0: of the "
		"lossless run), ampl: data frames sent per frame needed\n",
		o.size, o.depth, o.msgs, o.mtu, o.rtt_us, o.timeout,
		4.096e-3 * (double)(1ull << o.timeout),
		o.rto_min_us ? o.rto_min_us : 1000,
		o.sr ? "selective repeat" : "go-back-N");
	print_head();
	ops = strdup(o.ops);
	for (op = strtok_r(ops, ",", &sp1); op; op = strtok_r(NULL, ",", &sp1)) {
		enum bench_op bo = !strcmp(op, "write") ? B_WRITE :
			!strcmp(op, "send") ? B_SEND : B_READ;
		char *gb = strdup(o.gbps);

		if (strcmp(op, "write") && strcmp(op, "send") &&
				strcmp(op, "read"))
			usage();
		for (g = strtok_r(gb, ",", &sp2); g; g = strtok_r(NULL, ",", &sp2)) {
			uint64_t gbps = strtoull(g, NULL, 0);
			struct result r;
			double base;

			run_one(&o, bo, gbps, 0, &r);
			base = r.ns ? (double)r.msgs_done * o.size * 8 / r.ns : 0;
			print_row(&o, op, gbps, "0", 0, &r, base);
			losses = strdup(o.loss);
			for (lp = strtok_r(losses, ",", &sp3); lp;
					lp = strtok_r(NULL, ",", &sp3)) {
				uint32_t ppm = loss_ppm(lp);

				if (ppm == 0 || ppm > 1000000)
					usage();
				run_one(&o, bo, gbps, ppm, &r);
				print_row(&o, op, gbps, lp, ppm, &r, base);
			}
			free(losses);
		}
		free(gb);
	}
	free(ops);
	if (o.csv != NULL)
		fclose(o.csv);
	return 0;
}
