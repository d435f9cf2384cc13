/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * verbs_xrc_apps: XRC between two applications attached to one droced
 * (DROCE_DAEMON set), the sender and a child it forks, the target:
 *  - the sender's XRC_SEND QP reaches the child's XRC_RECV QP and SRQ,
 *    as between hosts;
 *  - naming the sender's own XRC SRQ there (another application's, so
 *    another domain's): IBV_WC_REM_ACCESS_ERR, nothing lands in it;
 *  - the child dies holding its domain, XRC SRQ (with receives posted)
 *    and XRC_RECV QP: droced reclaims them, and a SEND to them fails
 *    (had they stayed, it would land).
 * Handles of another application are refused by droced's per-application
 * tables (test/daemon/test_daemon_chan.c checks XRC domains there).
 */

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

#include <infiniband/verbs.h>

static int failed;

#define CHECK(cond, ...) do { \
	int ok_ = (cond); \
	printf("%s: %s: ", who, ok_ ? "ok" : "FAIL"); \
	failed += !ok_; \
	printf(__VA_ARGS__); \
	printf("\n"); \
} while (0)

#define BUF 65536

static const char *who = "sender";
static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_mr *mr;
static struct ibv_cq *cq;
static struct ibv_xrcd *xrcd;
static struct ibv_srq *srq;
static uint8_t *buf;

/* what the target tells the sender */
struct tgt_info {
	uint32_t srqn, qpn;
};

static int
setup(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_xrcd_init_attr xa = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.fd = -1, .oflags = O_CREAT,
	};
	struct ibv_srq_init_attr_ex sa;

	if (list == NULL || list[0] == NULL)
		return -1;
	ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	buf = calloc(1, BUF);
	if (ctx == NULL || buf == NULL || (pd = ibv_alloc_pd(ctx)) == NULL ||
			(mr = ibv_reg_mr(pd, buf, BUF,
			IBV_ACCESS_LOCAL_WRITE)) == NULL ||
			(cq = ibv_create_cq(ctx, 64, NULL, NULL, 0)) == NULL ||
			(xrcd = ibv_open_xrcd(ctx, &xa)) == NULL)
		return -1;
	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = 16;
	sa.attr.max_sge = 1;
	sa.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_XRCD |
		IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_PD;
	sa.srq_type = IBV_SRQT_XRC;
	sa.xrcd = xrcd;
	sa.cq = cq;
	sa.pd = pd;
	srq = ibv_create_srq_ex(ctx, &sa);
	return srq == NULL ? -1 : 0;
}

static struct ibv_qp *
xrc_qp(enum ibv_qp_type t)
{
	struct ibv_qp_init_attr_ex a;

	memset(&a, 0, sizeof(a));
	a.qp_type = t;
	if (t == IBV_QPT_XRC_SEND) {
		a.send_cq = cq;
		a.cap.max_send_wr = 16;
		a.cap.max_send_sge = 1;
		a.comp_mask = IBV_QP_INIT_ATTR_PD;
		a.pd = pd;
	} else {
		a.comp_mask = IBV_QP_INIT_ATTR_XRCD;
		a.xrcd = xrcd;
	}
	return ibv_create_qp_ex(ctx, &a);
}

/* to INIT, RTR and (the sender) RTS, facing dqpn on this same port */
static int
connect_qp(struct ibv_qp *qp, uint32_t dqpn)
{
	int tgt = qp->qp_type == IBV_QPT_XRC_RECV;
	struct ibv_qp_attr a;
	int rc;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RESET;
	rc = ibv_modify_qp(qp, &a, IBV_QP_STATE);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	rc = rc ? rc : ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
		IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
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
	rc = rc ? rc : ibv_query_gid(ctx, 1, 1, &a.ah_attr.grh.dgid);
	rc = rc ? rc : ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV |
		IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		(tgt ? IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER : 0));
	if (rc || tgt)
		return rc;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 100;
	/* 1 s, 7 retries: a loaded 2-core machine may starve droced for
	 * tens of ms, and a dead peer is still seen within 10 s */
	a.timeout = 18;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 4;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
		IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
		IBV_QP_MAX_QP_RD_ATOMIC);
}

/* generous: a loaded 2-core machine */
static int
poll_ms(struct ibv_wc *wc, long ms)
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
		usleep(100);
	}
}

static int
rd(int fd, void *p, size_t n)
{
	return read(fd, p, n) == (ssize_t)n ? 0 : -1;
}

static int
wr(int fd, const void *p, size_t n)
{
	return write(fd, p, n) == (ssize_t)n ? 0 : -1;
}

/* The target: its SRQ and XRC_RECV QP, then death holding them. */
static int
target(int in, int out)
{
	struct ibv_sge s;
	struct ibv_recv_wr w = { .sg_list = &s, .num_sge = 1 }, *bad;
	struct tgt_info ti;
	struct ibv_qp *tgt;
	struct ibv_wc wc;
	uint32_t ini_qpn;
	int i;
	char c;

	who = "target";
	if (setup() != 0 || (tgt = xrc_qp(IBV_QPT_XRC_RECV)) == NULL) {
		CHECK(0, "resources: %s", strerror(errno));
		return 1;
	}
	for (i = 0; i < 8; i++) {
		s = (struct ibv_sge){ (uintptr_t)(buf + 4096 * i), 4096,
			mr->lkey };
		w.wr_id = 100 + i;
		if (ibv_post_srq_recv(srq, &w, &bad) != 0)
			return 1;
	}
	ti.qpn = tgt->qp_num;
	if (ibv_get_srq_num(srq, &ti.srqn) != 0 || wr(out, &ti, sizeof(ti)) ||
			rd(in, &ini_qpn, sizeof(ini_qpn)))
		return 1;
	CHECK(connect_qp(tgt, ini_qpn) == 0, "XRC_RECV connected");
	c = 'r';
	if (wr(out, &c, 1) || rd(in, &c, 1))
		return 1;
	/* after the sender's access error: afresh, both ends at PSN 100 */
	CHECK(connect_qp(tgt, ini_qpn) == 0, "XRC_RECV connected again");
	if (wr(out, &c, 1) || rd(in, &c, 1))
		return 1;
	CHECK(poll_ms(&wc, 20000) == 1 && wc.status == IBV_WC_SUCCESS &&
		wc.wr_id == 100 && wc.byte_len == 64 && buf[0] == 0x5a &&
		wc.qp_num == tgt->qp_num, "the sender's SEND in my SRQ");
	if (wr(out, &c, 1) || rd(in, &c, 1))
		return 1;
	/* die holding the domain, the SRQ and its receives, the QP */
	fflush(stdout);
	_exit(failed ? 1 : 0);
}

static int
post(struct ibv_qp *ini, uint32_t srqn)
{
	struct ibv_sge s = { (uintptr_t)buf, 64, mr->lkey };
	struct ibv_send_wr w = { .sg_list = &s, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;

	w.qp_type.xrc.remote_srqn = srqn;
	return ibv_post_send(ini, &w, &bad);
}

int
main(void)
{
	int to_child[2], to_parent[2], st;
	struct tgt_info ti;
	struct ibv_qp *ini;
	struct ibv_wc wc;
	uint32_t mine;
	pid_t pid;
	char c;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (getenv("DROCE_DAEMON") == NULL) {
		printf("attached only (DROCE_DAEMON)\n");
		return 1;
	}
	if (pipe(to_child) || pipe(to_parent))
		return 1;
	pid = fork();	/* before any verbs: each is its own application */
	if (pid < 0)
		return 1;
	if (pid == 0) {
		close(to_child[1]);
		close(to_parent[0]);
		return target(to_child[0], to_parent[1]);
	}
	close(to_child[0]);
	close(to_parent[1]);
	if (setup() != 0 || (ini = xrc_qp(IBV_QPT_XRC_SEND)) == NULL ||
			ibv_get_srq_num(srq, &mine) != 0 ||
			rd(to_parent[0], &ti, sizeof(ti))) {
		CHECK(0, "resources: %s", strerror(errno));
		goto fail;
	}
	CHECK(connect_qp(ini, ti.qpn) == 0, "XRC_SEND connected");
	if (wr(to_child[1], &ini->qp_num, sizeof(ini->qp_num)) ||
			rd(to_parent[0], &c, 1))
		goto fail;
	/* my own SRQ through the target's QP: not its domain */
	wc.status = IBV_WC_SUCCESS;
	CHECK(post(ini, mine) == 0 && poll_ms(&wc, 20000) == 1 &&
		wc.status == IBV_WC_REM_ACCESS_ERR, "an SRQ of another "
		"application named: %s", ibv_wc_status_str(wc.status));
	CHECK(connect_qp(ini, ti.qpn) == 0, "XRC_SEND connected again");
	if (wr(to_child[1], &c, 1) || rd(to_parent[0], &c, 1))
		goto fail;
	memset(buf, 0x5a, 64);
	wc.status = IBV_WC_GENERAL_ERR;
	CHECK(post(ini, ti.srqn) == 0 && poll_ms(&wc, 20000) == 1 &&
		wc.status == IBV_WC_SUCCESS, "SEND into the target's SRQ (%s)",
		ibv_wc_status_str(wc.status));
	if (wr(to_child[1], &c, 1) || rd(to_parent[0], &c, 1))
		goto fail;
	/* the target dies holding everything */
	if (wr(to_child[1], &c, 1) || waitpid(pid, &st, 0) != pid)
		goto fail;
	pid = 0;
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the target's checks");
	/* what it held is gone: the SEND finds no QP, nor SRQ (kept, the
	 * QP would take it, as a duplicate of PSN 100 or into the SRQ) */
	wc.status = IBV_WC_SUCCESS;
	CHECK(connect_qp(ini, ti.qpn) == 0 && post(ini, ti.srqn) == 0 &&
		poll_ms(&wc, 60000) == 1 && wc.status != IBV_WC_SUCCESS,
		"the dead target's QP and SRQ reclaimed: %s",
		ibv_wc_status_str(wc.status));
	CHECK(ibv_destroy_qp(ini) == 0 && ibv_destroy_srq(srq) == 0 &&
		ibv_close_xrcd(xrcd) == 0, "the sender's XRC objects gone");
	printf("%s\n", failed ? "FAILED" : "PASSED");
	return failed ? 1 : 0;
fail:
	printf("FAILED: the target's pipe or exit\n");
	if (pid > 0)
		kill(pid, SIGKILL);
	return 1;
}
