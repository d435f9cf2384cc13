/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

#ifndef ATTACH_H
#define ATTACH_H

/*
 * Attached mode: the verbs of a context that droced serves
 * (doc/daemon.md). Control calls are requests on the context's session
 * (attach_ctl.c, attach_obj.c, attach_qp.c), the fast path writes and
 * reads rings in the region shared with the daemon (attach_fast.c), and
 * registered memory moves onto memfd segments the daemon maps
 * (attach_mem.c). No DPDK here: the daemon owns the port.
 */

#include <pthread.h>
#include <stdint.h>

#include "verbs_internal.h"

/* What a device attached to droced is: where, and what HELLO said. */
struct da_dev {
	char path[108];
	uint32_t port;		/* the daemon's port this device is */
	struct droce_chan_hello_rep hello;
};

/* Objects by the daemon's handle (async events name them so). */
struct da_table {
	void **slot;
	uint32_t cap;
};

/* A session's view of the memory segments (attach_mem.c): the MRs of
 * this session that use each segment; 0: the daemon does not have it. */
struct da_memsess {
	uint32_t *refs;
	uint32_t cap;
};

/* The pieces of one registration, and the new segments' descriptors
 * (the registry's own: borrowed, not to be closed). */
struct da_mem_plan {
	uint32_t npieces;
	struct droce_chan_piece pieces[DROCE_CHAN_MR_PIECES];
	int nfds;
	int fds[DROCE_CHAN_MR_PIECES];
};

/* One session (one ibv_open_device). */
struct da_ctx {
	int sock;
	pthread_mutex_t rpc_lock;	/* one request at a time */
	uint32_t seq;
	struct droce_chan_hello_rep hello;
	struct droce_chan_region *region;
	uint64_t region_size;
	int async_fd, wake_fd, stop_fd;
	int dead;			/* the daemon is gone (atomic) */
	pthread_t watcher;
	int watching;
	/* each queue's doorbell ring: its prod is ours, one poster at a time */
	pthread_mutex_t db_lock[DROCE_CHAN_MAX_QUEUES];
	struct droce_chan_db *db[DROCE_CHAN_MAX_QUEUES];
	/* objects for async events, channels for the wake-up at death */
	pthread_mutex_t obj_lock;
	struct da_table qps, cqs, srqs;
	struct dv_channel **chans;
	uint32_t nchans, chans_cap;
	/* registrations: acquiring segments and telling the daemon go
	 * together (a segment is NEW to the daemon exactly once) */
	pthread_mutex_t mr_lock;
	struct da_memsess mem;
};

/* Attached MR and AH: the verbs struct first (the in-process ones are
 * the transport's objects; the context's mode tells them apart). */
struct da_mr {
	struct ibv_mr mr;
	unsigned int access;
	uint32_t nsegs;
	uint32_t segs[DROCE_CHAN_MR_PIECES];
};

struct da_ah {
	struct ibv_ah ah;
	uint32_t handle;
};

enum da_kind { DA_QP, DA_CQ, DA_SRQ };

static inline int
da_dead(const struct da_ctx *a)
{
	return __atomic_load_n(&a->dead, __ATOMIC_ACQUIRE);
}

static inline int
da_attached(struct ibv_context *c)
{
	return dv_ctx(c)->att != NULL;
}

/* attach_ctl.c: devices, sessions, requests, the watcher */
const char *da_daemon_path(char *buf, size_t len);
int da_dev_probe(struct dv_device *d, const char *path, uint32_t port);
int da_open(struct dv_context *c);
void da_close(struct dv_context *c);
int da_rpc(struct da_ctx *a, uint32_t op, const void *req, void *rep,
		const int *fds, int nfds, int *rfds, int *nrfds);
int da_obj_set(struct da_ctx *a, enum da_kind k, uint32_t handle, void *obj);
void da_obj_del(struct da_ctx *a, enum da_kind k, uint32_t handle);
int da_chan_track(struct da_ctx *a, struct dv_channel *ch, int on);
int da_qp_cq_pos(struct da_ctx *a, uint32_t qpn, struct droce_cq_pos *pos);
void da_ring(struct da_ctx *a, struct da_wq *wq, uint32_t kind,
		uint32_t handle);
/* wake the daemon's progress thread if it naps */
void da_wake(struct da_ctx *a);

/* attach_mem.c: moving pages onto shared segments */
int da_mem_acquire(struct da_memsess *s, void *addr, size_t len,
		int writable, struct da_mem_plan *plan, uint32_t *segs, uint32_t *nsegs);
void da_mem_peek(struct da_memsess *s, const uint32_t *segs, uint32_t nsegs,
		uint32_t *release, uint32_t *nrelease);
void da_mem_release(struct da_memsess *s, const uint32_t *segs,
		uint32_t nsegs, uint32_t *release, uint32_t *nrelease);
void da_mem_sess_fini(struct da_memsess *s);

/* attach_obj.c: PD, MR, channels, CQs, AHs, multicast, queries */
int da_query_device(struct ibv_context *c, struct ibv_device_attr *a);
int da_query_port(struct ibv_context *c, struct ibv_port_attr *a, size_t len);
struct ibv_pd *da_alloc_pd(struct ibv_context *c);
int da_dealloc_pd(struct dv_pd *pd);
struct ibv_mr *da_reg_mr(struct ibv_pd *pd, void *addr, size_t len,
		uint64_t iova, unsigned int access);
int da_dereg_mr(struct ibv_mr *mr);
int da_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr,
		size_t len, unsigned int access);
struct ibv_comp_channel *da_create_channel(struct ibv_context *c);
int da_destroy_channel(struct dv_channel *ch);
int da_get_cq_event(struct dv_channel *ch, struct ibv_cq **cq, void **cq_ctx);
/* the channel's fd readable again (wakes a thread blocked on it) */
void da_chan_poke(struct dv_channel *ch);
struct dv_cq *da_cq_create(struct ibv_context *c, int cqe, void *cq_context,
		struct ibv_comp_channel *channel, int comp_vector);
int da_destroy_cq(struct dv_cq *cq);
int da_resize_cq(struct dv_cq *cq, int cqe);
struct ibv_ah *da_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr);
int da_destroy_ah(struct ibv_ah *ah);
int da_mcast(struct dv_qp *qp, const union ibv_gid *gid, int attach);
int da_resolve_gid(struct dv_context *c, const uint8_t gid[16],
		uint32_t timeout_ms);
int da_cm_listen(struct dv_context *c, uint64_t service_id, int on);

/* attach_qp.c: SRQs and QPs */
struct ibv_srq *da_create_srq(struct ibv_context *c,
		struct ibv_srq_init_attr_ex *attr);
int da_modify_srq(struct dv_srq *srq, struct ibv_srq_attr *attr, int mask);
int da_query_srq(struct dv_srq *srq, struct ibv_srq_attr *attr);
int da_destroy_srq(struct dv_srq *srq);
/* XRC domains in droced (verbs_xrc.c shares them by inode) */
int da_open_xrcd(struct dv_context *ctx, uint32_t *handle);
int da_close_xrcd(struct dv_context *ctx, uint32_t handle);
struct ibv_qp *da_create_qp(struct ibv_context *c,
		struct ibv_qp_init_attr_ex *attr, int gsi);
int da_modify_qp(struct dv_qp *qp, struct ibv_qp_attr *attr, int mask);
int da_set_sr(struct dv_qp *qp, int on);
int da_query_qp(struct dv_qp *qp, struct ibv_qp_attr *attr, int mask,
		struct ibv_qp_init_attr *init);
int da_destroy_qp(struct dv_qp *qp);

/* attach_fast.c: ibv_context_ops when attached */
int da_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		struct ibv_send_wr **bad_wr);
int da_post_send_all(struct dv_qp *qp, struct ibv_send_wr *wr,
		struct ibv_send_wr **bad_wr);
int da_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		struct ibv_recv_wr **bad_wr);
int da_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
		struct ibv_recv_wr **bad_wr);
int da_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
int da_cq_take(struct dv_cq *cq, struct ibv_wc *wc, int n);
void da_cq_forget_qp(struct dv_cq *cq, uint32_t qpn);
int da_req_notify_cq(struct ibv_cq *cq, int solicited_only);
struct ibv_mw *da_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int da_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *bind);
int da_dealloc_mw(struct ibv_mw *mw);

#endif
