/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/* Strict parser: its error names, and the exported entry to the parse in
 * wire_parse.h. */

#include <errno.h>
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

int
droce_wire_rx_tmpl_init(struct droce_rx_tmpl *t, const uint8_t mac[6],
		const uint8_t local[16], const uint8_t peer[16], uint32_t qpn,
		uint8_t transport)
{
	const uint32_t ip = DROCE_ETH_HLEN, udp = ip + DROCE_IPV4_HLEN,
		bth = udp + DROCE_UDP_HLEN;
	uint32_t a;

	memset(t, 0, sizeof(*t));
	if (!droce_gid_is_ipv4(local, &a) ||
			(transport == DROCE_TRANSPORT_UD ? peer != NULL :
			(transport != DROCE_TRANSPORT_RC &&
			transport != DROCE_TRANSPORT_UC) || peer == NULL ||
			!droce_gid_is_ipv4(peer, &a)))
		return -ENOTSUP;
	memcpy(t->want, mac, 6);
	memset(t->mask, 0xff, 6);
	put_be16(t->want + 12, ETHERTYPE_IPV4);
	t->want[ip] = 0x45;		/* version 4, no options */
	t->want[ip + 9] = IPPROTO_UDP_;
	if (peer != NULL)
		memcpy(t->want + ip + 12, peer + 12, 4);
	memcpy(t->want + ip + 16, local + 12, 4);
	put_be16(t->want + udp + 2, DROCE_ROCE_UDP_PORT);
	t->want[bth] = transport;
	put_be16(t->want + bth + 2, 0xffff);
	t->want[bth + 5] = (uint8_t)(qpn >> 16);
	memset(t->mask + 12, 0xff, 3);		/* ethertype, version */
	t->mask[ip + 6] = 0x3f;			/* MF, fragment offset */
	t->mask[ip + 7] = 0xff;
	t->mask[ip + 9] = 0xff;
	/* the addresses: UD's frames come from anyone */
	memset(t->mask + ip + (peer != NULL ? 12 : 16), 0xff,
		peer != NULL ? 8 : 4);
	memset(t->mask + udp + 2, 0xff, 2);
	t->mask[bth] = DROCE_TRANSPORT_MASK;
	t->mask[bth + 1] = 0x0f;		/* TVer */
	memset(t->mask + bth + 2, 0xff, 2);	/* P_Key */
	t->mask[bth + 5] = 0xff;
	return 0;
}
