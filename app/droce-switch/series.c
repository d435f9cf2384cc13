/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * Per flow counters and the time series a plot is drawn from. The CSV
 * is in long form, one value a line:
 *
 *   time_us,what,id,value
 *
 * with what = qdepth (id: the queue's first port, bytes queued now),
 * port_tx (id: port, bytes sent so far), marked / dropped (id: queue's
 * first port, counts so far), flow_rx and flow_tx (id: the flow, bytes
 * that arrived, dropped or not, and bytes sent, so far). Cumulative
 * counts, so a reader gets rates from differences and a late sample
 * loses nothing.
 */

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "switch.h"

static struct sw_flow flows[SW_MAX_FLOWS];
static int nb_flows;
static FILE *series;

/* The frame's flow, made when new; -1 when the table is full (those
 * frames are counted by port only). Index + 1 goes in mbuf hash.usr. */
int
sw_flow_index(struct rte_mbuf *m)
{
	uint8_t key[40];
	char name[96];
	uint32_t n;
	int i;

	n = sw_frame_flow_key(m, key, name, sizeof(name));
	for (i = 0; i < nb_flows; i++)
		if (flows[i].key_len == n && memcmp(flows[i].key, key, n) == 0)
			return i;
	if (nb_flows == SW_MAX_FLOWS)
		return -1;
	memcpy(flows[nb_flows].key, key, n);
	flows[nb_flows].key_len = n;
	snprintf(flows[nb_flows].name, sizeof(flows[nb_flows].name), "%s",
		name);
	return nb_flows++;
}

struct sw_flow *
sw_flow_get(int idx)
{
	return idx >= 0 && idx < nb_flows ? &flows[idx] : NULL;
}

int
sw_series_open(const char *path)
{
	series = fopen(path, "w");
	if (series == NULL)
		return -errno;
	fprintf(series, "time_us,what,id,value\n");
	return 0;
}

void
sw_series_sample(uint64_t t_us, struct sw_port *ports, int nb_ports)
{
	int i;

	if (series == NULL)
		return;
	for (i = 0; i < nb_ports; i++) {
		struct sw_queue *q = ports[i].q;

		/* a shared queue is reported once, under its first port */
		if (q->owner == i)
			fprintf(series, "%" PRIu64 ",qdepth,%d,%" PRIu64 "\n"
				"%" PRIu64 ",marked,%d,%" PRIu64 "\n"
				"%" PRIu64 ",dropped,%d,%" PRIu64 "\n",
				t_us, i, q->bytes, t_us, i, q->marked,
				t_us, i, q->tail_drops + q->red_drops);
		fprintf(series, "%" PRIu64 ",port_tx,%d,%" PRIu64 "\n", t_us,
			i, ports[i].tx_bytes);
	}
	for (i = 0; i < nb_flows; i++)
		fprintf(series, "%" PRIu64 ",flow_rx,%s,%" PRIu64 "\n"
			"%" PRIu64 ",flow_tx,%s,%" PRIu64 "\n", t_us,
			flows[i].name, flows[i].rx_bytes, t_us, flows[i].name,
			flows[i].tx_bytes);
}

void
sw_series_close(void)
{
	if (series != NULL)
		fclose(series);
	series = NULL;
}

void
sw_flows_print(FILE *f)
{
	int i;

	for (i = 0; i < nb_flows; i++)
		fprintf(f, "flow %s: rx_bytes %" PRIu64 " tx_bytes %" PRIu64
			" marked %" PRIu64 " dropped %" PRIu64 "\n",
			flows[i].name, flows[i].rx_bytes, flows[i].tx_bytes,
			flows[i].marked, flows[i].dropped);
}
