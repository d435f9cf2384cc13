/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */


#ifndef TP_ERRORS_H
#define TP_ERRORS_H

/*
 * test_tp_errors's pieces shared by its files: the link, the async events
 * counted on it, a fresh pair and posting on it (test_tp_errors.c), and
 * the cases, one file per kind of error.
 */

/* one count of checks for all of test_tp_errors's files */
#define CHECK_SHARED
#include "tp_util.h"

extern struct fakelink L;
/* async events of each type since the link was made */
extern int async_events[32];

/* A fresh link (async events counted from none). */
void setup_link(void);
/* A fresh link, and on it a pair of type t with 64 KiB each side, side
 * 1's registered with acc1, cqe entries a CQ (0: 64). */
void pair_make(struct pair *p, enum ibv_qp_type t,
	const struct fl_qp_opts *o, unsigned int acc1, uint32_t cqe);
/* op of len bytes from the start of b[0] (an atomic adds 1). */
int post_op(struct pair *p, enum ibv_wr_opcode op, uint32_t len,
	uint64_t raddr, uint32_t rkey, uint64_t id);

/* test_tp_errors_wc.c: error completions, and the QP states after them */
void test_retry_exc(void);
void test_rnr(int rnr_retry);
void test_rnr_write_imm(void);
void test_rem_access(int how);
void test_inv_req_read(void);
void test_misaligned_atomic(void);
void test_loc_len(void);
void test_loc_prot(void);
void test_mr_gone(enum ibv_wr_opcode op);

/* test_tp_errors_queues.c: a CQ overrun, SRQs */
void test_cq_overflow(void);
void test_srq_limit(void);
void test_srq_repost_mid_message(void);

/* test_tp_errors_replay.c: duplicate and lost requests and responses,
 * answered again by the responder */
void test_dup_atomic(void);
void test_dup_read(void);
void test_dup_read_replay(void);
void test_resp_order(void);

/* test_tp_errors_uc_ud.c: UC and UD drop what is wrong silently */
void test_uc_broken(void);
void test_ud_qkey(void);

#endif /* TP_ERRORS_H */
