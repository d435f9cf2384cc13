/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

#ifndef FUZZ_FRAME_H
#define FUZZ_FRAME_H

/* Frames a fuzz target crafts between the two ends of a fake link. */

#include <string.h>

#include "fakelink.h"
#include "frame_fix.h"
#include "fuzz_input.h"

/* p's addressing: RoCEv2 over IPv4 from one end to the other. */
static inline void
fuzz_pkt_between(struct droce_pkt *p, const struct fl_end *from,
		const struct fl_end *to)
{
	memset(p, 0, sizeof(*p));
	memcpy(p->dst_mac, to->mac, 6);
	memcpy(p->src_mac, from->mac, 6);
	p->ip_ver = 4;
	p->ttl = 64;
	droce_gid_from_ipv4(p->sgid, from->ip);
	droce_gid_from_ipv4(p->dgid, to->ip);
	p->udp_sport = 0xc000;
	p->udp_dport = DROCE_ROCE_UDP_PORT;
	p->pkey = 0xffff;
}

/*
 * Three bytes of the input: with its top bit, a byte of frame f flipped,
 * the ICRC made good again (unless bit 22 says not) where the flip is
 * past the IP header; *flipped says so. The bits are returned for the
 * caller's own use of the rest.
 */
static inline uint32_t
fuzz_flip(struct in *in, uint8_t *f, uint32_t len, int *flipped)
{
	uint32_t mut = take(in, 3);

	*flipped = 0;
	if (mut & 0x800000) {
		uint32_t off = (mut >> 8 & 0x7fff) % len;

		f[off] ^= (uint8_t)mut;
		if (!(mut & 0x400000) && off >= 14 + 20)
			frame_fix_icrc(f, len);
		*flipped = 1;
	}
	return mut;
}

#endif
