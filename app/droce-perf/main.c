/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/*
 * droce-perf: RDMA benchmark over droce, client and server like perftest,
 * with every figure printed beside the raw rate of the same PMD measured
 * in the same run (plain rte_eth_tx_burst/rx_burst, same frame sizes).
 *
 *   droce-perf --server --vdev net_memif0,role=server,socket=/tmp/m.sock \
 *              --ip 10.0.0.1 [--port 18515]
 *   droce-perf --client --vdev net_memif0,role=client,socket=/tmp/m.sock \
 *              --ip 10.0.0.2 --peer-ip 10.0.0.1 --op write --size 64
 */

#include <arpa/inet.h>
#include <getopt.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

#include "droce_conf.h"
#include "perf.h"

static const char *const op_names[OP_NB] = {
	"write", "write_imm", "send", "read", "fetch_add", "cmp_swap",
};

static struct {
	int server;
	const char *vdev, *eal, *ip, *peer_ip, *json, *sc_addr, *ip6;
	int timeout;
	int port;
	uint32_t mtu;
	uint32_t zc_min;		/* --zero-copy; 0: the port's default */
	uint32_t sr, sr_window;		/* --sr, --sr-window */
	int cc_none;			/* --cc none */
	uint32_t line_rate;		/* --line-rate */
	int ops[OP_NB], nops;
	uint32_t sizes[32], nsizes;
	uint32_t iters, nqp, queues, cores, depth, post_list, cq_mod, repeat;
	uint32_t outs;			/* --outs; 0: the device's maximum */
	int inline_data, lat, verify, raw, live, json_out, static_neigh;
	int expect_handoffs;
	uint32_t expect_path_mtu;
	double duration;
	struct droce_fault_conf fault;
} opt = {
	.port = 18515, .iters = 10000, .nqp = 1, .queues = 1, .cores = 1, .depth = 64,
	.post_list = 1, .cq_mod = 1, .repeat = 1, .duration = 0, .sc_addr = "127.0.0.1", .timeout = 14,
};

static struct droce_port *port;
static struct droce_pd *pd;
static struct droce_cq *cq[16];
static struct droce_qp *qp[PERF_MAX_QP];
static uint8_t *mem;
static size_t memsz;
static struct droce_mr *mr;
static struct perf_info me, peer;
static int sc = -1;
static uint32_t mtu_bytes = 1024;

/* Each QP's slot of the MR: a message of up to PERF_MAX_SIZE bytes, and
 * an atomic's result in its last 8 bytes. */
#define PERF_MAX_SIZE (1u << 20)
#define SLOT_SZ ((size_t)PERF_MAX_SIZE + 4096u)
#define SLOT(i) ((size_t)(i) * SLOT_SZ)

static uint32_t
qp_queue(uint32_t i)
{
	return droce_qpn_queue(droce_port_dev(port), droce_qp_num(qp[i]));
}

static void
progress_all(void)
{
	uint32_t q;

	for (q = 0; q < opt.queues; q++)
		droce_port_progress(port, q);
}

static void
pattern(uint8_t *p, size_t n, uint32_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)((i * 2654435761u + seed) >> 11);
}

static int
pattern_ok(const uint8_t *p, size_t n, uint32_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != (uint8_t)((i * 2654435761u + seed) >> 11))
			return 0;
	return 1;
}

/* Frames whose payload left by reference, over all queues. */
static uint64_t
zc_frames(void)
{
	struct droce_tp_stats st;
	uint64_t n = 0;
	uint32_t i;

	for (i = 0; i < opt.queues; i++) {
		droce_port_lock(port, i);
		droce_tp_queue_stats(droce_dev_queue(droce_port_dev(port), i),
			&st);
		droce_port_unlock(port, i);
		n += st.tx_zc_pkts;
	}
	return n;
}

#define WR_ID_QP_SHIFT 40

/* The first error completion of a run: which QP, and what its transport
 * counted. */
static void
qp_report(uint32_t i, const struct ibv_wc *wc)
{
	struct droce_tp_stats st;
	uint32_t q = qp_queue(i);

	droce_port_lock(port, q);
	droce_qp_stats(qp[i], &st);
	droce_port_unlock(port, q);
	fprintf(stderr, "completion: %s (QP %u, QPN 0x%x, queue %u, WR %" PRIu64
		"): rx %" PRIu64 " retransmits %" PRIu64 " timeouts %" PRIu64
		" rewinds %" PRIu64 " seq-NAK rx %" PRIu64 " tx %" PRIu64
		" dup rx %" PRIu64 " out-of-seq rx %" PRIu64 " acks rx %" PRIu64
		"\n", droce_wc_status_str(wc->status), i, droce_qp_num(qp[i]), q,
		(uint64_t)(wc->wr_id & ((1ull << WR_ID_QP_SHIFT) - 1)),
		st.rx_pkts, st.retransmits, st.timeouts, st.rewinds,
		st.nak_seq_rx, st.nak_seq_tx, st.dup_rx, st.out_of_seq_rx,
		st.acks_rx);
}

/* This side's NIC-side counters, summed over its queues. */
static struct droce_port_queue_stats
nic_stats(void)
{
	struct droce_port_queue_stats sum, st;
	uint32_t i, k;

	memset(&sum, 0, sizeof(sum));
	for (i = 0; i < opt.queues; i++)
		if (droce_port_queue_stats(port, i, &st) == 0)
			for (k = 0; k < sizeof(st) / sizeof(uint64_t); k++)
				((uint64_t *)&sum)[k] += ((uint64_t *)&st)[k];
	return sum;
}

/* Frames this side received on one queue for a QP of another. */
static uint64_t
handoffs(void)
{
	return nic_stats().handoffs;
}

/* Frames per PMD burst on this side: what the PMD's per-call cost is
 * spread over. */
static void
burst_report(const char *who)
{
	struct droce_port_queue_stats st = nic_stats();

	fprintf(stderr, "droce-perf %s: frames per burst: rx %.1f (%" PRIu64
		" bursts), tx %.1f (%" PRIu64 " bursts)\n", who,
		st.rx_bursts ? (double)st.rx_pkts / st.rx_bursts : 0.0,
		st.rx_bursts, st.tx_bursts ?
		(double)st.tx_pkts / st.tx_bursts : 0.0, st.tx_bursts);
}

/*
 * With zero-copy on, frames big enough must have gone by reference: the
 * client's WRITEs and SENDs, the server's READ responses (both sides run
 * with the same options).
 */
static int
zc_check(uint64_t server_frames)
{
	uint32_t min = droce_port_zc_min(port), i, s, payload;
	uint64_t client_frames = zc_frames();
	int want_client = 0, want_server = 0;

	/* inline data and IPv6 frames are always copied */
	if (min == 0 || opt.inline_data || opt.ip6 != NULL)
		return 0;
	for (i = 0; i < (uint32_t)opt.nops; i++)
		for (s = 0; s < opt.nsizes; s++) {
			payload = opt.sizes[s] < (uint32_t)mtu_bytes ?
				opt.sizes[s] : (uint32_t)mtu_bytes;
			if (payload < min || opt.ops[i] == OP_FADD ||
					opt.ops[i] == OP_CSWAP)
				continue;
			if (opt.ops[i] == OP_READ)
				want_server = 1;
			else
				want_client = 1;
		}
	if (!opt.json_out)
		printf(" zero-copy frames (payload >= %u bytes): client %" PRIu64
			", server %" PRIu64 "\n", min, client_frames,
			server_frames);
	if ((want_client && client_frames == 0) ||
			(want_server && server_frames == 0)) {
		fprintf(stderr, "droce-perf: zero-copy is on but no frame "
			"went by reference\n");
		return -1;
	}
	return 0;
}

static int
parse_sizes(const char *s)
{
	char buf[256], *t, *save = NULL;

	snprintf(buf, sizeof(buf), "%s", s);
	for (t = strtok_r(buf, ",", &save); t && opt.nsizes < 32;
			t = strtok_r(NULL, ",", &save))
		opt.sizes[opt.nsizes++] = (uint32_t)strtoul(t, NULL, 0);
	return 0;
}

static void
usage(FILE *f)
{
	fprintf(f,
"usage: droce-perf --server|--client --vdev DEVARGS --ip A.B.C.D [options]\n"
"Message rate, bandwidth and latency of droce's transport and data path\n"
"between two processes, each test beside the raw rate of the same PMD.\n"
"  --server, --client  the side; the client runs the tests\n"
"  --vdev DEVARGS      the DPDK device (as DROCE_DEVARGS)\n"
"  --ip A.B.C.D        this side's address\n"
"  --peer-ip A.B.C.D   the server (client side)\n"
"  --port N            TCP side channel port on loopback (18515)\n"
"  --op OP[,OP..]      write write_imm send read fetch_add cmp_swap all\n"
"  --size N[,N..]      message sizes, at most 1 MB; --sweep: 64..65536\n"
"  --iters N           messages per test (10000)\n"
"  --qps N             queue pairs (1)    --queues N  DPDK queues (1)\n"
"  --cores N           worker lcores (1): each owns queues q with\n"
"                      q %% N == its index and their QPs (--eal -l needs\n"
"                      N lcores)\n"
"  --depth N           WRs in flight per QP (64)\n"
"  --post-list N       WRs per ibv_post_send call (1)\n"
"  --cq-mod N          signal one WR in N, as perftest's --cq-mod (1)\n"
"  --outs N            READs/atomics outstanding per QP (max_rd_atomic);\n"
"                      as perftest's -o, the device's maximum by default\n"
"  --repeat N          run each test N times, droce and raw alternating;\n"
"                      print the run of median ratio and the range (1)\n"
"  --inline            inline data      --lat  latency mode\n"
"  --verify            check every byte and every completion\n"
"  --raw               also measure the raw PMD rate (default on)\n"
"  --no-raw            do not\n"
"  --fault drop,dup,reorder,corrupt[,delay,us]  fault injection in ppm\n"
"                      on receive (both sides), delay for `us` microseconds\n"
"  --fault-frames N    faults only in the first N frames received\n"
"  --static-neigh      take the peer MAC from the side channel, no ARP\n"
"  --expect-handoffs   fail unless some frames reached their QP's queue\n"
"                      through the hand-off ring (either side)\n"
"  --expect-path-mtu N fail unless the port gives path MTU N bytes\n"
"  --json              print results as JSON   --live  progress lines\n"
"  --eal \"ARGS\"        EAL arguments\n"
"  --sc-addr A.B.C.D   side channel address (127.0.0.1)\n"
"  --ip6 ADDR          also an IPv6 address; QPs then use IPv6 GIDs\n"
"                      (index 2) and IPv6 neighbour discovery\n"
"  --timeout N         local ACK timeout exponent (14: 67 ms)\n"
"  --mtu N             port (Ethernet) MTU (1500: path MTU 1024; 4200 or\n"
"                      more: 4096); both sides must agree\n"
"  --zero-copy N       send payloads of N bytes or more from the MR\n"
"                      itself (external mbufs); off on virtual devices\n"
"                      unless given; --no-zero-copy: never\n"
"  --sr                selective repeat on every RC QP (both sides must\n"
"                      say so); --sr-window N: its window in PSNs\n"
"  --cc dcqcn|none     congestion control: a QP that receives a CNP is\n"
"                      paced at DCQCN's rate (dcqcn), or not (none)\n"
"  --line-rate MBPS    the rate DCQCN starts from (the link's, else\n"
"                      100000); DCQCN's parameters and the other\n"
"                      congestion keys from the environment (DROCE_RP_*,\n"
"                      DROCE_NP_*, DROCE_CC=delay: doc/congestion.md)\n"
"  -h, --help          this text\n"
"See droce-perf(1) and doc/perf.md.\n");
}

static int
faults_on(void)
{
	return opt.fault.drop_ppm || opt.fault.dup_ppm ||
		opt.fault.reorder_ppm || opt.fault.corrupt_ppm ||
		opt.fault.delay_ppm;
}

/*
 * Under fault injection, what recovery cost (test/bench-loss.sh reads
 * it): both transports' frames sent, the client's retransmissions and
 * timeouts, the NAKs and replays, what it sent again alone (READ holes,
 * selective repeat) and the SACKs it took. One test per run gives one
 * test's figures.
 */
static void
loss_report(const struct perf_cmd *srv)
{
	struct droce_tp_stats st;

	droce_port_lock(port, 0);
	droce_tp_queue_stats(droce_dev_queue(droce_port_dev(port), 0), &st);
	droce_port_unlock(port, 0);
	printf(" transport: client tx %" PRIu64 " server tx %" PRIu64
		" retransmits %" PRIu64 " timeouts %" PRIu64 " seq-NAK rx %"
		PRIu64 " out-of-seq %" PRIu64 " read-replays %" PRIu64
		" dup %" PRIu64 " resent %" PRIu64 " sack-rx %" PRIu64 "\n",
		st.tx_pkts, srv->srv_tx, st.retransmits, st.timeouts,
		st.nak_seq_rx, st.out_of_seq_rx, srv->srv_read_replays,
		st.dup_rx + srv->srv_dup_rx, st.resent_pkts, st.sack_rx);
}

/*
 * Congestion: frames that came CE-marked, CNPs sent and acted on, and
 * the slowest QP's rate now (test/bench-incast.sh reads it). Nothing
 * when no frame met congestion.
 */
static void
cc_report(const char *side)
{
	struct droce_tp_stats st;
	struct droce_qp_cc cc;
	uint64_t slowest = UINT64_MAX;
	uint32_t i, limited = 0;

	droce_port_lock(port, 0);
	droce_tp_queue_stats(droce_dev_queue(droce_port_dev(port), 0), &st);
	for (i = 0; i < opt.nqp; i++) {
		droce_qp_cc(qp[i], &cc);
		limited += cc.limited;
		if (cc.rate_mbps < slowest)
			slowest = cc.rate_mbps;
	}
	droce_port_unlock(port, 0);
	if (st.np_ecn_marked + st.rp_cnp_handled + st.rp_cnp_ignored == 0)
		return;
	fprintf(stderr, "droce-perf %s: congestion: ecn-marked %" PRIu64
		" cnp-sent %" PRIu64 " cnp-handled %" PRIu64 " cnp-ignored %"
		PRIu64 " qps-limited %u slowest %" PRIu64 " Mbit/s\n", side,
		st.np_ecn_marked, st.np_cnp_sent, st.rp_cnp_handled,
		st.rp_cnp_ignored, limited, slowest);
}

static int
parse_args(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "server", no_argument, NULL, 'S' },
		{ "client", no_argument, NULL, 'C' },
		{ "vdev", required_argument, NULL, 'v' },
		{ "eal", required_argument, NULL, 'e' },
		{ "ip", required_argument, NULL, 'i' },
		{ "peer-ip", required_argument, NULL, 'P' },
		{ "port", required_argument, NULL, 'p' },
		{ "op", required_argument, NULL, 'o' },
		{ "size", required_argument, NULL, 's' },
		{ "sweep", no_argument, NULL, 'w' },
		{ "iters", required_argument, NULL, 'n' },
		{ "qps", required_argument, NULL, 'q' },
		{ "queues", required_argument, NULL, 'Q' },
		{ "cores", required_argument, NULL, 'c' },
		{ "depth", required_argument, NULL, 'd' },
		{ "post-list", required_argument, NULL, 'l' },
		{ "cq-mod", required_argument, NULL, 'm' },
		{ "outs", required_argument, NULL, 'O' },
		{ "repeat", required_argument, NULL, 'k' },
		{ "inline", no_argument, NULL, 'I' },
		{ "lat", no_argument, NULL, 'L' },
		{ "verify", no_argument, NULL, 'V' },
		{ "raw", no_argument, NULL, 'r' },
		{ "no-raw", no_argument, NULL, 'R' },
		{ "fault", required_argument, NULL, 'f' },
		{ "fault-frames", required_argument, NULL, 'F' },
		{ "static-neigh", no_argument, NULL, 'N' },
		{ "expect-handoffs", no_argument, NULL, 'H' },
		{ "expect-path-mtu", required_argument, NULL, 'X' },
		{ "json", no_argument, NULL, 'j' },
		{ "live", no_argument, NULL, 'y' },
		{ "sc-addr", required_argument, NULL, 'A' },
		{ "ip6", required_argument, NULL, '6' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "mtu", required_argument, NULL, 'M' },
		{ "zero-copy", required_argument, NULL, 'z' },
		{ "no-zero-copy", no_argument, NULL, 'Z' },
		{ "sr", no_argument, NULL, 'B' },
		{ "sr-window", required_argument, NULL, 'W' },
		{ "cc", required_argument, NULL, 'U' },
		{ "line-rate", required_argument, NULL, 'G' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c, i;

	opt.raw = 1;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'S': opt.server = 1; break;
		case 'C': opt.server = 0; break;
		case 'v': opt.vdev = optarg; break;
		case 'e': opt.eal = optarg; break;
		case 'i': opt.ip = optarg; break;
		case 'P': opt.peer_ip = optarg; break;
		case 'p': opt.port = atoi(optarg); break;
		case 'o':
			if (strcmp(optarg, "all") == 0) {
				for (i = 0; i < OP_NB; i++)
					opt.ops[opt.nops++] = i;
				break;
			}
			for (i = 0; i < OP_NB; i++)
				if (strstr(optarg, op_names[i]) &&
						opt.nops < OP_NB)
					opt.ops[opt.nops++] = i;
			/* "write" matches write_imm's name too: be exact */
			if (strcmp(optarg, "write") == 0) {
				opt.nops = 1;
				opt.ops[0] = OP_WRITE;
			}
			break;
		case 's': parse_sizes(optarg); break;
		case 'w': parse_sizes("64,256,1024,4096,16384,65536"); break;
		case 'n': opt.iters = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'q': opt.nqp = (uint32_t)atoi(optarg); break;
		case 'Q': opt.queues = (uint32_t)atoi(optarg); break;
		case 'c': opt.cores = (uint32_t)atoi(optarg); break;
		case 'd': opt.depth = (uint32_t)atoi(optarg); break;
		case 'l': opt.post_list = (uint32_t)atoi(optarg); break;
		case 'm': opt.cq_mod = (uint32_t)atoi(optarg); break;
		case 'O':
			opt.outs = (uint32_t)atoi(optarg);
			if (opt.outs == 0) {
				usage(stderr);
				return -1;
			}
			break;
		case 'k': opt.repeat = (uint32_t)atoi(optarg); break;
		case 'I': opt.inline_data = 1; break;
		case 'L': opt.lat = 1; break;
		case 'V': opt.verify = 1; break;
		case 'r': opt.raw = 1; break;
		case 'R': opt.raw = 0; break;
		case 'f':
			sscanf(optarg, "%u,%u,%u,%u,%u,%u", &opt.fault.drop_ppm,
				&opt.fault.dup_ppm, &opt.fault.reorder_ppm,
				&opt.fault.corrupt_ppm, &opt.fault.delay_ppm,
				&opt.fault.delay_us);
			break;
		case 'F':
			opt.fault.frames = strtoull(optarg, NULL, 0);
			break;
		case 'N': opt.static_neigh = 1; break;
		case 'H': opt.expect_handoffs = 1; break;
		case 'X':
			opt.expect_path_mtu = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'j': opt.json_out = 1; break;
		case 'y': opt.live = 1; break;
		case 'A': opt.sc_addr = optarg; break;
		case '6': opt.ip6 = optarg; break;
		case 'T': opt.timeout = atoi(optarg); break;
		case 'M': opt.mtu = (uint32_t)atoi(optarg); break;
		case 'z': opt.zc_min = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'Z': opt.zc_min = DROCE_ZC_OFF; break;
		case 'B': opt.sr = 1; break;
		case 'W': opt.sr_window = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'U':
			if (strcmp(optarg, "none") != 0 &&
					strcmp(optarg, "dcqcn") != 0) {
				fprintf(stderr, "droce-perf: --cc %s: want dcqcn "
					"or none\n", optarg);
				return -1;
			}
			opt.cc_none = strcmp(optarg, "none") == 0;
			break;
		case 'G':
			opt.line_rate = (uint32_t)strtoul(optarg, NULL, 0);
			if (opt.line_rate == 0) {
				fprintf(stderr, "droce-perf: --line-rate %s: "
					"want Mbit/s\n", optarg);
				return -1;
			}
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
	}
	if (opt.vdev == NULL || opt.ip == NULL ||
			(!opt.server && opt.peer_ip == NULL) || opt.nqp == 0 ||
			opt.nqp > PERF_MAX_QP || opt.queues == 0 ||
			opt.queues > 16 || opt.depth == 0 || opt.post_list == 0 ||
			opt.cq_mod == 0 || opt.repeat == 0 || opt.repeat > 15 ||
			opt.cores == 0 || opt.cores > opt.queues) {
		usage(stderr);
		return -1;
	}
	if (opt.lat && opt.cores > 1) {
		fprintf(stderr, "droce-perf: --lat runs on one core\n");
		return -1;
	}
	/* a 5-bit field in the QP: refused here, not as an EINVAL from
	 * modify QP after the peers have connected */
	if (opt.timeout < 0 || opt.timeout > 31) {
		fprintf(stderr, "droce-perf: --timeout %d: the local ACK timeout "
			"is an exponent, 0 to 31 (4.096 us x 2^N; 0: none)\n",
			opt.timeout);
		return -1;
	}
	/* a window needs a signaled WR in it, or it never reopens */
	if (opt.lat)
		opt.cq_mod = 1;
	else if (opt.cq_mod > opt.depth)
		opt.cq_mod = opt.depth;
	if (opt.nops == 0)
		opt.ops[opt.nops++] = OP_WRITE;
	if (opt.nsizes == 0)
		opt.sizes[opt.nsizes++] = 64;
	for (i = 0; i < (int)opt.nsizes; i++)
		if (opt.sizes[i] > PERF_MAX_SIZE) {
			fprintf(stderr, "droce-perf: message size %u: at most "
				"%u bytes\n", opt.sizes[i], PERF_MAX_SIZE);
			return -1;
		}
	return 0;
}

/* The largest SEND the client will make: the server sizes its receive
 * buffers for it (0 when no SEND is asked for). */
static uint32_t
max_send_size(void)
{
	uint32_t m = 0;
	int i, s;

	for (i = 0; i < opt.nops; i++)
		if (opt.ops[i] == OP_SEND)
			for (s = 0; s < (int)opt.nsizes; s++)
				if (opt.sizes[s] > m)
					m = opt.sizes[s];
	return m;
}

/*
 * Congestion control's keys from the environment, as the library reads
 * them (doc/congestion.md): DROCE_RP_*, DROCE_NP_MIN_TIME_BETWEEN_CNPS,
 * DROCE_CC_DELAY_*, DROCE_CC=delay; the options above take precedence
 * for --cc none and --line-rate. A malformed key stops droce-perf.
 */
static void
cc_conf_env(struct droce_port_conf *pc)
{
	static char err[256];
	struct droce_conf c;

	if (droce_conf_check(err, sizeof(err)) != 0) {
		fprintf(stderr, "%s\n", err);
		exit(2);
	}
	droce_conf_load(&c);
	pc->dcqcn_set = c.dcqcn_set;
	pc->dcqcn = c.dcqcn;
	pc->np_min_time_between_cnps_ns = c.np_gap_ns;
	pc->np_cnp_dscp = c.np_cnp_dscp;
	pc->no_ecn = (uint8_t)c.no_ecn;
	pc->delay_target_ns = c.delay_target_ns;
	pc->delay_ai_mbps = c.delay_ai_mbps;
	if (!opt.cc_none && c.cc == DROCE_CC_DELAY)
		pc->cc = DROCE_CC_DELAY;
	if (!opt.line_rate)
		pc->line_rate_mbps = c.line_rate_mbps;
}

static int
setup(void)
{
	struct droce_port_conf pc;
	struct ibv_qp_init_attr ia;
	struct in_addr a;
	uint32_t i;

	droce_port_conf_init(&pc);
	pc.eal_args = opt.eal;
	pc.devargs = opt.vdev;
	pc.nb_queues = opt.queues;
	if (opt.mtu)
		pc.mtu = opt.mtu;
	pc.tx_zc_min = opt.zc_min;
	pc.selective_repeat = (uint8_t)opt.sr;
	pc.sr_window = opt.sr_window;
	pc.cc = opt.cc_none ? DROCE_CC_NONE : DROCE_CC_DCQCN;
	pc.line_rate_mbps = opt.line_rate;
	cc_conf_env(&pc);
	pc.mode = DROCE_PROGRESS_INLINE;
	inet_pton(AF_INET, opt.ip, &a);
	pc.ipv4 = ntohl(a.s_addr);
	if (opt.ip6 && inet_pton(AF_INET6, opt.ip6, pc.ipv6) != 1) {
		fprintf(stderr, "droce-perf: bad --ip6 %s\n", opt.ip6);
		return -1;
	}
	memcpy(me.ipv6, pc.ipv6, 16);
	pc.fault_rx = opt.fault;
	pc.fault_rx.seed = 11 + (uint64_t)opt.server;
	pc.name = opt.server ? "perf-server" : "perf-client";
	port = droce_port_open(&pc);
	if (port == NULL) {
		fprintf(stderr, "droce-perf: cannot open %s: %s\n", opt.vdev,
			strerror(errno));
		return -1;
	}
	mtu_bytes = droce_mtu_to_bytes(droce_eth_mtu_to_path_mtu(
		droce_dev_conf(droce_port_dev(port))->eth_mtu));
	if (opt.expect_path_mtu && mtu_bytes != opt.expect_path_mtu) {
		fprintf(stderr, "droce-perf: path MTU %u, expected %u\n",
			mtu_bytes, opt.expect_path_mtu);
		droce_port_close(port);
		return -1;
	}
	pd = droce_pd_alloc(droce_port_dev(port));
	for (i = 0; i < opt.queues; i++)
		cq[i] = droce_cq_create(droce_port_dev(port), i, 4096);
	memset(&ia, 0, sizeof(ia));
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = opt.depth < 64 ? 64 : opt.depth;
	ia.cap.max_recv_wr = 512;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	ia.cap.max_inline_data = 256;
	for (i = 0; i < opt.nqp; i++) {
		/* progress may run already: hold the queue it walks */
		droce_port_lock(port, i % opt.queues);
		qp[i] = droce_qp_create(pd, &ia, cq[i % opt.queues],
			cq[i % opt.queues], NULL);
		droce_port_unlock(port, i % opt.queues);
		if (qp[i] == NULL) {
			fprintf(stderr, "droce-perf: QP: %s\n", strerror(errno));
			return -1;
		}
	}
	memsz = (size_t)PERF_MAX_QP * SLOT_SZ;
	mem = aligned_alloc(4096, memsz);
	memset(mem, 0, memsz);
	mr = droce_mr_reg(pd, mem, memsz, (uint64_t)(uintptr_t)mem,
		IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	me.nqp = opt.nqp;
	for (i = 0; i < opt.nqp; i++) {
		me.qpn[i] = droce_qp_num(qp[i]);
		me.psn[i] = (uint32_t)rand() & 0xffffff;
	}
	me.addr = (uint64_t)(uintptr_t)mem;
	me.rkey = droce_mr_rkey(mr);
	me.max_send = max_send_size();
	me.ipv4 = pc.ipv4;
	rte_eth_macaddr_get(droce_port_id(port), (struct rte_ether_addr *)me.mac);
	return 0;
}

/*
 * The server's answer on the side channel; meanwhile the port goes on
 * being progressed, as a NIC answers ARP and ND whatever its host does:
 * a server still resolving our address waits on us (nine busy processes
 * on two CPUs: fabric_incast_ecn_ipv6's receiver once timed out its
 * neighbour discovery while its sender sat in a blocking recv).
 */
static int
sc_recv_progress(int fd, void *b, size_t n)
{
	uint32_t q;

	while (!sc_ready(fd))
		for (q = 0; q < opt.queues; q++)
			droce_port_progress(port, q);
	return sc_recv(fd, b, n);
}

static int
connect_qps(void)
{
	struct ibv_qp_attr a;
	struct droce_av av;
	uint32_t i, max_rd;
	int rc;

	memset(&av, 0, sizeof(av));
	droce_gid_from_ipv4(av.dgid, peer.ipv4);
	av.sgid_index = 1;
	if (opt.ip6) {
		memcpy(av.dgid, peer.ipv6, 16);
		av.sgid_index = 2;
	}
	av.hop_limit = 64;
	if (opt.static_neigh) {
		memcpy(av.dmac, peer.mac, 6);
		droce_port_add_neighbor(port, av.dgid, peer.mac);
	} else {
		rc = droce_port_resolve(port, av.dgid, av.dmac, 10000);
		if (rc) {
			fprintf(stderr, "droce-perf: ARP for the peer: %s\n",
				strerror(-rc));
			return -1;
		}
	}
	/* as perftest: the device's maximum unless -o/--outs says less; the
	 * responder offers the maximum so a peer's --outs always fits */
	max_rd = droce_dev_limits(droce_port_dev(port))->max_qp_rd_atom;
	if (opt.outs > max_rd) {
		fprintf(stderr, "droce-perf: --outs %u above the device's %u,"
			" using %u\n", opt.outs, max_rd, max_rd);
		opt.outs = max_rd;
	} else if (opt.outs == 0) {
		opt.outs = max_rd;
	}
	for (i = 0; i < opt.nqp; i++) {
		uint32_t q = qp_queue(i);

		droce_port_lock(port, q);
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_INIT;
		a.port_num = 1;
		a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			IBV_ACCESS_REMOTE_ATOMIC;
		rc = droce_qp_modify(qp[i], &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, NULL);
		a.qp_state = IBV_QPS_RTR;
		a.path_mtu = (enum ibv_mtu)droce_bytes_to_mtu(mtu_bytes);
		a.dest_qp_num = peer.qpn[i];
		a.rq_psn = peer.psn[i];
		a.max_dest_rd_atomic = (uint8_t)max_rd;
		a.min_rnr_timer = 12;
		if (rc == 0)
			rc = droce_qp_modify(qp[i], &a, IBV_QP_STATE |
				IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				IBV_QP_MIN_RNR_TIMER, &av);
		a.qp_state = IBV_QPS_RTS;
		a.sq_psn = me.psn[i];
		a.timeout = (uint8_t)opt.timeout;
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.max_rd_atomic = (uint8_t)opt.outs;
		if (rc == 0)
			rc = droce_qp_modify(qp[i], &a, IBV_QP_STATE |
				IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC, NULL);
		droce_port_unlock(port, q);
		if (rc) {
			fprintf(stderr, "droce-perf: modify QP %u (INIT, RTR, RTS): %s\n",
				i, strerror(-rc));
			return -1;
		}
	}
	return 0;
}

/* ---- worker lcores ---- */

/*
 * With --cores N, worker w owns the queues q with q % N == w and the QPs
 * that live on them: no two threads touch one queue, as in an application
 * that gives droce one core per queue. Worker 0 is the main lcore.
 */
struct worker {
	uint32_t id, lcore;
	uint32_t nq, q[16];
	uint32_t nqp, qi[PERF_MAX_QP];
	uint64_t total;			/* client: messages completed */
	int bad;
	uint64_t *lat;
	uint64_t raw_sent, raw_got;	/* raw baseline */
	uint64_t recv_count, recv_bad;	/* server */
	int seen;			/* server: the phase it acts on */
} __rte_cache_aligned;

static struct worker workers[16];
static int (*worker_job)(struct worker *w);

static int
worker_entry(void *arg)
{
	return worker_job(arg);
}

static int
setup_workers(void)
{
	uint32_t i, n = 1, lc;

	if (rte_lcore_count() < opt.cores) {
		fprintf(stderr, "droce-perf: --cores %u needs %u lcores, EAL has"
			" %u (--eal \"-l ...\")\n", opt.cores, opt.cores,
			rte_lcore_count());
		return -1;
	}
	workers[0].lcore = rte_get_main_lcore();
	RTE_LCORE_FOREACH_WORKER(lc) {
		if (n >= opt.cores)
			break;
		workers[n++].lcore = lc;
	}
	if (opt.cores > 1) {
		/* droce_port_open gave the main thread its CPUs back; a
		 * worker of the main lcore stays on that lcore's CPU */
		rte_cpuset_t cs = rte_lcore_cpuset(workers[0].lcore);

		rte_thread_set_affinity(&cs);
	}
	for (i = 0; i < opt.cores; i++)
		workers[i].id = i;
	for (i = 0; i < opt.queues; i++) {
		struct worker *w = &workers[i % opt.cores];

		w->q[w->nq++] = i;
	}
	for (i = 0; i < opt.nqp; i++) {
		struct worker *w = &workers[qp_queue(i) % opt.cores];

		w->qi[w->nqp++] = i;
	}
	return 0;
}

/* Run job on every worker, worker 0 on this thread; 0 if all gave 0. */
static int
run_workers(int (*job)(struct worker *w))
{
	uint32_t i;
	int rc;

	worker_job = job;
	for (i = 1; i < opt.cores; i++)
		rte_eal_remote_launch(worker_entry, &workers[i],
			workers[i].lcore);
	rc = job(&workers[0]);
	for (i = 1; i < opt.cores; i++)
		rc |= rte_eal_wait_lcore(workers[i].lcore);
	return rc;
}

static void
progress_worker(struct worker *w)
{
	uint32_t j;

	for (j = 0; j < w->nq; j++)
		droce_port_progress(port, w->q[j]);
}

/* ---- raw PMD baseline ---- */

/* Frame size on the wire for one packet of a message of `size` bytes. */
static uint32_t
frame_size(uint32_t size)
{
	uint32_t pl = size > mtu_bytes ? mtu_bytes : size;

	return 14 + 20 + 8 + 12 + 16 + pl + ((0u - pl) & 3) + 4;
}

/* Packets of a message of `size` bytes (one for an empty one). */
static uint32_t
msg_frames(uint32_t size)
{
	return size > mtu_bytes ? (size + mtu_bytes - 1) / mtu_bytes : 1;
}

/* Byte 14 of a raw latency frame: the last of its message, echo it. */
#define RAW_ECHO_ME 1
/* What the raw echo sends back: a minimum frame, as droce's ACK is small. */
#define RAW_ECHO_LEN 60
/* Round trips per queue before the first test: net_memif's largest
 * default ring is 1,024 slots; this is four laps of it. */
#define WARM_UP_RTTS 4096
/* ... or this long per queue: where more lcores spin than there are CPUs
 * (tests run two workers a side on two CPUs) a round trip can wait for a
 * time slice, and the warm-up must not turn into a minute. */
#define WARM_UP_MAX_NS 200000000ull

static struct rte_mempool *
raw_pool(struct worker *w)
{
	struct rte_mempool *mp;
	char name[64];

	snprintf(name, sizeof(name), "raw%d_%u", getpid(), w->id);
	mp = rte_mempool_lookup(name);
	if (mp == NULL)
		mp = rte_pktmbuf_pool_create(name, 4095, 256, 0,
			RTE_MBUF_DEFAULT_BUF_SIZE + 4096, (int)rte_socket_id());
	return mp;
}

static uint32_t raw_frame_len;
static uint64_t raw_deadline;

/* A raw frame of len bytes: broadcast, not RoCE (the peer's droce ignores
 * it: IEEE local experimental EtherType), byte 14 = mark. */
static void
raw_frame_fill(struct rte_mbuf *m, uint32_t len, uint8_t mark)
{
	uint8_t *d = rte_pktmbuf_mtod(m, uint8_t *);

	memset(d, 0xff, 6);
	memcpy(d + 6, me.mac, 6);
	d[12] = 0x88;
	d[13] = 0xb5;
	d[14] = mark;
	m->data_len = m->pkt_len = (uint16_t)len;
}

/* Send frames of the size droce sends on the worker's queues, as fast as
 * the PMD takes them, until raw_deadline. */
static int
raw_tx_job(struct worker *w)
{
	struct rte_mempool *mp = raw_pool(w);
	struct rte_mbuf *m[32];
	uint16_t pid = droce_port_id(port);
	uint64_t sent = 0;
	uint32_t j = 0;
	int i, n;

	w->raw_sent = 0;
	if (mp == NULL)
		return -1;
	do {
		if (rte_pktmbuf_alloc_bulk(mp, m, 32) == 0) {
			for (i = 0; i < 32; i++)
				raw_frame_fill(m[i], raw_frame_len, 0);
			n = rte_eth_tx_burst(pid, (uint16_t)w->q[j], m, 32);
			sent += (uint64_t)n;
			if (n < 32)
				rte_pktmbuf_free_bulk(m + n, 32 - n);
			j = j + 1 == w->nq ? 0 : j + 1;
		}
	} while (droce_now_ns() < raw_deadline);
	w->raw_sent = sent;
	return 0;
}

static double
raw_client(uint32_t size, double secs, uint64_t *sent_out)
{
	uint64_t sent = 0, t0;
	uint32_t i;

	raw_frame_len = frame_size(size);
	t0 = droce_now_ns();
	raw_deadline = t0 + (uint64_t)(secs * 1e9);
	run_workers(raw_tx_job);
	for (i = 0; i < opt.cores; i++)
		sent += workers[i].raw_sent;
	*sent_out = sent;
	return (double)sent / ((droce_now_ns() - t0) / 1e9);
}

static int cmp_u64(const void *a, const void *b);
static uint64_t raw_server_count;

/*
 * Raw round trip of a message, p50 in us: its frames out (a 64 KB
 * message at path MTU 1024 is 64 of them, the last one shorter), and the
 * server echoes one minimum frame when the last arrives. That is what a
 * droce WRITE or SEND waits for (its packets out, one ACK back); a READ
 * is the mirror image (one request out, its responses back).
 */
static double
raw_rtt_client(uint16_t qid, uint32_t size, uint32_t iters, uint64_t max_ns)
{
	struct rte_mbuf *m[32], *in[32];
	struct rte_mempool *mp = raw_pool(&workers[0]);
	uint16_t pid = droce_port_id(port);
	uint64_t *t = calloc(iters, sizeof(*t)), t0;
	uint32_t i, k, got = 0, nfr = msg_frames(size), left, burst, sent;
	uint32_t lost_run = 0;
	uint64_t start = droce_now_ns();
	double p50;
	int n = 0, lost;

	if (mp == NULL || t == NULL) {
		free(t);
		return 0;
	}
	for (i = 0; i < iters; i++) {
		t0 = droce_now_ns();
		if (t0 - start > max_ns)
			break;
		lost = 0;
		for (left = nfr; left > 0 && !lost; left -= burst) {
			burst = left > 32 ? 32 : left;
			if (rte_pktmbuf_alloc_bulk(mp, m, burst) != 0) {
				lost = 1;
				break;
			}
			for (k = 0; k < burst; k++) {
				uint32_t last = left - k == 1;

				raw_frame_fill(m[k], frame_size(last ? size -
					(nfr - 1) * mtu_bytes : mtu_bytes),
					last ? RAW_ECHO_ME : 0);
			}
			/* a full ring is retried, not dropped: every frame of
			 * the message must go */
			for (sent = 0; sent < burst; ) {
				sent += rte_eth_tx_burst(pid, qid, m + sent,
					(uint16_t)(burst - sent));
				if (sent < burst &&
						droce_now_ns() - t0 > 100000000ull) {
					rte_pktmbuf_free_bulk(m + sent,
						burst - sent);
					lost = 1;
					break;
				}
			}
		}
		if (lost)
			continue;
		for (;;) {
			n = rte_eth_rx_burst(pid, qid, in, 32);
			if (n) {
				rte_pktmbuf_free_bulk(in, (unsigned int)n);
				break;
			}
			if (droce_now_ns() - t0 > 100000000ull)
				break;	/* lost: do not count it */
		}
		if (n) {
			t[got++] = droce_now_ns() - t0;
			lost_run = 0;
		} else if (++lost_run == 10) {
			break;	/* 1 s without an echo: the peer is not there */
		}
	}
	qsort(t, got, sizeof(*t), cmp_u64);
	p50 = got ? t[got / 2] / 1000.0 : 0;
	free(t);
	return p50;
}

/* One receive pass over the worker's queues; echo (latency mode): send
 * back, as a minimum frame, each frame that ends a message. Returns the
 * frames received. */
static uint64_t
raw_rx_pass(struct worker *w, int echo)
{
	struct rte_mbuf *m[64], *back[64];
	uint16_t pid = droce_port_id(port);
	uint64_t got = 0;
	uint32_t j;
	int n, i, nb, k;

	for (j = 0; j < w->nq; j++) {
		n = rte_eth_rx_burst(pid, (uint16_t)w->q[j], m, 64);
		if (n == 0)
			continue;
		got += (uint64_t)n;
		if (!echo) {
			rte_pktmbuf_free_bulk(m, (unsigned int)n);
			continue;
		}
		for (i = nb = 0; i < n; i++) {
			uint8_t *d = rte_pktmbuf_mtod(m[i], uint8_t *);

			if (m[i]->data_len >= RAW_ECHO_LEN &&
					d[14] == RAW_ECHO_ME) {
				if (m[i]->next != NULL) {	/* a chained frame */
					rte_pktmbuf_free(m[i]->next);
					m[i]->next = NULL;
					m[i]->nb_segs = 1;
				}
				m[i]->data_len = m[i]->pkt_len = RAW_ECHO_LEN;
				back[nb++] = m[i];
			} else {
				rte_pktmbuf_free(m[i]);
			}
		}
		k = nb ? rte_eth_tx_burst(pid, (uint16_t)w->q[j], back,
			(uint16_t)nb) : 0;
		if (k < nb)
			rte_pktmbuf_free_bulk(back + k, (unsigned int)(nb - k));
	}
	return got;
}

/* ---- the client side of one test ---- */

struct result {
	int op;
	uint32_t size;
	uint64_t msgs;
	double secs, mps, gbps;
	double lat_avg, lat_p50, lat_p99;
	double raw_fps, raw_gbps, ratio, raw_lat_p50;
	double ratio_min, ratio_max;	/* over --repeat runs */
	int ok;
};

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The part of QP i's WRs that stays the same for a whole test; refill_wr
 * sets the rest per WR. */
static void
fill_wr(struct ibv_send_wr *wr, struct ibv_sge *sge, int op, uint32_t size,
		uint32_t i)
{
	uint64_t raddr = peer.addr + SLOT(i);

	memset(wr, 0, sizeof(*wr));
	sge->addr = (uint64_t)(uintptr_t)(mem + SLOT(i));
	sge->length = size;
	sge->lkey = droce_mr_lkey(mr);
	wr->sg_list = sge;
	wr->num_sge = 1;
	wr->send_flags = IBV_SEND_SIGNALED;
	if (opt.inline_data && size <= 256 &&
			(op == OP_WRITE || op == OP_WRITE_IMM || op == OP_SEND))
		wr->send_flags |= IBV_SEND_INLINE;
	switch (op) {
	case OP_WRITE:
	case OP_WRITE_IMM:
		wr->opcode = op == OP_WRITE ? IBV_WR_RDMA_WRITE :
			IBV_WR_RDMA_WRITE_WITH_IMM;
		wr->wr.rdma.remote_addr = raddr;
		wr->wr.rdma.rkey = peer.rkey;
		break;
	case OP_SEND:
		wr->opcode = IBV_WR_SEND;
		break;
	case OP_READ:
		wr->opcode = IBV_WR_RDMA_READ;
		wr->wr.rdma.remote_addr = raddr;
		wr->wr.rdma.rkey = peer.rkey;
		break;
	case OP_FADD:
	case OP_CSWAP:
		/* the result lands after the data region of the slot */
		sge->addr = (uint64_t)(uintptr_t)(mem + SLOT(i) +
			SLOT_SZ - 8);
		sge->length = 8;
		wr->opcode = op == OP_FADD ? IBV_WR_ATOMIC_FETCH_AND_ADD :
			IBV_WR_ATOMIC_CMP_AND_SWP;
		wr->wr.atomic.remote_addr = raddr;
		wr->wr.atomic.rkey = peer.rkey;
		if (op == OP_FADD)
			wr->wr.atomic.compare_add = 1;
		break;
	default:
		break;
	}
}

static int cur_op;
static uint32_t cur_size;
static uint64_t cur_per_qp;

/* --cq-mod: every cq_mod-th WR of a QP and its last one are signaled */
static inline int
signal_wr(uint64_t seq)
{
	return (seq + 1) % opt.cq_mod == 0 || seq + 1 == cur_per_qp;
}

/*
 * What changes from one WR of a QP to the next (k: its sequence number).
 * The rest was built once per test by fill_wr, as perftest builds its WRs
 * once: filling the whole WR per post was ~60 of the client's ~1,630
 * instructions per 64-byte WRITE.
 */
static inline void
refill_wr(struct ibv_send_wr *wr, int op, uint64_t k, uint64_t wr_id,
		int signaled)
{
	wr->wr_id = wr_id;
	wr->next = NULL;
	if (signaled)
		wr->send_flags |= IBV_SEND_SIGNALED;
	else
		wr->send_flags &= ~IBV_SEND_SIGNALED;
	switch (op) {
	case OP_WRITE_IMM:
		wr->imm_data = htonl((uint32_t)k);
		break;
	case OP_CSWAP:
		wr->wr.atomic.compare_add = k;
		/* fall through */
	case OP_FADD:
		wr->wr.atomic.swap = k + 1;
		break;
	default:
		break;
	}
}

/* One worker's part of a test: keep every one of its QPs' windows full,
 * make progress on its queues, count its completions. */
static int
client_job(struct worker *w)
{
	uint64_t posted[PERF_MAX_QP] = { 0 }, done[PERF_MAX_QP] = { 0 };
	uint64_t want = cur_per_qp * w->nqp, t_post = 0, next_live, n_done;
	uint32_t j, q, depth = opt.lat ? 1 : opt.depth;
	uint32_t pl = opt.post_list < 64 ? opt.post_list : 64;
	uint32_t sig_count[PERF_MAX_QP] = { 0 };
	struct ibv_send_wr *wrs_all;
	struct ibv_sge *sges_all;
	struct ibv_wc wc[64];
	int n, k, rc = 0;

	w->total = 0;
	w->bad = 0;
	/* each QP's post_list WRs, built once for this test */
	wrs_all = calloc((size_t)w->nqp * pl, sizeof(*wrs_all));
	sges_all = calloc((size_t)w->nqp * pl, sizeof(*sges_all));
	if (wrs_all == NULL || sges_all == NULL) {
		free(wrs_all);
		free(sges_all);
		w->bad = 1;
		return -1;
	}
	for (j = 0; j < w->nqp; j++)
		for (k = 0; k < (int)pl; k++)
			fill_wr(&wrs_all[j * pl + k], &sges_all[j * pl + k],
				cur_op, cur_size, w->qi[j]);
	next_live = droce_now_ns() + 1000000000ull;
	while (w->total < want) {
		for (j = 0; j < w->nqp; j++) {
			uint32_t i = w->qi[j], m;
			struct ibv_send_wr *wrs = &wrs_all[j * pl], *bad_wr;

			/* fill the window, post_list WRs per post call */
		again:
			m = 0;
			while (posted[i] < cur_per_qp &&
					posted[i] - done[i] < depth && m < pl) {
				/* signal_wr without a division per WR */
				if (++sig_count[j] == opt.cq_mod)
					sig_count[j] = 0;
				refill_wr(&wrs[m], cur_op, posted[i],
					(uint64_t)i << WR_ID_QP_SHIFT |
					posted[i], sig_count[j] == 0 ||
					posted[i] + 1 == cur_per_qp);
				if (m)
					wrs[m - 1].next = &wrs[m];
				posted[i]++;
				m++;
			}
			if (m == 0)
				continue;
			q = qp_queue(i);
			if (opt.lat)
				t_post = droce_now_ns();
			droce_port_lock(port, q);
			k = droce_qp_post_send(qp[i], wrs, &bad_wr);
			droce_port_unlock(port, q);
			if (k) {
				fprintf(stderr, "post_send: %s\n", strerror(k));
				w->bad = 1;
				rc = -1;
				goto out;
			}
			if (!opt.lat)
				goto again;
		}
		progress_worker(w);
		for (j = 0; j < w->nq; j++) {
			q = w->q[j];
			droce_port_lock(port, q);
			n = droce_cq_poll(cq[q], wc, 64);
			droce_port_unlock(port, q);
			for (k = 0; k < n; k++) {
				uint32_t qi = (uint32_t)(wc[k].wr_id >>
					WR_ID_QP_SHIFT);

				if (wc[k].status != IBV_WC_SUCCESS) {
					if (!w->bad && qi < opt.nqp)
						qp_report(qi, &wc[k]);
					else
						fprintf(stderr, "completion: %s\n",
							droce_wc_status_str(
							wc[k].status));
					w->bad = 1;
				}
				/* RC completes in order: a signaled WR says
				 * that every WR before it is done too */
				n_done = 1;
				if (qi < opt.nqp) {
					uint64_t seq = wc[k].wr_id &
						((1ull << WR_ID_QP_SHIFT) - 1);

					if (seq < done[qi] || seq >= posted[qi] ||
						(opt.verify &&
						wc[k].status == IBV_WC_SUCCESS &&
						!signal_wr(seq)))
						w->bad = 1;	/* out of order */
					else
						n_done = seq + 1 - done[qi];
					done[qi] += n_done;
				}
				if (opt.lat)
					w->lat[w->total] = droce_now_ns() - t_post;
				__atomic_store_n(&w->total, w->total + n_done,
					__ATOMIC_RELAXED);
			}
		}
		if (w->bad)
			break;
		if (opt.live && w->id == 0 && droce_now_ns() > next_live) {
			uint64_t sum = 0;

			for (j = 0; j < opt.cores; j++)
				sum += __atomic_load_n(&workers[j].total,
					__ATOMIC_RELAXED);
			fprintf(stderr, "  %s %u: %" PRIu64 " of %" PRIu64 "\n",
				op_names[cur_op], cur_size, sum,
				cur_per_qp * opt.nqp);
			next_live += 1000000000ull;
		}
	}
out:
	free(wrs_all);
	free(sges_all);
	return rc;
}

static int
run_client(int op, uint32_t size, struct result *r)
{
	struct perf_cmd c = { .kind = PERF_CMD_RUN, .op = (uint32_t)op,
		.size = size, .iters = opt.iters, .seed = size * 31u + 7 };
	uint64_t per_qp = (opt.iters + opt.nqp - 1) / opt.nqp, total = 0;
	uint64_t *lat = NULL, t0;
	uint32_t i;
	int bad = 0, rc;

	memset(r, 0, sizeof(*r));
	if (op == OP_FADD || op == OP_CSWAP)
		size = 8;
	r->op = op;
	r->size = size;
	if (opt.lat)
		lat = calloc(per_qp * opt.nqp + 1, sizeof(*lat));
	workers[0].lat = lat;
	for (i = 0; i < opt.nqp; i++)
		pattern(mem + SLOT(i), size, c.seed + i);
	if (sc_send(sc, &c, sizeof(c)) || sc_recv_progress(sc, &c, sizeof(c))) {
		free(lat);
		return -1;
	}
	cur_op = op;
	cur_size = size;
	cur_per_qp = per_qp;
	t0 = droce_now_ns();
	rc = run_workers(client_job);
	r->secs = (droce_now_ns() - t0) / 1e9;
	for (i = 0; i < opt.cores; i++) {
		total += workers[i].total;
		bad |= workers[i].bad;
	}
	if (rc) {
		free(lat);
		return -1;
	}
	r->msgs = total;
	r->mps = total / r->secs;
	r->gbps = r->mps * r->size * 8 / 1e9;
	if (opt.lat && total) {
		double s = 0;

		for (i = 0; i < total; i++)
			s += (double)lat[i];
		qsort(lat, total, sizeof(*lat), cmp_u64);
		r->lat_avg = s / total / 1000.0;
		r->lat_p50 = lat[total / 2] / 1000.0;
		r->lat_p99 = lat[total * 99 / 100] / 1000.0;
	}
	free(lat);
	workers[0].lat = NULL;
	/* verification at the server (WRITE, SEND, atomics), here (READ) */
	c.kind = PERF_CMD_DONE;
	c.value = per_qp;
	if (sc_send(sc, &c, sizeof(c)) || sc_recv_progress(sc, &c, sizeof(c)))
		return -1;
	r->ok = !bad && c.value == 1;
	if (op == OP_READ && opt.verify)
		for (i = 0; i < opt.nqp; i++)
			if (!pattern_ok(mem + SLOT(i), size, c.seed + 1000 + i))
				r->ok = 0;
	if (op == OP_FADD && opt.verify)
		for (i = 0; i < opt.nqp; i++)
			if (*(uint64_t *)(mem + SLOT(i) + SLOT_SZ - 8)
					!= per_qp - 1)
				r->ok = 0;	/* the last original value */
	return 0;
}

static void
run_raw(struct result *r)
{
	struct perf_cmd c = { .kind = PERF_CMD_RAW, .flags = (uint32_t)opt.lat };
	uint64_t sent = 0;
	uint32_t pl;

	if (r->op == OP_FADD || r->op == OP_CSWAP)
		r->size = 8;
	pl = r->size > mtu_bytes ? mtu_bytes : r->size;
	if (sc_send(sc, &c, sizeof(c)) || sc_recv_progress(sc, &c, sizeof(c)))
		return;
	usleep(1000);
	if (opt.lat) {
		r->raw_lat_p50 = raw_rtt_client(0, r->size, 2000, UINT64_MAX);
		c.kind = PERF_CMD_RAW_DONE;
		if (sc_send(sc, &c, sizeof(c)) || sc_recv_progress(sc, &c, sizeof(c)))
			return;
		if (r->raw_lat_p50 > 0) {
			r->ratio = r->raw_lat_p50 / r->lat_p50;
			r->raw_gbps = r->size * 8.0 / (r->raw_lat_p50 * 1e3);
		} else {
			/* a baseline that never came back is no figure */
			fprintf(stderr, "raw baseline: no echo came back\n");
			r->ok = 0;
		}
		for (int i = 0; i < 100; i++)
			progress_all();
		return;
	}
	r->raw_fps = raw_client(r->size, r->secs > 0.3 ? 0.5 : 0.3, &sent);
	c.kind = PERF_CMD_RAW_DONE;
	if (sc_send(sc, &c, sizeof(c)) || sc_recv_progress(sc, &c, sizeof(c)))
		return;
	/* what the peer received is the rate that counts */
	if (sent)
		r->raw_fps = r->raw_fps * ((double)c.value / (double)sent);
	if (c.value == 0) {
		fprintf(stderr, "raw baseline: the server received no frame\n");
		r->ok = 0;
	}
	r->raw_gbps = r->raw_fps * pl * 8 / 1e9;
	if (r->raw_gbps > 0)
		r->ratio = r->gbps / r->raw_gbps;
	/* drain what is left of the raw frames before droce runs again */
	for (int i = 0; i < 100; i++)
		progress_all();
}

/*
 * Before the first test, one lap of raw echoes over every slot of each
 * queue's rings, both ways. The first frame through a slot of a
 * net_memif ring page-faults on its buffer in the shared region (~5 us
 * each here, every other frame of the first 1,024 with 2 KB buffers).
 * Without this, the first test paid those faults and its raw baseline,
 * which runs after it, did not: the first latency test's p99 was ~7 us
 * against ~1.8 us for the same test later in the run.
 */
static void
warm_up(void)
{
	struct perf_cmd c = { .kind = PERF_CMD_RAW, .flags = 1 };
	uint16_t q;

	if (sc_send(sc, &c, sizeof(c)) || sc_recv_progress(sc, &c, sizeof(c)))
		return;
	usleep(1000);
	for (q = 0; q < opt.queues; q++)
		raw_rtt_client(q, 64, WARM_UP_RTTS, WARM_UP_MAX_NS);
	c.kind = PERF_CMD_RAW_DONE;
	if (sc_send(sc, &c, sizeof(c)) || sc_recv_progress(sc, &c, sizeof(c)))
		return;
	for (int i = 0; i < 100; i++)
		progress_all();
}

static int
cmp_ratio(const void *a, const void *b)
{
	double x = ((const struct result *)a)->ratio;
	double y = ((const struct result *)b)->ratio;

	return x < y ? -1 : x > y;
}

/*
 * One test, --repeat times with its raw baseline after each run: the
 * machine's own speed drifts between runs (a shared VM moved the raw rate
 * by 30% within one), so the run of median ratio is what r gets, with
 * the ratios' range; every run must have passed.
 */
static int
run_test(int op, uint32_t size, struct result *r)
{
	struct result runs[16];
	uint32_t k, n = opt.repeat;
	int ok = 1;

	for (k = 0; k < n; k++) {
		if (run_client(op, size, &runs[k]) != 0)
			return -1;
		if (opt.raw)
			run_raw(&runs[k]);
		ok &= runs[k].ok;
	}
	qsort(runs, n, sizeof(runs[0]), cmp_ratio);
	*r = runs[n / 2];
	r->ratio_min = runs[0].ratio;
	r->ratio_max = runs[n - 1].ratio;
	r->ok = ok;
	return 0;
}

static void
print_results(struct result *rs, int n)
{
	int i;

	if (opt.json_out) {
		printf("{\"qps\": %u, \"queues\": %u, \"cores\": %u,"
			" \"results\": [\n", opt.nqp, opt.queues, opt.cores);
		for (i = 0; i < n; i++)
			printf("  {\"op\": \"%s\", \"size\": %u, \"msgs\": %" PRIu64
				", \"msgs_per_s\": %.0f, \"gbps\": %.3f,"
				" \"lat_avg_us\": %.2f, \"lat_p50_us\": %.2f,"
				" \"lat_p99_us\": %.2f, \"raw_rtt_p50_us\": %.2f,"
				" \"raw_frames_per_s\": %.0f,"
				" \"raw_gbps\": %.3f, \"ratio\": %.3f,"
				" \"ratio_min\": %.3f, \"ratio_max\": %.3f,"
				" \"runs\": %u,"
				" \"verified\": %s}%s\n", op_names[rs[i].op],
				rs[i].size, rs[i].msgs, rs[i].mps, rs[i].gbps,
				rs[i].lat_avg, rs[i].lat_p50, rs[i].lat_p99,
				rs[i].raw_lat_p50, rs[i].raw_fps, rs[i].raw_gbps, rs[i].ratio,
				rs[i].ratio_min, rs[i].ratio_max, opt.repeat,
				rs[i].ok ? "true" : "false",
				i + 1 < n ? "," : "");
		printf("]}\n");
		return;
	}
	printf("-----------------------------------------------------------------"
		"---------------------------\n");
	printf(" %-10s %8s %10s %12s %10s %9s %12s %10s %7s %s\n", "op",
		"bytes", "msgs", "msgs/s", "Gbit/s", opt.lat ? "lat us" : "",
		opt.lat ? "raw rtt us" : "raw fr/s", "raw Gb/s", "ratio",
		"check");
	for (i = 0; i < n; i++) {
		char lat[32] = "";

		if (opt.lat)
			snprintf(lat, sizeof(lat), "%.2f/%.2f", rs[i].lat_p50,
				rs[i].lat_p99);
		printf(opt.lat ? " %-10s %8u %10" PRIu64 " %12.0f %10.3f %9s "
			"%12.2f %10.3f %6.1f%% %s\n" : " %-10s %8u %10" PRIu64
			" %12.0f %10.3f %9s %12.0f %10.3f %6.1f%% %s\n",
			op_names[rs[i].op], rs[i].size,
			rs[i].msgs, rs[i].mps, rs[i].gbps, lat,
			opt.lat ? rs[i].raw_lat_p50 : rs[i].raw_fps,
			rs[i].raw_gbps, rs[i].ratio * 100,
			opt.verify ? (rs[i].ok ? "verified" : "FAILED") :
			(rs[i].ok ? "ok" : "FAILED"));
		if (opt.repeat > 1 && opt.raw)
			printf("   %u runs, ratio %.1f%% to %.1f%%\n",
				opt.repeat, rs[i].ratio_min * 100,
				rs[i].ratio_max * 100);
	}
	printf("-----------------------------------------------------------------"
		"---------------------------\n");
}

/* ---- the server side ---- */

/* Receive buffers per QP, each of rbuf_sz bytes: at least 64 KB, more for
 * the client's largest SEND; fewer than RBUF_N where that would pass
 * RBUF_BUDGET in all (RNR NAKs then pace the client). */
#define RBUF_N 128u
#define RBUF_MIN_N 16u
#define RBUF_BUDGET ((size_t)1 << 30)
static uint32_t rbuf_sz = 65536, rbuf_n = RBUF_N;

static uint8_t *rmem;
static struct droce_mr *rmr;
static struct perf_cmd cur;
/* What QP i's SENDs carry in the current test, so that --verify checks a
 * receive with memcmp: the byte-by-byte pattern check cost the server
 * more than droce did for 4 KB and larger SENDs. */
static uint8_t *expect;

/* What the server's workers do; the main lcore (worker 0) also reads
 * the side channel and switches the phase. */
enum { PH_DROCE, PH_RAW, PH_ECHO, PH_STOP };
static int srv_phase;

static void
count_add(uint64_t *c, uint64_t n)
{
	/* one writer; the main lcore reads the sum */
	__atomic_store_n(c, *c + n, __ATOMIC_RELAXED);
}

static void
post_recv_buf(struct worker *w, uint32_t qi, uint32_t k)
{
	struct ibv_sge s = {
		.addr = (uint64_t)(uintptr_t)(rmem + ((size_t)qi * rbuf_n + k) *
			rbuf_sz),
		.length = rbuf_sz, .lkey = droce_mr_lkey(rmr),
	};
	struct ibv_recv_wr wr = { .wr_id = (uint64_t)qi << 32 | k,
		.sg_list = &s, .num_sge = 1 }, *bad;
	uint32_t q = qp_queue(qi);

	droce_port_lock(port, q);
	if (droce_qp_post_recv(qp[qi], &wr, &bad) != 0)
		count_add(&w->recv_bad, 1);
	droce_port_unlock(port, q);
}

static void
server_poll(struct worker *w)
{
	struct ibv_wc wc[64];
	uint32_t j, q;
	int n, k;

	progress_worker(w);
	for (j = 0; j < w->nq; j++) {
		q = w->q[j];
		droce_port_lock(port, q);
		n = droce_cq_poll(cq[q], wc, 64);
		droce_port_unlock(port, q);
		for (k = 0; k < n; k++) {
			uint32_t qi = (uint32_t)(wc[k].wr_id >> 32);
			uint32_t b = (uint32_t)wc[k].wr_id;

			if (wc[k].status != IBV_WC_SUCCESS) {
				count_add(&w->recv_bad, 1);
				continue;
			}
			if (wc[k].opcode == IBV_WC_RECV && opt.verify &&
					(wc[k].byte_len != cur.size ||
					cur.size > rbuf_sz ||
					memcmp(rmem + ((size_t)qi * rbuf_n + b) *
					rbuf_sz, expect + (size_t)qi * rbuf_sz,
					cur.size) != 0))
				count_add(&w->recv_bad, 1);
			count_add(&w->recv_count, 1);
			post_recv_buf(w, qi, b);
		}
	}
}

/* Workers 1..N-1 of the server: act on the phase the main lcore sets. */
static int
server_job(struct worker *w)
{
	for (;;) {
		int ph = __atomic_load_n(&srv_phase, __ATOMIC_ACQUIRE);

		/* stored before acting: once the main lcore reads the new
		 * phase here, this worker is done with the old one */
		__atomic_store_n(&w->seen, ph, __ATOMIC_RELEASE);
		if (ph == PH_STOP)
			return 0;
		if (ph == PH_DROCE)
			server_poll(w);
		else
			count_add(&w->raw_got, raw_rx_pass(w, ph == PH_ECHO));
	}
}

static void
set_phase(int ph)
{
	uint32_t i;

	__atomic_store_n(&srv_phase, ph, __ATOMIC_RELEASE);
	for (i = 1; i < opt.cores; i++)
		while (__atomic_load_n(&workers[i].seen, __ATOMIC_ACQUIRE) != ph)
			rte_pause();
}

static uint64_t
sum_counter(size_t off)
{
	uint64_t s = 0;
	uint32_t i;

	for (i = 0; i < opt.cores; i++)
		s += __atomic_load_n((uint64_t *)((char *)&workers[i] + off),
			__ATOMIC_RELAXED);
	return s;
}

static void
reset_counters(void)
{
	uint32_t i;

	for (i = 0; i < opt.cores; i++) {
		__atomic_store_n(&workers[i].recv_count, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&workers[i].recv_bad, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&workers[i].raw_got, 0, __ATOMIC_RELAXED);
	}
}

static int
server_loop(void)
{
	uint32_t i, k;

	if (peer.max_send > rbuf_sz)
		rbuf_sz = RTE_ALIGN_CEIL(peer.max_send, 4096u);
	while (rbuf_n > RBUF_MIN_N &&
			(size_t)opt.nqp * rbuf_n * rbuf_sz > RBUF_BUDGET)
		rbuf_n /= 2;
	rmem = aligned_alloc(4096, (size_t)opt.nqp * rbuf_n * rbuf_sz);
	rmr = droce_mr_reg(pd, rmem, (size_t)opt.nqp * rbuf_n * rbuf_sz,
		(uint64_t)(uintptr_t)rmem, IBV_ACCESS_LOCAL_WRITE);
	expect = malloc((size_t)opt.nqp * rbuf_sz);
	if (rmem == NULL || rmr == NULL || expect == NULL)
		return -1;
	for (i = 0; i < opt.nqp; i++)
		for (k = 0; k < rbuf_n; k++)
			post_recv_buf(&workers[0], i, k);
	worker_job = server_job;
	for (i = 1; i < opt.cores; i++)
		rte_eal_remote_launch(worker_entry, &workers[i],
			workers[i].lcore);
	for (;;) {
		struct perf_cmd c;
		uint32_t spin;

		/* a poll() on the side channel costs a system call: look
		 * at it once every few hundred passes */
		for (spin = 0; spin < 512; spin++)
			server_poll(&workers[0]);
		if (!sc_ready(sc))
			continue;
		if (sc_recv(sc, &c, sizeof(c)))
			return -1;
		switch (c.kind) {
		case PERF_CMD_RUN:
			cur = c;
			if (c.op == OP_FADD || c.op == OP_CSWAP)
				cur.size = 8;
			reset_counters();
			for (i = 0; i < opt.nqp && cur.size <= rbuf_sz; i++)
				pattern(expect + (size_t)i * rbuf_sz, cur.size,
					cur.seed + i);
			for (i = 0; i < opt.nqp; i++) {
				if (c.op == OP_READ)
					pattern(mem + SLOT(i), cur.size,
						c.seed + 1000 + i);
				else
					memset(mem + SLOT(i), 0, cur.size);
			}
			break;
		case PERF_CMD_DONE: {
			uint64_t want = c.value * opt.nqp, t_end;
			size_t cnt = offsetof(struct worker, recv_count);
			int ok = 1;

			/* completions at the client mean the data is here;
			 * poll until the receives are all in */
			t_end = droce_now_ns() + 5000000000ull;
			if (cur.op == OP_SEND || cur.op == OP_WRITE_IMM)
				while (sum_counter(cnt) < want &&
						droce_now_ns() < t_end)
					server_poll(&workers[0]);
			if ((cur.op == OP_SEND || cur.op == OP_WRITE_IMM) &&
					sum_counter(cnt) != want)
				ok = 0;
			if (sum_counter(offsetof(struct worker, recv_bad)))
				ok = 0;
			for (i = 0; i < opt.nqp && opt.verify; i++) {
				if ((cur.op == OP_WRITE || cur.op == OP_WRITE_IMM)
						&& !pattern_ok(mem + SLOT(i),
						cur.size, cur.seed + i))
					ok = 0;
				if ((cur.op == OP_FADD || cur.op == OP_CSWAP) &&
						*(uint64_t *)(mem + SLOT(i)) !=
						c.value)
					ok = 0;
			}
			c.value = (uint64_t)ok;
			break;
		}
		case PERF_CMD_RAW: {
			int echo = (int)c.flags;

			reset_counters();
			set_phase(echo ? PH_ECHO : PH_RAW);
			if (sc_send(sc, &c, sizeof(c)))
				return -1;
			/* look at the side channel as the droce phase does,
			 * once every few hundred passes: a poll() per pass
			 * (~750 cycles here) slowed the raw receiver and
			 * the raw echo, and flattered droce's ratios */
			do {
				uint32_t spin;

				for (spin = 0; spin < 512; spin++)
					count_add(&workers[0].raw_got,
						raw_rx_pass(&workers[0], echo));
			} while (!sc_ready(sc));
			set_phase(PH_DROCE);
			raw_server_count = sum_counter(offsetof(struct worker,
				raw_got));
			if (sc_recv(sc, &c, sizeof(c)))
				return -1;
			c.value = raw_server_count;
			break;
		}
		case PERF_CMD_QUIT: {
			struct droce_tp_stats st;

			set_phase(PH_STOP);
			rte_eal_mp_wait_lcore();
			droce_port_lock(port, 0);
			droce_tp_queue_stats(droce_dev_queue(droce_port_dev(port),
				0), &st);
			droce_port_unlock(port, 0);
			struct rte_eth_stats es;

			rte_eth_stats_get(droce_port_id(port), &es);
			fprintf(stderr, "droce-perf server: NIC ipackets %" PRIu64
				" imissed %" PRIu64 " ierrors %" PRIu64 " opackets %"
				PRIu64 " oerrors %" PRIu64 "\n", es.ipackets,
				es.imissed, es.ierrors, es.opackets, es.oerrors);
			fprintf(stderr, "droce-perf server: rx %" PRIu64 " tx %"
				PRIu64 " seq-NAK tx %" PRIu64 " RNR tx %" PRIu64
				" inv-req NAK tx %" PRIu64 " dup %" PRIu64
				" QP0 state %d\n", st.rx_pkts, st.tx_pkts,
				st.nak_seq_tx, st.rnr_nak_tx, st.nak_inv_tx,
				st.dup_rx, droce_qp_state(qp[0]));
			burst_report("server");
			cc_report("server");
			c.value = zc_frames();
			c.handoffs = handoffs();
			c.srv_tx = st.tx_pkts;
			c.srv_read_replays = st.read_replays;
			c.srv_nak_seq_tx = st.nak_seq_tx;
			c.srv_dup_rx = st.dup_rx;
			sc_send(sc, &c, sizeof(c));
			return 0;
		}
		default:
			return -1;
		}
		if (sc_send(sc, &c, sizeof(c)))
			return -1;
	}
}

int
main(int argc, char **argv)
{
	struct result rs[64];
	int nr = 0, i, rc = 0;
	uint32_t s;

	if (parse_args(argc, argv) != 0)
		return 2;
	srand((unsigned int)getpid());
	if (setup() != 0)
		return 1;
	sc = opt.server ? sc_listen(opt.sc_addr, opt.port) :
		sc_connect(opt.sc_addr, opt.port, 60);
	if (sc < 0) {
		fprintf(stderr, "droce-perf: side channel on port %d failed\n",
			opt.port);
		return 1;
	}
	if (sc_send(sc, &me, sizeof(me)) || sc_recv(sc, &peer, sizeof(peer)) ||
			peer.nqp != me.nqp) {
		fprintf(stderr, "droce-perf: exchange failed (QP counts?)\n");
		return 1;
	}
	if (connect_qps() != 0 || setup_workers() != 0)
		return 1;
	if (opt.server) {
		rc = server_loop();
	} else {
		if (!opt.json_out)
			printf(" droce-perf: %u QP(s), %u queue(s), %u core(s), "
				"depth %u, post list %u, cq-mod %u, outs %u, "
				"path MTU %u%s%s\n",
				opt.nqp, opt.queues, opt.cores,
				opt.lat ? 1 : opt.depth,
				opt.post_list, opt.cq_mod, opt.outs, mtu_bytes,
				opt.inline_data ? ", inline" : "",
				opt.lat ? ", latency" : ", bandwidth");
		warm_up();
		for (i = 0; i < opt.nops; i++) {
			for (s = 0; s < opt.nsizes && nr < 64; s++) {
				if (run_test(opt.ops[i], opt.sizes[s],
						&rs[nr]) != 0) {
					rc = 1;
					break;
				}
				if (!rs[nr].ok)
					rc = 1;
				nr++;
				if (opt.ops[i] == OP_FADD ||
						opt.ops[i] == OP_CSWAP)
					break;	/* atomics are 8 bytes */
			}
		}
		print_results(rs, nr);
		if (faults_on()) {
			struct droce_fault_stats fs;

			droce_port_fault_stats(port, &fs, NULL);
			printf(" faults injected on receive: %" PRIu64 " dropped, %"
				PRIu64 " duplicated, %" PRIu64 " reordered, %"
				PRIu64 " corrupted, %" PRIu64 " delayed\n",
				fs.dropped, fs.duplicated, fs.reordered,
				fs.corrupted, fs.delayed);
			if ((opt.fault.drop_ppm && !fs.dropped) ||
					(opt.fault.delay_ppm && !fs.delayed) ||
					(opt.fault.dup_ppm && !fs.duplicated) ||
					(opt.fault.reorder_ppm && !fs.reordered)) {
				fprintf(stderr, "droce-perf: faults asked for "
					"were not injected\n");
				rc = 1;
			}
			/* a window: no fault past it; at 100% loss every frame
			 * in it is lost, and the run still completes */
			if (opt.fault.frames && (fs.dropped > opt.fault.frames ||
					fs.duplicated > opt.fault.frames ||
					fs.reordered > opt.fault.frames ||
					fs.delayed > opt.fault.frames ||
					(opt.fault.drop_ppm >= 1000000 &&
					fs.dropped != opt.fault.frames))) {
				fprintf(stderr, "droce-perf: faults outside the "
					"first %" PRIu64 " frames\n",
					opt.fault.frames);
				rc = 1;
			}
		}
		if (rc) {
			struct droce_tp_stats st;

			droce_port_lock(port, 0);
			droce_tp_queue_stats(droce_dev_queue(droce_port_dev(port),
				0), &st);
			droce_port_unlock(port, 0);
			fprintf(stderr, "droce-perf: tx %" PRIu64 " rx %" PRIu64
				" retransmits %" PRIu64 " timeouts %" PRIu64
				" seq-NAK rx %" PRIu64 " RNR rx %" PRIu64
				" dup %" PRIu64 " ICRC drops %" PRIu64 "\n",
				st.tx_pkts, st.rx_pkts, st.retransmits,
				st.timeouts, st.nak_seq_rx, st.rnr_nak_rx,
				st.dup_rx, st.rx_drop_parse[-DROCE_WIRE_EICRC]);
		}
		{
			struct perf_cmd c = { .kind = PERF_CMD_QUIT };

			sc_send(sc, &c, sizeof(c));
			if (sc_recv(sc, &c, sizeof(c)) != 0) {
				rc = 1;
			} else {
				uint64_t mine = handoffs();

				burst_report("client");
				cc_report("client");
				if (faults_on())
					loss_report(&c);
				if (zc_check(c.value) != 0)
					rc = 1;
				if (opt.queues > 1 && !opt.json_out)
					printf(" hand-offs between queues: client "
						"%" PRIu64 ", server %" PRIu64 "\n",
						mine, c.handoffs);
				if (opt.expect_handoffs &&
						mine + c.handoffs == 0) {
					fprintf(stderr, "droce-perf: no frame "
						"went through a hand-off ring\n");
					rc = 1;
				}
			}
		}
	}
	close(sc);
	droce_port_close(port);
	return rc;
}
