/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * Transmit: the buffers the transport builds frames in (mbufs, stashed
 * between its calls), zero-copy chains that send registered memory by
 * reference, and the queue of frames waiting for rte_eth_tx_burst.
 */

#include <string.h>

#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_memory.h>

#include "dp_internal.h"

static void
io_tx_free(void *arg, struct droce_txbuf *bufs, uint32_t n)
{
	struct dp_queue *q = arg;
	uint32_t i;

	for (i = 0; i < n; i++) {
		if (q->nstash < RTE_DIM(q->stash))
			q->stash[q->nstash++] = bufs[i].cookie;
		else
			rte_pktmbuf_free(bufs[i].cookie);
	}
}

/*
 * The transport asks for a batch and often uses one buffer of it: what it
 * gives back is stashed for its next call instead of going back to the
 * mempool (alloc 32 + free 31 per packet showed at the top of a profile).
 */
static uint32_t
io_tx_alloc(void *arg, struct droce_txbuf *bufs, uint32_t n, uint32_t cap)
{
	struct dp_queue *q = arg;
	uint32_t i;

	if (n > DP_BURST)
		n = DP_BURST;
	/*
	 * Back-pressure: hand out no more buffers than the transmit queue
	 * can hold, so a sender without a window (UC, UD) waits for the NIC
	 * instead of losing frames to a full queue.
	 */
	if (DP_TXQ_LEN - q->ntx < n)
		dp_queue_flush(q);
	if (DP_TXQ_LEN - q->ntx < n)
		n = DP_TXQ_LEN - q->ntx;
	if (n == 0)
		return 0;
	if (q->nstash < n) {
		uint32_t want = DP_BURST;

		if (rte_pktmbuf_alloc_bulk(q->port->pool, q->stash + q->nstash,
				want) != 0) {
			want = n - q->nstash;
			if (rte_pktmbuf_alloc_bulk(q->port->pool,
					q->stash + q->nstash, want) != 0)
				want = 0;
		}
		q->nstash += want;
		if (q->nstash < n)
			n = q->nstash;
	}
	/*
	 * No rte_pktmbuf_reset: the stash holds mbufs fresh from
	 * rte_pktmbuf_alloc_bulk (which resets them) or handed out and given
	 * back unsent (io_tx_free), whose metadata nobody wrote. Resetting
	 * a batch of 32 for the one frame a pass often sends was a tenth of
	 * a perftest client's profile.
	 */
	for (i = 0; i < n; i++) {
		struct rte_mbuf *m = q->stash[--q->nstash];

		bufs[i].data = rte_pktmbuf_mtod(m, uint8_t *);
		bufs[i].cap = rte_pktmbuf_tailroom(m);
		bufs[i].cookie = m;
		if (bufs[i].cap < cap) {
			q->stash[q->nstash++] = m;
			io_tx_free(q, bufs, i);
			return 0;
		}
	}
	return n;
}

/* An external segment let go of its MR's memory. */
static void
zc_free(void *addr __rte_unused, void *mr)
{
	droce_mr_zc_put(mr);
}

/*
 * Whether a span can be handed to a device that DMAs: DPDK must know the
 * memory (for its IOVA), contiguous in IOVA over the span.
 */
static int
zc_mem_ok(void *arg, const void *addr, uint32_t len)
{
	const char *a = addr;

	RTE_SET_USED(arg);
	if (rte_mem_virt2memseg(addr, NULL) == NULL ||
			rte_mem_virt2memseg(a + len - 1, NULL) == NULL)
		return 0;
	return rte_mem_virt2iova(a + len - 1) - rte_mem_virt2iova(a) ==
		len - 1;
}

/* n mbufs from the stash or the pool; 0 or -1 with none taken. */
static int
stash_take(struct dp_queue *q, struct rte_mbuf **m, uint32_t n)
{
	if (q->nstash < n) {
		if (rte_pktmbuf_alloc_bulk(q->port->pool, q->stash + q->nstash,
				DP_BURST) == 0)
			q->nstash += DP_BURST;
		else if (rte_pktmbuf_alloc_bulk(q->port->pool, m, n) == 0)
			return 0;
		else
			return -1;
	}
	q->nstash -= n;
	memcpy(m, q->stash + q->nstash, n * sizeof(*m));
	return 0;
}

/*
 * Headers in h, then one external mbuf per span (its shared info in its
 * own, unused data room, which lives until the mbuf is freed, so no
 * allocation), then pad and ICRC in one more mbuf. Without mbufs the
 * payload is copied behind the headers: the buffer has room for it.
 */
int
dp_zc_chain(struct dp_queue *q, struct rte_mbuf *h, struct droce_txbuf *b)
{
	struct rte_mbuf *seg[DROCE_TX_MAX_SPANS + 1], *prev = h, *t;
	uint32_t i, len = b->len, ntail = b->tail_len ? 1 : 0;

	h->data_len = (uint16_t)b->len;
	if (stash_take(q, seg, b->nspan + ntail) != 0) {
		if (b->tso_mss) {
			/* tens of kilobytes: no room behind the headers, and
			 * nothing acknowledges a raw frame (TCP resends) */
			for (i = 0; i < b->nspan; i++)
				droce_mr_zc_put(b->span[i].mr);
			rte_pktmbuf_free(h);
			q->tso_drops++;
			return -1;
		}
		for (i = 0; i < b->nspan; i++) {
			memcpy(b->data + len, b->span[i].addr, b->span[i].len);
			len += b->span[i].len;
			droce_mr_zc_put(b->span[i].mr);
		}
		memcpy(b->data + len, b->tail, b->tail_len);
		len += b->tail_len;
		h->data_len = (uint16_t)len;
		h->pkt_len = len;
		q->zc_copied++;
		return 0;
	}
	for (i = 0; i < b->nspan; i++) {
		struct rte_mbuf *m = seg[i];
		struct rte_mbuf_ext_shared_info *sh = m->buf_addr;
		void *addr = (void *)(uintptr_t)b->span[i].addr;

		sh->free_cb = zc_free;
		sh->fcb_opaque = b->span[i].mr;
		rte_mbuf_ext_refcnt_set(sh, 1);
		rte_pktmbuf_attach_extbuf(m, addr, q->port->zc_dma ?
			rte_mem_virt2iova(addr) : (rte_iova_t)(uintptr_t)addr,
			(uint16_t)b->span[i].len, sh);
		m->data_len = (uint16_t)b->span[i].len;
		len += b->span[i].len;
		prev->next = m;
		prev = m;
	}
	h->nb_segs = (uint16_t)(b->nspan + 1 + ntail);
	h->pkt_len = len + b->tail_len;
	if (ntail) {
		t = seg[b->nspan];
		memcpy(rte_pktmbuf_mtod(t, uint8_t *), b->tail, b->tail_len);
		t->data_len = (uint16_t)b->tail_len;
		prev->next = t;
	}
	return 0;
}

/*
 * A TSO frame: the PMD cuts it into segments of tso_mss bytes and fills
 * every sum in. As DPDK asks, the IPv4 header sum is zeroed and the TCP
 * one holds the pseudo-header's, without the length.
 */
void
dp_tso_offload(struct dp_queue *q, struct rte_mbuf *m,
		const struct droce_txbuf *b)
{
	uint8_t *f = rte_pktmbuf_mtod(m, uint8_t *);
	uint64_t fl = RTE_MBUF_F_TX_TCP_SEG | RTE_MBUF_F_TX_TCP_CKSUM;
	uint16_t ck;

	if ((f[b->tso_l3off] >> 4) == 4) {
		fl |= RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_IP_CKSUM;
		f[b->tso_l3off + 10] = 0;
		f[b->tso_l3off + 11] = 0;
		ck = rte_ipv4_phdr_cksum((const struct rte_ipv4_hdr *)
			(f + b->tso_l3off), fl);
	} else {
		fl |= RTE_MBUF_F_TX_IPV6;
		ck = rte_ipv6_phdr_cksum((const struct rte_ipv6_hdr *)
			(f + b->tso_l3off), fl);
	}
	memcpy(f + b->tso_l4off + 16, &ck, 2);
	m->l2_len = b->tso_l3off;
	m->l3_len = (uint16_t)(b->tso_l4off - b->tso_l3off);
	m->l4_len = (uint16_t)(b->tso_hlen - b->tso_l4off);
	m->tso_segsz = b->tso_mss;
	m->ol_flags |= fl;
	q->tso_offloaded++;
}

/*
 * The PMD fills an IPv4 frame's header checksum in: say where the headers
 * are, and zero the field as DPDK asks (the ICRC does not cover it).
 */
static void
offload_ip_csum(struct dp_queue *q, struct rte_mbuf *m)
{
	uint8_t *f = rte_pktmbuf_mtod(m, uint8_t *);
	uint16_t l2 = RTE_ETHER_HDR_LEN;
	uint16_t et = (uint16_t)(f[12] << 8 | f[13]);

	if (et == RTE_ETHER_TYPE_VLAN) {
		l2 += 4;
		et = (uint16_t)(f[16] << 8 | f[17]);
	}
	if (et != RTE_ETHER_TYPE_IPV4)
		return;
	m->l2_len = l2;
	m->l3_len = (uint16_t)((f[l2] & 0xf) * 4);
	m->ol_flags |= RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_IP_CKSUM;
	f[l2 + 10] = 0;
	f[l2 + 11] = 0;
	q->ip_csum_offloaded++;
}

/*
 * Loopback, as a NIC does it: a frame to the port's own MAC (an AH to one
 * of its own GIDs: MPI ranks and UCX endpoints on one host, applications
 * of one droced) never reaches the wire; the next pass receives it. It
 * passes neither the PMD nor fault injection. Returns 1 if m was taken.
 */
static int
loop_back(struct dp_queue *q, struct rte_mbuf *m)
{
	const struct rte_ether_hdr *eh = rte_pktmbuf_mtod(m,
		const struct rte_ether_hdr *);

	if (!rte_is_same_ether_addr(&eh->dst_addr, &q->port->mac))
		return 0;
	if (q->nlb == DP_TXQ_LEN) {
		rte_pktmbuf_free(m);	/* the transport retransmits */
		q->loopback_drops++;
		return 1;
	}
	q->lb[q->nlb++] = m;
	q->loopback++;
	return 1;
}

uint16_t
dp_queue_loop_take(struct dp_queue *q, struct rte_mbuf **m, uint16_t cap)
{
	uint16_t n = (uint16_t)RTE_MIN(q->nlb, (uint32_t)cap);

	memcpy(m, q->lb, n * sizeof(*m));
	q->nlb -= n;
	if (q->nlb)
		memmove(q->lb, q->lb + n, q->nlb * sizeof(q->lb[0]));
	return n;
}

static void
io_tx_submit(void *arg, struct droce_txbuf *bufs, uint32_t n)
{
	struct dp_queue *q = arg;
	uint32_t i;

	for (i = 0; i < n; i++) {
		struct rte_mbuf *m = bufs[i].cookie;

		if (bufs[i].nspan) {
			if (dp_zc_chain(q, m, &bufs[i]) != 0)
				continue;
			if (bufs[i].tso_mss) {
				dp_tso_offload(q, m, &bufs[i]);
				dp_queue_tx(q, m);
				continue;
			}
		} else {
			m->data_len = (uint16_t)bufs[i].len;
			m->pkt_len = bufs[i].len;
		}
		/* before the sum is left to the PMD: the receiver checks it */
		if (unlikely(q->port->loopback) && loop_back(q, m))
			continue;
		if (q->port->tx_ip_csum_offload)
			offload_ip_csum(q, m);
		dp_queue_tx(q, m);
	}
}

void
dp_queue_tx(struct dp_queue *q, struct rte_mbuf *m)
{
	if (q->ntx == DP_TXQ_LEN)
		dp_queue_flush(q);
	if (q->ntx == DP_TXQ_LEN) {
		/* the NIC is full: drop, the transport retransmits */
		rte_pktmbuf_free(m);
		q->tx_drops++;
		return;
	}
	q->txq[q->ntx++] = m;
}

void
dp_queue_flush(struct dp_queue *q)
{
	struct droce_port *p = q->port;
	uint16_t n, sent = 0;

	if (q->ntx == 0 && p->ftx.dq_head == p->ftx.dq_tail)
		return;
	if (dp_fault_active(&p->ftx)) {
		rte_spinlock_lock(&p->fault_lock);
		q->ntx = dp_fault_apply(p, &p->ftx, q->txq, (uint16_t)q->ntx,
			DP_TXQ_LEN, droce_now_ns());
		rte_spinlock_unlock(&p->fault_lock);
	}
	while (sent < q->ntx) {
		n = rte_eth_tx_burst(p->port_id, (uint16_t)q->index,
			q->txq + sent, (uint16_t)(q->ntx - sent));
		if (n == 0)
			break;
		sent += n;
		q->tx_bursts++;
	}
	q->tx_pkts += sent;
	if (sent < q->ntx)
		memmove(q->txq, q->txq + sent, (q->ntx - sent) * sizeof(q->txq[0]));
	q->ntx -= sent;
}

/*
 * net_af_packet (22.11) copies frames into its mmap'd TX ring and counts
 * them sent even when the kernel's sendto() stops early (a frame dropped on
 * egress: qdisc, nftables); the rest of the ring leaves only at the next
 * sendto(), and the PMD makes none for an empty burst. A requester that has
 * sent its window then waits for ACKs and sends nothing, so the tail of its
 * window (or a responder's last ACK) sat in the ring until the
 * retransmission timer fired, every time: deep windows under egress loss ran
 * out of retries. So for 5 ms after droce's last transmission, every
 * 200 us, send one minimal frame to our own MAC (IEEE local experimental
 * EtherType 0x88b5, which no stack takes): its burst kicks the ring.
 */
void
dp_queue_tx_kick(struct dp_queue *q, uint64_t now)
{
	struct droce_port *p = q->port;
	struct rte_ether_hdr *eh;
	struct rte_mbuf *m;

	if (q->tx_pkts != q->kick_seen) {
		q->kick_seen = q->tx_pkts;
		q->kick_until = now + 5000000;
		q->kick_next = now + 200000;
		return;
	}
	if (now >= q->kick_until || now < q->kick_next)
		return;
	q->kick_next = now + 200000;
	m = rte_pktmbuf_alloc(p->pool);
	if (m == NULL)
		return;
	eh = (struct rte_ether_hdr *)rte_pktmbuf_append(m, RTE_ETHER_MIN_LEN -
		RTE_ETHER_CRC_LEN);
	memset(eh, 0, RTE_ETHER_MIN_LEN - RTE_ETHER_CRC_LEN);
	rte_ether_addr_copy(&p->mac, &eh->dst_addr);
	rte_ether_addr_copy(&p->mac, &eh->src_addr);
	eh->ether_type = rte_cpu_to_be_16(0x88b5);
	if (rte_eth_tx_burst(p->port_id, (uint16_t)q->index, &m, 1) == 1) {
		q->kicks++;
		/* not counted in tx_pkts: not droce traffic */
	} else {
		rte_pktmbuf_free(m);
	}
}

/* Hand the transport queue q's transmit buffers. */
void
dp_txbuf_attach(struct dp_queue *q)
{
	struct droce_port *p = q->port;
	struct droce_tp_io io = {
		.tx_alloc = io_tx_alloc,
		.tx_submit = io_tx_submit,
		.tx_free = io_tx_free,
		.arg = q,
		.zc_min = p->zc_min,
		.zc_mem_ok = p->zc_dma ? zc_mem_ok : NULL,
		.tso_segs = p->tso_segs,
		.tso_seg_max = p->tso_tap ? p->mtu :
			p->mtu + RTE_ETHER_HDR_LEN + 4,
		.tso_ipv6 = !p->tso_tap,
	};

	droce_tp_queue_set_io(q->tq, &io);
}

/* At close: send what is queued, free what the PMD does not take. */
void
dp_txbuf_release(struct dp_queue *q)
{
	dp_queue_flush(q);
	while (q->ntx)
		rte_pktmbuf_free(q->txq[--q->ntx]);
	while (q->nlb)
		rte_pktmbuf_free(q->lb[--q->nlb]);
	while (q->nstash)
		rte_pktmbuf_free(q->stash[--q->nstash]);
}
