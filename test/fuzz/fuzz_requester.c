/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * libFuzzer target for the requester's side of RC: a hostile or broken
 * responder. Each input posts up to eight WRs (WRITE, SEND, READ into one
 * or two SGEs, FETCH_ADD, CMP_SWAP, ATOMIC WRITE, FLUSH) on an RC QP
 * whose requests go nowhere, then feeds it crafted answers: ACKs, RNR
 * NAKs and NAKs of every class (and reserved syndromes), READ responses
 * FIRST/MIDDLE/LAST/ONLY and atomic ACKs, at PSNs of its WQEs, around
 * what it has sent and anywhere, payloads of the right length and not, a
 * byte flipped (the ICRC made good again, unless the input says), with
 * time passing between them (timeouts, RNR waits, retries). Go-back-N and
 * selective repeat each have a QP. Under ASan and UBSan, besides "no
 * crash":
 *  - no byte changes outside the buffers the WRs named for READ results
 *    and atomic originals (guard bytes, and everything else of the MR);
 *  - completions come once each and in the order the WRs were posted;
 *  - nothing completes well without an answer at or past its last PSN;
 *  - a READ that completes well holds what the responses for its PSNs
 *    carried, each at its place, and an atomic the original its ACK
 *    carried (unless a flipped byte changed what was sent).
 * Each input starts from a QP pair reset and connected again.
 */

#include <endian.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_frame.h"
#include "tp_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define LMR_LEN		4096
#define GUARD		256
#define ARENA		(GUARD + LMR_LEN + GUARD)
#define MAX_WR		8
#define MAX_RESP	12

static struct fakelink L[2];	/* [0] go-back-N, [1] selective repeat */
static struct droce_cq *cq[2];
static struct droce_qp *req[2], *resp[2];
static struct droce_mr *lmr[2];
static uint8_t *arena, *shadow, *allowed;

/* The payload byte j of a response at PSN psn, and an atomic's original:
 * what a READ that completes well must then hold. */
static inline uint8_t
resp_byte(uint32_t psn, uint32_t j)
{
	return (uint8_t)(psn * 7u + j * 13u + 1u);
}

static inline uint64_t
resp_orig(uint32_t psn)
{
	return 0x0123456789abcdefull ^ ((uint64_t)psn * 0x9e3779b97f4a7c15ull);
}

/* What each WR of an input is, to check its completion. */
struct wr_rec {
	enum ibv_wr_opcode op;
	uint32_t off[2], len[2];	/* its SGEs in the arena's MR */
	uint32_t nsge, total;
	int done;
};

static void
setup(void)
{
	struct ibv_qp_init_attr ia;
	struct droce_cq *c;
	uint32_t i;
	int s, t;

	arena = malloc(ARENA);
	shadow = malloc(ARENA);
	allowed = malloc(ARENA);
	if (arena == NULL || shadow == NULL || allowed == NULL)
		abort();
	for (i = 0; i < ARENA; i++)
		arena[i] = (uint8_t)(i * 31 + 5);
	for (t = 0; t < 2; t++) {
		fl_sr = (uint8_t)t;
		if (fl_init(&L[t], 1, 1500) != 0)
			abort();
		cq[t] = droce_cq_create(L[t].end[0].dev, 0, 1024);
		lmr[t] = droce_mr_reg(L[t].end[0].pd, arena + GUARD, LMR_LEN,
			(uintptr_t)(arena + GUARD), IBV_ACCESS_LOCAL_WRITE);
		if (cq[t] == NULL || lmr[t] == NULL)
			abort();
		for (s = 0; s < 2; s++) {
			memset(&ia, 0, sizeof(ia));
			ia.qp_type = IBV_QPT_RC;
			ia.cap.max_send_wr = 16;
			ia.cap.max_recv_wr = 4;
			ia.cap.max_send_sge = 2;
			ia.cap.max_recv_sge = 1;
			c = s ? droce_cq_create(L[t].end[1].dev, 0, 64) : cq[t];
			(s ? resp : req)[t] = c == NULL ? NULL :
				droce_qp_create(L[t].end[s].pd, &ia, c, c, NULL);
			if ((s ? resp : req)[t] == NULL)
				abort();
		}
		/* the requests go nowhere: the input answers them */
		L[t].faults[0].stalled = 1;
	}
	fl_sr = 0;
}

static void
connect_pair(int t, uint32_t seed)
{
	struct ibv_qp_attr reset = { .qp_state = IBV_QPS_RESET };
	struct ibv_wc wc[16];
	struct fl_qp_opts o;

	if (droce_qp_modify(req[t], &reset, IBV_QP_STATE, NULL) != 0 ||
			droce_qp_modify(resp[t], &reset, IBV_QP_STATE, NULL) != 0)
		abort();
	while (droce_cq_poll(cq[t], wc, 16) > 0)
		;
	fl_qp_opts_default(&o);
	o.mtu = IBV_MTU_256;
	o.max_rd_atomic = MAX_WR;
	o.max_dest_rd_atomic = MAX_WR;
	o.retry_cnt = 3;
	o.rnr_retry = 2;
	o.timeout = 8;
	/* the same PSNs for the same input (near the 24-bit wrap too) */
	L[t].rng = 0x5eed0000ull + seed;
	if (fl_connect(&L[t], req[t], resp[t], &o) != 0)
		abort();
}

/* Post the input's WRs; each READ or atomic gets arena bytes of its own,
 * which alone may change. */
static uint32_t
post_wrs(struct in *in, int t, struct wr_rec *rec)
{
	uint32_t n = take(in, 1) % MAX_WR + 1, next = 0, i;

	memset(allowed, 0, ARENA);
	for (i = 0; i < n; i++) {
		struct wr_rec *r = &rec[i];
		uint32_t ctl = take(in, 2), s;
		struct ibv_sge sge[2];
		struct ibv_send_wr wr, *bad;

		memset(r, 0, sizeof(*r));
		memset(&wr, 0, sizeof(wr));
		static const enum ibv_wr_opcode ops[] = {
			IBV_WR_RDMA_WRITE, IBV_WR_SEND, IBV_WR_RDMA_READ,
			IBV_WR_RDMA_READ, IBV_WR_ATOMIC_FETCH_AND_ADD,
			IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_WRITE,
			DROCE_WR_FLUSH,
		};
		r->op = ops[ctl & 7];
		r->nsge = 1;
		switch ((int)r->op) {
		case IBV_WR_RDMA_READ:
			r->nsge = (ctl >> 3) & 1 ? 2 : 1;
			r->len[0] = (ctl >> 4) & 0x1ff;
			r->len[1] = r->nsge == 2 ? (ctl >> 6) & 0x1ff : 0;
			break;
		case IBV_WR_ATOMIC_FETCH_AND_ADD:
		case IBV_WR_ATOMIC_CMP_AND_SWP:
		case IBV_WR_ATOMIC_WRITE:
			next = (next + 7) & ~7u;
			r->len[0] = 8;
			break;
		case DROCE_WR_FLUSH:
			r->nsge = 0;
			break;
		default:
			r->len[0] = (ctl >> 4) & 0x3ff;
			break;
		}
		if (next + r->len[0] + r->len[1] > LMR_LEN)
			break;
		for (s = 0; s < r->nsge; s++) {
			r->off[s] = next;
			next += r->len[s];
			sge[s].addr = (uintptr_t)(arena + GUARD + r->off[s]);
			sge[s].length = r->len[s];
			sge[s].lkey = droce_mr_lkey(lmr[t]);
			r->total += r->len[s];
			/* what the responder answers may land here */
			if (r->op != IBV_WR_RDMA_WRITE && r->op != IBV_WR_SEND &&
					r->op != IBV_WR_ATOMIC_WRITE)
				memset(allowed + GUARD + r->off[s], 1,
					r->len[s]);
		}
		wr.wr_id = i;
		wr.opcode = r->op;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.sg_list = sge;
		wr.num_sge = (int)r->nsge;
		wr.wr.rdma.remote_addr = 0x10000 + take(in, 1) * 8u;
		wr.wr.rdma.rkey = 0x1234;
		if (r->op == IBV_WR_ATOMIC_FETCH_AND_ADD ||
				r->op == IBV_WR_ATOMIC_CMP_AND_SWP) {
			wr.wr.atomic.remote_addr = 0x10000;
			wr.wr.atomic.rkey = 0x1234;
			wr.wr.atomic.compare_add = 1;
		}
		if (r->op == DROCE_WR_FLUSH) {
			wr.wr.atomic.remote_addr = 0x10000;
			wr.wr.atomic.rkey = 0x1234;
			wr.wr.atomic.compare_add = 64;
			wr.wr.atomic.swap = DROCE_FLUSH_GLOBAL;
		}
		if (droce_qp_post_send(req[t], &wr, &bad) != 0)
			abort();	/* every WR here is well formed */
	}
	return i;
}

/* The answer a good responder gives to packet i of w: its opcode, PSN
 * and syndrome in p; its payload length returned. */
static uint32_t
good_answer(const struct droce_qp *qp, const struct tp_swqe *w, uint32_t i,
		struct droce_pkt *p)
{
	uint32_t n = w->npsn ? w->npsn : 1, plen = 0;

	i = i < n ? i : n - 1;
	p->psn = droce_psn_add(w->first_psn, i);
	p->aeth_syndrome = DROCE_AETH_TYPE_ACK | 0x1f;
	if (w->wr_flags & TP_WRF_EMPTY_RESP) {
		p->opcode = DROCE_OP_RC_READ_RESP_ONLY;
	} else if (w->wr_flags & TP_WRF_READ) {
		p->opcode = n == 1 ? DROCE_OP_RC_READ_RESP_ONLY :
			i == 0 ? DROCE_OP_RC_READ_RESP_FIRST :
			i + 1 == n ? DROCE_OP_RC_READ_RESP_LAST :
			DROCE_OP_RC_READ_RESP_MIDDLE;
		plen = (uint32_t)(w->length - (uint64_t)i * qp->mtu);
		plen = plen < qp->mtu ? plen : qp->mtu;
	} else if (w->wr_flags & TP_WRF_ATOMIC) {
		p->opcode = DROCE_OP_RC_ATOMIC_ACK;
		p->psn = w->first_psn;
		p->atmack_orig = resp_orig(p->psn);
	} else {
		p->opcode = DROCE_OP_RC_ACK;
		p->psn = droce_psn_add(w->first_psn, n - 1);
	}
	return plen;
}

/* A SACK after an ACK at psn: one or two words of the input's bits. */
static uint32_t
sack(struct in *in, uint32_t psn, uint32_t two, uint8_t *payload)
{
	uint32_t v = htobe32(TP_SACK_MAGIC), nw = two ? 2 : 1, k;

	memcpy(payload, &v, 4);
	v = htobe32(droce_psn_add(psn, 1));
	memcpy(payload + 4, &v, 4);
	for (k = 0; k < nw; k++) {
		uint64_t x = (uint64_t)take(in, 4) << 32 | take(in, 4);

		x = htobe64(x);
		memcpy(payload + 8 + 8 * k, &x, 8);
	}
	return 8 + 8 * nw;
}

/* One crafted answer from the responder's side into f. */
static uint32_t
decode_resp(struct in *in, int t, uint32_t nwr, uint8_t *f, uint32_t cap,
		uint32_t *psn, int *mutated)
{
	static const uint8_t ops[] = {
		DROCE_OP_RC_ACK, DROCE_OP_RC_ACK, DROCE_OP_RC_READ_RESP_FIRST,
		DROCE_OP_RC_READ_RESP_MIDDLE, DROCE_OP_RC_READ_RESP_LAST,
		DROCE_OP_RC_READ_RESP_ONLY, DROCE_OP_RC_ATOMIC_ACK,
		DROCE_OP_RC_READ_RESP_ONLY,
	};
	static uint8_t payload[1200];
	struct fl_end *a = &L[t].end[1], *b = &L[t].end[0];
	struct droce_qp *qp = req[t];
	uint32_t ctl = take(in, 2), plen, j, k, left = 0;
	const struct tp_swqe *w = NULL;
	struct droce_pkt p;
	int len;

	fuzz_pkt_between(&p, a, b);
	p.opcode = ops[ctl & 7];
	p.dqpn = qp->qpn;
	/* mostly at a WQE's PSNs; around una or the next PSN; anywhere */
	k = take(in, 1);
	switch ((ctl >> 3) & 3) {
	case 0:
	case 1:
		w = tp_sq_wqe(qp, qp->sq.head - nwr + k % nwr);
		p.psn = droce_psn_add(w->first_psn, (k >> 4) & 3);
		/* what a READ of w has left from that PSN */
		if (w->length > ((k >> 4) & 3) * qp->mtu)
			left = (uint32_t)w->length - ((k >> 4) & 3) * qp->mtu;
		left = left < qp->mtu ? left : qp->mtu;
		break;
	case 2:
		p.psn = droce_psn_add(k & 0x80 ? qp->psn : qp->una,
			(k & 0xf) - 8);
		break;
	default:
		p.psn = take(in, 3);
		break;
	}
	switch ((ctl >> 5) & 7) {
	case 4:
		p.aeth_syndrome = (uint8_t)(DROCE_AETH_TYPE_RNR | (k & 0x1f));
		break;
	case 5:
		p.aeth_syndrome = DROCE_AETH_NAK_PSN_SEQ;
		break;
	case 6:
		p.aeth_syndrome = (uint8_t)(DROCE_AETH_NAK_INV_REQ + k % 3);
		break;
	case 7:
		p.aeth_syndrome = (uint8_t)take(in, 1);
		break;
	default:
		p.aeth_syndrome = (uint8_t)(DROCE_AETH_TYPE_ACK | (k & 0x1f));
		break;
	}
	p.aeth_msn = take(in, 3);
	p.atmack_orig = resp_orig(p.psn);
	switch ((ctl >> 8) & 3) {
	case 0:
		plen = qp->mtu;
		break;
	case 1:	/* what a READ of the WQE at that PSN has left */
		plen = left;
		break;
	case 2:
		plen = take(in, 2) % sizeof(payload);
		break;
	default:
		plen = 0;
		break;
	}
	/* half of those at a WQE's PSNs: the answer a good responder
	 * gives there (so that well answered WRs complete and later
	 * answers meet their state) */
	if (w != NULL && (ctl & 0x8000))
		plen = good_answer(qp, w, (k >> 4) & 3, &p);
	if (!(droce_opcode_info[p.opcode].flags & DROCE_OPF_PAYLOAD))
		plen = 0;
	for (j = 0; j < plen; j++)
		payload[j] = resp_byte(p.psn, j);
	/* selective repeat's ACK may carry a SACK: what is held past it */
	if (t == 1 && p.opcode == DROCE_OP_RC_ACK && (ctl & 0x4000))
		plen = sack(in, p.psn, (ctl >> 13) & 1, payload);
	p.payload = payload;
	p.payload_len = plen;
	*psn = p.psn;
	len = droce_wire_build(&p, f, cap);
	if (len <= 0)
		return 0;
	fuzz_flip(in, f, (uint32_t)len, mutated);
	return (uint32_t)len;
}

static void
check_memory(void)
{
	uint32_t i;

	for (i = 0; i < ARENA; i++)
		if (!allowed[i] && arena[i] != shadow[i])
			abort();	/* a byte no WR named changed */
}

/* What a WR that completed well must hold. */
static void
check_success(int t, const struct wr_rec *r, uint32_t idx, uint32_t head0,
		int32_t reach)
{
	const struct tp_swqe *w = tp_sq_wqe(req[t], head0 + idx);
	uint32_t first = tp_sq_wqe(req[t], head0)->first_psn;
	uint32_t mtu = req[t]->mtu, x = 0, s, j;

	/* an answer at or past its last PSN must have come */
	if (droce_psn_diff(droce_psn_add(w->first_psn, w->npsn - 1), first) >
			reach)
		abort();
	if (r->op == IBV_WR_RDMA_READ) {
		for (s = 0; s < r->nsge; s++)
			for (j = 0; j < r->len[s]; j++, x++)
				if (arena[GUARD + r->off[s] + j] != resp_byte(
						droce_psn_add(w->first_psn,
						x / mtu), x % mtu))
					abort();	/* misplaced */
	} else if (r->op == IBV_WR_ATOMIC_FETCH_AND_ADD ||
			r->op == IBV_WR_ATOMIC_CMP_AND_SWP) {
		uint64_t v;

		memcpy(&v, arena + GUARD + r->off[0], 8);
		if (v != resp_orig(w->first_psn))
			abort();
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t f[2048];
	struct wr_rec rec[MAX_WR];
	struct in in = { data, size };
	uint32_t nwr, head0, next_wc = 0, k, first;
	int32_t reach = -1;
	int t, mutated = 0;

	if (arena == NULL)
		setup();
	if (size < 2)
		return 0;
	t = data[0] & 1;
	connect_pair(t, data[1]);
	head0 = req[t]->sq.head;
	nwr = post_wrs(&in, t, rec);
	if (nwr == 0)
		return 0;
	fl_step(&L[t], 1000);	/* out, and lost */
	first = tp_sq_wqe(req[t], head0)->first_psn;
	for (k = 0; k < MAX_RESP && in.n; k++) {
		const uint8_t *fp = f;
		struct ibv_wc wc[MAX_WR];
		uint32_t len, step, psn, psn_hw = req[t]->psn_hw;
		int m = 0, n, i;

		len = decode_resp(&in, t, nwr, f, sizeof(f), &psn, &m);
		step = take(&in, 1);
		if (len == 0)
			continue;
		mutated |= m;
		/* an answer to something sent: what may complete */
		if (!m && droce_psn_diff(psn, psn_hw) < 0 &&
				droce_psn_diff(psn, first) > reach)
			reach = droce_psn_diff(psn, first);
		memcpy(shadow, arena, ARENA);
		droce_tp_rx_burst(L[t].end[0].q, &fp, &len, 1, L[t].now);
		/* time passes: nothing, a moment, a timeout's worth */
		fl_step(&L[t], (step & 3) == 0 ? 0 : (step & 3) == 1 ? 1000 :
			(step & 3) == 2 ? 1000000 : 40000000);
		check_memory();
		n = droce_cq_poll(cq[t], wc, MAX_WR);
		for (i = 0; i < n; i++) {
			if (wc[i].wr_id != next_wc || next_wc >= nwr)
				abort();	/* twice, or out of order */
			rec[next_wc].done = 1;
			if (wc[i].status == IBV_WC_SUCCESS && !mutated)
				check_success(t, &rec[next_wc], next_wc, head0,
					reach);
			next_wc++;
		}
	}
	return 0;
}
