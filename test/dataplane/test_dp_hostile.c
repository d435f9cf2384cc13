/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * A hostile peer on droce's segment: hand-built RoCEv2 frames injected
 * through a veth (an AF_PACKET socket on one end, droce's net_af_packet
 * port on the other) into an RC QP in RTS with a registered MR. Each case
 * asserts the answer on the wire (read back on the socket), the QP's state
 * and the counters, and that the MR and the receive buffers are byte for
 * byte what they must be: unchanged for every rejected request.
 *
 * test_dp_hostile DROCE_IFACE PEER_IFACE (both ends in one netns; root)
 *
 * Here the port, the RC QP and its memory, the frames on the socket and
 * the checks every case makes, and the order of the cases; the cases, by
 * kind of hostility:
 *  - test_dp_hostile_addr.c: frames not for the QP, or damaged;
 *  - test_dp_hostile_nak.c: lengths and padding, the NAK classes;
 *  - test_dp_hostile_ibta15.c: IBTA 1.5 ATOMIC WRITE and FLUSH;
 *  - test_dp_hostile_xrc.c: XRC requests.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "dp_hostile_rc.h"

struct droce_port *port;
struct droce_dev *dev;
struct droce_pd *pd;
struct droce_cq *cq;
struct droce_qp *qp;
struct droce_mr *mr, *rmr;
uint8_t *mem, *rmem;		/* the MR; the receive buffers */
uint8_t shadow[MR_LEN], rshadow[RECV_LEN * NRECV];
uint8_t droce_mac[6], peer_mac[6];
static int sock = -1, peer_ifindex;
uint32_t epsn;			/* the responder's expected PSN */

/* check.h's counts, for the RC cases' files */
int check_failures;
int check_count;

void
gid4(uint8_t gid[16], uint32_t ip)
{
	droce_gid_from_ipv4(gid, ip);
}

static int
iface_mac(const char *name, uint8_t mac[6], int *ifindex)
{
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	if (fd < 0 || ioctl(fd, SIOCGIFHWADDR, &ifr) != 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
	if (ioctl(fd, SIOCGIFINDEX, &ifr) != 0) {
		close(fd);
		return -1;
	}
	*ifindex = ifr.ifr_ifindex;
	close(fd);
	return 0;
}

static int
iface_promisc(const char *name)
{
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM, 0), on;

	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	on = fd >= 0 && ioctl(fd, SIOCGIFFLAGS, &ifr) == 0 &&
		(ifr.ifr_flags & IFF_PROMISC);
	if (fd >= 0)
		close(fd);
	return on;
}

static int
peer_socket(const char *name)
{
	struct sockaddr_ll sll;
	int s;

	if (iface_mac(name, peer_mac, &peer_ifindex) != 0)
		return -1;
	s = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
	if (s < 0)
		return -1;
	memset(&sll, 0, sizeof(sll));
	sll.sll_family = AF_PACKET;
	sll.sll_protocol = htons(ETH_P_ALL);
	sll.sll_ifindex = peer_ifindex;
	if (bind(s, (struct sockaddr *)&sll, sizeof(sll)) != 0) {
		close(s);
		return -1;
	}
	return s;
}

/* RESET, then INIT/RTR/RTS towards the fake peer, receives posted. */
void
qp_connect(void)
{
	struct ibv_qp_attr a;
	struct droce_av av;
	int i;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RESET;
	CHECK_EQ(droce_qp_modify(qp, &a, IBV_QP_STATE, NULL), 0, "to RESET");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
		DROCE_ACCESS_FLUSH_GLOBAL | DROCE_ACCESS_FLUSH_PERSISTENT;
	CHECK_EQ(droce_qp_modify(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
		IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, NULL), 0, "to INIT");
	memset(&a, 0, sizeof(a));
	memset(&av, 0, sizeof(av));
	memcpy(av.dmac, peer_mac, 6);
	gid4(av.dgid, PEER_IP);
	av.sgid_index = 1;
	av.hop_limit = 64;
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_256;
	a.dest_qp_num = PEER_QPN;
	a.rq_psn = RQ_PSN;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	CHECK_EQ(droce_qp_modify(qp, &a, IBV_QP_STATE | IBV_QP_AV |
		IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER, &av), 0,
		"to RTR");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0x5000;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 4;
	CHECK_EQ(droce_qp_modify(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
		IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
		IBV_QP_MAX_QP_RD_ATOMIC, NULL), 0, "to RTS");
	epsn = RQ_PSN;
	for (i = 0; i < NRECV; i++) {
		struct ibv_sge s = {
			.addr = (uintptr_t)(rmem + i * RECV_LEN),
			.length = RECV_LEN, .lkey = droce_mr_lkey(rmr),
		};
		struct ibv_recv_wr wr = { .wr_id = (uint64_t)i, .sg_list = &s,
			.num_sge = 1 }, *bad;

		CHECK_EQ(droce_qp_post_recv(qp, &wr, &bad), 0, "post recv");
	}
	/* drain the flushed completions of the last case */
	for (;;) {
		struct ibv_wc wc;

		if (droce_cq_poll(cq, &wc, 1) != 1)
			break;
	}
}

/* A request from the peer to the QP, as a well-behaved peer builds it. */
void
pkt_init(struct droce_pkt *p, uint8_t opcode, uint32_t psn)
{
	memset(p, 0, sizeof(*p));
	memcpy(p->dst_mac, droce_mac, 6);
	memcpy(p->src_mac, peer_mac, 6);
	p->ip_ver = 4;
	p->ttl = 64;
	p->ip_df = 1;
	gid4(p->sgid, PEER_IP);
	gid4(p->dgid, DROCE_IP);
	p->udp_sport = 0xc123;
	p->udp_dport = DROCE_ROCE_UDP_PORT;
	p->opcode = opcode;
	p->pkey = 0xffff;
	p->dqpn = droce_qp_num(qp);
	p->ackreq = (droce_opcode_info[opcode].flags & DROCE_OPF_END) != 0;
	p->psn = psn;
}

void
write_pkt(struct droce_pkt *p, uint8_t opcode, uint64_t off, uint32_t dma_len,
		const uint8_t *payload, uint32_t plen)
{
	pkt_init(p, opcode, epsn);
	p->reth_va = (uintptr_t)(mem + off);
	p->reth_rkey = droce_mr_rkey(mr);
	p->reth_len = dma_len;
	p->payload = payload;
	p->payload_len = plen;
}

void
inject(const uint8_t *f, uint32_t len)
{
	CHECK_EQ(send(sock, f, len, 0), (ssize_t)len, "inject a frame");
}

int
build(struct droce_pkt *p, uint8_t *f, uint32_t cap)
{
	int len = droce_wire_build(p, f, cap);

	CHECK(len > 0, "build a frame: %d", len);
	return len;
}

/*
 * Run droce and read the peer's socket until droce answers (the answer
 * parsed into *ans: 1) or until the quiet time passes (0). Frames that
 * are not droce's RoCE are skipped.
 */
int
answer(struct droce_pkt *ans, uint64_t quiet_ns)
{
	static uint8_t buf[9216];
	uint64_t end = droce_now_ns() + quiet_ns;
	struct pollfd pfd = { .fd = sock, .events = POLLIN };

	while (droce_now_ns() < end) {
		ssize_t n;

		droce_port_progress(port, 0);
		if (poll(&pfd, 1, 1) <= 0)
			continue;
		n = recv(sock, buf, sizeof(buf), MSG_DONTWAIT);
		if (n <= 0 || memcmp(buf + 6, droce_mac, 6) != 0)
			continue;
		if (droce_wire_parse(buf, (uint32_t)n, NULL, ans) == 0)
			return 1;
	}
	return 0;
}

struct droce_tp_stats
stats(void)
{
	struct droce_tp_stats st;

	droce_port_lock(port, 0);
	droce_tp_queue_stats(droce_dev_queue(dev, 0), &st);
	droce_port_unlock(port, 0);
	return st;
}

void
snapshot(void)
{
	memcpy(shadow, mem, MR_LEN);
	memcpy(rshadow, rmem, sizeof(rshadow));
}

void
expect_unchanged(const char *what)
{
	CHECK(memcmp(shadow, mem, MR_LEN) == 0, "%s: MR unchanged", what);
	CHECK(memcmp(rshadow, rmem, sizeof(rshadow)) == 0,
		"%s: receive buffers unchanged", what);
}

/* The answer must be an ACK/NAK of this syndrome for this PSN. */
void
expect_aeth(const char *what, uint8_t syndrome, uint32_t psn)
{
	struct droce_pkt a;

	if (!answer(&a, 2000000000ull)) {
		CHECK(0, "%s: no answer on the wire", what);
		return;
	}
	CHECK(a.opcode == DROCE_OP_RC_ACK, "%s: answered with opcode 0x%x",
		what, a.opcode);
	CHECK(a.aeth_syndrome == syndrome,
		"%s: syndrome 0x%02x, want 0x%02x", what, a.aeth_syndrome,
		syndrome);
	CHECK(a.psn == psn, "%s: PSN 0x%x, want 0x%x", what, a.psn, psn);
	CHECK_EQ(a.dqpn, PEER_QPN, "answer to the peer's QP");
}

void
expect_silence(const char *what)
{
	struct droce_pkt a;

	CHECK(!answer(&a, NO_ANSWER_NS), "%s: droce answered (opcode 0x%x)",
		what, a.opcode);
}

void
expect_state(const char *what, enum ibv_qp_state want)
{
	CHECK(droce_qp_state(qp) == want, "%s: QP state %d, want %d", what,
		(int)droce_qp_state(qp), (int)want);
}

/*
 * A request at the expected PSN whose frame is changed by mutate() after
 * building (the IP sum and ICRC fixed again: an authentic frame, as a
 * hostile peer builds it): the given NAK for its PSN, the QP in ERR, and
 * not one byte placed.
 */
void
case_nak(const char *what, struct droce_pkt *p, uint8_t nak,
		void (*mutate)(uint8_t *f, uint32_t *len))
{
	uint8_t f[4096];
	uint32_t len;

	len = (uint32_t)build(p, f, sizeof(f));
	if (mutate != NULL) {
		mutate(f, &len);
		frame_fix_ipv4_csum(f);
		frame_fix_icrc(f, len);
	}
	inject(f, len);
	expect_aeth(what, nak, p->psn);
	expect_state(what, IBV_QPS_ERR);
	expect_unchanged(what);
}

#define ST(field) (offsetof(struct droce_tp_stats, field) / sizeof(uint64_t))

int
main(int argc, char **argv)
{
	static const uint8_t other_mac[6] = { 0x02, 0, 0, 0, 0, 0x99 };
	static const uint8_t mcast_mac[6] = { 0x01, 0, 0x5e, 0, 0, 1 };
	struct droce_port_conf conf;
	struct ibv_qp_init_attr ia;
	uint8_t gid[16];
	char eal[256], devargs[256];
	int ifindex, i;

	if (argc < 3) {
		fprintf(stderr, "usage: %s DROCE_IFACE PEER_IFACE\n", argv[0]);
		return 2;
	}
	sock = peer_socket(argv[2]);
	if (sock < 0 || iface_mac(argv[1], droce_mac, &ifindex) != 0) {
		fprintf(stderr, "no interfaces %s/%s: %s\n", argv[1], argv[2],
			strerror(errno));
		return 1;
	}
	snprintf(eal, sizeof(eal), "--no-huge -m 512 --no-pci "
		"--file-prefix dphostile%d --log-level=lib.eal:4 "
		"--log-level=pmd:4", (int)getpid());
	snprintf(devargs, sizeof(devargs),
		"net_af_packet0,iface=%s,framecnt=4096,qdisc_bypass=0", argv[1]);
	droce_port_conf_init(&conf);
	conf.eal_args = eal;
	conf.devargs = devargs;
	conf.mode = DROCE_PROGRESS_INLINE;
	conf.ipv4 = DROCE_IP;
	/* rte_flow rules where the PMD takes them (net_af_packet does not:
	 * the port must open all the same, filtering in software) */
	conf.rx_hw_filter = DROCE_OFFLOAD_ON;
	port = droce_port_open(&conf);
	if (port == NULL) {
		fprintf(stderr, "test_dp_hostile: no port on %s: %s\n", argv[1],
			strerror(errno));
		return 1;
	}
	/* droce's MAC is the interface's own: no need to see everything */
	CHECK(!iface_promisc(argv[1]), "%s not promiscuous", argv[1]);
	dev = droce_port_dev(port);
	gid4(gid, PEER_IP);
	droce_port_add_neighbor(port, gid, peer_mac);
	pd = droce_pd_alloc(dev);
	mem = aligned_alloc(64, MR_LEN);
	rmem = aligned_alloc(64, sizeof(rshadow));
	for (i = 0; i < MR_LEN; i++)
		mem[i] = (uint8_t)(i * 13 + 7);
	memset(rmem, 0xcc, sizeof(rshadow));
	mr = droce_mr_reg(pd, mem, MR_LEN, (uintptr_t)mem,
		IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
		DROCE_ACCESS_FLUSH_GLOBAL);
	rmr = droce_mr_reg(pd, rmem, sizeof(rshadow), (uintptr_t)rmem,
		IBV_ACCESS_LOCAL_WRITE);
	cq = droce_cq_create(dev, 0, 64);
	memset(&ia, 0, sizeof(ia));
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = 16;
	ia.cap.max_recv_wr = 16;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	qp = droce_qp_create(pd, &ia, cq, cq, NULL);
	if (pd == NULL || mr == NULL || rmr == NULL || cq == NULL || qp == NULL) {
		fprintf(stderr, "test_dp_hostile: verbs objects: %s\n",
			strerror(errno));
		return 1;
	}

	case_control("valid WRITE ONLY", 0);
	/* link-layer padding beyond the minimum frame: the IP length rules */
	case_control("valid WRITE ONLY with a 16-byte trailer", 16);
	case_refused("another host's MAC", other_mac, 0, 0, 0, ST(rx_drop_mac));
	case_refused("a multicast MAC", mcast_mac, 0, 0, 0, ST(rx_drop_mcast));
	case_refused("another host's IP", NULL, OTHER_IP, 0, 0, ST(rx_drop_ip));
	case_refused("from another host than the QP's peer", NULL, 0, OTHER_IP,
		0, ST(rx_drop_src));
	case_refused("another P_Key", NULL, 0, 0, 0x8001, ST(rx_drop_noqp));
	case_icrc();
	cases_length();
	case_send_middle_pad();
	cases_classes();
	cases_atomic_write();
	cases_flush();
	{
		int n = 0;

		check_failures += cases_xrc(&n);
		check_count += n;
	}

	droce_qp_destroy(qp);
	droce_cq_destroy(cq);
	droce_mr_dereg(mr);
	droce_mr_dereg(rmr);
	droce_pd_dealloc(pd);
	droce_port_close(port);
	close(sock);
	free(mem);
	free(rmem);
	return check_report("test_dp_hostile");
}
