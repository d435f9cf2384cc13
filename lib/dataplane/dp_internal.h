/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

#ifndef DP_INTERNAL_H
#define DP_INTERNAL_H

/* lib/dataplane internals. */

#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <rte_ethdev.h>
#include <rte_log.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_ring.h>
#include <rte_spinlock.h>

#include "droce.h"

extern int droce_dp_logtype;
#define DP_LOG(level, fmt, ...) rte_log(RTE_LOG_ ## level, droce_dp_logtype, \
	"droce: " fmt "\n", ##__VA_ARGS__)

/* DROCE_CONF's text (dp_conf.c): path NULL when unset, err why it could
 * not be read whole (EFBIG: past 8191 bytes), else 0 */
const char *dp_conf_file(const char **path, int *err);

#define DP_BURST	32
#define DP_MAX_QUEUES	16
#define DP_NEIGH	64
#define DP_TXQ_LEN	512
#define DP_TSO_SEGS	64	/* net_tap's rte_gso makes no more */
#define DP_SIGNALS	16	/* deferred wake-ups a pass holds */
/*
 * How long after a CQ's arm the progress thread serves its queue without
 * naps: event-driven programs re-arm after each completion, so while
 * their traffic flows the thread spins for them, as a NIC's interrupt is
 * there at once; one armed and idle this long gets the idle naps again
 * (a frame after 100 ms of quiet waits up to 100 us, then 1 ms).
 */
#define DP_ARMED_SPIN_MS	100
/* how long a lock waiter spins before it yields (~1 ms at 2.5 GHz) */
#define DP_LOCK_SPIN_CYCLES 2500000

struct dp_fault_stats {
	uint64_t dropped, duplicated, reordered, corrupted, delayed;
	uint64_t ce_marked;
};

#define DP_DELAY_Q 1024

struct dp_fault {
	struct droce_fault_conf conf;
	uint64_t rng;
	struct rte_mbuf *held;		/* reorder: released after the next */
	struct dp_fault_stats st;
	uint64_t seen;			/* RDMA frames so far, for conf.frames */
	/* delay: a FIFO (one delay for all, so due times stay in order) */
	struct rte_mbuf *dq[DP_DELAY_Q];
	uint64_t dq_due[DP_DELAY_Q];
	uint32_t dq_head, dq_tail;
};

static inline int
dp_fault_active(const struct dp_fault *f)
{
	return f->conf.drop_ppm || f->conf.dup_ppm || f->conf.reorder_ppm ||
		f->conf.corrupt_ppm || f->conf.delay_ppm || f->conf.ce_ppm ||
		f->dq_head != f->dq_tail;
}

struct dp_queue {
	struct droce_port *port;
	uint32_t index;
	rte_spinlock_t lock;		/* owner of the transport queue */
	/* threads in queue_lock that did not get it at once: the progress
	 * loops' try-locks keep off meanwhile (they would win every time) */
	volatile uint32_t lock_waiters;
	struct droce_tp_queue *tq;
	/* frames built by the transport, waiting for rte_eth_tx_burst */
	struct rte_mbuf *txq[DP_TXQ_LEN];
	uint32_t ntx;
	struct rte_ring *handoff;	/* frames for this queue from others */
	/* transmit mbufs handed out but not used, kept for the next call */
	struct rte_mbuf *stash[DP_BURST * 2];
	uint32_t nstash;
	uint64_t rx_pkts, tx_pkts, tx_drops, handoffs, non_roce, arp;
	uint64_t handoff_drops;		/* the owner's ring was full */
	uint64_t zc_copied;		/* zero-copy frames copied (no mbufs) */
	uint64_t ip_csum_offloaded;	/* IPv4 frames, the sum offloaded */
	uint64_t tso_offloaded, tso_drops;	/* TSO frames to the PMD */
	/* frames to the port's own MAC (loopback, dp_txbuf.c): they go back
	 * to the receive path at the next pass, never to the PMD */
	struct rte_mbuf *lb[DP_TXQ_LEN];
	uint32_t nlb;
	uint64_t loopback, loopback_drops;
	uint64_t rx_bursts, tx_bursts;	/* PMD calls that moved frames */
	volatile int kicked;
	volatile uint64_t app_poll_tsc;	/* last inline progress by the app */
	volatile int handed_off;	/* droce_port_handoff since the nap */
	volatile uint64_t handoff_tsc;	/* the last droce_port_handoff */
	/* the application came back 20 us or more after a hand-off */
	volatile uint64_t away_tsc;
	/* the last arm of a CQ of the queue (droce_port_armed): the thread
	 * serves the queue without naps for DP_ARMED_SPIN_MS after it */
	volatile uint64_t armed_tsc;
	/* its owner waits for completion events awake (spinning in
	 * ibv_get_cq_event, or between two waits): droce_port_spinning */
	volatile int owner_spins;
	uint64_t armed_passes;		/* passes the thread spun for one */
	uint64_t awaited_naps;		/* naps while one was awaited */
	/* eventfds to signal once the lock is let go (droce_port_signal) */
	int signal_fd[DP_SIGNALS];
	uint32_t nsignal;
	volatile uint64_t last_tx_ns;	/* the last burst handed to the PMD */
	/* net_af_packet's TX ring kick (dp_queue_tx_kick) */
	uint64_t kick_seen, kick_until, kick_next, kicks;
} __rte_cache_aligned;

/* How the NIC filters what it receives (dp_filter.c). */
enum dp_rx_filter {
	DP_RXF_NIC_MAC = 0,	/* its unicast MAC filter, not promiscuous */
	DP_RXF_PROMISC,		/* promiscuous: the transport filters alone */
	DP_RXF_FLOW,		/* rte_flow rules by MAC, IP and UDP port */
};
#define DP_MAX_FLOWS	(DROCE_MAX_GIDS + 2)

/* How the NIC passes the device's multicast groups (dp_filter.c). */
enum dp_mc_filter {
	DP_MCF_NONE = 0,	/* no group joined */
	DP_MCF_LIST,		/* the groups' MACs in its multicast list */
	DP_MCF_ALLMULTI,	/* all multicast: it keeps no list */
	DP_MCF_PMD,		/* neither: what passes is the PMD's own */
};
#define DP_MAX_MC	64	/* MACs in the NIC's list; more: allmulti */

struct dp_neigh {
	uint8_t gid[16];
	uint8_t mac[6];
	uint8_t valid;
	uint8_t is_static;
};

struct droce_port {
	struct droce_port_conf conf;
	char name[64];
	uint16_t port_id;
	int owns_port;			/* droce probed and configured it */
	uint32_t nb_queues;
	struct rte_mempool *pool;
	struct droce_dev *dev;
	struct dp_queue q[DP_MAX_QUEUES];
	struct rte_ether_addr mac;
	uint32_t ipv4;
	uint32_t mtu;
	uint32_t zc_min;		/* zero-copy transmit from, 0: off */
	int zc_dma;			/* the device DMAs: spans need an IOVA */
	int memif;			/* a net_memif port droce started */
	int memif_warm;			/* its shared regions are faulted in */
	/* progress thread */
	pthread_t thread;
	int thread_running;
	int lcores_running;		/* lcores inside droce_port_run */
	int tx_kick;			/* kick the PMD's TX ring when idle */
	int tx_ip_csum_offload;		/* the PMD fills IPv4 header sums in */
	/* TCP segmentation by the PMD (droce_tp_io's tso_*), 0: none */
	uint32_t tso_segs;
	int tso_tap;			/* net_tap's rte_gso limits (dp_port.c) */
	/* an AH to the port's own GID was made: frames to its own MAC loop */
	volatile int loopback;
	int wake_fd;			/* droce_port_kick wakes a sleeping thread */
	int wake_extra;			/* the owner's: naps end on it too */
	volatile int sleeping;
	/* the thread naps longer than DP_DRIVE_NAP_MIN_US beside a polling
	 * application: a hand-off must wake it */
	volatile int long_nap;
	/* DP_ARMED_SPIN_MS in TSC cycles (set by the progress thread) */
	uint64_t armed_cycles;
	uint64_t away_cycles;		/* what counts as away (20 us) */
	uint64_t spun_cycles;		/* DP_SPUN_NAP_MAX_US */
	uint64_t recent_cycles;		/* a latency loop's memory (2 ms) */
	/* the owner's code in each pass (droce_port_set_hooks) */
	struct droce_port_hooks hooks;
	int spare_cpu;			/* the thread can spin on a CPU of its own */
	volatile int stop;
	/* neighbours */
	rte_spinlock_t neigh_lock;
	struct dp_neigh neigh[DP_NEIGH];
	/* receive filtering in the NIC */
	enum dp_rx_filter rx_filter;
	int mac_added;			/* droce's MAC added as a unicast address */
	struct rte_flow *flows[DP_MAX_FLOWS];
	uint32_t nb_flows;
	/* the NIC's multicast filter, serialised by mc_lock */
	rte_spinlock_t mc_lock;
	enum dp_mc_filter mc_filter;
	uint32_t mc_macs;		/* group MACs it was last given */
	int allmulti;			/* droce enabled all multicast */
	/* fault injection */
	struct dp_fault frx, ftx;
	rte_spinlock_t fault_lock;
};

/* dp_eal.c: per process (EAL, log type, clock) */
/* EAL with args, once per process; 0 or a negative errno. */
int dp_eal_init(const char *args);

/* dp_arp.c */
int dp_arp_input(struct droce_port *p, struct dp_queue *q, struct rte_mbuf *m);
int dp_arp_request(struct droce_port *p, uint32_t ip);
int dp_neigh_lookup(struct droce_port *p, const uint8_t gid[16], uint8_t mac[6]);
void dp_neigh_learn(struct droce_port *p, const uint8_t gid[16],
		const uint8_t mac[6], int is_static);

/* dp_nd.c */
int dp_nd_input(struct droce_port *p, struct dp_queue *q, struct rte_mbuf *m);
int dp_nd_solicit(struct droce_port *p, const uint8_t target[16]);

/* dp_filter.c */
void dp_filter_setup(struct droce_port *p, const struct droce_dev_conf *dc,
		bool dmas);
void dp_filter_teardown(struct droce_port *p);
const char *dp_filter_mode_name(const struct droce_port *p);
const char *dp_filter_mc_name(const struct droce_port *p);

/* dp_fault.c */
uint16_t dp_fault_apply(struct droce_port *p, struct dp_fault *f,
		struct rte_mbuf **pkts, uint16_t n, uint16_t cap, uint64_t now);
void dp_fault_free(struct dp_fault *f);

/* dp_telemetry.c */
void dp_telemetry_register(struct droce_port *p);
void dp_telemetry_unregister(struct droce_port *p);

/* dp_txbuf.c: transmit buffers, zero-copy chains, the transmit queue */
void dp_txbuf_attach(struct dp_queue *q);
void dp_txbuf_release(struct dp_queue *q);
void dp_queue_tx(struct dp_queue *q, struct rte_mbuf *m);
void dp_queue_flush(struct dp_queue *q);
void dp_queue_tx_kick(struct dp_queue *q, uint64_t now);
/* Up to cap looped-back frames of q, oldest first, into m. */
uint16_t dp_queue_loop_take(struct dp_queue *q, struct rte_mbuf **m,
		uint16_t cap);
/* A zero-copy frame's chain behind its header mbuf h (its payload copied
 * behind the headers when no mbufs are left; a TSO frame, which has no
 * room for that, is freed and -1 returned); exported for its test. */
int dp_zc_chain(struct dp_queue *q, struct rte_mbuf *h, struct droce_txbuf *b);
/* A TSO frame's offload request to the PMD (dp_txbuf.c); for its test. */
void dp_tso_offload(struct dp_queue *q, struct rte_mbuf *m,
		const struct droce_txbuf *b);

/* dp_poll.c: passes over a queue, its lock */
/* One pass over q at tsc (queue_poll); the caller holds q->lock. Returns
 * work done. */
int dp_queue_poll(struct dp_queue *q, uint64_t tsc);

/* The progress loops' lock: not while a queue_lock waits (it goes
 * first), nor while another holds it. */
static inline int
dp_queue_trylock(struct dp_queue *q)
{
	return q->lock_waiters == 0 && rte_spinlock_trylock(&q->lock);
}

static inline void
dp_efd_write(int fd)
{
	uint64_t one = 1;

	if (write(fd, &one, sizeof(one)) != sizeof(one))
		return;		/* saturated: the reader wakes anyway */
}

/* Let the queue's lock go, then give the wake-ups its pass deferred. */
static inline void
dp_queue_unlock(struct dp_queue *q)
{
	int fds[DP_SIGNALS];
	uint32_t i, n = q->nsignal;

	if (likely(n == 0)) {
		rte_spinlock_unlock(&q->lock);
		return;
	}
	memcpy(fds, q->signal_fd, n * sizeof(fds[0]));
	q->nsignal = 0;
	rte_spinlock_unlock(&q->lock);
	for (i = 0; i < n; i++)
		dp_efd_write(fds[i]);
}

/* dp_thread.c: the progress thread, its naps and what wakes it */
int dp_progress_thread_start(struct droce_port *p);
void dp_progress_stop(struct droce_port *p);

/* dp_memif.c: start and close around net_memif's quirks */
int dp_port_start(struct droce_port *p, const struct rte_eth_dev_info *info);
void dp_port_stop_close(struct droce_port *p);
/* At close: every queue's frames still queued to the PMD, or freed. */
void dp_port_tx_release(struct droce_port *p);
void dp_mtu_cap(struct droce_port *p);
/* Once the link is up: fault in the shared regions before traffic does. */
void dp_memif_prefault(struct droce_port *p);
/* The port's queues may be polled from now on (on 1) / no longer (0). */
void dp_port_track(struct droce_port *p, int on);
/* Every tracked net_memif port's queue locks taken (no burst runs), and
 * given back: around net_memif's freeing of its regions
 * (dp_memif_static.c). */
void dp_memif_bursts_hold(void);
void dp_memif_bursts_release(void);

/* dp_port.c: open, close, counters */
bool dp_dev_dmas(const struct rte_eth_dev_info *info);

/* droce_now_ns of a TSC already read: one clock read per pass */
uint64_t dp_tsc_ns(uint64_t tsc);

/*
 * Time from then to now, two readings of a clock that another thread, on
 * another CPU, may have taken: the vCPUs' TSCs differ by a few hundred
 * cycles, so a stamp the application wrote a moment ago can lie just
 * after the progress thread's now. That is 0, not 2^64 ago: read as long
 * ago, it sent the thread onto the queue of an application polling on the
 * other CPU, 3,400 times a second in a 64 B ib_send_bw.
 */
static inline uint64_t
dp_since(uint64_t now, uint64_t then)
{
	return (int64_t)(now - then) > 0 ? now - then : 0;
}

/*
 * DCQCN's parameters as configuration keys: DROCE_RP_<NAME> for mlx5's
 * cc_params rp_<name> (doc/congestion.md). X(NAME, field, min, max, form,
 * help) for dp_conf.c (which field) and dp_conf_check.c (which values).
 */
#define DP_RP_KEYS(X) \
	X(RATE_REDUCE_MONITOR_PERIOD, rp_rate_reduce_monitor_period, 0, \
		1000000, "US", "at most one rate cut per QP in this many " \
		"microseconds (4)") \
	X(INITIAL_ALPHA_VALUE, rp_initial_alpha_value, 0, 1024, "N", \
		"alpha at a QP's first CNP, of 1024 (1023)") \
	X(DCE_TCP_G, rp_dce_tcp_g, 0, 1024, "N", \
		"alpha kept per period, of 1024 (1019)") \
	X(DCE_TCP_RTT, rp_dce_tcp_rtt, 1, 1000000, "US", \
		"alpha's period in microseconds (1)") \
	X(TIME_RESET, rp_time_reset, 0, 100000000, "US", \
		"microseconds between rate increases by timer; 0: none (300)") \
	X(BYTE_RESET, rp_byte_reset, 0, 1u << 31, "BYTES", \
		"bytes sent between rate increases; 0: none (32767)") \
	X(THRESHOLD, rp_threshold, 0, 31, "N", \
		"increase stages of fast recovery before additive, and " \
		"before hyper increase (1)") \
	X(AI_RATE, rp_ai_rate, 0, 1000000, "MBPS", \
		"additive increase, Mbit/s (5)") \
	X(HAI_RATE, rp_hai_rate, 0, 1000000, "MBPS", \
		"hyper increase, Mbit/s (50)") \
	X(GD, rp_gd, 0, 30, "N", \
		"a cut takes alpha / 2^GD of the rate, alpha of 1024 (11)") \
	X(MIN_DEC_FAC, rp_min_dec_fac, 1, 100, "PERCENT", \
		"a cut keeps at least this share of the rate (50)") \
	X(MIN_RATE, rp_min_rate, 1, 1000000, "MBPS", \
		"the lowest rate, Mbit/s (1)") \
	X(RATE_TO_SET_ON_FIRST_CNP, rp_rate_to_set_on_first_cnp, 0, \
		1000000, "MBPS", "the rate a QP's first CNP cuts from; 0: " \
		"the line rate (0)") \
	X(CLAMP_TGT_RATE, rp_clamp_tgt_rate, 0, 1, "0|1", \
		"the target rate follows every cut (0)") \
	X(CLAMP_TGT_RATE_ATI, rp_clamp_tgt_rate_ati, 0, 1, "0|1", \
		"the target rate follows a cut after an increase by " \
		"timer (1)")

#endif
