/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

#ifndef EAL_DIR_H
#define EAL_DIR_H

/*
 * A C test's own EAL file prefix, whose runtime directory is removed when
 * the test exits: DPDK leaves it behind (config, fbarrays, the telemetry
 * socket), and a test leaves nothing.
 */

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char eal_dir_prefix_buf[32];
static char eal_dir_path[128];

static void
eal_dir_remove(void)
{
	struct dirent *e;
	DIR *d = opendir(eal_dir_path);

	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			unlinkat(dirfd(d), e->d_name, 0);
	closedir(d);
	rmdir(eal_dir_path);
}

/* NAME followed by the pid; the directory goes at exit */
static inline const char *
eal_dir_prefix(const char *name)
{
	if (eal_dir_prefix_buf[0] == '\0') {
		snprintf(eal_dir_prefix_buf, sizeof(eal_dir_prefix_buf),
			"%s%d", name, (int)getpid());
		snprintf(eal_dir_path, sizeof(eal_dir_path),
			"/var/run/dpdk/%s", eal_dir_prefix_buf);
		atexit(eal_dir_remove);
	}
	return eal_dir_prefix_buf;
}

#endif
