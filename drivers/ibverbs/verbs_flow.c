/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * Flow steering for RAW_PACKET QPs: ibv_create_flow / ibv_destroy_flow
 * (through struct verbs_context). The rule is compiled and matched by the
 * transport (lib/transport/tp_raw.c) on the QP's queue, whose owner lock
 * is held while the QP's flow list changes. Attached to droced there are
 * no RAW_PACKET QPs (doc/verbs.md), so no flows either.
 */

#include <errno.h>
#include <stdlib.h>

#include "attach.h"

struct dv_flow {
	struct ibv_flow flow;
	struct droce_flow *tf;
	struct dv_qp *qp;
};

struct ibv_flow *
dv_create_flow(struct ibv_qp *ibqp, struct ibv_flow_attr *attr)
{
	struct dv_qp *qp = dv_qp(ibqp);
	struct droce_port *port;
	struct dv_flow *f;

	if (attr == NULL) {
		errno = EINVAL;
		return NULL;
	}
	if (qp->ctx->att != NULL || ibqp->qp_type != IBV_QPT_RAW_PACKET) {
		/* rdma-core's providers: flows steer to raw QPs only */
		errno = ibqp->qp_type == IBV_QPT_RAW_PACKET ? EOPNOTSUPP :
			EINVAL;
		return NULL;
	}
	f = calloc(1, sizeof(*f));
	if (f == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	port = qp->ctx->dev->port;
	droce_port_lock(port, qp->q);
	f->tf = droce_flow_create(qp->tqp, attr);
	droce_port_unlock(port, qp->q);
	if (f->tf == NULL) {
		int e = errno;

		free(f);
		errno = e;
		return NULL;
	}
	f->qp = qp;
	f->flow.context = ibqp->context;
	f->flow.handle = droce_qp_num(qp->tqp);
	return &f->flow;
}

int
dv_destroy_flow(struct ibv_flow *flow)
{
	struct dv_flow *f = (struct dv_flow *)flow;
	struct droce_port *port = f->qp->ctx->dev->port;

	droce_port_lock(port, f->qp->q);
	droce_flow_destroy(f->tf);
	droce_port_unlock(port, f->qp->q);
	free(f);
	return 0;
}
