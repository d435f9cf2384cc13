/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * What droce's librdmacm needs of a device besides verbs (droce_verbs.h):
 * in process nothing, attached to droced the daemon's routing of CM MADs
 * (QP1 is the daemon's); selective repeat on a QP whose connection both
 * ends agreed on; how far the application has polled a QP's completions
 * (a disconnect is reported after them); and a telemetry command, as
 * DPDK is linked into this library, not shared with it.
 */

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rte_common.h>
#include <rte_telemetry.h>

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

int
droce_cm_sr_mode(struct ibv_context *context)
{
	struct dv_context *c = dv_ctx(context);

	return c->att != NULL ? c->att->hello.sr_mode :
		c->dev->conf.selective_repeat;
}

int
droce_cm_set_sr(struct ibv_qp *ibqp, int on)
{
	struct dv_qp *qp = dv_qp(ibqp);
	struct droce_port *port;
	int rc;

	if (ibqp->qp_type != IBV_QPT_RC || (on != 0 && on != 1))
		return EINVAL;
	if (qp->ctx->att != NULL)
		return da_set_sr(qp, on);
	if (qp->ctx->dev->conf.selective_repeat != DROCE_SR_CM)
		return EPERM;
	port = qp->ctx->dev->port;
	droce_port_lock(port, qp->q);
	rc = droce_qp_set_sr(qp->tqp, on);
	droce_port_unlock(port, qp->q);
	return -rc;
}

static int
qp_cq_pos(struct ibv_context *context, uint32_t qpn, struct droce_cq_pos *pos)
{
	struct dv_context *c = dv_ctx(context);
	struct droce_dev *tdev;

	if (c->att != NULL)
		return da_qp_cq_pos(c->att, qpn, pos);
	tdev = __atomic_load_n(&c->dev->tdev, __ATOMIC_ACQUIRE);
	return tdev != NULL ? -droce_dev_qp_cq_pos(tdev, qpn, pos) : ENOENT;
}

int
droce_qp_cq_mark(struct ibv_context *context, uint32_t qpn, uint64_t *mark)
{
	struct droce_cq_pos pos;
	int rc;

	if (context == NULL || mark == NULL)
		return EINVAL;
	rc = qp_cq_pos(context, qpn, &pos);
	if (rc == 0)
		*mark = (uint64_t)pos.recv_prod << 32 | pos.send_prod;
	return rc;
}

int
droce_qp_cq_passed(struct ibv_context *context, uint32_t qpn, uint64_t mark)
{
	struct droce_cq_pos pos;

	if (context == NULL || qp_cq_pos(context, qpn, &pos) != 0)
		return 1;
	return (int32_t)(pos.send_cons - (uint32_t)mark) >= 0 &&
		(int32_t)(pos.recv_cons - (uint32_t)(mark >> 32)) >= 0;
}

#define TEL_CMDS 4
#define TEL_VALUES 32

static struct {
	char cmd[64];
	droce_telemetry_fill_t fill;
} tel[TEL_CMDS];

static int
tel_u64(const char *cmd, const char *params __rte_unused,
		struct rte_tel_data *d)
{
	const char *names[TEL_VALUES];
	uint64_t values[TEL_VALUES];
	unsigned int i, n;

	for (i = 0; i < TEL_CMDS; i++)
		if (tel[i].fill != NULL && strcmp(tel[i].cmd, cmd) == 0)
			break;
	if (i == TEL_CMDS)
		return -EINVAL;
	n = tel[i].fill(names, values, TEL_VALUES);
	rte_tel_data_start_dict(d);
	for (i = 0; i < n && i < TEL_VALUES; i++)
		rte_tel_data_add_dict_u64(d, names[i], values[i]);
	return 0;
}

int
droce_telemetry_u64(const char *cmd, const char *help,
		droce_telemetry_fill_t fill)
{
	unsigned int i;
	int rc;

	if (cmd == NULL || fill == NULL || strlen(cmd) >= sizeof(tel[0].cmd))
		return EINVAL;
	for (i = 0; i < TEL_CMDS && tel[i].fill != NULL; i++)
		;
	if (i == TEL_CMDS)
		return ENOSPC;
	/* the slot first: the telemetry thread may ask at once */
	snprintf(tel[i].cmd, sizeof(tel[i].cmd), "%s", cmd);
	tel[i].fill = fill;
	rc = rte_telemetry_register_cmd(cmd, tel_u64, help);
	if (rc != 0)
		tel[i].fill = NULL;
	return -rc;
}
