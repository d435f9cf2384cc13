/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * Multicast on RoCEv2 (the kernel's cma does the same for RoCE): no SA
 * to join through, the group's GID is its IP address (IPv4 mapped), the
 * QP is attached to it on the device and the join completes at once
 * with MULTICAST_JOIN, whose UD parameters address the group (QPN
 * 0xFFFFFF, the port space's Q_Key).
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cm_internal.h"
#include "droce_wire.h"

static struct cm_mc **
mc_find(struct cm_id_priv *p, const uint8_t gid[16])
{
	struct cm_mc **m;

	for (m = &p->mcs; *m != NULL; m = &(*m)->next)
		if (memcmp((*m)->gid, gid, 16) == 0)
			return m;
	return NULL;
}

static int
join(struct cm_id_priv *p, struct sockaddr *addr, bool send_only,
		void *context)
{
	struct cm_event_priv *e;
	struct ibv_ah_attr *ah;
	struct cm_mc *mc;
	uint8_t gid[16];
	int rc;

	if (cm_sa_len(addr) == 0 || p->dev == NULL || p->id.qp_type != IBV_QPT_UD)
		return EINVAL;	/* bound to a device first, a UD port space */
	cm_sa_to_gid(addr, gid);
	if (!droce_gid_is_mcast(gid))
		return EINVAL;
	if (mc_find(p, gid) != NULL)
		return EADDRINUSE;
	mc = calloc(1, sizeof(*mc));
	if (mc == NULL)
		return ENOMEM;
	memcpy(mc->gid, gid, 16);
	memcpy(&mc->addr, addr, (size_t)cm_sa_len(addr));
	mc->context = context;
	if (!send_only && p->id.qp != NULL) {
		rc = ibv_attach_mcast(p->id.qp, (const union ibv_gid *)gid, 0);
		if (rc != 0) {
			free(mc);
			return rc;
		}
		mc->attached = true;
	}
	mc->next = p->mcs;
	p->mcs = mc;
	e = cm_event_queue(p, RDMA_CM_EVENT_MULTICAST_JOIN, 0);
	if (e == NULL)
		return 0;	/* joined; the event is lost with the memory */
	e->ev.param.ud.private_data = context;
	e->ev.param.ud.qp_num = DROCE_MCAST_QPN;
	e->ev.param.ud.qkey = CM_UDP_QKEY;
	ah = &e->ev.param.ud.ah_attr;
	ah->is_global = 1;
	memcpy(ah->grh.dgid.raw, gid, 16);
	ah->grh.sgid_index = p->sgid_index;
	ah->grh.hop_limit = 64;
	ah->grh.traffic_class = p->tos;
	ah->port_num = p->id.port_num;
	return 0;
}

static int
join_locked(struct rdma_cm_id *id, struct sockaddr *addr, bool send_only,
		void *context)
{
	int rc;

	if (id == NULL || addr == NULL) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&cm.lock);
	rc = join(cm_id(id), addr, send_only, context);
	pthread_mutex_unlock(&cm.lock);
	if (rc != 0) {
		errno = rc;
		return -1;
	}
	return 0;
}

int
rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr,
		void *context)
{
	return join_locked(id, addr, false, context);
}

int
rdma_join_multicast_ex(struct rdma_cm_id *id,
		struct rdma_cm_join_mc_attr_ex *attr, void *context)
{
	if (attr == NULL || !(attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_ADDRESS) ||
			attr->comp_mask & ~(RDMA_CM_JOIN_MC_ATTR_ADDRESS |
			RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS)) {
		errno = EINVAL;
		return -1;
	}
	return join_locked(id, attr->addr,
		(attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS) &&
		attr->join_flags == RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER,
		context);
}

static void
mc_free(struct cm_id_priv *p, struct cm_mc **m)
{
	struct cm_mc *mc = *m;

	if (mc->attached && p->id.qp != NULL)
		ibv_detach_mcast(p->id.qp, (const union ibv_gid *)mc->gid, 0);
	*m = mc->next;
	free(mc);
}

int
rdma_leave_multicast(struct rdma_cm_id *id, struct sockaddr *addr)
{
	struct cm_mc **m;
	uint8_t gid[16];
	int rc = 0;

	if (id == NULL || addr == NULL || cm_sa_len(addr) == 0) {
		errno = EINVAL;
		return -1;
	}
	cm_sa_to_gid(addr, gid);
	pthread_mutex_lock(&cm.lock);
	m = mc_find(cm_id(id), gid);
	if (m == NULL)
		rc = EADDRNOTAVAIL;	/* never joined */
	else
		mc_free(cm_id(id), m);
	pthread_mutex_unlock(&cm.lock);
	if (rc != 0) {
		errno = rc;
		return -1;
	}
	return 0;
}

/* Every group the ID joined is left (its QP or the ID goes; lock held). */
void
cm_mcast_leave_all(struct cm_id_priv *p)
{
	while (p->mcs != NULL)
		mc_free(p, &p->mcs);
}
