/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * Memory: MRs (registration, re-registration, on-demand paging's advice)
 * and memory windows. Each wraps the transport's object, or asks droced
 * when attached. Errors follow the man pages.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "droce_verbs.h"
#include "attach.h"

/* ---- memory regions ---- */

/* Flags a provider may ignore (IBV_ACCESS_OPTIONAL_RANGE). */
#define DV_ACCESS_SUPPORTED (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
	IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND | \
	IBV_ACCESS_ZERO_BASED | IBV_ACCESS_RELAXED_ORDERING | \
	IBV_ACCESS_ON_DEMAND | DROCE_ACCESS_FLUSH_GLOBAL | \
	DROCE_ACCESS_FLUSH_PERSISTENT)

/* The errno access (ORed optional flags already cleared) gets on the
 * context c, 0 if droce takes it; ibv_reg_mr and ibv_rereg_mr ask it. */
static int
access_errno(struct ibv_context *c, unsigned int access)
{
	if (access & ~(unsigned int)DV_ACCESS_SUPPORTED)
		return EOPNOTSUPP;	/* huge-page hints: not droce's */
	if (!da_attached(c))
		return 0;
	/* droced reaches only memory the application shares with it: no
	 * on-demand paging attached (doc/daemon.md) */
	if (access & IBV_ACCESS_ON_DEMAND)
		return EOPNOTSUPP;
	/* nor anything with storage behind it: the pages move onto a
	 * memfd, so no FLUSH can make them persistent */
	if (access & DROCE_ACCESS_FLUSH_PERSISTENT)
		return EINVAL;
	return 0;
}

static struct ibv_mr *
reg_mr(struct ibv_pd *ibpd, void *addr, size_t length, uint64_t iova,
		unsigned int access)
{
	struct droce_mr *mr;
	struct ibv_mr *m;
	int rc;

	access &= ~(unsigned int)IBV_ACCESS_OPTIONAL_RANGE;
	rc = access_errno(ibpd->context, access);
	if (rc != 0) {
		errno = rc;
		return NULL;
	}
	if (da_attached(ibpd->context)) {
		return da_reg_mr(ibpd, addr, length, iova,
			access & ~(unsigned int)IBV_ACCESS_RELAXED_ORDERING);
	}
	mr = droce_mr_reg(dv_pd(ibpd)->tpd, addr, length, iova,
		access & ~(unsigned int)IBV_ACCESS_RELAXED_ORDERING);
	if (mr == NULL)
		return NULL;
	m = droce_mr_to_ibv(mr);
	m->context = ibpd->context;
	m->pd = ibpd;
	m->handle = m->lkey;
	return m;
}

#undef ibv_reg_mr
struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
		int access);

struct ibv_mr *
ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	return reg_mr(pd, addr, length, (uintptr_t)addr, (unsigned int)access);
}

#undef ibv_reg_mr_iova
struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length,
		uint64_t iova, int access);

struct ibv_mr *
ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
		int access)
{
	return reg_mr(pd, addr, length, iova, (unsigned int)access);
}

struct ibv_mr *
ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
		unsigned int access)
{
	return reg_mr(pd, addr, length, iova, access);
}

int
ibv_dereg_mr(struct ibv_mr *mr)
{
	if (da_attached(mr->context))
		return da_dereg_mr(mr);
	return -droce_mr_dereg(droce_mr_from_ibv(mr));
}

struct ibv_mr *
ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length,
		uint64_t iova, int fd, int access)
{
	(void)pd; (void)offset; (void)length; (void)iova; (void)fd; (void)access;
	errno = EOPNOTSUPP;	/* no device memory behind a software NIC */
	return NULL;
}

_Static_assert(DROCE_REREG_TRANSLATION == IBV_REREG_MR_CHANGE_TRANSLATION &&
	DROCE_REREG_PD == IBV_REREG_MR_CHANGE_PD &&
	DROCE_REREG_ACCESS == IBV_REREG_MR_CHANGE_ACCESS &&
	DROCE_REREG_ALL == IBV_REREG_MR_FLAGS_SUPPORTED, "rereg flags");

/*
 * A new range, PD or access for a registered MR, in place (the same
 * ibv_mr). It gets new keys: the old lkey and rkey stop working at once,
 * as with a kernel provider. On any error the MR is as it was, so the
 * answer is IBV_REREG_MR_ERR_INPUT ("old MR is valid") with errno: EINVAL
 * (flags, access, a PD of another device), EBUSY (windows bound to it),
 * EFAULT or ENOMEM (the new range cannot be pinned).
 */
/*
 * ibv_advise_mr (verbs_context op): prefetch faults the ranges in now,
 * writable for PREFETCH_WRITE; PREFETCH_NO_FAULT has nothing to do (no
 * page is mapped into a NIC here). Synchronous, so IBV_ADVISE_MR_FLAG_FLUSH
 * is always met. 0, EINVAL, EFAULT; EOPNOTSUPP attached (no ODP there).
 */
int
dv_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
		uint32_t flags, struct ibv_sge *sg_list, uint32_t num_sge)
{
	uint32_t i;
	int rc;

	if (da_attached(pd->context))
		return EOPNOTSUPP;
	if ((flags & ~(uint32_t)IBV_ADVISE_MR_FLAG_FLUSH) || num_sge == 0 ||
			sg_list == NULL ||
			(advice != IBV_ADVISE_MR_ADVICE_PREFETCH &&
			advice != IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE &&
			advice != IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT))
		return EINVAL;
	for (i = 0; i < num_sge; i++) {
		if (advice == IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT)
			continue;
		rc = -droce_mr_advise(dv_pd(pd)->tpd, sg_list[i].lkey,
			sg_list[i].addr, sg_list[i].length,
			advice == IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE);
		if (rc != 0)
			return rc;
	}
	return 0;
}

int
ibv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr,
		size_t length, int access)
{
	unsigned int acc = (unsigned int)access & ~(unsigned int)IBV_ACCESS_OPTIONAL_RANGE;
	struct dv_context *ctx;
	struct droce_port *port;
	uint32_t q;
	int rc;

	if (mr == NULL || flags == 0 || (flags & ~IBV_REREG_MR_FLAGS_SUPPORTED) ||
			((flags & IBV_REREG_MR_CHANGE_PD) && pd == NULL) ||
			((flags & IBV_REREG_MR_CHANGE_TRANSLATION) &&
			(addr == NULL || length == 0))) {
		errno = EINVAL;
		return IBV_REREG_MR_ERR_INPUT;
	}
	if ((flags & IBV_REREG_MR_CHANGE_ACCESS) &&
			(rc = access_errno(mr->context, acc)) != 0) {
		errno = rc;
		return IBV_REREG_MR_ERR_INPUT;
	}
	acc &= ~(unsigned int)IBV_ACCESS_RELAXED_ORDERING;
	if (da_attached(mr->context)) {
		rc = da_rereg_mr(mr, flags, pd, addr, length, acc);
	} else if ((flags & IBV_REREG_MR_CHANGE_PD) &&
			pd->context != mr->context) {
		rc = EINVAL;
	} else {
		ctx = dv_ctx(mr->context);
		port = ctx->dev->port;
		/* the data path reads MRs under its queues' locks */
		for (q = 0; q < ctx->dev->nb_queues; q++)
			droce_port_lock(port, q);
		rc = -droce_mr_rereg(droce_mr_from_ibv(mr), (unsigned int)flags,
			(flags & IBV_REREG_MR_CHANGE_PD) ? dv_pd(pd)->tpd : NULL,
			addr, (uint64_t)(uintptr_t)addr, length,
			(uint64_t)(uintptr_t)addr, acc);
		for (q = ctx->dev->nb_queues; q-- > 0;)
			droce_port_unlock(port, q);
		if (rc == 0) {
			if (flags & IBV_REREG_MR_CHANGE_PD)
				mr->pd = pd;
			mr->handle = mr->lkey;
		}
	}
	if (rc != 0) {
		errno = rc;
		return IBV_REREG_MR_ERR_INPUT;
	}
	return 0;
}

/* ---- memory windows (ibv_context.ops) ---- */

struct ibv_mw *
dv_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct droce_mw *mw = droce_mw_alloc(dv_pd(pd)->tpd, type);
	struct ibv_mw *m;

	if (mw == NULL)
		return NULL;
	m = droce_mw_to_ibv(mw);
	m->context = pd->context;
	m->pd = pd;
	m->handle = m->rkey;
	return m;
}

int
dv_dealloc_mw(struct ibv_mw *mw)
{
	return -droce_mw_dealloc(droce_mw_from_ibv(mw));
}

int
dv_bind_mw(struct ibv_qp *ibqp, struct ibv_mw *mw, struct ibv_mw_bind *bind)
{
	struct dv_qp *qp = dv_qp(ibqp);
	struct droce_port *port = qp->ctx->dev->port;
	uint32_t rkey;
	int rc;

	droce_port_lock_driving(port, qp->q);
	rc = droce_mw_bind1(qp->tqp, droce_mw_from_ibv(mw), bind, &rkey);
	droce_port_progress_locked(port, qp->q);
	droce_port_unlock(port, qp->q);
	if (rc < 0)
		return -rc;
	if (rc > 0)
		return rc;
	mw->rkey = rkey;
	return 0;
}
