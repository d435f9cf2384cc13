/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * RAW_PACKET QPs, receive side: flow rules (ibv_create_flow(3)) compiled
 * into masked compares over a frame's headers, and frames that match one
 * copied into the QP's receive WQEs. Such a QP bypasses the IB transport:
 * whole Ethernet frames in, whole frames out (tp_raw_tx.c). A frame goes
 * only into the posted buffers of the receive WQE it takes, bounded by
 * their lengths: one that does not fit completes IBV_WC_LOC_LEN_ERR with
 * nothing written, as a NIC's length check does, and the QP goes on.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tp_internal.h"
#include "tp_raw.h"

#define ETYPE_VLAN	0x8100
#define ETYPE_IPV4	0x0800
#define ETYPE_IPV6	0x86dd

int
tp_raw_init(struct droce_qp *qp)
{
	struct tp_raw *r = calloc(1, sizeof(*r));

	if (r == NULL)
		return -ENOMEM;
	r->hdr = malloc((size_t)qp->sq.size * DROCE_RAW_TSO_HDR_MAX);
	r->w = calloc(qp->sq.size, sizeof(*r->w));
	if (r->hdr == NULL || r->w == NULL) {
		free(r->hdr);
		free(r->w);
		free(r);
		return -ENOMEM;
	}
	qp->raw = r;
	return 0;
}

void
tp_raw_free(struct droce_qp *qp)
{
	struct tp_raw *r = qp->raw;

	if (r == NULL)
		return;
	while (r->flows != NULL) {
		struct droce_flow *f = r->flows;

		r->flows = f->next;
		free(f);
	}
	free(r->hdr);
	free(r->w);
	free(r);
	qp->raw = NULL;
}

int
tp_raw_parse(const uint8_t *f, uint32_t len, struct tp_raw_hdrs *h)
{
	uint32_t l3 = DROCE_ETH_HLEN, ihl;

	memset(h, 0, sizeof(*h));
	if (len < DROCE_ETH_HLEN)
		return -1;
	h->etype = (uint16_t)(f[12] << 8 | f[13]);
	if (h->etype == ETYPE_VLAN) {
		if (len < DROCE_ETH_HLEN + DROCE_VLAN_HLEN)
			return -1;
		h->vlan = 1;
		l3 += DROCE_VLAN_HLEN;
		h->etype = (uint16_t)(f[16] << 8 | f[17]);
	}
	h->l3off = l3;
	if (h->etype == ETYPE_IPV4 && len >= l3 + DROCE_IPV4_HLEN &&
			f[l3] >> 4 == 4) {
		ihl = (uint32_t)(f[l3] & 0xf) * 4;
		if (ihl < DROCE_IPV4_HLEN || len < l3 + ihl)
			return -1;
		h->l3 = 4;
		h->l4off = l3 + ihl;
		/* a fragment other than the first has no L4 header */
		if ((f[l3 + 6] & 0x1f) == 0 && f[l3 + 7] == 0)
			h->l4 = f[l3 + 9];
	} else if (h->etype == ETYPE_IPV6 && len >= l3 + DROCE_IPV6_HLEN &&
			f[l3] >> 4 == 6) {
		h->l3 = 6;
		h->l4off = l3 + DROCE_IPV6_HLEN;
		h->l4 = f[l3 + 6];
	} else {
		return h->etype == ETYPE_IPV4 || h->etype == ETYPE_IPV6 ? -1 : 0;
	}
	/* ports at least */
	if (h->l4 != 0 && len < h->l4off + 4)
		h->l4 = 0;
	return 0;
}

/* ---- flow rules ---- */

static int
cmp_add(struct droce_flow *fl, uint8_t layer, uint8_t off, const void *val,
		const void *mask, uint8_t len)
{
	const uint8_t *v = val, *m = mask;
	struct tp_flow_cmp *c;
	uint8_t i, any = 0;

	for (i = 0; i < len; i++)
		any |= m[i];
	if (!any)
		return 0;	/* a zero mask matches anything */
	if (fl->ncmp == TP_FLOW_CMP_MAX)
		return -EINVAL;
	c = &fl->cmp[fl->ncmp++];
	c->layer = layer;
	c->off = off;
	c->len = len;
	for (i = 0; i < len; i++) {
		c->val[i] = v[i] & m[i];
		c->mask[i] = m[i];
	}
	return 0;
}

static int
need_l3(struct droce_flow *fl, uint8_t l3)
{
	if (fl->l3 != 0 && fl->l3 != l3)
		return -EINVAL;
	fl->l3 = l3;
	return 0;
}

static int
spec_eth(struct droce_flow *fl, const struct ibv_flow_spec_eth *s)
{
	if (s->mask.vlan_tag != 0)
		return -EOPNOTSUPP;
	if (cmp_add(fl, TP_FL_L2, 0, s->val.dst_mac, s->mask.dst_mac, 6) ||
			cmp_add(fl, TP_FL_L2, 6, s->val.src_mac,
				s->mask.src_mac, 6) ||
			cmp_add(fl, TP_FL_ETYPE, 0, &s->val.ether_type,
				&s->mask.ether_type, 2))
		return -EINVAL;
	return 0;
}

static int
spec_ipv4(struct droce_flow *fl, const struct ibv_flow_ipv4_ext_filter *v,
		const struct ibv_flow_ipv4_ext_filter *m, int ext)
{
	uint8_t fv = (uint8_t)(v->flags << 5), fm = (uint8_t)(m->flags << 5);

	if (need_l3(fl, 4) ||
			cmp_add(fl, TP_FL_L3, 12, &v->src_ip, &m->src_ip, 4) ||
			cmp_add(fl, TP_FL_L3, 16, &v->dst_ip, &m->dst_ip, 4))
		return -EINVAL;
	if (!ext)
		return 0;
	if (m->flags > 7)
		return -EINVAL;
	if (cmp_add(fl, TP_FL_L3, 9, &v->proto, &m->proto, 1) ||
			cmp_add(fl, TP_FL_L3, 1, &v->tos, &m->tos, 1) ||
			cmp_add(fl, TP_FL_L3, 8, &v->ttl, &m->ttl, 1) ||
			cmp_add(fl, TP_FL_L3, 6, &fv, &fm, 1))
		return -EINVAL;
	return 0;
}

static int
spec_ipv6(struct droce_flow *fl, const struct ibv_flow_spec_ipv6 *s)
{
	static const uint8_t fl_bits[4] = { 0x00, 0x0f, 0xff, 0xff };
	uint8_t flv[4], flm[4], tcv[2], tcm[2];
	int i;

	/* the flow label is the low 20 bits of the first word, in network
	 * order as the kernel's ib_flow_ipv6_filter has it */
	memcpy(flv, &s->val.flow_label, 4);
	memcpy(flm, &s->mask.flow_label, 4);
	for (i = 0; i < 4; i++)
		flm[i] &= fl_bits[i];
	/* the traffic class straddles bytes 0 and 1 */
	tcv[0] = s->val.traffic_class >> 4;
	tcv[1] = (uint8_t)(s->val.traffic_class << 4);
	tcm[0] = s->mask.traffic_class >> 4;
	tcm[1] = (uint8_t)(s->mask.traffic_class << 4);
	if (need_l3(fl, 6) ||
			cmp_add(fl, TP_FL_L3, 8, s->val.src_ip, s->mask.src_ip, 16) ||
			cmp_add(fl, TP_FL_L3, 24, s->val.dst_ip, s->mask.dst_ip, 16) ||
			cmp_add(fl, TP_FL_L3, 0, flv, flm, 4) ||
			cmp_add(fl, TP_FL_L3, 0, tcv, tcm, 2) ||
			cmp_add(fl, TP_FL_L3, 6, &s->val.next_hdr,
				&s->mask.next_hdr, 1) ||
			cmp_add(fl, TP_FL_L3, 7, &s->val.hop_limit,
				&s->mask.hop_limit, 1))
		return -EINVAL;
	return 0;
}

static int
spec_l4(struct droce_flow *fl, const struct ibv_flow_spec_tcp_udp *s,
		uint8_t proto)
{
	if (fl->l4 != 0 && fl->l4 != proto)
		return -EINVAL;
	fl->l4 = proto;
	if (cmp_add(fl, TP_FL_L4, 0, &s->val.src_port, &s->mask.src_port, 2) ||
			cmp_add(fl, TP_FL_L4, 2, &s->val.dst_port,
				&s->mask.dst_port, 2))
		return -EINVAL;
	return 0;
}

/* One spec into fl: 0 or a negative errno. */
static int
spec_add(struct droce_flow *fl, const struct ibv_flow_spec *s)
{
	struct ibv_flow_ipv4_ext_filter v, m;

	switch ((int)s->hdr.type) {
	case IBV_FLOW_SPEC_ETH:
		if (s->hdr.size != sizeof(s->eth))
			return -EINVAL;
		return spec_eth(fl, &s->eth);
	case IBV_FLOW_SPEC_IPV4:
		if (s->hdr.size != sizeof(s->ipv4))
			return -EINVAL;
		memset(&v, 0, sizeof(v));
		memset(&m, 0, sizeof(m));
		v.src_ip = s->ipv4.val.src_ip;
		v.dst_ip = s->ipv4.val.dst_ip;
		m.src_ip = s->ipv4.mask.src_ip;
		m.dst_ip = s->ipv4.mask.dst_ip;
		return spec_ipv4(fl, &v, &m, 0);
	case IBV_FLOW_SPEC_IPV4_EXT:
		if (s->hdr.size != sizeof(s->ipv4_ext))
			return -EINVAL;
		return spec_ipv4(fl, &s->ipv4_ext.val, &s->ipv4_ext.mask, 1);
	case IBV_FLOW_SPEC_IPV6:
		if (s->hdr.size != sizeof(s->ipv6))
			return -EINVAL;
		return spec_ipv6(fl, &s->ipv6);
	case IBV_FLOW_SPEC_TCP:
	case IBV_FLOW_SPEC_UDP:
		if (s->hdr.size != sizeof(s->tcp_udp))
			return -EINVAL;
		return spec_l4(fl, &s->tcp_udp,
			s->hdr.type == IBV_FLOW_SPEC_TCP ? 6 : 17);
	default:
		/* inner headers, tunnels, ESP, MPLS, actions */
		return -EOPNOTSUPP;
	}
}

struct droce_flow *
droce_flow_create(struct droce_qp *qp, const struct ibv_flow_attr *attr)
{
	const uint8_t *p = (const uint8_t *)(attr + 1);
	struct droce_flow *fl, **pp;
	uint32_t i, left;
	int rc;

	if (qp == NULL || attr == NULL || qp->type != IBV_QPT_RAW_PACKET ||
			qp->raw == NULL || attr->port != 1 || attr->comp_mask) {
		errno = EINVAL;
		return NULL;
	}
	if (attr->type != IBV_FLOW_ATTR_NORMAL || attr->flags != 0) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	/* the specs lie within attr->size when it says so (rdma-core's
	 * callers set it), within what their own sizes say otherwise */
	left = attr->size > sizeof(*attr) ? attr->size - sizeof(*attr) :
		UINT32_MAX;
	fl = calloc(1, sizeof(*fl));
	if (fl == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	fl->qp = qp;
	fl->priority = attr->priority;
	for (i = 0; i < attr->num_of_specs; i++) {
		struct ibv_flow_spec s;
		uint16_t size;

		/* callers pack specs at 4-byte boundaries (perftest does),
		 * and the union wants 8: look at a copy */
		if (left < sizeof(s.hdr)) {
			rc = -EINVAL;
			goto fail;
		}
		memcpy(&s.hdr, p, sizeof(s.hdr));
		size = s.hdr.size;
		if (size < sizeof(s.hdr) || size > left) {
			rc = -EINVAL;
			goto fail;
		}
		memset(&s, 0, sizeof(s));
		memcpy(&s, p, size < sizeof(s) ? size : sizeof(s));
		rc = spec_add(fl, &s);
		if (rc != 0)
			goto fail;
		p += size;
		left -= size;
	}
	/* behind the flows of the same or a lower priority value */
	for (pp = &qp->raw->flows; *pp != NULL &&
			(*pp)->priority <= fl->priority; pp = &(*pp)->next)
		;
	fl->next = *pp;
	*pp = fl;
	qp->raw->nb_flows++;
	__atomic_store_n(&qp->queue->nb_raw_flows, qp->queue->nb_raw_flows + 1,
		__ATOMIC_RELEASE);
	return fl;
fail:
	free(fl);
	errno = -rc;
	return NULL;
}

int
droce_flow_destroy(struct droce_flow *fl)
{
	struct droce_qp *qp = fl->qp;
	struct droce_flow **pp;

	for (pp = &qp->raw->flows; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == fl) {
			*pp = fl->next;
			qp->raw->nb_flows--;
			__atomic_store_n(&qp->queue->nb_raw_flows,
				qp->queue->nb_raw_flows - 1, __ATOMIC_RELEASE);
			break;
		}
	}
	free(fl);
	return 0;
}

uint32_t
droce_tp_queue_raw_flows(const struct droce_tp_queue *q)
{
	return __atomic_load_n(&q->nb_raw_flows, __ATOMIC_ACQUIRE);
}

static int
flow_match(const struct droce_flow *fl, const uint8_t *f, uint32_t len,
		const struct tp_raw_hdrs *h)
{
	uint8_t et[2] = { (uint8_t)(h->etype >> 8), (uint8_t)h->etype };
	uint32_t i, j, base;

	if (fl->l3 != 0 && fl->l3 != h->l3)
		return 0;
	if (fl->l4 != 0 && (h->l3 == 0 || fl->l4 != h->l4))
		return 0;
	for (i = 0; i < fl->ncmp; i++) {
		const struct tp_flow_cmp *c = &fl->cmp[i];
		const uint8_t *b;

		switch (c->layer) {
		case TP_FL_L2:
			base = 0;
			break;
		case TP_FL_VLAN:
			if (!h->vlan)
				return 0;
			base = 14;
			break;
		case TP_FL_L3:
			if (h->l3 == 0)
				return 0;
			base = h->l3off;
			break;
		case TP_FL_L4:
			if (h->l4 == 0)
				return 0;
			base = h->l4off;
			break;
		default:	/* TP_FL_ETYPE */
			base = UINT32_MAX;
			break;
		}
		if (base == UINT32_MAX) {
			b = et;
		} else {
			if (base + c->off + c->len > len)
				return 0;
			b = f + base + c->off;
		}
		for (j = 0; j < c->len; j++)
			if ((b[j] & c->mask[j]) != c->val[j])
				return 0;
	}
	return 1;
}

/* The whole frame into the QP's next receive WQE. */
static void
raw_deliver(struct droce_qp *qp, const uint8_t *f, uint32_t len,
		const struct tp_raw_hdrs *h)
{
	struct tp_rwqe rw;
	struct ibv_wc *wc;
	enum ibv_wc_status st = IBV_WC_SUCCESS;
	int rc;

	if (qp->state != IBV_QPS_RTR && qp->state != IBV_QPS_RTS &&
			qp->state != IBV_QPS_SQD) {
		qp->queue->st.rx_drop_state++;
		return;
	}
	if (tp_take_rwqe(qp, &rw) != 0) {
		/* no receive posted: a NIC drops it too. On the QP only:
		 * the queue's figure sums its QPs' */
		qp->st.rx_drop_state++;
		return;
	}
	/* every piece checked before one byte is written */
	rc = tp_sge_room(qp->dev, qp->pd, rw.sge, rw.num_sge, 0, len);
	if (rc == 0)
		rc = tp_sge_copy_in(qp->dev, qp->pd, rw.sge, rw.num_sge, 0,
			f, len);
	if (rc == -EMSGSIZE) {
		st = IBV_WC_LOC_LEN_ERR;
		qp->st.rx_drop_len++;
	} else if (rc != 0) {
		st = IBV_WC_LOC_PROT_ERR;
	}
	qp->st.rx_pkts++;
	qp->st.rx_bytes += len;
	wc = tp_cq_slot(qp->rcq);
	if (wc == NULL)
		return;
	wc->wr_id = rw.wr_id;
	wc->status = st;
	wc->opcode = IBV_WC_RECV;
	wc->byte_len = len;
	wc->qp_num = qp->qpn;
	if (st == IBV_WC_SUCCESS && tp_raw_csum_ok(f, len, h))
		wc->wc_flags = IBV_WC_IP_CSUM_OK;
	tp_cq_commit(qp->rcq, 0);
}

int
tp_raw_rx(struct droce_tp_queue *q, const uint8_t *frame, uint32_t len)
{
	const struct droce_flow *best = NULL;
	struct tp_raw_hdrs h;
	uint32_t i;

	if (droce_wire_peek_dqpn(frame, len) >= 0)
		return 0;	/* RoCE: the transport's */
	if (tp_raw_parse(frame, len, &h) != 0)
		return 1;
	for (i = 0; i < q->nb_qps; i++) {
		const struct droce_qp *qp = q->qps[i];
		const struct droce_flow *fl;

		if (qp->raw == NULL)
			continue;
		/* each QP's flows are in priority order: its first match
		 * is its best */
		for (fl = qp->raw->flows; fl != NULL; fl = fl->next) {
			if (best != NULL && fl->priority >= best->priority)
				break;
			if (flow_match(fl, frame, len, &h)) {
				best = fl;
				break;
			}
		}
	}
	if (best != NULL)
		raw_deliver(best->qp, frame, len, &h);
	return 1;
}
