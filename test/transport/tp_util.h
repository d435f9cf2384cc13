/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

#ifndef TP_UTIL_H
#define TP_UTIL_H

/* Helpers shared by the transport tests. */

#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fakelink.h"

struct tbuf {
	uint8_t *p;
	size_t len;
	struct droce_mr *mr;
};

static inline void
tbuf_init(struct tbuf *b, struct droce_pd *pd, size_t len, unsigned int acc)
{
	b->len = len;
	b->p = aligned_alloc(64, len < 64 ? 64 : (len + 63) / 64 * 64);
	memset(b->p, 0, len);
	b->mr = droce_mr_reg(pd, b->p, len, (uint64_t)(uintptr_t)b->p, acc);
}

static inline void
tbuf_fini(struct tbuf *b)
{
	droce_mr_dereg(b->mr);
	free(b->p);
}

static inline void
pattern(uint8_t *p, size_t len, uint32_t seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)((i * 2654435761u + seed) >> 13);
}

static inline int
pattern_ok(const uint8_t *p, size_t len, uint32_t seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != (uint8_t)((i * 2654435761u + seed) >> 13))
			return 0;
	return 1;
}

/* Poll one completion from cq, stepping the link; 0 or -1 on timeout. */
static inline int
wait_wc(struct fakelink *l, struct droce_cq *cq, struct ibv_wc *wc,
		uint64_t max_ns)
{
	uint64_t end = l->now + max_ns;

	for (;;) {
		int n = droce_cq_poll(cq, wc, 1);

		if (n == 1)
			return 0;
		if (l->now >= end)
			return -1;
		fl_step(l, 1000);
	}
}

static inline struct ibv_sge
sge_of(struct tbuf *b, size_t off, uint32_t len)
{
	struct ibv_sge s = {
		.addr = (uint64_t)(uintptr_t)(b->p + off),
		.length = len,
		.lkey = droce_mr_lkey(b->mr),
	};

	return s;
}

/* Init attributes of a QP of type t: wrs WRs and sges SGEs each way. */
static inline void
qp_attr(struct ibv_qp_init_attr *ia, enum ibv_qp_type t, uint32_t wrs,
		uint32_t sges)
{
	memset(ia, 0, sizeof(*ia));
	ia->qp_type = t;
	ia->cap.max_send_wr = ia->cap.max_recv_wr = wrs;
	ia->cap.max_send_sge = ia->cap.max_recv_sge = sges;
}

#define ACC_ALL (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
	IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

/*
 * wr, a WRITE, then wr->next, which qp must refuse at posting as
 * ibv_post_send(3) says: EINVAL, *bad_wr at it, the WRITE done and nothing
 * else, the QP still in RTS.
 */
static inline void
expect_refused_after(struct fakelink *l, struct droce_qp *qp,
		struct droce_cq *cq, struct ibv_send_wr *wr, const char *what)
{
	struct ibv_send_wr *bad = NULL;
	struct ibv_wc wc;
	int rc;

	rc = droce_qp_post_send(qp, wr, &bad);
	CHECK(rc == EINVAL, "%s: EINVAL, not %d", what, rc);
	CHECK(bad == wr->next, "%s: bad_wr at the refused WR", what);
	CHECK(wait_wc(l, cq, &wc, 1000000000) == 0 && wc.wr_id == wr->wr_id,
		"%s: the WRITE before it done, and only it", what);
	fl_run_idle(l, 10000000);
	CHECK(droce_cq_poll(cq, &wc, 1) == 0, "%s: nothing else", what);
	CHECK(droce_qp_state(qp) == IBV_QPS_RTS, "%s: QP fine", what);
}

/*
 * A request from side 0 to qp (side 1's) at the PSN it expects, opcode
 * set, every header field the caller does not set zero: for crafting
 * what no requester sends.
 */
static inline void
fl_request_pkt(struct fakelink *l, struct droce_qp *qp, uint8_t opcode,
		struct droce_pkt *pkt)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	droce_qp_query(qp, &a, 0, &ia);
	memset(pkt, 0, sizeof(*pkt));
	memcpy(pkt->dst_mac, l->end[1].mac, 6);
	memcpy(pkt->src_mac, l->end[0].mac, 6);
	pkt->ip_ver = 4;
	pkt->ttl = 64;
	droce_gid_from_ipv4(pkt->sgid, l->end[0].ip);
	droce_gid_from_ipv4(pkt->dgid, l->end[1].ip);
	pkt->udp_sport = 0xc000;
	pkt->opcode = opcode;
	pkt->pkey = 0xffff;
	pkt->dqpn = droce_qp_num(qp);
	pkt->psn = a.rq_psn;
	pkt->ackreq = 1;
}

#endif
