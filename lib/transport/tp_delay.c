/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * Zero-touch congestion control: the rate follows the queueing delay the
 * requester measures itself, for fabrics whose switches mark nothing
 * (Swift and ConnectX's RTT-based control are the models). Each round
 * trip sample (a PSN sent once, to the ACK that covers it: tp_rto.c)
 * less the shortest seen on the QP is the time its packets queued. Below
 * the target the rate grows by ai once per round trip (additive); above
 * it, once per round trip, it is cut in proportion to how far above:
 * rate *= 1 - beta * (delay - target) / delay, at most by max_mdf. A
 * timeout (a window lost whole) halves it. Nothing goes on the wire: the
 * timestamps are the requester's own, so any peer will do. At the line
 * rate the QP leaves the limiter and costs nothing, as with DCQCN.
 */

#include "tp_dcqcn.h"

#define MBPS 1000000ull
#define TP_DELAY_TARGET_DEFAULT_NS 10000

void
tp_delay_conf(struct tp_delay_conf *c, uint64_t line_mbps, uint32_t target_ns,
		uint32_t ai_mbps)
{
	c->line_bps = (line_mbps ? line_mbps : 100000) * MBPS;
	c->target_ns = target_ns ? target_ns : TP_DELAY_TARGET_DEFAULT_NS;
	c->ai_bps = ai_mbps ? (uint64_t)ai_mbps * MBPS : c->line_bps / 1000;
	c->min_bps = MBPS;
	c->beta_1024 = 820;		/* 0.8 */
	c->max_mdf_1024 = 512;		/* at most halved per round trip */
}

/* Cut by f/1024 of the rate, entering the limiter from the line rate. */
static void
cut(struct tp_dcqcn *s, const struct tp_delay_conf *c, uint64_t f,
		uint64_t now)
{
	if (!s->limited) {
		s->limited = 1;
		s->rc = c->line_bps;
	}
	s->rc -= s->rc * f / 1024;
	if (s->rc < c->min_bps)
		s->rc = c->min_bps;
	s->dl_dec_at = now;
	s->cuts++;
}

void
tp_delay_rtt(struct tp_dcqcn *s, const struct tp_delay_conf *c, uint64_t rtt,
		uint64_t base, uint64_t now)
{
	uint64_t q = rtt > base ? rtt - base : 0, f;

	if (q > c->target_ns) {
		/* once per round trip: the next sample still shows the
		 * queue this cut has not yet drained */
		if (s->limited && now - s->dl_dec_at < rtt)
			return;
		f = (uint64_t)c->beta_1024 * (q - c->target_ns) / q;
		cut(s, c, f < c->max_mdf_1024 ? f : c->max_mdf_1024, now);
		return;
	}
	if (!s->limited || now - s->dl_inc_at < rtt)
		return;
	s->dl_inc_at = now;
	s->rc += c->ai_bps;
	if (s->rc >= c->line_bps) {
		s->rc = c->line_bps;
		s->limited = 0;
	}
}

void
tp_delay_loss(struct tp_dcqcn *s, const struct tp_delay_conf *c, uint64_t now)
{
	cut(s, c, 512, now);
}
