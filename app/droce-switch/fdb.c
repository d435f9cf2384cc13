/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * The forwarding table: source MACs learned on ingress, looked up by
 * destination on the way out. A test fabric has a handful of hosts, so
 * a small open-addressed table with no ageing is enough; a MAC seen on
 * another port moves there (a host that came back on a new port).
 */

#include <string.h>

#include <rte_jhash.h>

#include "switch.h"

#define FDB_SIZE 1024	/* a power of two; full: new MACs are flooded */

static struct {
	struct rte_ether_addr mac;
	uint16_t port;
	uint8_t used;
} fdb[FDB_SIZE];

static uint32_t
slot(const struct rte_ether_addr *mac)
{
	return rte_jhash(mac, RTE_ETHER_ADDR_LEN, 0) & (FDB_SIZE - 1);
}

void
sw_fdb_learn(const struct rte_ether_addr *mac, uint16_t port)
{
	uint32_t i, s = slot(mac);

	if (!rte_is_unicast_ether_addr(mac))
		return;
	for (i = 0; i < FDB_SIZE; i++, s = (s + 1) & (FDB_SIZE - 1)) {
		if (!fdb[s].used) {
			fdb[s].mac = *mac;
			fdb[s].used = 1;
			fdb[s].port = port;
			return;
		}
		if (rte_is_same_ether_addr(&fdb[s].mac, mac)) {
			fdb[s].port = port;
			return;
		}
	}
}

/* The port a MAC was learned on, or -1: flood. */
int
sw_fdb_lookup(const struct rte_ether_addr *mac)
{
	uint32_t i, s = slot(mac);

	if (!rte_is_unicast_ether_addr(mac))
		return -1;
	for (i = 0; i < FDB_SIZE && fdb[s].used;
			i++, s = (s + 1) & (FDB_SIZE - 1))
		if (rte_is_same_ether_addr(&fdb[s].mac, mac))
			return fdb[s].port;
	return -1;
}
