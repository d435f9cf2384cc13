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

/* The transport's fields of two parses of one frame agree. */
static inline int
rx_fields_equal(const struct droce_pkt *a, const struct droce_pkt *b)
{
	return a->ip_ver == b->ip_ver && a->tclass == b->tclass &&
		memcmp(a->sgid, b->sgid, 16) == 0 &&
		memcmp(a->dgid, b->dgid, 16) == 0 && a->l3_off == b->l3_off &&
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

#endif /* PARSE_RX_SAME_H */
