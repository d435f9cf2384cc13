/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * A zero-copy frame's chain (dp_zc_chain), both ways: with mbufs to spare
 * the payload goes by reference (external mbufs over the MR, then pad and
 * ICRC in one more), and with the pool empty it is copied behind the
 * headers instead: the frame is the same bytes, the MR's references are
 * given back, and the copy is counted (tx_zc_copied). The pool cannot be
 * emptied from outside on a real link, so this test takes every mbuf
 * itself, on a net_null port in this one process. A RAW_PACKET TSO frame
 * (headers, spans, no tail) is chained without an empty tail and gets
 * DPDK's TSO request (flags, header lengths, MSS, the pseudo-header sum
 * in the TCP checksum); with the pool empty it cannot be copied (tens of
 * kilobytes) and is dropped, its references given back, and counted.
 */

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_ip.h>
#include <rte_mbuf.h>

#include "check.h"
#include "eal_dir.h"
#include "dp_internal.h"
#include "tp_internal.h"

#define HDR_LEN 58
#define TAIL_LEN 7
#define MEM_LEN 4096

static struct droce_txbuf
frame_of(struct rte_mbuf *h, struct droce_mr *mr, const uint8_t *mem)
{
	struct droce_txbuf b;
	uint32_t i;

	memset(&b, 0, sizeof(b));
	b.data = rte_pktmbuf_mtod(h, uint8_t *);
	b.cap = rte_pktmbuf_tailroom(h);
	b.cookie = h;
	for (i = 0; i < HDR_LEN; i++)
		b.data[i] = (uint8_t)(0xa0 + i);
	b.len = HDR_LEN;
	/* two spans, as a message over two SGEs; each holds a reference */
	b.nspan = 2;
	b.span[0].addr = mem + 100;
	b.span[0].len = 300;
	b.span[0].mr = mr;
	b.span[1].addr = mem + 1000;
	b.span[1].len = 37;
	b.span[1].mr = mr;
	droce_mr_zc_get(mr);
	droce_mr_zc_get(mr);
	b.tail_len = TAIL_LEN;
	for (i = 0; i < TAIL_LEN; i++)
		b.tail[i] = (uint8_t)(0x50 + i);
	return b;
}

/* The frame's bytes, whichever way it is laid out, against the parts. */
static void
check_frame(struct rte_mbuf *h, const uint8_t *mem, const char *what)
{
	uint8_t want[HDR_LEN + 337 + TAIL_LEN], got[sizeof(want)];
	const uint8_t *p;
	uint32_t i;

	for (i = 0; i < HDR_LEN; i++)
		want[i] = (uint8_t)(0xa0 + i);
	memcpy(want + HDR_LEN, mem + 100, 300);
	memcpy(want + HDR_LEN + 300, mem + 1000, 37);
	for (i = 0; i < TAIL_LEN; i++)
		want[HDR_LEN + 337 + i] = (uint8_t)(0x50 + i);
	CHECK_EQ(rte_pktmbuf_pkt_len(h), sizeof(want), what);
	if (rte_pktmbuf_pkt_len(h) != sizeof(want))
		return;
	p = rte_pktmbuf_read(h, 0, sizeof(want), got);
	CHECK(p != NULL && memcmp(p, want, sizeof(want)) == 0,
		"%s: the frame's bytes", what);
}

/* frame_of's spans behind Ethernet, IPv4 and TCP headers, for the PMD
 * to cut into segments of 100 bytes. */
static struct droce_txbuf
tso_frame_of(struct rte_mbuf *h, struct droce_mr *mr, const uint8_t *mem)
{
	struct droce_txbuf b = frame_of(h, mr, mem);

	memset(b.data, 0, 54);
	b.data[12] = 0x08;
	b.data[14] = 0x45;
	b.data[16] = (uint8_t)((40 + 337) >> 8);
	b.data[17] = (uint8_t)(40 + 337);
	b.data[22] = 64;
	b.data[23] = 6;
	memcpy(b.data + 26, "\x0a\x00\x00\x01\x0a\x00\x00\x02", 8);
	b.data[24] = b.data[25] = 0x77;		/* a stale sum */
	b.data[34 + 12] = 5 << 4;
	b.len = 54;
	b.tail_len = 0;
	b.tso_mss = 100;
	b.tso_l3off = 14;
	b.tso_l4off = 34;
	b.tso_hlen = 54;
	return b;
}

int
main(void)
{
	struct droce_port_conf conf;
	struct droce_port *p;
	struct droce_pd *pd;
	struct droce_mr *mr;
	struct droce_txbuf b;
	struct rte_mbuf *h, *ht, **hoard;
	struct dp_queue *q;
	char eal[256];
	uint8_t *mem;
	uint32_t i, n = 0, cap;

	snprintf(eal, sizeof(eal), "--no-huge -m 512 --no-pci "
		"--file-prefix %s --log-level=lib.eal:4", eal_dir_prefix("dpzc"));
	droce_port_conf_init(&conf);
	conf.eal_args = eal;
	conf.devargs = "net_null0";
	conf.mode = DROCE_PROGRESS_INLINE;
	conf.ipv4 = 0x0ac60001;
	conf.tx_zc_min = 1;
	p = droce_port_open(&conf);
	if (p == NULL) {
		fprintf(stderr, "test_dp_zc: no net_null port\n");
		return 1;
	}
	q = &p->q[0];
	pd = droce_pd_alloc(droce_port_dev(p));
	mem = calloc(1, MEM_LEN);
	for (i = 0; i < MEM_LEN; i++)
		mem[i] = (uint8_t)(i * 7 + 3);
	mr = droce_mr_reg(pd, mem, MEM_LEN, (uintptr_t)mem, 0);
	CHECK(pd != NULL && mr != NULL, "PD and MR");

	/* mbufs to spare: headers, one external mbuf a span, the tail */
	h = rte_pktmbuf_alloc(p->pool);
	b = frame_of(h, mr, mem);
	dp_zc_chain(q, h, &b);
	CHECK_EQ(h->nb_segs, 4, "by reference: headers, 2 spans, tail");
	CHECK(RTE_MBUF_HAS_EXTBUF(h->next) &&
		rte_pktmbuf_mtod(h->next, uint8_t *) == mem + 100,
		"the first span is the MR itself");
	check_frame(h, mem, "by reference");
	CHECK_EQ(mr->zc_refs, 3, "each span holds a reference");
	CHECK_EQ(q->zc_copied, 0, "nothing copied");
	rte_pktmbuf_free(h);
	CHECK_EQ(mr->zc_refs, 1, "freeing the frame gives them back");

	/* TSO: no tail, and the PMD's request */
	h = rte_pktmbuf_alloc(p->pool);
	b = tso_frame_of(h, mr, mem);
	CHECK_EQ(dp_zc_chain(q, h, &b), 0, "TSO frame chained");
	CHECK_EQ(h->nb_segs, 3, "TSO: headers and 2 spans, no empty tail");
	CHECK_EQ(rte_pktmbuf_pkt_len(h), 54 + 337, "TSO frame length");
	dp_tso_offload(q, h, &b);
	{
		const uint8_t *f = rte_pktmbuf_mtod(h, const uint8_t *);
		uint64_t want = RTE_MBUF_F_TX_TCP_SEG | RTE_MBUF_F_TX_TCP_CKSUM |
			RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_IP_CKSUM;
		uint16_t ph = rte_ipv4_phdr_cksum((const struct rte_ipv4_hdr *)
			(f + 14), want);

		CHECK((h->ol_flags & want) == want, "TSO offload flags");
		CHECK(h->l2_len == 14 && h->l3_len == 20 && h->l4_len == 20 &&
			h->tso_segsz == 100, "header lengths and MSS");
		CHECK(f[24] == 0 && f[25] == 0, "IPv4 header sum zeroed");
		CHECK(memcmp(f + 34 + 16, &ph, 2) == 0,
			"the TCP sum holds the pseudo-header's, no length");
	}
	CHECK_EQ(q->tso_offloaded, 1, "counted as offloaded");
	rte_pktmbuf_free(h);
	CHECK_EQ(mr->zc_refs, 1, "TSO frame freed: references back");

	/* the pool empty (this lcore's cache too) and the queue's stash */
	cap = rte_mempool_avail_count(p->pool) + q->nstash + 64;
	hoard = calloc(cap, sizeof(*hoard));
	h = rte_pktmbuf_alloc(p->pool);
	ht = rte_pktmbuf_alloc(p->pool);
	while (n < cap && (hoard[n] = rte_pktmbuf_alloc(p->pool)) != NULL)
		n++;
	while (q->nstash && n < cap)
		hoard[n++] = q->stash[--q->nstash];
	CHECK(rte_pktmbuf_alloc(p->pool) == NULL, "the pool is empty");
	b = frame_of(h, mr, mem);
	dp_zc_chain(q, h, &b);
	CHECK_EQ(h->nb_segs, 1, "no mbufs: one segment");
	CHECK_EQ(h->data_len, HDR_LEN + 337 + TAIL_LEN,
		"the payload copied behind the headers");
	check_frame(h, mem, "copied");
	CHECK_EQ(mr->zc_refs, 1, "the copy gave the references back");
	CHECK_EQ(q->zc_copied, 1, "counted as copied");
	{
		struct droce_port_queue_stats st;

		CHECK_EQ(droce_port_queue_stats(p, 0, &st), 0, "queue stats");
		CHECK_EQ(st.tx_zc_copied, 1, "tx_zc_copied through the C API");
	}
	b = tso_frame_of(ht, mr, mem);
	CHECK_EQ(dp_zc_chain(q, ht, &b), -1, "no mbufs: a TSO frame dropped");
	CHECK_EQ(mr->zc_refs, 1, "its references given back");
	CHECK(rte_pktmbuf_alloc(p->pool) != NULL, "and its mbuf");
	{
		struct droce_port_queue_stats st;

		CHECK_EQ(droce_port_queue_stats(p, 0, &st), 0, "queue stats");
		CHECK_EQ(st.tx_tso_drops, 1, "tx_tso_drops");
		CHECK_EQ(st.tx_tso_offloaded, 1, "tx_tso_offloaded");
	}
	rte_pktmbuf_free(h);
	for (i = 0; i < n; i++)
		rte_pktmbuf_free(hoard[i]);
	free(hoard);

	CHECK_EQ(droce_mr_dereg(mr), 0, "dereg");
	CHECK_EQ(droce_pd_dealloc(pd), 0, "PD freed");
	droce_port_close(p);
	free(mem);
	return check_report("test_dp_zc");
}
