/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

#ifndef FAKELINK_H
#define FAKELINK_H

/*
 * A fake Ethernet link between two droce devices, with a virtual clock and
 * a seeded schedule of faults per direction: drop, duplicate, reorder,
 * corrupt, and stall. No DPDK: frames are malloc'ed buffers.
 */

#include <stdint.h>
#include <stdio.h>

#include "droce_transport.h"

struct fl_faults {
	uint32_t drop_ppm;
	uint32_t dup_ppm;
	uint32_t reorder_ppm;
	uint32_t corrupt_ppm;
	uint32_t ce_ppm;	/* ECN-capable frames marked CE, as a switch */
	int stalled;		/* drop everything */
};

struct fl_frame {
	uint8_t *data;
	uint32_t len;		/* in data: the headers of a zero-copy frame */
	/* zero-copy: the payload stays in the MRs until delivery, as on a
	 * NIC that reads it when it sends */
	uint32_t nspan;
	struct droce_txspan span[DROCE_TX_MAX_SPANS];
	uint8_t tail[8];
	uint32_t tail_len;
	uint64_t due;
	struct fl_frame *next;
};

struct fl_end {
	struct fakelink *link;
	int side;		/* 0 or 1 */
	struct droce_dev *dev;
	struct droce_tp_queue *q;
	uint8_t mac[6];
	uint32_t ip;
	struct droce_pd *pd;
};

struct fl_counters {
	uint64_t sent, delivered, dropped, duplicated, reordered, corrupted,
		stalled, ce_marked;
};

struct fakelink {
	struct fl_end end[2];
	struct fl_faults faults[2];	/* by sending side */
	struct fl_counters cnt[2];
	struct fl_frame *inflight[2];	/* sorted by due time */
	uint32_t ninflight[2];
	/* a bounded queue per direction, as droced's loopback queue: a
	 * frame sent while qcap are in flight is dropped (tail drop), and
	 * each step delivers at most rx_burst (0: no bound, 64 a step) */
	uint32_t qcap, rx_burst;
	uint64_t now;			/* ns */
	uint64_t delay_ns;		/* one-way latency */
	/* fl_set_rate: a link of rate_bps each way (0: frames take no
	 * time); the NIC takes frames while what it has queued would be
	 * on the wire within nic_queue_ns, as a NIC's transmit ring */
	uint64_t rate_bps, nic_queue_ns;
	uint64_t wire_free[2];		/* when the wire is next idle */
	uint64_t wire_bytes[2];		/* on the wire, with preamble and gap */
	uint64_t rng;
	/* optional: return 1 to drop a frame (by sending side) */
	int (*filter)(struct fakelink *l, int dir, const uint8_t *f,
		uint32_t len);
	void *filter_arg;
	uint32_t zc_min;		/* fl_set_zero_copy */
	uint32_t eth_mtu;
	/* fl_set_tso: TSO frames the fake NIC cut, and their segments */
	uint32_t tso_segs;
	uint64_t tso_frames[2], tso_segments[2];
	/* optional capture of a sample of frames */
	FILE *pcap;
	uint32_t pcap_every, pcap_count, pcap_max;
};

/* The devices fl_init creates take this retransmission floor
 * (droce_dev_conf.rto_min_us; 0: the transport's default). */
extern uint32_t fl_rto_min_us;
/* and selective repeat for their RC QPs, its window (0: default) */
extern uint8_t fl_sr;
extern uint32_t fl_sr_window;
/* and frames that leave Not-ECT (droce_dev_conf.no_ecn) */
extern uint8_t fl_no_ecn;
/* and this congestion control (droce_dev_conf.cc), line rate and DCQCN
 * parameters (NULL: ConnectX's) */
extern uint8_t fl_cc;
extern uint32_t fl_line_rate_mbps;
extern const struct droce_dcqcn_params *fl_dcqcn;

/* Two devices, one queue each, 10.0.0.1 and 10.0.0.2, MTU eth_mtu. */
int fl_init(struct fakelink *l, uint64_t seed, uint32_t eth_mtu);
void fl_fini(struct fakelink *l);

/* Both ends send payloads of at least min bytes by reference (0: off). */
void fl_set_zero_copy(struct fakelink *l, uint32_t min);
/* A NIC with TSO: frames of up to segs segments to cut (0: none). */
void fl_set_tso(struct fakelink *l, uint32_t segs);

/* Links of rate_bps each way, the NIC queueing up to nic_queue_ns. */
void fl_set_rate(struct fakelink *l, uint64_t rate_bps, uint64_t nic_queue_ns);

/* Advance the clock by dt ns: deliver due frames, progress both ends. */
void fl_step(struct fakelink *l, uint64_t dt);

/* Until nothing is in flight and both queues are idle (or max_ns passed). */
int fl_run_idle(struct fakelink *l, uint64_t max_ns);

/* Write every n-th frame (up to max) to a pcap file. */
int fl_capture(struct fakelink *l, const char *path, uint32_t every,
		uint32_t max);

/* Connect a QP pair (RC/UC/UD) through INIT/RTR/RTS. */
struct fl_qp_opts {
	uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer;
	uint8_t max_rd_atomic, max_dest_rd_atomic;
	unsigned int access;
	enum ibv_mtu mtu;
	uint32_t qkey;
	uint8_t tclass;		/* the AV's traffic class (DSCP, ECN) */
};
void fl_qp_opts_default(struct fl_qp_opts *o);
int fl_connect(struct fakelink *l, struct droce_qp *a, struct droce_qp *b,
		const struct fl_qp_opts *o);
/* The AV to reach side's peer. */
void fl_av_to(struct fakelink *l, int from_side, struct droce_av *av);
/* One QP through INIT/RTR/RTS toward av's host, its QP dqpn. */
int fl_qp_up(struct droce_qp *qp, const struct droce_av *av, uint32_t dqpn,
		uint32_t rq_psn, uint32_t sq_psn, const struct fl_qp_opts *o);
/* What a congested switch does to an ECN-capable frame: CE, the IPv4
 * checksum updated; 1 if marked (Not-ECT frames are left alone). */
int fl_mark_ce(uint8_t *f, uint32_t len);

uint64_t fl_rand(struct fakelink *l);

#endif
