/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/* not VERBS_API_H: <infiniband/verbs_api.h> has it */
#ifndef VERBS_API_TEST_H
#define VERBS_API_TEST_H

/*
 * verbs_api's pieces shared by its files: the device's objects and the
 * registered buffer (verbs_api.c), RC QPs joined through the loopback
 * port, posting and polling, and each file's cases in the order main
 * calls them.
 */

#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

/* one count of checks for all of verbs_api's files */
#define VERBS_CHECK_SHARED
#include "verbs_check.h"

#define BUF 65536

extern struct ibv_context *ctx;
extern struct ibv_pd *pd;
extern struct ibv_mr *mr;	/* all of buf */
extern uint8_t *buf;

static inline int
to_init(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			IBV_ACCESS_LOCAL_WRITE,
	};

	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
		IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

static inline int
to_rts(struct ibv_qp *qp, uint32_t dqpn)
{
	struct ibv_qp_attr a;
	int rc;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dqpn;
	a.rq_psn = 100;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.sgid_index = 1;
	a.ah_attr.grh.hop_limit = 64;
	if (ibv_query_gid(ctx, 1, 1, &a.ah_attr.grh.dgid))
		return -1;
	rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
		IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
		IBV_QP_MIN_RNR_TIMER);
	if (rc)
		return rc;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 100;
	a.timeout = 10;
	a.retry_cnt = 3;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
		IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
		IBV_QP_MAX_QP_RD_ATOMIC);
}

static inline struct ibv_qp *
make_qp(struct ibv_cq *scq, struct ibv_cq *rcq, struct ibv_srq *srq)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = scq, .recv_cq = rcq, .srq = srq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 2,
			.max_recv_sge = 2, .max_inline_data = 64 },
	};

	return ibv_create_qp(pd, &ia);
}

/* Take whatever completions are left (after a moment). */
static inline void
drain(struct ibv_cq *cq)
{
	struct ibv_wc wc[16];

	usleep(100000);
	while (ibv_poll_cq(cq, 16, wc) > 0)
		;
}

/* Poll cq until n completions or timeout_ms; returns how many. */
static inline int
poll_n(struct ibv_cq *cq, struct ibv_wc *wc, int n, int timeout_ms)
{
	struct timespec t0, t;
	int got = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (got < n) {
		int r = ibv_poll_cq(cq, n - got, wc + got);

		if (r < 0)
			return got;
		got += r;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 +
				(t.tv_nsec - t0.tv_nsec) / 1000000 > timeout_ms)
			break;
	}
	return got;
}

static inline int
post_recv(struct ibv_qp *qp, uint64_t id, size_t off, uint32_t len)
{
	struct ibv_sge s = { .addr = (uintptr_t)(buf + off), .length = len,
		.lkey = mr->lkey };
	struct ibv_recv_wr w = { .wr_id = id, .sg_list = &s, .num_sge = 1 }, *bad;

	return ibv_post_recv(qp, &w, &bad);
}

static inline int
post_send(struct ibv_qp *qp, uint64_t id, size_t off, uint32_t len,
		unsigned int flags)
{
	struct ibv_sge s = { .addr = (uintptr_t)(buf + off), .length = len,
		.lkey = mr->lkey };
	struct ibv_send_wr w = { .wr_id = id, .sg_list = &s, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED | flags }, *bad;

	return ibv_post_send(qp, &w, &bad);
}

/* One signaled RDMA WRITE of 8 bytes from buf on qp; its status. */
static inline enum ibv_wc_status
write8(struct ibv_qp *qp, struct ibv_cq *cq, void *to, uint32_t rkey)
{
	struct ibv_sge s = { .addr = (uintptr_t)buf, .length = 8,
		.lkey = mr->lkey };
	struct ibv_send_wr w = { .wr_id = 7, .sg_list = &s, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED },
		*bad;
	struct ibv_wc wc;

	w.wr.rdma.remote_addr = (uintptr_t)to;
	w.wr.rdma.rkey = rkey;
	if (ibv_post_send(qp, &w, &bad) != 0 || poll_n(cq, &wc, 1, 10000) != 1)
		return IBV_WC_GENERAL_ERR;
	return wc.status;
}

/* verbs_api_post.c: posting rules, ibv_wr_*, ATOMIC WRITE */
void test_post_rules(struct ibv_qp *a, struct ibv_qp *b, struct ibv_cq *cqa);
void test_wr_api(struct ibv_cq *cqa, struct ibv_cq *cqb,
	struct ibv_qp *peer_b);
void test_atomic_write(struct ibv_cq *cqa);

/* verbs_api_cq.c: completion channels, ibv_cq_ex, async events, CQ
 * resizing, a destroyed QP's completions */
void test_channel(struct ibv_qp *a, struct ibv_qp *b, struct ibv_cq *cqb,
	struct ibv_comp_channel *ch);
void test_resize_cq(void);
void test_cq_ex(struct ibv_qp *a);
void test_srq_limit(struct ibv_cq *cq);
void test_destroy_purges(void);

/* verbs_api_mr.c: memory registration and access, memory windows */
void test_sysv_mr(struct ibv_qp *a, struct ibv_cq *cq);
void test_rereg_mr(void);
void test_errors(struct ibv_qp *a, struct ibv_qp *b, struct ibv_cq *cqa);
void test_reg_mr_memory(void);
void test_mw(struct ibv_cq *cqa, struct ibv_cq *cqb);

/* verbs_api_odp.c: on-demand paging */
void test_odp(void);

/* verbs_api_raw.c: RAW_PACKET QPs and flows */
void test_raw(void);

#endif /* VERBS_API_TEST_H */
