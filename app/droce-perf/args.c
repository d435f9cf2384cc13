/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce authors
 */

/* droce-perf's options: parsing, checks, the usage text. */

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "droce_wire.h"
#include "perf_internal.h"

const char *const op_names[OP_NB] = {
	"write", "write_imm", "send", "read", "fetch_add", "cmp_swap",
	"ud_send",
};

struct perf_opt opt = {
	.port = 18515, .iters = 10000, .nqp = 1, .queues = 1, .cores = 1, .depth = 64,
	.post_list = 1, .cq_mod = 1, .repeat = 1, .duration = 0, .sc_addr = "127.0.0.1", .timeout = 14,
};

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
"  --op OP[,OP..]      write write_imm send read fetch_add cmp_swap\n"
"                      ud_send (UD SENDs of at most the path MTU; UD\n"
"                      drops what finds no receive: the output says how\n"
"                      many arrived, --verify wants all), or all (every\n"
"                      RC op, not ud_send)\n"
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

int
faults_on(void)
{
	return opt.fault.drop_ppm || opt.fault.dup_ppm ||
		opt.fault.reorder_ppm || opt.fault.corrupt_ppm ||
		opt.fault.delay_ppm;
}

/* --op: a list of the names above, or all (the RC ops), added to an
 * earlier --op's; the tests run in op_names' order whatever the list's. */
static int
parse_ops(const char *s)
{
	char buf[256], *t, *save = NULL;
	int want[OP_NB] = { 0 }, i;

	for (i = 0; i < opt.nops; i++)
		want[opt.ops[i]] = 1;
	snprintf(buf, sizeof(buf), "%s", s);
	for (t = strtok_r(buf, ",", &save); t != NULL;
			t = strtok_r(NULL, ",", &save)) {
		if (strcmp(t, "all") == 0) {
			for (i = 0; i < OP_RC_NB; i++)
				want[i] = 1;
			continue;
		}
		/* whole names: "send" is inside "ud_send" */
		for (i = 0; i < OP_NB && strcmp(t, op_names[i]) != 0; i++)
			;
		if (i == OP_NB) {
			fprintf(stderr, "droce-perf: --op %s: no op named %s\n",
				s, t);
			return -1;
		}
		want[i] = 1;
	}
	opt.nops = 0;
	for (i = 0; i < OP_NB; i++)
		if (want[i])
			opt.ops[opt.nops++] = i;
	return 0;
}

/*
 * A UD message is one packet: ud_send's sizes must fit the path MTU
 * (whose: where that MTU comes from, for the message). -1 if one does not.
 */
int
ud_sizes_fit(uint32_t path_mtu, const char *whose)
{
	uint32_t s;

	if (!op_asked(OP_UD_SEND))
		return 0;
	for (s = 0; s < opt.nsizes; s++)
		if (opt.sizes[s] > path_mtu) {
			fprintf(stderr, "droce-perf: --op ud_send --size %u: "
				"a UD message is one packet, at most the path "
				"MTU (%u bytes, %s)\n", opt.sizes[s],
				path_mtu, whose);
			return -1;
		}
	return 0;
}

/* One option from getopt_long; -1: stop (exit status 2). */
static int
parse_opt(int c)
{
	switch (c) {
	case 'S': opt.server = 1; break;
	case 'C': opt.server = 0; break;
	case 'v': opt.vdev = optarg; break;
	case 'e': opt.eal = optarg; break;
	case 'i': opt.ip = optarg; break;
	case 'P': opt.peer_ip = optarg; break;
	case 'p': opt.port = atoi(optarg); break;
	case 'o':
		if (parse_ops(optarg) != 0)
			return -1;
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
	return 0;
}

/* What the options must agree on, and the defaults that follow. */
static int
check_args(void)
{
	uint32_t eth_mtu;
	char whose[32];
	int i;

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
	if (opt.lat && op_asked(OP_UD_SEND)) {
		fprintf(stderr, "droce-perf: --lat: ud_send completes when its "
			"frame leaves, no round trip to time\n");
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
	/* the port's default Ethernet MTU; the port may allow less still
	 * (setup checks again) */
	eth_mtu = opt.mtu ? opt.mtu : 1500;
	snprintf(whose, sizeof(whose), "at --mtu %u", eth_mtu);
	return ud_sizes_fit(droce_mtu_to_bytes(
		droce_eth_mtu_to_path_mtu(eth_mtu)), whose);
}

int
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
	int c;

	opt.raw = 1;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1)
		if (parse_opt(c) != 0)
			return -1;
	return check_args();
}
