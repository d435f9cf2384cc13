/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * flush_pair: IBTA 1.5 FLUSH through ibv_wr_flush, built against rdma-core
 * >= 45's headers (Debian 12's 44 has no ibv_wr_flush: test/verbs/
 * flush-pair.sh unpacks Debian 13's libibverbs-dev for it), run as
 * ibv_rc_pingpong is: [-d DEV] [-g GIDX] [-p PORT] [-n CHUNKS] [-f FILE]
 * [-k] [-D] [SERVER].
 *
 * The server's buffer is FILE mapped shared (-f) and registered for
 * FLUSH to persistence and to global visibility (global only when the
 * device refuses persistence with EINVAL and does not advertise it), or
 * anonymous memory for global visibility (-D: persistence over it must
 * be refused with EINVAL, as droce does). With -D the client checks the
 * posting rules of ibv_wr_flush (a QP without IBV_QP_EX_WITH_FLUSH has
 * no wr_flush, NULL as rdma-core's providers leave a builder the QP did
 * not ask for; a type or a level that does not exist: EINVAL at
 * ibv_wr_complete and nothing of the batch posted; a UD QP cannot ask
 * for it), then writes CHUNKS chunks
 * of 8 KiB each followed by a FLUSH of the chunk or of the whole MR, in
 * one ibv_wr_* batch, and checks each completion (IBV_WC_RDMA_WRITE then
 * IBV_WC_FLUSH). Then a FLUSH to an MR without flush access, which must
 * fail with IBV_WC_REM_ACCESS_ERR. The server checks every byte of its
 * buffer. -k (with -f): the client kills the server (SIGKILL) as soon as
 * the last FLUSH completes; flush-pair.sh then checks the file.
 */

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include <infiniband/verbs.h>

#include "side_channel.h"


#define CHUNK 8192
#define MAX_CHUNKS 64
#define BUF (CHUNK * (MAX_CHUNKS + 2))
/* IB_UVERBS_DEVICE_FLUSH_GLOBAL / _PERSISTENT of device_cap_flags_ex */
#define CAP_FLUSH_GLOBAL (1ULL << 38)
#define CAP_FLUSH_PERSISTENT (1ULL << 39)

struct info {
	uint32_t qpn, psn, rkey, rkey2;
	uint64_t addr, addr2;
	uint8_t gid[16];
	int32_t persist, pid;
};

static const char *dev_name, *file;
static int gidx = 1, chunks = 32, kill_server, droce_rules;
static const char *port = "18515";

#define FAIL(...) do { fprintf(stderr, "FAIL: " __VA_ARGS__); \
	fprintf(stderr, "\n"); exit(1); } while (0)

static void
xfer(int fd, const void *out, void *in, size_t len)
{
	if (side_xfer(fd, out, in, len) != 0)
		FAIL("side channel");
}

/* The byte at offset j of chunk i. */
static uint8_t
pat(int i, int j)
{
	return (uint8_t)((j * 2654435761u + (unsigned int)i * 977u) >> 11);
}

static struct ibv_context *
open_dev(void)
{
	struct ibv_device **l = ibv_get_device_list(NULL);
	struct ibv_context *c = NULL;
	int i;

	for (i = 0; l != NULL && l[i] != NULL; i++)
		if (dev_name == NULL || !strcmp(dev_name,
				ibv_get_device_name(l[i]))) {
			c = ibv_open_device(l[i]);
			break;
		}
	ibv_free_device_list(l);
	if (c == NULL)
		FAIL("no device");
	return c;
}

static void
to_rts(struct ibv_qp *qp, const struct info *me, const struct info *peer,
		int access)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = access;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		FAIL("INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = peer->qpn;
	a.rq_psn = peer->psn;
	a.max_dest_rd_atomic = 16;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.grh.sgid_index = (uint8_t)gidx;
	memcpy(a.ah_attr.grh.dgid.raw, peer->gid, 16);
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		FAIL("RTR");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = me->psn;
	a.max_rd_atomic = 16;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
			IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
			IBV_QP_MAX_QP_RD_ATOMIC))
		FAIL("RTS");
}

static struct ibv_qp *
make_qp(struct ibv_context *c, struct ibv_pd *pd, struct ibv_cq *cq,
		enum ibv_qp_type t, uint64_t ops)
{
	struct ibv_qp_init_attr_ex ia;

	memset(&ia, 0, sizeof(ia));
	ia.qp_type = t;
	ia.send_cq = cq;
	ia.recv_cq = cq;
	ia.cap.max_send_wr = 64;
	ia.cap.max_recv_wr = 4;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	ia.pd = pd;
	ia.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	ia.send_ops_flags = ops;
	return ibv_create_qp_ex(c, &ia);
}

static int
poll_one(struct ibv_cq *cq, struct ibv_wc *wc, int ms)
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

/* A batch that must fail at ibv_wr_complete with EINVAL and post
 * nothing: a WRITE, then a FLUSH of (type, level). */
static void
bad_batch(struct ibv_qp_ex *qx, struct ibv_cq *cq, struct ibv_mr *mr,
		const struct info *peer, uint8_t type, uint8_t level,
		const char *what)
{
	struct ibv_wc wc;
	int rc;

	ibv_wr_start(qx);
	qx->wr_id = 999;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(qx, peer->rkey, peer->addr + (uint64_t)CHUNK *
		(MAX_CHUNKS + 1));
	ibv_wr_set_sge(qx, mr->lkey, (uintptr_t)mr->addr, 64);
	ibv_wr_flush(qx, peer->rkey, peer->addr, 64, type, level);
	rc = ibv_wr_complete(qx);
	if (rc != EINVAL)
		FAIL("%s: ibv_wr_complete gave %d, want EINVAL", what, rc);
	if (poll_one(cq, &wc, 200) != 0)
		FAIL("%s: something of the batch was posted", what);
	printf("refused at ibv_wr_complete, nothing posted: %s\n", what);
}

static void
client(struct ibv_context *c, struct ibv_pd *pd, struct ibv_cq *cq,
		const struct info *me, const struct info *peer, int fd,
		struct ibv_qp *qp)
{
	struct ibv_device_attr_ex dx;
	struct ibv_qp_ex *qx = ibv_qp_to_qp_ex(qp);
	struct ibv_qp *q2;
	struct ibv_mr *mr;
	struct ibv_wc wc;
	uint8_t *src;
	int i, j, rc;

	if (ibv_query_device_ex(c, NULL, &dx))
		FAIL("query_device_ex");
	printf("device_cap_flags_ex %#llx: flush global %d, persistent %d\n",
		(unsigned long long)dx.device_cap_flags_ex,
		!!(dx.device_cap_flags_ex & CAP_FLUSH_GLOBAL),
		!!(dx.device_cap_flags_ex & CAP_FLUSH_PERSISTENT));
	if (!(dx.device_cap_flags_ex & CAP_FLUSH_GLOBAL))
		FAIL("FLUSH_GLOBAL not advertised");
	src = calloc(1, CHUNK * 2);
	mr = ibv_reg_mr(pd, src, CHUNK * 2, IBV_ACCESS_LOCAL_WRITE);
	if (mr == NULL)
		FAIL("reg_mr");

	if (!droce_rules)
		goto data;
	/* posting rules */
	q2 = make_qp(c, pd, cq, IBV_QPT_RC, IBV_QP_EX_WITH_RDMA_WRITE);
	if (q2 == NULL)
		FAIL("second QP");
	/* no builder at all, as rdma-core's providers leave it: librpma
	 * tells a QP that flushes natively by the pointer */
	if (ibv_qp_to_qp_ex(q2)->wr_flush != NULL)
		FAIL("a QP without IBV_QP_EX_WITH_FLUSH has a wr_flush");
	printf("a QP without IBV_QP_EX_WITH_FLUSH: no wr_flush\n");
	ibv_destroy_qp(q2);
	errno = 0;
	q2 = make_qp(c, pd, cq, IBV_QPT_UD, IBV_QP_EX_WITH_SEND |
		IBV_QP_EX_WITH_FLUSH);
	if (q2 != NULL)
		FAIL("a UD QP took IBV_QP_EX_WITH_FLUSH");
	printf("a UD QP with IBV_QP_EX_WITH_FLUSH: refused (%s)\n",
		strerror(errno));
	bad_batch(qx, cq, mr, peer, 0, IBV_FLUSH_RANGE, "placement type 0");
	bad_batch(qx, cq, mr, peer, 4, IBV_FLUSH_RANGE, "placement type 4");
	bad_batch(qx, cq, mr, peer, IBV_FLUSH_GLOBAL, 2, "selectivity 2");
data:

	for (i = 0; i < chunks; i++) {
		uint8_t type = !peer->persist ? IBV_FLUSH_GLOBAL : i % 2 ?
			IBV_FLUSH_PERSISTENT : IBV_FLUSH_PERSISTENT |
			IBV_FLUSH_GLOBAL;
		uint8_t level = i % 3 == 2 ? IBV_FLUSH_MR : IBV_FLUSH_RANGE;
		uint8_t *s = src + (i % 2) * CHUNK;

		for (j = 0; j < CHUNK; j++)
			s[j] = pat(i, j);
		ibv_wr_start(qx);
		qx->wr_id = 2 * (uint64_t)i;
		qx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_rdma_write(qx, peer->rkey, peer->addr +
			(uint64_t)CHUNK * i);
		ibv_wr_set_sge(qx, mr->lkey, (uintptr_t)s, CHUNK);
		qx->wr_id = 2 * (uint64_t)i + 1;
		ibv_wr_flush(qx, peer->rkey, peer->addr + (uint64_t)CHUNK * i,
			CHUNK, type, level);
		rc = ibv_wr_complete(qx);
		if (rc)
			FAIL("chunk %d: ibv_wr_complete %d", i, rc);
		for (j = 0; j < 2; j++) {
			if (poll_one(cq, &wc, 20000) != 1)
				FAIL("chunk %d: no completion", i);
			if (wc.status != IBV_WC_SUCCESS ||
					wc.wr_id != 2 * (uint64_t)i + (uint64_t)j ||
					wc.opcode != (j ? IBV_WC_FLUSH :
					IBV_WC_RDMA_WRITE))
				FAIL("chunk %d: completion %llu status %s "
					"opcode %d", i,
					(unsigned long long)wc.wr_id,
					ibv_wc_status_str(wc.status), wc.opcode);
		}
	}
	if (kill_server) {
		/* as soon as the last FLUSH completed here */
		kill(peer->pid, SIGKILL);
		printf("server killed after the last FLUSH completed\n");
	}
	printf("%d WRITE + FLUSH pairs completed (%s)\n", chunks,
		peer->persist ? "persistence and global visibility" :
		"global visibility");
	if (kill_server)
		return;

	/* the MR without flush access: remote access error */
	ibv_wr_start(qx);
	qx->wr_id = 777;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_flush(qx, peer->rkey2, peer->addr2, 64, IBV_FLUSH_GLOBAL,
		IBV_FLUSH_RANGE);
	if (ibv_wr_complete(qx))
		FAIL("post the refused FLUSH");
	if (poll_one(cq, &wc, 20000) != 1 || wc.wr_id != 777 ||
			wc.status != IBV_WC_REM_ACCESS_ERR)
		FAIL("FLUSH to an MR without flush access: %s",
			ibv_wc_status_str(wc.status));
	printf("FLUSH to an MR without flush access: %s\n",
		ibv_wc_status_str(wc.status));
	xfer(fd, "D", NULL, 1);
	(void)me;
}

static void
server(int fd, uint8_t *buf)
{
	char d;
	int i, j, bad = 0;

	if (recv(fd, &d, 1, MSG_WAITALL) != 1 || d != 'D')
		FAIL("client did not finish");
	for (i = 0; i < MAX_CHUNKS + 2; i++)
		for (j = 0; j < CHUNK; j++) {
			uint8_t want = i < chunks ? pat(i, j) : 0;

			if (buf[(size_t)i * CHUNK + j] != want && bad++ < 5)
				fprintf(stderr, "chunk %d byte %d: %#x, want "
					"%#x\n", i, j, buf[(size_t)i * CHUNK + j],
					want);
		}
	if (bad)
		FAIL("%d bytes wrong", bad);
	printf("server verified %d chunks and the bytes around them\n", chunks);
}

int
main(int argc, char **argv)
{
	const int flush_acc = IBV_ACCESS_FLUSH_GLOBAL | IBV_ACCESS_FLUSH_PERSISTENT;
	struct ibv_device_attr_ex dx;
	struct ibv_context *c;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr = NULL, *mr2;
	struct info me, peer;
	union ibv_gid gid;
	uint8_t *buf, *buf2;
	int opt, fd, acc, base = IBV_ACCESS_LOCAL_WRITE |
		IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	const char *srv;

	while ((opt = getopt(argc, argv, "d:g:p:n:f:kD")) != -1) {
		switch (opt) {
		case 'd': dev_name = optarg; break;
		case 'g': gidx = atoi(optarg); break;
		case 'p': port = optarg; break;
		case 'n': chunks = atoi(optarg); break;
		case 'f': file = optarg; break;
		case 'k': kill_server = 1; break;
		case 'D': droce_rules = 1; break;
		default: return 2;
		}
	}
	if (chunks < 1 || chunks > MAX_CHUNKS)
		return 2;
	srv = optind < argc ? argv[optind] : NULL;
	srand48(getpid());
	c = open_dev();
	pd = ibv_alloc_pd(c);
	cq = ibv_create_cq(c, 128, NULL, NULL, 0);
	if (pd == NULL || cq == NULL || ibv_query_gid(c, 1, gidx, &gid))
		FAIL("setup");
	if (ibv_query_device_ex(c, NULL, &dx))
		FAIL("query_device_ex");
	memset(&me, 0, sizeof(me));
	me.persist = 0;
	if (srv == NULL && file != NULL) {
		int ffd = open(file, O_RDWR | O_CREAT | O_TRUNC, 0600);

		if (ffd < 0 || ftruncate(ffd, BUF) != 0)
			FAIL("%s: %s", file, strerror(errno));
		buf = mmap(NULL, BUF, PROT_READ | PROT_WRITE, MAP_SHARED, ffd, 0);
		if (buf == MAP_FAILED)
			FAIL("mmap %s", file);
		mr = ibv_reg_mr(pd, buf, BUF, base | flush_acc);
		if (mr != NULL) {
			me.persist = 1;
			printf("MR over %s for persistence and global "
				"visibility\n", file);
		} else if (errno == EINVAL &&
				!(dx.device_cap_flags_ex & CAP_FLUSH_PERSISTENT)) {
			printf("persistence refused (EINVAL), as the device "
				"says: global visibility only\n");
		} else {
			FAIL("reg_mr over %s: %s", file, strerror(errno));
		}
	} else {
		buf = mmap(NULL, BUF, PROT_READ | PROT_WRITE, MAP_PRIVATE |
			MAP_ANONYMOUS, -1, 0);
		/* anonymous memory has no storage: persistence refused */
		if (srv == NULL && droce_rules && (ibv_reg_mr(pd, buf, BUF,
				base | flush_acc) != NULL || errno != EINVAL))
			FAIL("persistence over anonymous memory: want EINVAL");
	}
	if (mr == NULL)
		mr = ibv_reg_mr(pd, buf, BUF, base | IBV_ACCESS_FLUSH_GLOBAL);
	buf2 = calloc(1, 4096);
	mr2 = ibv_reg_mr(pd, buf2, 4096, base);
	if (mr == NULL || mr2 == NULL)
		FAIL("reg_mr: %s", strerror(errno));
	qp = make_qp(c, pd, cq, IBV_QPT_RC, IBV_QP_EX_WITH_RDMA_WRITE |
		IBV_QP_EX_WITH_FLUSH);
	if (qp == NULL)
		FAIL("create_qp_ex with IBV_QP_EX_WITH_FLUSH: %s",
			strerror(errno));
	me.qpn = qp->qp_num;
	me.psn = (uint32_t)lrand48() & 0xffffff;
	me.rkey = mr->rkey;
	me.addr = (uintptr_t)buf;
	me.rkey2 = mr2->rkey;
	me.addr2 = (uintptr_t)buf2;
	me.pid = getpid();
	memcpy(me.gid, gid.raw, 16);
	fd = srv ? side_connect(srv, port) : side_accept(port);
	if (fd < 0)
		FAIL("side channel");
	xfer(fd, &me, &peer, sizeof(me));
	acc = base | IBV_ACCESS_FLUSH_GLOBAL |
		(me.persist ? IBV_ACCESS_FLUSH_PERSISTENT : 0);
	to_rts(qp, &me, &peer, acc);
	/* both sides ready before the first WRITE */
	xfer(fd, "R", &opt, 1);
	if (srv != NULL)
		client(c, pd, cq, &me, &peer, fd, qp);
	else
		server(fd, buf);
	close(fd);
	if (srv != NULL && kill_server)
		return 0;
	ibv_destroy_qp(qp);
	ibv_dereg_mr(mr);
	ibv_dereg_mr(mr2);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(c);
	return 0;
}
