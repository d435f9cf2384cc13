/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/* rdma_cm IDs: creation and destruction, listening, options, endpoints. */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cm_internal.h"
#include "droce_wire.h"
#include "droce_verbs.h"

struct cm_id_priv *
cm_id_new(struct cm_channel *c, void *context, enum rdma_port_space ps,
		enum ibv_qp_type qpt)
{
	struct cm_id_priv *p = calloc(1, sizeof(*p));

	if (p == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	p->chan = c;
	p->id.channel = &c->ch;
	p->id.context = context;
	p->id.ps = ps;
	p->id.qp_type = qpt;
	p->afonly = false;
	pthread_cond_init(&p->acked, NULL);
	p->next = cm.ids;
	cm.ids = p;
	return p;
}

static int
ps_qp_type(enum rdma_port_space ps, enum ibv_qp_type *t)
{
	switch (ps) {
	case RDMA_PS_TCP:
		*t = IBV_QPT_RC;
		return 0;
	case RDMA_PS_UDP:
	case RDMA_PS_IPOIB:
		*t = IBV_QPT_UD;
		return 0;
	default:
		return -1;	/* RDMA_PS_IB (AF_IB addressing): not on RoCE */
	}
}

static int
create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id,
		void *context, enum rdma_port_space ps, enum ibv_qp_type qpt)
{
	struct cm_channel *c;
	struct cm_id_priv *p;

	if (id == NULL) {
		errno = EINVAL;
		return -1;
	}
	if (cm_devices_init() != 0)
		return -1;
	c = channel != NULL ? (struct cm_channel *)channel : cm_channel_new(true);
	if (c == NULL)
		return -1;
	pthread_mutex_lock(&cm.lock);
	p = cm_id_new(c, context, ps, qpt);
	if (p != NULL)
		p->sync = channel == NULL;
	pthread_mutex_unlock(&cm.lock);
	if (p == NULL) {
		if (channel == NULL)
			cm_channel_free(c);
		return -1;
	}
	*id = &p->id;
	return 0;
}

int
rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id,
		void *context, enum rdma_port_space ps)
{
	enum ibv_qp_type t;

	if (ps_qp_type(ps, &t) != 0) {
		errno = EPROTONOSUPPORT;
		return -1;
	}
	return create_id(channel, id, context, ps, t);
}

static void
unlink_id(struct cm_id_priv *p)
{
	struct cm_id_priv **pp;

	for (pp = &cm.ids; *pp != NULL; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			return;
		}
}

/* What the peer must hear when an ID goes mid-connection (lock held). */
static void
leave(struct cm_id_priv *p)
{
	switch (p->state) {
	case CM_REQ_RCVD:
	case CM_REQ_SENT:
	case CM_REP_RCVD:
		cm_send_rej(p->dev, p->ah, p->tid, p->local_comm_id,
			p->remote_comm_id, p->state == CM_REQ_RCVD ? CM_REF_REQ :
			p->state == CM_REP_RCVD ? CM_REF_REP : CM_REF_OTHER,
			p->state == CM_REQ_SENT ? CM_REJ_TIMEOUT :
			CM_REJ_CONSUMER_DEFINED, NULL, 0);
		break;
	case CM_ESTABLISHED:
	case CM_REP_SENT:
	case CM_DREQ_SENT:
		if (p->id.qp_type != IBV_QPT_UD)
			cm_linger_dreq(p);
		break;
	default:
		break;
	}
	cm_retx_stop(p);
	cm_request_done(p);
}

static void destroy_locked(struct cm_id_priv *p);

static uint64_t
listen_sid(const struct cm_id_priv *p)
{
	return cm_service_id(p->id.ps, cm_sa_port(&p->id.route.addr.src_addr));
}

/* A listener stops: droced sends its REQs nowhere more. */
static void
unlisten(struct cm_id_priv *p)
{
	struct cm_dev *d;

	for (d = cm.devs; d != NULL; d = d->next)
		if (d->up && (p->dev == NULL || p->dev == d))
			droce_cm_listen(d->verbs, listen_sid(p), 0);
}

/* A listener's requests that the application never got go with it. */
static void
drop_children(struct cm_id_priv *l)
{
	struct cm_id_priv *c, *n;

	for (c = cm.ids; c != NULL; c = n) {
		n = c->next;
		if (c->parent != l)
			continue;
		if (c->req_pending) {
			leave(c);
			destroy_locked(c);
		} else {
			c->parent = NULL;
		}
	}
}

static void
destroy_locked(struct cm_id_priv *p)
{
	struct cm_channel *c = p->chan;

	p->destroying = true;
	/* its events first: a CONNECT_REQUEST waits on the listener's */
	cm_event_forget(p);
	cm_held_drop(p);
	cm_mcast_leave_all(p);
	leave(p);
	if (p->state == CM_LISTEN) {
		unlisten(p);
		drop_children(p);
	}
	unlink_id(p);
	/* events got and not acked name this ID; a resolver thread too */
	while (p->events_out > 0 || p->refs > 0)
		pthread_cond_wait(&p->acked, &cm.lock);
	if (p->sync)
		cm_channel_free(c);
	pthread_cond_destroy(&p->acked);
	free(p);
}

int
rdma_destroy_id(struct rdma_cm_id *id)
{
	struct cm_id_priv *p = cm_id(id);

	if (id == NULL) {
		errno = EINVAL;
		return -1;
	}
	cm_ack_last(p);
	pthread_mutex_lock(&cm.lock);
	destroy_locked(p);
	pthread_mutex_unlock(&cm.lock);
	return 0;
}

struct cm_id_priv *
cm_listener_of(struct cm_dev *d, uint64_t service_id, const uint8_t dst[16])
{
	struct cm_id_priv *p;
	uint8_t g[16];

	for (p = cm.ids; p != NULL; p = p->next) {
		const struct sockaddr *sa = &p->id.route.addr.src_addr;

		if (p->state != CM_LISTEN || (p->dev != NULL && p->dev != d) ||
				cm_service_id(p->id.ps, cm_sa_port(sa)) !=
				service_id)
			continue;
		if (cm_sa_any(sa)) {
			/* an IPv4 wildcard takes IPv4 only; IPv6 both,
			 * unless AFONLY */
			bool v4 = droce_gid_is_ipv4(dst, NULL);

			if (sa->sa_family == AF_INET && !v4)
				continue;
			if (sa->sa_family == AF_INET6 && p->afonly && v4)
				continue;
			return p;
		}
		cm_sa_to_gid(sa, g);
		if (memcmp(g, dst, 16) == 0)
			return p;
	}
	return NULL;
}

int
rdma_listen(struct rdma_cm_id *id, int backlog)
{
	struct cm_id_priv *p = cm_id(id);
	struct cm_dev *d;
	int rc = 0;

	if (id == NULL) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&cm.lock);
	if (!p->bound || p->state != CM_IDLE) {
		errno = EINVAL;
		rc = -1;
		goto out;
	}
	/* bound to an address: its device; a wildcard: every device
	 * (attached to droced, which routes REQs for the service ID here) */
	for (d = cm.devs; d != NULL && rc == 0; d = d->next)
		if (p->dev == NULL || p->dev == d) {
			rc = cm_dev_start(d);
			if (rc == 0 && (rc = droce_cm_listen(d->verbs,
					listen_sid(p), 1)) != 0) {
				errno = rc;
				rc = -1;
			}
		}
	if (rc == 0) {
		p->backlog = backlog;
		p->state = CM_LISTEN;
	}
out:
	pthread_mutex_unlock(&cm.lock);
	return rc;
}

int
rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **id)
{
	struct cm_id_priv *l = cm_id(listen);
	struct rdma_cm_event *ev;
	struct cm_id_priv *c;

	if (listen == NULL || id == NULL || !l->sync) {
		errno = EINVAL;
		return -1;
	}
	cm_ack_last(l);
	for (;;) {
		if (rdma_get_cm_event(listen->channel, &ev) != 0)
			return -1;
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
			break;
		rdma_ack_cm_event(ev);	/* nothing else waits on a listener */
	}
	c = cm_id(ev->id);
	c->id.event = ev;	/* acked by the next call on the new ID */
	if (l->ep_attr != NULL) {
		struct ibv_qp_init_attr a = *l->ep_attr;

		if (rdma_create_qp(&c->id, l->ep_pd, &a) != 0) {
			int e = errno;

			rdma_reject(&c->id, NULL, 0);
			rdma_destroy_id(&c->id);
			errno = e;
			return -1;
		}
		c->own_qp = true;
	}
	*id = &c->id;
	return 0;
}

int
rdma_set_option(struct rdma_cm_id *id, int level, int optname,
		void *optval, size_t optlen)
{
	struct cm_id_priv *p = cm_id(id);
	int rc = 0;

	if (id == NULL || optval == NULL) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&cm.lock);
	if (level == RDMA_OPTION_ID && optname == RDMA_OPTION_ID_TOS &&
			optlen == sizeof(uint8_t)) {
		p->tos = *(uint8_t *)optval;
		p->tos_set = true;
	} else if (level == RDMA_OPTION_ID &&
			optname == RDMA_OPTION_ID_REUSEADDR &&
			optlen == sizeof(int)) {
		p->reuse = *(int *)optval != 0;
	} else if (level == RDMA_OPTION_ID && optname == RDMA_OPTION_ID_AFONLY
			&& optlen == sizeof(int)) {
		p->afonly = *(int *)optval != 0;
	} else if (level == RDMA_OPTION_ID &&
			optname == RDMA_OPTION_ID_ACK_TIMEOUT &&
			optlen == sizeof(uint8_t)) {
		p->ack_timeout = *(uint8_t *)optval;
	} else if (level == RDMA_OPTION_IB && optname == RDMA_OPTION_IB_PATH) {
		/* RoCE paths come from the addresses: accepted, not used */
	} else {
		/* a known option with the wrong size, or one droce lacks */
		errno = level == RDMA_OPTION_ID && optname >= RDMA_OPTION_ID_TOS &&
			optname <= RDMA_OPTION_ID_ACK_TIMEOUT ? EINVAL : ENOSYS;
		rc = -1;
	}
	pthread_mutex_unlock(&cm.lock);
	return rc;
}

__be16
rdma_get_src_port(struct rdma_cm_id *id)
{
	return htobe16(cm_sa_port(&id->route.addr.src_addr));
}

__be16
rdma_get_dst_port(struct rdma_cm_id *id)
{
	return htobe16(cm_sa_port(&id->route.addr.dst_addr));
}

struct ibv_context **
rdma_get_devices(int *num_devices)
{
	struct ibv_context **list;
	struct cm_dev *d;
	int n = 0;

	if (cm_devices_init() != 0) {
		if (num_devices != NULL)
			*num_devices = 0;
		return calloc(1, sizeof(*list));
	}
	for (d = cm.devs; d != NULL; d = d->next)
		n++;
	list = calloc((size_t)n + 1, sizeof(*list));
	if (list == NULL)
		return NULL;
	n = 0;
	for (d = cm.devs; d != NULL; d = d->next)
		list[n++] = d->verbs;
	if (num_devices != NULL)
		*num_devices = n;
	return list;
}

void
rdma_free_devices(struct ibv_context **list)
{
	free(list);
}

int
rdma_create_ep(struct rdma_cm_id **id, struct rdma_addrinfo *res,
		struct ibv_pd *pd, struct ibv_qp_init_attr *qp_init_attr)
{
	struct rdma_cm_id *cid;
	struct cm_id_priv *p;
	enum ibv_qp_type t;
	int e;

	if (id == NULL || res == NULL) {
		errno = EINVAL;
		return -1;
	}
	t = res->ai_qp_type ? (enum ibv_qp_type)res->ai_qp_type : IBV_QPT_RC;
	if (create_id(NULL, &cid, NULL, (enum rdma_port_space)res->ai_port_space,
			t) != 0)
		return -1;
	p = cm_id(cid);
	if (qp_init_attr != NULL)	/* as librdmacm: the QP type of res */
		qp_init_attr->qp_type = t;
	if (res->ai_flags & RAI_PASSIVE) {
		if (rdma_bind_addr(cid, res->ai_src_addr) != 0)
			goto fail;
		if (qp_init_attr != NULL) {
			p->ep_attr = malloc(sizeof(*p->ep_attr));
			if (p->ep_attr == NULL)
				goto fail;
			*p->ep_attr = *qp_init_attr;
			p->ep_pd = pd;
		}
		*id = cid;
		return 0;
	}
	if (rdma_resolve_addr(cid, res->ai_src_addr, res->ai_dst_addr,
			2000) != 0 || rdma_resolve_route(cid, 2000) != 0)
		goto fail;
	if (qp_init_attr != NULL) {
		if (rdma_create_qp(cid, pd, qp_init_attr) != 0)
			goto fail;
		p->own_qp = true;
	}
	*id = cid;
	return 0;
fail:
	e = errno;
	free(p->ep_attr);
	p->ep_attr = NULL;
	rdma_destroy_id(cid);
	errno = e;
	return -1;
}

void
rdma_destroy_ep(struct rdma_cm_id *id)
{
	struct cm_id_priv *p = cm_id(id);

	if (id == NULL)
		return;
	if (id->qp != NULL)
		rdma_destroy_qp(id);
	if (p->own_srq)
		rdma_destroy_srq(id);
	free(p->ep_attr);
	p->ep_attr = NULL;
	rdma_destroy_id(id);
}

/* ECE (a vendor's connection options): droce has none to offer. */
int
rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	if (id == NULL || ece == NULL) {
		errno = EINVAL;
		return -1;
	}
	cm_id(id)->ece_vendor = ece->vendor_id;
	cm_id(id)->ece_options = ece->options;
	return 0;
}

int
rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	if (id == NULL || ece == NULL) {
		errno = EINVAL;
		return -1;
	}
	memset(ece, 0, sizeof(*ece));
	return 0;
}
