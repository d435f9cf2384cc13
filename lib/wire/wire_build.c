/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/* Builder: struct droce_pkt -> frame, driven by droce_opcode_info[]. */

#include <errno.h>
#include <string.h>

#include "droce_wire.h"
#include "wire_build.h"
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
	return droce_wire_build_hdr_tmpl_inline(t, pkt, buf);
}

uint32_t
droce_wire_finish(uint8_t *buf, uint32_t hdr_len, uint32_t payload_len)
{
	return droce_wire_finish_inline(buf, hdr_len, payload_len);
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
