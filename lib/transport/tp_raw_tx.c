/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * RAW_PACKET QPs, send side: a SEND is one whole Ethernet frame from the
 * WR's SGEs (or inline data), sent as it is; IBV_SEND_IP_CSUM fills in
 * the IPv4 header checksum and the TCP or UDP checksum. A TSO WR
 * (IBV_WR_TSO, ibv_wr_send_tso) is a header template (Ethernet, IPv4 or
 * IPv6, TCP) and a payload that leaves as MSS-sized segments, each with
 * its IP length, IPv4 ID (the template's plus the segment's index), TCP
 * sequence number (plus its payload offset), FIN and PSH only on the last
 * and CWR only on the first (as Linux's GSO does), and every checksum.
 * Where the PMD has TSO (droce_tp_io.tso_segs), a message leaves in
 * frames of up to tso_segs segments that it cuts, the payload sent by
 * reference to the WR's memory; elsewhere droce cuts every segment into
 * the frames the queue transmits.
 */

#include <errno.h>
#include <string.h>

#include "tp_internal.h"
#include "tp_raw.h"

#define TCP_HLEN	20
#define UDP_HLEN	8
#define PROTO_TCP	6
#define PROTO_UDP	17
#define TCP_FIN		0x01
#define TCP_PSH		0x08
#define TCP_CWR		0x80

/* One's-complement sum of n bytes as big-endian 16-bit words. */
static uint32_t
raw_csum_add(uint32_t s, const uint8_t *p, uint32_t n)
{
	uint64_t a = s;

	while (n >= 8) {
		a += (uint32_t)(p[0] << 8 | p[1]) + (uint32_t)(p[2] << 8 | p[3]) +
			(uint32_t)(p[4] << 8 | p[5]) + (uint32_t)(p[6] << 8 | p[7]);
		p += 8;
		n -= 8;
	}
	while (n >= 2) {
		a += (uint32_t)(p[0] << 8 | p[1]);
		p += 2;
		n -= 2;
	}
	if (n)
		a += (uint32_t)p[0] << 8;
	while (a >> 16)
		a = (a & 0xffff) + (a >> 16);
	return (uint32_t)a;
}

static uint16_t
raw_csum_fold(uint32_t s)
{
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

static void
put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static uint16_t
get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/* The pseudo-header's sum for an L4 segment of l4len bytes (RFC 768,
 * RFC 793; RFC 8200 8.1 for IPv6). */
static uint32_t
pseudo_sum(const uint8_t *f, const struct tp_raw_hdrs *h, uint32_t l4len)
{
	uint32_t s;

	if (h->l3 == 4)
		s = raw_csum_add(0, f + h->l3off + 12, 8);
	else
		s = raw_csum_add(0, f + h->l3off + 8, 32) + (l4len >> 16);
	return s + (l4len & 0xffff) + h->l4;
}

/* The L4 bytes the IP header says there are (up to len). */
static uint32_t
l4_len(const uint8_t *f, uint32_t len, const struct tp_raw_hdrs *h)
{
	uint32_t end;

	if (h->l3 == 4)
		end = h->l3off + get16(f + h->l3off + 2);
	else
		end = h->l4off + get16(f + h->l3off + 4);
	if (end > len || end < h->l4off)
		return 0;
	return end - h->l4off;
}

/* IBV_SEND_IP_CSUM, and every TSO segment: the IPv4 header sum and the
 * TCP or UDP checksum, over the lengths the headers give. */
static void
fill_csums(uint8_t *f, uint32_t len, const struct tp_raw_hdrs *h)
{
	uint32_t l4len, s;
	uint16_t c;
	uint8_t *ck;

	if (h->l3 == 4) {
		uint32_t ihl = h->l4off - h->l3off;

		f[h->l3off + 10] = f[h->l3off + 11] = 0;
		put16(f + h->l3off + 10,
			raw_csum_fold(raw_csum_add(0, f + h->l3off, ihl)));
	}
	if (h->l4 != PROTO_TCP && h->l4 != PROTO_UDP)
		return;
	l4len = l4_len(f, len, h);
	if (l4len < (h->l4 == PROTO_TCP ? TCP_HLEN : UDP_HLEN))
		return;
	ck = f + h->l4off + (h->l4 == PROTO_TCP ? 16 : 6);
	ck[0] = ck[1] = 0;
	s = raw_csum_add(pseudo_sum(f, h, l4len), f + h->l4off, l4len);
	c = raw_csum_fold(s);
	if (h->l4 == PROTO_UDP && c == 0)
		c = 0xffff;	/* UDP: 0 would mean no checksum */
	put16(ck, c);
}

int
tp_raw_csum_ok(const uint8_t *f, uint32_t len, const struct tp_raw_hdrs *h)
{
	uint32_t l4len;

	if (h->l3 == 0 || (h->l4 != PROTO_TCP && h->l4 != PROTO_UDP))
		return 0;
	if (h->l3 == 4 && raw_csum_fold(raw_csum_add(0, f + h->l3off,
			h->l4off - h->l3off)) != 0)
		return 0;
	l4len = l4_len(f, len, h);
	if (l4len < (h->l4 == PROTO_TCP ? TCP_HLEN : UDP_HLEN))
		return 0;
	if (h->l4 == PROTO_UDP && get16(f + h->l4off + 6) == 0)
		return h->l3 == 4;	/* IPv4 UDP without a checksum */
	return raw_csum_fold(raw_csum_add(pseudo_sum(f, h, l4len), f + h->l4off,
		l4len)) == 0;
}

/* The largest frame the port carries: its MTU, Ethernet and a VLAN tag. */
static uint32_t
max_frame(const struct droce_qp *qp)
{
	return qp->dev->conf.eth_mtu + DROCE_ETH_HLEN + DROCE_VLAN_HLEN;
}

/* A TSO template: Ethernet (VLAN), IPv4 or IPv6, TCP, and nothing else. */
static int
tso_hdr_ok(const uint8_t *hdr, uint32_t hdr_sz)
{
	struct tp_raw_hdrs h;

	if (tp_raw_parse(hdr, hdr_sz, &h) != 0 || h.l4 != PROTO_TCP ||
			hdr_sz < h.l4off + TCP_HLEN)
		return 0;
	return hdr_sz == h.l4off + (uint32_t)(hdr[h.l4off + 12] >> 4) * 4;
}

int
tp_raw_check_wr(struct droce_qp *qp, const struct ibv_send_wr *wr,
		uint64_t len)
{
	if (wr->send_flags & ~(IBV_SEND_SIGNALED | IBV_SEND_INLINE |
			IBV_SEND_IP_CSUM | IBV_SEND_SOLICITED))
		return EINVAL;
	if (wr->opcode != IBV_WR_TSO)
		return len >= DROCE_ETH_HLEN && len <= max_frame(qp) ? 0 :
			EINVAL;
	if (wr->tso.hdr == NULL || wr->tso.mss == 0 ||
			wr->tso.hdr_sz > DROCE_RAW_TSO_HDR_MAX ||
			(uint32_t)wr->tso.hdr_sz + wr->tso.mss > max_frame(qp) ||
			len > DROCE_RAW_MAX_TSO ||
			!tso_hdr_ok(wr->tso.hdr, wr->tso.hdr_sz))
		return EINVAL;
	return 0;
}

void
tp_raw_fill(struct droce_qp *qp, struct tp_swqe *w,
		const struct ibv_send_wr *wr)
{
	size_t i = (size_t)(w - qp->sq.wqe);
	struct tp_raw_wqe *rw = &qp->raw->w[i];

	if (wr->opcode != IBV_WR_TSO)
		return;
	/* copied at post, as a NIC takes it into the WQE */
	rw->hdr_sz = wr->tso.hdr_sz;
	rw->mss = wr->tso.mss;
	memcpy(qp->raw->hdr + i * DROCE_RAW_TSO_HDR_MAX, wr->tso.hdr,
		wr->tso.hdr_sz);
}

/*
 * Packet pacing (IBV_QP_RATE_LIMIT): may a frame leave now? After one of
 * len bytes (the wire's 24 more of preamble, gap and FCS counted), the
 * next may leave when the rate says. The clock is read once per pass, and
 * passes come tens of microseconds apart: a QP may run up to
 * TP_RAW_PACE_CREDIT_NS behind its schedule and catch up in one pass, or
 * one frame per pass would be all a high rate ever got.
 */
#define TP_RAW_PACE_CREDIT_NS	200000

static int
pace_wait(const struct droce_qp *qp)
{
	return qp->raw->rate_kbps && qp->queue->now < qp->raw->next_ns;
}

static void
pace_sent(struct droce_qp *qp, uint32_t len)
{
	struct tp_raw *r = qp->raw;
	uint64_t now = qp->queue->now, t = r->next_ns;

	if (t + TP_RAW_PACE_CREDIT_NS < now)
		t = now - TP_RAW_PACE_CREDIT_NS;

	if (r->rate_kbps)
		r->next_ns = t + (uint64_t)(len + 24) * 8 * 1000000 /
			r->rate_kbps;
}

/* len bytes of w's message at off into dst: 0 or -EPERM (a bad lkey). */
static int
copy_payload(struct droce_qp *qp, const struct tp_swqe *w, uint64_t off,
		uint8_t *dst, uint32_t len)
{
	if (len == 0)
		return 0;
	if (w->inline_data != NULL) {
		memcpy(dst, w->inline_data + off, len);
		return 0;
	}
	return tp_sge_copy_out(qp->dev, qp->pd, w->sge, w->num_sge, off, dst,
		len) < 0 ? -EPERM : 0;
}

/* One frame: 1 sent, 0 no buffer, -EPERM. */
static int
send_frame(struct droce_qp *qp, struct tp_swqe *w)
{
	uint32_t len = (uint32_t)w->length;
	struct droce_txbuf *b;
	struct tp_raw_hdrs h;
	uint8_t *buf;

	if (pace_wait(qp))
		return 0;
	buf = tp_tx_get(qp->queue, len, &b);
	if (buf == NULL)
		return 0;
	if (copy_payload(qp, w, 0, buf, len) != 0)
		return -EPERM;
	if ((w->flags & IBV_SEND_IP_CSUM) && tp_raw_parse(buf, len, &h) == 0 &&
			h.l3 != 0)
		fill_csums(buf, len, &h);
	tp_tx_done(qp, b, len);
	pace_sent(qp, len);
	tp_wqe_done(qp, w, IBV_WC_SUCCESS);
	return 1;
}

/*
 * The headers of the frame that carries plen bytes from payload offset
 * off of a TSO WR (a segment, or a frame the PMD cuts into segments):
 * the IP length, the IPv4 ID (the template's plus the segment's index),
 * the sequence number, FIN and PSH only if it ends the message, CWR only
 * if it starts it.
 */
static void
tso_headers(uint8_t *f, const uint8_t *tmpl, uint32_t hs,
		const struct tp_raw_hdrs *h, uint32_t mss, uint64_t off,
		uint32_t plen, int last)
{
	uint32_t seg = (uint32_t)get16(tmpl + h->l4off + 4) << 16 |
		get16(tmpl + h->l4off + 6);
	uint8_t *tcp = f + h->l4off;

	memcpy(f, tmpl, hs);
	if (h->l3 == 4) {
		put16(f + h->l3off + 2, (uint16_t)(hs - h->l3off + plen));
		put16(f + h->l3off + 4, (uint16_t)(get16(tmpl + h->l3off + 4) +
			off / mss));
	} else {
		put16(f + h->l3off + 4, (uint16_t)(hs - h->l4off + plen));
	}
	seg += (uint32_t)off;
	tcp[4] = (uint8_t)(seg >> 24);
	tcp[5] = (uint8_t)(seg >> 16);
	tcp[6] = (uint8_t)(seg >> 8);
	tcp[7] = (uint8_t)seg;
	if (!last)
		tcp[13] &= (uint8_t)~(TCP_FIN | TCP_PSH);
	if (off != 0)
		tcp[13] &= (uint8_t)~TCP_CWR;
}

/* One segment at qp->cur_off, cut and summed here: 1 sent, 0 no
 * buffer, -EPERM. */
static int
tso_segment(struct droce_qp *qp, const struct tp_swqe *w, uint32_t hs,
		uint32_t mss, const uint8_t *tmpl, const struct tp_raw_hdrs *h)
{
	uint64_t left = w->length - qp->cur_off;
	uint32_t plen = left < mss ? (uint32_t)left : mss;
	struct droce_txbuf *b;
	uint8_t *f;

	f = tp_tx_get(qp->queue, hs + plen, &b);
	if (f == NULL)
		return 0;
	if (copy_payload(qp, w, qp->cur_off, f + hs, plen) != 0)
		return -EPERM;
	tso_headers(f, tmpl, hs, h, mss, qp->cur_off, plen, plen == left);
	fill_csums(f, hs + plen, h);
	tp_tx_done(qp, b, hs + plen);
	pace_sent(qp, hs + plen);
	qp->cur_off += plen;
	return 1;
}

/* Whether the PMD cuts this WR's segments: where it has TSO for this IP
 * version and MSS, the payload is in registered memory (spans), no
 * pacing needs each segment's time, the segments differ only as its
 * segmentation makes them (rte_gso keeps CWR on every one), and the
 * frame leaves the port (a looped-back frame is never cut). */
static int
tso_by_pmd(const struct droce_qp *qp, const struct tp_swqe *w, uint32_t hs,
		uint32_t mss, const uint8_t *tmpl, const struct tp_raw_hdrs *h)
{
	const struct droce_tp_io *io = &qp->queue->io;

	return io->tso_segs != 0 && w->inline_data == NULL &&
		(h->l3 == 4 || io->tso_ipv6) && hs + mss <= io->tso_seg_max &&
		w->length > mss && qp->raw->rate_kbps == 0 &&
		!(tmpl[h->l4off + 13] & TCP_CWR) &&
		memcmp(tmpl, qp->dev->conf.mac, 6) != 0;
}

/*
 * One frame at qp->cur_off that the PMD cuts into up to io.tso_segs
 * segments: the headers here, the payload by reference to the WR's
 * memory. 1 queued, 0 no buffer, -EMSGSIZE the payload needs more spans
 * than a frame has or memory the device cannot reach (this part is cut
 * here), -EPERM a bad lkey.
 */
static int
tso_pmd_frame(struct droce_qp *qp, const struct tp_swqe *w, uint32_t hs,
		uint32_t mss, const uint8_t *tmpl, const struct tp_raw_hdrs *h)
{
	struct droce_tp_queue *q = qp->queue;
	uint64_t left = w->length - qp->cur_off;
	/* the IP header's length field: 16 bits */
	uint32_t ipmax = (65535 - (hs - (h->l3 == 4 ? h->l3off : h->l4off))) /
		mss * mss;
	uint32_t plen = q->io.tso_segs * mss, i;
	struct droce_txbuf *b;
	uint8_t *f;
	int n;

	if (plen > ipmax)
		plen = ipmax;
	if (plen > left)
		plen = (uint32_t)left;
	if (plen <= mss)
		return -EMSGSIZE;	/* one segment: no dearer here */
	f = tp_tx_get(q, hs, &b);
	if (f == NULL)
		return 0;
	n = tp_sge_spans(qp->dev, qp->pd, w->sge, w->num_sge, qp->cur_off,
		plen, b->span, DROCE_TX_MAX_SPANS);
	if (n == -EPERM)
		return n;
	if (n <= 0)
		return -EMSGSIZE;
	for (i = 0; q->io.zc_mem_ok != NULL && i < (uint32_t)n; i++)
		if (!q->io.zc_mem_ok(q->io.arg, b->span[i].addr,
				b->span[i].len))
			return -EMSGSIZE;
	tso_headers(f, tmpl, hs, h, mss, qp->cur_off, plen, plen == left);
	for (i = 0; i < (uint32_t)n; i++)
		droce_mr_zc_get(b->span[i].mr);
	b->nspan = (uint32_t)n;
	b->tail_len = 0;
	b->tso_mss = (uint16_t)mss;
	b->tso_l3off = (uint16_t)h->l3off;
	b->tso_l4off = (uint16_t)h->l4off;
	b->tso_hlen = (uint16_t)hs;
	tp_tx_done(qp, b, hs);
	q->st.tx_bytes += plen;
	qp->st.tx_bytes += plen;
	qp->cur_off += plen;
	return 1;
}

/* A TSO WR's frames from qp->cur_off while the budget lasts (a message
 * of headers alone is one frame): how many went, or -EPERM. */
static int
send_tso(struct droce_qp *qp, struct tp_swqe *w)
{
	size_t i = (size_t)(w - qp->sq.wqe);
	const struct tp_raw_wqe *rw = &qp->raw->w[i];
	const uint8_t *tmpl = qp->raw->hdr + i * DROCE_RAW_TSO_HDR_MAX;
	struct tp_raw_hdrs h;
	int pmd, sent = 0, rc = 0;

	tp_raw_parse(tmpl, rw->hdr_sz, &h);	/* checked at post */
	pmd = tso_by_pmd(qp, w, rw->hdr_sz, rw->mss, tmpl, &h);
	do {
		if (!tp_tx_room(qp->queue) || pace_wait(qp))
			break;
		rc = -EMSGSIZE;
		if (pmd)
			rc = tso_pmd_frame(qp, w, rw->hdr_sz, rw->mss, tmpl, &h);
		if (rc == -EMSGSIZE)
			rc = tso_segment(qp, w, rw->hdr_sz, rw->mss, tmpl, &h);
		if (rc <= 0)
			break;
		sent++;
	} while (qp->cur_off < w->length);
	if (rc < 0)
		return rc;
	if (rc > 0 && qp->cur_off == w->length)
		tp_wqe_done(qp, w, IBV_WC_SUCCESS);
	return sent;
}

/*
 * A RAW_PACKET QP's turn at the wire (tp_req_progress's): its WQEs in
 * order while the budget lasts, each completed as soon as its last frame
 * is queued (nothing acknowledges a raw frame).
 */
int
tp_raw_progress(struct droce_qp *qp)
{
	int sent = 0, rc;

	if (qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_SQD)
		return 0;
	while (qp->sq.cur != qp->sq.head && tp_tx_room(qp->queue)) {
		struct tp_swqe *w = tp_sq_wqe(qp, qp->sq.cur);

		if (qp->state == IBV_QPS_SQD && qp->cur_off == 0)
			break;
		rc = w->opcode == IBV_WR_TSO ? send_tso(qp, w) :
			send_frame(qp, w);
		if (rc < 0) {
			tp_wqe_done(qp, w, IBV_WC_LOC_PROT_ERR);
			qp->sq.cur++;
			qp->cur_off = 0;
			break;
		}
		sent += rc;
		if (w->state != TP_WQE_DONE)
			break;	/* out of buffers, budget or pacing time */
		qp->sq.cur++;
		qp->cur_off = 0;
	}
	tp_comp_retire(qp);
	return sent;
}
