/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "chan_session.h"

int
cs_rpc(struct cs *s, uint32_t op, const void *req, void *rep, const int *fds,
		int nfds, int *rfds, int *nrfds)
{
	union {
		uint8_t buf[DROCE_CHAN_MSG_MAX];
		struct droce_chan_hdr h;
	} in;
	struct droce_chan_hdr h = { .op = op, .seq = ++s->seq };
	int got[DROCE_CHAN_MAX_FDS], ngot = 0, rc, i;

	rc = droce_chan_send(s->sock, &h, req, (uint32_t)droce_chan_body_len(op, 0),
		fds, nfds);
	if (rc != 0)
		return rc;
	rc = droce_chan_recv(s->sock, in.buf, sizeof(in.buf), 1, got, &ngot);
	if (rc < 0)
		return rc;
	if (in.h.op != op || in.h.seq != h.seq)
		return -EPROTO;
	if (in.h.status != 0) {
		for (i = 0; i < ngot; i++)
			close(got[i]);
		return -in.h.status;
	}
	if (rep != NULL)
		memcpy(rep, in.buf + sizeof(in.h), (size_t)rc);
	if (rfds != NULL) {
		memcpy(rfds, got, sizeof(int) * (size_t)ngot);
		*nrfds = ngot;
	} else {
		for (i = 0; i < ngot; i++)
			close(got[i]);
	}
	return 0;
}

int
cs_open(struct cs *s, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct droce_chan_hello_req r = { .version = DROCE_CHAN_VERSION };
	int fds[DROCE_CHAN_MAX_FDS], n = 0, rc;

	memset(s, 0, sizeof(*s));
	s->async_fd = s->wake_fd = -1;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	s->sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s->sock < 0 || connect(s->sock, (struct sockaddr *)&sa, sizeof(sa)) != 0)
		return -errno;
	snprintf(r.comm, sizeof(r.comm), "chan-test");
	rc = cs_rpc(s, DROCE_OP_HELLO, &r, &s->hello, NULL, 0, fds, &n);
	if (rc != 0)
		return rc;
	if (n < 2)
		return -EPROTO;
	s->region = mmap(NULL, s->hello.region_size, PROT_READ | PROT_WRITE,
		MAP_SHARED, fds[0], 0);
	close(fds[0]);
	if (s->region == MAP_FAILED)
		return -errno;
	s->async_fd = fds[1];
	if (n > 2)
		s->wake_fd = fds[2];
	return 0;
}

void
cs_close(struct cs *s)
{
	if (s->region != NULL && s->region != MAP_FAILED)
		munmap(s->region, s->hello.region_size);
	if (s->async_fd >= 0)
		close(s->async_fd);
	if (s->wake_fd >= 0)
		close(s->wake_fd);
	close(s->sock);
}

int
cs_pd(struct cs *s, uint32_t *pd)
{
	struct droce_chan_handle h;
	int rc = cs_rpc(s, DROCE_OP_ALLOC_PD, NULL, &h, NULL, 0, NULL, NULL);

	*pd = h.handle;
	return rc;
}

int
cs_buf(struct cs *s, uint32_t pd, uint64_t len, struct cs_buf *b)
{
	struct droce_chan_reg_mr_req r = { 0 };
	struct droce_chan_reg_mr_rep p;
	int fd = memfd_create("chan-test", MFD_CLOEXEC | MFD_ALLOW_SEALING), rc;

	if (fd < 0 || ftruncate(fd, (off_t)len) != 0)
		return -errno;
	b->addr = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	b->len = len;
	r.pd = pd;
	r.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	r.addr = (uint64_t)(uintptr_t)b->addr;
	r.len = len;
	r.iova = r.addr;
	r.npieces = 1;
	r.pieces[0].seg = s->next_seg++;
	r.pieces[0].flags = DROCE_PIECE_NEW;
	r.pieces[0].len = len;
	rc = cs_rpc(s, DROCE_OP_REG_MR, &r, &p, &fd, 1, NULL, NULL);
	close(fd);
	b->mr = p.handle;
	b->lkey = p.lkey;
	b->rkey = p.rkey;
	return rc;
}

int
cs_cq(struct cs *s, uint32_t cqe, struct cs_cq *cq)
{
	struct droce_chan_create_cq_req r = { .cqe = cqe, .channel = DROCE_CHAN_NONE };
	struct droce_chan_create_cq_rep p;
	int rc = cs_rpc(s, DROCE_OP_CREATE_CQ, &r, &p, NULL, 0, NULL, NULL);

	if (rc != 0)
		return rc;
	cq->handle = p.handle;
	cq->size = p.size;
	cq->queue = p.queue;
	cq->sh = (void *)(s->region + p.off);
	cq->wc = (void *)(s->region + p.off + DROCE_CHAN_CQ_WC);
	cq->cons = 0;
	return 0;
}

static void
wq_of(struct cs *s, const struct droce_chan_wq_rep *r, struct cs_wq *wq)
{
	wq->sh = (void *)(s->region + r->off);
	wq->slots = s->region + r->off + DROCE_CHAN_WQ_SLOTS;
	wq->size = r->size;
	wq->slot = r->slot;
	wq->prod = 0;
	wq->queue = r->off ? wq->sh->queue : 0;
}

int
cs_qp(struct cs *s, uint32_t pd, uint32_t type, struct cs_cq *cq, struct cs_qp *qp)
{
	struct droce_chan_create_qp_req r = {
		.pd = pd, .qp_type = type, .send_cq = cq->handle,
		.recv_cq = cq->handle, .srq = DROCE_CHAN_NONE,
		.cap = { .max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 2,
			.max_recv_sge = 2, .max_inline_data = 64 },
	};
	struct droce_chan_create_qp_rep p;
	int rc = cs_rpc(s, DROCE_OP_CREATE_QP, &r, &p, NULL, 0, NULL, NULL);

	if (rc != 0)
		return rc;
	qp->handle = p.handle;
	qp->qpn = p.qpn;
	qp->cap = p.cap;
	wq_of(s, &p.sq, &qp->sq);
	wq_of(s, &p.rq, &qp->rq);
	return 0;
}

static int
modify(struct cs *s, struct cs_qp *qp, struct ibv_qp_attr *a, int mask)
{
	struct droce_chan_modify_qp_req r = { .handle = qp->handle, .mask = mask,
		.attr = *a };

	return cs_rpc(s, DROCE_OP_MODIFY_QP, &r, NULL, NULL, 0, NULL, NULL);
}

int
cs_connect(struct cs *s, struct cs_qp *qp, const uint8_t dgid[16], uint32_t dqpn)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			IBV_ACCESS_REMOTE_ATOMIC };
	int rc;

	rc = modify(s, qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
		IBV_QP_ACCESS_FLAGS);
	if (rc != 0)
		return rc;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dqpn;
	a.rq_psn = 0;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.sgid_index = 1;
	a.ah_attr.grh.hop_limit = 64;
	memcpy(a.ah_attr.grh.dgid.raw, dgid, 16);
	rc = modify(s, qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
		IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
		IBV_QP_MIN_RNR_TIMER);
	if (rc != 0)
		return rc;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 0;
	a.max_rd_atomic = 4;
	return modify(s, qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
		IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

static void
doorbell(struct cs *s, struct cs_wq *wq, uint32_t kind, uint32_t handle)
{
	struct droce_chan_region *r = (void *)s->region;
	struct droce_chan_db *db = (void *)(s->region + r->db_off[wq->queue]);
	uint64_t one = 1;

	__atomic_store_n(&wq->sh->prod, wq->prod, __ATOMIC_RELEASE);
	if (__atomic_exchange_n(&wq->sh->rung, 1, __ATOMIC_ACQ_REL) == 0) {
		uint32_t p = db->prod;

		db->ring[p & (DROCE_CHAN_DB_SIZE - 1)] = DROCE_DB(kind, handle);
		__atomic_store_n(&db->prod, p + 1, __ATOMIC_RELEASE);
	}
	if (__atomic_load_n(&r->sleeping, __ATOMIC_SEQ_CST) && s->wake_fd >= 0 &&
			write(s->wake_fd, &one, sizeof(one)) < 0)
		perror("wake");
}

void
cs_post_send(struct cs *s, struct cs_qp *qp, const struct droce_chan_swqe *w,
		const struct ibv_sge *sge)
{
	uint8_t *slot = qp->sq.slots + (qp->sq.prod & (qp->sq.size - 1)) * qp->sq.slot;

	memcpy(slot, w, sizeof(*w));
	if (sge != NULL)
		memcpy(slot + sizeof(*w), sge, w->num_sge * sizeof(*sge));
	qp->sq.prod++;
	doorbell(s, &qp->sq, DROCE_KIND_SQ, qp->handle);
}

void
cs_post_recv(struct cs *s, struct cs_qp *qp, uint64_t wr_id, const struct ibv_sge *sge)
{
	uint8_t *slot = qp->rq.slots + (qp->rq.prod & (qp->rq.size - 1)) * qp->rq.slot;
	struct droce_chan_rwqe w = { .wr_id = wr_id, .num_sge = 1 };

	memcpy(slot, &w, sizeof(w));
	memcpy(slot + sizeof(w), sge, sizeof(*sge));
	qp->rq.prod++;
	doorbell(s, &qp->rq, DROCE_KIND_RQ, qp->handle);
}

int
cs_poll(struct cs_cq *cq, struct ibv_wc *wc, int ms)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		uint32_t prod = __atomic_load_n(&cq->sh->prod, __ATOMIC_ACQUIRE);

		if (prod != cq->cons) {
			*wc = cq->wc[cq->cons & (cq->size - 1)];
			cq->cons++;
			__atomic_store_n(&cq->sh->cons, cq->cons, __ATOMIC_RELEASE);
			return 1;
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 > ms)
			return 0;
		usleep(50);
	}
}

/* ---- a session that moves data, checked ---- */

void
cs_side_open(struct cs_side *x, const char *path)
{
	int rc = cs_open(&x->s, path);

	CS_CHECK(rc == 0, "attach to %s: %s", path, strerror(-rc));
	CS_CHECK(cs_pd(&x->s, &x->pd) == 0, "pd");
	CS_CHECK(cs_buf(&x->s, x->pd, 1 << 20, &x->b) == 0, "reg_mr");
	CS_CHECK(cs_cq(&x->s, 256, &x->cq) == 0, "cq");
	CS_CHECK(cs_qp(&x->s, x->pd, IBV_QPT_RC, &x->cq, &x->qp) == 0, "qp");
}

void
cs_pair(struct cs_side *a, struct cs_side *b)
{
	int rc = cs_connect(&a->s, &a->qp, b->s.hello.gids[1].gid, b->qp.qpn);

	CS_CHECK(rc == 0, "connect a: %s", strerror(-rc));
	rc = cs_connect(&b->s, &b->qp, a->s.hello.gids[1].gid, a->qp.qpn);
	CS_CHECK(rc == 0, "connect b: %s", strerror(-rc));
}

void
cs_expect_wc(struct cs_cq *cq, enum ibv_wc_status st, const char *what)
{
	struct ibv_wc wc;

	CS_CHECK(cs_poll(cq, &wc, 20000) == 1, "%s: no completion", what);
	CS_CHECK(wc.status == st, "%s: status %d, want %d", what, wc.status, st);
}

void
cs_fill(uint8_t *p, size_t n, unsigned int seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(seed * 131 + i * 7);
}

/* WRITE a -> b, SEND b -> a, READ a <- b; every byte checked. */
void
cs_traffic(struct cs_side *a, struct cs_side *b, unsigned int seed)
{
	struct droce_chan_swqe w = { 0 };
	struct ibv_sge sge;
	const size_t n = 65536;

	cs_fill(a->b.addr, n, seed);
	memset(b->b.addr, 0, n);
	sge = (struct ibv_sge){ (uint64_t)(uintptr_t)a->b.addr, (uint32_t)n, a->b.lkey };
	w.wr_id = 1;
	w.opcode = IBV_WR_RDMA_WRITE;
	w.send_flags = IBV_SEND_SIGNALED;
	w.num_sge = 1;
	w.remote_addr = (uint64_t)(uintptr_t)b->b.addr;
	w.rkey = b->b.rkey;
	cs_post_send(&a->s, &a->qp, &w, &sge);
	cs_expect_wc(&a->cq, IBV_WC_SUCCESS, "write");
	CS_CHECK(memcmp(a->b.addr, b->b.addr, n) == 0, "write: bytes differ");

	/* SEND b -> a into a's second half */
	sge = (struct ibv_sge){ (uint64_t)(uintptr_t)a->b.addr + n, (uint32_t)n, a->b.lkey };
	cs_post_recv(&a->s, &a->qp, 7, &sge);
	cs_fill(b->b.addr + n, n, seed + 1);
	sge = (struct ibv_sge){ (uint64_t)(uintptr_t)b->b.addr + n, (uint32_t)n, b->b.lkey };
	w.opcode = IBV_WR_SEND;
	w.remote_addr = 0;
	cs_post_send(&b->s, &b->qp, &w, &sge);
	cs_expect_wc(&b->cq, IBV_WC_SUCCESS, "send");
	cs_expect_wc(&a->cq, IBV_WC_SUCCESS, "recv");
	CS_CHECK(memcmp(a->b.addr + n, b->b.addr + n, n) == 0, "send: bytes differ");

	/* READ b's third quarter into a's */
	cs_fill(b->b.addr + 2 * n, n, seed + 2);
	sge = (struct ibv_sge){ (uint64_t)(uintptr_t)a->b.addr + 2 * n, (uint32_t)n,
		a->b.lkey };
	w.opcode = IBV_WR_RDMA_READ;
	w.remote_addr = (uint64_t)(uintptr_t)b->b.addr + 2 * n;
	w.rkey = b->b.rkey;
	cs_post_send(&a->s, &a->qp, &w, &sge);
	cs_expect_wc(&a->cq, IBV_WC_SUCCESS, "read");
	CS_CHECK(memcmp(a->b.addr + 2 * n, b->b.addr + 2 * n, n) == 0,
		"read: bytes differ");
}
