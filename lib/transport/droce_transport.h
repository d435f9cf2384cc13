/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

#ifndef DROCE_TRANSPORT_H
#define DROCE_TRANSPORT_H

/**
 * @file
 * droce transport: the InfiniBand RC, UC and UD transport as a library that
 * takes frames in and gives frames out. No DPDK ethdev, no threads, no
 * clock: time is passed in (now_ns), so tests are deterministic.
 *
 * Objects and attributes are the verbs API's own (struct ibv_send_wr,
 * ibv_recv_wr, ibv_wc, ibv_qp_attr, ... from <infiniband/verbs.h>), so the
 * verbs driver and the embedding API pass them straight through.
 *
 * Ownership and threading:
 *  - struct droce_dev holds what is shared by all queues and changes
 *    rarely: limits, GIDs, PD/MR/MW tables. Its slow-path calls (create,
 *    destroy, register) take the device lock; the fast path only reads.
 *  - struct droce_tp_queue is one owner context (one per DPDK queue /
 *    core). Every QP belongs to exactly one queue, and its QPN says which
 *    (droce_qpn_queue()). Everything that touches a QP's fast-path state
 *    (post, rx, tx, timers, poll of its CQ) runs in the owner's context;
 *    the caller guarantees mutual exclusion per queue (the dataplane's
 *    progress lock or its lcore).
 *  - A CQ is fed by QPs of one queue (cq->queue), polled by the app.
 *
 * Return conventions: lib functions return 0 or a negative errno;
 * constructors return NULL and set errno; bursts return counts. The post
 * calls follow ibv_post_send(3): positive errno and *bad_wr.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "droce_wire.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * IBTA 1.5 FLUSH in rdma-core's terms (>= 45: IBV_WR_FLUSH, IBV_WC_FLUSH,
 * IBV_QP_EX_WITH_FLUSH, IBV_ACCESS_FLUSH_*), which Debian 12's rdma-core
 * 44 headers do not name yet; the values are rdma-core's.
 */
#define DROCE_WR_FLUSH ((enum ibv_wr_opcode)14)
#define DROCE_WC_FLUSH ((enum ibv_wc_opcode)8)
#define DROCE_QP_EX_WITH_FLUSH (1ull << 11)
#define DROCE_ACCESS_FLUSH_GLOBAL (1u << 8)
#define DROCE_ACCESS_FLUSH_PERSISTENT (1u << 9)

struct droce_dev;
struct droce_tp_queue;
struct droce_pd;
struct droce_mr;
struct droce_mw;
struct droce_cq;
struct droce_srq;
struct droce_xrcd;
struct droce_qp;
struct droce_ah;

#include "droce_tp_conf.h"

/** Creates a device. NULL and errno on failure. */
struct droce_dev *droce_dev_create(const struct droce_dev_conf *conf);
void droce_dev_destroy(struct droce_dev *dev);
const struct droce_dev_limits *droce_dev_limits(const struct droce_dev *dev);
const struct droce_dev_conf *droce_dev_conf(const struct droce_dev *dev);

/** The owner context for queue index q (0 .. nb_queues-1). */
struct droce_tp_queue *droce_dev_queue(struct droce_dev *dev, uint32_t q);

/** Which queue owns QPN qpn. */
uint32_t droce_qpn_queue(const struct droce_dev *dev, uint32_t qpn);

/* ---- async events (CQ overflow, QP fatal, SRQ limit, ...) ---- */

/** Called from the owner context; the verbs driver turns it into an fd event. */
typedef void (*droce_async_cb)(void *arg, const struct ibv_async_event *ev);
void droce_dev_set_async_cb(struct droce_dev *dev, droce_async_cb cb, void *arg);

/* ---- frame I/O ---- */

/** Most payload pieces of one zero-copy frame (more are copied). */
#define DROCE_TX_MAX_SPANS 4

/**
 * A transmit buffer handed to the transport by its environment. The
 * transport writes one complete frame (Ethernet to ICRC) into data and
 * sets len.
 */
struct droce_txbuf {
	uint8_t *data;
	uint32_t cap;
	uint32_t len;
	void *cookie;		/**< the environment's (an mbuf) */
	/**
	 * Zero-copy frames (droce_tp_io.zc_min): when nspan > 0, data[0, len)
	 * holds the headers only; the payload is span[] in registered memory,
	 * each holding a reference on its MR (droce_mr_zc_put() once the
	 * frame no longer needs the memory), then tail[0, tail_len): pad and
	 * ICRC. The environment chains them, or copies them behind the
	 * headers (cap always has room for the whole frame).
	 */
	uint32_t nspan;
	uint32_t tail_len;
	uint8_t tail[8];
	struct droce_txspan {
		const uint8_t *addr;
		uint32_t len;
		struct droce_mr *mr;
	} span[DROCE_TX_MAX_SPANS];
	/**
	 * A RAW_PACKET TSO frame the PMD cuts (droce_tp_io.tso_segs): its
	 * MSS (0: an ordinary frame) and where its L3 and L4 headers begin
	 * and its headers end (data[0, len) holds them, the payload is in
	 * the spans; no tail).
	 */
	uint16_t tso_mss;
	uint16_t tso_l3off, tso_l4off, tso_hlen;
};

/** The environment of a queue: where frames go. */
struct droce_tp_io {
	/** Get up to n free tx buffers of at least cap bytes; returns count. */
	uint32_t (*tx_alloc)(void *arg, struct droce_txbuf *bufs, uint32_t n,
			uint32_t cap);
	/** Hand n filled buffers for transmission (ownership passes). */
	void (*tx_submit)(void *arg, struct droce_txbuf *bufs, uint32_t n);
	/** Give back n unused buffers from tx_alloc. */
	void (*tx_free)(void *arg, struct droce_txbuf *bufs, uint32_t n);
	void *arg;
	/**
	 * Send payloads of at least zc_min bytes from registered memory
	 * without copying them (struct droce_txbuf spans); 0: always copy.
	 * IPv6 frames are always copied (their UDP checksum covers the
	 * payload).
	 */
	uint32_t zc_min;
	/** Whether [addr, addr+len) can be a span (the NIC can reach it);
	 * NULL: any memory. */
	int (*zc_mem_ok)(void *arg, const void *addr, uint32_t len);
	/**
	 * TCP segmentation by the PMD for RAW_PACKET TSO WRs: the most
	 * segments one frame may be cut into (0: droce cuts every segment
	 * itself), the longest segment the PMD makes (headers from Ethernet
	 * on, plus the MSS), and whether it cuts IPv6 as well as IPv4.
	 */
	uint32_t tso_segs;
	uint32_t tso_seg_max;
	int tso_ipv6;
};

void droce_tp_queue_set_io(struct droce_tp_queue *q, const struct droce_tp_io *io);

/**
 * Process received frames (each a full Ethernet frame). Frames not for
 * this queue, malformed or hostile frames are dropped and counted.
 *
 * @return number of frames consumed (always n).
 */
uint32_t droce_tp_rx_burst(struct droce_tp_queue *q, const uint8_t *const *frames,
		const uint32_t *lens, uint32_t n, uint64_t now_ns);

/**
 * Transmit what the send queues, ACK generation and retransmission allow,
 * and fire due timers, up to budget frames.
 *
 * @return number of frames submitted.
 */
uint32_t droce_tp_progress(struct droce_tp_queue *q, uint64_t now_ns, uint32_t budget);

/** True if the queue has work (something to send, timers pending). */
bool droce_tp_queue_busy(const struct droce_tp_queue *q);

/** Earliest pending timer deadline, or UINT64_MAX. */
uint64_t droce_tp_next_deadline(const struct droce_tp_queue *q);

/* ---- objects (slow path) ---- */

struct droce_pd *droce_pd_alloc(struct droce_dev *dev);
int droce_pd_dealloc(struct droce_pd *pd);	/**< -EBUSY while in use */

/**
 * Register memory. access: enum ibv_access_flags. iova is the address the
 * peer uses (== addr normally; 0-based with IBV_ACCESS_ZERO_BASED).
 * DROCE_ACCESS_FLUSH_PERSISTENT wants the whole range in shared mappings
 * of files on a filesystem with stable storage (not tmpfs, hugetlbfs,
 * memfd or SysV: a FLUSH to persistence is msync(MS_SYNC) of the range),
 * else EINVAL, as rxe refuses such an MR over pages that are not pmem.
 */
struct droce_mr *droce_mr_reg(struct droce_pd *pd, void *addr, size_t len,
		uint64_t iova, unsigned int access);
/**
 * As droce_mr_reg, for memory mapped at host in this process that its
 * owner (another process) addresses as local_va: local SGEs and the
 * returned ibv_mr.addr use local_va; the data path reads and writes host.
 * iova is the peer's address as for droce_mr_reg (== local_va normally).
 * droce_mr_reg(pd, addr, len, iova, access) is droce_mr_reg_va(pd, addr,
 * (uint64_t)(uintptr_t)addr, len, iova, access).
 */
struct droce_mr *droce_mr_reg_va(struct droce_pd *pd, void *host, uint64_t local_va,
		size_t len, uint64_t iova, unsigned int access);
int droce_mr_dereg(struct droce_mr *mr);	/**< -EBUSY with bound MWs */
/**
 * droce_mr_dereg in two steps, for an owner that must know when nothing
 * reaches the memory any more (droced unmaps it then). The first takes
 * the keys away: a lookup after it fails, so once every queue has
 * finished the pass it was in, no packet touches the memory through this
 * MR. The caller owns every queue of the device meanwhile, or passes
 * after it may still hold what a lookup before it returned. @return 0 or
 * -EBUSY (windows bound to it: nothing changed).
 */
int droce_mr_dereg_start(struct droce_mr *mr);
/** The second: waits for zero-copy frames (droce_mr_zc_get), then lets
 * the MR go; its release callback runs when the last reference does. */
void droce_mr_dereg_finish(struct droce_mr *mr);
/**
 * fn(arg) when the MR's last reference goes, after droce_mr_dereg: in
 * droce_mr_dereg itself, or later from the data path when a zero-copy
 * frame that outlived DROCE_MR_ZC_WAIT_MS lets go. The memory must stay
 * readable until then.
 */
void droce_mr_on_release(struct droce_mr *mr, void (*fn)(void *arg), void *arg);
/**
 * ibv_advise_mr for [addr, addr+len) of the MR lkey names in pd: its pages
 * faulted in now (writable if write). @return 0, -EINVAL (not this PD's
 * lkey, outside the MR, write without local write) or -EFAULT (not
 * mapped, or not writable).
 */
int droce_mr_advise(struct droce_pd *pd, uint32_t lkey, uint64_t addr,
		uint32_t len, int write);
/* What droce_mr_rereg changes (ibv_rereg_mr's flags, same values). */
#define DROCE_REREG_TRANSLATION 1u	/**< host, local_va, len, iova */
#define DROCE_REREG_PD 2u
#define DROCE_REREG_ACCESS 4u
#define DROCE_REREG_ALL 7u
/**
 * ibv_rereg_mr in place: what says which of the arguments count (the
 * others stay the MR's). The MR gets new keys, its old lkey and rkey stop
 * naming it at once (as a kernel provider's do). The caller keeps the
 * data path off the MR (it owns every queue of the device). @return 0;
 * -EINVAL (bad input), -EBUSY (windows bound to it), -EFAULT or -ENOMEM
 * (the new range cannot be pinned); the MR unchanged on error.
 */
int droce_mr_rereg(struct droce_mr *mr, unsigned int what,
		struct droce_pd *pd, void *host, uint64_t local_va, size_t len,
		uint64_t iova, unsigned int access);
/**
 * A zero-copy frame's reference on an MR's memory. droce_mr_dereg waits
 * (up to DROCE_MR_ZC_WAIT_MS) for frames still queued to let go; the MR's
 * bookkeeping lives until the last reference is gone.
 */
void droce_mr_zc_get(struct droce_mr *mr);
void droce_mr_zc_put(struct droce_mr *mr);
#define DROCE_MR_ZC_WAIT_MS 100
uint32_t droce_mr_lkey(const struct droce_mr *mr);
uint32_t droce_mr_rkey(const struct droce_mr *mr);

/** Memory windows: type is IBV_MW_TYPE_1 or IBV_MW_TYPE_2. */
struct droce_mw *droce_mw_alloc(struct droce_pd *pd, enum ibv_mw_type type);
int droce_mw_dealloc(struct droce_mw *mw);
uint32_t droce_mw_rkey(const struct droce_mw *mw);
/** Type 1 bind (ibv_bind_mw): posts a BIND_MW WR on qp; new rkey returned. */
int droce_mw_bind1(struct droce_qp *qp, struct droce_mw *mw,
		const struct ibv_mw_bind *bind, uint32_t *new_rkey);

/** Completion queue owned by queue q. */
struct droce_cq *droce_cq_create(struct droce_dev *dev, uint32_t q, uint32_t cqe);
int droce_cq_destroy(struct droce_cq *cq);	/**< -EBUSY while QPs use it */
/**
 * Give a CQ that no QP uses to queue q (a QP's CQs and SRQ must share its
 * queue). The caller keeps other threads off the CQ meanwhile.
 * @return 0 (also when already there), -EBUSY while a QP uses it, -EINVAL.
 */
/**
 * A new size for cq (ibv_resize_cq): at least cqe entries, rounded up as
 * at creation, what it holds kept in order. The caller owns the CQ's
 * queue. @return 0; -EINVAL when cqe is 0, past the device's limit or
 * below what the CQ holds now; -ENOMEM.
 */
int droce_cq_resize(struct droce_cq *cq, uint32_t cqe);
int droce_cq_move(struct droce_cq *cq, uint32_t q);
uint32_t droce_cq_size(const struct droce_cq *cq);

/**
 * Poll up to n completions. Returns the count, or -EOVERFLOW after an
 * overflow (which is also reported as IBV_EVENT_CQ_ERR).
 */
int droce_cq_poll(struct droce_cq *cq, struct ibv_wc *wc, int n);

/**
 * Arm the CQ. The notify callback fires (from the owner context) for the
 * next completion (any, or solicited only).
 */
int droce_cq_arm(struct droce_cq *cq, int solicited_only);

/**
 * The CQ's arms mean a consumer that sleeps until it fires (a verbs
 * completion channel): droce_tp_queue_awaited counts them, so the queue's
 * driver can serve it without naps meanwhile. Under the queue's lock.
 */
void droce_cq_set_awaited(struct droce_cq *cq);

/** Awaited CQs of the queue armed and not yet fired. */
uint32_t droce_tp_queue_awaited(const struct droce_tp_queue *q);

/** Times an awaited CQ of the queue fired (woke its consumer). */
uint64_t droce_tp_queue_wakeups(const struct droce_tp_queue *q);
typedef void (*droce_cq_notify_cb)(void *arg, struct droce_cq *cq);
/**
 * How many completions that would fire a CQ armed for solicited ones
 * (solicited, or in error) it has taken so far: an owner that arms the
 * CQ itself for any completion (droced, to learn of every one) tells by
 * this whether its application's solicited-only arm is due.
 */
uint32_t droce_cq_solicited_seq(const struct droce_cq *cq);
void droce_cq_set_notify(struct droce_cq *cq, droce_cq_notify_cb cb, void *arg);

struct droce_srq *droce_srq_create(struct droce_pd *pd, uint32_t q,
		const struct ibv_srq_init_attr *attr);
int droce_srq_destroy(struct droce_srq *srq);
/** The same for an SRQ (its posted receives go with it). */
int droce_srq_move(struct droce_srq *srq, uint32_t q);
int droce_srq_modify(struct droce_srq *srq, struct ibv_srq_attr *attr, int mask);
int droce_srq_query(struct droce_srq *srq, struct ibv_srq_attr *attr);
/** As ibv_post_srq_recv: positive errno, *bad_wr. */
int droce_srq_post_recv(struct droce_srq *srq, struct ibv_recv_wr *wr,
		struct ibv_recv_wr **bad_wr);

/* ---- XRC (tp_xrc.c) ---- */

/** An XRC domain. NULL and errno (ENOMEM). */
struct droce_xrcd *droce_xrcd_alloc(struct droce_dev *dev);
/** @return 0, or -EBUSY while XRC SRQs or XRC_RECV QPs use it. */
int droce_xrcd_free(struct droce_xrcd *xrcd);
/**
 * An XRC SRQ of xrcd, completing into cq and on cq's queue (which it
 * then keeps: droce_cq_move refuses), with an SRQ number from 1 up that
 * XRC requests name (droce_srq_num). pd checks its receive SGEs and
 * every RDMA or atomic access of a request naming it. Destroyed by
 * droce_srq_destroy. NULL and errno (EINVAL, ENOMEM).
 */
struct droce_srq *droce_srq_create_xrc(struct droce_pd *pd,
		struct droce_xrcd *xrcd, struct droce_cq *cq,
		const struct ibv_srq_init_attr *attr);
/** An XRC SRQ's number; 0 for an SRQ that is not XRC. */
uint32_t droce_srq_num(const struct droce_srq *srq);
/**
 * An XRC_RECV QP of xrcd on queue q: no PD, CQ or receive queue of its
 * own (each request's XRCETH names the SRQ that serves it, which must
 * be on queue q). attr->cap is zeroed. NULL and errno (EINVAL, ENOMEM).
 * Hold queue q as for droce_qp_create.
 */
struct droce_qp *droce_qp_create_xrc_recv(struct droce_xrcd *xrcd, uint32_t q,
		struct ibv_qp_init_attr *attr);

/**
 * Create a QP. attr->send_cq / recv_cq / srq are not used (they are the
 * verbs driver's pointers); pass droce's own objects here. The QP lives on
 * the send CQ's queue; the QPN encodes it. Creating and destroying a QP
 * changes that queue's QP list: hold the queue (droce_port_lock) when it
 * may be making progress meanwhile.
 * Capacities in attr->cap are rounded up and written back. An XRC_SEND
 * QP (attr->qp_type) has a send CQ only: rcq and srq NULL.
 */
struct droce_qp *droce_qp_create(struct droce_pd *pd, struct ibv_qp_init_attr *attr,
		struct droce_cq *scq, struct droce_cq *rcq, struct droce_srq *srq);
/**
 * The GSI QP (QPN 1, UD) that connection managers send and receive MADs
 * on; Q_Key 0x80010000 is set as for any UD QP (modify to INIT). The CQs
 * must be on the queue that owns QPN 1 (droce_qpn_queue). NULL and errno:
 * EBUSY when the device has one, EINVAL for another type.
 */
struct droce_qp *droce_qp_create_gsi(struct droce_pd *pd,
		struct ibv_qp_init_attr *attr, struct droce_cq *scq,
		struct droce_cq *rcq);
/** @return 0, -EBUSY while attached to a multicast group (as the
 * kernel's uverbs: detach first). */
int droce_qp_destroy(struct droce_qp *qp);
uint32_t droce_qp_num(const struct droce_qp *qp);

/* ---- multicast (UD) ---- */

/**
 * Attach a UD QP to multicast group gid (ibv_attach_mcast(3)): UD SENDs
 * to the group (DestQP DROCE_MCAST_QPN, the group's MAC and IP) that
 * arrive on the QP's queue are delivered to it, each attached QP getting
 * its own copy under its own Q_Key check. Only the QP's own queue
 * delivers to it: the environment hands such a frame to every queue with
 * groups (droce_tp_queue_mcast_groups), and opens its NIC's filter to the
 * groups' MACs (droce_dev_mcast_macs). Call with the QP's queue held, as
 * for droce_qp_modify.
 *
 * @param qp
 *   A UD QP.
 * @param gid
 *   The group: IPv4-mapped 224.0.0.0/4 or IPv6 ff00::/8.
 * @return
 *   0 (also when already attached), -EINVAL (not a UD QP, gid not
 *   multicast), -ENOMEM (max_mcast_grp groups already, max_mcast_qp_attach
 *   QPs in the group, max_total_mcast_qp_attach in all, or no memory).
 */
int droce_qp_attach_mcast(struct droce_qp *qp, const uint8_t gid[16]);

/**
 * Detach a QP from group gid (ibv_detach_mcast(3)); the group goes when
 * its last QP does. Call with the QP's queue held.
 *
 * @return
 *   0, -EINVAL (the QP is not attached to gid).
 */
int droce_qp_detach_mcast(struct droce_qp *qp, const uint8_t gid[16]);

/**
 * The Ethernet addresses of the device's groups, each once (two IPv4
 * groups may share one): writes up to max, returns how many there are.
 */
uint32_t droce_dev_mcast_macs(struct droce_dev *dev, uint8_t (*macs)[6],
		uint32_t max);

/**
 * How many groups queue q's QPs are attached to; safe to read from
 * another queue's thread (a frame arriving during an attach may miss it).
 */
uint32_t droce_tp_queue_mcast_groups(const struct droce_tp_queue *q);

#include "droce_tp_raw.h"

/**
 * Address vector: where a QP's (or a UD WR's) frames go. The environment
 * resolves the MAC (ARP/ND) before handing it to the transport.
 */
struct droce_av {
	uint8_t dmac[6];
	uint8_t dgid[16];
	uint8_t sgid_index;
	uint8_t tclass;
	uint8_t hop_limit;
	uint32_t flow_label;
	uint16_t udp_sport;	/**< 0: derived as rxe does */
	uint16_t vlan_tci;	/**< 0: untagged */
};

/**
 * Modify a QP (ibv_modify_qp semantics, IBTA attribute mask rules).
 * av is required with IBV_QP_AV (the dmac resolved), NULL otherwise.
 * @return 0, -EINVAL (bad/missing/forbidden attribute or transition).
 */
int droce_qp_modify(struct droce_qp *qp, struct ibv_qp_attr *attr, int mask,
		const struct droce_av *av);
int droce_qp_query(struct droce_qp *qp, struct ibv_qp_attr *attr, int mask,
		struct ibv_qp_init_attr *init);

struct droce_ah *droce_ah_create(struct droce_pd *pd, const struct droce_av *av);
int droce_ah_destroy(struct droce_ah *ah);

/* ---- fast path (owner context) ---- */

/**
 * ibv_post_send(3): 0, or a positive errno (EINVAL, ENOMEM) with *bad_wr
 * set to the first WR not posted. UD WRs carry droce_ah_to_ibv(ah) in
 * wr.ud.ah, BIND_MW WRs droce_mw_to_ibv() / droce_mr_to_ibv() pointers.
 * DROCE_WR_FLUSH (RC only; struct ibv_send_wr has no fields of its own
 * for it, ibv_wr_flush is the verbs' way): wr.atomic.remote_addr and
 * .rkey, the length in wr.atomic.compare_add (at most 2^31), the placement
 * type (DROCE_FLUSH_GLOBAL | DROCE_FLUSH_PERSISTENT, at least one) in
 * bits 7:0 of wr.atomic.swap and the selectivity (DROCE_FLUSH_RANGE or
 * DROCE_FLUSH_MR) in bits 15:8, no SGEs and no inline data, else EINVAL.
 * IBV_WR_ATOMIC_WRITE (RC only): wr.rdma.remote_addr 8-byte aligned and
 * exactly 8 bytes of SGEs, else EINVAL; with IBV_SEND_INLINE the 8 bytes
 * are copied into the WQE whatever max_inline_data is.
 */
int droce_qp_post_send(struct droce_qp *qp, struct ibv_send_wr *wr,
		struct ibv_send_wr **bad_wr);

/**
 * As droce_qp_post_send, but all or nothing: the whole list is checked
 * (each WR and the room for all of them) before any is queued, as
 * ibv_wr_complete(3) requires.
 */
int droce_qp_post_send_all(struct droce_qp *qp, struct ibv_send_wr *wr,
		struct ibv_send_wr **bad_wr);

/**
 * A send WR its poster could not take as given (droced: a WQE from an
 * application's ring it refused), on a QP in the error state: it joins
 * the SQ and completes in order after those before it, with status
 * (IBV_WC_WR_FLUSH_ERR for those that follow a refused one).
 * EINVAL unless the QP is in ERR or SQE, ENOMEM when the SQ is full.
 */
int droce_qp_post_refused(struct droce_qp *qp, uint64_t wr_id,
		uint32_t wr_opcode, enum ibv_wc_status status);

/** ibv_post_recv(3), same conventions. */
int droce_qp_post_recv(struct droce_qp *qp, struct ibv_recv_wr *wr,
		struct ibv_recv_wr **bad_wr);

/** The queue a QP/CQ belongs to. */
struct droce_tp_queue *droce_qp_queue(const struct droce_qp *qp);
struct droce_tp_queue *droce_cq_queue(const struct droce_cq *cq);

/*
 * The verbs objects droce's MR, MW and AH embed: the verbs driver hands
 * them out as its own ibv_mr / ibv_mw / ibv_ah (filling context and pd),
 * and WRs that carry them (bind_mw.mw, bind_info.mr, ud.ah) are passed to
 * the transport unchanged. An embedding application uses them the same
 * way. The conversions are casts: the verbs object is the first member.
 */
struct ibv_mr *droce_mr_to_ibv(struct droce_mr *mr);
struct droce_mr *droce_mr_from_ibv(struct ibv_mr *mr);
struct ibv_mw *droce_mw_to_ibv(struct droce_mw *mw);
struct droce_mw *droce_mw_from_ibv(struct ibv_mw *mw);
struct ibv_ah *droce_ah_to_ibv(struct droce_ah *ah);
struct droce_ah *droce_ah_from_ibv(struct ibv_ah *ah);

/*
 * An owner's pointer on a QP, CQ or SRQ (the verbs driver's own object):
 * async events name droce objects, and this maps them back.
 */
void droce_qp_set_user(struct droce_qp *qp, void *user);
/** Selective repeat on (1) or off (0) for an RC QP, in RESET or INIT
 *  (before its connection carries anything): both ends must agree, as
 *  an exchange such as rdma_cm's private data says (doc/transport.md).
 *  0, or -EINVAL (not RC, XRC, or later than INIT). */
int droce_qp_set_sr(struct droce_qp *qp, int on);
/** Whether selective repeat is on for qp. */
int droce_qp_sr(const struct droce_qp *qp);
void *droce_qp_user(const struct droce_qp *qp);
void droce_cq_set_user(struct droce_cq *cq, void *user);
void *droce_cq_user(const struct droce_cq *cq);
void droce_srq_set_user(struct droce_srq *srq, void *user);
void *droce_srq_user(const struct droce_srq *srq);

/** Name of a completion status (as ibv_wc_status_str, without libibverbs). */
const char *droce_wc_status_str(enum ibv_wc_status status);

/** WQEs posted on a QP's send queue and not yet (fully) transmitted. */
uint32_t droce_qp_sq_untransmitted(const struct droce_qp *qp);

/** WQEs posted on a QP's send queue and not yet completed. */
uint32_t droce_qp_sq_outstanding(const struct droce_qp *qp);

/** Where a QP's completions stand in its CQs: produced there and polled
 * by the application (free-running counts; the same CQ twice when one
 * serves both sides). */
struct droce_cq_pos {
	uint32_t send_prod, send_cons;
	uint32_t recv_prod, recv_cons;
};
/** QP qpn's, from any thread: 0, or -ENOENT when no QP has that number
 * (or it has no CQ: an XRC target). */
int droce_dev_qp_cq_pos(struct droce_dev *dev, uint32_t qpn,
		struct droce_cq_pos *pos);

/** 1 if QP qpn exists and has nothing outstanding on its send queue
 * (call with its queue's owner lock held). */
int droce_dev_qp_sq_idle(const struct droce_dev *dev, uint32_t qpn);

/**
 * The ibv_wr_* builders a QP type takes: the IBV_QP_EX_WITH_* flag of
 * each work-request opcode droce_qp_post_send accepts on it (0 for a type
 * droce does not have).
 */
uint64_t droce_qp_type_send_ops(enum ibv_qp_type type);

/** Current state of a QP (cheap; droce_qp_query gives everything). */
enum ibv_qp_state droce_qp_state(const struct droce_qp *qp);

#include "droce_tp_stats.h"

#ifdef __cplusplus
}
#endif

#endif /* DROCE_TRANSPORT_H */
