/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * The data path behind a droce device: its configuration and the DPDK
 * port, started when the first context needs it (a PD or a CQ) and closed
 * when the last such context closes. ibv_devices and ibv_devinfo never
 * start it.
 *
 * Configuration: each key from the environment, else from the file named
 * by DROCE_CONF (lines KEY=VALUE, '#' comments):
 *   DROCE_DEVARGS  the DPDK device, e.g. net_memif0,role=server,socket=/x
 *   DROCE_EAL      EAL arguments (default: in-memory, no PCI, quiet)
 *   DROCE_QUEUES   queues (progress contexts), default 1
 *   DROCE_IPV6     an IPv6 address (GID 2)
 *   DROCE_NEIGH    static neighbours "IP=MAC[,IP=MAC...]"
 *   DROCE_FAULT    fault injection on receive "drop,dup,reorder,corrupt" ppm,
 *                  optionally ",frames": only the first that many frames
 *   DROCE_FAULT_TX the same on transmit
 *   DROCE_ZERO_COPY  send payloads of at least this many bytes from the MR
 *                  itself (external mbufs); "off", or "auto" (default:
 *                  512 on devices that DMA, off on virtual ones)
 * and the keys verbs_device.c reads (DROCE_NAME, DROCE_MAC, DROCE_IPV4,
 * DROCE_MTU).
 */

#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "verbs_internal.h"

static char conf_file_buf[8192];
static int conf_file_loaded;

static void
conf_file_load(void)
{
	const char *path = getenv("DROCE_CONF");
	FILE *f;
	size_t n;

	conf_file_loaded = 1;
	if (path == NULL || (f = fopen(path, "r")) == NULL) {
		if (path != NULL)
			fprintf(stderr, "droce: cannot read DROCE_CONF %s: %s\n",
				path, strerror(errno));
		return;
	}
	n = fread(conf_file_buf, 1, sizeof(conf_file_buf) - 1, f);
	conf_file_buf[n] = '\0';
	fclose(f);
}

/* The value of key: environment, else the configuration file, else NULL. */
const char *dv_conf_get(const char *key);

const char *
dv_conf_get(const char *key)
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

int
dv_conf_load(struct dv_device *d)
{
	struct dv_conf *c = &d->conf;
	const char *v;

	if ((v = dv_conf_get("DROCE_DEVARGS")) != NULL)
		snprintf(c->devargs, sizeof(c->devargs), "%s", v);
	if ((v = dv_conf_get("DROCE_EAL")) != NULL)
		snprintf(c->eal, sizeof(c->eal), "%s", v);
	if ((v = dv_conf_get("DROCE_FAULT")) != NULL)
		snprintf(c->fault, sizeof(c->fault), "%s", v);
	if ((v = dv_conf_get("DROCE_FAULT_TX")) != NULL)
		snprintf(c->fault_tx, sizeof(c->fault_tx), "%s", v);
	if ((v = dv_conf_get("DROCE_NEIGH")) != NULL)
		snprintf(c->neigh, sizeof(c->neigh), "%s", v);
	v = dv_conf_get("DROCE_QUEUES");
	c->queues = v ? (uint32_t)atoi(v) : 1;
	if (c->queues == 0)
		c->queues = 1;
	v = dv_conf_get("DROCE_ZERO_COPY");
	c->zc_min = v == NULL || strcmp(v, "auto") == 0 ? DROCE_ZC_AUTO :
		strcmp(v, "off") == 0 || atoi(v) <= 0 ? DROCE_ZC_OFF :
		(uint32_t)atoi(v);
	v = dv_conf_get("DROCE_IPV6");
	if (v != NULL && inet_pton(AF_INET6, v, c->ipv6) == 1)
		c->has_ipv6 = 1;
	return 0;
}

static int
parse_mac6(const char *s, uint8_t mac[6])
{
	unsigned int b[6];
	int i;

	if (sscanf(s, "%x:%x:%x:%x:%x:%x", &b[0], &b[1], &b[2], &b[3], &b[4],
			&b[5]) != 6)
		return -1;
	for (i = 0; i < 6; i++)
		mac[i] = (uint8_t)b[i];
	return 0;
}

static void
add_neighbors(struct dv_device *d)
{
	char buf[sizeof(d->conf.neigh)], *tok, *save = NULL;

	snprintf(buf, sizeof(buf), "%s", d->conf.neigh);
	for (tok = strtok_r(buf, ", ", &save); tok;
			tok = strtok_r(NULL, ", ", &save)) {
		char *eq = strchr(tok, '=');
		uint8_t gid[16], mac[6];
		struct in_addr a;

		if (eq == NULL)
			continue;
		*eq = '\0';
		if (parse_mac6(eq + 1, mac) != 0)
			continue;
		if (inet_pton(AF_INET, tok, &a) == 1)
			droce_gid_from_ipv4(gid, ntohl(a.s_addr));
		else if (inet_pton(AF_INET6, tok, gid) != 1)
			continue;
		droce_port_add_neighbor(d->port, gid, mac);
	}
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
	snprintf(buf, len, "--in-memory --no-pci -l %d --log-level=lib.eal:4 "
		"--log-level=pmd:4 --log-level=user1:4 %s", cpu, extra);
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

/* Start the port (first user) or take a reference. 0 or an errno. */
int
dv_port_get(struct dv_context *ctx)
{
	struct dv_device *d = ctx->dev;
	struct droce_port_conf pc;
	char eal[768];
	int rc = 0;

	if (ctx->uses_port)
		return 0;
	pthread_mutex_lock(&d->lock);
	if (d->port == NULL) {
		if (d->conf.devargs[0] == '\0') {
			fprintf(stderr, "droce: %s has no DPDK port: set "
				"DROCE_DEVARGS (or DROCE_CONF), e.g. "
				"net_memif0,role=server,socket=/run/droce.sock\n",
				d->ibdev.name);
			rc = ENODEV;
			goto out;
		}
		droce_port_conf_init(&pc);
		default_eal(eal, sizeof(eal), d->conf.eal);
		pc.eal_args = eal;
		pc.devargs = d->conf.devargs;
		pc.nb_queues = d->conf.queues;
		pc.mode = DROCE_PROGRESS_THREAD;
		pc.ipv4 = d->ipv4;
		memcpy(pc.mac, d->mac, 6);
		if (d->conf.has_ipv6)
			memcpy(pc.ipv6, d->conf.ipv6, 16);
		pc.mtu = d->mtu;
		pc.tx_zc_min = d->conf.zc_min;
		pc.name = d->ibdev.name;
		fault_parse(d->conf.fault, &pc.fault_rx, 1);
		fault_parse(d->conf.fault_tx, &pc.fault_tx, 2);
		d->port = droce_port_open(&pc);
		if (d->port == NULL) {
			rc = errno ? errno : ENODEV;
			fprintf(stderr, "droce: cannot open %s on %s: %s\n",
				d->ibdev.name, d->conf.devargs, strerror(rc));
			goto out;
		}
		d->tdev = droce_port_dev(d->port);
		d->nb_queues = d->conf.queues;
		droce_dev_set_async_cb(d->tdev, dv_async_cb, d);
		add_neighbors(d);
	}
	d->users++;
	ctx->uses_port = 1;
out:
	pthread_mutex_unlock(&d->lock);
	return rc;
}

/* With DROCE_FAULT(_TX) set, say at close what was done: whoever set it
 * wants to know that their program ran through the faults asked for. */
static void
fault_report(struct dv_device *d)
{
	struct droce_fault_stats rx, tx;

	droce_port_fault_stats(d->port, &rx, &tx);
	fprintf(stderr, "droce: %s fault injection: receive dropped %" PRIu64
		" duplicated %" PRIu64 " reordered %" PRIu64 " corrupted %"
		PRIu64 " delayed %" PRIu64 "; transmit dropped %" PRIu64
		" duplicated %" PRIu64 " reordered %" PRIu64 " corrupted %"
		PRIu64 " delayed %" PRIu64 "\n", d->ibdev.name, rx.dropped,
		rx.duplicated, rx.reordered, rx.corrupted, rx.delayed,
		tx.dropped, tx.duplicated, tx.reordered, tx.corrupted,
		tx.delayed);
}

void
dv_port_put(struct dv_context *ctx)
{
	struct dv_device *d = ctx->dev;

	if (!ctx->uses_port)
		return;
	ctx->uses_port = 0;
	pthread_mutex_lock(&d->lock);
	if (--d->users == 0) {
		if (d->conf.fault[0] || d->conf.fault_tx[0])
			fault_report(d);
		/* stop polling before the link goes (net_memif's rule) */
		droce_port_close(d->port);
		d->port = NULL;
		d->tdev = NULL;
	}
	pthread_mutex_unlock(&d->lock);
}

/*
 * An address vector from verbs' ah_attr. RoCE needs the GRH (the GID is
 * the address); the MAC comes from ARP/ND (or DROCE_NEIGH).
 */
int
dv_resolve(struct dv_context *ctx, const struct ibv_ah_attr *ah,
		struct droce_av *av)
{
	struct dv_device *d = ctx->dev;
	int rc;

	if (!ah->is_global || ah->port_num > 1 ||
			ah->grh.sgid_index >= DROCE_MAX_GIDS ||
			!d->gids[ah->grh.sgid_index].valid)
		return EINVAL;
	memset(av, 0, sizeof(*av));
	memcpy(av->dgid, ah->grh.dgid.raw, 16);
	av->sgid_index = ah->grh.sgid_index;
	av->tclass = ah->grh.traffic_class;
	av->hop_limit = ah->grh.hop_limit ? ah->grh.hop_limit : 64;
	av->flow_label = ah->grh.flow_label;
	/* generous: a link whose peer process just started may take seconds */
	rc = droce_port_resolve(d->port, av->dgid, av->dmac, 10000);
	if (rc != 0) {
		char s[INET6_ADDRSTRLEN];

		inet_ntop(AF_INET6, av->dgid, s, sizeof(s));
		fprintf(stderr, "droce: no neighbour answers for %s\n", s);
		return EHOSTUNREACH;
	}
	return 0;
}
