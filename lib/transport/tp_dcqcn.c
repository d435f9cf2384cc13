/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * DCQCN's reaction point (Zhu et al., SIGCOMM 2015), as ConnectX runs it
 * (its parameters and their meaning: doc/congestion.md). A flow runs at
 * the line rate, unlimited and at no cost, until a CNP comes. Then:
 *
 * - a cut: target = current (when the rate rose since the last cut, or
 *   with clamp_tgt_rate), current *= 1 - alpha/2, at
 *   most one per rate_reduce_monitor_period, never below min_dec_fac of
 *   what it was nor below min_rate;
 * - alpha, the estimate of how congested the path is, moves every
 *   dce_tcp_rtt: towards 1 if a CNP came in the period, towards 0 if not,
 *   by (1024 - dce_tcp_g) / 1024;
 * - increases, each time the timer (time_reset) or the byte counter
 *   (byte_reset) completes a stage: fast recovery (current halfway to the
 *   target) while both are below threshold stages, then additive (target
 *   + ai), then hyper (target + hai) once both are past it; the current
 *   rate moves halfway to the target each time.
 *
 * Back at the line rate the flow leaves the limiter. Everything runs from
 * the calls the data path makes (a CNP, bytes sent, a look at the clock):
 * no timer of its own, periods caught up when next looked at.
 */

#include "tp_dcqcn.h"

#define MBPS 1000000ull
/* caught-up periods beyond these change nothing more: alpha is 0, or
 * the rate is back */
#define ALPHA_CATCHUP_MAX 4096
/* alpha is kept to 1/2^20: in 1/1024 a small alpha decays to 0 in a few
 * periods (5 x 1019/1024 rounds down to 4), and a CNP every few periods
 * would then cut nothing */
#define ALPHA_SHIFT 20
#define ALPHA_ONE (1ull << ALPHA_SHIFT)
#define TIMER_CATCHUP_MAX 4096

void
droce_dcqcn_params_default(struct droce_dcqcn_params *p)
{
	*p = (struct droce_dcqcn_params){
		.rp_rate_reduce_monitor_period = 4,
		.rp_initial_alpha_value = 1023,
		.rp_dce_tcp_g = 1019,
		.rp_dce_tcp_rtt = 1,
		.rp_time_reset = 300,
		.rp_byte_reset = 32767,
		.rp_threshold = 1,
		.rp_ai_rate = 5,
		.rp_hai_rate = 50,
		.rp_gd = 11,
		.rp_min_dec_fac = 50,
		.rp_min_rate = 1,
		.rp_rate_to_set_on_first_cnp = 0,
		.rp_clamp_tgt_rate = 0,
		.rp_clamp_tgt_rate_ati = 1,
	};
}

void
tp_dcqcn_conf(struct tp_dcqcn_conf *c, const struct droce_dcqcn_params *p,
		uint64_t line_mbps)
{
	c->line_bps = (line_mbps ? line_mbps : 100000) * MBPS;
	c->monitor_ns = (uint64_t)p->rp_rate_reduce_monitor_period * 1000;
	c->alpha_period_ns = (uint64_t)(p->rp_dce_tcp_rtt ?
		p->rp_dce_tcp_rtt : 1) * 1000;
	c->time_reset_ns = (uint64_t)p->rp_time_reset * 1000;
	c->byte_reset = p->rp_byte_reset;
	c->ai_bps = (uint64_t)p->rp_ai_rate * MBPS;
	c->hai_bps = (uint64_t)p->rp_hai_rate * MBPS;
	c->min_bps = (uint64_t)(p->rp_min_rate ? p->rp_min_rate : 1) * MBPS;
	if (c->min_bps > c->line_bps)
		c->min_bps = c->line_bps;
	c->first_bps = (uint64_t)p->rp_rate_to_set_on_first_cnp * MBPS;
	if (c->first_bps == 0 || c->first_bps > c->line_bps)
		c->first_bps = c->line_bps;
	c->initial_alpha = p->rp_initial_alpha_value > 1024 ? 1024 :
		p->rp_initial_alpha_value;
	c->g = p->rp_dce_tcp_g > 1024 ? 1024 : p->rp_dce_tcp_g;
	c->gd = p->rp_gd > 30 ? 30 : p->rp_gd;
	c->min_dec_fac = p->rp_min_dec_fac == 0 ? 1 :
		p->rp_min_dec_fac > 100 ? 100 : p->rp_min_dec_fac;
	c->threshold = p->rp_threshold;
	c->clamp = p->rp_clamp_tgt_rate;
	c->clamp_ati = p->rp_clamp_tgt_rate_ati;
}

/* One increase event (a stage of the timer or of the byte counter). */
static void
increase(struct tp_dcqcn *s, const struct tp_dcqcn_conf *c)
{
	uint32_t hi = s->t_stage > s->bc_stage ? s->t_stage : s->bc_stage;
	uint32_t lo = s->t_stage < s->bc_stage ? s->t_stage : s->bc_stage;

	if (hi < c->threshold)
		;			/* fast recovery: the target stays */
	else if (lo > c->threshold)
		s->rt += c->hai_bps;	/* hyper increase */
	else
		s->rt += c->ai_bps;	/* additive increase */
	if (s->rt > c->line_bps)
		s->rt = c->line_bps;
	s->rc = (s->rt + s->rc) / 2;
	/* halfway steps only approach the line rate: within 1/1024 of it
	 * the flow is back and leaves the limiter */
	if (s->rt == c->line_bps && c->line_bps - s->rc <= c->line_bps >> 10) {
		s->rc = c->line_bps;
		s->limited = 0;
	}
}

void
tp_dcqcn_advance(struct tp_dcqcn *s, const struct tp_dcqcn_conf *c,
		uint64_t now)
{
	uint64_t n, i;

	if (!s->limited)
		return;
	if (now - s->alpha_at >= c->alpha_period_ns) {
		n = (now - s->alpha_at) / c->alpha_period_ns;
		s->alpha_at += n * c->alpha_period_ns;
		s->alpha = (uint32_t)(((uint64_t)c->g * s->alpha +
			(s->cnp_in_period ? (1024ull - c->g) * ALPHA_ONE :
			0)) / 1024);
		s->cnp_in_period = 0;
		for (i = 1; i < n && i < ALPHA_CATCHUP_MAX && s->alpha; i++)
			s->alpha = (uint32_t)((uint64_t)c->g * s->alpha / 1024);
	}
	if (c->time_reset_ns == 0)
		return;
	for (i = 0; s->limited && now - s->timer_at >= c->time_reset_ns; i++) {
		if (i == TIMER_CATCHUP_MAX) {
			s->timer_at = now;
			break;
		}
		s->timer_at += c->time_reset_ns;
		s->t_stage++;
		s->timer_inc = 1;
		increase(s, c);
	}
}

void
tp_dcqcn_sent(struct tp_dcqcn *s, const struct tp_dcqcn_conf *c,
		uint64_t bytes, uint64_t now)
{
	if (!s->limited)
		return;
	tp_dcqcn_advance(s, c, now);
	s->bytes += bytes;
	if (c->byte_reset == 0 || s->bytes < c->byte_reset || !s->limited)
		return;
	s->bytes = 0;
	s->bc_stage++;
	increase(s, c);
}

void
tp_dcqcn_cnp(struct tp_dcqcn *s, const struct tp_dcqcn_conf *c, uint64_t now)
{
	uint64_t keep, dec;
	int first = !s->limited;

	s->cnps++;
	if (first) {
		s->limited = 1;
		s->rc = c->first_bps;
		s->rt = c->line_bps;
		s->alpha = c->initial_alpha << (ALPHA_SHIFT - 10);
		s->alpha_at = now;
		s->cnp_in_period = 0;
	} else {
		tp_dcqcn_advance(s, c, now);
		s->cnp_in_period = 1;
		if (now - s->cut_at < c->monitor_ns)
			return;		/* one cut per monitor period */
	}
	/* ConnectX: the target follows the current rate at a cut when the
	 * rate rose since the last one (by the byte counter; by the timer
	 * too with clamp_ati), or always with clamp; cuts in a row keep
	 * the target where the first of them left it */
	if (c->clamp || s->bc_stage || (c->clamp_ati && s->timer_inc))
		s->rt = s->rc;
	/* rc * alpha / 2^gd, alpha of 1024: rc < 2^40 (1 Tbit/s) */
	dec = (s->rc * s->alpha) >> (c->gd + ALPHA_SHIFT - 10);
	keep = s->rc / 100 * c->min_dec_fac;
	s->rc = s->rc - dec < keep ? keep : s->rc - dec;
	if (s->rc < c->min_bps)
		s->rc = c->min_bps;
	s->cut_at = now;
	s->timer_at = now;
	s->timer_inc = 0;
	s->t_stage = s->bc_stage = 0;
	s->bytes = 0;
	s->cuts++;
}
