/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

#ifndef UD_QP_H
#define UD_QP_H

/* A UD QP in RTS for the transport and dataplane tests. */

#include <string.h>

#include "droce_transport.h"

/* A UD QP on cq's queue with Q_Key qkey through INIT/RTR/RTS; NULL if
 * any step fails. */
static inline struct droce_qp *
ud_qp_rts(struct droce_pd *pd, struct droce_cq *cq, uint32_t qkey)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr a;
	struct droce_qp *qp;

	memset(&ia, 0, sizeof(ia));
	ia.qp_type = IBV_QPT_UD;
	ia.cap.max_send_wr = 16;
	ia.cap.max_recv_wr = 16;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	qp = droce_qp_create(pd, &ia, cq, cq, NULL);
	if (qp == NULL)
		return NULL;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qkey = qkey;
	if (droce_qp_modify(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			IBV_QP_PORT | IBV_QP_QKEY, NULL) != 0)
		goto fail;
	a.qp_state = IBV_QPS_RTR;
	if (droce_qp_modify(qp, &a, IBV_QP_STATE, NULL) != 0)
		goto fail;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 1;
	if (droce_qp_modify(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN, NULL) != 0)
		goto fail;
	return qp;
fail:
	droce_qp_destroy(qp);
	return NULL;
}

#endif
