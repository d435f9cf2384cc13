/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * Progress: one pass over one queue (queue_poll), the queue locks that
 * let the application, the progress thread and lcores share it, and the
 * passes the application runs inline or droce_port_run on an lcore. The
 * background thread and its naps are dp_thread.c.
 */

#include <sched.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_lcore.h>

#include "dp_internal.h"

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
 * A frame to a multicast group, received with several queues: every
 * queue whose QPs joined a group gets a reference (the transport delivers
 * only to the attached QPs of the queue it runs on, as for any frame);
 * this one keeps it if its own QPs joined one, or if nobody did, to count
 * the drop. Whether the frame is the group's each queue decides.
 * Returns 1 if this queue keeps it.
 */
static int
mcast_fanout(struct dp_queue *q, struct rte_mbuf *m)
{
	struct droce_port *p = q->port;
	uint32_t j, given = 0;

	for (j = 0; j < p->nb_queues; j++) {
		struct dp_queue *o = &p->q[j];

		if (j == q->index || droce_tp_queue_mcast_groups(o->tq) == 0)
			continue;
		rte_mbuf_refcnt_update(m, 1);
		if (rte_ring_enqueue(o->handoff, m) != 0) {
			rte_pktmbuf_free(m);	/* drops our extra reference */
			q->handoff_drops++;
		}
		q->handoffs++;
		given++;
	}
	if (droce_tp_queue_mcast_groups(q->tq) != 0 || given == 0)
		return 1;
	rte_pktmbuf_free(m);
	return 0;
}

/*
 * A frame that is not RoCE, ARP or ND, while some queue has flows to
 * RAW_PACKET QPs (ibv_create_flow): each queue with flows gets a
 * reference through its hand-off ring (its transport matches them against
 * its own QPs' flows only, as for multicast); this one keeps it if it has
 * flows itself. Returns 1 if this queue keeps it; the frame is freed
 * otherwise.
 */
static int
raw_fanout(struct dp_queue *q, struct rte_mbuf *m)
{
	struct droce_port *p = q->port;
	uint32_t j;

	for (j = 0; j < p->nb_queues; j++) {
		struct dp_queue *o = &p->q[j];

		if (j == q->index || droce_tp_queue_raw_flows(o->tq) == 0)
			continue;
		rte_mbuf_refcnt_update(m, 1);
		if (rte_ring_enqueue(o->handoff, m) != 0) {
			rte_pktmbuf_free(m);	/* drops our extra reference */
			q->handoff_drops++;
		}
		q->handoffs++;
	}
	if (droce_tp_queue_raw_flows(q->tq) != 0)
		return 1;
	rte_pktmbuf_free(m);
	return 0;
}

/*
 * Sort n received frames: ARP, ND and other non-RoCE frames handled and
 * freed here (or given to the RAW_PACKET QPs' flows), frames for a QP of another queue handed to it by ring, the
 * rest (this queue's) into mine. Returns how many went to mine.
 */
static __rte_always_inline uint16_t
classify(struct dp_queue *q, struct rte_mbuf **in, uint16_t n,
		struct rte_mbuf **mine)
{
	struct droce_port *p = q->port;
	uint16_t i, nm = 0;

	for (i = 0; i < n; i++) {
		struct rte_mbuf *m = in[i];
		const uint8_t *f;
		int64_t dqpn;

		if (m->nb_segs > 1 && rte_pktmbuf_linearize(m) != 0) {
			rte_pktmbuf_free(m);
			continue;
		}
		f = rte_pktmbuf_mtod(m, const uint8_t *);
		dqpn = droce_wire_peek_dqpn(f, rte_pktmbuf_data_len(m));
		if (dqpn < 0) {
			q->non_roce++;
			if (dp_arp_input(p, q, m) == 0 ||
					dp_nd_input(p, q, m) == 0) {
				q->arp++;
				rte_pktmbuf_free(m);
			} else if (raw_fanout(q, m)) {
				mine[nm++] = m;
			}
			continue;
		}
		/* Frames for a QP another queue owns go there by ring. */
		if (p->nb_queues > 1) {
			uint32_t owner;

			if (unlikely(dqpn == DROCE_MCAST_QPN)) {
				if (mcast_fanout(q, m))
					mine[nm++] = m;
				continue;
			}
			owner = droce_qpn_queue(p->dev, (uint32_t)dqpn);
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
	return nm;
}

/*
 * One pass over queue q; the caller holds q->lock. Returns work done.
 * hooked: a constant, whether to call the owner's hooks (queue_poll picks
 * the copy, so that a port without hooks pays one branch per pass).
 */
static __rte_always_inline int
queue_pass(struct dp_queue *q, uint64_t tsc, const int hooked)
{
	struct droce_port *p = q->port;
	/* faults may duplicate: room for twice a burst */
	struct rte_mbuf *in[DP_BURST * 2], *mine[DP_BURST * 2];
	uint16_t n, nm;
	uint64_t now = dp_tsc_ns(tsc), sent;
	int work = 0;

	if (hooked)
		work += p->hooks.poll(p->hooks.arg, q->index,
			DROCE_HOOK_BEFORE);
	n = rte_eth_rx_burst(p->port_id, (uint16_t)q->index, in, DP_BURST);
	if (dp_fault_active(&p->frx)) {
		rte_spinlock_lock(&p->fault_lock);
		n = dp_fault_apply(p, &p->frx, in, n, DP_BURST * 2, now);
		rte_spinlock_unlock(&p->fault_lock);
	}
	q->rx_pkts += n;
	q->rx_bursts += n != 0;
	work += n;
	nm = classify(q, in, n, mine);
	if (nm)
		deliver(q, mine, nm, now);
	if (unlikely(q->nlb)) {
		/* all that was looped back before this pass, a burst at a
		 * time, each taken out first (delivering may loop more back:
		 * the next pass's). A burst a pass let the queue fill and
		 * tail-drop ~40% of the frames of 16 MPI ranks on one droced:
		 * the transport loops back up to two bursts a pass. */
		uint32_t left = q->nlb;

		while (left) {
			n = dp_queue_loop_take(q, in,
				(uint16_t)RTE_MIN(left, (uint32_t)DP_BURST));
			left -= n;
			work += n;
			nm = classify(q, in, n, mine);
			if (nm)
				deliver(q, mine, nm, now);
		}
	}
	if (q->handoff != NULL) {
		n = (uint16_t)rte_ring_dequeue_burst(q->handoff, (void **)mine,
			DP_BURST, NULL);
		if (n) {
			deliver(q, mine, n, now);
			work += n;
		}
	}
	work += (int)droce_tp_progress(q->tq, now, DP_BURST * 2);
	if (hooked)
		work += p->hooks.poll(p->hooks.arg, q->index,
			DROCE_HOOK_AFTER);
	sent = q->tx_pkts;
	dp_queue_flush(q);
	if (q->tx_pkts != sent)
		q->last_tx_ns = now;
	if (p->tx_kick)
		dp_queue_tx_kick(q, now);
	return work;
}

static __rte_noinline int
queue_poll_hooked(struct dp_queue *q, uint64_t tsc)
{
	return queue_pass(q, tsc, 1);
}

/* A pass at tsc (the caller's clock read: one per pass) */
static int
queue_poll(struct dp_queue *q, uint64_t tsc)
{
	if (unlikely(q->port->hooks.poll != NULL))
		return queue_poll_hooked(q, tsc);
	return queue_pass(q, tsc, 0);
}

/* queue_poll for the progress thread (dp_thread.c): queue_poll stays
 * static, so that the passes here call it as before */
int
dp_queue_poll(struct dp_queue *q, uint64_t tsc)
{
	return queue_poll(q, tsc);
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
	/* a progress loop (lcores, the thread when busy) retakes the lock
	 * a few nanoseconds after it lets go, and would starve us: it keeps
	 * off while we wait (dp_queue_trylock) */
	__atomic_fetch_add(&q->lock_waiters, 1, __ATOMIC_ACQ_REL);
	start = rte_rdtsc();
	while (!rte_spinlock_trylock(&q->lock)) {
		if (rte_rdtsc() - start < DP_LOCK_SPIN_CYCLES)
			rte_pause();
		else
			sched_yield();
	}
	__atomic_fetch_sub(&q->lock_waiters, 1, __ATOMIC_ACQ_REL);
}

void
droce_port_signal(struct droce_port *p, uint32_t q, int fd)
{
	struct dp_queue *dq = &p->q[q];

	if (dq->nsignal == DP_SIGNALS)
		dp_efd_write(fd);
	else
		dq->signal_fd[dq->nsignal++] = fd;
}

int
droce_port_progress(struct droce_port *p, uint32_t qi)
{
	struct dp_queue *q = &p->q[qi];
	int work;

	/* here to drive it even when the thread holds it: the thread
	 * leaves it to us from its next pass */
	q->app_poll_tsc = rte_rdtsc();
	if (!dp_queue_trylock(q))
		return 0;
	work = queue_poll(q, q->app_poll_tsc);
	dp_queue_unlock(q);
	return work;
}

void
droce_port_lock(struct droce_port *p, uint32_t q)
{
	queue_lock(&p->q[q]);
}

/* The application drives queue dq at tsc: the thread keeps off it. */
static inline void
app_drives(struct droce_port *p, struct dp_queue *dq, uint64_t tsc)
{
	/* back after a hand-off: was it away (waiting on memory, a latency
	 * loop) or back at once (its sends drained between two posts)? */
	if (unlikely(dq->handoff_tsc > dq->app_poll_tsc) &&
			dp_since(tsc, dq->handoff_tsc) > p->away_cycles)
		dq->away_tsc = tsc;
	dq->app_poll_tsc = tsc;
}

void
droce_port_lock_driving(struct droce_port *p, uint32_t q)
{
	struct dp_queue *dq = &p->q[q];

	/* also while we wait for the lock the thread holds */
	app_drives(p, dq, rte_rdtsc());
	queue_lock(dq);
}

int
droce_port_progress_locked(struct droce_port *p, uint32_t qi)
{
	struct dp_queue *dq = &p->q[qi];
	uint64_t tsc = rte_rdtsc();

	app_drives(p, dq, tsc);
	return queue_poll(dq, tsc);
}

int
droce_port_poll_driving(struct droce_port *p, uint32_t qi)
{
	struct dp_queue *dq = &p->q[qi];
	uint64_t tsc = rte_rdtsc();

	app_drives(p, dq, tsc);
	if (unlikely(!rte_spinlock_trylock(&dq->lock))) {
		queue_lock(dq);
		tsc = rte_rdtsc();	/* the wait may have been long */
		dq->app_poll_tsc = tsc;
	}
	return queue_poll(dq, tsc);
}

void
droce_port_unlock(struct droce_port *p, uint32_t q)
{
	dp_queue_unlock(&p->q[q]);
}

int
droce_port_set_hooks(struct droce_port *p, const struct droce_port_hooks *h)
{
	uint32_t i;

	if (p == NULL)
		return -EINVAL;
	for (i = 0; i < p->nb_queues; i++)
		queue_lock(&p->q[i]);
	/* the progress thread reads sleep and arg without a queue lock
	 * (thread_sleep): arg changes only while sleep is NULL */
	__atomic_store_n(&p->hooks.sleep, NULL, __ATOMIC_RELEASE);
	p->hooks.poll = h != NULL ? h->poll : NULL;
	__atomic_store_n(&p->hooks.arg, h != NULL ? h->arg : NULL,
		__ATOMIC_RELEASE);
	if (h != NULL)
		__atomic_store_n(&p->hooks.sleep, h->sleep, __ATOMIC_RELEASE);
	for (i = p->nb_queues; i > 0; i--)
		rte_spinlock_unlock(&p->q[i - 1].lock);
	return 0;
}

void
droce_port_tx_settle(struct droce_port *p, uint64_t quiet_ns, uint64_t max_ns)
{
	uint64_t start = droce_now_ns(), now, last;
	uint32_t i, left;

	do {
		left = 0;
		last = 0;
		for (i = 0; i < p->nb_queues; i++) {
			left += p->q[i].ntx + p->q[i].nlb;
			if (p->q[i].last_tx_ns > last)
				last = p->q[i].last_tx_ns;
		}
		now = droce_now_ns();
		if (left == 0 && dp_since(now, last) >= quiet_ns)
			return;
		usleep(1000);	/* the progress thread flushes meanwhile */
	} while (now - start < max_ns);
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
