/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * The verbs API's documented behaviour on droce's libibverbs.so.1, where no
 * Debian binary exercises it: built against the system's libibverbs (as any
 * verbs program) and run through droce-run on a loopback port (net_ring:
 * what a port sends, it receives), QPs of one process talking to each other.
 *
 *  - ibv_post_send: EINVAL with *bad_wr at the bad WR, those before posted;
 *    a QP in RESET refuses everything;
 *  - completion channel: O_NONBLOCK gives EAGAIN, poll() wakes on an event,
 *    solicited-only arming ignores unsolicited completions, a blocking
 *    ibv_get_cq_event returns because droce progresses while we sleep;
 *  - ibv_wr_*: wr_complete posts all or nothing; unsupported send_ops_flags
 *    fail QP creation;
 *  - IBTA 1.5 ATOMIC WRITE: device_cap_flags_ex, ibv_wr_atomic_write and
 *    ibv_post_send, the word and its neighbours, EINVAL cases;
 *  - ibv_cq_ex: start/next/end_poll and the read_* accessors; ENOENT;
 *  - async events: SRQ limit through ibv_get_async_event (async_fd polled);
 *  - MR access rules; a bad rkey completes with REM_ACCESS_ERR and flushes
 *    what follows;
 *  - memory windows: type 1 (ibv_bind_mw) and type 2 (BIND_MW WR,
 *    SEND_WITH_INV), writes in, out of and after them;
 *  - ibv_reg_mr faults the region in (as a kernel provider pins it) and
 *    refuses, with EFAULT, memory that is not mapped or, for a writable
 *    MR, not writable.
 */

#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/mman.h>
#include <sys/shm.h>

#include <infiniband/verbs.h>

#include "verbs_check.h"

#define BUF 65536

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_mr *mr;
static uint8_t *buf;

static int
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

static int
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

static struct ibv_qp *
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
static void
drain(struct ibv_cq *cq)
{
	struct ibv_wc wc[16];

	usleep(100000);
	while (ibv_poll_cq(cq, 16, wc) > 0)
		;
}

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

/* Poll cq until n completions or timeout_ms; returns how many. */
static int
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

static int
post_recv(struct ibv_qp *qp, uint64_t id, size_t off, uint32_t len)
{
	struct ibv_sge s = { .addr = (uintptr_t)(buf + off), .length = len,
		.lkey = mr->lkey };
	struct ibv_recv_wr w = { .wr_id = id, .sg_list = &s, .num_sge = 1 }, *bad;

	return ibv_post_recv(qp, &w, &bad);
}

static int
post_send(struct ibv_qp *qp, uint64_t id, size_t off, uint32_t len,
		unsigned int flags)
{
	struct ibv_sge s = { .addr = (uintptr_t)(buf + off), .length = len,
		.lkey = mr->lkey };
	struct ibv_send_wr w = { .wr_id = id, .sg_list = &s, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED | flags }, *bad;

	return ibv_post_send(qp, &w, &bad);
}

static void
test_post_rules(struct ibv_qp *a, struct ibv_qp *b, struct ibv_cq *cqa)
{
	struct ibv_sge s[3] = {
		{ .addr = (uintptr_t)buf, .length = 8, .lkey = mr->lkey },
		{ .addr = (uintptr_t)buf + 8, .length = 8, .lkey = mr->lkey },
		{ .addr = (uintptr_t)buf + 16, .length = 8, .lkey = mr->lkey },
	};
	struct ibv_send_wr w[3], *bad = NULL;
	struct ibv_wc wc[4];
	int rc, i;

	memset(w, 0, sizeof(w));
	for (i = 0; i < 3; i++) {
		w[i].wr_id = 10 + i;
		w[i].opcode = IBV_WR_RDMA_WRITE;
		w[i].send_flags = IBV_SEND_SIGNALED;
		w[i].wr.rdma.remote_addr = (uintptr_t)buf + 4096;
		w[i].wr.rdma.rkey = mr->rkey;
		w[i].sg_list = s;
		w[i].num_sge = 1;
		w[i].next = i < 2 ? &w[i + 1] : NULL;
	}
	w[1].num_sge = 3;	/* more than max_send_sge (2) */
	rc = ibv_post_send(a, w, &bad);
	CHECK(rc == EINVAL && bad == &w[1],
		"ibv_post_send: EINVAL at the WR with too many SGEs, bad_wr there (rc %d)", rc);
	CHECK(poll_n(cqa, wc, 2, 1000) == 1 && wc[0].wr_id == 10 &&
		wc[0].status == IBV_WC_SUCCESS,
		"the WR before it was posted and completed, the ones after were not");
	(void)b;
}

static void
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

static void
test_wr_api(struct ibv_cq *cqa, struct ibv_cq *cqb, struct ibv_qp *peer_b)
{
	struct ibv_qp_init_attr_ex ax;
	struct ibv_qp *q;
	struct ibv_qp_ex *qx;
	struct ibv_wc wc[4];
	struct ibv_sge sl[3];
	int rc, i;

	memset(&ax, 0, sizeof(ax));
	ax.send_cq = cqa;
	ax.recv_cq = cqa;
	ax.qp_type = IBV_QPT_RC;
	ax.cap.max_send_wr = 16;
	ax.cap.max_recv_wr = 16;
	ax.cap.max_send_sge = 2;
	ax.cap.max_recv_sge = 1;
	ax.cap.max_inline_data = 64;
	ax.pd = pd;
	ax.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	ax.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_SEND |
		IBV_QP_EX_WITH_TSO;
	errno = 0;
	q = ibv_create_qp_ex(ctx, &ax);
	CHECK(q == NULL && errno == EOPNOTSUPP,
		"create_qp_ex with an unsupported send_ops_flags (TSO) fails, EOPNOTSUPP");
	ax.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_SEND;
	q = ibv_create_qp_ex(ctx, &ax);
	CHECK(q != NULL, "create_qp_ex with WRITE|SEND");
	if (q == NULL)
		return;
	qx = ibv_qp_to_qp_ex(q);
	CHECK(qx != NULL, "ibv_qp_to_qp_ex");
	if (to_init(q) || to_init(peer_b) || to_rts(q, peer_b->qp_num) ||
			to_rts(peer_b, q->qp_num)) {
		CHECK(0, "connect the ibv_wr_* QP");
		return;
	}
	memset(buf + 16384, 0, 256);
	memset(buf, 0x5a, 256);
	/* a bad WR in the middle: nothing at all is posted */
	ibv_wr_start(qx);
	qx->wr_id = 1;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(qx, mr->rkey, (uintptr_t)buf + 16384);
	ibv_wr_set_sge(qx, mr->lkey, (uintptr_t)buf, 16);
	qx->wr_id = 2;
	ibv_wr_rdma_write(qx, mr->rkey, (uintptr_t)buf + 16384 + 16);
	for (i = 0; i < 3; i++)
		sl[i] = (struct ibv_sge){ .addr = (uintptr_t)buf, .length = 4,
			.lkey = mr->lkey };
	ibv_wr_set_sge_list(qx, 3, sl);		/* > max_send_sge */
	rc = ibv_wr_complete(qx);
	CHECK(rc == EINVAL, "wr_complete reports the bad setter (rc %d)", rc);
	CHECK(poll_n(cqa, wc, 1, 500) == 0 && buf[16384] == 0,
		"and posted nothing, not even the good WR before it");
	/* abort discards */
	ibv_wr_start(qx);
	qx->wr_id = 3;
	ibv_wr_rdma_write(qx, mr->rkey, (uintptr_t)buf + 16384);
	ibv_wr_set_sge(qx, mr->lkey, (uintptr_t)buf, 16);
	ibv_wr_abort(qx);
	CHECK(poll_n(cqa, wc, 1, 300) == 0, "wr_abort discards");
	/* a good batch: three WRs, inline data copied at the setter */
	ibv_wr_start(qx);
	for (i = 0; i < 3; i++) {
		char tmp[16];

		memset(tmp, 'a' + i, sizeof(tmp));
		qx->wr_id = 10 + (uint64_t)i;
		ibv_wr_rdma_write(qx, mr->rkey, (uintptr_t)buf + 16384 + 16 * i);
		ibv_wr_set_inline_data(qx, tmp, sizeof(tmp));
		memset(tmp, 0, sizeof(tmp));	/* reuse at once: allowed */
	}
	rc = ibv_wr_complete(qx);
	CHECK(rc == 0, "wr_complete of three inline WRITEs");
	rc = poll_n(cqa, wc, 3, 3000);
	CHECK(rc == 3 && wc[0].wr_id == 10 && wc[2].wr_id == 12 &&
		wc[1].status == IBV_WC_SUCCESS, "three completions in order");
	CHECK(buf[16384] == 'a' && buf[16384 + 16] == 'b' && buf[16384 + 47] == 'c',
		"the inline data landed (copied when set)");
	ibv_destroy_qp(q);
	(void)cqb;
}

/*
 * A destroyed QP's completions not yet polled go with it (as a ConnectX
 * provider cleans its CQs): libfabric's ofi_rxm reposts the buffer of
 * any successful receive it polls to the receive's QP, which it closed.
 * x -> y and x2 -> z, y and z sharing one CQ: once both sends completed
 * (each after its receive), destroying y leaves z's receive alone.
 */
static void
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

static enum ibv_qp_state
qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia))
		return IBV_QPS_UNKNOWN;
	return a.qp_state;
}

/* 8 bytes of buf at off, as a number to compare */
static uint64_t
word_at(size_t off)
{
	uint64_t v;

	memcpy(&v, buf + off, sizeof(v));
	return v;
}

/*
 * IBTA 1.5 ATOMIC WRITE (rdma-core's IBV_WR_ATOMIC_WRITE): announced in
 * device_cap_flags_ex, taken by RC QPs created with
 * IBV_QP_EX_WITH_ATOMIC_WRITE (refused for UD), through ibv_wr_atomic_write
 * (the word copied at the call) and ibv_post_send (8 bytes of SGEs): the
 * word lands, its neighbours do not move, the completion is
 * IBV_WC_ATOMIC_WRITE; a misaligned address or a length other than 8 is
 * EINVAL with bad_wr at it.
 */
static void
test_atomic_write(struct ibv_cq *cqa)
{
	/* IB_UVERBS_DEVICE_ATOMIC_WRITE: kernel >= 6.2 uapi, not in
	 * Debian 12's headers */
	const uint64_t cap_atomic_write = 1ULL << 40;
	const size_t t = 20480;		/* the target window in buf */
	struct ibv_device_attr_ex dx;
	struct ibv_qp_init_attr_ex ax;
	struct ibv_qp *q, *p, *ud;
	struct ibv_qp_ex *qx;
	struct ibv_send_wr w, w2, *bad;
	struct ibv_sge s;
	struct ibv_wc wc[2];
	uint8_t before[64];
	uint64_t v;
	int rc, i;

	memset(&dx, 0, sizeof(dx));
	rc = ibv_query_device_ex(ctx, NULL, &dx);
	CHECK(rc == 0 && (dx.device_cap_flags_ex & cap_atomic_write),
		"device_cap_flags_ex announces ATOMIC_WRITE (rc %d, %#llx)", rc,
		(unsigned long long)dx.device_cap_flags_ex);
	memset(&ax, 0, sizeof(ax));
	ax.send_cq = cqa;
	ax.recv_cq = cqa;
	ax.qp_type = IBV_QPT_UD;
	ax.cap.max_send_wr = 16;
	ax.cap.max_recv_wr = 16;
	ax.cap.max_send_sge = 1;
	ax.cap.max_recv_sge = 1;
	ax.pd = pd;
	ax.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	ax.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_ATOMIC_WRITE;
	errno = 0;
	ud = ibv_create_qp_ex(ctx, &ax);
	CHECK(ud == NULL && errno == EOPNOTSUPP,
		"a UD QP with IBV_QP_EX_WITH_ATOMIC_WRITE: EOPNOTSUPP");
	if (ud != NULL)
		ibv_destroy_qp(ud);
	ax.qp_type = IBV_QPT_RC;
	ax.cap.max_inline_data = 0;	/* the word needs no inline room */
	ax.send_ops_flags = IBV_QP_EX_WITH_ATOMIC_WRITE |
		IBV_QP_EX_WITH_RDMA_WRITE;
	q = ibv_create_qp_ex(ctx, &ax);
	CHECK(q != NULL, "create_qp_ex with IBV_QP_EX_WITH_ATOMIC_WRITE (RC)");
	p = make_qp(cqa, cqa, NULL);
	if (q == NULL || p == NULL)
		return;
	qx = ibv_qp_to_qp_ex(q);
	if (to_init(q) || to_init(p) || to_rts(q, p->qp_num) ||
			to_rts(p, q->qp_num)) {
		CHECK(0, "connect the ATOMIC WRITE QPs");
		return;
	}
	drain(cqa);
	for (i = 0; i < 64; i++)
		buf[t + (size_t)i] = (uint8_t)(0x80 + i);
	memcpy(before, buf + t, sizeof(before));

	/* ibv_wr_atomic_write: the word is the call's, reused at once */
	v = 0x8877665544332211ull;
	ibv_wr_start(qx);
	qx->wr_id = 41;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_write(qx, mr->rkey, (uintptr_t)buf + t + 16, &v);
	v = 0;
	rc = ibv_wr_complete(qx);
	CHECK(rc == 0, "wr_complete of an ibv_wr_atomic_write (rc %d)", rc);
	rc = poll_n(cqa, wc, 1, 3000);
	CHECK(rc == 1 && wc[0].wr_id == 41 && wc[0].status == IBV_WC_SUCCESS &&
		wc[0].opcode == IBV_WC_ATOMIC_WRITE,
		"its completion: IBV_WC_ATOMIC_WRITE, success (%d, %s, opcode %d)",
		rc, rc == 1 ? ibv_wc_status_str(wc[0].status) : "-",
		rc == 1 ? (int)wc[0].opcode : -1);
	memcpy(before + 16, "\x11\x22\x33\x44\x55\x66\x77\x88", 8);
	CHECK(memcmp(buf + t, before, sizeof(before)) == 0 &&
		word_at(t + 16) == 0x8877665544332211ull,
		"the word landed as written, every other byte unchanged");

	/* ibv_post_send: 8 bytes from two SGEs */
	memcpy(buf + 1024, "ABCDEFGH", 8);
	s = (struct ibv_sge){ .addr = (uintptr_t)buf + 1024, .length = 8,
		.lkey = mr->lkey };
	memset(&w, 0, sizeof(w));
	w.wr_id = 42;
	w.opcode = IBV_WR_ATOMIC_WRITE;
	w.sg_list = &s;
	w.num_sge = 1;
	w.send_flags = IBV_SEND_SIGNALED;
	w.wr.rdma.remote_addr = (uintptr_t)buf + t + 40;
	w.wr.rdma.rkey = mr->rkey;
	rc = ibv_post_send(p, &w, &bad);
	CHECK(rc == 0, "ibv_post_send IBV_WR_ATOMIC_WRITE (rc %d)", rc);
	rc = poll_n(cqa, wc, 1, 3000);
	CHECK(rc == 1 && wc[0].wr_id == 42 && wc[0].status == IBV_WC_SUCCESS &&
		wc[0].opcode == IBV_WC_ATOMIC_WRITE,
		"ibv_post_send's completion: IBV_WC_ATOMIC_WRITE, success");
	memcpy(before + 40, "ABCDEFGH", 8);
	CHECK(memcmp(buf + t, before, sizeof(before)) == 0,
		"its word landed, every other byte unchanged");

	/* refused at posting: a good WRITE first, then the bad one */
	memset(&w2, 0, sizeof(w2));
	w2 = w;
	w2.opcode = IBV_WR_RDMA_WRITE;
	w2.wr_id = 43;
	w2.wr.rdma.remote_addr = (uintptr_t)buf + t + 128;
	w2.next = &w;
	w.wr.rdma.remote_addr = (uintptr_t)buf + t + 4;
	bad = NULL;
	rc = ibv_post_send(p, &w2, &bad);
	CHECK(rc == EINVAL && bad == &w,
		"misaligned remote address: EINVAL, bad_wr at it (rc %d)", rc);
	rc = poll_n(cqa, wc, 2, 1000);
	CHECK(rc == 1 && wc[0].wr_id == 43, "only the WRITE before it went");
	w.wr.rdma.remote_addr = (uintptr_t)buf + t + 8;
	s.length = 4;
	bad = NULL;
	rc = ibv_post_send(p, &w, &bad);
	CHECK(rc == EINVAL && bad == &w, "4 bytes: EINVAL, bad_wr at it");
	ibv_wr_start(qx);
	ibv_wr_atomic_write(qx, mr->rkey, (uintptr_t)buf + t + 12, &v);
	rc = ibv_wr_complete(qx);
	CHECK(rc == EINVAL, "ibv_wr_atomic_write misaligned: wr_complete EINVAL");
	CHECK(poll_n(cqa, wc, 1, 300) == 0 && word_at(t + 8) ==
		0x8f8e8d8c8b8a8988ull, "nothing went");
	CHECK(qp_state(q) == IBV_QPS_RTS && qp_state(p) == IBV_QPS_RTS,
		"both QPs still RTS");
	ibv_destroy_qp(q);
	ibv_destroy_qp(p);
}

static void
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

static void
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

static void
test_errors(struct ibv_qp *a, struct ibv_qp *b, struct ibv_cq *cqa)
{
	struct ibv_sge s = { .addr = (uintptr_t)buf, .length = 8, .lkey = mr->lkey };
	struct ibv_send_wr w[2], *bad;
	struct ibv_wc wc[2];
	struct ibv_mr *m;

	errno = 0;
	m = ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_REMOTE_WRITE);
	CHECK(m == NULL && errno == EINVAL,
		"ibv_reg_mr: remote write without local write, EINVAL");
	errno = 0;
	m = ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_HUGETLB);
	CHECK(m == NULL && errno == EOPNOTSUPP, "ibv_reg_mr: an access flag "
		"droce does not take (HUGETLB), EOPNOTSUPP");

	memset(w, 0, sizeof(w));
	w[0].wr_id = 70;
	w[0].opcode = IBV_WR_RDMA_WRITE;
	w[0].send_flags = IBV_SEND_SIGNALED;
	w[0].wr.rdma.remote_addr = (uintptr_t)buf;
	w[0].wr.rdma.rkey = mr->rkey ^ 0x5500;	/* no such key */
	w[0].sg_list = &s;
	w[0].num_sge = 1;
	w[0].next = &w[1];
	w[1] = w[0];
	w[1].wr_id = 71;
	w[1].wr.rdma.rkey = mr->rkey;
	w[1].next = NULL;
	CHECK(ibv_post_send(a, w, &bad) == 0, "post a WRITE with a bad rkey, then a good one");
	CHECK(poll_n(cqa, wc, 2, 5000) == 2 && wc[0].wr_id == 70 &&
		wc[0].status == IBV_WC_REM_ACCESS_ERR && wc[1].wr_id == 71 &&
		wc[1].status == IBV_WC_WR_FLUSH_ERR,
		"REM_ACCESS_ERR (%s), then WR_FLUSH_ERR for the next",
		ibv_wc_status_str(wc[0].status));
	{
		struct ibv_qp_attr qa;
		struct ibv_qp_init_attr qi;

		CHECK(ibv_query_qp(a, &qa, IBV_QP_STATE, &qi) == 0 &&
			qa.qp_state == IBV_QPS_ERR, "the requester QP is in ERR");
	}
	(void)b;
}

/* One RDMA WRITE of 8 bytes from x into buf + off through rkey: its status. */
static enum ibv_wc_status
write_through(struct ibv_qp *x, struct ibv_cq *cq, uint32_t rkey, size_t off,
		uint64_t id)
{
	struct ibv_sge s = { .addr = (uintptr_t)buf, .length = 8, .lkey = mr->lkey };
	struct ibv_send_wr w = { .wr_id = id, .sg_list = &s, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;

	w.wr.rdma.remote_addr = (uintptr_t)buf + off;
	w.wr.rdma.rkey = rkey;
	if (ibv_post_send(x, &w, &bad) != 0 || poll_n(cq, &wc, 1, 5000) != 1 ||
			wc.wr_id != id)
		return IBV_WC_GENERAL_ERR;
	return wc.status;
}

/*
 * Memory windows: a type 1 window bound with ibv_bind_mw (a new rkey at
 * once, a BIND_MW completion), a type 2 window bound with a BIND_MW WR
 * and invalidated by the peer's SEND_WITH_INV; writes through each, in
 * and out of the window, and after the invalidation.
 */
static void
test_mw(struct ibv_cq *cqa, struct ibv_cq *cqb)
{
	const size_t base = 32768;
	struct ibv_qp *x = make_qp(cqa, cqa, NULL), *y = make_qp(cqb, cqb, NULL);
	struct ibv_mr *m = ibv_reg_mr(pd, buf + base, 16384, IBV_ACCESS_LOCAL_WRITE |
		IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_MW_BIND);
	struct ibv_mw *mw1, *mw2;
	struct ibv_mw_bind b;
	struct ibv_send_wr w, *bad;
	struct ibv_sge s = { .addr = (uintptr_t)buf, .length = 8, .lkey = mr->lkey };
	struct ibv_wc wc;
	uint32_t old, rkey2;

	if (x == NULL || y == NULL || m == NULL || to_init(x) || to_init(y) ||
			to_rts(x, y->qp_num) || to_rts(y, x->qp_num)) {
		CHECK(0, "memory windows: QPs and MR: %s", strerror(errno));
		return;
	}
	mw1 = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	mw2 = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	CHECK(mw1 != NULL && mw2 != NULL && mw1->type == IBV_MW_TYPE_1 &&
		mw2->type == IBV_MW_TYPE_2, "ibv_alloc_mw: type 1 and type 2%s%s",
		mw1 && mw2 ? "" : ": ", mw1 && mw2 ? "" : strerror(errno));
	if (mw1 == NULL || mw2 == NULL)
		return;

	/* type 1: ibv_bind_mw */
	old = mw1->rkey;
	memset(&b, 0, sizeof(b));
	b.wr_id = 80;
	b.send_flags = IBV_SEND_SIGNALED;
	b.bind_info.mr = m;
	b.bind_info.addr = (uintptr_t)buf + base;
	b.bind_info.length = 4096;
	b.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
	CHECK(ibv_bind_mw(y, mw1, &b) == 0 && mw1->rkey != old,
		"ibv_bind_mw (type 1): 0, a new rkey at once");
	CHECK(poll_n(cqb, &wc, 1, 5000) == 1 && wc.wr_id == 80 &&
		wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_BIND_MW,
		"the bind completes: BIND_MW, success");
	memcpy(buf, "window-1", 8);
	CHECK(write_through(x, cqa, mw1->rkey, base + 8, 81) == IBV_WC_SUCCESS &&
		memcmp(buf + base + 8, "window-1", 8) == 0,
		"a WRITE through the type 1 window lands");
	CHECK(write_through(x, cqa, old, base + 16, 82) == IBV_WC_REM_ACCESS_ERR,
		"the window's old rkey: REM_ACCESS_ERR");
	/* x is in ERR now */
	ibv_destroy_qp(x);
	x = make_qp(cqa, cqa, NULL);
	ibv_destroy_qp(y);
	y = make_qp(cqb, cqb, NULL);
	if (x == NULL || y == NULL || to_init(x) || to_init(y) ||
			to_rts(x, y->qp_num) || to_rts(y, x->qp_num)) {
		CHECK(0, "memory windows: new QPs: %s", strerror(errno));
		return;
	}

	/* type 2: a BIND_MW WR on the QP the peer writes to */
	rkey2 = ibv_inc_rkey(mw2->rkey);
	memset(&w, 0, sizeof(w));
	w.wr_id = 83;
	w.opcode = IBV_WR_BIND_MW;
	w.send_flags = IBV_SEND_SIGNALED;
	w.bind_mw.mw = mw2;
	w.bind_mw.rkey = rkey2;
	w.bind_mw.bind_info = b.bind_info;
	w.bind_mw.bind_info.addr = (uintptr_t)buf + base + 4096;
	CHECK(ibv_post_send(y, &w, &bad) == 0 && poll_n(cqb, &wc, 1, 5000) == 1 &&
		wc.wr_id == 83 && wc.status == IBV_WC_SUCCESS &&
		wc.opcode == IBV_WC_BIND_MW, "BIND_MW WR (type 2): success");
	memcpy(buf, "window-2", 8);
	CHECK(write_through(x, cqa, rkey2, base + 4096, 84) == IBV_WC_SUCCESS &&
		memcmp(buf + base + 4096, "window-2", 8) == 0,
		"a WRITE through the type 2 window lands");
	/* the peer invalidates it with its SEND */
	CHECK(post_recv(y, 85, 1024, 64) == 0, "post a receive for the SEND_WITH_INV");
	memset(&w, 0, sizeof(w));
	w.wr_id = 86;
	w.opcode = IBV_WR_SEND_WITH_INV;
	w.send_flags = IBV_SEND_SIGNALED;
	w.invalidate_rkey = rkey2;
	w.sg_list = &s;
	w.num_sge = 1;
	CHECK(ibv_post_send(x, &w, &bad) == 0 && poll_n(cqa, &wc, 1, 5000) == 1 &&
		wc.status == IBV_WC_SUCCESS, "SEND_WITH_INV sent");
	CHECK(poll_n(cqb, &wc, 1, 5000) == 1 && wc.wr_id == 85 &&
		wc.status == IBV_WC_SUCCESS && (wc.wc_flags & IBV_WC_WITH_INV) &&
		wc.invalidated_rkey == rkey2,
		"its receive: WITH_INV, the window's rkey");
	CHECK(write_through(x, cqa, rkey2, base + 4096, 87) == IBV_WC_REM_ACCESS_ERR,
		"a WRITE through the invalidated window: REM_ACCESS_ERR");
	ibv_destroy_qp(x);
	ibv_destroy_qp(y);
	CHECK(ibv_dealloc_mw(mw1) == 0 && ibv_dealloc_mw(mw2) == 0 &&
		ibv_dereg_mr(m) == 0, "ibv_dealloc_mw, then the MR deregisters");
	drain(cqa);
	drain(cqb);
}

/* Pages of [p, p + len) resident in memory. */
static size_t
resident(void *p, size_t len)
{
	unsigned char v[64];
	size_t i, n = len / 4096, r = 0;

	if (n > sizeof(v) || mincore(p, len, v) != 0)
		return (size_t)-1;
	for (i = 0; i < n; i++)
		r += v[i] & 1;
	return r;
}

static void
test_reg_mr_memory(void)
{
	const size_t len = 16 * 4096;
	struct ibv_mr *m;
	uint8_t *p;

	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		-1, 0);
	CHECK(p != MAP_FAILED && resident(p, len) == 0,
		"a fresh anonymous mapping has no page in memory");
	m = ibv_reg_mr(pd, p, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	CHECK(m != NULL && resident(p, len) == 16,
		"ibv_reg_mr faults in all 16 pages (%zu resident)", resident(p, len));
	if (m)
		ibv_dereg_mr(m);

	/* a hole in the middle */
	munmap(p + 8 * 4096, 4096);
	errno = 0;
	m = ibv_reg_mr(pd, p, len, IBV_ACCESS_LOCAL_WRITE);
	CHECK(m == NULL && errno == EFAULT,
		"ibv_reg_mr over an unmapped page: EFAULT (%s)", strerror(errno));
	m = ibv_reg_mr(pd, p, 8 * 4096, IBV_ACCESS_LOCAL_WRITE);
	CHECK(m != NULL, "the mapped half registers");
	if (m)
		ibv_dereg_mr(m);

	/* read-only memory: a read-only MR, never a writable one */
	mprotect(p, 8 * 4096, PROT_READ);
	errno = 0;
	m = ibv_reg_mr(pd, p, 8 * 4096, IBV_ACCESS_LOCAL_WRITE);
	CHECK(m == NULL && errno == EFAULT,
		"a writable MR over read-only memory: EFAULT (%s)", strerror(errno));
	if (m)
		ibv_dereg_mr(m);
	m = ibv_reg_mr(pd, p + 4096, 4096, IBV_ACCESS_REMOTE_READ);
	CHECK(m != NULL, "a remote-read MR over read-only memory registers");
	if (m)
		ibv_dereg_mr(m);
	munmap(p, len);
}

/*
 * SysV shared memory registered (UCX's memory pools: hugetlb where it can),
 * in pieces that begin inside a huge page: RDMA WRITE and READ through the
 * connected pair reach exactly the bytes named. Attached, droced maps
 * the segment itself, at huge-page-aligned addresses (doc/daemon.md).
 */
static void
test_sysv_mr(struct ibv_qp *a, struct ibv_cq *cq)
{
	size_t len = 4u << 20, off = 8192 + 100, off2 = (2u << 20) + 4096;
	int huge = 1, id = shmget(IPC_PRIVATE, len, IPC_CREAT | 0600 | SHM_HUGETLB);
	struct ibv_mr *m1, *m2;
	struct ibv_sge s;
	struct ibv_send_wr w, *bad;
	struct ibv_wc wc;
	uint8_t *m;
	int i, ok;

	if (id < 0) {
		huge = 0;	/* no huge page free: plain SysV */
		id = shmget(IPC_PRIVATE, len, IPC_CREAT | 0600);
	}
	m = id < 0 ? (void *)-1 : shmat(id, NULL, 0);
	if (id >= 0)
		shmctl(id, IPC_RMID, NULL);
	if (m == (void *)-1) {
		printf("SKIP: SysV MR: %s\n", strerror(errno));
		return;
	}
	memset(m, 0xee, len);
	m1 = ibv_reg_mr(pd, m + 8192, 4096, IBV_ACCESS_LOCAL_WRITE |
		IBV_ACCESS_REMOTE_WRITE);
	m2 = ibv_reg_mr(pd, m + off2, 8192, IBV_ACCESS_LOCAL_WRITE |
		IBV_ACCESS_REMOTE_READ);
	CHECK(m1 != NULL && m2 != NULL, "SysV%s MRs inside a huge page",
		huge ? " hugetlb" : "");
	if (m1 == NULL || m2 == NULL)
		goto out;
	for (i = 0; i < 64; i++) {
		buf[i] = (uint8_t)(i * 7 + 1);
		m[off2 + 300 + i] = (uint8_t)(i * 3 + 2);
	}
	memset(&w, 0, sizeof(w));
	s = (struct ibv_sge){ .addr = (uintptr_t)buf, .length = 64,
		.lkey = mr->lkey };
	w.sg_list = &s;
	w.num_sge = 1;
	w.opcode = IBV_WR_RDMA_WRITE;
	w.send_flags = IBV_SEND_SIGNALED;
	w.wr.rdma.remote_addr = (uintptr_t)(m + off);
	w.wr.rdma.rkey = m1->rkey;
	ok = ibv_post_send(a, &w, &bad) == 0 && poll_n(cq, &wc, 1, 10000) == 1 &&
		wc.status == IBV_WC_SUCCESS;
	CHECK(ok && memcmp(m + off, buf, 64) == 0 && m[off - 1] == 0xee &&
		m[off + 64] == 0xee, "RDMA WRITE into a SysV%s MR lands at its "
		"address", huge ? " hugetlb" : "");
	s = (struct ibv_sge){ .addr = (uintptr_t)(buf + 1024), .length = 64,
		.lkey = mr->lkey };
	w.opcode = IBV_WR_RDMA_READ;
	w.wr.rdma.remote_addr = (uintptr_t)(m + off2 + 300);
	w.wr.rdma.rkey = m2->rkey;
	ok = ibv_post_send(a, &w, &bad) == 0 && poll_n(cq, &wc, 1, 10000) == 1 &&
		wc.status == IBV_WC_SUCCESS;
	CHECK(ok && memcmp(buf + 1024, m + off2 + 300, 64) == 0,
		"RDMA READ from a SysV%s MR past the first huge page",
		huge ? " hugetlb" : "");
out:
	if (m1 != NULL)
		ibv_dereg_mr(m1);
	if (m2 != NULL)
		ibv_dereg_mr(m2);
	shmdt(m);
}

/*
 * ibv_resize_cq: the completions a CQ holds stay, in order; the new size
 * takes more than the old one could; below what it holds, or 0: EINVAL.
 */
static void
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

/* One signaled RDMA WRITE of 8 bytes from buf on qp; its status. */
static enum ibv_wc_status
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

/*
 * ibv_rereg_mr: a new range (the same ibv_mr, new keys: the new rkey
 * reaches the new range, the old one nothing), a new PD, new access;
 * bad flags refused with the MR as it was.
 */
static void
test_rereg_mr(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_qp *x = cq ? make_qp(cq, cq, NULL) : NULL;
	struct ibv_qp *y = cq ? make_qp(cq, cq, NULL) : NULL;
	uint8_t *old = aligned_alloc(4096, 4096), *nw = aligned_alloc(4096, 8192);
	struct ibv_pd *pd2 = ibv_alloc_pd(ctx);
	struct ibv_mr *r;
	uint32_t k1;
	int rc;

	if (!x || !y || !old || !nw || !pd2 || to_init(x) || to_init(y) ||
			to_rts(x, y->qp_num) || to_rts(y, x->qp_num)) {
		CHECK(0, "rereg: set-up: %s", strerror(errno));
		return;
	}
	memset(old, 0, 4096);
	memset(nw, 0, 8192);
	memcpy(buf, "REREG-MR", 8);
	r = ibv_reg_mr(pd, old, 4096, IBV_ACCESS_LOCAL_WRITE |
		IBV_ACCESS_REMOTE_WRITE);
	CHECK(r != NULL, "rereg: register");
	if (r == NULL)
		return;
	k1 = r->rkey;
	errno = 0;
	CHECK(ibv_rereg_mr(r, 0, NULL, NULL, 0, 0) == IBV_REREG_MR_ERR_INPUT &&
		errno == EINVAL && r->rkey == k1, "ibv_rereg_mr without flags: "
		"IBV_REREG_MR_ERR_INPUT, EINVAL, the MR unchanged");
	CHECK(ibv_rereg_mr(r, 8, NULL, NULL, 0, 0) == IBV_REREG_MR_ERR_INPUT &&
		errno == EINVAL, "ibv_rereg_mr with an unknown flag: EINVAL");
	rc = ibv_rereg_mr(r, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, nw, 8192, 0);
	CHECK(rc == 0 && r->addr == nw && r->length == 8192 && r->rkey != k1,
		"ibv_rereg_mr CHANGE_TRANSLATION: the new range, new keys (%d)",
		rc);
	CHECK(write8(x, cq, nw + 5000, r->rkey) == IBV_WC_SUCCESS &&
		memcmp(nw + 5000, "REREG-MR", 8) == 0,
		"rereg: a WRITE with the new rkey lands in the new range");
	rc = ibv_rereg_mr(r, IBV_REREG_MR_CHANGE_PD, pd2, NULL, 0, 0);
	CHECK(rc == 0 && r->pd == pd2, "ibv_rereg_mr CHANGE_PD (%d)", rc);
	rc = ibv_rereg_mr(r, IBV_REREG_MR_CHANGE_PD | IBV_REREG_MR_CHANGE_ACCESS,
		pd, NULL, 0, IBV_ACCESS_LOCAL_WRITE);
	CHECK(rc == 0 && r->pd == pd, "ibv_rereg_mr back to the PD, local "
		"access only (%d)", rc);
	/* last: an error completion leaves x in ERR */
	CHECK(write8(x, cq, nw + 100, r->rkey) == IBV_WC_REM_ACCESS_ERR &&
		nw[100] == 0, "rereg: no remote write any more: remote access "
		"error");
	ibv_destroy_qp(x);
	ibv_destroy_qp(y);
	CHECK(ibv_dereg_mr(r) == 0, "rereg: deregister");
	ibv_dealloc_pd(pd2);
	ibv_destroy_cq(cq);
	free(old);
	free(nw);
}

/*
 * On-demand paging (in process; attached: refused, EOPNOTSUPP): the
 * device says so; an ODP MR pins nothing, so it may span a hole; a WRITE
 * faults fresh pages in and lands; a WRITE into the hole is a remote
 * access error, not a crash; implicit ODP covers any buffer;
 * ibv_advise_mr prefetches and checks its lkeys.
 */
static void
test_odp(void)
{
	int attached = getenv("DROCE_DAEMON") != NULL;
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	struct ibv_device_attr_ex da;
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_qp *x = cq ? make_qp(cq, cq, NULL) : NULL;
	struct ibv_qp *y = cq ? make_qp(cq, cq, NULL) : NULL;
	unsigned int acc = IBV_ACCESS_ON_DEMAND | IBV_ACCESS_LOCAL_WRITE |
		IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	uint8_t *m = mmap(NULL, 3 * pg, PROT_READ | PROT_WRITE,
		MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *other = aligned_alloc(4096, 4096);
	struct ibv_qp *x2 = NULL, *y2 = NULL;
	struct ibv_mr *r, *imp;
	struct ibv_sge sg;

	memset(&da, 0, sizeof(da));
	CHECK(ibv_query_device_ex(ctx, NULL, &da) == 0 &&
		!!(da.odp_caps.general_caps & IBV_ODP_SUPPORT) == !attached &&
		!!(da.odp_caps.general_caps & IBV_ODP_SUPPORT_IMPLICIT) ==
		!attached && !!(da.odp_caps.per_transport_caps.rc_odp_caps &
		IBV_ODP_SUPPORT_WRITE) == !attached,
		"odp_caps %s (general 0x%lx, rc 0x%x)", attached ? "none attached" :
		"ODP, implicit, RC WRITE", (unsigned long)da.odp_caps.general_caps,
		da.odp_caps.per_transport_caps.rc_odp_caps);
	if (!x || !y || m == MAP_FAILED || !other || to_init(x) || to_init(y) ||
			to_rts(x, y->qp_num) || to_rts(y, x->qp_num)) {
		CHECK(0, "odp: set-up: %s", strerror(errno));
		return;
	}
	munmap(m + pg, pg);	/* a hole in the middle */
	errno = 0;
	r = ibv_reg_mr(pd, m, 3 * pg, (int)acc);
	if (attached) {
		CHECK(r == NULL && errno == EOPNOTSUPP,
			"ODP MR attached: EOPNOTSUPP");
		goto out;
	}
	CHECK(r != NULL, "ODP MR over a hole: registered (nothing pinned): %s",
		strerror(errno));
	imp = ibv_reg_mr(pd, NULL, SIZE_MAX, (int)acc);
	CHECK(imp != NULL && imp->length == SIZE_MAX,
		"implicit ODP MR over the whole address space: %s",
		strerror(errno));
	if (r == NULL || imp == NULL)
		goto out;
	memcpy(buf, "ODP-PAGE", 8);
	CHECK(write8(x, cq, m + 2 * pg + 8, r->rkey) == IBV_WC_SUCCESS &&
		memcmp(m + 2 * pg + 8, "ODP-PAGE", 8) == 0,
		"a WRITE into an untouched ODP page faults it in and lands");
	memset(other, 0, 4096);
	memcpy(buf, "IMPLICIT", 8);
	CHECK(write8(x, cq, other + 64, imp->rkey) == IBV_WC_SUCCESS &&
		memcmp(other + 64, "IMPLICIT", 8) == 0,
		"a WRITE through the implicit MR's rkey lands in any buffer");
	/* 64 KB through the implicit MR, from and to pages never touched:
	 * a WRITE, then a READ back, many frames each (the rest of the
	 * message faulted in with its first piece) */
	{
		size_t big = 65536;
		uint8_t *a = mmap(NULL, big, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		uint8_t *b = mmap(NULL, big, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		uint8_t *c = mmap(NULL, big, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		struct ibv_sge s = { .length = (uint32_t)big,
			.lkey = imp->lkey };
		struct ibv_send_wr w = { .wr_id = 11, .sg_list = &s,
			.num_sge = 1, .send_flags = IBV_SEND_SIGNALED }, *bad;
		struct ibv_wc wc;
		size_t i;
		int ok = a != MAP_FAILED && b != MAP_FAILED && c != MAP_FAILED;

		for (i = 0; ok && i < big; i += pg)
			a[i + (i / pg) % 64] = (uint8_t)(i / pg + 1);
		/* a's pages touched by the fill; b and c not at all */
		s.addr = (uintptr_t)a;
		w.opcode = IBV_WR_RDMA_WRITE;
		w.wr.rdma.remote_addr = (uintptr_t)b;
		w.wr.rdma.rkey = imp->rkey;
		ok = ok && ibv_post_send(x, &w, &bad) == 0 &&
			poll_n(cq, &wc, 1, 10000) == 1 &&
			wc.status == IBV_WC_SUCCESS && memcmp(a, b, big) == 0;
		s.addr = (uintptr_t)c;
		w.opcode = IBV_WR_RDMA_READ;
		w.wr.rdma.remote_addr = (uintptr_t)b;
		ok = ok && ibv_post_send(x, &w, &bad) == 0 &&
			poll_n(cq, &wc, 1, 10000) == 1 &&
			wc.status == IBV_WC_SUCCESS && memcmp(a, c, big) == 0;
		CHECK(ok, "64 KB WRITE and READ through implicit ODP, "
			"untouched pages on both ends: every byte");
		if (a != MAP_FAILED)
			munmap(a, big);
		if (b != MAP_FAILED)
			munmap(b, big);
		if (c != MAP_FAILED)
			munmap(c, big);
	}
	sg = (struct ibv_sge){ .addr = (uintptr_t)m, .length = (uint32_t)pg,
		.lkey = r->lkey };
	CHECK(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
		IBV_ADVISE_MR_FLAG_FLUSH, &sg, 1) == 0,
		"ibv_advise_mr PREFETCH_WRITE on a mapped page: 0");
	sg.addr = (uintptr_t)(m + pg);
	CHECK(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &sg, 1) ==
		EFAULT, "ibv_advise_mr on the hole: EFAULT");
	sg.lkey = r->lkey + 0x1000;
	CHECK(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &sg, 1) ==
		EINVAL, "ibv_advise_mr with a bad lkey: EINVAL");
	/* last: the error leaves x in ERR */
	CHECK(write8(x, cq, m + pg + 8, r->rkey) == IBV_WC_REM_ACCESS_ERR,
		"a WRITE into the ODP MR's hole: remote access error, no crash");
	/* the local side: a WRITE gathered from all three pages, sent a
	 * frame at a time, each faulting its own pages: the frames of the
	 * first page go, the hole's is a local protection error */
	x2 = make_qp(cq, cq, NULL);
	y2 = make_qp(cq, cq, NULL);
	if (x2 == NULL || y2 == NULL || to_init(x2) || to_init(y2) ||
			to_rts(x2, y2->qp_num) || to_rts(y2, x2->qp_num)) {
		CHECK(0, "odp: second pair: %s", strerror(errno));
	} else {
		uint8_t *dst = aligned_alloc(4096, 3 * pg);
		struct ibv_sge s3 = { .addr = (uintptr_t)m,
			.length = (uint32_t)(3 * pg), .lkey = r->lkey };
		struct ibv_send_wr w = { .wr_id = 9, .sg_list = &s3,
			.num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
			.send_flags = IBV_SEND_SIGNALED }, *bad;
		struct ibv_wc wc;

		w.wr.rdma.remote_addr = (uintptr_t)dst;
		w.wr.rdma.rkey = imp->rkey;
		CHECK(dst != NULL && ibv_post_send(x2, &w, &bad) == 0 &&
			poll_n(cq, &wc, 1, 10000) == 1 && wc.wr_id == 9 &&
			wc.status == IBV_WC_LOC_PROT_ERR,
			"a WRITE gathered across the ODP MR's hole: local "
			"protection error, no crash");
		free(dst);
	}
	CHECK(ibv_dereg_mr(imp) == 0 && ibv_dereg_mr(r) == 0,
		"ODP MRs deregistered");
out:
	if (x2 != NULL)
		ibv_destroy_qp(x2);
	if (y2 != NULL)
		ibv_destroy_qp(y2);
	ibv_destroy_qp(x);
	ibv_destroy_qp(y);
	ibv_destroy_cq(cq);
	munmap(m, pg);
	munmap(m + 2 * pg, pg);
	free(other);
}

/*
 * RAW_PACKET QPs (in process; attached: refused, EOPNOTSUPP, and the
 * device says no TSO): over net_ring, which hands every frame back, a
 * frame a flow matches comes back whole into the QP; one it does not is
 * never seen; a QP with a flow is EBUSY to destroy.
 */
static void
test_raw(void)
{
	int attached = getenv("DROCE_DAEMON") != NULL;
	struct ibv_device_attr_ex da;
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_RAW_PACKET,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1,
			.max_recv_sge = 1 } };
	struct {
		struct ibv_flow_attr a;
		struct ibv_flow_spec_eth eth;
	} r;
	struct ibv_qp_attr qa;
	struct ibv_send_wr w, *bad;
	struct ibv_recv_wr rw, *rbad;
	struct ibv_sge sg;
	struct ibv_flow *fl;
	struct ibv_wc wc;
	struct ibv_cq *cq;
	struct ibv_qp *q;
	uint8_t *f = buf + 4096, *in = buf + 8192;
	int n, i, got_send = 0, got_recv = 0;
	time_t end;

	memset(&da, 0, sizeof(da));
	CHECK(ibv_query_device_ex(ctx, NULL, &da) == 0 &&
		(da.tso_caps.max_tso != 0) == !attached &&
		!!(da.tso_caps.supported_qpts & (1u << IBV_QPT_RAW_PACKET)) ==
		!attached && !!(da.raw_packet_caps &
		IBV_RAW_PACKET_CAP_IP_CSUM) == !attached,
		"raw caps %s (max_tso %u, raw_packet_caps %#x)", attached ?
		"none attached" : "TSO and checksums", da.tso_caps.max_tso,
		da.raw_packet_caps);
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	ia.send_cq = ia.recv_cq = cq;
	errno = 0;
	q = cq ? ibv_create_qp(pd, &ia) : NULL;
	if (attached) {
		CHECK(q == NULL && errno == EOPNOTSUPP,
			"RAW_PACKET QP attached: EOPNOTSUPP");
		goto out;
	}
	CHECK(q != NULL, "RAW_PACKET QP: %s", strerror(errno));
	if (q == NULL)
		goto out;
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_INIT;
	qa.port_num = 1;
	n = ibv_modify_qp(q, &qa, IBV_QP_STATE | IBV_QP_PORT);
	qa.qp_state = IBV_QPS_RTR;
	n |= ibv_modify_qp(q, &qa, IBV_QP_STATE);
	qa.qp_state = IBV_QPS_RTS;
	n |= ibv_modify_qp(q, &qa, IBV_QP_STATE);
	CHECK(n == 0, "raw QP to RTS with the state (and port) alone");
	memset(&r, 0, sizeof(r));
	r.a.type = IBV_FLOW_ATTR_NORMAL;
	r.a.size = sizeof(r);
	r.a.num_of_specs = 1;
	r.a.port = 1;
	r.eth.type = IBV_FLOW_SPEC_ETH;
	r.eth.size = sizeof(r.eth);
	memcpy(r.eth.val.dst_mac, "\x02\xaa\xbb\xcc\xdd\xee", 6);
	memset(r.eth.mask.dst_mac, 0xff, 6);
	r.eth.val.ether_type = htons(0x88b6);
	r.eth.mask.ether_type = 0xffff;
	fl = ibv_create_flow(q, &r.a);
	CHECK(fl != NULL, "ibv_create_flow (destination MAC, EtherType): %s",
		strerror(errno));
	sg = (struct ibv_sge){ .addr = (uintptr_t)in, .length = 256,
		.lkey = mr->lkey };
	rw = (struct ibv_recv_wr){ .wr_id = 5, .sg_list = &sg, .num_sge = 1 };
	CHECK(ibv_post_recv(q, &rw, &rbad) == 0, "raw post_recv");
	/* one frame the flow does not take (another EtherType), then one
	 * it does */
	for (i = 0; i < 2; i++) {
		struct ibv_sge s = { .addr = (uintptr_t)f, .length = 100,
			.lkey = mr->lkey };

		memset(f, 0, 100);
		memcpy(f, r.eth.val.dst_mac, 6);
		memcpy(f + 6, "\x02\x11\x22\x33\x44\x55", 6);
		f[12] = 0x88;
		f[13] = i == 0 ? 0xb7 : 0xb6;
		memset(f + 14, 0x40 + i, 86);
		memset(&w, 0, sizeof(w));
		w.wr_id = 10 + (uint64_t)i;
		w.sg_list = &s;
		w.num_sge = 1;
		w.opcode = IBV_WR_SEND;
		w.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
		CHECK(ibv_post_send(q, &w, &bad) == EINVAL,
			"raw SEND longer than max_inline_data: EINVAL");
		w.send_flags = IBV_SEND_SIGNALED;
		CHECK(ibv_post_send(q, &w, &bad) == 0, "raw SEND %d", i);
	}
	end = time(NULL) + 5;
	while ((got_send < 2 || got_recv < 1) && time(NULL) < end) {
		n = ibv_poll_cq(cq, 1, &wc);
		if (n != 1)
			continue;
		if (wc.opcode == IBV_WC_SEND && wc.status == IBV_WC_SUCCESS)
			got_send++;
		if (wc.opcode == IBV_WC_RECV) {
			got_recv++;
			CHECK(wc.wr_id == 5 && wc.status == IBV_WC_SUCCESS &&
				wc.byte_len == 100 && in[13] == 0xb6 &&
				in[99] == 0x41 && memcmp(in, f, 100) == 0,
				"the frame the flow takes comes back whole "
				"(%u bytes, status %d)", wc.byte_len, wc.status);
		}
	}
	usleep(100000);
	n = ibv_poll_cq(cq, 1, &wc);
	CHECK(got_send == 2 && got_recv == 1 && n == 0,
		"both SENDs complete, one frame received, not the other "
		"(%d, %d, %d)", got_send, got_recv, n);
	CHECK(ibv_destroy_qp(q) == EBUSY, "destroy a raw QP with a flow: EBUSY");
	CHECK(fl != NULL && ibv_destroy_flow(fl) == 0, "ibv_destroy_flow");
	CHECK(ibv_destroy_qp(q) == 0, "destroy the raw QP");
out:
	if (cq)
		ibv_destroy_cq(cq);
}

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
