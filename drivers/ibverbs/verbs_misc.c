/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * The rest of rdma-core 44's public list: helpers droce honours (rates,
 * strings, GID table, kernel-struct copies librdmacm imports), and the
 * calls a software NIC cannot honour, which fail with EOPNOTSUPP (never a
 * crash, never a silent success).
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include <infiniband/verbs.h>
#include <infiniband/sa.h>
#include <rdma/ib_user_sa.h>
#include <rdma/ib_user_verbs.h>

#include "verbs_internal.h"

/* Symbols only other rdma-core libraries use; declared here, exported. */
struct verbs_device_ops;
void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr *dst,
		struct ib_uverbs_ah_attr *src);
void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr *dst,
		struct ib_uverbs_qp_attr *src);
void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec *dst,
		struct ib_user_path_rec *src);
void ibv_copy_path_rec_to_kern(struct ib_user_path_rec *dst,
		struct ibv_sa_path_rec *src);
int ibv_get_sysfs_path(char *buf, size_t size);
int ibv_resolve_eth_l2_from_gid(struct ibv_context *context,
		struct ibv_ah_attr *attr, uint8_t eth_mac[6], uint16_t *vid);
void ibv_register_driver(const char *name, void *init_func);

/* ---- fork support: droce pins nothing in the kernel ---- */

int
ibv_fork_init(void)
{
	return 0;
}

enum ibv_fork_status
ibv_is_fork_initialized(void)
{
	return IBV_FORK_UNNEEDED;
}

int
ibv_dontfork_range(void *base, size_t size)
{
	(void)base;
	(void)size;
	return 0;
}

int
ibv_dofork_range(void *base, size_t size)
{
	(void)base;
	(void)size;
	return 0;
}

/* ---- strings and rates ---- */

const char *
ibv_event_type_str(enum ibv_event_type ev)
{
	static const char *const s[] = {
		"CQ error", "local work queue catastrophic error",
		"invalid request local work queue error",
		"local access violation work queue error",
		"communication established", "send queue drained",
		"path migrated", "path migration request error",
		"local catastrophic error", "port active", "port error",
		"LID change", "P_Key change", "SM change", "SRQ catastrophic error",
		"SRQ limit reached", "last WQE reached", "client reregistration",
		"GID table change", "WQ fatal" };

	return (unsigned int)ev < sizeof(s) / sizeof(s[0]) ? s[ev] : "unknown";
}

static const struct { enum ibv_rate r; int mult; int mbps; } rates[] = {
	{ IBV_RATE_2_5_GBPS, 1, 2500 }, { IBV_RATE_5_GBPS, 2, 5000 },
	{ IBV_RATE_10_GBPS, 4, 10000 }, { IBV_RATE_20_GBPS, 8, 20000 },
	{ IBV_RATE_30_GBPS, 12, 30000 }, { IBV_RATE_40_GBPS, 16, 40000 },
	{ IBV_RATE_60_GBPS, 24, 60000 }, { IBV_RATE_80_GBPS, 32, 80000 },
	{ IBV_RATE_120_GBPS, 48, 120000 }, { IBV_RATE_14_GBPS, 0, 14062 },
	{ IBV_RATE_56_GBPS, 0, 56250 }, { IBV_RATE_112_GBPS, 0, 112500 },
	{ IBV_RATE_168_GBPS, 0, 168750 }, { IBV_RATE_25_GBPS, 0, 25781 },
	{ IBV_RATE_100_GBPS, 0, 103125 }, { IBV_RATE_200_GBPS, 0, 206250 },
	{ IBV_RATE_300_GBPS, 0, 309375 }, { IBV_RATE_28_GBPS, 0, 28125 },
	{ IBV_RATE_50_GBPS, 0, 53125 }, { IBV_RATE_400_GBPS, 0, 425000 },
	{ IBV_RATE_600_GBPS, 0, 637500 },
};
#define NB_RATES (sizeof(rates) / sizeof(rates[0]))

int
ibv_rate_to_mult(enum ibv_rate rate)
{
	size_t i;

	for (i = 0; i < NB_RATES; i++)
		if (rates[i].r == rate && rates[i].mult)
			return rates[i].mult;
	return -1;
}

enum ibv_rate
mult_to_ibv_rate(int mult)
{
	size_t i;

	for (i = 0; i < NB_RATES; i++)
		if (rates[i].mult == mult && mult)
			return rates[i].r;
	return IBV_RATE_MAX;
}

int
ibv_rate_to_mbps(enum ibv_rate rate)
{
	size_t i;

	for (i = 0; i < NB_RATES; i++)
		if (rates[i].r == rate)
			return rates[i].mbps;
	return -1;
}

enum ibv_rate
mbps_to_ibv_rate(int mbps)
{
	size_t i;

	for (i = 0; i < NB_RATES; i++)
		if (rates[i].mbps == mbps)
			return rates[i].r;
	return IBV_RATE_MAX;
}

/* ---- device helpers ---- */

int
ibv_get_pkey_index(struct ibv_context *context, uint8_t port, __be16 pkey)
{
	(void)context;
	if (port != 1)
		return -1;
	/* one P_Key, the default, at index 0 */
	return (ntohs(pkey) & 0x7fff) == 0x7fff ? 0 : -1;
}

int
ibv_get_device_index(struct ibv_device *device)
{
	(void)device;
	return -1;	/* no kernel index: droce devices are not in sysfs */
}

int
ibv_get_sysfs_path(char *buf, size_t size)
{
	(void)buf;
	(void)size;
	return -1;
}

ssize_t
_ibv_query_gid_table(struct ibv_context *context, struct ibv_gid_entry *entries,
		size_t max_entries, uint32_t flags, size_t entry_size)
{
	ssize_t n = 0;
	uint32_t i;

	if (flags != 0 || entry_size < sizeof(*entries))
		return -EINVAL;
	for (i = 0; i < DROCE_MAX_GIDS; i++) {
		struct ibv_gid_entry e;

		if (_ibv_query_gid_ex(context, 1, i, &e, 0, sizeof(e)) != 0)
			continue;
		if ((size_t)n == max_entries)
			return -EINVAL;
		memcpy((char *)entries + (size_t)n * entry_size, &e, sizeof(e));
		n++;
	}
	return n;
}

/* ---- what a software NIC cannot do ---- */

int
ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp;
	(void)ece;
	return EOPNOTSUPP;
}

int
ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp;
	(void)ece;
	return EOPNOTSUPP;
}

int
ibv_resolve_eth_l2_from_gid(struct ibv_context *context, struct ibv_ah_attr *attr,
		uint8_t eth_mac[6], uint16_t *vid)
{
	(void)context;
	(void)attr;
	(void)eth_mac;
	(void)vid;
	errno = EOPNOTSUPP;
	return -1;
}

void
ibv_register_driver(const char *name, void *init_func)
{
	(void)name;
	(void)init_func;	/* droce is the only provider */
}

struct ibv_context *
ibv_import_device(int cmd_fd)
{
	(void)cmd_fd;
	errno = EOPNOTSUPP;	/* no kernel context to share */
	return NULL;
}

struct ibv_pd *
ibv_import_pd(struct ibv_context *context, uint32_t pd_handle)
{
	(void)context;
	(void)pd_handle;
	errno = EOPNOTSUPP;
	return NULL;
}

void
ibv_unimport_pd(struct ibv_pd *pd)
{
	(void)pd;
}

struct ibv_mr *
ibv_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
	(void)pd;
	(void)mr_handle;
	errno = EOPNOTSUPP;
	return NULL;
}

void
ibv_unimport_mr(struct ibv_mr *mr)
{
	(void)mr;
}

struct ibv_dm *
ibv_import_dm(struct ibv_context *context, uint32_t dm_handle)
{
	(void)context;
	(void)dm_handle;
	errno = EOPNOTSUPP;
	return NULL;
}

void
ibv_unimport_dm(struct ibv_dm *dm)
{
	(void)dm;
}

/* ---- kernel-struct copies (librdmacm imports them) ---- */

void
ibv_copy_ah_attr_from_kern(struct ibv_ah_attr *dst, struct ib_uverbs_ah_attr *src)
{
	memcpy(dst->grh.dgid.raw, src->grh.dgid, sizeof(dst->grh.dgid));
	dst->grh.flow_label = src->grh.flow_label;
	dst->grh.sgid_index = src->grh.sgid_index;
	dst->grh.hop_limit = src->grh.hop_limit;
	dst->grh.traffic_class = src->grh.traffic_class;
	dst->dlid = src->dlid;
	dst->sl = src->sl;
	dst->src_path_bits = src->src_path_bits;
	dst->static_rate = src->static_rate;
	dst->is_global = src->is_global;
	dst->port_num = src->port_num;
}

void
ibv_copy_qp_attr_from_kern(struct ibv_qp_attr *dst, struct ib_uverbs_qp_attr *src)
{
	dst->cur_qp_state = src->cur_qp_state;
	dst->path_mtu = src->path_mtu;
	dst->path_mig_state = src->path_mig_state;
	dst->qkey = src->qkey;
	dst->rq_psn = src->rq_psn;
	dst->sq_psn = src->sq_psn;
	dst->dest_qp_num = src->dest_qp_num;
	dst->qp_access_flags = src->qp_access_flags;
	dst->cap.max_send_wr = src->max_send_wr;
	dst->cap.max_recv_wr = src->max_recv_wr;
	dst->cap.max_send_sge = src->max_send_sge;
	dst->cap.max_recv_sge = src->max_recv_sge;
	dst->cap.max_inline_data = src->max_inline_data;
	ibv_copy_ah_attr_from_kern(&dst->ah_attr, &src->ah_attr);
	ibv_copy_ah_attr_from_kern(&dst->alt_ah_attr, &src->alt_ah_attr);
	dst->pkey_index = src->pkey_index;
	dst->alt_pkey_index = src->alt_pkey_index;
	dst->en_sqd_async_notify = src->en_sqd_async_notify;
	dst->sq_draining = src->sq_draining;
	dst->max_rd_atomic = src->max_rd_atomic;
	dst->max_dest_rd_atomic = src->max_dest_rd_atomic;
	dst->min_rnr_timer = src->min_rnr_timer;
	dst->port_num = src->port_num;
	dst->timeout = src->timeout;
	dst->retry_cnt = src->retry_cnt;
	dst->rnr_retry = src->rnr_retry;
	dst->alt_port_num = src->alt_port_num;
	dst->alt_timeout = src->alt_timeout;
}

void
ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec *dst, struct ib_user_path_rec *src)
{
	memcpy(dst->dgid.raw, src->dgid, sizeof(dst->dgid));
	memcpy(dst->sgid.raw, src->sgid, sizeof(dst->sgid));
	dst->dlid = src->dlid;
	dst->slid = src->slid;
	dst->raw_traffic = (int)src->raw_traffic;
	dst->flow_label = src->flow_label;
	dst->hop_limit = src->hop_limit;
	dst->traffic_class = src->traffic_class;
	dst->reversible = (int)src->reversible;
	dst->numb_path = src->numb_path;
	dst->pkey = src->pkey;
	dst->sl = src->sl;
	dst->mtu_selector = src->mtu_selector;
	dst->mtu = (uint8_t)src->mtu;
	dst->rate_selector = src->rate_selector;
	dst->rate = src->rate;
	dst->packet_life_time_selector = src->packet_life_time_selector;
	dst->packet_life_time = src->packet_life_time;
	dst->preference = src->preference;
}

void
ibv_copy_path_rec_to_kern(struct ib_user_path_rec *dst, struct ibv_sa_path_rec *src)
{
	memcpy(dst->dgid, src->dgid.raw, sizeof(src->dgid));
	memcpy(dst->sgid, src->sgid.raw, sizeof(src->sgid));
	dst->dlid = src->dlid;
	dst->slid = src->slid;
	dst->raw_traffic = (uint32_t)src->raw_traffic;
	dst->flow_label = src->flow_label;
	dst->hop_limit = src->hop_limit;
	dst->traffic_class = src->traffic_class;
	dst->reversible = (uint32_t)src->reversible;
	dst->numb_path = src->numb_path;
	dst->pkey = src->pkey;
	dst->sl = src->sl;
	dst->mtu_selector = src->mtu_selector;
	dst->mtu = src->mtu;
	dst->rate_selector = src->rate_selector;
	dst->rate = src->rate;
	dst->packet_life_time_selector = src->packet_life_time_selector;
	dst->packet_life_time = src->packet_life_time;
	dst->preference = src->preference;
}
