/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * IBTA 1.5 ATOMIC WRITE through two transports joined by the fake link:
 * the word lands byte for byte and nothing around it moves; the wire
 * carries opcode 0x1D with a RETH and 8 bytes, answered by a READ
 * response ONLY without payload at the request's PSN (as rxe does); a
 * duplicate is answered again and never stored again; loss is repaired
 * by retransmission; and every refusal: at posting (QP type, length,
 * alignment: EINVAL with bad_wr) and at the responder (rkey, MR and QP
 * access, bounds, resources, an MR whose host address is misaligned).
 */

#include "tp_util.h"

/* CHECK_EQ with a formatted message */
#define CHECK_EQF(a, b, ...) do { \
	long long _x = (long long)(a), _y = (long long)(b); \
	CHECK(_x == _y, __VA_ARGS__); \
	if (_x != _y) \
		fprintf(stderr, "  got %lld, want %lld\n", _x, _y); \
} while (0)

static struct fakelink L;

/* A fresh link, and on it a pair of type t with 64 KiB each side, side
 * 1's registered with acc1. */
static void
pair_make_t(struct pair *p, enum ibv_qp_type t, const struct fl_qp_opts *o,
		unsigned int acc1, uint32_t max_inline)
{
	struct pair_cfg c = {
		.type = t, .cqe = 512, .send_wr = 256, .recv_wr = 16,
		.sges = 2, .max_inline = max_inline,
		.buf_len = 65536, .acc1 = acc1, .o = o,
	};

	fl_fini(&L);
	CHECK_EQF(fl_init(&L, 23, 1500), 0, "fakelink");
	pair_create(&L, p, &c);
}

static void
pair_make(struct pair *p, const struct fl_qp_opts *o, unsigned int acc1)
{
	pair_make_t(p, IBV_QPT_RC, o, acc1, 0);
}

static void
pair_free(struct pair *p)
{
	pair_destroy(p);
	L.filter = NULL;
	memset(L.faults, 0, sizeof(L.faults));
}

/* An ATOMIC WRITE of the len bytes at loff of side 0's buffer. */
static void
awr_wr(struct ibv_send_wr *wr, struct ibv_sge *s, struct pair *p,
		uint32_t loff, uint32_t len, uint64_t raddr, uint32_t rkey,
		uint64_t id)
{
	pair_wr(p, wr, s, IBV_WR_ATOMIC_WRITE, loff, len, raddr, rkey, id);
}

/* An ATOMIC WRITE of the 8 bytes at loff of side 0's buffer, posted. */
static int
post_awr(struct pair *p, uint32_t loff, uint64_t raddr, uint32_t rkey,
		uint64_t id)
{
	return pair_post(p, IBV_WR_ATOMIC_WRITE, loff, 8, raddr, rkey, id);
}

/* One completion of side's CQ within a second: 0, or -1. */
static int
wait_one(struct pair *p, int side, struct ibv_wc *wc)
{
	return pair_wait(p, side, wc, 1000000000);
}

/* What the wire carried, requests (dir 0) and responses (dir 1). */
static struct {
	int req, resp, bad;
	uint32_t req_psn;
	int drop_resp;		/* drop this many responses */
	uint64_t *poison;	/* when dropping: overwrite with this */
	uint64_t poison_val;
} wire;

static int
watch(struct fakelink *l, int dir, const uint8_t *f, uint32_t len)
{
	struct droce_pkt pkt;

	(void)l;
	if (droce_wire_parse(f, len, NULL, &pkt) != 0)
		return 0;
	if (dir == 0 && pkt.opcode == DROCE_OP_RC_ATOMIC_WRITE) {
		wire.req++;
		wire.req_psn = pkt.psn;
		if (pkt.reth_len != 8 || pkt.payload_len != 8 || !pkt.ackreq ||
				pkt.padcnt != 0)
			wire.bad++;
	}
	if (dir == 1 && pkt.opcode == DROCE_OP_RC_READ_RESP_ONLY) {
		wire.resp++;
		if (pkt.payload_len != 0 || pkt.psn != wire.req_psn ||
				DROCE_AETH_TYPE(pkt.aeth_syndrome) !=
				DROCE_AETH_TYPE_ACK)
			wire.bad++;
		if (wire.drop_resp) {
			wire.drop_resp--;
			/* stored already: a second store would undo this */
			if (wire.poison != NULL)
				*wire.poison = wire.poison_val;
			return 1;
		}
	}
	return 0;
}

/*
 * Words of every byte value to every aligned slot of a 512-byte window,
 * from one SGE, from two SGEs and inline with max_inline_data 0: each
 * completion is IBV_WC_ATOMIC_WRITE and only the named 8 bytes change.
 */
static void
test_data(void)
{
	static uint8_t shadow[512];
	struct pair p;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge s[2];
	struct ibv_wc wc;
	uint32_t i, k;
	uint8_t *src, *dst;

	pair_make(&p, NULL, ACC_ALL);
	memset(&wire, 0, sizeof(wire));
	L.filter = watch;
	src = p.b[0].p;
	dst = p.b[1].p + 4096;
	pattern(dst, 512, 99);
	memcpy(shadow, dst, 512);
	for (i = 0; i < 64 * 3; i++) {
		uint32_t slot = (i * 37) % 64, mode = i % 3;

		for (k = 0; k < 8; k++)
			src[8 * i + k] = (uint8_t)(i * 8 + k + 1);
		awr_wr(&wr, &s[0], &p, 8 * i, 8, REMOTE(&p, 4096 + 8 * slot),
			RKEY(&p), i);
		if (mode == 1) {	/* 3 + 5 bytes */
			s[0].length = 3;
			s[1] = sge_of(&p.b[0], 8 * i + 3, 5);
			wr.num_sge = 2;
		} else if (mode == 2) {
			wr.send_flags |= IBV_SEND_INLINE;
		}
		CHECK_EQF(droce_qp_post_send(p.qp[0], &wr, &bad), 0,
			"post %u (mode %u)", i, mode);
		if (mode == 2)	/* copied at posting: reuse the buffer */
			memset(src + 8 * i, 0xee, 8);
		CHECK_EQF(wait_one(&p, 0, &wc), 0, "completion %u", i);
		CHECK_EQF(wc.status, IBV_WC_SUCCESS, "status %u", i);
		CHECK_EQF(wc.opcode, IBV_WC_ATOMIC_WRITE, "wc opcode %u", i);
		CHECK_EQF(wc.wr_id, i, "wr_id");
		for (k = 0; k < 8; k++)
			shadow[8 * slot + k] = (uint8_t)(i * 8 + k + 1);
		CHECK(memcmp(dst, shadow, 512) == 0,
			"every byte of the window after write %u", i);
	}
	CHECK_EQF(wire.req, 64 * 3, "one 0x1D request per WR");
	CHECK_EQF(wire.resp, 64 * 3, "one empty READ response ONLY each");
	CHECK_EQF(wire.bad, 0, "request and response layouts");
	CHECK_EQF(droce_qp_state(p.qp[0]), IBV_QPS_RTS, "requester RTS");
	CHECK_EQF(droce_qp_state(p.qp[1]), IBV_QPS_RTS, "responder RTS");
	pair_free(&p);
}

/*
 * The rule is remote write (rxe's check_rkey): an MR with REMOTE_WRITE and
 * without REMOTE_ATOMIC takes the word; one with REMOTE_ATOMIC and without
 * REMOTE_WRITE refuses it with a remote access error, memory unchanged.
 */
static void
test_access_rule(void)
{
	struct pair p;
	struct ibv_wc wc;
	uint64_t v = 0x0123456789abcdefull;

	pair_make(&p, NULL, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	memcpy(p.b[0].p, &v, 8);
	CHECK_EQF(post_awr(&p, 0, REMOTE(&p, 64), RKEY(&p), 1), 0, "post");
	CHECK_EQF(wait_one(&p, 0, &wc), 0, "completion");
	CHECK_EQF(wc.status, IBV_WC_SUCCESS, "REMOTE_WRITE suffices");
	CHECK(memcmp(p.b[1].p + 64, &v, 8) == 0, "stored");
	pair_free(&p);

	pair_make(&p, NULL, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC |
		IBV_ACCESS_REMOTE_READ);
	memcpy(p.b[0].p, &v, 8);
	CHECK_EQF(post_awr(&p, 0, REMOTE(&p, 64), RKEY(&p), 1), 0, "post");
	CHECK_EQF(wait_one(&p, 0, &wc), 0, "completion");
	CHECK_EQF(wc.status, IBV_WC_REM_ACCESS_ERR, "REMOTE_ATOMIC alone");
	CHECK_EQF(wc.opcode, IBV_WC_ATOMIC_WRITE, "wc opcode of the error");
	CHECK(*(uint64_t *)(p.b[1].p + 64) == 0, "nothing stored");
	CHECK_EQF(droce_qp_state(p.qp[0]), IBV_QPS_ERR, "requester ERR");
	fl_run_idle(&L, 10000000);
	CHECK_EQF(droce_qp_state(p.qp[1]), IBV_QPS_ERR, "responder ERR");
	pair_free(&p);
}

/* One refused at the responder: status, counters, both QPs in ERR. */
static void
remote_refusal(const char *what, const struct fl_qp_opts *o, uint64_t roff,
		int bad_key, enum ibv_wc_status want, int inv_req)
{
	struct pair p;
	struct droce_tp_stats st;
	struct ibv_wc wc;
	uint32_t rkey;

	pair_make(&p, o, ACC_ALL);
	memset(p.b[0].p, 0x5a, 8);
	rkey = RKEY(&p) ^ (bad_key ? 0x100 : 0);
	CHECK_EQF(post_awr(&p, 0, REMOTE(&p, roff), rkey, 1), 0, "%s: post",
		what);
	CHECK_EQF(wait_one(&p, 0, &wc), 0, "%s: completion", what);
	CHECK_EQF(wc.status, want, "%s: status", what);
	CHECK_EQF(droce_qp_state(p.qp[0]), IBV_QPS_ERR, "%s: requester ERR",
		what);
	fl_run_idle(&L, 10000000);
	CHECK_EQF(droce_qp_state(p.qp[1]), IBV_QPS_ERR, "%s: responder ERR",
		what);
	droce_qp_stats(p.qp[1], &st);
	CHECK_EQF(inv_req ? st.nak_inv_tx : st.nak_acc_tx, 1, "%s: NAK counted",
		what);
	CHECK(roff + 8 > 65536 || *(uint64_t *)(p.b[1].p + roff) == 0,
		"%s: nothing stored", what);
	pair_free(&p);
}

static void
test_remote_refusals(void)
{
	struct fl_qp_opts o;

	remote_refusal("bad rkey", NULL, 0, 1, IBV_WC_REM_ACCESS_ERR, 0);
	remote_refusal("past the MR", NULL, 65536, 0, IBV_WC_REM_ACCESS_ERR, 0);
	fl_qp_opts_default(&o);
	o.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
	remote_refusal("QP without remote write", &o, 0, 0,
		IBV_WC_REM_ACCESS_ERR, 0);
	fl_qp_opts_default(&o);
	o.max_dest_rd_atomic = 0;	/* no resource to answer from */
	remote_refusal("no responder resources", &o, 0, 0,
		IBV_WC_REM_INV_REQ_ERR, 1);
}

/*
 * An MR whose iova is aligned but whose memory is not: the aligned VA the
 * request names lands on an odd host address, which no single store can
 * reach atomically. rxe refuses it as misaligned: Invalid Request NAK.
 */
static void
test_host_misaligned(void)
{
	struct pair p;
	struct droce_mr *mr;
	struct ibv_wc wc;
	uint8_t before[32];

	pair_make(&p, NULL, ACC_ALL);
	mr = droce_mr_reg(L.end[1].pd, p.b[1].p + 4, 1024, 0x100000,
		ACC_ALL);
	CHECK(mr != NULL, "MR at host offset 4");
	memcpy(before, p.b[1].p, sizeof(before));
	memset(p.b[0].p, 0x77, 8);
	CHECK_EQF(post_awr(&p, 0, 0x100008, droce_mr_rkey(mr), 1), 0, "post");
	CHECK_EQF(wait_one(&p, 0, &wc), 0, "completion");
	CHECK_EQF(wc.status, IBV_WC_REM_INV_REQ_ERR, "invalid request");
	CHECK(memcmp(before, p.b[1].p, sizeof(before)) == 0, "nothing stored");
	droce_mr_dereg(mr);
	pair_free(&p);
}

/* A crafted request straight into the responder: misaligned VA, a length
 * other than 8 in the RETH or the payload. */
static void
crafted(const char *what, uint64_t roff, uint32_t reth_len, uint32_t plen)
{
	static const uint8_t word[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 };
	struct pair p;
	struct droce_pkt pkt;
	struct droce_tp_stats st;
	uint8_t frame[256];
	const uint8_t *fp = frame;
	uint32_t len;
	int i;

	pair_make(&p, NULL, ACC_ALL);
	fl_request_pkt(&L, p.qp[1], DROCE_OP_RC_ATOMIC_WRITE, &pkt);
	pkt.reth_va = REMOTE(&p, roff);
	pkt.reth_rkey = RKEY(&p);
	pkt.reth_len = reth_len;
	pkt.payload = word;
	pkt.payload_len = plen;
	len = (uint32_t)droce_wire_build(&pkt, frame, sizeof(frame));
	droce_tp_rx_burst(L.end[1].q, &fp, &len, 1, L.now);
	fl_run_idle(&L, 10000000);
	droce_qp_stats(p.qp[1], &st);
	CHECK_EQF(st.nak_inv_tx, 1, "%s: invalid request NAK sent", what);
	CHECK_EQF(droce_qp_state(p.qp[1]), IBV_QPS_ERR, "%s: responder ERR",
		what);
	for (i = 0; i < 32; i++)
		CHECK_EQF(p.b[1].p[i], 0, "%s: byte %d untouched", what, i);
	pair_free(&p);
}

static void
test_crafted(void)
{
	crafted("misaligned VA", 4, 8, 8);
	crafted("RETH length 16", 0, 16, 16);
	crafted("RETH length 4", 0, 4, 4);
	crafted("payload 4 under RETH 8", 0, 8, 4);
}

/*
 * Refused at posting, as ibv_post_send(3) says: EINVAL and *bad_wr at the
 * WR, the WRs before it posted and nothing from it on.
 */
static void
post_refusal(const char *what, enum ibv_qp_type t, uint32_t len,
		uint64_t roff)
{
	struct pair p;
	struct ibv_send_wr wr[2], *bad = NULL;
	struct ibv_sge s[2];
	int rc;

	pair_make_t(&p, t, NULL, ACC_ALL, 0);
	/* a good WRITE first: it goes, the refused one and after do not */
	awr_wr(&wr[0], &s[0], &p, 0, 16, REMOTE(&p, 0), RKEY(&p), 1);
	wr[0].opcode = IBV_WR_RDMA_WRITE;
	awr_wr(&wr[1], &s[1], &p, 0, len, REMOTE(&p, roff), RKEY(&p), 2);
	wr[0].next = &wr[1];
	if (t == IBV_QPT_UD) {
		wr[0].next = NULL;	/* UD has no WRITE */
		rc = droce_qp_post_send(p.qp[0], &wr[1], &bad);
		CHECK_EQF(rc, EINVAL, "%s: EINVAL", what);
		CHECK(bad == &wr[1], "%s: bad_wr", what);
		pair_free(&p);
		return;
	}
	expect_refused_after(&L, p.qp[0], p.cq[0], &wr[0], what);
	pair_free(&p);
}

static void
test_post_refusals(void)
{
	post_refusal("UC QP", IBV_QPT_UC, 8, 0);
	post_refusal("UD QP", IBV_QPT_UD, 8, 0);
	post_refusal("length 4", IBV_QPT_RC, 4, 0);
	post_refusal("length 16", IBV_QPT_RC, 16, 0);
	post_refusal("length 0", IBV_QPT_RC, 0, 0);
	post_refusal("misaligned remote address", IBV_QPT_RC, 8, 4);
}

/*
 * The response is lost after the word was stored and the test overwrote
 * it: the requester retransmits, the responder answers from its resource
 * and does not store again. Then every request duplicated: executed once.
 */
static void
test_duplicates(void)
{
	struct pair p;
	struct droce_tp_stats st;
	struct ibv_wc wc;
	uint64_t *target, v = 0x1111111111111111ull;

	pair_make(&p, NULL, ACC_ALL);
	target = (uint64_t *)(p.b[1].p + 256);
	memset(&wire, 0, sizeof(wire));
	wire.drop_resp = 1;
	wire.poison = target;
	wire.poison_val = 0xdeaddeaddeaddeadull;
	L.filter = watch;
	memcpy(p.b[0].p, &v, 8);
	CHECK_EQF(post_awr(&p, 0, REMOTE(&p, 256), RKEY(&p), 1), 0, "post");
	CHECK_EQF(wait_one(&p, 0, &wc), 0, "completion");
	CHECK_EQF(wc.status, IBV_WC_SUCCESS, "after a lost response");
	CHECK_EQF(wire.req, 2, "the request went twice");
	CHECK_EQF(wire.resp, 2, "answered twice");
	CHECK_EQF(*target, 0xdeaddeaddeaddeadull, "stored once, not again");
	droce_qp_stats(p.qp[1], &st);
	CHECK_EQF(st.atomic_replays, 1, "answered from the resource");
	CHECK_EQF(wire.bad, 0, "layouts");
	pair_free(&p);

	pair_make(&p, NULL, ACC_ALL);
	L.faults[0].dup_ppm = 1000000;
	target = (uint64_t *)(p.b[1].p + 512);
	v = 0x2222222222222222ull;
	memcpy(p.b[0].p, &v, 8);
	CHECK_EQF(post_awr(&p, 0, REMOTE(&p, 512), RKEY(&p), 1), 0, "post");
	CHECK_EQF(wait_one(&p, 0, &wc), 0, "completion");
	CHECK_EQF(wc.status, IBV_WC_SUCCESS, "duplicated");
	*target = 7;		/* a duplicate stored again would undo it */
	fl_run_idle(&L, 10000000);
	CHECK_EQF(*target, 7, "the duplicate was not stored");
	droce_qp_stats(p.qp[1], &st);
	CHECK(st.atomic_replays >= 1, "duplicates answered: %llu",
		(unsigned long long)st.atomic_replays);
	pair_free(&p);
}

/*
 * A window of ATOMIC WRITEs between WRITEs, READs and FETCH_ADDs over a
 * link that drops, duplicates and reorders: all complete in order, with
 * the right opcodes, and memory holds what each wrote.
 */
static void
test_lossy_mix(void)
{
	struct pair p;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge s;
	struct ibv_wc wc;
	uint32_t i, n = 240, done = 0;
	uint64_t want_add = 0;
	int side;

	pair_make(&p, NULL, ACC_ALL);
	for (side = 0; side < 2; side++) {
		L.faults[side].drop_ppm = 30000;
		L.faults[side].dup_ppm = 20000;
		L.faults[side].reorder_ppm = 20000;
	}
	for (i = 0; i < n; i++) {
		uint32_t k = i % 4;

		if (k == 0 || k == 2) {	/* ATOMIC WRITE to slot i */
			uint64_t v = 0x0101010101010101ull * (i & 0xff) ^ i;

			memcpy(p.b[0].p + 8 * i, &v, 8);
			awr_wr(&wr, &s, &p, 8 * i, 8, REMOTE(&p, 8 * i),
				RKEY(&p), i);
		} else if (k == 1) {	/* WRITE of 100 bytes elsewhere */
			pattern(p.b[0].p + 8192 + 128 * i, 100, i);
			awr_wr(&wr, &s, &p, 8192 + 128 * i, 100,
				REMOTE(&p, 8192 + 128 * i), RKEY(&p), i);
			wr.opcode = IBV_WR_RDMA_WRITE;
		} else {		/* FETCH_ADD of i */
			awr_wr(&wr, &s, &p, 40960 + 8 * i, 8,
				REMOTE(&p, 65528), RKEY(&p), i);
			wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
			wr.wr.atomic.remote_addr = REMOTE(&p, 65528);
			wr.wr.atomic.rkey = RKEY(&p);
			wr.wr.atomic.compare_add = i;
			want_add += i;
		}
		CHECK_EQF(droce_qp_post_send(p.qp[0], &wr, &bad), 0, "post %u",
			i);
		/* keep the send queue from filling */
		while (i + 1 - done >= 200) {
			CHECK_EQF(wait_one(&p, 0, &wc), 0, "completion");
			CHECK_EQF(wc.status, IBV_WC_SUCCESS, "status %llu",
				(unsigned long long)wc.wr_id);
			CHECK_EQF(wc.wr_id, done, "in order");
			done++;
		}
	}
	while (done < n) {
		if (wait_one(&p, 0, &wc) != 0) {
			CHECK(0, "completion %u missing", done);
			break;
		}
		CHECK_EQF(wc.status, IBV_WC_SUCCESS, "status %llu",
			(unsigned long long)wc.wr_id);
		CHECK_EQF(wc.wr_id, done, "in order");
		CHECK_EQF(wc.opcode, (done % 4 == 0 || done % 4 == 2) ?
			IBV_WC_ATOMIC_WRITE : done % 4 == 1 ? IBV_WC_RDMA_WRITE :
			IBV_WC_FETCH_ADD, "opcode of %u", done);
		done++;
	}
	for (i = 0; i < n; i++) {
		if (i % 4 == 0 || i % 4 == 2)
			CHECK(memcmp(p.b[1].p + 8 * i, p.b[0].p + 8 * i, 8) == 0,
				"word %u", i);
		else if (i % 4 == 1)
			CHECK(pattern_ok(p.b[1].p + 8192 + 128 * i, 100, i),
				"write %u", i);
	}
	CHECK_EQF(*(uint64_t *)(p.b[1].p + 65528), want_add,
		"fetch-adds once each");
	CHECK(L.cnt[0].dropped + L.cnt[1].dropped > 0, "the link lost frames");
	pair_free(&p);
}

int
main(void)
{
	test_data();
	test_access_rule();
	test_remote_refusals();
	test_host_misaligned();
	test_crafted();
	test_post_refusals();
	test_duplicates();
	test_lossy_mix();
	fl_fini(&L);
	return check_report("transport_atomic_write");
}
