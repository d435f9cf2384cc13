/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * Control messages between an application and droced: the fixed size of
 * each op's bodies (what a received message is checked against before
 * anyone reads it) and sending and receiving with descriptors.
 */

#include <assert.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include "droce_chan.h"

static_assert(sizeof(struct droce_chan_region) <= DROCE_CHAN_HEAP_OFF,
	"the region header fits before the heap");
static_assert(offsetof(struct droce_chan_region, sleeping) % DROCE_CHAN_CL == 0,
	"sleeping on a cache line of its own");
static_assert(sizeof(struct droce_chan_wq) == DROCE_CHAN_WQ_SLOTS,
	"WQ header size");
static_assert(sizeof(struct droce_chan_cq) == DROCE_CHAN_CQ_WC,
	"CQ header size");
static_assert(sizeof(struct droce_chan_swqe) % 16 == 0, "SGEs aligned");
static_assert(sizeof(struct droce_chan_reg_mr_req) + sizeof(struct droce_chan_hdr)
	<= DROCE_CHAN_MSG_MAX, "REG_MR fits a message");
static_assert(sizeof(struct droce_chan_hello_rep) + sizeof(struct droce_chan_hdr)
	<= DROCE_CHAN_MSG_MAX, "HELLO fits a message");

struct op_desc {
	const char *name;
	int req, rep;
};

#define H sizeof(struct droce_chan_handle)
static const struct op_desc ops[DROCE_OP_COUNT] = {
	[DROCE_OP_HELLO] = { "hello", sizeof(struct droce_chan_hello_req),
		sizeof(struct droce_chan_hello_rep) },
	[DROCE_OP_ALLOC_PD] = { "alloc_pd", 0, H },
	[DROCE_OP_DEALLOC_PD] = { "dealloc_pd", H, 0 },
	[DROCE_OP_REG_MR] = { "reg_mr", sizeof(struct droce_chan_reg_mr_req),
		sizeof(struct droce_chan_reg_mr_rep) },
	[DROCE_OP_DEREG_MR] = { "dereg_mr",
		sizeof(struct droce_chan_dereg_mr_req), 0 },
	[DROCE_OP_CREATE_CHANNEL] = { "create_channel", 0, H },
	[DROCE_OP_DESTROY_CHANNEL] = { "destroy_channel", H, 0 },
	[DROCE_OP_CREATE_CQ] = { "create_cq",
		sizeof(struct droce_chan_create_cq_req),
		sizeof(struct droce_chan_create_cq_rep) },
	[DROCE_OP_DESTROY_CQ] = { "destroy_cq", H, 0 },
	[DROCE_OP_CREATE_SRQ] = { "create_srq",
		sizeof(struct droce_chan_create_srq_req),
		sizeof(struct droce_chan_create_srq_rep) },
	[DROCE_OP_MODIFY_SRQ] = { "modify_srq",
		sizeof(struct droce_chan_modify_srq_req), 0 },
	[DROCE_OP_QUERY_SRQ] = { "query_srq", H, sizeof(struct ibv_srq_attr) },
	[DROCE_OP_DESTROY_SRQ] = { "destroy_srq", H, 0 },
	[DROCE_OP_CREATE_QP] = { "create_qp",
		sizeof(struct droce_chan_create_qp_req),
		sizeof(struct droce_chan_create_qp_rep) },
	[DROCE_OP_MODIFY_QP] = { "modify_qp",
		sizeof(struct droce_chan_modify_qp_req), 0 },
	[DROCE_OP_QUERY_QP] = { "query_qp",
		sizeof(struct droce_chan_query_qp_req),
		sizeof(struct droce_chan_query_qp_rep) },
	[DROCE_OP_DESTROY_QP] = { "destroy_qp", H, 0 },
	[DROCE_OP_CREATE_AH] = { "create_ah",
		sizeof(struct droce_chan_create_ah_req), H },
	[DROCE_OP_DESTROY_AH] = { "destroy_ah", H, 0 },
	[DROCE_OP_ATTACH_MCAST] = { "attach_mcast",
		sizeof(struct droce_chan_mcast_req), 0 },
	[DROCE_OP_DETACH_MCAST] = { "detach_mcast",
		sizeof(struct droce_chan_mcast_req), 0 },
	[DROCE_OP_QUERY_PORT] = { "query_port", 0, sizeof(struct ibv_port_attr) },
	[DROCE_OP_CM_LISTEN] = { "cm_listen",
		sizeof(struct droce_chan_cm_listen_req), 0 },
	[DROCE_OP_RESOLVE] = { "resolve",
		sizeof(struct droce_chan_resolve_req), 0 },
	[DROCE_OP_ALLOC_MW] = { "alloc_mw",
		sizeof(struct droce_chan_alloc_mw_req),
		sizeof(struct droce_chan_alloc_mw_rep) },
	[DROCE_OP_DEALLOC_MW] = { "dealloc_mw", H, 0 },
	[DROCE_OP_RESIZE_CQ] = { "resize_cq",
		sizeof(struct droce_chan_resize_cq_req),
		sizeof(struct droce_chan_create_cq_rep) },
	[DROCE_OP_OPEN_XRCD] = { "open_xrcd", 0, H },
	[DROCE_OP_CLOSE_XRCD] = { "close_xrcd", H, 0 },
	[DROCE_OP_SET_SR] = { "set_sr", sizeof(struct droce_chan_set_sr_req),
		0 },
};
#undef H

int
droce_chan_body_len(uint32_t op, int rep)
{
	if (op == 0 || op >= DROCE_OP_COUNT)
		return -1;
	return rep ? ops[op].rep : ops[op].req;
}

const char *
droce_chan_op_name(uint32_t op)
{
	if (op == 0 || op >= DROCE_OP_COUNT)
		return "?";
	return ops[op].name;
}

int
droce_chan_send(int sock, struct droce_chan_hdr *hdr, const void *body,
		uint32_t body_len, const int *fds, int nfds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * DROCE_CHAN_MAX_FDS)];
		struct cmsghdr align;
	} cm;
	struct iovec iov[2] = {
		{ .iov_base = hdr, .iov_len = sizeof(*hdr) },
		{ .iov_base = (void *)(uintptr_t)body, .iov_len = body_len },
	};
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = body_len ? 2 : 1 };
	ssize_t n;

	if (nfds < 0 || nfds > DROCE_CHAN_MAX_FDS)
		return -EINVAL;
	hdr->len = body_len;
	if (nfds > 0) {
		struct cmsghdr *c;

		memset(&cm, 0, sizeof(cm));
		msg.msg_control = cm.buf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
	}
	do {
		n = sendmsg(sock, &msg, MSG_NOSIGNAL);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EPIPE ? -ECONNRESET : -errno;
	return n == (ssize_t)(sizeof(*hdr) + body_len) ? 0 : -EMSGSIZE;
}

static void
close_fds(int *fds, int n)
{
	int i;

	for (i = 0; i < n; i++)
		close(fds[i]);
}

int
droce_chan_recv(int sock, void *buf, uint32_t cap, int rep, int *fds,
		int *nfds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * DROCE_CHAN_MAX_FDS)];
		struct cmsghdr align;
	} cm;
	struct iovec iov = { .iov_base = buf, .iov_len = cap };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cm.buf, .msg_controllen = sizeof(cm.buf),
	};
	const struct droce_chan_hdr *h = buf;
	struct cmsghdr *c;
	int got[DROCE_CHAN_MAX_FDS * 2], ngot = 0, want;
	ssize_t n;

	*nfds = 0;
	do {
		n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (n == 0)
		return -ECONNRESET;
	for (c = CMSG_FIRSTHDR(&msg); c != NULL; c = CMSG_NXTHDR(&msg, c)) {
		size_t k;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		for (k = 0; k < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int) &&
				ngot < DROCE_CHAN_MAX_FDS * 2; k++)
			memcpy(&got[ngot++], CMSG_DATA(c) + k * sizeof(int),
				sizeof(int));
	}
	if ((msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) ||
			(size_t)n < sizeof(*h) ||
			(want = droce_chan_body_len(h->op, rep)) < 0 ||
			/* a refusal carries no body */
			(rep && h->status != 0 && (want = 0) != 0) ||
			h->len != (uint32_t)want ||
			(size_t)n != sizeof(*h) + h->len ||
			ngot > DROCE_CHAN_MAX_FDS) {
		close_fds(got, ngot);
		return -EBADMSG;
	}
	memcpy(fds, got, sizeof(int) * (size_t)ngot);
	*nfds = ngot;
	return (int)h->len;
}
