/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * libFuzzer target for the responder itself, not only the parser: each
 * input is decoded into a few request packets (opcode, PSN near the
 * expected one, VA, R_Key, DMA length, payload, PadCnt, AckReq, a byte
 * flipped, a trailer), built by lib/wire (a good ICRC unless the input
 * asks otherwise, so that mutations reach past it) and handed to an RC
 * and a UC QP in RTS with real MRs, and to an XRC_RECV QP whose XRC SRQ
 * (of its domain; another domain has one too) takes the receives; the
 * XRCETH mostly names the right SRQ, sometimes the other domain's, none
 * or any number; and UD SENDs (mostly under the QP's Q_Key, from any
 * QPN) to a UD QP whose receives have one or two SGEs of many lengths,
 * some too short for the GRH and the payload. Under ASan, besides "no
 * crash":
 *  - nothing outside the MRs changes (guard bytes around each, and ASan
 *    on the exact allocations);
 *  - a request the responder rejects changes no byte of them: RC and
 *    XRC, where the expected PSN did not move; UC, where it counted the
 *    packet dropped;
 *  - a UD SEND writes only inside the SGEs of the receive it completes
 *    well, no more than they hold; refused or failed, nothing.
 * QPs that reach the error state are connected again.
 */

#include <stdlib.h>
#include <string.h>

#include "fuzz_frame.h"
#include "tp_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MR_LEN		8192
#define RBUF_LEN	2048
#define NRECV		8
#define UD_QKEY		0x11111111u
#define GUARD		256
#define ARENA		(GUARD + MR_LEN + NRECV * RBUF_LEN + GUARD)

static struct fakelink L;
static struct droce_cq *cq[2];
static struct droce_qp *req[4], *resp[4];	/* [0] RC, [1] UC, [2] XRC,
						 * [3] UD */
static struct droce_xrcd *xrcd[2];	/* the XRC_RECV QP's, another */
static struct droce_srq *xsrq[2];	/* an XRC SRQ of each */
static struct droce_mr *mr, *rmr;
static uint8_t *arena, *mem, *rmem, *shadow;
static uint32_t posted[4];

static void
connect_pair(int t)
{
	struct ibv_qp_attr reset = { .qp_state = IBV_QPS_RESET };
	struct fl_qp_opts o;

	if (droce_qp_modify(req[t], &reset, IBV_QP_STATE, NULL) != 0 ||
			droce_qp_modify(resp[t], &reset, IBV_QP_STATE, NULL) != 0)
		abort();
	fl_qp_opts_default(&o);
	o.mtu = IBV_MTU_256;
	o.max_dest_rd_atomic = 4;
	o.max_rd_atomic = 4;
	o.access |= DROCE_ACCESS_FLUSH_GLOBAL;
	if (t == 1)
		o.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
	o.qkey = UD_QKEY;
	if (fl_connect(&L, req[t], resp[t], &o) != 0)
		abort();
	posted[t] = 0;
}

static void
make_xrc(void)
{
	struct ibv_qp_init_attr ia;
	struct ibv_srq_init_attr sa;
	int d;

	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = NRECV;
	sa.attr.max_sge = 2;
	for (d = 0; d < 2; d++) {
		xrcd[d] = droce_xrcd_alloc(L.end[1].dev);
		xsrq[d] = xrcd[d] ? droce_srq_create_xrc(L.end[1].pd, xrcd[d],
			cq[1], &sa) : NULL;
		if (xsrq[d] == NULL)
			abort();
	}
	memset(&ia, 0, sizeof(ia));
	ia.qp_type = IBV_QPT_XRC_SEND;
	ia.cap.max_send_wr = 16;
	ia.cap.max_send_sge = 2;
	req[2] = droce_qp_create(L.end[0].pd, &ia, cq[0], NULL, NULL);
	memset(&ia, 0, sizeof(ia));
	ia.qp_type = IBV_QPT_XRC_RECV;
	resp[2] = droce_qp_create_xrc_recv(xrcd[0], 0, &ia);
	if (req[2] == NULL || resp[2] == NULL)
		abort();
	connect_pair(2);
}

static void
make_qps(int t)
{
	struct ibv_qp_init_attr ia;
	int s;

	for (s = 0; s < 2; s++) {
		memset(&ia, 0, sizeof(ia));
		ia.qp_type = t == 0 ? IBV_QPT_RC : t == 1 ? IBV_QPT_UC :
			IBV_QPT_UD;
		ia.cap.max_send_wr = 16;
		ia.cap.max_recv_wr = NRECV;
		ia.cap.max_send_sge = 2;
		ia.cap.max_recv_sge = 2;
		(s ? resp : req)[t] = droce_qp_create(L.end[s].pd, &ia, cq[s],
			cq[s], NULL);
		if ((s ? resp : req)[t] == NULL)
			abort();
	}
	connect_pair(t);
}

static void
setup(void)
{
	uint32_t i;

	if (fl_init(&L, 1, 1500) != 0)
		abort();
	cq[0] = droce_cq_create(L.end[0].dev, 0, 1024);
	cq[1] = droce_cq_create(L.end[1].dev, 0, 1024);
	/* one exact allocation, ASan's red zones around it */
	arena = malloc(ARENA);
	shadow = malloc(ARENA);
	for (i = 0; i < ARENA; i++)
		arena[i] = (uint8_t)(i * 31 + 5);
	mem = arena + GUARD;
	rmem = mem + MR_LEN;
	mr = droce_mr_reg(L.end[1].pd, mem, MR_LEN, (uintptr_t)mem,
		IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
		DROCE_ACCESS_FLUSH_GLOBAL);
	rmr = droce_mr_reg(L.end[1].pd, rmem, NRECV * RBUF_LEN,
		(uintptr_t)rmem, IBV_ACCESS_LOCAL_WRITE);
	if (cq[0] == NULL || cq[1] == NULL || mr == NULL || rmr == NULL)
		abort();
	make_qps(0);
	make_qps(1);
	make_xrc();
	make_qps(3);
}

/* Receive k's SGE i: half a buffer each; a UD QP's vary, some too short
 * for the GRH and a payload, and one in three has one SGE (0: none). */
static uint32_t
sge_len(int t, uint32_t k, int i)
{
	if (t != 3)
		return RBUF_LEN / 2;
	if (i == 1 && k % 3 == 0)
		return 0;
	return i == 0 ? 40 + (k * 53) % 200 : 1 + (k * 97) % 300;
}

/* Keep the responder's receive queue full. */
static void
top_up(int t)
{
	struct ibv_wc wc[16];

	while (droce_cq_poll(cq[1], wc, 16) > 0)
		;
	while (droce_cq_poll(cq[0], wc, 16) > 0)
		;
	while (tp_rq_count(t == 2 ? &xsrq[0]->rq : &resp[t]->rq) < NRECV) {
		uint32_t k = posted[t]++ % NRECV;
		struct ibv_sge s[2] = {
			{ .addr = (uintptr_t)(rmem + k * RBUF_LEN),
			  .length = sge_len(t, k, 0), .lkey = droce_mr_lkey(rmr) },
			{ .addr = (uintptr_t)(rmem + k * RBUF_LEN + RBUF_LEN / 2),
			  .length = sge_len(t, k, 1), .lkey = droce_mr_lkey(rmr) },
		};
		struct ibv_recv_wr wr = { .wr_id = k, .sg_list = s,
			.num_sge = sge_len(t, k, 1) ? 2 : 1 }, *bad;

		if ((t == 2 ? droce_srq_post_recv(xsrq[0], &wr, &bad) :
				droce_qp_post_recv(resp[t], &wr, &bad)) != 0)
			break;
	}
}

static const uint8_t rc_ops[] = {
	DROCE_OP_RC_SEND_FIRST, DROCE_OP_RC_SEND_MIDDLE, DROCE_OP_RC_SEND_LAST,
	DROCE_OP_RC_SEND_LAST_IMM, DROCE_OP_RC_SEND_ONLY,
	DROCE_OP_RC_SEND_ONLY_IMM, DROCE_OP_RC_WRITE_FIRST,
	DROCE_OP_RC_WRITE_MIDDLE, DROCE_OP_RC_WRITE_LAST,
	DROCE_OP_RC_WRITE_LAST_IMM, DROCE_OP_RC_WRITE_ONLY,
	DROCE_OP_RC_WRITE_ONLY_IMM, DROCE_OP_RC_READ_REQ,
	DROCE_OP_RC_CMP_SWAP, DROCE_OP_RC_FETCH_ADD,
	DROCE_OP_RC_SEND_LAST_INV, DROCE_OP_RC_SEND_ONLY_INV,
	DROCE_OP_RC_ATOMIC_WRITE, DROCE_OP_RC_FLUSH,
};

/* Decode one packet for QP type t from the input, build it into f. */
static uint32_t
decode(struct in *in, int t, uint8_t *f, uint32_t cap, int *raw)
{
	static uint8_t payload[1200];
	struct fl_end *a = &L.end[0], *b = &L.end[1];
	struct droce_qp *qp = resp[t];
	struct droce_pkt p;
	uint32_t ctl = take(in, 2), plen, mut, i;
	int len;

	fuzz_pkt_between(&p, a, b);
	p.opcode = rc_ops[(ctl & 0xff) % sizeof(rc_ops)];
	if (t == 1) {
		if (!(droce_opcode_info[p.opcode | DROCE_TRANSPORT_UC].valid))
			p.opcode = DROCE_OP_RC_WRITE_ONLY;
		p.opcode |= DROCE_TRANSPORT_UC;
	}
	if (t == 2) {
		uint32_t x = take(in, 1);

		if (!(droce_opcode_info[p.opcode | DROCE_TRANSPORT_XRC].valid))
			p.opcode = DROCE_OP_RC_SEND_ONLY;
		p.opcode |= DROCE_TRANSPORT_XRC;
		/* mostly its domain's SRQ; else the other's, none, any */
		p.xrceth_srqn = x < 0xc0 ? droce_srq_num(xsrq[0]) :
			x < 0xe0 ? droce_srq_num(xsrq[1]) : x < 0xf0 ? 0 :
			take(in, 3);
	}
	if (t == 3) {
		uint32_t x = take(in, 1);

		/* a SEND ONLY (with immediate), mostly under the Q_Key */
		p.opcode = ctl & 1 ? DROCE_OP_UD_SEND_ONLY_IMM :
			DROCE_OP_UD_SEND_ONLY;
		p.deth_qkey = x < 0xe0 ? UD_QKEY : take(in, 4);
		p.deth_sqpn = take(in, 3);
	}
	p.dqpn = qp->qpn;
	/* mostly the expected PSN, sometimes a little off */
	p.psn = droce_psn_add(qp->epsn, (ctl >> 8) & 8 ? ((ctl >> 8) & 7) - 3 : 0);
	p.ackreq = (ctl >> 12) & 1;
	p.se = (ctl >> 13) & 1;
	/* a VA around the MR: mostly inside */
	p.reth_va = (uintptr_t)mem + (int32_t)(take(in, 2) & 0x3fff) - 1024;
	p.reth_rkey = droce_mr_rkey(mr) ^ ((ctl >> 14) == 3 ? take(in, 1) : 0);
	p.reth_len = take(in, 2) & 0x3fff;
	p.atm_va = p.reth_va;
	p.atm_rkey = p.reth_rkey;
	p.atm_swap_add = take(in, 1);
	p.atm_compare = take(in, 1);
	p.ieth_rkey = take(in, 1) & 1 ? droce_mr_rkey(mr) : take(in, 4);
	plen = take(in, 2) & 0x7ff;
	if (plen > sizeof(payload))
		plen = qp->mtu;
	if (!(droce_opcode_info[p.opcode].flags & DROCE_OPF_PAYLOAD))
		plen = 0;
	/* ATOMIC WRITE: mostly well formed (8 bytes, aligned), so that it
	 * executes; bit 13 of the DMA length keeps it as the input says */
	if (p.opcode == DROCE_OP_RC_ATOMIC_WRITE && !(p.reth_len & 0x2000)) {
		p.reth_len = 8;
		p.reth_va &= ~(uint64_t)7;
		plen = 8;
	}
	/* FLUSH: mostly a global one of a range or the MR; the input's
	 * FETH otherwise, reserved values too */
	p.feth_plt = (ctl >> 8) & 4 ? (ctl >> 4) & 0xf : DROCE_FLUSH_GLOBAL;
	p.feth_sel = (ctl >> 8) & 4 ? (ctl >> 2) & 3 : (ctl >> 9) & 1;
	for (i = 0; i < plen; i++)
		payload[i] = (uint8_t)(i ^ ctl);
	p.payload = payload;
	p.payload_len = plen;
	len = droce_wire_build(&p, f, cap);
	if (len <= 0)
		return 0;
	/* then a byte flipped (the IP sum and ICRC made good again, unless
	 * the input says), a trailer */
	mut = fuzz_flip(in, f, (uint32_t)len, raw);
	if (mut & 0x200000) {
		memset(f + len, 0xee, 16);
		len += 16;
	}
	return (uint32_t)len;
}

static void
check_guards(void)
{
	if (memcmp(arena, shadow, GUARD) != 0 ||
			memcmp(arena + ARENA - GUARD, shadow + ARENA - GUARD,
				GUARD) != 0)
		abort();	/* a byte outside every MR changed */
}

/* A UD SEND writes only the receive it completes well, within its SGEs
 * and its length; anything else writes nothing. */
static void
check_ud(void)
{
	struct ibv_wc wc;
	uint32_t i, k, lo[2], hi[2];

	if (droce_cq_poll(cq[1], &wc, 1) != 1 || wc.status != IBV_WC_SUCCESS) {
		if (memcmp(arena, shadow, ARENA) != 0)
			abort();	/* a refused or failed receive wrote */
		return;
	}
	k = (uint32_t)wc.wr_id;
	if (k >= NRECV || wc.byte_len > sge_len(3, k, 0) + sge_len(3, k, 1))
		abort();
	lo[0] = (uint32_t)(rmem - arena) + k * RBUF_LEN;
	lo[1] = lo[0] + RBUF_LEN / 2;
	hi[0] = lo[0] + sge_len(3, k, 0);
	hi[1] = lo[1] + sge_len(3, k, 1);
	for (i = 0; i < ARENA; i++)
		if (!((i >= lo[0] && i < hi[0]) || (i >= lo[1] && i < hi[1])) &&
				arena[i] != shadow[i])
			abort();	/* written outside the receive */
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t f[4096];
	struct in in = { data, size };
	int k;

	if (arena == NULL)
		setup();
	for (k = 0; k < 4 && in.n; k++) {
		int t = (int)(take(&in, 1) % 4), raw;
		struct droce_qp *qp = resp[t];
		const uint8_t *fp = f;
		uint32_t len, e0, drops0;

		if (qp->state != IBV_QPS_RTS || req[t]->state != IBV_QPS_RTS)
			connect_pair(t);
		top_up(t);
		len = decode(&in, t, f, sizeof(f) - 16, &raw);
		if (len == 0)
			continue;
		memcpy(shadow, arena, ARENA);
		e0 = qp->epsn;
		drops0 = (uint32_t)qp->st.rx_drop_uc;
		droce_tp_rx_burst(L.end[1].q, &fp, &len, 1, L.now);
		check_guards();
		if (t == 3)
			check_ud();
		/* rejected: RC's (XRC's) PSN did not move, UC counted a
		 * drop */
		else if ((t != 1 && qp->epsn == e0) || (t == 1 &&
				(qp->st.rx_drop_uc != drops0 ||
				qp->state == IBV_QPS_ERR))) {
			if (memcmp(arena, shadow, ARENA) != 0)
				abort();	/* a rejected request wrote */
		}
		(void)raw;
		/* the answers out, the requester's view of them */
		fl_step(&L, 1000);
	}
	return 0;
}
