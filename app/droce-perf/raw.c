/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * The raw PMD baseline: plain rte_eth_tx_burst/rx_burst of frames the
 * size droce sends, a rate (raw_tx_job at the client, raw_rx_pass at the
 * server) or a round trip (raw_rtt_client, echoed by raw_rx_pass).
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "perf_internal.h"

/*
 * Frame size on the wire for one packet of a message of `size` bytes:
 * Ethernet, IPv4, UDP, BTH, a RETH (16 bytes, as a WRITE's first packet:
 * every RC op is measured with one) or ud_send's DETH (8), the payload
 * padded to 4 bytes, the ICRC.
 */
static uint32_t
frame_size(int op, uint32_t size)
{
	uint32_t pl = size > mtu_bytes ? mtu_bytes : size;
	uint32_t ext = op == OP_UD_SEND ? 8 : 16;

	return 14 + 20 + 8 + 12 + ext + pl + ((0u - pl) & 3) + 4;
}

/* Packets of a message of `size` bytes (one for an empty one). */
static uint32_t
msg_frames(uint32_t size)
{
	return size > mtu_bytes ? (size + mtu_bytes - 1) / mtu_bytes : 1;
}

/* Byte 14 of a raw latency frame: the last of its message, echo it. */
#define RAW_ECHO_ME 1
/* What the raw echo sends back: a minimum frame, as droce's ACK is small. */
#define RAW_ECHO_LEN 60
/* Round trips per queue before the first test: net_memif's largest
 * default ring is 1,024 slots; this is four laps of it. */
#define WARM_UP_RTTS 4096
/* ... or this long per queue: where more lcores spin than there are CPUs
 * (tests run two workers a side on two CPUs) a round trip can wait for a
 * time slice, and the warm-up must not turn into a minute. */
#define WARM_UP_MAX_NS 200000000ull

static struct rte_mempool *
raw_pool(struct worker *w)
{
	struct rte_mempool *mp;
	char name[64];

	snprintf(name, sizeof(name), "raw%d_%u", getpid(), w->id);
	mp = rte_mempool_lookup(name);
	if (mp == NULL)
		mp = rte_pktmbuf_pool_create(name, 4095, 256, 0,
			RTE_MBUF_DEFAULT_BUF_SIZE + 4096, (int)rte_socket_id());
	return mp;
}

static uint32_t raw_frame_len;
static uint64_t raw_deadline;

/* A raw frame of len bytes: broadcast, not RoCE (the peer's droce ignores
 * it: IEEE local experimental EtherType), byte 14 = mark. */
static void
raw_frame_fill(struct rte_mbuf *m, uint32_t len, uint8_t mark)
{
	uint8_t *d = rte_pktmbuf_mtod(m, uint8_t *);

	memset(d, 0xff, 6);
	memcpy(d + 6, me.mac, 6);
	d[12] = 0x88;
	d[13] = 0xb5;
	d[14] = mark;
	m->data_len = m->pkt_len = (uint16_t)len;
}

/* Send frames of the size droce sends on the worker's queues, as fast as
 * the PMD takes them, until raw_deadline. */
static int
raw_tx_job(struct worker *w)
{
	struct rte_mempool *mp = raw_pool(w);
	struct rte_mbuf *m[32];
	uint16_t pid = droce_port_id(port);
	uint64_t sent = 0;
	uint32_t j = 0;
	int i, n;

	w->raw_sent = 0;
	if (mp == NULL)
		return -1;
	do {
		if (rte_pktmbuf_alloc_bulk(mp, m, 32) == 0) {
			for (i = 0; i < 32; i++)
				raw_frame_fill(m[i], raw_frame_len, 0);
			n = rte_eth_tx_burst(pid, (uint16_t)w->q[j], m, 32);
			sent += (uint64_t)n;
			if (n < 32)
				rte_pktmbuf_free_bulk(m + n, 32 - n);
			j = j + 1 == w->nq ? 0 : j + 1;
		}
	} while (droce_now_ns() < raw_deadline);
	w->raw_sent = sent;
	return 0;
}

static double
raw_client(int op, uint32_t size, double secs, uint64_t *sent_out)
{
	uint64_t sent = 0, t0;
	uint32_t i;

	raw_frame_len = frame_size(op, size);
	t0 = droce_now_ns();
	raw_deadline = t0 + (uint64_t)(secs * 1e9);
	run_workers(raw_tx_job);
	for (i = 0; i < opt.cores; i++)
		sent += workers[i].raw_sent;
	*sent_out = sent;
	return (double)sent / ((droce_now_ns() - t0) / 1e9);
}

/*
 * Raw round trip of a message, p50 in us: its frames out (a 64 KB
 * message at path MTU 1024 is 64 of them, the last one shorter), and the
 * server echoes one minimum frame when the last arrives. That is what a
 * droce WRITE or SEND waits for (its packets out, one ACK back); a READ
 * is the mirror image (one request out, its responses back).
 */
static double
raw_rtt_client(uint16_t qid, int op, uint32_t size, uint32_t iters,
		uint64_t max_ns)
{
	struct rte_mbuf *m[32], *in[32];
	struct rte_mempool *mp = raw_pool(&workers[0]);
	uint16_t pid = droce_port_id(port);
	uint64_t *t = calloc(iters, sizeof(*t)), t0;
	uint32_t i, k, got = 0, nfr = msg_frames(size), left, burst, sent;
	uint32_t lost_run = 0;
	uint64_t start = droce_now_ns();
	double p50;
	int n = 0, lost;

	if (mp == NULL || t == NULL) {
		free(t);
		return 0;
	}
	for (i = 0; i < iters; i++) {
		t0 = droce_now_ns();
		if (t0 - start > max_ns)
			break;
		lost = 0;
		for (left = nfr; left > 0 && !lost; left -= burst) {
			burst = left > 32 ? 32 : left;
			if (rte_pktmbuf_alloc_bulk(mp, m, burst) != 0) {
				lost = 1;
				break;
			}
			for (k = 0; k < burst; k++) {
				uint32_t last = left - k == 1;

				raw_frame_fill(m[k], frame_size(op, last ?
					size - (nfr - 1) * mtu_bytes :
					mtu_bytes), last ? RAW_ECHO_ME : 0);
			}
			/* a full ring is retried, not dropped: every frame of
			 * the message must go */
			for (sent = 0; sent < burst; ) {
				sent += rte_eth_tx_burst(pid, qid, m + sent,
					(uint16_t)(burst - sent));
				if (sent < burst &&
						droce_now_ns() - t0 > 100000000ull) {
					rte_pktmbuf_free_bulk(m + sent,
						burst - sent);
					lost = 1;
					break;
				}
			}
		}
		if (lost)
			continue;
		for (;;) {
			n = rte_eth_rx_burst(pid, qid, in, 32);
			if (n) {
				rte_pktmbuf_free_bulk(in, (unsigned int)n);
				break;
			}
			if (droce_now_ns() - t0 > 100000000ull)
				break;	/* lost: do not count it */
		}
		if (n) {
			t[got++] = droce_now_ns() - t0;
			lost_run = 0;
		} else if (++lost_run == 10) {
			break;	/* 1 s without an echo: the peer is not there */
		}
	}
	qsort(t, got, sizeof(*t), cmp_u64);
	p50 = got ? t[got / 2] / 1000.0 : 0;
	free(t);
	return p50;
}

/* One receive pass over the worker's queues; echo (latency mode): send
 * back, as a minimum frame, each frame that ends a message. Returns the
 * frames received. */
uint64_t
raw_rx_pass(struct worker *w, int echo)
{
	struct rte_mbuf *m[64], *back[64];
	uint16_t pid = droce_port_id(port);
	uint64_t got = 0;
	uint32_t j;
	int n, i, nb, k;

	for (j = 0; j < w->nq; j++) {
		n = rte_eth_rx_burst(pid, (uint16_t)w->q[j], m, 64);
		if (n == 0)
			continue;
		got += (uint64_t)n;
		if (!echo) {
			rte_pktmbuf_free_bulk(m, (unsigned int)n);
			continue;
		}
		for (i = nb = 0; i < n; i++) {
			uint8_t *d = rte_pktmbuf_mtod(m[i], uint8_t *);

			if (m[i]->data_len >= RAW_ECHO_LEN &&
					d[14] == RAW_ECHO_ME) {
				if (m[i]->next != NULL) {	/* a chained frame */
					rte_pktmbuf_free(m[i]->next);
					m[i]->next = NULL;
					m[i]->nb_segs = 1;
				}
				m[i]->data_len = m[i]->pkt_len = RAW_ECHO_LEN;
				back[nb++] = m[i];
			} else {
				rte_pktmbuf_free(m[i]);
			}
		}
		k = nb ? rte_eth_tx_burst(pid, (uint16_t)w->q[j], back,
			(uint16_t)nb) : 0;
		if (k < nb)
			rte_pktmbuf_free_bulk(back + k, (unsigned int)(nb - k));
	}
	return got;
}

/* The raw figure beside a test's: the client sends (or sends and waits
 * for echoes), the server counts (or echoes). */
void
run_raw(struct result *r)
{
	struct perf_cmd c = { .kind = PERF_CMD_RAW, .flags = (uint32_t)opt.lat };
	uint64_t sent = 0;
	uint32_t pl;

	if (r->op == OP_FADD || r->op == OP_CSWAP)
		r->size = 8;
	pl = r->size > mtu_bytes ? mtu_bytes : r->size;
	if (sc_send(sc, &c, sizeof(c)) || sc_recv_progress(sc, &c, sizeof(c)))
		return;
	usleep(1000);
	if (opt.lat) {
		r->raw_lat_p50 = raw_rtt_client(0, r->op, r->size, 2000,
			UINT64_MAX);
		c.kind = PERF_CMD_RAW_DONE;
		if (sc_send(sc, &c, sizeof(c)) || sc_recv_progress(sc, &c, sizeof(c)))
			return;
		if (r->raw_lat_p50 > 0) {
			r->ratio = r->raw_lat_p50 / r->lat_p50;
			r->raw_gbps = r->size * 8.0 / (r->raw_lat_p50 * 1e3);
		} else {
			/* a baseline that never came back is no figure */
			fprintf(stderr, "raw baseline: no echo came back\n");
			r->ok = 0;
		}
		for (int i = 0; i < 100; i++)
			progress_all();
		return;
	}
	r->raw_fps = raw_client(r->op, r->size, r->secs > 0.3 ? 0.5 : 0.3,
		&sent);
	c.kind = PERF_CMD_RAW_DONE;
	if (sc_send(sc, &c, sizeof(c)) || sc_recv_progress(sc, &c, sizeof(c)))
		return;
	/* what the peer received is the rate that counts */
	if (sent)
		r->raw_fps = r->raw_fps * ((double)c.value / (double)sent);
	if (c.value == 0) {
		fprintf(stderr, "raw baseline: the server received no frame\n");
		r->ok = 0;
	}
	r->raw_gbps = r->raw_fps * pl * 8 / 1e9;
	if (r->raw_gbps > 0)
		r->ratio = r->gbps / r->raw_gbps;
	/* drain what is left of the raw frames before droce runs again */
	for (int i = 0; i < 100; i++)
		progress_all();
}

/*
 * Before the first test, one lap of raw echoes over every slot of each
 * queue's rings, both ways. The first frame through a slot of a
 * net_memif ring page-faults on its buffer in the shared region (~5 us
 * each here, every other frame of the first 1,024 with 2 KB buffers).
 * Without this, the first test paid those faults and its raw baseline,
 * which runs after it, did not: the first latency test's p99 was ~7 us
 * against ~1.8 us for the same test later in the run.
 */
void
warm_up(void)
{
	struct perf_cmd c = { .kind = PERF_CMD_RAW, .flags = 1 };
	uint16_t q;

	if (sc_send(sc, &c, sizeof(c)) || sc_recv_progress(sc, &c, sizeof(c)))
		return;
	usleep(1000);
	for (q = 0; q < opt.queues; q++)
		raw_rtt_client(q, OP_WRITE, 64, WARM_UP_RTTS, WARM_UP_MAX_NS);
	c.kind = PERF_CMD_RAW_DONE;
	if (sc_send(sc, &c, sizeof(c)) || sc_recv_progress(sc, &c, sizeof(c)))
		return;
	for (int i = 0; i < 100; i++)
		progress_all();
}
