/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * droce-switch's counters through DPDK telemetry, while it runs:
 *
 *   /droce_switch/ports         the port ids
 *   /droce_switch/port,N        port N's counters
 *   /droce_switch/queue,N       the queue port N sends through
 *
 * The telemetry thread reads counters the polling lcore writes: each is
 * one aligned 64-bit word, read whole; a reply may mix two passes.
 */

#include <stdlib.h>
#include <string.h>

#include <rte_telemetry.h>

#include "switch.h"

static struct sw_port *tel_ports;
static int tel_nb_ports;

#define RD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

static int
port_param(const char *params)
{
	char *end;
	long p;

	if (params == NULL || *params == '\0')
		return -1;
	p = strtol(params, &end, 10);
	if (*end != '\0' || p < 0 || p >= tel_nb_ports)
		return -1;
	return (int)p;
}

static int
tel_list(const char *cmd, const char *params, struct rte_tel_data *d)
{
	int i;

	RTE_SET_USED(cmd);
	RTE_SET_USED(params);
	rte_tel_data_start_array(d, RTE_TEL_INT_VAL);
	for (i = 0; i < tel_nb_ports; i++)
		rte_tel_data_add_array_int(d, i);
	return 0;
}

static int
tel_port(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct sw_port *p;
	int i = port_param(params);

	RTE_SET_USED(cmd);
	if (i < 0)
		return -EINVAL;
	p = &tel_ports[i];
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_u64(d, "rx_frames", RD(p->rx_frames));
	rte_tel_data_add_dict_u64(d, "rx_bytes", RD(p->rx_bytes));
	rte_tel_data_add_dict_u64(d, "tx_frames", RD(p->tx_frames));
	rte_tel_data_add_dict_u64(d, "tx_bytes", RD(p->tx_bytes));
	rte_tel_data_add_dict_u64(d, "tx_held", RD(p->tx_held));
	rte_tel_data_add_dict_u64(d, "tx_fail", RD(p->tx_fail));
	rte_tel_data_add_dict_u64(d, "flooded", RD(p->flood));
	rte_tel_data_add_dict_u64(d, "link_ups", RD(p->link_ups));
	rte_tel_data_add_dict_u64(d, "link_downs", RD(p->link_downs));
	rte_tel_data_add_dict_u64(d, "queue", p->q->owner);
	return 0;
}

static int
tel_queue(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct sw_queue *q;
	int i = port_param(params);

	RTE_SET_USED(cmd);
	if (i < 0)
		return -EINVAL;
	q = tel_ports[i].q;
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_u64(d, "port", q->owner);
	rte_tel_data_add_dict_u64(d, "rate_mbps", q->c.rate_bps / 1000000);
	rte_tel_data_add_dict_u64(d, "buffer_bytes", q->c.buffer);
	rte_tel_data_add_dict_u64(d, "ecn", (uint64_t)q->c.ecn);
	rte_tel_data_add_dict_u64(d, "kmin_bytes", q->c.kmin);
	rte_tel_data_add_dict_u64(d, "kmax_bytes", q->c.kmax);
	rte_tel_data_add_dict_u64(d, "depth_bytes", RD(q->bytes));
	rte_tel_data_add_dict_u64(d, "max_depth_bytes", RD(q->max_bytes));
	rte_tel_data_add_dict_u64(d, "enq_frames", RD(q->enq_frames));
	rte_tel_data_add_dict_u64(d, "enq_bytes", RD(q->enq_bytes));
	rte_tel_data_add_dict_u64(d, "marked", RD(q->marked));
	rte_tel_data_add_dict_u64(d, "ce_seen", RD(q->ce_seen));
	rte_tel_data_add_dict_u64(d, "tail_drops", RD(q->tail_drops));
	rte_tel_data_add_dict_u64(d, "red_drops", RD(q->red_drops));
	return 0;
}

void
sw_telemetry_init(struct sw_port *ports, int nb_ports)
{
	tel_ports = ports;
	tel_nb_ports = nb_ports;
	rte_telemetry_register_cmd("/droce_switch/ports", tel_list,
		"droce-switch's port ids");
	rte_telemetry_register_cmd("/droce_switch/port", tel_port,
		"a port's counters. Parameters: int port_id");
	rte_telemetry_register_cmd("/droce_switch/queue", tel_queue,
		"the egress queue a port sends through: its settings, depth, "
		"marks and drops. Parameters: int port_id");
}
