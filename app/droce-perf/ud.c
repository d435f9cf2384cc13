/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * ud_send's UD QPs: one beside each RC QP, on its queue, made when the
 * client's first ud_send test runs (every progress pass visits each QP
 * of its queue, so idle UD QPs would have counted in the RC tests before
 * it). The client sends through one AH to the server. The server keeps
 * each UD QP's receive queue full, counts what arrives and with --verify
 * checks it: UD drops what finds no receive posted, and nothing resends.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf_internal.h"

struct droce_qp *uqp[PERF_MAX_QP];
struct ibv_ah *ud_ah;

/* The server's receive buffers, GRH and the client's largest UD SEND
 * each: UD_RBUF_N a QP, more than net_memif's largest ring holds, so a
 * server a ring behind still drops nothing; fewer where that would pass
 * UD_RBUF_BUDGET in all. */
#define UD_RBUF_N 2048u
#define UD_RBUF_MIN_N 64u
#define UD_RBUF_BUDGET ((size_t)256 << 20)
static uint32_t ud_rbuf_sz, ud_rbuf_n = UD_RBUF_N;
static uint8_t *ud_rmem;
static struct droce_mr *ud_rmr;
/* The server's UD QPs' CQs: apart from server_poll's */
static struct droce_cq *ud_cq[16];
/* What each QP's SENDs carry in the current test (at ud_rbuf_sz apart),
 * and their size */
static uint8_t *ud_expect;
static uint32_t ud_size;
/* The server's UD QPs are made, their receives posted */
static int ud_served;

/* One UD QP, INIT (its Q_Key) to RTS, on queue q. */
static struct droce_qp *
ud_qp(const struct ibv_qp_init_attr *init, struct droce_cq *c, uint32_t q)
{
	struct ibv_qp_init_attr ia = *init;
	struct ibv_qp_attr a;
	struct droce_qp *u;
	int rc;

	/* progress may run already: hold the queue it walks */
	droce_port_lock(port, q);
	u = droce_qp_create(pd, &ia, c, c, NULL);
	if (u == NULL) {
		droce_port_unlock(port, q);
		fprintf(stderr, "droce-perf: UD QP: %s\n", strerror(errno));
		return NULL;
	}
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qkey = PERF_UD_QKEY;
	rc = droce_qp_modify(u, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
		IBV_QP_PORT | IBV_QP_QKEY, NULL);
	a.qp_state = IBV_QPS_RTR;
	if (rc == 0)
		rc = droce_qp_modify(u, &a, IBV_QP_STATE, NULL);
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	if (rc == 0)
		rc = droce_qp_modify(u, &a, IBV_QP_STATE | IBV_QP_SQ_PSN, NULL);
	droce_port_unlock(port, q);
	if (rc) {
		fprintf(stderr, "droce-perf: modify UD QP (INIT, RTR, RTS): "
			"%s\n", strerror(-rc));
		return NULL;
	}
	return u;
}

/* This side's UD QPs, QP i's on RC QP i's queue and its CQ in cqs (the
 * workers own QP i by that queue); their QPNs in me. */
static int
ud_make_qps(struct droce_cq *const *cqs, uint32_t max_recv)
{
	struct ibv_qp_init_attr ia;
	uint32_t i, q;

	memset(&ia, 0, sizeof(ia));
	ia.qp_type = IBV_QPT_UD;
	ia.cap.max_send_wr = opt.depth < 64 ? 64 : opt.depth;
	ia.cap.max_recv_wr = max_recv;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	ia.cap.max_inline_data = 256;
	for (i = 0; i < opt.nqp; i++) {
		q = qp_queue(i);
		uqp[i] = ud_qp(&ia, cqs[q], q);
		if (uqp[i] == NULL)
			return -1;
		if (droce_qpn_queue(droce_port_dev(port),
				droce_qp_num(uqp[i])) != q) {
			fprintf(stderr, "droce-perf: UD QP %u not on its RC "
				"QP's queue %u\n", i, q);
			return -1;
		}
		me.ud_qpn[i] = droce_qp_num(uqp[i]);
	}
	me.ud_qkey = PERF_UD_QKEY;
	return 0;
}

/*
 * The client's UD QPs, the server's (PERF_CMD_UD, then the two
 * perf_infos with the QPNs) and an AH to the server on the RC QPs'
 * address. Their completions go to the RC QPs' CQs, which client_reap
 * polls.
 */
int
ud_client_start(void)
{
	struct perf_cmd c = { .kind = PERF_CMD_UD };
	struct droce_ah *ah;
	uint32_t i, s;

	if (ud_make_qps(cq, 1) != 0)
		return -1;
	for (s = 0; s < opt.nsizes; s++)
		if (opt.sizes[s] > me.ud_max_send)
			me.ud_max_send = opt.sizes[s];
	if (sc_send(sc, &c, sizeof(c)) || sc_send(sc, &me, sizeof(me)) ||
			sc_recv_progress(sc, &peer, sizeof(peer)))
		return -1;
	for (i = 0; i < opt.nqp; i++)
		if (peer.ud_qpn[i] == 0) {
			fprintf(stderr, "droce-perf: the server made no UD "
				"QP %u\n", i);
			return -1;
		}
	ah = droce_ah_create(pd, &peer_av);
	if (ah == NULL) {
		fprintf(stderr, "droce-perf: AH: %s\n", strerror(errno));
		return -1;
	}
	ud_ah = droce_ah_to_ibv(ah);
	return 0;
}

static void
ud_post_recv(struct worker *w, uint32_t qi, uint32_t k)
{
	post_ring_recv(w, uqp[qi], qi, k, ud_rmem, ud_rbuf_n, ud_rbuf_sz,
		ud_rmr);
}

/* The server's CQs, buffers and UD QPs, every receive posted. */
static int
ud_server_make(void)
{
	struct droce_dev *dev = droce_port_dev(port);
	uint32_t i, k, per_q = (opt.nqp + opt.queues - 1) / opt.queues;
	size_t len;

	ud_rbuf_sz = RTE_ALIGN_CEIL(DROCE_GRH_LEN + peer.ud_max_send, 64u);
	len = (size_t)opt.nqp * ud_rbuf_sz;
	while (ud_rbuf_n > UD_RBUF_MIN_N && len * ud_rbuf_n > UD_RBUF_BUDGET)
		ud_rbuf_n /= 2;
	len *= ud_rbuf_n;
	ud_rmem = aligned_alloc(4096, RTE_ALIGN_CEIL(len, 4096u));
	ud_expect = malloc((size_t)opt.nqp * ud_rbuf_sz);
	if (ud_rmem == NULL || ud_expect == NULL)
		return -1;
	ud_rmr = droce_mr_reg(pd, ud_rmem, len, (uint64_t)(uintptr_t)ud_rmem,
		IBV_ACCESS_LOCAL_WRITE);
	if (ud_rmr == NULL)
		return -1;
	for (i = 0; i < opt.queues; i++) {
		/* every receive of the queue's QPs may complete at once */
		ud_cq[i] = droce_cq_create(dev, i, per_q * ud_rbuf_n + 64);
		if (ud_cq[i] == NULL)
			return -1;
	}
	if (ud_make_qps(ud_cq, ud_rbuf_n) != 0)
		return -1;
	for (i = 0; i < opt.nqp; i++)
		for (k = 0; k < ud_rbuf_n; k++)
			ud_post_recv(&workers[0], i, k);
	ud_served = 1;
	return 0;
}

/* PERF_CMD_UD at the server: the client's perf_info follows; answer with
 * this side's, its UD QPNs 0 if they could not be made. */
int
ud_server_start(void)
{
	int rc;

	if (sc_recv(sc, &peer, sizeof(peer)) != 0)
		return -1;
	rc = ud_server_make();
	if (rc != 0) {
		fprintf(stderr, "droce-perf server: no UD QPs\n");
		memset(me.ud_qpn, 0, sizeof(me.ud_qpn));
	}
	if (sc_send(sc, &me, sizeof(me)) != 0)
		return -1;
	return rc;
}

/* PERF_CMD_RUN of a ud_send test: the receives an earlier test left
 * behind (arrived after its DONE) posted again uncounted, and what this
 * test's SENDs will carry. */
void
ud_server_test(const struct perf_cmd *c)
{
	struct ibv_wc wc[64];
	uint32_t i, q;
	int n, k;

	for (q = 0; q < opt.queues && ud_served; q++)
		do {
			droce_port_lock(port, q);
			n = droce_cq_poll(ud_cq[q], wc, 64);
			droce_port_unlock(port, q);
			for (k = 0; k < n; k++)
				if (wc[k].status == IBV_WC_SUCCESS)
					ud_post_recv(&workers[0],
						(uint32_t)(wc[k].wr_id >> 32),
						(uint32_t)wc[k].wr_id);
		} while (n > 0);
	ud_size = c->size;
	for (i = 0; i < opt.nqp && ud_served &&
			DROCE_GRH_LEN + ud_size <= ud_rbuf_sz; i++)
		pattern(ud_expect + (size_t)i * ud_rbuf_sz, ud_size,
			c->seed + i);
}

/* The server's UD receives on the worker's queues: count them, check
 * them (--verify), post their buffers again. */
void
ud_server_poll(struct worker *w)
{
	struct ibv_wc wc[64];
	uint32_t j, q;
	int n, k;

	progress_worker(w);
	if (!ud_served)
		return;
	for (j = 0; j < w->nq; j++) {
		q = w->q[j];
		droce_port_lock(port, q);
		n = droce_cq_poll(ud_cq[q], wc, 64);
		droce_port_unlock(port, q);
		for (k = 0; k < n; k++) {
			uint32_t qi = (uint32_t)(wc[k].wr_id >> 32);
			uint32_t b = (uint32_t)wc[k].wr_id;
			const uint8_t *p = ud_rmem + ((size_t)qi * ud_rbuf_n +
				b) * ud_rbuf_sz + DROCE_GRH_LEN;

			if (wc[k].status != IBV_WC_SUCCESS) {
				count_add(&w->recv_bad, 1);
				continue;
			}
			if (opt.verify && (wc[k].byte_len !=
					DROCE_GRH_LEN + ud_size ||
					DROCE_GRH_LEN + ud_size > ud_rbuf_sz ||
					memcmp(p, ud_expect + (size_t)qi *
					ud_rbuf_sz, ud_size) != 0))
				count_add(&w->recv_bad, 1);
			count_add(&w->recv_count, 1);
			ud_post_recv(w, qi, b);
		}
	}
}
