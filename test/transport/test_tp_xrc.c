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
 * for tshark and Scapy: test-xrc-pcap.sh); posting rules (EINVAL and
 * bad_wr); the NAKs for an SRQ that does not exist, one of another XRC
 * domain, and an rkey of another PD than the SRQ's; the objects'
 * lifetimes; and a lossy mix.
 *
 * Here the link, the pair and the wire's watch, and the order of the
 * cases; the cases, by kind:
 *  - test_tp_xrc_rules.c: each half's attribute rules, posting, lifetimes;
 *  - test_tp_xrc_data.c: SENDs, RDMA and atomics, a lossy mix;
 *  - test_tp_xrc_refused.c: what the target refuses, frames of the wrong
 *    transport or direction.
 */

#include "tp_xrc.h"

struct fakelink L;
const char *cap_path;
struct xrc_wire wire;

/* check.h's counts, for every file */
int check_failures;
int check_count;

int
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

void
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

void
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

void
xpair_connect(struct xpair *p)
{
	CHECK_EQF(xrc_up(p->ini, 0, droce_qp_num(p->tgt), 0x10, 0xfffff0), 0,
		"XRC_SEND up with xsrq_pingpong's masks");
	CHECK_EQF(xrc_up(p->tgt, 1, droce_qp_num(p->ini), 0xfffff0, 0x10), 0,
		"XRC_RECV up with xsrq_pingpong's masks");
}

void
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

int
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

void
wr_init(struct ibv_send_wr *wr, struct ibv_sge *s, enum ibv_wr_opcode op,
		uint64_t id, uint32_t srqn)
{
	wr_signaled(wr, s, op, id);
	wr->qp_type.xrc.remote_srqn = srqn;
}

int
wait_cq(struct droce_cq *cq, struct ibv_wc *wc)
{
	return wait_wc(&L, cq, wc, 2000000000ull);
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
