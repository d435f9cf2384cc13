/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

#ifndef WIRE_PARSE_H
#define WIRE_PARSE_H

/*
 * The strict parser (droce_wire_parse) as an inline function, for the
 * transport's receive path: compiled into its caller, the caller's
 * constant options fold away and no call is made per frame. Every check
 * names its own defect, and the order is chosen so that a frame with one
 * defect reports that defect: structural checks first, the ICRC (which
 * covers almost everything) last. No read goes past frame + len.
 */

#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "droce_wire.h"
#include "wire_bytes.h"

static inline void
parse_ext(const uint8_t *bth, const struct droce_opcode_info *oi,
		struct droce_pkt *pkt)
{
	const uint8_t *h;

	/* most packets carry nothing or one of these, right after the
	 * BTH: no walk */
	h = bth + DROCE_BTH_LEN;
	if (oi->hdrs == 0)
		return;
	if (oi->hdrs == DROCE_HDR_RETH) {
		pkt->reth_va = get_be64(h);
		pkt->reth_rkey = get_be32(h + 8);
		pkt->reth_len = get_be32(h + 12);
		return;
	}
	if (oi->hdrs == DROCE_HDR_AETH) {
		pkt->aeth_syndrome = h[0];
		pkt->aeth_msn = get_be24_after(h + 1);
		return;
	}
	if (oi->hdrs == DROCE_HDR_ATMETH) {
		pkt->atm_va = get_be64(h);
		pkt->atm_rkey = get_be32(h + 8);
		pkt->atm_swap_add = get_be64(h + 12);
		pkt->atm_compare = get_be64(h + 20);
		return;
	}
	if (oi->hdrs == (DROCE_HDR_AETH | DROCE_HDR_ATMACK)) {
		pkt->aeth_syndrome = h[0];
		pkt->aeth_msn = get_be24_after(h + 1);
		pkt->atmack_orig = get_be64(h + DROCE_AETH_LEN);
		return;
	}
	if (oi->hdrs & DROCE_HDR_DETH) {
		h = bth + oi->off_deth;
		pkt->deth_qkey = get_be32(h);
		pkt->deth_sqpn = get_be24_after(h + 5);
		if (oi->hdrs == DROCE_HDR_DETH)	/* UD's SEND */
			return;
	}
	if (oi->hdrs & DROCE_HDR_XRCETH)
		pkt->xrceth_srqn = get_be24_after(bth + oi->off_xrceth + 1);
	if (oi->hdrs & DROCE_HDR_RETH) {
		h = bth + oi->off_reth;
		pkt->reth_va = get_be64(h);
		pkt->reth_rkey = get_be32(h + 8);
		pkt->reth_len = get_be32(h + 12);
	}
	if (oi->hdrs & DROCE_HDR_ATMETH) {
		h = bth + oi->off_atmeth;
		pkt->atm_va = get_be64(h);
		pkt->atm_rkey = get_be32(h + 8);
		pkt->atm_swap_add = get_be64(h + 12);
		pkt->atm_compare = get_be64(h + 20);
	}
	if (oi->hdrs & DROCE_HDR_AETH) {
		h = bth + oi->off_aeth;
		pkt->aeth_syndrome = h[0];
		pkt->aeth_msn = get_be24_after(h + 1);
	}
	if (oi->hdrs & DROCE_HDR_ATMACK)
		pkt->atmack_orig = get_be64(bth + oi->off_atmack);
	if (oi->hdrs & DROCE_HDR_IMMDT)
		memcpy(&pkt->imm_data, bth + oi->off_immdt, 4);
	if (oi->hdrs & DROCE_HDR_IETH)
		pkt->ieth_rkey = get_be32(bth + oi->off_ieth);
	if (oi->hdrs & DROCE_HDR_FETH) {
		uint32_t feth = get_be32(bth + oi->off_feth);

		/* reserved bits are ignored on receipt, as rxe does */
		pkt->feth_plt = (uint8_t)(feth & DROCE_FETH_PLT_MASK);
		pkt->feth_sel = (uint8_t)((feth & DROCE_FETH_SEL_MASK) >>
			DROCE_FETH_SEL_SHIFT);
	}
}

/* ::ffff:a.b.c.d from the address as it lies in the frame: two stores,
 * not a call, twice a frame. */
static inline void
gid_v4_fill(uint8_t gid[16], const uint8_t *ip4)
{
	static const uint8_t prefix[12] = {
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff
	};

	memcpy(gid, prefix, 12);
	memcpy(gid + 12, ip4, 4);
}

/* IP header: sets *ip_end (offset of the UDP header) and *l3_total. */
static inline __attribute__((always_inline)) int
parse_ipv4(const uint8_t *f, uint32_t len, uint32_t l3, struct droce_pkt *pkt,
		uint32_t *l3_total, bool all)
{
	const uint8_t *ip = f + l3;
	uint16_t frag;

	if (len < l3 + DROCE_IPV4_HLEN)
		return DROCE_WIRE_ETRUNC;
	if ((ip[0] >> 4) != 4)
		return DROCE_WIRE_EIPVER;
	if ((ip[0] & 0xf) != 5 || ip[9] != IPPROTO_UDP_)
		return DROCE_WIRE_EIPPROTO;
	frag = get_be16(ip + 6);
	if (frag & 0x3fff)	/* MF or a fragment offset */
		return DROCE_WIRE_EIPPROTO;
	*l3_total = get_be16(ip + 2);
	if (*l3_total < DROCE_IPV4_HLEN + DROCE_UDP_HLEN)
		return DROCE_WIRE_EIPLEN;
	pkt->ip_ver = 4;
	pkt->tclass = ip[1];
	if (all) {
		pkt->ip_id = get_be16(ip + 4);
		pkt->ip_df = !!(frag & 0x4000);
		pkt->ttl = ip[8];
		pkt->flow_label = 0;
	}
	gid_v4_fill(pkt->sgid, ip + 12);
	gid_v4_fill(pkt->dgid, ip + 16);
	return 0;
}

static inline __attribute__((always_inline)) int
parse_ipv6(const uint8_t *f, uint32_t len, uint32_t l3, struct droce_pkt *pkt,
		uint32_t *l3_total, bool all)
{
	const uint8_t *ip = f + l3;
	uint32_t w0;

	if (len < l3 + DROCE_IPV6_HLEN)
		return DROCE_WIRE_ETRUNC;
	w0 = get_be32(ip);
	if ((w0 >> 28) != 6)
		return DROCE_WIRE_EIPVER;
	if (ip[6] != IPPROTO_UDP_)
		return DROCE_WIRE_EIPPROTO;
	*l3_total = DROCE_IPV6_HLEN + get_be16(ip + 4);
	if (*l3_total < DROCE_IPV6_HLEN + DROCE_UDP_HLEN)
		return DROCE_WIRE_EIPLEN;
	pkt->ip_ver = 6;
	pkt->tclass = (uint8_t)(w0 >> 20);
	if (all) {
		pkt->flow_label = w0 & 0xfffff;
		pkt->ttl = ip[7];
		pkt->ip_id = 0;
		pkt->ip_df = 0;
	}
	memcpy(pkt->sgid, ip + 8, 16);
	memcpy(pkt->dgid, ip + 24, 16);
	return 0;
}

/*
 * Ethernet (a VLAN tag), IPv4 or IPv6 and UDP to RoCEv2's port: where the
 * UDP header is and its length, where the IP datagram ends in the frame.
 */
static inline __attribute__((always_inline)) int
wire_parse_to_udp(const uint8_t *f, uint32_t len, struct droce_pkt *pkt,
		bool all, uint32_t *l3_out, const uint8_t **udp_out,
		uint32_t *udp_len_out, uint32_t *end_out)
{
	uint32_t l3, l3_hlen, l3_total, udp_len, end;
	const uint8_t *udp;
	uint16_t etype, dport;
	int rc;

	if (len < DROCE_ETH_HLEN)
		return DROCE_WIRE_ETRUNC;
	if (all) {
		memcpy(pkt->dst_mac, f, 6);
		memcpy(pkt->src_mac, f + 6, 6);
		pkt->has_vlan = 0;
		pkt->vlan_tci = 0;
	}
	etype = get_be16(f + 12);
	l3 = DROCE_ETH_HLEN;
	if (etype == ETHERTYPE_VLAN) {
		if (len < DROCE_ETH_HLEN + DROCE_VLAN_HLEN)
			return DROCE_WIRE_ETRUNC;
		if (all) {
			pkt->has_vlan = 1;
			pkt->vlan_tci = get_be16(f + 14);
		}
		etype = get_be16(f + 16);
		l3 += DROCE_VLAN_HLEN;
	}
	if (etype == ETHERTYPE_IPV4) {
		rc = parse_ipv4(f, len, l3, pkt, &l3_total, all);
		l3_hlen = DROCE_IPV4_HLEN;
	} else if (etype == ETHERTYPE_IPV6) {
		rc = parse_ipv6(f, len, l3, pkt, &l3_total, all);
		l3_hlen = DROCE_IPV6_HLEN;
	} else {
		return DROCE_WIRE_EETHERTYPE;
	}
	if (rc)
		return rc;
	/*
	 * The IP total length says where the datagram ends: bytes after it
	 * are link-layer padding or a trailer, not ours to judge.
	 */
	if (l3 + l3_total > len)
		return DROCE_WIRE_ETRUNC;
	end = l3 + l3_total;	/* end of IP datagram within the frame */
	if (etype == ETHERTYPE_IPV4 &&
			ipv4_hdr_csum(f + l3) != 0)
		return DROCE_WIRE_EIPCSUM;

	udp = f + l3 + l3_hlen;
	dport = get_be16(udp + 2);
	if (all) {
		pkt->udp_sport = get_be16(udp);
		pkt->udp_dport = dport;
		pkt->udp_csum = get_be16(udp + 6);
	}
	if (dport != DROCE_ROCE_UDP_PORT)
		return DROCE_WIRE_EUDPPORT;
	udp_len = get_be16(udp + 4);
	if (udp_len != l3_total - l3_hlen)
		return DROCE_WIRE_EIPLEN;
	pkt->l3_off = (uint16_t)l3;
	*l3_out = l3;
	*udp_out = udp;
	*udp_len_out = udp_len;
	*end_out = end;
	return 0;
}

/*
 * The parse; all = false fills only what the transport reads
 * (droce_wire_parse_rx says which), with every check made as with all = true.
 */
static inline __attribute__((always_inline)) int
wire_parse_frame(const uint8_t *f, uint32_t len,
		const struct droce_parse_opts *opts, struct droce_pkt *pkt,
		bool all)
{
	const struct droce_opcode_info *oi;
	uint32_t l3, udp_len, mtu, body, pad, end, icrc;
	const uint8_t *udp, *bth;
	uint8_t tver;
	int rc;

	rc = wire_parse_to_udp(f, len, pkt, all, &l3, &udp, &udp_len, &end);
	if (rc)
		return rc;

	/* BTH */
	if (udp_len < DROCE_UDP_HLEN + DROCE_BTH_LEN)
		return DROCE_WIRE_ETRUNC;
	bth = udp + DROCE_UDP_HLEN;
	pkt->opcode = bth[0];
	pkt->se = bth[1] >> 7;
	pkt->padcnt = (bth[1] >> 4) & 3;
	tver = bth[1] & 0xf;
	pkt->pkey = get_be16(bth + 2);
	pkt->dqpn = get_be24_after(bth + 5);
	pkt->ackreq = bth[8] >> 7;
	pkt->psn = get_be24_after(bth + 9);
	if (all) {
		pkt->bth_off = (uint16_t)(bth - f);
		pkt->migreq = (bth[1] >> 6) & 1;
		pkt->tver = tver;
		pkt->fecn = bth[4] >> 7;
		pkt->becn = (bth[4] >> 6) & 1;
		pkt->bth_resv6 = bth[4] & 0x3f;
		pkt->bth_resv7 = bth[8] & 0x7f;
	}
	if (tver != 0)
		return DROCE_WIRE_ETVER;
	oi = &droce_opcode_info[pkt->opcode];
	if (!oi->valid)
		return DROCE_WIRE_EOPCODE;
	if (opts->transports &&
			!(opts->transports & (1u << (pkt->opcode >> 5))))
		return DROCE_WIRE_ETRANSPORT;
	if (udp_len < DROCE_UDP_HLEN + (uint32_t)oi->hdr_len + DROCE_ICRC_LEN)
		return DROCE_WIRE_EEXTHDR;
	parse_ext(bth, oi, pkt);

	body = udp_len - DROCE_UDP_HLEN - oi->hdr_len - DROCE_ICRC_LEN;
	pad = pkt->padcnt;
	/* Payload plus pad fill whole words: else no payload can be told. */
	if ((body & 3) != 0 || pad > body)
		return DROCE_WIRE_EPADCNT;
	pkt->payload = bth + oi->hdr_len;
	pkt->payload_len = body - pad;

	icrc = get_le32(f + end - 4);
	if (all)
		pkt->icrc = icrc;
	pkt->icrc_rxe_flush = 0;
	if (!opts->skip_icrc && ((f[l3] >> 4) == 4 ?
			droce_icrc_v4(f + l3, end - 4 - l3) :
			droce_icrc(f + l3, end - 4 - l3)) != icrc) {
		/* Linux rxe's FLUSH: accepted, marked */
		if (pkt->opcode != DROCE_OP_RC_FLUSH ||
				droce_icrc_rxe_flush(f + l3, end - 4 - l3) !=
				icrc)
			return DROCE_WIRE_EICRC;
		pkt->icrc_rxe_flush = 1;
	}
	if (opts->verify_udp_csum && get_be16(udp + 6) != 0 &&
			csum_fold(csum_add(udp_pseudo_sum(f + l3, udp_len), udp,
				udp_len)) != 0)
		return DROCE_WIRE_EUDPCSUM;
	/*
	 * Length defects of a packet that is otherwise whole and authentic
	 * (the ICRC checked): a responder answers them with an Invalid
	 * Request NAK (IBTA C9-92), so they come last, with pkt filled.
	 * Only a packet that ends a message may pad (IBTA 9.2.5); one whose
	 * opcode carries no payload has none.
	 */
	if ((!(oi->flags & DROCE_OPF_PAYLOAD) && body != 0) ||
			(pad && !(oi->flags & DROCE_OPF_END)))
		return DROCE_WIRE_ELENGTH;
	/* With PadCnt 3 a 1-byte payload fills the word: 4 - 3 = 1 >= 1. */
	mtu = opts->path_mtu ? opts->path_mtu : 4096;
	if (pkt->payload_len > (uint32_t)mtu)
		return DROCE_WIRE_EMTU;
	return 0;
}

static inline __attribute__((always_inline)) int
droce_wire_parse_inline(const uint8_t *f, uint32_t len,
		const struct droce_parse_opts *opts, struct droce_pkt *pkt)
{
	return wire_parse_frame(f, len, opts, pkt, true);
}

/*
 * The transport's receive: the same checks and verdicts, but only these
 * fields of pkt are filled: ip_ver, tclass, sgid, dgid, l3_off, opcode,
 * se, padcnt, pkey, dqpn, ackreq, psn, the opcode's extension headers,
 * payload, payload_len, icrc_rxe_flush. The rest (MACs, VLAN, TTL, IP id,
 * flow label, UDP ports and checksum, the BTH's other bits, the ICRC, the
 * BTH offset) are left as they were: nothing past the parse reads them.
 */
static inline __attribute__((always_inline)) int
droce_wire_parse_rx(const uint8_t *f, uint32_t len,
		const struct droce_parse_opts *opts, struct droce_pkt *pkt)
{
	return wire_parse_frame(f, len, opts, pkt, false);
}

/* The QPN a frame names where an IPv4 frame without VLAN has it: which
 * QP's receive template to try (len >= DROCE_RX_FAST_MIN_LEN). */
static inline uint32_t
droce_wire_rx_fast_qpn(const uint8_t *f)
{
	return get_be24_after(f + DROCE_ETH_HLEN + DROCE_IPV4_HLEN +
		DROCE_UDP_HLEN + 5);
}

/* The frame's first bytes are what t fixes: three 16-byte compares. */
static inline __attribute__((always_inline)) int
rx_tmpl_match(const uint8_t *f, const struct droce_rx_tmpl *t)
{
#if defined(__SSE2__)
	const __m128i *w = (const __m128i *)t->want;
	const __m128i *m = (const __m128i *)t->mask;
	__m128i d;

	d = _mm_and_si128(_mm_xor_si128(_mm_loadu_si128(
		(const __m128i *)f), w[0]), m[0]);
	d = _mm_or_si128(d, _mm_and_si128(_mm_xor_si128(_mm_loadu_si128(
		(const __m128i *)(f + 16)), w[1]), m[1]));
	d = _mm_or_si128(d, _mm_and_si128(_mm_xor_si128(_mm_loadu_si128(
		(const __m128i *)(f + 32)), w[2]), m[2]));
	return _mm_movemask_epi8(_mm_cmpeq_epi8(d,
		_mm_setzero_si128())) == 0xffff;
#else
	uint64_t d = 0, a, b, c;
	unsigned int i;

	for (i = 0; i < DROCE_RX_TMPL_LEN; i += 8) {
		memcpy(&a, f + i, 8);
		memcpy(&b, t->want + i, 8);
		memcpy(&c, t->mask + i, 8);
		d |= (a ^ b) & c;
	}
	return d == 0;
#endif
}

/*
 * The receive of a frame from a connected QP's peer, by the QP's template
 * t: for a frame that matches it, the checks of droce_wire_parse_rx (with
 * the transport's options: RC and UC allowed, the ICRC checked, path MTU
 * 4096, no UDP checksum) and its fields, but for sgid and dgid, which the
 * template pinned. What t fixes is checked in three wide compares instead
 * of field by field. 0 when the frame passes; 1 for anything else (another
 * layout or connection, or a defect of any kind): the full parse then
 * judges it and names the defect. len >= DROCE_RX_FAST_MIN_LEN.
 */
static inline __attribute__((always_inline)) int
droce_wire_parse_rx_fast(const uint8_t *f, uint32_t len,
		const struct droce_rx_tmpl *t, struct droce_pkt *pkt)
{
	const uint8_t *bth = f + DROCE_ETH_HLEN + DROCE_IPV4_HLEN +
		DROCE_UDP_HLEN;
	const struct droce_opcode_info *oi;
	uint32_t l3_total, udp_len, end, body, pad;

	if (!rx_tmpl_match(f, t))
		return 1;
	l3_total = get_be16(f + DROCE_ETH_HLEN + 2);
	udp_len = get_be16(bth - DROCE_UDP_HLEN + 4);
	end = DROCE_ETH_HLEN + l3_total;
	/* the UDP length agrees with the IP one (so that covers the UDP
	 * header and a BTH), and the datagram lies in the frame */
	if (udp_len != l3_total - DROCE_IPV4_HLEN ||
			udp_len < DROCE_UDP_HLEN + DROCE_BTH_LEN || end > len ||
			ipv4_hdr_csum(f + DROCE_ETH_HLEN) != 0)
		return 1;
	oi = &droce_opcode_info[bth[0]];
	if (!oi->valid ||
			udp_len < DROCE_UDP_HLEN + (uint32_t)oi->hdr_len +
			DROCE_ICRC_LEN)
		return 1;
	body = udp_len - DROCE_UDP_HLEN - oi->hdr_len - DROCE_ICRC_LEN;
	pad = (bth[1] >> 4) & 3;
	/* whole words; and the length rules (C9-92), whose defects the
	 * full parse reports with the packet filled */
	if ((body & 3) != 0 || pad > body || body - pad > 4096 ||
			(!(oi->flags & DROCE_OPF_PAYLOAD) && body != 0) ||
			(pad && !(oi->flags & DROCE_OPF_END)))
		return 1;
	if (droce_icrc_v4(f + DROCE_ETH_HLEN, end - 4 - DROCE_ETH_HLEN) !=
			get_le32(f + end - 4))
		return 1;
	pkt->ip_ver = 4;
	pkt->tclass = f[DROCE_ETH_HLEN + 1];
	pkt->l3_off = DROCE_ETH_HLEN;
	pkt->opcode = bth[0];
	pkt->se = bth[1] >> 7;
	pkt->padcnt = (uint8_t)pad;
	pkt->pkey = 0xffff;
	pkt->dqpn = get_be24_after(bth + 5);
	pkt->ackreq = bth[8] >> 7;
	pkt->psn = get_be24_after(bth + 9);
	parse_ext(bth, oi, pkt);
	pkt->payload = bth + oi->hdr_len;
	pkt->payload_len = body - pad;
	pkt->icrc_rxe_flush = 0;
	return 0;
}

#endif /* WIRE_PARSE_H */
