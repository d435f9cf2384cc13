/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * rsockets' data path: the QP and its buffers, the completion queue and
 * the credits it returns, and the waits of a blocking call.
 */

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cm_rsocket.h"

#define RS_POLL_BATCH 16
#define RS_WAIT_SLICE_MS 200	/* a lost wake-up costs at most this */

uint8_t
rs_value_to_scale(uint16_t v)
{
	return v <= (1 << 7) ? v : (1 << 7) | (v >> 8);
}

uint16_t
rs_scale_to_value(uint8_t v)
{
	return v <= (1 << 7) ? v : (uint16_t)((v & ~(1 << 7)) << 8);
}

static void *
rs_alloc_pages(size_t len)
{
	void *p;

	if (posix_memalign(&p, 4096, len) != 0) {
		errno = ENOMEM;
		return NULL;
	}
	memset(p, 0, len);
	return p;
}

static void
rs_clamp_sizes(struct rs_socket *rs)
{
	struct ibv_device_attr da;
	uint32_t max = RS_QP_MAX_SIZE;

	if (ibv_query_device(rs->id->verbs, &da) == 0 &&
			(uint32_t)da.max_qp_wr < max)
		max = (uint32_t)da.max_qp_wr;
	if (rs->sq_size > max)
		rs->sq_size = max;
	else if (rs->sq_size < RS_QP_MIN_SIZE)
		rs->sq_size = RS_QP_MIN_SIZE;
	if (rs->rq_size > max)
		rs->rq_size = max;
	else if (rs->rq_size < RS_QP_MIN_SIZE)
		rs->rq_size = RS_QP_MIN_SIZE;
}

/* n receives in one call: data comes by RDMA WRITE, so a receive only
 * takes the immediate and has no buffer */
static int
rs_post_recvs(struct rs_socket *rs, int n)
{
	struct ibv_recv_wr wr[RS_POLL_BATCH], *bad;
	int i, k;

	while (n > 0) {
		k = n < RS_POLL_BATCH ? n : RS_POLL_BATCH;
		memset(wr, 0, sizeof(wr[0]) * k);
		for (i = 0; i < k; i++) {
			wr[i].wr_id = RS_WR_RECV;
			wr[i].next = i + 1 < k ? &wr[i + 1] : NULL;
		}
		if (ibv_post_recv(rs->id->qp, wr, &bad) != 0)
			return -1;
		n -= k;
	}
	return 0;
}

static int
rs_create_queues(struct rs_socket *rs)
{
	struct ibv_qp_init_attr qa;
	int fl;

	rs->cch = ibv_create_comp_channel(rs->id->verbs);
	if (rs->cch == NULL)
		return -1;
	/* waits poll() it, then take the event without blocking */
	fl = fcntl(rs->cch->fd, F_GETFL);
	if (fl < 0 || fcntl(rs->cch->fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -1;
	rs->cq = ibv_create_cq(rs->id->verbs, rs->sq_size + rs->rq_size, rs,
			rs->cch, 0);
	if (rs->cq == NULL)
		return -1;
	memset(&qa, 0, sizeof(qa));
	qa.qp_context = rs;
	qa.send_cq = rs->cq;
	qa.recv_cq = rs->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.sq_sig_all = 1;
	qa.cap.max_send_wr = rs->sq_size;
	qa.cap.max_recv_wr = rs->rq_size;
	qa.cap.max_send_sge = 2;
	qa.cap.max_recv_sge = 1;
	qa.cap.max_inline_data = rs->sq_inline;
	if (rdma_create_qp(rs->id, NULL, &qa) != 0)
		return -1;
	rs->sq_inline = qa.cap.max_inline_data;
	rs->pd = rs->id->pd != NULL ? rs->id->pd : rs->id->qp->pd;
	return 0;
}

static int
rs_create_bufs(struct rs_socket *rs)
{
	const int rw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	size_t len;

	rs->rmsg = calloc(rs->rq_size + 1, sizeof(*rs->rmsg));
	/* the control area after the data: SGL updates too big to inline */
	len = rs->sbuf_size + sizeof(struct rs_sge) * RS_QP_CTRL_SIZE;
	rs->sbuf = rs_alloc_pages(len);
	if (rs->rmsg == NULL || rs->sbuf == NULL)
		return -1;
	rs->smr = ibv_reg_mr(rs->pd, rs->sbuf, len, IBV_ACCESS_LOCAL_WRITE);
	if (rs->smr == NULL)
		return -1;
	len = sizeof(struct rs_sge) * RS_SGL_SIZE +
		sizeof(struct rs_iomap) * rs->target_iomap_size;
	rs->target_buf = rs_alloc_pages(len);
	if (rs->target_buf == NULL)
		return -1;
	rs->target_mr = ibv_reg_mr(rs->pd, rs->target_buf, len, rw);
	if (rs->target_mr == NULL)
		return -1;
	rs->target_sgl = rs->target_buf;
	if (rs->target_iomap_size > 0) {
		rs->target_iomap = (struct rs_iomap *)
			((struct rs_sge *)rs->target_buf + RS_SGL_SIZE);
		rs->iomap = calloc(rs->target_iomap_size, sizeof(*rs->iomap));
		if (rs->iomap == NULL)
			return -1;
	}
	rs->rbuf = rs_alloc_pages(rs->rbuf_size);
	if (rs->rbuf == NULL)
		return -1;
	rs->rmr = ibv_reg_mr(rs->pd, rs->rbuf, rs->rbuf_size, rw);
	if (rs->rmr == NULL)
		return -1;
	rs->ssgl[0].addr = rs->ssgl[1].addr = (uintptr_t)rs->sbuf;
	rs->ssgl[0].lkey = rs->ssgl[1].lkey = rs->smr->lkey;
	rs->sbuf_bytes_avail = rs->sbuf_size;
	/* the first half goes to the peer in the private data */
	rs->rbuf_free_offset = rs->rbuf_size >> 1;
	rs->rbuf_bytes_avail = rs->rbuf_size >> 1;
	rs->sqe_avail = rs->sq_size - rs->ctrl_max_seqno;
	rs->rseq_comp = rs->rq_size >> 1;
	return 0;
}

/* The QP, its CQ and the buffers, receives posted: before connecting. */
int
rs_create_ep(struct rs_socket *rs)
{
	rs_clamp_sizes(rs);
	if (rs_create_queues(rs) != 0 || rs_create_bufs(rs) != 0)
		return -1;
	return rs_post_recvs(rs, rs->rq_size);
}

void
rs_free_ep(struct rs_socket *rs)
{
	struct rs_iomap_mr *m, *n;

	/* the QP first: nothing may still reach the memory below */
	if (rs->id != NULL && rs->id->qp != NULL)
		rdma_destroy_qp(rs->id);
	if (rs->cq != NULL)
		ibv_destroy_cq(rs->cq);
	if (rs->cch != NULL)
		ibv_destroy_comp_channel(rs->cch);
	rs->cq = NULL;
	rs->cch = NULL;
	for (m = rs->iomaps; m != NULL; m = n) {
		n = m->next;
		ibv_dereg_mr(m->mr);
		free(m);
	}
	rs->iomaps = NULL;
	free(rs->remote_slots);
	if (rs->smr != NULL)
		ibv_dereg_mr(rs->smr);
	if (rs->rmr != NULL)
		ibv_dereg_mr(rs->rmr);
	if (rs->target_mr != NULL)
		ibv_dereg_mr(rs->target_mr);
	free(rs->sbuf);
	free(rs->rbuf);
	free(rs->target_buf);
	free(rs->rmsg);
	free(rs->iomap);
	rs->iomap = NULL;
	rs->remote_slots = NULL;
	rs->smr = rs->rmr = rs->target_mr = NULL;
	rs->sbuf = rs->rbuf = NULL;
	rs->target_buf = NULL;
	rs->rmsg = NULL;
}

void
rs_format_conn_data(struct rs_socket *rs, struct rs_conn_data *c)
{
	memset(c, 0, sizeof(*c));
	c->version = RS_CONN_VERSION;
	c->flags = RS_CONN_FLAG_IOMAP |
		(__BYTE_ORDER == __BIG_ENDIAN ? RS_CONN_FLAG_NET : 0);
	c->credits = htobe16(rs->rq_size);
	c->target_iomap_size = rs_value_to_scale(rs->target_iomap_size);
	c->target_sgl.addr = htobe64((uintptr_t)rs->target_sgl);
	c->target_sgl.length = htobe32(RS_SGL_SIZE);
	c->target_sgl.key = htobe32(rs->target_mr->rkey);
	c->data_buf.addr = htobe64((uintptr_t)rs->rbuf);
	c->data_buf.length = htobe32(rs->rbuf_size >> 1);
	c->data_buf.key = htobe32(rs->rmr->rkey);
}

void
rs_save_conn_data(struct rs_socket *rs, const struct rs_conn_data *c)
{
	bool net = (c->flags & RS_CONN_FLAG_NET) != 0;

	rs->remote_sgl.addr = be64toh(c->target_sgl.addr);
	rs->remote_sgl.length = be32toh(c->target_sgl.length);
	rs->remote_sgl.key = be32toh(c->target_sgl.key);
	rs->remote_sge = 1;	/* entry 0 came in the private data */
	/* SGL updates are written in the sender's order: swap if ours
	 * differs from the peer's */
	rs->swap_sgl = net != (__BYTE_ORDER == __BIG_ENDIAN);
	if (c->flags & RS_CONN_FLAG_IOMAP) {
		rs->remote_iomap.addr = rs->remote_sgl.addr +
			sizeof(struct rs_sge) * rs->remote_sgl.length;
		rs->remote_iomap.length =
			rs_scale_to_value(c->target_iomap_size);
		rs->remote_iomap.key = rs->remote_sgl.key;
	}
	/* entry 0 comes here; the peer writes 1, 0, 1, ... after it */
	rs->sgl[0].addr = be64toh(c->data_buf.addr);
	rs->sgl[0].length = be32toh(c->data_buf.length);
	rs->sgl[0].key = be32toh(c->data_buf.key);
	rs->sgl_next = 1;
	rs->sseq_comp = be16toh(c->credits);
}

/* ---- posting ---- */

static int
rs_post_write_imm(struct rs_socket *rs, struct ibv_sge *sgl, int nsge,
		uint32_t msg, int flags, uint64_t addr, uint32_t rkey)
{
	struct ibv_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = msg;
	wr.sg_list = sgl;
	wr.num_sge = nsge;
	wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr.send_flags = flags;
	wr.imm_data = htobe32(msg);
	wr.wr.rdma.remote_addr = addr;
	wr.wr.rdma.rkey = rkey;
	return ibv_post_send(rs->id->qp, &wr, &bad) == 0 ? 0 : -1;
}

int
rs_post_ctrl(struct rs_socket *rs, uint32_t ctrl)
{
	return rs_post_write_imm(rs, NULL, 0, rs_msg(RS_OP_CTRL, ctrl), 0,
			0, 0);
}

bool
rs_ctrl_avail(struct rs_socket *rs)
{
	return rs->ctrl_seqno != rs->ctrl_max_seqno;
}

bool
rs_ctrl_avail_or_down(struct rs_socket *rs)
{
	return rs_ctrl_avail(rs) || !rs_connected(rs);
}

/* Half the receive buffer to the peer, with credits; or credits alone. */
static void
rs_send_credits(struct rs_socket *rs)
{
	struct rs_sge sge, *slot;
	struct ibv_sge ib;
	uint32_t msg, half = rs->rbuf_size >> 1;
	uint64_t a;
	int flags = IBV_SEND_INLINE;

	rs->ctrl_seqno++;
	rs->rseq_comp = rs->rseq_no + (rs->rq_size >> 1);
	msg = rs_msg(RS_OP_SGL, (uint32_t)rs->rseq_no + rs->rq_size);
	if (rs->rbuf_bytes_avail < half) {
		rs_post_write_imm(rs, NULL, 0, msg, 0, 0, 0);
		return;
	}
	a = (uintptr_t)&rs->rbuf[rs->rbuf_free_offset];
	sge.addr = rs->swap_sgl ? __builtin_bswap64(a) : a;
	sge.key = rs->swap_sgl ? __builtin_bswap32(rs->rmr->rkey) : rs->rmr->rkey;
	sge.length = rs->swap_sgl ? __builtin_bswap32(half) : half;
	ib.addr = (uintptr_t)&sge;
	ib.length = sizeof(sge);
	ib.lkey = 0;
	if (rs->sq_inline < sizeof(sge)) {
		slot = (struct rs_sge *)(rs->sbuf + rs->sbuf_size) +
			(rs->ctrl_seqno & (RS_QP_CTRL_SIZE - 1));
		*slot = sge;
		ib.addr = (uintptr_t)slot;
		ib.lkey = rs->smr->lkey;
		flags = 0;
	}
	rs_post_write_imm(rs, &ib, 1, msg, flags, rs->remote_sgl.addr +
			rs->remote_sge * sizeof(struct rs_sge), rs->remote_sgl.key);
	rs->rbuf_bytes_avail -= half;
	rs->rbuf_free_offset += half;
	if (rs->rbuf_free_offset >= rs->rbuf_size)
		rs->rbuf_free_offset = 0;
	if (++rs->remote_sge == (int)rs->remote_sgl.length)
		rs->remote_sge = 0;
}

static void
rs_update_credits(struct rs_socket *rs)
{
	if (!rs_connected(rs) || !rs_ctrl_avail(rs))
		return;
	if (rs->rbuf_bytes_avail >= (rs->rbuf_size >> 1) ||
			(int16_t)(rs->rseq_no - rs->rseq_comp) >= 0)
		rs_send_credits(rs);
}

/* ---- completions ---- */

/* The entry of the target SGL the write before this immediate filled. */
static void
rs_take_sgl(struct rs_socket *rs)
{
	volatile struct rs_sge *t = &rs->target_sgl[rs->sgl_next];

	rs->sgl[rs->sgl_next].addr = t->addr;
	rs->sgl[rs->sgl_next].key = t->key;
	rs->sgl[rs->sgl_next].length = t->length;
	if (++rs->sgl_next == RS_SGL_SIZE)
		rs->sgl_next = 0;
}

static void
rs_take_iomap(struct rs_socket *rs, uint32_t i)
{
	volatile struct rs_iomap *t;

	if (i >= rs->target_iomap_size)
		return;
	t = &rs->target_iomap[i];
	rs->iomap[i].offset = t->offset;
	rs->iomap[i].sge.addr = t->sge.addr;
	rs->iomap[i].sge.key = t->sge.key;
	rs->iomap[i].sge.length = t->sge.length;
}

static void
rs_recv_msg(struct rs_socket *rs, uint32_t msg, uint32_t byte_len)
{
	switch (rs_msg_op(msg)) {
	case RS_OP_SGL:
		/* with an entry written (16 bytes), or credits alone */
		if (byte_len >= sizeof(struct rs_sge))
			rs_take_sgl(rs);
		rs->sseq_comp = (uint16_t)rs_msg_data(msg);
		break;
	case RS_OP_IOMAP_SGL:
		rs_take_iomap(rs, rs_msg_data(msg));
		break;
	case RS_OP_WRITE:
		break;
	case RS_OP_CTRL:
		if (rs_msg_data(msg) == RS_CTRL_DISCONNECT) {
			rs->phase = RS_DISCONNECTED;
			rs->rd = rs->wr = false;
		} else if (rs_msg_data(msg) == RS_CTRL_SHUTDOWN) {
			if (rs->wr) {
				rs->rd = false;
			} else {
				rs->phase = RS_DISCONNECTED;
				rs->rd = false;
			}
		}
		break;
	default:
		/* a write never crosses a half of the buffer: a longer one
		 * would have us copy from past its end */
		if (rs_msg_data(msg) > rs->rbuf_size >> 1) {
			rs->phase = RS_ERROR;
			rs->rd = rs->wr = false;
			rs->err = EPROTO;
			break;
		}
		rs->rmsg[rs->rmsg_tail].op = rs_msg_op(msg);
		rs->rmsg[rs->rmsg_tail].data = rs_msg_data(msg);
		if (++rs->rmsg_tail == rs->rq_size + 1)
			rs->rmsg_tail = 0;
		break;
	}
}

static void
rs_send_done(struct rs_socket *rs, const struct ibv_wc *wc)
{
	uint32_t msg = (uint32_t)wc->wr_id;

	switch (rs_msg_op(msg)) {
	case RS_OP_SGL:
		rs->ctrl_max_seqno++;
		break;
	case RS_OP_CTRL:
		rs->ctrl_max_seqno++;
		if (rs_msg_data(msg) == RS_CTRL_DISCONNECT) {
			rs->phase = RS_DISCONNECTED;
			rs->rd = rs->wr = false;
		}
		break;
	case RS_OP_IOMAP_SGL:
		rs->sqe_avail++;
		rs->sbuf_bytes_avail += sizeof(struct rs_iomap);
		break;
	default:
		rs->sqe_avail++;
		rs->sbuf_bytes_avail += rs_msg_data(msg);
		break;
	}
	if (wc->status != IBV_WC_SUCCESS && rs_connected(rs)) {
		rs->phase = RS_ERROR;
		rs->rd = rs->wr = false;
		rs->err = EIO;
	}
}

/* Everything the CQ holds; receives reposted while connected. */
int
rs_process_cq(struct rs_socket *rs)
{
	struct ibv_wc wc[RS_POLL_BATCH];
	int n, i, rcnt = 0;

	if (rs->cq == NULL)
		return 0;
	rs_update_credits(rs);
	while ((n = ibv_poll_cq(rs->cq, RS_POLL_BATCH, wc)) > 0) {
		for (i = 0; i < n; i++) {
			if (!(wc[i].wr_id & RS_WR_RECV)) {
				rs_send_done(rs, &wc[i]);
				continue;
			}
			if (wc[i].status != IBV_WC_SUCCESS)
				continue;	/* flushed */
			rcnt++;
			if (wc[i].wc_flags & IBV_WC_WITH_IMM)
				rs_recv_msg(rs, be32toh(wc[i].imm_data),
						wc[i].byte_len);
		}
	}
	if (rs_connected(rs) && rcnt > 0 && rs_post_recvs(rs, rcnt) != 0) {
		rs->phase = RS_ERROR;
		rs->rd = rs->wr = false;
		rs->err = errno;
	}
	rs_update_credits(rs);
	return n < 0 ? -1 : 0;
}

/* Take one completion event off the channel (never blocks). */
void
rs_cq_event(struct rs_socket *rs)
{
	struct ibv_cq *cq;
	void *ctx;

	if (rs->cch == NULL)
		return;
	while (ibv_get_cq_event(rs->cch, &cq, &ctx) == 0) {
		ibv_ack_cq_events(cq, 1);
		rs->cq_armed = false;
	}
}

static uint64_t
rs_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/*
 * Until test holds: completions first, then (unless nonblock) a sleep on
 * the completion channel and the CM channel, the lock dropped meanwhile
 * so that a sender and a receiver in two threads both progress. The
 * sleep is sliced, so that a wake-up another thread took costs a slice.
 */
int
rs_wait(struct rs_socket *rs, bool nonblock, bool (*test)(struct rs_socket *rs))
{
	struct pollfd p[2];
	uint64_t t0 = 0, spin = rs_spin_us();

	for (;;) {
		rs_process_cq(rs);
		if (test(rs))
			return 0;
		if (nonblock) {
			errno = EWOULDBLOCK;
			return -1;
		}
		/* a completion due soon costs no wake-up (rdma-core's
		 * polling_time): a sleep's wake-up through droced costs more
		 * than a round trip */
		if (t0 == 0)
			t0 = rs_now_us();
		if (rs_now_us() - t0 < spin)
			continue;
		if (rs->cq != NULL && !rs->cq_armed) {
			ibv_req_notify_cq(rs->cq, 0);
			rs->cq_armed = true;
			continue;	/* what came before the arming */
		}
		p[0].fd = rs->cch != NULL ? rs->cch->fd : -1;
		p[0].events = POLLIN;
		p[1].fd = rs->index;
		p[1].events = POLLIN;
		p[0].revents = p[1].revents = 0;
		pthread_mutex_unlock(&rs->lock);
		poll(p, 2, RS_WAIT_SLICE_MS);
		pthread_mutex_lock(&rs->lock);
		if (p[0].revents)
			rs_cq_event(rs);
		if (p[1].revents)
			rs_cm_events(rs);
	}
}

/* ---- tests ---- */

/* Room here, a work request, a credit and room at the peer. */
bool
rs_can_send(struct rs_socket *rs)
{
	return rs->sqe_avail > 0 && rs->sbuf_bytes_avail >= RS_SNDLOWAT &&
		rs->sseq_no != rs->sseq_comp &&
		rs->sgl[rs->target_sge].length != 0;
}

bool
rs_conn_can_send(struct rs_socket *rs)
{
	return rs_can_send(rs) || !rs->wr;
}

bool
rs_have_rdata(struct rs_socket *rs)
{
	return rs->rmsg_head != rs->rmsg_tail;
}

bool
rs_conn_have_rdata(struct rs_socket *rs)
{
	return rs_have_rdata(rs) || !rs->rd;
}

bool
rs_all_sends_done(struct rs_socket *rs)
{
	return (int)(rs->ctrl_max_seqno - rs->ctrl_seqno) + rs->sqe_avail ==
		rs->sq_size || !rs_connected(rs);
}
