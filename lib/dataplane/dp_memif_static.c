/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * Linked only where DPDK is linked in statically (dpdk_static_sources
 * and dpdk_static_args' -Wl,--wrap=memif_free_regions: the drop-in
 * libibverbs.so.1 and droce-perf-static). net_memif's memif_disconnect
 * (memif_socket.c) frees and unmaps the shared regions with no regard for
 * a burst still reading them; its call comes here instead, and the
 * regions go while no droce burst runs (dp_memif.c, dp_port_track). A
 * shared DPDK (droced, droce-perf) binds that call inside the PMD, where
 * nothing can step in.
 */

#include "dp_internal.h"

struct rte_eth_dev;

void __real_memif_free_regions(struct rte_eth_dev *dev);
void __wrap_memif_free_regions(struct rte_eth_dev *dev);

void
__wrap_memif_free_regions(struct rte_eth_dev *dev)
{
	dp_memif_bursts_hold();
	__real_memif_free_regions(dev);
	dp_memif_bursts_release();
}
