/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * verbs_event_wait [TELEMETRY-SOCKET | droced:TELEMETRY-SOCKET]: a thread that sleeps on a
 * completion channel gets each completion from the progress thread, with
 * many idle queues beside it (armed and not), and the thread never naps
 * while the sleeper's CQ is armed: the port's awaited_naps counter (its
 * own DPDK telemetry, when given the socket) stays 0 and awaited_passes
 * grows. Run with DROCE_EVENT_SPIN_US=0, so that the sleeper does not
 * drive its queue itself first. Functional: nothing here is timed.
 *
 * Each round: B posts a receive, arms its CQ and blocks in
 * ibv_get_cq_event; a helper thread waits until B's thread is asleep
 * (its state in /proc), then A sends. Attached to a droced in idle mode
 * (droced:TELEMETRY-SOCKET), the same rounds, and droced's count of the
 * naps it skipped for the session's armed channel grows.
 *
 * Then signals, as rdma-core's read() of the channel takes them: one
 * whose handler has no SA_RESTART ends the wait with EINTR (qperf ends
 * its timed tests so); with SA_RESTART the wait goes on and gets the
 * event that comes after.
 */

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <infiniband/verbs.h>

#include "verbs_loop.h"
#include "verbs_tele.h"

#define ROUNDS	200
#define IDLE	24
#define BUF	4096

static struct ibv_mr *mr;
static char *buf;
static struct ibv_qp *qa, *qb;
static struct ibv_cq *cqa;
static volatile pid_t sleeper_tid;
static volatile int round_go, stop;

/* Whether thread tid sleeps (state S: blocked in the channel's read). */
static int
asleep(pid_t tid)
{
	char path[64], st[512], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	f = fopen(path, "r");
	if (f == NULL)
		return 0;
	n = fread(st, 1, sizeof(st) - 1, f);
	fclose(f);
	st[n] = '\0';
	p = strrchr(st, ')');
	return p != NULL && p[1] == ' ' && p[2] == 'S';
}

/* Each round: once B's thread sleeps, A sends; A's completion polled. */
static void *
sender(void *arg)
{
	int r;

	(void)arg;
	for (r = 0; r < ROUNDS && !stop; r++) {
		struct ibv_sge s = { .addr = (uintptr_t)buf, .length = 64,
			.lkey = mr->lkey };
		struct ibv_send_wr w = { .wr_id = (uint64_t)r, .sg_list = &s,
			.num_sge = 1, .opcode = IBV_WR_SEND,
			.send_flags = IBV_SEND_SIGNALED }, *bad;
		struct ibv_wc wc;
		int got = 0, spins = 0;

		while (__atomic_load_n(&round_go, __ATOMIC_ACQUIRE) <= r && !stop)
			usleep(100);
		/* its read(): a few tries, as a scheduler may show it
		 * running for a moment after it blocked */
		while (!asleep(sleeper_tid) && !stop && spins++ < 20000)
			usleep(50);
		memcpy(buf, &r, sizeof(r));
		if (ibv_post_send(qa, &w, &bad) != 0) {
			stop = 1;
			break;
		}
		while (got == 0 && !stop)
			got = ibv_poll_cq(cqa, 1, &wc);
		if (got < 0 || wc.status != IBV_WC_SUCCESS || wc.wr_id != (uint64_t)r)
			stop = 1;
	}
	return NULL;
}

static volatile int sig_count, waiter_back;
static pthread_t sleeper;

static void
on_signal(int s)
{
	(void)s;
	sig_count++;
}

/* Wait till the sleeper blocks (a few tries: a scheduler may show it
 * running for a moment after it blocked). */
static void
until_asleep(void)
{
	int spins = 0;

	while (!asleep(sleeper_tid) && spins++ < 20000)
		usleep(50);
}

/* Signal the sleeper once it blocks; with arg, send once it blocks again
 * after the handler ran. Without, send anyway if the wait goes on 10 s
 * after the signal (it should have ended: then it ends with the event). */
static void *
signaller(void *arg)
{
	struct ibv_sge s = { .addr = (uintptr_t)buf, .length = 64,
		.lkey = mr->lkey };
	struct ibv_send_wr w = { .wr_id = 7, .sg_list = &s, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;
	int before = sig_count, got = 0, spins = 0;

	until_asleep();
	pthread_kill(sleeper, SIGUSR1);
	if (arg == NULL) {
		while (!waiter_back && spins++ < 200000)
			usleep(50);
		if (waiter_back)
			return NULL;
	} else {
		while (sig_count == before && spins++ < 200000)
			usleep(50);
		until_asleep();
	}
	if (ibv_post_send(qa, &w, &bad) != 0)
		return NULL;
	while (got == 0)
		got = ibv_poll_cq(cqa, 1, &wc);
	return NULL;
}

/* One wait with SIGUSR1's handler installed with flags. */
static int
wait_signalled(struct ibv_comp_channel *ch, struct ibv_cq *cqb, int flags,
		int send, struct ibv_cq **got)
{
	struct sigaction sa = { .sa_handler = on_signal, .sa_flags = flags };
	void *ectx;
	pthread_t t;
	int rc, e;

	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	*got = NULL;
	waiter_back = 0;
	if (ibv_req_notify_cq(cqb, 0) != 0 ||
			pthread_create(&t, NULL, signaller, send ? &sa : NULL))
		return -2;
	rc = ibv_get_cq_event(ch, got, &ectx);
	e = errno;
	waiter_back = 1;
	pthread_join(t, NULL);
	signal(SIGUSR1, SIG_DFL);
	errno = e;
	return rc;
}

/* main's objects: B's channel and CQ, and the idle queues. */
struct wait_objs {
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_comp_channel *ch, *idle_ch[IDLE];
	struct ibv_cq *cqb, *idle_cq[IDLE];
	struct ibv_qp *idle_qp[IDLE];
};

/* The telemetry socket (droced: when attached) and its counters before
 * the rounds. */
struct tele_base {
	const char *tele;
	int attached;
	int64_t naps0, passes0;
};

/* The pair A to B, B's CQ on a channel, and the idle queues beside it:
 * 0, or -1 (said). */
static int
set_up(struct wait_objs *o)
{
	int i;

	o->ctx = loop_open(&o->list, &buf, &mr, BUF);
	o->ch = o->ctx ? ibv_create_comp_channel(o->ctx) : NULL;
	cqa = o->ctx ? ibv_create_cq(o->ctx, 64, NULL, NULL, 0) : NULL;
	o->cqb = o->ch ? ibv_create_cq(o->ctx, 64, NULL, o->ch, 0) : NULL;
	if (!mr || loop_pair(cqa, o->cqb, &qa, &qb) != 0) {
		printf("FAIL: set-up: %s\n", strerror(errno));
		return -1;
	}
	/* idle queues beside it: each its own channel, every other armed */
	for (i = 0; i < IDLE; i++) {
		o->idle_ch[i] = ibv_create_comp_channel(o->ctx);
		o->idle_cq[i] = o->idle_ch[i] ? ibv_create_cq(o->ctx, 16, NULL,
			o->idle_ch[i], 0) : NULL;
		o->idle_qp[i] = o->idle_cq[i] ? make_qp(o->idle_cq[i]) : NULL;
		if (o->idle_qp[i] == NULL) {
			printf("FAIL: idle queue %d: %s\n", i, strerror(errno));
			return -1;
		}
		if (i % 2 == 0)
			ibv_req_notify_cq(o->idle_cq[i], 0);
	}
	return 0;
}

static void
tele_before(struct tele_base *tb)
{
	if (tb->attached) {
		tb->passes0 = counter(tb->tele, "awaited_skips");
		CHECK(tb->passes0 >= 0, "droced's telemetry answers (%s)",
			tb->tele);
	} else if (tb->tele != NULL) {
		tb->naps0 = counter(tb->tele, "awaited_naps");
		tb->passes0 = counter(tb->tele, "awaited_passes");
		CHECK(tb->naps0 >= 0 && tb->passes0 >= 0, "the port's "
			"telemetry answers (%s)", tb->tele);
	}
}

/* The rounds, this thread B asleep in each, the sender thread A: 0, or
 * -1 without the sender. */
static int
rounds(struct wait_objs *o)
{
	pthread_t t;
	int r, events = 0, good = 0;

	sleeper_tid = (pid_t)syscall(SYS_gettid);
	if (pthread_create(&t, NULL, sender, NULL) != 0) {
		printf("FAIL: pthread_create\n");
		return -1;
	}
	for (r = 0; r < ROUNDS && !stop; r++) {
		struct ibv_sge s = { .addr = (uintptr_t)buf + 1024,
			.length = 64, .lkey = mr->lkey };
		struct ibv_recv_wr w = { .wr_id = (uint64_t)r, .sg_list = &s,
			.num_sge = 1 }, *bad;
		struct ibv_cq *ecq;
		struct ibv_wc wc;
		void *ectx;
		int got = 0, v;

		if (ibv_post_recv(qb, &w, &bad) != 0 ||
				ibv_req_notify_cq(o->cqb, 0) != 0)
			break;
		__atomic_store_n(&round_go, r + 1, __ATOMIC_RELEASE);
		/* an event per round; a completion may come before its own
		 * (the CQ is polled to empty after each) */
		while (got == 0) {
			if (ibv_get_cq_event(o->ch, &ecq, &ectx) != 0 ||
					ecq != o->cqb)
				break;
			events++;
			ibv_ack_cq_events(ecq, 1);
			got = ibv_poll_cq(o->cqb, 1, &wc);
			if (got == 0 && ibv_req_notify_cq(o->cqb, 0) != 0)
				break;
			if (got == 0)
				got = ibv_poll_cq(o->cqb, 1, &wc);
		}
		memcpy(&v, buf + 1024, sizeof(v));
		if (got == 1 && wc.status == IBV_WC_SUCCESS &&
				wc.wr_id == (uint64_t)r && wc.byte_len == 64 &&
				v == r)
			good++;
		else
			break;
	}
	stop = r < ROUNDS;
	pthread_join(t, NULL);
	CHECK(good == ROUNDS, "%d of %d receives, each woken by its channel "
		"(%d events), with %d idle queues beside", good, ROUNDS,
		events, IDLE);
	return 0;
}

static void
tele_after(const struct tele_base *tb)
{
	int64_t naps, passes;

	if (tb->attached) {
		passes = counter(tb->tele, "awaited_skips");
		CHECK(passes > tb->passes0, "droced skipped its naps for the "
			"armed channel (%" PRId64 " times)",
			passes - tb->passes0);
	} else if (tb->tele != NULL) {
		naps = counter(tb->tele, "awaited_naps");
		passes = counter(tb->tele, "awaited_passes");
		CHECK(passes > tb->passes0, "the progress thread served the "
			"awaited queue (%" PRId64 " passes)",
			passes - tb->passes0);
		CHECK(naps == tb->naps0, "and never napped while it was "
			"awaited (%" PRId64 " naps)", naps - tb->naps0);
	}
}

/* Signals: EINTR without SA_RESTART, the event with it. */
static void
signals(struct wait_objs *o)
{
	struct ibv_sge s = { .addr = (uintptr_t)buf + 1024,
		.length = 64, .lkey = mr->lkey };
	struct ibv_recv_wr w[2] = {
		{ .wr_id = 98, .sg_list = &s, .num_sge = 1,
			.next = &w[1] },
		{ .wr_id = 99, .sg_list = &s, .num_sge = 1 } }, *bad;
	struct ibv_cq *ecq;
	struct ibv_wc wc;
	int i, rc, got = 0, sigs;

	sleeper = pthread_self();
	ibv_post_recv(qb, w, &bad);
	errno = 0;
	rc = wait_signalled(o->ch, o->cqb, 0, 0, &ecq);
	if (rc == 0)	/* the send after 10 s ended it */
		ibv_ack_cq_events(ecq, 1);
	CHECK(rc == -1 && errno == EINTR, "a signal without SA_RESTART "
		"ends the wait: EINTR (rc %d, %s)", rc, strerror(errno));
	sigs = sig_count;
	rc = wait_signalled(o->ch, o->cqb, SA_RESTART, 1, &ecq);
	if (rc == 0)
		ibv_ack_cq_events(ecq, 1);
	for (i = 0; rc == 0 && got == 0 && i < 1000000; i++)
		got = ibv_poll_cq(o->cqb, 1, &wc);
	CHECK(rc == 0 && ecq == o->cqb && sig_count > sigs && got == 1 &&
		wc.status == IBV_WC_SUCCESS && wc.wr_id == 98,
		"with SA_RESTART the wait goes on past the signal and "
		"gets the event (rc %d)", rc);
}

static void
tear_down(struct wait_objs *o)
{
	int i;

	for (i = 0; i < IDLE; i++) {
		ibv_destroy_qp(o->idle_qp[i]);
		ibv_destroy_cq(o->idle_cq[i]);
		ibv_destroy_comp_channel(o->idle_ch[i]);
	}
	ibv_destroy_qp(qa);
	ibv_destroy_qp(qb);
	ibv_destroy_cq(cqa);
	ibv_destroy_cq(o->cqb);
	ibv_destroy_comp_channel(o->ch);
	ibv_dereg_mr(mr);
	ibv_dealloc_pd(loop_pd);
	ibv_close_device(o->ctx);
	ibv_free_device_list(o->list);
}

int
main(int argc, char **argv)
{
	struct tele_base tb = { .tele = argc > 1 ? argv[1] : NULL };
	struct wait_objs o;

	setvbuf(stdout, NULL, _IOLBF, 0);
	memset(&o, 0, sizeof(o));
	if (set_up(&o) != 0)
		return 1;
	tb.attached = tb.tele != NULL && strncmp(tb.tele, "droced:", 7) == 0;
	tele_before(&tb);
	if (rounds(&o) != 0)
		return 1;
	tele_after(&tb);
	if (!stop)
		signals(&o);
	tear_down(&o);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
