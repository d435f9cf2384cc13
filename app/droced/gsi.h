/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

#ifndef DD_GSI_H
#define DD_GSI_H

/* droced's QP1 (gsi.c) and its answers to REQs nobody listens for
 * (gsi_orphan.c): what the two share. */

#include <stdbool.h>
#include <stdint.h>

#include "droced.h"
#include "wire_cm_mad.h"

#define GSI_SLOT CM_MAD_LEN
#define GSI_GRH 40
#define GSI_RECVS 64
#define GSI_SENDS 64
#define GSI_LISTEN 256
#define GSI_ORPHANS 16
#define GSI_SEEN 32		/* orphan REQs remembered */
#define GSI_SEEN_SECS 30

struct gsi_seen {
	uint8_t sgid[16];
	uint32_t id;		/* the comm ID or SIDR request ID */
	uint64_t at;		/* TSC; 0: free */
};

/* A REQ or SIDR REQ nobody listens for: what its answer needs. */
struct gsi_orphan {
	uint8_t grh[GSI_GRH];
	uint64_t tid, service_id;
	uint32_t id;		/* the comm ID or SIDR request ID */
	uint16_t attr;		/* REQ or SIDR REQ */
};

struct dd_gsi {
	struct droce_pd *pd;
	struct droce_cq *scq, *rcq;
	struct droce_qp *qp;
	struct droce_mr *mr;
	uint8_t *buf;		/* GSI_RECVS receive slots, then the sends' */
	uint32_t q;
	struct {
		bool busy;		/* until QP1 completes it */
		struct dd_qp *qp;	/* whose it is; NULL: the daemon's, or
					 * a proxy's that went */
		uint64_t wr_id;
		bool signaled;
	} send[GSI_SENDS];
	struct {
		uint64_t service_id;
		struct dd_app *app;
	} listen[GSI_LISTEN];
	uint32_t nlisten;
	uint64_t rx, tx, dropped;
	uint64_t refused;		/* MADs applications may not send */
	uint64_t rejected, unanswered;	/* the answering thread's */
	/* REQs and SIDR REQs nobody listens for, from the queue to the
	 * answering thread (one producer, one consumer), which answers them */
	struct gsi_orphan orphan[GSI_ORPHANS];
	uint32_t orphan_prod, orphan_cons;
	struct gsi_seen seen[GSI_SEEN];
	struct dd_port *dp;
};

static inline uint8_t *
recv_slot(struct dd_gsi *g, uint32_t i)
{
	return g->buf + (size_t)i * (GSI_GRH + GSI_SLOT);
}

static inline uint8_t *
send_slot(struct dd_gsi *g, uint32_t i)
{
	return g->buf + (size_t)GSI_RECVS * (GSI_GRH + GSI_SLOT) +
		(size_t)i * GSI_SLOT;
}

/* gsi_orphan.c */
/* A CM REQ or SIDR REQ (a MAD of len bytes after the GRH) that no
 * application listens for: true when queued for an answer. */
bool gsi_orphan_req(struct dd_gsi *g, const uint8_t *mad, uint32_t len);

#endif /* DD_GSI_H */
