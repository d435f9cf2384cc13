/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * IBTA 1.5 FLUSH through two transports joined by the fake link: WRITEs
 * then a FLUSH of their range or of the whole MR, to global visibility and
 * to persistence (an MR over a shared file mapping: the bytes are in the
 * file when the FLUSH completes); the wire carries opcode 0x1C with the
 * FETH and the RETH and no payload, answered by a READ response ONLY
 * without payload at the request's PSN (as rxe does); a lost answer is
 * asked again and answered from the responder resource without flushing
 * again; and every refusal: at registration (persistence over memory with
 * no storage behind it: EINVAL), at posting (QP type, fields: EINVAL with
 * bad_wr) and at the responder (QP access: Invalid Request; MR access,
 * rkey, bounds: Remote Access; no resources, a bad FETH: Invalid Request).
 */

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tp_util.h"

#define CHECK_EQF(a, b, ...) do { \
	long long _x = (long long)(a), _y = (long long)(b); \
	CHECK(_x == _y, __VA_ARGS__); \
	if (_x != _y) \
		fprintf(stderr, "  got %lld, want %lld\n", _x, _y); \
} while (0)

#define ACC_FLUSH (DROCE_ACCESS_FLUSH_GLOBAL | DROCE_ACCESS_FLUSH_PERSISTENT)
#define BUF_LEN 65536

static struct fakelink L;
static char dir[64];
static int mr_fd = -1;	/* the pair's side 1 buffer is this file's, or -1 */

/* A file of len bytes under dir, mapped shared: its descriptor in *fd. */
static uint8_t *
file_map(const char *name, size_t len, int *fd, int flags)
{
	char path[128];
	void *p;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	*fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (*fd < 0 || ftruncate(*fd, (off_t)len) != 0)
		return NULL;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, flags, *fd, 0);
	return p == MAP_FAILED ? NULL : p;
}

/*
 * RC pair; side 1's buffer is registered with acc1, over a shared file
 * mapping when file is set (anonymous memory otherwise), and both QPs
 * take qp_acc.
 */
static void
pair_make_t(struct pair *p, enum ibv_qp_type t, unsigned int acc1,
		unsigned int qp_acc, int file, uint8_t max_dest_rd_atomic)
{
	struct fl_qp_opts o;
	struct pair_cfg c = {
		.type = t, .cqe = 512, .send_wr = 256, .recv_wr = 16,
		.sges = 2, .buf_len = BUF_LEN, .acc1 = acc1, .o = &o,
	};
	int s;

	fl_fini(&L);
	CHECK_EQF(fl_init(&L, 29, 1500), 0, "fakelink");
	fl_qp_opts_default(&o);
	o.access = qp_acc;
	o.max_dest_rd_atomic = max_dest_rd_atomic;
	mr_fd = -1;
	for (s = 0; s < 2; s++) {
		if (s == 1 && file) {
			c.buf_len = 0;
			pair_side(&L, p, s, &c);
			p->b[1].len = BUF_LEN;
			p->b[1].p = file_map("mr", BUF_LEN, &mr_fd, MAP_SHARED);
			CHECK(p->b[1].p != NULL, "file mapping");
			p->b[1].mr = droce_mr_reg(L.end[1].pd, p->b[1].p,
				BUF_LEN, (uint64_t)(uintptr_t)p->b[1].p, acc1);
		} else {
			pair_side(&L, p, s, &c);
		}
		CHECK(p->b[s].mr != NULL, "MR of side %d: %s", s,
			strerror(errno));
	}
	pair_connect(p, &c);
}

static void
pair_make(struct pair *p, unsigned int acc1, int file)
{
	pair_make_t(p, IBV_QPT_RC, acc1, ACC_ALL | ACC_FLUSH, file, 16);
}

static void
pair_free(struct pair *p)
{
	struct tbuf f = p->b[1];

	if (mr_fd >= 0)		/* not a tbuf: pair_destroy leaves it */
		memset(&p->b[1], 0, sizeof(p->b[1]));
	pair_destroy(p);
	if (mr_fd >= 0) {
		droce_mr_dereg(f.mr);
		munmap(f.p, BUF_LEN);
		close(mr_fd);
		mr_fd = -1;
	}
	L.filter = NULL;
	memset(L.faults, 0, sizeof(L.faults));
}

/* A FLUSH WR in droce_qp_post_send's terms (what ibv_wr_flush builds). */
static void
flush_wr(struct ibv_send_wr *wr, uint64_t raddr, uint32_t rkey,
		uint64_t len, unsigned int type, unsigned int level, uint64_t id)
{
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = id;
	wr->opcode = DROCE_WR_FLUSH;
	wr->send_flags = IBV_SEND_SIGNALED;
	wr->wr.atomic.remote_addr = raddr;
	wr->wr.atomic.rkey = rkey;
	wr->wr.atomic.compare_add = len;
	wr->wr.atomic.swap = type | level << 8;
}

static void
write_wr(struct ibv_send_wr *wr, struct ibv_sge *s, struct pair *p,
		uint32_t off, uint32_t len, uint64_t id)
{
	pair_wr(p, wr, s, IBV_WR_RDMA_WRITE, off, len, REMOTE(p, off), RKEY(p),
		id);
}

static int
wait_one(struct pair *p, int side, struct ibv_wc *wc)
{
	return pair_wait(p, side, wc, 1000000000);
}

/* What the wire carried: FLUSH requests (dir 0), empty READ responses
 * (dir 1), and what the last request said. */
static struct {
	int req, resp, bad, drop_resp;
	uint32_t req_psn;
	struct droce_pkt last;
} wire;

static int
watch(struct fakelink *l, int dir_, const uint8_t *f, uint32_t len)
{
	struct droce_pkt pkt;

	(void)l;
	if (droce_wire_parse(f, len, NULL, &pkt) != 0)
		return 0;
	if (dir_ == 0 && pkt.opcode == DROCE_OP_RC_FLUSH) {
		wire.req++;
		wire.req_psn = pkt.psn;
		wire.last = pkt;
		if (pkt.payload_len != 0 || !pkt.ackreq || pkt.padcnt != 0 ||
				len != DROCE_ETH_HLEN + DROCE_IPV4_HLEN +
				DROCE_UDP_HLEN + DROCE_BTH_LEN +
				DROCE_FETH_LEN + DROCE_RETH_LEN + DROCE_ICRC_LEN)
			wire.bad++;
	}
	if (dir_ == 1 && pkt.opcode == DROCE_OP_RC_READ_RESP_ONLY) {
		wire.resp++;
		if (pkt.payload_len != 0 || pkt.psn != wire.req_psn ||
				DROCE_AETH_TYPE(pkt.aeth_syndrome) !=
				DROCE_AETH_TYPE_ACK)
			wire.bad++;
		if (wire.drop_resp) {
			wire.drop_resp--;
			return 1;
		}
	}
	return 0;
}

/* WRITE then FLUSH (type, level) of the range written; checks the FLUSH
 * frame and completion. */
static void
write_flush(struct pair *p, uint32_t off, uint32_t len, unsigned int type,
		unsigned int level, uint64_t id)
{
	struct ibv_send_wr w[2], *bad;
	struct ibv_sge s;
	struct ibv_wc wc;

	pattern(p->b[0].p + off, len, (uint32_t)id);
	write_wr(&w[0], &s, p, off, len, id);
	flush_wr(&w[1], REMOTE(p, off), RKEY(p), len, type, level, id + 1);
	w[0].next = &w[1];
	CHECK_EQF(droce_qp_post_send(p->qp[0], &w[0], &bad), 0, "post %llu",
		(unsigned long long)id);
	CHECK_EQF(wait_one(p, 0, &wc), 0, "WRITE completion");
	CHECK_EQF(wc.wr_id, id, "WRITE first");
	CHECK_EQF(wait_one(p, 0, &wc), 0, "FLUSH completion");
	CHECK_EQF(wc.status, IBV_WC_SUCCESS, "FLUSH status");
	CHECK_EQF(wc.opcode, DROCE_WC_FLUSH, "IBV_WC_FLUSH");
	CHECK_EQF(wc.wr_id, id + 1, "FLUSH wr_id");
	CHECK_EQF(wire.last.feth_plt, type, "FETH placement type");
	CHECK_EQF(wire.last.feth_sel, level, "FETH selectivity");
	CHECK_EQF(wire.last.reth_va, REMOTE(p, off), "RETH VA");
	CHECK_EQF(wire.last.reth_rkey, RKEY(p), "RETH R_Key");
	CHECK_EQF(wire.last.reth_len, len, "RETH length");
	CHECK(pattern_ok(p->b[1].p + off, len, (uint32_t)id),
		"the bytes are there when the FLUSH completes");
}

/* Both placement types, both levels, on anonymous memory (global) and a
 * file (both): completions, wire, counters, and the file's bytes. */
static void
test_data(void)
{
	static uint8_t back[4096];
	struct droce_tp_stats st;
	struct pair p;
	unsigned int i;

	pair_make(&p, ACC_ALL | DROCE_ACCESS_FLUSH_GLOBAL, 0);
	memset(&wire, 0, sizeof(wire));
	L.filter = watch;
	for (i = 0; i < 8; i++)
		write_flush(&p, 4096 * i + 17 * i, 1000 + 301 * i,
			DROCE_FLUSH_GLOBAL, i & 1 ? DROCE_FLUSH_MR :
			DROCE_FLUSH_RANGE, 10 * i);
	CHECK_EQF(wire.req, 8, "one 0x1C request per FLUSH");
	CHECK_EQF(wire.resp, 8, "one empty READ response ONLY each");
	CHECK_EQF(wire.bad, 0, "request and response layouts");
	droce_qp_stats(p.qp[1], &st);
	CHECK_EQF(st.flushes, 8, "flushes counted");
	CHECK_EQF(droce_qp_state(p.qp[0]), IBV_QPS_RTS, "requester RTS");
	CHECK_EQF(droce_qp_state(p.qp[1]), IBV_QPS_RTS, "responder RTS");
	pair_free(&p);

	pair_make(&p, ACC_ALL | ACC_FLUSH, 1);
	memset(&wire, 0, sizeof(wire));
	L.filter = watch;
	for (i = 0; i < 8; i++) {
		uint32_t off = 8192 * i + 3 * i, len = 4096;

		write_flush(&p, off, len, i & 2 ? DROCE_FLUSH_PERSISTENT :
			DROCE_FLUSH_PERSISTENT | DROCE_FLUSH_GLOBAL,
			i & 1 ? DROCE_FLUSH_MR : DROCE_FLUSH_RANGE, 10 * i);
		CHECK_EQF(pread(mr_fd, back, len, off), len, "read the file");
		CHECK(pattern_ok(back, len, 10 * i), "flush %u: in the file",
			i);
	}
	CHECK_EQF(wire.bad, 0, "layouts");
	droce_qp_stats(p.qp[1], &st);
	CHECK_EQF(st.flushes, 8, "flushes counted");
	CHECK_EQF(st.flush_errors, 0, "no write-back failed");
	pair_free(&p);
}

/* Persistence wants a shared mapping of a file with storage behind it. */
static void
test_registration(void)
{
	struct pair p;
	struct droce_mr *mr;
	uint8_t *priv, *tmpfs, *m;
	int fd, fd2, mfd;

	pair_make(&p, ACC_ALL, 0);
	mr = droce_mr_reg(L.end[1].pd, p.b[1].p, 4096,
		(uint64_t)(uintptr_t)p.b[1].p, DROCE_ACCESS_FLUSH_PERSISTENT);
	CHECK(mr == NULL && errno == EINVAL, "persistence over malloc: EINVAL");
	mr = droce_mr_reg(L.end[1].pd, p.b[1].p, 4096,
		(uint64_t)(uintptr_t)p.b[1].p, DROCE_ACCESS_FLUSH_GLOBAL);
	CHECK(mr != NULL, "global visibility over malloc");
	droce_mr_dereg(mr);
	mr = droce_mr_reg(L.end[1].pd, NULL, SIZE_MAX, 0, IBV_ACCESS_ON_DEMAND |
		DROCE_ACCESS_FLUSH_PERSISTENT);
	CHECK(mr == NULL && errno == EINVAL, "implicit ODP persistent: EINVAL");

	priv = file_map("private", 8192, &fd, MAP_PRIVATE);
	CHECK(priv != NULL, "private mapping");
	mr = droce_mr_reg(L.end[1].pd, priv, 8192, (uint64_t)(uintptr_t)priv,
		DROCE_ACCESS_FLUSH_PERSISTENT);
	CHECK(mr == NULL && errno == EINVAL, "private file mapping: EINVAL");
	munmap(priv, 8192);
	close(fd);

	mfd = memfd_create("droce-flush", 0);
	CHECK(mfd >= 0 && ftruncate(mfd, 8192) == 0, "memfd");
	m = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	mr = droce_mr_reg(L.end[1].pd, m, 8192, (uint64_t)(uintptr_t)m,
		DROCE_ACCESS_FLUSH_PERSISTENT);
	CHECK(mr == NULL && errno == EINVAL, "memfd: EINVAL");
	munmap(m, 8192);
	close(mfd);

	fd2 = open("/dev/shm/droce-flush-test", O_RDWR | O_CREAT | O_TRUNC,
		0600);
	tmpfs = NULL;
	if (fd2 >= 0 && ftruncate(fd2, 8192) == 0) {
		tmpfs = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED,
			fd2, 0);
		mr = droce_mr_reg(L.end[1].pd, tmpfs, 8192,
			(uint64_t)(uintptr_t)tmpfs,
			DROCE_ACCESS_FLUSH_PERSISTENT);
		CHECK(mr == NULL && errno == EINVAL, "tmpfs file: EINVAL");
		munmap(tmpfs, 8192);
	}
	if (fd2 >= 0) {
		close(fd2);
		unlink("/dev/shm/droce-flush-test");
	}
	pair_free(&p);

	/* a file: the whole of it, a part, and a range running past it */
	m = file_map("shared", 3 * 4096, &fd, MAP_SHARED);
	CHECK(m != NULL, "shared mapping");
	pair_make(&p, ACC_ALL, 0);
	mr = droce_mr_reg(L.end[1].pd, m + 100, 5000, 0x10000,
		DROCE_ACCESS_FLUSH_PERSISTENT | DROCE_ACCESS_FLUSH_GLOBAL);
	CHECK(mr != NULL, "shared file mapping: %s", strerror(errno));
	droce_mr_dereg(mr);
	/* the page after the file's mapping is another mapping, or none */
	mr = droce_mr_reg(L.end[1].pd, m + 4096, 3 * 4096, 0x10000,
		DROCE_ACCESS_FLUSH_PERSISTENT);
	CHECK(mr == NULL, "a range running past the file: refused");
	/* re-registration asks the same */
	mr = droce_mr_reg(L.end[1].pd, p.b[1].p, 4096,
		(uint64_t)(uintptr_t)p.b[1].p, IBV_ACCESS_LOCAL_WRITE);
	CHECK_EQF(droce_mr_rereg(mr, DROCE_REREG_ACCESS, NULL, NULL, 0, 0, 0,
		DROCE_ACCESS_FLUSH_PERSISTENT), -EINVAL,
		"rereg to persistence over malloc");
	CHECK_EQF(droce_mr_rereg(mr, DROCE_REREG_TRANSLATION |
		DROCE_REREG_ACCESS, NULL, m, (uint64_t)(uintptr_t)m, 4096,
		(uint64_t)(uintptr_t)m, DROCE_ACCESS_FLUSH_PERSISTENT), 0,
		"rereg onto the file");
	droce_mr_dereg(mr);
	pair_free(&p);
	munmap(m, 3 * 4096);
	close(fd);
}

/* One refused at the responder: status, NAK counted, both QPs in ERR. */
static void
remote_refusal(const char *what, unsigned int acc1, unsigned int qp_acc,
		uint8_t max_dest, uint64_t roff, uint64_t len, unsigned int type,
		unsigned int level, int bad_key, enum ibv_wc_status want)
{
	struct ibv_send_wr wr, *bad;
	struct droce_tp_stats st;
	struct ibv_wc wc;
	struct pair p;

	pair_make_t(&p, IBV_QPT_RC, acc1, qp_acc, 0, max_dest);
	flush_wr(&wr, REMOTE(&p, roff), RKEY(&p) ^ (bad_key ? 0x100 : 0), len,
		type, level, 1);
	CHECK_EQF(droce_qp_post_send(p.qp[0], &wr, &bad), 0, "%s: post", what);
	CHECK_EQF(wait_one(&p, 0, &wc), 0, "%s: completion", what);
	CHECK_EQF(wc.status, want, "%s: status", what);
	CHECK_EQF(wc.opcode, DROCE_WC_FLUSH, "%s: opcode", what);
	CHECK_EQF(droce_qp_state(p.qp[0]), IBV_QPS_ERR, "%s: requester ERR",
		what);
	fl_run_idle(&L, 10000000);
	CHECK_EQF(droce_qp_state(p.qp[1]), IBV_QPS_ERR, "%s: responder ERR",
		what);
	droce_qp_stats(p.qp[1], &st);
	CHECK_EQF(want == IBV_WC_REM_INV_REQ_ERR ? st.nak_inv_tx :
		st.nak_acc_tx, 1, "%s: NAK counted", what);
	CHECK_EQF(st.flushes, 0, "%s: nothing flushed", what);
	pair_free(&p);
}

static void
test_remote_refusals(void)
{
	const unsigned int qa = ACC_ALL | ACC_FLUSH;
	const unsigned int g = DROCE_FLUSH_GLOBAL, r = DROCE_FLUSH_RANGE;

	remote_refusal("MR without flush access", ACC_ALL, qa, 16, 0, 64, g, r,
		0, IBV_WC_REM_ACCESS_ERR);
	remote_refusal("MR global only, persistence asked",
		ACC_ALL | DROCE_ACCESS_FLUSH_GLOBAL, qa, 16, 0, 64,
		DROCE_FLUSH_PERSISTENT, r, 0, IBV_WC_REM_ACCESS_ERR);
	remote_refusal("QP without flush access",
		ACC_ALL | DROCE_ACCESS_FLUSH_GLOBAL, ACC_ALL, 16, 0, 64, g, r, 0,
		IBV_WC_REM_INV_REQ_ERR);
	remote_refusal("bad rkey", ACC_ALL | DROCE_ACCESS_FLUSH_GLOBAL, qa, 16,
		0, 64, g, r, 1, IBV_WC_REM_ACCESS_ERR);
	remote_refusal("range past the MR", ACC_ALL | DROCE_ACCESS_FLUSH_GLOBAL,
		qa, 16, BUF_LEN - 32, 64, g, r, 0, IBV_WC_REM_ACCESS_ERR);
	remote_refusal("bad rkey, whole MR",
		ACC_ALL | DROCE_ACCESS_FLUSH_GLOBAL, qa, 16, 0, 64, g,
		DROCE_FLUSH_MR, 1, IBV_WC_REM_ACCESS_ERR);
	remote_refusal("no responder resources",
		ACC_ALL | DROCE_ACCESS_FLUSH_GLOBAL, qa, 0, 0, 64, g, r, 0,
		IBV_WC_REM_INV_REQ_ERR);
}

/* The whole MR: the RETH's range means nothing, even past the MR. */
static void
test_mr_level_ignores_range(void)
{
	struct ibv_send_wr wr, *bad;
	struct ibv_wc wc;
	struct pair p;

	pair_make(&p, ACC_ALL | DROCE_ACCESS_FLUSH_GLOBAL, 0);
	flush_wr(&wr, 12345, RKEY(&p), 1u << 31, DROCE_FLUSH_GLOBAL,
		DROCE_FLUSH_MR, 1);
	CHECK_EQF(droce_qp_post_send(p.qp[0], &wr, &bad), 0, "post");
	CHECK_EQF(wait_one(&p, 0, &wc), 0, "completion");
	CHECK_EQF(wc.status, IBV_WC_SUCCESS, "whole MR, any range");
	pair_free(&p);
}

/* A crafted FLUSH straight into the responder with a FETH no requester
 * sends: Invalid Request NAK, QP to ERR. */
static void
crafted(const char *what, uint8_t plt, uint8_t sel)
{
	struct pair p;
	struct droce_pkt pkt;
	struct droce_tp_stats st;
	uint8_t frame[256];
	const uint8_t *fp = frame;
	uint32_t len;

	pair_make(&p, ACC_ALL | DROCE_ACCESS_FLUSH_GLOBAL, 0);
	fl_request_pkt(&L, p.qp[1], DROCE_OP_RC_FLUSH, &pkt);
	pkt.feth_plt = plt;
	pkt.feth_sel = sel;
	pkt.reth_va = REMOTE(&p, 0);
	pkt.reth_rkey = RKEY(&p);
	pkt.reth_len = 64;
	len = (uint32_t)droce_wire_build(&pkt, frame, sizeof(frame));
	droce_tp_rx_burst(L.end[1].q, &fp, &len, 1, L.now);
	fl_run_idle(&L, 10000000);
	droce_qp_stats(p.qp[1], &st);
	CHECK_EQF(st.nak_inv_tx, 1, "%s: invalid request NAK sent", what);
	CHECK_EQF(st.flushes, 0, "%s: nothing flushed", what);
	CHECK_EQF(droce_qp_state(p.qp[1]), IBV_QPS_ERR, "%s: responder ERR",
		what);
	pair_free(&p);
}

static void
test_crafted(void)
{
	crafted("placement type 0", 0, DROCE_FLUSH_RANGE);
	crafted("placement type 4", 4, DROCE_FLUSH_RANGE);
	crafted("placement types 1|8", 9, DROCE_FLUSH_RANGE);
	crafted("selectivity 2", DROCE_FLUSH_GLOBAL, 2);
	crafted("selectivity 3", DROCE_FLUSH_GLOBAL, 3);
}

/*
 * Refused at posting, as ibv_post_send(3) says: EINVAL and *bad_wr at the
 * WR, the WRITE before it posted and nothing from it on.
 */
static void
post_refusal(const char *what, enum ibv_qp_type t, uint64_t len,
		uint64_t swap, int nsge, unsigned int flags)
{
	struct ibv_send_wr wr[2], *bad = NULL;
	struct ibv_sge s[2];
	struct pair p;
	int rc;

	pair_make_t(&p, t, ACC_ALL | DROCE_ACCESS_FLUSH_GLOBAL, ACC_ALL | ACC_FLUSH,
		0, 16);
	write_wr(&wr[0], &s[0], &p, 0, 16, 1);
	flush_wr(&wr[1], REMOTE(&p, 0), RKEY(&p), len, 0, 0, 2);
	wr[1].wr.atomic.swap = swap;
	wr[1].send_flags |= flags;
	s[1] = sge_of(&p.b[0], 0, 8);
	wr[1].sg_list = &s[1];
	wr[1].num_sge = nsge;
	wr[0].next = &wr[1];
	if (t == IBV_QPT_UD) {
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
	const uint64_t g = DROCE_FLUSH_GLOBAL;

	post_refusal("UC QP", IBV_QPT_UC, 64, g, 0, 0);
	post_refusal("UD QP", IBV_QPT_UD, 64, g, 0, 0);
	post_refusal("no placement type", IBV_QPT_RC, 64, 0, 0, 0);
	post_refusal("placement type 4", IBV_QPT_RC, 64, 4, 0, 0);
	post_refusal("selectivity 2", IBV_QPT_RC, 64, g | 2u << 8, 0, 0);
	post_refusal("bits past the level", IBV_QPT_RC, 64, g | 1u << 16, 0, 0);
	post_refusal("length past 2^31", IBV_QPT_RC, (1ull << 31) + 1, g, 0, 0);
	post_refusal("an SGE", IBV_QPT_RC, 64, g, 1, 0);
	post_refusal("inline", IBV_QPT_RC, 64, g, 0, IBV_SEND_INLINE);
}

/*
 * The answer is lost: the requester asks again, the responder answers
 * from its resource and does not flush again. Then every request
 * duplicated: one flush each.
 */
static void
test_duplicates(void)
{
	struct ibv_send_wr wr, *bad;
	struct droce_tp_stats st;
	struct ibv_wc wc;
	struct pair p;

	pair_make(&p, ACC_ALL | DROCE_ACCESS_FLUSH_GLOBAL, 0);
	memset(&wire, 0, sizeof(wire));
	wire.drop_resp = 1;
	L.filter = watch;
	flush_wr(&wr, REMOTE(&p, 256), RKEY(&p), 512, DROCE_FLUSH_GLOBAL,
		DROCE_FLUSH_RANGE, 1);
	CHECK_EQF(droce_qp_post_send(p.qp[0], &wr, &bad), 0, "post");
	CHECK_EQF(wait_one(&p, 0, &wc), 0, "completion");
	CHECK_EQF(wc.status, IBV_WC_SUCCESS, "after a lost answer");
	CHECK_EQF(wire.req, 2, "the request went twice");
	CHECK_EQF(wire.resp, 2, "answered twice");
	droce_qp_stats(p.qp[1], &st);
	CHECK_EQF(st.flushes, 1, "flushed once");
	CHECK_EQF(st.atomic_replays, 1, "answered from the resource");
	CHECK_EQF(wire.bad, 0, "layouts");
	pair_free(&p);

	pair_make(&p, ACC_ALL | DROCE_ACCESS_FLUSH_GLOBAL, 0);
	L.faults[0].dup_ppm = 1000000;
	flush_wr(&wr, REMOTE(&p, 0), RKEY(&p), 64, DROCE_FLUSH_GLOBAL,
		DROCE_FLUSH_MR, 1);
	CHECK_EQF(droce_qp_post_send(p.qp[0], &wr, &bad), 0, "post");
	CHECK_EQF(wait_one(&p, 0, &wc), 0, "completion");
	CHECK_EQF(wc.status, IBV_WC_SUCCESS, "duplicated");
	fl_run_idle(&L, 10000000);
	droce_qp_stats(p.qp[1], &st);
	CHECK_EQF(st.flushes, 1, "the duplicate was not flushed again");
	CHECK(st.atomic_replays >= 1, "duplicates answered: %llu",
		(unsigned long long)st.atomic_replays);
	pair_free(&p);
}

/*
 * WRITEs, each followed by a FLUSH of its range, to a file over a link
 * that drops, duplicates and reorders, with max_rd_atomic 2: all complete
 * in order, and the file holds every byte.
 */
static void
test_lossy(void)
{
	static uint8_t back[BUF_LEN];
	struct ibv_send_wr wr, *bad;
	struct ibv_sge s;
	struct ibv_wc wc;
	struct pair p;
	uint32_t i, n = 200, done = 0;
	int side;

	pair_make(&p, ACC_ALL | ACC_FLUSH, 1);
	for (side = 0; side < 2; side++) {
		L.faults[side].drop_ppm = 30000;
		L.faults[side].dup_ppm = 20000;
		L.faults[side].reorder_ppm = 20000;
	}
	for (i = 0; i < n; i++) {
		uint32_t off = 300 * (i / 2);

		if (i % 2 == 0) {
			pattern(p.b[0].p + off, 300, i);
			write_wr(&wr, &s, &p, off, 300, i);
		} else {
			flush_wr(&wr, REMOTE(&p, off), RKEY(&p), 300,
				i % 4 == 1 ? DROCE_FLUSH_PERSISTENT :
				DROCE_FLUSH_GLOBAL, DROCE_FLUSH_RANGE, i);
		}
		CHECK_EQF(droce_qp_post_send(p.qp[0], &wr, &bad), 0, "post %u",
			i);
		while (i + 1 - done >= 200) {
			CHECK_EQF(wait_one(&p, 0, &wc), 0, "completion");
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
		CHECK_EQF(wc.opcode, done % 2 ? DROCE_WC_FLUSH :
			IBV_WC_RDMA_WRITE, "opcode of %u", done);
		done++;
	}
	CHECK_EQF(pread(mr_fd, back, 300 * n / 2, 0), 300 * n / 2, "read back");
	for (i = 0; i < n; i += 2)
		CHECK(pattern_ok(back + 300 * (i / 2), 300, i), "write %u", i);
	CHECK(L.cnt[0].dropped + L.cnt[1].dropped > 0, "the link lost frames");
	pair_free(&p);
}

int
main(void)
{
	snprintf(dir, sizeof(dir), "/var/tmp/droce-flush-XXXXXX");
	if (mkdtemp(dir) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	test_data();
	test_registration();
	test_remote_refusals();
	test_mr_level_ignores_range();
	test_crafted();
	test_post_refusals();
	test_duplicates();
	test_lossy();
	fl_fini(&L);
	{
		char path[128];

		snprintf(path, sizeof(path), "%s/mr", dir);
		unlink(path);
		snprintf(path, sizeof(path), "%s/private", dir);
		unlink(path);
		snprintf(path, sizeof(path), "%s/shared", dir);
		unlink(path);
		rmdir(dir);
	}
	return check_report("transport_flush");
}
