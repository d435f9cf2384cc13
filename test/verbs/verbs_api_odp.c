/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/* verbs_api's case on on-demand paging (verbs_api.c runs it). */

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <infiniband/verbs.h>

#include "verbs_api.h"

/* The device's odp_caps: ODP, implicit ODP and RC WRITE in process, none
 * attached. */
static void
odp_caps(int attached)
{
	struct ibv_device_attr_ex da;

	memset(&da, 0, sizeof(da));
	CHECK(ibv_query_device_ex(ctx, NULL, &da) == 0 &&
		!!(da.odp_caps.general_caps & IBV_ODP_SUPPORT) == !attached &&
		!!(da.odp_caps.general_caps & IBV_ODP_SUPPORT_IMPLICIT) ==
		!attached && !!(da.odp_caps.per_transport_caps.rc_odp_caps &
		IBV_ODP_SUPPORT_WRITE) == !attached,
		"odp_caps %s (general 0x%lx, rc 0x%x)", attached ? "none attached" :
		"ODP, implicit, RC WRITE", (unsigned long)da.odp_caps.general_caps,
		da.odp_caps.per_transport_caps.rc_odp_caps);
}

/*
 * 64 KB through the implicit MR, from and to pages never touched: a
 * WRITE, then a READ back, many frames each (the rest of the message
 * faulted in with its first piece).
 */
static void
odp_implicit_64k(struct ibv_qp *x, struct ibv_cq *cq, struct ibv_mr *imp,
		size_t pg)
{
	size_t big = 65536;
	uint8_t *a = mmap(NULL, big, PROT_READ | PROT_WRITE,
		MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *b = mmap(NULL, big, PROT_READ | PROT_WRITE,
		MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *c = mmap(NULL, big, PROT_READ | PROT_WRITE,
		MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct ibv_sge s = { .length = (uint32_t)big, .lkey = imp->lkey };
	struct ibv_send_wr w = { .wr_id = 11, .sg_list = &s, .num_sge = 1,
		.send_flags = IBV_SEND_SIGNALED }, *bad;
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

/* ibv_advise_mr on r over m (its second page a hole): a mapped page
 * prefetched; the hole and a bad lkey refused */
static void
odp_advise(uint8_t *m, size_t pg, struct ibv_mr *r)
{
	struct ibv_sge sg;

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
}

/*
 * The local side: a WRITE gathered from all three pages of m (r), sent a
 * frame at a time, each faulting its own pages: the frames of the first
 * page go, the hole's is a local protection error. On a pair of its own,
 * *x2 and *y2, which the caller destroys.
 */
static void
odp_gather_hole(struct ibv_cq *cq, uint8_t *m, size_t pg, struct ibv_mr *r,
		struct ibv_mr *imp, struct ibv_qp **x2, struct ibv_qp **y2)
{
	uint8_t *dst;
	struct ibv_sge s3 = { .addr = (uintptr_t)m,
		.length = (uint32_t)(3 * pg), .lkey = r->lkey };
	struct ibv_send_wr w = { .wr_id = 9, .sg_list = &s3, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED },
		*bad;
	struct ibv_wc wc;

	*x2 = make_qp(cq, cq, NULL);
	*y2 = make_qp(cq, cq, NULL);
	if (*x2 == NULL || *y2 == NULL || to_init(*x2) || to_init(*y2) ||
			to_rts(*x2, (*y2)->qp_num) ||
			to_rts(*y2, (*x2)->qp_num)) {
		CHECK(0, "odp: second pair: %s", strerror(errno));
		return;
	}
	dst = aligned_alloc(4096, 3 * pg);
	w.wr.rdma.remote_addr = (uintptr_t)dst;
	w.wr.rdma.rkey = imp->rkey;
	CHECK(dst != NULL && ibv_post_send(*x2, &w, &bad) == 0 &&
		poll_n(cq, &wc, 1, 10000) == 1 && wc.wr_id == 9 &&
		wc.status == IBV_WC_LOC_PROT_ERR,
		"a WRITE gathered across the ODP MR's hole: local "
		"protection error, no crash");
	free(dst);
}

/*
 * On-demand paging (in process; attached: refused, EOPNOTSUPP): the
 * device says so; an ODP MR pins nothing, so it may span a hole; a WRITE
 * faults fresh pages in and lands; a WRITE into the hole is a remote
 * access error, not a crash; implicit ODP covers any buffer;
 * ibv_advise_mr prefetches and checks its lkeys.
 */
void
test_odp(void)
{
	int attached = getenv("DROCE_DAEMON") != NULL;
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
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

	odp_caps(attached);
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
	odp_implicit_64k(x, cq, imp, pg);
	odp_advise(m, pg, r);
	/* last: the error leaves x in ERR */
	CHECK(write8(x, cq, m + pg + 8, r->rkey) == IBV_WC_REM_ACCESS_ERR,
		"a WRITE into the ODP MR's hole: remote access error, no crash");
	odp_gather_hole(cq, m, pg, r, imp, &x2, &y2);
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
