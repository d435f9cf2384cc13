/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

#ifndef DROCE_H
#define DROCE_H

/**
 * @file
 * droce embedding API: put droce on a DPDK port and get a struct
 * droce_dev whose objects (PD, MR, CQ, QP: droce_transport.h) the
 * application uses directly, exactly as the verbs driver does.
 *
 * Progress modes (droce_port_conf.mode):
 *  - DROCE_PROGRESS_THREAD (default): a background thread per port spins
 *    while there is work and backs off when idle; application threads that
 *    post or poll also make progress inline when the queue is free.
 *  - DROCE_PROGRESS_INLINE: only the application's calls make progress
 *    (droce_port_progress()); for single-threaded apps that poll.
 *  - DROCE_PROGRESS_LCORES: the application gives lcores; droce_port_run()
 *    is the run-to-completion loop to launch on each (one queue each).
 */

#include <stdbool.h>
#include <stdint.h>

#include "droce_transport.h"

#ifdef __cplusplus
extern "C" {
#endif

struct droce_port;

enum droce_progress_mode {
	DROCE_PROGRESS_THREAD = 0,
	DROCE_PROGRESS_INLINE,
	DROCE_PROGRESS_LCORES,
};

/** Fault injection on one direction of a port (probabilities in 1/1e6). */
struct droce_fault_conf {
	uint32_t drop_ppm;
	uint32_t dup_ppm;
	uint32_t reorder_ppm;
	uint32_t corrupt_ppm;
	uint32_t delay_ppm;
	uint32_t delay_us;
	/** RoCE frames marked CE (congestion experienced) as a congested
	 *  switch would mark them, whatever ECN codepoint they carried,
	 *  the IPv4 header checksum fixed: the notification point and what
	 *  a peer does with CNPs can be tested on any link */
	uint32_t ce_ppm;
	uint64_t seed;
	/** Faults only in the first `frames` RDMA frames, then none (0: no
	 * end). For programs whose teardown cannot survive loss: a peer that
	 * exits once its own work completes leaves a lost final ACK with no
	 * one to answer the retry (ibv_rc_pingpong). */
	uint64_t frames;
};

struct droce_port_conf {
	/** EAL arguments (used only if EAL is not initialised yet), NULL = defaults. */
	const char *eal_args;
	/** DPDK device: a port id of an ethdev the app configured (attach_port_id >= 0)... */
	int attach_port_id;		/**< -1: droce probes and configures devargs */
	const char *devargs;		/**< e.g. "net_memif0,role=server,socket=/tmp/x" */
	uint32_t nb_queues;		/**< 0 = 1 */
	enum droce_progress_mode mode;
	uint32_t ipv4;			/**< host order; 0 = none */
	uint8_t ipv6[16];		/**< all zero = none besides link-local */
	uint8_t mac[6];			/**< all zero = the port's own */
	uint32_t mtu;			/**< 0 = 1500 */
	struct droce_fault_conf fault_rx, fault_tx;
	const char *name;		/**< device name, e.g. "droce0" */
	/**
	 * Zero-copy transmit: payloads of at least this many bytes leave
	 * from the registered memory itself, each frame a chain of headers,
	 * external mbufs over the MR and pad + ICRC. Needs a PMD that takes
	 * multi-segment frames; on a device that DMAs, only memory DPDK can
	 * translate (hugepages, rte_malloc, rte_extmem_register) goes by
	 * reference, the rest is copied. DROCE_ZC_AUTO (0): 512 bytes on
	 * devices that DMA, off on virtual devices (memif, af_packet, tap
	 * and ring copy every frame anyway), and off on a port the
	 * application configured (attach_port_id: set a threshold where it
	 * enabled RTE_ETH_TX_OFFLOAD_MULTI_SEGS); DROCE_ZC_OFF: never.
	 */
	uint32_t tx_zc_min;
	/**
	 * FLUSHes leave with Linux rxe's ICRC (droce_icrc_rxe_flush), which
	 * kernel 6.2 and later accept, instead of the spec's, which they drop.
	 * Received FLUSHes are taken with either.
	 */
	uint8_t rxe_flush_icrc;
	/** The retransmission timer's floor in microseconds (0: 1000;
	 *  droce_dev_conf.rto_min_us). */
	uint32_t rto_min_us;
	/** Selective repeat (enum droce_sr_mode: off, every RC QP, or
	 *  offered through rdma_cm) and its window (0: 1024;
	 *  droce_dev_conf.selective_repeat, sr_window). */
	uint8_t selective_repeat;
	uint32_t sr_window;
	/**
	 * IPv4 header checksum offload on transmit, where the PMD has it
	 * (RTE_ETH_TX_OFFLOAD_IPV4_CKSUM) and droce configured the port.
	 * DROCE_OFFLOAD_AUTO (0): on devices that DMA, where the NIC fills
	 * the sum in; off on virtual devices (net_tap, the one here that has
	 * it, computes it in software over a copy of the headers, dearer than
	 * droce's own sum from the QP's template). DROCE_OFFLOAD_ON: wherever
	 * the PMD has it. DROCE_OFFLOAD_OFF: never.
	 */
	uint32_t tx_ip_csum;
	/**
	 * TCP segmentation offload for RAW_PACKET TSO WRs, on a port droce
	 * configured whose PMD has it (RTE_ETH_TX_OFFLOAD_TCP_TSO with the
	 * IPv4 and TCP checksums): DROCE_OFFLOAD_AUTO (0) and
	 * DROCE_OFFLOAD_ON use it wherever the PMD has it; DROCE_OFFLOAD_OFF:
	 * droce cuts every segment itself.
	 */
	uint32_t tx_tso;
	/**
	 * Receive filtering by rte_flow rules, on a port droce configured:
	 * only UDP 4791 to the device's MAC and IP addresses passes, the rest
	 * of UDP 4791 is dropped in the NIC. DROCE_OFFLOAD_AUTO (0): on
	 * devices that DMA, where the PMD takes the rules; DROCE_OFFLOAD_ON:
	 * wherever the PMD takes them; DROCE_OFFLOAD_OFF: never. Either way
	 * the port is not promiscuous unless the PMD cannot add droce's MAC,
	 * and the transport drops frames for other addresses itself.
	 */
	uint32_t rx_hw_filter;
	/** Congestion notification (droce_dev_conf.no_ecn,
	 *  np_min_time_between_cnps_ns, np_cnp_dscp; 0: the defaults). */
	uint8_t no_ecn;
	uint32_t np_min_time_between_cnps_ns;
	uint8_t np_cnp_dscp;
	/** Congestion control (droce_dev_conf.cc: DCQCN unless
	 *  DROCE_CC_NONE); the line rate DCQCN starts from in Mbit/s (0:
	 *  the link speed the PMD reports, else 100000); DCQCN's parameters
	 *  when dcqcn_set (droce_dcqcn_params_default first), else
	 *  ConnectX's defaults. */
	uint8_t cc;
	uint32_t line_rate_mbps;
	uint8_t dcqcn_set;
	struct droce_dcqcn_params dcqcn;
	/** DROCE_CC_DELAY's target queueing delay (ns) and additive
	 *  increase (Mbit/s per round trip); 0: the defaults */
	uint32_t delay_target_ns;
	uint32_t delay_ai_mbps;
};

#define DROCE_OFFLOAD_AUTO	0
#define DROCE_OFFLOAD_ON	1
#define DROCE_OFFLOAD_OFF	2

#define DROCE_ZC_AUTO	0
#define DROCE_ZC_OFF	UINT32_MAX
/** DROCE_ZC_AUTO's threshold on devices that DMA. */
#define DROCE_ZC_DEFAULT_MIN	512

/** Zero + defaults. */
void droce_port_conf_init(struct droce_port_conf *conf);

/**
 * Open a port: EAL init if needed, ethdev setup (or attach), device
 * creation, progress per mode. NULL and errno on failure.
 */
struct droce_port *droce_port_open(const struct droce_port_conf *conf);

/** Stop progress, drain, close the ethdev (if droce configured it), free. */
void droce_port_close(struct droce_port *port);

/** The transport device of this port. */
struct droce_dev *droce_port_dev(struct droce_port *port);

/**
 * Make progress on queue q from the calling thread if nobody else is
 * (try-lock). Returns the number of frames handled, 0 if busy/idle.
 */
int droce_port_progress(struct droce_port *port, uint32_t q);

/**
 * droce_port_lock for a caller that makes progress under the lock (posts
 * then calls droce_port_progress_locked, polls its CQ after a pass): the
 * progress thread keeps off the queue while the application drives it.
 */
void droce_port_lock_driving(struct droce_port *port, uint32_t q);

/**
 * Make progress on queue q; the caller holds its lock (droce_port_lock),
 * e.g. right after posting, so that the frames leave at once. The
 * application drives the queue, as with droce_port_lock_driving.
 */
int droce_port_progress_locked(struct droce_port *port, uint32_t q);

/**
 * droce_port_lock_driving, then droce_port_progress_locked, with one
 * clock read: an application's poll. Returns the pass's work, with the
 * lock held (droce_port_unlock).
 */
int droce_port_poll_driving(struct droce_port *port, uint32_t q);

/**
 * Run fn(arg) with queue q's owner lock held (fast-path calls into the
 * transport from an application thread: post, poll).
 */
void droce_port_lock(struct droce_port *port, uint32_t q);
void droce_port_unlock(struct droce_port *port, uint32_t q);

/**
 * Wait, up to max_ns, until no frame waits to be transmitted and none was
 * handed to the PMD for quiet_ns: a process about to exit with frames it
 * completed (UD and UC complete once sent) lets them leave and its peer
 * read them (net_memif drops what is in the ring once the peer is gone).
 * Needs the progress thread (DROCE_PROGRESS_THREAD).
 */
void droce_port_tx_settle(struct droce_port *port, uint64_t quiet_ns,
		uint64_t max_ns);

/**
 * During a pass over queue q (its lock held, as in a transport callback):
 * write 1 to eventfd fd once the lock is let go. A sleeper woken under the
 * lock may preempt its holder and then spin on the lock it needs next
 * (ibv_req_notify_cq), up to a millisecond on few CPUs.
 */
void droce_port_signal(struct droce_port *port, uint32_t q, int fd);

/** Wake the progress thread (after a post while it backs off). */
void droce_port_kick(struct droce_port *port, uint32_t q);

/**
 * A CQ of queue q was armed (ibv_req_notify_cq): its owner is about to
 * wait on a completion channel, whose wake-up is the thread's to give. The
 * thread takes the queue at once and serves it without naps for a while
 * after each arm (100 ms), as a NIC's interrupt would come;
 * queues nobody awaits keep their naps.
 */
void droce_port_armed(struct droce_port *port, uint32_t q);

/**
 * The owner of queue q waits for completion events awake (on): it drives
 * the queue itself (ibv_get_cq_event's spin) and, having got its event,
 * polls the CQ, posts and arms again before the next spin. The thread
 * keeps off the queue as beside a polling application, unless the owner
 * stops driving it for 20 us (preempted, or asleep elsewhere), and its
 * arms do not wake the thread. Off: the owner goes to sleep on the
 * channel; the thread takes the queue at once.
 */
void droce_port_spinning(struct droce_port *port, uint32_t q, int on);

/** Where a pass over a queue calls the hooks. */
enum droce_hook_phase {
	DROCE_HOOK_BEFORE = 0,	/**< before receiving: new work from outside */
	DROCE_HOOK_AFTER = 1,	/**< after the transport's progress, before the transmit flush */
};

/**
 * Code an owner of the port (droced) runs inside every pass over a queue,
 * with the queue's lock held (so it may post to and poll the queue's QPs
 * and CQs), from whichever thread makes the pass: the progress thread,
 * an lcore in droce_port_run, or droce_port_progress.
 */
struct droce_port_hooks {
	/** @return work done (0 when none): the progress thread keeps
	 * spinning while passes do work. */
	int (*poll)(void *arg, uint32_t q, enum droce_hook_phase phase);
	/**
	 * The progress thread is about to nap (sleeping = 1; it then waits
	 * on droce_port_wake_fd, up to its nap) or has woken (0). With 1,
	 * return nonzero if work arrived meanwhile: the nap is skipped.
	 * Called without any queue lock.
	 */
	int (*sleep)(void *arg, int sleeping);
	void *arg;
};

/** Set (or with NULL clear) the hooks. Call before traffic or while no pass
 * runs: it takes every queue's lock. @return 0, -EINVAL. */
int droce_port_set_hooks(struct droce_port *port, const struct droce_port_hooks *hooks);

/** The eventfd the progress thread naps on (DROCE_PROGRESS_THREAD): writing
 * 8 bytes (any nonzero count) to it wakes the thread, as droce_port_kick
 * does. -1 in the other modes. Whoever holds it can also stop the thread
 * (read it dry while the thread reads it, block writers by filling it):
 * give it to no one untrusted; droced gives each application a pipe of
 * its own and droce_port_set_wake_extra an epoll set of them. */
int droce_port_wake_fd(const struct droce_port *port);

/**
 * Another descriptor the progress thread's naps end on when it is
 * readable (-1: none): the owner's, which it drains in its sleep hook
 * (sleeping = 0), or the nap after ends at once. @return 0, or -EINVAL
 * outside DROCE_PROGRESS_THREAD.
 */
int droce_port_set_wake_extra(struct droce_port *port, int fd);

/**
 * The application stops driving queue q for now (its sends all completed;
 * it may wait on memory next): the progress thread takes the queue after
 * its next short nap instead of waiting for the application to go quiet.
 * Only where the process has CPUs to spare (4 or more): on fewer, a
 * spinning thread would take the application's core.
 */
void droce_port_handoff(struct droce_port *port, uint32_t q);

/**
 * DROCE_PROGRESS_LCORES: the loop for one queue (lcore index modulo the
 * queues), to rte_eal_remote_launch(droce_port_run, port, lcore). It
 * returns when droce_port_close is called, which waits for it.
 */
int droce_port_run(void *port_and_queue);

/**
 * Resolve the MAC for a destination GID (ARP for IPv4-mapped, ND for IPv6,
 * the static table first; a multicast GID maps to its group MAC with no
 * question asked). Blocks up to timeout_ms while making progress.
 * @return 0, -ETIMEDOUT, -EHOSTUNREACH.
 */
int droce_port_resolve(struct droce_port *port, const uint8_t dgid[16],
		uint8_t mac[6], uint32_t timeout_ms);

/**
 * An address vector from verbs' ah_attr (RoCE: is_global, a valid source
 * GID index), its MAC resolved by droce_port_resolve.
 * @return 0, -EINVAL (no GRH, no such source GID), -EHOSTUNREACH (no
 *   neighbour answered within timeout_ms; also logged).
 */
int droce_port_av_from_ah(struct droce_port *port, const struct ibv_ah_attr *ah,
		struct droce_av *av, uint32_t timeout_ms);

/**
 * Attach a UD QP of the port's device to multicast group gid
 * (droce_qp_attach_mcast, with the QP's queue held), then open the NIC to
 * the group's MAC: its multicast list, or all multicast where the PMD
 * keeps no list (telemetry's mc_filter says which). On a port the
 * application configured (attach_port_id) the NIC's filters are its own.
 * A frame to the group is handed to every queue whose QPs joined a group.
 *
 * @return 0, -EINVAL (not a UD QP, gid not multicast), -ENOMEM (the
 *   device's group limits).
 */
int droce_port_attach_mcast(struct droce_port *port, struct droce_qp *qp,
		const uint8_t gid[16]);

/**
 * Detach a QP from group gid; the NIC's filter drops the group's MAC with
 * the group's last QP.
 * @return 0, -EINVAL (the QP is not attached to gid).
 */
int droce_port_detach_mcast(struct droce_port *port, struct droce_qp *qp,
		const uint8_t gid[16]);

/** Static neighbour entry (peers that do not answer ARP). */
int droce_port_add_neighbor(struct droce_port *port, const uint8_t gid[16],
		const uint8_t mac[6]);

/** What fault injection did on a port so far. */
struct droce_fault_stats {
	uint64_t dropped, duplicated, reordered, corrupted, delayed;
	uint64_t ce_marked;
};
void droce_port_fault_stats(struct droce_port *port, struct droce_fault_stats *rx,
		struct droce_fault_stats *tx);

/**
 * A queue's NIC-side counters (the transport's own, per queue and per QP,
 * are droce_tp_queue_stats and droce_qp_stats). Also in telemetry
 * (/droce/port, summed over the queues).
 */
struct droce_port_queue_stats {
	uint64_t rx_pkts;	/* frames received from the PMD */
	uint64_t tx_pkts;	/* frames the PMD took */
	uint64_t tx_drops;	/* dropped: the PMD's ring stayed full */
	uint64_t tx_kicks;	/* af_packet TX ring kicks (not droce traffic) */
	uint64_t handoffs;	/* received here for a QP on another queue */
	uint64_t handoff_drops;	/* of those, dropped: the owner's ring full */
	uint64_t non_roce;	/* not RoCEv2 (ARP, ND, anything else) */
	uint64_t arp;		/* of those, ARP and ND handled */
	uint64_t tx_zc_copied;	/* zero-copy frames copied for want of mbufs */
	uint64_t rx_bursts;	/* receive bursts that returned frames */
	uint64_t tx_bursts;	/* transmit bursts the PMD took frames from */
	/* IPv4 frames whose header sum the PMD filled (nic_tx_ip_csum) */
	uint64_t tx_ip_csum_offloaded;
	/* TSO frames the PMD cut (nic_tx_tso), and those dropped for want
	 * of mbufs to chain their payload in (nic_tx_tso_drops) */
	uint64_t tx_tso_offloaded, tx_tso_drops;
	uint64_t loopback;	/* frames to the port's own MAC, looped back */
	uint64_t loopback_drops;	/* of those, dropped: the loop was full */
	/* the progress thread's passes over the queue while a CQ of it was
	 * awaited (droce_port_armed), and its naps meanwhile: none, unless
	 * the owner stayed armed and quiet past 100 ms */
	uint64_t awaited_passes, awaited_naps;
};

/** Read queue q's counters (takes the queue's lock). @return 0, -EINVAL. */
int droce_port_queue_stats(struct droce_port *port, uint32_t q,
		struct droce_port_queue_stats *st);

/** Change fault injection at run time. */
int droce_port_set_fault(struct droce_port *port, const struct droce_fault_conf *rx,
		const struct droce_fault_conf *tx);

/** Bytes of payload from which frames go zero-copy; 0: never. */
uint32_t droce_port_zc_min(const struct droce_port *port);

/** The port's IPv4 address (host order) and DPDK port id. */
uint32_t droce_port_ipv4(const struct droce_port *port);
uint16_t droce_port_id(const struct droce_port *port);

/** Monotonic nanoseconds (TSC-based), the clock droce passes to the transport. */
uint64_t droce_now_ns(void);

#ifdef __cplusplus
}
#endif

#endif /* DROCE_H */
