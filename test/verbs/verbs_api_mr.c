/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * verbs_api's cases on memory (verbs_api.c runs them):
 *  - SysV shared memory and ibv_rereg_mr;
 *  - MR access rules; a bad rkey completes with REM_ACCESS_ERR and flushes
 *    what follows;
 *  - ibv_reg_mr faults the region in (as a kernel provider pins it) and
 *    refuses, with EFAULT, memory that is not mapped or, for a writable
 *    MR, not writable;
 *  - memory windows: type 1 (ibv_bind_mw) and type 2 (BIND_MW WR,
 *    SEND_WITH_INV), writes in, out of and after them.
 */

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/shm.h>

#include <infiniband/verbs.h>

#include "verbs_api.h"

/*
 * SysV shared memory registered (UCX's memory pools: hugetlb where it can),
 * in pieces that begin inside a huge page: RDMA WRITE and READ through the
 * connected pair reach exactly the bytes named. Attached, droced maps
 * the segment itself, at huge-page-aligned addresses (doc/daemon.md).
 */
void
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
 * ibv_rereg_mr: a new range (the same ibv_mr, new keys: the new rkey
 * reaches the new range, the old one nothing), a new PD, new access;
 * bad flags refused with the MR as it was.
 */
void
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

void
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

void
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
void
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
