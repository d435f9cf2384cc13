/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * droced in telemetry, beside the port's own /droce/ commands:
 *   /droced/stats        totals since start
 *   /droced/apps         the attached applications' ids
 *   /droced/app,ID       one application: who, what it holds, what it did
 */

#include <stdlib.h>
#include <string.h>

#include <rte_telemetry.h>

#include "droced.h"

static int
tel_stats(const char *cmd, const char *params, struct rte_tel_data *d)
{
	(void)cmd;
	(void)params;
	rte_tel_data_start_dict(d);
	pthread_mutex_lock(&dd.apps_lock);
	rte_tel_data_add_dict_u64(d, "apps", dd.nb_apps);
	pthread_mutex_unlock(&dd.apps_lock);
	rte_tel_data_add_dict_u64(d, "attached", dd.attached);
	rte_tel_data_add_dict_u64(d, "detached", dd.detached);
	rte_tel_data_add_dict_u64(d, "reclaimed_qps", dd.reclaimed_qps);
	rte_tel_data_add_dict_u64(d, "reclaimed_mrs", dd.reclaimed_mrs);
	rte_tel_data_add_dict_u64(d, "refused_peers", dd.refused_peers);
	/* past a limit of sessions (per user, per process, in all) */
	rte_tel_data_add_dict_u64(d, "refused_sessions", dd.refused_sessions);
	/* no HELLO in time, or closed to make room for a new session */
	rte_tel_data_add_dict_u64(d, "unbound_closed", dd.unbound_closed);
	rte_tel_data_add_dict_u64(d, "ports", dd.nb_ports);
	if (dd.ports[0].gsi != NULL) {
		uint64_t rx, tx, dropped, rejected, listeners, refused;

		dd_gsi_stats(&rx, &tx, &dropped, &rejected, &listeners,
			&refused);
		/* service IDs applications listen on (rdma_listen) */
		rte_tel_data_add_dict_u64(d, "cm_listeners", listeners);
		rte_tel_data_add_dict_u64(d, "cm_mads_rx", rx);
		rte_tel_data_add_dict_u64(d, "cm_mads_tx", tx);
		rte_tel_data_add_dict_u64(d, "cm_mads_dropped", dropped);
		/* MADs applications posted that QP1 does not send: another
		 * class, another's communication ID (gsi.c) */
		rte_tel_data_add_dict_u64(d, "cm_mads_refused", refused);
		/* REQs and SIDR REQs to no listener, answered */
		rte_tel_data_add_dict_u64(d, "cm_reqs_rejected", rejected);
	}
	return 0;
}

static int
tel_apps(const char *cmd, const char *params, struct rte_tel_data *d)
{
	uint32_t i;

	(void)cmd;
	(void)params;
	rte_tel_data_start_array(d, RTE_TEL_INT_VAL);
	pthread_mutex_lock(&dd.apps_lock);
	for (i = 0; i < dd.nb_apps; i++)
		rte_tel_data_add_array_int(d, (int)dd.apps[i]->id);
	pthread_mutex_unlock(&dd.apps_lock);
	return 0;
}

static void
app_dict(struct rte_tel_data *d, const struct dd_app *a)
{
	const struct dd_app_stats *st = &a->st;

	rte_tel_data_add_dict_u64(d, "id", a->id);
	rte_tel_data_add_dict_int(d, "pid", (int)a->pid);
	rte_tel_data_add_dict_u64(d, "uid", a->uid);
	rte_tel_data_add_dict_string(d, "comm", a->comm);
	{
		const struct dd_port *dp = __atomic_load_n(&a->dp, __ATOMIC_ACQUIRE);

		/* the device its session is on; "" before its HELLO */
		rte_tel_data_add_dict_string(d, "port", dp != NULL ? dp->conf.name : "");
	}
	rte_tel_data_add_dict_u64(d, "pds", a->pds.n);
	rte_tel_data_add_dict_u64(d, "mrs", a->mrs.n);
	rte_tel_data_add_dict_u64(d, "mr_bytes", st->mr_bytes);
	rte_tel_data_add_dict_u64(d, "cqs", a->cqs.n);
	rte_tel_data_add_dict_u64(d, "qps", a->qps.n);
	rte_tel_data_add_dict_u64(d, "srqs", a->srqs.n);
	rte_tel_data_add_dict_u64(d, "ahs", a->ahs.n);
	rte_tel_data_add_dict_u64(d, "channels", a->chans.n);
	rte_tel_data_add_dict_u64(d, "sq_wqes", st->sq_wqes);
	rte_tel_data_add_dict_u64(d, "rq_wqes", st->rq_wqes);
	rte_tel_data_add_dict_u64(d, "srq_wqes", st->srq_wqes);
	rte_tel_data_add_dict_u64(d, "cqes", st->cqes);
	rte_tel_data_add_dict_u64(d, "doorbells", st->doorbells);
	rte_tel_data_add_dict_u64(d, "events", st->events);
	rte_tel_data_add_dict_u64(d, "awaited_skips", st->awaited_skips);
	rte_tel_data_add_dict_u64(d, "spin_skips", st->spin_skips);
	rte_tel_data_add_dict_u64(d, "requests", st->requests);
	rte_tel_data_add_dict_u64(d, "refused_requests", st->refused_requests);
	rte_tel_data_add_dict_u64(d, "parked_requests", st->parked_requests);
	rte_tel_data_add_dict_u64(d, "replies_held", st->replies_held);
	rte_tel_data_add_dict_u64(d, "refused_wqes", st->refused_wqes);
}

static int
tel_app(const char *cmd, const char *params, struct rte_tel_data *d)
{
	uint32_t id, i;
	int found = 0;

	(void)cmd;
	if (params == NULL || *params == '\0')
		return -1;
	id = (uint32_t)strtoul(params, NULL, 0);
	rte_tel_data_start_dict(d);
	pthread_mutex_lock(&dd.apps_lock);
	for (i = 0; i < dd.nb_apps; i++)
		if (dd.apps[i]->id == id) {
			app_dict(d, dd.apps[i]);
			found = 1;
			break;
		}
	pthread_mutex_unlock(&dd.apps_lock);
	return found ? 0 : -1;
}

void
dd_telemetry_init(void)
{
	rte_telemetry_register_cmd("/droced/stats", tel_stats,
		"droced's totals since start");
	rte_telemetry_register_cmd("/droced/apps", tel_apps,
		"Ids of the attached applications");
	rte_telemetry_register_cmd("/droced/app", tel_app,
		"One application's objects and counters. Parameter: id");
}
