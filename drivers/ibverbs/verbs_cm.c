/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * What droce's librdmacm needs of a device besides verbs (droce_verbs.h):
 * in process nothing, attached to droced the daemon's routing of CM MADs
 * (QP1 is the daemon's).
 */

#include "attach.h"
#include "droce_verbs.h"

int
droce_cm_prefix(struct ibv_context *context)
{
	struct dv_context *c = dv_ctx(context);

	return c->att != NULL ? c->att->hello.cm_prefix : -1;
}

int
droce_cm_listen(struct ibv_context *context, uint64_t service_id, int on)
{
	struct dv_context *c = dv_ctx(context);

	return c->att != NULL ? da_cm_listen(c, service_id, on) : 0;
}
