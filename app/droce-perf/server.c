/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * The server: it answers the client's commands on the side channel, and
 * between them keeps its receive queues full and counts (and with
 * --verify checks) what arrived, or counts and echoes the raw baseline's
 * frames. ud_send's receives are ud.c's.
 */

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_pause.h>

#include "perf_internal.h"

/* Receive buffers per QP, each of rbuf_sz bytes: at least 64 KB, more for
 * the client's largest SEND; fewer than RBUF_N where that would pass
 * RBUF_BUDGET in all (RNR NAKs then pace the client). */
#define RBUF_N 128u
#define RBUF_MIN_N 16u
#define RBUF_BUDGET ((size_t)1 << 30)
static uint32_t rbuf_sz = 65536, rbuf_n = RBUF_N;

static uint8_t *rmem;
static struct droce_mr *rmr;
static struct perf_cmd cur;
/* What QP i's SENDs carry in the current test, so that --verify checks a
 * receive with memcmp: the byte-by-byte pattern check cost the server
 * more than droce did for 4 KB and larger SENDs. */
static uint8_t *expect;

/* What the server's workers do; the main lcore (worker 0) also reads
 * the side channel and switches the phase. PH_UD: a ud_send test. */
enum { PH_DROCE, PH_UD, PH_RAW, PH_ECHO, PH_STOP };
static int srv_phase;
static uint64_t raw_server_count;

static void
post_recv_buf(struct worker *w, uint32_t qi, uint32_t k)
{
	post_ring_recv(w, qp[qi], qi, k, rmem, rbuf_n, rbuf_sz, rmr);
}

static void
server_poll(struct worker *w)
{
	struct ibv_wc wc[64];
	uint32_t j, q;
	int n, k;

	progress_worker(w);
	for (j = 0; j < w->nq; j++) {
		q = w->q[j];
		droce_port_lock(port, q);
		n = droce_cq_poll(cq[q], wc, 64);
		droce_port_unlock(port, q);
		for (k = 0; k < n; k++) {
			uint32_t qi = (uint32_t)(wc[k].wr_id >> 32);
			uint32_t b = (uint32_t)wc[k].wr_id;

			if (wc[k].status != IBV_WC_SUCCESS) {
				count_add(&w->recv_bad, 1);
				continue;
			}
			if (wc[k].opcode == IBV_WC_RECV && opt.verify &&
					(wc[k].byte_len != cur.size ||
					cur.size > rbuf_sz ||
					memcmp(rmem + ((size_t)qi * rbuf_n + b) *
					rbuf_sz, expect + (size_t)qi * rbuf_sz,
					cur.size) != 0))
				count_add(&w->recv_bad, 1);
			count_add(&w->recv_count, 1);
			post_recv_buf(w, qi, b);
		}
	}
}

/* Workers 1..N-1 of the server: act on the phase the main lcore sets. */
static int
server_job(struct worker *w)
{
	for (;;) {
		int ph = __atomic_load_n(&srv_phase, __ATOMIC_ACQUIRE);

		/* stored before acting: once the main lcore reads the new
		 * phase here, this worker is done with the old one */
		__atomic_store_n(&w->seen, ph, __ATOMIC_RELEASE);
		if (ph == PH_STOP)
			return 0;
		if (ph == PH_DROCE)
			server_poll(w);
		else if (ph == PH_UD)
			ud_server_poll(w);
		else
			count_add(&w->raw_got, raw_rx_pass(w, ph == PH_ECHO));
	}
}

static void
set_phase(int ph)
{
	uint32_t i;

	__atomic_store_n(&srv_phase, ph, __ATOMIC_RELEASE);
	for (i = 1; i < opt.cores; i++)
		while (__atomic_load_n(&workers[i].seen, __ATOMIC_ACQUIRE) != ph)
			rte_pause();
}

static uint64_t
sum_counter(size_t off)
{
	uint64_t s = 0;
	uint32_t i;

	for (i = 0; i < opt.cores; i++)
		s += __atomic_load_n((uint64_t *)((char *)&workers[i] + off),
			__ATOMIC_RELAXED);
	return s;
}

static void
reset_counters(void)
{
	uint32_t i;

	for (i = 0; i < opt.cores; i++) {
		__atomic_store_n(&workers[i].recv_count, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&workers[i].recv_bad, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&workers[i].raw_got, 0, __ATOMIC_RELAXED);
	}
}

/* Receive buffers for every QP, sized for the client's largest SEND,
 * all posted. */
static int
rbuf_setup(void)
{
	uint32_t i, k;

	if (peer.max_send > rbuf_sz)
		rbuf_sz = RTE_ALIGN_CEIL(peer.max_send, 4096u);
	while (rbuf_n > RBUF_MIN_N &&
			(size_t)opt.nqp * rbuf_n * rbuf_sz > RBUF_BUDGET)
		rbuf_n /= 2;
	rmem = aligned_alloc(4096, (size_t)opt.nqp * rbuf_n * rbuf_sz);
	rmr = droce_mr_reg(pd, rmem, (size_t)opt.nqp * rbuf_n * rbuf_sz,
		(uint64_t)(uintptr_t)rmem, IBV_ACCESS_LOCAL_WRITE);
	expect = malloc((size_t)opt.nqp * rbuf_sz);
	if (rmem == NULL || rmr == NULL || expect == NULL)
		return -1;
	for (i = 0; i < opt.nqp; i++)
		for (k = 0; k < rbuf_n; k++)
			post_recv_buf(&workers[0], i, k);
	return 0;
}

/* PERF_CMD_RUN: what the test's SENDs will carry, its slots cleared (or
 * for a READ, filled). */
static void
cmd_run(const struct perf_cmd *c)
{
	uint32_t i;

	cur = *c;
	if (c->op == OP_FADD || c->op == OP_CSWAP)
		cur.size = 8;
	if (c->op == OP_UD_SEND)
		ud_server_test(c);
	reset_counters();
	for (i = 0; i < opt.nqp && cur.size <= rbuf_sz; i++)
		pattern(expect + (size_t)i * rbuf_sz, cur.size,
			cur.seed + i);
	for (i = 0; i < opt.nqp; i++) {
		if (c->op == OP_READ)
			pattern(mem + SLOT(i), cur.size,
				c->seed + 1000 + i);
		else
			memset(mem + SLOT(i), 0, cur.size);
	}
	if (c->op == OP_UD_SEND)
		set_phase(PH_UD);
}

/* PERF_CMD_DONE: wait for the test's receives, check what arrived; the
 * answer's value is 1 if it all did, as it should. */
static void
cmd_done(struct perf_cmd *c)
{
	uint64_t want = c->value * opt.nqp, t_end;
	size_t cnt = offsetof(struct worker, recv_count);
	uint32_t i;
	int ok = 1;

	/* completions at the client mean the data is here;
	 * poll until the receives are all in */
	t_end = droce_now_ns() + 5000000000ull;
	if (cur.op == OP_SEND || cur.op == OP_WRITE_IMM)
		while (sum_counter(cnt) < want &&
				droce_now_ns() < t_end)
			server_poll(&workers[0]);
	if ((cur.op == OP_SEND || cur.op == OP_WRITE_IMM) &&
			sum_counter(cnt) != want)
		ok = 0;
	if (sum_counter(offsetof(struct worker, recv_bad)))
		ok = 0;
	for (i = 0; i < opt.nqp && opt.verify; i++) {
		if ((cur.op == OP_WRITE || cur.op == OP_WRITE_IMM)
				&& !pattern_ok(mem + SLOT(i),
				cur.size, cur.seed + i))
			ok = 0;
		if ((cur.op == OP_FADD || cur.op == OP_CSWAP) &&
				*(uint64_t *)(mem + SLOT(i)) !=
				c->value)
			ok = 0;
	}
	c->value = (uint64_t)ok;
}

/* How long the server waits for the rest of a ud_send test's receives
 * once none arrives: UD drops what finds no receive, nothing resends. */
#define UD_QUIET_NS 200000000ull

/* PERF_CMD_DONE of a ud_send test: the receives that arrived (all, or
 * until none has for UD_QUIET_NS) in the answer's received; its value is
 * 1 if none was bad. */
static void
cmd_done_ud(struct perf_cmd *c)
{
	uint64_t want = c->value * opt.nqp, got = 0, n, now, t_quiet;
	size_t cnt = offsetof(struct worker, recv_count);

	t_quiet = droce_now_ns() + UD_QUIET_NS;
	for (;;) {
		n = sum_counter(cnt);
		now = droce_now_ns();
		if (n != got) {
			got = n;
			t_quiet = now + UD_QUIET_NS;
		}
		if (got >= want || now > t_quiet)
			break;
		ud_server_poll(&workers[0]);
	}
	set_phase(PH_DROCE);
	c->received = sum_counter(cnt);
	c->value = sum_counter(offsetof(struct worker, recv_bad)) == 0;
}

/* PERF_CMD_RAW: the workers count (or echo) raw frames until the client
 * says PERF_CMD_RAW_DONE; the answer's value is the frames received. */
static int
cmd_raw(struct perf_cmd *c)
{
	int echo = (int)c->flags;

	reset_counters();
	set_phase(echo ? PH_ECHO : PH_RAW);
	if (sc_send(sc, c, sizeof(*c)))
		return -1;
	/* look at the side channel as the droce phase does,
	 * once every few hundred passes: a poll() per pass
	 * (~750 cycles here) slowed the raw receiver and
	 * the raw echo, and flattered droce's ratios */
	do {
		uint32_t spin;

		for (spin = 0; spin < 512; spin++)
			count_add(&workers[0].raw_got,
				raw_rx_pass(&workers[0], echo));
	} while (!sc_ready(sc));
	set_phase(PH_DROCE);
	raw_server_count = sum_counter(offsetof(struct worker,
		raw_got));
	if (sc_recv(sc, c, sizeof(*c)))
		return -1;
	c->value = raw_server_count;
	return 0;
}

/* PERF_CMD_QUIT: the workers stop; this side's counters, printed and
 * sent to the client for its report. */
static void
cmd_quit(struct perf_cmd *c)
{
	struct droce_tp_stats st;
	struct rte_eth_stats es;

	set_phase(PH_STOP);
	rte_eal_mp_wait_lcore();
	droce_port_lock(port, 0);
	droce_tp_queue_stats(droce_dev_queue(droce_port_dev(port),
		0), &st);
	droce_port_unlock(port, 0);
	rte_eth_stats_get(droce_port_id(port), &es);
	fprintf(stderr, "droce-perf server: NIC ipackets %" PRIu64
		" imissed %" PRIu64 " ierrors %" PRIu64 " opackets %"
		PRIu64 " oerrors %" PRIu64 "\n", es.ipackets,
		es.imissed, es.ierrors, es.opackets, es.oerrors);
	fprintf(stderr, "droce-perf server: rx %" PRIu64 " tx %"
		PRIu64 " seq-NAK tx %" PRIu64 " RNR tx %" PRIu64
		" inv-req NAK tx %" PRIu64 " dup %" PRIu64
		" QP0 state %d\n", st.rx_pkts, st.tx_pkts,
		st.nak_seq_tx, st.rnr_nak_tx, st.nak_inv_tx,
		st.dup_rx, droce_qp_state(qp[0]));
	burst_report("server");
	cc_report("server");
	c->value = zc_frames();
	c->handoffs = handoffs();
	c->srv_tx = st.tx_pkts;
	c->srv_read_replays = st.read_replays;
	c->srv_nak_seq_tx = st.nak_seq_tx;
	c->srv_dup_rx = st.dup_rx;
	sc_send(sc, c, sizeof(*c));
}

int
server_loop(void)
{
	if (rbuf_setup() != 0)
		return -1;
	launch_workers(server_job);
	for (;;) {
		struct perf_cmd c;
		uint32_t spin;

		/* a poll() on the side channel costs a system call: look
		 * at it once every few hundred passes */
		for (spin = 0; spin < 512; spin++)
			if (srv_phase == PH_UD)
				ud_server_poll(&workers[0]);
			else
				server_poll(&workers[0]);
		if (!sc_ready(sc))
			continue;
		if (sc_recv(sc, &c, sizeof(c)))
			return -1;
		switch (c.kind) {
		case PERF_CMD_RUN:
			cmd_run(&c);
			break;
		case PERF_CMD_DONE:
			if (cur.op == OP_UD_SEND)
				cmd_done_ud(&c);
			else
				cmd_done(&c);
			break;
		case PERF_CMD_RAW:
			if (cmd_raw(&c) != 0)
				return -1;
			break;
		case PERF_CMD_QUIT:
			cmd_quit(&c);
			return 0;
		case PERF_CMD_UD:
			/* answered with this side's perf_info */
			if (ud_server_start() != 0)
				return -1;
			continue;
		default:
			return -1;
		}
		if (sc_send(sc, &c, sizeof(c)))
			return -1;
	}
}
