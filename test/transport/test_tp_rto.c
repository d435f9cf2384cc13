/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * The adaptive retransmission timer (tp_rto.c): once a round trip is
 * measured, a tail loss and a lost retransmission cost about the timer's
 * floor, not the QP's local ACK timeout; a floor at or above that timeout
 * gives the fixed timer back; and the retry budget still runs out after
 * retry_cnt local ACK timeouts without progress, no sooner.
 */

#include <inttypes.h>

#include "tp_util.h"

static struct fakelink L;

/* frames from side 0 to drop, by their index since drop_reset() */
static uint32_t drop_at[4], ndrop, sent0;

static int
drop_filter(struct fakelink *l, int dir, const uint8_t *f, uint32_t len)
{
	uint32_t i, n;

	(void)l;
	(void)f;
	(void)len;
	if (dir != 0)
		return 0;
	n = sent0++;
	for (i = 0; i < ndrop; i++)
		if (drop_at[i] == n)
			return 1;
	return 0;
}

static void
drop_reset(uint32_t a, uint32_t b)
{
	sent0 = 0;
	ndrop = 0;
	if (a != UINT32_MAX)
		drop_at[ndrop++] = a;
	if (b != UINT32_MAX)
		drop_at[ndrop++] = b;
}

static void
pair_make(struct pair *p, const struct fl_qp_opts *o, uint32_t rto_min_us)
{
	struct pair_cfg c = {
		.buf_len = 65536, .acc1 = ACC_ALL, .o = o,
	};

	fl_rto_min_us = rto_min_us;
	CHECK_EQ(fl_init(&L, 9, 1500), 0, "fakelink");
	L.filter = drop_filter;
	drop_reset(UINT32_MAX, UINT32_MAX);
	pair_create(&L, p, &c);
}

static void
pair_free(struct pair *p)
{
	pair_destroy(p);
	fl_fini(&L);
}

/* A WRITE of len bytes from the start of b[0] to the start of b[1]. */
static void
post_write(struct pair *p, uint32_t len, uint64_t id)
{
	CHECK_EQ(pair_post(p, IBV_WR_RDMA_WRITE, 0, len, REMOTE(p, 0), RKEY(p),
		id), 0, "post write");
}

/* A WRITE of len bytes to its end: the virtual time it took, its data
 * checked; UINT64_MAX if it failed or did not end within max_ns. */
static uint64_t
timed_write(struct pair *p, uint32_t len, uint32_t seed, uint64_t max_ns)
{
	uint64_t t0 = L.now;
	struct ibv_wc wc;

	pattern(p->b[0].p, len, seed);
	post_write(p, len, seed);
	if (pair_wait(p, 0, &wc, max_ns) != 0 ||
			wc.status != IBV_WC_SUCCESS)
		return UINT64_MAX;
	CHECK(pattern_ok(p->b[1].p, len, seed), "WRITE %u: every byte", seed);
	return L.now - t0;
}

/* Round trips to measure: WRITEs without loss. */
static void
warm_up(struct pair *p)
{
	uint32_t i;

	for (i = 0; i < 20; i++)
		CHECK(timed_write(p, 4096, 100 + i, 10000000) < 1000000,
			"warm-up WRITE %u", i);
}

/* 8 packets, the last lost: only a timeout recovers it. */
static void
test_tail_loss(uint32_t rto_min_us, uint64_t lo_ns, uint64_t hi_ns,
		const char *what)
{
	struct fl_qp_opts o;
	struct pair p;
	uint64_t t;

	fl_qp_opts_default(&o);
	o.timeout = 14;		/* 67 ms */
	pair_make(&p, &o, rto_min_us);
	warm_up(&p);
	drop_reset(7, UINT32_MAX);
	t = timed_write(&p, 8192, 1, 1000000000);
	CHECK(t >= lo_ns && t <= hi_ns, "%s: tail loss recovered in %" PRIu64
		" ns, want %" PRIu64 " to %" PRIu64, what, t, lo_ns, hi_ns);
	pair_free(&p);
}

/* 16 packets, the 4th lost and then its retransmission (after the
 * sequence NAK) too: the responder NAKs a gap once, so only a timeout
 * recovers. */
static void
test_lost_retransmission(void)
{
	struct droce_tp_stats st;
	struct fl_qp_opts o;
	struct pair p;
	uint64_t t;

	fl_qp_opts_default(&o);
	o.timeout = 14;
	pair_make(&p, &o, 0);
	warm_up(&p);
	drop_reset(3, 16);
	t = timed_write(&p, 16384, 2, 1000000000);
	droce_qp_stats(p.qp[0], &st);
	CHECK(t < 5000000, "lost retransmission recovered in %" PRIu64
		" ns, want under 5 ms (local ACK timeout 67 ms)", t);
	CHECK(st.nak_seq_rx >= 1 && st.timeouts >= 1, "a NAK (%" PRIu64
		") and a timeout (%" PRIu64 ")", st.nak_seq_rx, st.timeouts);
	CHECK_EQ(st.timeouts_charged, 0, "no local ACK timeout charged");
	CHECK_EQ(droce_qp_state(p.qp[0]), IBV_QPS_RTS, "QP fine");
	pair_free(&p);
}

/*
 * A peer gone: the timer fires early, but the QP fails only after
 * retry_cnt + 1 local ACK timeouts without progress, as with the fixed
 * timer.
 */
static void
test_retry_budget(void)
{
	struct droce_tp_stats st;
	struct fl_qp_opts o;
	struct pair p;
	struct ibv_wc wc;
	uint64_t t0, t, tmo = droce_ack_timeout_ns(10);

	fl_qp_opts_default(&o);
	o.timeout = 10;		/* 4.19 ms */
	o.retry_cnt = 2;
	pair_make(&p, &o, 0);
	warm_up(&p);
	L.faults[0].stalled = 1;
	t0 = L.now;
	post_write(&p, 4096, 7);
	CHECK_EQ(pair_wait(&p, 0, &wc, 1000000000), 0, "completion");
	t = L.now - t0;
	CHECK_EQ(wc.status, IBV_WC_RETRY_EXC_ERR, "retry exceeded");
	CHECK(t >= 3 * tmo && t <= 5 * tmo, "failed after %" PRIu64
		" ns, want 3 to 5 local ACK timeouts of %" PRIu64, t, tmo);
	droce_qp_stats(p.qp[0], &st);
	CHECK(st.timeouts > 3, "early timeouts too: %" PRIu64, st.timeouts);
	CHECK_EQ(st.timeouts_charged, 3, "retry_cnt + 1 local ACK timeouts "
		"charged");
	L.faults[0].stalled = 0;
	pair_free(&p);
}

int
main(void)
{
	/* the default floor, 1 ms: recovered in about that */
	test_tail_loss(0, 900000, 5000000, "default floor");
	/* a floor of 200 us */
	test_tail_loss(200, 150000, 1000000, "floor 200 us");
	/* a floor above the local ACK timeout: the fixed timer */
	test_tail_loss(100000, 60000000, 80000000, "fixed timer");
	test_lost_retransmission();
	test_retry_budget();
	return check_report("test_tp_rto");
}
