/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * The IBTA opcode table (vol.1 table 38, Annex A17 for CNP). One row per
 * opcode drives both the builder and the parser: which extension headers
 * follow the BTH, in IBTA order (FETH, DETH, XRCETH, RETH, AtomicETH,
 * AETH, AtomicAckETH, ImmDt, IETH), and what the opcode means.
 */

#include "droce_wire.h"

#define H_RETH	DROCE_HDR_RETH
#define H_AETH	DROCE_HDR_AETH
#define H_ATM	DROCE_HDR_ATMETH
#define H_ACK8	DROCE_HDR_ATMACK
#define H_IMM	DROCE_HDR_IMMDT
#define H_IETH	DROCE_HDR_IETH
#define H_DETH	DROCE_HDR_DETH
#define H_CNP	DROCE_HDR_CNP
#define H_FETH	DROCE_HDR_FETH
#define H_XRC	DROCE_HDR_XRCETH

#define SZ(h, m, n)	(((h) & (m)) ? (n) : 0)
#define O_FETH(h)	DROCE_BTH_LEN
#define O_DETH(h)	(O_FETH(h) + SZ(h, H_FETH, DROCE_FETH_LEN))
#define O_XRC(h)	(O_DETH(h) + SZ(h, H_DETH, DROCE_DETH_LEN))
#define O_RETH(h)	(O_XRC(h) + SZ(h, H_XRC, DROCE_XRCETH_LEN))
#define O_ATM(h)	(O_RETH(h) + SZ(h, H_RETH, DROCE_RETH_LEN))
#define O_AETH(h)	(O_ATM(h) + SZ(h, H_ATM, DROCE_ATMETH_LEN))
#define O_ACK8(h)	(O_AETH(h) + SZ(h, H_AETH, DROCE_AETH_LEN))
#define O_IMM(h)	(O_ACK8(h) + SZ(h, H_ACK8, DROCE_ATMACK_LEN))
#define O_IETH(h)	(O_IMM(h) + SZ(h, H_IMM, DROCE_IMMDT_LEN))
#define HLEN(h)		(O_IETH(h) + SZ(h, H_IETH, DROCE_IETH_LEN) + \
			 SZ(h, H_CNP, 16))
#define OFF(h, m, o)	(((h) & (m)) ? (o) : 0)

#define OP(code, nm, fl, h) \
	[code] = { \
		.name = nm, .flags = (fl), .hdrs = (h), .valid = 1, \
		.hdr_len = HLEN(h), \
		.off_reth = OFF(h, H_RETH, O_RETH(h)), \
		.off_aeth = OFF(h, H_AETH, O_AETH(h)), \
		.off_atmeth = OFF(h, H_ATM, O_ATM(h)), \
		.off_atmack = OFF(h, H_ACK8, O_ACK8(h)), \
		.off_immdt = OFF(h, H_IMM, O_IMM(h)), \
		.off_ieth = OFF(h, H_IETH, O_IETH(h)), \
		.off_deth = OFF(h, H_DETH, O_DETH(h)), \
		.off_feth = OFF(h, H_FETH, O_FETH(h)), \
		.off_xrceth = OFF(h, H_XRC, O_XRC(h)), \
		.off_payload = HLEN(h), \
	}

#define REQ	DROCE_OPF_REQ
#define RESP	DROCE_OPF_RESP
#define SEND	(DROCE_OPF_SEND | DROCE_OPF_RWR)
#define WRITE	DROCE_OPF_WRITE
#define READ	DROCE_OPF_READ
#define ATOMIC	DROCE_OPF_ATOMIC
#define ACKF	DROCE_OPF_ACK
#define START	DROCE_OPF_START
#define MIDDLE	DROCE_OPF_MIDDLE
#define END	DROCE_OPF_END
#define ONLY	(START | END)
#define PAY	DROCE_OPF_PAYLOAD
#define IMM	DROCE_OPF_IMM
#define INV	DROCE_OPF_INV
#define RWR	DROCE_OPF_RWR
#define WACK	DROCE_OPF_WANT_ACK

/*
 * The SEND and WRITE rows for one transport; RC and UC share the layout,
 * only RC asks for ACKs on the packets that end a message.
 */
#define SEND_WRITE_ROWS(base, pfx, wack, x) \
	OP((base) + 0x00, pfx "SEND_FIRST", REQ | SEND | START | PAY, (x)), \
	OP((base) + 0x01, pfx "SEND_MIDDLE", REQ | SEND | MIDDLE | PAY, (x)), \
	OP((base) + 0x02, pfx "SEND_LAST", REQ | SEND | END | PAY | (wack), (x)), \
	OP((base) + 0x03, pfx "SEND_LAST_WITH_IMMEDIATE", \
		REQ | SEND | END | PAY | IMM | (wack), (x) | H_IMM), \
	OP((base) + 0x04, pfx "SEND_ONLY", REQ | SEND | ONLY | PAY | (wack), (x)), \
	OP((base) + 0x05, pfx "SEND_ONLY_WITH_IMMEDIATE", \
		REQ | SEND | ONLY | PAY | IMM | (wack), (x) | H_IMM), \
	OP((base) + 0x06, pfx "RDMA_WRITE_FIRST", REQ | WRITE | START | PAY, \
		(x) | H_RETH), \
	OP((base) + 0x07, pfx "RDMA_WRITE_MIDDLE", REQ | WRITE | MIDDLE | PAY, (x)), \
	OP((base) + 0x08, pfx "RDMA_WRITE_LAST", REQ | WRITE | END | PAY | (wack), \
		(x)), \
	OP((base) + 0x09, pfx "RDMA_WRITE_LAST_WITH_IMMEDIATE", \
		REQ | WRITE | END | PAY | IMM | RWR | (wack), (x) | H_IMM), \
	OP((base) + 0x0a, pfx "RDMA_WRITE_ONLY", \
		REQ | WRITE | ONLY | PAY | (wack), (x) | H_RETH), \
	OP((base) + 0x0b, pfx "RDMA_WRITE_ONLY_WITH_IMMEDIATE", \
		REQ | WRITE | ONLY | PAY | IMM | RWR | (wack), \
		(x) | H_RETH | H_IMM)

const struct droce_opcode_info droce_opcode_info[256] = {
	SEND_WRITE_ROWS(DROCE_TRANSPORT_RC, "RC_", WACK, 0),
	OP(DROCE_OP_RC_READ_REQ, "RC_RDMA_READ_REQUEST", REQ | READ | ONLY | WACK,
		H_RETH),
	OP(DROCE_OP_RC_READ_RESP_FIRST, "RC_RDMA_READ_RESPONSE_FIRST",
		RESP | READ | START | PAY, H_AETH),
	OP(DROCE_OP_RC_READ_RESP_MIDDLE, "RC_RDMA_READ_RESPONSE_MIDDLE",
		RESP | READ | MIDDLE | PAY, 0),
	OP(DROCE_OP_RC_READ_RESP_LAST, "RC_RDMA_READ_RESPONSE_LAST",
		RESP | READ | END | PAY, H_AETH),
	OP(DROCE_OP_RC_READ_RESP_ONLY, "RC_RDMA_READ_RESPONSE_ONLY",
		RESP | READ | ONLY | PAY, H_AETH),
	OP(DROCE_OP_RC_ACK, "RC_ACKNOWLEDGE", RESP | ACKF | ONLY, H_AETH),
	OP(DROCE_OP_RC_ATOMIC_ACK, "RC_ATOMIC_ACKNOWLEDGE",
		RESP | ATOMIC | ONLY, H_AETH | H_ACK8),
	OP(DROCE_OP_RC_CMP_SWAP, "RC_CMP_SWAP", REQ | ATOMIC | ONLY | WACK, H_ATM),
	OP(DROCE_OP_RC_FETCH_ADD, "RC_FETCH_ADD", REQ | ATOMIC | ONLY | WACK,
		H_ATM),
	OP(DROCE_OP_RC_SEND_LAST_INV, "RC_SEND_LAST_WITH_INVALIDATE",
		REQ | SEND | END | PAY | INV | WACK, H_IETH),
	OP(DROCE_OP_RC_SEND_ONLY_INV, "RC_SEND_ONLY_WITH_INVALIDATE",
		REQ | SEND | ONLY | PAY | INV | WACK, H_IETH),
	/* IBTA 1.5 (rxe >= 6.2): FETH, then a RETH naming the range (or
	 * only the MR, by its rkey); no payload */
	OP(DROCE_OP_RC_FLUSH, "RC_FLUSH",
		REQ | DROCE_OPF_FLUSH | ONLY | WACK, H_FETH | H_RETH),
	/* IBTA 1.5 (rxe >= 6.2): RETH then the 8 bytes to store; neither a
	 * WRITE nor an atomic to the responder's checks, its own kind */
	OP(DROCE_OP_RC_ATOMIC_WRITE, "RC_ATOMIC_WRITE",
		REQ | DROCE_OPF_ATOMIC_WRITE | ONLY | PAY | WACK, H_RETH),
	SEND_WRITE_ROWS(DROCE_TRANSPORT_UC, "UC_", 0, 0),
	OP(DROCE_OP_UD_SEND_ONLY, "UD_SEND_ONLY", REQ | SEND | ONLY | PAY, H_DETH),
	OP(DROCE_OP_UD_SEND_ONLY_IMM, "UD_SEND_ONLY_WITH_IMMEDIATE",
		REQ | SEND | ONLY | PAY | IMM, H_DETH | H_IMM),
	OP(DROCE_OP_CNP, "CNP", DROCE_OPF_CNP, H_CNP),
	/*
	 * XRC (IBTA vol.1 14.6 / A14): RC's opcodes with the XRC transport
	 * bits. Every request carries an XRCETH naming the target's SRQ
	 * (after the BTH, before RETH or AtomicETH); responses are RC's
	 * without it. No ATOMIC WRITE over XRC.
	 */
	SEND_WRITE_ROWS(DROCE_TRANSPORT_XRC, "XRC_", WACK, H_XRC),
	OP(DROCE_OP_XRC_READ_REQ, "XRC_RDMA_READ_REQUEST",
		REQ | READ | ONLY | WACK, H_XRC | H_RETH),
	OP(DROCE_OP_XRC_READ_REQ + 1, "XRC_RDMA_READ_RESPONSE_FIRST",
		RESP | READ | START | PAY, H_AETH),
	OP(DROCE_OP_XRC_READ_REQ + 2, "XRC_RDMA_READ_RESPONSE_MIDDLE",
		RESP | READ | MIDDLE | PAY, 0),
	OP(DROCE_OP_XRC_READ_REQ + 3, "XRC_RDMA_READ_RESPONSE_LAST",
		RESP | READ | END | PAY, H_AETH),
	OP(DROCE_OP_XRC_READ_RESP_ONLY, "XRC_RDMA_READ_RESPONSE_ONLY",
		RESP | READ | ONLY | PAY, H_AETH),
	OP(DROCE_OP_XRC_ACK, "XRC_ACKNOWLEDGE", RESP | ACKF | ONLY, H_AETH),
	OP(DROCE_OP_XRC_ATOMIC_ACK, "XRC_ATOMIC_ACKNOWLEDGE",
		RESP | ATOMIC | ONLY, H_AETH | H_ACK8),
	OP(DROCE_OP_XRC_CMP_SWAP, "XRC_CMP_SWAP", REQ | ATOMIC | ONLY | WACK,
		H_XRC | H_ATM),
	OP(DROCE_OP_XRC_FETCH_ADD, "XRC_FETCH_ADD", REQ | ATOMIC | ONLY | WACK,
		H_XRC | H_ATM),
	OP(DROCE_OP_XRC_SEND_ONLY_INV - 1, "XRC_SEND_LAST_WITH_INVALIDATE",
		REQ | SEND | END | PAY | INV | WACK, H_XRC | H_IETH),
	OP(DROCE_OP_XRC_SEND_ONLY_INV, "XRC_SEND_ONLY_WITH_INVALIDATE",
		REQ | SEND | ONLY | PAY | INV | WACK, H_XRC | H_IETH),
};
