/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * CRC-32 (reflected Ethernet polynomial 0xEDB88320) and the RoCEv2 ICRC
 * (IBTA Annex A17.3.3): CRC over 8 bytes of 0xFF, the IP header with its
 * variant fields set to ones, the UDP header with its checksum set to
 * ones, the BTH with byte 4 set to ones, then the rest of the packet.
 *
 * Three engines: slicing-by-8 tables (portable), and carry-less multiply
 * folding with x86 PCLMULQDQ (16-byte lanes) or VPCLMULQDQ (AVX-512,
 * 64-byte registers), the fastest the CPU has picked at load time. All
 * keep the raw state (no pre/post inversion) so a CRC can be chained.
 */

#include <errno.h>
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

/* Portable engine: slicing-by-8. */
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

#if defined(__x86_64__)
#include <immintrin.h>

#define CLMUL_TARGET "pclmul,sse4.1,ssse3"
#define VCLMUL_TARGET "avx512f,avx512bw,avx512vl,vpclmulqdq,pclmul,sse4.1"

/*
 * Carry-less multiply folding (Gopal et al., "Fast CRC Computation for
 * Generic Polynomials Using PCLMULQDQ", Intel 2009). A 128-bit state x
 * stands for the message folded so far; moving it D bytes forward is
 * x.lo * (x^(8D+32) mod P) ^ x.hi * (x^(8D-32) mod P), both constants
 * bit-reflected and shifted left by one. The constants are computed at
 * load time for each distance used, so none is written down by hand.
 */
struct fold_k {
	uint64_t lo, hi;
};

static struct fold_k k16, k32, k48, k64, k256;
static uint64_t k_r5;	/* x^64 mod P: 64 -> 32 bits */

/*
 * What the ICRC ORs into the first blocks of its message (8 bytes, then
 * the IP header on), for IPv4 [0] and IPv6 [1]: bytes 4-7 of 0xFF (the
 * all-ones start state folded into the leading 0xFFs clears bytes 0-3)
 * and the variant header fields, laid out by icrc_mask itself.
 */
static uint8_t icrc_or[2][64] __attribute__((aligned(16)));

/* x^n mod P in normal bit order (P = 0x104C11DB7). */
static uint32_t
xpow_mod(unsigned int n)
{
	uint32_t r = 1;

	while (n--)
		r = (r << 1) ^ ((r & 0x80000000u) ? 0x04c11db7u : 0);
	return r;
}

static uint64_t
kconst(unsigned int n)
{
	uint32_t v = xpow_mod(n), r = 0;
	int i;

	for (i = 0; i < 32; i++, v >>= 1)
		r = (r << 1) | (v & 1);
	return (uint64_t)r << 1;
}

static struct fold_k
kdist(unsigned int bytes)
{
	struct fold_k k = { kconst(8 * bytes + 32), kconst(8 * bytes - 32) };

	return k;
}

static void
fold_consts_init(void)
{
	k16 = kdist(16);
	k32 = kdist(32);
	k48 = kdist(48);
	k64 = kdist(64);
	k256 = kdist(256);
	k_r5 = kconst(64);
	memset(icrc_or[0] + 4, 0xff, 4);
	icrc_mask(icrc_or[0] + 8, DROCE_IPV4_HLEN);
	memset(icrc_or[1] + 4, 0xff, 4);
	icrc_mask(icrc_or[1] + 8, DROCE_IPV6_HLEN);
}

__attribute__((target(CLMUL_TARGET)))
static inline __m128i
kvec(struct fold_k k)
{
	return _mm_set_epi64x((long long)k.hi, (long long)k.lo);
}

__attribute__((target(CLMUL_TARGET)))
static inline __m128i
fold16(__m128i x, __m128i k, __m128i next)
{
	__m128i lo = _mm_clmulepi64_si128(x, k, 0x00);
	__m128i hi = _mm_clmulepi64_si128(x, k, 0x11);

	return _mm_xor_si128(_mm_xor_si128(lo, hi), next);
}

/*
 * The CRC state (from zero) of the 16 bytes of x: fold 128 -> 64 -> 32
 * bits, then Barrett reduction (mu = x^64 / P and P itself, reflected).
 */
__attribute__((target(CLMUL_TARGET)))
static inline uint32_t
reduce128(__m128i x)
{
	const __m128i mask32 = _mm_set_epi32(0, 0, 0, -1);
	const __m128i up = _mm_set_epi64x(0x1f7011641ll, 0x1db710641ll);
	__m128i t;

	t = _mm_clmulepi64_si128(x, _mm_set_epi64x(0,
		(long long)k16.hi), 0x00);
	x = _mm_xor_si128(t, _mm_srli_si128(x, 8));
	t = _mm_clmulepi64_si128(_mm_and_si128(x, mask32),
		_mm_set_epi64x(0, (long long)k_r5), 0x00);
	x = _mm_xor_si128(t, _mm_srli_si128(x, 4));
	t = _mm_clmulepi64_si128(_mm_and_si128(x, mask32), up, 0x10);
	t = _mm_clmulepi64_si128(_mm_and_si128(t, mask32), up, 0x00);
	return (uint32_t)_mm_extract_epi32(_mm_xor_si128(t, x), 1);
}

/* Fold len bytes (a multiple of 16) at p into the state x: 64 bytes a
 * step in four 16-byte lanes. */
__attribute__((target(CLMUL_TARGET)))
static __m128i
fold_clmul(__m128i x, const uint8_t *p, size_t len)
{
	const __m128i k1 = kvec(k16);

	if (len >= 128) {
		const __m128i k4 = kvec(k64);
		__m128i x0, x1, x2, x3;

		x0 = fold16(x, k1, _mm_loadu_si128((const __m128i *)p));
		x1 = _mm_loadu_si128((const __m128i *)(p + 16));
		x2 = _mm_loadu_si128((const __m128i *)(p + 32));
		x3 = _mm_loadu_si128((const __m128i *)(p + 48));
		p += 64;
		len -= 64;
		while (len >= 64) {
			x0 = fold16(x0, k4, _mm_loadu_si128((const __m128i *)p));
			x1 = fold16(x1, k4,
				_mm_loadu_si128((const __m128i *)(p + 16)));
			x2 = fold16(x2, k4,
				_mm_loadu_si128((const __m128i *)(p + 32)));
			x3 = fold16(x3, k4,
				_mm_loadu_si128((const __m128i *)(p + 48)));
			p += 64;
			len -= 64;
		}
		x = fold16(fold16(fold16(x0, k1, x1), k1, x2), k1, x3);
	}
	for (; len >= 16; p += 16, len -= 16)
		x = fold16(x, k1, _mm_loadu_si128((const __m128i *)p));
	return x;
}

__attribute__((target(VCLMUL_TARGET)))
static inline __m512i
fold64x4(__m512i z, __m512i k, __m512i next)
{
	/* 0x96: a ^ b ^ c */
	return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(z, k, 0x00),
		_mm512_clmulepi64_epi128(z, k, 0x11), next, 0x96);
}

__attribute__((target(VCLMUL_TARGET)))
static inline __m512i
kvec512(struct fold_k k)
{
	return _mm512_broadcast_i32x4(_mm_set_epi64x((long long)k.hi,
		(long long)k.lo));
}

/* The same with VPCLMULQDQ: four 64-byte registers of four lanes each,
 * 256 bytes a step. */
__attribute__((target(VCLMUL_TARGET)))
static __m128i
fold_vclmul(__m128i x, const uint8_t *p, size_t len)
{
	const __m128i k1 = kvec(k16);
	__m512i z, z1, z2, z3, k4;
	__m128i l0, l1, l2, l3;

	if (len < 128)
		return fold_clmul(x, p, len);
	k4 = kvec512(k64);
	z = _mm512_xor_si512(_mm512_loadu_si512(p),
		_mm512_zextsi128_si512(fold16(x, k1, _mm_setzero_si128())));
	p += 64;
	len -= 64;
	if (len >= 192 + 256) {
		const __m512i k16x = kvec512(k256);

		z1 = _mm512_loadu_si512(p);
		z2 = _mm512_loadu_si512(p + 64);
		z3 = _mm512_loadu_si512(p + 128);
		p += 192;
		len -= 192;
		while (len >= 256) {
			z = fold64x4(z, k16x, _mm512_loadu_si512(p));
			z1 = fold64x4(z1, k16x, _mm512_loadu_si512(p + 64));
			z2 = fold64x4(z2, k16x, _mm512_loadu_si512(p + 128));
			z3 = fold64x4(z3, k16x, _mm512_loadu_si512(p + 192));
			p += 256;
			len -= 256;
		}
		z = fold64x4(fold64x4(fold64x4(z, k4, z1), k4, z2), k4, z3);
	}
	for (; len >= 64; p += 64, len -= 64)
		z = fold64x4(z, k4, _mm512_loadu_si512(p));
	/* four lanes into one: lane i moves 48 - 16 i bytes forward */
	l0 = _mm512_extracti32x4_epi32(z, 0);
	l1 = _mm512_extracti32x4_epi32(z, 1);
	l2 = _mm512_extracti32x4_epi32(z, 2);
	l3 = _mm512_extracti32x4_epi32(z, 3);
	x = fold16(l0, kvec(k48), fold16(l1, kvec(k32), fold16(l2, k1, l3)));
	for (; len >= 16; p += 16, len -= 16)
		x = fold16(x, k1, _mm_loadu_si128((const __m128i *)p));
	return x;
}

typedef __m128i (*fold_fn)(__m128i, const uint8_t *, size_t);
static fold_fn fold_engine;

/* pshufb indices: 16 + i picks byte i, 0x80 a zero */
static const uint8_t shift_tab[48] = {
	0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
	0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
	0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
	0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
	0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
};

/*
 * Append the last r (1..15) bytes of a message ending at end to state x:
 * the message's last 16 + r bytes are x's 16 and the r new ones; the
 * first r of them, zero-extended in front, fold 16 bytes forward onto
 * the other 16.
 */
__attribute__((target(CLMUL_TARGET)))
static inline __m128i
fold_tail(__m128i x, const uint8_t *end, uint32_t r)
{
	__m128i hi = _mm_shuffle_epi8(x, _mm_loadu_si128(
		(const __m128i *)(shift_tab + r)));
	__m128i sel = _mm_loadu_si128((const __m128i *)(shift_tab + 16 + r));
	__m128i lo = _mm_blendv_epi8(_mm_shuffle_epi8(x, sel),
		_mm_loadu_si128((const __m128i *)(end - 16)), sel);

	return fold16(hi, kvec(k16), lo);
}

/* CRC update through folding (inputs under 32 bytes take the tables). */
__attribute__((target(CLMUL_TARGET)))
static uint32_t
crc32_update_fold(uint32_t crc, const void *data, size_t len)
{
	const uint8_t *p = data;
	size_t bulk = len & ~(size_t)15;
	__m128i x;

	if (len < 32)
		return droce_crc32_update_sw(crc, data, len);
	/* starting from state crc is starting from 0 with crc XORed into
	 * the first four bytes */
	x = _mm_xor_si128(_mm_loadu_si128((const __m128i *)p),
		_mm_cvtsi32_si128((int)crc));
	x = fold_engine(x, p + 16, bulk - 16);
	if (len & 15)
		x = fold_tail(x, p + len, (uint32_t)(len & 15));
	return reduce128(x);
}

/*
 * The ICRC in one folding pass over the frame where it lies: no copy,
 * no table. The message is eight bytes of 0xFF, then the IP header on;
 * its first nh blocks, up to the last variant field (BTH byte 4), are
 * ORed with icrc_or[v6], whole blocks follow in place and the last
 * partial one is shifted in (fold_tail). Inlined once per IP version so
 * that the header loop unrolls.
 */
__attribute__((target(CLMUL_TARGET), always_inline))
static inline __m128i
clmul_pair(__m128i x, __m128i k)
{
	return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00),
		_mm_clmulepi64_si128(x, k, 0x11));
}

/* Four lanes whose last blocks are 48, 32, 16 and 0 bytes before the
 * message's last block, moved to it and added. */
__attribute__((target(CLMUL_TARGET), always_inline))
static inline __m128i
lanes_meet(__m128i a, __m128i b, __m128i c, __m128i d)
{
	return _mm_xor_si128(_mm_xor_si128(clmul_pair(a, kvec(k48)),
		clmul_pair(b, kvec(k32))),
		_mm_xor_si128(clmul_pair(c, kvec(k16)), d));
}

/*
 * A short frame (4 to 15 whole blocks) in four independent lanes: block
 * i goes to lane i % 4, each lane folds 64 bytes a step, and the lanes
 * meet in one step (48, 32, 16 and 0 bytes forward) instead of a chain
 * of one fold per block. The same multiplies as the chain; the
 * dependency chain a frame's ICRC waits on is about half as long.
 */
__attribute__((target(CLMUL_TARGET), always_inline))
static inline uint32_t
icrc_fold_short(const uint8_t *l3, uint32_t len, uint32_t v6, uint32_t nb)
{
	const __m128i *m = (const __m128i *)icrc_or[v6];
	const uint8_t *b = l3 - 8;	/* the message's blocks start here */
	const __m128i k4 = kvec(k64);
	__m128i x0, x1, x2, x3, x;
	uint32_t i, r = (len + 8) & 15;

	/* the masks reach into block 3 at most (IPv6: 4 blocks) */
	x0 = _mm_or_si128(_mm_slli_si128(_mm_loadl_epi64(
		(const __m128i *)l3), 8), m[0]);
	x1 = _mm_or_si128(_mm_loadu_si128((const __m128i *)(b + 16)), m[1]);
	x2 = _mm_or_si128(_mm_loadu_si128((const __m128i *)(b + 32)), m[2]);
	x3 = _mm_or_si128(_mm_loadu_si128((const __m128i *)(b + 48)), m[3]);
	for (i = 4; i + 4 <= nb; i += 4) {
		x0 = fold16(x0, k4, _mm_loadu_si128((const __m128i *)
			(b + 16 * i)));
		x1 = fold16(x1, k4, _mm_loadu_si128((const __m128i *)
			(b + 16 * i + 16)));
		x2 = fold16(x2, k4, _mm_loadu_si128((const __m128i *)
			(b + 16 * i + 32)));
		x3 = fold16(x3, k4, _mm_loadu_si128((const __m128i *)
			(b + 16 * i + 48)));
	}
	/* the last 1-3 blocks go to the first lanes, which then end last */
	if (i < nb)
		x0 = fold16(x0, k4, _mm_loadu_si128((const __m128i *)
			(b + 16 * i)));
	if (i + 1 < nb)
		x1 = fold16(x1, k4, _mm_loadu_si128((const __m128i *)
			(b + 16 * i + 16)));
	if (i + 2 < nb)
		x2 = fold16(x2, k4, _mm_loadu_si128((const __m128i *)
			(b + 16 * i + 32)));
	switch (nb - i) {
	case 0:
		x = lanes_meet(x0, x1, x2, x3);
		break;
	case 1:
		x = lanes_meet(x1, x2, x3, x0);
		break;
	case 2:
		x = lanes_meet(x2, x3, x0, x1);
		break;
	default:
		x = lanes_meet(x3, x0, x1, x2);
		break;
	}
	if (r)
		x = fold_tail(x, l3 + len, r);
	return reduce128(x);
}

__attribute__((target(CLMUL_TARGET), always_inline))
static inline uint32_t
icrc_fold_v(const uint8_t *l3, uint32_t len, uint32_t v6)
{
	const __m128i k1 = kvec(k16);
	const __m128i *m = (const __m128i *)icrc_or[v6];
	const uint32_t nh = ((v6 ? DROCE_IPV6_HLEN : DROCE_IPV4_HLEN) +
		DROCE_UDP_HLEN + 12) / 16 + 1;
	const uint8_t *p = l3 - 8 + 16 * nh;	/* the frame reaches it */
	__m128i x;
	uint32_t i, n, nb = (len + 8) / 16;

	if (nb >= 4 && nb < 16)
		return icrc_fold_short(l3, len, v6, nb);
	x = _mm_or_si128(_mm_slli_si128(_mm_loadl_epi64(
		(const __m128i *)l3), 8), m[0]);
	for (i = 1; i < nh; i++)
		x = fold16(x, k1, _mm_or_si128(_mm_loadu_si128(
			(const __m128i *)(l3 - 8 + 16 * i)), m[i]));
	n = (uint32_t)(l3 + len - p);
	x = fold_engine(x, p, n & ~15u);
	if (n & 15)
		x = fold_tail(x, l3 + len, n & 15);
	return reduce128(x);
}

__attribute__((target(CLMUL_TARGET)))
static uint32_t
icrc_fold(const uint8_t *l3, uint32_t len, uint32_t iplen)
{
	return iplen == DROCE_IPV4_HLEN ? icrc_fold_v(l3, len, 0) :
		icrc_fold_v(l3, len, 1);
}

__attribute__((target(CLMUL_TARGET)))
static uint32_t
icrc_v4_fold(const uint8_t *l3, uint32_t len)
{
	return droce_icrc_final(icrc_fold_v(l3, len, 0));
}
#endif

static uint32_t
icrc_v4_any(const uint8_t *l3, uint32_t len)
{
	return droce_icrc(l3, len);
}

uint32_t (*droce_icrc_v4_engine)(const uint8_t *l3, uint32_t len) =
	icrc_v4_any;

typedef uint32_t (*crc_fn)(uint32_t, const void *, size_t);
static crc_fn crc_engine = droce_crc32_update_sw;

/* State after the 8 bytes of 0xFF that start every ICRC. */
static uint32_t icrc_seed;

int
droce_crc32_set_engine(const char *name)
{
	if (strcmp(name, "table") == 0) {
		crc_engine = droce_crc32_update_sw;
		droce_icrc_v4_engine = icrc_v4_any;
		return 0;
	}
#if defined(__x86_64__)
	__builtin_cpu_init();
	if (!__builtin_cpu_supports("pclmul") ||
			!__builtin_cpu_supports("sse4.1"))
		return -ENOTSUP;
	if (strcmp(name, "pclmul") == 0) {
		fold_engine = fold_clmul;
		crc_engine = crc32_update_fold;
		droce_icrc_v4_engine = icrc_v4_fold;
		return 0;
	}
	if (strcmp(name, "vpclmul") == 0 &&
			__builtin_cpu_supports("vpclmulqdq") &&
			__builtin_cpu_supports("avx512f") &&
			__builtin_cpu_supports("avx512bw") &&
			__builtin_cpu_supports("avx512vl")) {
		fold_engine = fold_vclmul;
		crc_engine = crc32_update_fold;
		droce_icrc_v4_engine = icrc_v4_fold;
		return 0;
	}
#endif
	return -ENOTSUP;
}

__attribute__((constructor))
static void
crc_init(void)
{
	static const uint8_t ones[8] = {
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff
	};

	crc_tab_init();
#if defined(__x86_64__)
	fold_consts_init();
	if (droce_crc32_set_engine("vpclmul") != 0)
		droce_crc32_set_engine("pclmul");
#endif
	icrc_seed = droce_crc32_update_sw(0xffffffffu, ones, sizeof(ones));
}

const char *
droce_crc32_engine(void)
{
	if (crc_engine == droce_crc32_update_sw)
		return "table";
#if defined(__x86_64__)
	if (fold_engine == fold_vclmul)
		return "vpclmul";
#endif
	return "pclmul";
}

uint32_t
droce_crc32_update(uint32_t crc, const void *data, size_t len)
{
	return crc_engine(crc, data, len);
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

uint32_t
droce_icrc_rxe_flush(const uint8_t *l3, uint32_t len)
{
	uint32_t iplen = (l3[0] >> 4) == 6 ? DROCE_IPV6_HLEN : DROCE_IPV4_HLEN;
	uint32_t bth = iplen + DROCE_UDP_HLEN;
	uint32_t st;

	if (len < bth)
		return 0;
	st = droce_icrc_hdr(l3, len);
	st = droce_crc32_update(st, l3 + bth, len - bth);
	return droce_icrc_final(st);
}

uint32_t
droce_icrc(const uint8_t *l3, uint32_t len)
{
	uint32_t iplen = (l3[0] >> 4) == 6 ? DROCE_IPV6_HLEN : DROCE_IPV4_HLEN;
	uint32_t h = iplen + DROCE_UDP_HLEN + DROCE_BTH_LEN;
	uint32_t st;

#if defined(__x86_64__)
	if (crc_engine != droce_crc32_update_sw && len >= h)
		return droce_icrc_final(icrc_fold(l3, len, iplen));
#endif
	st = droce_icrc_hdr(l3, h);
	st = droce_crc32_update(st, l3 + h, len - h);
	return droce_icrc_final(st);
}
