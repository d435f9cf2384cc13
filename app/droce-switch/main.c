/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * droce-switch: the EAL, the ports, and the one polling loop that
 * receives, forwards into egress queues and drains them (doc/switch.md).
 *
 *   droce-switch --no-pci --file-prefix sw \
 *       --vdev net_memif0,role=server,socket=/tmp/sw0.sock \
 *       --vdev net_memif1,role=server,socket=/tmp/sw1.sock \
 *       -- --rate-mbps 1:200 --kmin-kb 20 --kmax-kb 80 --pmax 0.2
 */

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/prctl.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>

#include "switch.h"

#define RX_DESC 1024
#define TX_DESC 1024
/* passes with nothing done before the loop naps (--busy-poll: never):
 * on a 2-CPU machine the hosts need the CPU an idle switch would spin */
#define IDLE_PASSES 256
#define NAP_NS 20000

static volatile sig_atomic_t quit;
static struct sw_port ports[SW_MAX_PORTS];
static struct sw_queue queues[SW_MAX_PORTS];
static int nb_ports;
static struct rte_mempool *pool;

static void
on_signal(int sig)
{
	RTE_SET_USED(sig);
	quit = 1;
}

static int
port_setup(uint16_t pid)
{
	struct rte_eth_conf conf;
	int rc;

	memset(&conf, 0, sizeof(conf));
	rc = rte_eth_dev_configure(pid, 1, 1, &conf);
	if (rc == 0)
		rc = rte_eth_rx_queue_setup(pid, 0, RX_DESC,
			rte_eth_dev_socket_id(pid), NULL, pool);
	if (rc == 0)
		rc = rte_eth_tx_queue_setup(pid, 0, TX_DESC,
			rte_eth_dev_socket_id(pid), NULL);
	if (rc == 0)
		rc = rte_eth_dev_start(pid);
	/* a switch forwards every frame, addressed to it or not (memif
	 * has no filter to open: its answer does not matter) */
	if (rc == 0)
		rte_eth_promiscuous_enable(pid);
	if (rc)
		fprintf(stderr, "droce-switch: port %u: %s\n", pid,
			rte_strerror(-rc));
	return rc;
}

static int
queues_setup(void)
{
	uint64_t hz = rte_get_tsc_hz(), now = rte_rdtsc();
	int i, rc;

	for (i = 0; i < nb_ports; i++) {
		int owner = sw_opt.shared[i] >= 0 ? sw_opt.shared[i] : i;

		ports[i].id = (uint16_t)i;
		ports[i].q = &queues[owner];
		if (owner != i)
			continue;
		rc = sw_queue_init(&queues[i], &sw_opt.q[i], hz, now);
		if (rc)
			return rc;
		queues[i].owner = (uint16_t)i;
	}
	return 0;
}

/* Into the egress port's data queue, or past it for the control class */
static void
forward(struct sw_port *out, struct rte_mbuf *m)
{
	if (sw_frame_red_class(m))
		sw_queue_enqueue(out->q, m);
	else
		sw_ctl_tx(out, m);
}

/* A frame in: learn its source, send it to its destination's queue or
 * flood it (broadcast, multicast, unknown unicast: ARP finds its way). */
static void
ingress(struct sw_port *in, struct rte_mbuf *m)
{
	struct rte_ether_hdr *e = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	int dst, flow, i, last = -1;

	in->rx_frames++;
	in->rx_bytes += rte_pktmbuf_pkt_len(m);
	if (rte_pktmbuf_data_len(m) < sizeof(*e)) {
		rte_pktmbuf_free(m);
		return;
	}
	sw_fdb_learn(&e->src_addr, in->id);
	flow = sw_flow_index(m);
	m->hash.usr = (uint32_t)(flow + 1);
	if (flow >= 0)
		sw_flow_get(flow)->rx_bytes += rte_pktmbuf_pkt_len(m);
	dst = sw_fdb_lookup(&e->dst_addr);
	if (dst >= 0) {
		/* a frame for the port it came from goes nowhere */
		if (dst == in->id) {
			rte_pktmbuf_free(m);
			return;
		}
		m->port = (uint16_t)dst;
		forward(&ports[dst], m);
		return;
	}
	in->flood++;
	for (i = 0; i < nb_ports; i++) {
		struct rte_mbuf *c;

		if (i == in->id)
			continue;
		if (last >= 0) {
			/* a copy, not a reference: a mark on one copy must
			 * not show on the others */
			c = rte_pktmbuf_copy(m, pool, 0, UINT32_MAX);
			if (c != NULL) {
				c->port = (uint16_t)last;
				c->hash.usr = m->hash.usr;
				forward(&ports[last], c);
			}
		}
		last = i;
	}
	if (last < 0) {
		rte_pktmbuf_free(m);
		return;
	}
	m->port = (uint16_t)last;
	forward(&ports[last], m);
}

/* Once a millisecond: a host that connects or leaves is logged with
 * the time, so that a test whose host lost its link mid-run says so. */
static void
link_watch(uint64_t t_us)
{
	struct rte_eth_link link;
	int i, up;

	for (i = 0; i < nb_ports; i++) {
		memset(&link, 0, sizeof(link));
		if (rte_eth_link_get_nowait((uint16_t)i, &link) != 0)
			continue;
		up = link.link_status == RTE_ETH_LINK_UP;
		if (up == ports[i].link_up)
			continue;
		ports[i].link_up = up;
		if (up)
			ports[i].link_ups++;
		else
			ports[i].link_downs++;
		printf("droce-switch: %.3f s: port %d link %s\n", t_us / 1e6, i,
			up ? "up" : "down");
		fflush(stdout);
	}
}

static void
run(void)
{
	struct rte_mbuf *b[SW_BURST];
	uint64_t hz = rte_get_tsc_hz(), start = rte_rdtsc();
	uint64_t every = sw_opt.interval_us * hz / 1000000, next = start;
	uint64_t end = sw_opt.duration_s > 0 ?
		start + (uint64_t)(sw_opt.duration_s * (double)hz) : UINT64_MAX;
	uint64_t link_every = hz / 1000, link_next = start;
	struct timespec nap = { 0, NAP_NS };
	uint32_t idle = 0;
	int i, j, k, first = 0;

	while (!quit) {
		uint64_t now = rte_rdtsc(), work = 0;
		uint16_t n;

		/* a different port first on each pass: frames wait in the
		 * ports' receive rings while the switch is not running, and
		 * with a fixed order the first ports would take every slot
		 * a full queue frees (a 4:1 tail-drop incast locked one
		 * sender out until it ran out of retries) */
		first = first + 1 < nb_ports ? first + 1 : 0;
		for (j = 0; j < nb_ports; j++) {
			i = first + j < nb_ports ? first + j : first + j - nb_ports;
			n = rte_eth_rx_burst((uint16_t)i, 0, b, SW_BURST);
			for (k = 0; k < n; k++)
				ingress(&ports[i], b[k]);
			work += n;
		}
		for (i = 0; i < nb_ports; i++) {
			work -= ports[i].tx_frames;
			if (queues[i].ring != NULL)
				sw_queue_drain(&queues[i], now, ports);
			work += ports[i].tx_frames;
		}
		if (sw_opt.series && now >= next) {
			sw_series_sample((now - start) * 1000000 / hz, ports,
				nb_ports);
			next += every;
			if (next < now)
				next = now + every;
		}
		if (now >= link_next) {
			link_watch((now - start) * 1000000 / hz);
			link_next = now + link_every;
		}
		if (now >= end)
			break;
		/* a queue waiting for tokens naps too: a nap is far
		 * shorter than the bucket takes to fill, so no rate is lost */
		if (work != 0)
			idle = 0;
		else if (++idle >= IDLE_PASSES && !sw_opt.busy_poll)
			nanosleep(&nap, NULL);
	}
}

static void
report(void)
{
	int i, j;

	for (i = 0; i < nb_ports; i++) {
		struct sw_port *p = &ports[i];
		struct rte_eth_stats es;

		memset(&es, 0, sizeof(es));
		rte_eth_stats_get(p->id, &es);
		printf("port %d: rx_frames %" PRIu64 " rx_bytes %" PRIu64
			" tx_frames %" PRIu64 " tx_bytes %" PRIu64 " tx_held %"
			PRIu64 " tx_fail %" PRIu64 " flooded %" PRIu64
			" ctl_frames %" PRIu64 " rx_nombuf %" PRIu64 " imissed %"
			PRIu64 " link_ups %" PRIu64 " link_downs %" PRIu64 "\n",
			i, p->rx_frames, p->rx_bytes, p->tx_frames, p->tx_bytes,
			p->tx_held, p->tx_fail, p->flood, p->ctl_frames,
			es.rx_nombuf, es.imissed, p->link_ups, p->link_downs);
	}
	for (i = 0; i < nb_ports; i++) {
		struct sw_queue *q = &queues[i];

		if (q->ring == NULL)
			continue;
		printf("queue %d: ports", i);
		for (j = 0; j < nb_ports; j++)
			if (ports[j].q == q)
				printf("%s%d", j == i ? " " : ",", j);
		printf(" rate_mbps %g buffer_kb %g ecn %d kmin_kb %g kmax_kb %g"
			" pmax %g enq_frames %" PRIu64 " enq_bytes %" PRIu64
			" max_depth_bytes %" PRIu64 " depth_bytes %" PRIu64
			" marked %" PRIu64 " ce_seen %" PRIu64 " tail_drops %"
			PRIu64 " red_drops %" PRIu64 "\n",
			(double)q->c.rate_bps / 1e6, q->c.buffer / 1024.0,
			q->c.ecn, q->c.kmin / 1024.0, q->c.kmax / 1024.0,
			q->c.pmax, q->enq_frames, q->enq_bytes, q->max_bytes,
			q->bytes, q->marked, q->ce_seen, q->tail_drops,
			q->red_drops);
	}
	if (!sw_opt.quiet)
		sw_flows_print(stdout);
	fflush(stdout);
}

int
main(int argc, char **argv)
{
	uint64_t mbufs = 0;
	int n, i, rc = 1;

	/* its own help, not EAL's (which rte_eal_init would print) */
	for (i = 1; i < argc; i++)
		if (strcmp(argv[i], "--help") == 0 ||
				strcmp(argv[i], "-h") == 0) {
			sw_usage(stdout);
			return 0;
		}
	n = rte_eal_init(argc, argv);
	if (n < 0) {
		fprintf(stderr, "droce-switch: EAL: %s\n",
			rte_strerror(rte_errno));
		return 1;
	}
	argc -= n;
	argv += n;
	argv[0] = (char *)"droce-switch";
	nb_ports = (int)rte_eth_dev_count_avail();
	if (nb_ports < 2 || nb_ports > SW_MAX_PORTS) {
		fprintf(stderr, "droce-switch: %d ports: want 2 to %d (--vdev)\n",
			nb_ports, SW_MAX_PORTS);
		goto out;
	}
	if (sw_options_parse(argc, argv, nb_ports))
		goto out;
	/* rings of every port, plus what the queues may hold in frames of
	 * 512 bytes or more (smaller ones meet rx_nombuf before the buffer
	 * fills: reported at exit) */
	for (i = 0; i < nb_ports; i++)
		mbufs += RX_DESC + TX_DESC + 2 * SW_BURST +
			sw_opt.q[i].buffer / 512;
	pool = rte_pktmbuf_pool_create("sw_pool", (unsigned int)mbufs, 256, 0,
		RTE_MBUF_DEFAULT_BUF_SIZE, (int)rte_socket_id());
	if (pool == NULL) {
		fprintf(stderr, "droce-switch: mempool of %" PRIu64 " mbufs: %s\n",
			mbufs, rte_strerror(rte_errno));
		goto out;
	}
	if (queues_setup() != 0)
		goto out;
	for (i = 0; i < nb_ports; i++)
		if (port_setup((uint16_t)i) != 0)
			goto out;
	if (sw_opt.series && sw_series_open(sw_opt.series) != 0) {
		fprintf(stderr, "droce-switch: --series %s: %s\n", sw_opt.series,
			strerror(errno));
		goto out;
	}
	sw_telemetry_init(ports, nb_ports);
	/* naps of 20 us, not the default 50 us slack on top */
	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	printf("droce-switch: %d ports, forwarding\n", nb_ports);
	fflush(stdout);
	run();
	report();
	rc = 0;
out:
	/* the loop has stopped: no burst is in flight when the ports close
	 * (22.11's memif can crash if a peer leaves mid-burst) */
	for (i = 0; i < nb_ports; i++) {
		rte_eth_dev_stop((uint16_t)i);
		rte_eth_dev_close((uint16_t)i);
	}
	for (i = 0; i < nb_ports; i++)
		if (queues[i].ring != NULL)
			sw_queue_flush(&queues[i]);
	sw_series_close();
	rte_eal_cleanup();
	return rc;
}
