/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * The devices the CM works on: each opened once for the process (as
 * librdmacm does), and, once an ID is bound to it, its GSI QP with
 * receive and send buffers and an address handle per peer.
 */

#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cm_internal.h"
#include "droce_verbs.h"
#include "droce_wire.h"

struct cm_global cm = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.wake_fd = -1,
};

static pthread_once_t devices_once = PTHREAD_ONCE_INIT;
static int devices_rc;

/*
 * IBTA 1.5's FLUSH placement types the device takes
 * (IB_UVERBS_DEVICE_FLUSH_GLOBAL and _PERSISTENT, bits 38 and 39 of the
 * extended capabilities, kernel >= 6.2), as the access flags of rdma-core
 * >= 45 (IBV_ACCESS_FLUSH_GLOBAL and _PERSISTENT, bits 8 and 9): neither
 * is named by the rdma-core 44 headers droce builds against.
 */
static unsigned int
dev_flush_access(struct ibv_context *verbs)
{
	struct ibv_device_attr_ex ax;
	unsigned int access = 0;

	memset(&ax, 0, sizeof(ax));
	if (ibv_query_device_ex(verbs, NULL, &ax) != 0)
		return 0;
	if (ax.device_cap_flags_ex & (1ULL << 38))
		access |= 1u << 8;
	if (ax.device_cap_flags_ex & (1ULL << 39))
		access |= 1u << 9;
	return access;
}

static void
devices_open(void)
{
	struct ibv_device **list;
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	struct cm_dev *d, **tail = &cm.devs;
	int i, n;

	list = ibv_get_device_list(&n);
	if (list == NULL) {
		devices_rc = ENODEV;
		return;
	}
	for (i = 0; i < n; i++) {
		d = calloc(1, sizeof(*d));
		if (d == NULL)
			break;
		d->verbs = ibv_open_device(list[i]);
		if (d->verbs == NULL) {
			free(d);
			continue;
		}
		d->guid = be64toh(ibv_get_device_guid(list[i]));
		d->port_num = 1;
		d->mtu = IBV_MTU_1024;
		if (ibv_query_port(d->verbs, 1, &pa) == 0)
			d->mtu = pa.active_mtu;
		d->flush_access = dev_flush_access(d->verbs);
		d->max_resp_res = 1;
		d->max_init_depth = 1;
		if (ibv_query_device(d->verbs, &da) == 0) {
			d->max_resp_res = da.max_qp_rd_atom > UINT8_MAX - 1 ?
				UINT8_MAX - 1 : (uint8_t)da.max_qp_rd_atom;
			d->max_init_depth = da.max_qp_init_rd_atom > UINT8_MAX - 1 ?
				UINT8_MAX - 1 : (uint8_t)da.max_qp_init_rd_atom;
		}
		*tail = d;
		tail = &d->next;
	}
	ibv_free_device_list(list);
	/* ports start at random, as the kernel's ephemeral range does */
	cm.next_port = 32768 + cm_random32() % 28000;
	devices_rc = cm.devs != NULL ? 0 : ENODEV;
}

int
cm_devices_init(void)
{
	pthread_once(&devices_once, devices_open);
	if (devices_rc != 0) {
		errno = devices_rc;
		return -1;
	}
	return 0;
}

struct cm_dev *
cm_dev_of(struct ibv_context *verbs)
{
	struct cm_dev *d;

	for (d = cm.devs; d != NULL; d = d->next)
		if (d->verbs == verbs)
			return d;
	return NULL;
}

struct ibv_pd *
cm_dev_pd(struct cm_dev *d)
{
	if (d->pd == NULL)
		d->pd = ibv_alloc_pd(d->verbs);
	return d->pd;
}

int
cm_dev_find_addr(const struct sockaddr *sa, struct cm_dev **out,
		uint8_t *gid_index)
{
	struct ibv_port_attr pa;
	union ibv_gid g;
	uint8_t want[16];
	struct cm_dev *d;
	int i;

	cm_sa_to_gid(sa, want);
	for (d = cm.devs; d != NULL; d = d->next) {
		if (ibv_query_port(d->verbs, d->port_num, &pa) != 0)
			continue;
		for (i = 0; i < pa.gid_tbl_len; i++) {
			if (ibv_query_gid(d->verbs, d->port_num, i, &g) != 0)
				break;
			if (memcmp(g.raw, want, 16) == 0) {
				*out = d;
				*gid_index = (uint8_t)i;
				return 0;
			}
		}
	}
	return -1;
}

static bool
gid_link_local(const uint8_t *g)
{
	return g[0] == 0xfe && (g[1] & 0xc0) == 0x80;
}

uint8_t
cm_dev_gid_index(struct cm_dev *d, const uint8_t *gid, const uint8_t peer[16])
{
	static const uint8_t zero[16];
	int i, fallback = -1;
	union ibv_gid g;

	for (i = 0; i < 16; i++) {
		if (ibv_query_gid(d->verbs, d->port_num, i, &g) != 0)
			break;
		if (gid != NULL && memcmp(g.raw, gid, 16) == 0)
			return (uint8_t)i;
		if (fallback < 0 && memcmp(g.raw, zero, 16) != 0 &&
				droce_gid_is_ipv4(g.raw, NULL) == droce_gid_is_ipv4(peer, NULL) &&
				(droce_gid_is_ipv4(peer, NULL) ||
				gid_link_local(g.raw) == gid_link_local(peer)))
			fallback = i;
	}
	return fallback < 0 ? 0 : (uint8_t)fallback;
}

static void
post_recv(struct cm_dev *d, uint32_t i)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(d->buf + (size_t)i * CM_RECV_LEN),
		.length = CM_RECV_LEN,
		.lkey = d->mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;

	ibv_post_recv(d->gsi, &wr, &bad);
}

static int
gsi_up(struct cm_dev *d)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr a;

	memset(&ia, 0, sizeof(ia));
	ia.send_cq = ia.recv_cq = d->cq;
	ia.qp_type = IBV_QPT_UD;
	ia.cap.max_send_wr = CM_SENDS;
	ia.cap.max_recv_wr = CM_RECVS;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	d->gsi = droce_create_gsi_qp(d->pd, &ia);
	if (d->gsi == NULL)
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = d->port_num;
	a.qkey = CM_QKEY;
	if (ibv_modify_qp(d->gsi, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			IBV_QP_PORT | IBV_QP_QKEY) != 0)
		return -1;
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(d->gsi, &a, IBV_QP_STATE) != 0)
		return -1;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	return ibv_modify_qp(d->gsi, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

/* The device's GSI QP, buffers and completion channel (lock held). */
int
cm_dev_start(struct cm_dev *d)
{
	size_t len = (size_t)CM_RECVS * CM_RECV_LEN +
		(size_t)CM_SENDS * CM_MAD_LEN;
	uint32_t i;

	if (d->up)
		return 0;
	if (cm_dev_pd(d) == NULL)
		return -1;
	d->ch = ibv_create_comp_channel(d->verbs);
	if (d->ch == NULL)
		return -1;
	d->cq = ibv_create_cq(d->verbs, CM_RECVS + CM_SENDS, d, d->ch, 0);
	d->buf = calloc(1, len);
	if (d->cq == NULL || d->buf == NULL)
		goto fail;
	d->mr = ibv_reg_mr(d->pd, d->buf, len, IBV_ACCESS_LOCAL_WRITE);
	if (d->mr == NULL || gsi_up(d) != 0)
		goto fail;
	for (i = 0; i < CM_RECVS; i++)
		post_recv(d, i);
	d->send_free = CM_SENDS == 64 ? ~0ull : (1ull << CM_SENDS) - 1;
	ibv_req_notify_cq(d->cq, 0);
	d->up = true;
	if (cm_agent_start() != 0)
		return -1;
	cm_agent_wake();	/* the agent polls the new channel */
	return 0;
fail:
	if (d->gsi != NULL)
		ibv_destroy_qp(d->gsi);
	if (d->mr != NULL)
		ibv_dereg_mr(d->mr);
	if (d->cq != NULL)
		ibv_destroy_cq(d->cq);
	ibv_destroy_comp_channel(d->ch);
	free(d->buf);
	d->gsi = NULL;
	d->mr = NULL;
	d->cq = NULL;
	d->ch = NULL;
	d->buf = NULL;
	return -1;
}

static bool
ah_in_use(const struct cm_dev *d, const struct ibv_ah *ah)
{
	const struct cm_id_priv *p;

	for (p = cm.ids; p != NULL; p = p->next)
		if (p->dev == d && p->ah == ah)
			return true;
	return false;
}

/*
 * Room for one more AH: past CM_AH_CACHE the oldest that no ID holds
 * goes, and only while no MAD is in flight on QP1 (a send names its AH
 * until it completes); else the cache grows: an ID's AH is never
 * destroyed under it, however many peers a listener serves.
 */
static int
ah_room(struct cm_dev *d)
{
	const uint64_t all = CM_SENDS == 64 ? ~0ull : (1ull << CM_SENDS) - 1;
	struct cm_ah *n;
	uint32_t i, cap;

	if (d->nah >= CM_AH_CACHE && d->send_free == all)
		for (i = 0; i < d->nah; i++) {
			if (ah_in_use(d, d->ahs[i].ah))
				continue;
			ibv_destroy_ah(d->ahs[i].ah);
			memmove(&d->ahs[i], &d->ahs[i + 1],
				sizeof(d->ahs[0]) * (d->nah - i - 1));
			d->nah--;
			break;
		}
	if (d->nah < d->ah_cap)
		return 0;
	cap = d->ah_cap == 0 ? CM_AH_CACHE : d->ah_cap * 2;
	n = realloc(d->ahs, sizeof(*n) * cap);
	if (n == NULL)
		return -1;
	d->ahs = n;
	d->ah_cap = cap;
	return 0;
}

/* The cached AH to dgid, or NULL. */
static struct ibv_ah *
ah_cached(const struct cm_dev *d, const uint8_t dgid[16])
{
	uint32_t i;

	for (i = 0; i < d->nah; i++)
		if (memcmp(d->ahs[i].gid, dgid, 16) == 0)
			return d->ahs[i].ah;
	return NULL;
}

/*
 * An AH to a peer, kept while there is room (a peer's CM traffic is
 * rare and repeats). Creating one may wait for ARP: the lock is held
 * here, which only delays other CM work, never a data path.
 */
struct ibv_ah *
cm_dev_ah(struct cm_dev *d, const uint8_t dgid[16], uint8_t sgid_index)
{
	struct ibv_ah_attr a;
	struct ibv_ah *ah = ah_cached(d, dgid);

	if (ah != NULL)
		return ah;
	if (ah_room(d) != 0)
		return NULL;
	memset(&a, 0, sizeof(a));
	a.is_global = 1;
	memcpy(a.grh.dgid.raw, dgid, 16);
	a.grh.sgid_index = sgid_index;
	a.grh.hop_limit = 64;
	a.port_num = d->port_num;
	ah = ibv_create_ah(d->pd, &a);
	if (ah == NULL)
		return NULL;
	memcpy(d->ahs[d->nah].gid, dgid, 16);
	d->ahs[d->nah++].ah = ah;
	return ah;
}

/*
 * The AH to answer a MAD that came from dgid (lock held). A peer that
 * sends us a MAD has asked for our MAC first, and we learnt its own from
 * that, so its AH is made at once. A source nobody can resolve (a
 * spoofed one) must not hold the agent, and with it the CM's lock and
 * every rdma_cm call of the application, for ibv_create_ah's resolution
 * (seconds): it gets CM_REPLY_RESOLVE_MS and one ARP/ND request, then the
 * MAD is dropped and counted; a real peer's retransmission finds its
 * neighbour known.
 */
struct ibv_ah *
cm_dev_reply_ah(struct cm_dev *d, const uint8_t dgid[16], uint8_t sgid_index)
{
	struct ibv_ah *ah = ah_cached(d, dgid);

	if (ah != NULL)
		return ah;
	if (droce_resolve_gid(d->verbs, dgid, CM_REPLY_RESOLVE_MS) != 0) {
		cm.st.rx_drop_unresolved++;
		return NULL;
	}
	return cm_dev_ah(d, dgid, sgid_index);
}

/* Send one MAD to QP1 behind ah (lock held): 0, or -1 when every send
 * buffer is in flight (the MAD counts as lost: retransmission covers). */
int
cm_send_mad(struct cm_dev *d, struct ibv_ah *ah, const uint8_t *mad)
{
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	uint32_t i;
	uint8_t *b;

	if (d->send_free == 0 || ah == NULL) {
		cm.st.tx_drop_nobuf++;
		return -1;
	}
	i = (uint32_t)__builtin_ctzll(d->send_free);
	d->send_free &= ~(1ull << i);
	b = d->buf + (size_t)CM_RECVS * CM_RECV_LEN + (size_t)i * CM_MAD_LEN;
	memcpy(b, mad, CM_MAD_LEN);
	sge.addr = (uintptr_t)b;
	sge.length = CM_MAD_LEN;
	sge.lkey = d->mr->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = CM_RECVS + i;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_SOLICITED;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = 1;
	wr.wr.ud.remote_qkey = CM_QKEY;
	if (ibv_post_send(d->gsi, &wr, &bad) != 0) {
		d->send_free |= 1ull << i;
		cm.st.tx_drop_nobuf++;
		return -1;
	}
	cm.st.tx_mads++;
	return 0;
}

/* Drain the device's CQ (agent thread, lock held). */
void
cm_dev_poll(struct cm_dev *d)
{
	struct ibv_wc wc[16];
	int n, i;

	while ((n = ibv_poll_cq(d->cq, 16, wc)) > 0) {
		for (i = 0; i < n; i++) {
			if (wc[i].wr_id >= CM_RECVS) {
				d->send_free |= 1ull << (wc[i].wr_id - CM_RECVS);
				continue;
			}
			if (wc[i].status == IBV_WC_SUCCESS) {
				const uint8_t *b = d->buf +
					(size_t)wc[i].wr_id * CM_RECV_LEN;

				if (wc[i].byte_len < 40 ||
						!(wc[i].wc_flags & IBV_WC_GRH))
					cm.st.rx_drop_short++;
				else
					cm_agent_rx(d, b, b + 40,
						wc[i].byte_len - 40);
			}
			if (wc[i].status != IBV_WC_WR_FLUSH_ERR)
				post_recv(d, (uint32_t)wc[i].wr_id);
		}
	}
}
