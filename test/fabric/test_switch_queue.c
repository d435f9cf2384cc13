/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * droce-switch's egress queue and frame edits, one process, no traffic
 * (net_null ports, no hugepages): marking sets CE and leaves a valid
 * IPv4 checksum (checked with its own sum, not DPDK's) and the rest of
 * the traffic class; the marking profile at fixed depths (Pmax 0, so
 * only Kmax decides: no randomness); tail drop; Not-ECT IP frames
 * dropped where ECT ones are marked, non-IP frames left alone; and the
 * token bucket on explicit TSC values: how many bytes leave, not how
 * long anything took; frames a connected port refuses (a net_ring port
 * whose ring is full) stay queued in their order, and are dropped once
 * its link is down.
 */

#include <string.h>

#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_ip.h>
#include <rte_eth_ring.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <rte_udp.h>

#include "check.h"
#include "eal_dir.h"
#include "switch.h"

static struct rte_mempool *pool;

/* An Ethernet + IPv4 (+ UDP) frame of len bytes with TOS tos. */
static struct rte_mbuf *
ipv4_frame(uint32_t len, uint8_t tos)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
	uint8_t *p = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)len);
	struct rte_ether_hdr *e = (struct rte_ether_hdr *)p;
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(e + 1);
	struct rte_udp_hdr *u = (struct rte_udp_hdr *)(ip + 1);

	memset(p, 0xab, len);
	e->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	memset(ip, 0, sizeof(*ip));
	ip->version_ihl = 0x45;
	ip->type_of_service = tos;
	ip->total_length = rte_cpu_to_be_16((uint16_t)(len - sizeof(*e)));
	ip->time_to_live = 64;
	ip->next_proto_id = IPPROTO_UDP;
	ip->src_addr = rte_cpu_to_be_32(0x0ac60101);	/* 10.198.1.1 */
	ip->dst_addr = rte_cpu_to_be_32(0x0ac60201);	/* 10.198.2.1 */
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	u->src_port = rte_cpu_to_be_16(49152);
	u->dst_port = rte_cpu_to_be_16(4791);
	m->hash.usr = 0;
	m->port = 1;
	return m;
}

static struct rte_mbuf *
arp_frame(uint32_t len)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
	struct rte_ether_hdr *e = (struct rte_ether_hdr *)
		rte_pktmbuf_append(m, (uint16_t)len);

	memset(e, 0, len);
	e->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP);
	m->hash.usr = 0;
	m->port = 1;
	return m;
}

/* RFC 1071 over the header as it is: 0xffff when the checksum holds */
static uint16_t
sum_ok(const struct rte_ipv4_hdr *ip)
{
	const uint8_t *b = (const uint8_t *)ip;
	uint32_t s = 0;
	int i;

	for (i = 0; i < 20; i += 2)
		s += (uint32_t)(b[i] << 8 | b[i + 1]);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)s;
}

static void
test_frames(void)
{
	struct rte_mbuf *m = ipv4_frame(1000, 0x62);	/* DSCP 24, ECT(0) */
	struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod_offset(m,
		struct rte_ipv4_hdr *, sizeof(struct rte_ether_hdr));
	struct rte_ipv6_hdr *ip6;
	struct rte_ether_hdr *e;
	uint8_t key[40];
	char name[96];

	CHECK_EQ(sw_frame_ecn(m), SW_ECT0, "ECT(0) read");
	sw_frame_set_ce(m);
	CHECK_EQ(ip->type_of_service, 0x63, "CE set, DSCP kept");
	CHECK_EQ(sw_frame_ecn(m), SW_CE, "CE read back");
	CHECK_EQ(sum_ok(ip), 0xffff, "IPv4 checksum after the mark");
	sw_frame_flow_key(m, key, name, sizeof(name));
	CHECK(strcmp(name, "10.198.1.1>10.198.2.1:49152") == 0,
		"flow name %s", name);
	rte_pktmbuf_free(m);

	/* IPv6: traffic class 0x0a (DSCP 2, ECT(0)), flow label 0x12345 */
	m = rte_pktmbuf_alloc(pool);
	e = (struct rte_ether_hdr *)rte_pktmbuf_append(m, 200);
	memset(e, 0, 200);
	e->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV6);
	ip6 = (struct rte_ipv6_hdr *)(e + 1);
	ip6->vtc_flow = rte_cpu_to_be_32(6u << 28 | 0x0au << 20 | 0x12345);
	CHECK_EQ(sw_frame_ecn(m), SW_ECT0, "IPv6 ECT(0) read");
	sw_frame_set_ce(m);
	CHECK_EQ(rte_be_to_cpu_32(ip6->vtc_flow),
		6u << 28 | 0x0bu << 20 | 0x12345, "IPv6 CE, the rest kept");
	rte_pktmbuf_free(m);

	m = arp_frame(60);
	CHECK_EQ(sw_frame_ecn(m), SW_NOT_IP, "ARP is not IP");
	rte_pktmbuf_free(m);
}

static void
test_queue(void)
{
	struct sw_qconf c = { .rate_bps = 8000000, /* a byte a microsecond */
		.buffer = 8000, .burst = 3000, .kmin = 2000, .kmax = 4000,
		.pmax = 0, .ecn = 1 };
	struct sw_port ports[2] = { { .id = 0 }, { .id = 1 } };
	uint64_t hz = rte_get_tsc_hz(), t0 = 1000000;
	struct rte_eth_stats es;
	struct sw_queue q;
	struct rte_mbuf *m;
	int i, ce = 0;

	memset(&q, 0, sizeof(q));
	CHECK_EQ(sw_queue_init(&q, &c, hz, t0), 0, "queue init");
	ports[0].q = ports[1].q = &q;
	/* depths 0..5000 before each: marked at 4000 and 5000 (Kmax), not
	 * at 3000 (between Kmin and Kmax, Pmax 0) */
	for (i = 0; i < 6; i++) {
		m = ipv4_frame(1000, 0x02);
		m->hash.usr = (uint32_t)sw_flow_index(m) + 1;
		sw_queue_enqueue(&q, m);
	}
	CHECK_EQ(q.marked, 2, "ECT frames marked from Kmax");
	CHECK_EQ(q.bytes, 6000, "bytes queued");
	for (i = 0; i < 6; i++)
		ce += sw_frame_ecn(q.ring[i]) == SW_CE;
	CHECK_EQ(ce, 2, "frames that carry CE");
	CHECK_EQ(sw_frame_ecn(q.ring[3]), SW_ECT0, "no mark below Kmax");
	CHECK_EQ(sw_frame_ecn(q.ring[4]), SW_CE, "the mark at Kmax");
	sw_queue_enqueue(&q, ipv4_frame(1000, 0x00));
	CHECK_EQ(q.red_drops, 1, "Not-ECT dropped where it would be marked");
	sw_queue_enqueue(&q, arp_frame(1000));
	CHECK_EQ(q.red_drops, 1, "a non-IP frame is not RED's");
	CHECK_EQ(q.bytes, 7000, "the ARP frame queued");
	/* ICMP (as ICMPv6 neighbour discovery): not RED's class either */
	m = ipv4_frame(500, 0x00);
	rte_pktmbuf_mtod_offset(m, struct rte_ipv4_hdr *,
		sizeof(struct rte_ether_hdr))->next_proto_id = IPPROTO_ICMP;
	sw_queue_enqueue(&q, m);
	CHECK_EQ(q.red_drops, 1, "a Not-ECT ICMP frame is not RED's");
	CHECK_EQ(q.bytes, 7500, "the ICMP frame queued");
	/* (the checksum is stale: nothing here reads it) */
	sw_queue_enqueue(&q, ipv4_frame(500, 0x01));
	CHECK_EQ(q.marked, 3, "ECT(1) marked too");
	CHECK_EQ(q.bytes, 8000, "buffer full to the byte");
	sw_queue_enqueue(&q, ipv4_frame(60, 0x02));
	CHECK_EQ(q.tail_drops, 1, "tail drop when it does not fit");
	CHECK_EQ(q.max_bytes, 8000, "max depth");
	CHECK_EQ(sw_flow_get(0)->marked, 2, "the flow's marks");

	/* the bucket starts full (3000): three frames leave at once */
	sw_queue_drain(&q, t0, ports);
	CHECK_EQ(ports[1].tx_frames, 3, "a bucket's worth at t0");
	/* 2.5 ms: 2500 bytes of credit, two frames, 500 left over (and a
	 * microsecond, a byte, against the TSC's rounding) */
	sw_queue_drain(&q, t0 + hz * 25 / 10000 + hz / 1000000, ports);
	CHECK_EQ(ports[1].tx_frames, 5, "2.5 ms at 8 Mbit/s");
	/* 0.5 ms more: the 500 left and 500 new make one more */
	sw_queue_drain(&q, t0 + hz * 3 / 1000 + 2 * (hz / 1000000), ports);
	CHECK_EQ(ports[1].tx_frames, 6, "the left-over credit kept");
	sw_queue_drain(&q, t0 + hz * 10, ports);
	CHECK_EQ(ports[1].tx_frames, 9, "the rest (2000 bytes), within a bucket");
	CHECK_EQ(q.bytes, 0, "queue empty");
	CHECK_EQ(ports[1].tx_bytes, 8000, "bytes out");
	CHECK_EQ(sw_flow_get(0)->tx_bytes, 6000, "the flow's bytes out");
	memset(&es, 0, sizeof(es));
	rte_eth_stats_get(1, &es);
	CHECK_EQ(es.opackets, 9, "the frames left on their egress port");
	/* a long gap (the switch descheduled) is worth one bucket only */
	for (i = 0; i < 5; i++)
		sw_queue_enqueue(&q, ipv4_frame(1000, 0x02));
	sw_queue_drain(&q, t0 + hz * 20, ports);
	CHECK_EQ(ports[1].tx_frames, 12, "a bucket after 10 s, no more");
	sw_queue_flush(&q);
}

static struct rte_mbuf *
tagged(uint16_t port, uint8_t tag)
{
	struct rte_mbuf *m = ipv4_frame(100, 0x02);

	/* the tag in the last payload byte */
	*rte_pktmbuf_mtod_offset(m, uint8_t *, 99) = tag;
	m->port = port;
	return m;
}

static uint8_t
tag_of(struct rte_mbuf *m)
{
	return *rte_pktmbuf_mtod_offset(m, uint8_t *, 99);
}

static void
test_hold(struct rte_ring *r)
{
	struct sw_qconf c = { .rate_bps = 0, .buffer = 100000, .burst = 16384,
		.kmin = 50000, .kmax = 60000, .pmax = 0, .ecn = 1,
		.hold_us = 1000 };
	uint64_t ms = rte_get_tsc_hz() / 1000;
	struct sw_port ports[3] = { { .id = 0 }, { .id = 1 }, { .id = 2 } };
	static const uint16_t to[6] = { 2, 2, 1, 2, 2, 1 };
	struct rte_mbuf *m[4];
	struct sw_queue q;
	unsigned int n;
	int i;

	memset(&q, 0, sizeof(q));
	CHECK_EQ(sw_queue_init(&q, &c, rte_get_tsc_hz(), 0), 0, "queue init");
	for (i = 0; i < 3; i++)
		ports[i].q = &q;
	for (i = 0; i < 6; i++)
		sw_queue_enqueue(&q, tagged(to[i], (uint8_t)i));
	/* the ring takes 3 of the 4 frames for port 2: the 4th (tag 4)
	 * stays, alone, at the head; port 1's two leave */
	sw_queue_drain(&q, 1, ports);
	CHECK_EQ(ports[1].tx_frames, 2, "port 1's frames out");
	CHECK_EQ(ports[2].tx_frames, 3, "what port 2's ring took");
	CHECK_EQ(ports[2].tx_held, 1, "a refused frame held");
	CHECK_EQ(ports[2].tx_fail, 0, "none dropped");
	CHECK_EQ(q.tail - q.head, 1, "one frame queued");
	CHECK_EQ(q.bytes, 100, "its bytes still counted");
	CHECK_EQ(tag_of(q.ring[q.head & (q.size - 1)]), 4, "the held frame");
	n = rte_ring_dequeue_burst(r, (void **)m, 4, NULL);
	CHECK_EQ(n, 3, "frames on port 2's ring");
	CHECK(n == 3 && tag_of(m[0]) == 0 && tag_of(m[1]) == 1 &&
		tag_of(m[2]) == 3, "in queue order");
	rte_pktmbuf_free_bulk(m, n);
	sw_queue_drain(&q, 2, ports);
	CHECK_EQ(ports[2].tx_frames, 4, "the held frame out once there is room");
	CHECK_EQ(q.bytes, 0, "queue empty");
	n = rte_ring_dequeue_burst(r, (void **)m, 4, NULL);
	CHECK(n == 1 && tag_of(m[0]) == 4, "the held frame on the ring");
	rte_pktmbuf_free_bulk(m, n);

	/* a host that stays away longer than hold_us loses its frames */
	for (i = 0; i < 4; i++)
		sw_queue_enqueue(&q, tagged(2, (uint8_t)(10 + i)));
	sw_queue_drain(&q, 10 * ms, ports);
	CHECK_EQ(ports[2].tx_frames, 7, "three more on the ring");
	CHECK_EQ(q.tail - q.head, 1, "the fourth held");
	sw_queue_drain(&q, 10 * ms + ms / 2, ports);
	CHECK_EQ(q.tail - q.head, 1, "still held within hold_us");
	CHECK_EQ(ports[2].tx_fail, 0, "nothing dropped yet");
	sw_queue_drain(&q, 11 * ms + 1, ports);
	CHECK_EQ(ports[2].tx_fail, 1, "dropped past hold_us");
	CHECK_EQ(q.bytes, 0, "and out of the queue");
	n = rte_ring_dequeue_burst(r, (void **)m, 4, NULL);
	rte_pktmbuf_free_bulk(m, n);

	/* a port whose link is down does not hold the queue */
	for (i = 0; i < 5; i++)
		sw_queue_enqueue(&q, tagged(2, (uint8_t)i));
	CHECK_EQ(rte_eth_dev_set_link_down(2), 0, "link down");
	sw_queue_drain(&q, 20 * ms, ports);
	CHECK_EQ(ports[2].tx_fail, 3, "refused with the link down: dropped");
	CHECK_EQ(ports[2].tx_frames, 10, "what the ring took");
	CHECK_EQ(q.bytes, 0, "nothing held");
	n = rte_ring_dequeue_burst(r, (void **)m, 4, NULL);
	rte_pktmbuf_free_bulk(m, n);
	sw_queue_flush(&q);
}

int
main(void)
{
	char prefix[64];
	char *argv[] = { (char *)"test_switch_queue", (char *)"-l",
		(char *)"0", (char *)"--no-huge", (char *)"-m", (char *)"64",
		(char *)"--no-pci", (char *)"--file-prefix", prefix,
		(char *)"--vdev", (char *)"net_null0", (char *)"--vdev",
		(char *)"net_null1", (char *)"--log-level=lib.eal:4", NULL };
	struct rte_eth_conf conf;
	struct rte_ring *r;
	uint16_t p;

	snprintf(prefix, sizeof(prefix), "%s", eal_dir_prefix("swq"));
	if (rte_eal_init(RTE_DIM(argv) - 1, argv) < 0) {
		fprintf(stderr, "EAL init failed\n");
		return 1;
	}
	pool = rte_pktmbuf_pool_create("swq", 1023, 0, 0,
		RTE_MBUF_DEFAULT_BUF_SIZE, (int)rte_socket_id());
	CHECK(pool != NULL, "mempool");
	if (pool == NULL)
		return check_report("test_switch_queue");
	/* port 2: frames it sends land on a ring of 3 */
	r = rte_ring_create("swq_ring", 4, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
	CHECK(r != NULL, "ring");
	if (r == NULL)
		return check_report("test_switch_queue");
	CHECK_EQ(rte_eth_from_ring(r), 2, "ring port");
	memset(&conf, 0, sizeof(conf));
	for (p = 0; p < 3; p++) {
		CHECK_EQ(rte_eth_dev_configure(p, 1, 1, &conf), 0, "configure");
		CHECK_EQ(rte_eth_rx_queue_setup(p, 0, 64, 0, NULL, pool), 0,
			"rx queue");
		CHECK_EQ(rte_eth_tx_queue_setup(p, 0, 64, 0, NULL), 0,
			"tx queue");
		CHECK_EQ(rte_eth_dev_start(p), 0, "start");
	}
	test_frames();
	test_queue();
	test_hold(r);
	for (p = 0; p < 3; p++) {
		rte_eth_dev_stop(p);
		rte_eth_dev_close(p);
	}
	rte_eal_cleanup();
	return check_report("test_switch_queue");
}
