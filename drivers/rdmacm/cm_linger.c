/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * Lingering DREQs: an ID destroyed while connected (or with its DREQ not
 * yet answered) leaves its DREQ behind, sent until a DREP (or the peer's
 * own DREQ) answers it or the retries run out. Applications destroy the
 * ID right after rdma_disconnect (rping's client does); had the one DREQ
 * been lost, the peer would wait for a DISCONNECTED event forever. Only
 * what the resending needs stays: the device, the peer's GID (the AH is
 * looked up at each send: the device's cache may have let it go), the
 * comm ID that the DREP names and the MAD.
 */

#include <stdlib.h>
#include <string.h>

#include "cm_internal.h"

struct cm_linger {
	struct cm_linger *next;
	struct cm_dev *dev;
	uint8_t dgid[16];
	uint8_t sgid_index;
	uint32_t local_comm_id;
	struct cm_retx retx;
};

static struct cm_linger *lingers;

static void
linger_send(struct cm_linger *l)
{
	cm_send_mad(l->dev, cm_dev_ah(l->dev, l->dgid, l->sgid_index),
		l->retx.mad);
}

/* p goes (lock held): its DREQ stays behind it. */
void
cm_linger_dreq(struct cm_id_priv *p)
{
	struct cm_linger *l;

	if (p->dev == NULL)
		return;
	if (p->state != CM_DREQ_SENT || !p->retx.armed) {
		cm_conn_dreq(p);	/* sends it, arms p->retx */
	}
	l = calloc(1, sizeof(*l));
	if (l == NULL) {	/* sent once at least */
		cm_retx_stop(p);
		return;
	}
	l->dev = p->dev;
	memcpy(l->dgid, p->id.route.addr.addr.ibaddr.dgid.raw, 16);
	l->sgid_index = p->sgid_index;
	l->local_comm_id = p->local_comm_id;
	l->retx = p->retx;
	cm_retx_stop(p);
	l->next = lingers;
	lingers = l;
	cm_agent_wake();
}

/* A DREP or DREQ naming no ID (lock held): true when it answered one. */
bool
cm_linger_answered(uint32_t local_comm_id)
{
	struct cm_linger **pp, *l;

	for (pp = &lingers; (l = *pp) != NULL; pp = &l->next)
		if (l->local_comm_id == local_comm_id) {
			*pp = l->next;
			free(l);
			return true;
		}
	return false;
}

/* Resend what is due, drop what ran out (lock held). */
void
cm_linger_timeouts(uint64_t now)
{
	struct cm_linger **pp, *l;

	for (pp = &lingers; (l = *pp) != NULL;) {
		if (l->retx.deadline_ms <= now) {
			if (l->retx.left == 0) {
				cm.st.timeouts++;
				*pp = l->next;
				free(l);
				continue;
			}
			l->retx.left--;
			l->retx.deadline_ms = now + l->retx.timeout_ms;
			cm.st.retransmits++;
			linger_send(l);
		}
		pp = &l->next;
	}
}

/* The nearest deadline, or UINT64_MAX (lock held). */
uint64_t
cm_linger_next(void)
{
	uint64_t first = UINT64_MAX;
	struct cm_linger *l;

	for (l = lingers; l != NULL; l = l->next)
		if (l->retx.deadline_ms < first)
			first = l->retx.deadline_ms;
	return first;
}

bool
cm_linger_busy(void)
{
	return lingers != NULL;
}
