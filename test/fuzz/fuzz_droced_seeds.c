/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * fuzz_droced_seeds DIR: the seed corpus of fuzz_droced, written with the
 * channel's own structs (so that it follows their layout): sessions a
 * well-behaved application would have (HELLO, a PD, an MR on a memfd,
 * CQs, RC, UD and GSI QPs, an SRQ, a channel, WQEs posted and rung,
 * passes), and a few that break one thing each.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "droce_chan.h"

/* fuzz_droced's step kinds */
enum { STEP_REQ = 0, STEP_SCRIBBLE = 1, STEP_SLOTS = 2, STEP_PASS = 3 };

struct seed {
	uint8_t b[8192];
	size_t n;
};

static void
put(struct seed *s, const void *p, size_t n)
{
	if (s->n + n <= sizeof(s->b)) {
		memcpy(s->b + s->n, p, n);
		s->n += n;
	}
}

static void
put8(struct seed *s, uint32_t v)
{
	uint8_t b = (uint8_t)v;

	put(s, &b, 1);
}

/* A request: op, fd kind (REG_MR: 1 a memfd), its body (blen bytes of
 * it, the rest zero), REG_MR's size. */
static void
req_body(struct seed *s, uint32_t op, uint32_t fdkind, const void *body,
		size_t blen)
{
	uint8_t b[DROCE_CHAN_MSG_MAX] = { 0 };
	int len = droce_chan_body_len(op, 0);

	if (body != NULL)
		memcpy(b, body, blen < (size_t)len ? blen : (size_t)len);
	put8(s, STEP_REQ);
	put8(s, op);
	put8(s, fdkind);
	put(s, b, (size_t)len);
	if (op == DROCE_OP_REG_MR)
		put8(s, 1);	/* 2 pages */
}

#define req(s, op, fdkind, body) \
	req_body(s, op, fdkind, body, (body) != NULL ? sizeof(*(body)) : 0)

static void
pass(struct seed *s, uint32_t n)
{
	put8(s, STEP_PASS);
	put8(s, n);
}

/* n WQEs of 256 bytes each into handle's WQ (0 SQ, 1 RQ, 2 SRQ). */
static void
slots(struct seed *s, uint32_t handle, uint32_t kind, const void *wqe,
		size_t len, uint32_t n)
{
	uint8_t slot[256];
	uint32_t i;

	put8(s, STEP_SLOTS);
	put8(s, handle);
	put8(s, kind);
	put8(s, n - 1);
	for (i = 0; i < n; i++) {
		memset(slot, 0, sizeof(slot));
		memcpy(slot, wqe, len);
		put(s, slot, sizeof(slot));
	}
}

static void
hello_pd_mr_cq(struct seed *s)
{
	struct droce_chan_hello_req h = { .version = DROCE_CHAN_VERSION };
	struct droce_chan_reg_mr_req m = { 0 };
	struct droce_chan_create_cq_req c = { .cqe = 16,
		.channel = DROCE_CHAN_NONE };

	snprintf(h.comm, sizeof(h.comm), "seed");
	req(s, DROCE_OP_HELLO, 0, &h);
	req_body(s, DROCE_OP_ALLOC_PD, 0, NULL, 0);
	m.pd = 0;
	m.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	m.addr = 0x100000;
	m.len = 8192;
	m.iova = m.addr;
	m.npieces = 1;
	m.pieces[0].seg = 0;
	m.pieces[0].flags = DROCE_PIECE_NEW;
	m.pieces[0].len = 8192;
	req(s, DROCE_OP_REG_MR, 1, &m);
	req(s, DROCE_OP_CREATE_CQ, 0, &c);
}

static void
qp(struct seed *s, uint32_t type, uint32_t srq)
{
	struct droce_chan_create_qp_req q = { .pd = 0, .qp_type = type,
		.send_cq = 0, .recv_cq = 0, .srq = srq,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 2,
			.max_recv_sge = 2, .max_inline_data = 32 } };

	if (type == DROCE_QPT_GSI)
		q.cap.max_inline_data = 0;
	req(s, DROCE_OP_CREATE_QP, 0, &q);
}

static void
modify(struct seed *s, uint32_t handle, enum ibv_qp_state st, int mask)
{
	struct droce_chan_modify_qp_req m = { .handle = handle, .mask = mask };

	m.attr.qp_state = st;
	m.attr.port_num = 1;
	m.attr.qkey = 0x11111111;
	m.attr.path_mtu = IBV_MTU_1024;
	m.attr.dest_qp_num = 0;	/* fuzz_droced: the QP itself */
	m.attr.max_dest_rd_atomic = 1;
	m.attr.max_rd_atomic = 1;
	m.attr.timeout = 14;
	m.attr.retry_cnt = 7;
	m.attr.rnr_retry = 7;
	m.attr.ah_attr.is_global = 1;
	m.attr.ah_attr.port_num = 1;
	m.attr.ah_attr.grh.sgid_index = 1;
	/* itself: ::ffff:10.9.0.1, the fuzz port's address */
	m.attr.ah_attr.grh.dgid.raw[10] = m.attr.ah_attr.grh.dgid.raw[11] = 0xff;
	m.attr.ah_attr.grh.dgid.raw[12] = 10;
	m.attr.ah_attr.grh.dgid.raw[13] = 9;
	m.attr.ah_attr.grh.dgid.raw[15] = 1;
	req(s, DROCE_OP_MODIFY_QP, 0, &m);
}

static void
connect_rc(struct seed *s, uint32_t handle)
{
	modify(s, handle, IBV_QPS_INIT, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
		IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	modify(s, handle, IBV_QPS_RTR, IBV_QP_STATE | IBV_QP_AV |
		IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	modify(s, handle, IBV_QPS_RTS, IBV_QP_STATE | IBV_QP_TIMEOUT |
		IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
		IBV_QP_MAX_QP_RD_ATOMIC);
}

/* A send WQE with one SGE (fuzz_droced points it at the MR when the
 * slot's first byte is odd: wr_id 1). */
static void
send_wqe(struct seed *s, uint32_t handle, enum ibv_wr_opcode op, uint32_t n)
{
	uint8_t b[sizeof(struct droce_chan_swqe) + sizeof(struct ibv_sge)];
	struct droce_chan_swqe w = { .wr_id = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED, .num_sge = 1,
		.remote_addr = 0x100000, .rkey = 0 };
	struct ibv_sge sge = { .addr = 0, .length = 4096 };

	memcpy(b, &w, sizeof(w));
	memcpy(b + sizeof(w), &sge, sizeof(sge));
	slots(s, handle, 0, b, sizeof(b), n);
}

static void
recv_wqe(struct seed *s, uint32_t handle, uint32_t kind, uint32_t n)
{
	uint8_t b[sizeof(struct droce_chan_rwqe) + sizeof(struct ibv_sge)];
	struct droce_chan_rwqe w = { .wr_id = 1, .num_sge = 1 };
	struct ibv_sge sge = { .addr = 0, .length = 4096 };

	memcpy(b, &w, sizeof(w));
	memcpy(b + sizeof(w), &sge, sizeof(sge));
	slots(s, handle, kind, b, sizeof(b), n);
}

static void
write_seed(const char *dir, const char *name, const struct seed *s)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (f == NULL || fwrite(s->b, 1, s->n, f) != s->n) {
		perror(path);
		exit(1);
	}
	fclose(f);
}

int
main(int argc, char **argv)
{
	struct droce_chan_create_srq_req sr = { .pd = 0, .max_wr = 8,
		.max_sge = 2, .xrcd = DROCE_CHAN_NONE };
	struct droce_chan_create_cq_req cc = { .cqe = 16 };
	struct droce_chan_resize_cq_req rz = { .handle = 0, .cqe = 64 };
	struct droce_chan_dereg_mr_req d = { .handle = 0, .nrelease = 1 };
	struct droce_chan_handle h = { .handle = 0 };
	struct seed s;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	/* an RC QP to itself: SEND, WRITE, READ through the loopback */
	memset(&s, 0, sizeof(s));
	hello_pd_mr_cq(&s);
	qp(&s, IBV_QPT_RC, DROCE_CHAN_NONE);
	connect_rc(&s, 0);
	recv_wqe(&s, 0, 1, 2);
	send_wqe(&s, 0, IBV_WR_SEND, 2);
	send_wqe(&s, 0, IBV_WR_RDMA_WRITE, 1);
	send_wqe(&s, 0, IBV_WR_RDMA_READ, 1);
	pass(&s, 3);
	pass(&s, 3);
	write_seed(argv[1], "rc-loopback", &s);
	/* the same, the MR deregistered in the middle, the QP destroyed */
	pass(&s, 1);
	req(&s, DROCE_OP_DEREG_MR, 0, &d);
	pass(&s, 3);
	req(&s, DROCE_OP_DESTROY_QP, 0, &h);
	write_seed(argv[1], "rc-dereg", &s);
	/* UD and an SRQ, a channel and a CQ on it, a resize */
	memset(&s, 0, sizeof(s));
	hello_pd_mr_cq(&s);
	req(&s, DROCE_OP_CREATE_SRQ, 0, &sr);
	qp(&s, IBV_QPT_UD, 0);
	recv_wqe(&s, 0, 2, 3);
	req_body(&s, DROCE_OP_CREATE_CHANNEL, 0, NULL, 0);
	cc.channel = 0;
	req(&s, DROCE_OP_CREATE_CQ, 0, &cc);
	req(&s, DROCE_OP_RESIZE_CQ, 0, &rz);
	pass(&s, 2);
	write_seed(argv[1], "ud-srq-channel", &s);
	/* a GSI proxy and its sends and receives */
	memset(&s, 0, sizeof(s));
	hello_pd_mr_cq(&s);
	qp(&s, DROCE_QPT_GSI, DROCE_CHAN_NONE);
	recv_wqe(&s, 0, 1, 2);
	send_wqe(&s, 0, IBV_WR_SEND, 2);
	pass(&s, 3);
	write_seed(argv[1], "gsi", &s);
	/* a scribbled region: doorbells and WQ indexes */
	memset(&s, 0, sizeof(s));
	hello_pd_mr_cq(&s);
	qp(&s, IBV_QPT_RC, DROCE_CHAN_NONE);
	put8(&s, STEP_SCRIBBLE);
	put(&s, "\x00\x00\x10\x00", 4);
	put8(&s, 8);
	put(&s, "\xff\xff\xff\x7f\xff\xff\xff\x7f", 8);
	pass(&s, 2);
	write_seed(argv[1], "scribbled", &s);
	return 0;
}
