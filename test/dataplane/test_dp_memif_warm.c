/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * net_memif's shared regions are faulted in before traffic: a server and
 * a client port in one process, joined by a socket of the test's own; once
 * the client's link is up and the server has resolved the client's
 * address (what every RC/UC QP and UD address handle does first), every
 * page of every mapping of a memif_region memfd is in this process's page
 * tables (smaps' Rss equals its Size), although only ARP's few frames
 * passed through the rings. Without dp_memif_prefault each page came in
 * with a fault on the first frame through it (13.5 us each on the 2-core
 * VM, ~500 per process in perftest's first milliseconds).
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "eal_dir.h"
#include "droce.h"
#include "droce_wire.h"

#define SRV_IP	0x0ac70101u	/* 10.199.1.1 */
#define CLI_IP	0x0ac70102u	/* 10.199.1.2 */

static struct droce_port *
open_memif(const char *devargs, const char *name, uint32_t ip)
{
	static char eal[256];
	struct droce_port_conf conf;

	snprintf(eal, sizeof(eal), "--no-huge -m 512 --no-pci "
		"--file-prefix %s --log-level=lib.eal:4 --log-level=pmd:4",
		eal_dir_prefix("dpmw"));
	droce_port_conf_init(&conf);
	conf.eal_args = eal;
	conf.devargs = devargs;
	conf.name = name;
	conf.nb_queues = 1;
	conf.mode = DROCE_PROGRESS_THREAD;
	conf.ipv4 = ip;
	return droce_port_open(&conf);
}

/* The memif_region mappings of this process: how many, and how many of
 * them have every page resident (Rss == Size). */
static void
regions(int *n, int *whole, long *size_kb, long *rss_kb)
{
	char line[512];
	int in = 0;
	long size = -1, v;
	unsigned long lo, hi;
	FILE *f = fopen("/proc/self/smaps", "re");

	*n = *whole = 0;
	*size_kb = *rss_kb = 0;
	if (f == NULL)
		return;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) {
			/* a mapping's header line ("Size:", "Rss:" and the
			 * other fields start with no address range) */
			in = strstr(line, "/memfd:memif_region") != NULL;
			if (in)
				(*n)++;
			size = -1;
			continue;
		}
		if (!in)
			continue;
		if (sscanf(line, "Size: %ld kB", &v) == 1) {
			size = v;
			*size_kb += v;
		} else if (sscanf(line, "Rss: %ld kB", &v) == 1) {
			*rss_kb += v;
			if (size > 0 && v == size)
				(*whole)++;
		}
	}
	fclose(f);
}

int
main(void)
{
	char srv_args[256], cli_args[256], sock[128];
	struct droce_port *srv, *cli;
	uint8_t gid[16], mac[6];
	int n, whole;
	long size, rss;

	snprintf(sock, sizeof(sock), "/tmp/droce-memif-warm.%d.sock",
		(int)getpid());
	unlink(sock);
	snprintf(srv_args, sizeof(srv_args),
		"net_memif0,role=server,socket=%s", sock);
	snprintf(cli_args, sizeof(cli_args),
		"net_memif1,role=client,socket=%s", sock);
	srv = open_memif(srv_args, "droce-mw0", SRV_IP);
	CHECK(srv != NULL, "net_memif server port");
	/* the client's open waits for its link */
	cli = srv != NULL ? open_memif(cli_args, "droce-mw1", CLI_IP) : NULL;
	CHECK(cli != NULL, "net_memif client port");
	if (srv == NULL || cli == NULL)
		goto out;

	droce_gid_from_ipv4(gid, CLI_IP);
	CHECK_EQ(droce_port_resolve(srv, gid, mac, 10000), 0,
		"the server resolves the client's address");
	regions(&n, &whole, &size, &rss);
	CHECK(n >= 1, "the process maps memif regions: %d", n);
	CHECK(whole == n, "every memif region resident: %d of %d "
		"(%ld of %ld kB)", whole, n, rss, size);
	printf("memif regions: %d, %ld kB, %ld kB resident\n", n, size, rss);
out:
	if (cli != NULL)
		droce_port_close(cli);
	if (srv != NULL)
		droce_port_close(srv);
	unlink(sock);
	return check_report("test_dp_memif_warm");
}
