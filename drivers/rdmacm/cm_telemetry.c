/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * The CM agent's counters and its listening IDs on DPDK telemetry
 * (/droce/cm), for an in-process application: a script can tell when a
 * server listens (a REQ that comes earlier is answered with a REJ, as a
 * kernel's CM answers it), as droced's /droced/stats tells for attached
 * ones. The command lives in libibverbs, whose EAL serves the socket;
 * attached, no EAL starts and nobody asks.
 */

#include "cm_internal.h"
#include "droce_verbs.h"

static unsigned int
cm_counters(const char **names, uint64_t *values, unsigned int max)
{
	struct droce_cm_stats st;
	struct cm_id_priv *p;
	uint64_t listeners = 0, sr_on;
	unsigned int n = 0;

	pthread_mutex_lock(&cm.lock);
	for (p = cm.ids; p != NULL; p = p->next)
		listeners += p->state == CM_LISTEN;
	st = cm.st;
	sr_on = cm.st_sr_on;
	pthread_mutex_unlock(&cm.lock);
#define PUT(name, v) do { \
		if (n < max) { \
			names[n] = (name); \
			values[n++] = (v); \
		} \
	} while (0)
	PUT("listeners", listeners);
	PUT("rx_mads", st.rx_mads);
	PUT("tx_mads", st.tx_mads);
	PUT("retransmits", st.retransmits);
	PUT("rx_drop_malformed", st.rx_drop_malformed);
	PUT("rx_drop_unknown", st.rx_drop_unknown);
	PUT("rx_drop_state", st.rx_drop_state);
	PUT("rx_drop_short", st.rx_drop_short);
	PUT("tx_drop_nobuf", st.tx_drop_nobuf);
	PUT("timeouts", st.timeouts);
	PUT("disc_held", st.disc_held);
	PUT("disc_hold_expired", st.disc_hold_expired);
	PUT("rej_sent", st.rej_sent);
	PUT("rx_drop_orphan", st.rx_drop_orphan);
	PUT("rx_drop_unresolved", st.rx_drop_unresolved);
	PUT("rx_rej_retried", st.rx_rej_retried);
	/* QPs of this process that took selective repeat through the CM */
	PUT("sr_connections", sr_on);
#undef PUT
	return n;
}

static void __attribute__((constructor))
cm_telemetry_register(void)
{
	/* nothing to do about a failure: the counters stay unseen */
	(void)droce_telemetry_u64("/droce/cm",
		"The rdma_cm agent's counters and listening IDs. No parameters",
		cm_counters);
}
