/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * DCQCN's reaction point (tp_dcqcn.c) against scripted CNP sequences, no
 * frames and no DPDK: each rule of the rate machine on its own (the cut
 * and its bounds, one cut per monitor period, alpha's updates, fast
 * recovery, additive and hyper increase by timer and by byte counter,
 * the way back to the line rate), then a long scripted run against a
 * reference model in floating point written from the published
 * formulas.
 */

#include <inttypes.h>
#include <math.h>
#include <stdio.h>

#include "check.h"
#include "tp_dcqcn.h"

#define US 1000ull
#define G25 25000ull	/* Mbit/s */

static struct droce_dcqcn_params P;
static struct tp_dcqcn_conf C;

static void
setup(uint64_t line_mbps)
{
	droce_dcqcn_params_default(&P);
	tp_dcqcn_conf(&C, &P, line_mbps);
}

static double
ratio(uint64_t a, uint64_t b)
{
	return (double)a / (double)b;
}

/* ConnectX's defaults, and a flow that never saw a CNP costs nothing. */
static void
test_defaults_and_idle(void)
{
	struct tp_dcqcn s = { 0 };

	setup(G25);
	CHECK(P.rp_rate_reduce_monitor_period == 4 &&
		P.rp_initial_alpha_value == 1023 && P.rp_dce_tcp_g == 1019 &&
		P.rp_dce_tcp_rtt == 1 && P.rp_time_reset == 300 &&
		P.rp_byte_reset == 32767 && P.rp_threshold == 1 &&
		P.rp_ai_rate == 5 && P.rp_hai_rate == 50 &&
		P.rp_min_dec_fac == 50 && P.rp_min_rate == 1 &&
		P.rp_gd == 11 && P.rp_rate_to_set_on_first_cnp == 0 &&
		P.rp_clamp_tgt_rate == 0 && P.rp_clamp_tgt_rate_ati == 1,
		"ConnectX's defaults");
	tp_dcqcn_sent(&s, &C, 1 << 20, 5 * US);
	tp_dcqcn_advance(&s, &C, 1000 * US);
	CHECK(!s.limited && s.bytes == 0 && s.t_stage == 0,
		"no CNP: not limited, nothing counted");
}

/* The first CNP: alpha 1023/1024, a cut to about half, target the line. */
static void
test_first_cut_and_monitor(void)
{
	struct tp_dcqcn s = { 0 };
	uint64_t rc;

	setup(G25);
	tp_dcqcn_cnp(&s, &C, 100 * US);
	CHECK(s.limited && s.alpha >> 10 == 1023, "limited, alpha %u",
		s.alpha >> 10);
	CHECK(fabs(ratio(s.rc, G25 * 1000000) - (1 - 1023.0 / 2048)) < 1e-6,
		"cut to %.4f of the line", ratio(s.rc, G25 * 1000000));
	CHECK_EQ(s.rt, G25 * 1000000, "target stays the line (not clamped)");
	rc = s.rc;
	tp_dcqcn_cnp(&s, &C, 102 * US);
	tp_dcqcn_cnp(&s, &C, 103 * US);
	CHECK(s.rc == rc && s.cuts == 1 && s.cnps == 3,
		"no second cut within 4 us (%" PRIu64 " cuts)", s.cuts);
	tp_dcqcn_cnp(&s, &C, 104 * US);
	CHECK(s.cuts == 2 && s.rc < rc, "a cut 4 us after the last");
	/* alpha: CNPs in each period since the first stay near 1 */
	CHECK(s.alpha >> 10 >= 1000, "alpha near 1 under CNPs: %u",
		s.alpha >> 10);
}

/* The bounds of a cut: min_dec_fac and min_rate. */
static void
test_cut_bounds(void)
{
	struct tp_dcqcn s = { 0 };
	uint64_t t = 0;
	int i;

	droce_dcqcn_params_default(&P);
	P.rp_initial_alpha_value = 1024;
	P.rp_gd = 10;		/* alpha/1024: a cut to nothing ... */
	tp_dcqcn_conf(&C, &P, G25);
	tp_dcqcn_cnp(&s, &C, t);
	CHECK_EQ(s.rc, G25 * 1000000 / 2, "... kept at min_dec_fac, 50%%");
	for (i = 0; i < 40; i++) {
		t += 5 * US;
		tp_dcqcn_cnp(&s, &C, t);
	}
	CHECK(s.rc == 1000000, "floor at min_rate, 1 Mbit/s: %" PRIu64,
		s.rc);
	P.rp_rate_to_set_on_first_cnp = 1000;
	tp_dcqcn_conf(&C, &P, G25);
	s = (struct tp_dcqcn){ 0 };
	tp_dcqcn_cnp(&s, &C, 0);
	CHECK_EQ(s.rc, 500000000ull, "rate_to_set_on_first_cnp, then cut");
}

/* Alpha falls by g each quiet period, caught up when next looked at, and
 * keeps its precision: a small alpha does not round down to nothing. */
static void
test_alpha_decay(void)
{
	struct tp_dcqcn s = { 0 };
	double a = 1023.0 / 1024, got;
	int i;

	setup(G25);
	tp_dcqcn_cnp(&s, &C, 0);
	for (i = 0; i < 100; i++)
		a *= 1019.0 / 1024;
	tp_dcqcn_advance(&s, &C, 100 * US + 500);
	got = s.alpha / 1048576.0;
	CHECK(fabs(got - a) < 1e-4, "alpha after 100 quiet us: %.5f (%.5f)",
		got, a);
	tp_dcqcn_cnp(&s, &C, 100 * US + 700);
	tp_dcqcn_advance(&s, &C, 101 * US);
	a = a * 1019 / 1024 + 5.0 / 1024;
	got = s.alpha / 1048576.0;
	CHECK(fabs(got - a) < 1e-4, "a CNP in the period: alpha rises by g: "
		"%.5f (%.5f)", got, a);
	/* 2 ms quiet: 0.6%% of what it was, still there */
	tp_dcqcn_advance(&s, &C, 1100 * US);
	got = s.alpha / 1048576.0;
	a *= pow(1019.0 / 1024, 999);
	CHECK(s.alpha > 0 && fabs(got - a) < 1e-4, "alpha after 1 ms: %.6f "
		"(%.6f)", got, a);
}

/* Increases: additive by byte counter, the timer's stages, hyper. */
static void
test_increases(void)
{
	struct tp_dcqcn s = { 0 };
	uint64_t line = G25 * 1000000, rt, rc;

	droce_dcqcn_params_default(&P);
	P.rp_clamp_tgt_rate = 1;	/* the target follows each cut */
	P.rp_threshold = 2;		/* a fast-recovery stage to see */
	tp_dcqcn_conf(&C, &P, G25);
	tp_dcqcn_cnp(&s, &C, 0);
	CHECK_EQ(s.rt, line, "clamped: target = the rate before the cut");
	tp_dcqcn_cnp(&s, &C, 10 * US);
	rt = s.rt;
	rc = s.rc;
	CHECK(rt < line, "target clamped to the cut's rate");
	/* one byte-counter stage (1 < threshold 2): fast recovery */
	tp_dcqcn_sent(&s, &C, 32767, 11 * US);
	CHECK(s.rt == rt && s.rc == (rt + rc) / 2,
		"fast recovery: halfway to the target, target kept");
	/* second stage (2: not below threshold, timer 0): additive */
	rc = s.rc;
	tp_dcqcn_sent(&s, &C, 32767, 12 * US);
	CHECK(s.rt == rt + 5000000 && s.rc == (s.rt + rc) / 2,
		"additive: target + 5 Mbit/s");
	/* the timer: 3 stages in 900 us; then both counters past the
	 * threshold: hyper */
	tp_dcqcn_advance(&s, &C, 10 * US + 900 * US);
	CHECK_EQ(s.t_stage, 3, "three timer stages in 900 us");
	rt = s.rt;
	rc = s.rc;
	tp_dcqcn_sent(&s, &C, 32767, 911 * US);
	CHECK(s.bc_stage == 3 && s.rt == rt + 50000000,
		"hyper: target + 50 Mbit/s (%" PRIu64 ")", s.rt - rt);
	/* bytes only: back to the line rate, then off the limiter */
	for (int i = 0; i < 100000 && s.limited; i++)
		tp_dcqcn_sent(&s, &C, 32767, 912 * US);
	CHECK(!s.limited && s.rc == line, "back at the line rate, unlimited");
}

/*
 * The reference: DCQCN's published rules in floating point, per event,
 * the same script. alpha per 1 us period, cut by alpha/2 bounded by 50%,
 * increases halfway to a target raised by AI or HAI.
 */
struct ref {
	int limited, cnp_in, timer_inc;
	double rc, rt, alpha, bytes;
	double alpha_at, timer_at, cut_at;
	int t, bc;
};

static void
ref_inc(struct ref *r, double line)
{
	int hi = r->t > r->bc ? r->t : r->bc, lo = r->t < r->bc ? r->t : r->bc;

	if (hi < 1)
		;
	else if (lo > 1)
		r->rt += 50e6;
	else
		r->rt += 5e6;
	if (r->rt > line)
		r->rt = line;
	r->rc = (r->rt + r->rc) / 2;
	if (r->rt == line && line - r->rc <= line / 1024) {
		r->rc = line;
		r->limited = 0;
	}
}

static void
ref_advance(struct ref *r, double now, double line)
{
	if (!r->limited)
		return;
	while (now - r->alpha_at >= 1000) {
		r->alpha = (1019 * r->alpha + (r->cnp_in ? 5 * 1024 : 0)) /
			1024;
		r->cnp_in = 0;
		r->alpha_at += 1000;
	}
	while (r->limited && now - r->timer_at >= 300000) {
		r->timer_at += 300000;
		r->t++;
		r->timer_inc = 1;
		ref_inc(r, line);
	}
}

static void
ref_cnp(struct ref *r, double now, double line)
{
	double rc;

	if (!r->limited) {
		r->limited = 1;
		r->rc = line;
		r->rt = line;
		r->alpha = 1023;
		r->alpha_at = now;
		r->cnp_in = 0;
	} else {
		ref_advance(r, now, line);
		r->cnp_in = 1;
		if (now - r->cut_at < 4000)
			return;
	}
	if (r->timer_inc || r->bc)
		r->rt = r->rc;
	rc = r->rc * (1 - r->alpha / 2048);
	r->rc = rc < r->rc / 2 ? r->rc / 2 : rc;
	r->cut_at = r->timer_at = now;
	r->timer_inc = 0;
	r->t = r->bc = 0;
	r->bytes = 0;
}

static void
ref_sent(struct ref *r, double bytes, double now, double line)
{
	if (!r->limited)
		return;
	ref_advance(r, now, line);
	r->bytes += bytes;
	if (r->bytes < 32767 || !r->limited)
		return;
	r->bytes = 0;
	r->bc++;
	ref_inc(r, line);
}

/*
 * 20 ms of a flow sending 4 KB frames at its rate, with CNPs in bursts
 * (as a congested queue sends them: every 5 us for a while, then quiet
 * for longer and longer): the machine follows the reference within
 * 0.1% at every frame, and in the end the flow is back at the line.
 */
static void
test_against_reference(void)
{
	struct tp_dcqcn s = { 0 };
	struct ref r = { 0 };
	double line = 25e9, worst = 0, d;
	uint64_t t = 0, next_cnp = 50 * US, end = 20000 * US;
	uint32_t burst = 0, frames = 0, bad = 0;

	setup(G25);
	while (t < end) {
		double rate = s.limited ? (double)s.rc : line;

		if (t >= next_cnp) {
			tp_dcqcn_cnp(&s, &C, t);
			ref_cnp(&r, (double)t, line);
			burst++;
			/* 20 CNPs 5 us apart, then a pause that grows */
			next_cnp = t + (burst % 20 ? 5 * US :
				(uint64_t)(burst / 20) * 400 * US);
			if (burst >= 200)
				next_cnp = UINT64_MAX;
		}
		tp_dcqcn_sent(&s, &C, 4096, t);
		ref_sent(&r, 4096, (double)t, line);
		frames++;
		if (s.limited != r.limited) {
			bad++;
		} else if (s.limited) {
			d = fabs((double)s.rc - r.rc) / r.rc;
			if (d > worst)
				worst = d;
		}
		t += (uint64_t)(4096 * 8 * 1e9 / rate) + 1;
	}
	CHECK(bad == 0 && worst < 5e-3, "%u frames: rate within %.5f%% of "
		"the reference (%u times limited differently)", frames,
		worst * 100, bad);
	CHECK(s.cuts > 10 && !s.limited, "%" PRIu64 " cuts, back at the "
		"line rate", s.cuts);
}

int
main(void)
{
	test_defaults_and_idle();
	test_first_cut_and_monitor();
	test_cut_bounds();
	test_alpha_decay();
	test_increases();
	test_against_reference();
	return check_report("test_tp_dcqcn");
}
