/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * Ports and progress: bring up a DPDK ethdev (or take one the application
 * configured), create the transport device on it, and move frames between
 * the NIC queues and the transport's owner queues. One progress function
 * per queue; who calls it (a background thread, the application inline, an
 * lcore) is the port's progress mode.
 */

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>

#include <rte_alarm.h>
#include <rte_bus.h>
#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_devargs.h>
#include <rte_eal.h>
#include <rte_ether.h>
#include <rte_kvargs.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <rte_malloc.h>
#include <rte_memory.h>

#include "dp_internal.h"

RTE_LOG_REGISTER_DEFAULT(droce_dp_logtype, INFO);
#define DP_LOG(level, fmt, ...) rte_log(RTE_LOG_ ## level, droce_dp_logtype, \
	"droce: " fmt "\n", ##__VA_ARGS__)

static uint64_t tsc_hz;

uint64_t
droce_now_ns(void)
{
	static uint64_t mult;	/* ns per cycle, 32.32 fixed point */
	uint64_t c = rte_get_tsc_cycles();

	if (mult == 0) {
		tsc_hz = rte_get_tsc_hz();
		mult = (uint64_t)(((unsigned __int128)1000000000ull << 32) / tsc_hz);
	}
	/* a multiply, not three divisions: this runs on every pass */
	return (uint64_t)(((unsigned __int128)c * mult) >> 32);
}

void
droce_port_conf_init(struct droce_port_conf *c)
{
	memset(c, 0, sizeof(*c));
	c->attach_port_id = -1;
	c->nb_queues = 1;
	c->mtu = 1500;
	c->mode = DROCE_PROGRESS_THREAD;
	c->name = "droce0";
}

/*
 * EAL once per process. rte_eal_init pins the calling thread to the main
 * lcore: an application that embeds droce (or an unmodified verbs program)
 * keeps the CPUs it had, so the affinity is restored afterwards.
 */
static int
eal_init(const char *args)
{
	static int done;
	char buf[1024], *argv[64], *tok, *save = NULL;
	int argc = 0, rc;
	cpu_set_t cpus;

	if (done)
		return 0;
	snprintf(buf, sizeof(buf), "droce %s%s", args ? args : "",
		getenv("DROCE_NO_HUGE") && (args == NULL ||
		strstr(args, "--no-huge") == NULL) ? " --no-huge -m 512" : "");
	for (tok = strtok_r(buf, " \t", &save); tok && argc < 63;
			tok = strtok_r(NULL, " \t", &save))
		argv[argc++] = tok;
	argv[argc] = NULL;
	sched_getaffinity(0, sizeof(cpus), &cpus);
	rc = rte_eal_init(argc, argv);
	sched_setaffinity(0, sizeof(cpus), &cpus);
	if (rc < 0 && rte_errno != EALREADY)
		return -rte_errno;
	done = 1;
	return 0;
}

/* ---- transmit buffers for the transport ---- */

static void
io_tx_free(void *arg, struct droce_txbuf *bufs, uint32_t n)
{
	struct dp_queue *q = arg;
	uint32_t i;

	for (i = 0; i < n; i++) {
		if (q->nstash < RTE_DIM(q->stash))
			q->stash[q->nstash++] = bufs[i].cookie;
		else
			rte_pktmbuf_free(bufs[i].cookie);
	}
}

/*
 * The transport asks for a batch and often uses one buffer of it: what it
 * gives back is stashed for its next call instead of going back to the
 * mempool (alloc 32 + free 31 per packet showed at the top of a profile).
 */
static uint32_t
io_tx_alloc(void *arg, struct droce_txbuf *bufs, uint32_t n, uint32_t cap)
{
	struct dp_queue *q = arg;
	uint32_t i;

	if (n > DP_BURST)
		n = DP_BURST;
	/*
	 * Back-pressure: hand out no more buffers than the transmit queue
	 * can hold, so a sender without a window (UC, UD) waits for the NIC
	 * instead of losing frames to a full queue.
	 */
	if (DP_TXQ_LEN - q->ntx < n)
		dp_queue_flush(q);
	if (DP_TXQ_LEN - q->ntx < n)
		n = DP_TXQ_LEN - q->ntx;
	if (n == 0)
		return 0;
	if (q->nstash < n) {
		uint32_t want = DP_BURST;

		if (rte_pktmbuf_alloc_bulk(q->port->pool, q->stash + q->nstash,
				want) != 0) {
			want = n - q->nstash;
			if (rte_pktmbuf_alloc_bulk(q->port->pool,
					q->stash + q->nstash, want) != 0)
				want = 0;
		}
		q->nstash += want;
		if (q->nstash < n)
			n = q->nstash;
	}
	/*
	 * No rte_pktmbuf_reset: the stash holds mbufs fresh from
	 * rte_pktmbuf_alloc_bulk (which resets them) or handed out and given
	 * back unsent (io_tx_free), whose metadata nobody wrote. Resetting
	 * a batch of 32 for the one frame a pass often sends was a tenth of
	 * a perftest client's profile.
	 */
	for (i = 0; i < n; i++) {
		struct rte_mbuf *m = q->stash[--q->nstash];

		bufs[i].data = rte_pktmbuf_mtod(m, uint8_t *);
		bufs[i].cap = rte_pktmbuf_tailroom(m);
		bufs[i].cookie = m;
		if (bufs[i].cap < cap) {
			q->stash[q->nstash++] = m;
			io_tx_free(q, bufs, i);
			return 0;
		}
	}
	return n;
}

/* ---- zero-copy transmit ---- */

/* An external segment let go of its MR's memory. */
static void
zc_free(void *addr __rte_unused, void *mr)
{
	droce_mr_zc_put(mr);
}

/*
 * Whether a span can be handed to a device that DMAs: DPDK must know the
 * memory (for its IOVA), contiguous in IOVA over the span.
 */
static int
zc_mem_ok(void *arg, const void *addr, uint32_t len)
{
	const char *a = addr;

	RTE_SET_USED(arg);
	if (rte_mem_virt2memseg(addr, NULL) == NULL ||
			rte_mem_virt2memseg(a + len - 1, NULL) == NULL)
		return 0;
	return rte_mem_virt2iova(a + len - 1) - rte_mem_virt2iova(a) ==
		len - 1;
}

/* n mbufs from the stash or the pool; 0 or -1 with none taken. */
static int
stash_take(struct dp_queue *q, struct rte_mbuf **m, uint32_t n)
{
	if (q->nstash < n) {
		if (rte_pktmbuf_alloc_bulk(q->port->pool, q->stash + q->nstash,
				DP_BURST) == 0)
			q->nstash += DP_BURST;
		else if (rte_pktmbuf_alloc_bulk(q->port->pool, m, n) == 0)
			return 0;
		else
			return -1;
	}
	q->nstash -= n;
	memcpy(m, q->stash + q->nstash, n * sizeof(*m));
	return 0;
}

/*
 * Headers in h, then one external mbuf per span (its shared info in its
 * own, unused data room, which lives until the mbuf is freed, so no
 * allocation), then pad and ICRC in one more mbuf. Without mbufs the
 * payload is copied behind the headers: the buffer has room for it.
 */
void
dp_zc_chain(struct dp_queue *q, struct rte_mbuf *h, struct droce_txbuf *b)
{
	struct rte_mbuf *seg[DROCE_TX_MAX_SPANS + 1], *prev = h, *t;
	uint32_t i, len = b->len;

	h->data_len = (uint16_t)b->len;
	if (stash_take(q, seg, b->nspan + 1) != 0) {
		for (i = 0; i < b->nspan; i++) {
			memcpy(b->data + len, b->span[i].addr, b->span[i].len);
			len += b->span[i].len;
			droce_mr_zc_put(b->span[i].mr);
		}
		memcpy(b->data + len, b->tail, b->tail_len);
		len += b->tail_len;
		h->data_len = (uint16_t)len;
		h->pkt_len = len;
		q->zc_copied++;
		return;
	}
	for (i = 0; i < b->nspan; i++) {
		struct rte_mbuf *m = seg[i];
		struct rte_mbuf_ext_shared_info *sh = m->buf_addr;
		void *addr = (void *)(uintptr_t)b->span[i].addr;

		sh->free_cb = zc_free;
		sh->fcb_opaque = b->span[i].mr;
		rte_mbuf_ext_refcnt_set(sh, 1);
		rte_pktmbuf_attach_extbuf(m, addr, q->port->zc_dma ?
			rte_mem_virt2iova(addr) : (rte_iova_t)(uintptr_t)addr,
			(uint16_t)b->span[i].len, sh);
		m->data_len = (uint16_t)b->span[i].len;
		len += b->span[i].len;
		prev->next = m;
		prev = m;
	}
	t = seg[b->nspan];
	memcpy(rte_pktmbuf_mtod(t, uint8_t *), b->tail, b->tail_len);
	t->data_len = (uint16_t)b->tail_len;
	prev->next = t;
	h->nb_segs = (uint16_t)(b->nspan + 2);
	h->pkt_len = len + b->tail_len;
}

/*
 * The PMD fills an IPv4 frame's header checksum in: say where the headers
 * are, and zero the field as DPDK asks (the ICRC does not cover it).
 */
static void
tx_ip_csum(struct dp_queue *q, struct rte_mbuf *m)
{
	uint8_t *f = rte_pktmbuf_mtod(m, uint8_t *);
	uint16_t l2 = RTE_ETHER_HDR_LEN;
	uint16_t et = (uint16_t)(f[12] << 8 | f[13]);

	if (et == RTE_ETHER_TYPE_VLAN) {
		l2 += 4;
		et = (uint16_t)(f[16] << 8 | f[17]);
	}
	if (et != RTE_ETHER_TYPE_IPV4)
		return;
	m->l2_len = l2;
	m->l3_len = (uint16_t)((f[l2] & 0xf) * 4);
	m->ol_flags |= RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_IP_CKSUM;
	f[l2 + 10] = 0;
	f[l2 + 11] = 0;
	q->tx_ip_csum++;
}

static void
io_tx_submit(void *arg, struct droce_txbuf *bufs, uint32_t n)
{
	struct dp_queue *q = arg;
	uint32_t i;

	for (i = 0; i < n; i++) {
		struct rte_mbuf *m = bufs[i].cookie;

		if (bufs[i].nspan) {
			dp_zc_chain(q, m, &bufs[i]);
		} else {
			m->data_len = (uint16_t)bufs[i].len;
			m->pkt_len = bufs[i].len;
		}
		if (q->port->tx_ip_csum)
			tx_ip_csum(q, m);
		dp_queue_tx(q, m);
	}
}

void
dp_queue_tx(struct dp_queue *q, struct rte_mbuf *m)
{
	if (q->ntx == DP_TXQ_LEN)
		dp_queue_flush(q);
	if (q->ntx == DP_TXQ_LEN) {
		/* the NIC is full: drop, the transport retransmits */
		rte_pktmbuf_free(m);
		q->tx_drops++;
		return;
	}
	q->txq[q->ntx++] = m;
}

void
dp_queue_flush(struct dp_queue *q)
{
	struct droce_port *p = q->port;
	uint16_t n, sent = 0;

	if (q->ntx == 0 && p->ftx.dq_head == p->ftx.dq_tail)
		return;
	if (dp_fault_active(&p->ftx)) {
		rte_spinlock_lock(&p->fault_lock);
		q->ntx = dp_fault_apply(p, &p->ftx, q->txq, (uint16_t)q->ntx,
			DP_TXQ_LEN, droce_now_ns());
		rte_spinlock_unlock(&p->fault_lock);
	}
	while (sent < q->ntx) {
		n = rte_eth_tx_burst(p->port_id, (uint16_t)q->index,
			q->txq + sent, (uint16_t)(q->ntx - sent));
		if (n == 0)
			break;
		sent += n;
		q->tx_bursts++;
	}
	q->tx_pkts += sent;
	if (sent < q->ntx)
		memmove(q->txq, q->txq + sent, (q->ntx - sent) * sizeof(q->txq[0]));
	q->ntx -= sent;
}

/* ---- progress ---- */

static void
deliver(struct dp_queue *q, struct rte_mbuf **m, uint16_t n, uint64_t now)
{
	const uint8_t *frames[DP_BURST * 2];
	uint32_t lens[DP_BURST * 2];
	uint16_t i;

	RTE_ASSERT(n <= DP_BURST * 2);
	for (i = 0; i < n; i++) {
		frames[i] = rte_pktmbuf_mtod(m[i], const uint8_t *);
		lens[i] = rte_pktmbuf_data_len(m[i]);
	}
	droce_tp_rx_burst(q->tq, frames, lens, n, now);
	rte_pktmbuf_free_bulk(m, n);
}

/*
 * net_af_packet (22.11) copies frames into its mmap'd TX ring and counts
 * them sent even when the kernel's sendto() stops early (a frame dropped on
 * egress: qdisc, nftables); the rest of the ring leaves only at the next
 * sendto(), and the PMD makes none for an empty burst. A requester that has
 * sent its window then waits for ACKs and sends nothing, so the tail of its
 * window (or a responder's last ACK) sat in the ring until the
 * retransmission timer fired, every time: deep windows under egress loss ran
 * out of retries. So for 5 ms after droce's last transmission, every
 * 200 us, send one minimal frame to our own MAC (IEEE local experimental
 * EtherType 0x88b5, which no stack takes): its burst kicks the ring.
 */
static void
tx_kick(struct dp_queue *q, uint64_t now)
{
	struct droce_port *p = q->port;
	struct rte_ether_hdr *eh;
	struct rte_mbuf *m;

	if (q->tx_pkts != q->kick_seen) {
		q->kick_seen = q->tx_pkts;
		q->kick_until = now + 5000000;
		q->kick_next = now + 200000;
		return;
	}
	if (now >= q->kick_until || now < q->kick_next)
		return;
	q->kick_next = now + 200000;
	m = rte_pktmbuf_alloc(p->pool);
	if (m == NULL)
		return;
	eh = (struct rte_ether_hdr *)rte_pktmbuf_append(m, RTE_ETHER_MIN_LEN -
		RTE_ETHER_CRC_LEN);
	memset(eh, 0, RTE_ETHER_MIN_LEN - RTE_ETHER_CRC_LEN);
	rte_ether_addr_copy(&p->mac, &eh->dst_addr);
	rte_ether_addr_copy(&p->mac, &eh->src_addr);
	eh->ether_type = rte_cpu_to_be_16(0x88b5);
	if (rte_eth_tx_burst(p->port_id, (uint16_t)q->index, &m, 1) == 1) {
		q->kicks++;
		/* not counted in tx_pkts: not droce traffic */
	} else {
		rte_pktmbuf_free(m);
	}
}

/* One pass over queue q; the caller holds q->lock. Returns work done. */
static int
queue_poll(struct dp_queue *q)
{
	struct droce_port *p = q->port;
	/* faults may duplicate: room for twice a burst */
	struct rte_mbuf *in[DP_BURST * 2], *mine[DP_BURST * 2];
	uint16_t n, i, nm = 0;
	uint64_t now = droce_now_ns();
	int work = 0;

	n = rte_eth_rx_burst(p->port_id, (uint16_t)q->index, in, DP_BURST);
	if (dp_fault_active(&p->frx)) {
		rte_spinlock_lock(&p->fault_lock);
		n = dp_fault_apply(p, &p->frx, in, n, DP_BURST * 2, now);
		rte_spinlock_unlock(&p->fault_lock);
	}
	q->rx_pkts += n;
	q->rx_bursts += n != 0;
	work += n;
	for (i = 0; i < n; i++) {
		struct rte_mbuf *m = in[i];
		const uint8_t *f = rte_pktmbuf_mtod(m, const uint8_t *);
		int64_t dqpn;

		if (m->nb_segs > 1 && rte_pktmbuf_linearize(m) != 0) {
			rte_pktmbuf_free(m);
			continue;
		}
		dqpn = droce_wire_peek_dqpn(f, rte_pktmbuf_data_len(m));
		if (dqpn < 0) {
			q->non_roce++;
			if (dp_arp_input(p, q, m) == 0 || dp_nd_input(p, q, m) == 0)
				q->arp++;
			rte_pktmbuf_free(m);
			continue;
		}
		/* Frames for a QP another queue owns go there by ring. */
		if (p->nb_queues > 1) {
			uint32_t owner = droce_qpn_queue(p->dev, (uint32_t)dqpn);

			if (owner != q->index) {
				if (rte_ring_enqueue(p->q[owner].handoff, m) != 0) {
					/* the owner is that far behind: the
					 * transport retransmits */
					rte_pktmbuf_free(m);
					q->handoff_drops++;
				}
				q->handoffs++;
				continue;
			}
		}
		mine[nm++] = m;
	}
	if (nm)
		deliver(q, mine, nm, now);
	if (q->handoff != NULL) {
		n = (uint16_t)rte_ring_dequeue_burst(q->handoff, (void **)mine,
			DP_BURST, NULL);
		if (n) {
			deliver(q, mine, n, now);
			work += n;
		}
	}
	work += (int)droce_tp_progress(q->tq, now, DP_BURST * 2);
	dp_queue_flush(q);
	if (p->tx_kick)
		tx_kick(q, now);
	return work;
}

void
droce_port_handoff(struct droce_port *p, uint32_t q)
{
	/* no wake-up call on the application's path: with CPUs to spare
	 * the thread's naps are short (5 us) */
	if (p->spare_cpu)
		p->q[q].app_poll_tsc = 0;
}

int
droce_port_progress(struct droce_port *p, uint32_t qi)
{
	struct dp_queue *q = &p->q[qi];
	int work;

	if (!rte_spinlock_trylock(&q->lock))
		return 0;
	work = queue_poll(q);
	q->app_poll_tsc = rte_rdtsc();
	rte_spinlock_unlock(&q->lock);
	return work;
}

int
droce_port_progress_locked(struct droce_port *p, uint32_t qi)
{
	p->q[qi].app_poll_tsc = rte_rdtsc();
	return queue_poll(&p->q[qi]);
}

/*
 * Take a queue's lock: spin up to ~1 ms, then yield between tries. Where
 * threads outnumber cores the holder may be preempted, and a waiter
 * spinning on the core it needs keeps it off for a whole time slice
 * (~4 ms); two processes doing so to each other on two cores made each
 * round trip milliseconds. A pass can hold the lock for tens of
 * microseconds (a 64 KB message is 64 frames): yielding after 20 us cost
 * ib_write_bw on two cores a third of its rate, after 1 ms nothing.
 */
static void
queue_lock(struct dp_queue *q)
{
	uint64_t start;

	if (likely(rte_spinlock_trylock(&q->lock)))
		return;
	start = rte_rdtsc();
	while (!rte_spinlock_trylock(&q->lock)) {
		if (rte_rdtsc() - start < DP_LOCK_SPIN_CYCLES)
			rte_pause();
		else
			sched_yield();
	}
}

void
droce_port_lock(struct droce_port *p, uint32_t q)
{
	queue_lock(&p->q[q]);
}

void
droce_port_lock_driving(struct droce_port *p, uint32_t q)
{
	/* the application drives this queue: the thread keeps off it, also
	 * while we wait for the lock it holds */
	p->q[q].app_poll_tsc = rte_rdtsc();
	queue_lock(&p->q[q]);
}

void
droce_port_unlock(struct droce_port *p, uint32_t q)
{
	rte_spinlock_unlock(&p->q[q].lock);
}

void
droce_port_kick(struct droce_port *p, uint32_t q)
{
	uint64_t one = 1;

	p->q[q].kicked = 1;
	if (p->sleeping && p->wake_fd >= 0 &&
			write(p->wake_fd, &one, sizeof(one)) < 0)
		return;		/* already signalled */
}

/* Sleep up to us microseconds, or until droce_port_kick. */
static void
thread_sleep(struct droce_port *p, uint32_t us)
{
	struct pollfd pfd = { .fd = p->wake_fd, .events = POLLIN };
	struct timespec ts = { .tv_sec = 0, .tv_nsec = (long)us * 1000 };
	uint64_t v;

	p->sleeping = 1;
	rte_smp_mb();
	if (!p->q[0].kicked && !p->stop && ppoll(&pfd, 1, &ts, NULL) > 0 &&
			read(p->wake_fd, &v, sizeof(v)) < 0)
		v = 0;
	p->sleeping = 0;
}

static int
queue_busy(struct dp_queue *q, uint64_t now)
{
	return q->ntx || droce_tp_queue_busy(q->tq) ||
		droce_tp_next_deadline(q->tq) <= now + 20000;
}

/*
 * The background progress thread: spins while there is work, then backs
 * off in growing sleeps (up to 100 us) so that it does not take a core
 * from an application that polls inline on a small machine. A queue the
 * application polled (droce_port_progress) in the last few microseconds
 * is left to it: an application spinning on ibv_poll_cq does the work
 * itself, and the thread takes over when it stops (sleeps on a completion
 * channel, spins on memory).
 */
static void *
progress_thread(void *arg)
{
	struct droce_port *p = arg;
	uint64_t app_window, app_recent_window, last_work = 0;
	uint32_t i;

	/* short sleeps must stay short: 1 us of timer slack, not 50 */
	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	/* an lcore id of its own gives this thread mempool caches (without
	 * one, every mbuf comes from the pool's ring) */
	if (rte_thread_register() != 0)
		DP_LOG(DEBUG, "progress thread without an lcore id: %s",
			rte_strerror(rte_errno));
	droce_now_ns();		/* sets tsc_hz */
	app_window = tsc_hz / 50000;	/* 20 us */
	app_recent_window = tsc_hz / 500;	/* 2 ms */

	while (!p->stop) {
		int work = 0, busy = 0;
		uint32_t app_driven = 0, app_recent = 0;
		uint64_t now = droce_now_ns();
		uint64_t tsc = rte_rdtsc();

		for (i = 0; i < p->nb_queues; i++) {
			struct dp_queue *q = &p->q[i];

			if (!q->kicked && tsc - q->app_poll_tsc < app_recent_window)
				app_recent++;
			if (q->kicked) {
				q->kicked = 0;
				q->app_poll_tsc = 0;	/* it waits for us now */
				busy = 1;
			} else if (tsc - q->app_poll_tsc < app_window) {
				app_driven++;
				continue;
			}
			if (rte_spinlock_trylock(&q->lock)) {
				work += queue_poll(q);
				busy |= queue_busy(q, now);
				rte_spinlock_unlock(&q->lock);
			} else {
				busy = 1;	/* an application polls it */
			}
		}
		if (work || busy) {
			last_work = now;
			/*
			 * Every queue is one the application polled within
			 * 2 ms; it was only preempted. Spinning here would
			 * keep it off the core (two busy threads per process
			 * on a small machine): do this pass's work, then
			 * yield until it is back.
			 */
			if (app_recent == p->nb_queues)
				thread_sleep(p, 20);
			continue;
		}
		if (app_driven == p->nb_queues) {
			/* the application polls every queue itself: keep off
			 * its cores, look again when it may have stopped
			 * (soon where it has CPUs to spare: the nap is then
			 * the delay before the thread takes a handed-off
			 * queue, and costs no application a core) */
			thread_sleep(p, p->spare_cpu ? 5 : 50);
			continue;
		}
		/* idle: spin 200 us (a reply is often that close), then
		 * short sleeps up to 2 ms, then long ones */
		if (now - last_work < 200000)
			continue;
		thread_sleep(p, now - last_work < 2000000 ? 10 : 100);
	}
	if (rte_lcore_id() != LCORE_ID_ANY)
		rte_thread_unregister();
	return NULL;
}

int
droce_port_run(void *arg)
{
	struct droce_port *p = arg;
	uint32_t qi = rte_lcore_index(rte_lcore_id()) >= 0 ?
		(uint32_t)rte_lcore_index(rte_lcore_id()) % p->nb_queues : 0;

	__atomic_fetch_add(&p->lcores_running, 1, __ATOMIC_ACQ_REL);
	while (!__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE))
		droce_port_progress(p, qi);
	__atomic_fetch_sub(&p->lcores_running, 1, __ATOMIC_ACQ_REL);
	return 0;
}

/* ---- open and close ---- */

static void
stop_close_cb(void *arg)
{
	struct droce_port *p = arg;

	rte_eth_dev_stop(p->port_id);
	rte_eth_dev_close(p->port_id);
	__atomic_store_n(&p->closed, 1, __ATOMIC_RELEASE);
}

/*
 * Stop and close the ethdev from EAL's interrupt thread (an alarm): that
 * is where net_memif handles a peer's disconnect, and in DPDK 22.11 the
 * two disconnects running at once (both ends closing together, as every
 * two-process benchmark does) free the shared regions twice.
 */
static void
port_stop_close(struct droce_port *p)
{
	int i;

	if (rte_eal_alarm_set(1, stop_close_cb, p) == 0) {
		for (i = 0; i < 10000; i++) {
			if (__atomic_load_n(&p->closed, __ATOMIC_ACQUIRE))
				return;
			usleep(1000);
		}
		/* the interrupt thread never ran it: do it here */
		if (rte_eal_alarm_cancel(stop_close_cb, p) <= 0)
			return;
	}
	stop_close_cb(p);
}

/* How long a port may take to find its peer when both start together. */
#define PORT_START_NS	15000000000ull
/* How long a net_memif client waits for its link before connecting again. */
#define MEMIF_LINK_NS	2000000000ull

/*
 * A link whose far end is another process (net_memif's client role)
 * cannot start before that process has created it: two programs started
 * together race, so keep trying until the deadline.
 */
static int
port_start(struct droce_port *p, uint64_t deadline)
{
	int rc, said = 0;

	for (;;) {
		rc = rte_eth_dev_start(p->port_id);
		if (rc == 0 || droce_now_ns() >= deadline)
			return rc;
		if (!said++)
			DP_LOG(INFO, "port %u not ready (%s), waiting for its peer",
				p->port_id, strerror(-rc));
		usleep(50000);
	}
}

/* A port droce probed itself as net_memif with the client role (the
 * PMD's default). */
static bool
memif_client(const struct droce_port *p, const struct rte_eth_dev_info *info)
{
	const char *role, *d = p->conf.devargs;

	if (d == NULL || info->driver_name == NULL ||
			strcmp(info->driver_name, "net_memif") != 0)
		return false;
	role = strstr(d, "role=");
	if (role == NULL)
		return true;
	role += 5;
	return strncmp(role, "server", 6) != 0 && strncmp(role, "master", 6) != 0;
}

/*
 * net_memif in DPDK 22.11 (Debian's 22.11.11 included) carries a frame
 * longer than one of its buffers (devarg bsize, 2048 by default) over
 * several descriptors, marking all but the last "next". Its transmit never
 * clears that mark on a packet's first descriptor, so once a slot that held
 * the middle of a long frame is reused for a one-buffer frame, the receiver
 * chains that frame into the next slot, runs past the ring's head and hands
 * out up to 65,535 stale frames. Mixing long frames with short ones (data
 * then READ requests, data and ACKs) is what RDMA does; a jumbo MTU over
 * small memif buffers stalled QPs until their retry count ran out. So droce
 * never makes a frame longer than one memif buffer.
 */
static uint32_t
memif_mtu_cap(const struct rte_eth_dev_info *info)
{
	const struct rte_devargs *da;
	struct rte_kvargs *kv;
	const char *v;
	unsigned long bsize = 2048; /* the PMD's default */

	if (info->driver_name == NULL || info->device == NULL ||
			strcmp(info->driver_name, "net_memif") != 0)
		return UINT32_MAX;
	da = rte_dev_devargs(info->device);
	if (da != NULL && da->args != NULL) {
		kv = rte_kvargs_parse(da->args, NULL);
		if (kv != NULL) {
			v = rte_kvargs_get(kv, "bsize");
			if (v != NULL && strtoul(v, NULL, 10) != 0)
				bsize = strtoul(v, NULL, 10);
			rte_kvargs_free(kv);
		}
	}
	return bsize > RTE_ETHER_HDR_LEN ?
		(uint32_t)(bsize - RTE_ETHER_HDR_LEN) : RTE_ETHER_MIN_MTU;
}

/* Cap the port MTU where the PMD cannot carry longer frames safely. */
static void
mtu_cap(struct droce_port *p)
{
	struct rte_eth_dev_info info;
	uint32_t cap;

	if (rte_eth_dev_info_get(p->port_id, &info) != 0)
		return;
	cap = memif_mtu_cap(&info);
	if (p->mtu <= cap)
		return;
	/* a warning only where it costs path MTU (9000 over bsize=8192: no) */
	if (droce_eth_mtu_to_path_mtu(cap) != droce_eth_mtu_to_path_mtu(p->mtu))
		DP_LOG(WARNING, "port %u: MTU %u -> %u: net_memif frames must "
			"fit one buffer (bsize=%u; give bsize=%u for this MTU)",
			p->port_id, p->mtu, cap, cap + RTE_ETHER_HDR_LEN,
			p->mtu + RTE_ETHER_HDR_LEN);
	else
		DP_LOG(DEBUG, "port %u: MTU %u -> %u (net_memif bsize %u)",
			p->port_id, p->mtu, cap, cap + RTE_ETHER_HDR_LEN);
	p->mtu = cap;
}

/*
 * net_memif (22.11) listens from the moment the server process probes
 * its port, but refuses clients ("ID not found") until that process starts
 * it; a client refused so is disconnected for good although its own start
 * succeeded, and no frame ever passes. Two programs opening droce together
 * (perftest's two sides after their TCP exchange) fell into that window
 * about one run in two hundred. So a client whose link is not up within a
 * while stops its port and starts it again: a new connection.
 */
static int
memif_client_link_wait(struct droce_port *p)
{
	uint64_t deadline = droce_now_ns() + PORT_START_NS;
	uint64_t retry = droce_now_ns() + MEMIF_LINK_NS;
	struct rte_eth_link link;
	int rc;

	for (;;) {
		memset(&link, 0, sizeof(link));
		if (rte_eth_link_get_nowait(p->port_id, &link) == 0 &&
				link.link_status == RTE_ETH_LINK_UP)
			return 0;
		if (droce_now_ns() >= deadline) {
			/* as before this wait: the port is started, ARP
			 * will say that nobody answers */
			DP_LOG(WARNING, "port %u: net_memif link still down",
				p->port_id);
			return 0;
		}
		if (droce_now_ns() >= retry) {
			DP_LOG(INFO, "port %u: net_memif link not up, connecting again",
				p->port_id);
			rte_eth_dev_stop(p->port_id);
			rc = port_start(p, deadline);
			if (rc != 0)
				return rc;
			retry = droce_now_ns() + MEMIF_LINK_NS;
		}
		usleep(1000);
	}
}

/* The device's bus name, NULL if it has none. */
static const char *
dev_bus(const struct rte_eth_dev_info *info)
{
	if (info->device == NULL || rte_dev_bus(info->device) == NULL)
		return NULL;
	return rte_bus_name(rte_dev_bus(info->device));
}

/* Whether the device reads frames itself (DMA): any bus but vdev, whose
 * PMDs copy every frame in software. */
static bool
dev_dmas(const struct rte_eth_dev_info *info)
{
	const char *bus = dev_bus(info);

	return bus == NULL || strcmp(bus, "vdev") != 0;
}

/* DROCE_OFFLOAD_AUTO: on where the device DMAs (a NIC fills the sum in
 * for free), off on virtual devices (their PMD would compute it itself). */
static bool
ip_csum_wanted(const struct droce_port *p, const struct rte_eth_dev_info *info)
{
	if (p->conf.tx_ip_csum == DROCE_OFFLOAD_ON)
		return true;
	return p->conf.tx_ip_csum == DROCE_OFFLOAD_AUTO && dev_dmas(info);
}

static int
port_setup(struct droce_port *p)
{
	struct rte_eth_conf ec;
	struct rte_eth_dev_info info;
	uint32_t i;
	int rc;
	uint16_t mtu = (uint16_t)p->mtu;

	memset(&ec, 0, sizeof(ec));
	rc = rte_eth_dev_info_get(p->port_id, &info);
	if (rc)
		return rc;
	if (p->nb_queues > info.max_rx_queues || p->nb_queues > info.max_tx_queues)
		return -EINVAL;
	if (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS)
		ec.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
	if ((info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_IPV4_CKSUM) &&
			ip_csum_wanted(p, &info)) {
		ec.txmode.offloads |= RTE_ETH_TX_OFFLOAD_IPV4_CKSUM;
		p->tx_ip_csum = 1;
		DP_LOG(INFO, "port %u: IPv4 header checksum offloaded",
			p->port_id);
	}
	rc = rte_eth_dev_configure(p->port_id, (uint16_t)p->nb_queues,
		(uint16_t)p->nb_queues, &ec);
	if (rc)
		return rc;
	/*
	 * Not every virtual PMD can set an MTU (net_memif has no mtu_set and
	 * carries frames of any length up to its max_mtu): keep the one asked
	 * for where the PMD says it fits, else take the PMD's.
	 */
	rc = rte_eth_dev_set_mtu(p->port_id, mtu);
	if (rc != 0 && !(rc == -ENOTSUP && mtu <= info.max_mtu))
		rte_eth_dev_get_mtu(p->port_id, &mtu);
	DP_LOG(DEBUG, "port %u: MTU %u (asked %u, set_mtu %d, max %u)",
		p->port_id, mtu, p->mtu, rc, info.max_mtu);
	p->mtu = mtu ? mtu : 1500;
	for (i = 0; i < p->nb_queues; i++) {
		rc = rte_eth_rx_queue_setup(p->port_id, (uint16_t)i, 1024,
			(unsigned int)rte_eth_dev_socket_id(p->port_id), NULL,
			p->pool);
		if (rc)
			return rc;
		rc = rte_eth_tx_queue_setup(p->port_id, (uint16_t)i, 1024,
			(unsigned int)rte_eth_dev_socket_id(p->port_id), NULL);
		if (rc)
			return rc;
	}
	rc = port_start(p, droce_now_ns() + PORT_START_NS);
	if (rc)
		return rc;
	if (memif_client(p, &info)) {
		rc = memif_client_link_wait(p);
		if (rc)
			return rc;
	}
	rte_eth_promiscuous_enable(p->port_id);
	return 0;
}

/*
 * Which PMD this is decides two things: net_af_packet needs its TX ring
 * kicked (tx_kick), and zero-copy transmit is worth it only where the
 * device reads the frame itself; virtual devices copy it anyway.
 */
static void
zc_setup(struct droce_port *p)
{
	struct rte_eth_dev_info di;
	const char *bus;

	if (rte_eth_dev_info_get(p->port_id, &di) != 0)
		return;
	if (di.driver_name != NULL && strcmp(di.driver_name, "net_af_packet") == 0)
		p->tx_kick = 1;
	bus = dev_bus(&di);
	p->zc_dma = dev_dmas(&di);
	p->zc_min = p->conf.tx_zc_min == DROCE_ZC_AUTO ?
		(p->zc_dma ? DROCE_ZC_DEFAULT_MIN : 0) :
		p->conf.tx_zc_min == DROCE_ZC_OFF ? 0 : p->conf.tx_zc_min;
	if (!(di.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS))
		p->zc_min = 0;
	/* a port the application configured may not take multi-segment
	 * frames (DPDK 22.11 has no stable call to ask): only if asked */
	if (!p->owns_port && p->conf.tx_zc_min == DROCE_ZC_AUTO)
		p->zc_min = 0;
	DP_LOG(DEBUG, "port %u: bus %s, zero-copy transmit from %u bytes",
		p->port_id, bus ? bus : "?", p->zc_min);
}

uint32_t
droce_port_zc_min(const struct droce_port *p)
{
	return p->zc_min;
}

struct droce_port *
droce_port_open(const struct droce_port_conf *conf)
{
	static const uint8_t zero[6];
	struct droce_dev_conf dc;
	struct droce_port *p;
	char pool_name[RTE_MEMPOOL_NAMESIZE + 64];
	uint32_t i, buf;
	int rc;

	rc = eal_init(conf->eal_args);
	if (rc) {
		errno = -rc;
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (p != NULL)
		p->wake_fd = -1;
	if (p == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	p->conf = *conf;
	snprintf(p->name, sizeof(p->name), "%s", conf->name ? conf->name : "droce0");
	p->nb_queues = conf->nb_queues ? conf->nb_queues : 1;
	if (p->nb_queues > DP_MAX_QUEUES)
		goto einval;
	p->mtu = conf->mtu ? conf->mtu : 1500;
	rte_spinlock_init(&p->neigh_lock);
	rte_spinlock_init(&p->fault_lock);
	p->frx.conf = conf->fault_rx;
	p->ftx.conf = conf->fault_tx;
	p->frx.rng = conf->fault_rx.seed ? conf->fault_rx.seed : 1;
	p->ftx.rng = conf->fault_tx.seed ? conf->fault_tx.seed : 2;

	/* mbufs big enough for a frame of the port MTU in one segment */
	buf = RTE_PKTMBUF_HEADROOM + p->mtu + 128;
	if (buf < RTE_MBUF_DEFAULT_BUF_SIZE)
		buf = RTE_MBUF_DEFAULT_BUF_SIZE;
	/* names are global in DPDK's shared memory: keep them short */
	snprintf(pool_name, RTE_MEMPOOL_NAMESIZE, "drc%d_%.12s", getpid(),
		p->name);
	p->pool = rte_pktmbuf_pool_create(pool_name, 8191 * p->nb_queues, 256, 0,
		(uint16_t)buf, (int)rte_socket_id());
	if (p->pool == NULL) {
		DP_LOG(ERR, "mbuf pool: %s", rte_strerror(rte_errno));
		goto fail;
	}
	if (conf->attach_port_id >= 0) {
		p->port_id = (uint16_t)conf->attach_port_id;
	} else {
		char name[128], *c;

		if (conf->devargs == NULL)
			goto einval;
		snprintf(name, sizeof(name), "%s", conf->devargs);
		c = strchr(name, ',');
		if (c)
			*c = 0;
		rc = rte_dev_probe(conf->devargs);
		if (rc) {
			DP_LOG(ERR, "probe %s: %s", conf->devargs, strerror(-rc));
			goto fail;
		}
		if (rte_eth_dev_get_port_by_name(name, &p->port_id) != 0) {
			DP_LOG(ERR, "no ethdev named %s", name);
			goto fail;
		}
		p->owns_port = 1;
		rc = port_setup(p);
		if (rc) {
			DP_LOG(ERR, "port %u setup: %s", p->port_id, strerror(-rc));
			goto fail;
		}
	}
	if (memcmp(conf->mac, zero, 6) != 0)
		memcpy(p->mac.addr_bytes, conf->mac, 6);
	else
		rte_eth_macaddr_get(p->port_id, &p->mac);
	p->ipv4 = conf->ipv4;
	mtu_cap(p);
	zc_setup(p);

	memset(&dc, 0, sizeof(dc));
	memcpy(dc.mac, p->mac.addr_bytes, 6);
	dc.eth_mtu = p->mtu;
	dc.nb_queues = p->nb_queues;
	droce_gid_link_local(dc.gids[0].gid, dc.mac);
	dc.gids[0].valid = 1;
	if (p->ipv4) {
		droce_gid_from_ipv4(dc.gids[1].gid, p->ipv4);
		dc.gids[1].valid = 1;
	}
	{
		static const uint8_t none[16];

		/* a configured IPv6 address is GID 2 (rxe lists it after) */
		if (memcmp(conf->ipv6, none, 16) != 0) {
			memcpy(dc.gids[2].gid, conf->ipv6, 16);
			dc.gids[2].valid = 1;
		}
	}
	dc.seed = rte_get_tsc_cycles() ^ (uint64_t)getpid() << 32;
	p->dev = droce_dev_create(&dc);
	if (p->dev == NULL)
		goto fail;
	for (i = 0; i < p->nb_queues; i++) {
		struct dp_queue *q = &p->q[i];
		struct droce_tp_io io = {
			.tx_alloc = io_tx_alloc,
			.tx_submit = io_tx_submit,
			.tx_free = io_tx_free,
			.arg = q,
			.zc_min = p->zc_min,
			.zc_mem_ok = p->zc_dma ? zc_mem_ok : NULL,
		};

		q->port = p;
		q->index = i;
		rte_spinlock_init(&q->lock);
		q->tq = droce_dev_queue(p->dev, i);
		droce_tp_queue_set_io(q->tq, &io);
		if (p->nb_queues > 1) {
			char rn[RTE_RING_NAMESIZE + 64];

			snprintf(rn, RTE_RING_NAMESIZE, "drh%d_%.8s_%u", getpid(),
				p->name, i);
			q->handoff = rte_ring_create(rn, 4096, (int)rte_socket_id(),
				RING_F_SC_DEQ);
			if (q->handoff == NULL)
				goto fail;
		}
	}
	dp_telemetry_register(p);
	if (conf->mode == DROCE_PROGRESS_THREAD) {
		cpu_set_t cpus;

		/* an application thread, this thread and room to spare */
		p->spare_cpu = sched_getaffinity(0, sizeof(cpus), &cpus) == 0 &&
			CPU_COUNT(&cpus) >= 4;
		p->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (pthread_create(&p->thread, NULL, progress_thread, p) != 0)
			goto fail;
		p->thread_running = 1;
	}
	return p;
einval:
	errno = EINVAL;
fail:
	rc = errno ? errno : EIO;
	droce_port_close(p);
	errno = rc;
	return NULL;
}

void
droce_port_close(struct droce_port *p)
{
	uint32_t i;

	if (p == NULL)
		return;
	/* stop polling first, drain, then close (memif: never mid-burst) */
	p->stop = 1;
	if (p->thread_running) {
		droce_port_kick(p, 0);
		pthread_join(p->thread, NULL);
	}
	/* the application's lcores leave droce_port_run before p goes */
	while (__atomic_load_n(&p->lcores_running, __ATOMIC_ACQUIRE))
		rte_pause();
	if (p->wake_fd >= 0)
		close(p->wake_fd);
	dp_telemetry_unregister(p);
	for (i = 0; i < p->nb_queues; i++) {
		struct dp_queue *q = &p->q[i];

		if (q->tq == NULL)
			continue;
		rte_spinlock_lock(&q->lock);
		dp_queue_flush(q);
		while (q->ntx)
			rte_pktmbuf_free(q->txq[--q->ntx]);
		while (q->nstash)
			rte_pktmbuf_free(q->stash[--q->nstash]);
		rte_spinlock_unlock(&q->lock);
		if (q->handoff) {
			struct rte_mbuf *m;

			while (rte_ring_dequeue(q->handoff, (void **)&m) == 0)
				rte_pktmbuf_free(m);
			rte_ring_free(q->handoff);
		}
	}
	while (p->frx.dq_head != p->frx.dq_tail)
		rte_pktmbuf_free(p->frx.dq[p->frx.dq_tail++ % DP_DELAY_Q]);
	while (p->ftx.dq_head != p->ftx.dq_tail)
		rte_pktmbuf_free(p->ftx.dq[p->ftx.dq_tail++ % DP_DELAY_Q]);
	if (p->owns_port)
		port_stop_close(p);
	if (p->dev)
		droce_dev_destroy(p->dev);
	if (p->pool)
		rte_mempool_free(p->pool);
	free(p);
}

struct droce_dev *
droce_port_dev(struct droce_port *p)
{
	return p->dev;
}

int
droce_port_set_fault(struct droce_port *p, const struct droce_fault_conf *rx,
		const struct droce_fault_conf *tx)
{
	rte_spinlock_lock(&p->fault_lock);
	if (rx) {
		p->frx.conf = *rx;
		p->frx.rng = rx->seed ? rx->seed : 1;
		p->frx.seen = 0;
	}
	if (tx) {
		p->ftx.conf = *tx;
		p->ftx.rng = tx->seed ? tx->seed : 2;
		p->ftx.seen = 0;
	}
	rte_spinlock_unlock(&p->fault_lock);
	return 0;
}

int
droce_port_resolve(struct droce_port *p, const uint8_t dgid[16], uint8_t mac[6],
		uint32_t timeout_ms)
{
	uint64_t end = droce_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	uint64_t next = 0;
	uint32_t ip, q;

	if (dp_neigh_lookup(p, dgid, mac) == 0)
		return 0;
	while (droce_now_ns() < end) {
		if (droce_now_ns() >= next) {
			if (droce_gid_is_ipv4(dgid, &ip))
				dp_arp_request(p, ip);
			else
				dp_nd_solicit(p, dgid);
			next = droce_now_ns() + 100000000ull;
		}
		if (p->conf.mode != DROCE_PROGRESS_THREAD) {
			/* the answer lands on whichever queue the NIC
			 * picks (RSS, af_packet's fanout) */
			for (q = 0; q < p->nb_queues; q++)
				droce_port_progress(p, q);
		} else
			usleep(200);
		if (dp_neigh_lookup(p, dgid, mac) == 0)
			return 0;
	}
	return -ETIMEDOUT;
}

int
droce_port_queue_stats(struct droce_port *p, uint32_t qi,
		struct droce_port_queue_stats *st)
{
	struct dp_queue *q;

	if (p == NULL || st == NULL || qi >= p->nb_queues)
		return -EINVAL;
	q = &p->q[qi];
	rte_spinlock_lock(&q->lock);
	st->rx_pkts = q->rx_pkts;
	st->tx_pkts = q->tx_pkts;
	st->tx_drops = q->tx_drops;
	st->tx_kicks = q->kicks;
	st->handoffs = q->handoffs;
	st->handoff_drops = q->handoff_drops;
	st->non_roce = q->non_roce;
	st->arp = q->arp;
	st->tx_zc_copied = q->zc_copied;
	st->rx_bursts = q->rx_bursts;
	st->tx_bursts = q->tx_bursts;
	st->tx_ip_csum = q->tx_ip_csum;
	rte_spinlock_unlock(&q->lock);
	return 0;
}

int
droce_port_add_neighbor(struct droce_port *p, const uint8_t gid[16],
		const uint8_t mac[6])
{
	dp_neigh_learn(p, gid, mac, 1);
	return 0;
}

uint32_t
droce_port_ipv4(const struct droce_port *p)
{
	return p->ipv4;
}

uint16_t
droce_port_id(const struct droce_port *p)
{
	return p->port_id;
}

void
droce_port_fault_stats(struct droce_port *p, struct droce_fault_stats *rx,
		struct droce_fault_stats *tx)
{
	rte_spinlock_lock(&p->fault_lock);
	if (rx) {
		rx->dropped = p->frx.st.dropped;
		rx->duplicated = p->frx.st.duplicated;
		rx->reordered = p->frx.st.reordered;
		rx->corrupted = p->frx.st.corrupted;
		rx->delayed = p->frx.st.delayed;
	}
	if (tx) {
		tx->dropped = p->ftx.st.dropped;
		tx->duplicated = p->ftx.st.duplicated;
		tx->reordered = p->ftx.st.reordered;
		tx->corrupted = p->ftx.st.corrupted;
		tx->delayed = p->ftx.st.delayed;
	}
	rte_spinlock_unlock(&p->fault_lock);
}
