/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * XRC through two transports joined by the fake link: an XRC_SEND QP on
 * side 0, an XRC_RECV QP and XRC SRQs on side 1. The state rules of each
 * half (xsrq_pingpong's attribute masks, and what each half refuses);
 * SENDs of every size consumed from the SRQ the XRCETH names, completing
 * on that SRQ's CQ with the XRC_RECV QP's number; WRITE, WRITE with
 * immediate, READ and both atomics, with memory checked under the SRQ's
 * PD; the wire (XRC opcodes, the XRCETH on every request and on none of
 * the responses; with a path argument those frames are written there,
 * for tshark and Scapy: test-xrc-pcap.sh); posting rules (EINVAL and bad_wr); the NAKs for an SRQ
 * that does not exist, one of another XRC domain, and an rkey of another
 * PD than the SRQ's; the objects' lifetimes; and a lossy mix.
 */

#include "tp_util.h"

#define CHECK_EQF(a, b, ...) do { \
	long long _x = (long long)(a), _y = (long long)(b); \
	CHECK(_x == _y, __VA_ARGS__); \
	if (_x != _y) \
		fprintf(stderr, "  got %lld, want %lld\n", _x, _y); \
} while (0)

static struct fakelink L;
static const char *cap_path;	/* argv[1]: test_rdma's frames as a pcap */

/* side 0: XRC_SEND qp; side 1: XRC_RECV tgt, SRQs a (domain x) and b
 * (domain y), all completing on rcq */
struct xpair {
	struct droce_cq *scq, *rcq;
	struct droce_qp *ini, *tgt;
	struct droce_xrcd *x, *y;
	struct droce_srq *a, *b;
	struct droce_pd *pd_other;
	struct tbuf sb, rb, ob;	/* side 0's, the SRQs' PD's, another PD's */
};

static int
modify(struct droce_qp *qp, struct ibv_qp_attr *a, int mask)
{
	struct droce_av av;

	fl_av_to(&L, droce_qp_queue(qp) == L.end[1].q, &av);
	return droce_qp_modify(qp, a, mask, &av);
}

/* xsrq_pingpong's masks: the minimum each half needs */
static int
xrc_up(struct droce_qp *qp, int tgt, uint32_t dqpn, uint32_t rq_psn,
		uint32_t sq_psn)
{
	struct ibv_qp_attr a;
	int rc;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = tgt ? IBV_ACCESS_REMOTE_WRITE |
		IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC : 0;
	rc = modify(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
		IBV_QP_ACCESS_FLAGS);
	if (rc)
		return rc;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dqpn;
	a.rq_psn = rq_psn;
	a.max_dest_rd_atomic = 16;
	a.min_rnr_timer = 1;
	rc = modify(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
		IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | (tgt ?
		IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER : 0));
	if (rc)
		return rc;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 10;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 16;
	a.sq_psn = sq_psn;
	return modify(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_SQ_PSN |
		(tgt ? 0 : IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
		IBV_QP_MAX_QP_RD_ATOMIC));
}

static void
srq_post(struct xpair *p, struct droce_srq *s, uint32_t off, uint32_t len,
		uint64_t id)
{
	struct ibv_recv_wr wr, *bad;
	struct ibv_sge sg = sge_of(&p->rb, off, len);

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = id;
	wr.sg_list = &sg;
	wr.num_sge = 1;
	CHECK_EQF(droce_srq_post_recv(s, &wr, &bad), 0, "srq post %llu",
		(unsigned long long)id);
}

static void
xpair_make(struct xpair *p)
{
	struct ibv_qp_init_attr ia;
	struct ibv_srq_init_attr sa;
	struct droce_pd *pd1;

	fl_fini(&L);
	CHECK_EQF(fl_init(&L, 29, 1500), 0, "fakelink");
	memset(p, 0, sizeof(*p));
	pd1 = L.end[1].pd;
	p->scq = droce_cq_create(L.end[0].dev, 0, 512);
	p->rcq = droce_cq_create(L.end[1].dev, 0, 512);
	p->x = droce_xrcd_alloc(L.end[1].dev);
	p->y = droce_xrcd_alloc(L.end[1].dev);
	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = 256;
	sa.attr.max_sge = 1;
	p->a = droce_srq_create_xrc(pd1, p->x, p->rcq, &sa);
	p->b = droce_srq_create_xrc(pd1, p->y, p->rcq, &sa);
	CHECK(p->a != NULL && p->b != NULL, "XRC SRQs");
	CHECK(droce_srq_num(p->a) != 0 && droce_srq_num(p->b) != 0 &&
		droce_srq_num(p->a) != droce_srq_num(p->b), "SRQ numbers");
	memset(&ia, 0, sizeof(ia));
	ia.qp_type = IBV_QPT_XRC_SEND;
	ia.cap.max_send_wr = 256;
	ia.cap.max_send_sge = 2;
	ia.cap.max_inline_data = 64;
	p->ini = droce_qp_create(L.end[0].pd, &ia, p->scq, NULL, NULL);
	CHECK(p->ini != NULL, "XRC_SEND QP");
	CHECK_EQF(ia.cap.max_recv_wr, 0, "XRC_SEND: no receive queue");
	memset(&ia, 0, sizeof(ia));
	ia.qp_type = IBV_QPT_XRC_RECV;
	ia.cap.max_recv_wr = 16;
	p->tgt = droce_qp_create_xrc_recv(p->x, 0, &ia);
	CHECK(p->tgt != NULL, "XRC_RECV QP");
	CHECK_EQF(ia.cap.max_recv_wr, 0, "XRC_RECV: no queues");
	tbuf_init(&p->sb, L.end[0].pd, 65536, ACC_ALL);
	tbuf_init(&p->rb, pd1, 65536, ACC_ALL);
	p->pd_other = droce_pd_alloc(L.end[1].dev);
	tbuf_init(&p->ob, p->pd_other, 4096, ACC_ALL);
}

static void
xpair_connect(struct xpair *p)
{
	CHECK_EQF(xrc_up(p->ini, 0, droce_qp_num(p->tgt), 0x10, 0xfffff0), 0,
		"XRC_SEND up with xsrq_pingpong's masks");
	CHECK_EQF(xrc_up(p->tgt, 1, droce_qp_num(p->ini), 0xfffff0, 0x10), 0,
		"XRC_RECV up with xsrq_pingpong's masks");
}

static void
xpair_free(struct xpair *p)
{
	CHECK_EQF(droce_qp_destroy(p->ini), 0, "destroy XRC_SEND");
	CHECK_EQF(droce_qp_destroy(p->tgt), 0, "destroy XRC_RECV");
	CHECK_EQF(droce_srq_destroy(p->a), 0, "destroy SRQ a");
	CHECK_EQF(droce_srq_destroy(p->b), 0, "destroy SRQ b");
	CHECK_EQF(droce_xrcd_free(p->x), 0, "free XRCD x");
	CHECK_EQF(droce_xrcd_free(p->y), 0, "free XRCD y");
	CHECK_EQF(droce_cq_destroy(p->scq), 0, "destroy send CQ");
	CHECK_EQF(droce_cq_destroy(p->rcq), 0, "destroy SRQs' CQ");
	tbuf_fini(&p->sb);
	tbuf_fini(&p->rb);
	tbuf_fini(&p->ob);
	droce_pd_dealloc(p->pd_other);
	L.filter = NULL;
	memset(L.faults, 0, sizeof(L.faults));
}

/* What the wire carried. */
static struct {
	int req, resp, bad, naks;
	uint32_t srqn;		/* what every request must name */
	uint8_t last_nak;
} wire;

static int
watch(struct fakelink *l, int dir, const uint8_t *f, uint32_t len)
{
	struct droce_pkt pkt;
	const struct droce_opcode_info *oi;

	(void)l;
	if (droce_wire_parse(f, len, NULL, &pkt) != 0) {
		wire.bad++;
		return 0;
	}
	oi = &droce_opcode_info[pkt.opcode];
	if ((pkt.opcode & DROCE_TRANSPORT_MASK) != DROCE_TRANSPORT_XRC)
		wire.bad++;
	if (dir == 0) {
		wire.req++;
		if (!(oi->flags & DROCE_OPF_REQ) ||
				!(oi->hdrs & DROCE_HDR_XRCETH) ||
				oi->off_xrceth != DROCE_BTH_LEN ||
				(wire.srqn && pkt.xrceth_srqn != wire.srqn))
			wire.bad++;
	} else {
		wire.resp++;
		if (!(oi->flags & DROCE_OPF_RESP) ||
				(oi->hdrs & DROCE_HDR_XRCETH))
			wire.bad++;
		if ((oi->hdrs & DROCE_HDR_AETH) &&
				DROCE_AETH_TYPE(pkt.aeth_syndrome) ==
				DROCE_AETH_TYPE_NAK) {
			wire.naks++;
			wire.last_nak = pkt.aeth_syndrome;
		}
	}
	return 0;
}

static void
wr_init(struct ibv_send_wr *wr, struct ibv_sge *s, enum ibv_wr_opcode op,
		uint64_t id, uint32_t srqn)
{
	wr_signaled(wr, s, op, id);
	wr->qp_type.xrc.remote_srqn = srqn;
}

static int
wait_cq(struct droce_cq *cq, struct ibv_wc *wc)
{
	return wait_wc(&L, cq, wc, 2000000000ull);
}

/* The attribute rules of each half. */
static void
test_states(void)
{
	struct xpair p;
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr init;
	int base = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
		IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;

	xpair_make(&p);
	droce_qp_query(p.ini, &a, 0, &init);
	CHECK_EQF(init.qp_type, IBV_QPT_XRC_SEND, "query: XRC_SEND");
	droce_qp_query(p.tgt, &a, 0, &init);
	CHECK_EQF(init.qp_type, IBV_QPT_XRC_RECV, "query: XRC_RECV");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	CHECK_EQF(modify(p.tgt, &a, IBV_QP_STATE | IBV_QP_PORT), -EINVAL,
		"XRC_RECV INIT without pkey and access");
	CHECK_EQF(modify(p.tgt, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
		IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), 0, "XRC_RECV INIT");
	CHECK_EQF(modify(p.ini, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
		IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), 0, "XRC_SEND INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = 0x99;
	CHECK_EQF(modify(p.tgt, &a, base), -EINVAL,
		"XRC_RECV RTR without the responder's attributes");
	CHECK_EQF(modify(p.tgt, &a, base | IBV_QP_MAX_DEST_RD_ATOMIC |
		IBV_QP_MIN_RNR_TIMER), 0, "XRC_RECV RTR");
	CHECK_EQF(modify(p.ini, &a, base), 0,
		"XRC_SEND RTR with RC's less the responder's");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 10;
	CHECK_EQF(modify(p.ini, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
		IBV_QP_SQ_PSN), -EINVAL, "XRC_SEND RTS without retry counts");
	CHECK_EQF(modify(p.tgt, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
		IBV_QP_SQ_PSN), 0, "XRC_RECV RTS with timeout and SQ PSN");
	CHECK_EQF(modify(p.ini, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
		IBV_QP_SQ_PSN | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
		IBV_QP_MAX_QP_RD_ATOMIC), 0, "XRC_SEND RTS");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_SQD;
	CHECK_EQF(modify(p.ini, &a, IBV_QP_STATE | IBV_QP_QKEY), -EINVAL,
		"a Q_Key is UD's");
	xpair_free(&p);

	/* perftest sets RC's whole set on both halves: taken */
	xpair_make(&p);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	CHECK_EQF(modify(p.ini, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
		IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), 0, "XRC_SEND INIT");
	CHECK_EQF(modify(p.tgt, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
		IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), 0, "XRC_RECV INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = 0x99;
	CHECK_EQF(modify(p.ini, &a, base | IBV_QP_MAX_DEST_RD_ATOMIC |
		IBV_QP_MIN_RNR_TIMER), 0, "XRC_SEND RTR with RC's set");
	CHECK_EQF(modify(p.tgt, &a, base | IBV_QP_MAX_DEST_RD_ATOMIC |
		IBV_QP_MIN_RNR_TIMER), 0, "XRC_RECV RTR with RC's set");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	CHECK_EQF(modify(p.tgt, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
		IBV_QP_SQ_PSN | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
		IBV_QP_MAX_QP_RD_ATOMIC), 0, "XRC_RECV RTS with RC's set");
	xpair_free(&p);
}

/* SENDs of every size around the MTU into SRQ a. */
static void
test_send(void)
{
	static const uint32_t sizes[] = { 0, 1, 3, 64, 1023, 1024, 1025,
		4096, 5000, 16384 };
	struct xpair p;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge s;
	struct ibv_wc wc;
	struct droce_tp_stats st;
	uint32_t i, n = sizeof(sizes) / sizeof(sizes[0]);

	xpair_make(&p);
	xpair_connect(&p);
	memset(&wire, 0, sizeof(wire));
	wire.srqn = droce_srq_num(p.a);
	L.filter = watch;
	for (i = 0; i < n; i++)
		srq_post(&p, p.a, 0, 20000, 100 + i);
	for (i = 0; i < n; i++) {
		pattern(p.sb.p, sizes[i], i);
		memset(p.rb.p, 0, 20000);
		s = sge_of(&p.sb, 0, sizes[i]);
		wr_init(&wr, &s, i & 1 ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND, i,
			droce_srq_num(p.a));
		wr.imm_data = 0x11223344;
		CHECK_EQF(droce_qp_post_send(p.ini, &wr, &bad), 0, "post %u", i);
		CHECK_EQF(wait_cq(p.scq, &wc), 0, "send completion %u", i);
		CHECK_EQF(wc.status, IBV_WC_SUCCESS, "send %u status", i);
		CHECK_EQF(wc.qp_num, droce_qp_num(p.ini), "send qp_num");
		CHECK_EQF(wait_cq(p.rcq, &wc), 0, "receive completion %u", i);
		CHECK_EQF(wc.status, IBV_WC_SUCCESS, "receive %u status", i);
		CHECK_EQF(wc.opcode, IBV_WC_RECV, "receive opcode");
		CHECK_EQF(wc.wr_id, 100 + i, "the SRQ's WQE, in order");
		CHECK_EQF(wc.byte_len, sizes[i], "bytes %u", i);
		CHECK_EQF(wc.qp_num, droce_qp_num(p.tgt),
			"qp_num is the XRC_RECV QP's");
		CHECK_EQF(!!(wc.wc_flags & IBV_WC_WITH_IMM), i & 1, "imm flag");
		if (i & 1)
			CHECK_EQF(wc.imm_data, 0x11223344, "imm");
		CHECK(pattern_ok(p.rb.p, sizes[i], i), "SEND %u bytes placed",
			sizes[i]);
	}
	fl_run_idle(&L, 100000000);
	CHECK(wire.req >= (int)n && wire.resp > 0, "frames both ways");
	CHECK_EQF(wire.bad, 0, "XRC opcodes; XRCETH on requests only");
	CHECK_EQF(droce_qp_state(p.ini), IBV_QPS_RTS, "XRC_SEND RTS");
	CHECK_EQF(droce_qp_state(p.tgt), IBV_QPS_RTS, "XRC_RECV RTS");
	droce_qp_stats(p.tgt, &st);
	CHECK_EQF(st.xrc_bad_srq, 0, "no bad XRCETH");
	/* no receive: RNR NAK, retried forever (rnr_retry 7) until one is
	 * posted to the SRQ */
	pattern(p.sb.p, 100, 77);
	s = sge_of(&p.sb, 0, 100);
	wr_init(&wr, &s, IBV_WR_SEND, 50, droce_srq_num(p.a));
	CHECK_EQF(droce_qp_post_send(p.ini, &wr, &bad), 0, "post (no recv)");
	fl_run_idle(&L, 50000000);
	CHECK_EQF(droce_cq_poll(p.rcq, &wc, 1), 0, "nothing received yet");
	srq_post(&p, p.a, 0, 200, 999);
	CHECK_EQF(wait_cq(p.rcq, &wc), 0, "received after the post");
	CHECK_EQF(wc.wr_id, 999, "the late WQE");
	CHECK(pattern_ok(p.rb.p, 100, 77), "late SEND placed");
	CHECK_EQF(wait_cq(p.scq, &wc), 0, "sender completes");
	CHECK_EQF(wc.status, IBV_WC_SUCCESS, "after RNR");
	xpair_free(&p);
}

/* WRITE, WRITE with immediate, READ and both atomics over XRC. */
static void
test_rdma(void)
{
	struct xpair p;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge s;
	struct ibv_wc wc;
	uint64_t v;
	uint32_t srqn;

	xpair_make(&p);
	xpair_connect(&p);
	if (cap_path != NULL)
		CHECK_EQF(fl_capture(&L, cap_path, 1, 1000), 0, "capture");
	srqn = droce_srq_num(p.a);
	memset(&wire, 0, sizeof(wire));
	wire.srqn = srqn;
	L.filter = watch;
	/* WRITE of 3 MTUs + 7 */
	pattern(p.sb.p, 3079, 5);
	s = sge_of(&p.sb, 0, 3079);
	wr_init(&wr, &s, IBV_WR_RDMA_WRITE, 1, srqn);
	wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)p.rb.p + 8192;
	wr.wr.rdma.rkey = droce_mr_rkey(p.rb.mr);
	CHECK_EQF(droce_qp_post_send(p.ini, &wr, &bad), 0, "post WRITE");
	CHECK_EQF(wait_cq(p.scq, &wc), 0, "WRITE completes");
	CHECK_EQF(wc.status, IBV_WC_SUCCESS, "WRITE status");
	CHECK_EQF(wc.opcode, IBV_WC_RDMA_WRITE, "WRITE opcode");
	CHECK(pattern_ok(p.rb.p + 8192, 3079, 5), "WRITE placed");
	CHECK_EQF(p.rb.p[8192 + 3079], 0, "nothing past it");
	/* WRITE with immediate: consumes a receive of the SRQ */
	srq_post(&p, p.a, 0, 16, 7);
	pattern(p.sb.p, 200, 6);
	s = sge_of(&p.sb, 0, 200);
	wr_init(&wr, &s, IBV_WR_RDMA_WRITE_WITH_IMM, 2, srqn);
	wr.imm_data = 0xabcdef01;
	wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)p.rb.p + 16384;
	wr.wr.rdma.rkey = droce_mr_rkey(p.rb.mr);
	CHECK_EQF(droce_qp_post_send(p.ini, &wr, &bad), 0, "post WRITE_IMM");
	CHECK_EQF(wait_cq(p.rcq, &wc), 0, "WRITE_IMM received");
	CHECK_EQF(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM, "receive opcode");
	CHECK_EQF(wc.wr_id, 7, "from the SRQ");
	CHECK_EQF(wc.imm_data, 0xabcdef01, "imm");
	CHECK_EQF(wc.qp_num, droce_qp_num(p.tgt), "qp_num");
	CHECK(pattern_ok(p.rb.p + 16384, 200, 6), "WRITE_IMM placed");
	CHECK_EQF(wait_cq(p.scq, &wc), 0, "WRITE_IMM completes");
	CHECK_EQF(wc.status, IBV_WC_SUCCESS, "WRITE_IMM status");
	/* READ of 2 MTUs + 100 */
	pattern(p.rb.p + 32768, 2148, 8);
	memset(p.sb.p, 0, 4096);
	s = sge_of(&p.sb, 0, 2148);
	wr_init(&wr, &s, IBV_WR_RDMA_READ, 3, srqn);
	wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)p.rb.p + 32768;
	wr.wr.rdma.rkey = droce_mr_rkey(p.rb.mr);
	CHECK_EQF(droce_qp_post_send(p.ini, &wr, &bad), 0, "post READ");
	CHECK_EQF(wait_cq(p.scq, &wc), 0, "READ completes");
	CHECK_EQF(wc.status, IBV_WC_SUCCESS, "READ status");
	CHECK_EQF(wc.opcode, IBV_WC_RDMA_READ, "READ opcode");
	CHECK(pattern_ok(p.sb.p, 2148, 8), "READ data");
	/* fetch-add and compare-swap */
	v = 40;
	memcpy(p.rb.p + 40960, &v, 8);
	s = sge_of(&p.sb, 4096, 8);
	wr_init(&wr, &s, IBV_WR_ATOMIC_FETCH_AND_ADD, 4, srqn);
	wr.wr.atomic.remote_addr = (uint64_t)(uintptr_t)p.rb.p + 40960;
	wr.wr.atomic.rkey = droce_mr_rkey(p.rb.mr);
	wr.wr.atomic.compare_add = 2;
	CHECK_EQF(droce_qp_post_send(p.ini, &wr, &bad), 0, "post FETCH_ADD");
	CHECK_EQF(wait_cq(p.scq, &wc), 0, "FETCH_ADD completes");
	CHECK_EQF(wc.status, IBV_WC_SUCCESS, "FETCH_ADD status");
	memcpy(&v, p.sb.p + 4096, 8);
	CHECK_EQF(v, 40, "original value");
	memcpy(&v, p.rb.p + 40960, 8);
	CHECK_EQF(v, 42, "added");
	wr_init(&wr, &s, IBV_WR_ATOMIC_CMP_AND_SWP, 5, srqn);
	wr.wr.atomic.remote_addr = (uint64_t)(uintptr_t)p.rb.p + 40960;
	wr.wr.atomic.rkey = droce_mr_rkey(p.rb.mr);
	wr.wr.atomic.compare_add = 42;
	wr.wr.atomic.swap = 0x5555;
	CHECK_EQF(droce_qp_post_send(p.ini, &wr, &bad), 0, "post CMP_SWAP");
	CHECK_EQF(wait_cq(p.scq, &wc), 0, "CMP_SWAP completes");
	CHECK_EQF(wc.status, IBV_WC_SUCCESS, "CMP_SWAP status");
	memcpy(&v, p.rb.p + 40960, 8);
	CHECK_EQF(v, 0x5555, "swapped");
	fl_run_idle(&L, 100000000);
	CHECK_EQF(wire.bad, 0, "XRC opcodes; XRCETH on requests only");
	CHECK_EQF(droce_qp_state(p.tgt), IBV_QPS_RTS, "XRC_RECV RTS");
	xpair_free(&p);
}

/* ibv_post_send(3) / ibv_post_recv(3) on XRC QPs. */
static void
test_posting(void)
{
	struct xpair p;
	struct ibv_send_wr wr[3], *bad;
	struct ibv_recv_wr rwr, *rbad;
	struct ibv_sge s = { 0 };
	struct ibv_wc wc;
	uint32_t srqn;

	xpair_make(&p);
	srqn = droce_srq_num(p.a);
	s = sge_of(&p.sb, 0, 8);
	wr_init(&wr[0], &s, IBV_WR_SEND, 1, srqn);
	CHECK_EQF(droce_qp_post_send(p.ini, &wr[0], &bad), EINVAL,
		"XRC_SEND in RESET");
	CHECK(bad == &wr[0], "bad_wr");
	xpair_connect(&p);
	srq_post(&p, p.a, 0, 64, 1);
	/* a SEND, then one naming no SRQ, then another SEND */
	wr_init(&wr[0], &s, IBV_WR_SEND, 10, srqn);
	wr_init(&wr[1], &s, IBV_WR_SEND, 11, 0);
	wr_init(&wr[2], &s, IBV_WR_SEND, 12, srqn);
	wr[0].next = &wr[1];
	wr[1].next = &wr[2];
	bad = NULL;
	CHECK_EQF(droce_qp_post_send(p.ini, &wr[0], &bad), EINVAL,
		"remote_srqn 0");
	CHECK(bad == &wr[1], "bad_wr at the one without remote_srqn");
	CHECK_EQF(wait_cq(p.scq, &wc), 0, "the one before it done");
	CHECK_EQF(wc.wr_id, 10, "wr_id");
	fl_run_idle(&L, 20000000);
	CHECK_EQF(droce_cq_poll(p.scq, &wc, 1), 0, "none after it posted");
	/* every remote operation needs it; the SRQ number has 24 bits */
	wr_init(&wr[0], &s, IBV_WR_RDMA_WRITE, 13, 0);
	CHECK_EQF(droce_qp_post_send(p.ini, &wr[0], &bad), EINVAL,
		"WRITE without remote_srqn");
	wr_init(&wr[0], &s, IBV_WR_RDMA_READ, 14, 0);
	CHECK_EQF(droce_qp_post_send(p.ini, &wr[0], &bad), EINVAL,
		"READ without remote_srqn");
	wr_init(&wr[0], &s, IBV_WR_SEND, 15, 1u << 24);
	CHECK_EQF(droce_qp_post_send(p.ini, &wr[0], &bad), EINVAL,
		"remote_srqn past 24 bits");
	/* ATOMIC WRITE has no XRC opcode */
	wr_init(&wr[0], &s, IBV_WR_ATOMIC_WRITE, 16, srqn);
	CHECK_EQF(droce_qp_post_send(p.ini, &wr[0], &bad), EINVAL,
		"ATOMIC WRITE on XRC_SEND");
	/* the all-or-nothing form (ibv_wr_complete) */
	wr_init(&wr[0], &s, IBV_WR_SEND, 17, srqn);
	wr_init(&wr[1], &s, IBV_WR_SEND, 18, 0);
	wr[0].next = &wr[1];
	wr[1].next = NULL;
	CHECK_EQF(droce_qp_post_send_all(p.ini, &wr[0], &bad), EINVAL,
		"all or nothing: remote_srqn 0");
	CHECK(bad == &wr[1], "bad_wr");
	fl_run_idle(&L, 20000000);
	CHECK_EQF(droce_cq_poll(p.scq, &wc, 1), 0, "nothing posted");
	/* the target sends nothing; neither half has a receive queue */
	wr_init(&wr[0], &s, IBV_WR_SEND, 19, srqn);
	CHECK_EQF(droce_qp_post_send(p.tgt, &wr[0], &bad), EINVAL,
		"post_send on XRC_RECV");
	memset(&rwr, 0, sizeof(rwr));
	rwr.sg_list = &s;
	rwr.num_sge = 1;
	CHECK_EQF(droce_qp_post_recv(p.ini, &rwr, &rbad), EINVAL,
		"post_recv on XRC_SEND");
	CHECK(rbad == &rwr, "recv bad_wr");
	CHECK_EQF(droce_qp_post_recv(p.tgt, &rwr, &rbad), EINVAL,
		"post_recv on XRC_RECV");
	/* an XRC SRQ is not an RC QP's SRQ */
	{
		struct ibv_qp_init_attr ia;

		memset(&ia, 0, sizeof(ia));
		ia.qp_type = IBV_QPT_RC;
		ia.cap.max_send_wr = 4;
		errno = 0;
		CHECK(droce_qp_create(L.end[1].pd, &ia, p.rcq, p.rcq, p.a) ==
			NULL && errno == EINVAL, "RC QP on an XRC SRQ: EINVAL");
	}
	CHECK_EQF(droce_qp_state(p.ini), IBV_QPS_RTS, "still RTS");
	xpair_free(&p);
}

/* One request the target refuses for its XRCETH or its key. */
static void
refusal(const char *what, int which, enum ibv_wc_status want, uint8_t nak)
{
	struct xpair p;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge s;
	struct ibv_wc wc;
	struct droce_tp_stats st;
	uint32_t srqn;

	xpair_make(&p);
	xpair_connect(&p);
	memset(&wire, 0, sizeof(wire));
	L.filter = watch;
	srq_post(&p, p.a, 0, 64, 1);
	srq_post(&p, p.b, 64, 64, 2);
	srqn = which == 0 ? 4000 : which == 1 ? droce_srq_num(p.b) :
		droce_srq_num(p.a);
	pattern(p.sb.p, 64, 3);
	s = sge_of(&p.sb, 0, 64);
	wr_init(&wr, &s, which == 2 ? IBV_WR_RDMA_WRITE : IBV_WR_SEND, 9,
		srqn);
	/* which 2: a key of another PD than the SRQ's */
	wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)p.ob.p;
	wr.wr.rdma.rkey = droce_mr_rkey(p.ob.mr);
	CHECK_EQF(droce_qp_post_send(p.ini, &wr, &bad), 0, "%s: post", what);
	CHECK_EQF(wait_cq(p.scq, &wc), 0, "%s: completion", what);
	CHECK_EQF(wc.status, want, "%s: status", what);
	fl_run_idle(&L, 20000000);
	CHECK_EQF(wire.naks, 1, "%s: one NAK", what);
	CHECK_EQF(wire.last_nak, nak, "%s: its syndrome", what);
	CHECK_EQF(droce_qp_state(p.ini), IBV_QPS_ERR, "%s: XRC_SEND ERR", what);
	CHECK_EQF(droce_qp_state(p.tgt), IBV_QPS_ERR, "%s: XRC_RECV ERR", what);
	CHECK_EQF(droce_cq_poll(p.rcq, &wc, 1), 0, "%s: nothing received",
		what);
	CHECK(pattern_ok(p.sb.p, 64, 3) && p.rb.p[0] == 0 && p.rb.p[64] == 0 &&
		p.ob.p[0] == 0, "%s: no byte placed", what);
	droce_qp_stats(p.tgt, &st);
	CHECK_EQF(st.xrc_bad_srq, which < 2, "%s: counted", what);
	xpair_free(&p);
}

static void
test_refusals(void)
{
	refusal("no such SRQ", 0, IBV_WC_REM_INV_REQ_ERR,
		DROCE_AETH_NAK_INV_REQ);
	refusal("SRQ of another XRC domain", 1, IBV_WC_REM_ACCESS_ERR,
		DROCE_AETH_NAK_REM_ACC);
	refusal("rkey of another PD than the SRQ's", 2, IBV_WC_REM_ACCESS_ERR,
		DROCE_AETH_NAK_REM_ACC);
}

/* A frame from side 0 to qpn with opcode op (and an XRCETH naming
 * srqn where op has one), handed to side 'to' directly. */
static void
inject(int to, uint32_t qpn, uint8_t op, uint32_t srqn, uint32_t psn)
{
	static uint8_t payload[64], f[512];
	struct fl_end *a = &L.end[!to], *b = &L.end[to];
	const uint8_t *fp = f;
	struct droce_pkt pk;
	uint32_t len;
	int n;

	memset(&pk, 0, sizeof(pk));
	memcpy(pk.dst_mac, b->mac, 6);
	memcpy(pk.src_mac, a->mac, 6);
	pk.ip_ver = 4;
	pk.ttl = 64;
	droce_gid_from_ipv4(pk.sgid, a->ip);
	droce_gid_from_ipv4(pk.dgid, b->ip);
	pk.udp_sport = 0xc000;
	pk.udp_dport = DROCE_ROCE_UDP_PORT;
	pk.pkey = 0xffff;
	pk.opcode = op;
	pk.dqpn = qpn;
	pk.psn = psn;
	pk.ackreq = 1;
	pk.xrceth_srqn = srqn;
	pk.aeth_syndrome = DROCE_AETH_ACK_NOCREDIT;
	memset(payload, 0x77, sizeof(payload));
	if (droce_opcode_info[op].flags & DROCE_OPF_PAYLOAD) {
		pk.payload = payload;
		pk.payload_len = sizeof(payload);
	}
	n = droce_wire_build(&pk, f, sizeof(f));
	CHECK(n > 0, "build opcode %#x", op);
	len = (uint32_t)n;
	droce_tp_rx_burst(L.end[to].q, &fp, &len, 1, L.now);
}

/* Frames of the wrong transport or direction reach neither half. */
static void
test_wrong_frames(void)
{
	struct xpair p;
	struct droce_tp_stats q0, q1, st;
	struct ibv_wc wc;
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr init;
	uint32_t srqn;

	xpair_make(&p);
	xpair_connect(&p);
	srqn = droce_srq_num(p.a);
	srq_post(&p, p.a, 0, 256, 1);
	droce_tp_queue_stats(L.end[1].q, &q1);
	droce_tp_queue_stats(L.end[0].q, &q0);
	droce_qp_query(p.tgt, &a, 0, &init);
	/* RC's SEND to the XRC_RECV QP at its expected PSN: no XRCETH */
	inject(1, droce_qp_num(p.tgt), DROCE_OP_RC_SEND_ONLY, 0, a.rq_psn);
	/* an XRC response to the XRC_RECV QP */
	inject(1, droce_qp_num(p.tgt), DROCE_OP_XRC_ACK, 0, a.rq_psn);
	/* an XRC request to the XRC_SEND QP */
	droce_qp_query(p.ini, &a, 0, &init);
	inject(0, droce_qp_num(p.ini), DROCE_OP_XRC_SEND_ONLY, srqn, a.rq_psn);
	/* RC's ACK to the XRC_SEND QP */
	inject(0, droce_qp_num(p.ini), DROCE_OP_RC_ACK, 0, a.sq_psn);
	droce_tp_queue_stats(L.end[1].q, &st);
	CHECK_EQF(st.rx_drop_noqp - q1.rx_drop_noqp, 2,
		"RC request and XRC response to XRC_RECV dropped, counted");
	droce_tp_queue_stats(L.end[0].q, &st);
	CHECK_EQF(st.rx_drop_noqp - q0.rx_drop_noqp, 2,
		"XRC request and RC ACK to XRC_SEND dropped, counted");
	fl_run_idle(&L, 10000000);
	CHECK_EQF(droce_cq_poll(p.rcq, &wc, 1), 0, "nothing received");
	CHECK_EQF(droce_cq_poll(p.scq, &wc, 1), 0, "nothing completed");
	CHECK_EQF(droce_qp_state(p.ini), IBV_QPS_RTS, "XRC_SEND RTS");
	CHECK_EQF(droce_qp_state(p.tgt), IBV_QPS_RTS, "XRC_RECV RTS");
	CHECK_EQF(p.rb.p[0], 0, "no byte placed");
	xpair_free(&p);
}

/* What holds what: EBUSY until the users are gone. */
static void
test_lifetimes(void)
{
	struct xpair p;
	struct ibv_srq_init_attr sa;
	struct droce_srq *s;

	xpair_make(&p);
	CHECK_EQF(droce_xrcd_free(p.x), -EBUSY, "XRCD with an SRQ and a QP");
	CHECK_EQF(droce_cq_destroy(p.rcq), -EBUSY, "an XRC SRQ's CQ");
	CHECK_EQF(droce_cq_move(p.rcq, 0), 0, "the same queue: no move");
	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = 4;
	errno = 0;
	CHECK(droce_srq_create_xrc(L.end[1].pd, NULL, p.rcq, &sa) == NULL &&
		errno == EINVAL, "XRC SRQ without a domain");
	CHECK(droce_srq_create_xrc(L.end[1].pd, p.x, NULL, &sa) == NULL &&
		errno == EINVAL, "XRC SRQ without a CQ");
	s = droce_srq_create_xrc(L.end[1].pd, p.x, p.rcq, &sa);
	CHECK(s != NULL && droce_srq_num(s) != droce_srq_num(p.a) &&
		droce_srq_num(s) != droce_srq_num(p.b), "a third number");
	CHECK_EQF(droce_srq_destroy(s), 0, "destroy it");
	xpair_free(&p);
}

/* SENDs, WRITEs and READs over 3% loss, duplication and reordering. */
static void
test_lossy(void)
{
	struct xpair p;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge s;
	struct ibv_wc wc;
	uint32_t i, n = 240, srqn, sends = 0, got = 0, done = 0;
	int d;

	xpair_make(&p);
	xpair_connect(&p);
	srqn = droce_srq_num(p.a);
	for (d = 0; d < 2; d++) {
		L.faults[d].drop_ppm = 30000;
		L.faults[d].dup_ppm = 20000;
		L.faults[d].reorder_ppm = 20000;
	}
	for (i = 0; i < n; i++)
		if (i % 3 == 0)
			srq_post(&p, p.a, 256 * (i / 3), 256, i);
	for (i = 0; i < n; i++) {
		uint32_t len = 100 + i % 28;

		pattern(p.sb.p + 128 * i, len, i);
		s = sge_of(&p.sb, 128 * i, len);
		if (i % 3 == 0) {
			wr_init(&wr, &s, IBV_WR_SEND, i, srqn);
			sends++;
		} else if (i % 3 == 1) {
			wr_init(&wr, &s, IBV_WR_RDMA_WRITE, i, srqn);
			wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)p.rb.p +
				32768 + 128 * i;
			wr.wr.rdma.rkey = droce_mr_rkey(p.rb.mr);
			s.length = 100;
		} else {
			/* read back what the WRITE before it put */
			s = sge_of(&p.sb, 32768 + 128 * i, 100);
			wr_init(&wr, &s, IBV_WR_RDMA_READ, i, srqn);
			wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)p.rb.p +
				32768 + 128 * (i - 1);
			wr.wr.rdma.rkey = droce_mr_rkey(p.rb.mr);
		}
		/* fence: a READ after the WRITE it reads */
		if (i % 3 == 2)
			wr.send_flags |= IBV_SEND_FENCE;
		CHECK_EQF(droce_qp_post_send(p.ini, &wr, &bad), 0, "post %u", i);
		if ((i & 15) == 15)
			fl_step(&L, 1000);
	}
	while (done < n && wait_cq(p.scq, &wc) == 0) {
		CHECK_EQF(wc.status, IBV_WC_SUCCESS, "lossy %llu",
			(unsigned long long)wc.wr_id);
		CHECK_EQF(wc.wr_id, done, "in order");
		done++;
	}
	while (got < sends && wait_cq(p.rcq, &wc) == 0) {
		CHECK_EQF(wc.status, IBV_WC_SUCCESS, "receive");
		CHECK_EQF(wc.wr_id, 3 * got, "receives in order");
		got++;
	}
	CHECK_EQF(done, n, "every WR completed");
	CHECK_EQF(got, sends, "every SEND received");
	for (i = 0; i < n; i++) {
		if (i % 3 == 0)
			CHECK(pattern_ok(p.rb.p + 256 * (i / 3), 100 + i % 28,
				i), "SEND %u", i);
		else if (i % 3 == 1)
			CHECK(pattern_ok(p.rb.p + 32768 + 128 * i, 100, i),
				"WRITE %u", i);
		else
			CHECK(pattern_ok(p.sb.p + 32768 + 128 * i, 100, i - 1),
				"READ %u", i);
	}
	CHECK(L.cnt[0].dropped + L.cnt[1].dropped > 0, "the link lost frames");
	CHECK_EQF(droce_qp_state(p.ini), IBV_QPS_RTS, "XRC_SEND RTS");
	CHECK_EQF(droce_qp_state(p.tgt), IBV_QPS_RTS, "XRC_RECV RTS");
	xpair_free(&p);
}

int
main(int argc, char **argv)
{
	cap_path = argc > 1 ? argv[1] : NULL;
	test_states();
	test_send();
	test_rdma();
	test_posting();
	test_refusals();
	test_wrong_frames();
	test_lifetimes();
	test_lossy();
	fl_fini(&L);
	return check_report("transport_xrc");
}
