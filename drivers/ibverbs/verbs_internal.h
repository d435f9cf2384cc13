/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

#ifndef VERBS_INTERNAL_H
#define VERBS_INTERNAL_H

/*
 * droce's libibverbs.so.1: the objects behind the verbs handles.
 *
 * Every handle the application gets is the verbs struct placed first in
 * a driver struct (or, for MR, MW and AH, in the transport's own object),
 * so a handle converts back with a cast. Fast-path calls take the owner
 * lock of the object's queue (droce_port_lock) around the transport call
 * and make progress inline; a background thread makes progress while the
 * application does not call in (sleeps on a channel, spins on memory).
 */

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "droce.h"
#include "droce_chan.h"
#include "droce_conf.h"
#include "droce_transport.h"

#define DV_ASYNC_RING 64
#define DV_CQ_BATCH 32

struct da_dev;
struct da_ctx;
struct dv_xrcd_sh;
struct dv_xrc_tgt;

struct dv_device {
	struct ibv_device ibdev;
	/* its keys (droce_conf.h): name, addresses, the DPDK device */
	struct droce_conf conf;
	struct droce_gid_entry gids[DROCE_MAX_GIDS];
	uint64_t guid;		/* network order, as ibv_get_device_guid */
	/* the data path, started at the first object that needs it */
	pthread_mutex_t lock;
	struct droce_port *port;
	struct droce_dev *tdev;
	uint32_t nb_queues;
	uint32_t next_queue;
	int users;		/* contexts using the port */
	/* XRC (verbs_xrc.c): the domains opened, by inode, and the XRC_RECV
	 * QPs, for ibv_open_qp; under lock */
	struct dv_xrcd_sh *xrcds;
	struct dv_xrc_tgt *xrc_tgts;
	/* attached to droced (attach_ctl.c): its socket and what HELLO
	 * said; NULL in process */
	struct da_dev *att;
	/* droce_conf_check refused the configuration: opens fail (EINVAL) */
	int conf_bad;
};

struct dv_context {
	struct verbs_context vctx;	/* ends with struct ibv_context */
	struct dv_device *dev;
	struct da_ctx *att;		/* attached: the session; else NULL */
	int uses_port;
	/* async events: a ring behind an eventfd (context.async_fd) */
	pthread_mutex_t async_lock;
	struct ibv_async_event async[DV_ASYNC_RING];
	uint32_t async_head, async_tail;
};

struct dv_pd {
	struct ibv_pd pd;
	struct droce_pd *tpd;
	uint32_t handle;		/* attached: the daemon's */
};

/* Attached: a work queue's ring in the shared region (droce_chan.h). */
struct da_wq {
	pthread_spinlock_t lock;
	struct droce_chan_wq *sh;
	uint8_t *slots;
	uint32_t size, slot, prod;
};

/* A completion channel: an eventfd and the CQs that fired, in order. */
struct dv_channel {
	struct ibv_comp_channel ch;
	pthread_mutex_t lock;
	/* CQs fired, oldest at head; an entry tagged DV_FIRED_TOKEN has its
	 * eventfd token written (or about to be): its taker reads one */
	struct dv_cq **fired;
	uint32_t head, tail, cap;
	/* threads watching fired in ibv_get_cq_event (event_spin): what
	 * fires meanwhile needs no token */
	uint32_t spinners;
	uint64_t qmask;			/* queues of its CQs (bit q % 64) */
	/* attached: the daemon's channel (ch.fd the read end of its pipe,
	 * put_fd a write end of our own) and the CQs it serves */
	uint32_t handle;
	int put_fd;
	struct dv_cq **cqs;
	uint32_t ncqs, cqs_cap;
};

struct dv_cq {
	struct ibv_cq_ex ex;		/* begins with struct ibv_cq */
	struct droce_cq *tcq;
	struct dv_context *ctx;
	uint32_t q;
	uint32_t comp_events_reported;
	uint64_t wc_flags;		/* ibv_create_cq_ex's */
	/* ibv_cq_ex polling: completions taken from the CQ, not yet read */
	struct ibv_wc batch[DV_CQ_BATCH];
	int nbatch, cur;
	/* attached: the daemon's ring (it writes prod, we cons and arm) */
	uint32_t handle;
	pthread_spinlock_t lock;
	struct droce_chan_cq *sh;
	struct ibv_wc *wc;
	uint32_t size;
	uint32_t events_seen;		/* firings of sh->events reported */
	/* QPs destroyed with completions maybe still in the ring: those
	 * before bound are dropped (da_cq_forget_qp) */
	struct dv_cq_gone {
		uint32_t qpn, bound;
	} *gone;
	uint32_t ngone;
};

struct dv_srq {
	struct ibv_srq srq;
	struct droce_srq *tsrq;
	struct dv_context *ctx;
	uint32_t q;
	/* attached */
	uint32_t handle, max_sge;
	struct da_wq rq;
	uint32_t srqn;			/* an XRC SRQ's number (droced's) */
};

struct dv_qp {
	struct ibv_qp_ex ex;		/* begins with struct ibv_qp */
	/* rdma-core >= 45 appends wr_flush to struct ibv_qp_ex (Debian
	 * 12's 44 ends before it): where programs built against newer
	 * headers look for it */
	void (*wr_flush)(struct ibv_qp_ex *qp, uint32_t rkey,
			uint64_t remote_addr, size_t len, uint8_t type,
			uint8_t level);
	struct droce_qp *tqp;
	struct dv_context *ctx;
	uint32_t q;
	bool is_ex;			/* created with send_ops_flags */
	uint64_t send_ops;
	/* ibv_wr_*: the WRs built between wr_start and wr_complete */
	pthread_spinlock_t wr_lock;
	struct ibv_send_wr *wrs;
	struct ibv_sge *sges;		/* max_send_sge per WR */
	uint8_t *inl;			/* max_inline per WR */
	uint64_t *awr;			/* ibv_wr_atomic_write's word per WR */
	uint8_t *tso_hdr;		/* ibv_wr_send_tso's headers per WR */
	uint32_t nwr, cap, max_sge, max_inline;
	int wr_err;
	/* attached: rings, capacities and what a WQE may be */
	uint32_t handle, max_recv_sge;
	uint64_t type_ops;		/* droce_qp_type_send_ops */
	uint32_t ud_max_len;		/* UD: one packet */
	struct da_wq sq, rq;
	/* an XRC_RECV QP's handle: the QP its handles share */
	struct dv_xrc_tgt *tgt;
};

_Static_assert(offsetof(struct dv_qp, wr_flush) == sizeof(struct ibv_qp_ex),
	"wr_flush is not where rdma-core >= 45 puts it");

static inline struct dv_context *
dv_ctx(struct ibv_context *c)
{
	return (struct dv_context *)((char *)c -
		offsetof(struct dv_context, vctx.context));
}

static inline struct dv_cq *dv_cq(struct ibv_cq *c) { return (struct dv_cq *)c; }
static inline struct dv_qp *dv_qp(struct ibv_qp *q) { return (struct dv_qp *)q; }
static inline struct dv_pd *dv_pd(struct ibv_pd *p) { return (struct dv_pd *)p; }
static inline struct dv_srq *dv_srq(struct ibv_srq *s) { return (struct dv_srq *)s; }

/* verbs_device.c */
int dv_query_port(struct ibv_context *ctx, uint8_t port,
		struct ibv_port_attr *a, size_t len);

/* verbs_port.c: the data path behind a device */
int dv_port_get(struct dv_context *ctx);

/* verbs_event.c: waiting on a completion channel */
uint64_t dv_event_spin_ns(void);
int dv_fd_blocks(int fd);
uint64_t dv_now_ns(void);
void dv_port_put(struct dv_context *ctx);
int dv_resolve(struct dv_context *ctx, const struct ibv_ah_attr *ah,
		struct droce_av *av);

/* verbs_event.c */
void dv_async_push(struct dv_context *ctx, const struct ibv_async_event *ev);
void dv_async_cb(void *arg, const struct ibv_async_event *ev);
void dv_cq_notify(void *arg, struct droce_cq *cq);
int dv_context_events_init(struct dv_context *ctx);
void dv_context_events_fini(struct dv_context *ctx);

/* verbs_fast.c: ibv_context_ops */
int dv_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		struct ibv_send_wr **bad_wr);
int dv_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		struct ibv_recv_wr **bad_wr);
int dv_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
		struct ibv_recv_wr **bad_wr);
int dv_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
int dv_req_notify_cq(struct ibv_cq *cq, int solicited_only);
int dv_cq_take(struct dv_cq *cq, struct ibv_wc *wc, int n);

/* verbs_obj.c: objects behind the verbs_context entries */
struct ibv_mw *dv_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int dv_dealloc_mw(struct ibv_mw *mw);
int dv_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *bind);
struct ibv_qp *dv_create_qp_ex(struct ibv_context *c,
		struct ibv_qp_init_attr_ex *attr);
struct ibv_srq *dv_create_srq_ex(struct ibv_context *c,
		struct ibv_srq_init_attr_ex *attr);

/* verbs_xrc.c: XRC domains, SRQs and QPs (in process) */
int dv_get_srq_num(struct ibv_srq *srq, uint32_t *num);
struct ibv_xrcd *dv_open_xrcd(struct ibv_context *c,
		struct ibv_xrcd_init_attr *attr);
int dv_close_xrcd(struct ibv_xrcd *xrcd);
struct ibv_srq *dv_create_srq_xrc(struct dv_context *ctx,
		struct ibv_srq_init_attr_ex *attr);
struct ibv_qp *dv_create_qp_xrc(struct dv_context *ctx,
		struct ibv_qp_init_attr_ex *attr);
struct ibv_qp *dv_open_qp(struct ibv_context *c,
		struct ibv_qp_open_attr *attr);
int dv_destroy_qp_xrc(struct dv_qp *qp);
/* attached: droced's handle of an XRC domain */
uint32_t dv_xrcd_handle(struct ibv_xrcd *xrcd);

/* verbs_ex.c: struct ibv_qp_ex and struct ibv_cq_ex */
int dv_qp_ex_setup(struct dv_qp *qp, uint64_t send_ops);
void dv_qp_ex_fini(struct dv_qp *qp);
struct ibv_cq_ex *dv_create_cq_ex(struct ibv_context *c,
		struct ibv_cq_init_attr_ex *attr);
void dv_cq_ex_setup(struct dv_cq *cq);
int dv_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
		uint32_t flags, struct ibv_sge *sg_list, uint32_t num_sge);
int dv_query_device_ex(struct ibv_context *c,
		const struct ibv_query_device_ex_input *in,
		struct ibv_device_attr_ex *attr, size_t size);

/* verbs_flow.c: flow steering to RAW_PACKET QPs */
struct ibv_flow *dv_create_flow(struct ibv_qp *qp, struct ibv_flow_attr *attr);
int dv_destroy_flow(struct ibv_flow *flow);

/* shared by ibv_create_cq and create_cq_ex */
struct dv_cq *dv_cq_create(struct ibv_context *c, int cqe, void *cq_context,
		struct ibv_comp_channel *channel);

#endif
