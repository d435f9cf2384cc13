/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * test_daemon_hostile CASE SOCK_A SOCK_B RUN_DIR: one attack on droced A by an
 * application on the channel itself, with a pair of bystanders (one
 * session on each daemon) moving data before and after it, every byte
 * checked, and a new pair served afterwards. daemon-pair.sh then checks
 * that both daemons lived to the end and stopped cleanly. Each case is a
 * hole that once let one application crash, stall or reach past droced
 * (doc/daemon.md, "Security model"); test/daemon/meson.build runs each.
 *
 * Here the bystanders, the choice of case and the requests the cases
 * share; the cases, by kind of hostility:
 *  - test_daemon_hostile_mem.c: memory handed to droced;
 *  - test_daemon_hostile_qp1.c: QP1 and the CM's messages;
 *  - test_daemon_hostile_shared.c: the rings and event descriptors it
 *    shares with the application;
 *  - test_daemon_hostile_misuse.c: requests an application may not make;
 *  - test_daemon_hostile_session.c: the socket, its sessions and their
 *    number.
 */

#include <stdio.h>
#include <string.h>

#include "daemon_hostile.h"

const char *path_a, *path_b;

/* REG_MR of one piece of fd (a new segment) at addr: 0 or -errno. */
int
reg_fd(struct cs *s, uint32_t pd, int fd, uint64_t seg_off, uint64_t addr,
		uint64_t len, struct cs_buf *b)
{
	struct droce_chan_reg_mr_req r = { 0 };
	struct droce_chan_reg_mr_rep p;
	uint64_t first = addr & ~4095ull;
	int rc;

	r.pd = pd;
	r.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		IBV_ACCESS_REMOTE_READ;
	r.addr = addr;
	r.len = len;
	r.iova = addr;
	r.npieces = 1;
	r.pieces[0].seg = s->next_seg++;
	r.pieces[0].flags = DROCE_PIECE_NEW;
	r.pieces[0].seg_off = seg_off;
	r.pieces[0].len = ((addr + len + 4095) & ~4095ull) - first;
	rc = cs_rpc(s, DROCE_OP_REG_MR, &r, &p, &fd, 1, NULL, NULL);
	if (rc == 0 && b != NULL) {
		b->addr = (uint8_t *)(uintptr_t)addr;
		b->len = len;
		b->mr = p.handle;
		b->lkey = p.lkey;
		b->rkey = p.rkey;
	}
	return rc;
}

int
dereg(struct cs *s, uint32_t mr, uint32_t release_seg)
{
	struct droce_chan_dereg_mr_req r = { .handle = mr, .nrelease = 1 };

	r.release[0] = release_seg;
	return cs_rpc(s, DROCE_OP_DEREG_MR, &r, NULL, NULL, 0, NULL, NULL);
}

/* A WRITE of len bytes from x's buffer to (raddr, rkey), signaled. */
void
post_write(struct cs_side *x, uint64_t raddr, uint32_t rkey, uint32_t len,
		uint64_t id)
{
	struct droce_chan_swqe w = { 0 };
	struct ibv_sge sge = { (uint64_t)(uintptr_t)x->b.addr, len, x->b.lkey };

	w.wr_id = id;
	w.opcode = IBV_WR_RDMA_WRITE;
	w.send_flags = IBV_SEND_SIGNALED;
	w.num_sge = 1;
	w.remote_addr = raddr;
	w.rkey = rkey;
	cs_post_send(&x->s, &x->qp, &w, &sge);
}

int
main(int argc, char **argv)
{
	struct cs_side x, y, u, v;
	const char *c;

	if (argc != 5) {
		fprintf(stderr, "usage: %s CASE SOCK_A SOCK_B RUN_DIR\n", argv[0]);
		return 2;
	}
	c = argv[1];
	path_a = argv[2];
	path_b = argv[3];
	/* the bystanders: a pair across the two daemons */
	cs_side_open(&x, path_a);
	cs_side_open(&y, path_b);
	cs_pair(&x, &y);
	cs_traffic(&x, &y, 1);
	if (strcmp(c, "huge_overrun") == 0)
		huge_overrun(argv[4]);
	else if (strcmp(c, "fake_sysv") == 0)
		fake_sysv();
	else if (strcmp(c, "sysv_truncated") == 0)
		sysv_truncated();
	else if (strcmp(c, "dereg_in_flight") == 0)
		dereg_in_flight();
	else if (strcmp(c, "gsi_cq") == 0)
		gsi_cq();
	else if (strcmp(c, "cm_forge") == 0)
		cm_forge();
	else if (strcmp(c, "ring_scribble") == 0)
		ring_scribble();
	else if (strcmp(c, "event_fds") == 0)
		event_fds();
	else if (strcmp(c, "misc_abuse") == 0)
		misc_abuse(&y);
	else if (strcmp(c, "sr_abuse") == 0)
		sr_abuse();
	else if (strcmp(c, "unread_replies") == 0)
		unread_replies();
	else if (strcmp(c, "hello_nameless") == 0)
		hello_nameless();
	else if (strcmp(c, "session_flood") == 0)
		session_flood(argv[4]);
	else {
		fprintf(stderr, "%s: no such case\n", c);
		return 2;
	}
	/* they are unharmed, and a new pair is served */
	cs_traffic(&x, &y, 2);
	cs_side_open(&u, path_a);
	cs_side_open(&v, path_b);
	cs_pair(&u, &v);
	cs_traffic(&u, &v, 3);
	printf("PASS\n");
	return 0;
}
