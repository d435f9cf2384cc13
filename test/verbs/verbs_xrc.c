/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * XRC through the verbs API, where no Debian binary goes: built against
 * the system's libibverbs, run on droce over a loopback port (an XRC_SEND
 * QP connected to an XRC_RECV QP of the same process).
 *  - ibv_open_xrcd: fd -1; a file's fd with O_CREAT, the same inode again
 *    (the same domain), O_EXCL on it (EINVAL), a new inode without
 *    O_CREAT (EAGAIN), a bad fd (EBADF), missing comp_mask bits (EINVAL);
 *    ibv_close_xrcd while an SRQ uses it (EBUSY);
 *  - ibv_get_srq_num: an XRC SRQ's number, EOPNOTSUPP for a basic SRQ;
 *  - SENDs into the SRQ the WR names (completion on the SRQ's CQ with the
 *    XRC_RECV QP's number), RDMA WRITE and READ under the SRQ's PD;
 *  - posting: remote_srqn 0 (EINVAL, bad_wr at it, the WR before it done),
 *    ibv_post_recv on either half (EINVAL); the ibv_wr_* API: without
 *    ibv_wr_set_xrc_srqn ibv_wr_complete fails (EINVAL, nothing posted),
 *    with it the SEND arrives; ibv_wr_set_xrc_srqn on an RC QP fails at
 *    ibv_wr_complete;
 *  - an SRQ of another domain named: the XRC_SEND QP's WR completes with
 *    IBV_WC_REM_ACCESS_ERR;
 *  - ibv_open_qp: a second handle on the XRC_RECV QP outlives the first.
 * The same attached to droced (DROCE_DAEMON set), but ibv_open_qp, which
 * is refused there (EOPNOTSUPP).
 */

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "verbs_check.h"

#define BUF 65536

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_mr *mr;
static uint8_t *buf;

static struct ibv_xrcd *
open_xrcd(int fd, int oflags)
{
	struct ibv_xrcd_init_attr a = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.fd = fd, .oflags = oflags,
	};

	return ibv_open_xrcd(ctx, &a);
}

static struct ibv_srq *
xrc_srq(struct ibv_xrcd *x, struct ibv_cq *cq)
{
	struct ibv_srq_init_attr_ex a;

	memset(&a, 0, sizeof(a));
	a.attr.max_wr = 64;
	a.attr.max_sge = 1;
	a.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_XRCD |
		IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_PD;
	a.srq_type = IBV_SRQT_XRC;
	a.xrcd = x;
	a.cq = cq;
	a.pd = pd;
	return ibv_create_srq_ex(ctx, &a);
}

static struct ibv_qp *
xrc_qp(enum ibv_qp_type t, struct ibv_cq *scq, struct ibv_xrcd *x,
		uint64_t send_ops)
{
	struct ibv_qp_init_attr_ex a;

	memset(&a, 0, sizeof(a));
	a.qp_type = t;
	if (t == IBV_QPT_XRC_SEND) {
		a.send_cq = scq;
		a.cap.max_send_wr = 64;
		a.cap.max_send_sge = 1;
		a.comp_mask = IBV_QP_INIT_ATTR_PD;
		a.pd = pd;
		if (send_ops) {
			a.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
			a.send_ops_flags = send_ops;
		}
	} else {
		a.comp_mask = IBV_QP_INIT_ATTR_XRCD;
		a.xrcd = x;
	}
	return ibv_create_qp_ex(ctx, &a);
}

/* xsrq_pingpong's attribute masks: the minimum of each half */
static int
connect_qp(struct ibv_qp *qp, uint32_t dqpn)
{
	int tgt = qp->qp_type == IBV_QPT_XRC_RECV;
	int rc_qp = qp->qp_type == IBV_QPT_RC;	/* both halves' attributes */
	struct ibv_qp_attr a;
	int rc;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = tgt ? IBV_ACCESS_REMOTE_WRITE |
		IBV_ACCESS_REMOTE_READ : 0;
	rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
		IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (rc)
		return rc;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dqpn;
	a.rq_psn = 100;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.sgid_index = 1;
	a.ah_attr.grh.hop_limit = 64;
	if (ibv_query_gid(ctx, 1, 1, &a.ah_attr.grh.dgid))
		return -1;
	rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
		IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | (tgt || rc_qp ?
		IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER : 0));
	if (rc)
		return rc;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 100;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 4;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
		IBV_QP_TIMEOUT | (tgt ? 0 : IBV_QP_RETRY_CNT |
		IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC));
}

static int
poll_ms(struct ibv_cq *cq, struct ibv_wc *wc, long ms)
{
	struct timespec t0, t;
	int n;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		n = ibv_poll_cq(cq, 1, wc);
		if (n != 0)
			return n;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 +
				(t.tv_nsec - t0.tv_nsec) / 1000000 > ms)
			return 0;
	}
}

static int
poll_one(struct ibv_cq *cq, struct ibv_wc *wc)
{
	return poll_ms(cq, wc, 5000);
}

static int
srq_recv(struct ibv_srq *srq, uint64_t id, size_t off, uint32_t len)
{
	struct ibv_sge s = { (uintptr_t)(buf + off), len, mr->lkey };
	struct ibv_recv_wr w = { .wr_id = id, .sg_list = &s, .num_sge = 1 };
	struct ibv_recv_wr *bad;

	return ibv_post_srq_recv(srq, &w, &bad);
}

static void
test_xrcd_open(void)
{
	char path[] = "/tmp/droce-xrcd.XXXXXX", path2[] = "/tmp/droce-xrcd.XXXXXX";
	struct ibv_xrcd_init_attr a;
	struct ibv_xrcd *x1, *x2, *x3;
	int fd, fd2;

	fd = mkstemp(path);
	fd2 = mkstemp(path2);
	x1 = open_xrcd(-1, 0);
	CHECK(x1 != NULL, "fd -1: a new domain (%s)", strerror(errno));
	CHECK(x1 == NULL || ibv_close_xrcd(x1) == 0, "close it");
	x1 = open_xrcd(fd, O_CREAT);
	CHECK(x1 != NULL, "a file with O_CREAT (%s)", strerror(errno));
	x2 = open_xrcd(fd, 0);
	CHECK(x2 != NULL, "the same inode again without O_CREAT");
	errno = 0;
	x3 = open_xrcd(fd, O_CREAT | O_EXCL);
	CHECK(x3 == NULL && errno == EINVAL, "O_EXCL on an inode with a "
		"domain: EINVAL (%s)", strerror(errno));
	errno = 0;
	x3 = open_xrcd(fd2, 0);
	CHECK(x3 == NULL && errno == EAGAIN, "a new inode without O_CREAT: "
		"EAGAIN (%s)", strerror(errno));
	errno = 0;
	x3 = open_xrcd(1000, O_CREAT);
	CHECK(x3 == NULL && errno == EBADF, "a bad fd: EBADF (%s)",
		strerror(errno));
	memset(&a, 0, sizeof(a));
	a.comp_mask = IBV_XRCD_INIT_ATTR_FD;
	a.fd = -1;
	errno = 0;
	CHECK(ibv_open_xrcd(ctx, &a) == NULL && errno == EINVAL,
		"no OFLAGS in comp_mask: EINVAL (%s)", strerror(errno));
	CHECK(x2 == NULL || ibv_close_xrcd(x2) == 0, "close the second open");
	CHECK(x1 == NULL || ibv_close_xrcd(x1) == 0, "close the first");
	errno = 0;
	x1 = open_xrcd(fd, 0);
	CHECK(x1 == NULL && errno == EAGAIN, "closed: the inode has no "
		"domain any more (EAGAIN)");
	close(fd);
	close(fd2);
	unlink(path);
	unlink(path2);
}

/* What main's steps share: the CQs, the domains (x and xs one inode's
 * two opens, y another), an XRC SRQ in x and one in y with their
 * numbers, and the first XRC pair (ini sends, tgt in xs receives). */
struct xrc_objs {
	struct ibv_cq *scq, *rcq, *cq2;
	struct ibv_xrcd *x, *xs, *y;
	struct ibv_srq *srq, *srq_y;
	uint32_t srqn, srqn_y;
	struct ibv_qp *ini, *tgt;
};

/* The XRC SRQs and their numbers; a basic SRQ has none; a domain with an
 * SRQ stays open. 0, or -1 without SRQs. */
static int
make_srqs(struct xrc_objs *o)
{
	struct ibv_srq_init_attr bsa = { .attr = { .max_wr = 4,
		.max_sge = 1 } };
	struct ibv_srq *basic;
	uint32_t num;

	o->srq = o->x ? xrc_srq(o->x, o->rcq) : NULL;
	o->srq_y = o->y ? xrc_srq(o->y, o->rcq) : NULL;
	CHECK(o->srq != NULL && o->srq_y != NULL, "XRC SRQs (%s)",
		strerror(errno));
	if (o->srq == NULL || o->srq_y == NULL)
		return -1;
	CHECK(ibv_get_srq_num(o->srq, &o->srqn) == 0 && o->srqn != 0 &&
		ibv_get_srq_num(o->srq_y, &o->srqn_y) == 0 &&
		o->srqn_y != o->srqn,
		"ibv_get_srq_num: %u and %u", o->srqn, o->srqn_y);
	basic = ibv_create_srq(pd, &bsa);
	CHECK(basic != NULL && ibv_get_srq_num(basic, &num) == EOPNOTSUPP,
		"ibv_get_srq_num of a basic SRQ: EOPNOTSUPP");
	if (basic)
		ibv_destroy_srq(basic);
	CHECK(ibv_close_xrcd(o->y) == EBUSY,
		"close a domain with an SRQ: EBUSY");
	return 0;
}

/* The first pair, connected: 0, or -1 without its QPs. */
static int
make_pair(struct xrc_objs *o)
{
	o->ini = xrc_qp(IBV_QPT_XRC_SEND, o->scq, NULL, 0);
	/* the XRC_RECV QP in the second open of the same inode */
	o->tgt = xrc_qp(IBV_QPT_XRC_RECV, NULL, o->xs, 0);
	CHECK(o->ini != NULL && o->tgt != NULL,
		"XRC_SEND and XRC_RECV QPs (%s)", strerror(errno));
	if (o->ini == NULL || o->tgt == NULL)
		return -1;
	CHECK(o->ini->qp_type == IBV_QPT_XRC_SEND && o->tgt->qp_type ==
		IBV_QPT_XRC_RECV && o->tgt->pd == NULL, "their types");
	CHECK(connect_qp(o->ini, o->tgt->qp_num) == 0 &&
		connect_qp(o->tgt, o->ini->qp_num) == 0,
		"connected with xsrq_pingpong's masks");
	return 0;
}

/* SENDs into the SRQ: completed on its CQ, with the XRC_RECV QP's
 * number. */
static void
sends_into_srq(struct xrc_objs *o)
{
	struct ibv_send_wr w, *bad;
	struct ibv_sge s;
	struct ibv_wc wc;
	int i;

	for (i = 0; i < 4; i++)
		srq_recv(o->srq, 100 + i, 4096 + 2048 * i, 2048);
	for (i = 0; i < 4; i++) {
		memset(buf, 'a' + i, 1500);
		s = (struct ibv_sge){ (uintptr_t)buf, 100 + 400 * i, mr->lkey };
		memset(&w, 0, sizeof(w));
		w.wr_id = i;
		w.opcode = IBV_WR_SEND;
		w.sg_list = &s;
		w.num_sge = 1;
		w.send_flags = IBV_SEND_SIGNALED;
		w.qp_type.xrc.remote_srqn = o->srqn;
		CHECK(ibv_post_send(o->ini, &w, &bad) == 0, "post SEND %d", i);
		CHECK(poll_one(o->rcq, &wc) == 1 &&
			wc.status == IBV_WC_SUCCESS &&
			wc.opcode == IBV_WC_RECV && wc.wr_id == 100u + i &&
			wc.byte_len == 100u + 400 * i &&
			wc.qp_num == o->tgt->qp_num,
			"received %d from the SRQ on its CQ, qp_num the "
			"XRC_RECV QP's (status %d, qp %u)", i, wc.status,
			wc.qp_num);
		CHECK(buf[4096 + 2048 * i] == 'a' + i &&
			buf[4096 + 2048 * i + 99 + 400 * i] == 'a' + i &&
			buf[4096 + 2048 * i + 100 + 400 * i] == 0,
			"SEND %d's bytes", i);
		CHECK(poll_one(o->scq, &wc) == 1 &&
			wc.status == IBV_WC_SUCCESS &&
			wc.wr_id == (uint64_t)i, "SEND %d completes", i);
	}
}

/* WRITE and READ, checked under the SRQ's PD. */
static void
rdma_over_xrc(struct xrc_objs *o)
{
	struct ibv_send_wr w, *bad;
	struct ibv_sge s;
	struct ibv_wc wc;

	memset(buf, 0x5a, 300);
	s = (struct ibv_sge){ (uintptr_t)buf, 300, mr->lkey };
	memset(&w, 0, sizeof(w));
	w.opcode = IBV_WR_RDMA_WRITE;
	w.sg_list = &s;
	w.num_sge = 1;
	w.send_flags = IBV_SEND_SIGNALED;
	w.wr.rdma.remote_addr = (uintptr_t)buf + 32768;
	w.wr.rdma.rkey = mr->rkey;
	w.qp_type.xrc.remote_srqn = o->srqn;
	CHECK(ibv_post_send(o->ini, &w, &bad) == 0 &&
		poll_one(o->scq, &wc) == 1 &&
		wc.status == IBV_WC_SUCCESS && buf[32768] == 0x5a &&
		buf[32768 + 299] == 0x5a && buf[32768 + 300] == 0,
		"RDMA WRITE over XRC");
	s = (struct ibv_sge){ (uintptr_t)buf + 40000, 300, mr->lkey };
	w.opcode = IBV_WR_RDMA_READ;
	CHECK(ibv_post_send(o->ini, &w, &bad) == 0 &&
		poll_one(o->scq, &wc) == 1 &&
		wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RDMA_READ &&
		buf[40000] == 0x5a && buf[40299] == 0x5a && buf[40300] == 0,
		"RDMA READ over XRC");
}

/* Posting rules: remote_srqn 0 (EINVAL, bad_wr at it, the WR before it
 * done); neither half takes receives, XRC_RECV no sends. */
static void
posting_rules(struct xrc_objs *o)
{
	struct ibv_send_wr w[2], *bad;
	struct ibv_recv_wr rw, *rbad;
	struct ibv_sge s;
	struct ibv_wc wc;

	srq_recv(o->srq, 200, 4096, 2048);
	s = (struct ibv_sge){ (uintptr_t)buf, 8, mr->lkey };
	memset(w, 0, sizeof(w));
	w[0].wr_id = 10;
	w[0].opcode = IBV_WR_SEND;
	w[0].sg_list = &s;
	w[0].num_sge = 1;
	w[0].send_flags = IBV_SEND_SIGNALED;
	w[0].qp_type.xrc.remote_srqn = o->srqn;
	w[0].next = &w[1];
	w[1] = w[0];
	w[1].wr_id = 11;
	w[1].next = NULL;
	w[1].qp_type.xrc.remote_srqn = 0;
	bad = NULL;
	CHECK(ibv_post_send(o->ini, &w[0], &bad) == EINVAL && bad == &w[1],
		"remote_srqn 0: EINVAL, bad_wr at it");
	CHECK(poll_one(o->scq, &wc) == 1 && wc.wr_id == 10 &&
		wc.status == IBV_WC_SUCCESS, "the WR before it done");
	CHECK(poll_one(o->rcq, &wc) == 1 && wc.wr_id == 200, "and received");
	memset(&rw, 0, sizeof(rw));
	rw.sg_list = &s;
	rw.num_sge = 1;
	CHECK(ibv_post_recv(o->ini, &rw, &rbad) == EINVAL &&
		ibv_post_recv(o->tgt, &rw, &rbad) == EINVAL,
		"ibv_post_recv on XRC_SEND and XRC_RECV: EINVAL");
	CHECK(ibv_post_send(o->tgt, &w[0], &bad) == EINVAL,
		"ibv_post_send on XRC_RECV: EINVAL");
}

/* The ibv_wr_* API on a second pair (its XRC_RECV QP in x): without
 * ibv_wr_set_xrc_srqn nothing is posted, with it the SEND arrives; an
 * SRQ of another domain is refused by the target. */
static void
wr_api_xrc(struct xrc_objs *o)
{
	struct ibv_qp *ini2, *tgt2;
	struct ibv_qp_ex *qx;
	struct ibv_wc wc;

	ini2 = xrc_qp(IBV_QPT_XRC_SEND, o->scq, NULL, IBV_QP_EX_WITH_SEND);
	tgt2 = xrc_qp(IBV_QPT_XRC_RECV, NULL, o->x, 0);
	CHECK(ini2 != NULL && tgt2 != NULL &&
		connect_qp(ini2, tgt2->qp_num) == 0 &&
		connect_qp(tgt2, ini2->qp_num) == 0, "a second XRC pair, "
		"ibv_wr_* on its XRC_SEND QP");
	if (ini2 == NULL || tgt2 == NULL)
		return;
	qx = ibv_qp_to_qp_ex(ini2);
	srq_recv(o->srq, 300, 4096, 2048);
	ibv_wr_start(qx);
	qx->wr_id = 30;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qx);
	ibv_wr_set_sge(qx, mr->lkey, (uintptr_t)buf, 8);
	CHECK(ibv_wr_complete(qx) == EINVAL,
		"ibv_wr_complete without ibv_wr_set_xrc_srqn: EINVAL");
	CHECK(poll_ms(o->scq, &wc, 200) == 0, "nothing posted");
	ibv_wr_start(qx);
	qx->wr_id = 31;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qx);
	ibv_wr_set_xrc_srqn(qx, o->srqn);
	ibv_wr_set_sge(qx, mr->lkey, (uintptr_t)buf, 8);
	CHECK(ibv_wr_complete(qx) == 0, "with ibv_wr_set_xrc_srqn");
	CHECK(poll_one(o->scq, &wc) == 1 && wc.wr_id == 31 &&
		wc.status == IBV_WC_SUCCESS && poll_one(o->rcq, &wc) == 1 &&
		wc.wr_id == 300 && wc.qp_num == tgt2->qp_num,
		"sent and received through the second pair");
	/* an SRQ of another domain: refused by the target */
	ibv_wr_start(qx);
	qx->wr_id = 32;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qx);
	ibv_wr_set_xrc_srqn(qx, o->srqn_y);
	ibv_wr_set_sge(qx, mr->lkey, (uintptr_t)buf, 8);
	CHECK(ibv_wr_complete(qx) == 0, "post to another domain's SRQ");
	CHECK(poll_one(o->scq, &wc) == 1 && wc.wr_id == 32 &&
		wc.status == IBV_WC_REM_ACCESS_ERR,
		"another domain's SRQ: IBV_WC_REM_ACCESS_ERR (%d)",
		wc.status);
	ibv_destroy_qp(ini2);
	ibv_destroy_qp(tgt2);
}

/* ibv_wr_set_xrc_srqn on an RC QP fails at ibv_wr_complete. */
static void
wr_api_rc(struct xrc_objs *o)
{
	struct ibv_qp_init_attr_ex a;
	struct ibv_qp_ex *qx;
	struct ibv_qp *rc;

	memset(&a, 0, sizeof(a));
	a.qp_type = IBV_QPT_RC;
	a.send_cq = a.recv_cq = o->cq2;
	a.cap.max_send_wr = 4;
	a.cap.max_recv_wr = 4;
	a.cap.max_send_sge = a.cap.max_recv_sge = 1;
	a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	a.pd = pd;
	a.send_ops_flags = IBV_QP_EX_WITH_SEND;
	rc = ibv_create_qp_ex(ctx, &a);
	CHECK(rc != NULL, "an RC QP with ibv_wr_*");
	if (rc == NULL)
		return;
	qx = ibv_qp_to_qp_ex(rc);
	CHECK(connect_qp(rc, rc->qp_num) == 0, "RC to itself");
	ibv_wr_start(qx);
	ibv_wr_send(qx);
	ibv_wr_set_sge(qx, mr->lkey, (uintptr_t)buf, 8);
	CHECK(ibv_wr_complete(qx) == 0, "an RC SEND posts");
	ibv_wr_start(qx);
	ibv_wr_send(qx);
	ibv_wr_set_xrc_srqn(qx, o->srqn);
	ibv_wr_set_sge(qx, mr->lkey, (uintptr_t)buf, 8);
	CHECK(ibv_wr_complete(qx) == EINVAL,
		"ibv_wr_set_xrc_srqn on RC: EINVAL at ibv_wr_complete");
	ibv_destroy_qp(rc);
}

/* ibv_open_qp: a second handle on the XRC_RECV QP outlives the first
 * (attached: refused). Either way the first pair's tgt is destroyed. */
static void
open_qp(struct xrc_objs *o, int attached)
{
	struct ibv_qp_open_attr oa;
	struct ibv_send_wr w, *bad;
	struct ibv_sge s = { (uintptr_t)buf, 8, mr->lkey };
	struct ibv_wc wc;
	struct ibv_qp *tgt2;

	memset(&oa, 0, sizeof(oa));
	oa.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD |
		IBV_QP_OPEN_ATTR_TYPE;
	oa.qp_num = o->tgt->qp_num;
	oa.xrcd = o->y;
	oa.qp_type = IBV_QPT_XRC_RECV;
	errno = 0;
	CHECK(ibv_open_qp(ctx, &oa) == NULL && errno == (attached ?
		EOPNOTSUPP : ENOENT), "ibv_open_qp in another domain: %s",
		attached ? "EOPNOTSUPP attached" : "ENOENT");
	oa.xrcd = o->x;	/* the same inode as xs */
	tgt2 = ibv_open_qp(ctx, &oa);
	if (attached) {
		CHECK(tgt2 == NULL && errno == EOPNOTSUPP,
			"attached: ibv_open_qp EOPNOTSUPP");
		CHECK(ibv_destroy_qp(o->tgt) == 0, "destroy XRC_RECV");
		return;
	}
	CHECK(tgt2 != NULL && tgt2->qp_num == o->tgt->qp_num &&
		tgt2->qp_type == IBV_QPT_XRC_RECV, "ibv_open_qp");
	CHECK(ibv_destroy_qp(o->tgt) == 0, "destroy the first handle");
	if (tgt2 == NULL)
		return;
	srq_recv(o->srq, 400, 4096, 2048);
	memset(&w, 0, sizeof(w));
	w.wr_id = 40;
	w.opcode = IBV_WR_SEND;
	w.sg_list = &s;
	w.num_sge = 1;
	w.send_flags = IBV_SEND_SIGNALED;
	w.qp_type.xrc.remote_srqn = o->srqn;
	CHECK(ibv_post_send(o->ini, &w, &bad) == 0 &&
		poll_one(o->rcq, &wc) == 1 && wc.wr_id == 400 &&
		wc.qp_num == tgt2->qp_num, "the QP serves on through the "
		"opened handle");
	poll_one(o->scq, &wc);
	CHECK(ibv_destroy_qp(tgt2) == 0, "destroy the last handle");
}

int
main(void)
{
	char path[] = "/tmp/droce-xrcd.XXXXXX";
	struct ibv_device **list;
	struct ibv_device_attr da;
	struct xrc_objs o;
	int n, fd, attached;

	setvbuf(stdout, NULL, _IOLBF, 0);
	list = ibv_get_device_list(&n);
	if (list == NULL || n < 1) {
		printf("FAIL: no device\n");
		return 1;
	}
	ctx = ibv_open_device(list[0]);
	pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	buf = aligned_alloc(4096, BUF);
	memset(buf, 0, BUF);
	mr = pd ? ibv_reg_mr(pd, buf, BUF, IBV_ACCESS_LOCAL_WRITE |
		IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ) : NULL;
	if (mr == NULL) {
		printf("FAIL: resources: %s\n", strerror(errno));
		return 1;
	}
	attached = getenv("DROCE_DAEMON") != NULL;
	CHECK(ibv_query_device(ctx, &da) == 0 &&
		(da.device_cap_flags & IBV_DEVICE_XRC), "IBV_DEVICE_XRC");
	test_xrcd_open();

	memset(&o, 0, sizeof(o));
	o.scq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	o.rcq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	o.cq2 = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	fd = mkstemp(path);
	o.x = open_xrcd(fd, O_CREAT);
	o.xs = open_xrcd(fd, O_CREAT);	/* the same domain */
	o.y = open_xrcd(-1, O_CREAT);
	if (make_srqs(&o) != 0 || make_pair(&o) != 0)
		goto out;
	sends_into_srq(&o);
	rdma_over_xrc(&o);
	posting_rules(&o);
	wr_api_xrc(&o);
	wr_api_rc(&o);
	open_qp(&o, attached);
	CHECK(ibv_destroy_qp(o.ini) == 0, "destroy XRC_SEND");
	CHECK(ibv_destroy_cq(o.rcq) == EBUSY, "an XRC SRQ's CQ: EBUSY");
	CHECK(ibv_destroy_srq(o.srq) == 0 && ibv_destroy_srq(o.srq_y) == 0,
		"destroy the SRQs");
	CHECK(ibv_close_xrcd(o.x) == 0 && ibv_close_xrcd(o.xs) == 0 &&
		ibv_close_xrcd(o.y) == 0, "close the domains");
	CHECK(ibv_destroy_cq(o.rcq) == 0 && ibv_destroy_cq(o.scq) == 0 &&
		ibv_destroy_cq(o.cq2) == 0, "destroy the CQs");
	close(fd);
	unlink(path);
out:
	CHECK(ibv_dereg_mr(mr) == 0 && ibv_dealloc_pd(pd) == 0,
		"dereg MR, dealloc PD");
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
