/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

#ifndef PERF_INTERNAL_H
#define PERF_INTERNAL_H

/*
 * What droce-perf's files share: the options, this side's port, QPs and
 * memory, the worker lcores, a test's result, and the steps main.c runs.
 * The hot loops (client_job, server_poll, raw_tx_job, raw_rx_pass) keep
 * what they do per message in their own file or inline here.
 */

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <rte_common.h>

#include "perf.h"

/* ---- options (args.c) ---- */

struct perf_opt {
	int server;
	const char *vdev, *eal, *ip, *peer_ip, *json, *sc_addr, *ip6;
	int timeout;
	int port;
	uint32_t mtu;
	uint32_t zc_min;		/* --zero-copy; 0: the port's default */
	uint32_t sr, sr_window;		/* --sr, --sr-window */
	int cc_none;			/* --cc none */
	uint32_t line_rate;		/* --line-rate */
	int ops[OP_NB], nops;
	uint32_t sizes[32], nsizes;
	uint32_t iters, nqp, queues, cores, depth, post_list, cq_mod, repeat;
	uint32_t outs;			/* --outs; 0: the device's maximum */
	int inline_data, lat, verify, raw, live, json_out, static_neigh;
	int expect_handoffs;
	uint32_t expect_path_mtu;
	double duration;
	struct droce_fault_conf fault;
};

extern struct perf_opt opt;
extern const char *const op_names[OP_NB];

int parse_args(int argc, char **argv);
int faults_on(void);
int ud_sizes_fit(uint32_t path_mtu, const char *whose);

/* 1 if --op names op */
static inline int
op_asked(int op)
{
	int i;

	for (i = 0; i < opt.nops; i++)
		if (opt.ops[i] == op)
			return 1;
	return 0;
}

/* ---- this side's port, QPs and memory (setup.c) ---- */

extern struct droce_port *port;
extern struct droce_pd *pd;
extern struct droce_cq *cq[16];
extern struct droce_qp *qp[PERF_MAX_QP];
extern uint8_t *mem;
extern size_t memsz;
extern struct droce_mr *mr;
extern struct perf_info me, peer;
extern int sc;
extern uint32_t mtu_bytes;
extern struct droce_av peer_av;		/* the RC QPs' and the UD AH's */

/* Each QP's slot of the MR: a message of up to PERF_MAX_SIZE bytes, and
 * an atomic's result in its last 8 bytes. */
#define PERF_MAX_SIZE (1u << 20)
#define SLOT_SZ ((size_t)PERF_MAX_SIZE + 4096u)
#define SLOT(i) ((size_t)(i) * SLOT_SZ)

#define WR_ID_QP_SHIFT 40

int setup(void);
int sc_exchange(void);
int sc_recv_progress(int fd, void *b, size_t n);
int connect_qps(void);
void pattern(uint8_t *p, size_t n, uint32_t seed);
int pattern_ok(const uint8_t *p, size_t n, uint32_t seed);

static inline uint32_t
qp_queue(uint32_t i)
{
	return droce_qpn_queue(droce_port_dev(port), droce_qp_num(qp[i]));
}

static inline void
progress_all(void)
{
	uint32_t q;

	for (q = 0; q < opt.queues; q++)
		droce_port_progress(port, q);
}

/* ---- worker lcores (worker.c) ---- */

/*
 * With --cores N, worker w owns the queues q with q % N == w and the QPs
 * that live on them: no two threads touch one queue, as in an application
 * that gives droce one core per queue. Worker 0 is the main lcore.
 */
struct worker {
	uint32_t id, lcore;
	uint32_t nq, q[16];
	uint32_t nqp, qi[PERF_MAX_QP];
	uint64_t total;			/* client: messages completed */
	int bad;
	uint64_t *lat;
	uint64_t raw_sent, raw_got;	/* raw baseline */
	uint64_t recv_count, recv_bad;	/* server */
	int seen;			/* server: the phase it acts on */
} __rte_cache_aligned;

extern struct worker workers[16];

int setup_workers(void);
void launch_workers(int (*job)(struct worker *w));
int run_workers(int (*job)(struct worker *w));

static inline void
progress_worker(struct worker *w)
{
	uint32_t j;

	for (j = 0; j < w->nq; j++)
		droce_port_progress(port, w->q[j]);
}

static inline void
count_add(uint64_t *c, uint64_t n)
{
	/* one writer; the main lcore reads the sum */
	__atomic_store_n(c, *c + n, __ATOMIC_RELAXED);
}

/* ---- UD QPs for ud_send (ud.c) ---- */

extern struct droce_qp *uqp[PERF_MAX_QP];
extern struct ibv_ah *ud_ah;		/* the client's, to the server */

int ud_client_start(void);
int ud_server_start(void);
void ud_server_test(const struct perf_cmd *c);
void ud_server_poll(struct worker *w);

/* ---- a test's figures (client.c, raw.c, report.c) ---- */

struct result {
	int op;
	uint32_t size;
	uint64_t msgs;
	double secs, mps, gbps;
	double lat_avg, lat_p50, lat_p99;
	double raw_fps, raw_gbps, ratio, raw_lat_p50;
	double ratio_min, ratio_max;	/* over --repeat runs */
	uint64_t received;		/* ud_send: messages that arrived */
	int ok;
};

/* ---- the raw PMD baseline (raw.c) ---- */

void warm_up(void);
void run_raw(struct result *r);
uint64_t raw_rx_pass(struct worker *w, int echo);

/* ---- the client's tests (client.c) ---- */

int cmp_u64(const void *a, const void *b);
int run_tests(struct result *rs, int max, int *nr);

/* ---- reports (report.c) ---- */

uint64_t zc_frames(void);
uint64_t handoffs(void);
void burst_report(const char *who);
void cc_report(const char *side);
void print_results(struct result *rs, int n);
int fault_report(void);
void fail_report(void);
int end_report(void);

/* ---- the server (server.c) ---- */

/* Receive k of QP qi's ring of n buffers of sz bytes at base (in mr)
 * posted to q, under its queue's lock; a refusal counted. */
static inline void
post_ring_recv(struct worker *w, struct droce_qp *q, uint32_t qi, uint32_t k,
		uint8_t *base, uint32_t n, uint32_t sz, struct droce_mr *mr)
{
	struct ibv_sge s = {
		.addr = (uint64_t)(uintptr_t)(base + ((size_t)qi * n + k) * sz),
		.length = sz, .lkey = droce_mr_lkey(mr),
	};
	struct ibv_recv_wr wr = { .wr_id = (uint64_t)qi << 32 | k,
		.sg_list = &s, .num_sge = 1 }, *bad;
	uint32_t queue = qp_queue(qi);

	droce_port_lock(port, queue);
	if (droce_qp_post_recv(q, &wr, &bad) != 0)
		count_add(&w->recv_bad, 1);
	droce_port_unlock(port, queue);
}

int server_loop(void);

#endif
