/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

#ifndef TP_DCQCN_H
#define TP_DCQCN_H

/*
 * DCQCN's reaction point as a pure rate machine (tp_dcqcn.c): time and
 * bytes in, a rate out. No QP, no frames: the transport feeds it CNPs and
 * bytes sent and paces at the rate it gives (tp_cc.c), and a unit test
 * drives it with a scripted CNP sequence.
 */

#include <stdint.h>

#include "droce_transport.h"

struct tp_dcqcn {
	uint8_t limited;	/* a CNP came and the rate is not back */
	uint8_t cnp_in_period;	/* a CNP since alpha's last update */
	uint8_t timer_inc;	/* an increase by timer since the last cut */
	uint64_t rc, rt;	/* current and target rate, bit/s */
	uint32_t alpha;		/* of 2^20 (tp_dcqcn.c) */
	uint32_t t_stage, bc_stage;	/* increase events since the cut */
	uint64_t alpha_at;	/* alpha's period began */
	uint64_t timer_at;	/* the rate-increase timer's period began */
	uint64_t cut_at;	/* the last cut (0: none yet) */
	uint64_t bytes;		/* sent since the last byte-counter event */
	uint64_t cnps, cuts;	/* CNPs seen, rate cuts made */
	/* the delay-based controller (tp_delay.c) drives limited, rc and
	 * cuts the same way, and keeps when it last moved the rate */
	uint64_t dl_inc_at, dl_dec_at;
};

/* The parameters in the units the machine works in. */
struct tp_dcqcn_conf {
	uint64_t line_bps;
	uint64_t monitor_ns, alpha_period_ns, time_reset_ns;
	uint64_t byte_reset;
	uint64_t ai_bps, hai_bps, min_bps, first_bps;
	uint32_t initial_alpha, g, gd, min_dec_fac, threshold;
	uint8_t clamp, clamp_ati;
};

void tp_dcqcn_conf(struct tp_dcqcn_conf *c, const struct droce_dcqcn_params *p,
		uint64_t line_mbps);

/* A CNP for this flow at now. */
void tp_dcqcn_cnp(struct tp_dcqcn *s, const struct tp_dcqcn_conf *c,
		uint64_t now);
/* bytes left at now: the byte counter. */
void tp_dcqcn_sent(struct tp_dcqcn *s, const struct tp_dcqcn_conf *c,
		uint64_t bytes, uint64_t now);
/* Alpha's and the rate-increase timer's periods up to now. */
void tp_dcqcn_advance(struct tp_dcqcn *s, const struct tp_dcqcn_conf *c,
		uint64_t now);

/* The delay-based controller (tp_delay.c): its parameters, a round
 * trip measured (rtt) against the shortest seen (base), a loss. */
struct tp_delay_conf {
	uint64_t line_bps, min_bps, ai_bps, target_ns;
	uint32_t beta_1024, max_mdf_1024;
};

void tp_delay_conf(struct tp_delay_conf *c, uint64_t line_mbps,
		uint32_t target_ns, uint32_t ai_mbps);
void tp_delay_rtt(struct tp_dcqcn *s, const struct tp_delay_conf *c,
		uint64_t rtt, uint64_t base, uint64_t now);
void tp_delay_loss(struct tp_dcqcn *s, const struct tp_delay_conf *c,
		uint64_t now);

#endif
