/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * verbs_event_spin: a completion channel's fd is readable exactly while
 * it has events to give, however they were delivered. Run with a long
 * DROCE_EVENT_SPIN_US, so that events fire while the thread spins in
 * ibv_get_cq_event (those get no eventfd token: the spinner takes them
 * from the channel's list):
 *  - one event a round, fired during the spin: taken, and the fd quiet;
 *  - two CQs of one channel fired together: after the first is taken the
 *    fd is (or becomes) readable, after the second it is quiet;
 *  - a non-blocking fd with nothing fired: EAGAIN at once; then an event
 *    seen by poll() first;
 *  - a program that waits in poll() before each ibv_get_cq_event gets
 *    every event;
 *  - one that alternates: an event its spin got, then an arm and a wait
 *    in poll() while the sender stays off the queue. The arm after a
 *    served spin does not wake the progress thread (the spinner drives
 *    the queue), which must still take it and deliver the event.
 * Functional: nothing here is timed.
 */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "verbs_loop.h"

#define ROUNDS	50
#define BUF	4096

static struct ibv_mr *mr;
static char *buf;
static struct ibv_qp *qa1, *qa2, *qb1, *qb2;
static struct ibv_cq *cqa, *cq1, *cq2;
static struct ibv_comp_channel *ch;
/* the helper's job: after round `job_round` is set, send on `job_qps`
 * QPs (1: qa1, 2: qa1 and qa2) 2 ms later; for round `job_hold`, reap
 * its completions (which drives the queue) only once the waiter clears
 * it */
static volatile int job_round, job_qps, job_hold, stop;

static int
send_one(struct ibv_qp *qp, uint64_t id)
{
	struct ibv_sge s = { .addr = (uintptr_t)buf, .length = 64,
		.lkey = mr->lkey };
	struct ibv_send_wr w = { .wr_id = id, .sg_list = &s, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;

	return ibv_post_send(qp, &w, &bad);
}

static int
recv_one(struct ibv_qp *qp, uint64_t id, uint32_t off)
{
	struct ibv_sge s = { .addr = (uintptr_t)buf + off, .length = 64,
		.lkey = mr->lkey };
	struct ibv_recv_wr w = { .wr_id = id, .sg_list = &s, .num_sge = 1 },
		*bad;

	return ibv_post_recv(qp, &w, &bad);
}

/* The sender's completions: n of them, or stop. */
static void
reap(int n)
{
	struct ibv_wc wc;
	int got;

	while (n > 0 && !stop) {
		got = ibv_poll_cq(cqa, 1, &wc);
		if (got < 0 || (got == 1 && wc.status != IBV_WC_SUCCESS))
			stop = 1;
		n -= got > 0 ? got : 0;
	}
}

static void *
helper(void *arg)
{
	int done = 0, r;

	(void)arg;
	while (!stop) {
		r = __atomic_load_n(&job_round, __ATOMIC_ACQUIRE);
		if (r == done) {
			usleep(100);
			continue;
		}
		done = r;
		usleep(2000);	/* the waiter is spinning by now */
		if (send_one(qa1, (uint64_t)r) != 0 || (job_qps == 2 &&
				send_one(qa2, (uint64_t)r) != 0)) {
			stop = 1;
			break;
		}
		while (__atomic_load_n(&job_hold, __ATOMIC_ACQUIRE) == r &&
				!stop)
			usleep(100);
		reap(job_qps);
	}
	return NULL;
}

static void
job(int r, int qps)
{
	job_qps = qps;
	__atomic_store_n(&job_round, r, __ATOMIC_RELEASE);
}

static int
fd_readable(int timeout_ms)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };

	return poll(&p, 1, timeout_ms) == 1 && (p.revents & POLLIN);
}

/* One event: its CQ (acked), or NULL. */
static struct ibv_cq *
event(void)
{
	struct ibv_cq *cq;
	void *ctx;

	if (ibv_get_cq_event(ch, &cq, &ctx) != 0)
		return NULL;
	ibv_ack_cq_events(cq, 1);
	return cq;
}

/* The receive a CQ got: 1 if there, good. */
static int
received(struct ibv_cq *cq)
{
	struct ibv_wc wc;
	int i, got = 0;

	for (i = 0; i < 1000000 && got == 0; i++)
		got = ibv_poll_cq(cq, 1, &wc);
	return got == 1 && wc.status == IBV_WC_SUCCESS && wc.byte_len == 64;
}

/* One event a round, fired while this thread spins. */
static void
spin_events(int *round)
{
	struct ibv_cq *x;
	int r, good = 0, quiet = 0;

	for (r = 0; r < ROUNDS && !stop; r++) {
		if (recv_one(qb1, r, 1024) || ibv_req_notify_cq(cq1, 0))
			break;
		job(++*round, 1);
		x = event();
		good += x == cq1 && received(cq1);
		quiet += !fd_readable(0);
	}
	CHECK(good == ROUNDS, "%d of %d events during the spin", good, ROUNDS);
	CHECK(quiet == ROUNDS, "the fd quiet after each (%d of %d)", quiet,
		ROUNDS);
}

/* Two CQs of the channel fire together. */
static void
two_cqs(int *round)
{
	struct ibv_cq *x, *y;
	int r, good = 0, quiet = 0;

	for (r = 0; r < ROUNDS && !stop; r++) {
		int readable;

		if (recv_one(qb1, r, 1024) || recv_one(qb2, r, 2048) ||
				ibv_req_notify_cq(cq1, 0) ||
				ibv_req_notify_cq(cq2, 0))
			break;
		job(++*round, 2);
		x = event();
		/* the other is pending, or about to fire: either way the
		 * fd says so */
		readable = fd_readable(10000);
		y = readable ? event() : NULL;
		good += readable && x != NULL && y != NULL && x != y &&
			(x == cq1 || x == cq2) && (y == cq1 || y == cq2) &&
			received(cq1) && received(cq2);
		quiet += !fd_readable(0);
	}
	CHECK(good == ROUNDS, "%d of %d rounds: two CQs fired, the fd readable "
		"until both were taken", good, ROUNDS);
	CHECK(quiet == ROUNDS, "the fd quiet after both (%d of %d)", quiet,
		ROUNDS);
}

/* Non-blocking: nothing fired says so at once; then an event. */
static void
non_blocking(int *round)
{
	struct ibv_cq *x, *y;
	int n, fl;

	fl = fcntl(ch->fd, F_GETFL);
	fcntl(ch->fd, F_SETFL, fl | O_NONBLOCK);
	x = NULL;
	errno = 0;
	CHECK(ibv_get_cq_event(ch, &x, (void **)&y) == -1 && errno == EAGAIN,
		"a non-blocking channel with nothing fired: EAGAIN (%s)",
		strerror(errno));
	if (recv_one(qb1, 0, 1024) == 0 && ibv_req_notify_cq(cq1, 0) == 0)
		job(++*round, 1);
	n = fd_readable(10000);
	x = n ? event() : NULL;
	CHECK(n && x == cq1 && received(cq1) && !fd_readable(0),
		"then poll() sees the event and ibv_get_cq_event takes it");
	fcntl(ch->fd, F_SETFL, fl);
}

/* A program that waits in poll() first. */
static void
poll_first(int *round)
{
	struct ibv_cq *x;
	int r, good = 0;

	for (r = 0; r < ROUNDS && !stop; r++) {
		if (recv_one(qb1, r, 1024) || ibv_req_notify_cq(cq1, 0))
			break;
		job(++*round, 1);
		if (!fd_readable(10000))
			break;
		x = event();
		good += x == cq1 && received(cq1) && !fd_readable(0);
	}
	CHECK(good == ROUNDS, "%d of %d events through poll(), then "
		"ibv_get_cq_event", good, ROUNDS);
}

/* A spin that gets its event, then a wait in poll() that only the
 * progress thread can end (the sender holds its reap). */
static void
spin_then_poll(int *round)
{
	struct ibv_cq *x;
	int n, r, good = 0;

	for (r = 0; r < ROUNDS && !stop; r++) {
		if (recv_one(qb1, r, 1024) || ibv_req_notify_cq(cq1, 0))
			break;
		job(++*round, 1);
		x = event();
		if (x != cq1 || !received(cq1) || recv_one(qb1, r, 1024) ||
				ibv_req_notify_cq(cq1, 0))
			break;
		__atomic_store_n(&job_hold, ++*round, __ATOMIC_RELEASE);
		job(*round, 1);
		n = fd_readable(10000);
		__atomic_store_n(&job_hold, 0, __ATOMIC_RELEASE);
		if (!n)
			break;
		x = event();
		good += x == cq1 && received(cq1) && !fd_readable(0);
	}
	CHECK(good == ROUNDS, "%d of %d events: the spin's, then the progress "
		"thread's to a sleeper in poll()", good, ROUNDS);
}

int
main(void)
{
	struct ibv_device **list;
	struct ibv_context *ctx;
	int round = 0;	/* on across the steps: the helper sends once a
			 * round differs from the last it did */
	pthread_t t;

	setvbuf(stdout, NULL, _IOLBF, 0);
	ctx = loop_open(&list, &buf, &mr, BUF);
	ch = ctx ? ibv_create_comp_channel(ctx) : NULL;
	cqa = ctx ? ibv_create_cq(ctx, 64, NULL, NULL, 0) : NULL;
	cq1 = ch ? ibv_create_cq(ctx, 64, NULL, ch, 0) : NULL;
	cq2 = ch ? ibv_create_cq(ctx, 64, NULL, ch, 0) : NULL;
	if (!mr || loop_pair(cqa, cq1, &qa1, &qb1) != 0 ||
			loop_pair(cqa, cq2, &qa2, &qb2) != 0) {
		printf("FAIL: set-up: %s\n", strerror(errno));
		return 1;
	}
	if (pthread_create(&t, NULL, helper, NULL) != 0) {
		printf("FAIL: pthread_create\n");
		return 1;
	}
	spin_events(&round);
	two_cqs(&round);
	non_blocking(&round);
	poll_first(&round);
	spin_then_poll(&round);

	stop = 1;
	pthread_join(t, NULL);
	ibv_destroy_qp(qa1);
	ibv_destroy_qp(qa2);
	ibv_destroy_qp(qb1);
	ibv_destroy_qp(qb2);
	ibv_destroy_cq(cqa);
	ibv_destroy_cq(cq1);
	ibv_destroy_cq(cq2);
	ibv_destroy_comp_channel(ch);
	ibv_dereg_mr(mr);
	ibv_dealloc_pd(loop_pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
