/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * Transmit side shared by requester and responder: a batch of buffers
 * from the environment per progress call, and per-QP header templates
 * (Ethernet/IP/UDP fields from the address vector, built once).
 */

#include <string.h>

#include "tp_internal.h"

uint8_t *
tp_tx_get_more(struct droce_tp_queue *q, uint32_t cap, struct droce_txbuf **b)
{
	uint32_t n;

	if (q->tx_budget == 0 || q->io.tx_alloc == NULL)
		return NULL;
	if (q->tx_used == q->tx_n) {
		if (q->tx_n == TP_TX_BATCH)
			tp_tx_flush(q);
		/*
		 * Ask for a few, then double: a pass often sends one frame
		 * (an ACK, a latency test's request), and a batch of 32 for
		 * it cost 31 buffers handed out and given back, ~300 cycles
		 * of a 64-byte WRITE's round trip.
		 */
		n = q->tx_n < TP_TX_FIRST ? TP_TX_FIRST : q->tx_n;
		if (n > TP_TX_BATCH - q->tx_n)
			n = TP_TX_BATCH - q->tx_n;
		n = q->io.tx_alloc(q->io.arg, q->tx + q->tx_n, n, cap);
		if (n == 0)
			return NULL;
		q->tx_n += n;
	}
	*b = &q->tx[q->tx_used];
	if ((*b)->cap < cap)
		return NULL;
	(*b)->nspan = 0;
	(*b)->tso_mss = 0;
	return (*b)->data;
}

int
tp_tx_spans_done(struct droce_qp *qp, struct droce_txbuf *b,
		const uint8_t *buf, uint32_t hlen, uint32_t n, uint32_t plen)
{
	struct droce_tp_queue *q = qp->queue;
	uint32_t i, st;

	if (q->io.zc_mem_ok != NULL)
		for (i = 0; i < n; i++)
			if (!q->io.zc_mem_ok(q->io.arg, b->span[i].addr,
					b->span[i].len))
				return -1;
	st = droce_wire_icrc_begin(buf, hlen);
	for (i = 0; i < n; i++) {
		st = droce_icrc_update(st, b->span[i].addr, b->span[i].len);
		droce_mr_zc_get(b->span[i].mr);
	}
	b->nspan = n;
	b->tail_len = droce_wire_icrc_end(st, plen, b->tail);
	tp_tx_done(qp, b, hlen);
	q->st.tx_bytes += plen + b->tail_len;
	q->st.tx_zc_pkts++;
	qp->st.tx_bytes += plen + b->tail_len;
	qp->st.tx_zc_pkts++;
	if (__builtin_expect(qp->cc.limited, 0))
		tp_cc_tx(qp, plen + b->tail_len);
	return 0;
}

void
tp_tx_flush(struct droce_tp_queue *q)
{
	if (q->tx_used)
		q->io.tx_submit(q->io.arg, q->tx, q->tx_used);
	if (q->tx_n > q->tx_used)
		q->io.tx_free(q->io.arg, q->tx + q->tx_used,
			q->tx_n - q->tx_used);
	q->tx_n = q->tx_used = 0;
}

/* L2-L4 fields of a frame to av from this device. */
static void
fill_l2l4(struct droce_dev *dev, struct droce_pkt *p, const struct droce_av *av,
		uint16_t sport)
{
	const uint8_t *sgid = dev->conf.gids[av->sgid_index].gid;
	uint32_t ip;

	memset(p, 0, sizeof(*p));
	memcpy(p->dst_mac, av->dmac, 6);
	memcpy(p->src_mac, dev->conf.mac, 6);
	p->has_vlan = av->vlan_tci != 0;
	p->vlan_tci = av->vlan_tci;
	p->ip_ver = droce_gid_is_ipv4(av->dgid, &ip) ? 4 : 6;
	p->tclass = tp_cc_tclass(dev, av->tclass);
	/* rxe sends the route's hop limit (64) when asked for 0 or 1 */
	p->ttl = av->hop_limit > 1 ? av->hop_limit : 64;
	p->ip_df = 1;
	p->flow_label = p->ip_ver == 6 ? av->flow_label : 0;
	memcpy(p->sgid, sgid, 16);
	memcpy(p->dgid, av->dgid, 16);
	p->udp_sport = sport;
	p->udp_dport = DROCE_ROCE_UDP_PORT;
	p->pkey = 0xffff;
}

/*
 * A UD QP's receive template: frames from anyone to the device's first
 * IPv4 GID (the full receive takes frames to any of its GIDs, multicast,
 * VLAN and IPv6 ones).
 */
static void
set_rx_template_ud(struct droce_qp *qp)
{
	const struct droce_dev *dev = qp->dev;
	uint32_t i, ip;

	qp->rx_fast = 0;
	for (i = 0; i < DROCE_MAX_GIDS; i++)
		if (dev->conf.gids[i].valid &&
				droce_gid_is_ipv4(dev->conf.gids[i].gid, &ip))
			break;
	if (i < DROCE_MAX_GIDS && droce_wire_rx_tmpl_init(&qp->rx_tmpl,
			dev->conf.mac, dev->conf.gids[i].gid, NULL, qp->qpn,
			DROCE_TRANSPORT_UD) == 0)
		qp->rx_fast = 1;
}

/*
 * The receive template of a connected QP: frames from its peer to the
 * GID it sends from, a valid one of the device's (qp_chk_attr saw to it;
 * the full receive takes frames to any of them, and the rest: XRC, VLAN,
 * IPv6).
 */
static void
set_rx_template(struct droce_qp *qp)
{
	const struct droce_dev *dev = qp->dev;

	qp->rx_fast = 0;
	if ((qp->type != IBV_QPT_RC && qp->type != IBV_QPT_UC) || qp->xrc ||
			qp->tmpl.has_vlan || qp->tmpl.ip_ver != 4)
		return;
	if (droce_wire_rx_tmpl_init(&qp->rx_tmpl, dev->conf.mac,
			qp->tmpl.sgid, qp->tmpl.dgid, qp->qpn,
			qp->type == IBV_QPT_UC ? DROCE_TRANSPORT_UC :
			DROCE_TRANSPORT_RC) == 0)
		qp->rx_fast = 1;
}

void
tp_qp_set_template(struct droce_qp *qp)
{
	uint16_t sport;

	if (qp->type == IBV_QPT_UD) {
		sport = droce_udp_sport_qpn(qp->qpn);
		memset(&qp->tmpl, 0, sizeof(qp->tmpl));
		qp->tmpl.udp_sport = sport;
		qp->ud_tmpl_ok = 0;
		set_rx_template_ud(qp);
		return;
	}
	sport = qp->av.udp_sport ? qp->av.udp_sport :
		droce_udp_sport_flow(qp->qpn, qp->dest_qpn, qp->av.flow_label);
	fill_l2l4(qp->dev, &qp->tmpl, &qp->av, sport);
	droce_wire_tmpl_init(&qp->htmpl, &qp->tmpl);
	set_rx_template(qp);
}

void
tp_ud_template_build(struct droce_qp *qp, const struct droce_av *av)
{
	fill_l2l4(qp->dev, &qp->tmpl, av, av->udp_sport ? av->udp_sport :
		droce_udp_sport_qpn(qp->qpn));
	qp->ud_tmpl_ok = droce_wire_tmpl_init(&qp->htmpl, &qp->tmpl) == 0;
	qp->ud_av = *av;
}

