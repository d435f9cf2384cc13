/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * droce's configuration keys (droce_conf.h): one reader for the verbs
 * drop-in and droced, so that a key means the same in both.
 */

#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "droce_conf.h"
#include "dp_internal.h"
#include "droce_wire.h"

static char conf_file_buf[8192];
static int conf_file_loaded;
static int conf_file_err;	/* why DROCE_CONF could not be read whole */

/* droce_conf_check names an unreadable file; nothing is printed here */
static void
conf_file_load(void)
{
	const char *path = getenv("DROCE_CONF");
	FILE *f;
	size_t n;

	conf_file_loaded = 1;
	if (path == NULL || path[0] == '\0')
		return;
	f = fopen(path, "r");
	if (f == NULL) {
		conf_file_err = errno;
		return;
	}
	n = fread(conf_file_buf, 1, sizeof(conf_file_buf) - 1, f);
	conf_file_buf[n] = '\0';
	if (ferror(f))
		conf_file_err = EIO;
	else if (n == sizeof(conf_file_buf) - 1 && fgetc(f) != EOF)
		conf_file_err = EFBIG;
	fclose(f);
}

const char *
dp_conf_file(const char **path, int *err)
{
	const char *p = getenv("DROCE_CONF");

	if (!conf_file_loaded)
		conf_file_load();
	*path = p != NULL && p[0] != '\0' ? p : NULL;
	*err = conf_file_err;
	return conf_file_buf;
}

const char *
droce_conf_get(const char *key)
{
	static __thread char val[512];
	const char *e = getenv(key), *line;
	size_t kl = strlen(key);

	if (e != NULL)
		return e;
	if (!conf_file_loaded)
		conf_file_load();
	for (line = conf_file_buf; *line; ) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);

		while (len && (*line == ' ' || *line == '\t')) {
			line++;
			len--;
		}
		if (len > kl && strncmp(line, key, kl) == 0 && line[kl] == '=') {
			size_t vl = len - kl - 1;

			if (vl >= sizeof(val))
				vl = sizeof(val) - 1;
			memcpy(val, line + kl + 1, vl);
			val[vl] = '\0';
			while (vl && (val[vl - 1] == ' ' || val[vl - 1] == '\r'))
				val[--vl] = '\0';
			return val;
		}
		line += len + (end ? 1 : 0);
	}
	return NULL;
}

static int
parse_mac(const char *s, uint8_t mac[6])
{
	unsigned int b[6];
	int i;

	if (s == NULL || sscanf(s, "%x:%x:%x:%x:%x:%x", &b[0], &b[1], &b[2],
			&b[3], &b[4], &b[5]) != 6)
		return -1;
	for (i = 0; i < 6; i++)
		mac[i] = (uint8_t)b[i];
	return 0;
}

/* key for port (port 0: key itself, port N: key_N); inherit: port N
 * takes port 0's value where key_N is unset (not for what names or
 * addresses a port) */
static const char *
port_get(const char *key, unsigned int port, int inherit)
{
	char k[64];
	const char *v;

	if (port == 0)
		return droce_conf_get(key);
	snprintf(k, sizeof(k), "%s_%u", key, port);
	v = droce_conf_get(k);
	if ((v == NULL || v[0] == '\0') && inherit)
		v = droce_conf_get(key);
	return v;
}

static void
copy_key(char *dst, size_t len, const char *key, unsigned int port,
		int inherit)
{
	const char *v = port_get(key, port, inherit);

	if (v != NULL)
		snprintf(dst, len, "%s", v);
}

void
droce_conf_load(struct droce_conf *c)
{
	droce_conf_load_port(c, 0);
}

int
droce_conf_nb_ports(char *err, size_t len)
{
	unsigned int n = 1, i;
	const char *v;

	for (i = 1; i < DROCE_CONF_MAX_PORTS; i++) {
		v = port_get("DROCE_DEVARGS", i, 0);
		if (v != NULL && v[0] != '\0')
			n = i + 1;
	}
	for (i = 1; i < n; i++) {
		v = port_get("DROCE_DEVARGS", i, 0);
		if (v == NULL || v[0] == '\0') {
			snprintf(err, len, "DROCE_DEVARGS_%u is set but not "
				"DROCE_DEVARGS_%u: ports are numbered from 1 "
				"without gaps", n - 1, i);
			return 0;
		}
	}
	return (int)n;
}

#define RP_FIELD(name, field, lo, hi, form, help) \
	{ "DROCE_RP_" #name, offsetof(struct droce_dcqcn_params, field) },
static const struct {
	const char *key;
	size_t off;
} rp_keys[] = { DP_RP_KEYS(RP_FIELD) };
#undef RP_FIELD

void
droce_conf_load_port(struct droce_conf *c, unsigned int port)
{
	const char *v;
	struct in_addr a;
	size_t i;

	memset(c, 0, sizeof(*c));
	snprintf(c->name, sizeof(c->name), "droce%u", port);
	copy_key(c->name, sizeof(c->name), "DROCE_NAME", port, 0);
	copy_key(c->devargs, sizeof(c->devargs), "DROCE_DEVARGS", port, 0);
	copy_key(c->eal, sizeof(c->eal), "DROCE_EAL", 0, 0);
	copy_key(c->fault, sizeof(c->fault), "DROCE_FAULT", port, 1);
	copy_key(c->fault_tx, sizeof(c->fault_tx), "DROCE_FAULT_TX", port, 1);
	v = port_get("DROCE_FAULT_CE", port, 1);
	c->fault_ce_ppm = v && v[0] ? (uint32_t)strtoul(v, NULL, 10) : 0;
	copy_key(c->neigh, sizeof(c->neigh), "DROCE_NEIGH", port, 0);
	/* droce_conf_check refuses what is malformed; empty is unset */
	v = port_get("DROCE_QUEUES", port, 1);
	c->queues = v && v[0] ? (uint32_t)strtoul(v, NULL, 10) : 1;
	if (c->queues == 0)
		c->queues = 1;
	v = port_get("DROCE_ZERO_COPY", port, 1);
	c->zc_min = v == NULL || v[0] == '\0' || strcmp(v, "auto") == 0 ?
		DROCE_ZC_AUTO : strcmp(v, "off") == 0 ||
		strtoul(v, NULL, 10) == 0 ? DROCE_ZC_OFF :
		(uint32_t)strtoul(v, NULL, 10);
	v = port_get("DROCE_IPV6", port, 0);
	if (v != NULL && inet_pton(AF_INET6, v, c->ipv6) == 1)
		c->has_ipv6 = 1;
	v = port_get("DROCE_IPV4", port, 0);
	if (v != NULL && inet_pton(AF_INET, v, &a) == 1)
		c->ipv4 = ntohl(a.s_addr);
	if (parse_mac(port_get("DROCE_MAC", port, 0), c->mac) != 0) {
		/* locally administered, unique per address */
		uint32_t v4 = c->ipv4 ? c->ipv4 : 1 + port;

		c->mac[0] = 0x02;
		c->mac[1] = 0x00;
		c->mac[2] = (uint8_t)(v4 >> 24);
		c->mac[3] = (uint8_t)(v4 >> 16);
		c->mac[4] = (uint8_t)(v4 >> 8);
		c->mac[5] = (uint8_t)v4;
	}
	v = port_get("DROCE_MTU", port, 1);
	c->mtu = v && v[0] ? (uint32_t)strtoul(v, NULL, 10) : 1500;
	v = droce_conf_get("DROCE_ECN");
	c->no_ecn = v != NULL && strcmp(v, "0") == 0;
	v = droce_conf_get("DROCE_NP_MIN_TIME_BETWEEN_CNPS");
	/* microseconds; 0 asks for no gap: 1 ns */
	c->np_gap_ns = v && v[0] ? (uint32_t)strtoul(v, NULL, 10) * 1000 : 0;
	if (v && v[0] && c->np_gap_ns == 0)
		c->np_gap_ns = 1;
	v = droce_conf_get("DROCE_NP_CNP_DSCP");
	c->np_cnp_dscp = v && v[0] ? (uint8_t)strtoul(v, NULL, 10) : 0;
	v = droce_conf_get("DROCE_CC");
	c->cc = v == NULL ? DROCE_CC_DCQCN : strcmp(v, "none") == 0 ?
		DROCE_CC_NONE : strcmp(v, "delay") == 0 ? DROCE_CC_DELAY :
		DROCE_CC_DCQCN;
	v = droce_conf_get("DROCE_CC_DELAY_TARGET_US");
	c->delay_target_ns = v && v[0] ?
		(uint32_t)strtoul(v, NULL, 10) * 1000 : 0;
	v = droce_conf_get("DROCE_CC_DELAY_AI");
	c->delay_ai_mbps = v && v[0] ? (uint32_t)strtoul(v, NULL, 10) : 0;
	v = droce_conf_get("DROCE_CC_LINE_RATE");
	c->line_rate_mbps = v && v[0] ? (uint32_t)strtoul(v, NULL, 10) : 0;
	droce_dcqcn_params_default(&c->dcqcn);
	for (i = 0; i < RTE_DIM(rp_keys); i++) {
		v = droce_conf_get(rp_keys[i].key);
		if (v == NULL || v[0] == '\0')
			continue;
		*(uint32_t *)((char *)&c->dcqcn + rp_keys[i].off) =
			(uint32_t)strtoul(v, NULL, 10);
		c->dcqcn_set = 1;
	}
	v = droce_conf_get("DROCE_RXE_FLUSH_ICRC");
	c->rxe_flush_icrc = v != NULL && strcmp(v, "1") == 0;
	v = droce_conf_get("DROCE_RTO_MIN_US");
	c->rto_min_us = v && v[0] ? (uint32_t)strtoul(v, NULL, 10) : 0;
	v = droce_conf_get("DROCE_SELECTIVE_REPEAT");
	c->selective_repeat = v == NULL ? DROCE_SR_OFF :
		strcmp(v, "1") == 0 ? DROCE_SR_ALL :
		strcmp(v, "cm") == 0 ? DROCE_SR_CM : DROCE_SR_OFF;
	v = droce_conf_get("DROCE_SR_WINDOW");
	c->sr_window = v && v[0] ? (uint32_t)strtoul(v, NULL, 10) : 0;
}

static void
default_eal(char *buf, size_t len, const char *extra)
{
	cpu_set_t cpus;
	int cpu = 0, i;

	/* The main lcore on a CPU the process may use; EAL's own threads
	 * sleep, and droce keeps the application's affinity. */
	if (sched_getaffinity(0, sizeof(cpus), &cpus) == 0)
		for (i = 0; i < CPU_SETSIZE; i++)
			if (CPU_ISSET(i, &cpus)) {
				cpu = i;
				break;
			}
	/* telemetry's INFO line about its legacy socket is noise */
	snprintf(buf, len, "--in-memory --no-pci -l %d --log-level=lib.eal:4 "
		"--log-level=pmd:4 --log-level=user1:4 "
		"--log-level=lib.telemetry:4 %s", cpu, extra);
}

/* "drop,dup,reorder,corrupt[,frames]", the rates in ppm */
static void
fault_parse(const char *s, struct droce_fault_conf *f, uint64_t salt)
{
	unsigned int dr = 0, du = 0, re = 0, co = 0;
	unsigned long long frames = 0;

	if (s[0] == '\0')
		return;
	sscanf(s, "%u,%u,%u,%u,%llu", &dr, &du, &re, &co, &frames);
	f->frames = frames;
	f->drop_ppm = dr;
	f->dup_ppm = du;
	f->reorder_ppm = re;
	f->corrupt_ppm = co;
	f->seed = (uint64_t)getpid() * 2654435761u + salt;
}

void
droce_conf_port(const struct droce_conf *c, struct droce_port_conf *pc,
		enum droce_progress_mode mode, char *eal, size_t eal_len)
{
	droce_port_conf_init(pc);
	default_eal(eal, eal_len, c->eal);
	pc->eal_args = eal;
	pc->devargs = c->devargs;
	pc->nb_queues = c->queues;
	pc->mode = mode;
	pc->ipv4 = c->ipv4;
	memcpy(pc->mac, c->mac, 6);
	if (c->has_ipv6)
		memcpy(pc->ipv6, c->ipv6, 16);
	pc->mtu = c->mtu;
	pc->tx_zc_min = c->zc_min;
	pc->no_ecn = (uint8_t)c->no_ecn;
	pc->np_min_time_between_cnps_ns = c->np_gap_ns;
	pc->np_cnp_dscp = c->np_cnp_dscp;
	pc->cc = c->cc;
	pc->line_rate_mbps = c->line_rate_mbps;
	pc->dcqcn_set = c->dcqcn_set;
	pc->dcqcn = c->dcqcn;
	pc->delay_target_ns = c->delay_target_ns;
	pc->delay_ai_mbps = c->delay_ai_mbps;
	pc->rxe_flush_icrc = (uint8_t)c->rxe_flush_icrc;
	pc->rto_min_us = c->rto_min_us;
	pc->selective_repeat = (uint8_t)c->selective_repeat;
	pc->sr_window = c->sr_window;
	pc->name = c->name;
	fault_parse(c->fault, &pc->fault_rx, 1);
	pc->fault_rx.ce_ppm = c->fault_ce_ppm;
	if (c->fault_ce_ppm && pc->fault_rx.seed == 0)
		pc->fault_rx.seed = (uint64_t)getpid() * 2654435761u + 3;
	fault_parse(c->fault_tx, &pc->fault_tx, 2);
}

void
droce_conf_add_neighbors(struct droce_port *port, const struct droce_conf *c)
{
	char buf[sizeof(c->neigh)], *tok, *save = NULL;

	snprintf(buf, sizeof(buf), "%s", c->neigh);
	for (tok = strtok_r(buf, ", ", &save); tok;
			tok = strtok_r(NULL, ", ", &save)) {
		char *eq = strchr(tok, '=');
		uint8_t gid[16], mac[6];
		struct in_addr a;

		if (eq == NULL)
			continue;
		*eq = '\0';
		if (parse_mac(eq + 1, mac) != 0)
			continue;
		if (inet_pton(AF_INET, tok, &a) == 1)
			droce_gid_from_ipv4(gid, ntohl(a.s_addr));
		else if (inet_pton(AF_INET6, tok, gid) != 1)
			continue;
		droce_port_add_neighbor(port, gid, mac);
	}
}

/* What recovery did on the port's queues (with fault injection: the
 * tests check it). */
static void
recovery_report(struct droce_port *port, const struct droce_conf *c)
{
	struct droce_dev *dev = droce_port_dev(port);
	struct droce_tp_stats st, sum;
	uint32_t i, j;

	memset(&sum, 0, sizeof(sum));
	for (i = 0; dev != NULL && i < droce_dev_conf(dev)->nb_queues; i++) {
		const uint64_t *s = (const uint64_t *)&st;
		uint64_t *d = (uint64_t *)&sum;

		droce_port_lock(port, i);
		droce_tp_queue_stats(droce_dev_queue(dev, i), &st);
		droce_port_unlock(port, i);
		for (j = 0; j < sizeof(st) / sizeof(uint64_t); j++)
			d[j] += s[j];
	}
	fprintf(stderr, "droce: %s recovery: retransmits %" PRIu64
		" (one by one %" PRIu64 ") timeouts %" PRIu64 " sequence "
		"NAKs sent %" PRIu64 " taken %" PRIu64 "; selective repeat: "
		"held %" PRIu64 " SACKs sent %" PRIu64 " taken %" PRIu64 "\n",
		c->name, sum.retransmits, sum.resent_pkts, sum.timeouts,
		sum.nak_seq_tx, sum.nak_seq_rx, sum.sr_held, sum.sack_tx,
		sum.sack_rx);
	fprintf(stderr, "droce: %s congestion: CE-marked frames %" PRIu64
		" CNPs sent %" PRIu64 " CNPs handled %" PRIu64 " ignored %"
		PRIu64 " slow restarts %" PRIu64 "\n", c->name,
		sum.np_ecn_marked, sum.np_cnp_sent, sum.rp_cnp_handled,
		sum.rp_cnp_ignored, sum.slow_restart);
}

void
droce_conf_fault_report(struct droce_port *port, const struct droce_conf *c)
{
	struct droce_fault_stats rx, tx;

	if (!c->fault[0] && !c->fault_tx[0] && !c->fault_ce_ppm)
		return;
	droce_port_fault_stats(port, &rx, &tx);
	fprintf(stderr, "droce: %s fault injection: receive dropped %" PRIu64
		" duplicated %" PRIu64 " reordered %" PRIu64 " corrupted %"
		PRIu64 " delayed %" PRIu64 "; transmit dropped %" PRIu64
		" duplicated %" PRIu64 " reordered %" PRIu64 " corrupted %"
		PRIu64 " delayed %" PRIu64 "; CE-marked on receipt %" PRIu64
		"\n", c->name, rx.dropped, rx.duplicated, rx.reordered,
		rx.corrupted, rx.delayed, tx.dropped, tx.duplicated,
		tx.reordered, tx.corrupted, tx.delayed, rx.ce_marked);
	recovery_report(port, c);
}
