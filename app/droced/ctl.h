/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

#ifndef DROCED_CTL_H
#define DROCED_CTL_H

#include "droced.h"

/* One control request being served (ctl.c). */
struct req_ctx {
	struct dd_app *a;
	const void *req;
	void *rep;
	int *fds;		/* received; a handler that keeps one sets it -1 */
	int nfds;
	int out[3];		/* to send with the reply */
	int nout;
	uint32_t out_close;	/* out[i] is closed once sent: bit i */
	uint32_t neigh_ms;	/* how long a neighbour may be waited for */
};

int dd_wq_alloc(struct dd_app *a, struct dd_wq *wq, uint32_t entries,
		uint32_t slot, uint32_t queue, struct droce_chan_wq_rep *rep);
void dd_wq_free(struct dd_app *a, struct dd_wq *wq);
/* The CQ onto queue q (every queue held): 0, -EBUSY while a GSI proxy
 * uses it, or the transport's refusal (QPs on it elsewhere). */
int dd_cq_move(struct dd_cq *cq, uint32_t q);

/* ctl_qp.c: QPs, SRQs, AHs, multicast */
int op_create_srq(struct req_ctx *c);
int op_modify_srq(struct req_ctx *c);
int op_query_srq(struct req_ctx *c);
int op_destroy_srq(struct req_ctx *c);
int op_create_qp(struct req_ctx *c);
int op_modify_qp(struct req_ctx *c);
int op_set_sr(struct req_ctx *c);
int op_query_qp(struct req_ctx *c);
int op_destroy_qp(struct req_ctx *c);
int op_create_ah(struct req_ctx *c);
int op_destroy_ah(struct req_ctx *c);
int op_attach_mcast(struct req_ctx *c);
int op_detach_mcast(struct req_ctx *c);

/* ctl_xrc.c: XRC domains, and the XRC cases of CREATE_SRQ / CREATE_QP */
int op_open_xrcd(struct req_ctx *c);
int op_close_xrcd(struct req_ctx *c);
int dd_create_srq_xrc(struct req_ctx *c, struct dd_pd *pd);
int dd_create_qp_xrc_recv(struct req_ctx *c);

#endif
