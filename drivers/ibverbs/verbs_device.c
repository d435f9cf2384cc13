/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * droce's libibverbs.so.1, first part: devices, contexts and the queries.
 * Devices come from droce's configuration (droce_conf.h: DROCE_NAME,
 * DROCE_MAC, DROCE_IPV4, DROCE_MTU, ...), not from the kernel.
 * Nothing here starts DPDK: ibv_devices and ibv_devinfo need none.
 */

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include <infiniband/verbs.h>

#include "attach.h"

/* The private rdma-core call ibv_devinfo imports (IBVERBS_PRIVATE_34). */
enum { DV_GID_TYPE_ROCE_V1 = 0, DV_GID_TYPE_ROCE_V2 = 1 };
int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num,
		unsigned int index, int *type);

/*
 * No IEEE OUI is registered for droce: vendor 0, and a part id that spells
 * it, rather than borrowing Mellanox's 0x02c9 or rxe's 0xffffff.
 */
#define DV_VENDOR_ID 0x000000
#define DV_VENDOR_PART 0xd20ce

static struct dv_device *devices;
static int nb_devices;
static pthread_once_t devices_once = PTHREAD_ONCE_INIT;

/* The verbs names and the GUID of a device whose conf and GID table are
 * set. */
static void
dev_fill(struct dv_device *d)
{
	uint8_t *g;

	snprintf(d->ibdev.name, sizeof(d->ibdev.name), "%s", d->conf.name);
	/* UCX takes only a device whose /dev/infiniband/DEV_NAME is a char
	 * device it may read and write (a kernel's uverbs node); droce has
	 * none, and /dev/null is one anybody may open (doc/verbs.md, UCX) */
	snprintf(d->ibdev.dev_name, sizeof(d->ibdev.dev_name), "../null");
	snprintf(d->ibdev.dev_path, sizeof(d->ibdev.dev_path),
		"/nonexistent/droce/%.48s", d->ibdev.name);
	snprintf(d->ibdev.ibdev_path, sizeof(d->ibdev.ibdev_path),
		"/nonexistent/droce/%.48s", d->ibdev.name);
	d->ibdev.node_type = IBV_NODE_CA;
	d->ibdev.transport_type = IBV_TRANSPORT_IB;
	g = d->gids[0].gid + 8;		/* node GUID = EUI-64 of the MAC */
	memcpy(&d->guid, g, 8);
}

/*
 * Attached: a device per port of the daemon (HELLO on port 0 says how
 * many). The list is what could be probed; none if the daemon cannot be
 * reached (said on stderr).
 */
static void
devices_attached(struct dv_device *d, const char *path)
{
	struct dv_device *all;
	uint32_t n, i;

	if (da_dev_probe(d, path, 0) != 0)
		return;
	n = d->att->hello.nb_ports ? d->att->hello.nb_ports : 1;
	all = n > 1 ? calloc(n, sizeof(*all)) : NULL;
	if (all != NULL) {
		all[0] = *d;
		pthread_mutex_init(&all[0].lock, NULL);
		free(d);
		devices = all;
	}
	for (i = 1; all != NULL && i < n; i++) {
		all[i].conf = all[0].conf;
		pthread_mutex_init(&all[i].lock, NULL);
		if (da_dev_probe(&all[i], path, i) != 0)
			break;
	}
	nb_devices = all != NULL ? (int)i : 1;
	for (i = 0; i < (uint32_t)nb_devices; i++)
		dev_fill(&devices[i]);
}

static void
devices_init(void)
{
	struct dv_device *d = calloc(1, sizeof(*d));

	if (d == NULL)
		return;
	char path[108], err[640];

	/* A configuration mistake is said once, here, and the device is
	 * listed but does not open: no defaults in place of what was asked,
	 * no daemon asked either. */
	if (droce_conf_check(err, sizeof(err)) != 0) {
		fprintf(stderr, "%s\n", err);
		d->conf_bad = 1;
	}
	droce_conf_load(&d->conf);
	pthread_mutex_init(&d->lock, NULL);
	devices = d;
	/* attached: droced says what the devices are */
	if (!d->conf_bad && da_daemon_path(path, sizeof(path)) != NULL) {
		devices_attached(d, path);
		return;
	}
	/* GID table as rxe lays it out: link-local at 0, IPv4-mapped at 1;
	 * droce puts a configured IPv6 address at 2 */
	droce_gid_link_local(d->gids[0].gid, d->conf.mac);
	d->gids[0].valid = 1;
	if (d->conf.ipv4) {
		droce_gid_from_ipv4(d->gids[1].gid, d->conf.ipv4);
		d->gids[1].valid = 1;
	}
	if (d->conf.has_ipv6) {
		memcpy(d->gids[2].gid, d->conf.ipv6, 16);
		d->gids[2].valid = 1;
	}
	dev_fill(d);
	nb_devices = 1;
}

struct ibv_device **
ibv_get_device_list(int *num)
{
	struct ibv_device **list;
	int i;

	pthread_once(&devices_once, devices_init);
	list = calloc((size_t)nb_devices + 1, sizeof(*list));
	if (list == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	for (i = 0; i < nb_devices; i++)
		list[i] = &devices[i].ibdev;
	if (num)
		*num = nb_devices;
	return list;
}

void
ibv_free_device_list(struct ibv_device **list)
{
	free(list);
}

const char *
ibv_get_device_name(struct ibv_device *device)
{
	return device->name;
}

__be64
ibv_get_device_guid(struct ibv_device *device)
{
	return ((struct dv_device *)device)->guid;
}

static struct dv_device *
dev_of(struct ibv_context *ctx)
{
	return dv_ctx(ctx)->dev;
}

int
dv_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *a,
		size_t len)
{
	struct dv_device *d = dev_of(ctx);
	struct ibv_port_attr pa;

	if (port != 1)
		return EINVAL;
	if (dv_ctx(ctx)->att != NULL)
		return da_query_port(ctx, a, len);
	memset(&pa, 0, sizeof(pa));
	pa.state = IBV_PORT_ACTIVE;
	pa.max_mtu = IBV_MTU_4096;
	pa.active_mtu = (enum ibv_mtu)droce_eth_mtu_to_path_mtu(d->conf.mtu);
	pa.gid_tbl_len = DROCE_MAX_GIDS;
	pa.port_cap_flags = IBV_PORT_CM_SUP;
	pa.max_msg_sz = 1u << 31;
	pa.pkey_tbl_len = 1;
	pa.max_vl_num = 1;
	pa.active_width = 1;	/* 1X */
	pa.active_speed = 32;	/* EDR-class lane: a software NIC's guess */
	pa.phys_state = 5;	/* LinkUp */
	pa.link_layer = IBV_LINK_LAYER_ETHERNET;
	memcpy(a, &pa, len < sizeof(pa) ? len : sizeof(pa));
	return 0;
}

/*
 * The exported, pre-extension entry (verbs.h turns calls to it into an
 * inline that prefers the context's query_port): same answer, old layout.
 */
#undef ibv_query_port
int ibv_query_port(struct ibv_context *ctx, uint8_t port,
		struct _compat_ibv_port_attr *attr);

int
ibv_query_port(struct ibv_context *ctx, uint8_t port,
		struct _compat_ibv_port_attr *attr)
{
	return dv_query_port(ctx, port, (struct ibv_port_attr *)attr,
		offsetof(struct ibv_port_attr, link_layer) + 1);
}

int
ibv_query_device(struct ibv_context *ctx, struct ibv_device_attr *a)
{
	struct dv_device *d = dev_of(ctx);
	struct droce_dev_limits lim;
	int rc;

	if (dv_ctx(ctx)->att != NULL) {
		rc = da_query_device(ctx, a);
		if (rc != 0)
			return rc;
		/* what droced leaves to the device's driver */
		snprintf(a->fw_ver, sizeof(a->fw_ver), "droce-0.1 droced");
		a->vendor_id = DV_VENDOR_ID;
		a->vendor_part_id = DV_VENDOR_PART;
		a->hw_ver = 0;
		return 0;
	}
	droce_dev_default_limits(&lim);
	memset(a, 0, sizeof(*a));
	snprintf(a->fw_ver, sizeof(a->fw_ver), "droce-0.1");
	a->node_guid = d->guid;
	a->sys_image_guid = d->guid;
	a->max_mr_size = lim.max_mr_size;
	a->page_size_cap = 0xfffff000;
	a->vendor_id = DV_VENDOR_ID;
	a->vendor_part_id = DV_VENDOR_PART;
	a->hw_ver = 0;
	a->max_qp = (int)lim.max_qp;
	a->max_qp_wr = (int)lim.max_qp_wr;
	a->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN |
		IBV_DEVICE_MEM_WINDOW |
		IBV_DEVICE_MEM_WINDOW_TYPE_2B | IBV_DEVICE_MEM_MGT_EXTENSIONS |
		IBV_DEVICE_XRC;
	a->max_sge = (int)lim.max_sge;
	a->max_sge_rd = (int)lim.max_sge;
	a->max_cq = (int)lim.max_cq;
	a->max_cqe = (int)lim.max_cqe;
	a->max_mr = (int)lim.max_mr;
	a->max_pd = (int)lim.max_pd;
	a->max_qp_rd_atom = (int)lim.max_qp_rd_atom;
	a->max_qp_init_rd_atom = (int)lim.max_qp_rd_atom;
	a->max_res_rd_atom = (int)(lim.max_qp_rd_atom * lim.max_qp);
	a->atomic_cap = IBV_ATOMIC_HCA;
	a->max_mw = (int)lim.max_mw;
	a->max_ah = (int)lim.max_ah;
	a->max_srq = (int)lim.max_srq;
	a->max_srq_wr = (int)lim.max_srq_wr;
	a->max_srq_sge = (int)lim.max_srq_sge;
	a->max_mcast_grp = (int)lim.max_mcast_grp;
	a->max_mcast_qp_attach = (int)lim.max_mcast_qp_attach;
	a->max_total_mcast_qp_attach = (int)lim.max_total_mcast_qp_attach;
	a->max_pkeys = 1;
	a->phys_port_cnt = 1;
	return 0;
}

int
ibv_query_gid(struct ibv_context *ctx, uint8_t port, int index,
		union ibv_gid *gid)
{
	struct dv_device *d = dev_of(ctx);

	if (port != 1 || index < 0 || index >= DROCE_MAX_GIDS)
		return -1;
	memcpy(gid->raw, d->gids[index].gid, 16);	/* zero if unset */
	return 0;
}

int
_ibv_query_gid_ex(struct ibv_context *ctx, uint32_t port, uint32_t index,
		struct ibv_gid_entry *entry, uint32_t flags, size_t size)
{
	struct dv_device *d = dev_of(ctx);

	if (flags || port != 1 || index >= DROCE_MAX_GIDS ||
			size < sizeof(*entry))
		return EINVAL;
	if (!d->gids[index].valid)
		return ENODATA;
	memset(entry, 0, sizeof(*entry));
	memcpy(entry->gid.raw, d->gids[index].gid, 16);
	entry->gid_index = index;
	entry->port_num = port;
	entry->gid_type = IBV_GID_TYPE_ROCE_V2;
	entry->ndev_ifindex = 0;
	return 0;
}

int
ibv_query_gid_type(struct ibv_context *ctx, uint8_t port, unsigned int index,
		int *type)
{
	(void)ctx;
	if (port != 1 || index >= DROCE_MAX_GIDS)
		return -1;
	*type = DV_GID_TYPE_ROCE_V2;	/* every droce GID is RoCE v2 */
	return 0;
}

int
ibv_query_pkey(struct ibv_context *ctx, uint8_t port, int index, __be16 *pkey)
{
	(void)ctx;
	if (port != 1 || index != 0)
		return -1;
	*pkey = htons(0xffff);
	return 0;
}

/* There is no sysfs behind a droce device. */
int
ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size)
{
	(void)dir;
	(void)file;
	(void)buf;
	(void)size;
	errno = ENOENT;
	return -1;
}

struct ibv_context *
ibv_open_device(struct ibv_device *device)
{
	struct dv_context *c;
	struct verbs_context *v;

	if (((struct dv_device *)device)->conf_bad) {
		errno = EINVAL;		/* said at ibv_get_device_list */
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (c == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	v = &c->vctx;
	c->dev = (struct dv_device *)device;
	if (dv_context_events_init(c) != 0) {
		free(c);
		return NULL;
	}
	v->sz = sizeof(*v);
	v->query_port = dv_query_port;
	v->query_device_ex = dv_query_device_ex;
	v->advise_mr = dv_advise_mr;
	v->create_cq_ex = dv_create_cq_ex;
	v->create_qp_ex = dv_create_qp_ex;
	v->create_srq_ex = dv_create_srq_ex;
	v->get_srq_num = dv_get_srq_num;
	v->open_xrcd = dv_open_xrcd;
	v->close_xrcd = dv_close_xrcd;
	v->open_qp = dv_open_qp;
	v->ibv_create_flow = dv_create_flow;
	v->ibv_destroy_flow = dv_destroy_flow;
	v->context.device = device;
	v->context.cmd_fd = -1;
	v->context.num_comp_vectors = 1;
	v->context.abi_compat = __VERBS_ABI_IS_EXTENDED;
	v->context.ops.alloc_mw = dv_alloc_mw;
	v->context.ops.bind_mw = dv_bind_mw;
	v->context.ops.dealloc_mw = dv_dealloc_mw;
	v->context.ops.poll_cq = dv_poll_cq;
	v->context.ops.req_notify_cq = dv_req_notify_cq;
	v->context.ops.post_srq_recv = dv_post_srq_recv;
	v->context.ops.post_send = dv_post_send;
	v->context.ops.post_recv = dv_post_recv;
	pthread_mutex_init(&v->context.mutex, NULL);
	if (c->dev->att != NULL) {
		int rc = da_open(c);

		if (rc != 0) {
			dv_context_events_fini(c);
			free(c);
			errno = rc;
			return NULL;
		}
		v->context.ops.alloc_mw = da_alloc_mw;
		v->context.ops.bind_mw = da_bind_mw;
		v->context.ops.dealloc_mw = da_dealloc_mw;
		v->context.ops.poll_cq = da_poll_cq;
		v->context.ops.req_notify_cq = da_req_notify_cq;
		v->context.ops.post_srq_recv = da_post_srq_recv;
		v->context.ops.post_send = da_post_send;
		v->context.ops.post_recv = da_post_recv;
	}
	return &v->context;
}

int
ibv_close_device(struct ibv_context *context)
{
	struct dv_context *c = dv_ctx(context);

	if (c->att != NULL)
		da_close(c);
	else
		dv_port_put(c);
	dv_context_events_fini(c);
	free(c);
	return 0;
}

const char *
ibv_wc_status_str(enum ibv_wc_status status)
{
	return droce_wc_status_str(status);
}

const char *
ibv_node_type_str(enum ibv_node_type t)
{
	static const char *const s[] = { "unknown", "InfiniBand channel adapter",
		"InfiniBand switch", "InfiniBand router", "iWARP NIC",
		"usNIC", "usNIC UDP", "unspecified" };

	return (unsigned int)t < sizeof(s) / sizeof(s[0]) ? s[t] : "unknown";
}

const char *
ibv_port_state_str(enum ibv_port_state st)
{
	static const char *const s[] = { "PORT_NOP", "PORT_DOWN", "PORT_INIT",
		"PORT_ARMED", "PORT_ACTIVE", "PORT_ACTIVE_DEFER" };

	return (unsigned int)st < sizeof(s) / sizeof(s[0]) ? s[st] :
		"PORT_UNKNOWN";
}
