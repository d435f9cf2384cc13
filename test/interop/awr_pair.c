/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * awr_pair: IBTA 1.5 ATOMIC WRITE both ways between two verbs devices, for
 * test/interop/rxe-pair.sh (droce on the host, rdma_rxe >= 6.2 in the
 * guest). Options as ibv_rc_pingpong's: [-d DEV] [-g GIDX] [-p PORT]
 * [-n WORDS] [SERVER]. The two sides exchange QP, GID, rkey and address
 * over TCP, then the client writes WORDS words into the server's buffer,
 * every other slot, half through ibv_wr_atomic_write and half through
 * ibv_post_send (-e, and on an rxe device: all through
 * ibv_wr_atomic_write), and says so; the
 * server checks every byte of its buffer (the words, and the untouched
 * bytes between them keep their pattern), then does the same the other
 * way (-1: only the client writes). Exit 0 when every direction checked
 * and every completion was IBV_WC_ATOMIC_WRITE with success.
 */

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <infiniband/verbs.h>

#include "side_channel.h"

#define BUF 4096

struct info {
	uint32_t qpn, psn, rkey, pad;
	uint64_t addr;
	uint8_t gid[16];
};

static const char *dev_name;
static int gidx = 1, words = 64, ex_only, one_way;
static const char *port = "18515";

static uint8_t
fill(size_t i)
{
	return (uint8_t)(i * 13 + 7);
}

/* The word a side writes into slot k (every other 8-byte slot). */
static uint64_t
word(int from_server, int k)
{
	return 0x0102030405060708ull * (uint64_t)(k + 1) ^
		(from_server ? 0xa5a5a5a500000000ull : 0x5a5a5a5a00000000ull);
}

static int
connect_qp(struct ibv_qp *qp, const struct info *peer, uint32_t my_psn)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = peer->qpn;
	a.rq_psn = peer->psn;
	a.max_dest_rd_atomic = 16;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.sgid_index = (uint8_t)gidx;
	a.ah_attr.grh.hop_limit = 64;
	memcpy(a.ah_attr.grh.dgid.raw, peer->gid, 16);
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = my_psn;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 16;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
		IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
		IBV_QP_MAX_QP_RD_ATOMIC);
}

/* Write the words into the peer's buffer and wait for every completion. */
static int
send_words(struct ibv_qp *qp, struct ibv_cq *cq, struct ibv_mr *mr,
		uint8_t *src, const struct info *peer, int from_server)
{
	struct ibv_qp_ex *qx = ibv_qp_to_qp_ex(qp);
	int k, done = 0, bad = 0;
	time_t t0 = time(NULL);

	for (k = 0; k < words; k++) {
		uint64_t v = word(from_server, k), raddr = peer->addr + 16 * k;
		int rc;

		if (ex_only || k % 2 == 0) {
			ibv_wr_start(qx);
			qx->wr_id = (uint64_t)k;
			qx->wr_flags = IBV_SEND_SIGNALED;
			ibv_wr_atomic_write(qx, peer->rkey, raddr, &v);
			rc = ibv_wr_complete(qx);
		} else {
			struct ibv_sge s = { .addr = (uintptr_t)src + 8 * k,
				.length = 8, .lkey = mr->lkey };
			struct ibv_send_wr w = { .wr_id = (uint64_t)k,
				.sg_list = &s, .num_sge = 1,
				.opcode = IBV_WR_ATOMIC_WRITE,
				.send_flags = IBV_SEND_SIGNALED }, *badwr;

			memcpy(src + 8 * k, &v, 8);
			w.wr.rdma.remote_addr = raddr;
			w.wr.rdma.rkey = peer->rkey;
			rc = ibv_post_send(qp, &w, &badwr);
		}
		if (rc) {
			fprintf(stderr, "awr_pair: post of word %d: %s\n", k,
				strerror(rc));
			return -1;
		}
		/* at most 8 outstanding (max_rd_atomic 16 on both sides) */
		while (k + 1 - done >= 8 || (k == words - 1 && done < words)) {
			struct ibv_wc wc;
			int n = ibv_poll_cq(cq, 1, &wc);

			if (n < 0 || time(NULL) - t0 > 60) {
				fprintf(stderr, "awr_pair: completions stalled "
					"at %d\n", done);
				return -1;
			}
			if (n == 0)
				continue;
			if (wc.status != IBV_WC_SUCCESS ||
					wc.opcode != IBV_WC_ATOMIC_WRITE ||
					wc.wr_id != (uint64_t)done) {
				fprintf(stderr, "awr_pair: completion %d: %s, "
					"opcode %d, wr_id %llu\n", done,
					ibv_wc_status_str(wc.status),
					(int)wc.opcode,
					(unsigned long long)wc.wr_id);
				bad++;
			}
			done++;
		}
	}
	printf("awr_pair: %d ATOMIC WRITEs sent (%s), %d bad completions\n",
		words, ex_only ? "ibv_wr_atomic_write" :
		"ibv_wr_atomic_write and ibv_post_send", bad);
	return bad ? -1 : 0;
}

/* Every byte of the buffer: the peer's words, and the pattern between. */
static int
check_words(const uint8_t *buf, int from_server)
{
	int k, bad = 0;
	size_t i;

	for (i = 0; i < BUF; i++) {
		uint8_t want = fill(i);

		k = (int)(i / 16);
		if (k < words && i % 16 < 8) {
			uint64_t v = word(from_server, k);

			want = ((const uint8_t *)&v)[i % 16];
		}
		if (buf[i] != want) {
			if (bad++ < 5)
				fprintf(stderr, "awr_pair: byte %zu is %#x, "
					"want %#x\n", i, buf[i], want);
		}
	}
	printf("awr_pair: %d words received, %d bytes checked, %d wrong\n",
		words, BUF, bad);
	return bad ? -1 : 0;
}

/* One side's verbs objects, its buffer (BUF bytes of pattern, then the
 * words it sends from) and the side channel. */
struct side {
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_qp *qp;
	uint8_t *buf, *src;
	int fd;
};

/* The options into the globals; the server's name, NULL on the server.
 * 0, or 2 for a bad option. */
static int
parse_args(int argc, char **argv, const char **server)
{
	int c;

	while ((c = getopt(argc, argv, "d:g:p:n:e1")) != -1) {
		switch (c) {
		case 'd': dev_name = optarg; break;
		case 'g': gidx = atoi(optarg); break;
		case 'p': port = optarg; break;
		case 'n': words = atoi(optarg); break;
		case 'e': ex_only = 1; break;
		case '1': one_way = 1; break;
		default:
			fprintf(stderr, "usage: awr_pair [-d DEV] [-g GIDX] "
				"[-p PORT] [-n WORDS] [-e] [-1] [SERVER]\n");
			return 2;
		}
	}
	if (words < 1 || words > BUF / 16)
		words = BUF / 16;
	*server = optind < argc ? argv[optind] : NULL;
	return 0;
}

/* The device asked for (or the first) opened, its ATOMIC WRITE bit
 * reported: 0, or -1. */
static int
open_dev(struct side *s)
{
	struct ibv_device_attr_ex dx;
	int i, n;

	s->list = ibv_get_device_list(&n);
	for (i = 0; s->list != NULL && i < n; i++)
		if (dev_name == NULL || strcmp(ibv_get_device_name(s->list[i]),
				dev_name) == 0)
			break;
	if (s->list == NULL || i == n) {
		fprintf(stderr, "awr_pair: no device\n");
		return -1;
	}
	s->ctx = ibv_open_device(s->list[i]);
	if (s->ctx == NULL)
		return -1;
	/*
	 * rdma-core 56's rxe provider takes ATOMIC WRITE only through
	 * ibv_wr_atomic_write: its ibv_post_send leaves the rkey out (0 on
	 * the wire) and sends the SGE's address as the data (seen in a
	 * capture against droce, which answered Remote Access Error).
	 */
	if (strncmp(ibv_get_device_name(s->list[i]), "rxe", 3) == 0)
		ex_only = 1;
	memset(&dx, 0, sizeof(dx));
	if (ibv_query_device_ex(s->ctx, NULL, &dx) == 0)
		printf("awr_pair: %s device_cap_flags_ex %#llx (ATOMIC_WRITE "
			"bit 40: %s)\n", ibv_get_device_name(s->list[i]),
			(unsigned long long)dx.device_cap_flags_ex,
			(dx.device_cap_flags_ex >> 40) & 1 ? "yes" : "no");
	return 0;
}

/* PD, CQ, the patterned buffer and its MR, an RC QP that takes
 * ibv_wr_atomic_write; what the peer needs of them into me. 0, or -1. */
static int
make_resources(struct side *s, struct info *me)
{
	struct ibv_qp_init_attr_ex ax;
	union ibv_gid gid;
	size_t j;

	s->pd = ibv_alloc_pd(s->ctx);
	s->cq = s->pd ? ibv_create_cq(s->ctx, 64, NULL, NULL, 0) : NULL;
	s->buf = aligned_alloc(4096, 2 * BUF);
	s->src = s->buf + BUF;
	for (j = 0; j < BUF; j++)
		s->buf[j] = fill(j);
	s->mr = s->cq ? ibv_reg_mr(s->pd, s->buf, 2 * BUF,
		IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE) : NULL;
	memset(&ax, 0, sizeof(ax));
	ax.send_cq = s->cq;
	ax.recv_cq = s->cq;
	ax.qp_type = IBV_QPT_RC;
	ax.cap.max_send_wr = 32;
	ax.cap.max_recv_wr = 1;
	ax.cap.max_send_sge = 1;
	ax.cap.max_recv_sge = 1;
	ax.pd = s->pd;
	ax.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	ax.send_ops_flags = IBV_QP_EX_WITH_ATOMIC_WRITE;
	s->qp = s->mr ? ibv_create_qp_ex(s->ctx, &ax) : NULL;
	if (s->qp == NULL || ibv_query_gid(s->ctx, 1, gidx, &gid)) {
		fprintf(stderr, "awr_pair: resources: %s\n", strerror(errno));
		return -1;
	}
	memset(me, 0, sizeof(*me));
	me->qpn = s->qp->qp_num;
	me->psn = (uint32_t)(getpid() * 7919) & 0xffffff;
	me->rkey = s->mr->rkey;
	me->addr = (uintptr_t)s->buf;
	memcpy(me->gid, gid.raw, 16);
	return 0;
}

/* The side channel opened, QP, rkey and address exchanged, the QP
 * connected and both sides ready before anything is written: 0, or -1. */
static int
exchange(struct side *s, const char *server, const struct info *me,
		struct info *peer)
{
	uint8_t ok = 1, peer_ok;

	s->fd = server == NULL ? side_accept(port) :
		side_connect(server, port);
	if (s->fd < 0 || side_xfer(s->fd, me, peer, sizeof(*me)) != 0) {
		fprintf(stderr, "awr_pair: exchange failed\n");
		return -1;
	}
	if (connect_qp(s->qp, peer, me->psn) != 0) {
		fprintf(stderr, "awr_pair: connect: %s\n", strerror(errno));
		return -1;
	}
	return side_xfer(s->fd, &ok, &peer_ok, 1) != 0 ? -1 : 0;
}

/* The client writes first, then checks the server's words: 0 when
 * every direction asked for verified. */
static int
run_client(struct side *s, const struct info *peer)
{
	uint8_t ok, peer_ok;

	ok = send_words(s->qp, s->cq, s->mr, s->src, peer, 0) == 0;
	/* 2: sent; 3: the server's check; 4: the server sent */
	if (side_xfer(s->fd, &ok, &peer_ok, 1) != 0 || !ok)
		return 1;
	if (side_xfer(s->fd, &ok, &peer_ok, 1) != 0 || !peer_ok)
		return 1;	/* the server found its bytes wrong */
	if (one_way)
		return 0;
	if (side_xfer(s->fd, &ok, &peer_ok, 1) != 0 || !peer_ok)
		return 1;
	ok = check_words(s->buf, 1) == 0;
	/* 5: our check */
	if (side_xfer(s->fd, &ok, &peer_ok, 1) != 0)
		return 1;
	return ok ? 0 : 1;
}

/* The server checks the client's words, then writes its own: 0 when
 * every direction asked for verified. */
static int
run_server(struct side *s, const struct info *peer)
{
	uint8_t ok = 1, peer_ok, sent_ok;

	if (side_xfer(s->fd, &ok, &sent_ok, 1) != 0 || !sent_ok)
		return 1;
	ok = check_words(s->buf, 0) == 0;
	if (side_xfer(s->fd, &ok, &peer_ok, 1) != 0 || !ok)
		return 1;
	if (one_way)
		return 0;
	ok = send_words(s->qp, s->cq, s->mr, s->src, peer, 1) == 0;
	if (side_xfer(s->fd, &ok, &peer_ok, 1) != 0 || !ok)
		return 1;
	if (side_xfer(s->fd, &ok, &peer_ok, 1) != 0)
		return 1;
	return peer_ok ? 0 : 1;
}

int
main(int argc, char **argv)
{
	struct info me, peer;
	const char *server;
	struct side s;
	int rc;

	memset(&s, 0, sizeof(s));
	if (parse_args(argc, argv, &server) != 0)
		return 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (open_dev(&s) != 0 || make_resources(&s, &me) != 0 ||
			exchange(&s, server, &me, &peer) != 0)
		return 1;
	rc = server == NULL ? run_server(&s, &peer) : run_client(&s, &peer);
	printf("awr_pair: %s\n", rc != 0 ? "FAILED" : one_way ?
		"client to server verified" : "both directions verified");
	close(s.fd);
	ibv_destroy_qp(s.qp);
	ibv_dereg_mr(s.mr);
	ibv_destroy_cq(s.cq);
	ibv_dealloc_pd(s.pd);
	ibv_close_device(s.ctx);
	ibv_free_device_list(s.list);
	return rc;
}
