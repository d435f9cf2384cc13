/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * The verbs API's documented behaviour on droce's libibverbs.so.1, where no
 * Debian binary exercises it: built against the system's libibverbs (as any
 * verbs program) and run through droce-run on a loopback port (net_ring:
 * what a port sends, it receives), QPs of one process talking to each other.
 *
 * Here the device's objects, a QP in RESET refusing everything, and the
 * order of the cases, one file per group of verbs:
 *  - verbs_api_post.c: posting rules, ibv_wr_*, IBTA 1.5 ATOMIC WRITE;
 *  - verbs_api_cq.c: completion channels, ibv_cq_ex, async events,
 *    ibv_resize_cq, a destroyed QP's completions;
 *  - verbs_api_mr.c: memory registration, access rules, memory windows;
 *  - verbs_api_odp.c: on-demand paging;
 *  - verbs_api_raw.c: RAW_PACKET QPs and flows.
 */

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "verbs_api.h"

struct ibv_context *ctx;
struct ibv_pd *pd;
struct ibv_mr *mr;
uint8_t *buf;

/* verbs_check.h's counts, for every file */
int passed, failed;

int
main(void)
{
	struct ibv_device **list;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cqa, *cqb;
	struct ibv_qp *a, *b, *reset_qp;
	struct ibv_send_wr w, *bad = NULL;
	int n;

	setvbuf(stdout, NULL, _IOLBF, 0);
	list = ibv_get_device_list(&n);
	if (list == NULL || n < 1) {
		printf("FAIL: no device\n");
		return 1;
	}
	ctx = ibv_open_device(list[0]);
	pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	if (pd == NULL) {
		printf("FAIL: open %s / alloc_pd: %s\n", ibv_get_device_name(list[0]),
			strerror(errno));
		return 1;
	}
	buf = aligned_alloc(4096, BUF);
	memset(buf, 0, BUF);
	mr = ibv_reg_mr(pd, buf, BUF, IBV_ACCESS_LOCAL_WRITE |
		IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	ch = ibv_create_comp_channel(ctx);
	cqa = ibv_create_cq(ctx, 256, (void *)0xca, NULL, 0);
	cqb = ibv_create_cq(ctx, 256, (void *)0xcb, ch, 0);
	a = make_qp(cqa, cqa, NULL);
	b = make_qp(cqb, cqb, NULL);
	reset_qp = make_qp(cqa, cqa, NULL);
	if (!mr || !ch || !cqa || !cqb || !a || !b || !reset_qp) {
		printf("FAIL: resources: %s\n", strerror(errno));
		return 1;
	}
	memset(&w, 0, sizeof(w));
	w.opcode = IBV_WR_SEND;
	CHECK(ibv_post_send(reset_qp, &w, &bad) == EINVAL && bad == &w,
		"ibv_post_send on a RESET QP: EINVAL, bad_wr = the first WR");
	CHECK(ibv_destroy_comp_channel(ch) == EBUSY, "a channel in use cannot be destroyed");
	if (to_init(a) || to_init(b) || to_rts(a, b->qp_num) || to_rts(b, a->qp_num)) {
		printf("FAIL: connect: %s\n", strerror(errno));
		return 1;
	}
	test_post_rules(a, b, cqa);
	test_channel(a, b, cqb, ch);
	drain(cqa);
	test_sysv_mr(a, cqa);
	test_resize_cq();
	test_rereg_mr();
	test_odp();
	drain(cqa);
	test_raw();
	test_errors(a, b, cqa);
	drain(cqa);
	test_reg_mr_memory();
	/* a is in ERR now: reset and reuse the others */
	ibv_destroy_qp(a);
	a = make_qp(cqa, cqa, NULL);
	test_wr_api(cqa, cqb, a);
	drain(cqa);
	test_atomic_write(cqa);
	ibv_destroy_qp(a);
	a = make_qp(cqa, cqa, NULL);
	test_cq_ex(a);
	drain(cqa);
	test_srq_limit(cqa);
	drain(cqa);
	drain(cqb);
	test_destroy_purges();
	test_mw(cqa, cqb);

	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	ibv_destroy_qp(reset_qp);
	CHECK(ibv_destroy_cq(cqa) == 0 && ibv_destroy_cq(cqb) == 0, "destroy CQs");
	CHECK(ibv_destroy_comp_channel(ch) == 0, "destroy the channel");
	CHECK(ibv_dereg_mr(mr) == 0 && ibv_dealloc_pd(pd) == 0, "dereg MR, dealloc PD");
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
