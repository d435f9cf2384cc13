/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

#ifndef VERBS_LOOP_H
#define VERBS_LOOP_H

/*
 * What the completion channel tests share: their checks and two RC QPs
 * of one process joined through the port's own address (its frames loop
 * back inside droce). make_qp takes the PD from loop_pd.
 */

#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>

#include "verbs_check.h"


static struct ibv_pd *loop_pd;

static inline int
to_rts(struct ibv_qp *qp, uint32_t dqpn)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE };

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dqpn;
	a.rq_psn = 1;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.sgid_index = 1;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	if (ibv_query_gid(qp->context, 1, 1, &a.ah_attr.grh.dgid) ||
			ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV |
			IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 1;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
		IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
		IBV_QP_MAX_QP_RD_ATOMIC);
}

/* The first device, loop_pd on it and len bytes registered for local
 * writes (*buf, *mr): the context, or NULL (and *mr NULL) if a step
 * failed. *list is for ibv_free_device_list. */
static inline struct ibv_context *
loop_open(struct ibv_device ***list, char **buf, struct ibv_mr **mr,
		size_t len)
{
	struct ibv_context *ctx;
	int n;

	*list = ibv_get_device_list(&n);
	ctx = *list && n > 0 ? ibv_open_device((*list)[0]) : NULL;
	loop_pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	*buf = aligned_alloc(4096, len);
	*mr = loop_pd && *buf ? ibv_reg_mr(loop_pd, *buf, len,
		IBV_ACCESS_LOCAL_WRITE) : NULL;
	return *mr ? ctx : NULL;
}

static inline struct ibv_qp *
make_qp(struct ibv_cq *cq)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
			.max_recv_sge = 1 },
	};

	return ibv_create_qp(loop_pd, &ia);
}

/* Two RC QPs, on cqa and on cqb, joined to each other and in RTS: 0, or
 * -1 if a step failed (NULL CQs fail). */
static inline int
loop_pair(struct ibv_cq *cqa, struct ibv_cq *cqb, struct ibv_qp **qa,
		struct ibv_qp **qb)
{
	*qa = cqa ? make_qp(cqa) : NULL;
	*qb = cqb ? make_qp(cqb) : NULL;
	if (*qa == NULL || *qb == NULL || to_rts(*qa, (*qb)->qp_num) ||
			to_rts(*qb, (*qa)->qp_num))
		return -1;
	return 0;
}

#endif /* VERBS_LOOP_H */
