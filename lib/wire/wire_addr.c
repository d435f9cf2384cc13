/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/* RoCEv2 addressing and the small IBTA encodings (credits, RNR timer). */

#include <errno.h>
#include <string.h>

#include "droce_wire.h"

void
droce_gid_from_ipv4(uint8_t gid[16], uint32_t ip)
{
	memset(gid, 0, 10);
	gid[10] = 0xff;
	gid[11] = 0xff;
	gid[12] = ip >> 24;
	gid[13] = ip >> 16;
	gid[14] = ip >> 8;
	gid[15] = ip;
}

bool
droce_gid_is_ipv4(const uint8_t gid[16], uint32_t *ip)
{
	static const uint8_t prefix[12] = {
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff
	};

	if (memcmp(gid, prefix, sizeof(prefix)) != 0)
		return false;
	if (ip != NULL)
		*ip = (uint32_t)gid[12] << 24 | (uint32_t)gid[13] << 16 |
			(uint32_t)gid[14] << 8 | gid[15];
	return true;
}

bool
droce_gid_is_mcast(const uint8_t gid[16])
{
	uint32_t ip;

	if (droce_gid_is_ipv4(gid, &ip))
		return ip >> 28 == 0xe;
	return gid[0] == 0xff;
}

int
droce_gid_mcast_mac(const uint8_t gid[16], uint8_t mac[6])
{
	if (!droce_gid_is_mcast(gid))
		return -EINVAL;
	if (gid[0] == 0xff) {
		mac[0] = 0x33;
		mac[1] = 0x33;
		memcpy(mac + 2, gid + 12, 4);
	} else {
		mac[0] = 0x01;
		mac[1] = 0x00;
		mac[2] = 0x5e;
		mac[3] = gid[13] & 0x7f;
		mac[4] = gid[14];
		mac[5] = gid[15];
	}
	return 0;
}

void
droce_gid_link_local(uint8_t gid[16], const uint8_t mac[6])
{
	memset(gid, 0, 16);
	gid[0] = 0xfe;
	gid[1] = 0x80;
	gid[8] = mac[0] ^ 0x02;	/* EUI-64: flip the universal/local bit */
	gid[9] = mac[1];
	gid[10] = mac[2];
	gid[11] = 0xff;
	gid[12] = 0xfe;
	gid[13] = mac[3];
	gid[14] = mac[4];
	gid[15] = mac[5];
}

/* rxe: 0xC000 + the top 14 bits of a golden-ratio hash of the QPN. */
uint16_t
droce_udp_sport_qpn(uint32_t qpn)
{
	return (uint16_t)(0xc000 + ((uint32_t)(qpn * 0x61c88647u) >> 18));
}

/*
 * rxe (and mlx5) derive a 20-bit flow label from both QPNs when the AV
 * gives none, then fold it into 14 bits of source port.
 */
uint16_t
droce_udp_sport_flow(uint32_t lqpn, uint32_t rqpn, uint32_t fl)
{
	if (fl == 0) {
		uint64_t v = (uint64_t)lqpn * rqpn;

		v ^= v >> 20;
		v ^= v >> 40;
		fl = (uint32_t)(v & 0xfffff);
	}
	return (uint16_t)(0xc000 | ((fl & 0x3fff) ^ ((fl & 0xfc000) >> 14)));
}

int
droce_aeth_credits(unsigned int code)
{
	static const int credits[31] = {
		0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192,
		256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192,
		12288, 16384, 24576, 32768,
	};

	return code < 31 ? credits[code] : -1;
}

/* IBTA vol.1 table 45, in microseconds (code 0 is the longest). */
uint32_t
droce_rnr_timer_us(unsigned int code)
{
	static const uint32_t us[32] = {
		655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640,
		960, 1280, 1920, 2560, 3840, 5120, 7680, 10240, 15360, 20480,
		30720, 40960, 61440, 81920, 122880, 163840, 245760, 327680,
		491520,
	};

	return us[code & 31];
}
