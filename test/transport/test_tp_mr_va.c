/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * MRs registered with droce_mr_reg_va, whose owner's addresses (local
 * SGEs, ibv_mr.addr) differ from where this process maps the memory, as
 * when a daemon serves another process's MRs: SEND and RECV, WRITE, READ
 * and an atomic whose SGEs use the owner's addresses move the bytes of the
 * host buffers; an SGE with the host address is a local protection error.
 * Copied and then zero-copy transmit.
 */

#include "tp_util.h"

static struct fakelink L;

/* Made-up owner addresses, far from anything malloc hands out. */
#define VA_BASE 0x7000000000ull

struct vbuf {
	uint8_t *p;		/* host */
	uint64_t va;		/* the owner's */
	size_t len;
	struct droce_mr *mr;
};

static void
vbuf_init(struct vbuf *b, struct droce_pd *pd, size_t len, uint64_t va)
{
	b->len = len;
	b->p = aligned_alloc(64, (len + 63) / 64 * 64);
	memset(b->p, 0, len);
	/* keep the host pointer's offset in the page, as a mapping would */
	b->va = va + ((uintptr_t)b->p & 0xfff);
	b->mr = droce_mr_reg_va(pd, b->p, b->va, len, b->va, ACC_ALL);
	CHECK(b->mr != NULL, "mr_reg_va");
	CHECK(b->va != (uint64_t)(uintptr_t)b->p, "va differs from host");
	CHECK_EQ((uintptr_t)droce_mr_to_ibv(b->mr)->addr, b->va,
		"ibv_mr.addr is the owner's");
}

static void
vbuf_fini(struct vbuf *b)
{
	droce_mr_dereg(b->mr);
	free(b->p);
}

static struct ibv_sge
vsge(struct vbuf *b, size_t off, uint32_t len)
{
	struct ibv_sge s = {
		.addr = b->va + off,
		.length = len,
		.lkey = droce_mr_lkey(b->mr),
	};

	return s;
}

/* An RC pair on L, without tbufs: the tests register vbufs. */
static void
pair_make(struct pair *p)
{
	struct pair_cfg c = { .sges = 2, .check_qp = 1 };

	pair_create(&L, p, &c);
}

static int
post1(struct droce_qp *qp, enum ibv_wr_opcode op, struct ibv_sge *s,
		int nsge, uint64_t raddr, uint32_t rkey)
{
	struct ibv_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = op;
	wr.sg_list = s;
	wr.num_sge = nsge;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = rkey;
		wr.wr.atomic.compare_add = 5;
	} else {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
	}
	return droce_qp_post_send(qp, &wr, &bad);
}

/* The status of side's next completion within 100 ms, or -1. */
static enum ibv_wc_status
wait1(struct pair *p, int side)
{
	return pair_status(p, side, 100000000, NULL);
}

static void
test_ops(uint32_t len)
{
	struct pair p;
	struct vbuf a, b;
	struct ibv_sge s[2], r;
	struct ibv_recv_wr rwr = { .wr_id = 1, .sg_list = &r, .num_sge = 1 };
	struct ibv_recv_wr *rbad;
	uint64_t *res, *target;

	pair_make(&p);
	vbuf_init(&a, L.end[0].pd, len + 128, VA_BASE);
	vbuf_init(&b, L.end[1].pd, len + 128, VA_BASE + 0x100000000ull);

	/* SEND of two SGEs into a RECV: gather and scatter by owner VA */
	pattern(a.p, len + 128, len);
	r = vsge(&b, 8, len);
	CHECK_EQ(droce_qp_post_recv(p.qp[1], &rwr, &rbad), 0, "post recv");
	s[0] = vsge(&a, 0, len / 2);
	s[1] = vsge(&a, len / 2 + 16, len - len / 2);
	CHECK_EQ(post1(p.qp[0], IBV_WR_SEND, s, 2, 0, 0), 0, "post send");
	CHECK_EQ(wait1(&p, 0), IBV_WC_SUCCESS, "send wc");
	CHECK_EQ(wait1(&p, 1), IBV_WC_SUCCESS, "recv wc");
	CHECK(memcmp(b.p + 8, a.p, len / 2) == 0 &&
		memcmp(b.p + 8 + len / 2, a.p + len / 2 + 16,
			len - len / 2) == 0, "send data len %u", len);
	CHECK(b.p[7] == 0 && b.p[8 + len] == 0, "send bounds");

	/* WRITE from a's owner VA to b's iova (its owner VA) */
	memset(b.p, 0, b.len);
	pattern(a.p, len + 128, len + 1);
	s[0] = vsge(&a, 32, len);
	CHECK_EQ(post1(p.qp[0], IBV_WR_RDMA_WRITE, s, 1, b.va + 64,
		droce_mr_rkey(b.mr)), 0, "post write");
	CHECK_EQ(wait1(&p, 0), IBV_WC_SUCCESS, "write wc");
	CHECK(memcmp(b.p + 64, a.p + 32, len) == 0, "write data len %u", len);
	CHECK(b.p[63] == 0 && b.p[64 + len] == 0, "write bounds");

	/* READ into a's owner VA */
	memset(a.p, 0, a.len);
	pattern(b.p, len + 128, len + 2);
	s[0] = vsge(&a, 16, len);
	CHECK_EQ(post1(p.qp[0], IBV_WR_RDMA_READ, s, 1, b.va + 8,
		droce_mr_rkey(b.mr)), 0, "post read");
	CHECK_EQ(wait1(&p, 0), IBV_WC_SUCCESS, "read wc");
	CHECK(memcmp(a.p + 16, b.p + 8, len) == 0, "read data len %u", len);
	CHECK(a.p[15] == 0 && a.p[16 + len] == 0, "read bounds");

	/* fetch-add: the original value lands at a's owner VA */
	res = (uint64_t *)(a.p + 64);
	target = (uint64_t *)(b.p + 64);
	*res = 0;
	*target = 100;
	s[0] = vsge(&a, 64, 8);
	CHECK_EQ(post1(p.qp[0], IBV_WR_ATOMIC_FETCH_AND_ADD, s, 1,
		b.va + 64, droce_mr_rkey(b.mr)), 0, "post fetch-add");
	CHECK_EQ(wait1(&p, 0), IBV_WC_SUCCESS, "fetch-add wc");
	CHECK(*res == 100 && *target == 105, "fetch-add %llu %llu",
		(unsigned long long)*res, (unsigned long long)*target);

	vbuf_fini(&a);
	vbuf_fini(&b);
	pair_destroy(&p);
}

/* SGEs that name the host address (outside the owner's range) fail. */
static void
test_host_addr_refused(enum ibv_wr_opcode op)
{
	struct pair p;
	struct vbuf a, b;
	struct ibv_sge s;

	pair_make(&p);
	vbuf_init(&a, L.end[0].pd, 256, VA_BASE);
	vbuf_init(&b, L.end[1].pd, 256, VA_BASE + 0x100000000ull);
	pattern(b.p, 256, 3);
	s = vsge(&a, 0, 64);
	s.addr = (uint64_t)(uintptr_t)a.p;
	CHECK_EQ(post1(p.qp[0], op, &s, 1, b.va, droce_mr_rkey(b.mr)), 0,
		"post");
	CHECK_EQ(wait1(&p, 0), IBV_WC_LOC_PROT_ERR,
		"host address in a local SGE");
	CHECK(a.p[0] == 0 && a.p[63] == 0, "nothing written (op %d)", op);
	CHECK(pattern_ok(b.p, 256, 3), "peer untouched (op %d)", op);
	vbuf_fini(&a);
	vbuf_fini(&b);
	pair_destroy(&p);
}

int
main(void)
{
	static const uint32_t sizes[] = { 1, 64, 1500, 5000, 65536 };
	unsigned int i, zc;

	CHECK_EQ(fl_init(&L, 3, 1500), 0, "fakelink");
	for (zc = 0; zc < 2; zc++) {
		fl_set_zero_copy(&L, zc);
		for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
			test_ops(sizes[i]);
		test_host_addr_refused(IBV_WR_SEND);
		test_host_addr_refused(IBV_WR_RDMA_WRITE);
		test_host_addr_refused(IBV_WR_RDMA_READ);
	}
	fl_fini(&L);
	return check_report("test_tp_mr_va");
}
