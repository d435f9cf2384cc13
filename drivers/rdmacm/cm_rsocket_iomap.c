/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * riomap, riounmap, riowrite: memory one side maps at an offset, which
 * the other side then writes directly (RDMA WRITE, no immediate, so the
 * owner learns of it by a message sent after). A writable mapping goes
 * to the peer as an entry of its iomap table, written with an
 * RS_OP_IOMAP_SGL immediate naming the entry, before the next send.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "cm_rsocket.h"

static int
rs_free_slot(struct rs_socket *rs)
{
	uint32_t i;

	if (rs->remote_iomap.length == 0)
		return -1;
	if (rs->remote_slots == NULL) {
		rs->remote_slots = calloc(rs->remote_iomap.length,
				sizeof(*rs->remote_slots));
		if (rs->remote_slots == NULL)
			return -1;
	}
	for (i = 0; i < rs->remote_iomap.length; i++)
		if (rs->remote_slots[i] == NULL)
			return (int)i;
	return -1;
}

off_t
riomap(int s, void *buf, size_t len, int prot, int flags, off_t offset)
{
	struct rs_socket *rs = rs_get(s);
	struct rs_iomap_mr *m;
	int access = IBV_ACCESS_LOCAL_WRITE;
	int slot = -1;

	(void)flags;
	if (rs == NULL)
		return -1;
	if (rs->pd == NULL || (prot & ~(PROT_WRITE | PROT_NONE))) {
		rs_put(rs);
		errno = EINVAL;
		return -1;
	}
	if (prot & PROT_WRITE) {
		slot = rs_free_slot(rs);
		if (slot < 0) {
			rs_put(rs);
			errno = ENOMEM;
			return -1;
		}
		access |= IBV_ACCESS_REMOTE_WRITE;
	}
	m = calloc(1, sizeof(*m));
	if (m == NULL || (m->mr = ibv_reg_mr(rs->pd, buf, len, access)) == NULL) {
		free(m);
		rs_put(rs);
		if (errno == 0)
			errno = ENOMEM;
		return -1;
	}
	if (offset == -1)
		offset = (off_t)(uintptr_t)buf;
	m->offset = (uint64_t)offset;
	m->index = slot;
	m->next = rs->iomaps;
	rs->iomaps = m;
	if (slot >= 0) {
		rs->remote_slots[slot] = m;
		rs->iomap_pending = true;
	}
	rs_put(rs);
	return offset;
}

int
riounmap(int s, void *buf, size_t len)
{
	struct rs_socket *rs = rs_get(s);
	struct rs_iomap_mr **pp, *m;

	if (rs == NULL)
		return -1;
	for (pp = &rs->iomaps; (m = *pp) != NULL; pp = &m->next) {
		if (m->mr->addr != buf || m->mr->length != len)
			continue;
		*pp = m->next;
		/* the peer's entry stays: it is only ever overwritten */
		if (m->index >= 0)
			rs->remote_slots[m->index] = NULL;
		ibv_dereg_mr(m->mr);
		free(m);
		rs_put(rs);
		return 0;
	}
	rs_put(rs);
	errno = EINVAL;
	return -1;
}

/* The entries not yet at the peer, each written into its table. */
int
rs_send_iomaps(struct rs_socket *rs, int flags)
{
	struct rs_iomap_mr *m;
	struct rs_iomap iom;
	struct iovec v = { &iom, sizeof(iom) };
	struct rs_iov c;
	struct rs_dst d;

	for (m = rs->iomaps; m != NULL; m = m->next) {
		if (m->index < 0 || m->sent)
			continue;
		if (rs_wait_send(rs, flags) != 0)
			return -1;
		iom.offset = m->offset;
		iom.sge.addr = (uintptr_t)m->mr->addr;
		iom.sge.length = (uint32_t)m->mr->length;
		iom.sge.key = m->mr->rkey;
		if (rs->swap_sgl) {
			iom.offset = __builtin_bswap64(iom.offset);
			iom.sge.addr = __builtin_bswap64(iom.sge.addr);
			iom.sge.length = __builtin_bswap32(iom.sge.length);
			iom.sge.key = __builtin_bswap32(iom.sge.key);
		}
		c = (struct rs_iov){ &v, 1, 0 };
		d = (struct rs_dst){ rs_msg(RS_OP_IOMAP_SGL, (uint32_t)m->index),
			rs->remote_iomap.addr + m->index * sizeof(iom),
			rs->remote_iomap.key, true };
		rs->sseq_no++;
		if (rs_send_chunk(rs, &c, sizeof(iom), &d) != 0)
			return -1;
		m->sent = true;
	}
	rs->iomap_pending = false;
	return 0;
}

/* The peer's mapping that holds offset; NULL if none. */
static struct rs_iomap *
rs_find_iomap(struct rs_socket *rs, uint64_t offset)
{
	struct rs_iomap *t;
	uint16_t i;

	for (i = 0; i < rs->target_iomap_size; i++) {
		t = &rs->iomap[i];
		if (t->sge.length != 0 && offset >= t->offset &&
				offset < t->offset + t->sge.length)
			return t;
	}
	return NULL;
}

static ssize_t
rs_iowrite_locked(struct rs_socket *rs, const void *buf, size_t count,
		uint64_t offset, int flags)
{
	struct iovec v = { (void *)(uintptr_t)buf, count };
	struct rs_iov c = { &v, 1, 0 };
	struct rs_iomap *iom = NULL;
	uint32_t xfer = 0, olen = RS_OLAP_START_SIZE;
	struct rs_dst d;
	size_t left;
	int rc = 0;

	if (rs->iomap_pending && rs_send_iomaps(rs, flags) != 0)
		return -1;
	for (left = count; left > 0; left -= xfer, offset += xfer) {
		xfer = 0;
		if (iom == NULL || offset >= iom->offset + iom->sge.length) {
			iom = rs_find_iomap(rs, offset);
			if (iom == NULL)
				break;
		}
		rc = rs_wait_send(rs, flags);
		if (rc != 0)
			break;
		xfer = rs_chunk(rs, left, &olen);
		if (xfer > iom->offset + iom->sge.length - offset)
			xfer = (uint32_t)(iom->offset + iom->sge.length - offset);
		d = (struct rs_dst){ rs_msg(RS_OP_WRITE, xfer),
			iom->sge.addr + offset - iom->offset, iom->sge.key, false };
		rc = rs_send_chunk(rs, &c, xfer, &d);
		if (rc != 0)
			break;
	}
	if (left == count && (rc != 0 || count > 0)) {
		if (rc == 0)
			errno = EINVAL;	/* no mapping holds the offset */
		return -1;
	}
	return (ssize_t)(count - left);
}

size_t
riowrite(int s, const void *buf, size_t count, off_t offset, int flags)
{
	struct rs_socket *rs = rs_get(s);
	ssize_t r;

	if (rs == NULL)
		return (size_t)-1;
	r = rs->rmsg != NULL ? rs_iowrite_locked(rs, buf, count,
			(uint64_t)offset, flags) : -1;
	if (rs->rmsg == NULL)
		errno = ENOTCONN;
	rs_put(rs);
	return (size_t)r;
}
