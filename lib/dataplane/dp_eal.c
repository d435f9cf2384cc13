/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * Once per process: EAL, the log type and the clock droce runs on. A
 * daemon that owns EAL itself would replace dp_eal_init and keep the rest.
 */

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_log.h>

#include "droce_conf.h"
#include "dp_internal.h"

/* "droce.dataplane": the drop-in sets it to warnings unless DROCE_DEBUG */
RTE_LOG_REGISTER(droce_dp_logtype, droce.dataplane, INFO);

uint64_t
dp_tsc_ns(uint64_t tsc)
{
	static uint64_t mult;	/* ns per cycle, 32.32 fixed point */

	if (mult == 0)
		mult = (uint64_t)(((unsigned __int128)1000000000ull << 32) /
			rte_get_tsc_hz());
	/* a multiply, not three divisions: this runs on every pass */
	return (uint64_t)(((unsigned __int128)tsc * mult) >> 32);
}

uint64_t
droce_now_ns(void)
{
	return dp_tsc_ns(rte_get_tsc_cycles());
}

/*
 * Without hugepages (DROCE_NO_HUGE) the EAL keeps its files under a prefix
 * of the process's own (--no-huge is legacy memory, which --in-memory
 * refuses): ~6 MB of tmpfs that nothing removes at exit. Mapped already,
 * they are unlinked at once, as --in-memory would have them (no secondary
 * process attaches to droce's EAL); the directory, which the EAL reads
 * when a device is plugged, goes at exit.
 */
static char runtime_dir[PATH_MAX];

static void
runtime_dir_rmdir(void)
{
	rmdir(runtime_dir);
}

static void
runtime_files_drop(void)
{
	const char *dir = rte_eal_get_runtime_dir();
	struct dirent *e;
	char path[PATH_MAX];
	DIR *d;

	if (dir == NULL || (d = opendir(dir)) == NULL)
		return;
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.' && snprintf(path, sizeof(path),
				"%s/%s", dir, e->d_name) < (int)sizeof(path))
			unlink(path);
	closedir(d);
	if (snprintf(runtime_dir, sizeof(runtime_dir), "%s", dir) <
			(int)sizeof(runtime_dir))
		atexit(runtime_dir_rmdir);
}

/*
 * EAL once per process. rte_eal_init pins the calling thread to the main
 * lcore: an application that embeds droce (or an unmodified verbs program)
 * keeps the CPUs it had, so the affinity is restored afterwards.
 */
int
dp_eal_init(const char *args)
{
	static int done;
	char buf[1024], *argv[64], *tok, *save = NULL;
	char prefix_opt[] = "--file-prefix", prefix[32];
	int argc = 0, rc, no_huge;
	const char *v;
	cpu_set_t cpus;

	if (done)
		return 0;
	/* droce_conf.h's key: set and not 0 */
	no_huge = (v = droce_conf_get("DROCE_NO_HUGE")) != NULL && v[0] &&
		strcmp(v, "0") != 0;
	snprintf(buf, sizeof(buf), "droce %s%s", args ? args : "",
		no_huge && (args == NULL ||
		strstr(args, "--no-huge") == NULL) ? " --no-huge -m 512" : "");
	snprintf(prefix, sizeof(prefix), "droce%d", (int)getpid());
	for (tok = strtok_r(buf, " \t", &save); tok && argc < 62;
			tok = strtok_r(NULL, " \t", &save)) {
		/* --no-huge is legacy memory, which --in-memory refuses: a
		 * file prefix of the process's own keeps it apart instead */
		if (no_huge && strcmp(tok, "--in-memory") == 0) {
			argv[argc++] = prefix_opt;
			tok = prefix;
		}
		argv[argc++] = tok;
	}
	argv[argc] = NULL;
	sched_getaffinity(0, sizeof(cpus), &cpus);
	rc = rte_eal_init(argc, argv);
	sched_setaffinity(0, sizeof(cpus), &cpus);
	if (rc < 0 && rte_errno != EALREADY)
		return -rte_errno;
	if (no_huge && rc >= 0)
		runtime_files_drop();
	done = 1;
	return 0;
}
