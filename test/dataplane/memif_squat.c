/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * memif_squat EAL-ARGS -- SECONDS: probe the net_memif server port the EAL
 * arguments name and never start it, for SECONDS, then close it (which
 * removes its socket). A net_memif client connecting meanwhile is refused
 * ("ID not found") and, in DPDK 22.11, never tries again by itself: the
 * window a real server is in between probing its port and starting it.
 * embed-pair.sh's "squat" mode puts droce's client in that window.
 */

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_ethdev.h>

int
main(int argc, char **argv)
{
	uint16_t port;
	int n, secs;

	n = rte_eal_init(argc, argv);
	if (n < 0) {
		fprintf(stderr, "memif_squat: EAL init failed\n");
		return 1;
	}
	argc -= n;
	argv += n;
	secs = argc > 1 ? atoi(argv[1]) : 3;
	if (rte_eth_dev_count_avail() == 0) {
		fprintf(stderr, "memif_squat: no port\n");
		return 1;
	}
	printf("memif_squat: holding the socket for %d s\n", secs);
	fflush(stdout);
	sleep((unsigned int)secs);
	RTE_ETH_FOREACH_DEV(port)
		rte_eth_dev_close(port);
	rte_eal_cleanup();
	printf("memif_squat: gone\n");
	return 0;
}
