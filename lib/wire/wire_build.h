/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

#ifndef WIRE_BUILD_H
#define WIRE_BUILD_H

/*
 * What the transport runs for every frame it sends, inline: a header from
 * a QP's template (droce_wire_build_hdr_tmpl) and the pad and ICRC after
 * the payload (droce_wire_finish). The exported functions wrap these.
 */

#include <string.h>

#include "droce_wire.h"
#include "wire_bytes.h"

static inline uint32_t
pad_of(uint32_t payload_len)
{
	return (0u - payload_len) & 3;
}

static inline void
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
		if (oi->hdrs == DROCE_HDR_DETH)	/* UD's SEND */
			return;
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
static inline void
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

static inline __attribute__((always_inline)) int
droce_wire_build_hdr_tmpl_inline(const struct droce_hdr_tmpl *t,
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
static inline uint32_t
frame_l3_off(const uint8_t *buf)
{
	return get_be16(buf + 12) == ETHERTYPE_VLAN ?
		DROCE_ETH_HLEN + DROCE_VLAN_HLEN : DROCE_ETH_HLEN;
}

/* UDP checksum over pseudo header, UDP header and data (incl. ICRC). */
static inline void
udp_csum_fill(uint8_t *buf)
{
	uint8_t *ip = buf + frame_l3_off(buf);
	uint8_t *udp = ip + ((ip[0] >> 4) == 6 ? DROCE_IPV6_HLEN :
		DROCE_IPV4_HLEN);
	uint32_t ulen = get_be16(udp + 4);
	uint16_t c;

	put_be16(udp + 6, 0);
	c = csum_fold(csum_add(udp_pseudo_sum(ip, ulen), udp, ulen));
	put_be16(udp + 6, c ? c : 0xffff);
}

static inline __attribute__((always_inline)) uint32_t
droce_wire_finish_inline(uint8_t *buf, uint32_t hdr_len, uint32_t payload_len)
{
	uint32_t l3off = frame_l3_off(buf);
	uint32_t pad = pad_of(payload_len);
	uint32_t end = hdr_len + payload_len + pad;
	uint8_t *ip = buf + l3off;
	uint32_t icrc;

	/* the pad bytes (0-3), as one store: the ICRC goes over them */
	memset(buf + hdr_len + payload_len, 0, 4);
	/* every frame built has its headers whole */
	icrc = (ip[0] >> 4) == 4 ? droce_icrc_v4(ip, end - l3off) :
		droce_icrc(ip, end - l3off);
	put_le32(buf + end, icrc);
	/* IPv6 forbids a zero UDP checksum (RFC 8200 8.1). */
	if ((ip[0] >> 4) == 6)
		udp_csum_fill(buf);
	return end + DROCE_ICRC_LEN;
}

#endif /* WIRE_BUILD_H */
