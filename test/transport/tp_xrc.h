/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */


#ifndef TP_XRC_H
#define TP_XRC_H

/*
 * test_tp_xrc's pieces shared by its files: the link, the pair of XRC
 * halves and their domains, what the wire carried (test_tp_xrc.c), and
 * the cases, one file per kind.
 */

/* one count of checks for all of test_tp_xrc's files */
#define CHECK_SHARED
#include "tp_util.h"

#define CHECK_EQF(a, b, ...) do { \
	long long _x = (long long)(a), _y = (long long)(b); \
	CHECK(_x == _y, __VA_ARGS__); \
	if (_x != _y) \
		fprintf(stderr, "  got %lld, want %lld\n", _x, _y); \
} while (0)

extern struct fakelink L;
extern const char *cap_path;	/* argv[1]: test_rdma's frames as a pcap */

/* side 0: XRC_SEND qp; side 1: XRC_RECV tgt, SRQs a (domain x) and b
 * (domain y), all completing on rcq */
struct xpair {
	struct droce_cq *scq, *rcq;
	struct droce_qp *ini, *tgt;
	struct droce_xrcd *x, *y;
	struct droce_srq *a, *b;
	struct droce_pd *pd_other;
	struct tbuf sb, rb, ob;	/* side 0's, the SRQs' PD's, another PD's */
};

/* What the wire carried (watch, a link filter, counts it). */
struct xrc_wire {
	int req, resp, bad, naks;
	uint32_t srqn;		/* what every request must name */
	uint8_t last_nak;
};
extern struct xrc_wire wire;

/* droce_qp_modify, the AV towards the other side */
int modify(struct droce_qp *qp, struct ibv_qp_attr *a, int mask);
void srq_post(struct xpair *p, struct droce_srq *s, uint32_t off,
	uint32_t len, uint64_t id);
/* A fresh link and on it a pair, in RESET; xpair_connect brings both
 * halves to RTS */
void xpair_make(struct xpair *p);
void xpair_connect(struct xpair *p);
void xpair_free(struct xpair *p);
int watch(struct fakelink *l, int dir, const uint8_t *f, uint32_t len);
void wr_init(struct ibv_send_wr *wr, struct ibv_sge *s, enum ibv_wr_opcode op,
	uint64_t id, uint32_t srqn);
int wait_cq(struct droce_cq *cq, struct ibv_wc *wc);

/* test_tp_xrc_rules.c: each half's attribute rules, posting, lifetimes */
void test_states(void);
void test_posting(void);
void test_lifetimes(void);

/* test_tp_xrc_data.c: SENDs, RDMA and atomics, and all over a lossy
 * link */
void test_send(void);
void test_rdma(void);
void test_lossy(void);

/* test_tp_xrc_refused.c: what the target refuses, and frames of the
 * wrong transport or direction */
void test_refusals(void);
void test_wrong_frames(void);

#endif /* TP_XRC_H */
