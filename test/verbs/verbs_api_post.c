/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * verbs_api's cases on posting work requests (verbs_api.c runs them):
 *  - ibv_post_send: EINVAL with *bad_wr at the bad WR, those before posted;
 *  - ibv_wr_*: wr_complete posts all or nothing; unsupported send_ops_flags
 *    fail QP creation;
 *  - IBTA 1.5 ATOMIC WRITE: device_cap_flags_ex, ibv_wr_atomic_write and
 *    ibv_post_send, the word and its neighbours, EINVAL cases.
 */

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "verbs_api.h"

void
test_post_rules(struct ibv_qp *a, struct ibv_qp *b, struct ibv_cq *cqa)
{
	struct ibv_sge s[3] = {
		{ .addr = (uintptr_t)buf, .length = 8, .lkey = mr->lkey },
		{ .addr = (uintptr_t)buf + 8, .length = 8, .lkey = mr->lkey },
		{ .addr = (uintptr_t)buf + 16, .length = 8, .lkey = mr->lkey },
	};
	struct ibv_send_wr w[3], *bad = NULL;
	struct ibv_wc wc[4];
	int rc, i;

	memset(w, 0, sizeof(w));
	for (i = 0; i < 3; i++) {
		w[i].wr_id = 10 + i;
		w[i].opcode = IBV_WR_RDMA_WRITE;
		w[i].send_flags = IBV_SEND_SIGNALED;
		w[i].wr.rdma.remote_addr = (uintptr_t)buf + 4096;
		w[i].wr.rdma.rkey = mr->rkey;
		w[i].sg_list = s;
		w[i].num_sge = 1;
		w[i].next = i < 2 ? &w[i + 1] : NULL;
	}
	w[1].num_sge = 3;	/* more than max_send_sge (2) */
	rc = ibv_post_send(a, w, &bad);
	CHECK(rc == EINVAL && bad == &w[1],
		"ibv_post_send: EINVAL at the WR with too many SGEs, bad_wr there (rc %d)", rc);
	CHECK(poll_n(cqa, wc, 2, 1000) == 1 && wc[0].wr_id == 10 &&
		wc[0].status == IBV_WC_SUCCESS,
		"the WR before it was posted and completed, the ones after were not");
	(void)b;
}

void
test_wr_api(struct ibv_cq *cqa, struct ibv_cq *cqb, struct ibv_qp *peer_b)
{
	struct ibv_qp_init_attr_ex ax;
	struct ibv_qp *q;
	struct ibv_qp_ex *qx;
	struct ibv_wc wc[4];
	struct ibv_sge sl[3];
	int rc, i;

	memset(&ax, 0, sizeof(ax));
	ax.send_cq = cqa;
	ax.recv_cq = cqa;
	ax.qp_type = IBV_QPT_RC;
	ax.cap.max_send_wr = 16;
	ax.cap.max_recv_wr = 16;
	ax.cap.max_send_sge = 2;
	ax.cap.max_recv_sge = 1;
	ax.cap.max_inline_data = 64;
	ax.pd = pd;
	ax.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	ax.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_SEND |
		IBV_QP_EX_WITH_TSO;
	errno = 0;
	q = ibv_create_qp_ex(ctx, &ax);
	CHECK(q == NULL && errno == EOPNOTSUPP,
		"create_qp_ex with an unsupported send_ops_flags (TSO) fails, EOPNOTSUPP");
	ax.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_SEND;
	q = ibv_create_qp_ex(ctx, &ax);
	CHECK(q != NULL, "create_qp_ex with WRITE|SEND");
	if (q == NULL)
		return;
	qx = ibv_qp_to_qp_ex(q);
	CHECK(qx != NULL, "ibv_qp_to_qp_ex");
	if (to_init(q) || to_init(peer_b) || to_rts(q, peer_b->qp_num) ||
			to_rts(peer_b, q->qp_num)) {
		CHECK(0, "connect the ibv_wr_* QP");
		return;
	}
	memset(buf + 16384, 0, 256);
	memset(buf, 0x5a, 256);
	/* a bad WR in the middle: nothing at all is posted */
	ibv_wr_start(qx);
	qx->wr_id = 1;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(qx, mr->rkey, (uintptr_t)buf + 16384);
	ibv_wr_set_sge(qx, mr->lkey, (uintptr_t)buf, 16);
	qx->wr_id = 2;
	ibv_wr_rdma_write(qx, mr->rkey, (uintptr_t)buf + 16384 + 16);
	for (i = 0; i < 3; i++)
		sl[i] = (struct ibv_sge){ .addr = (uintptr_t)buf, .length = 4,
			.lkey = mr->lkey };
	ibv_wr_set_sge_list(qx, 3, sl);		/* > max_send_sge */
	rc = ibv_wr_complete(qx);
	CHECK(rc == EINVAL, "wr_complete reports the bad setter (rc %d)", rc);
	CHECK(poll_n(cqa, wc, 1, 500) == 0 && buf[16384] == 0,
		"and posted nothing, not even the good WR before it");
	/* abort discards */
	ibv_wr_start(qx);
	qx->wr_id = 3;
	ibv_wr_rdma_write(qx, mr->rkey, (uintptr_t)buf + 16384);
	ibv_wr_set_sge(qx, mr->lkey, (uintptr_t)buf, 16);
	ibv_wr_abort(qx);
	CHECK(poll_n(cqa, wc, 1, 300) == 0, "wr_abort discards");
	/* a good batch: three WRs, inline data copied at the setter */
	ibv_wr_start(qx);
	for (i = 0; i < 3; i++) {
		char tmp[16];

		memset(tmp, 'a' + i, sizeof(tmp));
		qx->wr_id = 10 + (uint64_t)i;
		ibv_wr_rdma_write(qx, mr->rkey, (uintptr_t)buf + 16384 + 16 * i);
		ibv_wr_set_inline_data(qx, tmp, sizeof(tmp));
		memset(tmp, 0, sizeof(tmp));	/* reuse at once: allowed */
	}
	rc = ibv_wr_complete(qx);
	CHECK(rc == 0, "wr_complete of three inline WRITEs");
	rc = poll_n(cqa, wc, 3, 3000);
	CHECK(rc == 3 && wc[0].wr_id == 10 && wc[2].wr_id == 12 &&
		wc[1].status == IBV_WC_SUCCESS, "three completions in order");
	CHECK(buf[16384] == 'a' && buf[16384 + 16] == 'b' && buf[16384 + 47] == 'c',
		"the inline data landed (copied when set)");
	ibv_destroy_qp(q);
	(void)cqb;
}

static enum ibv_qp_state
qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia))
		return IBV_QPS_UNKNOWN;
	return a.qp_state;
}

/* 8 bytes of buf at off, as a number to compare */
static uint64_t
word_at(size_t off)
{
	uint64_t v;

	memcpy(&v, buf + off, sizeof(v));
	return v;
}

/* where in buf the ATOMIC WRITEs aim: 64 bytes of a known pattern */
#define AW_AT 20480

/*
 * The device announces ATOMIC WRITE; a UD QP asking for it is refused, an
 * RC QP gets it: that QP, or NULL.
 */
static struct ibv_qp *
aw_create_qp(struct ibv_cq *cqa)
{
	/* IB_UVERBS_DEVICE_ATOMIC_WRITE: kernel >= 6.2 uapi, not in
	 * Debian 12's headers */
	const uint64_t cap_atomic_write = 1ULL << 40;
	struct ibv_device_attr_ex dx;
	struct ibv_qp_init_attr_ex ax;
	struct ibv_qp *q, *ud;
	int rc;

	memset(&dx, 0, sizeof(dx));
	rc = ibv_query_device_ex(ctx, NULL, &dx);
	CHECK(rc == 0 && (dx.device_cap_flags_ex & cap_atomic_write),
		"device_cap_flags_ex announces ATOMIC_WRITE (rc %d, %#llx)", rc,
		(unsigned long long)dx.device_cap_flags_ex);
	memset(&ax, 0, sizeof(ax));
	ax.send_cq = cqa;
	ax.recv_cq = cqa;
	ax.qp_type = IBV_QPT_UD;
	ax.cap.max_send_wr = 16;
	ax.cap.max_recv_wr = 16;
	ax.cap.max_send_sge = 1;
	ax.cap.max_recv_sge = 1;
	ax.pd = pd;
	ax.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	ax.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_ATOMIC_WRITE;
	errno = 0;
	ud = ibv_create_qp_ex(ctx, &ax);
	CHECK(ud == NULL && errno == EOPNOTSUPP,
		"a UD QP with IBV_QP_EX_WITH_ATOMIC_WRITE: EOPNOTSUPP");
	if (ud != NULL)
		ibv_destroy_qp(ud);
	ax.qp_type = IBV_QPT_RC;
	ax.cap.max_inline_data = 0;	/* the word needs no inline room */
	ax.send_ops_flags = IBV_QP_EX_WITH_ATOMIC_WRITE |
		IBV_QP_EX_WITH_RDMA_WRITE;
	q = ibv_create_qp_ex(ctx, &ax);
	CHECK(q != NULL, "create_qp_ex with IBV_QP_EX_WITH_ATOMIC_WRITE (RC)");
	return q;
}

/* ibv_wr_atomic_write: the word is the call's, reused at once */
static void
aw_by_wr_api(struct ibv_qp_ex *qx, struct ibv_cq *cqa, uint8_t *before)
{
	struct ibv_wc wc[2];
	uint64_t v;
	int rc;

	v = 0x8877665544332211ull;
	ibv_wr_start(qx);
	qx->wr_id = 41;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_write(qx, mr->rkey, (uintptr_t)buf + AW_AT + 16, &v);
	v = 0;
	rc = ibv_wr_complete(qx);
	CHECK(rc == 0, "wr_complete of an ibv_wr_atomic_write (rc %d)", rc);
	rc = poll_n(cqa, wc, 1, 3000);
	CHECK(rc == 1 && wc[0].wr_id == 41 && wc[0].status == IBV_WC_SUCCESS &&
		wc[0].opcode == IBV_WC_ATOMIC_WRITE,
		"its completion: IBV_WC_ATOMIC_WRITE, success (%d, %s, opcode %d)",
		rc, rc == 1 ? ibv_wc_status_str(wc[0].status) : "-",
		rc == 1 ? (int)wc[0].opcode : -1);
	memcpy(before + 16, "\x11\x22\x33\x44\x55\x66\x77\x88", 8);
	CHECK(memcmp(buf + AW_AT, before, 64) == 0 &&
		word_at(AW_AT + 16) == 0x8877665544332211ull,
		"the word landed as written, every other byte unchanged");
}

/* ibv_post_send: 8 bytes from two SGEs; *w and *s are left for
 * aw_refused */
static void
aw_by_post_send(struct ibv_qp *p, struct ibv_cq *cqa, struct ibv_send_wr *w,
		struct ibv_sge *s, uint8_t *before)
{
	struct ibv_send_wr *bad;
	struct ibv_wc wc[2];
	int rc;

	memcpy(buf + 1024, "ABCDEFGH", 8);
	*s = (struct ibv_sge){ .addr = (uintptr_t)buf + 1024, .length = 8,
		.lkey = mr->lkey };
	memset(w, 0, sizeof(*w));
	w->wr_id = 42;
	w->opcode = IBV_WR_ATOMIC_WRITE;
	w->sg_list = s;
	w->num_sge = 1;
	w->send_flags = IBV_SEND_SIGNALED;
	w->wr.rdma.remote_addr = (uintptr_t)buf + AW_AT + 40;
	w->wr.rdma.rkey = mr->rkey;
	rc = ibv_post_send(p, w, &bad);
	CHECK(rc == 0, "ibv_post_send IBV_WR_ATOMIC_WRITE (rc %d)", rc);
	rc = poll_n(cqa, wc, 1, 3000);
	CHECK(rc == 1 && wc[0].wr_id == 42 && wc[0].status == IBV_WC_SUCCESS &&
		wc[0].opcode == IBV_WC_ATOMIC_WRITE,
		"ibv_post_send's completion: IBV_WC_ATOMIC_WRITE, success");
	memcpy(before + 40, "ABCDEFGH", 8);
	CHECK(memcmp(buf + AW_AT, before, 64) == 0,
		"its word landed, every other byte unchanged");
}

/* refused at posting: a good WRITE first, then the bad one (w, s from
 * aw_by_post_send); then ibv_wr_atomic_write misaligned */
static void
aw_refused(struct ibv_qp_ex *qx, struct ibv_qp *p, struct ibv_cq *cqa,
		struct ibv_send_wr *w, struct ibv_sge *s)
{
	struct ibv_send_wr w2, *bad;
	struct ibv_wc wc[2];
	uint64_t v = 0;
	int rc;

	memset(&w2, 0, sizeof(w2));
	w2 = *w;
	w2.opcode = IBV_WR_RDMA_WRITE;
	w2.wr_id = 43;
	w2.wr.rdma.remote_addr = (uintptr_t)buf + AW_AT + 128;
	w2.next = w;
	w->wr.rdma.remote_addr = (uintptr_t)buf + AW_AT + 4;
	bad = NULL;
	rc = ibv_post_send(p, &w2, &bad);
	CHECK(rc == EINVAL && bad == w,
		"misaligned remote address: EINVAL, bad_wr at it (rc %d)", rc);
	rc = poll_n(cqa, wc, 2, 1000);
	CHECK(rc == 1 && wc[0].wr_id == 43, "only the WRITE before it went");
	w->wr.rdma.remote_addr = (uintptr_t)buf + AW_AT + 8;
	s->length = 4;
	bad = NULL;
	rc = ibv_post_send(p, w, &bad);
	CHECK(rc == EINVAL && bad == w, "4 bytes: EINVAL, bad_wr at it");
	ibv_wr_start(qx);
	ibv_wr_atomic_write(qx, mr->rkey, (uintptr_t)buf + AW_AT + 12, &v);
	rc = ibv_wr_complete(qx);
	CHECK(rc == EINVAL, "ibv_wr_atomic_write misaligned: wr_complete EINVAL");
	CHECK(poll_n(cqa, wc, 1, 300) == 0 && word_at(AW_AT + 8) ==
		0x8f8e8d8c8b8a8988ull, "nothing went");
}

/*
 * IBTA 1.5 ATOMIC WRITE (rdma-core's IBV_WR_ATOMIC_WRITE): announced in
 * device_cap_flags_ex, taken by RC QPs created with
 * IBV_QP_EX_WITH_ATOMIC_WRITE (refused for UD), through ibv_wr_atomic_write
 * (the word copied at the call) and ibv_post_send (8 bytes of SGEs): the
 * word lands, its neighbours do not move, the completion is
 * IBV_WC_ATOMIC_WRITE; a misaligned address or a length other than 8 is
 * EINVAL with bad_wr at it.
 */
void
test_atomic_write(struct ibv_cq *cqa)
{
	struct ibv_qp *q, *p;
	struct ibv_qp_ex *qx;
	struct ibv_send_wr w;
	struct ibv_sge s;
	uint8_t before[64];
	int i;

	q = aw_create_qp(cqa);
	p = make_qp(cqa, cqa, NULL);
	if (q == NULL || p == NULL)
		return;
	qx = ibv_qp_to_qp_ex(q);
	if (to_init(q) || to_init(p) || to_rts(q, p->qp_num) ||
			to_rts(p, q->qp_num)) {
		CHECK(0, "connect the ATOMIC WRITE QPs");
		return;
	}
	drain(cqa);
	for (i = 0; i < 64; i++)
		buf[AW_AT + (size_t)i] = (uint8_t)(0x80 + i);
	memcpy(before, buf + AW_AT, sizeof(before));
	aw_by_wr_api(qx, cqa, before);
	aw_by_post_send(p, cqa, &w, &s, before);
	aw_refused(qx, p, cqa, &w, &s);
	CHECK(qp_state(q) == IBV_QPS_RTS && qp_state(p) == IBV_QPS_RTS,
		"both QPs still RTS");
	ibv_destroy_qp(q);
	ibv_destroy_qp(p);
}
