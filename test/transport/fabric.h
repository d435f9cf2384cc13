/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

#ifndef FABRIC_H
#define FABRIC_H

/*
 * A simulated fabric in virtual time: N droce transports, each behind a
 * NIC on its own link to one switch. The switch has an egress queue per
 * port (drained at the link's rate, a buffer in bytes, RED-style ECN
 * marking of ECN-capable frames between Kmin and Kmax, tail drop when
 * full), as a datacenter top-of-rack switch set up for DCQCN. Every frame
 * is a real droce frame; only the clock and the wires are simulated, so
 * congestion figures are exact and reproducible, at 25 or 100 Gbit/s and
 * with more hosts than any machine here could run.
 */

#include <stdint.h>

#include "fakelink.h"

struct fab_conf {
	uint32_t hosts;
	uint64_t rate_bps;	/* each link and switch port */
	uint64_t delay_ns;	/* one way, host to switch (and back) */
	uint64_t nic_queue_ns;	/* what a NIC's ring holds, in wire time */
	uint64_t buffer;	/* bytes per egress queue */
	uint64_t kmin, kmax;	/* RED marking thresholds, bytes */
	uint32_t pmax_ppm;	/* marking probability at kmax */
	uint8_t no_mark;	/* a switch that marks nothing: tail drop */
	uint32_t eth_mtu;
	uint64_t seed;
	struct droce_dev_conf dev;	/* each host's, less addresses */
};

struct fab_frame {
	uint8_t *data;
	uint32_t len, wire;	/* bytes, and on the wire with overheads */
	uint32_t src, dst;	/* hosts */
	uint64_t due;		/* arrives (or leaves the switch queue) */
	struct fab_frame *next;
};

struct fab_fifo {
	struct fab_frame *head, *tail;
};

struct fab_port {
	/* the egress queue toward this port's host: frames queued or on
	 * the wire (due: when the last bit leaves) */
	struct fab_fifo q;
	uint64_t qbytes, qmax, last_finish;
	uint64_t enq, marked, dropped, tx_bytes;
	uint64_t *src_bytes;	/* sent on by source host */
};

struct fab_host {
	struct fabric *fab;
	uint32_t idx;
	struct droce_dev *dev;
	struct droce_tp_queue *q;
	struct droce_pd *pd;
	uint8_t mac[6];
	uint32_t ip;
	uint64_t nic_free;	/* its uplink is idle from then */
	struct fab_fifo up;	/* on the way to the switch */
	struct fab_fifo down;	/* from the switch, on the way here */
	uint64_t rx_bytes;
};

struct fabric {
	struct fab_conf c;
	uint64_t now;
	uint64_t rng;
	struct fab_host *h;
	struct fab_port *p;	/* p[i]: the switch's port to host i */
	struct fab_frame **scratch;
	uint32_t nscratch;
};

/* Hosts 10.1.0.1.. with their devices; the switch empty. */
int fab_init(struct fabric *f, const struct fab_conf *c);
void fab_fini(struct fabric *f);
/* Advance the clock by dt: the switch, deliveries, each host's progress. */
void fab_step(struct fabric *f, uint64_t dt);
/* The AV from host `from` to host `to`. */
void fab_av(struct fabric *f, uint32_t from, uint32_t to, struct droce_av *av);
/* An RC QP pair between hosts a and b, up to RTS. */
int fab_connect(struct fabric *f, uint32_t a, struct droce_qp *qa, uint32_t b,
		struct droce_qp *qb, const struct fl_qp_opts *o);
/* Frames in flight anywhere. */
int fab_idle(const struct fabric *f);

#endif
