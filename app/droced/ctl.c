/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * The control requests of one application: each names its objects by
 * the handles we gave it, and each is checked (handle, kind, limits)
 * before the transport sees it. A malformed message ends the session;
 * a well-formed request we refuse is answered with its errno.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "droced.h"
#include "ctl.h"

/* What HELLO and QUERY_PORT answer: the session's port. */
static void
hello_fill(struct req_ctx *c)
{
	struct droce_chan_hello_rep *p = c->rep;
	const struct droce_dev_conf *dc = droce_dev_conf(c->a->dp->dev);
	const struct droce_dev_limits *l = droce_dev_limits(c->a->dp->dev);
	uint32_t i;

	p->version = DROCE_CHAN_VERSION;
	p->nb_queues = c->a->dp->nb_queues;
	p->region_size = c->a->region_size;
	p->app_id = c->a->id;
	p->ipv4 = c->a->dp->conf.ipv4;
	p->mtu = c->a->dp->conf.mtu;
	memcpy(p->mac, c->a->dp->conf.mac, 6);
	p->cm_prefix = c->a->cm_prefix;
	p->nb_ports = (uint8_t)dd.nb_ports;
	p->sr_mode = dc->selective_repeat;
	snprintf(p->name, sizeof(p->name), "%s", c->a->dp->conf.name);
	for (i = 0; i < 16 && i < DROCE_MAX_GIDS; i++) {
		memcpy(p->gids[i].gid, dc->gids[i].gid, 16);
		p->gids[i].valid = dc->gids[i].valid;
	}
	/* what one application may have: the device's limits and ours */
	p->dev_attr.max_qp = (int)RTE_MIN(l->max_qp, dd.lim.max_qp);
	p->dev_attr.max_qp_wr = (int)l->max_qp_wr;
	p->dev_attr.max_sge = (int)l->max_sge;
	p->dev_attr.max_sge_rd = (int)l->max_sge;
	p->dev_attr.max_cq = (int)RTE_MIN(l->max_cq, dd.lim.max_cq);
	p->dev_attr.max_cqe = (int)l->max_cqe;
	p->dev_attr.max_mr = (int)RTE_MIN(l->max_mr, dd.lim.max_mr);
	p->dev_attr.max_mr_size = RTE_MIN(l->max_mr_size, dd.lim.max_mr_bytes);
	p->dev_attr.max_pd = (int)RTE_MIN(l->max_pd, dd.lim.max_pd);
	p->dev_attr.max_srq = (int)RTE_MIN(l->max_srq, dd.lim.max_srq);
	p->dev_attr.max_srq_wr = (int)l->max_srq_wr;
	p->dev_attr.max_srq_sge = (int)l->max_srq_sge;
	p->dev_attr.max_ah = (int)RTE_MIN(l->max_ah, dd.lim.max_ah);
	p->dev_attr.max_qp_rd_atom = (int)l->max_qp_rd_atom;
	p->dev_attr.max_qp_init_rd_atom = (int)l->max_qp_rd_atom;
	p->dev_attr.max_res_rd_atom = (int)(l->max_qp_rd_atom * l->max_qp);
	p->dev_attr.max_mcast_grp = (int)l->max_mcast_grp;
	p->dev_attr.max_mcast_qp_attach = (int)l->max_mcast_qp_attach;
	p->dev_attr.max_total_mcast_qp_attach = (int)l->max_total_mcast_qp_attach;
	p->dev_attr.atomic_cap = IBV_ATOMIC_HCA;
	p->dev_attr.page_size_cap = DD_PAGE;
	p->dev_attr.max_pkeys = 1;
	p->dev_attr.phys_port_cnt = 1;
	p->dev_attr.device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN |
		IBV_DEVICE_SHUTDOWN_PORT | IBV_DEVICE_PORT_ACTIVE_EVENT |
		IBV_DEVICE_SYS_IMAGE_GUID | IBV_DEVICE_SRQ_RESIZE |
		IBV_DEVICE_N_NOTIFY_CQ | IBV_DEVICE_XRC;
	memcpy(&p->dev_attr.node_guid, dc->gids[0].gid + 8, 8);
	p->dev_attr.sys_image_guid = p->dev_attr.node_guid;
	p->port_attr.state = IBV_PORT_ACTIVE;
	p->port_attr.max_mtu = IBV_MTU_4096;
	p->port_attr.active_mtu = (enum ibv_mtu)droce_eth_mtu_to_path_mtu(c->a->dp->conf.mtu);
	p->port_attr.gid_tbl_len = DROCE_MAX_GIDS;
	p->port_attr.port_cap_flags = IBV_PORT_CM_SUP;
	p->port_attr.max_msg_sz = l->max_msg_sz;
	p->port_attr.pkey_tbl_len = 1;
	p->port_attr.max_vl_num = 1;
	p->port_attr.active_width = 1;
	p->port_attr.active_speed = 32;
	p->port_attr.phys_state = 5;
	p->port_attr.link_layer = IBV_LINK_LAYER_ETHERNET;
}

static int
op_hello(struct req_ctx *c)
{
	const struct droce_chan_hello_req *r = c->req;
	int rc;

	/* one HELLO a session: it binds the session to its port (one that
	 * could not take its resources stays without) */
	if (r->version != DROCE_CHAN_VERSION || c->a->dp != NULL ||
			c->a->hello_tried)
		return -EPROTO;
	if (r->port >= dd.nb_ports)
		return -ENODEV;
	c->a->hello_tried = true;
	rc = dd_app_bind(c->a, &dd.ports[r->port]);
	if (rc != 0)
		return rc;
	memcpy(c->a->comm, r->comm, sizeof(c->a->comm));
	c->a->comm[sizeof(c->a->comm) - 1] = '\0';
	hello_fill(c);
	c->out[c->nout++] = c->a->region_fd;
	/* the other ends of its pipes: the application's alone */
	c->out[c->nout++] = c->a->hello_fds[0];
	if (c->a->hello_fds[1] >= 0)
		c->out[c->nout++] = c->a->hello_fds[1];
	c->out_close = 0x6;
	c->a->hello_fds[0] = c->a->hello_fds[1] = -1;
	return 0;
}

static int
op_query_port(struct req_ctx *c)
{
	struct droce_chan_hello_rep h;
	struct req_ctx t = *c;

	t.rep = &h;
	hello_fill(&t);
	memcpy(c->rep, &h.port_attr, sizeof(h.port_attr));
	return 0;
}

static int
op_cm_listen(struct req_ctx *c)
{
	const struct droce_chan_cm_listen_req *r = c->req;
	uint32_t q;
	int rc;

	if (c->a->dp->gsi == NULL)
		return -EOPNOTSUPP;
	q = droce_qpn_queue(c->a->dp->dev, 1);
	droce_port_lock(c->a->dp->port, q);
	rc = dd_gsi_listen(c->a, r->service_id, r->on != 0);
	droce_port_unlock(c->a->dp->port, q);
	return rc;
}

static int
op_resolve(struct req_ctx *c)
{
	const struct droce_chan_resolve_req *r = c->req;
	uint8_t mac[6];
	int rc;

	rc = droce_port_resolve(c->a->dp->port, r->gid, mac,
		r->timeout_ms < c->neigh_ms ? r->timeout_ms : c->neigh_ms);
	return rc == 0 ? 0 : rc == -ETIMEDOUT ? -ETIMEDOUT : -EHOSTUNREACH;
}

static int
op_alloc_pd(struct req_ctx *c)
{
	struct droce_chan_handle *p = c->rep;
	struct dd_pd *pd = calloc(1, sizeof(*pd));

	if (pd == NULL)
		return -ENOMEM;
	pd->tpd = droce_pd_alloc(c->a->dp->dev);
	if (pd->tpd == NULL || dd_table_add(&c->a->pds, pd, &p->handle) != 0) {
		if (pd->tpd)
			droce_pd_dealloc(pd->tpd);
		free(pd);
		return -ENOMEM;
	}
	return 0;
}

static int
op_dealloc_pd(struct req_ctx *c)
{
	const struct droce_chan_handle *r = c->req;
	struct dd_pd *pd = dd_table_get(&c->a->pds, r->handle);
	int rc;

	if (pd == NULL)
		return -EINVAL;
	rc = droce_pd_dealloc(pd->tpd);
	if (rc != 0)
		return rc;
	dd_table_del(&c->a->pds, r->handle);
	free(pd);
	return 0;
}

static int
op_reg_mr(struct req_ctx *c)
{
	return dd_reg_mr(c->a, c->req, c->fds, c->nfds, c->rep);
}

static int
op_dereg_mr(struct req_ctx *c)
{
	return dd_dereg_mr(c->a, c->req);
}

/* A pipe whose write end we keep, never blocking, and whose read end
 * the application gets with a write end of its own: that open file is
 * another than ours, so that no flag it sets (O_NONBLOCK cleared) and
 * nothing it writes can make our write wait. */
static int
chan_pipe(int *wfd, int out[2])
{
	char path[64];
	int p[2];

	if (pipe2(p, O_CLOEXEC) != 0)
		return -errno;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", p[1]);
	out[0] = p[0];
	out[1] = open(path, O_WRONLY | O_CLOEXEC);
	if (out[1] < 0 || fcntl(p[1], F_SETFL, O_NONBLOCK) != 0) {
		if (out[1] >= 0)
			close(out[1]);
		close(p[0]);
		close(p[1]);
		return -EMFILE;
	}
	*wfd = p[1];
	return 0;
}

static int
op_create_channel(struct req_ctx *c)
{
	struct droce_chan_handle *p = c->rep;
	struct dd_chan *ch = calloc(1, sizeof(*ch));
	int ends[2] = { -1, -1 };

	if (ch == NULL)
		return -ENOMEM;
	if (chan_pipe(&ch->wfd, ends) != 0) {
		free(ch);
		return -ENOMEM;
	}
	if (dd_table_add(&c->a->chans, ch, &p->handle) != 0) {
		close(ch->wfd);
		close(ends[0]);
		close(ends[1]);
		free(ch);
		return -ENOMEM;
	}
	c->out[c->nout++] = ends[0];
	c->out[c->nout++] = ends[1];
	c->out_close = 0x3;	/* they are the application's */
	return 0;
}

static int
op_destroy_channel(struct req_ctx *c)
{
	const struct droce_chan_handle *r = c->req;
	struct dd_chan *ch = dd_table_get(&c->a->chans, r->handle);

	if (ch == NULL)
		return -EINVAL;
	if (ch->refs)
		return -EBUSY;
	dd_table_del(&c->a->chans, r->handle);
	close(ch->wfd);
	free(ch);
	return 0;
}

static int
op_create_cq(struct req_ctx *c)
{
	const struct droce_chan_create_cq_req *r = c->req;
	struct droce_chan_create_cq_rep *p = c->rep;
	struct dd_chan *ch = NULL;
	struct dd_cq *cq;
	uint32_t q = c->a->dp->next_cq_queue++ % c->a->dp->nb_queues;

	if (r->channel != DROCE_CHAN_NONE &&
			(ch = dd_table_get(&c->a->chans, r->channel)) == NULL)
		return -EINVAL;
	if (r->cqe == 0 || r->cqe > droce_dev_limits(c->a->dp->dev)->max_cqe)
		return -EINVAL;
	cq = calloc(1, sizeof(*cq));
	if (cq == NULL)
		return -ENOMEM;
	cq->app = c->a;
	cq->q = q;
	cq->tcq = droce_cq_create(c->a->dp->dev, q, r->cqe);
	if (cq->tcq == NULL)
		goto nomem;
	cq->size = dd_pow2(droce_cq_size(cq->tcq) + 1);
	if (dd_heap_alloc(c->a, droce_chan_cq_bytes(cq->size), &cq->off) != 0)
		goto nomem;
	cq->sh = droce_chan_at(c->a->region, cq->off);
	cq->wc = droce_chan_at(c->a->region, cq->off + DROCE_CHAN_CQ_WC);
	cq->chan = ch;
	droce_cq_set_user(cq->tcq, cq);
	droce_cq_set_notify(cq->tcq, dd_cq_notify, cq);
	droce_port_lock(c->a->dp->port, q);
	droce_cq_arm(cq->tcq, 0);
	if (dd_table_add(&c->a->cqs, cq, &cq->handle) != 0) {
		droce_port_unlock(c->a->dp->port, q);
		goto nomem;
	}
	droce_port_unlock(c->a->dp->port, q);
	if (ch)
		ch->refs++;
	p->handle = cq->handle;
	p->cqe = droce_cq_size(cq->tcq);
	p->size = cq->size;
	p->queue = q;
	p->off = cq->off;
	return 0;
nomem:
	if (cq->off)
		dd_heap_free(c->a, cq->off, droce_chan_cq_bytes(cq->size));
	if (cq->tcq)
		droce_cq_destroy(cq->tcq);
	free(cq);
	return -ENOMEM;
}

/*
 * ibv_resize_cq: the transport's CQ resized and a new shared ring with
 * the unread completions moved into it, in order. The application waits
 * for this reply holding its CQ, so nothing reads the old ring
 * meanwhile; the data path is kept out by the queue's lock.
 */
static int
op_resize_cq(struct req_ctx *c)
{
	const struct droce_chan_resize_cq_req *r = c->req;
	struct droce_chan_create_cq_rep *p = c->rep;
	struct dd_cq *cq = dd_table_get(&c->a->cqs, r->handle);
	struct droce_chan_cq *sh;
	struct ibv_wc *wc;
	uint32_t cons, n, size, i;
	uint64_t off;
	int rc;

	if (cq == NULL || r->cqe == 0 ||
			r->cqe > droce_dev_limits(c->a->dp->dev)->max_cqe)
		return -EINVAL;
	droce_port_lock(c->a->dp->port, cq->q);
	cons = __atomic_load_n(&cq->sh->cons, __ATOMIC_ACQUIRE);
	n = cq->prod - cons;
	rc = n > cq->size || r->cqe < n ? -EINVAL :
		droce_cq_resize(cq->tcq, r->cqe);
	size = dd_pow2(droce_cq_size(cq->tcq) + 1);
	if (rc == 0 && size != cq->size &&
			dd_heap_alloc(c->a, droce_chan_cq_bytes(size), &off) != 0)
		rc = -ENOMEM;	/* the transport's CQ is larger: harmless */
	if (rc == 0 && size != cq->size) {
		sh = droce_chan_at(c->a->region, off);
		wc = droce_chan_at(c->a->region, off + DROCE_CHAN_CQ_WC);
		memset(sh, 0, sizeof(*sh));
		for (i = 0; i < n; i++)
			wc[i] = cq->wc[(cons + i) & (cq->size - 1)];
		sh->overflow = cq->sh->overflow;
		sh->events = cq->sh->events;
		sh->arm = cq->sh->arm;
		sh->prod = n;
		dd_heap_free(c->a, cq->off, droce_chan_cq_bytes(cq->size));
		cq->sh = sh;
		cq->wc = wc;
		cq->off = off;
		cq->size = size;
		cq->prod = n;
	}
	droce_port_unlock(c->a->dp->port, cq->q);
	if (rc != 0)
		return rc;
	p->handle = cq->handle;
	p->cqe = droce_cq_size(cq->tcq);
	p->size = cq->size;
	p->queue = cq->q;
	p->off = cq->off;
	return 0;
}

int
dd_cq_move(struct dd_cq *cq, uint32_t q)
{
	if (cq->q == q)
		return 0;
	/* a proxy's completions come from QP1's queue alone */
	if (cq->refs)
		return -EBUSY;
	if (droce_cq_move(cq->tcq, q) != 0)
		return -EINVAL;
	dd_queue_forget_cq(cq);
	cq->q = q;
	return 0;
}

static int
op_destroy_cq(struct req_ctx *c)
{
	const struct droce_chan_handle *r = c->req;
	struct dd_cq *cq = dd_table_get(&c->a->cqs, r->handle);
	int rc;

	if (cq == NULL)
		return -EINVAL;
	if (cq->refs)
		return -EBUSY;	/* a GSI proxy completes into it */
	droce_port_lock(c->a->dp->port, cq->q);
	rc = droce_cq_destroy(cq->tcq);
	if (rc == 0) {
		dd_queue_forget_cq(cq);
		dd_table_del(&c->a->cqs, r->handle);
	}
	droce_port_unlock(c->a->dp->port, cq->q);
	if (rc != 0)
		return rc;
	if (cq->chan)
		cq->chan->refs--;
	dd_heap_free(c->a, cq->off, droce_chan_cq_bytes(cq->size));
	free(cq);
	return 0;
}

/* A WQ's ring in the region. */
int
dd_wq_alloc(struct dd_app *a, struct dd_wq *wq, uint32_t entries, uint32_t slot,
		uint32_t queue, struct droce_chan_wq_rep *rep)
{
	wq->size = dd_pow2(entries ? entries : 1);
	wq->slot = slot;
	if (slot > DROCE_CHAN_SLOT_MAX ||
			dd_heap_alloc(a, droce_chan_wq_bytes(wq->size, slot),
			&wq->off) != 0)
		return -ENOMEM;
	wq->sh = droce_chan_at(a->region, wq->off);
	wq->slots = droce_chan_at(a->region, wq->off + DROCE_CHAN_WQ_SLOTS);
	wq->sh->queue = queue;
	rep->off = wq->off;
	rep->size = wq->size;
	rep->slot = slot;
	return 0;
}

void
dd_wq_free(struct dd_app *a, struct dd_wq *wq)
{
	if (wq->off)
		dd_heap_free(a, wq->off, droce_chan_wq_bytes(wq->size, wq->slot));
	wq->off = 0;
}

static int
op_alloc_mw(struct req_ctx *c)
{
	const struct droce_chan_alloc_mw_req *r = c->req;
	struct droce_chan_alloc_mw_rep *p = c->rep;
	struct dd_pd *pd = dd_table_get(&c->a->pds, r->pd);
	struct dd_mw *mw;

	if (pd == NULL || (r->type != IBV_MW_TYPE_1 && r->type != IBV_MW_TYPE_2))
		return -EINVAL;
	mw = calloc(1, sizeof(*mw));
	if (mw == NULL)
		return -ENOMEM;
	mw->tmw = droce_mw_alloc(pd->tpd, (enum ibv_mw_type)r->type);
	if (mw->tmw == NULL || dd_table_add(&c->a->mws, mw, &p->handle) != 0) {
		if (mw->tmw != NULL)
			droce_mw_dealloc(mw->tmw);
		free(mw);
		return -ENOMEM;
	}
	p->rkey = droce_mw_rkey(mw->tmw);
	return 0;
}

static int
op_dealloc_mw(struct req_ctx *c)
{
	const struct droce_chan_handle *r = c->req;
	struct dd_mw *mw = dd_table_get(&c->a->mws, r->handle);
	int rc;

	if (mw == NULL)
		return -EINVAL;
	/* a BIND_MW WQE names it by handle: no queue may be looking it up */
	dd_lock_all();
	rc = droce_mw_dealloc(mw->tmw);
	if (rc == 0)
		dd_table_del(&c->a->mws, r->handle);
	dd_unlock_all();
	if (rc != 0)
		return rc;
	free(mw);
	return 0;
}

typedef int (*op_fn)(struct req_ctx *c);

static const op_fn handlers[DROCE_OP_COUNT] = {
	[DROCE_OP_HELLO] = op_hello,
	[DROCE_OP_ALLOC_PD] = op_alloc_pd,
	[DROCE_OP_DEALLOC_PD] = op_dealloc_pd,
	[DROCE_OP_REG_MR] = op_reg_mr,
	[DROCE_OP_DEREG_MR] = op_dereg_mr,
	[DROCE_OP_CREATE_CHANNEL] = op_create_channel,
	[DROCE_OP_DESTROY_CHANNEL] = op_destroy_channel,
	[DROCE_OP_CREATE_CQ] = op_create_cq,
	[DROCE_OP_RESIZE_CQ] = op_resize_cq,
	[DROCE_OP_OPEN_XRCD] = op_open_xrcd,
	[DROCE_OP_CLOSE_XRCD] = op_close_xrcd,
	[DROCE_OP_DESTROY_CQ] = op_destroy_cq,
	[DROCE_OP_CREATE_SRQ] = op_create_srq,
	[DROCE_OP_MODIFY_SRQ] = op_modify_srq,
	[DROCE_OP_QUERY_SRQ] = op_query_srq,
	[DROCE_OP_DESTROY_SRQ] = op_destroy_srq,
	[DROCE_OP_CREATE_QP] = op_create_qp,
	[DROCE_OP_MODIFY_QP] = op_modify_qp,
	[DROCE_OP_SET_SR] = op_set_sr,
	[DROCE_OP_QUERY_QP] = op_query_qp,
	[DROCE_OP_DESTROY_QP] = op_destroy_qp,
	[DROCE_OP_CREATE_AH] = op_create_ah,
	[DROCE_OP_DESTROY_AH] = op_destroy_ah,
	[DROCE_OP_ATTACH_MCAST] = op_attach_mcast,
	[DROCE_OP_DETACH_MCAST] = op_detach_mcast,
	[DROCE_OP_QUERY_PORT] = op_query_port,
	[DROCE_OP_CM_LISTEN] = op_cm_listen,
	[DROCE_OP_RESOLVE] = op_resolve,
	[DROCE_OP_ALLOC_MW] = op_alloc_mw,
	[DROCE_OP_DEALLOC_MW] = op_dealloc_mw,
};

int
dd_ctl_check(void)
{
	uint32_t op;

	/* every op the channel defines has its bodies and a handler */
	for (op = 1; op < DROCE_OP_COUNT; op++)
		if (handlers[op] == NULL || droce_chan_op_name(op) == NULL ||
				droce_chan_body_len(op, 0) < 0 ||
				droce_chan_body_len(op, 1) < 0) {
			DD_LOG(ERR, "channel op %u (%s) has no handler or no "
				"bodies", op, droce_chan_op_name(op) ?
				droce_chan_op_name(op) : "unnamed");
			return -1;
		}
	return 0;
}

int
dd_serve_msg(struct dd_app *a, const uint8_t *msg, int *fds, int nfds,
		uint32_t neigh_ms)
{
	union {
		uint8_t buf[DROCE_CHAN_MSG_MAX];
		struct droce_chan_hdr hdr;
	} out;
	const struct droce_chan_hdr *h = (const void *)msg;
	struct req_ctx c = { .a = a, .fds = fds, .nfds = nfds,
		.neigh_ms = neigh_ms };
	int rc, i;

	a->st.requests++;
	memset(&out, 0, sizeof(out));
	c.req = msg + sizeof(*h);
	c.rep = out.buf + sizeof(out.hdr);
	if (h->op == 0 || h->op >= DROCE_OP_COUNT || handlers[h->op] == NULL) {
		rc = -EOPNOTSUPP;	/* droce_chan_recv refused it already */
	} else if (h->op != DROCE_OP_HELLO && a->dp == NULL) {
		rc = -EPROTO;	/* HELLO first */
	} else {
		rc = handlers[h->op](&c);
		if (h->op != DROCE_OP_HELLO && !a->announced) {
			a->announced = true;
			DD_LOG(INFO, "app %u attached: pid %d uid %u gid %u (%s) to %s",
				a->id, (int)a->pid, a->uid, a->gid, a->comm,
				a->dp->conf.name);
		}
	}
	for (i = 0; i < nfds; i++)
		if (fds[i] >= 0) {
			close(fds[i]);
			fds[i] = -1;
		}
	out.hdr.op = h->op;
	out.hdr.seq = h->seq;
	out.hdr.status = rc < 0 ? -rc : 0;
	if (rc < 0) {
		a->st.refused_requests++;
		for (i = 0; i < c.nout; i++)
			if (c.out_close & (1u << i))
				close(c.out[i]);
		c.nout = 0;
		c.out_close = 0;
	}
	return dd_reply(a, &out.hdr, c.rep,
		rc < 0 ? 0 : (uint32_t)droce_chan_body_len(h->op, 1), c.out,
		(uint32_t)c.nout, c.out_close);
}

/*
 * One request of application a: served now, or parked while its
 * neighbour is resolved (neigh.c). @return 0, -1 when the session must
 * end (gone, or a malformed message).
 */
int
dd_serve(struct dd_app *a)
{
	union {
		uint8_t buf[DROCE_CHAN_MSG_MAX];
		struct droce_chan_hdr hdr;
	} in;
	int fds[DROCE_CHAN_MAX_FDS], nfds = 0, rc;

	rc = droce_chan_recv(a->sock, in.buf, sizeof(in.buf), 0, fds, &nfds);
	if (rc == -EAGAIN)
		return 0;
	if (rc < 0) {
		if (rc == -EBADMSG) {
			a->st.refused_requests++;
			DD_LOG(WARNING, "app %u (pid %d): malformed message: "
				"disconnected", a->id, (int)a->pid);
		}
		return -1;
	}
	if (a->dp != NULL && dd_neigh_park(a, in.buf,
			(uint32_t)(sizeof(in.hdr) + (uint32_t)rc), fds, nfds))
		return 0;
	/* served here: a neighbour not known yet is not waited for (the
	 * main thread serves every session); one that needs asking was
	 * parked, unless there was no room to */
	return dd_serve_msg(a, in.buf, fds, nfds, 0);
}
