/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

#ifndef WIRE_BYTES_H
#define WIRE_BYTES_H

/* Big-endian field access on unaligned bytes: the only place that swaps. */

#include <stdint.h>
#include <string.h>

static inline uint16_t
get_be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t
get_be24(const uint8_t *p)
{
	return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}

/* The 24 bits at p where the byte before p may be read too (a BTH's
 * QPN and PSN, an AETH's MSN): one load, not three. */
static inline uint32_t
get_be24_after(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p - 1, 4);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	v = __builtin_bswap32(v);
#endif
	return v & 0xffffff;
}

static inline uint32_t
get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
		(uint32_t)p[2] << 8 | p[3];
}

/* The ICRC's byte order (least significant byte first). */
static inline uint32_t
get_le32(const uint8_t *p)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
#else
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
		(uint32_t)p[3] << 24;
#endif
}

/* The ICRC's byte order: least significant byte first. */
static inline void
put_le32(uint8_t *p, uint32_t v)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	memcpy(p, &v, 4);
#else
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
#endif
}

static inline uint64_t
get_be64(const uint8_t *p)
{
	return (uint64_t)get_be32(p) << 32 | get_be32(p + 4);
}

static inline void
put_be16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static inline void
put_be24(uint8_t *p, uint32_t v)
{
	p[0] = v >> 16;
	p[1] = v >> 8;
	p[2] = v;
}

static inline void
put_be32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

static inline void
put_be64(uint8_t *p, uint64_t v)
{
	put_be32(p, v >> 32);
	put_be32(p + 4, (uint32_t)v);
}

/* One's-complement sum over bytes, folded to 16 bits by the caller. */
static inline uint32_t
csum_add(uint32_t sum, const uint8_t *p, uint32_t len)
{
	while (len > 1) {
		sum += get_be16(p);
		p += 2;
		len -= 2;
	}
	if (len)
		sum += (uint32_t)p[0] << 8;
	return sum;
}

static inline uint16_t
csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/*
 * 0 when a received 20-byte IPv4 header (checksum included) verifies. A
 * ones' complement sum does not depend on byte order (RFC 1071), so five
 * native 32-bit words are added instead of ten byte pairs. (The builder
 * sums the field values instead: see droce_wire_build_hdr.)
 */
static inline uint16_t
ipv4_hdr_csum(const uint8_t *ip)
{
	uint64_t a, b;
	uint32_t c;
	uint64_t s;
	uint16_t r;

	/* two 8-byte words and a 4-byte one: a loop of five costs twice */
	memcpy(&a, ip, 8);
	memcpy(&b, ip + 8, 8);
	memcpy(&c, ip + 16, 4);
	s = (a & 0xffffffffu) + (a >> 32) + (b & 0xffffffffu) + (b >> 32) + c;
	s = (s & 0xffffffffu) + (s >> 32);
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	r = (uint16_t)~s;
	return r;
}

#define ETHERTYPE_IPV4 0x0800
#define ETHERTYPE_IPV6 0x86dd
#define ETHERTYPE_VLAN 0x8100
#define IPPROTO_UDP_ 17

/* Ones' complement sum of the UDP pseudo header, for IPv4 or IPv6. */
static inline uint32_t
udp_pseudo_sum(const uint8_t *l3, uint32_t udp_len)
{
	uint32_t sum;

	if ((l3[0] >> 4) == 4)
		sum = csum_add(0, l3 + 12, 8);
	else
		sum = csum_add(0, l3 + 8, 32);
	return sum + IPPROTO_UDP_ + udp_len;
}

#endif /* WIRE_BYTES_H */
