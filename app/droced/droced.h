/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

#ifndef DROCED_H
#define DROCED_H

/*
 * droced: one data path shared by the applications attached to it
 * (doc/daemon.md). The main thread serves every application's control
 * socket; the data-path threads (lcores in busy mode, the port's
 * progress thread in idle mode) run the hooks of fast.c inside each pass
 * over a queue, under that queue's lock. What both touch (an
 * application's object tables, the per-queue lists) changes only with
 * the lock of every queue it concerns held (dd_lock_all for the list of
 * applications).
 */

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <rte_log.h>

#include "droce.h"
#include "droce_chan.h"
#include "droce_conf.h"
#include "droce_transport.h"

extern int dd_logtype;
#define DD_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_ ## level, dd_logtype, "droced: " fmt "\n", ##__VA_ARGS__)

/* sessions at once, at most: a CM prefix each (gsi.c), 0 is none */
#define DD_MAX_APPS 255
#define DD_NEIGH_MS 10000	/* an RTR's or an AH's neighbour */
#define DD_RESOLVE_MAX_MS 30000
#define DD_PAGE 4096u

/* Per-application limits (configurable, doc/daemon.md). */
struct dd_limits {
	uint32_t max_apps, apps_per_user, apps_per_proc;	/* sessions */
	uint32_t max_qp, max_cq, max_mr, max_srq, max_ah, max_pd, max_chan;
	uint64_t max_mr_bytes;
	uint64_t region_bytes;
};

/* A table of one kind of object: handle = index. Fixed capacity (the
 * limit), so a data-path thread may read it while the main thread
 * changes another entry. */
struct dd_table {
	void **slot;
	uint32_t cap, n, hint;
};

struct dd_app;

/* A completion channel: a pipe whose read end the application holds;
 * ours, the write end, never blocks (its open file is ours alone). */
struct dd_chan {
	int wfd;
	uint32_t refs;		/* CQs on it */
};

struct dd_cq {
	struct droce_cq *tcq;
	struct dd_app *app;
	struct dd_chan *chan;
	struct droce_chan_cq *sh;
	struct ibv_wc *wc;	/* the shared entries */
	uint32_t handle, size, q;
	uint32_t prod;		/* ours; never read back from the region */
	uint32_t events;
	uint32_t solicited_seen;	/* droce_cq_solicited_seq at the last flush */
	uint32_t refs;		/* GSI proxies on it (the transport counts
				 * its QPs): it may neither go nor move */
	bool dirty;		/* on its queue's list of CQs to drain */
	uint64_t off;		/* in the region */
};

/* A work queue the application writes: our view of it. */
struct dd_wq {
	struct droce_chan_wq *sh;
	uint8_t *slots;
	uint32_t size, slot;
	uint32_t cons;		/* ours */
	uint64_t off;
};

struct dd_srq {
	struct droce_srq *tsrq;
	struct dd_app *app;
	struct dd_wq rq;
	uint32_t handle, q, max_sge, refs;
};

struct dd_qp {
	struct droce_qp *tqp;
	struct dd_app *app;
	struct dd_cq *scq, *rcq;
	struct dd_srq *srq;
	struct dd_wq sq, rq;
	uint32_t handle, q, type;
	uint32_t max_send_sge, max_recv_sge, max_inline;
	bool retry;		/* on its queue's retry list (SQ was full) */
	bool failed;		/* a refused WQE moved it to the error state */
	/* a GSI proxy (gsi.c): no transport QP; its receives wait here */
	bool gsi;
	struct dd_gsi_rwqe *rfifo;
	uint32_t rhead, rtail;
	bool sq_sig_all;
};

#define DD_GSI_MAX_SGE 4	/* a GSI proxy's WQEs (a MAD is 256 bytes) */

struct dd_gsi_rwqe {
	uint64_t wr_id;
	uint32_t num_sge;
	struct ibv_sge sge[DD_GSI_MAX_SGE];
};

struct dd_mr {
	struct droce_mr *tmr;
	void *map;		/* our reservation, the pieces mapped in it */
	size_t map_len;
	uint64_t len;
	uint64_t va;		/* the application's address of host */
	uint8_t *host;
	uint32_t lkey, access;
	int guard[DROCE_CHAN_MR_PIECES];	/* guard.c's slots */
	uint32_t nguard;
};

struct dd_seg {
	int fd;
	uint64_t size;
	uint64_t huge;		/* hugetlbfs: its page size, else 0 */
	int guarded;		/* a SysV segment: it may shrink (guard.c) */
};

struct dd_pd {
	struct droce_pd *tpd;
};

struct dd_xrcd {
	struct droce_xrcd *tx;
};

struct dd_ah {
	struct droce_ah *tah;
};

struct dd_mw {
	struct droce_mw *tmw;
};

/* What an application did and holds (telemetry's /droced/app). */
struct dd_app_stats {
	uint64_t sq_wqes, rq_wqes, srq_wqes, cqes, doorbells, events;
	/* naps the progress thread skipped while one of its threads slept
	 * on an armed channel (idle mode) */
	uint64_t awaited_skips;
	/* and while one of its threads spun on empty CQs (region->spin_ns) */
	uint64_t spin_skips;
	uint64_t refused_wqes, refused_requests, requests;
	uint64_t replies_held;	/* it did not read them at once */
	uint64_t parked_requests;	/* waited for a neighbour aside */
	uint64_t mr_bytes;
};

struct dd_app {
	int sock;
	struct dd_port *dp;	/* from its HELLO on; NULL before */
	uint32_t id;
	pid_t pid;
	uid_t uid;
	gid_t gid;
	char comm[32];
	int region_fd;
	/* pipes, each end's open file its holder's alone: the async one
	 * (we write), the wake one (the application writes while the
	 * port's progress thread naps, we drain it) */
	int async_fd, wake_rfd, wake_ep;
	int hello_fds[2];	/* their ends, until HELLO's reply takes them */
	struct droce_chan_region *region;
	uint64_t region_size;
	uint8_t *heap_map;	/* one byte per page: in use */
	uint32_t heap_pages;
	struct droce_chan_db *db[DROCE_CHAN_MAX_QUEUES];
	uint32_t db_cons[DROCE_CHAN_MAX_QUEUES];
	uint32_t async_prod;
	struct dd_table pds, mrs, cqs, srqs, qps, ahs, chans, segs, mws;
	struct dd_table xrcds;
	struct dd_app_stats st;
	uint32_t fires;		/* channel CQs fired (region->arms' match) */
	uint8_t cm_prefix;	/* its CM IDs' top byte (gsi.c) */
	bool announced;		/* logged: it did more than HELLO */
	bool hello_tried;	/* its resources were asked for (once) */
	bool cm_warned;		/* logged: a MAD of its refused (gsi.c) */
	struct dd_qp *gsi_qp;	/* its GSI proxy, if any */
	/* a request waiting for its neighbour (neigh.c), or NULL */
	uint8_t *parked;
	int parked_fds[DROCE_CHAN_MAX_FDS], parked_nfds;
	uint64_t since_ms;	/* connected (session.c: HELLO's deadline) */
	/* a reply its socket had no room for (session.c), or NULL */
	uint8_t *pend;
	uint32_t pend_len, pend_nfds, pend_close;
	int pend_fds[DROCE_CHAN_MAX_FDS];
};

struct dd_queue {
	/* CQs with completions to take to their rings */
	struct dd_cq **dirty;
	uint32_t ndirty, cap_dirty;
	/* QPs whose SQ was full in the transport: try again each pass */
	struct dd_qp **retry;
	uint32_t nretry, cap_retry;
};

/* One of the daemon's ports: its device, queues and QP1. An
 * application's session is bound to one (HELLO names it), as a context
 * is to one device: droced's ports are the drop-in's devices. */
struct dd_port {
	uint32_t idx;
	struct droce_conf conf;
	struct droce_port *port;
	struct droce_dev *dev;
	uint32_t nb_queues;
	int wake_ep;		/* idle mode: the sessions' wake pipes */
	struct dd_queue q[DROCE_CHAN_MAX_QUEUES];
	uint32_t next_cq_queue;
	struct dd_gsi *gsi;
};

#define DD_MAX_PORTS DROCE_CONF_MAX_PORTS

struct droced {
	struct droce_conf conf;	/* port 0's, and the EAL's */
	struct dd_limits lim;
	struct dd_port ports[DD_MAX_PORTS];
	uint32_t nb_ports;
	int busy;		/* lcores busy-poll (else the progress thread) */
	volatile int lcores_stop;
	int ep;			/* the main thread's epoll set */
	int neigh_fd;		/* eventfd: a neighbour's resolution ended */
	const char *sock_path;
	int listen_fd;
	volatile int stop;
	/* the attached applications; apps[] changes with every queue locked */
	struct dd_app *apps[DD_MAX_APPS];
	uint32_t nb_apps, next_id;
	pthread_mutex_t apps_lock;	/* telemetry's view */
	struct dd_app *by_prefix[256];
	/* totals since start (telemetry) */
	uint64_t attached, detached, reclaimed_qps, reclaimed_mrs;
	uint64_t refused_peers;
	uint64_t refused_sessions;	/* past a limit of sessions */
	uint64_t unbound_closed;	/* no HELLO in time, or made room */
};

extern struct droced dd;

/* table.c: handle tables and the region's heap */
int dd_table_init(struct dd_table *t, uint32_t cap);
void dd_table_fini(struct dd_table *t);
int dd_table_add(struct dd_table *t, void *p, uint32_t *handle);
void *dd_table_get(const struct dd_table *t, uint32_t handle);
void dd_table_del(struct dd_table *t, uint32_t handle);
int dd_heap_alloc(struct dd_app *a, uint64_t bytes, uint64_t *off);
void dd_heap_free(struct dd_app *a, uint64_t off, uint64_t bytes);
uint32_t dd_pow2(uint32_t v);

/* app.c: sessions */
struct dd_app *dd_app_new(int sock);
int dd_app_bind(struct dd_app *a, struct dd_port *dp);
void dd_app_free(struct dd_app *a);
void dd_lock_all(void);

/* session.c: the main thread's sessions */
void dd_session_accept(void);
/* epoll's events on a session's socket */
void dd_session_event(struct dd_app *a, uint32_t events);
/* HELLO deadlines, sessions whose memory shrank: each loop */
void dd_sessions_sweep(void);
void dd_app_detach(struct dd_app *a);	/* the session ends */
int dd_app_watch(struct dd_app *a);	/* back in the epoll set */
/* A reply (hdr, len bytes of body, fds): sent, or held until the
 * socket has room (the session is not read meanwhile); the fds of
 * close_mask are closed once sent. 0, or -1 when the session must end. */
int dd_reply(struct dd_app *a, struct droce_chan_hdr *hdr, const void *body,
		uint32_t len, const int *fds, uint32_t nfds, uint32_t close_mask);

/* neigh.c: requests parked while their neighbour is resolved */
bool dd_neigh_park(struct dd_app *a, const uint8_t *msg, uint32_t len,
		int *fds, int nfds);
void dd_neigh_done(void);
void dd_neigh_forget(struct dd_app *a);
void dd_neigh_fini(void);
void dd_unlock_all(void);
void dd_async(struct dd_app *a, enum ibv_event_type type,
		enum droce_chan_kind kind, uint32_t handle);
void dd_async_cb(void *arg, const struct ibv_async_event *ev);

/* ctl.c: the control requests; dd_ctl_check: every op has a handler
 * (at start: 0, or -1 with the op logged) */
int dd_ctl_check(void);
int dd_serve(struct dd_app *a);
/* One request (header then body) with its descriptors, which it closes;
 * neigh_ms: how long a neighbour may still be waited for. 0, or -1 when
 * the session must end. */
int dd_serve_msg(struct dd_app *a, const uint8_t *msg, int *fds, int nfds,
		uint32_t neigh_ms);

/* mem.c: registered memory; fds that become segments are set to -1 */
void dd_mem_init(void);
int dd_reg_mr(struct dd_app *a, const struct droce_chan_reg_mr_req *r,
		int *fds, int nfds, struct droce_chan_reg_mr_rep *rep);
int dd_dereg_mr(struct dd_app *a, const struct droce_chan_dereg_mr_req *r);
void dd_mr_free(struct dd_mr *mr);

/* guard.c: SysV segments' mappings, which may shrink under us */
int dd_guard_init(void);
/* a slot, or -ENOSPC */
int dd_guard_add(void *start, size_t len, size_t page, uint32_t app_id);
void dd_guard_del(int slot);
/* the applications whose guarded memory shrank since the last call */
uint32_t dd_guard_hits(uint32_t *ids, uint32_t max);

/* fast.c: the data path's hooks */
int dd_poll_hook(void *arg, uint32_t q, enum droce_hook_phase phase);
int dd_sleep_hook(void *arg, int sleeping);
void dd_cq_notify(void *arg, struct droce_cq *cq);
void dd_queue_forget_cq(struct dd_cq *cq);
void dd_queue_forget_qp(struct dd_qp *qp);
int dd_drain_srq(struct dd_srq *srq);
void dd_qp_last_sends(struct dd_qp *qp);
void dd_app_take_ud_sends(struct dd_app *a);

/* gsi.c: QP1, the connection manager's MADs routed to applications */
int dd_gsi_init(struct dd_port *dp);
int dd_gsi_proxy_create(struct dd_app *a, struct dd_qp *qp, uint32_t max_recv_wr);
void dd_gsi_proxy_destroy(struct dd_qp *qp);
int dd_gsi_drain_sq(struct dd_qp *qp);
int dd_gsi_drain_rq(struct dd_qp *qp);
int dd_gsi_poll(struct dd_port *dp, uint32_t q);
int dd_gsi_listen(struct dd_app *a, uint64_t service_id, int on);
void dd_gsi_app_gone(struct dd_app *a);
void dd_gsi_stats(uint64_t *rx, uint64_t *tx, uint64_t *dropped,
		uint64_t *rejected, uint64_t *listeners, uint64_t *refused);
/* the thread that answers REQs nobody listens for; it ends with dd.stop */
int dd_gsi_start(void);
void dd_gsi_stop(void);
/* the application's own memory behind (lkey, addr, len): NULL if none */
uint8_t *dd_app_mem(struct dd_app *a, uint32_t lkey, uint64_t addr,
		uint32_t len, unsigned int access);

/* fast.c: a QP whose SQ could not be emptied: again each pass */
void dd_qp_retry_later(struct dd_qp *qp);

/*
 * ring.c: the one way to take what an application wrote into a ring of
 * its region. A consumer reads how many slots there are (dd_wq_avail,
 * dd_db_avail: -1 for a scribbled producer index, of which nothing is
 * taken: it then refuses the ring's owner), copies each slot out whole
 * before looking at it (dd_wq_copy, dd_db_take), advances wq->cons for
 * each it is done with, and publishes its index once (dd_wq_publish,
 * dd_db_publish).
 */
union dd_slot {
	uint8_t b[DROCE_CHAN_SLOT_MAX];
	struct droce_chan_swqe s;
	struct droce_chan_rwqe r;
} __attribute__((aligned(64)));

int64_t dd_wq_avail(struct dd_wq *wq);
void dd_wq_copy(const struct dd_wq *wq, union dd_slot *out);
void dd_wq_publish(struct dd_wq *wq);
int64_t dd_db_avail(struct dd_app *a, uint32_t q);
uint32_t dd_db_take(struct dd_app *a, uint32_t q);
void dd_db_publish(struct dd_app *a, uint32_t q);

/* The n SGEs after a WQE header of hdr bytes in a slot copy of slot
 * bytes, or NULL when n passes max or they do not fit the slot. */
static inline const struct ibv_sge *
dd_slot_sges(const union dd_slot *sl, uint32_t hdr, uint32_t n, uint32_t max,
		uint32_t slot)
{
	if (n > max || slot < hdr ||
			(uint64_t)n * sizeof(struct ibv_sge) > slot - hdr)
		return NULL;
	return (const struct ibv_sge *)(sl->b + hdr);
}
/* fast.c: a completion straight into an application's CQ ring (the GSI
 * proxy's, from the CQ's queue): 0, or -ENOSPC (dropped, counted) */
int dd_cq_put(struct dd_cq *cq, const struct ibv_wc *wc);

/* telemetry.c */
void dd_telemetry_init(void);

#endif
