/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/* Strict parser: its error names, and the exported entry to the parse in
 * wire_parse.h. */

#include <string.h>

#include "droce_wire.h"
#include "wire_bytes.h"
#include "wire_parse.h"

static const char *const err_names[DROCE_WIRE_ERR_COUNT] = {
	[0] = "ok",
	[1] = "truncated frame",
	[2] = "wrong ethertype",
	[3] = "wrong IP version",
	[4] = "wrong IP protocol, options or fragment",
	[5] = "wrong UDP destination port",
	[6] = "IP or UDP length disagrees with the frame",
	[7] = "bad IPv4 header checksum",
	[8] = "BTH TVer not 0",
	[9] = "unknown opcode",
	[10] = "opcode of an unexpected transport",
	[11] = "missing extension header",
	[12] = "PadCnt inconsistent",
	[13] = "payload longer than the path MTU",
	[14] = "bad ICRC",
	[15] = "bad UDP checksum",
	[16] = "payload length or PadCnt invalid for the opcode",
};

const char *
droce_wire_strerror(int err)
{
	if (err > 0 || -err >= DROCE_WIRE_ERR_COUNT)
		return "unknown error";
	return err_names[-err];
}

int
droce_wire_parse(const uint8_t *f, uint32_t len,
		const struct droce_parse_opts *opts, struct droce_pkt *pkt)
{
	static const struct droce_parse_opts defaults;

	return droce_wire_parse_inline(f, len, opts != NULL ? opts : &defaults,
		pkt);
}

int64_t
droce_wire_peek_dqpn(const uint8_t *f, uint32_t len)
{
	uint32_t l3 = DROCE_ETH_HLEN, l4;
	uint16_t et;

	if (len < DROCE_ETH_HLEN)
		return -1;
	et = get_be16(f + 12);
	if (et == ETHERTYPE_VLAN && len >= DROCE_ETH_HLEN + DROCE_VLAN_HLEN) {
		l3 += DROCE_VLAN_HLEN;
		et = get_be16(f + 16);
	}
	if (et == ETHERTYPE_IPV4 && len >= l3 + DROCE_IPV4_HLEN &&
			f[l3 + 9] == IPPROTO_UDP_)
		l4 = l3 + (f[l3] & 0xfu) * 4;
	else if (et == ETHERTYPE_IPV6 && len >= l3 + DROCE_IPV6_HLEN &&
			f[l3 + 6] == IPPROTO_UDP_)
		l4 = l3 + DROCE_IPV6_HLEN;
	else
		return -1;
	if (len < l4 + DROCE_UDP_HLEN + DROCE_BTH_LEN ||
			get_be16(f + l4 + 2) != DROCE_ROCE_UDP_PORT)
		return -1;
	return get_be24(f + l4 + DROCE_UDP_HLEN + 5);
}
