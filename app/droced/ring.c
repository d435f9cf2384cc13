/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * The one way droced takes what an application wrote into a ring of its
 * region: work queues (SQ, RQ, SRQ, a GSI proxy's) and doorbell rings.
 * The producer index is read once and bounded: more than the ring holds
 * is a scribbled index, and then nothing of it is taken (our index
 * catches up with it) and the caller refuses the ring's owner, the same
 * way for every ring. A slot is copied whole into the caller's memory
 * (at most DROCE_CHAN_SLOT_MAX bytes, the limit dd_wq_alloc holds every
 * ring to) before anyone looks at it; our own index is never read back
 * from the region.
 */

#include <string.h>

#include "droced.h"

int64_t
dd_wq_avail(struct dd_wq *wq)
{
	uint32_t prod;

	/* cleared before prod is read: a post after this rings again */
	__atomic_store_n(&wq->sh->rung, 0, __ATOMIC_SEQ_CST);
	prod = __atomic_load_n(&wq->sh->prod, __ATOMIC_ACQUIRE);
	if (prod - wq->cons > wq->size) {
		wq->cons = prod;
		dd_wq_publish(wq);
		return -1;
	}
	return (int64_t)(prod - wq->cons);
}

void
dd_wq_copy(const struct dd_wq *wq, union dd_slot *out)
{
	memcpy(out->b, wq->slots + (size_t)(wq->cons & (wq->size - 1)) *
		wq->slot, wq->slot);
}

void
dd_wq_publish(struct dd_wq *wq)
{
	__atomic_store_n(&wq->sh->cons, wq->cons, __ATOMIC_RELEASE);
}

int64_t
dd_db_avail(struct dd_app *a, uint32_t q)
{
	uint32_t prod = __atomic_load_n(&a->db[q]->prod, __ATOMIC_ACQUIRE);

	if (prod - a->db_cons[q] > DROCE_CHAN_DB_SIZE) {
		a->db_cons[q] = prod;
		__atomic_store_n(&a->db[q]->cons, prod, __ATOMIC_RELEASE);
		return -1;
	}
	return (int64_t)(prod - a->db_cons[q]);
}

uint32_t
dd_db_take(struct dd_app *a, uint32_t q)
{
	uint32_t e = __atomic_load_n(&a->db[q]->ring[a->db_cons[q] &
		(DROCE_CHAN_DB_SIZE - 1)], __ATOMIC_RELAXED);

	a->db_cons[q]++;
	return e;
}

void
dd_db_publish(struct dd_app *a, uint32_t q)
{
	__atomic_store_n(&a->db[q]->cons, a->db_cons[q], __ATOMIC_RELEASE);
}
