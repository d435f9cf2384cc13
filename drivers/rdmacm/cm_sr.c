/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * Selective repeat per connection (DROCE_SELECTIVE_REPEAT=cm,
 * doc/rdmacm.md). It changes what a responder acknowledges (it holds
 * requests past a gap and answers with SACKs), so both ends of a
 * connection must have it or neither: a standard peer (the kernel's CM
 * with rxe, a ConnectX) must never see it.
 *
 * The active side offers it in a tag at the end of the REQ's private
 * data, where the application left the room; the passive side takes the
 * offer only when its own device is in the same mode, sets selective
 * repeat on its QP before RTR and answers with the tag at the end of the
 * REP; the active side sets it on its QP, before RTR, only on that
 * answer. A peer that is not droce hands the REQ's bytes to its
 * application as they are and answers without the tag: neither end has
 * it then. The tag is droce's, not the application's: each side zeroes
 * it before its application sees the private data.
 *
 *   tag, the last 8 bytes of the area: "DRSR", version 1, flags (bit 0:
 *   selective repeat), check: be16 of the sender's communication ID with
 *   its halves XORed (so that bytes an application copied from elsewhere
 *   are not taken for an offer)
 */

#include <errno.h>
#include <string.h>

#include "cm_internal.h"
#include "droce_verbs.h"

#define SR_VERSION 1
#define SR_FLAG_ON 0x01
#define SR_MODE_CM 2	/* enum droce_sr_mode's DROCE_SR_CM */

static const uint8_t sr_magic[4] = { 'D', 'R', 'S', 'R' };

static void
tag_make(uint8_t tag[CM_SR_TAG_LEN], uint32_t comm_id)
{
	uint16_t check = (uint16_t)(comm_id ^ (comm_id >> 16));

	memcpy(tag, sr_magic, sizeof(sr_magic));
	tag[4] = SR_VERSION;
	tag[5] = SR_FLAG_ON;
	tag[6] = (uint8_t)(check >> 8);
	tag[7] = (uint8_t)check;
}

bool
cm_sr_offer(const struct cm_id_priv *p, size_t used, size_t room)
{
	const struct ibv_qp *qp = p->id.qp;

	/* the QP is where the answer is set: without one (rdma_establish,
	 * conn_param's qp_num) nothing is offered */
	return qp != NULL && qp->qp_type == IBV_QPT_RC &&
		used + CM_SR_TAG_LEN <= room &&
		droce_cm_sr_mode(qp->context) == SR_MODE_CM;
}

void
cm_sr_put(uint8_t *area, size_t room, uint32_t comm_id)
{
	tag_make(area + room - CM_SR_TAG_LEN, comm_id);
}

bool
cm_sr_take(uint8_t *area, size_t room, uint32_t comm_id)
{
	uint8_t want[CM_SR_TAG_LEN], *at = area + room - CM_SR_TAG_LEN;

	tag_make(want, comm_id);
	if (memcmp(at, want, CM_SR_TAG_LEN) != 0)
		return false;
	memset(at, 0, CM_SR_TAG_LEN);
	return true;
}

int
cm_sr_set(struct cm_id_priv *p)
{
	int rc = droce_cm_set_sr(p->id.qp, 1);

	if (rc != 0) {
		errno = rc;
		return -1;
	}
	cm.st_sr_on++;
	return 0;
}
