/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * Memory an application can shrink under us. A SysV shared-memory
 * segment cannot be sealed, and its owner can truncate it (through
 * /proc/self/map_files, say): our next access to a page past its new end
 * would raise SIGBUS and end droced for every application. Each mapping
 * of such a segment is therefore guarded: on SIGBUS inside one, the
 * handler maps anonymous memory over the page (a huge page for hugetlb)
 * and returns, so the access that faulted completes on zeroes; the
 * owner's session is ended by the main thread (dd_guard_hits). A SIGBUS
 * anywhere else is not ours: the default action, as without a handler.
 *
 * The table is read by the handler on whichever thread faulted: slots
 * are published and retired with atomics, and retired only when no
 * thread can be touching the range (the MR is off the data path).
 */

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "droced.h"

#define GUARD_MAX 8192

struct guard {
	uintptr_t start;	/* 0: free */
	uintptr_t end;
	uintptr_t page;		/* what the handler replaces at a time */
	uint32_t app_id;
	uint32_t hit;		/* the handler replaced a page */
};

static struct guard guards[GUARD_MAX];
static struct sigaction prev;
static uint32_t any_hit;

static void
on_sigbus(int sig, siginfo_t *si, void *uc)
{
	uintptr_t a = (uintptr_t)si->si_addr;
	uint32_t i;

	(void)uc;
	for (i = 0; si->si_code > 0 && i < GUARD_MAX; i++) {
		struct guard *g = &guards[i];
		uintptr_t s = __atomic_load_n(&g->start, __ATOMIC_ACQUIRE), p;

		if (s == 0 || a < s || a >= g->end)
			continue;
		p = a & ~(g->page - 1);
		if (mmap((void *)p, g->page, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED |
				MAP_NORESERVE, -1, 0) == MAP_FAILED)
			break;
		__atomic_store_n(&g->hit, 1, __ATOMIC_RELEASE);
		__atomic_store_n(&any_hit, 1, __ATOMIC_RELEASE);
		return;
	}
	/* not ours: what would have happened without us */
	sigaction(sig, &prev, NULL);
	if (si->si_code <= 0)
		raise(sig);	/* sent, not raised by an access */
}

int
dd_guard_init(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	return sigaction(SIGBUS, &sa, &prev) == 0 ? 0 : -errno;
}

int
dd_guard_add(void *start, size_t len, size_t page, uint32_t app_id)
{
	uint32_t i;

	for (i = 0; i < GUARD_MAX; i++) {
		struct guard *g = &guards[i];

		if (__atomic_load_n(&g->start, __ATOMIC_ACQUIRE) != 0)
			continue;
		g->end = (uintptr_t)start + len;
		g->page = page;
		g->app_id = app_id;
		g->hit = 0;
		__atomic_store_n(&g->start, (uintptr_t)start, __ATOMIC_RELEASE);
		return (int)i;
	}
	return -ENOSPC;
}

void
dd_guard_del(int slot)
{
	if (slot >= 0 && slot < GUARD_MAX)
		__atomic_store_n(&guards[slot].start, 0, __ATOMIC_RELEASE);
}

uint32_t
dd_guard_hits(uint32_t *ids, uint32_t max)
{
	uint32_t i, n = 0;

	if (!__atomic_exchange_n(&any_hit, 0, __ATOMIC_ACQ_REL))
		return 0;
	for (i = 0; i < GUARD_MAX && n < max; i++) {
		struct guard *g = &guards[i];

		if (__atomic_load_n(&g->start, __ATOMIC_ACQUIRE) != 0 &&
				__atomic_exchange_n(&g->hit, 0, __ATOMIC_ACQ_REL))
			ids[n++] = g->app_id;
	}
	if (n == max)	/* there may be more: look again next time */
		__atomic_store_n(&any_hit, 1, __ATOMIC_RELEASE);
	return n;
}
