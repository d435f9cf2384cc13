/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

#ifndef FRAME_FIX_H
#define FRAME_FIX_H

/*
 * For tests that change a frame on purpose and want it authentic again:
 * the IPv4 header sum and the ICRC recomputed (untagged IPv4 frames, no
 * bytes after the IP datagram).
 */

#include <stdint.h>

#include "droce_wire.h"

static inline void
frame_fix_ipv4_csum(uint8_t *f)
{
	uint32_t s = 0;
	int i;

	f[24] = f[25] = 0;
	for (i = 0; i < 20; i += 2)
		s += (uint32_t)(f[14 + i] << 8 | f[15 + i]);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	f[24] = (uint8_t)(~s >> 8);
	f[25] = (uint8_t)~s;
}

static inline void
frame_fix_icrc(uint8_t *f, uint32_t len)
{
	uint32_t c = droce_icrc(f + 14, len - 14 - 4);

	f[len - 4] = (uint8_t)c;
	f[len - 3] = (uint8_t)(c >> 8);
	f[len - 2] = (uint8_t)(c >> 16);
	f[len - 1] = (uint8_t)(c >> 24);
}

#endif
