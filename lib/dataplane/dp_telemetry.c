/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * Counters through rte_telemetry, so Debian's dpdk-telemetry.py (or any
 * client of the process's telemetry socket) reads them while droce runs:
 *   /droce/ports             the ports of this process
 *   /droce/port/stats,N      port N: NIC, queues summed, faults injected
 *   /droce/queue/stats,N.Q   queue Q of port N: transport counters
 *   /droce/qps,N             the QPNs in use on port N
 *   /droce/qp/stats,N.QPN    that QP's counters
 * Reading takes the queue lock briefly: counters are owned by the queue.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_telemetry.h>

#include "dp_internal.h"

#define MAX_PORTS 8

static struct droce_port *ports[MAX_PORTS];
static rte_spinlock_t reg_lock = RTE_SPINLOCK_INITIALIZER;
static int registered;

static void
add_tp_stats(struct rte_tel_data *d, const struct droce_tp_stats *st)
{
	static const char *const perr[DROCE_WIRE_ERR_COUNT] = {
		NULL, "drop_truncated", "drop_ethertype", "drop_ip_version",
		"drop_ip_proto", "drop_udp_port", "drop_ip_length",
		"drop_ip_csum", "drop_tver", "drop_opcode", "drop_transport",
		"drop_ext_hdr", "drop_padcnt", "drop_mtu", "drop_icrc",
		"drop_udp_csum", "drop_length",
	};
	int i;

#define U(name) rte_tel_data_add_dict_u64(d, #name, st->name)
	U(rx_pkts); U(rx_bytes); U(tx_pkts); U(tx_bytes);
	U(rx_drop_noqp); U(rx_drop_state); U(rx_drop_qkey); U(rx_drop_uc);
	U(rx_drop_mac); U(rx_drop_mcast); U(rx_drop_ip); U(rx_drop_src);
	U(rx_drop_len);
	U(retransmits); U(timeouts); U(rewinds);
	U(nak_seq_tx); U(nak_seq_rx); U(nak_inv_tx); U(nak_inv_rx);
	U(nak_acc_tx); U(nak_acc_rx); U(nak_op_tx); U(nak_op_rx);
	U(rnr_nak_tx); U(rnr_nak_rx); U(dup_rx); U(out_of_seq_rx);
	U(acks_tx); U(acks_rx); U(read_replays); U(atomic_replays);
	U(flushes); U(flush_errors); U(flush_rxe_icrc);
	U(cq_overflows); U(tx_zc_pkts);
	U(timeouts_charged); U(dup_req_rx);
	U(resent_pkts); U(sr_held); U(sack_tx); U(sack_rx);
	U(np_ecn_marked); U(np_cnp_sent); U(rp_cnp_handled); U(rp_cnp_ignored);
#undef U
	/* the same under mlx5's names, which operators' tooling reads
	 * (doc/transport.md, "Counters") */
	rte_tel_data_add_dict_u64(d, "out_of_sequence", st->out_of_seq_rx);
	rte_tel_data_add_dict_u64(d, "packet_seq_err", st->nak_seq_rx);
	rte_tel_data_add_dict_u64(d, "local_ack_timeout_err",
		st->timeouts_charged);
	rte_tel_data_add_dict_u64(d, "duplicate_request", st->dup_req_rx);
	rte_tel_data_add_dict_u64(d, "roce_adp_retrans",
		st->timeouts - st->timeouts_charged);
	rte_tel_data_add_dict_u64(d, "roce_adp_retrans_to", st->timeouts);
	rte_tel_data_add_dict_u64(d, "roce_slow_restart", st->slow_restart);
	rte_tel_data_add_dict_u64(d, "np_ecn_marked_roce_packets",
		st->np_ecn_marked);
	for (i = 1; i < DROCE_WIRE_ERR_COUNT; i++)
		rte_tel_data_add_dict_u64(d, perr[i], st->rx_drop_parse[i]);
}

static struct droce_port *
port_arg(const char *params, uint32_t *q)
{
	char *end;
	long n;

	if (params == NULL || *params == 0)
		n = 0;
	else
		n = strtol(params, &end, 10);
	if (n < 0 || n >= MAX_PORTS || ports[n] == NULL)
		return NULL;
	if (q != NULL) {
		*q = 0;
		if (params && (end = strchr(params, '.')) != NULL)
			*q = (uint32_t)strtoul(end + 1, NULL, 10);
		if (*q >= ports[n]->nb_queues)
			return NULL;
	}
	return ports[n];
}

static int
tel_ports(const char *cmd, const char *params, struct rte_tel_data *d)
{
	int i;

	(void)cmd;
	(void)params;
	rte_tel_data_start_array(d, RTE_TEL_STRING_VAL);
	for (i = 0; i < MAX_PORTS; i++)
		if (ports[i])
			rte_tel_data_add_array_string(d, ports[i]->name);
	return 0;
}

static void
add_nic_stats(struct rte_tel_data *d, const struct droce_port_queue_stats *s)
{
	rte_tel_data_add_dict_u64(d, "nic_rx_pkts", s->rx_pkts);
	rte_tel_data_add_dict_u64(d, "nic_tx_pkts", s->tx_pkts);
	rte_tel_data_add_dict_u64(d, "nic_rx_bursts", s->rx_bursts);
	rte_tel_data_add_dict_u64(d, "nic_tx_bursts", s->tx_bursts);
	rte_tel_data_add_dict_u64(d, "nic_tx_drops", s->tx_drops);
	rte_tel_data_add_dict_u64(d, "nic_tx_kicks", s->tx_kicks);
	rte_tel_data_add_dict_u64(d, "handoffs", s->handoffs);
	rte_tel_data_add_dict_u64(d, "handoff_drops", s->handoff_drops);
	rte_tel_data_add_dict_u64(d, "non_roce", s->non_roce);
	rte_tel_data_add_dict_u64(d, "arp", s->arp);
	/* zero-copy frames copied after all for want of mbufs */
	rte_tel_data_add_dict_u64(d, "tx_zc_copied", s->tx_zc_copied);
	rte_tel_data_add_dict_u64(d, "nic_tx_ip_csum",
		s->tx_ip_csum_offloaded);
	rte_tel_data_add_dict_u64(d, "nic_tx_tso", s->tx_tso_offloaded);
	rte_tel_data_add_dict_u64(d, "nic_tx_tso_drops", s->tx_tso_drops);
	rte_tel_data_add_dict_u64(d, "loopback", s->loopback);
	rte_tel_data_add_dict_u64(d, "loopback_drops", s->loopback_drops);
	rte_tel_data_add_dict_u64(d, "awaited_passes", s->awaited_passes);
	rte_tel_data_add_dict_u64(d, "awaited_naps", s->awaited_naps);
}

static int
tel_port_stats(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct droce_port *p = port_arg(params, NULL);
	struct droce_tp_stats sum, st;
	struct droce_port_queue_stats nic, qs;
	uint32_t i, k;

	(void)cmd;
	if (p == NULL)
		return -EINVAL;
	memset(&sum, 0, sizeof(sum));
	memset(&nic, 0, sizeof(nic));
	/* every queue's transport counters first, the NIC's after: a frame
	 * the transport counted (on whichever queue it was handed to) the
	 * NIC counted before, so a reader never sees more received than
	 * the NIC took while traffic runs */
	for (i = 0; i < p->nb_queues; i++) {
		rte_spinlock_lock(&p->q[i].lock);
		droce_tp_queue_stats(p->q[i].tq, &st);
		rte_spinlock_unlock(&p->q[i].lock);
		for (k = 0; k < sizeof(st) / sizeof(uint64_t); k++)
			((uint64_t *)&sum)[k] += ((uint64_t *)&st)[k];
	}
	for (i = 0; i < p->nb_queues; i++) {
		droce_port_queue_stats(p, i, &qs);
		for (k = 0; k < sizeof(qs) / sizeof(uint64_t); k++)
			((uint64_t *)&nic)[k] += ((uint64_t *)&qs)[k];
	}
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_string(d, "name", p->name);
	rte_tel_data_add_dict_u64(d, "port_id", p->port_id);
	rte_tel_data_add_dict_u64(d, "queues", p->nb_queues);
	/* how the NIC filters: nic_mac, promiscuous or rte_flow */
	rte_tel_data_add_dict_string(d, "rx_filter", dp_filter_mode_name(p));
	/* multicast groups: none, nic_list, allmulticast or pmd_default */
	rte_tel_data_add_dict_string(d, "mc_filter", dp_filter_mc_name(p));
	rte_tel_data_add_dict_u64(d, "mc_macs", p->mc_macs);
	add_nic_stats(d, &nic);
	/* zero-copy transmit: from how many payload bytes (0: off) */
	rte_tel_data_add_dict_u64(d, "tx_zc_min", p->zc_min);
	rte_spinlock_lock(&p->fault_lock);
	rte_tel_data_add_dict_u64(d, "fault_rx_dropped", p->frx.st.dropped);
	rte_tel_data_add_dict_u64(d, "fault_rx_duplicated", p->frx.st.duplicated);
	rte_tel_data_add_dict_u64(d, "fault_rx_reordered", p->frx.st.reordered);
	rte_tel_data_add_dict_u64(d, "fault_rx_corrupted", p->frx.st.corrupted);
	rte_tel_data_add_dict_u64(d, "fault_rx_delayed", p->frx.st.delayed);
	rte_tel_data_add_dict_u64(d, "fault_tx_dropped", p->ftx.st.dropped);
	rte_tel_data_add_dict_u64(d, "fault_tx_duplicated", p->ftx.st.duplicated);
	rte_tel_data_add_dict_u64(d, "fault_tx_reordered", p->ftx.st.reordered);
	rte_tel_data_add_dict_u64(d, "fault_tx_corrupted", p->ftx.st.corrupted);
	rte_tel_data_add_dict_u64(d, "fault_tx_delayed", p->ftx.st.delayed);
	rte_spinlock_unlock(&p->fault_lock);
	add_tp_stats(d, &sum);
	return 0;
}

static int
tel_queue_stats(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct droce_port_queue_stats nic;
	struct droce_tp_stats st;
	struct droce_port *p;
	uint32_t q;

	(void)cmd;
	p = port_arg(params, &q);
	if (p == NULL)
		return -EINVAL;
	/* the transport's first, as tel_port_stats reads them */
	rte_spinlock_lock(&p->q[q].lock);
	droce_tp_queue_stats(p->q[q].tq, &st);
	rte_spinlock_unlock(&p->q[q].lock);
	droce_port_queue_stats(p, q, &nic);
	rte_tel_data_start_dict(d);
	add_nic_stats(d, &nic);
	add_tp_stats(d, &st);
	return 0;
}

static int
tel_qps(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct droce_port *p = port_arg(params, NULL);
	uint32_t qpns[256], n, i;

	(void)cmd;
	if (p == NULL)
		return -EINVAL;
	n = droce_dev_qpns(p->dev, qpns, RTE_DIM(qpns));
	rte_tel_data_start_array(d, RTE_TEL_U64_VAL);
	for (i = 0; i < n && i < RTE_DIM(qpns); i++)
		rte_tel_data_add_array_u64(d, qpns[i]);
	return 0;
}

static int
tel_qp_stats(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct droce_port *p = port_arg(params, NULL);
	struct droce_tp_stats st;
	struct droce_qp_cc cc;
	const char *dot;
	uint32_t qpn, q;
	int rc;

	(void)cmd;
	dot = params != NULL ? strchr(params, '.') : NULL;
	if (p == NULL || dot == NULL)
		return -EINVAL;
	qpn = (uint32_t)strtoul(dot + 1, NULL, 0);
	q = droce_qpn_queue(p->dev, qpn);
	if (q >= p->nb_queues)
		return -EINVAL;
	/* the queue's lock: the QP cannot be destroyed meanwhile */
	rte_spinlock_lock(&p->q[q].lock);
	rc = droce_dev_qp_stats(p->dev, qpn, &st);
	if (rc == 0)
		rc = droce_dev_qp_cc(p->dev, qpn, &cc);
	rte_spinlock_unlock(&p->q[q].lock);
	if (rc)
		return -EINVAL;
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_u64(d, "qpn", qpn);
	rte_tel_data_add_dict_u64(d, "queue", q);
	add_tp_stats(d, &st);
	/* DCQCN: paced or not, the rate now and its target, alpha */
	rte_tel_data_add_dict_u64(d, "cc_limited", cc.limited);
	rte_tel_data_add_dict_u64(d, "cc_rate_mbps", cc.rate_mbps);
	rte_tel_data_add_dict_u64(d, "cc_target_mbps", cc.target_mbps);
	rte_tel_data_add_dict_u64(d, "cc_alpha", cc.alpha);
	return 0;
}

void
dp_telemetry_register(struct droce_port *p)
{
	int i;

	rte_spinlock_lock(&reg_lock);
	for (i = 0; i < MAX_PORTS; i++) {
		if (ports[i] == NULL) {
			ports[i] = p;
			break;
		}
	}
	if (!registered) {
		registered = 1;
		rte_telemetry_register_cmd("/droce/ports", tel_ports,
			"droce ports of this process");
		rte_telemetry_register_cmd("/droce/port/stats", tel_port_stats,
			"droce port counters. Parameter: port index");
		rte_telemetry_register_cmd("/droce/queue/stats", tel_queue_stats,
			"droce queue counters. Parameter: port.queue");
		rte_telemetry_register_cmd("/droce/qps", tel_qps,
			"QPNs in use on a droce port. Parameter: port index");
		rte_telemetry_register_cmd("/droce/qp/stats", tel_qp_stats,
			"droce QP counters. Parameter: port.qpn");
	}
	rte_spinlock_unlock(&reg_lock);
}

void
dp_telemetry_unregister(struct droce_port *p)
{
	int i;

	rte_spinlock_lock(&reg_lock);
	for (i = 0; i < MAX_PORTS; i++)
		if (ports[i] == p)
			ports[i] = NULL;
	rte_spinlock_unlock(&reg_lock);
}
