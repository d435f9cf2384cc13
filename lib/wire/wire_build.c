/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/* Builder: struct droce_pkt -> frame, driven by droce_opcode_info[]. */

#include <errno.h>
#include <string.h>

#include "droce_wire.h"
#include "wire_bytes.h"

static uint32_t
l2_len(const struct droce_pkt *pkt)
{
	return DROCE_ETH_HLEN + (pkt->has_vlan ? DROCE_VLAN_HLEN : 0);
}

static uint32_t
l3_len(const struct droce_pkt *pkt)
{
	return pkt->ip_ver == 6 ? DROCE_IPV6_HLEN : DROCE_IPV4_HLEN;
}

static uint32_t
pad_of(uint32_t payload_len)
{
	return (0u - payload_len) & 3;
}

uint32_t
droce_wire_hdr_len(const struct droce_pkt *pkt)
{
	return l2_len(pkt) + l3_len(pkt) + DROCE_UDP_HLEN +
		droce_opcode_info[pkt->opcode].hdr_len;
}

uint32_t
droce_wire_frame_len(const struct droce_pkt *pkt)
{
	return droce_wire_hdr_len(pkt) + pkt->payload_len +
		pad_of(pkt->payload_len) + DROCE_ICRC_LEN;
}

static void
build_ext(const struct droce_pkt *pkt, const struct droce_opcode_info *oi,
		uint8_t *bth)
{
	uint8_t *h;

	/* most packets carry nothing or one of these, right after the
	 * BTH: no walk */
	h = bth + DROCE_BTH_LEN;
	if (oi->hdrs == 0)
		return;
	if (oi->hdrs == DROCE_HDR_RETH) {
		put_be64(h, pkt->reth_va);
		put_be32(h + 8, pkt->reth_rkey);
		put_be32(h + 12, pkt->reth_len);
		return;
	}
	if (oi->hdrs == DROCE_HDR_AETH) {
		h[0] = pkt->aeth_syndrome;
		put_be24(h + 1, pkt->aeth_msn);
		return;
	}
	if (oi->hdrs == DROCE_HDR_ATMETH) {
		put_be64(h, pkt->atm_va);
		put_be32(h + 8, pkt->atm_rkey);
		put_be64(h + 12, pkt->atm_swap_add);
		put_be64(h + 20, pkt->atm_compare);
		return;
	}
	if (oi->hdrs == (DROCE_HDR_AETH | DROCE_HDR_ATMACK)) {
		h[0] = pkt->aeth_syndrome;
		put_be24(h + 1, pkt->aeth_msn);
		put_be64(h + DROCE_AETH_LEN, pkt->atmack_orig);
		return;
	}
	if (oi->hdrs & DROCE_HDR_DETH) {
		h = bth + oi->off_deth;
		put_be32(h, pkt->deth_qkey);
		h[4] = 0;
		put_be24(h + 5, pkt->deth_sqpn);
	}
	if (oi->hdrs & DROCE_HDR_XRCETH) {
		h = bth + oi->off_xrceth;
		h[0] = 0;
		put_be24(h + 1, pkt->xrceth_srqn);
	}
	if (oi->hdrs & DROCE_HDR_RETH) {
		h = bth + oi->off_reth;
		put_be64(h, pkt->reth_va);
		put_be32(h + 8, pkt->reth_rkey);
		put_be32(h + 12, pkt->reth_len);
	}
	if (oi->hdrs & DROCE_HDR_ATMETH) {
		h = bth + oi->off_atmeth;
		put_be64(h, pkt->atm_va);
		put_be32(h + 8, pkt->atm_rkey);
		put_be64(h + 12, pkt->atm_swap_add);
		put_be64(h + 20, pkt->atm_compare);
	}
	if (oi->hdrs & DROCE_HDR_AETH) {
		h = bth + oi->off_aeth;
		h[0] = pkt->aeth_syndrome;
		put_be24(h + 1, pkt->aeth_msn);
	}
	if (oi->hdrs & DROCE_HDR_ATMACK)
		put_be64(bth + oi->off_atmack, pkt->atmack_orig);
	if (oi->hdrs & DROCE_HDR_IMMDT)
		memcpy(bth + oi->off_immdt, &pkt->imm_data, 4);
	if (oi->hdrs & DROCE_HDR_IETH)
		put_be32(bth + oi->off_ieth, pkt->ieth_rkey);
	if (oi->hdrs & DROCE_HDR_FETH)
		put_be32(bth + oi->off_feth, (uint32_t)(pkt->feth_plt &
			DROCE_FETH_PLT_MASK) | ((uint32_t)pkt->feth_sel <<
			DROCE_FETH_SEL_SHIFT & DROCE_FETH_SEL_MASK));
	if (oi->hdrs & DROCE_HDR_CNP)
		memset(bth + DROCE_BTH_LEN, 0, 16);
}

/* BTH and extension headers; b1, b4 and b8 carry the bits of bytes 1, 4
 * and 8 other than SE and AckReq (MigReq, PadCnt, TVer, FECN, BECN,
 * reserved). */
static void
put_bth(const struct droce_pkt *pkt, const struct droce_opcode_info *oi,
		uint8_t *bth, uint16_t pkey, uint8_t b1, uint8_t b4, uint8_t b8)
{
	bth[0] = pkt->opcode;
	bth[1] = (uint8_t)((pkt->se ? 0x80 : 0) | b1);
	put_be16(bth + 2, pkey);
	bth[4] = b4;
	put_be24(bth + 5, pkt->dqpn);
	bth[8] = (uint8_t)((pkt->ackreq ? 0x80 : 0) | b8);
	put_be24(bth + 9, pkt->psn);
	build_ext(pkt, oi, bth);
}

int
droce_wire_build_hdr(const struct droce_pkt *pkt, uint8_t *buf, uint32_t cap)
{
	const struct droce_opcode_info *oi = &droce_opcode_info[pkt->opcode];
	uint32_t hlen, l2, l3, udp_len, pad;
	uint8_t *ip, *udp, *bth;

	if (!oi->valid || (pkt->ip_ver != 4 && pkt->ip_ver != 6))
		return -EINVAL;
	hlen = droce_wire_hdr_len(pkt);
	if (hlen > cap)
		return -ENOSPC;
	pad = pad_of(pkt->payload_len);
	l2 = l2_len(pkt);
	l3 = l3_len(pkt);
	udp_len = DROCE_UDP_HLEN + oi->hdr_len + pkt->payload_len + pad +
		DROCE_ICRC_LEN;

	memcpy(buf, pkt->dst_mac, 6);
	memcpy(buf + 6, pkt->src_mac, 6);
	if (pkt->has_vlan) {
		put_be16(buf + 12, ETHERTYPE_VLAN);
		put_be16(buf + 14, pkt->vlan_tci);
	}
	put_be16(buf + l2 - 2, pkt->ip_ver == 6 ? ETHERTYPE_IPV6 : ETHERTYPE_IPV4);

	ip = buf + l2;
	if (pkt->ip_ver == 4) {
		ip[0] = 0x45;
		ip[1] = pkt->tclass;
		put_be16(ip + 2, (uint16_t)(l3 + udp_len));
		put_be16(ip + 4, pkt->ip_id);
		put_be16(ip + 6, pkt->ip_df ? 0x4000 : 0);
		ip[8] = pkt->ttl;
		ip[9] = IPPROTO_UDP_;
		ip[10] = ip[11] = 0;
		memcpy(ip + 12, pkt->sgid + 12, 4);
		memcpy(ip + 16, pkt->dgid + 12, 4);
		/* from the field values: reading back the bytes just stored
		 * one or two at a time stalls on store forwarding */
		put_be16(ip + 10, csum_fold((0x45u << 8 | pkt->tclass) +
			l3 + udp_len + pkt->ip_id + (pkt->ip_df ? 0x4000u : 0) +
			((uint32_t)pkt->ttl << 8 | IPPROTO_UDP_) +
			get_be16(pkt->sgid + 12) + get_be16(pkt->sgid + 14) +
			get_be16(pkt->dgid + 12) + get_be16(pkt->dgid + 14)));
	} else {
		put_be32(ip, 6u << 28 | (uint32_t)pkt->tclass << 20 |
			(pkt->flow_label & 0xfffff));
		put_be16(ip + 4, (uint16_t)udp_len);
		ip[6] = IPPROTO_UDP_;
		ip[7] = pkt->ttl;
		memcpy(ip + 8, pkt->sgid, 16);
		memcpy(ip + 24, pkt->dgid, 16);
	}

	udp = ip + l3;
	put_be16(udp, pkt->udp_sport);
	put_be16(udp + 2, pkt->udp_dport ? pkt->udp_dport : DROCE_ROCE_UDP_PORT);
	put_be16(udp + 4, (uint16_t)udp_len);
	put_be16(udp + 6, 0);

	bth = udp + DROCE_UDP_HLEN;
	put_bth(pkt, oi, bth, pkt->pkey,
		(uint8_t)((pkt->migreq ? 0x40 : 0) | pad << 4 | (pkt->tver & 0xf)),
		(uint8_t)((pkt->fecn ? 0x80 : 0) | (pkt->becn ? 0x40 : 0) |
			(pkt->bth_resv6 & 0x3f)),
		(uint8_t)(pkt->bth_resv7 & 0x7f));
	return (int)hlen;
}

int
droce_wire_tmpl_init(struct droce_hdr_tmpl *t, const struct droce_pkt *pkt)
{
	struct droce_pkt p = *pkt;
	uint8_t hdr[DROCE_MAX_HDR_LEN];
	uint8_t *ip;
	int hlen;

	memset(t, 0, sizeof(*t));	/* ip_ver 0: builds fail, as they should */
	p.opcode = DROCE_OP_RC_SEND_ONLY;
	p.payload_len = 0;
	hlen = droce_wire_build_hdr(&p, hdr, sizeof(hdr));
	if (hlen < 0)
		return hlen;
	t->l3_off = (uint8_t)l2_len(pkt);
	t->bth_off = (uint8_t)(hlen - DROCE_BTH_LEN);
	t->ip_ver = pkt->ip_ver;
	t->pkey = pkt->pkey;
	memcpy(t->bytes, hdr, t->bth_off);
	if (pkt->ip_ver == 4) {
		/* everything but the total length (and the sum itself) */
		ip = t->bytes + t->l3_off;
		put_be16(ip + 2, 0);
		put_be16(ip + 10, 0);
		t->ip_csum_base = csum_add(0, ip, DROCE_IPV4_HLEN);
	}
	return 0;
}

int
droce_wire_build_hdr_tmpl(const struct droce_hdr_tmpl *t,
		const struct droce_pkt *pkt, uint8_t *buf)
{
	const struct droce_opcode_info *oi = &droce_opcode_info[pkt->opcode];
	uint32_t pad, udp_len;
	uint8_t *ip, *bth;

	if (!oi->valid || t->ip_ver == 0)
		return -EINVAL;
	pad = pad_of(pkt->payload_len);
	udp_len = DROCE_UDP_HLEN + oi->hdr_len + pkt->payload_len + pad +
		DROCE_ICRC_LEN;
	/* a fixed-size copy is a few vector moves; what it writes past the
	 * UDP header, the BTH and the payload overwrite */
	memcpy(buf, t->bytes, sizeof(t->bytes));
	ip = buf + t->l3_off;
	if (t->ip_ver == 4) {
		put_be16(ip + 2, (uint16_t)(DROCE_IPV4_HLEN + udp_len));
		put_be16(ip + 10, csum_fold(t->ip_csum_base +
			DROCE_IPV4_HLEN + udp_len));
	} else {
		put_be16(ip + 4, (uint16_t)udp_len);
	}
	bth = buf + t->bth_off;
	put_be16(bth - DROCE_UDP_HLEN + 4, (uint16_t)udp_len);
	put_bth(pkt, oi, bth, t->pkey, (uint8_t)(pad << 4), 0, 0);
	return (int)(t->bth_off + oi->hdr_len);
}

/* Where the IP header starts: after the Ethernet header and a VLAN tag. */
static uint32_t
frame_l3_off(const uint8_t *buf)
{
	return get_be16(buf + 12) == ETHERTYPE_VLAN ?
		DROCE_ETH_HLEN + DROCE_VLAN_HLEN : DROCE_ETH_HLEN;
}

/* UDP checksum over pseudo header, UDP header and data (incl. ICRC). */
static void
udp_csum_fill(uint8_t *buf)
{
	uint8_t *ip = buf + frame_l3_off(buf);
	uint8_t *udp = ip + ((ip[0] >> 4) == 6 ? DROCE_IPV6_HLEN : DROCE_IPV4_HLEN);
	uint32_t ulen = get_be16(udp + 4);
	uint16_t c;

	put_be16(udp + 6, 0);
	c = csum_fold(csum_add(udp_pseudo_sum(ip, ulen), udp, ulen));
	put_be16(udp + 6, c ? c : 0xffff);
}

uint32_t
droce_wire_finish(uint8_t *buf, uint32_t hdr_len, uint32_t payload_len)
{
	uint32_t l3off = frame_l3_off(buf);
	uint32_t pad = pad_of(payload_len);
	uint32_t end = hdr_len + payload_len + pad;
	uint8_t *ip = buf + l3off;
	uint32_t icrc;

	/* the pad bytes (0-3), as one store: the ICRC goes over them */
	memset(buf + hdr_len + payload_len, 0, 4);
	icrc = droce_icrc(ip, end - l3off);
	put_le32(buf + end, icrc);
	/* IPv6 forbids a zero UDP checksum (RFC 8200 8.1). */
	if ((ip[0] >> 4) == 6)
		udp_csum_fill(buf);
	return end + DROCE_ICRC_LEN;
}

uint32_t
droce_wire_icrc_begin(const uint8_t *buf, uint32_t hdr_len)
{
	uint32_t l3off = frame_l3_off(buf);

	return droce_icrc_hdr(buf + l3off, hdr_len - l3off);
}

uint32_t
droce_wire_icrc_end(uint32_t state, uint32_t payload_len, uint8_t *tail)
{
	static const uint8_t zero[4];
	uint32_t pad = pad_of(payload_len), icrc;

	memset(tail, 0, pad);
	if (pad)
		state = droce_icrc_update(state, zero, pad);
	icrc = droce_icrc_final(state);
	tail[pad] = (uint8_t)icrc;
	tail[pad + 1] = (uint8_t)(icrc >> 8);
	tail[pad + 2] = (uint8_t)(icrc >> 16);
	tail[pad + 3] = (uint8_t)(icrc >> 24);
	return pad + DROCE_ICRC_LEN;
}

int
droce_wire_build(const struct droce_pkt *pkt, uint8_t *buf, uint32_t cap)
{
	int hlen;
	uint32_t total;

	if (droce_wire_frame_len(pkt) > cap)
		return -ENOSPC;
	hlen = droce_wire_build_hdr(pkt, buf, cap);
	if (hlen < 0)
		return hlen;
	if (pkt->payload_len)
		memcpy(buf + hlen, pkt->payload, pkt->payload_len);
	total = droce_wire_finish(buf, (uint32_t)hlen, pkt->payload_len);
	/*
	 * The ICRC masks the UDP checksum, so it can be filled in last.
	 * IPv6 forbids a zero UDP checksum (RFC 8200 8.1): always compute it.
	 */
	if (pkt->udp_csum && pkt->ip_ver == 4)
		udp_csum_fill(buf);
	return (int)total;
}

void
droce_wire_set_icrc_rxe_flush(uint8_t *frame, uint32_t len)
{
	uint32_t l3 = DROCE_ETH_HLEN, crc;

	/* an 802.1Q tag before the ethertype */
	if (frame[12] == 0x81 && frame[13] == 0x00)
		l3 += DROCE_VLAN_HLEN;
	crc = droce_icrc_rxe_flush(frame + l3, len - DROCE_ICRC_LEN - l3);
	frame[len - 4] = (uint8_t)crc;
	frame[len - 3] = (uint8_t)(crc >> 8);
	frame[len - 2] = (uint8_t)(crc >> 16);
	frame[len - 1] = (uint8_t)(crc >> 24);
}

int
droce_wire_mark_ce(uint8_t *f, uint32_t len, int ect_only)
{
	uint32_t l3 = 14, s, i;
	uint16_t et;

	if (len < 18)
		return 0;
	et = (uint16_t)(f[12] << 8 | f[13]);
	if (et == 0x8100) {
		l3 = 18;
		et = (uint16_t)(f[16] << 8 | f[17]);
	}
	if (et == 0x0800 && len >= l3 + 28 && (f[l3] & 0x0f) == 5 &&
			f[l3 + 9] == 17 &&
			(f[l3 + 22] << 8 | f[l3 + 23]) == DROCE_ROCE_UDP_PORT) {
		if (ect_only && (f[l3 + 1] & DROCE_ECN_MASK) == DROCE_ECN_NOT_ECT)
			return 0;
		f[l3 + 1] |= DROCE_ECN_CE;
		f[l3 + 10] = f[l3 + 11] = 0;
		for (s = 0, i = 0; i < 20; i += 2)
			s += (uint32_t)(f[l3 + i] << 8 | f[l3 + i + 1]);
		while (s >> 16)
			s = (s & 0xffff) + (s >> 16);
		s = ~s & 0xffff;
		f[l3 + 10] = (uint8_t)(s >> 8);
		f[l3 + 11] = (uint8_t)s;
		return 1;
	}
	if (et == 0x86dd && len >= l3 + 48 && f[l3 + 6] == 17 &&
			(f[l3 + 42] << 8 | f[l3 + 43]) == DROCE_ROCE_UDP_PORT) {
		/* the traffic class's ECN bits: the high nibble of byte 1 */
		if (ect_only && ((f[l3 + 1] >> 4) & DROCE_ECN_MASK) ==
				DROCE_ECN_NOT_ECT)
			return 0;
		f[l3 + 1] |= DROCE_ECN_CE << 4;
		return 1;
	}
	return 0;
}
