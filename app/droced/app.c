/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * An attached application: its shared region (a memfd on hugetlbfs,
 * sealed so that it cannot shrink under the daemon), its tables, and
 * the teardown that reclaims everything it held when it goes, however it
 * goes (exit, SIGKILL, a hostile message).
 */

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/mman.h>

#include "droced.h"

/* every queue of every port, always in the same order */
void
dd_lock_all(void)
{
	uint32_t p, q;

	for (p = 0; p < dd.nb_ports; p++)
		for (q = 0; q < dd.ports[p].nb_queues; q++)
			droce_port_lock(dd.ports[p].port, q);
}

void
dd_unlock_all(void)
{
	uint32_t p = dd.nb_ports, q;

	while (p-- > 0) {
		q = dd.ports[p].nb_queues;
		while (q-- > 0)
			droce_port_unlock(dd.ports[p].port, q);
	}
}

/* A sealed memfd of size bytes (flags: MFD_HUGETLB or 0), mapped at
 * *map with its pages in: the fd, or -1. Unsealed, the application
 * could shrink it under the data path (SIGBUS): never used so. */
static int
region_try(uint64_t size, unsigned int flags, void **map)
{
	int fd = memfd_create("droce-app", MFD_CLOEXEC | MFD_ALLOW_SEALING |
		flags);

	if (fd < 0)
		return -1;
	if (ftruncate(fd, (off_t)size) != 0 || fcntl(fd, F_ADD_SEALS,
			F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
		close(fd);
		return -1;
	}
	/* hugetlb pages are taken here (MAP_POPULATE), not at ftruncate:
	 * too few free fails now, not at a first touch */
	*map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED |
		MAP_POPULATE, fd, 0);
	if (*map == MAP_FAILED) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The region: hugepages where there are some to spare, else ordinary
 * shared memory (said once in the log). Sealed: the application may
 * write it, never shrink or grow it. 0 or -1. */
static int
region_create(struct dd_app *a)
{
	static int warned;
	void *map;

	a->region_fd = region_try(a->region_size, MFD_HUGETLB, &map);
	if (a->region_fd < 0) {
		if (!warned++)
			DD_LOG(WARNING, "no hugepages for an application region "
				"(%s): using ordinary shared memory",
				strerror(errno));
		a->region_fd = region_try(a->region_size, 0, &map);
		if (a->region_fd < 0) {
			DD_LOG(WARNING, "no region for an application: %s",
				strerror(errno));
			return -1;
		}
	}
	a->region = map;
	return 0;
}

static int
app_tables_init(struct dd_app *a)
{
	const struct dd_limits *l = &dd.lim;

	if (dd_table_init(&a->pds, l->max_pd) || dd_table_init(&a->mrs, l->max_mr) ||
			dd_table_init(&a->cqs, l->max_cq) ||
			dd_table_init(&a->srqs, l->max_srq) ||
			dd_table_init(&a->qps, l->max_qp) ||
			dd_table_init(&a->ahs, l->max_ah) ||
			dd_table_init(&a->chans, l->max_chan) ||
			dd_table_init(&a->mws, l->max_mr) ||
			dd_table_init(&a->segs, l->max_mr * 2) ||
			dd_table_init(&a->xrcds, l->max_srq))
		return -ENOMEM;
	return 0;
}

/* A new session on an accepted socket; NULL when out of memory. It
 * holds nothing more until its HELLO (dd_app_bind): a connection that
 * never says it costs little. */
struct dd_app *
dd_app_new(int sock)
{
	struct dd_app *a = calloc(1, sizeof(*a));

	if (a == NULL)
		return NULL;
	a->sock = sock;
	a->region_fd = a->async_fd = a->wake_rfd = -1;
	a->hello_fds[0] = a->hello_fds[1] = -1;
	return a;
}

/*
 * A pipe whose end *ours we keep, never blocking, and whose other end
 * *theirs goes to the application: each end's open file is its holder's
 * alone, so nothing the application does to its end can make ours wait
 * (an eventfd shared both ways could: its flags are one for both, and
 * either side can fill it or read it dry). ours_is_write: which end.
 */
static int
app_pipe(int *ours, int *theirs, int ours_is_write)
{
	int p[2];

	if (pipe2(p, O_CLOEXEC) != 0)
		return -1;
	*ours = p[ours_is_write ? 1 : 0];
	*theirs = p[ours_is_write ? 0 : 1];
	return fcntl(*ours, F_SETFL, O_NONBLOCK);
}

/* The session's region, tables and pipes: async events, and in idle
 * mode its wake-ups of dp's progress thread. */
static int
app_resources(struct dd_app *a, struct dd_port *dp)
{
	struct droce_chan_region *r;
	uint32_t q;

	a->region_size = dd.lim.region_bytes;
	if (app_tables_init(a) != 0)
		return -ENOMEM;
	if (region_create(a) != 0)
		return -ENOMEM;
	a->heap_pages = (uint32_t)(a->region_size / DD_PAGE);
	a->heap_map = calloc(a->heap_pages, 1);
	if (a->heap_map == NULL ||
			app_pipe(&a->async_fd, &a->hello_fds[0], 1) != 0)
		return -ENOMEM;
	if (dp->wake_ep >= 0) {
		struct epoll_event ev = { .events = EPOLLIN };

		if (app_pipe(&a->wake_rfd, &a->hello_fds[1], 0) != 0)
			return -ENOMEM;
		ev.data.fd = a->wake_rfd;
		if (epoll_ctl(dp->wake_ep, EPOLL_CTL_ADD, a->wake_rfd, &ev) != 0)
			return -ENOMEM;
		a->wake_ep = dp->wake_ep;
	}
	/* its CM IDs' prefix (gsi.c), while there are some free */
	for (q = 1; q < 256 && a->cm_prefix == 0; q++)
		if (dd.by_prefix[q] == NULL) {
			a->cm_prefix = (uint8_t)q;
			dd.by_prefix[q] = a;
		}
	r = a->region;
	r->magic = DROCE_CHAN_MAGIC;
	r->version = DROCE_CHAN_VERSION;
	r->size = a->region_size;
	return 0;
}

/* HELLO: the session uses port dp from now on; its region, tables and
 * doorbell rings, one per queue of that port. 0 or -ENOMEM. */
int
dd_app_bind(struct dd_app *a, struct dd_port *dp)
{
	struct droce_chan_region *r;
	void *db[DROCE_CHAN_MAX_QUEUES];
	uint32_t q;

	if (app_resources(a, dp) != 0)
		return -ENOMEM;
	r = a->region;
	for (q = 0; q < dp->nb_queues; q++) {
		uint64_t off;

		if (dd_heap_alloc(a, sizeof(struct droce_chan_db), &off) != 0)
			return -ENOMEM;
		r->db_off[q] = off;
		db[q] = droce_chan_at(a->region, off);
	}
	r->nb_queues = dp->nb_queues;
	/* the data path looks at a session once dp is set */
	dd_lock_all();
	memcpy(a->db, db, dp->nb_queues * sizeof(db[0]));
	__atomic_store_n(&a->dp, dp, __ATOMIC_RELEASE);
	dd_unlock_all();
	return 0;
}

static void
reclaim_qps(struct dd_app *a)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };
	uint32_t h;

	for (h = 0; h < a->qps.cap && a->qps.n; h++) {
		struct dd_qp *qp = dd_table_get(&a->qps, h);

		if (qp == NULL)
			continue;
		droce_port_lock(a->dp->port, qp->q);
		dd_qp_last_sends(qp);	/* its doorbells were rung */
		dd_queue_forget_qp(qp);
		if (qp->gsi) {
			dd_gsi_proxy_destroy(qp);
		} else {
			/* the peer learns it is gone by its retries failing,
			 * as with a NIC whose host died */
			droce_qp_modify(qp->tqp, &attr, IBV_QP_STATE, NULL);
			droce_qp_destroy(qp->tqp);
		}
		droce_port_unlock(a->dp->port, qp->q);
		dd_table_del(&a->qps, h);
		free(qp);
		dd.reclaimed_qps++;
	}
}

static void
reclaim_rest(struct dd_app *a)
{
	uint32_t h;

	for (h = 0; h < a->srqs.cap && a->srqs.n; h++) {
		struct dd_srq *s = dd_table_get(&a->srqs, h);

		if (s == NULL)
			continue;
		droce_port_lock(a->dp->port, s->q);
		droce_srq_destroy(s->tsrq);
		droce_port_unlock(a->dp->port, s->q);
		dd_table_del(&a->srqs, h);
		free(s);
	}
	for (h = 0; h < a->xrcds.cap && a->xrcds.n; h++) {	/* after SRQs */
		struct dd_xrcd *x = dd_table_get(&a->xrcds, h);

		if (x == NULL)
			continue;
		droce_xrcd_free(x->tx);
		dd_table_del(&a->xrcds, h);
		free(x);
	}
	for (h = 0; h < a->cqs.cap && a->cqs.n; h++) {
		struct dd_cq *cq = dd_table_get(&a->cqs, h);

		if (cq == NULL)
			continue;
		droce_port_lock(a->dp->port, cq->q);
		dd_queue_forget_cq(cq);
		droce_cq_destroy(cq->tcq);
		droce_port_unlock(a->dp->port, cq->q);
		dd_table_del(&a->cqs, h);
		free(cq);
	}
	for (h = 0; h < a->ahs.cap && a->ahs.n; h++) {
		struct dd_ah *ah = dd_table_get(&a->ahs, h);

		if (ah == NULL)
			continue;
		droce_ah_destroy(ah->tah);
		dd_table_del(&a->ahs, h);
		free(ah);
	}
	for (h = 0; h < a->mws.cap && a->mws.n; h++) {	/* before their MRs */
		struct dd_mw *mw = dd_table_get(&a->mws, h);

		if (mw == NULL)
			continue;
		droce_mw_dealloc(mw->tmw);
		dd_table_del(&a->mws, h);
		free(mw);
	}
	for (h = 0; h < a->mrs.cap && a->mrs.n; h++) {
		struct dd_mr *mr = dd_table_get(&a->mrs, h);

		if (mr == NULL)
			continue;
		dd_table_del(&a->mrs, h);
		dd_mr_free(mr);
		dd.reclaimed_mrs++;
	}
	for (h = 0; h < a->pds.cap && a->pds.n; h++) {
		struct dd_pd *pd = dd_table_get(&a->pds, h);

		if (pd == NULL)
			continue;
		droce_pd_dealloc(pd->tpd);
		dd_table_del(&a->pds, h);
		free(pd);
	}
	for (h = 0; h < a->chans.cap && a->chans.n; h++) {
		struct dd_chan *c = dd_table_get(&a->chans, h);

		if (c == NULL)
			continue;
		close(c->wfd);
		dd_table_del(&a->chans, h);
		free(c);
	}
	for (h = 0; h < a->segs.cap && a->segs.n; h++) {
		struct dd_seg *s = dd_table_get(&a->segs, h);

		if (s == NULL)
			continue;
		close(s->fd);
		dd_table_del(&a->segs, h);
		free(s);
	}
}

/* Tear a session down: off the data path first (every queue locked),
 * then everything it held, in dependency order. */
void
dd_app_free(struct dd_app *a)
{
	uint32_t i;

	dd_lock_all();
	pthread_mutex_lock(&dd.apps_lock);
	for (i = 0; i < dd.nb_apps; i++)
		if (dd.apps[i] == a) {
			dd.apps[i] = dd.apps[--dd.nb_apps];
			dd.apps[dd.nb_apps] = NULL;
			break;
		}
	/* the progress thread drains wake pipes under this lock: once
	 * it is let go, ours is nobody's (its number may come back) */
	if (a->wake_rfd >= 0) {
		epoll_ctl(a->wake_ep, EPOLL_CTL_DEL, a->wake_rfd, NULL);
		close(a->wake_rfd);
		a->wake_rfd = -1;
	}
	pthread_mutex_unlock(&dd.apps_lock);
	if (a->dp != NULL && a->dp->gsi != NULL)
		dd_gsi_app_gone(a);
	else if (a->cm_prefix && dd.by_prefix[a->cm_prefix] == a)
		dd.by_prefix[a->cm_prefix] = NULL;
	dd_unlock_all();
	if (a->qps.slot != NULL)
		reclaim_qps(a);
	reclaim_rest(a);
	dd_table_fini(&a->pds);
	dd_table_fini(&a->mrs);
	dd_table_fini(&a->cqs);
	dd_table_fini(&a->srqs);
	dd_table_fini(&a->qps);
	dd_table_fini(&a->ahs);
	dd_table_fini(&a->chans);
	dd_table_fini(&a->mws);
	dd_table_fini(&a->segs);
	dd_table_fini(&a->xrcds);
	if (a->region != NULL)
		munmap(a->region, a->region_size);
	if (a->region_fd >= 0)
		close(a->region_fd);
	if (a->async_fd >= 0)
		close(a->async_fd);
	for (i = 0; i < 2; i++)
		if (a->hello_fds[i] >= 0)
			close(a->hello_fds[i]);
	if (a->sock >= 0)
		close(a->sock);
	free(a->heap_map);
	free(a);
}

/* An async event for the application: into its ring, then its eventfd.
 * A full ring drops the event (the application stopped reading). */
void
dd_async(struct dd_app *a, enum ibv_event_type type, enum droce_chan_kind kind,
		uint32_t handle)
{
	struct droce_chan_region *r = a->region;
	uint32_t cons = __atomic_load_n(&r->async_cons, __ATOMIC_ACQUIRE);
	struct droce_chan_async *e;
	char one = 1;

	if (a->async_prod - cons >= DROCE_CHAN_ASYNC_SIZE)
		return;
	e = &r->async[a->async_prod % DROCE_CHAN_ASYNC_SIZE];
	e->event_type = type;
	e->kind = kind;
	e->handle = handle;
	a->async_prod++;
	__atomic_store_n(&r->async_prod, a->async_prod, __ATOMIC_RELEASE);
	if (write(a->async_fd, &one, 1) < 0)
		DD_LOG(DEBUG, "async pipe: %s", strerror(errno));
}

/* The transport's async events (owner context): to the object's owner. */
void
dd_async_cb(void *arg, const struct ibv_async_event *ev)
{
	(void)arg;
	switch (ev->event_type) {
	case IBV_EVENT_CQ_ERR: {
		struct dd_cq *cq = droce_cq_user((struct droce_cq *)ev->element.cq);

		if (cq != NULL)
			dd_async(cq->app, ev->event_type, DROCE_KIND_CQ, cq->handle);
		break;
	}
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED: {
		struct dd_srq *s = droce_srq_user((struct droce_srq *)ev->element.srq);

		if (s != NULL)
			dd_async(s->app, ev->event_type, DROCE_KIND_SRQ, s->handle);
		break;
	}
	case IBV_EVENT_DEVICE_FATAL:
	case IBV_EVENT_PORT_ACTIVE:
	case IBV_EVENT_PORT_ERR:
		break;
	default: {
		struct dd_qp *qp = droce_qp_user((struct droce_qp *)ev->element.qp);

		if (qp != NULL)
			dd_async(qp->app, ev->event_type, DROCE_KIND_QP, qp->handle);
		break;
	}
	}
}
