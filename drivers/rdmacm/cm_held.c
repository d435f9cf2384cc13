/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * A peer's disconnect, reported after the completions that came before
 * it. The peer's DREQ follows its last messages and the ACKs of ours on
 * the wire, but droce may hand them to the application at the same
 * moment: droced napped meanwhile, or the peer held an ACK for an answer
 * and sent it as it destroyed its QP, right before the DREQ. A program
 * that polls its CQ and reads its events in turn (libfabric's ofi_rxm)
 * may then take the DISCONNECTED first and destroy its QP, and the
 * completions still in the CQ go with it (droce drops them, as a
 * ConnectX provider does): its last send comes back flushed, a message
 * it was sent is never received. On a NIC the DREQ comes well after the
 * ACK, and the CQ has been polled by then. So the DISCONNECTED waits
 * until the application has polled the QP's CQs as far as they were
 * filled when the DREQ came, or the QP is gone, CM_DISC_HOLD_MS at most
 * (a program that never polls still hears of it).
 */

#include <stdlib.h>

#include "cm_internal.h"
#include "droce_verbs.h"

static struct ibv_context *
ctx_of(const struct cm_id_priv *p)
{
	if (p->id.verbs != NULL)
		return p->id.verbs;
	return p->dev != NULL ? p->dev->verbs : NULL;
}

/* p has just gone to CM_DISCONNECTED on the peer's DREQ (lock held) */
void
cm_held_disconnect(struct cm_id_priv *p)
{
	struct ibv_context *ctx = ctx_of(p);
	struct cm_event_priv *e;
	uint64_t mark;

	e = cm_conn_event_new(p, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0);
	if (e == NULL)
		return;
	if (p->qpn == 0 || ctx == NULL ||
			droce_qp_cq_mark(ctx, p->qpn, &mark) != 0 ||
			droce_qp_cq_passed(ctx, p->qpn, mark)) {
		cm_event_post(p->chan, e);
		return;
	}
	p->held = e;
	p->held_mark = mark;
	p->held_until_ms = cm_now_ms() + CM_DISC_HOLD_MS;
	cm.st.disc_held++;
	cm_agent_wake();	/* its next look within a millisecond */
}

static void
release(struct cm_id_priv *p)
{
	cm_event_post(p->chan, p->held);
	p->held = NULL;
}

/* The agent's pass (lock held). */
void
cm_held_timeouts(uint64_t now)
{
	struct cm_id_priv *p;

	for (p = cm.ids; p != NULL; p = p->next) {
		if (p->held == NULL)
			continue;
		if (now >= p->held_until_ms) {
			cm.st.disc_hold_expired++;
			release(p);
		} else if (droce_qp_cq_passed(ctx_of(p), p->qpn, p->held_mark)) {
			release(p);
		}
	}
}

bool
cm_held_any(void)
{
	const struct cm_id_priv *p;

	for (p = cm.ids; p != NULL; p = p->next)
		if (p->held != NULL)
			return true;
	return false;
}

/* The ID goes: its held event with it, never reported. */
void
cm_held_drop(struct cm_id_priv *p)
{
	free(p->held);
	p->held = NULL;
}
