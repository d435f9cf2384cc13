/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * An address vector from verbs' ah_attr: RoCE needs the GRH (the GID is
 * the address), the source GID must be one of the device's, and the MAC
 * comes from ARP/ND (or the static neighbours; for one of the port's own
 * GIDs, its own MAC: loopback).
 */

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>

#include "dp_internal.h"

int
droce_port_av_from_ah(struct droce_port *p, const struct ibv_ah_attr *ah,
		struct droce_av *av, uint32_t timeout_ms)
{
	const struct droce_dev_conf *dc = droce_dev_conf(droce_port_dev(p));
	int rc;

	if (!ah->is_global || ah->port_num > 1 ||
			ah->grh.sgid_index >= DROCE_MAX_GIDS ||
			!dc->gids[ah->grh.sgid_index].valid)
		return -EINVAL;
	memset(av, 0, sizeof(*av));
	memcpy(av->dgid, ah->grh.dgid.raw, 16);
	av->sgid_index = ah->grh.sgid_index;
	av->tclass = ah->grh.traffic_class;
	av->hop_limit = ah->grh.hop_limit ? ah->grh.hop_limit : 64;
	av->flow_label = ah->grh.flow_label;
	rc = droce_port_resolve(p, av->dgid, av->dmac, timeout_ms);
	if (rc != 0) {
		char s[INET6_ADDRSTRLEN];

		inet_ntop(AF_INET6, av->dgid, s, sizeof(s));
		DP_LOG(ERR, "no neighbour answers for %s", s);
		return -EHOSTUNREACH;
	}
	return 0;
}
