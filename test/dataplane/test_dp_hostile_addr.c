/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * test_dp_hostile's cases on whom a frame is for: a valid WRITE taken
 * (with and without a trailer), frames for another host or from someone
 * but the QP's peer or under another P_Key dropped and counted, a bad
 * ICRC dropped and counted; no answer, no byte placed.
 */

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "dp_hostile_rc.h"

/* A valid WRITE: ACKed, placed where the RETH says, nothing else. */
void
case_control(const char *what, uint32_t trailer)
{
	uint8_t f[2048], data[64];
	struct droce_pkt p;
	int len;

	qp_connect();
	snapshot();
	memset(data, 0x5a, sizeof(data));
	write_pkt(&p, DROCE_OP_RC_WRITE_ONLY, 100, 64, data, 64);
	len = build(&p, f, sizeof(f));
	memset(f + len, 0xee, trailer);
	inject(f, (uint32_t)len + trailer);
	expect_aeth(what, DROCE_AETH_ACK_NOCREDIT, epsn);
	expect_state(what, IBV_QPS_RTS);
	memcpy(shadow + 100, data, 64);
	expect_unchanged(what);
}

/*
 * Another host's frame (MAC or IP), or one to the QP from someone but its
 * peer (sip), or under another P_Key: dropped, counted, no answer. The QP's
 * receive template (tp_recv.c) turns each away and the full receive counts
 * it.
 */
void
case_refused(const char *what, const uint8_t *dmac, uint32_t dip,
		uint32_t sip, uint16_t pkey, size_t counter)
{
	struct droce_tp_stats before = stats(), after;
	uint8_t f[2048], data[64];
	struct droce_pkt p;

	qp_connect();
	snapshot();
	memset(data, 0x66, sizeof(data));
	write_pkt(&p, DROCE_OP_RC_WRITE_ONLY, 0, 64, data, 64);
	if (dmac != NULL)
		memcpy(p.dst_mac, dmac, 6);
	if (dip)
		gid4(p.dgid, dip);
	if (sip)
		gid4(p.sgid, sip);
	if (pkey)
		p.pkey = pkey;
	inject(f, (uint32_t)build(&p, f, sizeof(f)));
	expect_silence(what);
	expect_state(what, IBV_QPS_RTS);
	expect_unchanged(what);
	after = stats();
	CHECK(((uint64_t *)&after)[counter] == ((uint64_t *)&before)[counter] + 1,
		"%s: counted once", what);
}

void
case_icrc(void)
{
	struct droce_tp_stats before = stats(), after;
	uint8_t f[2048], data[64];
	struct droce_pkt p;
	int len;

	qp_connect();
	snapshot();
	memset(data, 0x44, sizeof(data));
	write_pkt(&p, DROCE_OP_RC_WRITE_ONLY, 0, 64, data, 64);
	len = build(&p, f, sizeof(f));
	f[len - 1] ^= 0x01;
	inject(f, (uint32_t)len);
	expect_silence("bad ICRC");
	expect_state("bad ICRC", IBV_QPS_RTS);
	expect_unchanged("bad ICRC");
	after = stats();
	CHECK_EQ(after.rx_drop_parse[-DROCE_WIRE_EICRC],
		before.rx_drop_parse[-DROCE_WIRE_EICRC] + 1, "ICRC drop counted");
}
