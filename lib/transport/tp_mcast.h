/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

#ifndef TP_MCAST_H
#define TP_MCAST_H

#include "tp_objects.h"

/* ---- multicast groups (tp_mcast.c) ---- */

#define TP_MCAST_GRP		64	/* groups per device */
#define TP_MCAST_QP_ATTACH	16	/* QPs per group */

/* A group on the device: how many QPs of all queues are attached. */
struct tp_mcast_grp {
	uint64_t gid[2];
	uint8_t mac[6];
	uint32_t nb_qps;
};

/* A group as one queue sees it: its QPs attached there. */
struct tp_mcast_member {
	uint64_t gid[2];
	uint8_t mac[6];
	uint32_t nb_qps;
	struct droce_qp **qps;	/* max_mcast_qp_attach slots */
};

/* tp_mcast.c */
/* A frame to a multicast MAC on a queue with groups (tp_recv.c). */
void tp_mcast_rx(struct droce_tp_queue *q, const uint8_t *frame, uint32_t len);
void tp_mcast_free(struct droce_dev *dev);

#endif /* TP_MCAST_H */
