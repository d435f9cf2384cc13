/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * Attached mode, control side: which devices droced offers (a HELLO on a
 * short-lived connection), a session per context (its own connection,
 * the shared region, the doorbell rings), requests one at a time on it,
 * and a watcher thread per session for async events and the daemon's
 * death. After the daemon is gone every call fails (EIO) instead of
 * waiting: the watcher wakes whoever is blocked.
 */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "attach.h"

/*
 * The socket to attach to, or NULL in process: DROCE_DAEMON when set;
 * else the default socket when it exists and no DPDK device is
 * configured (a configured one means the process wants its own port).
 */
const char *
da_daemon_path(char *buf, size_t len)
{
	const char *v = droce_conf_get("DROCE_DAEMON");

	if (v != NULL && v[0] != '\0') {
		snprintf(buf, len, "%s", v);
		return buf;
	}
	v = droce_conf_get("DROCE_DEVARGS");
	if ((v == NULL || v[0] == '\0') && access(DROCE_DAEMON_DEFAULT, F_OK) == 0) {
		snprintf(buf, len, "%s", DROCE_DAEMON_DEFAULT);
		return buf;
	}
	return NULL;
}

static int
sock_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int s, e;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -1;
	if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		e = errno;
		close(s);
		errno = e;
		return -1;
	}
	return s;
}

static void
set_nonblock(int fd)
{
	int fl = fd >= 0 ? fcntl(fd, F_GETFL) : -1;

	if (fl >= 0)
		fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static void
close_fds(const int *fds, int n)
{
	int i;

	for (i = 0; i < n; i++)
		close(fds[i]);
}

/* The session can do nothing more: its requests fail from now on. */
static void
mark_dead(struct da_ctx *a)
{
	__atomic_store_n(&a->dead, 1, __ATOMIC_RELEASE);
}

/* One request on sock and its reply: 0 or a positive errno (the
 * daemon's refusal, or EIO: the connection failed). */
static int
rpc_on(int sock, uint32_t *seq, uint32_t op, const void *req, void *rep,
		const int *fds, int nfds, int *rfds, int *nrfds)
{
	union {
		uint8_t buf[DROCE_CHAN_MSG_MAX];
		struct droce_chan_hdr h;
	} in;
	struct droce_chan_hdr h = { .op = op, .seq = ++*seq };
	int got[DROCE_CHAN_MAX_FDS], ngot = 0, rc;

	if (nrfds != NULL)
		*nrfds = 0;
	rc = droce_chan_send(sock, &h, req, (uint32_t)droce_chan_body_len(op, 0),
		fds, nfds);
	if (rc != 0)
		return EIO;
	rc = droce_chan_recv(sock, in.buf, sizeof(in.buf), 1, got, &ngot);
	if (rc < 0)
		return EIO;
	if (in.h.op != op || in.h.seq != h.seq) {
		/* the daemon answers nothing unasked: a broken session */
		close_fds(got, ngot);
		return EIO;
	}
	if (in.h.status != 0) {
		close_fds(got, ngot);
		return in.h.status > 0 ? in.h.status : EPROTO;
	}
	if (rep != NULL)
		memcpy(rep, in.buf + sizeof(in.h), (size_t)rc);
	if (rfds != NULL && nrfds != NULL) {
		memcpy(rfds, got, sizeof(int) * (size_t)ngot);
		*nrfds = ngot;
	} else {
		close_fds(got, ngot);
	}
	return 0;
}

int
da_rpc(struct da_ctx *a, uint32_t op, const void *req, void *rep,
		const int *fds, int nfds, int *rfds, int *nrfds)
{
	int rc;

	if (nrfds != NULL)
		*nrfds = 0;
	if (da_dead(a))
		return EIO;
	pthread_mutex_lock(&a->rpc_lock);
	rc = rpc_on(a->sock, &a->seq, op, req, rep, fds, nfds, rfds, nrfds);
	pthread_mutex_unlock(&a->rpc_lock);
	if (rc == EIO) {
		/* a broken session ends: the watcher sees the hang-up and
		 * tells the application */
		mark_dead(a);
		shutdown(a->sock, SHUT_RDWR);
	}
	return rc;
}

static void
hello_req(struct droce_chan_hello_req *r, uint32_t port)
{
	extern char *program_invocation_short_name;

	memset(r, 0, sizeof(*r));
	r->version = DROCE_CHAN_VERSION;
	r->port = port;
	snprintf(r->comm, sizeof(r->comm), "%s", program_invocation_short_name);
}

/*
 * The device droced offers as its port port, from a HELLO on a
 * connection of its own (ibv_devices and ibv_devinfo open no context for
 * the list). 0, or -1 with one line on stderr naming the socket.
 */
int
da_dev_probe(struct dv_device *d, const char *path, uint32_t port)
{
	struct droce_chan_hello_req r;
	struct da_dev *att = calloc(1, sizeof(*att));
	int fds[DROCE_CHAN_MAX_FDS], nfds = 0, s, rc, i;
	uint32_t seq = 0;

	if (att == NULL)
		return -1;
	s = sock_connect(path);
	if (s < 0) {
		fprintf(stderr, "droce: cannot attach to droced at %s: %s\n",
			path, strerror(errno));
		free(att);
		return -1;
	}
	hello_req(&r, port);
	rc = rpc_on(s, &seq, DROCE_OP_HELLO, &r, &att->hello, NULL, 0, fds,
		&nfds);
	close(s);
	close_fds(fds, nfds);
	if (rc != 0) {
		fprintf(stderr, "droce: droced at %s refused HELLO: %s\n", path,
			strerror(rc == EIO ? ECONNRESET : rc));
		free(att);
		return -1;
	}
	snprintf(att->path, sizeof(att->path), "%s", path);
	att->port = port;
	att->hello.name[sizeof(att->hello.name) - 1] = '\0';
	snprintf(d->conf.name, sizeof(d->conf.name), "%s", att->hello.name);
	memcpy(d->conf.mac, att->hello.mac, 6);
	d->conf.ipv4 = att->hello.ipv4;
	d->conf.mtu = att->hello.mtu;
	for (i = 0; i < DROCE_MAX_GIDS && i < 16; i++) {
		memcpy(d->gids[i].gid, att->hello.gids[i].gid, 16);
		d->gids[i].valid = att->hello.gids[i].valid;
	}
	d->att = att;
	return 0;
}

/* ---- objects by handle, channels ---- */

static struct da_table *
table_of(struct da_ctx *a, enum da_kind k)
{
	return k == DA_QP ? &a->qps : k == DA_CQ ? &a->cqs : &a->srqs;
}

int
da_obj_set(struct da_ctx *a, enum da_kind k, uint32_t handle, void *obj)
{
	struct da_table *t = table_of(a, k);
	int rc = 0;

	pthread_mutex_lock(&a->obj_lock);
	if (handle >= t->cap) {
		uint32_t nc = t->cap ? t->cap : 64;
		void **n;

		while (nc <= handle && nc < (1u << 28))
			nc *= 2;
		n = nc > handle ? realloc(t->slot, nc * sizeof(*n)) : NULL;
		if (n == NULL) {
			rc = ENOMEM;
			goto out;
		}
		memset(n + t->cap, 0, (nc - t->cap) * sizeof(*n));
		t->slot = n;
		t->cap = nc;
	}
	t->slot[handle] = obj;
out:
	pthread_mutex_unlock(&a->obj_lock);
	return rc;
}

void
da_obj_del(struct da_ctx *a, enum da_kind k, uint32_t handle)
{
	struct da_table *t = table_of(a, k);

	pthread_mutex_lock(&a->obj_lock);
	if (handle < t->cap)
		t->slot[handle] = NULL;
	pthread_mutex_unlock(&a->obj_lock);
}

/* A QP's CQs by its number: the table's lock keeps the QP (and so its
 * CQs) from going while we read; the daemon writes prod, the
 * application cons. */
int
da_qp_cq_pos(struct da_ctx *a, uint32_t qpn, struct droce_cq_pos *pos)
{
	struct da_table *t = &a->qps;
	uint32_t i;
	int rc = ENOENT;

	pthread_mutex_lock(&a->obj_lock);
	for (i = 0; i < t->cap; i++) {
		const struct dv_qp *qp = t->slot[i];
		const struct dv_cq *scq, *rcq;

		if (qp == NULL || qp->ex.qp_base.qp_num != qpn ||
				qp->ex.qp_base.send_cq == NULL)
			continue;
		scq = dv_cq(qp->ex.qp_base.send_cq);
		rcq = qp->ex.qp_base.recv_cq != NULL ?
			dv_cq(qp->ex.qp_base.recv_cq) : scq;
		pos->send_prod = __atomic_load_n(&scq->sh->prod, __ATOMIC_ACQUIRE);
		pos->send_cons = __atomic_load_n(&scq->sh->cons, __ATOMIC_ACQUIRE);
		pos->recv_prod = __atomic_load_n(&rcq->sh->prod, __ATOMIC_ACQUIRE);
		pos->recv_cons = __atomic_load_n(&rcq->sh->cons, __ATOMIC_ACQUIRE);
		rc = 0;
		break;
	}
	pthread_mutex_unlock(&a->obj_lock);
	return rc;
}

/* A channel to wake when the daemon dies (on), or no more (off). */
int
da_chan_track(struct da_ctx *a, struct dv_channel *ch, int on)
{
	uint32_t i;
	int rc = 0;

	pthread_mutex_lock(&a->obj_lock);
	if (!on) {
		for (i = 0; i < a->nchans; i++)
			if (a->chans[i] == ch) {
				a->chans[i] = a->chans[--a->nchans];
				break;
			}
	} else if (a->nchans == a->chans_cap) {
		uint32_t nc = a->chans_cap ? a->chans_cap * 2 : 8;
		struct dv_channel **n = realloc(a->chans, nc * sizeof(*n));

		if (n == NULL)
			rc = ENOMEM;
		else {
			a->chans = n;
			a->chans_cap = nc;
		}
	}
	if (on && rc == 0)
		a->chans[a->nchans++] = ch;
	pthread_mutex_unlock(&a->obj_lock);
	return rc;
}

/* ---- doorbells ---- */

/*
 * Tell the daemon wq (kind, handle) has new slots: once until the daemon
 * reads it (rung), on the doorbell ring of the WQ's queue; and wake the
 * daemon's progress thread if it naps.
 */
void
da_ring(struct da_ctx *a, struct da_wq *wq, uint32_t kind, uint32_t handle)
{
	struct droce_chan_db *db;
	uint32_t q, p;

	if (__atomic_exchange_n(&wq->sh->rung, 1, __ATOMIC_ACQ_REL))
		return;
	/* an SRQ's queue changes when its first QP moves it */
	q = __atomic_load_n(&wq->sh->queue, __ATOMIC_ACQUIRE);
	if (q >= a->hello.nb_queues || q >= DROCE_CHAN_MAX_QUEUES)
		q = 0;
	db = a->db[q];
	pthread_mutex_lock(&a->db_lock[q]);
	p = db->prod;
	db->ring[p & (DROCE_CHAN_DB_SIZE - 1)] = DROCE_DB(kind, handle);
	__atomic_store_n(&db->prod, p + 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&a->db_lock[q]);
	/* the daemon sets sleeping, then reads the rings again: our store
	 * of prod must come before our load of sleeping (Dekker) */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	da_wake(a);
}

/* Wake the daemon's progress thread if it naps (after a store it must
 * see, and a full fence). */
void
da_wake(struct da_ctx *a)
{
	char one = 1;

	if (a->wake_fd >= 0 && __atomic_load_n(&a->region->sleeping,
			__ATOMIC_RELAXED) &&
			write(a->wake_fd, &one, 1) < 0)
		return;		/* full: the daemon is woken anyway */
}

/* ---- the watcher ---- */

static void
push_event(struct dv_context *c, enum ibv_event_type type, void *obj,
		enum da_kind k)
{
	struct ibv_async_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.event_type = type;
	if (obj == NULL)
		ev.element.port_num = 1;
	else if (k == DA_QP)
		ev.element.qp = &((struct dv_qp *)obj)->ex.qp_base;
	else if (k == DA_CQ)
		ev.element.cq = ibv_cq_ex_to_cq(&((struct dv_cq *)obj)->ex);
	else
		ev.element.srq = &((struct dv_srq *)obj)->srq;
	dv_async_push(c, &ev);
}

/* The region's async ring into the context's queue of events. */
static void
drain_async(struct dv_context *c)
{
	struct da_ctx *a = c->att;
	struct droce_chan_region *r = a->region;
	uint32_t cons = r->async_cons;
	uint32_t prod;
	char buf[256];

	/* the daemon's pipe: a byte an event, emptied before the ring is
	 * read (a byte after this read means a later event) */
	while (read(a->async_fd, buf, sizeof(buf)) > 0)
		;
	prod = __atomic_load_n(&r->async_prod, __ATOMIC_ACQUIRE);
	if (prod - cons > DROCE_CHAN_ASYNC_SIZE)
		cons = prod - DROCE_CHAN_ASYNC_SIZE;
	for (; cons != prod; cons++) {
		struct droce_chan_async e = r->async[cons % DROCE_CHAN_ASYNC_SIZE];
		enum da_kind k = DA_QP;
		struct da_table *t;
		void *obj = NULL;

		switch (e.kind) {
		case DROCE_KIND_NONE:
			push_event(c, (enum ibv_event_type)e.event_type, NULL, k);
			continue;
		case DROCE_KIND_CQ:
			k = DA_CQ;
			break;
		case DROCE_KIND_SRQ:
			k = DA_SRQ;
			break;
		default:
			k = DA_QP;
			break;
		}
		/* under the lock: a destroy drops the object from the table
		 * before freeing it */
		pthread_mutex_lock(&a->obj_lock);
		t = table_of(a, k);
		if (e.handle < t->cap)
			obj = t->slot[e.handle];
		if (obj != NULL)
			push_event(c, (enum ibv_event_type)e.event_type, obj, k);
		pthread_mutex_unlock(&a->obj_lock);
	}
	__atomic_store_n(&r->async_cons, cons, __ATOMIC_RELEASE);
}

/* The daemon is gone: fail from now on, tell the application, and wake
 * every thread blocked on one of the session's channels. */
static void
daemon_died(struct dv_context *c)
{
	struct da_ctx *a = c->att;
	uint32_t i;

	mark_dead(a);
	push_event(c, IBV_EVENT_DEVICE_FATAL, NULL, DA_QP);
	pthread_mutex_lock(&a->obj_lock);
	for (i = 0; i < a->nchans; i++)
		da_chan_poke(a->chans[i]);
	pthread_mutex_unlock(&a->obj_lock);
}

static void *
watcher(void *arg)
{
	struct dv_context *c = arg;
	struct da_ctx *a = c->att;
	/* events 0 on the socket: only its hang-up; the RPC path reads it */
	struct pollfd p[3] = {
		{ .fd = a->sock, .events = 0 },
		{ .fd = a->async_fd, .events = POLLIN },
		{ .fd = a->stop_fd, .events = POLLIN },
	};

	for (;;) {
		if (poll(p, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[2].revents)
			break;
		if (p[1].revents & POLLIN)
			drain_async(c);
		if (p[0].revents & (POLLHUP | POLLERR | POLLNVAL)) {
			daemon_died(c);
			break;
		}
	}
	return NULL;
}

/* ---- sessions ---- */

static void
sess_free(struct da_ctx *a)
{
	int q;

	if (a->region != NULL)
		munmap(a->region, a->region_size);
	if (a->sock >= 0)
		close(a->sock);
	if (a->async_fd >= 0)
		close(a->async_fd);
	if (a->wake_fd >= 0)
		close(a->wake_fd);
	if (a->stop_fd >= 0)
		close(a->stop_fd);
	for (q = 0; q < DROCE_CHAN_MAX_QUEUES; q++)
		pthread_mutex_destroy(&a->db_lock[q]);
	pthread_mutex_destroy(&a->rpc_lock);
	pthread_mutex_destroy(&a->obj_lock);
	pthread_mutex_destroy(&a->mr_lock);
	da_mem_sess_fini(&a->mem);
	free(a->qps.slot);
	free(a->cqs.slot);
	free(a->srqs.slot);
	free(a->chans);
	free(a);
}

/* The region from HELLO: mapped whole, its doorbell rings checked. */
static int
sess_map(struct da_ctx *a, int fd)
{
	uint32_t q;

	a->region_size = a->hello.region_size;
	if (a->hello.nb_queues == 0 || a->hello.nb_queues > DROCE_CHAN_MAX_QUEUES ||
			a->region_size < DROCE_CHAN_HEAP_OFF)
		return EPROTO;
	a->region = mmap(NULL, a->region_size, PROT_READ | PROT_WRITE,
		MAP_SHARED, fd, 0);
	if (a->region == MAP_FAILED) {
		a->region = NULL;
		return errno;
	}
	if (a->region->magic != DROCE_CHAN_MAGIC)
		return EPROTO;
	for (q = 0; q < a->hello.nb_queues; q++) {
		uint64_t off = a->region->db_off[q];

		if (off < DROCE_CHAN_HEAP_OFF ||
				off + sizeof(struct droce_chan_db) > a->region_size)
			return EPROTO;
		a->db[q] = droce_chan_at(a->region, off);
	}
	return 0;
}

static int
sess_start(struct dv_context *c, struct da_ctx *a)
{
	struct droce_chan_hello_req r;
	int fds[DROCE_CHAN_MAX_FDS], nfds = 0, rc;
	sigset_t all, old;

	a->sock = sock_connect(c->dev->att->path);
	if (a->sock < 0)
		return errno == ENOENT || errno == ECONNREFUSED ? ENODEV : errno;
	hello_req(&r, c->dev->att->port);
	rc = rpc_on(a->sock, &a->seq, DROCE_OP_HELLO, &r, &a->hello, NULL, 0,
		fds, &nfds);
	if (rc != 0)
		return rc == EIO ? ENODEV : rc;
	if (nfds < 2) {
		close_fds(fds, nfds);
		return EPROTO;
	}
	rc = sess_map(a, fds[0]);
	close(fds[0]);
	/* the read end of the daemon's async pipe and the write end of our
	 * own pipe to its progress thread: ours alone, never blocking */
	a->async_fd = fds[1];
	a->wake_fd = nfds > 2 ? fds[2] : -1;
	set_nonblock(a->async_fd);
	set_nonblock(a->wake_fd);
	close_fds(fds + 3, nfds > 3 ? nfds - 3 : 0);
	if (rc != 0)
		return rc;
	a->stop_fd = eventfd(0, EFD_CLOEXEC);
	if (a->stop_fd < 0)
		return errno;
	/* the watcher takes no signal of the application's */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&a->watcher, NULL, watcher, c);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0)
		return rc;
	a->watching = 1;
	return 0;
}

/* The context's session: 0 or an errno. */
int
da_open(struct dv_context *c)
{
	struct da_ctx *a = calloc(1, sizeof(*a));
	int q, rc;

	if (a == NULL)
		return ENOMEM;
	a->sock = a->async_fd = a->wake_fd = a->stop_fd = -1;
	pthread_mutex_init(&a->rpc_lock, NULL);
	pthread_mutex_init(&a->obj_lock, NULL);
	pthread_mutex_init(&a->mr_lock, NULL);
	for (q = 0; q < DROCE_CHAN_MAX_QUEUES; q++)
		pthread_mutex_init(&a->db_lock[q], NULL);
	c->att = a;
	rc = sess_start(c, a);
	if (rc != 0) {
		fprintf(stderr, "droce: cannot attach to droced at %s: %s\n",
			c->dev->att->path, strerror(rc));
		c->att = NULL;
		sess_free(a);
	}
	return rc;
}

/* Closing the socket ends the session: the daemon reclaims whatever the
 * application left. */
void
da_close(struct dv_context *c)
{
	struct da_ctx *a = c->att;
	uint64_t one = 1;

	if (a == NULL)
		return;
	if (a->watching) {
		if (write(a->stop_fd, &one, sizeof(one)) < 0)
			fprintf(stderr, "droce: stopping the watcher: %s\n",
				strerror(errno));
		pthread_join(a->watcher, NULL);
	}
	c->att = NULL;
	sess_free(a);
}
