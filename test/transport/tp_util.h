/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

#ifndef TP_UTIL_H
#define TP_UTIL_H

/* Helpers shared by the transport tests. */

#include <inttypes.h>
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

/* A signaled WR of op with one SGE, s, and everything else zero. */
static inline void
wr_signaled(struct ibv_send_wr *wr, struct ibv_sge *s, enum ibv_wr_opcode op,
		uint64_t id)
{
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = id;
	wr->opcode = op;
	wr->sg_list = s;
	wr->num_sge = 1;
	wr->send_flags = IBV_SEND_SIGNALED;
}

/*
 * A QP pair over the fake link: side 0's QP connected to side 1's, one CQ
 * a side for both queues, and a buffer a side (or none: b[s].p NULL).
 * Side 0 posts; b[1] is the remote memory (REMOTE, RKEY).
 */
struct pair {
	struct fakelink *l;
	struct droce_cq *cq[2];
	struct droce_qp *qp[2];
	struct tbuf b[2];
};

/* What a pair is made of; a field left 0 takes the default said. */
struct pair_cfg {
	enum ibv_qp_type type;	/* 0: IBV_QPT_RC */
	uint32_t cqe;		/* each CQ's entries; 0: 64 */
	uint32_t send_wr;	/* 0: 16 */
	uint32_t recv_wr;	/* 0: send_wr */
	uint32_t sges;		/* SGEs each way; 0: 1 */
	uint32_t max_inline;
	int check_qp;		/* check that each QP was created */
	int set_sr;		/* droce_qp_set_sr(qp, sr) on both, checked */
	int sr;
	size_t buf_len;		/* b[0] and b[1]; 0: no buffers */
	unsigned int acc1;	/* b[1]'s access (b[0] has ACC_ALL) */
	const struct fl_qp_opts *o;	/* NULL: fl_qp_opts_default's */
};

/* Side s of p: its CQ, its QP (not connected) and its buffer. */
static inline void
pair_side(struct fakelink *l, struct pair *p, int s,
		const struct pair_cfg *c)
{
	struct ibv_qp_init_attr ia;

	p->l = l;
	p->cq[s] = droce_cq_create(l->end[s].dev, 0, c->cqe ? c->cqe : 64);
	qp_attr(&ia, c->type ? c->type : IBV_QPT_RC,
		c->send_wr ? c->send_wr : 16, c->sges ? c->sges : 1);
	if (c->recv_wr)
		ia.cap.max_recv_wr = c->recv_wr;
	ia.cap.max_inline_data = c->max_inline;
	p->qp[s] = droce_qp_create(l->end[s].pd, &ia, p->cq[s], p->cq[s],
		NULL);
	if (c->check_qp)
		CHECK(p->qp[s] != NULL, "qp create");
	if (c->set_sr)
		CHECK_EQ(droce_qp_set_sr(p->qp[s], c->sr), 0,
			"selective repeat");
	if (c->buf_len)
		tbuf_init(&p->b[s], l->end[s].pd, c->buf_len,
			s ? c->acc1 : ACC_ALL);
	else
		memset(&p->b[s], 0, sizeof(p->b[s]));
}

/* Side 0's QP and side 1's through INIT, RTR and RTS. */
static inline void
pair_connect(struct pair *p, const struct pair_cfg *c)
{
	struct fl_qp_opts def;
	const struct fl_qp_opts *o = c->o;

	if (o == NULL) {
		fl_qp_opts_default(&def);
		o = &def;
	}
	CHECK_EQ(fl_connect(p->l, p->qp[0], p->qp[1], o), 0, "connect");
}

/* Both sides of p on l, connected. */
static inline void
pair_create(struct fakelink *l, struct pair *p, const struct pair_cfg *c)
{
	pair_side(l, p, 0, c);
	pair_side(l, p, 1, c);
	pair_connect(p, c);
}

/* The QPs, the CQs and the buffers (those that are tbufs) of p. */
static inline void
pair_destroy(struct pair *p)
{
	int s;

	for (s = 0; s < 2; s++) {
		droce_qp_destroy(p->qp[s]);
		droce_cq_destroy(p->cq[s]);
		if (p->b[s].p != NULL)
			tbuf_fini(&p->b[s]);
	}
}

/* Address off in side 1's buffer, and its key. */
#define REMOTE(pp, off) ((uint64_t)(uintptr_t)(pp)->b[1].p + (off))
#define RKEY(pp) droce_mr_rkey((pp)->b[1].mr)

/*
 * A signaled WR of op for side 0 with one SGE, s: len bytes at loff in
 * b[0]; to raddr under rkey (an atomic compares or adds 1).
 */
static inline void
pair_wr(struct pair *p, struct ibv_send_wr *wr, struct ibv_sge *s,
		enum ibv_wr_opcode op, uint32_t loff, uint32_t len,
		uint64_t raddr, uint32_t rkey, uint64_t id)
{
	*s = sge_of(&p->b[0], loff, len);
	wr_signaled(wr, s, op, id);
	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD ||
			op == IBV_WR_ATOMIC_CMP_AND_SWP) {
		wr->wr.atomic.remote_addr = raddr;
		wr->wr.atomic.rkey = rkey;
		wr->wr.atomic.compare_add = 1;
	} else {
		wr->wr.rdma.remote_addr = raddr;
		wr->wr.rdma.rkey = rkey;
	}
}

/* pair_wr's WR posted on side 0: droce_qp_post_send's answer. */
static inline int
pair_post(struct pair *p, enum ibv_wr_opcode op, uint32_t loff, uint32_t len,
		uint64_t raddr, uint32_t rkey, uint64_t id)
{
	struct ibv_send_wr wr, *bad;
	struct ibv_sge s;

	pair_wr(p, &wr, &s, op, loff, len, raddr, rkey, id);
	return droce_qp_post_send(p->qp[0], &wr, &bad);
}

/* A receive of len bytes at off in side's buffer, posted there. */
static inline void
pair_post_recv(struct pair *p, int side, uint32_t off, uint32_t len,
		uint64_t id)
{
	struct ibv_sge s = sge_of(&p->b[side], off, len);
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &s, .num_sge = 1 };
	struct ibv_recv_wr *bad;

	CHECK_EQ(droce_qp_post_recv(p->qp[side], &wr, &bad), 0, "post recv");
}

/* One completion of side's CQ within max_ns: 0, or -1 on timeout. */
static inline int
pair_wait(struct pair *p, int side, struct ibv_wc *wc, uint64_t max_ns)
{
	return wait_wc(p->l, p->cq[side], wc, max_ns);
}

/* The status of side's next completion (its wr_id in *id if id), or -1
 * if none came within max_ns. */
static inline enum ibv_wc_status
pair_status(struct pair *p, int side, uint64_t max_ns, uint64_t *id)
{
	struct ibv_wc wc;

	if (pair_wait(p, side, &wc, max_ns) != 0)
		return (enum ibv_wc_status)-1;
	if (id)
		*id = wc.wr_id;
	return wc.status;
}

/* n completions on side 0, in order from id first, each a success. */
static inline void
pair_expect_done(struct pair *p, uint64_t first, uint32_t n,
		const char *what)
{
	struct ibv_wc wc;
	uint32_t i;

	for (i = 0; i < n; i++) {
		int rc = pair_wait(p, 0, &wc, 2000000000ull);

		CHECK(rc == 0 && wc.status == IBV_WC_SUCCESS &&
			wc.wr_id == first + i, "%s: completion %u (rc %d "
			"status %d id %" PRIu64 ")", what, i, rc, wc.status,
			wc.wr_id);
	}
}

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
