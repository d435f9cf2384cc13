/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

#ifndef VERBS_TELE_H
#define VERBS_TELE_H

/*
 * Counters the verbs tests read on DPDK telemetry: the port's own
 * (in process) or droced's for the test's session (attached).
 */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

/* Counter name in the answer to cmd on a telemetry socket; -1 if none. */
static inline int64_t
telemetry_counter(const char *sock, const char *cmd, const char *name)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	char reply[16384], key[64], *p;
	int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	ssize_t n;

	if (fd < 0)
		return -1;
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", sock);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
			read(fd, reply, sizeof(reply)) <= 0 ||	/* its hello */
			write(fd, cmd, strlen(cmd)) != (ssize_t)strlen(cmd) ||
			(n = read(fd, reply, sizeof(reply) - 1)) <= 0) {
		close(fd);
		return -1;
	}
	close(fd);
	reply[n] = '\0';
	if (name == NULL) {	/* the first number of an array */
		p = strchr(reply, '[');
		return p ? strtoll(p + 1, NULL, 10) : -1;
	}
	snprintf(key, sizeof(key), "\"%s\":", name);
	p = strstr(reply, key);
	return p ? strtoll(p + strlen(key), NULL, 10) : -1;
}

/* In process: the port's counter; attached ("droced:SOCKET"): droced's
 * counter for this session (the only one on the daemon). */
static inline int64_t
counter(const char *tele, const char *name)
{
	char cmd[64];
	int64_t id;

	if (strncmp(tele, "droced:", 7) != 0)
		return telemetry_counter(tele, "/droce/port/stats,0", name);
	id = telemetry_counter(tele + 7, "/droced/apps", NULL);
	if (id < 0)
		return -1;
	snprintf(cmd, sizeof(cmd), "/droced/app,%" PRId64, id);
	return telemetry_counter(tele + 7, cmd, name);
}

#endif /* VERBS_TELE_H */
