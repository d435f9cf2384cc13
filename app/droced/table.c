/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * An application's handles (small integers, one table per kind of
 * object) and the heap of its shared region, from which its rings come.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "droced.h"
#include "ctl.h"

int
dd_table_init(struct dd_table *t, uint32_t cap)
{
	memset(t, 0, sizeof(*t));
	t->slot = calloc(cap ? cap : 1, sizeof(*t->slot));
	if (t->slot == NULL)
		return -ENOMEM;
	t->cap = cap;
	return 0;
}

void
dd_table_fini(struct dd_table *t)
{
	free(t->slot);
	memset(t, 0, sizeof(*t));
}

/* -ENOMEM at the limit. */
int
dd_table_add(struct dd_table *t, void *p, uint32_t *handle)
{
	uint32_t i, k;

	if (t->n >= t->cap)
		return -ENOMEM;
	for (k = 0; k < t->cap; k++) {
		i = (t->hint + k) % t->cap;
		if (t->slot[i] == NULL) {
			__atomic_store_n(&t->slot[i], p, __ATOMIC_RELEASE);
			t->n++;
			t->hint = i + 1;
			*handle = i;
			return 0;
		}
	}
	return -ENOMEM;
}

/* NULL for a handle out of range or free: handles come from the
 * application and are checked here. */
void *
dd_table_get(const struct dd_table *t, uint32_t handle)
{
	if (handle >= t->cap)
		return NULL;
	return __atomic_load_n(&t->slot[handle], __ATOMIC_ACQUIRE);
}

void
dd_table_del(struct dd_table *t, uint32_t handle)
{
	if (handle < t->cap && t->slot[handle] != NULL) {
		__atomic_store_n(&t->slot[handle], NULL, __ATOMIC_RELEASE);
		t->n--;
	}
}

/* First fit over pages; rings are few and long-lived. */
int
dd_heap_alloc(struct dd_app *a, uint64_t bytes, uint64_t *off)
{
	uint32_t need = (uint32_t)((bytes + DD_PAGE - 1) / DD_PAGE), run = 0, i;
	uint32_t first = DROCE_CHAN_HEAP_OFF / DD_PAGE;

	if (bytes == 0 || bytes > a->region_size)
		return -ENOMEM;
	for (i = first; i < a->heap_pages; i++) {
		run = a->heap_map[i] ? 0 : run + 1;
		if (run == need) {
			uint32_t s = i + 1 - need;

			memset(a->heap_map + s, 1, need);
			*off = (uint64_t)s * DD_PAGE;
			/* a ring starts clean: indexes 0 */
			memset((uint8_t *)a->region + *off, 0,
				(size_t)need * DD_PAGE);
			return 0;
		}
	}
	return -ENOMEM;
}

void
dd_heap_free(struct dd_app *a, uint64_t off, uint64_t bytes)
{
	uint32_t s = (uint32_t)(off / DD_PAGE);
	uint32_t n = (uint32_t)((bytes + DD_PAGE - 1) / DD_PAGE);

	if (off == 0 || s + n > a->heap_pages)
		return;
	memset(a->heap_map + s, 0, n);
}

uint32_t
dd_pow2(uint32_t v)
{
	uint32_t p = 1;

	while (p < v && p < (1u << 31))
		p <<= 1;
	return p;
}
