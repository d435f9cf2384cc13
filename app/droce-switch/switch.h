/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

#ifndef SWITCH_H
#define SWITCH_H

/*
 * droce-switch: a small store-and-forward Ethernet switch on DPDK ports,
 * built as a test fabric for congestion control (doc/switch.md). Every
 * function here runs on the one polling lcore unless it says otherwise.
 */

#include <stdint.h>
#include <stdio.h>

#include <rte_ether.h>
#include <rte_mbuf.h>

#define SW_MAX_PORTS 16
#define SW_MAX_FLOWS 64
#define SW_BURST 32

/* What one egress queue is set up with (options.c). */
struct sw_qconf {
	uint64_t rate_bps;	/**< drain rate; 0: as fast as the port takes */
	uint32_t buffer;	/**< bytes the queue holds before tail drop */
	uint32_t burst;		/**< token bucket depth, bytes */
	uint32_t kmin, kmax;	/**< RED thresholds, bytes */
	double pmax;		/**< marking probability at kmax */
	int ecn;		/**< 0: tail drop only (--no-ecn) */
	uint64_t hold_us;	/**< a busy host's frames wait this long */
};

/*
 * An egress queue: a FIFO of frames, counted in bytes, drained at the
 * configured rate. Ports of one --shared-link share one queue (the
 * frames keep their own egress port in mbuf->port).
 */
struct sw_queue {
	struct sw_qconf c;
	uint16_t owner;		/* its first port: the series' id for it */
	struct rte_mbuf **ring;
	uint32_t size;		/* slots, a power of two */
	uint32_t head, tail;	/* free-running indexes */
	uint64_t bytes;		/* queued now */
	uint64_t max_bytes;	/* the most ever queued */
	double credit;		/* token bucket, bytes */
	uint64_t last_tsc;
	double bytes_per_tsc;
	uint64_t hold_tsc;
	/* counters */
	uint64_t enq_frames, enq_bytes;
	uint64_t marked;	/* ECT frames set to CE */
	uint64_t ce_seen;	/* frames that came CE already */
	uint64_t tail_drops;	/* buffer full */
	uint64_t red_drops;	/* Not-ECT frames RED chose */
};

/* Per port counters, as the port itself saw them. */
struct sw_port {
	uint16_t id;
	struct sw_queue *q;	/* its egress queue, maybe shared */
	uint64_t rx_frames, rx_bytes;
	uint64_t tx_frames, tx_bytes;
	uint64_t tx_held;	/* refused by a connected peer: kept queued */
	uint64_t tx_fail;	/* no peer, or refused past hold_us: freed */
	uint64_t held_since;	/* TSC of the first refusal, 0: none */
	uint64_t ctl_frames;	/* control class: sent past the queue */
	uint64_t flood;		/* frames flooded from this port */
	uint64_t link_ups, link_downs;	/* a peer (dis)connected */
	int link_up;
};

struct sw_flow {
	uint8_t key[40];
	uint32_t key_len;
	char name[96];
	uint64_t rx_bytes;	/* offered: arrived, dropped or not */
	uint64_t tx_bytes;	/* out of its egress queue */
	uint64_t marked;
	uint64_t dropped;
};

struct sw_options {
	struct sw_qconf q[SW_MAX_PORTS];
	int shared[SW_MAX_PORTS];	/* link group, -1: none */
	int nb_groups;
	const char *series;
	uint64_t interval_us;
	double duration_s;		/* 0: until a signal */
	int quiet;
	int busy_poll;			/* never nap when idle */
};

extern struct sw_options sw_opt;

/* options.c */
int sw_options_parse(int argc, char **argv, int nb_ports);
void sw_usage(FILE *f);

/* fdb.c: learned MAC -> port */
void sw_fdb_learn(const struct rte_ether_addr *mac, uint16_t port);
int sw_fdb_lookup(const struct rte_ether_addr *mac);

/* frame.c: what the queue needs to know of a frame's IP header */
enum sw_ecn { SW_NOT_IP = -1, SW_NOT_ECT = 0, SW_ECT1 = 1, SW_ECT0 = 2,
	SW_CE = 3 };
enum sw_ecn sw_frame_ecn(struct rte_mbuf *m);
int sw_frame_red_class(struct rte_mbuf *m);
void sw_frame_set_ce(struct rte_mbuf *m);
uint32_t sw_frame_flow_key(struct rte_mbuf *m, uint8_t *key, char *name,
	size_t name_len);

/* queue.c */
void sw_ctl_tx(struct sw_port *p, struct rte_mbuf *m);
int sw_queue_init(struct sw_queue *q, const struct sw_qconf *c,
	uint64_t tsc_hz, uint64_t now);
void sw_queue_enqueue(struct sw_queue *q, struct rte_mbuf *m);
void sw_queue_drain(struct sw_queue *q, uint64_t now,
	struct sw_port *ports);
void sw_queue_flush(struct sw_queue *q);

/* telemetry.c: counters while it runs (the telemetry thread reads) */
void sw_telemetry_init(struct sw_port *ports, int nb_ports);

/* series.c: per flow counters and the CSV time series */
int sw_flow_index(struct rte_mbuf *m);
struct sw_flow *sw_flow_get(int idx);
int sw_series_open(const char *path);
void sw_series_sample(uint64_t t_us, struct sw_port *ports, int nb_ports);
void sw_series_close(void);
void sw_flows_print(FILE *f);

#endif
