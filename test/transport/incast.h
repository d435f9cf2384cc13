/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

#ifndef INCAST_H
#define INCAST_H

/*
 * N:1 incast through the simulated fabric (fabric.h): N senders, each an
 * RC QP that keeps `depth` WRITEs of `size` bytes in flight to one
 * receiver, for a while of virtual time; each WRITE's bytes checked at
 * the receiver when it completes. What the bottleneck did (drops, marks,
 * queue depth), what each flow got, and the transport's recovery.
 */

#include <stdint.h>
#include <stdio.h>

#include "fabric.h"

struct incast_conf {
	uint32_t senders;
	uint64_t gbps;
	uint32_t size, depth, mtu;
	uint64_t run_ns, warm_ns;	/* measured after warm_ns */
	uint64_t step_ns, sample_ns;
	uint64_t rtt_ns;		/* base round trip (4 link delays) */
	uint64_t buffer, kmin, kmax;	/* bytes */
	uint32_t pmax_ppm;
	uint8_t no_mark;		/* the switch only drops */
	uint8_t cc;			/* enum droce_cc_mode */
	uint8_t sr;			/* selective repeat */
	uint32_t rto_min_us, timeout;
	const struct droce_dcqcn_params *dcqcn;	/* NULL: ConnectX's */
	uint32_t delay_target_ns, delay_ai_mbps;	/* DROCE_CC_DELAY */
	uint32_t np_gap_ns;	/* np_min_time_between_cnps (0: 4 us) */
	uint64_t seed;
	FILE *series;	/* CSV: t_us, queue bytes, each flow's Gbit/s,
			 * each flow's DCQCN rate */
};

struct incast_result {
	uint64_t ns;			/* measured span */
	uint64_t *flow_bytes;		/* goodput bytes per flow, measured */
	double jain, goodput_gbps, util;	/* util: wire bytes / capacity */
	uint64_t drops, drops_after_warm, marks, enq;
	uint64_t qmax, q_p50, q_p99, q_mean;	/* bytes, after warm */
	uint64_t completed, bad_bytes, errors, stuck;
	uint64_t retransmits, resent, timeouts, cnps, cuts;
	uint64_t ce_rx, cnp_tx;		/* at the receiver */
	uint64_t frames_sent, frames_needed;
};

void incast_conf_default(struct incast_conf *c);
/* 0 when every WRITE completed with its bytes intact. */
int incast_run(const struct incast_conf *c, struct incast_result *r);
void incast_result_free(struct incast_result *r);

#endif
