/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * raw_tso_tcp MY_IP MY_MAC PEER_IP PEER_MAC PORT [MSS]: a TCP client made
 * of whole frames on a RAW_PACKET QP, against a real TCP stack (the Linux
 * kernel on the other end of a veth or a net_tap, test/verbs/
 * raw-tso-kernel.sh). MSS: what the SYN offers (1460). With RAW_TSO_READY
 * set, that file is made once the device is up and the QP ready (the
 * script sets up the peer's end and its capture after that: a PMD that
 * still configures the interface could end the capture); with RAW_TSO_GO,
 * the SYN waits for that file to exist (the peer's address and capture are
 * set up); with RAW_TSO_HOLD, the exit waits for that one (the script
 * reads droce's counters meanwhile). A flow
 * rule steers the peer's segments to the QP; the SYN goes with
 * IBV_SEND_IP_CSUM (droce fills the sums in), the SYN-ACK is read from the
 * QP's receive queue, then 64 KB go in one ibv_wr_send_tso with ACK, PSH
 * and FIN in the template: droce cuts it into segments of the peer's MSS.
 * Passes when the peer acknowledges every byte and the FIN. Also checks
 * what ibv_query_device_ex says of TSO, checksums and raw QPs. A verbs
 * program built against the system's libibverbs; run under droce-run.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <infiniband/verbs.h>

#define PAYLOAD		65536
#define NRECV		64
#define RBUF		2048
#define MY_PORT		40001

static uint8_t my_mac[6], peer_mac[6];
static uint32_t my_ip, peer_ip;		/* network order */
static uint16_t peer_port;

static struct ibv_qp *qp;
static struct ibv_qp_ex *qpx;
static struct ibv_cq *cq;
static struct ibv_mr *mr;
static uint8_t *mem;			/* [payload | frame to send | receives] */
static int tso_status = -1;		/* the TSO WR's completion */
static uint8_t seg[RBUF];		/* the last segment received */

#define TXF	(mem + PAYLOAD)
#define RXB(i)	(mem + PAYLOAD + 256 + (size_t)(i) * RBUF)

static int
fail(const char *what)
{
	fprintf(stderr, "raw_tso_tcp: %s (%s)\n", what, strerror(errno));
	return 1;
}

/* Until path exists (or 60 s): the script's go-ahead. */
static void
wait_file(const char *path)
{
	FILE *f;
	int i;

	for (i = 0; path != NULL && i < 600; i++) {
		f = fopen(path, "r");
		if (f != NULL) {
			fclose(f);
			return;
		}
		nanosleep(&(struct timespec){ 0, 100000000 }, NULL);
	}
}

static double
now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static int
parse_mac(const char *s, uint8_t m[6])
{
	return sscanf(s, "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &m[0], &m[1], &m[2],
		&m[3], &m[4], &m[5]) == 6 ? 0 : -1;
}

static void
put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void
put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

static uint32_t
get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
		(uint32_t)p[2] << 8 | p[3];
}

/* Ethernet, IPv4 and a TCP header of 20 + optlen bytes, sums left 0
 * (droce fills them in: IBV_SEND_IP_CSUM, TSO). Returns the length. */
static uint32_t
headers(uint8_t *f, uint16_t ip_id, uint32_t seq, uint32_t ack,
		uint8_t flags, const uint8_t *opt, uint32_t optlen,
		uint32_t paylen)
{
	uint32_t th = 20 + optlen;

	memset(f, 0, 14 + 20 + th);
	memcpy(f, peer_mac, 6);
	memcpy(f + 6, my_mac, 6);
	put16(f + 12, 0x0800);
	f[14] = 0x45;
	put16(f + 16, (uint16_t)(20 + th + paylen));
	put16(f + 18, ip_id);
	f[20] = 0x40;			/* DF */
	f[22] = 64;
	f[23] = 6;
	memcpy(f + 26, &my_ip, 4);
	memcpy(f + 30, &peer_ip, 4);
	put16(f + 34, MY_PORT);
	put16(f + 36, peer_port);
	put32(f + 38, seq);
	put32(f + 42, ack);
	f[46] = (uint8_t)((th / 4) << 4);
	f[47] = flags;
	put16(f + 48, 1024);		/* << 7: 128 KB */
	memcpy(f + 54, opt, optlen);
	return 14 + 20 + th;
}

static int post_recv(uint32_t i);

static int
send_frame(uint32_t len)
{
	struct ibv_sge s = { .addr = (uintptr_t)TXF, .length = len,
		.lkey = mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &s, .num_sge = 1,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED | IBV_SEND_IP_CSUM }, *bad;
	struct ibv_wc wc;
	double end = now_s() + 5;

	if (ibv_post_send(qp, &wr, &bad) != 0)
		return fail("ibv_post_send");
	for (;;) {
		int n = ibv_poll_cq(cq, 1, &wc);

		if (n < 0)
			return fail("poll");
		if (n == 1 && wc.opcode == IBV_WC_SEND)
			return wc.status == IBV_WC_SUCCESS ? 0 :
				fail("send completion");
		if (n == 1 && wc.opcode == IBV_WC_RECV)	/* a repeat: not ours */
			post_recv((uint32_t)wc.wr_id);
		if (now_s() > end)
			return fail("no send completion");
	}
}

static int
post_recv(uint32_t i)
{
	struct ibv_sge s = { .addr = (uintptr_t)RXB(i), .length = RBUF,
		.lkey = mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &s, .num_sge = 1 },
		*bad;

	return ibv_post_recv(qp, &wr, &bad);
}

/* The next TCP segment from the peer: a copy of its frame (the buffer
 * goes back to the QP at once, and droce's progress thread may fill it
 * again any time), or NULL after 5 s. */
static const uint8_t *
recv_seg(uint32_t *len)
{
	double end = now_s() + 5;
	struct ibv_wc wc;

	for (;;) {
		int n = ibv_poll_cq(cq, 1, &wc);

		if (n == 1 && wc.opcode == IBV_WC_RECV) {
			const uint8_t *f = RXB(wc.wr_id);

			if (wc.status != IBV_WC_SUCCESS) {
				fprintf(stderr, "receive status %d\n", wc.status);
				return NULL;
			}
			*len = wc.byte_len;
			memcpy(seg, f, wc.byte_len < RBUF ? wc.byte_len : RBUF);
			post_recv((uint32_t)wc.wr_id);
			if (wc.byte_len >= 54)
				return seg;
			continue;
		}
		if (n == 1) {
			if (wc.opcode == IBV_WC_TSO)
				tso_status = wc.status;
			continue;
		}
		if (n < 0 || now_s() > end)
			return NULL;
	}
}

static int
setup(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_device_attr_ex dx;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_qp_init_attr_ex ia;
	struct ibv_qp_attr a;
	uint32_t i;

	if (list == NULL || list[0] == NULL)
		return fail("no device");
	ctx = ibv_open_device(list[0]);
	if (ctx == NULL)
		return fail("open");
	memset(&dx, 0, sizeof(dx));
	if (ibv_query_device_ex(ctx, NULL, &dx) != 0)
		return fail("query_device_ex");
	printf("tso_caps max_tso %u supported_qpts %#x raw_packet_caps %#x "
		"device_cap_flags_ex %#llx\n", dx.tso_caps.max_tso,
		dx.tso_caps.supported_qpts, dx.raw_packet_caps,
		(unsigned long long)dx.device_cap_flags_ex);
	if (dx.tso_caps.max_tso < PAYLOAD ||
			!(dx.tso_caps.supported_qpts & (1u << IBV_QPT_RAW_PACKET)) ||
			!(dx.raw_packet_caps & IBV_RAW_PACKET_CAP_IP_CSUM) ||
			!(dx.device_cap_flags_ex & IBV_DEVICE_RAW_IP_CSUM)) {
		errno = EOPNOTSUPP;
		return fail("device caps do not say TSO and checksums");
	}
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 256, NULL, NULL, 0);
	mem = aligned_alloc(4096, PAYLOAD + 256 + NRECV * RBUF);
	if (pd == NULL || cq == NULL || mem == NULL)
		return fail("pd, cq, memory");
	mr = ibv_reg_mr(pd, mem, PAYLOAD + 256 + NRECV * RBUF,
		IBV_ACCESS_LOCAL_WRITE);
	if (mr == NULL)
		return fail("reg_mr");
	memset(&ia, 0, sizeof(ia));
	ia.qp_type = IBV_QPT_RAW_PACKET;
	ia.send_cq = ia.recv_cq = cq;
	ia.cap.max_send_wr = 16;
	ia.cap.max_recv_wr = NRECV;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	ia.pd = pd;
	ia.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	ia.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_TSO;
	qp = ibv_create_qp_ex(ctx, &ia);
	if (qp == NULL)
		return fail("create RAW_PACKET QP");
	qpx = ibv_qp_to_qp_ex(qp);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PORT) != 0)
		return fail("INIT");
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE) != 0)
		return fail("RTR");
	a.qp_state = IBV_QPS_RTS;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE) != 0)
		return fail("RTS");
	for (i = 0; i < NRECV; i++)
		if (post_recv(i) != 0)
			return fail("post_recv");
	{
		struct {
			struct ibv_flow_attr a;
			struct ibv_flow_spec_eth eth;
			struct ibv_flow_spec_ipv4 ip;
			struct ibv_flow_spec_tcp_udp tcp;
		} r;

		memset(&r, 0, sizeof(r));
		r.a.type = IBV_FLOW_ATTR_NORMAL;
		r.a.size = sizeof(r);
		r.a.num_of_specs = 3;
		r.a.port = 1;
		r.eth.type = IBV_FLOW_SPEC_ETH;
		r.eth.size = sizeof(r.eth);
		memcpy(r.eth.val.dst_mac, my_mac, 6);
		memset(r.eth.mask.dst_mac, 0xff, 6);
		r.ip.type = IBV_FLOW_SPEC_IPV4;
		r.ip.size = sizeof(r.ip);
		r.ip.val.dst_ip = my_ip;
		r.ip.val.src_ip = peer_ip;
		r.ip.mask.dst_ip = r.ip.mask.src_ip = 0xffffffff;
		r.tcp.type = IBV_FLOW_SPEC_TCP;
		r.tcp.size = sizeof(r.tcp);
		r.tcp.val.dst_port = htons(MY_PORT);
		r.tcp.val.src_port = htons(peer_port);
		r.tcp.mask.dst_port = r.tcp.mask.src_port = 0xffff;
		if (ibv_create_flow(qp, &r.a) == NULL)
			return fail("ibv_create_flow");
	}
	return 0;
}

int
main(int argc, char **argv)
{
	uint8_t syn_opt[8] = { 2, 4, 0x05, 0xb4,	/* MSS 1460 */
		1, 3, 3, 7 };				/* WS 7 */
	uint32_t isn = 0x1000 + (uint32_t)time(NULL) % 0x10000, srv, len, i;
	uint32_t mss = 536, want, acked = 0;
	const uint8_t *f;
	uint8_t tmpl[64];
	double end;

	if ((argc != 6 && argc != 7) || inet_pton(AF_INET, argv[1], &my_ip) != 1 ||
			parse_mac(argv[2], my_mac) != 0 ||
			inet_pton(AF_INET, argv[3], &peer_ip) != 1 ||
			parse_mac(argv[4], peer_mac) != 0) {
		fprintf(stderr, "usage: raw_tso_tcp MY_IP MY_MAC PEER_IP "
			"PEER_MAC PORT [MSS]\n");
		return 2;
	}
	peer_port = (uint16_t)atoi(argv[5]);
	if (argc == 7) {
		syn_opt[2] = (uint8_t)(atoi(argv[6]) >> 8);
		syn_opt[3] = (uint8_t)atoi(argv[6]);
	}
	if (setup() != 0)
		return 1;
	if (getenv("RAW_TSO_READY") != NULL) {
		FILE *ready = fopen(getenv("RAW_TSO_READY"), "w");

		if (ready == NULL)
			return fail("RAW_TSO_READY");
		fclose(ready);
	}
	wait_file(getenv("RAW_TSO_GO"));
	for (i = 0; i < PAYLOAD; i++)
		mem[i] = (uint8_t)(i * 131 + (i >> 8));

	/* SYN, then the SYN-ACK through the flow */
	if (send_frame(headers(TXF, 1, isn, 0, 0x02, syn_opt, 8, 0)) != 0)
		return 1;
	for (;;) {
		f = recv_seg(&len);
		if (f == NULL)
			return fail("no SYN-ACK");
		if ((f[47] & 0x12) == 0x12 && get32(f + 42) == isn + 1)
			break;
	}
	srv = get32(f + 38);
	for (i = 54; i + 1 < 34 + (uint32_t)(f[46] >> 4) * 4; ) {
		if (f[i] == 0)
			break;
		if (f[i] == 1) {
			i++;
			continue;
		}
		if (f[i] == 2 && f[i + 1] == 4)
			mss = (uint32_t)f[i + 2] << 8 | f[i + 3];
		if (f[i + 1] < 2)
			break;
		i += f[i + 1];
	}
	/* segments no longer than either side's MSS */
	if (argc == 7 && mss > (uint32_t)atoi(argv[6]))
		mss = (uint32_t)atoi(argv[6]);
	printf("SYN-ACK: server ISN %#x, MSS %u\n", srv, mss);
	if (send_frame(headers(TXF, 2, isn + 1, srv + 1, 0x10, NULL, 0, 0)) != 0)
		return 1;

	/* 64 KB in one TSO WR: ACK, PSH, FIN (droce keeps PSH and FIN for
	 * the last segment) */
	headers(tmpl, 3, isn + 1, srv + 1, 0x19, NULL, 0, 0);
	ibv_wr_start(qpx);
	qpx->wr_id = 2;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send_tso(qpx, tmpl, 54, (uint16_t)mss);
	ibv_wr_set_sge(qpx, mr->lkey, (uintptr_t)mem, PAYLOAD);
	memset(tmpl, 0, sizeof(tmpl));	/* copied by the call */
	if (ibv_wr_complete(qpx) != 0)
		return fail("ibv_wr_send_tso");
	want = isn + 1 + PAYLOAD + 1;	/* every byte and the FIN */
	end = now_s() + 10;
	while (acked != want && now_s() < end) {
		f = recv_seg(&len);
		if (f == NULL)
			break;
		if (f[47] & 0x10)
			acked = get32(f + 42);
		if ((f[47] & 0x04) != 0)
			return fail("the peer reset the connection");
	}
	printf("TSO completion %s; segments of %u bytes; peer acknowledged "
		"%u of %u bytes%s\n", tso_status == IBV_WC_SUCCESS ?
		"IBV_WC_TSO success" : "missing or failed", mss,
		acked - isn - 1, PAYLOAD + 1,
		acked == want ? " (the payload and the FIN): ok" : "");
	fflush(stdout);
	wait_file(getenv("RAW_TSO_HOLD"));
	return acked == want && tso_status == IBV_WC_SUCCESS ? 0 : 1;
}
