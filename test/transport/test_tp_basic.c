/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * Every operation end to end over a perfect fake link: RC SEND, SEND with
 * immediate and with invalidate, WRITE, WRITE with immediate, READ,
 * compare-swap, fetch-add, inline, zero-length, multi-MTU and SGE lists;
 * UC SEND/WRITE; UD SEND with the GRH. Data and completion fields checked.
 */

#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "tp_util.h"

static struct fakelink L;

/* A pair of type t on L, without buffers (each test has its own). */
static void
pair_make(struct pair *p, enum ibv_qp_type t)
{
	struct pair_cfg c = {
		.type = t, .cqe = 256, .send_wr = 64, .sges = 4,
		.max_inline = 128, .check_qp = 1,
	};

	pair_create(&L, p, &c);
}

static void
post_recv(struct droce_qp *qp, struct tbuf *b, size_t off, uint32_t len,
		uint64_t id)
{
	struct ibv_sge s = sge_of(b, off, len);
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &s, .num_sge = 1 };
	struct ibv_recv_wr *bad;

	CHECK_EQ(droce_qp_post_recv(qp, &wr, &bad), 0, "post_recv");
}

static int
post(struct droce_qp *qp, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;

	return droce_qp_post_send(qp, wr, &bad);
}

/* A signaled one-SGE RDMA WR (WRITE or READ) to raddr under rkey. */
static void
rdma_wr(struct ibv_send_wr *wr, struct ibv_sge *s, enum ibv_wr_opcode op,
		uint64_t id, const void *raddr, uint32_t rkey)
{
	wr_signaled(wr, s, op, id);
	wr->wr.rdma.remote_addr = (uint64_t)(uintptr_t)raddr;
	wr->wr.rdma.rkey = rkey;
}

static void
test_send(enum ibv_qp_type t, uint32_t len, int imm, int inl)
{
	struct pair p;
	struct tbuf sb, rb;
	struct ibv_sge s;
	struct ibv_send_wr wr;
	struct ibv_wc wc;
	uint32_t extra = t == IBV_QPT_UD ? DROCE_GRH_LEN : 0;

	pair_make(&p, t);
	tbuf_init(&sb, L.end[0].pd, len + 1, ACC_ALL);
	tbuf_init(&rb, L.end[1].pd, len + extra + 1, ACC_ALL);
	pattern(sb.p, len, len);
	post_recv(p.qp[1], &rb, 0, len + extra, 77);
	s = sge_of(&sb, 0, len);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 42;
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.opcode = imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND;
	wr.imm_data = 0x01020304;
	wr.send_flags = IBV_SEND_SIGNALED | (inl ? IBV_SEND_INLINE : 0);
	struct droce_ah *ah = NULL;
	if (t == IBV_QPT_UD) {
		struct droce_av av;

		fl_av_to(&L, 0, &av);
		ah = droce_ah_create(L.end[0].pd, &av);
		wr.wr.ud.ah = droce_ah_to_ibv(ah);
		wr.wr.ud.remote_qpn = droce_qp_num(p.qp[1]);
		wr.wr.ud.remote_qkey = 0x11111111;
	}
	CHECK_EQ(post(p.qp[0], &wr), 0, "post send");
	if (inl)
		memset(sb.p, 0xee, len);	/* inline: reusable at once */
	CHECK_EQ(wait_wc(&L, p.cq[0], &wc, 100000000), 0, "send completion");
	CHECK(wc.wr_id == 42 && wc.status == IBV_WC_SUCCESS &&
		wc.opcode == IBV_WC_SEND, "send wc: id %llu status %d op %d",
		(unsigned long long)wc.wr_id, wc.status, wc.opcode);
	CHECK_EQ(wait_wc(&L, p.cq[1], &wc, 100000000), 0, "recv completion");
	CHECK(wc.wr_id == 77 && wc.status == IBV_WC_SUCCESS &&
		wc.opcode == IBV_WC_RECV && wc.byte_len == len + extra,
		"recv wc type %d len %u: status %d op %d byte_len %u", t, len,
		wc.status, wc.opcode, wc.byte_len);
	CHECK(!!(wc.wc_flags & IBV_WC_WITH_IMM) == imm &&
		(!imm || wc.imm_data == 0x01020304), "imm flags %x",
		wc.wc_flags);
	if (t == IBV_QPT_UD) {
		CHECK(wc.wc_flags & IBV_WC_GRH, "GRH flag");
		CHECK_EQ(wc.src_qp, droce_qp_num(p.qp[0]), "src_qp");
		/* GRH: 20 zero bytes then the IPv4 header, source 10.0.0.1 */
		CHECK(rb.p[20] == 0x45 && rb.p[32] == 10 && rb.p[35] == 1,
			"GRH content");
		droce_ah_destroy(ah);
	}
	if (!inl)
		CHECK(pattern_ok(rb.p + extra, len, len), "data type %d len %u",
			t, len);
	CHECK(rb.p[len + extra] == 0, "no overrun");
	tbuf_fini(&sb);
	tbuf_fini(&rb);
	pair_destroy(&p);
}

static void
test_write(enum ibv_qp_type t, uint32_t len, int imm)
{
	struct pair p;
	struct tbuf sb, rb, rr;
	struct ibv_sge s[3];
	struct ibv_send_wr wr;
	struct ibv_wc wc;
	uint32_t a = len / 3, b = len / 3, c = len - a - b;

	pair_make(&p, t);
	tbuf_init(&sb, L.end[0].pd, len + 64, ACC_ALL);
	tbuf_init(&rb, L.end[1].pd, len + 64, ACC_ALL);
	tbuf_init(&rr, L.end[1].pd, 16, ACC_ALL);
	pattern(sb.p, len + 64, 7 + len);
	if (imm)
		post_recv(p.qp[1], &rr, 0, 16, 5);
	/* three SGEs with gaps: gather from non-contiguous memory */
	s[0] = sge_of(&sb, 0, a);
	s[1] = sge_of(&sb, a + 16, b);
	s[2] = sge_of(&sb, a + b + 32, c);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 9;
	wr.sg_list = s;
	wr.num_sge = 3;
	wr.opcode = imm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
	wr.imm_data = 0xa0b0c0d0;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)rb.p + 8;
	wr.wr.rdma.rkey = droce_mr_rkey(rb.mr);
	CHECK_EQ(post(p.qp[0], &wr), 0, "post write");
	CHECK_EQ(wait_wc(&L, p.cq[0], &wc, 100000000), 0, "write completion");
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RDMA_WRITE,
		"write wc status %d op %d", wc.status, wc.opcode);
	if (imm) {
		CHECK_EQ(wait_wc(&L, p.cq[1], &wc, 100000000), 0, "imm recv");
		CHECK(wc.status == IBV_WC_SUCCESS &&
			wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM &&
			(wc.wc_flags & IBV_WC_WITH_IMM) &&
			wc.imm_data == 0xa0b0c0d0 && wc.byte_len == len,
			"write imm wc status %d op %d len %u", wc.status,
			wc.opcode, wc.byte_len);
	} else {
		fl_run_idle(&L, 10000000);
	}
	CHECK(memcmp(rb.p + 8, sb.p, a) == 0 &&
		memcmp(rb.p + 8 + a, sb.p + a + 16, b) == 0 &&
		memcmp(rb.p + 8 + a + b, sb.p + a + b + 32, c) == 0,
		"write data len %u", len);
	CHECK(rb.p[7] == 0 && rb.p[8 + len] == 0, "write bounds");
	tbuf_fini(&sb);
	tbuf_fini(&rb);
	tbuf_fini(&rr);
	pair_destroy(&p);
}

static void
test_read(uint32_t len)
{
	struct pair p;
	struct tbuf lb, rb;
	struct ibv_sge s;
	struct ibv_send_wr wr;
	struct ibv_wc wc;

	pair_make(&p, IBV_QPT_RC);
	tbuf_init(&lb, L.end[0].pd, len + 1, ACC_ALL);
	tbuf_init(&rb, L.end[1].pd, len + 1, ACC_ALL);
	pattern(rb.p, len, 99 + len);
	s = sge_of(&lb, 0, len);
	rdma_wr(&wr, &s, IBV_WR_RDMA_READ, 3, rb.p, droce_mr_rkey(rb.mr));
	CHECK_EQ(post(p.qp[0], &wr), 0, "post read");
	CHECK_EQ(wait_wc(&L, p.cq[0], &wc, 100000000), 0, "read completion");
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RDMA_READ &&
		wc.byte_len == len, "read wc status %d op %d len %u",
		wc.status, wc.opcode, wc.byte_len);
	CHECK(pattern_ok(lb.p, len, 99 + len), "read data len %u", len);
	CHECK(lb.p[len] == 0, "read bounds");
	tbuf_fini(&lb);
	tbuf_fini(&rb);
	pair_destroy(&p);
}

static void
test_atomics(void)
{
	struct pair p;
	struct tbuf lb, rb;
	struct ibv_sge s;
	struct ibv_send_wr wr;
	struct ibv_wc wc;
	uint64_t *target, *res;
	int i;

	pair_make(&p, IBV_QPT_RC);
	tbuf_init(&lb, L.end[0].pd, 64, ACC_ALL);
	tbuf_init(&rb, L.end[1].pd, 64, ACC_ALL);
	target = (uint64_t *)(rb.p + 8);
	res = (uint64_t *)lb.p;
	*target = 100;
	for (i = 0; i < 10; i++) {
		s = sge_of(&lb, 0, 8);
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = (uint64_t)i;
		wr.sg_list = &s;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr.atomic.remote_addr = (uint64_t)(uintptr_t)target;
		wr.wr.atomic.rkey = droce_mr_rkey(rb.mr);
		wr.wr.atomic.compare_add = 5;
		CHECK_EQ(post(p.qp[0], &wr), 0, "post fetch-add");
		CHECK_EQ(wait_wc(&L, p.cq[0], &wc, 100000000), 0, "fadd wc");
		CHECK(wc.status == IBV_WC_SUCCESS &&
			wc.opcode == IBV_WC_FETCH_ADD && wc.byte_len == 8,
			"fadd wc %d %d", wc.status, wc.opcode);
		CHECK_EQ(*res, 100 + 5 * (uint64_t)i, "fetch-add original");
	}
	CHECK_EQ(*target, 150, "fetch-add result");
	/* compare-swap: one that matches, one that does not */
	wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	wr.wr.atomic.compare_add = 150;
	wr.wr.atomic.swap = 7;
	CHECK_EQ(post(p.qp[0], &wr), 0, "post cmp-swap");
	CHECK_EQ(wait_wc(&L, p.cq[0], &wc, 100000000), 0, "cs wc");
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_COMP_SWAP,
		"cs wc");
	CHECK(*res == 150 && *target == 7, "cmp-swap swapped");
	wr.wr.atomic.compare_add = 150;
	wr.wr.atomic.swap = 9;
	CHECK_EQ(post(p.qp[0], &wr), 0, "post cmp-swap 2");
	CHECK_EQ(wait_wc(&L, p.cq[0], &wc, 100000000), 0, "cs wc 2");
	CHECK(*res == 7 && *target == 7, "cmp-swap no swap");
	tbuf_fini(&lb);
	tbuf_fini(&rb);
	pair_destroy(&p);
}

/* SEND with invalidate of a type 2 window bound at the responder. */
static void
test_mw_inv(void)
{
	struct pair p;
	struct tbuf sb, rb, wb;
	struct droce_mw *mw;
	struct ibv_sge s;
	struct ibv_send_wr wr;
	struct ibv_wc wc;
	uint32_t rkey;

	pair_make(&p, IBV_QPT_RC);
	tbuf_init(&sb, L.end[0].pd, 256, ACC_ALL);
	tbuf_init(&rb, L.end[1].pd, 256, ACC_ALL);
	tbuf_init(&wb, L.end[1].pd, 4096, ACC_ALL | IBV_ACCESS_MW_BIND);
	mw = droce_mw_alloc(L.end[1].pd, IBV_MW_TYPE_2);
	CHECK(mw != NULL, "mw alloc");
	/* side 1 binds the window over 1 KB of wb through its QP */
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.bind_mw.mw = droce_mw_to_ibv(mw);
	rkey = (droce_mw_rkey(mw) & ~0xffu) | 0x5a;
	wr.bind_mw.rkey = rkey;
	wr.bind_mw.bind_info.mr = droce_mr_to_ibv(wb.mr);
	wr.bind_mw.bind_info.addr = (uint64_t)(uintptr_t)wb.p + 1024;
	wr.bind_mw.bind_info.length = 1024;
	wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
	CHECK_EQ(post(p.qp[1], &wr), 0, "post bind");
	CHECK_EQ(wait_wc(&L, p.cq[1], &wc, 10000000), 0, "bind wc");
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_BIND_MW,
		"bind wc status %d", wc.status);
	CHECK_EQ(droce_mw_rkey(mw), rkey, "window rkey");
	/* a WRITE through the window lands in it */
	pattern(sb.p, 256, 3);
	s = sge_of(&sb, 0, 256);
	rdma_wr(&wr, &s, IBV_WR_RDMA_WRITE, 0, wb.p + 1024, rkey);
	CHECK_EQ(post(p.qp[0], &wr), 0, "write via mw");
	CHECK_EQ(wait_wc(&L, p.cq[0], &wc, 100000000), 0, "write via mw wc");
	CHECK(wc.status == IBV_WC_SUCCESS, "write via mw status %d", wc.status);
	CHECK(pattern_ok(wb.p + 1024, 256, 3), "write via mw data");
	/* SEND with invalidate kills the window */
	post_recv(p.qp[1], &rb, 0, 256, 8);
	wr.opcode = IBV_WR_SEND_WITH_INV;
	wr.invalidate_rkey = rkey;
	CHECK_EQ(post(p.qp[0], &wr), 0, "send with inv");
	CHECK_EQ(wait_wc(&L, p.cq[0], &wc, 100000000), 0, "send inv wc");
	CHECK_EQ(wait_wc(&L, p.cq[1], &wc, 100000000), 0, "recv inv wc");
	CHECK(wc.status == IBV_WC_SUCCESS && (wc.wc_flags & IBV_WC_WITH_INV) &&
		wc.invalidated_rkey == rkey, "recv inv wc flags %x rkey %x",
		wc.wc_flags, wc.invalidated_rkey);
	/* now a WRITE through it fails with a remote access error */
	wr.opcode = IBV_WR_RDMA_WRITE;
	CHECK_EQ(post(p.qp[0], &wr), 0, "write after inv");
	CHECK_EQ(wait_wc(&L, p.cq[0], &wc, 100000000), 0, "write after inv wc");
	CHECK_EQ(wc.status, IBV_WC_REM_ACCESS_ERR, "write after invalidate");
	CHECK_EQ(droce_qp_state(p.qp[0]), IBV_QPS_ERR, "requester in ERR");
	droce_mw_dealloc(mw);
	tbuf_fini(&sb);
	tbuf_fini(&rb);
	tbuf_fini(&wb);
	pair_destroy(&p);
}

/* LOCAL_INV of a type 2 window at the responder, by its own QP: the
 * window's rkey stops working for the peer. */
static void
test_mw_local_inv(void)
{
	struct pair p;
	struct tbuf sb, wb;
	struct droce_mw *mw;
	struct ibv_sge s;
	struct ibv_send_wr wr;
	struct ibv_wc wc;
	uint32_t rkey;

	pair_make(&p, IBV_QPT_RC);
	tbuf_init(&sb, L.end[0].pd, 256, ACC_ALL);
	tbuf_init(&wb, L.end[1].pd, 4096, ACC_ALL | IBV_ACCESS_MW_BIND);
	mw = droce_mw_alloc(L.end[1].pd, IBV_MW_TYPE_2);
	CHECK(mw != NULL, "mw alloc");
	memset(&wr, 0, sizeof(wr));
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.bind_mw.mw = droce_mw_to_ibv(mw);
	rkey = (droce_mw_rkey(mw) & ~0xffu) | 0x33;
	wr.bind_mw.rkey = rkey;
	wr.bind_mw.bind_info.mr = droce_mr_to_ibv(wb.mr);
	wr.bind_mw.bind_info.addr = (uint64_t)(uintptr_t)wb.p;
	wr.bind_mw.bind_info.length = 2048;
	wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
	CHECK_EQ(post(p.qp[1], &wr), 0, "post bind");
	CHECK_EQ(wait_wc(&L, p.cq[1], &wc, 10000000), 0, "bind wc");
	pattern(sb.p, 256, 5);
	s = sge_of(&sb, 0, 256);
	rdma_wr(&wr, &s, IBV_WR_RDMA_WRITE, 0, wb.p, rkey);
	CHECK_EQ(post(p.qp[0], &wr), 0, "write via mw");
	CHECK_EQ(wait_wc(&L, p.cq[0], &wc, 100000000), 0, "write wc");
	CHECK(wc.status == IBV_WC_SUCCESS && pattern_ok(wb.p, 256, 5),
		"a WRITE through the window");
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 9;
	wr.opcode = IBV_WR_LOCAL_INV;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.invalidate_rkey = rkey;
	CHECK_EQ(post(p.qp[1], &wr), 0, "post local inv");
	CHECK_EQ(wait_wc(&L, p.cq[1], &wc, 10000000), 0, "local inv wc");
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_LOCAL_INV &&
		wc.wr_id == 9, "LOCAL_INV completes: status %d opcode %d",
		wc.status, wc.opcode);
	pattern(sb.p, 256, 6);
	rdma_wr(&wr, &s, IBV_WR_RDMA_WRITE, 0, wb.p, rkey);
	CHECK_EQ(post(p.qp[0], &wr), 0, "write after local inv");
	CHECK_EQ(wait_wc(&L, p.cq[0], &wc, 100000000), 0, "write wc 2");
	CHECK_EQ(wc.status, IBV_WC_REM_ACCESS_ERR, "the rkey is dead");
	CHECK(pattern_ok(wb.p, 256, 5), "nothing placed after LOCAL_INV");
	droce_mw_dealloc(mw);
	tbuf_fini(&sb);
	tbuf_fini(&wb);
	pair_destroy(&p);
}

/* Type 1 window: bound with droce_mw_bind1 (ibv_bind_mw), used, unbound. */
static void
test_mw_type1(void)
{
	struct pair p;
	struct tbuf sb, wb;
	struct droce_mw *mw;
	struct ibv_mw_bind b;
	struct ibv_sge s;
	struct ibv_send_wr wr, *bad;
	struct ibv_wc wc;
	uint32_t rkey = 0, old;

	pair_make(&p, IBV_QPT_RC);
	tbuf_init(&sb, L.end[0].pd, 256, ACC_ALL);
	tbuf_init(&wb, L.end[1].pd, 4096, ACC_ALL | IBV_ACCESS_MW_BIND);
	mw = droce_mw_alloc(L.end[1].pd, IBV_MW_TYPE_1);
	CHECK(mw != NULL, "type 1 mw");
	old = droce_mw_rkey(mw);
	memset(&b, 0, sizeof(b));
	b.wr_id = 5;
	b.send_flags = IBV_SEND_SIGNALED;
	b.bind_info.mr = droce_mr_to_ibv(wb.mr);
	b.bind_info.addr = (uint64_t)(uintptr_t)wb.p + 512;
	b.bind_info.length = 512;
	b.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
	CHECK_EQ(droce_mw_bind1(p.qp[1], mw, &b, &rkey), 0, "bind type 1");
	CHECK(rkey != old && (rkey >> 8) == (old >> 8), "new key byte");
	CHECK_EQ(wait_wc(&L, p.cq[1], &wc, 10000000), 0, "bind wc");
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_BIND_MW &&
		wc.wr_id == 5, "type 1 bind completion");
	pattern(sb.p, 256, 9);
	s = sge_of(&sb, 0, 256);
	rdma_wr(&wr, &s, IBV_WR_RDMA_WRITE, 0, wb.p + 512, rkey);
	CHECK_EQ(droce_qp_post_send(p.qp[0], &wr, &bad), 0, "write via type 1");
	CHECK_EQ(wait_wc(&L, p.cq[0], &wc, 100000000), 0, "write wc");
	CHECK_EQ(wc.status, IBV_WC_SUCCESS, "write through a type 1 window");
	CHECK(pattern_ok(wb.p + 512, 256, 9), "data through the window");
	/* the old key no longer works; outside the window neither */
	wr.wr.rdma.rkey = old;
	CHECK_EQ(droce_qp_post_send(p.qp[0], &wr, &bad), 0, "write old key");
	CHECK_EQ(wait_wc(&L, p.cq[0], &wc, 100000000), 0, "old key wc");
	CHECK_EQ(wc.status, IBV_WC_REM_ACCESS_ERR, "stale window key refused");
	droce_mw_dealloc(mw);
	tbuf_fini(&sb);
	tbuf_fini(&wb);
	pair_destroy(&p);
}

struct dereg_arg {
	struct droce_mr *mr;
	volatile int done;
};

static void *
dereg_thread(void *arg)
{
	struct dereg_arg *d = arg;

	CHECK_EQ(droce_mr_dereg(d->mr), 0, "dereg with frames in flight");
	__atomic_store_n(&d->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static uint64_t
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * Zero-copy frames still in flight read the MR when they leave (the fake
 * link reads them at delivery): deregistering it waits for them, up to
 * DROCE_MR_ZC_WAIT_MS; past that it returns and the MR's bookkeeping stays
 * until the last frame lets go (ASan would see it freed early).
 */
static void
test_dereg_waits(int give_up)
{
	struct pair p;
	struct tbuf sb, rb;
	struct ibv_sge s;
	struct ibv_send_wr wr;
	struct ibv_wc wc;
	struct dereg_arg d = { 0 };
	pthread_t th;
	uint64_t t0;
	int blocked;

	pair_make(&p, IBV_QPT_RC);
	tbuf_init(&sb, L.end[0].pd, 4096, ACC_ALL);
	tbuf_init(&rb, L.end[1].pd, 4096, ACC_ALL);
	pattern(sb.p, 4096, 99);
	s = sge_of(&sb, 0, 4096);
	rdma_wr(&wr, &s, IBV_WR_RDMA_WRITE, 1, rb.p, droce_mr_rkey(rb.mr));
	CHECK_EQ(post(p.qp[0], &wr), 0, "post write");
	fl_step(&L, 0);		/* sent, not delivered: the link holds them */
	CHECK(L.inflight[0] != NULL && L.inflight[0]->nspan > 0,
		"frames in flight by reference");
	d.mr = sb.mr;
	t0 = mono_ms();
	if (give_up) {
		/* nobody delivers: dereg gives up waiting */
		dereg_thread(&d);
		CHECK(mono_ms() - t0 >= DROCE_MR_ZC_WAIT_MS / 2,
			"dereg waited for the frames (%llu ms)",
			(unsigned long long)(mono_ms() - t0));
	} else {
		CHECK_EQ(pthread_create(&th, NULL, dereg_thread, &d), 0,
			"thread");
		usleep(20000);
		blocked = !__atomic_load_n(&d.done, __ATOMIC_ACQUIRE);
		/* a verdict only if this thread was not itself held up
		 * past the wait */
		if (mono_ms() - t0 < DROCE_MR_ZC_WAIT_MS * 3 / 4)
			CHECK(blocked, "dereg returned with frames in flight");
	}
	/* the frames leave with the data the MR held */
	CHECK_EQ(wait_wc(&L, p.cq[0], &wc, 100000000), 0, "write completion");
	CHECK_EQ(wc.status, IBV_WC_SUCCESS, "write status");
	if (!give_up) {
		pthread_join(th, NULL);
		CHECK(d.done, "dereg returned");
	}
	CHECK(pattern_ok(rb.p, 4096, 99), "data after dereg");
	free(sb.p);
	tbuf_fini(&rb);
	pair_destroy(&p);
}

/*
 * The MR a posted WRITE gathers from is deregistered while the message is
 * still going out: the frames not yet built find its key gone, and the WR
 * completes with a local protection error, the QP in error (the lkey is
 * checked at post, and again for every frame, by copy or by reference).
 */
static void
test_dereg_mid_message(void)
{
	const uint32_t len = 1 << 20;	/* more frames than one window */
	struct pair p;
	struct tbuf sb, rb;
	struct ibv_sge s;
	struct ibv_send_wr wr;
	struct ibv_wc wc;

	pair_make(&p, IBV_QPT_RC);
	tbuf_init(&sb, L.end[0].pd, len, ACC_ALL);
	tbuf_init(&rb, L.end[1].pd, len, ACC_ALL);
	pattern(sb.p, len, 5);
	s = sge_of(&sb, 0, len);
	rdma_wr(&wr, &s, IBV_WR_RDMA_WRITE, 77, rb.p, droce_mr_rkey(rb.mr));
	CHECK_EQ(post(p.qp[0], &wr), 0, "post 1 MB write");
	fl_step(&L, 0);
	CHECK(L.inflight[0] != NULL, "first frames sent");
	/* with frames by reference in flight this waits, then gives up */
	CHECK_EQ(droce_mr_dereg(sb.mr), 0, "dereg mid-message");
	CHECK_EQ(wait_wc(&L, p.cq[0], &wc, 100000000), 0, "completion");
	CHECK_EQ(wc.wr_id, 77, "its WR");
	CHECK_EQ(wc.status, IBV_WC_LOC_PROT_ERR, "local protection error");
	CHECK_EQ(droce_qp_state(p.qp[0]), IBV_QPS_ERR, "QP in error");
	/* the frames that left before arrive, with the MR's data */
	fl_run_idle(&L, 1000000000ull);
	CHECK(pattern_ok(rb.p, 1024, 5), "first frame's data");
	free(sb.p);
	tbuf_fini(&rb);
	pair_destroy(&p);
}

/*
 * QPs on one queue take turns at the wire: with every QP's window full of
 * work, each one's frames leave within the first progress calls, not only
 * after the first QP has sent all it had (ACKs reopen its window at every
 * step, and a QP kept off the wire that long misses its ACK timeout and,
 * under loss, its retry count).
 */
static void
test_fair_turns(void)
{
	enum { NQP = 4, NWR = 64, LEN = 4096 };
	struct pair p[NQP];
	struct tbuf sb, rb;
	struct ibv_sge s;
	struct ibv_send_wr wr;
	struct droce_tp_stats st;
	struct ibv_wc wc;
	int i, k, got;

	tbuf_init(&sb, L.end[0].pd, LEN, ACC_ALL);
	tbuf_init(&rb, L.end[1].pd, (size_t)LEN * NQP, ACC_ALL);
	pattern(sb.p, LEN, 3);
	s = sge_of(&sb, 0, LEN);
	for (i = 0; i < NQP; i++) {
		pair_make(&p[i], IBV_QPT_RC);
		rdma_wr(&wr, &s, IBV_WR_RDMA_WRITE, 0, rb.p + (size_t)i * LEN,
			droce_mr_rkey(rb.mr));
		for (k = 0; k < NWR; k++) {
			wr.wr_id = (uint64_t)k;
			CHECK_EQ(post(p[i].qp[0], &wr), 0, "post write");
		}
	}
	/* one progress call sends 64 frames (of 1024 posted); the next
	 * step delivers them, 2 us later */
	fl_step(&L, 0);
	fl_step(&L, 2000);
	for (i = 0; i < NQP; i++) {
		droce_qp_stats(p[i].qp[1], &st);
		CHECK(st.rx_pkts > 0, "QP %d of %d sent in the first calls "
			"(%llu frames arrived)", i, NQP,
			(unsigned long long)st.rx_pkts);
	}
	CHECK_EQ(fl_run_idle(&L, 10000000000ull), 0, "all sent");
	for (i = 0; i < NQP; i++) {
		for (got = 0; droce_cq_poll(p[i].cq[0], &wc, 1) == 1; got++)
			CHECK_EQ(wc.status, IBV_WC_SUCCESS, "write status");
		CHECK_EQ(got, NWR, "every write completed");
		CHECK(pattern_ok(rb.p + (size_t)i * LEN, LEN, 3), "data");
		/* per-QP transmit counters: the requester's WRITEs, the
		 * responder's ACKs (all it sends here) */
		droce_qp_stats(p[i].qp[0], &st);
		CHECK(st.tx_pkts >= NWR && st.tx_bytes >= (uint64_t)NWR * LEN,
			"QP %d counted its WRITEs sent (%llu frames, %llu bytes)",
			i, (unsigned long long)st.tx_pkts,
			(unsigned long long)st.tx_bytes);
		droce_qp_stats(p[i].qp[1], &st);
		CHECK(st.tx_pkts > 0 && st.tx_pkts == st.acks_tx,
			"QP %d's responder counted its ACKs as sent (%llu, %llu)",
			i, (unsigned long long)st.tx_pkts,
			(unsigned long long)st.acks_tx);
	}
	for (i = 0; i < NQP; i++)
		pair_destroy(&p[i]);
	tbuf_fini(&sb);
	tbuf_fini(&rb);
}

static uint64_t
zc_frames(void)
{
	struct droce_tp_stats st;
	uint64_t n = 0;
	int s;

	for (s = 0; s < 2; s++) {
		droce_tp_queue_stats(L.end[s].q, &st);
		n += st.tx_zc_pkts;
	}
	return n;
}

/* A UD QP through INIT (the Q_Key fl_connect gives), RTR and RTS. */
static void
ud_up(struct droce_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
		.qkey = 0x11111111 };

	CHECK_EQ(droce_qp_modify(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
		IBV_QP_PORT | IBV_QP_QKEY, NULL), 0, "UD INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	CHECK_EQ(droce_qp_modify(qp, &a, IBV_QP_STATE, NULL), 0, "UD RTR");
	a.qp_state = IBV_QPS_RTS;
	CHECK_EQ(droce_qp_modify(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN, NULL), 0,
		"UD RTS");
}

/*
 * QP numbers come back only after every slot of the queue was taken in
 * turn and the generations went round: 20000 QPs created and destroyed
 * one after another all get numbers of their own. And a datagram sent to
 * a destroyed UD QP's number reaches none of the QPs created after it (a
 * NIC's numbers cycle; droce's gave the lowest free one back at once, so
 * a frame in flight for a QP that went reached the next one created,
 * maybe another application's).
 */
static void
test_qpn_cycle(void)
{
	static uint32_t seen[20000];
	struct ibv_qp_init_attr ia;
	struct droce_tp_stats st0, st1;
	struct droce_cq *cq = droce_cq_create(L.end[1].dev, 0, 64);
	struct pair p;
	struct tbuf sb, rb;
	struct droce_qp *later[4];
	struct droce_av av;
	struct droce_ah *ah;
	struct ibv_send_wr wr;
	struct ibv_sge s;
	struct ibv_wc wc;
	uint32_t i, k, old;

	memset(&ia, 0, sizeof(ia));
	ia.qp_type = IBV_QPT_UD;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 4;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	for (i = 0; i < 20000; i++) {
		struct droce_qp *qp = droce_qp_create(L.end[1].pd, &ia, cq, cq,
			NULL);

		CHECK(qp != NULL, "QP %u", i);
		seen[i] = droce_qp_num(qp);
		CHECK(seen[i] != 0 && seen[i] < 0xffffff, "QPN %x", seen[i]);
		droce_qp_destroy(qp);
	}
	for (i = 0; i < 20000; i++)	/* sorted, then no two alike */
		for (k = i; k > 0 && seen[k - 1] > seen[k]; k--) {
			old = seen[k];
			seen[k] = seen[k - 1];
			seen[k - 1] = old;
		}
	for (i = 1; i < 20000; i++)
		CHECK(seen[i] != seen[i - 1], "QPN %x given twice", seen[i]);

	/* a datagram to a UD QP that went */
	pair_make(&p, IBV_QPT_UD);
	tbuf_init(&sb, L.end[0].pd, 64, ACC_ALL);
	tbuf_init(&rb, L.end[1].pd, 4096, ACC_ALL);
	old = droce_qp_num(p.qp[1]);
	droce_qp_destroy(p.qp[1]);
	for (i = 0; i < 4; i++) {
		later[i] = droce_qp_create(L.end[1].pd, &ia, p.cq[1], p.cq[1],
			NULL);
		CHECK(later[i] != NULL && droce_qp_num(later[i]) != old,
			"a QP created after QPN %x went took it", old);
		ud_up(later[i]);
		post_recv(later[i], &rb, (size_t)i * 1024, 1024, 300 + i);
	}
	fl_av_to(&L, 0, &av);
	ah = droce_ah_create(L.end[0].pd, &av);
	s = sge_of(&sb, 0, 64);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 9;
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.ud.ah = droce_ah_to_ibv(ah);
	wr.wr.ud.remote_qpn = old;
	wr.wr.ud.remote_qkey = 0x11111111;
	droce_tp_queue_stats(L.end[1].q, &st0);
	CHECK_EQ(post(p.qp[0], &wr), 0, "send to the QPN that went");
	CHECK_EQ(wait_wc(&L, p.cq[0], &wc, 100000000), 0, "sent");
	fl_run_idle(&L, 10000000);
	CHECK(droce_cq_poll(p.cq[1], &wc, 1) == 0, "a QP created later "
		"received a datagram for QPN %x (wr_id %llu)", old,
		(unsigned long long)wc.wr_id);
	droce_tp_queue_stats(L.end[1].q, &st1);
	CHECK_EQ(st1.rx_drop_noqp, st0.rx_drop_noqp + 1, "dropped: no QP");
	for (i = 0; i < 4; i++)
		droce_qp_destroy(later[i]);
	droce_ah_destroy(ah);
	droce_qp_destroy(p.qp[0]);
	droce_cq_destroy(p.cq[0]);
	droce_cq_destroy(p.cq[1]);
	droce_cq_destroy(cq);
	tbuf_fini(&sb);
	tbuf_fini(&rb);
}

/* argv[1] "zero-copy": every payload by reference to its MR. */
int
main(int argc, char **argv)
{
	static const uint32_t sizes[] = { 0, 1, 3, 64, 1023, 1024, 1025, 4096,
		5000, 65536, 1 << 20 };
	unsigned int i;
	int zc = argc > 1 && strcmp(argv[1], "zero-copy") == 0;

	CHECK_EQ(fl_init(&L, 1, 1500), 0, "fakelink");
	if (zc)
		fl_set_zero_copy(&L, 1);
	for (i = 0; i < (sizeof(sizes) / sizeof(sizes[0])); i++) {
		test_send(IBV_QPT_RC, sizes[i], i & 1, 0);
		test_write(IBV_QPT_RC, sizes[i] ? sizes[i] : 3, i & 1);
		test_read(sizes[i]);
		test_send(IBV_QPT_UC, sizes[i], !(i & 1), 0);
		test_write(IBV_QPT_UC, sizes[i] ? sizes[i] : 3, !(i & 1));
		if (sizes[i] <= 1024)
			test_send(IBV_QPT_UD, sizes[i], i & 1, 0);
	}
	test_send(IBV_QPT_RC, 100, 0, 1);
	test_send(IBV_QPT_UD, 100, 1, 1);
	test_atomics();
	test_mw_inv();
	test_mw_local_inv();
	test_mw_type1();
	test_dereg_mid_message();
	test_fair_turns();
	test_qpn_cycle();
	if (zc) {
		CHECK(zc_frames() > 0, "frames went by reference");
		test_dereg_waits(0);
		test_dereg_waits(1);
	} else {
		CHECK_EQ(zc_frames(), 0, "zero-copy off: every frame copied");
	}
	fl_fini(&L);
	return check_report("test_tp_basic");
}
