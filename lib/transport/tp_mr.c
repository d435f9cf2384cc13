/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * Memory regions and windows share one key space: key = slot << 8 | key
 * byte. lkey == rkey for an MR (as rxe). The key byte changes every time a
 * slot is reused or a window rebound, so a stale key never matches.
 * Lookups on the fast path read the slot table without the lock; slots
 * change only on the slow path, under the device lock.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tp_internal.h"

/* Last key byte handed out per slot, so reuse gives a different one. */
static uint8_t
next_key_byte(struct tp_key *k)
{
	return (uint8_t)((k->key & 0xff) + 1 + (k->key >> 24 & 0x3));
}

static int
key_alloc(struct droce_dev *dev, enum tp_key_kind kind, void *obj,
		uint32_t *key)
{
	uint32_t i, s;

	for (i = 0; i < TP_KEY_SLOTS - 1; i++) {
		s = (dev->key_hint + i) % (TP_KEY_SLOTS - 1) + 1;
		if (dev->keys[s].kind == TP_KEY_FREE) {
			uint8_t b = next_key_byte(&dev->keys[s]);

			dev->keys[s].kind = kind;
			dev->keys[s].obj = obj;
			dev->keys[s].key = s << 8 | b;
			dev->key_hint = s + 1;
			*key = dev->keys[s].key;
			return 0;
		}
	}
	return -ENOMEM;
}


/* Whether this kernel has MADV_POPULATE_* (5.14 and later): -1 unknown. */
static int populate_ok = -1;

/* Whether every page of [start, end) is mapped (mincore: ENOMEM if not). */
static int
range_mapped(uintptr_t start, uintptr_t end, uintptr_t pg)
{
	unsigned char v[4096];
	uintptr_t a, n;

	for (a = start; a < end; a += n * pg) {
		n = (end - a) / pg;
		if (n > sizeof(v))
			n = sizeof(v);
		if (mincore((void *)a, n * pg, v) != 0)
			return 0;
	}
	return 1;
}

/* Whether madvise(MADV_POPULATE_*) works here, found out once. */
static void
populate_probe(void)
{
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t here = (uintptr_t)&pg & ~(pg - 1);

	/* this stack frame's page is surely mapped and readable: only an
	 * unknown advice fails here */
	if (populate_ok < 0)
		populate_ok = madvise((void *)here, pg, MADV_POPULATE_READ) == 0;
}

/*
 * Fault the region in now, writable where the MR may be written, as a
 * kernel provider's pinning does: the data path must not stop on a page
 * fault at the first WRITE into a page, nor die on memory that is not
 * there. Returns 0, EFAULT (part of the range is not mapped, or cannot
 * be pinned as asked: not writable for a writable MR, or device memory;
 * rxe's answer too) or ENOMEM (no memory to back it). On kernels without
 * MADV_POPULATE_* the region is let through and the data path faults it
 * in as before.
 */
static int
mr_populate(void *addr, size_t len, unsigned int access)
{
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t start = (uintptr_t)addr & ~(pg - 1);
	uintptr_t end = ((uintptr_t)addr + len + pg - 1) & ~(pg - 1);
	int adv = (access & IBV_ACCESS_LOCAL_WRITE) ? MADV_POPULATE_WRITE :
		MADV_POPULATE_READ;

	if (len == 0)
		return 0;
	if (end < start)
		return EFAULT;
	populate_probe();
	if (!populate_ok || madvise((void *)start, end - start, adv) == 0)
		return 0;
	/* ENOMEM: a hole in the range, or out of memory; EFAULT: would
	 * SIGSEGV/SIGBUS; EINVAL: the mapping's permissions or kind do not
	 * allow it */
	if (errno == ENOMEM)
		return range_mapped(start, end, pg) ? ENOMEM : EFAULT;
	return errno == EFAULT || errno == EINVAL ? EFAULT : 0;
}

/*
 * On-demand paging: the pages of [addr, addr+len) faulted in now, as a
 * NIC's page fault would (writable for a write), before the data path
 * touches them; 0, or -1 where they are not mapped (or not writable):
 * the access fails as one outside the MR does, and nothing crashes.
 * Without MADV_POPULATE_* (kernels before 5.14) only mapped pages are
 * checked (mincore).
 */
int
tp_odp_fault(uintptr_t addr, uint64_t len, unsigned int write)
{
	static uintptr_t pg;	/* sysconf costs ~50 instructions a call */
	uintptr_t start, end;

	if (pg == 0)
		pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	start = addr & ~(pg - 1);

	if (addr + len < addr)
		return -1;
	end = (addr + len + pg - 1) & ~(pg - 1);
	if (populate_ok > 0)
		return madvise((void *)start, end - start, write ?
			MADV_POPULATE_WRITE : MADV_POPULATE_READ) == 0 ? 0 : -1;
	return range_mapped(start, end, pg) ? 0 : -1;
}

/*
 * What this thread faulted in during the transport call it is in: a
 * piece of an SGE faults the rest of the SGE with it, and the next
 * frames of the message, built in the same call, find their pages in
 * without a system call each. A new call (tp_odp_new_call) forgets it:
 * the application may unmap its memory between two calls as between
 * two frames, and an access then fails as it must.
 */
static __thread struct {
	uintptr_t lo, hi;
	unsigned int write;
} odp_win;

void
tp_odp_new_call(void)
{
	odp_win.hi = 0;
}

int
tp_odp_fault_ahead(uintptr_t addr, uint64_t len, uint64_t span,
		unsigned int write)
{
	if (addr >= odp_win.lo && addr + len <= odp_win.hi &&
			(odp_win.write || !write))
		return 0;
	/* the rest may have a hole the piece does not reach: then the
	 * piece alone */
	if (span <= len || tp_odp_fault(addr, span, write) != 0) {
		if (tp_odp_fault(addr, len, write) != 0)
			return -1;
		span = len;
	}
	odp_win.lo = addr;
	odp_win.hi = addr + span;
	odp_win.write = write;
	return 0;
}

int
droce_mr_advise(struct droce_pd *pd, uint32_t lkey, uint64_t addr,
		uint32_t len, int write)
{
	struct droce_mr *mr = tp_lkey_lookup(pd->dev, pd, lkey);
	uint64_t lo;

	if (mr == NULL)
		return -EINVAL;
	lo = (mr->access & IBV_ACCESS_ZERO_BASED) ? 0 : mr->local_va;
	if (addr < lo || len > mr->len || addr - lo > mr->len - len ||
			(write && !(mr->access & IBV_ACCESS_LOCAL_WRITE)))
		return -EINVAL;
	populate_probe();
	return tp_odp_fault((uintptr_t)mr->base + (addr - lo), len, write) == 0 ?
		0 : -EFAULT;
}

/* What an MR is: its PD, memory, addresses, access and keys. */
static void
mr_set(struct droce_mr *mr, struct droce_pd *pd, void *host,
		uint64_t local_va, uint64_t len, uint64_t iova,
		unsigned int access, uint32_t key)
{
	/* before the MR can be reached: the transport calls from here on
	 * look after their ODP window (tp_odp_new_call) */
	if (access & IBV_ACCESS_ON_DEMAND)
		__atomic_store_n(&pd->dev->odp_seen, 1, __ATOMIC_RELEASE);
	mr->pd = pd;
	mr->base = host;
	mr->local_va = local_va;
	mr->iova = (access & IBV_ACCESS_ZERO_BASED) ? 0 : iova;
	mr->len = len;
	mr->access = access;
	mr->ibv.addr = (void *)(uintptr_t)local_va;
	mr->ibv.length = len;
	mr->ibv.lkey = key;
	mr->ibv.rkey = key;
}

struct droce_mr *
droce_mr_reg(struct droce_pd *pd, void *addr, size_t len, uint64_t iova,
		unsigned int access)
{
	return droce_mr_reg_va(pd, addr, (uint64_t)(uintptr_t)addr, len, iova,
		access);
}

/*
 * host: where this process reaches the memory (the data path's reads and
 * writes, population, zero-copy spans); local_va: where its owner does
 * (local SGEs, ibv_mr.addr); iova: where the peer does (rkey access).
 */
struct droce_mr *
droce_mr_reg_va(struct droce_pd *pd, void *host, uint64_t local_va,
		size_t len, uint64_t iova, unsigned int access)
{
	struct droce_dev *dev = pd->dev;
	struct droce_mr *mr;
	uint32_t key;
	int rc;

	int odp = !!(access & IBV_ACCESS_ON_DEMAND);
	/* implicit ODP: the whole address space (ibv_reg_mr(pd, NULL,
	 * SIZE_MAX, IBV_ACCESS_ON_DEMAND | ...)) */
	int implicit = odp && host == NULL && len == SIZE_MAX;

	/* Remote write or atomic needs local write (IBTA 10.6.3.1). */
	if (((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
			!(access & IBV_ACCESS_LOCAL_WRITE)) ||
			(len > dev->lim.max_mr_size && !implicit) ||
			(host == NULL && len != 0 && !implicit) ||
			(implicit && (local_va != 0 || iova != 0)) ||
			((access & DROCE_ACCESS_FLUSH_PERSISTENT) &&
			(implicit || tp_range_durable(host, len) != 0))) {
		errno = EINVAL;
		return NULL;
	}
	/* on demand: nothing pinned now, each access faults its pages in */
	if (odp)
		populate_probe();
	rc = odp ? 0 : mr_populate(host, len, access);
	if (rc != 0) {
		errno = rc;
		return NULL;
	}
	mr = calloc(1, sizeof(*mr));
	if (mr == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_lock(&dev->lock);
	if (dev->nb_mr >= dev->lim.max_mr ||
			key_alloc(dev, TP_KEY_MR, mr, &key) != 0) {
		pthread_mutex_unlock(&dev->lock);
		free(mr);
		errno = ENOMEM;
		return NULL;
	}
	dev->nb_mr++;
	pd->refs++;
	pthread_mutex_unlock(&dev->lock);
	mr->zc_refs = 1;
	mr_set(mr, pd, host, local_va, len, iova, access, key);
	return mr;
}

int
droce_mr_dereg_start(struct droce_mr *mr)
{
	struct droce_dev *dev = mr->pd->dev;
	struct tp_key *k;

	pthread_mutex_lock(&dev->lock);
	if (mr->nb_mw) {
		pthread_mutex_unlock(&dev->lock);
		return -EBUSY;
	}
	k = tp_key_find(dev, mr->ibv.lkey);
	if (k != NULL)
		__atomic_store_n(&k->kind, TP_KEY_FREE, __ATOMIC_RELEASE);
	dev->nb_mr--;
	mr->pd->refs--;
	pthread_mutex_unlock(&dev->lock);
	return 0;
}

void
droce_mr_dereg_finish(struct droce_mr *mr)
{
	unsigned int i;

	/*
	 * Zero-copy frames still queued (droce's transmit queue, fault
	 * injection's delay queue, the NIC's ring) read this memory when they
	 * leave: give them a moment, since the application may free it once
	 * we return. Past that the MR's bookkeeping stays until the last one
	 * lets go, and such a frame may carry whatever the memory then holds.
	 */
	for (i = 0; i < DROCE_MR_ZC_WAIT_MS * 20 &&
			__atomic_load_n(&mr->zc_refs, __ATOMIC_ACQUIRE) > 1; i++)
		usleep(50);
	droce_mr_zc_put(mr);
}

int
droce_mr_dereg(struct droce_mr *mr)
{
	int rc = droce_mr_dereg_start(mr);

	if (rc == 0)
		droce_mr_dereg_finish(mr);
	return rc;
}

void
droce_mr_on_release(struct droce_mr *mr, void (*fn)(void *arg), void *arg)
{
	mr->release = fn;
	mr->release_arg = arg;
}

int
droce_mr_rereg(struct droce_mr *mr, unsigned int what, struct droce_pd *pd,
		void *host, uint64_t local_va, size_t len, uint64_t iova,
		unsigned int access)
{
	struct droce_dev *dev = mr->pd->dev;
	struct tp_key *k;
	uint32_t key;
	int rc;

	if (!(what & DROCE_REREG_PD))
		pd = mr->pd;
	if (!(what & DROCE_REREG_ACCESS))
		access = mr->access;
	if (!(what & DROCE_REREG_TRANSLATION)) {
		host = mr->base;
		local_va = mr->local_va;
		len = mr->len;
		iova = mr->iova;
	}
	if (what == 0 || what & ~(unsigned int)DROCE_REREG_ALL ||
			pd->dev != dev ||
			((access & (IBV_ACCESS_REMOTE_WRITE |
			IBV_ACCESS_REMOTE_ATOMIC)) &&
			!(access & IBV_ACCESS_LOCAL_WRITE)) ||
			len > dev->lim.max_mr_size || (host == NULL && len != 0) ||
			((access & DROCE_ACCESS_FLUSH_PERSISTENT) &&
			tp_range_durable(host, len) != 0))
		return -EINVAL;
	/* the new range pinned as at registration (writable if need be) */
	if (what & (DROCE_REREG_TRANSLATION | DROCE_REREG_ACCESS)) {
		rc = mr_populate(host, len, access);
		if (rc != 0)
			return -rc;
	}
	pthread_mutex_lock(&dev->lock);
	if (mr->nb_mw) {
		pthread_mutex_unlock(&dev->lock);
		return -EBUSY;
	}
	/* new keys: the old ones stop naming it at once */
	if (key_alloc(dev, TP_KEY_MR, mr, &key) != 0) {
		pthread_mutex_unlock(&dev->lock);
		return -ENOMEM;
	}
	k = tp_key_find(dev, mr->ibv.lkey);
	if (k != NULL)
		k->kind = TP_KEY_FREE;
	mr->pd->refs--;
	pd->refs++;
	mr_set(mr, pd, host, local_va, len, iova, access, key);
	pthread_mutex_unlock(&dev->lock);
	return 0;
}

void
droce_mr_zc_get(struct droce_mr *mr)
{
	__atomic_fetch_add(&mr->zc_refs, 1, __ATOMIC_RELAXED);
}

void
droce_mr_zc_put(struct droce_mr *mr)
{
	if (__atomic_sub_fetch(&mr->zc_refs, 1, __ATOMIC_ACQ_REL) == 0) {
		if (mr->release != NULL)
			mr->release(mr->release_arg);
		free(mr);
	}
}

uint32_t
droce_mr_lkey(const struct droce_mr *mr)
{
	return mr->ibv.lkey;
}

uint32_t
droce_mr_rkey(const struct droce_mr *mr)
{
	return mr->ibv.rkey;
}

struct ibv_mr *
droce_mr_to_ibv(struct droce_mr *mr)
{
	return &mr->ibv;
}

struct droce_mr *
droce_mr_from_ibv(struct ibv_mr *mr)
{
	return (struct droce_mr *)mr;
}

struct droce_mw *
droce_mw_alloc(struct droce_pd *pd, enum ibv_mw_type type)
{
	struct droce_dev *dev = pd->dev;
	struct droce_mw *mw;
	uint32_t key;

	if (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2) {
		errno = EINVAL;
		return NULL;
	}
	mw = calloc(1, sizeof(*mw));
	if (mw == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_lock(&dev->lock);
	if (dev->nb_mw >= dev->lim.max_mw ||
			key_alloc(dev, TP_KEY_MW, mw, &key) != 0) {
		pthread_mutex_unlock(&dev->lock);
		free(mw);
		errno = ENOMEM;
		return NULL;
	}
	dev->nb_mw++;
	pd->refs++;
	pthread_mutex_unlock(&dev->lock);
	mw->pd = pd;
	mw->type = type;
	mw->key_index = key >> 8;
	mw->ibv.rkey = key;
	mw->ibv.type = type;
	return mw;
}

static void
mw_unbind_locked(struct droce_mw *mw)
{
	if (mw->mr != NULL) {
		mw->mr->nb_mw--;
		mw->mr = NULL;
	}
	mw->len = 0;
	mw->access = 0;
}

int
droce_mw_dealloc(struct droce_mw *mw)
{
	struct droce_dev *dev = mw->pd->dev;

	pthread_mutex_lock(&dev->lock);
	mw_unbind_locked(mw);
	dev->keys[mw->key_index].kind = TP_KEY_FREE;
	dev->nb_mw--;
	mw->pd->refs--;
	pthread_mutex_unlock(&dev->lock);
	free(mw);
	return 0;
}

uint32_t
droce_mw_rkey(const struct droce_mw *mw)
{
	return mw->ibv.rkey;
}

struct ibv_mw *
droce_mw_to_ibv(struct droce_mw *mw)
{
	return &mw->ibv;
}

struct droce_mw *
droce_mw_from_ibv(struct ibv_mw *mw)
{
	return (struct droce_mw *)mw;
}

/*
 * Bind a window to [addr, addr+length) of an MR (IBTA 10.6.7). The MR must
 * allow MW binding and cover the range; remote access needs local write on
 * the MR as for an MR. new_rkey: the full key to take (type 2: the
 * caller's key byte; type 1: a fresh byte).
 */
int
tp_bind_mw(struct droce_qp *qp, struct droce_mw *mw,
		const struct ibv_mw_bind_info *b, uint32_t new_rkey)
{
	struct droce_dev *dev = qp->dev;
	struct droce_mr *mr;
	struct tp_key *k;

	if (b->mr == NULL && b->length == 0) {
		/* zero length: unbind */
		pthread_mutex_lock(&dev->lock);
		mw_unbind_locked(mw);
		pthread_mutex_unlock(&dev->lock);
		return 0;
	}
	if (b->mr == NULL)
		return -EINVAL;
	mr = droce_mr_from_ibv(b->mr);
	if (mr->pd != qp->pd || mw->pd != qp->pd)
		return -EPERM;
	if (!(mr->access & IBV_ACCESS_MW_BIND))
		return -EACCES;
	if (b->addr < mr->iova || b->length > mr->len ||
			b->addr - mr->iova > mr->len - b->length)
		return -EINVAL;
	if ((b->mw_access_flags & (IBV_ACCESS_REMOTE_WRITE |
			IBV_ACCESS_REMOTE_ATOMIC)) &&
			!(mr->access & IBV_ACCESS_LOCAL_WRITE))
		return -EACCES;
	pthread_mutex_lock(&dev->lock);
	mw_unbind_locked(mw);
	k = &dev->keys[mw->key_index];
	k->key = (mw->key_index << 8) | (new_rkey & 0xff);
	mw->ibv.rkey = k->key;
	mw->mr = mr;
	mr->nb_mw++;
	mw->base = (uint8_t *)((uintptr_t)mr->base + (b->addr - mr->iova));
	mw->iova = b->addr;
	mw->len = b->length;
	mw->access = b->mw_access_flags;
	mw->qp = mw->type == IBV_MW_TYPE_2 ? qp : NULL;
	pthread_mutex_unlock(&dev->lock);
	return 0;
}

int
droce_mw_bind1(struct droce_qp *qp, struct droce_mw *mw,
		const struct ibv_mw_bind *bind, uint32_t *new_rkey)
{
	struct ibv_send_wr wr, *bad;
	int rc;

	if (mw->type != IBV_MW_TYPE_1)
		return -EINVAL;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = bind->wr_id;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = bind->send_flags;
	wr.bind_mw.mw = &mw->ibv;
	wr.bind_mw.rkey = (mw->ibv.rkey & ~0xffu) |
		((mw->ibv.rkey + 1) & 0xff);
	wr.bind_mw.bind_info = bind->bind_info;
	rc = droce_qp_post_send(qp, &wr, &bad);
	if (rc)
		return -rc;
	*new_rkey = wr.bind_mw.rkey;
	return 0;
}

/* Invalidate an rkey (LOCAL_INV, SEND_WITH_INV): only type 2 windows. */
/* The type-2 MW of this QP's PD that rkey names, or NULL (dev->lock held). */
static struct droce_mw *
inv_target_locked(struct droce_qp *qp, uint32_t rkey)
{
	struct tp_key *k = tp_key_find(qp->dev, rkey);
	struct droce_mw *mw;

	if (k == NULL || k->kind != TP_KEY_MW)
		return NULL;
	mw = k->obj;
	if (mw->type != IBV_MW_TYPE_2 || mw->pd != qp->pd)
		return NULL;
	return mw;
}

int
tp_invalidate_rkey(struct droce_qp *qp, uint32_t rkey, int check_only)
{
	struct droce_dev *dev = qp->dev;
	struct droce_mw *mw;

	pthread_mutex_lock(&dev->lock);
	mw = inv_target_locked(qp, rkey);
	if (mw != NULL && !check_only)
		mw_unbind_locked(mw);
	pthread_mutex_unlock(&dev->lock);
	return mw != NULL ? 0 : -EINVAL;
}

int
tp_rkey_object(struct droce_qp *qp, uint32_t rkey, unsigned int access,
		struct droce_mr **mrp, uint8_t **base, uint64_t *iova,
		uint64_t *len)
{
	struct tp_key *k = tp_key_find(qp->dev, rkey);
	unsigned int acc;

	if (k == NULL)
		return -1;
	if (k->kind == TP_KEY_MR) {
		struct droce_mr *mr = k->obj;

		if (mr->pd != qp->pd)
			return -1;
		*mrp = mr;
		*base = mr->base;
		*iova = mr->iova;
		*len = mr->len;
		acc = mr->access;
	} else {
		struct droce_mw *mw = k->obj;

		if (mw->mr == NULL || mw->pd != qp->pd ||
				(mw->qp != NULL && mw->qp != qp))
			return -1;
		*mrp = mw->mr;
		*base = mw->base;
		*iova = mw->iova;
		*len = mw->len;
		acc = mw->access;
	}
	return (acc & access) == access ? 0 : -1;
}

uint8_t *
tp_rkey_resolve_any(struct droce_qp *qp, uint32_t rkey, uint64_t va,
		uint64_t len, uint64_t span, unsigned int access,
		struct droce_mr **mrp)
{
	struct droce_mr *owner;
	uint8_t *base;
	uint64_t iova, mlen;

	if (tp_rkey_object(qp, rkey, access, &owner, &base, &iova, &mlen) != 0)
		return NULL;
	/* [va, va+len) inside [iova, iova+mlen), without overflow */
	if (va < iova || len > mlen || va - iova > mlen - len)
		return NULL;
	/* the span, where it runs past the piece, inside the range too */
	if (span > len && span - len > mlen - (va - iova) - len)
		span = len;
	if ((owner->access & IBV_ACCESS_ON_DEMAND) && len != 0 &&
			tp_odp_fault_ahead((uintptr_t)base + (va - iova), len,
			span, access & (IBV_ACCESS_REMOTE_WRITE |
			IBV_ACCESS_REMOTE_ATOMIC)) != 0)
		return NULL;
	if (mrp != NULL)
		*mrp = owner;
	return (uint8_t *)((uintptr_t)base + (va - iova));
}
