/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * Completion channels and async events as real file descriptors: an
 * eventfd each (semaphore mode: one read, one event), so poll() and
 * O_NONBLOCK work as on a kernel-backed device. The transport calls the
 * notify and async callbacks from the queue's owner (the progress thread,
 * or an application thread inside post/poll), never under our locks.
 */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include "attach.h"

static void
efd_signal_n(int fd, uint64_t n)
{
	if (write(fd, &n, sizeof(n)) != sizeof(n))
		return;		/* counter saturated: events are already pending */
}

static void
efd_signal(int fd)
{
	efd_signal_n(fd, 1);
}

/* Blocks unless the application made the fd non-blocking; a signal
 * whose handler lacks SA_RESTART ends it with EINTR, as rdma-core's. */
static int
efd_wait(int fd)
{
	uint64_t v;

	return read(fd, &v, sizeof(v)) == sizeof(v) ? 0 : -1;
}

/* One token of a fired entry: its writer may not have written it yet
 * (the write waits for the queue's lock to go), so wait for it even
 * where the application made the fd non-blocking. */
static void
efd_take(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	uint64_t v;
	ssize_t r;

	for (;;) {
		r = read(fd, &v, sizeof(v));
		if (r == sizeof(v))
			return;
		if (r < 0 && errno == EAGAIN)
			(void)poll(&pfd, 1, -1);
		else if (r < 0 && errno != EINTR)
			return;
	}
}

/* ---- completion channels ---- */

#define DV_FIRED_TOKEN ((uintptr_t)1)

static inline struct dv_cq *
fired_cq(struct dv_cq *e)
{
	return (struct dv_cq *)((uintptr_t)e & ~DV_FIRED_TOKEN);
}

static inline int
fired_tokened(struct dv_cq *e)
{
	return ((uintptr_t)e & DV_FIRED_TOKEN) != 0;
}

struct ibv_comp_channel *
ibv_create_comp_channel(struct ibv_context *context)
{
	struct dv_channel *c;

	if (da_attached(context))
		return da_create_channel(context);
	c = calloc(1, sizeof(*c));
	if (c == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	c->ch.fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
	if (c->ch.fd < 0) {
		free(c);
		return NULL;
	}
	c->cap = 64;
	c->fired = calloc(c->cap, sizeof(*c->fired));
	if (c->fired == NULL) {
		close(c->ch.fd);
		free(c);
		errno = ENOMEM;
		return NULL;
	}
	c->ch.context = context;
	c->ch.refcnt = 0;
	pthread_mutex_init(&c->lock, NULL);
	return &c->ch;
}

int
ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	struct dv_channel *c = (struct dv_channel *)channel;

	if (da_attached(channel->context))
		return da_destroy_channel(c);
	if (channel->refcnt)
		return EBUSY;	/* CQs still use it */
	close(channel->fd);
	free(c->fired);
	pthread_mutex_destroy(&c->lock);
	free(c);
	return 0;
}

/* The transport's notify callback: the armed CQ got a completion. */
void
dv_cq_notify(void *arg, struct droce_cq *tcq)
{
	struct dv_cq *cq = arg;
	struct dv_channel *c = (struct dv_channel *)cq->ex.channel;
	int quiet;

	(void)tcq;
	if (c == NULL)
		return;
	pthread_mutex_lock(&c->lock);
	if (c->tail - c->head == c->cap) {
		struct dv_cq **n = calloc(c->cap * 2, sizeof(*n));
		uint32_t i;

		if (n == NULL) {
			pthread_mutex_unlock(&c->lock);
			return;
		}
		/* (tags and all) */
		for (i = 0; i < c->cap; i++)
			n[i] = c->fired[(c->head + i) % c->cap];
		free(c->fired);
		c->fired = n;
		c->head = 0;
		c->tail = c->cap;
		c->cap *= 2;
	}
	c->fired[c->tail % c->cap] = cq;
	__atomic_store_n(&c->tail, c->tail + 1, __ATOMIC_RELEASE);
	/*
	 * A thread spinning in ibv_get_cq_event watches the list: it takes
	 * this entry without a system call on either side. One that stops
	 * spinning looks at the list after it says so, and we look at the
	 * spinners after the entry is in: one of us sees the other (both
	 * fenced), so the entry is never left without a token and without
	 * a watcher.
	 */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	quiet = __atomic_load_n(&c->spinners, __ATOMIC_RELAXED) != 0;
	if (!quiet)
		c->fired[(c->tail - 1) % c->cap] = (struct dv_cq *)
			((uintptr_t)cq | DV_FIRED_TOKEN);
	pthread_mutex_unlock(&c->lock);
	/* once the queue's lock is let go: the woken thread's first call,
	 * ibv_req_notify_cq, takes it */
	if (!quiet)
		droce_port_signal(cq->ctx->dev->port, cq->q, c->ch.fd);
}

/* DROCE_EVENT_SPIN_US, in ns (100 us unless set) */
uint64_t
dv_event_spin_ns(void)
{
	static uint64_t ns = UINT64_MAX;
	uint64_t v = __atomic_load_n(&ns, __ATOMIC_RELAXED);

	if (v == UINT64_MAX) {
		const char *s = droce_conf_get("DROCE_EVENT_SPIN_US");

		v = s != NULL && s[0] ? strtoull(s, NULL, 10) * 1000 : 100000;
		__atomic_store_n(&ns, v, __ATOMIC_RELAXED);
	}
	return v;
}

/* CLOCK_MONOTONIC: droce_now_ns needs the EAL's TSC rate, which an
 * attached process has not (its EAL never starts) */
uint64_t
dv_now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* Whether a read of fd waits (the application may set O_NONBLOCK on a
 * channel's fd at any time: asked each time, only when nothing fired). */
int
dv_fd_blocks(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl >= 0 && !(fl & O_NONBLOCK);
}

/*
 * Whether a wait a signal interrupted ends with EINTR, as rdma-core's
 * read() of the channel does unless the handler asked for a restart
 * (SA_RESTART): qperf ends its timed tests so (SIGALRM, no SA_RESTART).
 * poll() is never restarted, and which signal came is not known here:
 * EINTR when any handler the process installed lacks SA_RESTART, a
 * restart when all have it (signal()'s handlers). Only after an EINTR.
 */
static int
eintr_ends_wait(void)
{
	struct sigaction sa;
	int sig, e = errno, ends = 0;

	for (sig = 1; sig < NSIG && !ends; sig++)
		if (sigaction(sig, NULL, &sa) == 0 &&
				sa.sa_handler != SIG_DFL &&
				sa.sa_handler != SIG_IGN &&
				!(sa.sa_flags & SA_RESTART))
			ends = 1;
	errno = e;
	return ends;
}

static int
fired(struct dv_channel *c)
{
	return __atomic_load_n(&c->tail, __ATOMIC_ACQUIRE) !=
		__atomic_load_n(&c->head, __ATOMIC_ACQUIRE);
}

/* No longer watching: what fires from here on gets a token. The caller
 * looks at the list next (dv_cq_notify says why the fence). */
static void
spin_end(struct dv_channel *c)
{
	__atomic_sub_fetch(&c->spinners, 1, __ATOMIC_SEQ_CST);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/*
 * A thread about to sleep in ibv_get_cq_event drives its channel's
 * queues itself for a while first (its CPU is free while it waits, as
 * with the kernel's busy polling of sockets): a completion that comes
 * meanwhile costs no wake-up, and a request-response program runs at
 * its polling speed. Then the progress thread takes the queues at once
 * (droce_port_kick) and serves them without naps (droce_port_armed).
 */
static void
event_spin(struct dv_channel *c)
{
	struct dv_context *ctx = dv_ctx(c->ch.context);
	struct droce_port *port = ctx->dev->port;
	uint64_t mask = __atomic_load_n(&c->qmask, __ATOMIC_RELAXED);
	uint64_t budget = dv_event_spin_ns(), t0;
	uint32_t q, nq = ctx->dev->nb_queues, n = 0;

	if (mask == 0 || port == NULL || fired(c) || !dv_fd_blocks(c->ch.fd))
		return;
	__atomic_add_fetch(&c->spinners, 1, __ATOMIC_SEQ_CST);
	/* awake: the progress thread keeps off these queues till we sleep */
	for (q = 0; q < nq; q++)
		if (mask & (1ull << (q % 64)))
			droce_port_spinning(port, q, 1);
	t0 = dv_now_ns();
	for (;;) {
		for (q = 0; q < nq; q++)
			if (mask & (1ull << (q % 64)))
				droce_port_progress(port, q);
		if (fired(c)) {
			spin_end(c);
			return;
		}
		if (budget == 0 ||
				((++n & 7) == 0 && dv_now_ns() - t0 >= budget))
			break;
		/* the progress thread, a peer on this machine: on few
		 * CPUs they may wait for this one */
		if ((n & 63) == 0)
			sched_yield();
	}
	spin_end(c);
	for (q = 0; q < nq; q++)
		if (mask & (1ull << (q % 64)))
			droce_port_spinning(port, q, 0);
}

/*
 * The oldest fired entry, or NULL. An entry without a token (it fired
 * while a thread spun here) costs no system call; any like it that stay
 * behind get their tokens now, so that a thread that waits on the fd
 * (here or in poll) sees them.
 */
static struct dv_cq *
take_fired(struct dv_channel *c)
{
	struct dv_cq *e;
	uint32_t i, untagged = 0;

	pthread_mutex_lock(&c->lock);
	if (c->head == c->tail) {
		pthread_mutex_unlock(&c->lock);
		return NULL;
	}
	e = c->fired[c->head % c->cap];
	__atomic_store_n(&c->head, c->head + 1, __ATOMIC_RELEASE);
	/* (usually none behind it) */
	for (i = c->head; i != c->tail; i++) {
		struct dv_cq **f = &c->fired[i % c->cap];

		if (!fired_tokened(*f)) {
			*f = (struct dv_cq *)((uintptr_t)*f | DV_FIRED_TOKEN);
			untagged++;
		}
	}
	pthread_mutex_unlock(&c->lock);
	if (fired_tokened(e))
		efd_take(c->ch.fd);
	else if (untagged)
		efd_signal_n(c->ch.fd, untagged);
	return fired_cq(e);
}

int
ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq,
		void **cq_context)
{
	struct dv_channel *c = (struct dv_channel *)channel;
	struct pollfd pfd = { .fd = channel->fd, .events = POLLIN };
	struct dv_cq *q;

	if (da_attached(channel->context))
		return da_get_cq_event(c, cq, cq_context);
	for (;;) {
		event_spin(c);
		q = take_fired(c);
		if (q != NULL)
			break;
		if (!dv_fd_blocks(channel->fd)) {
			errno = EAGAIN;
			return -1;
		}
		/* a token says an entry is in: then take it as above */
		if (poll(&pfd, 1, -1) < 0 &&
				(errno != EINTR || eintr_ends_wait()))
			return -1;
	}
	pthread_mutex_lock(&q->ex.mutex);
	q->comp_events_reported++;
	pthread_mutex_unlock(&q->ex.mutex);
	*cq = ibv_cq_ex_to_cq(&q->ex);
	*cq_context = q->ex.cq_context;
	return 0;
}

void
ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	pthread_mutex_lock(&cq->mutex);
	cq->comp_events_completed += nevents;
	pthread_cond_broadcast(&cq->cond);
	pthread_mutex_unlock(&cq->mutex);
}

/* ---- async events ---- */

int
dv_context_events_init(struct dv_context *ctx)
{
	ctx->vctx.context.async_fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
	if (ctx->vctx.context.async_fd < 0)
		return -1;
	pthread_mutex_init(&ctx->async_lock, NULL);
	return 0;
}

void
dv_context_events_fini(struct dv_context *ctx)
{
	close(ctx->vctx.context.async_fd);
	pthread_mutex_destroy(&ctx->async_lock);
}

void
dv_async_push(struct dv_context *ctx, const struct ibv_async_event *ev)
{
	pthread_mutex_lock(&ctx->async_lock);
	if (ctx->async_tail - ctx->async_head == DV_ASYNC_RING) {
		pthread_mutex_unlock(&ctx->async_lock);
		return;		/* the application does not read them */
	}
	ctx->async[ctx->async_tail++ % DV_ASYNC_RING] = *ev;
	pthread_mutex_unlock(&ctx->async_lock);
	efd_signal(ctx->vctx.context.async_fd);
}

/* The transport's async callback: map its object to ours and queue it. */
void
dv_async_cb(void *arg, const struct ibv_async_event *tev)
{
	struct ibv_async_event ev = *tev;
	struct dv_context *ctx = NULL;

	(void)arg;
	switch (tev->event_type) {
	case IBV_EVENT_CQ_ERR: {
		struct dv_cq *cq = droce_cq_user((struct droce_cq *)tev->element.cq);

		if (cq == NULL)
			return;
		ev.element.cq = ibv_cq_ex_to_cq(&cq->ex);
		ctx = cq->ctx;
		break;
	}
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED: {
		struct dv_srq *s = droce_srq_user((struct droce_srq *)tev->element.srq);

		if (s == NULL)
			return;
		ev.element.srq = &s->srq;
		ctx = s->ctx;
		break;
	}
	case IBV_EVENT_DEVICE_FATAL:
	case IBV_EVENT_PORT_ACTIVE:
	case IBV_EVENT_PORT_ERR:
		return;		/* no device-wide events from the transport yet */
	default: {
		struct dv_qp *qp = droce_qp_user((struct droce_qp *)tev->element.qp);

		if (qp == NULL)
			return;
		ev.element.qp = &qp->ex.qp_base;
		ctx = qp->ctx;
		break;
	}
	}
	dv_async_push(ctx, &ev);
}

int
ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event)
{
	struct dv_context *ctx = dv_ctx(context);

	if (efd_wait(context->async_fd) != 0)
		return -1;
	pthread_mutex_lock(&ctx->async_lock);
	if (ctx->async_head == ctx->async_tail) {
		pthread_mutex_unlock(&ctx->async_lock);
		errno = EAGAIN;
		return -1;
	}
	*event = ctx->async[ctx->async_head++ % DV_ASYNC_RING];
	pthread_mutex_unlock(&ctx->async_lock);
	return 0;
}

void
ibv_ack_async_event(struct ibv_async_event *event)
{
	pthread_mutex_t *m;
	pthread_cond_t *cv;
	uint32_t *count;

	switch (event->event_type) {
	case IBV_EVENT_CQ_ERR:
		m = &event->element.cq->mutex;
		cv = &event->element.cq->cond;
		count = &event->element.cq->async_events_completed;
		break;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		m = &event->element.srq->mutex;
		cv = &event->element.srq->cond;
		count = &event->element.srq->events_completed;
		break;
	case IBV_EVENT_DEVICE_FATAL:
	case IBV_EVENT_PORT_ACTIVE:
	case IBV_EVENT_PORT_ERR:
	case IBV_EVENT_LID_CHANGE:
	case IBV_EVENT_PKEY_CHANGE:
	case IBV_EVENT_SM_CHANGE:
	case IBV_EVENT_CLIENT_REREGISTER:
	case IBV_EVENT_GID_CHANGE:
		return;
	default:
		m = &event->element.qp->mutex;
		cv = &event->element.qp->cond;
		count = &event->element.qp->events_completed;
		break;
	}
	pthread_mutex_lock(m);
	(*count)++;
	pthread_cond_broadcast(cv);
	pthread_mutex_unlock(m);
}
