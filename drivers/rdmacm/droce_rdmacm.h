/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

#ifndef DROCE_RDMACM_H
#define DROCE_RDMACM_H

/*
 * droce's own entry in its librdmacm.so.1 (version node DROCE_PRIVATE_1):
 * the CM agent's counters, for tests and tools. Look it up with dlsym;
 * rdma-core's librdmacm does not have it.
 */

#include <stdint.h>

struct droce_cm_stats {
	uint64_t rx_mads;		/* MADs received on QP1 */
	uint64_t tx_mads;		/* MADs sent, retransmissions included */
	uint64_t retransmits;
	uint64_t rx_drop_malformed;	/* not a CM Send MAD droce answers */
	uint64_t rx_drop_unknown;	/* no ID it belongs to (a REJ or DREP
					 * went back where the spec says) */
	uint64_t rx_drop_state;		/* not expected in the ID's state */
	uint64_t rx_drop_short;		/* shorter than a MAD, or no GRH */
	uint64_t tx_drop_nobuf;		/* every send buffer in flight */
	uint64_t timeouts;		/* retries exhausted */
	uint64_t rej_sent;
	uint64_t rx_drop_orphan;	/* a REQ or SIDR REQ to no listener,
					 * seen once */
	uint64_t rx_rej_retried;	/* "invalid service ID" to a REQ of
					 * ours (or "service ID not
					 * supported" to a SIDR REQ) in its
					 * grace: the request sent again */
	uint64_t disc_held;		/* DISCONNECTED kept until the
					 * completions before the DREQ were
					 * polled (cm_held.c) */
	uint64_t disc_hold_expired;	/* ... and not polled in time */
	uint64_t rx_drop_unresolved;	/* a MAD to answer from a source
					 * whose neighbour is not known
					 * (ARP/ND asked; the peer's
					 * retransmission is answered) */
};

int droce_cm_stats_get(struct droce_cm_stats *st);

#endif
