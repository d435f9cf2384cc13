/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * The background progress thread (DROCE_PROGRESS_THREAD): its passes over
 * every queue the application leaves to it, its naps, and what wakes it
 * (kicks, hand-offs, a CQ's arm). One pass over a queue is dp_poll.c's.
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

/* The progress thread's state across its passes */
struct thread_state {
	uint64_t short_window;		/* 20 us in TSC cycles */
	uint64_t recent_window;		/* 2 ms in TSC cycles */
	uint64_t last_work;		/* when a pass last had work (ns) */
	uint32_t nap;			/* drive_nap's, growing */
};

/* What one pass over every queue found */
struct thread_pass {
	uint64_t tsc, now;		/* the pass's clock read */
	int work, busy, awaited;
	uint32_t app_driven, app_recent, spun;
	uint64_t due;			/* the next transport deadline */
};

static void
thread_init(struct droce_port *p, struct thread_state *st)
{
	/* short sleeps must stay short: 1 us of timer slack, not 50 */
	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	/* an lcore id of its own gives this thread mempool caches (without
	 * one, every mbuf comes from the pool's ring) */
	if (rte_thread_register() != 0)
		DP_LOG(DEBUG, "progress thread without an lcore id: %s",
			rte_strerror(rte_errno));
	st->short_window = rte_get_tsc_hz() / 50000;	/* 20 us */
	p->away_cycles = st->short_window;
	st->recent_window = rte_get_tsc_hz() / 500;	/* 2 ms */
	p->armed_cycles = rte_get_tsc_hz() / 1000 * DP_ARMED_SPIN_MS;
	p->spun_cycles = rte_get_tsc_hz() / 1000000 * DP_SPUN_NAP_MAX_US;
	p->recent_cycles = st->recent_window;
	st->last_work = 0;
	st->nap = DP_DRIVE_NAP_MIN_US;
}

/*
 * The pass's look at queue q: a pass over it, unless it is left to its
 * owner. A queue the application polled within the window is left to it:
 * 20 us, and on few CPUs 2 ms unless it is in a latency loop (it handed
 * the queue off and has not been back, or came back from one 20 us or
 * more later within the last 2 ms). In a bandwidth loop, an application
 * polled further apart was preempted, and a thread that did its passes
 * meanwhile (20 us naps) often kept both applications of a 64 B
 * ib_send_bw on one CPU and itself on the other: half the rate in half
 * the runs. In a latency loop the short window served ib_write_lat
 * better (34 us typical against 49). A/B, medians of four: 64 B
 * ib_send_bw 0.83 -> 2.41 M msgs/s with any hand-off in 2 ms counting as
 * a latency loop, and 64 B ib_write_bw 2.09 -> 2.94 once its occasional
 * drains (the application back at once) stopped counting.
 */
static void
thread_serve(struct droce_port *p, const struct thread_state *st,
		struct dp_queue *q, struct thread_pass *s)
{
	uint64_t tsc = s->tsc, app_window;
	/* its owner is going to sleep on a channel, or sleeps: ours too
	 * however lately it polled (taking turns with its spin in
	 * ibv_get_cq_event) */
	int aw = awaited_hint(p, q, tsc);

	app_window = p->spare_cpu || q->handoff_tsc > q->app_poll_tsc ||
		dp_since(tsc, q->away_tsc) < st->recent_window ?
		st->short_window : st->recent_window;

	if (!q->kicked && !aw &&
			dp_since(tsc, q->app_poll_tsc) < st->recent_window)
		s->app_recent++;
	if (q->kicked) {
		q->kicked = 0;
		q->app_poll_tsc = 0;	/* it waits for us now */
		s->busy = 1;
	} else if (aw && spin_driven(q, tsc, st->short_window)) {
		/* its owner spins in ibv_get_cq_event: one busy thread for
		 * the queue, not two, as beside a polling application; its
		 * spin's end kicks us */
		s->app_driven++;
		s->spun++;
		return;
	} else if (!aw && dp_since(tsc, q->app_poll_tsc) < app_window) {
		s->app_driven++;
		return;
	}
	if (dp_queue_trylock(q)) {
		uint64_t wakeups = droce_tp_queue_wakeups(q->tq);
		int w;

		/* an owner that waited awake stopped driving it: ours while
		 * it is away (preempted), and after as long as our naps
		 * beside it last (asleep in poll(), say) its arms kick
		 * again */
		if (aw && q->owner_spins && q->app_poll_tsc &&
				dp_since(tsc, q->app_poll_tsc) >=
				p->spun_cycles)
			q->owner_spins = 0;
		w = dp_queue_poll(q, tsc);

		/* a pass that did work is looked at again anyway: no need
		 * to ask the transport */
		s->work += w;
		if (w == 0)
			s->busy |= queue_busy(q, s->now, &s->due);
		s->awaited |= queue_awaited(p, q, tsc, wakeups);
		dp_queue_unlock(q);
	} else if (q->owner_spins) {
		s->app_driven++;	/* its owner drives it */
		s->spun++;
	} else {
		s->busy = 1;	/* an application polls it */
	}
}

/* After a pass: spin on, yield, or nap, by what the pass found. */
static void
thread_rest(struct droce_port *p, struct thread_state *st,
		const struct thread_pass *s)
{
	uint32_t idle_us;

	if (s->awaited) {
		/*
		 * A sleeper's completion is ours to deliver: spin, but let
		 * any thread waiting for this CPU run first. The sleeper,
		 * once woken, often is one: the scheduler queues a task that
		 * just ran where it ran (a cache-hot task is not pulled to an
		 * idle CPU), and EEVDF lets a spinner finish its slice first
		 * (ibv_rc_pingpong -e: 5 ms an iteration).
		 */
		st->last_work = s->now;
		sched_yield();
		return;
	}
	if (s->work || s->busy) {
		st->last_work = s->now;
		/*
		 * Every queue is one the application polled within 2 ms; it
		 * was only preempted. Spinning here would keep it off the
		 * core (two busy threads per process on a small machine): do
		 * this pass's work, then yield until it is back.
		 */
		if (s->app_recent == p->nb_queues)
			thread_sleep(p, 20);
		return;
	}
	if (s->app_driven == p->nb_queues) {
		/* the application polls every queue itself: keep off its
		 * cores, look again when it may have stopped (soon where it
		 * has CPUs to spare: the nap is then the delay before the
		 * thread takes a handed-off queue, and costs no application
		 * a core) */
		st->last_work = s->now;	/* not idle: it has traffic */
		drive_nap(p, &st->nap, s->spun ? DP_SPUN_NAP_MAX_US :
			DP_DRIVE_NAP_MAX_US);
		return;
	}
	st->nap = DP_DRIVE_NAP_MIN_US;
	idle_us = idle_nap_us(s->now, s->now - st->last_work, s->due);
	if (s->spun && idle_us > DP_SPUN_NAP_MAX_US)
		idle_us = DP_SPUN_NAP_MAX_US;
	if (idle_us != 0)
		thread_sleep(p, idle_us);
	else if (!p->spare_cpu)
		sched_yield();
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
	struct thread_state st;
	uint32_t i;

	thread_init(p, &st);
	while (!p->stop) {
		struct thread_pass s = { .due = UINT64_MAX };

		s.tsc = rte_rdtsc();
		s.now = dp_tsc_ns(s.tsc);
		for (i = 0; i < p->nb_queues; i++)
			thread_serve(p, &st, &p->q[i], &s);
		thread_rest(p, &st, &s);
	}
	if (rte_lcore_id() != LCORE_ID_ANY)
		rte_thread_unregister();
	return NULL;
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
