/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

#ifndef TP_MEM_H
#define TP_MEM_H

/* lib/transport internals: memory keys, SGEs, on-demand paging, flushes. */

#include "tp_objects.h"

/* tp_flush.c */
/* [addr, addr+len) wholly in shared mappings of files with storage
 * behind them (what a FLUSH to persistence can reach): 0 or an errno. */
int tp_range_durable(const void *addr, size_t len);
/* Write [p, p+len) back to its file (msync MS_SYNC): 0 or -errno. */
int tp_flush_persist(void *p, uint64_t len);

/* tp_mr.c */
/* The MR or MW a key names now (its slot, and the key byte that says
 * which registration of the slot): inline, once or twice per message. */
static inline struct tp_key *
tp_key_find(struct droce_dev *dev, uint32_t key)
{
	uint32_t s = key >> 8;
	struct tp_key *k;

	if (s == 0 || s >= TP_KEY_SLOTS)
		return NULL;
	k = &dev->keys[s];
	if (k->kind == TP_KEY_FREE || k->key != key)
		return NULL;
	return k;
}

static inline struct droce_mr *
tp_lkey_lookup(struct droce_dev *dev, struct droce_pd *pd, uint32_t lkey)
{
	struct tp_key *k = tp_key_find(dev, lkey);
	struct droce_mr *mr;

	if (k == NULL || k->kind != TP_KEY_MR)
		return NULL;
	mr = k->obj;
	return mr->pd == pd ? mr : NULL;
}
/* What rkey names for qp if it grants access: the MR (or the window's
 * MR) in *mrp, where its bytes are in this process, its iova and length
 * (neither range check nor page fault). 0, or -1. */
int tp_rkey_object(struct droce_qp *qp, uint32_t rkey, unsigned int access,
		struct droce_mr **mrp, uint8_t **base, uint64_t *iova,
		uint64_t *len);
/* tp_rkey_resolve for what the inline case leaves: windows, on-demand
 * MRs, keys that name nothing. */
uint8_t *tp_rkey_resolve_any(struct droce_qp *qp, uint32_t rkey, uint64_t va,
		uint64_t len, uint64_t span, unsigned int access,
		struct droce_mr **mrp);

/* Resolve [va, va+len) under rkey with access; NULL if not allowed. An
 * rkey naming a pinned MR, the case of nearly every request, inline.
 * span: how far from va the caller goes on in this transport call (the
 * rest of a message): an on-demand MR faults that in with the piece
 * where it can (tp_odp_fault_ahead). */
static inline uint8_t *
tp_rkey_resolve_ahead(struct droce_qp *qp, uint32_t rkey, uint64_t va,
		uint64_t len, uint64_t span, unsigned int access,
		struct droce_mr **mrp)
{
	struct tp_key *k = tp_key_find(qp->dev, rkey);
	struct droce_mr *mr = k != NULL ? k->obj : NULL;

	if (k == NULL || k->kind != TP_KEY_MR ||
			(mr->access & IBV_ACCESS_ON_DEMAND))
		return tp_rkey_resolve_any(qp, rkey, va, len, span, access,
			mrp);
	if (mr->pd != qp->pd || (mr->access & access) != access)
		return NULL;
	/* [va, va+len) inside [iova, iova+len), without overflow */
	if (va < mr->iova || len > mr->len || va - mr->iova > mr->len - len)
		return NULL;
	if (mrp != NULL)
		*mrp = mr;
	return (uint8_t *)((uintptr_t)mr->base + (va - mr->iova));
}

static inline uint8_t *
tp_rkey_resolve(struct droce_qp *qp, uint32_t rkey, uint64_t va, uint64_t len,
		unsigned int access, struct droce_mr **mrp)
{
	return tp_rkey_resolve_ahead(qp, rkey, va, len, len, access, mrp);
}
/* Invalidate the type-2 MW rkey names (check_only: only say whether it
 * could be): 0 or -EINVAL. */
int tp_invalidate_rkey(struct droce_qp *qp, uint32_t rkey, int check_only);
int tp_bind_mw(struct droce_qp *qp, struct droce_mw *mw,
		const struct ibv_mw_bind_info *b, uint32_t new_rkey);
/* Copy between an SGE list (at byte offset off) and a flat buffer. */
int tp_sge_copy_out(struct droce_dev *dev, struct droce_pd *pd,
		const struct ibv_sge *sge, uint32_t n, uint64_t off,
		uint8_t *dst, uint32_t len);
/* The same checks alone: could len bytes go at off. */
int tp_sge_room(struct droce_dev *dev, struct droce_pd *pd,
		const struct ibv_sge *sge, uint32_t n, uint64_t off, uint32_t len);
/* On-demand paging: [addr, addr+len)'s pages faulted in (writable if
 * write) before the data path touches them; 0 or -1 (not mapped). */
int tp_odp_fault(uintptr_t addr, uint64_t len, unsigned int write);
/* The same for a piece of a longer range, [addr, addr+span) (the rest of
 * an SGE): faulted with it where it can be, and then pieces of it in the
 * same transport call need no system call. */
int tp_odp_fault_ahead(uintptr_t addr, uint64_t len, uint64_t span,
		unsigned int write);
/* A transport call (receive burst, progress) begins on this thread. */
void tp_odp_new_call(void);

/* The memory of one SGE, checked against its lkey for need, where the
 * caller touches len bytes at off (checked against the SGE before): NULL
 * if refused. Inline: a one-SGE WR's check and scatter run per message. */
static inline __attribute__((always_inline)) uint8_t *
tp_sge_piece(struct droce_dev *dev, struct droce_pd *pd,
		const struct ibv_sge *s, unsigned int need, uint64_t off,
		uint64_t len, struct droce_mr **mrp)
{
	struct droce_mr *mr = tp_lkey_lookup(dev, pd, s->lkey);
	uint64_t lo, a;

	if (mr == NULL || (mr->access & need) != need)
		return NULL;
	*mrp = mr;
	/* ZERO_BASED MRs take addresses as offsets; others the owner's
	 * virtual addresses (local_va), which need not be ours */
	lo = (mr->access & IBV_ACCESS_ZERO_BASED) ? 0 : mr->local_va;
	if (s->addr < lo)
		return NULL;
	a = s->addr - lo;
	if (s->length > mr->len || a > mr->len - s->length)
		return NULL;
	/* on demand: the pages of the piece about to be touched, as a
	 * NIC's fault takes them, and the rest of the SGE with them for
	 * the next frames of this call (a 64 KB SGE sent in 1 KB frames
	 * faulted whole for each cost 64 times the page walks) */
	if ((mr->access & IBV_ACCESS_ON_DEMAND) && len != 0 &&
			tp_odp_fault_ahead((uintptr_t)mr->base + a + off, len,
			s->length - off, need & IBV_ACCESS_LOCAL_WRITE) != 0)
		return NULL;
	return (uint8_t *)((uintptr_t)mr->base + a);
}

/* The same for the whole SGE. */
static inline __attribute__((always_inline)) uint8_t *
tp_sge_addr(struct droce_dev *dev, struct droce_pd *pd,
		const struct ibv_sge *s, unsigned int need, struct droce_mr **mrp)
{
	return tp_sge_piece(dev, pd, s, need, 0, s->length, mrp);
}

int tp_sge_check_list(struct droce_dev *dev, struct droce_pd *pd,
		const struct ibv_sge *sge, uint32_t n, unsigned int need_access);
int tp_sge_copy_in_list(struct droce_dev *dev, struct droce_pd *pd,
		const struct ibv_sge *sge, uint32_t n, uint64_t off,
		const uint8_t *src, uint32_t len);

/* Check every SGE of a list against its lkey: 0 or -EPERM. */
static inline int
tp_sge_check(struct droce_dev *dev, struct droce_pd *pd,
		const struct ibv_sge *sge, uint32_t n, unsigned int need_access)
{
	struct droce_mr *mr;

	if (n == 1)
		return sge->length == 0 ||
			tp_sge_addr(dev, pd, sge, need_access, &mr) != NULL ?
			0 : -EPERM;
	return tp_sge_check_list(dev, pd, sge, n, need_access);
}

/* Scatter into an SGE list at byte offset off; every piece checked before
 * one is written: -EPERM or -EMSGSIZE, nothing copied. */
static inline int
tp_sge_copy_in(struct droce_dev *dev, struct droce_pd *pd,
		const struct ibv_sge *sge, uint32_t n, uint64_t off,
		const uint8_t *src, uint32_t len)
{
	struct droce_mr *mr;
	uint8_t *d;

	if (n != 1)
		return tp_sge_copy_in_list(dev, pd, sge, n, off, src, len);
	if (off > sge->length || len > sge->length - off)
		return -EMSGSIZE;
	d = tp_sge_piece(dev, pd, sge, IBV_ACCESS_LOCAL_WRITE, off, len, &mr);
	if (d == NULL)
		return -EPERM;
	memcpy(d + off, src, len);
	return 0;
}
static inline uint64_t
tp_sge_total(const struct ibv_sge *sge, uint32_t n)
{
	uint64_t t = 0;
	uint32_t i;

	for (i = 0; i < n; i++)
		t += sge[i].length;
	return t;
}
/* The registered memory behind len bytes at off of an SGE list, as at most
 * max spans: their count, 0 if more are needed, -EPERM on a bad lkey. */
int tp_sge_spans(struct droce_dev *dev, struct droce_pd *pd,
		const struct ibv_sge *sge, uint32_t n, uint64_t off,
		uint32_t len, struct droce_txspan *sp, uint32_t max);

#endif /* TP_MEM_H */
