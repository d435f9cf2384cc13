/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * Event channels: a queue under the CM lock behind an eventfd in
 * semaphore mode, one count per queued event, so that the fd polls
 * readable exactly while an event waits and O_NONBLOCK on it makes
 * rdma_get_cm_event return EAGAIN as librdmacm's does.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "cm_internal.h"

struct cm_channel *
cm_channel_new(bool sync)
{
	struct cm_channel *c = calloc(1, sizeof(*c));

	if (c == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	c->ch.fd = eventfd(0, EFD_SEMAPHORE | EFD_CLOEXEC);
	if (c->ch.fd < 0) {
		free(c);
		return NULL;
	}
	c->sync = sync;
	return c;
}

/*
 * A destroyed channel stays, silent, while the next few are destroyed:
 * an application's event thread may still be on its way into
 * rdma_get_cm_event on it as the main thread tears down (rping's is,
 * after acking the DISCONNECTED that woke the main thread). In rdma-core
 * the kernel's slower teardown mostly hides that race; here that thread
 * would read a closed descriptor, take EBADF for an event and exit the
 * process. Instead it waits on a silent eventfd, as a blocked read
 * does, and the memory it holds a pointer to is still the channel's.
 */
#define CM_CHANNEL_GRAVE 8

static struct cm_channel *grave[CM_CHANNEL_GRAVE];
static unsigned int grave_next;
static int dead_fd = -1;
static pthread_mutex_t grave_lock = PTHREAD_MUTEX_INITIALIZER;	/* callers may hold cm.lock */

static void
cm_channel_release(struct cm_channel *c)
{
	close(c->ch.fd);
	free(c);
}

void
cm_channel_free(struct cm_channel *c)
{
	struct cm_event_priv *e, *n;
	struct cm_channel *old;

	for (e = c->head; e != NULL; e = n) {
		n = e->next;
		free(e);
	}
	c->head = c->tail = NULL;
	pthread_mutex_lock(&grave_lock);
	if (dead_fd < 0)
		dead_fd = eventfd(0, EFD_CLOEXEC);
	if (dead_fd < 0 || dup2(dead_fd, c->ch.fd) < 0) {
		pthread_mutex_unlock(&grave_lock);
		cm_channel_release(c);
		return;
	}
	old = grave[grave_next];
	grave[grave_next] = c;
	grave_next = (grave_next + 1) % CM_CHANNEL_GRAVE;
	pthread_mutex_unlock(&grave_lock);
	if (old != NULL)
		cm_channel_release(old);
}

struct rdma_event_channel *
rdma_create_event_channel(void)
{
	struct cm_channel *c;

	if (cm_devices_init() != 0)
		return NULL;
	c = cm_channel_new(false);
	return c != NULL ? &c->ch : NULL;
}

void
rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	if (channel != NULL)
		cm_channel_free((struct cm_channel *)channel);
}

struct cm_event_priv *
cm_event_queue(struct cm_id_priv *p, enum rdma_cm_event_type type, int status)
{
	return cm_event_queue_on(p->chan, p, type, status);
}

struct cm_event_priv *
cm_event_new(struct cm_id_priv *p, enum rdma_cm_event_type type, int status)
{
	struct cm_event_priv *e = calloc(1, sizeof(*e));

	if (e == NULL)
		return NULL;
	e->ev.id = &p->id;
	e->ev.event = type;
	e->ev.status = status;
	e->owner = p;
	return e;
}

/* on channel c: a CONNECT_REQUEST goes on its listener's */
struct cm_event_priv *
cm_event_queue_on(struct cm_channel *c, struct cm_id_priv *p,
		enum rdma_cm_event_type type, int status)
{
	struct cm_event_priv *e = cm_event_new(p, type, status);

	if (e != NULL)
		cm_event_post(c, e);
	return e;
}

void
cm_event_post(struct cm_channel *c, struct cm_event_priv *e)
{
	uint64_t one = 1;

	if (c->tail != NULL)
		c->tail->next = e;
	else
		c->head = e;
	c->tail = e;
	if (write(c->ch.fd, &one, sizeof(one)) != sizeof(one))
		abort();	/* an eventfd only refuses past 2^64 - 2 */
}

/* An ID goes: events of it not yet got are dropped where they wait. */
void
cm_event_forget(struct cm_id_priv *p)
{
	struct cm_event_priv *e;

	for (e = p->chan->head; e != NULL; e = e->next)
		if (e->owner == p)
			e->owner = NULL;
	if (p->parent != NULL)
		for (e = p->parent->chan->head; e != NULL; e = e->next)
			if (e->owner == p)
				e->owner = NULL;
}

int
rdma_get_cm_event(struct rdma_event_channel *channel,
		struct rdma_cm_event **event)
{
	struct cm_channel *c = (struct cm_channel *)channel;
	struct cm_event_priv *e;
	uint64_t v;

	if (channel == NULL || event == NULL) {
		errno = EINVAL;
		return -1;
	}
	for (;;) {
		/* blocks, or EAGAIN, as the fd's flags say */
		if (read(c->ch.fd, &v, sizeof(v)) != sizeof(v))
			return -1;
		pthread_mutex_lock(&cm.lock);
		e = c->head;
		if (e != NULL) {
			c->head = e->next;
			if (c->head == NULL)
				c->tail = NULL;
			e->next = NULL;
			if (e->owner != NULL) {
				e->owner->events_out++;
				if (e->ev.event == RDMA_CM_EVENT_CONNECT_REQUEST)
					e->owner->req_pending = false;
			}
		}
		pthread_mutex_unlock(&cm.lock);
		if (e == NULL)
			continue;
		if (e->owner == NULL) {	/* its ID was destroyed */
			free(e);
			continue;
		}
		*event = &e->ev;
		return 0;
	}
}

int
rdma_ack_cm_event(struct rdma_cm_event *event)
{
	struct cm_event_priv *e = (struct cm_event_priv *)event;

	if (event == NULL) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&cm.lock);
	if (e->owner != NULL && e->owner->events_out > 0) {
		e->owner->events_out--;
		pthread_cond_broadcast(&e->owner->acked);
	}
	pthread_mutex_unlock(&cm.lock);
	free(e);
	return 0;
}

void
cm_ack_last(struct cm_id_priv *p)
{
	if (p->id.event != NULL) {
		rdma_ack_cm_event(p->id.event);
		p->id.event = NULL;
	}
}

/*
 * A synchronous ID (created without a channel) waits here for the event
 * its call started, as librdmacm's do; the event stays in id->event.
 */
int
cm_wait(struct cm_id_priv *p, enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev;

	cm_ack_last(p);
	if (rdma_get_cm_event(&p->chan->ch, &ev) != 0)
		return -1;
	p->id.event = ev;
	if (ev->event == want && ev->status == 0)
		return 0;
	if (ev->event == RDMA_CM_EVENT_REJECTED)
		errno = ECONNREFUSED;
	else if (ev->status < 0)
		errno = -ev->status;
	else if (ev->status > 0)
		errno = ev->status;
	else
		errno = EPROTO;
	return -1;
}

static const char *const event_names[] = {
	[RDMA_CM_EVENT_ADDR_RESOLVED] = "RDMA_CM_EVENT_ADDR_RESOLVED",
	[RDMA_CM_EVENT_ADDR_ERROR] = "RDMA_CM_EVENT_ADDR_ERROR",
	[RDMA_CM_EVENT_ROUTE_RESOLVED] = "RDMA_CM_EVENT_ROUTE_RESOLVED",
	[RDMA_CM_EVENT_ROUTE_ERROR] = "RDMA_CM_EVENT_ROUTE_ERROR",
	[RDMA_CM_EVENT_CONNECT_REQUEST] = "RDMA_CM_EVENT_CONNECT_REQUEST",
	[RDMA_CM_EVENT_CONNECT_RESPONSE] = "RDMA_CM_EVENT_CONNECT_RESPONSE",
	[RDMA_CM_EVENT_CONNECT_ERROR] = "RDMA_CM_EVENT_CONNECT_ERROR",
	[RDMA_CM_EVENT_UNREACHABLE] = "RDMA_CM_EVENT_UNREACHABLE",
	[RDMA_CM_EVENT_REJECTED] = "RDMA_CM_EVENT_REJECTED",
	[RDMA_CM_EVENT_ESTABLISHED] = "RDMA_CM_EVENT_ESTABLISHED",
	[RDMA_CM_EVENT_DISCONNECTED] = "RDMA_CM_EVENT_DISCONNECTED",
	[RDMA_CM_EVENT_DEVICE_REMOVAL] = "RDMA_CM_EVENT_DEVICE_REMOVAL",
	[RDMA_CM_EVENT_MULTICAST_JOIN] = "RDMA_CM_EVENT_MULTICAST_JOIN",
	[RDMA_CM_EVENT_MULTICAST_ERROR] = "RDMA_CM_EVENT_MULTICAST_ERROR",
	[RDMA_CM_EVENT_ADDR_CHANGE] = "RDMA_CM_EVENT_ADDR_CHANGE",
	[RDMA_CM_EVENT_TIMEWAIT_EXIT] = "RDMA_CM_EVENT_TIMEWAIT_EXIT",
};

const char *
rdma_event_str(enum rdma_cm_event_type event)
{
	if ((unsigned int)event < sizeof(event_names) / sizeof(event_names[0]) &&
			event_names[event] != NULL)
		return event_names[event];
	return "UNKNOWN EVENT";
}

/*
 * Events of p waiting on from go to to, in their order, as the kernel's
 * ucma moves a migrated ID's pending events to its new file: an
 * ESTABLISHED that arrives between rdma_accept and rdma_migrate_id
 * (librpma migrates its accepted IDs onto a channel of their own) was
 * dropped, and the server saw the connection close before it opened.
 * The entry left behind has no owner: a reader of from skips it, which
 * keeps from's eventfd count right. Lock held.
 */
static void
move_events(struct cm_id_priv *p, struct cm_channel *from,
		struct cm_channel *to)
{
	struct cm_event_priv *e, *n;
	uint64_t one = 1;

	for (e = from->head; e != NULL; e = e->next) {
		if (e->owner != p)
			continue;
		n = malloc(sizeof(*n));
		if (n == NULL) {
			e->owner = NULL;	/* dropped, as before */
			continue;
		}
		memcpy(n, e, sizeof(*n));
		if (n->ev.param.conn.private_data == e->pdata)
			n->ev.param.conn.private_data = n->pdata;
		n->next = NULL;
		if (to->tail != NULL)
			to->tail->next = n;
		else
			to->head = n;
		to->tail = n;
		if (write(to->ch.fd, &one, sizeof(one)) != sizeof(one))
			abort();
		e->owner = NULL;
	}
}

int
rdma_migrate_id(struct rdma_cm_id *id, struct rdma_event_channel *channel)
{
	struct cm_id_priv *p = cm_id(id);
	struct cm_channel *c, *old;

	if (id == NULL) {
		errno = EINVAL;
		return -1;
	}
	c = channel != NULL ? (struct cm_channel *)channel : cm_channel_new(true);
	if (c == NULL)
		return -1;
	/*
	 * A synchronous ID keeps its last event in id->event for the caller
	 * to read, and acks it itself at its next call (cm_wait): nobody
	 * else will ack it, so the wait below would never end. librpma
	 * resolves a route on a synchronous ID and then migrates it onto its
	 * own channel; rdma-core acks that event here too.
	 */
	if (p->sync)
		cm_ack_last(p);
	pthread_mutex_lock(&cm.lock);
	/* events already got must be acked first: they name this ID */
	while (p->events_out > 0)
		pthread_cond_wait(&p->acked, &cm.lock);
	old = p->chan;
	if (old != c)
		move_events(p, old, c);
	p->chan = c;
	p->sync = channel == NULL;
	id->channel = &c->ch;
	pthread_mutex_unlock(&cm.lock);
	if (old->sync && old != c)
		cm_channel_free(old);
	return 0;
}
