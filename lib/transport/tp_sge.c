/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * Scatter/gather lists against the MRs their lkeys name: checked,
 * gathered from, scattered into, or handed out as zero-copy spans. Every
 * piece is resolved before a byte moves; on-demand MRs fault their pages
 * in first (tp_odp_fault).
 */

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "tp_internal.h"

static inline __attribute__((always_inline)) uint8_t *
sge_addr(struct droce_dev *dev, struct droce_pd *pd, const struct ibv_sge *s,
		unsigned int need)
{
	struct droce_mr *mr;

	return tp_sge_addr(dev, pd, s, need, &mr);
}

/* len bytes at off of it (on demand: only their pages faulted in) */
static inline __attribute__((always_inline)) uint8_t *
sge_piece(struct droce_dev *dev, struct droce_pd *pd, const struct ibv_sge *s,
		unsigned int need, uint64_t off, uint64_t len)
{
	struct droce_mr *mr;

	return tp_sge_piece(dev, pd, s, need, off, len, &mr);
}

int
tp_sge_check_list(struct droce_dev *dev, struct droce_pd *pd,
		const struct ibv_sge *sge, uint32_t n, unsigned int need)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		if (sge[i].length && sge_addr(dev, pd, &sge[i], need) == NULL)
			return -EPERM;
	return 0;
}

/* Gather len bytes at byte offset off of an SGE list (checked before). */
int
tp_sge_copy_out(struct droce_dev *dev, struct droce_pd *pd,
		const struct ibv_sge *sge, uint32_t n, uint64_t off,
		uint8_t *dst, uint32_t len)
{
	uint32_t i, c;
	uint8_t *src;

	if (n == 1) {	/* the common case, without the walk */
		if (off >= sge->length || len > sge->length - off)
			return -EMSGSIZE;
		src = sge_piece(dev, pd, sge, 0, off, len);
		if (src == NULL)
			return -EPERM;
		memcpy(dst, src + off, len);
		return 0;
	}
	for (i = 0; i < n && len; i++) {
		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		c = sge[i].length - (uint32_t)off;
		if (c > len)
			c = len;
		src = sge_piece(dev, pd, &sge[i], 0, off, c);
		if (src == NULL)
			return -EPERM;
		memcpy(dst, src + off, c);
		dst += c;
		len -= c;
		off = 0;
	}
	return len ? -EMSGSIZE : 0;
}

int
tp_sge_spans(struct droce_dev *dev, struct droce_pd *pd,
		const struct ibv_sge *sge, uint32_t n, uint64_t off,
		uint32_t len, struct droce_txspan *sp, uint32_t max)
{
	uint32_t i, c, k = 0;
	uint8_t *src;

	for (i = 0; i < n && len; i++) {
		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		if (k == max)
			return 0;
		c = sge[i].length - (uint32_t)off;
		if (c > len)
			c = len;
		src = tp_sge_piece(dev, pd, &sge[i], 0, off, c, &sp[k].mr);
		if (src == NULL)
			return -EPERM;
		sp[k].addr = src + off;
		sp[k].len = c;
		k++;
		len -= c;
		off = 0;
	}
	return len ? -EMSGSIZE : (int)k;
}

/*
 * Walk len bytes at byte offset off of an SGE list, every lkey checked:
 * the first max pieces (address, length) are stored in dst and cnt, and
 * *k says how many. 0, -EPERM (an lkey) or -EMSGSIZE (the list is too
 * short); nothing is written to memory.
 */
static int
sge_walk(struct droce_dev *dev, struct droce_pd *pd,
		const struct ibv_sge *sge, uint32_t n, uint64_t off, uint32_t len,
		uint8_t **dst, uint32_t *cnt, uint32_t max, uint32_t *k)
{
	uint32_t i, c;
	uint8_t *d;

	*k = 0;
	for (i = 0; i < n && len; i++) {
		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		c = sge[i].length - (uint32_t)off;
		if (c > len)
			c = len;
		d = sge_piece(dev, pd, &sge[i], IBV_ACCESS_LOCAL_WRITE, off, c);
		if (d == NULL)
			return -EPERM;
		if (*k < max) {
			dst[*k] = d + off;
			cnt[(*k)++] = c;
		}
		len -= c;
		off = 0;
	}
	return len ? -EMSGSIZE : 0;
}

int
tp_sge_room(struct droce_dev *dev, struct droce_pd *pd,
		const struct ibv_sge *sge, uint32_t n, uint64_t off, uint32_t len)
{
	uint32_t k;

	return sge_walk(dev, pd, sge, n, off, len, NULL, NULL, 0, &k);
}

/*
 * Scatter len bytes into an SGE list at byte offset off. Every piece is
 * resolved and checked before the first byte is written, so that a
 * rejected packet (a bad lkey, a buffer too short) leaves memory as it
 * was: -EPERM or -EMSGSIZE, and nothing copied.
 */
int
tp_sge_copy_in_list(struct droce_dev *dev, struct droce_pd *pd,
		const struct ibv_sge *sge, uint32_t n, uint64_t off,
		const uint8_t *src, uint32_t len)
{
	uint8_t *dst[TP_SGE_PIECES];
	uint32_t cnt[TP_SGE_PIECES];
	uint32_t i, k;
	int rc;

	rc = sge_walk(dev, pd, sge, n, off, len, dst, cnt, TP_SGE_PIECES, &k);
	/* all checked: copy, TP_SGE_PIECES at a time past a long list */
	while (rc == 0 && len) {
		for (i = 0; i < k; i++) {
			memcpy(dst[i], src, cnt[i]);
			src += cnt[i];
			off += cnt[i];
			len -= cnt[i];
		}
		if (len)
			sge_walk(dev, pd, sge, n, off, len, dst, cnt,
				TP_SGE_PIECES, &k);
	}
	return rc;
}
