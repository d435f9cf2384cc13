/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/* The worker lcores (--cores): which queues and QPs each owns, and
 * running a job on all of them. */

#include <stdio.h>

#include <rte_launch.h>
#include <rte_lcore.h>

#include "perf_internal.h"

struct worker workers[16];
static int (*worker_job)(struct worker *w);

static int
worker_entry(void *arg)
{
	return worker_job(arg);
}

int
setup_workers(void)
{
	uint32_t i, n = 1, lc;

	if (rte_lcore_count() < opt.cores) {
		fprintf(stderr, "droce-perf: --cores %u needs %u lcores, EAL has"
			" %u (--eal \"-l ...\")\n", opt.cores, opt.cores,
			rte_lcore_count());
		return -1;
	}
	workers[0].lcore = rte_get_main_lcore();
	RTE_LCORE_FOREACH_WORKER(lc) {
		if (n >= opt.cores)
			break;
		workers[n++].lcore = lc;
	}
	if (opt.cores > 1) {
		/* droce_port_open gave the main thread its CPUs back; a
		 * worker of the main lcore stays on that lcore's CPU */
		rte_cpuset_t cs = rte_lcore_cpuset(workers[0].lcore);

		rte_thread_set_affinity(&cs);
	}
	for (i = 0; i < opt.cores; i++)
		workers[i].id = i;
	for (i = 0; i < opt.queues; i++) {
		struct worker *w = &workers[i % opt.cores];

		w->q[w->nq++] = i;
	}
	for (i = 0; i < opt.nqp; i++) {
		struct worker *w = &workers[qp_queue(i) % opt.cores];

		w->qi[w->nqp++] = i;
	}
	return 0;
}

/* Start job on workers 1..N-1; worker 0 is the caller's to run. */
void
launch_workers(int (*job)(struct worker *w))
{
	uint32_t i;

	worker_job = job;
	for (i = 1; i < opt.cores; i++)
		rte_eal_remote_launch(worker_entry, &workers[i],
			workers[i].lcore);
}

/* Run job on every worker, worker 0 on this thread; 0 if all gave 0. */
int
run_workers(int (*job)(struct worker *w))
{
	uint32_t i;
	int rc;

	launch_workers(job);
	rc = job(&workers[0]);
	for (i = 1; i < opt.cores; i++)
		rc |= rte_eal_wait_lcore(workers[i].lcore);
	return rc;
}
