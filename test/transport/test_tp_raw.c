/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * RAW_PACKET QPs over the fake link, no DPDK: a frame posted on one side
 * arrives whole on the other when a flow steers it there, and not
 * otherwise; IBV_SEND_IP_CSUM fills the IPv4 and UDP sums; a 64 KB TSO
 * WR leaves as MSS segments with the right IP lengths and IDs, TCP
 * sequence numbers, FIN/PSH only on the last and CWR only on the first,
 * and valid sums (checked here byte by byte and by the receiver's
 * IBV_WC_IP_CSUM_OK); a frame longer than the receive buffer completes
 * IBV_WC_LOC_LEN_ERR with nothing written past the buffer and the QP
 * going on; flow and posting errors; EBUSY destroying a QP with flows.
 */

#include <errno.h>

#include "tp_util.h"

#define MSS		1448
#define TSO_LEN		65536
#define TCP_DPORT	5001
#define TCP_SPORT	40000

static struct fakelink L;

static struct droce_qp *
raw_qp(int side, struct droce_cq *cq, uint32_t nrecv)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RAW_PACKET,
		.cap = { .max_send_wr = 64, .max_recv_wr = nrecv,
			.max_send_sge = 2, .max_recv_sge = 1,
			.max_inline_data = 64 },
	};
	struct ibv_qp_attr a;
	struct droce_qp *qp;

	qp = droce_qp_create(L.end[side].pd, &ia, cq, cq, NULL);
	CHECK(qp != NULL, "raw QP");
	if (qp == NULL)
		return NULL;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	CHECK_EQ(droce_qp_modify(qp, &a, IBV_QP_STATE | IBV_QP_PORT, NULL), 0,
		"raw INIT (state, port)");
	a.qp_state = IBV_QPS_RTR;
	CHECK_EQ(droce_qp_modify(qp, &a, IBV_QP_STATE, NULL), 0, "raw RTR");
	a.qp_state = IBV_QPS_RTS;
	CHECK_EQ(droce_qp_modify(qp, &a, IBV_QP_STATE, NULL), 0, "raw RTS");
	return qp;
}

static void
put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static uint16_t
get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t
get32(const uint8_t *p)
{
	return (uint32_t)get16(p) << 16 | get16(p + 2);
}

static uint16_t
csum(const uint8_t *p, uint32_t n, uint32_t s)
{
	while (n > 1) {
		s += get16(p);
		p += 2;
		n -= 2;
	}
	if (n)
		s += (uint32_t)p[0] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

/* Ethernet + IPv4 (20) + TCP (20) or UDP (8) from side 0 to side 1. */
static uint32_t
headers(uint8_t *f, uint8_t proto, uint8_t tcp_flags)
{
	uint32_t l4 = proto == 6 ? 20 : 8;

	memset(f, 0, 14 + 20 + l4);
	memcpy(f, L.end[1].mac, 6);
	memcpy(f + 6, L.end[0].mac, 6);
	put16(f + 12, 0x0800);
	f[14] = 0x45;
	put16(f + 18, 0x1234);		/* IP ID */
	f[20] = 0x40;			/* DF */
	f[22] = 64;
	f[23] = proto;
	put16(f + 26, (uint16_t)(L.end[0].ip >> 16));
	put16(f + 28, (uint16_t)L.end[0].ip);
	put16(f + 30, (uint16_t)(L.end[1].ip >> 16));
	put16(f + 32, (uint16_t)L.end[1].ip);
	put16(f + 34, TCP_SPORT);
	put16(f + 36, TCP_DPORT);
	if (proto == 6) {
		put16(f + 38, 0x0001);	/* seq 0x0001fff0 */
		put16(f + 40, 0xfff0);
		put16(f + 42, 0x0000);	/* ack 7 */
		put16(f + 44, 0x0007);
		f[46] = 5 << 4;
		f[47] = tcp_flags;
		put16(f + 48, 65535);
	}
	return 14 + 20 + l4;
}

/* The IPv4 header sum and the L4 sum of a received frame are right. */
static int
sums_ok(const uint8_t *f, uint32_t len)
{
	uint32_t tot = get16(f + 16), s = 0;

	if (csum(f + 14, 20, 0) != 0 || 14 + tot > len)
		return 0;
	s = get16(f + 26) + get16(f + 28) + get16(f + 30) + get16(f + 32) +
		f[23] + (tot - 20);
	return csum(f + 34, tot - 20, s) == 0;
}

static struct droce_flow *
tcp_flow(struct droce_qp *qp, uint16_t dport)
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
	memcpy(r.eth.val.dst_mac, L.end[1].mac, 6);
	memset(r.eth.mask.dst_mac, 0xff, 6);
	r.ip.type = IBV_FLOW_SPEC_IPV4;
	r.ip.size = sizeof(r.ip);
	r.ip.val.dst_ip = __builtin_bswap32(L.end[1].ip);
	r.ip.mask.dst_ip = 0xffffffff;
	r.tcp.type = IBV_FLOW_SPEC_TCP;
	r.tcp.size = sizeof(r.tcp);
	r.tcp.val.dst_port = __builtin_bswap16(dport);
	r.tcp.mask.dst_port = 0xffff;
	return droce_flow_create(qp, &r.a);
}

static void
post_recvs(struct droce_qp *qp, struct tbuf *b, uint32_t n, uint32_t each)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		struct ibv_sge s = sge_of(b, (size_t)i * each, each);
		struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &s,
			.num_sge = 1 };
		struct ibv_recv_wr *bad;

		CHECK_EQ(droce_qp_post_recv(qp, &wr, &bad), 0, "post recv");
	}
}

static int
send_wr(struct droce_qp *qp, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;

	return droce_qp_post_send(qp, wr, &bad);
}

/* One 64 KB TSO WR with the template's TCP flags fl; every segment
 * received through rx's flow checked: length, IP length and ID,
 * sequence number, flags (CWR on the first only, FIN and PSH on the last
 * only), both sums and the bytes. */
static void
tso_run(struct droce_qp *tx, struct droce_qp *rx, struct droce_cq *cq0,
		struct droce_cq *cq1, struct tbuf *sb, struct tbuf *rb,
		uint8_t fl, const char *who)
{
	struct ibv_send_wr wr;
	struct ibv_sge s;
	struct ibv_wc wc;
	uint8_t hdr[64], *f;
	uint32_t hl, i, nseg, off;
	int bad_seg = 0;

	hl = headers(hdr, 6, fl);
	pattern(sb->p, TSO_LEN, 2);
	s = sge_of(sb, 0, TSO_LEN);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 9;
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_TSO;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.tso.hdr = hdr;
	wr.tso.hdr_sz = (uint16_t)hl;
	wr.tso.mss = MSS;
	CHECK(send_wr(tx, &wr) == 0, "TSO post (%s)", who);
	memset(hdr, 0xee, sizeof(hdr));	/* copied at post */
	CHECK_EQ(wait_wc(&L, cq0, &wc, 10000000), 0, "TSO completion");
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_TSO,
		"TSO completes as IBV_WC_TSO");
	nseg = (TSO_LEN + MSS - 1) / MSS;
	for (i = 0, off = 0; i < nseg; i++) {
		uint32_t plen = TSO_LEN - off < MSS ? TSO_LEN - off : MSS;
		int last = i == nseg - 1;
		uint8_t want = (uint8_t)((fl & 0x10) | (last ? fl & 0x09 : 0) |
			(i == 0 ? fl & 0x80 : 0));

		if (wait_wc(&L, cq1, &wc, 10000000) != 0) {
			CHECK(0, "segment %u missing", i);
			break;
		}
		f = rb->p + (wc.wr_id % 128) * 2048;
		if (wc.status != IBV_WC_SUCCESS || wc.byte_len != hl + plen ||
				get16(f + 16) != 40 + plen ||
				get16(f + 18) != 0x1234 + i ||
				get32(f + 38) != 0x0001fff0u + off ||
				f[47] != want || !sums_ok(f, wc.byte_len) ||
				!(wc.wc_flags & IBV_WC_IP_CSUM_OK) ||
				memcmp(f + hl, sb->p + off, plen) != 0) {
			if (bad_seg++ < 3)
				CHECK(0, "segment %u: len %u tot %u id %#x seq "
					"%#x flags %#x sums %d", i, wc.byte_len,
					get16(f + 16), get16(f + 18),
					get32(f + 38), f[47],
					sums_ok(f, wc.byte_len));
		}
		/* the buffer again, for the next */
		{
			struct ibv_sge rs = sge_of(rb, (wc.wr_id % 128) * 2048,
				2048);
			struct ibv_recv_wr rw = { .wr_id = wc.wr_id + 128,
				.sg_list = &rs, .num_sge = 1 };
			struct ibv_recv_wr *bad;

			droce_qp_post_recv(rx, &rw, &bad);
		}
		off += plen;
	}
	CHECK(bad_seg == 0, "every TSO segment right (%s)", who);
	CHECK_EQ(i, nseg, "46 segments");
	fl_run_idle(&L, 1000000);
	CHECK_EQ(droce_cq_poll(cq1, &wc, 1), 0, "no more segments");
}

/* What main's steps share: the CQs, the raw QPs (tx on side 0, rx on
 * side 1), side 0's send buffer, side 1's receive buffers (128 of 2048
 * bytes) and the short one of the LOC_LEN step. */
struct raw_ctx {
	struct droce_cq *cq0, *cq1;
	struct droce_qp *tx, *rx;
	struct tbuf sb, rb, small;
};

/* Flow errors: a flow to a UD QP, a sniffer rule, a VLAN match, a spec
 * past its rule, a VXLAN spec. The UD QP, destroyed at the end. */
static struct droce_qp *
flow_errors(struct raw_ctx *c)
{
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,
			.max_send_sge = 1, .max_recv_sge = 1 } };
	struct ibv_flow_attr a = { .type = IBV_FLOW_ATTR_NORMAL,
		.size = sizeof(a), .port = 1 };
	struct {
		struct ibv_flow_attr a;
		struct ibv_flow_spec_eth eth;
	} v;
	struct droce_qp *rc;

	rc = droce_qp_create(L.end[1].pd, &ia, c->cq1, c->cq1, NULL);
	errno = 0;
	CHECK(droce_flow_create(rc, &a) == NULL && errno == EINVAL,
		"flow to a UD QP: EINVAL");
	a.type = IBV_FLOW_ATTR_SNIFFER;
	errno = 0;
	CHECK(droce_flow_create(c->rx, &a) == NULL && errno == EOPNOTSUPP,
		"sniffer rule: EOPNOTSUPP");
	memset(&v, 0, sizeof(v));
	v.a.type = IBV_FLOW_ATTR_NORMAL;
	v.a.size = sizeof(v);
	v.a.port = 1;
	v.a.num_of_specs = 1;
	v.eth.type = IBV_FLOW_SPEC_ETH;
	v.eth.size = sizeof(v.eth);
	v.eth.mask.vlan_tag = 0xffff;
	errno = 0;
	CHECK(droce_flow_create(c->rx, &v.a) == NULL && errno == EOPNOTSUPP,
		"VLAN match: EOPNOTSUPP");
	v.eth.mask.vlan_tag = 0;
	v.eth.size = sizeof(v.eth) + 4;
	errno = 0;
	CHECK(droce_flow_create(c->rx, &v.a) == NULL && errno == EINVAL,
		"spec size past the rule: EINVAL");
	v.eth.size = sizeof(v.eth);
	v.eth.type = IBV_FLOW_SPEC_VXLAN_TUNNEL;
	errno = 0;
	CHECK(droce_flow_create(c->rx, &v.a) == NULL && errno == EOPNOTSUPP,
		"VXLAN spec: EOPNOTSUPP");
	return rc;
}

/* A UDP flow from side 0's MAC and port TCP_SPORT to rx. */
static struct droce_flow *
udp_flow(struct droce_qp *qp)
{
	struct {
		struct ibv_flow_attr a;
		struct ibv_flow_spec_eth eth;
		struct ibv_flow_spec_ipv4_ext ip;
		struct ibv_flow_spec_tcp_udp udp;
	} r;

	memset(&r, 0, sizeof(r));
	r.a.type = IBV_FLOW_ATTR_NORMAL;
	r.a.size = sizeof(r);
	r.a.num_of_specs = 3;
	r.a.port = 1;
	r.eth.type = IBV_FLOW_SPEC_ETH;
	r.eth.size = sizeof(r.eth);
	memcpy(r.eth.val.src_mac, L.end[0].mac, 6);
	memset(r.eth.mask.src_mac, 0xff, 6);
	r.ip.type = IBV_FLOW_SPEC_IPV4_EXT;
	r.ip.size = sizeof(r.ip);
	r.ip.val.proto = 17;
	r.ip.mask.proto = 0xff;
	r.udp.type = IBV_FLOW_SPEC_UDP;
	r.udp.size = sizeof(r.udp);
	r.udp.val.src_port = __builtin_bswap16(TCP_SPORT);
	r.udp.mask.src_port = 0xffff;
	return droce_flow_create(qp, &r.a);
}

/* No flow yet: a frame for side 1 goes nowhere. A UDP flow steers it:
 * whole frame, sums filled in by IP_CSUM; rx EBUSY while it has it. */
static void
steer_udp(struct raw_ctx *c)
{
	struct droce_flow *fl;
	struct ibv_send_wr wr;
	struct ibv_sge s;
	struct ibv_wc wc;
	uint32_t hl;
	uint8_t *f;

	post_recvs(c->rx, &c->rb, 128, 2048);
	hl = headers(c->sb.p, 17, 0);
	pattern(c->sb.p + hl, 100, 1);
	put16(c->sb.p + 16, (uint16_t)(20 + 8 + 100));
	put16(c->sb.p + 38, 8 + 100);
	s = sge_of(&c->sb, 0, hl + 100);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 7;
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_IP_CSUM;
	CHECK_EQ(send_wr(c->tx, &wr), 0, "raw SEND");
	CHECK_EQ(wait_wc(&L, c->cq0, &wc, 1000000), 0, "send completion");
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_SEND &&
		wc.wr_id == 7, "SEND completes as IBV_WC_SEND");
	fl_run_idle(&L, 1000000);
	CHECK_EQ(droce_cq_poll(c->cq1, &wc, 1), 0,
		"no flow: nothing received");

	fl = udp_flow(c->rx);
	CHECK(fl != NULL, "UDP flow");
	wr.wr_id = 8;
	CHECK_EQ(send_wr(c->tx, &wr), 0, "raw SEND again");
	CHECK_EQ(wait_wc(&L, c->cq0, &wc, 1000000), 0, "send completion");
	CHECK_EQ(wait_wc(&L, c->cq1, &wc, 1000000), 0, "UDP frame received");
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV &&
		wc.byte_len == hl + 100 && wc.qp_num == droce_qp_num(c->rx),
		"RECV, byte_len the whole frame (%u)", wc.byte_len);
	CHECK(wc.wc_flags & IBV_WC_IP_CSUM_OK, "IP_CSUM_OK");
	f = c->rb.p + wc.wr_id * 2048;
	CHECK(memcmp(f, c->sb.p, 14) == 0 && pattern_ok(f + hl, 100, 1),
		"frame bytes");
	CHECK(sums_ok(f, wc.byte_len), "IPv4 and UDP sums filled in");
	CHECK_EQ(droce_qp_destroy(c->rx), -EBUSY,
		"destroy with a flow: EBUSY");
	CHECK_EQ(droce_flow_destroy(fl), 0, "destroy flow");
}

/*
 * TSO: 64 KB in MSS segments to a TCP flow, cut by droce; then by a NIC
 * that cuts frames of up to 64 segments (droce hands it one of 45
 * segments, the IPv4 length's limit, and cuts the last itself), but not
 * one with CWR, which only the first segment may carry. The TCP flow,
 * left for the steps after.
 */
static struct droce_flow *
tso_cases(struct raw_ctx *c)
{
	struct droce_flow *fl;

	fl = tcp_flow(c->rx, TCP_DPORT);
	CHECK(fl != NULL, "TCP flow");
	tso_run(c->tx, c->rx, c->cq0, c->cq1, &c->sb, &c->rb,
		0x80 | 0x10 | 0x08 | 0x01, "droce");
	CHECK_EQ(L.tso_frames[0], 0, "no NIC TSO: droce cut every segment");
	fl_set_tso(&L, 64);
	tso_run(c->tx, c->rx, c->cq0, c->cq1, &c->sb, &c->rb,
		0x10 | 0x08 | 0x01, "the NIC");
	CHECK(L.tso_frames[0] == 1 && L.tso_segments[0] == 45,
		"the NIC cut one frame into 45 segments (%llu, %llu)",
		(unsigned long long)L.tso_frames[0],
		(unsigned long long)L.tso_segments[0]);
	tso_run(c->tx, c->rx, c->cq0, c->cq1, &c->sb, &c->rb,
		0x80 | 0x10 | 0x08 | 0x01, "droce (CWR)");
	CHECK_EQ(L.tso_frames[0], 1, "with CWR, droce cut every segment");
	fl_set_tso(&L, 0);
	return fl;
}

/*
 * Packet pacing: 10 frames of 1000 bytes at 8 Mbit/s take at least 9
 * gaps of (1000 + 24) * 8 / 8e6 s, less the 200 us a QP may catch up by.
 * The TCP flow takes them.
 */
static void
pacing(struct raw_ctx *c)
{
	struct ibv_qp_attr a;
	uint64_t t0 = L.now, gap = (1000 + 24) * 8 * 1000000ull / 8000;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge s;
	struct ibv_wc wc;
	uint32_t i;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.rate_limit = 200000000;
	CHECK_EQ(droce_qp_modify(c->tx, &a, IBV_QP_STATE | IBV_QP_RATE_LIMIT,
		NULL), -EINVAL, "rate over the maximum: EINVAL");
	a.rate_limit = 8000;
	CHECK_EQ(droce_qp_modify(c->tx, &a, IBV_QP_STATE | IBV_QP_RATE_LIMIT,
		NULL), 0, "rate limit 8 Mbit/s");
	headers(c->sb.p, 6, 0x10);
	put16(c->sb.p + 16, (uint16_t)(1000 - 14));
	s = sge_of(&c->sb, 0, 1000);
	memset(&wr, 0, sizeof(wr));
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	for (i = 0; i < 10; i++) {
		wr.wr_id = 100 + i;
		wr.send_flags = i == 9 ? IBV_SEND_SIGNALED : 0;
		CHECK_EQ(droce_qp_post_send(c->tx, &wr, &bad), 0, "paced post");
	}
	CHECK_EQ(wait_wc(&L, c->cq0, &wc, 100000000), 0, "paced sends done");
	CHECK(wc.wr_id == 109 && L.now - t0 >= 9 * gap - 200000 &&
		L.now - t0 < 12 * gap, "10 frames took %llu ns (gap %llu)",
		(unsigned long long)(L.now - t0), (unsigned long long)gap);
	a.rate_limit = 0;
	CHECK_EQ(droce_qp_modify(c->tx, &a, IBV_QP_STATE | IBV_QP_RATE_LIMIT,
		NULL), 0, "rate limit off");
	/* the TCP flow took them: drain and repost */
	for (i = 0; i < 10; i++) {
		struct ibv_sge rs;
		struct ibv_recv_wr rw = { .num_sge = 1 }, *rbad;

		if (wait_wc(&L, c->cq1, &wc, 1000000) != 0)
			break;
		rs = sge_of(&c->rb, (wc.wr_id % 128) * 2048, 2048);
		rw.wr_id = wc.wr_id + 128;
		rw.sg_list = &rs;
		droce_qp_post_recv(c->rx, &rw, &rbad);
	}
	CHECK_EQ(i, 10, "10 paced frames received");
}

/* Posting rules: a TSO header that is not Eth/IP/TCP, a TSO segment or
 * a frame past the MTU, a WRITE. */
static void
posting_rules(struct raw_ctx *c)
{
	struct ibv_send_wr wr;
	struct ibv_sge s;
	uint8_t hdr[64];
	uint32_t hl;

	memset(&wr, 0, sizeof(wr));
	hl = headers(hdr, 6, 0x10);
	s = sge_of(&c->sb, 0, TSO_LEN);
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_TSO;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.tso.hdr = hdr;
	wr.tso.hdr_sz = (uint16_t)(hl - 1);
	CHECK_EQ(send_wr(c->tx, &wr), EINVAL,
		"TSO header not Eth/IP/TCP: EINVAL");
	wr.tso.hdr_sz = (uint16_t)hl;
	wr.tso.mss = 1500;
	CHECK_EQ(send_wr(c->tx, &wr), EINVAL,
		"TSO segment past the MTU: EINVAL");
	wr.opcode = IBV_WR_SEND;
	s.length = 1500 + 14 + 4 + 1;
	CHECK_EQ(send_wr(c->tx, &wr), EINVAL, "frame past the MTU: EINVAL");
	wr.opcode = IBV_WR_RDMA_WRITE;
	s.length = 100;
	CHECK_EQ(send_wr(c->tx, &wr), EINVAL, "WRITE on a raw QP: EINVAL");
}

/* A frame longer than the receive buffer: LOC_LEN_ERR, nothing written
 * past the buffer (c->small); the TCP flow fl to the big buffers goes
 * first. */
static void
loc_len(struct raw_ctx *c, struct droce_flow *fl)
{
	struct droce_qp *rx2;
	struct ibv_sge rs, s;
	struct ibv_recv_wr rw = { .wr_id = 77, .sg_list = &rs, .num_sge = 1 };
	struct ibv_recv_wr *bad;
	struct ibv_send_wr wr;
	struct ibv_wc wc;
	uint32_t hl, i;
	int n;

	CHECK_EQ(droce_flow_destroy(fl), 0, "destroy TCP flow");
	tbuf_init(&c->small, L.end[1].pd, 256, IBV_ACCESS_LOCAL_WRITE);
	memset(c->small.p, 0x5a, 256);
	rx2 = raw_qp(1, c->cq1, 1);
	rs = sge_of(&c->small, 0, 64);
	CHECK_EQ(droce_qp_post_recv(rx2, &rw, &bad), 0, "small recv");
	fl = tcp_flow(rx2, TCP_DPORT + 1);
	CHECK(fl != NULL, "flow to the small QP");
	hl = headers(c->sb.p, 6, 0x10);
	put16(c->sb.p + 36, TCP_DPORT + 1);
	put16(c->sb.p + 16, 40 + 100);
	s = sge_of(&c->sb, 0, hl + 100);
	memset(&wr, 0, sizeof(wr));
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr_id = 10;
	CHECK_EQ(send_wr(c->tx, &wr), 0, "long frame");
	CHECK_EQ(wait_wc(&L, c->cq0, &wc, 1000000), 0, "send completion");
	CHECK_EQ(wait_wc(&L, c->cq1, &wc, 1000000), 0, "receive completion");
	CHECK(wc.wr_id == 77 && wc.status == IBV_WC_LOC_LEN_ERR,
		"LOC_LEN_ERR (status %d)", wc.status);
	for (i = 0, n = 0; i < 256; i++)
		n += c->small.p[i] != 0x5a;
	CHECK_EQ(n, 0, "nothing written");
	CHECK_EQ(droce_qp_state(rx2), IBV_QPS_RTS, "QP goes on");
	CHECK_EQ(droce_flow_destroy(fl), 0, "destroy");
	CHECK_EQ(droce_qp_destroy(rx2), 0, "destroy small QP");
}

/* RoCE beside a flow that takes every frame it is offered: an RC SEND
 * still reaches its RC QP, the raw QP sees nothing. */
static void
roce_beside_catch_all(struct raw_ctx *c)
{
	struct ibv_flow_attr all = { .type = IBV_FLOW_ATTR_NORMAL,
		.size = sizeof(all), .port = 1 };
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			.max_send_sge = 1, .max_recv_sge = 1 } };
	struct droce_qp *rca = droce_qp_create(L.end[0].pd, &ia, c->cq0,
		c->cq0, NULL);
	struct droce_qp *rcb = droce_qp_create(L.end[1].pd, &ia, c->cq1,
		c->cq1, NULL);
	struct ibv_sge rs = sge_of(&c->rb, 0, 4096), s;
	struct ibv_recv_wr rw = { .wr_id = 999, .sg_list = &rs,
		.num_sge = 1 };
	struct ibv_recv_wr *rbad;
	struct ibv_send_wr wr;
	struct droce_flow *fl;
	struct fl_qp_opts o;
	struct ibv_wc wc;

	fl = droce_flow_create(c->rx, &all);
	CHECK(fl != NULL, "a flow with no spec (every non-RoCE frame)");
	fl_qp_opts_default(&o);
	CHECK_EQ(fl_connect(&L, rca, rcb, &o), 0, "RC pair");
	CHECK_EQ(droce_qp_post_recv(rcb, &rw, &rbad), 0, "RC recv");
	pattern(c->sb.p, 3000, 5);
	s = sge_of(&c->sb, 0, 3000);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 11;
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	CHECK_EQ(send_wr(rca, &wr), 0, "RC SEND");
	CHECK_EQ(wait_wc(&L, c->cq1, &wc, 10000000), 0, "RC receive");
	CHECK(wc.wr_id == 999 && wc.status == IBV_WC_SUCCESS &&
		wc.byte_len == 3000 && wc.qp_num == droce_qp_num(rcb) &&
		pattern_ok(c->rb.p, 3000, 5),
		"the RC SEND reached its QP, not the raw one (wr %llu "
		"status %d len %u qp %u)", (unsigned long long)wc.wr_id,
		wc.status, wc.byte_len, wc.qp_num);
	CHECK_EQ(wait_wc(&L, c->cq0, &wc, 10000000), 0, "RC send done");
	fl_run_idle(&L, 1000000);
	CHECK_EQ(droce_cq_poll(c->cq1, &wc, 1), 0, "nothing for the raw QP");
	CHECK_EQ(droce_flow_destroy(fl), 0, "destroy the catch-all");
	CHECK_EQ(droce_qp_destroy(rca), 0, "destroy RC");
	CHECK_EQ(droce_qp_destroy(rcb), 0, "destroy RC");
}

int
main(void)
{
	struct raw_ctx c;
	struct droce_flow *tcp;
	struct droce_qp *ud;

	CHECK_EQ(fl_init(&L, 99, 1500), 0, "link");
	c.cq0 = droce_cq_create(L.end[0].dev, 0, 256);
	c.cq1 = droce_cq_create(L.end[1].dev, 0, 256);
	c.tx = raw_qp(0, c.cq0, 4);
	c.rx = raw_qp(1, c.cq1, 128);
	tbuf_init(&c.sb, L.end[0].pd, TSO_LEN + 4096, IBV_ACCESS_LOCAL_WRITE);
	tbuf_init(&c.rb, L.end[1].pd, 128 * 2048, IBV_ACCESS_LOCAL_WRITE);

	ud = flow_errors(&c);
	steer_udp(&c);
	tcp = tso_cases(&c);
	pacing(&c);
	posting_rules(&c);
	loc_len(&c, tcp);
	roce_beside_catch_all(&c);

	CHECK_EQ(droce_qp_destroy(ud), 0, "destroy UD");
	CHECK_EQ(droce_qp_destroy(c.rx), 0, "destroy rx");
	CHECK_EQ(droce_qp_destroy(c.tx), 0, "destroy tx");
	tbuf_fini(&c.small);
	tbuf_fini(&c.sb);
	tbuf_fini(&c.rb);
	droce_cq_destroy(c.cq0);
	droce_cq_destroy(c.cq1);
	fl_fini(&L);
	return check_report("transport_raw_packet");
}
