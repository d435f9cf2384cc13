/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * chaos_app SOCK_A SOCK_B ROUNDS SEED: one application of chaos.sh's
 * soak, on the channel itself: a session on each daemon, their RC QPs
 * connected, then ROUNDS rounds of WRITE, SEND and READ of 64 KB each
 * way with every byte checked (cs_traffic), and between rounds objects
 * made and let go (MRs on memfds of their own, CQs, a UD QP), so that a
 * SIGKILL at any moment finds some half made. Prints the bytes it
 * verified; exits 0 only if all of them held.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "chan_session.h"

#define CHECK CS_CHECK

/* Objects made and let go between rounds. */
static void
churn(struct cs_side *x, unsigned int r)
{
	struct droce_chan_dereg_mr_req d = { .nrelease = 1 };
	struct droce_chan_handle h;
	struct cs_buf b;
	struct cs_cq cq;
	struct cs_qp qp;

	CHECK(cs_buf(&x->s, x->pd, 4096u << (r % 5), &b) == 0, "an MR");
	CHECK(cs_cq(&x->s, 16 + r % 64, &cq) == 0, "a CQ");
	if (r % 3 == 0) {
		CHECK(cs_qp(&x->s, x->pd, IBV_QPT_UD, &cq, &qp) == 0, "a UD QP");
		h.handle = qp.handle;
		CHECK(cs_rpc(&x->s, DROCE_OP_DESTROY_QP, &h, NULL, NULL, 0, NULL,
			NULL) == 0, "its end");
	}
	h.handle = cq.handle;
	CHECK(cs_rpc(&x->s, DROCE_OP_DESTROY_CQ, &h, NULL, NULL, 0, NULL,
		NULL) == 0, "the CQ's end");
	d.handle = b.mr;
	d.release[0] = x->s.next_seg - 1;
	CHECK(cs_rpc(&x->s, DROCE_OP_DEREG_MR, &d, NULL, NULL, 0, NULL,
		NULL) == 0, "the MR's end");
	munmap(b.addr, b.len);
}

int
main(int argc, char **argv)
{
	struct cs_side x, y;
	unsigned int rounds, seed, r;

	if (argc != 5) {
		fprintf(stderr, "usage: %s SOCK_A SOCK_B ROUNDS SEED\n", argv[0]);
		return 2;
	}
	rounds = (unsigned int)strtoul(argv[3], NULL, 0);
	seed = (unsigned int)strtoul(argv[4], NULL, 0);
	cs_side_open(&x, argv[1]);
	cs_side_open(&y, argv[2]);
	cs_pair(&x, &y);
	for (r = 0; r < rounds; r++) {
		cs_traffic(&x, &y, seed + r);
		churn(r & 1 ? &x : &y, seed + r);
	}
	/* three 64 KB transfers a round, each checked */
	printf("verified %llu bytes in %u rounds\n",
		(unsigned long long)rounds * 3 * 65536, rounds);
	cs_close(&x.s);
	cs_close(&y.s);
	return 0;
}
