/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * Fault injection on a port's receive or transmit path, with a seeded
 * schedule: drop, duplicate, reorder (hold a frame back behind the next
 * one), corrupt (flip one bit), delay (hold for delay_us, in order),
 * mark CE (as a congested switch),
 * optionally only for the first conf.frames frames. Users test their
 * applications against loss with it; droce's own tests need it where the
 * kernel has no netem.
 */

#include <rte_mbuf.h>

#include "dp_internal.h"

static uint64_t
rnd(struct dp_fault *f)
{
	uint64_t z = (f->rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static int
hit(struct dp_fault *f, uint32_t ppm)
{
	return ppm && rnd(f) % 1000000 < ppm;
}

/*
 * Apply faults to pkts[0..n) in place (room for cap); returns the new n.
 * Delayed frames that are due come out first, even when n is 0.
 */
/*
 * ARP and IPv6 neighbour discovery pass untouched: the faults are for the
 * RDMA traffic. A lost ARP reply tests a peer's address resolution, not
 * its transport: Linux rxe fails ibv_modify_qp(RTR) when its one-second
 * resolution misses a reply (the ARP retransmit interval is also 1 s).
 */
static int
is_neigh_frame(const struct rte_mbuf *m)
{
	const uint8_t *d = rte_pktmbuf_mtod(m, const uint8_t *);
	uint32_t len = rte_pktmbuf_data_len(m), l2 = 14;
	uint16_t et;

	if (len < 14)
		return 0;
	et = (uint16_t)(d[12] << 8 | d[13]);
	if (et == 0x8100 && len >= 18) {
		et = (uint16_t)(d[16] << 8 | d[17]);
		l2 = 18;
	}
	if (et == 0x0806)
		return 1;
	/* IPv6, next header ICMPv6, neighbour solicitation/advertisement */
	return et == 0x86dd && len >= l2 + 41 && d[l2 + 6] == 58 &&
		(d[l2 + 40] == 135 || d[l2 + 40] == 136);
}

/*
 * A RoCEv2 frame (UDP to 4791) marked CE, as a switch marks it: the ECN
 * field to CE, the IPv4 header checksum updated (the ICRC leaves the
 * field out). 1 if marked.
 */
static int
mark_ce(struct rte_mbuf *m)
{
	uint8_t *d = rte_pktmbuf_mtod(m, uint8_t *);
	uint32_t len = rte_pktmbuf_data_len(m), l3 = 14, s, i;
	uint16_t et;

	if (len < 18)
		return 0;
	et = (uint16_t)(d[12] << 8 | d[13]);
	if (et == 0x8100) {
		l3 = 18;
		et = (uint16_t)(d[16] << 8 | d[17]);
	}
	if (et == 0x0800 && len >= l3 + 28 && d[l3 + 9] == 17 &&
			(d[l3] & 0x0f) == 5 &&
			(d[l3 + 22] << 8 | d[l3 + 23]) == 4791) {
		d[l3 + 1] |= 3;
		d[l3 + 10] = d[l3 + 11] = 0;
		for (s = 0, i = 0; i < 20; i += 2)
			s += (uint32_t)(d[l3 + i] << 8 | d[l3 + i + 1]);
		while (s >> 16)
			s = (s & 0xffff) + (s >> 16);
		s = ~s & 0xffff;
		d[l3 + 10] = (uint8_t)(s >> 8);
		d[l3 + 11] = (uint8_t)s;
		return 1;
	}
	if (et == 0x86dd && len >= l3 + 48 && d[l3 + 6] == 17 &&
			(d[l3 + 42] << 8 | d[l3 + 43]) == 4791) {
		d[l3 + 1] |= 3 << 4;	/* the traffic class's low bits */
		return 1;
	}
	return 0;
}

uint16_t
dp_fault_apply(struct droce_port *p, struct dp_fault *f, struct rte_mbuf **pkts,
		uint16_t n, uint16_t cap, uint64_t now)
{
	struct rte_mbuf *out[DP_TXQ_LEN + DP_BURST * 2];
	uint16_t i, k = 0;

	while (f->dq_head != f->dq_tail && k < cap / 2 &&
			f->dq_due[f->dq_tail % DP_DELAY_Q] <= now) {
		out[k++] = f->dq[f->dq_tail % DP_DELAY_Q];
		f->dq_tail++;
	}
	for (i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];

		if (is_neigh_frame(m)) {
			if (k < cap)
				out[k++] = m;
			else
				rte_pktmbuf_free(m);
			continue;
		}
		/* past the window frames pass untouched; a held one follows */
		if (f->conf.frames && f->seen >= f->conf.frames)
			goto emit;
		f->seen++;
		if (hit(f, f->conf.delay_ppm) &&
				f->dq_head - f->dq_tail < DP_DELAY_Q) {
			f->dq[f->dq_head % DP_DELAY_Q] = m;
			f->dq_due[f->dq_head % DP_DELAY_Q] = now +
				(uint64_t)f->conf.delay_us * 1000;
			f->dq_head++;
			f->st.delayed++;
			continue;
		}

		if (hit(f, f->conf.drop_ppm)) {
			f->st.dropped++;
			rte_pktmbuf_free(m);
			continue;
		}
		if (hit(f, f->conf.corrupt_ppm) && rte_pktmbuf_data_len(m)) {
			uint8_t *d = rte_pktmbuf_mtod(m, uint8_t *);

			d[rnd(f) % rte_pktmbuf_data_len(m)] ^=
				(uint8_t)(1u << (rnd(f) % 8));
			f->st.corrupted++;
		}
		if (hit(f, f->conf.ce_ppm) && mark_ce(m))
			f->st.ce_marked++;
		if (hit(f, f->conf.dup_ppm) && k + 1 < cap) {
			struct rte_mbuf *c = rte_pktmbuf_copy(m, p->pool, 0,
				UINT32_MAX);

			if (c != NULL) {
				out[k++] = c;
				f->st.duplicated++;
			}
		}
		if (f->held == NULL && hit(f, f->conf.reorder_ppm)) {
			f->held = m;	/* goes out after the next frame */
			f->st.reordered++;
			continue;
		}
emit:
		if (k < cap)
			out[k++] = m;
		else
			rte_pktmbuf_free(m);
		if (f->held != NULL && k < cap) {
			out[k++] = f->held;
			f->held = NULL;
		}
	}
	for (i = 0; i < k; i++)
		pkts[i] = out[i];
	return k;
}

int
droce_port_set_fault(struct droce_port *p, const struct droce_fault_conf *rx,
		const struct droce_fault_conf *tx)
{
	rte_spinlock_lock(&p->fault_lock);
	if (rx) {
		p->frx.conf = *rx;
		p->frx.rng = rx->seed ? rx->seed : 1;
		p->frx.seen = 0;
	}
	if (tx) {
		p->ftx.conf = *tx;
		p->ftx.rng = tx->seed ? tx->seed : 2;
		p->ftx.seen = 0;
	}
	rte_spinlock_unlock(&p->fault_lock);
	return 0;
}

static void
stats_read(const struct dp_fault *f, struct droce_fault_stats *st)
{
	st->dropped = f->st.dropped;
	st->duplicated = f->st.duplicated;
	st->reordered = f->st.reordered;
	st->corrupted = f->st.corrupted;
	st->delayed = f->st.delayed;
	st->ce_marked = f->st.ce_marked;
}

void
droce_port_fault_stats(struct droce_port *p, struct droce_fault_stats *rx,
		struct droce_fault_stats *tx)
{
	rte_spinlock_lock(&p->fault_lock);
	if (rx)
		stats_read(&p->frx, rx);
	if (tx)
		stats_read(&p->ftx, tx);
	rte_spinlock_unlock(&p->fault_lock);
}

/* At close: free the frames a delay still holds. */
void
dp_fault_free(struct dp_fault *f)
{
	while (f->dq_head != f->dq_tail)
		rte_pktmbuf_free(f->dq[f->dq_tail++ % DP_DELAY_Q]);
}
