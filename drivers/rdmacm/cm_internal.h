/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

#ifndef CM_INTERNAL_H
#define CM_INTERNAL_H

/*
 * droce's librdmacm.so.1: rdma_cm in the process, over droce's verbs.
 *
 * The kernel's rdma_cm owns QP1 and talks to librdmacm through
 * /dev/infiniband/rdma_cm; droce has no kernel part, so the CM runs here:
 * one agent thread per process polls the GSI QP (QPN 1) of every device
 * an ID is bound to, answers and retransmits MADs, and queues events on
 * the ID's channel. One lock guards every ID, device and channel; the
 * agent and the API take it, and no verbs call that may wait (address
 * resolution) runs under it.
 */

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <infiniband/sa.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include "wire_cm_mad.h"
#include "droce_rdmacm.h"

#define CM_RECVS 64
#define CM_SENDS 64
#define CM_RECV_LEN (40 + CM_MAD_LEN)
#define CM_AH_CACHE 64		/* kept past use; more while IDs hold them */
#define CM_RETRY_MS 1000	/* first retransmission of a REQ, REP, DREQ */
#define CM_RETRIES 15
#define CM_DREQ_RETRY_MS 250
#define CM_EXIT_LINGER_MS 4000
#define CM_LOCAL_TIMEOUT 18	/* ~1 s: how soon droce answers a MAD */
#define CM_ACK_TIMEOUT 14	/* 67 ms: a software peer's round trip */
#define CM_ORPHANS 32		/* REQs to no listener remembered */
#define CM_ORPHAN_MS 30000	/* how long a remembered one counts */
#define CM_REJ8_GRACE_MS 3000	/* a REQ's "invalid service ID" is final
				 * this long after it first went */
#define CM_UDP_QKEY 0x01234567u
#define CM_SR_TAG_LEN 8		/* selective repeat's offer (cm_sr.c) */
#define CM_REPLY_RESOLVE_MS 5	/* how long an answer waits for ARP/ND */

/* Per device: the GSI QP, its buffers and an AH per peer. */
struct cm_dev {
	struct cm_dev *next;
	struct ibv_context *verbs;
	uint64_t guid;			/* host order */
	uint8_t port_num;
	enum ibv_mtu mtu;
	uint8_t max_resp_res;		/* max_qp_rd_atom, for RDMA_MAX_RESP_RES */
	uint8_t max_init_depth;		/* max_qp_init_rd_atom */
	unsigned int flush_access;	/* the FLUSH access flags it takes */
	struct ibv_pd *pd;		/* the default PD of IDs on the device */
	bool up;			/* the GSI QP runs */
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	struct ibv_qp *gsi;
	struct ibv_mr *mr;
	uint8_t *buf;			/* CM_RECVS receives, then CM_SENDS */
	uint64_t send_free;		/* a bit per free send buffer */
	struct cm_ah {
		uint8_t gid[16];
		struct ibv_ah *ah;
	} *ahs;				/* oldest first */
	uint32_t nah, ah_cap;
};

enum cm_state {
	CM_IDLE,
	CM_ADDR_QUERY,
	CM_ADDR_RESOLVED,
	CM_ROUTE_RESOLVED,
	CM_LISTEN,
	CM_REQ_SENT,		/* active: REQ out, waiting for REP */
	CM_REP_RCVD,		/* active: REP in, RTU not yet sent (no QP) */
	CM_REQ_RCVD,		/* passive: CONNECT_REQUEST given, not answered */
	CM_REP_SENT,		/* passive: REP out, waiting for RTU */
	CM_ESTABLISHED,
	CM_DREQ_SENT,
	CM_DISCONNECTED,
	CM_SIDR_REQ_SENT,
	CM_SIDR_REQ_RCVD,
	CM_REJECTED,
	CM_ERROR,
};

/* A MAD sent until answered: REQ, REP, DREQ, SIDR REQ */
struct cm_retx {
	uint8_t mad[CM_MAD_LEN];
	bool armed;
	uint32_t left;
	uint32_t timeout_ms;
	uint64_t deadline_ms;
};

struct cm_channel;

/* A multicast group an ID joined */
struct cm_mc {
	struct cm_mc *next;
	uint8_t gid[16];
	struct sockaddr_storage addr;
	void *context;
	bool attached;			/* its QP receives the group */
};

struct cm_id_priv {
	struct rdma_cm_id id;		/* the handle: first */
	struct cm_id_priv *next;
	struct cm_dev *dev;
	struct cm_channel *chan;
	bool sync;			/* no channel of its own: calls wait */
	enum cm_state state;
	uint32_t events_out;		/* got, not yet acked */
	pthread_cond_t acked;
	bool destroying;
	uint32_t refs;			/* address resolution in flight */
	bool req_pending;		/* CONNECT_REQUEST not yet got */
	struct ibv_sa_path_rec path;

	/* listener */
	int backlog;
	int pending;
	struct cm_id_priv *parent;	/* the listener of a passive ID */
	struct ibv_qp_init_attr *ep_attr; /* rdma_create_ep's, for children */
	struct ibv_pd *ep_pd;

	/* addressing */
	bool bound;			/* a port taken */
	uint8_t sgid_index;
	uint8_t tos;
	bool tos_set, reuse, afonly;
	uint8_t ack_timeout;

	/* the connection */
	uint64_t tid;
	uint64_t remote_guid;
	uint32_t local_comm_id, remote_comm_id;
	uint32_t remote_qpn, remote_qkey;
	uint32_t qpn;			/* the local QP's, or conn_param's */
	uint32_t rq_psn, sq_psn;
	uint8_t resp_res, init_depth, retry_count, rnr_retry;
	enum ibv_mtu mtu;
	uint32_t flow_label;
	bool srq;
	struct ibv_ah *ah;		/* to the peer, from the device cache */
	struct cm_retx retx;
	uint64_t req_sent_ms;		/* when the first REQ went */
	uint8_t last_reply[CM_MAD_LEN];	/* REP or RTU: answer to duplicates */
	uint16_t last_reply_attr;
	struct ibv_comp_channel *own_chan[2]; /* rdma_create_qp's send, recv */
	bool own_cqs, own_qp, own_srq;
	uint32_t ece_vendor, ece_options;
	bool sr_offered;		/* active: the REQ offered selective
					 * repeat; passive: the peer's did */
	struct cm_mc *mcs;		/* groups joined */
	/* a DISCONNECTED waiting for the QP's earlier completions to be
	 * polled (cm_held.c), until held_until_ms at most */
	struct cm_event_priv *held;
	uint64_t held_mark, held_until_ms;
};

struct cm_event_priv {
	struct rdma_cm_event ev;	/* first */
	struct cm_event_priv *next;
	struct cm_id_priv *owner;	/* whose events_out it counts in */
	uint8_t pdata[CM_MAD_LEN];
};

struct cm_channel {
	struct rdma_event_channel ch;	/* fd: an eventfd, one count per event */
	struct cm_event_priv *head, *tail;
	bool sync;			/* an ID's private channel */
};

struct cm_global {
	pthread_mutex_t lock;
	struct cm_dev *devs;
	struct cm_id_priv *ids;
	pthread_t agent;
	bool agent_up;
	int wake_fd;
	uint16_t next_port;
	struct droce_cm_stats st;
	uint64_t st_sr_on;		/* QPs given selective repeat */
	struct {			/* REQs to no listener dropped once */
		uint8_t sgid[16];
		uint32_t comm_id;
		uint64_t at_ms;		/* 0: free */
	} orphan[CM_ORPHANS];
};

extern struct cm_global cm;

static inline struct cm_id_priv *
cm_id(struct rdma_cm_id *id)
{
	return (struct cm_id_priv *)id;
}

/* Keep a reply sent: the answer to a duplicate of what it answered. */
static inline void
cm_keep_reply(struct cm_id_priv *p, uint16_t attr, const uint8_t *mad)
{
	memcpy(p->last_reply, mad, CM_MAD_LEN);
	p->last_reply_attr = attr;
}

static inline uint8_t
cm_min8(uint8_t a, uint8_t b)
{
	return a < b ? a : b;
}

/* cm_util.c */
uint64_t cm_now_ms(void);
uint32_t cm_random32(void);
uint32_t cm_new_comm_id(const struct cm_dev *d);
int cm_sa_len(const struct sockaddr *sa);
void cm_sa_to_gid(const struct sockaddr *sa, uint8_t gid[16]);
void cm_gid_to_sa(const uint8_t gid[16], uint16_t port, struct sockaddr *sa);
uint16_t cm_sa_port(const struct sockaddr *sa);
void cm_sa_set_port(struct sockaddr *sa, uint16_t port);
bool cm_sa_any(const struct sockaddr *sa);
/* 127.0.0.0/8 or ::1 */
bool cm_sa_loopback(const struct sockaddr *sa);
uint64_t cm_service_id(enum rdma_port_space ps, uint16_t port);

/* cm_event.c: channels and events */
struct cm_channel *cm_channel_new(bool sync);
void cm_channel_free(struct cm_channel *c);
/* queue an event on the ID's channel (lock held); NULL when out of memory */
struct cm_event_priv *cm_event_queue(struct cm_id_priv *p,
		enum rdma_cm_event_type type, int status);
struct cm_event_priv *cm_event_queue_on(struct cm_channel *c,
		struct cm_id_priv *p, enum rdma_cm_event_type type, int status);
/* an event of p's, not yet on any channel; NULL when out of memory */
struct cm_event_priv *cm_event_new(struct cm_id_priv *p,
		enum rdma_cm_event_type type, int status);
/* put it at the end of channel c (lock held) */
void cm_event_post(struct cm_channel *c, struct cm_event_priv *e);
void cm_event_forget(struct cm_id_priv *p);
/* a sync ID waits for its next event and keeps it in id->event: 0 when
 * it is want, else -1 with errno from the event */
int cm_wait(struct cm_id_priv *p, enum rdma_cm_event_type want);
void cm_ack_last(struct cm_id_priv *p);

/* cm_dev.c: devices, the GSI QP, sending */
int cm_devices_init(void);
struct cm_dev *cm_dev_of(struct ibv_context *verbs);
int cm_dev_start(struct cm_dev *d);
/* find the device and GID index of a local address; -1 if none */
int cm_dev_find_addr(const struct sockaddr *sa, struct cm_dev **d,
		uint8_t *gid_index);
struct ibv_ah *cm_dev_ah(struct cm_dev *d, const uint8_t dgid[16],
		uint8_t sgid_index);
/* the AH to answer a MAD from dgid; NULL (counted) if its neighbour is
 * not known at once */
struct ibv_ah *cm_dev_reply_ah(struct cm_dev *d, const uint8_t dgid[16],
		uint8_t sgid_index);
int cm_send_mad(struct cm_dev *d, struct ibv_ah *ah, const uint8_t *mad);
void cm_dev_poll(struct cm_dev *d);
struct ibv_pd *cm_dev_pd(struct cm_dev *d);
/* the index of a local GID, or the first of the peer's kind */
uint8_t cm_dev_gid_index(struct cm_dev *d, const uint8_t *gid,
		const uint8_t peer[16]);

/* cm_agent.c: the thread */
int cm_agent_start(void);
void cm_agent_wake(void);
void cm_retx_arm(struct cm_id_priv *p, const uint8_t *mad, uint32_t ms);
void cm_retx_stop(struct cm_id_priv *p);

/* cm_held.c: a peer's disconnect after the completions before it */
#define CM_DISC_HOLD_MS 100
void cm_held_disconnect(struct cm_id_priv *p);
void cm_held_timeouts(uint64_t now);
bool cm_held_any(void);
void cm_held_drop(struct cm_id_priv *p);

/* cm_linger.c: DREQs that outlive their IDs */
void cm_linger_dreq(struct cm_id_priv *p);
bool cm_linger_answered(uint32_t local_comm_id);
void cm_linger_timeouts(uint64_t now);
uint64_t cm_linger_next(void);
bool cm_linger_busy(void);
void cm_agent_timeouts(uint64_t now);
void cm_agent_rx(struct cm_dev *d, const uint8_t *grh, const uint8_t *mad,
		uint32_t len);

/* cm_conn.c: the RC connection, what both sides share (MAD dispatch,
 * REJ/MRA/DREQ/DREP, timeouts) */
void cm_conn_rx(struct cm_dev *d, const uint8_t sgid[16],
		const struct cm_mad_hdr *h, const uint8_t *msg);
void cm_conn_timeout(struct cm_id_priv *p);
/* an event with the connection's parameters, not yet queued */
struct cm_event_priv *cm_conn_event_new(struct cm_id_priv *p,
		enum rdma_cm_event_type t, int status, const uint8_t *pdata,
		uint8_t len);
/* the same, queued on the ID's channel */
struct cm_event_priv *cm_conn_event(struct cm_id_priv *p,
		enum rdma_cm_event_type t, int status, const uint8_t *pdata,
		uint8_t len);
/* the connection failed: retransmission stopped, event t queued */
void cm_conn_fail(struct cm_id_priv *p, enum rdma_cm_event_type t,
		int status, const uint8_t *pdata, uint8_t len);
/* an RDMA read depth the application asks for, bounded by the device
 * and the peer: 0, or -1 and EINVAL */
int cm_conn_depth(uint8_t want, uint8_t dev_max, uint8_t peer,
		uint8_t *out);
/* send a DREQ, kept until answered */
void cm_conn_dreq(struct cm_id_priv *p);
void cm_send_simple(struct cm_dev *d, struct ibv_ah *ah, uint64_t tid,
		uint16_t attr, uint32_t local, uint32_t remote, uint32_t qpn,
		uint8_t *mad);
void cm_send_rej(struct cm_dev *d, struct ibv_ah *ah, uint64_t tid,
		uint32_t local, uint32_t remote, uint8_t ref, uint16_t reason,
		const void *pdata, uint8_t len);
/* a REJ to the ID's peer */
void cm_rej_peer(struct cm_id_priv *p, uint8_t ref, uint16_t reason,
		const void *pdata, uint8_t len);

/* cm_conn_active.c: rdma_connect's REQ, the REP, the RTU */
void cm_conn_rx_rep(struct cm_id_priv *p, struct cm_rep *r);

/* cm_conn_passive.c: a listener's REQ, rdma_accept's REP, the RTU */
void cm_conn_rx_req(struct cm_dev *d, const uint8_t sgid[16],
		const struct cm_mad_hdr *h, const uint8_t *msg);
void cm_conn_rx_rtu(struct cm_id_priv *p, const uint8_t *pdata);
/* a passive ID for a request to listener l, addressed from its header */
struct cm_id_priv *cm_conn_child(struct cm_id_priv *l, struct cm_dev *d,
		const uint8_t sgid[16], const struct cm_ip_hdr *ip);
/* a REQ or SIDR REQ to no listener: true when this is its second copy
 * (the first is dropped: the server may be between two listens) */
bool cm_orphan_seen_before(const uint8_t sgid[16], uint32_t comm_id);
/* a passive ID's request is answered: its listener's backlog frees */
void cm_request_done(struct cm_id_priv *p);

/* cm_ud.c: SIDR */
void cm_sidr_rx(struct cm_dev *d, const uint8_t sgid[16],
		const struct cm_mad_hdr *h, const uint8_t *msg);
int cm_sidr_connect(struct cm_id_priv *p, struct rdma_conn_param *param);
int cm_sidr_accept(struct cm_id_priv *p, struct rdma_conn_param *param);
int cm_sidr_reject(struct cm_id_priv *p, const void *pd, uint8_t len);

/* cm_sr.c: selective repeat offered in the private data */
/* whether the ID may offer (or accept) it, the application's private
 * data taking used bytes of room */
bool cm_sr_offer(const struct cm_id_priv *p, size_t used, size_t room);
/* the tag at the end of a private data area of room bytes */
void cm_sr_put(uint8_t *area, size_t room, uint32_t comm_id);
/* whether the area ends with the tag of comm_id; zeroes it if so */
bool cm_sr_take(uint8_t *area, size_t room, uint32_t comm_id);
/* on for the ID's QP (RESET or INIT): 0, or -1 and errno */
int cm_sr_set(struct cm_id_priv *p);

/* cm_mcast.c */
void cm_mcast_leave_all(struct cm_id_priv *p);

/* cm_qp.c: QP transitions */
int cm_qp_modify(struct cm_id_priv *p, enum ibv_qp_state to);
int cm_init_attr(struct cm_id_priv *p, struct ibv_qp_attr *a, int *mask);
void cm_qp_to_error(struct cm_id_priv *p);

/* cm_id.c */
struct cm_id_priv *cm_id_new(struct cm_channel *c, void *context,
		enum rdma_port_space ps, enum ibv_qp_type qpt);
struct cm_id_priv *cm_listener_of(struct cm_dev *d, uint64_t service_id,
		const uint8_t dst_gid[16]);
int cm_bind_port(struct cm_id_priv *p, struct sockaddr *sa);

#endif
