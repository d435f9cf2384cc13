/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * droced's one global state and its log type, apart from main.c so that
 * the daemon's code links into a test harness too (test/fuzz).
 */

#include "droced.h"

RTE_LOG_REGISTER(dd_logtype, droced, INFO);

struct droced dd = {
	.listen_fd = -1,
	.ep = -1,
	.neigh_fd = -1,
	.apps_lock = PTHREAD_MUTEX_INITIALIZER,
};
