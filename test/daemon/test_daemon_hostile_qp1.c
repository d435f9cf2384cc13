/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * test_daemon_hostile's cases on QP1 (an application's GSI proxy): its
 * CQs held while it lives, and only the sender's own CM messages sent;
 * and the QP1 helpers the other cases use.
 */

#include <errno.h>
#include <string.h>

#include "wire_cm_mad.h"

#include "daemon_hostile.h"

/* A GSI proxy (the application's QP1) on scq and rcq: 0 or -errno. */
int
gsi_proxy(struct cs *s, uint32_t pd, uint32_t scq, uint32_t rcq,
		struct cs_qp *qp)
{
	struct droce_chan_create_qp_req r = {
		.pd = pd, .qp_type = DROCE_QPT_GSI, .send_cq = scq,
		.recv_cq = rcq, .srq = DROCE_CHAN_NONE,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
			.max_recv_sge = 1 },
	};
	struct droce_chan_create_qp_rep p;
	int rc = cs_rpc(s, DROCE_OP_CREATE_QP, &r, &p, NULL, 0, NULL, NULL);

	if (rc != 0)
		return rc;
	memset(qp, 0, sizeof(*qp));
	qp->handle = p.handle;
	qp->qpn = p.qpn;
	qp->sq.sh = (void *)(s->region + p.sq.off);
	qp->sq.slots = s->region + p.sq.off + DROCE_CHAN_WQ_SLOTS;
	qp->sq.size = p.sq.size;
	qp->sq.slot = p.sq.slot;
	qp->sq.queue = qp->sq.sh->queue;
	qp->rq.sh = (void *)(s->region + p.rq.off);
	qp->rq.slots = s->region + p.rq.off + DROCE_CHAN_WQ_SLOTS;
	qp->rq.size = p.rq.size;
	qp->rq.slot = p.rq.slot;
	qp->rq.queue = qp->rq.sh->queue;
	return 0;
}

/*
 * A GSI proxy holds no transport QP, so the transport did not know its
 * CQs were in use: DESTROY_CQ freed a CQ the proxy then completed into
 * (a MAD to itself, a malformed send: SIGSEGV), and a QP created on that
 * CQ and a CQ pinned elsewhere moved it off QP1's queue (two threads
 * producing into one ring). Now the CQ may neither go nor move while
 * the proxy lives; a malformed send still completes into it, with an
 * error; once the proxy is gone the CQ goes.
 */
void
gsi_cq(void)
{
	struct cs_side h;
	struct cs_cq x, y;
	struct cs_qp g, q;
	struct droce_chan_handle d;
	struct droce_chan_swqe w = { 0 };
	struct droce_chan_create_qp_req r = {
		.pd = 0, .qp_type = IBV_QPT_RC, .srq = DROCE_CHAN_NONE,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
			.max_recv_sge = 1 },
	};
	struct droce_chan_create_qp_rep p;
	struct ibv_wc wc;
	int rc, i;

	cs_side_open(&h, path_a);
	CHECK(cs_cq(&h.s, 64, &x) == 0, "cq x");
	{
		/* a proxy sized past any QP's: refused before anything is
		 * sized by it (fuzz_droced found droced calling calloc for
		 * 2^31 receives) */
		struct droce_chan_create_qp_req big = { .pd = h.pd,
			.qp_type = DROCE_QPT_GSI, .send_cq = x.handle,
			.recv_cq = x.handle, .srq = DROCE_CHAN_NONE,
			.cap = { .max_send_wr = 16, .max_recv_wr = 1u << 31,
				.max_send_sge = 1, .max_recv_sge = 1 } };
		struct droce_chan_create_qp_rep bp;

		rc = cs_rpc(&h.s, DROCE_OP_CREATE_QP, &big, &bp, NULL, 0, NULL,
			NULL);
		CHECK(rc == -EINVAL, "a proxy of 2^31 receives: %d", rc);
	}
	CHECK(gsi_proxy(&h.s, h.pd, x.handle, x.handle, &g) == 0, "the proxy");
	d.handle = x.handle;
	rc = cs_rpc(&h.s, DROCE_OP_DESTROY_CQ, &d, NULL, NULL, 0, NULL, NULL);
	CHECK(rc == -EBUSY, "DESTROY_CQ of the proxy's CQ: %d, want -EBUSY", rc);
	/* a malformed send (an opcode QP1 does not take) completes into it */
	w.wr_id = 77;
	w.opcode = IBV_WR_RDMA_WRITE;
	w.send_flags = IBV_SEND_SIGNALED;
	cs_post_send(&h.s, &g, &w, NULL);
	CHECK(cs_poll(&x, &wc, 20000) == 1, "the malformed send's completion");
	CHECK(wc.wr_id == 77 && wc.status != IBV_WC_SUCCESS,
		"malformed send: wr_id %lu status %d", (unsigned long)wc.wr_id,
		wc.status);
	/* with queues to spare: a CQ y pinned to another queue by an RC QP,
	 * then a QP on x and y must not take x off QP1's queue */
	if (h.s.hello.nb_queues > 1) {
		for (i = 0; i < 8; i++) {
			CHECK(cs_cq(&h.s, 64, &y) == 0, "cq y");
			if (y.queue != g.sq.queue)
				break;
		}
		CHECK(y.queue != g.sq.queue, "a CQ on another queue than QP1's");
		CHECK(cs_qp(&h.s, h.pd, IBV_QPT_RC, &y, &q) == 0, "a QP on y");
		r.pd = h.pd;
		r.send_cq = x.handle;
		r.recv_cq = y.handle;
		rc = cs_rpc(&h.s, DROCE_OP_CREATE_QP, &r, &p, NULL, 0, NULL, NULL);
		CHECK(rc != 0 || p.queue == g.sq.queue, "a QP moved the proxy's "
			"CQ to queue %u (QP1's is %u)", p.queue, g.sq.queue);
	}
	d.handle = g.handle;
	CHECK(cs_rpc(&h.s, DROCE_OP_DESTROY_QP, &d, NULL, NULL, 0, NULL,
		NULL) == 0, "destroy the proxy");
	d.handle = x.handle;
	rc = cs_rpc(&h.s, DROCE_OP_DESTROY_CQ, &d, NULL, NULL, 0, NULL, NULL);
	CHECK(rc == 0, "DESTROY_CQ once the proxy is gone: %d", rc);
	cs_close(&h.s);
	printf("a GSI proxy's CQs: held%s\n", h.s.hello.nb_queues > 1 ?
		", on QP1's queue" : "");
}

/* A UD QP ready to receive and send (qkey). */
static void
ud_ready(struct cs *s, struct cs_qp *qp, uint32_t qkey)
{
	struct droce_chan_modify_qp_req r = { .handle = qp->handle };

	r.attr.qp_state = IBV_QPS_INIT;
	r.attr.port_num = 1;
	r.attr.qkey = qkey;
	r.mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
	CHECK(cs_rpc(s, DROCE_OP_MODIFY_QP, &r, NULL, NULL, 0, NULL, NULL) == 0,
		"UD INIT");
	memset(&r.attr, 0, sizeof(r.attr));
	r.attr.qp_state = IBV_QPS_RTR;
	r.mask = IBV_QP_STATE;
	CHECK(cs_rpc(s, DROCE_OP_MODIFY_QP, &r, NULL, NULL, 0, NULL, NULL) == 0,
		"UD RTR");
	r.attr.qp_state = IBV_QPS_RTS;
	r.mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	CHECK(cs_rpc(s, DROCE_OP_MODIFY_QP, &r, NULL, NULL, 0, NULL, NULL) == 0,
		"UD RTS");
}

/* An AH to the session's own port address (QP1 traffic loops back). */
uint32_t
ah_to_self(struct cs_side *x)
{
	struct droce_chan_create_ah_req r = { .pd = x->pd };
	struct droce_chan_handle h;

	r.attr.is_global = 1;
	r.attr.port_num = 1;
	r.attr.grh.sgid_index = 1;
	r.attr.grh.hop_limit = 64;
	memcpy(r.attr.grh.dgid.raw, x->s.hello.gids[1].gid, 16);
	CHECK(cs_rpc(&x->s, DROCE_OP_CREATE_AH, &r, &h, NULL, 0, NULL, NULL) == 0,
		"an AH to itself");
	return h.handle;
}

/* A send of len bytes at off in x's buffer, on QP g, to (qpn, qkey)
 * through AH ah; its completion's status. */
enum ibv_wc_status
gsi_send(struct cs_side *x, struct cs_qp *g, struct cs_cq *cq, uint32_t ah,
		uint32_t off, uint32_t len, uint32_t qpn, uint32_t qkey)
{
	struct droce_chan_swqe w = { 0 };
	struct ibv_sge sge = { (uint64_t)(uintptr_t)x->b.addr + off, len,
		x->b.lkey };
	struct ibv_wc wc;

	w.wr_id = off;
	w.opcode = IBV_WR_SEND;
	w.send_flags = IBV_SEND_SIGNALED;
	w.num_sge = 1;
	w.ah = ah;
	w.remote_qpn = qpn;
	w.remote_qkey = qkey;
	cs_post_send(&x->s, g, &w, &sge);
	CHECK(cs_poll(cq, &wc, 20000) == 1, "a QP1 send's completion");
	return wc.status;
}

/* A CM message into buf: attr, the sender's ID and the target's. */
void
cm_msg(uint8_t *buf, uint16_t attr, uint32_t local, uint32_t remote)
{
	struct cm_simple m = { .local_comm_id = local, .remote_comm_id = remote };
	struct cm_rej r = { .local_comm_id = local, .remote_comm_id = remote,
		.reason = CM_REJ_CONSUMER_DEFINED };

	cm_mad_put_hdr(buf, attr, 0x1234);
	if (attr == CM_ATTR_REJ)
		cm_rej_pack(buf + CM_MAD_HDR, &r);
	else
		cm_simple_pack(buf + CM_MAD_HDR, attr, &m);
}

/*
 * MADs posted on QP1 were not checked: an application could send CM
 * messages (DREQ, REJ) claiming another's communication IDs, MADs of any
 * class, and plain datagrams to any QP, which arrived with source QP 1.
 * Now only CM messages naming the sender's own ID (its prefix) leave, to
 * a QP1 under the CM's Q_Key; the victim's QP1 and UD QP receive nothing.
 */
void
cm_forge(void)
{
	struct cs_side v, x;
	struct cs_cq vcq, xcq;
	struct cs_qp vg, xg, vud;
	struct ibv_sge sge;
	struct ibv_wc wc;
	uint32_t ah, vp, xp, i;
	enum ibv_wc_status st;

	cs_side_open(&v, path_a);
	cs_side_open(&x, path_a);
	vp = (uint32_t)v.s.hello.cm_prefix << 24;
	xp = (uint32_t)x.s.hello.cm_prefix << 24;
	CHECK(vp != 0 && xp != 0 && vp != xp, "CM prefixes %x %x", vp, xp);
	CHECK(cs_cq(&v.s, 64, &vcq) == 0 && cs_cq(&x.s, 64, &xcq) == 0, "cqs");
	CHECK(gsi_proxy(&v.s, v.pd, vcq.handle, vcq.handle, &vg) == 0 &&
		gsi_proxy(&x.s, x.pd, xcq.handle, xcq.handle, &xg) == 0,
		"proxies");
	CHECK(cs_qp(&v.s, v.pd, IBV_QPT_UD, &vcq, &vud) == 0, "the victim's UD QP");
	ud_ready(&v.s, &vud, 0x11111111);
	for (i = 0; i < 4; i++) {
		sge = (struct ibv_sge){ (uint64_t)(uintptr_t)v.b.addr + i * 512,
			512, v.b.lkey };
		cs_post_recv(&v.s, &vg, 100 + i, &sge);
		cs_post_recv(&v.s, &vud, 200 + i, &sge);
	}
	ah = ah_to_self(&x);
	/* forged: the victim's IDs as the sender's own */
	cm_msg(x.b.addr, CM_ATTR_DREQ, vp | 0x123456, vp | 0x654321);
	cm_msg(x.b.addr + 512, CM_ATTR_REJ, vp | 0x123456, vp | 0x654321);
	/* another class (subnet administration), same IDs */
	memcpy(x.b.addr + 1024, x.b.addr, CM_MAD_LEN);
	x.b.addr[1024 + 1] = 0x03;
	memset(x.b.addr + 1536, 0x5a, 64);
	st = gsi_send(&x, &xg, &xcq, ah, 0, CM_MAD_LEN, 1, CM_QKEY);
	CHECK(st != IBV_WC_SUCCESS, "a DREQ with the victim's ID went");
	st = gsi_send(&x, &xg, &xcq, ah, 512, CM_MAD_LEN, 1, CM_QKEY);
	CHECK(st != IBV_WC_SUCCESS, "a REJ with the victim's ID went");
	st = gsi_send(&x, &xg, &xcq, ah, 1024, CM_MAD_LEN, 1, CM_QKEY);
	CHECK(st != IBV_WC_SUCCESS, "a MAD of another class went");
	st = gsi_send(&x, &xg, &xcq, ah, 1536, 64, vud.qpn, 0x11111111);
	CHECK(st != IBV_WC_SUCCESS, "a datagram from QP1 to a UD QP went");
	CHECK(cs_poll(&vcq, &wc, 1000) == 0, "the victim received something: "
		"wr_id %lu status %d src_qp %u", (unsigned long)wc.wr_id,
		wc.status, wc.src_qp);
	/* and its own IDs go: a DREQ to itself comes back to its QP1 */
	sge = (struct ibv_sge){ (uint64_t)(uintptr_t)x.b.addr + 4096, 512,
		x.b.lkey };
	cs_post_recv(&x.s, &xg, 300, &sge);
	cm_msg(x.b.addr + 2048, CM_ATTR_DREQ, xp | 1, xp | 2);
	st = gsi_send(&x, &xg, &xcq, ah, 2048, CM_MAD_LEN, 1, CM_QKEY);
	CHECK(st == IBV_WC_SUCCESS, "a DREQ with its own IDs: status %d", st);
	CHECK(cs_poll(&xcq, &wc, 10000) == 1 && wc.wr_id == 300 &&
		wc.status == IBV_WC_SUCCESS, "its own DREQ came back");
	cs_close(&v.s);
	cs_close(&x.s);
	printf("forged CM messages, other classes, datagrams: refused\n");
}
