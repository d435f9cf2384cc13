/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

#ifndef FUZZ_INPUT_H
#define FUZZ_INPUT_H

/* A fuzz target's cursor over its input: what runs out reads as zero. */

#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct in {
	const uint8_t *p;
	size_t n;
};

/* The next bytes (1 to 4) as a big-endian number. */
static inline uint32_t
take(struct in *in, int bytes)
{
	uint32_t v = 0;

	while (bytes-- > 0) {
		v <<= 8;
		if (in->n) {
			v |= *in->p++;
			in->n--;
		}
	}
	return v;
}

/* The next n bytes into dst, zeros past the input's end. */
static inline void
take_bytes(struct in *in, void *dst, size_t n)
{
	size_t k = n < in->n ? n : in->n;

	memcpy(dst, in->p, k);
	memset((uint8_t *)dst + k, 0, n - k);
	in->p += k;
	in->n -= k;
}

#endif
