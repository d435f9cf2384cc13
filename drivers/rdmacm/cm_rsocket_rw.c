/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * rsockets' send and receive calls. A send copies into the send buffer
 * (or goes inline) and writes into the peer's receive buffer with an
 * immediate that carries its length; a receive copies out of the local
 * receive buffer in the order the immediates came.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "cm_rsocket.h"

void
rs_iov_copy(struct rs_iov *c, uint8_t *dst, size_t len)
{
	size_t n;

	while (len > 0 && c->cnt > 0) {
		n = c->iov->iov_len - c->off;
		if (n > len)
			n = len;
		memcpy(dst, (const uint8_t *)c->iov->iov_base + c->off, n);
		dst += n;
		len -= n;
		c->off += n;
		if (c->off == c->iov->iov_len) {
			c->iov++;
			c->cnt--;
			c->off = 0;
		}
	}
}

bool
rs_nonblock(const struct rs_socket *rs, int flags)
{
	return (rs->fs_flags & O_NONBLOCK) || (flags & MSG_DONTWAIT);
}

/* A connect in progress moves on; -1 and EAGAIN while it still is. */
static int
rs_ready(struct rs_socket *rs)
{
	if (rs_opening(rs) && rs_cm_progress(rs) != 0) {
		if (errno == EINPROGRESS)
			errno = EAGAIN;
		return -1;
	}
	if (rs->rmsg == NULL || rs->phase == RS_CONNECT_ERROR) {
		errno = rs->phase == RS_CONNECT_ERROR && rs->err ? rs->err :
			ENOTCONN;
		return -1;
	}
	return 0;
}

/* Post one chunk to d; the send buffer's bytes come back with its
 * completion (wr_id is the immediate: its length). */
static int
rs_post_chunk(struct rs_socket *rs, struct ibv_sge *sgl, int nsge,
		uint32_t len, int flags, const struct rs_dst *d)
{
	struct ibv_send_wr wr, *bad;

	rs->sqe_avail--;
	rs->sbuf_bytes_avail -= len;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = d->msg;
	wr.sg_list = sgl;
	wr.num_sge = nsge;
	wr.opcode = d->imm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
	wr.send_flags = flags;
	if (d->imm)
		wr.imm_data = htobe32(d->msg);
	wr.wr.rdma.remote_addr = d->addr;
	wr.wr.rdma.rkey = d->rkey;
	return ibv_post_send(rs->id->qp, &wr, &bad) == 0 ? 0 : -1;
}

static uint32_t
rs_sbuf_left(struct rs_socket *rs)
{
	return (uint32_t)((uintptr_t)(rs->sbuf + rs->sbuf_size) -
			rs->ssgl[0].addr);
}

/*
 * len bytes at the cursor to d: inline straight from the caller's
 * memory when they fit and are contiguous, else copied into the send
 * ring (one or two pieces).
 */
int
rs_send_chunk(struct rs_socket *rs, struct rs_iov *c, uint32_t len,
		const struct rs_dst *d)
{
	int flags = len <= rs->sq_inline ? IBV_SEND_INLINE : 0;
	uint32_t left = rs_sbuf_left(rs);
	struct ibv_sge sge;
	int rc;

	if (flags && c->cnt > 0 && c->iov->iov_len - c->off >= len) {
		sge.addr = (uintptr_t)c->iov->iov_base + c->off;
		sge.length = len;
		sge.lkey = 0;
		rc = rs_post_chunk(rs, &sge, 1, len, flags, d);
		c->off += len;
		if (c->off == c->iov->iov_len) {
			c->iov++;
			c->cnt--;
			c->off = 0;
		}
		return rc;
	}
	if (len <= left) {
		rs_iov_copy(c, (uint8_t *)(uintptr_t)rs->ssgl[0].addr, len);
		rs->ssgl[0].length = len;
		rc = rs_post_chunk(rs, rs->ssgl, 1, len, flags, d);
		if (len < left)
			rs->ssgl[0].addr += len;
		else
			rs->ssgl[0].addr = (uintptr_t)rs->sbuf;
		return rc;
	}
	rs->ssgl[0].length = left;
	rs_iov_copy(c, (uint8_t *)(uintptr_t)rs->ssgl[0].addr, left);
	rs->ssgl[1].length = len - left;
	rs_iov_copy(c, rs->sbuf, len - left);
	rc = rs_post_chunk(rs, rs->ssgl, 2, len, flags, d);
	rs->ssgl[0].addr = (uintptr_t)rs->sbuf + rs->ssgl[1].length;
	return rc;
}

/* Data into the peer's buffer, where its entry says; the entry
 * advances, and moves on to the next once the half is full. */
static int
rs_write_data(struct rs_socket *rs, struct rs_iov *c, uint32_t len)
{
	struct rs_sge *t = &rs->sgl[rs->target_sge];
	struct rs_dst d = { rs_msg(RS_OP_DATA, len), t->addr, t->key, true };

	rs->sseq_no++;
	t->addr += len;
	t->length -= len;
	if (t->length == 0 && ++rs->target_sge == RS_SGL_SIZE)
		rs->target_sge = 0;
	return rs_send_chunk(rs, c, len, &d);
}

/* The next chunk of a large transfer: 2 KB first, doubling to 64 KB, so
 * that the first write leaves early and later ones are large. */
uint32_t
rs_chunk(struct rs_socket *rs, size_t left, uint32_t *olen)
{
	uint32_t xfer = left > UINT32_MAX ? UINT32_MAX : (uint32_t)left;

	if (*olen < left) {
		xfer = *olen;
		if (*olen < RS_MAX_TRANSFER)
			*olen <<= 1;
	}
	if (xfer > rs->sbuf_bytes_avail)
		xfer = rs->sbuf_bytes_avail;
	return xfer;
}

/* Until a chunk may go: 0, or -1 (EWOULDBLOCK, ECONNRESET). */
int
rs_wait_send(struct rs_socket *rs, int flags)
{
	if (!rs->wr) {
		/* our own SHUT_WR, or the peer gone */
		errno = rs_connected(rs) ? EPIPE : ECONNRESET;
		return -1;
	}
	if (rs_can_send(rs))
		return 0;
	if (rs_wait(rs, rs_nonblock(rs, flags), rs_conn_can_send) != 0)
		return -1;
	if (!rs->wr) {
		errno = ECONNRESET;
		return -1;
	}
	return 0;
}

/* Lock held. */
static ssize_t
rs_sendv_locked(struct rs_socket *rs, const struct iovec *iov, int iovcnt,
		int flags)
{
	struct rs_iov c = { iov, iovcnt, 0 };
	size_t len = 0, left;
	uint32_t xfer, olen = RS_OLAP_START_SIZE;
	int i, rc = 0;

	for (i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	if (rs->iomap_pending && rs_send_iomaps(rs, flags) != 0)
		return -1;
	for (left = len; left > 0; left -= xfer) {
		xfer = 0;
		rc = rs_wait_send(rs, flags);
		if (rc != 0)
			break;
		xfer = rs_chunk(rs, left, &olen);
		if (xfer > rs->sgl[rs->target_sge].length)
			xfer = rs->sgl[rs->target_sge].length;
		rc = rs_write_data(rs, &c, xfer);
		if (rc != 0)
			break;
	}
	return rc != 0 && left == len ? -1 : (ssize_t)(len - left);
}

static ssize_t
rs_sendv(int s, const struct iovec *iov, int iovcnt, int flags)
{
	struct rs_socket *rs = rs_get(s);
	ssize_t r;

	if (rs == NULL)
		return -1;
	if (iovcnt < 0) {
		rs_put(rs);
		errno = EINVAL;
		return -1;
	}
	r = rs_ready(rs);
	if (r == 0)
		r = rs_sendv_locked(rs, iov, iovcnt, flags);
	rs_put(rs);
	return r;
}

ssize_t
rsend(int s, const void *buf, size_t len, int flags)
{
	struct iovec v = { (void *)(uintptr_t)buf, len };

	return rs_sendv(s, &v, 1, flags);
}

ssize_t
rsendto(int s, const void *buf, size_t len, int flags,
		const struct sockaddr *to, socklen_t tolen)
{
	struct rs_socket *rs = rs_get(s);
	bool conn;

	if (rs == NULL)
		return -1;
	conn = rs_connected(rs) || rs_opening(rs);
	rs_put(rs);
	if (to != NULL && tolen > 0 && !conn) {
		errno = EISCONN;	/* a stream: no address per send */
		return -1;
	}
	return rsend(s, buf, len, flags);
}

ssize_t
rsendmsg(int s, const struct msghdr *msg, int flags)
{
	if (msg->msg_control != NULL && msg->msg_controllen > 0) {
		errno = ENOTSUP;
		return -1;
	}
	return rs_sendv(s, msg->msg_iov, (int)msg->msg_iovlen, flags);
}

ssize_t
rwrite(int s, const void *buf, size_t count)
{
	return rsend(s, buf, count, 0);
}

ssize_t
rwritev(int s, const struct iovec *iov, int iovcnt)
{
	return rs_sendv(s, iov, iovcnt, 0);
}

/* ---- receiving ---- */

/* Copy up to len bytes of what has come; consume unless peek. */
static size_t
rs_copy_out(struct rs_socket *rs, uint8_t *buf, size_t len, bool peek)
{
	int head = rs->rmsg_head;
	uint32_t off = rs->rbuf_offset, n, end;
	size_t left = len;

	while (left > 0 && head != rs->rmsg_tail) {
		n = rs->rmsg[head].data;
		if (left < n) {
			n = left;
			if (!peek)
				rs->rmsg[head].data -= n;
		} else {
			if (!peek)
				rs->rseq_no++;
			if (++head == rs->rq_size + 1)
				head = 0;
		}
		left -= n;
		end = rs->rbuf_size - off;
		if (n > end) {
			memcpy(buf, &rs->rbuf[off], end);
			buf += end;
			n -= end;
			off = 0;
			if (!peek)
				rs->rbuf_bytes_avail += end;
		}
		memcpy(buf, &rs->rbuf[off], n);
		buf += n;
		off += n;
		if (!peek)
			rs->rbuf_bytes_avail += n;
	}
	if (!peek) {
		rs->rmsg_head = head;
		rs->rbuf_offset = off;
	}
	return len - left;
}

static ssize_t
rs_recv_locked(struct rs_socket *rs, void *buf, size_t len, int flags)
{
	size_t got = 0;
	int rc = 0;

	do {
		if (!rs_have_rdata(rs)) {
			rc = rs_wait(rs, rs_nonblock(rs, flags),
					rs_conn_have_rdata);
			if (rc != 0)
				break;
		}
		got += rs_copy_out(rs, (uint8_t *)buf + got, len - got,
				(flags & MSG_PEEK) != 0);
		if (flags & MSG_PEEK)
			break;
	} while (got < len && (flags & MSG_WAITALL) && rs->rd);
	/* consumed buffer goes back to the peer without waiting */
	rs_process_cq(rs);
	if (rc != 0 && got == 0)
		return -1;
	return (ssize_t)got;
}

ssize_t
rrecv(int s, void *buf, size_t len, int flags)
{
	struct rs_socket *rs = rs_get(s);
	ssize_t r;

	if (rs == NULL)
		return -1;
	r = rs_ready(rs);
	if (r == 0)
		r = rs_recv_locked(rs, buf, len, flags);
	rs_put(rs);
	return r;
}

ssize_t
rrecvfrom(int s, void *buf, size_t len, int flags, struct sockaddr *from,
		socklen_t *fromlen)
{
	ssize_t r = rrecv(s, buf, len, flags);

	if (r > 0 && from != NULL && fromlen != NULL)
		rgetpeername(s, from, fromlen);
	return r;
}

/* Fill the vectors in order; only the first may wait. */
static ssize_t
rs_recvv(int s, const struct iovec *iov, int iovcnt, int flags)
{
	struct rs_socket *rs = rs_get(s);
	ssize_t r = 0, n;
	int i;

	if (rs == NULL)
		return -1;
	if (rs_ready(rs) != 0) {
		rs_put(rs);
		return -1;
	}
	for (i = 0; i < iovcnt; i++) {
		if (iov[i].iov_len == 0)
			continue;
		if (r > 0 && !rs_have_rdata(rs))
			break;
		n = rs_recv_locked(rs, iov[i].iov_base, iov[i].iov_len,
				r > 0 ? flags | MSG_DONTWAIT : flags);
		if (n < 0) {
			if (r == 0)
				r = -1;
			break;
		}
		r += n;
		if ((size_t)n < iov[i].iov_len)
			break;
	}
	rs_put(rs);
	return r;
}

ssize_t
rrecvmsg(int s, struct msghdr *msg, int flags)
{
	if (msg->msg_control != NULL && msg->msg_controllen > 0) {
		errno = ENOTSUP;
		return -1;
	}
	msg->msg_flags = 0;
	return rs_recvv(s, msg->msg_iov, (int)msg->msg_iovlen, flags);
}

ssize_t
rread(int s, void *buf, size_t count)
{
	return rrecv(s, buf, count, 0);
}

ssize_t
rreadv(int s, const struct iovec *iov, int iovcnt)
{
	return rs_recvv(s, iov, iovcnt, 0);
}
