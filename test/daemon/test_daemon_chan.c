/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * test_daemon_chan SOCK_A SOCK_B: applications on the channel itself,
 * against two droced joined by a link.
 *  1. a pair of sessions (one per daemon) moves data both ways: WRITE,
 *     SEND/RECV, READ, every byte checked;
 *  2. isolation: another session's handles (XRC domains too), lkey and
 *     CQ are refused;
 *  3. ATOMIC WRITE through the rings (inline and from an SGE), and one of
 *     16 bytes refused;
 *  3b. a malformed WQE between good ones: all complete, in order; a
 *     request waiting for a neighbour holds up no other session;
 *  4. a hostile session scribbles its doorbells, rings, WQEs and indexes
 *     and sends malformed messages; the daemon survives, the hostile
 *     QP goes to the error state, and the pair of step 1 still moves
 *     data, checked again.
 */

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "chan_session.h"

#define CHECK CS_CHECK

/* Another session's objects: its handles name nothing here, its lkey
 * is refused by the transport (another PD), its memory untouched. */
/* An XRC domain of x's (same daemon) is nothing of a's: closing it, an
 * XRC SRQ or an XRC_RECV QP in it are refused, and it stays x's. And
 * x's XRC_RECV QP, which has no rings, rung and reset. */
static void
xrc_domain_isolation(struct cs_side *a, struct cs_side *x)
{
	struct droce_chan_handle h;
	struct droce_chan_create_srq_req sr = { .pd = a->pd, .max_wr = 4,
		.max_sge = 1, .cq = a->cq.handle };
	struct droce_chan_create_srq_rep sp;
	struct droce_chan_create_qp_req qr = { .pd = DROCE_CHAN_NONE,
		.qp_type = IBV_QPT_XRC_RECV, .send_cq = DROCE_CHAN_NONE,
		.recv_cq = DROCE_CHAN_NONE, .srq = DROCE_CHAN_NONE };
	struct droce_chan_create_qp_rep qp;
	struct droce_chan_modify_qp_req m = { 0 };
	struct droce_chan_handle h2;
	struct droce_chan_region *r;
	struct droce_chan_db *db;
	uint64_t one = 1;
	int rc;

	rc = cs_rpc(&x->s, DROCE_OP_OPEN_XRCD, NULL, &h, NULL, 0, NULL, NULL);
	CHECK(rc == 0, "x opens an XRC domain: %d", rc);
	sr.xrcd = qr.xrcd = h.handle;
	rc = cs_rpc(&a->s, DROCE_OP_CREATE_SRQ, &sr, &sp, NULL, 0, NULL, NULL);
	CHECK(rc == -EINVAL, "an XRC SRQ in x's domain: %d", rc);
	rc = cs_rpc(&a->s, DROCE_OP_CREATE_QP, &qr, &qp, NULL, 0, NULL, NULL);
	CHECK(rc == -EINVAL, "an XRC_RECV QP in x's domain: %d", rc);
	rc = cs_rpc(&a->s, DROCE_OP_CLOSE_XRCD, &h, NULL, NULL, 0, NULL, NULL);
	CHECK(rc == -EINVAL, "closing x's XRC domain: %d", rc);
	/* x's own XRC_RECV QP has no rings: doorbells naming them and a
	 * RESET are nothing to the daemon (it answers after them) */
	rc = cs_rpc(&x->s, DROCE_OP_CREATE_QP, &qr, &qp, NULL, 0, NULL, NULL);
	CHECK(rc == 0, "x's XRC_RECV QP: %d", rc);
	r = (void *)x->s.region;
	db = (void *)(x->s.region + r->db_off[0]);
	db->ring[db->prod & (DROCE_CHAN_DB_SIZE - 1)] =
		DROCE_DB(DROCE_KIND_SQ, qp.handle);
	db->ring[(db->prod + 1) & (DROCE_CHAN_DB_SIZE - 1)] =
		DROCE_DB(DROCE_KIND_RQ, qp.handle);
	__atomic_store_n(&db->prod, db->prod + 2, __ATOMIC_RELEASE);
	if (x->s.wake_fd >= 0 && write(x->s.wake_fd, &one, sizeof(one)) < 0)
		perror("wake");
	usleep(100000);
	m.handle = qp.handle;
	m.mask = IBV_QP_STATE;
	m.attr.qp_state = IBV_QPS_RESET;
	rc = cs_rpc(&x->s, DROCE_OP_MODIFY_QP, &m, NULL, NULL, 0, NULL, NULL);
	CHECK(rc == 0, "x's XRC_RECV QP to RESET: %d", rc);
	h2.handle = qp.handle;
	rc = cs_rpc(&x->s, DROCE_OP_DESTROY_QP, &h2, NULL, NULL, 0, NULL, NULL);
	CHECK(rc == 0, "x's XRC_RECV QP destroyed: %d", rc);
	rc = cs_rpc(&x->s, DROCE_OP_CLOSE_XRCD, &h, NULL, NULL, 0, NULL, NULL);
	CHECK(rc == 0, "x closes its XRC domain: %d", rc);
}

static void
isolation(struct cs_side *a, struct cs_side *b, const char *path_a, const char *path_b)
{
	struct cs_side x, y;
	struct droce_chan_query_qp_req q = { .handle = a->qp.handle + 1000 };
	struct droce_chan_query_qp_rep qr;
	struct droce_chan_handle h = { .handle = a->cq.handle + 100 };
	struct droce_chan_swqe w = { 0 };
	struct ibv_sge sge;
	int rc;

	cs_side_open(&x, path_a);
	cs_side_open(&y, path_b);
	cs_pair(&x, &y);
	/* handles are per application: a number that is a's is nothing of x's */
	q.handle = x.qp.handle + 1;
	rc = cs_rpc(&x.s, DROCE_OP_QUERY_QP, &q, &qr, NULL, 0, NULL, NULL);
	CHECK(rc == -EINVAL, "query of a QP x does not have: %d", rc);
	rc = cs_rpc(&x.s, DROCE_OP_DESTROY_CQ, &h, NULL, NULL, 0, NULL, NULL);
	CHECK(rc == -EINVAL, "destroy of a CQ x does not have: %d", rc);
	xrc_domain_isolation(a, &x);
	/* a's lkey and address on x's QP: a local protection error, and
	 * nothing of a's leaves */
	cs_fill(a->b.addr, 4096, 99);
	memset(y.b.addr, 0xee, 4096);
	sge = (struct ibv_sge){ (uint64_t)(uintptr_t)a->b.addr, 4096, a->b.lkey };
	w.opcode = IBV_WR_RDMA_WRITE;
	w.send_flags = IBV_SEND_SIGNALED;
	w.num_sge = 1;
	w.remote_addr = (uint64_t)(uintptr_t)y.b.addr;
	w.rkey = y.b.rkey;
	cs_post_send(&x.s, &x.qp, &w, &sge);
	cs_expect_wc(&x.cq, IBV_WC_LOC_PROT_ERR, "write with another's lkey");
	CHECK(y.b.addr[0] == 0xee && y.b.addr[4095] == 0xee,
		"another's memory went out");
	/* and remotely: y's rkey is not b's */
	cs_fill(b->b.addr, 4096, 5);
	memset(x.b.addr, 0, 4096);
	cs_close(&x.s);
	cs_close(&y.s);
	(void)b;
	printf("isolation: ok\n");
}

/*
 * HELLO binds a session to one port, once: a second HELLO (to move to
 * another port's objects) and a HELLO to a port the daemon does not have
 * are refused, and the session keeps working on its own port.
 */
static void
hello_abuse(const char *path)
{
	struct droce_chan_hello_req r = { .version = DROCE_CHAN_VERSION };
	struct droce_chan_hello_rep rep;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct cs s, t;
	uint32_t pd;
	int rc;

	CHECK(cs_open(&s, path) == 0, "open");
	r.port = 0;
	rc = cs_rpc(&s, DROCE_OP_HELLO, &r, &rep, NULL, 0, NULL, NULL);
	CHECK(rc == -EPROTO, "a second HELLO: %d, want -EPROTO", rc);
	CHECK(cs_pd(&s, &pd) == 0, "the session after a second HELLO");
	cs_close(&s);
	/* a fresh session naming port 200 of a one-port daemon */
	memset(&t, 0, sizeof(t));
	t.async_fd = t.wake_fd = -1;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	t.sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	CHECK(t.sock >= 0 && connect(t.sock, (struct sockaddr *)&sa,
		sizeof(sa)) == 0, "connect");
	r.port = 200;
	rc = cs_rpc(&t, DROCE_OP_HELLO, &r, &rep, NULL, 0, NULL, NULL);
	CHECK(rc == -ENODEV, "HELLO to port 200: %d, want -ENODEV", rc);
	rc = cs_rpc(&t, DROCE_OP_ALLOC_PD, NULL, &rep, NULL, 0, NULL, NULL);
	CHECK(rc == -EPROTO, "a request without a HELLO that took: %d", rc);
	close(t.sock);
	printf("hello abuse: ok\n");
}

/*
 * A session whose request waits for a neighbour that never answers (a
 * RESOLVE of a silent address, 5 s) holds up no other: another session's
 * request is answered while the first still waits, and the first is
 * answered (EHOSTUNREACH or ETIMEDOUT) once its time is up.
 */
static void
neighbour_aside(const char *path)
{
	struct droce_chan_resolve_req r = { .timeout_ms = 5000 };
	struct droce_chan_hdr h = { .op = DROCE_OP_RESOLVE, .seq = 77 };
	union {
		uint8_t buf[DROCE_CHAN_MSG_MAX];
		struct droce_chan_hdr h;
	} in;
	struct pollfd pf;
	struct cs a, b;
	uint32_t pd;
	int fds[DROCE_CHAN_MAX_FDS], nfds = 0, rc;

	CHECK(cs_open(&a, path) == 0 && cs_open(&b, path) == 0,
		"two sessions");
	r.gid[10] = r.gid[11] = 0xff;
	r.gid[12] = 10;
	r.gid[13] = 9;
	r.gid[14] = 0;
	r.gid[15] = 77;		/* nobody */
	CHECK(droce_chan_send(a.sock, &h, &r, sizeof(r), NULL, 0) == 0,
		"RESOLVE sent");
	usleep(200000);		/* the daemon has it */
	rc = cs_pd(&b, &pd);
	CHECK(rc == 0, "the other session's ALLOC_PD: %s", strerror(-rc));
	pf = (struct pollfd){ .fd = a.sock, .events = POLLIN };
	CHECK(poll(&pf, 1, 0) == 0,
		"the other session was answered while the RESOLVE still waits");
	pf.revents = 0;
	CHECK(poll(&pf, 1, 30000) == 1, "the RESOLVE is answered in the end");
	rc = droce_chan_recv(a.sock, in.buf, sizeof(in.buf), 1, fds, &nfds);
	CHECK(rc >= 0 && in.h.seq == 77 && (in.h.status == EHOSTUNREACH ||
		in.h.status == ETIMEDOUT), "RESOLVE: status %u", in.h.status);
	rc = cs_pd(&a, &pd);
	CHECK(rc == 0, "its session serves again: %s", strerror(-rc));
	cs_close(&a);
	cs_close(&b);
	printf("a neighbour's wait aside: ok\n");
}

/* An ATOMIC WRITE WQE with len bytes of inline data after its header. */
static void
post_awr_inline(struct cs_side *x, const void *data, uint32_t len, uint64_t raddr,
		uint32_t rkey, uint64_t id)
{
	struct droce_chan_swqe w = { 0 };
	uint8_t *slot = x->qp.sq.slots + (x->qp.sq.prod & (x->qp.sq.size - 1)) *
		x->qp.sq.slot;

	w.wr_id = id;
	w.opcode = IBV_WR_ATOMIC_WRITE;
	w.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
	w.inline_len = len;
	w.remote_addr = raddr;
	w.rkey = rkey;
	memcpy(slot + sizeof(w), data, len);
	cs_post_send(&x->s, &x->qp, &w, NULL);
}

/*
 * IBTA 1.5 ATOMIC WRITE through the rings: the 8 bytes inline (as
 * ibv_wr_atomic_write sends them) and from an SGE land in the peer's
 * buffer, nothing around them moves; a session that sends 16 bytes is
 * refused (the transport's EINVAL): that QP errors, the pair is unharmed.
 */
static void
atomic_write_chan(const char *path, struct cs_side *a, struct cs_side *b)
{
	static const uint8_t word[16] = { 0x11, 0x22, 0x33, 0x44, 0x55, 0x66,
		0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xf0, 0x0f };
	struct droce_chan_swqe w = { 0 };
	struct ibv_sge sge;
	struct ibv_wc wc;
	uint8_t *t = b->b.addr + 4096, want[64];
	struct cs_side h;
	int rc;

	memset(t, 0xc3, 64);
	memcpy(want, t, 64);
	post_awr_inline(a, word, 8, (uint64_t)(uintptr_t)t + 8, b->b.rkey, 1);
	cs_expect_wc(&a->cq, IBV_WC_SUCCESS, "atomic write, inline");
	memcpy(want + 8, word, 8);
	memcpy(a->b.addr, word + 8, 8);
	sge = (struct ibv_sge){ (uint64_t)(uintptr_t)a->b.addr, 8, a->b.lkey };
	w.wr_id = 2;
	w.opcode = IBV_WR_ATOMIC_WRITE;
	w.send_flags = IBV_SEND_SIGNALED;
	w.num_sge = 1;
	w.remote_addr = (uint64_t)(uintptr_t)t + 32;
	w.rkey = b->b.rkey;
	cs_post_send(&a->s, &a->qp, &w, &sge);
	cs_expect_wc(&a->cq, IBV_WC_SUCCESS, "atomic write, SGE");
	memcpy(want + 32, word + 8, 8);
	CHECK(memcmp(t, want, 64) == 0, "atomic write: the words or around them");

	cs_side_open(&h, path);
	rc = cs_connect(&h.s, &h.qp, b->s.hello.gids[1].gid, 0xabcf);
	CHECK(rc == 0, "connect the QP: %s", strerror(-rc));
	post_awr_inline(&h, word, 16, (uint64_t)(uintptr_t)t, b->b.rkey, 3);
	CHECK(cs_poll(&h.cq, &wc, 20000) == 1, "16-byte atomic write: no completion");
	CHECK(wc.wr_id == 3 && wc.status == IBV_WC_LOC_QP_OP_ERR,
		"16-byte atomic write: wr_id %lu status %d",
		(unsigned long)wc.wr_id, wc.status);
	CHECK(h.qp.sq.sh->error == 1, "the 16-byte atomic write's QP is not in error");
	cs_close(&h.s);
	CHECK(memcmp(t, want, 64) == 0, "a refused atomic write changed memory");
	printf("atomic write: ok\n");
}

/* A malformed WQE between two good ones: every one completes, in order,
 * as a QP in the error state completes them: the first flushed, the
 * refused one with its error, the next flushed. */
static void
refused_in_order(const char *path, struct cs_side *a)
{
	struct droce_chan_swqe w = { 0 };
	struct ibv_wc wc;
	struct cs_side h;
	uint64_t i;

	cs_side_open(&h, path);
	/* to a QP nobody has: the first SEND waits for its ACK */
	CHECK(cs_connect(&h.s, &h.qp, a->s.hello.gids[1].gid, 0xabce) == 0,
		"connect the QP");
	w.opcode = IBV_WR_SEND;
	w.send_flags = IBV_SEND_SIGNALED;
	w.wr_id = 101;
	cs_post_send(&h.s, &h.qp, &w, NULL);
	w.wr_id = 102;
	w.num_sge = 1000;	/* past max_send_sge and the slot */
	cs_post_send(&h.s, &h.qp, &w, NULL);
	w.wr_id = 103;
	w.num_sge = 0;
	w.send_flags = 0;	/* unsignaled: flushed all the same */
	cs_post_send(&h.s, &h.qp, &w, NULL);
	for (i = 0; i < 3; i++) {
		CHECK(cs_poll(&h.cq, &wc, 20000) == 1,
			"WQE %lu of 3: no completion", (unsigned long)i + 1);
		CHECK(wc.wr_id == 101 + i, "completion %lu: wr_id %lu",
			(unsigned long)i + 1, (unsigned long)wc.wr_id);
		CHECK(wc.status == (i == 1 ? IBV_WC_LOC_QP_OP_ERR :
			IBV_WC_WR_FLUSH_ERR), "wr_id %lu: status %d",
			(unsigned long)wc.wr_id, wc.status);
	}
	CHECK(h.qp.sq.sh->error == 1, "the refused WQE's QP is not in error");
	/* and receives: a malformed one, then a good one: both flushed */
	{
		uint8_t *slot = h.qp.rq.slots + (h.qp.rq.prod &
			(h.qp.rq.size - 1)) * h.qp.rq.slot;
		struct droce_chan_rwqe rw = { .wr_id = 201, .num_sge = 1000 };
		struct ibv_sge sge = { (uint64_t)(uintptr_t)h.b.addr, 64, h.b.lkey };

		memcpy(slot, &rw, sizeof(rw));
		h.qp.rq.prod++;
		cs_post_recv(&h.s, &h.qp, 202, &sge);
		for (i = 0; i < 2; i++) {
			CHECK(cs_poll(&h.cq, &wc, 20000) == 1,
				"receive %lu of 2: no completion", (unsigned long)i + 1);
			CHECK(wc.wr_id == 201 + i && wc.status == IBV_WC_WR_FLUSH_ERR,
				"receive completion %lu: wr_id %lu status %d",
				(unsigned long)i + 1, (unsigned long)wc.wr_id, wc.status);
		}
	}
	cs_close(&h.s);
	printf("refused WQE: completed in order: ok\n");
}

static void
scribble(const char *path, struct cs_side *a)
{
	struct cs_side h;
	struct droce_chan_region *r;
	struct droce_chan_db *db;
	struct droce_chan_hdr hdr = { .op = DROCE_OP_CREATE_QP, .seq = 1 };
	uint8_t junk[64];
	uint32_t i;
	int fd;

	cs_side_open(&h, path);
	/* connected (to a QP nobody has), so that its WQEs are executed */
	CHECK(cs_connect(&h.s, &h.qp, a->s.hello.gids[1].gid, 0xabcd) == 0,
		"connect the hostile QP");
	r = (void *)h.s.region;
	db = (void *)(h.s.region + r->db_off[0]);
	srandom(42);
	/* garbage WQEs, rung */
	for (i = 0; i < 200; i++) {
		uint8_t *slot = h.qp.sq.slots + (h.qp.sq.prod & (h.qp.sq.size - 1)) *
			h.qp.sq.slot;
		uint32_t k;

		for (k = 0; k < h.qp.sq.slot; k++)
			slot[k] = (uint8_t)random();
		h.qp.sq.prod++;
	}
	h.qp.sq.sh->prod = h.qp.sq.prod;
	h.qp.sq.sh->rung = 1;
	db->ring[db->prod & (DROCE_CHAN_DB_SIZE - 1)] = DROCE_DB(DROCE_KIND_SQ, h.qp.handle);
	__atomic_store_n(&db->prod, db->prod + 1, __ATOMIC_RELEASE);
	/* doorbells naming nothing, and kinds that do not exist */
	for (i = 0; i < 1000; i++)
		db->ring[(db->prod + i) & (DROCE_CHAN_DB_SIZE - 1)] = (uint32_t)random();
	__atomic_store_n(&db->prod, db->prod + 1000, __ATOMIC_RELEASE);
	for (i = 0; i < 200 && !__atomic_load_n(&h.qp.sq.sh->error, __ATOMIC_ACQUIRE); i++)
		usleep(10000);
	CHECK(h.qp.sq.sh->error == 1, "the garbage WQEs' QP is not in error");
	/* indexes out of range: the RQ's prod far ahead, the doorbell's too */
	h.qp.rq.sh->prod = 0x80000000u;
	h.qp.rq.sh->rung = 0;
	db->ring[db->prod & (DROCE_CHAN_DB_SIZE - 1)] = DROCE_DB(DROCE_KIND_RQ, h.qp.handle);
	__atomic_store_n(&db->prod, db->prod + 0x40000000u, __ATOMIC_RELEASE);
	h.cq.sh->cons = 0xdeadbeef;
	usleep(100000);
	/* malformed messages: a short body, an unknown op, a REG_MR whose
	 * descriptor is a pipe, whose piece lies beyond its segment */
	CHECK(send(h.s.sock, &hdr, sizeof(hdr), 0) == sizeof(hdr), "send");
	usleep(100000);
	cs_close(&h.s);

	cs_side_open(&h, path);
	{
		struct droce_chan_reg_mr_req m = { 0 };
		int p[2];

		CHECK(pipe(p) == 0, "pipe");
		m.pd = h.pd;
		m.addr = 0x10000;
		m.len = 4096;
		m.npieces = 1;
		m.pieces[0].seg = 77;
		m.pieces[0].flags = DROCE_PIECE_NEW;
		m.pieces[0].len = 4096;
		CHECK(cs_rpc(&h.s, DROCE_OP_REG_MR, &m, NULL, &p[0], 1, NULL, NULL) ==
			-EINVAL, "a pipe as memory");
		close(p[0]);
		close(p[1]);
		fd = memfd_create("small", MFD_ALLOW_SEALING);
		CHECK(fd >= 0 && ftruncate(fd, 4096) == 0, "memfd");
		m.pieces[0].seg = 78;
		m.pieces[0].seg_off = 8192;
		CHECK(cs_rpc(&h.s, DROCE_OP_REG_MR, &m, NULL, &fd, 1, NULL, NULL) ==
			-EINVAL, "a piece beyond its segment");
		m.pieces[0].seg = 79;
		m.pieces[0].seg_off = 0;
		m.pieces[0].len = 1u << 30;
		m.len = 1u << 30;
		CHECK(cs_rpc(&h.s, DROCE_OP_REG_MR, &m, NULL, &fd, 1, NULL, NULL) ==
			-EINVAL, "a piece longer than its segment");
		close(fd);
	}
	for (i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)random();
	hdr.op = 999;
	hdr.len = sizeof(junk);
	{
		struct iovec iov[2] = { { &hdr, sizeof(hdr) }, { junk, sizeof(junk) } };
		struct msghdr msg = { .msg_iov = iov, .msg_iovlen = 2 };

		CHECK(sendmsg(h.s.sock, &msg, 0) > 0, "sendmsg");
	}
	usleep(100000);
	cs_close(&h.s);
	printf("hostile: done\n");
}

int
main(int argc, char **argv)
{
	struct cs_side a, b;
	int rc;

	if (argc != 3) {
		fprintf(stderr, "usage: %s SOCK_A SOCK_B\n", argv[0]);
		return 2;
	}
	cs_side_open(&a, argv[1]);
	cs_side_open(&b, argv[2]);
	cs_pair(&a, &b);
	cs_traffic(&a, &b, 1);
	printf("traffic: ok\n");
	isolation(&a, &b, argv[1], argv[2]);
	cs_traffic(&a, &b, 2);
	atomic_write_chan(argv[1], &a, &b);
	refused_in_order(argv[1], &b);
	neighbour_aside(argv[1]);
	hello_abuse(argv[1]);
	scribble(argv[1], &b);
	/* the daemon is alive and the pair unharmed */
	{
		struct cs t;

		rc = cs_open(&t, argv[1]);
		CHECK(rc == 0, "the daemon after the hostile session: %s", strerror(-rc));
		cs_close(&t);
	}
	cs_traffic(&a, &b, 3);
	printf("traffic after hostile: ok\n");
	cs_close(&a.s);
	cs_close(&b.s);
	printf("PASS\n");
	return 0;
}
