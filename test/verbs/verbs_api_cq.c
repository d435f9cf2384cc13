/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * verbs_api's cases on completions and events (verbs_api.c runs them):
 *  - completion channel: O_NONBLOCK gives EAGAIN, poll() wakes on an event,
 *    solicited-only arming ignores unsolicited completions, a blocking
 *    ibv_get_cq_event returns because droce progresses while we sleep;
 *  - ibv_resize_cq;
 *  - ibv_cq_ex: start/next/end_poll and the read_* accessors; ENOENT;
 *  - async events: SRQ limit through ibv_get_async_event (async_fd polled);
 *  - a destroyed QP's unpolled completions go with it.
 */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <infiniband/verbs.h>

#include "verbs_api.h"

static struct timespec ms_t0;

static void
ms_start(void)
{
	clock_gettime(CLOCK_MONOTONIC, &ms_t0);
}

/* milliseconds since ms_start */
static long
ms_since(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - ms_t0.tv_sec) * 1000 +
		(t.tv_nsec - ms_t0.tv_nsec) / 1000000;
}

void
test_channel(struct ibv_qp *a, struct ibv_qp *b, struct ibv_cq *cqb,
		struct ibv_comp_channel *ch)
{
	struct ibv_cq *ev_cq = NULL;
	void *ev_ctx = NULL;
	struct ibv_wc wc[4];
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	int fl = fcntl(ch->fd, F_GETFL);
	int rc;

	fcntl(ch->fd, F_SETFL, fl | O_NONBLOCK);
	errno = 0;
	rc = ibv_get_cq_event(ch, &ev_cq, &ev_ctx);
	CHECK(rc == -1 && errno == EAGAIN,
		"non-blocking channel without an event: -1, EAGAIN");

	/* solicited only: an unsolicited SEND completes but wakes nobody */
	CHECK(ibv_req_notify_cq(cqb, 1) == 0, "ibv_req_notify_cq(solicited only)");
	post_recv(b, 1, 8192, 64);
	post_recv(b, 2, 8192 + 64, 64);
	post_send(a, 100, 0, 32, 0);
	CHECK(poll(&pfd, 1, 500) == 0, "unsolicited completion: no event on the channel fd");
	CHECK(poll_n(cqb, wc, 1, 2000) == 1 && wc[0].wr_id == 1,
		"the unsolicited message arrived");
	post_send(a, 101, 0, 32, IBV_SEND_SOLICITED);
	CHECK(poll(&pfd, 1, 3000) == 1 && (pfd.revents & POLLIN),
		"solicited completion: poll() on the channel fd wakes");
	rc = ibv_get_cq_event(ch, &ev_cq, &ev_ctx);
	CHECK(rc == 0 && ev_cq == cqb && ev_ctx == (void *)0xcb,
		"ibv_get_cq_event names the CQ and its context");
	ibv_ack_cq_events(ev_cq, 1);
	CHECK(poll_n(cqb, wc, 1, 2000) == 1 && wc[0].wr_id == 2 &&
		(wc[0].wc_flags & IBV_WC_WITH_IMM) == 0,
		"the solicited message is there");

	/* blocking: we sleep in read(); droce's thread makes the progress */
	fcntl(ch->fd, F_SETFL, fl);
	ibv_req_notify_cq(cqb, 0);
	post_recv(b, 3, 8192, 64);
	post_send(a, 102, 0, 32, 0);
	rc = ibv_get_cq_event(ch, &ev_cq, &ev_ctx);
	CHECK(rc == 0 && ev_cq == cqb, "blocking ibv_get_cq_event returns (progress while asleep)");
	ibv_ack_cq_events(ev_cq, 1);
	CHECK(poll_n(cqb, wc, 1, 2000) == 1 && wc[0].wr_id == 3, "and the completion is there");
}

/*
 * ibv_resize_cq: the completions a CQ holds stay, in order; the new size
 * takes more than the old one could; below what it holds, or 0: EINVAL.
 */
void
test_resize_cq(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	struct ibv_cq *cqy = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	struct ibv_qp *x, *y;
	struct ibv_sge s = { .addr = (uintptr_t)buf, .length = 8,
		.lkey = mr->lkey };
	struct ibv_send_wr w, *bad;
	struct ibv_wc wc[64];
	int i, n, got, order = 1;

	x = cq ? make_qp(cq, cq, NULL) : NULL;
	y = cqy ? make_qp(cqy, cqy, NULL) : NULL;
	if (!x || !y || to_init(x) || to_init(y) || to_rts(x, y->qp_num) ||
			to_rts(y, x->qp_num)) {
		CHECK(0, "resize: set-up: %s", strerror(errno));
		return;
	}
	memset(&w, 0, sizeof(w));
	w.sg_list = &s;
	w.num_sge = 1;
	w.opcode = IBV_WR_RDMA_WRITE;
	w.send_flags = IBV_SEND_SIGNALED;
	w.wr.rdma.remote_addr = (uintptr_t)(buf + 4096);
	w.wr.rdma.rkey = mr->rkey;
	for (i = 0; i < 3; i++) {
		w.wr_id = (uint64_t)(i + 1);
		CHECK(ibv_post_send(x, &w, &bad) == 0, "resize: post %d", i);
	}
	usleep(300000);		/* the three complete (not polled) */
	CHECK(ibv_resize_cq(cq, 0) == EINVAL, "ibv_resize_cq to 0: EINVAL");
	CHECK(ibv_resize_cq(cq, 64) == 0 && cq->cqe >= 64,
		"ibv_resize_cq 4 -> 64 (cqe now %d)", cq->cqe);
	got = poll_n(cq, wc, 3, 10000);
	for (i = 0; i < got; i++)
		order &= wc[i].wr_id == (uint64_t)(i + 1) &&
			wc[i].status == IBV_WC_SUCCESS;
	CHECK(got == 3 && order, "resize: the 3 held completions kept, in "
		"order (%d)", got);
	/* more outstanding than the old size held: no overrun */
	for (i = 0; i < 40; i++) {
		w.wr_id = (uint64_t)(100 + i);
		if (ibv_post_send(x, &w, &bad) != 0)
			break;
	}
	usleep(300000);
	got = poll_n(cq, wc, 40, 10000);
	CHECK(i == 40 && got == 40 && wc[39].wr_id == 139 &&
		wc[39].status == IBV_WC_SUCCESS,
		"resize: 40 completions in a CQ created for 4 (%d)", got);
	for (i = 0; i < 2; i++) {
		w.wr_id = (uint64_t)(200 + i);
		ibv_post_send(x, &w, &bad);
	}
	usleep(300000);
	CHECK(ibv_resize_cq(cq, 1) == EINVAL, "resize below what it holds: "
		"EINVAL");
	n = ibv_resize_cq(cq, 8);
	got = poll_n(cq, wc, 2, 10000);
	CHECK(n == 0 && cq->cqe >= 8 && cq->cqe < 64 && got == 2 &&
		wc[0].wr_id == 200 && wc[1].wr_id == 201,
		"resize 64 -> 8 with 2 held: kept (cqe %d, %d)", cq->cqe, got);
	ibv_destroy_qp(x);
	ibv_destroy_qp(y);
	CHECK(ibv_destroy_cq(cq) == 0 && ibv_destroy_cq(cqy) == 0,
		"resize: destroy the CQs");
}

void
test_cq_ex(struct ibv_qp *a)
{
	struct ibv_cq_init_attr_ex ca;
	struct ibv_poll_cq_attr pa = { 0 };
	struct ibv_cq_ex *cx;
	struct ibv_qp *r;
	struct ibv_cq *scq;
	struct ibv_sge s = { .addr = (uintptr_t)buf, .length = 24, .lkey = 0 };
	struct ibv_send_wr w, *bad;
	int rc;

	memset(&ca, 0, sizeof(ca));
	ca.cqe = 64;
	ca.wc_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
	errno = 0;
	cx = ibv_create_cq_ex(ctx, &ca);
	CHECK(cx == NULL && errno == EOPNOTSUPP,
		"create_cq_ex with completion timestamps: EOPNOTSUPP");
	ca.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM |
		IBV_WC_EX_WITH_QP_NUM;
	cx = ibv_create_cq_ex(ctx, &ca);
	CHECK(cx != NULL, "create_cq_ex with byte_len, imm, qp_num");
	if (cx == NULL)
		return;
	CHECK(ibv_start_poll(cx, &pa) == ENOENT, "start_poll on an empty CQ: ENOENT");
	scq = ibv_cq_ex_to_cq(cx);
	r = make_qp(scq, scq, NULL);
	if (r == NULL || to_init(r) || to_init(a) || to_rts(r, a->qp_num) ||
			to_rts(a, r->qp_num)) {
		CHECK(0, "connect the cq_ex QP");
		return;
	}
	post_recv(r, 7, 24576, 64);
	post_recv(r, 8, 24576 + 64, 64);
	s.lkey = mr->lkey;
	memset(&w, 0, sizeof(w));
	w.opcode = IBV_WR_SEND_WITH_IMM;
	w.imm_data = htonl(0x12345678);
	w.sg_list = &s;
	w.num_sge = 1;
	rc = ibv_post_send(a, &w, &bad);
	w.imm_data = htonl(0x9abcdef0);
	rc |= ibv_post_send(a, &w, &bad);
	CHECK(rc == 0, "two SEND_WITH_IMM posted");
	/* by time, not by count: attached, a busy machine delays the
	 * daemon's data path past any count of polls */
	ms_start();
	do
		rc = ibv_start_poll(cx, &pa);
	while (rc == ENOENT && ms_since() < 10000);
	CHECK(rc == 0 && cx->wr_id == 7 && cx->status == IBV_WC_SUCCESS &&
		ibv_wc_read_opcode(cx) == IBV_WC_RECV &&
		ibv_wc_read_byte_len(cx) == 24 &&
		ntohl(ibv_wc_read_imm_data(cx)) == 0x12345678 &&
		ibv_wc_read_qp_num(cx) == r->qp_num &&
		(ibv_wc_read_wc_flags(cx) & IBV_WC_WITH_IMM),
		"start_poll: wr_id, status, opcode, byte_len, imm, qp_num, flags");
	ms_start();
	do
		rc = ibv_next_poll(cx);
	while (rc == ENOENT && ms_since() < 10000);
	CHECK(rc == 0 && cx->wr_id == 8 &&
		ntohl(ibv_wc_read_imm_data(cx)) == 0x9abcdef0, "next_poll: the second");
	ibv_end_poll(cx);
	CHECK(ibv_start_poll(cx, &pa) == ENOENT, "then ENOENT");
	ibv_destroy_qp(r);
	ibv_destroy_cq(scq);
}

void
test_srq_limit(struct ibv_cq *cq)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 16, .max_sge = 1 } };
	struct ibv_srq_attr lim = { .srq_limit = 2 };
	struct ibv_async_event ev;
	struct ibv_srq *srq = ibv_create_srq(pd, &sa);
	struct ibv_qp *c, *d;
	struct ibv_wc wc[8];
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
	int i;

	CHECK(srq != NULL, "ibv_create_srq");
	if (srq == NULL)
		return;
	for (i = 0; i < 4; i++) {
		struct ibv_sge s = { .addr = (uintptr_t)buf + 32768 + 64 * i,
			.length = 64, .lkey = mr->lkey };
		struct ibv_recv_wr w = { .wr_id = 50 + i, .sg_list = &s,
			.num_sge = 1 }, *bad;

		ibv_post_srq_recv(srq, &w, &bad);
	}
	CHECK(ibv_modify_srq(srq, &lim, IBV_SRQ_LIMIT) == 0, "arm the SRQ limit at 2");
	c = make_qp(cq, cq, srq);
	d = make_qp(cq, cq, NULL);
	if (c == NULL || d == NULL || to_init(c) || to_init(d) ||
			to_rts(c, d->qp_num) || to_rts(d, c->qp_num)) {
		CHECK(0, "connect the SRQ QPs");
		return;
	}
	CHECK(poll(&pfd, 1, 200) == 0, "no async event yet");
	for (i = 0; i < 3; i++)
		post_send(d, 60 + i, 0, 16, 0);
	poll_n(cq, wc, 6, 3000);
	CHECK(poll(&pfd, 1, 3000) == 1, "async_fd readable after the SRQ fell below its limit");
	CHECK(ibv_get_async_event(ctx, &ev) == 0 &&
		ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED && ev.element.srq == srq,
		"ibv_get_async_event: SRQ_LIMIT_REACHED for our SRQ");
	ibv_ack_async_event(&ev);
	ibv_destroy_qp(c);
	ibv_destroy_qp(d);
	CHECK(ibv_destroy_srq(srq) == 0, "ibv_destroy_srq");
}

/*
 * A destroyed QP's completions not yet polled go with it (as a ConnectX
 * provider cleans its CQs): libfabric's ofi_rxm reposts the buffer of
 * any successful receive it polls to the receive's QP, which it closed.
 * x -> y and x2 -> z, y and z sharing one CQ: once both sends completed
 * (each after its receive), destroying y leaves z's receive alone.
 */
void
test_destroy_purges(void)
{
	struct ibv_cq *cqx = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_cq *cqy = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_qp *x, *x2, *y, *z;
	struct ibv_wc wc[4];
	int got;

	x = cqx && cqy ? make_qp(cqx, cqx, NULL) : NULL;
	x2 = cqx && cqy ? make_qp(cqx, cqx, NULL) : NULL;
	y = cqx && cqy ? make_qp(cqy, cqy, NULL) : NULL;
	z = cqx && cqy ? make_qp(cqy, cqy, NULL) : NULL;
	if (!x || !x2 || !y || !z || to_init(x) || to_init(x2) || to_init(y) ||
			to_init(z) || to_rts(x, y->qp_num) ||
			to_rts(y, x->qp_num) || to_rts(x2, z->qp_num) ||
			to_rts(z, x2->qp_num)) {
		CHECK(0, "destroy purges: set-up: %s", strerror(errno));
		return;
	}
	CHECK(post_recv(y, 71, 0, 64) == 0 && post_recv(z, 72, 64, 64) == 0 &&
		post_send(x, 81, 128, 64, 0) == 0 &&
		post_send(x2, 82, 192, 64, 0) == 0, "destroy purges: posted");
	got = poll_n(cqx, wc, 2, 5000);
	CHECK(got == 2 && wc[0].status == IBV_WC_SUCCESS &&
		wc[1].status == IBV_WC_SUCCESS, "destroy purges: both sends "
		"completed (%d)", got);
	CHECK(ibv_destroy_qp(y) == 0, "destroy purges: y destroyed with its "
		"receive's completion unpolled");
	got = poll_n(cqy, wc, 2, 300);
	CHECK(got == 1 && wc[0].qp_num == z->qp_num && wc[0].wr_id == 72,
		"destroy purges: the CQ keeps z's completion only (%d, QP %u "
		"wr %" PRIu64 ")", got, got ? wc[0].qp_num : 0,
		got ? wc[0].wr_id : 0);
	ibv_destroy_qp(x);
	ibv_destroy_qp(x2);
	ibv_destroy_qp(z);
	ibv_destroy_cq(cqx);
	ibv_destroy_cq(cqy);
}
