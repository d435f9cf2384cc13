/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * One case per error path of the transport: the exact completion status
 * and the QP state after it (and the peer's where it matters).
 *
 * Here the link and the order of the cases; the cases, by kind of error:
 *  - test_tp_errors_wc.c: error completions and the QP states after them;
 *  - test_tp_errors_queues.c: a CQ overrun, SRQs;
 *  - test_tp_errors_replay.c: duplicates and losses the responder answers
 *    again;
 *  - test_tp_errors_uc_ud.c: what UC and UD drop silently.
 */

#include "tp_errors.h"

struct fakelink L;
int async_events[32];
static void *async_obj;

/* check.h's counts, for every file */
int check_failures;
int check_count;

static void
on_async(void *arg, const struct ibv_async_event *ev)
{
	(void)arg;
	if (ev->event_type < 32)
		async_events[ev->event_type]++;
	async_obj = ev->element.qp;
}

void
setup_link(void)
{
	fl_fini(&L);
	CHECK_EQ(fl_init(&L, 5, 1500), 0, "fakelink");
	droce_dev_set_async_cb(L.end[0].dev, on_async, NULL);
	droce_dev_set_async_cb(L.end[1].dev, on_async, NULL);
	memset(async_events, 0, sizeof(async_events));
}

/* A fresh link, and on it a pair of type t with 64 KiB each side, side
 * 1's registered with acc1, cqe entries a CQ (0: 64). */
void
pair_make(struct pair *p, enum ibv_qp_type t, const struct fl_qp_opts *o,
		unsigned int acc1, uint32_t cqe)
{
	struct pair_cfg c = {
		.type = t, .cqe = cqe, .sges = 2,
		.buf_len = 65536, .acc1 = acc1, .o = o,
	};

	setup_link();
	pair_create(&L, p, &c);
}

/* op of len bytes from the start of b[0] (an atomic adds 1). */
int
post_op(struct pair *p, enum ibv_wr_opcode op, uint32_t len, uint64_t raddr,
		uint32_t rkey, uint64_t id)
{
	return pair_post(p, op, 0, len, raddr, rkey, id);
}

int
main(void)
{
	CHECK_EQ(fl_init(&L, 5, 1500), 0, "fakelink");
	test_retry_exc();
	test_rnr(2);
	test_rnr(0);
	test_rnr(7);
	test_rnr_write_imm();
	test_rem_access(0);
	test_rem_access(1);
	test_rem_access(2);
	test_rem_access(3);
	test_inv_req_read();
	test_misaligned_atomic();
	test_loc_len();
	test_loc_prot();
	test_cq_overflow();
	test_srq_limit();
	test_srq_repost_mid_message();
	test_dup_atomic();
	test_dup_read();
	test_dup_read_replay();
	test_mr_gone(IBV_WR_RDMA_WRITE);
	test_mr_gone(IBV_WR_RDMA_READ);
	test_resp_order();
	test_uc_broken();
	test_ud_qkey();
	fl_fini(&L);
	return check_report("test_tp_errors");
}
