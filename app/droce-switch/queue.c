/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * An egress queue: admission (tail drop, RED ECN marking) on the way in
 * and a token bucket on the way out, which is what makes a port the
 * bottleneck of a test.
 *
 * Marking looks at the instantaneous queue depth, not RED's moving
 * average: that is how switches are set up for DCQCN (the marking
 * profile Kmin/Kmax/Pmax applies to the queue as it is when the frame
 * arrives), and it is what the reaction point's tuning assumes.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_ethdev.h>
#include <rte_malloc.h>
#include <rte_random.h>

#include "switch.h"

int
sw_queue_init(struct sw_queue *q, const struct sw_qconf *c,
	uint64_t tsc_hz, uint64_t now)
{
	/* one slot per 64 bytes of buffer: the queue fills by bytes first
	 * even with minimum-size frames */
	uint32_t slots = rte_align32pow2(c->buffer / 64 + SW_BURST);

	q->c = *c;
	q->ring = rte_zmalloc("sw_queue", sizeof(*q->ring) * slots, 0);
	if (q->ring == NULL)
		return -ENOMEM;
	q->size = slots;
	q->last_tsc = now;
	q->credit = c->burst;
	q->bytes_per_tsc = (double)c->rate_bps / 8.0 / (double)tsc_hz;
	q->hold_tsc = c->hold_us * tsc_hz / 1000000;
	return 0;
}

static int
red_hit(const struct sw_queue *q)
{
	double p;

	if (q->bytes <= q->c.kmin)
		return 0;
	if (q->bytes >= q->c.kmax)
		return 1;
	p = q->c.pmax * (double)(q->bytes - q->c.kmin) /
		(double)(q->c.kmax - q->c.kmin);
	return (double)rte_rand() * 0x1p-64 < p;
}

void
sw_queue_enqueue(struct sw_queue *q, struct rte_mbuf *m)
{
	uint32_t len = rte_pktmbuf_pkt_len(m);
	struct sw_flow *f = sw_flow_get((int)m->hash.usr - 1);

	if (q->bytes + len > q->c.buffer || q->tail - q->head == q->size) {
		q->tail_drops++;
		if (f != NULL)
			f->dropped++;
		rte_pktmbuf_free(m);
		return;
	}
	if (q->c.ecn && red_hit(q) && sw_frame_red_class(m)) {
		switch (sw_frame_ecn(m)) {
		case SW_ECT0:
		case SW_ECT1:
			sw_frame_set_ce(m);
			q->marked++;
			if (f != NULL)
				f->marked++;
			break;
		case SW_CE:
			q->ce_seen++;
			break;
		default:
			/* a Not-ECT IP frame cannot take a mark: drop it
			 * where a marking switch would (RFC 3168 section 5) */
			q->red_drops++;
			if (f != NULL)
				f->dropped++;
			rte_pktmbuf_free(m);
			return;
		}
	}
	q->ring[q->tail++ & (q->size - 1)] = m;
	q->bytes += len;
	if (q->bytes > q->max_bytes)
		q->max_bytes = q->bytes;
	q->enq_frames++;
	q->enq_bytes += len;
}

/*
 * Hand frames to a port; returns how many left the queue (sent, or
 * dropped), *sent how many the PMD took. A connected host whose receive
 * ring is full is, here, a host that has not been scheduled yet (nine
 * processes on two CPUs): its frames stay at the head of the queue for
 * up to --hold-us, where the queue's own policy (marks, tail drop) sees
 * what piles up behind them, rather than being lost outside it. Past
 * that the host is not coming soon (a process blocked elsewhere), and
 * holding would block every other port of a shared link: they are
 * dropped, as at a NIC whose ring is full. A port with no peer drops at
 * once.
 */
static uint16_t
tx_port(const struct sw_queue *q, struct sw_port *p, struct rte_mbuf **b,
	uint16_t n, uint16_t *sent, uint64_t now)
{
	struct rte_eth_link link;
	uint16_t i;

	*sent = rte_eth_tx_burst(p->id, 0, b, n);
	if (*sent == n) {
		p->held_since = 0;
		return n;
	}
	memset(&link, 0, sizeof(link));
	if (rte_eth_link_get_nowait(p->id, &link) == 0 &&
			link.link_status == RTE_ETH_LINK_UP) {
		if (p->held_since == 0)
			p->held_since = now;
		if (now - p->held_since <= q->hold_tsc) {
			p->tx_held += n - *sent;
			return *sent;
		}
	}
	p->tx_fail += n - *sent;
	for (i = *sent; i < n; i++)
		rte_pktmbuf_free(b[i]);
	return n;
}

void
sw_queue_drain(struct sw_queue *q, uint64_t now, struct sw_port *ports)
{
	struct rte_mbuf *out[SW_MAX_PORTS][SW_BURST], *keep[SW_BURST];
	uint16_t nout[SW_MAX_PORTS] = { 0 }, done[SW_MAX_PORTS] = { 0 };
	uint16_t sent[SW_MAX_PORTS] = { 0 }, seen[SW_MAX_PORTS] = { 0 };
	uint32_t h0 = q->head, k = 0, nkeep = 0, j;
	double credit;
	uint16_t i;

	if (q->c.rate_bps) {
		q->credit += (double)(now - q->last_tsc) * q->bytes_per_tsc;
		/* a descheduled switch does not make up for the time lost:
		 * the link stays at most its rate over any burst window */
		if (q->credit > q->c.burst)
			q->credit = q->c.burst;
	}
	q->last_tsc = now;
	/* a burst off the head, as far as the credit goes */
	credit = q->credit;
	while (h0 + k != q->tail && k < SW_BURST) {
		struct rte_mbuf *m = q->ring[(h0 + k) & (q->size - 1)];
		uint32_t len = rte_pktmbuf_pkt_len(m);

		if (q->c.rate_bps && credit < len)
			break;
		credit -= len;
		out[m->port][nout[m->port]++] = m;
		k++;
	}
	for (i = 0; i < SW_MAX_PORTS; i++)
		if (nout[i])
			done[i] = tx_port(q, &ports[i], out[i], nout[i],
				&sent[i], now);
	/* in queue order: a port took a prefix of its frames */
	for (j = 0; j < k; j++) {
		struct rte_mbuf *m = q->ring[(h0 + j) & (q->size - 1)];
		uint32_t len = rte_pktmbuf_pkt_len(m);
		uint16_t at = seen[m->port]++;
		struct sw_port *p = &ports[m->port];
		struct sw_flow *f;

		if (at >= done[m->port]) {
			keep[nkeep++] = m;
			continue;
		}
		q->bytes -= len;
		if (q->c.rate_bps)
			q->credit -= len;
		if (at >= sent[m->port])
			continue;	/* dropped, mbuf freed */
		p->tx_frames++;
		p->tx_bytes += len;
		f = sw_flow_get((int)m->hash.usr - 1);
		if (f != NULL)
			f->tx_bytes += len;
	}
	/* what stays goes back to the head, in its order */
	q->head = h0 + k - nkeep;
	for (j = 0; j < nkeep; j++)
		q->ring[(q->head + j) & (q->size - 1)] = keep[j];
}

/*
 * A frame of another class than RED's (ARP, neighbour discovery, other
 * non-UDP traffic): a switch keeps such frames in a queue of their own
 * with priority over data, and they are few, so here they leave at
 * once, past the data queue and its rate. Under a full data queue ARP
 * replies were tail-dropped until a host gave up resolving its peer.
 */
void
sw_ctl_tx(struct sw_port *p, struct rte_mbuf *m)
{
	struct sw_flow *f = sw_flow_get((int)m->hash.usr - 1);
	uint32_t len = rte_pktmbuf_pkt_len(m);

	if (rte_eth_tx_burst(p->id, 0, &m, 1) != 1) {
		p->tx_fail++;
		rte_pktmbuf_free(m);
		return;
	}
	p->ctl_frames++;
	p->tx_frames++;
	p->tx_bytes += len;
	if (f != NULL)
		f->tx_bytes += len;
}

/* At exit: what is still queued is freed, not sent. */
void
sw_queue_flush(struct sw_queue *q)
{
	while (q->head != q->tail)
		rte_pktmbuf_free(q->ring[q->head++ & (q->size - 1)]);
	q->bytes = 0;
	rte_free(q->ring);
	q->ring = NULL;
}
