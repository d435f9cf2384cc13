/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * The extended verbs: struct ibv_qp_ex (the ibv_wr_* builders, see
 * ibv_wr_post(3)), struct ibv_cq_ex (start_poll / next_poll / read_*),
 * and query_device_ex.
 *
 * ibv_wr_*: the builders fill ibv_send_wr structs in a per-QP array
 * between wr_start and wr_complete; inline data is copied by the setter
 * (the caller may reuse its buffer at once). A builder or setter cannot
 * report an error, so the first one is remembered and wr_complete returns
 * it; wr_complete posts all or nothing (droce_qp_post_send_all).
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "attach.h"

#define QPX(q) ((struct dv_qp *)(q))

/*
 * IB_UVERBS_DEVICE_ATOMIC_WRITE of the kernel's uapi (>= 6.2), which
 * rdma-core reports in device_cap_flags_ex and Debian 12's headers
 * (rdma-core 44, kernel 6.1 uapi) do not name yet: RC QPs take
 * IBV_WR_ATOMIC_WRITE, in process and attached.
 */
#define DV_DEVICE_ATOMIC_WRITE (1ULL << 40)
/* IB_UVERBS_DEVICE_FLUSH_GLOBAL and _PERSISTENT, likewise (>= 6.2):
 * FLUSH on RC QPs; persistence only in process, where an MR may lie over
 * a file (doc/verbs.md, "FLUSH") */
#define DV_DEVICE_FLUSH_GLOBAL (1ULL << 38)
#define DV_DEVICE_FLUSH_PERSISTENT (1ULL << 39)

static struct ibv_send_wr *
wr_new(struct dv_qp *qp, enum ibv_wr_opcode op, uint64_t need)
{
	struct ibv_send_wr *w;

	if (!(qp->send_ops & need)) {
		qp->wr_err = qp->wr_err ? qp->wr_err : EINVAL;
		return NULL;
	}
	if (qp->nwr == qp->cap) {
		qp->wr_err = qp->wr_err ? qp->wr_err : ENOMEM;
		return NULL;
	}
	w = &qp->wrs[qp->nwr];
	memset(w, 0, sizeof(*w));
	w->wr_id = qp->ex.wr_id;
	w->send_flags = qp->ex.wr_flags;
	w->opcode = op;
	w->sg_list = &qp->sges[(size_t)qp->nwr * qp->max_sge];
	if (qp->nwr > 0)
		qp->wrs[qp->nwr - 1].next = w;
	qp->nwr++;
	return w;
}

/* The WR the setters apply to; none is a usage error. */
static struct ibv_send_wr *
wr_last(struct dv_qp *qp)
{
	if (qp->nwr == 0) {
		qp->wr_err = qp->wr_err ? qp->wr_err : EINVAL;
		return NULL;
	}
	return &qp->wrs[qp->nwr - 1];
}

static void
wr_atomic_cmp_swp(struct ibv_qp_ex *q, uint32_t rkey, uint64_t raddr,
		uint64_t compare, uint64_t swap)
{
	struct ibv_send_wr *w = wr_new(QPX(q), IBV_WR_ATOMIC_CMP_AND_SWP,
		IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP);

	if (w == NULL)
		return;
	w->wr.atomic.rkey = rkey;
	w->wr.atomic.remote_addr = raddr;
	w->wr.atomic.compare_add = compare;
	w->wr.atomic.swap = swap;
}

static void
wr_atomic_fetch_add(struct ibv_qp_ex *q, uint32_t rkey, uint64_t raddr,
		uint64_t add)
{
	struct ibv_send_wr *w = wr_new(QPX(q), IBV_WR_ATOMIC_FETCH_AND_ADD,
		IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD);

	if (w == NULL)
		return;
	w->wr.atomic.rkey = rkey;
	w->wr.atomic.remote_addr = raddr;
	w->wr.atomic.compare_add = add;
}

static void
wr_bind_mw(struct ibv_qp_ex *q, struct ibv_mw *mw, uint32_t rkey,
		const struct ibv_mw_bind_info *info)
{
	struct ibv_send_wr *w = wr_new(QPX(q), IBV_WR_BIND_MW,
		IBV_QP_EX_WITH_BIND_MW);

	if (w == NULL)
		return;
	w->bind_mw.mw = mw;
	w->bind_mw.rkey = rkey;
	w->bind_mw.bind_info = *info;
}

static void
wr_local_inv(struct ibv_qp_ex *q, uint32_t rkey)
{
	struct ibv_send_wr *w = wr_new(QPX(q), IBV_WR_LOCAL_INV,
		IBV_QP_EX_WITH_LOCAL_INV);

	if (w != NULL)
		w->invalidate_rkey = rkey;
}

static void
wr_rdma(struct ibv_qp_ex *q, enum ibv_wr_opcode op, uint64_t need,
		uint32_t rkey, uint64_t raddr, __be32 imm)
{
	struct ibv_send_wr *w = wr_new(QPX(q), op, need);

	if (w == NULL)
		return;
	w->wr.rdma.rkey = rkey;
	w->wr.rdma.remote_addr = raddr;
	w->imm_data = imm;
}

static void
wr_rdma_read(struct ibv_qp_ex *q, uint32_t rkey, uint64_t raddr)
{
	wr_rdma(q, IBV_WR_RDMA_READ, IBV_QP_EX_WITH_RDMA_READ, rkey, raddr, 0);
}

static void
wr_rdma_write(struct ibv_qp_ex *q, uint32_t rkey, uint64_t raddr)
{
	wr_rdma(q, IBV_WR_RDMA_WRITE, IBV_QP_EX_WITH_RDMA_WRITE, rkey, raddr, 0);
}

static void
wr_rdma_write_imm(struct ibv_qp_ex *q, uint32_t rkey, uint64_t raddr,
		__be32 imm)
{
	wr_rdma(q, IBV_WR_RDMA_WRITE_WITH_IMM, IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM,
		rkey, raddr, imm);
}

static void
wr_send(struct ibv_qp_ex *q)
{
	wr_new(QPX(q), IBV_WR_SEND, IBV_QP_EX_WITH_SEND);
}

static void
wr_send_imm(struct ibv_qp_ex *q, __be32 imm)
{
	struct ibv_send_wr *w = wr_new(QPX(q), IBV_WR_SEND_WITH_IMM,
		IBV_QP_EX_WITH_SEND_WITH_IMM);

	if (w != NULL)
		w->imm_data = imm;
}

static void
wr_send_inv(struct ibv_qp_ex *q, uint32_t rkey)
{
	struct ibv_send_wr *w = wr_new(QPX(q), IBV_WR_SEND_WITH_INV,
		IBV_QP_EX_WITH_SEND_WITH_INV);

	if (w != NULL)
		w->invalidate_rkey = rkey;
}

/* The headers are copied now: the caller may reuse them at once (a
 * NIC's provider writes them into the WQE). */
static void
wr_send_tso(struct ibv_qp_ex *q, void *hdr, uint16_t hdr_sz, uint16_t mss)
{
	struct dv_qp *qp = QPX(q);
	struct ibv_send_wr *w;
	uint8_t *copy;

	if (hdr_sz > DROCE_RAW_TSO_HDR_MAX || (hdr == NULL && hdr_sz)) {
		qp->wr_err = qp->wr_err ? qp->wr_err : EINVAL;
		return;
	}
	w = wr_new(qp, IBV_WR_TSO, IBV_QP_EX_WITH_TSO);
	if (w == NULL)
		return;
	copy = qp->tso_hdr + (size_t)(qp->nwr - 1) * DROCE_RAW_TSO_HDR_MAX;
	if (hdr_sz)
		memcpy(copy, hdr, hdr_sz);
	w->tso.hdr = copy;
	w->tso.hdr_sz = hdr_sz;
	w->tso.mss = mss;
}

/*
 * The 8 bytes are copied now (the caller may reuse them at once) and go
 * as inline data: the transport and droced keep an ATOMIC WRITE's word in
 * the WQE whatever max_inline_data is.
 */
static void
wr_atomic_write(struct ibv_qp_ex *q, uint32_t rkey, uint64_t raddr,
		const void *data)
{
	struct dv_qp *qp = QPX(q);
	struct ibv_send_wr *w = wr_new(qp, IBV_WR_ATOMIC_WRITE,
		IBV_QP_EX_WITH_ATOMIC_WRITE);
	uint64_t *word;

	if (w == NULL)
		return;
	word = &qp->awr[qp->nwr - 1];
	memcpy(word, data, sizeof(*word));
	w->wr.rdma.rkey = rkey;
	w->wr.rdma.remote_addr = raddr;
	w->sg_list[0].addr = (uintptr_t)word;
	w->sg_list[0].length = sizeof(*word);
	w->sg_list[0].lkey = 0;
	w->num_sge = 1;
	w->send_flags |= IBV_SEND_INLINE;
}

/*
 * ibv_wr_flush(3) (rdma-core >= 45): the transport takes a FLUSH in
 * wr.atomic's fields (droce_transport.h), and so does droced's ring. A
 * type or level it does not know fails at wr_complete (EINVAL).
 */
static void
wr_flush(struct ibv_qp_ex *q, uint32_t rkey, uint64_t raddr, size_t len,
		uint8_t type, uint8_t level)
{
	struct ibv_send_wr *w = wr_new(QPX(q), DROCE_WR_FLUSH,
		DROCE_QP_EX_WITH_FLUSH);

	if (w == NULL)
		return;
	w->wr.atomic.rkey = rkey;
	w->wr.atomic.remote_addr = raddr;
	w->wr.atomic.compare_add = len;
	w->wr.atomic.swap = (uint64_t)type | (uint64_t)level << 8;
}

static void
wr_set_ud_addr(struct ibv_qp_ex *q, struct ibv_ah *ah, uint32_t qpn,
		uint32_t qkey)
{
	struct ibv_send_wr *w = wr_last(QPX(q));

	if (w == NULL)
		return;
	w->wr.ud.ah = ah;
	w->wr.ud.remote_qpn = qpn;
	w->wr.ud.remote_qkey = qkey;
}

/* XRC_SEND only; the transport refuses a WR left without it (EINVAL at
 * ibv_wr_complete) */
static void
wr_set_xrc_srqn(struct ibv_qp_ex *q, uint32_t srqn)
{
	struct dv_qp *qp = QPX(q);
	struct ibv_send_wr *w;

	if (qp->ex.qp_base.qp_type != IBV_QPT_XRC_SEND) {
		qp->wr_err = qp->wr_err ? qp->wr_err : EINVAL;
		return;
	}
	w = wr_last(qp);
	if (w != NULL)
		w->qp_type.xrc.remote_srqn = srqn;
}

static void
wr_set_sge_list(struct ibv_qp_ex *q, size_t n, const struct ibv_sge *sg)
{
	struct dv_qp *qp = QPX(q);
	struct ibv_send_wr *w = wr_last(qp);

	if (w == NULL)
		return;
	if (n > qp->max_sge) {
		qp->wr_err = qp->wr_err ? qp->wr_err : EINVAL;
		return;
	}
	memcpy(w->sg_list, sg, n * sizeof(*sg));
	w->num_sge = (int)n;
}

static void
wr_set_sge(struct ibv_qp_ex *q, uint32_t lkey, uint64_t addr, uint32_t len)
{
	struct ibv_sge sge = { .addr = addr, .length = len, .lkey = lkey };

	wr_set_sge_list(q, 1, &sge);
}

static void
wr_set_inline_data_list(struct ibv_qp_ex *q, size_t n,
		const struct ibv_data_buf *bufs)
{
	struct dv_qp *qp = QPX(q);
	struct ibv_send_wr *w = wr_last(qp);
	uint8_t *dst;
	size_t i, total = 0;

	if (w == NULL)
		return;
	for (i = 0; i < n; i++)
		total += bufs[i].length;
	if (total > qp->max_inline) {
		qp->wr_err = qp->wr_err ? qp->wr_err : EINVAL;
		return;
	}
	/* copied now: ibv_wr_post(3) lets the caller reuse its buffers */
	dst = qp->inl + (size_t)(qp->nwr - 1) * qp->max_inline;
	for (i = 0, total = 0; i < n; i++) {
		memcpy(dst + total, bufs[i].addr, bufs[i].length);
		total += bufs[i].length;
	}
	w->sg_list[0].addr = (uintptr_t)dst;
	w->sg_list[0].length = (uint32_t)total;
	w->sg_list[0].lkey = 0;
	w->num_sge = total ? 1 : 0;
	w->send_flags |= IBV_SEND_INLINE;
}

static void
wr_set_inline_data(struct ibv_qp_ex *q, void *addr, size_t len)
{
	struct ibv_data_buf b = { .addr = addr, .length = len };

	wr_set_inline_data_list(q, 1, &b);
}

static void
wr_start(struct ibv_qp_ex *q)
{
	struct dv_qp *qp = QPX(q);

	pthread_spin_lock(&qp->wr_lock);
	qp->nwr = 0;
	qp->wr_err = 0;
}

static int
wr_complete(struct ibv_qp_ex *q)
{
	struct dv_qp *qp = QPX(q);
	struct droce_port *port = qp->ctx->dev->port;
	struct ibv_send_wr *bad;
	int rc = qp->wr_err;

	if (rc == 0 && qp->nwr > 0 && qp->ctx->att != NULL) {
		qp->wrs[qp->nwr - 1].next = NULL;
		rc = da_post_send_all(qp, qp->wrs, &bad);
	} else if (rc == 0 && qp->nwr > 0) {
		uint32_t queued;

		qp->wrs[qp->nwr - 1].next = NULL;
		droce_port_lock(port, qp->q);
		queued = droce_qp_sq_outstanding(qp->tqp);
		rc = droce_qp_post_send_all(qp->tqp, qp->wrs, &bad);
		/* as dv_post_send: at once only onto an idle send queue */
		if (queued == 0)
			droce_port_progress_locked(port, qp->q);
		droce_port_unlock(port, qp->q);
	}
	qp->nwr = 0;
	qp->wr_err = 0;
	pthread_spin_unlock(&qp->wr_lock);
	return rc;
}

static void
wr_abort(struct ibv_qp_ex *q)
{
	struct dv_qp *qp = QPX(q);

	qp->nwr = 0;
	qp->wr_err = 0;
	pthread_spin_unlock(&qp->wr_lock);
}

int
dv_qp_ex_setup(struct dv_qp *qp, uint64_t send_ops)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr init;
	uint32_t cap;

	if (send_ops & ~droce_qp_type_send_ops(qp->ex.qp_base.qp_type)) {
		errno = EOPNOTSUPP;	/* ibv_wr_post(3): creation fails */
		return -1;
	}
	if (qp->ctx->att != NULL) {
		cap = qp->sq.size;	/* what the ring takes */
	} else if (droce_qp_query(qp->tqp, &a, 0, &init) != 0) {
		errno = EINVAL;
		return -1;
	} else {
		cap = init.cap.max_send_wr;
	}
	if (qp->max_sge == 0)
		qp->max_sge = 1;
	qp->cap = cap;
	qp->wrs = calloc(cap, sizeof(*qp->wrs));
	qp->sges = calloc((size_t)cap * qp->max_sge, sizeof(*qp->sges));
	qp->inl = qp->max_inline ? malloc((size_t)cap * qp->max_inline) : NULL;
	qp->awr = (send_ops & IBV_QP_EX_WITH_ATOMIC_WRITE) ?
		calloc(cap, sizeof(*qp->awr)) : NULL;
	qp->tso_hdr = (send_ops & IBV_QP_EX_WITH_TSO) ?
		malloc((size_t)cap * DROCE_RAW_TSO_HDR_MAX) : NULL;
	if (qp->wrs == NULL || qp->sges == NULL ||
			(qp->max_inline && qp->inl == NULL) ||
			((send_ops & IBV_QP_EX_WITH_ATOMIC_WRITE) &&
			qp->awr == NULL) ||
			((send_ops & IBV_QP_EX_WITH_TSO) && qp->tso_hdr == NULL)) {
		dv_qp_ex_fini(qp);
		errno = ENOMEM;
		return -1;
	}
	pthread_spin_init(&qp->wr_lock, PTHREAD_PROCESS_PRIVATE);
	qp->send_ops = send_ops;
	qp->is_ex = true;
	qp->ex.wr_atomic_cmp_swp = wr_atomic_cmp_swp;
	qp->ex.wr_atomic_fetch_add = wr_atomic_fetch_add;
	qp->ex.wr_bind_mw = wr_bind_mw;
	qp->ex.wr_local_inv = wr_local_inv;
	qp->ex.wr_rdma_read = wr_rdma_read;
	qp->ex.wr_rdma_write = wr_rdma_write;
	qp->ex.wr_rdma_write_imm = wr_rdma_write_imm;
	qp->ex.wr_send = wr_send;
	qp->ex.wr_send_imm = wr_send_imm;
	qp->ex.wr_send_inv = wr_send_inv;
	qp->ex.wr_send_tso = wr_send_tso;
	qp->ex.wr_set_ud_addr = wr_set_ud_addr;
	qp->ex.wr_set_xrc_srqn = wr_set_xrc_srqn;
	qp->ex.wr_set_inline_data = wr_set_inline_data;
	qp->ex.wr_set_inline_data_list = wr_set_inline_data_list;
	qp->ex.wr_set_sge = wr_set_sge;
	qp->ex.wr_set_sge_list = wr_set_sge_list;
	qp->ex.wr_start = wr_start;
	qp->ex.wr_complete = wr_complete;
	qp->ex.wr_abort = wr_abort;
	/*
	 * IBTA 1.5's two, only where asked for, as rdma-core's providers
	 * install builders: a program tells whether a QP has them by the
	 * pointer (librpma >= 1.3 flushes and writes atomically natively
	 * where it is set, and failed at wr_complete on a QP created
	 * without the flag, attached, where FLUSH_PERSISTENT is missing)
	 */
	qp->ex.wr_atomic_write = (send_ops & IBV_QP_EX_WITH_ATOMIC_WRITE) ?
		wr_atomic_write : NULL;
	qp->wr_flush = (send_ops & DROCE_QP_EX_WITH_FLUSH) ? wr_flush : NULL;
	return 0;
}

void
dv_qp_ex_fini(struct dv_qp *qp)
{
	free(qp->wrs);
	free(qp->sges);
	free(qp->inl);
	free(qp->awr);
	free(qp->tso_hdr);
	qp->tso_hdr = NULL;
	qp->wrs = NULL;
	qp->sges = NULL;
	qp->inl = NULL;
	qp->awr = NULL;
}

/* ---- struct ibv_cq_ex ---- */

#define CQX(c) ((struct dv_cq *)(c))

static inline const struct ibv_wc *
cur_wc(struct ibv_cq_ex *c)
{
	return &CQX(c)->batch[CQX(c)->cur - 1];
}

/* Deliver the next completion into the ibv_cq_ex fields; ENOENT if none. */
static int
cq_ex_next(struct dv_cq *cq)
{
	if (cq->cur == cq->nbatch) {
		int n = dv_cq_take(cq, cq->batch, DV_CQ_BATCH);

		cq->cur = 0;
		cq->nbatch = n > 0 ? n : 0;
		if (n < 0)
			return -n;
		if (n == 0)
			return ENOENT;
	}
	cq->cur++;
	cq->ex.status = cur_wc(&cq->ex)->status;
	cq->ex.wr_id = cur_wc(&cq->ex)->wr_id;
	return 0;
}

static int
cq_start_poll(struct ibv_cq_ex *c, struct ibv_poll_cq_attr *attr)
{
	if (attr != NULL && attr->comp_mask != 0)
		return EINVAL;
	return cq_ex_next(CQX(c));
}

static int
cq_next_poll(struct ibv_cq_ex *c)
{
	return cq_ex_next(CQX(c));
}

static void
cq_end_poll(struct ibv_cq_ex *c)
{
	(void)c;	/* nothing held between start and end */
}

static enum ibv_wc_opcode rd_opcode(struct ibv_cq_ex *c) { return cur_wc(c)->opcode; }
static uint32_t rd_vendor_err(struct ibv_cq_ex *c) { return cur_wc(c)->vendor_err; }
static uint32_t rd_byte_len(struct ibv_cq_ex *c) { return cur_wc(c)->byte_len; }
static __be32 rd_imm_data(struct ibv_cq_ex *c) { return cur_wc(c)->imm_data; }
static uint32_t rd_qp_num(struct ibv_cq_ex *c) { return cur_wc(c)->qp_num; }
static uint32_t rd_src_qp(struct ibv_cq_ex *c) { return cur_wc(c)->src_qp; }
static unsigned int rd_wc_flags(struct ibv_cq_ex *c) { return cur_wc(c)->wc_flags; }
static uint32_t rd_slid(struct ibv_cq_ex *c) { return cur_wc(c)->slid; }
static uint8_t rd_sl(struct ibv_cq_ex *c) { return cur_wc(c)->sl; }
static uint8_t rd_dlid_path_bits(struct ibv_cq_ex *c) { return cur_wc(c)->dlid_path_bits; }

void
dv_cq_ex_setup(struct dv_cq *cq)
{
	cq->ex.start_poll = cq_start_poll;
	cq->ex.next_poll = cq_next_poll;
	cq->ex.end_poll = cq_end_poll;
	cq->ex.read_opcode = rd_opcode;
	cq->ex.read_vendor_err = rd_vendor_err;
	cq->ex.read_byte_len = rd_byte_len;
	cq->ex.read_imm_data = rd_imm_data;
	cq->ex.read_qp_num = rd_qp_num;
	cq->ex.read_src_qp = rd_src_qp;
	cq->ex.read_wc_flags = rd_wc_flags;
	cq->ex.read_slid = rd_slid;
	cq->ex.read_sl = rd_sl;
	cq->ex.read_dlid_path_bits = rd_dlid_path_bits;
}

struct ibv_cq_ex *
dv_create_cq_ex(struct ibv_context *c, struct ibv_cq_init_attr_ex *attr)
{
	uint64_t ok_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM |
		IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP |
		IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL |
		IBV_WC_EX_WITH_DLID_PATH_BITS;
	uint32_t ok_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS | IBV_CQ_INIT_ATTR_MASK_PD;
	struct dv_cq *cq;

	if (attr->comp_mask & ~ok_mask) {
		errno = EINVAL;
		return NULL;
	}
	if (attr->wc_flags & ~ok_flags) {
		/* completion timestamps, VLAN, flow tag, tag matching */
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (attr->comp_vector >= (uint32_t)c->num_comp_vectors) {
		errno = EINVAL;
		return NULL;
	}
	cq = dv_cq_create(c, (int)attr->cqe, attr->cq_context, attr->channel);
	if (cq == NULL)
		return NULL;
	cq->wc_flags = attr->wc_flags;
	return &cq->ex;
}

int
dv_query_device_ex(struct ibv_context *c, const struct ibv_query_device_ex_input *in,
		struct ibv_device_attr_ex *attr, size_t size)
{
	struct ibv_device_attr_ex a;
	int rc;

	if (in != NULL && in->comp_mask != 0)
		return EINVAL;
	if (size < sizeof(a.orig_attr))
		return EINVAL;
	memset(&a, 0, sizeof(a));
	rc = ibv_query_device(c, &a.orig_attr);
	if (rc)
		return rc;
	a.max_dm_size = 0;
	/* the 64-bit flags include the 32 of ibv_device_attr, as the
	 * kernel's extended query reports them */
	a.device_cap_flags_ex = a.orig_attr.device_cap_flags |
		DV_DEVICE_ATOMIC_WRITE | DV_DEVICE_FLUSH_GLOBAL;
	if (!da_attached(c)) {
		/* an MR over a shared file mapping: msync */
		a.device_cap_flags_ex |= DV_DEVICE_FLUSH_PERSISTENT;
		/* RAW_PACKET QPs (in process only): flow steering, checksums
		 * both ways, TSO and packet pacing in software
		 * (lib/transport/tp_raw_tx.c) */
		a.device_cap_flags_ex |= IBV_DEVICE_RAW_IP_CSUM |
			IBV_DEVICE_MANAGED_FLOW_STEERING;
		a.raw_packet_caps = IBV_RAW_PACKET_CAP_IP_CSUM;
		a.tso_caps.max_tso = DROCE_RAW_MAX_TSO;
		a.tso_caps.supported_qpts = 1u << IBV_QPT_RAW_PACKET;
		a.packet_pacing_caps.qp_rate_limit_min =
			DROCE_RAW_RATE_MIN_KBPS;
		a.packet_pacing_caps.qp_rate_limit_max =
			DROCE_RAW_RATE_MAX_KBPS;
		a.packet_pacing_caps.supported_qpts = 1u << IBV_QPT_RAW_PACKET;
		/* nothing is pinned: every MR may be on demand, the whole
		 * address space too (implicit), for every operation */
		a.odp_caps.general_caps = IBV_ODP_SUPPORT |
			IBV_ODP_SUPPORT_IMPLICIT;
		a.odp_caps.per_transport_caps.rc_odp_caps = IBV_ODP_SUPPORT_SEND |
			IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE |
			IBV_ODP_SUPPORT_READ | IBV_ODP_SUPPORT_ATOMIC |
			IBV_ODP_SUPPORT_SRQ_RECV;
		a.odp_caps.per_transport_caps.uc_odp_caps = IBV_ODP_SUPPORT_SEND |
			IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE |
			IBV_ODP_SUPPORT_SRQ_RECV;
		a.odp_caps.per_transport_caps.ud_odp_caps = IBV_ODP_SUPPORT_SEND |
			IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_SRQ_RECV;
	}
	memcpy(attr, &a, size < sizeof(a) ? size : sizeof(a));
	return 0;
}
