/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * droced [-c CONF] [-d] [-p PIDFILE] [DROCE_KEY=VALUE...]
 *
 * Owns the ports (droce_conf.h's keys, as droce-run takes them; port N
 * from 1 on with "_N" added: DROCE_DEVARGS_1, DROCE_IPV4_1, ...) and
 * their data-path cores, and serves applications that attach through the
 * drop-in libibverbs on the unix socket DROCE_DAEMON names (default
 * DROCE_DAEMON_DEFAULT); each port is a device to them (droce0, droce1,
 * ...). Keys of its own (doc/daemon.md):
 *   DROCE_POLL           busy (default: an lcore per queue spins) or idle
 *                        (the port's progress thread backs off when idle)
 *   DROCE_LCORES         busy mode: the CPUs of the data-path lcores
 *   DROCE_DAEMON_MODE    the socket's permissions (octal, default 0660)
 *   DROCE_APP_MAX_QP, _CQ, _MR, _SRQ, _AH, _PD, DROCE_APP_MAX_MR_MB,
 *   DROCE_APP_REGION_MB  per-application limits
 */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <rte_eal.h>
#include <rte_launch.h>
#include <rte_lcore.h>

#include "droced.h"

static void
usage(FILE *f)
{
	fprintf(f, "usage: droced [-c CONF] [-d] [-p PIDFILE] "
		"[DROCE_KEY=VALUE...]\n"
		"Owns DPDK ports and their data path; applications attach to it "
		"through\nthe verbs drop-in (droce-run DROCE_DAEMON=SOCKET "
		"PROGRAM), each port a device.\n"
		"Port N (1 to %d) takes the port keys with _N added "
		"(DROCE_DEVARGS_1=...).\n"
		"  -c CONF     read keys from CONF (as DROCE_CONF)\n"
		"  -d          detach (daemon); default: foreground\n"
		"  -p PIDFILE  write the process id there\n"
		"  -h, --help  this text\n"
		"  --keys=port|verbs|daemon|all  only the keys they read\n"
		"Keys (the environment, then CONF; a key given here wins; "
		"an unknown key or\na bad value is named and droced exits 2):\n",
		DROCE_CONF_MAX_PORTS - 1);
	droce_conf_usage(f, DROCE_KEYS_PORT | DROCE_KEYS_DAEMON);
	fprintf(f, "See droced(1) and doc/daemon.md.\n");
}

/* --keys=SET: the keys alone, for droce-run's help */
static int
print_keys(const char *set)
{
	static const struct {
		const char *name;
		unsigned int sets;
	} sets[] = {
		{ "port", DROCE_KEYS_PORT },
		{ "verbs", DROCE_KEYS_PORT | DROCE_KEYS_VERBS },
		{ "daemon", DROCE_KEYS_PORT | DROCE_KEYS_DAEMON },
		{ "all", DROCE_KEYS_PORT | DROCE_KEYS_VERBS |
			DROCE_KEYS_DAEMON },
	};
	size_t i;

	for (i = 0; i < RTE_DIM(sets); i++)
		if (strcmp(set, sets[i].name) == 0) {
			droce_conf_usage(stdout, sets[i].sets);
			return 0;
		}
	fprintf(stderr, "droced: --keys=%s: want port, verbs, daemon or all\n",
		set);
	return 2;
}

/* A number key: unset gives def; a malformed value names the key and
 * stops, as every configuration value should. */
static uint64_t
key_u64(const char *key, uint64_t def, uint64_t min, uint64_t max)
{
	const char *v = droce_conf_get(key);
	char *end;
	unsigned long long x;

	if (v == NULL)
		return def;
	errno = 0;
	x = strtoull(v, &end, 0);
	if (errno || end == v || *end != '\0' || x < min || x > max) {
		fprintf(stderr, "droced: %s=%s: want a number from %" PRIu64
			" to %" PRIu64 "\n", key, v, min, max);
		exit(2);
	}
	return x;
}

static void
limits_load(struct dd_limits *l)
{
	l->max_apps = (uint32_t)key_u64("DROCE_APPS_MAX", 128, 1, DD_MAX_APPS);
	l->apps_per_user = (uint32_t)key_u64("DROCE_APPS_PER_USER", 64, 1,
		DD_MAX_APPS);
	l->apps_per_proc = (uint32_t)key_u64("DROCE_APPS_PER_PROCESS", 32, 1,
		DD_MAX_APPS);
	l->max_qp = (uint32_t)key_u64("DROCE_APP_MAX_QP", 4096, 1, 65536);
	l->max_cq = (uint32_t)key_u64("DROCE_APP_MAX_CQ", 4096, 1, 65536);
	l->max_mr = (uint32_t)key_u64("DROCE_APP_MAX_MR", 4096, 1, 65536);
	l->max_srq = (uint32_t)key_u64("DROCE_APP_MAX_SRQ", 1024, 1, 65536);
	l->max_ah = (uint32_t)key_u64("DROCE_APP_MAX_AH", 4096, 1, 65536);
	l->max_pd = (uint32_t)key_u64("DROCE_APP_MAX_PD", 256, 1, 65536);
	l->max_chan = 1024;
	l->max_mr_bytes = key_u64("DROCE_APP_MAX_MR_MB", 16384, 1, 1u << 30) << 20;
	l->region_bytes = key_u64("DROCE_APP_REGION_MB", 32, 2, 65536) << 20;
	/* whole hugepages */
	l->region_bytes = (l->region_bytes + (2u << 20) - 1) & ~(uint64_t)((2u << 20) - 1);
}

/* Busy mode's EAL arguments: the main lcore, then one per queue. */
static void
busy_eal(char *buf, size_t len, uint32_t nq)
{
	const char *list = droce_conf_get("DROCE_LCORES");
	char cores[256] = "";
	cpu_set_t cpus;
	int i, n = 0, first = -1;

	if (list == NULL) {
		/* main on the first CPU, the data path on the last ones */
		int avail[CPU_SETSIZE], na = 0;

		sched_getaffinity(0, sizeof(cpus), &cpus);
		for (i = 0; i < CPU_SETSIZE; i++)
			if (CPU_ISSET(i, &cpus))
				avail[na++] = i;
		first = avail[0];
		n = snprintf(cores, sizeof(cores), "%d", first);
		for (i = 0; i < (int)nq; i++) {
			int cpu = avail[na - 1 - (i % (na > 1 ? na - 1 : 1))];

			n += snprintf(cores + n, sizeof(cores) - (size_t)n,
				",%d@%d", i + 1, cpu);
		}
		list = cores;
	}
	snprintf(buf, len, "--in-memory --no-pci --lcores %s "
		"--log-level=lib.eal:4 --log-level=pmd:4 %s", list, dd.conf.eal);
}

static int
listen_on(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	mode_t mode = (mode_t)key_u64("DROCE_DAEMON_MODE", 0660, 0, 0777);
	char dir[sizeof(sa.sun_path)], *slash;
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "droced: DROCE_DAEMON=%s: too long\n", path);
		return -1;
	}
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash != NULL && slash != dir) {
		*slash = '\0';
		mkdir(dir, 0755);
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	unlink(path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
			chmod(path, mode) != 0 || listen(fd, 64) != 0) {
		fprintf(stderr, "droced: cannot listen on %s: %s\n", path,
			strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/* The neighbour eventfd's mark in the epoll set (sessions are dd_apps,
 * the listening socket NULL). */
static char neigh_mark;

static void
on_signal(int sig)
{
	(void)sig;
	dd.stop = 1;
}

static int
serve(void)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
	int ep = epoll_create1(EPOLL_CLOEXEC);

	dd.ep = ep;
	epoll_ctl(ep, EPOLL_CTL_ADD, dd.listen_fd, &ev);
	dd.neigh_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (dd.neigh_fd >= 0) {
		ev.data.ptr = &neigh_mark;
		epoll_ctl(ep, EPOLL_CTL_ADD, dd.neigh_fd, &ev);
	}
	while (!dd.stop) {
		struct epoll_event evs[16];
		int n = epoll_wait(ep, evs, 16, 200), i;

		dd_sessions_sweep();
		for (i = 0; i < n; i++) {
			struct dd_app *a = evs[i].data.ptr;

			if (a == NULL)
				dd_session_accept();
			else if ((void *)a == &neigh_mark)
				dd_neigh_done();
			else
				dd_session_event(a, evs[i].events);
		}
	}
	/* attached applications see the socket close: DEVICE_FATAL */
	dd_neigh_fini();	/* they see dd.stop */
	while (dd.nb_apps)
		dd_app_detach(dd.apps[0]);
	close(ep);
	dd.ep = -1;
	if (dd.neigh_fd >= 0)
		close(dd.neigh_fd);
	return 0;
}

static int
parse_args(int argc, char **argv, int *detach, const char **pidfile)
{
	static const struct option longs[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "keys", required_argument, NULL, 'K' },
		{ NULL, 0, NULL, 0 },
	};
	int opt, i;

	while ((opt = getopt_long(argc, argv, "c:dp:h", longs, NULL)) != -1) {
		switch (opt) {
		case 'h':
			usage(stdout);
			exit(0);
		case 'K':
			exit(print_keys(optarg));
		case 'c':
			setenv("DROCE_CONF", optarg, 1);
			break;
		case 'd':
			*detach = 1;
			break;
		case 'p':
			*pidfile = optarg;
			break;
		default:
			usage(stderr);
			return -1;
		}
	}
	for (i = optind; i < argc; i++) {
		char *eq = strchr(argv[i], '=');

		if (eq == NULL || strncmp(argv[i], "DROCE_", 6) != 0) {
			fprintf(stderr, "droced: %s: want DROCE_KEY=VALUE\n",
				argv[i]);
			usage(stderr);
			return -1;
		}
		*eq = '\0';
		setenv(argv[i], eq + 1, 1);
		*eq = '=';
	}
	return 0;
}

/* Busy mode: lcore i (1 to the most queues a port has) runs queue i - 1
 * of every port that has one. */
static int
lcore_run(void *arg)
{
	uint32_t qi = (uint32_t)rte_lcore_index(rte_lcore_id()) - 1, p;

	(void)arg;
	while (!__atomic_load_n(&dd.lcores_stop, __ATOMIC_ACQUIRE))
		for (p = 0; p < dd.nb_ports; p++)
			if (qi < dd.ports[p].nb_queues)
				droce_port_progress(dd.ports[p].port, qi);
	return 0;
}

static int
port_open(struct dd_port *dp, uint32_t idx, const char *eal)
{
	struct droce_port_hooks hooks = {
		.poll = dd_poll_hook, .sleep = dd_sleep_hook, .arg = dp,
	};
	struct droce_port_conf pc;
	static char own_eal[1024];
	char sfx[8] = "";

	if (idx > 0)
		snprintf(sfx, sizeof(sfx), "_%u", idx);
	dp->idx = idx;
	dp->wake_ep = -1;
	droce_conf_load_port(&dp->conf, idx);
	if (dp->conf.devargs[0] == '\0') {
		fprintf(stderr, "droced: no DPDK device: set DROCE_DEVARGS\n");
		return -1;
	}
	if (dp->conf.queues > DROCE_CHAN_MAX_QUEUES) {
		fprintf(stderr, "droced: DROCE_QUEUES%s=%u: at most %d\n", sfx,
			dp->conf.queues, DROCE_CHAN_MAX_QUEUES);
		return -1;
	}
	droce_conf_port(&dp->conf, &pc, dd.busy ? DROCE_PROGRESS_LCORES :
		DROCE_PROGRESS_THREAD, own_eal, sizeof(own_eal));
	if (dd.busy)
		pc.eal_args = eal;	/* the lcores of every port */
	dp->port = droce_port_open(&pc);
	if (dp->port == NULL) {
		/* EAL's arguments may be what DPDK refused */
		fprintf(stderr, "droced: DROCE_DEVARGS%s=%s%s%s: cannot open "
			"it: %s\n", sfx, dp->conf.devargs,
			dd.conf.eal[0] ? " DROCE_EAL=" : "", dd.conf.eal,
			strerror(errno));
		return -1;
	}
	dp->dev = droce_port_dev(dp->port);
	dp->nb_queues = dp->conf.queues;
	droce_dev_set_async_cb(dp->dev, dd_async_cb, &dd);
	droce_conf_add_neighbors(dp->port, &dp->conf);
	droce_port_set_hooks(dp->port, &hooks);
	/* idle mode: the sessions' wake pipes end the thread's naps */
	if (droce_port_wake_fd(dp->port) >= 0) {
		dp->wake_ep = epoll_create1(EPOLL_CLOEXEC);
		if (dp->wake_ep < 0 ||
				droce_port_set_wake_extra(dp->port, dp->wake_ep) != 0) {
			fprintf(stderr, "droced: %s: no epoll set for wake-ups\n",
				dp->conf.name);
			return -1;
		}
	}
	return 0;
}

static void
ports_close(void)
{
	uint32_t p;

	__atomic_store_n(&dd.lcores_stop, 1, __ATOMIC_RELEASE);
	if (dd.busy)
		rte_eal_mp_wait_lcore();
	for (p = 0; p < dd.nb_ports; p++) {
		droce_conf_fault_report(dd.ports[p].port, &dd.ports[p].conf);
		droce_port_close(dd.ports[p].port);
		if (dd.ports[p].wake_ep >= 0)
			close(dd.ports[p].wake_ep);
	}
	dd.nb_ports = 0;
}

/* The n ports droce_conf_nb_ports counted. */
static int
ports_start(uint32_t n)
{
	const char *poll = droce_conf_get("DROCE_POLL");
	static char eal[1024];
	uint32_t p, maxq = 1;
	unsigned int lcore;

	if (poll != NULL && strcmp(poll, "busy") != 0 && strcmp(poll, "idle") != 0) {
		fprintf(stderr, "droced: DROCE_POLL=%s: want busy or idle\n", poll);
		return -1;
	}
	dd.busy = poll == NULL || strcmp(poll, "busy") == 0;
	for (p = 0; p < n; p++) {
		struct droce_conf c;

		droce_conf_load_port(&c, p);
		if (c.queues > maxq)
			maxq = c.queues;
	}
	if (dd.busy)
		busy_eal(eal, sizeof(eal), maxq);
	for (p = 0; p < n; p++) {
		if (port_open(&dd.ports[p], p, eal) != 0) {
			ports_close();
			return -1;
		}
		dd.nb_ports++;
	}
	if (dd.busy)
		RTE_LCORE_FOREACH_WORKER(lcore)
			rte_eal_remote_launch(lcore_run, NULL, lcore);
	return 0;
}

int
main(int argc, char **argv)
{
	const char *pidfile = NULL;
	int detach = 0;
	char err[640];
	uint32_t p;
	int nb_ports;

	if (parse_args(argc, argv, &detach, &pidfile) != 0)
		return 2;
	/* every key, the drop-in's and droced's, before anything starts */
	if (droce_conf_check(err, sizeof(err)) != 0) {
		fprintf(stderr, "%s\n", err);
		return 2;
	}
	nb_ports = droce_conf_nb_ports(err, sizeof(err));
	if (nb_ports == 0) {
		fprintf(stderr, "droced: %s\n", err);
		return 2;
	}
	droce_conf_load(&dd.conf);
	limits_load(&dd.lim);
	dd.sock_path = droce_conf_get("DROCE_DAEMON");
	dd.sock_path = strdup(dd.sock_path ? dd.sock_path : DROCE_DAEMON_DEFAULT);
	/* before EAL: its threads do not survive a fork */
	if (detach && daemon(0, 1) != 0) {
		perror("droced: daemon");
		return 1;
	}
	if (pidfile != NULL) {
		FILE *f = fopen(pidfile, "w");

		if (f != NULL) {
			fprintf(f, "%d\n", (int)getpid());
			fclose(f);
		}
	}
	if (dd_ctl_check() != 0)
		return 1;
	signal(SIGPIPE, SIG_IGN);
	dd_mem_init();
	if (dd_guard_init() != 0) {
		perror("droced: SIGBUS handler");
		return 1;
	}
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	if (ports_start((uint32_t)nb_ports) != 0)
		return 1;
	dd.listen_fd = listen_on(dd.sock_path);
	if (dd.listen_fd < 0) {
		ports_close();
		return 1;
	}
	for (p = 0; p < dd.nb_ports; p++) {
		struct dd_port *dp = &dd.ports[p];

		if (dd_gsi_init(dp) != 0)
			DD_LOG(WARNING, "%s: no QP1: the connection manager is "
				"not served", dp->conf.name);
		DD_LOG(INFO, "%s on %s, %u queue(s)", dp->conf.name,
			dp->conf.devargs, dp->nb_queues);
	}
	if (dd_gsi_start() != 0)
		DD_LOG(WARNING, "no thread to answer CM REQs to no listener");
	dd_telemetry_init();
	DD_LOG(INFO, "%u port(s), %s polling, listening on %s", dd.nb_ports,
		dd.busy ? "busy" : "idle", dd.sock_path);
	serve();
	dd_gsi_stop();
	close(dd.listen_fd);
	unlink(dd.sock_path);
	ports_close();
	DD_LOG(INFO, "stopped");
	return 0;
}
