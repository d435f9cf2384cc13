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
#include "droce_wire.h"

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
		if (hit(f, f->conf.ce_ppm) &&
				droce_wire_mark_ce(rte_pktmbuf_mtod(m, uint8_t *),
					rte_pktmbuf_data_len(m), 0))
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
