/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * test_dp_hostile's cases on requests the responder NAKs: payloads against
 * their DMA length, the path MTU and PadCnt; the NAK classes (remote
 * access, invalid request, sequence) and a duplicate ACKed again.
 */

#include <stdint.h>
#include <string.h>

#include "dp_hostile_rc.h"

/* BTH byte 1: PadCnt 3, the frame otherwise as built. */
static void
pad3(uint8_t *f, uint32_t *len)
{
	(void)len;
	f[14 + 20 + 8 + 1] |= 0x30;
}

void
cases_length(void)
{
	static uint8_t data[1024];
	struct droce_pkt p;

	memset(data, 0x77, sizeof(data));
	/* payload shorter than the RETH's DMA length */
	qp_connect();
	snapshot();
	write_pkt(&p, DROCE_OP_RC_WRITE_ONLY, 0, 64, data, 60);
	case_nak("WRITE ONLY 60 bytes of 64", &p, DROCE_AETH_NAK_INV_REQ, NULL);
	/* longer */
	qp_connect();
	snapshot();
	write_pkt(&p, DROCE_OP_RC_WRITE_ONLY, 0, 61, data, 64);
	case_nak("WRITE ONLY 64 bytes of 61", &p, DROCE_AETH_NAK_INV_REQ, NULL);
	/* PadCnt 3 over 64 bytes: a 61-byte payload against 64 announced */
	qp_connect();
	snapshot();
	write_pkt(&p, DROCE_OP_RC_WRITE_ONLY, 0, 64, data, 64);
	case_nak("WRITE ONLY PadCnt against DMA length", &p,
		DROCE_AETH_NAK_INV_REQ, pad3);
	/* payloads beyond the path MTU (256 here) */
	qp_connect();
	snapshot();
	write_pkt(&p, DROCE_OP_RC_WRITE_ONLY, 0, 512, data, 512);
	case_nak("WRITE ONLY 512 bytes, MTU 256", &p, DROCE_AETH_NAK_INV_REQ,
		NULL);
	qp_connect();
	snapshot();
	pkt_init(&p, DROCE_OP_RC_SEND_ONLY, epsn);
	p.payload = data;
	p.payload_len = 512;
	case_nak("SEND ONLY 512 bytes, MTU 256", &p, DROCE_AETH_NAK_INV_REQ,
		NULL);
	/* PadCnt on a packet that does not end its message */
	qp_connect();
	snapshot();
	write_pkt(&p, DROCE_OP_RC_WRITE_FIRST, 0, 1024, data, MTU);
	case_nak("WRITE FIRST with PadCnt", &p, DROCE_AETH_NAK_INV_REQ, pad3);
	qp_connect();
	snapshot();
	pkt_init(&p, DROCE_OP_RC_SEND_FIRST, epsn);
	p.payload = data;
	p.payload_len = MTU;
	case_nak("SEND FIRST with PadCnt", &p, DROCE_AETH_NAK_INV_REQ, pad3);
	/* a WRITE FIRST announcing less than the MTU it carries */
	qp_connect();
	snapshot();
	write_pkt(&p, DROCE_OP_RC_WRITE_FIRST, 0, 200, data, MTU);
	case_nak("WRITE FIRST over a 200-byte DMA length", &p,
		DROCE_AETH_NAK_INV_REQ, NULL);
}

/* A SEND MIDDLE with PadCnt after a good FIRST: the FIRST's bytes stay,
 * the MIDDLE's are not placed, the receive completes in error. */
void
case_send_middle_pad(void)
{
	static uint8_t first[MTU], mid[MTU];
	const char *what = "SEND MIDDLE with PadCnt";
	struct droce_pkt p;
	uint8_t f[2048];
	struct ibv_wc wc;
	int n;

	qp_connect();
	memset(first, 0x31, sizeof(first));
	memset(mid, 0x32, sizeof(mid));
	pkt_init(&p, DROCE_OP_RC_SEND_FIRST, epsn);
	p.payload = first;
	p.payload_len = MTU;
	inject(f, (uint32_t)build(&p, f, sizeof(f)));
	/* no answer to a FIRST; give droce time to place it */
	expect_silence("SEND FIRST");
	CHECK(memcmp(rmem, first, MTU) == 0, "the FIRST is placed");
	snapshot();
	pkt_init(&p, DROCE_OP_RC_SEND_MIDDLE, epsn + 1);
	p.payload = mid;
	p.payload_len = MTU;
	case_nak(what, &p, DROCE_AETH_NAK_INV_REQ, pad3);
	n = droce_cq_poll(cq, &wc, 1);
	CHECK(n == 1 && wc.wr_id == 0 && wc.status == IBV_WC_REM_INV_REQ_ERR,
		"%s: the receive completes with REM_INV_REQ_ERR (%d, %d)", what,
		n, n == 1 ? (int)wc.status : -1);
}

void
cases_classes(void)
{
	static uint8_t data[64];
	struct droce_pkt p;
	uint8_t f[2048];

	memset(data, 0x55, sizeof(data));
	/* bad R_Key: remote access error (class C) */
	qp_connect();
	snapshot();
	write_pkt(&p, DROCE_OP_RC_WRITE_ONLY, 0, 64, data, 64);
	p.reth_rkey ^= 0x100;
	case_nak("WRITE with a bad R_Key", &p, DROCE_AETH_NAK_REM_ACC, NULL);
	/* beyond the MR */
	qp_connect();
	snapshot();
	write_pkt(&p, DROCE_OP_RC_WRITE_ONLY, MR_LEN - 32, 64, data, 64);
	case_nak("WRITE past the MR's end", &p, DROCE_AETH_NAK_REM_ACC, NULL);
	/* a misaligned atomic: invalid request */
	qp_connect();
	snapshot();
	pkt_init(&p, DROCE_OP_RC_FETCH_ADD, epsn);
	p.atm_va = (uintptr_t)(mem + 4);
	p.atm_rkey = droce_mr_rkey(mr);
	p.atm_swap_add = 1;
	case_nak("misaligned FETCH_ADD", &p, DROCE_AETH_NAK_INV_REQ, NULL);
	/* a PSN ahead: one sequence NAK for the expected PSN (class B: the
	 * QP stays up) */
	qp_connect();
	snapshot();
	write_pkt(&p, DROCE_OP_RC_WRITE_ONLY, 0, 64, data, 64);
	p.psn = epsn + 5;
	inject(f, (uint32_t)build(&p, f, sizeof(f)));
	expect_aeth("PSN ahead", DROCE_AETH_NAK_PSN_SEQ, epsn);
	expect_state("PSN ahead", IBV_QPS_RTS);
	expect_unchanged("PSN ahead");
	/* a duplicate: ACKed again (C9-105), not executed */
	qp_connect();
	snapshot();
	write_pkt(&p, DROCE_OP_RC_WRITE_ONLY, 0, 64, data, 64);
	p.psn = epsn - 1;
	inject(f, (uint32_t)build(&p, f, sizeof(f)));
	expect_aeth("duplicate PSN", DROCE_AETH_ACK_NOCREDIT, epsn - 1);
	expect_state("duplicate PSN", IBV_QPS_RTS);
	expect_unchanged("duplicate PSN");
}
