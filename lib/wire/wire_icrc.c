/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * CRC-32 (reflected Ethernet polynomial 0xEDB88320) and the RoCEv2 ICRC
 * (IBTA Annex A17.3.3): CRC over 8 bytes of 0xFF, the IP header with its
 * variant fields set to ones, the UDP header with its checksum set to
 * ones, the BTH with byte 4 set to ones, then the rest of the packet.
 *
 * Two engines: slicing-by-8 tables (portable), and carry-less multiply
 * folding (x86 PCLMULQDQ), picked once at load time. Both keep the raw
 * state (no pre/post inversion) so an ICRC can be chained over a masked
 * header copy and then the payload in place.
 */

#include <string.h>

#include "droce_wire.h"

#define CRC32_POLY_REFLECTED 0xedb88320u

static uint32_t crc_tab[8][256];

static void
crc_tab_init(void)
{
	uint32_t i, j, c;

	for (i = 0; i < 256; i++) {
		c = i;
		for (j = 0; j < 8; j++)
			c = (c >> 1) ^ ((c & 1) ? CRC32_POLY_REFLECTED : 0);
		crc_tab[0][i] = c;
	}
	for (i = 0; i < 256; i++)
		for (j = 1; j < 8; j++)
			crc_tab[j][i] = (crc_tab[j - 1][i] >> 8) ^
				crc_tab[0][crc_tab[j - 1][i] & 0xff];
}

/* Portable engine: slicing-by-8. Exported for the tests. */
uint32_t droce_crc32_update_sw(uint32_t crc, const void *data, size_t len);

uint32_t
droce_crc32_update_sw(uint32_t crc, const void *data, size_t len)
{
	const uint8_t *p = data;
	uint64_t w;

	while (len >= 8) {
		memcpy(&w, p, 8);
		w ^= crc;	/* little-endian: low 4 bytes meet the state */
		crc = crc_tab[7][w & 0xff] ^
			crc_tab[6][(w >> 8) & 0xff] ^
			crc_tab[5][(w >> 16) & 0xff] ^
			crc_tab[4][(w >> 24) & 0xff] ^
			crc_tab[3][(w >> 32) & 0xff] ^
			crc_tab[2][(w >> 40) & 0xff] ^
			crc_tab[1][(w >> 48) & 0xff] ^
			crc_tab[0][w >> 56];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = (crc >> 8) ^ crc_tab[0][(crc ^ *p++) & 0xff];
	return crc;
}

#if defined(__x86_64__)
#include <immintrin.h>

/*
 * Folding constants for the reflected polynomial: x^(4*128+32),
 * x^(4*128-32) mod P to fold 64 bytes at a time, x^(128+32), x^(128-32)
 * mod P to fold 16 bytes (Gopal et al., "Fast CRC Computation for Generic
 * Polynomials Using PCLMULQDQ", Intel 2009).
 */
#define K1 0x154442bd4ull
#define K2 0x1c6e41596ull
#define K3 0x1751997d0ull
#define K4 0x0ccaa009eull

__attribute__((target("pclmul,sse4.1")))
static inline __m128i
fold16(__m128i x, __m128i k, __m128i next)
{
	__m128i lo = _mm_clmulepi64_si128(x, k, 0x00);
	__m128i hi = _mm_clmulepi64_si128(x, k, 0x11);

	return _mm_xor_si128(_mm_xor_si128(lo, hi), next);
}

/*
 * Fold the bulk down to one 16-byte value that has the same CRC from a
 * zero state as the input had from crc, then finish with the tables.
 */
__attribute__((target("pclmul,sse4.1")))
static uint32_t
crc32_update_clmul(uint32_t crc, const void *data, size_t len)
{
	const uint8_t *p = data;
	__m128i x0, x1, x2, x3, k;
	uint8_t tail[16];

	if (len < 64)
		return droce_crc32_update_sw(crc, data, len);

	x0 = _mm_loadu_si128((const __m128i *)p);
	x1 = _mm_loadu_si128((const __m128i *)(p + 16));
	x2 = _mm_loadu_si128((const __m128i *)(p + 32));
	x3 = _mm_loadu_si128((const __m128i *)(p + 48));
	x0 = _mm_xor_si128(x0, _mm_cvtsi32_si128((int)crc));
	p += 64;
	len -= 64;

	k = _mm_set_epi64x(K2, K1);
	while (len >= 64) {
		x0 = fold16(x0, k, _mm_loadu_si128((const __m128i *)p));
		x1 = fold16(x1, k, _mm_loadu_si128((const __m128i *)(p + 16)));
		x2 = fold16(x2, k, _mm_loadu_si128((const __m128i *)(p + 32)));
		x3 = fold16(x3, k, _mm_loadu_si128((const __m128i *)(p + 48)));
		p += 64;
		len -= 64;
	}

	k = _mm_set_epi64x(K4, K3);
	x0 = fold16(x0, k, x1);
	x0 = fold16(x0, k, x2);
	x0 = fold16(x0, k, x3);
	while (len >= 16) {
		x0 = fold16(x0, k, _mm_loadu_si128((const __m128i *)p));
		p += 16;
		len -= 16;
	}
	_mm_storeu_si128((__m128i *)tail, x0);
	crc = droce_crc32_update_sw(0, tail, sizeof(tail));
	return droce_crc32_update_sw(crc, p, len);
}
#endif

typedef uint32_t (*crc_fn)(uint32_t, const void *, size_t);
static crc_fn crc_engine = droce_crc32_update_sw;

/* State after the 8 bytes of 0xFF that start every ICRC. */
static uint32_t icrc_seed;

__attribute__((constructor))
static void
crc_init(void)
{
	static const uint8_t ones[8] = {
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff
	};

	crc_tab_init();
#if defined(__x86_64__)
	__builtin_cpu_init();
	if (__builtin_cpu_supports("pclmul") &&
			__builtin_cpu_supports("sse4.1"))
		crc_engine = crc32_update_clmul;
#endif
	icrc_seed = droce_crc32_update_sw(0xffffffffu, ones, sizeof(ones));
}

/** Which engine droce_crc32_update uses: "pclmul" or "table". */
const char *droce_crc32_engine(void);

const char *
droce_crc32_engine(void)
{
	return crc_engine == droce_crc32_update_sw ? "table" : "pclmul";
}

uint32_t
droce_crc32_update(uint32_t crc, const void *data, size_t len)
{
	return crc_engine(crc, data, len);
}

/* The ICRC's view of a header copy at m (IP, UDP, BTH): variant fields
 * read as all ones. */
static inline void
icrc_mask(uint8_t *m, uint32_t iplen)
{
	if (iplen == DROCE_IPV4_HLEN) {
		m[1] = 0xff;			/* TOS */
		m[8] = 0xff;			/* TTL */
		m[10] = m[11] = 0xff;		/* header checksum */
	} else {
		m[0] |= 0x0f;			/* traffic class, flow label */
		m[1] = m[2] = m[3] = 0xff;
		m[7] = 0xff;			/* hop limit */
	}
	m[iplen + 6] = m[iplen + 7] = 0xff;	/* UDP checksum */
	m[iplen + DROCE_UDP_HLEN + 4] = 0xff;	/* BTH FECN/BECN/resv6 */
}

uint32_t
droce_icrc_hdr(const uint8_t *l3, uint32_t hdr_len_from_l3)
{
	uint8_t m[DROCE_IPV6_HLEN + DROCE_UDP_HLEN + DROCE_BTH_LEN];
	uint32_t iplen, n;
	uint32_t crc;

	iplen = (l3[0] >> 4) == 6 ? DROCE_IPV6_HLEN : DROCE_IPV4_HLEN;
	n = iplen + DROCE_UDP_HLEN + DROCE_BTH_LEN;
	if (n > hdr_len_from_l3)
		n = hdr_len_from_l3;
	memcpy(m, l3, n);
	icrc_mask(m, iplen);

	crc = droce_crc32_update(icrc_seed, m, n);
	return droce_crc32_update(crc, l3 + n, hdr_len_from_l3 - n);
}

#if defined(__x86_64__)
/* Frames up to this many bytes from the IP header take the one-pass path. */
#define ICRC_ONE_PASS_MAX 512u

/*
 * One pass for short frames: the 8 bytes of 0xFF, the masked headers and
 * the payload are laid out in one buffer and folded from a zero state, so
 * the table engine sees 16 bytes instead of every header piece. Two CRC
 * facts make that exact: starting from state S is starting from 0 with S
 * XORed into the first 4 bytes (so the leading 0xFFs become 00 00 00 00
 * FF FF FF FF for the initial all-ones state), and zero bytes in front of
 * a message leave a zero state at zero, so the buffer is front-padded to
 * a multiple of 16 bytes (and at least 64) for the folding loop.
 */
__attribute__((target("pclmul,sse4.1")))
static uint32_t
icrc_one_pass(const uint8_t *l3, uint32_t len, uint32_t iplen)
{
	uint8_t buf[ICRC_ONE_PASS_MAX + 8 + 64] __attribute__((aligned(16)));
	uint32_t total = len + 8, padded, pad;
	uint8_t *m;

	padded = (total + 15) & ~15u;
	if (padded < 64)
		padded = 64;
	pad = padded - total;
	memset(buf, 0, pad + 4);
	memset(buf + pad + 4, 0xff, 4);
	m = buf + pad + 8;
	memcpy(m, l3, len);
	icrc_mask(m, iplen);
	return crc32_update_clmul(0, buf, padded);
}
#endif

uint32_t
droce_icrc(const uint8_t *l3, uint32_t len)
{
	uint32_t iplen = (l3[0] >> 4) == 6 ? DROCE_IPV6_HLEN : DROCE_IPV4_HLEN;
	uint32_t h = iplen + DROCE_UDP_HLEN + DROCE_BTH_LEN;
	uint32_t st;

#if defined(__x86_64__)
	if (crc_engine != droce_crc32_update_sw && len >= h &&
			len <= ICRC_ONE_PASS_MAX)
		return droce_icrc_final(icrc_one_pass(l3, len, iplen));
#endif
	st = droce_icrc_hdr(l3, h);
	st = droce_crc32_update(st, l3 + h, len - h);
	return droce_icrc_final(st);
}
