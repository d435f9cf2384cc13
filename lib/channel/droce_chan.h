/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

#ifndef DROCE_CHAN_H
#define DROCE_CHAN_H

/**
 * @file
 * The channel between an application and droced: what both sides build on.
 *
 * Control path: a SOCK_SEQPACKET unix socket, one per attached process.
 * Each message is a struct droce_chan_hdr and a fixed body (the op's own
 * struct below), file descriptors riding along by SCM_RIGHTS. The
 * application sends a request and waits for the reply to it (same op and
 * seq); the daemon never sends anything unasked.
 *
 * Fast path: one shared region per application (a memfd on hugetlbfs
 * that the daemon creates and passes at HELLO), holding a header, one
 * doorbell ring per data-path queue and the rings of the application's
 * CQs, QPs and SRQs at offsets the daemon allocates and returns in its
 * replies. Single producer, single consumer each:
 *  - work queues (SQ, RQ, SRQ): the application writes slots and prod,
 *    then rings the doorbell of the WQ's queue (once: wq->rung);
 *  - doorbells: the application writes, the daemon reads;
 *  - CQs: the daemon writes CQEs and prod, the application cons and arm.
 * The daemon reads everything the application can write exactly once
 * into its own memory before checking it, and keeps its own copy of every
 * index it owns (it never reads back prod of a CQ or cons of a WQ from
 * the region): a scribbled region harms nobody but its owner.
 *
 * All offsets are from the start of the region, all sizes in bytes
 * unless named entries, all indexes free-running uint32_t.
 */

#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DROCE_CHAN_VERSION 6	/* 2: XRC; 3: several ports; 4: pipes;
				 * 5: selective repeat (SET_SR);
				 * 6: the region's arms and arm_ns */
#define DROCE_CHAN_MAGIC 0x64726f63u		/* "droc" */

/** Where droced listens unless DROCE_DAEMON names another socket. */
#define DROCE_DAEMON_DEFAULT "/run/droce/droced.sock"

/** Largest control message (header and body). */
#define DROCE_CHAN_MSG_MAX 1024
/** Most descriptors one message carries. */
#define DROCE_CHAN_MAX_FDS 8
#define DROCE_CHAN_MAX_QUEUES 16
/** Doorbell ring entries per queue (power of 2): more than the WQs an
 * application may have, so a ring never fills (one entry per rung WQ). */
#define DROCE_CHAN_DB_SIZE 16384
#define DROCE_CHAN_ASYNC_SIZE 64
/** No object (a CQ without a channel, a QP without an SRQ). */
#define DROCE_CHAN_NONE UINT32_MAX
#define DROCE_CHAN_CL 64

/* ---- control messages ---- */

enum droce_chan_op {
	DROCE_OP_HELLO = 1,
	DROCE_OP_ALLOC_PD,
	DROCE_OP_DEALLOC_PD,
	DROCE_OP_REG_MR,
	DROCE_OP_DEREG_MR,
	DROCE_OP_CREATE_CHANNEL,
	DROCE_OP_DESTROY_CHANNEL,
	DROCE_OP_CREATE_CQ,
	DROCE_OP_DESTROY_CQ,
	DROCE_OP_CREATE_SRQ,
	DROCE_OP_MODIFY_SRQ,
	DROCE_OP_QUERY_SRQ,
	DROCE_OP_DESTROY_SRQ,
	DROCE_OP_CREATE_QP,
	DROCE_OP_MODIFY_QP,
	DROCE_OP_QUERY_QP,
	DROCE_OP_DESTROY_QP,
	DROCE_OP_CREATE_AH,
	DROCE_OP_DESTROY_AH,
	DROCE_OP_ATTACH_MCAST,
	DROCE_OP_DETACH_MCAST,
	DROCE_OP_QUERY_PORT,
	DROCE_OP_CM_LISTEN,
	DROCE_OP_RESOLVE,
	DROCE_OP_ALLOC_MW,
	DROCE_OP_DEALLOC_MW,
	DROCE_OP_RESIZE_CQ,
	DROCE_OP_OPEN_XRCD,	/**< reply struct droce_chan_handle */
	DROCE_OP_CLOSE_XRCD,	/**< request struct droce_chan_handle */
	DROCE_OP_SET_SR,	/**< request struct droce_chan_set_sr_req */
	DROCE_OP_COUNT
};

struct droce_chan_hdr {
	uint32_t op;		/**< enum droce_chan_op */
	uint32_t len;		/**< body bytes after the header */
	uint32_t seq;		/**< the request's, echoed in the reply */
	int32_t status;		/**< reply: 0, or a positive errno and no body */
};

/* HELLO: the first request. Reply fds: [0] the region (memfd, mapped
 * MAP_SHARED whole), [1] the read end of the async pipe (the daemon
 * writes a byte after adding to the region's async ring), [2] the write
 * end of the application's wake pipe (write a byte when
 * region->sleeping is set) or none in busy mode. Each pipe end's open
 * file is its holder's alone: nothing one side does to its end (its
 * flags, filling it, reading it dry) can make the other's wait. */
struct droce_chan_hello_req {
	uint32_t version;
	uint32_t port;		/**< the daemon's port (its device) to use */
	char comm[32];		/**< the program's name, for logs and telemetry */
};

struct droce_chan_hello_rep {
	uint32_t version;
	uint32_t nb_queues;
	uint64_t region_size;
	uint32_t app_id;	/**< the daemon's number for this application */
	uint32_t ipv4;		/**< host order */
	uint32_t mtu;		/**< Ethernet MTU */
	uint8_t mac[6];
	/** The top byte of every CM communication ID and SIDR request ID
	 * this application picks (the daemon routes CM MADs by it). */
	uint8_t cm_prefix;
	uint8_t nb_ports;	/**< the daemon's ports: devices 0 to n-1 */
	/** The port's selective repeat (enum droce_sr_mode): whether the
	 *  drop-in's librdmacm offers it on a connection (2, SET_SR). */
	uint8_t sr_mode;
	uint8_t pad[3];
	char name[64];		/**< device name */
	struct {
		uint8_t gid[16];
		uint8_t valid;
		uint8_t pad[3];
	} gids[16];
	struct ibv_device_attr dev_attr;
	struct ibv_port_attr port_attr;
};

/* Requests that name one object and return nothing (DEALLOC_PD,
 * DESTROY_CHANNEL, DESTROY_CQ, DESTROY_SRQ, DESTROY_QP, DESTROY_AH) and
 * replies that return one handle (ALLOC_PD, CREATE_AH). */
struct droce_chan_handle {
	uint32_t handle;
	uint32_t pad;
};

/*
 * REG_MR: the page range around [addr, addr+len) is backed by memfd
 * segments that the application shares with the daemon (it moved the
 * pages onto them: same addresses, contents kept). pieces[] cover the
 * range from its first page in order, each naming a segment (the
 * application numbers them) and a byte offset into it. A segment not
 * yet known to the daemon comes as a descriptor: the first new segment
 * is fds[0], the next fds[1], ... in the order pieces name them (flag
 * DROCE_PIECE_NEW). DEREG_MR releases the segments the application
 * no longer uses (the daemon keeps its mappings of them as long as an
 * MR needs them).
 */
#define DROCE_CHAN_MR_PIECES 16
#define DROCE_PIECE_NEW 1u
struct droce_chan_piece {
	uint32_t seg;
	uint32_t flags;
	uint64_t seg_off;
	uint64_t len;		/**< a multiple of the page size */
};

struct droce_chan_reg_mr_req {
	uint32_t pd;
	uint32_t access;	/**< enum ibv_access_flags */
	uint64_t addr;
	uint64_t len;
	uint64_t iova;
	uint32_t npieces;
	uint32_t pad;
	struct droce_chan_piece pieces[DROCE_CHAN_MR_PIECES];
};

struct droce_chan_reg_mr_rep {
	uint32_t handle;
	uint32_t lkey;
	uint32_t rkey;
	uint32_t pad;
};

struct droce_chan_dereg_mr_req {
	uint32_t handle;
	uint32_t nrelease;
	uint32_t release[DROCE_CHAN_MR_PIECES];	/**< segment numbers */
};

/* CREATE_CHANNEL: reply struct droce_chan_handle, fds[0] the read end of
 * the channel's pipe (the daemon writes a byte each time one of its CQs
 * fires) and fds[1] a write end of the application's own (to keep the
 * fd readable while firings are pending). */

struct droce_chan_create_cq_req {
	uint32_t cqe;
	uint32_t channel;	/**< or DROCE_CHAN_NONE */
	uint32_t comp_vector;
	uint32_t pad;
};

struct droce_chan_create_cq_rep {
	uint32_t handle;
	uint32_t cqe;		/**< what the CQ holds (>= asked) */
	uint32_t size;		/**< ring entries, a power of 2 */
	uint32_t queue;
	uint64_t off;		/**< struct droce_chan_cq */
};

/* RESIZE_CQ: reply struct droce_chan_create_cq_rep, the CQ's new ring
 * (its unread completions moved into it, in order; the old ring is
 * gone once the reply is sent). */
struct droce_chan_resize_cq_req {
	uint32_t handle;
	uint32_t cqe;
};

struct droce_chan_create_srq_req {
	uint32_t pd;
	uint32_t max_wr;
	uint32_t max_sge;
	uint32_t srq_limit;
	uint32_t xrcd;		/**< an XRC SRQ's domain, or DROCE_CHAN_NONE */
	uint32_t cq;		/**< an XRC SRQ's CQ */
};

struct droce_chan_wq_rep {
	uint64_t off;		/**< struct droce_chan_wq; 0: none */
	uint32_t size;		/**< slots, a power of 2 */
	uint32_t slot;		/**< bytes per slot, a multiple of 64 */
};

struct droce_chan_create_srq_rep {
	uint32_t handle;
	uint32_t srq_num;
	uint32_t max_wr;
	uint32_t max_sge;
	struct droce_chan_wq_rep rq;
};

struct droce_chan_modify_srq_req {
	uint32_t handle;
	int32_t mask;		/**< enum ibv_srq_attr_mask */
	struct ibv_srq_attr attr;
};

/* QUERY_SRQ: request struct droce_chan_handle, reply struct ibv_srq_attr. */

struct droce_chan_create_qp_req {
	uint32_t pd;
	uint32_t qp_type;	/**< IBV_QPT_RC, _UC, _UD, _XRC_SEND, _XRC_RECV */
	uint32_t send_cq;	/**< XRC_RECV: none */
	uint32_t recv_cq;	/**< XRC_SEND, XRC_RECV: none */
	uint32_t srq;		/**< or DROCE_CHAN_NONE */
	uint32_t sq_sig_all;
	struct ibv_qp_cap cap;
	uint32_t xrcd;		/**< XRC_RECV: its domain (no PD) */
	uint32_t pad;
};

struct droce_chan_create_qp_rep {
	uint32_t handle;
	uint32_t qpn;
	uint32_t queue;
	uint32_t pad;
	struct ibv_qp_cap cap;	/**< rounded up as the transport did */
	struct droce_chan_wq_rep sq;
	struct droce_chan_wq_rep rq;	/**< off 0 with an SRQ */
};

/* MODIFY_QP: attr.ah_attr / alt_ah_attr as verbs gives them; the daemon
 * resolves the MAC (ARP/ND). Reply: no body. */
struct droce_chan_modify_qp_req {
	uint32_t handle;
	int32_t mask;		/**< enum ibv_qp_attr_mask */
	struct ibv_qp_attr attr;
};

struct droce_chan_query_qp_req {
	uint32_t handle;
	int32_t mask;
};

struct droce_chan_query_qp_rep {
	struct ibv_qp_attr attr;
	struct ibv_qp_cap cap;
	uint32_t qp_type;
	uint32_t sq_sig_all;
};

struct droce_chan_create_ah_req {
	uint32_t pd;
	uint32_t pad;
	struct ibv_ah_attr attr;
};

/* ALLOC_MW: a window of PD pd, of type (enum ibv_mw_type); DEALLOC_MW:
 * struct droce_chan_handle. A BIND_MW WQE names the window and the MR by
 * handle (struct droce_chan_swqe). */
struct droce_chan_alloc_mw_req {
	uint32_t pd;
	uint32_t type;
};

struct droce_chan_alloc_mw_rep {
	uint32_t handle;
	uint32_t rkey;
};

struct droce_chan_mcast_req {
	uint32_t qp;
	uint32_t pad;
	uint8_t gid[16];
};

/* QUERY_PORT: no request body; reply struct ibv_port_attr. */

/* RESOLVE: the neighbour behind a GID (ARP or ND), up to timeout_ms;
 * reply: no body (ETIMEDOUT, EHOSTUNREACH). */
struct droce_chan_resolve_req {
	uint8_t gid[16];
	uint32_t timeout_ms;
	uint32_t pad;
};

/*
 * The connection manager through droced: QP1 is the port's, so the
 * daemon owns it. An application's "GSI QP" is a proxy (CREATE_QP with
 * qp_type DROCE_QPT_GSI; its QPN is 1): its sends leave on QP1, and the
 * CM MADs that arrive on QP1 go to the application they are for: a REQ
 * or SIDR REQ to the one that listens on its service ID (CM_LISTEN), any
 * other message to the one whose cm_prefix its communication ID (or SIDR
 * request ID) carries. Reply: no body.
 */
#define DROCE_QPT_GSI 0x4753u	/* "GS" */
struct droce_chan_cm_listen_req {
	uint64_t service_id;
	uint32_t on;		/**< 1: listen, 0: stop */
	uint32_t pad;
};

/*
 * SET_SR: selective repeat on (1) or off (0) for an RC QP in RESET or
 * INIT, on a port whose DROCE_SELECTIVE_REPEAT is cm (hello sr_mode 2):
 * the drop-in's librdmacm sets it where both ends of a connection offered
 * it (doc/rdmacm.md). Reply: no body; EINVAL (no such QP, not RC, XRC,
 * past INIT, on not 0 or 1), EPERM (the port's mode is not cm).
 */
struct droce_chan_set_sr_req {
	uint32_t handle;
	uint32_t on;
};

/**
 * The body size of op's request (rep == 0) or reply (rep == 1), or -1 for
 * an op that does not exist. Bodies are fixed: a message of another size
 * is refused.
 */
int droce_chan_body_len(uint32_t op, int rep);

/** An op's name for logs ("create_qp"), "?" for none. */
const char *droce_chan_op_name(uint32_t op);

/**
 * Send one message: hdr (its len set to body_len), body, and nfds
 * descriptors. @return 0 or a negative errno.
 */
int droce_chan_send(int sock, struct droce_chan_hdr *hdr, const void *body,
		uint32_t body_len, const int *fds, int nfds);

/**
 * Receive one message into buf (cap bytes: header then body). Received
 * descriptors go to fds (up to DROCE_CHAN_MAX_FDS, *nfds set; extra ones
 * are closed). Checks the body length against the op's (request or
 * reply per rep): a malformed message is -EBADMSG with every descriptor
 * closed.
 * @return the body length, or a negative errno (-ECONNRESET: the peer
 *   is gone).
 */
int droce_chan_recv(int sock, void *buf, uint32_t cap, int rep, int *fds,
		int *nfds);

/* ---- the shared region ---- */

struct droce_chan_async {
	uint32_t event_type;	/**< enum ibv_event_type */
	uint32_t kind;		/**< enum droce_chan_kind */
	uint32_t handle;
	uint32_t pad;
};

enum droce_chan_kind {
	DROCE_KIND_NONE = 0,	/**< port or device events */
	DROCE_KIND_SQ = 1,
	DROCE_KIND_RQ = 2,
	DROCE_KIND_SRQ = 3,
	DROCE_KIND_CQ = 4,
	DROCE_KIND_QP = 5,
};

/** A doorbell: which WQ has new work. */
#define DROCE_DB(kind, handle) (((uint32_t)(kind) << 28) | ((handle) & 0x0fffffffu))
#define DROCE_DB_KIND(db) ((db) >> 28)
#define DROCE_DB_HANDLE(db) ((db) & 0x0fffffffu)

struct droce_chan_db {
	uint32_t prod;		/* application */
	uint8_t pad0[DROCE_CHAN_CL - 4];
	uint32_t cons;		/* daemon (informational) */
	uint8_t pad1[DROCE_CHAN_CL - 4];
	uint32_t ring[DROCE_CHAN_DB_SIZE];
};

struct droce_chan_region {
	uint32_t magic;
	uint32_t version;
	uint64_t size;
	uint32_t nb_queues;
	uint32_t pad0;
	/** daemon: where each queue's struct droce_chan_db is */
	uint64_t db_off[DROCE_CHAN_MAX_QUEUES];
	uint8_t pad1[DROCE_CHAN_CL * 3 - 24 - 8 * DROCE_CHAN_MAX_QUEUES];
	/** daemon: its progress thread naps; write the wake fd after a
	 * doorbell */
	uint32_t sleeping;
	/** application: arms of its channel CQs (unarmed to armed), and
	 * when the last one was (CLOCK_MONOTONIC ns, written first). The
	 * daemon counts those it fired: while they differ, a thread sleeps
	 * on a channel, and a napping daemon serves the port without naps
	 * for DROCE_CHAN_ARMED_MS after the arm, as a NIC's interrupt
	 * would wake the thread */
	uint32_t arms;
	uint64_t arm_ns;
	/** application: when a thread of it last found its CQs empty for
	 * DROCE_CHAN_SPIN_POLLS polls in a row (CLOCK_MONOTONIC ns). It
	 * spins on them, and only the daemon can fill them: a napping
	 * daemon serves the port without naps for DROCE_CHAN_SPIN_MS after,
	 * and each of the two gives the CPU up between its turns */
	uint64_t spin_ns;
	uint8_t pad2[DROCE_CHAN_CL - 24];
	/** async events: daemon writes prod, the application cons */
	uint32_t async_prod;
	uint8_t pad3[DROCE_CHAN_CL - 4];
	uint32_t async_cons;
	uint8_t pad4[DROCE_CHAN_CL - 4];
	struct droce_chan_async async[DROCE_CHAN_ASYNC_SIZE];
};

/** How long after an arm the daemon serves an awaited port without
 * naps (the progress thread's DP_ARMED_SPIN_MS in process). */
#define DROCE_CHAN_ARMED_MS 100

/** Empty CQ polls in a row after which an attached application says
 * it spins (region->spin_ns) and yields its CPU once. */
#define DROCE_CHAN_SPIN_POLLS 256
/** How long after that a napping daemon keeps from its naps. */
#define DROCE_CHAN_SPIN_MS 2

/** Where the daemon starts allocating rings. */
#define DROCE_CHAN_HEAP_OFF 4096

/**
 * A work queue (SQ, RQ or SRQ) at its offset; slots follow at
 * DROCE_CHAN_WQ_SLOTS. Slot i is at slots + (i & (size-1)) * slot.
 */
struct droce_chan_wq {
	uint32_t prod;		/* application: slots written up to here */
	uint32_t rung;		/* application sets 1 with a doorbell, daemon
				 * clears it before reading prod */
	uint8_t pad0[DROCE_CHAN_CL - 8];
	uint32_t cons;		/* daemon: slots taken up to here (free again) */
	uint32_t queue;		/* daemon: the doorbell ring to ring */
	uint32_t error;		/* daemon: nonzero once the daemon refused a
				 * WQE (the QP went to the error state) */
	uint8_t pad1[DROCE_CHAN_CL - 12];
};
#define DROCE_CHAN_WQ_SLOTS DROCE_CHAN_CL * 2

/**
 * A send WQE as posted (a struct ibv_send_wr flattened). The header is
 * followed by num_sge struct ibv_sge, or with IBV_SEND_INLINE by
 * inline_len bytes of data.
 */
struct droce_chan_swqe {
	uint64_t wr_id;
	uint32_t opcode;	/**< enum ibv_wr_opcode */
	uint32_t send_flags;
	uint32_t num_sge;
	uint32_t inline_len;
	uint32_t imm_inv;	/**< imm_data (as in the WR) or invalidate_rkey */
	uint32_t rkey;		/**< RDMA and atomics; BIND_MW: the new rkey */
	uint64_t remote_addr;
	uint64_t compare_add;
	uint64_t swap;
	uint32_t ah;		/**< UD: AH handle; BIND_MW: MW handle */
	uint32_t remote_qpn;	/**< UD; XRC_SEND: the target's SRQ number;
				 *   BIND_MW: MR handle (DROCE_CHAN_NONE: unbind) */
	uint32_t remote_qkey;	/**< UD; BIND_MW: mw_access_flags */
	uint32_t pad;
	uint64_t bind_addr;
	uint64_t bind_len;
	uint64_t reserved;
};
/* then: struct ibv_sge sge[num_sge] or uint8_t data[inline_len] */

/** A receive WQE (struct ibv_recv_wr flattened), then num_sge SGEs. */
struct droce_chan_rwqe {
	uint64_t wr_id;
	uint32_t num_sge;
	uint32_t pad;
};

/** The largest slot a work queue may have: droced refuses a QP or SRQ
 * whose capacities need more (ENOMEM), and copies each slot out whole. */
#define DROCE_CHAN_SLOT_MAX 4096

/** Slot sizes for a QP's or SRQ's capacities. */
static inline uint32_t
droce_chan_sq_slot(uint32_t max_sge, uint32_t max_inline)
{
	uint32_t d = max_sge * (uint32_t)sizeof(struct ibv_sge);

	if (max_inline > d)
		d = max_inline;
	return ((uint32_t)sizeof(struct droce_chan_swqe) + d + DROCE_CHAN_CL - 1) &
		~(uint32_t)(DROCE_CHAN_CL - 1);
}

static inline uint32_t
droce_chan_rq_slot(uint32_t max_sge)
{
	return ((uint32_t)sizeof(struct droce_chan_rwqe) +
		max_sge * (uint32_t)sizeof(struct ibv_sge) + DROCE_CHAN_CL - 1) &
		~(uint32_t)(DROCE_CHAN_CL - 1);
}

/** A CQ at its offset; entries follow at DROCE_CHAN_CQ_WC. */
struct droce_chan_cq {
	uint32_t prod;		/* daemon */
	uint32_t overflow;	/* daemon: 1 once a completion was lost */
	uint32_t events;	/* daemon: times the CQ fired its channel */
	uint8_t pad0[DROCE_CHAN_CL - 12];
	uint32_t cons;		/* application */
	uint8_t pad1[DROCE_CHAN_CL - 4];
	uint32_t arm;		/* application: enum droce_chan_arm; the
				 * daemon clears it when it fires */
	uint8_t pad2[DROCE_CHAN_CL - 4];
};
#define DROCE_CHAN_CQ_WC (DROCE_CHAN_CL * 3)

enum droce_chan_arm {
	DROCE_ARM_NONE = 0,
	DROCE_ARM_ANY = 1,
	DROCE_ARM_SOLICITED = 2,
};

/** Bytes of region for a WQ of size slots of slot bytes, or a CQ. */
static inline uint64_t
droce_chan_wq_bytes(uint32_t size, uint32_t slot)
{
	return DROCE_CHAN_WQ_SLOTS + (uint64_t)size * slot;
}

static inline uint64_t
droce_chan_cq_bytes(uint32_t size)
{
	return DROCE_CHAN_CQ_WC + (uint64_t)size * sizeof(struct ibv_wc);
}

static inline void *
droce_chan_at(void *region, uint64_t off)
{
	return (uint8_t *)region + off;
}

#ifdef __cplusplus
}
#endif

#endif /* DROCE_CHAN_H */
