/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * verbs_spin_poll droced:TELEMETRY-SOCKET: an application attached to a
 * droced in idle mode that spins on an empty CQ says so (the region's
 * spin_ns), and the daemon keeps from its naps for it: droced's
 * spin_skips for the session grows while the application spins; SENDs
 * between two QPs of the process, each receive found by polling alone
 * (no channel), all arrive; and once the application stops polling the
 * daemon naps again (spin_skips stands still). Functional: nothing here
 * is timed.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "verbs_loop.h"
#include "verbs_tele.h"

#define ROUNDS	200
#define BUF	4096

static double
now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec / 1e9;
}

int
main(int argc, char **argv)
{
	const char *tele = argc > 1 ? argv[1] : "";
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_cq *cqa, *cqb;
	struct ibv_qp *qa, *qb;
	struct ibv_mr *mr;
	struct ibv_wc wc;
	int64_t s0, s1, s2;
	double end;
	char *buf;
	int r, good = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (strncmp(tele, "droced:", 7) != 0) {
		printf("usage: verbs_spin_poll droced:TELEMETRY-SOCKET\n");
		return 2;
	}
	ctx = loop_open(&list, &buf, &mr, BUF);
	cqa = ctx ? ibv_create_cq(ctx, 64, NULL, NULL, 0) : NULL;
	cqb = ctx ? ibv_create_cq(ctx, 64, NULL, NULL, 0) : NULL;
	if (!mr || loop_pair(cqa, cqb, &qa, &qb) != 0) {
		printf("FAIL: set-up: %s\n", strerror(errno));
		return 1;
	}

	/* a spin on an empty CQ, until the daemon has skipped a nap for
	 * it (it naps only after 200 us without work) or 20 s passed */
	s0 = counter(tele, "spin_skips");
	CHECK(s0 >= 0, "droced's telemetry answers (%s)", tele);
	s1 = s0;
	for (end = now_s() + 20; s1 <= s0 && now_s() < end; ) {
		for (r = 0; r < 100000; r++)
			if (ibv_poll_cq(cqb, 1, &wc) != 0)
				break;
		s1 = counter(tele, "spin_skips");
	}
	CHECK(s1 > s0, "droced kept from its naps while the application "
		"spun on an empty CQ (%" PRId64 " times)", s1 - s0);

	/* receives found by polling alone */
	for (r = 0; r < ROUNDS; r++) {
		struct ibv_sge rs = { .addr = (uintptr_t)buf + 1024,
			.length = 64, .lkey = mr->lkey };
		struct ibv_sge ss = { .addr = (uintptr_t)buf, .length = 64,
			.lkey = mr->lkey };
		struct ibv_recv_wr rw = { .wr_id = (uint64_t)r, .sg_list = &rs,
			.num_sge = 1 }, *rbad;
		struct ibv_send_wr sw = { .wr_id = (uint64_t)r, .sg_list = &ss,
			.num_sge = 1, .opcode = IBV_WR_SEND,
			.send_flags = IBV_SEND_SIGNALED }, *sbad;
		int got = 0, v;

		memcpy(buf, &r, sizeof(r));
		if (ibv_post_recv(qb, &rw, &rbad) != 0 ||
				ibv_post_send(qa, &sw, &sbad) != 0)
			break;
		for (end = now_s() + 10; got == 0 && now_s() < end; )
			got = ibv_poll_cq(cqb, 1, &wc);
		memcpy(&v, buf + 1024, sizeof(v));
		if (got != 1 || wc.status != IBV_WC_SUCCESS ||
				wc.wr_id != (uint64_t)r || v != r)
			break;
		for (got = 0, end = now_s() + 10; got == 0 && now_s() < end; )
			got = ibv_poll_cq(cqa, 1, &wc);
		if (got != 1 || wc.status != IBV_WC_SUCCESS)
			break;
		good++;
	}
	CHECK(good == ROUNDS, "%d of %d SENDs received, each found by "
		"polling", good, ROUNDS);

	/* no polling: past the 2 ms the daemon naps again */
	usleep(100000);
	s1 = counter(tele, "spin_skips");
	usleep(300000);
	s2 = counter(tele, "spin_skips");
	CHECK(s1 >= 0 && s2 == s1, "and napped again once it stopped "
		"(%" PRId64 " skips in 300 ms)", s2 - s1);

	ibv_destroy_qp(qa);
	ibv_destroy_qp(qb);
	ibv_destroy_cq(cqa);
	ibv_destroy_cq(cqb);
	ibv_dereg_mr(mr);
	ibv_dealloc_pd(loop_pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	printf("verbs_spin_poll: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
