/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * test_daemon_hostile's cases on requests an application may not make:
 * SET_SR on what is not its own unconnected RC QP, and an ordinary buggy
 * or nosy application's tries.
 */

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include "daemon_hostile.h"

static int
set_sr(struct cs *s, uint32_t handle, uint32_t on)
{
	struct droce_chan_set_sr_req r = { .handle = handle, .on = on };

	return cs_rpc(s, DROCE_OP_SET_SR, &r, NULL, NULL, 0, NULL, NULL);
}

/*
 * SET_SR (both daemons' ports in DROCE_SELECTIVE_REPEAT=cm): selective
 * repeat changes what a responder acknowledges, so the daemon takes it
 * for the application's own RC QPs only, and only before they connect;
 * a QP pair that both set it then moves checked data.
 */
void
sr_abuse(void)
{
	struct cs_side v, w;
	struct cs_cq gcq;
	struct cs_qp g, ud;

	cs_side_open(&v, path_a);
	cs_side_open(&w, path_b);
	CHECK(v.s.hello.sr_mode == 2, "HELLO says mode %u (not cm)",
		v.s.hello.sr_mode);
	CHECK(cs_cq(&v.s, 16, &gcq) == 0, "cq");
	CHECK(gsi_proxy(&v.s, v.pd, gcq.handle, gcq.handle, &g) == 0, "proxy");
	CHECK(cs_qp(&v.s, v.pd, IBV_QPT_UD, &gcq, &ud) == 0, "UD QP");
	CHECK(set_sr(&v.s, 0x0fffffff, 1) == -EINVAL, "no such QP");
	CHECK(set_sr(&v.s, g.handle, 1) == -EINVAL, "a GSI proxy");
	CHECK(set_sr(&v.s, ud.handle, 1) == -EINVAL, "a UD QP");
	CHECK(set_sr(&v.s, v.qp.handle, 2) == -EINVAL, "on = 2");
	CHECK(set_sr(&v.s, v.qp.handle, UINT32_MAX) == -EINVAL, "on = ~0");
	CHECK(set_sr(&v.s, v.qp.handle, 1) == 0, "an RC QP in RESET");
	CHECK(set_sr(&w.s, w.qp.handle, 1) == 0, "its peer");
	cs_pair(&v, &w);
	CHECK(set_sr(&v.s, v.qp.handle, 0) == -EINVAL, "a connected QP");
	cs_traffic(&v, &w, 21);
	cs_close(&v.s);
	cs_close(&w.s);
	printf("SET_SR refused but for its own RC QPs before they connect; "
		"a pair with it moved checked data\n");
}

/*
 * What an ordinary buggy or nosy application may also try, each refused
 * and each harming nobody else: shrinking a memfd it registered (sealed:
 * EPERM; growing it is harmless, and the MR still takes a WRITE), a WRITE
 * with another application's rkey (y's, the bystander on B: a remote
 * access error, y's memory untouched), an inline length past its QP's
 * and its slot (its QP errors), and a request whose sender closes its
 * socket before the reply.
 */
void
misc_abuse(struct cs_side *y)
{
	struct droce_chan_create_cq_req cr = { .cqe = 16,
		.channel = DROCE_CHAN_NONE };
	struct droce_chan_hdr hdr = { .op = DROCE_OP_CREATE_CQ, .seq = 9 };
	struct droce_chan_swqe w = { 0 };
	struct cs_side h, p, z, q;
	struct ibv_wc wc;
	struct cs_buf b;
	struct cs t;
	uint8_t *m, before[4096];
	int fd;

	/* a registered memfd shrunk and grown */
	cs_side_open(&h, path_a);
	cs_side_open(&p, path_b);
	cs_pair(&h, &p);
	fd = memfd_create("misc", MFD_ALLOW_SEALING);
	CHECK(fd >= 0 && ftruncate(fd, 1 << 20) == 0, "memfd");
	m = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(m != MAP_FAILED, "map");
	CHECK(reg_fd(&h.s, h.pd, fd, 0, (uint64_t)(uintptr_t)m, 1 << 20, &b) == 0,
		"register");
	CHECK(ftruncate(fd, 4096) != 0 && errno == EPERM, "a registered memfd "
		"shrank (%s)", strerror(errno));
	CHECK(ftruncate(fd, 2 << 20) == 0, "growing it");
	cs_fill(p.b.addr, 65536, 11);
	post_write(&p, (uint64_t)(uintptr_t)m + 4096, b.rkey, 65536, 1);
	cs_expect_wc(&p.cq, IBV_WC_SUCCESS, "a WRITE into the grown MR");
	CHECK(memcmp(m + 4096, p.b.addr, 65536) == 0, "it landed");
	/* another application's rkey: y's buffer, from z's QP to q on B */
	cs_side_open(&z, path_a);
	cs_side_open(&q, path_b);
	cs_pair(&z, &q);
	memcpy(before, y->b.addr, sizeof(before));
	cs_fill(z.b.addr, 4096, 12);
	post_write(&z, (uint64_t)(uintptr_t)y->b.addr, y->b.rkey, 4096, 2);
	cs_expect_wc(&z.cq, IBV_WC_REM_ACCESS_ERR, "a WRITE with another's rkey");
	CHECK(memcmp(before, y->b.addr, sizeof(before)) == 0,
		"another's rkey reached its memory");
	/* an inline length past the QP's and the slot's */
	w.wr_id = 3;
	w.opcode = IBV_WR_SEND;
	w.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
	w.inline_len = 100000;
	cs_post_send(&h.s, &h.qp, &w, NULL);
	CHECK(cs_poll(&h.cq, &wc, 20000) == 1 && wc.wr_id == 3 &&
		wc.status == IBV_WC_LOC_QP_OP_ERR, "an inline length of 100000: "
		"wr_id %lu status %d", (unsigned long)wc.wr_id, wc.status);
	CHECK(h.qp.sq.sh->error == 1, "its QP is not in error");
	/* selective repeat on a port that does not offer it */
	CHECK(set_sr(&z.s, z.qp.handle, 1) == -EPERM, "SET_SR on a port in "
		"DROCE_SELECTIVE_REPEAT=0");
	/* a request, and the socket closed before its reply */
	CHECK(cs_open(&t, path_a) == 0, "a session");
	CHECK(droce_chan_send(t.sock, &hdr, &cr, sizeof(cr), NULL, 0) == 0,
		"CREATE_CQ sent");
	cs_close(&t);
	usleep(200000);
	cs_close(&h.s);
	cs_close(&p.s);
	cs_close(&z.s);
	cs_close(&q.s);
	munmap(m, 1 << 20);
	close(fd);
	printf("a registered memfd shrunk, another's rkey, a huge inline "
		"length, a socket closed mid-request: refused\n");
}
