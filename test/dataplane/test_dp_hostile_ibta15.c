/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * test_dp_hostile's cases on IBTA 1.5's ATOMIC WRITE and FLUSH from a
 * hostile peer.
 */

#include <stdint.h>
#include <string.h>

#include "dp_hostile_rc.h"

/* The answer to an ATOMIC WRITE: a READ response ONLY, no payload. */
static void
expect_empty_read_resp(const char *what, uint32_t psn)
{
	struct droce_pkt a;

	if (!answer(&a, 2000000000ull)) {
		CHECK(0, "%s: no answer on the wire", what);
		return;
	}
	CHECK(a.opcode == DROCE_OP_RC_READ_RESP_ONLY && a.payload_len == 0,
		"%s: answered with opcode 0x%x, %u bytes", what, a.opcode,
		a.payload_len);
	CHECK(a.aeth_syndrome == DROCE_AETH_ACK_NOCREDIT && a.psn == psn,
		"%s: syndrome 0x%02x PSN 0x%x, want 0x1f 0x%x", what,
		a.aeth_syndrome, a.psn, psn);
}

static void
awr_pkt(struct droce_pkt *p, uint64_t off, uint32_t dma_len,
		const uint8_t *payload, uint32_t plen)
{
	write_pkt(p, DROCE_OP_RC_ATOMIC_WRITE, off, dma_len, payload, plen);
}

/*
 * IBTA 1.5 ATOMIC WRITE from a hostile peer: a good one stored and
 * answered with an empty READ response, its duplicate answered again and
 * not stored again; misaligned, 16 bytes, 4 bytes under a DMA length of 8:
 * Invalid Request; a bad R_Key and the last word past the MR: Remote
 * Access; not one byte placed for any of them.
 */
void
cases_atomic_write(void)
{
	static const uint8_t word[16] = { 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6,
		0xa7, 0xa8, 0xa9, 0xaa, 0xab, 0xac, 0xad, 0xae, 0xaf, 0xb0 };
	const char *what = "valid ATOMIC WRITE";
	struct droce_pkt p;
	uint8_t f[2048];
	uint32_t len;

	qp_connect();
	snapshot();
	awr_pkt(&p, 256, 8, word, 8);
	len = (uint32_t)build(&p, f, sizeof(f));
	inject(f, len);
	expect_empty_read_resp(what, epsn);
	expect_state(what, IBV_QPS_RTS);
	memcpy(shadow + 256, word, 8);
	expect_unchanged(what);
	/* the same frame again: a duplicate, answered from the resource */
	what = "duplicate ATOMIC WRITE";
	mem[256] = 0x01;	/* a second store would undo this */
	snapshot();
	inject(f, len);
	expect_empty_read_resp(what, epsn);
	expect_state(what, IBV_QPS_RTS);
	expect_unchanged(what);

	qp_connect();
	snapshot();
	awr_pkt(&p, 260, 8, word, 8);
	case_nak("misaligned ATOMIC WRITE", &p, DROCE_AETH_NAK_INV_REQ, NULL);
	qp_connect();
	snapshot();
	awr_pkt(&p, 256, 16, word, 16);
	case_nak("ATOMIC WRITE of 16 bytes", &p, DROCE_AETH_NAK_INV_REQ, NULL);
	qp_connect();
	snapshot();
	awr_pkt(&p, 256, 8, word, 4);
	case_nak("ATOMIC WRITE of 4 bytes under 8", &p, DROCE_AETH_NAK_INV_REQ,
		NULL);
	qp_connect();
	snapshot();
	awr_pkt(&p, 256, 8, word, 8);
	p.reth_rkey ^= 0x100;
	case_nak("ATOMIC WRITE with a bad R_Key", &p, DROCE_AETH_NAK_REM_ACC,
		NULL);
	qp_connect();
	snapshot();
	awr_pkt(&p, MR_LEN, 8, word, 8);
	case_nak("ATOMIC WRITE past the MR's end", &p, DROCE_AETH_NAK_REM_ACC,
		NULL);
}

static void
flush_pkt(struct droce_pkt *p, uint64_t off, uint32_t dma_len, uint8_t plt,
		uint8_t sel)
{
	write_pkt(p, DROCE_OP_RC_FLUSH, off, dma_len, NULL, 0);
	p->feth_plt = plt;
	p->feth_sel = sel;
}

/*
 * IBTA 1.5 FLUSH from a hostile peer (the MR takes global visibility,
 * not persistence): a FLUSH of a range and one of the whole MR answered
 * with an empty READ response, a duplicate answered again; persistence,
 * no placement type, a selectivity level that does not exist: Invalid
 * Request or Remote Access as IBTA and rxe say; a bad R_Key and a range
 * past the MR: Remote Access. Memory never changes.
 */
void
cases_flush(void)
{
	const char *what = "valid FLUSH of a range";
	struct droce_pkt p;
	uint8_t f[256];
	uint32_t len;

	qp_connect();
	snapshot();
	flush_pkt(&p, 128, 512, DROCE_FLUSH_GLOBAL, DROCE_FLUSH_RANGE);
	len = (uint32_t)build(&p, f, sizeof(f));
	inject(f, len);
	expect_empty_read_resp(what, epsn);
	expect_state(what, IBV_QPS_RTS);
	expect_unchanged(what);
	what = "duplicate FLUSH";
	inject(f, len);
	expect_empty_read_resp(what, epsn);
	expect_state(what, IBV_QPS_RTS);
	epsn = droce_psn_add(epsn, 1);
	what = "FLUSH of the whole MR, the RETH's range past it";
	flush_pkt(&p, MR_LEN * 4, 1u << 30, DROCE_FLUSH_GLOBAL, DROCE_FLUSH_MR);
	len = (uint32_t)build(&p, f, sizeof(f));
	inject(f, len);
	expect_empty_read_resp(what, epsn);
	expect_state(what, IBV_QPS_RTS);
	expect_unchanged(what);

	qp_connect();
	snapshot();
	flush_pkt(&p, 0, 64, DROCE_FLUSH_PERSISTENT, DROCE_FLUSH_RANGE);
	case_nak("FLUSH to persistence of a global-only MR", &p,
		DROCE_AETH_NAK_REM_ACC, NULL);
	qp_connect();
	snapshot();
	flush_pkt(&p, 0, 64, 0, DROCE_FLUSH_RANGE);
	case_nak("FLUSH without a placement type", &p, DROCE_AETH_NAK_INV_REQ,
		NULL);
	qp_connect();
	snapshot();
	flush_pkt(&p, 0, 64, DROCE_FLUSH_GLOBAL, 3);
	case_nak("FLUSH of selectivity 3", &p, DROCE_AETH_NAK_INV_REQ, NULL);
	qp_connect();
	snapshot();
	flush_pkt(&p, 0, 64, DROCE_FLUSH_GLOBAL, DROCE_FLUSH_RANGE);
	p.reth_rkey ^= 0x100;
	case_nak("FLUSH with a bad R_Key", &p, DROCE_AETH_NAK_REM_ACC, NULL);
	qp_connect();
	snapshot();
	flush_pkt(&p, MR_LEN - 32, 64, DROCE_FLUSH_GLOBAL, DROCE_FLUSH_RANGE);
	case_nak("FLUSH past the MR's end", &p, DROCE_AETH_NAK_REM_ACC, NULL);
}
