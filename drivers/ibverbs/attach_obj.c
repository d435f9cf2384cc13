/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * Attached mode, the control calls: queries, PDs, MRs, completion
 * channels, CQs, AHs, multicast, and droce's own entries for its
 * librdmacm. Each is one request to droced; errors follow the verbs man
 * pages (constructors NULL and errno, the rest an errno).
 *
 * Once the daemon is gone the destroy calls still succeed (what they
 * would free on the daemon's side went with it), so an application can
 * tear down after IBV_EVENT_DEVICE_FATAL as it would after a kernel
 * device's disassociation; every other call fails with EIO.
 */

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attach.h"

static inline struct da_ctx *
att(struct ibv_context *c)
{
	return dv_ctx(c)->att;
}

/* A request that names one object to destroy: 0 when done (or when the
 * daemon is gone), else the daemon's errno. */
static int
destroy_req(struct da_ctx *a, uint32_t op, uint32_t handle)
{
	struct droce_chan_handle h = { .handle = handle };
	int rc = da_rpc(a, op, &h, NULL, NULL, 0, NULL, NULL);

	return rc == EIO && da_dead(a) ? 0 : rc;
}

static void *
fail_null(int rc)
{
	errno = rc;
	return NULL;
}

/* ---- queries ---- */

int
da_query_device(struct ibv_context *c, struct ibv_device_attr *a)
{
	struct da_ctx *s = att(c);

	if (da_dead(s))
		return EIO;
	*a = s->hello.dev_attr;
	return 0;
}

int
da_query_port(struct ibv_context *c, struct ibv_port_attr *a, size_t len)
{
	struct ibv_port_attr pa;
	int rc = da_rpc(att(c), DROCE_OP_QUERY_PORT, NULL, &pa, NULL, 0,
		NULL, NULL);

	if (rc != 0)
		return rc;
	memcpy(a, &pa, len < sizeof(pa) ? len : sizeof(pa));
	return 0;
}

/* ---- protection domains ---- */

struct ibv_pd *
da_alloc_pd(struct ibv_context *c)
{
	struct droce_chan_handle h;
	struct dv_pd *pd = calloc(1, sizeof(*pd));
	int rc;

	if (pd == NULL)
		return fail_null(ENOMEM);
	rc = da_rpc(att(c), DROCE_OP_ALLOC_PD, NULL, &h, NULL, 0, NULL, NULL);
	if (rc != 0) {
		free(pd);
		return fail_null(rc);
	}
	pd->handle = h.handle;
	pd->pd.context = c;
	pd->pd.handle = h.handle;
	return &pd->pd;
}

int
da_dealloc_pd(struct dv_pd *pd)
{
	int rc = destroy_req(att(pd->pd.context), DROCE_OP_DEALLOC_PD,
		pd->handle);

	if (rc == 0)
		free(pd);
	return rc;
}

/* ---- memory windows (attach_fast.c binds them) ---- */

struct ibv_mw *
da_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct droce_chan_alloc_mw_req r = { .pd = dv_pd(pd)->handle,
		.type = (uint32_t)type };
	struct droce_chan_alloc_mw_rep p;
	struct ibv_mw *mw = calloc(1, sizeof(*mw));
	int rc;

	if (mw == NULL)
		return fail_null(ENOMEM);
	rc = da_rpc(att(pd->context), DROCE_OP_ALLOC_MW, &r, &p, NULL, 0, NULL,
		NULL);
	if (rc != 0) {
		free(mw);
		return fail_null(rc);
	}
	mw->context = pd->context;
	mw->pd = pd;
	mw->rkey = p.rkey;
	mw->handle = p.handle;
	mw->type = type;
	return mw;
}

int
da_dealloc_mw(struct ibv_mw *mw)
{
	int rc = destroy_req(att(mw->context), DROCE_OP_DEALLOC_MW, mw->handle);

	if (rc == 0)
		free(mw);
	return rc;
}

/* ---- memory regions ---- */

/*
 * The range's pages move onto shared segments (attach_mem.c), then the
 * daemon registers them. access: checked and trimmed by the caller.
 */
struct ibv_mr *
da_reg_mr(struct ibv_pd *pd, void *addr, size_t len, uint64_t iova,
		unsigned int access)
{
	struct da_ctx *a = att(pd->context);
	struct droce_chan_reg_mr_req r;
	struct droce_chan_reg_mr_rep p;
	struct da_mem_plan plan;
	struct da_mr *m;
	int rc;

	if (da_dead(a))
		return fail_null(EIO);
	/* what the transport would refuse, refused before the daemon maps
	 * (and keeps) the new segments: remote write or atomic needs local
	 * write (IBTA 10.6.3.1) */
	if (addr == NULL || len == 0 || len > a->hello.dev_attr.max_mr_size ||
			((access & (IBV_ACCESS_REMOTE_WRITE |
			IBV_ACCESS_REMOTE_ATOMIC)) &&
			!(access & IBV_ACCESS_LOCAL_WRITE)))
		return fail_null(EINVAL);
	m = calloc(1, sizeof(*m));
	if (m == NULL)
		return fail_null(ENOMEM);
	memset(&r, 0, sizeof(r));
	pthread_mutex_lock(&a->mr_lock);
	rc = da_mem_acquire(&a->mem, addr, len, !!(access &
		(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		IBV_ACCESS_REMOTE_ATOMIC)), &plan, m->segs, &m->nsegs);
	if (rc == 0) {
		r.pd = dv_pd(pd)->handle;
		r.access = access;
		r.addr = (uintptr_t)addr;
		r.len = len;
		r.iova = iova;
		r.npieces = plan.npieces;
		memcpy(r.pieces, plan.pieces, sizeof(r.pieces));
		rc = da_rpc(a, DROCE_OP_REG_MR, &r, &p, plan.fds, plan.nfds,
			NULL, NULL);
		if (rc != 0)
			da_mem_release(&a->mem, m->segs, m->nsegs, NULL, NULL);
	}
	pthread_mutex_unlock(&a->mr_lock);
	if (rc != 0) {
		free(m);
		return fail_null(rc);
	}
	m->mr.context = pd->context;
	m->mr.pd = pd;
	m->mr.addr = addr;
	m->mr.length = len;
	m->mr.handle = p.handle;
	m->mr.lkey = p.lkey;
	m->mr.rkey = p.rkey;
	m->access = access;
	return &m->mr;
}

/* The daemon's MR and this session's hold on its segments let go; m
 * itself stays (0 or an errno). */
static int
dereg_keep(struct da_mr *m)
{
	struct ibv_mr *mr = &m->mr;
	struct da_ctx *a = att(mr->context);
	struct droce_chan_dereg_mr_req r;
	int rc;

	memset(&r, 0, sizeof(r));
	r.handle = mr->handle;
	pthread_mutex_lock(&a->mr_lock);
	/* the segments this MR was the session's last user of go with it */
	da_mem_peek(&a->mem, m->segs, m->nsegs, r.release, &r.nrelease);
	rc = da_rpc(a, DROCE_OP_DEREG_MR, &r, NULL, NULL, 0, NULL, NULL);
	if (rc == EIO && da_dead(a))
		rc = 0;
	if (rc == 0)
		da_mem_release(&a->mem, m->segs, m->nsegs, NULL, NULL);
	pthread_mutex_unlock(&a->mr_lock);
	return rc;
}

int
da_dereg_mr(struct ibv_mr *mr)
{
	struct da_mr *m = (struct da_mr *)mr;
	int rc = dereg_keep(m);

	if (rc == 0)
		free(m);
	return rc;
}

/*
 * ibv_rereg_mr attached: a new registration with what changes, then the
 * old one deregistered, and the application's ibv_mr takes the new one's
 * handle, keys and segments (the same object: the application keeps its
 * pointer). On error the old MR is as it was: 0 or an errno.
 */
int
da_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr,
		size_t len, unsigned int access)
{
	struct da_mr *m = (struct da_mr *)mr, *n;
	struct ibv_mr *nm;
	int rc;

	if (!(flags & IBV_REREG_MR_CHANGE_PD))
		pd = mr->pd;
	if (!(flags & IBV_REREG_MR_CHANGE_ACCESS))
		access = m->access;
	if (!(flags & IBV_REREG_MR_CHANGE_TRANSLATION)) {
		addr = mr->addr;
		len = mr->length;
	}
	if (pd->context != mr->context)
		return EINVAL;
	nm = da_reg_mr(pd, addr, len, (uintptr_t)addr, access);
	if (nm == NULL)
		return errno;
	n = (struct da_mr *)nm;
	rc = dereg_keep(m);
	if (rc != 0) {
		da_dereg_mr(nm);
		return rc;
	}
	m->mr.pd = pd;
	m->mr.addr = addr;
	m->mr.length = len;
	m->mr.handle = n->mr.handle;
	m->mr.lkey = n->mr.lkey;
	m->mr.rkey = n->mr.rkey;
	m->access = n->access;
	m->nsegs = n->nsegs;
	memcpy(m->segs, n->segs, sizeof(m->segs));
	free(n);
	return 0;
}

/* ---- completion channels ---- */

/*
 * The channel's fd is the read end of a pipe the daemon writes a byte
 * into each time a CQ of the channel fires (after bumping that CQ's
 * events counter); put_fd is a write end of our own (its own open file,
 * so that nothing we do to it reaches the daemon's), with which we keep
 * the fd readable while firings are pending.
 */
struct ibv_comp_channel *
da_create_channel(struct ibv_context *c)
{
	struct da_ctx *a = att(c);
	struct droce_chan_handle h;
	struct dv_channel *ch = calloc(1, sizeof(*ch));
	int fds[DROCE_CHAN_MAX_FDS], n = 0, rc, fl;

	if (ch == NULL)
		return fail_null(ENOMEM);
	rc = da_rpc(a, DROCE_OP_CREATE_CHANNEL, NULL, &h, NULL, 0, fds, &n);
	if (rc == 0 && n != 2) {
		while (n > 0)
			close(fds[--n]);
		destroy_req(a, DROCE_OP_DESTROY_CHANNEL, h.handle);
		rc = EPROTO;
	}
	if (rc != 0) {
		free(ch);
		return fail_null(rc);
	}
	/* the read end blocks unless the application makes it not (as a
	 * kernel channel's fd); our write end never does */
	fl = fcntl(fds[1], F_GETFL);
	if (fl >= 0)
		fcntl(fds[1], F_SETFL, fl | O_NONBLOCK);
	ch->ch.fd = fds[0];
	ch->put_fd = fds[1];
	ch->ch.context = c;
	ch->ch.refcnt = 0;
	ch->handle = h.handle;
	pthread_mutex_init(&ch->lock, NULL);
	if (da_chan_track(a, ch, 1) != 0) {
		destroy_req(a, DROCE_OP_DESTROY_CHANNEL, h.handle);
		close(ch->ch.fd);
		close(ch->put_fd);
		free(ch);
		return fail_null(ENOMEM);
	}
	return &ch->ch;
}

int
da_destroy_channel(struct dv_channel *ch)
{
	struct da_ctx *a = att(ch->ch.context);
	int rc;

	if (ch->ch.refcnt)
		return EBUSY;	/* CQs still use it */
	rc = destroy_req(a, DROCE_OP_DESTROY_CHANNEL, ch->handle);
	if (rc != 0)
		return rc;
	da_chan_track(a, ch, 0);
	close(ch->ch.fd);
	close(ch->put_fd);
	free(ch->cqs);
	pthread_mutex_destroy(&ch->lock);
	free(ch);
	return 0;
}

/* The channel's fd readable once more (a full pipe is readable too). */
void
da_chan_poke(struct dv_channel *ch)
{
	char one = 1;

	if (write(ch->put_fd, &one, 1) != 1)
		return;
}

/* Whether a CQ of the channel fired since we last reported it. */
static int
chan_fired(struct dv_channel *ch)
{
	uint32_t i;
	int any = 0;

	pthread_mutex_lock(&ch->lock);
	for (i = 0; i < ch->ncqs && !any; i++)
		any = (int32_t)(__atomic_load_n(&ch->cqs[i]->sh->events,
			__ATOMIC_ACQUIRE) - ch->cqs[i]->events_seen) > 0;
	pthread_mutex_unlock(&ch->lock);
	return any;
}

/*
 * Before it sleeps, a waiting thread watches its CQs' firing counters in
 * the shared region a while (DROCE_EVENT_SPIN_US): the daemon delivers a
 * completion within microseconds, and one seen here costs no wake-up
 * (the daemon's pipe byte is read at once after). Only the daemon can
 * fire them, and it serves an armed CQ without naps: as a polling thread
 * does (spin_mark), the spinner gives up its CPU every
 * DROCE_CHAN_SPIN_POLLS looks, so that where there are fewer CPUs than
 * busy threads the daemon gets its turn within the spin (on 2 CPUs
 * attached qperf rc_lat waiting went from 122 us to 15-25).
 */
static void
chan_spin(struct dv_channel *ch)
{
	uint64_t budget = dv_event_spin_ns(), t0;
	uint32_t n = 0;

	if (budget == 0 || chan_fired(ch) || !dv_fd_blocks(ch->ch.fd))
		return;
	t0 = dv_now_ns();
	while (!chan_fired(ch)) {
		if ((++n & 15) == 0 && dv_now_ns() - t0 >= budget)
			break;
		if ((n & (DROCE_CHAN_SPIN_POLLS - 1)) == 0)
			sched_yield();
	}
}

/*
 * One firing per call: read a byte (blocking per the fd's flags), take
 * one firing of a CQ whose events counter is ahead of what we reported,
 * and poke the fd again while another is pending, so that it stays
 * readable (poll() on it, then ibv_get_cq_event, as with a kernel
 * channel). Firings of CQs destroyed since are dropped.
 */
int
da_get_cq_event(struct dv_channel *ch, struct ibv_cq **cqp, void **cq_ctx)
{
	struct da_ctx *a = att(ch->ch.context);
	struct dv_cq *q;
	int pending;
	ssize_t r;
	uint32_t i;
	char b;

	chan_spin(ch);
	for (;;) {
		if (da_dead(a))
			break;
		/* EINTR as rdma-core's read(): a handler without SA_RESTART
		 * ends the wait (the kernel restarts the others) */
		r = read(ch->ch.fd, &b, 1);
		if (r != 1)
			return -1;	/* EAGAIN: non-blocking, none */
		if (da_dead(a))
			break;
		q = NULL;
		pending = 0;
		pthread_mutex_lock(&ch->lock);
		for (i = 0; i < ch->ncqs; i++) {
			struct dv_cq *c = ch->cqs[i];
			uint32_t ev = __atomic_load_n(&c->sh->events,
				__ATOMIC_ACQUIRE);

			if ((int32_t)(ev - c->events_seen) <= 0)
				continue;
			if (q == NULL) {
				c->events_seen++;
				q = c;
			}
			if ((int32_t)(ev - c->events_seen) > 0)
				pending = 1;
		}
		pthread_mutex_unlock(&ch->lock);
		if (q == NULL)
			continue;
		if (pending)
			da_chan_poke(ch);
		pthread_mutex_lock(&q->ex.mutex);
		q->comp_events_reported++;
		pthread_mutex_unlock(&q->ex.mutex);
		*cqp = ibv_cq_ex_to_cq(&q->ex);
		*cq_ctx = q->ex.cq_context;
		return 0;
	}
	/* the daemon is gone: the next blocked thread wakes too */
	da_chan_poke(ch);
	errno = EIO;
	return -1;
}

static int
chan_add_cq(struct dv_channel *ch, struct dv_cq *cq)
{
	int rc = 0;

	pthread_mutex_lock(&ch->lock);
	if (ch->ncqs == ch->cqs_cap) {
		uint32_t nc = ch->cqs_cap ? ch->cqs_cap * 2 : 8;
		struct dv_cq **n = realloc(ch->cqs, nc * sizeof(*n));

		if (n == NULL)
			rc = ENOMEM;
		else {
			ch->cqs = n;
			ch->cqs_cap = nc;
		}
	}
	if (rc == 0)
		ch->cqs[ch->ncqs++] = cq;
	pthread_mutex_unlock(&ch->lock);
	return rc;
}

static void
chan_del_cq(struct dv_channel *ch, struct dv_cq *cq)
{
	uint32_t i;

	pthread_mutex_lock(&ch->lock);
	for (i = 0; i < ch->ncqs; i++)
		if (ch->cqs[i] == cq) {
			ch->cqs[i] = ch->cqs[--ch->ncqs];
			break;
		}
	pthread_mutex_unlock(&ch->lock);
}

/* ---- completion queues ---- */

static int
cq_rings(struct da_ctx *a, struct dv_cq *cq,
		const struct droce_chan_create_cq_rep *p)
{
	if (p->size == 0 || (p->size & (p->size - 1)) ||
			p->off < DROCE_CHAN_HEAP_OFF || p->off > a->region_size ||
			droce_chan_cq_bytes(p->size) > a->region_size - p->off)
		return EPROTO;
	cq->handle = p->handle;
	cq->size = p->size;
	cq->sh = droce_chan_at(a->region, p->off);
	cq->wc = droce_chan_at(a->region, p->off + DROCE_CHAN_CQ_WC);
	return 0;
}

struct dv_cq *
da_cq_create(struct ibv_context *c, int cqe, void *cq_context,
		struct ibv_comp_channel *channel, int comp_vector)
{
	struct da_ctx *a = att(c);
	struct dv_channel *ch = (struct dv_channel *)channel;
	struct droce_chan_create_cq_req r = { .channel = DROCE_CHAN_NONE };
	struct droce_chan_create_cq_rep p;
	struct dv_cq *cq;
	int rc;

	if (cqe <= 0 || (channel != NULL && channel->context != c))
		return fail_null(EINVAL);
	cq = calloc(1, sizeof(*cq));
	if (cq == NULL)
		return fail_null(ENOMEM);
	r.cqe = (uint32_t)cqe;
	r.channel = ch != NULL ? ch->handle : DROCE_CHAN_NONE;
	r.comp_vector = (uint32_t)comp_vector;
	rc = da_rpc(a, DROCE_OP_CREATE_CQ, &r, &p, NULL, 0, NULL, NULL);
	if (rc != 0) {
		free(cq);
		return fail_null(rc);
	}
	if ((rc = cq_rings(a, cq, &p)) == 0 &&
			(rc = da_obj_set(a, DA_CQ, p.handle, cq)) == 0 &&
			ch != NULL && (rc = chan_add_cq(ch, cq)) != 0)
		da_obj_del(a, DA_CQ, p.handle);
	if (rc != 0) {
		destroy_req(a, DROCE_OP_DESTROY_CQ, p.handle);
		free(cq);
		return fail_null(rc);
	}
	pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
	cq->ctx = dv_ctx(c);
	cq->ex.context = c;
	cq->ex.channel = channel;
	cq->ex.cq_context = cq_context;
	cq->ex.cqe = (int)p.cqe;
	cq->ex.handle = p.handle;
	pthread_mutex_init(&cq->ex.mutex, NULL);
	pthread_cond_init(&cq->ex.cond, NULL);
	if (channel != NULL)
		__atomic_fetch_add(&channel->refcnt, 1, __ATOMIC_RELAXED);
	dv_cq_ex_setup(cq);
	return cq;
}

/*
 * ibv_resize_cq attached: the daemon moves the unread completions into a
 * new ring; the CQ's lock is held until the new one is ours, so no
 * poller reads the old ring meanwhile.
 */
int
da_resize_cq(struct dv_cq *cq, int cqe)
{
	struct da_ctx *a = att(cq->ex.context);
	struct droce_chan_resize_cq_req r = { .handle = cq->handle };
	struct droce_chan_create_cq_rep p;
	int rc;

	if (da_dead(a))
		return EIO;
	r.cqe = (uint32_t)cqe;
	pthread_spin_lock(&cq->lock);
	rc = da_rpc(a, DROCE_OP_RESIZE_CQ, &r, &p, NULL, 0, NULL, NULL);
	if (rc == 0 && p.handle != cq->handle)
		rc = EPROTO;
	if (rc == 0)
		rc = cq_rings(a, cq, &p);
	if (rc == 0) {
		uint32_t k, prod = __atomic_load_n(&cq->sh->prod,
			__ATOMIC_ACQUIRE);

		cq->ex.cqe = (int)p.cqe;
		/* the ring is new: what it holds of a QP destroyed since
		 * is before its prod */
		for (k = 0; k < cq->ngone; k++)
			cq->gone[k].bound = prod;
	}
	pthread_spin_unlock(&cq->lock);
	return rc;
}

int
da_destroy_cq(struct dv_cq *cq)
{
	struct ibv_cq *ibcq = ibv_cq_ex_to_cq(&cq->ex);
	struct da_ctx *a = att(cq->ex.context);
	int rc = destroy_req(a, DROCE_OP_DESTROY_CQ, cq->handle);

	if (rc != 0)
		return rc;
	da_obj_del(a, DA_CQ, cq->handle);
	if (ibcq->channel != NULL) {
		chan_del_cq((struct dv_channel *)ibcq->channel, cq);
		__atomic_fetch_sub(&ibcq->channel->refcnt, 1, __ATOMIC_RELAXED);
	}
	/* as rdma-core: wait for the application to ack every event */
	pthread_mutex_lock(&ibcq->mutex);
	while (ibcq->comp_events_completed != cq->comp_events_reported)
		pthread_cond_wait(&ibcq->cond, &ibcq->mutex);
	pthread_mutex_unlock(&ibcq->mutex);
	pthread_spin_destroy(&cq->lock);
	free(cq->gone);
	free(cq);
	return 0;
}

/* ---- address handles ---- */

struct ibv_ah *
da_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct droce_chan_create_ah_req r;
	struct droce_chan_handle h;
	struct da_ah *ah = calloc(1, sizeof(*ah));
	int rc;

	if (ah == NULL)
		return fail_null(ENOMEM);
	memset(&r, 0, sizeof(r));
	r.pd = dv_pd(pd)->handle;
	r.attr = *attr;
	rc = da_rpc(att(pd->context), DROCE_OP_CREATE_AH, &r, &h, NULL, 0,
		NULL, NULL);
	if (rc != 0) {
		free(ah);
		return fail_null(rc);
	}
	ah->handle = h.handle;
	ah->ah.context = pd->context;
	ah->ah.pd = pd;
	ah->ah.handle = h.handle;
	return &ah->ah;
}

int
da_destroy_ah(struct ibv_ah *ibah)
{
	struct da_ah *ah = (struct da_ah *)ibah;
	int rc = destroy_req(att(ibah->context), DROCE_OP_DESTROY_AH, ah->handle);

	if (rc == 0)
		free(ah);
	return rc;
}

/* ---- multicast, and what droce's librdmacm asks ---- */

int
da_mcast(struct dv_qp *qp, const union ibv_gid *gid, int attach)
{
	struct droce_chan_mcast_req r;

	memset(&r, 0, sizeof(r));
	r.qp = qp->handle;
	memcpy(r.gid, gid->raw, 16);
	return da_rpc(qp->ctx->att, attach ? DROCE_OP_ATTACH_MCAST :
		DROCE_OP_DETACH_MCAST, &r, NULL, NULL, 0, NULL, NULL);
}

int
da_resolve_gid(struct dv_context *c, const uint8_t gid[16], uint32_t timeout_ms)
{
	struct droce_chan_resolve_req r;

	memset(&r, 0, sizeof(r));
	memcpy(r.gid, gid, 16);
	r.timeout_ms = timeout_ms;
	return da_rpc(c->att, DROCE_OP_RESOLVE, &r, NULL, NULL, 0, NULL, NULL);
}

int
da_cm_listen(struct dv_context *c, uint64_t service_id, int on)
{
	struct droce_chan_cm_listen_req r;

	memset(&r, 0, sizeof(r));
	r.service_id = service_id;
	r.on = on ? 1 : 0;
	return da_rpc(c->att, DROCE_OP_CM_LISTEN, &r, NULL, NULL, 0, NULL, NULL);
}
