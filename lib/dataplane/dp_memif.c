/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * Starting and closing a port around net_memif's quirks in DPDK 22.11: a
 * peer that is another process (start and reconnect until it is there),
 * frames that must fit one memif buffer, and disconnects handled in EAL's
 * interrupt thread; and its shared regions faulted in before traffic.
 */

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include <rte_alarm.h>
#include <rte_dev.h>
#include <rte_devargs.h>
#include <rte_ether.h>
#include <rte_kvargs.h>

#include "dp_internal.h"

struct intr_call {
	void (*fn)(struct droce_port *p);
	struct droce_port *p;
	int done;
};

static void
intr_call_cb(void *arg)
{
	struct intr_call *c = arg;

	c->fn(c->p);
	__atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
}

/*
 * fn(p) in EAL's interrupt thread (an alarm), waited for: that is where
 * net_memif handles a peer's disconnect, which unmaps the shared regions,
 * so what runs there never overlaps it. If the thread does not run it
 * within 10 s, it runs here.
 */
static void
in_intr_thread(void (*fn)(struct droce_port *p), struct droce_port *p)
{
	struct intr_call c = { fn, p, 0 };
	int i;

	if (rte_eal_alarm_set(1, intr_call_cb, &c) == 0) {
		for (i = 0; i < 10000; i++) {
			if (__atomic_load_n(&c.done, __ATOMIC_ACQUIRE))
				return;
			usleep(1000);
		}
		if (rte_eal_alarm_cancel(intr_call_cb, &c) <= 0) {
			/* running now: it finishes soon */
			while (!__atomic_load_n(&c.done, __ATOMIC_ACQUIRE))
				usleep(1000);
			return;
		}
	}
	fn(p);
}

static void
tx_release(struct droce_port *p)
{
	uint32_t i;

	for (i = 0; i < p->nb_queues; i++) {
		struct dp_queue *q = &p->q[i];

		if (q->tq == NULL)
			continue;
		rte_spinlock_lock(&q->lock);
		dp_txbuf_release(q);
		rte_spinlock_unlock(&q->lock);
	}
}

/*
 * At close, the frames still queued go to the PMD (or are freed), polling
 * having stopped. On a port droce configured this runs in the interrupt
 * thread: a net_memif peer closing at the same moment (both ends of a
 * benchmark finish together) unmapped the regions under a transmit that
 * had found the link up, and the process died in eth_memif_tx.
 */
void
dp_port_tx_release(struct droce_port *p)
{
	if (p->owns_port)
		in_intr_thread(tx_release, p);
	else
		tx_release(p);
}

static void
stop_close(struct droce_port *p)
{
	rte_eth_dev_stop(p->port_id);
	rte_eth_dev_close(p->port_id);
}

/*
 * The ports whose queues droce polls, for dp_memif_bursts_hold: a
 * net_memif peer that leaves (its process closed the link, or exited)
 * makes EAL's interrupt thread free and unmap the shared regions while
 * our threads may be inside a receive or transmit burst that found the
 * link up a moment before; DPDK 22.11 (23.11 too) waits for none. Such a
 * burst read the unmapped ring and the process died in eth_memif_rx
 * (2026-11-28: an ib_write_lat client polling its CQ when its server
 * left; the "segfault at exit" of a drop-in whose peer closed first).
 * Every burst runs under its queue's lock, so holding them all while the
 * regions go keeps the bursts out: the PMD has cleared the link's
 * CONNECTED flag before, and the bursts after see it and return.
 */
static pthread_mutex_t tracked_lock = PTHREAD_MUTEX_INITIALIZER;
static struct droce_port *tracked[RTE_MAX_ETHPORTS];

void
dp_port_track(struct droce_port *p, int on)
{
	uint32_t i;

	pthread_mutex_lock(&tracked_lock);
	for (i = 0; i < RTE_DIM(tracked); i++) {
		if (on && tracked[i] == NULL) {
			tracked[i] = p;
			break;
		}
		if (!on && tracked[i] == p)
			tracked[i] = NULL;
	}
	pthread_mutex_unlock(&tracked_lock);
}

/*
 * Called where net_memif frees its regions: in EAL's interrupt thread
 * (a peer's disconnect, dp_port_stop_close) or in the thread that stops
 * a net_memif port while it starts (memif_client_link_wait), none of
 * which holds a queue lock. All the locks of a port, in queue order (as
 * droce_port_set_hooks), port by port; what holds one is a pass, which
 * waits for nothing of this thread's.
 */
void
dp_memif_bursts_hold(void)
{
	uint32_t i, j;

	pthread_mutex_lock(&tracked_lock);
	for (i = 0; i < RTE_DIM(tracked); i++)
		if (tracked[i] != NULL && tracked[i]->memif)
			for (j = 0; j < tracked[i]->nb_queues; j++)
				droce_port_lock(tracked[i], j);
}

void
dp_memif_bursts_release(void)
{
	uint32_t i, j;

	for (i = 0; i < RTE_DIM(tracked); i++)
		if (tracked[i] != NULL && tracked[i]->memif)
			for (j = tracked[i]->nb_queues; j > 0; j--)
				droce_port_unlock(tracked[i], j - 1);
	pthread_mutex_unlock(&tracked_lock);
}

/*
 * Stop and close the ethdev from EAL's interrupt thread: in DPDK 22.11 two
 * net_memif disconnects running at once (both ends closing together, as
 * every two-process benchmark does) free the shared regions twice.
 */
void
dp_port_stop_close(struct droce_port *p)
{
	in_intr_thread(stop_close, p);
}

/* How long a port may take to find its peer when both start together. */
#define PORT_START_NS	15000000000ull
/* How long a net_memif client waits for its link before connecting again. */
#define MEMIF_LINK_NS	2000000000ull

/*
 * A link whose far end is another process (net_memif's client role)
 * cannot start before that process has created it: two programs started
 * together race, so keep trying until the deadline.
 */
static int
port_start(struct droce_port *p, uint64_t deadline)
{
	int rc, said = 0;

	for (;;) {
		rc = rte_eth_dev_start(p->port_id);
		if (rc == 0 || droce_now_ns() >= deadline)
			return rc;
		if (!said++)
			DP_LOG(INFO, "port %u not ready (%s), waiting for its peer",
				p->port_id, strerror(-rc));
		usleep(50000);
	}
}

/* A port droce probed itself as net_memif with the client role (the
 * PMD's default). */
static bool
memif_client(const struct droce_port *p)
{
	const char *role, *d = p->conf.devargs;

	if (d == NULL || !p->memif)
		return false;
	role = strstr(d, "role=");
	if (role == NULL)
		return true;
	role += 5;
	return strncmp(role, "server", 6) != 0 && strncmp(role, "master", 6) != 0;
}

/*
 * net_memif in DPDK 22.11 (Debian's 22.11.11 included) carries a frame
 * longer than one of its buffers (devarg bsize, 2048 by default) over
 * several descriptors, marking all but the last "next". Its transmit never
 * clears that mark on a packet's first descriptor, so once a slot that held
 * the middle of a long frame is reused for a one-buffer frame, the receiver
 * chains that frame into the next slot, runs past the ring's head and hands
 * out up to 65,535 stale frames. Mixing long frames with short ones (data
 * then READ requests, data and ACKs) is what RDMA does; a jumbo MTU over
 * small memif buffers stalled QPs until their retry count ran out. So droce
 * never makes a frame longer than one memif buffer.
 */
static uint32_t
memif_max_mtu(const struct rte_eth_dev_info *info)
{
	const struct rte_devargs *da;
	struct rte_kvargs *kv;
	const char *v;
	unsigned long bsize = 2048; /* the PMD's default */

	if (info->driver_name == NULL || info->device == NULL ||
			strcmp(info->driver_name, "net_memif") != 0)
		return UINT32_MAX;
	da = rte_dev_devargs(info->device);
	if (da != NULL && da->args != NULL) {
		kv = rte_kvargs_parse(da->args, NULL);
		if (kv != NULL) {
			v = rte_kvargs_get(kv, "bsize");
			if (v != NULL && strtoul(v, NULL, 10) != 0)
				bsize = strtoul(v, NULL, 10);
			rte_kvargs_free(kv);
		}
	}
	return bsize > RTE_ETHER_HDR_LEN ?
		(uint32_t)(bsize - RTE_ETHER_HDR_LEN) : RTE_ETHER_MIN_MTU;
}

/* Cap the port MTU where the PMD cannot carry longer frames safely. */
void
dp_mtu_cap(struct droce_port *p)
{
	struct rte_eth_dev_info info;
	uint32_t cap;

	if (rte_eth_dev_info_get(p->port_id, &info) != 0)
		return;
	cap = memif_max_mtu(&info);
	if (p->mtu <= cap)
		return;
	/* a warning only where it costs path MTU (9000 over bsize=8192: no) */
	if (droce_eth_mtu_to_path_mtu(cap) != droce_eth_mtu_to_path_mtu(p->mtu))
		DP_LOG(WARNING, "port %u: MTU %u -> %u: net_memif frames must "
			"fit one buffer (bsize=%u; give bsize=%u for this MTU)",
			p->port_id, p->mtu, cap, cap + RTE_ETHER_HDR_LEN,
			p->mtu + RTE_ETHER_HDR_LEN);
	else
		DP_LOG(DEBUG, "port %u: MTU %u -> %u (net_memif bsize %u)",
			p->port_id, p->mtu, cap, cap + RTE_ETHER_HDR_LEN);
	p->mtu = cap;
}

/*
 * net_memif (22.11) listens from the moment the server process probes
 * its port, but refuses clients ("ID not found") until that process starts
 * it; a client refused so is disconnected for good although its own start
 * succeeded, and no frame ever passes. Two programs opening droce together
 * (perftest's two sides after their TCP exchange) fell into that window
 * about one run in two hundred. So a client whose link is not up within a
 * while stops its port and starts it again: a new connection.
 */
static int
memif_client_link_wait(struct droce_port *p)
{
	uint64_t deadline = droce_now_ns() + PORT_START_NS;
	uint64_t retry = droce_now_ns() + MEMIF_LINK_NS;
	struct rte_eth_link link;
	int rc;

	for (;;) {
		memset(&link, 0, sizeof(link));
		if (rte_eth_link_get_nowait(p->port_id, &link) == 0 &&
				link.link_status == RTE_ETH_LINK_UP)
			return 0;
		if (droce_now_ns() >= deadline) {
			/* as before this wait: the port is started, ARP
			 * will say that nobody answers */
			DP_LOG(WARNING, "port %u: net_memif link still down",
				p->port_id);
			return 0;
		}
		if (droce_now_ns() >= retry) {
			DP_LOG(INFO, "port %u: net_memif link not up, connecting again",
				p->port_id);
			rte_eth_dev_stop(p->port_id);
			rc = port_start(p, deadline);
			if (rc != 0)
				return rc;
			retry = droce_now_ns() + MEMIF_LINK_NS;
		}
		usleep(1000);
	}
}

/*
 * Fault in every page of the net_memif shared regions, once the link is up
 * (both sides have mapped them). Each process otherwise faults on a buffer
 * page the first time a frame passes through it: ~500 faults a process
 * over the first lap of the rings (2 KB buffers, 4 KB pages), at 13.5 us
 * each on the 2-core VM, inside the first milliseconds of traffic, where
 * perftest over the drop-in ran its first 20-50 ms slow. droce-perf does
 * one lap of raw echoes first for the same reason. MADV_POPULATE_WRITE
 * fills the page tables without touching what the rings hold. The PMD
 * keeps the regions' addresses to itself: they are the process's mappings
 * of its "memif_region" memfds.
 */
void
dp_memif_prefault(struct droce_port *p)
{
	struct rte_eth_link link;
	unsigned long lo, hi;
	char line[512], perms[8];
	unsigned int n = 0;
	FILE *f;

	if (!p->memif || p->memif_warm)
		return;
	memset(&link, 0, sizeof(link));
	if (rte_eth_link_get_nowait(p->port_id, &link) != 0 ||
			link.link_status != RTE_ETH_LINK_UP)
		return;
	p->memif_warm = 1;
	f = fopen("/proc/self/maps", "re");
	if (f == NULL)
		return;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strstr(line, "/memfd:memif_region") == NULL ||
				sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3)
			continue;
		/* best effort: a region a disconnect unmaps meanwhile
		 * (ENOMEM) or a kernel before 5.14 (EINVAL) only costs the
		 * faults again */
		if (madvise((void *)lo, hi - lo, perms[1] == 'w' ?
				MADV_POPULATE_WRITE : MADV_POPULATE_READ) == 0)
			n++;
	}
	fclose(f);
	DP_LOG(DEBUG, "port %u: %u net_memif region(s) faulted in",
		p->port_id, n);
}

/* Start a port droce configured; a net_memif client also waits for its
 * link, connecting again while the server refuses it. */
int
dp_port_start(struct droce_port *p, const struct rte_eth_dev_info *info)
{
	int rc;

	p->memif = info->driver_name != NULL &&
		strcmp(info->driver_name, "net_memif") == 0;
	rc = port_start(p, droce_now_ns() + PORT_START_NS);
	if (rc)
		return rc;
	if (memif_client(p)) {
		rc = memif_client_link_wait(p);
		if (rc == 0)
			dp_memif_prefault(p);
		return rc;
	}
	return 0;
}
