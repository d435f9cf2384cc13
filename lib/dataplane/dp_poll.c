/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * Progress: one pass over one queue (queue_poll), the queue locks that
 * let the application, the progress thread and lcores share it, and who
 * runs the passes (the background thread, droce_port_run on an lcore, or
 * the application inline).
 */

#include <poll.h>
#include <sched.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>

#include <rte_cycles.h>
#include <rte_errno.h>
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
	 * off while we wait (queue_trylock) */
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

/* The progress loops' lock: not while a queue_lock waits (it goes
 * first), nor while another holds it. */
static inline int
queue_trylock(struct dp_queue *q)
{
	return q->lock_waiters == 0 && rte_spinlock_trylock(&q->lock);
}

static void
efd_write(int fd)
{
	uint64_t one = 1;

	if (write(fd, &one, sizeof(one)) != sizeof(one))
		return;		/* saturated: the reader wakes anyway */
}

void
droce_port_signal(struct droce_port *p, uint32_t q, int fd)
{
	struct dp_queue *dq = &p->q[q];

	if (dq->nsignal == DP_SIGNALS)
		efd_write(fd);
	else
		dq->signal_fd[dq->nsignal++] = fd;
}

/* Let the queue's lock go, then give the wake-ups its pass deferred. */
static inline void
queue_unlock(struct dp_queue *q)
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
		efd_write(fds[i]);
}

void
droce_port_handoff(struct droce_port *p, uint32_t q)
{
	/* no wake-up call on the application's path: with CPUs to spare
	 * the thread's naps are short (5 us) */
	struct dp_queue *dq = &p->q[q];
	uint64_t tsc;

	if (p->spare_cpu) {
		dq->app_poll_tsc = 0;
		return;
	}
	tsc = rte_rdtsc();
	/*
	 * On few CPUs the thread naps beside a polling application, up to
	 * 1 ms. Only an application in a latency loop, one that stayed away
	 * after a recent hand-off (it waited on memory that only the thread
	 * fills), needs the thread soon: its hand-offs keep the naps short,
	 * and one after a long nap began wakes the thread. One back at once
	 * after its hand-offs (a bandwidth loop's drains, a ping-pong whose
	 * answer came with its ACK) leaves the naps long: in 64 B
	 * ib_write_bw its hand-offs, one every 5-7 ms, each began five short
	 * naps, 2,300 wake-ups a second where each costs the VM's CPUs ~26 us.
	 */
	dq->handoff_tsc = tsc;
	if (dp_since(tsc, dq->away_tsc) >= p->recent_cycles)
		return;
	dq->handed_off = 1;
	rte_smp_mb();
	if (p->long_nap)
		droce_port_kick(p, q);	/* also ends the queue's window */
}

int
droce_port_progress(struct droce_port *p, uint32_t qi)
{
	struct dp_queue *q = &p->q[qi];
	int work;

	/* here to drive it even when the thread holds it: the thread
	 * leaves it to us from its next pass */
	q->app_poll_tsc = rte_rdtsc();
	if (!queue_trylock(q))
		return 0;
	work = queue_poll(q, q->app_poll_tsc);
	queue_unlock(q);
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
	queue_unlock(&p->q[q]);
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

int
droce_port_wake_fd(const struct droce_port *p)
{
	return p->wake_fd;
}

int
droce_port_set_wake_extra(struct droce_port *p, int fd)
{
	if (p->wake_fd < 0)
		return -EINVAL;
	__atomic_store_n(&p->wake_extra, fd, __ATOMIC_RELEASE);
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

/* Wake the thread if it naps, after a store it must see: ours before
 * our load of sleeping, as the thread stores sleeping, then looks (Dekker;
 * x86 lets a load pass an earlier store, and the thread slept out its
 * nap). */
static void
wake_after_store(struct droce_port *p)
{
	uint64_t one = 1;

	rte_smp_mb();
	if (p->sleeping && p->wake_fd >= 0 &&
			write(p->wake_fd, &one, sizeof(one)) < 0)
		return;		/* already signalled */
}

void
droce_port_kick(struct droce_port *p, uint32_t q)
{
	p->q[q].kicked = 1;
	wake_after_store(p);
}

/*
 * An arm from an owner that waits awake (droce_port_spinning) does not
 * wake a napping thread: the owner drives the queue, and a wake-up per
 * event would cost this VM's CPUs 20-40 us each. Should it sleep
 * elsewhere instead (in poll() on the channel's fd), the thread's nap
 * beside it is short (DP_SPUN_NAP_MAX_US).
 */
void
droce_port_armed(struct droce_port *p, uint32_t q)
{
	p->q[q].armed_tsc = rte_rdtsc();
	if (!p->q[q].owner_spins)
		droce_port_kick(p, q);
}

void
droce_port_spinning(struct droce_port *p, uint32_t q, int on)
{
	struct dp_queue *dq = &p->q[q];

	if (!on) {
		dq->owner_spins = 0;
		droce_port_kick(p, q);	/* ours at once: it sleeps */
		return;
	}
	if (dq->owner_spins)
		return;
	/* the owner's arms stop waking the thread from here: one in a long
	 * nap (idle for a second: 4 ms) wakes once, to nap beside the owner
	 * no longer than DP_SPUN_NAP_MAX_US */
	dq->owner_spins = 1;
	wake_after_store(p);
}

static int
any_kicked(const struct droce_port *p)
{
	uint32_t i;

	for (i = 0; i < p->nb_queues; i++)
		if (p->q[i].kicked)
			return 1;
	return 0;
}

/* Whether a queue was handed off since the last look; clears the marks. */
static int
take_handoffs(struct droce_port *p)
{
	uint32_t i;
	int any = 0;

	for (i = 0; i < p->nb_queues; i++)
		if (p->q[i].handed_off) {
			p->q[i].handed_off = 0;
			any = 1;
		}
	return any;
}

/* An awaited CQ of the queue armed within DP_ARMED_SPIN_MS (the
 * transport's count, read without the queue's lock: a hint). */
static inline int
awaited_hint(const struct droce_port *p, const struct dp_queue *q,
		uint64_t tsc)
{
	return droce_tp_queue_awaited(q->tq) != 0 &&
		dp_since(tsc, q->armed_tsc) < p->armed_cycles;
}

/* A whole nap while a queue's owner slept on its channel: there should
 * be none while its arm is recent (the test's check). An arm during the
 * nap kicks it short; one after the nap ended (the thread preempted
 * between its wake-up and this count) is not the nap's. */
static void
count_awaited_naps(struct droce_port *p, uint64_t nap_tsc)
{
	uint64_t tsc = rte_rdtsc();
	uint32_t i;

	for (i = 0; i < p->nb_queues; i++)
		if (awaited_hint(p, &p->q[i], tsc) && !p->q[i].owner_spins &&
				p->q[i].armed_tsc < nap_tsc)
			p->q[i].awaited_naps++;
}

/*
 * Sleep up to us microseconds, or until droce_port_kick or any write to
 * wake_fd or the owner's wake_extra: the read clears the eventfd's
 * count (the owner drains its own in the sleep hook).
 * The owner's sleep hook may call the nap off (work arrived meanwhile).
 */
static void
thread_sleep(struct droce_port *p, uint32_t us)
{
	struct pollfd pfd[2] = {
		{ .fd = p->wake_fd, .events = POLLIN },
		{ .fd = __atomic_load_n(&p->wake_extra, __ATOMIC_ACQUIRE),
			.events = POLLIN },
	};
	struct timespec ts = { .tv_sec = 0, .tv_nsec = (long)us * 1000 };
	int (*hook)(void *, int) = __atomic_load_n(&p->hooks.sleep,
		__ATOMIC_ACQUIRE);
	void *arg = __atomic_load_n(&p->hooks.arg, __ATOMIC_ACQUIRE);
	int skip = 0;
	uint64_t v;

	/* droce_port_set_hooks meanwhile: no hook this nap, rather than
	 * one with another's arg */
	if (hook != __atomic_load_n(&p->hooks.sleep, __ATOMIC_ACQUIRE))
		hook = NULL;
	p->sleeping = 1;
	rte_smp_mb();
	if (hook != NULL)
		skip = hook(arg, 1);
	if (!skip && !any_kicked(p) && !p->stop) {
		uint64_t nap_tsc = rte_rdtsc();
		int n = ppoll(pfd, pfd[1].fd >= 0 ? 2 : 1, &ts, NULL);

		if (n > 0 && (pfd[0].revents & POLLIN) &&
				read(p->wake_fd, &v, sizeof(v)) < 0)
			v = 0;
		else if (n == 0)
			count_awaited_naps(p, nap_tsc);	/* slept it out */
	}
	p->sleeping = 0;
	if (hook != NULL)
		hook(arg, 0);
}

/*
 * The nap beside an application that polls every queue itself, on few
 * CPUs. Each wake-up there takes a core from a busy thread (two per
 * process, two processes, two CPUs): at 50 us naps the thread woke 10,000
 * times a second in a 64 B ib_write_bw, a quarter of a core, and the
 * client ran at 0.8-1.2 M msgs/s; at 1 ms, 2.7-3.1 M. Each wake-up costs
 * the VM ~20-26 us of a CPU, so 1 ms naps still took 2-4% from the
 * applications: at 4 ms, 64 B ib_send_bw / ib_write_bw / ib_read_bw ran
 * 8.7 / 5.5 / 3.4% faster (medians of six, alternating). The price: an
 * application that stops polling without a hand-off or a completion
 * channel's arm (both wake the thread) waits up to 4 ms for the thread,
 * far inside any requester's retransmission timeout. The nap doubles from
 * DP_DRIVE_NAP_MIN_US while no hand-off comes (dv_cq_take: the
 * application's sends all completed, it may wait on memory next).
 */
#define DP_DRIVE_NAP_MIN_US	50
#define DP_DRIVE_NAP_MAX_US	4000
/* beside a thread spinning in ibv_get_cq_event: the most an owner that
 * armed after a served spin and then slept in poll() waits for us */
#define DP_SPUN_NAP_MAX_US	1000

static void
drive_nap(struct droce_port *p, uint32_t *nap, uint32_t max)
{
	if (p->spare_cpu) {
		thread_sleep(p, 5);
		return;
	}
	p->long_nap = *nap > DP_DRIVE_NAP_MIN_US;
	rte_smp_mb();
	/* a hand-off before long_nap was seen: nap short instead */
	if (take_handoffs(p)) {
		p->long_nap = 0;
		*nap = DP_DRIVE_NAP_MIN_US;
	}
	thread_sleep(p, RTE_MIN(*nap, max));
	p->long_nap = 0;
	if (take_handoffs(p))
		*nap = DP_DRIVE_NAP_MIN_US;
	else if (*nap < DP_DRIVE_NAP_MAX_US)
		*nap = RTE_MIN(*nap * 2, DP_DRIVE_NAP_MAX_US);
}

/* Work to do soon; when none, *due: the queue's next transport deadline,
 * if earlier (a busy pass does not nap: no deadline needed) */
static int
queue_busy(struct dp_queue *q, uint64_t now, uint64_t *due)
{
	uint64_t t;

	if (q->ntx || q->nlb || droce_tp_queue_busy(q->tq))
		return 1;
	t = droce_tp_next_deadline(q->tq);
	if (t < *due)
		*due = t;
	return t <= now + 20000;
}

/*
 * The idle thread's nap after quiet ns without work: spin 200 us (a reply
 * is often that close), then 10 us naps up to 2 ms, 100 us up to 100 ms,
 * 1 ms up to 1 s, then 4 ms (the bound drive_nap keeps beside a polling
 * application). Each wake-up costs this VM ~38 us of a CPU: at 1 ms an
 * idle process (blocked on a completion channel, which kicks us when it
 * arms) took 3.8-4.0% of a CPU, at 4 ms ~1%. The price: the first frame
 * after a second's quiet waits up to 4 ms, far inside an RC requester's
 * timeout. No nap outlasts a transport deadline (a retransmission, an
 * RNR wait, a held ACK). 0: spin.
 */
#define DP_IDLE_NAP_MAX_US	4000

static uint32_t
idle_nap_us(uint64_t now, uint64_t quiet, uint64_t due)
{
	uint64_t us;

	if (quiet < 200000)
		return 0;
	us = quiet < 2000000 ? 10 : quiet < 100000000 ? 100 :
		quiet < 1000000000 ? 1000 : DP_IDLE_NAP_MAX_US;
	if (due != UINT64_MAX && due > now && (due - now) / 1000 < us)
		us = RTE_MAX((due - now) / 1000, 10);
	return (uint32_t)us;
}

/*
 * A queue whose owner sleeps on a completion channel (an awaited CQ armed,
 * droce_port_armed lately) is served without naps: its completion wakes
 * the owner as a NIC's interrupt would. The pass that wakes it leaves the
 * queue to it, as if it had polled: on few CPUs a thread that spun on
 * would keep the woken owner off the CPU for a scheduler slice
 * (ibv_rc_pingpong -e: 0.5-1.5 ms an iteration); it naps till the owner
 * arms again (droce_port_armed kicks it) or its window ends.
 */
static int
queue_awaited(struct droce_port *p, struct dp_queue *q, uint64_t tsc,
		uint64_t wakeups_before)
{
	if (droce_tp_queue_wakeups(q->tq) != wakeups_before) {
		q->app_poll_tsc = tsc;
		return 0;
	}
	if (!awaited_hint(p, q, tsc))
		return 0;
	q->armed_passes++;
	return 1;
}

/* Whether an owner waiting awake drives the queue: it polled it lately
 * (spinning in ibv_get_cq_event, or polling the CQ and posting between
 * two waits). */
static inline int
spin_driven(const struct dp_queue *q, uint64_t tsc, uint64_t window)
{
	return q->owner_spins && dp_since(tsc, q->app_poll_tsc) < window;
}

/*
 * The background progress thread: spins while there is work, then backs
 * off in growing sleeps (up to 1 ms) so that it does not take a core
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
	uint64_t app_window, app_recent_window, app_short_window, last_work = 0;
	uint32_t i, nap = DP_DRIVE_NAP_MIN_US;

	/* short sleeps must stay short: 1 us of timer slack, not 50 */
	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	/* an lcore id of its own gives this thread mempool caches (without
	 * one, every mbuf comes from the pool's ring) */
	if (rte_thread_register() != 0)
		DP_LOG(DEBUG, "progress thread without an lcore id: %s",
			rte_strerror(rte_errno));
	app_short_window = rte_get_tsc_hz() / 50000;	/* 20 us */
	p->away_cycles = app_short_window;
	app_recent_window = rte_get_tsc_hz() / 500;	/* 2 ms */
	p->armed_cycles = rte_get_tsc_hz() / 1000 * DP_ARMED_SPIN_MS;
	p->spun_cycles = rte_get_tsc_hz() / 1000000 * DP_SPUN_NAP_MAX_US;
	p->recent_cycles = app_recent_window;

	while (!p->stop) {
		int work = 0, busy = 0, awaited = 0;
		uint32_t app_driven = 0, app_recent = 0, spun = 0, idle_us;
		uint64_t due = UINT64_MAX;
		uint64_t tsc = rte_rdtsc();
		uint64_t now = dp_tsc_ns(tsc);

		/*
		 * A queue the application polled within the window is left
		 * to it: 20 us, and on few CPUs 2 ms unless it is in a
		 * latency loop (it handed the queue off and has not been
		 * back, or came back from one 20 us or more later within the
		 * last 2 ms). In a bandwidth loop, an application polled
		 * further apart was preempted, and a thread that did its
		 * passes meanwhile (20 us naps) often kept both applications
		 * of a 64 B ib_send_bw on one CPU and itself on the other:
		 * half the rate in half the runs. In a latency loop the short
		 * window served ib_write_lat better (34 us typical against
		 * 49). A/B, medians of four: 64 B ib_send_bw 0.83 -> 2.41 M
		 * msgs/s with any hand-off in 2 ms counting as a latency
		 * loop, and 64 B ib_write_bw 2.09 -> 2.94 once its
		 * occasional drains (the application back at once) stopped
		 * counting.
		 */
		for (i = 0; i < p->nb_queues; i++) {
			struct dp_queue *q = &p->q[i];
			/* its owner is going to sleep on a channel, or
			 * sleeps: ours too however lately it polled (taking
			 * turns with its spin in ibv_get_cq_event) */
			int aw = awaited_hint(p, q, tsc);

			app_window = p->spare_cpu ||
				q->handoff_tsc > q->app_poll_tsc ||
				dp_since(tsc, q->away_tsc) < app_recent_window ?
				app_short_window : app_recent_window;

			if (!q->kicked && !aw &&
					dp_since(tsc, q->app_poll_tsc) < app_recent_window)
				app_recent++;
			if (q->kicked) {
				q->kicked = 0;
				q->app_poll_tsc = 0;	/* it waits for us now */
				busy = 1;
			} else if (aw && spin_driven(q, tsc, app_short_window)) {
				/* its owner spins in ibv_get_cq_event: one
				 * busy thread for the queue, not two, as
				 * beside a polling application; its spin's
				 * end kicks us */
				app_driven++;
				spun++;
				continue;
			} else if (!aw &&
					dp_since(tsc, q->app_poll_tsc) < app_window) {
				app_driven++;
				continue;
			}
			if (queue_trylock(q)) {
				uint64_t wakeups = droce_tp_queue_wakeups(q->tq);
				int w;

				/* an owner that waited awake stopped driving
				 * it: ours while it is away (preempted), and
				 * after as long as our naps beside it last
				 * (asleep in poll(), say) its arms kick again */
				if (aw && q->owner_spins && q->app_poll_tsc &&
						dp_since(tsc, q->app_poll_tsc) >=
						p->spun_cycles)
					q->owner_spins = 0;
				w = queue_poll(q, tsc);

				/* a pass that did work is looked at again
				 * anyway: no need to ask the transport */
				work += w;
				if (w == 0)
					busy |= queue_busy(q, now, &due);
				awaited |= queue_awaited(p, q, tsc, wakeups);
				queue_unlock(q);
			} else if (q->owner_spins) {
				app_driven++;	/* its owner drives it */
				spun++;
			} else {
				busy = 1;	/* an application polls it */
			}
		}
		if (awaited) {
			/*
			 * A sleeper's completion is ours to deliver: spin,
			 * but let any thread waiting for this CPU run first.
			 * The sleeper, once woken, often is one: the
			 * scheduler queues a task that just ran where it ran
			 * (a cache-hot task is not pulled to an idle CPU),
			 * and EEVDF lets a spinner finish its slice first
			 * (ibv_rc_pingpong -e: 5 ms an iteration).
			 */
			last_work = now;
			sched_yield();
			continue;
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
			last_work = now;	/* not idle: it has traffic */
			drive_nap(p, &nap, spun ? DP_SPUN_NAP_MAX_US :
				DP_DRIVE_NAP_MAX_US);
			continue;
		}
		nap = DP_DRIVE_NAP_MIN_US;
		idle_us = idle_nap_us(now, now - last_work, due);
		if (spun && idle_us > DP_SPUN_NAP_MAX_US)
			idle_us = DP_SPUN_NAP_MAX_US;
		if (idle_us != 0)
			thread_sleep(p, idle_us);
		else if (!p->spare_cpu)
			sched_yield();
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

/* DROCE_PROGRESS_THREAD: start the port's background thread. 0 or -1. */
int
dp_progress_thread_start(struct droce_port *p)
{
	cpu_set_t cpus;

	/* an application thread, this thread and room to spare */
	p->spare_cpu = sched_getaffinity(0, sizeof(cpus), &cpus) == 0 &&
		CPU_COUNT(&cpus) >= 4;
	p->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (pthread_create(&p->thread, NULL, progress_thread, p) != 0)
		return -1;
	p->thread_running = 1;
	return 0;
}

/* Stop every pass over the port: the thread's, and the lcores' in
 * droce_port_run, which leave before the port goes. */
void
dp_progress_stop(struct droce_port *p)
{
	p->stop = 1;
	if (p->thread_running) {
		droce_port_kick(p, 0);
		pthread_join(p->thread, NULL);
	}
	while (__atomic_load_n(&p->lcores_running, __ATOMIC_ACQUIRE))
		rte_pause();
	if (p->wake_fd >= 0)
		close(p->wake_fd);
}
