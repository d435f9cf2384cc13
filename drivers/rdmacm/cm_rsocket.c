/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * rsockets (doc/rdmacm.md, "rsockets"): the socket calls and the
 * connection's life, on droce's own rdma_cm. Each socket has its own
 * event channel, always non-blocking: a blocking call sleeps in poll()
 * on it, so that the same code serves O_NONBLOCK sockets and rpoll.
 * Streams (SOCK_STREAM) over RC only; datagram rsockets (rdma-core's,
 * over UD) are not implemented and fail with EPROTONOSUPPORT.
 */

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cm_rsocket.h"

#define RS_RESOLVE_MS 2000
#define RS_ACCEPT_WAIT_MS 30000	/* a connection's RTU, at most */

/* sockets by number: the number is their channel's descriptor */
static struct rs_socket **tab;
static int tab_len;
static pthread_mutex_t tab_lock = PTHREAD_MUTEX_INITIALIZER;

static int
tab_insert(struct rs_socket *rs)
{
	struct rs_socket **n;
	int len;

	pthread_mutex_lock(&tab_lock);
	if (rs->index >= tab_len) {
		len = tab_len == 0 ? 1024 : tab_len;
		while (len <= rs->index)
			len *= 2;
		n = realloc(tab, len * sizeof(*n));
		if (n == NULL) {
			pthread_mutex_unlock(&tab_lock);
			errno = ENOMEM;
			return -1;
		}
		memset(n + tab_len, 0, (len - tab_len) * sizeof(*n));
		tab = n;
		tab_len = len;
	}
	tab[rs->index] = rs;
	rs->refs = 1;
	pthread_mutex_unlock(&tab_lock);
	return 0;
}

struct rs_socket *
rs_get(int index)
{
	struct rs_socket *rs = NULL;

	pthread_mutex_lock(&tab_lock);
	if (index >= 0 && index < tab_len)
		rs = tab[index];
	if (rs != NULL)
		rs->refs++;
	pthread_mutex_unlock(&tab_lock);
	if (rs == NULL) {
		errno = EBADF;
		return NULL;
	}
	pthread_mutex_lock(&rs->lock);
	return rs;
}

bool
rs_is_socket(int index)
{
	bool r;

	pthread_mutex_lock(&tab_lock);
	r = index >= 0 && index < tab_len && tab[index] != NULL;
	pthread_mutex_unlock(&tab_lock);
	return r;
}

static void
rs_free(struct rs_socket *rs)
{
	rs_free_ep(rs);
	if (rs->id != NULL)
		rdma_destroy_id(rs->id);
	if (rs->ch != NULL)
		rdma_destroy_event_channel(rs->ch);
	free(rs->route);
	pthread_mutex_destroy(&rs->lock);
	free(rs);
}

void
rs_put(struct rs_socket *rs)
{
	bool last;

	pthread_mutex_unlock(&rs->lock);
	pthread_mutex_lock(&tab_lock);
	last = --rs->refs == 0;
	pthread_mutex_unlock(&tab_lock);
	if (last)
		rs_free(rs);
}

/* A socket with its channel and ID: the channel's descriptor numbers it. */
static struct rs_socket *
rs_new(const struct rs_socket *from)
{
	struct rs_socket *rs = calloc(1, sizeof(*rs));
	int fl;

	if (rs == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&rs->lock, NULL);
	rs->type = SOCK_STREAM;
	if (from != NULL)
		rs_opts_inherit(rs, from);
	else
		rs_opts_default(rs);
	rs->ch = rdma_create_event_channel();
	if (rs->ch == NULL)
		goto fail;
	fl = fcntl(rs->ch->fd, F_GETFL);
	if (fl < 0 || fcntl(rs->ch->fd, F_SETFL, fl | O_NONBLOCK) < 0)
		goto fail;
	rs->index = rs->ch->fd;
	return rs;
fail:
	rs_free(rs);
	return NULL;
}

int
rsocket(int domain, int type, int protocol)
{
	int t = type & ~(SOCK_CLOEXEC | SOCK_NONBLOCK);
	struct rs_socket *rs;

	if (domain != AF_INET && domain != AF_INET6) {
		errno = EAFNOSUPPORT;
		return -1;
	}
	if (t != SOCK_STREAM ||
			(protocol != 0 && protocol != IPPROTO_TCP)) {
		errno = EPROTONOSUPPORT;	/* datagram rsockets: not yet */
		return -1;
	}
	rs = rs_new(NULL);
	if (rs == NULL)
		return -1;
	rs->fd_flags = (type & SOCK_CLOEXEC) ? FD_CLOEXEC : 0;
	rs->fs_flags = (type & SOCK_NONBLOCK) ? O_NONBLOCK : 0;
	if (rdma_create_id(rs->ch, &rs->id, rs, RDMA_PS_TCP) != 0) {
		rs_free(rs);
		return -1;
	}
	/* rgetsockname of an unbound socket tells its family */
	rs->id->route.addr.src_addr.sa_family = (sa_family_t)domain;
	if (tab_insert(rs) != 0) {
		rs_free(rs);
		return -1;
	}
	return rs->index;
}

int
rbind(int s, const struct sockaddr *addr, socklen_t addrlen)
{
	struct rs_socket *rs = rs_get(s);
	int rc = -1;

	(void)addrlen;
	if (rs == NULL)
		return -1;
	if (rs->phase != RS_INIT)
		errno = EINVAL;
	else if ((rc = rdma_bind_addr(rs->id, (struct sockaddr *)addr)) == 0)
		rs->phase = RS_BOUND;
	rs_put(rs);
	return rc;
}

int
rlisten(int s, int backlog)
{
	struct rs_socket *rs = rs_get(s);
	int rc = 0;

	if (rs == NULL)
		return -1;
	if (rs->phase != RS_LISTENING) {
		rc = rdma_listen(rs->id, backlog);
		if (rc == 0)
			rs->phase = RS_LISTENING;
	}
	rs_put(rs);
	return rc;
}

/* Sleep on the socket's channel (its lock dropped) for up to ms. */
static void
rs_sleep_cm(struct rs_socket *rs, int ms)
{
	struct pollfd p = { .fd = rs->index, .events = POLLIN };

	pthread_mutex_unlock(&rs->lock);
	poll(&p, 1, ms);
	pthread_mutex_lock(&rs->lock);
}

static void
rs_set_connected(struct rs_socket *rs)
{
	rs->phase = RS_CONNECTED;
	rs->rd = rs->wr = true;
	rs->retries = 0;
}

static void
rs_fail_connect(struct rs_socket *rs, int err)
{
	rs->phase = RS_CONNECT_ERROR;
	rs->err = err;
	errno = err;
}

/* An accepted connection, until its RTU: 0, or -1. */
static int
rs_accept_wait(struct rs_socket *c)
{
	struct rdma_cm_event *ev;
	enum rdma_cm_event_type t;
	int waited = 0;

	while (waited < RS_ACCEPT_WAIT_MS) {
		if (rdma_get_cm_event(c->ch, &ev) != 0) {
			rs_sleep_cm(c, 100);
			waited += 100;
			continue;
		}
		t = ev->event;
		rdma_ack_cm_event(ev);
		if (t == RDMA_CM_EVENT_ESTABLISHED) {
			rs_set_connected(c);
			return 0;
		}
		if (t != RDMA_CM_EVENT_CONNECT_RESPONSE)
			break;
	}
	errno = ECONNABORTED;
	return -1;
}

/* The child of a request: its own channel, QP and buffers, accepted. */
static struct rs_socket *
rs_accept_one(struct rs_socket *l, struct rdma_cm_id *id,
		const struct rs_conn_data *creq, struct rdma_conn_param *param)
{
	struct rs_socket *c = rs_new(l);
	struct rs_conn_data cresp;

	if (c == NULL)
		goto reject;
	c->fs_flags = l->fs_flags;
	c->fd_flags = l->fd_flags;
	if (rdma_migrate_id(id, c->ch) != 0)
		goto reject;
	c->id = id;
	id->context = c;
	if (creq->version != RS_CONN_VERSION || rs_create_ep(c) != 0)
		goto reject;
	rs_save_conn_data(c, creq);
	rs_format_conn_data(c, &cresp);
	param->private_data = &cresp;
	param->private_data_len = sizeof(cresp);
	if (rdma_accept(id, param) != 0)
		goto reject;
	pthread_mutex_lock(&c->lock);
	if (rs_accept_wait(c) != 0) {
		pthread_mutex_unlock(&c->lock);
		goto fail;
	}
	pthread_mutex_unlock(&c->lock);
	if (tab_insert(c) == 0)
		return c;
	goto fail;
reject:
	rdma_reject(id, NULL, 0);
fail:
	if (c != NULL && c->id == NULL)
		rdma_destroy_id(id);
	if (c != NULL)
		rs_free(c);
	else
		rdma_destroy_id(id);
	return NULL;
}

/* The next connection request on l: 0, or -1 (EAGAIN when nonblocking). */
static struct rs_socket *
rs_accept_next(struct rs_socket *l)
{
	struct rdma_cm_event *ev;
	struct rdma_conn_param param;
	struct rs_conn_data creq;
	struct rdma_cm_id *id;

	for (;;) {
		if (rdma_get_cm_event(l->ch, &ev) != 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				return NULL;
			if (l->fs_flags & O_NONBLOCK)
				return NULL;
			rs_sleep_cm(l, -1);
			continue;
		}
		if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
			rdma_ack_cm_event(ev);
			continue;
		}
		id = ev->id;
		memset(&creq, 0, sizeof(creq));
		if (ev->param.conn.private_data != NULL)
			memcpy(&creq, ev->param.conn.private_data,
				ev->param.conn.private_data_len < sizeof(creq) ?
				ev->param.conn.private_data_len : sizeof(creq));
		param = ev->param.conn;
		rdma_ack_cm_event(ev);
		return rs_accept_one(l, id, &creq, &param);
	}
}

static void
rs_copy_addr(struct sockaddr *dst, socklen_t *len, const struct sockaddr *src)
{
	socklen_t n = src->sa_family == AF_INET6 ?
		sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);

	if (dst != NULL && len != NULL)
		memcpy(dst, src, *len < n ? *len : n);
	if (len != NULL)
		*len = n;
}

int
raccept(int s, struct sockaddr *addr, socklen_t *addrlen)
{
	struct rs_socket *l = rs_get(s), *c;
	int r;

	if (l == NULL)
		return -1;
	if (l->phase != RS_LISTENING) {
		rs_put(l);
		errno = EINVAL;
		return -1;
	}
	do {
		c = rs_accept_next(l);
	} while (c == NULL && errno == ECONNABORTED &&
			!(l->fs_flags & O_NONBLOCK));
	rs_put(l);
	if (c == NULL)
		return -1;
	r = c->index;
	if (addr != NULL || addrlen != NULL)
		rs_copy_addr(addr, addrlen, rdma_get_peer_addr(c->id));
	return r;
}

static int
rs_resolve(struct rs_socket *rs)
{
	rs->phase = RS_ADDR_QUERY;
	return rdma_resolve_addr(rs->id, NULL, (struct sockaddr *)&rs->dst,
			RS_RESOLVE_MS);
}

static int
rs_start_connect(struct rs_socket *rs)
{
	struct rdma_conn_param param;
	struct rs_conn_data creq;

	if (rs->rmsg == NULL && rs_create_ep(rs) != 0)
		return -1;
	rs_format_conn_data(rs, &creq);
	memset(&param, 0, sizeof(param));
	param.private_data = &creq;
	param.private_data_len = sizeof(creq);
	param.flow_control = 1;
	param.retry_count = 7;
	param.rnr_retry_count = 7;
	rs->phase = RS_CONNECTING;
	return rdma_connect(rs->id, &param);
}

/* One CM event of a connect in progress; -1 with errno on failure. */
static int
rs_connect_event(struct rs_socket *rs, struct rdma_cm_event *ev)
{
	struct rs_conn_data cresp;

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		rs->phase = RS_ROUTE_QUERY;
		return rdma_resolve_route(rs->id, RS_RESOLVE_MS);
	case RDMA_CM_EVENT_ADDR_ERROR:
		if (rs->retries++ < RS_CONN_RETRIES)
			return rs_resolve(rs);
		errno = EHOSTUNREACH;
		return -1;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		return rs_start_connect(rs);
	case RDMA_CM_EVENT_ROUTE_ERROR:
		if (rs->retries++ < RS_CONN_RETRIES)
			return rdma_resolve_route(rs->id, RS_RESOLVE_MS);
		errno = EHOSTUNREACH;
		return -1;
	case RDMA_CM_EVENT_ESTABLISHED:
		memset(&cresp, 0, sizeof(cresp));
		if (ev->param.conn.private_data != NULL)
			memcpy(&cresp, ev->param.conn.private_data,
				ev->param.conn.private_data_len < sizeof(cresp) ?
				ev->param.conn.private_data_len : sizeof(cresp));
		if (cresp.version != RS_CONN_VERSION) {
			errno = ENOTSUP;
			return -1;
		}
		rs_save_conn_data(rs, &cresp);
		rs_set_connected(rs);
		return 0;
	case RDMA_CM_EVENT_REJECTED:
		errno = ECONNREFUSED;
		return -1;
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_CONNECT_ERROR:
		errno = ETIMEDOUT;
		return -1;
	default:
		return 0;	/* not this one's: wait on */
	}
}

/*
 * Move a connect on with the events there are: 0 once connected, else
 * -1 with EINPROGRESS (nothing yet) or the error. Lock held.
 */
int
rs_cm_progress(struct rs_socket *rs)
{
	struct rdma_cm_event *ev;
	int rc;

	while (rs_opening(rs)) {
		if (rdma_get_cm_event(rs->ch, &ev) != 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				errno = EINPROGRESS;
			return -1;
		}
		rc = rs_connect_event(rs, ev);
		rdma_ack_cm_event(ev);
		if (rc != 0) {
			rs_fail_connect(rs, errno);
			return -1;
		}
	}
	if (rs_connected(rs))
		return 0;
	errno = rs->phase == RS_CONNECT_ERROR && rs->err ? rs->err : ENOTCONN;
	return -1;
}

/* CM events of a connected socket: the peer's DREQ above all. */
void
rs_cm_events(struct rs_socket *rs)
{
	struct rdma_cm_event *ev;
	enum rdma_cm_event_type t;

	if (rs_opening(rs)) {
		rs_cm_progress(rs);
		return;
	}
	if (rs->phase == RS_LISTENING || rs->phase == RS_INIT ||
			rs->phase == RS_BOUND)
		return;		/* raccept takes a listener's */
	while (rdma_get_cm_event(rs->ch, &ev) == 0) {
		t = ev->event;
		rdma_ack_cm_event(ev);
		if (t != RDMA_CM_EVENT_DISCONNECTED &&
				t != RDMA_CM_EVENT_DEVICE_REMOVAL)
			continue;
		rs->cm_down = true;
		/* what came before the DREQ stays readable */
		rs_process_cq(rs);
		if (rs_connected(rs)) {
			rs->phase = RS_DISCONNECTED;
			rs->rd = rs->wr = false;
		}
	}
}

int
rconnect(int s, const struct sockaddr *addr, socklen_t addrlen)
{
	struct rs_socket *rs = rs_get(s);
	int rc = -1;

	if (rs == NULL)
		return -1;
	if (rs->phase == RS_INIT || rs->phase == RS_BOUND) {
		memset(&rs->dst, 0, sizeof(rs->dst));
		memcpy(&rs->dst, addr, addrlen < sizeof(rs->dst) ?
				addrlen : sizeof(rs->dst));
		rs->retries = 0;
		if (rs_resolve(rs) != 0) {
			rs_fail_connect(rs, errno);
			goto out;
		}
	} else if (rs_connected(rs)) {
		errno = EISCONN;
		goto out;
	} else if (!rs_opening(rs)) {
		errno = rs->phase == RS_LISTENING ? EINVAL : ECONNABORTED;
		goto out;
	} else if (rs->fs_flags & O_NONBLOCK) {
		rc = rs_cm_progress(rs);
		if (rc != 0 && errno == EINPROGRESS)
			errno = EALREADY;
		goto out;
	}
	while ((rc = rs_cm_progress(rs)) != 0 && errno == EINPROGRESS &&
			!(rs->fs_flags & O_NONBLOCK))
		rs_sleep_cm(rs, 200);
out:
	rs_put(rs);
	return rc;
}

static int
rs_shutdown_locked(struct rs_socket *rs, int how)
{
	uint32_t ctrl;

	if (!rs_connected(rs))
		return 0;
	if (how == SHUT_RDWR) {
		ctrl = RS_CTRL_DISCONNECT;
		rs->rd = rs->wr = false;
	} else if (how == SHUT_WR) {
		rs->wr = false;
		ctrl = rs->rd ? RS_CTRL_SHUTDOWN : RS_CTRL_DISCONNECT;
	} else {
		rs->rd = false;
		if (rs->wr)
			return 0;
		ctrl = RS_CTRL_DISCONNECT;
	}
	/* the peer learns it in order, after the data already sent */
	if (!rs_ctrl_avail(rs))
		rs_wait(rs, false, rs_ctrl_avail_or_down);
	if (rs_connected(rs) && rs_ctrl_avail(rs)) {
		rs->ctrl_seqno++;
		if (rs_post_ctrl(rs, ctrl) != 0)
			return -1;
	}
	if (rs_connected(rs))
		rs_wait(rs, false, rs_all_sends_done);
	return 0;
}

int
rshutdown(int s, int how)
{
	struct rs_socket *rs = rs_get(s);
	int rc;

	if (rs == NULL)
		return -1;
	if (how != SHUT_RD && how != SHUT_WR && how != SHUT_RDWR) {
		rs_put(rs);
		errno = EINVAL;
		return -1;
	}
	rc = rs_shutdown_locked(rs, how);
	rs_put(rs);
	return rc;
}

int
rclose(int s)
{
	struct rs_socket *rs = rs_get(s);

	if (rs == NULL)
		return -1;
	pthread_mutex_lock(&tab_lock);
	tab[s] = NULL;
	rs->refs--;	/* the table's */
	pthread_mutex_unlock(&tab_lock);
	if (rs_connected(rs))
		rs_shutdown_locked(rs, SHUT_RDWR);
	if (rs->id != NULL && rs->rmsg != NULL && !rs->cm_down)
		rdma_disconnect(rs->id);
	rs_put(rs);
	return 0;
}

int
rgetpeername(int s, struct sockaddr *addr, socklen_t *addrlen)
{
	struct rs_socket *rs = rs_get(s);

	if (rs == NULL)
		return -1;
	if (rs->rmsg == NULL) {
		rs_put(rs);
		errno = ENOTCONN;
		return -1;
	}
	rs_copy_addr(addr, addrlen, rdma_get_peer_addr(rs->id));
	rs_put(rs);
	return 0;
}

int
rgetsockname(int s, struct sockaddr *addr, socklen_t *addrlen)
{
	struct rs_socket *rs = rs_get(s);

	if (rs == NULL)
		return -1;
	rs_copy_addr(addr, addrlen, rdma_get_local_addr(rs->id));
	rs_put(rs);
	return 0;
}
