/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * The data path behind a droce device: its configuration and the DPDK
 * port, started when the first context needs it (a PD or a CQ) and closed
 * when the last such context closes. ibv_devices and ibv_devinfo never
 * start it.
 *
 * Configuration: droce_conf.h's keys (the environment, else DROCE_CONF's
 * file).
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

/* The device whose port is open: a program may exit without closing it
 * (librdmacm keeps its own open, as rdma-core's does). */
static struct dv_device *open_dev;

struct quiet {
	struct droce_conf conf;
};

/*
 * An unmodified program's output is its own: droce's port set-up notes
 * (INFO: promiscuous, offloads, waiting for a memif peer) go to the log
 * only with DROCE_DEBUG. DROCE_EAL comes after, so it can say otherwise.
 */
static struct quiet *
quiet_conf(const struct droce_conf *c, struct quiet *q)
{
	const char *v = droce_conf_get("DROCE_DEBUG");
	static const char lvl[] = "--log-level=droce.dataplane:4 ";

	q->conf = *c;
	if ((v == NULL || v[0] == '\0' || strcmp(v, "0") == 0) &&
			strlen(lvl) + strlen(c->eal) < sizeof(q->conf.eal))
		snprintf(q->conf.eal, sizeof(q->conf.eal), "%s%s", lvl, c->eal);
	return q;
}

/* Start the port (first user) or take a reference. 0 or an errno. */

int
dv_port_get(struct dv_context *ctx)
{
	struct dv_device *d = ctx->dev;
	struct droce_port_conf pc;
	struct quiet qc;
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
		droce_conf_port(&quiet_conf(&d->conf, &qc)->conf, &pc,
			DROCE_PROGRESS_THREAD, eal, sizeof(eal));
		d->port = droce_port_open(&pc);
		if (d->port == NULL) {
			rc = errno ? errno : ENODEV;
			/* EAL's arguments may be what DPDK refused */
			fprintf(stderr, "droce: DROCE_DEVARGS=%s%s%s: cannot "
				"open %s on it: %s\n", d->conf.devargs,
				d->conf.eal[0] ? " DROCE_EAL=" : "",
				d->conf.eal, d->ibdev.name, strerror(rc));
			goto out;
		}
		d->tdev = droce_port_dev(d->port);
		d->nb_queues = d->conf.queues;
		droce_dev_set_async_cb(d->tdev, dv_async_cb, d);
		droce_conf_add_neighbors(d->port, &d->conf);
	}
	d->users++;
	open_dev = d;
	ctx->uses_port = 1;
out:
	pthread_mutex_unlock(&d->lock);
	return rc;
}

/*
 * At exit with the port still open: frames already completed leave and
 * the peer gets 100 ms to read them (a NIC sends what it completed after
 * the process is gone; droce's data path goes with the process), and
 * with DROCE_FAULT set the report is printed.
 */
static void __attribute__((destructor))
port_at_exit(void)
{
	struct dv_device *d = open_dev;

	if (d == NULL)
		return;
	pthread_mutex_lock(&d->lock);
	if (d->port != NULL) {
		droce_port_tx_settle(d->port, 100000000ull, 1000000000ull);
		droce_conf_fault_report(d->port, &d->conf);
	}
	pthread_mutex_unlock(&d->lock);
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
		/*
		 * What the last QPs sent as they went (their last ACK,
		 * tp_resp_last_ack) leaves and the peer gets 20 ms to read
		 * it: net_memif drops what is in the ring once we are gone,
		 * and an ACK lost there left ibv_rc_pingpong's server
		 * retrying its last SEND into RETRY_EXC_ERR.
		 */
		droce_port_tx_settle(d->port, 20000000ull, 200000000ull);
		droce_conf_fault_report(d->port, &d->conf);
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
	/* generous: a link whose peer process just started may take seconds */
	return -droce_port_av_from_ah(ctx->dev->port, ah, av, 10000);
}
