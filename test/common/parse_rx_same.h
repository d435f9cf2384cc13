/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

#ifndef PARSE_RX_SAME_H
#define PARSE_RX_SAME_H

/*
 * The transport's receive parse (droce_wire_parse_rx: fewer fields
 * filled) against the full one: the same verdict for every frame, and
 * where the packet is filled (accepted, or a length defect) the same
 * value in every field the transport reads.
 */

#include <string.h>

#include "check.h"
#include "droce_wire.h"
#include "wire_parse.h"

/* The transport's fields of two parses of one frame agree (gids: the
 * addresses too). */
static inline int
rx_fields_agree(const struct droce_pkt *a, const struct droce_pkt *b,
		int gids)
{
	return a->ip_ver == b->ip_ver && a->tclass == b->tclass &&
		(!gids || (memcmp(a->sgid, b->sgid, 16) == 0 &&
		memcmp(a->dgid, b->dgid, 16) == 0)) && a->l3_off == b->l3_off &&
		a->opcode == b->opcode && a->se == b->se &&
		a->padcnt == b->padcnt && a->pkey == b->pkey &&
		a->dqpn == b->dqpn && a->ackreq == b->ackreq &&
		a->psn == b->psn && a->payload == b->payload &&
		a->payload_len == b->payload_len &&
		a->icrc_rxe_flush == b->icrc_rxe_flush &&
		/* extension headers: both start from the same bytes */
		a->reth_va == b->reth_va && a->reth_rkey == b->reth_rkey &&
		a->reth_len == b->reth_len &&
		a->aeth_syndrome == b->aeth_syndrome &&
		a->aeth_msn == b->aeth_msn && a->atm_va == b->atm_va &&
		a->atm_rkey == b->atm_rkey &&
		a->atm_swap_add == b->atm_swap_add &&
		a->atm_compare == b->atm_compare &&
		a->atmack_orig == b->atmack_orig &&
		a->imm_data == b->imm_data && a->ieth_rkey == b->ieth_rkey &&
		a->feth_plt == b->feth_plt && a->feth_sel == b->feth_sel &&
		a->deth_qkey == b->deth_qkey && a->deth_sqpn == b->deth_sqpn &&
		a->xrceth_srqn == b->xrceth_srqn;
}

static inline int
rx_fields_equal(const struct droce_pkt *a, const struct droce_pkt *b)
{
	return rx_fields_agree(a, b, 1);
}

/* Both parses of one frame; the full parse's verdict. */
static inline int
parse_rx_same(const uint8_t *b, uint32_t len, const struct droce_parse_opts *o)
{
	static const struct droce_parse_opts none;
	struct droce_pkt pkt, rx;
	int rc, rc_rx;

	memset(&pkt, 0xa5, sizeof(pkt));
	memset(&rx, 0xa5, sizeof(rx));
	rc = droce_wire_parse(b, len, o, &pkt);
	rc_rx = droce_wire_parse_rx(b, len, o != NULL ? o : &none, &rx);
	CHECK(rc_rx == rc, "receive parse: got %d, full parse %d", rc_rx, rc);
	if (rc == 0 || rc == DROCE_WIRE_ELENGTH || rc == DROCE_WIRE_EMTU)
		CHECK(rx_fields_equal(&pkt, &rx),
			"receive parse fills other fields (rc %d)", rc);
	return rc;
}

/*
 * The receive template of the QP frame t (len bytes) is for, from its
 * peer (UD: from anyone); tp gets t's parse. 0, or -1 where there is
 * none (t is not a whole RC, UC or UD frame over IPv4 without VLAN).
 */
static inline int
rx_tmpl_of(const uint8_t *t, uint32_t len, struct droce_rx_tmpl *tm,
		struct droce_pkt *tp)
{
	uint8_t tr;

	if (droce_wire_parse(t, len, NULL, tp) != 0 || tp->has_vlan)
		return -1;
	tr = tp->opcode & DROCE_TRANSPORT_MASK;
	return droce_wire_rx_tmpl_init(tm, tp->dst_mac, tp->dgid,
		tr == DROCE_TRANSPORT_UD ? NULL : tp->sgid, tp->dqpn, tr) == 0 ?
		0 : -1;
}

/*
 * The fast receive (droce_wire_parse_rx_fast) of frame b, len bytes, by
 * the template of the QP that frame t (tlen bytes) is for, where the
 * transport would try it (b names that QP): whatever it accepts, the full
 * parse accepts as a frame of that QP from its peer (our MAC and GID, the
 * peer's GID, P_Key, QPN, transport: what the full receive then checks),
 * with the same fields but for the GIDs. 1 if it accepted b.
 */
static inline int
parse_rx_fast_same(const uint8_t *b, uint32_t len, const uint8_t *t,
		uint32_t tlen)
{
	struct droce_pkt tp, fast, full;
	struct droce_rx_tmpl tm;
	int rc;

	if (rx_tmpl_of(t, tlen, &tm, &tp) != 0 || len < DROCE_RX_FAST_MIN_LEN ||
			droce_wire_rx_fast_qpn(b) != tp.dqpn)
		return 0;
	memset(&fast, 0xa5, sizeof(fast));
	memset(&full, 0xa5, sizeof(full));
	if (droce_wire_parse_rx_fast(b, len, &tm, &fast) != 0)
		return 0;
	rc = droce_wire_parse(b, len, NULL, &full);
	CHECK(rc == 0, "fast receive accepts what the full parse rejects: %s",
		droce_wire_strerror(rc));
	if (rc != 0)
		return 1;
	CHECK(rx_fields_agree(&full, &fast, 0),
		"fast receive fills other fields");
	CHECK(memcmp(full.dst_mac, tp.dst_mac, 6) == 0 &&
		memcmp(full.dgid, tp.dgid, 16) == 0 &&
		((tp.opcode & DROCE_TRANSPORT_MASK) == DROCE_TRANSPORT_UD ||
		memcmp(full.sgid, tp.sgid, 16) == 0) && !full.has_vlan &&
		full.pkey == 0xffff && full.dqpn == tp.dqpn &&
		(full.opcode & DROCE_TRANSPORT_MASK) ==
		(tp.opcode & DROCE_TRANSPORT_MASK),
		"fast receive takes a frame of another connection");
	return 1;
}

#endif /* PARSE_RX_SAME_H */
