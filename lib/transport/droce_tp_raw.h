/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

#ifndef DROCE_TP_RAW_H
#define DROCE_TP_RAW_H

/* RAW_PACKET QPs' flows and limits. Included by droce_transport.h, not
 * directly. */

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "droce_wire.h"

struct droce_qp;
struct droce_tp_queue;

/** The largest payload one IBV_WR_TSO WR may carry (tso_caps.max_tso). */
#define DROCE_RAW_MAX_TSO (256u * 1024)
/** The largest tso.hdr_sz droce takes: Ethernet, a VLAN tag, an IP
 * header with options and a TCP header with options fit. */
#define DROCE_RAW_TSO_HDR_MAX 256u

/** Packet pacing of a RAW_PACKET QP (IBV_QP_RATE_LIMIT), in kbit/s. */
#define DROCE_RAW_RATE_MIN_KBPS 1u
#define DROCE_RAW_RATE_MAX_KBPS 100000000u

struct droce_flow;

/**
 * Steer received frames to a RAW_PACKET QP (ibv_create_flow(3)): a frame
 * that is not RoCEv2 (UDP port 4791), not ARP and not IPv6 neighbour
 * discovery, and that matches every spec of attr (Ethernet, IPv4, IPv4
 * extended, IPv6, TCP, UDP; each field under its mask) goes to the QP's
 * receive queue. Where several flows of the queue match, the lowest
 * priority value wins, then the oldest. Only frames of the QP's own queue
 * are matched: the environment hands other queues' non-RoCE frames over
 * while any flow exists (droce_tp_queue_raw_flows). Call with the QP's
 * queue held.
 *
 * @param qp
 *   A RAW_PACKET QP.
 * @param attr
 *   The rule, its specs following it as ibv_create_flow(3) lays them out.
 * @return
 *   The flow, or NULL with errno: EINVAL (not a RAW_PACKET QP, a spec
 *   whose size is not its type's, port not 1, contradicting specs),
 *   EOPNOTSUPP (a rule type other than IBV_FLOW_ATTR_NORMAL, flags, a spec
 *   type or a VLAN match droce does not do), ENOMEM.
 */
struct droce_flow *droce_flow_create(struct droce_qp *qp,
		const struct ibv_flow_attr *attr);

/**
 * Remove a flow (ibv_destroy_flow(3)); call with its QP's queue held.
 *
 * @return
 *   0.
 */
int droce_flow_destroy(struct droce_flow *flow);

/**
 * How many flows steer to queue q's QPs; safe to read from another
 * queue's thread (a frame arriving during a create may miss it).
 */
uint32_t droce_tp_queue_raw_flows(const struct droce_tp_queue *q);

#endif /* DROCE_TP_RAW_H */
