/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

#ifndef DROCE_VERBS_H
#define DROCE_VERBS_H

/*
 * droce's own entries in its libibverbs.so.1 (version node
 * DROCE_PRIVATE_1), for its librdmacm: rdma-core's librdmacm gets the
 * same from the kernel.
 */

#include <stdint.h>

#include <infiniband/verbs.h>

/* The GSI QP (QPN 1) of pd's device: a UD QP for CM MADs. NULL with
 * errno EINVAL (not UD, an SRQ) or EBUSY (the device has one). */
struct ibv_qp *droce_create_gsi_qp(struct ibv_pd *pd,
		struct ibv_qp_init_attr *attr);

/* The MAC behind a GID on the context's port (ARP or ND), waiting up to
 * timeout_ms: 0, ETIMEDOUT or EHOSTUNREACH. */
int droce_resolve_gid(struct ibv_context *context, const uint8_t gid[16],
		uint32_t timeout_ms);

/* Attached to droced (doc/daemon.md), the daemon routes CM MADs to this
 * context by the top byte of the communication and SIDR request IDs it
 * picks: that byte; -1 in process (any ID will do). */
int droce_cm_prefix(struct ibv_context *context);

/* Attached: REQs and SIDR REQs for service_id come to this context's
 * GSI QP (on 1) or no more (0). 0 or an errno; 0 in process. */
int droce_cm_listen(struct ibv_context *context, uint64_t service_id, int on);

/* How the context's device takes selective repeat (doc/transport.md):
 * enum droce_sr_mode, 0 off, 1 on every RC QP, 2 offered through
 * rdma_cm (the daemon's port's setting when attached). */
int droce_cm_sr_mode(struct ibv_context *context);

/* Selective repeat on (1) or off (0) for an RC QP in RESET or INIT, on a
 * device in mode 2: the CM sets it once both ends of the connection
 * offered it. 0, or EINVAL (not RC, XRC, past INIT), EPERM (another
 * mode). */
int droce_cm_set_sr(struct ibv_qp *qp, int on);

/* Where the completions of QP qpn (on the context) stand now: a mark of
 * what its CQs have been given. 0, or ENOENT (no such QP), EINVAL. */
int droce_qp_cq_mark(struct ibv_context *context, uint32_t qpn,
		uint64_t *mark);

/* 1 once the application has polled the QP's CQs up to mark, or the QP
 * is gone; 0 while completions before mark wait in them. */
int droce_qp_cq_passed(struct ibv_context *context, uint32_t qpn,
		uint64_t mark);

/* Up to max counters, named by static strings; the number filled. */
typedef unsigned int (*droce_telemetry_fill_t)(const char **names,
		uint64_t *values, unsigned int max);

/* A DPDK telemetry command (this library carries its own EAL) that
 * answers a dictionary of counters from fill: 0, or an errno (EINVAL,
 * ENOSPC past a few commands). */
int droce_telemetry_u64(const char *cmd, const char *help,
		droce_telemetry_fill_t fill);

#endif
